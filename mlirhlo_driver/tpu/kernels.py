"""``mlirhlo kernels --platform tpu``: one row per fusion or top-level HLO op of a device-less
TPU compile, with libtpu's estimate of its cycles (the static LLO profile), that time at the
chip's clock where the generation's spec has one (tpu_specs/), XLA's cost analysis of the
op alone (FLOPs, bytes) and the roofline verdict on the spec's peaks.

Rows carry the optimized HLO's instruction names exactly as the static profile and the
chip's profiler ("XLA Ops") name them, so they join with on-chip times (tpu/profile.py).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

# Launched ops that carry no work of their own worth a row unless libtpu estimated them.
_ALWAYS = frozenset({"fusion", "convolution", "dot", "custom-call", "all-reduce", "all-gather", "all-to-all",
                     "reduce-scatter", "collective-permute", "all-reduce-start", "all-gather-start",
                     "collective-permute-start", "sort", "scatter", "gather", "reduce", "reduce-window",
                     "select-and-scatter", "fft", "rng", "triangular-solve", "cholesky"})
_FUSION_KINDS = {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion",
                 "kCustom": "custom fusion"}

_ESTIMATE = re.compile(r"hlo_op_estimate \{(.*?)\n\}", re.S)


def profile_cycles(texts: list[str]) -> dict[str, int]:
    """HLO op name -> libtpu's estimated cycles, from the static LLO profile textprotos
    (``hlo_op_estimate { hlo_op_name: ... estimated_cycles: ... }``); an op named in several
    files (one per compiled program) is summed."""
    out: dict[str, int] = {}
    for text in texts:
        for block in _ESTIMATE.findall(text):
            name = re.search(r'hlo_op_name: "([^"]*)"', block)
            cycles = re.search(r"estimated_cycles: (\d+)", block)
            if name and cycles:
                out[name.group(1)] = out.get(name.group(1), 0) + int(cycles.group(1))
    return out


def kind_of(opcode: str, fusion_kind: str | None) -> str:
    """``loop fusion``, ``output fusion`` ... for a fusion; else the opcode (``convolution``)."""
    if opcode == "fusion":
        return _FUSION_KINDS.get(fusion_kind or "", f"{(fusion_kind or 'k').removeprefix('k').lower()} fusion")
    return opcode


@dataclass(frozen=True)
class Peaks:
    """A device's peaks from its generation's spec (None: the spec has no such figure)."""

    generation: str
    flops_per_s: float | None   # bf16 MXU peak
    bytes_per_s: float | None   # HBM bandwidth
    clock_hz: float | None

    @classmethod
    def of(cls, generation: str) -> Peaks:
        from . import specs
        from .topologies import DEVICES_PER_CHIP

        spec = specs.spec(generation)
        share = DEVICES_PER_CHIP.get(generation, 1)

        def scaled(name: str, units: dict[str, float], per_device: bool = True) -> float | None:
            f = spec.figure(name) if spec is not None else None
            if f is None or f.unit not in units:
                return None
            return f.value * units[f.unit] / (share if per_device else 1)

        return cls(generation, scaled("peak_bf16", {"TFLOP/s": 1e12}), scaled("hbm_bandwidth", {"GB/s": 1e9}),
                   scaled("clock", {"GHz": 1e9, "MHz": 1e6}, per_device=False))


@dataclass(frozen=True)
class TpuKernelRow:
    """One fusion or top-level op of the optimized TPU module."""

    name: str                      # the HLO instruction, as the static profile and the profiler name it
    computation: str               # the computation it is in (the entry, a while body ...)
    opcode: str
    kind: str                      # "loop fusion", "convolution", "all-reduce" ...
    op_name: str | None            # jax's op name from the metadata
    source: str | None             # file:line
    cycles: int | None             # libtpu's static estimate; None: not in the profile
    seconds: float | None          # cycles at the generation's clock; None without one
    flops: float | None            # XLA's cost analysis of the op alone
    bytes_accessed: float | None
    bound: str | None              # "compute" / "memory" on the spec's peaks; None without figures
    roofline_seconds: float | None  # max(flops / peak, bytes / bandwidth)

    @property
    def intensity(self) -> float | None:
        """FLOP per byte (roofline.RooflineRow)."""
        from .. import roofline

        return roofline.intensity(self.flops, self.bytes_accessed)

    @property
    def micros(self) -> float | None:
        return self.seconds * 1e6 if self.seconds is not None else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TpuKernelRow:
        return cls(**{f.name: d.get(f.name) for f in fields(cls)})


def rows(proto: bytes, cycles: dict[str, int], generation: str) -> list[TpuKernelRow]:
    """The rows of an optimized TPU module (HloModuleProto bytes): every launched op that
    libtpu estimated, and every fusion, dot/convolution, collective or custom call it did not
    (cycles None), in program order; the static profile's ops not found in the module last."""
    from .._native import jaxlib as _jaxlib
    from ..ir import fusions

    launched = [r for r in fusions.launched(proto) if r.name in cycles or r.opcode in _ALWAYS]
    wrapped = fusions.isolate(proto, [r.name for r in launched])
    names = [r.name for r in launched if r.name in wrapped]
    costs = dict(zip(names, _jaxlib.hlo_cost_analysis([wrapped[n] for n in names]))) if names else {}
    peaks = Peaks.of(generation)
    out = []
    for r in launched:
        cost = costs.get(r.name)
        flops = nbytes = None
        if isinstance(cost, dict) and cost.get("flops", 0) >= 0 and cost.get("bytes accessed", 0) >= 0:
            flops, nbytes = cost.get("flops", 0.0), cost.get("bytes accessed", 0.0)
        out.append(_row(r.name, r.computation, r.opcode, kind_of(r.opcode, r.kind), r.op_name, r.source,
                        cycles.get(r.name), flops, nbytes, peaks))
    seen = {r.name for r in out}
    out += [_row(name, "", "", "unknown", None, None, c, None, None, peaks)
            for name, c in cycles.items() if name not in seen]
    return out


