"""Drop-in front-ends for XLA's tools: ``hlo-opt``, ``run_hlo_module``,
``multihost_hlo_runner`` (``hlo_runner_main``) and ``ptx-opt``.

Each takes XLA's flag syntax (xla_cli_flags.py) and XLA's defaults, and maps
onto the same library the ``mlirhlo`` subcommands use, so a script written
for XLA's binaries runs with only this package installed. Bad usage or input
is one ``error:`` line and exit 2; a module that fails to compile or run
exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from .errors import CompileError, DriverError, FlagError, PassFailure, did_you_mean
from .xla_cli_flags import Flag, parse, platform as xla_platform, usage

EXIT_FAILURE = 1
EXIT_USAGE = 2


def _version(prog: str) -> str:
    from . import __version__

    return f"{prog} (mlirhlo-driver {__version__}, XLA from jaxlib)\n"


def _entry(prog: str, body: Callable[[list[str]], int], argv: list[str] | None) -> None:
    """Run ``body``; typed errors become one line and an exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = body(args)
    except DriverError as e:
        from . import _jaxlib

        sys.stderr.write(e.format() + "\n")
        sys.stderr.flush()
        runtime = (CompileError, PassFailure, _jaxlib.ExecutionError, _jaxlib.DistributedError)
        sys.exit(EXIT_FAILURE if isinstance(e, runtime) and not isinstance(e, _jaxlib.NoGpu) else EXIT_USAGE)
    sys.stdout.flush()
    sys.exit(code)


def _help_or_version(parsed: Any, prog: str, synopsis: str, description: str,
                     flags: list[Flag], *, xla: bool = True) -> bool:
    if parsed.help:
        sys.stdout.write(usage(prog, synopsis, description, flags, xla_flags=xla))
        return True
    if parsed.version:
        sys.stdout.write(_version(prog))
        return True
    return False


def _debug_flags(parsed: Any, options_file: str) -> dict[str, Any]:
    """DebugOptions: --debug_options_file, then XLA_FLAGS, then the command line."""
    from . import xla_flags

    file_flags = xla_flags.from_file_checked(options_file) if options_file else {}
    return xla_flags.merge(file_flags, xla_flags.from_environment(), dict(parsed.xla_flags))


def _gpu_spec(path: str) -> Any:
    """``--xla_gpu_target_config_filename``: a spec file, or a shipped one of that name.

    XLA's documentation names ``/xla/tools/hlo_opt/gpu_specs/NAME.txtpb``, a
    path in XLA's source tree: where that path does not exist but NAME is a
    shipped spec, the shipped one is used, with a note.
    """
    from . import gpu_specs

    p = Path(path)
    if not p.exists() and p.stem in gpu_specs.shipped_names():
        sys.stderr.write(f"note: {path} does not exist: using the shipped spec '{p.stem}'\n")
        spec = gpu_specs.resolve_spec(p.stem)
    else:
        spec = gpu_specs.resolve_spec(path)
    for note in spec.notes:  # fields XLA needs filled in, fields of a newer XLA left out
        sys.stderr.write(note + "\n")
    return spec


def _autotune_file(path: str, keep: list[Any]) -> str:
    """An autotune results file XLA reads by its content, whatever its extension.

    XLA picks text or binary from the extension (.txt/.textproto/.prototxt/.pbtxt
    are text); ``results.textpb`` from XLA's own documentation would be read
    as binary. A copy with the extension matching the content is passed on.
    """
    import tempfile

    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise FlagError("no such autotune results file", file=path) from None
    except OSError as e:
        raise FlagError(e.strerror or str(e), file=path) from None
    try:
        text = data.decode()
        is_text = not any(ch in text for ch in "\x00\x01\x02\x03\x04\x05\x06\x07")
    except UnicodeDecodeError:
        is_text = False
    suffix = ".pbtxt" if is_text else ".pb"
    if path.endswith((".txt", ".textproto", ".prototxt", ".pbtxt") if is_text else (".pb",)):
        return path
    tmp = tempfile.NamedTemporaryFile(prefix="mlirhlo-autotune-", suffix=suffix)
    tmp.write(data)
    tmp.flush()
    keep.append(tmp)  # removed when the command ends
    return tmp.name


_INPUT_FORMATS = {"hlo": "hlo", "txt": "hlo", "text": "hlo", "pb": "hlo-proto", "proto_binary": "hlo-proto",
                  "pbtxt": "hlo-pbtxt", "proto_text": "hlo-pbtxt", "stablehlo": "mlir", "mhlo": "mlir",
                  "mlir": "mlir", "bytecode": "bytecode", "vhlo": "vhlo"}


def _input_format(name: str, flag: str) -> str | None:
    if not name:
        return None
    fmt = _INPUT_FORMATS.get(name.lower())
    if fmt is None:
        raise DriverError(f"--{flag}={name}: unknown input format",
                          hint=did_you_mean(name, _INPUT_FORMATS) or "one of hlo, pb, pbtxt, stablehlo, mhlo")
    return fmt


def _emit(output: str, data: str | bytes) -> None:
    from . import outputs

    if output in ("", "-"):
        outputs.write_stdout(data)
    else:
        outputs.write_atomic(output, data)


# ===================================================================== hlo-opt

