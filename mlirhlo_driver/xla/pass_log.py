"""XLA's own record of the HLO passes it ran: each pass, its pipeline, its time.

jaxlib's XLA logs every pass of every ``HloPassPipeline`` when its process
started with ``TF_CPP_VMODULE=hlo_pass_pipeline=N`` and
``TF_CPP_MIN_LOG_LEVEL=0`` (absl INFO lines on fd 2). XLA reads both once, when
its libraries load, so a compile that logs runs in a helper process started
with them (``isolate.call(env=...)``); the parent may have loaded jaxlib
already. At level 1 each pass gets a start line and a timer line; level 3 adds
"Pass caused changes", but also hashes the module before every pass, inside
the pass's timer: times come from a level-1 compile, changes from a level-3 one
(:func:`merge_changes`). Measured the same on jaxlib 0.9.0, 0.10.2 and 0.12.0.1.

Lines carry the logging thread's id; pipelines XLA runs on several threads are
told apart by it. A pipeline nested in another is itself a pass of the outer one:
its start line comes first, then its own "Running HLO pass pipeline" line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ..timing import ms_from_us

# The environment of a process whose XLA logs its passes (level 1: times; 3: changes).
TIMES_LEVEL = 1
CHANGES_LEVEL = 3


def log_env(level: int) -> dict[str, str]:
    """Environment variables that make XLA log its passes at ``level``."""
    return {"TF_CPP_VMODULE": f"hlo_pass_pipeline={level}", "TF_CPP_MIN_LOG_LEVEL": "0"}


_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+(\d+) hlo_pass_pipeline\.cc:\d+\] (.*)$")
# Pipeline and pass names may hold spaces ("HLO passes through layout assignment").
_RUNNING = re.compile(r"^Running HLO pass pipeline on module (.+?): (.+)$")
_START = re.compile(r"^\s+HLO pass (.+)$")
_TIMER = re.compile(r"^HLO pass: (.+?) time: .*?\((\d+) us\)")
_CHANGED = re.compile(r"^\s+Pass caused changes (.+)$")
_SKIPPED = re.compile(r"^\s+Skipping HLO pass \(filtered[^)]*\): (.+)$")


@dataclass(frozen=True)
class PassCall:
    """One run of one HLO pass, as XLA logged it."""

    module: str            # the HLO module it ran on
    pipeline: str          # the innermost pipeline that ran it
    name: str
    us: int                # wall microseconds (a pipeline's includes its passes)
    changed: bool | None   # None: not logged (a level-1 log)
    is_pipeline: bool      # a nested pipeline, run as a pass of the outer one
    skipped: bool          # left out by --xla_disable_hlo_passes / --xla_enable_hlo_passes_only
    index: int             # order of completion in the log


@dataclass
class _Open:
    module: str
    pipeline: str
    name: str
    changed: bool | None = None
    is_pipeline: bool = False
    skipped: bool = False


def parse(text: str, *, changes_logged: bool = False) -> list[PassCall]:
    """Every pass run that ``text`` (XLA's fd-2 output) logs, in order of completion;
    lines of other sources are ignored. ``changes_logged``: the log is of level
    :data:`CHANGES_LEVEL`, so a pass with no "caused changes" line changed nothing."""
    pipes: dict[str, list[tuple[str, str]]] = {}   # thread -> [(module, pipeline)]
    open_: dict[str, list[_Open]] = {}             # thread -> started, unfinished passes
    calls: list[PassCall] = []
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        thread, msg = m.groups()
        stack = pipes.setdefault(thread, [])
        started = open_.setdefault(thread, [])
        if r := _RUNNING.match(msg):
            module, pipeline = r.groups()
            if started and started[-1].name == pipeline:
                # A nested pipeline (HloPassFix runs its pipeline again until nothing changes).
                if not started[-1].is_pipeline:
                    stack.append((module, pipeline))
                started[-1].is_pipeline = True
            else:  # a top-level pipeline: whatever ran on this thread before is done
                stack[:] = [(module, pipeline)]
                started.clear()
        elif (s := _START.match(msg)) and stack:
            module, pipeline = stack[-1]
            started.append(_Open(module, pipeline, s.group(1)))
        elif c := _CHANGED.match(msg):
            for o in reversed(started):
                if o.name == c.group(1):
                    o.changed = True
                    break
        elif k := _SKIPPED.match(msg):
            for o in reversed(started):
                if o.name == k.group(1):
                    o.skipped = True
                    break
        elif t := _TIMER.match(msg):
            name, us = t.group(1), int(t.group(2))
            at = next((i for i in range(len(started) - 1, -1, -1) if started[i].name == name), None)
            if at is None:
                continue
            o = started.pop(at)
            del started[at:]  # passes left open inside it ended with it
            if o.is_pipeline and len(stack) > 1 and stack[-1][1] == name:
                stack.pop()
            calls.append(PassCall(o.module, o.pipeline, o.name, us, o.changed, o.is_pipeline, o.skipped,
                                  len(calls)))
    if changes_logged:
        calls = [replace(c, changed=bool(c.changed)) for c in calls]
    return calls


def merge_changes(timed: list[PassCall], changes: list[PassCall]) -> list[PassCall]:
    """``timed`` (a level-1 log) with what changed from ``changes`` (a level-3 log of the same
    compile): a (pipeline, pass) changed the module if any of its runs did."""
    changed = {(c.pipeline, c.name) for c in changes if c.changed}
    known = {(c.pipeline, c.name) for c in changes}
    return [replace(c, changed=(c.pipeline, c.name) in changed) if (c.pipeline, c.name) in known else c
            for c in timed]


def ran(calls: list[PassCall]) -> set[str]:
    """Names of the passes (and pipelines) that ran, not skipped."""
    return {c.name for c in calls if not c.skipped}


@dataclass(frozen=True)
class PassRow:
    """One line of the timing table: a pass of a pipeline, all its runs together."""

    name: str
    pipeline: str
    calls: int
    us: int
    changed: bool | None

    def as_dict(self) -> dict[str, Any]:
        return {"pass": self.name, "pipeline": self.pipeline, "calls": self.calls,
                "total_us": self.us, "changed": self.changed}

    def to_record(self) -> dict[str, Any]:
        """One flat dict (records.Rows.to_records)."""
        return self.as_dict()


def rows(calls: list[PassCall]) -> list[PassRow]:
    """Passes (nested pipelines left out: their time is their passes'), by total time, longest first."""
    grouped: dict[tuple[str, str], list[PassCall]] = {}
    for c in calls:
        if not c.is_pipeline and not c.skipped:
            grouped.setdefault((c.pipeline, c.name), []).append(c)
    out = []
    for (pipeline, name), runs in grouped.items():
        flags = [r.changed for r in runs]
        changed = None if any(f is None for f in flags) else any(flags)
        out.append(PassRow(name, pipeline, len(runs), sum(r.us for r in runs), changed))
    return sorted(out, key=lambda r: (-r.us, r.pipeline, r.name))


def format_table(calls: list[PassCall], label: str) -> str:
    """XLA's per-pass table for ``label`` (``cpu``, ``cuda (h100_sxm)``) as text."""
    return format_rows(rows(calls), label)


def format_rows(table: list[PassRow], label: str) -> str:
    """:func:`rows`' table as text: a title line, a header, one line per pass."""
    spent = sum(r.us for r in table)
    total = spent or 1  # the % column's divisor: no pass took time, so every row is 0%
    lines = [f"// XLA HLO passes ({label}): {sum(r.calls for r in table)} runs of {len(table)} passes, "
             f"{ms_from_us(spent):.3f} ms in passes",
             f"{'total ms':>10}  {'%':>6}  {'calls':>5}  {'changed':<7}  pass (pipeline)"]
    for r in table:
        changed = "?" if r.changed is None else ("yes" if r.changed else "no")
        lines.append(f"{ms_from_us(r.us):>10.3f}  {100 * r.us / total:>5.1f}%  {r.calls:>5}  {changed:<7}  "
                     f"{r.name} ({r.pipeline})")
    return "\n".join(lines) + "\n"


def as_json(calls: list[PassCall], label: str) -> dict[str, Any]:
    table = rows(calls)
    return {"target": label, "total_us": sum(r.us for r in table), "passes": [r.as_dict() for r in table]}
