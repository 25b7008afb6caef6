"""Measuring passes: repeated pipeline runs with per-pass statistics.

MLIR pipelines (native and Python passes alike) are timed by MLIR's own
pass timing, once per run, each run on a fresh copy of the module. XLA's
HLO pipeline reports no per-pass times through jaxlib, so its figures come
from the per-pass dump files' timestamps: the time from one dump to the next,
which covers the passes in between that did not change the module (XLA only
dumps after a change) and the writing of the dump itself.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..timing import ms, ms_since


@contextlib.contextmanager
def interruptible() -> Iterator[Callable[[], None]]:
    """Ctrl-C while benchmarking: stop between two runs, not inside one.

    Python raises KeyboardInterrupt at whatever bytecode runs next, and during
    a pipeline run that is often a finalizer run by the garbage collector,
    which swallows it (the benchmark went on), or a Python pass, which leaves
    MLIR's pass manager to print its raw timing report on the way out. So the
    first Ctrl-C only sets a flag, and the returned ``check()`` raises
    KeyboardInterrupt between runs; a second Ctrl-C interrupts at once.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    hits: list[int] = []
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: Any) -> None:
        hits.append(signum)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def check() -> None:
        if hits:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class PassStat:
    name: str
    depth: int
    times_ms: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def spread_ms(self) -> tuple[float, float]:
        return min(self.times_ms), max(self.times_ms)

    def row(self) -> dict[str, Any]:
        lo, hi = self.spread_ms
        return {"pass": self.name, "depth": self.depth, "median_ms": self.median_ms, "min_ms": lo,
                "max_ms": hi, "runs": len(self.times_ms)}


@dataclass
class PipelineBench:
    spec: str
    passes: list[PassStat]
    totals_ms: list[float]

    @property
    def median_total_ms(self) -> float:
        return statistics.median(self.totals_ms)

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.spec, "repeats": len(self.totals_ms),
                "total_median_ms": self.median_total_ms,
                "total_min_ms": min(self.totals_ms), "total_max_ms": max(self.totals_ms),
                "passes": [p.row() for p in self.passes]}


def _one_run(module: Any, root: Any) -> tuple[list[Any], float]:
    from ..ir import emit
    from ..mlir import pipeline

    copy = emit.clone(module)
    try:
        result = pipeline.run(copy, root, instrumentation=pipeline.Instrumentation(timing=True))
    except KeyboardInterrupt as e:
        _drop_quietly(e)
        raise KeyboardInterrupt from None
    rows = [r for r in result.timing if r.name not in ("Total",)]
    total = next((r.wall_s for r in result.timing if r.name == "Total"), result.total_s)
    return rows, ms(total)


def _drop_quietly(e: BaseException) -> None:
    """Free what an interrupted run left alive, with fd 2 captured and discarded.

    A Ctrl-C inside a run (the second one, see interruptible()) leaves its
    PassManager alive in the traceback's frames; MLIR prints its raw timing
    report when the PassManager dies, which would follow the error line.
    """
    import gc

    from .._native.fds import capture_fd2

    with capture_fd2():
        e.__traceback__ = None
        del e
        gc.collect()


def _accumulate(stats: list[PassStat], rows: list[Any]) -> None:
    if not stats:
        stats.extend(PassStat(r.name, r.depth) for r in rows)
    for stat, row in zip(stats, rows):
        stat.times_ms.append(ms(row.wall_s))


def bench_pipelines(module: Any, roots: list[Any], repeats: int, warmup: int = 1) -> list[PipelineBench]:
    """Each pipeline ``repeats`` times, interleaved (A B A B ...) so that drift on
    a noisy machine hits all of them alike."""
    results = [PipelineBench(r.render(), [], []) for r in roots]
    with interruptible() as check:
        for _ in range(warmup):
            for root in roots:
                _one_run(module, root)
                check()
        for _ in range(repeats):
            for root, res in zip(roots, results):
                rows, total = _one_run(module, root)
                check()
                _accumulate(res.passes, rows)
                res.totals_ms.append(total)
    return results


@dataclass
class XlaPassTime:
    pipeline: str
    ending_with: str      # the pass whose change triggered the dump
    times_ms: list[float] = field(default_factory=list)


def bench_xla_pipeline(module: Any, name: str, options: Any, repeats: int) -> tuple[list[XlaPassTime], list[float]]:
    """Per-dump intervals of XLA's HLO pipeline (see the module docstring) and
    whole-compile times, over ``repeats`` compiles."""
    import time

    from ..xla import backend as xla_backend

    spec, _ = xla_backend.stage_spec(options, module, name, dumps=(xla_backend.HLO_TEXT,))
    spec = spec.with_(pass_dump_re=".*")
    rows: list[XlaPassTime] = []
    compiles: list[float] = []
    with interruptible() as check:
        for i in range(repeats):
            t0 = time.perf_counter()
            art = xla_backend.compile(module, spec, name).art
            check()
            compiles.append(ms_since(t0))
            _add_dump_intervals(rows, art, i)
    return rows, compiles


def _add_dump_intervals(rows: list[XlaPassTime], art: Any, i: int) -> None:
    """Compile ``i``'s intervals between consecutive per-pass dumps, added to ``rows``."""
    from ..xla import backend as xla_backend

    dumps = xla_backend.pass_dumps(art)
    times = [art.mtimes_ns[d.key] for d in dumps]
    for k, d in enumerate(dumps[1:], 1):
        delta = (times[k] - times[k - 1]) / 1e6
        if i == 0:
            rows.append(XlaPassTime(d.pipeline, d.after))
        if k - 1 < len(rows):
            rows[k - 1].times_ms.append(delta)
