"""`mlirhlo opt` against minimal jax/jaxlib scripts doing the same work, in one interleaved run.

    python scripts/bench_stages.py [--repeats N] [--bytecode installed|none] [--in-process]
                                   [--no-binary-stages | --only-binary-stages] [--gpu-spec NAME]
                                   [--against DIR] [--watch] [--mlir-only]
    python scripts/bench_stages.py --sweep [--blocks 4,16,64,256] [--repeats N]

Rows (issue 11's table), each a fresh process per run, A B A B interleaved:
- `opt --stage ptx` (device-less CUDA, --no-cache) against a bare script that
  imports jax, converts the HLO, compiles for the same spec and prints the PTX
  (goal: <= 0.8x);
- MLIR-only `opt` on a generated 3,000-op StableHLO module, at the default stage
  (goal: <= 1.2x) and with `--passes canonicalize,cse` (issue 39: <= 1.05x), against
  a bare jaxlib script that parses, runs the same pipeline and prints.
- Triton's stages on the MLP step (issue 39): `--stage ttgir` and `--stage
  triton-passes` against `--stage triton` (goal: <= 2x), and `--stage all` against
  `--stage ptx,sass` for one spec (goal: <= 1.5x), all with --dump-dir and --no-cache.
- `opt --stage sass` and `--stage kernels` on a 10-module dump against `--stage
  ptx` on it (goal: <= 1.3x).
`--sweep` (issue 22): one JAX program, a transformer-style training step (attention and an
MLP per block, forward and backward, unrolled), generated at each block count. Per size,
interleaved: `opt --stage ptx` against the bare PTX script (goal: <= 1.0x), and MLIR-only
`opt --passes canonicalize,cse` on its StableHLO against the bare jaxlib script (goal:
<= 1.05x), with each process's peak RSS (goal: at most the bare script's + 10%).
Ratios are per pair, then the median (the MLIR-only row runs three pairs a round, in
alternating order, for its wider spread); CPU (user + system) is the steadier figure
on a loaded machine, wall is shown too. `--in-process` adds the driver's API
against the bare compile in one warm process (its own overhead).

`--against DIR` (issue 37): another checkout (`git worktree add DIR COMMIT`), run by this
same Python and jax; the `opt --stage ptx`, MLIR-only, `triton` and `ttgir` rows run for
both in the same rounds, and each is compared with the bare script and with the other
checkout.
`--watch` (issue 37): `mlirhlo watch ... --stage ptx -o FILE` kept running; each round
saves the input with a new comment line (new bytes: a real compile) and times the save
to the new output, against the same compile warm in one process (`cache=False`): goal,
at most the compile + 50 ms.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_common import bare_python, bytecode_env, interleaved, medians, pair_ratios  # noqa: E402

BARE_PTX = r'''
import glob, os, sys, tempfile
import jax
jax.config.update("jax_platforms", "cpu")
jax.devices()
from jax._src import xla_bridge
from jax._src.lib import xla_client
from jax._src.interpreters import mlir as jax_mlir
from jaxlib import _hlo, _jax
from jaxlib.mlir import ir
text, spec = open(sys.argv[1]).read(), open(sys.argv[2]).read()
ctx = jax_mlir.make_ir_context()
with ctx:
    module = ir.Module.parse(_jax.mlir.hlo_to_stablehlo(
        _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()))
c_api = xla_bridge._backend_factories["cuda"].c_api
topo = xla_client.make_c_api_device_topology(c_api, "t", target_config=spec, topology="1x1x1")
devices = topo._make_compile_only_devices()
with tempfile.TemporaryDirectory() as d:
    opts = xla_client.CompileOptions()
    opts.executable_build_options.debug_options.xla_dump_to = d
    # jaxlib 0.11+ dumps PTX only for the emitters this names (unset: none at all); the
    # driver's --stage ptx asks for the same, and no LLVM IR.
    opts.env_option_overrides = [("xla_gpu_autotune_level", 0), ("xla_dump_emitter_re", "ptx")]
    devices[0].client.compile(module, executable_devices=xla_client.DeviceList(tuple(devices)),
                              compile_options=opts)
    for p in sorted(glob.glob(os.path.join(d, "*.ptx"))):
        sys.stdout.write(open(p).read())
'''

BARE_MLIR = r'''
import sys
from jaxlib.mlir import ir, passmanager
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import stablehlo
registry = ir.DialectRegistry()
_jax_mlir_ext.register_dialects(registry)  # func, arith, ... as jax registers them
ctx = ir.Context()
ctx.append_dialect_registry(registry)
ctx.load_all_available_dialects()
stablehlo.register_dialect(ctx)
with ctx:
    module = ir.Module.parse(open(sys.argv[1]).read())
    if len(sys.argv) > 2:
        passmanager.PassManager.parse(sys.argv[2]).run(module.operation)
    sys.stdout.write(str(module))
'''


# What `opt --platform tpu --tpu-topology NAME --stage hlo` does, bare: jax's topology for libtpu
# (the process started with the driver's libtpu environment, bare_tpu_env), the topology's client
# compiling the StableHLO for one of its devices, XLA's optimized module dumped and printed.
BARE_TPU = r'''
import glob, os, sys, tempfile
import jax
from jax.experimental import topologies
from jax._src.lib import xla_client
from jax._src.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir
path, name = sys.argv[1], sys.argv[2]
try:
    topo = topologies.get_topology_desc(name, "tpu")
except Exception:  # a slice smaller than libtpu's default host (v5e:1x1): one host holding it
    shape = tuple(int(n) for n in name.split(":")[1].split("x"))
    topo = topologies.get_topology_desc(name, "tpu", chips_per_host_bounds=shape + (1,) * (3 - len(shape)))
with jax_mlir.make_ir_context():
    module = ir.Module.parse(open(path).read())
devices = topo.devices[:1]
with tempfile.TemporaryDirectory() as d:
    opts = xla_client.CompileOptions()
    opts.executable_build_options.debug_options.xla_dump_to = d
    opts.executable_build_options.debug_options.xla_dump_hlo_as_text = True
    devices[0].client.compile(module, executable_devices=xla_client.DeviceList(tuple(devices)),
                              compile_options=opts)
    for p in sorted(glob.glob(os.path.join(d, "*after_optimizations.txt"))):
        sys.stdout.write(open(p).read())
'''

# TPU rows' modules: a small one, the corpus's transformer block and MLP step, and the sweep's
# program at 16 blocks (made at run time by this jax: scripts/make_corpus.py, GEN_PROGRAM).
TPU_SMALL = REPO / "tests/data/tpu/matmul_tanh.mlir"


def bare_tpu_env(env: dict[str, str], work: Path) -> dict[str, str]:
    """``env`` with what the driver's TPU compile process starts with (TPU_COMPILE_ENV, a
    TMPDIR of its own) and TPU_LIBRARY_PATH naming the libtpu the driver uses."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver._native import libtpu

    found = libtpu.require()
    (work / "bare-tmp").mkdir(exist_ok=True)
    return {**env, **_jaxlib.TPU_COMPILE_ENV, "TPU_LIBRARY_PATH": found.library, "TMPDIR": str(work / "bare-tmp")}


