"""execute/engine.py's evaluation of check ops (expect_eq, expect_close, expect_almost_eq,
...): their semantics per element type and their messages.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mlirhlo_driver.execute import engine
from mlirhlo_driver.execute.engine import evaluate_check, ulp_difference
from mlirhlo_driver.inputs import checks
from mlirhlo_driver.inputs import loader as inputs
from mlirhlo_driver.inputs.checks import Check
from tests.conftest import assert_mentions


def prepare_checks(module, **kw):
    """inputs.checks.prepare with XLA CPU evaluating what numpy cannot read (as run and the stages do)."""
    from mlirhlo_driver.xla.backend import run_on_host

    return checks.prepare(module, evaluate=run_on_host, **kw)

# ================================================================== evaluate

def _eval(kind, actual, expected, **options):
    return evaluate_check(Check(kind, 0, 1, options, "f.mlir:3:5"),
                          [np.asarray(actual), np.asarray(expected)])


_C64, _F32, _I16, _I32, _I64 = np.complex64, np.float32, np.int16, np.int32, np.int64


@pytest.mark.golden
@pytest.mark.parametrize("kind, actual, expected, options, message", [
    # failures: how many, the limit, the worst element, its values and errors
    ("expect_eq", _I32([[1, 2], [3, 4]]), _I32([[1, 5], [3, -4]]), {},
     "2 of 4 elements not equal; worst at index [1, 1]: actual=4, expected=-4, abs error=8"),
    ("expect_eq", _I32([[1, 2, 41, 4], [0] * 4, [0, 0, 41, 0]]), _I32([[1, 2, 41, 4], [0] * 4, [0, 0, 14, 0]]), {},
     "1 of 12 elements not equal; worst at index [2, 2]: actual=41, expected=14, abs error=27"),
    ("expect_eq", np.uint64([2**64 - 1]), np.uint64([0]), {},
     "1 of 1 element not equal; worst at index [0]: actual=18446744073709551615, expected=0, "
     "abs error=18446744073709551615"),
    ("expect_eq", np.bool_(True), np.bool_(False), {},
     "1 of 1 element not equal; worst at index []: actual=true, expected=false, abs error=1"),
    ("expect_eq", _F32([np.inf, 1]), _F32([1, 1]), {},
     "1 of 2 elements not equal; worst at index [0]: actual=inf, expected=1.0, abs error=inf"),
    ("expect_eq", _F32([1, 2, 9]), _F32([1, 2, 6]), {},
     "1 of 3 elements not equal; worst at index [2]: actual=9.0, expected=6.0, abs error=3, rel error=0.5"),
    ("expect_eq", _C64([1 + 1j, 2]), _C64([1 + 2j, 2]), {},
     "1 of 2 elements not equal; worst at index [0]: actual=(1+1j), expected=(1+2j), abs error=1, "
     "rel error=0.447214"),
    ("expect_eq", _C64([2, 1 + 1j]), _C64([2, 2 + 1j]), {},
     "1 of 2 elements not equal; worst at index [1]: actual=(1+1j), expected=(2+1j), abs error=1, "
     "rel error=0.447214"),
    ("expect_almost_eq", _F32([1, 2, 3]), _F32([1.5, 2, 3.25]), {"tolerance": 0.1},
     "2 of 3 elements outside tolerance 0.1; worst at index [0]: actual=1.0, expected=1.5, abs error=0.5, "
     "rel error=0.333333"),
    ("expect_almost_eq", _F32(2), _F32(3), {"tolerance": 0.5},
     "1 of 1 element outside tolerance 0.5; worst at index []: actual=2.0, expected=3.0, abs error=1, "
     "rel error=0.333333"),
    ("expect_almost_eq", _F32([0, 2]), _F32([0, 3]), {"tolerance": 0.5},
     "1 of 2 elements outside tolerance 0.5; worst at index [1]: actual=2.0, expected=3.0, abs error=1, "
     "rel error=0.333333"),
    ("expect_almost_eq", _F32([1, 2]), _F32([1, 2.5]), {},
     "1 of 2 elements outside tolerance 0.0001; worst at index [1]: actual=2.0, expected=2.5, abs error=0.5, "
     "rel error=0.2"),
    # no relative error to a zero
    ("expect_almost_eq", _F32([1, 0.5]), _F32([1.1, 0]), {},
     "2 of 2 elements outside tolerance 0.0001; worst at index [1]: actual=0.5, expected=0.0, abs error=0.5"),
    # a NaN shows its sign and bits; its error, NaN, says nothing more and is left out
    ("expect_almost_eq", _F32([1, np.nan]), _F32([1.1, 0]), {},
     "2 of 2 elements outside tolerance 0.0001; worst at index [1]: actual=nan(0x7fc00000), expected=0.0"),
    ("expect_almost_eq", _I64([1, 5]), _I64([1, 7]), {},
     "1 of 2 elements outside tolerance 0.0001; worst at index [1]: actual=5, expected=7, abs error=2"),
    ("expect_almost_eq", _I16([1, 5]), _I16([3, 7]), {"tolerance": 1},
     "2 of 2 elements outside tolerance 1; worst at index [0]: actual=1, expected=3, abs error=2"),
    # complex: errors as moduli, |(1+2j) - (1+1j)| = 1 over |1+1j| = sqrt(2)
    ("expect_almost_eq", _C64([1 + 2j]), _C64([1 + 1j]), {"tolerance": 0.1},
     "1 of 1 element outside tolerance 0.1; worst at index [0]: actual=(1+2j), expected=(1+1j), abs error=1, "
     "rel error=0.707107"),
    ("expect_close", _F32([1, 2]), _F32([np.inf, 2]), {"max_ulp_difference": 3},
     "1 of 2 elements outside 3 ULP; worst at index [0]: actual=1.0, expected=inf, ULP difference=inf"),
    ("expect_close", _F32(1), _F32(2), {"max_ulp_difference": 1},
     "1 of 1 element outside 1 ULP; worst at index []: actual=1.0, expected=2.0, ULP difference=8388608"),
    ("expect_close", _F32([1, 2, 9]), _F32([1, 2, 6]), {"max_ulp_difference": 0},  # 0x41100000 - 0x40C00000
     "1 of 3 elements outside 0 ULP; worst at index [2]: actual=9.0, expected=6.0, ULP difference=5242880"),
    ("expect_close", _I16([1, 5]), _I16([3, 8]), {"max_ulp_difference": 1},
     "2 of 2 elements outside 1 ULP; worst at index [1]: actual=5, expected=8, ULP difference=3"),
    ("expect_close", _I32([5, 9]), _I32([5, 7]), {"max_ulp_difference": 2, "min_ulp_difference": 1},
     "1 of 2 elements outside [1, 2] ULP; worst at index [0]: actual=5, expected=5, ULP difference=0"),
    # passes: how many elements, and for expect_close the largest ULP difference
    ("expect_eq", _I32(3), _I32(3), {}, "1 element ok"),
    ("expect_eq", _I32([]), _I32([]), {}, "0 elements ok"),
    ("expect_close", _F32([]), _F32([]), {}, "0 elements ok"),
    ("expect_close", _F32(1), _F32(1), {}, "1 element ok, max ULP difference 0"),
    ("expect_close", _F32([1, 2]), _F32([1, 2]), {"max_ulp_difference": 3}, "2 elements ok, max ULP difference 0"),
    ("expect_close", _F32([1, 1, 5]), _F32([1 + 2**-23, 1 + 2**-22, 5]), {}, "3 elements ok, max ULP difference 2"),
    ("expect_almost_eq", _I64([1, 5]), _I64([1, 7]), {"tolerance": 2}, "2 elements ok"),
])
def test_check_result_messages_exactly(kind, actual, expected, options, message):
    """What a check says when it passes or fails: the golden of evaluate_check's results."""
    r = _eval(kind, actual, expected, **options)
    assert (r.passed, r.message) == (" ok" in message, message)


