"""_native/pool.py, the worker pool (pool.imap, behind ``--jobs N --timeout S``).

Tasks that crash (a signal, an abort, an exit), time out (slow, or hung for
good, with SIGTERM ignored and a child of their own), or raise, alone and
mixed, with fewer workers than tasks:

* every task gives exactly one row, with its own status; none is lost;
* a worker that crashed or was killed for a timeout is replaced, so the task
  after a hanging one runs (it is not reported CRASHED); a task that raised
  keeps its worker;
* closing the results early (``--fail-fast``) stops the workers at once.

The workers run TASKS' ``behave``. Timeouts are 1 s.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from mlirhlo_driver._native import cluster, pool
from tests.conftest import REPO, assert_mentions, processes_gone

TIMEOUT = 1.0

# The task functions, as a module the workers import (written out by a fixture: a worker
# that imported this test file would import pytest too, and start slower).
TASKS = '''
import os, signal, subprocess, sys, time
from pathlib import Path


def behave(context, task):
    """(kind, value): what the task does in its worker."""
    kind, value = task
    if kind == "ok":
        return value, os.getpid()
    if kind == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "abort":
        os.abort()
    if kind == "exit":
        os._exit(3)
    if kind == "exit0":  # an exit that says all went well, in the middle of a task
        os._exit(0)
    if kind == "rtsig":  # a signal without a name of its own (SIGRTMIN + 6), deadly by default
        os.kill(os.getpid(), signal.SIGRTMIN + 6)
        time.sleep(600)
    if kind == "raise":
        raise RuntimeError("boom")
    if kind == "slow":  # would finish, after the timeout
        time.sleep(30)
        return value, os.getpid()
    if kind == "hang":  # never finishes, ignores SIGTERM, and has a child that would outlive it
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path(context, f"hang-{value}.pids").write_text(f"{os.getpid()} {child.pid}")
        while True:
            time.sleep(600)
    raise ValueError(kind)


def slow_init(context):
    time.sleep(1.5)  # longer than the tasks' timeout: jaxlib's start on a busy machine


def hung_init(context):
    while True:
        time.sleep(600)


def dying_init(context):
    os._exit(4)


def slow_exit_init(context):
    import atexit

    def leave():  # a TPU process and folders to end at exit, slowly: when it began and ended
        stem = os.path.join(context, f"exit-{os.getpid()}")
        with open(stem + ".start", "w") as f:
            f.write(repr(time.time()))
        time.sleep(1.0)
        with open(stem + ".end", "w") as f:
            f.write(repr(time.time()))

    atexit.register(leave)


def module_task(context, task):
    """run_pool's task, misbehaving as its module's name says; a report-like row (execute/run.py's
    ModuleReport would make the worker import numpy)."""
    from types import SimpleNamespace

    if task.name != "ok":
        behave(context, (task.name, task.index))
    return SimpleNamespace(name=task.name, source=task.source, status="ok", message=str(os.getpid()))
'''

FN = "behaviour_pool_tasks:behave"

# kind -> (status, what its message names); the exact words: test_lost_task_messages_exactly
LOST = {
    "segv": ("crashed", ("SIGSEGV", "native code")),
    "abort": ("crashed", ("SIGABRT", "native code")),
    "exit": ("crashed", ("status 3",)),
    "slow": ("timeout", (f"{TIMEOUT:g} s",)),
    "hang": ("timeout", (f"{TIMEOUT:g} s",)),
    "raise": ("failed", ("RuntimeError", "boom")),
}

KILLS_ITS_WORKER = {"segv", "abort", "exit", "slow", "hang"}


@pytest.fixture(scope="module")
def _tasks_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("pool-tasks")
    (d / "behaviour_pool_tasks.py").write_text(TASKS)
    return d


@pytest.fixture(autouse=True)
def _workers_find_the_tasks(monkeypatch, _tasks_dir):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(_tasks_dir), os.environ.get("PYTHONPATH")) if p))


def _run(kinds: list[str], jobs: int, tmp_path) -> dict[int, object]:
    tasks = [(k, i) for i, k in enumerate(kinds)]
    rows: dict[int, object] = {}
    for index, result in pool.imap(FN, str(tmp_path), tasks, jobs=jobs, timeout=TIMEOUT):
        assert index not in rows, f"task {index} reported twice"
        rows[index] = result
    assert sorted(rows) == list(range(len(kinds))), "a task without a row"
    return rows


def _check(kinds: list[str], rows: dict[int, object], jobs: int, tmp_path) -> None:
    for i, kind in enumerate(kinds):
        got = rows[i]
        if kind == "ok":
            assert not isinstance(got, pool.Lost) and got[0] == i, (i, kinds, got)
        else:
            assert isinstance(got, pool.Lost), (i, kind, got)
            status, facts = LOST[kind]
            assert got.status == status, (i, kind, got)
            assert_mentions(got.message, *facts)
    # a hung task's worker and the child it started are gone
    for i, kind in enumerate(kinds):
        if kind == "hang":
            pids = [int(p) for p in (tmp_path / f"hang-{i}.pids").read_text().split()]
            assert processes_gone(pids), (kind, pids)
    if jobs == 1:
        # one worker at a time: it changes after each task that killed it, and only then
        pids = [(i, rows[i][1]) for i, k in enumerate(kinds) if k == "ok"]
        for (i, a), (j, b) in zip(pids, pids[1:]):
            killed = any(k in KILLS_ITS_WORKER for k in kinds[i + 1:j])
            assert (a != b) == killed, (kinds, i, j, a, b)


MIXED = ["ok", "segv", "hang", "ok", "exit", "raise", "slow", "ok", "abort", "ok", "ok"]


def loaded_modules(context, task):
    """A pool task (run in a worker): which modules the worker has imported."""
    import sys

    return sorted(m for m in sys.modules if m.startswith(("mlirhlo_driver", "typer", "click", "rich", "jax")))


def test_pool_workers_start_without_the_cli(monkeypatch):

    from mlirhlo_driver._native import pool

    monkeypatch.setenv("PYTHONPATH", str(REPO))
    results = dict(pool.imap(f"{__name__}:loaded_modules", None, ["a", "b"], jobs=1))
    assert results[0] == results[1]  # one worker, reused
    assert "mlirhlo_driver" in results[0]
    # Only what the task function needs: no CLI (typer, click, rich), no jax before a task asks.
    assert not [m for m in results[0] if m.startswith(("mlirhlo_driver.cli.mlirhlo", "typer", "click", "rich", "jax"))]


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(LOST))
def test_each_failure_alone_then_the_next_tasks_run(tmp_path, kind):
    kinds = ["ok", kind, "ok", "ok"]
    _check(kinds, _run(kinds, 1, tmp_path), 1, tmp_path)


@pytest.mark.slow
def test_the_task_after_a_hang_runs(tmp_path):
    """--jobs 1: the module after a hanging one runs on a fresh worker, not CRASHED."""
    kinds = ["hang", "ok"]
    rows = _run(kinds, 1, tmp_path)
    assert rows[0].status == "timeout"
    assert not isinstance(rows[1], pool.Lost), rows[1]
    _check(kinds, rows, 1, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_mixed_with_fewer_workers_than_tasks(tmp_path, jobs):
    _check(MIXED, _run(MIXED, jobs, tmp_path), jobs, tmp_path)


@pytest.mark.slow
def test_failures_back_to_back(tmp_path):
    kinds = ["hang", "segv", "slow", "exit", "ok"]
    _check(kinds, _run(kinds, 1, tmp_path), 1, tmp_path)


@pytest.mark.slow
def test_results_come_as_they_finish(tmp_path):
    """Two workers: the quick tasks are not held back behind a hanging one (3 s here: the
    other worker may start that much later on a busy machine)."""
    kinds = ["hang", "ok", "ok", "ok"]
    order = [i for i, _ in pool.imap(FN, str(tmp_path), [(k, i) for i, k in enumerate(kinds)],
                                     jobs=2, timeout=3.0)]
    assert order == [1, 2, 3, 0]


def test_closing_early_stops_the_workers(tmp_path):
    kinds = ["ok", "hang", "hang"]
    results = pool.imap(FN, str(tmp_path), [(k, i) for i, k in enumerate(kinds)], jobs=3, timeout=60)
    index, first = next(results)
    assert index == 0 and first[0] == 0
    deadline = time.monotonic() + 30
    while not all((tmp_path / f"hang-{i}.pids").exists() for i in (1, 2)) and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    results.close()
    assert time.monotonic() - started < 5
    for i in (1, 2):
        pids = [int(p) for p in (tmp_path / f"hang-{i}.pids").read_text().split()]
        assert processes_gone(pids), pids


# ------------------------------------------------ the timeout counts from a worker's start

@pytest.mark.slow
def test_a_slow_worker_start_is_not_the_tasks_time(tmp_path):
    """A worker's imports and init (jaxlib: seconds) do not count against its first task:
    with --timeout 1, tasks of 1 ms on workers that take 1.5 s to start all run."""
    kinds = ["ok", "hang", "ok", "ok"]
    rows = {}
    for index, result in pool.imap(FN, str(tmp_path), [(k, i) for i, k in enumerate(kinds)], jobs=2,
                                   timeout=TIMEOUT, init="behaviour_pool_tasks:slow_init"):
        rows[index] = result
    _check(kinds, rows, 2, tmp_path)


@pytest.mark.slow
def test_a_worker_that_never_starts_times_out(tmp_path, monkeypatch):
    monkeypatch.setattr(pool, "STARTUP_TIMEOUT", 0.5)
    rows = dict(pool.imap(FN, str(tmp_path), [("ok", 0), ("ok", 1)], jobs=1, timeout=0.5,
                          init="behaviour_pool_tasks:hung_init"))
    assert [rows[i].status for i in (0, 1)] == ["timeout", "timeout"]
    assert_mentions(rows[0].message, "did not start", "1 s")
    # the cluster's Worker.call waits as long, and says the same
    w = pool.Worker(FN, str(tmp_path), "behaviour_pool_tasks:hung_init")
    try:
        assert w.call(("ok", 2), timeout=0.5) == pool.Lost("timeout", rows[0].message)
    finally:
        w.close()
    assert not w.alive


def test_a_worker_that_dies_while_starting_is_a_crash_not_a_wait(tmp_path):
    """Its init ends the process: each task it was given is a crashed row at once (workers are
    replaced while tasks are left), and the cluster's Worker.call says the same."""
    rows = dict(pool.imap(FN, str(tmp_path), [("ok", 0), ("ok", 1)], jobs=1, timeout=30,
                          init="behaviour_pool_tasks:dying_init"))
    assert [rows[i].status for i in (0, 1)] == ["crashed", "crashed"]
    w = pool.Worker(FN, str(tmp_path), "behaviour_pool_tasks:dying_init")
    try:
        lost = w.call(("ok", 2), timeout=30)
    finally:
        w.close()
    assert lost.status == "crashed" and lost.message == rows[0].message, (lost, rows[0])