HLO_OPT_FLAGS = [
    Flag("o", "str", "-", "Output file, or '-' for stdout.", "FILE"),
    Flag("platform", "str", "", "Compile for CPU (also Host) or CUDA (also GPU; device-less, from a "
         "GPU spec). Without it, --stage=hlo prints the module as read and --passes/--list-passes "
         "use the CPU pipeline, then the CUDA one.", "NAME"),
    Flag("format", "str", "", "Input format, by default from the content: hlo, pb, pbtxt "
         "(HloProto or HloModuleProto), also stablehlo, mhlo, bytecode, vhlo.", "NAME"),
    Flag("stage", "str", "hlo", "Output stage (see --list-stages): hlo (after optimizations), "
         "hlo-backend, html, buffer-assignment, llvm, llvm-before-optimizations, ptx, ...", "NAME"),
    Flag("list-stages", "bool", False, "Print the stages of --platform and exit."),
    Flag("split-input-file", "bool", False, "Split the input on '// -----' lines; each piece is a module."),
    Flag("passes", "str", "", "Comma list of XLA HLO passes to run (names as --list-passes prints "
         "them); xla:NAME or mlir:NAME picks the world of a name both have.", "LIST"),
    Flag("list-passes", "bool", False, "Print XLA's HLO pass names per platform pipeline and exit."),
    Flag("emit-proto", "bool", False, "Print the module as an HloProto textproto; no passes run."),
    Flag("debug_options_file", "str", "", "DebugOptions textproto; below XLA_FLAGS and the "
         "command line in precedence.", "FILE"),
]

_HLO_OPT_DESCRIPTION = """
Reads HLO (text, HloProto binary or text) or StableHLO from FILE ('-': stdin)
and prints it at a stage of XLA's compile for --platform, or after the XLA
passes named by --passes. CUDA compiles are device-less: the GPU comes from
--xla_gpu_target_config_filename (a GpuTargetConfigProto; the shipped specs
may be named by file name) or defaults to h100_sxm.
"""


def hlo_opt_main(argv: list[str] | None = None) -> None:
    """Console script ``hlo-opt``."""
    _entry("hlo-opt", _hlo_opt, argv)


def _hlo_opt(argv: list[str]) -> int:
    p = parse(argv, HLO_OPT_FLAGS)
    if _help_or_version(p, "hlo-opt", "[FLAGS] FILE...", _HLO_OPT_DESCRIPTION, HLO_OPT_FLAGS):
        return 0
    from . import stages as stage_registry

    flags = _debug_flags(p, p["debug_options_file"])
    platform = xla_platform(p["platform"]) if p["platform"] else None
    if platform == "interpreter":
        raise DriverError("--platform=Interpreter: jaxlib has no XLA interpreter backend",
                          hint="use CPU or CUDA; run_hlo_module's reference is the StableHLO interpreter")
    keep: list[Any] = []
    spec = None
    config = flags.pop("xla_gpu_target_config_filename", None)
    if config:
        spec = _gpu_spec(str(config))
        if platform is None:
            platform = "cuda"
        elif platform != "cuda":
            raise DriverError("--xla_gpu_target_config_filename is for --platform=CUDA")
    autotune = flags.get("xla_gpu_load_autotune_results_from")
    if autotune:
        flags["xla_gpu_load_autotune_results_from"] = _autotune_file(str(autotune), keep)
    if flags:
        from . import xla_flags

        xla_flags.check_names(flags, xla_flags.known_names())

    if p["list_stages"]:
        # Without a platform only the module itself can be printed, as XLA's transforms provider.
        names = sorted(s.name for s in stage_registry.available(platform)) if platform else ["hlo"]
        sys.stdout.write("\n".join(names) + "\n")
        return 0
    if p["list_passes"]:
        sys.stdout.write(list_xla_passes(platform, spec, flags))
        return 0
    if not p.positionals:
        raise DriverError("no input file given", hint="hlo-opt [FLAGS] FILE; see --help")
    if flags.get("xla_dump_to") and (p["emit_proto"] or (platform is None and not p["passes"])):
        raise DriverError("--xla_dump_to needs an XLA compile: give --platform or --passes")
    if p["o"] not in ("", "-"):
        from . import outputs

        outputs.check_output_path(p["o"])
    from . import inputs as loader

    modules = loader.load_inputs(p.positionals, input_format=_input_format(p["format"], "format"),
                                 split_input_file=p["split_input_file"])
    results: list[str | bytes] = []
    arts: list[Any] = []  # XLA compiles, for --xla_dump_to
    if p["emit_proto"]:
        results = [hlo_proto_text(m) for m in modules]
    elif p["passes"]:
        for m in modules:
            results.append(run_passes(m, p["passes"], platform, spec, flags, arts))
    else:
        stage = p["stage"]
        if platform is None:
            if stage != "hlo":
                stage_registry.get(stage, None)  # XLA stages need --platform: says so, with a hint
                results = [stage_registry.StageRequest(m.module, m.name, stage_registry.StageOptions())
                           .produce(stage) for m in modules]
            else:
                results = [_hlo_text(m) for m in modules]
        else:
            options = _stage_options(platform, spec, flags)
            stage_registry.get(stage, platform)  # validate before any compile
            requests = [stage_registry.StageRequest(m.module, m.name, options) for m in modules]
            # a multi-file stage (cubin) gives its one file here, or says to use opt --dump-dir
            results = [stage_registry.single_output(stage_registry.get(stage, platform), r.produce(stage))
                       for r in requests]
            arts = [r.artifacts() for r in requests] if flags.get("xla_dump_to") else []
    if flags.get("xla_dump_to"):
        if not arts:
            raise DriverError("--xla_dump_to needs an XLA compile: give --platform or --passes")
        for i, art in enumerate(arts, 1):
            write_xla_dump(str(flags["xla_dump_to"]), art, i)
    if len(results) == 1 and isinstance(results[0], bytes):
        _emit(p["o"], results[0])
    else:
        if any(isinstance(r, bytes) for r in results):
            raise DriverError("several modules at a binary stage: give one module")
        _emit(p["o"], "".join(r if r.endswith("\n") else r + "\n" for r in results))  # type: ignore[union-attr]
    return 0


