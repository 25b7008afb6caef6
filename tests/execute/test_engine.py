"""execute/engine.py: random inputs that are safe for each op, devices, running XLA and the
interpreter, and the mismatch report.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlirhlo_driver.execute import engine, run
from mlirhlo_driver.inputs import loader as inputs
from mlirhlo_driver.ir import dtypes
from tests.conftest import assert_mentions, count_executes
from tests.execute.conftest import _module, make_inputs


def prepare_checks(module, **kw):
    """inputs.checks.prepare with XLA CPU evaluating what numpy cannot read (as run and the stages do)."""
    from mlirhlo_driver.inputs import checks
    from mlirhlo_driver.xla.backend import run_on_host

    return checks.prepare(module, evaluate=run_on_host, **kw)

ARRAYS = dtypes.ARRAY_TYPES


_GATHER_WHOLE_DIM = (  # the slice covers all of the indexed dimension: one valid start, 0
    "func.func @main(%t: tensor<4xf32>, %i: tensor<8x1xi32>) -> tensor<8x4xf32> {\n"
    "  %g = \"stablehlo.gather\"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], "
    "collapsed_slice_dims = [], start_index_map = [0], index_vector_dim = 1>, "
    "slice_sizes = array<i64: 4>} : (tensor<4xf32>, tensor<8x1xi32>) -> tensor<8x4xf32>\n"
    "  return %g : tensor<8x4xf32>\n}\n")

_GATHER_NO_START_DIM = (  # no start_index_map: the parameter reaches the indices through an empty slice
    "func.func @main(%t: tensor<4xf32>, %p: tensor<6xi32>) -> tensor<0x4xf32> {\n"
    "  %s = stablehlo.slice %p [0:0] : (tensor<6xi32>) -> tensor<0xi32>\n"
    "  %r = stablehlo.reshape %s : (tensor<0xi32>) -> tensor<0x0xi32>\n"
    "  %g = \"stablehlo.gather\"(%t, %r) {dimension_numbers = #stablehlo.gather<offset_dims = [1], "
    "index_vector_dim = 1>, slice_sizes = array<i64: 4>} : (tensor<4xf32>, tensor<0x0xi32>) "
    "-> tensor<0x4xf32>\n"
    "  return %g : tensor<0x4xf32>\n}\n")


def _loaded(tmp_path, text, name="m.mlir"):
    path = _module(tmp_path, text, name)
    return path, inputs.load(str(path))[0].module


def _convert_chain(n: int) -> str:
    lines, v = [], "%x"
    for i in range(n):
        lines.append(f"  %c{i} = stablehlo.convert {v} : (tensor<4xf32>) -> tensor<4xf32>")
        v = f"%c{i}"
    return ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n" + "\n".join(lines)
            + f"\n  %l = stablehlo.log {v} : tensor<4xf32>\n  return %l : tensor<4xf32>\n}}\n")


# ------------------------------------------------------------------ run

def test_run_takes_every_type_a_byte_wide_or_more():
    from mlirhlo_driver.execute import engine

    assert engine._NP_TYPES == {t.mlir: t.numpy for t in ARRAYS if t.bits >= 8 and t.name != "S1"} | \
        {"i1": "bool"}
    assert engine._CARRIER == {t.numpy: f"int{t.bits}" for t in ARRAYS
                            if t.kind == "float" and 8 <= t.bits < 32}
    assert "i4" not in engine._NP_TYPES and "f4E2M1FN" not in engine._NP_TYPES


def test_random_scatter_indices_stay_in_bounds():
    # As XLA's fake-data generator does: scatter start indices stay within operand - window
    # (8 - 3 here), so random inputs never scatter out of bounds.
    from mlirhlo_driver.execute import engine, run

    src = """\
