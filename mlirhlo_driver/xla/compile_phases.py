"""Where a compile's wall time goes: XLA's phases, from the timers XLA logs, and the driver's own.

XLA times its phases with ``XLA_SCOPED_LOGGING_TIMER``, which logs ``<label> time:
<human> (<N> us) (cumulative: ...)`` at INFO when VLOG(1) is on for the file holding
the timer. Like the pass log (xla.pass_log), that is read once, when XLA loads: the
timed compile runs in isolate's helper started with :func:`with_timers`'s
environment (xla.backend.compile_logged). Measured on device-less CUDA and on CPU:

=====================================================  ===============================  =========
label                                                  what                             phase
=====================================================  ===============================  =========
``GpuCompiler::RunHloPasses for M``                    the HLO pass pipelines           hlo-passes
``Running HLO passes on [M] for CPU``                  (CPU)                            hlo-passes
``HLO pass: P``                                        one pass (hlo_pass_pipeline.cc)  hlo-passes
``GpuCompiler::RunBackend for M``                      scheduling to executable         backend
``GpuCompiler::RunBackend - IR emission for M``        emitting and compiling kernels   codegen
``Compiling [M] for CPU using JIT``                    (CPU) its whole backend          codegen
``CubinCustomKernelCompiler::CompileTritonToLlvmImpl``  one Triton fusion to LLVM IR     triton
``CubinCustomKernelCompiler::CompileMlirToLlvmImpl``   one emitter fusion to LLVM IR    emitter
``Compiled MLIR module: F``                            (CPU) one fusion to LLVM IR      emitter
``Compile module N`` / ``Compiled LLVM module: N``     LLVM optimization + codegen      llvm
``NVPTXCompiler::CompileTargetBinary - PtxToCubin``    ptxas, one LLVM module           ptxas
=====================================================  ===============================  =========

and two lines that are no timers: ``Buffer Assignment Stats for M`` ends buffer
assignment (compile_module_to_llvm_ir.cc), and ``Dumping F to D`` (dump.cc) names
the PTX file, so the kernels, of the LLVM module a codegen thread just compiled.
An HLO pass inside which XLA compiled other modules (``IR emission for`` a fusion:
``config-assigner`` on jaxlib 0.12, even at autotune level 0) is autotuning.

jaxlib 0.12 emits and compiles each fusion on XLA's codegen threads, as one LLVM
module each (Triton's lowering timed apart); jaxlib 0.9 emits every fusion on the
compiling thread, Triton's lowering inside IR emission, then compiles one LLVM
module and runs ptxas once, and has no ``RunBackend`` timer. CPU has no buffer
assignment line. What XLA does not time is ``xla-other`` (PJRT, options, dumps)
or ``backend`` (scheduling's non-pass work, thunks, the executable).

The top-level rows (depth 0) split the compiling thread's wall time: each instant
goes to the innermost phase running there (the whole of an autotuning pass is
autotuning), so they add up to the compile's wall time. Rows of depth 1 break one
down; their ``busy_us`` is time on their threads, which run at once (codegen).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..timing import ms_from_us

# The files whose VLOG(1) holds the timers above (besides hlo_pass_pipeline's pass log).
TIMER_FILES = ("gpu_compiler", "compile_module_to_llvm_ir", "cubin_custom_kernel_compiler", "nvptx_backend",
               "nvptx_compiler", "dump", "cpu_compiler", "fusion_compiler", "ir_compiler")


def with_timers(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` (xla.pass_log.log_env's) with XLA's phase timers logged too."""
    vmodule = ",".join([env["TF_CPP_VMODULE"], *(f"{f}=1" for f in TIMER_FILES)])
    return {**env, "TF_CPP_VMODULE": vmodule}


# ------------------------------------------------------------------ XLA's log

@dataclass(frozen=True)
class Event:
    """A timer XLA logged (``us``), or a marker line (``us`` None), on one thread."""

    thread: int
    end: float          # seconds since the epoch: when the line was logged
    us: int | None
    label: str
    source: str         # the file that logged it

    @property
    def start(self) -> float:
        return self.end - (self.us or 0) / 1e6


