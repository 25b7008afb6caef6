"""mlirhlo spmd-run: SPMD partitions, replicas, collectives and several processes.

Runs that need several CPU devices use a fresh process each: the device count
is fixed when jax starts. Every subprocess has a timeout, and multi-process
runs use loopback only.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import DATA, REPO, assert_one_line_error, readline_within

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


# ------------------------------------------------------------ one process

def test_partitioned_matmul_all_reduce_matches_reference_and_numpy(tmp_path):
    x, w = rand(1, 8, 16), rand(2, 16, 6)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(MATMUL_AR, *PARTITIONED, "--reference-module", MATMUL,
                     "--inputs", npz(tmp_path / "in.npz", arg0=x, arg1=w), "--dump-output", out))
    assert "matmul_allreduce.partitioned: OK" in stdout
    assert "parameter 0 x float32[8, 16]: {devices=[1,4]<=[4]}, [8, 4] per device" in stdout
    assert f"reference: reference module {MATMUL} on 1 device" in stdout
    np.testing.assert_allclose(np.load(out)["out0"], x @ w, rtol=1e-5, atol=1e-5)


def test_every_collective_matches_numpy(tmp_path):
    a, b = rand(3, 8, 3), rand(4, 4, 8)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(COLLECTIVES, *PARTITIONED, "--inputs", npz(tmp_path / "in.npz", arg0=a, arg1=b),
                     "--dump-output", out))
    assert "collectives.partitioned: RAN" in stdout  # no unpartitioned computation to compare with
    check_collectives(np.load(out), a, b)


def check_collectives(got, a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(got["out0"], a)                                    # all-gather
    np.testing.assert_allclose(got["out1"], a.reshape(4, 2, 3).sum(0), rtol=1e-6)  # all-reduce
    np.testing.assert_allclose(got["out2"], b.sum(0), rtol=1e-6)                   # reduce-scatter
    np.testing.assert_allclose(got["out3"], b.reshape(4, 4, 2).transpose(1, 0, 2).reshape(4, 8))  # all-to-all
    np.testing.assert_allclose(got["out4"], np.roll(a, 2, axis=0))                # collective-permute


def test_device_id_inputs_show_where_data_went(tmp_path):
    out = tmp_path / "out.npz"
    stdout = ok(spmd(COLLECTIVES, *PARTITIONED, "--argument-mode", "device-id", "--dump-output", out))
    assert "inputs: device-id" in stdout
    got = np.load(out)
    ids = np.repeat(np.arange(4.0), 2)[:, None] * np.ones((1, 3))
    np.testing.assert_array_equal(got["out0"], ids)                     # all-gather of each device's id
    np.testing.assert_array_equal(got["out4"], np.roll(ids, 2, axis=0))  # each id moved one device on


def test_device_id_inputs_meet_the_reference_only_where_each_element_has_one_owner():
    """Device-id inputs of tiles nobody shares are one global array: the reference runs on it.
    A tile held by two devices gets two ids: no reference, and the note says why."""
    stdout = ok(spmd(MATMUL_AR, *PARTITIONED, "--reference-module", MATMUL, "--argument-mode", "device-id"))
    assert "matmul_allreduce.partitioned: OK" in stdout
    assert f"reference: reference module {MATMUL} on 1 device" in stdout and "max abs error 0\n" in stdout
    proc = spmd(MATMUL, "--num-partitions", "4", "--reference-module", MATMUL, "--argument-mode", "device-id",
                "--arg-sharding", "0={devices=[2,1,2]<=[4] last_tile_dim_replicate}")
    assert ("  no reference: with device-id inputs, devices holding the same elements of a parameter "
            "get different values\n") in proc.stdout, proc.stdout + proc.stderr
    assert "max abs error" not in proc.stdout


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


def test_sharded_jax_mlp_step_on_four_devices(tmp_path):
    inputs, arrays = mlp_inputs(tmp_path)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(MLP, "--num-partitions", "4", "--inputs", inputs, "--num-repeats", "3",
                     "--dump-output", out))
    assert "mlp_step_4way: OK" in stdout
    assert "partitioner: shardy" in stdout
    assert "parameter 4 x float32[32, 16]: {devices=[4,1]<=[4]}, [8, 16] per device" in stdout
    assert "reference: the same module on 1 device" in stdout
    assert re.search(r"run times \(ms\): [\d.]+, [\d.]+, [\d.]+\n", stdout)
    assert float(re.search(r"max abs error (\S+)", stdout).group(1)) < 1e-5
    check_mlp(out, arrays)


HLO_SHARDED = """HloModule hlo_sharded

