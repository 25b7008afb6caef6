"""mlirhlo_driver.ir.protos: XLA's descriptors read from jaxlib's ``protodesc_cold`` section.

These tests compare the extracted descriptors with the installed jaxlib and
fail (never skip) when the section is missing: the driver's HLO proto
support depends on it.
"""

from __future__ import annotations

import os
import sys

import pytest

from mlirhlo_driver.errors import EnvironmentMismatch, InputError, SpecError
from mlirhlo_driver.ir import protos
from tests.conftest import REPO, assert_mentions

WANTED = ["xla/service/hlo.proto", "xla/xla_data.proto", "xla/xla.proto",
          "xla/autotune_results.proto", "xla/service/gpu/backend_configs.proto",
          "xla/stream_executor/device_description.proto"]


def _without_unknown(msg):
    copy = type(msg)()
    copy.CopyFrom(msg)
    copy.DiscardUnknownFields()
    return copy


def _descriptor(name: str, package: str, deps=()) -> bytes:
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto(name=name, package=package, dependency=list(deps), syntax="proto3")
    fd.message_type.add(name="M").field.add(name="x", number=1, type=5, label=1)
    return fd.SerializeToString()


@pytest.fixture
def fake_jaxlib(monkeypatch):
    """Point the "jaxlib" library at another file, with the caches reset around the test."""
    protos._library_files.cache_clear()

    def use(path):
        monkeypatch.setattr(protos, "library_path", lambda library: str(path))

    yield use
    monkeypatch.undo()
    protos._library_files.cache_clear()


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


# ------------------------------------------------------- ELF header checks, section lookup

def _patched(data: bytes, offset: int, fmt: str, *values) -> bytes:
    import struct

    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


# ------------------------------------------------------- loading files into the pool on demand

def _file(name: str, package: str, messages=(), deps=(), fields=()) -> bytes:
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto(name=name, package=package, dependency=list(deps), syntax="proto3")
    for m in messages:
        fd.message_type.add(name=m)
    for msg, fname, number, type_name in fields:
        owner = next(m for m in fd.message_type if m.name == msg)
        owner.field.add(name=fname, number=number, type=11, label=1, type_name=type_name)
    return fd.SerializeToString()


@pytest.fixture
def fresh_pool(monkeypatch, tmp_path):
    """protos with a private empty pool over fake libraries: ``use({library: [descriptor, ...]})``."""
    from google.protobuf import descriptor_pool

    protos._library_files.cache_clear()
    new_pool = descriptor_pool.DescriptorPool()
    monkeypatch.setattr(protos, "pool", lambda: new_pool)
    monkeypatch.setattr(protos, "_loaded", set())
    monkeypatch.setattr(protos, "_classes", {})

    def use(libraries):
        paths = {}
        for library, descs in libraries.items():
            paths[library] = tmp_path / f"{library}.so"
            paths[library].write_bytes(_elf_with_sections([(protos.SECTION, 1, b"".join(d + b"\x00" for d in descs))]))
        monkeypatch.setattr(protos, "library_path", lambda library: str(paths[library]) if library in paths else None)
        return new_pool

    yield use
    monkeypatch.undo()
    protos._library_files.cache_clear()


# ------------------------------------------------------- decode: where a message is malformed

def _rec(number: int, wire: int, body: bytes) -> bytes:
    from mlirhlo_driver.ir.protos import _encode_varint

    return _encode_varint(number << 3 | wire) + (_encode_varint(len(body)) if wire == 2 else b"") + body


def test_a_fixed32_field_inside_a_group_is_skipped():
    from mlirhlo_driver.ir import protos

    # field 1 as a group holding field 2 (fixed32), then the group's end tag
    data = bytes([0x0B, 0x15, 1, 2, 3, 4, 0x0C])
    assert protos._skip(data, 1, 0x0B, len(data), 0) == len(data)


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
    specs = sorted((REPO / "gpu_specs").glob("*.txtpb"))
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
    assert (info.value.file, info.value.line, info.value.col) == ("x.txtpb", 2, 3)
    assert_mentions(info.value.message, '"threads_per_wrap"')
    assert_mentions(info.value.hint, "'threads_per_warp'")
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
    with pytest.raises(InputError) as info:
        protos.parse_json('{"versoin": 3}', "xla.AutotuneResults", file="r.json")
    assert info.value.file == "r.json"
    assert_mentions(info.value.message, "xla.AutotuneResults", "JSON", "versoin")


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
    with pytest.raises(protos.ProtoSchemaError) as info:
        protos.file_descriptors("jaxlib")
    assert_mentions(info.value.message, str(other), f"jaxlib {version}", "not an ELF file")


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
    assert out.stdout.startswith("error: ")
    assert_mentions(out.stdout, "'protodesc_cold'", "pyproject.toml")  # the hint says what to install


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
        with pytest.raises(ValueError, match="truncated ELF"):
            protos.elf_section(str(lib))
        protos._library_files.cache_clear()
        with pytest.raises(protos.ProtoSchemaError, match="truncated ELF"):
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
        with pytest.raises(ValueError) as info:
            protos.records(nested(n))
        assert_mentions(str(info.value), "nested deeper than 100")