_LINE = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})\s+(\d+) ([\w.+-]+):\d+\] (.*)$")
_TIMER = re.compile(r"^(.*?) time: [^(]*\((\d+) us\)")
_MARKERS = re.compile(r"^(?:Buffer Assignment Stats for |Dumping )")


def parse_events(text: str, near: float) -> list[Event]:
    """The timer and marker lines of ``text`` (XLA's absl lines on fd 2), in log order.
    absl stamps a line with local month, day and time; ``near`` (a time.time() reading
    within months of the compile) gives the year."""
    out = []
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        message = m.group(9)
        t = _TIMER.match(message)
        if t is None and not _MARKERS.match(message):
            continue
        mon, day, hh, mm, ss, us = (int(g) for g in m.groups()[:6])
        end = _epoch(mon, day, hh, mm, ss, us, near)
        label, dur = (t.group(1), int(t.group(2))) if t else (message, None)
        out.append(Event(int(m.group(7)), end, dur, label, m.group(8)))
    return out


def _epoch(mon: int, day: int, hh: int, mm: int, ss: int, us: int, near: float) -> float:
    year = time.localtime(near).tm_year
    for y in (year, year - 1, year + 1):  # a compile across New Year's Eve
        t = time.mktime((y, mon, day, hh, mm, ss, 0, 0, -1)) + us / 1e6
        if abs(t - near) < 183 * 86400:
            return t
    return time.mktime((year, mon, day, hh, mm, ss, 0, 0, -1)) + us / 1e6


# ------------------------------------------------------------------ the phases

@dataclass(frozen=True)
class PhaseRow:
    """One row of the table. Rows of depth 0 add up to the total; a row of depth 1 is a part
    of the depth-0 row above it, one of depth 2 a part of the depth-1 row above it."""

    phase: str          # hlo-passes, autotuning, buffer-assignment, codegen, ... (PHASES), or driver:...
    name: str           # what it ran on: a pipeline, fusion, kernel, LLVM module ("" for all of it)
    wall_us: int        # its share of the wall time (depth 0); 0 for a part
    busy_us: int        # time its threads spent in it (several may run at once)
    count: int = 1      # runs, modules or kernels it covers
    depth: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# What each phase is, for the table (in the order a compile meets them).
PHASES = {
    "driver:start-up": "driver: interpreter start-up and imports",
    "driver:load": "driver: load and convert the input",
    "driver:mlir-passes": "driver: MLIR pass pipeline",
    "driver:prepare": "driver: preparing the module for XLA",
    "driver:helper": "driver: the timed compile's helper process (start, transfer)",
    "hlo-passes": "HLO passes",
    "autotuning": "autotuning",
    "buffer-assignment": "buffer assignment",
    "codegen": "IR emission and kernel compile",
    "emitter": "fusion emission (MLIR emitters)",
    "triton": "Triton compile",
    "llvm": "LLVM optimization",
    "ptxas": "ptxas",
    "backend": "backend: scheduling, thunks, executable",
    "xla-other": "XLA: other (PJRT, options, dumps)",
    "driver:changes": "driver: second compile (which passes changed the module)",
    "driver:stages": "driver: stages from the compile",
    "driver:write": "driver: finishing stages and writing",
}

