// One function with a CHLO op: for pass-by-pass IR dumps.
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = chlo.erf_inv %arg0 : tensor<8xf32> -> tensor<8xf32>
  %1 = stablehlo.add %0, %0 : tensor<8xf32>
  %2 = stablehlo.add %0, %0 : tensor<8xf32>
  %3 = stablehlo.multiply %1, %2 : tensor<8xf32>
  return %3 : tensor<8xf32>
}
