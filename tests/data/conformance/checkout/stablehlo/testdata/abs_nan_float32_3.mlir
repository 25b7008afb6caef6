// Over-specified: expect_eq compares with IEEE equality, and a NaN equals nothing.
module @jit_main {
  func.func public @main() -> tensor<3xf32> {
    %0 = call @inputs() : () -> tensor<3xf32>
    %1 = call @expected() : () -> tensor<3xf32>
    %2 = stablehlo.abs %0 : tensor<3xf32>
    stablehlo.custom_call @check.expect_eq(%2, %1) {has_side_effect = true} : (tensor<3xf32>, tensor<3xf32>) -> ()
    return %2 : tensor<3xf32>
  }
  func.func private @inputs() -> tensor<3xf32> {
    %cst = stablehlo.constant dense<[-1.0, 0x7FC00000, 2.0]> : tensor<3xf32>
    return %cst : tensor<3xf32>
  }
  func.func private @expected() -> tensor<3xf32> {
    %cst = stablehlo.constant dense<[1.0, 0x7FC00000, 2.0]> : tensor<3xf32>
    return %cst : tensor<3xf32>
  }
}