func.func @main(%op: tensor<8xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>) -> tensor<8xf32> {
  %0 = "stablehlo.scatter"(%op, %idx, %upd) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      stablehlo.return %b : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}
      : (tensor<8xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""
    module = inputs.parse_mlir(src, "scatter.mlir")
    for seed in range(3):
        params, _ = engine.signature(module)
        made = engine.make_inputs(params, run.RunOptions(seed=seed).inputs, module=module)
        arrays, note = made.arrays, made.note
        assert "1 index-constrained" in note
        assert 0 <= arrays[1].min() and arrays[1].max() <= 5, arrays[1].ravel()


def test_comparison_report_is_precise():
    expected = np.array([[1.0, 2.0], [3.0, np.nan]], np.float32)
    actual = np.array([[1.0, 2.5], [3.0, np.nan]], np.float32)
    mm = engine.compare(actual, expected, 0, None, None)
    assert (mm.count, mm.total, mm.worst_index, mm.max_abs_error_at) == (1, 4, (0, 1), (0, 1))
    assert mm.max_abs_error == pytest.approx(0.5) and mm.worst_rel == pytest.approx(0.25)
    assert (mm.actual, mm.expected) == ("2.5", "2.0")
    # NaN vs NaN and equal infinities match; NaN vs number does not
    assert engine.compare(np.array([np.inf, np.nan]), np.array([np.inf, np.nan]), 0, 0, 0).count == 0
    assert engine.compare(np.array([1.0]), np.array([np.nan]), 0, 0, 0).count == 1
    # integers are exact whatever the tolerance
    assert engine.compare(np.array([3], np.int32), np.array([4], np.int32), 0, 1.0, 1.0).count == 1
    # tolerances
    assert engine.compare(np.array([1.00001], np.float32), np.array([1.0], np.float32), 0, None, None).count == 0
    assert engine.compare(np.array([1.01], np.float32), np.array([1.0], np.float32), 0, None, None).count == 1
    assert engine.compare(np.array([1.01], np.float32), np.array([1.0], np.float32), 0, 0.1, 0.0).count == 0


@pytest.mark.parametrize("dtype, unit", [("float64", 1.0), ("complex128", 1j)])
def test_default_tolerance_of_wide_types_is_tight(dtype, unit):
    # f64/c128 results are compared to 2**14 ULP (3.6e-12): a 1e-6 error (a value that went
    # through float32) is a mismatch.
    want = np.array([1.0 + unit], dtype)
    assert engine.compare(want * (1 + 1e-6), want, 0, None, None).count == 1
    assert engine.compare(want * (1 + 1e-13), want, 0, None, None).count == 0


def test_inputs_are_safe_for_each_op(tmp_path):
    text = ("func.func @main(%t: tensor<10x3xf32>, %i: tensor<5x1xi32>, %x: tensor<6xf32>, %s: tensor<i32>)"
            " -> (tensor<5x3xf32>, tensor<6xf32>, tensor<2xf32>) {\n"
            "  %g = \"stablehlo.gather\"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], "
            "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
            "slice_sizes = array<i64: 1, 3>} : (tensor<10x3xf32>, tensor<5x1xi32>) -> tensor<5x3xf32>\n"
            "  %l = stablehlo.log %x : tensor<6xf32>\n"
            "  %d = stablehlo.dynamic_slice %x, %s, sizes = [2] : (tensor<6xf32>, tensor<i32>) -> tensor<2xf32>\n"
            "  return %g, %l, %d : tensor<5x3xf32>, tensor<6xf32>, tensor<2xf32>\n}\n")
    module = inputs.load(str(_module(tmp_path, text)))[0].module
    seen_i, seen_s = set(), set()
    for seed in range(20):
        arrays, note = make_inputs(module, seed=seed)
        t, i, x, s = arrays
        assert i.min() >= 0 and i.max() <= 9          # row index into 10 rows
        assert (x > 0).all()                          # fed to log
        assert 0 <= int(s) <= 4                       # start of a 2-slice of 6
        seen_i.update(int(v) for v in i.ravel())
        seen_s.add(int(s))
    # The whole valid range is drawn, up to the last row and the last start.
    assert {0, 9} <= seen_i and 4 in seen_s
    assert "index-constrained" in note and "positive-constrained" in note
    wide, _ = make_inputs(module, large_float_range=True)
    assert np.abs(wide[0]).max() > 100


def test_dynamic_update_slice_starts_are_drawn_in_range(tmp_path):
    """Each start of a dynamic_update_slice (operands 2 on) keeps its update inside the operand,
    dimension by dimension, over the whole valid range."""
    text = ("func.func @main(%m: tensor<5x4xf32>, %u: tensor<2x3xf32>, %r: tensor<i32>, %c: tensor<i32>)"
            " -> tensor<5x4xf32> {\n"
            "  %d = stablehlo.dynamic_update_slice %m, %u, %r, %c : (tensor<5x4xf32>, tensor<2x3xf32>, "
            "tensor<i32>, tensor<i32>) -> tensor<5x4xf32>\n"
            "  return %d : tensor<5x4xf32>\n}\n")
    module = inputs.load(str(_module(tmp_path, text)))[0].module
    rows, cols = set(), set()
    for seed in range(30):
        _, _, r, c = make_inputs(module, seed=seed)[0]
        rows.add(int(r))
        cols.add(int(c))
    assert rows == {0, 1, 2, 3} and cols == {0, 1}


def test_cuda_devices_are_what_the_plugin_finds(monkeypatch):
    """Without a GPU here, the plugin's client is stood in for: the devices it lists are
    returned as they are; none is a NoGpu of its own, not an empty list to run on."""
    from types import SimpleNamespace

    from jax._src.lib import xla_client

    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import NoGpu

    found: list = []
    monkeypatch.setattr(xla_client, "make_c_api_client",
                        lambda *a, **k: SimpleNamespace(devices=lambda: list(found)))
    # The function itself, not its per-process cache: stand-in devices must not outlive the test.
    cuda_devices = _jaxlib.cuda_devices.__wrapped__
    with pytest.raises(NoGpu) as e:
        cuda_devices()
    assert_mentions(e.value.message, "cuda", "NVIDIA GPU", "found none")
    found[:] = ["gpu0", "gpu1"]
    assert cuda_devices() == ["gpu0", "gpu1"]


def test_npz_raw_integers_stand_for_types_npz_cannot_name_and_nothing_is_converted(tmp_path):
    """A bf16 / f8 parameter takes raw integers of its width (uint16 for bf16, uint8 or int8 for f8),
    reinterpreted bit for bit; an array of another kind (f16 for bf16, same width) or another width
    is refused, and a type numpy can name (f32) takes no integers at all."""
    import ml_dtypes

    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.execute.engine import TensorSpec, inputs_from_npz

    bf16 = TensorSpec((2,), "bf16", "bfloat16", "x")
    f8 = TensorSpec((2,), "f8E4M3FN", "float8_e4m3fn", "y")
    want = np.array([1.5, -2.0], ml_dtypes.bfloat16)
    path = tmp_path / "ok.npz"
    np.savez(path, x=want.view(np.uint16), y=np.array([0x38, 0xC0], np.uint8))
    got = inputs_from_npz(str(path), [bf16, f8])
    assert got[0].dtype == ml_dtypes.bfloat16 and got[0].tolist() == want.tolist()
    assert got[1].dtype == ml_dtypes.float8_e4m3fn and got[1].astype(np.float32).tolist() == [1.0, -2.0]
    for bad, spec in [(np.array([1.5, -2.0], np.float16), bf16), (np.array([1, 2], np.uint32), bf16),
                      (np.array([1, 2], np.int32), TensorSpec((2,), "f32", "float32", "x"))]:
        path = tmp_path / "bad.npz"
        np.savez(path, x=bad)
        with pytest.raises(InputError) as e:
            inputs_from_npz(str(path), [spec])
        assert e.value.file == str(path)
        assert_mentions(e.value.message, "'x'", str(bad.dtype), "parameter 0 (x)", spec.dtype)


def test_large_float_range_draws_over_the_whole_plus_minus_1e4_and_never_beyond(tmp_path):
    """--large-float-range draws floats (real and imaginary parts) over [-1e4, 1e4], [1e-4, 1e4] for log's input."""
    text = ("func.func @main(%x: tensor<512x512xf64>, %p: tensor<512x512xf64>, %c: tensor<512x512xcomplex<f64>>)"
            " -> (tensor<512x512xf64>, tensor<512x512xf64>, tensor<512x512xcomplex<f64>>) {\n"
            "  %l = stablehlo.log %p : tensor<512x512xf64>\n"
            "  return %x, %l, %c : tensor<512x512xf64>, tensor<512x512xf64>, tensor<512x512xcomplex<f64>>\n}\n")
    module = inputs.load(str(_module(tmp_path, text)))[0].module
    (x, p, c), note = make_inputs(module, seed=0, large_float_range=True)
    assert "1 positive-constrained" in note
    for values in (x, c.real, c.imag):
        assert values.min() >= -1e4 and values.max() <= 1e4
        assert values.min() < -9990 and values.max() > 9990  # the whole range is drawn
    assert p.min() >= 1e-4 and p.max() <= 1e4
    assert p.min() < 1 and p.max() > 9990


@pytest.mark.parametrize("text", [_GATHER_WHOLE_DIM, _GATHER_NO_START_DIM], ids=["whole-dim", "no-start-dim"])
def test_gather_indices_with_one_valid_start_are_drawn_as_zeros(tmp_path, text):
    """An integer parameter feeding a gather's indices is index-constrained to the valid starts:
    where the only one is 0, every drawn value is 0, never one past it."""
    module = inputs.load(str(_module(tmp_path, text)))[0].module
    for seed in range(10):
        arrays, note = make_inputs(module, seed=seed)
        assert (arrays[1] == 0).all()
        assert "1 index-constrained" in note


@pytest.mark.golden
def test_mismatch_describe_gives_the_counts_the_max_abs_error_the_worst_element_and_up_to_3_examples():
    """A mismatch's lines: what differs, how many and by which tolerance; the output's max abs
    error (the figure the summary table and the JSON give) at its element, with the relative error
    (and how many ULP apart, when close), or, when that element is within tolerance, the worst
    differing one after it; then at most 3 other differing elements in index order; a match is
    the first line alone. The golden of Mismatch.describe."""
    expected = np.zeros(6)
    actual = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 0.0])
    mm = engine.compare(actual, expected, 1, 0.0, 0.0)
    assert mm.describe() == (
        "output 1 (float64[6]): 5 of 6 elements differ (tolerance 0 + 0*|expected|)\n"
        "  max abs error 5 at [4]: got 5.0, expected 0.0 (rel error inf)\n"
        "  at [0]: got 1.0, expected 0.0\n"
        "  at [1]: got 2.0, expected 0.0\n"
        "  at [2]: got 3.0, expected 0.0")
    mm.label = "value"
    assert mm.describe().startswith("value (float64[6]): 5 of 6 elements differ (")
    # the worst one among the first differing elements is not listed twice
    two = engine.compare(np.array([[1.0, 2.5], [1.25, 1.0]], np.float32), np.ones((2, 2), np.float32), 0,
                         0.0, 0.1)
    assert two.describe() == (
        "output 0 (float32[2, 2]): 2 of 4 elements differ (tolerance 0.1 + 0*|expected|)\n"
        "  max abs error 1.5 at [0, 1]: got 2.5, expected 1.0 (rel error 1.5)\n"
        "  at [1, 0]: got 1.25, expected 1.0")
    # the largest error within its tolerance (a large value), a smaller one beyond it
    within = engine.compare(np.array([100.05, 0.025]), np.array([100.0, 0.01]), 0, 1e-3, 1e-3)
    assert within.describe() == (
        "output 0 (float64[2]): 1 of 2 elements differ (tolerance 0.001 + 0.001*|expected|)\n"
        "  max abs error 0.05 at [0]: got 100.05, expected 100.0 (within tolerance)\n"
        "  worst differing at [1]: got 0.025, expected 0.01 (abs error 0.015, rel error 1.5)")
    assert engine.compare(np.float32([1.1]), np.float32([1.0]), 0, 1e-3, 1e-3, xla_error_spec=True).describe() == (
        "output 0 (float32[1]): 1 of 1 elements differ (tolerance 0.001 absolute or 0.001 relative)\n"
        "  max abs error 0.1 at [0]: got 1.1, expected 1.0 (rel error 0.1, 838861 ULP apart)")
    assert engine.compare(np.int32([7, 1]), np.int32([3, 1]), 0, None, None).describe() == (
        "output 0 (int32[2]): 1 of 2 elements differ\n"
        "  max abs error 4 at [0]: got 7, expected 3 (rel error 1.33)")
    # the worst among the first four: the other three are the examples
    early = engine.compare(np.array([2.0, 9.0, 3.0, 4.0, 5.0]), np.ones(5), 0, 0.0, 0.0)
    assert (early.worst_index, [e[0] for e in early.examples]) == ((1,), [(0,), (2,), (3,)])
    assert engine.compare(np.ones(2), np.ones(2), 3, 0.0, 0.0).describe() == \
        "output 3 (float64[2]): 0 of 2 elements differ"
    assert engine.compare(np.zeros(2, np.float32), np.zeros(3), 0, 0.0, 0.0).describe() == (
        "output 0 (float64[3]): 3 of 3 elements differ (shape or type differs)\n"
        "  got float32[2], expected float64[3]")
    assert engine.compare(np.float32([1, 1 + 2**-22]), np.float32([1, 1]), 0, 0.0, 0.0).describe() == (
        "output 0 (float32[2]): 1 of 2 elements differ (tolerance 0 + 0*|expected|)\n"
        "  max abs error 2.38e-07 at [1]: got 1.0000002, expected 1.0 (rel error 2.38e-07, 2 ULP apart)")


