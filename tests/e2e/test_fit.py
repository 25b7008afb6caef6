"""``mlirhlo fit``: will a program fit, per TPU slice and GPU spec, as a user runs it (argv in,
exit code, the table or JSON out). The TPU cases need libtpu ('mlirhlo tpu-plugin install';
.ci/run installs it) and are skipped without it; the GPU rows need the CUDA plugin, as every
device-less CUDA compile does."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, assert_mentions, assert_one_line_error
from tests.tpu.conftest import needs_libtpu

pytestmark = pytest.mark.xdist_group("tpu")  # one worker keeps the TPU process for all

TPU = DATA / "tpu"
STEP = DATA / "spmd" / "mlp_step_4way.before_optimizations.txt"
SIX = "v5e:2x2,v5e:2x4,v5p:2x2x1,v6e:2x2,v4:2x2x1,tpu7x:2x2x1"


def rows(text: str) -> dict[str, str]:
    """The table's rows by target label."""
    return {line.split(")")[0].strip() + ")": line for line in text.splitlines()
            if line.lstrip().startswith(("tpu (", "cuda (")) and line.count("  ") > 2}


@needs_libtpu
@pytest.mark.slow
def test_a_slice_it_fits_on_and_one_it_does_not_are_rows_of_one_run(cli):
    r = cli("fit", TPU / "too_big_for_v5e.mlir", "--tpu-topology", "v5e:1x1,v5p:2x2x1")
    assert r.code == 0, r.err
    found = rows(r.out)
    assert found["tpu (v5e:1x1)"].endswith("no (XLA)") and "32.00 GiB" in found["tpu (v5e:1x1)"]
    assert found["tpu (v5p:2x2x1)"].endswith("yes") and "95.00 GiB" in found["tpu (v5p:2x2x1)"]
    # XLA's own words for the slice it refused, once, under the table
    assert_mentions(r.out, "tpu (v5e:1x1): XLA:", "(32.00G)", "(15.75G)")
    assert cli("fit", TPU / "too_big_for_v5e.mlir", "--tpu-topology", "v5e:1x1,v5p:2x2x1",
               "--require-fit").code == 1


@needs_libtpu
def test_json_has_a_row_per_target_with_the_figures_the_verdict_reads(cli):
    r = cli("fit", STEP, "--tpu-topology", "v5e:2x2,v5litepod-4", "--json")  # the same slice twice: one row
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)["targets"]
    assert (row["target"], row["devices"], row["partitions"], row["fits"], row["source"]) == (
        "tpu (v5e:2x2)", 4, 4, True, "compile")
    assert row["capacity_bytes"] == 16 << 30 and 0 < row["required_bytes"] < 1 << 20
    assert row["headroom_bytes"] == row["capacity_bytes"] - row["required_bytes"]


@needs_libtpu
def test_a_slice_too_small_for_the_partitions_is_an_error_row_and_exit_1(cli):
    r = cli("fit", STEP, "--tpu-topology", "v5e:1x1,v5e:2x2")
    assert r.code == 1, r.err
    found = rows(r.out)
    assert found["tpu (v5e:1x1)"].endswith("error") and found["tpu (v5e:2x2)"].endswith("yes")
    assert_mentions(r.out, "tpu (v5e:1x1): TPU topology v5e:1x1 has 1 device; this compile needs 4")


@pytest.mark.slow
def test_a_gpu_spec_row_has_the_specs_memory(cli):
    r = cli("fit", DATA / "mm_add.mlir", "--gpu-spec", "h100_sxm,t4", "--json")
    assert r.code == 0, r.err
    h100, t4 = json.loads(r.out)["targets"]
    assert (h100["target"], h100["platform"], h100["fits"]) == ("cuda (h100_sxm)", "cuda", True)
    assert h100["capacity_bytes"] > t4["capacity_bytes"] > 10 << 30  # device_memory_size of each spec
    assert h100["required_bytes"] > 0 and t4["required_bytes"] > 0


