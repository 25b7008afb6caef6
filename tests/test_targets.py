"""The top-level targets module: what a CUDA target's tools are (``--version``)."""

from __future__ import annotations

from mlirhlo_driver import targets


def test_the_users_cuda_data_dir_comes_from_xla_flags_and_a_bad_xla_flags_is_ignored(monkeypatch):
    """The CUDA tools are looked up in XLA_FLAGS' --xla_gpu_cuda_data_dir; unset or empty is
    None, and an XLA_FLAGS that does not parse does not stop --version or `specs list`."""
    assert targets._user_cuda_dir() is None
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_cuda_data_dir=/opt/cuda-12.9 --xla_cpu_enable_fast_math")
    assert targets._user_cuda_dir() == "/opt/cuda-12.9"
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_cuda_data_dir=")
    assert targets._user_cuda_dir() is None
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_cuda_data_dir='/opt/unterminated")
    assert targets._user_cuda_dir() is None


def test_the_nvdisasm_line_asks_for_sm_90a_when_the_ptxas_lists_no_arch(monkeypatch):
    """--version: a ptxas that reported no targets is asked about as XLA's default (sm_90a),
    and names no sm_60/sm_70 nvdisasm when it cannot target sm_70."""
    from types import SimpleNamespace

    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    asked: list[str] = []

    def nvdisasm_for(sm, data_dir=None):
        asked.append(sm)
        return SimpleNamespace(version_str="12.9", path=f"/nvdisasm-for-{sm}")

    monkeypatch.setattr(cuda_binaries, "nvdisasm_for", nvdisasm_for)
    monkeypatch.setattr(cuda_tools, "cuda_data_dir", lambda user_dir=None: ("/cuda", "pip"))
    monkeypatch.setattr(cuda_tools, "libdevice", lambda d=None: f"{d}/libdevice.10.bc")
    no_archs = SimpleNamespace(archs=(), can_target=lambda sm: False)
    assert targets.cuda_tool_lines(no_archs) == ["libdevice /cuda/libdevice.10.bc", "nvdisasm 12.9 /nvdisasm-for-sm_90a"]
    assert asked == ["sm_90a"]
