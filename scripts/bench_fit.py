"""`mlirhlo fit` over six TPU topologies: `--jobs 2` against `--jobs 1`, interleaved (issue 47:
goal <= 0.6x).

    python scripts/bench_fit.py [PROGRAM] [--repeats N] [--blocks N] [--tpu-topology A,B,...]

PROGRAM: a module (default: bench_stages.py's transformer-style training step at --blocks
blocks, made by this jax). Each run is a fresh `mlirhlo fit ... --no-cache`; the two run in
turn, A B then B A. Wall and CPU (user + system of the command and the processes it waited
for: workers and their TPU processes) per run; the ratio is per pair, then the median. Each
worker compiles in a TPU process of its own (interpreter, jaxlib, libtpu), so `--jobs 2` pays
that twice and gains only on compiles longer than it.

The machine's own floor, in the same rounds: a bare jax script doing the same six compiles
(jax's topology for libtpu, its client compiling for one device, the memory stats read) in one
process, and the same split over two processes started together (dealt in turn in fit's
order, the largest slices first). Two compiles side by side on a 2-core machine each run
slower than one alone; the bare pair's ratio is what that leaves any driver.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_common import driver_cli, time_command_cpu  # noqa: E402
from bench_stages import GEN_PROGRAM, bare_tpu_env  # noqa: E402

TOPOLOGIES = "v5e:1x1,v5e:2x2,v5e:4x4,v5p:2x2x1,v6e:2x2,v4:2x2x1"

# The sweep's compiles, bare: one process compiling the module for each topology named (one
# device of it, as fit compiles an unsharded module), reading the memory stats.
BARE_SWEEP = r'''
import sys
import jax
from jax.experimental import topologies
from jax._src.lib import xla_client
from jax._src.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir
path, names = sys.argv[1], sys.argv[2].split(",")
text = open(path).read()
for name in names:
    try:
        topo = topologies.get_topology_desc(name, "tpu", **({"chip_config_name": "megacore"} if name.startswith("v4:") else {}))
    except Exception:  # a slice smaller than libtpu's default host (v5e:1x1): one host holding it
        shape = tuple(int(n) for n in name.split(":")[1].split("x"))
        topo = topologies.get_topology_desc(name, "tpu", chips_per_host_bounds=shape + (1,) * (3 - len(shape)))
    with jax_mlir.make_ir_context():
        module = ir.Module.parse(text)
        devices = topo.devices[:1]
        exe = devices[0].client.compile(module, executable_devices=xla_client.DeviceList(tuple(devices)),
                                        compile_options=xla_client.CompileOptions())
    exe.get_compiled_memory_stats()
'''

# Two BARE_SWEEP processes started together, each with its share; the pair's wall and CPU.
BARE_PAIR = r'''
import subprocess, sys
code, path, a, b = sys.argv[1:5]
procs = [subprocess.Popen([sys.executable, "-c", code, path, part]) for part in (a, b)]
sys.exit(max(p.wait() for p in procs))
'''


def fit_order(topologies: str) -> list[str]:
    """The topologies in fit's queue order, the largest slices first (batch.fit.run), in
    libtpu's spelling."""
    from mlirhlo_driver import targets

    found = sorted(targets.resolve("tpu", tpu_topology=topologies), key=lambda t: -t.topology.devices)
    return [t.topology.name for t in found]


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
    order = fit_order(args.tpu_topology)
    bare_env = bare_tpu_env(dict(os.environ), Path(tempfile.mkdtemp(prefix="mlirhlo-fit-bare-")))
    commands = {
        "fit --jobs 1": (fit + ["--jobs", "1"], None),
        "fit --jobs 2": (fit + ["--jobs", "2"], None),
        "bare, 1 process": ([sys.executable, "-c", BARE_SWEEP, program, ",".join(order)], bare_env),
        "bare, 2 processes": ([sys.executable, "-c", BARE_PAIR, BARE_SWEEP, program, ",".join(order[0::2]),
                               ",".join(order[1::2])], bare_env),
    }
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    for r in range(args.repeats + 1):  # round 0 warms them all
        for name in list(commands)[::-1] if r % 2 else list(commands):
            cmd, env = commands[name]
            sample = time_command_cpu(cmd, env=env)
            if r:
                runs[name].append(sample)
    print(f"{args.repeats} interleaved rounds; {Path(program).name}; --tpu-topology {args.tpu_topology}")
    for name, samples in runs.items():
        print(f"{name}: wall " + ", ".join(f"{w:.2f}" for w, _ in samples)
              + " s; CPU " + ", ".join(f"{c:.2f}" for _, c in samples) + " s")
    for two, one, goal in (("fit --jobs 2", "fit --jobs 1", " (goal: wall <= 0.6x)"),
                           ("bare, 2 processes", "bare, 1 process", " (this machine's floor)"),
                           ("fit --jobs 1", "bare, 1 process", ""), ("fit --jobs 2", "bare, 2 processes", "")):
        wall = [a[0] / b[0] for a, b in zip(runs[two], runs[one])]
        cpu = [a[1] / b[1] for a, b in zip(runs[two], runs[one])]
        print(f"{two} / {one}: wall {statistics.median(wall):.3f}x ({min(wall):.2f}-{max(wall):.2f}), "
              f"CPU {statistics.median(cpu):.3f}x{goal}")


if __name__ == "__main__":
    main()
