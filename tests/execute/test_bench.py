"""execute/bench.py, measuring passes, with the pipeline runs and XLA compiles replaced by
fakes: what is counted, in which order, and what the user is told.
"""

from __future__ import annotations

import signal
import threading
from types import SimpleNamespace

import numpy as np
import pytest

import mlirhlo_driver
from mlirhlo_driver.execute import bench
from tests.conftest import DATA

# ------------------------------------------------------------------ helpers


def _fake_pipeline(monkeypatch, timings: list[list[tuple[str, int, float]]], total_s: float = 9.0):
    """pipeline.run and emit.clone replaced: run ``k`` returns ``timings[k]`` (name, depth,
    wall seconds) as its timing rows; what each run was given is recorded in the list returned."""
    from mlirhlo_driver.ir import emit
    from mlirhlo_driver.mlir import pipeline

    calls: list[tuple] = []
    runs = iter(timings)

    def run(module, root, instrumentation=None):
        calls.append((module, root, instrumentation))
        rows = [SimpleNamespace(name=n, depth=d, wall_s=s) for n, d, s in next(runs)]
        return SimpleNamespace(timing=rows, total_s=total_s)

    monkeypatch.setattr(pipeline, "run", run)
    monkeypatch.setattr(emit, "clone", lambda m: ("copy", m))
    return calls


def _root(name: str) -> SimpleNamespace:
    return SimpleNamespace(render=lambda: name)


# ------------------------------------------------------------------ XLA's pipeline


def _dump(key: str, after: str, pipeline: str = "simp") -> SimpleNamespace:
    return SimpleNamespace(key=key, pipeline=pipeline, after=after)


# ------------------------------------------------------------------ PassStat, PipelineBench


def test_pass_stat_row_has_median_min_max_and_run_count():
    """One pass's row: its median, fastest and slowest time over the runs, and how many runs."""
    stat = bench.PassStat("cse", 2, [4.0, 1.0, 3.0, 10.0])
    assert stat.median_ms == 3.5
    assert stat.spread_ms == (1.0, 10.0)
    assert stat.row() == {"pass": "cse", "depth": 2, "median_ms": 3.5, "min_ms": 1.0, "max_ms": 10.0, "runs": 4}


def test_pipeline_bench_dict_has_totals_and_pass_rows_in_order():
    """A pipeline's JSON: its spec, repeat count, total median/min/max and its passes' rows in order."""
    res = bench.PipelineBench("builtin.module(cse)", [bench.PassStat("a", 1, [2.0]), bench.PassStat("b", 3, [5.0])],
                              [7.0, 3.0, 5.0])
    assert res.median_total_ms == 5.0
    assert res.to_dict() == {
        "pipeline": "builtin.module(cse)", "repeats": 3, "total_median_ms": 5.0, "total_min_ms": 3.0,
        "total_max_ms": 7.0,
        "passes": [{"pass": "a", "depth": 1, "median_ms": 2.0, "min_ms": 2.0, "max_ms": 2.0, "runs": 1},
                   {"pass": "b", "depth": 3, "median_ms": 5.0, "min_ms": 5.0, "max_ms": 5.0, "runs": 1}]}


# ------------------------------------------------------------------ bench_pipelines


def test_one_run_times_a_fresh_copy_and_takes_the_total_row_apart(monkeypatch):
    """Each run times a clone of the module with MLIR's pass timing on; the 'Total' row is the
    run's time (in ms) and not a pass."""
    calls = _fake_pipeline(monkeypatch, [[("cse", 1, 0.25), ("Total", 0, 0.5), ("canonicalize", 2, 0.125)]])
    rows, total = bench._one_run("m", "root")
    assert [(r.name, r.depth) for r in rows] == [("cse", 1), ("canonicalize", 2)]
    assert total == 500.0
    [(module, root, instr)] = calls
    assert module == ("copy", "m") and root == "root"
    assert instr.timing is True


def test_one_run_without_a_total_row_takes_the_pipeline_s_total(monkeypatch):
    """No 'Total' row in MLIR's timing: the run's time is the pipeline result's own total."""
    _fake_pipeline(monkeypatch, [[("cse", 1, 0.25)]], total_s=0.75)
    rows, total = bench._one_run("m", "root")
    assert [r.name for r in rows] == ["cse"]
    assert total == 750.0


