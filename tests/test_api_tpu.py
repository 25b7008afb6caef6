"""The Python API with a TPU target (Target.tpu, mh.compile): the compile runs in the driver's
TPU process, and the caller's process is left as it was: libtpu never loaded in it, its
environment unchanged."""

from __future__ import annotations

import os

import pytest

import mlirhlo_driver as mh
from tests.conftest import DATA
from tests.tpu.conftest import needs_libtpu

pytestmark = [needs_libtpu, pytest.mark.slow]


def _libtpu_mapped() -> bool:
    with open(f"/proc/{os.getpid()}/maps") as f:
        return "libtpu" in f.read()


def test_a_tpu_compile_leaves_the_callers_process_as_it_was():
    env = dict(os.environ)
    c = mh.compile(str(DATA / "tpu" / "matmul_tanh.mlir"), mh.Target.tpu("v5p:2x2x1"))
    assert c.platform == "tpu"
    assert c.stage("hlo").startswith("HloModule")
    assert "fits" in c.stage("memory")
    assert c.artifacts().memory_stats["argument_size_in_bytes"] == 655_360
    assert not _libtpu_mapped()
    assert dict(os.environ) == env


def test_libtpus_options_in_xla_flags_are_refused_in_a_users_process_not_taken_out(monkeypatch):
    """A command's own process takes libtpu's names out of XLA_FLAGS (XLA would end it on
    them); a user's process is never changed: a typed error says where to give them."""
    monkeypatch.delenv("MLIRHLO_OWN_PROCESS", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_tpu_max_hbm_size_mib=60")
    env = dict(os.environ)
    with pytest.raises(mh.FlagError) as e:
        mh.compile(str(DATA / "tpu" / "matmul_tanh.mlir"), mh.Target.tpu("v5e:1x1")).stage("memory")
    assert "xla_tpu_max_hbm_size_mib" in e.value.message and "xla_flags=" in e.value.hint
    assert dict(os.environ) == env


def test_a_jax_function_compiles_for_tpu_through_the_api():
    from mlirhlo_driver._native import isolate

    target = mh.Target.tpu("v6e-4")
    before = set(isolate._helpers)
    c = mh.compile(f"{DATA / 'model.py'}:mlp", target, args="f32[64,256],f32[256,512],f32[512]")
    assert c.stage("hlo").startswith("HloModule jit_mlp")
    assert not _libtpu_mapped()
    # The lowering and the compile share one TPU process (the target's environment).
    assert set(isolate._helpers) - before <= {tuple(sorted(target.compile_env().items()))}


def test_a_run_on_tpu_is_refused_not_faked():
    c = mh.compile(str(DATA / "tpu" / "matmul_tanh.mlir"), mh.Target.tpu("v5e:1x1"))
    with pytest.raises(mh.DriverError) as e:
        c.run()
    assert "no TPU is attached" in e.value.message


def test_fit_gives_a_frozen_row_per_target_a_refusal_among_them():
    import dataclasses

    rows = mh.fit(str(DATA / "tpu" / "too_big_for_v5e.mlir"), [mh.Target.tpu("v5e:1x1"), mh.Target.tpu("v5p:2x2x1")])
    assert [(r.target, r.fits, r.source) for r in rows] == [("tpu (v5e:1x1)", False, "xla-oom"),
                                                            ("tpu (v5p:2x2x1)", True, "compile")]
    assert rows[0].headroom_bytes < 0 < rows[1].headroom_bytes
    # the figure the memory stage's verdict reads, its "total"
    memory = mh.compile(str(DATA / "tpu" / "too_big_for_v5e.mlir"), mh.Target.tpu("v5p:2x2x1")).stage("memory")
    assert f"{rows[1].required_bytes:,} B" in next(ln for ln in memory.splitlines() if ln.startswith("total:"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].fits = True  # type: ignore[misc]
    assert not _libtpu_mapped()
    with pytest.raises(mh.DriverError, match="CPU target"):
        mh.fit(str(DATA / "mm_add.mlir"), mh.Target.cpu())
