"""XLA's protobuf message classes, from the descriptors compiled into jaxlib.

jaxlib ships no ``_pb2`` modules, but protoc's generated C++ keeps every
``.proto`` file's serialized ``FileDescriptorProto`` (NUL-terminated, as a C
string) in the ELF section ``protodesc_cold`` of ``jaxlib/libjax_common.so``
and of the CUDA plugin's ``xla_cuda_plugin.so``. Reading them from there gives
the exact schema of the installed XLA: no copied ``.proto`` files to drift.
The files a message needs (its file's import closure) are loaded into one
private :class:`~google.protobuf.descriptor_pool.DescriptorPool` per process,
on first use; the ``protobuf`` package (upb runtime) does the rest.

Public API::

    message_class(full_name) -> type[Message]      e.g. "xla.HloModuleProto"
    pool() -> DescriptorPool                       every file loaded so far
    file_descriptors(library) -> {file name: serialized FileDescriptorProto}
    parse_text(text, full_name, file=..., error=InputError) -> Message
    to_text(message) -> str
    parse_json(text, full_name, file=..., error=InputError) -> Message
    to_json(message) -> str
    decode(data, full_name, error=InputError) -> Message   binary, with a located error
    serialize(message) -> bytes                    = C++ SerializeToStringDeterministic
    records(data) -> [(number, wire_type, start, end)]   top-level wire records
    len_value(data, start, end) -> bytes           a length-delimited record's payload

The section is read with ``struct`` from the ELF section headers (a few
hundred bytes of headers, then the ~250 KB section): no ELF library is worth
a dependency for that, and nothing is mapped or loaded as code.
"""

from __future__ import annotations

import re
import struct
import threading
from functools import lru_cache
from typing import Any

from ..errors import EnvironmentMismatch, InputError, did_you_mean

__all__ = [
    "LIBRARIES",
    "SECTION",
    "ProtoSchemaError",
    "decode",
    "file_descriptors",
    "len_value",
    "library_path",
    "message_class",
    "parse_json",
    "parse_text",
    "pool",
    "records",
    "serialize",
    "to_json",
    "to_text",
]

SECTION = b"protodesc_cold"

# Searched in this order. The CUDA plugin adds the GPU protos (GpuTargetConfigProto
# lives in both; device-side ones only in the plugin). Files both hold are identical
# (tests/ir/test_protos.py checks); the first library's copy is used.
LIBRARIES = ("jaxlib", "cuda_plugin")


class ProtoSchemaError(EnvironmentMismatch):
    """The installed jaxlib does not carry the protobuf descriptors the driver reads."""


# ---------------------------------------------------------------------------
# Finding the libraries and their descriptor section.

def library_path(library: str) -> str | None:
    """Path of ``libjax_common.so`` ("jaxlib") or the CUDA plugin's .so ("cuda_plugin"),
    found without importing either package; None when it is not installed."""
    from .._native import jaxlib as _jaxlib

    if library not in LIBRARIES:
        raise ValueError(f"unknown library {library!r}; expected one of {LIBRARIES}")
    return _jaxlib.native_library_path(library)


def _version(library: str) -> str:
    from .._native import jaxlib as _jaxlib

    if library == "jaxlib":
        dist, version = "jaxlib", _jaxlib.installed_versions().get("jaxlib")
    else:  # installed, or the driver's copy
        plugin = _jaxlib.cuda_plugin()
        dist, version = plugin.dist, plugin.version
    return f"{dist} {version or '(version unknown)'}"


