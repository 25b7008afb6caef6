// Passes: an exact sum.
module @jit_main {
  func.func public @main() -> tensor<4xf32> {
    %0:2 = call @inputs() : () -> (tensor<4xf32>, tensor<4xf32>)
    %1 = call @expected() : () -> tensor<4xf32>
    %2 = stablehlo.add %0#0, %0#1 : tensor<4xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<4xf32>, tensor<4xf32>) -> ()
    return %2 : tensor<4xf32>
  }
  func.func private @inputs() -> (tensor<4xf32>, tensor<4xf32>) {
    %cst = stablehlo.constant dense<[1.5, -2.0, 0.25, 8.0]> : tensor<4xf32>
    %cst_0 = stablehlo.constant dense<[0.5, 3.0, 0.5, -1.0]> : tensor<4xf32>
    return %cst, %cst_0 : tensor<4xf32>, tensor<4xf32>
  }
  func.func private @expected() -> tensor<4xf32> {
    %cst = stablehlo.constant dense<[2.0, 1.0, 0.75, 7.0]> : tensor<4xf32>
    return %cst : tensor<4xf32>
  }
}
