"""mlirhlo_driver.cuda.roofline: which launches get figures from XLA's cost analysis.

One device-less CUDA compile of a transpose (a kernel that moves data and does no
arithmetic); XLA's analysis is replaced where a test needs figures it does not give
for any real module.
"""

from __future__ import annotations

import pytest

TRANSPOSE = """\
func.func @main(%a: tensor<1024x512xf32>) -> tensor<512x1024xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<1024x512xf32>) -> tensor<512x1024xf32> loc("jit(f)/transpose"("model.py":3:8))
  return %0 : tensor<512x1024xf32>
}
"""
H100_BW = 3.35e12


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


@pytest.fixture(scope="module")
def transpose(tmp_path_factory):
    import mlirhlo_driver

    path = tmp_path_factory.mktemp("roofline") / "transpose.mlir"
    path.write_text(TRANSPOSE)
    return mlirhlo_driver.compile(str(path), platform="cuda", gpu_spec="h100_sxm")


def test_a_kernel_with_no_flops_keeps_xlas_figures_and_is_memory_bound(transpose):
    """A launch XLA counts 0 FLOPs for (a transpose) has figures: 0 FLOPs, its bytes, memory bound."""
    (row,) = transpose.fusion_costs()
    assert row.op_name == "jit(f)/transpose"
    assert row.figures_from == "xla-cost-analysis"
    assert (row.flops, row.transcendentals, row.bytes_accessed) == (0.0, 0.0, 2 * 1024 * 512 * 4)
    assert row.intensity == 0.0 and row.bound == "memory"
    assert row.seconds == pytest.approx(2 * 1024 * 512 * 4 / H100_BW)


@pytest.mark.parametrize("xla, figures", [
    ({"flops": 0.0, "transcendentals": 0.0, "bytes accessed": 64.0}, (0.0, 0.0, 64.0)),
    ({"flops": 8.0, "transcendentals": 2.0, "bytes accessed": 0.0}, (8.0, 2.0, 0.0)),
    ({"flops": 8.0}, (8.0, 0.0, 0.0)),
    ({"flops": -1.0, "transcendentals": 0.0, "bytes accessed": 64.0}, None),
    ({"flops": 8.0, "transcendentals": 0.0, "bytes accessed": -1.0}, None),
])
def test_xlas_figures_are_used_unless_one_is_negative(transpose, monkeypatch, xla, figures):
    """XLA's per-launch figures are the row's when none is negative (zeros and missing keys
    count as 0); a -1 (what XLA cannot count) leaves the row without figures."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import roofline
    from mlirhlo_driver.xla import stages as xla_stages

    proto = xla_stages._optimized_proto(transpose.request)
    monkeypatch.setattr(_jaxlib, "hlo_cost_analysis", lambda protos: [dict(xla) for _ in protos[:-1]] + [{}])
    (row,), _ = roofline.cost_rows(proto, transpose.request.options.gpu_spec)
    if figures is None:
        assert (row.flops, row.transcendentals, row.bytes_accessed) == (None, None, None)
        assert row.figures_from.startswith("none: ") and row.bound is None and row.seconds is None
    else:
        assert (row.flops, row.transcendentals, row.bytes_accessed) == figures
        assert row.figures_from == "xla-cost-analysis"
        assert row.bound == ("compute" if figures[2] == 0.0 else "memory")


def test_cost_stage_module_totals_sum_the_rows_figures(transpose):
    """The CUDA ``cost`` stage's module totals are the sums of its rows' figures: a
    transpose's 0 FLOPs and 0 transcendentals total 0, its bytes and lower bound are kept."""
    import json

    data = json.loads(transpose.stage("cost"))
    (row,) = data["fusions"]
    nbytes = 2 * 1024 * 512 * 4
    assert (data["flops"], data["transcendentals"], data["bytes accessed"]) == (0.0, 0.0, nbytes)
    assert data["lower_bound_seconds"] == pytest.approx(nbytes / H100_BW)
    assert data["rows_without_figures"] == 0.0
    assert (row["flops"], row["transcendentals"], row["bytes_accessed"]) == (0.0, 0.0, nbytes)