_KINDS = (
    ("hlo-passes", re.compile(r"^GpuCompiler::RunHloPasses for (.+)$|^Running HLO passes on \[(.+)\] for CPU$")),
    ("hlo-pass", re.compile(r"^HLO pass: (.+)$")),
    ("backend", re.compile(r"^GpuCompiler::RunBackend for (.+)$")),
    # CPU's JIT compile is its whole backend: emission and LLVM, with buffer assignment untimed.
    ("codegen", re.compile(r"^GpuCompiler::RunBackend - IR emission for (.+)$|^Compiling \[(.+)\] for CPU using JIT$")),
    ("triton", re.compile(r"^CubinCustomKernelCompiler::CompileTritonToLlvmImpl for (.+)$")),
    ("emitter", re.compile(r"^CubinCustomKernelCompiler::CompileMlirToLlvmImpl for (.+)$"
                           r"|^Compiled MLIR module: (.+?)(?:_kernel_module)?$")),
    ("llvm", re.compile(r"^Compile module (.+)$|^Compiled LLVM module: (?:__compute_module_)?(.+?)(?:_kernel_module)?$")),
    ("ptxas", re.compile(r"^NVPTXCompiler::CompileTargetBinary - PtxToCubin for (.+)$")),
)
_UNIT_KINDS = ("emitter", "triton", "llvm", "ptxas")
_BUFFERS_DONE = re.compile(r"^Buffer Assignment Stats for (.+)$")
_DUMPING = re.compile(r"^Dumping (\S+) to ")
# Detail rows shown per list before the rest are summed in one row.
TOP = 5
# Names XLA gives LLVM modules that say nothing of what they hold.
_ANONYMOUS = ("LLVMDialectModule",)


@dataclass(frozen=True)
class _Span:
    start: float
    end: float
    kind: str
    name: str


@dataclass
class _Unit:
    """One kernel's (or LLVM module's) way through codegen: its lowering to LLVM IR, LLVM,
    ptxas, each as XLA timed it (microseconds by kind)."""

    name: str
    start: float
    end: float
    us: dict[str, int] = field(default_factory=dict)


def _classify(e: Event) -> tuple[str, str] | None:
    for kind, rx in _KINDS:
        m = rx.match(e.label)
        if m:
            return kind, next(g for g in m.groups() if g is not None)
    return None


def xla_rows(events: Sequence[Event], span: tuple[float, float], pass_calls: Iterable[Any] = (),
             names: Mapping[str, str] | None = None) -> list[PhaseRow]:
    """The phases of one compile: ``events`` (:func:`parse_events` of its log), ``span`` (its
    wall start and end, time.time() around XLA's compile call), ``pass_calls``
    (xla.pass_log.PassCall of the same log: the HLO passes by pipeline) and ``names``
    (dump file name -> what it holds, for naming LLVM modules: :func:`ptx_kernels`).
    Rows of depth 0 add up to the span; what XLA did not time is ``xla-other``."""
    c0, c1 = span
    timed = [(e, k) for e in events if e.us is not None and (k := _classify(e)) is not None]
    # The compile's own module and thread: its pass pipelines' timer, else its backend's
    # (an autotuner's compiles of fusions log IR emission too, earlier).
    top = next((ek for kind in ("hlo-passes", "backend", "codegen") for ek in timed if ek[1][0] == kind), None)
    if top is None:  # nothing known was logged: all of it is XLA's, unsplit
        return [PhaseRow("xla-other", "", _us(c1 - c0), _us(c1 - c0))]
    main_thread, module = top[0].thread, top[1][1]
    main = [_Span(e.start, e.end, kind, name) for e, (kind, name) in timed if e.thread == main_thread]
    # Passes inside which XLA compiled other modules: autotuning, all of their time.
    compiles = [s for s in main if s.kind == "codegen" and s.name != module]
    autotune = [s for s in main if s.kind == "hlo-pass" and any(_inside(c, s) for c in compiles)]
    autotune = [s for s in autotune if not any(_inside(o, s) for o in autotune)]  # the innermost
    spans = [_Span(s.start, s.end, "autotuning", s.name) for s in autotune]
    spans += [s for s in main if not any(_inside(s, a) for a in autotune)]
    buffers = _buffer_assignment(events, main_thread, module, spans)
    if buffers is not None:
        spans.append(buffers)
    own = [s for s in spans if s.kind == "codegen" and s.name == module]
    # Inside IR emission, the compiling thread's own lowering and LLVM runs are codegen's
    # parts (CPU emits some fusions there), not phases of their own.
    spans = [s for s in spans if not (s.kind in _UNIT_KINDS and any(_inside(s, c) for c in own))]
    share = _partition(spans, c0, c1)
    units = _units(events, timed, names or {}, autotune, module)
    in_codegen = [u for u in units if any(c.start <= u.start and u.end <= c.end for c in own)]
    # Codegen on the compiling thread outside IR emission (jaxlib 0.9's one LLVM module).
    alone = {kind: [u for u in units if u not in in_codegen and kind in u.us] for kind in _UNIT_KINDS}
    rows: list[PhaseRow] = []
    for phase in ("hlo-passes", "autotuning", "buffer-assignment", "codegen", *_UNIT_KINDS, "backend", "xla-other"):
        us = share.get(phase, 0)
        if not us and phase != "xla-other":
            continue
        if phase == "hlo-passes":
            rows.append(PhaseRow(phase, module, us, us))
            rows += _pipelines(pass_calls, module, {a.name for a in autotune})
        elif phase == "autotuning":
            rows.append(PhaseRow(phase, "", us, us, len(autotune)))
            for a in autotune:
                fused = [c for c in compiles if _inside(c, a)]
                rows.append(PhaseRow(phase, a.name, 0, _us(a.end - a.start), len(fused), 1))
                rows += _top(phase, [(c.name, _us(c.end - c.start)) for c in fused], depth=2)
        elif phase == "codegen":
            kernels = max((sum(kind in u.us for u in in_codegen) for kind in _UNIT_KINDS), default=0)
            busy = sum(sum(u.us.values()) for u in in_codegen)
            rows.append(PhaseRow(phase, module, us, busy or us, kernels or 1))
            for kind in _UNIT_KINDS:
                done = [(u.name, u.us[kind]) for u in in_codegen if kind in u.us]
                if done:
                    rows.append(PhaseRow(kind, "", 0, sum(t for _, t in done), len(done), 1))
                    rows += _top(kind, done, depth=2)
        elif phase in _UNIT_KINDS:
            done = [(u.name, u.us[phase]) for u in alone[phase]]
            rows.append(PhaseRow(phase, "", us, us, max(len(done), 1)))
            rows += _top(phase, done, depth=1)
        else:
            rows.append(PhaseRow(phase, "", us, us))
    return rows


