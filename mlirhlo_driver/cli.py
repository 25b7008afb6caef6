"""The ``mlirhlo`` command line: thin typer commands over the library.

Library errors are typed (errors.py); only this module turns them into
messages and exit codes: 2 for bad usage or input, 1 for a failure of a valid
module (a pass or a compile). Nothing heavy is imported at start-up.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from . import stages as stage_registry
from .errors import CompileError, DriverError, PassFailure, StageError

app = typer.Typer(
    name="mlirhlo",
    help="Compile, transform and dump StableHLO / HLO modules with jaxlib's MLIR and XLA.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_FAILURE = 1
EXIT_USAGE = 2


def _print_version(value: bool) -> None:
    """--version: the driver and every tool version a bug report needs. Reads package
    metadata and asks ptxas (cached), imports no jax: it must stay fast."""
    if not value:
        return
    from importlib import metadata

    from . import __version__, _jaxlib

    lines = [f"mlirhlo-driver {__version__}", *_jaxlib.version_lines()]
    ptxas, _, missing = _ptxas_in_use()
    lines.append(f"ptxas {ptxas.version_str} {ptxas.path} ({ptxas.source})" if ptxas is not None
                 else f"ptxas none usable: {missing}")
    try:
        lines.append(f"llvmlite {metadata.version('llvmlite')}")
    except metadata.PackageNotFoundError:
        lines.append("llvmlite not installed")
    typer.echo("\n".join(lines))
    raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print the versions of the driver, jax, jaxlib, the CUDA plugin, ptxas and llvmlite.")] = False,
) -> None:
    pass


def _fail(err: DriverError) -> None:
    from .batch import error_text

    sys.stderr.write(error_text(err))
    sys.stderr.flush()
    raise typer.Exit(EXIT_FAILURE if isinstance(err, (PassFailure, CompileError)) else EXIT_USAGE)


# ----------------------------------------------------------------------- opt

InputsArg = Annotated[Optional[list[str]], typer.Argument(
    help="Files, globs, directories, or package.module:function (with --args).", show_default=False)]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def opt(
    ctx: typer.Context,
    inputs: InputsArg = None,
    pipeline_spec: Annotated[Optional[str], typer.Option(
        "--pipeline", help="MLIR textual pipeline, e.g. 'builtin.module(func.func(canonicalize),cse)', "
                           "or @NAME for pipelines/NAME.pipeline.")] = None,
    passes: Annotated[Optional[str], typer.Option(
        "--passes", help="hlo-opt style comma list; each pass is nested at its anchor.")] = None,
    pipeline_file: Annotated[Optional[str], typer.Option(
        "--pipeline-file", help="A pipeline file (header comment + textual pipeline).")] = None,
    print_pipeline: Annotated[bool, typer.Option(
        "--print-pipeline", help="Print the textual pipeline that will run.")] = False,
    stage: Annotated[str, typer.Option(
        "--stage", help="Stage to emit (comma list allowed; 'all' with --dump-dir).")] = "stablehlo",
    output: Annotated[Optional[str], typer.Option("-o", "--output", "--o", help="Output file (default stdout).")] = None,
    dump_dir: Annotated[Optional[str], typer.Option(
        "--dump-dir", help="Write <module>.<stage>.<ext> files here.")] = None,
    list_stages: Annotated[bool, typer.Option("--list-stages", help="List the stages and exit.")] = False,
    list_passes: Annotated[bool, typer.Option("--list-passes", help="List passes and pipelines and exit.")] = False,
    input_format: Annotated[Optional[str], typer.Option(
        "--input-format", help="Force: hlo, hlo-proto, hlo-pbtxt, mlir, bytecode, vhlo, jax.")] = None,
    split_input_file: Annotated[bool, typer.Option(
        "--split-input-file", help="Split inputs on '// -----' lines; each chunk is a module.")] = False,
    args: Annotated[Optional[str], typer.Option(
        "--args", help="Argument specs for a JAX function, e.g. 'f32[8,128],i32[8]'.")] = None,
    print_ir_after_all: Annotated[bool, typer.Option("--print-ir-after-all")] = False,
    print_ir_after_change: Annotated[bool, typer.Option("--print-ir-after-change")] = False,
    print_ir_before: Annotated[Optional[list[str]], typer.Option(
        "--print-ir-before", help="Print IR before this pass (repeatable; 'all').")] = None,
    print_ir_after: Annotated[Optional[list[str]], typer.Option(
        "--print-ir-after", help="Print IR after this pass (repeatable; 'all').")] = None,
    print_ir_after_failure: Annotated[bool, typer.Option("--print-ir-after-failure")] = False,
    print_ir_module_scope: Annotated[bool, typer.Option("--print-ir-module-scope")] = False,
    ir_dump_dir: Annotated[Optional[str], typer.Option(
        "--ir-dump-dir", help="Write printed IR here, one file per pass, instead of stderr.")] = None,
    timing: Annotated[bool, typer.Option("--timing", help="Per-pass wall times as a table.")] = False,
    verify_each: Annotated[bool, typer.Option(
        "--verify-each/--no-verify-each", help="Verify the IR after each pass.")] = True,
    reproducer_dir: Annotated[Optional[str], typer.Option(
        "--reproducer-dir", help="Where a failing pass's reproducer goes (default: temp dir).")] = None,
    target_version: Annotated[Optional[str], typer.Option(
        "--target-version", help="VHLO version for --stage vhlo: current, minimum or X.Y.Z.")] = None,
    debug_info: Annotated[bool, typer.Option(
        "--mlir-print-debuginfo", help="Print MLIR locations.")] = False,
    platform: Annotated[Optional[str], typer.Option(
        "--platform", help="Compile with XLA for cpu or cuda (device-less) to reach XLA stages.")] = None,
    gpu_spec: Annotated[Optional[str], typer.Option(
        "--gpu-spec", help="GPU target: a name from 'mlirhlo specs list' or a .txtpb path; "
                           "comma list for several (default: " + "h100_sxm" + ").")] = None,
    debug_options_file: Annotated[Optional[str], typer.Option(
        "--debug-options-file", help="DebugOptions textproto ('xla_name: value' lines).")] = None,
    autotune_results: Annotated[Optional[str], typer.Option(
        "--autotune-results", help="Load autotuning results (xla_gpu_load_autotune_results_from).")] = None,
    xla_passes: Annotated[Optional[str], typer.Option(
        "--xla-passes", help="Run XLA's pipeline with only these HLO passes; print the HLO after them.")] = None,
    after_pass: Annotated[Optional[str], typer.Option(
        "--after-pass", help="Print the HLO right after this XLA pass of the normal pipeline.")] = None,
    load_pass_plugin: Annotated[Optional[list[str]], typer.Option(
        "--load-pass-plugin", help="A .py file registering Python passes (repeatable).")] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Neither read nor write the stage cache (see 'mlirhlo cache info').")] = False,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Worker processes, each module isolated (0: in this process).")] = 0,
    fail_fast: Annotated[bool, typer.Option(
        "--fail-fast", help="Stop at the first module that fails (default: report it and go on).")] = False,
    timeout: Annotated[Optional[float], typer.Option(
        "--timeout", callback=_positive, help="Seconds per module (with --jobs or --scheduler).")] = None,
    scheduler: Annotated[Optional[str], typer.Option(
        "--scheduler", help="Run the modules on a Dask cluster (tcp://HOST:8786); needs --dump-dir.")] = None,
) -> None:
    """Load modules, run a pass pipeline, and emit a stage (hlo-opt / mlir-opt).

    Any --xla_NAME=VALUE DebugOptions flag applies to the XLA compile, with
    XLA_FLAGS and --debug-options-file below it in precedence. A repeated
    command is answered from the stage cache, before jaxlib is loaded.
    """
    try:
        from . import cache

        cache_key = None if no_cache else cache.opt_key(
            {k: v for k, v in locals().items() if k not in ("ctx", "no_cache", "cache")}, list(ctx.args))
        hit = cache.lookup(cache_key) if cache_key else None
        if hit is not None:
            cache.replay(hit)
            return
        _load_plugins(load_pass_plugin)
        # Unknown options (--xla_* flags) can land among the positional inputs.
        extra = list(ctx.args) + [i for i in inputs or [] if i.startswith("-") and i != "-"]
        inputs = [i for i in inputs or [] if not i.startswith("-") or i == "-"]
        target = _resolve_target(platform, gpu_spec, extra, debug_options_file,
                                 autotune_results, needs_spec=not (list_stages or list_passes))
        if list_stages:
            _print_stages(target.platform)
            return
        if list_passes:
            _print_passes()
            if target.platform is not None:
                _print_xla_passes(target, inputs, input_format, args)
            return
        with cache.recording(cache_key):
            _run_opt(target=target, **{k: v for k, v in locals().items()
                                        if k not in ("ctx", "target", "extra")})
    except DriverError as e:
        _fail(e)


@dataclass
class _Target:
    platform: str | None
    specs: list[Any]                   # GpuSpec per requested spec (cuda), else []
    xla_flags: tuple[tuple[str, Any], ...]
    note: str = ""                     # said once the command is past validation (print_note)

    def print_note(self) -> None:
        """A note comes after every usage check, never right before an error line."""
        if self.note:
            sys.stderr.write(self.note + "\n")
            sys.stderr.flush()
            self.note = ""

    def stage_options(self, **kw: Any) -> list[tuple[str | None, stage_registry.StageOptions]]:
        """(spec name or None, options) for each compile target."""
        if self.platform == "cuda":
            return [(s.name, stage_registry.StageOptions(platform="cuda", gpu_spec=s,
                                                         xla_flags=self.xla_flags, **kw))
                    for s in self.specs]
        return [(None, stage_registry.StageOptions(platform=self.platform, xla_flags=self.xla_flags, **kw))]


def _resolve_target(platform: str | None, gpu_spec: str | None, extra: list[str],
                    debug_options_file: str | None, autotune_results: str | None,
                    needs_spec: bool) -> _Target:
    from . import xla_flags
    from .errors import FlagError, did_you_mean

    cli_flags, rest = xla_flags.parse_flag_args(extra, separate_values=False)
    for word in rest:
        if word.startswith("-"):
            known = [o for p in opt_command_params() for o in p]
            raise DriverError(f"no such option: {word.split('=')[0]}",
                              hint=did_you_mean(word.split("=")[0], known))
        raise DriverError(f"unexpected argument '{word}'")
    # hlo-opt's spelling of the GPU target is a flag, but it is ours to handle.
    config_file = cli_flags.pop("xla_gpu_target_config_filename", None)
    if config_file is not None:
        if gpu_spec is not None:
            raise DriverError("give --gpu-spec or --xla_gpu_target_config_filename, not both")
        gpu_spec = str(config_file)
        platform = platform or "cuda"
    if autotune_results is not None:
        cli_flags["xla_gpu_load_autotune_results_from"] = autotune_results
    file_flags = xla_flags.from_file_checked(debug_options_file) if debug_options_file else {}
    # XLA_FLAGS may be set for other tools: it matters only when XLA compiles.
    env_flags = xla_flags.from_environment() if platform is not None else {}
    flags = xla_flags.merge(file_flags, env_flags, cli_flags)
    if flags:
        xla_flags.check_names(flags, xla_flags.known_names())
    path = flags.get("xla_gpu_load_autotune_results_from")
    if path is not None and not Path(str(path)).is_file():
        raise FlagError("no such autotune results file", file=str(path))
    if platform is not None:
        platform = platform.lower()
        if platform not in stage_registry.PLATFORMS:
            raise DriverError(f"unknown platform '{platform}'",
                              hint="one of " + ", ".join(stage_registry.PLATFORMS))
    elif gpu_spec is not None:
        raise DriverError("--gpu-spec needs --platform cuda")
    elif flags:
        raise DriverError("XLA flags need --platform cpu|cuda")
    specs: list[Any] = []
    note = ""
    if platform == "cuda" and needs_spec:
        from . import gpu_specs

        if gpu_spec is None:
            spec = gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC)
            note = f"note: no --gpu-spec given: compiling for {spec.name} ({spec.gpu}, {spec.sm})"
            specs = [spec]
        else:
            specs = [gpu_specs.resolve_spec(s.strip()) for s in gpu_spec.split(",") if s.strip()]
        # Fields filled in or left out of a spec: said with the other notes, after validation.
        note = "\n".join([*([note] if note else []), *(n for s in specs for n in s.notes)])
    elif platform == "cpu" and gpu_spec is not None:
        raise DriverError("--gpu-spec is for --platform cuda")
    if platform == "cpu" and "xla_gpu_load_autotune_results_from" in flags:
        raise DriverError("autotune results are for --platform cuda")
    return _Target(platform, specs, tuple(sorted(flags.items())), note)


def opt_command_params() -> list[list[str]]:
    cmd = typer.main.get_command(app)
    sub = cmd.commands["opt"]  # type: ignore[attr-defined]
    return [list(p.opts) + list(p.secondary_opts) for p in sub.params]


def _run_opt(inputs: list[str] | None, pipeline_spec: str | None, passes: str | None,
             pipeline_file: str | None, print_pipeline: bool, stage: str, output: str | None,
             dump_dir: str | None, input_format: str | None, split_input_file: bool,
             args: str | None, print_ir_after_all: bool, print_ir_after_change: bool,
             print_ir_before: list[str] | None, print_ir_after: list[str] | None,
             print_ir_after_failure: bool, print_ir_module_scope: bool, ir_dump_dir: str | None,
             timing: bool, verify_each: bool, reproducer_dir: str | None,
             target_version: str | None, debug_info: bool, target: _Target,
             xla_passes: str | None, after_pass: str | None, jobs: int = 0, fail_fast: bool = False,
             timeout: float | None = None, scheduler: str | None = None,
             load_pass_plugin: list[str] | None = None, **_: Any) -> None:
    from . import batch, outputs, pipeline

    root = pipeline.resolve(pipeline_spec, passes=passes, pipeline_file=pipeline_file)
    pipeline.check_print_ir_passes(print_ir_before or (), root, "--print-ir-before")
    pipeline.check_print_ir_passes(print_ir_after or (), root, "--print-ir-after")
    if reproducer_dir is not None:
        pipeline.check_reproducer_dir(reproducer_dir)
    if print_pipeline:
        text = root.render() if root is not None else "builtin.module()"
        if not inputs:
            outputs.write_stdout(text)
            return
        sys.stderr.write(text + "\n")
    if not inputs:
        raise DriverError("no input modules given", hint="mlirhlo opt --help")

    targets = target.stage_options(target_version=target_version, debug_info=debug_info)
    if (xla_passes or after_pass) and target.platform is None:
        raise DriverError("--xla-passes and --after-pass need --platform cpu|cuda")
    stage_names = ["hlo"] if (xla_passes or after_pass) else _stage_list(stage, target.platform, dump_dir)
    if output and dump_dir:
        raise DriverError("give either -o or --dump-dir, not both")
    if output and len(targets) > 1:
        raise DriverError("several GPU specs need --dump-dir, not -o")
    if output:
        outputs.check_output_path(output)  # before the work, not after it
    if jobs < 0:
        raise DriverError("--jobs must be >= 0")
    if scheduler is not None and not dump_dir:
        raise DriverError("--scheduler needs --dump-dir", hint="the cluster's results are written as files")
    tasks = batch.tasks_for(inputs, split_input_file=split_input_file)
    if output and (len(tasks) > 1 or len(stage_names) > 1):
        if len(stage_names) > 1:
            raise DriverError("several stages need --dump-dir, not -o")
        if any(stage_registry.get(s, target.platform).binary for s in stage_names):
            raise DriverError("several modules in a binary stage need --dump-dir, not -o")
    if not (output or dump_dir) and len(tasks) * len(stage_names) * len(targets) > 1 and \
            any(stage_registry.get(s, target.platform).binary for s in stage_names):
        raise DriverError("several modules in a binary stage need --dump-dir or -o")
    target.print_note()
    inst = pipeline.Instrumentation(
        print_ir_after_all=print_ir_after_all, print_ir_after_change=print_ir_after_change,
        print_ir_before=tuple(print_ir_before or ()), print_ir_after=tuple(print_ir_after or ()),
        print_ir_after_failure=print_ir_after_failure, print_ir_module_scope=print_ir_module_scope,
        timing=timing, verify_each=verify_each)
    job = batch.OptJob(
        root=root, stage_names=tuple(stage_names), targets=tuple(targets), platform=target.platform,
        instrumentation=inst, dump_dir=dump_dir, ir_dump_dir=ir_dump_dir, timing=timing,
        several=len(tasks) > 1, reproducer_dir=reproducer_dir, xla_passes=xla_passes,
        after_pass=after_pass, input_format=input_format, split_input_file=split_input_file,
        arg_specs=args, plugins=tuple(load_pass_plugin or ()))
    # Each module's outputs are written as it finishes; a failing one is a row (exit 1),
    # unless it is the only module or --fail-fast stops at it.
    writer = batch.Writer(output)
    try:
        rows = batch.run_batch(job, tasks, jobs=jobs, timeout=timeout, fail_fast=fail_fast,
                               scheduler=scheduler, on_result=writer)
    except batch.BatchStopped as stopped:
        sys.stderr.write(stopped.result.error_text)
        sys.stderr.flush()
        raise typer.Exit(stopped.result.exit_code) from None
    writer.finish()
    if any(not r.ok for r in rows):
        sys.stderr.write(batch.summary(rows))
        sys.stderr.flush()
        raise typer.Exit(EXIT_FAILURE)


def _stage_list(stage: str, platform: str | None, dump_dir: str | None) -> list[str]:
    if stage == "all":
        if not dump_dir:
            raise StageError("--stage all needs --dump-dir")
        return [s.name for s in stage_registry.all_for(platform)]
    names = [s.strip() for s in stage.split(",") if s.strip()]
    for name in names:
        stage_registry.get(name, platform)  # validate before any work
    return names


def _print_xla_passes(target: _Target, inputs: list[str] | None, input_format: str | None,
                      args: str | None) -> None:
    from dataclasses import replace

    from . import inputs as loader
    from . import xla_backend

    if inputs:
        modules = loader.load_inputs(inputs, input_format=input_format, arg_specs=args)
    else:
        modules = [loader.LoadedModule("reference", "<built-in>", "hlo",
                                       xla_backend.reference_module())]
    if target.platform == "cuda" and not target.specs:
        from . import gpu_specs

        target.specs = [gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC)]
    _, options = target.stage_options()[0]
    grouped: dict[str, list[str]] = {}
    for loaded in modules:
        art = xla_backend.compile_module(
            stage_registry.module_for_xla(loaded.module, loaded.source, loaded.line_offset),
            loaded.name,
            replace(options, xla_flags=options.xla_flags + (("xla_dump_hlo_pass_re", ".*"),)),
            keep_going=True)
        for pipe, names in xla_backend.passes_by_pipeline(art).items():
            have = grouped.setdefault(pipe, [])
            have.extend(n for n in names if n not in have)
    source = "the given modules" if inputs else "a reference module"
    typer.echo(f"\n# XLA HLO passes seen in the {target.platform} pipeline for {source}, by pipeline")
    for pipe, names in grouped.items():
        typer.echo(f"{pipe}:")
        for n in names:
            typer.echo(f"  {n}")


def _print_stages(platform: str | None) -> None:
    rows = [(s.name, s.ext, s.level, s.description) for s in stage_registry.available(platform)]
    width = max(len(r[0]) for r in rows)
    ext_width = max(len(r[1]) for r in rows) + 1
    for name, ext, level, description in rows:
        typer.echo(f"{name:<{width}}  {'.' + ext:<{ext_width}}  {level:<4}  {description}")


def _print_passes() -> None:
    from . import passes, pipeline

    catalog = passes.all_passes()
    width = max(len(n) for n in catalog)
    native = [p for p in catalog.values() if p.origin != "python"]
    written = [p for p in catalog.values() if p.origin == "python"]
    typer.echo(f"# {len(native)} passes accepted by the installed jaxlib (name, anchor, description)")
    for info in sorted(native, key=lambda p: p.name):
        typer.echo(f"{info.name:<{width}}  {info.anchor:<15} {info.description}".rstrip())
    typer.echo(f"\n# {len(written)} passes written in Python (built in, plugins, entry points)")
    for info in sorted(written, key=lambda p: p.name):
        typer.echo(f"{info.name:<{width}}  {info.anchor:<15} {info.description}".rstrip())
    typer.echo("\n# named pipelines (--pipeline @NAME)")
    for named in pipeline.named_pipelines():
        typer.echo(f"@{named.name:<{width - 1}}  {named.summary}")
        typer.echo(f"{'':<{width}}  {named.spec}")


# ------------------------------------------------------------------- passes

def _load_plugins(files: list[str] | None) -> None:
    from . import python_passes

    python_passes.unload_plugins()  # only this command's plugins (the CLI may run in-process)
    for f in files or []:
        python_passes.load_plugin(f)


@app.command("passes")
def passes_command(
    load_pass_plugin: Annotated[Optional[list[str]], typer.Option(
        "--load-pass-plugin", help="A .py file registering Python passes (repeatable).")] = None,
) -> None:
    """List every pass the installed jaxlib accepts, Python passes, and the named pipelines."""
    try:
        _load_plugins(load_pass_plugin)
        _print_passes()
    except DriverError as e:
        _fail(e)


# ------------------------------------------------------------------ convert

CONVERT_FORMATS = {
    # format -> (stage-like producer name, default extension)
    "hlo": "hlo-text", "hlo-proto": "hlo-proto", "hlo-pbtxt": "hlo-pbtxt",
    "stablehlo": "stablehlo", "bytecode": "bytecode", "vhlo": "vhlo", "mhlo": "mhlo",
}
_EXT_TO_FORMAT = {".hlo": "hlo", ".txt": "hlo", ".pb": "hlo-proto", ".pbtxt": "hlo-pbtxt",
                  ".mlir": "stablehlo", ".mlirbc": "bytecode", ".vhlo": "vhlo"}


@app.command()
def convert(
    input: Annotated[str, typer.Argument(help="The module to convert (any input format).")],
    output: Annotated[Optional[str], typer.Option("-o", "--output", "--o", help="Output file (default stdout).")] = None,
    to: Annotated[Optional[str], typer.Option(
        "--to", help="hlo, hlo-proto, hlo-pbtxt, stablehlo, bytecode, vhlo, mhlo "
                     "(default: from -o's extension).")] = None,
    emit_proto: Annotated[bool, typer.Option(
        "--emit-proto", help="As in hlo-opt: emit a binary HloModuleProto (same as --to hlo-proto).")] = False,
    input_format: Annotated[Optional[str], typer.Option("--input-format")] = None,
    args: Annotated[Optional[str], typer.Option("--args", help="Argument specs for a JAX function.")] = None,
    target_version: Annotated[Optional[str], typer.Option("--target-version")] = None,
) -> None:
    """Convert between HLO text/proto, StableHLO text/bytecode and VHLO artifacts."""
    try:
        from . import emit, outputs
        from .api import load
        from .errors import did_you_mean

        if emit_proto and to is not None and to != "hlo-proto":
            raise DriverError(f"--emit-proto means --to hlo-proto; it conflicts with --to {to}",
                              hint="give one of them")
        fmt = "hlo-proto" if emit_proto else to
        if fmt is None and output:
            fmt = _EXT_TO_FORMAT.get(Path(output).suffix)
        if fmt is None:
            raise DriverError("give --to FORMAT (or an -o file with a known extension)",
                              hint="formats: " + ", ".join(CONVERT_FORMATS))
        if fmt not in CONVERT_FORMATS:
            raise DriverError(f"unknown format '{fmt}'",
                              hint=did_you_mean(fmt, CONVERT_FORMATS) or ", ".join(CONVERT_FORMATS))
        if output:
            outputs.check_output_path(output)
        program = load(input, input_format=input_format, args=args)
        module = program.module
        # HLO to HLO stays in HLO: a trip through StableHLO would rename computations.
        proto = program.hlo_proto
        producers = {
            "hlo": lambda: emit.hlo_text_from_proto(proto) if proto else emit.hlo_text(module),
            "hlo-proto": lambda: proto if proto else emit.hlo_proto(module),
            "hlo-pbtxt": lambda: emit.hlo_pbtxt_from_proto(proto) if proto else emit.hlo_pbtxt(module),
            "stablehlo": lambda: emit.stablehlo_text(module),
            "bytecode": lambda: emit.bytecode(module),
            "vhlo": lambda: emit.vhlo_artifact(module, target_version=target_version),
            "mhlo": lambda: emit.mhlo_text(module),
        }
        try:
            data = producers[fmt]()
        except DriverError as e:
            if e.file is None and input != "-":
                e.file = input  # the conversion failed on this file: say so
            raise
        if output:
            outputs.write_atomic(output, data)
        else:
            outputs.write_stdout(data)
    except DriverError as e:
        _fail(e)


# ---------------------------------------------------------------------- run

def _non_negative(value: Optional[float]) -> Optional[float]:
    """Option callback: a finite number >= 0 (NaN would pass every comparison)."""
    import math

    if value is not None and not (math.isfinite(value) and value >= 0):
        raise typer.BadParameter(f"{value} is not a finite number >= 0")
    return value


def _positive(value: Optional[float]) -> Optional[float]:
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{value} is not a finite number > 0")
    return value


# Options that run and spmd-run share, spelled once.
SeedOption = Annotated[int, typer.Option("--seed", min=0, help="Seed of the random inputs.")]
LargeFloatRangeOption = Annotated[bool, typer.Option(
    "--large-float-range", "--use_large_float_range", help="Random floats in +-1e4 instead of +-1.")]
RtolOption = Annotated[Optional[float], typer.Option(
    "--rtol", "--rel_error_bound", callback=_non_negative, help="Relative tolerance (default per dtype).")]
AtolOption = Annotated[Optional[float], typer.Option(
    "--atol", "--abs_error_bound", callback=_non_negative, help="Absolute tolerance (default per dtype).")]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(
    ctx: typer.Context,
    inputs: InputsArg = None,
    platform: Annotated[str, typer.Option("--platform", help="cpu, or cuda (needs a GPU).")] = "cpu",
    reference: Annotated[str, typer.Option(
        "--reference", help="interpreter (StableHLO reference interpreter), cpu (XLA CPU) or none.")] = "interpreter",
    seed: SeedOption = 0,
    zeros: Annotated[bool, typer.Option("--zeros", help="All-zero inputs.")] = False,
    inputs_npz: Annotated[Optional[str], typer.Option(
        "--inputs", help=".npz with one array per parameter (by name, argN, arr_N or position).")] = None,
    large_float_range: LargeFloatRangeOption = False,
    rtol: RtolOption = None,
    atol: AtolOption = None,
    iterations: Annotated[int, typer.Option("--iterations", help="Run N times; report the median.")] = 1,
    print_literals: Annotated[bool, typer.Option("--print-literals", "--print_literals", help="Print inputs' and outputs' values.")] = False,
    save_outputs: Annotated[Optional[str], typer.Option("--save-outputs", help="Write outputs to this .npz.")] = None,
    fold_constants: Annotated[bool, typer.Option(
        "--fold-constants", help="Check files: keep their constant inputs (XLA folds the test).")] = False,
    bisect: Annotated[bool, typer.Option(
        "--bisect", help="On a mismatch, find the first op whose value diverges.")] = False,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Worker processes; each module is isolated (0: run in this process).")] = 1,
    timeout: Annotated[Optional[float], typer.Option(
        "--timeout", callback=_positive, help="Seconds per module (with --jobs or --scheduler).")] = None,
    scheduler: Annotated[Optional[str], typer.Option(
        "--scheduler", help="Run the modules on a Dask cluster (tcp://HOST:8786) instead of local workers.")] = None,
    json_report: Annotated[Optional[str], typer.Option("--json", help="Write the report rows as JSON.")] = None,
    input_format: Annotated[Optional[str], typer.Option("--input-format")] = None,
    split_input_file: Annotated[bool, typer.Option("--split-input-file")] = False,
    args: Annotated[Optional[str], typer.Option("--args", help="Argument specs for a JAX function.")] = None,
) -> None:
    """Compile with XLA, execute, and compare against a reference (run_hlo_module).

    Exit code 0 when every module matches, 1 when some mismatch or fail, 2 for
    bad usage or input. XLA dump directories contribute their
    *before_optimizations* modules.
    """
    try:
        from . import run as runner
        from . import xla_flags

        extra = list(ctx.args) + [i for i in inputs or [] if i.startswith("-") and i != "-"]
        inputs = [i for i in inputs or [] if not i.startswith("-") or i == "-"]
        cli_flags, rest = xla_flags.parse_flag_args(extra, separate_values=False)
        if rest:
            raise DriverError(f"no such option: {rest[0].split('=')[0]}")
        flags = xla_flags.merge({}, xla_flags.from_environment(), cli_flags)
        if flags:
            xla_flags.check_names(flags, xla_flags.known_names())
        if not inputs:
            raise DriverError("no input modules given", hint="mlirhlo run --help")
        platform = platform.lower()
        if platform not in stage_registry.PLATFORMS:
            raise DriverError(f"unknown platform '{platform}'", hint="cpu or cuda")
        if reference not in runner.REFERENCES:
            from .errors import did_you_mean

            raise DriverError(f"unknown reference '{reference}'",
                              hint=did_you_mean(reference, runner.REFERENCES) or ", ".join(runner.REFERENCES))
        if zeros and inputs_npz:
            raise DriverError("give --zeros or --inputs, not both")
        if iterations < 1 or jobs < 0:
            raise DriverError("--iterations must be >= 1 and --jobs >= 0")
        from . import outputs as _outputs

        for path in (json_report, save_outputs):
            if path:
                _outputs.check_output_path(path)
        tasks = _run_tasks(inputs, input_format, split_input_file, args)
        if inputs_npz and len(tasks) > 1:
            raise DriverError("--inputs is for one module")
        if platform == "cuda":
            from . import _jaxlib

            _jaxlib.cuda_devices()  # no GPU: a clear error now, not one per module
        options = runner.RunOptions(
            platform=platform, reference=reference, seed=seed, zeros=zeros, inputs_npz=inputs_npz,
            large_float_range=large_float_range, rtol=rtol, atol=atol, iterations=iterations,
            fold_constants=fold_constants, bisect=bisect,
            keep_outputs=bool(print_literals or save_outputs), xla_flags=tuple(sorted(flags.items())))
        reports = _execute_tasks(tasks, options, jobs, timeout, scheduler)
        if len(reports) == 1 and reports[0].status == "invalid":
            sys.stderr.write(f"error: {reports[0].message}\n")  # bad input: one line, as everywhere
            raise typer.Exit(EXIT_USAGE)
        _print_run_reports(reports, options, print_literals,
                           extra_flags=extra + (["--split-input-file"] if split_input_file else []))
        if save_outputs:
            _save_outputs(save_outputs, reports)
        if json_report:
            import json

            from . import outputs

            outputs.write_atomic(json_report, json.dumps([r.row() for r in reports], indent=2) + "\n")
        if any(r.status == "invalid" for r in reports):
            raise typer.Exit(EXIT_USAGE)
        if not all(r.passed for r in reports):
            raise typer.Exit(EXIT_FAILURE)
    except DriverError as e:
        _fail(e)


from .run_report import execute_tasks as _execute_tasks  # noqa: E402  (library; xla_tools shares it)
from .run_report import print_run_reports as _print_run_reports  # noqa: E402
from .run_report import run_tasks as _run_tasks  # noqa: E402
from .run_report import save_outputs as _save_outputs  # noqa: E402


# ----------------------------------------------------------------- spmd-run

@app.command("spmd-run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def spmd_run(
    ctx: typer.Context,
    input: Annotated[str, typer.Argument(help="The module (any input format, or package.module:function).")],
    num_partitions: Annotated[int, typer.Option("--num-partitions", "--num_partitions", help="SPMD partitions.")] = 1,
    num_replicas: Annotated[int, typer.Option("--num-replicas", "--num_replicas", help="Replicas.")] = 1,
    partitioner: Annotated[Optional[str], typer.Option(
        "--partitioner", help="shardy or gspmd (default: the one the module's shardings are written for).")] = None,
    arg_sharding: Annotated[Optional[list[str]], typer.Option(
        "--arg-sharding", help="PARAM=SHARDING as HLO spells it, e.g. 0=devices=[4,1]<=[4] (repeatable); "
                               "parameters without one are replicated.")] = None,
    is_spmd_partitioned_module: Annotated[bool, typer.Option(
        "--is-spmd-partitioned-module", "--is_spmd_partitioned_module", help="The module is already partitioned (per-device shapes): "
                                             "XLA does not partition it again.")] = False,
    run_xla_backend_only: Annotated[bool, typer.Option(
        "--run-xla-backend-only", "--run_xla_backend_only", help="Only XLA's backend compiles (an after-optimizations module).")] = False,
    argument_mode: Annotated[Optional[str], typer.Option(
        "--argument-mode", help="random (one set per replica), shared-random, zeros, or device-id "
                                "(each device's part filled with its device id).")] = None,
    seed: SeedOption = 0,
    inputs_npz: Annotated[Optional[str], typer.Option(
        "--inputs", help=".npz with one global (unpartitioned) array per parameter.")] = None,
    large_float_range: LargeFloatRangeOption = False,
    rtol: RtolOption = None,
    atol: AtolOption = None,
    num_repeats: Annotated[int, typer.Option("--num-repeats", "--num_repeats", help="Run N times; print each time.")] = 1,
    reference: Annotated[str, typer.Option(
        "--reference", help="cpu (the unpartitioned module on one device) or none.")] = "cpu",
    reference_module: Annotated[Optional[str], typer.Option(
        "--reference-module", help="The unpartitioned computation to compare against "
                                   "(for an already partitioned module).")] = None,
    dump_output: Annotated[Optional[str], typer.Option(
        "--dump-output", help="Write the gathered outputs to this .npz (out0, out1, ...).")] = None,
    num_processes: Annotated[int, typer.Option(
        "--num-processes", help="Processes in a distributed run (with --process-id, --coordinator).")] = 1,
    process_id: Annotated[Optional[int], typer.Option(
        "--process-id", help="This process's number, 0 to N-1; process 0 hosts the coordinator.")] = None,
    coordinator: Annotated[Optional[str], typer.Option(
        "--coordinator", callback=_host_port, help="HOST:PORT of process 0's coordinator.")] = None,
    launch_local: Annotated[Optional[int], typer.Option(
        "--launch-local", help="Start N processes on 127.0.0.1 and run across them.")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", callback=_positive,
        help="Seconds a distributed run may take before every process stops.")] = 300.0,
    input_format: Annotated[Optional[str], typer.Option("--input-format")] = None,
    args: Annotated[Optional[str], typer.Option("--args", help="Argument specs for a JAX function.")] = None,
) -> None:
    """Run a module SPMD-partitioned on many devices, in one or several processes (multihost_hlo_runner).

    Outputs are gathered to full arrays and compared against the unpartitioned
    module on one device. On CPU the driver creates the devices itself. Exit
    code 0 when the outputs match, 1 on a mismatch or a failed run, 2 for bad
    usage or input. Any --xla_NAME=VALUE flag applies to the compile.
    """
    from . import spmd

    try:
        options = _spmd_options(ctx, locals())
        if dump_output:
            from . import outputs

            outputs.check_output_path(dump_output)
        procs = launch_local or num_processes
        spmd.check_devices_per_process(options, procs)
        if launch_local is not None:
            if launch_local < 2:
                raise DriverError("--launch-local needs at least 2 processes")
            if num_processes != 1 or process_id is not None or coordinator is not None:
                raise DriverError("give --launch-local N, or --num-processes/--process-id/--coordinator, not both")
        elif num_processes > 1:
            if process_id is None or coordinator is None:
                raise DriverError("--num-processes needs --process-id and --coordinator HOST:PORT")
            if not 0 <= process_id < num_processes:
                raise DriverError(f"--process-id must be 0 to {num_processes - 1}")
        elif num_processes < 1:
            raise DriverError("--num-processes must be >= 1")
        elif process_id is not None or coordinator is not None:
            raise DriverError("--process-id and --coordinator need --num-processes > 1")
        if procs > 1 and options.num_devices % procs:
            raise DriverError(f"{options.num_devices} devices cannot be split evenly over {procs} processes")
        if timeout <= 0:
            raise DriverError("--timeout must be > 0")
        if procs == 1:
            _spmd_in_process(input, input_format, args, options, arg_sharding, dump_output)
            return
        # The module is checked here first: a bad input is one error, not one per process.
        _spmd_validate(input, input_format, args, options, arg_sharding)
        if launch_local is not None:
            address = f"127.0.0.1:{spmd.free_port()}"
            cfgs = spmd.worker_configs(input, input_format, args, options, num_processes=launch_local,
                                       process_ids=list(range(launch_local)), coordinator=address,
                                       timeout=timeout, dump_output=dump_output)
            sys.stderr.write(f"note: {launch_local} processes, coordinator {address}\n")

            def started(pid: int, os_pid: int) -> None:
                sys.stderr.write(f"note: process {pid} is pid {os_pid}\n")
                sys.stderr.flush()

            code = spmd.supervise(cfgs, prefixed=True, on_start=started)
        else:
            cfgs = spmd.worker_configs(input, input_format, args, options, num_processes=num_processes,
                                       process_ids=[process_id or 0], coordinator=coordinator or "",
                                       timeout=timeout, dump_output=dump_output)
            code = spmd.supervise(cfgs, prefixed=False)
        if code:
            raise typer.Exit(code)
    except DriverError as e:
        _spmd_fail(e)


def _host_port(value: Optional[str]) -> Optional[str]:
    """Option callback: HOST:PORT with a port a coordinator can listen on (1-65535)."""
    import re

    if value is None:
        return value
    m = re.match(r"^(\[[0-9a-fA-F:.]+\]|[^:\s\[\]]+):(\d{1,5})$", value)
    if not m:
        raise typer.BadParameter(f"'{value}' is not HOST:PORT, e.g. 10.0.0.1:1234")
    if not 1 <= int(m.group(2)) <= 65535:
        raise typer.BadParameter(f"port {int(m.group(2))} is not 1-65535")
    return value


def _spmd_options(ctx: typer.Context, params: dict[str, Any]) -> Any:
    """SpmdOptions from the command line; checks what needs no module (nor jax)."""
    from . import spmd, xla_flags

    flags, rest = xla_flags.parse_flag_args(list(ctx.args), separate_values=False)
    if rest:
        raise DriverError(f"no such option: {rest[0].split('=')[0]}" if rest[0].startswith("-")
                          else f"unexpected argument '{rest[0]}'", hint="spmd-run takes one module")
    flags = xla_flags.merge({}, xla_flags.from_environment(), flags)
    if flags:
        xla_flags.check_names(flags, xla_flags.known_names())
    mode = params["argument_mode"]
    if params["inputs_npz"] and mode is not None:
        raise DriverError("give --inputs or --argument-mode, not both")
    options = spmd.SpmdOptions(
        num_partitions=params["num_partitions"], num_replicas=params["num_replicas"],
        partitioner=params["partitioner"].lower() if params["partitioner"] else None,
        is_spmd_partitioned_module=params["is_spmd_partitioned_module"],
        run_xla_backend_only=params["run_xla_backend_only"], argument_mode=mode or "random",
        seed=params["seed"], inputs_npz=params["inputs_npz"], large_float_range=params["large_float_range"],
        rtol=params["rtol"], atol=params["atol"], num_repeats=params["num_repeats"],
        reference=params["reference"], reference_module=params["reference_module"],
        xla_flags=tuple(sorted(flags.items())))
    spmd.check_options(options)
    if params["arg_sharding"] and options.per_device_module:
        raise DriverError("--arg-sharding is for modules that XLA partitions, not already partitioned ones")
    if params["arg_sharding"] and options.num_partitions == 1:
        raise DriverError("--arg-sharding needs --num-partitions > 1")
    return options


def _spmd_with_shardings(options: Any, specs: list[str] | None) -> Any:
    from dataclasses import replace

    from . import spmd

    if not specs:
        return options
    return replace(options, arg_shardings=tuple(spmd.parse_arg_sharding(s) for s in specs))


def _spmd_load(input: str, input_format: str | None, args: str | None) -> Any:
    from . import inputs as loader

    paths = loader.expand_inputs([input])
    if len(paths) != 1:
        raise DriverError(f"spmd-run takes one module; {input} gives {len(paths)}")
    modules = loader.load(paths[0], input_format=input_format, arg_specs=args)
    if len(modules) != 1:
        raise DriverError("spmd-run takes one module", file=input)
    return modules[0]


def _spmd_validate(input: str, input_format: str | None, args: str | None, options: Any,
                   arg_sharding: list[str] | None) -> None:
    from . import spmd

    options = _spmd_with_shardings(options, arg_sharding)
    spmd.prepare(_spmd_load(input, input_format, args), options)


def _spmd_in_process(input: str, input_format: str | None, args: str | None, options: Any,
                     arg_sharding: list[str] | None, dump_output: str | None) -> None:
    from . import _jaxlib, outputs, spmd

    options = _spmd_with_shardings(options, arg_sharding)
    # Before anything starts jax: the host devices exist only if asked for first.
    _jaxlib.ensure_cpu_devices(options.num_devices)
    loaded = _spmd_load(input, input_format, args)
    report = spmd.run_in_process(loaded, options)
    typer.echo(spmd.format_report(report))
    if dump_output:
        outputs.write_atomic(dump_output, spmd.outputs_npz(report))
    if not report.report.passed:
        raise typer.Exit(EXIT_FAILURE)


def _spmd_fail(err: DriverError) -> None:
    """Like _fail; a run that fails at run time (not bad input) exits 1."""
    from . import _jaxlib

    sys.stderr.write(err.format() + "\n")
    sys.stderr.flush()
    runtime = (CompileError, PassFailure, _jaxlib.DistributedError, _jaxlib.ExecutionError)
    raise typer.Exit(EXIT_FAILURE if isinstance(err, runtime) else EXIT_USAGE)


# ---------------------------------------------------------------------- kernels

@app.command("kernels")
def kernels_command(
    inputs: Annotated[Optional[list[str]], typer.Argument(
        help="Files, globs or directories (an XLA dump directory: its modules).", show_default=False)] = None,
    gpu_spec: Annotated[Optional[str], typer.Option(
        "--gpu-spec", help="GPU specs side by side, a comma list (default: h100_sxm).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON instead of the table.")] = False,
    input_format: Annotated[Optional[str], typer.Option(
        "--input-format", help="Force: hlo, hlo-proto, hlo-pbtxt, mlir, bytecode, vhlo.")] = None,
) -> None:
    """Per CUDA kernel: registers, spills, shared memory, launch dims, occupancy; a column group per spec."""
    try:
        from . import kernels, outputs

        outputs.write_stdout(kernels.report(inputs or [], gpu_spec, input_format=input_format,
                                            as_json=json_out))
    except DriverError as e:
        _fail(e)


# ---------------------------------------------------------------------- ptx



@app.command()
def ptx(
    input: Annotated[str, typer.Argument(
        help="LLVM IR (.ll), e.g. from 'opt --stage llvm-before-optimizations'; - reads stdin.")],
    arch: Annotated[str, typer.Option("--arch", help="sm_XX[a] or X.Y[a], e.g. 9.0a or sm_80.")] = "sm_90a",
    opt_level: Annotated[int, typer.Option("-O", "--opt-level", help="LLVM optimization level 0-3.")] = 3,
    optimize: Annotated[bool, typer.Option(
        "--optimize/--no-optimize",
        help="Run LLVM's -O pipeline first (off for XLA's *.ir-with-opt.ll, already optimized).")] = True,
    output: Annotated[Optional[str], typer.Option("-o", "--output", "--o", help="Output file (default stdout).")] = None,
    print_after_all: Annotated[bool, typer.Option(
        "--print-after-all", help="Print the IR after each LLVM pass (stderr).")] = False,
    ir_dump_dir: Annotated[Optional[str], typer.Option(
        "--ir-dump-dir", help="Write the IR after each LLVM pass here, one file per pass.")] = None,
    libdevice: Annotated[Optional[str], typer.Option(
        "--libdevice", help="libdevice.10.bc for IR calling __nv_* (default: CUDA_HOME).")] = None,
    check_ptxas: Annotated[bool, typer.Option(
        "--ptxas/--no-ptxas", help="Assemble each PTX module with ptxas for --arch to check it.")] = True,
) -> None:
    """LLVM IR to PTX with LLVM's NVPTX backend (XLA's ptx-opt).

    Takes the LLVM IR XLA writes, including its newer float-constant syntax.
    Several modules joined by '; ----- NAME -----' lines (the 'llvm' stages'
    output) are compiled one by one in a helper process (an LLVM fatal error
    is reported, not fatal), and each PTX is assembled by ptxas for --arch.
    """
    import re

    try:
        from . import outputs
        from . import ptx as ptx_backend

        text = ptx_backend.read_llvm_ir(input)
        if output:
            outputs.check_output_path(output)
        parts = ptx_backend.split_llvm_modules(text)
        dumps: list[tuple[str, str]] = []
        want_dumps = print_after_all or ir_dump_dir is not None
        out = []
        compiled: list[tuple[str, str]] = []
        for name, offset, body in parts:
            try:
                # Line numbers stay the file's: pad with the lines before this module.
                code = ptx_backend.compile_to_ptx(
                    "\n" * offset + body, arch, opt_level, filename=input, optimize=optimize,
                    libdevice=libdevice, assemble=False,
                    print_after_all=(lambda p, ir, n=name: dumps.append((f"{n}:{p}" if n else p, ir)))
                    if want_dumps else None)
            except DriverError:
                raise
            compiled.append((name, code))
            out.append((f"// ----- {name} -----\n" if name else "") + code)
        if check_ptxas:  # all modules at once: ptxas runs side by side
            ptx_backend.check_all_with_ptxas(compiled, arch, input)
        if ir_dump_dir:
            for i, (pass_name, ir) in enumerate(dumps):
                safe = re.sub(r"[^\w.-]+", "_", pass_name)[:80]
                outputs.write_atomic(Path(ir_dump_dir) / f"{i:03d}-{safe}.ll", ir)
        elif print_after_all:
            for _, ir in dumps:
                sys.stderr.write(ir if ir.endswith("\n") else ir + "\n")
        result = "".join(out)
        if output:
            outputs.write_atomic(output, result)
        else:
            outputs.write_stdout(result)
    except DriverError as e:
        _fail(e)


# ----------------------------------------------------------- bench-pipeline

@app.command("bench-pipeline", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench_pipeline(
    ctx: typer.Context,
    input: Annotated[str, typer.Argument(help="The module to run the pipeline on.")],
    pipeline_spec: Annotated[Optional[str], typer.Option("--pipeline", help="Textual pipeline or @NAME.")] = None,
    passes: Annotated[Optional[str], typer.Option("--passes", help="hlo-opt style pass list.")] = None,
    compare: Annotated[Optional[str], typer.Option(
        "--compare", help="Another pipeline (spec, @NAME or pass list) run in turn with the first; prints the ratio.")] = None,
    repeats: Annotated[int, typer.Option("--repeats", help="Runs per pipeline (each on a fresh copy).")] = 10,
    platform: Annotated[Optional[str], typer.Option(
        "--platform", help="Instead: time XLA's HLO pipeline on cpu|cuda (from per-pass dump timestamps).")] = None,
    gpu_spec: Annotated[Optional[str], typer.Option("--gpu-spec")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
    load_pass_plugin: Annotated[Optional[list[str]], typer.Option("--load-pass-plugin")] = None,
    input_format: Annotated[Optional[str], typer.Option("--input-format")] = None,
    args: Annotated[Optional[str], typer.Option("--args")] = None,
) -> None:
    """Run a pipeline N times; per-pass median and spread, and the total (hlo-opt + time, done properly)."""
    try:
        import json

        from . import bench, pipeline
        from .api import load

        _load_plugins(load_pass_plugin)
        if repeats < 1:
            raise DriverError("--repeats must be >= 1")
        program = load(input, input_format=input_format, args=args)
        if platform is not None:
            target = _resolve_target(platform, gpu_spec, list(ctx.args), None, None, needs_spec=True)
            target.print_note()
            _, options = target.stage_options()[0]
            rows, compiles = bench.bench_xla_pipeline(program.module, program.name, options, repeats)
            if json_out:
                typer.echo(json.dumps({"platform": platform, "source": "per-pass dump file timestamps",
                                       "compile_ms": compiles, "passes": [
                                           {"pipeline": r.pipeline, "ending_with": r.ending_with,
                                            "times_ms": r.times_ms} for r in rows]}, indent=2))
                return
            import statistics

            typer.echo(f"# XLA {platform} HLO pipeline, {repeats} compiles; times between per-pass dumps "
                       "(XLA dumps after passes that change the module), from file timestamps")
            typer.echo(f"{'median ms':>10}  {'min':>8}  {'max':>8}  pipeline / ending with pass")
            for r in rows:
                typer.echo(f"{statistics.median(r.times_ms):>10.3f}  {min(r.times_ms):>8.3f}  "
                           f"{max(r.times_ms):>8.3f}  {r.pipeline} / {r.ending_with}")
            typer.echo(f"{statistics.median(compiles):>10.3f}  {min(compiles):>8.3f}  {max(compiles):>8.3f}  "
                       "whole compile")
            return
        if ctx.args:
            raise DriverError(f"no such option: {ctx.args[0]}")
        roots = [pipeline.resolve(pipeline_spec, passes=passes)]
        if roots[0] is None:
            raise DriverError("give --pipeline or --passes")
        if compare is not None:
            other = compare if compare.startswith(("@", "builtin.module(")) else None
            roots.append(pipeline.resolve(other) if other else pipeline.resolve(passes=compare))
        results = bench.bench_pipelines(program.module, roots, repeats)
        if json_out:
            payload: dict[str, Any] = {"module": program.name, "runs": [r.to_dict() for r in results]}
            if len(results) == 2:
                payload["ratio"] = results[1].median_total_ms / results[0].median_total_ms
            typer.echo(json.dumps(payload, indent=2))
            return
        for label, res in zip(("A", "B"), results):
            typer.echo(f"# {label}: {res.spec}  ({repeats} runs, fresh copy each)")
            typer.echo(f"{'median ms':>10}  {'min':>8}  {'max':>8}  pass")
            for p in res.passes:
                lo, hi = p.spread_ms
                typer.echo(f"{p.median_ms:>10.3f}  {lo:>8.3f}  {hi:>8.3f}  {'  ' * p.depth}{p.name}")
            typer.echo(f"{res.median_total_ms:>10.3f}  {min(res.totals_ms):>8.3f}  "
                       f"{max(res.totals_ms):>8.3f}  Total")
        if len(results) == 2:
            typer.echo(f"# B/A total (medians, runs interleaved A B A B): "
                       f"{results[1].median_total_ms / results[0].median_total_ms:.3f}x")
    except DriverError as e:
        _fail(e)


# -------------------------------------------------------------------- specs

specs_app = typer.Typer(help="GPU target specs for device-less CUDA compiles (gpu_specs/*.txtpb).",
                        no_args_is_help=True)
app.add_typer(specs_app, name="specs")


@specs_app.command("list")
def specs_list(
    json_out: Annotated[bool, typer.Option("--json", help="JSON rows instead of a table.")] = False,
) -> None:
    """List the shipped GPU specs: name, GPU, compute capability, SMs, memory, and
    whether the ptxas XLA will use (shown below the table) can target each."""
    try:
        from . import gpu_specs

        specs = gpu_specs.list_specs()
        ptxas, others, missing = _ptxas_in_use()
        if json_out:
            import json

            rows_json = []
            for s in specs:
                row = s.to_dict()
                row["ptxas"] = None if ptxas is None else {
                    "path": ptxas.path, "version": ptxas.version_str, "source": ptxas.source,
                    "can_target": ptxas.can_target(s.sm)}
                rows_json.append(row)
            typer.echo(json.dumps(rows_json, indent=2))
            return
        header = ("name", "gpu", "cc", "target", "SMs", "memory", "bandwidth", "ptxas")
        rows = [(s.name + (" (default)" if s.name == gpu_specs.DEFAULT_SPEC else ""), s.gpu,
                 s.compute_capability, s.sm, str(s.sm_count), f"{s.memory_bytes / 2**30:.0f} GiB",
                 f"{s.memory_bandwidth / 1e9:.0f} GB/s",
                 "ok" if ptxas is not None and ptxas.can_target(s.sm) else "no") for s in specs]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for r in [header, *rows]:
            typer.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if ptxas is None:
            typer.echo(f"ptxas: none usable: {missing}")
        else:
            typer.echo(f"ptxas: {ptxas.version_str} {ptxas.path} ({ptxas.source}; "
                       f"targets {ptxas.arch_range()})")
        for p in others:
            typer.echo(f"  not used: {p.version_str} {p.path} ({p.source}; targets {p.arch_range()})")
    except DriverError as e:
        _fail(e)


def _ptxas_in_use() -> tuple[Any, list[Any], str]:
    """(the ptxas XLA will run, the other ones found, why there is none)."""
    from . import cuda_tools, xla_flags

    try:  # the data dir a user set in XLA_FLAGS counts; a malformed XLA_FLAGS does not matter here
        user_dir = xla_flags.from_environment().get(cuda_tools.DATA_DIR_FLAG) or None
    except DriverError:
        user_dir = None
    try:
        ptxas = cuda_tools.ptxas(cuda_tools.cuda_data_dir(user_dir)[0])
    except DriverError as e:
        return None, cuda_tools.all_ptxas(), e.format().removeprefix("error: ")
    others = [p for p in cuda_tools.all_ptxas(user_dir) if p.path != ptxas.path
              and p.version != ptxas.version]
    return ptxas, others, ""


@specs_app.command("show")
def specs_show(name: Annotated[str, typer.Argument(help="A shipped spec name or a .txtpb path.")]) -> None:
    """Print a spec's summary and its textproto."""
    try:
        from . import gpu_specs

        spec = gpu_specs.resolve_spec(name)
        for note in spec.notes:
            sys.stderr.write(note + "\n")
        for key, value in spec.to_dict().items():
            typer.echo(f"# {key}: {value}")
        typer.echo(spec.text.rstrip("\n"))
    except DriverError as e:
        _fail(e)


