"""Per-device memory of a TPU compile against the generation's HBM ("will it fit?"), and
libtpu's out-of-memory refusal as one line with XLA's own numbers.

The figures are the executable's (``get_compiled_memory_stats``), per device; the
capacity is the shipped spec's HBM per chip (tpu.specs) over the devices a chip is.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import CompileError
from . import specs
from .topologies import DEVICES_PER_CHIP

_ROWS = (("arguments", "argument_size_in_bytes"), ("outputs", "output_size_in_bytes"),
         ("aliased", "alias_size_in_bytes"), ("temporaries", "temp_size_in_bytes"),
         ("generated code", "generated_code_size_in_bytes"))


HBM_CAP_FLAG = "xla_tpu_max_hbm_size_mib"  # libtpu's per-compile option (0: the chip's HBM)


def peak_bytes(stats: dict[str, int]) -> int:
    """What a device holds in all: arguments and outputs (less what they share), temporaries
    and code, as jax's memory guidance adds them up. An upper bound of the peak: XLA's own
    ``peak_memory_in_bytes`` (shown beside it) counts the heap at its fullest, which on TPU
    can be below the temporaries' total."""
    g = stats.get
    return (g("argument_size_in_bytes", 0) + g("output_size_in_bytes", 0) - g("alias_size_in_bytes", 0)
            + g("temp_size_in_bytes", 0) + g("generated_code_size_in_bytes", 0))


def capacity_bytes(target: Any) -> tuple[int | None, str]:
    """(HBM bytes per device, where the figure comes from), or (None, why unknown). The
    user's ``--xla_tpu_max_hbm_size_mib`` (libtpu's cap on what a compile may use, per
    device) wins over the spec, as it does in libtpu's own out-of-memory check."""
    cap = dict(getattr(target, "xla_flags", ())).get(HBM_CAP_FLAG)
    if isinstance(cap, (int, float)) and not isinstance(cap, bool) and cap > 0:
        return int(cap * (1 << 20)), f"--{HBM_CAP_FLAG}={cap:g}"
    generation = target.topology.generation
    found = specs.spec(generation)
    per_chip = found.hbm_bytes_per_chip if found is not None else None
    if found is None or per_chip is None:
        return None, f"no HBM figure for {generation} in tpu_specs/"
    per_device = per_chip // DEVICES_PER_CHIP.get(generation, 1)
    figure = found.figure("hbm_capacity")
    assert figure is not None
    share = f" / {DEVICES_PER_CHIP[generation]} devices per chip" if DEVICES_PER_CHIP.get(generation, 1) > 1 else ""
    return per_device, f"{figure.value:g} {figure.unit} per chip{share} ({figure.source})"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def verdict(stats: dict[str, int], target: Any) -> tuple[bool | None, int, int | None]:
    """(fits: True/False, None where the capacity is unknown; peak bytes; capacity bytes)."""
    peak = peak_bytes(stats)
    capacity, _ = capacity_bytes(target)
    return (None if capacity is None else peak <= capacity), peak, capacity


def report(stats: dict[str, int], target: Any) -> str:
    """The ``memory`` stage: one row per figure, per device, then the peak against HBM."""
    if not stats:
        raise CompileError(f"{target.label()}: the compile gave no memory figures")
    fits, peak, capacity = verdict(stats, target)
    _, source = capacity_bytes(target)
    lines = [f"# {target.label()}: memory per device"]
    width = max(len(label) for label, _ in _ROWS) + 2
    for label, key in _ROWS:
        n = stats.get(key, 0)
        lines.append(f"{label + ':':<{width}}{n:>16,} B  {_size(n):>11}")
    lines.append(f"{'total:':<{width}}{peak:>16,} B  {_size(peak):>11}")
    if "peak_memory_in_bytes" in stats:
        xla_peak = stats["peak_memory_in_bytes"]
        lines.append(f"{'XLA peak:':<{width}}{xla_peak:>16,} B  {_size(xla_peak):>11}")
    if capacity is None:
        lines.append(f"{'HBM:':<{width}}unknown ({source})")
    else:
        lines.append(f"{'HBM:':<{width}}{capacity:>16,} B  {_size(capacity):>11}  {source}")
        share = 100.0 * peak / capacity if capacity else 0.0
        lines.append(f"{'verdict:':<{width}}" + (f"fits (total {share:.1f}% of HBM)" if fits else
                     f"does not fit (total {_size(peak - capacity)} over)"))
    return "\n".join(lines) + "\n"


_OOM = re.compile(r"(?:CompileTimeHbmOom|Ran out of memory|RESOURCE_EXHAUSTED)", re.I)


def translate_oom(message: str, target: Any) -> CompileError | None:
    """libtpu's refusal of a program that does not fit in HBM, as one line with XLA's numbers
    ("the total memory required for HLO temporaries (32.00G) exceeds available HBM (15.75G)"),
    or None for another error."""
    if not _OOM.search(message):
        return None
    text = " ".join(message.split())
    m = re.search(r"(the total memory required for .*?exceeds available HBM \([^)]*\))", text)
    # libtpu 0.0.34 (jax 0.9's pin) refuses before its temporaries: "Used 16.00G of 15.75G hbm.
    # Exceeded hbm capacity by 258.00M." (fit reads the two figures from it too)
    m = m or re.search(r"(Used [\d.]+\w* of [\d.]+\w* hbm)\. (Exceeded hbm capacity by [\d.]+\w*)", text)
    if m and m.lastindex == 2:
        return CompileError(f"does not fit on {target.label()}: {m.group(1)}; {m.group(2)[0].lower()}{m.group(2)[1:]}",
                            hint="a larger slice (--tpu-topology), with the program sharded over it")
    m = m or re.search(r"Ran out of memory[^.]*\.\s*(.*?)(?: HLO module:|See https|$)", text)
    what = m.group(1).strip().rstrip(".") if m else text
    return CompileError(f"does not fit on {target.label()}: {what}",
                        hint="a larger slice (--tpu-topology), with the program sharded over it")
