"""``cost`` on CUDA, device-less: per launched fusion, FLOPs and bytes, and a roofline
verdict on the spec's GPU.

Figures, per instruction XLA launches (ir/fusions.py ``launched``):

- ``xla-cost-analysis``: XLA's ``HloCostAnalysis`` of the optimized module's
  instruction wrapped as a module of its own (``ir.fusions.isolate``;
  ``_native.jaxlib.hlo_cost_analysis``). The CUDA compile-only client has no cost
  analysis, but the analysis reads only HLO, so jaxlib's CPU-client entry point runs
  it on the GPU-optimized module. It counts a dot as 2 x M x N x K, an elementwise op
  as one flop per element, transcendentals apart, and bytes as what the fusion reads
  of its operands plus what it writes.
- ``hlo-gemm``: a cuBLAS GEMM custom call, which XLA's analysis reports as unknown
  (-1): counted from its HLO by ``ir.fusions.gemm_cost``.
- anything else the analysis cannot count: no figures (``None``), named as such.

Peaks, from the spec's ``GpuDeviceInfoProto``:

- CUDA cores: the ``scalar_unit_description`` rate of the row's result type where the
  spec has one, else FP32 as ``2 x fpus_per_core x core_count x clock_rate_ghz``
  (fpus_per_core is FP32 lanes per SM; an FMA is 2 flops). H100 SXM: 2 x 128 x 132 x
  1.98 GHz = 66.9 TFLOP/s.
- Tensor cores, for a row with a dot or convolution: the ``matrix_unit_description``
  rate of the dot's operand type, ``2 x ops_per_clock x units_per_core x core_count x
  clock_rate_ghz`` (XLA's own reading of those fields, cuda_core_info_table_test.cc:
  ops_per_clock counts FMAs). H100 SXM F32 (TF32): 2 x 256 x 4 x 132 x 1.8295 GHz =
  494.6 TFLOP/s. Specs without the field (before Hopper) use the CUDA-core rate, and
  say so.
- Memory: ``memory_bandwidth`` (bytes/s).

Verdict: arithmetic intensity (flops / bytes) against the ridge point peak / bandwidth:
``compute`` at or above it, ``memory`` below. Lower-bound time: max(flops / peak, bytes
/ bandwidth). Module totals sum the rows (each launch once: a while body's kernels are
counted once, not per trip; transcendentals are shown but not timed).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .. import roofline as _roof
from ..ir.dtypes import TYPES

_TYPE_NAME = {t.number: t.name for t in TYPES}
_F32 = next(t.number for t in TYPES if t.name == "F32")


@dataclass(frozen=True)
class Peak:
    unit: str              # "tensor core" or "cuda core"
    dtype: str             # the PrimitiveType the rate is for ("F32", "BF16")
    flops_per_s: float
    derived_from: str      # which spec fields

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "dtype": self.dtype, "flops_per_s": self.flops_per_s,
                "from": self.derived_from}


@dataclass(frozen=True)
class Peaks:
    fp32: Peak
    scalar: dict[int, Peak]      # PrimitiveType -> CUDA-core rate (spec's scalar_unit_description)
    matrix: dict[int, Peak]      # PrimitiveType -> tensor-core rate (matrix_unit_description)
    bandwidth: float             # bytes/s

    def for_row(self, has_dot: bool, dot_type: int | None, out_type: int | None) -> tuple[Peak, str | None]:
        """The peak a row is held to, and a note when it is a fallback."""
        if has_dot:
            if dot_type in self.matrix:
                return self.matrix[dot_type], None
            note = ("spec has no tensor-core rates" if not self.matrix
                    else f"spec has no tensor-core rate for {_TYPE_NAME.get(dot_type or 0, dot_type)}")
            return self.scalar.get(dot_type or 0, self.fp32), note
        return self.scalar.get(out_type or 0, self.fp32), None

    def to_dict(self) -> dict[str, Any]:
        return {"fp32": self.fp32.to_dict(),
                "tensor_core": {_TYPE_NAME.get(k, str(k)): p.flops_per_s for k, p in sorted(self.matrix.items())},
                "memory_bandwidth_bytes_per_s": self.bandwidth}


def peaks(spec: Any) -> Peaks:
    """The spec's peak rates (see the module docstring for the formulas)."""
    return _peaks(spec.text, str(spec.path))


