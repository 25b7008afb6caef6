"""``mlirhlo diff --platform tpu --tpu-topology A,B``: one module compiled for two TPU slices,
side by side (fusions, memory, a stage's text), device-less."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, assert_mentions, assert_one_line_error
from tests.tpu.conftest import needs_libtpu

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
    (["--platform", "tpu", "--tpu-topology", "v5e:2x2,v6e:2x2", "--explain"], ("--explain", "TPU")),
])
def test_bad_tpu_diffs_are_one_line(cli, argv, facts):
    assert_mentions(assert_one_line_error(cli("diff", STEP, *argv), code=2), *facts)
