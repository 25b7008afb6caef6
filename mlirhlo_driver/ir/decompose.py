"""Rewrites of an ``HloModuleProto`` that XLA's tools make before running a module.

- ``isolate_instructions``: each instruction of the entry computation as a
  module of its own, its operands turned into parameters (XLA's
  ``ExtractInstructionIntoNewModule`` / ``DecomposeHloModule``, used by
  ``run_hlo_module --isolate_instructions``).
- ``remove_infeed_outfeed``: infeed gives zeros, outfeed does nothing (XLA's
  ``HloControlFlowFlattening`` with ``remove_infeed_outfeed``, which
  ``multihost_hlo_runner`` applies by default).

Both work on the protobuf (ir/hlo_proto.py); the results are HloModuleProto bytes
that the usual HLO loader turns into StableHLO.
"""

from __future__ import annotations

import copy
from typing import Any

# XLA's decomposer skips these: they cannot run without what produces their operands.
_NOT_ISOLATED = frozenset({"parameter", "constant", "get-tuple-element", "tuple"})


def _called_closure(msg: Any, roots: list[int]) -> list[Any]:
    """The computations ``roots`` call, transitively, callees first."""
    by_id = {c.id: c for c in msg.computations}
    seen: set[int] = set()
    order: list[Any] = []

    def visit(cid: int) -> None:
        if cid in seen or cid not in by_id:
            return
        seen.add(cid)
        for ins in by_id[cid].instructions:
            for callee in ins.called_computation_ids:
                visit(callee)
        order.append(by_id[cid])

    for r in roots:
        visit(r)
    return order


def _dedup_key(ins: Any, operand_shapes: list[Any], callees: list[Any]) -> bytes:
    """What makes two extracted modules the same, names and ids aside (XLA
    compares module fingerprints, which leave names out)."""
    probe = copy.deepcopy(ins)
    for f in ("name", "id", "metadata", "operand_ids", "called_computation_ids", "control_predecessor_ids"):
        probe.ClearField(f)
    parts = [probe.SerializeToString(deterministic=True)]
    parts += [s.SerializeToString(deterministic=True) for s in operand_shapes]
    for c in callees:  # the bodies of called computations, without their names
        for i in c.instructions:
            body = copy.deepcopy(i)
            for f in ("name", "metadata"):
                body.ClearField(f)
            parts.append(body.SerializeToString(deterministic=True))
    return b"\0".join(parts)


def isolate_instructions(proto: bytes) -> list[tuple[str, bytes]]:
    """(instruction name, HloModuleProto) for each instruction of the entry
    computation worth running alone, in program order; duplicates (same op,
    shapes and attributes) appear once, under the first one's name."""
    from . import hlo_proto

    msg = hlo_proto.decode(proto)
    entry = hlo_proto.entry_computation(msg)
    by_id = {i.id: i for i in entry.instructions}
    new_cid = max((c.id for c in msg.computations), default=0) + 1
    out: list[tuple[str, bytes]] = []
    seen: set[bytes] = set()
    for ins in entry.instructions:
        if ins.opcode in _NOT_ISOLATED:
            continue
        operands = [by_id[o] for o in ins.operand_ids]
        callees = _called_closure(msg, list(ins.called_computation_ids))
        key = _dedup_key(ins, [o.shape for o in operands], callees)
        if key in seen:
            continue
        seen.add(key)
        m = instruction_module(msg, ins, operands, callees, new_cid, ins.name)
        out.append((ins.name, hlo_proto.encode(m)))
    return out


