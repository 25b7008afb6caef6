"""XLA DebugOptions flags: ``--xla_*`` on the command line, XLA_FLAGS, option files.

Flags are applied per compile through ``CompileOptions.env_option_overrides``,
never by changing the process's XLA_FLAGS. Precedence, lowest first: a
``--debug-options-file``, then the ``XLA_FLAGS`` environment variable, then the
command line. XLA itself type-checks each value; its complaints, and unknown
names, become FlagError with the flag named and close matches suggested.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from pathlib import Path
from typing import Any

from ..errors import FlagError, did_you_mean, param, xla_flag

_FLAG = re.compile(r"^--(xla_[A-Za-z0-9_]+)(?:=(.*))?$", re.DOTALL)


def parse_value(text: str) -> Any:
    """XLA_FLAGS-style value -> the Python type env_option_overrides expects."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", text):
        return float(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def typed_value(name: str, text: str) -> Any:
    """:func:`parse_value`, typed by field ``name`` of this XLA's DebugOptions schema
    as XLA's own flag parser (tsl) reads XLA_FLAGS: a bool takes ``true``/``false``
    in any case and ``1``/``0``; a string is the text as given (``123`` stays
    ``"123"``); a float takes an integer's spelling. Other fields, and names
    the schema lacks, keep parse_value's guess (XLA checks them)."""
    kind = debug_option_types().get(name)
    if kind == "bool" and text.lower() in ("true", "1", "false", "0"):
        return text.lower() in ("true", "1")
    if kind == "str":
        value = parse_value(text)
        return value if isinstance(value, str) else text
    value = parse_value(text)
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def parse_flag_args(args: list[str], *, separate_values: bool = True) -> tuple[dict[str, Any], list[str]]:
    """Split ``--xla_name[=value]`` (or ``--xla_name value``) out of ``args``.

    Returns the flags and the arguments that are not XLA flags. On a command
    line that also has positional inputs, ``separate_values`` is off: a flag
    without ``=`` is a boolean set to true, as in XLA_FLAGS.
    """
    flags: dict[str, Any] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        m = _FLAG.match(args[i])
        if not m:
            rest.append(args[i])
            i += 1
            continue
        name, value = m.group(1), m.group(2)
        if value is None:
            nxt = args[i + 1] if i + 1 < len(args) else None
            if separate_values and nxt is not None and not nxt.startswith("-"):
                value, i = nxt, i + 1
            else:
                flags[name] = True  # a bare boolean flag, as in XLA_FLAGS
                i += 1
                continue
        flags[name] = typed_value(name, value)
        i += 1
    return flags, rest


def from_environment() -> dict[str, Any]:
    return from_text(user_xla_flags(), "XLA_FLAGS")


# XLA_FLAGS as the user set it, and as :func:`shield_environment` left it for XLA.
_SHIELDED = "MLIRHLO_USER_XLA_FLAGS"


def user_xla_flags() -> str:
    """The user's XLA_FLAGS, libtpu's options included where the driver took them out."""
    current = os.environ.get("XLA_FLAGS", "")
    original = os.environ.get(_SHIELDED)
    if original is not None and os.environ.get(_SHIELDED + "_LEFT") == current:
        return original
    return current


# Set by a command's own process (cli.mlirhlo, cli.xla.tools) and so inherited by the driver's
# workers and helpers: there, and only there, the driver may change os.environ.
OWN_PROCESS_ENV = "MLIRHLO_OWN_PROCESS"


def shield_or_refuse(names: set[str] | frozenset[str]) -> None:
    """libtpu's options ``names`` found in XLA_FLAGS: in a command's own process, taken out of
    it (:func:`shield_environment`); in a user's process, whose environment the library never
    changes, FlagError: the next XLA_FLAGS parse in that process (an HLO text read, the user's
    own jax) would end it."""
    if not names:
        return
    if os.environ.get(OWN_PROCESS_ENV) == "1":
        shield_environment(names)
        return
    listed = ", ".join(f"--{n}" for n in sorted(names))
    raise FlagError(f"XLA_FLAGS holds libtpu's options ({listed}): jaxlib's XLA ends a process whose "
                    "XLA_FLAGS names an option it lacks",
                    hint="pass them as xla_flags= (or in LIBTPU_INIT_ARGS) and leave them out of XLA_FLAGS")


def shield_environment(names: set[str] | frozenset[str]) -> None:
    """Take ``names`` (libtpu's options, read already) out of this process's XLA_FLAGS, and
    so out of its helpers': XLA parses XLA_FLAGS once per process (its HLO parser too) and
    ends the process on a name its DebugOptions lack ("Unknown flag in XLA_FLAGS"). The
    driver passes them per compile instead; :func:`from_environment` still reads them."""
    current = os.environ.get("XLA_FLAGS", "")
    if not names or not current.strip():
        return
    try:
        words = shlex.split(current)
    except ValueError:
        return
    kept = [w for w in words if not ((m := _FLAG.match(w.replace("--noxla_", "--xla_", 1)))
                                     and m.group(1) in names)]
    if len(kept) == len(words):
        return
    left = shlex.join(kept)
    os.environ[_SHIELDED] = user_xla_flags()
    os.environ[_SHIELDED + "_LEFT"] = left
    os.environ["XLA_FLAGS"] = left


def from_text(text: str, what: str, *, strict: bool = False) -> dict[str, Any]:
    """Flags from an XLA_FLAGS-style string (``--xla_a=1 --xla_b``), shell-quoted
    words; ``what`` names the string in errors. Like XLA, words that are not
    ``--xla_*`` flags are ignored, unless ``strict`` (an option of ours, where a
    stray word is a mistake)."""
    if not text.strip():
        return {}
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise FlagError(f"cannot parse {what}: {e}") from None
    flags, rest = parse_flag_args(words)
    bad = [w for w in rest if strict or w.startswith("--xla") or not w.startswith("-")]
    if bad:
        raise FlagError(f"cannot parse {what} near '{bad[0]}'",
                        hint="XLA flags as in XLA_FLAGS, e.g. '--xla_gpu_enable_triton_gemm=false'")
    return flags


_FIELD = r"""\s*(xla_[A-Za-z0-9_]+)\s*:\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s#"',;]+)\s*[,;]?"""


def from_file(path: str) -> dict[str, Any]:
    """A DebugOptions textproto (``xla_name: value`` fields) or XLA_FLAGS-style lines."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise FlagError("no such file", file=path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise FlagError(getattr(e, "strerror", None) or str(e), file=path) from None
    flags: dict[str, Any] = {}
    positions: dict[str, tuple[int, int]] = {}  # field -> (line, col), to place later errors
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("--"):
            try:
                words = shlex.split(stripped, comments=True)
            except ValueError as e:
                raise FlagError(f"cannot parse: {e}", file=path, line=lineno,
                                col=len(line) - len(line.lstrip()) + 1) from None
            got, rest = parse_flag_args(words)
            if rest:
                # The word as a word (not inside a flag's name); as written, else the line's start.
                word = re.search(rf"(?<!\S){re.escape(rest[0])}(?!\S)", line)
                raise FlagError(f"not an XLA flag: '{rest[0]}'", file=path, line=lineno,
                                col=(word.start() if word else max(line.find(rest[0]), 0)) + 1)
            flags.update(got)
            for name in got:
                at = line.find(f"--{name}")
                value_at = line.find("=", at)
                positions[name] = (lineno, at + 1, (value_at + 1 if value_at >= 0 else at) + 1)
            continue
        pos = 0
        while pos < len(line):
            if not line[pos:].strip() or line[pos:].lstrip().startswith("#"):
                break
            m = re.compile(_FIELD).match(line, pos)
            if not m:
                col = pos + len(line[pos:]) - len(line[pos:].lstrip()) + 1
                raise FlagError("expected 'xla_name: value' or '--xla_name=value'", file=path,
                                line=lineno, col=col)
            value = m.group(2)
            if value[:1] in "\"'":
                value = value[1:-1].encode().decode("unicode_escape")
                flags[m.group(1)] = value
            else:
                flags[m.group(1)] = typed_value(m.group(1), value)
            positions[m.group(1)] = (lineno, m.start(1) + 1, m.start(2) + 1)
            pos = m.end()
    _positions[path] = positions
    return flags


# file -> field -> (line, column of the name, column of the value)
_positions: dict[str, dict[str, tuple[int, int, int]]] = {}


def from_file_checked(path: str, platform: str | None = None) -> dict[str, Any]:
    """:func:`from_file`, then the names and value types checked against this
    XLA (and libtpu's options for ``platform`` ``tpu``): an unknown field, or a value
    of the wrong type (``maybe`` for a bool), is reported at its place in the file,
    not later against the module."""
    flags = from_file(path)
    try:
        check_names(flags, known_names(), platform)
        check_value_types(flags)
    except FlagError as e:
        named = [n for n in _positions.get(path, {}) if re.search(rf"--{n}(?![A-Za-z0-9_])", e.message)]
        if not named:
            raise FlagError(e.message, file=path, hint=e.hint) from None
        line, name_col, value_col = _positions[path][named[0]]
        col = value_col if getattr(e, "bad_value", False) else name_col
        raise FlagError(e.message, file=path, line=line, col=col, hint=e.hint) from None
    return flags


def check_value_types(flags: dict[str, Any]) -> None:
    """FlagError (``bad_value`` set) for a value XLA would refuse for its field's
    type, in XLA's words (see translate_compile_error); fields this jaxlib's
    DebugOptions schema lacks are left to XLA."""
    from google.protobuf.descriptor import FieldDescriptor

    from ..ir import hlo_proto

    try:
        fields = hlo_proto.message_class("DebugOptions").DESCRIPTOR.fields_by_name
    except ValueError:
        return
    ints = {FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
            FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64}
    floats = {FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE}
    for name, value in flags.items():
        field = fields.get(name)
        if field is None or (field.is_repeated if hasattr(field, "is_repeated")  # protobuf >= 5.29
                             else field.label == field.LABEL_REPEATED):
            continue
        if field.type == FieldDescriptor.TYPE_BOOL:
            ok, kind = isinstance(value, bool), "true or false"
        elif field.type in ints:
            ok, kind = isinstance(value, int) and not isinstance(value, bool), "an integer"
        elif field.type in floats:
            ok, kind = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
        else:
            continue
        if not ok:
            shown = str(value).lower() if isinstance(value, bool) else value
            error = FlagError(f"{xla_flag(name, shown)}: expected {kind}")
            error.bad_value = True
            raise error


def merge(file_flags: dict[str, Any], env_flags: dict[str, Any],
          cli_flags: dict[str, Any]) -> dict[str, Any]:
    out = dict(file_flags)
    out.update(env_flags)
    out.update(cli_flags)
    return out


def check_names(flags: dict[str, Any], known: set[str], platform: str | None = None) -> None:
    """Unknown names fail before any compile, with close matches. For ``platform`` ``tpu``
    libtpu's per-compile options are known too, and their values are checked against
    their kinds (tpu.options); a libtpu flag read only as libtpu loads is refused."""
    if not known:
        return
    tpu = _tpu_options() if platform == "tpu" else None
    tpu_names = set(tpu.per_compile) if tpu is not None else set()
    for name in flags:
        if name in known or name in tpu_names or name in DRIVER_READ:
            continue
        if tpu is not None and name in tpu.process_wide:
            raise FlagError(f"{xla_flag(name)}: libtpu reads it once, as it loads, not per compile",
                            hint=f"give it in LIBTPU_INIT_ARGS: LIBTPU_INIT_ARGS='{xla_flag(name, 'VALUE')}'")
        if platform not in (None, "tpu") and tpu_option_kind(name) is not None:
            raise FlagError(f"{xla_flag(name)} is libtpu's option, for {param('platform', 'tpu')}",
                            hint=f"{param('platform', platform)} has no such DebugOptions field")
        raise FlagError(f"unknown XLA flag '{xla_flag(name)}'",
                        hint=did_you_mean(name, sorted(known | tpu_names)) or "see XLA's DebugOptions")
    if tpu is not None:
        check_tpu_values(flags, tpu.per_compile, known)
    _check_bool_values(flags)


def _tpu_options() -> Any:
    from ..tpu import options

    return options.options()


def tpu_option_kind(name: str) -> str | None:
    """The kind of libtpu's per-compile option ``name``, where libtpu is installed and is
    not in jaxlib's DebugOptions (None otherwise); libtpu loads only in a process of its own."""
    if name in debug_option_types():
        return None
    from ..tpu import options

    return options.kind(name)


def tpu_option_names() -> set[str]:
    """libtpu's per-compile option names (empty without libtpu)."""
    found = _tpu_options()
    return set(found.per_compile) if found is not None else set()


def check_tpu_values(flags: dict[str, Any], kinds: dict[str, str], known: set[str]) -> None:
    """Values of libtpu's options against the kinds their dumped defaults show: a boolean
    takes true/false/1/0, an integer any number (libtpu says whether a fraction fits); the
    rest are text, which libtpu parses."""
    for name, value in list(flags.items()):
        kind = kinds.get(name) if name not in debug_option_types() else None
        if kind is None:
            continue
        if kind == "bool":
            if isinstance(value, str) and value.lower() in ("true", "1", "false", "0"):
                flags[name] = value.lower() in ("true", "1")
            elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
                flags[name] = bool(value)
            elif not isinstance(value, bool):
                error = FlagError(f"{xla_flag(name, value)}: expected true or false")
                error.bad_value = True
                raise error
        elif kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                error = FlagError(f"{xla_flag(name, str(value).lower() if isinstance(value, bool) else value)}: "
                                  f"expected {'an integer' if kind == 'int' else 'a number'}",
                                  hint=f"{xla_flag(name, 'N')}" if isinstance(value, bool) else None)
                error.bad_value = True
                raise error
        elif not isinstance(value, str):
            flags[name] = str(value).lower() if isinstance(value, bool) else str(value)


def _check_bool_values(flags: dict[str, Any]) -> None:
    """A bare ``--xla_name`` means true; for a field that is not a bool
    (``--xla_dump_to`` with its value forgotten) that is a mistake, which XLA
    would take silently (as the string or number "true")."""
    bools = [n for n, v in flags.items() if isinstance(v, bool)]
    if not bools:
        return
    from google.protobuf.descriptor import FieldDescriptor

    from ..ir import hlo_proto

    try:  # DebugOptions' schema, from jaxlib's own descriptors (no jax import)
        fields = hlo_proto.message_class("DebugOptions").DESCRIPTOR.fields_by_name
    except ValueError:
        return  # XLA type-checks at compile time
    numeric = {FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
               FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE}
    for name in bools:
        field = fields.get(name)
        if field is not None and field.type != FieldDescriptor.TYPE_BOOL:
            kind = "a number" if field.type in numeric else "a value"
            raise FlagError(f"{xla_flag(name)} needs {kind}, e.g. {xla_flag(name, 'VALUE')}",
                            hint="a flag without '=' is a boolean set to true")


_NO_SUCH = r"No such compile option: '([^']+)'"  # XLA's words: compiled when one is read
_BAD_VALUE = r"While setting option (\w+), '([^']*)' is not a valid (\w+) value"
_TPU_BAD_VALUE = r"Failed to parse '([^']*)' into flag (\w+):?\s*([^\n]*)"  # libtpu's words


def translate_compile_error(message: str, known: set[str]) -> FlagError | None:
    """XLA's complaints about an override, as a FlagError (None if not about flags)."""
    m = re.search(_NO_SUCH, message)
    if m:
        name = m.group(1)  # XLA's word overrules our list (old names linger in the binary)
        return FlagError(f"unknown XLA flag '{xla_flag(name)}'", hint=did_you_mean(name, known - {name}))
    m = re.search(_BAD_VALUE, message)
    if m:
        kind = {"int32": "an integer", "int64": "an integer", "bool": "true or false",
                "float": "a number", "double": "a number"}.get(m.group(3), m.group(3))
        return FlagError(f"{xla_flag(m.group(1), m.group(2))}: expected {kind}")
    m = re.search(_TPU_BAD_VALUE, message)
    if m:
        why = m.group(3).strip().rstrip(".")
        return FlagError(f"{xla_flag(m.group(2), m.group(1))}: libtpu cannot parse the value"
                         + (f": {why}" if why else ""))
    return None


# Flags the driver reads itself, whatever this jaxlib's DebugOptions have (jaxlib 0.9's lack
# the topology file's field): name -> kind.
DRIVER_READ = {"xla_gpu_topology_filename": "str"}  # cuda/topology.py


def known_names() -> set[str]:
    """DebugOptions field names this jaxlib's XLA knows, read from its binaries.

    Used for early "unknown flag" errors and suggestions; XLA still has the
    last word on each value. Cached per jaxlib build, like the pass catalog.
    """
    import json

    from ..mlir.passes import jaxlib_cache_key, jaxlib_libraries
    from ..resources import cache_dir

    path = cache_dir() / f"xla-flags-{jaxlib_cache_key()}.json"
    try:
        return set(json.loads(path.read_text()))
    except (OSError, ValueError):
        pass
    names: set[str] = set()
    pattern = re.compile(rb"(?<![A-Za-z0-9_])(xla_[a-z0-9_]{3,100})(?![A-Za-z0-9_])")
    for lib in jaxlib_libraries():
        if not os.path.basename(lib).startswith(("libjax_common", "_jax", "xla_cuda_plugin")):
            continue
        with open(lib, "rb") as f:
            data = f.read()
        names.update(m.decode() for m in pattern.findall(data))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(sorted(names)))
        os.replace(tmp, path)
    except OSError:
        pass
    return names


# ----------------------------------------------------------- DebugOptions types

_SCALAR_KIND = {1: "float", 2: "float", 3: "int", 4: "int", 5: "int", 6: "int", 7: "int",
                8: "bool", 9: "str", 13: "int", 15: "int", 16: "int", 17: "int", 18: "int"}


@functools.cache
def debug_option_types() -> dict[str, str]:
    """DebugOptions field name -> bool | int | float | str | enum | repeated.

    From the ``xla.DebugOptions`` descriptor compiled into jaxlib (ir/protos.py):
    the schema of the very XLA that will compile. Empty if it cannot be read;
    the flags are then taken untyped, as XLA_FLAGS text, and XLA checks them.
    """
    try:
        from ..ir import protos

        desc = protos.message_class("xla.DebugOptions").DESCRIPTOR
    except Exception:  # a jaxlib laid out differently: fall back to untyped flags
        return {}
    out = {}
    for f in desc.fields:
        if getattr(f, "is_repeated", False) or getattr(f, "label", 1) == 3:
            out[f.name] = "repeated"
        elif f.type == 14:
            out[f.name] = "enum"
        else:
            out[f.name] = _SCALAR_KIND.get(f.type, "str")
    return out
