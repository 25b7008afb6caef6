// A module whose shapes are dynamic inside but fixed by its arguments and
// constants: stablehlo-refine-shapes makes them static.
func.func @main(%arg0: tensor<4x16xf32>) -> tensor<?x16xf32> {
  %shape = stablehlo.constant dense<[4, 16]> : tensor<2xi64>
  %0 = stablehlo.dynamic_reshape %arg0, %shape : (tensor<4x16xf32>, tensor<2xi64>) -> tensor<?x16xf32>
  %1 = stablehlo.exponential %0 : tensor<?x16xf32>
  return %1 : tensor<?x16xf32>
}