@functools.lru_cache(maxsize=None)
def _peaks(text: str, path: str) -> Peaks:
    from .specs import parse_textproto

    info = parse_textproto(text, path).message.gpu_device_info

    def ghz(x: float) -> float:  # the spec's decimal figure, not its float32 (1.98, not 1.9800000190734863)
        return float(f"{x:.8g}")

    def rates(desc: Any, unit: str, field: str) -> dict[int, Peak]:
        return {k: Peak(unit, _TYPE_NAME.get(k, str(k)),
                        2.0 * r.ops_per_clock * r.units_per_core * info.core_count * ghz(r.clock_rate_ghz) * 1e9,
                        f"{field}[{_TYPE_NAME.get(k, k)}]: 2 x {r.ops_per_clock} ops/clock x {r.units_per_core}"
                        f" units x {info.core_count} SMs x {ghz(r.clock_rate_ghz)} GHz")
                for k, r in desc.rate_infos.items()}

    scalar = rates(info.scalar_unit_description, "cuda core", "scalar_unit_description") \
        if info.HasField("scalar_unit_description") else {}
    matrix = rates(info.matrix_unit_description, "tensor core", "matrix_unit_description") \
        if info.HasField("matrix_unit_description") else {}
    fp32 = scalar.get(_F32) or Peak(
        "cuda core", "F32", 2.0 * info.fpus_per_core * info.core_count * ghz(info.clock_rate_ghz) * 1e9,
        f"2 x {info.fpus_per_core} fpus_per_core x {info.core_count} SMs x {ghz(info.clock_rate_ghz)} GHz")
    return Peaks(fp32, scalar, matrix, float(info.memory_bandwidth))


@dataclass(frozen=True)
class CostRow:
    """One launched instruction's figures and its roofline verdict on the spec."""

    name: str
    kernel: str
    computation: str
    opcode: str
    kind: str | None
    op_name: str | None
    source: str | None
    flops: float | None
    transcendentals: float | None
    bytes_accessed: float | None
    figures_from: str            # "xla-cost-analysis", "hlo-gemm", or why there are none
    peak: Peak
    peak_note: str | None
    bandwidth: float

    @property
    def intensity(self) -> float | None:
        return _roof.intensity(self.flops, self.bytes_accessed)

    @property
    def ridge(self) -> float:
        return self.peak.flops_per_s / self.bandwidth

    @property
    def bound(self) -> str | None:
        return _roof.bound(self.flops, self.bytes_accessed, self.ridge)

    @property
    def seconds(self) -> float | None:
        return _roof.seconds(self.flops, self.bytes_accessed, self.peak.flops_per_s, self.bandwidth)

    @property
    def roofline_seconds(self) -> float | None:
        """:attr:`seconds` (roofline.RooflineRow's name for it)."""
        return self.seconds

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kernel": self.kernel, "computation": self.computation,
                "opcode": self.opcode, "kind": self.kind, "op_name": self.op_name, "source": self.source,
                "flops": self.flops, "transcendentals": self.transcendentals,
                "bytes_accessed": self.bytes_accessed, "figures_from": self.figures_from,
                "arithmetic_intensity": self.intensity, "peak": self.peak.to_dict(), "peak_note": self.peak_note,
                "ridge_flops_per_byte": self.ridge, "bound": self.bound, "lower_bound_seconds": self.seconds}

    def to_record(self) -> dict[str, Any]:
        """One flat dict (records.Rows.to_records): the peak as its name and FLOP/s."""
        d = self.to_dict()
        peak = d.pop("peak")
        return {**d, "peak": f"{peak['unit']} {peak['dtype']}", "peak_flops_per_s": peak["flops_per_s"]}


def cost_rows(proto: bytes, spec: Any) -> tuple[list[CostRow], dict[str, float] | str]:
    """The rows of an optimized module (HloModuleProto bytes) on ``spec``, in program
    order, and XLA's own analysis of the whole module (or its refusal)."""
    from .._native import jaxlib as _jaxlib
    from ..ir import fusions

    launched = fusions.launched(proto)
    wrapped = fusions.isolate(proto, [r.name for r in launched])
    names = [r.name for r in launched if r.name in wrapped]
    found = _jaxlib.hlo_cost_analysis([wrapped[n] for n in names] + [proto])
    costs = dict(zip(names, found[:-1]))
    p = peaks(spec)
    out = []
    for r in launched:
        cost = costs.get(r.name)
        flops = trans = nbytes = None
        figures_from = "xla-cost-analysis"
        if isinstance(cost, dict) and cost.get("flops", 0) >= 0 and cost.get("bytes accessed", 0) >= 0:
            flops, trans, nbytes = (cost.get("flops", 0.0), cost.get("transcendentals", 0.0),
                                    cost.get("bytes accessed", 0.0))
        elif r.custom_call_target in fusions.GEMM_TARGETS:
            gemm = fusions.gemm_cost(proto, r.name)
            if gemm is not None:
                flops, trans, nbytes, figures_from = gemm["flops"], 0.0, gemm["bytes accessed"], "hlo-gemm"
        else:
            figures_from = (f"none: XLA's analysis cannot count custom call {r.custom_call_target}"
                            if r.custom_call_target else f"none: {cost if isinstance(cost, str) else 'unknown'}")
        peak, note = p.for_row(r.has_dot, r.dot_type, r.out_type)
        out.append(CostRow(r.name, r.kernel, r.computation, r.opcode, r.kind, r.op_name, r.source, flops, trans,
                           nbytes, figures_from, peak, note, p.bandwidth))
    return out, found[-1]


