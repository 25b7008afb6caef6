"""execute/interpreter.py: the StableHLO reference interpreter on isolate's helper (its
outputs, its errors and crashes as compile errors quoting it, the helper replaced after
a crash).
"""

from __future__ import annotations

import numpy as np
import pytest

import mlirhlo_driver
from mlirhlo_driver._native import isolate
from mlirhlo_driver.errors import CompileError, NativeCrash
from mlirhlo_driver.execute import interpreter
from tests.conftest import assert_mentions

# ------------------------------------------------------------------ the interpreter

ADD = ("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")

# The interpreter has no rng_bit_generator: it aborts the process (an LLVM fatal error).
RNG = ("func.func @main(%s: tensor<2xui64>) -> tensor<4xui32> {\n"
       "  %s2, %v = stablehlo.rng_bit_generator %s, algorithm = DEFAULT : "
       "(tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)\n  return %v : tensor<4xui32>\n}\n")


# ------------------------------------------------------------------ the interpreter's errors


def _fake_helper(monkeypatch, outcome):
    """isolate.call replaced: it raises ``outcome`` if it is an exception, else returns it."""
    from mlirhlo_driver._native import isolate

    calls: list = []

    def call(fn, args, **kw):
        calls.append((fn, args, kw))
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(isolate, "call", call)
    return calls


TOPK = b"""func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
  %v, %i = mhlo.topk(%x, k=2, largest=true) : tensor<2x3xf32> -> (tensor<2x2xf32>, tensor<2x2xi32>)
  return %v, %i : tensor<2x2xf32>, tensor<2x2xi32>
}
"""

TOPK_HLO = """HloModule topk_rows

ENTRY main {
  x = f32[4,8] parameter(0)
  ROOT t = (f32[4,2], s32[4,2]) topk(x), k=2, largest=true
}
"""


def test_the_interpreter_is_kept_and_replaced_after_a_crash():
    from mlirhlo_driver.execute import engine, interpreter
    from mlirhlo_driver.inputs.loader import parse_mlir

    add, rng = parse_mlir(ADD), parse_mlir(RNG)
    x = np.arange(4, dtype=np.float32)
    assert engine.run_interpreter(add, [x])[0][0].tolist() == (2 * x).tolist()
    helper = isolate._helpers[()].pid
    engine.run_interpreter(add, [x])
    with pytest.raises(CompileError) as ei:
        interpreter.evaluate(b"not MLIR", [], [])
    assert_mentions(ei.value.message, "interpreter", "failed", "InputError")
    assert isolate._helpers[()].pid == helper  # one helper for all of these
    with pytest.raises(CompileError) as ei:
        engine.run_interpreter(rng, [np.zeros(2, np.uint64)])
    assert_mentions(ei.value.message, "interpreter", "crashed", "rng_bit_generator")
    assert engine.run_interpreter(add, [x])[0][0].tolist() == (2 * x).tolist()
    assert isolate._helpers[()].pid != helper


def test_interpreter_outputs_come_from_the_helper(monkeypatch):
    """evaluate runs the in-process evaluation in isolate.call's helper and returns its outputs."""
    calls = _fake_helper(monkeypatch, ("ok", ["out"]))
    assert interpreter.evaluate(b"bc", ["x"], ["tensor<f32>"]) == ["out"]
    [(fn, args, kw)] = calls
    assert fn is interpreter._evaluate_in_helper and args == (b"bc", ["x"], ["tensor<f32>"])
    assert kw["what"] == "the StableHLO interpreter"


def test_an_interpreter_error_is_a_compile_error_quoting_it(monkeypatch):
    from mlirhlo_driver.errors import CompileError

    _fake_helper(monkeypatch, ("error", "ValueError: bad op"))
    with pytest.raises(CompileError) as ei:
        interpreter.evaluate(b"", [], [])
    assert_mentions(ei.value.message, "interpreter", "failed", "ValueError: bad op")


@pytest.mark.parametrize("log, message", [
    ("noise\nLLVM ERROR: unsupported op: stablehlo.rng_bit_generator. Stack dump:\n#0 0x1\n",
     "unsupported op: stablehlo.rng_bit_generator"),
    ("", "no message"),
])
def test_an_interpreter_crash_is_a_compile_error_quoting_its_native_message(monkeypatch, log, message):
    """A crash of the helper quotes the interpreter's native error line, or says there was none."""
    from mlirhlo_driver.errors import CompileError, NativeCrash

    _fake_helper(monkeypatch, NativeCrash("died", native_log=log))
    with pytest.raises(CompileError) as ei:
        interpreter.evaluate(b"", [], [])
    assert_mentions(ei.value.message, "interpreter", "crashed", message)


@pytest.mark.golden
@pytest.mark.parametrize("outcome, message", [
    (("error", "ValueError: bad op"), "the StableHLO interpreter failed: ValueError: bad op"),
    (NativeCrash("died", native_log="noise\nLLVM ERROR: unsupported op: stablehlo.rng_bit_generator. "
                                    "Stack dump:\n#0 0x1\n"),
     "the StableHLO interpreter crashed: unsupported op: stablehlo.rng_bit_generator"),
    (NativeCrash("died", native_log=""), "the StableHLO interpreter crashed: no message"),
])
def test_interpreter_errors_exactly(monkeypatch, outcome, message):
    """An error in the interpreter's helper, or its death: the golden of those compile errors."""
    _fake_helper(monkeypatch, outcome)
    with pytest.raises(CompileError) as ei:
        interpreter.evaluate(b"", [], [])
    assert ei.value.message == message


def test_the_helper_side_returns_outputs_or_the_error_s_words(monkeypatch):
    """In the helper: ("ok", outputs), or ("error", "Type: words") for any exception."""
    monkeypatch.setattr(interpreter, "evaluate_in_process", lambda b, a, t: [b, a, t])
    assert interpreter._evaluate_in_helper(b"x", [1], ["t"]) == ("ok", [b"x", [1], ["t"]])

    def fail(b, a, t):
        raise RuntimeError("no such op")

    monkeypatch.setattr(interpreter, "evaluate_in_process", fail)
    assert interpreter._evaluate_in_helper(b"x", [], []) == ("error", "RuntimeError: no such op")


def test_the_interpreter_evaluates_xla_s_mhlo_topk():
    """mhlo.topk (XLA's TopK after import) is evaluated as chlo.top_k: the k largest and their indices."""
    import numpy as np

    x = np.array([[1, 5, 3], [9, 2, 4]], np.float32)
    values, indices = interpreter.evaluate(TOPK, [x], ["tensor<2x3xf32>"])
    assert values.tolist() == [[5.0, 3.0], [9.0, 4.0]]
    assert indices.dtype == np.int32 and indices.tolist() == [[1, 2], [0, 2]]


def test_topk_runs_against_the_interpreter(tmp_path):
    # XLA's import leaves TopK as mhlo.topk; the interpreter gets it as chlo.top_k
    # (execute/interpreter.py), else it refuses the op.
    path = tmp_path / "topk.hlo"
    path.write_text(TOPK_HLO)
    report = mlirhlo_driver.load(str(path)).run()
    assert report.status == "ok", report.message
    values, indices = report.reference_outputs
    np.testing.assert_array_equal(values, -np.sort(-report.inputs[0], axis=1)[:, :2])
    assert indices.dtype == np.int32