@pytest.mark.slow
def test_worker_call_as_the_cluster_uses_it(tmp_path):
    """_native/cluster.py runs tasks through Worker.call, one worker per Dask thread."""
    w = pool.Worker(FN, str(tmp_path), "behaviour_pool_tasks:slow_init")
    try:
        value, pid = w.call(("ok", 7), timeout=TIMEOUT)
        assert value == 7 and pid == w.process.pid
        assert w.call(("ok", 8), timeout=TIMEOUT)[0] == 8
        lost = w.call(("slow", 9), timeout=TIMEOUT)
        assert lost == pool.Lost("timeout", f"no result within {TIMEOUT:g} s") and not w.alive
    finally:
        w.close()


@pytest.mark.slow
def test_worker_call_without_a_timeout(tmp_path):
    """The cluster calls with timeout None when no --timeout is given: a fresh worker's
    start and its task are then waited for as long as they take."""
    w = pool.Worker(FN, str(tmp_path), "behaviour_pool_tasks:slow_init")
    try:
        value, pid = w.call(("ok", 3))
        assert value == 3 and pid == w.process.pid and w.alive
        assert w.call(("ok", 4), None)[0] == 4
    finally:
        w.close()


def test_a_worker_removes_only_its_own_log_folder_and_never_fails_to(tmp_path):
    """Without a log_dir a worker makes its own and removes it at close, even when something
    (a /tmp cleaner) took it first; a given log_dir stays."""
    import shutil

    own = pool.Worker(FN, str(tmp_path))
    assert own.call(("ok", 1), timeout=TIMEOUT)[0] == 1
    folder = own.log_dir
    shutil.rmtree(folder)
    own.close()
    assert not os.path.exists(folder)
    given = tmp_path / "logs"
    given.mkdir()
    w = pool.Worker(FN, str(tmp_path), log_dir=str(given))
    assert w.call(("ok", 2), timeout=TIMEOUT)[0] == 2
    w.close()
    assert given.is_dir()


