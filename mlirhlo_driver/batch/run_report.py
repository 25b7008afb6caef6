"""Run's task list and report printing, shared by ``mlirhlo run`` and ``run_hlo_module``.

The front-ends only parse arguments; turning inputs into tasks, running them
(in process, in workers or on a cluster) and printing the per-module report and
summary table live here so both front-ends behave the same.
"""

from __future__ import annotations

import sys
from typing import Any


def run_tasks(specs: list[str], input_format: str | None, split: bool, args: str | None) -> list[Any]:
    from ..inputs import loader
    from .run_pool import Task

    return [Task(i, path, name, input_format, split, chunk, args, data)
            for i, (path, name, chunk, _, data) in enumerate(loader.module_units(specs, split_input_file=split))]


def execute_tasks(tasks: list[Any], options: Any, jobs: int, timeout: float | None,
                   scheduler: str | None = None) -> list[Any]:
    from .run_pool import run_in_workers, run_task

    progress = None
    if len(tasks) > 1 and sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import Progress

        progress = Progress(console=Console(stderr=True), transient=True)  # stdout is the report
        bar = progress.add_task("running modules", total=len(tasks))
        progress.start()
        progress.refresh()  # drawn at once, not at the first timer tick
    try:
        def done(_report: Any) -> None:
            if progress is not None:
                progress.advance(bar)
                progress.refresh()

        if jobs == 0 and scheduler is None:
            reports = []
            for t in tasks:
                reports.append(run_task(t, options))
                done(reports[-1])
            return reports
        return run_in_workers(tasks, options, jobs=jobs, timeout=timeout, on_done=done, scheduler=scheduler)
    finally:
        if progress is not None:
            progress.stop()


def execute_isolated(tasks: list[Any], options: Any) -> list[Any]:
    """``run_hlo_module --isolate_instructions``: every instruction of each
    task's entry computation run as its own module (ir/decompose.py), on the
    platform and the reference, one report each, named after the instruction
    (``FILE:instruction`` when there are several files). Runs in this process;
    the reference interpreter has a process of its own."""
    from ..core.program import InputOptions, unit_programs
    from ..errors import DriverError
    from ..execute import run
    from ..execute.engine import ModuleReport
    from ..inputs import loader
    from ..ir import decompose as hlo_decompose
    from ..ir import emit

    reports: list[Any] = []
    for task in tasks:
        try:
            m = unit_programs(task.source, InputOptions(task.input_format), data=task.data)[0]
            proto = m.hlo_proto or emit.hlo_proto(m.module)
            parts = hlo_decompose.isolate_instructions(proto)
        except DriverError as e:
            reports.append(ModuleReport(task.name, task.source, status="invalid",
                                        message=e.format().removeprefix("error: ")))
            continue
        for name, part in parts:
            label = f"{task.name}:{name}" if len(tasks) > 1 else name
            try:
                lm = loader.load(label, input_format="hlo-proto", data=part)[0]
            except DriverError as e:
                reports.append(ModuleReport(label, task.source, status="failed",
                                            message=e.format().removeprefix("error: ")))
                continue
            r = run.run_module(lm.module, label, task.source, options)
            if r.status == "invalid":  # e.g. a token operand: the instruction cannot run alone
                r.status = "failed"
            reports.append(r)
    return reports


def reproducer(report: Any, options: Any, extra_flags: list[str], partitions: int = 1) -> str:
    """The ``mlirhlo`` command that runs ``report``'s module again as ``options`` did: ``run``,
    or ``spmd-run`` for a module run on ``partitions`` > 1 partitions."""
    import shlex

    if partitions > 1:
        parts = ["mlirhlo", "spmd-run", report.source, "--num-partitions", str(partitions),
                 "--reference", options.reference]
    else:
        parts = ["mlirhlo", "run", report.source, "--platform", options.platform,
                 "--reference", options.reference]
    if options.zeros:
        parts.append("--zeros")
    elif options.inputs_npz:
        parts += ["--inputs", options.inputs_npz]
    elif options.seed:
        parts += ["--seed", str(options.seed)]
    for flag, value in (("--rtol", options.rtol), ("--atol", options.atol)):
        if value is not None:
            parts += [flag, str(value)]
    if options.large_float_range:
        parts.append("--large-float-range")
    if options.fold_constants and partitions == 1:
        parts.append("--fold-constants")
    parts += extra_flags
    return " ".join(shlex.quote(p) for p in parts)