def tpu_rows(args: argparse.Namespace) -> None:
    """`opt --platform tpu --stage hlo --no-cache` against BARE_TPU per module (issue 47:
    goal <= 1.0x), interleaved, A B then B A."""
    import subprocess

    from bench_common import time_command_cpu

    work = Path(tempfile.mkdtemp(prefix="mlirhlo-tpu-bench-"))
    env = bytecode_env(args.bytecode, str(work / "pycache"))
    bare_env = bare_tpu_env(env, work)
    subprocess.run([sys.executable, str(REPO / "scripts/make_corpus.py"), str(work / "corpus")], check=True,
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    blocks = work / "blocks16.mlir"
    subprocess.run([sys.executable, "-c", GEN_PROGRAM, "16", str(work / "blocks16.hlo"), str(blocks)],
                   check=True, env=env)
    modules = {"matmul_tanh": TPU_SMALL, "transformer_block": work / "corpus/transformer_block.mlir",
               "mlp_train_step": work / "corpus/mlp_train_step.mlir", "blocks16": blocks}
    cli = cli_command()
    topo = args.tpu_topology
    print(f"{args.repeats} interleaved rounds per module (A B, then B A); bytecode: {args.bytecode}; "
          f"--tpu-topology {topo}; libtpu {bare_env['TPU_LIBRARY_PATH']}", flush=True)
    print(f"{'module':<20}{'HLO lines':>10}{'driver s':>10}{'bare s':>8}{'wall':>7}{'CPU':>7}"
          f"{'CPU min-max':>14}{'goal':>8}", flush=True)
    for name, path in modules.items():
        driver = cli + ["opt", str(path), "--platform", "tpu", "--tpu-topology", topo, "--stage", "hlo", "--no-cache"]
        bare = [sys.executable, "-c", BARE_TPU, str(path), topo]
        # same work: both print an optimized module with the same instructions
        outs = [subprocess.run(cmd, capture_output=True, text=True, check=True, env=e, cwd=REPO).stdout
                for cmd, e in ((driver, env), (bare, bare_env))]
        ops = [sorted(re.findall(r"^\s*(?:ROOT )?%?([\w.-]+) = ", o, re.M)) for o in outs]
        if not ops[0] or len(ops[0]) != len(ops[1]):
            raise SystemExit(f"{name}: driver and bare script print different modules "
                             f"({len(ops[0])} and {len(ops[1])} instructions)")
        a_runs, b_runs = [], []
        for r in range(args.repeats):
            pair = [(a_runs, driver, env), (b_runs, bare, bare_env)]
            for runs, cmd, e in pair[::-1] if r % 2 else pair:
                runs.append(time_command_cpu(cmd, env=e))
        wall, cpu, lo, hi = pair_ratios(a_runs, b_runs)
        print(f"{name:<20}{len(outs[0].splitlines()):>10}{medians(a_runs)[0]:>10.2f}{medians(b_runs)[0]:>8.2f}"
              f"{wall:>6.2f}x{cpu:>6.2f}x{lo:>7.2f}-{hi:<5.2f}x{'<= 1.0x':>8}", flush=True)


# The sweep's program: N unrolled blocks (layer norm, attention, GELU MLP, residuals), the
# gradient of a mean-square loss; its HLO text and its StableHLO (jax's own lowering).
GEN_PROGRAM = r'''
import sys
import jax, jax.numpy as jnp
jax.config.update("jax_platforms", "cpu")
n, hlo_path, mlir_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
d, s = 64, 32
def norm(x):
    return (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)
def block(x, p):
    h = norm(x)
    a = jax.nn.softmax((h @ p["q"]) @ (h @ p["k"]).T / 8.0, axis=-1) @ (h @ p["v"])
    x = x + a @ p["o"]
    return x + jax.nn.gelu(norm(x) @ p["w1"]) @ p["w2"]
def loss(params, x):
    for p in params:
        x = block(x, p)
    return (x * x).mean()
shapes = {"q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d), "w1": (d, 4 * d), "w2": (4 * d, d)}
params = [{k: jax.ShapeDtypeStruct(v, jnp.float32) for k, v in shapes.items()} for _ in range(n)]
lowered = jax.jit(jax.grad(loss)).lower(params, jax.ShapeDtypeStruct((s, d), jnp.float32))
open(hlo_path, "w").write(lowered.as_text(dialect="hlo"))
open(mlir_path, "w").write(lowered.as_text())
'''

# BARE_MLIR, with CHLO too (jax's lowering of the sweep's program uses chlo.square & co.).
BARE_MLIR_CHLO = BARE_MLIR.replace("stablehlo.register_dialect(ctx)\n",
                                   "stablehlo.register_dialect(ctx)\n"
                                   "from jaxlib.mlir.dialects import chlo\nchlo.register_dialect(ctx)\n")


def generated_module(ops: int) -> str:
    """A StableHLO function of ``ops`` ops with work for canonicalize (x+0, x*1) and cse (repeats)."""
    lines = ["func.func @main(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {",
             "  %zero = stablehlo.constant dense<0.0> : tensor<16xf32>",
             "  %one = stablehlo.constant dense<1.0> : tensor<16xf32>",
             "  %v0 = stablehlo.add %a, %b : tensor<16xf32>"]
    kinds = ["stablehlo.add {x}, %a", "stablehlo.multiply {x}, %one", "stablehlo.add {x}, %zero",
             "stablehlo.subtract {x}, %b", "stablehlo.multiply {x}, %b", "stablehlo.maximum {x}, %a",
             "stablehlo.add {p}, %a"]  # the last repeats the op before last: cse folds it
    n = 3
    i = 1
    while n < ops - 1:
        expr = kinds[i % len(kinds)].format(x=f"%v{i - 1}", p=f"%v{max(i - 2, 0)}")
        lines.append(f"  %v{i} = {expr} : tensor<16xf32>")
        i += 1
        n += 1
    lines.append(f"  return %v{i - 1} : tensor<16xf32>")
    lines.append("}")
    return "\n".join(lines) + "\n"


# Ten XLA dumps of JAX programs shipped with the tests: the 10-module dump for sass/kernels.
DUMP_MODULES = [*sorted((REPO / "tests/data/jax_dumps").glob("*.before_optimizations.txt")),
                REPO / "tests/data/mlp_train_step.before_optimizations.txt",
                *sorted((REPO / "tests/data/xla_tools").glob("*/module_*.before_optimizations.txt"))]


def ten_module_dump(directory: Path) -> Path:
    """A directory holding the ten modules, named as XLA names its dump files."""
    import shutil

    directory.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(DUMP_MODULES[:10]):
        stem = path.name.split(".before_optimizations")[0].split(".")[-1]
        shutil.copy(path, directory / f"module_{i:04d}.{stem}.before_optimizations.txt")
    assert len(list(directory.iterdir())) == 10, DUMP_MODULES
    return directory


def cli_command() -> list[str]:
    """The console script a user runs (its main() exits without interpreter teardown)."""
    from bench_common import driver_cli

    return driver_cli()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--module", default=str(REPO / "tests/data/mlp_train_step.before_optimizations.txt"))
    parser.add_argument("--gpu-spec", default="h100_sxm")
    parser.add_argument("--ops", type=int, default=3000)
    parser.add_argument("--bytecode", choices=("installed", "none"), default="installed",
                        help="installed: .pyc as a pip install has them; none: no bytecode (editable dev setup)")
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--no-binary-stages", action="store_true",
                        help="leave out the 10-module dump rows (--stage sass/kernels against ptx)")
    parser.add_argument("--only-binary-stages", action="store_true",
                        help="only the 10-module dump rows (--stage ptx, cubin, sass, kernels)")
    parser.add_argument("--sweep", action="store_true",
                        help="the size sweep: one generated program at --blocks sizes (its own rows only)")
    parser.add_argument("--blocks", default="4,16,64,256", help="--sweep's block counts")
    parser.add_argument("--against", metavar="DIR", help="another checkout: its ptx and MLIR-only rows beside these")
    parser.add_argument("--watch", action="store_true", help="only the watch row: save to output against a warm compile")
    parser.add_argument("--tpu", action="store_true",
                        help="only the TPU rows (issue 47): opt --platform tpu --stage hlo against a bare jax+libtpu "
                             "script, small and large modules")
    parser.add_argument("--tpu-topology", default="v5e:1x1", help="--tpu's topology")
    parser.add_argument("--mlir-only", action="store_true",
                        help="only the MLIR-only rows (opt and opt --passes against the bare jaxlib script, and "
                             "--against's): many rounds in a few minutes")
    args = parser.parse_args()
    if args.sweep:
        return sweep(args)
    if args.watch:
        return watch_row(args)
    if args.tpu:
        return tpu_rows(args)
    if args.only_binary_stages and (args.no_binary_stages or args.in_process or args.mlir_only):
        parser.error("--only-binary-stages leaves out the other rows")
    if args.mlir_only:
        args.no_binary_stages = True

    work = Path(tempfile.mkdtemp(prefix="mlirhlo-bench-"))
    env = bytecode_env(args.bytecode, str(work / "pycache"))
    spec_path = str(REPO / "gpu_specs" / f"{args.gpu_spec}.txtpb")
    big = work / f"ops{args.ops}.mlir"
    big.write_text(generated_module(args.ops))
    from bench_common import driver_cli

    cli = cli_command() if args.against is None else driver_cli(REPO)  # the same form as [before]'s
    import subprocess

    pipeline = subprocess.run(cli + ["opt", "--passes", "canonicalize,cse", "--print-pipeline"],
                              capture_output=True, text=True, check=True, env=env).stdout.strip()
    binary_stages = ("ptx", "cubin", "sass", "kernels")
    before = driver_cli(args.against) if args.against else None
    commands = {} if args.only_binary_stages else {
        "opt --stage ptx": cli + ["opt", args.module, "--platform", "cuda", "--gpu-spec", args.gpu_spec,
                                  "--stage", "ptx", "--no-cache"],
        "bare jax ptx": [*bare_python(BARE_PTX), args.module, spec_path],
        "opt (MLIR-only)": cli + ["opt", str(big), "--no-cache"],
        "bare jaxlib parse/print": [sys.executable, "-c", BARE_MLIR, str(big)],
        "opt --passes canonicalize,cse": cli + ["opt", str(big), "--passes", "canonicalize,cse", "--no-cache"],
        "bare jaxlib parse/pass/print": [sys.executable, "-c", BARE_MLIR, str(big), pipeline],
        **{f"opt --stage {stage}": cli + ["opt", args.module, "--platform", "cuda", "--gpu-spec", args.gpu_spec,
                                          "--stage", stage, "--no-cache", "--dump-dir", str(work / f"out-{stage}")]
           for stage in ("triton", "ttgir", "triton-passes", "all", "ptx,sass")},
    }
    if before is not None and not args.only_binary_stages:
        commands.update({
            "opt --stage ptx [before]": before + ["opt", args.module, "--platform", "cuda", "--gpu-spec",
                                                  args.gpu_spec, "--stage", "ptx", "--no-cache"],
            "opt (MLIR-only) [before]": before + ["opt", str(big), "--no-cache"],
            "opt --passes canonicalize,cse [before]": before + ["opt", str(big), "--passes", "canonicalize,cse",
                                                                "--no-cache"],
            # issue 39's rows: a checkout from before them takes ~50 s per ttgir compile
            **{f"opt --stage {stage} [before]": before + [
                "opt", args.module, "--platform", "cuda", "--gpu-spec", args.gpu_spec, "--stage", stage,
                "--no-cache", "--dump-dir", str(work / f"out-before-{stage}")] for stage in ("triton", "ttgir")},
        })
    if not args.no_binary_stages:
        dump = ten_module_dump(work / "dump10")
        for stage in binary_stages:
            # --dump-dir: cubin gives several files per module (the same for every row)
            commands[f"opt 10-module dump --stage {stage}"] = cli + [
                "opt", str(dump), "--platform", "cuda", "--gpu-spec", args.gpu_spec, "--stage", stage,
                "--no-cache", "--dump-dir", str(work / f"out-{stage}")]
    if args.mlir_only:
        commands = {k: v for k, v in commands.items() if "MLIR-only" in k or "bare jaxlib" in k or "--passes" in k}
    runs = interleaved(commands, args.repeats, env)

    print(f"{args.repeats} interleaved rounds; bytecode: {args.bytecode}; module {Path(args.module).name}, "
          f"spec {args.gpu_spec}; generated module: {args.ops} ops; pipeline {pipeline}")
    print(f"{'command':<32}{'wall s':>8}{'CPU s':>8}")
    for name, samples in runs.items():
        wall, cpu = medians(samples)
        print(f"{name:<32}{wall:>8.3f}{cpu:>8.3f}")
    print(f"\n{'row':<48}{'wall':>7}{'CPU':>7}{'CPU min-max':>14}{'goal':>8}")
    # (row, command, the command it is over, goal); a row whose commands did not run is left out.
    rows = [("opt --stage ptx / bare jax script", "opt --stage ptx", "bare jax ptx", 0.8),
            ("opt MLIR-only / bare jaxlib script", "opt (MLIR-only)", "bare jaxlib parse/print", 1.2),
            ("opt --passes canonicalize,cse / bare jaxlib", "opt --passes canonicalize,cse",
             "bare jaxlib parse/pass/print", 1.05),
            ("opt --stage ttgir / --stage triton", "opt --stage ttgir", "opt --stage triton", 2.0),
            ("opt --stage triton-passes / --stage triton", "opt --stage triton-passes", "opt --stage triton", 2.0),
            ("opt --stage all / --stage ptx,sass (one spec)", "opt --stage all", "opt --stage ptx,sass", 1.5),
            ("[before] opt --stage ptx / bare jax script", "opt --stage ptx [before]", "bare jax ptx", 0.8),
            ("[before] opt MLIR-only / bare jaxlib script", "opt (MLIR-only) [before]", "bare jaxlib parse/print", 1.2),
            ("[before] opt --passes canonicalize,cse / bare jaxlib", "opt --passes canonicalize,cse [before]",
             "bare jaxlib parse/pass/print", 1.05),
            ("opt --stage ptx / [before]", "opt --stage ptx", "opt --stage ptx [before]", 1.0),
            ("opt MLIR-only / [before]", "opt (MLIR-only)", "opt (MLIR-only) [before]", 1.0),
            ("opt --passes canonicalize,cse / [before]", "opt --passes canonicalize,cse",
             "opt --passes canonicalize,cse [before]", 1.0),
            ("[before] opt --stage ttgir / --stage triton", "opt --stage ttgir [before]", "opt --stage triton [before]",
             2.0),
            ("opt --stage ttgir / [before]", "opt --stage ttgir", "opt --stage ttgir [before]", 1.0)]
    for name, a, b, goal in rows:
        if a not in runs or b not in runs:
            continue
        wall, cpu, lo, hi = pair_ratios(runs[a], runs[b])
        print(f"{name:<48}{wall:>6.2f}x{cpu:>6.2f}x{lo:>7.2f}-{hi:<5.2f}x{'<= ' + str(goal) + 'x':>8}")
    for stage in binary_stages[1:] if not args.no_binary_stages else ():
        # cubin: XLA's own; sass: one more ptxas and one nvdisasm per module; kernels: that ptxas
        wall, cpu, lo, hi = pair_ratios(runs[f"opt 10-module dump --stage {stage}"],
                                        runs["opt 10-module dump --stage ptx"])
        name = f"10-module dump: --stage {stage} / --stage ptx"
        goal = "" if stage == "cubin" else "<= 1.3x"
        print(f"{name:<48}{wall:>6.2f}x{cpu:>6.2f}x{lo:>7.2f}-{hi:<5.2f}x{goal:>8}")

    if args.in_process:
        in_process(args)