def test_bench_pipelines_warms_up_once_by_default_then_interleaves(monkeypatch):
    """Default: one warm-up run of each pipeline (not counted), then A B A B ... ``repeats``
    times; each pass's times are in ms, in the order the runs went."""
    run_rows = [[("x", 1, 9.0), ("Total", 0, 9.0)],                        # warm-up A
                [("y", 1, 9.0), ("Total", 0, 9.0)],                        # warm-up B
                [("x", 1, 0.001), ("Total", 0, 0.002)],                    # A 1
                [("y", 1, 0.010), ("z", 2, 0.001), ("Total", 0, 0.020)],   # B 1
                [("x", 1, 0.003), ("Total", 0, 0.004)],                    # A 2
                [("y", 1, 0.030), ("z", 2, 0.002), ("Total", 0, 0.040)]]   # B 2
    calls = _fake_pipeline(monkeypatch, run_rows)
    a, b = bench.bench_pipelines("m", [_root("A"), _root("B")], repeats=2)
    assert [c[1].render() for c in calls] == ["A", "B"] * 3
    assert (a.spec, b.spec) == ("A", "B")
    assert a.totals_ms == pytest.approx([2.0, 4.0]) and b.totals_ms == pytest.approx([20.0, 40.0])
    assert [(p.name, p.depth, p.times_ms) for p in a.passes] == [("x", 1, pytest.approx([1.0, 3.0]))]
    assert [(p.name, p.depth, p.times_ms) for p in b.passes] == [
        ("y", 1, pytest.approx([10.0, 30.0])), ("z", 2, pytest.approx([1.0, 2.0]))]


def test_bench_pipelines_without_warm_up_counts_every_run(monkeypatch):
    """``warmup=0``: the first run is counted; the pass list is the first run's, later runs add times."""
    calls = _fake_pipeline(monkeypatch, [[("x", 1, 0.001), ("Total", 0, 0.001)],
                                         [("x", 1, 0.002), ("Total", 0, 0.002)],
                                         [("x", 1, 0.004), ("Total", 0, 0.004)]])
    [res] = bench.bench_pipelines("m", [_root("A")], repeats=3, warmup=0)
    assert len(calls) == 3
    assert res.totals_ms == pytest.approx([1.0, 2.0, 4.0])
    assert [(p.name, p.times_ms) for p in res.passes] == [("x", pytest.approx([1.0, 2.0, 4.0]))]
    assert res.to_dict()["passes"][0]["runs"] == 3


def test_accumulate_takes_the_pass_list_from_the_first_run_only():
    """The first run names the passes; a later run's rows add times to them by position."""
    stats: list[bench.PassStat] = []
    bench._accumulate(stats, [SimpleNamespace(name="a", depth=1, wall_s=0.001)])
    bench._accumulate(stats, [SimpleNamespace(name="a", depth=1, wall_s=0.002),
                              SimpleNamespace(name="b", depth=1, wall_s=0.005)])
    assert [(s.name, s.depth, s.times_ms) for s in stats] == [("a", 1, pytest.approx([1.0, 2.0]))]


# ------------------------------------------------------------------ Ctrl-C


def test_a_first_ctrl_c_stops_between_runs_and_a_second_interrupts_at_once():
    """On the main thread: a first SIGINT only makes ``check()`` raise KeyboardInterrupt; after
    it, SIGINT is Python's default (KeyboardInterrupt at once); the old handler is back after."""
    before = signal.getsignal(signal.SIGINT)
    with bench.interruptible() as check:
        handler = signal.getsignal(signal.SIGINT)
        assert handler is not before and callable(handler)
        check()  # no Ctrl-C yet
        handler(signal.SIGINT, None)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            check()
    assert signal.getsignal(signal.SIGINT) is before


def test_off_the_main_thread_check_never_raises_and_no_handler_is_set():
    """Off the main thread nothing is installed (Python forbids it) and ``check()`` does nothing."""
    before = signal.getsignal(signal.SIGINT)
    seen: list = []

    def work():
        with bench.interruptible() as check:
            seen.append(signal.getsignal(signal.SIGINT))
            seen.append(check())

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert seen == [before, None]


