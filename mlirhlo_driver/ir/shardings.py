"""HLO shardings as plain data, in every spelling XLA writes, read from XLA's OpSharding.

XLA spells a sharding many ways: ``{replicated}``, ``{maximal device=N}``,
``{manual}``, tiles over a device list (``{devices=[2,2]1,0,3,2}``) or an iota
(``{devices=[4,1]<=[4]}``, ``{devices=[2,2]<=[2,2]T(1,0)}``), partly replicated
or manual (``last_tile_dim_replicate``, ``last_tile_dims={manual}``), tuples, and,
from jaxlib 0.12, named mesh shardings (XLA's HloShardingV3, Shardy's model), as
jax 0.12 writes them: ``{mesh['x'=2,'y'=2], [{'x'}, {}], replicated={'y'}}``, with
sub-axes (``'x':(2)2``), a device order (``device_ids=(3,2,1,0)``), and
``manual``/``unreduced`` axes. :class:`Sharding` holds any of them as one tile
assignment: a grid of device ids with one axis per data dimension, then one per
subgroup (replicated, manual, unreduced). That is what laying values out needs.

Promises:

* Text is read by XLA's own parser, run in the isolate helper (:func:`parse`):
  it CHECK-fails on some named shardings (an axis used twice), and
  ``HloSharding.subgroup_types()`` aborts the process for every named sharding.
  No HloSharding is asked anything in this process: what the parser built comes
  back as a serialized OpSharding, read here (:func:`from_bytes`) with the
  descriptors compiled into jaxlib (ir/protos.py).
* A named sharding's tile assignment is the one XLA derives: mesh axes (split
  into the sub-axes any dimension names) transposed so that each dimension's
  axes come first, in its order, then the manual, unreduced and replicated ones.
* :attr:`Sharding.text` is the spelling given to :func:`parse`, or XLA's spelling
  of a proto (the form ``HloSharding``'s ``ToString`` prints).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Refused", "Sharding", "devices_named", "from_bytes", "from_proto", "parse"]

KINDS = ("replicated", "maximal", "manual", "unknown", "unreduced", "tiled", "tuple")
# OpSharding.Type numbers (xla_data.proto): the same in every supported jaxlib.
_TYPES = {0: "replicated", 1: "maximal", 2: "tuple", 3: "tiled", 4: "manual", 5: "unknown", 6: "unreduced"}


@dataclass(frozen=True)
class Sharding:
    """One sharding. ``kind`` is one of :data:`KINDS`.

    ``tiled``: ``dims`` is the tile assignment's shape (tiles per data dimension,
    then one axis per entry of ``subgroups``: "replicated", "manual" or
    "unreduced"), ``devices`` its device ids in row-major order. ``maximal``:
    ``devices`` is the one device. ``tuple``: ``elements``. A named sharding keeps
    its mesh as ``mesh`` ((axis, size) pairs), whatever its kind.
    """

    kind: str
    text: str
    dims: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    subgroups: tuple[str, ...] = ()
    elements: tuple[Sharding, ...] = ()
    mesh: tuple[tuple[str, int], ...] | None = None

    @property
    def named(self) -> bool:
        """Written as a named mesh sharding (HloShardingV3)."""
        return self.mesh is not None

    @property
    def rank(self) -> int:
        """The number of data dimensions a tiled sharding tiles."""
        return len(self.dims) - len(self.subgroups)

    @property
    def tile_counts(self) -> tuple[int, ...]:
        return self.dims[: self.rank]

    @property
    def mesh_devices(self) -> int:
        """How many devices a named sharding's mesh has (1 for no mesh)."""
        return math.prod(n for _, n in self.mesh or ())

    def subgroup(self, kind: str) -> int:
        """The size of the ``kind`` subgroup (1 if there is none)."""
        return math.prod(n for n, k in zip(self.dims[self.rank:], self.subgroups) if k == kind)

    def grid(self) -> Any:
        """The tile assignment as a numpy array of device ids, shaped ``dims``."""
        import numpy as np

        return np.asarray(self.devices, dtype=np.int64).reshape(self.dims)

    def with_text(self, text: str) -> Sharding:
        from dataclasses import replace

        return replace(self, text=text)


@dataclass(frozen=True)
class Refused:
    """A text XLA's parser refused: its message and the 1-based column (None: unknown)."""

    message: str
    column: int | None = None


