"""Start-up times of the CLI next to ``python -c "import jax"``, in one run.

    python scripts/bench_startup.py [--repeats N]

Each command runs N times in a fresh process; the median wall time is shown
with its ratio to the bare jax import on the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from bench_common import time_command  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from mlirhlo_driver.cli import main; main(sys.argv[1:])"]

COMMANDS = {
    'python -c "import jax"': [sys.executable, "-c", "import jax"],
    "mlirhlo --help": CLI + ["--help"],
    "mlirhlo opt --help": CLI + ["opt", "--help"],
    "mlirhlo passes --help": CLI + ["passes", "--help"],
    "mlirhlo opt --list-stages": CLI + ["opt", "--list-stages"],
    "mlirhlo specs list": CLI + ["specs", "list"],
    "mlirhlo passes (cached)": CLI + ["passes"],
    "mlirhlo opt sample.mlir (loads jax)": CLI + ["opt", str(REPO / "tests/data/erf_inv.mlir")],
}




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    for cmd in COMMANDS.values():  # warm caches (pass catalog, OS page cache)
        time_command(cmd)
    results = {name: statistics.median(time_command(cmd) for _ in range(args.repeats))
               for name, cmd in COMMANDS.items()}
    base = results['python -c "import jax"']
    width = max(map(len, results))
    print(f"{'command':<{width}}  {'median s':>9}  {'vs import jax':>13}")
    for name, t in results.items():
        print(f"{name:<{width}}  {t:>9.3f}  {t / base:>12.2f}x")


if __name__ == "__main__":
    main()