def test_bench_pipelines_stops_after_the_run_in_which_ctrl_c_came(monkeypatch):
    """A Ctrl-C during a run ends the benchmark with KeyboardInterrupt right after that run."""
    calls = _fake_pipeline(monkeypatch, [[("x", 1, 0.001), ("Total", 0, 0.001)]] * 5)
    from mlirhlo_driver.mlir import pipeline

    real_run = pipeline.run

    def run(module, root, instrumentation=None):
        out = real_run(module, root, instrumentation)
        if len(calls) == 2:
            signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
        return out

    monkeypatch.setattr(pipeline, "run", run)
    with pytest.raises(KeyboardInterrupt):
        bench.bench_pipelines("m", [_root("A")], repeats=4)
    assert len(calls) == 2


def test_dump_intervals_are_the_ms_between_consecutive_dumps_named_by_the_later_one(monkeypatch):
    """Compile 0 makes one row per interval (pipeline, the pass that ended it), in ns -> ms;
    later compiles add their intervals to those rows, and drop any beyond them."""
    from mlirhlo_driver.xla import backend as xla_backend

    dumps = {"first": [_dump("a", "start"), _dump("b", "algsimp"), _dump("c", "dce", "layout")],
             "second": [_dump("a", "start"), _dump("b", "algsimp"), _dump("c", "dce", "layout"),
                        _dump("d", "cse", "layout")],
             "third": [_dump("a", "start"), _dump("b", "algsimp")]}
    monkeypatch.setattr(xla_backend, "pass_dumps", lambda art: dumps[art.name])
    rows: list[bench.XlaPassTime] = []
    bench._add_dump_intervals(rows, SimpleNamespace(name="first", mtimes_ns={"a": 1_000_000, "b": 3_500_000,
                                                                                "c": 4_000_000}), 0)
    bench._add_dump_intervals(rows, SimpleNamespace(name="second", mtimes_ns={"a": 0, "b": 1_000_000,
                                                                                 "c": 4_000_000, "d": 9_000_000}), 1)
    bench._add_dump_intervals(rows, SimpleNamespace(name="third", mtimes_ns={"a": 0, "b": 7_000_000}), 2)
    assert [(r.pipeline, r.ending_with, r.times_ms) for r in rows] == [
        ("simp", "algsimp", [2.5, 1.0, 7.0]), ("layout", "dce", [0.5, 3.0])]


def test_a_single_dump_has_no_intervals(monkeypatch):
    """One dump (or none): nothing to measure, no rows."""
    from mlirhlo_driver.xla import backend as xla_backend

    monkeypatch.setattr(xla_backend, "pass_dumps", lambda art: [_dump("a", "start")])
    rows: list[bench.XlaPassTime] = []
    bench._add_dump_intervals(rows, SimpleNamespace(mtimes_ns={"a": 5}), 0)
    assert rows == []


def test_xla_bench_dumps_every_pass_as_hlo_text_and_keeps_the_other_flags(monkeypatch):
    """Each compile adds --xla_dump_hlo_pass_re=.* to the user's flags and asks for HLO text
    dumps only; there are ``repeats`` compiles, each timed."""
    from mlirhlo_driver.stages import base as stages
    from mlirhlo_driver.xla import backend as xla_backend
    from mlirhlo_driver.xla.platforms import CpuTarget

    seen: list = []

    def compile(module, spec, name):
        seen.append((module, name, spec.target.xla_flags, spec.pass_dump_re, spec.dumps))
        return SimpleNamespace(art=SimpleNamespace(mtimes_ns={}))

    monkeypatch.setattr(xla_backend, "compile", compile)
    monkeypatch.setattr(xla_backend, "declared_partitions", lambda module: 1)
    monkeypatch.setattr(xla_backend, "pass_dumps", lambda art: [])
    options = stages.StageOptions(CpuTarget(xla_flags=(("xla_cpu_enable_fast_math", True),)))
    rows, compiles = bench.bench_xla_pipeline("mod", "m", options, repeats=3)
    assert rows == [] and len(compiles) == 3 and all(c >= 0 for c in compiles)
    assert seen == [("mod", "m", (("xla_cpu_enable_fast_math", True),), ".*", (xla_backend.HLO_TEXT,))] * 3


