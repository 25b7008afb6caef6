"""``mlirhlo spmd-run`` as a user runs it: SPMD partitions, replicas, collectives and
several processes.

Runs that need several CPU devices use a fresh process each: the device count
is fixed when jax starts. Every subprocess has a timeout, and multi-process
runs use loopback only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import DATA, REPO, assert_mentions, assert_one_line_error, readline_within
from tests.e2e.conftest import report_line


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


SPMD = DATA / "spmd"

MATMUL_AR = SPMD / "matmul_allreduce.partitioned.hlo"

MATMUL = SPMD / "matmul.hlo"

COLLECTIVES = SPMD / "collectives.partitioned.hlo"

MLP = SPMD / "mlp_step_4way.before_optimizations.txt"

PARTITIONED = ["--num-partitions", "4", "--is-spmd-partitioned-module"]


def _jaxlib_version() -> str:
    from mlirhlo_driver._native import jaxlib as _jaxlib

    return _jaxlib.jaxlib_version()


def spmd(*args: object, timeout: float = 120, cwd: Path = REPO) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "spmd-run", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def rand(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def check_collectives(got, a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(got["out0"], a)                                    # all-gather
    np.testing.assert_allclose(got["out1"], a.reshape(4, 2, 3).sum(0), rtol=1e-6)  # all-reduce
    np.testing.assert_allclose(got["out2"], b.sum(0), rtol=1e-6)                   # reduce-scatter
    np.testing.assert_allclose(got["out3"], b.reshape(4, 4, 2).transpose(1, 0, 2).reshape(4, 8))  # all-to-all
    np.testing.assert_allclose(got["out4"], np.roll(a, 2, axis=0))                # collective-permute


def mlp_step(w1, b1, w2, b2, x, y, lr=0.1):
    """The sample's training step, by hand in float64."""
    h = np.tanh(x @ w1 + b1)
    diff = h @ w2 + b2 - y
    dout = 2 * diff / diff.size
    dpre = (dout @ w2.T) * (1 - h ** 2)
    grads = (x.T @ dpre, dpre.sum(0), h.T @ dout, dout.sum(0))
    return [p - lr * g for p, g in zip((w1, b1, w2, b2), grads)] + [np.mean(diff ** 2)]


def mlp_inputs(tmp_path: Path) -> tuple[Path, list[np.ndarray]]:
    shapes = [(16, 32), (32,), (32, 8), (8,), (32, 16), (32, 8)]
    arrays = [rand(10 + i, *s) for i, s in enumerate(shapes)]
    return npz(tmp_path / "mlp.npz", **{f"arg{i}": a for i, a in enumerate(arrays)}), arrays


def check_mlp(path: Path, arrays: list[np.ndarray]) -> None:
    got = np.load(path)
    want = mlp_step(*[a.astype(np.float64) for a in arrays])
    for i, w in enumerate(want):
        np.testing.assert_allclose(got[f"out{i}"], w, rtol=1e-4, atol=1e-5)


HLO_SHARDED = """HloModule hlo_sharded

ENTRY main {
  x = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[16,6] parameter(1), sharding={replicated}
  d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[8,6] tanh(d), sharding={devices=[4,1]<=[4]}
}
"""


def long_run(*extra: str) -> list[str]:
    """A run long enough to be interrupted mid-way."""
    return [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "spmd-run", str(MATMUL_AR), *PARTITIONED,
            "--num-repeats", "1000000", *extra]


