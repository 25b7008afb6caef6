// add of c64 inputs (uniform)
module @jit_testcase {
  func.func public @main() -> (tensor<3x4xcomplex<f32>> {jax.result_info = ""}) {
    %in:2 = call @inputs() : () -> (tensor<3x4xcomplex<f32>>, tensor<3x4xcomplex<f32>>)
    %ex = call @expected() : () -> tensor<3x4xcomplex<f32>>
    %r = stablehlo.add %in#0, %in#1 : tensor<3x4xcomplex<f32>>
    stablehlo.custom_call @check.expect_almost_eq(%r, %ex) {has_side_effect = true} : (tensor<3x4xcomplex<f32>>, tensor<3x4xcomplex<f32>>) -> ()
    return %r : tensor<3x4xcomplex<f32>>
  }
  func.func private @inputs() -> (tensor<3x4xcomplex<f32>> {mhlo.layout_mode = "default"}, tensor<3x4xcomplex<f32>> {mhlo.layout_mode = "default"}) {
    %c0 = stablehlo.constant dense<[[(1.5, -1.0), (1.5, -1.0), (1.5, -1.0), (1.5, -1.0)], [(1.5, -1.0), (1.5, -1.0), (1.5, -1.0), (1.5, -1.0)], [(1.5, -1.0), (1.5, -1.0), (1.5, -1.0), (1.5, -1.0)]]> : tensor<3x4xcomplex<f32>>
    %c1 = stablehlo.constant dense<[[(-2.0, -0.75), (-2.0, -0.75), (-2.0, -0.75), (-2.0, -0.75)], [(-2.0, -0.75), (-2.0, -0.75), (-2.0, -0.75), (-2.0, -0.75)], [(-2.0, -0.75), (-2.0, -0.75), (-2.0, -0.75), (-2.0, -0.75)]]> : tensor<3x4xcomplex<f32>>
    return %c0, %c1 : tensor<3x4xcomplex<f32>>, tensor<3x4xcomplex<f32>>
  }
  func.func private @expected() -> (tensor<3x4xcomplex<f32>>) {
    %e0 = stablehlo.constant dense<[[(-0.5, -1.75), (-0.5, -1.75), (-0.5, -1.75), (-0.5, -1.75)], [(-0.5, -1.75), (-0.5, -1.75), (-0.5, -1.75), (-0.5, -1.75)], [(-0.5, -1.75), (-0.5, -1.75), (-0.5, -1.75), (-0.5, -1.75)]]> : tensor<3x4xcomplex<f32>>
    return %e0 : tensor<3x4xcomplex<f32>>
  }
}