def test_pipeline_bench_reports_milliseconds(monkeypatch):
    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.ir import emit
    from mlirhlo_driver.mlir import pipeline

    rows = [SimpleNamespace(name="canonicalize", depth=1, wall_s=0.002),
            SimpleNamespace(name="cse", depth=1, wall_s=0.0005),
            SimpleNamespace(name="Total", depth=0, wall_s=0.003)]
    monkeypatch.setattr(pipeline, "run", lambda *a, **k: SimpleNamespace(timing=rows, total_s=0.004))
    monkeypatch.setattr(emit, "clone", lambda m: m)
    [res] = bench.bench_pipelines(object(), [SimpleNamespace(render=lambda: "p")], repeats=2, warmup=0)
    d = res.to_dict()
    assert d["total_median_ms"] == pytest.approx(3.0)
    assert [(p["pass"], p["median_ms"], p["runs"]) for p in d["passes"]] == \
        [("canonicalize", pytest.approx(2.0), 2), ("cse", pytest.approx(0.5), 2)]


def _cpu():
    from mlirhlo_driver.xla.platforms import CpuTarget

    return CpuTarget()


def test_xla_pipeline_bench_reports_milliseconds(monkeypatch):
    import time

    from mlirhlo_driver import timing
    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.stages import base as stages
    from mlirhlo_driver.xla import backend as xla_backend

    clock = iter(np.arange(100.0, 200.0, 0.25))  # every perf_counter() call: +250 ms
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(clock)))
    monkeypatch.setattr(timing, "perf_counter", time.perf_counter)  # the one clock, read there too
    dumps = [SimpleNamespace(key=k, pipeline="simplification", after=a)
             for k, a in (("a", "start"), ("b", "algsimp"), ("c", "dce"))]
    art = SimpleNamespace(mtimes_ns={"a": 0, "b": 2_000_000, "c": 5_000_000})
    monkeypatch.setattr(xla_backend, "compile", lambda *a, **k: SimpleNamespace(art=art))
    monkeypatch.setattr(xla_backend, "declared_partitions", lambda module: 1)
    monkeypatch.setattr(xla_backend, "pass_dumps", lambda a: dumps)
    rows, compiles = bench.bench_xla_pipeline(object(), "m", stages.StageOptions(_cpu()), repeats=2)
    assert compiles == [pytest.approx(250.0)] * 2
    assert [(r.ending_with, r.times_ms) for r in rows] == [("algsimp", [2.0, 2.0]), ("dce", [3.0, 3.0])]


def test_xla_pipeline_bench_with_more_dumps_in_a_later_compile(monkeypatch):
    # Rows come from the first compile; a later one's extra intervals are dropped, not an error.
    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.stages import base as stages
    from mlirhlo_driver.xla import backend as xla_backend

    def dumps(n):
        return [SimpleNamespace(key=str(k), pipeline="p", after=f"pass{k}") for k in range(n)]

    runs = iter([dumps(2), dumps(3)])
    art = SimpleNamespace(mtimes_ns={"0": 0, "1": 1_000_000, "2": 3_000_000})
    monkeypatch.setattr(xla_backend, "compile", lambda *a, **k: SimpleNamespace(art=art))
    monkeypatch.setattr(xla_backend, "declared_partitions", lambda module: 1)
    monkeypatch.setattr(xla_backend, "pass_dumps", lambda a: next(runs))
    rows, _ = bench.bench_xla_pipeline(object(), "m", stages.StageOptions(_cpu()), repeats=2)
    assert [(r.ending_with, r.times_ms) for r in rows] == [("pass1", [1.0, 1.0])]


@pytest.mark.slow
def test_bench_runs_off_the_main_thread_and_keeps_the_sigint_handler():
    """A notebook or server thread may benchmark: only the main thread can install the
    Ctrl-C handler, so elsewhere the runs go on without it; on the main thread the
    handler is in place while the runs go and the previous one comes back after."""
    import signal
    import threading

    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.mlir import pipeline

    module = mlirhlo_driver.load(str(DATA / "chlo_special.mlir")).module
    root = pipeline.resolve(passes="cse")
    out: list = []
    worker = threading.Thread(target=lambda: out.append(bench.bench_pipelines(module, [root], 2)))
    worker.start()
    worker.join(120)
    assert len(out) == 1 and len(out[0][0].totals_ms) == 2
    before = signal.getsignal(signal.SIGINT)
    with bench.interruptible() as check:
        assert signal.getsignal(signal.SIGINT) is not before
        check()  # no Ctrl-C yet: nothing raised
    assert signal.getsignal(signal.SIGINT) is before
