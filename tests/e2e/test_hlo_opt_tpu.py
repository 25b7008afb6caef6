"""XLA's tools with ``--platform=TPU`` (hlo-opt, run_hlo_module) as a user runs them: hlo-opt
compiles device-less for a TPU topology; run_hlo_module, with no TPU attached, says so in one
line and points at the device-less compile (it runs nothing)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import DATA, assert_mentions, assert_one_line_error, run_xla_tool
from tests.tpu.conftest import needs_libtpu

MATMUL = DATA / "spmd" / "matmul.hlo"


@needs_libtpu
@pytest.mark.slow
def test_hlo_opt_compiles_for_a_tpu_topology(tmp_path, capfd):
    r = run_xla_tool("hlo-opt", ["--platform=TPU", "--tpu_topology=v6e:2x2", "--stage=hlo", str(MATMUL)],
                     tmp_path, capfd)
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule matmul") and "T(8,128)" in r.out
    mem = run_xla_tool("hlo-opt", ["--platform=tpu", "--stage=memory", str(MATMUL)], tmp_path, capfd)
    assert mem.code == 0 and "v5e:2x2" in mem.out and "fits" in mem.out
    assert_mentions(mem.err, "note:", "--tpu_topology")


def test_hlo_opt_lists_the_tpu_stages(tmp_path, capfd):
    r = run_xla_tool("hlo-opt", ["--platform=tpu", "--list-stages"], tmp_path, capfd)
    assert r.code == 0
    names = r.out.split()
    assert {"hlo", "memory", "memory-usage-report", "buffer-assignment", "cost"} <= set(names)
    assert "ptx" not in names and "llvm" not in names


def test_hlo_opt_bad_topology_is_one_line(tmp_path, capfd):
    r = run_xla_tool("hlo-opt", ["--platform=tpu", "--tpu_topology=v5e:3x3x3", "--stage=hlo", str(MATMUL)],
                     tmp_path, capfd)
    assert_mentions(assert_one_line_error(r, code=2), "v5e", "2 dimensions")


def test_run_hlo_module_on_tpu_says_none_is_attached(tmp_path, capfd):
    r = run_xla_tool("run_hlo_module", ["--platform=TPU", str(MATMUL)], tmp_path, capfd)
    line = assert_one_line_error(r, code=2, at="--platform=TPU")
    assert_mentions(line, "no TPU is attached", "hlo-opt --platform=TPU", "mlirhlo opt")


@needs_libtpu
def test_hlo_opt_takes_libtpus_options_and_two_slices(tmp_path, capfd):
    r = run_xla_tool("hlo-opt", ["--platform=TPU", "--tpu_topology=2xv5e:1x1", "--stage=memory",
                                 "--xla_tpu_max_hbm_size_mib=1", str(MATMUL)], tmp_path, capfd)
    assert r.code == 0, r.err
    assert_mentions(r.out, "tpu (2xv5e:1x1)", "1.00 MiB", "--xla_tpu_max_hbm_size_mib=1")
    r = run_xla_tool("hlo-opt", ["--platform=TPU", "--stage=memory", "--xla_tpu_max_hbm_size_mb=1", str(MATMUL)],
                     tmp_path, capfd)
    assert_mentions(assert_one_line_error(r, code=2), "--xla_tpu_max_hbm_size_mb", "xla_tpu_max_hbm_size_mib")


@needs_libtpu
@pytest.mark.slow
def test_hlo_opt_replays_a_jax_tpu_dump(tmp_path, capfd):
    from mlirhlo_driver._native import jaxlib
    from tests.tpu.test_replay import AFTER, BEFORE, without_metadata

    r = run_xla_tool("hlo-opt", ["--platform=TPU", "--stage=hlo", str(BEFORE)], tmp_path, capfd)
    assert r.code == 0, r.err

    def printed(text: str) -> str:
        # hlo-opt prints as XLA's hlo-opt does (the header without the module
        # config's num_partitions and sharding propagation flags; the user's names put back on
        # the entry and its parameters, where the dump has the partitioner's main.0_spmd and
        # param.N): both sides in that printer, up to metadata and names
        text = without_metadata(jaxlib.hlo_proto_to_text(jaxlib.hlo_text_to_proto(text)))
        return re.sub(r"(?<![\w.])%?[A-Za-z_][\w.\-]*(?=[ :=,)])(?= = | \(|:|,|\))", "N", text)

    assert printed(r.out) == printed(AFTER.read_text())
