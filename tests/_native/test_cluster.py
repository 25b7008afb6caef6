"""_native/cluster.py: batches on a Dask cluster (--scheduler). The client and its
errors with fakes, and the batch commands on a cluster this test starts on 127.0.0.1.
"""

from __future__ import annotations

import builtins
import json
import pickle
import sys
import threading
from dataclasses import dataclass

import pytest

import mlirhlo_driver._native.cluster as cluster
from mlirhlo_driver._native import pool
from mlirhlo_driver.errors import DriverError
from tests.conftest import CRASHER, DATA, GOOD, assert_mentions, assert_one_line_error, summary_rows


@pytest.fixture(scope="module")
def crasher_dir(tmp_path_factory):
    """crasher:boom, a JAX function that segfaults, importable here and on the workers."""
    path = tmp_path_factory.mktemp("crasher")
    (path / "crasher.py").write_text(CRASHER)
    return path


@pytest.fixture(scope="module")
def scheduler(crasher_dir):
    """A local cluster: one worker process (with a nanny), two threads, loopback only, on free
    ports (with ``pytest -n`` each test worker may start one)."""
    distributed = pytest.importorskip("distributed")
    mp = pytest.MonkeyPatch()
    mp.setenv("PYTHONPATH", str(crasher_dir))  # the workers' environment, as on a real cluster
    try:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                           host="127.0.0.1", scheduler_port=0, dashboard_address=":0",
                                           worker_dashboard_address=None, silence_logs=50, timeout=60)
    finally:
        mp.undo()
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close(timeout=30)


