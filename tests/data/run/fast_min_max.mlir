// NaN propagation through maximum: the StableHLO spec (and XLA by default)
// propagate NaN; XLA CPU with --xla_cpu_enable_fast_min_max=true does not.
// A deliberately broken platform side for `mlirhlo run --bisect`.
func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %a = stablehlo.multiply %x, %y : tensor<8xf32>
  %z = stablehlo.subtract %a, %a : tensor<8xf32>
  %n = stablehlo.divide %z, %z : tensor<8xf32>
  %m = stablehlo.maximum %x, %n : tensor<8xf32>
  %r = stablehlo.add %m, %y : tensor<8xf32>
  return %r : tensor<8xf32>
}
