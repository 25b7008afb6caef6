"""The roofline as a picture: ``mlirhlo opt X --gpu-spec SPEC --stage roofline --plot FILE``
and ``Compiled.plot_roofline``; for TPU too (``--platform tpu --tpu-topology T``), from
tpu/roofline.py's object, whose ceilings (the MXU's bf16 peak) and rows have the same keys.

Drawn from the ``cost`` stage's object (roofline.to_json_data), nothing measured: a
log-log chart of the spec's ceilings, each ``min(peak, intensity x memory_bandwidth)``
(the memory slope, then the peak: FP32 on CUDA cores, each tensor-core rate the spec
gives, and any other peak a row is held to), and one point per launched kernel at its
arithmetic intensity (FLOP/B) and the rate its lower-bound time implies, flops /
max(flops / peak, bytes / bandwidth) = min(peak, intensity x bandwidth): the kernel's
place on the roof it is held to, labelled with its name and op_name. A launch without figures, or with no FLOPs (a copy),
has no place on a log scale: the figure's note counts those left out.

matplotlib (the ``plot`` extra) is imported only here, when a picture is asked for.
SVG or PNG by the file's suffix; the same rows give the same bytes (no date in the SVG,
a fixed hash salt for its ids, text as text).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DriverError
from ..roofline import attainable

FORMATS = {".svg": "svg", ".png": "png"}
INSTALL = "pip install 'mlirhlo-driver[plot]'"
POINT_ID = "roofline-kernel-"  # each kernel's marker is the SVG group with this id prefix


def require(who: str = "--plot") -> None:
    """Refuse, naming ``who``, where matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise DriverError(f"{who}: needs matplotlib ({INSTALL})") from None


