"""mlirhlo_driver.cuda.roofline: which launches get figures from XLA's cost analysis.

One device-less CUDA compile of a transpose (a kernel that moves data and does no
arithmetic); XLA's analysis is replaced where a test needs figures it does not give
for any real module.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


TRANSPOSE = """\
func.func @main(%a: tensor<1024x512xf32>) -> tensor<512x1024xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<1024x512xf32>) -> tensor<512x1024xf32> loc("jit(f)/transpose"("model.py":3:8))
  return %0 : tensor<512x1024xf32>
}
"""

H100_BW = 3.35e12


@pytest.fixture(scope="module")
def transpose(tmp_path_factory):
    import mlirhlo_driver

    path = tmp_path_factory.mktemp("roofline") / "transpose.mlir"
    path.write_text(TRANSPOSE)
    return mlirhlo_driver.compile(str(path), platform="cuda", gpu_spec="h100_sxm")


# A made-up spec: FP32, F16, F64 and PRED CUDA-core rates, F16, BF16 and an unknown type's (99)
# tensor-core rates, 1 TB/s. Clocks that a float32 does not hold exactly (1.98).
SPEC = """\
gpu_device_info {
  core_count: 10
  fpus_per_core: 64
  clock_rate_ghz: 1.5
  memory_bandwidth: 1000000000000
  scalar_unit_description {
    rate_infos { key: 11 value { clock_rate_ghz: 1.98 units_per_core: 128 ops_per_clock: 1 } }
    rate_infos { key: 10 value { clock_rate_ghz: 1.98 units_per_core: 128 ops_per_clock: 2 } }
    rate_infos { key: 12 value { clock_rate_ghz: 1.98 units_per_core: 64 ops_per_clock: 1 } }
    rate_infos { key: 1 value { clock_rate_ghz: 1 units_per_core: 1 ops_per_clock: 1 } }
  }
  matrix_unit_description {
    rate_infos { key: 16 value { clock_rate_ghz: 2.5 units_per_core: 4 ops_per_clock: 512 } }
    rate_infos { key: 10 value { clock_rate_ghz: 2 units_per_core: 4 ops_per_clock: 256 } }
    rate_infos { key: 99 value { clock_rate_ghz: 1 units_per_core: 1 ops_per_clock: 1 } }
  }
}
"""

# One without unit descriptions (before Hopper): FP32 from fpus_per_core.
OLD_SPEC = """\
gpu_device_info {
  core_count: 10
  fpus_per_core: 64
  clock_rate_ghz: 1.41
  memory_bandwidth: 2000000000000
}
"""

F16, F32, BF16, S8, F64 = 10, 11, 16, 2, 12


def _spec(text, name="fake"):
    from types import SimpleNamespace

    return SimpleNamespace(text=text, path=f"{name}.txtpb", name=name, gpu="Fake GPU", sm="sm_90a")


def _row(flops, nbytes, trans=0.0, *, peak=1e12, bandwidth=1e11, name="r", note=None, unit="cuda core",
         op_name=None, source=None, kind="kLoop", figures_from=None):
    from mlirhlo_driver.cuda.roofline import CostRow, Peak

    if figures_from is None:
        figures_from = "xla-cost-analysis" if flops is not None else "none: test"
    return CostRow(name, name.replace(".", "_"), "main", "fusion", kind, op_name, source, flops, trans, nbytes,
                   figures_from, Peak(unit, "F32", peak, "test"), note, bandwidth)


def _table_rows():
    return [
        _row(2e9, 1e6, 5.0, peak=1.024e14, bandwidth=1e12, name="gemm_fusion.1", unit="tensor core", kind="kCustom",
             op_name="jit(f)/dot", source="m.py:3:8"),
        _row(1e6, 1.2e7, peak=5.0688e12, bandwidth=1e12, name="loop_add", note="spec has no tensor-core rate for F32",
             source="m.py:5"),
        _row(None, None, None, name="cc", kind=None, note="spec has no tensor-core rate for F32",
             figures_from="none: XLA's analysis cannot count custom call my_kernel"),
        _row(1.0, None, name="x", note="spec has no tensor-core rates"),
    ]


ROOFLINE_TABLE = """\
mod on fake (sm_90a): FP32 5.07TFLOP/s, memory 1TB/s, ridge 5.1 FLOP/B

 fusion          kind      FLOPs   bytes    FLOP/B   peak FLOP/s        bound     time ≥ µs   figures                                                   op_name @ source
 ────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────
 gemm_fusion.1   kCustom      2G      1M   2000.00   TC F32 102T        compute       19.53   xla-cost-analysis                                         jit(f)/dot @ m.py:3:8
 loop_add        kLoop        1M     12M      0.08   CUDA F32 5.07T *   memory           12   xla-cost-analysis                                         m.py:5
 cc              fusion        -       -         -   CUDA F32 1T *      -                 -   none: XLA's analysis cannot count custom call my_kernel   -
 x               kLoop         1       -         -   CUDA F32 1T *      -                 -   xla-cost-analysis                                         -

