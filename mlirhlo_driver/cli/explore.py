"""``mlirhlo explore``: opt's command line plus Model Explorer's; one call per step into the library.

``explore INPUT [opt options]`` runs ``opt --stage model-explorer --dump-dir DIR``
(every opt option that shapes the compile applies: pipelines, ``--platform``,
``--gpu-spec``, ``--xla_*`` flags, ...), adds the overlays asked for (a ``diff``
against other flags or another spec, ``run --bisect``'s first diverging op), and
starts Model Explorer on the files (batch/explore.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import DriverError
from . import opt as opt_cli

HELP = "Show the optimized HLO in Model Explorer, with kernel figures, a diff or a bisect laid on it."
_PROG = "mlirhlo explore"
# opt's options that say what opt writes or lists, which explore decides: not explore's.
_NOT_HERE = ("stage", "output", "list_stages", "list_passes", "split_input_file", "scheduler", "target_version",
             "debug_info", "plot")


def parser() -> argparse.ArgumentParser:
    """opt's options (cli/opt.py) but those of :data:`_NOT_HERE`, then explore's own."""
    p = opt_cli.parser()
    for action in [a for a in p._actions if a.dest in _NOT_HERE]:
        p._remove_action(action)
        for spelling in action.option_strings:
            p._option_string_actions.pop(spelling, None)
        for group in p._action_groups:
            if action in group._group_actions:
                group._group_actions.remove(action)
    p.prog, p.usage = _PROG, f"{_PROG} [OPTIONS] FILE"
    p.description = HELP + """