@pytest.mark.golden
def test_elf_section_checks_the_header_and_finds_only_the_named_section(tmp_path):
    """elf_section: the 64-byte header is required (magic, 64-bit, little-endian), the header
    table must be whole with entries of at least 64 bytes; it returns the named section's bytes,
    None for a SHT_NOBITS section or a name that only starts or ends like the one asked for. The
    golden of its refusals."""
    desc = _descriptor("a/a.proto", "pa")
    path = tmp_path / "lib.so"

    def section(data: bytes, name: bytes = protos.SECTION):
        path.write_bytes(data)
        return protos.elf_section(str(path), name)

    good = _elf_with_sections([(b".text", 1, b"code"), (protos.SECTION, 1, desc + b"\x00"), (b".data", 1, b"dd")])
    assert section(good) == desc + b"\x00"
    assert section(good, b".text") == b"code" and section(good, b".data") == b"dd"
    assert section(good, b".shstrtab") == b"\0.text\0protodesc_cold\0.data\0.shstrtab\0"
    for name in (b"protodesc", b"protodesc_cold2", b"xprotodesc_cold", b""):
        assert section(_elf_with_sections([(name, 1, b"x")])) is None, name
    assert section(_elf_with_sections([(protos.SECTION, 8, b"")])) is None  # SHT_NOBITS
    # entries longer than 64 bytes are stepped over by their size
    wide = _elf_with_sections([(b".text", 1, b"code"), (protos.SECTION, 1, b"payload")])
    import struct

    shoff, = struct.unpack_from("<Q", wide, 0x28)
    table = wide[shoff:]
    padded = b"".join(table[i:i + 64] + b"\xee" * 16 for i in range(0, len(table), 64))
    wide = _patched(wide[:shoff] + padded, 0x3A, "<H", 80)
    assert section(wide) == b"payload"

    for data, message in [
        (good[:63], "not an ELF file"),
        (b"\x7fELG" + good[4:], "not an ELF file"),
        (b"", "not an ELF file"),
        (_patched(good[:64], 0x3A, "<HHH", 64, 0, 0), "truncated ELF section header table"),  # header only
        (_patched(good, 4, "<B", 1), "not a 64-bit little-endian ELF file"),  # ELFCLASS32
        (_patched(good, 5, "<B", 2), "not a 64-bit little-endian ELF file"),  # big-endian
        (_patched(good, 0x3A, "<H", 56), "truncated ELF section header table"),  # 32-bit entries
        (_patched(good, 0x3A, "<H", 63), "truncated ELF section header table"),
        (good[:-1], "truncated ELF section header table"),
    ]:
        with pytest.raises(ValueError) as info:
            section(data)
        assert str(info.value) == message, (data[:8], message)


@pytest.mark.golden
def test_library_path_names_only_the_known_libraries():
    """library_path accepts "jaxlib" and "cuda_plugin" and names both in its error otherwise (its golden)."""
    assert protos.library_path("jaxlib").endswith("libjax_common.so")
    assert protos.library_path("cuda_plugin").endswith(".so")
    with pytest.raises(ValueError) as info:
        protos.library_path("cuda")
    assert str(info.value) == "unknown library 'cuda'; expected one of ('jaxlib', 'cuda_plugin')"


def test_a_missing_library_is_an_error_for_jaxlib_and_empty_for_the_plugin(monkeypatch):
    """No jaxlib: a ProtoSchemaError saying what to install; no CUDA plugin: no descriptors."""
    protos._library_files.cache_clear()
    monkeypatch.setattr(protos, "library_path", lambda library: None)
    try:
        assert protos.file_descriptors("cuda_plugin") == {}
        with pytest.raises(protos.ProtoSchemaError) as info:
            protos.file_descriptors("jaxlib")
        assert_mentions(info.value.message, "jaxlib", "not installed")
        assert info.value.hint == "pip install jaxlib"
    finally:
        monkeypatch.undo()
        protos._library_files.cache_clear()


