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


def _fail(err: DriverError) -> None:
    lines = [err.format()]
    if isinstance(err, PassFailure):
        if err.diagnostics:
            lines.append(err.diagnostics)
        if err.reproducer:
            lines.append(f"note: reproducer written to {err.reproducer}")
            from .pipeline import reproducer_command

            lines.append(f"note: reproduce with: {reproducer_command(err.reproducer)}")
    sys.stderr.write("\n".join(lines) + "\n")
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
    output: Annotated[Optional[str], typer.Option("-o", "--output", help="Output file (default stdout).")] = None,
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
) -> None:
    """Load modules, run a pass pipeline, and emit a stage (hlo-opt / mlir-opt).

    Any --xla_NAME=VALUE DebugOptions flag applies to the XLA compile, with
    XLA_FLAGS and --debug-options-file below it in precedence.
    """
    try:
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
        _run_opt(target=target, **{k: v for k, v in locals().items()
                                    if k not in ("ctx", "target", "extra", "load_pass_plugin")})
    except DriverError as e:
        _fail(e)


@dataclass
class _Target:
    platform: str | None
    specs: list[Any]                   # GpuSpec per requested spec (cuda), else []
    xla_flags: tuple[tuple[str, Any], ...]

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
    file_flags = xla_flags.from_file(debug_options_file) if debug_options_file else {}
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
    if platform == "cuda" and needs_spec:
        from . import gpu_specs

        if gpu_spec is None:
            spec = gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC)
            sys.stderr.write(f"note: no --gpu-spec given: compiling for {spec.name} "
                             f"({spec.gpu}, {spec.sm})\n")
            specs = [spec]
        else:
            specs = [gpu_specs.resolve_spec(s.strip()) for s in gpu_spec.split(",") if s.strip()]
    elif platform == "cpu" and gpu_spec is not None:
        raise DriverError("--gpu-spec is for --platform cuda")
    if platform == "cpu" and "xla_gpu_load_autotune_results_from" in flags:
        raise DriverError("autotune results are for --platform cuda")
    return _Target(platform, specs, tuple(sorted(flags.items())))


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
             xla_passes: str | None, after_pass: str | None, **_: Any) -> None:
    from . import inputs as loader
    from . import outputs, pipeline

    root = pipeline.resolve(pipeline_spec, passes=passes, pipeline_file=pipeline_file)
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
    modules = loader.load_inputs(inputs, input_format=input_format,
                                 split_input_file=split_input_file, arg_specs=args)
    if output and (len(modules) > 1 or len(stage_names) > 1):
        if len(stage_names) > 1:
            raise DriverError("several stages need --dump-dir, not -o")
        if any(stage_registry.get(s, target.platform).binary for s in stage_names):
            raise DriverError("several modules in a binary stage need --dump-dir, not -o")
    inst = pipeline.Instrumentation(
        print_ir_after_all=print_ir_after_all, print_ir_after_change=print_ir_after_change,
        print_ir_before=tuple(print_ir_before or ()), print_ir_after=tuple(print_ir_after or ()),
        print_ir_after_failure=print_ir_after_failure, print_ir_module_scope=print_ir_module_scope,
        timing=timing, verify_each=verify_each)

    results: list[tuple[str, str, str | bytes]] = []  # (file stem, stage, data)
    for loaded in modules:
        if root is not None:
            try:
                run = pipeline.run(loaded.module, root, instrumentation=inst, module_name=loaded.name,
                                   reproducer_dir=reproducer_dir, source_for_reproducer=loaded.source)
            except PassFailure as failure:
                _emit_run_output(getattr(failure, "run", None), loaded.name, ir_dump_dir, timing,
                                 len(modules) > 1)
                raise
            _emit_run_output(run, loaded.name, ir_dump_dir, timing, len(modules) > 1)
        for spec_name, options in targets:
            stem = f"{loaded.name}.{spec_name}" if spec_name and len(targets) > 1 else loaded.name
            if xla_passes or after_pass:
                results.append((stem, "hlo", _xla_pass_hlo(loaded, options, xla_passes, after_pass)))
                continue
            request = stage_registry.StageRequest(loaded.module, loaded.name, options)
            for name in stage_names:
                results.append((stem, name, request.produce(name)))

    # Everything is computed before anything is written: no partial output.
    if dump_dir:
        for module_name, name, data in results:
            filename = stage_registry.get(name, target.platform).filename(module_name)
            outputs.write_atomic(Path(dump_dir) / filename, data)
        return
    if output:
        if len(results) == 1:
            outputs.write_atomic(output, results[0][2])
        else:
            outputs.write_atomic(output, "// -----\n".join(_as_text(d) for _, _, d in results))
        return
    if len(results) == 1:
        outputs.write_stdout(results[0][2])
    else:
        if any(isinstance(d, bytes) for _, _, d in results):
            raise DriverError("several modules in a binary stage need --dump-dir or -o")
        outputs.write_stdout("// -----\n".join(_as_text(d) for _, _, d in results))


