"""Behaviour: ``run --bisect`` names the first op of ``@main`` whose value diverges,
wherever it is: the first op, the last one before ``return``, or one between.

The platform side runs with ``--xla_cpu_enable_fast_min_max=true`` and the
reference is XLA:CPU without it, so exactly the ``maximum`` ops fed a NaN
differ (fast min/max drops the NaN); every other op computes the same on both.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlirhlo_driver.execute import run
from mlirhlo_driver.inputs import loader as inputs

T = "tensor<8xf32>"

OPTIONS = run.RunOptions(platform="cpu", reference="cpu", bisect=True,
                         xla_flags=(("xla_cpu_enable_fast_min_max", True),))

# %x finite, %y all NaN: XLA:CPU's fast min/max drops a NaN second operand of maximum
NAN_Y = [np.arange(1, 9, dtype=np.float32), np.full(8, np.nan, np.float32)]


def _module(tmp_path, body: list[str], result: str, name: str = "m.mlir"):
    lines = [f"func.func @main(%x: {T}, %y: {T}) -> {T} {{", *[f"  {b}" for b in body],
             f"  return {result} : {T}", "}"]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path, inputs.load(str(path))[0].module


# name -> (body of @main, its result, line of the diverging op, how bisect prints that op)
CASES = {
    # the first op diverges (and everything after it, through the NaN it drops)
    "first": ([f"%m = stablehlo.maximum %x, %y : {T}", f"%a = stablehlo.add %m, %x : {T}",
               f"%r = stablehlo.multiply %a, %x : {T}"], "%r", 2, "%0 = stablehlo.maximum %arg0, %arg1"),
    # the last op before return is the only one that diverges
    "last": ([f"%a = stablehlo.add %x, %x : {T}", f"%b = stablehlo.multiply %a, %x : {T}",
              f"%m = stablehlo.maximum %b, %y : {T}"], "%m", 4, "%2 = stablehlo.maximum %1, %arg1"),
    # one between
    "middle": ([f"%a = stablehlo.add %x, %x : {T}", f"%m = stablehlo.maximum %a, %y : {T}",
                f"%r = stablehlo.add %m, %x : {T}"], "%r", 3, "%1 = stablehlo.maximum %0, %arg1"),
    # constants are not candidates: the first op after them is
    "first after a constant": ([f"%c = stablehlo.constant dense<2.0> : {T}",
                                f"%m = stablehlo.maximum %x, %y : {T}", f"%r = stablehlo.add %m, %c : {T}"],
                               "%r", 3, "%0 = stablehlo.maximum %arg0, %arg1"),
    # a single op: the first and the last
    "only": ([f"%m = stablehlo.maximum %x, %y : {T}"], "%m", 2, "%0 = stablehlo.maximum %arg0, %arg1"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bisect_names_the_diverging_op(tmp_path, case):
    body, result, line, op = CASES[case]
    path, module = _module(tmp_path, body, result)
    found = run.bisect(module, NAN_Y, OPTIONS)
    assert found is not None, case
    assert op in found.op, (case, found.op)
    assert found.location == f"{path}:{line}:8", (case, found.location)  # the module's ops carry its file
    assert found.mismatch.count == 8 and found.mismatch.label == "value"


def test_no_divergence_gives_none(tmp_path):
    body = [f"%m = stablehlo.maximum %x, %y : {T}", f"%r = stablehlo.add %m, %y : {T}"]
    _, module = _module(tmp_path, body, "%r")
    finite = [np.arange(8, dtype=np.float32), np.ones(8, np.float32)]
    assert run.bisect(module, finite, OPTIONS) is None


@pytest.mark.parametrize("case", ["first", "last"])
def test_run_module_reports_the_bisect(tmp_path, case):
    """Through run_module, as ``mlirhlo run --bisect --inputs`` does: a mismatch, then the op."""
    body, result, line, op = CASES[case]
    path, module = _module(tmp_path, body, result)
    npz = tmp_path / "in.npz"
    np.savez(npz, arg0=NAN_Y[0], arg1=NAN_Y[1])
    report = run.run_module(module, "m", str(path), run.RunOptions(**{**OPTIONS.__dict__, "inputs_npz": str(npz)}))
    assert report.status == "mismatch", report.message
    assert report.bisect is not None and op in report.bisect.op
    assert report.bisect.location == f"{path}:{line}:8"
