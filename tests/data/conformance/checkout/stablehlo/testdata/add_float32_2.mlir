// Over-specified by the reference rule: the small element of @expected is 4 ULP off the
// exact sum; XLA is as close to the float64 result as @expected is, normwise.
module @jit_main {
  func.func public @main() -> tensor<2xf32> {
    %0:2 = call @inputs() : () -> (tensor<2xf32>, tensor<2xf32>)
    %1 = call @expected() : () -> tensor<2xf32>
    %2 = stablehlo.add %0#0, %0#1 : tensor<2xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    return %2 : tensor<2xf32>
  }
  func.func private @inputs() -> (tensor<2xf32>, tensor<2xf32>) {
    %cst = stablehlo.constant dense<[1000.0, 1.0]> : tensor<2xf32>
    %cst_0 = stablehlo.constant dense<[0.5, 0.5]> : tensor<2xf32>
    return %cst, %cst_0 : tensor<2xf32>, tensor<2xf32>
  }
  func.func private @expected() -> tensor<2xf32> {
    %cst = stablehlo.constant dense<[1000.5, 0x3FC00004]> : tensor<2xf32>
    return %cst : tensor<2xf32>
  }
}
