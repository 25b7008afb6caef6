// Element-wise f32 arithmetic, checked with ops of the check dialect
// (stablehlo/tests/interpret style). Expected values: numpy, transcendental
// functions in float64 rounded to f32.
func.func @main() {
  %x = stablehlo.constant dense<[0.5, 1.25, 2.0, 3.75, 7.5, 0.1]> : tensor<6xf32>
  %y = stablehlo.constant dense<[1.5, -0.75, 3.0, 0.5, 2.0, -2.5]> : tensor<6xf32>
  %add = stablehlo.add %x, %y : tensor<6xf32>
  check.expect_eq_const %add, dense<[2.0, 0.5, 5.0, 4.25, 9.5, -2.4]> : tensor<6xf32>
  %sub = stablehlo.subtract %x, %y : tensor<6xf32>
  check.expect_eq_const %sub, dense<[-1.0, 2.0, -1.0, 3.25, 5.5, 2.6]> : tensor<6xf32>
  %mul = stablehlo.multiply %x, %y : tensor<6xf32>
  check.expect_eq_const %mul, dense<[0.75, -0.9375, 6.0, 1.875, 15.0, -0.25]> : tensor<6xf32>
  %div = stablehlo.divide %x, %y : tensor<6xf32>
  check.expect_eq_const %div, dense<[0.33333334, -1.6666666, 0.6666667, 7.5, 3.75, -0.04]> : tensor<6xf32>
  %sqrt = stablehlo.sqrt %x : tensor<6xf32>
  check.expect_eq_const %sqrt, dense<[0.70710677, 1.118034, 1.4142135, 1.9364917, 2.738613, 0.31622776]> : tensor<6xf32>
  %rsqrt = stablehlo.rsqrt %x : tensor<6xf32>
  %rsqrt_expected = stablehlo.constant dense<[1.4142135, 0.8944272, 0.70710677, 0.5163978, 0.36514837, 3.1622777]> : tensor<6xf32>
  check.expect_close %rsqrt, %rsqrt_expected, max_ulp_difference = 2 : tensor<6xf32>, tensor<6xf32>
  %exp = stablehlo.exponential %x : tensor<6xf32>
  %exp_expected = stablehlo.constant dense<[1.6487212, 3.4903429, 7.389056, 42.521084, 1808.0424, 1.105171]> : tensor<6xf32>
  check.expect_close %exp, %exp_expected, max_ulp_difference = 3 : tensor<6xf32>, tensor<6xf32>
  %log = stablehlo.log %x : tensor<6xf32>
  %log_expected = stablehlo.constant dense<[-0.6931472, 0.22314355, 0.6931472, 1.3217559, 2.014903, -2.3025851]> : tensor<6xf32>
  check.expect_close %log, %log_expected, max_ulp_difference = 3, min_ulp_difference = 0 : tensor<6xf32>, tensor<6xf32>
  %tanh = stablehlo.tanh %y : tensor<6xf32>
  check.expect_almost_eq_const %tanh, dense<[0.90514827, -0.63514894, 0.9950548, 0.46211717, 0.9640276, -0.9866143]> : tensor<6xf32>, tolerance = 1.0e-06
  %pow = stablehlo.power %x, %y : tensor<6xf32>
  %pow_expected = stablehlo.constant dense<[0.35355338, 0.845897, 8.0, 1.9364917, 56.25, 316.22775]> : tensor<6xf32>
  check.expect_almost_eq %pow, %pow_expected, tolerance = 1.0e-05 : tensor<6xf32>
  "check.expect_close"(%exp, %exp_expected) <{max_ulp_difference = 3 : ui64}> : (tensor<6xf32>, tensor<6xf32>) -> ()
  func.return
}
