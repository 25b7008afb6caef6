"""--xla_gpu_topology_filename (mlirhlo_driver/cuda/topology.py): XLA's inline PxHxD or a
GpuTopologyProto text file, its GPU as the spec, and the compile-only devices it gives."""

from __future__ import annotations

import pytest

from mlirhlo_driver.cuda import topology
from mlirhlo_driver.cuda.specs import SPEC_DIR
from mlirhlo_driver.errors import DriverError, SpecError
from tests.conftest import assert_mentions


def _topology_text(hosts: int, devices: int, spec: str | None = "gb200") -> str:
    """A GpuTopologyProto as XLA's gb200_2x4.txtpb lays one out: the shape, then the GPU."""
    text = f"# {hosts} hosts of {devices}\nnum_partitions: 1\nnum_hosts_per_partition: {hosts}\n" \
           f"num_devices_per_host: {devices}\n"
    if spec is not None:
        body = (SPEC_DIR / f"{spec}.txtpb").read_text()
        body = body[body.index("gpu_device_info {"):]
        text += "gpu_target_config {\n" + "".join(f"  {ln}\n" for ln in body.splitlines()) + "}\n"
    return text


@pytest.mark.parametrize("value, shape", [("1x2x4", "1x2x4"), ("cuda:2x1x8", "2x1x8"), ("GPU:1x1x1", "1x1x1")])
def test_inline_shape(value, shape):
    t = topology.resolve(value)
    assert (t.shape(), t.spec, t.source) == (shape, None, value)
    assert t.num_devices == eval(shape.replace("x", "*"))


def test_a_file_gives_its_shape_and_its_gpu(tmp_path):
    path = tmp_path / "gb200_2x4.txtpb"
    path.write_text(_topology_text(2, 4))
    t = topology.resolve(str(path))
    assert (t.shape(), t.num_devices, t.source) == ("1x2x4", 8, str(path))
    assert (t.spec.gpu, t.spec.sm, t.spec.name, t.spec.sm_count) == ("NVIDIA GB200", "sm_100a", "gb200_2x4", 152)


def test_a_file_without_a_gpu_gives_its_shape_alone(tmp_path):
    path = tmp_path / "t.txtpb"
    path.write_text(_topology_text(4, 2, spec=None))
    t = topology.resolve(str(path))
    assert (t.shape(), t.spec) == ("1x4x2", None)


@pytest.mark.parametrize("platform, spec, sm", [("oberon_b200", "gb200", "sm_100a"), ("oberon_b300", "gb300", "sm_103a"),
                                                 ("nvidia_h100", "h100_sxm", "sm_90a")])
def test_a_file_naming_a_platform_gives_the_shipped_spec_of_its_gpu(tmp_path, platform, spec, sm):
    """XLA's gb200_2x4.txtpb / gb300_4x4.txtpb hold no gpu_target_config, only a platform_version,
    which XLA reads as a GPU (GetGpuModel): the shipped spec of that GPU; an unknown one, none."""
    path = tmp_path / "t.txtpb"
    path.write_text(f'platform_version: "{platform}"\n' + _topology_text(2, 4, spec=None))
    t = topology.resolve(str(path))
    assert (t.shape(), t.spec.name, t.spec.sm) == ("1x2x4", spec, sm)
    path.write_text('platform_version: "tesla_k80"\n' + _topology_text(2, 4, spec=None))
    assert topology.resolve(str(path)).spec is None


@pytest.mark.parametrize("value, facts", [
    ("0x2x4", (">= 1",)), ("tpu:1x2x4", ("'tpu'", "CUDA")), ("nope.txtpb", ("nope.txtpb", "no such file"))])
def test_bad_values_name_the_flag(value, facts, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DriverError) as info:
        topology.resolve(value)
    assert info.value.message.startswith(f"--xla_gpu_topology_filename: {value}: ")
    assert_mentions(info.value.message, *facts)


def test_errors_in_the_file_point_at_its_lines(tmp_path):
    path = tmp_path / "t.txtpb"
    good = _topology_text(2, 4)
    path.write_text(good.replace("num_devices_per_host: 4", "num_devices_per_hots: 4"))
    with pytest.raises(SpecError) as info:
        topology.resolve(str(path))
    assert (info.value.file, info.value.line) == (str(path), 4)
    # Inside gpu_target_config: the spec's own validation, at the file's own line and column.
    lines = good.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("core_count:"))
    path.write_text(good.replace("core_count: 152", "core_count: -152"))
    with pytest.raises(SpecError) as info:
        topology.resolve(str(path))
    assert (info.value.file, info.value.line) == (str(path), at + 1), info.value.text()
    path.write_text(good.replace("num_hosts_per_partition: 2\n", ""))
    with pytest.raises(SpecError) as info:
        topology.resolve(str(path))
    assert_mentions(info.value.message, "num_hosts_per_partition")
    path.write_text(good.rstrip().removesuffix("}"))
    with pytest.raises(SpecError) as info:
        topology.resolve(str(path))
    assert (info.value.line, info.value.col) == (5, 1)


@pytest.mark.golden
def test_messages_exactly(tmp_path):
    with pytest.raises(DriverError) as info:
        topology.resolve(str(tmp_path / "gb200_2x4.txtpb"))
    assert info.value.text() == (f"--xla_gpu_topology_filename: {tmp_path}/gb200_2x4.txtpb: no such file "
                                 "(give a GpuTopologyProto text file or PARTITIONSxHOSTSxDEVICES, e.g. 1x2x4)")
    with pytest.raises(DriverError) as info:
        topology.resolve("tpu:1x2x4")
    assert info.value.text() == ("--xla_gpu_topology_filename: tpu:1x2x4: platform 'tpu' is not CUDA "
                                 "(cuda:PxHxD, or PxHxD)")


def test_the_compile_only_devices_are_the_topology_s(tmp_path):
    """The CUDA plugin makes the topology's devices (1x2x4: 8 devices on 2 hosts), for the
    file's GPU; a compile that needs more devices than the topology has is an error."""
    from mlirhlo_driver.xla import platforms

    path = tmp_path / "gb200_2x4.txtpb"
    path.write_text(_topology_text(2, 4))
    target = platforms.resolve("cuda", cli_flags={"xla_gpu_topology_filename": str(path)}).targets[0]
    assert target.spec.gpu == "NVIDIA GB200"
    devices = target.compile_devices(2, on_device=False)
    assert len(devices) == 8 and {d.device_kind for d in devices} == {"NVIDIA GB200"}
    assert sorted({d.process_index for d in devices}) == [0, 1]
    with pytest.raises(DriverError) as info:
        target.compile_devices(9, on_device=False)
    assert_mentions(info.value.message, "9 devices", "has 8", str(path))
