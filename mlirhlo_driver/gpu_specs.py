"""GPU target specs: ``GpuTargetConfigProto`` text files for device-less CUDA compiles.

XLA compiles for CUDA without a GPU when it is handed a
``stream_executor.GpuTargetConfigProto`` in protobuf text format. The repo
ships one such file per common GPU in ``gpu_specs/``; users may pass their own.

This module is pure Python (no jax/jaxlib import), so listing and checking
specs stays fast. It holds:

* a small protobuf text-format parser that records the line and column of
  every field and reports malformed input as :class:`SpecError`;
* a schema of the ``GpuTargetConfigProto`` messages as this jaxlib (0.10.2)
  defines them (read from the descriptors compiled into its CUDA plugin), with
  the fields XLA needs to compile marked required;
* :class:`GpuSpec`, the validated summary of one file, and the functions that
  list, load and resolve specs.

The file text is passed to XLA unchanged; the parse here only validates it
and extracts the summary.
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from .errors import SpecError, did_you_mean
from .resources import data_dir


SPEC_DIR = data_dir("gpu_specs")
SPEC_SUFFIX = ".txtpb"
DEFAULT_SPEC = "h100_sxm"

__all__ = [
    "DEFAULT_SPEC", "SPEC_DIR", "SPEC_SUFFIX", "GpuSpec", "Message", "Field", "Ident",
    "SCHEMA", "REQUIRED", "parse_textproto", "validate", "list_specs", "load_spec",
    "parse_spec", "resolve_spec", "check_spec", "shipped_names",
]


# ------------------------------------------------------------------ parse tree

@dataclass(frozen=True)
class Ident:
    """A bare identifier used as a value: an enum name, true/false, inf/nan."""

    name: str
    negative: bool = False  # written as ``-inf``

    def __str__(self) -> str:
        return ("-" if self.negative else "") + self.name


@dataclass
class Field:
    """One ``name: value`` or ``name { ... }`` occurrence, with its position."""

    name: str
    kind: str  # "int", "float", "string", "ident" or "message"
    value: Union[int, float, str, Ident, "Message"]
    line: int  # of the field name
    col: int
    value_line: int  # of the value (for a message: its opening brace)
    value_col: int

    def describe_value(self) -> str:
        if self.kind == "string":
            return "string " + _quote(self.value)  # type: ignore[arg-type]
        if self.kind == "message":
            return "a message"
        if self.kind == "ident":
            return f"identifier {self.value}"
        return f"{'integer' if self.kind == 'int' else 'number'} {self.value}"


@dataclass
class Message:
    """A message body: its fields in file order. The root has name ``""``."""

    name: str
    line: int  # of the field name that opens it (1, 1 for the root)
    col: int
    fields: list[Field]

    def get(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def value(self, name: str, default: Any = None) -> Any:
        f = self.get(name)
        return default if f is None else f.value


# ------------------------------------------------------------------- tokenizer

@dataclass(frozen=True)
class _Tok:
    kind: str  # "ident", "int", "float", "string", "punct", "eof"
    text: str  # source text (for strings: the decoded value)
    value: Any
    line: int
    col: int

    def describe(self) -> str:
        if self.kind == "eof":
            return "end of file"
        if self.kind == "string":
            return "string " + _quote(self.value)
        return f"'{self.text}'"


_PUNCT = set("{}<>:;,[]-")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIGITS = "0123456789"
_IDENT_START = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_NUMBER_RE = re.compile(
    r"""(?P<hex>0[xX][0-9a-fA-F]+)
      | (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?|\d+[eE][+-]?\d+[fF]?|\d+[fF])
      | (?P<oct>0[0-7]+)
      | (?P<dec>\d+)""",
    re.VERBOSE | re.ASCII,
)
_SIMPLE_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
    "b": "\b", "f": "\f", "v": "\v", "?": "?",
}


def _quote(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


class _Lexer:
    def __init__(self, text: str, file: str | None) -> None:
        self.text = text
        self.file = file
        self.pos = 0
        self.line = 1
        self.col = 1

    def error(self, message: str, line: int, col: int, hint: str | None = None) -> SpecError:
        return SpecError(message, file=self.file, line=line, col=col, hint=hint)

    def _advance(self, n: int) -> None:
        for ch in self.text[self.pos:self.pos + n]:
            if ch == "\n":
                self.line += 1
                self.col = 1
            else:
                self.col += 1
        self.pos += n

    def tokens(self) -> list[_Tok]:
        out: list[_Tok] = []
        text = self.text
        while True:
            # whitespace and comments
            while self.pos < len(text):
                ch = text[self.pos]
                if ch in " \t\r\n\f\v":
                    self._advance(1)
                elif ch == "#":
                    end = text.find("\n", self.pos)
                    self._advance((len(text) if end < 0 else end) - self.pos)
                else:
                    break
            if self.pos >= len(text):
                out.append(_Tok("eof", "", None, self.line, self.col))
                return out
            line, col, ch = self.line, self.col, text[self.pos]
            if ch in "\"'":
                value, length = self._string(line, col)
                out.append(_Tok("string", text[self.pos:self.pos + length], value, line, col))
                self._advance(length)
            elif ch in _DIGITS or (ch == "." and text[self.pos + 1:self.pos + 2] in tuple(_DIGITS)):
                out.append(self._number(line, col))
            elif ch in _IDENT_START:
                m = _IDENT_RE.match(text, self.pos)
                assert m is not None
                out.append(_Tok("ident", m.group(), m.group(), line, col))
                self._advance(len(m.group()))
            elif ch in _PUNCT:
                out.append(_Tok("punct", ch, ch, line, col))
                self._advance(1)
            else:
                raise self.error(f"unexpected character {ch!r}", line, col)

    def _number(self, line: int, col: int) -> _Tok:
        m = _NUMBER_RE.match(self.text, self.pos)
        assert m is not None
        raw = m.group()
        end = m.end()
        if end < len(self.text) and (self.text[end] in _IDENT_START or self.text[end] in _DIGITS
                                     or self.text[end] == "."):
            tail = _IDENT_RE.match(self.text, end)
            bad = raw + (tail.group() if tail else self.text[end])
            raise self.error(f"invalid number '{bad}'", line, col)
        if m.group("float") is not None:
            tok = _Tok("float", raw, float(raw.rstrip("fF")), line, col)
        elif m.group("hex") is not None:
            tok = _Tok("int", raw, int(raw, 16), line, col)
        elif m.group("oct") is not None:
            tok = _Tok("int", raw, int(raw, 8), line, col)
        else:
            if len(raw) > 1 and raw[0] == "0":
                raise self.error(f"invalid number '{raw}' (a leading 0 means octal)", line, col)
            tok = _Tok("int", raw, int(raw), line, col)
        self._advance(len(raw))
        return tok

    def _string(self, line: int, col: int) -> tuple[str, int]:
        """Decode the string literal at pos; returns (value, source length)."""
        text = self.text
        quote = text[self.pos]
        i = self.pos + 1
        out: list[str] = []
        cur_line, cur_col = line, col + 1
        while True:
            if i >= len(text) or text[i] == "\n":
                raise self.error("unterminated string", line, col,
                                 hint=f"close it with {quote} on the same line")
            ch = text[i]
            if ch == quote:
                return "".join(out), i + 1 - self.pos
            if ch != "\\":
                out.append(ch)
                i += 1
                cur_col += 1
                continue
            esc_col = cur_col
            nxt = text[i + 1] if i + 1 < len(text) else ""
            if nxt in _SIMPLE_ESCAPES:
                out.append(_SIMPLE_ESCAPES[nxt])
                n = 2
            elif nxt and nxt in "01234567":
                m = re.match(r"[0-7]{1,3}", text[i + 1:])
                assert m is not None
                out.append(chr(int(m.group(), 8) & 0xFF))
                n = 1 + len(m.group())
            elif nxt in ("x", "X"):
                m = re.match(r"[0-9a-fA-F]{1,2}", text[i + 2:])
                if not m:
                    raise self.error("invalid escape '\\x' (expected hex digits)",
                                     cur_line, esc_col)
                out.append(chr(int(m.group(), 16)))
                n = 2 + len(m.group())
            elif nxt in ("u", "U"):
                width = 4 if nxt == "u" else 8
                digits = text[i + 2:i + 2 + width]
                ok = re.fullmatch(r"[0-9a-fA-F]{%d}" % width, digits) is not None
                if not ok or int(digits, 16) > 0x10FFFF:
                    raise self.error(f"invalid escape '\\{nxt}{digits}'", cur_line, esc_col)
                out.append(chr(int(digits, 16)))
                n = 2 + width
            elif nxt in ("", "\n"):
                raise self.error("unterminated string", line, col,
                                 hint=f"close it with {quote} on the same line")
            else:
                raise self.error(f"invalid escape '\\{nxt}' in string", cur_line, esc_col)
            i += n
            cur_col += n


# ---------------------------------------------------------------------- parser

class _Parser:
    def __init__(self, text: str, file: str | None) -> None:
        self.file = file
        self.toks = _Lexer(text, file).tokens()
        self.i = 0

    def error(self, message: str, tok: _Tok, hint: str | None = None) -> SpecError:
        return SpecError(message, file=self.file, line=tok.line, col=tok.col, hint=hint)

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def is_punct(self, chars: str) -> bool:
        return self.tok.kind == "punct" and self.tok.text in chars

    def parse(self) -> Message:
        root = Message("", 1, 1, [])
        self.body(root, None, None)
        return root

    def body(self, msg: Message, close: str | None, opener: _Tok | None) -> None:
        """Fields up to ``close`` (or end of file for the root)."""
        while True:
            tok = self.tok
            if close is not None and tok.kind == "punct" and tok.text == close:
                self.next()
                return
            if tok.kind == "eof":
                if close is None:
                    return
                assert opener is not None
                raise self.error(
                    f"'{opener.text}' of '{msg.name}' is never closed "
                    f"(expected '{close}' before end of file)", opener)
            if tok.kind == "punct" and tok.text in "}>":
                if close is None:
                    raise self.error(f"unexpected '{tok.text}' (no message is open)", tok)
                raise self.error(f"expected '{close}' to close '{msg.name}', got '{tok.text}'", tok)
            if tok.kind != "ident":
                raise self.error(f"expected a field name, got {tok.describe()}", tok)
            self.field(msg)
            if self.is_punct(",;"):
                self.next()

    def field(self, msg: Message) -> None:
        name_tok = self.next()
        name = name_tok.text
        colon = False
        if self.is_punct(":"):
            self.next()
            colon = True
        if self.is_punct("{<"):
            self.message_value(msg, name_tok)
        elif colon and self.is_punct("["):
            self.list_value(msg, name_tok)
        elif colon:
            self.scalar_value(msg, name_tok)
        else:
            raise self.error(f"expected ':' or '{{' after field name '{name}', "
                             f"got {self.tok.describe()}", self.tok)

    def message_value(self, msg: Message, name_tok: _Tok) -> None:
        opener = self.next()
        sub = Message(name_tok.text, name_tok.line, name_tok.col, [])
        self.body(sub, "}" if opener.text == "{" else ">", opener)
        msg.fields.append(Field(name_tok.text, "message", sub, name_tok.line, name_tok.col,
                                opener.line, opener.col))

    def list_value(self, msg: Message, name_tok: _Tok) -> None:
        self.next()  # '['
        if self.is_punct("]"):
            self.next()
            return
        while True:
            if self.is_punct("{<"):
                self.message_value(msg, name_tok)
            else:
                self.scalar_value(msg, name_tok)
            if self.is_punct(","):
                self.next()
                continue
            if self.is_punct("]"):
                self.next()
                return
            raise self.error(f"expected ',' or ']' in the list of '{name_tok.text}', "
                             f"got {self.tok.describe()}", self.tok)

    def scalar_value(self, msg: Message, name_tok: _Tok) -> None:
        tok = self.next()
        name = name_tok.text
        if tok.kind == "punct" and tok.text == "-":
            num = self.next()
            if num.kind in ("int", "float"):
                kind, value = num.kind, -num.value
            elif num.kind == "ident" and num.text.lower() in ("inf", "infinity", "nan"):
                kind, value = "ident", Ident(num.text, negative=True)
            else:
                raise self.error(f"expected a number after '-', got {num.describe()}", num)
        elif tok.kind in ("int", "float"):
            kind, value = tok.kind, tok.value
        elif tok.kind == "string":
            parts = [tok.value]
            while self.tok.kind == "string":  # adjacent literals concatenate
                parts.append(self.next().value)
            kind, value = "string", "".join(parts)
        elif tok.kind == "ident":
            kind, value = "ident", Ident(tok.text)
        else:
            raise self.error(f"expected a value for '{name}', got {tok.describe()}", tok)
        msg.fields.append(Field(name, kind, value, name_tok.line, name_tok.col, tok.line, tok.col))


def parse_textproto(text: str, file: str | None = None) -> Message:
    """Parse protobuf text format into a :class:`Message` tree (no schema check)."""
    return _Parser(text, file).parse()


# ---------------------------------------------------------------------- schema

@dataclass(frozen=True)
class _F:
    type: str  # "int32", "int64", "float", "string", "bool", "enum", "message", "opaque"
    target: str | None = None  # message or enum name
    repeated: bool = False
    oneof: str | None = None


_I32, _I64, _FLT, _STR, _BOOL = _F("int32"), _F("int64"), _F("float"), _F("string"), _F("bool")


def _msg(name: str, **kw: Any) -> _F:
    return _F("message", name, **kw)


# The GpuTargetConfigProto subset as jaxlib 0.10.2 defines it
# (xla/stream_executor/device_description.proto,
# xla/stream_executor/cuda/cuda_compute_capability.proto,
# xla/stream_executor/sycl/oneapi_compute_capability.proto,
# xla/autotune_results.proto), read from the file descriptors compiled into
# jax_plugins/xla_cuda12/xla_cuda_plugin.so. xla.AutotuneResult (the
# autotuning payload) is accepted without a field check ("opaque").
SCHEMA: dict[str, dict[str, _F]] = {
    "GpuTargetConfigProto": {
        "gpu_device_info": _msg("GpuDeviceInfoProto"),
        "platform_name": _STR,
        "dnn_version_info": _msg("DnnVersionInfoProto"),
        "runtime_version": _msg("RuntimeVersionProto"),
        "autotune_results": _msg("AutotuneResults"),
        "device_description_str": _STR,
    },
    "GpuDeviceInfoProto": {
        "device_vendor": _STR,
        "platform_version": _STR,
        "pci_bus_id": _STR,
        "name": _STR,
        "model_str": _STR,
        "threads_per_block_limit": _I32,
        "threads_per_warp": _I32,
        "shared_memory_per_block": _I32,
        "shared_memory_per_core": _I32,
        "threads_per_core_limit": _I32,
        "core_count": _I32,
        "fpus_per_core": _I64,
        "block_dim_limit_x": _I64,
        "block_dim_limit_y": _I64,
        "block_dim_limit_z": _I64,
        "memory_bandwidth": _I64,
        "l2_cache_size": _I64,
        "clock_rate_ghz": _FLT,
        "device_memory_size": _I64,
        "shared_memory_per_block_optin": _I32,
        "cuda_compute_capability": _msg("CudaComputeCapabilityProto", oneof="compute_capability"),
        "rocm_compute_capability": _msg("RocmComputeCapabilityProto", oneof="compute_capability"),
        "oneapi_compute_capability": _msg("OneAPIComputeCapabilityProto",
                                          oneof="compute_capability"),
        "registers_per_core_limit": _I64,
        "registers_per_block_limit": _I64,
        "scalar_unit_description": _msg("ExecutionUnitDescriptionProto"),
        "matrix_unit_description": _msg("ExecutionUnitDescriptionProto"),
        "driver_version": _STR,
        "kernel_mode_driver_version": _STR,
        "runtime_version": _STR,
        "compile_time_toolkit_version": _STR,
        "dnn_version": _STR,
        "cub_version": _STR,
        "device_interconnect_info": _msg("DeviceInterconnectInfoProto"),
        "numa_node": _I32,
        "thread_dim_limit_x": _I64,
        "thread_dim_limit_y": _I64,
        "thread_dim_limit_z": _I64,
        "device_address_bits": _I64,
        "pcie_bandwidth": _I64,
        "ecc_enabled": _BOOL,
    },
    "CudaComputeCapabilityProto": {
        "major": _I32,
        "minor": _I32,
        "feature_extension": _F("enum", "FeatureExtension"),
    },
    "RocmComputeCapabilityProto": {"gcn_arch_name": _STR},
    "OneAPIComputeCapabilityProto": {"architecture": _STR, "variant": _STR},
    "ExecutionUnitDescriptionProto": {
        "rate_infos": _msg("RateInfosEntry", repeated=True),  # map<int32, RateInfoProto>
    },
    "RateInfosEntry": {"key": _I32, "value": _msg("RateInfoProto")},
    "RateInfoProto": {"clock_rate_ghz": _FLT, "units_per_core": _I32, "ops_per_clock": _I32},
    "DeviceInterconnectInfoProto": {"active_links": _I32, "cluster_uuid": _STR, "clique_id": _STR},
    "DnnVersionInfoProto": {"major": _I32, "minor": _I32, "patch": _I32},
    "RuntimeVersionProto": {"major": _I32, "minor": _I32, "patch": _I32},
    "AutotuneResults": {"version": _I32, "results": _msg("AutotuneResultsEntry", repeated=True)},
    "AutotuneResultsEntry": {
        "device": _STR, "hlo": _STR, "result": _F("opaque", "xla.AutotuneResult"), "version": _I32,
    },
}

ENUMS: dict[str, dict[str, int]] = {
    "FeatureExtension": {
        "UNSPECIFIED": 0, "NONE": 1, "ACCELERATED_FEATURES": 2, "FAMILY_COMPATIBLE_FEATURES": 3,
    },
}

# Fields a spec must set. Measured with jaxlib 0.10.2 by deleting each field
# from a working spec and compiling device-less:
#   XLA crashes (SIGFPE) without gpu_device_info, threads_per_warp or
#     block_dim_limit_x;
#   without cuda_compute_capability (or its major) XLA targets CC 0.0 and
#     compilation fails;
#   without shared_memory_per_block_optin Triton fusions fail ("Shared memory
#     size limit exceeded ... available: 0");
#   without device_memory_size the scheduler logs "exceeds the base limit (0)";
#   without core_count, fpus_per_core, clock_rate_ghz, memory_bandwidth,
#     shared_memory_per_block or registers_per_block_limit XLA still compiles,
#     but its cost model fuses differently (other kernels), i.e. the output
#     is not what the GPU would get.
# platform_name (must be "CUDA"), threads_per_block_limit and
# device_description_str are the driver's own requirements.
REQUIRED: dict[str, tuple[str, ...]] = {
    "GpuTargetConfigProto": ("gpu_device_info", "platform_name", "device_description_str"),
    "GpuDeviceInfoProto": (
        "cuda_compute_capability", "core_count", "fpus_per_core", "clock_rate_ghz",
        "threads_per_warp", "threads_per_block_limit", "block_dim_limit_x",
        "shared_memory_per_block", "shared_memory_per_block_optin", "registers_per_block_limit",
        "device_memory_size", "memory_bandwidth",
    ),
    "CudaComputeCapabilityProto": ("major",),
}

# Required numeric fields that must also be > 0.
_POSITIVE = {
    "GpuDeviceInfoProto": set(REQUIRED["GpuDeviceInfoProto"]) - {"cuda_compute_capability"},
    "CudaComputeCapabilityProto": {"major"},
}

_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
_TYPE_WORDS = {
    "int32": "an integer (int32)", "int64": "an integer (int64)", "float": "a number",
    "string": "a quoted string", "bool": "true or false",
}


def _where(msg: Message, schema_name: str) -> str:
    return schema_name if not msg.name else f"'{msg.name}' ({schema_name})"


def validate(root: Message, file: str | None = None) -> None:
    """Check a parsed spec against the GpuTargetConfigProto schema; raise SpecError."""
    if not root.fields:
        raise SpecError("spec is empty (expected a GpuTargetConfigProto in text format)",
                        file=file, line=1, col=1,
                        hint=f"see the shipped specs in {SPEC_DIR}")
    _check_message(root, "GpuTargetConfigProto", file)
    _check_semantics(root, file)


def _check_message(msg: Message, schema_name: str, file: str | None) -> None:
    schema = SCHEMA[schema_name]
    seen: dict[str, Field] = {}
    oneofs: dict[str, Field] = {}
    for f in msg.fields:
        spec = schema.get(f.name)
        if spec is None:
            hint = did_you_mean(f.name, schema)
            if f.name in ("cuda_compute_capability", "rocm_compute_capability") and not msg.name:
                hint = f"'{f.name}' belongs inside gpu_device_info {{ ... }}"
            raise SpecError(f"unknown field '{f.name}' in {_where(msg, schema_name)}",
                            file=file, line=f.line, col=f.col, hint=hint)
        if not spec.repeated and f.name in seen:
            first = seen[f.name]
            raise SpecError(f"field '{f.name}' is set more than once "
                            f"(first at line {first.line}, col {first.col})",
                            file=file, line=f.line, col=f.col)
        if spec.oneof is not None:
            other = oneofs.get(spec.oneof)
            if other is not None and other.name != f.name:
                raise SpecError(f"'{f.name}' and '{other.name}' (line {other.line}) are both set; "
                                f"they are alternatives (oneof {spec.oneof})",
                                file=file, line=f.line, col=f.col)
            oneofs[spec.oneof] = f
        seen[f.name] = f
        _check_value(f, spec, file)
        if spec.type == "message":
            assert isinstance(f.value, Message) and spec.target is not None
            _check_message(f.value, spec.target, file)
    for name in REQUIRED.get(schema_name, ()):
        if name not in seen:
            hint = None
            if name == "cuda_compute_capability" and "rocm_compute_capability" in seen:
                hint = "only CUDA targets are supported"
            raise SpecError(f"missing required field '{name}' in {_where(msg, schema_name)}",
                            file=file, line=msg.line, col=msg.col, hint=hint)


def _check_value(f: Field, spec: _F, file: str | None) -> None:
    def bad(expected: str, hint: str | None = None) -> SpecError:
        return SpecError(f"field '{f.name}' expects {expected}, got {f.describe_value()}",
                         file=file, line=f.value_line, col=f.value_col, hint=hint)

    if spec.type in ("message", "opaque"):
        if f.kind != "message":
            raise bad(f"a message: {f.name} {{ ... }}")
        return
    if f.kind == "message":
        raise SpecError(f"field '{f.name}' takes {_TYPE_WORDS.get(spec.type, 'a value')}, "
                        f"not a message", file=file, line=f.value_line, col=f.value_col)
    if spec.type in _INT_RANGE:
        if f.kind != "int":
            raise bad(_TYPE_WORDS[spec.type])
        lo, hi = _INT_RANGE[spec.type]
        if not lo <= f.value <= hi:  # type: ignore[operator]
            raise SpecError(f"field '{f.name}' value {f.value} is out of range for {spec.type}",
                            file=file, line=f.value_line, col=f.value_col)
    elif spec.type == "float":
        value = f.value
        if isinstance(value, (int, float)) and f.kind in ("int", "float"):
            f.kind, f.value = "float", float(value)
        elif isinstance(value, Ident) and value.name.lower() in ("inf", "infinity", "nan"):
            f.kind, f.value = "float", float(str(value))
        else:
            raise bad(_TYPE_WORDS["float"])
    elif spec.type == "string":
        if f.kind != "string":
            raise bad(_TYPE_WORDS["string"])
    elif spec.type == "bool":
        value = f.value
        if isinstance(value, Ident) and str(value) in ("true", "True", "t", "false", "False", "f"):
            f.kind, f.value = "bool", str(value) in ("true", "True", "t")
        elif f.kind == "int" and value in (0, 1):
            f.kind, f.value = "bool", bool(value)
        else:
            raise bad(_TYPE_WORDS["bool"])
    elif spec.type == "enum":
        assert spec.target is not None
        values = ENUMS[spec.target]
        if f.kind == "ident" and isinstance(f.value, Ident) and not f.value.negative \
                and f.value.name in values:
            return
        if f.kind == "int" and f.value in values.values():
            name = next(k for k, v in values.items() if v == f.value)
            f.kind, f.value = "ident", Ident(name)
            return
        word = str(f.value) if f.kind in ("ident", "int") else None
        hint = did_you_mean(word, values) if word else None
        raise bad(f"one of {', '.join(values)}", hint=hint)


def _check_semantics(root: Message, file: str | None) -> None:
    def fail(f: Field, message: str, hint: str | None = None) -> SpecError:
        return SpecError(message, file=file, line=f.value_line, col=f.value_col, hint=hint)

    platform = root.get("platform_name")
    assert platform is not None
    if platform.value != "CUDA":
        raise fail(platform, f"platform_name must be \"CUDA\", got {_quote(str(platform.value))}",
                   hint="device-less compiles are supported for CUDA only")
    info = root.value("gpu_device_info")
    cc = info.value("cuda_compute_capability")
    for msg, schema_name in ((info, "GpuDeviceInfoProto"), (cc, "CudaComputeCapabilityProto")):
        for f in msg.fields:
            if f.name in _POSITIVE[schema_name] and not f.value > 0:
                raise fail(f, f"field '{f.name}' must be positive, got {f.value}")
            if isinstance(f.value, float) and not math.isfinite(f.value):
                raise fail(f, f"field '{f.name}' must be finite, got {f.value}")
    major = cc.get("major")
    ext = cc.get("feature_extension")
    ext_name = ext.value.name if ext is not None else "UNSPECIFIED"
    if ext is not None and ext_name == "ACCELERATED_FEATURES" and major.value < 9:
        raise fail(ext, f"feature_extension ACCELERATED_FEATURES needs compute capability 9.0 "
                        f"or newer, got major {major.value}")
    if ext is not None and ext_name == "FAMILY_COMPATIBLE_FEATURES" and major.value < 10:
        raise fail(ext, f"feature_extension FAMILY_COMPATIBLE_FEATURES needs compute capability "
                        f"10.0 or newer, got major {major.value}")
    if major.value == 11:
        # Measured: jaxlib 0.10.2's LLVM emits PTX 8.8, which cannot target
        # sm_110; XLA then aborts the whole process instead of returning.
        raise fail(major, "compute capability 11.x is not supported by this jaxlib's XLA "
                          "(PTX 8.8 cannot target sm_110; XLA aborts)")


# ------------------------------------------------------------------- GpuSpec

_EXT_SUFFIX = {"ACCELERATED_FEATURES": "a", "FAMILY_COMPATIBLE_FEATURES": "f"}


@dataclass(frozen=True)
class GpuSpec:
    """One validated spec file."""

    name: str  # file stem, e.g. "h100_sxm"
    path: Path
    text: str  # the file text, passed to XLA unchanged
    gpu: str  # device_description_str
    compute_capability: str  # "9.0", or "9.0a" when feature_extension is set
    sm: str  # the PTX .target XLA emits, e.g. "sm_90a"
    sm_count: int
    memory_bytes: int
    memory_bandwidth: int  # bytes/s
    clock_ghz: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (everything but the text)."""
        return {
            "name": self.name,
            "path": str(self.path),
            "gpu": self.gpu,
            "compute_capability": self.compute_capability,
            "sm": self.sm,
            "sm_count": self.sm_count,
            "memory_bytes": self.memory_bytes,
            "memory_bandwidth": self.memory_bandwidth,
            "clock_ghz": self.clock_ghz,
        }