def test_plugin_errors_name_the_plugin_distribution(fake_jaxlib, tmp_path):
    """A CUDA plugin library that is unreadable or lacks descriptors is reported with the
    plugin's distribution and version (not jaxlib's)."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    dist, version = _jaxlib.cuda_plugin().dist, _jaxlib.cuda_plugin().version
    bad = tmp_path / "xla_cuda_plugin.so"
    bad.write_bytes(b"not elf")
    fake_jaxlib(bad)
    with pytest.raises(protos.ProtoSchemaError) as info:
        protos.file_descriptors("cuda_plugin")
    assert_mentions(info.value.message, str(bad), f"({dist} {version})", "not an ELF file")
    assert "jaxlib" not in info.value.message.replace(dist, "")
    empty = tmp_path / "empty.so"
    empty.write_bytes(_elf_with_sections([(protos.SECTION, 1, b"no descriptors here\x00")]))
    fake_jaxlib(empty)
    protos._library_files.cache_clear()
    with pytest.raises(protos.ProtoSchemaError) as info:
        protos.file_descriptors("cuda_plugin")
    assert_mentions(info.value.message, str(empty), f"({dist} {version})", "'protodesc_cold'")
    assert_mentions(info.value.hint, "CUDA plugin", "pyproject.toml")


@pytest.mark.golden
@pytest.mark.parametrize("case, message", [
    ("jaxlib-not-elf", "error: cannot read protobuf descriptors from {path} ({jaxlib}): not an ELF file"),
    ("plugin-not-elf", "error: cannot read protobuf descriptors from {path} ({plugin}): not an ELF file"),
    ("jaxlib-version-unknown",
     "error: cannot read protobuf descriptors from {path} (jaxlib (version unknown)): not an ELF file"),
    ("jaxlib-no-section", "error: {path} ({jaxlib}) has no 'protodesc_cold' section with protobuf descriptors; "
                          "the driver reads XLA's .proto schemas from there (install a jaxlib (and CUDA plugin) "
                          "version pyproject.toml allows)"),
    ("plugin-no-section", "error: {path} ({plugin}) has no 'protodesc_cold' section with protobuf descriptors; "
                          "the driver reads XLA's .proto schemas from there (install a jaxlib (and CUDA plugin) "
                          "version pyproject.toml allows)"),
    ("jaxlib-missing", "error: jaxlib is not installed: its libjax_common.so holds XLA's protobuf descriptors "
                       "(pip install jaxlib)"),
])
def test_descriptor_library_errors_exactly(fake_jaxlib, tmp_path, monkeypatch, case, message):
    """A jaxlib or CUDA plugin library that gives no descriptors: the golden of file_descriptors' errors."""
    from importlib import metadata

    from mlirhlo_driver._native import jaxlib as _jaxlib

    plugin = _jaxlib.cuda_plugin()
    library, _, kind = case.partition("-")
    library = "jaxlib" if library == "jaxlib" else "cuda_plugin"
    path = tmp_path / "lib.so"
    if kind in ("not-elf", "version-unknown"):
        path.write_bytes(b"not elf")
    else:
        path.write_bytes(_elf_with_sections([(protos.SECTION, 1, b"no descriptors here\x00")]))
    if kind == "version-unknown":
        monkeypatch.setattr(_jaxlib, "installed_versions", lambda: {"jaxlib": None})
    fake_jaxlib(path)
    if kind == "missing":
        monkeypatch.setattr(protos, "library_path", lambda library: None)
    with pytest.raises(protos.ProtoSchemaError) as info:
        protos.file_descriptors(library)
    assert info.value.format() == message.format(path=path, jaxlib=f"jaxlib {metadata.version('jaxlib')}",
                                                 plugin=f"{plugin.dist} {plugin.version}")


# ------------------------------------------------------- split_section edge cases

def test_split_section_reads_descriptors_wherever_they_lie():
    """A descriptor at the very start of the section, one without a package, one with a
    varint field, names of 6 (".proto") to 127 bytes; not a name of 128 bytes (a two-byte
    length), not an unterminated descriptor at the end, not a name that is not UTF-8, not a
    "....proto" string inside a descriptor. The first copy of a repeated file name is kept."""
    from google.protobuf import descriptor_pb2

    first = _descriptor("first.proto", "p1")
    nopkg = descriptor_pb2.FileDescriptorProto(name="n/nopkg.proto", syntax="proto3")
    nopkg.message_type.add(name="N")
    nopkg = nopkg.SerializeToString()
    varint = descriptor_pb2.FileDescriptorProto(name="v.proto", package="pv", edition=1000)
    varint = varint.SerializeToString()
    assert any(b & 7 == 0 for b in varint[len(varint) - 3:])  # the edition's tag: a varint record
    short = _descriptor(".proto", "ps")
    long_name = "d/" + "x" * 119 + ".proto"
    assert len(long_name) == 127
    longest = _descriptor(long_name, "pl")
    too_long = _descriptor("d/" + "y" * 120 + ".proto", "pt")
    again = _descriptor("first.proto", "other")
    # a "....proto" string inside a descriptor, as field 1 of a sub-message: at its very end, or not
    at_end = descriptor_pb2.FileDescriptorProto(name="o.proto", package="po")
    at_end.options.java_package = "j.proto"
    inside = descriptor_pb2.FileDescriptorProto(name="s.proto", package="ps", syntax="proto3")
    inside.options.java_package = "k.proto"
    at_end, inside = at_end.SerializeToString(), inside.SerializeToString()
    assert at_end.endswith(b"\n\x07j.proto") and b"\n\x07k.proto" in inside
    sec = b"\x00".join([first, nopkg, varint, short, longest, too_long, again, at_end, inside,
                        b"\n\x07u.proto\x12\x02\xff"])
    files = protos.split_section(sec)
    assert sorted(files) == [".proto", "d/" + "x" * 119 + ".proto", "first.proto", "n/nopkg.proto", "o.proto",
                             "s.proto", "v.proto"]
    assert files["o.proto"].data == at_end and files["s.proto"].data == inside
    assert files["first.proto"].data == first and files["first.proto"].package == "p1"
    assert files["n/nopkg.proto"].package == "" and files["n/nopkg.proto"].data == nopkg
    assert files["v.proto"].data == varint and files["v.proto"].deps == []
    assert files[".proto"].package == "ps" and files[long_name].data == longest
    # unterminated at the end of the section: not read
    assert protos.split_section(first) == {}
    assert list(protos.split_section(first + b"\x00")) == ["first.proto"]
    bad_utf8 = b"\n\x07\xffbc.proto\x00"
    assert protos.split_section(bad_utf8) == {}
    assert protos.split_section(b"") == {} and protos.split_section(b".proto") == {}
    assert list(protos.split_section(b".proto\x00" + first + b"\x00")) == ["first.proto"]


