"""The ``mlirhlo`` commands other than ``opt``: thin typer commands over the library.

Library errors are typed (errors.py); only the front-ends turn them into
messages and exit codes: 2 for bad usage or input, 1 for a failure of a valid
module (a pass or a compile). Nothing heavy is imported at start-up. The entry
point, and ``opt``'s own parser, are cli/mlirhlo.py and cli/opt.py.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from .._native import interrupts
from ..errors import EXIT_INTERRUPTED, EXIT_USAGE, DriverError
from . import opt as opt_cli
from .common import is_option, no_such_option

app = typer.Typer(
    name="mlirhlo",
    help="Compile, transform and dump StableHLO / HLO modules with jaxlib's MLIR and XLA.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if not value:
        return
    from ..listings import version_text

    typer.echo(version_text(), nl=False)
    raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print the versions of the driver, jax, jaxlib, the CUDA plugin, the CUDA tools "
             "(ptxas, libdevice, nvdisasm) and llvmlite.")] = False,
) -> None:
    pass


def _fail(err: DriverError) -> None:
    from ..batch.opt import error_text

    sys.stderr.write(error_text(err))
    sys.stderr.flush()
    raise typer.Exit(err.exit_code)


# ------------------------------------------------------------ shared options

# Options several commands share, spelled once (opt's own are in cli/opt.py).
OutputOption = Annotated[Optional[str], typer.Option(
    "-o", "--output", "--o", metavar="FILE", help="Output file (default stdout).")]
InputFormatOption = Annotated[Optional[str], typer.Option(
    "--input-format", metavar="FORMAT", help="Force: hlo, hlo-proto, hlo-pbtxt, mlir, bytecode, vhlo, jax.")]
ArgsOption = Annotated[Optional[str], typer.Option(
    "--args", metavar="SPECS", help="Argument specs for a JAX function, e.g. 'f32[8,128],i32[8]'.")]
LoadPluginOption = Annotated[Optional[list[str]], typer.Option(
    "--load-pass-plugin", metavar="FILE", help="A .py file registering Python passes (repeatable).")]
InputsArg = Annotated[Optional[list[str]], typer.Argument(
    metavar="FILE...", help="Files, globs, directories, or package.module:function (with --args).", show_default=False)]


@app.command(help=opt_cli.HELP, add_help_option=False,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def opt(ctx: typer.Context) -> None:
    # The entry point parses opt itself (cli/opt.py), before typer is imported; this
    # command lists it at the root and serves an app invoked directly.
    raise typer.Exit(opt_cli.main(list(ctx.args)))


@app.command(help="Run opt again whenever its inputs, pipeline file, pass plugins or GPU specs change "
                  "(a warm process).", add_help_option=False,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def watch(ctx: typer.Context) -> None:
    # The entry point runs watch itself (cli/watch.py, opt's parser); this lists it at the root.
    from . import watch as watch_cli

    raise typer.Exit(watch_cli.main(list(ctx.args)))


# ------------------------------------------------------------------- passes

@app.command("passes")
def passes_command(
    load_pass_plugin: LoadPluginOption = None,
) -> None:
    """List every pass the installed jaxlib accepts, Python passes, and the named pipelines."""
    try:
        from .. import listings

        typer.echo(listings.pass_catalog(listings.load_plugins(load_pass_plugin)), nl=False)
    except DriverError as e:
        _fail(e)


# ------------------------------------------------------------------ convert

@app.command()
def convert(
    input: Annotated[str, typer.Argument(metavar="FILE", help="The module to convert (any input format).")],
    output: OutputOption = None,
    to: Annotated[Optional[str], typer.Option(
        "--to", metavar="FORMAT", help="hlo, hlo-proto, hlo-pbtxt, stablehlo, bytecode, vhlo, mhlo "
                     "(default: from -o's extension).")] = None,
    emit_proto: Annotated[bool, typer.Option(
        "--emit-proto", help="As in hlo-opt: emit a binary HloModuleProto (same as --to hlo-proto).")] = False,
    input_format: InputFormatOption = None,
    args: ArgsOption = None,
    target_version: Annotated[Optional[str], typer.Option(
        "--target-version", metavar="VERSION", help="VHLO version for --to vhlo: current, minimum or X.Y.Z.")] = None,
) -> None:
    """Convert between HLO text/proto, StableHLO text/bytecode and VHLO artifacts."""
    try:
        from ..commands import mlirhlo as commands

        commands.convert(input, output=output, to=to, emit_proto=emit_proto, input_format=input_format,
                         args=args, target_version=target_version)
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
    """Option callback: opt's rule for --timeout (cli/opt.py), in typer's words."""
    if value is not None and not opt_cli.finite_positive(value):
        raise typer.BadParameter(f"{value} is not a finite number > 0")
    return value


# Options that run and the other commands share, spelled once.
JobsOption = Annotated[int, typer.Option(
    "--jobs", "-j", metavar="N", help="Worker processes; each module is isolated (0: run in this process).")]
TimeoutOption = Annotated[Optional[float], typer.Option(
    "--timeout", metavar="SECONDS", callback=_positive, help="Seconds per module (with --jobs or --scheduler).")]
SplitInputFileOption = Annotated[bool, typer.Option(
    "--split-input-file", help="Split inputs on '// -----' lines; each chunk is a module.")]

# Options that run and spmd-run share, spelled once.
SeedOption = Annotated[int, typer.Option("--seed", metavar="N", min=0, help="Seed of the random inputs.")]
LargeFloatRangeOption = Annotated[bool, typer.Option(
    "--large-float-range", "--use_large_float_range", help="Random floats in +-1e4 instead of +-1.")]
RtolOption = Annotated[Optional[float], typer.Option(
    "--rtol", "--rel_error_bound", metavar="X", callback=_non_negative,
    help="Relative tolerance: an element matches within --atol + --rtol * |expected| (default per dtype).")]
AtolOption = Annotated[Optional[float], typer.Option(
    "--atol", "--abs_error_bound", metavar="X", callback=_non_negative, help="Absolute tolerance (default per dtype).")]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(
    ctx: typer.Context,
    inputs: InputsArg = None,
    platform: Annotated[str, typer.Option(
        "--platform", metavar="NAME", help="cpu, cuda (needs a GPU) or tpu (needs a TPU chip).")] = "cpu",
    reference: Annotated[Optional[str], typer.Option(
        "--reference", "--reference_platform", metavar="NAME",
        help="interpreter (StableHLO reference interpreter; also XLA's Interpreter; the default on the CPU), "
             "cpu (XLA CPU, also CPU, Host; the default for cuda and tpu) or none.")] = None,
    precision: Annotated[Optional[str], typer.Option(
        "--precision", metavar="P", help="Every dot and convolution at this precision on the platform: default, "
                                         "high or highest (jax's default_matmul_precision; a TPU computes float32 "
                                         "products at DEFAULT as bfloat16 passes). Default: as the module says.")] = None,
    seed: SeedOption = 0,
    zeros: Annotated[bool, typer.Option("--zeros", help="All-zero inputs.")] = False,
    inputs_npz: Annotated[Optional[str], typer.Option(
        "--inputs", metavar="FILE",
        help=".npz with one array per parameter (by name, argN, arr_N or position).")] = None,
    large_float_range: LargeFloatRangeOption = False,
    rtol: RtolOption = None,
    atol: AtolOption = None,
    iterations: Annotated[int, typer.Option("--iterations", metavar="N", help="Run N times; report the median.")] = 1,
    print_literals: Annotated[bool, typer.Option("--print-literals", "--print_literals", help="Print inputs' and outputs' values.")] = False,
    save_outputs: Annotated[Optional[str], typer.Option(
        "--save-outputs", metavar="FILE", help="Write outputs to this .npz.")] = None,
    fold_constants: Annotated[bool, typer.Option(
        "--fold-constants", help="Check files: keep their @inputs() constants (XLA folds the test); "
                                 "default: they are runtime parameters.")] = False,
    bisect: Annotated[bool, typer.Option(
        "--bisect", help="On a mismatch, find the first op whose value diverges.")] = False,
    bisect_passes: Annotated[bool, typer.Option(
        "--bisect-passes", help="On a mismatch, find the XLA HLO pass (or smallest set) whose disabling "
                                "makes the module match, with the HLO before and after it.")] = False,
    timing: Annotated[bool, typer.Option(
        "--timing", help="XLA's per-pass table of each module's compile: calls, time, whether each "
                         "HLO pass changed the module.")] = False,
    jobs: JobsOption = 1,
    timeout: TimeoutOption = None,
    scheduler: Annotated[Optional[str], typer.Option(
        "--scheduler", metavar="URL",
        help="Run the modules on a Dask cluster (tcp://HOST:8786) instead of local workers.")] = None,
    json_report: Annotated[Optional[str], typer.Option(
        "--json", metavar="FILE", help="Write the report rows as JSON.")] = None,
    input_format: InputFormatOption = None,
    split_input_file: SplitInputFileOption = False,
    args: ArgsOption = None,
) -> None:
    """Compile with XLA, execute, and compare against a reference (run_hlo_module).

    Exit code 0 when every module matches, 1 when some mismatch or fail, 2 for
    bad usage or input. XLA dump directories contribute their
    *before_optimizations* modules.
    """
    try:
        from ..commands import mlirhlo as commands

        inputs, extra = _inputs_and_options(ctx, inputs)
        cli_flags, _ = opt_cli.xla_flags_among(extra, lambda: _known(ctx), ctx.command_path)
        code = commands.run(
            inputs, cli_flags=cli_flags, extra_words=extra, platform=platform, reference=reference, precision=precision,
            seed=seed,
            zeros=zeros, inputs_npz=inputs_npz, large_float_range=large_float_range, rtol=rtol, atol=atol,
            iterations=iterations, print_literals=print_literals, save_outputs=save_outputs,
            fold_constants=fold_constants, bisect=bisect, bisect_passes=bisect_passes, timing=timing, jobs=jobs,
            timeout=timeout, scheduler=scheduler,
            json_report=json_report, input_format=input_format, split_input_file=split_input_file, args=args)
        if code:
            raise typer.Exit(code)
    except DriverError as e:
        _fail(e)


# ----------------------------------------------------------------- spmd-run

@app.command("spmd-run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def spmd_run(
    ctx: typer.Context,
    input: Annotated[str, typer.Argument(
        metavar="FILE", help="The module (any input format, or package.module:function).")],
    num_partitions: Annotated[int, typer.Option(
        "--num-partitions", "--num_partitions", metavar="N", help="SPMD partitions.")] = 1,
    num_replicas: Annotated[int, typer.Option("--num-replicas", "--num_replicas", metavar="N", help="Replicas.")] = 1,
    partitioner: Annotated[Optional[str], typer.Option(
        "--partitioner", metavar="NAME",
        help="shardy or gspmd (default: the one the module's shardings are written for).")] = None,
    arg_sharding: Annotated[Optional[list[str]], typer.Option(
        "--arg-sharding", metavar="PARAM=SHARDING",
        help="PARAM=SHARDING as HLO spells it, e.g. 0=devices=[4,1]<=[4] or a named mesh sharding "
                               "\"0=mesh['b'=4], [{'b'}, {}]\" (repeatable); parameters without one are "
                               "replicated.")] = None,
    is_spmd_partitioned_module: Annotated[bool, typer.Option(
        "--is-spmd-partitioned-module", "--is_spmd_partitioned_module", help="The module is already partitioned (per-device shapes): "
                                             "XLA does not partition it again.")] = False,
    run_xla_backend_only: Annotated[bool, typer.Option(
        "--run-xla-backend-only", "--run_xla_backend_only", help="Only XLA's backend compiles (an after-optimizations module).")] = False,
    argument_mode: Annotated[Optional[str], typer.Option(
        "--argument-mode", metavar="MODE", help="random (one set per replica), shared-random, zeros, or device-id "
                                "(each device's part filled with its device id).")] = None,
    seed: SeedOption = 0,
    inputs_npz: Annotated[Optional[str], typer.Option(
        "--inputs", metavar="FILE", help=".npz with one global (unpartitioned) array per parameter.")] = None,
    large_float_range: LargeFloatRangeOption = False,
    rtol: RtolOption = None,
    atol: AtolOption = None,
    num_repeats: Annotated[int, typer.Option(
        "--num-repeats", "--num_repeats", metavar="N", help="Run N times; print each time.")] = 1,
    platform: Annotated[str, typer.Option(
        "--platform", metavar="NAME", help="cpu (host devices) or tpu (the TPU chips attached here).")] = "cpu",
    reference: Annotated[str, typer.Option(
        "--reference", metavar="NAME", help="cpu (the unpartitioned module on one device), interpreter (StableHLO's) "
                                            "or none. A module with manual computations (shard_map) is "
                                            "compared with itself on the same devices, parameters and "
                                            "outputs replicated.")] = "cpu",
    reference_module: Annotated[Optional[str], typer.Option(
        "--reference-module", metavar="FILE", help="The unpartitioned computation to compare against "
                                   "(for an already partitioned module).")] = None,
    dump_output: Annotated[Optional[str], typer.Option(
        "--dump-output", metavar="FILE", help="Write the gathered outputs to this .npz (out0, out1, ...).")] = None,
    num_processes: Annotated[int, typer.Option(
        "--num-processes", metavar="N", help="Processes in a distributed run (with --process-id, --coordinator).")] = 1,
    process_id: Annotated[Optional[int], typer.Option(
        "--process-id", metavar="N", help="This process's number, 0 to N-1; process 0 hosts the coordinator.")] = None,
    coordinator: Annotated[Optional[str], typer.Option(
        "--coordinator", metavar="HOST:PORT",
        callback=_host_port, help="HOST:PORT of process 0's coordinator.")] = None,
    launch_local: Annotated[Optional[int], typer.Option(
        "--launch-local", metavar="N", help="Start N processes on 127.0.0.1 and run across them.")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", metavar="SECONDS", callback=_positive,
        help="Seconds a distributed run may take before every process stops.")] = 300.0,
    input_format: InputFormatOption = None,
    args: ArgsOption = None,
) -> None:
    """Run a module SPMD-partitioned on many devices, in one or several processes (multihost_hlo_runner).

    Outputs are gathered to full arrays and compared against the unpartitioned
    module on one device. On CPU the driver creates the devices itself. Exit
    code 0 when the outputs match, 1 on a mismatch or a failed run, 2 for bad
    usage or input. Any --xla_NAME=VALUE flag applies to the compile.
    """
    from ..commands import spmd_run as spmd_launch

    try:
        input, extra = _one_input(ctx, input)
        flags, rest = opt_cli.xla_flags_among(extra, lambda: _known(ctx), ctx.command_path)
        if rest:
            raise DriverError(f"unexpected argument '{rest[0]}'", hint="spmd-run takes one module")
        input = _given(ctx, input)
        options = spmd_launch.spmd_options(
            flags, argument_mode=argument_mode, inputs_npz=inputs_npz, partitioner=partitioner,
            arg_sharding=tuple(arg_sharding or ()), num_partitions=num_partitions, num_replicas=num_replicas,
            is_spmd_partitioned_module=is_spmd_partitioned_module, run_xla_backend_only=run_xla_backend_only,
            seed=seed, large_float_range=large_float_range, rtol=rtol, atol=atol, num_repeats=num_repeats,
            reference=reference, reference_module=reference_module, platform=platform)
        code = spmd_launch.run(spmd_launch.SpmdLaunch(
            input, input_format=input_format, args=args, arg_sharding=tuple(arg_sharding or ()),
            dump_output=dump_output, num_processes=num_processes, process_id=process_id, coordinator=coordinator,
            launch_local=launch_local, timeout=timeout), options)
        if code:
            raise typer.Exit(code)
    except DriverError as e:
        _spmd_fail(e)


def _host_port(value: Optional[str]) -> Optional[str]:
    """Option callback: spmd_launch.check_host_port's refusal as a usage error."""
    from ..commands import spmd_run as spmd_launch

    if value is not None:
        try:
            spmd_launch.check_host_port(value)
        except DriverError as e:
            raise typer.BadParameter(e.text()) from None
    return value