def sweep(args: argparse.Namespace) -> None:
    import subprocess

    from bench_common import time_command_rss

    work = Path(tempfile.mkdtemp(prefix="mlirhlo-sweep-"))
    env = bytecode_env(args.bytecode, str(work / "pycache"))
    spec_path = str(REPO / "gpu_specs" / f"{args.gpu_spec}.txtpb")
    cli = cli_command()
    pipeline = subprocess.run(cli + ["opt", "--passes", "canonicalize,cse", "--print-pipeline"],
                              capture_output=True, text=True, check=True, env=env).stdout.strip()
    sizes = [int(b) for b in args.blocks.split(",")]
    programs = {}
    for n in sizes:
        hlo, mlir = work / f"blocks{n}.hlo", work / f"blocks{n}.mlir"
        subprocess.run([sys.executable, "-c", GEN_PROGRAM, str(n), str(hlo), str(mlir)], check=True, env=env)
        instructions = sum(1 for ln in hlo.read_text().splitlines() if " = " in ln and not ln.startswith("HloModule"))
        programs[n] = (hlo, mlir, instructions)
    print(f"{args.repeats} interleaved rounds per size (MLIR-only: 3 pairs a round, in alternating order); bytecode: {args.bytecode}; spec {args.gpu_spec}; "
          f"pipeline {pipeline}", flush=True)
    header = (f"{'blocks':>6}{'HLO instrs':>11}  {'row':<30}{'driver s':>9}{'bare s':>8}{'wall':>7}{'CPU':>7}"
              f"{'RSS MiB':>9}{'bare MiB':>9}{'RSS':>7}{'goal':>10}")
    print(header, flush=True)
    for n in sizes:
        hlo, mlir, instructions = programs[n]
        # (driver, bare, goal, pairs per round): the MLIR-only pair takes a second where the
        # PTX one takes minutes, and its run-to-run spread on a shared machine (+-15% at
        # 256 blocks, measured) needs more pairs than the PTX row's for a stable median.
        rows = {
            "opt --stage ptx": (cli + ["opt", str(hlo), "--platform", "cuda", "--gpu-spec", args.gpu_spec,
                                       "--stage", "ptx", "--no-cache"],
                                [*bare_python(BARE_PTX), str(hlo), spec_path], 1.0, 1),
            "opt --passes canonicalize,cse": (cli + ["opt", str(mlir), "--passes", "canonicalize,cse", "--no-cache"],
                                              [sys.executable, "-c", BARE_MLIR_CHLO, str(mlir), pipeline], 1.05, 3),
        }
        if n == sizes[0]:
            _same_work(rows["opt --stage ptx"][:2], env)
        runs: dict[str, list[tuple[float, float, int]]] = {}
        for r in range(args.repeats):  # every row of this size in each round
            for name, (driver, bare, _, pairs) in rows.items():
                for k in range(pairs):
                    # A B, then B A: neither command always runs right after the other
                    # row's (a PTX compile's 1.5 GB process has just exited).
                    pair = [(name, driver), (name + " bare", bare)]
                    for key, cmd in pair[::-1] if (r * pairs + k) % 2 else pair:
                        runs.setdefault(key, []).append(time_command_rss(cmd, env=env))
        for name, (_, _, goal, _) in rows.items():
            a, b = runs[name], runs[name + " bare"]
            wall, cpu, _, _ = pair_ratios([x[:2] for x in a], [x[:2] for x in b])
            rss_a = statistics.median(x[2] for x in a) / 1024
            rss_b = statistics.median(x[2] for x in b) / 1024
            print(f"{n:>6}{instructions:>11}  {name:<30}{statistics.median(x[0] for x in a):>9.2f}"
                  f"{statistics.median(x[0] for x in b):>8.2f}{wall:>6.2f}x{cpu:>6.2f}x{rss_a:>9.0f}{rss_b:>9.0f}"
                  f"{rss_a / rss_b - 1:>+7.0%}{'<= ' + str(goal) + 'x':>10}", flush=True)


