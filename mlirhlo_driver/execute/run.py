"""``mlirhlo run`` and ``run_hlo_module``: run one module and judge it (XLA's run_hlo_module, and more).

``run_module`` is a function of (module, options): it makes the inputs, runs the
module on the platform with XLA, runs the reference (the StableHLO interpreter
that ships in jaxlib, or XLA CPU), and compares; a module that says it has
several partitions runs SPMD-partitioned when asked (``run_hlo_module``,
execute/spmd.py). Self-checking StableHLO test files (``check.*``) are judged by
their own assertions instead. Inputs, runs and comparisons are the engine's
(execute/engine.py); this module says which, in what order, and fills the
report. Everything runs in the calling process; the worker pool
(batch/run_pool.py) isolates modules from each other.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DriverError, InputError, PipelineError
from . import engine
from .engine import REFERENCES, InputSpec, Mismatch, ModuleReport

__all__ = ["REFERENCES", "BisectResult", "ModuleReport", "RunOptions", "bisect", "run_module"]


@dataclass(frozen=True)
class RunOptions:
    platform: str = "cpu"
    reference: str = "interpreter"
    seed: int = 0
    zeros: bool = False
    inputs_npz: str | None = None
    large_float_range: bool = False
    rtol: float | None = None          # None: per-dtype default (engine.default_tolerance)
    atol: float | None = None
    # Judge elements as XLA's ErrorSpec does (within atol or within rtol*|expected|), not
    # within their sum: run_hlo_module, whose bounds are XLA's.
    xla_error_spec: bool = False
    iterations: int = 1
    fold_constants: bool = False
    bisect: bool = False
    bisect_passes: bool = False        # on a mismatch, find the XLA HLO pass behind it
    timing: bool = False               # XLA's per-pass table of the module's compile
    keep_outputs: bool = False         # return the arrays, inputs too (print/save them)
    xla_flags: tuple[tuple[str, Any], ...] = ()
    reference_xla_flags: tuple[tuple[str, Any], ...] = ()   # for a CPU reference's compile
    # Host devices a worker process starts with: run_hlo_module runs a module whose header
    # says it has several partitions on as many (run_module's ``partitions``).
    host_devices: int = 1
    # The products' precision on the platform (ir.precision: default, high, highest); None:
    # as the module says. The reference computes at the module's own.
    precision: str | None = None
    # Whether the platform's least float tolerance applies (engine.platform_reference): not
    # where the user gave tolerances of their own.
    platform_tolerance: bool = True

    @property
    def target(self) -> Any:
        """The target of the run (xla.platforms: its devices here, the flags)."""
        from ..xla.platforms import run_target

        return run_target(self.platform, self.xla_flags)

    @property
    def inputs(self) -> InputSpec:
        return InputSpec("zeros" if self.zeros else "random", self.seed, self.inputs_npz, self.large_float_range)


@dataclass
class BisectResult:
    op: str               # the op, as one line of MLIR
    location: str
    operand_shapes: list[str]
    mismatch: Mismatch


# ------------------------------------------------------------------- running

def run_module(module: Any, name: str, source: str, options: RunOptions, line_offset: int = 0,
               partitions: int = 1, executable: Any = None, reference_module: Any = None) -> ModuleReport:
    """Inputs, platform run, reference run, comparison; never raises for module failures.

    ``partitions``: how many partitions the module says it has (run_hlo_module reads its
    HLO header); more than one runs it SPMD-partitioned on as many host devices.
    ``executable``: a callable giving the module's executable compiled already (a
    ``Compiled``'s, engine.Executable), used instead of a compile of the run's own.
    ``reference_module``: the program as the reference computes it, where that is another
    lowering (a JAX function lowered for a TPU runs against its CPU lowering).
    """
    report = run_compared(module, name, source, options, line_offset, partitions, executable, reference_module)
    if options.timing and report.status not in ("invalid", "failed"):
        from ..xla import backend, instrument, pass_log

        try:
            done = instrument.compile(backend.module_for_xla(module, source, line_offset, options.fold_constants),
                                      name, backend.CompileSpec(options.target, on_device=True),
                                      instrument.XlaInstrumentation(timing=True))
            report.xla_passes = pass_log.rows(done.calls or [])
        except DriverError as e:
            report.message += f" (no pass timing: {e.message})"
    return report


def run_compared(module: Any, name: str, source: str, options: RunOptions, line_offset: int = 0,
                 partitions: int = 1, executable: Any = None, reference_module: Any = None) -> ModuleReport:
    from .._native import jaxlib as _jaxlib
    from ..inputs import checks

    report = ModuleReport(name, source)
    # 64-bit values stay 64-bit (jax's x64) for this module's run only, not the process's.
    with _jaxlib.x64(checks.needs_x64(module)):
        return _run_compared(module, report, options, line_offset, partitions, executable, reference_module)


def _run_compared(module: Any, report: ModuleReport, options: RunOptions, line_offset: int,
                  partitions: int, executable: Any = None, reference_module: Any = None) -> ModuleReport:
    from ..inputs import checks

    name, source = report.name, report.source
    try:
        if checks.has_checks(module):
            return _run_checks(module, report, options, line_offset)
        if partitions > 1:
            return _run_partitioned(module, report, options, partitions)
        params, _ = engine.signature(module)
        made = engine.make_inputs(params, options.inputs, module=module)
        arrays, report.inputs_note = made.arrays, made.note
        judged = _platform_reference(module, options, reference_module)
        floor = judged.floor
        if judged.note and options.reference != "none":
            report.notes.append(judged.note)
        # (a manual computation is refused here by the compile's guard, _native/guards.py)
        if executable is not None:
            exe = executable()
            outputs, times = engine.execute_one(exe, arrays, options.iterations)
            report.compile_ms, report.run_ms = exe.compile_ms, statistics.median(times)
        else:
            outputs, report.compile_ms, report.run_ms = engine.run_xla(_on_platform(module, options), arrays,
                                                                         options.target, options.iterations, name)
        if options.keep_outputs:
            report.inputs, report.outputs = arrays, outputs
        if options.reference == "none":
            report.status = "ran"
            return report
        reference, report.reference_ms = engine.run_reference(judged.module, arrays, options.reference,
                                                              options.reference_xla_flags)
        if options.keep_outputs:
            report.reference_outputs = reference
        report.judge(engine.compare_outputs(outputs, reference, options.rtol, options.atol,
                                            xla_error_spec=options.xla_error_spec, floor=floor))
        if report.status == "mismatch" and options.bisect:
            report.bisect = bisect(module, arrays, options)
            if report.bisect is not None and report.bisect.location.startswith("-:"):
                report.bisect.location = source + report.bisect.location[1:]
        if report.status == "mismatch" and options.bisect_passes:
            from . import pass_bisect

            def matching(outs: list[np.ndarray]) -> bool:
                return engine.compare_outputs(outs, reference, options.rtol, options.atol,
                                              xla_error_spec=options.xla_error_spec, floor=floor).matched

            report.pass_bisect = pass_bisect.find(module, name, arrays, options, trial=engine.run_in_helper,
                                                  matching=matching)
    except (InputError, PipelineError) as e:
        report.status = "invalid"  # bad input, not a failure of the module: exit code 2
        if e.file is None and e.line is not None:
            e.file = source  # a position in this module's text (the guards' errors): say which file
        report.message = e.format().removeprefix("error: ")
    except DriverError as e:
        from ..xla.backend import before_optimizations_hint

        report.status = "failed"
        report.message = before_optimizations_hint(e, source).format().removeprefix("error: ")
    return report


def _platform_reference(module: Any, options: RunOptions, reference_module: Any = None) -> Any:
    """How this run is judged (engine.platform_reference): the reference's module (of
    ``reference_module`` where the reference computes another lowering of the program), and
    the platform's least float tolerance, none where the user gave tolerances of their own."""
    from dataclasses import replace

    judged = engine.platform_reference(options.platform, reference_module if reference_module is not None
                                       else module, options.precision)
    return judged if options.platform_tolerance else replace(judged, floor=0.0)