# ------------------------------------------------------------------ protos

def from_bytes(data: bytes, text: str | None = None) -> Sharding:
    """A Sharding from a serialized OpSharding (``text``: the spelling to keep)."""
    from . import protos

    return from_proto(protos.decode(data, "xla.OpSharding", what="OpSharding"), text)


def from_proto(msg: Any, text: str | None = None) -> Sharding:
    """A Sharding from an ``xla.OpSharding`` message (ir/protos.py's classes)."""
    if _has(msg, "named_sharding"):
        s = _from_named(msg.named_sharding)
    else:
        kind = _TYPES.get(msg.type, "unknown")
        if kind == "tuple":
            s = Sharding("tuple", "", elements=tuple(from_proto(e) for e in msg.tuple_shardings))
        elif kind == "maximal":
            s = Sharding("maximal", "", devices=tuple(int(d) for d in msg.tile_assignment_devices[:1]))
        elif kind == "tiled":
            dims = tuple(int(d) for d in msg.tile_assignment_dimensions)
            devices = (tuple(int(d) for d in msg.tile_assignment_devices) if len(msg.tile_assignment_devices)
                       else _iota(dims, list(msg.iota_reshape_dims), list(msg.iota_transpose_perm)))
            if msg.replicate_on_last_tile_dim:
                subgroups: tuple[str, ...] = ("replicated",)
            else:
                subgroups = tuple(_TYPES.get(t, "unknown") for t in msg.last_tile_dims)
            s = Sharding("tiled", "", dims, devices, subgroups)
        else:
            s = Sharding(kind, "")
    return s.with_text(text if text is not None else _spelling(msg))


def _has(msg: Any, name: str) -> bool:
    """Whether ``msg`` sets field ``name`` (False where this jaxlib's schema has no such field)."""
    try:
        return msg.HasField(name)
    except ValueError:
        return False


def _iota(dims: tuple[int, ...], reshape: list[int], perm: list[int]) -> tuple[int, ...]:
    """The device ids of an iota tile assignment: ``iota(prod(reshape))``, reshaped, transposed."""
    import numpy as np

    n = math.prod(dims)
    reshape = reshape or [n]
    ids = np.arange(math.prod(reshape)).reshape(reshape)
    if perm:
        ids = ids.transpose(perm)
    return tuple(int(d) for d in ids.reshape(-1))


