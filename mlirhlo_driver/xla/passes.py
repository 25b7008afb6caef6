"""XLA's HLO passes, one at a time: what ``mlirhlo opt --xla-passes/--after-pass``,
``opt --list-passes --platform`` and ``hlo-opt --passes/--list-passes`` share.

jaxlib has no pass registry and runs XLA passes only inside a platform's
pipeline. So a pass list runs as that pipeline with every other pass disabled (the
pipelines around the passes keep running, with only them in them), and the HLO is read
from XLA's per-pass dumps; pass names are learnt from XLA's log of a normal compile.

Promises: names are checked against the pipelines before the filtered compile,
and a name no pipeline ran is a :class:`~mlirhlo_driver.errors.DriverError`
naming each pipeline tried. Nothing is printed but one-line notes on stderr
where a flag had to be set for a pass to exist at all.

hlo-opt's ``--passes`` (:func:`run_in_order`) runs each named pass once, in the order
given, as XLA's hlo-opt builds a pipeline of just those passes: one compile per pass
with every pass that runs before its first run disabled (:func:`_before`), the HLO read
from XLA's dump right after that first run (the pass as its pipeline configures it
there), and fed to the next pass's compile (a pass that changed nothing leaves no dump:
the module goes on as it was). One compile
with every named pass enabled would run them in XLA's pipeline order instead, each as
often as its pipelines run it. An unknown name is XLA's ``INVALID_ARGUMENT: Pass NAME
not found.``; XLA's test-only passes (compiled into XLA's own hlo-opt alone) say so.
The module printed keeps the user's names (:mod:`mlirhlo_driver.ir.hlo_names`) and is
printed as XLA's ``HloModule::ToString`` prints it.

XLA's hlo-opt registers its hardware-independent passes for every platform; jaxlib's
CPU and CUDA pipelines each run some that the other does not. With ``--platform`` the
other pipeline lends those (``HARDWARE_INDEPENDENT``): listed, and run there, with a note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CompileError, DriverError, PipelineError, did_you_mean

# XLA's hardware-independent passes (xla/hlo/tools/hlo_opt/opt_lib.cc registers them for
# every platform) that only one of jaxlib's CPU and CUDA pipelines runs (measured, jaxlib
# 0.12): by their XLA names, the classes' names for passes of the same job differing
# (gpu-all-gather-combiner, tree-reduction-rewriter: the CUDA pipeline's own classes).
HARDWARE_INDEPENDENT = frozenset({
    # run by the CUDA pipeline alone
    "all-gather-bcast-reorder", "all-reduce-contiguous", "all-reduce-folder", "async-collective-creator",
    "collective-quantizer", "collectives-schedule-linearizer", "computation-deduplicator",
    "convert-memory-placement-to-internal-annotations", "convert-mover", "convolution-pred-expander",
    "convolution_4d_expander", "dot-merger", "dot_dimension_merger", "host-memory-transfer-asyncifier",
    "host-offload-legalize", "host-offloader", "simplify-fp-conversions", "slice-sinker",
    "stable-sort-expander",
    # run by the CPU pipeline alone
    "batch-dot-simplification", "convolution-group-converter", "literal-canonicalizer",
    "tree_reduction_rewriter",
})
# The pipeline that lends a platform its missing hardware-independent passes.
LENDERS = {"cpu": "cuda", "cuda": "cpu"}

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
        # Every other pass disabled by name: the pipelines holding these run with only them
        # (naming a pipeline in xla_enable_hlo_passes_only would run it whole: _alone says why).
        art = xla_backend.compile(module, _spec(target, pass_dump_re=".*", disabled_passes=tuple(_alone(known, names)),
                                                keep_going=True, isolated=True), name).art
        if arts is not None:
            arts.append(art)
        return xla_backend.hlo_after_only(art, names)
    hint = "jaxlib runs XLA passes only inside a platform's pipeline; see --list-passes"
    if len(tried) == 1:
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
                  notes: list[str] | None = None, trace: PassTrace | None = None,
                  lenders: Sequence[Any] = ()) -> str:
    """hlo-opt's ``--passes``: XLA's HLO passes on the module, each once, in the order given
    (:func:`run_in_order`), printed as HLO. Names only MLIR knows (or ``mlir:NAME``) run as MLIR passes
    instead, printed as StableHLO. What the user should know goes to ``notes``."""
    notes = [] if notes is None else notes
    xla_names, mlir_names = split_pass_names(spec)
    if xla_names and mlir_names:
        raise DriverError("--passes mixes XLA and MLIR passes: run them in two steps",
                          hint=f"XLA: {','.join(xla_names)}; MLIR: {','.join(mlir_names)}")
    if xla_names:
        try:
            return run_in_order(m, xla_names, candidates, arts, notes, trace, lenders)
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


# ------------------------------------------------------------- hlo-opt --passes

# XLA's test-only passes (xla/hlo/tools/tests/hlo_opt_test_only_passes.h): registered in
# the hlo-opt binary XLA's lit tests run, and in no XLA library jaxlib links.
TEST_ONLY_PASSES = ("test-only-foo2bar", "test-only-bar2hello",
                    "test-only-algebraic-simplifier-with-onednn-enabled", "test-only-xla-builder")
# The dumps XLA prints after a pass elide large constants ({...}) unless asked; they are
# parsed back here, so they are asked for. Printing follows the user's flag again.
_LARGE_CONSTANTS = "xla_dump_large_constants"
# Passes named with a process-wide counter (measured: the CPU pipeline's
# apply-xla-transforms-0 and -1 on one compile, -7 and -8 on a later one in the same
# process): no name of theirs runs in another process, so none is listed.
_COUNTED = re.compile(r"^apply-xla-transforms-\d+$")


@dataclass
class _PassLog:
    """XLA's log of one compile's passes: ``pipelines`` as :func:`pipelines_of` gives them
    (passes logged as skipped under ``""``), and ``order``, every pass and pipeline name by
    its first completion (a pass's first run; a pipeline's after the passes in it)."""

    pipelines: dict[str, list[str]]
    order: list[str]

    def merged(self, other: _PassLog) -> _PassLog:
        return _PassLog({**other.pipelines, **self.pipelines}, self.order or other.order)


def _known_pipelines(module: Any, name: str, target: Any) -> _PassLog:
    """``target``'s pipeline on ``module``, from XLA's pass log. A module XLA refuses before
    any pass ran is its CompileError."""
    from . import backend as xla_backend
    from . import pass_log

    art = xla_backend.compile(module, _spec(target, pass_log=pass_log.TIMES_LEVEL, keep_going=True), name).art
    calls = art.pass_calls or []
    if not calls and art.compile_error:
        # Nothing ran: XLA refused the module before its passes (its error, not "no such pass").
        raise CompileError(art.compile_error)
    known = pipelines_of(calls)
    for c in calls:  # a nested pipeline that ran no pass of its own is a pipeline all the same
        if c.is_pipeline:
            known.setdefault(c.name, [])
    skipped = sorted({c.name for c in calls if c.skipped} - {n for ns in known.values() for n in ns})
    order = list(dict.fromkeys(c.name for c in sorted(calls, key=lambda c: c.index) if not c.skipped))
    return _PassLog({**known, "": skipped} if skipped else known, order)


def _holding(known: dict[str, list[str]], wanted: set[str]) -> set[str]:
    """The pipelines that hold any of ``wanted``, and those that hold them, up to the top."""
    holding = {pipe for pipe, names in known.items() if wanted & set(names) and pipe}
    grew = True
    while grew:
        outer = {pipe for pipe, names in known.items() if pipe and holding & set(names)}
        grew = not outer <= holding
        holding |= outer
    return holding


def _before(log: _PassLog, pass_name: str) -> list[str]:
    """What to disable (``xla_disable_hlo_passes``) so that ``pass_name`` runs first on the
    module as XLA received it: every pass and pipeline that ran before its first run, but
    not those holding it (a pipeline's name disables every instance of it). What runs after
    it runs as in a normal compile: its HLO is read from the dump right after its first run,
    and XLA's codegen gets a module lowered as usual (with every other pass disabled, CPU
    codegen aborted on the rewritten reduce-window of tests/data/xla_tools/input.hlo, and
    the helper it ran in was started again: 10 s)."""
    if pass_name not in log.order:
        return _alone(log.pipelines, pass_name)
    first = log.order.index(pass_name)
    return sorted(set(log.order[:first]) - _holding(log.pipelines, {pass_name}) - {pass_name})


def _alone(known: dict[str, list[str]], pass_name: str | list[str]) -> list[str]:
    """What to disable (``xla_disable_hlo_passes``) so that of ``known``'s pipelines only
    ``pass_name`` (or those of a list) runs: every other pass, and every pipeline that holds
    none of them.

    Not ``xla_enable_hlo_passes_only``: a pipeline named there runs whole (XLA's
    HloPassPipeline::GetEnabledPasses: "Enable the full pass"), and a pass inside a
    nested pipeline runs only if that pipeline is named, so enabling one pass ran others
    beside it (measured: ``fusion`` with its pipeline enabled also ran reshape-decomposer,
    fusion-wrapper and copy-insertion). Disabling by name leaves the pipelines holding the
    pass running with only that pass in them; XLA refuses the two flags together. A pass
    named with a process-wide counter (``_COUNTED``) has another name in that compile and
    is not disabled: the CPU pipeline's run last, after scheduling, so they follow all but
    cse_barrier_expander, and what they do after the pass is not read."""
    wanted = {pass_name} if isinstance(pass_name, str) else set(pass_name)
    holding = _holding(known, wanted)
    everything = {n for names in known.values() for n in names} | {p for p in known if p}
    return sorted(everything - holding - wanted)


def pass_names(known: dict[str, list[str]], platform: str) -> list[str]:
    """The passes (not the pipelines holding them) of a pass log's pipelines, in first-run
    order, with the passes XLA adds only when a flag asks (``GATED_PASSES``) for CUDA; not
    those whose name holds a process-wide counter (``_COUNTED``)."""
    pipes = set(known)
    out: list[str] = []
    for pipe, names in known.items():
        if not pipe:
            continue  # skipped passes: not run by this pipeline
        out.extend(n for n in names if n not in pipes and n not in out and not _COUNTED.match(n))
    if platform == "cuda":
        out.extend(n for n in GATED_PASSES if n not in out)
    return out


def comma_listing(candidates: list[Any], lenders: Sequence[Any] = ()) -> str:
    """hlo-opt's ``--list-passes`` as XLA prints it: the pass names sorted (XLA sorts its
    registry's), comma-separated on one line, so ``hlo-opt --passes=$(hlo-opt --list-passes)``
    runs them. The names are those the pipelines of ``candidates`` (StageOptions) run on
    xla.backend's reference module, and the ``HARDWARE_INDEPENDENT`` ones ``lenders``'
    pipelines run: what ``--passes`` with the same ``--platform`` can run. A lender not to
    be had here (no CUDA plugin) lends nothing."""
    from ..errors import EnvironmentMismatch
    from . import backend as xla_backend

    module = xla_backend.reference_module()
    names: set[str] = set()
    for options in candidates:
        target = getattr(options, "target", options)
        names.update(pass_names(_known_pipelines(module, "reference", target).pipelines, target.platform))
    for options in lenders:
        target = getattr(options, "target", options)
        try:
            lent = pass_names(_known_pipelines(module, "reference", target).pipelines, target.platform)
        except EnvironmentMismatch:
            continue
        names.update(HARDWARE_INDEPENDENT.intersection(lent))
    return ",".join(sorted(names)) + "\n"


def not_found(name: str, known: list[str]) -> PipelineError:
    """XLA's hlo-opt's error for a pass name it has not registered."""
    if name in TEST_ONLY_PASSES:
        return PipelineError(f"--passes: {name} is one of XLA's test-only passes, built into XLA's own "
                             "hlo-opt alone: jaxlib's XLA does not have it")
    return PipelineError(f"INVALID_ARGUMENT: Pass {name} not found.",
                         hint=did_you_mean(name, known) or "hlo-opt --list-passes prints the names")


@dataclass
class PassTrace:
    """A pass list's run, for hlo-opt's ``--xla_dump_to`` (xla.tool_outputs.write_pass_dump):
    the module as given, each pass with the module after it (None: it changed nothing), and
    the module after them all; serialized HloModuleProtos with the user's names."""

    given: bytes = b""
    steps: list[tuple[str, bytes | None]] = field(default_factory=list)
    result: bytes = b""


