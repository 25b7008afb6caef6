"""tpu/kernels.py: libtpu's static estimate per fusion or op, joined with the optimized module."""

from __future__ import annotations

import pytest

from mlirhlo_driver.tpu import kernels
from tests.conftest import DATA
from tests.tpu.conftest import needs_libtpu

PROFILE = """hlo_op_estimate {
  hlo_op_name: "convolution_tanh_fusion"
  estimated_cycles: 2811
  num_equivalent_hlos: 1
}
hlo_op_estimate {
  hlo_op_name: "copy.1"
  estimated_cycles: 4
}
"""


def test_profile_cycles_by_op_summed_over_files():
    assert kernels.profile_cycles([PROFILE]) == {"convolution_tanh_fusion": 2811, "copy.1": 4}
    assert kernels.profile_cycles([PROFILE, PROFILE])["copy.1"] == 8
    assert kernels.profile_cycles(["nothing here"]) == {}


@pytest.mark.parametrize(("opcode", "kind", "expected"), [
    ("fusion", "kLoop", "loop fusion"), ("fusion", "kOutput", "output fusion"),
    ("fusion", "kSomethingNew", "somethingnew fusion"), ("all-reduce", None, "all-reduce"),
    ("convolution", None, "convolution"),
])
def test_kind_of(opcode, kind, expected):
    assert kernels.kind_of(opcode, kind) == expected


def test_peaks_per_device_and_the_clock_only_where_a_spec_has_one():
    v5e = kernels.Peaks.of("v5e")
    assert v5e.clock_hz == pytest.approx(1.5e9)
    assert v5e.flops_per_s == pytest.approx(197e12) and v5e.bytes_per_s == pytest.approx(819e9)
    assert kernels.Peaks.of("v5p").clock_hz is None  # no public figure: cycles only
    assert kernels.Peaks.of("v2") == kernels.Peaks("v2", None, None, None)


def test_v5e_clock_is_derived_from_its_public_peak():
    from mlirhlo_driver.tpu import specs

    clock = specs.spec("v5e").figure("clock")
    assert "derived" in clock.source
    assert clock.value * 1e9 * 4 * 128 * 128 * 2 == pytest.approx(197e12, rel=0.01)


def test_a_row_without_a_clock_keeps_its_cycles_and_the_table_says_so():
    row = kernels._row("fusion.1", "main", "fusion", "loop fusion", None, None, 300, 1e6, 4e6,
                       kernels.Peaks.of("v5p"))
    assert (row.cycles, row.seconds, row.bound) == (300, None, "memory")
    assert kernels.TpuKernelRow.from_dict(row.to_dict()) == row
    text = kernels.table_text("m", "v5p:2x2x1", "v5p", [row])
    assert "cycles only" in text and "fusion.1" in text


@needs_libtpu
def test_rows_of_a_device_less_v5e_compile():
    import mlirhlo_driver as mh
    from mlirhlo_driver.targets import Target

    compiled = mh.load(str(DATA / "tpu" / "matmul_2048.mlir")).compile(Target.tpu("v5e:1x1"))
    rows = compiled.kernels()
    by_name = {r.name: r for r in rows}
    profile = compiled.stage("static-profile")
    for r in rows:
        if r.cycles is not None:  # the profile's names, exactly
            assert r.name in profile
    dots = [r for r in rows if r.flops and r.flops >= 2 * 2048 ** 3]
    assert dots and all(r.bound == "compute" and r.kind == "output fusion" for r in dots)
    for r in dots:  # the estimate is near the peak's time for a large bf16-pass matmul
        assert 2 * 2048 ** 3 / 197e12 < r.seconds < 10 * 2048 ** 3 / 197e12
    assert set(by_name) == {r["name"] for r in map(kernels.TpuKernelRow.to_dict, rows)}
