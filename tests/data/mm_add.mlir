// A matmul, then add and tanh, with JAX-style locations (README's kernels and roofline examples).
func.func @main(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>, %c: tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc("jit(f)/dot_general"("model.py":3:8))
  %1 = stablehlo.add %b, %c : tensor<1024x1024xf32> loc("jit(f)/add"("model.py":4:8))
  %2 = stablehlo.tanh %1 : tensor<1024x1024xf32> loc("model.py":5:8)
  return %0, %2 : tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