ENTRY main {
  x = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}
  w = f32[16,6] parameter(1), sharding={replicated}
  d = f32[8,6] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[8,6] tanh(d), sharding={devices=[4,1]<=[4]}
}
"""


@pytest.mark.parametrize("name, partitioner", [("sharded_matmul.mlir", "shardy"), ("hlo_sharded.hlo", "gspmd")])
def test_modules_keep_their_shardings(tmp_path, name, partitioner):
    path = DATA / name if name.endswith(".mlir") else tmp_path / name
    if not path.exists():
        path.write_text(HLO_SHARDED)
    stdout = ok(spmd(path, "--num-partitions", "4"))
    assert f"partitioner: {partitioner}" in stdout and ": OK" in stdout
    assert re.search(r"parameter 0 \S+ float32\[8, 16\]: \{devices=\[4,1\]<=\[4\]\}, \[2, 16\] per device", stdout)
    assert re.search(r"output 0 float32\[8, \d\]: \{devices=\[4,1\]<=\[4\]\}, \[2, \d\] per device", stdout)


def test_arg_sharding_partitions_an_unsharded_module_with_gspmd(tmp_path):
    stdout = ok(spmd(MATMUL, "--num-partitions", "4", "--arg-sharding", "0=devices=[1,4]<=[4]",
                     "--arg-sharding", "1={devices=[4,1]<=[4]}"))
    assert "matmul: OK" in stdout and "partitioner: gspmd" in stdout
    assert "parameter 1 w float32[16, 6]: {devices=[4,1]<=[4]}, [4, 6] per device" in stdout


def test_a_partly_replicated_sharding_runs(tmp_path):
    """Tiles over 2 of the 4 devices, each tile on 2 (a REPLICATED subgroup): spmd-run lays it out."""
    stdout = ok(spmd(MATMUL, "--num-partitions", "4",
                     "--arg-sharding", "0={devices=[2,1,2]<=[4] last_tile_dim_replicate}"))
    assert "matmul: OK" in stdout
    assert "parameter 0 x float32[8, 16]: {devices=[2,1,2]<=[4] last_tile_dim_replicate}, [4, 16] per device" \
        in stdout


def test_a_jax_function_partitioned_from_the_command_line(tmp_path):
    (tmp_path / "model.py").write_text("import jax.numpy as jnp\n\n"
                                       "def f(x, w):\n    return jnp.tanh(x @ w).sum(axis=1)\n")
    stdout = ok(spmd("model:f", "--args", "f32[8,4],f32[4,3]", "--num-partitions", "2",
                     "--arg-sharding", "0=devices=[2,1]<=[2]", cwd=tmp_path))
    assert "f: OK" in stdout
    assert "parameter 0 x float32[8, 4]: {devices=[2,1]<=[2]}, [4, 4] per device" in stdout


def test_replicas_get_their_own_inputs_and_talk_to_each_other(tmp_path):
    stdout = ok(spmd(MATMUL, "--num-replicas", "2"))
    assert "matmul: OK" in stdout and "devices: 2 (2 replicas x 1 partition)" in stdout
    assert "random (seeds 0..1, one per replica)" in stdout
    shared = ok(spmd(MATMUL, "--num-replicas", "2", "--argument-mode", "shared-random"))
    assert "random (seed 0); the same for every replica" in shared
    module = tmp_path / "cross_replica.hlo"
    module.write_text("HloModule cross_replica, replica_count=2\n\n"
                      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
                      "ENTRY main {\n  p = f32[3] parameter(0)\n"
                      "  ROOT s = f32[3] all-reduce(p), replica_groups={{0,1}}, to_apply=add\n}\n")
    out = tmp_path / "out.npz"
    ok(spmd(module, "--num-replicas", "2", "--argument-mode", "device-id", "--reference", "none",
            "--dump-output", out))
    np.testing.assert_array_equal(np.load(out)["out0"], np.ones((2, 3)))  # 0 + 1 on both replicas


def test_a_wrong_result_is_a_mismatch(tmp_path):
    wrong = tmp_path / "wrong.hlo"
    wrong.write_text(MATMUL.read_text().replace("ROOT d = f32[8,6] dot(x, w)", "d = f32[8,6] dot(x, w)")
                     .replace("\n}", "\n  ROOT t = f32[8,6] tanh(d)\n}"))
    proc = spmd(MATMUL_AR, *PARTITIONED, "--reference-module", wrong)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "matmul_allreduce.partitioned: MISMATCH: output 0:" in proc.stdout
    assert "output 0 (float32[8, 6]):" in proc.stdout and "elements differ" in proc.stdout


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
    assert "parameter 0 x float32[8, 16]: {devices=[1,2]<=[2]}, [8, 8] per device" in stdout


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
    assert "Fusion must have backend config" in proc.stderr
    assert "after-optimizations CPU dumps with fusions cannot run backend-only" in proc.stderr


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
def test_bad_modules_are_one_line_errors(args, message):
    proc = spmd(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr
    assert proc.stdout == ""


def test_a_one_device_shardy_mesh_runs_on_any_partition_count(tmp_path):
    """A mesh whose axes are all of size 1 shards nothing: every partition holds it all, so
    it is no mismatch with --num-partitions (a bigger mesh is: see above)."""
    text = (DATA / "sharded_matmul.mlir").read_text()
    one = tmp_path / "one_device_mesh.mlir"
    one.write_text(text.replace('"x"=4', '"x"=1').replace("size = 4 : i64", "size = 1 : i64")
                   .replace("num_partitions = 4", "num_partitions = 2"))
    stdout = ok(spmd(one, "--num-partitions", "2"))
    assert stdout.startswith("one_device_mesh: OK\n") and "parameter 0 arg0 float32[8, 16]: {replicated}" in stdout


# ------------------------------------------------------- several processes

def test_mlp_step_across_two_local_processes(tmp_path):
    inputs, arrays = mlp_inputs(tmp_path)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(MLP, "--num-partitions", "4", "--launch-local", "2", "--inputs", inputs,
                     "--dump-output", out, "--timeout", "60", timeout=90))
    assert "[1] process 1 of 2: devices 2 (replica 0, partition 2), 3 (replica 0, partition 3)" in stdout
    assert "[0] mlp_step_4way: OK" in stdout and "[0]   gathered from 2 processes" in stdout
    assert "[1] mlp_step_4way" not in stdout  # only process 0 gathers and compares
    check_mlp(out, arrays)


def test_collectives_and_all_reduce_matmul_across_two_local_processes(tmp_path):
    a, b = rand(3, 8, 3), rand(4, 4, 8)
    out = tmp_path / "out.npz"
    ok(spmd(COLLECTIVES, *PARTITIONED, "--launch-local", "2", "--inputs",
            npz(tmp_path / "in.npz", arg0=a, arg1=b), "--dump-output", out, "--timeout", "60", timeout=90))
    check_collectives(np.load(out), a, b)
    stdout = ok(spmd(MATMUL_AR, *PARTITIONED, "--reference-module", MATMUL, "--launch-local", "2",
                     "--timeout", "60", timeout=90))
    assert "[0] matmul_allreduce.partitioned: OK" in stdout


def test_unreachable_coordinator_is_a_clear_error_within_the_timeout():
    proc = spmd(MATMUL_AR, *PARTITIONED, "--num-processes", "2", "--process-id", "1",
                "--coordinator", f"127.0.0.1:{free_port()}", "--timeout", "3", timeout=60)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach the coordinator at 127.0.0.1:"), proc.stderr


def test_a_process_that_never_joins_is_a_clear_error_within_the_timeout():
    proc = spmd(MATMUL_AR, *PARTITIONED, "--num-processes", "2", "--process-id", "0",
                "--coordinator", f"127.0.0.1:{free_port()}", "--timeout", "3", timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("error: not all 2 processes joined the coordinator"), proc.stderr
    assert "Traceback" not in proc.stderr and "Check failure" not in proc.stderr


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


def test_launch_local_stops_everything_when_a_process_dies():
    proc, pids = start_launch_local()
    try:
        os.kill(pids[1], signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert err.strip().splitlines()[-1] == ("error: process 1: the process died (killed by SIGKILL); "
                                            "stopped the other processes"), err
    assert_gone(pids)


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
    assert err.strip().splitlines()[-1] == "error: interrupted; stopped every process", err
    assert_gone(pids)


def test_survivors_of_a_dead_process_report_it_within_the_timeout():
    address = f"127.0.0.1:{free_port()}"
    common = ("--num-processes", "2", "--coordinator", address, "--timeout", "20")
    p0 = subprocess.Popen(long_run(*common, "--process-id", "0"), cwd=REPO, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p1 = subprocess.Popen(long_run(*common, "--process-id", "1"), cwd=REPO, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert "joined the run" in readline_within(p0.stdout)
        assert "joined the run" in readline_within(p1.stdout)
        time.sleep(0.5)
        os.killpg(p1.pid, signal.SIGKILL)  # the process and its worker
        out, err = p0.communicate(timeout=40)
    finally:
        p0.kill()
        p1.kill()
    assert p0.returncode == 1
    # Either its collective's connection resets at once, or the coordinator
    # misses process 1's heartbeats; both say so in one line.
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "(it died or was killed)" in lines[0], err


def test_launch_local_timeout_stops_every_process():
    proc = subprocess.run(long_run("--launch-local", "2", "--timeout", "6"), cwd=REPO, text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 1
    assert re.search(r"^error: timed out after 6 s \(--timeout\); processes 0, 1 still running",
                     proc.stderr, re.M), proc.stderr


def free_port() -> int:
    from mlirhlo_driver.execute.spmd import free_port as port

    return port()


def test_a_layout_gives_each_element_one_owner_exactly_when_it_should():
    """device-id inputs make a global array only when no element lives on two partitions:
    per-device values always; tiles when no two partitions hold the same tile; a replicated
    value only on a single partition."""
    from mlirhlo_driver.execute.engine import Layout

    for p in (1, 2, 4):
        assert Layout("stacked", (p, 2), (1, 2)).unique(p)
        assert Layout("replicated", (4,), (4,)).unique(p) == (p == 1)
    assert Layout("tiled", (4, 2), (2, 2), tiles=((0, 0), (1, 0))).unique(2)
    assert not Layout("tiled", (2, 2), (2, 2), tiles=((0, 0), (0, 0))).unique(2)  # partial replication


def test_a_lost_coordinator_is_one_line_of_its_first_reason(monkeypatch):
    """A failed key-value write names the runtime's first line, its status word stripped; the
    rest (gRPC's debug info) stays out of the one error line."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import DistributedError

    class Client:
        def key_value_set_bytes(self, key, value):
            raise RuntimeError("UNAVAILABLE: failed to connect to all addresses\nDebug info: {grpc_status:14}")

    monkeypatch.setattr(_jaxlib, "_distributed_client", lambda: Client())
    with pytest.raises(DistributedError) as e:
        _jaxlib.kv_set("k", b"v")
    assert e.value.format("params") == "error: cannot reach the coordinator: failed to connect to all addresses"
    # leaving the run: the same one line
    import jax

    def shutdown():
        raise RuntimeError("DEADLINE_EXCEEDED: barrier timed out\nDebug info: {grpc_status:4}")

    monkeypatch.setattr(jax.distributed, "shutdown", shutdown)
    with pytest.raises(DistributedError) as e:
        _jaxlib.distributed_shutdown()
    assert e.value.format("params") == "error: shutting down the distributed run failed: barrier timed out"


@pytest.mark.parametrize("returncode, native, why", [
    (-9, ["E1202 10:00:00.000000  77 coordination_service_agent.cc:120] RegisterTask timed out"],
     "not all 2 processes joined the coordinator at 127.0.0.1:5 within 30 s"),
    # the runtime's three spellings of a peer that went quiet (jaxlib 0.9's names the task by path)
    (1, ["E1202 10:00:00.000000  77 coordination_service.cc:300] The following tasks are unhealthy "
         "(stopped sending heartbeats): 1, 3"], "process 1, 3 stopped responding (it died or was killed)"),
    (1, ["E1202 10:00:00.000000  77 coordination_service.cc:300] Task 1 heartbeat timeout"],
     "process 1 stopped responding (it died or was killed)"),
    (1, ["E1202 10:00:00.000000  77 coordination_service.cc:300] The following tasks are unhealthy "
         "(stopped sending heartbeats): /job:jax_worker/replica:0/task:1"],
     "process 1 stopped responding (it died or was killed)"),
    (1, ["E1202 10:00:00.000000  77 client.cc:60] Socket closed"],
     "lost contact with the coordinator at 127.0.0.1:5 (process 0 died, or the network failed)"),
    (-6, ["I1202 10:00:00.000000  77 x.cc:1] fine", "F1202 10:00:00.000000  77 y.cc:2] Check failed: a == b"],
     "the process died (killed by SIGABRT): Check failed: a == b"),
    (3, [], "the process died (exit code 3)"),
])
def test_a_dead_process_is_explained_from_what_the_runtime_logged(returncode, native, why):
    from mlirhlo_driver.execute.spmd import WorkerConfig, explain_death

    cfg = WorkerConfig("m.hlo", None, None, {}, 2, 0, "127.0.0.1:5", 0.0, 30.0)
    assert explain_death(returncode, native, cfg) == why


def test_run_times_are_listed_up_to_twenty_then_summarized():
    from mlirhlo_driver.execute.spmd import _times

    assert _times([1.0, 2.5]) == "1.000, 2.500"
    twenty = [float(i) for i in range(1, 21)]
    assert _times(twenty) == ", ".join(f"{t:.3f}" for t in twenty)
    assert _times([*twenty, 21.0]) == "min 1.000, median 11.000, max 21.000 over 21 runs"


WEDGED_WORKER = """
import json, sys, time
from mlirhlo_driver.execute import spmd
spmd._GRACE_S = 0.0
spmd.worker = lambda cfg: time.sleep(60) or 0  # stuck in a collective, its supervisor gone
cfg = spmd.WorkerConfig("m.hlo", None, None, {}, 2, 1, "127.0.0.1:1", time.time() + 0.5, 7.0)
spmd.worker_main([json.dumps(spmd.asdict(cfg))])
"""


def test_a_wedged_worker_ends_itself_as_a_timeout_failure():
    """A worker still running past its deadline exits 1 (a failure, not usage) with one timeout error line."""
    proc = subprocess.run([sys.executable, "-c", WEDGED_WORKER], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "error: process 1: timed out after 7 s (--timeout)\n"
    assert proc.stdout == ""


def test_the_partitioner_line_says_whether_the_module_was_already_partitioned(tmp_path):
    """No partitioner: 'none: already partitioned' for a per-device module, plain 'none' otherwise."""
    x, w = rand(1, 8, 16), rand(2, 16, 6)
    stdout = ok(spmd(MATMUL_AR, *PARTITIONED, "--reference-module", MATMUL,
                     "--inputs", npz(tmp_path / "in.npz", arg0=x, arg1=w)))
    assert "partitioner: none: already partitioned" in stdout
    stdout = ok(spmd(MATMUL, "--num-partitions", "1", "--inputs", npz(tmp_path / "in1.npz", arg0=x, arg1=w)))
    assert "matmul: OK" in stdout
    assert re.search(r"partitioner: none$", stdout, re.M), stdout


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
    assert "output 0 float32[4, 8, 6]: per device (no sharding): gathered as [partition, ...]" in stdout
    got = np.load(out)["out0"]
    assert got.shape == (4, 8, 6)
    for p in range(4):
        np.testing.assert_allclose(got[p], x[:, 4 * p:4 * p + 4] @ w[4 * p:4 * p + 4], rtol=1e-5, atol=1e-5)


# ------------------------------------------------- supervision, without jax

class FakeWorker:
    """A stand-in for a worker process: ``polls`` polls say running, then it exits ``code``
    (None: never); its stdout and stderr are the given bytes."""

    def __init__(self, code: int | None, polls: int = 0, out: bytes = b"", err: bytes = b"", pid: int = 4000):
        self.code, self.polls, self.pid = code, polls, pid
        self.returncode: int | None = None
        self.stdout, self.stderr = io.BytesIO(out), io.BytesIO(err)

    def poll(self) -> int | None:
        if self.polls > 0 or self.code is None:
            self.polls -= 1
            return None
        self.returncode = self.code
        return self.code


def run_supervised(monkeypatch, workers: list[FakeWorker], *, prefixed: bool = True,
                   deadline: float | None = None, on_start=None) -> int:
    """``supervise`` over fake workers (process i is workers[i]); nothing is really started or stopped."""
    from mlirhlo_driver.execute import spmd as spmd_mod

    monkeypatch.setattr(spmd_mod, "_spawn", lambda cfg: workers[cfg.process_id])
    stopped: list[list[FakeWorker]] = []
    monkeypatch.setattr(spmd_mod, "_stop", lambda procs: stopped.append(list(procs)))
    end = time.time() + 60 if deadline is None else deadline
    cfgs = [spmd_mod.WorkerConfig("m.hlo", None, None, {}, len(workers), i, "127.0.0.1:5", end, 7.0)
            for i in range(len(workers))]
    code = spmd_mod.supervise(cfgs, prefixed=prefixed, on_start=on_start)
    assert stopped == [workers], "every worker is stopped once at the end"
    return code


def test_supervise_returns_process_0s_code_when_all_succeed_and_relays_with_prefixes(monkeypatch, capsys):
    """All workers exit 0: exit 0, no error line; each line relayed with its '[i] ' prefix, and
    on_start hears each process id with its pid."""
    started: list[tuple[int, int]] = []
    code = run_supervised(monkeypatch, [FakeWorker(0, 2, b"process 0 of 2: joined the run at x\nhello\n", pid=11),
                                        FakeWorker(0, 1, b"bye\n", b"a note\n", pid=12)],
                          on_start=lambda i, pid: started.append((i, pid)))
    assert code == 0
    assert started == [(0, 11), (1, 12)]
    out, err = capsys.readouterr()
    assert sorted(out.splitlines()) == ["[0] hello", "[0] process 0 of 2: joined the run at x", "[1] bye"]
    assert err == "[1] a note\n"


def test_supervise_unprefixed_single_worker_passes_its_code_and_output_through(monkeypatch, capsys):
    """One worker, no prefix: its own usage error (2) or failure (1) is its exit code, with no
    added error line (it said why itself)."""
    for code in (1, 2):
        assert run_supervised(monkeypatch, [FakeWorker(code, 1, b"x: MISMATCH\n", b"error: bad\n")],
                              prefixed=False) == code
        assert capsys.readouterr() == ("x: MISMATCH\n", "error: bad\n")


def test_supervise_names_the_process_that_failed_and_stops_the_others(monkeypatch, capsys):
    """A worker that reports its own failure (exit 1 or 2): that code, one line naming it."""
    for code in (1, 2):
        assert run_supervised(monkeypatch, [FakeWorker(None), FakeWorker(code, 1, err=b"error: bad input\n")]) == code
        assert capsys.readouterr().err == ("[1] error: bad input\n"
                                           "error: process 1 failed; stopped the other processes\n")


@pytest.mark.parametrize("code, why", [
    (3, "the process died (exit code 3)"),
    (-9, "the process died (killed by SIGKILL)"),
    (-6, "the process died (killed by SIGABRT): Check failed: a == b"),
])
def test_supervise_explains_a_worker_that_died(monkeypatch, capsys, code, why):
    """A death (a signal, or an exit code above 2) is exit 1 and explained from the native log,
    which is kept out of the relayed output."""
    err = (b"W1202 10:00:00.000000  77 x.cc:1] a warning\n  its second line\n"
           b"F1202 10:00:00.000000  77 y.cc:2] Check failed: a == b\n") if code == -6 else b""
    assert run_supervised(monkeypatch, [FakeWorker(None), FakeWorker(code, 1, err=err)]) == 1
    assert capsys.readouterr().err == f"error: process 1: {why}; stopped the other processes\n"


@pytest.mark.parametrize("code", [3, -9])
def test_supervise_blames_a_peer_that_died_over_one_that_then_failed(monkeypatch, capsys, code):
    """Process 0 fails (1) as process 1 dies: the death is the cause reported."""
    assert run_supervised(monkeypatch, [FakeWorker(1), FakeWorker(code)]) == 1
    why = "exit code 3" if code == 3 else "killed by SIGKILL"
    assert capsys.readouterr().err == f"error: process 1: the process died ({why}); stopped the other processes\n"


def test_supervise_blames_the_first_of_several_peers_that_died(monkeypatch, capsys):
    """Process 0 fails as processes 1 and 2 die: the first of those is reported."""
    assert run_supervised(monkeypatch, [FakeWorker(1), FakeWorker(3), FakeWorker(-9)]) == 1
    assert capsys.readouterr().err == "error: process 1: the process died (exit code 3); stopped the other processes\n"


@pytest.mark.parametrize("codes, code", [((2, 1), 2), ((1, 2), 1), ((1, 0), 1)])
def test_supervise_keeps_the_first_failure_when_the_others_only_failed_too(monkeypatch, capsys, codes, code):
    """Others that failed by themselves (1, 2) or succeeded (0) are no deaths: the first failure
    is named, with its code."""
    assert run_supervised(monkeypatch, [FakeWorker(c) for c in codes]) == code
    assert capsys.readouterr().err == "error: process 0 failed; stopped the other processes\n"


@pytest.mark.parametrize("line", [b"F1202 10:00:00.000000  77 y.cc:2] Check failed: a == b",
                                  b"E1202 10:00:00.000000  77 c.cc:4] Terminating process soon"])
def test_supervise_takes_exit_1_for_a_failure_without_an_f_terminating_line(monkeypatch, capsys, line):
    """Exit 1 is the worker's own failure unless an F line says 'Terminating process'."""
    assert run_supervised(monkeypatch, [FakeWorker(None), FakeWorker(1, 1, err=line + b"\n")]) == 1
    assert capsys.readouterr().err == "error: process 1 failed; stopped the other processes\n"


def test_supervise_stops_every_worker_on_ctrl_c(monkeypatch, capsys):
    """Ctrl-C while waiting: every worker stopped, exit 130, one 'interrupted' line."""
    from mlirhlo_driver._native import interrupts

    class Interrupted(FakeWorker):
        def poll(self):
            raise KeyboardInterrupt

    monkeypatch.setattr(interrupts, "_reported", False)
    assert run_supervised(monkeypatch, [FakeWorker(None), Interrupted(None)]) == 130
    assert capsys.readouterr().err == "error: interrupted; stopped every process\n"


def test_supervise_treats_a_runtime_termination_with_exit_1_as_a_death(monkeypatch, capsys):
    """jaxlib 0.9 ends a process whose peer died with exit 1 and an F 'Terminating process' line."""
    err = (b"E1202 10:00:00.000000  77 c.cc:3] Task 0 heartbeat timeout\n"
           b"F1202 10:00:00.000000  77 c.cc:4] Terminating process because the service stopped\n")
    assert run_supervised(monkeypatch, [FakeWorker(None), FakeWorker(1, 1, err=err)]) == 1
    assert capsys.readouterr().err == ("error: process 1: process 0 stopped responding (it died or was killed); "
                                       "stopped the other processes\n")


def test_supervise_times_out_naming_who_never_joined_or_is_still_running(monkeypatch, capsys):
    """Past the deadline (plus a grace period): either not everyone joined, or the ones still
    running are named (one 'process', several 'processes')."""
    from mlirhlo_driver.execute.spmd import _GRACE_S

    soon = lambda: time.time() - _GRACE_S + 0.3  # noqa: E731
    joined = b"process 1 of 2: joined the run at 127.0.0.1:5\n"
    assert run_supervised(monkeypatch, [FakeWorker(0), FakeWorker(None, out=joined)], deadline=soon()) == 1
    assert capsys.readouterr().err == ("error: timed out after 7 s (--timeout); process 1 still running "
                                       "(waiting on a process that stopped responding?); "
                                       "stopped the other processes\n")
    both = [FakeWorker(None, out=joined.replace(b"1 of", b"0 of")), FakeWorker(None, out=joined)]
    assert run_supervised(monkeypatch, both, deadline=soon()) == 1
    assert "; processes 0, 1 still running" in capsys.readouterr().err
    # Only a 'joined' line on stdout counts: other output, or the words on stderr, do not.
    quiet = FakeWorker(None, out=b"loading\n", err=joined)
    assert run_supervised(monkeypatch, [FakeWorker(None, out=joined), quiet], deadline=soon()) == 1
    assert capsys.readouterr().err == ("[1] process 1 of 2: joined the run at 127.0.0.1:5\n"
                                       "error: not all 2 processes joined the coordinator at 127.0.0.1:5 "
                                       "within 7 s (--timeout); stopped the other processes\n")


def test_supervise_waits_a_grace_period_past_the_deadline(monkeypatch, capsys):
    """Workers that end just after their deadline, within the grace period, are no timeout."""
    assert run_supervised(monkeypatch, [FakeWorker(0, 3), FakeWorker(0, 3)], deadline=time.time()) == 0
    assert capsys.readouterr().err == ""


def test_the_relay_drops_native_noise_and_keeps_native_logs_aside(monkeypatch, capsys):
    """gloo retries and stack traces are dropped; absl lines and their continuations are kept for
    explaining a death, not relayed; an 'error:' line ends such a block and is relayed."""
    err = (b"E1202 10:00:00.000000  77 x.cc:1] native trouble\n  more of it\n"
           b"error: the worker's own message\n"
           b"[Gloo] Rank 0 is connected to 1 peer ranks\n[external/gloo/x.cc:1] retry\n"
           b"    @     0x7f0011 foo\n*** Check failure stack trace: ***\n*** SIGABRT received at time=1\n"
           b"plain text\n")
    out = b"W1202 10:00:00.000000  77 y.cc:2] a stdout warning\nresult line\n  indented result\n"
    assert run_supervised(monkeypatch, [FakeWorker(0, 1, out, err)], prefixed=False) == 0
    assert capsys.readouterr() == ("result line\n  indented result\n",
                                   "error: the worker's own message\nplain text\n")


# ------------------------------------------------- layouts and reports, in process

@pytest.fixture
def python_names(monkeypatch):
    """Messages name parameters as Python spells them (not as command-line flags)."""
    monkeypatch.delenv("MLIRHLO_DRIVER_ERRORS_NAME_FLAGS", raising=False)


def hlo_layout(text: str, shape: tuple[int, ...], partitions: int = 4, per_device: bool = False):
    from mlirhlo_driver.execute.engine import layout
    from mlirhlo_driver.ir import shardings

    (sharding,) = shardings.parse([text])
    return layout(sharding, shape, partitions, per_device=per_device, what="output 1")


def test_layout_of_each_kind_of_sharding():
    """Tiles follow the device order of the tile assignment; uneven global shapes round the
    per-device shape up; a per-device shape times the tile counts is the global one."""
    from mlirhlo_driver.execute.engine import Layout, layout

    assert layout(None, (3,), 4, per_device=False, what="x") == Layout("replicated", (3,), (3,))
    assert hlo_layout("{replicated}", (3, 2)) == Layout("replicated", (3, 2), (3, 2))
    assert hlo_layout("{maximal device=3}", (3,)) == Layout("maximal", (3,), (3,), device=3,
                                                              text="{maximal device=3}")
    swapped = "{devices=[2,2]1,0,3,2}"
    tiles = ((0, 1), (0, 0), (1, 1), (1, 0))
    assert hlo_layout(swapped, (4, 6)) == Layout("tiled", (4, 6), (2, 3), tiles, text=swapped)
    assert hlo_layout(swapped, (5, 7)) == Layout("tiled", (5, 7), (3, 4), tiles, text=swapped)
    assert hlo_layout(swapped, (2, 3), per_device=True) == Layout("tiled", (4, 6), (2, 3), tiles, text=swapped)
    partly = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"
    assert hlo_layout(partly, (5, 3)) == Layout("tiled", (5, 3), (3, 3), ((0, 0), (0, 0), (1, 0), (1, 0)),
                                                text=partly)
    assert hlo_layout("{devices=[1,2]<=[2]}", (4, 4), partitions=2).shard_shape == (4, 2)


@pytest.mark.parametrize("text, shape, message", [
    ("{maximal device=4}", (4, 4), "error: output 1: sharding {maximal device=4} names device 4, but there are "
                                   "4 partitions"),
    ("{devices=[4]<=[4]}", (4, 4), "error: output 1: sharding {devices=[4]<=[4]} has 1 tile dimensions for a "
                                   "rank-2 value"),
    ("{devices=[1,2]<=[2]}", (4, 4), "error: output 1: sharding {devices=[1,2]<=[2]} spans 2 devices, but there "
                                     "are 4 partitions (num_partitions=2)"),
    ("{devices=[1,8]<=[8]}", (4, 4), "error: output 1: sharding {devices=[1,8]<=[8]} spans 8 devices, but there "
                                     "are 4 partitions (num_partitions=8)"),
    ("{manual}", (4, 4), "error: output 1: sharding {manual} is not supported by spmd-run (manual values are per "
                         "device: run an already partitioned module, is_spmd_partitioned_module)"),
    ("{devices=[2,1,2]<=[4] last_tile_dims={manual}}", (4, 4),
     "error: output 1: sharding {devices=[2,1,2]<=[4] last_tile_dims={manual}} is not supported by spmd-run "
     "(manual values are per device: run an already partitioned module, is_spmd_partitioned_module)"),
    ("{devices=[2,1,2]<=[4] last_tile_dims={unreduced}}", (4, 4),
     "error: output 1: sharding {devices=[2,1,2]<=[4] last_tile_dims={unreduced}} is not supported by spmd-run "
     "(unreduced values hold partial sums: spmd-run lays out tiled, replicated, maximal and manual ones)"),
    ("{unknown}", (4, 4), "error: output 1: sharding {unknown} is not supported by spmd-run (tiled, replicated, "
                          "maximal and manual are)"),
])
def test_layout_refuses_shardings_it_cannot_lay_out(python_names, text, shape, message):
    """Each refusal is one InputError naming the value and the sharding."""
    from mlirhlo_driver.errors import InputError

    with pytest.raises(InputError) as e:
        hlo_layout(text, shape)
    assert e.value.format("params") == message


def test_layout_shards_pad_uneven_tiles_and_gather_undoes_them():
    """Partition p's part of a global array (the last tiles zero-padded), and back."""
    from mlirhlo_driver.execute.engine import Layout, gather

    lay = Layout("tiled", (5, 3), (3, 2), tiles=((0, 0), (0, 1), (1, 0), (1, 1)), text="{t}")
    full = np.arange(15.0).reshape(5, 3)
    assert lay.slices(3) == (slice(3, 5), slice(2, 3))
    shards = {p: lay.shard(full, p) for p in range(4)}
    np.testing.assert_array_equal(shards[0], [[0, 1], [3, 4], [6, 7]])
    np.testing.assert_array_equal(shards[1], [[2, 0], [5, 0], [8, 0]])
    np.testing.assert_array_equal(shards[2], [[9, 10], [12, 13], [0, 0]])
    np.testing.assert_array_equal(shards[3], [[11, 0], [14, 0], [0, 0]])
    got, problems = gather(lay, shards)
    np.testing.assert_array_equal(got, full)
    assert problems == [] and got.dtype == full.dtype
    assert lay.describe() == "{t}, [3, 2] per device"
    even = Layout("tiled", (4,), (4,), tiles=((0,),), text="{e}")
    assert even.describe() == "{e}"
    np.testing.assert_array_equal(even.shard(np.arange(4), 0), np.arange(4))


def test_gather_of_replicated_maximal_and_stacked_values(python_names):
    """Copies must agree (each disagreement is one problem); a maximal value is its device's;
    per-device values stack in partition order."""
    from mlirhlo_driver.execute.engine import Layout, gather

    a = np.array([1.0, 2.0, 3.0])
    rep = Layout("replicated", (3,), (3,))
    got, problems = gather(rep, {0: a, 1: a.copy(), 2: a + [0, 0.5, 2]})
    np.testing.assert_array_equal(got, a)
    assert problems == ["partitions 0 and 2 disagree on 2 of 3 elements (max abs difference 2)"]
    assert gather(rep, {0: a, 1: a + 1e-9}, rtol=0.0, atol=1e-6)[1] == []
    np.testing.assert_array_equal(np.asarray(rep.shard(a, 1)), a)
    maximal = Layout("maximal", (3,), (3,), device=1)
    assert gather(maximal, {0: a, 1: a * 2, 2: a * 3})[0] is not None
    np.testing.assert_array_equal(gather(maximal, {0: a, 1: a * 2, 2: a * 3})[0], a * 2)
    stacked = Layout("stacked", (2, 3), (3,))
    got, problems = gather(stacked, {1: a * 2, 0: a})
    np.testing.assert_array_equal(got, [a, a * 2])
    assert problems == []
    np.testing.assert_array_equal(stacked.shard(np.stack([a, a * 2]), 1), a * 2)
    assert stacked.describe() == "per device (no sharding): gathered as [partition, ...]"
    assert rep.describe() == "{replicated}"


@pytest.mark.parametrize("spec, result", [
    ("0=devices=[4,1]<=[4]", (0, "{devices=[4,1]<=[4]}")),
    (" 12 = {devices=[4,1]<=[4]} ", (12, "{devices=[4,1]<=[4]}")),
    ("1={maximal device=0}", (1, "{maximal device=0}")),
])
def test_parse_arg_sharding_braces_the_sharding(spec, result):
    """PARAM=SHARDING, spaces and braces optional."""
    from mlirhlo_driver.execute.spmd import parse_arg_sharding

    assert parse_arg_sharding(spec) == result


@pytest.mark.parametrize("spec, message", [
    ("0={devices=[4,1<=[4]}", "error: arg_sharding:15: malformed sharding '{devices=[4,1<=[4]}': expected ']' "
                              "to end sharding devices shape"),
    ("0=devices=[4,1<=[4]", "error: arg_sharding:14: malformed sharding 'devices=[4,1<=[4]': expected ']' "
                            "to end sharding devices shape"),
    ("12=bogus", "error: arg_sharding:4: malformed sharding 'bogus': unexpected token"),
    ("0={bogus}", "error: arg_sharding:3: malformed sharding '{bogus}': unexpected token"),
    ("x=devices=[4]<=[4]", "error: arg_sharding: expected PARAM=SHARDING, e.g. 0=devices=[4,1]<=[4]"),
    ("0=", "error: arg_sharding: expected PARAM=SHARDING, e.g. 0=devices=[4,1]<=[4]"),
])
def test_parse_arg_sharding_points_at_the_column_of_a_mistake(python_names, spec, message):
    """A malformed sharding names the column in the whole PARAM=SHARDING text (braced or not)."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.execute.spmd import parse_arg_sharding

    with pytest.raises(InputError) as e:
        parse_arg_sharding(spec)
    assert e.value.format("params") == message


def test_devices_per_process_limit_is_1024_per_process(python_names):
    """Up to 1024 devices in each process; beyond, one error saying how they divide."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute.spmd import SpmdOptions, check_devices_per_process

    for options, procs in ((SpmdOptions(num_partitions=1024), 1), (SpmdOptions(num_partitions=1024), 0),
                           (SpmdOptions(num_replicas=1024), 1), (SpmdOptions(num_partitions=2048), 2)):
        check_devices_per_process(options, procs)
    with pytest.raises(DriverError) as e:
        check_devices_per_process(SpmdOptions(num_partitions=1025), 1)
    assert e.value.format("params") == ("error: 1025 partitions x 1 replicas need 1025 devices; one process can create at "
                            "most 1024 CPU devices (use fewer partitions or more processes)")
    with pytest.raises(DriverError) as e:
        check_devices_per_process(SpmdOptions(num_replicas=2050), 2)
    assert e.value.format("params").startswith("error: 1 partitions x 2050 replicas need 2050 devices, 1025 in each of 2 "
                                   "processes; one process")


@pytest.mark.parametrize("kwargs, message", [
    ({"num_partitions": 0}, "error: num_partitions and num_replicas must be >= 1"),
    ({"num_replicas": 0}, "error: num_partitions and num_replicas must be >= 1"),
    ({"num_partitions": 2, "num_replicas": 2}, "error: replicas and partitions together cannot run with jaxlib "
                                               "0.10.2 (use --num-replicas or --num-partitions, not both)"),
    ({"num_repeats": 0}, "error: num_repeats must be >= 1"),
    ({"argument_mode": "zero"}, "error: unknown argument mode 'zero' (did you mean 'zeros'?)"),
    ({"argument_mode": "qqq"}, "error: unknown argument mode 'qqq' (random, shared-random, zeros, device-id)"),
    ({"partitioner": "gsmpd"}, "error: unknown partitioner 'gsmpd' (shardy or gspmd)"),
    ({"reference": "gpu"}, "error: unknown reference 'gpu' (cpu, interpreter or none)"),
])
def test_check_options_refuses_each_bad_option(python_names, kwargs, message):
    """Each usage error with its message; every smallest valid setting passes."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute.spmd import SpmdOptions, check_options

    with pytest.raises(DriverError) as e:
        check_options(SpmdOptions(**kwargs))
    assert e.value.format("params") == message


def test_check_options_accepts_every_valid_choice():
    """The smallest counts, each mode, partitioner and reference are fine."""
    from mlirhlo_driver.execute.spmd import ARGUMENT_MODES, SpmdOptions, check_options

    for mode in ARGUMENT_MODES:
        check_options(SpmdOptions(argument_mode=mode))
    for kwargs in ({"partitioner": "shardy"}, {"partitioner": "gspmd"}, {"reference": "none"},
                   {"num_partitions": 2}, {"num_replicas": 2}, {"num_repeats": 1}):
        check_options(SpmdOptions(**kwargs))


def test_options_describe_devices_and_per_device_modules():
    """Devices are replicas x partitions; backend-only is per-device only when partitioned."""
    from mlirhlo_driver.execute.spmd import SpmdOptions

    assert SpmdOptions(num_partitions=4).num_devices == 4 and SpmdOptions(num_replicas=3).num_devices == 3
    assert SpmdOptions(num_partitions=2, num_replicas=3).num_devices == 6
    assert SpmdOptions(is_spmd_partitioned_module=True).per_device_module
    assert SpmdOptions(run_xla_backend_only=True, num_partitions=2).per_device_module
    assert not SpmdOptions(run_xla_backend_only=True, num_partitions=1).per_device_module
    assert not SpmdOptions(num_partitions=4).per_device_module


@pytest.mark.parametrize("timeout, seconds", [(1, 3), (12, 3), (15.9, 3), (16, 4), (100, 25), (120, 30),
                                               (123.9, 30), (1000, 30)])
def test_heartbeat_is_a_quarter_of_the_timeout_within_3_to_30_seconds(timeout, seconds):
    """A silent process is called dead after timeout/4 seconds, never under 3 or over 30."""
    from mlirhlo_driver.execute.spmd import heartbeat_seconds

    assert heartbeat_seconds(timeout) == seconds


def test_worker_configs_carry_the_options_and_only_process_0_dumps(monkeypatch):
    """One config per process id; the deadline is now plus the timeout; options round-trip."""
    from mlirhlo_driver.execute import spmd as spmd_mod

    monkeypatch.setattr(spmd_mod.time, "time", lambda: 1000.0)
    options = spmd_mod.SpmdOptions(num_partitions=4, arg_shardings=((0, "{replicated}"),),
                                   xla_flags=(("xla_cpu_x", True),), seed=7, device_ids=(1, 0, 3, 2))
    cfgs = spmd_mod.worker_configs("m.hlo", "hlo", "f32[2]", options, num_processes=2, process_ids=[0, 1],
                                   coordinator="h:5", timeout=30.0, dump_output="o.npz")
    assert [(c.process_id, c.deadline, c.dump_output, c.num_processes) for c in cfgs] == \
        [(0, 1030.0, "o.npz", 2), (1, 1030.0, None, 2)]
    assert cfgs[1].input == "m.hlo" and cfgs[1].input_format == "hlo" and cfgs[1].args == "f32[2]"
    import json

    got = spmd_mod._options_from_dict(json.loads(json.dumps(cfgs[1].options)))
    assert got == options and hash(got) == hash(options)


def test_output_shards_travel_between_processes_as_raw_bytes():
    """Packed shards of any dtype unpack to the same arrays, in their per-device shapes."""
    from mlirhlo_driver.execute.engine import Layout, TensorSpec
    from mlirhlo_driver.execute.spmd import _pack, _unpack

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[1, -2]], dtype=np.int8)
    shards = {(0, 2): a, (0, 3): a + 1, (1, 3): b}
    specs = [TensorSpec((4, 3), "f32", "float32"), TensorSpec((1, 4), "i8", "int8")]
    layouts = [Layout("tiled", (4, 3), (2, 3), ((0, 0), (1, 0))), Layout("tiled", (1, 4), (1, 2), ((0, 0), (0, 1)))]
    got = _unpack(_pack(shards), layouts, specs)
    assert sorted(got) == sorted(shards)
    for k, v in shards.items():
        np.testing.assert_array_equal(got[k], v)
        assert got[k].dtype == v.dtype and got[k].shape == v.shape


def test_outputs_npz_adds_a_replica_axis_only_for_several_replicas():
    """out<i> per output; stacked [replica, ...] when there are several replicas."""
    from mlirhlo_driver.execute.engine import ModuleReport
    from mlirhlo_driver.execute.spmd import SpmdReport, outputs_npz

    a, b = np.arange(3.0), np.ones((2, 2))
    one = np.load(io.BytesIO(outputs_npz(SpmdReport(ModuleReport("m", "m"), outputs=[[a, b]]))))
    assert sorted(one.files) == ["out0", "out1"]
    np.testing.assert_array_equal(one["out0"], a)
    two = np.load(io.BytesIO(outputs_npz(SpmdReport(ModuleReport("m", "m"), outputs=[[a, b], [a + 1, b * 2]]))))
    np.testing.assert_array_equal(two["out0"], [a, a + 1])
    np.testing.assert_array_equal(two["out1"], [b, b * 2])
    assert np.load(io.BytesIO(outputs_npz(SpmdReport(ModuleReport("m", "m"))))).files == []


def test_format_report_lays_out_every_part():
    """The whole report text: status, devices, inputs, layouts, timings, notes, error, values."""
    from mlirhlo_driver.execute.engine import ModuleReport
    from mlirhlo_driver.execute.spmd import SpmdReport, format_report

    rep = ModuleReport("m", "m.hlo", status="mismatch", message="output 0: 1/3 differ", max_error=0.25,
                       compile_ms=12.34, run_ms=1.5, reference_ms=3.25, inputs_note="zeros")
    sr = SpmdReport(rep, devices="2 (2 replicas x 1 partition)", partitioner="none",
                    param_layouts=["0 x float32[3]: {replicated}"], result_layouts=["0 float32[3]: {replicated}"],
                    run_times=[1.0, 1.5, 2.0], notes=["reference: the same module on 1 device", ""],
                    outputs=[[np.array([1.0, 2.0, 3.0])], [np.array([0.5, 0.0, 1.0])]])
    assert format_report(sr) == (
        "m: MISMATCH: output 0: 1/3 differ\n"
        "  devices: 2 (2 replicas x 1 partition); partitioner: none\n"
        "  inputs: zeros\n"
        "  parameter 0 x float32[3]: {replicated}\n"
        "  output 0 float32[3]: {replicated}\n"
        "  compile 12.3 ms, run 1.500 ms (median of 3), reference 3.2 ms\n"
        "  run times (ms): 1.000, 1.500, 2.000\n"
        "  reference: the same module on 1 device\n"
        "  max abs error 0.25\n"
        "  replica 0 output 0 = [1., 2., 3.]\n"
        "  replica 1 output 0 = [0.5, 0. , 1. ]")
    one = SpmdReport(ModuleReport("m", "m.hlo", status="ran", compile_ms=2.0, run_ms=0.25),
                     devices="1 (1 replica x 1 partition)", partitioner="none", run_times=[0.25],
                     outputs=[[np.arange(21)]])  # one past the 20 shown in full
    assert format_report(one) == (
        "m: RAN\n"
        "  devices: 1 (1 replica x 1 partition); partitioner: none\n"
        "  compile 2.0 ms, run 0.250 ms\n"
        "  output 0 = [ 0,  1, ..., 19, 20]")
    assert format_report(one, values=False) == "m: RAN\n  devices: 1 (1 replica x 1 partition); partitioner: none\n" \
        "  compile 2.0 ms, run 0.250 ms"
    one.run_times = [0.5, 0.25]
    assert format_report(one, values=False).splitlines()[2:] == ["  compile 2.0 ms, run 0.250 ms (median of 2)",
                                                                 "  run times (ms): 0.500, 0.250"]


def bare_plan(params, param_layouts=None, reference_note="", partitioner=None):
    """A Plan with no module: enough for inputs, device arguments and the report."""
    from mlirhlo_driver.execute.spmd import Plan

    return Plan("m", "m.hlo", None, None, reference_note, partitioner, params, [], param_layouts, None)


class Dev:
    def __init__(self, id: int) -> None:
        self.id = id


def test_make_inputs_gives_each_replica_its_seed_unless_shared(tmp_path):
    """Random inputs: seed+r for replica r (or one seed for all); zeros, device-id and .npz say so."""
    from mlirhlo_driver.execute.engine import TensorSpec
    from mlirhlo_driver.execute.spmd import SpmdOptions, make_inputs

    plan = bare_plan([TensorSpec((2, 3), "f32", "float32", "x"), TensorSpec((4,), "i32", "int32", "n")])
    alone = {s: make_inputs(plan, SpmdOptions(seed=s)) for s in (5, 6, 7)}
    assert alone[5].note == "random (seed 5)"
    per = make_inputs(plan, SpmdOptions(num_replicas=3, seed=5))
    assert per.note == "random (seeds 5..7, one per replica)"
    for r in range(3):
        for got, want in zip(per.per_replica[r], alone[5 + r].per_replica[0]):
            np.testing.assert_array_equal(got, want)
    assert not np.array_equal(per.per_replica[0][0], per.per_replica[1][0])
    shared = make_inputs(plan, SpmdOptions(num_replicas=2, seed=5, argument_mode="shared-random"))
    assert shared.note == "random (seed 5); the same for every replica" and len(shared.per_replica) == 2
    assert make_inputs(plan, SpmdOptions(seed=5, argument_mode="shared-random")).note == "random (seed 5)"
    for r in range(2):
        np.testing.assert_array_equal(shared.per_replica[r][0], alone[5].per_replica[0][0])
    zeros = make_inputs(plan, SpmdOptions(num_replicas=2, argument_mode="zeros"))
    assert zeros.note == "zeros" and len(zeros.per_replica) == 2
    assert [(a.dtype, a.shape, a.any()) for a in zeros.per_replica[1]] == \
        [(np.float32, (2, 3), False), (np.int32, (4,), False)]
    ids = make_inputs(plan, SpmdOptions(argument_mode="device-id"))
    assert ids.per_replica is None and ids.note == "device-id (each device's part filled with its device id)"
    path = npz(tmp_path / "in.npz", x=np.ones((2, 3), np.float32), n=np.arange(4, dtype=np.int32))
    given = make_inputs(plan, SpmdOptions(num_replicas=2, inputs_npz=str(path)))
    assert given.note == f"from {path}" and len(given.per_replica) == 2
    np.testing.assert_array_equal(given.per_replica[1][1], np.arange(4))


def test_device_arguments_are_each_devices_part_of_its_replicas_inputs():
    """Device r*P+p gets partition p's part of replica r's arrays; device-id fills with the device's id."""
    from mlirhlo_driver.execute.engine import Executable, Inputs, Layout, TensorSpec, device_arguments

    spec = TensorSpec((4,), "f32", "float32", "x")
    lay = Layout("tiled", (4,), (2,), tiles=((0,), (1,)))
    compiled = Executable(None, [Dev(7), Dev(3)], [lay], [], 0.0, [spec], [], num_partitions=2)
    inputs = Inputs([[np.arange(4.0, dtype=np.float32)]], "given")
    np.testing.assert_array_equal(device_arguments(compiled, inputs, 1)[0], [2.0, 3.0])
    np.testing.assert_array_equal(device_arguments(compiled, inputs, 0)[0], [0.0, 1.0])
    (got,) = device_arguments(compiled, Inputs(None, "ids"), 1)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [3.0, 3.0])
    whole = Layout("replicated", (4,), (4,))
    compiled = Executable(None, [Dev(0), Dev(1)], [whole], [], 0.0, [spec], [], num_replicas=2)
    two = Inputs([[np.zeros(4, np.float32)], [np.ones(4, np.float32)]], "two")
    np.testing.assert_array_equal(device_arguments(compiled, two, 1)[0], np.ones(4))
    np.testing.assert_array_equal(device_arguments(compiled, two, 0)[0], np.zeros(4))


def test_finish_without_a_reference_describes_the_run():
    """No reference: status 'ran' with the plan's note; devices, partitioner and layouts spelled out;
    disagreeing copies make it a mismatch."""
    from mlirhlo_driver.execute.engine import Executable, Inputs, Layout, TensorSpec
    from mlirhlo_driver.execute.spmd import SpmdOptions, finish

    spec = TensorSpec((4,), "f32", "float32", "x")
    lay = Layout("tiled", (4,), (1,), tiles=((0,), (1,), (2,), (3,)), text="{devices=[4]<=[4]}")
    plan = bare_plan([spec], param_layouts=[lay], reference_note="no reference (--reference none)")
    plan.results = [TensorSpec((4,), "f32", "float32")]
    compiled = Executable(None, [Dev(i) for i in range(4)], [lay], [Layout("replicated", (4,), (4,))], 5.0)
    out = finish(plan, compiled, Inputs(None, "ids"), [[np.zeros(4)]], [], [3.0, 1.0, 2.0],
                 SpmdOptions(num_partitions=4, reference="none"))
    assert (out.report.status, out.report.run_ms, out.report.inputs_note) == ("ran", 2.0, "ids")
    assert out.devices == "4 (1 replica x 4 partitions)"
    assert out.partitioner == "none: already partitioned"
    assert out.param_layouts == ["0 x float32[4]: {devices=[4]<=[4]}, [1] per device"]
    assert out.result_layouts == ["0 float32[4]: {replicated}"]
    assert out.notes == ["no reference (--reference none)"]
    assert out.run_times == [3.0, 1.0, 2.0]
    plan = bare_plan([spec], partitioner="gspmd")
    plan.results = []
    one = finish(plan, Executable(None, [Dev(0)], [Layout("replicated", (4,), (4,))], [], 1.0),
                 Inputs([[np.zeros(4)]], "zeros"), [[]], ["output 0: partitions 0 and 1 disagree"], [1.0],
                 SpmdOptions(reference="none"))
    assert one.devices == "1 (1 replica x 1 partition)" and one.partitioner == "gspmd"
    assert (one.report.status, one.report.message) == ("mismatch", "output 0: partitions 0 and 1 disagree")
    plan = bare_plan([spec])
    assert finish(plan, Executable(None, [Dev(0)], [Layout("replicated", (4,), (4,))], [], 1.0),
                  Inputs([[np.zeros(4)]], "zeros"), [[]], [], [1.0], SpmdOptions()).partitioner == "none"
    for kwargs, devices in (({"num_replicas": 2}, "2 (2 replicas x 1 partition)"),
                            ({"num_partitions": 2}, "2 (1 replica x 2 partitions)")):
        assert finish(bare_plan([]), Executable(None, [Dev(0), Dev(1)], [], [], 1.0), Inputs(None, "ids"),
                      [[], []], [], [1.0], SpmdOptions(reference="none", **kwargs)).devices == devices


def test_probe_waits_for_a_listening_coordinator_and_names_an_unreachable_one(python_names):
    """A listening port answers at once; a closed one past the deadline is one DistributedError."""
    import socket

    from mlirhlo_driver.errors import DistributedError
    from mlirhlo_driver.execute.spmd import _probe

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert _probe(f"127.0.0.1:{port}", time.time()) is None
    with pytest.raises(DistributedError) as e:
        _probe(f"127.0.0.1:{free_port()}", time.time())
    assert e.value.format("params").startswith("error: cannot reach the coordinator at 127.0.0.1:")
    assert e.value.format("params").endswith(": Connection refused (is process 0 running, and is the address right?)")


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
            assert note.startswith(f"reference: the same module on the same {devices} devices with replicated "
                                   "parameters and outputs"), (key, note)
        else:
            assert note == "reference: the same module on 1 device", (key, note)
    # The batch is split over the mesh's devices: each holds 8 / devices rows of x.
    assert rows["mlp.hlo"][4][0] == f"0 x float32[8, 16]: {{devices=[{devices},1]<=[{devices}]}}, " \
                                    f"[{8 // devices}, 16] per device"
    assert "last_tile_dim_replicate}" in rows["mlp_2d.hlo.pb"][4][1]  # w1 tiled on y, replicated on x


def test_a_named_sharding_dump_runs_with_spmd_run_as_written():
    """spmd-run on the HLO jax jits with NamedSharding (from jax 0.12: named mesh shardings):
    Shardy partitions it, each device gets its rows, and it matches the module on one device."""
    mlp = jax_programs(4)["mlp"]["hlo"]
    if V3:
        assert "sharding={mesh['b'=4], [{'b'}, {}]}" in mlp.read_text()
    stdout = ok(spmd(mlp, "--num-partitions", "4"))
    assert stdout.startswith("mlp: OK\n") and "partitioner: shardy" in stdout
    assert "parameter 0 x float32[8, 16]: {devices=[4,1]<=[4]}, [2, 16] per device" in stdout
    assert "parameter 1 w1 float32[16, 32]: {replicated}" in stdout
    assert "output 0 float32[8, 4]: {devices=[4,1]<=[4]}, [2, 4] per device" in stdout


def test_a_shard_map_program_computes_what_numpy_does(tmp_path):
    """shard_map's partial products psum-ed over y make a @ b: the gathered output is numpy's,
    from the HloProto dump (Shardy's manual computation, imported before partitioning)."""
    a, b = rand(5, 8, 8), rand(6, 8, 4)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(jax_programs(4)["shard_map"]["hlo.pb"], "--num-partitions", "4",
                     "--inputs", npz(tmp_path / "in.npz", a=a, b=b), "--dump-output", out))
    assert "shard_map: OK" in stdout
    np.testing.assert_allclose(np.load(out)["out0"], a @ b, rtol=1e-5, atol=1e-5)


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


