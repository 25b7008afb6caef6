func.func @main(%a: tensor<65536x65536xf32>) -> tensor<65536x65536xf32> {
  %1 = stablehlo.tanh %a : tensor<65536x65536xf32>
  %2 = stablehlo.add %1, %a : tensor<65536x65536xf32>
  %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<65536x65536xf32>) -> tensor<65536x65536xf32>
  %4 = stablehlo.dot_general %3, %a, contracting_dims = [1] x [0] : (tensor<65536x65536xf32>, tensor<65536x65536xf32>) -> tensor<65536x65536xf32>
  return %4 : tensor<65536x65536xf32>
}
