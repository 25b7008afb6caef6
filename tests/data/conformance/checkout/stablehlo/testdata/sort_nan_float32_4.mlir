// Over-specified: the comparator makes +NaN and -NaN equal keys and the sort is not
// stable, yet @expected wants -NaN first.
module @jit_main {
  func.func public @main() -> tensor<4xf32> {
    %0 = call @inputs() : () -> tensor<4xf32>
    %1 = call @expected() : () -> tensor<4xf32>
    %2 = "stablehlo.sort"(%0) <{dimension = 0 : i64}> ({
    ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):
      %nan = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %3 = stablehlo.compare  NE, %arg0, %arg0,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.select %3, %nan, %arg0 : tensor<i1>, tensor<f32>
      %5 = stablehlo.compare  NE, %arg1, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.select %5, %nan, %arg1 : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare  LT, %4, %6,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    stablehlo.custom_call @check.expect_eq(%2, %1) {has_side_effect = true} : (tensor<4xf32>, tensor<4xf32>) -> ()
    return %2 : tensor<4xf32>
  }
  func.func private @inputs() -> tensor<4xf32> {
    %cst = stablehlo.constant dense<[0x7FC00000, 1.0, 0xFFC00000, 0.0]> : tensor<4xf32>
    return %cst : tensor<4xf32>
  }
  func.func private @expected() -> tensor<4xf32> {
    %cst = stablehlo.constant dense<[0.0, 1.0, 0xFFC00000, 0x7FC00000]> : tensor<4xf32>
    return %cst : tensor<4xf32>
  }
}
