"""TPU topology names, as ``--tpu-topology`` takes them: libtpu's own spelling
(``v5e:2x2``, ``v5p:2x2x1``, ``tpu7x:2x2x1``) and Cloud TPU's accelerator types
(``v5litepod-16``, ``v6e-8``, ``v5p-128``), each read into one :class:`Topology`.

Several slices joined by the data-center network (Cloud TPU's multislice, ``num_slices``):
``2xv5e:2x2``, ``4xv5litepod-256`` ("2x v5e:2x2"): N slices of the one shape, whose devices
jax numbers from 100000 per slice (slice 1: 100000.., slice 2: 200000..), with collectives
across slices over DCN.

Checked here, before libtpu loads: libtpu's topology parser dies of a SIGFPE on a zero
dimension (``v5e:0x2``, libtpu 0.0.50.1) and aborts on other shapes, so a name reaches it
only once its generation, its rank and every dimension are known good. Nothing here
imports jax or loads libtpu.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import DriverError, did_you_mean, param

# libtpu's generation names and the rank of their slice shapes (2D torus: v2, v3, v5e,
# v6e; 3D: v4, v5p, TPU7x), as jax.experimental.topologies accepts them with libtpu
# 0.0.42-0.0.50.1 (v7 is refused there: TPU7x is "tpu7x").
GENERATIONS: dict[str, int] = {"v2": 2, "v3": 2, "v4": 3, "v5e": 2, "v5p": 3, "v6e": 2, "tpu7x": 3}
DEFAULT = "v5e:2x2"
# Devices per chip in libtpu's compile-only topologies, as jax sees a slice of them: v2, v3
# and TPU7x show each TensorCore; v4 (asked for megacore: _native.jaxlib) and v5p show a
# chip as one device; v5e and v6e have one TensorCore (measured with libtpu 0.0.50.1).
DEVICES_PER_CHIP: dict[str, int] = {"v2": 2, "v3": 2, "v4": 1, "v5e": 1, "v5p": 1, "v6e": 1, "tpu7x": 2}

# Cloud TPU accelerator types: the generation and what their number counts.
# v5e ("v5litepod-N") and v6e ("v6e-N") count chips, one TensorCore each
# (https://cloud.google.com/tpu/docs/v5e: "Each v5e chip contains one TensorCore";
# https://cloud.google.com/tpu/docs/v6e: v6e-8 is the 2x4 topology). v2, v3, v4 and v5p
# count TensorCores, two per chip (https://cloud.google.com/tpu/docs/v2: "the TPU version and
# the number of TPU cores ... v2-8" is one 4-chip board; https://cloud.google.com/tpu/docs/v5p:
# topology 2x2x1 has 8 cores, 4 chips).
_ACCELERATOR_TYPES: dict[str, tuple[str, int]] = {
    "v5litepod": ("v5e", 1), "v6e": ("v6e", 1), "v5p": ("v5p", 2), "v4": ("v4", 2), "v3": ("v3", 2), "v2": ("v2", 2),
}
# The slice shape of each chip count, as the Cloud TPU configuration tables list them
# (v5e/v6e 2D shapes: https://cloud.google.com/tpu/docs/v5e, .../v6e; v4/v5p 3D shapes:
# https://cloud.google.com/tpu/docs/v5p, .../v4; v2/v3: 4 chips per board, 2D like v5e).
_SHAPES_2D = {1: (1, 1), 4: (2, 2), 8: (2, 4), 16: (4, 4), 32: (4, 8), 64: (8, 8), 128: (8, 16), 256: (16, 16)}
_SHAPES_3D = {4: (2, 2, 1), 8: (2, 2, 2), 16: (2, 2, 4), 32: (2, 4, 4), 64: (4, 4, 4), 128: (4, 4, 8),
              256: (4, 8, 8), 512: (8, 8, 8), 1024: (8, 8, 16), 2048: (8, 16, 16), 4096: (16, 16, 16)}

_SLICES = re.compile(r"^(\d+)x(.*[a-z].*)$")  # 2xv5e:2x2: a slice count first
MAX_SLICES = 64  # libtpu takes more, at a process's memory; a bound for typos (2000xv5e:2x2)
_LIBTPU_NAME = re.compile(r"^([a-z0-9]+)[=_:]((?:\d+x)*\d+)(_twisted|_untwisted)?$")
_ACCELERATOR_NAME = re.compile(r"^([a-z0-9]+)-(\d+)$")


@dataclass(frozen=True, order=True)
class Topology:
    """One TPU slice: libtpu's generation name, its chip grid, and a wrap variant."""

    generation: str
    shape: tuple[int, ...]
    variant: str = ""  # "_twisted" / "_untwisted": libtpu's, passed on
    slices: int = 1    # multislice: this many slices of the shape, over DCN

    @property
    def name(self) -> str:
        """libtpu's spelling, ``v5e:2x2``, after the slice count where there are several
        (``2xv5e:2x2``)."""
        prefix = f"{self.slices}x" if self.slices > 1 else ""
        return f"{prefix}{self.slice_name}"

    @property
    def slice_name(self) -> str:
        """One slice, in libtpu's spelling: ``v5e:2x2``."""
        return f"{self.generation}:{'x'.join(map(str, self.shape))}{self.variant}"

    @property
    def chips(self) -> int:
        """Chips in all slices."""
        return math.prod(self.shape) * self.slices

    @property
    def devices(self) -> int:
        """How many devices jax sees in the slice (DEVICES_PER_CHIP)."""
        return self.chips * DEVICES_PER_CHIP[self.generation]

    def __str__(self) -> str:
        return self.name