@pytest.mark.golden
@pytest.mark.parametrize("check, outputs, message", [
    (Check("expect_eq", 0, 2, {}, "l:1:1"), [_I32([1]), _I32([1])], "output 2 missing (2 outputs)"),
    (Check("expect_eq", 1, 0, {}, "l:1:1"), [_I32([1])], "output 1 missing (1 outputs)"),
    (Check("expect_frob", 0, 1, {}, "l:1:1"), [_I32([1]), _I32([1])], "unknown check kind 'expect_frob'"),
    (Check("expect_eq", 0, 1, {}, "l:1:1"), [_F32([1, 2]), _F32([1, 2, 3])],
     "actual is float32[2], expected float32[3]"),
    (Check("expect_eq", 0, 1, {}, "l:1:1"), [_F32([1, 2]), np.float64([1, 2])],
     "actual is float32[2], expected float64[2]"),
    (Check("expect_eq", 0, 1, {}, "l:1:1"), [np.array(["a"]), np.array(["a"])], "unsupported element type <U1"),
])
def test_checks_that_cannot_compare_messages_exactly(check, outputs, message):
    """Why a check could not compare at all (it fails): the golden of those messages."""
    r = evaluate_check(check, outputs)
    assert (r.passed, r.message) == (False, message)


def test_failure_messages_name_the_worst_element():
    r = _eval("expect_eq", np.int32([[1, 2], [3, 4]]), np.int32([[1, 5], [3, -4]]))
    assert not r.passed and r.location == "f.mlir:3:5"
    assert_mentions(r.message, "2 of 4", "not equal", "[1, 1]", "actual=4", "expected=-4", "abs error=8")
    r = _eval("expect_almost_eq", np.float32([1, 2, 3]), np.float32([1.5, 2, 3.25]), tolerance=0.1)
    assert_mentions(r.message, "2 of 3", "tolerance 0.1", "[0]", "actual=1.0", "expected=1.5", "rel error=0.333333")
    r = _eval("expect_close", np.float32([1, 2]), np.float32([np.inf, 2]), max_ulp_difference=3)
    assert_mentions(r.message, "1 of 2", "3 ULP", "[0]", "expected=inf", "ULP difference=inf")
    # A scalar's ULP difference is a scalar (a failing rank-0 check.expect_close once crashed).
    r = _eval("expect_close", np.float32(1), np.float32(2), max_ulp_difference=1)
    assert not r.passed
    assert_mentions(r.message, "1 of 1", "index []", "ULP difference=8388608")
    assert ulp_difference(np.float32(1), np.float32(2)).shape == ()
    r = _eval("expect_eq", np.uint64([2**64 - 1]), np.uint64([0]))
    assert_mentions(r.message, "actual=18446744073709551615", "expected=0", "abs error=18446744073709551615")
    r = _eval("expect_eq", np.bool_(True), np.bool_(False))
    assert_mentions(r.message, "actual=true", "expected=false")
    # complex: errors as moduli, |(1+2j) - (1+1j)| = 1 over |1+1j| = sqrt(2)
    r = _eval("expect_almost_eq", np.complex64([1 + 2j]), np.complex64([1 + 1j]), tolerance=0.1)
    assert_mentions(r.message, "abs error=1,", "rel error=0.707107")
    r = _eval("expect_eq", np.float32([1, 2]), np.float64([1, 2]))
    assert not r.passed
    assert_mentions(r.message, "float32[2]", "float64[2]")
    r = _eval("expect_close", np.float32([1, 2]), np.float32([1, 2]), max_ulp_difference=3)
    assert r.passed
    assert_mentions(r.message, "2 elements", "max ULP difference 0")