total: 2G FLOPs, 5 transcendentals, 13MB accessed, time ≥ 31.53 µs (kernels one after another, each launch once)
2 launch(es) without figures, left out of the total
* spec has no tensor-core rate for F32: CUDA-core rate used
* spec has no tensor-core rates: CUDA-core rate used
"""

ROWS_HLO = """
HloModule rows

ENTRY main {
  h = f16[2,3]{1,0} parameter(0)
  g = f16[3,4]{1,0} parameter(1)
  a = f32[4]{0} parameter(2)
  gemm = (f16[2,4]{1,0}, s8[64]{0}) custom-call(h, g), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"]}}}
  gte = f16[2,4]{1,0} get-tuple-element(gemm), index=0
  other = f16[2,4]{1,0} custom-call(h, g), custom_call_target="my_kernel"
  add = f32[4]{0} add(a, a), metadata={op_name="jit(f)/add" source_file="m.py" source_line=2}
  ROOT t = (f16[2,4]{1,0}, f16[2,4]{1,0}, f32[4]{0}) tuple(gte, other, add)
}
"""


def test_fp32_peak_without_scalar_rates_is_the_fpus_formula():
    """Specs before Hopper have no scalar/matrix unit descriptions: FP32 is 2 x
    fpus_per_core x SMs x clock, and a dot is held to it, with a note."""
    from mlirhlo_driver.cuda import roofline, specs

    p = roofline.peaks(specs.resolve_spec("a100_sxm_80"))
    assert p.fp32.flops_per_s == pytest.approx(2 * 64 * 108 * 1.41e9)   # 19.5 TFLOP/s
    assert p.bandwidth == 2.039e12 and not p.matrix
    peak, note = p.for_row(True, 11, 11)
    assert peak is p.fp32 and "tensor-core rates" in note


def test_roofline_totals_sum_the_rows_with_figures_and_count_the_others():
    """Each launch with figures adds its flops, bytes and lower bound once; a launch without
    figures (a custom call XLA cannot count) adds nothing and is counted apart."""
    from mlirhlo_driver.cuda.roofline import CostRow, Peak, totals

    peak = Peak("cuda core", "F32", 1e12, "test")

    def row(name, flops, nbytes, trans=0.0):
        return CostRow(name, name, "main", "fusion", None, None, None, flops, trans, nbytes,
                       "xla-cost-analysis" if flops is not None else "none: test", peak, None, 1e9)

    rows = [row("a", 2e12, 1e9, 5.0), row("b", 1e6, 3e9), row("c", None, None), row("d", None, 4e9)]
    assert totals(rows) == {"flops": 2e12 + 1e6, "transcendentals": 5.0, "bytes accessed": 4e9,
                            "lower_bound_seconds": 2.0 + 3.0, "rows_without_figures": 2.0}
    assert totals([])["rows_without_figures"] == 0.0


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

    proto = xla_stages._optimized_proto(transpose._stage_request)
    monkeypatch.setattr(_jaxlib, "hlo_cost_analysis", lambda protos: [dict(xla) for _ in protos[:-1]] + [{}])
    (row,), _ = roofline.cost_rows(proto, transpose._stage_request.options.gpu_spec)
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


def test_peaks_from_the_specs_unit_descriptions_exactly():
    """Each rate is 2 x ops/clock x units x SMs x GHz, named by its fields with the spec's
    decimal clock; FP32 is the scalar F32 rate where the spec has one."""
    from mlirhlo_driver.cuda import roofline

    p = roofline.peaks(_spec(SPEC))
    fp32 = roofline.Peak("cuda core", "F32", 2 * 1 * 128 * 10 * 1.98e9,
                         "scalar_unit_description[F32]: 2 x 1 ops/clock x 128 units x 10 SMs x 1.98 GHz")
    assert p.fp32 == fp32 and p.scalar[F32] == fp32 and p.bandwidth == 1e12
    assert p.scalar[F16] == roofline.Peak(
        "cuda core", "F16", 2 * 2 * 128 * 10 * 1.98e9,
        "scalar_unit_description[F16]: 2 x 2 ops/clock x 128 units x 10 SMs x 1.98 GHz")
    assert p.matrix[BF16] == roofline.Peak(
        "tensor core", "BF16", 2 * 512 * 4 * 10 * 2.5e9,
        "matrix_unit_description[BF16]: 2 x 512 ops/clock x 4 units x 10 SMs x 2.5 GHz")
    assert p.matrix[99] == roofline.Peak(
        "tensor core", "99", 2 * 10 * 1e9, "matrix_unit_description[99]: 2 x 1 ops/clock x 1 units x 10 SMs x 1.0 GHz")
    assert p.to_dict() == {
        "fp32": {"unit": "cuda core", "dtype": "F32", "flops_per_s": 2 * 128 * 10 * 1.98e9, "from": fp32.derived_from},
        "tensor_core": {"F16": 2 * 256 * 4 * 10 * 2e9, "BF16": 2 * 512 * 4 * 10 * 2.5e9, "99": 2e10},
        "memory_bandwidth_bytes_per_s": 1e12}
    assert list(p.to_dict()["tensor_core"]) == ["F16", "BF16", "99"]


def test_peaks_without_unit_descriptions_use_the_fpus_formula():
    """Without unit descriptions FP32 is 2 x fpus_per_core x SMs x GHz and there are no other rates."""
    from mlirhlo_driver.cuda import roofline

    p = roofline.peaks(_spec(OLD_SPEC, "old"))
    assert p.fp32 == roofline.Peak("cuda core", "F32", 2 * 64 * 10 * 1.41e9,
                                   "2 x 64 fpus_per_core x 10 SMs x 1.41 GHz")
    assert (p.scalar, p.matrix, p.bandwidth) == ({}, {}, 2e12)
    assert p.to_dict()["tensor_core"] == {}


@pytest.mark.golden
def test_the_peak_a_row_is_held_to_and_its_fallback_note():
    """A dot: the tensor-core rate of its type, else its CUDA-core rate (else FP32) with a
    note; any other row: the CUDA-core rate of its result type, else FP32, no note. A row of
    unknown type (None) is held to FP32, not to any other rate the spec has. (The notes'
    golden test.)"""
    from mlirhlo_driver.cuda import roofline

    p = roofline.peaks(_spec(SPEC))
    assert p.for_row(True, F16, F32) == (p.matrix[F16], None)
    assert p.for_row(True, BF16, None) == (p.matrix[BF16], None)
    assert p.for_row(True, F32, BF16) == (p.scalar[F32], "spec has no tensor-core rate for F32")
    assert p.for_row(True, F64, F16) == (p.scalar[F64], "spec has no tensor-core rate for F64")
    assert p.scalar[F64].flops_per_s == 2 * 64 * 10 * 1.98e9
    assert p.for_row(True, S8, F16) == (p.fp32, "spec has no tensor-core rate for S8")
    assert p.for_row(True, 77, F16) == (p.fp32, "spec has no tensor-core rate for 77")
    assert p.for_row(True, None, F16) == (p.fp32, "spec has no tensor-core rate for None")
    assert p.for_row(False, F16, F16) == (p.scalar[F16], None)
    assert p.for_row(False, BF16, S8) == (p.fp32, None)
    assert p.for_row(False, None, None) == (p.fp32, None)
    old = roofline.peaks(_spec(OLD_SPEC, "old"))
    assert old.for_row(True, F16, F16) == (old.fp32, "spec has no tensor-core rates")
    assert old.for_row(False, None, F16) == (old.fp32, None)


def test_cost_row_intensity_ridge_bound_and_lower_bound_time():
    """Intensity is flops / bytes (none without bytes); compute bound at or above the ridge
    (peak / bandwidth), memory below; no verdict without figures or with nothing to do; the
    time is the larger of flops / peak and bytes / bandwidth."""
    r = _row(40.0, 4.0)  # ridge 10 FLOP/B
    assert (r.intensity, r.ridge, r.bound, r.seconds) == (10.0, 10.0, "compute", 4e-11)
    r = _row(39.0, 4.0)
    assert (r.intensity, r.bound, r.seconds) == (9.75, "memory", 4e-11)
    r = _row(4e12, 1e9)
    assert (r.bound, r.seconds) == ("compute", 4.0)
    r = _row(0.0, 64.0)
    assert (r.intensity, r.bound) == (0.0, "memory")
    r = _row(8.0, 0.0)
    assert (r.intensity, r.bound, r.seconds) == (None, "compute", 8e-12)
    r = _row(0.0, 0.0)
    assert (r.intensity, r.bound, r.seconds) == (None, None, 0.0)
    r = _row(None, 64.0)
    assert (r.intensity, r.bound, r.seconds) == (None, None, None)
    r = _row(8.0, None)
    assert (r.intensity, r.bound, r.seconds) == (None, None, None)


def test_cost_row_dict_exactly():
    """A row's JSON object: its fields, peak, verdict and lower bound under their names."""
    r = _row(40.0, 4.0, 2.0, name="f.1", note="n", op_name="jit(f)/add", source="m.py:1")
    assert r.kernel == "f_1"
    assert r.to_dict() == {
        "name": "f.1", "kernel": "f_1", "computation": "main", "opcode": "fusion", "kind": "kLoop",
        "op_name": "jit(f)/add", "source": "m.py:1", "flops": 40.0, "transcendentals": 2.0, "bytes_accessed": 4.0,
        "figures_from": "xla-cost-analysis", "arithmetic_intensity": 10.0,
        "peak": {"unit": "cuda core", "dtype": "F32", "flops_per_s": 1e12, "from": "test"}, "peak_note": "n",
        "ridge_flops_per_byte": 10.0, "bound": "compute", "lower_bound_seconds": 4e-11}


