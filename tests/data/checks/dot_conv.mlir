// dot_general (batched matmul, matrix-vector) and convolution (2-D NHWC
// with padding, strided 1-D NCW), on small integer-valued f32 (exact sums).
func.func @main() {
  %lhs = stablehlo.constant dense<[[[4.0, 1.0, 2.0, 4.0], [1.0, 2.0, 3.0, -2.0], [-4.0, -2.0, -2.0, 3.0]], [[4.0, -4.0, 0.0, 3.0], [-3.0, 3.0, -3.0, 0.0], [3.0, -2.0, -1.0, -2.0]]]> : tensor<2x3x4xf32>
  %rhs = stablehlo.constant dense<[[[2.0, -2.0, 4.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 4.0], [3.0, 3.0, 2.0, 1.0, -1.0], [4.0, 0.0, -3.0, 3.0, -3.0]], [[3.0, 1.0, -3.0, -4.0, 0.0], [-4.0, -3.0, 0.0, 4.0, 0.0], [3.0, 4.0, 3.0, 1.0, -1.0], [0.0, -2.0, 0.0, -1.0, -2.0]]]> : tensor<2x4x5xf32>
  %bmm = stablehlo.dot_general %lhs, %rhs, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  check.expect_eq_const %bmm, dense<[[[30.0, -1.0, 8.0, 14.0, -10.0], [3.0, 9.0, 16.0, -3.0, 11.0], [-2.0, 0.0, -29.0, 7.0, -15.0]], [[28.0, 10.0, -12.0, -35.0, -6.0], [-30.0, -24.0, 0.0, 21.0, 3.0], [14.0, 9.0, -12.0, -19.0, 5.0]]]> : tensor<2x3x5xf32>
  %m = stablehlo.constant dense<[[3.0, -3.0, -3.0, -2.0], [3.0, 1.0, 3.0, -2.0], [2.0, -1.0, 0.0, -3.0]]> : tensor<3x4xf32>
  %vec = stablehlo.constant dense<[1.0, 2.0, 1.0, -2.0]> : tensor<4xf32>
  %mv = stablehlo.dot_general %m, %vec, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  check.expect_eq_const %mv, dense<[-2.0, 12.0, 6.0]> : tensor<3xf32>
  %img = stablehlo.constant dense<[[[[0.0, -1.0], [2.0, 2.0], [-2.0, 0.0], [2.0, 2.0], [1.0, 1.0]], [[-2.0, 1.0], [0.0, -2.0], [-1.0, 0.0], [1.0, 0.0], [1.0, 2.0]], [[1.0, -1.0], [1.0, 0.0], [-2.0, -2.0], [1.0, -1.0], [0.0, -1.0]], [[-1.0, -2.0], [-1.0, 2.0], [0.0, -1.0], [0.0, 2.0], [-1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [2.0, -2.0], [0.0, 0.0]]]]> : tensor<1x5x5x2xf32>
  %ker = stablehlo.constant dense<[[[[-1.0, -1.0, -2.0], [0.0, 2.0, -2.0]], [[0.0, 2.0, 2.0], [-1.0, -2.0, 1.0]], [[-2.0, -1.0, 0.0], [2.0, -2.0, 1.0]]], [[[0.0, -2.0, 2.0], [2.0, 0.0, 2.0]], [[1.0, 2.0, 2.0], [0.0, -1.0, -2.0]], [[0.0, -2.0, 1.0], [2.0, -1.0, 0.0]]], [[[-2.0, -2.0, -1.0], [2.0, 2.0, 1.0]], [[0.0, 0.0, -2.0], [-1.0, 2.0, 0.0]], [[-1.0, -1.0, 1.0], [-2.0, 2.0, 2.0]]]]> : tensor<3x3x2x3xf32>
  %conv = stablehlo.convolution(%img, %ker) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x5x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x5x5x3xf32>
  check.expect_eq_const %conv, dense<[[[[7.0, -7.0, 4.0], [9.0, 9.0, -2.0], [1.0, -19.0, 7.0], [1.0, 8.0, 1.0], [1.0, -1.0, 5.0]], [[-5.0, -10.0, -6.0], [6.0, 2.0, -1.0], [-6.0, -21.0, -13.0], [8.0, -5.0, 8.0], [-5.0, -6.0, -7.0]], [[-5.0, 0.0, 5.0], [-1.0, 15.0, -1.0], [-3.0, -4.0, 12.0], [-5.0, 9.0, 0.0], [-1.0, 0.0, 8.0]], [[-1.0, 7.0, 4.0], [-9.0, 10.0, -9.0], [8.0, -1.0, -6.0], [3.0, 2.0, -2.0], [-5.0, -11.0, -3.0]], [[10.0, -3.0, -4.0], [1.0, -9.0, 5.0], [4.0, 0.0, 1.0], [4.0, 1.0, 14.0], [-4.0, -2.0, -6.0]]]]> : tensor<1x5x5x3xf32>
  %sig = stablehlo.constant dense<[[[0.0, 0.0, 2.0, 0.0, 0.0, -1.0, 0.0, 2.0, -3.0]]]> : tensor<1x1x9xf32>
  %k1 = stablehlo.constant dense<[[[1.0, -2.0, 1.0]]]> : tensor<1x1x3xf32>
  %c1 = stablehlo.convolution(%sig, %k1) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x9xf32>, tensor<1x1x3xf32>) -> tensor<1x1x4xf32>
  check.expect_eq_const %c1, dense<[[[2.0, 2.0, 2.0, -7.0]]]> : tensor<1x1x4xf32>
  func.return
}