def test_message_class_loads_only_the_defining_file_and_its_imports(fresh_pool):
    """message_class finds the file whose package prefixes the name and which holds the
    top-level type (nested names included, names of 128+ characters included), loads its
    imports first, loads nothing else, and caches the class."""
    from importlib import metadata

    long = "L" * 128  # a two-byte length prefix in the file
    pool = fresh_pool({"jaxlib": [
        _file("d/base.proto", "d", ["Base"]),
        _file("d/user.proto", "d", ["User", "Basement"], ["d/base.proto"], [("User", "b", 1, ".d.Base")]),
        _file("e/top.proto", "", ["Top"]),
        _file("d/long.proto", "d.sub", [long]),
        _file("d/broken.proto", "d", ["Broken"], ["d/missing.proto"]),
    ], "cuda_plugin": [
        _file("d/base.proto", "d", ["Base", "Other"]),
        _file("g/gpu.proto", "g", ["Gpu"]),
    ]})
    base = protos.message_class("d.Base")
    assert base.DESCRIPTOR.full_name == "d.Base" and protos.message_class("d.Base") is base
    assert protos._loaded == {"d/base.proto"}
    user = protos.message_class("d.User")
    assert user.DESCRIPTOR.fields_by_name["b"].message_type.full_name == "d.Base"
    assert protos._loaded == {"d/base.proto", "d/user.proto"}
    assert protos.message_class("Top").DESCRIPTOR.file.name == "e/top.proto"
    assert protos.message_class(f"d.sub.{long}").DESCRIPTOR.name == long
    # the plugin's files are searched after jaxlib's; jaxlib's copy of a shared file is the one used
    assert protos.message_class("g.Gpu").DESCRIPTOR.file.name == "g/gpu.proto"
    assert list(pool.FindFileByName("d/base.proto").message_types_by_name) == ["Base"]
    with pytest.raises(KeyError) as info:
        protos.message_class("d.Other")
    assert_mentions(info.value.args[0], "'d.Other'", "jaxlib")
    with pytest.raises(KeyError):
        protos.message_class("x.Base")  # right type name, wrong package
    with pytest.raises(protos.ProtoSchemaError) as info:
        protos.message_class("d.Broken")
    version = metadata.version("jaxlib")
    assert_mentions(info.value.message, "d/missing.proto", "not found", f"jaxlib {version}")
    assert "d/broken.proto" not in protos._loaded


@pytest.mark.golden
def test_message_class_errors_exactly(fresh_pool):
    """A message type, or a file it imports, that the descriptors lack: the golden of message_class's errors."""
    from importlib import metadata

    fresh_pool({"jaxlib": [_file("d/base.proto", "d", ["Base"]),
                           _file("d/broken.proto", "d", ["Broken"], ["d/missing.proto"])]})
    with pytest.raises(KeyError) as info:
        protos.message_class("d.Other")
    assert info.value.args[0] == "no protobuf message type 'd.Other' in jaxlib's descriptors"
    with pytest.raises(protos.ProtoSchemaError) as info:
        protos.message_class("d.Broken")
    assert info.value.format() == ("error: protobuf descriptor of d/missing.proto not found in jaxlib "
                                   f"(jaxlib {metadata.version('jaxlib')})")


# ------------------------------------------------------- text and JSON

def test_parse_text_takes_utf8_bytes_and_locates_bad_bytes():
    """Bytes, bytearray and memoryview input is UTF-8 text; a byte that is not UTF-8 is an error
    naming its offset and the file."""
    for text in (b'name: "m\xc3\xa9"\nid: 5', bytearray(b'name: "m\xc3\xa9"\nid: 5'), memoryview(b'name: "m\xc3\xa9"\nid: 5')):
        msg = protos.parse_text(text, "xla.HloModuleProto")
        assert (msg.name, msg.id) == ("m\u00e9", 5)
    with pytest.raises(SpecError) as info:
        protos.parse_text(b'id: 1\nname: "\xff"', "xla.HloModuleProto", file="f.txtpb", error=SpecError)
    assert info.value.file == "f.txtpb"
    assert_mentions(info.value.message, "UTF-8", "byte 13")