def _from_named(named: Any) -> Sharding:
    """A named mesh sharding (NamedShardingProto) as a tile assignment."""
    import numpy as np

    axes = [(a.name, int(a.size)) for a in named.mesh.axes]
    sizes = [n for _, n in axes]
    count = math.prod(sizes)
    mesh = named.mesh
    if len(mesh.device_ids):
        ids = np.asarray(list(mesh.device_ids), dtype=np.int64)
    elif _has(mesh, "iota_transform"):
        ids = np.asarray(_iota((count,), list(mesh.iota_transform.reshape_dims),
                               list(mesh.iota_transform.transpose_perm)), dtype=np.int64)
    else:
        ids = np.arange(count, dtype=np.int64)
    dims_refs = [list(d.axes) for d in named.dim_shardings]
    groups = {"manual": list(named.manual_axes), "unreduced": list(named.unreduced_axes)}
    # Split each mesh axis at every sub-axis boundary any reference names: ``'x':(pre)size``
    # is the part of x after the ``pre`` major elements, ``size`` long.
    cuts: list[set[int]] = [{1, n} for n in sizes]
    every_ref = [r for refs in dims_refs for r in refs] + [r for refs in groups.values() for r in refs] \
        + list(named.replicated_axes)
    for r in every_ref:
        if _has(r, "sub_axis_info"):
            pre, size = int(r.sub_axis_info.pre_size), int(r.sub_axis_info.size)
            cuts[r.mesh_axis_index] |= {pre, pre * size}
    factors: list[list[tuple[int, int, int]]] = []  # per axis: (from, to, size) of each piece, major first
    flat = 0
    for c in cuts:
        marks = sorted(c)
        pieces = []
        for lo, hi in zip(marks, marks[1:]):
            pieces.append((lo, hi, flat))
            flat += 1
        factors.append(pieces)
    piece_sizes = [hi // lo for pieces in factors for lo, hi, _ in pieces]
    grid = ids.reshape(piece_sizes) if piece_sizes else ids.reshape(())

    def pieces_of(r: Any) -> list[int]:
        axis = factors[r.mesh_axis_index]
        if not _has(r, "sub_axis_info"):
            return [k for _, _, k in axis]
        lo, hi = int(r.sub_axis_info.pre_size), int(r.sub_axis_info.pre_size) * int(r.sub_axis_info.size)
        return [k for a, b, k in axis if a >= lo and b <= hi]

    order: list[int] = []
    tile_dims: list[int] = []
    for refs in dims_refs:
        mine = [k for r in refs for k in pieces_of(r)]
        order += mine
        tile_dims.append(math.prod(piece_sizes[k] for k in mine))
    sub_dims: list[int] = []
    subgroups: list[str] = []
    for kind, refs in groups.items():
        mine = [k for r in refs for k in pieces_of(r)]
        if math.prod(piece_sizes[k] for k in mine) > 1:
            order += mine
            sub_dims.append(math.prod(piece_sizes[k] for k in mine))
            subgroups.append(kind)
    rest = [k for k in range(len(piece_sizes)) if k not in order]
    if math.prod(piece_sizes[k] for k in rest) > 1:
        order += rest
        sub_dims.append(math.prod(piece_sizes[k] for k in rest))
        subgroups.append("replicated")
    else:
        order += rest
    mesh_axes = tuple(axes)
    devices = tuple(int(d) for d in grid.transpose(order).reshape(-1)) if piece_sizes else (int(ids[0]),)
    if all(t == 1 for t in tile_dims) and subgroups in ([], ["replicated"]):
        return Sharding("replicated", "", mesh=mesh_axes)
    if all(t == 1 for t in tile_dims) and subgroups == ["manual"]:
        return Sharding("manual", "", mesh=mesh_axes, devices=devices)
    return Sharding("tiled", "", tuple(tile_dims + sub_dims), devices, tuple(subgroups), mesh=mesh_axes)


def devices_named(module_proto: bytes) -> int:
    """The most devices any sharding of an HloModuleProto's instructions names (a tile
    assignment's, a named sharding's mesh, a maximal sharding's device + 1); 1 if none does.
    A binary HLO module has no header saying how many partitions it is for: this says."""
    from . import hlo_proto

    module = hlo_proto.decode(module_proto)
    most = 1

    def count(s: Sharding) -> int:
        if s.kind == "tuple":
            return max([count(e) for e in s.elements] + [1])
        if s.kind == "maximal":
            return (s.devices[0] + 1) if s.devices else 1
        return max(len(s.devices), s.mesh_devices)

    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.HasField("sharding"):
                most = max(most, count(from_proto(instruction.sharding, "")))
    return most


# ------------------------------------------------------------------ spelling

def _spelling(msg: Any) -> str:
    """XLA's spelling of an OpSharding (HloSharding::ToString's forms)."""
    if _has(msg, "named_sharding"):
        return "{" + _named_spelling(msg.named_sharding) + "}"
    kind = _TYPES.get(msg.type, "unknown")
    if kind == "tuple":
        return "{" + ", ".join(_spelling(e) for e in msg.tuple_shardings) + "}"
    if kind == "maximal":
        return "{maximal device=%d}" % (msg.tile_assignment_devices[0] if msg.tile_assignment_devices else 0)
    if kind != "tiled":
        return "{" + kind + "}"
    dims = ",".join(str(d) for d in msg.tile_assignment_dimensions)
    if len(msg.tile_assignment_devices):
        assignment = ",".join(str(d) for d in msg.tile_assignment_devices)
    else:
        reshape = list(msg.iota_reshape_dims) or [math.prod(msg.tile_assignment_dimensions)]
        perm = list(msg.iota_transpose_perm)
        assignment = "<=[" + ",".join(str(d) for d in reshape) + "]"
        if perm and perm != sorted(perm):
            assignment += "T(" + ",".join(str(p) for p in perm) + ")"
    suffix = ""
    kinds = [_TYPES.get(t, "unknown") for t in msg.last_tile_dims]
    if msg.replicate_on_last_tile_dim or kinds == ["replicated"]:
        suffix = " last_tile_dim_replicate"
    elif kinds:
        suffix = " last_tile_dims={" + ", ".join(kinds) + "}"
    return "{devices=[" + dims + "]" + assignment + suffix + "}"


def _named_spelling(named: Any) -> str:
    names = [a.name for a in named.mesh.axes]
    mesh = "mesh[" + ",".join(f"'{a.name}'={a.size}" for a in named.mesh.axes) + "]"
    parts = [mesh]
    if len(named.mesh.device_ids):
        parts.append("device_ids=(" + ",".join(str(d) for d in named.mesh.device_ids) + ")")

    def ref(r: Any) -> str:
        name = f"'{names[r.mesh_axis_index]}'" if r.mesh_axis_index < len(names) else str(r.mesh_axis_index)
        if _has(r, "sub_axis_info"):
            name += f":({r.sub_axis_info.pre_size}){r.sub_axis_info.size}"
        return name

    def refs(rs: Any) -> str:
        return "{" + ", ".join(ref(r) for r in rs) + "}"

    all_manual = len(named.manual_axes) == len(names) and not len(named.dim_shardings) and len(names)
    if all_manual:
        parts.append("manual")
    elif not len(named.dim_shardings):
        parts.append("replicated")
    else:
        dims = []
        for d in named.dim_shardings:
            words = [ref(r) for r in d.axes] + ([] if d.is_closed else ["?"])
            dims.append("{" + ", ".join(words) + "}")
        parts.append("[" + ", ".join(dims) + "]")
    for key, field_name in (("replicated", "replicated_axes"), ("unreduced", "unreduced_axes"),
                            ("manual", "manual_axes")):
        values = getattr(named, field_name)
        if len(values) and not (key == "manual" and all_manual):
            parts.append(f"{key}={refs(values)}")
    return ", ".join(parts)


# ------------------------------------------------------------------ text

def parse(texts: Sequence[str]) -> list[Sharding | Refused]:
    """Each text read by XLA's parser (in the isolate helper): a :class:`Sharding` keeping
    the text as given, or :class:`Refused` with XLA's message (and column). A text the
    parser dies on is Refused too, its message the parser's last words."""
    unique = list(dict.fromkeys(texts))
    found = dict(zip(unique, _parse_isolated(unique))) if unique else {}
    out: list[Sharding | Refused] = []
    for t in texts:
        r = found[t]
        if not isinstance(r, Refused):
            r = from_bytes(r, t)
            why = _inconsistency(r)
            r = Refused(why) if why else r
        out.append(r)
    return out


def _inconsistency(s: Sharding) -> str:
    """What makes a sharding XLA's parser accepted unusable ("" if nothing): older parsers
    (jaxlib 0.9) take device lists shorter than the tile assignment, repeated devices and
    negative ones, which the compile would then trip over."""
    if s.kind == "tuple":
        return next((w for w in map(_inconsistency, s.elements) if w), "")
    if s.kind == "maximal" and s.devices and s.devices[0] < 0:
        return f"device {s.devices[0]} is not a device"
    if s.kind != "tiled":
        return ""
    if math.prod(s.dims) != len(s.devices):
        return (f"the tile assignment [{','.join(map(str, s.dims))}] has {math.prod(s.dims)} places for "
                f"{len(s.devices)} devices")
    seen: set[int] = set()
    for d in s.devices:
        if d < 0:
            return f"device {d} is not a device"
        if d in seen:
            return f"device {d} appears twice in the tile assignment"
        seen.add(d)
    return ""


def _parse_isolated(texts: list[str]) -> list[bytes | Refused]:
    from .._native import isolate
    from .._native import jaxlib as _jaxlib
    from ..errors import NativeCrash

    try:
        got = isolate.call(_jaxlib.sharding_protos, (texts,), what="XLA's sharding parser",
                           preload=_jaxlib.ISOLATED_PRELOAD, on_stderr=_discard)
    except NativeCrash as e:
        if len(texts) == 1:
            return [Refused(e.message)]
        half = len(texts) // 2  # find the texts that kill it, in halves
        return _parse_isolated(texts[:half]) + _parse_isolated(texts[half:])
    return [g if isinstance(g, bytes) else Refused(*g) for g in got]


def _discard(_text: str) -> None:
    """XLA's parser logs nothing worth showing: its refusals come back as values."""
