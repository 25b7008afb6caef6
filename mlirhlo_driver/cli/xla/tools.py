"""Drop-in front-ends for XLA's tools: ``hlo-opt``, ``run_hlo_module``,
``multihost_hlo_runner`` (``hlo_runner_main``) and ``ptx-opt``.

Each takes XLA's flag syntax (xla/cli_flags.py) and XLA's defaults, parses
the command line and hands the flags to commands/xla_tools.py, which maps them
onto the same library the ``mlirhlo`` subcommands use, so a script written
for XLA's binaries runs with only this package installed. Bad usage or input
is one ``error:`` line and exit 2; a module that fails to compile or run
exits 1 (the error's ``exit_code``). Ctrl-C is ``error: interrupted`` and exit
130, as at ``mlirhlo`` (cli/mlirhlo.py): the same handler, installed on import,
before any parsing.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from ..._native import interrupts

interrupts.install()  # before any parsing: Ctrl-C from here on is one error line, never an abort

from ...commands import xla_tools  # noqa: E402
from ...errors import EXIT_INTERRUPTED, DriverError, FlagError  # noqa: E402
from ...xla.cli_flags import Flag, parse, usage  # noqa: E402
from ..common import say  # noqa: E402


def _version(prog: str) -> str:
    from ... import __version__

    return f"{prog} (mlirhlo-driver {__version__}, XLA from jaxlib)\n"


def _entry(prog: str, flags: list[Flag], synopsis: str, description: str, run: Callable[[Any, list[str]], int],
           argv: list[str] | None, *, preprocess: Callable[[list[str]], list[str]] | None = None) -> None:
    """A tool's whole life: parse ``argv`` with its flag table, print --help or --version,
    or hand the flags to ``run``; typed errors become one line and their exit code, Ctrl-C
    ``error: interrupted`` and exit 130 (outputs are written atomically: none is left half
    written)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:  # this process is the tool's (cli.mlirhlo._own_process_settings says why)
        import os

        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
        os.environ.setdefault("LLVM_DISABLE_SYMBOLIZATION", "1")
        os.environ["MLIRHLO_OWN_PROCESS"] = "1"  # xla.flags.OWN_PROCESS_ENV
    try:
        p = parse(preprocess(args) if preprocess else args, flags)
        if p.help:
            sys.stdout.write(usage(prog, synopsis, description, flags))
            code = 0
        elif p.version:
            sys.stdout.write(_version(prog))
            code = 0
        else:
            code = run(p, args)
    except DriverError as e:
        sys.stderr.write(e.format() + "\n")
        sys.stderr.flush()
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        interrupts.report()
        if argv is None:  # the tool's own process: leave at once (interrupts.leave says why)
            interrupts.leave(EXIT_INTERRUPTED)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:  # the reader went away (| head): not a failure of ours, as at mlirhlo
        _quiet_stdout()
        sys.exit(0)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    sys.exit(code)


