"""`mlirhlo run` over 50 small modules against a bare jaxlib loop, interleaved.

    python scripts/bench_run.py [--modules 50] [--jobs 2] [--repeats 5]

The modules (elementwise chains, matmuls, reductions of assorted shapes) are
written to a temp dir. The bare loop compiles and runs each of them with
jaxlib in one process with the same inputs. `mlirhlo run --reference none`
runs the same work through the CLI, with worker processes (--jobs) and
in-process (--jobs 0). Prints wall and CPU times, the ratios, and the table row.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_common import bytecode_env, interleaved, medians, pair_ratios  # noqa: E402

BARE = r'''
import glob, sys
import numpy as np
import jax
jax.config.update("jax_platforms", "cpu")
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import xla_client
from jaxlib.mlir import ir
ctx = jax_mlir.make_ir_context()
device = jax.devices("cpu")[0]
for path in sorted(glob.glob(sys.argv[1] + "/*.mlir")):
    with ctx:
        module = ir.Module.parse(open(path).read())
        main = [op for op in module.body.operations if "main" in str(op.attributes["sym_name"])][0]
        types = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs
        shapes = [tuple(ir.RankedTensorType(t).shape) for t in types]
    exe = device.client.compile_and_load(module, xla_client.DeviceList((device,)), xla_client.CompileOptions())
    rng = np.random.default_rng(0)
    args = [jax.device_put(rng.uniform(-1, 1, s).astype(np.float32), device) for s in shapes]
    [np.asarray(x[0]) for x in exe.execute_sharded(args).disassemble_into_single_device_arrays()]
'''


def write_modules(directory: Path, count: int) -> None:
    for i in range(count):
        n = 8 + 4 * (i % 7)
        kind = i % 3
        t = f"tensor<{n}x{n}xf32>"
        if kind == 0:
            body = (f"  %0 = stablehlo.tanh %a : {t}\n  %1 = stablehlo.multiply %0, %b : {t}\n"
                    f"  %2 = stablehlo.add %1, %a : {t}\n  return %2 : {t}")
            ret = t
        elif kind == 1:
            body = (f"  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}\n"
                    f"  %1 = stablehlo.exponential %0 : {t}\n  return %1 : {t}")
            ret = t
        else:
            body = (f"  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
                    f"  %0 = stablehlo.add %a, %b : {t}\n"
                    f"  %1 = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [1]"
                    f" : ({t}, tensor<f32>) -> tensor<{n}xf32>\n  return %1 : tensor<{n}xf32>")
            ret = f"tensor<{n}xf32>"
        (directory / f"m{i:03d}.mlir").write_text(
            f"func.func @main(%a: {t}, %b: {t}) -> {ret} {{\n{body}\n}}\n")




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modules", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds (A B C A B C ...)")
    parser.add_argument("--bytecode", choices=("installed", "none"), default="installed",
                        help="installed: .pyc as after pip install; none: as this checkout runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        write_modules(Path(d), args.modules)
        script = Path(sys.executable).parent / "mlirhlo"  # the console script users run
        cli = ([str(script)] if script.exists() else
               [sys.executable, "-c", "import sys; from mlirhlo_driver.cli.mlirhlo import main; main(sys.argv[1:])"])
        cli += ["run", d, "--reference", "none"]
        commands = {
            "bare": [sys.executable, "-c", BARE, d],
            "jobs0": cli + ["--jobs", "0"],
            f"jobs{args.jobs}": cli + ["--jobs", str(args.jobs)],
        }
        env = bytecode_env(args.bytecode, str(Path(d) / "pycache"))
        runs = interleaved(commands, args.repeats, env)
    bare = runs["bare"]
    print(f"{args.modules} modules, CPU, {args.repeats} interleaved rounds; median wall (CPU) s, "
          "and median per-round ratio to the bare loop")
    for name, samples in runs.items():
        wall, cpu = medians(samples)
        ratio = "" if name == "bare" else "  {:.2f}x wall, {:.2f}x CPU".format(*pair_ratios(samples, bare)[:2])
        print(f"  {name:<8}{wall:>8.2f} s ({cpu:.2f} s CPU){ratio}")
    j0, jn = pair_ratios(runs["jobs0"], bare)[0], pair_ratios(runs[f"jobs{args.jobs}"], bare)[0]
    print(f"| `run` over {args.modules} files vs a bare compile+execute loop | `--jobs 0` {j0:.2f}x, "
          f"`--jobs {args.jobs}` {jn:.2f}x | `--jobs 0` <= 1.15x; `--jobs {args.jobs}` faster than `--jobs 0` |")


if __name__ == "__main__":
    main()