def test_parse_text_errors_on_the_last_line_drop_the_quoted_source():
    """The quoted source line protobuf prefixes is dropped on any line, the last one (no
    trailing newline) included; the message starts lowercase; the hint comes from the
    capitalised original."""
    for text, line, col in (("id 5", 1, 4), ("id: 5\nid 5", 2, 4), ("id 5\n", 1, 4), ("\nid 5", 2, 4)):
        with pytest.raises(InputError) as info:
            protos.parse_text(text, "xla.HloModuleProto", file="m.txtpb")
        err = info.value
        assert (err.line, err.col, err.hint) == (line, col, None), text
        assert 'expected ":"' in err.message and text.strip() not in err.message, text  # no quoted source
    with pytest.raises(InputError) as info:
        protos.parse_text("id: 1\nnmae: 2", "xla.HloModuleProto")
    assert_mentions(info.value.message, '"xla.HloModuleProto"', '"nmae"')
    assert info.value.message[0].islower()
    assert_mentions(info.value.hint, "'name'")
    with pytest.raises(InputError) as info:
        protos.parse_text("x: 1", "xla.HloModuleProto")
    assert info.value.hint is None  # nothing close
    with pytest.raises(InputError) as info:
        protos.parse_text("dimensions: 2\nelement_type: F33", "xla.ShapeProto")
    assert_mentions(info.value.message, '"xla.PrimitiveType"', "F33")
    assert (info.value.line, info.value.col) == (2, 15)
    assert_mentions(info.value.hint, "'F32'")


@pytest.mark.golden
@pytest.mark.parametrize("text, type_name, file, message", [
    (b'id: 1\nname: "\xff"', "xla.HloModuleProto", "f.txtpb",
     "error: f.txtpb: text format input is not valid UTF-8 (byte 13)"),
    ("id 5", "xla.HloModuleProto", "m.txtpb", 'error: m.txtpb:1:4: expected ":"'),
    ("id: 5\nid 5", "xla.HloModuleProto", "m.txtpb", 'error: m.txtpb:2:4: expected ":"'),
    ("id: 1\nnmae: 2", "xla.HloModuleProto", "m.txtpb",
     'error: m.txtpb:2:1: message type "xla.HloModuleProto" has no field named "nmae" (did you mean \'name\'?)'),
    ("x: 1", "xla.HloModuleProto", "m.txtpb", 'error: m.txtpb:1:1: message type "xla.HloModuleProto" has no field '
                                              'named "x"'),
    ("dimensions: 2\nelement_type: F33", "xla.ShapeProto", "s.txtpb",
     'error: s.txtpb:2:15: enum type "xla.PrimitiveType" has no value named F33 (did you mean \'F32\'?)'),
    ("gpu_device_info {\n  threads_per_wrap: 32\n}\n", "stream_executor.GpuTargetConfigProto", "x.txtpb",
     'error: x.txtpb:2:3: message type "stream_executor.GpuDeviceInfoProto" has no field named "threads_per_wrap" '
     "(did you mean 'threads_per_warp', 'threads_per_core_limit', 'threads_per_block_limit'?)"),
    # XLA's modules as hlo_proto.parse_text reads them
    ('name: "m"\ncomputations {\n  name: "c"\n  instructions {\n    nmae: "x"\n  }\n}\n', "xla.HloModuleProto",
     "m.pbtxt", 'error: m.pbtxt:5:5: message type "xla.HloInstructionProto" has no field named "nmae" (did you mean '
                "'name'?)"),
    ("computations {\n  instructions {\n    shape { element_type: F33 }\n  }\n}\n", "xla.HloModuleProto", "m.pbtxt",
     "error: m.pbtxt:3:27: enum type \"xla.PrimitiveType\" has no value named F33 (did you mean 'F32'?)"),
    ('name: "m"\ncomputations {\n  name: "c"\n', "xla.HloModuleProto", "m.pbtxt", 'error: m.pbtxt:3:9: expected "}"'),
    ('name: "abc\n', "xla.HloModuleProto", "m.pbtxt", "error: m.pbtxt:1:7: string missing ending quote: '\"abc'"),
    ("id: 9223372036854775808\n", "xla.HloModuleProto", "m.pbtxt",
     "error: m.pbtxt:1:5: value out of range: 9223372036854775808"),
    ("computations { id: 1.5 }", "xla.HloModuleProto", "m.pbtxt",
     "error: m.pbtxt:1:20: couldn't parse integer: 1.5"),
    ("is_dynamic: yes", "xla.HloModuleProto", "m.pbtxt", 'error: m.pbtxt:1:13: expected "true" or "false"'),
    ('name: "a"\n  name: "b"\n', "xla.HloModuleProto", "m.pbtxt",
     'error: m.pbtxt:2:9: message type "xla.HloModuleProto" should not have multiple "name" fields'),
])
def test_parse_text_errors_exactly(text, type_name, file, message):
    """Protobuf text the schema refuses: the golden of parse_text's errors (protobuf's words,
    lowercased, placed, with a suggestion)."""
    with pytest.raises(InputError) as info:
        protos.parse_text(text, type_name, file=file)
    assert info.value.format() == message


