"""mlir/builtin_passes.py: the three passes shipped in Python (inline-calls,
fold-involutions, strip-frontend-attributes) and their registration.
"""

from __future__ import annotations

import textwrap

import numpy as np

import mlirhlo_driver
from tests.conftest import DATA


def _run(path_or_module, arrays):
    from mlirhlo_driver.execute import engine

    module = path_or_module
    outs, _, _ = engine.run_xla(module, arrays)
    return outs


# ------------------------------------------------------------------ the shipped passes, exactly


def _optimized(tmp_path, text, passes):
    import mlirhlo_driver as mhd

    src = tmp_path / "in.mlir"
    src.write_text(textwrap.dedent(text))
    return mhd.load(str(src)).optimize(passes=passes).as_text()


def test_inline_calls_leaves_calls_to_external_functions(tmp_path):
    path = tmp_path / "ext.mlir"
    path.write_text("""\
func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @ext(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = func.call @helper(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
""")
    text = mlirhlo_driver.load(str(path)).optimize(passes="inline-calls").as_text()
    assert "call @ext" in text and "func.func private @ext" in text  # no body: nothing to inline
    assert "@helper" not in text and "stablehlo.negate" in text       # inlined, then dropped


def test_inline_calls_on_jax_output_keeps_values():
    import mlirhlo_driver as mhd

    prog = mhd.load(str(DATA / "mlp_train_step.before_optimizations.txt"))
    inlined = prog.optimize(passes="inline-calls")
    text = inlined.as_text()
    assert "call @" not in text and text.count("func.func") == 1
    from mlirhlo_driver.execute import engine, run

    params, _ = engine.signature(prog.module)
    arrays = engine.make_inputs(params, run.RunOptions(seed=1).inputs, module=prog.module).arrays
    for a, b in zip(_run(prog.module, arrays), _run(inlined.module, arrays)):
        np.testing.assert_array_equal(a, b)


def test_fold_involutions(tmp_path):
    import mlirhlo_driver as mhd

    src = tmp_path / "inv.mlir"
    src.write_text("""func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<4xi1>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<4xi1>) {
  %t1 = stablehlo.transpose %a, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %t2 = stablehlo.transpose %t1, dims = [1, 2, 0] : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %r1 = stablehlo.reverse %a, dims = [0, 2] : tensor<2x3x4xf32>
  %r2 = stablehlo.reverse %r1, dims = [0, 2] : tensor<2x3x4xf32>
  %n1 = stablehlo.not %b : tensor<4xi1>
  %n2 = stablehlo.not %n1 : tensor<4xi1>
  return %t2, %r2, %n2 : tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<4xi1>
}
""")
    prog = mhd.load(str(src))
    folded = prog.optimize(passes="fold-involutions")
    text = folded.as_text()
    assert text.count("stablehlo.transpose") == 1 and "dims = [2, 0, 1]" in text
    assert "reverse" not in text and "stablehlo.not" not in text
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3, 4)).astype(np.float32), rng.integers(0, 2, 4).astype(bool)]
    for a, b in zip(_run(prog.module, arrays), _run(folded.module, arrays)):
        np.testing.assert_array_equal(a, b)


def test_strip_frontend_attributes(cli, tmp_path):
    before = cli("opt", DATA / "mlp_train_step.before_optimizations.txt").out
    assert "xla_shape" in before and "result_layout" in before
    after = cli("opt", DATA / "mlp_train_step.before_optimizations.txt", "--passes",
                "strip-frontend-attributes").out
    assert "xla_shape" not in after and "result_layout" not in after
    exported = cli("opt", DATA / "softmax.vhlo", "--passes", "strip-frontend-attributes").out
    assert "jax." not in exported and "mhlo.num_partitions" in exported


def test_fold_involutions_folds_only_true_pairs(tmp_path):
    """Only an op over the same op folds: negate(abs) and reverses over different dims stay, a
    transpose pair that cancels leaves nothing, and an inner op still used elsewhere is kept."""
    out = _optimized(tmp_path, """\
        func.func @main(%a: tensor<2x3xf32>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
          %n = stablehlo.abs %x : tensor<4xf32>
          %nn = stablehlo.negate %n : tensor<4xf32>
          %r1 = stablehlo.reverse %a, dims = [0] : tensor<2x3xf32>
          %r2 = stablehlo.reverse %r1, dims = [1] : tensor<2x3xf32>
          %t1 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
          %t2 = stablehlo.transpose %t1, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
          %m1 = stablehlo.negate %x : tensor<4xf32>
          %m2 = stablehlo.negate %m1 : tensor<4xf32>
          %k = stablehlo.negate %x : tensor<4xf32>
          return %nn, %r2, %t2, %m2, %m1, %k : tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
        }
        """, "fold-involutions")
    assert out == textwrap.dedent("""\
        module {
          func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
            %0 = stablehlo.abs %arg1 : tensor<4xf32>
            %1 = stablehlo.negate %0 : tensor<4xf32>
            %2 = stablehlo.reverse %arg0, dims = [0] : tensor<2x3xf32>
            %3 = stablehlo.reverse %2, dims = [1] : tensor<2x3xf32>
            %4 = stablehlo.negate %arg1 : tensor<4xf32>
            %5 = stablehlo.negate %arg1 : tensor<4xf32>
            return %1, %3, %arg0, %arg1, %4, %5 : tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
          }
        }
        """)


