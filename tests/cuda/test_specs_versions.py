"""cuda/specs.py against the installed XLA: the specs parse in jaxlib's schema, per-sm limits
follow the compute capability, and the CUDA/cuDNN versions follow the plugin in use.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_helper_keeps_fake_versions():
    """isolate's helper is a fork of this process: one started while a test fakes the
    versions would keep the fake for every later test. Each test here ends without one."""
    yield
    from mlirhlo_driver._native import isolate

    isolate.shutdown()


# ------------------------------------------------- differences between releases

def test_gpu_specs_reach_xla_in_the_installed_schema():
    """Each jaxlib gets the shipped text in its own schema: 0.9 without the fields it lacks and
    with the CUDA runtime version where it reads it; 0.10.2 unchanged; 0.12 with cuDNN's
    version moved into gpu_device_info and the per-SM limits its XLA reads filled in."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import specs as gpu_specs
    from mlirhlo_driver.ir import protos

    text = gpu_specs.resolve_spec("h100_sxm").text
    fitted = gpu_specs.target_config_for_installed_xla(text)
    spec = protos.parse_text(fitted, "stream_executor.GpuTargetConfigProto")  # XLA's own schema
    info = spec.gpu_device_info
    info_fields = info.DESCRIPTOR.fields_by_name
    built = _jaxlib.plugin_build_versions().get("cuda", "12.9.0")
    if "runtime_version" not in info_fields:  # 0.9
        assert (spec.runtime_version.major, spec.runtime_version.minor) == (12, 9)
    else:
        assert info.runtime_version == info.compile_time_toolkit_version == built
    if "dnn_version_info" not in spec.DESCRIPTOR.fields_by_name:  # 0.12
        assert "dnn_version_info" not in fitted
        assert info.dnn_version == _jaxlib.plugin_build_versions().get("cudnn", "9.8.0")
    if "max_blocks_per_multiprocessor" in info_fields:
        assert (info.max_blocks_per_multiprocessor, info.reserved_shared_memory_per_block) == (32, 1024)
    assert info.cuda_compute_capability.major == 9


@pytest.mark.parametrize("name, blocks, reserved", [
    ("p100", 32, 0), ("v100", 32, 0), ("t4", 16, 0), ("a100_sxm_80", 32, 1024), ("a10", 16, 1024),
    ("l4", 24, 1024), ("h100_sxm", 32, 1024), ("b200", 32, 1024)])
def test_per_sm_limits_follow_the_compute_capability(name, blocks, reserved):
    """The limits a newer XLA reads from a real GPU, as cudaDeviceProp gives them per
    compute capability: blocks per SM, and the 1 KiB a block loses to the driver from 8.0 on."""
    from mlirhlo_driver.cuda import specs as gpu_specs
    from mlirhlo_driver.ir import protos

    spec = protos.parse_text(gpu_specs.target_config_for_installed_xla(gpu_specs.resolve_spec(name).text),
                             "stream_executor.GpuTargetConfigProto")
    info = spec.gpu_device_info
    if "max_blocks_per_multiprocessor" not in info.DESCRIPTOR.fields_by_name:
        pytest.skip("this jaxlib's XLA reads no per-SM limits from the spec")
    assert (info.max_blocks_per_multiprocessor, info.reserved_shared_memory_per_block) == (blocks, reserved)


def test_spec_cuda_versions_follow_the_plugin(monkeypatch):
    """A spec written for CUDA 12.9 gets the versions of the plugin that compiles it (what a
    GPU running that plugin reports): 13.0 under jax-cuda13-plugin, 12.8 under an older one."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import specs as gpu_specs
    from mlirhlo_driver.ir import protos

    text = gpu_specs.resolve_spec("b200").text
    # No cache_clear: the fitted text is kept per plugin build, so each fake gets its own.
    for cuda, cudnn in (("13.0.0", "9.12.0"), ("12.8.0", "9.7.1")):
        monkeypatch.setattr(_jaxlib, "plugin_build_versions", lambda: {"cuda": cuda, "cudnn": cudnn})
        spec = protos.parse_text(gpu_specs.target_config_for_installed_xla(text),
                                 "stream_executor.GpuTargetConfigProto")
        info = spec.gpu_device_info
        if "runtime_version" in info.DESCRIPTOR.fields_by_name:
            assert info.runtime_version == info.driver_version == cuda
            assert info.compile_time_toolkit_version == cuda
        else:
            assert f"{spec.runtime_version.major}.{spec.runtime_version.minor}.0" == cuda
        if "dnn_version_info" in spec.DESCRIPTOR.fields_by_name:
            dnn = spec.dnn_version_info
            assert f"{dnn.major}.{dnn.minor}.{dnn.patch}" == cudnn
        else:
            assert info.dnn_version == cudnn
