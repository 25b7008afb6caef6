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
(the exporter drops the name's own ``.<N>``: ``out.1`` comes back ``out.7``)
(so an instruction a pass made, even one that copied such metadata, keeps XLA's name);
a parameter, by its number; a ``constant.N`` equal in shape and value to an original constant of the same
computation not yet claimed (the first, in the original's order); the entry computation,
one named ``<original>.<N>``, and one an original instruction of the same opcode calls in
the place of the original's (a reduction's ``to_apply``, which the trip makes
``region_N.M``).
Instructions are renamed only in the computations that stand for the original's (a
computation a pass made keeps XLA's names). An ``op_name`` that names an instruction of the
original (the exporter's, or one a pass copied from it) becomes that instruction's own
``op_name`` in the original (none where it had none): with :func:`tag`, the trip's
metadata is undone everywhere. A name already taken in the module is never given twice.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

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
    orig_by_id = {c.id: c for c in orig.computations}
    orig_entry = orig_by_id[orig.entry_computation_id].name if orig.entry_computation_id in orig_by_id \
        else orig.entry_computation_name
    orig_comps = {c.name: c for c in orig.computations}
    orig_params = {c.name: {i.parameter_number: i.name for i in c.instructions if i.opcode == "parameter"}
                   for c in orig.computations}
    op_names: dict[str, str] = {}  # instruction name -> its op_name in the original
    called: dict[str, tuple[str, list[str]]] = {}  # instruction name -> its opcode, the names it calls
    constants: dict[tuple[str, bytes, bytes], list[str]] = defaultdict(list)
    for c in orig.computations:
        for i in c.instructions:
            op_names[i.name] = i.metadata.op_name
            called[i.name] = (i.opcode, [orig_by_id[k].name for k in i.called_computation_ids if k in orig_by_id])
            if i.opcode == "constant":
                constants[(c.name, i.shape.SerializeToString(deterministic=True),
                           i.literal.SerializeToString(deterministic=True))].append(i.name)

    res_by_id = {c.id: c for c in res.computations}
    comp_names = {c.name for c in res.computations}
    # The computations that stand for the original's: the entry, one named <original>[.N],
    # and (found as their callers are) the ones an original instruction calls, in its place.
    work: list[tuple[int, str]] = [(res.entry_computation_id, orig_entry)]
    for c in res.computations:
        base = c.name if c.name in orig_comps else _base(c.name)
        if base in orig_comps and c.id != res.entry_computation_id:
            work.append((c.id, base))
    done: set[int] = set()
    matched: list[Any] = []
    plan: list[tuple[Any, str]] = []  # (instruction, the original's name for it)
    claimed: set[str] = set()
    while work:
        cid, want = work.pop(0)
        c = res_by_id.get(cid)
        if c is None or cid in done:
            continue
        done.add(cid)
        if want != c.name and want not in comp_names:
            comp_names.discard(c.name)
            comp_names.add(want)
            c.name = want
            if cid == res.entry_computation_id:
                res.entry_computation_name = want
        if c.name not in orig_comps:
            continue
        matched.append(c)
        for i in c.instructions:
            op = i.metadata.op_name
            target = None
            if i.opcode == "parameter":  # by number: a region's block arguments take their op's name
                target = orig_params[c.name].get(i.parameter_number)
            elif op in op_names and _base(i.name) in (op, _base(op)):  # 'out.1' comes back 'out.7'
                target = op
            elif i.opcode == "constant" and re.fullmatch(r"constant\.\d+", i.name):
                key = (c.name, i.shape.SerializeToString(deterministic=True),
                       i.literal.SerializeToString(deterministic=True))
                unclaimed = [n for n in constants.get(key, ()) if n not in claimed]
                target = unclaimed[0] if unclaimed else None
            if target is not None and target not in claimed:
                claimed.add(target)
                plan.append((i, target))
            opcode, calls = called.get(target or i.name, ("", []))
            # What the same op calls stands for what it called (a fusion that took the name
            # of the reduce it holds calls something else).
            if opcode == i.opcode and len(calls) == len(i.called_computation_ids):
                work += [(k, name) for k, name in zip(i.called_computation_ids, calls) if k not in done]
    # Renamed all at once: the exporter may have given one instruction the name another had
    # (all-gather.1 -> all-gather.3 while all-gather.3 -> all-gather.5).
    moving = {id(i) for i, _ in plan}
    taken = {i.name for c in res.computations for i in c.instructions if id(i) not in moving}
    wanted = {target for _, target in plan}
    for i, target in plan:
        if target not in taken:
            taken.add(target)
            i.name = target
            continue
        # An instruction XLA made holds the name: this one keeps XLA's, unless that is
        # another's by now; then a fresh one, as XLA's name uniquer would make.
        name, base, k = i.name, _base(i.name) or i.name, 1
        while name in taken or (name in wanted and name != target):
            name, k = f"{base}.{k}", k + 1
        taken.add(name)
        i.name = name
    for c in matched:
        params = {i.parameter_number: i.name for i in c.instructions if i.opcode == "parameter"}
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