def _same_work(commands: tuple[list[str], list[str]], env: dict[str, str]) -> None:
    """Refuse to time a bare script that does less than the driver: both must print PTX
    with the same kernels (a bare script on jaxlib 0.12 once printed none, and was fast)."""
    import subprocess

    kernels = []
    for cmd in commands:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env, cwd=REPO).stdout
        kernels.append(sorted(re.findall(r"^\.(?:visible )?\.entry (\w+)", out, re.M)))
    if not kernels[0] or kernels[0] != kernels[1]:
        raise SystemExit(f"driver and bare script print different PTX: {len(kernels[0])} and "
                         f"{len(kernels[1])} kernels")
    print(f"same work: both print the PTX of the same {len(kernels[0])} kernels", flush=True)


def in_process(args: argparse.Namespace) -> None:
    from mlirhlo_driver import api
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import specs as gpu_specs
    from mlirhlo_driver.inputs import loader as inputs

    spec = gpu_specs.resolve_spec(args.gpu_spec)
    text = Path(args.module).read_text()

    def bare_in_process() -> None:
        import glob
        import os

        module = inputs.parse_mlir(_jaxlib.hlo_proto_to_stablehlo_bytecode(_jaxlib.hlo_text_to_proto(text)))
        devices = _jaxlib.cuda_compile_only_devices(gpu_specs.target_config_for_installed_xla(spec.text))
        with tempfile.TemporaryDirectory() as d:
            _jaxlib.compile_executable(module, devices, _jaxlib.compile_options(
                dump_to=d, env_overrides=[("xla_gpu_autotune_level", 0)]))
            for p in sorted(glob.glob(os.path.join(d, "*.ptx"))):
                open(p).read()

    def driver_in_process() -> None:  # the compile, not the stage cache
        api.compile(args.module, platform="cuda", gpu_spec=args.gpu_spec, cache=False).stage("ptx")

    bare_in_process(), driver_in_process()
    drv_i, bare_i = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter(); driver_in_process(); drv_i.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); bare_in_process(); bare_i.append(time.perf_counter() - t0)
    a, b = statistics.median(drv_i), statistics.median(bare_i)
    print(f"\nin process (warm): driver {a:.3f} s, bare {b:.3f} s, {a / b:.2f}x")


