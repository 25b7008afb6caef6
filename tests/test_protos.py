"""mlirhlo_driver.ir.protos: XLA's descriptors read from jaxlib's ``protodesc_cold`` section.

These tests compare the extracted descriptors with the installed jaxlib and
fail (never skip) when the section is missing: the driver's HLO proto
support depends on it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mlirhlo_driver.errors import EnvironmentMismatch, InputError, SpecError
from mlirhlo_driver.ir import protos

REPO = Path(__file__).resolve().parent.parent

WANTED = ["xla/service/hlo.proto", "xla/xla_data.proto", "xla/xla.proto",
          "xla/autotune_results.proto", "xla/service/gpu/backend_configs.proto",
          "xla/stream_executor/device_description.proto"]


def test_section_holds_xla_protos():
    from google.protobuf import descriptor_pb2

    files = protos.file_descriptors("jaxlib")
    assert len(files) >= 100, len(files)
    for name in WANTED:
        assert name in files, name
    for name, blob in files.items():
        fd = descriptor_pb2.FileDescriptorProto.FromString(blob)
        assert fd.name == name
        for dep in fd.dependency:  # the import closure is there too
            assert dep in files, (name, dep)
    hlo = descriptor_pb2.FileDescriptorProto.FromString(files["xla/service/hlo.proto"])
    assert hlo.package == "xla"
    assert {"HloModuleProto", "HloProto", "HloInstructionProto"} <= {m.name for m in hlo.message_type}


def test_cuda_plugin_section_agrees_with_jaxlib():
    jaxlib_files = protos.file_descriptors("jaxlib")
    plugin_files = protos.file_descriptors("cuda_plugin")  # a dependency of the driver
    assert len(plugin_files) >= 50, len(plugin_files)
    assert "xla/stream_executor/device_description.proto" in plugin_files
    shared = set(jaxlib_files) & set(plugin_files)
    assert "xla/service/hlo.proto" in shared
    assert [n for n in shared if jaxlib_files[n] != plugin_files[n]] == []


def _without_unknown(msg):
    copy = type(msg)()
    copy.CopyFrom(msg)
    copy.DiscardUnknownFields()
    return copy


def test_descriptors_know_what_jaxlib_writes():
    """Protos jaxlib itself serializes decode with no unknown field and re-encode exactly."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.filtered_native_stderr():
        from jaxlib import xla_client

        _hlo = _jaxlib.hlo_lib()
    text = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}