def test_expect_close_on_integers_counts_units_up_to_the_widest_difference():
    """Integers' ULP difference is their distance; past 2**63 (int64's ends, uint64's) it is
    still huge, never wrapped round to a small number."""
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    assert not _eval("expect_close", np.int64([lo]), np.int64([hi]), max_ulp_difference=10).passed
    assert not _eval("expect_close", np.uint64([0]), np.uint64([2**64 - 1]), max_ulp_difference=10).passed
    assert _eval("expect_close", np.int64([hi - 3]), np.int64([hi]), max_ulp_difference=3).passed
    assert not _eval("expect_close", np.int64([hi - 4]), np.int64([hi]), max_ulp_difference=3).passed
    r = _eval("expect_close", np.int32([5, 9]), np.int32([5, 7]), max_ulp_difference=2, min_ulp_difference=1)
    assert not r.passed
    assert_mentions(r.message, "1 of 2", "[1, 2] ULP")


def test_ulp_difference_arithmetic():
    one = np.float32(1.0)
    up = np.nextafter(one, np.float32(2))
    assert ulp_difference(np.float32([1.0]), np.float32([up]))[0] == 1
    assert ulp_difference(np.float64([1.0]), np.float64([np.nextafter(1.0, 0.0)]))[0] == 1
    assert ulp_difference(np.float16([1.0]), np.float16([1.0009765625]))[0] == 1
    bf = np.array([1.0, 1.0078125], ml_dtypes.bfloat16)
    assert ulp_difference(bf[:1], bf[1:])[0] == 1
    f8 = np.array([1.0, 1.125], ml_dtypes.float8_e4m3fn)
    assert ulp_difference(f8[:1], f8[1:])[0] == 1
    assert ulp_difference(np.float32([-0.0]), np.float32([0.0]))[0] == 0
    tiny = np.float32(1e-45)  # the smallest subnormal
    assert ulp_difference(np.float32([-tiny]), np.float32([tiny]))[0] == 2
    assert ulp_difference(np.float32([-1.0]), np.float32([1.0]))[0] == 2 * 0x3F800000
    assert ulp_difference(np.float32([np.nan]), np.float32([-np.nan]))[0] == 0
    assert ulp_difference(np.float32([np.nan]), np.float32([1.0]))[0] == engine.MAX_ULP
    assert ulp_difference(np.float32([np.inf]), np.float32([np.inf]))[0] == 0
    big = np.finfo(np.float32).max
    assert ulp_difference(np.float32([np.inf]), np.float32([big]))[0] == engine.MAX_ULP
    assert ulp_difference(np.float32([-np.inf]), np.float32([np.inf]))[0] == engine.MAX_ULP
    c = ulp_difference(np.complex64([1 + 1j]), np.complex64([complex(up, 1.0) + 0j]))
    assert c[0] == 1
    c = ulp_difference(np.complex128([1 + 1j]), np.complex128([1 + 2j]))
    assert c[0] == 1 << 52