def run_in_order(program: Any, names: list[str], candidates: list[Any], arts: list[Any] | None = None,
                 notes: list[str] | None = None, trace: PassTrace | None = None,
                 lenders: Sequence[Any] = ()) -> str:
    """hlo-opt's ``--passes``: XLA's HLO passes ``names`` on ``program`` (core.program.Program),
    each once, in the order given (the module docstring says how); the module after them as
    XLA's hlo-opt prints it. Each pass runs in the first of ``candidates`` (StageOptions)
    whose pipeline has it, else in the first of ``lenders`` whose pipeline runs it, if it is
    ``HARDWARE_INDEPENDENT``; each compile goes to ``arts``, what the user should know to
    ``notes``, the modules before, between and after the passes to ``trace``."""
    from .._native import jaxlib as _jaxlib
    from ..inputs.loader import parse_imported_hlo
    from ..ir import hlo_names
    from . import backend as xla_backend

    notes = [] if notes is None else notes
    for n in names:
        if n in TEST_ONLY_PASSES:  # before any compile: no pipeline has them
            raise not_found(n, [])
    targets = [getattr(c, "target", c) for c in (*candidates, *lenders)]
    targets = [_with_gates(t, names, notes) if t.platform == "cuda" else t for t in targets]
    own = range(len(candidates))  # targets[i] for i past these: lenders

    def runs(i: int, known: _PassLog) -> list[str]:
        found = pass_names(known.pipelines, targets[i].platform)
        return found if i in own else [n for n in found if n in HARDWARE_INDEPENDENT]

    module = program.module
    on_module: dict[int, _PassLog] = {}  # pass logs, made as a name needs them
    on_reference: dict[int, _PassLog] = {}
    refused: dict[int, CompileError] = {}  # a pipeline that refused the module: no pass of it runs

    def log(i: int, logs: dict[int, _PassLog], reference: bool) -> _PassLog:
        if i not in logs:
            try:
                logs[i] = (_known_pipelines(xla_backend.reference_module(), "reference", targets[i]) if reference
                           else _known_pipelines(module, program.name, targets[i]))
            except CompileError as e:
                if reference:
                    raise
                refused[i], logs[i] = e, _PassLog({}, [])
        return logs[i]

    def holder(pass_name: str) -> tuple[Any, _PassLog, bool, bool] | None:
        """(target, its pass log, whether it runs the pass on this module, whether it is a
        lender's) for a name: the module's own pass log first, then the reference module's
        (--list-passes's names); the platform's own pipelines before the lenders'."""
        for group in (own, range(len(own), len(targets))):
            for i in group:
                if pass_name in runs(i, log(i, on_module, False)):
                    return targets[i], on_module[i], True, i not in own
            for i in group:
                if pass_name in runs(i, log(i, on_reference, True)):
                    if i in refused:
                        raise refused[i]  # the pipeline that has the pass cannot take the module
                    return targets[i], on_module[i].merged(on_reference[i]), False, i not in own
        return None

    plan = []
    for n in names:
        found = holder(n)
        if found is None:
            everything = [p for logs in (on_module, on_reference) for i, k in logs.items() for p in runs(i, k)]
            raise not_found(n, everything)
        plan.append((n, *found))
    original = program.hlo_proto
    if original is not None:  # each trip through StableHLO from a tagged module (hlo_names.tag)
        module = parse_imported_hlo(_jaxlib.hlo_proto_to_stablehlo_bytecode(hlo_names.tag(original)), program.source)
    proto: bytes | None = None  # the module XLA holds after the passes so far
    for step, (n, target, known, runs_here, lent) in enumerate(plan, 1):
        if lent:
            notes.append(f"{n}: not in XLA's {label(targets[0])} pipeline; a hardware-independent pass, "
                         f"run in the {label(target)} one")
        if not runs_here:
            notes.append(f"{n}: XLA's {label(target)} pipeline holds it but runs it only on other modules; "
                         "enabled alone here")
        disabled = _before(known, n) if runs_here else _alone(known.pipelines, n)
        spec = _spec(target.with_flag(_LARGE_CONSTANTS, True), pass_dump_re=".*",
                     disabled_passes=tuple(disabled), keep_going=True, isolated=True)
        art = xla_backend.compile(module, spec, program.name).art
        if arts is not None:
            arts.append(art)
        if proto is None:
            # What XLA received: jaxlib compiles StableHLO, and its export back to HLO may
            # already have changed the module (measured: constants folded, a transpose of a
            # unit dimension made a reshape). The passes run on that, so that is what is printed.
            received = art.matching(r"^before_optimizations\.txt$")
            if not received:
                raise CompileError(f"XLA compiled nothing for {n}" + (f": {art.compile_error}"
                                                                      if art.compile_error else ""))
            proto = _received(received[0][1].decode(), original, notes, program)
        # XLA dumps after a pass only when it changed the module, and the passes after this
        # one ran: the first change is this pass's, or it changed nothing.
        after = next((d for d in xla_backend.pass_dumps(art) if d.after != "pipeline-start"), None)
        if after is not None and after.after != _file_safe(n):
            after = None
        if after is None:
            if trace is not None:
                trace.steps.append((n, None))
            continue
        fed = proto
        proto = _parsed(art.files[after.key].decode(), n)
        if original is not None:
            proto = hlo_names.restore_names(proto, fed)
        if trace is not None:
            trace.steps.append((n, proto))
        if step < len(plan):
            try:
                module = parse_imported_hlo(_jaxlib.hlo_proto_to_stablehlo_bytecode(
                    hlo_names.tag(proto) if original is not None else proto), program.source)
            except RuntimeError as e:  # XLA's importer refuses what the pass made (a fusion)
                raise CompileError(f"the HLO after {n} cannot go back to StableHLO for {plan[step][0]}: "
                                   f"{e}", hint=f"jaxlib compiles only StableHLO; run {n} last") from None
    given = original if original is not None else _jaxlib.stablehlo_to_hlo_proto(_bytecode(program.module))
    if proto is None:  # no pass named
        proto = given
    if trace is not None:
        trace.given, trace.result = given, proto
    large = any(k == _LARGE_CONSTANTS and v for k, v in targets[0].xla_flags)
    return _jaxlib.hlo_proto_to_text(proto, large_constants=large)