def _row(name: str, computation: str, opcode: str, kind: str, op_name: str | None, source: str | None,
         cycles: int | None, flops: float | None, nbytes: float | None, peaks: Peaks) -> TpuKernelRow:
    seconds = cycles / peaks.clock_hz if cycles is not None and peaks.clock_hz else None
    bound = roofline_s = None
    if flops is not None and nbytes is not None and peaks.flops_per_s and peaks.bytes_per_s \
            and (flops or nbytes):
        from .. import roofline

        bound = roofline.bound(flops, nbytes, peaks.flops_per_s / peaks.bytes_per_s)
        roofline_s = roofline.seconds(flops, nbytes, peaks.flops_per_s, peaks.bytes_per_s)
    return TpuKernelRow(name, computation, opcode, kind, op_name, source, cycles, seconds, flops, nbytes, bound,
                        roofline_s)


def _si(x: float | None) -> str:
    if x is None:
        return "-"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{prefix}"
    return f"{x:.3g}"


def table_text(module: str, topology: str, generation: str, found: list[TpuKernelRow]) -> str:
    """The table of one module on one topology: estimated ops most cycles first, then the rest."""
    peaks = Peaks.of(generation)
    clock = f"{peaks.clock_hz / 1e9:.3g} GHz clock (tpu_specs/{generation}.toml)" if peaks.clock_hz \
        else f"no clock figure for {generation} in tpu_specs/: cycles only"
    ordered = sorted(found, key=lambda r: (r.cycles is None, -(r.cycles or 0)))
    head = ("name", "kind", "cycles", "est. us", "FLOPs", "bytes", "bound")
    body = [(r.name, r.kind, f"{r.cycles:,}" if r.cycles is not None else "-",
             f"{r.micros:.3f}" if r.micros is not None else "-", _si(r.flops), _si(r.bytes_accessed),
             r.bound or "-") for r in ordered]
    total = sum(r.cycles or 0 for r in found)
    total_s = sum(r.seconds or 0.0 for r in found) if peaks.clock_hz else None
    body.append(("total", "", f"{total:,}", f"{total_s * 1e6:.3f}" if total_s is not None else "-",
                 _si(sum(r.flops or 0 for r in found)), _si(sum(r.bytes_accessed or 0 for r in found)), ""))
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    lines = [f"# {module} on {topology}: libtpu's static estimate per op, {clock}"]
    for row in [head, *body]:
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(lines) + "\n"
