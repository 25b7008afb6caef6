"""Start-up of the CLI, and a repeated (cached) `opt --stage` command, in one interleaved run.

    python scripts/bench_startup.py [--repeats N] [--bytecode installed|none]

Each command runs N times in a fresh process, in turn (A B C ... A B C ...), so
all see the same machine load. Shown: median wall and CPU (user + system) seconds,
and the goals of issue 11: `mlirhlo --help` and `mlirhlo opt --help` <= 0.1 s, the
same `opt --stage ...` command repeated with nothing changed <= 0.1 s wall (served
by the stage cache, here a fresh cache directory warmed by one run), the
first `--passes` in a new environment (no pass catalogue yet) <= 1 s, and (issue 39)
`mlirhlo passes` on first use (a fresh cache home: jaxlib's libraries scanned) <= 2 s,
next to its repeated, cached use.
`python -c pass` and `python -c "import jax"` are there for scale.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from bench_common import bytecode_env, interleaved, medians  # noqa: E402
from bench_stages import cli_command  # noqa: E402

MLP = str(REPO / "tests/data/mlp_train_step.before_optimizations.txt")
ERF = str(REPO / "tests/data/erf_inv.mlir")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--bytecode", choices=("installed", "none"), default="installed",
                        help="installed: .pyc as a pip install has them; none: no bytecode (editable dev setup)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mlirhlo-bench-"))
    env = bytecode_env(args.bytecode, str(work / "pycache"))
    env["MLIRHLO_CACHE_DIR"] = str(work / "cache")
    cli = cli_command()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        'python -c "import jax"': [sys.executable, "-c", "import jax"],
        "mlirhlo --help": cli + ["--help"],
        "mlirhlo opt --help": cli + ["opt", "--help"],
        "mlirhlo passes --help": cli + ["passes", "--help"],
        "mlirhlo opt --list-stages": cli + ["opt", "--list-stages"],
        "mlirhlo specs list": cli + ["specs", "list"],
        "opt --stage ptx, repeated (cached)": cli + ["opt", MLP, "--platform", "cuda", "--gpu-spec", "h100_sxm",
                                                     "--stage", "ptx"],
        "opt --stage llvm,ptx --dump-dir, repeated (cached)": cli + [
            "opt", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80", "--stage", "llvm,ptx",
            "--dump-dir", str(work / "dump")],
        # A new environment: no pass catalogue yet (a fresh XDG_CACHE_HOME each run).
        "first --passes in a new environment": ["sh", "-c", 'XDG_CACHE_HOME="$(mktemp -d -p {w})" exec {c}'.format(
            w=shlex.quote(str(work)), c=shlex.join(cli + ["opt", ERF, "--passes", "canonicalize,cse", "--no-cache",
                                                         "-o", "/dev/null"]))],
        "mlirhlo passes, first use (new environment)": ["sh", "-c", 'XDG_CACHE_HOME="$(mktemp -d -p {w})" exec {c}'
                                                        .format(w=shlex.quote(str(work)), c=shlex.join(cli + ["passes"]))],
        "mlirhlo passes, repeated (cached)": ["sh", "-c", "XDG_CACHE_HOME={w} exec {c}".format(
            w=shlex.quote(str(work / "xdg")), c=shlex.join(cli + ["passes"]))],
    }
    runs = interleaved(commands, args.repeats, env)  # its warm-up round fills the cache
    goals = {"mlirhlo --help": 0.1, "mlirhlo opt --help": 0.1, "opt --stage ptx, repeated (cached)": 0.1,
             "opt --stage llvm,ptx --dump-dir, repeated (cached)": 0.1, "first --passes in a new environment": 1.0,
             "mlirhlo passes, first use (new environment)": 2.0}
    width = max(map(len, commands))
    print(f"{args.repeats} interleaved rounds; bytecode: {args.bytecode}")
    print(f"{'command':<{width}}  {'wall s':>7}  {'CPU s':>6}  goal")
    for name, samples in runs.items():
        wall, cpu = medians(samples)
        goal = f"<= {goals[name]} s" if name in goals else ""
        print(f"{name:<{width}}  {wall:>7.3f}  {cpu:>6.3f}  {goal}")


if __name__ == "__main__":
    main()
