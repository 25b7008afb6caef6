"""The user's names back on a module that went HLO -> StableHLO -> HLO.

jaxlib compiles only MLIR, so XLA sees an HLO module the driver wrote as StableHLO,
which XLA's exporter turns back into HLO under names of its own: an instruction ``x``
becomes ``x.1`` with ``metadata={op_name="x"}`` (the importer keeps the name as the op's
location, the exporter makes it the base of a new unique name and the op_name); a
constant becomes ``constant.N`` (its location is dropped); the entry computation
becomes ``main.N``. :func:`restore_names` undoes that on XLA's output, as XLA's own
``hlo-opt``, which never leaves HLO, would print it.

Promises: only names XLA's exporter made are changed: an instruction named
``<op_name>.<N>`` whose ``op_name`` is one of the original module's instruction names
(so an instruction a pass made, even one that copied such metadata, keeps XLA's name);
a ``constant.N`` equal in shape and value to an original constant of the same
computation not yet claimed (the first, in the original's order); a computation named
``<original>.<N>``, and the entry computation. Instructions are renamed only in the
computations that stand for the original's (a computation a pass made, or the import of
a fusion's, keeps XLA's names). An ``op_name`` that names an instruction of the
original (the exporter's, or one a pass copied from it) becomes that instruction's own
``op_name`` in the original (none where it had none): with :func:`tag`, the trip's
metadata is undone everywhere. A name already taken in the module is never given twice.
"""

from __future__ import annotations

import re
from collections import defaultdict

from . import hlo_proto

_SUFFIX = re.compile(r"^(.*)\.(\d+)$")


def _base(name: str) -> str | None:
    m = _SUFFIX.match(name)
    return m.group(1) if m else None


def tag(proto: bytes) -> bytes:
    """``proto`` with each instruction's ``op_name`` set to its name, for the trip through
    StableHLO: XLA's importer makes an instruction's ``op_name`` (its name where it has
    none) the op's location, and the exporter names the instruction after that, so a
    tagged module comes back as ``<name>.<N>`` for every instruction, whatever its
    metadata said. :func:`restore_names` puts the original ``op_name`` back."""
    msg = hlo_proto.decode(proto)
    for c in msg.computations:
        for i in c.instructions:
            i.metadata.op_name = i.name
    return hlo_proto.encode(msg)


def restore_names(result: bytes, original: bytes) -> bytes:
    """``result`` (a serialized HloModuleProto made by XLA from ``original`` through
    StableHLO) with ``original``'s instruction and computation names where XLA's
    exporter replaced them."""
    orig = hlo_proto.decode(original)
    res = hlo_proto.decode(result)
    orig_entry = next((c.name for c in orig.computations if c.id == orig.entry_computation_id),
                      orig.entry_computation_name)
    orig_comps = {c.name for c in orig.computations}
    op_names: dict[str, str] = {}  # instruction name -> its op_name in the original
    constants: dict[tuple[str, bytes, bytes], list[str]] = defaultdict(list)
    for c in orig.computations:
        for i in c.instructions:
            op_names[i.name] = i.metadata.op_name
            if i.opcode == "constant":
                constants[(c.name, i.shape.SerializeToString(deterministic=True),
                           i.literal.SerializeToString(deterministic=True))].append(i.name)

    comp_names = {c.name for c in res.computations}
    comp_new: dict[int, str] = {}
    for c in res.computations:
        want = orig_entry if c.id == res.entry_computation_id else _base(c.name)
        if want and want != c.name and want in orig_comps and want not in comp_names:
            comp_names.discard(c.name)
            comp_names.add(want)
            comp_new[c.id] = want
    used = {i.name for c in res.computations for i in c.instructions}
    for c in res.computations:
        if c.id in comp_new:
            c.name = comp_new[c.id]
            if c.id == res.entry_computation_id:
                res.entry_computation_name = c.name
        if c.name not in orig_comps:
            continue  # a computation a pass made (or the import of one): XLA's names stand
        params: dict[int, str] = {}
        for i in c.instructions:
            op = i.metadata.op_name
            target = None
            if op in op_names and _base(i.name) == op:
                target = op
            elif i.opcode == "constant" and re.fullmatch(r"constant\.\d+", i.name):
                key = (c.name, i.shape.SerializeToString(deterministic=True),
                       i.literal.SerializeToString(deterministic=True))
                unclaimed = [n for n in constants.get(key, ()) if n not in used]
                target = unclaimed[0] if unclaimed else None
            if target is not None and target not in used:
                used.discard(i.name)
                used.add(target)
                i.name = target
            if i.opcode == "parameter":
                params[i.parameter_number] = i.name
        names = c.program_shape.parameter_names
        for k in range(len(names)):
            if k in params:
                names[k] = params[k]
    # The op_names the trip set (tagged names, copied by the passes onto what they made too):
    # the original's op_name of that instruction back, or none.
    for c in res.computations:
        for i in c.instructions:
            if i.HasField("metadata") and i.metadata.op_name in op_names:
                i.metadata.op_name = op_names[i.metadata.op_name]
                if not i.metadata.ListFields():
                    i.ClearField("metadata")
    return hlo_proto.encode(res)
