"""``roofline`` on TPU, device-less: per fusion or op of the kernels rows (tpu/kernels.py),
FLOPs, bytes, arithmetic intensity, the verdict against the generation's ridge point and
libtpu's static estimate beside the roofline's lower-bound time.

Peaks come from ``tpu_specs/<generation>.toml`` (tpu/kernels.py ``Peaks``, per device):
the MXU's bf16 peak (``peak_bf16``) and HBM bandwidth (``hbm_bandwidth``); ridge = peak /
bandwidth (v5e: 197 TFLOP/s / 819 GB/s = 240.5 FLOP/B). Every row is held to the bf16
MXU peak, the only compute figure the specs give: an f32 or elementwise op's true ceiling
(the vector units) is lower, so its roofline time is a lower bound twice over. The verdict
and times are the shared ones (mlirhlo_driver/roofline.py), as on CUDA.

:func:`to_json_data` is the object the roofline picture draws (cuda/roofline_plot.py reads
CUDA's ``cost`` object and this one alike: ``peaks.ceilings`` and per-row ``peak``).
"""

from __future__ import annotations

from typing import Any

from .. import roofline
from .kernels import Peaks, TpuKernelRow, _si

PEAK = {"unit": "MXU", "dtype": "BF16"}


def has_peaks(peaks: Peaks) -> bool:
    return bool(peaks.flops_per_s and peaks.bytes_per_s)


def _row(r: TpuKernelRow, peaks: Peaks) -> dict[str, Any]:
    ridge = peaks.flops_per_s / peaks.bytes_per_s if has_peaks(peaks) else None  # type: ignore[operator]
    ai = r.intensity
    return {"name": r.name, "computation": r.computation, "opcode": r.opcode, "kind": r.kind,
            "op_name": r.op_name, "source": r.source, "flops": r.flops, "bytes_accessed": r.bytes_accessed,
            "arithmetic_intensity": ai, "peak": {**PEAK, "flops_per_s": peaks.flops_per_s},
            "ridge_flops_per_byte": ridge, "bound": r.bound,
            "attainable_flops_per_s": roofline.attainable(ai, peaks.flops_per_s, peaks.bytes_per_s)
            if ai and has_peaks(peaks) else None,  # type: ignore[arg-type]
            "lower_bound_seconds": r.roofline_seconds, "estimated_cycles": r.cycles, "estimated_seconds": r.seconds}


def to_json_data(module: str, topology: str, generation: str, rows: list[TpuKernelRow]) -> dict[str, Any]:
    """The roofline of one module on one topology, as data (``opt --stage roofline --plot``)."""
    peaks = Peaks.of(generation)
    known = [r for r in rows if r.roofline_seconds is not None]
    return {"module": module, "tpu_topology": {"name": topology, "generation": generation},
            "peaks": {"ceilings": [{"name": "MXU BF16", "flops_per_s": peaks.flops_per_s}]
                      if peaks.flops_per_s else [],
                      "memory_bandwidth_bytes_per_s": peaks.bytes_per_s, "clock_hz": peaks.clock_hz,
                      "from": f"tpu_specs/{generation}.toml"},
            "flops": sum(r.flops or 0.0 for r in known), "bytes accessed": sum(r.bytes_accessed or 0.0 for r in known),
            "lower_bound_seconds": sum(r.roofline_seconds or 0.0 for r in known),
            "estimated_cycles": sum(r.cycles or 0 for r in rows),
            "estimated_seconds": sum(r.seconds or 0.0 for r in rows) if peaks.clock_hz else None,
            "rows_without_figures": len(rows) - len(known),
            "fusions": [_row(r, peaks) for r in rows]}


def _us(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e6:.4g}"


def table_text(module: str, topology: str, generation: str, rows: list[TpuKernelRow]) -> str:
    """The ``roofline`` stage on TPU: one line per row in program order, then the totals."""
    peaks = Peaks.of(generation)
    data = to_json_data(module, topology, generation, rows)
    if has_peaks(peaks):
        title = (f"# {module} on {topology}: MXU bf16 {_si(peaks.flops_per_s)}FLOP/s, HBM "
                 f"{_si(peaks.bytes_per_s)}B/s, ridge {peaks.flops_per_s / peaks.bytes_per_s:.1f} FLOP/B "  # type: ignore[operator]
                 f"(tpu_specs/{generation}.toml, per device)")
    else:
        title = f"# {module} on {topology}: tpu_specs/ has no bf16 peak or HBM bandwidth for {generation}: no verdict"
    head = ("name", "kind", "FLOPs", "bytes", "FLOP/B", "attainable", "bound", "roofline ≥ µs", "libtpu est. µs",
            "est./roof", "op_name @ source")
    body = []
    for r, d in zip(rows, data["fusions"]):
        ratio = f"{r.seconds / r.roofline_seconds:.2f}x" if r.seconds is not None and r.roofline_seconds else "-"
        ai = r.intensity
        body.append((r.name, r.kind, _si(r.flops), _si(r.bytes_accessed), "-" if ai is None else f"{ai:.2f}",
                     "-" if d["attainable_flops_per_s"] is None else _si(d["attainable_flops_per_s"]) + "FLOP/s",
                     r.bound or "-", _us(r.roofline_seconds), _us(r.seconds), ratio,
                     " @ ".join(x for x in (r.op_name, r.source) if x) or "-"))
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    left = {0, 1, 6, 10}
    lines = [title]
    for row in [head, *body]:
        lines.append("  ".join(c.ljust(w) if i in left else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    est = "-" if data["estimated_seconds"] is None else _us(data["estimated_seconds"])
    lines.append(f"total: {_si(data['flops'])} FLOPs, {_si(data['bytes accessed'])}B accessed, roofline ≥ "
                 f"{_us(data['lower_bound_seconds'])} µs, libtpu's estimate {est} µs "
                 f"({data['estimated_cycles']:,} cycles; ops one after another, each once)")
    if data["rows_without_figures"]:
        lines.append(f"{data['rows_without_figures']} op(s) without figures, left out of the roofline total")
    lines.append("every op is held to the MXU's bf16 peak (the spec's one compute figure): vector-unit and f32 "
                 "work has a lower ceiling")
    return "\n".join(lines) + "\n"