def watch_row(args: argparse.Namespace) -> None:
    """``mlirhlo watch`` from a save to its new output, against the same compile warm in
    this process (the API, ``cache=False``): the watch should add at most 50 ms."""
    import os
    import subprocess

    from mlirhlo_driver import api

    work = Path(tempfile.mkdtemp(prefix="mlirhlo-watch-"))
    env = bytecode_env(args.bytecode, str(work / "pycache"))
    env["MLIRHLO_CACHE_DIR"] = str(work / "cache")
    src = Path(args.module).read_text()
    module, out = work / "m.hlo", work / "m.ptx"
    module.write_text(src)

    def saved(i: int) -> str:  # new bytes each time: the stage cache cannot answer
        return f"// save {i}\n" + src

    def wait_for(pred: Any, timeout: float = 120.0) -> None:
        end = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > end:
                raise SystemExit("watch did not rebuild in time")
            time.sleep(0.002)

    proc = subprocess.Popen(cli_command() + ["watch", str(module), "--platform", "cuda", "--gpu-spec", args.gpu_spec,
                                             "--stage", "ptx", "-o", str(out), "--quiet"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    compile_s, watch_s = [], []
    try:
        wait_for(out.exists)
        for i in range(args.repeats + 1):
            text = saved(i)
            mtime = out.stat().st_mtime_ns
            t0 = time.perf_counter()
            module.write_text(text)
            wait_for(lambda m=mtime: out.exists() and out.stat().st_mtime_ns != m)
            dt = time.perf_counter() - t0
            (work / "c.hlo").write_text(text)
            t0 = time.perf_counter()
            api.compile(str(work / "c.hlo"), platform="cuda", gpu_spec=args.gpu_spec, cache=False).stage("ptx")
            if i:  # the first round warms both
                watch_s.append(dt)
                compile_s.append(time.perf_counter() - t0)
    finally:
        proc.terminate()
        proc.wait(10)
        os.sync()
    w, c = statistics.median(watch_s), statistics.median(compile_s)
    print(f"{args.repeats} saves; module {Path(args.module).name}, spec {args.gpu_spec}")
    print(f"watch, save to new output: {w:.3f} s; the same compile warm in one process: {c:.3f} s; "
          f"watch adds {1000 * (w - c):+.0f} ms (goal: <= +50 ms)")


if __name__ == "__main__":
    main()