def _stage_options(platform: str, spec: Any, flags: dict[str, Any]) -> Any:
    from . import stages as stage_registry

    if platform == "cuda" and spec is None:
        from . import gpu_specs

        spec = gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC)
        sys.stderr.write(f"note: no --xla_gpu_target_config_filename: compiling for {spec.name} "
                         f"({spec.gpu}, {spec.sm})\n")
    return stage_registry.StageOptions(platform=platform, gpu_spec=spec,
                                       xla_flags=tuple(sorted(flags.items())))


def _hlo_text(m: Any) -> str:
    from . import emit

    return emit.hlo_text_from_proto(m.hlo_proto) if m.hlo_proto else emit.hlo_text(m.module)


def hlo_proto_text(m: Any) -> str:
    """The module as XLA's ``hlo-opt --emit-proto`` prints it: an HloProto textproto."""
    from . import emit
    from . import hlo_proto as codec

    proto = m.hlo_proto or emit.hlo_proto(m.module)
    wrapper = codec.message_class("HloProto")()
    wrapper.hlo_module.CopyFrom(codec.decode(proto, "HloModuleProto"))
    return codec.to_text(wrapper)


def write_xla_dump(directory: str, art: Any, number: int) -> None:
    """What XLA dumped for one compile, in its ``--xla_dump_to`` layout:
    ``module_NNNN.<name>.<what>`` (NNNN counts the modules of this command,
    where XLA uses a process-wide counter)."""
    from . import outputs

    import re

    for key, data in art.files.items():
        # Keys are XLA's names less their module_NNNN.<name>. prefix (xla_backend).
        name = re.sub(r"^module_\d+\.", f"module_{number:04d}.", key) if key.startswith("module_") \
            else f"module_{number:04d}.{art.hlo_module_name}.{key}"
        outputs.write_atomic(Path(directory) / name, data)


# -------------------------------------------------------------- XLA passes

# Passes XLA adds to its pipeline only when a flag asks for them.
_GATED_PASSES = {
    # gpu_compiler.cc: added when the distance threshold is > 0 (XLA's default is 0).
    "schedule-aware-collective-cse": ("xla_gpu_experimental_collective_cse_distance_threshold", 100),
}


def _split_pass_names(spec: str) -> tuple[list[str], list[str]]:
    """(XLA names, MLIR names) from ``--passes``; unprefixed names are XLA's."""
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


def run_passes(m: Any, spec: str, platform: str | None, gpu_spec: Any, flags: dict[str, Any],
               arts: list[Any] | None = None) -> str:
    """``hlo-opt --passes``: XLA's HLO passes on the module, printed as HLO.

    jaxlib runs XLA passes only inside a platform's pipeline: the pipeline of
    ``platform`` is used, or, without one, the CPU pipeline and then the
    device-less CUDA one, the first that runs every named pass. Names only
    MLIR knows (or ``mlir:NAME``) run as MLIR passes instead.
    """
    xla_names, mlir_names = _split_pass_names(spec)
    if xla_names and mlir_names:
        raise DriverError("--passes mixes XLA and MLIR passes: run them in two steps",
                          hint=f"XLA: {','.join(xla_names)}; MLIR: {','.join(mlir_names)}")
    if xla_names:
        try:
            return xla_passes_hlo(m, xla_names, platform, gpu_spec, flags, arts)
        except DriverError:
            # Names XLA's pipelines do not run but MLIR has resolve to MLIR
            # (unless forced with xla:); XLA's error stands otherwise.
            from . import passes as mlir_passes

            catalog = mlir_passes.all_passes()
            if any(raw.strip().startswith("xla:") for raw in spec.split(",")) \
                    or not all(n in catalog for n in xla_names):
                raise
            sys.stderr.write(f"note: {', '.join(xla_names)}: not in XLA's pipelines; run as MLIR passes\n")
            mlir_names = xla_names
    from . import emit, pipeline

    root = pipeline.resolve(None, passes=",".join(mlir_names))
    pipeline.run(m.module, root, module_name=m.name, source_for_reproducer=m.source)
    return emit.stablehlo_text(m.module)


