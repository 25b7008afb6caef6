"""``opt`` over many modules: one task per module, in this process or isolated workers.

Promises:

* Modules are loaded one at a time, inside their task, and each module's
  files are written as soon as it finishes: memory does not grow with the
  number of modules (text for ``-o`` is the exception: one file holds it all).
  A module with a stage that finishes in groups (``sass``, see
  :class:`~mlirhlo_driver.stages.base.Deferred`) is held until its group of at most
  ``group_size`` modules is done, then written; its output is the same as alone.
* In a batch (more than one module, no ``fail_fast``) a module that fails -
  bad input, a failing pass, a compile error, a crash or a hang in a worker -
  becomes a :class:`OptResult` row with its error; the other modules are still
  written. With one module, or ``fail_fast``, the first failure stops the
  batch: in this process its :class:`~mlirhlo_driver.errors.DriverError` is
  raised as it was; from a worker, :class:`BatchStopped` carries the row.
* With ``jobs`` > 0 each module runs in a worker of the shared pool (_native/pool.py),
  and with ``scheduler`` on a Dask cluster (_native/cluster.py); the results come back
  to this process, which writes them.
* The pipeline names the Python passes of the command's own pass set (``run_opt``'s
  ``python_passes``: the built-in and installed ones and ``--load-pass-plugin``'s files),
  no other. It travels with the resolved pipeline, so workers run the plugin bytes this
  process read, and nothing of it outlives the command.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import outputs
from .. import registry as stage_registry
from ..errors import FLAGS, DriverError, InputError, PassFailure, PipelineError, log_note
from ..stages.base import Deferred, StageOptions, single_output


@dataclass(frozen=True)
class OptJob:
    """Everything a task needs besides its module (sent once to each worker)."""

    root: Any                                  # pipeline.Nest with its Python passes, or None: no MLIR passes
    stage_names: tuple[str, ...]
    targets: tuple[tuple[str | None, StageOptions], ...]
    platform: str | None
    instrumentation: Any                       # pipeline.Instrumentation
    dump_dir: str | None = None
    ir_dump_dir: str | None = None
    timing: bool = False
    several: bool = False                      # more than one module: timing tables get titles
    reproducer_dir: str | None = None
    xla_passes: str | None = None
    after_pass: str | None = None
    input_format: str | None = None
    split_input_file: bool = False
    arg_specs: str | None = None
    xla_instrumentation: Any = None            # xla.instrument.XlaInstrumentation, when asked
    timing_format: str = "text"                # text or json
    defer: bool = False                        # stages may finish in groups (stages.Deferred), in run_batch
    # Stages made with the others, from the same compile, but not written: their outputs come
    # back in the rows (OptResult.also), for a caller that reads them (mlirhlo watch's summary).
    also: tuple[str, ...] = ()
    # The pipeline as given: with the root's Python passes, its identity in the stage cache.
    pipeline_spec: str | None = None
    passes: str | None = None
    pipeline_file: str | None = None
    cache: bool = True                         # read and write the stage cache


@dataclass(frozen=True)
class OptTask:
    index: int
    source: str
    name: str
    chunk: int | None = None                   # the chunk of a split file
    data: bytes | None = None                  # '-' (stdin), read once by the parent


@dataclass
class OptResult:
    """One module's outcome; ``files`` and ``parts`` are dropped once written."""

    index: int
    name: str
    source: str
    status: str = "ok"                         # ok, invalid, failed, crashed, timeout
    message: str = ""                          # the error, one line
    error_text: str = ""                       # what the CLI prints for it alone (with diagnostics)
    files: list[tuple[str, str | bytes]] = field(default_factory=list)   # (path, data)
    parts: list[tuple[str, str, str | bytes]] = field(default_factory=list)  # (stem, stage, data)
    stderr: str = ""
    exception: BaseException | None = field(default=None, repr=False)    # in-process only
    # Part index -> where its output is kept in the stage cache once finished (a stage
    # finished in a group: core.compiled.Compiled._entry).
    keeps: dict[int, Any] = field(default_factory=dict, repr=False)
    # (stem, stage) -> output (OptJob.also), or in the caller's process a callable giving it
    also: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)
    phases: Any = field(default=None, repr=False)  # xla.compile_phases.Clock: --timing with a platform

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def exit_code(self) -> int:
        return 2 if self.status == "invalid" else 1