@pytest.fixture
def inputs(tmp_path, monkeypatch, crasher_dir):
    (tmp_path / "m1.mlir").write_text(GOOD.format(name="m1"))
    (tmp_path / "bad.mlir").write_text("func.func @main( {\n")
    (tmp_path / "m2.mlir").write_text(GOOD.format(name="m2"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(crasher_dir))
    return tmp_path


@dataclass(frozen=True)
class _Task:
    source: str
    data: bytes | None = None


class _Future:
    def __init__(self, log, key, value):
        self.log, self.key, self.value = log, key, value

    def result(self):
        if isinstance(self.value, Exception):
            raise self.value
        return self.value

    def release(self):
        self.log.append(("release", self.key))


class _Client:
    """distributed.Client's stand-in: runs nothing, answers each task with ``outcome(task)``."""

    loop = "the-loop"

    def __init__(self, outcome):
        self.outcome, self.log, self.submitted = outcome, [], []

    def scatter(self, data, broadcast):
        self.log.append(("scatter", data, broadcast))
        return "blob-future"

    def submit(self, fn, blob, task, timeout, *, pure, key):
        self.submitted.append((fn, blob, task, timeout, pure, key))
        return _Future(self.log, key, self.outcome(task))

    def close(self):
        self.log.append(("close",))


@pytest.fixture
def completed_in_reverse(monkeypatch):
    """distributed.as_completed, finishing the futures last first (on the client's loop)."""
    import distributed

    def as_completed(futures, *, loop):
        assert loop == "the-loop"
        return reversed(list(futures))

    monkeypatch.setattr(distributed, "as_completed", as_completed)


class _Worker:
    """pool.Worker's stand-in: answers each call from ``replies`` (a task's own name by default)."""

    made: list[_Worker] = []
    replies: dict = {}

    def __init__(self, fn, context, init=None):
        self.args = (fn, context, init)
        self.alive, self.closed, self.task, self.calls = True, False, "unset", []
        _Worker.made.append(self)

    def call(self, task, timeout=None):
        self.task = task
        self.calls.append((task, timeout))
        return _Worker.replies.get(task, task)

    def close(self):
        self.closed = True
        self.alive = False


@pytest.fixture
def workers(monkeypatch):
    """Fake pool workers and a fresh per-thread slot, as on a new Dask worker thread."""
    _Worker.made, _Worker.replies = [], {}
    monkeypatch.setattr(pool, "Worker", _Worker)
    monkeypatch.setattr(cluster, "_local", threading.local())
    return _Worker.made


@pytest.mark.slow
def test_opt_on_the_cluster_gives_the_local_rows_and_files(cli, inputs, scheduler):
    # The same rows as local workers give (tests/batch/test_opt.py); here the files are
    # compared with an in-process run, which cannot take the crashing module.
    local = cli("opt", "m1.mlir", "bad.mlir", "m2.mlir", "--dump-dir", inputs / "local", "--no-cache")
    remote = cli("opt", "m1.mlir", "bad.mlir", "crasher:boom", "m2.mlir", "--args", "f32[8]", "--no-cache",
                 "--dump-dir", inputs / "remote", "--scheduler", scheduler, "--timeout", "120")
    assert remote.code == local.code == 2, remote.err  # bad input among the modules: 2, as `run`
    assert summary_rows(local.err) == {"bad": "INVALID"}
    assert summary_rows(remote.err) == {"bad": "INVALID", "boom": "CRASHED"}
    assert "bad.mlir:1:17: " in remote.err and "SIGSEGV" in remote.err
    names = sorted(p.name for p in (inputs / "local").iterdir())
    assert names == ["m1.stablehlo.mlir", "m2.stablehlo.mlir"]
    assert sorted(p.name for p in (inputs / "remote").iterdir()) == names
    for name in names:
        assert (inputs / "remote" / name).read_text() == (inputs / "local" / name).read_text()


@pytest.mark.slow
def test_run_on_the_cluster_gives_the_local_rows(cli, inputs, scheduler):
    argv = ["run", "crasher:boom", DATA / "erf_inv.mlir", DATA / "softmax.vhlo", "--args", "f32[8]",
            "--reference", "cpu"]
    # Local workers give these rows (tests/e2e/test_run.py::test_a_crashed_worker_is_replaced).
    result = cli(*argv, "--scheduler", scheduler, "--timeout", "120", "--json", inputs / "remote.json")
    assert result.code == 1, result.out + result.err
    rows = {r["module"]: r for r in json.loads((inputs / "remote.json").read_text())}
    assert {m: r["status"] for m, r in rows.items()} == {"boom": "crashed", "erf_inv": "ok", "softmax": "ok"}
    assert "SIGSEGV" in rows["boom"]["message"]
    assert rows["boom"]["reproducer"].startswith("mlirhlo run crasher:boom")


def test_scheduler_without_the_extra_says_what_to_install(cli, inputs, monkeypatch):
    real_import = builtins.__import__

    def no_distributed(name, *args, **kwargs):
        if name == "distributed" or name.startswith("distributed."):
            raise ImportError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    result = cli("opt", "m1.mlir", "m2.mlir", "--dump-dir", inputs / "out", "--scheduler",
                 "tcp://127.0.0.1:1", "--no-cache")
    assert_one_line_error(result, facts=("--scheduler", cluster.INSTALL_HINT))
    assert not (inputs / "out").exists()


# ------------------------------------------------------------------ cluster


def _unreachable(monkeypatch, error: Exception) -> None:
    """Dask's Client raises ``error`` for every address."""
    import distributed

    def client(address, **kwargs):
        raise error

    monkeypatch.setattr(distributed, "Client", client)


@pytest.mark.golden
@pytest.mark.parametrize("setup, message, hint", [
    (lambda mp: mp.setitem(sys.modules, "distributed", None),
     "--scheduler needs Dask's distributed package, which is not installed",
     "pip install 'mlirhlo-driver[cluster]'"),
    (lambda mp: _unreachable(mp, OSError("refused")),
     "cannot reach the Dask scheduler at tcp://h:1: refused",
     "start one with 'dask scheduler' and a worker with 'dask worker tcp://HOST:8786'; docs/commands/run.md"),
], ids=["no-distributed", "unreachable"])
def test_scheduler_client_errors_exactly(monkeypatch, setup, message, hint):
    """The exact words of _client's refusals (elsewhere tests assert their facts)."""
    setup(monkeypatch)
    with pytest.raises(DriverError) as e:
        cluster._client("tcp://h:1")
    assert (e.value.message, e.value.hint) == (message, hint)


def test_client_without_distributed_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(DriverError) as e:
        cluster._client("tcp://h:8786")
    assert_mentions(e.value.message, "--scheduler", "distributed")
    assert e.value.hint == cluster.INSTALL_HINT
    assert_mentions(e.value.hint, "pip install", "mlirhlo-driver[cluster]")


def test_client_connects_with_a_timeout_and_not_as_the_default(monkeypatch):
    """Half a minute to reach the scheduler; the client never becomes Dask's default."""
    import distributed

    made = []

    def client(address, **kwargs):
        made.append((address, kwargs))
        return "client"

    monkeypatch.setattr(distributed, "Client", client)
    assert cluster._client("tcp://h:8786") == "client"
    assert made == [("tcp://h:8786", {"timeout": 30, "set_as_default": False})]


@pytest.mark.parametrize("error", [OSError("refused"), TimeoutError("refused"), ValueError("refused")])
def test_an_unreachable_scheduler_is_one_error_with_a_hint(monkeypatch, error):
    _unreachable(monkeypatch, error)
    with pytest.raises(DriverError) as e:
        cluster._client("tcp://h:1")
    assert_mentions(e.value.message, "Dask scheduler", "tcp://h:1", "refused")
    assert_mentions(e.value.hint, "dask scheduler", "dask worker")


def test_with_contents_gives_each_task_its_files_bytes(tmp_path):
    """A task without data gets its file's bytes; data already there, or a source that is no
    file (a directory, a name only), stays as it is; the order and sources are kept."""
    f = tmp_path / "m.mlir"
    f.write_bytes(b"module {}\n")
    tasks = [_Task(str(f)), _Task(str(f), b"given"), _Task(str(tmp_path / "gone.mlir")), _Task(str(tmp_path)),
             _Task("pkg.mod:fn", b"")]
    assert cluster.with_contents(tasks) == [
        _Task(str(f), b"module {}\n"), _Task(str(f), b"given"), _Task(str(tmp_path / "gone.mlir")),
        _Task(str(tmp_path)), _Task("pkg.mod:fn", b"")]
    assert tasks[0].data is None   # the caller's tasks are not changed


def test_stream_yields_each_result_as_it_finishes_and_a_lost_worker_as_a_row(completed_in_reverse):
    """(index, result) in finishing order; a task whose Dask worker was lost is a crashed Lost
    row; each future is released once yielded; the context is scattered once to every worker;
    every task has its own key; the client is closed at the end."""
    client = _Client(lambda task: RuntimeError("worker gone") if task == "t1" else task.upper())
    rows = list(cluster._stream(client, "mod:fn", {"ctx": 1}, ["t0", "t1", "t2"], 4.5, "mod:init"))
    assert rows == [(2, "T2"), (1, pool.Lost("crashed", "on the cluster: RuntimeError: worker gone")), (0, "T0")]
    keys = [s[5] for s in client.submitted]
    assert client.log == [("scatter", pickle.dumps(("mod:fn", "mod:init", {"ctx": 1})), True),
                          ("release", keys[2]), ("release", keys[1]), ("release", keys[0]), ("close",)]
    assert [s[:5] for s in client.submitted] == [(cluster.run_task, "blob-future", t, 4.5, False)
                                                 for t in ("t0", "t1", "t2")]
    batch = keys[0].split("-")[1]
    assert keys == [f"mlirhlo-{batch}-{i}" for i in range(3)] and len(batch) == 32
    other = _Client(str.upper)
    list(cluster._stream(other, "mod:fn", None, ["t0"], None, None))
    assert other.submitted[0][5] != keys[0]   # a new batch: new keys


def test_stream_closes_the_client_when_the_caller_stops_early(completed_in_reverse):
    client = _Client(str.upper)
    rows = cluster._stream(client, "mod:fn", None, ["a", "b"], None, None)
    assert next(rows) == (1, "B")
    rows.close()
    assert client.log[-1] == ("close",) and ("release", client.submitted[0][5]) not in client.log


def test_imap_sends_the_tasks_with_their_contents(tmp_path, monkeypatch, completed_in_reverse):
    """imap connects to the address and streams the tasks, each carrying its file's bytes."""
    f = tmp_path / "a.mlir"
    f.write_bytes(b"A")
    client = _Client(lambda task: task.data)
    monkeypatch.setattr(cluster, "_client", lambda address: client if address == "tcp://s:1" else None)
    rows = list(cluster.imap("tcp://s:1", "mod:fn", "ctx", [_Task(str(f))], timeout=2.0, init="mod:i"))
    assert rows == [(0, b"A")]
    assert client.submitted[0][2:4] == (_Task(str(f), b"A"), 2.0)
    assert client.log[0] == ("scatter", pickle.dumps(("mod:fn", "mod:i", "ctx")), True)


def test_run_task_keeps_one_worker_per_thread_for_the_same_batch(workers):
    """The first task starts a worker from the scattered (fn, init, context); later tasks of the
    same batch reuse it; its task is cleared after each call."""
    blob = pickle.dumps(("mod:fn", "mod:init", {"c": 1}))
    assert cluster.run_task(blob, "t1", 3.0) == "t1"
    assert cluster.run_task(blob, "t2", None) == "t2"
    assert len(workers) == 1
    w = workers[0]
    assert (w.args, w.calls, w.task, w.closed) == (("mod:fn", {"c": 1}, "mod:init"), [("t1", 3.0), ("t2", None)],
                                                   None, False)


def test_run_task_replaces_the_worker_for_another_batch_or_a_dead_one(workers):
    one, two = pickle.dumps(("f", None, 1)), pickle.dumps(("f", None, 2))
    cluster.run_task(one, "a", None)
    cluster.run_task(two, "b", None)      # another batch's context
    assert [w.args for w in workers] == [("f", 1, None), ("f", 2, None)] and workers[0].closed
    workers[1].alive = False              # died between tasks
    cluster.run_task(two, "c", None)
    assert len(workers) == 3 and workers[1].closed and not workers[2].closed
    assert [w.calls for w in workers] == [[("a", None)], [("b", None)], [("c", None)]]


@pytest.mark.parametrize("status, replaced", [("crashed", True), ("timeout", True), ("failed", False)])
def test_run_task_drops_a_worker_that_crashed_or_timed_out(workers, status, replaced):
    """A crash or timeout closes the worker and the next task gets a new one; a task whose
    function raised ("failed") keeps it."""
    blob = pickle.dumps(("f", None, None))
    lost = pool.Lost(status, "why")
    _Worker.replies = {"bad": lost}
    assert cluster.run_task(blob, "bad", 1.0) == lost
    assert workers[0].closed is replaced
    assert cluster.run_task(blob, "next", 1.0) == "next"
    assert len(workers) == (2 if replaced else 1)


def test_imap_anywhere_runs_locally_without_a_scheduler(monkeypatch):
    seen = []
    monkeypatch.setattr(pool, "imap", lambda *a, **k: seen.append(("local", a, k)) or "local-rows")
    monkeypatch.setattr(cluster, "imap", lambda *a, **k: seen.append(("cluster", a, k)) or "cluster-rows")
    assert cluster.imap_anywhere("m:f", "ctx", ["t"], jobs=3, timeout=2.0, init="m:i") == "local-rows"
    assert cluster.imap_anywhere("m:f", "ctx", ["t"], jobs=3, timeout=2.0, init="m:i",
                                 scheduler="tcp://s:1") == "cluster-rows"
    assert seen == [("local", ("m:f", "ctx", ["t"]), {"jobs": 3, "timeout": 2.0, "init": "m:i"}),
                    ("cluster", ("tcp://s:1", "m:f", "ctx", ["t"]), {"timeout": 2.0, "init": "m:i"})]
