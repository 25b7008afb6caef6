"""What each launched instruction of an optimized HloModuleProto is made of, and where
it came from in the program.

XLA turns each fusion (and each other instruction of a non-fused computation that
runs on the device) into one kernel or library call; its kernel's name is the
instruction's name with the characters PTX does not allow replaced by ``_``
(``loop_subtract_fusion.1`` -> ``loop_subtract_fusion_1``). For each such
instruction, :func:`launched` gives its ``op_name`` and ``file:line`` from the HLO
metadata (the fusion's own, which XLA copies from the fusion's root; else the
root's), resolving ``stack_frame_id`` through the module's stack frame index where
the producer wrote frames instead of ``source_file`` (JAX, and XLA's MLIR -> HLO
conversion of ``loc("name"("file":line:col))``), and the instructions fused into it.
:func:`isolate` wraps instructions as modules of their own, for per-instruction
cost analysis, and :func:`gemm_cost` counts what XLA's cost analysis cannot see
inside a cuBLAS call.

Pure protobuf (ir/hlo_proto.py): jaxlib 0.9's HloComputation exposes no
instructions, and the proto is the same on every supported jaxlib.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Instructions of a non-fused computation that launch nothing: bookkeeping, views,
# and the control flow whose bodies are listed on their own.
_NOT_LAUNCHED = frozenset({
    "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while", "conditional", "call",
    "async-start", "async-update", "async-done", "after-all", "add-dependency", "opt-barrier",
    "partition-id", "replica-id", "domain",
})
# cuBLAS GEMMs (XLA's GemmRewriter targets): XLA's cost analysis reports -1 for them.
GEMM_TARGETS = frozenset({"__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8"})


@dataclass(frozen=True)
class FusedOp:
    """One instruction inside a fusion (nested fusions flattened)."""

    name: str
    opcode: str
    op_name: str | None
    source: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "opcode": self.opcode, "op_name": self.op_name, "source": self.source}


@dataclass(frozen=True)
class Launched:
    """An instruction XLA launches: a fusion, a library call, or an unfused op."""

    name: str                   # the HLO instruction ("loop_add_fusion.1")
    computation: str            # the computation it is in (the entry, or a while body ...)
    opcode: str                 # "fusion", "custom-call", "copy", ...
    kind: str | None            # a fusion's kind ("kLoop", "kInput", "kCustom"); else None
    custom_call_target: str | None
    op_name: str | None
    source: str | None          # "file:line" (":col" when known)
    fused: tuple[FusedOp, ...]  # what a fusion computes; () for other instructions
    has_dot: bool               # a dot or convolution inside (or the op itself)
    dot_type: int | None        # PrimitiveType number of that dot's lhs operand
    out_type: int | None        # PrimitiveType of the (first array) result

    @property
    def kernel(self) -> str:
        return kernel_name(self.name)


def kernel_name(instruction: str) -> str:
    """The kernel name XLA gives an instruction's kernel (llvm_ir::SanitizeFunctionName)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", instruction)


def _source(msg: Any, md: Any) -> str | None:
    if md.source_file:
        loc = f"{md.source_file}:{md.source_line}" if md.source_line else md.source_file
        return loc + (f":{md.source_column}" if md.source_column else "")
    frame_id = getattr(md, "stack_frame_id", 0)
    index = msg.stack_frame_index if msg.HasField("stack_frame_index") else None
    if not frame_id or index is None or frame_id > len(index.stack_frames):
        return None
    # Ids are 1-based; the frame named is the innermost one (where the op was made).
    frame = index.stack_frames[frame_id - 1]
    if not 0 < frame.file_location_id <= len(index.file_locations):
        return None
    loc = index.file_locations[frame.file_location_id - 1]
    if not 0 < loc.file_name_id <= len(index.file_names):
        return None
    text = f"{index.file_names[loc.file_name_id - 1]}:{loc.line}"
    return text + (f":{loc.column}" if loc.column else "")


def _first_array_type(shape: Any) -> int | None:
    if shape.tuple_shapes:
        for s in shape.tuple_shapes:
            t = _first_array_type(s)
            if t is not None:
                return t
        return None
    return shape.element_type or None


def launched(proto: bytes) -> list[Launched]:
    """Every launched instruction of the entry computation and of the computations its
    control flow runs (while bodies and conditions, branches, async wrappers), in the
    proto's order (callees first)."""
    from . import hlo_proto

    msg = hlo_proto.decode(proto)
    by_id = {c.id: c for c in msg.computations}
    scheduled = _scheduled(msg, by_id)
    out = []
    for comp in msg.computations:
        if comp.id not in scheduled:
            continue
        values = {i.id: i for i in comp.instructions}
        for ins in comp.instructions:
            if ins.opcode in _NOT_LAUNCHED:
                continue
            fused: list[FusedOp] = []
            dots: list[int | None] = []
            root = None
            if ins.opcode == "fusion":
                body = by_id.get(ins.called_computation_ids[0]) if ins.called_computation_ids else None
                if body is not None:
                    root = next((i for i in body.instructions if i.id == body.root_id), None)
                    _flatten(msg, body, by_id, fused, dots)
            elif ins.opcode in ("dot", "convolution") or ins.custom_call_target in GEMM_TARGETS:
                lhs = values.get(ins.operand_ids[0]) if ins.operand_ids else None
                dots.append(lhs.shape.element_type if lhs is not None else None)
            md = ins.metadata
            op_name = md.op_name or (root.metadata.op_name if root is not None else "") or None
            source = _source(msg, md) or (_source(msg, root.metadata) if root is not None else None)
            out.append(Launched(
                ins.name, comp.name, ins.opcode, _fusion_kind(ins), ins.custom_call_target or None,
                op_name, source, tuple(fused), bool(dots), dots[0] if dots else None,
                _first_array_type(ins.shape)))
    return out


