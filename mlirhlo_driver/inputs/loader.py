"""One loader: every input becomes a StableHLO ``ir.Module`` in the driver's context.

Formats are detected by content (extensions only break ties), and can be
forced with ``input_format``:

==============  ==========================================================
``hlo``         HLO text (``HloModule ...``), e.g. XLA's ``*.before_optimizations.txt``
``hlo-proto``   binary ``HloModuleProto`` or ``HloProto`` (XLA's ``*.hlo.pb``)
``hlo-pbtxt``   ``HloModuleProto`` in protobuf text format
``mlir``        StableHLO / MHLO / CHLO MLIR text
``bytecode``    MLIR bytecode
``vhlo``        StableHLO portable artifact (``jax.export``, ``serialize_portable_artifact``)
``jax``         ``package.module:function`` lowered with jax for ``arg_specs``
==============  ==========================================================
"""

from __future__ import annotations

import glob
import importlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, did_you_mean, param

INPUT_FORMATS = ("hlo", "hlo-proto", "hlo-pbtxt", "mlir", "bytecode", "vhlo", "jax")

SPLIT_MARKER = re.compile(r"^// -----\s*$", re.MULTILINE)
_MLIR_BYTECODE_MAGIC = b"ML\xefR"
# How MLIR text starts (after comments and attribute aliases): a module, a function, an op
# in generic form, a type alias, a Shardy mesh.
_MLIR_HEAD = re.compile(r'^(module(\s+@|\s+attributes\b|\s*\{)|func\.func\s|"(builtin\.module|func\.func)"|'
                        r'![\w.]+\s*=|sdy\.mesh\s)')
# Where an MHLO op's name can stand in MLIR text: generic ("mhlo.add"(...)) or pretty
# (mhlo.add %a, ...), but not an attribute's key (mhlo.sharding = ..., {mhlo.flag}), an
# attribute or type of the dialect (#mhlo..., !mhlo...) or a symbol (@mhlo.topk). Each
# "mhlo." is found by plain search and judged where it stands (one regex over the whole
# text cost 240 ms on 5 MB). A match is only a candidate: the module's ops are then walked.
_MHLO_GENERIC = re.compile(r'mhlo\.[\w.$]+"\s*\(')
_MHLO_PRETTY = re.compile(r"mhlo\.[A-Za-z_][\w.$]*(?![\w.$])(?!\s*[=,}\]])")


def names_mhlo_op(text: str) -> bool:
    """Whether MLIR ``text`` may name an MHLO op (not only MHLO attributes)."""
    at = text.find("mhlo.")
    while at >= 0:
        before = text[at - 1] if at else "\n"
        if before == '"':
            if _MHLO_GENERIC.match(text, at):
                return True
        elif not (before.isalnum() or before in "_.@#!$") and _MHLO_PRETTY.match(text, at):
            return True
        at = text.find("mhlo.", at + 5)
    return False


# A JAX function: package.module:function, or FILE.py:function (a path to a Python file).
_JAX_ENTRY = re.compile(r"^(?:[A-Za-z_][\w.]*|[^:]+\.py):[A-Za-z_][\w.]*$")
_LOADABLE_SUFFIXES = (".mlir", ".mlirbc", ".hlo", ".txt", ".pb", ".pbtxt", ".vhlo", ".bc", ".stablehlo")
# Suffixes XLA's dumps add after the module name; stripped for output file names.
_DUMP_SUFFIXES = (".before_optimizations", ".after_optimizations", ".hlo", ".stablehlo", ".vhlo", ".mhlo")


@dataclass
class LoadedModule:
    """A module ready for the pipeline, with where it came from."""

    name: str            # file-name friendly: stages are written as <name>.<stage>.<ext>
    source: str          # path (or entry point) as the user gave it
    format: str          # one of INPUT_FORMATS
    module: Any          # jaxlib.mlir.ir.Module, StableHLO (or what the file holds)
    line_offset: int = 0  # of this chunk within the file (for --split-input-file)
    # The HloModuleProto as read, for HLO inputs: HLO-to-HLO conversions use it
    # directly, since a trip through StableHLO renames computations.
    hlo_proto: bytes | None = field(default=None, repr=False)


# ------------------------------------------------------------------ expansion

def expand_inputs(specs: list[str], *, prefer_dump_modules: bool = True) -> list[str]:
    """Paths for every input spec: files, globs, directories, JAX entry points."""
    out: list[str] = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            out.extend(_directory_inputs(path, prefer_dump_modules))
        elif path.exists() or spec == "-":
            out.append(spec)
        elif any(ch in spec for ch in "*?["):
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches:
                raise InputError("no files match this pattern", file=spec)
            out.extend(m for m in matches if Path(m).is_file())
        elif _JAX_ENTRY.match(spec):
            out.append(spec)
        else:
            raise InputError("no such file or directory", file=spec)
    return out


def _directory_inputs(path: Path, prefer_dump_modules: bool) -> list[str]:
    files = sorted(p for p in path.rglob("*") if p.is_file())
    if prefer_dump_modules:
        # An XLA dump dir: its *before_optimizations* modules are the inputs.
        dumps = [p for p in files if ".before_optimizations." in p.name]
        if dumps:
            return [str(p) for p in dumps]
    loadable = [str(p) for p in files if p.suffix in _LOADABLE_SUFFIXES]
    if not loadable:
        raise InputError("directory holds no loadable modules", file=str(path))
    return loadable


# -------------------------------------------------------------------- loading

def load_inputs(specs: list[str], *, input_format: str | None = None,
                split_input_file: bool = False, arg_specs: str | None = None) -> list[LoadedModule]:
    modules: list[LoadedModule] = []
    for path in expand_inputs(specs):
        modules.extend(load(path, input_format=input_format, split_input_file=split_input_file,
                            arg_specs=arg_specs))
    return modules


