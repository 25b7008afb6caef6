func.func @main(%a: tensor<?x128xf32>) -> tensor<?x128xf32> {
  %0 = stablehlo.tanh %a : tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}
