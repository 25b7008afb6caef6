// while (5 iterations of acc = 2 * acc + x, the trip count a runtime
// value so that XLA keeps the loop), if on a runtime predicate,
// case with three branches, and iota along two dimensions.
func.func @main() {
  %x = stablehlo.constant dense<[1.0, -0.5, 2.25, 0.125]> : tensor<4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<4xf32>
  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %limits = stablehlo.constant dense<[5, 1]> : tensor<2xi32>
  %l0 = stablehlo.slice %limits [0:1] : (tensor<2xi32>) -> tensor<1xi32>
  %l1 = stablehlo.slice %limits [1:2] : (tensor<2xi32>) -> tensor<1xi32>
  %n = stablehlo.reshape %l0 : (tensor<1xi32>) -> tensor<i32>
  %one = stablehlo.reshape %l1 : (tensor<1xi32>) -> tensor<i32>
  %w:2 = stablehlo.while(%i = %i0, %acc = %zero) : tensor<i32>, tensor<4xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %m = stablehlo.multiply %acc, %two : tensor<4xf32>
      %a = stablehlo.add %m, %x : tensor<4xf32>
      stablehlo.return %i1, %a : tensor<i32>, tensor<4xf32>
    }
  check.expect_eq_const %w#1, dense<[31.0, -15.5, 69.75, 3.875]> : tensor<4xf32>
  check.expect_eq_const %w#0, dense<5> : tensor<i32>
  %sel = stablehlo.constant dense<[2, 0]> : tensor<2xi32>
  %s0 = stablehlo.slice %sel [0:1] : (tensor<2xi32>) -> tensor<1xi32>
  %s1 = stablehlo.slice %sel [1:2] : (tensor<2xi32>) -> tensor<1xi32>
  %b0 = stablehlo.reshape %s0 : (tensor<1xi32>) -> tensor<i32>
  %b1 = stablehlo.reshape %s1 : (tensor<1xi32>) -> tensor<i32>
  %p = stablehlo.compare GT, %b0, %b1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %if = "stablehlo.if"(%p) ({
    %neg = stablehlo.negate %x : tensor<4xf32>
    stablehlo.return %neg : tensor<4xf32>
  }, {
    stablehlo.return %x : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  check.expect_eq_const %if, dense<[-1.0, 0.5, -2.25, -0.125]> : tensor<4xf32>
  %case = "stablehlo.case"(%b0) ({
    stablehlo.return %zero : tensor<4xf32>
  }, {
    stablehlo.return %x : tensor<4xf32>
  }, {
    %sq = stablehlo.multiply %x, %x : tensor<4xf32>
    stablehlo.return %sq : tensor<4xf32>
  }) : (tensor<i32>) -> tensor<4xf32>
  check.expect_eq_const %case, dense<[1.0, 0.25, 5.0625, 0.015625]> : tensor<4xf32>
  %r = stablehlo.iota dim = 0 : tensor<3x4xi32>
  %c = stablehlo.iota dim = 1 : tensor<3x4xi32>
  %ten = stablehlo.constant dense<10> : tensor<3x4xi32>
  %r10 = stablehlo.multiply %r, %ten : tensor<3x4xi32>
  %grid = stablehlo.add %r10, %c : tensor<3x4xi32>
  check.expect_eq_const %grid, dense<[[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]> : tensor<3x4xi32>
  func.return
}
