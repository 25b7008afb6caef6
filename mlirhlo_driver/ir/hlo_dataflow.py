"""Which outputs of an optimized HLO module XLA computes from its entry parameters.

A self-checking module whose checked values depend on no parameter was
computed by XLA's constant folder while it compiled (HloEvaluator), not by
the code it generated: :func:`outputs_from_parameters` tells the two apart
from the optimized module itself, the evidence ``mlirhlo run`` reports.
"""

from __future__ import annotations

from typing import Any

from . import hlo_proto

# A value's dependence on the entry parameters: a bool, or a list of them (nested)
# for a tuple-shaped value whose elements are told apart.
Dep = Any


def _any(dep: Dep) -> bool:
    if isinstance(dep, list):
        return any(_any(d) for d in dep)
    return bool(dep)


def outputs_from_parameters(proto: bytes) -> list[bool]:
    """For each output of the entry computation (each element of a tuple root, else
    the one root), whether its value depends on an entry parameter.

    Dependence follows operands through every instruction; a tuple-shaped fusion
    is followed into its fused computation so that each of its outputs keeps its
    own operands, and ``get-tuple-element`` picks its element where it can. Any
    other instruction depends on all of its operands (a conservative answer: it
    may say a value depends on a parameter when only its sibling does).
    """
    module = hlo_proto.decode(proto)
    comps = {c.id: c for c in module.computations}
    entry = comps.get(module.entry_computation_id)
    if entry is None:
        entry = next(c for c in module.computations if c.name == module.entry_computation_name)

    def analyze(comp: Any, params: list[Dep] | None) -> Dep:
        """The root's dependence; ``params``: each parameter's (None: the entry's)."""
        by_id = {i.id: i for i in comp.instructions}
        memo: dict[int, Dep] = {}
        # Iterative post-order: HLO graphs can be deeper than Python's recursion limit.
        stack = [comp.root_id]
        while stack:
            iid = stack[-1]
            if iid in memo:
                stack.pop()
                continue
            ins = by_id[iid]
            todo = [o for o in ins.operand_ids if o not in memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            ops = [memo[o] for o in ins.operand_ids]
            if ins.opcode == "parameter":
                dep: Dep = True if params is None else params[ins.parameter_number]
            elif ins.opcode == "tuple":
                dep = ops
            elif ins.opcode == "get-tuple-element":
                dep = ops[0][ins.tuple_index] if isinstance(ops[0], list) else ops[0]
            elif ins.opcode == "fusion" and len(ins.shape.tuple_shapes) and ins.called_computation_ids:
                dep = analyze(comps[ins.called_computation_ids[0]], ops)
            else:
                dep = any(_any(d) for d in ops)
            memo[iid] = dep
        return memo[comp.root_id]

    root = analyze(entry, None)
    if isinstance(root, list):
        return [_any(d) for d in root]
    return [bool(root)]