def parse(name: str, flag: str = "tpu_topology") -> Topology:
    """A topology from libtpu's spelling or a Cloud TPU accelerator type; DriverError naming
    the known generations (with a close match) for anything else. ``NxNAME``: N slices."""
    text = name.strip().lower()
    m = _SLICES.match(text)
    if m:
        import dataclasses

        count = int(m.group(1))
        if not 1 <= count <= MAX_SLICES:
            raise DriverError(f"{param(flag)}: '{name}' asks for {count} slices", hint=f"1 to {MAX_SLICES} slices: "
                              f"2x{m.group(2)}")
        one = parse(m.group(2), flag)
        if one.slices > 1:
            raise DriverError(f"{param(flag)}: '{name}' gives the slice count twice", hint=f"{count}x{one.slice_name}")
        return dataclasses.replace(one, slices=count)
    m = _LIBTPU_NAME.match(text)
    if m:
        generation, dims, variant = m.group(1), m.group(2), m.group(3) or ""
        _known_generation(generation, name, flag)
        shape = tuple(int(d) for d in dims.split("x"))
        rank = GENERATIONS[generation]
        if len(shape) != rank:
            example = "x".join(["2"] * rank)
            raise DriverError(f"{param(flag)}: {generation} slices have {rank} dimensions, '{name}' has "
                              f"{len(shape)}", hint=f"{generation}:{example}")
        if any(d < 1 for d in shape):
            raise DriverError(f"{param(flag)}: every dimension of '{name}' must be 1 or more")
        return Topology(generation, shape, variant)
    m = _ACCELERATOR_NAME.match(text)
    if m and m.group(1) in _ACCELERATOR_TYPES:
        generation, per_chip = _ACCELERATOR_TYPES[m.group(1)]
        count = int(m.group(2))
        shapes = _SHAPES_2D if GENERATIONS[generation] == 2 else _SHAPES_3D
        chips, rest = divmod(count, per_chip)
        if rest or chips not in shapes:
            sizes = ", ".join(f"{m.group(1)}-{c * per_chip}" for c in shapes)
            raise DriverError(f"{param(flag)}: no {generation} slice of {count} "
                              f"{'chips' if per_chip == 1 else 'TensorCores (2 per chip)'} ('{name}')",
                              hint=f"one of {sizes}; or libtpu's spelling, {generation}:SHAPE")
        return Topology(generation, shapes[chips])
    if m:
        _known_generation(m.group(1), name, flag)
    raise DriverError(f"{param(flag)}: '{name}' is not a TPU topology",
                      hint="libtpu's spelling GEN:SHAPE (v5e:2x2, v5p:2x2x1, tpu7x:2x2x1) or an accelerator "
                           "type (v5litepod-16, v6e-8, v5p-128), 2xNAME for 2 slices; generations: "
                           + ", ".join(GENERATIONS))


def _known_generation(generation: str, name: str, flag: str) -> None:
    if generation in GENERATIONS:
        return
    choices = [*GENERATIONS, *_ACCELERATOR_TYPES]
    close = did_you_mean(generation, choices)
    raise DriverError(f"{param(flag)}: unknown TPU generation '{generation}' in '{name}'",
                      hint=(close + "; " if close else "") + "generations: " + ", ".join(GENERATIONS))


def parse_list(text: str, flag: str = "tpu_topology") -> list[Topology]:
    """``a,b``: one topology each, in order, duplicates once."""
    names = [t.strip() for t in text.split(",")]
    if not all(names):
        raise DriverError(f"{param(flag)}: '{text}' names an empty topology", hint="A or A,B")
    return list(dict.fromkeys(parse(n, flag) for n in names))
