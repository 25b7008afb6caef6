"""``mlirhlo opt``: its command line, parsed with argparse, and its one call into the library.

``opt`` is the command that runs in loops and scripts. Parsing it with typer
meant importing typer and evaluating the signature of a 45-parameter command,
~50 ms of a 300 ms MLIR-only command; argparse, already loaded with the
standard library most commands use, builds and parses it in a few. The other
commands stay typer commands (cli/app.py), whose root listing shows this one.
Messages follow typer's (click's) wording, so every command reads the same.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from ..errors import DriverError

HELP = "Load modules, run a pass pipeline, and emit a stage (hlo-opt / mlir-opt)."
DESCRIPTION = HELP + """

Any --xla_NAME=VALUE DebugOptions flag applies to the XLA compile, with
XLA_FLAGS and --debug-options-file below it in precedence. Stages already
computed for the same content, by any command or the Python API, come from
the stage cache, before jaxlib is loaded."""

_PROG = "mlirhlo opt"


class UsageError(DriverError):
    """A command line argparse refused, worded as typer words it for the other commands."""

    def format(self) -> str:
        return f"error: {self.message} (see '{_PROG} --help')"


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, "Usage: " if prefix is None else prefix)  # as typer's


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print usage and exit 2 itself
        raise UsageError(message[:1].upper() + message[1:] + ".")


class _Failed(Exception):
    """A module failed: its exit code, raised through the cache's recording (no entry is kept)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _number(kind: type, noun: str, check: Callable[[Any], bool] | None = None,
            rule: str = "") -> Callable[[str], Any]:
    """A type for argparse: click's message for a word that is not a number, and ``rule``
    for one that fails ``check`` (NaN would pass every comparison)."""

    def convert(word: str) -> Any:
        try:
            value = kind(word)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{word!r} is not a valid {noun}.") from None
        if check is not None and not check(value):
            raise argparse.ArgumentTypeError(f"{value} is not {rule}")
        return value

    convert.__name__ = noun
    return convert


def finite_positive(value: float) -> bool:
    """A --timeout's rule, for every command: finite and > 0 (NaN passes every comparison)."""
    import math

    return math.isfinite(value) and value > 0