def xla_passes_hlo(m: Any, names: list[str], platform: str | None, gpu_spec: Any,
                   flags: dict[str, Any], arts: list[Any] | None = None) -> str:
    """HLO after XLA's passes ``names``, run alone in the first pipeline that has
    them all; the compile that ran them is appended to ``arts``."""
    from dataclasses import replace

    from . import xla_backend

    flags = dict(flags)
    for n in names:
        gate = _GATED_PASSES.get(n)
        if gate and not flags.get(gate[0]):
            sys.stderr.write(f"note: XLA adds {n} to its pipeline only with --{gate[0]} > 0: "
                             f"using {gate[1]}\n")
            flags[gate[0]] = gate[1]
    tried: list[str] = []
    platforms = [platform] if platform else ["cpu", "cuda"]
    dump_all = (("xla_dump_hlo_pass_re", ".*"),)
    for plat in platforms:
        options = _stage_options_quiet(plat, gpu_spec, flags)
        full = xla_backend.compile_module(m.module, m.name, replace(options, xla_flags=options.xla_flags + dump_all),
                                          keep_going=True)
        known = xla_backend.passes_by_pipeline(full)
        seen = {p for ps in known.values() for p in ps}
        missing = [n for n in names if n not in seen]
        label = plat if plat == "cpu" else f"{plat} ({options.gpu_spec.name})"
        if missing:
            tried.append(f"{label}: {', '.join(missing)} did not run")
            continue
        # A pass runs only if its enclosing pipelines are enabled too. Enabling just
        # the pipelines that hold the passes keeps other passes from running; a
        # pipeline nested in another one needs them all enabled.
        holding = sorted(pipe for pipe, ps in known.items() if any(n in ps for n in names))
        for pipes in (holding, sorted(known)):
            only = ",".join(names + pipes)
            art = xla_backend.compile_module(
                m.module, m.name,
                replace(options, xla_flags=options.xla_flags + dump_all + (("xla_enable_hlo_passes_only", only),)),
                keep_going=True)
            ran = {d.pipeline for d in xla_backend.pass_dumps(art)}
            if all(pipe in ran for pipe in holding):
                break
        if arts is not None:
            arts.append(art)
        return xla_backend.hlo_after_only(art, names)
    raise DriverError("XLA passes not run: " + "; ".join(tried),
                      hint="jaxlib runs XLA passes only inside a platform pipeline, and only where the "
                           "module gives them work; see hlo-opt --list-passes")


def _stage_options_quiet(platform: str, spec: Any, flags: dict[str, Any]) -> Any:
    from . import gpu_specs
    from . import stages as stage_registry

    if platform == "cuda" and spec is None:
        spec = gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC)
    return stage_registry.StageOptions(platform=platform, gpu_spec=spec if platform == "cuda" else None,
                                       xla_flags=tuple(sorted(flags.items())))


# What --list-passes compiles: XLA lists the passes that ran and changed it, so
# it holds the ops many passes look for (dot, reduce, transpose, collectives,
# reduce-window, scatter).
_LIST_PASSES_HLO = """HloModule reference, num_partitions=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[32,64] parameter(0)
  w = f32[64,16] parameter(1)
  dot = f32[32,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[32,16] tanh(dot)
  tt = f32[16,32] transpose(t), dimensions={1,0}
  zero = f32[] constant(0)
  sum = f32[16] reduce(tt, zero), dimensions={1}, to_apply=add
  b = f32[16,32] broadcast(sum), dimensions={0}
  centered = f32[16,32] subtract(tt, b)
  ag0 = f32[32,32] all-gather(centered), dimensions={0}, replica_groups={{0,1}}, channel_id=1, use_global_device_ids=true
  ag1 = f32[32,32] all-gather(centered), dimensions={0}, replica_groups={{0,1}}, channel_id=2, use_global_device_ids=true
  v = f32[1024] parameter(2)
  cumsum = f32[1024] reduce-window(v, zero), window={size=1024 pad=1023_0}, to_apply=add
  idx = s32[3] parameter(3)
  upd = f32[3] parameter(4)
  scattered = f32[1024] scatter(cumsum, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT out = (f32[32,32], f32[32,32], f32[1024]) tuple(ag0, ag1, scattered)
}
"""


def list_xla_passes(platform: str | None, spec: Any, flags: dict[str, Any]) -> str:
    """XLA's HLO pass names, per pipeline, for each platform's pipeline.

    Read from XLA's per-pass dumps of a reference module: jaxlib has no pass
    registry, so a pass that never changes that module may be missing.
    """
    from dataclasses import replace

    from . import xla_backend
    from .inputs import LoadedModule

    from . import _jaxlib
    from .inputs import parse_mlir

    proto = _jaxlib.hlo_text_to_proto(_LIST_PASSES_HLO)
    ref = LoadedModule("reference", "<built-in>", "hlo",
                       parse_mlir(_jaxlib.hlo_proto_to_stablehlo_bytecode(proto), "<reference>"))
    lines = []
    for plat in [platform] if platform else ["cpu", "cuda"]:
        options = _stage_options_quiet(plat, spec, flags)
        art = xla_backend.compile_module(
            ref.module, ref.name, replace(options, xla_flags=options.xla_flags + (("xla_dump_hlo_pass_re", ".*"),)),
            keep_going=True)
        label = plat if plat == "cpu" else f"{plat} ({options.gpu_spec.name})"
        lines.append(f"# XLA HLO passes of the {label} pipeline (--platform={plat.upper()}), by pipeline")
        for pipe, names in xla_backend.passes_by_pipeline(art).items():
            if names:
                lines.append(f"{pipe}:")
                lines.extend(f"  {n}" for n in names)
                if plat == "cuda" and pipe == "collective-optimizations":
                    lines.extend(f"  {n} (with --{flag} > 0)" for n, (flag, _) in _GATED_PASSES.items())
        lines.append("")
    return "\n".join(lines)


# ============================================================== run_hlo_module

