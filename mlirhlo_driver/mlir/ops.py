"""Walking a module's ops, for passes written in Python."""

from __future__ import annotations

from typing import Any


def functions(module_op: Any) -> list[Any]:
    """The func.func ops directly in a module, in order."""
    out = []
    for region in module_op.regions:
        for block in region.blocks:
            for op in block.operations:
                if op.operation.name == "func.func":
                    out.append(op.operation)
    return out