def check_path(path: str | Path, who: str = "--plot") -> str:
    """The format of ``path`` (svg or png, by its suffix), or refuse it."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise DriverError(f"{who}: '{path}' must end in .svg or .png (the picture's format)")
    return fmt


def _si(x: float) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}"
    return f"{x:.3g} "


def _unit(peak: dict[str, Any]) -> str:
    return {"tensor core": "tensor core", "cuda core": "CUDA core"}.get(peak["unit"], peak["unit"])


def _peak_name(peak: dict[str, Any]) -> str:
    return f"{_unit(peak)} {peak['dtype']}"


def ceilings(cost: dict[str, Any]) -> list[tuple[str, float]]:
    """The compute ceilings drawn, lowest first: (name, FLOP/s). A unit's types of one rate
    are one ceiling (H100's twelve 8- and 6-bit tensor-core types: 1.98 PFLOP/s). A TPU
    object (tpu/roofline.py) names its ceilings itself (``peaks.ceilings``)."""
    peaks = cost["peaks"]
    if "ceilings" in peaks:
        return sorted(((c["name"], c["flops_per_s"]) for c in peaks["ceilings"]), key=lambda kv: (kv[1], kv[0]))
    found = {("CUDA core", peaks["fp32"]["dtype"]): peaks["fp32"]["flops_per_s"]}
    found.update({("tensor core", dtype): rate for dtype, rate in peaks["tensor_core"].items()})
    found.update({(_unit(row["peak"]), row["peak"]["dtype"]): row["peak"]["flops_per_s"] for row in cost["fusions"]})
    grouped: dict[tuple[str, float], list[str]] = {}
    for (unit, dtype), rate in found.items():
        grouped.setdefault((unit, rate), []).append(dtype)
    out = []
    for (unit, rate), dtypes in grouped.items():
        types = ", ".join(dtypes) if len(dtypes) <= 3 else f"{', '.join(dtypes[:2])} +{len(dtypes) - 2} types"
        out.append((f"{unit} {types}", rate))
    return sorted(out, key=lambda kv: (kv[1], kv[0]))


def points(cost: dict[str, Any]) -> list[dict[str, Any]]:
    """The kernels drawn, in program order: name, op_name, intensity, FLOP/s (flops over the
    lower-bound time: min(peak, intensity x bandwidth)), bound, peak."""
    bandwidth = cost["peaks"]["memory_bandwidth_bytes_per_s"]
    out = []
    for row in cost["fusions"]:
        ai = row["arithmetic_intensity"]
        if not ai:
            continue
        out.append({"name": row["name"], "op_name": row["op_name"], "intensity": ai,
                    "flops_per_s": attainable(ai, row["peak"]["flops_per_s"], bandwidth), "bound": row["bound"],
                    "peak": _peak_name(row["peak"]),
                    # TPU: libtpu's static estimate as a rate (flops / estimated time), drawn below the roof
                    "estimated_flops_per_s": row["flops"] / row["estimated_seconds"]
                    if row.get("estimated_seconds") and row.get("flops") else None})
    return out


def _target(cost: dict[str, Any]) -> str:
    spec = cost.get("gpu_spec")
    if spec:
        return f"{spec['name']} ({spec['gpu']}, {spec['sm']})"
    topo = cost["tpu_topology"]
    return f"{topo['name']} (TPU {topo['generation']}, per device; peaks from {cost['peaks'].get('from')})"


def check_drawable(cost: dict[str, Any], who: str = "--plot") -> None:
    """Refuse an object with no ceiling or bandwidth to draw (a TPU generation whose spec
    lacks the figures)."""
    if not cost["peaks"].get("memory_bandwidth_bytes_per_s") or not ceilings(cost):
        raise DriverError(f"{who}: no peak FLOP/s or memory bandwidth to draw the roofline on "
                          f"({_target(cost)})")


def figure(cost: dict[str, Any]) -> Any:
    """A matplotlib ``Figure`` of the roofline of ``cost`` (the ``cost`` stage's object)."""
    import math

    from matplotlib.figure import Figure

    bandwidth = cost["peaks"]["memory_bandwidth_bytes_per_s"]
    roofs, kernels = ceilings(cost), points(cost)
    ridges = [peak / bandwidth for _, peak in roofs]
    xs = [k["intensity"] for k in kernels] + ridges
    lo = 10 ** math.floor(math.log10(min(xs)) - 1)
    hi = 10 ** math.ceil(math.log10(max(xs)) + 1)

    fig = Figure(figsize=(9, 7), layout="constrained")
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    colors = ["tab:blue", "tab:purple", "tab:green", "tab:olive", "tab:cyan", "tab:pink", "tab:gray", "tab:brown"]
    top = max(peak for _, peak in roofs)
    ax.plot([lo, top / bandwidth], [bandwidth * lo, top], color="black", linewidth=1.5,
            label=f"memory: {_si(bandwidth)}B/s", gid="roofline-memory")
    for i, (name, peak) in enumerate(roofs):
        ridge = peak / bandwidth
        ax.plot([ridge, hi], [peak, peak], color=colors[i % len(colors)], linewidth=1.5,
                linestyle="--" if name.startswith("CUDA") else "-", zorder=2.5 if name.startswith("CUDA") else 2,
                label=f"{name}: {_si(peak)}FLOP/s (ridge {ridge:.3g} FLOP/B)", gid=f"roofline-ceiling-{i}")
    legend_said: set[str] = set()
    for i, k in enumerate(kernels):
        color = "tab:red" if k["bound"] == "memory" else "tab:orange"
        said = f"{k['bound']}-bound kernel"
        ax.plot([k["intensity"]], [k["flops_per_s"]], marker="o", markersize=8, linestyle="none", color=color,
                markeredgecolor="black", gid=f"{POINT_ID}{i}", zorder=3,
                label=None if said in legend_said else said)
        legend_said.add(said)
        if k.get("estimated_flops_per_s"):
            said = "libtpu's static estimate"
            ax.plot([k["intensity"]], [k["estimated_flops_per_s"]], marker="x", markersize=7, linestyle="none",
                    color="black", gid=f"roofline-estimate-{i}", zorder=3,
                    label=None if said in legend_said else said)
            legend_said.add(said)
        label = k["name"] + (f"\n{k['op_name']}" if k["op_name"] else "")
        ax.annotate(label, (k["intensity"], k["flops_per_s"]), textcoords="offset points",
                    xytext=(-8, 6), fontsize=8, ha="right", va="bottom")
    ax.set_xlim(lo, hi)
    ax.set_ylim(min([bandwidth * lo] + [k["estimated_flops_per_s"] / 2 for k in kernels
                                        if k.get("estimated_flops_per_s")]), top * 4)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s at the lower-bound time")
    ax.set_title(f"roofline of {cost['module']} on {_target(cost)}", fontsize=10)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    fig.legend(loc="outside lower center", fontsize=8, ncols=2)
    left_out = len(cost["fusions"]) - len(kernels)
    if left_out:
        ax.text(0.01, 0.99, f"{left_out} launch(es) without FLOPs or figures not drawn", transform=ax.transAxes,
                fontsize=8, va="top")
    return fig


def write(cost: dict[str, Any], path: str | Path, who: str = "--plot") -> Path:
    """Draw ``cost``'s roofline into ``path`` (SVG or PNG by its suffix); returns the path."""
    fmt = check_path(path, who)
    require(who)
    check_drawable(cost, who)
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "mlirhlo-roofline", "svg.fonttype": "none"}):
        fig = figure(cost)
        path = Path(path)
        fig.savefig(path, format=fmt, dpi=120,
                    metadata={"Date": None} if fmt == "svg" else {"Software": None})
    return path
