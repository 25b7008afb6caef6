"""``mlirhlo watch``: opt's command line, run again in this process whenever its files change."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import DriverError

_PROG = "mlirhlo watch"
HELP = "Run opt again whenever its inputs, pipeline file, pass plugins or GPU specs change (a warm process)."


def main(argv: list[str]) -> int:
    """``mlirhlo watch`` with ``argv`` (opt's options); returns the exit code (0 on Ctrl-C)."""
    from ..batch.opt import error_text
    from . import opt as opt_cli

    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(f"Usage: mlirhlo watch [opt's OPTIONS] FILE...\n\n{HELP}\n\nEach build writes "
                         "what opt would, then says on stderr what changed since the last build: kernels\n"
                         "added or removed, their registers, occupancy and spills, PTX lines, fusions. A\n"
                         "build that fails is shown and the watch goes on. Ctrl-C ends it.\n\n"
                         "Options: those of 'mlirhlo opt --help'.\n")
        return 0
    try:
        params, extra = opt_cli.parse(argv)
        return _watch(params, extra)
    except DriverError as e:
        sys.stderr.write(error_text(e))
        return e.exit_code
    except KeyboardInterrupt:
        return 0


def _watch(params: dict[str, Any], extra: list[str]) -> int:
    from .. import listings
    from ..batch import watch
    from . import opt as opt_cli
    from .common import say

    if params["list_stages"] or params["list_passes"]:
        raise DriverError("watch runs builds: --list-stages and --list-passes are opt's", hint="mlirhlo opt")
    if not params["inputs"]:
        raise DriverError("no input modules given", hint="mlirhlo watch FILE [opt's options]")
    # Refused now, once: the command line does not change while it is watched.
    opt_cli.xla_flags_among(extra, opt_cli.option_names, _PROG)
    python_passes = listings.load_plugins(params["load_pass_plugin"])  # refused now; loaded again when changed

    def make_target() -> Any:
        return opt_cli.resolve_target(params["platform"], params["gpu_spec"], extra, params["debug_options_file"],
                                      params["autotune_results"], needs_spec=True, known=opt_cli.option_names,
                                      command=_PROG, tpu_topology=params["tpu_topology"])

    def report(build: watch.Build) -> None:
        state = "failed" if build.error else "ok"
        sys.stderr.write(f"watch: build {build.number} ({build.reason}): {state} in {build.seconds:.2f} s\n")
        if build.error:
            sys.stderr.write(build.error.rstrip("\n") + "\n")
        for line in build.lines:
            sys.stderr.write(f"  {line}\n")
        sys.stderr.flush()

    # The target refused now, once, as a usage error: the topology or spec named does not
    # change while it is watched (a spec file that breaks later is a failed build).
    make_target()
    watch.watch(opt_cli.opt_options(params), make_target, say=say, report=report, python_passes=python_passes)
    return 0
