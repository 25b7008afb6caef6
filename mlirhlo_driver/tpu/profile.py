"""Per-HLO-op device times from a jax profile (``jax.profiler.ProfileData``, jax >= 0.9), and how
libtpu's static estimates (tpu/kernels.py) compare with them.

What a profile holds, as read here:

- On a TPU, the plane ``/device:TPU:N`` has a line ``XLA Modules`` (one event per execution of a
  module, named ``<module>(<program id>)``) and a line ``XLA Ops`` (one event per HLO instruction
  run, named by the instruction's whole text: ``%fusion.3 = f32[8,16]{...} fusion(...), ...`` on a
  v5e with jax 0.10.2, measured; the name is what precedes `` = ``). An op belongs to the module
  execution whose interval holds it.
- On the CPU (jaxlib 0.12, measured), the plane ``/host:CPU`` has a line per XLA thread
  (``tf_XLAExecute/...``) whose events are the thunks XLA ran, named by instruction, with the
  stats ``hlo_op``, ``hlo_module`` and ``run_id`` (and ``end: NAME`` events of no duration of
  their own worth counting, left out).

Imports jax's profiler only when a profile is read from a file or bytes.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from ..timing import us, us_from_ns


@dataclass(frozen=True)
class OpTime:
    """One HLO instruction's measured device time."""

    name: str
    median_us: float        # per occurrence (an op in a loop body runs several times per execution)
    count: int              # occurrences in the profile
    total_us: float         # summed over the profile
    executions: int         # executions of the module the profile holds

    @property
    def per_execution_us(self) -> float:
        """Its time in one execution of the module: the sum over the profile / executions."""
        return self.total_us / max(self.executions, 1)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "median_us": self.median_us, "count": self.count, "total_us": self.total_us,
                "executions": self.executions, "per_execution_us": self.per_execution_us}


def load(profile: Any) -> Any:
    """A ProfileData from itself, an ``.xplane.pb`` path, or serialized XSpace bytes."""
    if isinstance(profile, (bytes, bytearray)):
        from jax.profiler import ProfileData

        return ProfileData.from_serialized_xspace(bytes(profile))
    if isinstance(profile, str) or hasattr(profile, "__fspath__"):
        from jax.profiler import ProfileData

        return ProfileData.from_file(str(profile))
    return profile


def _stats(event: Any) -> dict[str, Any]:
    try:
        return dict(event.stats)
    except Exception:  # an event with stats jax cannot read back
        return {}


def _matches(found: str, module: str | None) -> bool:
    return module is None or found == module or found.startswith(module + "(")


def op_times(profile: Any, module: str | None = None, device: str = "TPU:0") -> dict[str, OpTime]:
    """Instruction name -> its measured time (OpTime), for the HLO module ``module`` (the
    HloModule's name; None: every module) on ``device`` (the plane ``/device:<device>``; with no
    such plane, the host's XLA thunks, as the CPU backend records them). {} when the profile
    holds no op of that module."""
    import warnings

    data = load(profile)
    planes = list(data.planes)
    device_plane = next((p for p in planes if p.name == f"/device:{device}"), None)
    with warnings.catch_warnings():  # jaxlib's event_stats type has no __module__ (a DeprecationWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        if device_plane is not None:
            samples, executions = _device_ops(device_plane, module)
        else:
            samples, executions = _host_ops(planes, module)
    return {name: OpTime(name, statistics.median(ts), len(ts), sum(ts), executions)
            for name, ts in sorted(samples.items())}


def _device_ops(plane: Any, module: str | None) -> tuple[dict[str, list[float]], int]:
    lines = {line.name: list(line.events) for line in plane.lines}
    runs = sorted((e.start_ns, e.start_ns + e.duration_ns) for e in lines.get("XLA Modules", [])
                  if _matches(e.name, module))
    samples: dict[str, list[float]] = {}
    for e in lines.get("XLA Ops", []):
        named = _stats(e).get("hlo_module")
        inside = _matches(str(named), module) if named is not None else \
            any(start <= e.start_ns and e.start_ns + e.duration_ns <= end + 1 for start, end in runs)
        if inside:
            samples.setdefault(instruction_name(e.name), []).append(us_from_ns(e.duration_ns))
    return samples, len(runs)


