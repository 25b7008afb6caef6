"""mlirhlo watch (mlirhlo_driver/batch/watch.py, cli/watch.py): a warm opt, rebuilt on each change."""

from __future__ import annotations

import os

import pytest

from mlirhlo_driver.batch import watch
from tests.conftest import DATA
from tests.tpu.conftest import needs_libtpu

ADD = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

MATMUL_TANH = (DATA / "tpu" / "matmul_tanh.mlir").read_text()


def _snap(kernels=None, ptx=None, fusions=()):
    return watch.Snapshot(dict(kernels or {}), ptx, list(fusions))


def test_changes_name_kernels_added_removed_and_changed_and_ptx_lines():
    """Each difference one line: + and - kernels with their figures, ~ for changed registers,
    occupancy and spills, PTX line counts, fusions; an unchanged module says nothing."""
    a = {"m": _snap({"k1": (32, 1.0, 0), "k2": (16, 0.5, 0)}, 100, ["f.1", "f.2"]), "same": _snap(ptx=7)}
    b = {"m": _snap({"k1": (40, 0.75, 8), "k3": (8, 1.0, 0)}, 90, ["f.1", "f.3", "f.4"]), "same": _snap(ptx=7),
         "new": _snap()}
    assert watch.changes(a, b) == [
        "m: ~ kernel k1: regs 32 -> 40, occupancy 100% -> 75%, spills 0 -> 8 B",
        "m: - kernel k2",
        "m: + kernel k3 (8 regs 100%)",
        "m: PTX 100 -> 90 lines (-10)",
        "m: fusions 2 -> 3 (+2 -1)",
        "new: new module",
    ]
    assert watch.changes(b, b) == []


def test_changes_fit_one_screen():
    before = {"m": _snap({f"k{i}": (8, 1.0, 0) for i in range(50)})}
    lines = watch.changes(before, {"m": _snap()}, limit=10)
    assert len(lines) == 10 and lines[-1] == "... 41 more"


def test_a_watch_rebuilds_on_each_change_and_goes_on_after_a_failure(tmp_path, monkeypatch):
    """The first build and one per change; a broken module is a failed build, reported, and the
    next good build compares with the last good one; outputs are written as opt writes them."""
    from mlirhlo_driver import targets
    from mlirhlo_driver.batch.opt import OptOptions

    path = tmp_path / "m.mlir"
    path.write_text(ADD)
    out = tmp_path / "out"
    options = OptOptions(inputs=[str(path)], stage="hlo", dump_dir=str(out))
    builds: list[watch.Build] = []

    def changed():
        path.write_text("func.func @main() {\n  %0 = stablehlo.bogus\n}\n")
        yield {str(path)}
        path.write_text(ADD.replace("add", "multiply"))
        yield {str(path)}

    watch.watch(options, lambda: targets.resolve("cpu"), report=builds.append, changed=changed())
    assert [(b.number, b.reason, b.error is None) for b in builds] == [(0, "start", True), (1, "m.mlir", False),
                                                                         (2, "m.mlir", True)]
    assert "stablehlo.bogus" in builds[1].error or "bogus" in builds[1].error
    assert "multiply" in (out / "m.hlo").read_text()


TAGGER = """
import mlirhlo_driver
from jaxlib.mlir import ir


@mlirhlo_driver.register_pass("tag-watched", anchor="builtin.module")
def tag(module_op):
    with module_op.context:
        module_op.attributes["x.tag"] = ir.StringAttr.get("VALUE")
"""


def test_a_changed_plugin_makes_the_watchs_pass_set_again(tmp_path):
    """A plugin file that changes is loaded again for the next build (a new pass set, the watch's own);
    one that fails to load is a failed build and is tried again at the next change."""
    from mlirhlo_driver import targets
    from mlirhlo_driver.batch.opt import OptOptions

    path, plugin = tmp_path / "m.mlir", tmp_path / "tagger.py"
    path.write_text(ADD)
    plugin.write_text(TAGGER.replace("VALUE", "first"))
    out = tmp_path / "out"
    options = OptOptions(inputs=[str(path)], passes="tag-watched", dump_dir=str(out), load_pass_plugin=(str(plugin),))
    builds: list[watch.Build] = []
    seen: list[str] = []

    def changed():
        seen.append((out / "m.stablehlo.mlir").read_text())
        plugin.write_text("def broken(:\n")
        yield {str(plugin)}
        path.write_text(ADD.replace("add", "multiply"))
        plugin.write_text(TAGGER.replace("VALUE", "second"))
        yield {str(path)}  # the plugin is loaded again: it did not load last time
        seen.append((out / "m.stablehlo.mlir").read_text())

    watch.watch(options, lambda: targets.resolve(None), report=builds.append, changed=changed())
    assert [(b.number, b.error is None) for b in builds] == [(0, True), (1, False), (2, True)]
    assert "syntax error" in builds[1].error
    assert 'x.tag = "first"' in seen[0] and 'x.tag = "second"' in seen[1] and "multiply" in seen[1]