class BatchStopped(Exception):
    """A single module, or ``fail_fast``, and this module failed in a worker."""

    def __init__(self, result: OptResult):
        super().__init__(result.message)
        self.result = result


def tasks_for(specs: list[str], *, split_input_file: bool) -> list[OptTask]:
    """One task per module of the inputs: files are read only to count split chunks."""
    from ..inputs import loader

    return [OptTask(i, path, name, chunk if split_input_file else None, data)
            for i, (path, name, chunk, _, data) in
            enumerate(loader.module_units(specs, split_input_file=split_input_file))]


# ------------------------------------------------------------------ one module

def process(job: OptJob, task: OptTask, progress: Any = None, *, also_later: bool = False) -> OptResult:
    """Load, run the pipeline, produce the stages (from the stage cache where they are
    there); never raises for the module's failures. ``progress``: a callback for each
    stage done (core.progress). ``also_later`` (a module processed in the caller's
    process): the ``also`` stages are callables, made from the same compile when read,
    after the outputs are written (mlirhlo watch's summary does not delay its output)."""
    from ..core import compiled as core_compiled
    from ..core import program as core_program
    from ..core.progress import report

    result = OptResult(task.index, task.name, task.source)
    err: list[str] = []
    timings: dict[str, Any] = {}  # --timing-format json: the module's tables, printed together
    program = None
    compiles: list[tuple[str, StageOptions, Any]] = []
    clock = _phase_clock(job)
    try:
        options = core_program.InputOptions(job.input_format, job.split_input_file, job.arg_specs,
                                            lower_for=_lower_for(job))
        program = core_program.unit_programs(task.source, options, chunk=task.chunk, data=task.data)[0]
        if not job.cache:  # nothing is looked up: the pipeline's digest (its files, plugins) is not made
            program.identity = None
        if clock is not None:  # --timing's phase table: the module is made now, each step timed
            program.module  # noqa: B018
            clock.mark("driver:load")
        if job.root is not None:
            program = program.optimize(job.pipeline_spec, passes=job.passes, pipeline_file=job.pipeline_file,
                                       instrumentation=job.instrumentation, reproducer_dir=job.reproducer_dir,
                                       root=job.root)
            if clock is not None:
                program.module  # noqa: B018
                clock.mark("driver:mlir-passes")
        done, total = 0, len(job.targets) * len(job.stage_names)
        for spec_name, stage_options in job.targets:
            stem = f"{program.name}.{spec_name}" if spec_name and len(job.targets) > 1 else program.name
            if job.xla_passes or job.after_pass:
                notes: list[str] = []
                result.parts.append((stem, "hlo", xla_pass_hlo(program, stage_options, job.xla_passes,
                                                               job.after_pass, notes)))
                compiles.append((stem, stage_options, notes))
                continue
            compiled = core_compiled.Compiled(program, None, stage_options, cache=job.cache,
                                              instrumentation=job.xla_instrumentation, defer=job.defer)
            compiled.expect(job.stage_names + job.also)
            compiles.append((stem, stage_options, compiled))
            if job.xla_instrumentation is not None:
                compiled.artifacts()  # what XLA's passes show is asked for even with only MLIR stages
            for name in job.stage_names:
                report(progress, done, total, f"{stem}: {name}")
                out = compiled._produce(name)
                if isinstance(out, Deferred):  # finished in a group: kept in the cache then
                    result.keeps[len(result.parts)] = compiled._entry(name)
                result.parts.append((stem, name, out))
                done += 1
            for name in job.also:
                result.also[(stem, name)] = functools.partial(compiled.stage, name) if also_later \
                    else compiled.stage(name)
        _say(job, program, compiles, result, err, timings)
        if not pending(result):
            finalize(job, result)
        if clock is not None:
            clock.compiles += [c._instrumented.timed for _, _, c in compiles
                               if not isinstance(c, list) and c._instrumented is not None
                               and c._instrumented.timed is not None]
            clock.mark("driver:stages")
            result.phases = clock
    except DriverError as e:
        if program is not None:
            _say(job, program, compiles, result, err, timings)
        fail(job, result, e)
    if timings:
        import json

        err.append(json.dumps({"module": program.name if program is not None else task.name, **timings},
                              indent=2) + "\n")
    result.stderr = "".join(err)
    return result


