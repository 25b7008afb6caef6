// dynamic_slice with start indices from @inputs (0, 2; clamped), splat operand
module @jit_testcase {
  func.func public @main() -> (tensor<2x3xi32> {jax.result_info = ""}) {
    %in:3 = call @inputs() : () -> (tensor<5x6xi32>, tensor<i32>, tensor<i32>)
    %ex = call @expected() : () -> tensor<2x3xi32>
    %r = stablehlo.dynamic_slice %in#0, %in#1, %in#2, sizes = [2, 3] : (tensor<5x6xi32>, tensor<i32>, tensor<i32>) -> tensor<2x3xi32>
    %ok_r = stablehlo.custom_call @check.eq(%r, %ex) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<i1>
    return %r : tensor<2x3xi32>
  }
  func.func private @inputs() -> (tensor<5x6xi32> {mhlo.layout_mode = "default"}, tensor<i32> {mhlo.layout_mode = "default"}, tensor<i32> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<4> : tensor<5x6xi32>
    %c1 = stablehlo.constant dense<0> : tensor<i32>
    %c2 = stablehlo.constant dense<2> : tensor<i32>
    return %c0, %c1, %c2 : tensor<5x6xi32>, tensor<i32>, tensor<i32>
  }
  func.func private @expected() -> (tensor<2x3xi32>) {
    %e0 = stablehlo.constant dense<[[4, 4, 4], [4, 4, 4]]> : tensor<2x3xi32>
    return %e0 : tensor<2x3xi32>
  }
}