def _quiet_stdout() -> None:
    """stdout onto /dev/null, so the interpreter's own flush at exit finds no closed pipe."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (a test's capture)
        pass


HLO_OPT_FLAGS = [
    Flag("o", "str", "-", "Output file, or '-' for stdout.", "FILE"),
    Flag("platform", "str", "", "Compile for CPU (also Host), CUDA (also GPU; device-less, from a "
         "GPU spec) or TPU (device-less, for --tpu_topology). Without it, --stage=hlo prints the module "
         "as read and --passes/--list-passes use the CPU pipeline, then the CUDA one.", "NAME"),
    Flag("tpu_topology", "str", "", "TPU slice for --platform=TPU: libtpu's name (v5e:2x2, v5p:2x2x1) or an "
         "accelerator type (v5litepod-16, v6e-8); default v5e:2x2.", "NAME"),
    Flag("format", "str", "", "Input format, by default from the content: hlo, pb, pbtxt "
         "(HloProto or HloModuleProto), also stablehlo, mhlo, bytecode, vhlo.", "NAME"),
    Flag("stage", "str", "hlo", "Output stage (see --list-stages): hlo (after optimizations), "
         "hlo-backend, html, buffer-assignment, llvm, llvm-before-optimizations, ptx, ...", "NAME"),
    Flag("list-stages", "bool", False, "Print the stages of --platform and exit."),
    Flag("split-input-file", "bool", False, "Split the input on '// -----' lines; each piece is a module."),
    Flag("passes", "str", "", "Comma list of XLA HLO passes to run, each once, in the order given "
         "(names as --list-passes prints them); xla:NAME or mlir:NAME picks the world of a name both "
         "have.", "LIST"),
    Flag("list-passes", "bool", False, "Print the XLA HLO pass names --passes can run, comma-separated, "
         "and exit."),
    Flag("emit-proto", "bool", False, "Print the module as an HloProto textproto; no passes run."),
    Flag("debug_options_file", "str", "", "DebugOptions textproto; below XLA_FLAGS and the "
         "command line in precedence.", "FILE"),
    Flag("num_partitions", "int", -1, "Partitions to compile a sharded module for (default: the module's "
         "num_partitions, as run_hlo_module takes it); 1: the unpartitioned program.", "N"),
]

_HLO_OPT_DESCRIPTION = """
Reads HLO (text, HloProto binary or text) or StableHLO from FILE ('-': stdin)
and prints it at a stage of XLA's compile for --platform, or after the XLA
passes named by --passes. CUDA compiles are device-less: the GPU comes from
--xla_gpu_target_config_filename (a GpuTargetConfigProto; the shipped specs
may be named by file name) or defaults to h100_sxm. TPU compiles are device-less
too, for --tpu_topology (libtpu: 'mlirhlo tpu-plugin install').
"""


def hlo_opt_main(argv: list[str] | None = None) -> None:
    """Console script ``hlo-opt``."""
    _entry("hlo-opt", HLO_OPT_FLAGS, "[FLAGS] FILE...", _HLO_OPT_DESCRIPTION,
           lambda p, _: xla_tools.hlo_opt(p, say), argv)


RUN_HLO_MODULE_FLAGS = [
    Flag("platform", "str", "CPU", "Test platform: CPU (Host), CUDA (GPU; needs a GPU) or TPU (needs a TPU "
         "chip; without one, hlo-opt --platform=TPU compiles device-less).", "NAME"),
    Flag("reference_platform", "str", "default", "Reference: Interpreter (also 'default': the StableHLO "
         "reference interpreter), CPU, or '' for none.", "NAME"),
    Flag("print_literals", "bool", False, "Print the input and result literals."),
    Flag("run_test_hlo_passes", "bool", True, "Run XLA's HLO passes on the test platform; false for an "
         "optimized module (sets --xla_disable_all_hlo_passes for the test compile)."),
    Flag("use_large_float_range", "bool", False, "Random floats over a large range, not +-1."),
    Flag("abs_error_bound", "float", 1e-3, "Absolute error bound of the comparison (as XLA's ErrorSpec: "
         "an element matches within either bound).", "X"),
    Flag("rel_error_bound", "float", 1e-3, "Relative error bound of the comparison (an element matches "
         "within either bound).", "X"),
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
    Flag("run_reference_hlo_passes", "bool", True, "Run XLA's HLO passes for a CPU reference; false sets "
         "--xla_disable_all_hlo_passes for its compile. The StableHLO interpreter runs no HLO passes."),
    Flag("random_init_input_literals", "bool", True, "Random inputs; false gives zeros (XLA then has no "
         "random engine, and its fake literals are created zeroed)."),
    Flag("force_fake_data", "bool", False, "Run an HloSnapshot on random inputs, not the arguments it "
         "recorded."),
    Flag("isolate_instructions", "bool", False, "Run each instruction of the entry computation as a "
         "module of its own (operands become parameters) and compare them one by one."),
]

_RUN_DESCRIPTION = """
Compiles each module with XLA for --platform, runs it on random inputs and
compares the results against --reference_platform. Several files (globs, XLA
dump directories) give one report each, then a summary. Exit 0 when all
match, 1 on a mismatch or failure, 2 for bad usage or input.
"""


def run_hlo_module_main(argv: list[str] | None = None) -> None:
    """Console script ``run_hlo_module``."""
    _entry("run_hlo_module", RUN_HLO_MODULE_FLAGS, "[FLAGS] FILE...", _RUN_DESCRIPTION,
           lambda p, args: xla_tools.run_hlo_module(p, args, say), argv, preprocess=_refuse_different_random_seeds)


def _refuse_different_random_seeds(argv: list[str]) -> list[str]:
    """``--different_random_seeds``: XLA gives each iteration's HloModuleConfig
    a new seed (what ``rng`` ops draw from). jaxlib's compile options carry no
    such seed (ExecutableBuildOptionsProto has none), so ``true`` is refused;
    ``false``, XLA's default, is what always happens here and is accepted."""
    import re

    out = []
    for word in argv:
        if word == "--":
            out += argv[len(out):]
            break
        m = re.fullmatch(r"--?(no)?different[_-]random[_-]seeds(?:=(.*))?", word)
        if not m:
            out.append(word)
            continue
        if m.group(1) and m.group(2) is not None:
            # As for every bool flag: --noNAME takes no value.
            raise FlagError(f"unknown flag '{word.split('=', 1)[0]}'", hint="--different_random_seeds=false")
        value = "false" if m.group(1) else ("true" if m.group(2) is None else m.group(2).lower())
        if value in ("true", "1"):
            raise DriverError("--different_random_seeds: jaxlib cannot set the HloModuleConfig seed that "
                              "XLA varies per iteration (its compile options have no seed field)",
                              hint="each iteration already gets new random inputs")
        if value not in ("false", "0"):
            raise FlagError(f"--different_random_seeds={m.group(2)}: expected true or false")
    return out