def test_mismatch_of_a_scalar_and_relative_error_against_a_nonzero_expected():
    """A rank-0 value's worst index is []; the relative error divides by |expected|."""
    mm = engine.compare(np.array(3.0), np.array(-2.0), 0, 0.0, 0.0)
    assert (mm.count, mm.total, mm.worst_index, mm.max_abs_error, mm.worst_rel) == (1, 1, (), 5.0, 2.5)
    assert (mm.actual, mm.expected, mm.examples) == ("3.0", "-2.0", [])
    ints = engine.compare(np.array([7, 1], np.int32), np.array([3, 0], np.int32), 0, None, None)
    assert (ints.max_abs_error, ints.worst_rel, ints.worst_index, ints.actual, ints.expected) == \
        (4.0, 4 / 3, (0,), "7", "3")
    bools = engine.compare(np.array([True, False]), np.array([False, False]), 0, None, None)
    assert (bools.count, bools.max_abs_error, bools.worst_rel, bools.actual, bools.expected) == \
        (1, 1.0, 1.0, "true", "false")  # as StableHLO spells them, as check files' reports do
    cplx = engine.compare(np.array([1 + 2j], np.complex64), np.array([1 + 1j], np.complex64), 0, 0.0, 0.0)
    assert (cplx.actual, cplx.expected, cplx.max_abs_error) == ("(1+2j)", "(1+1j)", 1.0)
    # Against an expected 0 a float's relative error is inf, whatever the dtype and the error's size.
    for dtype in (np.float16, np.float32, np.float64):
        zero = engine.compare(np.array([1.5, 0.0], dtype), np.array([0.0, 0.0], dtype), 0, 0.0, 0.0)
        assert (zero.count, zero.max_abs_error, zero.worst_rel) == (1, 1.5, np.inf)