def start_launch_local() -> tuple[subprocess.Popen, dict[int, int]]:
    """A long --launch-local 2 run, once both processes have joined; and their pids."""
    proc = subprocess.Popen(long_run("--launch-local", "2", "--timeout", "60"), cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pids: dict[int, int] = {}
    try:
        while len(pids) < 2:
            line = readline_within(proc.stderr)
            assert line, "the run ended or stalled before starting its processes"
            m = re.match(r"note: process (\d) is pid (\d+)", line)
            if m:
                pids[int(m.group(1))] = int(m.group(2))
        assert "joined the run" in readline_within(proc.stdout)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return proc, pids


def assert_gone(pids: dict[int, int]) -> None:
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


WEDGED_WORKER = """
import json, sys, time
from mlirhlo_driver.execute import spmd
spmd._GRACE_S = 0.0
spmd.worker = lambda cfg: time.sleep(60) or 0  # stuck in a collective, its supervisor gone
cfg = spmd.WorkerConfig("m.hlo", None, None, {}, 2, 1, "127.0.0.1:1", time.time() + 0.5, 7.0)
spmd.worker_main([json.dumps(spmd.asdict(cfg))])
"""


# ------------------------------------------------ what the installed jax writes

def _v3() -> bool:
    from mlirhlo_driver._native import jaxlib as _jaxlib

    return _jaxlib.jaxlib_at_least("0.12.0")  # named mesh shardings (HloShardingV3) are jaxlib 0.12's


V3 = _v3()

needs_v3 = pytest.mark.skipif(not V3, reason="named mesh shardings (HloShardingV3) need jaxlib 0.12")

# Dumps of jax 0.12 programs (tests/sharded_programs.py): named mesh shardings, shard_map's custom calls.
JAX012_MLP = SPMD / "jax012_mlp_4way.before_optimizations.txt"

JAX012_SHARD_MAP = SPMD / "jax012_shard_map_4way.before_optimizations.txt"


def jax_programs(devices: int) -> dict[str, dict[str, Path]]:
    from tests import sharded_programs

    return sharded_programs.programs(devices)


def test_spmd_run_runs_once_by_default(cli, mlir_file):
    # --num-repeats defaults to 1: one run, so no per-run time list and no median.
    r = cli("spmd-run", mlir_file)
    assert r.code == 0, r.err
    [line] = [ln for ln in r.out.splitlines() if ln.strip().startswith("compile ")]
    assert ", run " in line and "median" not in line, line
    assert "run times (ms)" not in r.out


# ------------------------------------------------------------ one process

@pytest.mark.slow
def test_partitioned_matmul_all_reduce_matches_reference_and_numpy(tmp_path):
    x, w = rand(1, 8, 16), rand(2, 16, 6)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(MATMUL_AR, *PARTITIONED, "--reference-module", MATMUL,
                     "--inputs", npz(tmp_path / "in.npz", arg0=x, arg1=w), "--dump-output", out))
    assert "matmul_allreduce.partitioned: OK" in stdout
    assert_mentions(report_line(stdout, "parameter 0 x "), "float32[8, 16]", "{devices=[1,4]<=[4]}", "[8, 4]")
    assert_mentions(report_line(stdout, "reference: "), str(MATMUL), "1 device")
    np.testing.assert_allclose(np.load(out)["out0"], x @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_every_collective_matches_numpy(tmp_path):
    a, b = rand(3, 8, 3), rand(4, 4, 8)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(COLLECTIVES, *PARTITIONED, "--inputs", npz(tmp_path / "in.npz", arg0=a, arg1=b),
                     "--dump-output", out))
    assert "collectives.partitioned: RAN" in stdout  # no unpartitioned computation to compare with
    check_collectives(np.load(out), a, b)


@pytest.mark.slow
def test_device_id_inputs_show_where_data_went(tmp_path):
    out = tmp_path / "out.npz"
    stdout = ok(spmd(COLLECTIVES, *PARTITIONED, "--argument-mode", "device-id", "--dump-output", out))
    assert "inputs: device-id" in stdout
    got = np.load(out)
    ids = np.repeat(np.arange(4.0), 2)[:, None] * np.ones((1, 3))
    np.testing.assert_array_equal(got["out0"], ids)                     # all-gather of each device's id
    np.testing.assert_array_equal(got["out4"], np.roll(ids, 2, axis=0))  # each id moved one device on


@pytest.mark.slow
def test_device_id_inputs_meet_the_reference_only_where_each_element_has_one_owner():
    """Device-id inputs of tiles nobody shares are one global array: the reference runs on it.
    A tile held by two devices gets two ids: no reference, and the note says why."""
    stdout = ok(spmd(MATMUL_AR, *PARTITIONED, "--reference-module", MATMUL, "--argument-mode", "device-id"))
    assert "matmul_allreduce.partitioned: OK" in stdout
    assert_mentions(report_line(stdout, "reference: "), str(MATMUL), "1 device")
    assert "max abs error 0\n" in stdout
    proc = spmd(MATMUL, "--num-partitions", "4", "--reference-module", MATMUL, "--argument-mode", "device-id",
                "--arg-sharding", "0={devices=[2,1,2]<=[4] last_tile_dim_replicate}")
    assert_mentions(report_line(proc.stdout, "no reference: "), "device-id")
    assert "max abs error" not in proc.stdout


@pytest.mark.slow
def test_sharded_jax_mlp_step_on_four_devices(tmp_path):
    inputs, arrays = mlp_inputs(tmp_path)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(MLP, "--num-partitions", "4", "--inputs", inputs, "--num-repeats", "3",
                     "--dump-output", out))
    assert "mlp_step_4way: OK" in stdout
    assert "partitioner: shardy" in stdout
    assert_mentions(report_line(stdout, "parameter 4 x "), "float32[32, 16]", "{devices=[4,1]<=[4]}", "[8, 16]")
    assert_mentions(report_line(stdout, "reference: "), "the same module", "1 device")
    assert re.search(r"run times \(ms\): [\d.]+, [\d.]+, [\d.]+\n", stdout)
    assert float(re.search(r"max abs error (\S+)", stdout).group(1)) < 1e-5
    check_mlp(out, arrays)


