"""Tasks in isolated worker processes: the one pool that ``run`` and ``opt`` share.

A C++ abort, a segfault or a hang in one task (XLA, LLVM, or the StableHLO
interpreter, which aborts the process on ops it does not support) ends only
the worker running it: the task comes back as a :class:`Lost` (crashed or
timed out), a fresh worker takes its place, and the rest go on.

Workers are fresh interpreters running ``python -m mlirhlo_driver._native.pool``
(processes.start_python; never ``fork``: jax is multithreaded), each in its own
process group, so that a kill reaches what its task started. They import
only this module and the task function's module, not the CLI, and are reused
across tasks, so jaxlib and the CUDA plugin load once per worker. The Dask
path (_native/cluster.py) keeps one such worker per Dask worker thread, through
:class:`Worker`. For one call whose result the caller waits on, isolate.call
is the lighter tool (processes.py says which mechanism serves what).

Promises: :func:`imap` yields exactly one ``(index, result)`` per task, in
completion order, where ``result`` is what ``fn(context, task)`` returned or
a :class:`Lost`. ``fn`` and ``init`` are ``"module:function"`` names;
``context``, tasks and results must pickle. Closing the generator early
(``--fail-fast``) stops every worker.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from . import processes

__all__ = ["Lost", "Worker", "imap"]

# A task's --timeout counts from the moment its worker is ready (its imports and init
# done), not from its spawn: jaxlib's start takes seconds, more on a busy machine, and is
# no module's fault. A worker that is not ready within this many seconds more than the
# timeout has its task reported as timed out.
STARTUP_TIMEOUT = 120.0


@dataclass(frozen=True)
class Lost:
    """A task without a result: its worker died, hung, or ``fn`` raised."""

    status: str   # "crashed", "timeout", or "failed" (fn raised: a bug, not the module's fault)
    message: str


def _resolve(name: str) -> Any:
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


class Worker:
    """One worker process. ``fn``/``init`` name functions; ``init(context)`` runs once at start."""

    def __init__(self, fn: str, context: Any, init: str | None = None, log_dir: str | None = None):
        self._own_dir = log_dir is None
        self.log_dir = log_dir or tempfile.mkdtemp(prefix="mlirhlo-worker-")
        fd, self.log = tempfile.mkstemp(prefix="worker-", suffix=".log", dir=self.log_dir)
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        try:
            self.process = processes.start_python(
                "mlirhlo_driver._native.pool", to_child_r, from_child_w,
                pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL,
                # Native output (an abort's "LLVM ERROR: ...") lands in the log, quoted on a crash;
                # never in the command's own stdout.
                stdout=fd, stderr=fd,
                # Its own process group: a kill for a timeout reaches what the task started.
                start_new_session=True)
        finally:
            os.close(fd)
            os.close(to_child_r)
            os.close(from_child_w)
        self._to = Connection(to_child_w, readable=False)
        self.conn = Connection(from_child_r, writable=False)
        self._to.send((fn, init, context))
        self.task: Any = None
        self.index: int | None = None
        self.spawned = time.monotonic()
        self.ready = False  # its init has run: it says so once, before its first reply
        self.started: float | None = None  # when its task's clock started (once ready)
        self._retired = False  # told to exit

    def send(self, index: int, task: Any) -> None:
        self.index, self.task = index, task
        self.started = time.monotonic() if self.ready else None
        try:
            self._to.send(task)
        except OSError:
            pass  # died already: the reply side sees EOF

    def take_ready(self) -> bool:
        """Read the message a worker sends once its init has run; the clock of the task it
        holds starts now. False if it died first."""
        try:
            self.conn.recv()
        except (EOFError, OSError):
            return False
        self.ready = True
        if self.task is not None:
            self.started = time.monotonic()
        return True

    def startup_deadline(self, timeout: float) -> float:
        return self.spawned + STARTUP_TIMEOUT + timeout

    def receive(self) -> Any:
        """The reply to the task sent, or a Lost when the worker died."""
        try:
            status, value = self.conn.recv()
        except (EOFError, OSError):
            return Lost("crashed", self._death())
        if status == "error":
            return Lost("failed", value)
        return value

    def kill(self) -> None:
        # The group: with the children its task started (the isolation helper, say).
        processes.stop([self.process], group=True)

    def call(self, task: Any, timeout: float | None = None) -> Any:
        """Run one task and wait: its result, or a Lost (the worker is then dead)."""
        self.send(0, task)
        if not self.ready:
            left = None if timeout is None else max(0.0, self.startup_deadline(timeout) - time.monotonic())
            if not wait([self.conn], timeout=left):
                self.kill()
                return Lost("timeout", f"the worker did not start within {STARTUP_TIMEOUT + timeout:g} s")
            if not self.take_ready():
                return Lost("crashed", self._death())
        if not wait([self.conn], timeout=timeout):
            self.kill()
            return Lost("timeout", f"no result within {timeout:g} s")
        return self.receive()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def retire(self) -> None:
        """Ask it to exit after its task (it then ends its own helpers): :meth:`close` waits."""
        if not self._retired:
            self._retired = True
            try:
                self._to.send(None)
            except OSError:
                pass

    def close(self) -> None:
        self.retire()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.kill()
        for c in (self._to, self.conn):
            c.close()
        if self._own_dir:
            import shutil

            shutil.rmtree(self.log_dir, ignore_errors=True)

    def _death(self) -> str:
        try:
            code = self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = None
        if code is None:
            what = "worker did not exit"
        elif code < 0:
            what = f"worker killed by {processes.signal_name(-code) or f'signal {-code}'} (a crash in native code)"
        else:
            what = f"worker exited with status {code}"
        from .fds import last_native_error

        last = last_native_error(self.log)
        return f"{what}: {last}" if last else what


def imap(fn: str, context: Any, tasks: Sequence[Any], *, jobs: int, timeout: float | None = None,
         init: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(index, fn(context, tasks[index]) or Lost)`` for every task, as each finishes."""
    log_dir = tempfile.mkdtemp(prefix="mlirhlo-workers-")
    pending = list(enumerate(tasks))
    pending.reverse()  # popped from the end: task order
    workers: list[Worker] = []
    try:
        for _ in range(min(max(1, jobs), len(tasks))):
            workers.append(Worker(fn, context, init, log_dir))
        while True:
            for w in workers:
                if w.task is None and pending:
                    w.send(*pending.pop())
            busy = [w for w in workers if w.task is not None]
            if not busy:
                return
            wait_for = None
            if timeout:
                wait_for = max(0.0, min(w.started + timeout if w.started is not None
                                        else w.startup_deadline(timeout) for w in busy) - time.monotonic())
            ready = wait([w.conn for w in busy], timeout=wait_for)
            for i, w in enumerate(workers):
                if w.task is None:
                    continue
                index = w.index
                now = time.monotonic()
                if w.conn in ready and not w.ready:
                    if w.take_ready():
                        continue  # its task's clock starts now
                    result = Lost("crashed", w._death())
                elif w.conn in ready:
                    result = w.receive()
                elif timeout is not None and w.started is not None and now - w.started > timeout:
                    w.kill()
                    result = Lost("timeout", f"no result within {timeout:g} s")
                elif timeout is not None and w.started is None and now > w.startup_deadline(timeout):
                    w.kill()
                    result = Lost("timeout", f"the worker did not start within {STARTUP_TIMEOUT + timeout:g} s")
                else:
                    continue
                w.task = None
                if isinstance(result, Lost) and result.status != "failed":
                    w.close()
                    workers[i] = Worker(fn, context, init, log_dir) if pending else w
                yield index, result
    finally:
        # All busy ones killed before any is waited for (--fail-fast, Ctrl-C).
        processes.stop([w.process for w in workers if w.task is not None], group=True)
        # All told to exit before any is waited for: each ends its TPU process and removes its
        # directories at exit (0.1-0.3 s), side by side rather than one after another.
        for w in workers:
            w.retire()
        for w in workers:
            w.close()
        import shutil

        shutil.rmtree(log_dir, ignore_errors=True)