def _on_platform(module: Any, options: RunOptions) -> Any:
    """The module as the platform runs it: its products at ``options.precision`` if given."""
    if options.precision is None:
        return module
    from ..ir import precision

    return precision.with_precision(module, options.precision)


def _run_partitioned(module: Any, report: ModuleReport, options: RunOptions, partitions: int) -> ModuleReport:
    """``run_hlo_module`` on a module with ``num_partitions > 1``: SPMD-partitioned on as many
    host devices (execute/spmd.py), against the unpartitioned module on the reference."""
    from ..inputs.loader import LoadedModule
    from . import spmd

    if options.platform not in ("cpu", "tpu"):
        raise DriverError(f"{partitions} partitions run on host devices or TPU chips; this run is for "
                          f"{options.platform}", hint="--platform=cpu, or multihost_hlo_runner")
    sopts = spmd.SpmdOptions(num_partitions=partitions, argument_mode="zeros" if options.zeros else "random",
                             seed=options.seed, inputs_npz=options.inputs_npz,
                             large_float_range=options.large_float_range, rtol=options.rtol, atol=options.atol,
                             xla_error_spec=options.xla_error_spec,
                             num_repeats=options.iterations,
                             reference=options.reference, platform=options.platform,
                             xla_flags=options.xla_flags, reference_xla_flags=options.reference_xla_flags)
    spmd.check_options(sopts)
    loaded = LoadedModule(report.name, report.source, "mlir", _on_platform(module, options))
    done = spmd.run_in_process(loaded, sopts)
    out = done.report
    out.notes = [f"partitioned: {done.devices}; partitioner: {done.partitioner}",
                 *(f"parameter {p}" for p in done.param_layouts), *(f"output {o}" for o in done.result_layouts),
                 *(n for n in done.notes if n)]
    if options.keep_outputs and done.outputs:
        out.outputs = done.outputs[0]
    return out