# --------------------------------------------------- run's rows (run_pool), from the pool

@pytest.mark.slow
def test_run_rows_in_order_whatever_the_workers_did(tmp_path, monkeypatch):
    from mlirhlo_driver.batch import run_pool

    names = ["ok", "hang", "ok", "segv", "ok"]
    tasks = [run_pool.Task(i, f"{n}{i}.mlir", n, None, False, 0, None) for i, n in enumerate(names)]

    def imap_anywhere(fn, context, tasks, *, jobs, timeout=None, init=None, scheduler=None):
        assert fn == "mlirhlo_driver.batch.run_pool:worker_task"
        return pool.imap("behaviour_pool_tasks:module_task", context, tasks, jobs=jobs, timeout=timeout)

    monkeypatch.setattr(cluster, "imap_anywhere", imap_anywhere)
    done = []
    reports = run_pool.run_in_workers(tasks, str(tmp_path), jobs=1, timeout=TIMEOUT, on_done=done.append)
    assert [(r.name, r.source, r.status) for r in reports] == [
        ("ok", "ok0.mlir", "ok"), ("hang", "hang1.mlir", "timeout"), ("ok", "ok2.mlir", "ok"),
        ("segv", "segv3.mlir", "crashed"), ("ok", "ok4.mlir", "ok")]
    assert_mentions(reports[1].message, f"{TIMEOUT:g} s")
    assert "SIGSEGV" in reports[3].message
    assert len(done) == 5 and sorted(r.source for r in done) == sorted(r.source for r in reports)


