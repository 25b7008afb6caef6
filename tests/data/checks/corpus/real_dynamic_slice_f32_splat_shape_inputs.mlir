// real_dynamic_slice: data from @inputs (splat), the shape operand from @inputs
module @jit_testcase {
  func.func public @main() -> (tensor<3xf32> {jax.result_info = ""}) {
    %in:4 = call @inputs() : () -> (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>)
    %ex = call @expected() : () -> tensor<3xf32>
    %r = stablehlo.real_dynamic_slice %in#0, %in#1, %in#2, %in#3 : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xf32>
    stablehlo.custom_call @check.expect_close(%r, %ex) {has_side_effect = true} : (tensor<3xf32>, tensor<3xf32>) -> ()
    return %r : tensor<3xf32>
  }
  func.func private @inputs() -> (tensor<4xf32> {mhlo.layout_mode = "default"}, tensor<1xi64> {mhlo.layout_mode = "default"}, tensor<1xi64> {mhlo.layout_mode = "default"}, tensor<1xi64> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<4.0> : tensor<4xf32>
    %c1 = stablehlo.constant dense<[1]> : tensor<1xi64>
    %c2 = stablehlo.constant dense<[4]> : tensor<1xi64>
    %c3 = stablehlo.constant dense<[1]> : tensor<1xi64>
    return %c0, %c1, %c2, %c3 : tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>
  }
  func.func private @expected() -> (tensor<3xf32>) {
    %e0 = stablehlo.constant dense<[4.0, 4.0, 4.0]> : tensor<3xf32>
    return %e0 : tensor<3xf32>
  }
}