def test_signature_names_parameters_and_refuses_what_run_cannot_make(tmp_path):
    """A name location names a parameter (else argN); results are unnamed; dynamic shapes, tokens,
    sub-byte element types and a module without @main are input errors saying so."""
    from mlirhlo_driver.errors import InputError

    _, m = _loaded(tmp_path, 'func.func @main(%x: tensor<2x3xf32> loc("x"), %y: tensor<i8>) '
                   "-> (tensor<2x3xf32>, tensor<i8>) {\n  return %x, %y : tensor<2x3xf32>, tensor<i8>\n}\n")
    params, results = engine.signature(m)
    assert params == [engine.TensorSpec((2, 3), "f32", "float32", "x"), engine.TensorSpec((), "i8", "int8", "arg1")]
    assert results == [engine.TensorSpec((2, 3), "f32", "float32"), engine.TensorSpec((), "i8", "int8")]
    assert [p.mlir() for p in params] == ["tensor<2x3xf32>", "tensor<i8>"]
    for t, facts in [("tensor<?xf32>", ("dynamic shapes", "tensor<?xf32>", "--pipeline @refine-shapes")),
                     ("tensor<4xi4>", ("i4", "not supported")),
                     ("!stablehlo.token", ("!stablehlo.token",))]:
        _, m = _loaded(tmp_path, f"func.func @main(%x: {t}) -> {t} {{\n  return %x : {t}\n}}\n")
        with pytest.raises(InputError) as e:
            engine.signature(m)
        assert_mentions(e.value.message, *facts)
    _, m = _loaded(tmp_path, "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n  return %x : tensor<f32>\n}\n")
    with pytest.raises(InputError, match="@main"):
        engine.signature(m)


