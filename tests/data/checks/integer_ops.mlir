// Integer ops: i8 add/multiply/divide/remainder (wrap-around, truncating
// division), ui16 shifts, and/or/xor, popcnt, count_leading_zeros, i32
// arithmetic/logical right shifts, bitcast_convert f32 <-> i32.
func.func @main() {
  %a8 = stablehlo.constant dense<[100, -100, 127, -128, 5, -7, 64, 1]> : tensor<8xi8>
  %b8 = stablehlo.constant dense<[100, -100, 1, -1, -3, 2, 2, -1]> : tensor<8xi8>
  %add8 = stablehlo.add %a8, %b8 : tensor<8xi8>
  check.expect_eq_const %add8, dense<[-56, 56, -128, 127, 2, -5, 66, 0]> : tensor<8xi8>
  %mul8 = stablehlo.multiply %a8, %b8 : tensor<8xi8>
  check.expect_eq_const %mul8, dense<[16, 16, 127, -128, -15, -14, -128, -1]> : tensor<8xi8>
  %div8 = stablehlo.divide %a8, %b8 : tensor<8xi8>
  check.expect_eq_const %div8, dense<[1, 1, 127, -128, -1, -3, 32, -1]> : tensor<8xi8>
  %rem8 = stablehlo.remainder %a8, %b8 : tensor<8xi8>
  check.expect_eq_const %rem8, dense<[0, 0, 0, 0, 2, -1, 0, 0]> : tensor<8xi8>
  %u = stablehlo.constant dense<[65535, 32769, 240, 12345, 7, 65000, 2, 1]> : tensor<8xui16>
  %s = stablehlo.constant dense<[1, 15, 4, 3, 0, 2, 16, 7]> : tensor<8xui16>
  %shl = stablehlo.shift_left %u, %s : tensor<8xui16>
  check.expect_eq_const %shl, dense<[65534, 32768, 3840, 33224, 7, 63392, 0, 128]> : tensor<8xui16>
  %shr = stablehlo.shift_right_logical %u, %s : tensor<8xui16>
  check.expect_eq_const %shr, dense<[32767, 1, 15, 1543, 7, 16250, 0, 0]> : tensor<8xui16>
  %and = stablehlo.and %u, %s : tensor<8xui16>
  check.expect_eq_const %and, dense<[1, 1, 0, 1, 0, 0, 0, 1]> : tensor<8xui16>
  %or = stablehlo.or %u, %s : tensor<8xui16>
  check.expect_eq_const %or, dense<[65535, 32783, 244, 12347, 7, 65002, 18, 7]> : tensor<8xui16>
  %xor = stablehlo.xor %u, %s : tensor<8xui16>
  check.expect_eq_const %xor, dense<[65534, 32782, 244, 12346, 7, 65002, 18, 6]> : tensor<8xui16>
  %pop = stablehlo.popcnt %u : tensor<8xui16>
  check.expect_eq_const %pop, dense<[16, 2, 4, 6, 3, 11, 1, 1]> : tensor<8xui16>
  %clz = stablehlo.count_leading_zeros %u : tensor<8xui16>
  check.expect_eq_const %clz, dense<[0, 0, 8, 2, 13, 0, 14, 15]> : tensor<8xui16>
  %w = stablehlo.constant dense<[-17, 17, -1, 1024, -2147483648, 2147483647, 6, -6]> : tensor<8xi32>
  %sh = stablehlo.constant dense<[1, 2, 31, 3, 4, 30, 0, 1]> : tensor<8xi32>
  %sra = stablehlo.shift_right_arithmetic %w, %sh : tensor<8xi32>
  check.expect_eq_const %sra, dense<[-9, 4, -1, 128, -134217728, 1, 6, -3]> : tensor<8xi32>
  %srl = stablehlo.shift_right_logical %w, %sh : tensor<8xi32>
  check.expect_eq_const %srl, dense<[2147483639, 4, 1, 128, 134217728, 1, 6, 2147483645]> : tensor<8xi32>
  %fl = stablehlo.constant dense<[1.0, -2.0, 0.0, -0.0, 0.1, 3.4028235e+38, 1.0e-45, -1.5]> : tensor<8xf32>
  %bits = stablehlo.bitcast_convert %fl : (tensor<8xf32>) -> tensor<8xi32>
  check.expect_eq_const %bits, dense<[1065353216, -1073741824, 0, -2147483648, 1036831949, 2139095039, 1, -1077936128]> : tensor<8xi32>
  %back = stablehlo.constant dense<[1, -1, 1065353216, -8388608]> : tensor<4xi32>
  %f = stablehlo.bitcast_convert %back : (tensor<4xi32>) -> tensor<4xf32>
  %fbits = stablehlo.bitcast_convert %f : (tensor<4xf32>) -> tensor<4xi32>
  check.expect_eq %fbits, %back : tensor<4xi32>
  func.return
}
