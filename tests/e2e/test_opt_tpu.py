"""``mlirhlo opt --platform tpu``: device-less TPU compiles as a user runs them (argv in, exit
code, stdout, files out). They need libtpu ('mlirhlo tpu-plugin install'; .ci/run installs
it) and are skipped without it. Each compile runs in the driver's TPU process (kept for the
next), about 0.1-0.5 s here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import DATA, REPO, assert_mentions, assert_one_line_error
from tests.e2e.conftest import mlirhlo
from tests.tpu.conftest import needs_libtpu

# One worker keeps the TPU process for all (pytest-xdist): starting it is most of a small compile.
pytestmark = pytest.mark.xdist_group("tpu")

TPU = DATA / "tpu"
MATMUL = TPU / "matmul_tanh.mlir"


@needs_libtpu
@pytest.mark.slow
def test_three_generations_at_once_each_in_its_own_files(cli, tmp_path):
    r = cli("opt", MATMUL, "--platform", "tpu", "--tpu-topology", "v5e:1x1,v5p:2x2x1,v6e-4,tpu7x:2x2x1",
            "--stage", "hlo,memory", "--dump-dir", tmp_path)
    assert r.code == 0, r.err
    for name in ("v5e:1x1", "v5p:2x2x1", "v6e:2x2", "tpu7x:2x2x1"):
        hlo = (tmp_path / f"matmul_tanh.{name}.hlo").read_text()
        assert hlo.startswith("HloModule") and "T(8,128)" in hlo  # TPU's tiled layouts
        assert "fits" in (tmp_path / f"matmul_tanh.{name}.memory.txt").read_text()


@needs_libtpu
@pytest.mark.slow
def test_the_default_topology_is_said_with_a_note(cli):
    r = cli("opt", MATMUL, "--platform", "tpu", "--stage", "memory")
    assert r.code == 0, r.err
    assert_mentions(r.err, "note:", "v5e:2x2")
    assert_mentions(r.out, "tpu (v5e:2x2)", "arguments:", "temporaries:", "generated code:", "total:",
                    "XLA peak:", "HBM:", "fits")


@needs_libtpu
@pytest.mark.slow
def test_a_sharded_step_is_partitioned_over_the_slice(cli):
    step = DATA / "spmd" / "mlp_step_4way.before_optimizations.txt"
    r = cli("opt", step, "--platform", "tpu", "--tpu-topology", "v5e:2x2", "--stage", "hlo")
    assert r.code == 0, r.err
    assert_mentions(r.err, "compiled for 4 partitions")
    assert "all-reduce" in r.out and "_spmd" in r.out  # per-device program with its collectives
    one = cli("opt", step, "--platform", "tpu", "--tpu-topology", "v5e:2x2", "--stage", "hlo",
              "--num-partitions", "1")
    assert one.code == 0 and "all-reduce" not in one.out


@needs_libtpu
def test_more_partitions_than_the_slice_has_is_one_line(cli):
    r = cli("opt", DATA / "sharded_matmul.mlir", "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "hlo")
    line = assert_one_line_error(r, code=1, at=str(DATA / "sharded_matmul.mlir"))
    assert_mentions(line, "v5e:1x1", "1 device", "4")


@needs_libtpu
@pytest.mark.slow
def test_a_program_that_does_not_fit_is_one_line_with_xlas_numbers(cli):
    r = cli("opt", TPU / "too_big_for_v5e.mlir", "--platform", "tpu", "--tpu-topology", "v5e:1x1",
            "--stage", "memory")
    line = assert_one_line_error(r, code=1)
    assert_mentions(line, "does not fit", "v5e:1x1", "(32.00G)", "(15.75G)")


@needs_libtpu
def test_a_dynamic_dimension_is_refused_before_libtpu_aborts_on_it(cli):
    r = cli("opt", TPU / "dynamic_tanh.mlir", "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "hlo")
    assert_mentions(assert_one_line_error(r, code=2), "dynamic dimension", "tensor<?x128xf32>")


@needs_libtpu
@pytest.mark.slow
def test_libtpu_ending_its_process_is_one_line():
    # An unknown flag in LIBTPU_INIT_ARGS: libtpu exits its process (here, the driver's TPU process).
    env = dict(os.environ, LIBTPU_INIT_ARGS="--xla_no_such_flag_at_all=1")
    p = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", str(MATMUL), "--platform", "tpu",
                        "--stage", "hlo", "--no-cache"], capture_output=True, text=True, env=env, cwd=REPO,
                       timeout=300)
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert p.returncode == 1 and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert_mentions(lines[0], "LIBTPU_INIT_ARGS")


@needs_libtpu
@pytest.mark.slow
def test_a_jax_function_is_lowered_for_the_tpu(tmp_path):
    # On the CPU, jnp.linalg.solve lowers to LAPACK custom calls that libtpu has no kernel for.
    # Fresh processes: in one that parsed MLIR before importing jax, jaxlib 0.12.0.1's lowering
    # of solve misses sdy.DimMappingAttr (the CPU path too, on main as well).
    fn, args = f"{TPU / 'linalg.py'}:solve", "f32[64,64],f32[64,8]"
    r = mlirhlo("opt", fn, "--args", args, "--platform", "tpu", "--tpu-topology", "v6e:2x2", "--stage", "hlo")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"HloModule jit_solve") and b"lapack" not in r.stdout
    cpu = mlirhlo("opt", fn, "--args", args, "-o", tmp_path / "cpu.mlir")
    assert cpu.returncode == 0 and "lapack_" in (tmp_path / "cpu.mlir").read_text()
    again = mlirhlo("opt", tmp_path / "cpu.mlir", "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "hlo")
    lines = again.stderr.decode().strip().splitlines()
    assert again.returncode == 2 and len(lines) == 1, again.stderr
    assert_mentions(lines[0], "error:", "CPU-only custom calls", "lapack_sgetrf_ffi")


@needs_libtpu
@pytest.mark.slow
def test_stage_all_gives_every_tpu_stage(cli, tmp_path):
    r = cli("opt", MATMUL, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "all",
            "--dump-dir", tmp_path)
    assert r.code == 0, r.err
    names = {p.name for p in tmp_path.iterdir()}
    for ext in ("hlo", "buffer-assignment.txt", "memory-usage-report.txt", "memory.txt", "memory-usage.json",
                "cost.json", "html", "dot", "hlo-backend.hlo", "static-profile.txt", "convolution_tanh_fusion.llo"):
        assert f"matmul_tanh.{ext}" in names, (ext, sorted(names))
    assert '"flops"' in (tmp_path / "matmul_tanh.cost.json").read_text()
    assert "allocation 0" in (tmp_path / "matmul_tanh.buffer-assignment.txt").read_text()


def test_cpu_and_cuda_only_stages_are_refused_for_tpu(cli):
    r = cli("opt", MATMUL, "--platform", "tpu", "--stage", "ptx")
    assert_mentions(assert_one_line_error(r, code=2), "ptx", "tpu")


def test_a_bad_topology_is_one_line_before_anything_loads(cli):
    r = cli("opt", MATMUL, "--platform", "tpu", "--tpu-topology", "v5x:2x2", "--stage", "hlo")
    assert_mentions(assert_one_line_error(r, code=2, at="--tpu-topology"), "v5x", "v5e")


def test_no_libtpu_is_one_line_with_the_install_command(tmp_path):
    from mlirhlo_driver._native import libtpu

    if libtpu.in_use() is not None and not libtpu.in_use().copy:
        pytest.skip("libtpu is installed in site-packages here")
    env = dict(os.environ, **{libtpu.ENV: str(tmp_path)})
    p = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", str(MATMUL), "--platform", "tpu",
                        "--stage", "hlo", "--no-cache"], capture_output=True, text=True, env=env, cwd=REPO,
                       timeout=300)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("note:")]
    assert len(lines) == 1 and lines[0].startswith("error:") and "mlirhlo tpu-plugin install" in lines[0], p.stderr


@needs_libtpu
def test_a_slice_that_compiles_only_whole_is_one_line(cli):
    # libtpu 0.0.50.1, v5e 16x16 (limited ICI routing): a compile uses every device of the slice.
    r = cli("opt", DATA / "spmd" / "mlp_step_4way.before_optimizations.txt", "--platform", "tpu",
            "--tpu-topology", "v5e:16x16", "--stage", "memory")
    assert_mentions(assert_one_line_error(r, code=1), "v5e:16x16", "all 256 devices")


@needs_libtpu
@pytest.mark.slow
def test_libtpus_bundles_and_static_profile(cli):
    # libtpu's own dumps: process-wide flags, so a TPU process of their own; the profile's op is
    # the fusion the optimized HLO holds.
    r = cli("opt", MATMUL, "--platform", "tpu", "--tpu-topology", "v6e:2x2", "--stage", "static-profile")
    assert r.code == 0, r.err
    assert_mentions(r.out, "estimated cycles", "TPU v6 lite", "convolution_tanh_fusion", "total")
    llo = cli("opt", MATMUL, "--platform", "tpu", "--tpu-topology", "v6e:2x2", "--stage", "llo")
    assert llo.code == 0, llo.err
    assert "// ----- convolution_tanh_fusion -----" in llo.out and "vsyncpa" in llo.out


@needs_libtpu
@pytest.mark.slow
@pytest.mark.parametrize("jobs", [[], ["--jobs", "2"]], ids=["in-process", "workers"])
def test_no_logs_or_lock_files_are_left_behind(tmp_path, jobs):
    # libtpu writes glog files into TMPDIR (whatever TPU_LOG_DIR says), /tmp/tpu_logs and a lock
    # file unless told otherwise: the driver's TPU process keeps them in a directory of the
    # command's, removed at its exit.
    import glob
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    since = time.time()
    # With --jobs, each worker compiles in TPU processes of its own, its directories removed
    # as the worker ends.
    inputs = [str(MATMUL), str(DATA / "spmd" / "matmul.hlo")] if jobs else [str(MATMUL)]
    p = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", *inputs, "--platform", "tpu",
                        "--tpu-topology", "v5e:1x1", "--stage", "memory,static-profile", "--no-cache", *jobs],
                       capture_output=True, text=True, env=dict(os.environ, TMPDIR=str(tmp)), cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr
    assert list(tmp.iterdir()) == []
    left = [f for f in glob.glob("/tmp/tpu_driver*") + glob.glob("/tmp/tpu_logs/*") + ["/tmp/libtpu_lockfile"]
            if os.path.exists(f) and os.path.getmtime(f) >= since]
    assert left == []


@needs_libtpu
@pytest.mark.slow
def test_a_cached_tpu_stage_loads_neither_jax_nor_libtpu(tmp_path):
    from tests.conftest import IMPORT_PROBE, run_subprocess

    argv = ["opt", str(MATMUL), "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "memory"]
    env = {"MLIRHLO_CACHE_DIR": str(tmp_path / "cache")}
    first = run_subprocess(IMPORT_PROBE.format(argv=argv), env=env)
    assert "fits" in first.stdout, first.stderr
    again = run_subprocess(IMPORT_PROBE.format(argv=argv), env=env)
    assert again.stdout.splitlines()[-1] == "IMPORTED: []" and "fits" in again.stdout, again.stderr


@needs_libtpu
@pytest.mark.slow
def test_timing_lists_libtpus_hlo_passes(cli):
    # libtpu's XLA logs its passes through its own flags (LIBTPU_INIT_ARGS), in the TPU process.
    r = cli("opt", MATMUL, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--timing", "--stage", "hlo",
            "--no-cache")
    assert r.code == 0, r.err
    assert_mentions(r.err, "// XLA HLO passes (tpu (v5e:1x1))", "layout-assignment", "tpu_fusion")
    assert not [ln for ln in r.err.splitlines() if ln.startswith(("I1", "I0"))]  # libtpu's INFO lines stay out


@needs_libtpu
@pytest.mark.slow
def test_a_sharded_step_over_two_slices_reduces_across_them_over_dcn(cli, tmp_path):
    # 2xv5e:1x2: two slices of two chips, devices 100000-100001 and 200000-200001; the 4-way
    # step's all-reduces between slices become host transfers for libtpu's megascale (DCN) runtime.
    step = DATA / "spmd" / "mlp_step_4way.before_optimizations.txt"
    r = cli("opt", step, "--platform", "tpu", "--tpu-topology", "2xv5e:1x2", "--stage", "hlo,memory",
            "--dump-dir", tmp_path)
    assert r.code == 0, r.err
    hlo = (tmp_path / "mlp_step_4way.hlo").read_text()
    assert '_xla_host_transfer_handler_name="xla_megascale_runtime"' in hlo
    assert '_xla_megascale_transfer_type="ALL_REDUCE"' in hlo
    assert "fits" in (tmp_path / "mlp_step_4way.memory.txt").read_text()
    one = cli("opt", step, "--platform", "tpu", "--tpu-topology", "v5e:2x2", "--stage", "hlo")
    assert one.code == 0 and "megascale" not in one.out  # one slice: ICI only


@needs_libtpu
def test_an_unsharded_module_compiles_for_a_multislice_topology(cli):
    # its one device is 100000: the compile says so (libtpu refuses a multislice compile without
    # a static device assignment)
    r = cli("opt", MATMUL, "--platform", "tpu", "--tpu-topology", "2xv5litepod-4", "--stage", "memory")
    assert r.code == 0, r.err
    assert_mentions(r.out, "tpu (2xv5e:2x2)", "fits")


@needs_libtpu
@pytest.mark.slow
def test_a_jax_tpu_dump_recompiles_with_the_options_it_had(cli, tmp_path):
    from tests.tpu.test_replay import AFTER, DUMP, STEM, without_metadata

    r = cli("opt", DUMP, "--platform", "tpu", "--stage", "hlo")
    assert r.code == 0, r.err
    assert without_metadata(r.out) == without_metadata(AFTER.read_text())
    assert_mentions(r.err, "the dump's options", "4 partitions", "v5e:2x2")
    small = cli("opt", DUMP, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "hlo")
    assert_mentions(assert_one_line_error(small, code=2, at=str(DUMP / STEM / "compile_options.pb")), "4 devices", "v5e:1x1")