def _ptx_suffix(major: int, ext: str) -> str:
    """The suffix of the PTX target XLA picks (measured with jaxlib 0.10.2):
    an explicit feature_extension is honoured; left unspecified, XLA picks the
    accelerated ("a") target for 9.x and 10.x and the plain one otherwise."""
    if ext == "UNSPECIFIED":
        return "a" if major in (9, 10) else ""
    return _EXT_SUFFIX.get(ext, "")


def parse_spec(text: str, path: str | os.PathLike[str], name: str | None = None) -> GpuSpec:
    """Validate spec text (read from ``path``) and summarise it."""
    file = str(path)
    root = parse_textproto(text, file)
    validate(root, file)
    info = root.value("gpu_device_info")
    cc = info.value("cuda_compute_capability")
    major, minor = cc.value("major"), cc.value("minor", 0)
    ext_val = cc.value("feature_extension")
    ext = ext_val.name if ext_val is not None else "UNSPECIFIED"
    return GpuSpec(
        name=name if name is not None else Path(path).stem,
        path=Path(path),
        text=text,
        gpu=root.value("device_description_str"),
        compute_capability=f"{major}.{minor}{_EXT_SUFFIX.get(ext, '')}",
        sm=f"sm_{major}{minor}{_ptx_suffix(major, ext)}",
        sm_count=info.value("core_count"),
        memory_bytes=info.value("device_memory_size"),
        memory_bandwidth=info.value("memory_bandwidth"),
        clock_ghz=info.value("clock_rate_ghz"),
    )