def _inside(inner: _Span, outer: _Span) -> bool:
    return outer.start <= inner.start and inner.end <= outer.end and inner is not outer


def _us(seconds: float) -> int:
    return max(0, round(seconds * 1e6))


def _buffer_assignment(events: Sequence[Event], thread: int, module: str, spans: list[_Span]) -> _Span | None:
    """From the last HLO pass (or the backend's start) before XLA's buffer-assignment line
    for ``module`` on the compiling thread, to that line."""
    for e in events:
        m = _BUFFERS_DONE.match(e.label)
        if e.us is None and e.thread == thread and m and m.group(1) == module:
            if any(s.kind == "autotuning" and s.start <= e.end <= s.end for s in spans):
                continue
            before = [s.end for s in spans if s.kind in ("hlo-pass", "hlo-passes") and s.end <= e.end]
            opened = [s.start for s in spans if s.kind == "backend" and s.start <= e.end <= s.end]
            start = max(before + opened, default=None)
            return _Span(start, e.end, "buffer-assignment", module) if start is not None else None
    return None


def _partition(spans: Sequence[_Span], c0: float, c1: float) -> dict[str, int]:
    """Microseconds of [c0, c1] per phase: each instant to the innermost span covering it
    (the latest started, then the shortest), an autotuning one before any; none: xla-other."""
    cuts = sorted({c0, c1, *(min(max(t, c0), c1) for s in spans for t in (s.start, s.end))})
    out: dict[str, int] = {}
    for a, b in zip(cuts, cuts[1:]):
        mid = (a + b) / 2
        covering = [s for s in spans if s.start <= mid < s.end]
        phase = "xla-other"
        if covering:
            inner = max(covering, key=lambda s: (s.kind == "autotuning", s.start, -(s.end - s.start)))
            phase = "hlo-passes" if inner.kind == "hlo-pass" else inner.kind
        out[phase] = out.get(phase, 0) + _us(b - a)
    return out