def _spmd_fail(err: DriverError) -> None:
    sys.stderr.write(err.format() + "\n")
    sys.stderr.flush()
    raise typer.Exit(err.exit_code)


# ---------------------------------------------------------------------- kernels

NoCacheOption = Annotated[bool, typer.Option(
    "--no-cache", help="Neither read nor write the stage cache (see 'mlirhlo cache info').")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress line on a terminal.")]
NumPartitionsOption = Annotated[Optional[int], typer.Option(
    "--num-partitions", metavar="N", min=1,
    help="Partitions to compile a sharded module for; default: as many as it says (mhlo.num_partitions, "
         "an HLO header's num_partitions); 1: the unpartitioned program.")]


def _input_options(input_format: Optional[str], split_input_file: bool, args: Optional[str]) -> Any:
    from ..core.program import InputOptions

    return InputOptions(input_format, split_input_file, args)


@app.command("kernels", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def kernels_command(
    ctx: typer.Context,
    inputs: InputsArg = None,
    gpu_spec: Annotated[Optional[str], typer.Option(
        "--gpu-spec", metavar="SPEC", help="GPU specs side by side, a comma list (default: h100_sxm).")] = None,
    platform: Annotated[Optional[str], typer.Option(
        "--platform", metavar="NAME", help="cuda (default) or tpu: libtpu's estimate per fusion or op.")] = None,
    tpu_topology: Annotated[Optional[str], typer.Option(
        "--tpu-topology", metavar="A,B,...", help="TPU slices, a comma list (v5e:1x1, v5p:2x2x1 ...).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON instead of the table.")] = False,
    input_format: InputFormatOption = None,
    split_input_file: SplitInputFileOption = False,
    args: ArgsOption = None,
    debug_options_file: Annotated[Optional[str], typer.Option(
        "--debug-options-file", metavar="FILE", help="DebugOptions textproto ('xla_name: value' lines).")] = None,
    num_partitions: NumPartitionsOption = None,
    no_cache: NoCacheOption = False,
    quiet: QuietOption = False,
) -> None:
    """Per CUDA kernel: registers, spills, shared memory, launch dims, occupancy; a column group per spec.

    With --platform tpu: per fusion or top-level op of the optimized module, libtpu's estimated
    cycles (static LLO profile), that time at the chip's clock where tpu_specs/ has one, XLA's
    FLOPs and bytes for the op, and the bound on the generation's peaks; one table per topology.

    Any --xla_NAME=VALUE DebugOptions flag applies to every compile, over XLA_FLAGS.
    """
    try:
        from .. import outputs
        from ..batch import kernels
        from .common import progress_line, say

        inputs, extra = _inputs_and_options(ctx, inputs)
        chosen = (platform or ("tpu" if tpu_topology else "cuda")).lower()
        if chosen not in ("cuda", "gpu", "tpu"):
            raise DriverError(f"--platform {platform}: kernels are CUDA's or TPU's",
                              hint="--platform cuda (--gpu-spec) or --platform tpu (--tpu-topology)")
        chosen = "tpu" if chosen == "tpu" else "cuda"
        target = opt_cli.resolve_target(chosen, gpu_spec, extra, debug_options_file, None,
                                        needs_spec=chosen == "cuda", known=lambda: _known(ctx),
                                        command=ctx.command_path, tpu_topology=tpu_topology)
        options = _input_options(input_format, split_input_file, args)
        line = progress_line(quiet, "kernels")
        with line if line is not None else _nothing():
            text = kernels.report(inputs, target, input_options=options, as_json=json_out,
                                  cache=not no_cache, num_partitions=num_partitions, say=say, progress=line)
        outputs.Sink().emit(text)
    except DriverError as e:
        _fail(e)


# ------------------------------------------------------------------------ fit

@app.command("fit")
def fit_command(
    input: Annotated[str, typer.Argument(
        metavar="PROGRAM", help="The module: any input format, or package.module:function / FILE.py:function "
                                "with --args (lowered for each TPU target, as opt does).")],
    tpu_topology: Annotated[Optional[str], typer.Option(
        "--tpu-topology", metavar="A,B,...",
        help="TPU slices, a comma list (v5e:2x2, v5p:2x2x1, v5litepod-16, v6e-8 ...).")] = None,
    gpu_spec: Annotated[Optional[str], typer.Option(
        "--gpu-spec", metavar="A,B,...", help="GPU specs, a comma list (h100_sxm, a100_sxm_40 ...).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON instead of the table.")] = False,
    require_fit: Annotated[bool, typer.Option(
        "--require-fit", help="Exit 1 unless the program fits on every target.")] = False,
    plot: Annotated[Optional[str], typer.Option(
        "--plot", metavar="FILE", help="Also a picture of the sweep (.png, .svg, .pdf; the 'plot' extra).")] = None,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", metavar="N", min=0,
        help="Worker processes compiling targets side by side (0: one after another in this process).")] = 0,
    scheduler: Annotated[Optional[str], typer.Option(
        "--scheduler", metavar="URL", help="Compile the targets on a Dask cluster (tcp://HOST:8786).")] = None,
    timeout: Annotated[Optional[float], typer.Option(
        "--timeout", metavar="SECONDS", callback=_positive,
        help="Seconds per target (with --jobs or --scheduler); a target past it is an error row.")] = None,
    input_format: InputFormatOption = None,
    args: ArgsOption = None,
    num_partitions: NumPartitionsOption = None,
    no_cache: NoCacheOption = False,
    quiet: QuietOption = False,
) -> None:
    """Will it fit? Per target: devices, per-device memory required, capacity, headroom, fits.

    Each target is a device-less compile. The requirement is what 'opt --stage memory' calls the
    total (arguments + outputs - aliased + temporaries + code, per device), against the TPU
    generation's HBM (tpu_specs/) or the GPU spec's memory. A TPU compile refused for HBM is a
    row with XLA's numbers. Exit 0 when every target compiled or was refused for memory; 1 when
    another compile failed (or, with --require-fit, when it does not fit everywhere).
    """
    try:
        from .. import outputs
        from ..batch import fit
        from .common import progress_line

        targets = fit.resolve(tpu_topology, gpu_spec)
        if plot is not None:
            fit.check_plot_path(plot)
        line = progress_line(quiet, "fit")
        with line if line is not None else _nothing():
            rows = fit.run(input, targets, input_format=input_format, args=args, num_partitions=num_partitions,
                           cache=not no_cache, jobs=jobs, scheduler=scheduler, timeout=timeout, progress=line)
        if plot is not None:
            fit.plot(rows, plot, title=input)
        outputs.Sink().emit(fit.to_json(rows) if json_out else fit.table(rows))
        raise typer.Exit(fit.exit_code(rows, require_fit=require_fit))
    except DriverError as e:
        _fail(e)


