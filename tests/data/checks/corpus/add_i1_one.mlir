// add of i1 inputs (one)
module @jit_testcase {
  func.func public @main() -> (tensor<1xi1> {jax.result_info = ""}) {
    %in:2 = call @inputs() : () -> (tensor<1xi1>, tensor<1xi1>)
    %ex = call @expected() : () -> tensor<1xi1>
    %r = stablehlo.add %in#0, %in#1 : tensor<1xi1>
    %ok_r = stablehlo.custom_call @check.eq(%r, %ex) : (tensor<1xi1>, tensor<1xi1>) -> tensor<i1>
    return %r : tensor<1xi1>
  }
  func.func private @inputs() -> (tensor<1xi1> {mhlo.layout_mode = "default"}, tensor<1xi1> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<[false]> : tensor<1xi1>
    %c1 = stablehlo.constant dense<[true]> : tensor<1xi1>
    return %c0, %c1 : tensor<1xi1>, tensor<1xi1>
  }
  func.func private @expected() -> (tensor<1xi1>) {
    %e0 = stablehlo.constant dense<[true]> : tensor<1xi1>
    return %e0 : tensor<1xi1>
  }
}