def _phase_clock(job: OptJob) -> Any:
    """The clock of --timing's compile-phase table (xla.compile_phases), when it is asked."""
    if job.xla_instrumentation is None or not job.xla_instrumentation.timing:
        return None
    from ..xla.compile_phases import Clock

    return Clock.begin()


def _say(job: OptJob, program: Any, compiles: list[tuple[str, StageOptions, Any]], result: OptResult,
         err: list[str], timings: dict[str, Any]) -> None:
    """What the module's pipeline and compiles showed, in that order, then their notes."""
    _pipeline_output(job, program, result, err, timings)
    notes: list[str] = []
    for stem, options, compiled in compiles:
        if isinstance(compiled, list):  # --xla-passes / --after-pass: its notes
            notes += [n for n in compiled if n not in notes]
            continue
        if compiled._instrumented is not None:
            _instrumented_output(job, program.name, options, compiled._instrumented, stem, result, err, timings)
        notes += [n for n in compiled.notes_for(FLAGS) if n not in notes]
    err.extend(f"note: {n}\n" for n in notes)


def _instrumented_output(job: OptJob, module_name: str, options: StageOptions, done: Any, stem: str,
                         result: OptResult, err: list[str], timings: dict[str, Any]) -> None:
    """What an instrumented compile showed (xla.instrument.Instrumented): XLA's pass table and
    the HLO printed around passes go where MLIR's do (stderr, or files under ir_dump_dir)."""
    from ..xla.passes import label

    for i, printed in enumerate(done.printed):
        text = printed.header() + "\n" + printed.text
        if job.ir_dump_dir:
            safe = printed.pass_name.replace("/", "_").replace(" ", "_")
            result.files.append((str(Path(job.ir_dump_dir) / stem / f"xla-{outputs.dump_number(i, len(done.printed))}-{printed.when}-{safe}.hlo"), text))
        else:
            err.append(text if text.endswith("\n") else text + "\n")
    if done.calls is not None:
        from ..xla import pass_log

        if job.timing_format == "json":
            timings.setdefault("xla", []).append(pass_log.as_json(done.calls, label(options)))
        else:
            title = f"// timing: {module_name}\n" if job.several else ""
            err.append(title + pass_log.format_table(done.calls, label(options)))


def pending(result: OptResult) -> bool:
    """Whether some of the result's stages are still to be finished (stages.Deferred)."""
    return any(isinstance(data, Deferred) for _, _, data in result.parts)


def finalize(job: OptJob, result: OptResult) -> None:
    """The produced stages as what is written: files under dump_dir, or one output
    per stage (a multi-file stage, cubin, must then have one file)."""
    if job.dump_dir:
        result.files += [(str(Path(job.dump_dir) / filename), data)
                         for stem, name, produced in result.parts
                         for filename, data in stage_registry.get(name, job.platform).files(stem, produced)]
        result.parts = []
    else:
        result.parts = [(stem, name, single_output(stage_registry.get(name, job.platform), data))
                        for stem, name, data in result.parts]


def fail(job: OptJob, result: OptResult, e: DriverError) -> None:
    """Make ``result`` the row of a module that failed with ``e``; nothing of it is written
    but the IR dumps up to the failure."""
    e.about(result.source)  # a stage's error is about this module: say which file
    result.status = "invalid" if isinstance(e, (InputError, PipelineError)) else "failed"
    result.message = e.format().removeprefix("error: ")
    result.error_text = error_text(e)
    if isinstance(e, PassFailure) and e.reproducer:
        result.message += f" (reproducer: {e.reproducer})"
    result.exception = e
    result.parts = []
    result.files = [f for f in result.files if job.ir_dump_dir and f[0].startswith(job.ir_dump_dir)]


