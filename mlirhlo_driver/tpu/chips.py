"""The TPU chips attached to this machine, found without loading libtpu or importing jax.

A run on a TPU (``run --platform tpu``) needs a chip; a machine without one must say so in
one line, and the CLI's parent process must not open the chip itself (one program holds it
at a time: the worker that runs the modules does). So the chips are counted on the PCI bus,
as jax counts them before it loads libtpu (jax's hardware_utils module, whose device-id
table this follows): Google's vendor id, one PCI function ``.0`` per chip. A chip counts
only where this machine lets a program open it (its ``/dev/vfio/GROUP`` or ``/dev/accelN``
node): a TPU VM lent in part shows all its slice's chips on the bus (a v5litepod-4 with one
chip lent had four PCI functions and ``/dev/vfio/1`` alone), and ``TPU_VISIBLE_CHIPS``
narrows what libtpu opens further.
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


def _openable(device_dir: str, dev: str) -> bool:
    """Whether the chip at ``device_dir`` (sysfs) has a device node here: the accel driver's
    ``/dev/accelN``, or the vfio group's ``/dev/vfio/GROUP`` (v5e and newer)."""
    accel = os.path.join(device_dir, "accel")
    if os.path.isdir(accel):
        return any(os.path.exists(os.path.join(dev, name)) for name in os.listdir(accel))
    group = os.path.join(device_dir, "iommu_group")
    return os.path.exists(group) and os.path.exists(os.path.join(dev, "vfio", os.path.basename(os.path.realpath(group))))


@functools.cache
def attached(root: str = "/sys/bus/pci/devices", dev: str = "/dev") -> Chips | None:
    """The TPU chips on this machine's PCI bus that a program here can open, or None."""
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
        if generation is not None and _openable(device_dir, dev):
            found[generation] = found.get(generation, 0) + 1
    if not found:
        return None
    generation = max(found, key=lambda g: found[g])
    count = found[generation]
    visible = [c for c in os.environ.get("TPU_VISIBLE_CHIPS", "").split(",") if c.strip()]
    return Chips(generation, min(count, len(visible)) if visible else count)