def test_expect_close_bounds():
    one, up = np.float32(1.0), np.nextafter(np.float32(1.0), np.float32(2))
    assert _eval("expect_close", [one], [up], max_ulp_difference=1).passed
    assert not _eval("expect_close", [one], [up], max_ulp_difference=0).passed
    assert _eval("expect_close", [one], [up], max_ulp_difference=1, min_ulp_difference=1).passed
    assert not _eval("expect_close", [one], [one], max_ulp_difference=1, min_ulp_difference=1).passed
    assert _eval("expect_close", np.float32([np.nan, -0.0]), np.float32([np.nan, 0.0]),
                 max_ulp_difference=0).passed
    assert _eval("expect_close", np.int32([5]), np.int32([7]), max_ulp_difference=2).passed


def test_expect_eq_is_ieee_equality():
    assert _eval("expect_eq", np.float32([-0.0]), np.float32([0.0])).passed
    assert not _eval("expect_eq", np.float32([np.nan]), np.float32([np.nan])).passed
    assert _eval("expect_eq", np.complex64([1 - 0j]), np.complex64([1 + 0j])).passed
    assert not _eval("expect_eq", np.int8([1]), np.int8([2])).passed


def test_expect_almost_eq_follows_the_interpreter():
    ok = lambda a, e, t=1e-4: _eval("expect_almost_eq", np.float32(a), np.float32(e), tolerance=t).passed  # noqa: E731
    assert ok([np.nan], [np.nan])
    assert not ok([np.nan], [1.0])
    assert ok([np.inf], [np.inf]) and not ok([np.inf], [3e38], 1e40)
    assert ok([0.0], [-0.0])
    assert ok([0.0], [5e-5])          # zero and a small value of the same sign
    assert not ok([0.0], [-5e-5])     # ... but not of the other sign
    assert not ok([1e-5], [-1e-5])
    assert ok([100.0], [100.0001])
    assert not ok([100.0], [100.01])
    assert _eval("expect_almost_eq", np.complex64([1 + 1j]), np.complex64([1 + 1.00001j])).passed
    assert not _eval("expect_almost_eq", np.complex64([1 + 1j]), np.complex64([1 + 1.1j])).passed
    assert _eval("expect_almost_eq", np.int32([3]), np.int32([4]), tolerance=1.0).passed