def _nothing() -> Any:
    import contextlib

    return contextlib.nullcontext()


@app.command(help="Show the optimized HLO in Model Explorer, with kernel figures, a diff or a bisect laid on it.",
             add_help_option=False, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def explore(ctx: typer.Context) -> None:
    # The entry point parses explore itself (cli/explore.py, opt's options and more); this
    # command lists it at the root and serves an app invoked directly.
    from . import explore as explore_cli

    raise typer.Exit(explore_cli.main(list(ctx.args)))


# ---------------------------------------------------------------------- diff

@app.command("diff")
def diff_command(
    input: Annotated[str, typer.Argument(
        metavar="FILE", help="The module (side A; side B too without FILE_B): any input format, "
                             "or package.module:function / FILE.py:function with --args.")],
    input_b: Annotated[Optional[str], typer.Argument(
        metavar="FILE_B", help="Side B's module, when the two sides are two files.", show_default=False)] = None,
    platform: Annotated[Optional[str], typer.Option(
        "--platform", metavar="NAME", help="cpu, cuda or tpu (both device-less).")] = None,
    gpu_spec: Annotated[Optional[str], typer.Option(
        "--gpu-spec", metavar="A[,B]", help="Side A's GPU spec and side B's (one spec: both; default h100_sxm).")] = None,
    tpu_topology: Annotated[Optional[str], typer.Option(
        "--tpu-topology", metavar="A[,B]",
        help="Side A's TPU slice and side B's, for --platform tpu (one: both; default v5e:2x2).")] = None,
    flags_a: Annotated[Optional[str], typer.Option(
        "--flags-a", metavar="FLAGS", help="XLA flags of side A, as in XLA_FLAGS (over XLA_FLAGS).")] = None,
    flags_b: Annotated[Optional[str], typer.Option(
        "--flags-b", metavar="FLAGS",
        help="XLA flags of side B, e.g. '--xla_gpu_enable_triton_gemm=false'.")] = None,
    stage: Annotated[Optional[str], typer.Option(
        "--stage", metavar="STAGE",
        help="Also a unified diff of this stage (hlo, buffer-assignment, thunk-sequence, ptx, ...), "
             "names renumbered.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON instead of text.")] = False,
    input_format: InputFormatOption = None,
    args: ArgsOption = None,
    no_cache: NoCacheOption = False,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Per differing kernel: the fewest differing flags or spec fields that reproduce it "
                          "on A (delta debugging), and the XLA pass whose disabling removes it.")] = False,
    debug_options_file_a: Annotated[Optional[str], typer.Option(
        "--debug-options-file-a", metavar="FILE", help="DebugOptions textproto of side A (under XLA_FLAGS).")] = None,
    debug_options_file_b: Annotated[Optional[str], typer.Option(
        "--debug-options-file-b", metavar="FILE", help="DebugOptions textproto of side B (under XLA_FLAGS).")] = None,
    num_partitions: NumPartitionsOption = None,
    quiet: QuietOption = False,
) -> None:
    """Two compiles of a module side by side: fusions, kernels, memory; exit 0 whatever differs.

    The sides differ by input (FILE FILE_B), GPU spec (--gpu-spec A,B), TPU slice
    (--tpu-topology A,B) or XLA flags (--flags-a, --flags-b). Kernels are matched by name, fusions by HLO name.
    """
    try:
        from .. import outputs
        from ..commands import mlirhlo as commands
        from .common import progress_line, say

        line = progress_line(quiet, "diff")
        with line if line is not None else _nothing():
            text = commands.diff(input, input_b, platform=platform, gpu_spec=gpu_spec, flags_a=flags_a,
                                 flags_b=flags_b, stage=stage, input_options=_input_options(input_format, False, args),
                                 as_json=json_out, cache=not no_cache, explain=explain,
                                 debug_options_file_a=debug_options_file_a,
                                 debug_options_file_b=debug_options_file_b, num_partitions=num_partitions,
                                 say=say, progress=line, tpu_topology=tpu_topology)
        outputs.Sink().emit(text)
    except DriverError as e:
        _fail(e)