@pytest.mark.golden
@pytest.mark.parametrize("text, type_name, message", [
    ('{"versoin": 3}', "xla.AutotuneResults",
     'error: r.json: invalid xla.AutotuneResults JSON: Message type "xla.AutotuneResults" has no field named '
     '"versoin" at "AutotuneResults".\\n Available Fields(except extensions): "[\'version\', \'results\']"'),
    ('{"id": "x"}', "xla.HloModuleProto",
     "error: r.json: invalid xla.HloModuleProto JSON: Failed to parse id field: invalid literal for int() with "
     "base 10: 'x'."),
])
def test_parse_json_errors_exactly(text, type_name, message):
    """JSON the schema refuses: the golden of parse_json's errors (protobuf's words after ours)."""
    with pytest.raises(InputError) as info:
        protos.parse_json(text, type_name, file="r.json")
    assert info.value.format() == message


def test_to_text_escapes_non_ascii_and_prints_unknown_fields():
    """to_text C-escapes non-ASCII bytes (as C++ does) and prints unknown fields by number."""
    msg = protos.decode(b"\x0a\x02\xc3\xa9\x28\x05\xf8\x3e\x07", "xla.HloModuleProto")
    assert protos.to_text(msg) == 'name: "\\303\\251"\nid: 5\n1007: 7\n'


def test_to_json_indents_by_two_unless_asked_and_writes_int64_as_strings():
    """to_json: lowerCamelCase names, 64-bit integers as strings, two-space indent by default."""
    msg = protos.message_class("xla.HloModuleProto")(name="m", id=5, entry_computation_name="e")
    assert protos.to_json(msg) == '{\n  "name": "m",\n  "entryComputationName": "e",\n  "id": "5"\n}'
    assert protos.to_json(msg, indent=None) == '{"name": "m", "entryComputationName": "e", "id": "5"}'
    with pytest.raises(SpecError) as info:
        protos.parse_json('{"id": "x"}', "xla.HloModuleProto", file="m.json", error=SpecError)
    assert info.value.file == "m.json"
    assert_mentions(info.value.message, "xla.HloModuleProto JSON", "id field")
    assert protos.parse_json(b'{"id": "7"}', "xla.HloModuleProto").id == 7


# ------------------------------------------------------- wire format: records and their limits

@pytest.mark.parametrize("data, records", [
    (b"\x08" + b"\xff" * 9 + b"\x01", [(1, 0, 0, 11)]),  # a ten-byte varint value
    (b"\x80" * 9 + b"\x01\x00", [(1 << 60, 0, 0, 11)]),  # a ten-byte tag
    (b"\x09" + b"\0" * 8, [(1, 1, 0, 9)]),
    (b"\x0d" + b"\0" * 4, [(1, 5, 0, 5)]),
    (b"\x0a\x02ab", [(1, 2, 0, 4)]),
    (b"\x0a\x00\x10\x01", [(1, 2, 0, 2), (2, 0, 2, 4)]),
    (b"\x0a\x80\x01" + b"x" * 128, [(1, 2, 0, 131)]),  # a two-byte length
    (b"\x82\x01\x01z\xf8\xff\xff\xff\x0f\x00", [(16, 2, 0, 4), ((1 << 29) - 1, 0, 4, 10)]),
    (b"\x0b\x0c\x08\x01", [(1, 3, 0, 2), (1, 0, 2, 4)]),
    (b"", []),
])
def test_records_reads_every_wire_type_up_to_its_exact_end(data, records):
    """records: (field number, wire type, start, end) of each record, values that end exactly
    at the end of the data included."""
    assert protos.records(data) == records


@pytest.mark.golden
@pytest.mark.parametrize("data, message", [
    (b"\x08" + b"\xff" * 10 + b"\x01", "truncated varint at byte 1"),  # an eleven-byte value
    (b"\x08\x80", "truncated varint at byte 1"),
    (b"\x80" * 10 + b"\x01\x00", "truncated varint at byte 0"),  # an eleven-byte tag
    (b"\x08\x01\x80", "truncated varint at byte 2"),
    (b"\x09" + b"\0" * 7, "truncated fixed-width value at byte 1"),
    (b"\x0d" + b"\0" * 3, "truncated fixed-width value at byte 1"),
    (b"\x0a\x03ab", "length 3 runs past the end of the enclosing message at byte 1"),
    (b"\x0a\x80", "truncated varint at byte 1"),
    (b"\x00", "field number 0 at byte 0"),
    (b"\x08\x01\x07", "field number 0 at byte 2"),
    (b"\x0c", "end-group tag without a group at byte 0"),
    (b"\x0e", "invalid wire type 6 at byte 0"),
    (b"\x08\x01\x0f", "invalid wire type 7 at byte 2"),
    (b"\x0b\x08\x01", "truncated varint at byte 3"),  # a group never closed
    (b"\x0b\x14", "invalid wire type 4 at byte 2"),  # closed by another field's end tag
    (b"\x0b" * 101 + b"\x0c" * 101, "groups nested deeper than 100 at byte 101"),
])
def test_records_refuse_what_is_not_wire_format_with_the_offset(data, message):
    """Malformed data is a ValueError saying what and at which byte: the golden of records' refusals."""
    with pytest.raises(ValueError) as info:
        protos.records(data)
    assert str(info.value) == message


