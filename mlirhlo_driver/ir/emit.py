"""Module -> output format conversions (the MLIR-level stages and `convert`).

Each function takes an ``ir.Module`` and returns text or bytes; none mutates
its input (passes run on a copy).
"""

from __future__ import annotations

import io
from typing import Any

from ..errors import StageError, param


def clone(module: Any) -> Any:
    """A deep copy in the same context: the module op's location and attributes, and a
    clone of each op in its body (MLIR's in-memory copy; a bytecode round trip took
    2-3x as long)."""
    from jaxlib.mlir import ir

    src = module.operation
    with module.context:
        copy = ir.Module.create(loc=src.location)
        attrs = src.attributes
        for i in range(len(attrs)):  # by index: a NamedAttribute in every jaxlib's bindings
            copy.operation.attributes[attrs[i].name] = attrs[i].attr
        at = ir.InsertionPoint(copy.body)
        for op in module.body.operations:
            op.clone(ip=at)
    return copy


def stablehlo_text(module: Any, *, debug_info: bool = False) -> str:
    return module.operation.get_asm(enable_debug_info=debug_info)


def bytecode(module: Any) -> bytes:
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def resolve_vhlo_version(target: str | None) -> str:
    """'current' (default), 'minimum', or an explicit 'MAJOR.MINOR.PATCH' within range."""
    from jaxlib.mlir.dialects import stablehlo

    current, minimum = stablehlo.get_current_version(), stablehlo.get_minimum_version()
    if target in (None, "", "current"):
        return current
    if target == "minimum":
        return minimum
    parts = target.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise StageError(f"malformed {param('target_version')} '{target}'",
                         hint=f"use MAJOR.MINOR.PATCH between {minimum} and {current}, "
                              "or 'current'/'minimum'")
    version = tuple(int(p) for p in parts)
    lo = tuple(int(p) for p in minimum.split("."))
    hi = tuple(int(p) for p in current.split("."))
    if not lo <= version <= hi:
        raise StageError(f"{param('target_version', target)} is outside what this StableHLO supports",
                         hint=f"between {minimum} and {current}")
    return target


def vhlo_artifact(module: Any, *, target_version: str | None = None) -> bytes:
    """A StableHLO portable artifact (VHLO bytecode), as jax.export writes."""
    import re

    from jaxlib.mlir.dialects import stablehlo

    from .._native.fds import capture_fd2

    version = resolve_vhlo_version(target_version)
    failure = None
    # The serializer prints its diagnostics (loc(...): error: ...) on fd 2.
    with module.context, capture_fd2() as captured:
        try:
            return stablehlo.serialize_portable_artifact(_mhlo_as_custom_calls(clone(module)), version)
        except Exception as e:
            failure = e
    found = re.findall(r"error: (.+)", captured.text)
    detail = found[0].strip() if found else _first_line(failure)
    chlo = sorted(set(re.findall(r"\bchlo\.[a-z_]+", module.operation.get_asm(large_elements_limit=1))))
    hint = (f"the module has CHLO ops ({', '.join(chlo[:3])}), which VHLO cannot hold; "
            "legalize them first: --pipeline @prepare-export") if chlo else None
    raise StageError(f"cannot serialize as a StableHLO {version} portable artifact: {detail}",
                     hint=hint)


def has_mhlo(module: Any) -> bool:
    """Whether any op of ``module`` is still MHLO."""
    from .._native.guards import first_op

    return first_op(module, lambda op: op.name.startswith("mhlo.")) is not None


def _mhlo_as_custom_calls(module: Any) -> Any:
    """``module`` with its MHLO ops written as StableHLO custom calls (``hlo-legalize-to-stablehlo``:
    ``mhlo.topk`` becomes ``stablehlo.custom_call @mhlo.topk``), which VHLO holds and XLA
    reads back as the same op. XLA's HLO import leaves the ops StableHLO lacks (TopK) as
    MHLO. Modules without MHLO ops are left as they are."""
    from jaxlib.mlir import passmanager

    if has_mhlo(module):
        passmanager.PassManager.parse("builtin.module(hlo-legalize-to-stablehlo)").run(module.operation)
    return module


def mhlo_text(module: Any, *, debug_info: bool = False) -> str:
    from jaxlib.mlir import passmanager

    from .._native.fds import capture_fd2

    copy = clone(module)
    with module.context, capture_fd2():
        try:
            passmanager.PassManager.parse("builtin.module(stablehlo-legalize-to-hlo)").run(copy.operation)
        except Exception as e:
            raise StageError(f"cannot legalize to MHLO: {_first_line(e)}") from None
    return stablehlo_text(copy, debug_info=debug_info)


def hlo_proto(module: Any) -> bytes:
    """The HloModuleProto XLA receives for this module."""
    from .._native import jaxlib as _jaxlib
    from .._native.guards import refuse_fatal

    refuse_fatal(module)
    try:
        proto = _jaxlib.stablehlo_to_hlo_proto(bytecode(module))
    except RuntimeError as e:
        raise StageError(f"XLA cannot convert this module to HLO: {_first_line(e)}") from None
    return stable_hlo_proto(proto)


def stable_hlo_proto(proto: bytes) -> bytes:
    """The proto without its module id, which XLA draws from a process-wide
    counter: the same module then always gives the same bytes."""
    from . import hlo_proto as codec

    return codec.strip_module_id(proto)


def hlo_text(module: Any) -> str:
    return hlo_text_from_proto(hlo_proto(module))


def hlo_pbtxt(module: Any) -> str:
    return hlo_pbtxt_from_proto(hlo_proto(module))


def hlo_text_from_proto(proto: bytes) -> str:
    from .._native import jaxlib as _jaxlib

    try:
        return _jaxlib.hlo_proto_to_text(proto)
    except RuntimeError as e:  # XLA rejects the proto (e.g. invalid UTF-8 in a string field)
        raise StageError(f"XLA cannot read this module as HLO: {_first_line(e)}") from None


def hlo_pbtxt_from_proto(proto: bytes) -> str:
    from . import hlo_proto as codec

    return codec.to_text(codec.decode(proto, "HloModuleProto"))


def _first_line(e: Exception) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln.split("error:", 1)[1].strip()
    return lines[-1] if lines else type(e).__name__
