// add of f32 inputs (splat)
module @jit_testcase {
  func.func public @main() -> (tensor<3x4xf32> {jax.result_info = ""}) {
    %in:2 = call @inputs() : () -> (tensor<3x4xf32>, tensor<3x4xf32>)
    %ex = call @expected() : () -> tensor<3x4xf32>
    %r = stablehlo.add %in#0, %in#1 : tensor<3x4xf32>
    stablehlo.custom_call @check.expect_eq(%r, %ex) {has_side_effect = true} : (tensor<3x4xf32>, tensor<3x4xf32>) -> ()
    return %r : tensor<3x4xf32>
  }
  func.func private @inputs() -> (tensor<3x4xf32> {mhlo.layout_mode = "default"}, tensor<3x4xf32> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<2.75> : tensor<3x4xf32>
    %c1 = stablehlo.constant dense<-0.75> : tensor<3x4xf32>
    return %c0, %c1 : tensor<3x4xf32>, tensor<3x4xf32>
  }
  func.func private @expected() -> (tensor<3x4xf32>) {
    %e0 = stablehlo.constant dense<[[2.0, 2.0, 2.0, 2.0], [2.0, 2.0, 2.0, 2.0], [2.0, 2.0, 2.0, 2.0]]> : tensor<3x4xf32>
    return %e0 : tensor<3x4xf32>
  }
}