@pytest.mark.parametrize("x, unit, text", [
    (None, "", "-"), (0.0, "", "0"), (12.345, "", "12.3"), (999.0, "", "999"), (1000.0, "", "1k"),
    (-2e6, "", "-2M"), (999e6, "B", "999MB"), (1.5e9, "", "1.5G"), (2e12, "FLOP/s", "2TFLOP/s"),
    (3e15, "", "3P"), (4e18, "", "4e+03P"), (-999.0, "", "-999"), (-1000.0, "B", "-1kB"),
    (1e6, "", "1M"), (1e9, "", "1G"), (1e12, "", "1T"), (1e15, "", "1P"),
])
def test_si_prefixes(x, unit, text):
    """Figures are written to 3 significant digits with the largest SI prefix they reach (P at most)."""
    from mlirhlo_driver.cuda import roofline

    assert roofline._si(x, unit) == text


def test_microseconds_peak_and_where_texts():
    """Times in µs to 4 digits; a peak as its unit, type and rate; where as op_name @ source."""
    from mlirhlo_driver.cuda import roofline
    from mlirhlo_driver.cuda.roofline import Peak

    assert roofline._us(None) == "-" and roofline._us(4.3421e-6) == "4.342" and roofline._us(1.23456e-3) == "1235"
    assert roofline._us(1.2344999e-6) == "1.234" and roofline._us(0.0) == "0"
    assert roofline._peak_text(Peak("tensor core", "BF16", 1.024e14, "")) == "TC BF16 102T"
    assert roofline._peak_text(Peak("cuda core", "F32", 5.0688e12, "")) == "CUDA F32 5.07T"
    assert roofline._where("a", "m.py:1") == "a @ m.py:1"
    assert roofline._where("a", None) == "a" and roofline._where(None, "m.py:1") == "m.py:1"
    assert roofline._where(None, None) == "-" and roofline._where("", "") == "-"


