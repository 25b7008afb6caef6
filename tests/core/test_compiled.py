"""core/compiled.py: a Compiled runs the executable it holds, and its plumbing stays private."""

from __future__ import annotations

import pytest

import mlirhlo_driver as mh
from mlirhlo_driver.xla import backend
from tests.conftest import DATA

ADD = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.fixture
def compiles(monkeypatch):
    made = []
    real = backend.compile
    monkeypatch.setattr(backend, "compile", lambda module, spec, name="module", **kw:
                        made.append((name, spec.on_device)) or real(module, spec, name, **kw))
    return made


def test_a_compiled_runs_the_executable_it_holds(tmp_path, compiles):
    """Stages and runs of one Compiled (CPU) are one XLA compile: its runs execute the
    executable its stages were read from, again and again, without compiling."""
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    c = mh.load(str(path)).compile(mh.Target.cpu(), cache=False)
    assert c.stage("hlo").startswith("HloModule")
    first = c.run(seed=1)
    second = c.run(seed=2, iterations=2)
    assert first.ok and second.ok and (first.outputs[0] == 2 * first.inputs[0]).all()
    assert [name for name, _ in compiles] == ["add"]
    fresh = mh.load(str(path)).compile(mh.Target.cpu(), cache=False)
    assert fresh.run(iterations=3).ok and fresh.run().ok
    assert len(compiles) == 2  # run first: one compile for running, kept


def test_run_spmd_runs_the_compiles_partitions():
    """run_spmd takes its partitions from the compile (num_partitions=), or the module's."""
    p = mh.load(str(DATA / "spmd" / "mlp_step_4way.before_optimizations.txt"))
    report = p.compile(mh.Target.cpu()).run_spmd()
    assert report.report.ok and report.devices.startswith("4 ")
    with pytest.raises(mh.DriverError):
        p.compile(mh.Target.cuda("h100_sxm")).run_spmd()


def test_the_plumbing_is_not_public():
    """What a Compiled shows a user: its stages, views, runs and diff; the plumbing the
    commands use to batch stages is private (JAX's Compiled shows its executable's results,
    not its compile's internals)."""
    public = {n for n in dir(mh.Compiled) if not n.startswith("_")}
    assert {"stage", "stages", "run", "run_spmd", "kernels", "summary", "diff", "write", "notes"} <= public
    assert not public & {"request", "produce", "keep", "entry", "cached", "cache_key", "instrumented"}, public