def instruction_module(msg: Any, ins: Any, operands: list[Any], callees: list[Any], new_cid: int,
                       name: str, *, numbered_params: bool = False) -> Any:
    """An HloModuleProto named ``name`` whose entry runs ``ins`` of ``msg`` alone: its
    ``operands`` become parameters (named as the operands, or ``p0, p1, ...`` with
    ``numbered_params``: an operand used twice is two parameters), ``callees`` (the
    computations it calls) come along, and so does ``msg``'s stack frame index, which
    metadata points into."""
    from . import hlo_proto

    m = hlo_proto.message_class("HloModuleProto")()
    m.name = name
    m.id = msg.id
    if msg.HasField("stack_frame_index"):
        m.stack_frame_index.CopyFrom(msg.stack_frame_index)
    for c in callees:
        m.computations.add().CopyFrom(c)
    comp = m.computations.add()
    comp.name = "entry_computation"
    comp.id = new_cid
    # XLA wants instruction names unique in the module: a numbered name a callee
    # already uses (its own p0) gets a suffix.
    taken = {i.name for c in callees for i in c.instructions} | {ins.name}
    for k, o in enumerate(operands):
        p = comp.instructions.add()
        p.name = f"p{k}" if numbered_params else o.name
        while numbered_params and p.name in taken:
            p.name += "_"
        p.opcode, p.parameter_number, p.id = "parameter", k, (new_cid << 32) + k
        p.shape.CopyFrom(o.shape)
        comp.program_shape.parameters.add().CopyFrom(o.shape)
        comp.program_shape.parameter_names.append(p.name)
    clone = comp.instructions.add()
    clone.CopyFrom(ins)
    clone.id = (new_cid << 32) + len(operands)
    del clone.operand_ids[:]
    clone.operand_ids.extend((new_cid << 32) + k for k in range(len(operands)))
    del clone.control_predecessor_ids[:]
    comp.root_id = clone.id
    comp.program_shape.result.CopyFrom(ins.shape)
    m.entry_computation_name = comp.name
    m.entry_computation_id = comp.id
    m.host_program_shape.CopyFrom(comp.program_shape)
    return m


def has_infeed_outfeed(proto: bytes) -> bool:
    from . import hlo_proto

    msg = hlo_proto.decode(proto)
    return any(i.opcode in ("infeed", "outfeed") for c in msg.computations for i in c.instructions)


def remove_infeed_outfeed(proto: bytes) -> tuple[bytes, int]:
    """(module, how many were replaced): each infeed becomes zeros of its data
    shape paired with its token, each outfeed the token it was given (an
    ``after-all``), as XLA's HloControlFlowFlattening leaves them."""
    from . import hlo_proto

    msg = hlo_proto.decode(proto)
    count = 0
    next_local = {c.id: max((i.id & 0xFFFFFFFF for i in c.instructions), default=0) + 1
                  for c in msg.computations}
    for comp in msg.computations:
        rewritten: list[Any] = []
        for ins in comp.instructions:
            if ins.opcode not in ("infeed", "outfeed"):
                rewritten.append(ins)
                continue
            count += 1

            def new(opcode: str, shape: Any, operands: list[int], name: str) -> Any:
                n = copy.deepcopy(ins)
                for f in ("operand_ids", "infeed_config", "outfeed_config", "outfeed_shape",
                          "control_predecessor_ids", "sharding"):
                    n.ClearField(f)
                n.opcode, n.name = opcode, f"{ins.name}.{name}"
                n.shape.CopyFrom(shape)
                n.operand_ids.extend(operands)
                n.id = (comp.id << 32) + next_local[comp.id]
                next_local[comp.id] += 1
                rewritten.append(n)
                return n

            token = ins.operand_ids[-1]  # infeed(token); outfeed(data, token)
            if ins.opcode == "outfeed":
                done = new("after-all", ins.shape, [token], "token")
            else:
                data_shape = ins.shape.tuple_shapes[0]
                zeros = _zeros(new, data_shape)
                tok = new("after-all", ins.shape.tuple_shapes[1], [token], "token")
                done = new("tuple", ins.shape, [zeros.id, tok.id], "removed")
            # Users of the old instruction read the new one, under the old id.
            done.id, done.name = ins.id, ins.name
        del comp.instructions[:]
        comp.instructions.extend(rewritten)
    return hlo_proto.encode(msg), count