def finish_pending(job: OptJob, results: Sequence[OptResult]) -> None:
    """Finish the deferred stages of ``results`` together, by kind and at most
    ``group_size`` at a time (one tool run each); a stage that fails fails its module."""
    slots: dict[type, list[tuple[OptResult, int]]] = {}
    for result in results:
        for i, (_, _, data) in enumerate(result.parts):
            if isinstance(data, Deferred):
                slots.setdefault(type(data), []).append((result, i))
    failed: dict[int, DriverError] = {}
    for kind, where in slots.items():
        for start in range(0, len(where), kind.group_size):
            chunk = where[start:start + kind.group_size]
            finished = kind.finish_all([r.parts[i][2] for r, i in chunk])  # type: ignore[misc]
            for (r, i), out in zip(chunk, finished):
                if isinstance(out, DriverError):
                    failed.setdefault(id(r), out)
                else:
                    stem, name, _ = r.parts[i]
                    r.parts[i] = (stem, name, out)
                    if i in r.keeps and id(r) not in failed:
                        from ..core import cache

                        cache.put_entry(r.keeps[i], out)
    for result in results:
        try:
            if id(result) in failed:
                raise failed[id(result)]
            finalize(job, result)
        except DriverError as e:
            fail(job, result, e)


def error_text(err: DriverError) -> str:
    """The lines the CLI prints for ``err``: the error, MLIR's diagnostics, the reproducer."""
    lines = [err.format()]
    if isinstance(err, PassFailure):
        if err.diagnostics:
            lines.append(err.diagnostics)
        if err.reproducer:
            from ..mlir.pipeline import reproducer_command

            lines.append(f"note: reproducer written to {err.reproducer}")
            lines.append(f"note: reproduce with: {reproducer_command(err.reproducer)}")
    return "\n".join(lines) + "\n"


def _pipeline_output(job: OptJob, program: Any, result: OptResult, err: list[str],
                     timings: dict[str, Any]) -> None:
    """What the program's pipeline showed (core Program: its run, even a failed one, or what
    the stage cache kept of it): other pass output, IR dumps (stderr, or files under
    ir_dump_dir) and timing."""
    run = program.last_run
    printed = run.other_output if run is not None else program.pipeline_output
    if printed.strip():
        err.append(printed)
    if run is None:
        return
    from ..mlir import pipeline

    if job.ir_dump_dir:
        for i, dump in enumerate(run.dumps):
            name = f"{outputs.dump_number(i, len(run.dumps))}-{dump.when}-{dump.pass_name or dump.pass_class}.mlir"
            result.files.append((str(Path(job.ir_dump_dir) / program.name / name), dump.header() + "\n" + dump.text))
    else:
        for dump in run.dumps:
            err.append(dump.header() + "\n" + dump.text + "\n")
    if job.timing and job.timing_format == "json":
        timings["mlir"] = [{"pass": r.name, "depth": r.depth, "wall_us": round(r.wall_s * 1e6),
                            "percent": r.percent} for r in run.timing]  # as MLIR prints it: one decimal
    elif job.timing:
        title = f"// timing: {program.name}\n" if job.several else ""
        err.append(title + pipeline.format_timing(run))


def xla_pass_hlo(loaded: Any, options: StageOptions, xla_passes: str | None,
                 after_pass: str | None, notes: list[str] | None = None) -> str:
    """The HLO after ``--after-pass NAME``, or after XLA's pipeline with only ``--xla-passes``;
    what the user should know goes to ``notes``."""
    from ..xla import passes as xla_pass_runner
    from ..xla.backend import module_for_xla

    module = module_for_xla(loaded.module, loaded.source, loaded.line_offset, options.fold_constants)
    if after_pass:
        return xla_pass_runner.hlo_after_pass(module, loaded.name, options, after_pass)
    enabled = [p.strip() for p in (xla_passes or "").split(",") if p.strip()]
    return xla_pass_runner.hlo_after_passes(module, loaded.name, enabled, [options], notes=notes)


# ------------------------------------------------------------- worker entries

def worker_init(job: OptJob) -> None:
    """Once per worker: jaxlib's MLIR context and the XLA client. The pipeline's Python
    passes came with the job (its root's pass set, made again here from the plugin files'
    bytes the command loaded, when first used)."""
    from .._native import jaxlib as _jaxlib

    _jaxlib.ir_context()
    if job.platform == "cpu":
        _jaxlib.cpu_devices()
    elif job.platform == "cuda":
        _jaxlib.cuda_c_api()  # the plugin, loaded once; each compile reuses it


def worker_task(job: OptJob, task: OptTask) -> OptResult:
    result = process(job, task)
    result.exception = None  # not sent: error_text and message say it all
    return result


# --------------------------------------------------------------------- driver

# What held results may keep in memory before their group is finished early (--stage all
# of large modules: LLVM IR and HTML of many MB each).
HOLD_BYTES = 256 * 1024 * 1024