def test_roofline_table_text_exactly():
    """The ``roofline`` table: a title with the spec's FP32 peak, bandwidth and ridge, a row
    per launch (``*`` where the peak is a fallback), totals, the launches left out, the notes."""
    from mlirhlo_driver.cuda import roofline

    assert roofline.table_text("mod", _spec(SPEC), _table_rows()) == ROOFLINE_TABLE
    two = roofline.table_text("mod", _spec(SPEC), _table_rows()[:1])
    assert two.splitlines()[-1] == ("total: 2G FLOPs, 5 transcendentals, 1MB accessed, time ≥ 19.53 µs "
                                    "(kernels one after another, each launch once)")


def test_cost_stage_object_exactly():
    """The ``cost`` object: the rows' totals (a row of zeros adds zero), the module and spec
    names, the spec's peaks, XLA's whole-module analysis as given, and each row's object."""
    from mlirhlo_driver.cuda import roofline

    spec = _spec(SPEC)
    rows = [*_table_rows(), _row(0.0, 0.0, 0.0, name="nothing")]  # figures of 0 add 0
    assert roofline.to_json_data("mod", spec, rows, "err") == {
        "flops": 2e9 + 1e6, "transcendentals": 5.0, "bytes accessed": 1e6 + 1.2e7,
        "lower_bound_seconds": 2e9 / 1.024e14 + 1.2e7 / 1e12, "rows_without_figures": 2.0,
        "module": "mod", "gpu_spec": {"name": "fake", "gpu": "Fake GPU", "sm": "sm_90a"},
        "peaks": roofline.peaks(spec).to_dict(), "xla_module_cost_analysis": "err",
        "fusions": [r.to_dict() for r in rows]}