The graph JSON and node-data overlays go to --dump-dir (default: a new temporary
directory, kept); Model Explorer (pip install 'mlirhlo-driver[explorer]') is then
started on them. opt's options shape the compile; what is written is explore's."""
    add = p.add_argument
    add("--host", default="localhost", metavar="HOST", help="Model Explorer's server host. Default: localhost.")
    add("--port", type=int, default=8080, metavar="PORT",
        help="Model Explorer's port (8080: the first free one from 8080, as Model Explorer picks). Default: 8080.")
    add("--no-browser", action="store_true", help="Do not open the page in a browser.")
    add("--no-serve", action="store_true", help="Write the files and stop (Model Explorer is not needed).")
    add("--diff-gpu-spec", metavar="SPEC", help="Also side B for this spec: a diff overlay on both graphs.")
    add("--diff-flags", metavar="FLAGS",
        help="Also side B with these XLA flags over this compile's: a diff overlay on both graphs.")
    add("--bisect", action="store_true",
        help="Run the module against its reference; on a mismatch, mark the first diverging op.")
    add("--reference", default="interpreter", metavar="NAME",
        help="--bisect's reference: interpreter or cpu. Default: interpreter.")
    add("--inputs", dest="inputs_npz", metavar="NPZ", help="--bisect's inputs (.npz), as 'mlirhlo run --inputs'.")
    add("--rtol", type=float, metavar="X", help="--bisect's relative tolerance (default: per dtype).")
    add("--atol", type=float, metavar="X", help="--bisect's absolute tolerance (default: per dtype).")
    return p


_EXPLORE_ONLY = ("host", "port", "no_browser", "no_serve", "diff_gpu_spec", "diff_flags", "bisect", "reference",
                 "inputs_npz", "rtol", "atol")


def main(argv: list[str]) -> int:
    """Run ``mlirhlo explore`` with ``argv``; returns the exit code (after Model Explorer
    stops, when it was started)."""
    from ..batch.opt import error_text

    try:
        return _explore(argv)
    except DriverError as e:
        sys.stderr.write(error_text(e))
        sys.stderr.flush()
        return e.exit_code
    except opt_cli._Failed as e:
        return e.code
    except SystemExit as e:  # argparse's --help
        return e.code if isinstance(e.code, int) else 0


def _explore(argv: list[str]) -> int:
    import tempfile

    from .. import listings
    from ..batch import explore
    from ..errors import param
    from .common import no_such_option, say

    try:
        ns, rest = parser().parse_known_args(argv)
    except argparse.ArgumentError as e:
        raise opt_cli.UsageError(opt_cli._typer_words(e, argv)) from None
    params: dict[str, Any] = vars(ns)
    params["inputs"] = params["inputs"] + [w for w in rest if not w.startswith("-") or w == "-"]
    extra = [w for w in rest if w.startswith("-") and w != "-"]
    mine = {k: params.pop(k) for k in _EXPLORE_ONLY}
    for word in extra:  # opt's options that are not explore's: what it writes is explore's to say
        if word.split("=")[0] in ("--stage", "-o", "--output"):
            raise no_such_option(word, (), _PROG,
                                 hint=f"explore writes the model-explorer stage to --dump-dir; see '{_PROG} --help'")
    opt_cli.xla_flags_among(extra, _option_names, _PROG)  # what is left are XLA's flags
    params.update({k: None for k in _NOT_HERE})
    params["split_input_file"] = params["list_stages"] = params["list_passes"] = params["debug_info"] = False
    if len(params["inputs"]) != 1:
        raise DriverError(f"explore shows one module; {len(params['inputs'])} inputs given",
                          hint=f"{_PROG} FILE --platform cuda")
    if params["platform"] is None and params.get("gpu_spec"):
        params["platform"] = "cuda"  # GPU specs name CUDA targets, as at opt
    if params["platform"] is None and params.get("tpu_topology"):
        params["platform"] = "tpu"
    if params["platform"] is None:
        raise DriverError(f"explore shows XLA's optimized HLO: give {param('platform', 'cpu|cuda|tpu')}")
    if params["gpu_spec"] and "," in params["gpu_spec"]:
        raise DriverError("explore compiles for one GPU spec", hint="--diff-gpu-spec for a second one")
    if params.get("tpu_topology") and "," in params["tpu_topology"]:
        raise DriverError("explore compiles for one TPU topology", hint="--diff-flags for a second compile")
    if not mine["no_serve"]:
        explore.require_model_explorer()  # before anything compiles
    python_passes = listings.load_plugins(params["load_pass_plugin"])  # this command's only
    target = opt_cli.resolve_target(params["platform"], params["gpu_spec"], extra, params["debug_options_file"],
                                    params["autotune_results"], needs_spec=True, known=_option_names,
                                    command=_PROG, tpu_topology=params["tpu_topology"])
    target_b = _target_b(params, extra, mine) if mine["diff_gpu_spec"] or mine["diff_flags"] else None
    said = list(target.notes)
    directory = params["dump_dir"] = params["dump_dir"] or tempfile.mkdtemp(prefix="mlirhlo-explore-")
    params["stage"] = "model-explorer"
    opt_cli._run_opt(target, params, python_passes)  # the graph and its figures, as 'opt --stage model-explorer' writes them
    files = explore.collect(directory)
    if not files.graphs:
        raise DriverError(f"opt wrote no graph to {directory}")
    if target_b is not None or mine["bisect"]:
        from ..core.program import InputOptions

        program = explore.program(params["inputs"][0], InputOptions(params["input_format"], False, params["args"]),
                                  pipeline_spec=params["pipeline_spec"], passes=params["passes"],
                                  pipeline_file=params["pipeline_file"],
                                  python_passes=python_passes)
        if target_b is not None:
            for n in target_b.notes:
                if n not in said:
                    say(n)
            explore.diff_overlays(program, files.graphs[0], directory, target_a=target, target_b=target_b,
                                  cache=not params["no_cache"])
        if mine["bisect"]:
            found = explore.bisect_overlay(program, files.graphs[0], target, reference=mine["reference"],
                                           inputs_npz=mine["inputs_npz"], rtol=mine["rtol"], atol=mine["atol"])
            if found is None:
                say("--bisect: the module matches its reference: no op to mark")
    files = explore.collect(directory)
    _say(files)
    if mine["no_serve"]:
        return 0
    explore.serve(files, host=mine["host"], port=mine["port"], open_browser=not mine["no_browser"])
    return 0


def _option_names() -> list[str]:
    return [s for a in parser()._actions for s in a.option_strings]


def _target_b(params: dict[str, Any], extra: list[str], mine: dict[str, Any]) -> Any:
    """Side B's target: this compile's, with ``--diff-gpu-spec`` for its spec and the
    ``--diff-flags`` over its flags."""
    from .. import targets
    from ..commands import mlirhlo as commands
    from ..xla import flags as xla_flags

    flags_b = commands.diff_flags(mine["diff_flags"], "diff_flags")
    cli_flags, _ = xla_flags.parse_flag_args(extra, separate_values=False)
    return targets.resolve(params["platform"], gpu_spec=mine["diff_gpu_spec"] or params["gpu_spec"],
                           cli_flags={**cli_flags, **flags_b}, debug_options_file=params["debug_options_file"],
                           autotune_results=params["autotune_results"], needs_spec=True)


def _say(files: Any) -> None:
    from .. import outputs

    lines = [f"graph: {g}" for g in files.graphs] + [f"overlay: {o}" for o, _ in files.overlays]
    outputs.Sink().emit("\n".join(lines) + "\n")