RUN_HLO_MODULE_FLAGS = [
    Flag("platform", "str", "CPU", "Test platform: CPU (Host), or CUDA (GPU; needs a GPU).", "NAME"),
    Flag("reference_platform", "str", "default", "Reference: Interpreter (also 'default': the StableHLO "
         "reference interpreter), CPU, or '' for none.", "NAME"),
    Flag("print_literals", "bool", False, "Print the input and result literals."),
    Flag("run_test_hlo_passes", "bool", True, "Run XLA's HLO passes on the test platform; false for an "
         "optimized module (sets --xla_disable_all_hlo_passes for the test compile)."),
    Flag("use_large_float_range", "bool", False, "Random floats over a large range, not +-1."),
    Flag("abs_error_bound", "float", 1e-3, "Absolute error bound of the comparison.", "X"),
    Flag("rel_error_bound", "float", 1e-3, "Relative error bound of the comparison.", "X"),
    Flag("input_format", "str", "", "hlo, pb or pbtxt (default: from the content); also stablehlo, mhlo.",
         "NAME"),
    Flag("input_module", "str", "", "The module file (instead of a positional FILE).", "FILE"),
    Flag("iterations", "int", 1, "Run the module N times, each on new random inputs (or that iteration's "
         "literals from --input_literals_file).", "N"),
    Flag("debug_options_file", "str", "", "DebugOptions textproto; below XLA_FLAGS and the command line.",
         "FILE"),
    Flag("input_literals_file", "str", "", "A RunHloModuleLiterals file (binary or text): iteration i runs "
         "on its iteration i's arguments (the last ones when it has fewer).", "FILE"),
    Flag("output_literals_file", "str", "", "Write the arguments, result and reference result as a "
         "RunHloModuleLiterals file (text for .pbtxt/.txt, else binary).", "FILE"),
]

_RUN_DESCRIPTION = """
Compiles each module with XLA for --platform, runs it on random inputs and
compares the results against --reference_platform. Several files (globs, XLA
dump directories) give one report each, then a summary. Exit 0 when all
match, 1 on a mismatch or failure, 2 for bad usage or input.
"""


def run_hlo_module_main(argv: list[str] | None = None) -> None:
    """Console script ``run_hlo_module``."""
    _entry("run_hlo_module", _run_hlo_module, argv)


def _run_hlo_module(argv: list[str]) -> int:
    p = parse(argv, RUN_HLO_MODULE_FLAGS)
    if _help_or_version(p, "run_hlo_module", "[FLAGS] FILE...", _RUN_DESCRIPTION, RUN_HLO_MODULE_FLAGS):
        return 0
    from . import run as runner
    from . import run_report

    flags = _debug_flags(p, p["debug_options_file"])
    if flags:
        from . import xla_flags

        xla_flags.check_names(flags, xla_flags.known_names())
    if not p["run_test_hlo_passes"]:
        flags["xla_disable_all_hlo_passes"] = True
    platform = xla_platform(p["platform"])
    if platform == "interpreter":
        raise DriverError("--platform=Interpreter: jaxlib has no XLA interpreter backend",
                          hint="the StableHLO interpreter is the reference: --reference_platform=Interpreter")
    ref = p["reference_platform"]
    reference = "none" if ref == "" else ("interpreter" if ref.lower() == "default"
                                          else xla_platform(ref, "reference_platform"))
    if reference == "cuda":
        raise DriverError("--reference_platform=CUDA is not supported here", hint="Interpreter or CPU")
    inputs = ([p["input_module"]] if p["input_module"] else []) + p.positionals
    if not inputs:
        raise DriverError("no input module given", hint="run_hlo_module [FLAGS] FILE; see --help")
    if p["iterations"] < 1:
        raise DriverError("--iterations must be >= 1")
    for name in ("abs_error_bound", "rel_error_bound"):
        if not p[name] >= 0:
            raise DriverError(f"--{name} must be a number >= 0")
    keep: list[Any] = []
    snapshots: dict[str, str] = {}  # module file written from an HloSnapshot -> its arguments (.npz)
    paths = []
    from . import inputs as loader

    for path in loader.expand_inputs(inputs):
        snap = _snapshot_module(path, keep)
        if snap is not None:
            snapshots[snap[0]] = snap[1]
        paths.append(snap[0] if snap else path)
    tasks = run_report.run_tasks(paths, _input_format(p["input_format"], "input_format"), False, None)
    for t in tasks:
        replicas, partitions = _header_counts(t.source)
        if (replicas or 1) > 1 or (partitions or 1) > 1:
            sys.stderr.write(f"note: {t.source}: replica_count={replicas or 1}, num_partitions={partitions or 1}: "
                             "run here on one device; multihost_hlo_runner runs it partitioned\n")
    if (p["input_literals_file"] or p["output_literals_file"]) and len(tasks) != 1:
        raise DriverError("--input_literals_file and --output_literals_file are for one module")
    if p["output_literals_file"]:
        from . import outputs

        outputs.check_output_path(p["output_literals_file"])
    literal_args = (_literal_arguments(p["input_literals_file"]) if p["input_literals_file"] else [])
    if platform == "cuda":
        from . import _jaxlib

        _jaxlib.cuda_devices()  # no GPU: one clear error now
    from dataclasses import replace

    options = runner.RunOptions(
        platform=platform, reference=reference, large_float_range=p["use_large_float_range"],
        rtol=p["rel_error_bound"], atol=p["abs_error_bound"],
        keep_outputs=p["print_literals"] or bool(p["output_literals_file"]),
        xla_flags=tuple(sorted(flags.items())))
    xla_words = [f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in sorted(flags.items())]
    runs: list[Any] = []
    recorded = []  # (arguments, result, reference result) per iteration, for --output_literals_file
    for it in range(p["iterations"]):
        if p["iterations"] != 1:
            sys.stderr.write(f"\n=== Iteration {it + 1}\n")
            sys.stderr.flush()
        # As XLA: each iteration draws new inputs, or takes that iteration's literals.
        inputs_npz = _npz(literal_args[min(it, len(literal_args) - 1)], keep) if literal_args else None
        opts = replace(options, seed=it, inputs_npz=inputs_npz)
        reports = run_report.execute_tasks([t for t in tasks if t.source not in snapshots], opts, 1, None)
        for t in tasks:
            if t.source in snapshots:  # replayed with the arguments the snapshot recorded
                reports += run_report.execute_tasks([t], replace(opts, inputs_npz=snapshots[t.source]), 1, None)
        for r in reports if inputs_npz else []:
            r.inputs_note = (r.inputs_note or "").replace(inputs_npz, p["input_literals_file"])
        if len(reports) == 1 and reports[0].status == "invalid":
            raise DriverError(reports[0].message)
        if reports[0].outputs is not None:
            r = reports[0]
            recorded.append((list(r.inputs or []), list(r.outputs), r.reference_outputs))
        run_report.print_run_reports(reports, opts, p["print_literals"], extra_flags=xla_words)
        runs += reports
    if p["output_literals_file"] and recorded:
        from . import literals, outputs

        outputs.write_atomic(p["output_literals_file"],
                             literals.literals_file(recorded, p["output_literals_file"]))
    if reference != "none":
        failed = sum(not r.passed for r in runs)
        sys.stderr.write(f"{failed}/{len(runs)} runs miscompared.\n")
    if any(r.status == "invalid" for r in runs):
        return EXIT_USAGE
    return 0 if all(r.passed for r in runs) else EXIT_FAILURE