MULTIHOST_FLAGS = [
    Flag("num_replicas", "int", -1, "Replicas (default: the module's replica_count, else 1).", "N"),
    Flag("num_partitions", "int", -1, "Partitions (default: the module's num_partitions, else 1).", "N"),
    Flag("use_spmd_partitioning", "bool", False, "Partition with XLA's SPMD partitioner (on whenever "
         "partitions > 1 here)."),
    Flag("is_spmd_partitioned_module", "bool", False, "The module is already partitioned (per-device shapes)."),
    Flag("run_xla_backend_only", "bool", False, "Compile with XLA's backend only (an optimized module)."),
    Flag("hlo_argument_mode", "str", "use_random_inputs", "Inputs: " + ", ".join(xla_tools.ARGUMENT_MODES) + ".",
         "NAME", tuple(xla_tools.ARGUMENT_MODES)),
    Flag("num_repeats", "int", 1, "Run N times; print each run's time.", "N"),
    Flag("input_format", "str", "", "text, proto_text or proto_binary (default: from the content).", "NAME"),
    Flag("hlo_file", "str", "", "The module file (instead of a positional FILE).", "FILE"),
    Flag("device_type", "str", "host", "Devices to run on: host (CPU devices this process creates) or tpu "
         "(the TPU chips attached here); gpu is not available here.", "NAME", ("host", "cpu", "gpu", "tpu")),
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
    Flag("dump_output_literal_to", "str", "", "Write each device's outputs as XLA literal text: PATH.txt "
         "gives PATH.task_T.device_D.literal_L.txt (one input module).", "FILE"),
    Flag("while_execution_count", "int", -1, "If > 0, every while loop runs exactly N iterations (a "
         "counter joins its state; its own condition is dropped), as XLA's control-flow flattening.", "N"),
    Flag("remove_infeed_outfeed", "bool", True, "Replace infeed with zeros and outfeed with its token "
         "before compiling; with false a module that has them is refused (nothing feeds them here)."),
    Flag("execution_options_path", "str", "", "An xla.ExecutionOptions proto (text or binary): its "
         "num_replicas, num_partitions, device_assignment and debug_options are used.", "FILE"),
    Flag("profile_execution", "bool", False, "Print each run's time as '## Execution time, file=F "
         "repeat=R duration=Nns' (wall time of the execution; jaxlib gives no device profile)."),
]

_MULTIHOST_DESCRIPTION = """
Runs each module SPMD-partitioned on replicas x partitions host devices in
this process, gathers the outputs to full arrays and compares them with the
module run on one device. Partition and replica counts come from the module's
header unless given. For several processes, use 'mlirhlo spmd-run'.
"""


def multihost_main(argv: list[str] | None = None) -> None:
    """Console scripts ``multihost_hlo_runner`` and ``hlo_runner_main``."""
    _entry("multihost_hlo_runner", MULTIHOST_FLAGS, "[FLAGS] FILE...", _MULTIHOST_DESCRIPTION,
           lambda p, _: xla_tools.multihost(p, say), argv)


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
    _entry("ptx-opt", PTX_OPT_FLAGS, "[FLAGS] FILE", _PTX_DESCRIPTION, lambda p, _: xla_tools.ptx_opt(p), argv)