def load_spec(path: str | os.PathLike[str]) -> GpuSpec:
    """Read, parse and validate one spec file."""
    file = str(path)
    p = Path(path)
    try:
        data = p.read_bytes() if file != "-" else sys.stdin.buffer.read()  # "-": stdin
    except FileNotFoundError:
        raise SpecError("no such file", file=file) from None
    except IsADirectoryError:
        raise SpecError("is a directory", file=file, hint="expected a .txtpb spec file") from None
    except OSError as e:
        raise SpecError(f"cannot read: {e.strerror or e}", file=file) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise SpecError("spec is not UTF-8 text", file=file, line=line, col=col) from None
    return parse_spec(text, p)


def check_spec(path: str | os.PathLike[str]) -> GpuSpec:
    """Validate a spec file, and that some ptxas here can assemble for its sm
    (XLA runs ptxas even device-less); returns its summary or raises SpecError."""
    spec = load_spec(path)
    _check_ptxas_target(spec)
    return spec


def _check_ptxas_target(spec: GpuSpec) -> None:
    from . import cuda_tools

    found = cuda_tools.all_ptxas()
    if any(p.can_target(spec.sm) for p in found):
        return
    cc = parse_textproto(spec.text, str(spec.path)).value("gpu_device_info") \
        .get("cuda_compute_capability")
    if found:
        have = "; ".join(f"ptxas {p.version_str} targets {p.arch_range()}" for p in found)
        message = f"no ptxas here can target {spec.sm} (compute capability {spec.compute_capability}): {have}"
        hint = f"pass --{cuda_tools.DATA_DIR_FLAG}=DIR for a CUDA toolkit whose ptxas targets {spec.sm}"
    else:
        message = f"no ptxas here to assemble {spec.sm} (XLA runs ptxas even device-less)"
        hint = cuda_tools.FIX_HINT
    raise SpecError(message, file=str(spec.path), line=cc.line, col=cc.col, hint=hint)