def _snapshot_module(path: str, keep: list[Any]) -> tuple[str, str] | None:
    """An HloSnapshot file (XLA's ``*.snapshot.*.pb`` dumps) as (module file, arguments .npz).

    The snapshot holds the module after XLA's optimizations, whose fusions
    jaxlib cannot compile again (its HLO import drops their backend configs).
    So where the dump has the same module before optimizations beside it
    (``module_NNNN.<name>.before_optimizations.txt``), that one runs, on the
    recorded arguments. None for files that are no snapshot.
    """
    import tempfile

    import numpy as np

    from . import inputs as loader
    from . import literals, protos

    p = Path(path)
    if not p.is_file() or p.suffix != ".pb":
        return None
    data = p.read_bytes()
    try:
        loader.detect_format(data, path)
        return None
    except DriverError:
        pass
    try:
        snap = protos.message_class("xla.HloSnapshot").FromString(data)
    except Exception:
        return None
    module = snap.hlo.hlo_module
    if not module.name or not module.computations:
        return None
    arrays = [literals.to_array(a, f"{path}: argument {i}") for i, a in enumerate(snap.arguments)]
    d = tempfile.TemporaryDirectory(prefix="mlirhlo-snapshot-")
    keep.append(d)
    before = p.with_name(p.name.split(".snapshot.")[0] + ".before_optimizations.txt")
    if ".snapshot." in p.name and before.is_file():
        sys.stderr.write(f"note: {path}: running {before.name} on the recorded arguments\n")
        module_file = before
    else:
        module_file = Path(d.name) / (p.name[: -len(".pb")] + ".pb")
        module_file.write_bytes(module.SerializeToString())
    npz = Path(d.name) / "arguments.npz"
    np.savez(npz, *arrays)
    return str(module_file), str(npz)


def _literal_arguments(path: str) -> list[list[Any]]:
    from . import literals

    return literals.read_iteration_arguments(path)


def _npz(arrays: list[Any], keep: list[Any]) -> str:
    """Arrays as the .npz ``run`` reads (arr_0, arr_1, ...: matched by position)."""
    import tempfile

    import numpy as np

    tmp = tempfile.NamedTemporaryFile(prefix="mlirhlo-literals-", suffix=".npz")
    np.savez(tmp, *arrays)
    tmp.flush()
    keep.append(tmp)
    return tmp.name


# ======================================================== multihost_hlo_runner

# Any values are valid for uninitialized buffers: zeros stand in for them.
_ARGUMENT_MODES = {"use_random_inputs": "random", "use_shared_random_inputs": "shared-random",
                   "use_zeros_as_input": "zeros", "use_device_id_as_input": "device-id",
                   "uninitialized": "zeros"}

