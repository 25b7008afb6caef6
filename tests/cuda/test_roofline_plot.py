"""mlirhlo_driver.cuda.roofline_plot: the roofline as SVG/PNG, from ``mlirhlo opt --stage
roofline --plot FILE`` and ``Compiled.plot_roofline``: the spec's ceilings, one marker per
launched kernel, the same bytes for the same compile; refused before the work where it
cannot be drawn."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import REPO

MM_ADD = REPO / "tests" / "data" / "mm_add.mlir"
PNG = b"\x89PNG\r\n\x1a\n"
SVG = "{http://www.w3.org/2000/svg}"
ROOFLINE = ("--gpu-spec", "h100_sxm", "--stage", "roofline")

matplotlib = pytest.importorskip("matplotlib", reason="needs the plot extra (matplotlib)")


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def _markers(svg: str) -> list[str]:
    return [g.get("id") for g in ET.fromstring(svg).iter(f"{SVG}g")
            if (g.get("id") or "").startswith("roofline-kernel-")]


def _texts(svg: str) -> str:
    return " ".join("".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG}text"))


@pytest.mark.slow
def test_opt_plot_draws_each_kernel_on_the_specs_roofs(cli, tmp_path):
    """mm_add on H100: the GEMM on the TF32 tensor-core roof, the tanh loop on the memory
    slope; the table on stdout as without --plot; the SVG again byte for byte."""
    svg = tmp_path / "roofline.svg"
    result = cli("opt", MM_ADD, *ROOFLINE, "--plot", svg)
    assert result.code == 0, result.err
    assert "gemm_fusion_dot_general.1" in result.out and result.err == ""
    text = svg.read_text()
    assert _markers(text) == ["roofline-kernel-0", "roofline-kernel-1"]
    labels = _texts(text)
    for label in ("gemm_fusion_dot_general.1", "jit(f)/dot_general", "loop_tanh_fusion",
                  "mm_add on h100_sxm", "tensor core F32", "CUDA core F32"):
        assert label in labels
    assert "<dc:date>" not in text
    first = svg.read_bytes()
    assert cli("opt", MM_ADD, *ROOFLINE, "--plot", svg).code == 0
    assert svg.read_bytes() == first  # deterministic: no date, fixed ids


@pytest.mark.slow
def test_plot_roofline_in_python_as_png_and_as_a_figure(tmp_path):
    import mlirhlo_driver
    from mlirhlo_driver.cuda import roofline_plot

    compiled = mlirhlo_driver.compile(str(MM_ADD), platform="cuda", gpu_spec="h100_sxm")
    png = compiled.plot_roofline(str(tmp_path / "r.png"))
    assert png.read_bytes().startswith(PNG)
    fig = compiled.plot_roofline()
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    points = roofline_plot.points(json.loads(compiled.stage("cost")))
    assert [p["name"] for p in points] == ["gemm_fusion_dot_general.1", "loop_tanh_fusion"]
    gemm, tanh = points
    # On its roof: the GEMM at the tensor-core peak, the loop at intensity x bandwidth.
    assert gemm["flops_per_s"] == pytest.approx(494.6e12, rel=1e-4)  # TF32: 2 x 256 x 4 x 132 x 1.8295 GHz
    assert tanh["flops_per_s"] == pytest.approx(tanh["intensity"] * 3.35e12)


def test_the_roofs_are_the_specs_peaks_and_kernels_without_flops_are_left_out():
    from mlirhlo_driver.cuda import roofline_plot

    def row(name, flops, nbytes, unit="cuda core", dtype="F32", rate=1e12):
        return {"name": name, "op_name": None, "flops": flops, "bytes_accessed": nbytes, "bound": "memory",
                "arithmetic_intensity": flops / nbytes if nbytes else None,
                "lower_bound_seconds": max(flops / rate, nbytes / 1e11),
                "peak": {"unit": unit, "dtype": dtype, "flops_per_s": rate}}

    cost = {"module": "m", "gpu_spec": {"name": "s", "gpu": "G", "sm": "sm_90"},
            "peaks": {"fp32": {"unit": "cuda core", "dtype": "F32", "flops_per_s": 1e12},
                      "tensor_core": {"BF16": 8e12}, "memory_bandwidth_bytes_per_s": 1e11},
            "fusions": [row("a", 1e6, 1e6), row("copy", 0.0, 1e6), row("h", 1e9, 1e6, dtype="F16", rate=2e12)]}
    assert roofline_plot.ceilings(cost) == [("CUDA core F32", 1e12), ("CUDA core F16", 2e12),
                                            ("tensor core BF16", 8e12)]
    assert [p["name"] for p in roofline_plot.points(cost)] == ["a", "h"]


def test_plot_is_refused_before_the_work_where_there_is_no_roofline(cli, tmp_path):
    svg = str(tmp_path / "r.svg")
    for args, says in (
        ((MM_ADD, "--plot", svg), "--plot draws the roofline on a GPU spec"),
        ((MM_ADD, "--gpu-spec", "h100_sxm", "--stage", "kernels", "--plot", svg), "give --stage roofline"),
        ((MM_ADD, MM_ADD, *ROOFLINE, "--dump-dir", tmp_path, "--plot", svg), "give one module and one GPU"),
        ((MM_ADD, *ROOFLINE, "--plot", tmp_path / "r.pdf"), "must end in .svg or .png"),
    ):
        result = cli("opt", *args)
        assert result.code == 2 and result.out == "", result.err
        assert result.err.startswith("error: ") and says in result.err and "Traceback" not in result.err
    assert not list(tmp_path.glob("r.*"))


@pytest.mark.golden
def test_without_matplotlib_plot_says_which_extra(cli, tmp_path, monkeypatch):
    """The one line, exit 2, before any compile (matplotlib hidden: import fails)."""
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    result = cli("opt", MM_ADD, *ROOFLINE, "--plot", tmp_path / "r.svg")
    assert (result.code, result.out) == (2, "")
    assert result.err == "error: --plot: needs matplotlib (pip install 'mlirhlo-driver[plot]')\n"


def test_mlirhlo_help_does_not_import_matplotlib():
    import subprocess
    import sys

    code = "import sys; from mlirhlo_driver.cli.mlirhlo import main\ntry: main(['opt', '--help'])\n" \
           "except SystemExit: pass\nassert 'matplotlib' not in sys.modules, 'imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert re.search(r"--plot FILE", done.stdout)


def test_plot_roofline_on_cpu_is_refused_without_compiling(tmp_path):
    import mlirhlo_driver as mh

    compiled = mh.compile(str(MM_ADD), platform="cpu")
    with pytest.raises(mh.DriverError, match="plot_roofline: the roofline is drawn on a GPU spec or a TPU, not for cpu"):
        compiled.plot_roofline(str(tmp_path / "r.svg"))
    assert not (tmp_path / "r.svg").exists()
