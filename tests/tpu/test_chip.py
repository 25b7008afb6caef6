"""On a TPU chip: runs, SPMD, the API, replayed dumps, and device-less against the chip.

Marked ``tpu`` and skipped without a chip on the PCI bus (CI has none). One program holds
a chip at a time, so each test runs the driver in a process of its own and this one never
opens the chip; ``scripts/tpu_chip.py run`` runs this file there, in one pytest process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mlirhlo_driver.tpu import chips

DATA = Path(__file__).resolve().parent.parent / "data"
MLP = DATA / "mlp_train_step.before_optimizations.txt"

pytestmark = [pytest.mark.tpu, pytest.mark.skipif(chips.attached() is None, reason="needs a TPU chip")]


def driver(*args: str, tool: str = "mlirhlo", timeout: float = 300) -> subprocess.CompletedProcess:
    """A command line in a process of its own (the chip is that process's)."""
    mains = {"mlirhlo": "from mlirhlo_driver.cli.mlirhlo import main; main()",
             "run_hlo_module": "from mlirhlo_driver.cli.xla.tools import run_hlo_module_main; run_hlo_module_main()",
             "multihost_hlo_runner": "from mlirhlo_driver.cli.xla.tools import multihost_main; multihost_main()"}
    return subprocess.run([sys.executable, "-c", f"import sys; sys.argv[0] = {tool!r}; {mains[tool]}",
                           *map(str, args)], capture_output=True, text=True, timeout=timeout)


def python(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


def rows(path: Path) -> dict[str, dict]:
    return {r["module"]: r for r in json.loads(path.read_text())}


def test_run_on_the_chip_matches_xla_cpu_computing_its_products_as_the_chip_does(tmp_path):
    report = tmp_path / "r.json"
    done = driver("run", DATA / "mm_add.mlir", MLP, DATA / "erf_inv.mlir", "--platform", "tpu",
                  "--iterations", "5", "--json", report)
    assert done.returncode == 0, done.stdout + done.stderr
    found = rows(report)
    assert {r["status"] for r in found.values()} == {"ok"}
    assert all(r["run_ms"] > 0 for r in found.values())
    # products at DEFAULT precision: the reference computes them as the chip does, and says so
    assert any("rounds their operands to bfloat16" in n for n in found["mm_add"]["notes"])
    assert not any("bfloat16" in n for n in found["erf_inv"]["notes"])
    assert "reference (cpu)" in done.stdout


def test_precision_highest_makes_the_chip_agree_at_float32s_own_tolerance(tmp_path):
    report = tmp_path / "r.json"
    done = driver("run", MLP, DATA / "mm_add.mlir", "--platform", "tpu", "--precision", "highest",
                  "--json", report)
    assert done.returncode == 0, done.stdout + done.stderr
    for r in rows(report).values():
        assert r["status"] == "ok" and not any("bfloat16" in n for n in r["notes"])
        assert r["max_abs_error"] < 1e-2


def test_run_hlo_module_platform_tpu(tmp_path):
    done = driver("--platform=TPU", "--reference_platform=CPU", MLP, tool="run_hlo_module")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0/1 runs miscompared" in done.stderr


def test_spmd_run_on_the_chips_there_are():
    done = driver("spmd-run", DATA / "mm_add.mlir", "--platform", "tpu")
    assert done.returncode == 0, done.stdout + done.stderr
    found = chips.attached()
    more = driver("spmd-run", DATA / "sharded_matmul.mlir", "--platform", "tpu", "--num-partitions",
                  str(found.count * 4))
    assert more.returncode == 2
    line = more.stderr.strip().splitlines()
    assert len(line) == 1 and line[0].startswith("error:") and "attached" in line[0] and "device-less" in line[0]


def test_multihost_hlo_runner_device_type_tpu():
    done = driver("--device_type=tpu", DATA / "mm_add.mlir", tool="multihost_hlo_runner")
    assert done.returncode == 0, done.stdout + done.stderr


def test_api_runs_a_device_less_compile_on_the_chip():
    done = python(f"""
        import mlirhlo_driver as mh
        c = mh.compile({str(MLP)!r}, mh.Target.tpu("v5e:1x1"))
        r = c.run()
        print(r.status, r.reference_ms is not None)
        """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["ok", "True"]


def test_device_less_compile_is_the_chips_own():
    done = python(f"""
        import json
        from mlirhlo_driver.core.program import InputOptions, programs
        from mlirhlo_driver.execute import tpu_chip
        from mlirhlo_driver.xla import backend
        out = []
        for path in [{str(MLP)!r}, {str(DATA / "mm_add.mlir")!r}]:
            p = programs([path], InputOptions())[0]
            out.append(tpu_chip.compare(backend.module_for_xla(p.module, p.source), p.name).row())
        print(json.dumps(out))
        """)
    assert done.returncode == 0, done.stderr
    for row in json.loads(done.stdout.strip().splitlines()[-1]):
        assert row["same_hlo"], row["hlo_diff"]
        # measured on a v5e: only the code size may differ, by 512 bytes (execute/tpu_chip.py)
        differing = row["memory_differences"]
        assert set(differing) <= {"generated_code_size_in_bytes"}, differing
        assert all(abs(a - b) <= 1024 for a, b in differing.values()), differing


def test_a_dump_jax_wrote_on_the_chip_replays_device_less_and_runs(tmp_path):
    dump = tmp_path / "dump"
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={dump} --xla_dump_hlo_as_text --xla_dump_hlo_as_proto"}
    made = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import jax, jax.numpy as jnp
        def step(w, x):
            return jnp.tanh(x @ w).sum(axis=0) * 2.0
        w = jnp.ones((256, 128), jnp.float32) / 256
        x = jnp.arange(64 * 256, dtype=jnp.float32).reshape(64, 256) / 1000
        print(jax.jit(step).lower(w, x).compile(
            compiler_options={"xla_tpu_enable_copy_fusion": False})(w, x).sum())
        """)], env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    before = sorted(dump.glob("module_*jit_step*before_optimizations.txt"))
    after = sorted(dump.glob("module_*jit_step*after_optimizations.txt"))
    assert before and after, sorted(p.name for p in dump.iterdir())
    hlo = tmp_path / "replayed.txt"
    done = driver("opt", before[0], "--platform", "tpu", "--stage", "hlo", "-o", hlo)
    assert done.returncode == 0, done.stderr
    from mlirhlo_driver.execute.tpu_chip import comparable_hlo

    assert comparable_hlo(hlo.read_text()) == comparable_hlo(after[0].read_text())
    report = tmp_path / "r.json"
    ran = driver("run", before[0], "--platform", "tpu", "--json", report)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (row,) = rows(report).values()
    assert any("compiled as dumped" in n and "xla_tpu_enable_copy_fusion" in n for n in row["notes"])


def test_a_jax_function_is_lowered_for_the_tpu_and_runs_there(tmp_path):
    report = tmp_path / "r.json"
    # jnp.linalg.solve: LAPACK custom calls when lowered for the CPU, TPU kernels for the TPU
    done = driver("run", f"{DATA / 'tpu' / 'linalg.py'}:solve", "--args", "f32[64,64],f32[64,8]",
                  "--platform", "tpu", "--json", report)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    (row,) = rows(report).values()
    # ran on the chip against the function's CPU lowering (random matrices may be ill-conditioned)
    assert row["status"] in ("ok", "mismatch"), row["message"]


def test_bisect_on_the_chip_names_the_first_op_the_chip_computes_differently(tmp_path):
    import numpy as np

    t = "tensor<4096xf32>"
    module = tmp_path / "m.mlir"
    module.write_text(f"func.func @main(%x: {t}) -> {t} {{\n"
                      f"  %a = stablehlo.add %x, %x : {t}\n"
                      f"  %e = stablehlo.exponential %a : {t}\n"
                      f"  %r = stablehlo.multiply %e, %x : {t}\n"
                      f"  return %r : {t}\n}}\n")
    inputs = tmp_path / "in.npz"
    np.savez(inputs, np.linspace(-3, 3, 4096, dtype=np.float32))
    # exact comparison: x + x is exact on both sides; the chip's exp is its own approximation
    done = driver("run", module, "--platform", "tpu", "--inputs", inputs, "--rtol", "0", "--atol", "0",
                  "--bisect")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"bisect: first divergence at {module}:3:" in done.stdout, done.stdout
    assert "stablehlo.exponential" in done.stdout.split("bisect:")[1].splitlines()[0]
