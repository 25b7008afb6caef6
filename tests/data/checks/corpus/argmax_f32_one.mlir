// argmax as a variadic reduce with an iota (one input; ties: the first index)
module @jit_testcase {
  func.func public @main() -> (tensor<i32> {jax.result_info = ""}) {
    %in = call @inputs() : () -> tensor<1xf32>
    %ex = call @expected() : () -> tensor<i32>
    %iota = stablehlo.iota dim = 0 : tensor<1xi32>
    %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %m:2 = "stablehlo.reduce"(%in, %iota, %init, %zero) <{dimensions = array<i64: 0>}> ({
      ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
        %gt = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %eq = stablehlo.compare  EQ, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %lt = stablehlo.compare  LT, %ai, %bi,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %tie = stablehlo.and %eq, %lt : tensor<i1>
        %take = stablehlo.or %gt, %tie : tensor<i1>
        %v = stablehlo.select %gt, %a, %b : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
        %i = stablehlo.select %take, %ai, %bi : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
        stablehlo.return %v, %i : tensor<f32>, tensor<i32>
    }) : (tensor<1xf32>, tensor<1xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
    %ok_m_1 = stablehlo.custom_call @check.eq(%m#1, %ex) : (tensor<i32>, tensor<i32>) -> tensor<i1>
    return %m#1 : tensor<i32>
  }
  func.func private @inputs() -> (tensor<1xf32> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<[4.25]> : tensor<1xf32>
    return %c0 : tensor<1xf32>
  }
  func.func private @expected() -> (tensor<i32>) {
    %e0 = stablehlo.constant dense<0> : tensor<i32>
    return %e0 : tensor<i32>
  }
}