def parser() -> argparse.ArgumentParser:
    """opt's options; each ``dest`` is the name batch.OptOptions and the cache key use."""
    p = _Parser(prog=_PROG, usage=f"{_PROG} [OPTIONS] [FILE...]", description=DESCRIPTION,
                formatter_class=_Formatter, add_help=False,
                allow_abbrev=False, exit_on_error=False)
    add = p.add_argument
    add("inputs", nargs="*", metavar="FILE", help="Files, globs, directories, or package.module:function "
        "(with --args).")
    add("-h", "--help", action="help", help="Show this message and exit.")
    add("--pipeline", dest="pipeline_spec", metavar="PIPELINE",
        help="MLIR textual pipeline, e.g. 'builtin.module(func.func(canonicalize),cse)', "
             "or @NAME for pipelines/NAME.pipeline.")
    add("--passes", metavar="LIST", help="hlo-opt style comma list; each pass is nested at its anchor.")
    add("--pipeline-file", metavar="FILE", help="A pipeline file (header comment + textual pipeline).")
    add("--print-pipeline", action="store_true", help="Print the textual pipeline that will run.")
    add("--stage", metavar="STAGE", default="stablehlo",
        help="Stage to emit (comma list allowed; 'all' with --dump-dir). Default: stablehlo.")
    add("-o", "--output", "--o", metavar="FILE", help="Output file (default stdout).")
    add("--plot", metavar="FILE",
        help="With --stage roofline (or cost) on a GPU spec or a TPU topology: the roofline as a picture, SVG or "
             "PNG by the "
             "suffix (needs the plot extra: matplotlib).")
    add("--dump-dir", metavar="DIR", help="Write <module>.<stage>.<ext> files here.")
    add("--list-stages", action="store_true", help="List the stages and exit.")
    add("--list-passes", action="store_true", help="List passes and pipelines and exit.")
    add("--input-format", metavar="FORMAT", help="Force: hlo, hlo-proto, hlo-pbtxt, mlir, bytecode, vhlo, jax.")
    add("--split-input-file", action="store_true", help="Split inputs on '// -----' lines; each chunk is a module.")
    add("--args", metavar="SPECS", help="Argument specs for a JAX function, e.g. 'f32[8,128],i32[8]'.")
    add("--print-ir-after-all", action="store_true", help="Print the IR after every pass.")
    add("--print-ir-after-change", action="store_true",
        help="Print the IR after each pass that changed it (with --platform, XLA's HLO passes too).")
    add("--print-ir-before", action="append", metavar="PASS",
        help="Print IR before this pass (repeatable; 'all'); with --platform, an XLA HLO pass too.")
    add("--print-ir-after", action="append", metavar="PASS",
        help="Print IR after this pass (repeatable; 'all'); with --platform, an XLA HLO pass too.")
    add("--print-ir-after-failure", action="store_true", help="Print the IR after a pass that failed.")
    add("--print-ir-module-scope", action="store_true",
        help="Print the whole module, not only the pass's anchor op.")
    add("--ir-dump-dir", metavar="DIR", help="Write printed IR here, one file per pass, instead of stderr.")
    add("--timing", action="store_true",
        help="Per-pass wall times as a table: MLIR's passes, and with --platform XLA's HLO passes "
             "(calls, time, whether each changed the module).")
    add("--timing-format", "--mlir-output-format", metavar="FORMAT", default="text",
        help="--timing's tables as text or json (one object per module, on stderr). Default: text.")
    add("--verify-each", action=argparse.BooleanOptionalAction, default=True,
        help="Verify the IR after each pass. Default: on.")
    add("--reproducer-dir", metavar="DIR", help="Where a failing pass's reproducer goes (default: temp dir).")
    add("--target-version", metavar="VERSION", help="VHLO version for --stage vhlo: current, minimum or X.Y.Z.")
    add("--mlir-print-debuginfo", dest="debug_info", action="store_true", help="Print MLIR locations.")
    add("--platform", metavar="NAME", help="Compile with XLA for cpu, cuda or tpu (both device-less) to reach "
        "XLA stages.")
    add("--gpu-spec", metavar="SPEC", help="GPU target: a name from 'mlirhlo specs list' or a .txtpb path; "
        "comma list for several (default: h100_sxm).")
    add("--tpu-topology", metavar="TOPOLOGY",
        help="TPU slice for --platform tpu: libtpu's name (v5e:2x2, v5p:2x2x1, tpu7x:2x2x1) or an accelerator "
             "type (v5litepod-16, v6e-8, v5p-128); comma list for several (default: v5e:2x2).")
    add("--debug-options-file", metavar="FILE", help="DebugOptions textproto ('xla_name: value' lines).")
    add("--autotune-results", metavar="FILE",
        help="Load autotuning results (xla_gpu_load_autotune_results_from).")
    add("--xla-passes", metavar="LIST",
        help="Run XLA's pipeline with only these HLO passes; print the HLO after them.")
    add("--after-pass", metavar="PASS", help="Print the HLO right after this XLA pass of the normal pipeline.")
    add("--load-pass-plugin", action="append", metavar="FILE",
        help="A .py file registering Python passes (repeatable).")
    add("--fold-constants", action="store_true",
        help="Check files: keep their @inputs() constants in what XLA compiles (XLA folds the test); "
             "default: they are parameters.")
    add("--num-partitions", type=_number(int, "integer", lambda n: n >= 1, ">= 1"), metavar="N",
        help="Partitions to compile a sharded module for; default: as many as it says "
             "(mhlo.num_partitions, an HLO header's num_partitions); 1: the unpartitioned program.")
    add("--no-cache", action="store_true", help="Neither read nor write the stage cache (see 'mlirhlo cache info').")
    add("--quiet", "-q", action="store_true", help="No progress line on a terminal.")
    add("--jobs", "-j", type=_number(int, "integer"), default=0, metavar="N",
        help="Worker processes; each module is isolated (0: run in this process). Default: 0.")
    add("--fail-fast", action="store_true", help="Stop at the first module that fails (default: report it and go on).")
    add("--timeout", type=_number(float, "float", finite_positive, "a finite number > 0"), metavar="SECONDS",
        help="Seconds per module (with --jobs or --scheduler).")
    add("--scheduler", metavar="URL", help="Run the modules on a Dask cluster (tcp://HOST:8786); needs --dump-dir.")
    return p


def option_names() -> list[str]:
    """Every spelling of every option (for 'did you mean' hints)."""
    return [s for a in parser()._actions for s in a.option_strings]


