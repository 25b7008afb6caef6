"""GPU target specs: ``GpuTargetConfigProto`` text files for device-less CUDA compiles.

XLA compiles for CUDA without a GPU when it is handed a
``stream_executor.GpuTargetConfigProto`` in protobuf text format. The package
ships one such file per common GPU in ``mlirhlo_driver/gpu_specs/``; users may
pass their own, XLA's own (``xla/backends/gpu/target_config/specs/*.txtpb``) included.

The schema is the installed jaxlib's own: the message class comes from the
descriptors compiled into it (:mod:`protos`), and protobuf's ``text_format``
parses the file. On top of that this module

* records where each field is written (protobuf's Python parser records no
  positions), so that every error names the field's line and column;
* rejects what XLA's C++ parser rejects but Python's accepts (invalid string
  escapes such as ``\\q``);
* checks the fields XLA needs to compile (:data:`REQUIRED`). Those that every
  GPU of a compute capability reports alike (warp size, register and shared
  memory limits, FP32 units per SM) are filled in when a spec lacks them, as
  XLA reads them from the GPU (XLA's older spec files lack some), and say so in
  :attr:`GpuSpec.notes`, for the caller to print;
* summarises the file as a :class:`GpuSpec`, and lists, loads and resolves specs.

Importing it imports neither jax nor jaxlib; protobuf is imported on the first parse.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SpecError, did_you_mean
from ..resources import data_dir

SPEC_DIR = data_dir("gpu_specs")
SPEC_SUFFIX = ".txtpb"
DEFAULT_SPEC = "h100_sxm"
MESSAGE = "stream_executor.GpuTargetConfigProto"

__all__ = [
    "DEFAULT_SPEC", "MESSAGE", "SPEC_DIR", "SPEC_SUFFIX", "GpuSpec", "ParsedSpec", "Pos",
    "REQUIRED", "parse_textproto", "validate", "fill_values", "list_specs", "load_spec",
    "parse_spec", "resolve_spec", "check_spec", "shipped_names",
]


# ---------------------------------------------------------------------- parsing

@dataclass(frozen=True)
class Pos:
    """Where a field is written: its name, and its value (for a message: the brace)."""

    line: int
    col: int
    value_line: int
    value_col: int


@dataclass
class ParsedSpec:
    """A parsed spec file: the protobuf message and where its fields are written.

    ``positions`` maps a field path (``("gpu_device_info", "core_count")``) to
    its first occurrence; ``unknown`` lists fields the installed schema lacks,
    as (path of the enclosing message, name, position, message type name).
    Proto3 scalars have no presence, so ``positions`` also tells what is set.
    """

    message: Any
    positions: dict[tuple[str, ...], Pos]
    unknown: list[tuple[tuple[str, ...], str, Pos, str]]

    def at(self, *path: str) -> Pos | None:
        return self.positions.get(path)


def _message_class() -> Any:
    from ..ir import protos

    return protos.message_class(MESSAGE)


# XLA's C++ TextFormat accepts only these escapes (CUnescape); Python's text_format
# also accepts others (``\q`` as "q"), which XLA would then refuse.
_ESCAPE = re.compile(r"""\\(?:([abfnrtv\\?'"]|[0-7]{1,3}|[xX][0-9a-fA-F]{1,2}|u[0-9a-fA-F]{4}"""
                     r"""|U[0-9a-fA-F]{8})|(.?))""", re.S)


class _Walker:
    """Records field positions in text that protobuf has parsed already, with
    protobuf's own Tokenizer: a walk over names, ':' and braces, not a parser."""

    def __init__(self, text: str, file: str | None) -> None:
        from google.protobuf import text_format

        self.tok = text_format.Tokenizer(text.split("\n"))
        self.file = file
        self.positions: dict[tuple[str, ...], Pos] = {}
        self.unknown: list[tuple[tuple[str, ...], str, Pos, str]] = []

    def here(self) -> tuple[int, int]:
        e = self.tok.ParseError("")
        return e.GetLine(), e.GetColumn()

    def error(self, message: str, line: int, col: int, hint: str | None = None) -> SpecError:
        return SpecError(message, file=self.file, line=line, col=col, hint=hint)

    def body(self, desc: Any, path: tuple[str, ...], close: str | None) -> None:
        tok = self.tok
        seen: dict[str, Pos] = {}
        oneofs: dict[str, str] = {}
        while True:
            if close is None and tok.AtEnd():
                return
            if close is not None and tok.TryConsume(close):
                return
            line, col = self.here()
            name = None
            if tok.TryConsume("["):  # an extension or Any type URL: nothing of XLA's
                while not tok.TryConsume("]"):
                    tok.NextToken()
            else:
                name = tok.token
                tok.NextToken()
            fd = desc.fields_by_name.get(name) if desc is not None and name else None
            tok.TryConsume(":")
            vline, vcol = self.here()
            pos = Pos(line, col, vline, vcol)
            if name is not None:
                if desc is not None and fd is None:
                    self.unknown.append((path, name, pos, desc.full_name))
                self.positions.setdefault(path + (name,), pos)
            if fd is not None:
                self.check_once(fd, pos, seen, oneofs)
            if tok.token in ("{", "<"):
                self.value(fd, path + (name or "?",))
            elif tok.TryConsume("["):
                if not tok.TryConsume("]"):
                    while True:
                        self.value(fd, path + (name or "?",))
                        if tok.TryConsume("]"):
                            break
                        tok.Consume(",")
            else:
                self.value(fd, path)
            if not tok.TryConsume(","):
                tok.TryConsume(";")

    def value(self, fd: Any, path: tuple[str, ...]) -> None:
        tok = self.tok
        if tok.token in ("{", "<"):
            close = "}" if tok.token == "{" else ">"
            tok.NextToken()
            self.body(fd.message_type if fd is not None else None, path, close)
            return
        if tok.token[:1] in ("'", '"'):
            while tok.token[:1] in ("'", '"'):  # adjacent literals concatenate
                tok.NextToken()
            return
        if tok.token == "-":
            tok.NextToken()
        tok.NextToken()

    def check_once(self, fd: Any, pos: Pos, seen: dict[str, Pos], oneofs: dict[str, str]) -> None:
        """What protobuf's Merge lets pass and XLA's parser refuses: a singular
        field set twice, two members of one oneof."""
        from ..ir import protos

        repeated = protos.is_repeated(fd)
        first = seen.get(fd.name)
        if first is not None and not repeated:
            raise self.error(f"field '{fd.name}' is set more than once (first at line "
                             f"{first.line}, col {first.col})", pos.line, pos.col)
        seen.setdefault(fd.name, pos)
        group = fd.containing_oneof
        if group is not None:
            other = oneofs.setdefault(group.name, fd.name)
            if other != fd.name:
                raise self.error(f"'{fd.name}' and '{other}' (line {seen[other].line}) are both set; "
                                 f"they are alternatives (oneof {group.name})", pos.line, pos.col)


def _check_escapes(text: str, file: str | None) -> None:
    """SpecError at the first string escape XLA's parser rejects (before protobuf,
    which would take it, with a warning)."""
    from google.protobuf import text_format

    tok = text_format.Tokenizer(text.split("\n"))
    try:
        while not tok.AtEnd():
            if tok.token[:1] in ("'", '"'):
                for m in _ESCAPE.finditer(tok.token, 1, len(tok.token) - 1):
                    if m.group(1) is None:
                        e = tok.ParseError("")
                        raise SpecError(f"invalid escape '{m.group()}' in string (XLA's parser "
                                        "rejects it)", file=file, line=e.GetLine(),
                                        col=e.GetColumn() + m.start())
            tok.NextToken()
    except text_format.ParseError:
        return  # protobuf's parse reports it


def _unclosed_brace(text: str) -> tuple[str, str, int, int] | None:
    """The innermost '{' or '<' the text never closes, as (brace, field name, line, col)."""
    from google.protobuf import text_format

    tok = text_format.Tokenizer(text.split("\n"))
    stack: list[tuple[str, str, int, int]] = []
    prev = ""
    try:
        while not tok.AtEnd():
            t = tok.token
            if t in ("{", "<"):
                e = tok.ParseError("")
                stack.append((t, prev, e.GetLine(), e.GetColumn()))
            elif t in ("}", ">") and stack:
                stack.pop()
            prev = t if t != ":" else prev
            tok.NextToken()
    except text_format.ParseError:
        return None
    return stack[-1] if stack else None


# protobuf's wording -> the driver's, for the common type errors (others pass as they are).
_PROTOBUF_WORDS = (
    (re.compile(r"^couldn't parse integer: (.*)$", re.S), "expects an integer, got {0}"),
    (re.compile(r"^couldn't parse float: (.*)$", re.S), "expects a number, got {0}"),
    (re.compile(r"^expected string but found: '(.*)'$", re.S), "expects a quoted string, got {0}"),
    (re.compile(r"^value out of range: (.*)$", re.S), "value {0} is out of range"),
    (re.compile(r'^expected "\{"$'), "expects a message: {name} {{ ... }}"),
)


def _unclosed_error(brace: tuple[str, str, int, int], file: str | None) -> SpecError:
    b, name, line, col = brace
    close = "}" if b == "{" else ">"
    return SpecError(f"'{b}' of '{name}' is never closed (expected '{close}' before end of file)",
                     file=file, line=line, col=col)


def _syntax_error(e: Any, text: str, file: str | None) -> SpecError:
    """A SpecError for protobuf's ParseError: its line and column, its message
    without the source line it quotes, named after the field where that is clear."""
    from ..ir import protos

    line, col = e.GetLine(), e.GetColumn()
    message = protos._error_text(str(e), text, line)
    hint = protos._hint(protos._error_text(str(e), text, line, lower=False))
    if line is not None and col is not None:
        brace = _unclosed_brace(text)
        if brace is not None and (brace[2], brace[3]) < (line, col):
            return _unclosed_error(brace, file)
        lines = text.split("\n")
        before = lines[line - 1][:col - 1] if 0 < line <= len(lines) else ""
        m = re.search(r"([A-Za-z_]\w*)\s*:?\s*$", before)
        if m:
            name = m.group(1)
            for pattern, words in _PROTOBUF_WORDS:
                w = pattern.match(message)
                if w:
                    message = f"field '{name}' " + words.format(*w.groups(), name=name)
                    break
            else:
                if message == 'expected ":"':
                    rest = lines[line - 1][col - 1:col]
                    message = (f"field '{name}' takes a value ({name}: ...), not a message"
                               if rest in ("{", "<") else f"expected ':' after field name '{name}'")
    return SpecError(message, file=file, line=line, col=col, hint=hint)


def parse_textproto(text: str, file: str | None = None) -> ParsedSpec:
    """Parse a spec's text into a GpuTargetConfigProto with field positions.

    Syntax and type errors, invalid escapes, fields set twice and clashing
    oneof members raise SpecError at their line:col. Fields the installed
    schema lacks are skipped and listed in ``unknown`` (:func:`validate` decides).
    """
    from google.protobuf import text_format

    from ..ir import protos

    if "\\" in text:
        _check_escapes(text, file)
    msg = _message_class()()
    try:
        # Merge: duplicates are reported by the walk, at the field's name.
        text_format.Merge(text, msg, allow_unknown_field=True, descriptor_pool=protos.pool())
        walker = _Walker(text, file)
        walker.body(msg.DESCRIPTOR, (), None)
    except text_format.ParseError as e:
        if e.GetLine() is None:
            # Skipping an unknown field's bad value, protobuf says where not: the
            # strict parse stops at that field's name instead, unless that value is
            # cut off (a field the installed schema lacks, e.g. dnn_version_info in
            # jaxlib 0.12's, in a truncated spec): its '{' is the error.
            brace = _unclosed_brace(text)
            if brace is not None:
                raise _unclosed_error(brace, file) from None
            try:
                text_format.Merge(text, _message_class()(), descriptor_pool=protos.pool())
            except text_format.ParseError as strict:
                e = strict
        raise _syntax_error(e, text, file) from None
    except RecursionError:
        raise SpecError("spec nested too deeply", file=file) from None
    return ParsedSpec(msg, walker.positions, walker.unknown)


# ------------------------------------------------------------------ validation

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
_PATHS = {"GpuTargetConfigProto": (), "GpuDeviceInfoProto": ("gpu_device_info",),
          "CudaComputeCapabilityProto": ("gpu_device_info", "cuda_compute_capability")}

# Required fields that every GPU of a compute capability reports alike: on a GPU
# XLA reads them from the driver (CudaExecutor::CreateDeviceDescription:
# cuDeviceGetAttribute, and GetFpusPerCore for fpus_per_core), so a spec that
# lacks one gets that value. The others (SM count, clock, memory size and
# bandwidth) differ between models of one compute capability: they cannot be filled.
# Values: the CUDA C++ Programming Guide's "Technical Specifications per Compute
# Capability" (the shipped specs agree: tests/cuda/test_specs.py checks).
_SAME_ON_EVERY_GPU = {
    "threads_per_warp": 32,
    "threads_per_block_limit": 1024,
    "block_dim_limit_x": 2**31 - 1,
    "shared_memory_per_block": 48 << 10,
    "registers_per_block_limit": 64 << 10,
}
# Maximum shared memory per block (opt-in), KiB, by compute capability.
_OPTIN_KIB = {
    (6, 0): 48, (6, 1): 48, (7, 0): 96, (7, 5): 64, (8, 0): 163, (8, 6): 99, (8, 7): 163,
    (8, 9): 99, (9, 0): 227, (10, 0): 227, (10, 3): 227, (12, 0): 99,
}


def _fpus_per_core(major: int, minor: int) -> int:
    """FP32 units per SM as XLA's GetFpusPerCore gives them (cuda_core_info_table.cc):
    64 on 6.0, 7.x and 8.0, 128 on every other CC XLA targets."""
    return 64 if (major, minor) == (6, 0) or major == 7 or (major, minor) == (8, 0) else 128


def fill_values(major: int, minor: int) -> dict[str, int]:
    """The required GpuDeviceInfoProto fields a spec of compute capability
    ``major.minor`` may leave out, with the values filled in; {} for a compute
    capability with no known values."""
    if (major, minor) not in _OPTIN_KIB:
        return {}
    return {**_SAME_ON_EVERY_GPU, "shared_memory_per_block_optin": _OPTIN_KIB[major, minor] << 10,
            "fpus_per_core": _fpus_per_core(major, minor)}


# Fields of GpuDeviceInfoProto that XLA added after jaxlib 0.9.0, the oldest
# supported: a spec for a newer XLA may set them. An XLA without a field cannot
# read it, so it is left out of what XLA receives
# (target_config_for_installed_xla): the compile is the one that XLA
# does anyway. Any other field the schema lacks is an error.
# In jaxlib 0.10.0-0.10.2, not 0.9.x (their descriptors compared):
_SINCE_0_10 = frozenset({
    "device_vendor", "platform_version", "pci_bus_id", "name", "model_str", "driver_version",
    "kernel_mode_driver_version", "runtime_version", "compile_time_toolkit_version",
    "dnn_version", "cub_version", "device_interconnect_info", "numa_node", "thread_dim_limit_x",
    "thread_dim_limit_y", "thread_dim_limit_z", "device_address_bits", "pcie_bandwidth",
    "ecc_enabled",
})
# Top-level fields newer jaxlibs moved: 0.12 reads cuDNN's version from
# gpu_device_info.dnn_version only (target_config_for_installed_xla moves it).
_MOVED_AFTER_0_10_2 = frozenset({"dnn_version_info"})
# In jaxlib 0.12 (0.12.0.1's descriptors compared with 0.10.2's); also set in XLA's own
# specs (openxla/xla xla/backends/gpu/target_config/specs/*.txtpb, 2026).
_SINCE_0_12 = frozenset({
    "mem_clock_ghz", "reserved_shared_memory_per_block", "max_blocks_per_multiprocessor",
    "collective_memory_granularity", "oversized_shared_memory_per_block",
    "confidential_computing_enabled",
})
# Newer than jaxlib 0.12.0.1, the newest supported: set in XLA's own specs.
_AFTER_NEWEST = frozenset({"data_caches"})
# From an XLA newer than 0.10.2: where the installed schema lacks one, a note says so.
_AFTER_0_10_2 = _SINCE_0_12 | _AFTER_NEWEST

def _where(path: tuple[str, ...], type_name: str) -> str:
    short = type_name.rsplit(".", 1)[-1]
    return short if not path else f"'{path[-1]}' ({short})"


def validate(parsed: ParsedSpec, file: str | None = None) -> dict[str, int]:
    """Check a parsed spec against what XLA needs; raise SpecError at the field.

    Returns the required fields the spec lacks that are filled in from its
    compute capability (:func:`fill_values`), name -> value, having set them
    on ``parsed.message``.
    """
    msg = parsed.message
    if not parsed.positions:
        raise SpecError("spec is empty (expected a GpuTargetConfigProto in text format)",
                        file=file, line=1, col=1, hint=f"see the shipped specs in {SPEC_DIR}")
    _check_unknown(parsed, file)
    info_fields = REQUIRED["GpuDeviceInfoProto"]
    # The compute capability first: the values filled in depend on it.
    _require(parsed, (), msg.DESCRIPTOR, REQUIRED["GpuTargetConfigProto"], file)
    _require(parsed, ("gpu_device_info",), msg.gpu_device_info.DESCRIPTOR, info_fields[:1], file)
    cc = msg.gpu_device_info.cuda_compute_capability
    _require(parsed, _PATHS["CudaComputeCapabilityProto"], cc.DESCRIPTOR,
             REQUIRED["CudaComputeCapabilityProto"], file)
    fill = fill_values(cc.major, cc.minor)
    filled = {name: fill[name] for name in info_fields
              if parsed.at("gpu_device_info", name) is None and name in fill}
    _require(parsed, ("gpu_device_info",), msg.gpu_device_info.DESCRIPTOR,
             [n for n in info_fields if n not in filled], file,
             hint=f"mlirhlo fills it in for the compute capabilities it knows, not {cc.major}.{cc.minor}")
    for name, value in filled.items():
        setattr(msg.gpu_device_info, name, value)
    _check_semantics(parsed, file)
    return filled


def _require(parsed: ParsedSpec, path: tuple[str, ...], desc: Any, names: Any,
             file: str | None, hint: str | None = None) -> None:
    """SpecError for the first of ``names`` the message at ``path`` does not set,
    at the name of that message (the root: 1:1)."""
    for name in names:
        if parsed.at(*path, name) is not None:
            continue
        why = None
        if name == "cuda_compute_capability" and parsed.at(*path, "rocm_compute_capability"):
            why = "only CUDA targets are supported"
        elif hint is not None and (name in _SAME_ON_EVERY_GPU
                                   or name in ("shared_memory_per_block_optin", "fpus_per_core")):
            why = hint
        at = parsed.at(*path) if path else None
        raise SpecError(f"missing required field '{name}' in {_where(path, desc.full_name)}",
                        file=file, line=at.line if at else 1, col=at.col if at else 1, hint=why)


def _check_unknown(parsed: ParsedSpec, file: str | None) -> None:
    from ..ir import protos

    later = _SINCE_0_10 | _AFTER_0_10_2
    for path, name, pos, type_name in parsed.unknown:
        if path == ("gpu_device_info",) and name in later:
            continue
        if not path and name in _MOVED_AFTER_0_10_2:
            continue
        desc = protos.pool().FindMessageTypeByName(type_name)
        known = [*desc.fields_by_name, *(later if path == ("gpu_device_info",) else ())]
        hint = did_you_mean(name, known)
        if name in ("cuda_compute_capability", "rocm_compute_capability") and not path:
            hint = f"'{name}' belongs inside gpu_device_info {{ ... }}"
        raise SpecError(f"unknown field '{name}' in {_where(path, type_name)}",
                        file=file, line=pos.line, col=pos.col, hint=hint)


def _newer_fields(parsed: ParsedSpec) -> list[str]:
    """Fields from an XLA newer than any this driver supports (left out for XLA)."""
    return [name for path, name, _, _ in parsed.unknown
            if path == ("gpu_device_info",) and name in _AFTER_0_10_2]


def _check_semantics(parsed: ParsedSpec, file: str | None) -> None:
    problem = _problem(parsed.message)
    if problem is not None:
        path, message, hint = problem
        at = parsed.at(*path)
        assert at is not None  # required fields are present, filled ones pass
        raise SpecError(message, file=file, line=at.value_line, col=at.value_col, hint=hint)


def _feature_extension(cc: Any) -> str:
    return cc.DESCRIPTOR.fields_by_name["feature_extension"].enum_type.values_by_number[
        cc.feature_extension].name


def _problem(msg: Any) -> tuple[tuple[str, ...], str, str | None] | None:
    """The first value XLA cannot compile with, as (field path, message, hint); None if none.
    The required fields are set (or filled in) already."""
    if msg.platform_name != "CUDA":
        return (("platform_name",), f"platform_name must be \"CUDA\", got {_quote(msg.platform_name)}",
                "device-less compiles are supported for CUDA only")
    info, cc = msg.gpu_device_info, msg.gpu_device_info.cuda_compute_capability
    cc_path = _PATHS["CudaComputeCapabilityProto"]
    for path, m, names in ((("gpu_device_info",), info, REQUIRED["GpuDeviceInfoProto"][1:]),
                           (cc_path, cc, REQUIRED["CudaComputeCapabilityProto"])):
        for name in names:
            value = getattr(m, name)
            if not value > 0:
                return path + (name,), f"field '{name}' must be positive, got {value}", None
            if isinstance(value, float) and not math.isfinite(value):
                return path + (name,), f"field '{name}' must be finite, got {value}", None
    ext = _feature_extension(cc)
    if ext == "ACCELERATED_FEATURES" and cc.major < 9:
        return (cc_path + ("feature_extension",), "feature_extension ACCELERATED_FEATURES needs "
                f"compute capability 9.0 or newer, got major {cc.major}", None)
    if ext == "FAMILY_COMPATIBLE_FEATURES" and cc.major < 10:
        return (cc_path + ("feature_extension",), "feature_extension FAMILY_COMPATIBLE_FEATURES "
                f"needs compute capability 10.0 or newer, got major {cc.major}", None)
    if cc.major == 11:
        # Measured: jaxlib 0.10.2's LLVM emits PTX 8.8, which cannot target
        # sm_110; XLA then aborts the whole process instead of returning.
        return (cc_path + ("major",), "compute capability 11.x is not supported by this jaxlib's "
                "XLA (PTX 8.8 cannot target sm_110; XLA aborts)", None)
    return None


def _parse_complete(text: str) -> Any:
    """The message of a spec that needs nothing from the slow path, else None.

    Most specs (all shipped ones) are complete and valid: protobuf's strict
    parse (duplicates, oneofs and unknown fields are errors there) and value
    checks settle them without recording positions. Anything else (an error to
    locate, a field to fill in or to leave out, an escape to check) takes the
    walk in :func:`parse_textproto`, which reaches the same verdict.
    """
    from google.protobuf import text_format

    from ..ir import protos

    if "\\" in text:
        return None
    msg = _message_class()()
    try:
        text_format.Parse(text, msg, descriptor_pool=protos.pool())
    except (text_format.ParseError, RecursionError):
        return None
    info = msg.gpu_device_info
    if not (msg.HasField("gpu_device_info") and msg.device_description_str
            and info.WhichOneof("compute_capability") == "cuda_compute_capability"
            and _problem(msg) is None):
        return None
    return msg


def _quote(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


def _float32(value: float) -> float:
    """The shortest decimal that is the same float32 (1.41, not 1.409999966621399)."""
    for digits in range(1, 10):
        short = float(f"{value:.{digits}g}")
        if struct.unpack("<f", struct.pack("<f", short))[0] == value:
            return short
    return value


# ------------------------------------------------------------------- GpuSpec

_EXT_SUFFIX = {"ACCELERATED_FEATURES": "a", "FAMILY_COMPATIBLE_FEATURES": "f"}


@dataclass(frozen=True)
class GpuSpec:
    """One validated spec file."""

    name: str  # file stem, e.g. "h100_sxm"
    path: Path
    text: str  # what XLA receives: the file text, with any filled-in fields added
    gpu: str  # device_description_str
    compute_capability: str  # "9.0", or "9.0a" when feature_extension is set
    sm: str  # the PTX .target XLA emits, e.g. "sm_90a"
    sm_count: int
    memory_bytes: int
    memory_bandwidth: int  # bytes/s
    clock_ghz: float
    filled: tuple[tuple[str, int], ...] = ()  # required fields the file lacks, filled in
    # One-line notes for the user (fields filled in or left out, a shipped spec used
    # for a missing path); the caller prints them once its usage checks have passed.
    notes: tuple[str, ...] = ()
    # The GpuTargetConfigProto, when parsed in this process (:attr:`proto` parses it on
    # first use for a spec from the summary memo or a pickle).
    message: Any = field(default=None, compare=False, repr=False)
    cc_at: Pos | None = field(default=None, compare=False, repr=False)  # in the file

    def __getstate__(self) -> dict[str, Any]:
        # Batch workers receive specs pickled; the message's class lives in a private
        # descriptor pool that pickle cannot name, and the worker reads only the text.
        return {**self.__dict__, "message": None}

    @property
    def proto(self) -> Any:
        """The ``GpuTargetConfigProto`` of :attr:`text`."""
        if self.message is None:
            object.__setattr__(self, "message", _parse_spec(self.text, self.path, self.name).message)
        return self.message

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


def _with_fields(text: str, brace: Pos, fields: dict[str, int], cc: str) -> str:
    """``text`` with ``fields`` written right after the brace that opens gpu_device_info."""
    lines = text.split("\n")
    i, col = brace.value_line - 1, brace.value_col
    head, rest = lines[i][:col], lines[i][col:]
    added = [f"  {k}: {v}  # filled in by mlirhlo: what every CC {cc} GPU reports"
             for k, v in fields.items()]
    lines[i:i + 1] = [head, *added] + ([rest] if rest.strip() else [])
    return "\n".join(lines)


def parse_spec(text: str, path: str | os.PathLike[str], name: str | None = None) -> GpuSpec:
    """Validate spec text (read from ``path``) and summarise it.

    Required fields the text lacks but its compute capability determines are
    filled in (GpuSpec.text holds them, GpuSpec.filled names them) and a note in
    GpuSpec.notes says so; so does one about fields from an XLA newer than this one.

    A valid spec's summary is kept on disk (:func:`_memo_key`: the text, the path, the
    name, jaxlib's version and this module's file), so a command that reads the same
    spec again (a cached stage) imports no protobuf: such a GpuSpec has no parsed message
    until :attr:`GpuSpec.proto` is asked for.
    """
    key = _memo_key(text, str(path), name)
    found = _memo_read(key, path) if key is not None else None
    if found is not None:
        return found
    spec = _parse_spec(text, path, name)
    if key is not None:
        _memo_write(key, spec)
    return spec


_MEMO_FIELDS = ("name", "text", "gpu", "compute_capability", "sm", "sm_count", "memory_bytes", "memory_bandwidth",
                "clock_ghz", "filled", "notes")


def _memo_key(text: str, path: str, name: str | None) -> str | None:
    import hashlib

    from .. import installed

    try:
        me = os.stat(__file__)
    except OSError:
        return None
    jaxlib = installed.versions(("jaxlib",)).get("jaxlib")
    h = hashlib.sha256(repr((text, path, name, jaxlib, me.st_size, me.st_mtime_ns)).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _memo_path(key: str) -> Path:
    from ..resources import cache_dir

    return cache_dir("specs") / f"{key}.json"


def _memo_read(key: str, path: str | os.PathLike[str]) -> GpuSpec | None:
    import json

    try:
        d = json.loads(_memo_path(key).read_text())
        at = d.pop("cc_at")
        spec = GpuSpec(path=Path(path), **{k: d[k] for k in _MEMO_FIELDS if k not in ("filled", "notes")},
                       filled=tuple(tuple(f) for f in d["filled"]), notes=tuple(d["notes"]),
                       cc_at=Pos(*at) if at else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return spec


def _memo_write(key: str, spec: GpuSpec) -> None:
    import json

    from ..outputs import write_atomic

    d = {k: getattr(spec, k) for k in _MEMO_FIELDS}
    d["cc_at"] = dataclasses.astuple(spec.cc_at) if spec.cc_at is not None else None
    try:
        write_atomic(_memo_path(key), json.dumps(d))
    except OSError:
        pass  # a cache that cannot be written is skipped


def _parse_spec(text: str, path: str | os.PathLike[str], name: str | None = None) -> GpuSpec:
    file = str(path)
    msg = _parse_complete(text)
    filled: dict[str, int] = {}
    cc_at = None
    notes = []
    if msg is None:
        parsed = parse_textproto(text, file)
        filled = validate(parsed, file)
        msg, cc_at = parsed.message, parsed.at("gpu_device_info", "cuda_compute_capability")
        cc = msg.gpu_device_info.cuda_compute_capability
        if filled:
            where = f"{cc.major}.{cc.minor}"
            text = _with_fields(text, parsed.at("gpu_device_info"), filled, where)  # type: ignore[arg-type]
            notes.append(f"note: {file} lacks {', '.join(filled)}; filled in as every compute "
                         f"capability {where} GPU reports: "
                         f"{', '.join(f'{k}: {v}' for k, v in filled.items())}")
        newer = _newer_fields(parsed)
        if newer:
            notes.append(f"note: {file}: {', '.join(newer)} (from a newer XLA) left out: this "
                         f"jaxlib's XLA has no such fields")
    info = msg.gpu_device_info
    cc = info.cuda_compute_capability
    ext = _feature_extension(cc)
    return GpuSpec(
        name=name if name is not None else Path(path).stem,
        path=Path(path),
        text=text,
        gpu=msg.device_description_str,
        compute_capability=f"{cc.major}.{cc.minor}{_EXT_SUFFIX.get(ext, '')}",
        sm=f"sm_{cc.major}{cc.minor}{_ptx_suffix(cc.major, ext)}",
        sm_count=info.core_count,
        memory_bytes=info.device_memory_size,
        memory_bandwidth=info.memory_bandwidth,
        clock_ghz=_float32(info.clock_rate_ghz),
        filled=tuple(filled.items()),
        notes=tuple(notes),
        message=msg,
        cc_at=cc_at,
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
    except ValueError:  # a NUL in the path (from the Python API): no file has that name
        raise SpecError("no such file", file=file, hint="the path holds a NUL character") from None
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
    from . import tools as cuda_tools

    found = cuda_tools.all_ptxas()
    if any(p.can_target(spec.sm) for p in found):
        return
    if found:
        have = "; ".join(f"ptxas {p.version_str} targets {p.arch_range()}" for p in found)
        message = f"no ptxas here can target {spec.sm} (compute capability {spec.compute_capability}): {have}"
        hint = f"pass --{cuda_tools.DATA_DIR_FLAG}=DIR for a CUDA toolkit whose ptxas targets {spec.sm}"
    else:
        message = f"no ptxas here to assemble {spec.sm} (XLA runs ptxas even device-less)"
        hint = cuda_tools.fix_hint()
    at = spec.cc_at
    if at is None and not spec.filled:  # parsed without positions: the text is the file's
        at = parse_textproto(spec.text, str(spec.path)).at("gpu_device_info", "cuda_compute_capability")
    raise SpecError(message, file=str(spec.path), line=at.line if at else None,
                    col=at.col if at else None, hint=hint)


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
    """A shipped spec by name (``h100_sxm``) or a spec file by path.

    A path that does not exist but whose file name is a shipped spec's
    (``/xla/tools/hlo_opt/gpu_specs/a100_pcie_80.txtpb``, as XLA's documentation
    writes it) gives that shipped spec, with a note in GpuSpec.notes.
    """
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
    path = Path(os.path.expanduser(arg))
    if arg != "-" and path.suffix == SPEC_SUFFIX and path.stem in names and not path.exists():
        spec = load_spec(SPEC_DIR / path.name)
        note = f"note: {arg} does not exist: using the shipped spec '{path.stem}'"
        return dataclasses.replace(spec, notes=(note, *spec.notes))
    return load_spec(path)


def _name_hint(arg: str, names: list[str]) -> str | None:
    """Names that extend ``arg`` (h100 -> h100_pcie, h100_sxm), else close matches."""
    prefixed = [n for n in names if n.startswith(arg.lower())] if arg else []
    if 0 < len(prefixed) <= 3:
        return "did you mean " + ", ".join(f"'{n}'" for n in prefixed) + "?"
    hint = did_you_mean(arg, names)
    if hint is None and names:
        hint = "known specs: " + ", ".join(names)
    return hint


# ------------------------------------------------ the spec as the installed XLA reads it

def target_config_for_installed_xla(text: str) -> str:
    """A GpuTargetConfigProto textproto as the installed XLA reads it, for the plugin in use.

    The shipped specs are written for jaxlib 0.10.2. XLA's text parser rejects
    unknown fields, and each release's schema differs:

    * fields an older schema lacks (0.9.x: driver_version, runtime_version,
      thread_dim_limit_x, ...) are dropped: an XLA that lacks a field cannot read
      it, so the compile is the one that XLA would do anyway; 0.9 reads the
      runtime version from the top-level RuntimeVersionProto instead;
    * fields a newer schema moved are moved: 0.12 has no top-level
      ``dnn_version_info``, only ``gpu_device_info.dnn_version``;
    * fields a newer XLA reads from a real GPU (0.12: blocks per SM, shared memory
      reserved per block) are filled from the compute capability, as the GPU reports;
    * the CUDA and cuDNN version fields follow the plugin in use: they get the versions
      it was built with, what a GPU running it reports (a spec written for CUDA 12.9
      compiled by jax-cuda13-plugin gets 13.0).

    The schema is the installed jaxlib's own (ir/protos.py); the text was validated before.
    """
    from .._native import jaxlib as _jaxlib

    # Kept per plugin build: the plugin in use can change within a process (tests fake it).
    return _fitted_for_xla(text, tuple(sorted(_jaxlib.plugin_build_versions().items())))


@functools.lru_cache(maxsize=32)
def _fitted_for_xla(text: str, built: tuple[tuple[str, str], ...]) -> str:
    from google.protobuf import text_format

    from ..ir import protos

    cls = protos.message_class("stream_executor.GpuTargetConfigProto")
    msg = cls()
    try:
        text_format.Parse(text, msg, allow_unknown_field=True, descriptor_pool=protos.pool())
    except text_format.ParseError:
        return text  # not a schema difference: XLA reports it
    try:
        text_format.Parse(text, cls(), descriptor_pool=protos.pool())
        changed = False
    except text_format.ParseError:
        changed = True  # unknown fields: they are left out of what XLA reads
    info = msg.gpu_device_info
    info_fields = info.DESCRIPTOR.fields_by_name
    if "runtime_version" not in info_fields and not msg.HasField("runtime_version"):
        # Before 0.10.0 XLA reads the CUDA runtime version (FP8 conversions in hardware,
        # measured with 0.9.0) from the top-level RuntimeVersionProto instead.
        m = re.search(r'runtime_version:\s*"(\d+)\.(\d+)(?:\.(\d+))?"', text)
        if m:
            msg.runtime_version.major, msg.runtime_version.minor = int(m.group(1)), int(m.group(2))
            msg.runtime_version.patch = int(m.group(3) or 0)
            changed = True
    if "dnn_version_info" not in msg.DESCRIPTOR.fields_by_name and not info.dnn_version:
        m = re.search(r"dnn_version_info\s*\{([^}]*)\}", text)
        if m:
            parts = {k: int(v) for k, v in re.findall(r"(major|minor|patch):\s*(\d+)", m.group(1))}
            info.dnn_version = f"{parts.get('major', 0)}.{parts.get('minor', 0)}.{parts.get('patch', 0)}"
            changed = True
    cc = info.cuda_compute_capability.major if info.HasField("cuda_compute_capability") else 0
    minor = info.cuda_compute_capability.minor if cc else 0
    for name, value in _reported_since_0_12(cc, minor).items():
        if name in info_fields and not getattr(info, name) and not re.search(rf"\b{name}:", text):
            setattr(info, name, value)
            changed = True
    changed |= _follow_plugin_toolkit(msg, dict(built))
    return text_format.MessageToString(msg) if changed else text


def installed_xla_notes(text: str) -> list[str]:
    """What the user should know about compiling this spec with the installed XLA: a
    field it cannot read that changes the code it makes."""
    from .._native import jaxlib as _jaxlib
    from ..ir import protos

    info_fields = protos.message_class("stream_executor.GpuDeviceInfoProto").DESCRIPTOR.fields_by_name
    m = re.search(r"cuda_compute_capability\s*\{[^}]*major:\s*(\d+)", text)
    cc = int(m.group(1)) if m else 0
    if ("compile_time_toolkit_version" not in info_fields and cc >= 10
            and re.search(r"compile_time_toolkit_version:", text)):
        return [f"jaxlib {_jaxlib.jaxlib_version()}'s XLA has no compile_time_toolkit_version, so "
                f"CC {cc}.x kernels use 128-bit, not 256-bit, loads/stores (jaxlib 0.10.0+ has it)"]
    return []


# cudaDeviceProp's maxBlocksPerMultiProcessor per compute capability (CUDA C++ Programming
# Guide, "Technical Specifications per Compute Capability"); reservedSharedMemPerBlock is
# 1 KiB from 8.0 on, 0 before. jaxlib 0.12's XLA reads both from a real GPU.
_MAX_BLOCKS_PER_SM = {(6, 0): 32, (6, 1): 32, (7, 0): 32, (7, 2): 32, (7, 5): 16, (8, 0): 32,
                      (8, 6): 16, (8, 7): 16, (8, 9): 24, (9, 0): 32, (10, 0): 32, (10, 3): 32,
                      (12, 0): 32}


def _reported_since_0_12(major: int, minor: int) -> dict[str, int]:
    out = {"reserved_shared_memory_per_block": 1024} if major >= 8 else {}
    if (major, minor) in _MAX_BLOCKS_PER_SM:
        out["max_blocks_per_multiprocessor"] = _MAX_BLOCKS_PER_SM[major, minor]
    return out


_CUDA_VERSION_FIELDS = ("runtime_version", "compile_time_toolkit_version", "driver_version")


def _follow_plugin_toolkit(msg: Any, built: dict[str, str]) -> bool:
    """Set the spec's CUDA and cuDNN version fields to those the plugin in use was built
    with. They describe the compiler's toolchain, not the GPU: a GPU running this plugin
    reports them (a spec written for CUDA 12.9 under jax-cuda13-plugin gets 13.0). True if
    anything changed; fields the spec leaves unset stay unset."""
    info, changed = msg.gpu_device_info, False
    if built.get("cuda"):
        for f in _CUDA_VERSION_FIELDS:
            if f in info.DESCRIPTOR.fields_by_name and getattr(info, f) and getattr(info, f) != built["cuda"]:
                setattr(info, f, built["cuda"])
                changed = True
        if msg.HasField("runtime_version"):
            major, minor, _ = (int(x) for x in built["cuda"].split("."))
            if (msg.runtime_version.major, msg.runtime_version.minor) != (major, minor):
                msg.runtime_version.major, msg.runtime_version.minor, msg.runtime_version.patch = major, minor, 0
                changed = True
    if built.get("cudnn"):
        if "dnn_version" in info.DESCRIPTOR.fields_by_name and info.dnn_version not in ("", built["cudnn"]):
            info.dnn_version = built["cudnn"]
            changed = True
        if "dnn_version_info" in msg.DESCRIPTOR.fields_by_name and msg.HasField("dnn_version_info"):
            dnn, want = msg.dnn_version_info, tuple(int(x) for x in built["cudnn"].split("."))
            if (dnn.major, dnn.minor, dnn.patch) != want:
                dnn.major, dnn.minor, dnn.patch = want
                changed = True
    return changed