# ---------------------------------------------------------------------- ptx



@app.command()
def ptx(
    input: Annotated[str, typer.Argument(
        metavar="FILE", help="LLVM IR (.ll), e.g. from 'opt --stage llvm-before-optimizations'; - reads stdin.")],
    arch: Annotated[str, typer.Option(
        "--arch", metavar="ARCH", help="sm_XX[a] or X.Y[a], e.g. 9.0a or sm_80.")] = "sm_90a",
    opt_level: Annotated[int, typer.Option("-O", "--opt-level", metavar="N", help="LLVM optimization level 0-3.")] = 3,
    optimize: Annotated[bool, typer.Option(
        "--optimize/--no-optimize",
        help="Run LLVM's -O pipeline first (off for XLA's *.ir-with-opt.ll, already optimized).")] = True,
    output: OutputOption = None,
    print_after_all: Annotated[bool, typer.Option(
        "--print-after-all", help="Print the IR after each LLVM pass (stderr).")] = False,
    ir_dump_dir: Annotated[Optional[str], typer.Option(
        "--ir-dump-dir", metavar="DIR", help="Write the IR after each LLVM pass here, one file per pass.")] = None,
    libdevice: Annotated[Optional[str], typer.Option(
        "--libdevice", metavar="FILE", help="libdevice.10.bc for IR calling __nv_* (default: CUDA_HOME).")] = None,
    check_ptxas: Annotated[bool, typer.Option(
        "--ptxas/--no-ptxas", help="Assemble each PTX module with ptxas for --arch to check it.")] = True,
) -> None:
    """LLVM IR to PTX with LLVM's NVPTX backend (XLA's ptx-opt).

    Takes the LLVM IR XLA writes, including its newer float-constant syntax.
    Several modules joined by '; ----- NAME -----' lines (the 'llvm' stages'
    output) are compiled one by one in a helper process (an LLVM fatal error
    is reported, not fatal), and each PTX is assembled by ptxas for --arch.
    """
    try:
        from ..commands import mlirhlo as commands

        commands.ptx(input, arch=arch, opt_level=opt_level, optimize=optimize, output=output,
                     print_after_all=print_after_all, ir_dump_dir=ir_dump_dir, libdevice=libdevice,
                     check_ptxas=check_ptxas)
    except DriverError as e:
        _fail(e)


