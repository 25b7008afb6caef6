"""Behaviour: the engine's comparison (engine.compare), per dtype class.

* bool, signed and unsigned integers compare exactly, whatever ``--rtol`` /
  ``--atol`` say: a difference of 1 fails even with tolerances far above it,
  and 64-bit values that differ past float64's precision still differ;
* floats (f16, bf16, f32, f64, f8) and complex: NaN matches NaN only, an Inf
  matches an Inf of the same sign only, -0.0 matches 0.0, and
  ``|a - e| <= atol + rtol * |e|`` with the dtype's default or the user's
  tolerances; with XLA's ErrorSpec (run_hlo_module), within atol or within
  ``rtol * |e|``, a complex number's parts each;
* the defaults: one ULP budget for every float type, capped for the narrow ones;
* the module's status and ``mlirhlo run``'s exit code follow: 0 when all
  match, 1 on a mismatch.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mlirhlo_driver.execute import engine, run

BOOL = ["bool"]

SIGNED = ["int8", "int16", "int32", "int64"]

UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]

FLOATS = ["float16", "bfloat16", "float32", "float64"]

F8 = ["float8_e4m3fn", "float8_e5m2"]

COMPLEX = ["complex64", "complex128"]

INTEGERS = SIGNED + UNSIGNED

INEXACT = FLOATS + F8

ALL = BOOL + INTEGERS + INEXACT + COMPLEX

HUGE_TOL = dict(rtol=0.9, atol=1000.0)  # far above any difference below


def _dt(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if name in ("bfloat16", *F8) else np.dtype(name)


def _arr(name: str, values) -> np.ndarray:
    return np.asarray(values, dtype=_dt(name))


def _count(actual, expected, rtol=None, atol=None, xla=False) -> int:
    return engine.compare(actual, expected, 0, rtol, atol, xla_error_spec=xla).count


# -------------------------------------------------------------- floats and complex

NAN, INF = float("nan"), float("inf")

# (actual, expected, matches?) with tolerances that would accept any finite pair below
SPECIALS = [
    (NAN, NAN, True), (NAN, 1.0, False), (1.0, NAN, False), (NAN, INF, False), (INF, NAN, False),
    (INF, INF, True), (-INF, -INF, True), (INF, -INF, False), (-INF, INF, False),
    (INF, 1.0, False), (1.0, INF, False), (-INF, -1.0, False), (-1.0, -INF, False),
    (-0.0, 0.0, True), (0.0, -0.0, True), (-0.0, -0.0, True),
]


def _has_inf(dtype: str) -> bool:
    return bool(np.isinf(_arr(dtype, [INF]).astype(np.float64))[0])  # float8_e4m3fn: NaN, no Inf


FLOAT_SPECIALS = [(d, a, e, m) for d in INEXACT for a, e, m in SPECIALS
                  if _has_inf(d) or INF not in (abs(a), abs(e))]

# (dtype, expected, inside its default tolerance, outside it): at 1.0 the bound is atol + rtol,
# twice the dtype's figure (float32: 2 * 2**-9; float64: 2 * 2**-38; the 16-bit floats 2 * 1/16)
DEFAULT_TOL = [
    ("float64", 1.0, 1.0 + 7e-12, 1.0 + 8e-12), ("float32", 1.0, 1.0039, 1.0040),
    ("float16", 1.0, 1.125, 1.1328125), ("bfloat16", 1.0, 1.125, 1.140625),
    ("float8_e4m3fn", 1.0, 1.25, 1.375), ("float8_e5m2", 1.0, 1.5, 1.75),
    ("complex128", 1.0, 1.0 + 7e-12, 1.0 + 8e-12), ("complex64", 1.0, 1.0039, 1.0040),
]


# ------------------------------------------------------- status and the exit code

def _report(outputs, reference, rtol=None, atol=None):
    r = run.ModuleReport("m", "m.mlir")
    r.judge(engine.compare_outputs(outputs, reference, rtol, atol))
    return r


UINT_MODULE = ("func.func @main(%a: tensor<4xui32>, %b: tensor<4xf32>) -> (tensor<4xui32>, tensor<4xf32>) {\n"
               "  %0 = stablehlo.add %a, %a : tensor<4xui32>\n"
               "  %1 = stablehlo.add %b, %b : tensor<4xf32>\n"
               "  return %0, %1 : tensor<4xui32>, tensor<4xf32>\n}\n")


# ---------------------------------------------------------------- exact classes

@pytest.mark.parametrize("dtype", ALL)
def test_equal_arrays_match(dtype):
    a = _arr(dtype, [0, 1, 1, 0] if dtype == "bool" else [0, 1, 2, 3])
    assert _count(a, a.copy()) == 0
    assert _count(a, a.copy(), **HUGE_TOL) == 0
    assert _count(a, a.copy(), rtol=0.0, atol=0.0) == 0


@pytest.mark.parametrize("tol", [{}, HUGE_TOL, dict(rtol=0.5, atol=0.0), dict(rtol=0.0, atol=2.0)])
@pytest.mark.parametrize("dtype", INTEGERS)
def test_integers_are_exact_whatever_the_tolerance(dtype, tol):
    expected = _arr(dtype, [10, 20, 30, 40])
    actual = _arr(dtype, [10, 21, 30, 39])
    mm = engine.compare(actual, expected, 0, tol.get("rtol"), tol.get("atol"))
    assert mm.count == 2, (dtype, tol)
    assert mm.max_abs_error == 1.0 and mm.worst_index in ((1,), (3,))


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_64_bit_integers_differing_past_float64_precision(dtype):
    big = 2**62 + 2**61 if dtype == "int64" else 2**63 + 2**62
    expected = _arr(dtype, [big, 5])
    actual = _arr(dtype, [big + 1, 5])
    assert float(expected[0]) == float(actual[0])  # the float path could not see it
    assert _count(actual, expected) == 1
    assert _count(actual, expected, **HUGE_TOL) == 1


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unsigned_extremes(dtype):
    top = np.iinfo(_dt(dtype)).max
    assert _count(_arr(dtype, [0, top]), _arr(dtype, [top, 0]), **HUGE_TOL) == 2
    assert _count(_arr(dtype, [top, top - 1]), _arr(dtype, [top, top]), rtol=0.5, atol=0.0) == 1


@pytest.mark.parametrize("tol", [{}, HUGE_TOL])
def test_bool_is_exact(tol):
    a, e = _arr("bool", [True, False, True]), _arr("bool", [True, True, False])
    assert engine.compare(a, e, 0, tol.get("rtol"), tol.get("atol")).count == 2


@pytest.mark.parametrize("tol", [{}, dict(rtol=0.5, atol=10.0)])
@pytest.mark.parametrize("dtype, actual, expected, matches", FLOAT_SPECIALS)
def test_float_specials(dtype, actual, expected, matches, tol):
    a, e = _arr(dtype, [actual, 2.0]), _arr(dtype, [expected, 2.0])
    assert _count(a, e, tol.get("rtol"), tol.get("atol")) == (0 if matches else 1), (dtype, actual, expected)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("actual, expected, matches", SPECIALS)
def test_complex_specials(dtype, actual, expected, matches):
    for a_val, e_val in ((complex(actual, 1.0), complex(expected, 1.0)),
                         (complex(1.0, actual), complex(1.0, expected))):
        if not matches and np.isnan(a_val) and np.isnan(e_val):
            continue  # a NaN anywhere makes the whole complex NaN: NaN vs NaN
        a, e = _arr(dtype, [a_val, 2.0]), _arr(dtype, [e_val, 2.0])
        assert _count(a, e, 0.5, 10.0) == (0 if matches else 1), (dtype, a_val, e_val)


@pytest.mark.parametrize("dtype, expected, inside, outside", DEFAULT_TOL)
def test_default_tolerance_per_dtype(dtype, expected, inside, outside):
    e = _arr(dtype, [expected, expected])
    assert _count(_arr(dtype, [inside, expected]), e) == 0
    assert _count(_arr(dtype, [outside, expected]), e) == 1


@pytest.mark.parametrize("dtype", INEXACT + COMPLEX)
def test_user_tolerances_apply_to_floats(dtype):
    e = _arr(dtype, [4.0, -4.0, 0.0])
    a = _arr(dtype, [5.0, -5.0, 0.5])
    assert _count(a, e, rtol=0.0, atol=0.0) == 3
    assert _count(a, e, rtol=0.0, atol=1.0) == 0              # |a - e| <= atol
    assert _count(a, e, rtol=0.25, atol=0.0) == 1             # |a - e| <= rtol * |e|, not at e = 0
    assert _count(a, e, rtol=0.25, atol=0.5) == 0             # both together
    assert _count(a, e, rtol=0.2, atol=0.1) == 3              # 1 > 0.1 + 0.8; 0.5 > 0.1


def test_every_float_dtype_but_e4m3fn_has_inf():
    assert [d for d in INEXACT if not _has_inf(d)] == ["float8_e4m3fn"]


def test_tolerance_table():
    """rtol/atol given override the dtype's; integers and bools default to exact."""
    assert engine.tolerance("float32", None, None) == (2**-9, 2**-9)
    assert engine.tolerance("float32", 0.5, None) == (0.5, 2**-9)
    assert engine.tolerance("float32", None, 0.5) == (2**-9, 0.5)
    assert engine.tolerance("float32", 0.0, 0.0) == (0.0, 0.0)
    for name in BOOL + INTEGERS:
        assert engine.tolerance(name, None, None) == (0.0, 0.0)


