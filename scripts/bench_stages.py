"""`mlirhlo opt --stage ptx` against a bare-jaxlib script doing the same compile.

    python scripts/bench_stages.py [--repeats N] [--module FILE] [--gpu-spec NAME]

Two comparisons, in one run on the same machine:
- end to end: the CLI as a user runs it, against a minimal script that loads
  the HLO, compiles device-less for the same spec with a dump directory and
  prints the PTX (both as fresh processes, so both pay jax's import);
- in process: the driver's API (load + compile + read the ptx stage) against
  the bare compile, after warm-up, to show the driver's own overhead.
Prints medians and the driver/bare ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_common import time_command  # noqa: E402

BARE = r'''
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
    opts.env_option_overrides = [("xla_gpu_autotune_level", 0)]
    devices[0].client.compile(module, executable_devices=xla_client.DeviceList(tuple(devices)),
                              compile_options=opts)
    for p in sorted(glob.glob(os.path.join(d, "*.ptx"))):
        sys.stdout.write(open(p).read())
'''




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--module", default=str(REPO / "tests/data/mlp_train_step.before_optimizations.txt"))
    parser.add_argument("--gpu-spec", default="h100_sxm")
    args = parser.parse_args()
    spec_path = str(REPO / "gpu_specs" / f"{args.gpu_spec}.txtpb")

    cli = [sys.executable, "-c", "import sys; from mlirhlo_driver.cli import main; main(sys.argv[1:])",
           "opt", args.module, "--platform", "cuda", "--gpu-spec", args.gpu_spec, "--stage", "ptx"]
    bare = [sys.executable, "-c", BARE, args.module, spec_path]
    time_command(cli), time_command(bare)  # warm the page cache
    cli_t, bare_t = [], []
    for _ in range(args.repeats):  # interleaved: A B A B, fair on a noisy machine
        cli_t.append(time_command(cli))
        bare_t.append(time_command(bare))

    from mlirhlo_driver import _jaxlib, api, gpu_specs, inputs

    spec = gpu_specs.resolve_spec(args.gpu_spec)
    text = Path(args.module).read_text()

    def bare_in_process() -> None:
        import glob
        import os
        import tempfile

        module = inputs.parse_mlir(_jaxlib.hlo_proto_to_stablehlo_bytecode(_jaxlib.hlo_text_to_proto(text)))
        devices = _jaxlib.cuda_compile_only_devices(spec.text)
        with tempfile.TemporaryDirectory() as d:
            _jaxlib.compile_executable(module, devices, _jaxlib.compile_options(
                dump_to=d, env_overrides=[("xla_gpu_autotune_level", 0)]))
            for p in sorted(glob.glob(os.path.join(d, "*.ptx"))):
                open(p).read()

    def driver_in_process() -> None:
        api.compile(args.module, platform="cuda", gpu_spec=args.gpu_spec).stage("ptx")

    bare_in_process(), driver_in_process()
    drv_i, bare_i = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter(); driver_in_process(); drv_i.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); bare_in_process(); bare_i.append(time.perf_counter() - t0)

    rows = [("end to end (fresh process)", statistics.median(cli_t), statistics.median(bare_t)),
            ("in process (warm)", statistics.median(drv_i), statistics.median(bare_i))]
    print(f"module {Path(args.module).name}, spec {args.gpu_spec}, {args.repeats} repeats (medians)")
    print(f"{'':<28}{'mlirhlo s':>10}{'bare s':>9}{'ratio':>8}")
    for name, a, b in rows:
        print(f"{name:<28}{a:>10.3f}{b:>9.3f}{a / b:>7.2f}x")


if __name__ == "__main__":
    main()
