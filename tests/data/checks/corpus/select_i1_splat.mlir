// select on an i1 predicate from @inputs (splat values)
module @jit_testcase {
  func.func public @main() -> (tensor<3x4xi1> {jax.result_info = ""}) {
    %in:3 = call @inputs() : () -> (tensor<3x4xi1>, tensor<3x4xi1>, tensor<3x4xi1>)
    %ex = call @expected() : () -> tensor<3x4xi1>
    %r = stablehlo.select %in#0, %in#1, %in#2 : (tensor<3x4xi1>, tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
    stablehlo.custom_call @check.expect_eq(%r, %ex) {has_side_effect = true} : (tensor<3x4xi1>, tensor<3x4xi1>) -> ()
    return %r : tensor<3x4xi1>
  }
  func.func private @inputs() -> (tensor<3x4xi1> {mhlo.layout_mode = "default"}, tensor<3x4xi1> {mhlo.layout_mode = "default"}, tensor<3x4xi1> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<true> : tensor<3x4xi1>
    %c1 = stablehlo.constant dense<false> : tensor<3x4xi1>
    %c2 = stablehlo.constant dense<[[true, false, false, true], [false, false, false, false], [false, true, true, false]]> : tensor<3x4xi1>
    return %c0, %c1, %c2 : tensor<3x4xi1>, tensor<3x4xi1>, tensor<3x4xi1>
  }
  func.func private @expected() -> (tensor<3x4xi1>) {
    %e0 = stablehlo.constant dense<[[false, false, false, false], [false, false, false, false], [false, false, false, false]]> : tensor<3x4xi1>
    return %e0 : tensor<3x4xi1>
  }
}