def _as_text(data: str | bytes) -> str:
    text = data if isinstance(data, str) else data.decode()
    return text if text.endswith("\n") else text + "\n"


def _stage_list(stage: str, platform: str | None, dump_dir: str | None) -> list[str]:
    if stage == "all":
        if not dump_dir:
            raise StageError("--stage all needs --dump-dir")
        return [s.name for s in stage_registry.all_for(platform)]
    names = [s.strip() for s in stage.split(",") if s.strip()]
    for name in names:
        stage_registry.get(name, platform)  # validate before any work
    return names


def _emit_run_output(run: Any, module_name: str, ir_dump_dir: str | None, timing: bool,
                     several: bool) -> None:
    if run is None:
        return
    from . import outputs, pipeline

    if run.other_output.strip():
        sys.stderr.write(run.other_output)
    if ir_dump_dir:
        for i, dump in enumerate(run.dumps):
            name = f"{i:03d}-{dump.when}-{dump.pass_name or dump.pass_class}.mlir"
            outputs.write_atomic(Path(ir_dump_dir) / module_name / name,
                                 dump.header() + "\n" + dump.text)
    else:
        for dump in run.dumps:
            sys.stderr.write(dump.header() + "\n" + dump.text + "\n")
    if timing:
        title = f"// timing: {module_name}\n" if several else ""
        sys.stderr.write(title + pipeline.format_timing(run))
    sys.stderr.flush()


def _xla_pass_hlo(loaded: Any, options: stage_registry.StageOptions, xla_passes: str | None,
                  after_pass: str | None) -> str:
    from dataclasses import replace

    from . import xla_backend

    dump_all = (("xla_dump_hlo_pass_re", ".*"),)
    if after_pass:
        art = xla_backend.compile_module(loaded.module, loaded.name,
                                         replace(options, xla_flags=options.xla_flags + dump_all))
        return xla_backend.hlo_after_pass(art, after_pass)
    enabled = [p.strip() for p in (xla_passes or "").split(",") if p.strip()]
    # A nested pass runs only if its enclosing pipelines are enabled too: learn
    # the pipelines from a normal compile, then enable them all.
    full = xla_backend.compile_module(loaded.module, loaded.name,
                                      replace(options, xla_flags=options.xla_flags + dump_all))
    known = xla_backend.passes_by_pipeline(full)
    all_passes = {p for names in known.values() for p in names}
    for p in enabled:
        if p not in all_passes:
            from .errors import did_you_mean

            raise DriverError(f"XLA pass '{p}' is not in the {options.platform} pipeline for this module",
                              hint=did_you_mean(p, all_passes) or "see --list-passes --platform")
    only = ",".join(enabled + sorted(known))
    art = xla_backend.compile_module(
        loaded.module, loaded.name,
        replace(options, xla_flags=options.xla_flags + dump_all + (("xla_enable_hlo_passes_only", only),)),
        keep_going=True)
    return xla_backend.hlo_after_only(art, enabled)


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
            loaded.module, loaded.name,
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
    output: Annotated[Optional[str], typer.Option("-o", "--output", help="Output file (default stdout).")] = None,
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

        fmt = "hlo-proto" if emit_proto else to
        if fmt is None and output:
            fmt = _EXT_TO_FORMAT.get(Path(output).suffix)
        if fmt is None:
            raise DriverError("give --to FORMAT (or an -o file with a known extension)",
                              hint="formats: " + ", ".join(CONVERT_FORMATS))
        if fmt not in CONVERT_FORMATS:
            raise DriverError(f"unknown format '{fmt}'",
                              hint=did_you_mean(fmt, CONVERT_FORMATS) or ", ".join(CONVERT_FORMATS))
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
        data = producers[fmt]()
        if output:
            outputs.write_atomic(output, data)
        else:
            outputs.write_stdout(data)
    except DriverError as e:
        _fail(e)