# (dtype, its default rtol = atol): 2**14 ULP of the type (2**14 * eps), at most 1/16, at least
# the type's own step at 1.0
DEFAULTS = [
    ("float64", 2**-38), ("complex128", 2**-38), ("float32", 2**-9), ("complex64", 2**-9),
    ("float16", 2**-4), ("bfloat16", 2**-4), ("float8_e3m4", 2**-4), ("float8_e4m3fn", 2**-3),
    ("float8_e4m3fnuz", 2**-3), ("float8_e4m3b11fnuz", 2**-3), ("float8_e5m2", 2**-2),
    ("float8_e5m2fnuz", 2**-2),
]


@pytest.mark.parametrize("dtype, figure", DEFAULTS)
def test_default_tolerances_are_one_ulp_budget_capped_for_narrow_types(dtype, figure):
    assert engine.default_tolerance(dtype) == figure
    assert engine.tolerance(dtype, None, None) == (figure, figure)


def test_float32_defaults_are_at_least_as_tolerant_as_run_hlo_modules_bounds():
    """Whatever XLA's run_hlo_module accepts with its default bounds (an element within 1e-3
    absolute or 1e-3 relative) the default float32 comparison accepts, at every magnitude;
    an error of 1% still differs."""
    expected = np.float32([0.0, 1e-4, 5.4e-4, 0.5, 1.0, 3.0, 1e3, -2e4])
    within = expected + np.maximum(1e-3, 1e-3 * np.abs(expected)).astype(np.float32) * np.float32(0.999)
    assert _count(within.astype(np.float32), expected) == 0
    assert _count(within.astype(np.float32), expected, 1e-3, 1e-3, xla=True) == 0
    assert _count(np.float32([1.01]), np.float32([1.0])) == 1