# ----------------------------------------------------------- bench-pipeline

@app.command("bench-pipeline", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench_pipeline(
    ctx: typer.Context,
    input: Annotated[str, typer.Argument(metavar="FILE", help="The module to run the pipeline on.")],
    pipeline_spec: Annotated[Optional[str], typer.Option(
        "--pipeline", metavar="PIPELINE", help="Textual pipeline or @NAME.")] = None,
    passes: Annotated[Optional[str], typer.Option("--passes", metavar="LIST", help="hlo-opt style pass list.")] = None,
    compare: Annotated[Optional[str], typer.Option(
        "--compare", metavar="PIPELINE",
        help="Another pipeline (spec, @NAME or pass list) run in turn with the first; prints the ratio.")] = None,
    repeats: Annotated[int, typer.Option(
        "--repeats", metavar="N", help="Runs per pipeline (each on a fresh copy).")] = 10,
    platform: Annotated[Optional[str], typer.Option(
        "--platform", metavar="NAME",
        help="Instead: time XLA's HLO pipeline on cpu|cuda (from per-pass dump timestamps).")] = None,
    gpu_spec: Annotated[Optional[str], typer.Option(
        "--gpu-spec", metavar="SPEC", help="GPU spec for --platform cuda (default: h100_sxm).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
    load_pass_plugin: LoadPluginOption = None,
    input_format: InputFormatOption = None,
    args: ArgsOption = None,
) -> None:
    """Run a pipeline N times; per-pass median and spread, and the total (hlo-opt + time, done properly)."""
    try:
        from .. import listings
        from ..commands import mlirhlo as commands

        input, extra = _one_input(ctx, input)
        if platform is None:  # MLIR passes only: no --xla_* flag applies, every option word is unknown
            unknown = next((w for w in extra if is_option(w)), None)
            if unknown is not None:
                raise no_such_option(unknown, _known(ctx), ctx.command_path)
            strays = extra
        else:
            _, strays = opt_cli.xla_flags_among(extra, lambda: _known(ctx), ctx.command_path)
        if strays:
            raise DriverError(f"unexpected argument '{strays[0]}'", hint="bench-pipeline takes one module")
        input = _given(ctx, input)
        python_passes = listings.load_plugins(load_pass_plugin)  # this command's only
        target = None
        if platform is not None:
            target = opt_cli.resolve_target(platform, gpu_spec, extra, None, None, needs_spec=True,
                                            known=lambda: _known(ctx), command=ctx.command_path)
        from .common import say

        typer.echo(commands.bench_pipeline(input, target=target, pipeline_spec=pipeline_spec, passes=passes,
                                           compare=compare, repeats=repeats, json_out=json_out,
                                           input_format=input_format, args=args, say=say,
                                           python_passes=python_passes), nl=False)
    except DriverError as e:
        _fail(e)
    except KeyboardInterrupt:
        # Caught here: typer would turn it into a silent exit 130.
        interrupts.report()
        raise typer.Exit(EXIT_INTERRUPTED) from None


# -------------------------------------------------------------------- specs

specs_app = typer.Typer(help="GPU target specs for device-less CUDA compiles (gpu_specs/*.txtpb).",
                        no_args_is_help=True)
app.add_typer(specs_app, name="specs")


@specs_app.command("list")
def specs_list(
    json_out: Annotated[bool, typer.Option("--json", help="JSON rows instead of a table.")] = False,
    tpu: Annotated[bool, typer.Option("--tpu", help="The TPU generation specs (tpu_specs/*.toml) instead.")] = False,
) -> None:
    """List the shipped GPU specs: name, GPU, compute capability, SMs, memory, and
    whether the ptxas XLA will use (shown below the table) can target each. With --tpu,
    the TPU generations' per-chip figures and their sources."""
    try:
        from .. import listings

        typer.echo(listings.tpu_spec_table(as_json=json_out) if tpu else listings.spec_table(as_json=json_out),
                   nl=False)
    except DriverError as e:
        _fail(e)


@specs_app.command("show")
def specs_show(name: Annotated[str, typer.Argument(
        metavar="SPEC", help="A shipped spec name or a .txtpb path.")]) -> None:
    """Print a spec's summary and its textproto."""
    try:
        from ..cuda import specs as gpu_specs

        spec = gpu_specs.resolve_spec(name)
        for note in spec.notes:
            sys.stderr.write(note + "\n")
        for key, value in spec.to_dict().items():
            typer.echo(f"# {key}: {value}")
        typer.echo(spec.text.rstrip("\n"))
    except DriverError as e:
        _fail(e)


@specs_app.command("check")
def specs_check(files: Annotated[list[str], typer.Argument(
        metavar="FILE...", help="Spec files to validate (- reads stdin).")]) -> None:
    """Validate spec files before any compile; one error line per bad file."""
    from ..cuda import specs as gpu_specs

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

cache_app = typer.Typer(help="The stage cache every command and the Python API share.",
                        no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("info")
def cache_info() -> None:
    """Where the cache is, how many entries and bytes it holds, and its size cap."""
    from ..core import cache

    found = cache.info()
    typer.echo(f"directory  {found['directory']}")
    typer.echo(f"entries    {found['entries']}")
    typer.echo(f"size       {found['bytes']} bytes")
    typer.echo(f"max size   {found['max_bytes']} bytes (MLIRHLO_CACHE_MAX_BYTES; least recently used go first)")


@cache_app.command("clear")
def cache_clear() -> None:
    """Remove every cached entry."""
    from ..core import cache

    typer.echo(f"removed {cache.clear()} entries from {cache.cache_dir()}")


# --------------------------------------------------------------- cuda-plugin

cuda_plugin_app = typer.Typer(help="jax's CUDA plugin for device-less CUDA compiles, kept out of jax's way.",
                              no_args_is_help=True)
app.add_typer(cuda_plugin_app, name="cuda-plugin")


@cuda_plugin_app.command("install")
def cuda_plugin_install(
    cuda: Annotated[Optional[int], typer.Option(
        "--cuda", metavar="MAJOR", help="CUDA 12 or 13 (default: the plugin in use's, else the pip "
                                        "CUDA tools installed, else 12).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Install again over the driver's copy.")] = False,
) -> None:
    """Install jax-cudaN-plugin and jax-cudaN-pjrt at jaxlib's version with pip into this
    environment's share/mlirhlo-driver/cuda-plugins/ ($MLIRHLO_CUDA_PLUGIN_DIR), where jax's
    plugin discovery does not look: the user's jax stays quiet, device-less CUDA compiles
    work. A jax CUDA plugin installed at jaxlib's version is used instead, as it is."""
    try:
        from ..commands.mlirhlo import cuda_plugin_install as install

        typer.echo(install(cuda=cuda, force=force), nl=False)
    except DriverError as e:
        _fail(e)


# --------------------------------------------------------------- tpu-plugin

tpu_plugin_app = typer.Typer(help="libtpu for device-less TPU compiles, kept out of jax's way.",
                             no_args_is_help=True)
app.add_typer(tpu_plugin_app, name="tpu-plugin")


@tpu_plugin_app.command("install")
def tpu_plugin_install(
    force: Annotated[bool, typer.Option("--force", help="Install again over the driver's copy.")] = False,
) -> None:
    """Install libtpu at the version jax's 'tpu' extra pins, with pip, into this environment's
    share/mlirhlo-driver/tpu-plugins/ ($MLIRHLO_TPU_PLUGIN_DIR), where jax does not look: the
    user's jax stays quiet on a machine without a TPU, and --platform tpu compiles device-less
    in a process of the driver's. A libtpu in site-packages (a TPU VM's jax[tpu]) is used instead."""
    try:
        from ..commands.mlirhlo import tpu_plugin_install as install

        typer.echo(install(force=force), nl=False)
    except DriverError as e:
        _fail(e)


def _known(ctx: Any) -> list[str]:
    """Every spelling of the invoked command's options, --help's too (for 'did you mean' hints)."""
    return [o for p in ctx.command.get_params(ctx) for o in (*p.opts, *p.secondary_opts)]


# Commands that take --xla_* flags keep the options typer does not know (ignore_unknown_options):
# typer then puts them among the positional arguments, an option's value after it too.

def _inputs_and_options(ctx: Any, inputs: Optional[list[str]]) -> tuple[list[str], list[str]]:
    """A FILE... command's inputs, and the words written as options that typer left
    among them or after them (for xla_flags_among)."""
    words = [*(inputs or []), *ctx.args]
    return [w for w in words if not is_option(w)], [w for w in words if is_option(w)]


def _one_input(ctx: Any, input: str) -> tuple[Optional[str], list[str]]:
    """A one-FILE command's FILE, and the other words typer left. typer gives FILE the
    first word it does not parse, an unknown option too (``--bogus FILE``): the FILE is
    the first word that is no option (None: none is; see :func:`_given`)."""
    words = [input, *ctx.args]
    at = next((i for i, w in enumerate(words) if not is_option(w)), None)
    if at is None:
        return None, words
    return words[at], words[:at] + words[at + 1:]


def _given(ctx: Any, input: Optional[str]) -> str:
    """The FILE :func:`_one_input` found, once the other words are checked; none is typer's
    own refusal of a missing argument, in its words."""
    if input is None:
        raise DriverError("Missing argument 'FILE'.", hint=f"see '{ctx.command_path} --help'")
    return input


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


def run_app(argv: list[str], command: str | None) -> None:
    """Run ``argv``, whose sub-command is ``command`` (None: the root); exits (SystemExit)
    with its code. typer's own usage errors become one ``error:`` line and exit 2."""
    try:
        result = _app_for(command)(args=argv, standalone_mode=False)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as e:
        # typer vendors click privately; its usage errors are recognised by shape.
        if type(e).__name__ == "NoArgsIsHelpError":
            typer.echo(e.ctx.get_help())  # type: ignore[attr-defined]
            sys.exit(EXIT_USAGE)
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoSuchOption" and ctx is not None:  # in the words of every command
            refusal = no_such_option(e.option_name, _known(ctx), ctx.command_path)  # type: ignore[attr-defined]
            sys.stderr.write(refusal.format() + "\n")
            sys.exit(EXIT_USAGE)
        if hasattr(e, "format_message") and getattr(e, "exit_code", None) == EXIT_USAGE:
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            sys.stderr.write(f"error: {e.format_message()}{hint}\n")
            sys.exit(EXIT_USAGE)
        raise
    if result == EXIT_INTERRUPTED:
        # typer turns a KeyboardInterrupt the command did not catch into a silent exit 130
        # (commands that report it themselves exit through typer.Exit; report() says it once).
        interrupts.report()
    sys.exit(result if isinstance(result, int) else 0)