def _pipelines(pass_calls: Iterable[Any], module: str, autotuning: set[str]) -> list[PhaseRow]:
    """The HLO passes of ``module`` by pipeline (xla.pass_log rows), autotuning left out."""
    from . import pass_log

    by: dict[str, list[Any]] = {}
    for r in pass_log.rows([c for c in pass_calls if c.module == module]):
        if r.name not in autotuning:
            by.setdefault(r.pipeline, []).append(r)
    return _top("pipeline", [(p, sum(r.us for r in rs)) for p, rs in by.items()], depth=1,
                counts={p: sum(r.calls for r in rs) for p, rs in by.items()})


def _top(phase: str, items: Sequence[tuple[str, int]], *, depth: int,
         counts: Mapping[str, int] | None = None) -> list[PhaseRow]:
    """Rows for the :data:`TOP` longest ``items`` (name, us), the rest in one row."""
    ranked = sorted(items, key=lambda i: (-i[1], i[0]))
    rows = [PhaseRow(phase, name, 0, us, (counts or {}).get(name, 1), depth) for name, us in ranked[:TOP]]
    rest = ranked[TOP:]
    if rest:
        rows.append(PhaseRow(phase, f"({len(rest)} more)", 0, sum(us for _, us in rest),
                             sum((counts or {}).get(n, 1) for n, _ in rest), depth))
    return rows


def _units(events: Sequence[Event], timed: Sequence[tuple[Event, tuple[str, str]]], names: Mapping[str, str],
           autotune: Sequence[_Span], module: str) -> list[_Unit]:
    """Each kernel's way through codegen (runs inside an autotuning pass are the autotuner's,
    left out). LLVM and then ptxas run on one thread, with the PTX dumped between them: that
    file's kernels name the pair, else a name the LLVM module has. The lowering to LLVM IR
    may run on another thread just before: one without a name of its own (GPU's are
    "for <module>") goes with the first unclaimed LLVM run to start after it ends."""
    runs: dict[str, list[Event]] = {k: [] for k in _UNIT_KINDS}
    named: dict[int, str] = {}
    for e, (kind, name) in timed:
        if kind in _UNIT_KINDS and not any(a.start <= e.start and e.end <= a.end for a in autotune):
            runs[kind].append(e)
            if name not in (*_ANONYMOUS, module):
                named[id(e)] = name
    dumps: dict[int, list[tuple[float, str]]] = {}
    for e in events:
        m = _DUMPING.match(e.label) if e.us is None else None
        if m:
            file = re.sub(r"^module_\d+\.", "", m.group(1).rsplit("/", 1)[-1])
            held = names.get(file) or names.get(file.split(".", 1)[-1])
            if held:
                dumps.setdefault(e.thread, []).append((e.end, held))
    units: list[_Unit] = []
    # LLVM, then ptxas on the same thread before its next LLVM run: one unit.
    ptxas = sorted(runs["ptxas"], key=lambda e: e.start)
    for llvm in sorted(runs["llvm"], key=lambda e: e.start):
        nxt = min((e.start for e in runs["llvm"] if e.thread == llvm.thread and e.start > llvm.start), default=None)
        after = [p for p in ptxas if p.thread == llvm.thread and p.start >= llvm.end - 1e-3
                 and (nxt is None or p.end <= nxt)]
        unit = _Unit("", llvm.start, after[0].end if after else llvm.end, {"llvm": llvm.us or 0})
        if after:
            ptxas.remove(after[0])
            unit.us["ptxas"] = after[0].us or 0
        dumped = [n for t, n in dumps.get(llvm.thread, []) if unit.start <= t <= unit.end]
        unit.name = dumped[0] if dumped else named.get(id(llvm), "")
        units.append(unit)
    units += [_Unit("", p.start, p.end, {"ptxas": p.us or 0}) for p in ptxas]
    claimed: set[int] = set()
    for lowering in sorted(runs["emitter"] + runs["triton"], key=lambda e: e.end):
        kind = "triton" if lowering in runs["triton"] else "emitter"
        own = named.get(id(lowering))
        later = [(u.start - lowering.end, i) for i, u in enumerate(units)
                 if i not in claimed and "llvm" in u.us and not ({"emitter", "triton"} & set(u.us))
                 and u.start >= lowering.end - 1e-3]
        if own is None and later:
            _, i = min(later)
            claimed.add(i)
            units[i].us[kind] = lowering.us or 0
            units[i].start = lowering.start
        else:
            units.append(_Unit(own or "", lowering.start, lowering.end, {kind: lowering.us or 0}))
    units.sort(key=lambda u: u.start)
    for i, u in enumerate(units, 1):
        u.name = u.name or f"LLVM module {i}"
    return units


