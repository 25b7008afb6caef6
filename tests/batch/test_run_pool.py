"""batch/run_pool.py: run's modules on the worker pool, and each worker's start."""

from __future__ import annotations

import pytest

from tests.conftest import DATA


def _fake_progress(monkeypatch, tty):
    import sys

    import rich.progress

    events = []

    class Progress:
        def __init__(self, console, transient):
            events.append(("new", console.stderr, transient))

        def add_task(self, what, total):
            events.append(("task", what, total))
            return "bar"

        def start(self):
            events.append("start")

        def refresh(self):
            events.append("refresh")

        def advance(self, bar):
            events.append(("advance", bar))

        def stop(self):
            events.append("stop")

    monkeypatch.setattr(rich.progress, "Progress", Progress)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty, raising=False)
    return events


@pytest.mark.parametrize(("platform", "clients"), [("cpu", ["cpu"]), ("cuda", ["cpu", "cuda"])])
def test_worker_init_starts_the_cuda_client_only_for_a_cuda_run(platform, clients, monkeypatch):
    """A worker's init starts jaxlib's CPU client always, and the CUDA one only when the run's platform is cuda."""
    from mlirhlo_driver._native import jaxlib
    from mlirhlo_driver.batch import run_pool
    from mlirhlo_driver.execute.run import RunOptions

    started = []
    monkeypatch.setattr(jaxlib, "cpu_devices", lambda count=1: started.append("cpu"))
    monkeypatch.setattr(jaxlib, "cuda_devices", lambda: started.append("cuda"))
    run_pool.worker_init(RunOptions(platform=platform))
    assert started == clients


def test_jobs_0_with_a_scheduler_still_runs_on_the_cluster(cli, monkeypatch):
    """--scheduler sends the modules to the cluster whatever --jobs says, --jobs 0 included."""
    from mlirhlo_driver._native import cluster
    from mlirhlo_driver.batch import run_pool

    asked: list[str] = []

    def on_cluster(address, fn, context, tasks, *, timeout=None, init=None):
        asked.append(address)
        return ((i, run_pool.worker_task(context, t)) for i, t in enumerate(tasks))

    monkeypatch.setattr(cluster, "imap", on_cluster)
    result = cli("run", DATA / "erf_inv.mlir", "--jobs", "0", "--scheduler", "tcp://127.0.0.1:8786",
                 "--reference", "none")
    assert result.code == 0, result.out + result.err
    assert asked == ["tcp://127.0.0.1:8786"]


def test_execute_tasks_in_this_process_for_jobs_0_else_in_workers(monkeypatch):
    """--jobs 0 without a scheduler runs each task here, in order; otherwise the workers run them
    (jobs, timeout, scheduler passed on). On a terminal, several tasks draw a progress bar on
    stderr that advances once per report and is stopped, even when a run fails."""
    from mlirhlo_driver.batch import run_pool
    from mlirhlo_driver.batch.run_report import execute_tasks

    seen = []

    def run_task(t, options):
        seen.append(("here", t))
        if t == "boom":
            raise RuntimeError(t)
        return f"report {t}"

    def run_in_workers(tasks, options, *, jobs, timeout, on_done, scheduler):
        seen.append(("workers", tasks, jobs, timeout, scheduler))
        for t in tasks:
            on_done(t)
        return ["w"]

    monkeypatch.setattr(run_pool, "run_task", run_task)
    monkeypatch.setattr(run_pool, "run_in_workers", run_in_workers)
    events = _fake_progress(monkeypatch, tty=True)
    assert execute_tasks(["a", "b"], "opts", 0, None) == ["report a", "report b"]
    assert seen == [("here", "a"), ("here", "b")]
    assert events == [("new", True, True), ("task", "running modules", 2), "start", "refresh",
                      ("advance", "bar"), "refresh", ("advance", "bar"), "refresh", "stop"]
    seen.clear()
    events.clear()
    assert execute_tasks(["a"], "opts", 0, None) == ["report a"] and events == []
    assert execute_tasks(["a", "b", "c"], "opts", 2, 5.0) == ["w"]
    assert seen[-1] == ("workers", ["a", "b", "c"], 2, 5.0, None) and events.count(("advance", "bar")) == 3
    assert execute_tasks(["a"], "opts", 0, None, scheduler="dask:addr") == ["w"]
    assert seen[-1] == ("workers", ["a"], 0, None, "dask:addr")
    events.clear()
    with pytest.raises(RuntimeError):
        execute_tasks(["a", "boom"], "opts", 0, None)
    assert events[-1] == "stop"
    piped = _fake_progress(monkeypatch, tty=False)
    assert execute_tasks(["a", "b"], "opts", 0, None) == ["report a", "report b"] and piped == []
