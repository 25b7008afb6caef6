"""execute/run.py: one module's run and its report (status, json row, kept arrays, the
bisect's location).
"""

from __future__ import annotations

import numpy as np
import pytest

from mlirhlo_driver.execute import engine, run
from mlirhlo_driver.inputs import loader as inputs
from tests.conftest import assert_mentions
from tests.execute.conftest import _module, make_inputs


def _loaded(tmp_path, text, name="m.mlir"):
    path = _module(tmp_path, text, name)
    return path, inputs.load(str(path))[0].module


_ONE_CHECK = """func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.add %a, %a : tensor<2xf32>
  check.expect_eq_const %b, dense<[2.0, 4.0]> : tensor<2xf32>
  return
}
"""

_TWO_CHECKS = """func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = stablehlo.constant dense<[3.0, 5.0]> : tensor<2xf32>
  %b = stablehlo.add %a, %c : tensor<2xf32>
  check.expect_eq_const %b, dense<[4.0, 7.0]> : tensor<2xf32>
  check.expect_eq_const %b, dense<[4.0, 8.0]> : tensor<2xf32>
  return
}
"""

_CHECK_AND_PARAM = """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.add %a, %a : tensor<2xf32>
  check.expect_eq_const %b, dense<[2.0, 4.0]> : tensor<2xf32>
  %y = stablehlo.add %x, %a : tensor<2xf32>
  return %y : tensor<2xf32>
}
"""


def test_max_abs_error_of_a_match_is_the_largest_difference_within_tolerance():
    """A module that matches still reports how far it was from the reference (the
    report's max abs error, and where), not 0 because every difference was within tolerance."""
    report = run.ModuleReport("m", "m.mlir")
    got = [np.array([1.0, 2.0 + 3e-6, 3.0], np.float32), np.array([5, 6], np.int32)]
    want = [np.array([1.0, 2.0, 3.0], np.float32), np.array([5, 6], np.int32)]
    report.judge(engine.compare_outputs(got, want, None, None))
    assert report.status == "ok" and not report.mismatches
    assert report.max_abs_error == pytest.approx(float(np.float32(2.0 + 3e-6) - np.float32(2.0)))
    assert report.max_abs_error_at == "output 0 [1]"


def test_the_report_max_abs_error_is_the_largest_of_its_outputs_and_replicas():
    """Each output's max abs error is its largest |actual - expected|, differing or not; the
    report's is the largest over the outputs (and, judged again, over replicas), named by where
    it is; identical outputs: 0, and no element named."""
    report = run.ModuleReport("m", "m.mlir")
    same = engine.compare_outputs([np.ones(2)], [np.ones(2)], None, None)
    report.judge(same)
    assert (report.max_abs_error, report.max_abs_error_at) == (0.0, "")
    got = [np.array([100.05, 0.025]), np.array([1.0, 1.0])]
    want = [np.array([100.0, 0.01]), np.array([1.0, 1.01])]
    c = engine.compare_outputs(got, want, 1e-3, 1e-3, label="replica 0 output")
    assert [m.max_abs_error for m in c.mismatches] == [pytest.approx(0.05), pytest.approx(0.01)]
    assert (c.max_abs_error, c.max_abs_error_at) == (pytest.approx(0.05), "replica 0 output 0 [0]")
    report.judge(c)
    report.judge(engine.compare_outputs([np.array([100.0, 0.01]), np.array([1.0, 1.3])], want, 1e-3, 1e-3,
                                        label="replica 1 output"))
    assert (report.max_abs_error, report.max_abs_error_at) == (pytest.approx(0.29), "replica 1 output 1 [1]")
    assert report.row()["max_abs_error"] == report.max_abs_error
    assert report.row()["max_abs_error_at"] == "replica 1 output 1 [1]"