@pytest.mark.golden
@pytest.mark.parametrize("text, message", [
    ("func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n  return %x : tensor<?xf32>\n}\n",
     "cannot run a module with dynamic shapes (tensor<?xf32>); refine them first (--pipeline @refine-shapes)"),
    ("func.func @main(%x: tensor<4xi4>) -> tensor<4xi4> {\n  return %x : tensor<4xi4>\n}\n",
     "element type i4 is not supported by mlirhlo run"),
    ("func.func @main(%x: !stablehlo.token) -> !stablehlo.token {\n  return %x : !stablehlo.token\n}\n",
     "cannot run a module with a !stablehlo.token parameter or result"),
    ("func.func @f(%x: tensor<f32>) -> tensor<f32> {\n  return %x : tensor<f32>\n}\n",
     "module has no @main function"),
])
def test_signature_refusals_exactly(tmp_path, text, message):
    """What engine.signature says of a module run cannot make arguments for: the golden."""
    from mlirhlo_driver.errors import InputError

    _, m = _loaded(tmp_path, text)
    with pytest.raises(InputError) as e:
        engine.signature(m)
    assert e.value.message == message


def test_random_inputs_per_element_kind_cover_their_whole_range(tmp_path):
    """Random inputs: bools both values, signed ints -8..8, unsigned 0..15, floats and complex parts
    in [-1, 1); --zeros gives zeros of each dtype; the note says how they were made."""
    types = ["i1", "i8", "ui8", "i32", "ui64", "f32", "bf16", "complex<f32>"]
    args = ", ".join(f"%a{i}: tensor<4096x{t}>" for i, t in enumerate(types))
    rets = ", ".join(f"tensor<4096x{t}>" for t in types)
    _, m = _loaded(tmp_path, f"func.func @main({args}) -> ({rets}) {{\n"
                   f"  return {', '.join(f'%a{i}' for i in range(len(types)))} : {rets}\n}}\n")
    arrays, note = make_inputs(m, seed=7)
    assert_mentions(note, "random", "seed 7")
    assert [str(a.dtype) for a in arrays] == ["bool", "int8", "uint8", "int32", "uint64", "float32", "bfloat16",
                                              "complex64"]
    assert sorted(set(arrays[0].tolist())) == [False, True]
    assert 0.45 < arrays[0].mean() < 0.55  # True and False equally likely
    for a in arrays[1], arrays[3]:
        assert sorted(set(a.tolist())) == list(range(-8, 9))
    for a in arrays[2], arrays[4]:
        assert sorted(set(a.tolist())) == list(range(16))
    for a in (arrays[5], arrays[6].astype(np.float32), arrays[7].real, arrays[7].imag):
        assert -1.0 <= a.min() < -0.99 and 0.99 < a.max() <= 1.0
    assert len(np.unique(arrays[7].real - arrays[7].imag)) > 4000  # real and imaginary parts drawn apart
    again, _ = make_inputs(m, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(arrays, again))
    other, _ = make_inputs(m, seed=8)
    assert not np.array_equal(arrays[5], other[5])
    zeros, note = make_inputs(m, seed=7, zeros=True)
    assert "zeros" in note and "seed" not in note
    assert [a.dtype for a in zeros] == [a.dtype for a in arrays] and not any(a.any() for a in zeros)
    assert all(a.shape == (4096,) for a in zeros)


def test_positive_constraint_follows_up_to_8_transparent_ops(tmp_path):
    """A parameter reaching log through at most 8 shape/convert ops is drawn positive; 9 are not followed."""
    for n, want in [(0, {0: ("positive", 0)}), (8, {0: ("positive", 0)}), (9, {})]:
        _, m = _loaded(tmp_path, _convert_chain(n))
        assert engine.input_constraints(m) == want, n


def test_positive_ops_and_power_base_only(tmp_path):
    """log/sqrt/lgamma... inputs and a power's base are drawn in [0.1, 1) (large: [1e-4, 1e4]);
    the exponent is not constrained."""
    _, m = _loaded(tmp_path, (
        "func.func @main(%x: tensor<512xf32>, %p: tensor<512xf32>, %g: tensor<512xf32>, %q: tensor<512xf32>)"
        " -> (tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) {\n"
        "  %0 = stablehlo.power %x, %p : tensor<512xf32>\n"
        "  %1 = chlo.lgamma %g : tensor<512xf32> -> tensor<512xf32>\n"
        "  %2 = stablehlo.sqrt %q : tensor<512xf32>\n"
        "  return %0, %1, %2 : tensor<512xf32>, tensor<512xf32>, tensor<512xf32>\n}\n"))
    assert engine.input_constraints(m) == {0: ("positive", 0), 2: ("positive", 0), 3: ("positive", 0)}
    arrays, note = make_inputs(m, seed=1)
    assert_mentions(note, "seed 1", "3 positive")
    for i in (0, 2, 3):
        assert 0.1 <= arrays[i].min() < 0.11 and 0.99 < arrays[i].max() < 1.0
    assert arrays[1].min() < -0.99


