"""The roofline, for any platform: what CUDA's cost rows (cuda/roofline.py ``CostRow``) and
TPU's kernel rows (tpu/kernels.py ``TpuKernelRow``) share.

A row of either kind satisfies :class:`RooflineRow`: a launched instruction's ``name``,
``flops`` and ``bytes_accessed`` (None where XLA's analysis cannot count it), its
arithmetic ``intensity``, its ``bound`` on the target's peaks and its lower-bound
``roofline_seconds``. The verdict is the same on both: intensity against the ridge point
(peak FLOP/s / memory bandwidth), ``compute`` at or above it, ``memory`` below; the time
is max(flops / peak, bytes / bandwidth); attainable FLOP/s is min(peak, intensity x
bandwidth). What reads rows of either kind (Model Explorer's overlays, the plot's points:
cuda/roofline_plot.py) reads them through this module. Pure Python: no jax.
"""

from __future__ import annotations

from typing import Any, Protocol


class RooflineRow(Protocol):
    """A launched fusion or op with its figures on a target's peaks."""

    name: str
    op_name: str | None
    flops: float | None
    bytes_accessed: float | None

    @property
    def intensity(self) -> float | None: ...

    @property
    def bound(self) -> str | None: ...

    @property
    def roofline_seconds(self) -> float | None: ...


def intensity(flops: float | None, nbytes: float | None) -> float | None:
    """FLOP per byte; None without figures or bytes."""
    if flops is None or not nbytes:
        return None
    return flops / nbytes


def bound(flops: float | None, nbytes: float | None, ridge: float) -> str | None:
    """``compute`` at or above the ridge point (FLOP/B), ``memory`` below; None without
    figures or with neither FLOPs nor bytes."""
    if flops is None or nbytes is None or (flops == 0 and nbytes == 0):
        return None
    if not nbytes:
        return "compute"
    return "compute" if flops / nbytes >= ridge else "memory"


def seconds(flops: float | None, nbytes: float | None, peak: float, bandwidth: float) -> float | None:
    """The lower-bound time: max(flops / peak, bytes / bandwidth)."""
    if flops is None or nbytes is None:
        return None
    return max(flops / peak, nbytes / bandwidth)


def attainable(ai: float, peak: float, bandwidth: float) -> float:
    """FLOP/s at arithmetic intensity ``ai`` under the roof: min(peak, ai x bandwidth)."""
    return min(peak, ai * bandwidth)


def overlay_rows(rows: list[Any]) -> list[dict[str, Any]]:
    """Model Explorer's roofline figures of rows of either kind (ir/model_explorer.py
    ``figure_overlays``): ``name``, ``bound``, ``lower_bound_seconds``."""
    return [{"name": r.name, "bound": r.bound, "lower_bound_seconds": r.roofline_seconds} for r in rows]
