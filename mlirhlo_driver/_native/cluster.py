"""The batch commands' tasks on a Dask distributed cluster (``--scheduler ADDRESS``).

The same task functions and results as the local pool (_native/pool.py), and the same
isolation: on each Dask worker, every worker thread keeps one pool worker
process and hands it the task, so a crash or hang in a module kills only that
process (the task comes back as a :class:`~mlirhlo_driver._native.pool.Lost` row) and
never the Dask worker. Results come back to the client as they finish; the
caller writes them. Needs the ``cluster`` extra (``distributed``) on the client
and the workers, and the same mlirhlo-driver and jaxlib on every worker.
"""

from __future__ import annotations

import pickle
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import DriverError

INSTALL_HINT = "pip install 'mlirhlo-driver[cluster]'"
CONNECT_TIMEOUT_S = 30

_local = threading.local()


def _client(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise DriverError("--scheduler needs Dask's distributed package, which is not installed",
                          hint=INSTALL_HINT) from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise DriverError(f"cannot reach the Dask scheduler at {address}: {e}",
                          # Workers need the same driver, jax and the extra: the docs' cluster set-up.
                          hint="start one with 'dask scheduler' and a worker with "
                               "'dask worker tcp://HOST:8786'; docs/commands/run.md") from None


def imap(address: str, fn: str, context: Any, tasks: Sequence[Any], *, timeout: float | None = None,
         init: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(index, result or Lost)`` for every task, as each finishes on the cluster."""
    client = _client(address)
    return _stream(client, fn, context, with_contents(tasks), timeout, init)


def with_contents(tasks: Sequence[Any]) -> list[Any]:
    """Tasks that carry their input file's bytes: the workers need not share this
    machine's files or working directory (their ``source`` stays, for messages)."""
    import dataclasses
    from pathlib import Path

    out = []
    for task in tasks:
        if getattr(task, "data", None) is None and Path(task.source).is_file():
            task = dataclasses.replace(task, data=Path(task.source).read_bytes())
        out.append(task)
    return out


def _stream(client: Any, fn: str, context: Any, tasks: Sequence[Any], timeout: float | None,
            init: str | None) -> Iterator[tuple[int, Any]]:
    from distributed import as_completed

    try:
        # The context travels once, as a scattered value, not once per task.
        blob = client.scatter(pickle.dumps((fn, init, context)), broadcast=True)
        batch = uuid.uuid4().hex
        futures = {client.submit(run_task, blob, task, timeout, pure=False, key=f"mlirhlo-{batch}-{i}"): i
                   for i, task in enumerate(tasks)}
        for future in as_completed(futures, loop=client.loop):
            index = futures[future]
            try:
                result = future.result()
            except Exception as e:  # noqa: BLE001 - the Dask worker itself was lost
                from .pool import Lost

                result = Lost("crashed", f"on the cluster: {type(e).__name__}: {e}")
            yield index, result
            future.release()
    finally:
        client.close()


def run_task(blob: bytes, task: Any, timeout: float | None) -> Any:
    """On a Dask worker: run ``task`` in this thread's isolated pool worker."""
    from .pool import Lost, Worker

    worker: Worker | None = getattr(_local, "worker", None)
    if worker is not None and (getattr(_local, "blob", None) != blob or not worker.alive):
        worker.close()
        worker = None
    if worker is None:
        fn, init, context = pickle.loads(blob)
        worker = Worker(fn, context, init)
        _local.worker, _local.blob = worker, blob
    result = worker.call(task, timeout)
    worker.task = None
    if isinstance(result, Lost) and result.status != "failed":
        worker.close()
        _local.worker = None
    return result


def imap_anywhere(fn: str, context: Any, tasks: Sequence[Any], *, jobs: int,
                  timeout: float | None = None, init: str | None = None,
                  scheduler: str | None = None) -> Iterator[tuple[int, Any]]:
    """``pool.imap`` here, or on the Dask cluster at ``scheduler`` (the same tasks and results)."""
    if scheduler is not None:
        return imap(scheduler, fn, context, tasks, timeout=timeout, init=init)
    from .pool import imap as local_imap

    return local_imap(fn, context, tasks, jobs=jobs, timeout=timeout, init=init)