def _size(result: OptResult) -> int:
    """Bytes a held result keeps: its outputs, and the PTX its deferred stages will read."""
    total = 0
    for data in [*(d for _, _, d in result.parts), *(d for _, d in result.files)]:
        if isinstance(data, (str, bytes)):
            total += len(data)
        elif isinstance(data, dict):
            total += sum(len(d) for d in data.values())
        elif isinstance(data, Deferred):
            total += data.size
    return total


def run_batch(job: OptJob, tasks: Sequence[OptTask], *, jobs: int = 0, timeout: float | None = None,
              fail_fast: bool = False, scheduler: str | None = None,
              on_result: Callable[[OptResult], None], progress: Callable[[Any], None] | None = None) -> list[OptResult]:
    """Process every task; ``on_result`` gets each result as it finishes (it writes the
    outputs). The rows come back in task order, without their data. ``progress`` gets an
    event per module done (and, in this process, per stage)."""
    from ..core.progress import report

    stop_at_first = fail_fast or len(tasks) == 1
    rows: dict[int, OptResult] = {}
    held: list[OptResult] = []  # done but for their deferred stages (SASS), finished in groups

    def deliver(result: OptResult) -> None:
        if not result.ok and stop_at_first:
            flush()  # the modules before it are written, as they would have been
            sys.stderr.write(result.stderr)
            for path, data in result.files:  # the IR dumps up to the failing pass
                outputs.write_atomic(path, data)
            if result.exception is not None:
                raise result.exception
            raise BatchStopped(result)
        on_result(result)
        result.files, result.parts, result.exception = [], [], None
        rows[result.index] = result

    def flush() -> None:
        group = held[:]
        held.clear()
        finish_pending(job, group)
        for result in group:
            deliver(result)

    held_bytes = 0
    finished = 0
    for _, result in _results(job, tasks, jobs=jobs, timeout=timeout, scheduler=scheduler, progress=progress):
        finished += 1
        report(progress, finished, len(tasks), result.name)
        if result.ok and pending(result):
            held.append(result)
            held_bytes += _size(result)
            if len(held) >= Deferred.group_size or held_bytes >= HOLD_BYTES:
                flush()
                held_bytes = 0
            continue
        deliver(result)
    flush()
    return [rows[i] for i in sorted(rows)]


def _results(job: OptJob, tasks: Sequence[OptTask], *, jobs: int, timeout: float | None,
             scheduler: str | None, progress: Callable[[Any], None] | None = None) -> Iterator[tuple[int, OptResult]]:
    if jobs == 0 and scheduler is None:
        for task in tasks:
            # One module's stages are steps of their own: one module can be most of the work.
            step = None if progress is None or len(tasks) > 1 else progress
            yield task.index, process(job, task, step, also_later=True)
        return
    from .._native import cluster, pool

    results = cluster.imap_anywhere("mlirhlo_driver.batch.opt:worker_task", job, tasks, jobs=jobs,
                                 timeout=timeout, init="mlirhlo_driver.batch.opt:worker_init",
                                 scheduler=scheduler)
    try:
        for index, result in results:
            if isinstance(result, pool.Lost):
                task = tasks[index]
                result = OptResult(index, task.name, task.source, status=result.status, message=result.message,
                                   error_text=f"error: {task.source}: {result.message}\n")
            yield index, result
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()  # --fail-fast: stop the other workers now


class Writer:
    """Writes each result as it arrives (outputs.Sink): its stderr and files at once; its
    outputs to stdout in task order, joined by ``// -----`` lines, or to ``-o`` at the end."""

    def __init__(self, output: str | None):
        self.sink = outputs.Sink(output)
        self._next = 0
        self._waiting: dict[int, list[tuple[str, str, str | bytes]]] = {}

    def __call__(self, result: OptResult) -> None:
        if result.stderr:
            sys.stderr.write(result.stderr)
            sys.stderr.flush()
        for path, data in result.files:
            self.sink.file(path, data)
        self._waiting[result.index] = result.parts
        while self._next in self._waiting:
            for _, _, data in self._waiting.pop(self._next):
                self.sink.emit(data)
            self._next += 1

    def finish(self) -> None:
        """``-o``: the one file (a single result as it is, several joined)."""
        self.sink.finish()