def test_a_bad_topology_is_one_line(cli):
    r = cli("fit", DATA / "mm_add.mlir", "--tpu-topology", "v5e:2x2,v9:2x2")
    assert_one_line_error(r, at="--tpu-topology", facts=("v9",))


def test_no_target_and_no_input_are_one_line(cli):
    assert_one_line_error(cli("fit", DATA / "mm_add.mlir"), facts=("--tpu-topology", "--gpu-spec"))
    assert_one_line_error(cli("fit", DATA / "nope.mlir", "--gpu-spec", "h100_sxm"), at=str(DATA / "nope.mlir"))


@needs_libtpu
@pytest.mark.slow
def test_two_workers_give_the_rows_one_process_gives(cli):
    one = cli("fit", STEP, "--tpu-topology", SIX, "--gpu-spec", "t4", "--json", "--no-cache")
    two = cli("fit", STEP, "--tpu-topology", SIX, "--gpu-spec", "t4", "--json", "--no-cache", "--jobs", "2")
    assert one.code == two.code == 0, (one.err, two.err)
    assert json.loads(one.out) == json.loads(two.out)
    assert len(json.loads(one.out)["targets"]) == 7


@needs_libtpu
@pytest.mark.slow
def test_a_dask_cluster_gives_the_rows_this_process_gives(cli):
    distributed = pytest.importorskip("distributed")
    here = cli("fit", STEP, "--tpu-topology", "v5e:2x2,v6e:2x2", "--gpu-spec", "t4", "--json")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1",
                                  scheduler_port=0, dashboard_address=":0", worker_dashboard_address=None,
                                  silence_logs=50, timeout=60) as cluster:
        there = cli("fit", STEP, "--tpu-topology", "v5e:2x2,v6e:2x2", "--gpu-spec", "t4", "--json",
                    "--scheduler", cluster.scheduler_address)
    assert here.code == there.code == 0, (here.err, there.err)
    assert json.loads(here.out) == json.loads(there.out)


@pytest.mark.slow
def test_plot_draws_the_sweep(cli, tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra (pip install -e '.[plot]'; .ci/run's newest cell has it)")
    r = cli("fit", DATA / "mm_add.mlir", "--gpu-spec", "h100_sxm,t4", "--plot", tmp_path / "sweep.png")
    assert r.code == 0, r.err
    assert (tmp_path / "sweep.png").read_bytes().startswith(b"\x89PNG")
    assert "cuda (t4)" in r.out  # the table too


def test_plot_without_a_picture_extension_is_one_line(cli, tmp_path):
    r = cli("fit", DATA / "mm_add.mlir", "--gpu-spec", "t4", "--plot", tmp_path / "sweep.txt")
    assert_one_line_error(r, at="--plot", facts=(".png", ".svg"))


@needs_libtpu
@pytest.mark.parametrize("jobs", ["0", "1"])
def test_a_jax_function_sweeps_tpu_and_gpu_targets_in_one_run(cli, jobs):
    # lowered for the TPU in its process, for the CPU here after the TPU module was read:
    # the whole sweep once failed on jax's sdy bindings (imported after jaxlib's MLIR)
    r = cli("fit", f"{DATA / 'tpu' / 'linalg.py'}:solve", "--args", "f32[64,64],f32[64,8]",
            "--tpu-topology", "v5e:1x1", "--gpu-spec", "h100_sxm", "--jobs", jobs, "--json")
    rows = {row["target"]: row for row in json.loads(r.out)["targets"]}
    assert rows["tpu (v5e:1x1)"]["fits"] is True, r.err
    # the CPU lowering's LAPACK call has no CUDA handler: that target's row says so, the sweep goes on
    assert rows["cuda (h100_sxm)"]["source"] == "error" and "lapack" in rows["cuda (h100_sxm)"]["detail"]
