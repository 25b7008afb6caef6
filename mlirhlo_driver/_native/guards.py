"""Checks made before native code that would kill the process on a valid module.

* jaxlib's StableHLO -> HLO conversion folds an integer ``divide``/``remainder`` whose
  operands are both constants, and a zero in the divisor then dies with SIGFPE (the
  whole process, no message). StableHLO defines no trap there, so the module is valid;
  it is refused with its location instead, since XLA cannot take it.
* A manual computation (``shard_map``: Shardy's ``sdy.manual_computation``, or the
  ``xla.sdy.GlobalToLocalShape`` custom calls jax 0.12's dumps hold) compiled for one
  device: XLA refuses it ("No registered implementation ... for Host"), and jaxlib
  0.12's CPU compile sometimes dies with SIGSEGV freeing the module on that error path
  (seen 1 run in 2 on a jax 0.12 shard_map dump, in ~MeshAxesReplicaGroupList). It
  runs only on its mesh's devices: refused with its location, pointing at spmd-run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import InputError

# An op's loc("file":line:col): the first file location in it (the check rewriter reads it too).
LOCATION = re.compile(r'loc\("([^"]*)":(\d+):(\d+)')

_DIVISION_OPS = ("stablehlo.divide", "stablehlo.remainder", "mhlo.divide", "mhlo.remainder")
_CONSTANT_OPS = ("stablehlo.constant", "mhlo.constant")
_INT_TENSOR = re.compile(r"tensor<(?:[^<>]*x)?(?:ui|si|i)\d+>")


def _constant_of(value: Any) -> Any:
    """The dense attribute of a value defined by a constant op, else None."""
    owner = value.owner
    op = getattr(owner, "operation", owner)
    if getattr(op, "name", None) not in _CONSTANT_OPS:
        return None
    return op.attributes["value"]


def _has_zero(attr: Any) -> bool:
    from jaxlib.mlir import ir

    dense = ir.DenseIntElementsAttr(attr)
    if dense.is_splat:
        return ir.IntegerAttr(dense.get_splat_value()).value == 0
    return any(dense[i] == 0 for i in range(len(dense)))


_MANUAL_TARGETS = ("xla.sdy.GlobalToLocalShape", "SPMDFullToShardShape")


def first_op(module: Any, predicate: Callable[[Any], bool]) -> Any | None:
    """The module's first op (in walk order) for which ``predicate`` holds, or None."""
    from jaxlib.mlir import ir

    found: list[Any] = []

    def visit(op: Any) -> Any:
        if predicate(op):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found[0] if found else None


def manual_computation(module: Any) -> Any | None:
    """The module's first manual computation (``shard_map``), or None."""
    return first_op(module, _manual)


def first_fusion(module: Any) -> Any | None:
    """The module's first ``mhlo.fusion`` (XLA's output after its optimizations), or None."""
    return first_op(module, lambda op: op.name == "mhlo.fusion")


def _manual(op: Any) -> bool:
    if op.name == "sdy.manual_computation":
        return True
    if op.name in ("stablehlo.custom_call", "mhlo.custom_call") and "call_target_name" in op.attributes:
        from jaxlib.mlir import ir

        return ir.StringAttr(op.attributes["call_target_name"]).value in _MANUAL_TARGETS
    return False


def refuse_fatal(module: Any, source: str | None = None, *, one_device: bool = False) -> bool:
    """Raise InputError at the first integer division of constants by zero; with
    ``one_device`` (a compile for a single device), at the first manual computation too.
    Returns whether the module holds XLA's fusions (``mhlo.fusion``: XLA's own output after
    its optimizations, which XLA's compile may abort on), in the same walk."""
    from jaxlib.mlir import ir

    found: list[tuple[Any, str]] = []
    fused: list[bool] = []

    def visit(op: Any) -> Any:
        name = op.name
        if name == "mhlo.fusion":
            fused.append(True)
        elif name in _DIVISION_OPS and _INT_TENSOR.fullmatch(str(op.results[0].type)):
            lhs, rhs = (_constant_of(v) for v in op.operands)
            if lhs is not None and rhs is not None and _has_zero(rhs):
                found.append((op, "division"))
                return ir.WalkResult.INTERRUPT
        elif one_device and _manual(op):
            found.append((op, "manual"))
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if not found:
        return bool(fused)
    op, why = found[0]
    m = LOCATION.search(str(op.location))
    line, col = (int(m.group(2)), int(m.group(3))) if m else (None, None)
    # "-" is the parser's name for text given without one; callers then name the file.
    file = source or (m.group(1) if m and m.group(1) not in ("", "-") else None)
    if why == "manual":
        raise InputError("the module has manual computations (shard_map): they run only on their mesh's "
                         "devices, not on one", file=file, line=line, col=col,
                         hint="mlirhlo spmd-run FILE --num-partitions N")
    raise InputError(f"{op.name} of two constants with a zero divisor: jaxlib's conversion "
                     "to HLO dies folding it (SIGFPE)", file=file, line=line, col=col,
                     hint="pass the divisor as a parameter")
