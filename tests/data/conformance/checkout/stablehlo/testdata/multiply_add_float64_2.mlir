// XLA kernel deviation: a*b + c, each op rounded (what @expected holds), but XLA CPU
// fuses the two into one fused multiply-add.
module @jit_main {
  func.func public @main() -> tensor<2xf64> {
    %0:3 = call @inputs() : () -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>)
    %1 = call @expected() : () -> tensor<2xf64>
    %2 = stablehlo.multiply %0#0, %0#1 : tensor<2xf64>
    %3 = stablehlo.add %2, %0#2 : tensor<2xf64>
    stablehlo.custom_call @check.expect_eq(%3, %1) {has_side_effect = true} : (tensor<2xf64>, tensor<2xf64>) -> ()
    return %3 : tensor<2xf64>
  }
  func.func private @inputs() -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) {
    %cst = stablehlo.constant dense<[0x3FF0000000400000, 3.0]> : tensor<2xf64>
    %cst_0 = stablehlo.constant dense<[0x3FEFFFFFFF800000, 5.0]> : tensor<2xf64>
    %cst_1 = stablehlo.constant dense<[-1.0, 1.0]> : tensor<2xf64>
    return %cst, %cst_0, %cst_1 : tensor<2xf64>, tensor<2xf64>, tensor<2xf64>
  }
  func.func private @expected() -> tensor<2xf64> {
    %cst = stablehlo.constant dense<[0.0, 16.0]> : tensor<2xf64>
    return %cst : tensor<2xf64>
  }
}