def print_run_reports(reports: list[Any], options: Any, print_literals: bool, extra_flags: list[str]) -> None:
    import numpy as np

    for r in reports:
        if not r.passed and not r.reproducer:  # a front-end may have set its own
            r.reproducer = reproducer(r, options, extra_flags)
        head = f"{r.name}: {r.status.upper()}"
        if r.message:
            head += f": {r.message}"
        lines = [head]
        if r.inputs_note:
            lines.append(f"  inputs: {r.inputs_note}")
        lines.extend(f"  {n}" for n in r.notes)
        for k in r.kept_constants:
            lines.append(f"  kept constant: {k['location']} {k['type']} ({'; '.join(k['reasons'])})")
        if r.checked_values_detail:
            lines.append(f"  checked values: {r.checked_values_detail}")
        if r.compile_ms is not None:
            timing = f"  compile {r.compile_ms:.1f} ms, run {r.run_ms:.3f} ms"
            if options.iterations > 1:
                timing += f" (median of {options.iterations})"
            if r.reference_ms is not None:
                timing += f", reference ({options.reference}) {r.reference_ms:.1f} ms"
            lines.append(timing)
        for c in r.checks:
            lines.append(f"  {'PASS' if c.passed else 'FAIL'} {c.kind} at {c.location}"
                         + (f": {c.message}" if c.message else ""))
        for m in r.mismatches:
            lines.extend("  " + ln for ln in m.describe().splitlines())
        if r.bisect is not None:
            b = r.bisect
            lines.append(f"  bisect: first divergence at {b.location}: {b.op}")
            if b.operand_shapes:
                lines.append(f"    operands: {', '.join(b.operand_shapes)}")
            lines.extend("    " + ln for ln in b.mismatch.describe().splitlines()[:3])
        if r.pass_bisect is not None:
            lines.extend(_pass_bisect_lines(r, options, extra_flags))
        if r.xla_passes is not None:
            from ..xla import pass_log

            lines.extend("  " + ln for ln in pass_log.format_rows(r.xla_passes, options.platform).splitlines())
        if print_literals and r.outputs is not None:
            with np.printoptions(threshold=200, precision=6):
                for i, a in enumerate(r.inputs or []):
                    lines.append(f"  input {i} ({a.dtype}{list(a.shape)}): {np.array2string(a, separator=', ')}")
                for i, o in enumerate(r.outputs):
                    lines.append(f"  output {i} ({o.dtype}{list(o.shape)}): {np.array2string(o, separator=', ')}")
                for i, o in enumerate(r.reference_outputs or []):
                    lines.append(f"  reference {i}: {np.array2string(o, separator=', ')}")
        if r.reproducer:
            lines.append(f"  reproduce: {r.reproducer}")
        sys.stdout.write("\n".join(lines) + "\n")
    if len(reports) > 1:
        print_summary_table(reports)


def _pass_bisect_lines(r: Any, options: Any, extra_flags: list[str]) -> list[str]:
    b = r.pass_bisect
    if not b.passes:
        return [f"  bisect-passes: {b.note} ({b.trials} trial{'s' if b.trials != 1 else ''})"]
    names = ", ".join(f"'{p}' ({', '.join(b.pipelines.get(p) or ['?'])})" for p in b.passes)
    what = "XLA pass" if len(b.passes) == 1 else "XLA passes"
    lines = [f"  bisect-passes: {what} {names}: disabled, the module matches its reference"
             + ("" if b.confirmed else " (not confirmed alone)")
             + f" ({b.trials} trials over {b.candidates} passes)"]
    lines.append(f"  matches with: {reproducer(r, options, [*extra_flags, b.flag])}")
    if b.before is not None and b.after is not None:
        for when, text in (("before", b.before), ("after", b.after)):
            lines.append(f"  // -----// HLO {when} {b.passes[0]} ({b.dump_pipeline}) //----- //")
            lines.extend("  " + ln for ln in text.rstrip("\n").splitlines())
    else:
        lines.append(f"  (XLA dumped no run of {b.passes[0]} that changed the module)")
    return lines


def print_summary_table(reports: list[Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..execute.engine import format_error  # the figure as the mismatch lines print it

    table = Table(title=f"{sum(r.passed for r in reports)}/{len(reports)} modules passed")
    for col, justify in (("module", "left"), ("status", "left"), ("max abs error", "right"),
                         ("compile ms", "right"), ("run ms", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in reports:
        table.add_row(r.name, r.status, "" if r.max_abs_error is None else format_error(r.max_abs_error),
                      "" if r.compile_ms is None else f"{r.compile_ms:.1f}",
                      "" if r.run_ms is None else f"{r.run_ms:.3f}")
    # Module names are file names, not rich markup or emoji codes (m[1].hlo, a:ok:.mlir).
    Console(width=max(100, len(max((r.name for r in reports), key=len)) + 60), markup=False,
            emoji=False).print(table)


def save_outputs(path: str, reports: list[Any]) -> None:
    import io

    import numpy as np

    from .. import outputs

    arrays = {}
    for r in reports:
        for i, o in enumerate(r.outputs or []):
            arrays[f"{r.name}/out{i}" if len(reports) > 1 else f"out{i}"] = o
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    outputs.write_atomic(path, buf.getvalue())
