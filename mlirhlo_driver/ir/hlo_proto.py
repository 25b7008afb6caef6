"""HloModuleProto / HloProto: binary, text format and JSON, through ``protobuf``.

The message classes come from the descriptors compiled into the installed
jaxlib (:mod:`mlirhlo_driver.ir.protos`), so the schema is exactly the one XLA
reads and writes. Messages are ordinary protobuf messages (upb runtime).

Public API::

    message_class(name) -> type[Message]                  "HloModuleProto", "xla.HloProto", ...
    decode(data, message="HloModuleProto") -> Message     binary -> message
    encode(msg) -> bytes                                  message -> binary (C++ deterministic)
    to_text(msg) -> str / parse_text(text, message)       protobuf text format (.pbtxt)
    to_json(msg) -> str / parse_json(text, message)       proto3 JSON
    looks_like_hlo_proto(data) -> "HloModuleProto" | "HloProto" | None
    module_proto_from_any(data) -> bytes                  HloProto/HloModuleProto(.gz) -> HloModuleProto
    strip_module_id(data) -> bytes                        HloModuleProto without its id

Round trips:

* ``encode(decode(b)) == b`` for every proto XLA writes with deterministic
  serialization (``--xla_dump_hlo_as_proto``) and for jaxlib's serialized
  modules: :func:`encode` gives the bytes of C++
  ``SerializeToStringDeterministic`` (fields by number, unknown fields kept and
  written last, map entries by key).
* ``parse_text(to_text(m)) == m`` for messages without unknown fields: those
  print by number, which text format parsers (C++'s too) do not read back.
"""

from __future__ import annotations

import gzip
import re
from typing import Any

from ..errors import InputError
from . import protos

__all__ = [
    "decode",
    "encode",
    "entry_computation",
    "looks_like_hlo_proto",
    "message_class",
    "module_proto_from_any",
    "parse_json",
    "parse_text",
    "strip_module_id",
    "to_json",
    "to_text",
]


def _full_name(name: str) -> str:
    # Short names are XLA's (package ``xla``): "HloModuleProto", "HloModuleProto.ProfileInfo".
    return name if name.startswith(("xla.", "stream_executor.", "tsl.", "google.")) else f"xla.{name}"


def message_class(name: str = "HloModuleProto") -> type:
    """The message class of ``name`` (package ``xla`` unless qualified).

    Raises ValueError for a name no descriptor in jaxlib defines.
    """
    try:
        return protos.message_class(_full_name(name))
    except KeyError:
        raise ValueError(f"unknown message type {name!r}") from None


def decode(data: bytes, message: str = "HloModuleProto", *, file: str | None = None) -> Any:
    """Binary -> message. Malformed bytes raise InputError: ``malformed NAME: why at
    byte N (in field.path[i])``."""
    cls = message_class(message)
    return protos.decode(data, cls.DESCRIPTOR.full_name, what=message.rsplit(".", 1)[-1], file=file)


def encode(msg: Any) -> bytes:
    """Message -> the bytes C++ ``SerializeToStringDeterministic`` writes."""
    return protos.serialize(msg)


def to_text(msg: Any) -> str:
    """Protobuf text format (as protobuf's text_format writes it; non-ASCII bytes
    C-escaped, map entries by key, unknown fields by number)."""
    return protos.to_text(msg)


def parse_text(text: str | bytes, message: str = "HloModuleProto", *,
               file: str | None = None) -> Any:
    """Protobuf text format -> message. Errors raise InputError with the 1-based
    line and column, and a did-you-mean hint for misspelt names."""
    return protos.parse_text(text, message_class(message).DESCRIPTOR.full_name, file=file)


def to_json(msg: Any) -> str:
    """Proto3 JSON."""
    return protos.to_json(msg)


def parse_json(text: str | bytes, message: str = "HloModuleProto", *,
               file: str | None = None) -> Any:
    """Proto3 JSON -> message; errors raise InputError (json_format gives no position)."""
    return protos.parse_json(text, message_class(message).DESCRIPTOR.full_name, file=file)


# ---------------------------------------------------------------------------
# Sniffing.

_OPCODE = re.compile(r"[a-z][a-z0-9-]*\Z")
_MLIR_BYTECODE_MAGIC = b"ML\xefR"


def _no_misread_fields(msg: Any) -> bool:
    """No field the schema declares came with another wire type (upb keeps such
    records as unknown fields; C++ XLA never writes them)."""
    from google.protobuf import unknown_fields

    declared = msg.DESCRIPTOR.fields_by_number
    return not any(f.field_number in declared for f in unknown_fields.UnknownFieldSet(msg))


def _plausible_module(module: Any) -> bool:
    if not module.name or not module.computations or not _no_misread_fields(module):
        return False
    for comp in module.computations:
        # One opcode per computation: the decode has checked the whole wire format
        # already, and reading every instruction from Python would double its cost.
        if not (comp.instructions and _no_misread_fields(comp)
                and _OPCODE.match(comp.instructions[0].opcode)):
            return False
    return True


