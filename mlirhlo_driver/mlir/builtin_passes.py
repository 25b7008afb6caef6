"""Passes shipped with the driver, written in Python (see mlir/python_passes.py).

- inline-calls: inline func.call to the module's own functions (jaxlib's MLIR
  lacks the func dialect's inliner interface, so the native `inline` pass is a
  no-op on func.call); callees left without callers are removed.
- fold-involutions: neg(neg(x)), not(not(x)), reverse(reverse(x)) -> x, and
  transpose(transpose(x)) -> one transpose (or x).
- strip-frontend-attributes: drop jax/XLA frontend metadata (jax.*,
  mhlo.layout_mode, mhlo.frontend_attributes, result_layout, xla_shape) so
  modules from different producers diff cleanly.
"""

from __future__ import annotations

import re
from typing import Any

from .ops import functions

# (name, anchor, description, fn), in order: python_passes.PassSet.builtin() makes them passes.
PASSES: list[tuple[str, str, str, Any]] = []


def _builtin(name: str, *, anchor: str, description: str) -> Any:
    def add(fn: Any) -> Any:
        PASSES.append((name, anchor, description, fn))
        return fn
    return add


def _ops_in(op: Any) -> list[Any]:
    """Every op nested in ``op`` (not ``op`` itself), in pre-order."""
    from jaxlib.mlir import ir

    out: list[Any] = []

    def visit(o: Any) -> Any:
        out.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return [o.operation for o in out if o != op]


def _symbol(op: Any, key: str) -> str:
    from jaxlib.mlir import ir

    attr = op.attributes[key]
    try:
        return ir.FlatSymbolRefAttr(attr).value
    except ValueError:
        return ir.StringAttr(attr).value


# ------------------------------------------------------------------ inline-calls

@_builtin("inline-calls", anchor="builtin.module",
               description="Inline func.call to the module's own functions; drop callees left unused")
def inline_calls(module_op: Any) -> None:
    from jaxlib.mlir import ir

    funcs = {_symbol(f, "sym_name"): f for f in functions(module_op)}
    for _ in range(64):  # nested calls inline over a few rounds; recursion never terminates
        calls = [o for f in funcs.values() for o in _ops_in(f) if o.name == "func.call"]
        inlinable = [c for c in calls if _symbol(c, "callee") in funcs
                     and _symbol(c, "callee") != _symbol(_enclosing_func(c), "sym_name")
                     and len(funcs[_symbol(c, "callee")].regions[0].blocks) == 1]
        if not inlinable:
            break
        for call in inlinable:
            _inline_one(call, funcs[_symbol(call, "callee")])
    still_called = {_symbol(o, "callee") for f in funcs.values() for o in _ops_in(f) if o.name == "func.call"}
    for name, f in funcs.items():
        visibility = f.attributes["sym_visibility"] if "sym_visibility" in f.attributes else None
        if visibility is not None and ir.StringAttr(visibility).value == "private" and name not in still_called:
            f.erase()


def _enclosing_func(op: Any) -> Any:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent


def _inline_one(call: Any, callee: Any) -> None:
    from jaxlib.mlir import ir

    block = callee.regions[0].blocks[0]
    mapping: dict[Any, Any] = {arg: operand for arg, operand in zip(block.arguments, call.operands)}
    body = list(block.operations)
    terminator = body[-1]
    with call.context, call.location:
        ip = ir.InsertionPoint(call)
        for op in body[:-1]:
            new = op.operation.clone(ip=ip).operation
            for target in [new, *_ops_in(new)]:
                target = target.operation
                for operand in list(target.operands):
                    if operand in mapping:
                        target.replace_uses_of_with(operand, mapping[operand])
            for old, fresh in zip(op.results, new.results):
                mapping[old] = fresh
        for result, returned in zip(call.results, terminator.operands):
            result.replace_all_uses_with(mapping.get(returned, returned))
    call.erase()


# -------------------------------------------------------------- fold-involutions

_SELF_INVERSE = {"stablehlo.negate", "stablehlo.not"}


@_builtin("fold-involutions", anchor="func.func",
               description="neg(neg x), not(not x), reverse(reverse x) -> x; transpose(transpose x) -> one")
def fold_involutions(func_op: Any) -> None:
    from jaxlib.mlir import ir

    changed = True
    while changed:
        changed = False
        for op in _ops_in(func_op):
            if op.name not in _SELF_INVERSE | {"stablehlo.reverse", "stablehlo.transpose"}:
                continue
            inner_value = op.operands[0]
            inner = inner_value.owner
            if not isinstance(inner, ir.Operation) and hasattr(inner, "operation"):
                inner = inner.operation
            if not isinstance(inner, ir.Operation) or inner.name != op.name:
                continue
            if op.name == "stablehlo.reverse" and _dims(op, "dimensions") != _dims(inner, "dimensions"):
                continue
            if op.name == "stablehlo.transpose":
                outer_perm, inner_perm = _dims(op, "permutation"), _dims(inner, "permutation")
                combined = [inner_perm[i] for i in outer_perm]
                if combined != sorted(combined):
                    with op.context, op.location:
                        op.attributes["permutation"] = ir.DenseI64ArrayAttr.get(combined)
                        op.replace_uses_of_with(inner_value, inner.operands[0])
                    _erase_if_dead(inner)
                    changed = True
                    break
            op.results[0].replace_all_uses_with(inner.operands[0])
            op.erase()
            _erase_if_dead(inner)
            changed = True
            break  # the op list is stale after an erase


def _dims(op: Any, key: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", str(op.attributes[key]).split(":", 1)[-1])]


def _erase_if_dead(op: Any) -> None:
    if all(not list(r.uses) for r in op.results):
        op.erase()


# ----------------------------------------------------- strip-frontend-attributes

_METADATA = re.compile(r"^(jax\..*|mhlo\.layout_mode|mhlo\.frontend_attributes|result_layout|xla_shape)$")


@_builtin("strip-frontend-attributes", anchor="builtin.module",
               description="Drop jax.*, mhlo.layout_mode, mhlo.frontend_attributes, result_layout, "
                           "xla_shape attributes")
def strip_frontend_attributes(module_op: Any) -> None:
    from jaxlib.mlir import ir

    for op in [module_op, *_ops_in(module_op)]:
        names = [a if isinstance(a, str) else a.name for a in op.attributes]
        for name in names:
            if _METADATA.match(name):
                del op.attributes[name]
        if op.name == "func.func":
            with op.context:
                for key in ("arg_attrs", "res_attrs"):
                    if key in op.attributes:
                        op.attributes[key] = ir.ArrayAttr.get(
                            [_without_metadata(d) for d in ir.ArrayAttr(op.attributes[key])])


def _without_metadata(attr: Any) -> Any:
    from jaxlib.mlir import ir

    d = ir.DictAttr(attr)
    kept = {d[i].name: d[i].attr for i in range(len(d)) if not _METADATA.match(d[i].name)}
    return ir.DictAttr.get(kept)
