"""``mlirhlo watch``: ``opt`` kept warm, run again whenever what it reads changes.

The process imports jaxlib once and stays: a rebuild costs the compile itself (the stage
cache serves what did not change), not a start-up. What is watched: the inputs (files,
the files of a directory or glob), a pipeline file, pass plugins, GPU spec files (a
shipped spec's file too), a DebugOptions file and autotune results. Files are watched
through their directories (watchfiles), so an editor's save by rename is seen.

Each build writes the outputs as ``opt`` does (stdout, ``-o`` or ``--dump-dir``) and then
says on stderr what changed since the last good build (:func:`changes`): kernels added
or removed, their registers, occupancy and spills, PTX lines, fusions. A build that
fails is shown (its error line) and the watch goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DriverError, log_note

# What a build keeps to compare with the next: one module's figures (CUDA: from the
# kernel rows and the PTX; any platform: the fusions).
SUMMARY_STAGES = {"cuda": ("kernel-rows", "ptx", "summary"), "cpu": ("summary",), "tpu": ("summary",), None: ()}


@dataclass
class Snapshot:
    """One module's figures after a build (for one GPU spec, or CPU)."""

    kernels: dict[str, tuple[int, float | None, int]] = field(default_factory=dict)  # name -> (regs, occ, spills)
    ptx_lines: int | None = None
    fusions: list[str] = field(default_factory=list)


def snapshots(rows: list[Any]) -> dict[str, Snapshot]:
    """``stem`` (module[.spec]) -> its figures, from opt's rows (OptResult.also)."""
    import json

    out: dict[str, Snapshot] = {}
    for row in rows:
        for (stem, stage), data in getattr(row, "also", {}).items():
            data = data() if callable(data) else data  # made now: the outputs are written
            snap = out.setdefault(stem, Snapshot())
            text = data.decode() if isinstance(data, bytes) else data
            if stage == "kernel-rows":
                for k in json.loads(text):
                    occ = (k.get("occupancy") or {}).get("occupancy")
                    snap.kernels[k["kernel"]] = (k["registers"], occ, k["spill_stores"] + k["spill_loads"])
            elif stage == "ptx":
                snap.ptx_lines = text.count("\n")
            elif stage == "summary":
                snap.fusions = [f["name"] for f in json.loads(text)["fusions"]]
    return out


def changes(before: dict[str, Snapshot], after: dict[str, Snapshot], limit: int = 20) -> list[str]:
    """What changed between two builds, one line each, at most ``limit`` lines (one screen)."""
    lines: list[str] = []
    for stem in sorted(set(before) | set(after)):
        a, b = before.get(stem), after.get(stem)
        if a is None or b is None:
            lines.append(f"{stem}: {'new module' if a is None else 'module gone'}")
            continue
        for name in sorted(set(a.kernels) | set(b.kernels)):
            ka, kb = a.kernels.get(name), b.kernels.get(name)
            if ka is None:
                lines.append(f"{stem}: + kernel {name} ({kb[0]} regs{_occ(kb[1])})")
            elif kb is None:
                lines.append(f"{stem}: - kernel {name}")
            elif ka != kb:
                what = [f"regs {ka[0]} -> {kb[0]}" if ka[0] != kb[0] else "",
                        f"occupancy{_occ(ka[1])} ->{_occ(kb[1])}" if ka[1] != kb[1] else "",
                        f"spills {ka[2]} -> {kb[2]} B" if ka[2] != kb[2] else ""]
                lines.append(f"{stem}: ~ kernel {name}: " + ", ".join(w for w in what if w))
        if a.ptx_lines is not None and b.ptx_lines is not None and a.ptx_lines != b.ptx_lines:
            lines.append(f"{stem}: PTX {a.ptx_lines} -> {b.ptx_lines} lines ({b.ptx_lines - a.ptx_lines:+d})")
        gone, new = set(a.fusions) - set(b.fusions), set(b.fusions) - set(a.fusions)
        if gone or new:
            lines.append(f"{stem}: fusions {len(a.fusions)} -> {len(b.fusions)} (+{len(new)} -{len(gone)})")
    if len(lines) > limit:
        lines = lines[:limit - 1] + [f"... {len(lines) - limit + 1} more"]
    return lines


def _occ(value: float | None) -> str:
    return "" if value is None else f" {value:.0%}"


def watched_paths(options: Any, target: Any) -> list[str]:
    """Every file the build reads, besides the driver: what a change of must rebuild."""
    from ..core.program import input_paths

    paths = [p for p in input_paths(options.inputs) if os.path.isfile(p)]
    for path in (options.pipeline_file, getattr(options, "debug_options_file", None),
                 getattr(options, "autotune_results", None), *options.load_pass_plugin):
        if path:
            paths.append(path)
    for spec in getattr(target, "specs", []) or []:
        paths.append(str(spec.path))
    return list(dict.fromkeys(os.path.abspath(p) for p in paths))


