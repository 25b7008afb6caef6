"""mlirhlo_driver/roofline.py: the verdict and times CUDA's and TPU's rows share."""

from __future__ import annotations

import pytest

from mlirhlo_driver import roofline


@pytest.mark.parametrize(("flops", "nbytes", "expected"), [
    (100.0, 10.0, "compute"),   # 10 FLOP/B, at the ridge: compute
    (99.0, 10.0, "memory"),
    (5.0, 0.0, "compute"),      # no bytes: nothing to wait for
    (0.0, 0.0, None), (None, 10.0, None), (10.0, None, None),
])
def test_bound_against_the_ridge(flops, nbytes, expected):
    assert roofline.bound(flops, nbytes, ridge=10.0) == expected


def test_times_intensity_and_attainable():
    assert roofline.seconds(2e12, 1e9, peak=1e12, bandwidth=1e9) == 2.0
    assert roofline.seconds(1e12, 4e9, peak=1e12, bandwidth=1e9) == 4.0
    assert roofline.seconds(None, 1.0, 1.0, 1.0) is None
    assert roofline.intensity(10.0, 4.0) == 2.5 and roofline.intensity(10.0, 0.0) is None
    assert roofline.attainable(2.0, peak=10.0, bandwidth=3.0) == 6.0
    assert roofline.attainable(20.0, peak=10.0, bandwidth=3.0) == 10.0


def test_cuda_and_tpu_rows_are_both_roofline_rows():
    from mlirhlo_driver.cuda.roofline import CostRow, Peak
    from mlirhlo_driver.tpu import kernels

    cuda = CostRow("f", "k", "main", "fusion", "kLoop", None, None, 2e6, 0.0, 1e6, "xla-cost-analysis",
                   Peak("cuda core", "F32", 1e12, ""), None, 1e9)
    tpu = kernels._row("fusion.1", "main", "fusion", "loop fusion", None, None, 300, 2e6, 1e6,
                       kernels.Peaks.of("v5e"))
    for row in (cuda, tpu):
        assert row.intensity == 2.0 and row.bound == "memory"
        assert row.roofline_seconds == pytest.approx(1e-3 if row is cuda else 1e6 / 819e9)
    assert roofline.overlay_rows([tpu]) == [{"name": "fusion.1", "bound": "memory",
                                             "lower_bound_seconds": tpu.roofline_seconds}]
