// Two 2048x2048 f32 matmuls with a tanh between: 48 MiB of temporaries on one v5e chip
// (libtpu 0.0.50.1), so --xla_tpu_max_hbm_size_mib=40 refuses it and 60 lets it compile.
func.func public @main(%arg0: tensor<2048x2048xf32>, %arg1: tensor<2048x2048xf32>) -> tensor<2048x2048xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<2048x2048xf32>, tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %1 = stablehlo.tanh %0 : tensor<2048x2048xf32>
  %2 = stablehlo.dot_general %1, %arg1, contracting_dims = [1] x [0] : (tensor<2048x2048xf32>, tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  return %2 : tensor<2048x2048xf32>
}
