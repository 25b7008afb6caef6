// dynamic_reshape: data from @inputs (splat), the shape operand from @inputs
module @jit_testcase {
  func.func public @main() -> (tensor<3x4xf32> {jax.result_info = ""}) {
    %in:2 = call @inputs() : () -> (tensor<12xf32>, tensor<2xi64>)
    %ex = call @expected() : () -> tensor<3x4xf32>
    %r = stablehlo.dynamic_reshape %in#0, %in#1 : (tensor<12xf32>, tensor<2xi64>) -> tensor<3x4xf32>
    stablehlo.custom_call @check.expect_close(%r, %ex) {has_side_effect = true} : (tensor<3x4xf32>, tensor<3x4xf32>) -> ()
    return %r : tensor<3x4xf32>
  }
  func.func private @inputs() -> (tensor<12xf32> {mhlo.layout_mode = "default"}, tensor<2xi64> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<0.5> : tensor<12xf32>
    %c1 = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
    return %c0, %c1 : tensor<12xf32>, tensor<2xi64>
  }
  func.func private @expected() -> (tensor<3x4xf32>) {
    %e0 = stablehlo.constant dense<[[0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 0.5]]> : tensor<3x4xf32>
    return %e0 : tensor<3x4xf32>
  }
}