def test_run_module_judges_by_xla_error_spec_when_asked(tmp_path, monkeypatch):
    """RunOptions.xla_error_spec (run_hlo_module): an element 1.5e-3 off at 1.0 is beyond XLA's
    1e-3 absolute and 1e-3 relative bounds (a mismatch, in the bisect too), though within their
    sum (mlirhlo run's --rtol 1e-3 --atol 1e-3 rule)."""
    path, m = _loaded(tmp_path, "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                      "  %0 = stablehlo.negate %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n")
    monkeypatch.setattr(engine, "run_xla", lambda module, arrays, *a: ([np.float32([1.0015, 5.0])], 1.0, 1.0))
    monkeypatch.setattr(engine, "run_reference", lambda module, arrays, *a: ([np.float32([1.0, 5.0])], 1.0))
    sums = run.run_module(m, "m", str(path), run.RunOptions(rtol=1e-3, atol=1e-3, bisect=True))
    assert sums.status == "ok"
    xla = run.run_module(m, "m", str(path), run.RunOptions(rtol=1e-3, atol=1e-3, xla_error_spec=True, bisect=True))
    assert (xla.status, xla.message) == ("mismatch", "output 0: 1/2 differ")
    assert xla.max_abs_error == pytest.approx(1.5e-3, rel=1e-3) and xla.max_abs_error_at == "output 0 [0]"
    assert xla.bisect is not None and xla.bisect.mismatch.count == 1


def test_module_report_status_and_json_row():
    """passed/ok only for ok and ran; the JSON row carries every field, bisect and mismatches described."""
    for status, ok in [("ok", True), ("ran", True), ("mismatch", False), ("check-failed", False),
                       ("failed", False), ("invalid", False), ("crashed", False), ("timeout", False)]:
        r = run.ModuleReport("m", "m.mlir", status=status)
        assert (r.passed, r.ok) == (ok, ok), status
    mm = engine.compare(np.array([2.0]), np.array([1.0]), 0, 0.0, 0.0)
    report = run.ModuleReport("m", "d/m.mlir", status="mismatch", message="output 0: 1/1 differ",
                              max_abs_error=1.0, max_abs_error_at="output 0 [0]", compile_ms=2.0, run_ms=3.0, reference_ms=4.0, mismatches=[mm],
                              checks=[engine.CheckResult("expect_eq", False, "m.mlir:1:1", "bad")],
                              bisect=run.BisectResult("%0 = stablehlo.add", "m.mlir:2:3", ["tensor<f32>"], mm),
                              inputs_note="zeros", checked_values="compiled", checked_values_detail="d",
                              kept_constants=[{"k": 1}], reproducer="mlirhlo run d/m.mlir")
    assert report.row() == {
        "module": "m", "source": "d/m.mlir", "status": "mismatch", "max_abs_error": 1.0,
        "max_abs_error_at": "output 0 [0]", "compile_ms": 2.0,
        "run_ms": 3.0, "reference_ms": 4.0, "message": "output 0: 1/1 differ",
        "checks": [{"kind": "expect_eq", "passed": False, "location": "m.mlir:1:1", "message": "bad"}],
        "mismatches": [mm.describe()],
        "bisect": {"op": "%0 = stablehlo.add", "location": "m.mlir:2:3", "operand_shapes": ["tensor<f32>"],
                   "mismatch": mm.describe()},
        "bisect_passes": None, "xla_passes": None, "inputs": "zeros", "checked_values": "compiled",
        "checked_values_detail": "d", "kept_constants": [{"k": 1}], "notes": [],
        "reproducer": "mlirhlo run d/m.mlir"}
    assert run.ModuleReport("m", "m.mlir").row()["bisect"] is None


def test_run_module_invalid_inputs_are_invalid_not_failed(tmp_path):
    """An unknown reference or platform, a missing --inputs file or dynamic shapes: status invalid,
    with the error's message (no 'error: ' prefix)."""
    path, m = _loaded(tmp_path, "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %0 = stablehlo.negate %x : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    for options, facts in [
            (run.RunOptions(reference="bogus"), ("'bogus'", "interpreter, cpu, none")),
            (run.RunOptions(platform="tpux"), ("'tpux'", "cpu, cuda or tpu")),
            (run.RunOptions(inputs_npz=str(tmp_path / "none.npz")), (f"{tmp_path / 'none.npz'}: ", "no such file"))]:
        r = run.run_module(m, "m", str(path), options)
        assert (r.status, r.xla_passes) == ("invalid", None)
        assert not r.message.startswith("error:")
        assert_mentions(r.message, *facts)
    dyn, m = _loaded(tmp_path, "func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n"
                     "  return %x : tensor<?xf32>\n}\n", "dyn.mlir")
    r = run.run_module(m, "dyn", str(dyn), run.RunOptions())
    assert r.status == "invalid"
    assert_mentions(r.message, "dynamic shapes", "tensor<?xf32>")


def test_run_module_keeps_inputs_outputs_and_reference_when_asked(tmp_path):
    """keep_outputs returns inputs, outputs and the reference's; reference none: status ran, no
    reference run, no error measured."""
    path, m = _loaded(tmp_path, "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %0 = stablehlo.negate %x : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    r = run.run_module(m, "m", str(path), run.RunOptions(reference="cpu", keep_outputs=True, seed=2))
    assert (r.status, r.message, r.max_abs_error) == ("ok", "", 0.0)
    assert_mentions(r.inputs_note, "seed 2")
    [x], [out], [ref] = r.inputs, r.outputs, r.reference_outputs
    np.testing.assert_array_equal(out, -x)
    np.testing.assert_array_equal(ref, -x)
    assert r.compile_ms > 0 and r.run_ms > 0 and r.reference_ms > 0
    plain = run.run_module(m, "m", str(path), run.RunOptions(reference="cpu"))
    assert (plain.inputs, plain.outputs, plain.reference_outputs, plain.xla_passes) == (None, None, None, None)
    ran = run.run_module(m, "m", str(path), run.RunOptions(reference="none", keep_outputs=True))
    assert (ran.status, ran.message, ran.max_abs_error, ran.reference_ms, ran.reference_outputs) == \
        ("ran", "", None, None, None)
    assert ran.outputs is not None and ran.passed


def _fake_timing(monkeypatch) -> list:
    """instrument.compile replaced: it records what it was asked, and fails for a module named
    'broken' (a DriverError 'no timing here')."""
    from types import SimpleNamespace

    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.xla import instrument

    asked = []

    def timed(module, name, spec, instrumentation):
        asked.append((name, spec.platform, spec.target.xla_flags, instrumentation.timing))
        if name == "broken":
            raise DriverError("no timing here")
        return SimpleNamespace(calls=None)

    monkeypatch.setattr(instrument, "compile", timed)
    return asked


def test_pass_timing_runs_for_modules_that_ran_and_a_failure_is_noted(tmp_path, monkeypatch):
    """--timing compiles once more, instrumented, on the run's platform and flags, for a module that
    ran (not an invalid one); when that fails the run's result stands and the message says why."""
    asked = _fake_timing(monkeypatch)
    path, m = _loaded(tmp_path, "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  return %x : tensor<4xf32>\n}\n")
    flags = (("xla_cpu_enable_fast_math", False),)
    r = run.run_module(m, "m", str(path), run.RunOptions(reference="none", timing=True, xla_flags=flags))
    assert (r.status, r.message, r.xla_passes) == ("ran", "", [])
    assert asked == [("m", "cpu", flags, True)]
    r = run.run_module(m, "broken", str(path), run.RunOptions(reference="none", timing=True))
    assert (r.status, r.xla_passes) == ("ran", None)
    assert_mentions(r.message, "no pass timing", "no timing here")
    checks_path, checks_module = _loaded(tmp_path, _TWO_CHECKS, "checks.mlir")
    r = run.run_module(checks_module, "broken", str(checks_path), run.RunOptions(timing=True))
    assert r.status == "check-failed"
    assert_mentions(r.message, "1/2 checks", "no pass timing", "no timing here")
    r = run.run_module(m, "m", str(path), run.RunOptions(platform="tpux", timing=True))
    assert (r.status, r.xla_passes) == ("invalid", None)
    assert_mentions(r.message, "'tpux'", "cpu, cuda or tpu")
    r = run.run_module(m, "m", str(path), run.RunOptions(reference="none"))
    assert r.xla_passes is None
    assert len(asked) == 3


@pytest.mark.golden
@pytest.mark.parametrize("text, name, options, status, message", [
    (_ONE_CHECK.replace("[2.0, 4.0]", "[2.0, 4.5]"), "broken", {}, "check-failed",
     "0/1 checks passed (no pass timing: no timing here)"),
    ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n", "broken",
     {"reference": "none"}, "ran", " (no pass timing: no timing here)"),
    ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n", "m",
     {"platform": "tpux"}, "invalid", "unknown platform 'tpux' (cpu, cuda or tpu)"),
    ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n", "m",
     {"reference": "bogus"}, "invalid", "unknown reference 'bogus' (interpreter, cpu, none)"),
    ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n", "m",
     {"inputs_npz": "{tmp}/none.npz"}, "invalid", "{tmp}/none.npz: no such file"),
])
def test_run_module_messages_exactly(tmp_path, monkeypatch, text, name, options, status, message):
    """A module's one-line result when --timing fails or the run cannot start (the error's
    message, no 'error: ' prefix): the golden."""
    _fake_timing(monkeypatch)
    path, m = _loaded(tmp_path, text)
    options = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in options.items()}
    r = run.run_module(m, name, str(path), run.RunOptions(timing=True, **options))
    assert (r.status, r.message) == (status, message.format(tmp=tmp_path))


