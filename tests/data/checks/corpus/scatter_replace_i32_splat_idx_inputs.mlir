// scatter (replace) of splat updates; indices in @inputs
module @jit_testcase {
  func.func public @main() -> (tensor<6xi32> {jax.result_info = ""}) {
    %in:3 = call @inputs() : () -> (tensor<6xi32>, tensor<3xi32>, tensor<3x1xi32>)
    %ex = call @expected() : () -> tensor<6xi32>
    %r = "stablehlo.scatter"(%in#0, %in#2, %in#1) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false}> ({
      ^bb0(%a: tensor<i32>, %b: tensor<i32>):
        stablehlo.return %b : tensor<i32>
    }) : (tensor<6xi32>, tensor<3x1xi32>, tensor<3xi32>) -> tensor<6xi32>
    stablehlo.custom_call @check.expect_eq(%r, %ex) {has_side_effect = true} : (tensor<6xi32>, tensor<6xi32>) -> ()
    return %r : tensor<6xi32>
  }
  func.func private @inputs() -> (tensor<6xi32> {mhlo.layout_mode = "default"}, tensor<3xi32> {mhlo.layout_mode = "default"}, tensor<3x1xi32> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<-3> : tensor<6xi32>
    %c1 = stablehlo.constant dense<0> : tensor<3xi32>
    %c2 = stablehlo.constant dense<0> : tensor<3x1xi32>
    return %c0, %c1, %c2 : tensor<6xi32>, tensor<3xi32>, tensor<3x1xi32>
  }
  func.func private @expected() -> (tensor<6xi32>) {
    %e0 = stablehlo.constant dense<[0, -3, -3, -3, -3, -3]> : tensor<6xi32>
    return %e0 : tensor<6xi32>
  }
}
