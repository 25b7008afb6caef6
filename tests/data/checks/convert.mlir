// convert between element types: float->int truncates, int->float rounds,
// narrowing floats round to nearest even, i1 -> i32, f32 -> f8E4M3FN.
func.func @main() {
  %x = stablehlo.constant dense<[-3.75, -1.5, -0.5, 0.0, 0.75, 1.5, 100.25, 126.9]> : tensor<8xf32>
  %u = stablehlo.constant dense<[0, 1, 127, 128, 200, 255, 42, 7]> : tensor<8xui8>
  %i = stablehlo.constant dense<[-100000, -3, 0, 5, 1048576, 123456789, 77, -1]> : tensor<8xi32>
  %f8in = stablehlo.constant dense<[0.5, -1.0, 3.0, 448.0, -0.0625, 12.0, 2.5, -7.0]> : tensor<8xf32>
  %0 = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xi32>
  check.expect_eq_const %0, dense<[-3, -1, 0, 0, 0, 1, 100, 126]> : tensor<8xi32>
  %1 = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xi8>
  check.expect_eq_const %1, dense<[-3, -1, 0, 0, 0, 1, 100, 126]> : tensor<8xi8>
  %2 = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xf16>
  check.expect_eq_const %2, dense<[-3.75, -1.5, -0.5, 0.0, 0.75, 1.5, 100.25, 126.9]> : tensor<8xf16>
  %3 = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xbf16>
  check.expect_eq_const %3, dense<[-3.75, -1.5, -0.5, 0.0, 0.75, 1.5, 100.0, 127.0]> : tensor<8xbf16>
  %4 = stablehlo.convert %u : (tensor<8xui8>) -> tensor<8xf32>
  check.expect_eq_const %4, dense<[0.0, 1.0, 127.0, 128.0, 200.0, 255.0, 42.0, 7.0]> : tensor<8xf32>
  %5 = stablehlo.convert %i : (tensor<8xi32>) -> tensor<8xf32>
  check.expect_eq_const %5, dense<[-100000.0, -3.0, 0.0, 5.0, 1.048576e+06, 1.2345679e+08, 77.0, -1.0]> : tensor<8xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<8xf32>
  %6 = stablehlo.compare GT, %x, %zero, FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  %7 = stablehlo.convert %6 : (tensor<8xi1>) -> tensor<8xi32>
  check.expect_eq_const %7, dense<[0, 0, 0, 0, 1, 1, 1, 1]> : tensor<8xi32>
  %8 = stablehlo.convert %f8in : (tensor<8xf32>) -> tensor<8xf8E4M3FN>
  check.expect_eq_const %8, dense<[0.5, -1.0, 3.0, 448.0, -0.0625, 12.0, 2.5, -7.0]> : tensor<8xf8E4M3FN>
  %9 = stablehlo.convert %8 : (tensor<8xf8E4M3FN>) -> tensor<8xf32>
  check.expect_eq_const %9, dense<[0.5, -1.0, 3.0, 448.0, -0.0625, 12.0, 2.5, -7.0]> : tensor<8xf32>
  func.return
}