def test_index_bounds_of_dynamic_slice_gather_and_scatter(tmp_path):
    """Index parameters are bounded by operand size minus slice/window size, per dimension, the
    smallest bound over all uses; an index use wins over a positive one, whatever the order."""
    _, m = _loaded(tmp_path, (
        "func.func @main(%m: tensor<7x5xf32>, %r: tensor<i32>, %c: tensor<i32>, %l: tensor<i64>, %k: tensor<i32>)"
        " -> (tensor<3x2xf32>, tensor<6x1xf32>, tensor<1x1xf32>, tensor<f32>) {\n"
        "  %d = stablehlo.dynamic_slice %m, %r, %c, sizes = [3, 2] : "
        "(tensor<7x5xf32>, tensor<i32>, tensor<i32>) -> tensor<3x2xf32>\n"
        "  %lc = stablehlo.convert %l : (tensor<i64>) -> tensor<i32>\n"
        "  %e = stablehlo.dynamic_slice %m, %lc, %lc, sizes = [6, 1] : "
        "(tensor<7x5xf32>, tensor<i32>, tensor<i32>) -> tensor<6x1xf32>\n"
        "  %kf = stablehlo.convert %k : (tensor<i32>) -> tensor<f32>\n"
        "  %kl = stablehlo.log %kf : tensor<f32>\n"
        "  %f = stablehlo.dynamic_slice %m, %k, %k, sizes = [1, 1] : "
        "(tensor<7x5xf32>, tensor<i32>, tensor<i32>) -> tensor<1x1xf32>\n"
        "  return %d, %e, %f, %kl : tensor<3x2xf32>, tensor<6x1xf32>, tensor<1x1xf32>, tensor<f32>\n}\n"))
    assert engine.input_constraints(m) == {1: ("index", 4), 2: ("index", 3), 3: ("index", 1), 4: ("index", 4)}
    gather = (
        "func.func @main(%t: tensor<10x6xf32>, %i: tensor<5x2xi32>) -> tensor<5x2x4xf32> {\n"
        "  %g = \"stablehlo.gather\"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 2], "
        "start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 2, 4>} "
        ": (tensor<10x6xf32>, tensor<5x2xi32>) -> tensor<5x2x4xf32>\n"
        "  return %g : tensor<5x2x4xf32>\n}\n")
    _, m = _loaded(tmp_path, gather)
    assert engine.input_constraints(m) == {1: ("index", 2)}
    scatter = """func.func @main(%op: tensor<10x6xf32>, %idx: tensor<5x2xi32>, %upd: tensor<5x4xf32>) -> tensor<10x6xf32> {
  %0 = "stablehlo.scatter"(%op, %idx, %upd) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      stablehlo.return %b : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>}
      : (tensor<10x6xf32>, tensor<5x2xi32>, tensor<5x4xf32>) -> tensor<10x6xf32>
  return %0 : tensor<10x6xf32>
}
"""
    _, m = _loaded(tmp_path, scatter)
    assert engine.input_constraints(m) == {1: ("index", 2)}  # window 1 (inserted) x 4: min(10 - 1, 6 - 4)
    arrays, note = make_inputs(m, seed=3)
    assert_mentions(note, "seed 3", "1 index")
    assert sorted(set(arrays[1].ravel().tolist())) == [0, 1, 2]


_CONSTRAINED = ("func.func @main(%x: tensor<4xf32>, %i: tensor<i32>, %p: tensor<4xf32>, %q: tensor<4xf32>) "
                "-> (tensor<2xf32>, tensor<4xf32>, tensor<4xf32>) {\n"
                "  %d = stablehlo.dynamic_slice %x, %i, sizes = [2] : (tensor<4xf32>, tensor<i32>) -> tensor<2xf32>\n"
                "  %l = stablehlo.log %p : tensor<4xf32>\n  %s = stablehlo.sqrt %q : tensor<4xf32>\n"
                "  return %d, %l, %s : tensor<2xf32>, tensor<4xf32>, tensor<4xf32>\n}\n")