MULTIHOST_FLAGS = [
    Flag("num_replicas", "int", -1, "Replicas (default: the module's replica_count, else 1).", "N"),
    Flag("num_partitions", "int", -1, "Partitions (default: the module's num_partitions, else 1).", "N"),
    Flag("use_spmd_partitioning", "bool", False, "Partition with XLA's SPMD partitioner (on whenever "
         "partitions > 1 here)."),
    Flag("is_spmd_partitioned_module", "bool", False, "The module is already partitioned (per-device shapes)."),
    Flag("run_xla_backend_only", "bool", False, "Compile with XLA's backend only (an optimized module)."),
    Flag("hlo_argument_mode", "str", "use_random_inputs", "Inputs: " + ", ".join(_ARGUMENT_MODES) + ".",
         "NAME", tuple(_ARGUMENT_MODES)),
    Flag("num_repeats", "int", 1, "Run N times; print each run's time.", "N"),
    Flag("input_format", "str", "", "text, proto_text or proto_binary (default: from the content).", "NAME"),
    Flag("hlo_file", "str", "", "The module file (instead of a positional FILE).", "FILE"),
    Flag("device_type", "str", "host", "Devices to run on: host (CPU devices this process creates); "
         "gpu is not available here.", "NAME", ("host", "cpu", "gpu")),
    Flag("task_id", "int", 0, "This process's number, 0 to --num_nodes - 1.", "N"),
    Flag("num_nodes", "int", 1, "Processes (hosts) of a distributed run; with --address and --task_id, "
         "one command per host.", "N"),
    Flag("address", "str", "", "HOST:PORT of task 0's coordinator (for --num_nodes > 1).", "HOST:PORT"),
    Flag("enable_mock_nccl", "bool", False, "Simulate --num_nodes hosts on this machine: that many "
         "processes on 127.0.0.1, on host devices."),
    Flag("run", "bool", True, "Run the module; --run=false (or --norun) only compiles it."),
    Flag("log_output", "bool", False, "Print the output values."),
    Flag("debug_options_file", "str", "", "DebugOptions textproto; below XLA_FLAGS and the command line.",
         "FILE"),
]

_MULTIHOST_DESCRIPTION = """
Runs each module SPMD-partitioned on replicas x partitions host devices in
this process, gathers the outputs to full arrays and compares them with the
module run on one device. Partition and replica counts come from the module's
header unless given. For several processes, use 'mlirhlo spmd-run'.
"""


def multihost_main(argv: list[str] | None = None) -> None:
    """Console scripts ``multihost_hlo_runner`` and ``hlo_runner_main``."""
    _entry("multihost_hlo_runner", _multihost, argv)


def _header_counts(path: str) -> tuple[int | None, int | None]:
    """(replica_count, num_partitions) from an HLO text module's header line."""
    import re

    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16).decode(errors="replace")
    except OSError:
        return None, None
    m = re.search(r"^HloModule\s+[^\n]*", head, re.M)
    if not m:
        return None, None
    rep = re.search(r"\breplica_count=(\d+)", m.group(0))
    part = re.search(r"\bnum_partitions=(\d+)", m.group(0))
    return (int(rep.group(1)) if rep else None), (int(part.group(1)) if part else None)


def _multihost_processes(p: Any, plans: list[tuple[str, Any]], fmt: str | None) -> int:
    """``--num_nodes`` processes, joined by JAX's distributed runtime (as ``mlirhlo spmd-run``)."""
    from . import inputs as loader
    from . import spmd

    if len(plans) != 1:
        raise DriverError("a run over several nodes takes one module")
    if not p["run"]:
        raise DriverError("--run=false is for one node")
    path, options = plans[0]
    nodes = p["num_nodes"]
    if options.num_devices % nodes:
        raise DriverError(f"{options.num_devices} devices cannot be split evenly over {nodes} nodes")
    spmd.check_devices_per_process(options, nodes)
    modules = loader.load(path, input_format=fmt)
    spmd.prepare(modules[0], options)  # a bad module is one error here, not one per process
    if p["enable_mock_nccl"]:
        address = f"127.0.0.1:{spmd.free_port()}"
        cfgs = spmd.worker_configs(path, fmt, None, options, num_processes=nodes,
                                   process_ids=list(range(nodes)), coordinator=address,
                                   timeout=300.0, dump_output=None)
        sys.stderr.write(f"note: {nodes} simulated nodes: processes on 127.0.0.1, coordinator {address}\n")
        return spmd.supervise(cfgs, prefixed=True)
    cfgs = spmd.worker_configs(path, fmt, None, options, num_processes=nodes, process_ids=[p["task_id"]],
                               coordinator=p["address"], timeout=300.0, dump_output=None)
    return spmd.supervise(cfgs, prefixed=False)


def _compile_only(loaded: Any, options: Any) -> str:
    """``--run=false``: partition and compile, report, run nothing."""
    import time

    from . import _jaxlib, spmd

    plan = spmd.prepare(loaded, options)
    start = time.perf_counter()
    spmd.compile_plan(plan, options, _jaxlib.local_device_order()[: options.num_devices])
    return (f"{loaded.name}: COMPILED ({options.num_replicas} replica x {options.num_partitions} partitions, "
            f"{(time.perf_counter() - start) * 1e3:.1f} ms); not run (--run=false)")


