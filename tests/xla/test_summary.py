"""xla/summary.py: one compile summarized for diff (fusions, buffers, memory stats)."""

from __future__ import annotations

import json

import pytest

# ------------------------------------------------------------------ summarize, on a made-up compile

def _artifacts(monkeypatch, files: dict[str, bytes], memory_stats=None, compile_error=None):
    """A made-up compile (XlaArtifacts) holding ``files``."""
    from mlirhlo_driver.xla.backend import XlaArtifacts

    return XlaArtifacts("cuda", "m", files, memory_stats=memory_stats or {}, compile_error=compile_error)


def _hlo_proto(fusion_name: str, sizes: list[int]) -> bytes:
    """An optimized HloProto: one kLoop fusion called ``fusion_name``; temp allocations of ``sizes``."""
    from mlirhlo_driver.ir import hlo_proto

    proto = hlo_proto.message_class("HloProto")()
    comp = proto.hlo_module.computations.add(id=1)
    comp.instructions.add(name=fusion_name, opcode="fusion", fusion_kind="kLoop", called_computation_ids=[2])
    for size in sizes:
        proto.buffer_assignment.buffer_allocations.add(size=size)
    return hlo_proto.encode(proto)


def test_fusions_outside_fused_computations_only():
    """Nested fusions (inside a Triton GEMM fusion's computation) are part of their fusion."""
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.xla.summary import fusions

    module = hlo_proto.message_class("HloModuleProto")()
    entry, fused, nested = module.computations.add(), module.computations.add(), module.computations.add()
    entry.id, fused.id, nested.id = 1, 2, 3
    entry.instructions.add(name="gemm_fusion_dot.5", opcode="fusion", fusion_kind="kCustom",
                           called_computation_ids=[2],
                           backend_config=b'{"fusion_backend_config":{"kind":"__triton_nested_gemm_fusion"}}')
    entry.instructions.add(name="cublas-lt-matmul.2", opcode="custom-call", custom_call_target="__cublas$lt$matmul")
    fused.instructions.add(name="block_fusion", opcode="fusion", fusion_kind="kCustom", called_computation_ids=[3])
    nested.instructions.add(name="inner", opcode="fusion", fusion_kind="kLoop")
    assert fusions(module) == [
        {"name": "gemm_fusion_dot.5", "opcode": "fusion", "kind": "kCustom __triton_nested_gemm_fusion"},
        {"name": "cublas-lt-matmul.2", "opcode": "custom-call", "kind": "__cublas$lt$matmul"}]


@pytest.mark.parametrize("config, kind", [
    (b'{"fusion_backend_config":{"kind":"__triton_gemm"}}', "__triton_gemm"),
    (b"", ""), (b"not json", ""), (b"[1, 2]", ""), (b'{"operation_queue_id":"0"}', ""),
    (b'{"fusion_backend_config":{"kind":7}}', ""),
])
def test_a_fusions_backend_kind_is_read_from_its_config_or_empty(config, kind):
    from mlirhlo_driver.xla.summary import _backend_kind

    assert _backend_kind(config) == kind


def test_buffer_totals_count_each_allocation_once_and_its_bytes_by_kind():
    """The buffers table: one allocation is one, and its bytes go to exactly one kind (the first
    of parameter, constant, thread-local, live-out that applies; else temp)."""
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.xla.summary import BUFFER_FIELDS, buffer_totals

    assignment = hlo_proto.message_class("BufferAssignmentProto")()
    for size, flags in [(8, {"is_entry_computation_parameter": True, "maybe_live_out": True}),
                        (16, {"is_constant": True}), (32, {"is_thread_local": True}),
                        (64, {"maybe_live_out": True}), (128, {}), (256, {})]:
        assignment.buffer_allocations.add(size=size, **flags)
    assert buffer_totals(assignment) == dict(zip(BUFFER_FIELDS, (6, 504, 8, 64, 384, 16, 32)))
    assert buffer_totals(hlo_proto.message_class("BufferAssignmentProto")()) == dict.fromkeys(BUFFER_FIELDS, 0)


def test_summarize_reads_the_first_optimized_proto_and_every_memory_stat(monkeypatch):
    """The optimized module's proto (the first by name; not the unoptimized one) gives fusions and
    buffers; memory has all six stats, as ints, in order."""
    from mlirhlo_driver.xla.summary import MEMORY_FIELDS, summarize

    art = _artifacts(monkeypatch, {
        "sm_9.0_gpu_after_optimizations.hlo.pb": _hlo_proto("second", [1]),
        "gpu_after_optimizations.hlo.pb": _hlo_proto("loop_add_fusion", [64, 32]),
        "before_optimizations.hlo.pb": _hlo_proto("unoptimized", [9]),
        "gpu_after_optimizations.hlo.pb.txt": b"not a proto"},
        memory_stats={"peak_memory_in_bytes": 96.0, "temp_size_in_bytes": 32, "argument_size_in_bytes": 64,
                      "output_size_in_bytes": 8, "alias_size_in_bytes": 0, "serialized_size_in_bytes": 5,
                      "generated_code_size_in_bytes": 7})
    s = summarize(art)
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.xla.summary import fingerprint

    # The fingerprint is the optimized module's (the first proto), not another's.
    chosen = hlo_proto.decode(_hlo_proto("loop_add_fusion", [64, 32]), "HloProto").hlo_module
    assert s.pop("hlo_fingerprint") == fingerprint(chosen) != fingerprint(
        hlo_proto.decode(_hlo_proto("second", [1]), "HloProto").hlo_module)
    assert s == {"fusions": [{"name": "loop_add_fusion", "opcode": "fusion", "kind": "kLoop"}],
                 "buffers": {"allocations": 2, "total_bytes": 96, "parameter_bytes": 0, "output_bytes": 0,
                             "temp_bytes": 96, "constant_bytes": 0, "thread_local_bytes": 0},
                 "memory": {"peak_memory_in_bytes": 96, "temp_size_in_bytes": 32, "argument_size_in_bytes": 64,
                            "output_size_in_bytes": 8, "alias_size_in_bytes": 0, "generated_code_size_in_bytes": 7}}
    assert list(s["memory"]) == list(MEMORY_FIELDS) and type(s["memory"]["peak_memory_in_bytes"]) is int
    json.dumps(s)  # serializable, for the cache


@pytest.mark.parametrize("compile_error, message", [
    (None, "XLA wrote no optimized HloProto on cuda"),
    ("INTERNAL: ptxas died", "XLA wrote no optimized HloProto on cuda (compile failed: INTERNAL: ptxas died)"),
])
@pytest.mark.golden
def test_summarize_without_an_optimized_proto_says_so_and_why(monkeypatch, compile_error, message):
    """Golden: no optimized proto (the compile failed before it, or XLA did not dump it): a StageError
    naming the platform, and the compile's error when there was one."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.summary import summarize

    art = _artifacts(monkeypatch, {"before_optimizations.hlo.pb": _hlo_proto("f", []),
                             "gpu_after_optimizations.hlo.pb.txt": b""},
               compile_error=compile_error)
    with pytest.raises(StageError) as ei:
        summarize(art)
    assert ei.value.message == message
