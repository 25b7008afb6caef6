// compare EQ of f32 inputs (scalar), an i1 result
module @jit_testcase {
  func.func public @main() -> (tensor<i1> {jax.result_info = ""}) {
    %in:2 = call @inputs() : () -> (tensor<f32>, tensor<f32>)
    %ex = call @expected() : () -> tensor<i1>
    %r = stablehlo.compare  EQ, %in#0, %in#1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.custom_call @check.expect_eq(%r, %ex) {has_side_effect = true} : (tensor<i1>, tensor<i1>) -> ()
    return %r : tensor<i1>
  }
  func.func private @inputs() -> (tensor<f32> {mhlo.layout_mode = "default"}, tensor<f32> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<-0.5> : tensor<f32>
    %c1 = stablehlo.constant dense<2.5> : tensor<f32>
    return %c0, %c1 : tensor<f32>, tensor<f32>
  }
  func.func private @expected() -> (tensor<i1>) {
    %e0 = stablehlo.constant dense<false> : tensor<i1>
    return %e0 : tensor<i1>
  }
}
