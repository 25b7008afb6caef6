"""The precision of a module's matrix products, read and raised.

TPUs compute a float32 ``dot``/``dot_general``/``convolution`` at its ``DEFAULT`` precision
as one bfloat16 pass (measured on a v5e, jax 0.10.2: a 512x512 matmul 0.27 off the CPU's
result, 1.2e-4 at ``HIGHEST``). :func:`default_precision_products` says whether a module
has such products (a run's comparison then knows its tolerance); :func:`with_precision`
gives the module with every product at one precision, as ``jax.default_matmul_precision``
lowers it (``precision_config``), for a run at full precision. A ``dot_general`` with an
explicit ``algorithm`` is left as written: the algorithm decides its precision.
"""

from __future__ import annotations

from typing import Any

PRODUCTS = ("stablehlo.dot", "stablehlo.dot_general", "stablehlo.convolution")
PRECISIONS = ("default", "high", "highest")


def _products(module: Any) -> list[Any]:
    found: list[Any] = []

    def visit(op: Any) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name in PRODUCTS and "algorithm" not in inner.attributes:
                        found.append(inner)
                    visit(inner.operation)

    visit(module.operation)
    return found


def _is_a(t: Any, kind: Any) -> bool:
    # Older bindings hand out plain ir.Type values and test them with kind.isinstance; newer
    # ones (jaxlib 0.12) hand out the concrete type and have no such method.
    test = getattr(kind, "isinstance", None)
    return bool(test(t)) if test is not None else isinstance(t, kind)


def _float_operands(op: Any, complex_only: bool = False) -> bool:
    from jaxlib.mlir import ir

    for v in op.operands:
        try:
            element = ir.ShapedType(v.type).element_type
        except ValueError:
            continue
        if (not complex_only and _is_a(element, ir.FloatType)) or _is_a(element, ir.ComplexType):
            return True
    return False


def default_precision_products(module: Any, *, complex_only: bool = False) -> int:
    """How many floating-point products of ``module`` leave their precision to the
    platform (no ``precision_config``, or one that says ``DEFAULT``); ``complex_only``:
    of complex operands only."""
    count = 0
    for op in _products(module):
        config = str(op.attributes["precision_config"]) if "precision_config" in op.attributes else ""
        if _float_operands(op, complex_only) and (not config or "DEFAULT" in config or config == "[]"):
            count += 1
    return count


def with_precision(module: Any, precision: str) -> Any:
    """A copy of ``module`` whose products all say ``precision`` (default, high, highest)."""
    from jaxlib.mlir import ir

    word = precision.upper()
    copy = ir.Module.parse(module.operation.get_asm(binary=True, enable_debug_info=True), module.context)
    attr = ir.Attribute.parse(f"[#stablehlo<precision {word}>, #stablehlo<precision {word}>]", module.context)
    for op in _products(copy):
        op.attributes["precision_config"] = attr
    return copy


def with_bfloat16_operands(module: Any) -> tuple[Any, int]:
    """A copy of ``module`` whose float32 products at DEFAULT precision take their operands
    rounded to bfloat16 (``reduce_precision`` to 8 exponent and 7 mantissa bits, round to
    nearest even; not a ``convert`` to bf16 and back, which XLA CPU's excess-precision
    simplification removes: its reference then computed in float32 after all): what one
    bfloat16 pass of a TPU's matrix unit computes, products exact and summed in float32. A
    reference run of it differs from the chip's only in the order of the sums. Returns the
    copy and how many products were rounded (other element types are left as they are)."""
    from jaxlib.mlir import ir

    copy = ir.Module.parse(module.operation.get_asm(binary=True, enable_debug_info=True), module.context)
    count = 0
    with copy.context, ir.Location.unknown(copy.context):
        f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
        bfloat16_bits = {"exponent_bits": ir.IntegerAttr.get(i32, 8), "mantissa_bits": ir.IntegerAttr.get(i32, 7)}
        for op in _products(copy):
            config = str(op.attributes["precision_config"]) if "precision_config" in op.attributes else ""
            if config and "DEFAULT" not in config and config != "[]":
                continue
            rounded = False
            for i, v in enumerate(list(op.operands)):
                if ir.RankedTensorType(v.type).element_type != f32:
                    continue
                with ir.InsertionPoint(op):
                    narrowed = ir.Operation.create("stablehlo.reduce_precision", results=[v.type], operands=[v],
                                                   attributes=bfloat16_bits, loc=op.location)
                op.operands[i] = narrowed.result
                rounded = True
            count += rounded
    return copy, count