def test_watched_paths_are_every_file_a_build_reads(tmp_path):
    """Inputs (a directory's files too), the pipeline file, plugins, option files and the
    GPU spec file (a shipped one too)."""
    from mlirhlo_driver import targets
    from mlirhlo_driver.batch.opt import OptOptions

    (tmp_path / "d").mkdir()
    for name in ("a.mlir", "b.mlir"):
        (tmp_path / "d" / name).write_text(ADD)
    pipe, plugin = tmp_path / "p.pipeline", tmp_path / "plug.py"
    pipe.write_text("builtin.module(cse)\n")
    plugin.write_text("")
    options = OptOptions(inputs=[str(tmp_path / "d")], pipeline_file=str(pipe), load_pass_plugin=(str(plugin),))
    target = targets.resolve("cuda", gpu_spec="h100_sxm")
    paths = watch.watched_paths(options, target)
    assert paths[:2] == [str(tmp_path / "d" / "a.mlir"), str(tmp_path / "d" / "b.mlir")]
    assert str(pipe) in paths and str(plugin) in paths
    assert paths[-1].endswith("gpu_specs/h100_sxm.txtpb")


def test_a_save_before_the_watcher_starts_is_the_first_change(tmp_path):
    """The watcher starts when the changes are first read, after the first build: a save made
    meanwhile (during that build) is reported first, not lost; an older file is not."""
    import threading
    import time

    saved, old = tmp_path / "saved.mlir", tmp_path / "old.mlir"
    old.write_text(ADD)
    os.utime(old, ns=(time.time_ns() - 10**9,) * 2)  # written before the build began
    since = time.time_ns()
    saved.write_text(ADD)  # the save during the build
    stop = threading.Event()
    guard = threading.Timer(20, stop.set)  # a lost save would wait for ever: end it, and fail
    guard.start()
    changes = watch.file_changes([str(saved), str(old)], stop=stop, since_ns=since)
    assert next(changes, None) == {str(saved)}
    old.write_text(ADD.replace("add", "multiply"))  # a save once it watches: an event
    assert next(changes, None) == {str(old)}
    stop.set()
    guard.cancel()
    assert list(changes) == []


def test_without_a_start_time_only_events_are_changes(tmp_path):
    import threading

    path = tmp_path / "m.mlir"
    path.write_text(ADD)
    stop = threading.Event()
    guard = threading.Timer(20, stop.set)
    guard.start()
    changes = watch.file_changes([str(path)], stop=stop)
    threading.Timer(0.5, lambda: path.write_text(ADD.replace("add", "multiply"))).start()
    assert next(changes, None) == {str(path)}
    stop.set()
    guard.cancel()
    assert list(changes) == []


def test_the_output_is_written_before_the_summary_is_made(tmp_path, monkeypatch):
    """A save's new output does not wait for the figures the change summary reads (kernel
    rows run ptxas): they are made from the same compile once the outputs are written."""
    from mlirhlo_driver import targets
    from mlirhlo_driver.batch.opt import OptOptions
    from mlirhlo_driver.core import compiled as core_compiled

    path, out = tmp_path / "m.mlir", tmp_path / "m.hlo"
    path.write_text(ADD)
    seen = []
    real = core_compiled.Compiled.stage

    def stage(self, name, *a, **k):
        if name in watch.SUMMARY_STAGES["cpu"]:
            seen.append((name, out.exists()))
        return real(self, name, *a, **k)

    monkeypatch.setattr(core_compiled.Compiled, "stage", stage)
    builds: list[watch.Build] = []
    watch.watch(OptOptions(inputs=[str(path)], stage="hlo", output=str(out)), lambda: targets.resolve("cpu"),
                report=builds.append, changed=iter([]))
    assert [b.error for b in builds] == [None]
    assert seen == [("summary", True)]


@needs_libtpu
@pytest.mark.xdist_group("tpu")  # one worker keeps the TPU process for all
def test_a_tpu_watch_rebuilds_and_names_the_fusions_that_changed(tmp_path):
    """A device-less v5e compile per build, in the same TPU process; the summary names the
    fusions that changed (tanh's for exp's), as on CPU; the output is the new module's."""
    from mlirhlo_driver import targets
    from mlirhlo_driver.batch.opt import OptOptions

    path, out = tmp_path / "m.mlir", tmp_path / "m.hlo"
    path.write_text(MATMUL_TANH)
    builds: list[watch.Build] = []

    def changed():
        path.write_text(MATMUL_TANH.replace("stablehlo.tanh", "stablehlo.exponential"))
        yield {str(path)}

    watch.watch(OptOptions(inputs=[str(path)], stage="hlo", output=str(out)),
                lambda: targets.resolve("tpu", tpu_topology="v5e:2x2"), report=builds.append, changed=changed())
    assert [(b.number, b.error) for b in builds] == [(0, None), (1, None)]
    assert builds[1].lines == ["m: fusions 1 -> 1 (+1 -1)"]
    assert "exponential" in out.read_text() and "tanh" not in out.read_text()