def test_records_of_a_slice_and_len_value():
    """records(data, start, end) reads only that span (offsets stay absolute); len_value is
    a length-delimited record's payload, multi-byte tag and length included."""
    data = b"\x08\x01\x10\x02\x18\x03"
    assert protos.records(data, 2, 4) == [(2, 0, 2, 4)]
    assert protos.records(data, 2) == [(2, 0, 2, 4), (3, 0, 4, 6)]
    with pytest.raises(ValueError) as info:
        protos.records(data, 2, 3)
    assert_mentions(str(info.value), "truncated", "byte 3")
    payload = bytes(range(200))
    rec = b"\x82\x01\xc8\x01" + payload
    assert protos.records(b"\x08\x01" + rec) == [(1, 0, 0, 2), (16, 2, 2, 206)]
    assert protos.len_value(b"\x08\x01" + rec, 2, 206) == payload
    assert protos.len_value(b"\x0a\x00", 0, 2) == b""


def test_decode_errors_give_the_field_path_with_repeated_indices():
    """A malformed sub-message is located by field path: repeated fields with their index
    (counted per field), singular ones without; ``what`` and ``file`` go into the error."""
    ok = _rec(2, 2, b"add")
    bad_opcode = _rec(2, 2, b"\xff")
    data = _rec(3, 2, _rec(2, 2, ok) + _rec(1, 2, b"c") + _rec(2, 2, bad_opcode))
    with pytest.raises(InputError) as info:
        protos.decode(data, "xla.HloModuleProto")
    assert_mentions(info.value.message, "xla.HloModuleProto", "UTF-8", "byte 16",
                    "computations[0].instructions[1].opcode")
    data = _rec(1, 2, b"m") + _rec(3, 2, b"") + _rec(3, 2, _rec(2, 2, _rec(7, 2, _rec(2, 2, b"\xff"))))
    with pytest.raises(InputError) as info:
        protos.decode(data, "xla.HloModuleProto")
    assert_mentions(info.value.message, "byte 13", "computations[1].instructions[0].metadata.op_name")
    with pytest.raises(SpecError) as info:
        protos.decode(_rec(3, 2, b"\x08"), "xla.HloModuleProto", what="module", file="m.pb", error=SpecError)
    assert info.value.file == "m.pb"
    assert_mentions(info.value.message, "malformed module", "byte 3", "computations[0]")
    # a known field sent with another wire type is an unknown field, not an error
    assert protos.decode(_rec(1, 0, b"\x05") + _rec(3, 0, b"\x01"), "xla.HloModuleProto").name == ""
    # the walk finds nothing wrong where upb does (a packed field's bad varint)
    with pytest.raises(InputError) as info:
        protos.decode(b"\x1a\x01\x80", "xla.ShapeProto")
    assert_mentions(info.value.message, "xla.ShapeProto", "not a valid encoding")


def test_decode_errors_stop_at_the_cpp_nesting_limit():
    """The error walk enters 100 nested messages and names the limit below that."""
    def nested(n: int) -> bytes:
        data = b"\x08"
        for _ in range(n):
            data = _rec(10, 2, data)  # LiteralProto.tuple_literals
        return data

    for n, why in ((100, ("truncated varint", "byte 237")), (101, ("nested deeper than 100", "byte 239"))):
        with pytest.raises(InputError) as info:
            protos.decode(nested(n), "xla.LiteralProto")
        path = ".".join(["tuple_literals[0]"] * min(n, 101))
        assert_mentions(info.value.message, *why, f"(in {path})")
        assert f"{path}.tuple_literals" not in info.value.message, n


def _nested_literals(n: int) -> bytes:
    """A LiteralProto whose tuple_literals nest ``n`` deep around a truncated varint."""
    data = b"\x08"
    for _ in range(n):
        data = _rec(10, 2, data)
    return data


@pytest.mark.golden
@pytest.mark.parametrize("data, type_name, kwargs, message", [
    (_rec(3, 2, _rec(2, 2, _rec(2, 2, b"add")) + _rec(1, 2, b"c") + _rec(2, 2, _rec(2, 2, b"\xff"))),
     "xla.HloModuleProto", {}, "error: malformed xla.HloModuleProto: string is not valid UTF-8 at byte 16 "
                               "(in computations[0].instructions[1].opcode)"),
    (_rec(1, 2, b"m") + _rec(3, 2, b"") + _rec(3, 2, _rec(2, 2, _rec(7, 2, _rec(2, 2, b"\xff")))),
     "xla.HloModuleProto", {}, "error: malformed xla.HloModuleProto: string is not valid UTF-8 at byte 13 "
                               "(in computations[1].instructions[0].metadata.op_name)"),
    (b"\x1a\x01\x80", "xla.ShapeProto", {},
     "error: malformed xla.ShapeProto: not a valid encoding of this message type"),
    (_nested_literals(2), "xla.LiteralProto", {},
     "error: malformed xla.LiteralProto: truncated varint at byte 5 (in tuple_literals[0].tuple_literals[0])"),
    (_nested_literals(101), "xla.LiteralProto", {},
     "error: malformed xla.LiteralProto: messages nested deeper than 100 at byte 239 (in "
     + ".".join(["tuple_literals[0]"] * 101) + ")"),
    (_rec(3, 2, b"\x08"), "xla.HloModuleProto", {"what": "module", "file": "m.pb"},
     "error: m.pb: malformed module: truncated varint at byte 3 (in computations[0])"),
    # as hlo_proto.decode asks: the type's short name
    (b"\x08\xff", "xla.HloModuleProto", {"what": "HloModuleProto"},
     "error: malformed HloModuleProto: truncated varint at byte 1"),
    (_rec(3, 2, _rec(2, 2, _rec(2, 2, b"\xff"))), "xla.HloModuleProto", {"what": "HloModuleProto"},
     "error: malformed HloModuleProto: string is not valid UTF-8 at byte 6 (in computations[0].instructions[0].opcode)"),
    (b"\x0a\x05abc", "xla.HloComputationProto", {"what": "HloComputationProto", "file": "c.pb"},
     "error: c.pb: malformed HloComputationProto: length 5 runs past the end of the enclosing message at byte 1"),
], ids=["utf8", "utf8-nested", "upb-only", "truncated", "nesting-limit", "what-and-file", "short-name",
        "short-name-utf8", "short-name-file"])