_PTX_ENTRY = re.compile(r"^(?:\.visible\s+)?\.entry\s+(\w+)", re.M)


def ptx_kernels(files: Mapping[str, bytes]) -> dict[str, str]:
    """Dump file name -> the kernels its PTX defines (``a, b`` or ``a (+3)``), for naming the
    LLVM modules of :func:`xla_rows`."""
    out = {}
    for key, data in files.items():
        if key == "ptx" or key.endswith(".ptx"):  # jaxlib 0.9 writes one, unnumbered
            kernels = sorted(set(_PTX_ENTRY.findall(data.decode("utf-8", "replace"))))
            if kernels:
                out[key] = kernels[0] + (f" (+{len(kernels) - 1})" if len(kernels) > 1 else "")
    return out


# ------------------------------------------------------------------ the driver's own

_begun = False


@dataclass
class Clock:
    """When the driver's own steps of one module ended (time.time()), and the XLA compiles
    timed meanwhile; plain data, so a worker's comes back with its result."""

    start: float
    marks: list[tuple[str, float]] = field(default_factory=list)
    compiles: list[TimedCompile] = field(default_factory=list)

    @classmethod
    def begin(cls) -> Clock:
        """A module's clock. The first in a process starts when the process did (its
        start-up, interpreter and imports, is that module's first row); later ones now."""
        global _begun
        started = process_start() if not _begun else None
        _begun = True
        clock = cls(started or time.time())
        if started is not None:
            clock.mark("driver:start-up")
        return clock

    def mark(self, phase: str) -> None:
        """``phase`` (a key of :data:`PHASES`) ended now; it began at the previous mark."""
        self.marks.append((phase, time.time()))


@dataclass(frozen=True)
class TimedCompile:
    """One instrumented compile as the driver saw it: the timed compile's call (helper start
    and transfer included), XLA's compile inside it and its phases, and the span of the
    second compile (the one that says which passes changed the module)."""

    label: str                       # cpu, cuda (h100_sxm)
    call: tuple[float, float]
    xla: tuple[float, float]
    rows: tuple[PhaseRow, ...]
    changes: tuple[float, float] | None = None


