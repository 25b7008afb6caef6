// 64-bit types in the stablehlo/testdata form: f64 (divide, exp, log,
// sqrt, atan2), i64 (products near 2^63, shifts), ui64 (wrap-around), and
// complex<f64> (multiply, divide, abs).
module @jit_wide {
  func.func public @main() -> (tensor<6xf64>, tensor<6xi64>) {
    %0:5 = call @inputs() : () -> (tensor<6xf64>, tensor<6xf64>, tensor<6xi64>, tensor<6xi64>, tensor<4xui64>)
    %1:9 = call @expected() : () -> (tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xi64>, tensor<6xi64>, tensor<4xui64>, tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>)
    %div = stablehlo.divide %0#0, %0#1 : tensor<6xf64>
    stablehlo.custom_call @check.expect_eq(%div, %1#0) {has_side_effect = true} : (tensor<6xf64>, tensor<6xf64>) -> ()
    %exp = stablehlo.exponential %0#1 : tensor<6xf64>
    stablehlo.custom_call @check.expect_close(%exp, %1#1) {has_side_effect = true} : (tensor<6xf64>, tensor<6xf64>) -> ()
    %log = stablehlo.log %0#0 : tensor<6xf64>
    %sqrt = stablehlo.sqrt %0#0 : tensor<6xf64>
    %ls = stablehlo.add %log, %sqrt : tensor<6xf64>
    stablehlo.custom_call @check.expect_close(%ls, %1#2) {has_side_effect = true} : (tensor<6xf64>, tensor<6xf64>) -> ()
    %atan2 = stablehlo.atan2 %0#1, %0#0 : tensor<6xf64>
    stablehlo.custom_call @check.expect_almost_eq(%atan2, %1#3) {has_side_effect = true} : (tensor<6xf64>, tensor<6xf64>) -> ()
    %mul = stablehlo.multiply %0#2, %0#3 : tensor<6xi64>
    stablehlo.custom_call @check.expect_eq(%mul, %1#4) {has_side_effect = true} : (tensor<6xi64>, tensor<6xi64>) -> ()
    %three = stablehlo.constant dense<3> : tensor<6xi64>
    %shl = stablehlo.shift_left %0#2, %three : tensor<6xi64>
    stablehlo.custom_call @check.expect_eq(%shl, %1#5) {has_side_effect = true} : (tensor<6xi64>, tensor<6xi64>) -> ()
    %two = stablehlo.constant dense<2> : tensor<4xui64>
    %uadd = stablehlo.add %0#4, %0#4 : tensor<4xui64>
    %umul = stablehlo.multiply %uadd, %two : tensor<4xui64>
    stablehlo.custom_call @check.expect_eq(%umul, %1#6) {has_side_effect = true} : (tensor<4xui64>, tensor<4xui64>) -> ()
    %c:2 = call @complex_inputs() : () -> (tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>)
    %cmul = stablehlo.multiply %c#0, %c#1 : tensor<3xcomplex<f64>>
    stablehlo.custom_call @check.expect_close(%cmul, %1#7) {has_side_effect = true} : (tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>) -> ()
    %cdiv = stablehlo.divide %c#0, %c#1 : tensor<3xcomplex<f64>>
    stablehlo.custom_call @check.expect_close(%cdiv, %1#8) {has_side_effect = true} : (tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>) -> ()
    %cabs = stablehlo.abs %c#0 : (tensor<3xcomplex<f64>>) -> tensor<3xf64>
    %cabs_expected = stablehlo.constant dense<[2.5, 4.00780488547035, 3.1622776601683795]> : tensor<3xf64>
    stablehlo.custom_call @check.expect_close(%cabs, %cabs_expected) {has_side_effect = true} : (tensor<3xf64>, tensor<3xf64>) -> ()
    return %div, %mul : tensor<6xf64>, tensor<6xi64>
  }
  func.func private @inputs() -> (tensor<6xf64>, tensor<6xf64>, tensor<6xi64>, tensor<6xi64>, tensor<4xui64>) {
    %cst = stablehlo.constant dense<[0.5, 0.001, 2.0, 123.456, 10000000000.0, 0.75]> : tensor<6xf64>
    %cst_0 = stablehlo.constant dense<[3.0, -7.0, 0.1, 2.5, -1.0e-05, 4.0]> : tensor<6xf64>
    %c = stablehlo.constant dense<[3037000499, -3037000499, 1099511627776, -4611686018427387904, 9, 123456789012]> : tensor<6xi64>
    %c_1 = stablehlo.constant dense<[3037000499, 3037000499, 1048576, 2, -9, 1000]> : tensor<6xi64>
    %c_2 = stablehlo.constant dense<[18446744073709551615, 9223372036854775808, 12345678901234567890, 0]> : tensor<4xui64>
    return %cst, %cst_0, %c, %c_1, %c_2 : tensor<6xf64>, tensor<6xf64>, tensor<6xi64>, tensor<6xi64>, tensor<4xui64>
  }
  func.func private @complex_inputs() -> (tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>) {
    %cst = stablehlo.constant dense<[(1.5, 2.0), (-0.25, 4.0), (3.0, -1.0)]> : tensor<3xcomplex<f64>>
    %cst_0 = stablehlo.constant dense<[(0.5, -1.0), (2.0, 0.0), (-1.0, 3.0)]> : tensor<3xcomplex<f64>>
    return %cst, %cst_0 : tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>
  }
  func.func private @expected() -> (tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xi64>, tensor<6xi64>, tensor<4xui64>, tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>) {
    %cst = stablehlo.constant dense<[0.16666666666666666, -0.00014285714285714287, 20.0, 49.382400000000004, -999999999999999.9, 0.1875]> : tensor<6xf64>
    %cst_0 = stablehlo.constant dense<[20.085536923187668, 0.0009118819655545162, 1.1051709180756477, 12.182493960703473, 0.9999900000499998, 54.598150033144236]> : tensor<6xf64>
    %cst_1 = stablehlo.constant dense<[0.013959600626602287, -6.876132502380453, 2.1073607429330403, 15.92696037278193, 100023.02585092995, 0.5783433313326577]> : tensor<6xf64>
    %cst_2 = stablehlo.constant dense<[1.4056476493802699, -1.5706534696530112, 0.049958395721942765, 0.02024736230664462, -1.0e-15, 1.3854483767992019]> : tensor<6xf64>
    %c = stablehlo.constant dense<[9223372030926249001, -9223372030926249001, 1152921504606846976, -9223372036854775808, -81, 123456789012000]> : tensor<6xi64>
    %c_0 = stablehlo.constant dense<[24296003992, -24296003992, 8796093022208, 0, 72, 987654312096]> : tensor<6xi64>
    %c_1 = stablehlo.constant dense<[18446744073709551612, 0, 12489227457519168328, 0]> : tensor<4xui64>
    %cst_3 = stablehlo.constant dense<[(2.75, -0.5), (-0.5, 8.0), (0.0, 10.0)]> : tensor<3xcomplex<f64>>
    %cst_4 = stablehlo.constant dense<[(-1.0, 2.0), (-0.125, 2.0), (-0.6, -0.7999999999999999)]> : tensor<3xcomplex<f64>>
    return %cst, %cst_0, %cst_1, %cst_2, %c, %c_0, %c_1, %cst_3, %cst_4 : tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xi64>, tensor<6xi64>, tensor<4xui64>, tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>
  }
}