def test_inline_calls_reaches_into_regions_unrolls_recursion_64_times_and_drops_unused_private_functions(tmp_path):
    """A call inside a region is inlined; a self-recursive callee is inlined 64 times, then left
    as a call (it stays, being called); an unused private function goes, a public one stays."""
    out = _optimized(tmp_path, """\
        func.func @main(%x: tensor<4xf32>, %i: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
          %r = "stablehlo.case"(%i) ({
            %c = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
            stablehlo.return %c : tensor<4xf32>
          }, {
            stablehlo.return %x : tensor<4xf32>
          }) : (tensor<i32>) -> tensor<4xf32>
          %s = func.call @rec(%x) : (tensor<4xf32>) -> tensor<4xf32>
          return %r, %s : tensor<4xf32>, tensor<4xf32>
        }
        func.func private @helper(%y: tensor<4xf32>) -> tensor<4xf32> {
          %0 = stablehlo.abs %y : tensor<4xf32>
          %1 = stablehlo.exponential %0 : tensor<4xf32>
          return %1 : tensor<4xf32>
        }
        func.func private @rec(%y: tensor<4xf32>) -> tensor<4xf32> {
          %0 = stablehlo.negate %y : tensor<4xf32>
          %1 = func.call @rec(%0) : (tensor<4xf32>) -> tensor<4xf32>
          return %1 : tensor<4xf32>
        }
        func.func @unused_public(%y: tensor<4xf32>) -> tensor<4xf32> {
          return %y : tensor<4xf32>
        }
        func.func private @unused_private(%y: tensor<4xf32>) -> tensor<4xf32> {
          return %y : tensor<4xf32>
        }
        """, "inline-calls")
    negates = "".join(f"    %{i} = stablehlo.negate %{i - 1 if i > 1 else 'arg0'} : tensor<4xf32>\n"
                      for i in range(1, 65))
    assert out == textwrap.dedent("""\
        module {
          func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
            %0 = "stablehlo.case"(%arg1) ({
              %66 = stablehlo.abs %arg0 : tensor<4xf32>
              %67 = stablehlo.exponential %66 : tensor<4xf32>
              stablehlo.return %67 : tensor<4xf32>
            }, {
              stablehlo.return %arg0 : tensor<4xf32>
            }) : (tensor<i32>) -> tensor<4xf32>
        """) + negates + textwrap.dedent("""\
            %65 = call @rec(%64) : (tensor<4xf32>) -> tensor<4xf32>
            return %0, %65 : tensor<4xf32>, tensor<4xf32>
          }
          func.func private @rec(%arg0: tensor<4xf32>) -> tensor<4xf32> {
            %0 = stablehlo.negate %arg0 : tensor<4xf32>
            %1 = call @rec(%0) : (tensor<4xf32>) -> tensor<4xf32>
            return %1 : tensor<4xf32>
          }
          func.func @unused_public(%arg0: tensor<4xf32>) -> tensor<4xf32> {
            return %arg0 : tensor<4xf32>
          }
        }
        """)


def test_strip_frontend_attributes_keeps_everything_else(tmp_path):
    """Exactly jax.*, mhlo.layout_mode, mhlo.frontend_attributes, result_layout and xla_shape go,
    from the module, ops, and function argument and result attributes; look-alikes stay."""
    out = _optimized(tmp_path, """\
        module @m attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32} {
          func.func @main(%x: tensor<4xf32> {jax.arg_info = "x", mhlo.sharding = "{replicated}", mhlo.layout_mode = "default"}, %y: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "r", mhlo.layout_mode = "default", mhlo.result_layout_x = 1 : i32}) {
            %0 = stablehlo.add %x, %y {xla_shape = "f32[4]", mhlo.frontend_attributes = {a = "b"}, jaxish = 1 : i32, result_layout = dense<0> : tensor<1xindex>} : tensor<4xf32>
            return %0 : tensor<4xf32>
          }
        }
        """, "strip-frontend-attributes")
    assert out == textwrap.dedent("""\
        module @m attributes {mhlo.num_partitions = 1 : i32} {
          func.func @main(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}"}, %arg1: tensor<4xf32>) -> (tensor<4xf32> {mhlo.result_layout_x = 1 : i32}) {
            %0 = stablehlo.add %arg0, %arg1 {jaxish = 1 : i32} : tensor<4xf32>
            return %0 : tensor<4xf32>
          }
        }
        """)


def test_builtin_passes_are_registered_in_order_with_their_functions():
    """The shipped passes, in registration order, with anchors and the module's own functions."""
    from mlirhlo_driver.mlir import builtin_passes as bp

    assert [(n, a, fn) for n, a, _, fn in bp.PASSES] == [
        ("inline-calls", "builtin.module", bp.inline_calls), ("fold-involutions", "func.func", bp.fold_involutions),
        ("strip-frontend-attributes", "builtin.module", bp.strip_frontend_attributes)]
    assert all(callable(fn) for *_, fn in bp.PASSES)
