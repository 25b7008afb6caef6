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
a parameter, by its number; a computation's root, by its opcode (the trip makes a
returned tuple ``tuple.N``); a ``constant.N`` equal in shape and value to an original constant of the same
computation not yet claimed (the first, in the original's order); the entry computation,
one named ``<original>.<N>``, and one an original instruction of the same opcode calls in
the place of the original's (a reduction's ``to_apply``, which the trip makes
``region_N.M``).
Instructions are renamed only in the computations that stand for the original's (a
computation a pass made keeps XLA's names). An ``op_name`` that names an instruction of the
original (the exporter's, or one a pass copied from it) becomes that instruction's own
``op_name`` in the original (none where it had none), and an instruction given its name
back gets its source place back whole (the trip keeps file and lines, not columns): with
:func:`tag`, the trip's metadata is undone everywhere. A name already taken in the module is never given twice.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from . import hlo_proto

_SUFFIX = re.compile(r"^(.*)\.(\d+)$")
_SOURCE_FIELDS = ("source_file", "source_line", "source_end_line", "source_column", "source_end_column")


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
    roots = {c.name: next(((i.name, i.opcode) for i in c.instructions if i.id == c.root_id), ("", ""))
             for c in orig.computations}
    op_names: dict[str, str] = {}  # instruction name -> its op_name in the original
    sources: dict[str, Any] = {}  # instruction name -> its metadata in the original
    called: dict[str, tuple[str, list[str]]] = {}  # instruction name -> its opcode, the names it calls
    constants: dict[tuple[str, bytes, bytes], list[str]] = defaultdict(list)
    for c in orig.computations:
        for i in c.instructions:
            op_names[i.name] = i.metadata.op_name
            sources[i.name] = i.metadata
            called[i.name] = (i.opcode, [orig_by_id[k].name for k in i.called_computation_ids if k in orig_by_id])
            if i.opcode == "constant":
                constants[(c.name, i.shape.SerializeToString(deterministic=True),
                           i.literal.SerializeToString(deterministic=True))].append(i.name)

    res_by_id = {c.id: c for c in res.computations}
    # The computations that stand for the original's, each with the original's name: the
    # entry, those an original instruction calls in the place of what it called (found as
    # their callers are), then one named <original>[.N] that no call placed.
    mapping: dict[int, str] = {}
    plan: list[tuple[Any, str]] = []  # (instruction, the original's name for it)
    claimed: set[str] = set()

    def visit(start: list[tuple[int, str]]) -> None:
        work = list(start)
        while work:
            cid, want = work.pop(0)
            c = res_by_id.get(cid)
            if c is None or cid in mapping or want in mapping.values() or want not in orig_comps:
                continue
            mapping[cid] = want
            for i in c.instructions:
                op = i.metadata.op_name
                target = None
                if i.opcode == "parameter":  # by number: a region's block arguments take their op's name
                    target = orig_params[want].get(i.parameter_number)
                elif op in op_names and _base(i.name) is not None and _base(i.name) in (op, _base(op)):
                    # the exporter's '<op_name>.N' ('out.1' comes back 'out.7')
                    target = op
                elif i.id == c.root_id and i.opcode == roots[want][1] and roots[want][0] not in claimed:
                    target = roots[want][0]  # a tuple the trip made of a return: the original's root
                elif i.opcode == "constant" and re.fullmatch(r"constant\.\d+", i.name):
                    key = (want, i.shape.SerializeToString(deterministic=True),
                           i.literal.SerializeToString(deterministic=True))
                    unclaimed = [n for n in constants.get(key, ()) if n not in claimed]
                    target = unclaimed[0] if unclaimed else None
                if target is not None and target not in claimed:
                    claimed.add(target)
                    plan.append((i, target))
                opcode, calls = called.get(target or i.name, ("", []))
                # What the same op calls stands for what it called (a fusion that took the
                # name of the reduce it holds calls something else).
                if opcode == i.opcode and len(calls) == len(i.called_computation_ids):
                    work += list(zip(i.called_computation_ids, calls))

    visit([(res.entry_computation_id, orig_entry)])
    visit([(c.id, c.name if c.name in orig_comps else _base(c.name) or "") for c in res.computations
           if c.id not in mapping])
    # Renamed all at once: the exporter may have given one computation or instruction the
    # name another had (all-gather.1 -> all-gather.3 while all-gather.3 -> all-gather.5).
    comp_renames = [(c, mapping[c.id]) for c in res.computations if c.id in mapping]
    for c, name in _all_at_once(comp_renames, {c.name for c in res.computations if c.id not in mapping}):
        c.name = name
    res.entry_computation_name = res_by_id[res.entry_computation_id].name \
        if res.entry_computation_id in res_by_id else res.entry_computation_name
    moving = {id(i) for i, _ in plan}
    taken = {i.name for c in res.computations for i in c.instructions if id(i) not in moving}
    wanted = {id(i): target for i, target in plan}
    for i, name in _all_at_once(plan, taken):
        if name == wanted[id(i)]:
            # The trip keeps a location's file and lines, not its columns: the original's back
            for f in _SOURCE_FIELDS:
                value = getattr(sources[name], f)
                if value or i.HasField("metadata"):
                    setattr(i.metadata, f, value)
        i.name = name
    for c in res.computations:
        if c.id in mapping:
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


def _all_at_once(renames: list[tuple[Any, str]], taken: set[str]) -> list[tuple[Any, str]]:
    """(thing, its name) for each of ``renames`` (things with a ``name``, and the name wanted),
    none given a name in ``taken`` or one another has: a thing whose name is taken keeps its
    own, or a fresh one where another thing took that, as XLA's name uniquer would."""
    taken = set(taken)
    wanted = {name for _, name in renames}
    out = []
    for thing, want in renames:
        if want not in taken:
            taken.add(want)
            out.append((thing, want))
            continue
        name, base, k = thing.name, _base(thing.name) or thing.name, 1
        while name in taken or (name in wanted and name != want):
            name, k = f"{base}.{k}", k + 1
        taken.add(name)
        out.append((thing, name))
    return out
