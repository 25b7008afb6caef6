// The stablehlo/testdata form: @inputs and @expected return constants,
// @main computes and checks with custom calls (softplus, logistic, integers).
module @jit_softplus attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<3x4xf32> {jax.result_info = ""}) {
    %0:2 = call @inputs() : () -> (tensor<3x4xf32>, tensor<3x4xi32>)
    %1:3 = call @expected() : () -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi32>)
    %2 = stablehlo.exponential %0#0 : tensor<3x4xf32>
    %3 = stablehlo.log_plus_one %2 : tensor<3x4xf32>
    stablehlo.custom_call @check.expect_close(%3, %1#0) {has_side_effect = true} : (tensor<3x4xf32>, tensor<3x4xf32>) -> ()
    %4 = stablehlo.logistic %0#0 : tensor<3x4xf32>
    stablehlo.custom_call @check.expect_close(%4, %1#1) {has_side_effect = true} : (tensor<3x4xf32>, tensor<3x4xf32>) -> ()
    %5 = stablehlo.multiply %0#1, %0#1 : tensor<3x4xi32>
    %6 = stablehlo.subtract %5, %0#1 : tensor<3x4xi32>
    %7 = stablehlo.custom_call @check.eq(%6, %1#2) : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<i1>
    return %3 : tensor<3x4xf32>
  }
  func.func private @inputs() -> (tensor<3x4xf32> {mhlo.layout_mode = "default"}, tensor<3x4xi32>) {
    %cst = stablehlo.constant dense<[[-3.5, -1.0, -0.25, 0.0], [0.125, 0.5, 1.0, 2.5], [4.0, 6.0, -6.0, 10.0]]> : tensor<3x4xf32>
    %c = stablehlo.constant dense<[[3, -7, 11, 0], [2, 5, -1, 8], [100, -100, 1, 4]]> : tensor<3x4xi32>
    return %cst, %c : tensor<3x4xf32>, tensor<3x4xi32>
  }
  func.func private @expected() -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi32>) {
    %cst = stablehlo.constant dense<[[0.029750418, 0.3132617, 0.5759394, 0.6931472], [0.75759906, 0.974077, 1.3132616, 2.5788898], [4.01815, 6.0024757, 0.0024756852, 10.000046]]> : tensor<3x4xf32>
    %cst_0 = stablehlo.constant dense<[[0.02931223, 0.26894143, 0.4378235, 0.5], [0.53120935, 0.62245935, 0.7310586, 0.9241418], [0.98201376, 0.99752736, 0.0024726233, 0.9999546]]> : tensor<3x4xf32>
    %c = stablehlo.constant dense<[[6, 56, 110, 0], [2, 20, 2, 56], [9900, 10100, 0, 12]]> : tensor<3x4xi32>
    return %cst, %cst_0, %c : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi32>
  }
}