# Ops whose called computations run as sequences of launches of their own (a while's
# body, a branch, an async wrapper); a fusion's body or a reduce's to_apply does not.
_CONTROL_FLOW = frozenset({"while", "conditional", "call", "async-start", "async-update", "async-done"})


def _scheduled(msg: Any, by_id: dict[int, Any]) -> set[int]:
    """Ids of the computations whose instructions XLA launches: the entry's and, from
    it, those control flow calls."""
    from .hlo_proto import entry_computation

    todo, seen = [entry_computation(msg).id], set()
    while todo:
        cid = todo.pop()
        if cid in seen or cid not in by_id:
            continue
        seen.add(cid)
        todo += [c for i in by_id[cid].instructions if i.opcode in _CONTROL_FLOW for c in i.called_computation_ids]
    return seen


def _fusion_kind(ins: Any) -> str | None:
    if ins.opcode != "fusion":
        return None
    return ins.fusion_kind or None


def _flatten(msg: Any, comp: Any, by_id: dict[int, Any], out: list[FusedOp], dots: list[int | None]) -> None:
    values = {i.id: i for i in comp.instructions}
    for ins in comp.instructions:
        if ins.opcode == "parameter":
            continue
        if ins.opcode == "fusion":  # nested (Triton's GEMM operands): its body, inline
            for cid in ins.called_computation_ids:
                if cid in by_id:
                    _flatten(msg, by_id[cid], by_id, out, dots)
            continue
        if ins.opcode in ("dot", "convolution", "scaled-dot"):
            lhs = values.get(ins.operand_ids[0]) if ins.operand_ids else None
            dots.append(lhs.shape.element_type if lhs is not None else None)
        md = ins.metadata
        out.append(FusedOp(ins.name, ins.opcode, md.op_name or None, _source(msg, md)))


def by_kernel(rows: list[Launched]) -> dict[str, Launched]:
    """Kernel name -> its instruction (names are unique in a module, so are kernels)."""
    return {r.kernel: r for r in rows}


# ------------------------------------------------------------------ isolation

def isolate(proto: bytes, names: list[str]) -> dict[str, bytes]:
    """Each named instruction (of any non-fused computation) as a module of its own:
    its operands become parameters, the computations it calls come along, and so does
    the stack frame index its metadata points into."""
    from . import hlo_proto
    from .decompose import _called_closure, instruction_module

    msg = hlo_proto.decode(proto)
    wanted = set(names)
    new_cid = max((c.id for c in msg.computations), default=0) + 1
    out: dict[str, bytes] = {}
    for comp in msg.computations:
        values = {i.id: i for i in comp.instructions}
        for ins in comp.instructions:
            if ins.name not in wanted or ins.name in out:
                continue
            operands = [values[o] for o in ins.operand_ids]
            callees = _called_closure(msg, list(ins.called_computation_ids))
            m = instruction_module(msg, ins, operands, callees, new_cid, kernel_name(ins.name), numbered_params=True)
            out[ins.name] = hlo_proto.encode(m)
    return out


# ------------------------------------------------------------------ cuBLAS GEMMs

def array_bytes(shape: Any) -> int:
    """Bytes of a ShapeProto's arrays (sub-byte types packed, as XLA's ShapeUtil::ByteSizeOf
    of a dense array; tuples: the sum of their elements)."""
    from .dtypes import TYPES

    if shape.tuple_shapes:
        return sum(array_bytes(s) for s in shape.tuple_shapes)
    bits = next((t.bits for t in TYPES if t.number == shape.element_type and t.kind is not None), 0)
    n = 1
    for d in shape.dimensions:
        n *= d
    return -(-n * bits // 8)


def gemm_cost(proto: bytes, name: str) -> dict[str, float] | None:
    """Flops and bytes of a cuBLAS GEMM custom call, from its HLO: 2 x (output elements)
    x (contracted elements), as XLA's HloCostAnalysis counts a dot; bytes: its operands
    and its result (element 0 of the result tuple; the s8 workspace is left out, as
    scratch). None when ``name`` is no such call."""
    from . import hlo_proto

    msg = hlo_proto.decode(proto)
    for comp in msg.computations:
        values = {i.id: i for i in comp.instructions}
        for ins in comp.instructions:
            if ins.name != name or ins.custom_call_target not in GEMM_TARGETS:
                continue
            config = json.loads(ins.backend_config or b"{}").get("gemm_backend_config", {})
            dims = config.get("dot_dimension_numbers", {})
            lhs = values[ins.operand_ids[0]].shape
            result = ins.shape.tuple_shapes[0] if ins.shape.tuple_shapes else ins.shape
            contracted = 1
            for d in dims.get("lhs_contracting_dimensions", []):
                contracted *= lhs.dimensions[int(d)]
            out_elems = 1
            for d in result.dimensions:
                out_elems *= d
            operand_bytes = sum(array_bytes(values[o].shape) for o in ins.operand_ids)
            return {"flops": 2.0 * out_elems * contracted,
                    "bytes accessed": float(operand_bytes + array_bytes(result))}
    return None