def test_a_check_on_an_element_type_it_cannot_compare_fails_and_says_why():
    """An output of a type no comparison knows never passes a check by default."""
    got = evaluate_check(Check("expect_eq", 0, 1, {}, "f.mlir:3:5"), [np.array(["a"]), np.array(["a"])])
    assert (got.passed, got.location) == (False, "f.mlir:3:5")
    assert_mentions(got.message, "element type", "<U1")


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2])
def test_narrow_integers_compare_as_integers(dtype):
    """ml_dtypes' narrow integers (numpy kind 'V') are integers to every check: equal passes,
    one element off fails and names it, as for int8."""
    a = np.array([1, 0, 1], dtype)
    b = np.array([1, 1, 1], dtype)
    ok = evaluate_check(Check("expect_eq", 0, 1, {}, "f.mlir:3:5"), [a, a.copy()])
    assert ok.passed, ok.message
    bad = evaluate_check(Check("expect_eq", 0, 1, {}, "f.mlir:3:5"), [a, b])
    ref = evaluate_check(Check("expect_eq", 0, 1, {}, "f.mlir:3:5"), [a.astype(np.int8), b.astype(np.int8)])
    assert not bad.passed and bad.message == ref.message


def test_expect_close_with_a_lower_bound_names_the_element_below_it():
    """With min_ulp_difference, a failing element may differ by 0 ULP: the report names it, never a
    passing element that differs more."""
    a = np.array([1.0, 2.0], np.float32)
    b = a.copy()
    b[0] = np.nextafter(np.nextafter(a[0], np.float32(3)), np.float32(3))  # 2 ULP: inside [1, 5]
    got = evaluate_check(Check("expect_close", 0, 1, {"min_ulp_difference": 1, "max_ulp_difference": 5}, "f:1:1"),
                         [a, b])
    assert not got.passed
    assert_mentions(got.message, "1 of 2", "[1, 5] ULP", "index [1]", "actual=2.0", "expected=2.0",
                    "ULP difference=0")


# ============================================================ evaluate edges

def test_evaluate_reports_missing_outputs_and_unknown_kinds():
    """A check reading past the outputs, or of a kind nobody knows, fails and says so."""
    two = [np.int32([1]), np.int32([1])]
    got = evaluate_check(Check("expect_eq", 0, 2, {}, "l:1:1"), two)
    assert (got.passed, got.location) == (False, "l:1:1")
    assert_mentions(got.message, "output 2", "2 outputs")
    got = evaluate_check(Check("expect_eq", 1, 0, {}, "l:1:1"), two[:1])
    assert not got.passed
    assert_mentions(got.message, "output 1", "1 outputs")
    assert evaluate_check(Check("expect_eq", 1, 0, {}, "l:1:1"), two).passed
    got = evaluate_check(Check("expect_frob", 0, 1, {}, "l:1:1"), two)
    assert (got.kind, got.passed) == ("expect_frob", False)
    assert_mentions(got.message, "'expect_frob'")
    got = evaluate_check(Check("expect_eq", 0, 1, {}, "l:1:1"), [np.float32([1, 2]), np.float32([1, 2, 3])])
    assert not got.passed
    assert_mentions(got.message, "float32[2]", "float32[3]")


def test_passing_messages_count_elements():
    """A pass says how many elements it compared (one, none, many) and, for expect_close,
    the largest ULP difference among them."""
    def ok(r, *facts):
        assert r.passed, r.message
        assert_mentions(r.message, *facts)

    ok(_eval("expect_eq", np.int32(3), np.int32(3)), "1 element ")
    ok(_eval("expect_eq", np.int32([]), np.int32([])), "0 elements")
    ok(_eval("expect_close", np.float32([]), np.float32([])), "0 elements")
    assert "ULP" not in _eval("expect_close", np.float32([]), np.float32([])).message  # no maximum of none
    ok(_eval("expect_close", np.float32(1), np.float32(1)), "1 element ", "max ULP difference 0")
    one, up = np.float32(1.0), np.nextafter(np.float32(1.0), np.float32(2))
    up2 = np.nextafter(up, np.float32(2))
    ok(_eval("expect_close", np.float32([one, one, 5]), np.float32([up, up2, 5])), "3 elements", "max ULP difference 2")
    r = _eval("expect_almost_eq", np.int64([1, 5]), np.int64([1, 7]), tolerance=2)
    ok(r, "2 elements")
    assert "ULP" not in r.message