@specs_app.command("check")
def specs_check(files: Annotated[list[str], typer.Argument(help="Spec files to validate (- reads stdin).")]) -> None:
    """Validate spec files before any compile; one error line per bad file."""
    from . import gpu_specs

    failed = False
    for path in files:
        try:
            spec = gpu_specs.check_spec(path)
            for note in spec.notes:
                sys.stderr.write(note + "\n")
            typer.echo(f"{path}: ok ({spec.gpu}, {spec.sm}, {spec.sm_count} SMs)")
        except DriverError as e:
            sys.stderr.write(e.format() + "\n")
            failed = True
    if failed:
        raise typer.Exit(EXIT_USAGE)


# -------------------------------------------------------------------- cache

cache_app = typer.Typer(help="The stage cache that answers repeated 'opt' commands.",
                        no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("info")
def cache_info() -> None:
    """Where the cache is, how many entries and bytes it holds, and its size cap."""
    from . import cache

    found = cache.info()
    typer.echo(f"directory  {found['directory']}")
    typer.echo(f"entries    {found['entries']}")
    typer.echo(f"size       {found['bytes']} bytes")
    typer.echo(f"max size   {found['max_bytes']} bytes (MLIRHLO_CACHE_MAX_BYTES; least recently used go first)")


@cache_app.command("clear")
def cache_clear() -> None:
    """Remove every cached entry."""
    from . import cache

    typer.echo(f"removed {cache.clear()} entries from {cache.cache_dir()}")


# ---------------------------------------------------------------------- main

# Commands that leave nothing running once their outputs are written: the console
# entry point ends them with os._exit, skipping interpreter teardown (~40 ms, more
# with jaxlib loaded). run/spmd-run/bench-pipeline keep a normal exit: worker pools
# and jax's distributed runtime clean up at exit.
_FAST_EXIT = frozenset({None, "opt", "convert", "passes", "ptx", "specs", "cache"})


def _invoked_command(argv: list[str]) -> str | None:
    """The sub-command argv names (the root takes only flags), or None (also for
    the root's own --help, which lists every command)."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word
    return None


def _app_for(name: str | None) -> typer.Typer:
    """The app as typer would build it, but with only the invoked sub-command in full.

    Typer evaluates the signature of every command it builds (string annotations,
    ~40% of `opt --help`); a command not invoked only needs its name and help
    line, for the root's listing and for "no such command" suggestions.
    """
    import copy

    def command_name(info: Any) -> str:
        return info.name or typer.main.get_command_name(info.callback.__name__)

    names = [command_name(c) for c in app.registered_commands] + [g.name for g in app.registered_groups]
    view = copy.copy(app)
    if name in names:
        view.registered_commands = [c for c in app.registered_commands if command_name(c) == name]
        view.registered_groups = [g for g in app.registered_groups if g.name == name]
        return view

    def listing_only(info: Any) -> Any:
        stub_info = copy.copy(info)
        stub_info.name = command_name(info)

        def stub() -> None:
            raise AssertionError("a listing-only command cannot run")

        stub.__doc__ = info.callback.__doc__
        stub_info.callback = stub
        return stub_info

    view.registered_commands = [listing_only(c) for c in app.registered_commands]
    view.registered_groups = [copy.copy(g) for g in app.registered_groups]
    for group in view.registered_groups:  # their sub-commands are not listed at the root
        group.typer_instance = copy.copy(group.typer_instance)
        group.typer_instance.registered_commands = [
            listing_only(c) for c in group.typer_instance.registered_commands]
    return view


def main(argv: list[str] | None = None) -> None:
    """Entry point: usage errors become one ``error:`` line and exit 2.

    Called without ``argv`` (the console script) it is the whole process: after
    the outputs are flushed it leaves with os._exit for the commands in
    _FAST_EXIT. With ``argv`` (tests, embedding) it raises SystemExit as usual.
    """
    if argv is not None:
        _main(argv)
        return
    import gc

    argv = sys.argv[1:]
    command = _invoked_command(argv)
    if command not in _FAST_EXIT:
        _main(argv)
        return
    # A short-lived process: what is imported stays for its whole life, so the
    # collector need not walk it again (gc.freeze), and jaxlib's import would
    # otherwise trigger full collections over a growing heap.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    code: Any = 0
    try:
        _main(argv)
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        code = 130
    except BaseException:
        import traceback

        traceback.print_exc()
        code = EXIT_FAILURE
    if not isinstance(code, int):
        if code is not None:
            sys.stderr.write(f"{code}\n")
        code = 0 if code is None else EXIT_FAILURE
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # a reader that went away (| head) is not a failure of ours
        pass
    except OSError:
        code = code or EXIT_FAILURE
    import atexit
    import os

    # Exit handlers still run (the isolate helper is waited for, nothing is left
    # behind); only the interpreter's teardown of every object is skipped.
    atexit._run_exitfuncs()
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(code)


def _main(argv: list[str]) -> None:
    try:
        result = _app_for(_invoked_command(argv))(args=argv, standalone_mode=False)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        sys.exit(130)
    except Exception as e:
        # typer vendors click privately; its usage errors are recognised by shape.
        if type(e).__name__ == "NoArgsIsHelpError":
            typer.echo(e.ctx.get_help())  # type: ignore[attr-defined]
            sys.exit(EXIT_USAGE)
        if hasattr(e, "format_message") and getattr(e, "exit_code", None) == EXIT_USAGE:
            ctx = getattr(e, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            sys.stderr.write(f"error: {e.format_message()}{hint}\n")
            sys.exit(EXIT_USAGE)
        raise
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
