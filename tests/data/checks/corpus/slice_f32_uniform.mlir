// slice [1:4, 0:5:2] of a f32 input (uniform)
module @jit_testcase {
  func.func public @main() -> (tensor<3x3xf32> {jax.result_info = ""}) {
    %in = call @inputs() : () -> tensor<5x6xf32>
    %ex = call @expected() : () -> tensor<3x3xf32>
    %r = "stablehlo.slice"(%in) <{start_indices = array<i64: 1, 0>, limit_indices = array<i64: 4, 5>, strides = array<i64: 1, 2>}> : (tensor<5x6xf32>) -> tensor<3x3xf32>
    stablehlo.custom_call @check.expect_close(%r, %ex) {has_side_effect = true} : (tensor<3x3xf32>, tensor<3x3xf32>) -> ()
    return %r : tensor<3x3xf32>
  }
  func.func private @inputs() -> (tensor<5x6xf32> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<[[1.5, 1.5, 1.5, 1.5, 1.5, 1.5], [1.5, 1.5, 1.5, 1.5, 1.5, 1.5], [1.5, 1.5, 1.5, 1.5, 1.5, 1.5], [1.5, 1.5, 1.5, 1.5, 1.5, 1.5], [1.5, 1.5, 1.5, 1.5, 1.5, 1.5]]> : tensor<5x6xf32>
    return %c0 : tensor<5x6xf32>
  }
  func.func private @expected() -> (tensor<3x3xf32>) {
    %e0 = stablehlo.constant dense<[[1.5, 1.5, 1.5], [1.5, 1.5, 1.5], [1.5, 1.5, 1.5]]> : tensor<3x3xf32>
    return %e0 : tensor<3x3xf32>
  }
}