def test_failure_messages_for_scalars_integers_and_complex():
    """The worst element, its error and (where the expected value is non-zero and the error
    finite) the relative error, for each element class."""
    r = _eval("expect_almost_eq", np.float32(2), np.float32(3), tolerance=0.5)
    assert_mentions(r.message, "1 of 1", "tolerance 0.5", "index []", "actual=2.0", "expected=3.0", "abs error=1,",
                    "rel error=0.333333")
    r = _eval("expect_almost_eq", np.float32([0, 2]), np.float32([0, 3]), tolerance=0.5)
    assert_mentions(r.message, "1 of 2", "tolerance 0.5", "index [1]")
    r = _eval("expect_almost_eq", np.float32([1, 0.5]), np.float32([1.1, 0]))
    assert_mentions(r.message, "2 of 2", "tolerance 0.0001", "index [1]", "actual=0.5", "expected=0.0",
                    "abs error=0.5")
    assert "rel error" not in r.message  # no relative error to a zero
    r = _eval("expect_almost_eq", np.float32([1, np.nan]), np.float32([1.1, 0]))
    # A NaN shows its sign and bits; its error, NaN, says nothing more and is left out.
    assert_mentions(r.message, "index [1]", "actual=nan(0x7fc00000)", "expected=0.0")
    assert "error" not in r.message
    r = _eval("expect_eq", np.float32([np.inf, 1]), np.float32([1, 1]))
    assert_mentions(r.message, "1 of 2", "index [0]", "actual=inf", "expected=1.0", "abs error=inf")
    assert "rel error" not in r.message  # an infinite error has no relative one
    r = _eval("expect_almost_eq", np.int64([1, 5]), np.int64([1, 7]))
    assert_mentions(r.message, "1 of 2", "index [1]", "actual=5", "expected=7", "abs error=2")
    r = _eval("expect_almost_eq", np.int16([1, 5]), np.int16([3, 7]), tolerance=1)
    assert_mentions(r.message, "2 of 2", "tolerance 1;", "index [0]", "actual=1", "expected=3", "abs error=2")
    r = _eval("expect_close", np.int16([1, 5]), np.int16([3, 8]), max_ulp_difference=1)
    assert_mentions(r.message, "2 of 2", "1 ULP", "index [1]", "actual=5", "expected=8", "ULP difference=3")
    r = _eval("expect_eq", np.complex64([1 + 1j, 2]), np.complex64([1 + 2j, 2]))
    assert_mentions(r.message, "1 of 2", "index [0]", "actual=(1+1j)", "expected=(1+2j)", "abs error=1,",
                    "rel error=0.447214")
    r = _eval("expect_eq", np.complex64([2, 1 + 1j]), np.complex64([2, 2 + 1j]))
    assert_mentions(r.message, "index [1]", "actual=(1+1j)", "expected=(2+1j)", "rel error=0.447214")


def test_expect_eq_on_complex_compares_the_imaginary_part():
    src = """\
func.func @main() {
  %c = stablehlo.constant dense<[(1.5, 2.0), (3.0, -1.0)]> : tensor<2xcomplex<f32>>
  %n = stablehlo.negate %c : tensor<2xcomplex<f32>>
  check.expect_eq_const %n, dense<[(-1.5, -2.0), (-3.0, 1.0)]> : tensor<2xcomplex<f32>>
  check.expect_eq_const %n, dense<[(-1.5, -2.0), (-3.0, 1.5)]> : tensor<2xcomplex<f32>>
  func.return
}
"""
    module = inputs.parse_mlir(checks.preprocess_check_ops(src, "c.mlir"), "c.mlir")
    plan = prepare_checks(module, source="c.mlir")
    from mlirhlo_driver.execute import engine

    results = engine.evaluate_checks(plan, engine.run_plan(plan, [])[0])
    # Same real parts, one imaginary part differs: only the second check fails.
    assert [r.passed for r in results] == [True, False]


def test_check_naming_a_missing_output_fails_with_the_count():
    from mlirhlo_driver.execute.engine import evaluate_check
    from mlirhlo_driver.inputs.checks import Check

    r = evaluate_check(Check("expect_eq", 0, 2, {}, "f.mlir:3:5"), [np.zeros(2), np.zeros(2)])
    assert not r.passed
    assert_mentions(r.message, "output 2", "(2 outputs)")
