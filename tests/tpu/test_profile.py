"""tpu/profile.py: per-HLO-op device times read from a jax profile, and estimates against them.

The TPU layout ("/device:TPU:0" with the lines "XLA Modules" and "XLA Ops") is a synthetic
XSpace written as a text proto (jaxlib ships no xplane_pb2; ProfileData reads text protos);
the CPU layout is a real trace of a jit'ed function on the CPU backend.
"""

from __future__ import annotations

import pytest

from mlirhlo_driver.tpu import profile
from mlirhlo_driver.tpu.kernels import TpuKernelRow

jax = pytest.importorskip("jax")
pytest.importorskip("jax.profiler")
if not hasattr(jax.profiler, "ProfileData"):
    pytest.skip("jax.profiler.ProfileData needs jax >= 0.9", allow_module_level=True)


def _event(meta: int, start_us: float, dur_us: float) -> str:
    return f"events {{ metadata_id: {meta} offset_ps: {int(start_us * 1e6)} duration_ps: {int(dur_us * 1e6)} }}"


def tpu_xspace() -> bytes:
    """Two executions of module 'main' (ids 1, 2 name it and its ops), one of 'other': in each
    run of main, fusion.3 takes 10 then 12 us (an op of a loop body: twice), convolution.1 4 us."""
    modules = [_event(1, 0, 40), _event(1, 100, 40), _event(2, 200, 10)]
    ops = [_event(10, 1, 10), _event(10, 12, 12), _event(11, 30, 4),     # main, first run
           _event(10, 101, 10), _event(10, 112, 12), _event(11, 130, 5),  # main, second run
           _event(10, 201, 7)]                                           # other's fusion.3
    # A v5e's profile (jax 0.10.2) names an op by its whole text; the name is what precedes " = ".
    meta = {1: "main(7)", 2: "other(9)", 10: "%fusion.3 = f32[8,16]{1,0:T(8,128)} fusion(f32[8,16]{1,0:T(8,128)S(1)} "
                                              "%get-tuple-element.1), kind=kLoop, calls=%fused_computation.14",
            11: "convolution.1"}
    text = ("planes { id: 1 name: \"/device:TPU:0\" "
            f"lines {{ id: 1 name: \"XLA Modules\" timestamp_ns: 1000 {' '.join(modules)} }} "
            f"lines {{ id: 2 name: \"XLA Ops\" timestamp_ns: 1000 {' '.join(ops)} }} "
            + " ".join(f"event_metadata {{ key: {k} value {{ id: {k} name: \"{v}\" }} }}" for k, v in meta.items())
            + " } planes { id: 2 name: \"/host:CPU\" }")
    return jax.profiler.ProfileData.text_proto_to_serialized_xspace(text)


def test_device_ops_of_one_module_from_the_xla_ops_line():
    found = profile.op_times(tpu_xspace(), "main")
    assert set(found) == {"fusion.3", "convolution.1"}
    fusion = found["fusion.3"]
    assert (fusion.count, fusion.executions) == (4, 2)
    assert fusion.median_us == pytest.approx(11.0)
    assert fusion.per_execution_us == pytest.approx(22.0)
    assert found["convolution.1"].per_execution_us == pytest.approx(4.5)


def test_a_module_named_by_its_name_alone_or_every_module():
    assert profile.op_times(tpu_xspace(), "other")["fusion.3"].count == 1
    assert profile.op_times(tpu_xspace(), None)["fusion.3"].count == 5
    assert profile.op_times(tpu_xspace(), "absent") == {}


def test_profile_data_bytes_or_a_file_are_read_alike(tmp_path):
    path = tmp_path / "t.xplane.pb"
    path.write_bytes(tpu_xspace())
    data = jax.profiler.ProfileData.from_file(str(path))
    assert profile.op_times(path, "main") == profile.op_times(data, "main") == profile.op_times(str(path), "main")


def test_the_cpu_backends_thunks_are_read_from_the_host_plane(tmp_path):
    import jax.numpy as jnp

    @jax.jit
    def f(a, b):
        return jnp.tanh(a @ b).sum(0) + 1

    a = jnp.ones((64, 64))
    f(a, a).block_until_ready()
    with jax.profiler.trace(str(tmp_path)):
        for _ in range(3):
            f(a, a).block_until_ready()
    (path,) = tmp_path.glob("**/*.xplane.pb")
    found = profile.op_times(path, "jit_f")
    assert found, "the CPU trace holds XLA's thunks by HLO op"
    assert all(t.executions == 3 and t.count >= 3 and t.median_us >= 0 for t in found.values())
    assert profile.op_times(path, "jit_g") == {}


def _row(name: str, kind: str, micros: float | None) -> TpuKernelRow:
    return TpuKernelRow(name, "main", "fusion", kind, None, None, None if micros is None else int(micros * 1500),
                        None if micros is None else micros * 1e-6, None, None, None, None)


def test_compare_estimates_per_kind_median_and_worst():
    # per run of the op (a loop body's op runs twice per execution): fusion.3 11 us, convolution.1 4.5
    measured = profile.op_times(tpu_xspace(), "main")
    measured["fusion.9"] = profile.OpTime("fusion.9", 1.0, 1, 1.0, 1)
    rows = [_row("fusion.3", "loop fusion", 5.5), _row("convolution.1", "convolution", 9.0),
            _row("fusion.9", "loop fusion", 1.0), _row("fusion.0", "loop fusion", None)]
    summary = profile.compare_estimates(rows, measured)
    assert summary["loop fusion"]["n"] == 2
    assert summary["loop fusion"]["median"] == pytest.approx(1.5)
    assert summary["loop fusion"]["worst"] == pytest.approx(2.0)
    assert summary["loop fusion"]["worst_op"] == "fusion.3"
    assert summary["convolution"]["worst"] == pytest.approx(0.5)  # farthest from 1, below it
    assert summary["all"]["n"] == 3
    assert profile.compare_estimates([r.to_dict() for r in rows], measured) == summary
    assert "loop fusion" in profile.ratio_table(summary)
