"""Fixtures of the TPU tests: whether a libtpu copy is there to compile with."""

from __future__ import annotations

import pytest


def libtpu_skip_reason() -> str | None:
    """Why device-less TPU compiles cannot run here (None: they can)."""
    from mlirhlo_driver._native import libtpu

    if libtpu.in_use() is None:
        return "no libtpu installed ('mlirhlo tpu-plugin install'; .ci/run installs it)"
    return None


needs_libtpu = pytest.mark.skipif(libtpu_skip_reason() is not None, reason=libtpu_skip_reason() or "")


def static_profile_skip_reason() -> str | None:
    from mlirhlo_driver._native import libtpu

    if libtpu_skip_reason() is not None:
        return libtpu_skip_reason()
    if not libtpu.writes_static_profile():
        return f"libtpu {libtpu.in_use().version} writes no static LLO profile (0.0.42 and later do)"
    return None


# libtpu's estimated cycles per op (kernels rows, roofline, explore overlays, diff of TPU ops).
needs_static_profile = pytest.mark.skipif(static_profile_skip_reason() is not None,
                                          reason=static_profile_skip_reason() or "")
