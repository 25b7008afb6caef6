"""What XLA's tools do, given their parsed flags: ``hlo-opt``, ``run_hlo_module``,
``multihost_hlo_runner`` and ``ptx-opt`` (the front-ends, cli/xla/tools.py, parse
XLA's flag syntax and call these).

Each function takes the parsed flags by XLA's names (``p["platform"]``,
``p.xla_flags``, ``p.positionals``) with XLA's defaults, raises the package's
typed errors, and returns the exit status: 0, 1 when a module fails to
compile, run or match (``errors.EXIT_FAILURE``), 2 for bad usage or input.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import targets
from ..core.program import InputOptions, input_paths, programs, unit_programs
from ..errors import (
    EXIT_FAILURE,
    EXIT_USAGE,
    FLAGS,
    CompileError,
    DriverError,
    ExecutionError,
    FlagError,
    did_you_mean,
    log_note,
)
from ..execute import runner_files as files
from ..xla import tool_outputs
from ..xla.cli_flags import platform as xla_platform

# Any values are valid for uninitialized buffers: zeros stand in for them.
ARGUMENT_MODES = {"use_random_inputs": "random", "use_shared_random_inputs": "shared-random",
                   "use_zeros_as_input": "zeros", "use_device_id_as_input": "device-id",
                   "uninitialized": "zeros"}


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


def _xla_path(path: str) -> str:
    """A path as XLA's file layer reads it: cleaned lexically (tsl's CleanPath), so
    ``x.hlo/../y.pb`` is ``y.pb`` beside ``x.hlo``, as XLA's lit tests name their inputs;
    the path as given wherever the system resolves it."""
    import os

    if path == "-" or os.path.exists(path):
        return path
    clean = os.path.normpath(path)
    return clean if os.path.exists(clean) else path


# ===================================================================== hlo-opt

# Stages whose meaning in XLA's hlo-opt (xla/tools/hlo_opt/compiled_opt_lib.cc, gpu_opt.cc)
# is not mlirhlo opt's: 'hlo' is the module after the HLO passes, before the backend
# schedules it; 'ptx' the executable's PTX with XLA's modules joined; 'buffer-assignment'
# the statistics and peak buffers (ToVerboseString); 'html' a frame per entry instruction
# (xla/stages.py).
_HLO_OPT_STAGES = {"hlo": "hlo-opt:hlo", "ptx": "hlo-opt:ptx", "buffer-assignment": "hlo-opt:buffer-assignment",
                   "html": "hlo-opt:html"}

def hlo_opt(p: Any, say: Callable[[str], None] = log_note) -> int:
    """XLA's hlo-opt with its parsed flags ``p`` (XLA's names); the exit status. ``say``
    gets the notes for the user."""
    from .. import outputs, targets
    from .. import registry as stage_registry
    from ..core.compiled import Compiled
    from ..core.program import InputOptions, programs
    from ..xla import passes as xla_passes

    # A stage compile says which GPU it compiles for; listings and --passes need no spec.
    stage_compile = not (p["list_stages"] or p["list_passes"] or p["passes"] or p["emit_proto"])
    target = targets.resolve(p["platform"] or None, cli_flags=dict(p.xla_flags),
                             debug_options_file=p["debug_options_file"] or None, needs_spec=stage_compile,
                             xla_tool=True, spec_flag="--xla_gpu_target_config_filename",
                             tpu_topology=p["tpu_topology"] or None, topology_flag="--tpu_topology")
    platform, flags = target.platform, dict(target.xla_flags)
    # Without --platform, --passes and --list-passes try the CPU pipeline, then the CUDA one.
    candidates = [target.options_for(platform)] if platform else [target.options_for(pl) for pl in ("cpu", "cuda")]
    # XLA registers its hardware-independent passes for every platform: the other pipeline lends
    # those this one's lacks.
    lenders = [target.options_for(xla_passes.LENDERS[platform])] if platform in xla_passes.LENDERS else []

    if p["list_stages"]:
        # Without a platform only the module itself can be printed, as XLA's transforms provider.
        names = sorted(s.name for s in stage_registry.available(platform)) if platform else ["hlo"]
        sys.stdout.write("\n".join(names) + "\n")
        return 0
    if p["list_passes"]:
        target.say_notes(say)
        sys.stdout.write(xla_passes.comma_listing(candidates, lenders))
        return 0
    if not p.positionals:
        raise DriverError("no input file given", hint="hlo-opt [FLAGS] FILE; see --help")
    if flags.get("xla_dump_to") and (p["emit_proto"] or (platform is None and not p["passes"])):
        raise DriverError("--xla_dump_to needs an XLA compile: give --platform or --passes")
    sink = outputs.Sink(p["o"])
    sink.check()
    modules = programs([_xla_path(f) for f in p.positionals],
                       InputOptions(_input_format(p["format"], "format"), p["split_input_file"]))
    target.say_notes(say)
    results: list[str | bytes] = []
    arts: list[Any] = []  # XLA compiles, for --xla_dump_to
    notes: list[str] = []
    if p["emit_proto"]:
        results = [tool_outputs.hlo_proto_text(m.convert("hlo-proto")) for m in modules]
    elif p["passes"]:
        for i, m in enumerate(modules):
            trace = xla_passes.PassTrace()
            try:
                results.append(xla_passes.run_pass_list(m, p["passes"], candidates, arts, notes, trace, lenders))
            except CompileError as e:
                e.about(m.source)  # this module's compile failed: say which file
                raise
            if flags.get("xla_dump_to") and trace.given:  # XLA's hlo-opt's own dump, not the compiles'
                tool_outputs.write_pass_dump(str(flags["xla_dump_to"]), i, trace, flags)
        arts = []
    else:
        stage = p["stage"]
        if platform is None:
            if stage != "hlo":
                stage_registry.get(stage, None)  # XLA stages need --platform: says so, with a hint
                results = [m.stage(stage) for m in modules]
            else:
                results = [tool_outputs.hlo_text(m) for m in modules]
        else:
            partitions = p["num_partitions"] if p["num_partitions"] > 0 else None
            _, options = target.stage_options(num_partitions=partitions)[0]
            stage_registry.get(stage, platform)  # validate before any compile
            compiles = [Compiled(m, target, options) for m in modules]
            # XLA's hlo-opt's own meaning of a stage where it differs from mlirhlo opt's
            produced = _HLO_OPT_STAGES.get(stage, stage)
            for c in compiles:
                c.expect([produced])
            # a multi-file stage (cubin) gives its one file here, or says to use opt --dump-dir
            for m, c in zip(modules, compiles):
                if stage == "hlo" and tool_outputs.scheduled(m):
                    # XLA's hlo-opt takes a module with a schedule as optimized: its HLO
                    # passes do not run, and 'hlo' prints the module as given.
                    results.append(tool_outputs.hlo_text(m))
                    continue
                try:
                    out = c.output(produced)
                except DriverError as e:
                    e.about(m.source)  # this module's compile failed: say which file
                    raise
                results.append(tool_outputs.with_user_names(out, m) if stage in tool_outputs.HLO_STAGES
                               and isinstance(out, str) else out)
            notes += [n for c in compiles for n in c.notes_for(FLAGS)]
            arts = [c.artifacts() for c in compiles] if flags.get("xla_dump_to") else []
    for n in dict.fromkeys(notes):
        say(n)
    if flags.get("xla_dump_to") and not p["passes"]:
        if not arts:
            raise DriverError("--xla_dump_to needs an XLA compile: give --platform or --passes")
        for i, art in enumerate(arts, 1):
            tool_outputs.write_xla_dump(str(flags["xla_dump_to"]), art, i,
                                        pass_dumps="xla_dump_hlo_pass_re" in flags)
    if len(results) == 1 and isinstance(results[0], bytes):
        sink.emit(results[0])
    else:
        if any(isinstance(r, bytes) for r in results):
            raise DriverError("several modules at a binary stage: give one module")
        sink.emit("".join(r if r.endswith("\n") else r + "\n" for r in results))  # type: ignore[union-attr]
    sink.finish()
    return 0


# ============================================================== run_hlo_module

def run_hlo_module(p: Any, argv: list[str], say: Callable[[str], None] = log_note) -> int:
    """XLA's run_hlo_module with its parsed flags ``p`` (XLA's names); the exit status."""
    from ..batch import run_report
    from ..execute import run as runner

    flags = targets.debug_options(dict(p.xla_flags), p["debug_options_file"] or None)
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
    # XLA's reference compile skips its HLO passes when asked; the StableHLO
    # interpreter evaluates the module as given, so there is nothing to skip.
    reference_flags = {} if p["run_reference_hlo_passes"] else {"xla_disable_all_hlo_passes": True}
    if reference_flags and reference == "interpreter":
        say("--run_reference_hlo_passes=false: the StableHLO interpreter runs no HLO passes either way")
    if p["isolate_instructions"] and (p["input_literals_file"] or p["output_literals_file"]):
        # XLA: "Cannot run decomposed module if input literals are provided."
        raise DriverError("--isolate_instructions takes no --input_literals_file or --output_literals_file: "
                          "each instruction runs on inputs of its own")
    if p["isolate_instructions"] and (p["run_test_hlo_passes"] or
                                      (p["run_reference_hlo_passes"] and reference == "cpu")):
        say("--isolate_instructions with HLO passes: XLA suggests isolating an optimized "
            "module (hlo-opt) with --run_test_hlo_passes=false")
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
    for path in input_paths(inputs):
        snap = files.snapshot_module(path, keep, say)
        if snap is not None and not (p["force_fake_data"] or p["isolate_instructions"]):
            snapshots[snap[0]] = snap[1]
        elif snap is not None:
            say(f"{path}: ignoring the snapshot's recorded arguments; using fake data")
        paths.append(snap[0] if snap else path)
    from dataclasses import replace

    tasks = run_report.run_tasks(paths, _input_format(p["input_format"], "input_format"), False, None)
    for i, t in enumerate(tasks):
        replicas, partitions = files.header_counts(t.source)
        said = f"num_partitions={partitions}"
        if replicas is None and partitions is None:
            partitions = files.proto_partitions(t.source)
            said = f"its shardings name {partitions} devices"
        if (replicas or 1) > 1:
            say(f"{t.source}: replica_count={replicas or 1}, num_partitions={partitions or 1}: "
                "run here on one device; multihost_hlo_runner runs it partitioned")
        elif (partitions or 1) > 1 and not p["isolate_instructions"]:
            # As the module says: its shardings laid out over that many host devices.
            tasks[i] = replace(t, partitions=partitions)
            say(f"{t.source}: {said}: run SPMD-partitioned on {partitions} host devices")
    if (p["input_literals_file"] or p["output_literals_file"]) and len(tasks) != 1:
        raise DriverError("--input_literals_file and --output_literals_file are for one module")
    if p["output_literals_file"]:
        from .. import outputs

        outputs.check_output_path(p["output_literals_file"])
    literal_args = (files.literal_arguments(p["input_literals_file"]) if p["input_literals_file"] else [])
    _require_devices(platform, f"--platform={p['platform']}")
    options = runner.RunOptions(
        platform=platform, reference=reference, large_float_range=p["use_large_float_range"],
        # XLA's bounds (its flags' defaults, 1e-3 each, whatever the dtype) by XLA's rule: an
        # element matches within either (ErrorSpec), not only within their sum as mlirhlo run's.
        rtol=p["rel_error_bound"], atol=p["abs_error_bound"], xla_error_spec=True,
        # A TPU's bfloat16 passes (engine.platform_reference) widen XLA's default bounds, not the user's.
        platform_tolerance=not any(a.split("=")[0].lstrip("-") in ("abs_error_bound", "rel_error_bound")
                                   for a in argv),
        keep_outputs=p["print_literals"] or bool(p["output_literals_file"]),
        zeros=not p["random_init_input_literals"],
        xla_flags=tuple(sorted(flags.items())), reference_xla_flags=tuple(sorted(reference_flags.items())),
        host_devices=max([t.partitions for t in tasks] + [1]))
    xla_words = [f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in sorted(flags.items())]
    runs: list[Any] = []
    recorded = []  # (arguments, result, reference result) per iteration, for --output_literals_file
    for it in range(p["iterations"]):
        if p["iterations"] != 1:
            sys.stderr.write(f"\n=== Iteration {it + 1}\n")
            sys.stderr.flush()
        # As XLA: each iteration draws new inputs, or takes that iteration's literals.
        inputs_npz = files.npz(literal_args[min(it, len(literal_args) - 1)], keep) if literal_args else None
        opts = replace(options, seed=it, inputs_npz=inputs_npz)
        if p["isolate_instructions"]:
            reports = run_report.execute_isolated(tasks, opts)
            import shlex

            for r in reports:  # the isolated module has no file of its own: this command line again
                r.reproducer = "" if r.passed else " ".join(["run_hlo_module"] + [shlex.quote(a) for a in argv])
            run_report.print_run_reports(reports, opts, p["print_literals"], extra_flags=xla_words)
            runs += reports
            continue
        reports = run_report.execute_tasks([t for t in tasks if t.source not in snapshots], opts, 1, None)
        for t in tasks:
            if t.source in snapshots:  # replayed with the arguments the snapshot recorded
                reports += run_report.execute_tasks([t], replace(opts, inputs_npz=snapshots[t.source]), 1, None)
        task_partitions = {t.source: t.partitions for t in tasks}
        for r in reports:
            if r.passed:
                continue
            # mlirhlo run cannot express a reference without HLO passes, nor XLA's error bounds
            # (a mismatch by XLA's rule may be within mlirhlo run's --rtol + --atol)
            if reference_flags or r.status == "mismatch":
                import shlex

                r.reproducer = " ".join(["run_hlo_module"] + [shlex.quote(a) for a in argv])
            elif task_partitions.get(r.source, 1) > 1:
                r.reproducer = run_report.reproducer(r, opts, xla_words, task_partitions[r.source])
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
        from .. import outputs

        outputs.write_atomic(p["output_literals_file"], files.literals_file(recorded, p["output_literals_file"]))
    if reference != "none":
        failed = sum(not r.passed for r in runs)
        sys.stderr.write(f"{failed}/{len(runs)} runs miscompared.\n")
    if any(r.status == "invalid" for r in runs):
        return EXIT_USAGE
    return 0 if all(r.passed for r in runs) else EXIT_FAILURE


def _require_devices(platform: str, flag: str) -> None:
    """engine.require_devices, its TPU refusal said with the flag as typed (XLA's tools)."""
    from ..errors import NoGpu
    from ..execute import engine

    try:
        engine.require_devices(platform)
    except NoGpu as e:
        if platform != "tpu" or "no TPU is attached" not in e.message:
            raise
        raise NoGpu(f"{flag}: no TPU is attached here (none on the PCI bus)",
                    hint="hlo-opt --platform=TPU --stage=hlo FILE compiles device-less, as does mlirhlo opt "
                         "--platform tpu") from None


# ======================================================== multihost_hlo_runner

def _multihost_processes(p: Any, plans: list[tuple[str, Any]], fmt: str | None) -> int:
    """``--num_nodes`` processes, joined by JAX's distributed runtime (as ``mlirhlo spmd-run``)."""
    from ..execute import spmd

    if len(plans) != 1:
        raise DriverError("a run over several nodes takes one module")
    if not p["run"]:
        raise DriverError("--run=false is for one node")
    path, options = plans[0]
    nodes = p["num_nodes"]
    if options.num_devices % nodes:
        raise DriverError(f"{options.num_devices} devices cannot be split evenly over {nodes} nodes")
    spmd.check_devices_per_process(options, nodes)
    modules = programs([path], InputOptions(fmt))
    spmd.prepare(modules[0], options)  # a bad module is one error here, not one per process
    from .spmd_run import SpmdLaunch, launch_processes

    if p["enable_mock_nccl"]:
        launch = SpmdLaunch(source=path, input_format=fmt, launch_local=nodes)
        return launch_processes(launch, options, what="simulated nodes (processes on 127.0.0.1)")
    launch = SpmdLaunch(source=path, input_format=fmt, num_processes=nodes, process_id=p["task_id"],
                        coordinator=p["address"])
    return launch_processes(launch, options)


def multihost(p: Any, say: Callable[[str], None] = log_note) -> int:
    """XLA's multihost with its parsed flags ``p`` (XLA's names); the exit status."""
    from dataclasses import replace

    from ..execute import spmd

    flags = targets.debug_options(dict(p.xla_flags), p["debug_options_file"] or None)
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
    paths = input_paths(inputs)
    snapshot = p["input_format"].lower() == "snapshot_proto_binary"
    fmt = None if snapshot else _input_format(p["input_format"], "input_format")
    dump_to = p["dump_output_literal_to"]
    if dump_to:
        # XLA: "Can only dump output literal when single input file is specified"; its path must end in .txt.
        if len(paths) != 1:
            raise DriverError("--dump_output_literal_to is for one input module")
        if not dump_to.endswith(".txt"):
            raise DriverError(f"--dump_output_literal_to={dump_to}: the name must end in .txt (XLA writes "
                              "literal text)")
    execution, eo_path = None, p["execution_options_path"]
    if eo_path:
        execution = files.execution_options(eo_path)
        flags = {**files.execution_debug_flags(execution, eo_path), **flags}  # the command line wins

    platform = "tpu" if p["device_type"].lower() == "tpu" else "cpu"
    if platform == "tpu":
        if nodes > 1:
            raise DriverError("--device_type=tpu runs on the chips attached here, one node", hint="drop --num_nodes")
        _require_devices("tpu", f"--device_type={p['device_type']}")
    base = spmd.SpmdOptions(is_spmd_partitioned_module=p["is_spmd_partitioned_module"], platform=platform,
                            run_xla_backend_only=p["run_xla_backend_only"],
                            argument_mode=ARGUMENT_MODES[p["hlo_argument_mode"]],
                            num_repeats=p["num_repeats"], xla_flags=tuple(sorted(flags.items())))
    keep: list[Any] = []
    plans = []
    for path in paths:
        module_path, npz = path, None
        if snapshot:  # XLA's HloSnapshot: the module and the arguments it recorded
            snap = files.snapshot_module(path, keep, say)
            if snap is None:
                raise DriverError("not an HloSnapshot (binary)", file=path,
                                  hint="--input_format=text, proto_text or proto_binary for a module")
            module_path, npz = snap
        rep, part = files.header_counts(module_path)
        if p["num_replicas"] > 0 and p["num_partitions"] > 0:
            counts = (p["num_replicas"], p["num_partitions"])
        elif execution is not None:  # as XLA: ExecutionOptions unless both counts are given
            counts = (execution.num_replicas or 1, execution.num_partitions or 1)
        else:
            counts = (p["num_replicas"] if p["num_replicas"] > 0 else (rep or 1),
                      p["num_partitions"] if p["num_partitions"] > 0 else (part or 1))
        options = replace(base, num_replicas=counts[0], num_partitions=counts[1], inputs_npz=npz,
                          device_ids=files.device_ids(execution, *counts, eo_path) if execution is not None else ())
        spmd.check_options(options)
        plans.append((module_path, options))
    if nodes > 1:
        given = [f"--{n}" for n in ("dump_output_literal_to", "profile_execution", "while_execution_count",
                                     "execution_options_path", "input_format") if p.was_given(n)
                 and (n != "input_format" or snapshot)]
        if given:
            raise DriverError(f"{', '.join(given)}: for a run on one node here", hint="drop --num_nodes")
        return _multihost_processes(p, plans, fmt)
    failed = 0
    for path, options in plans:
        modules = programs([path], InputOptions(fmt))
        if len(modules) != 1:
            raise DriverError("one module per file", file=path)
        module = modules[0]
        proto = files.preprocess(module, p["remove_infeed_outfeed"], p["while_execution_count"], path, say)
        if proto is not None:
            fresh = unit_programs(module.name, InputOptions("hlo-proto"), data=proto)[0]
            fresh.source, module = module.source, fresh
        try:
            if not p["run"]:
                sys.stdout.write(files.compile_only(module, options) + "\n")
                continue
            report = spmd.run_in_process(module, options)
        except (CompileError, ExecutionError) as e:
            sys.stdout.write(f"{path}: FAILED: {e.message}\n")
            failed += 1
            continue
        if len(plans) > 1:
            sys.stdout.write(f"== {path}\n")
        if options.inputs_npz:  # a snapshot's recorded arguments, not a file the user gave
            report.report.inputs_note = "the arguments the HloSnapshot recorded"
        sys.stdout.write(spmd.format_report(report, values=p["log_output"]).rstrip("\n") + "\n")
        if p["profile_execution"]:
            for i, ms in enumerate(report.run_times):
                sys.stdout.write(f"## Execution time, file={path} repeat={i} duration={round(ms * 1e6)}ns\n")
        if dump_to:
            written = files.dump_output_literals(report, dump_to, p["task_id"])
            say(f"{len(written)} output literals written: {written[0]} ..."
                if len(written) > 1 else f"output literal written: {written[0]}")
        failed += not report.report.passed
    if len(plans) > 1:
        sys.stdout.write(f"{len(plans) - failed}/{len(plans)} modules passed\n")
    return EXIT_FAILURE if failed else 0


# ===================================================================== ptx-opt

def ptx_opt(p: Any) -> int:
    """XLA's ptx-opt with its parsed flags ``p`` (XLA's names); the exit status."""
    from .. import outputs
    from ..cuda import ptx as ptx_backend

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
    sink = outputs.Sink(p["o"])
    sink.check()
    collect = bool(dump_to and dump_llvmir)
    # As XLA's ptx-opt: no ptxas check, LLVM's -O3 first.
    compiled = ptx_backend.compile_llvm_ir(text, source, ptx_backend.PtxOptions(
        arch=p["arch"], opt_level=3, check_ptxas=False, dump_passes=collect))
    if collect:
        stem = Path(source).stem if source != "-" else "stdin"
        for i, (name, pass_name, ir) in enumerate(compiled.dumps):
            safe = re.sub(r"[^\w.-]+", "_", f"{name}.{pass_name}" if name else pass_name)[:80]
            sink.file(Path(str(dump_to)) / f"{stem}.{i:04d}.{safe}.ll", ir)
    sink.emit(compiled.text)
    sink.finish()
    return 0
