"""XLA's HLO passes seen like MLIR's: per-pass timing and IR printed around passes.

What ``--timing``, ``--print-ir-after-change``, ``--print-ir-after=PASS`` and
``--print-ir-before=PASS`` add when a platform is given. Nothing here runs
unless one of them is asked for; then:

* timing: the compile that serves the stages runs in a helper whose XLA logs
  its passes with their times (xla.pass_log, level 1) and its phase timers
  (xla.compile_phases: ``Instrumented.timed``), and one more compile logs which
  passes changed the module (level 3, which hashes the module before every
  pass, inside the pass's timer: its times would be wrong);
* printed IR comes from XLA's per-pass dumps (``xla_dump_hlo_pass_re``): ``.*``
  dumps after each pass that changed the module, a regex of names dumps
  before and after each run of those passes, changed or not. They ride on the
  compile above where there is one, else on the stages' compile.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import DriverError, did_you_mean


@dataclass(frozen=True)
class XlaInstrumentation:
    """What to show of XLA's passes (the flags' values)."""

    timing: bool = False
    timing_format: str = "text"               # text or json
    after_change: bool = False
    before: tuple[str, ...] = ()              # XLA pass names
    after: tuple[str, ...] = ()

    @property
    def wanted(self) -> bool:
        return bool(self.timing or self.after_change or self.before or self.after)


@dataclass(frozen=True)
class PrintedIR:
    """One HLO module printed around one run of a pass."""

    when: str          # "before" or "after"
    pass_name: str
    pipeline: str
    text: str

    def header(self) -> str:
        return f"// -----// HLO {self.when} {self.pass_name} ({self.pipeline}) //----- //"


@dataclass
class Instrumented:
    """An instrumented compile: the artifacts that serve the stages, and what it showed."""

    art: Any                                   # xla.backend.XlaArtifacts
    calls: list[Any] | None = None             # xla.pass_log.PassCall, with timing
    printed: list[PrintedIR] = field(default_factory=list)
    timed: Any = None                          # xla.compile_phases.TimedCompile, with timing


_ALL_CHANGES = ".*"


def _names_re(names: tuple[str, ...]) -> str:
    return "^(?:" + "|".join(re.escape(n) for n in sorted(set(names))) + ")$"


def compile(module: Any, module_name: str, spec: Any, inst: XlaInstrumentation) -> Instrumented:
    """Compile ``module`` (as XLA compiles it: xla.backend.module_for_xla) once for its stages,
    as ``spec`` (xla.backend.CompileSpec) says, plus what ``inst`` needs; raises
    DriverError for a named pass that did not run."""
    from . import backend, pass_log

    per_pass = spec.with_(dumps=(backend.HLO_TEXT,), emitters=())  # per-pass HLO reads only text dumps

    regexes = ([_ALL_CHANGES] if inst.after_change else []) + \
              ([_names_re(inst.before + inst.after)] if inst.before or inst.after else [])
    dump_arts: list[tuple[str, Any]] = []
    timed = None
    if inst.timing:
        from . import compile_phases
        from .passes import label

        started = time.time()
        # PTX dumped too (CUDA): its kernels name the LLVM modules of the phase table.
        dumps = tuple(sorted({*spec.dumps, backend.PTX})) if spec.platform == "cuda" else spec.dumps
        art = backend.compile(module, spec.with_(dumps=dumps, pass_log=pass_log.TIMES_LEVEL), module_name).art
        called = time.time()
        rx = regexes.pop(0) if regexes else None
        changes = backend.compile(module, per_pass.with_(pass_log=pass_log.CHANGES_LEVEL, pass_dump_re=rx),
                                  module_name).art
        calls = pass_log.merge_changes(art.pass_calls or [], changes.pass_calls or [])
        if art.phases is not None and art.compile_span is not None:
            timed = compile_phases.TimedCompile(label(spec.target), (started, called), art.compile_span,
                                                tuple(art.phases), (called, time.time()))
        if rx is not None:
            dump_arts.append((rx, changes))
    else:
        rx = regexes.pop(0) if regexes else None
        art = backend.compile(module, spec.with_(pass_dump_re=rx), module_name).art
        calls = None
        if rx is not None:
            dump_arts.append((rx, art))
    for rx in regexes:
        dump_arts.append((rx, backend.compile(module, per_pass.with_(pass_dump_re=rx), module_name).art))
    out = Instrumented(art, calls, timed=timed)
    for rx, dumped in dump_arts:
        out.printed += _printed(dumped, rx, inst)
    _check_named(out, dump_arts, inst, lambda: backend.compile(
        module, per_pass.with_(pass_log=pass_log.TIMES_LEVEL), module_name).art.pass_calls or [])
    return out


def _printed(art: Any, regex: str, inst: XlaInstrumentation) -> list[PrintedIR]:
    from . import backend

    ends = ("pipeline-start", "pipeline-end")
    out = []
    for d in backend.pass_dumps(art):
        text = art.files[d.key].decode("utf-8", "replace")
        if regex == _ALL_CHANGES:
            if d.after not in ends:
                out.append(PrintedIR("after", d.after, d.pipeline, text))
            continue
        if d.before in inst.before:
            out.append(PrintedIR("before", d.before, d.pipeline, text))
        if d.after in inst.after:
            out.append(PrintedIR("after", d.after, d.pipeline, text))
    return out


def _check_named(out: Instrumented, dump_arts: list[tuple[str, Any]], inst: XlaInstrumentation,
                 logged: Any) -> None:
    """A named pass that printed nothing did not run on this module: say so, with the names
    that ran (from XLA's pass log: ``logged()`` compiles for it when there is none yet)."""
    for flag, names in (("--print-ir-before", inst.before), ("--print-ir-after", inst.after)):
        when = flag.rsplit("-", 1)[1]
        for name in names:
            if any(p.pass_name == name and p.when == when for p in out.printed):
                continue
            seen = {c.name for c in (out.calls if out.calls is not None else logged())}
            raise DriverError(f"XLA pass '{name}' did not run on this module", file=flag,
                              hint=did_you_mean(name, sorted(seen)) or "see --list-passes --platform")
