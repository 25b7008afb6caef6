"""Child interpreters running this package: how they start, stop, and say how they died.

The driver's process mechanisms, and what each is for (all in this package):

* ``isolate.call``: one native call whose result this process needs, in a helper
  kept for the next call (a fork when that is safe, else a fresh interpreter);
  its death raises NativeCrash. Readers, compiles, the StableHLO interpreter.
* ``isolate.forked``: a throwaway try in a fork of this process that may well
  die (a pass probe); only how it ended comes back, in a few ms.
* ``pool.imap`` / ``pool.Worker``: tasks in worker interpreters kept across tasks,
  under ``--jobs`` and ``--timeout``; a death is a ``Lost`` row and the worker
  is replaced. Batches, and one worker per Dask worker thread.
* this module: any ``python -m mlirhlo_driver...`` child (:func:`start_python`)
  with the package importable as it is here, a group of them stopped
  (:func:`stop`), a death signal named (:func:`signal_name`). pool's workers,
  isolate's helper when it cannot fork, the pass catalogue's scan, and
  spmd-run's peer processes, which coordinate with each other, so execute/spmd.py
  supervises them itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["package_root", "python_command", "python_env", "signal_name", "start_python", "stop"]


def package_root() -> str:
    """The directory this process imports mlirhlo_driver from."""
    return str(Path(__file__).resolve().parent.parent.parent)


def python_command(module: str, *args: object) -> list[str]:
    """``python -m module args...`` with this process's interpreter."""
    return [sys.executable, "-m", module, *map(str, args)]


def python_env(path: Sequence[str] | None = None, **extra: str) -> dict[str, str]:
    """This process's environment for a child interpreter that imports this package from
    where this one does, not another copy on the inherited PYTHONPATH or in site-packages
    (the child's cwd still comes first, as ``python -m`` puts it).

    PYTHONPATH is ``path`` (default: the inherited PYTHONPATH) with the package's
    root first unless ``path`` has it already; ``extra`` variables are added.
    """
    # XLA's INFO lines stay out of a child's stderr unless the user or ``extra`` asks for them.
    env = {"TF_CPP_MIN_LOG_LEVEL": "1", **os.environ, **extra}
    root = package_root()
    if path is None:
        inherited = env.get("PYTHONPATH")
        entries = [root] + ([inherited] if inherited else [])
    else:
        entries = [p for p in path if p]
        if root not in entries:
            entries.insert(0, root)
    env["PYTHONPATH"] = os.pathsep.join(entries)
    return env


def start_python(module: str, *args: object, path: Sequence[str] | None = None,
                 env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen:
    """``python -m module args...`` as a child (:func:`python_env`, ``env`` added); ``popen``
    goes to Popen (pipes, ``pass_fds``, ``start_new_session``)."""
    return subprocess.Popen(python_command(module, *args), env=python_env(path, **(env or {})), **popen)


def stop(procs: Iterable[subprocess.Popen], *, group: bool = False, timeout: float | None = None) -> None:
    """SIGKILL each child still running (with ``group``, its whole process group: the
    children it started), then reap them all.

    Nothing gentler first: gloo's and gRPC's threads mid-collective ignore SIGTERM,
    as a hung task may, and a child that gets killed has nothing to save.
    ``timeout``: how long to wait for each (None: until it is gone).
    """
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            try:
                if group:
                    os.killpg(p.pid, signal.SIGKILL)
                else:
                    p.kill()
            except ProcessLookupError:  # it ended meanwhile
                pass
    for p in procs:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - the kernel reaps SIGKILLed children
            pass


def signal_name(number: int) -> str | None:
    """``"SIGSEGV"`` for 11; None for a number that names no signal."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return None
