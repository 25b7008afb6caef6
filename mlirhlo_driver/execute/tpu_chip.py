"""Whether a device-less TPU compile is the chip's own: the same module compiled both ways.

A device-less compile (libtpu's compile-only topology, in the driver's TPU process) stands in
for the chip everywhere the chip is not: ``opt --platform tpu``, ``fit``, ``kernels``. On a
machine with a chip, :func:`compare` compiles a module for the chips attached here and for
their topology device-less, and says whether the optimized HLO (instructions and layouts,
metadata aside) and the memory figures agree. Measured on a TPU v5e (jax 0.10.2): they did
for an MLP step, apart from stack-frame metadata and two header attributes, which
:func:`comparable_hlo` leaves out.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

# Parts of an optimized module's text that say where ops came from, not what they are: each
# instruction's metadata (stack-frame ids differ between processes), the stack-frame tables
# libtpu prints after the computations, and the header's attributes (the chip's compile adds
# allow_spmd_sharding_propagation_to_parameters and xla.sdy.meshes: how jax called it).
_METADATA = re.compile(r",? metadata=\{[^{}]*\}")
_FRAME_TABLES = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\b")


def comparable_hlo(text: str) -> list[str]:
    """The instruction lines of an optimized module's text, metadata left out."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("HloModule "):
            continue
        if _FRAME_TABLES.match(line):
            break  # the tables follow every computation
        line = _METADATA.sub("", line).rstrip()
        if line:
            lines.append(line)
    return lines


@dataclass
class ChipComparison:
    """One module compiled for the chips here and device-less for their topology."""

    name: str
    topology: str
    same_hlo: bool
    hlo_diff: list[str] = field(default_factory=list)     # a unified diff, where they differ
    memory_chip: dict[str, int] = field(default_factory=dict)
    memory_device_less: dict[str, int] = field(default_factory=dict)

    def memory_differences(self) -> dict[str, tuple[int | None, int | None]]:
        """Each memory figure that differs: (chip, device-less). On a v5e (libtpu 0.0.42.1) the
        generated code of 5 of 11 corpus programs was 512 bytes larger device-less; every other
        figure (arguments, outputs, temporaries, aliases, peak) was the same."""
        keys = set(self.memory_chip) | set(self.memory_device_less)
        return {k: (self.memory_chip.get(k), self.memory_device_less.get(k)) for k in sorted(keys)
                if self.memory_chip.get(k) != self.memory_device_less.get(k)}

    @property
    def same_memory(self) -> bool:
        return bool(self.memory_chip) and not self.memory_differences()

    def row(self) -> dict[str, Any]:
        return {"module": self.name, "topology": self.topology, "same_hlo": self.same_hlo,
                "same_memory": self.same_memory, "memory_differences": self.memory_differences(),
                "hlo_diff_lines": len(self.hlo_diff),
                "hlo_diff": self.hlo_diff[:40], "memory_chip": self.memory_chip,
                "memory_device_less": self.memory_device_less}


def compare(module: Any, name: str = "module", xla_flags: tuple[tuple[str, Any], ...] = ()) -> ChipComparison:
    """``module`` (an ir.Module for XLA) compiled on the chips attached here and device-less
    for their topology. Raises NoGpu without a chip; compile errors as the compiles raise them."""
    from ..xla import backend
    from ..xla.platforms import run_target

    chip = run_target("tpu", xla_flags)
    dumps = (backend.EXECUTABLE_HLO,)
    on_chip = backend.compile(module, backend.CompileSpec(chip, on_device=True, dumps=dumps), name).art
    device_less = backend.compile(module, backend.CompileSpec(chip.device_less(), dumps=dumps), name).art
    a, b = comparable_hlo(on_chip.scheduled_hlo), comparable_hlo(device_less.scheduled_hlo)
    diff = [] if a == b else list(difflib.unified_diff(a, b, "chip", "device-less", lineterm="", n=1))
    return ChipComparison(name, chip.topology.name, a == b, diff, dict(on_chip.memory_stats),
                          dict(device_less.memory_stats))
