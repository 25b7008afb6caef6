"""What one XLA compile made, as plain data for comparing compiles (``mlirhlo diff``).

Read from XLA's own structured output, not from its text dumps:
- the fusions and library calls of the optimized module, and the buffer
  assignment's allocations, from the ``HloProto`` XLA dumps after optimization
  (``*after_optimizations.hlo.pb``, the ``summary`` stage's declared dump: its
  ``hlo_module`` and ``buffer_assignment``);
- the executable's memory stats (``get_compiled_memory_stats``: peak, temporaries,
  arguments, outputs), which jaxlib gives device-less too.

Everything returned is JSON-serializable, so a summary can be cached and compared
without jaxlib.
"""

from __future__ import annotations

import json
from typing import Any

# TPU's file is ``after_optimizations.hlo.pb`` (xla.backend drops libtpu's build from the prefix).
AFTER_OPT_PROTO = r"(?:(?:^|_)(?:cpu|gpu)_|^)after_optimizations\.hlo\.pb$"

# The executable's memory stats shown, in this order (device memory; jaxlib's names).
MEMORY_FIELDS = ("peak_memory_in_bytes", "temp_size_in_bytes", "argument_size_in_bytes",
                 "output_size_in_bytes", "alias_size_in_bytes", "generated_code_size_in_bytes")
# Buffer-assignment totals by kind of allocation, in this order.
BUFFER_FIELDS = ("allocations", "total_bytes", "parameter_bytes", "output_bytes", "temp_bytes",
                 "constant_bytes", "thread_local_bytes")


def summarize(art: Any) -> dict[str, Any]:
    """``{"fusions": [...], "buffers": {...}, "memory": {...}, "hlo_fingerprint": ...}`` of a
    compile (xla.backend.XlaArtifacts, with the optimized HloProto dumped; :func:`fingerprint`).

    ``fusions``: each fusion and custom call outside fused computations, in module
    order: ``{"name", "opcode", "kind"}``, where ``kind`` is the fusion kind (with
    the backend's fusion kind for ``kCustom``, e.g. ``kCustom __triton_nested_gemm_fusion``)
    or the custom call's target. ``buffers``: :data:`BUFFER_FIELDS`; each allocation
    counts once, as a parameter, else a constant, else thread-local, else an output
    (live out), else a temporary. ``memory``: :data:`MEMORY_FIELDS` from the executable.
    """
    from ..errors import StageError
    from ..ir import hlo_proto

    found = art.matching(AFTER_OPT_PROTO)
    if not found:
        raise StageError(f"XLA wrote no optimized HloProto on {art.platform}"
                         + (f" (compile failed: {art.compile_error})" if art.compile_error else ""))
    proto = hlo_proto.decode(found[0][1], "HloProto")
    return {"fusions": fusions(proto.hlo_module),
            "buffers": buffer_totals(proto.buffer_assignment),
            "memory": {k: int(art.memory_stats.get(k, 0)) for k in MEMORY_FIELDS},
            "hlo_fingerprint": fingerprint(proto.hlo_module)}


def fingerprint(module: Any) -> str:
    """SHA-256 of an optimized HloModuleProto without its id (XLA numbers modules per
    process): equal for two compiles that made the same HLO."""
    import hashlib

    copy = type(module)()
    copy.CopyFrom(module)
    copy.ClearField("id")
    return hashlib.sha256(copy.SerializeToString(deterministic=True)).hexdigest()


def fusions(module: Any) -> list[dict[str, str]]:
    """Fusions and custom calls of an HloModuleProto that are not inside a fusion."""
    # Every fusion's computation, nested fusions' (inside Triton's GEMM fusions) included.
    fused = {cid for c in module.computations for i in c.instructions if i.opcode == "fusion"
             for cid in i.called_computation_ids}
    out = []
    for comp in module.computations:
        if comp.id in fused:
            continue
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                kind = inst.fusion_kind
                backend = _backend_kind(inst.backend_config)
                out.append({"name": inst.name, "opcode": "fusion",
                            "kind": f"{kind} {backend}" if backend else kind})
            elif inst.opcode == "custom-call":
                out.append({"name": inst.name, "opcode": "custom-call", "kind": inst.custom_call_target})
    return out


def _backend_kind(config: bytes | str) -> str:
    """A fusion's ``fusion_backend_config.kind`` (GPU backend config JSON), or ''."""
    try:
        data = json.loads(config) if config else {}
    except ValueError:
        return ""
    kind = data.get("fusion_backend_config", {}).get("kind", "") if isinstance(data, dict) else ""
    return kind if isinstance(kind, str) else ""


def buffer_totals(assignment: Any) -> dict[str, int]:
    """:data:`BUFFER_FIELDS` of a BufferAssignmentProto's allocations."""
    totals = dict.fromkeys(BUFFER_FIELDS, 0)
    for a in assignment.buffer_allocations:
        totals["allocations"] += 1
        totals["total_bytes"] += a.size
        kind = ("parameter" if a.is_entry_computation_parameter else "constant" if a.is_constant
                else "thread_local" if a.is_thread_local else "output" if a.maybe_live_out else "temp")
        totals[f"{kind}_bytes"] += a.size
    return totals