def parse(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """opt's options by name, and the words left: unknown options (``--xla_*`` flags).

    Raises UsageError, in typer's words, for a value or an option argparse refuses.
    """
    try:
        ns, rest = parser().parse_known_args(argv)
    except argparse.ArgumentError as e:
        raise UsageError(_typer_words(e, argv)) from None
    # Inputs after the first option are left over too (parse_known_intermixed_args
    # would drop those after an unknown option); they keep their order.
    params = vars(ns)
    params["inputs"] = params["inputs"] + [w for w in rest if not w.startswith("-") or w == "-"]
    return params, [w for w in rest if w.startswith("-") and w != "-"]


def _typer_words(e: argparse.ArgumentError, argv: list[str]) -> str:
    """argparse's refusal of one option's value, as click words it (naming the spelling
    the user wrote, where argparse names the option's first)."""
    names = (e.argument_name or "").split("/")
    spelled = next((w.split("=")[0] for w in argv if w.split("=")[0] in names), names[0])
    if e.message.startswith("expected"):
        return f"Option '{spelled}' requires an argument."
    if e.message.startswith("ignored explicit argument"):
        return f"Option '{spelled}' does not take a value."
    return "Invalid value for " + " / ".join(f"'{n}'" for n in names) + f": {e.message}"


def main(argv: list[str]) -> int:
    """Run ``mlirhlo opt`` with ``argv`` (the words after ``opt``); returns the exit code.

    Errors of the driver become their lines on stderr and their exit code.
    """
    from ..batch.opt import error_text

    try:
        params, extra = parse(argv)
        _opt(params, extra)
    except DriverError as e:
        sys.stderr.write(error_text(e))
        sys.stderr.flush()
        return e.exit_code
    except _Failed as e:
        return e.code
    except SystemExit as e:  # argparse's --help; sys.exit in a pass plugin
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        # As Python does for sys.exit("why"): the message on stderr, exit 1.
        sys.stderr.write(f"{e.code}\n")
        return 1
    return 0


def _opt(params: dict[str, Any], extra: list[str]) -> None:
    from .. import listings
    from .common import say

    python_passes = listings.load_plugins(params["load_pass_plugin"])  # this command's only
    inputs = params["inputs"]
    list_stages, list_passes = params["list_stages"], params["list_passes"]
    target = resolve_target(params["platform"], params["gpu_spec"], extra, params["debug_options_file"],
                            params["autotune_results"], needs_spec=not (list_stages or list_passes),
                            known=option_names, command=_PROG, tpu_topology=params["tpu_topology"])
    if list_stages or list_passes:
        target.say_notes(say)  # a named spec's own notes (no spec is needed to list)
    if list_stages:
        sys.stdout.write(listings.stage_table(target.platform))
        return
    if list_passes:
        sys.stdout.write(listings.pass_catalog(python_passes))
        if target.platform is not None:
            from ..commands import mlirhlo as commands

            sys.stdout.write("\n" + commands.xla_pass_listing(target, inputs, input_format=params["input_format"],
                                                              args=params["args"]))
        return
    _run_opt(target, params, python_passes)


def resolve_target(platform: str | None, gpu_spec: str | None, extra: list[str],
                   debug_options_file: str | None, autotune_results: str | None,
                   needs_spec: bool, known: Callable[[], list[str]], command: str,
                   tpu_topology: str | None = None) -> Any:
    """targets.resolve from a command's leftover words: the --xla_* flags among them; any
    other is an error (xla_flags_among; a word that is no option: an unexpected argument)."""
    from .. import targets

    cli_flags, strays = xla_flags_among(extra, known, command)
    if strays:
        raise DriverError(f"unexpected argument '{strays[0]}'")
    return targets.resolve(platform, gpu_spec=gpu_spec, cli_flags=cli_flags,
                           debug_options_file=debug_options_file, autotune_results=autotune_results,
                           needs_spec=needs_spec, tpu_topology=tpu_topology)


def xla_flags_among(words: list[str], known: Callable[[], list[str]],
                    command: str) -> tuple[dict[str, Any], list[str]]:
    """The --xla_* DebugOptions flags among the words a command's parser left, and those
    of them that are no options (for the caller to take or refuse). A word written as an
    option that is no XLA flag is none of ``command``'s (its path, ``mlirhlo opt``): it is
    refused, naming the closest of ``known()``, its option spellings (common.no_such_option)."""
    from ..xla import flags as xla_flags
    from .common import is_option, no_such_option

    cli_flags, rest = xla_flags.parse_flag_args(words, separate_values=False)
    unknown = next((w for w in rest if is_option(w)), None)
    if unknown is not None:
        raise no_such_option(unknown, known(), command)
    return cli_flags, rest


def opt_options(params: dict[str, Any]) -> Any:
    """opt's options by name -> batch.opt.OptOptions (repeatable ones as tuples)."""
    import dataclasses

    from ..batch import opt as batch

    names = {f.name for f in dataclasses.fields(batch.OptOptions)}
    return batch.OptOptions(**{k: (tuple(v) if isinstance(v, list) and k != "inputs" else v)
                               for k, v in params.items() if k in names and v is not None})


def _run_opt(target: Any, params: dict[str, Any], python_passes: Any = None) -> None:
    """opt's options by name -> batch.run_opt (with the Python passes listings.load_plugins
    made of its plugins); a failed module: its summary, and _Failed."""
    from ..batch import opt as batch
    from .common import progress_line, say

    options = opt_options(params)
    line = progress_line(params["quiet"], "opt")
    try:
        if line is None:
            rows = batch.run_opt(options, target, say=say, python_passes=python_passes)
        else:
            with line:
                rows = batch.run_opt(options, target, say=say, progress=line, python_passes=python_passes)
    except batch.BatchStopped as stopped:
        sys.stderr.write(stopped.result.error_text)
        sys.stderr.flush()
        raise _Failed(stopped.result.exit_code) from None
    if any(not r.ok for r in rows):
        sys.stderr.write(batch.summary(rows))
        sys.stderr.flush()
        raise _Failed(batch.exit_code(rows))