# ---------------------------------------------------------------------- run

# Options that run and spmd-run share, spelled once.
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the random inputs.")]
LargeFloatRangeOption = Annotated[bool, typer.Option(
    "--large-float-range", help="Random floats in +-1e4 instead of +-1.")]
RtolOption = Annotated[Optional[float], typer.Option("--rtol", help="Relative tolerance (default per dtype).")]
AtolOption = Annotated[Optional[float], typer.Option("--atol", help="Absolute tolerance (default per dtype).")]


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
    print_literals: Annotated[bool, typer.Option("--print-literals", help="Print inputs' and outputs' values.")] = False,
    save_outputs: Annotated[Optional[str], typer.Option("--save-outputs", help="Write outputs to this .npz.")] = None,
    fold_constants: Annotated[bool, typer.Option(
        "--fold-constants", help="Check files: keep their constant inputs (XLA folds the test).")] = False,
    bisect: Annotated[bool, typer.Option(
        "--bisect", help="On a mismatch, find the first op whose value diverges.")] = False,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Worker processes; each module is isolated (0: run in this process).")] = 1,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Seconds per module (with --jobs).")] = None,
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
        reports = _execute_tasks(tasks, options, jobs, timeout)
        if len(reports) == 1 and reports[0].status == "invalid":
            sys.stderr.write(f"error: {reports[0].message}\n")  # bad input: one line, as everywhere
            raise typer.Exit(EXIT_USAGE)
        _print_run_reports(reports, options, print_literals, extra_flags=extra)
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


def _run_tasks(specs: list[str], input_format: str | None, split: bool, args: str | None) -> list[Any]:
    from . import inputs as loader
    from .run_pool import Task

    tasks = []
    for path in loader.expand_inputs(specs):
        stem = loader.module_stem(path) if not loader.looks_like_jax_entry(path) else path.split(":")[-1]
        chunks = 1
        if split and Path(path).is_file():
            chunks = max(1, len(loader.split_chunks(Path(path).read_text(errors="replace"))))
        for i in range(chunks):
            tasks.append(Task(len(tasks), path, f"{stem}.{i}" if chunks > 1 else stem, input_format, split,
                              i, args))
    return tasks


def _execute_tasks(tasks: list[Any], options: Any, jobs: int, timeout: float | None) -> list[Any]:
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

        if jobs == 0:
            reports = []
            for t in tasks:
                reports.append(run_task(t, options))
                done(reports[-1])
            return reports
        return run_in_workers(tasks, options, jobs=jobs, timeout=timeout, on_done=done)
    finally:
        if progress is not None:
            progress.stop()


def _reproducer(report: Any, options: Any, extra_flags: list[str]) -> str:
    import shlex

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
    if options.fold_constants:
        parts.append("--fold-constants")
    parts += extra_flags
    return " ".join(shlex.quote(p) for p in parts)


def _print_run_reports(reports: list[Any], options: Any, print_literals: bool, extra_flags: list[str]) -> None:
    import numpy as np

    for r in reports:
        if not r.passed:
            r.reproducer = _reproducer(r, options, extra_flags)
        head = f"{r.name}: {r.status.upper()}"
        if r.message:
            head += f": {r.message}"
        lines = [head]
        if r.inputs_note:
            lines.append(f"  inputs: {r.inputs_note}")
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
        typer.echo("\n".join(lines))
    if len(reports) > 1:
        _print_summary_table(reports)