def load(source: str, *, input_format: str | None = None, split_input_file: bool = False,
         arg_specs: str | None = None, chunk: int | None = None,
         data: bytes | None = None, lower_for: tuple[Any, ...] | None = None) -> list[LoadedModule]:
    """Load one file (or JAX entry point) into one module, or several when split.

    ``chunk`` loads only that chunk of a split file (the others are not parsed,
    so an error in one chunk is not reported for another). ``data`` is the
    file's content when the caller has read it already (``-``: stdin, once). ``lower_for``:
    what a JAX function is lowered for (core.program.InputOptions.lower_for).
    """
    if is_jax_input(source, input_format):
        if lower_for is not None and lower_for[0] == "tpu":
            return [_load_jax_function_for_tpu(source, arg_specs, lower_for[1], lower_for[2], dict(lower_for[3]))]
        return [_load_jax_function(source, arg_specs)]
    return [parse_unit(u) for u in read_units(source, input_format=input_format,
                                              split_input_file=split_input_file, chunk=chunk, data=data)]


@dataclass(frozen=True)
class Unit:
    """One module's bytes as read, before any parse: what a Program is made from (and
    identified by, core/program.py)."""

    source: str          # the path as given ('-': stdin)
    name: str            # its stem, with the chunk number of a split file
    format: str          # detected or forced (INPUT_FORMATS, not 'jax')
    data: bytes = field(repr=False)  # the module's bytes (a split file's chunk)
    offset: int = 0      # the chunk's first line in the file


def is_jax_input(source: str, input_format: str | None) -> bool:
    """Whether ``source`` is a JAX function (``package.module:function``); InputError for
    an unknown format or ``jax`` forced on something else."""
    if input_format is not None and input_format not in INPUT_FORMATS:
        raise InputError(f"unknown input format '{input_format}'",
                         hint=did_you_mean(input_format, INPUT_FORMATS)
                         or "one of " + ", ".join(INPUT_FORMATS))
    if input_format == "jax" and not _JAX_ENTRY.match(source):
        what = "a file" if Path(source).exists() or source == "-" else "not package.module:function"
        raise InputError(f"--input-format jax takes a JAX function as package.module:function; "
                         f"this is {what}", file=source,
                         hint="drop --input-format to load the file" if what == "a file" else None)
    return input_format == "jax" or (input_format is None and not Path(source).exists()
                                     and bool(_JAX_ENTRY.match(source)))


def read_units(source: str, *, input_format: str | None = None, split_input_file: bool = False,
               chunk: int | None = None, data: bytes | None = None) -> list[Unit]:
    """The modules of one file, read and their format detected, none parsed: no jaxlib.
    InputError for a file that cannot be read or is no module format."""
    if data is None:
        data = _read(source)
    elif not data.strip():
        raise InputError("empty file", file=source)
    if input_format is None:
        try:
            fmt = detect_format(data, source)
        except InputError:
            snap = snapshot_module(data, source)
            if snap is None:
                raise
            source, fmt, data = snap
    else:
        fmt = input_format
    if fmt in ("vhlo", "bytecode") and not data.startswith(_MLIR_BYTECODE_MAGIC):
        # jaxlib would take MLIR text here too and hide the mismatch.
        try:
            found = detect_format(data, source)
        except InputError:
            found = None
        raise InputError(f"--input-format {fmt} expects MLIR bytecode, but this is not bytecode",
                         file=source, hint=f"it looks like {found}: --input-format {found}" if found else None)
    stem = module_stem(source)
    if split_input_file and fmt in ("hlo", "mlir", "hlo-pbtxt"):
        text = _decode_text(data, source)
        chunks = split_chunks(text)
        wanted = range(len(chunks)) if chunk is None else [chunk]
        return [Unit(source, f"{stem}.{i}" if len(chunks) > 1 else stem, fmt, chunks[i][0].encode(), chunks[i][1])
                for i in wanted]
    return [Unit(source, stem, fmt, data, 0)]


def snapshot_module(data: bytes, source: str) -> tuple[str, str, bytes] | None:
    """An HloSnapshot (XLA's ``*.snapshot.*.pb`` dumps) as (source, format, bytes) of the
    module to read; None for data that is no snapshot.

    The snapshot holds the module after XLA's optimizations, whose fusions jaxlib cannot
    compile again (its HLO import drops their backend configs). So where the dump has the
    same module before optimizations beside it (``module_NNNN.<name>.before_optimizations.txt``),
    that file is the module; else the snapshot's own (its MLIR-level stages and conversion
    work; an XLA compile may refuse its fusions).
    """
    if not data.startswith(b"\x0a"):
        return None
    from ..ir import protos

    try:
        snap = protos.message_class("xla.HloSnapshot").FromString(data)
    except Exception:
        return None
    module = snap.hlo.hlo_module
    if not module.name or not module.computations:
        return None
    p = Path(source)
    before = p.with_name(p.name.split(".snapshot.")[0] + ".before_optimizations.txt")
    if ".snapshot." in p.name and before.is_file():
        return str(before), "hlo", before.read_bytes()
    return source, "hlo-proto", module.SerializeToString()


def parse_unit(unit: Unit) -> LoadedModule:
    """The module of a unit, parsed into the driver's MLIR context (StableHLO)."""
    return _load_one(unit.data, unit.format, unit.source, unit.name, unit.offset)