@pytest.mark.golden
@pytest.mark.parametrize("text, fold, status, message, note", [
    (_ONE_CHECK, False, "ok", "1/1 checks passed", "1 constant fed as runtime parameters"),
    (_TWO_CHECKS, False, "check-failed", "1/2 checks passed", "2 constants fed as runtime parameters"),
    (_TWO_CHECKS, True, "check-failed", "1/2 checks passed", "constants folded by XLA (--fold-constants)"),
    (_CHECK_AND_PARAM, False, "ok", "1/1 checks passed", "1 constant fed as runtime parameters; random (seed 4)"),
])
def test_check_files_report_status_message_and_how_values_were_fed(tmp_path, text, fold, status, message, note):
    """A self-checking module: passed/total checks, each check's verdict, how constants were fed
    (count, pluralized, or folded) and, with parameters, how those were made. The golden of the
    checks' one-line result and of a self-checking module's input notes."""
    path, m = _loaded(tmp_path, text)
    r = run.run_module(m, "m", str(path), run.RunOptions(fold_constants=fold, seed=4, keep_outputs=True))
    assert (r.status, r.message, r.inputs_note) == (status, message, note)
    assert [c.passed for c in r.checks] == [True] * (text.count("expect_eq_const") - (status != "ok")) + \
        [False] * (status != "ok")
    assert r.checked_values == ("folded" if fold else "compiled")
    if text is _CHECK_AND_PARAM:
        x = make_inputs(m, seed=4)[0][0]
        [out] = r.outputs
        np.testing.assert_array_equal(out, x + np.array([1.0, 2.0], np.float32))
    else:
        assert r.outputs == []


