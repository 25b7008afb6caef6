// reduce (sum over a dim, max over a dim, variadic argmax) and
// reduce_window (2x2 max pool, 3x3 padded box sum).
func.func @main() {
  %x = stablehlo.constant dense<[[1.5, -2.0, 3.25, 0.5], [4.0, 0.25, -1.0, 2.0], [-3.5, 6.0, 1.0, -0.75]]> : tensor<3x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
  check.expect_eq_const %sum, dense<[3.25, 5.25, 2.75]> : tensor<3xf32>
  %max = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4xf32>
  check.expect_eq_const %max, dense<[4.0, 6.0, 3.25, 2.0]> : tensor<4xf32>
  %img = stablehlo.constant dense<[[-3.0, -2.5, -2.0, -1.5], [-1.0, -0.5, 9.0, 0.5], [1.0, 1.5, 2.0, 2.5], [3.0, 3.5, 4.0, 4.5]]> : tensor<4x4xf32>
  %pool = "stablehlo.reduce_window"(%img, %ninf) <{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<4x4xf32>, tensor<f32>) -> tensor<2x2xf32>
  check.expect_eq_const %pool, dense<[[-0.5, 9.0], [3.5, 4.5]]> : tensor<2x2xf32>
  %box = "stablehlo.reduce_window"(%img, %zero) <{window_dimensions = array<i64: 3, 3>, padding = dense<1> : tensor<2x2xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  check.expect_eq_const %box, dense<[[-7.0, 0.0, 3.0, 6.0], [-4.5, 4.5, 9.0, 10.5], [7.5, 22.5, 27.0, 22.5], [9.0, 15.0, 18.0, 13.0]]> : tensor<4x4xf32>
  %v = stablehlo.constant dense<[3, 9, -2, 9, 5, 1]> : tensor<6xi32>
  %iota = stablehlo.iota dim = 0 : tensor<6xi32>
  %imin = stablehlo.constant dense<-2147483648> : tensor<i32>
  %izero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%v init: %imin), (%iota init: %izero) across dimensions = [0] : (tensor<6xi32>, tensor<6xi32>, tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>)
   reducer(%a: tensor<i32>, %c: tensor<i32>) (%b: tensor<i32>, %d: tensor<i32>) {
    %gt = stablehlo.compare GT, %a, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %a, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %b, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %take = stablehlo.or %gt, %tie : tensor<i1>
    %val = stablehlo.select %take, %a, %c : tensor<i1>, tensor<i32>
    %idx = stablehlo.select %take, %b, %d : tensor<i1>, tensor<i32>
    stablehlo.return %val, %idx : tensor<i32>, tensor<i32>
  }
  check.expect_eq_const %r#1, dense<1> : tensor<i32>
  check.expect_eq_const %r#0, dense<9> : tensor<i32>
  func.return
}
