"""``run``'s tasks for the shared worker pool (_native/pool.py): one module per task.

Each module runs isolated from the others: a crash, abort or hang in one is
reported as that module's failure, and the rest go on. The same tasks run on
a Dask cluster with ``scheduler`` (_native/cluster.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..execute.engine import ModuleReport
from ..execute.run import RunOptions


@dataclass(frozen=True)
class Task:
    index: int
    source: str
    name: str
    input_format: str | None
    split_input_file: bool
    chunk: int                # which module of the file (split inputs), else 0
    arg_specs: str | None
    data: bytes | None = None  # the content of '-' (stdin), read once by the parent
    partitions: int = 1        # >1: run SPMD-partitioned on as many host devices (run_hlo_module)


def run_task(task: Task, options: RunOptions) -> ModuleReport:
    """Load the task's module and run it (in whatever process calls this)."""
    from ..core.program import InputOptions, unit_programs
    from ..errors import DriverError
    from ..execute import run

    try:
        # Only this task's chunk is parsed: another chunk's error is not this one's.
        options_in = InputOptions(task.input_format, task.split_input_file, task.arg_specs,
                                  lower_for=_lower_for(options))
        loaded = unit_programs(task.source, options_in, chunk=task.chunk if task.split_input_file else None,
                               data=task.data)[0]
        loaded.module  # noqa: B018 - a module that does not parse is this task's bad input
    except DriverError as e:
        return ModuleReport(task.name, task.source, status="invalid", message=e.format().removeprefix("error: "))
    partitions, note, reference_module = task.partitions, "", None
    if options.platform == "tpu":
        from ..xla.backend import declared_partitions

        options, partitions, note = _as_dumped(loaded, options, partitions)
        # A sharded module runs partitioned over the chips (one line where there are too few):
        # XLA TPU compiles one for a single device only to fail on the shapes it leaves.
        partitions = max(partitions, declared_partitions(loaded.module))
        from ..inputs.loader import is_jax_input

        if is_jax_input(task.source, task.input_format) and options.reference == "cpu":
            # The TPU lowering may call the TPU's own kernels (LuDecomposition for linalg.solve,
            # which XLA CPU has none of): the reference runs the function's CPU lowering.
            try:
                reference_module = unit_programs(task.source, InputOptions(
                    task.input_format, task.split_input_file, task.arg_specs))[0].module
            except DriverError as e:
                return ModuleReport(task.name, task.source, status="failed",
                                    message=f"the CPU lowering of the reference: {e.format().removeprefix('error: ')}")
    report = run.run_module(loaded.module, task.name, task.source, options, loaded.line_offset,
                            partitions=partitions, reference_module=reference_module)
    if note:
        report.notes.insert(0, note)
    return report


def _lower_for(options: RunOptions) -> tuple[Any, ...] | None:
    """A JAX function run on a TPU chip is lowered for the TPU (its lowering rules, Pallas
    kernels), in the driver's TPU compile process, as ``opt --platform tpu`` lowers it."""
    return options.target.lower_for() if options.platform == "tpu" else None


def _as_dumped(loaded: Any, options: RunOptions, partitions: int) -> tuple[RunOptions, int, str]:
    """A module from a TPU program's XLA dump runs with the options it was compiled with
    (tpu.replay): its DebugOptions and TPU options under the user's, its partitions."""
    from dataclasses import replace

    from ..errors import DriverError
    from ..tpu import replay

    try:
        dumped = replay.program_options(loaded)
    except DriverError:
        return options, partitions, ""  # not readable as a dump: the module as it is
    if dumped is None:
        return options, partitions, ""
    flags = {**dict(dumped.xla_flags), **dict(options.xla_flags)}
    options = replace(options, xla_flags=tuple(sorted(flags.items())))
    said = ", ".join(f"{k}={v}" for k, v in dumped.xla_flags) or "no flags beyond the defaults"
    return options, max(partitions, dumped.num_partitions), f"compiled as dumped ({dumped.source}): {said}"


def worker_task(options: RunOptions, task: Task) -> ModuleReport:
    """The pool's entry: ``fn(context, task)``."""
    return run_task(task, options)


def worker_init(options: RunOptions) -> None:
    """Once per worker: jaxlib and the platform's client (the CUDA plugin), before any task."""
    from .._native import jaxlib as _jaxlib

    _jaxlib.cpu_devices(options.host_devices)
    if options.platform == "cuda":
        _jaxlib.cuda_devices()
    if options.platform == "tpu":
        _jaxlib.tpu_devices()  # opening the chip takes seconds: once per worker, before any task


def run_in_workers(tasks: list[Task], options: RunOptions, *, jobs: int, timeout: float | None,
                   on_done: Callable[[ModuleReport], None] | None = None,
                   scheduler: str | None = None) -> list[ModuleReport]:
    """One report per task, in task order, whatever happens to the workers."""
    from .._native import cluster, pool

    reports: dict[int, ModuleReport] = {}
    for index, result in cluster.imap_anywhere(
            "mlirhlo_driver.batch.run_pool:worker_task", options, tasks, jobs=jobs, timeout=timeout,
            init="mlirhlo_driver.batch.run_pool:worker_init", scheduler=scheduler):
        if isinstance(result, pool.Lost):
            task = tasks[index]
            result = ModuleReport(task.name, task.source, status=result.status, message=result.message)
        reports[index] = result
        if on_done:
            on_done(result)
    return [reports[i] for i in range(len(tasks))]