@pytest.mark.parametrize("dtype", FLOATS + F8)
def test_neighbouring_values_match_by_default(dtype):
    """One step apart (a single rounding's difference) always matches by default, at any magnitude."""
    expected = _arr(dtype, [0.5, 1.0, 3.0, 100.0, 240.0 if "e4m3" in dtype else 1000.0])
    wide = expected.astype(np.float64)
    step = float(ml_dtypes.finfo(_dt(dtype)).eps) * 2.0 ** np.floor(np.log2(wide))  # one ULP at each
    neighbour = (wide + step).astype(_dt(dtype))
    assert (neighbour.astype(np.float64) == wide + step).all()
    assert _count(neighbour, expected) == 0, (dtype, neighbour)
    assert _count(-neighbour, -expected) == 0, (dtype, neighbour)


@pytest.mark.parametrize("actual, expected", [
    (np.zeros(3, np.float32), np.zeros(4, np.float32)),
    (np.zeros(3, np.float32), np.zeros(3, np.float64)),
    (np.zeros(3, np.int32), np.zeros(3, np.uint32)),
])
def test_shape_or_dtype_difference_is_a_mismatch(actual, expected):
    mm = engine.compare(actual, expected, 0, 1.0, 1.0)
    assert mm.count == mm.total and mm.note == "(shape or type differs)"