def exit_code(rows: Sequence[OptResult]) -> int:
    """The command's exit status, as ``run`` decides it: 2 when any module is
    bad input (invalid), else 1 when any failed otherwise, else 0."""
    if any(r.status == "invalid" for r in rows):
        return 2
    return 0 if all(r.ok for r in rows) else 1


def summary(rows: Sequence[OptResult]) -> str:
    """The closing summary: a count, then one row per failed module with its error."""
    failed = [r for r in rows if not r.ok]
    lines = [f"opt: {len(rows) - len(failed)}/{len(rows)} modules done, {len(failed)} failed"]
    width = max((len(r.name) for r in failed), default=0)
    for r in failed:
        lines.append(f"  {r.name:<{width}}  {r.status.upper():<8} {r.message}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the opt command

@dataclass
class OptOptions:
    """What ``mlirhlo opt`` is asked to do, front-end free (its options by their names)."""

    inputs: list[str] = field(default_factory=list)
    pipeline_spec: str | None = None           # textual pipeline or @NAME
    passes: str | None = None                  # hlo-opt style comma list
    pipeline_file: str | None = None
    print_pipeline: bool = False
    stage: str = "stablehlo"                   # comma list, or 'all' (with dump_dir)
    output: str | None = None                  # None: stdout
    dump_dir: str | None = None
    input_format: str | None = None
    split_input_file: bool = False
    args: str | None = None                    # argument specs of a JAX function
    print_ir_after_all: bool = False
    print_ir_after_change: bool = False
    print_ir_before: tuple[str, ...] = ()
    print_ir_after: tuple[str, ...] = ()
    print_ir_after_failure: bool = False
    print_ir_module_scope: bool = False
    ir_dump_dir: str | None = None
    timing: bool = False
    timing_format: str = "text"                # text or json (--timing's tables)
    verify_each: bool = True
    reproducer_dir: str | None = None
    target_version: str | None = None
    debug_info: bool = False
    xla_passes: str | None = None
    after_pass: str | None = None
    jobs: int = 0
    fail_fast: bool = False
    timeout: float | None = None
    scheduler: str | None = None
    load_pass_plugin: tuple[str, ...] = ()
    fold_constants: bool = False               # check files: keep their constants (XLA folds them)
    no_cache: bool = False                     # neither read nor write the stage cache
    num_partitions: int | None = None          # a sharded module's partitions; None: as it says
    plot: str | None = None                    # the roofline as SVG/PNG (cuda/roofline_plot.py)


def _split_print_names(names: Sequence[str], root: Any, platform: str | None) -> tuple[tuple[str, ...],
                                                                                   tuple[str, ...]]:
    """(MLIR's names, XLA's) of ``--print-ir-before/after``: with a platform, names the MLIR
    pipeline does not run (and not 'all') are XLA's HLO passes."""
    if platform is None:
        return tuple(names), ()
    in_pipeline = {p.name for p in root.passes()} if root is not None else set()
    xla = tuple(n for n in names if n != "all" and n not in in_pipeline)
    return tuple(n for n in names if n not in xla), xla


def _xla_instrumentation(o: OptOptions, platform: str | None, before: tuple[str, ...],
                         after: tuple[str, ...]) -> Any:
    """What XLA's compile shows (xla.instrument), or None: nothing asked, or no platform."""
    if platform is None or not (o.timing or o.print_ir_after_change or before or after):
        return None
    if o.xla_passes or o.after_pass:
        raise DriverError("--timing and --print-ir-* show XLA's normal pipeline: "
                          "not with --xla-passes or --after-pass")
    from ..xla.instrument import XlaInstrumentation

    return XlaInstrumentation(timing=o.timing, timing_format=o.timing_format,
                              after_change=o.print_ir_after_change, before=before, after=after)


# The stage whose object the roofline picture draws, per platform.
PLOT_STAGE = {"cuda": "cost", "tpu": "roofline-data"}


def _check_plot(path: str, stage_names: Sequence[str], platform: str | None, modules: int, targets: int) -> None:
    """Refuse ``--plot`` where there is no one roofline to draw, before the work."""
    from ..cuda import roofline_plot

    if platform not in PLOT_STAGE:
        raise DriverError("--plot draws the roofline on a GPU spec or a TPU: it needs --platform cuda or tpu",
                          hint="mlirhlo opt FILE --gpu-spec h100_sxm --stage roofline --plot roofline.svg")
    if not {"roofline", "cost"} & set(stage_names):
        raise DriverError("--plot draws the roofline: give --stage roofline (or cost)")
    if modules != 1 or targets != 1:
        raise DriverError("--plot draws one roofline: give one module and one GPU spec or TPU topology")
    roofline_plot.check_path(path)
    outputs.check_output_path(path)
    roofline_plot.require()


def _plot(path: str, row: OptResult) -> None:
    """The roofline of the one module's ``cost`` stage (made with the others) into ``path``."""
    import json

    from ..cuda import roofline_plot

    cost = next(v for (_, name), v in row.also.items() if name in PLOT_STAGE.values())
    roofline_plot.write(json.loads(cost() if callable(cost) else cost), path)


def stage_list(stage: str, platform: str | None, dump_dir: str | None) -> list[str]:
    """The stage names ``stage`` asks for ('all', or a comma list), each checked."""
    from ..errors import StageError

    if stage == "all":
        if not dump_dir:
            raise StageError("--stage all needs --dump-dir")
        return [s.name for s in stage_registry.all_for(platform)]
    names = [s.strip() for s in stage.split(",") if s.strip()]
    for name in names:
        stage_registry.get(name, platform)  # validate before any work
    return names


def registry_level(name: str) -> str:
    return stage_registry.stages().stages[name].level


def _lower_for(job: OptJob) -> tuple[Any, ...] | None:
    """What a JAX function input is lowered for: a TPU job's first topology (TPU lowering
    rules; the lowering is the same for every slice of a generation), else the CPU."""
    if job.platform != "tpu" or not job.targets:
        return None
    return job.targets[0][1].target.lower_for()


def run_opt(o: OptOptions, target: Any, *, say: Callable[[str], None] = log_note,
            progress: Callable[[Any], None] | None = None, also: tuple[str, ...] = (),
            python_passes: Any = None) -> list[OptResult]:
    """Check ``o`` against ``target`` (targets.Targets), then load, transform and emit every
    module, writing each one's outputs as it finishes. Returns the rows (a failed module
    in a batch is a row); with one module or ``fail_fast`` the failure is raised
    (its DriverError, or :class:`BatchStopped` from a worker). Usage errors raise
    before any module is touched. ``say`` gets the target's notes; ``progress`` events
    (core.progress) come per stage and per module. ``also``: stages made from the same
    compiles but not written, their outputs in each row's ``also`` (XLA stages only with a
    platform). ``python_passes``: the Python passes the pipeline may name (a
    mlir.python_passes.PassSet, as the front-end loaded ``o.load_pass_plugin``; None: the
    built-in and installed ones with ``o.load_pass_plugin``'s, loaded now); this command's
    only, in this process and its workers."""
    # Without MLIR passes or their instrumentation the pipeline module is not needed (a
    # cached stage's command stays light).
    mlir_work = any((o.pipeline_spec, o.passes, o.pipeline_file, o.print_ir_before, o.print_ir_after,
                     o.reproducer_dir, o.print_pipeline))
    if mlir_work:
        from ..mlir import pipeline

        if python_passes is None and o.load_pass_plugin:
            from ..mlir import passes as mlir_passes

            python_passes = mlir_passes.load_plugins(o.load_pass_plugin)

    root = pipeline.resolve(o.pipeline_spec, passes=o.passes, pipeline_file=o.pipeline_file,
                            python_passes=python_passes) if mlir_work else None
    if o.timing_format not in ("text", "json"):
        raise DriverError(f"--timing-format must be text or json, not '{o.timing_format}'")
    # With a platform, a name the MLIR pipeline does not run is one of XLA's HLO passes.
    mlir_before, xla_before = _split_print_names(o.print_ir_before, root, target.platform)
    mlir_after, xla_after = _split_print_names(o.print_ir_after, root, target.platform)
    if mlir_work:
        pipeline.check_print_ir_passes(mlir_before, root, "--print-ir-before", python_passes)
        pipeline.check_print_ir_passes(mlir_after, root, "--print-ir-after", python_passes)
    if o.reproducer_dir is not None:
        pipeline.check_reproducer_dir(o.reproducer_dir)
    if o.print_pipeline:
        text = root.render() if root is not None else "builtin.module()"
        if not o.inputs:
            outputs.Sink().emit(text)
            return []
        sys.stderr.write(text + "\n")
    if not o.inputs:
        raise DriverError("no input modules given", hint="mlirhlo opt --help")

    targets = target.stage_options(target_version=o.target_version, debug_info=o.debug_info,
                                   fold_constants=o.fold_constants, num_partitions=o.num_partitions)
    if o.num_partitions is not None and o.num_partitions < 1:
        raise DriverError("--num-partitions must be >= 1")
    if (o.xla_passes or o.after_pass) and target.platform is None:
        raise DriverError("--xla-passes and --after-pass need --platform cpu|cuda")
    if o.fold_constants and target.platform is None:
        raise DriverError("--fold-constants changes what XLA compiles: it needs --platform cpu|cuda")
    stage_names = ["hlo"] if (o.xla_passes or o.after_pass) else stage_list(o.stage, target.platform, o.dump_dir)
    if o.output and o.dump_dir:
        raise DriverError("give either -o or --dump-dir, not both")
    if o.output and len(targets) > 1:
        raise DriverError("several GPU specs or TPU topologies need --dump-dir, not -o")
    if o.output:
        outputs.check_output_path(o.output)  # before the work, not after it
    if o.jobs < 0:
        raise DriverError("--jobs must be >= 0")
    if o.scheduler is not None and not o.dump_dir:
        raise DriverError("--scheduler needs --dump-dir", hint="the cluster's results are written as files")
    tasks = tasks_for(o.inputs, split_input_file=o.split_input_file)
    binary = any(stage_registry.get(s, target.platform).binary for s in stage_names)
    if o.output and (len(tasks) > 1 or len(stage_names) > 1):
        if len(stage_names) > 1:
            raise DriverError("several stages need --dump-dir, not -o")
        if binary:
            raise DriverError("several modules in a binary stage need --dump-dir, not -o")
    if not (o.output or o.dump_dir) and len(tasks) * len(stage_names) * len(targets) > 1 and binary:
        raise DriverError("several modules in a binary stage need --dump-dir or -o")
    if o.plot is not None:
        _check_plot(o.plot, stage_names, target.platform, len(tasks), len(targets))
        also = (*also, PLOT_STAGE[target.platform])
    target.say_notes(say)
    inst = pipeline.Instrumentation(
        print_ir_after_all=o.print_ir_after_all, print_ir_after_change=o.print_ir_after_change,
        print_ir_before=mlir_before, print_ir_after=mlir_after,
        print_ir_after_failure=o.print_ir_after_failure, print_ir_module_scope=o.print_ir_module_scope,
        timing=o.timing, verify_each=o.verify_each) if mlir_work else None
    job = OptJob(
        root=root, stage_names=tuple(stage_names), targets=tuple(targets), platform=target.platform,
        instrumentation=inst, dump_dir=o.dump_dir, ir_dump_dir=o.ir_dump_dir, timing=o.timing,
        several=len(tasks) > 1, reproducer_dir=o.reproducer_dir, xla_passes=o.xla_passes,
        after_pass=o.after_pass, input_format=o.input_format, split_input_file=o.split_input_file,
        arg_specs=o.args,
        xla_instrumentation=_xla_instrumentation(o, target.platform, xla_before, xla_after),
        timing_format=o.timing_format,
        # On a cluster each worker finishes its own: this machine may lack the tools.
        defer=o.scheduler is None,
        pipeline_spec=o.pipeline_spec, passes=o.passes, pipeline_file=o.pipeline_file, cache=not o.no_cache,
        also=tuple(s for s in also if target.platform is not None or registry_level(s) == "mlir"))
    # Each module's outputs are written as it finishes; a failing one is a row,
    # unless it is the only module or fail_fast stops at it.
    writer = Writer(o.output)
    rows = run_batch(job, tasks, jobs=o.jobs, timeout=o.timeout, fail_fast=o.fail_fast,
                     scheduler=o.scheduler, on_result=writer, progress=progress)
    writer.finish()
    if o.plot is not None and rows and rows[0].ok:
        _plot(o.plot, rows[0])
    if job.xla_instrumentation is not None and job.xla_instrumentation.timing:
        from ..xla import compile_phases  # the phase tables come last: they count the writing

        sys.stderr.write(compile_phases.report(rows, o.timing_format))
    return rows
