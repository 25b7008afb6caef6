"""XLA's HLO passes, one at a time: what ``mlirhlo opt --xla-passes/--after-pass``,
``opt --list-passes --platform`` and ``hlo-opt --passes/--list-passes`` share.

jaxlib has no pass registry and runs XLA passes only inside a platform's
pipeline. So a pass list runs as that pipeline with only those passes (and the
pipelines around them) enabled, and the HLO is read from XLA's per-pass dumps;
pass names are learnt from the dumps of a normal compile.

Promises: names are checked against the pipelines before the filtered compile,
and a name no pipeline ran is a :class:`~mlirhlo_driver.errors.DriverError`
naming each pipeline tried. Nothing is printed but one-line notes on stderr
where a flag had to be set for a pass to exist at all.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import DriverError

# Passes XLA adds to its pipeline only when a flag asks for them.
GATED_PASSES = {
    # gpu_compiler.cc: added when the distance threshold is > 0 (XLA's default is 0).
    "schedule-aware-collective-cse": ("xla_gpu_experimental_collective_cse_distance_threshold", 100),
}

_TEXT = ("hlo-text",)  # xla.backend.HLO_TEXT: per-pass dumps are read as text; XLA would write each as HTML too


def label(target: Any) -> str:
    """How a target (targets.Target, or StageOptions holding one) is named in listings and
    tables: ``cpu``, ``cuda (h100_sxm)``."""
    return getattr(target, "target", target).label()


def _spec(target: Any, **kw: Any) -> Any:
    """The compile spec (xla.backend.CompileSpec) of a pass-list compile for ``target``."""
    from .backend import CompileSpec

    return CompileSpec(getattr(target, "target", target), dumps=_TEXT, **kw)


def _with_gates(target: Any, names: list[str], notes: list[str]) -> Any:
    """A target that makes XLA add the gated passes among ``names`` (a note in ``notes`` says so)."""
    flags = dict(target.xla_flags)
    for n in names:
        gate = GATED_PASSES.get(n)
        if gate and not flags.get(gate[0]):
            notes.append(f"XLA adds {n} to its pipeline only with --{gate[0]} > 0: using {gate[1]}")
            flags[gate[0]] = gate[1]
    return target.with_flags(flags)


def hlo_after_passes(module: Any, name: str, names: list[str], candidates: list[Any],
                     arts: list[Any] | None = None, notes: list[str] | None = None) -> str:
    """HLO after XLA's passes ``names``, run alone in the first of ``candidates``
    (StageOptions, one per pipeline to try) whose pipeline runs them all; the
    compile that ran them is appended to ``arts``, what the user should know to ``notes``."""
    notes = [] if notes is None else notes
    from . import backend as xla_backend
    from . import pass_log

    tried: list[tuple[str, list[str], set[str]]] = []
    for target in candidates:
        target = getattr(target, "target", target)
        target = _with_gates(target, names, notes) if target.platform == "cuda" else target
        # XLA's pass log says which passes ran, in which pipelines, changed or not.
        known = pipelines_of(xla_backend.compile(module, _spec(target, pass_log=pass_log.TIMES_LEVEL,
                                                               keep_going=True), name).art.pass_calls or [])
        seen = {p for ps in known.values() for p in ps}
        missing = [n for n in names if n not in seen]
        if missing:
            tried.append((label(target), missing, seen))
            continue
        # A pass runs only if its enclosing pipelines are enabled too. Enabling just
        # the pipelines that hold the passes keeps other passes from running; a
        # pipeline nested in another one needs them all enabled.
        holding = sorted(pipe for pipe, ps in known.items() if any(n in ps for n in names))
        for pipes in (holding, sorted(known)):
            art = xla_backend.compile(module, _spec(target, pass_dump_re=".*", only_passes=tuple(names + pipes),
                                                    keep_going=True, isolated=True), name).art
            # Dump file names spell a pipeline's spaces as underscores.
            ran = {_file_safe(d.pipeline) for d in xla_backend.pass_dumps(art)}
            if all(_file_safe(pipe) in ran for pipe in holding):
                break
        if arts is not None:
            arts.append(art)
        return xla_backend.hlo_after_only(art, names)
    hint = "jaxlib runs XLA passes only inside a platform's pipeline; see --list-passes"
    if len(tried) == 1:
        from ..errors import did_you_mean

        hint = did_you_mean(tried[0][1][0], tried[0][2]) or hint
    raise DriverError("XLA passes not run: " + "; ".join(f"{label}: {', '.join(missing)} did not run"
                                                         for label, missing, _ in tried), hint=hint)


def _file_safe(name: str) -> str:
    return re.sub(r"[^\w.-]", "_", name)


def pipelines_of(calls: list[Any]) -> dict[str, list[str]]:
    """Pass names (nested pipelines included) that ran in each pipeline of a pass log, in first-run order."""
    grouped: dict[str, list[str]] = {}
    for c in sorted(calls, key=lambda c: c.index):
        names = grouped.setdefault(c.pipeline, [])
        if not c.skipped and c.name not in names:
            names.append(c.name)
    return grouped


def hlo_after_pass(module: Any, name: str, target: Any, pass_name: str) -> str:
    """HLO right after the first run of ``pass_name`` in the normal pipeline."""
    from . import backend as xla_backend

    art = xla_backend.compile(module, _spec(target, pass_dump_re=".*"), name).art
    return xla_backend.hlo_after_pass(art, pass_name)


def split_pass_names(spec: str) -> tuple[list[str], list[str]]:
    """(XLA names, MLIR names) from an hlo-opt ``--passes`` list; unprefixed names are XLA's."""
    xla, mlir = [], []
    for raw in (s.strip() for s in spec.split(",")):
        if not raw:
            continue
        if raw.startswith("mlir:"):
            mlir.append(raw[5:])
        elif raw.startswith("xla:"):
            xla.append(raw[4:])
        else:
            xla.append(raw)
    return xla, mlir


