"""Run many modules in worker processes, each module isolated from the others.

A C++ abort, a segfault or a hang in one module (XLA, or the StableHLO
interpreter, which aborts the process on ops it does not support) ends only
the worker running it: that module is reported as crashed or timed out, a
fresh worker takes its place, and the rest go on. Workers are started with
``spawn`` (jax is multithreaded; forking it is unsafe) and are reused.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from .native_io import last_native_error
from .run import ModuleReport, RunOptions


@dataclass(frozen=True)
class Task:
    index: int
    source: str
    name: str
    input_format: str | None
    split_input_file: bool
    chunk: int                # which module of the file (split inputs), else 0
    arg_specs: str | None


def run_task(task: Task, options: RunOptions) -> ModuleReport:
    """Load the task's module and run it (in whatever process calls this)."""
    from . import inputs, run
    from .errors import DriverError

    try:
        loaded = inputs.load(task.source, input_format=task.input_format,
                             split_input_file=task.split_input_file, arg_specs=task.arg_specs)[task.chunk]
    except DriverError as e:
        return ModuleReport(task.name, task.source, status="invalid", message=e.format().removeprefix("error: "))
    return run.run_module(loaded.module, task.name, task.source, options, loaded.line_offset)


def _worker(conn: Connection, options: RunOptions, log_path: str) -> None:  # pragma: no cover - child
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    # Native messages (an abort's "LLVM ERROR: ...") go to a log the parent quotes.
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 2)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            report = run_task(task, options)
        except Exception as e:  # noqa: BLE001 - a bug in one module's run must not stop the others
            report = ModuleReport(task.name, task.source, status="failed",
                                  message=f"internal error: {type(e).__name__}: {e}")
        conn.send(report)


@dataclass
class _Slot:
    process: Any
    conn: Connection
    log: str
    task: Task | None = None
    started: float = 0.0


def run_in_workers(tasks: list[Task], options: RunOptions, *, jobs: int, timeout: float | None,
                   on_done: Callable[[ModuleReport], None] | None = None) -> list[ModuleReport]:
    """One report per task, in task order, whatever happens to the workers."""
    ctx = mp.get_context("spawn")
    pending = list(tasks)
    reports: dict[int, ModuleReport] = {}
    slots: list[_Slot] = []

    logdir = tempfile.mkdtemp(prefix="mlirhlo-workers-")

    def start() -> _Slot:
        parent, child = ctx.Pipe()
        log = os.path.join(logdir, f"worker-{len(os.listdir(logdir))}.log")
        # Not a daemon: a worker starts the interpreter's own child process.
        proc = ctx.Process(target=_worker, args=(child, options, log), daemon=False)
        proc.start()
        child.close()
        return _Slot(proc, parent, log)

    def finish(slot: _Slot, report: ModuleReport) -> None:
        assert slot.task is not None
        reports[slot.task.index] = report
        slot.task = None
        if on_done:
            on_done(report)

    try:
        for _ in range(min(jobs, len(tasks))):
            slots.append(start())
        while pending or any(s.task for s in slots):
            for slot in slots:
                if slot.task is None and pending:
                    slot.task = pending.pop(0)
                    slot.started = time.monotonic()
                    slot.conn.send(slot.task)
            busy = [s for s in slots if s.task]
            waits = [s.conn for s in busy] + [s.process.sentinel for s in busy]
            wait_for = None
            if timeout:
                wait_for = max(0.0, min(s.started + timeout for s in busy) - time.monotonic())
            ready = wait(waits, timeout=wait_for)
            for i, slot in enumerate(slots):
                if slot.task is None:
                    continue
                task = slot.task
                if slot.conn in ready:
                    try:
                        finish(slot, slot.conn.recv())
                        continue
                    except (EOFError, OSError):
                        pass  # died while sending: reported below
                died = slot.process.sentinel in ready or not slot.process.is_alive()
                timed_out = timeout is not None and time.monotonic() - slot.started > timeout
                if died or timed_out:
                    if timed_out and not died:
                        slot.process.kill()
                    slot.process.join(5)
                    code = slot.process.exitcode
                    if timed_out and not died:
                        status, message = "timeout", f"no result within {timeout:g} s"
                    else:
                        status, message = "crashed", _death(code, slot.log)
                    finish(slot, ModuleReport(task.name, task.source, status=status, message=message))
                    slot.conn.close()
                    slots[i] = start()
        return [reports[t.index] for t in tasks]
    finally:
        for slot in slots:
            try:
                slot.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for slot in slots:
            slot.process.join(5)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(2)
        shutil.rmtree(logdir, ignore_errors=True)


def _death(code: int | None, log: str) -> str:
    if code is None:
        what = "worker did not exit"
    elif code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        what = f"worker killed by {name} (a crash in native code)"
    else:
        what = f"worker exited with status {code}"
    last = last_native_error(log)
    return f"{what}: {last}" if last else what
