// scatter (add) of one updates; indices in @main
module @jit_testcase {
  func.func public @main() -> (tensor<6xf32> {jax.result_info = ""}) {
    %in:2 = call @inputs() : () -> (tensor<6xf32>, tensor<1xf32>)
    %ex = call @expected() : () -> tensor<6xf32>
    %idx = stablehlo.constant dense<[[4]]> : tensor<1x1xi32>
    %r = "stablehlo.scatter"(%in#0, %idx, %in#1) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }) : (tensor<6xf32>, tensor<1x1xi32>, tensor<1xf32>) -> tensor<6xf32>
    stablehlo.custom_call @check.expect_eq(%r, %ex) {has_side_effect = true} : (tensor<6xf32>, tensor<6xf32>) -> ()
    return %r : tensor<6xf32>
  }
  func.func private @inputs() -> (tensor<6xf32> {mhlo.layout_mode = "default"}, tensor<1xf32> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<1.0> : tensor<6xf32>
    %c1 = stablehlo.constant dense<[-1.25]> : tensor<1xf32>
    return %c0, %c1 : tensor<6xf32>, tensor<1xf32>
  }
  func.func private @expected() -> (tensor<6xf32>) {
    %e0 = stablehlo.constant dense<[1.0, 1.0, 1.0, 1.0, -0.25, 1.0]> : tensor<6xf32>
    return %e0 : tensor<6xf32>
  }
}
