module @jit_special attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>) -> (tensor<8xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<-0.899999976> : tensor<f32>
    %cst_0 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %0 = call @clip(%arg0, %cst, %cst_0) : (tensor<8xf32>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
    %1 = chlo.erf_inv %0 : tensor<8xf32> -> tensor<8xf32>
    %2 = stablehlo.multiply %arg0, %arg0 : tensor<8xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %4 = stablehlo.add %2, %3 : tensor<8xf32>
    %5 = chlo.lgamma %4 : tensor<8xf32> -> tensor<8xf32>
    %6 = stablehlo.add %1, %5 : tensor<8xf32>
    return %6 : tensor<8xf32>
  }
  func.func private @clip(%arg0: tensor<8xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<8xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<8xf32>
    %3 = stablehlo.convert %arg2 : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<8xf32>
    return %5 : tensor<8xf32>
  }
}