def module_units(specs: list[str], *, split_input_file: bool) -> list[tuple[str, str, int, bool, bytes | None]]:
    """``(source, name, chunk, split, data)`` for each module the inputs hold.

    Files are read only to count the chunks of a split file. ``-`` is read here,
    once: workers have no stdin of their own, so its bytes travel as ``data``.
    """
    units = []
    for path in expand_inputs(specs):
        stem = path.split(":")[-1] if looks_like_jax_entry(path) else module_stem(path)
        data = sys.stdin.buffer.read() if path == "-" else None
        chunks = 1
        if split_input_file and (data is not None or Path(path).is_file()):
            text = data.decode(errors="replace") if data is not None else Path(path).read_text(errors="replace")
            chunks = max(1, len(split_chunks(text)))
        for i in range(chunks):
            units.append((path, f"{stem}.{i}" if chunks > 1 else stem, i, chunks > 1, data))
    return units


def looks_like_jax_entry(spec: str) -> bool:
    return not Path(spec).exists() and bool(_JAX_ENTRY.match(spec))


def split_chunks(text: str) -> list[tuple[str, int]]:
    """Chunks separated by ``// -----`` lines, each with its starting line offset."""
    chunks, start, offset = [], 0, 0
    for m in SPLIT_MARKER.finditer(text):
        chunks.append((text[start:m.start()], offset))
        offset += text[start:m.end()].count("\n") + 1
        start = m.end() + 1
    chunks.append((text[start:], offset))
    return [(c, o) for c, o in chunks if c.strip()]


def module_stem(source: str) -> str:
    name = Path(source).name
    for suffix in _LOADABLE_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    # XLA stacks them (m.before_optimizations.hlo.pb): strip until none is left,
    # so a dump's .txt and .hlo.pb get the same stem.
    while name.endswith(_DUMP_SUFFIXES):
        name = next(name[: -len(s)] for s in _DUMP_SUFFIXES if name.endswith(s))
    return name or "module"


def _read(source: str) -> bytes:
    if source == "-":
        return sys.stdin.buffer.read()
    path = Path(source)
    if path.is_dir():
        raise InputError("is a directory, not a module file", file=source)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file or directory", file=source) from None
    except OSError as e:
        raise InputError(e.strerror or str(e), file=source) from None
    if not data.strip():
        raise InputError("empty file", file=source)
    return data


def detect_format(data: bytes, source: str = "<input>") -> str:
    """The input format of ``data``, from its content."""
    if data.startswith(_MLIR_BYTECODE_MAGIC):
        # Portable artifacts record the StableHLO version as the bytecode producer.
        return "vhlo" if data[5:16] == b"StableHLO_v" else "bytecode"
    # Before the text check: a small proto can be valid UTF-8 without NUL bytes.
    # Both messages start with field 1 (byte 0x0A); other data skips protobuf's import.
    if data.startswith(b"\x1f\x8b") or (data.startswith(b"\x0a") and _looks_like_hlo_proto(data)):
        return "hlo-proto"
    text = _try_text(data)
    if text is None:
        _raise_if_bad_utf8_text(data, source)
        raise InputError("not a module: binary data that is neither MLIR bytecode nor an HLO proto",
                         file=source)
    head = _first_code_line(text)
    if head.startswith("HloModule"):
        return "hlo"
    if re.match(r"^(hlo_module\s*[:{]|name\s*:\s*\"|computations\s*[:{]|entry_computation_name\s*:)", head):
        return "hlo-pbtxt"
    if _MLIR_HEAD.match(head):  # MLIR whatever the name (an .hlo or .pbtxt that holds StableHLO)
        return "mlir"
    if source.endswith(".pbtxt"):
        return "hlo-pbtxt"
    if source.endswith((".hlo",)) or (source.endswith(".txt") and "ENTRY" in text):
        return "hlo"
    return "mlir"


def _looks_like_hlo_proto(data: bytes) -> bool:
    from ..ir import hlo_proto

    return hlo_proto.looks_like_hlo_proto(data) is not None


def _try_text(data: bytes) -> str | None:
    if b"\x00" in data[:4096]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _decode_text(data: bytes, source: str) -> str:
    text = _try_text(data)
    if text is None:
        _raise_if_bad_utf8_text(data, source)
        raise InputError("expected a text file", file=source)
    return text


def _raise_if_bad_utf8_text(data: bytes, source: str) -> None:
    """Text with a few bytes that are not UTF-8 (a Latin-1 comment) is text, not
    binary data: say where the first bad byte is."""
    if b"\x00" in data[:4096]:
        return
    bad = data.decode("utf-8", "replace").count("\ufffd")
    if bad > max(3, len(data) // 100):
        return  # mostly undecodable: binary after all
    try:
        data.decode("utf-8")
        return
    except UnicodeDecodeError as e:
        pos = e.start
    line = data.count(b"\n", 0, pos) + 1
    col = pos - (data.rfind(b"\n", 0, pos) + 1) + 1
    raise InputError(f"byte 0x{data[pos]:02x} is not UTF-8; a text module must be UTF-8",
                     file=source, line=line, col=col)


def hlo_header_counts(text: str) -> tuple[int | None, int | None]:
    """(replica_count, num_partitions) from HLO text's ``HloModule`` header line (None where
    it says none)."""
    m = re.search(r"^\s*HloModule\s+[^\n]*", text[: 1 << 16], re.M)
    if not m:
        return None, None
    rep = re.search(r"\breplica_count=(\d+)", m.group(0))
    part = re.search(r"\bnum_partitions=(\d+)", m.group(0))
    return (int(rep.group(1)) if rep else None), (int(part.group(1)) if part else None)


def _keep_device_counts(module: Any, replicas: int | None, partitions: int | None) -> None:
    """The header's replica and partition counts, which XLA's HLO import drops, on the module
    as jax writes them (``mhlo.num_replicas``, ``mhlo.num_partitions``): a sharded module says
    how many devices it is for, whatever format it was read from."""
    if (replicas or 1) == 1 and (partitions or 1) == 1:
        return
    from jaxlib.mlir import ir

    with module.context:
        i32 = ir.IntegerType.get_signless(32)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, partitions or 1)
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, replicas or 1)