def shipped_names() -> list[str]:
    """Names (file stems) of the specs in SPEC_DIR, sorted."""
    if not SPEC_DIR.is_dir():
        return []
    return sorted(p.stem for p in SPEC_DIR.glob("*" + SPEC_SUFFIX) if p.is_file())


def list_specs() -> list[GpuSpec]:
    """Every shipped spec, validated, sorted by name."""
    return [load_spec(SPEC_DIR / (name + SPEC_SUFFIX)) for name in shipped_names()]


def _looks_like_path(arg: str) -> bool:
    return "/" in arg or os.sep in arg or (os.altsep is not None and os.altsep in arg) \
        or arg.endswith(SPEC_SUFFIX) or arg.startswith(".") or arg.startswith("~")


def resolve_spec(name_or_path: str | os.PathLike[str]) -> GpuSpec:
    """A shipped spec by name (``h100_sxm``) or a spec file by path."""
    if isinstance(name_or_path, os.PathLike):
        return load_spec(name_or_path)
    arg = str(name_or_path)
    names = shipped_names()
    if not _looks_like_path(arg):
        if arg in names:
            return load_spec(SPEC_DIR / (arg + SPEC_SUFFIX))
        if Path(arg).is_file():
            return load_spec(arg)
        raise SpecError(f"unknown GPU spec '{arg}'", hint=_name_hint(arg, names))
    return load_spec(os.path.expanduser(arg))


def _name_hint(arg: str, names: list[str]) -> str | None:
    """Names that extend ``arg`` (h100 -> h100_pcie, h100_sxm), else close matches."""
    prefixed = [n for n in names if n.startswith(arg.lower())] if arg else []
    if 0 < len(prefixed) <= 3:
        return "did you mean " + ", ".join(f"'{n}'" for n in prefixed) + "?"
    hint = did_you_mean(arg, names)
    if hint is None and names:
        hint = "known specs: " + ", ".join(names)
    return hint