def test_take_ready_is_false_for_a_worker_that_died_before_it_was_ready(tmp_path):
    """Worker.take_ready answers a bool: False (not some other falsy value) when the worker died
    during its init, True once a worker says it is ready."""
    from multiprocessing.connection import wait

    dead = pool.Worker(FN, str(tmp_path), "behaviour_pool_tasks:dying_init")
    try:
        assert wait([dead.conn], timeout=60)
        assert dead.take_ready() is False
        assert not dead.ready
    finally:
        dead.close()
    live = pool.Worker(FN, str(tmp_path))
    try:
        assert wait([live.conn], timeout=60)
        assert live.take_ready() is True
        assert live.ready
    finally:
        live.close()


@pytest.mark.golden
@pytest.mark.parametrize("kind, init, lost", [
    ("segv", None, pool.Lost("crashed", "worker killed by SIGSEGV (a crash in native code)")),
    ("abort", None, pool.Lost("crashed", "worker killed by SIGABRT (a crash in native code)")),
    ("exit", None, pool.Lost("crashed", "worker exited with status 3")),
    ("exit0", None, pool.Lost("crashed", "worker exited with status 0")),
    ("rtsig", None, pool.Lost("crashed", f"worker killed by signal {signal.SIGRTMIN + 6} (a crash in native code)")),
    ("raise", None, pool.Lost("failed", "internal error: RuntimeError: boom")),
    ("slow", None, pool.Lost("timeout", f"no result within {TIMEOUT:g} s")),
    ("ok", "behaviour_pool_tasks:hung_init", pool.Lost("timeout", "the worker did not start within 1 s")),
], ids=["segv", "abort", "exit", "exit0", "rtsig", "raise", "slow", "never-started"])
def test_lost_task_messages_exactly(tmp_path, monkeypatch, kind, init, lost):
    """A lost task's exact words (Worker.call's, as pool.imap's rows): a death is "exited with
    status N" for any exit, 0 included, and "killed by SIGNAME", or "by signal N" for a signal
    without a name; a raise is the task's error; a timeout names its seconds (a worker that never
    starts: STARTUP_TIMEOUT, here 0.5 s, plus the task's)."""
    if init is not None:
        monkeypatch.setattr(pool, "STARTUP_TIMEOUT", 0.5)
    w = pool.Worker(FN, str(tmp_path), init)
    try:
        assert w.call((kind, 0), timeout=0.5 if init else TIMEOUT if kind == "slow" else 60) == lost
    finally:
        w.close()


def test_a_worker_waits_two_minutes_more_than_the_timeout_for_its_start():
    """A worker not ready yet has STARTUP_TIMEOUT (120 s) on top of the task's timeout, from its spawn."""
    from types import SimpleNamespace

    assert pool.STARTUP_TIMEOUT == 120.0
    assert pool.Worker.startup_deadline(SimpleNamespace(spawned=1000.0), 5.0) == 1125.0


def test_no_jobs_asked_still_runs_every_task_on_one_worker(tmp_path):
    """jobs below 1 means one worker: every task runs, all in the same process."""
    rows = dict(pool.imap(FN, str(tmp_path), [("ok", 0), ("ok", 1), ("ok", 2)], jobs=0, timeout=60))
    assert [rows[i][0] for i in range(3)] == [0, 1, 2]
    assert len({rows[i][1] for i in range(3)}) == 1
    assert list(pool.imap(FN, str(tmp_path), [], jobs=4)) == []


def test_a_worker_told_to_stop_exits_0(tmp_path):
    """close() asks a healthy worker to stop: it ends by itself with exit status 0 (not killed)."""
    w = pool.Worker(FN, str(tmp_path))
    assert w.call(("ok", 5), timeout=60)[0] == 5
    w.close()
    assert w.process.returncode == 0


def test_workers_are_told_to_exit_together_and_waited_for_after(tmp_path):
    """Each worker ends its TPU process and removes its folders as it exits: the pool asks all
    of them to exit before it waits for any, so two that take 1 s each take 1 s, not 2."""
    results = pool.imap(FN, str(tmp_path), [("ok", 0), ("ok", 1)], jobs=2, timeout=60,
                        init="behaviour_pool_tasks:slow_exit_init")
    assert sorted(r[0] for _, r in (next(results), next(results))) == [0, 1]
    assert list(results) == []
    starts = [float(p.read_text()) for p in tmp_path.glob("exit-*.start")]
    ends = [float(p.read_text()) for p in tmp_path.glob("exit-*.end")]
    assert len(starts) == len(ends) == 2  # both exited, and were waited for
    assert max(starts) < min(ends)  # side by side: each began before the other ended