# File times come from a coarse kernel clock (a tick, up to ~10 ms, behind the real one).
_CLOCK_SLACK_NS = 20_000_000


def file_changes(paths: list[str], stop: Any = None, since_ns: int | None = None) -> Iterator[set[str]]:
    """Each time some of ``paths`` change: the set that did (watchfiles, through their
    directories, so a save by rename counts). ``stop``: a threading.Event ending the watch.

    ``since_ns`` (``time.time_ns()`` before the first build): the watcher starts only when
    this is first iterated, so a save made during that build would be missed; once it
    watches, the paths modified since then (by their file times) come first."""
    import watchfiles

    wanted = set(paths)
    dirs = sorted({os.path.dirname(p) for p in paths})
    watching = since_ns is None
    # A short debounce: a save is one event; the build, not the wait, should be the delay.
    # yield_on_timeout: an empty first batch says the watcher is running.
    for batch in watchfiles.watch(*dirs, watch_filter=lambda _, path: os.path.abspath(path) in wanted,
                                  debounce=40, step=10, stop_event=stop, recursive=False,
                                  raise_interrupt=False, yield_on_timeout=True, rust_timeout=100):
        if not watching:
            watching = True
            missed = {p for p in wanted if _modified_since(p, since_ns - _CLOCK_SLACK_NS)}
            if missed:
                yield missed
        if batch:
            yield {os.path.abspath(p) for _, p in batch}


def _modified_since(path: str, ns: int) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return True  # removed (or replaced) meanwhile: a change
    return st.st_mtime_ns >= ns


@dataclass
class Build:
    """One build: its number, what started it, its wall seconds, and its error (None: ok)."""

    number: int
    reason: str
    seconds: float
    error: str | None = None
    lines: list[str] = field(default_factory=list)


def watch(options: Any, make_target: Callable[[], Any], *, say: Callable[[str], None] = log_note,
          report: Callable[[Build], None] | None = None, changed: Iterable[set[str]] | None = None,
          python_passes: Any = None) -> None:
    """Build (batch.opt.run_opt) now and again after each change, until ``changed`` ends.

    ``make_target``: the target, resolved anew for each build (a spec file may have
    changed). ``report``: gets each :class:`Build` (its error, or what changed since the
    last good build). ``changed``: sets of changed paths (default: :func:`file_changes` of
    :func:`watched_paths`). ``python_passes``: the Python passes of the first build (a
    mlir.python_passes.PassSet with ``options.load_pass_plugin``'s; None: made here); when
    a plugin file changes, the set is made again from every plugin file, and a set that
    fails to load is tried again at each change until it loads.
    """
    from ..core import cache
    from ..mlir import passes as mlir_passes
    from . import opt as batch

    last: dict[str, Snapshot] | None = None
    number, reason = 0, "start"
    target = None

    def build() -> None:
        nonlocal last, target
        start = time.perf_counter()
        error = None
        lines: list[str] = []
        try:
            cache.environment.cache_clear()  # a long-lived process: installs and edits happen
            target = make_target()
            also = SUMMARY_STAGES.get(target.platform, ())
            rows = batch.run_opt(options, target, say=say, also=also, python_passes=python_passes)
            failed = [r for r in rows if not r.ok]
            if failed:
                error = "; ".join(f"{r.name}: {r.message}" for r in failed)
            now = snapshots(rows)
            lines = changes(last, now) if last is not None else []
            last = now
        except batch.BatchStopped as stopped:
            error = stopped.result.error_text.strip()
        except DriverError as e:
            error = e.format()
        if report is not None:
            report(Build(number, reason, time.perf_counter() - start, error, lines))

    started_ns = time.time_ns()
    build()
    if changed is None:
        changed = file_changes(watched_paths(options, target if target is not None else make_target()),
                               since_ns=started_ns)
    plugins = {os.path.abspath(p) for p in options.load_pass_plugin}
    unloaded = False  # the plugins changed and did not load: loaded again at the next change
    for paths in changed:
        number += 1
        reason = ", ".join(sorted(Path(p).name for p in paths)) or "change"
        if plugins and (paths & plugins or unloaded):
            try:
                python_passes = mlir_passes.load_plugins(options.load_pass_plugin)
                unloaded = False
            except DriverError as e:
                unloaded = True
                if report is not None:
                    report(Build(number, reason, 0.0, e.format()))
                continue
        build()