@pytest.mark.slow
@pytest.mark.parametrize("name, partitioner", [("sharded_matmul.mlir", "shardy"), ("hlo_sharded.hlo", "gspmd")])
def test_modules_keep_their_shardings(tmp_path, name, partitioner):
    path = DATA / name if name.endswith(".mlir") else tmp_path / name
    if not path.exists():
        path.write_text(HLO_SHARDED)
    stdout = ok(spmd(path, "--num-partitions", "4"))
    assert f"partitioner: {partitioner}" in stdout and ": OK" in stdout
    assert re.search(r"parameter 0 \S+ float32\[8, 16\]: \{devices=\[4,1\]<=\[4\]\}, \[2, 16\] per device", stdout)
    assert re.search(r"output 0 float32\[8, \d\]: \{devices=\[4,1\]<=\[4\]\}, \[2, \d\] per device", stdout)


@pytest.mark.slow
def test_arg_sharding_partitions_an_unsharded_module_with_gspmd(tmp_path):
    stdout = ok(spmd(MATMUL, "--num-partitions", "4", "--arg-sharding", "0=devices=[1,4]<=[4]",
                     "--arg-sharding", "1={devices=[4,1]<=[4]}"))
    assert "matmul: OK" in stdout and "partitioner: gspmd" in stdout
    assert_mentions(report_line(stdout, "parameter 1 w "), "float32[16, 6]", "{devices=[4,1]<=[4]}", "[4, 6]")


@pytest.mark.slow
def test_a_partly_replicated_sharding_runs(tmp_path):
    """Tiles over 2 of the 4 devices, each tile on 2 (a REPLICATED subgroup): spmd-run lays it out."""
    stdout = ok(spmd(MATMUL, "--num-partitions", "4",
                     "--arg-sharding", "0={devices=[2,1,2]<=[4] last_tile_dim_replicate}"))
    assert "matmul: OK" in stdout
    assert_mentions(report_line(stdout, "parameter 0 x "), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "[4, 16]")


@pytest.mark.slow
def test_a_jax_function_partitioned_from_the_command_line(tmp_path):
    (tmp_path / "model.py").write_text("import jax.numpy as jnp\n\n"
                                       "def f(x, w):\n    return jnp.tanh(x @ w).sum(axis=1)\n")
    stdout = ok(spmd("model:f", "--args", "f32[8,4],f32[4,3]", "--num-partitions", "2",
                     "--arg-sharding", "0=devices=[2,1]<=[2]", cwd=tmp_path))
    assert "f: OK" in stdout
    assert_mentions(report_line(stdout, "parameter 0 x "), "float32[8, 4]", "{devices=[2,1]<=[2]}", "[4, 4]")


@pytest.mark.slow
def test_replicas_get_their_own_inputs_and_talk_to_each_other(tmp_path):
    stdout = ok(spmd(MATMUL, "--num-replicas", "2"))
    assert "matmul: OK" in stdout
    assert_mentions(report_line(stdout, "devices: "), "2 replicas", "1 partition")
    assert_mentions(report_line(stdout, "inputs: "), "seeds 0..1")
    shared = ok(spmd(MATMUL, "--num-replicas", "2", "--argument-mode", "shared-random"))
    assert_mentions(report_line(shared, "inputs: "), "seed 0", "every replica")
    module = tmp_path / "cross_replica.hlo"
    module.write_text("HloModule cross_replica, replica_count=2\n\n"
                      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
                      "ENTRY main {\n  p = f32[3] parameter(0)\n"
                      "  ROOT s = f32[3] all-reduce(p), replica_groups={{0,1}}, to_apply=add\n}\n")
    out = tmp_path / "out.npz"
    ok(spmd(module, "--num-replicas", "2", "--argument-mode", "device-id", "--reference", "none",
            "--dump-output", out))
    np.testing.assert_array_equal(np.load(out)["out0"], np.ones((2, 3)))  # 0 + 1 on both replicas


@pytest.mark.slow
def test_a_wrong_result_is_a_mismatch(tmp_path):
    wrong = tmp_path / "wrong.hlo"
    wrong.write_text(MATMUL.read_text().replace("ROOT d = f32[8,6] dot(x, w)", "d = f32[8,6] dot(x, w)")
                     .replace("\n}", "\n  ROOT t = f32[8,6] tanh(d)\n}"))
    proc = spmd(MATMUL_AR, *PARTITIONED, "--reference-module", wrong)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "matmul_allreduce.partitioned: MISMATCH: output 0:" in proc.stdout
    assert "output 0 (float32[8, 6]):" in proc.stdout and "elements differ" in proc.stdout