def elf_section(path: str, name: bytes = SECTION) -> bytes | None:
    """The contents of ELF section ``name`` of the file at ``path``; None if it has none.

    Raises ValueError for a file that is not a 64-bit little-endian ELF file.
    """
    with open(path, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF":
            raise ValueError("not an ELF file")
        if head[4] != 2 or head[5] != 1:
            raise ValueError("not a 64-bit little-endian ELF file")
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        if shentsize < 64 or len(table) < shentsize * shnum or shstrndx >= shnum:
            raise ValueError("truncated ELF section header table")

        def header(i: int) -> tuple[int, ...]:
            # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
            return struct.unpack_from("<IIQQQQ", table, i * shentsize)

        _, _, _, _, stroff, strsize = header(shstrndx)
        f.seek(stroff)
        names = f.read(strsize)
        for i in range(shnum):
            name_off, sh_type, _, _, offset, size = header(i)
            if names[name_off:names.find(b"\0", name_off)] == name:
                if sh_type == 8:  # SHT_NOBITS: no bytes in the file
                    return None
                f.seek(offset)
                return f.read(size)
    return None


class _File:
    """One serialized FileDescriptorProto and the header fields needed to load it."""

    __slots__ = ("name", "package", "deps", "data")

    def __init__(self, name: str, package: str, deps: list[str], data: bytes) -> None:
        self.name, self.package, self.deps, self.data = name, package, deps, data


def _read_file_at(sec: bytes, start: int) -> _File | None:
    """The FileDescriptorProto starting at ``start``, up to its NUL terminator.

    Its top-level fields are walked (sub-messages skipped by length): a NUL
    where a tag should be is the terminator, as field number 0 is invalid.
    """
    name = package = None
    deps: list[str] = []
    pos = start
    end = len(sec)
    try:
        while sec[pos] != 0:
            tag, pos = _read_varint(sec, pos, end)
            wire = tag & 7
            if wire == 0:
                _, pos = _read_varint(sec, pos, end)
            elif wire == 2:
                n, p = _read_varint(sec, pos, end)
                pos = p + n
                if tag >> 3 in (1, 2, 3):
                    text = sec[p:pos].decode("utf-8")
                    if tag >> 3 == 1:
                        name = text
                    elif tag >> 3 == 2:
                        package = text
                    else:
                        deps.append(text)
            else:
                return None
            if pos >= end:
                return None
    except (IndexError, ValueError, UnicodeDecodeError):
        return None
    if name is None:
        return None
    return _File(name, package or "", deps, bytes(sec[start:pos]))


def split_section(sec: bytes) -> dict[str, _File]:
    """File name -> descriptor, for every FileDescriptorProto in a ``protodesc_cold`` section.

    The section holds other cold data too (parse tables), so descriptors are
    found by their first field, the file name (``\\n``, a one-byte length,
    ``....proto``), and read to their terminator.
    """
    files: dict[str, _File] = {}
    covered = 0
    pos = 0
    while True:
        q = sec.find(b".proto", pos)
        if q < 0:
            return files
        pos = end = q + 6
        if end <= covered:  # an import or option inside a descriptor already read
            continue
        for length in range(6, min(128, end - 1)):
            start = end - length - 2
            if sec[start] == 0x0A and sec[start + 1] == length:
                f = _read_file_at(sec, start)
                if f is not None and f.name == sec[start + 2:end].decode("utf-8", "replace"):
                    files.setdefault(f.name, f)
                    covered = start + len(f.data)
                break


@lru_cache(maxsize=None)
def _library_files(library: str) -> dict[str, _File]:
    path = library_path(library)
    if path is None:
        if library == "jaxlib":
            raise ProtoSchemaError("jaxlib is not installed: its libjax_common.so holds XLA's "
                                   "protobuf descriptors", hint="pip install jaxlib")
        return {}
    try:
        sec = elf_section(path)
    except (OSError, ValueError) as e:
        raise ProtoSchemaError(f"cannot read protobuf descriptors from {path} ({_version(library)}): "
                               f"{e}") from None
    files = split_section(sec) if sec else {}
    if not files:
        raise ProtoSchemaError(
            f"{path} ({_version(library)}) has no '{SECTION.decode()}' section with protobuf "
            "descriptors; the driver reads XLA's .proto schemas from there",
            hint="install a jaxlib (and CUDA plugin) version pyproject.toml allows")
    return files


def file_descriptors(library: str = "jaxlib") -> dict[str, bytes]:
    """File name -> serialized FileDescriptorProto, as compiled into ``library``
    ("jaxlib" or "cuda_plugin"; {} when the plugin is not installed)."""
    return {name: f.data for name, f in _library_files(library).items()}


# ---------------------------------------------------------------------------
# The pool.

_lock = threading.RLock()


@lru_cache(maxsize=None)
def pool() -> Any:
    """The process's private DescriptorPool (files are added to it on demand)."""
    from google.protobuf import descriptor_pool

    return descriptor_pool.DescriptorPool()


_loaded: set[str] = set()


def _find_file(name: str) -> _File | None:
    for library in LIBRARIES:
        f = _library_files(library).get(name)
        if f is not None:
            return f
    return None


def _add_file(name: str) -> None:
    if name in _loaded:
        return
    f = _find_file(name)
    if f is None:
        raise ProtoSchemaError(f"protobuf descriptor of {name} not found in jaxlib "
                               f"({_version('jaxlib')})")
    for dep in f.deps:
        _add_file(dep)
    pool().AddSerializedFile(f.data)
    _loaded.add(name)


def _load_defining(full_name: str) -> None:
    """Add the files that may define ``full_name`` (with their imports) to the pool."""
    for library in LIBRARIES:
        for f in _library_files(library).values():
            if f.name in _loaded:
                continue
            prefix = f.package + "." if f.package else ""
            if not full_name.startswith(prefix):
                continue
            top = full_name[len(prefix):].split(".")[0]
            # The top-level name is stored as a length-prefixed string in the file.
            needle = (bytes([len(top)]) if len(top) < 128 else b"") + top.encode()
            if needle in f.data:
                _add_file(f.name)
        try:
            pool().FindMessageTypeByName(full_name)
            return
        except KeyError:
            pass


_classes: dict[str, type] = {}


def message_class(full_name: str) -> type:
    """The generated message class of ``full_name`` (e.g. ``"xla.HloModuleProto"``,
    ``"stream_executor.GpuTargetConfigProto"``, ``"xla.AutotuneResults"``,
    ``"xla.DebugOptions"``). Cached per process.

    Raises KeyError if no descriptor in jaxlib (or the CUDA plugin) defines it,
    ProtoSchemaError if jaxlib carries no descriptors at all.
    """
    cls = _classes.get(full_name)
    if cls is not None:
        return cls
    from google.protobuf import message_factory

    with _lock:
        try:
            desc = pool().FindMessageTypeByName(full_name)
        except KeyError:
            _load_defining(full_name)
            try:
                desc = pool().FindMessageTypeByName(full_name)
            except KeyError:
                raise KeyError(f"no protobuf message type {full_name!r} in jaxlib's descriptors") from None
        cls = _classes[full_name] = message_factory.GetMessageClass(desc)
    return cls


# ---------------------------------------------------------------------------
# Text and JSON.

_LOCATION = re.compile(r"^\d+(?::\d+)?\s*:\s*")
_NO_FIELD = re.compile(r'^Message type "([\w.]+)" has no field named "(\w+)"')
_NO_ENUM = re.compile(r'^Enum type "([\w.]+)" has no value named (\w+)')


def _hint(message: str) -> str | None:
    """A did-you-mean hint for protobuf's unknown-field and unknown-enum-value errors."""
    m = _NO_FIELD.match(message)
    if m:
        try:
            desc = pool().FindMessageTypeByName(m.group(1))
        except KeyError:
            return None
        return did_you_mean(m.group(2), desc.fields_by_name)
    m = _NO_ENUM.match(message)
    if m:
        try:
            desc = pool().FindEnumTypeByName(m.group(1))
        except KeyError:
            return None
        return did_you_mean(m.group(2), desc.values_by_name)
    return None


def _error_text(raw: str, text: str, line: int | None, lower: bool = True) -> str:
    """text_format's error message without the location and the quoted source line
    it prefixes (the one-line error gives both already)."""
    message = _LOCATION.sub("", raw).rstrip(".")
    if line is not None and 0 < line <= text.count("\n") + 1:
        quoted = "'" + text.split("\n")[line - 1] + "': "
        message = message.removeprefix(quoted)
    if lower and len(message) > 1 and message[0].isupper() and message[1].islower():
        message = message[0].lower() + message[1:]  # the driver's errors start lowercase
    return message


def parse_text(text: str | bytes, full_name: str, *, file: str | None = None,
               error: type[Exception] = InputError) -> Any:
    """Protobuf text format -> message of type ``full_name`` (protobuf's text_format).

    Errors raise ``error`` (a DriverError type) with the file, 1-based line and
    column, and a did-you-mean hint for misspelt field and enum value names.
    """
    from google.protobuf import text_format

    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise error(f"text format input is not valid UTF-8 (byte {e.start})", file=file) from None
    msg = message_class(full_name)()
    try:
        text_format.Parse(text, msg, descriptor_pool=pool())
    except text_format.ParseError as e:
        line, col = e.GetLine(), e.GetColumn()
        raise error(_error_text(str(e), text, line), file=file, line=line, col=col,
                    hint=_hint(_error_text(str(e), text, line, lower=False))) from None
    return msg


def to_text(message: Any) -> str:
    """Protobuf text format, as text_format writes it: non-ASCII bytes C-escaped (as
    C++ does), map entries sorted by key, unknown fields printed by number."""
    from google.protobuf import text_format

    # as_utf8=False: C-escape non-ASCII bytes, as C++ TextFormat does (protobuf 7 changed
    # the default; the output must not depend on the protobuf version).
    return text_format.MessageToString(message, as_utf8=False, descriptor_pool=pool(),
                                       print_unknown_fields=True)


def parse_json(text: str | bytes, full_name: str, *, file: str | None = None,
               error: type[Exception] = InputError) -> Any:
    """Proto3 JSON -> message of type ``full_name`` (protobuf's json_format).

    json_format reports no positions, so errors carry the file only.
    """
    from google.protobuf import json_format

    msg = message_class(full_name)()
    try:
        json_format.Parse(text, msg, descriptor_pool=pool())
    except json_format.ParseError as e:
        raise error(f"invalid {full_name} JSON: {e}", file=file) from None
    return msg


def to_json(message: Any, *, indent: int | None = 2) -> str:
    """Proto3 JSON (field names in lowerCamelCase, 64-bit integers as strings)."""
    from google.protobuf import json_format

    return json_format.MessageToJson(message, descriptor_pool=pool(), indent=indent)


# ---------------------------------------------------------------------------
# Binary.

_VARINT, _FIXED64, _LEN, _GROUP_START, _GROUP_END, _FIXED32 = range(6)
_MAX_DEPTH = 100  # C++ protobuf's default recursion limit


class _Malformed(ValueError):
    def __init__(self, what: str, at: int, path: str = "") -> None:
        super().__init__(f"{what} at byte {at}" + (f" (in {path})" if path else ""))


def _skip(data: bytes, pos: int, tag: int, end: int, depth: int = 0) -> int:
    """The position after the value of a record whose tag ends at ``pos``."""
    wire = tag & 7
    if wire == _VARINT:
        for i in range(pos, min(pos + 10, end)):
            if data[i] < 0x80:
                return i + 1
        raise _Malformed("truncated varint", pos)
    if wire == _FIXED64 or wire == _FIXED32:
        nxt = pos + (8 if wire == _FIXED64 else 4)
        if nxt > end:
            raise _Malformed("truncated fixed-width value", pos)
        return nxt
    if wire == _LEN:
        n, p = _read_varint(data, pos, end)
        if p + n > end:
            raise _Malformed(f"length {n} runs past the end of the enclosing message", pos)
        return p + n
    if wire == _GROUP_START:
        if depth >= _MAX_DEPTH:
            raise _Malformed(f"groups nested deeper than {_MAX_DEPTH}", pos)
        while True:
            at = pos
            inner, pos = _read_varint(data, pos, end)
            if inner == (tag & ~7) | _GROUP_END:
                return pos
            if inner >> 3 == 0 or inner & 7 > _FIXED32:
                raise _Malformed("field number 0" if inner >> 3 == 0 else f"invalid wire type {inner & 7}", at)
            pos = _skip(data, pos, inner, end, depth + 1)
    raise _Malformed(f"invalid wire type {wire}", pos)


def _read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    start = pos
    while pos < end and shift < 70:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise _Malformed("truncated varint", start)


def records(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[int, int, int, int]]:
    """The wire records of one message level, ``(field number, wire type, start, end)``,
    ``data[start:end]`` being the whole record, tag included. Sub-messages are
    not entered. Raises ValueError for bytes that are not wire format."""
    end = len(data) if end is None else end
    out = []
    pos = start
    while pos < end:
        at = pos
        tag, pos = _read_tag(data, pos, end)
        pos = _skip(data, pos, tag, end)
        out.append((tag >> 3, tag & 7, at, pos))
    return out


def _read_tag(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """A record's tag and the position after it; _Malformed for tags no encoder writes."""
    tag, after = _read_varint(data, pos, end)
    if tag >> 3 == 0:
        raise _Malformed("field number 0", pos)
    if tag & 7 == _GROUP_END:
        raise _Malformed("end-group tag without a group", pos)
    if tag & 7 > _FIXED32:
        raise _Malformed(f"invalid wire type {tag & 7}", pos)
    return tag, after


def len_value(data: bytes, start: int, end: int) -> bytes:
    """The payload of the length-delimited record ``data[start:end]`` (from :func:`records`)."""
    _, pos = _read_varint(data, start, end)
    _, pos = _read_varint(data, pos, end)
    return data[pos:end]


def is_repeated(f: Any) -> bool:
    """Whether a field descriptor is a repeated field (every protobuf version)."""
    repeated = getattr(f, "is_repeated", None)  # protobuf >= 5.29; ``label`` is gone in 7
    return repeated if repeated is not None else f.label == f.LABEL_REPEATED


@lru_cache(maxsize=None)
def _proto3(file_name: str) -> bool:
    """Whether a file's strings must be UTF-8 (proto3; XLA's files all are)."""
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto.FromString(pool().FindFileByName(file_name).serialized_pb)
    return fd.syntax == "proto3"


def _locate_error(data: bytes, desc: Any) -> str:
    """Where and why ``data`` is not a valid message of type ``desc`` (the
    decoder itself says only that it failed): a walk of the wire format that
    enters known sub-messages and checks proto3 strings for UTF-8."""
    from google.protobuf.descriptor import FieldDescriptor

    def walk(pos: int, end: int, desc: Any, path: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise _Malformed(f"messages nested deeper than {_MAX_DEPTH}", pos, path)
        seen: dict[int, int] = {}
        while pos < end:
            try:
                tag, pos = _read_tag(data, pos, end)
                nxt = _skip(data, pos, tag, end)
            except _Malformed as e:
                raise ValueError(f"{e}" + (f" (in {path})" if path else "")) from None
            f = desc.fields_by_number.get(tag >> 3) if desc is not None else None
            if f is not None and tag & 7 == _LEN:
                index = seen.get(f.number, 0)
                seen[f.number] = index + 1
                here = (f"{path}." if path else "") + f.name
                if is_repeated(f):
                    here += f"[{index}]"
                _, body = _read_varint(data, pos, end)
                if f.type == FieldDescriptor.TYPE_MESSAGE:
                    walk(body, nxt, f.message_type, here, depth + 1)
                elif f.type == FieldDescriptor.TYPE_STRING and _proto3(desc.file.name):
                    try:
                        bytes(data[body:nxt]).decode("utf-8")
                    except UnicodeDecodeError:
                        raise _Malformed("string is not valid UTF-8", body, here) from None
            pos = nxt

    try:
        walk(0, len(data), desc, "", 0)
    except ValueError as e:
        return str(e)
    return "not a valid encoding of this message type"


def decode(data: bytes, full_name: str, *, what: str | None = None,
           error: type[Exception] = InputError, file: str | None = None) -> Any:
    """Binary wire format -> message of type ``full_name`` (upb). Fields the schema
    does not know are kept and written back by :func:`serialize`.

    Malformed bytes raise ``error`` with one line: ``malformed <what>: <why> at
    byte N (in <field path>)``.
    """
    from google.protobuf.message import DecodeError

    cls = message_class(full_name)
    try:
        return cls.FromString(bytes(data))
    except DecodeError:
        why = _locate_error(bytes(data), cls.DESCRIPTOR)
        raise error(f"malformed {what or full_name}: {why}", file=file) from None


# Which fields lead to a map with integer keys: upb writes those maps in
# descending key order even when asked to be deterministic, C++ in ascending.
@lru_cache(maxsize=1)
def _int_key_types() -> frozenset[int]:
    from google.protobuf.descriptor import FieldDescriptor  # here: protobuf is imported on use

    return frozenset(getattr(FieldDescriptor, f"TYPE_{t}") for t in (
        "INT64", "UINT64", "INT32", "FIXED64", "FIXED32", "BOOL", "UINT32", "SFIXED32", "SFIXED64", "SINT32",
        "SINT64"))


def _is_map(f: Any) -> bool:
    return f.message_type is not None and f.message_type.GetOptions().map_entry


@lru_cache(maxsize=None)
def _int_map_paths(desc: Any) -> tuple[Any, ...]:
    """Fields of ``desc`` that are integer-keyed maps or lead to one (cycles included)."""
    types: dict[str, Any] = {}
    todo = [desc]
    while todo:
        d = todo.pop()
        if d.full_name not in types:
            types[d.full_name] = d
            todo.extend(f.message_type for f in d.fields if f.message_type is not None)
    leads = {name for name, d in types.items()
             if any(_is_map(f) and f.message_type.fields_by_name["key"].type in _int_key_types()
                    for f in d.fields)}
    changed = True
    while changed:  # a fixpoint: recursive types (HloModuleProto inside its own table) included
        changed = False
        for name, d in types.items():
            if name not in leads and any(f.message_type is not None and f.message_type.full_name in leads
                                         for f in d.fields):
                leads.add(name)
                changed = True
    return tuple(f for f in desc.fields if f.message_type is not None
                 and (f.message_type.full_name in leads
                      or (_is_map(f) and f.message_type.fields_by_name["key"].type in _int_key_types())))


def _encode_varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64: ten bytes, as C++ writes them
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _len_record(number: int, body: bytes) -> bytes:
    return _encode_varint(number << 3 | _LEN) + _encode_varint(len(body)) + body


_FIXED_FORMATS = {6: "<Q", 16: "<q", 1: "<d", 7: "<I", 15: "<i", 2: "<f"}


def _scalar_record(number: int, f: Any, value: Any) -> bytes:
    t = f.type
    if t in (17, 18):  # sint32 / sint64: zigzag
        return _encode_varint(number << 3) + _encode_varint((value << 1) ^ (value >> 63))
    if t in _FIXED_FORMATS:
        wire = _FIXED64 if struct.calcsize(_FIXED_FORMATS[t]) == 8 else _FIXED32
        return _encode_varint(number << 3 | wire) + struct.pack(_FIXED_FORMATS[t], value)
    if t == 9:
        return _len_record(number, value.encode("utf-8"))
    if t == 12:
        return _len_record(number, bytes(value))
    return _encode_varint(number << 3) + _encode_varint(int(value))  # ints, bool, enum


def _map_record(f: Any, mapping: Any) -> bytes:
    key_f, value_f = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
    out = []
    for key in sorted(mapping):
        value = mapping[key]
        body = _scalar_record(1, key_f, key) + (
            _len_record(2, serialize(value)) if value_f.message_type is not None
            else _scalar_record(2, value_f, value))
        out.append(_len_record(f.number, body))  # key and value both, always, as C++ and upb do
    return b"".join(out)


def serialize(message: Any) -> bytes:
    """The bytes C++ ``SerializeToStringDeterministic`` writes (what XLA's dumps hold):
    fields by number, unknown fields last, map entries by key.

    upb's deterministic mode gives those bytes except for integer-keyed maps,
    which it writes in descending key order; their records are rewritten in
    place. Messages without such maps cost one upb call.
    """
    data = message.SerializeToString(deterministic=True)
    paths = _int_map_paths(message.DESCRIPTOR)
    if not paths:
        return data
    pieces: dict[int, bytes] = {}
    for f in paths:
        value = getattr(message, f.name)
        if _is_map(f):
            if len(value):
                pieces[f.number] = _map_record(f, value)
        elif is_repeated(f):
            if len(value):
                pieces[f.number] = b"".join(_len_record(f.number, serialize(v)) for v in value)
        elif message.HasField(f.name):
            pieces[f.number] = _len_record(f.number, serialize(value))
    if not pieces:
        return data
    # Each such field's records are one contiguous run (fields are written in
    # number order, unknown ones after): replace the run.
    out = []
    for number, wire, start, end in records(data):
        if wire == _LEN and number in pieces:
            if pieces[number] is not None:
                out.append(pieces[number])
                pieces[number] = None  # type: ignore[assignment]
        else:
            out.append(data[start:end])
    return b"".join(out)