def _zeros(new: Any, shape: Any, label: str = "zeros") -> Any:
    """Instructions making zeros of ``shape`` (tuples element by element), named after
    ``label`` and each element's index: XLA refuses two instructions of one name (a
    StableHLO infeed comes back from HLO as a tuple of its results)."""
    from . import hlo_proto

    if shape.tuple_shapes:
        parts = [_zeros(new, s, f"{label}.{i}") for i, s in enumerate(shape.tuple_shapes)]
        return new("tuple", shape, [p.id for p in parts], label)
    scalar = hlo_proto.message_class("ShapeProto")()
    scalar.element_type = shape.element_type
    scalar.layout.SetInParent()  # XLA rejects a literal without one, even for a scalar
    lit = hlo_proto.message_class("LiteralProto")()
    lit.shape.CopyFrom(scalar)
    from . import literals

    type_name = shape.DESCRIPTOR.fields_by_name["element_type"].enum_type.values_by_number[shape.element_type].name
    literals.set_zero(lit, type_name)
    c = new("constant", scalar, [], label.replace("zeros", "zero", 1))
    c.literal.CopyFrom(lit)
    return new("broadcast", shape, [c.id], label)


class _Builder:
    """New instructions for one computation, with ids after its existing ones."""

    def __init__(self, comp: Any) -> None:
        self.comp = comp
        self.next = max((i.id & 0xFFFFFFFF for i in comp.instructions), default=-1) + 1

    def make(self, opcode: str, shape: Any, operands: list[int], name: str, **fields: Any) -> Any:
        from . import hlo_proto

        n = hlo_proto.message_class("HloInstructionProto")()
        n.opcode, n.name = opcode, name
        n.shape.CopyFrom(shape)
        n.operand_ids.extend(operands)
        n.id = (self.comp.id << 32) + self.next
        self.next += 1
        for k, v in fields.items():
            if k == "literal":
                n.literal.CopyFrom(v)
            else:
                setattr(n, k, v)
        return n


def _s32_scalar() -> Any:
    from . import hlo_proto

    s = hlo_proto.message_class("ShapeProto")()
    s.element_type = s.DESCRIPTOR.fields_by_name["element_type"].enum_type.values_by_name["S32"].number
    s.layout.SetInParent()
    return s


def _s32_constant(b: _Builder, value: int, name: str) -> Any:
    from . import hlo_proto

    lit = hlo_proto.message_class("LiteralProto")()
    lit.shape.CopyFrom(_s32_scalar())
    lit.s32s.append(value)
    return b.make("constant", _s32_scalar(), [], name, literal=lit)


def _gte(b: _Builder, tup: Any, k: int, name: str) -> Any:
    return b.make("get-tuple-element", tup.shape.tuple_shapes[k], [tup.id], name, tuple_index=k)


def _prefix_for_non_gte_users(comp: Any, b: _Builder, value: Any, n: int, placed: dict[int, list[Any]]) -> None:
    """Users of ``value`` other than get-tuple-element (whose indices stay valid)
    read a tuple of its first ``n`` elements: its shape as it was."""
    users = [i for i in comp.instructions if value.id in i.operand_ids and i.opcode != "get-tuple-element"]
    if not users and comp.root_id != value.id:
        return
    parts = [_gte(b, value, k, f"{value.name}.element{k}") for k in range(n)]
    old_shape = copy.deepcopy(value.shape)
    del old_shape.tuple_shapes[n:]
    prefix = b.make("tuple", old_shape, [p.id for p in parts], f"{value.name}.original")
    placed.setdefault(value.id, []).extend(parts + [prefix])
    for u in users:
        ids = [prefix.id if o == value.id else o for o in u.operand_ids]
        del u.operand_ids[:]
        u.operand_ids.extend(ids)
    if comp.root_id == value.id:
        comp.root_id = prefix.id


def _insert_after(comp: Any, placed: dict[int, list[Any]], before: dict[int, list[Any]]) -> None:
    """Rebuild the instruction list with new ones next to those they belong to
    (XLA reads a computation's instructions in order: operands first)."""
    order: list[Any] = []
    for ins in comp.instructions:
        order.extend(copy.deepcopy(x) for x in before.get(ins.id, []))
        order.append(copy.deepcopy(ins))
        order.extend(copy.deepcopy(x) for x in placed.get(ins.id, []))
    del comp.instructions[:]
    comp.instructions.extend(order)