def test_cost_rows_figures_from_xla_a_gemms_hlo_or_none():
    """An op XLA counts keeps XLA's figures; a cuBLAS GEMM is counted from its HLO and held to
    the tensor-core rate of its type; another custom call has none and says so; XLA's
    analysis of the whole module comes back as is."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import roofline

    proto = _jaxlib.hlo_text_to_proto(ROWS_HLO)
    p = roofline.peaks(_spec(SPEC))
    rows, module = roofline.cost_rows(proto, _spec(SPEC))
    assert [(r.name, r.opcode, r.op_name, r.source) for r in rows] == [
        ("gemm", "custom-call", None, None), ("other", "custom-call", None, None), ("add", "add", "jit(f)/add", "m.py:2")]
    assert [(r.flops, r.transcendentals, r.bytes_accessed, r.figures_from, r.peak, r.peak_note) for r in rows] == [
        (2.0 * 8 * 3, 0.0, 12.0 + 24.0 + 16.0, "hlo-gemm", p.matrix[F16], None),
        (None, None, None, "none: XLA's analysis cannot count custom call my_kernel", p.scalar[F16], None),
        (4.0, 0.0, 48.0, "xla-cost-analysis", p.fp32, None)]
    assert all(r.bandwidth == 1e12 for r in rows)
    assert module == _jaxlib.hlo_cost_analysis([proto])[0]


def test_cost_rows_without_xlas_figures_name_why(monkeypatch):
    """A launch XLA's analysis refused names XLA's message; one it was not asked about (not
    isolated) is ``unknown``; a GEMM is still counted from its HLO."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import roofline
    from mlirhlo_driver.ir import fusions

    proto = _jaxlib.hlo_text_to_proto(ROWS_HLO)
    monkeypatch.setattr(_jaxlib, "hlo_cost_analysis", lambda protos: ["boom"] * (len(protos) - 1) + [{"flops": 1.0}])
    rows, module = roofline.cost_rows(proto, _spec(SPEC))
    assert module == {"flops": 1.0}
    assert [(r.figures_from, r.flops) for r in rows] == [
        ("hlo-gemm", 48.0), ("none: XLA's analysis cannot count custom call my_kernel", None), ("none: boom", None)]
    real = fusions.isolate
    monkeypatch.setattr(fusions, "isolate", lambda proto, names: {n: b for n, b in real(proto, names).items() if n != "add"})
    rows, _ = roofline.cost_rows(proto, _spec(SPEC))
    assert [r.figures_from for r in rows] == [
        "hlo-gemm", "none: XLA's analysis cannot count custom call my_kernel", "none: unknown"]
