"""Elapsed time as the driver reports it, in milliseconds: one conversion for every
compile, run and pass time printed, so a slip in it shows in one test, not in many."""

from __future__ import annotations

from time import perf_counter

__all__ = ["ms", "ms_from_us", "ms_since", "perf_counter", "us", "us_from_ns"]


def ms(seconds: float) -> float:
    """``seconds`` in milliseconds."""
    return seconds * 1000.0


def ms_from_us(us: float) -> float:
    """Microseconds (XLA's pass log) in milliseconds."""
    return us / 1000.0


def us(seconds: float) -> float:
    """``seconds`` in microseconds (an op's time on a TPU)."""
    return seconds * 1e6


def us_from_ns(ns: float) -> float:
    """Nanoseconds (a profile's event durations) in microseconds."""
    return ns / 1000.0


def ms_since(t0: float) -> float:
    """Milliseconds from ``t0``, a :func:`time.perf_counter` reading, until now."""
    return ms(perf_counter() - t0)
