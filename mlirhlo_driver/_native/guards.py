"""Checks made before native code that would kill the process on a valid module.

jaxlib's StableHLO -> HLO conversion folds an integer ``divide``/``remainder`` whose
operands are both constants, and a zero in the divisor then dies with SIGFPE
(the whole process, no message). StableHLO defines no trap there, so the module
is valid; it is refused with its location instead, since XLA cannot take it.
"""

from __future__ import annotations

import re
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


def refuse_constant_division_by_zero(module: Any, source: str | None = None) -> None:
    """Raise InputError at the first integer division of constants by zero."""
    from jaxlib.mlir import ir

    found: list[Any] = []

    def visit(op: Any) -> Any:
        if op.name in _DIVISION_OPS and _INT_TENSOR.fullmatch(str(op.results[0].type)):
            lhs, rhs = (_constant_of(v) for v in op.operands)
            if lhs is not None and rhs is not None and _has_zero(rhs):
                found.append(op)
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if not found:
        return
    op = found[0]
    m = LOCATION.search(str(op.location))
    line, col = (int(m.group(2)), int(m.group(3))) if m else (None, None)
    # "-" is the parser's name for text given without one; callers then name the file.
    file = source or (m.group(1) if m and m.group(1) not in ("", "-") else None)
    raise InputError(f"{op.name} of two constants with a zero divisor: jaxlib's conversion "
                     "to HLO dies folding it (SIGFPE)", file=file, line=line, col=col,
                     hint="pass the divisor as a parameter")