def test_decode_errors_exactly(data, type_name, kwargs, message):
    """Bytes that are no valid message of the type: the golden of decode's errors."""
    with pytest.raises(InputError) as info:
        protos.decode(data, type_name, **kwargs)
    assert info.value.format() == message


def test_errors_say_when_the_library_version_is_unknown(fake_jaxlib, tmp_path, monkeypatch):
    """Without package metadata the error says "(version unknown)" after the distribution."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    monkeypatch.setattr(_jaxlib, "installed_versions", lambda: {"jaxlib": None})
    bad = tmp_path / "libjax_common.so"
    bad.write_bytes(b"not elf")
    fake_jaxlib(bad)
    with pytest.raises(protos.ProtoSchemaError) as info:
        protos.file_descriptors("jaxlib")
    assert_mentions(info.value.message, str(bad), "jaxlib (version unknown)")


def test_integer_keyed_maps_two_messages_down_are_rewritten():
    """serialize: an HloProto's module's schedule (an int64-keyed map two levels down) is
    written by ascending key, the module's bytes being its own serialize bytes, in place."""
    hlo = protos.message_class("xla.HloProto")()
    module = hlo.hlo_module
    module.name = "m"
    for key in (300, 7, 1):
        module.schedule.sequences[key].instruction_ids.append(key)
    module_bytes = protos.serialize(module)
    (schedule,) = [protos.len_value(module_bytes, s, e) for n, _, s, e in protos.records(module_bytes) if n == 7]
    entries = [protos.len_value(schedule, s, e) for _, _, s, e in protos.records(schedule)]
    assert [protos.decode(e, "xla.HloScheduleProto.SequencesEntry").key for e in entries] == [1, 7, 300]
    data = protos.serialize(hlo)
    assert data == b"\x0a" + protos._encode_varint(len(module_bytes)) + module_bytes
    assert protos.decode(data, "xla.HloProto") == hlo
    hlo.buffer_assignment.SetInParent()
    assert protos.serialize(hlo) == data + b"\x1a\x00"


def test_integer_keyed_maps_behind_a_chain_of_messages_are_found():
    """A map four messages down (A.b -> B.c -> C.d -> D.m, declared outermost first) is found
    however many passes that takes: A's bytes hold D's entries by ascending key."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="mlirhlo_test_chain.proto", package="chain", syntax="proto3")
    for name, child in (("A", "B"), ("B", "C"), ("C", "D")):
        fdp.message_type.add(name=name).field.add(name=child.lower(), number=1, type=F.TYPE_MESSAGE,
                                                  type_name=f".chain.{child}", label=F.LABEL_OPTIONAL)
    d = fdp.message_type.add(name="D")
    entry = d.nested_type.add(name="MEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    d.field.add(name="m", number=1, type=F.TYPE_MESSAGE, type_name=".chain.D.MEntry", label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    A = message_factory.GetMessageClass(pool.FindMessageTypeByName("chain.A"))
    a = A()
    for key in (5, 2, 9):
        a.b.c.d.m[key] = key
    data = b"".join(b"\x0a\x04\x08" + bytes([k]) + b"\x10" + bytes([k]) for k in (2, 5, 9))  # D
    for _ in "CBA":
        data = b"\x0a" + bytes([len(data)]) + data
    assert protos.serialize(a) == data
    assert A.FromString(data) == a


def test_string_keyed_maps_serialize_by_ascending_key():
    """serialize writes string-keyed map entries sorted by key whatever the insertion order
    (protobuf's own order without deterministic mode is its hash table's)."""
    cls = protos.message_class("xla.FrontendAttributes")
    msg = cls()
    keys = ["zeta", "alpha", "mid", "b", "aa", "x1", "x0"] + [f"k{i:02d}" for i in range(20)][::-1]
    for key in keys:
        msg.map[key] = key
    data = protos.serialize(msg)
    entries = [protos.decode(protos.len_value(data, s, e), "xla.FrontendAttributes.MapEntry")
               for _, _, s, e in protos.records(data)]
    assert [e.key for e in entries] == sorted(keys) and all(e.value == e.key for e in entries)
    assert protos.decode(data, "xla.FrontendAttributes") == msg