@pytest.mark.parametrize("loc", ["mymax", "-mymax"])
def test_bisect_location_of_a_named_op_is_its_name(tmp_path, loc):
    """A diverging op with a name location, loc("mymax"), is reported at that name, not a file position
    (only '-:LINE:COL', this module's own text, becomes the file's name)."""
    t = "tensor<8xf32>"
    path, m = _loaded(tmp_path, f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
                      f"  %a = stablehlo.add %x, %x : {t}\n"
                      f'  %m = stablehlo.maximum %a, %y : {t} loc("{loc}")\n'
                      f"  return %m : {t}\n}}\n")
    npz = tmp_path / "in.npz"
    np.savez(npz, arg0=np.arange(1, 9, dtype=np.float32), arg1=np.full(8, np.nan, np.float32))
    options = run.RunOptions(reference="cpu", bisect=True, inputs_npz=str(npz),
                             xla_flags=(("xla_cpu_enable_fast_min_max", True),))
    r = run.run_module(m, "m", str(path), options)
    assert r.status == "mismatch" and r.bisect is not None
    assert (r.bisect.location, r.bisect.operand_shapes) == (loc, [t, t])
    assert r.bisect.op.startswith("%1 = stablehlo.maximum %0, %arg1")


def test_loc_text_of_each_location_kind():
    """File positions print as FILE:LINE:COL (the first one, inside names and call sites too), a
    name location as its name, anything else as MLIR prints it."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        file = ir.Location.file("a.py", 3, 4)
        assert run._loc_text(file) == "a.py:3:4"
        assert run._loc_text(ir.Location.name("foo")) == "foo"
        assert run._loc_text(ir.Location.name("n", ir.Location.file("b.py", 5, 6))) == "b.py:5:6"
        assert run._loc_text(ir.Location.callsite(ir.Location.file("c.py", 7, 8), [file])) == "c.py:7:8"
        assert run._loc_text(ir.Location.unknown()) == "loc(unknown)"


def test_bisect_passes_matches_outputs_against_the_reference(tmp_path, monkeypatch):
    """--bisect-passes runs only on a mismatch; a trial 'matches' when it has the reference's outputs,
    as many, each within tolerance."""
    from mlirhlo_driver.execute import pass_bisect

    found = []

    def find(module, name, arrays, options, trial, matching):
        found.append(matching)
        return "found"

    monkeypatch.setattr(pass_bisect, "find", find)
    t = "tensor<8xf32>"
    path, m = _loaded(tmp_path, f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
                      f"  %m = stablehlo.maximum %x, %y : {t}\n  return %m : {t}\n}}\n")
    npz = tmp_path / "in.npz"
    x = np.arange(1, 9, dtype=np.float32)
    np.savez(npz, arg0=x, arg1=np.full(8, np.nan, np.float32))
    options = run.RunOptions(reference="cpu", bisect_passes=True, inputs_npz=str(npz),
                             xla_flags=(("xla_cpu_enable_fast_min_max", True),))
    r = run.run_module(m, "m", str(path), options)
    assert (r.status, r.pass_bisect) == ("mismatch", "found")
    [matching] = found
    nan = np.full(8, np.nan, np.float32)
    assert matching([nan]) and not matching([x]) and not matching([nan, nan]) and not matching([])
    assert not matching([np.where(np.arange(8) == 7, 1.0, nan).astype(np.float32)])
    ok = run.run_module(m, "m", str(path), run.RunOptions(reference="cpu", bisect_passes=True, inputs_npz=str(npz)))
    assert (ok.status, ok.pass_bisect, len(found)) == ("ok", None, 1)