def _print_summary_table(reports: list[Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{sum(r.passed for r in reports)}/{len(reports)} modules passed")
    for col, justify in (("module", "left"), ("status", "left"), ("max error", "right"),
                         ("compile ms", "right"), ("run ms", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in reports:
        table.add_row(r.name, r.status, "" if r.max_error is None else f"{r.max_error:.3g}",
                      "" if r.compile_ms is None else f"{r.compile_ms:.1f}",
                      "" if r.run_ms is None else f"{r.run_ms:.3f}")
    Console(width=max(100, len(max((r.name for r in reports), key=len)) + 60)).print(table)


def _save_outputs(path: str, reports: list[Any]) -> None:
    import io

    import numpy as np

    from . import outputs

    arrays = {}
    for r in reports:
        for i, o in enumerate(r.outputs or []):
            arrays[f"{r.name}/out{i}" if len(reports) > 1 else f"out{i}"] = o
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    outputs.write_atomic(path, buf.getvalue())


# ----------------------------------------------------------------- spmd-run

@app.command("spmd-run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def spmd_run(
    ctx: typer.Context,
    input: Annotated[str, typer.Argument(help="The module (any input format, or package.module:function).")],
    num_partitions: Annotated[int, typer.Option("--num-partitions", help="SPMD partitions.")] = 1,
    num_replicas: Annotated[int, typer.Option("--num-replicas", help="Replicas.")] = 1,
    partitioner: Annotated[Optional[str], typer.Option(
        "--partitioner", help="shardy or gspmd (default: the one the module's shardings are written for).")] = None,
    arg_sharding: Annotated[Optional[list[str]], typer.Option(
        "--arg-sharding", help="PARAM=SHARDING as HLO spells it, e.g. 0=devices=[4,1]<=[4] (repeatable); "
                               "parameters without one are replicated.")] = None,
    is_spmd_partitioned_module: Annotated[bool, typer.Option(
        "--is-spmd-partitioned-module", help="The module is already partitioned (per-device shapes): "
                                             "XLA does not partition it again.")] = False,
    run_xla_backend_only: Annotated[bool, typer.Option(
        "--run-xla-backend-only", help="Only XLA's backend compiles (an after-optimizations module).")] = False,
    argument_mode: Annotated[Optional[str], typer.Option(
        "--argument-mode", help="random (one set per replica), shared-random, zeros, or device-id "
                                "(each device's part filled with its device id).")] = None,
    seed: SeedOption = 0,
    inputs_npz: Annotated[Optional[str], typer.Option(
        "--inputs", help=".npz with one global (unpartitioned) array per parameter.")] = None,
    large_float_range: LargeFloatRangeOption = False,
    rtol: RtolOption = None,
    atol: AtolOption = None,
    num_repeats: Annotated[int, typer.Option("--num-repeats", help="Run N times; print each time.")] = 1,
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
        "--coordinator", help="HOST:PORT of process 0's coordinator.")] = None,
    launch_local: Annotated[Optional[int], typer.Option(
        "--launch-local", help="Start N processes on 127.0.0.1 and run across them.")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Seconds a distributed run may take before every process stops.")] = 300.0,
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
        procs = launch_local or num_processes
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
            if not _re_match(r"^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$", coordinator):
                raise DriverError(f"malformed --coordinator '{coordinator}'", hint="HOST:PORT, e.g. 10.0.0.1:1234")
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


def _re_match(pattern: str, text: str) -> bool:
    import re

    return re.match(pattern, text) is not None


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


# ---------------------------------------------------------------------- ptx

_LLVM_MODULE_SEPARATOR = r"^; ----- (\S+) -----$"


@app.command()
def ptx(
    input: Annotated[str, typer.Argument(help="LLVM IR (.ll), e.g. from 'opt --stage llvm-before-optimizations'.")],
    arch: Annotated[str, typer.Option("--arch", help="sm_XX[a] or X.Y[a], e.g. 9.0a or sm_80.")] = "sm_90a",
    opt_level: Annotated[int, typer.Option("-O", "--opt-level", help="LLVM optimization level 0-3.")] = 3,
    optimize: Annotated[bool, typer.Option(
        "--optimize/--no-optimize",
        help="Run LLVM's -O pipeline first (off for XLA's *.ir-with-opt.ll, already optimized).")] = True,
    output: Annotated[Optional[str], typer.Option("-o", "--output", help="Output file (default stdout).")] = None,
    print_after_all: Annotated[bool, typer.Option(
        "--print-after-all", help="Print the IR after each LLVM pass (stderr).")] = False,
    ir_dump_dir: Annotated[Optional[str], typer.Option(
        "--ir-dump-dir", help="Write the IR after each LLVM pass here, one file per pass.")] = None,
    libdevice: Annotated[Optional[str], typer.Option(
        "--libdevice", help="libdevice.10.bc for IR calling __nv_* (default: CUDA_HOME).")] = None,
) -> None:
    """LLVM IR to PTX with LLVM's NVPTX backend (XLA's ptx-opt).

    Takes the LLVM IR XLA writes, including its newer float-constant syntax.
    Several modules joined by '; ----- NAME -----' lines (the 'llvm' stages'
    output) are compiled one by one.
    """
    import re

    try:
        from . import outputs
        from . import ptx as ptx_backend

        try:
            text = Path(input).read_text()
        except FileNotFoundError:
            raise DriverError("no such file or directory", file=input) from None
        except (OSError, UnicodeDecodeError) as e:
            raise DriverError(f"cannot read LLVM IR: {getattr(e, 'strerror', None) or e}", file=input) from None
        if not text.strip():
            raise DriverError("empty file", file=input)
        parts = _split_llvm_modules(text)
        dumps: list[tuple[str, str]] = []
        want_dumps = print_after_all or ir_dump_dir is not None
        out = []
        for name, offset, body in parts:
            try:
                # Line numbers stay the file's: pad with the lines before this module.
                code = ptx_backend.compile_to_ptx(
                    "\n" * offset + body, arch, opt_level, filename=input, optimize=optimize,
                    libdevice=libdevice,
                    print_after_all=(lambda p, ir, n=name: dumps.append((f"{n}:{p}" if n else p, ir)))
                    if want_dumps else None)
            except DriverError:
                raise
            out.append((f"// ----- {name} -----\n" if name else "") + code)
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


def _split_llvm_modules(text: str) -> list[tuple[str, int, str]]:
    """(name, line offset, text) of each module; one unnamed part if not joined."""
    import re

    marks = list(re.finditer(_LLVM_MODULE_SEPARATOR, text, re.M))
    if not marks:
        return [("", 0, text)]
    parts = []
    for i, m in enumerate(marks):
        start = m.end() + 1
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        parts.append((m.group(1), text.count("\n", 0, start), text[start:end]))
    return parts


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
    """List the shipped GPU specs: name, GPU, compute capability, SMs, memory."""
    try:
        from . import gpu_specs

        specs = gpu_specs.list_specs()
        if json_out:
            import json

            typer.echo(json.dumps([s.to_dict() for s in specs], indent=2))
            return
        header = ("name", "gpu", "cc", "target", "SMs", "memory", "bandwidth")
        rows = [(s.name + (" (default)" if s.name == gpu_specs.DEFAULT_SPEC else ""), s.gpu,
                 s.compute_capability, s.sm, str(s.sm_count), f"{s.memory_bytes / 2**30:.0f} GiB",
                 f"{s.memory_bandwidth / 1e9:.0f} GB/s") for s in specs]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for r in [header, *rows]:
            typer.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    except DriverError as e:
        _fail(e)


@specs_app.command("show")
def specs_show(name: Annotated[str, typer.Argument(help="A shipped spec name or a .txtpb path.")]) -> None:
    """Print a spec's summary and its textproto."""
    try:
        from . import gpu_specs

        spec = gpu_specs.resolve_spec(name)
        for key, value in spec.to_dict().items():
            typer.echo(f"# {key}: {value}")
        typer.echo(spec.text.rstrip("\n"))
    except DriverError as e:
        _fail(e)


@specs_app.command("check")
def specs_check(files: Annotated[list[str], typer.Argument(help="Spec files to validate.")]) -> None:
    """Validate spec files before any compile; one error line per bad file."""
    from . import gpu_specs

    failed = False
    for path in files:
        try:
            spec = gpu_specs.check_spec(path)
            typer.echo(f"{path}: ok ({spec.gpu}, {spec.sm}, {spec.sm_count} SMs)")
        except DriverError as e:
            sys.stderr.write(e.format() + "\n")
            failed = True
    if failed:
        raise typer.Exit(EXIT_USAGE)


# ---------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> None:
    """Entry point: usage errors become one ``error:`` line and exit 2."""
    try:
        result = app(args=argv, standalone_mode=False)
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
