// f16, bf16 and complex<f32>: arithmetic, exp and tanh, complex multiply,
// real/imag/complex. Several checks on the same values.
func.func @main() {
  %h = stablehlo.constant dense<[0.5, -1.25, 3.0, 100.0, 0.1, -7.5]> : tensor<6xf16>
  %g = stablehlo.constant dense<[2.0, 0.75, -1.5, 0.5, 8.0, 0.25]> : tensor<6xf16>
  %hm = stablehlo.multiply %h, %g : tensor<6xf16>
  check.expect_eq_const %hm, dense<[1.0, -0.9375, -4.5, 50.0, 0.8, -1.875]> : tensor<6xf16>
  %ha = stablehlo.add %h, %g : tensor<6xf16>
  check.expect_eq_const %ha, dense<[2.5, -0.5, 1.5, 100.5, 8.1, -7.25]> : tensor<6xf16>
  %he = stablehlo.exponential %g : tensor<6xf16>
  %he_expected = stablehlo.constant dense<[7.39, 2.117, 0.2231, 1.648, 2.98e+03, 1.284]> : tensor<6xf16>
  check.expect_close %he, %he_expected, max_ulp_difference = 1 : tensor<6xf16>, tensor<6xf16>
  %hb = stablehlo.constant dense<[0.5, -1.25, 3.0, 100.0, 0.100098, -7.5]> : tensor<6xbf16>
  %gb = stablehlo.constant dense<[2.0, 0.75, -1.5, 0.5, 8.0, 0.25]> : tensor<6xbf16>
  %bm = stablehlo.multiply %hb, %gb : tensor<6xbf16>
  check.expect_eq_const %bm, dense<[1.0, -0.9375, -4.5, 50.0, 0.800781, -1.875]> : tensor<6xbf16>
  %bd = stablehlo.divide %hb, %gb : tensor<6xbf16>
  %bd_expected = stablehlo.constant dense<[0.25, -1.66406, -2.0, 200.0, 0.0125122, -30.0]> : tensor<6xbf16>
  check.expect_close %bd, %bd_expected, max_ulp_difference = 1 : tensor<6xbf16>, tensor<6xbf16>
  %bt = stablehlo.tanh %gb : tensor<6xbf16>
  check.expect_almost_eq_const %bt, dense<[0.964844, 0.636719, -0.90625, 0.462891, 1.0, 0.245117]> : tensor<6xbf16>, tolerance = 1.0e-02
  %c = stablehlo.constant dense<[(1.0, 1.0), (-2.0, 0.5), (0.25, -3.0)]> : tensor<3xcomplex<f32>>
  %d = stablehlo.constant dense<[(0.5, 2.0), (1.0, -1.0), (-4.0, 0.0)]> : tensor<3xcomplex<f32>>
  %cm = stablehlo.multiply %c, %d : tensor<3xcomplex<f32>>
  %cm_expected = stablehlo.constant dense<[(-1.5, 2.5), (-1.5, 2.5), (-1.0, 12.0)]> : tensor<3xcomplex<f32>>
  check.expect_close %cm, %cm_expected, max_ulp_difference = 2 : tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>
  check.expect_almost_eq_const %cm, dense<[(-1.5, 2.5), (-1.5, 2.5), (-1.0, 12.0)]> : tensor<3xcomplex<f32>>
  %re = stablehlo.real %cm : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
  check.expect_almost_eq_const %re, dense<[-1.5, -1.5, -1.0]> : tensor<3xf32>
  %im = stablehlo.imag %c : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
  %back = stablehlo.complex %re, %im : tensor<3xcomplex<f32>>
  check.expect_eq_const %back, dense<[(-1.5, 1.0), (-1.5, 0.5), (-1.0, -3.0)]> : tensor<3xcomplex<f32>>
  func.return
}
