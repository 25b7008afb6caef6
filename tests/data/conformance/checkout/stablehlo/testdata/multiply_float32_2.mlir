// Over-specified: expect_almost_eq's tolerance (1e-3) is below one ULP of 100000 in f32
// (0.0078125), and @expected is that one ULP away.
module @jit_main {
  func.func public @main() -> tensor<2xf32> {
    %0 = call @inputs() : () -> tensor<2xf32>
    %1 = call @expected() : () -> tensor<2xf32>
    %2 = stablehlo.add %0, %0 : tensor<2xf32>
    stablehlo.custom_call @check.expect_almost_eq(%2, %1) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    return %2 : tensor<2xf32>
  }
  func.func private @inputs() -> tensor<2xf32> {
    %cst = stablehlo.constant dense<[50000.0, 1.0]> : tensor<2xf32>
    return %cst : tensor<2xf32>
  }
  func.func private @expected() -> tensor<2xf32> {
    %cst = stablehlo.constant dense<[100000.0078125, 2.0]> : tensor<2xf32>
    return %cst : tensor<2xf32>
  }
}