def instruction_name(text: str) -> str:
    """``fusion.3`` of ``fusion.3`` or of an instruction's text, ``%fusion.3 = f32[8]{0} fusion(...)``."""
    head = text.split(" = ", 1)[0].strip() if " = " in text else text.strip()
    return head.lstrip("%")


def _host_ops(planes: list[Any], module: str | None) -> tuple[dict[str, list[float]], int]:
    samples: dict[str, list[float]] = {}
    runs = set()
    for plane in planes:
        if not plane.name.startswith("/host:"):
            continue
        for line in plane.lines:
            for e in line.events:
                stats = _stats(e)
                op, named = stats.get("hlo_op"), stats.get("hlo_module")
                if op is None or named is None or not _matches(str(named), module):
                    continue
                samples.setdefault(str(op), []).append(us_from_ns(e.duration_ns))
                runs.add(stats.get("run_id"))
    return samples, len(runs)


@dataclass(frozen=True)
class Joined:
    """One op's estimate beside its measurement."""

    name: str
    kind: str
    estimated_us: float
    measured_us: float      # per run of the op (its median)

    @property
    def ratio(self) -> float:
        """measured / estimated (inf where the estimate is 0 and the chip took time)."""
        return self.measured_us / self.estimated_us if self.estimated_us else float("inf")


def join(rows: list[Any], measured: dict[str, OpTime]) -> list[Joined]:
    """The rows (tpu.kernels.TpuKernelRow or their dicts) with an estimated time and a
    measurement of the same name, in the rows' order. Compared per run of the op: libtpu's
    static profile estimates one run, and an op in a loop body runs once per trip (on a v5e,
    a while loop's body ops measured 30-43 us per execution, 0.56-0.79 us per run, against
    estimates of 1.07-1.29 us)."""
    out = []
    for r in rows:
        d = r if isinstance(r, dict) else r.to_dict()
        m = measured.get(d["name"])
        if m is not None and d.get("seconds") is not None:
            out.append(Joined(d["name"], d["kind"], us(d["seconds"]), m.median_us))
    return out


def compare_estimates(rows: list[Any], measured: dict[str, OpTime]) -> dict[str, dict[str, Any]]:
    """Per op kind, how measured time compares with libtpu's estimate (ratio measured /
    estimated): ``n``, ``median``, ``worst`` (the ratio farthest from 1, either way), ``min``,
    ``max``, and the worst op's name; the kind ``all`` over every joined op. Ops with an
    estimate of 0 cycles are left out of the ratios."""
    import math

    by_kind: dict[str, list[Joined]] = {}
    for j in join(rows, measured):
        if j.estimated_us > 0:
            by_kind.setdefault(j.kind, []).append(j)
    everything = [j for js in by_kind.values() for j in js]
    out = {}
    for kind, js in sorted(by_kind.items()) + ([("all", everything)] if everything else []):
        worst = max(js, key=lambda j: abs(math.log(j.ratio)) if j.ratio > 0 else math.inf)
        ratios = [j.ratio for j in js]
        out[kind] = {"n": len(js), "median": statistics.median(ratios), "worst": worst.ratio,
                     "worst_op": worst.name, "min": min(ratios), "max": max(ratios)}
    return out


def ratio_table(summary: dict[str, dict[str, Any]]) -> str:
    """compare_estimates' result as the table "estimate/measured ratios per op kind"."""
    head = ("kind", "ops", "median", "worst", "worst op")
    body = [(k, str(v["n"]), f"{v['median']:.3g}", f"{v['worst']:.3g}", v["worst_op"]) for k, v in summary.items()]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["# measured / estimated device time per op kind (libtpu's static profile at the spec's clock)"]
    lines += ["  ".join(c.ljust(w) if i in (0, 4) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
              for r in [head, *body]]
    return "\n".join(lines) + "\n"