@pytest.mark.slow
def test_backend_only_takes_a_two_way_module_as_already_partitioned(tmp_path):
    """--run-xla-backend-only with more than one partition: the module is per-device, as with
    --is-spmd-partitioned-module (here 2 ways: the smallest count that is partitioned)."""
    two = tmp_path / "matmul_allreduce_2way.hlo"
    two.write_text(MATMUL_AR.read_text().replace("num_partitions=4", "num_partitions=2")
                   .replace("f32[8,4] parameter(0), sharding={devices=[1,4]<=[4]}",
                            "f32[8,8] parameter(0), sharding={devices=[1,2]<=[2]}")
                   .replace("f32[4,6] parameter(1), sharding={devices=[4,1]<=[4]}",
                            "f32[8,6] parameter(1), sharding={devices=[2,1]<=[2]}")
                   .replace("replica_groups={{0,1,2,3}}", "replica_groups={{0,1}}"))
    stdout = ok(spmd(two, "--num-partitions", "2", "--run-xla-backend-only", "--reference-module", MATMUL))
    assert "matmul_allreduce_2way: OK" in stdout
    assert_mentions(report_line(stdout, "parameter 0 x "), "float32[8, 16]", "{devices=[1,2]<=[2]}", "[8, 8]")


@pytest.mark.slow
def test_backend_only_runs_a_module_without_fusions_and_explains_cpu_dumps(tmp_path, cli):
    stdout = ok(spmd(MATMUL_AR, "--num-partitions", "4", "--run-xla-backend-only",
                     "--reference-module", MATMUL))
    assert "matmul_allreduce.partitioned: OK" in stdout
    after = tmp_path / "matmul.after_optimizations.hlo"
    assert cli("opt", MATMUL, "--platform", "cpu", "--stage", "hlo", "-o", after).code == 0
    proc = spmd(after, "--run-xla-backend-only")
    from mlirhlo_driver._native import jaxlib as _jaxlib

    if not _jaxlib.jaxlib_at_least("0.10.2"):
        # jaxlib 0.9's XLA CPU runs fusions without a backend config.
        assert proc.returncode == 0 and "matmul: OK" in proc.stdout, proc.stdout + proc.stderr
        return
    assert proc.returncode == 1 and proc.stdout == ""
    assert_mentions(proc.stderr, "XLA's output after its optimizations", "fusions", "before_optimizations.txt")


# ------------------------------------------------------------- bad input

@pytest.mark.parametrize("args, message", [
    (["--num-partitions", "2", "--num-replicas", "2"], "replicas and partitions together"),
    (["--num-partitions", "4", "--arg-sharding", "0=devices=[4,1<=[4]"], "error: --arg-sharding:14: malformed sharding 'devices=[4,1<=[4]': expected ']'"),
    (["--num-partitions", "4", "--arg-sharding", "devices=[4]"], "expected PARAM=SHARDING"),
    (["--argument-mode", "devce-id"], "did you mean 'device-id'"),
    (["--inputs", "x.npz", "--argument-mode", "zeros"], "give --inputs or --argument-mode"),
    (["--launch-local", "2", "--process-id", "0"], "not both"),
    (["--num-processes", "2", "--process-id", "0", "--coordinator", "nohost"], "'nohost' is not HOST:PORT"),
    # Rejected while parsing, not after waiting out --timeout for peers that cannot join.
    (["--num-processes", "2", "--process-id", "0", "--coordinator", "localhost:99999"], "port 99999 is not 1-65535"),
    (["--num-processes", "2", "--process-id", "0", "--coordinator", "localhost:0"], "port 0 is not 1-65535"),
    (["--num-partitions", "100000"], "need 100000 devices; one process can create at most 1024 CPU devices"),
    (["--num-partitions", "4096", "--launch-local", "2"], "2048 in each of 2 processes"),
    (["--seed", "-1"], "Invalid value for '--seed'"),
    (["--rtol", "nan"], "nan is not a finite number >= 0"),
    (["--atol", "-1"], "Invalid value for '--atol'"),
    (["--timeout", "nan"], "Invalid value for '--timeout'"),
    (["--num-processes", "2", "--process-id", "2", "--coordinator", "h:1"], "--process-id must be 0 to 1"),
    (["--num-partitions", "3", "--launch-local", "2"], "3 devices cannot be split evenly over 2"),
    (["--bogus"], "no such option: --bogus"),
])
def test_usage_errors_are_one_line(cli, args, message):
    assert_one_line_error(cli("spmd-run", MATMUL, *args), contains=message)