_last_sniff: tuple[bytes, str | None] | None = None


def _candidate(buf: bytes) -> str | None:
    """Which of the two messages ``buf`` can be, from its first record, without
    importing protobuf (every input file is sniffed).

    Serializers write known fields in field-number order. A module (which has
    a name) starts with field 1, ``name``, then field 2 or 3; an HloProto with
    field 1, the module, whose payload starts with the module's own field 1,
    then field 3 or nothing. Text fails at once: 0x12 and 0x1A are control
    characters, and no HLO name starts with a newline.
    """
    if buf[0] != 0x0A:
        return None
    length = shift = 0
    pos = 1
    while pos < len(buf) and shift < 35:
        b = buf[pos]
        pos += 1
        length |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    else:
        return None
    after = pos + length
    if pos < len(buf) and buf[pos] == 0x0A:
        return "HloProto" if after == len(buf) or (after < len(buf) and buf[after] == 0x1A) else None
    return "HloModuleProto" if after < len(buf) and buf[after] in (0x12, 0x1A) else None


def looks_like_hlo_proto(data: bytes) -> str | None:
    """``"HloProto"``, ``"HloModuleProto"`` or None, by a strict check.

    The bytes must start as serializers write these messages (field 1 first),
    and decode as that message (wire format to the end, UTF-8 strings); the
    module must have a name and at least one computation, each with
    instructions, the first with an opcode that looks like an HLO opcode, and
    no declared field of an HloProto, module or computation may come with the
    wrong wire type.
    """
    global _last_sniff
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return None
    buf = bytes(data)
    if len(buf) < 4 or buf.startswith(_MLIR_BYTECODE_MAGIC):
        return None
    candidate = _candidate(buf)
    if candidate is None:
        return None
    if _last_sniff is not None and _last_sniff[0] == buf:  # detect_format, then the loader
        return _last_sniff[1]
    from google.protobuf.message import DecodeError

    kind = None
    try:
        msg = message_class(candidate).FromString(buf)
    except DecodeError:
        msg = None
    if msg is not None and candidate == "HloProto":
        msg = msg.hlo_module if msg.HasField("hlo_module") and _no_misread_fields(msg) else None
    if msg is not None and _plausible_module(msg):
        kind = candidate
    _last_sniff = (buf, kind)
    return kind


def module_proto_from_any(data: bytes) -> bytes:
    """HloProto or HloModuleProto bytes (gzip-compressed too) -> HloModuleProto bytes.

    An HloProto's module is returned as its bytes in the file, not re-encoded.
    """
    buf = bytes(data)
    if buf[:2] == b"\x1f\x8b":
        try:
            buf = gzip.decompress(buf)
        except (OSError, EOFError) as e:
            raise InputError(f"cannot decompress gzip data: {e}") from None
    kind = looks_like_hlo_proto(buf)
    if kind == "HloModuleProto":
        return buf
    if kind == "HloProto":
        # The value of field 1 (several records of a message field merge: concatenate them).
        return b"".join(protos.len_value(buf, start, end)
                        for number, _, start, end in protos.records(buf) if number == 1)
    why = ""
    if buf[:1] == b"\x0a":  # starts like one: say where the wire format breaks, if it does
        try:
            decode(buf, "HloModuleProto")
        except InputError as e:
            why = ": " + e.message.split(": ", 1)[-1]  # "malformed HloModuleProto: <why>"
    raise InputError(f"not a serialized HloProto or HloModuleProto{why}",
                     hint="expected XLA's binary HLO proto (*.pb); text protos go through parse_text")


# HloModuleProto.id. Field numbers are part of the wire format and never change
# (tests/ir/test_hlo_proto.py checks it against jaxlib's descriptor); a constant keeps
# protobuf out of loading HLO text.
_MODULE_ID_FIELD = 5


def strip_module_id(data: bytes) -> bytes:
    """An HloModuleProto without its ``id`` (field 5), which XLA draws from a
    process-wide counter: the same module then always gives the same bytes.
    The other records are kept byte for byte."""
    try:
        recs = protos.records(data)
    except ValueError as e:
        raise InputError(f"malformed HloModuleProto: {e}") from None
    return b"".join(data[start:end] for number, _, start, end in recs if number != _MODULE_ID_FIELD)


def entry_computation(msg: Any) -> Any | None:
    """An HloModuleProto's entry computation: by its id, else (a proto without one) by its
    name, else the last (XLA writes the entry last); None for a module of none."""
    for c in msg.computations:
        if (msg.entry_computation_id and c.id == msg.entry_computation_id) or \
                (not msg.entry_computation_id and c.name == msg.entry_computation_name):
            return c
    return msg.computations[-1] if msg.computations else None