@pytest.mark.golden
@pytest.mark.parametrize("constrained, spec, replicas, note", [
    (False, {"seed": 7}, 1, "random (seed 7)"),
    (True, {"seed": 1}, 1, "random (seed 1); 1 index-constrained, 2 positive-constrained"),
    (False, {"seed": 5}, 3, "random (seeds 5..7, one per replica)"),
    (False, {"seed": 5, "mode": "shared-random"}, 2, "random (seed 5); the same for every replica"),
    (True, {"seed": 5, "mode": "shared-random"}, 2,
     "random (seed 5); 1 index-constrained, 2 positive-constrained; the same for every replica"),
    (False, {"mode": "zeros"}, 2, "zeros"),
    (False, {"mode": "device-id"}, 1, "device-id (each device's part filled with its device id)"),
    (False, {"npz": "{npz}"}, 2, "from {npz}"),
])
def test_input_notes_exactly(tmp_path, constrained, spec, replicas, note):
    """How a run's arguments were made, as its report says: the golden of make_inputs' notes."""
    path, m = _loaded(tmp_path, _CONSTRAINED)
    params, _ = engine.signature(m)
    np.savez(tmp_path / "in.npz", *[np.zeros(p.shape, p.dtype) for p in params])
    fill = {"npz": str(tmp_path / "in.npz")}
    spec = engine.InputSpec(**{k: v.format(**fill) if isinstance(v, str) else v for k, v in spec.items()})
    made = engine.make_inputs(params, spec, module=m if constrained else None, replicas=replicas)
    assert made.note == note.format(**fill)


@pytest.mark.golden
def test_npz_inputs_errors_name_the_file_and_what_is_wrong(tmp_path):
    """--inputs: a missing file, a directory, an unreadable file, a lone .npy, a missing array
    (with the names accepted), an array of the wrong shape or dtype and arrays left over are
    input errors, each with its exact message: the golden of inputs_from_npz's errors."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.execute.engine import TensorSpec, inputs_from_npz

    x = TensorSpec((2,), "f32", "float32", "x")
    y = TensorSpec((), "i32", "int32", "y")

    def error(path, params=(x, y)):
        with pytest.raises(InputError) as e:
            inputs_from_npz(str(path), list(params))
        return e.value.format()

    assert error(tmp_path / "nope.npz") == f"error: {tmp_path / 'nope.npz'}: no such file"
    assert error(tmp_path) == f"error: {tmp_path}: is a directory, not an .npz file"
    (tmp_path / "junk.npz").write_text("hello")
    assert error(tmp_path / "junk.npz").startswith(f"error: {tmp_path / 'junk.npz'}: not a readable .npz file: ")
    np.save(tmp_path / "one.npy", np.zeros(2, np.float32))
    assert error(tmp_path / "one.npy") == (f"error: {tmp_path / 'one.npy'}: a single .npy array, not an .npz "
                                           "archive (np.savez(path, arg0=...) writes one array per parameter)")
    np.savez(tmp_path / "z.npz", z=np.zeros(2, np.float32))
    assert error(tmp_path / "z.npz") == (f"error: {tmp_path / 'z.npz'}: no array for parameter 0 (x); the file "
                                         "has: z (name it 'x' or 'arg0' or 'arr_0')")
    np.savez(tmp_path / "empty.npz")
    assert error(tmp_path / "empty.npz").endswith("the file has: no arrays (name it 'x' or 'arg0' or 'arr_0')")
    arg0 = TensorSpec((2,), "f32", "float32", "arg0")
    assert error(tmp_path / "z.npz", [arg0]).endswith("the file has: z (name it 'arg0' or 'arr_0')")  # no name twice
    np.savez(tmp_path / "extra.npz", x=np.zeros(2, np.float32), arg1=np.int32(3), extra=np.zeros(1),
             more=np.zeros(1))
    assert error(tmp_path / "extra.npz") == (f"error: {tmp_path / 'extra.npz'}: arrays 'extra', 'more' match no "
                                             "parameter of @main (x, y)")
    np.savez(tmp_path / "shape.npz", x=np.zeros(3, np.float32), y=np.int32(3))
    assert error(tmp_path / "shape.npz") == (f"error: {tmp_path / 'shape.npz'}: array 'x' has shape [3], "
                                             "parameter 0 (x) needs [2]")
    np.savez(tmp_path / "dtype.npz", x=np.zeros(2, np.float16), y=np.int32(3))
    assert error(tmp_path / "dtype.npz") == (f"error: {tmp_path / 'dtype.npz'}: array 'x' is float16, parameter 0 "
                                             "(x) is float32 (save it with that dtype; nothing is converted)")
    np.savez(tmp_path / "one_extra.npz", np.zeros(2, np.float32), np.int32(3), np.zeros(1))
    assert error(tmp_path / "one_extra.npz") == (f"error: {tmp_path / 'one_extra.npz'}: array 'arr_2' matches no "
                                                 "parameter of @main (x, y)")
    np.savez(tmp_path / "ok.npz", np.zeros(2, np.float32), y=np.int32(3))
    got = inputs_from_npz(str(tmp_path / "ok.npz"), [x, y])
    assert [a.tolist() for a in got] == [[0.0, 0.0], 3] and [a.dtype for a in got] == [np.float32, np.int32]


@pytest.mark.golden
def test_run_plan_argument_count_refusal_exactly():
    """A self-checking module given the wrong number of its own arguments: the golden of run_plan's error."""
    from mlirhlo_driver.errors import InputError

    plan = prepare_checks(inputs.parse_mlir(
        "func.func @main(%a: tensor<2xf32>) {\n  stablehlo.custom_call @check.expect_eq(%a, %a) "
        "{has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()\n  return\n}\n", "m.mlir"), source="m.mlir")
    with pytest.raises(InputError) as e:
        engine.run_plan(plan, [])
    assert e.value.format() == "error: @main takes 1 arguments of its own, 0 given"


