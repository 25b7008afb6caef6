// gather (rows by index), scatter (add, with a repeated index),
// dynamic_slice (start index clamped) and dynamic_update_slice.
func.func @main() {
  %table = stablehlo.constant dense<[[0.0, 1.5, 3.0, 4.5], [6.0, 7.5, 9.0, 10.5], [12.0, 13.5, 15.0, 16.5], [18.0, 19.5, 21.0, 22.5], [24.0, 25.5, 27.0, 28.5]]> : tensor<5x4xf32>
  %idx = stablehlo.constant dense<[[3], [0], [4], [3]]> : tensor<4x1xi32>
  %g = "stablehlo.gather"(%table, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}> : (tensor<5x4xf32>, tensor<4x1xi32>) -> tensor<4x4xf32>
  check.expect_eq_const %g, dense<[[18.0, 19.5, 21.0, 22.5], [0.0, 1.5, 3.0, 4.5], [24.0, 25.5, 27.0, 28.5], [18.0, 19.5, 21.0, 22.5]]> : tensor<4x4xf32>
  %upd = stablehlo.constant dense<[[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0], [0.5, 0.5, 0.5, 0.5]]> : tensor<4x4xf32>
  %s = "stablehlo.scatter"(%table, %idx, %upd) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %sum = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %sum : tensor<f32>
  }) : (tensor<5x4xf32>, tensor<4x1xi32>, tensor<4x4xf32>) -> tensor<5x4xf32>
  check.expect_eq_const %s, dense<[[2.0, 3.5, 5.0, 6.5], [6.0, 7.5, 9.0, 10.5], [12.0, 13.5, 15.0, 16.5], [19.5, 21.0, 22.5, 24.0], [27.0, 28.5, 30.0, 31.5]]> : tensor<5x4xf32>
  %starts = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %i0 = stablehlo.slice %starts [0:1] : (tensor<2xi32>) -> tensor<1xi32>
  %i1 = stablehlo.slice %starts [1:2] : (tensor<2xi32>) -> tensor<1xi32>
  %r0 = stablehlo.reshape %i0 : (tensor<1xi32>) -> tensor<i32>
  %r1 = stablehlo.reshape %i1 : (tensor<1xi32>) -> tensor<i32>
  %ds = stablehlo.dynamic_slice %table, %r0, %r1, sizes = [3, 3] : (tensor<5x4xf32>, tensor<i32>, tensor<i32>) -> tensor<3x3xf32>
  check.expect_eq_const %ds, dense<[[7.5, 9.0, 10.5], [13.5, 15.0, 16.5], [19.5, 21.0, 22.5]]> : tensor<3x3xf32>
  %patch = stablehlo.constant dense<[[-1.0, -2.0], [-3.0, -4.0]]> : tensor<2x2xf32>
  %big = stablehlo.constant dense<7> : tensor<i32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %dus = stablehlo.dynamic_update_slice %table, %patch, %big, %zero : (tensor<5x4xf32>, tensor<2x2xf32>, tensor<i32>, tensor<i32>) -> tensor<5x4xf32>
  check.expect_eq_const %dus, dense<[[0.0, 1.5, 3.0, 4.5], [6.0, 7.5, 9.0, 10.5], [12.0, 13.5, 15.0, 16.5], [-1.0, -2.0, 21.0, 22.5], [-3.0, -4.0, 27.0, 28.5]]> : tensor<5x4xf32>
  func.return
}