@needs_v3
def test_arg_sharding_takes_the_named_spelling():
    """--arg-sharding with a named mesh sharding, braced or not: Shardy partitions the module."""
    stdout = ok(spmd(MATMUL, "--num-partitions", "4", "--arg-sharding", "0=mesh['b'=4], [{'b'}, {}]",
                     "--arg-sharding", "1={mesh['b'=4], [{}, {}]}"))
    assert "matmul: OK" in stdout and "partitioner: shardy" in stdout
    assert "parameter 0 x float32[8, 16]: {devices=[4,1]<=[4]}, [2, 16] per device" in stdout


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
def test_named_sharding_mistakes_are_one_line(args, message):
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
    assert "XLA's sharding parser aborted" in line


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
    assert "parameter 0 x float32[8, 3]: {mesh['b'=4], [{'b'}, {}]}, [2, 3] per device" in stdout
    assert "parameter 1 m float32[4, 3]: {manual}: one value per device, gathered as [partition, ...]" in stdout
    np.testing.assert_array_equal(np.load(out)["out0"], x)
    np.testing.assert_array_equal(np.load(out)["out1"], m)


def test_a_shard_map_program_across_two_local_processes(tmp_path):
    """jax's shard_map, split over two processes: each runs its devices' part, process 0 gathers
    a @ b. Its reference would be one more SPMD run every process must join: the note says so."""
    a, b = rand(7, 8, 8), rand(8, 8, 4)
    out = tmp_path / "out.npz"
    stdout = ok(spmd(jax_programs(4)["shard_map"]["hlo"], "--num-partitions", "4", "--launch-local", "2",
                     "--inputs", npz(tmp_path / "in.npz", a=a, b=b), "--dump-output", out, "--timeout", "60",
                     timeout=90))
    assert "[0] shard_map: RAN" in stdout and "[0]   gathered from 2 processes" in stdout
    assert "[0]   no reference: a module with manual computations is compared with itself replicated on its " \
           "mesh in one process only (give --reference-module)" in stdout
    np.testing.assert_allclose(np.load(out)["out0"], a @ b, rtol=1e-5, atol=1e-5)
