"""What the ``mlirhlo`` sub-commands do beyond their arguments (cli/mlirhlo.py
parses them and calls these): each takes parameters, raises the package's typed
errors, and returns the exit status where it has one of its own."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, FLAGS, DriverError, log_note, param

# XLA's run_hlo_module spellings of the reference: Interpreter, default, CPU, Host, '' (none).
_REFERENCE_ALIASES = {"default": "interpreter", "host": "cpu", "": "none"}
PRECISIONS = ("default", "high", "highest")  # ir.precision's


def run(inputs: list[str], *, cli_flags: dict[str, Any], extra_words: list[str], platform: str = "cpu",
        reference: str | None = None, precision: str | None = None, seed: int = 0, zeros: bool = False, inputs_npz: str | None = None,
        large_float_range: bool = False, rtol: float | None = None, atol: float | None = None,
        iterations: int = 1, print_literals: bool = False, save_outputs: str | None = None,
        fold_constants: bool = False, bisect: bool = False, bisect_passes: bool = False, timing: bool = False, jobs: int = 1, timeout: float | None = None,
        scheduler: str | None = None, json_report: str | None = None, input_format: str | None = None,
        split_input_file: bool = False, args: str | None = None) -> int:
    """``mlirhlo run``: compile each module with XLA for ``platform``, execute it, compare with
    ``reference``; the per-module report and summary on stdout. ``cli_flags``: the
    ``--xla_*`` DebugOptions of the command line (over ``XLA_FLAGS``); ``extra_words``
    them as typed, for the reproducer lines. 0 when every module matches, 1 when some
    mismatch or fail, 2 for bad input."""
    from .. import outputs, targets
    from ..batch import run_report
    from ..errors import did_you_mean
    from ..execute import engine
    from ..execute import run as runner

    flags = targets.debug_options(cli_flags)
    if not inputs:
        raise DriverError("no input modules given", hint="mlirhlo run --help")
    platform = targets.platform_name(platform)
    # The interpreter is XLA's reference; an accelerator's run is judged against XLA CPU, which
    # takes a fraction of the interpreter's time on a training step (27 s for a small MLP's).
    if reference is None:
        reference = "interpreter" if platform == "cpu" else "cpu"
    reference = _REFERENCE_ALIASES.get(reference.lower(), reference.lower())
    if reference not in runner.REFERENCES:
        raise DriverError(f"unknown reference '{reference}'",
                          hint=did_you_mean(reference, runner.REFERENCES) or ", ".join(runner.REFERENCES))
    if precision is not None and precision.lower() not in PRECISIONS:
        raise DriverError(f"--precision: unknown precision '{precision}'",
                          hint=did_you_mean(precision.lower(), PRECISIONS) or ", ".join(PRECISIONS))
    if zeros and inputs_npz:
        raise DriverError("give --zeros or --inputs, not both")
    if iterations < 1 or jobs < 0:
        raise DriverError("--iterations must be >= 1 and --jobs >= 0")
    for path in (json_report, save_outputs):
        if path:
            outputs.check_output_path(path)
    tasks = run_report.run_tasks(inputs, input_format, split_input_file, args)
    if inputs_npz and len(tasks) > 1:
        raise DriverError("--inputs is for one module")
    engine.require_devices(platform)
    if platform == "tpu" and jobs != 1:
        log_note(f"--jobs {jobs}: one program holds a TPU at a time; the modules run one after another")
        jobs = 1
    options = runner.RunOptions(
        platform=platform, reference=reference, seed=seed, zeros=zeros, inputs_npz=inputs_npz,
        precision=precision.lower() if precision else None, platform_tolerance=rtol is None and atol is None,
        large_float_range=large_float_range, rtol=rtol, atol=atol, iterations=iterations,
        fold_constants=fold_constants, bisect=bisect, bisect_passes=bisect_passes, timing=timing,
        keep_outputs=bool(print_literals or save_outputs), xla_flags=tuple(sorted(flags.items())))
    reports = run_report.execute_tasks(tasks, options, jobs, timeout, scheduler)
    if len(reports) == 1 and reports[0].status == "invalid":
        sys.stderr.write(f"error: {reports[0].message}\n")  # bad input: one line, as everywhere
        return EXIT_USAGE
    run_report.print_run_reports(reports, options, print_literals,
                                 extra_flags=extra_words + (["--split-input-file"] if split_input_file else []))
    if save_outputs:
        run_report.save_outputs(save_outputs, reports)
    if json_report:
        import json

        outputs.write_atomic(json_report, json.dumps([r.row() for r in reports], indent=2) + "\n")
    if any(r.status == "invalid" for r in reports):
        return EXIT_USAGE
    return EXIT_OK if all(r.passed for r in reports) else EXIT_FAILURE


def xla_pass_listing(target: Any, inputs: list[str], *, input_format: str | None = None,
                     args: str | None = None) -> str:
    """``opt --list-passes --platform P [FILE...]``: XLA's HLO passes of the target's
    pipeline, seen on the given modules (XLA's reference module without any)."""
    from ..core.program import InputOptions, programs
    from ..xla import passes as xla_passes

    modules = programs(inputs, InputOptions(input_format, args=args)) if inputs else None
    return xla_passes.listing([target.options_for(target.platform)], modules)


# ``convert -o FILE``'s format from FILE's extension, when --to is not given.
_EXT_TO_FORMAT = {".hlo": "hlo", ".txt": "hlo", ".pb": "hlo-proto", ".pbtxt": "hlo-pbtxt",
                  ".mlir": "stablehlo", ".mlirbc": "bytecode", ".vhlo": "vhlo"}


def convert(input: str, *, output: str | None = None, to: str | None = None, emit_proto: bool = False,
            input_format: str | None = None, args: str | None = None, target_version: str | None = None) -> None:
    """``mlirhlo convert``: the module of ``input`` in format ``to`` (or ``output``'s
    extension's), to ``output`` or stdout."""
    from pathlib import Path

    from .. import outputs
    from ..api import CONVERT_FORMATS, check_format, load

    if emit_proto and to is not None and to != "hlo-proto":
        raise DriverError(f"--emit-proto means --to hlo-proto; it conflicts with --to {to}",
                          hint="give one of them")
    fmt = "hlo-proto" if emit_proto else to
    if fmt is None and output:
        fmt = _EXT_TO_FORMAT.get(Path(output).suffix)
    if fmt is None:
        raise DriverError("give --to FORMAT (or an -o file with a known extension)",
                          hint="formats: " + ", ".join(CONVERT_FORMATS))
    check_format(fmt)
    sink = outputs.Sink(output)
    sink.check()
    program = load(input, input_format=input_format, args=args)
    try:
        data = program.convert(fmt, target_version=target_version)
    except DriverError as e:
        e.about(input)  # the conversion failed on this file: say so
        raise
    sink.emit(data)
    sink.finish()


def ptx(input: str, *, arch: str = "sm_90a", opt_level: int = 3, optimize: bool = True, output: str | None = None,
        print_after_all: bool = False, ir_dump_dir: str | None = None, libdevice: str | None = None,
        check_ptxas: bool = True) -> None:
    """``mlirhlo ptx``: LLVM IR (``input``, ``-`` for stdin) to PTX, to ``output`` or stdout;
    the IR after each LLVM pass to stderr (``print_after_all``) or one file per pass."""
    import re
    from pathlib import Path

    from .. import outputs
    from ..cuda import ptx as ptx_backend

    text = ptx_backend.read_llvm_ir(input)
    sink = outputs.Sink(output)
    sink.check()
    compiled = ptx_backend.compile_llvm_ir(text, input, ptx_backend.PtxOptions(
        arch=arch, opt_level=opt_level, optimize=optimize, libdevice=libdevice, check_ptxas=check_ptxas,
        dump_passes=print_after_all or ir_dump_dir is not None))
    dumps = [(f"{n}:{p}" if n else p, ir) for n, p, ir in compiled.dumps]
    if ir_dump_dir:
        for i, (pass_name, ir) in enumerate(dumps):
            safe = re.sub(r"[^\w.-]+", "_", pass_name)[:80]
            sink.file(Path(ir_dump_dir) / f"{outputs.dump_number(i, len(dumps))}-{safe}.ll", ir)
    elif print_after_all:
        for _, ir in dumps:
            sys.stderr.write(ir if ir.endswith("\n") else ir + "\n")
    sink.emit(compiled.text)
    sink.finish()


def bench_pipeline(input: str, *, target: Any = None, pipeline_spec: str | None = None, passes: str | None = None,
                   compare: str | None = None, repeats: int = 10, json_out: bool = False,
                   input_format: str | None = None, args: str | None = None,
                   say: Callable[[str], None] = log_note, python_passes: Any = None) -> str:
    """``mlirhlo bench-pipeline``: the pipeline (and ``compare``, interleaved) run ``repeats``
    times on fresh copies; per-pass median and spread. With a ``target``, XLA's HLO
    pipeline instead, timed from its per-pass dumps. A table, or JSON. ``python_passes``:
    the Python passes the pipelines may name (a mlir.python_passes.PassSet; None: the
    built-in and installed ones)."""
    import json
    import statistics

    from ..api import load
    from ..execute import bench
    from ..mlir import pipeline

    if repeats < 1:
        raise DriverError("--repeats must be >= 1")
    program = load(input, input_format=input_format, args=args)
    out: list[str] = []
    if target is not None:
        target.say_notes(say)
        _, options = target.stage_options()[0]
        rows, compiles = bench.bench_xla_pipeline(program.module, program.name, options, repeats)
        if json_out:
            return json.dumps({"platform": target.platform, "source": "per-pass dump file timestamps",
                               "compile_ms": compiles, "passes": [
                                   {"pipeline": r.pipeline, "ending_with": r.ending_with,
                                    "times_ms": r.times_ms} for r in rows]}, indent=2) + "\n"
        out.append(f"# XLA {target.platform} HLO pipeline, {repeats} compiles; times between per-pass dumps "
                   "(XLA dumps after passes that change the module), from file timestamps")
        out.append(f"{'median ms':>10}  {'min':>8}  {'max':>8}  pipeline / ending with pass")
        for r in rows:
            out.append(f"{statistics.median(r.times_ms):>10.3f}  {min(r.times_ms):>8.3f}  "
                       f"{max(r.times_ms):>8.3f}  {r.pipeline} / {r.ending_with}")
        out.append(f"{statistics.median(compiles):>10.3f}  {min(compiles):>8.3f}  {max(compiles):>8.3f}  "
                   "whole compile")
        return "\n".join(out) + "\n"
    roots = [pipeline.resolve(pipeline_spec, passes=passes, python_passes=python_passes)]
    if roots[0] is None:
        raise DriverError("give --pipeline or --passes")
    if compare is not None:
        other = compare if compare.startswith(("@", "builtin.module(")) else None
        roots.append(pipeline.resolve(other, python_passes=python_passes) if other
                     else pipeline.resolve(passes=compare, python_passes=python_passes))
    results = bench.bench_pipelines(program.module, roots, repeats)
    # B over A; none where A's median is 0 ms (a pipeline too fast for the timer to see).
    ratio = (results[1].median_total_ms / results[0].median_total_ms
             if len(results) == 2 and results[0].median_total_ms > 0 else None)
    if json_out:
        payload: dict[str, Any] = {"module": program.name, "runs": [r.to_dict() for r in results]}
        if len(results) == 2:
            payload["ratio"] = ratio
        return json.dumps(payload, indent=2) + "\n"
    for label, res in zip(("A", "B"), results):
        out.append(f"# {label}: {res.spec}  ({repeats} runs, fresh copy each)")
        out.append(f"{'median ms':>10}  {'min':>8}  {'max':>8}  pass")
        for p in res.passes:
            lo, hi = p.spread_ms
            out.append(f"{p.median_ms:>10.3f}  {lo:>8.3f}  {hi:>8.3f}  {'  ' * p.depth}{p.name}")
        out.append(f"{res.median_total_ms:>10.3f}  {min(res.totals_ms):>8.3f}  "
                   f"{max(res.totals_ms):>8.3f}  Total")
    if len(results) == 2:
        out.append("# B/A total (medians, runs interleaved A B A B): "
                   + (f"{ratio:.3f}x" if ratio is not None else "none (A's median total is 0 ms)"))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------- diff

def diff_spec_names(platform: str, gpu_spec: str | None) -> tuple[str | None, str | None]:
    """Side A's and side B's GPU spec from ``A[,B]`` (one spec: both; None: the default)."""
    if platform != "cuda":
        if gpu_spec:
            raise DriverError(f"{param('gpu_spec')} is for {param('platform', 'cuda')}")
        return None, None
    names = [s.strip() for s in (gpu_spec or "").split(",")]
    if gpu_spec is not None and not all(names):
        raise DriverError(f"{param('gpu_spec', gpu_spec)} names an empty spec", hint="A or A,B")
    if len(names) > 2:
        raise DriverError(f"{param('gpu_spec', gpu_spec)} names {len(names)} specs: diff compares two",
                          hint="A,B; 'mlirhlo kernels --gpu-spec' puts more side by side")
    if gpu_spec is None:
        return None, None
    return names[0], names[-1]


def diff_flags(text: str | None, option: str, platform: str | None = None) -> dict[str, Any]:
    """An XLA_FLAGS-style string given to ``option``, parsed; names and value types are
    checked against this XLA (FlagError), and libtpu's options for ``platform`` ``tpu``."""
    from ..xla import flags as xla_flags

    flags = xla_flags.from_text(text or "", param(option), strict=True)
    if flags:
        xla_flags.check_names(flags, xla_flags.known_names(), platform)
        xla_flags.check_value_types(flags)
    return flags


def diff_topology_names(platform: str, tpu_topology: str | None) -> tuple[str | None, str | None]:
    """Side A's and side B's TPU topology from ``A[,B]`` (one: both; None: the default)."""
    if tpu_topology is None:
        return None, None
    if platform != "tpu":
        raise DriverError(f"{param('tpu_topology')} is for {param('platform', 'tpu')}")
    names = [s.strip() for s in tpu_topology.split(",")]
    if not all(names):
        raise DriverError(f"{param('tpu_topology', tpu_topology)} names an empty topology", hint="A or A,B")
    if len(names) > 2:
        raise DriverError(f"{param('tpu_topology', tpu_topology)} names {len(names)} topologies: diff compares two",
                          hint="A,B; 'mlirhlo opt --tpu-topology' compiles for more")
    return names[0], names[-1]


def diff(input_a: str, input_b: str | None = None, *, platform: str | None, gpu_spec: str | None = None,
         flags_a: str | None = None, flags_b: str | None = None, stage: str | None = None,
         input_options: Any = None, as_json: bool = False, cache: bool = True, explain: bool = False,
         debug_options_file_a: str | None = None, debug_options_file_b: str | None = None,
         num_partitions: int | None = None, say: Callable[[str], None] = log_note,
         progress: Callable[[Any], None] | None = None, tpu_topology: str | None = None) -> str:
    """``mlirhlo diff``: the comparison of two compiles (core.diff) as text, or as JSON.

    Side A compiles ``input_a`` for the first spec of ``gpu_spec`` with ``flags_a``, side B
    ``input_b`` (default ``input_a``) for the last spec with ``flags_b``; each side's
    DebugOptions are its ``debug_options_file_*`` < ``XLA_FLAGS`` < its flags. Inputs are
    any a command takes (``input_options``: format, JAX function arguments). Every argument
    is checked before anything compiles; the default spec's note is said once. Sides come
    from the stage cache where they are. ``explain``: also, per differing kernel, its cause
    among the differing flags and spec fields and the XLA pass behind it (core.explain;
    the JSON's ``explain``, after the text's report); one input only, and no ``stage``.
    ``progress`` gets core.progress events: each side, then each kernel explained.
    ``num_partitions``: a sharded module's partitions on both sides (None: as it says).
    ``tpu_topology``: ``A[,B]``, side A's and side B's TPU slice (``platform`` tpu), as
    ``gpu_spec`` is for CUDA.
    """
    import json

    from .. import targets
    from ..core import diff as core_diff
    from ..core.compiled import Compiled
    from ..core.program import InputOptions, programs

    if platform is None and gpu_spec is not None:
        platform = "cuda"  # GPU specs name CUDA targets
    if platform is None and tpu_topology is not None:
        platform = "tpu"
    if platform is None:
        raise DriverError(f"diff compares XLA compiles: give {param('platform', 'cpu|cuda|tpu')}")
    if stage is not None and explain:
        raise DriverError(f"give {param('stage')} or {param('explain')}, not both")
    platform = targets.platform_name(platform)
    spec_a, spec_b = diff_spec_names(platform, gpu_spec)
    topo_a, topo_b = diff_topology_names(platform, tpu_topology)
    fa, fb = diff_flags(flags_a, "flags_a", platform), diff_flags(flags_b, "flags_b", platform)
    if stage is not None:
        stage = core_diff.check_stage(stage, platform)
    sides_in = [(input_a, spec_a or topo_a, fa, debug_options_file_a),
                (input_b or input_a, spec_b or topo_b, fb, debug_options_file_b)]
    if explain and sides_in[0][0] != sides_in[1][0]:
        raise DriverError(f"{param('explain')} explains the differences of flags and GPU specs: give one input",
                          hint="two inputs differ in their HLO itself; 'mlirhlo diff A B --stage hlo' shows it")
    tgts = [targets.resolve(platform, gpu_spec=s if platform != "tpu" else None, cli_flags=f, debug_options_file=d,
                            tpu_topology=s if platform == "tpu" else None) for _, s, f, d in sides_in]
    loaded: dict[str, Any] = {}
    for path, *_ in sides_in:
        if path not in loaded:  # a bad input fails before either compile
            found = programs([path], input_options or InputOptions())
            if len(found) != 1:
                raise DriverError(f"diff compares one module; '{path}' holds {len(found)}",
                                  hint="give one file per side: mlirhlo diff FILE FILE_B")
            loaded[path] = found[0]
    notes = list(dict.fromkeys(n for t in tgts for n in t.notes))
    for n in notes:
        say(n.removeprefix("note: "))
    from ..core.progress import report

    compiles = [Compiled(loaded[side[0]], t, t.options(num_partitions=num_partitions), cache=cache)
                for side, t in zip(sides_in, tgts)]
    def side(i: int) -> dict[str, Any]:
        try:
            return core_diff.side(compiles[i], stage)
        except DriverError as e:
            raise e.about(sides_in[i][0]) from None  # that side's compile failed: say which file

    report(progress, 0, 2, "side A")
    side_a = side(0)
    report(progress, 1, 2, "side B")
    # The same compile twice (the cache off): once is enough.
    side_b = side_a if sides_in[0] == sides_in[1] else side(1)
    for n in dict.fromkeys(n for c in compiles for n in c.notes_for(FLAGS)):
        say(n)
    result = core_diff.compare(side_a, side_b)
    if explain:
        from ..core import explain as explaining

        result["explain"] = explaining.explain(compiles[0], compiles[1], side_a, side_b, result, progress=progress)
    if as_json:
        return json.dumps(result, indent=2) + "\n"
    return core_diff.text(result) + ("\n" + explaining.text(result["explain"]) if explain else "")


def tpu_plugin_install(*, force: bool = False) -> str:
    """``mlirhlo tpu-plugin install``: see tpu.plugin.install; the line to print."""
    from ..tpu import plugin

    return plugin.install(force=force)


def cuda_plugin_install(*, cuda: int | None = None, force: bool = False) -> str:
    """``mlirhlo cuda-plugin install``: see cuda.plugin.install; the line to print."""
    from ..cuda import plugin

    return plugin.install(cuda=cuda, force=force)
