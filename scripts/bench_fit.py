"""`mlirhlo fit` over six TPU topologies: `--jobs 2` against `--jobs 1`, interleaved (issue 47:
goal <= 0.6x).

    python scripts/bench_fit.py [PROGRAM] [--repeats N] [--blocks N] [--tpu-topology A,B,...]

PROGRAM: a module (default: bench_stages.py's transformer-style training step at --blocks
blocks, made by this jax). Each run is a fresh `mlirhlo fit ... --no-cache`; the two run in
turn, A B then B A. Wall and CPU (user + system of the command and the processes it waited
for: workers and their TPU processes) per run; the ratio is per pair, then the median. Each
worker compiles in a TPU process of its own (interpreter, jax, libtpu: about 1.3 CPU-seconds
on a 2-core machine), so `--jobs 2` pays that twice and gains only on compiles longer than it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_common import driver_cli, time_command_cpu  # noqa: E402
from bench_stages import GEN_PROGRAM  # noqa: E402

TOPOLOGIES = "v5e:1x1,v5e:2x2,v5e:4x4,v5p:2x2x1,v6e:2x2,v4:2x2x1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", nargs="?")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--tpu-topology", default=TOPOLOGIES)
    args = parser.parse_args()
    program = args.program
    if program is None:
        work = Path(tempfile.mkdtemp(prefix="mlirhlo-fit-bench-"))
        program = str(work / f"blocks{args.blocks}.mlir")
        subprocess.run([sys.executable, "-c", GEN_PROGRAM, str(args.blocks), str(work / "p.hlo"), program], check=True)
    fit = driver_cli() + ["fit", program, "--tpu-topology", args.tpu_topology, "--no-cache"]
    runs: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    for r in range(args.repeats + 1):  # round 0 warms both
        for jobs in (1, 2) if r % 2 else (2, 1):
            sample = time_command_cpu(fit + ["--jobs", str(jobs)])
            if r:
                runs[jobs].append(sample)
    print(f"{args.repeats} interleaved rounds; {Path(program).name}; --tpu-topology {args.tpu_topology}")
    for jobs, samples in runs.items():
        print(f"--jobs {jobs}: wall " + ", ".join(f"{w:.2f}" for w, _ in samples)
              + " s; CPU " + ", ".join(f"{c:.2f}" for _, c in samples) + " s")
    wall = [a[0] / b[0] for a, b in zip(runs[2], runs[1])]
    cpu = [a[1] / b[1] for a, b in zip(runs[2], runs[1])]
    print(f"--jobs 2 / --jobs 1: wall {statistics.median(wall):.3f}x ({min(wall):.2f}-{max(wall):.2f}), "
          f"CPU {statistics.median(cpu):.3f}x (goal: wall <= 0.6x)")


if __name__ == "__main__":
    main()
