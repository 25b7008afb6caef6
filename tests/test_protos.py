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


# ------------------------------------------------------- integer-keyed maps, as C++ writes them

# key type -> value type of each map field of the message built below: every integer key type
# (and bool), every scalar value type, and a message value.
_MAP_FIELDS = [("int32", "int32"), ("int64", "sint64"), ("uint32", "fixed32"), ("uint64", "sfixed64"),
               ("sint32", "bool"), ("sint64", "string"), ("fixed32", "bytes"), ("fixed64", "double"),
               ("sfixed32", "float"), ("sfixed64", "uint64"), ("bool", "sint32"), ("int32", "uint32"),
               ("int64", "int64"), ("uint32", "fixed64"), ("uint64", "sfixed32"), ("int32", "message")]


def _map_message_class(name: str = "M"):
    """A message with one map field per _MAP_FIELDS row (a dynamic descriptor: no .proto file);
    ``Outer`` holds such messages in a repeated and a singular field."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    kind = {t: getattr(F, f"TYPE_{t.upper()}") for k, v in _MAP_FIELDS for t in (k, v) if t != "message"}
    fdp = descriptor_pb2.FileDescriptorProto(name="mlirhlo_test_maps.proto", package="t", syntax="proto3")
    inner = fdp.message_type.add(name="Inner")
    inner.field.add(name="x", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m = fdp.message_type.add(name="M")
    for i, (k, v) in enumerate(_MAP_FIELDS, start=1):
        entry = m.nested_type.add(name=f"F{i}Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=kind[k], label=F.LABEL_OPTIONAL)
        if v == "message":
            entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, type_name=".t.Inner",
                            label=F.LABEL_OPTIONAL)
        else:
            entry.field.add(name="value", number=2, type=kind[v], label=F.LABEL_OPTIONAL)
        m.field.add(name=f"f{i}", number=i, type=F.TYPE_MESSAGE, type_name=f".t.M.F{i}Entry",
                    label=F.LABEL_REPEATED)
    outer = fdp.message_type.add(name="Outer")  # maps reached through a repeated and a singular field
    outer.field.add(name="many", number=1, type=F.TYPE_MESSAGE, type_name=".t.M", label=F.LABEL_REPEATED)
    outer.field.add(name="one", number=2, type=F.TYPE_MESSAGE, type_name=".t.M", label=F.LABEL_OPTIONAL)
    outer.field.add(name="plain", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"t.{name}"))


def _strategy(t: str):
    from hypothesis import strategies as st

    bits = {"int32": (-2**31, 2**31 - 1), "sint32": (-2**31, 2**31 - 1), "sfixed32": (-2**31, 2**31 - 1),
            "int64": (-2**63, 2**63 - 1), "sint64": (-2**63, 2**63 - 1), "sfixed64": (-2**63, 2**63 - 1),
            "uint32": (0, 2**32 - 1), "fixed32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1), "fixed64": (0, 2**64 - 1)}
    if t in bits:
        lo, hi = bits[t]
        # the varint boundaries (a 7-bit group more) and the ends, besides anything between
        edges = [v for n in range(0, 64, 7) for v in (2**n - 1, 2**n, -2**n) if lo <= v <= hi]
        return st.one_of(st.sampled_from(edges + [lo, hi]), st.integers(lo, hi))
    return {"bool": st.booleans(), "string": st.text(max_size=20), "bytes": st.binary(max_size=20),
            "double": st.floats(allow_nan=False), "float": st.floats(width=32, allow_nan=False),
            "message": st.integers(-2**63, 2**63 - 1)}[t]


@pytest.mark.parametrize("i", range(1, len(_MAP_FIELDS) + 1), ids=[f"{k}-{v}" for k, v in _MAP_FIELDS])
def test_integer_keyed_maps_serialize_as_cpp_does(i):
    """protos.serialize: every integer key type and every value type, key and value encoded
    as protobuf encodes them (one entry: the library's own bytes), entries by ascending key."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    M = _map_message_class()
    k, v = _MAP_FIELDS[i - 1]

    def fill(m, i, entries):
        field = getattr(m, f"f{i}")
        for key, value in entries.items():
            if _MAP_FIELDS[i - 1][1] == "message":
                field[key].x = value
            else:
                field[key] = value

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        key, value = data.draw(_strategy(k)), data.draw(_strategy(v))
        one = M()
        fill(one, i, {key: value})
        assert protos.serialize(one) == one.SerializeToString(), (k, v, key, value)
        entries = data.draw(st.dictionaries(_strategy(k), _strategy(v), min_size=2, max_size=6))
        many = M()
        fill(many, i, entries)
        data_bytes = protos.serialize(many)
        back = M.FromString(data_bytes)
        assert back == many
        # one record per entry, in ascending key order: each is the entry alone, serialized
        alone = []
        for key in sorted(entries):
            m = M()
            fill(m, i, {key: entries[key]})
            alone.append(m.SerializeToString())
        assert data_bytes == b"".join(alone)

    check()


def test_maps_inside_repeated_and_singular_messages_are_rewritten_too():
    """Each nested message's bytes are its own C++ bytes (ascending keys), in place."""
    Outer = _map_message_class("Outer")
    o = Outer(plain="x")
    for m, base in ((o.many.add(), 0), (o.many.add(), 100), (o.one, 200)):
        for key in (3, 1, 2):
            m.f1[base + key] = key
            m.f6[-(base + key)] = str(key)
    data = protos.serialize(o)
    assert Outer.FromString(data) == o
    for m in (*o.many, o.one):
        assert protos.serialize(m) in data
    assert protos.serialize(Outer(plain="x")) == Outer(plain="x").SerializeToString()


# ------------------------------------------------------- ELF section header table bounds

def _elf_with_sections(sections: list[tuple[bytes, int, bytes]], shstrndx: int | None = None) -> bytes:
    """A 64-bit little-endian ELF file holding ``sections`` ((name, sh_type, data) after
    the null section) plus a .shstrtab, the header table last; ``shstrndx`` defaults to
    the .shstrtab's index."""
    import struct

    names = b"\0"
    entries = [(0, 0, b"")]
    for name, sh_type, data in [*sections, (b".shstrtab", 3, b"")]:
        entries.append((len(names), sh_type, data))
        names += name + b"\0"
    entries[-1] = (entries[-1][0], 3, names)
    body = b""
    offsets = []
    for _, _, data in entries:
        offsets.append(64 + len(body))
        body += data
    shoff = 64 + len(body)
    shnum = len(entries)
    head = bytearray(64)
    head[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", head, 0x28, shoff)
    struct.pack_into("<HHH", head, 0x3A, 64, shnum, shnum - 1 if shstrndx is None else shstrndx)
    table = b"".join(struct.pack("<IIQQQQ", name_off, sh_type, 0, 0, off, len(data)) + b"\0" * 24
                     for (name_off, sh_type, data), off in zip(entries, offsets))
    return bytes(head) + body + table


def test_section_name_table_index_must_lie_inside_the_header_table(fake_jaxlib, tmp_path):
    """elf_section reads the section whose names table is the last header (index shnum-1)
    and rejects a names-table index equal to shnum as a truncated table (ValueError, so a
    ProtoSchemaError at use), never a raw struct error."""
    desc = _descriptor("a/a.proto", "pa")
    lib = tmp_path / "libjax_common.so"
    lib.write_bytes(_elf_with_sections([(protos.SECTION, 1, desc + b"\x00")]))
    assert protos.elf_section(str(lib)) == desc + b"\x00"
    fake_jaxlib(lib)
    assert protos.file_descriptors("jaxlib") == {"a/a.proto": desc}

    shnum = 3  # null, protodesc_cold, .shstrtab
    for bad in (shnum, shnum + 1):
        lib.write_bytes(_elf_with_sections([(protos.SECTION, 1, desc + b"\x00")], shstrndx=bad))
        with pytest.raises(ValueError, match="truncated ELF section header table"):
            protos.elf_section(str(lib))
        protos._library_files.cache_clear()
        with pytest.raises(protos.ProtoSchemaError, match="truncated ELF section header table"):
            protos.file_descriptors("jaxlib")


# ------------------------------------------------------- groups in the wire format

def test_records_skip_groups_holding_any_field_and_refuse_bad_wire_types_inside():
    """A group (wire type 3) is one record whatever fields it holds (odd or even numbers, any
    valid wire type, nested groups); a wire type 6 or 7 or field number 0 inside it is refused."""
    inner = (b"\x08\x01"            # field 1, varint
             b"\x11" + b"\0" * 8 +  # field 2, fixed64
             b"\x1a\x02ab"          # field 3, length-delimited
             b"\x25" + b"\0" * 4 +  # field 4, fixed32
             b"\x2b\x38\x07\x2c"    # field 5, a group holding field 7
             b"\x48\x05")           # field 9, varint
    group = b"\x0b" + inner + b"\x0c"  # field 1, start and end group
    data = group + b"\x10\x02"
    assert protos.records(data) == [(1, 3, 0, len(group)), (2, 0, len(group), len(data))]
    for bad, what in ((b"\x0e", "invalid wire type 6"), (b"\x0f", "invalid wire type 7"),
                      (b"\x00", "field number 0"), (b"\x1e", "invalid wire type 6")):
        with pytest.raises(ValueError, match=what):
            protos.records(b"\x0b" + bad + b"\x00\x0c")


def test_groups_nested_deeper_than_the_cpp_recursion_limit_are_refused():
    """Groups nested 100 deep are read as C++ protobuf does; 101 deep, or far deeper, is a
    ValueError naming the limit (never a RecursionError)."""
    def nested(n: int) -> bytes:
        return b"\x0b" * n + b"\x0c" * n

    assert protos.records(nested(100)) == [(1, 3, 0, 200)]
    for n in (101, 5000):
        with pytest.raises(ValueError, match="groups nested deeper than 100"):
            protos.records(nested(n))
