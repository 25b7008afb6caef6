// Data movement: broadcast_in_dim, reshape, transpose, slice, concatenate,
// pad (edge, interior and negative), reverse, on i32.
func.func @main() {
  %a = stablehlo.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]> : tensor<3x4xi32>
  %v = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi32>
  %b = stablehlo.broadcast_in_dim %v, dims = [0] : (tensor<3xi32>) -> tensor<3x4xi32>
  %sum = stablehlo.add %b, %a : tensor<3x4xi32>
  check.expect_eq_const %sum, dense<[[11, 12, 13, 14], [25, 26, 27, 28], [39, 40, 41, 42]]> : tensor<3x4xi32>
  %r = stablehlo.reshape %a : (tensor<3x4xi32>) -> tensor<2x6xi32>
  check.expect_eq_const %r, dense<[[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]> : tensor<2x6xi32>
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<3x4xi32>) -> tensor<4x3xi32>
  check.expect_eq_const %t, dense<[[1, 5, 9], [2, 6, 10], [3, 7, 11], [4, 8, 12]]> : tensor<4x3xi32>
  %s = stablehlo.slice %a [0:3:2, 1:4:2] : (tensor<3x4xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %s, dense<[[2, 4], [10, 12]]> : tensor<2x2xi32>
  %ten = stablehlo.constant dense<10> : tensor<3x4xi32>
  %a10 = stablehlo.multiply %a, %ten : tensor<3x4xi32>
  %c = stablehlo.concatenate %a, %a10, dim = 0 : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<6x4xi32>
  check.expect_eq_const %c, dense<[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [10, 20, 30, 40], [50, 60, 70, 80], [90, 100, 110, 120]]> : tensor<6x4xi32>
  %pv = stablehlo.constant dense<-1> : tensor<i32>
  %p = stablehlo.pad %a, %pv, low = [1, 0], high = [0, 2], interior = [1, 0] : (tensor<3x4xi32>, tensor<i32>) -> tensor<6x6xi32>
  check.expect_eq_const %p, dense<[[-1, -1, -1, -1, -1, -1], [1, 2, 3, 4, -1, -1], [-1, -1, -1, -1, -1, -1], [5, 6, 7, 8, -1, -1], [-1, -1, -1, -1, -1, -1], [9, 10, 11, 12, -1, -1]]> : tensor<6x6xi32>
  %n = stablehlo.pad %a, %pv, low = [0, -1], high = [0, 0], interior = [0, 0] : (tensor<3x4xi32>, tensor<i32>) -> tensor<3x3xi32>
  check.expect_eq_const %n, dense<[[2, 3, 4], [6, 7, 8], [10, 11, 12]]> : tensor<3x3xi32>
  %rev = stablehlo.reverse %a, dims = [0, 1] : tensor<3x4xi32>
  check.expect_eq_const %rev, dense<[[12, 11, 10, 9], [8, 7, 6, 5], [4, 3, 2, 1]]> : tensor<3x4xi32>
  func.return
}
