// compare (FLOAT, SIGNED), select, min/max, abs, negate, sign, clamp,
// rounding, and logic on i1.
func.func @main() {
  %a = stablehlo.constant dense<[-2.5, -0.5, 0.0, 0.5, 1.5, 2.5, -3.7, 3.2]> : tensor<8xf32>
  %b = stablehlo.constant dense<[-2.5, 0.5, -1.0, 0.25, 1.5, 3.0, -3.0, 3.0]> : tensor<8xf32>
  %i = stablehlo.constant dense<[-5, 3, 0, 7, -1, 2, 9, -8]> : tensor<8xi32>
  %j = stablehlo.constant dense<[-5, 4, -2, 7, 1, -2, 9, 8]> : tensor<8xi32>
  %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  check.expect_eq_const %gt, dense<[false, false, true, true, false, false, false, true]> : tensor<8xi1>
  %lt = stablehlo.compare LT, %a, %b, FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  check.expect_eq_const %lt, dense<[false, true, false, false, false, true, true, false]> : tensor<8xi1>
  %eq = stablehlo.compare EQ, %a, %b, FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  check.expect_eq_const %eq, dense<[true, false, false, false, true, false, false, false]> : tensor<8xi1>
  %ne = stablehlo.compare NE, %a, %b, FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  check.expect_eq_const %ne, dense<[false, true, true, true, false, true, true, true]> : tensor<8xi1>
  %ge = stablehlo.compare GE, %i, %j, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  check.expect_eq_const %ge, dense<[true, false, true, true, false, true, true, false]> : tensor<8xi1>
  %sel = stablehlo.select %gt, %a, %b : tensor<8xi1>, tensor<8xf32>
  check.expect_eq_const %sel, dense<[-2.5, 0.5, 0.0, 0.5, 1.5, 3.0, -3.0, 3.2]> : tensor<8xf32>
  %max = stablehlo.maximum %a, %b : tensor<8xf32>
  check.expect_eq_const %max, dense<[-2.5, 0.5, 0.0, 0.5, 1.5, 3.0, -3.0, 3.2]> : tensor<8xf32>
  %min = stablehlo.minimum %i, %j : tensor<8xi32>
  check.expect_eq_const %min, dense<[-5, 3, -2, 7, -1, -2, 9, -8]> : tensor<8xi32>
  %abs = stablehlo.abs %i : tensor<8xi32>
  check.expect_eq_const %abs, dense<[5, 3, 0, 7, 1, 2, 9, 8]> : tensor<8xi32>
  %neg = stablehlo.negate %a : tensor<8xf32>
  check.expect_eq_const %neg, dense<[2.5, 0.5, -0.0, -0.5, -1.5, -2.5, 3.7, -3.2]> : tensor<8xf32>
  %sign = stablehlo.sign %i : tensor<8xi32>
  check.expect_eq_const %sign, dense<[-1, 1, 0, 1, -1, 1, 1, -1]> : tensor<8xi32>
  %lo = stablehlo.constant dense<-1.0> : tensor<f32>
  %hi = stablehlo.constant dense<2.0> : tensor<f32>
  %clamp = stablehlo.clamp %lo, %a, %hi : (tensor<f32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  check.expect_eq_const %clamp, dense<[-1.0, -0.5, 0.0, 0.5, 1.5, 2.0, -1.0, 2.0]> : tensor<8xf32>
  %floor = stablehlo.floor %a : tensor<8xf32>
  check.expect_eq_const %floor, dense<[-3.0, -1.0, 0.0, 0.0, 1.0, 2.0, -4.0, 3.0]> : tensor<8xf32>
  %ceil = stablehlo.ceil %a : tensor<8xf32>
  check.expect_eq_const %ceil, dense<[-2.0, -0.0, 0.0, 1.0, 2.0, 3.0, -3.0, 4.0]> : tensor<8xf32>
  %rne = stablehlo.round_nearest_even %a : tensor<8xf32>
  check.expect_eq_const %rne, dense<[-2.0, -0.0, 0.0, 0.0, 2.0, 2.0, -4.0, 3.0]> : tensor<8xf32>
  %afz = stablehlo.round_nearest_afz %a : tensor<8xf32>
  check.expect_eq_const %afz, dense<[-3.0, -1.0, 0.0, 1.0, 2.0, 3.0, -4.0, 3.0]> : tensor<8xf32>
  %and = stablehlo.and %gt, %ne : tensor<8xi1>
  %or = stablehlo.or %lt, %eq : tensor<8xi1>
  %not = stablehlo.not %or : tensor<8xi1>
  check.expect_eq_const %and, dense<[false, false, true, true, false, false, false, true]> : tensor<8xi1>
  check.expect_eq_const %not, dense<[false, false, true, true, false, false, false, true]> : tensor<8xi1>
  func.return
}
