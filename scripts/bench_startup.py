"""Start-up of the CLI, and a repeated (cached) `opt --stage` command, in one interleaved run.

    python scripts/bench_startup.py [--repeats N] [--bytecode installed|none] [--against DIR]

Each command runs N times in a fresh process, in turn (A B C ... A B C ...), so
all see the same machine load. Shown: median wall and CPU (user + system) seconds,
and the goals of issue 11: `mlirhlo --help` and `mlirhlo opt --help` <= 0.1 s, the
same `opt --stage ...` command repeated with nothing changed <= 0.1 s wall (served
by the stage cache, here a fresh cache directory warmed by one run), the
first `--passes` in a new environment (no pass catalogue yet) <= 1 s, and (issue 39)
`mlirhlo passes` on first use (a fresh cache home: jaxlib's libraries scanned) <= 2 s,
next to its repeated, cached use. Issue 37: `mlirhlo --help` <= 0.08 s, and the Python
API's cached stage in a fresh process (`import` to the PTX text, after the command line
compiled it) <= 0.15 s.
`python -c pass` and `python -c "import jax"` are there for scale.

`--against DIR`: another checkout (`git worktree add DIR COMMIT`), run by this same
Python and jax: each driver row runs for both, interleaved in the same rounds, and a
last table gives this checkout's time over DIR's per row.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from bench_common import bytecode_env, driver_cli, driver_python, interleaved, medians, pair_ratios  # noqa: E402

MLP = str(REPO / "tests/data/mlp_train_step.before_optimizations.txt")
ERF = str(REPO / "tests/data/erf_inv.mlir")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--bytecode", choices=("installed", "none"), default="installed",
                        help="installed: .pyc as a pip install has them; none: no bytecode (editable dev setup)")
    parser.add_argument("--against", metavar="DIR", help="another checkout to compare with, row by row")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mlirhlo-bench-"))
    env = bytecode_env(args.bytecode, str(work / "pycache"))
    env["MLIRHLO_CACHE_DIR"] = str(work / "cache")
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        'python -c "import jax"': [sys.executable, "-c", "import jax"],
    }
    drivers = driver_rows(work, None if args.against is None else REPO)
    commands.update(drivers)
    if args.against:
        commands.update({f"{name} [before]": cmd for name, cmd in driver_rows(work, args.against).items()})
    runs = interleaved(commands, args.repeats, env)  # its warm-up round fills the cache
    goals = {"mlirhlo --help": 0.08, "mlirhlo opt --help": 0.1, "opt --stage ptx, repeated (cached)": 0.1,
             "opt --stage llvm,ptx --dump-dir, repeated (cached)": 0.1, "first --passes in a new environment": 1.0,
             "mlirhlo passes, first use (new environment)": 2.0, API_ROW: 0.15}
    width = max(map(len, commands))
    print(f"{args.repeats} interleaved rounds; bytecode: {args.bytecode}"
          + (f"; [before]: {args.against}" if args.against else ""))
    print(f"{'command':<{width}}  {'wall s':>7}  {'CPU s':>6}  goal")
    for name, samples in runs.items():
        wall, cpu = medians(samples)
        goal = f"<= {goals[name]} s" if name in goals else ""
        print(f"{name:<{width}}  {wall:>7.3f}  {cpu:>6.3f}  {goal}")
    if args.against:
        print(f"\n{'this checkout / [before], pair by pair':<{width}}  {'wall':>7}  {'CPU':>6}")
        for name in drivers:
            wall, cpu, _, _ = pair_ratios(runs[name], runs[f"{name} [before]"])
            print(f"{name:<{width}}  {wall:>6.2f}x  {cpu:>5.2f}x")


API_ROW = "API: cached stage, fresh process"
API_PTX = """import mlirhlo_driver as mh
mh.load({path!r}).compile(mh.Target.cuda("h100_sxm")).stage("ptx")
"""


def driver_rows(work: Path, root: str | Path | None) -> dict[str, list[str]]:
    """The driver's rows, for this checkout (``root`` None: the console script) or another."""
    cli = driver_cli(root)
    tag = "before" if root not in (None, REPO) else "after"
    return {
        "mlirhlo --help": cli + ["--help"],
        "mlirhlo opt --help": cli + ["opt", "--help"],
        "mlirhlo passes --help": cli + ["passes", "--help"],
        "mlirhlo opt --list-stages": cli + ["opt", "--list-stages"],
        "mlirhlo specs list": cli + ["specs", "list"],
        "opt --stage ptx, repeated (cached)": cli + ["opt", MLP, "--platform", "cuda", "--gpu-spec", "h100_sxm",
                                                     "--stage", "ptx"],
        "opt --stage llvm,ptx --dump-dir, repeated (cached)": cli + [
            "opt", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80", "--stage", "llvm,ptx",
            "--dump-dir", str(work / f"dump-{tag}")],
        # A new environment: no pass catalogue yet (a fresh XDG_CACHE_HOME each run).
        "first --passes in a new environment": ["sh", "-c", 'XDG_CACHE_HOME="$(mktemp -d -p {w})" exec {c}'.format(
            w=shlex.quote(str(work)), c=shlex.join(cli + ["opt", ERF, "--passes", "canonicalize,cse", "--no-cache",
                                                         "-o", "/dev/null"]))],
        "mlirhlo passes, first use (new environment)": ["sh", "-c", 'XDG_CACHE_HOME="$(mktemp -d -p {w})" exec {c}'
                                                        .format(w=shlex.quote(str(work)), c=shlex.join(cli + ["passes"]))],
        "mlirhlo passes, repeated (cached)": ["sh", "-c", "XDG_CACHE_HOME={w} exec {c}".format(
            w=shlex.quote(str(work / f"xdg-{tag}")), c=shlex.join(cli + ["passes"]))],
        # After the command line's compile of the same (the row above warms it): the API's
        # stage comes from the same cache entry.
        API_ROW: driver_python(root, API_PTX.format(path=MLP)),
    }


if __name__ == "__main__":
    main()