@pytest.mark.parametrize("args, message", [
    ([SPMD / "missing.hlo"], "missing.hlo: no such file or directory"),
    ([DATA / "sharded_matmul.mlir", "--num-partitions", "4", "--partitioner", "gspmd"],
     "shardings are Shardy's (sdy); the GSPMD partitioner cannot read them (--partitioner shardy)"),
    ([MATMUL, "--num-partitions", "4", "--arg-sharding", "0=devices=[4,1]<=[4]", "--partitioner", "shardy"],
     f"Shardy cannot import them in jaxlib {_jaxlib_version()} (--partitioner gspmd)"),
    ([MATMUL_AR, "--num-partitions", "2", "--is-spmd-partitioned-module"],
     "parameter 0: sharding {devices=[1,4]<=[4]} spans 4 devices, but there are 2 partitions"),
    # Shardings for another device count: one line naming the flag, not XLA's verifier.
    ([MATMUL, "--num-partitions", "3", "--arg-sharding", "0=devices=[1,4]<=[4]"],
     "error: --arg-sharding: parameter 0: sharding {devices=[1,4]<=[4]} is for 4 devices, but --num-partitions is 3"),
    ([MATMUL, "--num-partitions", "4", "--arg-sharding", "0=devices=[1,1,4]<=[4]"],
     "error: --arg-sharding: parameter 0: sharding {devices=[1,1,4]<=[4]} tiles 3 dimensions"),
    # Manual values on a module XLA partitions are refused before compiling, naming the flag.
    ([MATMUL, "--num-partitions", "4", "--arg-sharding", "0={devices=[2,1,2]<=[4] last_tile_dims={manual}}"],
     "error: --arg-sharding: parameter 0: sharding {devices=[2,1,2]<=[4] last_tile_dims={manual}} is not "
     "supported by spmd-run (manual values are per device: run an already partitioned module, "
     "--is-spmd-partitioned-module)"),
    ([MATMUL, "--num-partitions", "4", "--arg-sharding", "0={maximal device=5}"],
     "names device 5, but --num-partitions is 4"),
    # The first device past the last partition: ids run 0..P-1.
    ([MATMUL, "--num-partitions", "4", "--arg-sharding", "0={maximal device=4}"],
     "error: --arg-sharding: parameter 0: sharding {maximal device=4} names device 4, but --num-partitions is 4"),
    ([MLP, "--num-partitions", "3"],
     "the module's Shardy mesh [batch=4] has 4 devices, but --num-partitions is 3 (--num-partitions 4)"),
    ([MATMUL_AR, *PARTITIONED, "--reference-module", DATA / "sharded_matmul.mlir"],
     "the reference's parameters (float32[8, 16], float32[16, 4]) differ"),
])
@pytest.mark.golden
def test_bad_modules_are_one_line_errors(args, message):
    """Golden (spmd-run's words for a module, sharding or reference that does not fit the run;
    pinned only here)."""
    proc = spmd(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr
    assert proc.stdout == ""


@pytest.mark.slow
def test_a_one_device_shardy_mesh_runs_on_any_partition_count(tmp_path):
    """A mesh whose axes are all of size 1 shards nothing: every partition holds it all, so
    it is no mismatch with --num-partitions (a bigger mesh is: see above)."""
    text = (DATA / "sharded_matmul.mlir").read_text()
    one = tmp_path / "one_device_mesh.mlir"
    one.write_text(text.replace('"x"=4', '"x"=1').replace("size = 4 : i64", "size = 1 : i64")
                   .replace("num_partitions = 4", "num_partitions = 2"))
    stdout = ok(spmd(one, "--num-partitions", "2"))
    assert stdout.startswith("one_device_mesh: OK\n")
    assert_mentions(report_line(stdout, "parameter 0 arg0 "), "float32[8, 16]", "{replicated}")


# ------------------------------------------------------- several processes

@pytest.mark.slow
def test_mlp_step_across_two_local_processes(tmp_path):
    inputs, arrays = mlp_inputs(tmp_path)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(MLP, "--num-partitions", "4", "--launch-local", "2", "--inputs", inputs,
                     "--dump-output", out, "--timeout", "60", timeout=90))
    assert_mentions(report_line(stdout, "process 1 of 2: devices"), "partition 2", "partition 3")
    assert "[0] mlp_step_4way: OK" in stdout
    assert_mentions(report_line(stdout, "gathered from"), "2 processes")
    assert "[1] mlp_step_4way" not in stdout  # only process 0 gathers and compares
    check_mlp(out, arrays)


@pytest.mark.slow
def test_collectives_and_all_reduce_matmul_across_two_local_processes(tmp_path):
    a, b = rand(3, 8, 3), rand(4, 4, 8)
    out = tmp_path / "out.npz"
    ok(spmd(COLLECTIVES, *PARTITIONED, "--launch-local", "2", "--inputs",
            npz(tmp_path / "in.npz", arg0=a, arg1=b), "--dump-output", out, "--timeout", "60", timeout=90))
    check_collectives(np.load(out), a, b)
    stdout = ok(spmd(MATMUL_AR, *PARTITIONED, "--reference-module", MATMUL, "--launch-local", "2",
                     "--timeout", "60", timeout=90))
    assert "[0] matmul_allreduce.partitioned: OK" in stdout


