"""_native/guards.py: the refusal of what jaxlib's conversion would turn into a native
crash (an integer division of two constants by zero, which folds into a SIGFPE; a manual
computation compiled for one device), with its location.
"""

from __future__ import annotations

import pytest

import mlirhlo_driver._native.guards as guards
from mlirhlo_driver.errors import InputError
from tests.conftest import assert_mentions

# ------------------------------------------------------------------ guards


def _division(divisor: str, *, dividend: str = "dense<[7, 8]>", ty: str = "tensor<2xi32>",
              op: str = "stablehlo.divide", loc: str = "") -> str:
    """A module whose %c divides two constants (line 4, column 8 unless ``loc`` says otherwise)."""
    dialect = op.split(".")[0]
    return (f"func.func @main() -> {ty} {{\n"
            f"  %a = {dialect}.constant {dividend} : {ty}\n"
            f"  %b = {dialect}.constant {divisor} : {ty}\n"
            f"  %c = {op} %a, %b : {ty}{loc}\n"
            f"  return %c : {ty}\n}}\n")


def _refusal(text: str, source: str | None = None) -> InputError | None:
    """The InputError the guard raises for the module ``text`` (None: it lets it through)."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native.jaxlib import ir_context

    with ir_context():
        module = ir.Module.parse(text)
        try:
            if source is None:
                guards.refuse_fatal(module)
            else:
                guards.refuse_fatal(module, source)
        except InputError as e:
            return e
    return None


_MANUAL_CALL = ("func.func @main(%p: tensor<8xf32>) -> tensor<2xf32> {\n"
                "  %s = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%p) : (tensor<8xf32>) -> tensor<2xf32>\n"
                "  return %s : tensor<2xf32>\n}\n")


def _manual_refusal() -> InputError:
    from jaxlib.mlir import ir

    from mlirhlo_driver._native.jaxlib import ir_context

    with ir_context():
        with pytest.raises(InputError) as e:
            guards.refuse_fatal(ir.Module.parse(_MANUAL_CALL), one_device=True)
    return e.value


@pytest.mark.golden
@pytest.mark.parametrize("refusal, message, hint", [
    (lambda: _refusal(_division("dense<0>")),
     "stablehlo.divide of two constants with a zero divisor: jaxlib's conversion to HLO dies folding it (SIGFPE)",
     "pass the divisor as a parameter"),
    (lambda: _refusal(_division("dense<0>", op="mhlo.remainder")),
     "mhlo.remainder of two constants with a zero divisor: jaxlib's conversion to HLO dies folding it (SIGFPE)",
     "pass the divisor as a parameter"),
    (_manual_refusal,
     "the module has manual computations (shard_map): they run only on their mesh's devices, not on one",
     "mlirhlo spmd-run FILE --num-partitions N"),
], ids=["division", "remainder", "manual-computation"])
def test_guard_refusals_exactly(refusal, message, hint):
    """The exact words of what refuse_fatal refuses (elsewhere tests assert the facts)."""
    e = refusal()
    assert (e.message, e.hint) == (message, hint)


def test_a_constant_division_by_zero_is_placed_where_its_location_says():
    """The refusal names the file, line and column of the divide's own location; a location
    without a file name ('-', the parser's name for unnamed text) leaves the file to the caller."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver._native.guards import refuse_fatal
    from mlirhlo_driver.errors import InputError

    def text(file):
        return ("func.func @main() -> tensor<i32> {\n"
                "  %a = stablehlo.constant dense<7> : tensor<i32>\n"
                "  %b = stablehlo.constant dense<0> : tensor<i32>\n"
                f'  %c = stablehlo.divide %a, %b : tensor<i32> loc("{file}":4:8)\n'
                "  return %c : tensor<i32>\n}\n")

    with _jaxlib.ir_context():
        for file, want in (("model.mlir", "model.mlir"), ("-", None)):
            with pytest.raises(InputError) as e:
                refuse_fatal(ir.Module.parse(text(file)))
            assert (e.value.file, e.value.line, e.value.col) == (want, 4, 8)
            assert_mentions(str(e.value), "stablehlo.divide", "zero divisor")


@pytest.mark.parametrize("op", ["stablehlo.divide", "stablehlo.remainder", "mhlo.divide", "mhlo.remainder"])
@pytest.mark.parametrize("divisor", ["dense<0>", "dense<[3, 0]>", "dense<[0, 3]>"],
                         ids=["splat-zero", "last-zero", "first-zero"])
def test_constant_division_by_a_zero_is_refused_at_its_location(op, divisor):
    """Each integer division op, by a splat zero or a zero element anywhere: one InputError
    with the op's name, its line and column, and the hint."""
    e = _refusal(_division(divisor, op=op))
    assert (e.file, e.line, e.col) == (None, 4, 8)
    assert_mentions(e.message, op, "zero divisor", "SIGFPE")
    assert_mentions(e.hint, "divisor", "parameter")


@pytest.mark.parametrize("divisor", ["dense<1>", "dense<3>", "dense<[3, 1]>", "dense<[1, 3]>", "dense<[-1, 2]>"])
def test_constant_division_by_nonzero_constants_passes(divisor):
    """No element of the divisor is zero (a splat or not, ones included): nothing to refuse."""
    assert _refusal(_division(divisor)) is None


@pytest.mark.parametrize("ty", ["tensor<2xui32>", "tensor<2xi8>", "tensor<2x1xi64>", "tensor<2xui8>"])
def test_every_integer_element_type_and_shape_is_checked(ty):
    """Unsigned, narrow and wide integers, of any rank, are integer divisions."""
    assert _refusal(_division("dense<0>", dividend="dense<7>", ty=ty)).line == 4


@pytest.mark.parametrize("ty", ["tensor<2xf32>", "tensor<2xf64>", "tensor<2xcomplex<f32>>"])
def test_a_floating_division_by_zero_is_left_alone(ty):
    """A float or complex division by zero gives inf/nan, never SIGFPE: it is not refused."""
    zero = "dense<(0.0, 0.0)>" if "complex" in ty else "dense<0.0>"
    assert _refusal(_division(zero, dividend=zero.replace("0.0", "1.0"), ty=ty)) is None


@pytest.mark.parametrize("args, a, b", [
    ("%p: tensor<2xi32>", "%p", "%b"),        # dividend a parameter, divisor a zero constant
    ("%p: tensor<2xi32>", "%b", "%p"),        # divisor a parameter
    ("%p: tensor<2xi32>", "%p", "%p"),        # neither constant
    ("", "%a", "%n"),                         # divisor computed (a negate of a zero), not a constant
    ("", "%n", "%b"),                         # dividend computed
])
def test_only_a_division_of_two_constants_is_refused(args, a, b):
    """The conversion folds only when both operands are constants: any other operand passes."""
    text = (f"func.func @main({args}) -> tensor<2xi32> {{\n"
            "  %a = stablehlo.constant dense<[7, 8]> : tensor<2xi32>\n"
            "  %b = stablehlo.constant dense<0> : tensor<2xi32>\n"
            "  %n = stablehlo.negate %b : tensor<2xi32>\n"
            f"  %c = stablehlo.divide {a}, {b} : tensor<2xi32>\n"
            "  return %c : tensor<2xi32>\n}\n")
    assert _refusal(text) is None


def test_other_ops_of_constants_with_a_zero_pass():
    """Only divide and remainder trap: a multiply or subtract of a zero constant passes."""
    for op in ("stablehlo.multiply", "stablehlo.subtract", "stablehlo.maximum"):
        assert _refusal(_division("dense<0>", op=op)) is None, op


def test_a_module_without_any_division_passes():
    assert _refusal("func.func @main(%p: tensor<2xi32>) -> tensor<2xi32> {\n"
                    "  return %p : tensor<2xi32>\n}\n") is None


def test_the_first_constant_division_by_zero_is_the_one_named():
    """With two, the error names the first in the module (its own line and column)."""
    text = ("func.func @main() -> tensor<2xi32> {\n"
            "  %a = stablehlo.constant dense<[7, 8]> : tensor<2xi32>\n"
            "  %b = stablehlo.constant dense<0> : tensor<2xi32>\n"
            "  %ok = stablehlo.divide %a, %a : tensor<2xi32>\n"
            "      %r = stablehlo.remainder %a, %b : tensor<2xi32>\n"
            "  %d = stablehlo.divide %a, %b : tensor<2xi32>\n"
            "  return %d : tensor<2xi32>\n}\n")
    e = _refusal(text)
    assert (e.file, e.line, e.col) == (None, 5, 12)
    assert e.message.startswith("stablehlo.remainder "), e.message


@pytest.mark.parametrize("loc, source, where", [
    ("", None, (None, 4, 8)),                                  # parsed without a name: "-"
    (' loc("model.mlir":12:34)', None, ("model.mlir", 12, 34)),  # the op's own file location
    (' loc("":12:34)', None, (None, 12, 34)),                  # an empty file name names nothing
    (' loc("-":12:34)', None, (None, 12, 34)),
    (' loc(unknown)', None, (None, None, None)),                # no position at all
    (' loc(unknown)', "given.mlir", ("given.mlir", None, None)),
    ("", "given.mlir", ("given.mlir", 4, 8)),                  # the caller names text parsed without a name
])
def test_the_refusal_names_the_file_line_and_column_it_can(loc, source, where):
    """file: the caller's ``source``, else the location's file unless "-" or ""; line and col:
    the file location's, None when there is none."""
    e = _refusal(_division("dense<0>", loc=loc), source)
    assert (e.file, e.line, e.col) == where


@pytest.mark.parametrize("target, refused", [("xla.sdy.GlobalToLocalShape", True), ("SPMDFullToShardShape", True),
                                             ("Sharding", False), ("xla.sdy.FuncResultSharding", False)])
def test_a_manual_computation_is_refused_only_for_one_device(target, refused):
    """Shardy's (or GSPMD's) entry into a manual computation: XLA compiles it only over its
    mesh, and jaxlib 0.12's CPU compile can segfault on it for one device; other sharding
    custom calls pass. Without ``one_device`` (a partitioned compile) nothing is refused."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native.jaxlib import ir_context

    text = _MANUAL_CALL.replace("xla.sdy.GlobalToLocalShape", target)
    with ir_context():
        module = ir.Module.parse(text)
        guards.refuse_fatal(module)  # a partitioned compile: nothing refused
        if not refused:
            guards.refuse_fatal(module, one_device=True)
            return
        with pytest.raises(InputError) as e:
            guards.refuse_fatal(module, "sm.mlir", one_device=True)
    assert (e.value.file, e.value.line, e.value.col) == ("sm.mlir", 2, 8)
    assert_mentions(e.value.message, "manual computations", "shard_map")
    assert_mentions(e.value.hint, "spmd-run", "--num-partitions")


def test_the_location_pattern_reads_file_line_and_column():
    """checks.py reads positions with the same pattern: file, line and column, as groups 1-3."""
    m = guards.LOCATION.search('loc("a.mlir":3:14)')
    assert m.groups() == ("a.mlir", "3", "14")
    assert guards.LOCATION.search('loc("":1:2)').groups() == ("", "1", "2")
    assert guards.LOCATION.search("loc(unknown)") is None
