// dynamic_broadcast_in_dim: data from @inputs (varied), the shape operand from @main
module @jit_testcase {
  func.func public @main() -> (tensor<3x4xi32> {jax.result_info = ""}) {
    %in = call @inputs() : () -> tensor<4xi32>
    %ex = call @expected() : () -> tensor<3x4xi32>
    %shape = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
    %r = stablehlo.dynamic_broadcast_in_dim %in, %shape, dims = [1] : (tensor<4xi32>, tensor<2xi64>) -> tensor<3x4xi32>
    %ok_r = stablehlo.custom_call @check.eq(%r, %ex) : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<i1>
    return %r : tensor<3x4xi32>
  }
  func.func private @inputs() -> (tensor<4xi32> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<[-2, 1, 0, 0]> : tensor<4xi32>
    return %c0 : tensor<4xi32>
  }
  func.func private @expected() -> (tensor<3x4xi32>) {
    %e0 = stablehlo.constant dense<[[-2, 1, 0, 0], [-2, 1, 0, 0], [-2, 1, 0, 0]]> : tensor<3x4xi32>
    return %e0 : tensor<3x4xi32>
  }
}
