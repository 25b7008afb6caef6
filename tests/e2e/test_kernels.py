"""``mlirhlo kernels`` as a user runs it (device-less CUDA)."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO, assert_one_line_error

MLP = REPO / "tests" / "data" / "mlp_train_step.before_optimizations.txt"


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


TOPK_HLO = """HloModule topk_rows

ENTRY main {
  x = f32[4,8] parameter(0)
  ROOT t = (f32[4,2], s32[4,2]) topk(x), k=2, largest=true
}
"""


@pytest.mark.slow
def test_kernels_command_three_specs(cli):
    specs = "a100_sxm_80,h100_sxm,t4"
    r = cli("kernels", MLP, "--gpu-spec", specs)
    assert r.code == 0, r.err
    header = r.out.splitlines()[1]
    assert [s for s in specs.split(",") if s in header] == specs.split(",")
    assert re.search(r"^\s*loop_broadcast_fusion\s", r.out, re.M)
    j = cli("kernels", MLP, "--gpu-spec", specs, "--json")
    assert j.code == 0, j.err
    data = json.loads(j.out)
    assert [s["name"] for s in data["gpu_specs"]] == specs.split(",")
    row = next(k for k in data["kernels"] if k["kernel"] == "loop_broadcast_fusion")
    assert set(row["specs"]) == set(specs.split(","))
    a = row["specs"]["a100_sxm_80"]
    assert a["registers"] > 0 and a["block"][0] > 0 and 0 < a["occupancy"]["occupancy"] <= 1


def test_kernels_command_bad_spec(cli):
    assert_one_line_error(cli("kernels", MLP, "--gpu-spec", "a100_sxm_80,h99"), contains="h99")


def test_kernels_json_is_two_space_indented(cli, tmp_path):
    import json

    path = tmp_path / "topk.hlo"
    path.write_text(TOPK_HLO)
    r = cli("kernels", path, "--gpu-spec", "h100_sxm", "--json")
    assert r.code == 0, r.err
    assert r.out == json.dumps(json.loads(r.out), indent=2) + "\n"


@pytest.mark.parametrize("words", [["m.hlo", "--platform", "cpu"], ["--platform=cpu", "m.hlo"], ["m.hlo", "--jsn"]])
def test_kernels_refuses_an_unknown_option_as_an_option(cli, words):
    """typer keeps the options kernels does not know (the --xla_* flags) among its FILE...: one
    that is no XLA flag is refused by name, wherever it stands, never read as an input file."""
    option = next(w for w in words if w.startswith("-")).split("=")[0]
    line = assert_one_line_error(cli("kernels", *words), facts=(option,))
    assert "no such file" not in line and "m.hlo" not in line


def test_kernels_takes_xla_flags_among_its_files(cli, recorder):
    """An --xla_* flag among kernels' FILE... is the compile's, and '-' (stdin) an input."""
    r = cli("kernels", "a.hlo", "--xla_gpu_autotune_level=0", "-", "b.hlo")
    assert (r.code, r.out) == (0, "table\n"), r.err
    assert recorder["kernels"][0][0] == ["a.hlo", "-", "b.hlo"]
    assert recorder["resolve"][1]["cli_flags"] == {"xla_gpu_autotune_level": 0}


# ------------------------------------------------------------------ TPU (device-less)

def test_kernels_tpu_table_and_json(cli):
    from tests.tpu.conftest import libtpu_skip_reason

    if libtpu_skip_reason():
        pytest.skip(libtpu_skip_reason())
    src = REPO / "tests" / "data" / "tpu" / "matmul_tanh.mlir"
    r = cli("kernels", src, "--platform", "tpu", "--tpu-topology", "v5e:1x1")
    assert r.code == 0, r.err
    assert r.out.startswith("# matmul_tanh on v5e:1x1") and "1.5 GHz" in r.out
    assert re.search(r"^convolution_tanh_fusion\s+output fusion\s+[\d,]+\s+[\d.]+\s", r.out, re.M)
    j = cli("kernels", src, "--tpu-topology", "v5e:1x1", "--json")  # a topology alone means TPU
    assert j.code == 0, j.err
    (entry,) = json.loads(j.out)
    assert (entry["module"], entry["topology"], entry["generation"]) == ("matmul_tanh", "v5e:1x1", "v5e")
    (row,) = [x for x in entry["rows"] if x["name"] == "convolution_tanh_fusion"]
    assert row["cycles"] > 0 and row["flops"] == 2 * 128 * 256 * 512 and row["bound"] in ("compute", "memory")


@pytest.mark.golden
def test_kernels_platform_other_than_cuda_or_tpu(cli):
    line = assert_one_line_error(cli("kernels", "m.mlir", "--platform", "cpu"))
    assert line == ("error: --platform cpu: kernels are CUDA's or TPU's (--platform cuda (--gpu-spec) "
                    "or --platform tpu (--tpu-topology))")