def _parsed(text: str, after: str) -> bytes:
    """XLA's dump of a module (after the pass ``after``) as an HloModuleProto."""
    from .._native import jaxlib as _jaxlib

    try:
        return _jaxlib.hlo_text_to_proto(text)
    except RuntimeError as e:
        raise CompileError(f"XLA's HLO after {after} does not parse back: {e}") from None


def _received(text: str, original: bytes | None, notes: list[str], program: Any) -> bytes:
    """The module XLA received (its ``before_optimizations`` dump), with the user's names; a
    note in ``notes`` when it is not the module given."""
    from ..ir import hlo_names

    proto = _parsed(text, "pipeline-start")
    if original is None:
        return proto
    proto = hlo_names.restore_names(proto, original)
    # The entry's instructions, by opcode and shape: a computation the trip duplicated (one
    # called from two places comes back as one per caller) is not worth a note; a fold is.
    if _entry_ops(proto) != _entry_ops(original):
        # Which of the user's instructions came back as another op (measured, jaxlib 0.12: its
        # export canonicalizes a transpose that moves only unit dimensions into a reshape,
        # whatever the op's attributes; its compile takes MLIR alone, so no way round it).
        was, now = _entry_opcodes(original), _entry_opcodes(proto)
        changed = [f"%{n}: {was[n]} -> {now[n]}" for n in was if n in now and now[n] != was[n]][:3]
        notes.append(f"{program.source}: jaxlib compiles StableHLO, and its export back to HLO changed this "
                     f"module before XLA's passes ran on it{' (' + ', '.join(changed) + ')' if changed else ''} "
                     "(--stage=hlo-before-optimizations --platform=P prints what XLA received)")
    return proto


def _entry_opcodes(proto: bytes) -> dict[str, str]:
    from ..ir import hlo_proto

    entry = hlo_proto.entry_computation(hlo_proto.decode(proto))
    return {i.name: i.opcode for i in (entry.instructions if entry is not None else ())}


def _entry_ops(proto: bytes) -> Any:
    from collections import Counter

    from ..ir import hlo_proto

    entry = hlo_proto.entry_computation(hlo_proto.decode(proto))
    return Counter((i.opcode, i.shape.SerializeToString(deterministic=True))
                   for i in (entry.instructions if entry is not None else ()))


def _bytecode(module: Any) -> bytes:
    import io

    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()