def test_mismatch_report():
    e = np.asarray([1.0, 2.0, 3.0, 4.0], np.float32)
    a = np.asarray([1.0, 2.5, 3.0, NAN], np.float32)
    mm = engine.compare(a, e, 2, None, None)
    assert (mm.output, mm.count, mm.total, mm.worst_index) == (2, 2, 4, (3,))
    assert mm.max_abs_error == INF and mm.max_abs_error_at == (3,)
    assert mm.actual == "nan(0x7fc00000)" and mm.expected == "4.0"
    assert mm.examples == [((1,), "2.5", "2.0")]


@pytest.mark.parametrize("dtype", ALL)
def test_status_follows_the_comparison(dtype):
    one = _arr(dtype, [1, 0] if dtype == "bool" else [1, 2])
    other = _arr(dtype, [0, 0] if dtype == "bool" else [2, 2])
    assert _report([one], [one.copy()]).passed
    r = _report([one, one], [one.copy(), other], **HUGE_TOL)
    if dtype in BOOL + INTEGERS:
        assert (r.passed, r.status) == (False, "mismatch"), dtype
        assert "output 1: 1/2" in r.message and "output 0" not in r.message, dtype
    else:
        assert r.passed and r.status == "ok", (dtype, r.status)
    assert not _report([one, one], [one.copy(), other], rtol=0.0, atol=0.0).passed
    assert not _report([one], [one, one]).passed  # output count differs


_ONES, _HALF = np.ones(2), np.array([1.0, 1.5])


@pytest.mark.golden
@pytest.mark.parametrize("outputs, reference, label, message", [
    ([_ONES, _ONES], [_ONES], "", "2 outputs, reference has 1"),
    ([_ONES, _HALF], [_ONES, _ONES], "", "output 1: 1/2 differ"),
    ([_ONES, _HALF, np.int32([3, 4])], [_ONES, _ONES, np.int32([3, 5])], "",
     "output 1: 1/2 differ; output 2: 1/2 differ"),
    ([_HALF], [_ONES], "replica 1 output", "replica 1 output 0: 1/2 differ"),
    ([_ONES], [_ONES], "", ""),
])
def test_comparison_messages_exactly(outputs, reference, label, message):
    """The one-line verdict of outputs against their reference: the golden of compare_outputs'."""
    assert engine.compare_outputs(outputs, reference, None, None, label=label).message == message


@pytest.mark.parametrize("which, tol, code", [
    ("none", [], 0),
    ("uint", ["--rtol", "0.5", "--atol", "10"], 1),    # uint: exact whatever the tolerance
    ("float", ["--rtol", "0.5", "--atol", "10"], 0),   # float: within the user's tolerance
    ("float", [], 1),                                  # float: outside its default one
    ("nan", ["--rtol", "0.5", "--atol", "10"], 1),     # NaN against a number, whatever the tolerance
])
def test_exit_code_through_the_cli(cli, monkeypatch, tmp_path, which, tol, code):
    """``mlirhlo run --reference cpu``: the platform side (the one with a --xla flag) is
    perturbed after XLA ran it; the report and the exit code follow the rules above."""
    real = engine.run_xla

    def perturbed(module, arrays, target=None, iterations=1, name="module"):
        outs, compile_ms, run_ms = real(module, arrays, target, iterations, name)
        if dict(target.xla_flags).get("xla_cpu_enable_fast_math") is False:  # the platform side
            outs = [o.copy() for o in outs]
            if which == "uint":
                outs[0][1] += np.uint32(1)
            elif which == "float":
                outs[1][2] += np.float32(1.0)
            elif which == "nan":
                outs[1][0] = np.float32(NAN)
        return outs, compile_ms, run_ms

    monkeypatch.setattr(engine, "run_xla", perturbed)
    src = tmp_path / "m.mlir"
    src.write_text(UINT_MODULE)
    r = cli("run", src, "--jobs", "0", "--reference", "cpu", "--xla_cpu_enable_fast_math=false", *tol)
    assert r.code == code, r.out + r.err
    if code:
        assert "m: MISMATCH: output " in r.out
        out = 0 if which == "uint" else 1
        assert f"output {out} ({'uint32' if which == 'uint' else 'float32'}[4]): 1 of 4 elements differ" in r.out
    else:
        assert "m: OK" in r.out