def run_pass_list(m: Any, spec: str, candidates: list[Any], arts: list[Any] | None = None,
                  notes: list[str] | None = None) -> str:
    """hlo-opt's ``--passes``: XLA's HLO passes on the module (see :func:`hlo_after_passes`),
    printed as HLO. Names only MLIR knows (or ``mlir:NAME``) run as MLIR passes
    instead, printed as StableHLO. What the user should know goes to ``notes``."""
    notes = [] if notes is None else notes
    xla_names, mlir_names = split_pass_names(spec)
    if xla_names and mlir_names:
        raise DriverError("--passes mixes XLA and MLIR passes: run them in two steps",
                          hint=f"XLA: {','.join(xla_names)}; MLIR: {','.join(mlir_names)}")
    if xla_names:
        try:
            return hlo_after_passes(m.module, m.name, xla_names, candidates, arts, notes)
        except DriverError:
            # Names XLA's pipelines do not run but MLIR has resolve to MLIR
            # (unless forced with xla:); XLA's error stands otherwise.
            from ..mlir import passes as mlir_passes

            catalog = mlir_passes.all_passes()
            if any(raw.strip().startswith("xla:") for raw in spec.split(",")) \
                    or not all(n in catalog for n in xla_names):
                raise
            notes.append(f"{', '.join(xla_names)}: not in XLA's pipelines; run as MLIR passes")
            mlir_names = xla_names
    from ..ir import emit
    from ..mlir import pipeline

    root = pipeline.resolve(None, passes=",".join(mlir_names))
    pipeline.run(m.module, root, module_name=m.name, source_for_reproducer=m.source)
    return emit.stablehlo_text(m.module)


def listing(candidates: list[Any], modules: list[Any] | None = None) -> str:
    """XLA's HLO pass names per pipeline, for each of ``candidates`` (StageOptions).

    Read from XLA's own log of the passes its pipelines ran on ``modules``
    (inputs.LoadedModule), or on xla.backend's reference module, whether they
    changed the module or not. Nested pipelines are listed as passes of theirs.
    """
    from . import backend as xla_backend
    from . import pass_log

    if modules:
        compiled = [(xla_backend.module_for_xla(m.module, m.source, m.line_offset), m.name) for m in modules]
        source = " for the given modules"
    else:
        compiled = [(xla_backend.reference_module(), "reference")]
        source = ""
    lines = []
    for options in candidates:
        options = getattr(options, "target", options)
        grouped: dict[str, list[str]] = {}
        for module, name in compiled:
            art = xla_backend.compile(module, _spec(options, pass_log=pass_log.TIMES_LEVEL, keep_going=True),
                                      name).art
            for pipe, names in pipelines_of(art.pass_calls or []).items():
                have = grouped.setdefault(pipe, [])
                have.extend(n for n in names if n not in have)
        lines.append(f"# XLA HLO passes of the {label(options)} pipeline (--platform={options.platform.upper()})"
                     f"{source}, by pipeline")
        for pipe, names in grouped.items():
            if names:
                lines.append(f"{pipe}:")
                lines.extend(f"  {n}" for n in names)
                if options.platform == "cuda" and pipe == "collective-optimizations":
                    lines.extend(f"  {n} (with --{flag} > 0)" for n, (flag, _) in GATED_PASSES.items()
                                 if n not in names)
        lines.append("")
    return "\n".join(lines)