ENTRY main {
  p = f32[4]{0} parameter(0), sharding={devices=[2]0,1}, metadata={op_name="x" source_file="a.py" source_line=3}
  c = f32[4]{0} constant({1, 2, 3, 4}), frontend_attributes={a="1"}
  ROOT s = f32[4]{0} add(p, c)
}
"""
    pb = _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    msg = protos.decode(pb, "xla.HloModuleProto")
    assert _without_unknown(msg) == msg and protos.serialize(msg) == pb
    # CompileOptionsProto carries ExecutableBuildOptions and a full DebugOptions.
    opts = xla_client.CompileOptions()
    raw = opts.SerializeAsString()
    decoded = protos.decode(raw, "xla.CompileOptionsProto")
    assert _without_unknown(decoded) == decoded
    debug = decoded.executable_build_options.debug_options
    assert debug.DESCRIPTOR.full_name == "xla.DebugOptions"
    assert debug.ListFields()  # XLA's defaults are set
    assert protos.message_class("xla.DebugOptions") is type(debug)


def test_message_classes_for_gpu_specs_and_autotuning():
    spec_cls = protos.message_class("stream_executor.GpuTargetConfigProto")
    assert "gpu_device_info" in spec_cls.DESCRIPTOR.fields_by_name
    assert "autotune_results" in spec_cls.DESCRIPTOR.fields_by_name
    assert "version" in protos.message_class("xla.AutotuneResults").DESCRIPTOR.fields_by_name
    specs = sorted((REPO / "mlirhlo_driver" / "gpu_specs").glob("*.txtpb"))
    assert specs
    from mlirhlo_driver.cuda import specs as gpu_specs

    for path in specs:
        # As XLA receives them: an older jaxlib's schema lacks some newer fields.
        text = gpu_specs.target_config_for_installed_xla(path.read_text())
        spec = protos.parse_text(text, "stream_executor.GpuTargetConfigProto",
                                 file=str(path), error=SpecError)
        assert spec.gpu_device_info.threads_per_warp == 32, path
        assert spec.platform_name, path
    with pytest.raises(SpecError) as info:
        protos.parse_text("gpu_device_info {\n  threads_per_wrap: 32\n}\n",
                          "stream_executor.GpuTargetConfigProto", file="x.txtpb", error=SpecError)
    assert (info.value.line, info.value.col) == (2, 3)
    assert info.value.hint.startswith("did you mean 'threads_per_warp'")
    with pytest.raises(KeyError):
        protos.message_class("xla.NoSuchMessage")


def test_json(tmp_path):
    cls = protos.message_class("xla.AutotuneResults")
    msg = cls(version=3)
    entry = msg.results.add(device="sm_90", hlo="x")
    entry.result.run_time.nanos = 5
    text = protos.to_json(msg)
    assert '"version": 3' in text and '"device": "sm_90"' in text
    assert protos.parse_json(text, "xla.AutotuneResults") == msg
    with pytest.raises(InputError, match="invalid xla.AutotuneResults JSON"):
        protos.parse_json('{"versoin": 3}', "xla.AutotuneResults", file="r.json")


def _descriptor(name: str, package: str, deps=()) -> bytes:
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto(name=name, package=package, dependency=list(deps), syntax="proto3")
    fd.message_type.add(name="M").field.add(name="x", number=1, type=5, label=1)
    return fd.SerializeToString()


def test_split_section_finds_descriptors_among_other_data():
    a = _descriptor("a/a.proto", "pa")
    b = _descriptor("b/b.proto", "pb", ["a/a.proto"])
    # Not descriptors: an import-like record, a name followed by an invalid wire type, text.
    junk = b"\x81\x00\x00\x00\xff\xff\x1a\x07x.proto\x00\n\x07y.proto\x07\x00junk .proto \x12\x00"
    sec = junk + a + b"\x00" + b"\x00" * 7 + b + b"\x00" + junk
    files = protos.split_section(sec)
    assert sorted(files) == ["a/a.proto", "b/b.proto"]
    assert files["a/a.proto"].data == a and files["b/b.proto"].data == b
    assert files["b/b.proto"].deps == ["a/a.proto"] and files["b/b.proto"].package == "pb"


@pytest.fixture
def fake_jaxlib(monkeypatch):
    """Point the "jaxlib" library at another file, with the caches reset around the test."""
    protos._library_files.cache_clear()

    def use(path):
        monkeypatch.setattr(protos, "library_path", lambda library: str(path))

    yield use
    monkeypatch.undo()
    protos._library_files.cache_clear()


def test_missing_section_is_a_clear_error(fake_jaxlib, tmp_path):
    from importlib import metadata

    version = metadata.version("jaxlib")
    # An ELF file without the section: the Python interpreter.
    exe = os.path.realpath(sys.executable)
    with open(exe, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    fake_jaxlib(exe)
    with pytest.raises(protos.ProtoSchemaError) as info:
        protos.file_descriptors("jaxlib")
    err = info.value
    assert isinstance(err, EnvironmentMismatch)
    assert exe in err.message and f"jaxlib {version}" in err.message and "protodesc_cold" in err.message
    # Not an ELF file at all.
    other = tmp_path / "libjax_common.so"
    other.write_bytes(b"MZ not elf")
    fake_jaxlib(other)
    protos._library_files.cache_clear()
    with pytest.raises(protos.ProtoSchemaError, match=f"{other}.*jaxlib {version}.*not an ELF file"):
        protos.file_descriptors("jaxlib")


def test_no_section_fails_at_use(tmp_path):
    """A fresh process whose jaxlib lacks the section fails with the typed error at
    first use (this process's pool is already loaded)."""
    import subprocess

    code = f"""
from mlirhlo_driver.ir import protos; from mlirhlo_driver.ir import hlo_proto
protos.library_path = lambda library: {os.path.realpath(sys.executable)!r}
try:
    hlo_proto.decode(b"")
except protos.ProtoSchemaError as e:
    print(e.format())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.startswith("error: ") and "has no 'protodesc_cold' section" in out.stdout
    assert "pyproject.toml" in out.stdout  # the hint says what to install