def _serve(rfd: int, wfd: int) -> None:  # pragma: no cover - runs in the worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    inbox = Connection(rfd, writable=False)
    outbox = Connection(wfd, readable=False)
    try:
        fn_name, init_name, context = inbox.recv()
        fn = _resolve(fn_name)
    except EOFError:
        os._exit(0)
    if init_name:
        try:
            _resolve(init_name)(context)
        except Exception:  # noqa: BLE001 - each task then meets the same error and reports it
            pass
    import gc

    gc.freeze()  # what the imports made stays; collections then scan only the task's objects
    outbox.send(("ready", None))  # the parent's clock for the first task starts now
    while True:
        try:
            task = inbox.recv()
        except EOFError:
            break
        if task is None:
            break
        try:
            reply = ("ok", fn(context, task))
        except Exception as e:  # noqa: BLE001 - a bug in one task must not stop the others
            reply = ("error", f"internal error: {type(e).__name__}: {e}")
        try:
            outbox.send(reply)
        except Exception as e:  # noqa: BLE001 - an unpicklable result
            outbox.send(("error", f"internal error: result does not pickle: {e}"))
    sys.stdout.flush()
    sys.stderr.flush()
    # Exit handlers run (what a task left to remove at exit: a TPU target's private
    # directories under /tmp); the interpreter's teardown is skipped, nothing left to flush.
    import atexit

    atexit._run_exitfuncs()
    os._exit(0)


if __name__ == "__main__":  # pragma: no cover - the worker entry
    _serve(int(sys.argv[1]), int(sys.argv[2]))