def _first_code_line(text: str) -> str:
    """The first line that is neither blank nor a comment, stripped ("" if none).

    Line by line from the start: splitting all of a large module (12 ms at 5 MB)
    to read its head cost more than every other guard together."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        for line in text[start:end].splitlines():  # the other line breaks splitlines knows
            s = line.strip()
            if s and not s.startswith(("//", "#")):
                return s
        start = end + 1
    return ""


def _load_one(data: bytes, fmt: str, source: str, name: str, offset: int) -> LoadedModule:

    if fmt == "hlo":
        text = _decode_text(data, source)
        check_nesting(text, source, offset)
        # Before parse_mlir sets up the MLIR context: the isolation helper is
        # then a cheap fork of this process.
        raw, bytecode = _hlo_to_stablehlo(source, text=text, offset=offset)
        from ..ir.emit import stable_hlo_proto

        module = parse_imported_hlo(bytecode, source)
        _keep_device_counts(module, *hlo_header_counts(text))
        return LoadedModule(name, source, fmt, module, offset, stable_hlo_proto(raw))
    if fmt == "hlo-pbtxt":
        from ..ir import hlo_proto

        text = _decode_text(data, source)
        # XLA tools write either an HloModuleProto or an HloProto wrapping one.
        kind = "HloProto" if re.match(r"^hlo_module\s*[:{]", _first_code_line(text)) else "HloModuleProto"
        try:
            msg = hlo_proto.parse_text(text, kind)
            if kind == "HloProto":
                if not msg.HasField("hlo_module"):
                    raise InputError("HloProto text has no hlo_module", file=source)
                msg = msg.hlo_module
        except InputError as e:
            e.file = source
            if e.line is not None:
                e.line += offset
            raise
        proto = hlo_proto.encode(msg)
        return LoadedModule(name, source, fmt, _module_from_hlo_proto(proto, source), offset, proto)
    if fmt == "hlo-proto":
        from ..ir import hlo_proto

        try:
            proto = hlo_proto.module_proto_from_any(data)
        except (InputError, ValueError) as e:
            raise InputError(f"malformed HLO proto: {getattr(e, 'message', e)}", file=source) from None
        return LoadedModule(name, source, fmt, _module_from_hlo_proto(proto, source), offset,
                            hlo_proto=proto)
    if fmt == "vhlo":
        _read_isolated(fmt, data, source)
        return LoadedModule(name, source, fmt, _deserialize_vhlo(data, source), offset)
    if fmt in ("mlir", "bytecode"):
        if fmt == "bytecode":
            _read_isolated(fmt, data, source)
        payload: str | bytes = data if fmt == "bytecode" else _decode_text(data, source)
        if isinstance(payload, str) and "check.expect" in payload:
            # Self-checking tests: jaxlib has no `check` dialect, so its ops are
            # rewritten line for line into `stablehlo.custom_call @check.*`.
            from . import checks

            payload = checks.preprocess_check_ops(payload, source, line_offset=offset)
        module = parse_mlir(payload, source, offset)
        # No MHLO op without its name in the text (or the dialect's in bytecode's string
        # table). jax's modules name MHLO only in attributes (mhlo.num_partitions = 1):
        # walking every op to find none cost 37 ms on a 57k-instruction module.
        if names_mhlo_op(payload) if isinstance(payload, str) else (b"mhlo" in payload):
            module = _mhlo_to_stablehlo(module, source)
        return LoadedModule(name, source, fmt, module, offset)
    raise InputError(f"unknown input format '{fmt}'", file=source)  # pragma: no cover


def _deserialize_vhlo(data: bytes, source: str) -> Any:
    """A StableHLO portable artifact as a module in the driver's context."""
    from jaxlib.mlir.dialects import stablehlo

    from .._native import jaxlib as _jaxlib
    from .._native.fds import capture_fd2

    ctx = _jaxlib.ir_context()
    # The deserializer reports its diagnostics on fd 2 and raises a bare error.
    failed = False
    with capture_fd2() as captured:
        try:
            with ctx:
                module = stablehlo.deserialize_portable_artifact(ctx, data)
        except Exception:
            failed = True
    if failed:
        found = re.findall(r"error: (.+)", captured.text)
        detail = found[0].strip() if found else "cannot deserialize"
        raise InputError(f"malformed StableHLO portable artifact: {detail}", file=source)
    return module


# Seconds an isolated read (MLIR bytecode, VHLO, HLO text or proto import) may
# take before it counts as a hang: MLIR's bytecode reader loops forever on
# some corrupt files. Real modules read in well under a second per MB.
READ_TIMEOUT_ENV = "MLIRHLO_READ_TIMEOUT"
DEFAULT_READ_TIMEOUT = 60.0
_READ_WHAT = {"bytecode": ("MLIR's bytecode reader", "malformed MLIR bytecode"),
              "vhlo": ("the StableHLO artifact reader", "malformed StableHLO portable artifact")}


