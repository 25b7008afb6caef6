"""The TPU chips attached to this machine, found without loading libtpu or importing jax.

A run on a TPU (``run --platform tpu``) needs a chip; a machine without one must say so in
one line, and the CLI's parent process must not open the chip itself (one program holds it
at a time: the worker that runs the modules does). So the chips are counted on the PCI bus,
as jax counts them before it loads libtpu (jax's hardware_utils module, whose device-id
table this follows): Google's vendor id, one PCI function ``.0`` per chip.
"""

from __future__ import annotations

import functools
import glob
import os
from dataclasses import dataclass

from .topologies import _SHAPES_2D, _SHAPES_3D, GENERATIONS, Topology

_GOOGLE_PCI_VENDOR = "0x1ae0"
# PCI device id -> libtpu's generation name (jax/_src/hardware_utils.py, jax 0.12).
_DEVICE_IDS = {"0x0027": "v3", "0x005e": "v4", "0x0062": "v5p", "0x0063": "v5e", "0x006f": "v6e",
               "0x0076": "tpu7x"}


@dataclass(frozen=True)
class Chips:
    """The chips here: their generation (libtpu's name) and how many."""

    generation: str
    count: int

    def topology(self) -> Topology:
        """The slice these chips make, as a device-less compile names it (``v5e:1x1``)."""
        shapes = _SHAPES_2D if GENERATIONS.get(self.generation, 2) == 2 else _SHAPES_3D
        shape = shapes.get(self.count) or (self.count,) + (1,) * (GENERATIONS.get(self.generation, 2) - 1)
        return Topology(self.generation, tuple(shape))


@functools.cache
def attached(root: str = "/sys/bus/pci/devices") -> Chips | None:
    """The TPU chips on this machine's PCI bus, or None."""
    found: dict[str, int] = {}
    for vendor_path in glob.glob(os.path.join(root, "*", "vendor")):
        device_dir = os.path.dirname(vendor_path)
        if not os.path.basename(device_dir).endswith(".0"):
            continue
        try:
            with open(vendor_path) as f:
                if f.read().strip() != _GOOGLE_PCI_VENDOR:
                    continue
            with open(os.path.join(device_dir, "device")) as f:
                generation = _DEVICE_IDS.get(f.read().strip())
        except OSError:
            continue
        if generation is not None:
            found[generation] = found.get(generation, 0) + 1
    if not found:
        return None
    generation = max(found, key=lambda g: found[g])
    return Chips(generation, found[generation])