def totals(rows: list[CostRow]) -> dict[str, float]:
    """Sums over the rows that have figures (each launch counted once)."""
    known = [r for r in rows if r.seconds is not None]
    return {"flops": sum(r.flops or 0.0 for r in known),
            "transcendentals": sum(r.transcendentals or 0.0 for r in known),
            "bytes accessed": sum(r.bytes_accessed or 0.0 for r in known),
            "lower_bound_seconds": sum(r.seconds or 0.0 for r in known),
            "rows_without_figures": float(len(rows) - len(known))}


def to_json_data(module_name: str, spec: Any, rows: list[CostRow], xla_module: dict[str, float] | str) -> dict[str, Any]:
    """The CUDA ``cost`` stage's object: the CPU stage's module keys (``flops``,
    ``transcendentals``, ``bytes accessed``) as sums of the rows, then the rest."""
    t = totals(rows)
    return {**t, "module": module_name,
            "gpu_spec": {"name": spec.name, "gpu": spec.gpu, "sm": spec.sm},
            "peaks": peaks(spec).to_dict(),
            "xla_module_cost_analysis": xla_module,
            "fusions": [r.to_dict() for r in rows]}


def _si(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{prefix}{unit}"
    return f"{x:.3g}{unit}"


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.4g}"


def _peak_text(p: Peak) -> str:
    return f"{'TC' if p.unit == 'tensor core' else 'CUDA'} {p.dtype} {_si(p.flops_per_s)}"


def _where(op_name: str | None, source: str | None) -> str:
    return " @ ".join(x for x in (op_name, source) if x) or "-"


def table_text(module_name: str, spec: Any, rows: list[CostRow]) -> str:
    """The ``roofline`` stage: the rows as a table for people, then the totals."""
    from rich import box
    from rich.table import Table

    from .kernels import _render

    p = peaks(spec)
    t = Table(box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
              title=(f"{module_name} on {spec.name} ({spec.sm}): FP32 {_si(p.fp32.flops_per_s)}FLOP/s, "
                     f"memory {_si(p.bandwidth)}B/s, ridge {p.fp32.flops_per_s / p.bandwidth:.1f} FLOP/B"))
    for col, just in (("fusion", "left"), ("kind", "left"), ("FLOPs", "right"), ("bytes", "right"),
                      ("FLOP/B", "right"), ("peak FLOP/s", "left"), ("bound", "left"), ("time ≥ µs", "right"),
                      ("figures", "left"), ("op_name @ source", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in rows:
        t.add_row(r.name, r.kind or r.opcode, _si(r.flops), _si(r.bytes_accessed),
                  "-" if r.intensity is None else f"{r.intensity:.2f}",
                  _peak_text(r.peak) + (" *" if r.peak_note else ""), r.bound or "-", _us(r.seconds),
                  r.figures_from, _where(r.op_name, r.source))
    tot = totals(rows)
    notes = sorted({r.peak_note for r in rows if r.peak_note})
    lines = [f"total: {_si(tot['flops'])} FLOPs, {_si(tot['transcendentals'])} transcendentals, "
             f"{_si(tot['bytes accessed'])}B accessed, time ≥ {_us(tot['lower_bound_seconds'])} µs "
             f"(kernels one after another, each launch once)"]
    if tot["rows_without_figures"]:
        lines.append(f"{int(tot['rows_without_figures'])} launch(es) without figures, left out of the total")
    lines += [f"* {n}: CUDA-core rate used" for n in notes]
    return _render(t) + "\n".join(lines) + "\n"