def _multihost(argv: list[str]) -> int:
    p = parse(argv, MULTIHOST_FLAGS)
    if _help_or_version(p, "multihost_hlo_runner", "[FLAGS] FILE...", _MULTIHOST_DESCRIPTION, MULTIHOST_FLAGS):
        return 0
    from dataclasses import replace

    from . import _jaxlib, spmd
    from . import inputs as loader

    flags = _debug_flags(p, p["debug_options_file"])
    if flags:
        from . import xla_flags

        xla_flags.check_names(flags, xla_flags.known_names())
    if p["device_type"].lower() == "gpu":
        raise DriverError("--device_type=gpu: SPMD runs here use host devices only (jaxlib 0.10.2)",
                          hint="--device_type=host")
    nodes = p["num_nodes"]
    if nodes < 1 or not 0 <= p["task_id"] < nodes:
        raise DriverError("--num_nodes must be >= 1 and --task_id 0 to --num_nodes - 1")
    if nodes > 1 and not p["enable_mock_nccl"] and not p["address"]:
        raise DriverError("--num_nodes > 1 needs --address=HOST:PORT (task 0's coordinator) and --task_id",
                          hint="or --enable_mock_nccl to simulate the hosts on this machine")
    inputs = ([p["hlo_file"]] if p["hlo_file"] else []) + p.positionals
    if not inputs:
        raise DriverError("no input module given", hint="multihost_hlo_runner [FLAGS] FILE; see --help")
    paths = loader.expand_inputs(inputs)
    fmt = _input_format(p["input_format"], "input_format")
    base = spmd.SpmdOptions(is_spmd_partitioned_module=p["is_spmd_partitioned_module"],
                            run_xla_backend_only=p["run_xla_backend_only"],
                            argument_mode=_ARGUMENT_MODES[p["hlo_argument_mode"]],
                            num_repeats=p["num_repeats"], xla_flags=tuple(sorted(flags.items())))
    plans = []
    for path in paths:
        rep, part = _header_counts(path)
        options = replace(base,
                          num_replicas=p["num_replicas"] if p["num_replicas"] > 0 else (rep or 1),
                          num_partitions=p["num_partitions"] if p["num_partitions"] > 0 else (part or 1))
        spmd.check_options(options)
        plans.append((path, options))
    if nodes > 1:
        return _multihost_processes(p, plans, fmt)
    # Host devices exist only if asked for before jax starts: the most any module needs.
    _jaxlib.ensure_cpu_devices(max(o.num_devices for _, o in plans))
    failed = 0
    for path, options in plans:
        modules = loader.load(path, input_format=fmt)
        if len(modules) != 1:
            raise DriverError("one module per file", file=path)
        try:
            if not p["run"]:
                sys.stdout.write(_compile_only(modules[0], options) + "\n")
                continue
            report = spmd.run_in_process(modules[0], options)
        except (CompileError, _jaxlib.ExecutionError) as e:
            sys.stdout.write(f"{path}: FAILED: {e.message}\n")
            failed += 1
            continue
        if len(plans) > 1:
            sys.stdout.write(f"== {path}\n")
        sys.stdout.write(spmd.format_report(report, values=p["log_output"]).rstrip("\n") + "\n")
        failed += not report.report.passed
    if len(plans) > 1:
        sys.stdout.write(f"{len(plans) - failed}/{len(plans)} modules passed\n")
    return EXIT_FAILURE if failed else 0


# ===================================================================== ptx-opt

PTX_OPT_FLAGS = [
    Flag("arch", "str", "9.0", "GPU compute capability X.Y (9.0, 8.0, 9.0a) or sm_XX.", "X.Y"),
    Flag("o", "str", "-", "Output file, or '-' for stdout.", "FILE"),
]

_PTX_DESCRIPTION = """
Runs LLVM's optimization pipeline on LLVM IR from FILE ('-': stdin) and
compiles it to PTX with LLVM's NVPTX backend. With --xla_dump_to=DIR and
--xla_gpu_dump_llvmir, the LLVM IR after each pass is written to DIR.
"""


def ptx_opt_main(argv: list[str] | None = None) -> None:
    """Console script ``ptx-opt``."""
    _entry("ptx-opt", _ptx_opt, argv)


def _ptx_opt(argv: list[str]) -> int:
    import re

    p = parse(argv, PTX_OPT_FLAGS)
    if _help_or_version(p, "ptx-opt", "[FLAGS] FILE", _PTX_DESCRIPTION, PTX_OPT_FLAGS):
        return 0
    from . import outputs
    from . import ptx as ptx_backend

    extra = dict(p.xla_flags)
    dump_to = extra.pop("xla_dump_to", None)
    dump_llvmir = extra.pop("xla_gpu_dump_llvmir", False)
    if extra:
        raise FlagError(f"--{next(iter(extra))} has no effect on ptx-opt",
                        hint="ptx-opt reads --xla_dump_to and --xla_gpu_dump_llvmir")
    if len(p.positionals) != 1:
        raise DriverError("give one LLVM IR file ('-' for stdin)", hint="ptx-opt --arch=9.0 FILE")
    source = p.positionals[0]
    text = ptx_backend.read_llvm_ir(source)
    if p["o"] not in ("", "-"):
        outputs.check_output_path(p["o"])
    dumps: list[tuple[str, str]] = []
    collect = bool(dump_to and dump_llvmir)
    out = []
    for name, offset, body in ptx_backend.split_llvm_modules(text):
        code = ptx_backend.compile_to_ptx(
            "\n" * offset + body, p["arch"], 3, filename=source,
            print_after_all=(lambda pass_name, ir, n=name: dumps.append((f"{n}.{pass_name}" if n else pass_name, ir)))
            if collect else None)
        out.append((f"// ----- {name} -----\n" if name else "") + code)
    if collect:
        stem = Path(source).stem if source != "-" else "stdin"
        for i, (pass_name, ir) in enumerate(dumps):
            safe = re.sub(r"[^\w.-]+", "_", pass_name)[:80]
            outputs.write_atomic(Path(str(dump_to)) / f"{stem}.{i:04d}.{safe}.ll", ir)
    _emit(p["o"], "".join(out))
    return 0