def process_start() -> float | None:
    """When this process started (time.time() scale, to the clock tick), from /proc; None
    where there is none."""
    import os

    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - uptime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def report_rows(clock: Clock, end: float) -> list[PhaseRow]:
    """One module's table: the driver's steps (``clock``'s marks), each timed compile's own
    rows where it ran, and what came after up to ``end``. Depth-0 rows add up to
    ``end - clock.start``: time between marks and compiles goes to the step under way
    (before the first compile: preparing the module for XLA; between compiles and after
    the last: stages; after the last mark: writing)."""
    rows: list[PhaseRow] = []
    at = clock.start
    several = len(clock.compiles) > 1
    timeline: list[tuple[float, str, TimedCompile | None]] = [(t, phase, None) for phase, t in clock.marks]
    timeline += [(c.call[0], "", c) for c in clock.compiles]
    seen_compile = False
    for t, phase, c in sorted(timeline, key=lambda e: e[0]):
        if c is None:
            rows.append(PhaseRow(phase, "", _us(t - at), _us(t - at)))
            at = max(at, t)
            continue
        if c.call[0] > at:
            gap = _us(c.call[0] - at)
            rows.append(PhaseRow("driver:stages" if seen_compile else "driver:prepare", "", gap, gap))
        seen_compile = True
        helper = _us((c.xla[0] - c.call[0]) + (c.call[1] - c.xla[1]))
        rows.append(PhaseRow("driver:helper", c.label if several else "", helper, helper))
        for r in c.rows:
            named = r.name if not (several and r.depth == 0) else f"{c.label}{': ' + r.name if r.name else ''}"
            rows.append(PhaseRow(r.phase, named, r.wall_us, r.busy_us, r.count, r.depth))
        at = c.call[1]
        if c.changes is not None:
            second = _us(c.changes[1] - c.changes[0])
            rows.append(PhaseRow("driver:changes", c.label if several else "", second, second))
            at = c.changes[1]
    if end > at:
        rows.append(PhaseRow("driver:write", "", _us(end - at), _us(end - at)))
    return _merged(rows)


def _merged(rows: list[PhaseRow]) -> list[PhaseRow]:
    """Consecutive depth-0 driver rows of one phase and name as one."""
    out: list[PhaseRow] = []
    for r in rows:
        last = out[-1] if out else None
        if (last is not None and r.depth == 0 and last.depth == 0 and r.phase == last.phase
                and r.phase.startswith("driver:") and r.name == last.name):
            out[-1] = PhaseRow(r.phase, r.name, last.wall_us + r.wall_us, last.busy_us + r.busy_us,
                               last.count + r.count)
        else:
            out.append(r)
    return out


def report(results: Iterable[Any], fmt: str, end: float | None = None) -> str:
    """What ``--timing`` prints last, for each result (``name``, and ``phases``: a
    :class:`Clock`, or None) that has a clock: its table (``fmt`` text), or one JSON object
    per module, ``{"module", "phases": as_json}`` (``fmt`` json). ``end``: when the command's
    work ended (now)."""
    import json

    end = time.time() if end is None else end
    out = []
    for r in results:
        clock = getattr(r, "phases", None)
        if clock is None:
            continue
        rows = report_rows(clock, end)
        labels = ", ".join(c.label for c in clock.compiles)
        title = f"{r.name} on {labels}" if labels else r.name
        out.append(json.dumps({"module": r.name, "phases": as_json(rows, title)}, indent=2) + "\n" if fmt == "json"
                   else format_table(rows, title))
    return "".join(out)


# ------------------------------------------------------------------ showing it

def format_table(rows: Sequence[PhaseRow], title: str) -> str:
    """The rows as text: a title with the total, a header, one line per row, parts indented
    under the row they break down (their wall and % left blank: they are not in the total)."""
    total = sum(r.wall_us for r in rows if r.depth == 0)
    lines = [f"// compile phases: {title}: {ms_from_us(total):.1f} ms wall",
             f"{'wall ms':>10}  {'%':>6}  {'busy ms':>9}  {'n':>5}  phase"]
    for r in rows:
        if r.depth == 0 or not r.name:
            what = PHASES.get(r.phase, r.phase) + (f" ({r.name})" if r.name else "")
        else:
            what = r.name
        wall = (f"{ms_from_us(r.wall_us):>10.1f}  {100 * r.wall_us / (total or 1):>5.1f}%" if r.depth == 0
                else f"{'':>10}  {'':>6}")
        lines.append(f"{wall}  {ms_from_us(r.busy_us):>9.1f}  {r.count:>5}  {'  ' * r.depth}{what}")
    return "\n".join(lines) + "\n"


def as_json(rows: Sequence[PhaseRow], title: str) -> dict[str, Any]:
    return {"title": title, "total_us": sum(r.wall_us for r in rows if r.depth == 0),
            "phases": [r.as_dict() for r in rows]}