def _with_counter_parameter(comp: Any, n: int) -> tuple[Any, Any]:
    """Widen a while body's or condition's tuple parameter by an s32 counter (element n);
    users that read the whole tuple get its first n elements. (builder, parameter)."""
    b = _Builder(comp)
    placed: dict[int, Any] = {}
    param = next(i for i in comp.instructions if i.opcode == "parameter")
    param.shape.tuple_shapes.add().CopyFrom(_s32_scalar())
    comp.program_shape.parameters[0].tuple_shapes.add().CopyFrom(_s32_scalar())
    _prefix_for_non_gte_users(comp, b, param, n, placed)
    _insert_after(comp, placed, {})
    return b, param

def flatten_while_loops(proto: bytes, count: int) -> tuple[bytes, int]:
    """(module, loops rewritten): every while loop runs exactly ``count``
    iterations, as XLA's HloControlFlowFlattening (``--while_execution_count``)
    makes it: an s32 counter joins the loop state, the body increments it and
    the condition becomes ``counter < count``. Loops whose state is not a
    tuple, or whose body or condition other loops share, are refused."""
    from ..errors import InputError
    from . import hlo_proto

    msg = hlo_proto.decode(proto)
    by_id = {c.id: c for c in msg.computations}
    loops = [(c, i) for c in msg.computations for i in c.instructions if i.opcode == "while"]
    used: set[int] = set()
    for _comp, w in loops:
        body_id, cond_id = list(w.called_computation_ids)[:2]
        if not w.shape.tuple_shapes or {body_id, cond_id} & used:
            raise InputError(f"while loop '{w.name}': only loops with a tuple state and a body and condition "
                             "of their own can be flattened here")
        used |= {body_id, cond_id}
    for comp_id, w_id in [(c.id, i.id) for c, i in loops]:
        # Looked up afresh: rebuilding a computation's list replaces its instruction objects.
        comp = by_id[comp_id]
        w = next(i for i in comp.instructions if i.id == w_id)
        n = len(w.shape.tuple_shapes)
        body_id, cond_id = list(w.called_computation_ids)[:2]
        # The loop's own computation: a counter of 0 joins the initial state.
        b = _Builder(comp)
        placed: dict[int, list[Any]] = {}
        before: dict[int, list[Any]] = {}
        init = next(i for i in comp.instructions if i.id == w.operand_ids[0])
        parts = [_gte(b, init, k, f"{w.name}.init{k}") for k in range(n)]
        zero = _s32_constant(b, 0, f"{w.name}.counter_init")
        w.shape.tuple_shapes.add().CopyFrom(_s32_scalar())
        new_init = b.make("tuple", w.shape, [p.id for p in parts] + [zero.id], f"{w.name}.init")
        before[w.id] = parts + [zero, new_init]
        del w.operand_ids[:]
        w.operand_ids.append(new_init.id)
        _prefix_for_non_gte_users(comp, b, w, n, placed)
        _insert_after(comp, placed, before)
        # The body: the counter goes up by one each iteration.
        body = by_id[body_id]
        b, param = _with_counter_parameter(body, n)
        root = next(i for i in body.instructions if i.id == body.root_id)
        outs = [_gte(b, root, k, f"{w.name}.next{k}") for k in range(n)]
        counter = _gte(b, param, n, f"{w.name}.body_counter")
        one = _s32_constant(b, 1, f"{w.name}.one")
        inc = b.make("add", _s32_scalar(), [counter.id, one.id], f"{w.name}.counter_next")
        new_root = b.make("tuple", w.shape, [o.id for o in outs] + [inc.id], f"{w.name}.next")
        body.root_id = new_root.id
        body.program_shape.result.tuple_shapes.add().CopyFrom(_s32_scalar())
        body.instructions.extend(outs + [counter, one, inc, new_root])
        # The condition: counter < count, whatever it tested before.
        cond = by_id[cond_id]
        b, param = _with_counter_parameter(cond, n)
        old_root = next(i for i in cond.instructions if i.id == cond.root_id)
        counter = _gte(b, param, n, f"{w.name}.cond_counter")
        limit = _s32_constant(b, count, f"{w.name}.trip_count")
        test = b.make("compare", old_root.shape, [counter.id, limit.id], f"{w.name}.continue",
                      comparison_direction="LT")
        cond.root_id = test.id
        cond.instructions.extend([counter, limit, test])
    return hlo_proto.encode(msg), len(loops)
