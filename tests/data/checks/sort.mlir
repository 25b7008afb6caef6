// sort: stable two-operand sort by f32 key, and a descending i32 sort
// along the last dimension.
func.func @main() {
  %k = stablehlo.constant dense<[3.5, -1.0, 2.0, 3.5, 0.0, -7.25, 2.0, 10.0]> : tensor<8xf32>
  %v = stablehlo.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32>
  %s:2 = "stablehlo.sort"(%k, %v) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<8xf32>, tensor<8xi32>) -> (tensor<8xf32>, tensor<8xi32>)
  check.expect_eq_const %s#0, dense<[-7.25, -1.0, 0.0, 2.0, 2.0, 3.5, 3.5, 10.0]> : tensor<8xf32>
  check.expect_eq_const %s#1, dense<[5, 1, 4, 2, 6, 0, 3, 7]> : tensor<8xi32>
  %m = stablehlo.constant dense<[[5, 1, 4], [2, 8, 0], [9, 9, 3]]> : tensor<3x3xi32>
  %d = "stablehlo.sort"(%m) <{dimension = 1 : i64}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %gt = stablehlo.compare GT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }) : (tensor<3x3xi32>) -> tensor<3x3xi32>
  check.expect_eq_const %d, dense<[[5, 4, 1], [8, 2, 0], [9, 9, 3]]> : tensor<3x3xi32>
  func.return
}