@pytest.mark.slow
def test_launch_local_stops_everything_when_a_process_dies():
    proc, pids = start_launch_local()
    try:
        os.kill(pids[1], signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert err.strip().splitlines()[-1].startswith("error: process 1: "), err
    assert_mentions(err.strip().splitlines()[-1], "SIGKILL")
    assert_gone(pids)


@pytest.mark.slow
def test_ctrl_c_stops_every_process():
    proc, pids = start_launch_local()
    try:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        for pid in pids.values():  # a failure here must not leave the workers loading the machine
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert err.strip().splitlines()[-1].startswith("error: interrupted"), err
    assert_gone(pids)


@pytest.mark.slow
def test_launch_local_timeout_stops_every_process():
    proc = subprocess.run(long_run("--launch-local", "2", "--timeout", "6"), cwd=REPO, text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 1
    assert re.search(r"^error: timed out after 6 s \(--timeout\); processes 0, 1 still running",
                     proc.stderr, re.M), proc.stderr


@pytest.mark.slow
def test_a_wedged_worker_ends_itself_as_a_timeout_failure():
    """A worker still running past its deadline exits 1 (a failure, not usage) with one timeout error line."""
    proc = subprocess.run([sys.executable, "-c", WEDGED_WORKER], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("error: process 1: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert_mentions(proc.stderr, "7 s", "--timeout")
    assert proc.stdout == ""


@pytest.mark.slow
def test_the_partitioner_line_says_whether_the_module_was_already_partitioned(tmp_path):
    """No partitioner: 'none: already partitioned' for a per-device module, plain 'none' otherwise."""
    x, w = rand(1, 8, 16), rand(2, 16, 6)
    stdout = ok(spmd(MATMUL_AR, *PARTITIONED, "--reference-module", MATMUL,
                     "--inputs", npz(tmp_path / "in.npz", arg0=x, arg1=w)))
    assert_mentions(report_line(stdout, "devices: "), "partitioner: none", "already partitioned")
    stdout = ok(spmd(MATMUL, "--num-partitions", "1", "--inputs", npz(tmp_path / "in1.npz", arg0=x, arg1=w)))
    assert "matmul: OK" in stdout
    assert re.search(r"partitioner: none$", stdout, re.M), stdout


@pytest.mark.slow
def test_an_unsharded_per_device_output_is_gathered_as_one_value_per_partition(tmp_path):
    """A per-device output without a sharding comes back stacked as [partition, ...]."""
    partial = tmp_path / "partial.hlo"
    partial.write_text(MATMUL_AR.read_text().replace(
        "  ROOT sum = f32[8,6] all-reduce(partial), replica_groups={{0,1,2,3}}, use_global_device_ids=true, "
        "channel_id=1, to_apply=add, sharding={replicated}\n", "").replace("  partial =", "  ROOT partial ="))
    x, w = rand(1, 8, 16), rand(2, 16, 6)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(partial, *PARTITIONED, "--inputs", npz(tmp_path / "in.npz", arg0=x, arg1=w),
                     "--dump-output", out))
    assert "partial: RAN" in stdout
    assert_mentions(report_line(stdout, "output 0 "), "float32[4, 8, 6]", "no sharding", "[partition, ...]")
    got = np.load(out)["out0"]
    assert got.shape == (4, 8, 6)
    for p in range(4):
        np.testing.assert_allclose(got[p], x[:, 4 * p:4 * p + 4] @ w[4 * p:4 * p + 4], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("devices", [4, 8])
def test_every_program_jax_writes_runs_partitioned_against_its_reference(devices):
    """Program.run_spmd over every sharded program the installed jax writes, as XLA's dump (HLO
    text, HloProto) and as StableHLO with Shardy's attributes, on 4 and 8 host devices in one
    fresh process: laid out, run, gathered and matched; a shard_map program's reference is the
    same module with replicated parameters and outputs on its mesh, the others' one device."""
    files = {f"{name}.{kind}": str(path) for name, found in jax_programs(devices).items()
             for kind, path in found.items()}
    code = f"""
import json
import mlirhlo_driver as mh
rows = {{}}
for key, path in {json.dumps(files)}.items():
    r = mh.load(path).run_spmd(num_partitions={devices})
    rows[key] = [r.report.status, r.report.message, r.partitioner, r.notes[-1], r.param_layouts]
print(json.dumps(rows))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(rows) == sorted(files)
    for key, (status, message, partitioner, note, _) in rows.items():
        assert (status, message, partitioner) == ("ok", "", "shardy"), (key, rows[key])
        if key.startswith("shard_map."):
            assert note.startswith("reference: ") and f"{devices} devices" in note and "replicated" in note, (key, note)
        else:
            assert note.startswith("reference: ") and "1 device" in note, (key, note)
    # The batch is split over the mesh's devices: each holds 8 / devices rows of x.
    assert_mentions(rows["mlp.hlo"][4][0], "0 x float32[8, 16]", f"{{devices=[{devices},1]<=[{devices}]}}",
                    f"[{8 // devices}, 16]")
    assert "last_tile_dim_replicate}" in rows["mlp_2d.hlo.pb"][4][1]  # w1 tiled on y, replicated on x


@pytest.mark.slow
def test_a_named_sharding_dump_runs_with_spmd_run_as_written():
    """spmd-run on the HLO jax jits with NamedSharding (from jax 0.12: named mesh shardings):
    Shardy partitions it, each device gets its rows, and it matches the module on one device."""
    mlp = jax_programs(4)["mlp"]["hlo"]
    if V3:
        assert "sharding={mesh['b'=4], [{'b'}, {}]}" in mlp.read_text()
    stdout = ok(spmd(mlp, "--num-partitions", "4"))
    assert stdout.startswith("mlp: OK\n") and "partitioner: shardy" in stdout
    assert_mentions(report_line(stdout, "parameter 0 x "), "float32[8, 16]", "{devices=[4,1]<=[4]}", "[2, 16]")
    assert_mentions(report_line(stdout, "parameter 1 w1 "), "float32[16, 32]", "{replicated}")
    assert_mentions(report_line(stdout, "output 0 "), "float32[8, 4]", "{devices=[4,1]<=[4]}", "[2, 4]")


@pytest.mark.slow
def test_a_shard_map_program_computes_what_numpy_does(tmp_path):
    """shard_map's partial products psum-ed over y make a @ b: the gathered output is numpy's,
    from the HloProto dump (Shardy's manual computation, imported before partitioning)."""
    a, b = rand(5, 8, 8), rand(6, 8, 4)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(jax_programs(4)["shard_map"]["hlo.pb"], "--num-partitions", "4",
                     "--inputs", npz(tmp_path / "in.npz", a=a, b=b), "--dump-output", out))
    assert "shard_map: OK" in stdout
    np.testing.assert_allclose(np.load(out)["out0"], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("path, devices", [(JAX012_MLP, 4), (JAX012_SHARD_MAP, 4)])
def test_checked_in_jax_012_dumps(path, devices):
    """XLA's dumps of jax 0.12 programs, as a user has them: named mesh shardings run on jaxlib
    0.12; an older jaxlib, whose parser does not know them, says so in one line."""
    proc = spmd(path, "--num-partitions", devices)
    if not V3:
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error: ")
        return
    assert "sharding={mesh['" in path.read_text()
    stdout = ok(proc)
    assert ": OK\n" in stdout and "partitioner: shardy" in stdout


@pytest.mark.slow
@needs_v3
def test_arg_sharding_takes_the_named_spelling():
    """--arg-sharding with a named mesh sharding, braced or not: Shardy partitions the module."""
    stdout = ok(spmd(MATMUL, "--num-partitions", "4", "--arg-sharding", "0=mesh['b'=4], [{'b'}, {}]",
                     "--arg-sharding", "1={mesh['b'=4], [{}, {}]}"))
    assert "matmul: OK" in stdout and "partitioner: shardy" in stdout
    assert_mentions(report_line(stdout, "parameter 0 x "), "float32[8, 16]", "{devices=[4,1]<=[4]}", "[2, 16]")


@needs_v3
@pytest.mark.parametrize("args, message", [
    # XLA's parser aborts on an axis used twice: in the helper, named, one line.
    (["--arg-sharding", "0={mesh['b'=4], [{'b'}, {'b'}]}"],
     "error: --arg-sharding:3: malformed sharding '{mesh['b'=4], [{'b'}, {'b'}]}': XLA's sharding parser aborted: "
     "Check failed"),
    (["--arg-sharding", "0=mesh['b'=4], [{'c'}, {}]"],
     "error: --arg-sharding:20: malformed sharding 'mesh['b'=4], [{'c'}, {}]': axis 'c' is not a valid axis name"),
    (["--arg-sharding", "0={mesh['x'=2,'y'=2], [{'x'}, {}], unreduced={'y'}}"],
     "is not supported by spmd-run (unreduced values hold partial sums)"),
    (["--arg-sharding", "0={mesh['b'=2], [{'b'}, {}]}"],
     "parameter 0: sharding {mesh['b'=2], [{'b'}, {}]} is for a mesh of 2 devices, but --num-partitions is 4 "
     "(give a sharding over 4 devices)"),
])
@pytest.mark.golden
def test_named_sharding_mistakes_are_one_line(args, message):
    """Golden (a named sharding spmd-run cannot use; pinned only here)."""
    proc = spmd(MATMUL, "--num-partitions", "4", *args)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr


@needs_v3
def test_a_module_whose_op_sharding_xla_dies_on_is_one_line_naming_the_op(tmp_path):
    """A StableHLO module with an mhlo.sharding XLA's parser aborts on, on an op inside @main:
    XLA never compiles it; the error names the op and its line."""
    bad = tmp_path / "bad.mlir"
    bad.write_text('func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {\n'
                   '  %0 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{mesh[\'b\'=4], [{\'b\'}, {\'b\'}]}"}'
                   ' : (tensor<8x16xf32>) -> tensor<8x16xf32>\n'
                   '  return %0 : tensor<8x16xf32>\n}\n')
    proc = spmd(bad, "--num-partitions", "4")
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {bad}: stablehlo.custom_call at ") and ":2:8: malformed sharding" in line
    assert "abort" in line


@pytest.mark.slow
@needs_v3
def test_an_already_partitioned_module_with_named_and_manual_shardings(tmp_path):
    """Per-device modules say their layouts: a named sharding tiles (its mesh's devices), a
    {manual} value is each device's own, gathered as [partition, ...]."""
    module = tmp_path / "per_device.hlo"
    module.write_text("HloModule per_device, num_partitions=4\n\nENTRY main {\n"
                      "  x = f32[2,3] parameter(0), sharding={mesh['b'=4], [{'b'}, {}]}\n"
                      "  m = f32[3] parameter(1), sharding={manual}\n"
                      "  ROOT t = (f32[2,3], f32[3]) tuple(x, m), sharding={{mesh['b'=4], [{'b'}, {}]}, {manual}}\n}\n")
    x, m = rand(1, 8, 3), rand(2, 4, 3)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(module, *PARTITIONED, "--reference", "none", "--inputs", npz(tmp_path / "in.npz", x=x, m=m),
                     "--dump-output", out))
    assert_mentions(report_line(stdout, "parameter 0 x "), "float32[8, 3]", "{mesh['b'=4], [{'b'}, {}]}", "[2, 3]")
    assert_mentions(report_line(stdout, "parameter 1 m "), "float32[4, 3]", "{manual}", "[partition, ...]")
    np.testing.assert_array_equal(np.load(out)["out0"], x)
    np.testing.assert_array_equal(np.load(out)["out1"], m)


@pytest.mark.slow
def test_a_shard_map_program_across_two_local_processes(tmp_path):
    """jax's shard_map, split over two processes: each runs its devices' part, process 0 gathers
    a @ b. Its reference would be one more SPMD run every process must join: the note says so."""
    a, b = rand(7, 8, 8), rand(8, 8, 4)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(jax_programs(4)["shard_map"]["hlo"], "--num-partitions", "4", "--launch-local", "2",
                     "--inputs", npz(tmp_path / "in.npz", a=a, b=b), "--dump-output", out, "--timeout", "60",
                     timeout=90))
    assert "[0] shard_map: RAN" in stdout
    assert_mentions(report_line(stdout, "gathered from"), "2 processes")
    assert_mentions(report_line(stdout, "no reference: "), "manual computations", "--reference-module")
    np.testing.assert_allclose(np.load(out)["out0"], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("code", [0, 1])
def test_spmd_run_command_hands_over_its_options(cli, run_recorder, code):
    """spmd-run: the module, its options (defaults: one partition and replica, 300 s) and the
    --xla_* flags reach the launcher; the exit code is the launcher's."""
    run_recorder["code"] = code
    r = cli("spmd-run", "m.hlo", "--xla_cpu_enable_fast_math=true", "--arg-sharding", "0={replicated}")
    assert (r.code, r.out, r.err) == (code, "", "")
    flags, kwargs = run_recorder["spmd_options"]
    assert flags == {"xla_cpu_enable_fast_math": True}
    assert kwargs == {
        "argument_mode": None, "inputs_npz": None, "partitioner": None, "arg_sharding": ("0={replicated}",),
        "num_partitions": 1, "num_replicas": 1, "is_spmd_partitioned_module": False, "run_xla_backend_only": False,
        "seed": 0, "large_float_range": False, "rtol": None, "atol": None, "num_repeats": 1, "reference": "cpu",
        "reference_module": None, "platform": "cpu"}
    launch = run_recorder["spmd_run"]
    assert (launch.source, launch.input_format, launch.args, launch.arg_sharding, launch.dump_output,
            launch.num_processes, launch.process_id, launch.coordinator, launch.launch_local, launch.timeout) == \
        ("m.hlo", None, None, ("0={replicated}",), None, 1, None, None, None, 300.0)
    cli("spmd-run", "m.hlo", "--coordinator", "10.0.0.1:1234", "--process-id", "0", "--num-processes", "2")
    assert (run_recorder["spmd_run"].coordinator, run_recorder["spmd_run"].arg_sharding) == ("10.0.0.1:1234", ())


def test_spmd_run_takes_its_file_wherever_it_stands(cli, run_recorder):
    """typer gives FILE the first word it does not parse, an option it does not know too: an
    unknown option before FILE is refused by name, an --xla_* flag before it is the compile's,
    and without a FILE it is missing."""
    assert_one_line_error(cli("spmd-run", "--bogus", "m.hlo"), facts=("--bogus", " spmd-run --help'"))
    r = cli("spmd-run", "--xla_cpu_enable_fast_math=true", "m.hlo")
    assert (r.code, r.err) == (0, "")
    assert run_recorder["spmd_run"].source == "m.hlo"
    assert run_recorder["spmd_options"][0] == {"xla_cpu_enable_fast_math": True}
    assert_one_line_error(cli("spmd-run", "--xla_cpu_enable_fast_math=true"), facts=("FILE", " spmd-run --help'"))
