"""``mlirhlo diff --platform tpu --tpu-topology A,B``: one module compiled for two TPU slices,
side by side (fusions, memory, a stage's text), device-less."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, assert_mentions, assert_one_line_error
from tests.tpu.conftest import needs_libtpu, needs_static_profile

STEP = DATA / "spmd" / "mlp_step_4way.before_optimizations.txt"


@needs_libtpu
@pytest.mark.slow
def test_one_module_on_two_slices(cli):
    r = cli("diff", STEP, "--platform", "tpu", "--tpu-topology", "v5e:2x2,v5p:2x2x1", "--stage", "hlo")
    assert r.code == 0, r.err
    assert_mentions(r.out, "A: ", "on tpu v5e:2x2", "B: ", "on tpu v5p:2x2x1", "temporaries", "differences found")
    js = cli("diff", STEP, "--tpu-topology", "v6e:2x2,v5p:2x2x1", "--json")
    data = json.loads(js.out)
    assert (data["a"]["tpu_topology"], data["b"]["tpu_topology"]) == ("v6e:2x2", "v5p:2x2x1")
    assert data["memory"]["generated_code_size_in_bytes"]["a"] > 0


@pytest.mark.parametrize("argv, facts", [
    (["--platform", "tpu", "--tpu-topology", "v5e:2x2,v6e:2x2,v5p:2x2x1"], ("3 topologies", "two")),
    (["--platform", "cpu", "--tpu-topology", "v5e:2x2"], ("--tpu-topology", "--platform tpu")),
])
def test_bad_tpu_diffs_are_one_line(cli, argv, facts):
    assert_mentions(assert_one_line_error(cli("diff", STEP, *argv), code=2), *facts)


MATMUL_TANH = DATA / "tpu" / "matmul_tanh.mlir"


@needs_static_profile
@pytest.mark.slow
def test_diff_lists_tpu_ops_and_explains_a_flag_and_its_pass(cli):
    """Two v5e compiles, B with a TPU option that unfuses the dot's output fusion and one that
    changes nothing here: the ops on each side, the one flag that reproduces it (ddmin) and
    the pass whose disabling on A removes it."""
    flags = "--xla_jf_conv_output_fusion=false --xla_tpu_enable_copy_fusion=false"
    r = cli("diff", MATMUL_TANH, "--tpu-topology", "v5e:1x1", "--flags-b", flags, "--explain", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [k["kernel"] for k in data["kernels"]["only_a"]] == ["convolution_tanh_fusion"]
    assert data["kernels"]["only_a"][0]["cycles"] > 0
    explained = {e["kernel"]: e for e in data["explain"]["kernels"]}
    gone = explained["convolution_tanh_fusion"]
    assert gone["reproduced"] and [c["name"] for c in gone["cause"]] == ["xla_jf_conv_output_fusion"]
    assert gone["pass"]["side"] == "a" and gone["pass"]["name"]
    again = cli("diff", MATMUL_TANH, "--tpu-topology", "v5e:1x1", "--flags-b", flags, "--explain")
    assert again.code == 0 and "cause: --xla_jf_conv_output_fusion=false" in again.out
    assert "0 trial compile(s)" in again.out  # the trials are in the stage cache


@needs_static_profile
def test_a_generation_change_is_named_as_the_cause(cli):
    r = cli("diff", MATMUL_TANH, "--tpu-topology", "v5e:1x1,v6e:1x1", "--explain")
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if x.strip().startswith("convolution_tanh_fusion") and "cause" in x)
    assert "changed est. cycles" in line and "TPU topology v5e:1x1 -> v6e:1x1" in line
    assert "a generation change" in line and "the optimized HLO is the same on both sides" in line