def test_run_xla_runs_at_least_once_and_compare_all_counts_outputs(monkeypatch):
    """iterations below 1 still run once; an output count that differs from the reference's is a mismatch."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    module = inputs.parse_mlir("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                               "  %0 = stablehlo.negate %x : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
                               "m.mlir")
    runs = count_executes(monkeypatch)
    for iterations, times in [(0, 1), (1, 1), (3, 3)]:
        runs.clear()
        with _jaxlib.ir_context():
            outs, compile_ms, run_ms = engine.run_xla(module, [np.ones(4, np.float32)], None, iterations)
        assert [o.tolist() for o in outs] == [[-1.0] * 4] and compile_ms > 0 and run_ms > 0
        assert len(runs) == times, iterations
    report = run.ModuleReport("m", "m.mlir")
    report.judge(engine.compare_outputs([np.ones(2), np.ones(2)], [np.ones(2)], None, None))
    assert report.status == "mismatch"
    assert_mentions(report.message, "2 outputs", "reference has 1")
    report = run.ModuleReport("m", "m.mlir")
    report.judge(engine.compare_outputs([np.ones(2), np.array([1.0, 1.5]), np.array([3, 4], np.int32)],
                                        [np.ones(2), np.ones(2), np.array([3, 5], np.int32)], None, None))
    assert (report.status, report.max_abs_error, report.max_abs_error_at) == ("mismatch", 1.0, "output 2 [1]")
    assert_mentions(report.message, "output 1: 1/2", "output 2: 1/2")
    assert "output 0" not in report.message
    assert [m.output for m in report.mismatches] == [1, 2]


def test_require_devices_checks_cuda_only():
    """Only cuda needs devices found up front: cpu always passes; cuda without a GPU is NoGpu now."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import NoGpu

    assert engine.require_devices("cpu") is None
    try:
        _jaxlib.cuda_devices()
    except NoGpu:
        with pytest.raises(NoGpu):
            engine.require_devices("cuda")
    else:
        assert engine.require_devices("cuda") is None


def test_a_run_is_on_the_first_device_of_its_platform(monkeypatch):
    """One device to run on: the driver's first CPU device, or the first GPU the CUDA plugin
    lists; another platform is an input error."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.xla.platforms import run_target

    assert run_target("cpu").compile_devices(1, on_device=True) == _jaxlib.cpu_devices(1)
    monkeypatch.setattr(_jaxlib, "cuda_devices", lambda: ["gpu0", "gpu1"])
    assert run_target("cuda").compile_devices(1, on_device=True) == ["gpu0"]
    with pytest.raises(InputError, match="unknown platform 'rocm'"):
        run_target("rocm")


def test_run_in_helper_runs_bytecode_once_and_returns_the_outputs(monkeypatch):
    """The helper's entry point (pass bisection): a module given as bytecode, executed once, its outputs."""
    from mlirhlo_driver.ir import emit

    module = inputs.parse_mlir("func.func @main(%x: tensor<3xi32>) -> tensor<3xi32> {\n"
                               "  %0 = stablehlo.add %x, %x : tensor<3xi32>\n  return %0 : tensor<3xi32>\n}\n",
                               "m.mlir")
    runs = count_executes(monkeypatch)
    from mlirhlo_driver.xla.platforms import CpuTarget

    outs = engine.run_in_helper(emit.bytecode(module), [np.array([1, 2, 3], np.int32)], CpuTarget())
    assert [o.tolist() for o in outs] == [[2, 4, 6]] and len(runs) == 1


def test_interpreter_carries_only_the_types_that_need_it(tmp_path):
    """A module mixing bf16/complex (carried as integers/pairs) with f32/i32 (passed as they are)
    runs on the interpreter with every value intact."""
    import ml_dtypes

    path, m = _loaded(tmp_path, (
        "func.func @main(%a: tensor<3xbf16>, %b: tensor<3xf32>, %c: tensor<2xcomplex<f32>>, %d: tensor<2xi32>)"
        " -> (tensor<3xf32>, tensor<3xbf16>, tensor<2xi32>, tensor<2xcomplex<f32>>) {\n"
        "  %0 = stablehlo.add %b, %b : tensor<3xf32>\n"
        "  %1 = stablehlo.add %a, %a : tensor<3xbf16>\n"
        "  %2 = stablehlo.add %d, %d : tensor<2xi32>\n"
        "  return %0, %1, %2, %c : tensor<3xf32>, tensor<3xbf16>, tensor<2xi32>, tensor<2xcomplex<f32>>\n}\n"))
    a = np.array([1.5, -2.0, 0.25], ml_dtypes.bfloat16)
    b = np.array([1.0, 2.0, 3.0], np.float32)
    c = np.array([1 + 2j, -3 - 4j], np.complex64)
    d = np.array([5, -6], np.int32)
    outs, _ = engine.run_interpreter(m, [a, b, c, d])
    assert [o.dtype for o in outs] == [np.float32, a.dtype, np.int32, np.complex64]
    assert [o.tolist() for o in outs] == [[2.0, 4.0, 6.0], (a + a).tolist(), [10, -12], c.tolist()]