def read_timeout() -> float:
    """The read deadline: ``$MLIRHLO_READ_TIMEOUT`` seconds, else DEFAULT_READ_TIMEOUT."""
    raw = os.environ.get(READ_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_READ_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise InputError(f"{READ_TIMEOUT_ENV} must be a positive number of seconds, not '{raw}'")
    return value


def _read_in_child(fmt: str, data: bytes, source: str) -> None:
    """For the isolation helper: read ``data`` as the loader will, keep nothing."""
    if fmt == "vhlo":
        _deserialize_vhlo(data, source)
    else:
        parse_mlir(data, source)


def _discard(text: str) -> None:
    """The helper's output on a trial read: the real read prints it again."""


def _read_isolated(fmt: str, data: bytes, source: str) -> None:
    """Read bytecode or VHLO once in the isolation helper, under read_timeout().

    MLIR's bytecode reader segfaults, aborts (nanobind, on a diagnostic that is
    not UTF-8) or loops forever on some corrupt files; the same read in the
    helper turns that into an InputError, and its parse errors come back as
    they would here. Only a read that succeeded there is repeated in this
    process, where it cannot die (same library, same bytes): a parse of
    twice the cost, which for bytecode is small next to the start-up.
    """
    from .._native import isolate
    from .._native import jaxlib as _jaxlib
    from ..errors import NativeCrash

    what, label = _READ_WHAT[fmt]
    timeout = read_timeout()
    try:
        # Imported here before the helper is forked (this process needs them next).
        preload = _jaxlib.MLIR_PRELOAD + (("jaxlib.mlir.dialects.stablehlo",) if fmt == "vhlo" else ())
        isolate.call(_read_in_child, (fmt, data, source), what=what, file=source, timeout=timeout,
                     on_stderr=_discard, preload=preload)
    except NativeCrash as e:
        raise InputError(f"{label}: {_crash_words(e)}", file=source,
                         hint=f"set {READ_TIMEOUT_ENV} to allow longer" if e.timed_out else None) from None


def _crash_words(e: Any) -> str:
    """A NativeCrash's message, with nanobind's abort on undecodable text made plain."""
    # nanobind names the function that failed: detail::str_from_cstr_and_size() in
    # jaxlib 0.9-0.10.2, str() in 0.12.
    if re.search(r"nanobind::(?:detail::str_from_cstr_and_size|str)\(\): conversion error", e.native_log or ""):
        return e.message.split(":")[0] + " on a diagnostic that is not UTF-8 text"
    return e.message


def parse_mlir(payload: str | bytes, source: str = "<input>", offset: int = 0) -> Any:
    """Parse MLIR text or bytecode in the driver's context; errors carry file:line:col."""
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib

    if isinstance(payload, str):
        check_nesting(payload, source, offset)
    ctx = _jaxlib.ir_context()
    try:
        with ctx:
            if isinstance(payload, str) and _is_whole_file(source, payload, offset):
                # MLIR names a string's locations "-"; parsed from its file, every op carries
                # the file's name, so kernel sources and HLO metadata name it too.
                return ir.Module.parseFile(source)
            module = ir.Module.parse(payload)
    except Exception as e:
        raise _mlir_parse_error(e, source, offset, "malformed MLIR") from None
    if isinstance(payload, str) and _names_a_file(source):
        module = _located(module, source, offset)
    return module


def _names_a_file(source: str) -> bool:
    return source not in ("-", "<input>") and not source.startswith("<") and os.path.isfile(source)


def _is_whole_file(source: str, text: str, offset: int) -> bool:
    """Whether ``text`` is exactly ``source``'s content (not a chunk, not rewritten)."""
    if offset or not _names_a_file(source):
        return False
    try:
        return Path(source).read_bytes() == text.encode()
    except OSError:
        return False


_STDIN_LOC = r'loc\("-":(\d+):(\d+)\)'


def _located(module: Any, source: str, offset: int) -> Any:
    """``module`` (parsed from a chunk of ``source``, or its text rewritten line for line)
    with its ``loc("-":L:C)`` locations naming ``source`` at the file's line."""
    import json

    from jaxlib.mlir import ir

    text = module.operation.get_asm(enable_debug_info=True)
    if '"-":' not in text:
        return module
    name = json.dumps(source)  # MLIR's string escapes are JSON's for a path
    text = re.sub(_STDIN_LOC, lambda m: f"loc({name}:{int(m.group(1)) + offset}:{m.group(2)})", text)
    with module.context:
        return ir.Module.parse(text)


# Brackets, types and regions nested deeper than this are refused before
# parsing. Native code recurses once per level and overflows its stack
# (SIGSEGV, nothing printed): MLIR's parser at 5,000 nested stablehlo.while or
# 20,000 nested tuple<> types, XLA's CPU compile at 900 nested tuples. Real
# modules nest a few dozen levels.
MAX_NESTING = 256
_BRACKETS = b"([{<)]}>"
_NOT_BRACKET = bytes(b for b in range(256) if b not in _BRACKETS)


def check_nesting(text: str, source: str = "<input>", offset: int = 0) -> None:
    """InputError at the first place where ``text`` nests deeper than MAX_NESTING.

    Counts ``( [ { <`` against their closers (``->`` excluded), ignoring
    strings and comments: a cheap over-approximation that real modules stay
    far below. A few ms per MB of text.
    """
    data = text.encode("utf-8", "surrogateescape").replace(b"->", b"  ")
    # The brackets alone (C-speed translate), then depth by a cumulative sum.
    marks = data.translate(None, _NOT_BRACKET)
    if len(marks) <= MAX_NESTING:
        return
    import numpy as np

    lut = np.zeros(256, np.int8)
    lut[list(_BRACKETS[:4])] = 1
    lut[list(_BRACKETS[4:])] = -1
    if int(np.cumsum(lut[np.frombuffer(marks, np.uint8)], dtype=np.int32).max()) <= MAX_NESTING:
        return
    # Rare path: find where, in the whole text.
    steps = lut[np.frombuffer(data, np.uint8)]
    at = int(np.argmax(np.cumsum(steps, dtype=np.int32) > MAX_NESTING))
    line = data.count(b"\n", 0, at) + 1
    col = at - data.rfind(b"\n", 0, at)
    raise InputError(f"nested more than {MAX_NESTING} levels deep (brackets, types or regions)",
                     file=source, line=line + offset, col=col,
                     hint="the parser recurses once per level; flatten the nesting")


def _mhlo_to_stablehlo(module: Any, source: str) -> Any:
    """MHLO input becomes StableHLO, like every other input."""
    from jaxlib.mlir import passmanager

    from .._native.fds import capture_fd2
    from ..ir.emit import has_mhlo

    if not has_mhlo(module):
        return module
    with module.context, capture_fd2() as captured:
        try:
            passmanager.PassManager.parse("builtin.module(hlo-legalize-to-stablehlo)").run(module.operation)
            failed = None
        except Exception as e:
            failed = e
    if failed is not None:
        diags = getattr(failed, "error_diagnostics", None) or []
        what = diags[0].message if diags else (captured.text.strip().splitlines() or ["failed"])[-1]
        raise InputError(f"cannot legalize MHLO to StableHLO: {what}", file=source)
    return module


def _module_from_hlo_proto(proto: bytes, source: str) -> Any:
    _, bytecode = _hlo_to_stablehlo(source, proto=proto)
    return parse_imported_hlo(bytecode, source)


def parse_imported_hlo(bytecode: bytes, source: str) -> Any:
    """The StableHLO bytecode XLA's HLO import made (``_jax.mlir.hlo_to_stablehlo``) as a
    module, each dot with an algorithm in StableHLO's own form (:func:`_dot_algorithms_kept`):
    every import of HLO goes through here."""
    module = parse_mlir(bytecode, source)
    _dot_algorithms_kept(module, bytecode)
    return module


def _dot_algorithms_kept(module: Any, bytecode: bytes) -> None:
    """XLA's HLO import writes a plain 2-D ``dot`` with an ``algorithm=`` (HLO's
    dot_bf16_bf16_f32_x3, ...) as ``stablehlo.dot`` carrying the algorithm as a discardable
    attribute: StableHLO's dot has no algorithm, so serializing for a plugin (CUDA, TPU:
    VHLO) refuses the op and any pass may drop it. Each such dot becomes the
    ``stablehlo.dot_general`` it means (lhs's last dimension against rhs's first, no batch),
    the algorithm in its own field, which XLA imports back as the same HLO dot."""
    if b"algorithm" not in bytecode:  # the attribute's name is in bytecode's string table
        return
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    dots: list[Any] = []

    def visit(op: Any) -> Any:
        if op.name == "stablehlo.dot" and "algorithm" in op.attributes:
            dots.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for dot in dots:
        lhs, rhs = dot.operands
        with module.context, dot.location, ir.InsertionPoint(dot):
            numbers = stablehlo.DotDimensionNumbers.get(
                lhs_batching_dimensions=[], rhs_batching_dimensions=[],
                lhs_contracting_dimensions=[ir.RankedTensorType(lhs.type).rank - 1],
                rhs_contracting_dimensions=[0])
            attrs = dot.attributes
            general = stablehlo.DotGeneralOp(
                dot.results[0].type, lhs, rhs, numbers,
                precision_config=attrs["precision_config"] if "precision_config" in attrs else None,
                algorithm=attrs["algorithm"])
            # the other discardable attributes (mhlo.frontend_attributes, ...) stay with it
            for key in attrs:
                if key not in ("precision_config", "algorithm"):
                    general.operation.attributes[key] = attrs[key]
        dot.results[0].replace_all_uses_with(general.result)
        dot.erase()


def _hlo_to_stablehlo(source: str, *, text: str | None = None, proto: bytes | None = None,
                      offset: int = 0) -> tuple[bytes, bytes]:
    """(HloModuleProto, StableHLO bytecode) of HLO text or a proto, made in a helper process.

    XLA's parser and its HLO-to-MLIR import abort (CHECK failures, LLVM
    fatal errors) on some malformed modules: a reshape that changes the
    element count, a ``parameter(3)`` in a one-parameter computation, a
    get-tuple-element of an array. In the helper (_native/isolate.py) that death is
    an InputError naming XLA's check, not the end of this process.
    """
    from .._native import isolate
    from .._native import jaxlib as _jaxlib
    from ..errors import NativeCrash

    stage = "HLO parser" if text is not None else "HLO-to-StableHLO import"
    timeout = read_timeout()
    try:
        kind, got, bytecode = isolate.call(
            _hlo_to_stablehlo_in_child, (text, proto), what=f"XLA's {stage}", file=source,
            preload=_jaxlib.ISOLATED_PRELOAD + _jaxlib.MLIR_PRELOAD, on_stderr=_jaxlib.replay_native_stderr,
            timeout=timeout)
    except NativeCrash as e:
        line, col = _locate_hlo_crash(e.message, text) if text is not None else (None, None)
        raise InputError(f"malformed HLO module: {e.message}", file=source,
                         line=None if line is None else line + offset, col=col,
                         hint=f"set {READ_TIMEOUT_ENV} to allow longer" if e.timed_out else None) from None
    if kind == "parse":
        raise _hlo_parse_error(got, source, offset, text)
    if kind == "convert":
        raise InputError(f"XLA could not convert the HLO module to StableHLO: {got}", file=source)
    return got, bytecode


def _hlo_to_stablehlo_in_child(text: str | None, proto: bytes | None) -> tuple[str, bytes | str, bytes]:
    """_jaxlib.hlo_to_stablehlo_in_child, and a trial parse of the StableHLO it made.

    XLA's import of a malformed proto can produce bytecode whose parse
    segfaults; parsed here first, in the helper, it cannot kill the caller.
    """
    from .._native import jaxlib as _jaxlib

    kind, got, bytecode = _jaxlib.hlo_to_stablehlo_in_child(text, proto)
    if kind == "ok":
        try:
            parse_mlir(bytecode, "<XLA's StableHLO>")
        except InputError as e:
            return ("convert", f"its StableHLO does not parse: {e.message}", b"")
    return kind, got, bytecode


def _locate_hlo_crash(message: str, text: str) -> tuple[int | None, int | None]:
    """Where in HLO text the instruction an XLA CHECK names is, where it can be told.

    XLA's CHECKs carry no position; two common ones name enough to find it:
    ``invalid parameter number ... got N`` (the first ``parameter(N)``) and
    ``shape: S operand: T`` (the first instruction of shape S on T).
    """
    m = re.search(r"invalid parameter number.*got (\d+)", message)
    if m:
        pattern = re.compile(rf"\bparameter\(\s*{m.group(1)}\s*\)")
    else:
        m = re.search(r"shape: (\S+) operand: (\S+)", message)
        if not m:
            return None, None
        pattern = re.compile(rf"=\s*{re.escape(m.group(1))}(?:\{{[^}}]*\}})?\s+[\w-]+\(")
    for number, line in enumerate(text.split("\n"), start=1):
        if pattern.search(line):
            return number, _name_col(line)
    return None, None


def _name_col(line: str) -> int:
    """The column of an HLO instruction's name: the first word on its line, past ``ROOT``."""
    start = len(line) - len(line.lstrip())
    if line[start:].startswith("ROOT "):
        start += 5
    return start + 1


_LOC = r'loc\("(?:[^"]*)":(\d+):(\d+)\)'


def _mlir_parse_error(exc: Exception, source: str, offset: int, fallback: str) -> InputError:
    diags = getattr(exc, "error_diagnostics", None) or []
    for diag in diags:
        m = re.match(_LOC, str(diag.location))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        if line == 0:  # bytecode errors have no position
            line = col = None
        message = diag.message.strip()
        if "not found for custom op" in message:
            message += " (unregistered dialect)"
        return InputError(message, file=source, line=None if line is None else line + offset, col=col)
    text = str(exc).strip().splitlines()
    return InputError(f"{fallback}: {text[-1] if text else type(exc).__name__}", file=source)


_HLO_ERR = r"was parsing (\d+):(\d+): error: (.*)"


# jaxlib 0.12's parser refuses a reshape that changes the element count (0.10.2 died
# on a CHECK) when the instruction is made: at the token after it, the next line.
_RESHAPE_COUNT = r"expects the same number of elements in result shape (\S+) and operand shape \S+$"


def _hlo_parse_error(message: str, source: str, offset: int, text: str | None = None) -> InputError:
    found = re.findall(_HLO_ERR, message)
    if not found:
        body = message.split("\n")[0]
        body = re.sub(r"^[A-Z_]+: ", "", body)
        return InputError(f"malformed HLO text: {body}", file=source)
    # XLA lists every alternative it tried at the failing token; the most
    # specific one names the culprit ("instruction does not exist: p2").
    line, col = int(found[0][0]), int(found[0][1])
    messages = [m for (ln, c, m) in found if (int(ln), int(c)) == (line, col)]
    # XLA also tries to read an operand as a nested instruction; when that fails
    # too ("Unknown opcode: p0" for a missing ')'), its complaints are not the error.
    real = [m for m in messages if not re.search(r"as a nested instruction|expects opcode but sees", m)]
    messages = real or messages
    specific = [m for m in messages if re.search(r"does not exist|[Uu]nknown|not defined|expected", m)]
    best = (specific or messages)[0]
    best = best.rsplit("error: ", 1)[-1].strip()
    m = re.search(_RESHAPE_COUNT, best)
    if m and text is not None:
        line, col = _instruction_before(text, line, m.group(1), "reshape") or (line, col)
    return InputError(best, file=source, line=line + offset, col=col)


def _instruction_before(text: str, line: int, shape: str, opcode: str) -> tuple[int, int] | None:
    """(line, col) of the last ``NAME = SHAPE OPCODE(`` instruction on or before ``line``."""
    pattern = re.compile(rf"=\s*{re.escape(shape)}(?:\{{[^}}]*\}})?\s+{re.escape(opcode)}\(")
    lines = text.split("\n")
    for number in range(min(line, len(lines)), 0, -1):
        if pattern.search(lines[number - 1]):
            return number, _name_col(lines[number - 1])
    return None


# ---------------------------------------------------------------- JAX entries

# --args spellings -> numpy dtype name: XLA's HLO names (f32, s8, pred, bf16,
# f8e4m3fn, ...) of every type numpy or ml_dtypes holds, and the aliases users
# reach for: "bool", and MLIR's signless "i8".."i64" (plus i2, i4) for s8..s64.
def _dtypes() -> dict[str, str]:
    from ..ir import dtypes

    names = {t.hlo: t.numpy for t in dtypes.ARRAY_TYPES if t.numpy is not None}
    names["bool"] = "bool"
    names.update({t.mlir: t.numpy for t in dtypes.ARRAY_TYPES
                  if t.kind == "signed" and dtypes.BY_MLIR[t.mlir] is t})  # "i1" is PRED's: not an alias
    return names


_ARG = r"\s*([A-Za-z0-9_]+)\[([0-9,\s]*)\]\s*"


def parse_arg_specs(spec: str) -> list[tuple[str, tuple[int, ...]]]:
    """``'f32[8,128],i32[8]'`` -> [("float32", (8, 128)), ("int32", (8,))]."""
    out, pos = [], 0
    names = _dtypes()
    while pos < len(spec):
        m = re.compile(_ARG).match(spec, pos)
        if not m:
            raise InputError(f"malformed argument spec at column {pos + 1}: expected DTYPE[DIMS] "
                             "like f32[8,128]", file=param("args"), col=pos + 1)
        dtype = m.group(1).lower()
        if dtype not in names:
            raise InputError(f"unknown dtype '{m.group(1)}' in argument spec", file=param("args"),
                             col=m.start(1) + 1, hint=did_you_mean(dtype, names))
        dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
        out.append((names[dtype], dims))
        pos = m.end()
        if pos < len(spec):
            if spec[pos] != ",":
                raise InputError(f"malformed argument spec at column {pos + 1}: expected ','",
                                 file=param("args"), col=pos + 1)
            pos += 1
    return out


def _load_jax_function_for_tpu(entry: str, arg_specs: str | None, topology: str,
                               shape: tuple[int, ...], env: dict[str, str]) -> LoadedModule:
    """A JAX function lowered for a TPU topology's device, so that TPU lowering rules (Pallas
    and Mosaic kernels, no CPU-only custom calls) apply: in the driver's TPU compile process
    (started with ``env``, the target's; libtpu never loads in this one), which imports the
    function's file itself."""
    from .._native import isolate
    from .._native import jaxlib as _jaxlib

    if arg_specs is None:
        raise InputError("a JAX function needs --args, e.g. --args 'f32[8,128],i32[8]'", file=entry)
    parse_arg_specs(arg_specs)  # its errors here, before any process starts
    name, text = isolate.call(_lower_for_tpu_in_helper, (entry, arg_specs, os.getcwd(), topology, tuple(shape)),
                              what="jax's lowering for TPU", file=entry, preload=_jaxlib.JAX_PRELOAD, env=env)
    return LoadedModule(name, entry, "jax", parse_mlir(text, entry), 0)


def _lower_for_tpu_in_helper(entry: str, arg_specs: str, cwd: str, topology: str,
                             shape: tuple[int, ...]) -> tuple[str, str]:
    """In the TPU process: the function lowered with the topology's first device as jax's
    default device; (its name, the module as text with locations)."""
    from .._native import jaxlib as _jaxlib

    device = _jaxlib.tpu_compile_only_devices(topology, shape, 1)[0]
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    loaded = _load_jax_function(entry, arg_specs, device=device, as_text=True)
    return loaded[0], loaded[1]


def _load_jax_function(entry: str, arg_specs: str | None, *, device: Any = None, as_text: bool = False) -> Any:
    module_name, _, attr = entry.partition(":")
    if arg_specs is None:
        raise InputError("a JAX function needs --args, e.g. --args 'f32[8,128],i32[8]'", file=entry)
    args = parse_arg_specs(arg_specs)
    from .._native import jaxlib as _jaxlib

    jax = _jaxlib.jax()
    # Entry points are usually local files: the working directory is on sys.path while the
    # module imports, and taken off again (the user's process keeps its own path).
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    # The user's files are read, never written beside: no __pycache__ next to them.
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        mod = _import_python_file(module_name) if module_name.endswith(".py") else \
            importlib.import_module(module_name)
    except InputError as e:
        e.file = entry
        raise
    except Exception as e:
        raise InputError(f"cannot import module '{module_name}': {type(e).__name__}: {e}",
                         file=entry) from None
    finally:
        sys.dont_write_bytecode = writes_bytecode
        if added and cwd in sys.path:
            sys.path.remove(cwd)
    fn: Any = mod
    for part in attr.split("."):
        if not hasattr(fn, part):
            names = [n for n in dir(fn) if not n.startswith("_")]
            raise InputError(f"module '{module_name}' has no attribute '{attr}'", file=entry,
                             hint=did_you_mean(part, names))
        fn = getattr(fn, part)
    if not callable(fn):
        raise InputError(f"'{attr}' is not callable", file=entry)
    from ..ir import dtypes

    structs = [jax.ShapeDtypeStruct(shape, dtypes.np_dtype(dt)) for dt, shape in args]
    return lower_jax_function(fn, structs, name=attr.split(".")[-1], source=entry, device=device, as_text=as_text)


def _import_python_file(path: str) -> Any:
    """A Python file by path (``model.py`` of ``model.py:f``), imported as a module named
    after its stem; its own directory is on sys.path while it imports (its sibling imports)."""
    import importlib.util

    file = Path(path)
    if not file.is_file():
        raise InputError("no such Python file")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    where = str(file.resolve().parent)
    sys.path.insert(0, where)
    try:
        spec.loader.exec_module(mod)
    finally:
        if where in sys.path:
            sys.path.remove(where)
    return mod


def lower_jax_function(fn: Any, example_args: Any, *, name: str | None = None,
                       source: str | None = None, device: Any = None, as_text: bool = False) -> Any:
    """``jax.jit(fn).lower(*example_args)`` as a module (arrays or ShapeDtypeStructs).
    A 64-bit argument lowers in jax's x64 mode (for this lowering only), or jax would
    lower it as 32-bit. ``device``: jax's default device for the lowering (a TPU
    topology's: TPU lowering rules); ``as_text``: (name, the module's text) instead."""
    from .._native import jaxlib as _jaxlib

    jax = _jaxlib.jax()
    name = name or getattr(fn, "__name__", None) or "jax_function"
    if not name.isidentifier():
        name = "jax_function"  # a lambda's "<lambda>": stages are written as <name>.<stage>.<ext>
    source = source or name
    wide = any(str(getattr(a, "dtype", "")) in ("int64", "uint64", "float64", "complex128") for a in example_args)
    try:
        # x64 for this lowering only; the driver's CPU device as jax's default device (jax would
        # otherwise start every backend it discovers to pick one): the caller's jax keeps both.
        with _jaxlib.x64(wide), _jaxlib.lowering_device(device):
            lowered = jax.jit(fn).lower(*example_args)
    except Exception as e:
        raise InputError(f"jax could not lower '{source}': {type(e).__name__}: {e}", file=source) from None
    text = lowered.as_text(debug_info=True)
    if as_text:
        return name, text
    module = parse_mlir(text, source)
    return LoadedModule(name, source, "jax", module, 0)