# ------------------------------------------------------- what a mismatch line shows

@pytest.mark.parametrize("value, dtype, shown", [
    (np.nan, np.float32, "nan(0x7fc00000)"),
    (-np.nan, np.float32, "-nan(0xffc00000)"),
    (np.nan, np.float64, "nan(0x7ff8000000000000)"),
    (np.nan, np.float16, "nan(0x7e00)"),
    (np.nan, ml_dtypes.bfloat16, "nan(0x7fc0)"),
    (np.nan, ml_dtypes.float8_e4m3fn, "nan(0x7f)"),
    (-0.0, np.float32, "-0.0"),
    (0.0, ml_dtypes.bfloat16, "0.0"),
    (-0.0, ml_dtypes.bfloat16, "-0.0"),
    (0.1, np.float32, "0.1"),       # the type's own shortest spelling, not float64's 0.10000000149011612
    (np.inf, np.float32, "inf"),
    (-np.inf, np.float16, "-inf"),
    (-3, np.int8, "-3"),
    (True, np.bool_, "true"),
])
def test_format_value_shows_what_printing_hides(value, dtype, shown):
    """A NaN's sign and bits at its type's width, a zero's sign; everything else as its type prints it."""
    assert engine.format_value(np.array([value], dtype)[0]) == shown


def test_a_nan_payload_and_sign_tell_two_nans_apart():
    """NaNs of other payloads print differently; a complex part keeps its NaN's bits."""
    bits = np.array([0x7FC00001, 0xFFC00000], np.uint32).view(np.float32)
    assert [engine.format_value(b) for b in bits] == ["nan(0x7fc00001)", "-nan(0xffc00000)"]
    assert engine.format_value(np.complex64(complex(np.nan, -0.0))) == "(nan(0x7fc00000)-0.0j)"
    assert engine.format_value(np.complex64(1 + 2j)) == "(1+2j)"


def test_a_float_mismatch_says_how_many_ulp_apart_when_they_are_close():
    """The worst pair's ULP distance, where the two are within about a factor of two of each
    other; across orders of magnitude (or a NaN) no count is shown."""
    one = np.float32(1.0)
    near = np.array([one, np.nextafter(np.nextafter(one, np.float32(2)), np.float32(2))], np.float32)
    mm = engine.compare(near, np.array([one, one], np.float32), 0, 0.0, 0.0)
    assert mm.worst_ulp == 2
    assert mm.worst_index == (1,) and "2 ULP apart" in mm.describe()
    far = engine.compare(np.float32([1e6]), np.float32([1.0]), 0, 0.0, 0.0)
    assert far.worst_ulp is None and "ULP" not in far.describe()
    nan = engine.compare(np.float32([np.nan]), np.float32([1.0]), 0, 0.0, 0.0)
    assert nan.worst_ulp is None and (nan.actual, nan.expected) == ("nan(0x7fc00000)", "1.0")
    assert "ULP" not in nan.describe()
    bf = engine.compare(np.array([1.0078125], ml_dtypes.bfloat16), np.array([1.0], ml_dtypes.bfloat16), 0, 0.0, 0.0)
    assert bf.worst_ulp == 1
    assert engine.compare(np.int32([3]), np.int32([4]), 0, None, None).worst_ulp is None