def _run_checks(module: Any, report: ModuleReport, options: RunOptions, line_offset: int) -> ModuleReport:
    """A self-checking module: its checks' operands computed by XLA (inputs.checks.prepare
    lifts its constants to parameters), then judged by the engine's check semantics."""
    from ..inputs import checks
    from ..ir import hlo_dataflow
    from ..xla.backend import run_on_host

    plan = checks.prepare(_on_platform(module, options), evaluate=run_on_host, fold_constants=options.fold_constants,
                          source=report.source, line_offset=line_offset)
    report.inputs_note = ("constants folded by XLA (--fold-constants)" if plan.folded
                          else f"{len(plan.parameters)} constant{'s' if len(plan.parameters) != 1 else ''} "
                          "fed as runtime parameters")
    report.kept_constants = [dict(k.__dict__) for k in plan.kept]
    extra: list[np.ndarray] = []
    if plan.num_original_params:
        params, _ = engine.signature(plan.module)
        made = engine.make_inputs(params[: plan.num_original_params], options.inputs, module=plan.module)
        extra = made.arrays
        report.inputs_note += f"; {made.note}"
    outputs, exe, times = engine.run_plan(plan, extra, options.target, options.iterations)
    report.compile_ms, report.run_ms = exe.compile_ms, statistics.median(times)
    modules = exe.executable.hlo_modules()
    depends = (hlo_dataflow.outputs_from_parameters(modules[0].as_serialized_hlo_module_proto())
               if len(modules) == 1 else None)
    provenance = checks.checked_values(plan, depends)
    report.checked_values, report.checked_values_detail = provenance.state, provenance.describe()
    if options.keep_outputs:
        report.outputs = outputs[: plan.num_original_results]
    results = engine.evaluate_checks(plan, outputs)
    report.checks = results
    failed = [r for r in results if not r.passed]
    report.status = "check-failed" if failed else "ok"
    report.message = f"{len(results) - len(failed)}/{len(results)} checks passed"
    return report


# ------------------------------------------------------------------- bisect

def bisect(module: Any, arrays: list[np.ndarray], options: RunOptions) -> BisectResult | None:
    """The first op of @main (in program order) whose value differs between the
    platform and the reference: every intermediate value is made an output of
    one instrumented module, run on both sides, and compared in order."""
    from jaxlib.mlir import ir

    from ..ir import emit

    probe = emit.clone(module)
    main = engine.main_function(probe)
    block = main.regions[0].blocks[0]
    ops = list(block.operations)
    ret = ops[-1]
    candidates = []
    for op in ops[:-1]:
        if op.operation.name in ("stablehlo.constant",) or not len(op.results):
            continue
        for r in op.results:
            try:
                ir.RankedTensorType(r.type)
            except ValueError:
                continue
            candidates.append((op, r))
    if not candidates:
        return None
    with probe.context, ir.Location.unknown():
        from jaxlib.mlir.dialects import func

        new_results = [r for _, r in candidates]
        ir.InsertionPoint(ret)
        func.ReturnOp(new_results, ip=ir.InsertionPoint(ret))
        ret.operation.erase()
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(ftype.inputs, [r.type for r in new_results]))
    judged = _platform_reference(probe, options)
    floor = judged.floor
    got, _, _ = engine.run_xla(_on_platform(probe, options), arrays, options.target, 1)
    want, _ = engine.run_reference(judged.module, arrays, options.reference, options.reference_xla_flags)
    for i, ((op, _), a, e) in enumerate(zip(candidates, got, want)):
        mm = engine.compare(a, e, i, options.rtol, options.atol, xla_error_spec=options.xla_error_spec,
                            floor=floor if np.dtype(e.dtype).kind in "fcV" else 0.0)
        if mm.count:
            mm.label = "value"
            line = op.operation.get_asm(large_elements_limit=4).strip().splitlines()[0]
            shapes = [str(o.type) for o in op.operands]
            return BisectResult(line, _loc_text(op.location), shapes, mm)
    return None


def _loc_text(loc: Any) -> str:
    m = re.search(r'"([^"]*)":(\d+):(\d+)', str(loc))
    if m:
        return f"{m.group(1)}:{m.group(2)}:{m.group(3)}"
    m = re.match(r'loc\("([^"]+)"', str(loc))
    return m.group(1) if m else str(loc)

