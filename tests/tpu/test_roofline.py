"""tpu/roofline.py: the roofline of a TPU compile, on the generation's peaks, beside libtpu's
estimate; drawn by the CUDA plot's code."""

from __future__ import annotations

import pytest

from mlirhlo_driver.tpu import kernels, roofline
from tests.conftest import DATA
from tests.tpu.conftest import needs_libtpu


def _rows() -> list[kernels.TpuKernelRow]:
    v5e = kernels.Peaks.of("v5e")
    return [kernels._row("dot_fusion", "main", "fusion", "output fusion", "jit(f)/dot", "f.py:3", 150_000,
                         2 * 2048.0 ** 3, 3 * 2048 * 2048 * 2.0, v5e),
            kernels._row("copy.1", "main", "copy", "copy", None, None, 40, 0.0, 1e6, v5e),
            kernels._row("custom-call.2", "main", "custom-call", "custom-call", None, None, None, None, None, v5e)]


def test_the_data_holds_the_ridge_attainable_rate_and_both_times():
    data = roofline.to_json_data("m", "v5e:1x1", "v5e", _rows())
    dot, copy, custom = data["fusions"]
    assert dot["ridge_flops_per_byte"] == pytest.approx(197e12 / 819e9)
    assert dot["bound"] == "compute" and dot["attainable_flops_per_s"] == pytest.approx(197e12)
    assert dot["estimated_seconds"] == pytest.approx(150_000 / 1.5e9)
    assert copy["bound"] == "memory" and copy["arithmetic_intensity"] == 0.0
    assert custom["bound"] is None and data["rows_without_figures"] == 1
    assert data["estimated_cycles"] == 150_040
    assert data["peaks"]["ceilings"] == [{"name": "MXU BF16", "flops_per_s": pytest.approx(197e12)}]


def test_the_table_says_the_peaks_and_each_rows_estimate_over_its_roofline():
    text = roofline.table_text("m", "v5e:1x1", "v5e", _rows())
    assert "ridge 240.5 FLOP/B" in text and "tpu_specs/v5e.toml" in text
    line = next(x for x in text.splitlines() if x.startswith("dot_fusion"))
    assert "compute" in line and "jit(f)/dot @ f.py:3" in line and "x " in line
    assert "1 op(s) without figures" in text


def test_a_generation_without_peaks_has_no_verdict_and_no_picture():
    from mlirhlo_driver.cuda import roofline_plot
    from mlirhlo_driver.errors import DriverError

    row = kernels._row("f", "main", "fusion", "loop fusion", None, None, 10, 1.0, 1.0, kernels.Peaks.of("v2"))
    assert row.bound is None
    assert "no bf16 peak" in roofline.table_text("m", "v2:2x2x1", "v2", [row])
    with pytest.raises(DriverError, match="no peak FLOP/s"):
        roofline_plot.check_drawable(roofline.to_json_data("m", "v2:2x2x1", "v2", [row]))


def test_the_cuda_plot_draws_the_tpu_object():
    pytest.importorskip("matplotlib")
    from mlirhlo_driver.cuda import roofline_plot

    data = roofline.to_json_data("m", "v5e:1x1", "v5e", _rows())
    assert roofline_plot.ceilings(data) == [("MXU BF16", pytest.approx(197e12))]
    points = roofline_plot.points(data)
    assert [p["name"] for p in points] == ["dot_fusion"]  # a copy has no FLOPs: no place on a log scale
    assert points[0]["estimated_flops_per_s"] == pytest.approx(2 * 2048 ** 3 / (150_000 / 1.5e9))
    assert "v5e:1x1" in roofline_plot.figure(data).axes[0].get_title()


@needs_libtpu
@pytest.mark.slow
def test_roofline_stage_and_plot_of_a_device_less_v5e_compile(cli, tmp_path):
    pytest.importorskip("matplotlib")
    svg = tmp_path / "roof.svg"
    r = cli("opt", DATA / "tpu" / "matmul_tanh.mlir", "--platform", "tpu", "--tpu-topology", "v5e:1x1",
            "--stage", "roofline", "--plot", svg)
    assert r.code == 0, r.err
    assert "convolution_tanh_fusion" in r.out and "ridge 240.5 FLOP/B" in r.out and "libtpu's estimate" in r.out
    text = svg.read_text()
    assert "roofline-kernel-0" in text and "roofline-estimate-0" in text and "MXU BF16" in text


@needs_libtpu
def test_plot_roofline_in_python(tmp_path):
    pytest.importorskip("matplotlib")
    import mlirhlo_driver as mh
    from mlirhlo_driver.targets import Target

    compiled = mh.load(str(DATA / "tpu" / "matmul_tanh.mlir")).compile(Target.tpu("v5e:1x1"))
    assert compiled.plot_roofline(str(tmp_path / "r.png")).stat().st_size > 0
