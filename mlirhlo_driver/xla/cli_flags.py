"""XLA's command-line flag syntax, for the drop-in ``hlo-opt``, ``run_hlo_module``,
``multihost_hlo_runner`` and ``ptx-opt`` front-ends.

XLA's tools parse with ``tsl::Flags``: ``--name=value`` for every type, and for
booleans also a bare ``--name`` and ``--name=true|false|1|0``; unrecognised
words stay positional. This parser accepts that, and the spellings absl and
LLVM users type as well, so a script written for any of them runs unchanged:

- one dash or two (``-o -``, ``-platform=cpu``);
- ``--name value`` for flags that take a value (never for booleans, so
  ``--xla_gpu_dump_llvmir input.ll`` keeps ``input.ll`` an input);
- ``--noname`` for a boolean set to false (absl);
- ``-`` and ``_`` alike inside names (``--list_stages`` = ``--list-stages``);
- ``--xla_*`` DebugOptions anywhere on the line, before or after the inputs,
  typed from the DebugOptions schema inside jaxlib (see :func:`debug_option_types`);
- ``--`` ends the flags.

An unknown flag is a :class:`~mlirhlo_driver.errors.DriverError` naming the
closest known ones. Nothing here imports jax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import DriverError, FlagError, did_you_mean

_TRUE = ("true", "1")
_FALSE = ("false", "0")


@dataclass(frozen=True)
class Flag:
    """One tool flag, as XLA's tool declares it."""

    name: str                      # XLA's spelling (``list-stages``, ``reference_platform``)
    kind: str                      # bool | str | int | float
    default: Any
    help: str
    metavar: str = "VALUE"         # a word: FILE, NAME, N, DIR
    choices: tuple[str, ...] = ()  # accepted values (compared case-insensitively), if closed

    @property
    def key(self) -> str:
        return _norm(self.name)


@dataclass
class Parsed:
    values: dict[str, Any]                     # flag key -> value (defaults filled in)
    given: set[str] = field(default_factory=set)
    xla_flags: dict[str, Any] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)
    help: bool = False
    version: bool = False

    def __getitem__(self, name: str) -> Any:
        return self.values[_norm(name)]

    def was_given(self, name: str) -> bool:
        return _norm(name) in self.given


def _norm(name: str) -> str:
    return name.replace("-", "_")


def _convert(flag_name: str, kind: str, text: str, choices: tuple[str, ...] = ()) -> Any:
    if kind == "bool":
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise FlagError(f"--{flag_name}={text}: expected true or false")
    if kind == "int":
        if not re.fullmatch(r"[+-]?\d+", text.strip()):
            raise FlagError(f"--{flag_name}={text}: expected an integer")
        return int(text)
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise FlagError(f"--{flag_name}={text}: expected a number") from None
    if choices and text.lower() not in {c.lower() for c in choices}:
        raise FlagError(f"--{flag_name}={text}: expected one of " + ", ".join(choices),
                        hint=did_you_mean(text, choices))
    return text


def parse(argv: list[str], flags: list[Flag], *, xla_flags: bool = True) -> Parsed:
    """Split ``argv`` into the tool's flags, ``--xla_*`` DebugOptions and positionals."""
    by_key = {f.key: f for f in flags}
    out = Parsed(values={f.key: f.default for f in flags})
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--":
            out.positionals.extend(argv[i:])
            break
        if word == "-" or not word.startswith("-") or re.fullmatch(r"-\d.*", word):
            out.positionals.append(word)
            continue
        body = word[2:] if word.startswith("--") else word[1:]
        name, eq, value = body.partition("=")
        key = _norm(name)
        if key in ("help", "h", "helpfull", "version"):
            if eq:
                spelled = word.partition("=")[0]
                raise FlagError(f"{spelled} takes no value", hint=f"give {spelled} alone")
            if key == "version":
                out.version = True
            else:
                out.help = True
            continue
        flag = by_key.get(key)
        negated = False
        if flag is None and key.startswith("no") and not eq:
            candidate = by_key.get(key[2:])
            if candidate is not None and candidate.kind == "bool":
                flag, negated = candidate, True
        if flag is not None:
            if flag.kind == "bool":
                out.values[flag.key] = (not negated) if not eq else _convert(flag.name, "bool", value)
            else:
                if not eq:
                    if i >= len(argv):
                        raise FlagError(f"--{flag.name} needs a value", hint=f"--{flag.name}={flag.metavar}")
                    value = argv[i]
                    i += 1
                out.values[flag.key] = _convert(flag.name, flag.kind, value, flag.choices)
            out.given.add(flag.key)
            continue
        if xla_flags and (key.startswith("xla_") or (key.startswith("noxla_") and not eq)):
            i = _take_xla_flag(key, eq, value, argv, i, out)
            continue
        known = [f.name for f in flags] + ["help", "version"]
        close = did_you_mean(name, known)
        raise FlagError(f"unknown flag '{word.split('=')[0]}'",
                        hint=close.replace("'", "'--", 1).replace(", '", ", '--") if close else "see --help")
    return out


def _take_xla_flag(key: str, eq: str, value: str, argv: list[str], i: int, out: Parsed) -> int:
    """One ``--xla_*`` DebugOptions flag; returns the next index."""
    from . import flags as xf

    types = xf.debug_option_types()
    negated = key.startswith("noxla_")
    name = key[2:] if negated else key
    kind = types.get(name) or xf.DRIVER_READ.get(name)
    tpu_kind = xf.tpu_option_kind(name) if types and kind is None else None
    if tpu_kind is not None:
        # libtpu's per-compile option: a boolean as XLA's; other values as text, checked
        # with the platform (flags.check_names)
        kind = "bool" if tpu_kind == "bool" else "tpu"
    elif types and kind is None:
        # a TPU-looking name is matched against libtpu's options too (where libtpu is installed)
        close = [*types, *sorted(xf.tpu_option_names())] if name.startswith(("xla_tpu_", "xla_jf_")) else types
        raise FlagError(f"unknown XLA flag '--{name}'",
                        hint=did_you_mean(name, close) or "see XLA's DebugOptions")
    if negated:
        if kind not in (None, "bool"):
            raise FlagError(f"--no{name}: --{name} is not a boolean")
        out.xla_flags[name] = False
        return i
    if not eq:
        if kind in (None, "bool"):
            out.xla_flags[name] = True  # tsl: a bare boolean flag is true
            return i
        if i >= len(argv):
            raise FlagError(f"--{name} needs a value", hint=f"--{name}=VALUE")
        value, i = argv[i], i + 1
    if kind == "bool":
        out.xla_flags[name] = _convert(name, "bool", value)
    elif kind == "int":
        out.xla_flags[name] = _convert(name, "int", value)
    elif kind == "float":
        out.xla_flags[name] = _convert(name, "float", value)
    elif kind == "str":
        out.xla_flags[name] = value
    else:  # enums, repeated fields, libtpu's options: XLA's own flag parser reads the text
        out.xla_flags[name] = xf.parse_value(value)
    return i


def usage(prog: str, synopsis: str, description: str, flags: list[Flag]) -> str:
    """Help text: every flag with a word metavariable and its default, then XLA's own flags."""
    rows = []
    for f in flags:
        if f.kind == "bool":
            spelled = f"--{f.name}"
            default = " (default: true)" if f.default else ""
        else:
            spelled = f"--{f.name}={f.metavar}"
            default = f" (default: {f.default})" if f.default not in (None, "") else ""
        choices = f" One of: {', '.join(f.choices)}." if f.choices else ""
        rows.append((spelled, f.help + choices + default))
    rows.append(("--xla_NAME=VALUE", "Any XLA DebugOptions flag, anywhere on the line "
                                     "(booleans: --xla_NAME, --noxla_NAME)."))
    rows.append(("--version", "Print the version and exit."))
    rows.append(("--help", "Print this help and exit."))
    width = max(len(r[0]) for r in rows) + 2
    lines = [f"usage: {prog} {synopsis}", "", description.strip(), "",
             "Flags (--name=VALUE or --name VALUE; one dash or two; booleans also --noNAME):"]
    lines += [f"  {s:<{width}}{h}" for s, h in rows]
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------- platforms

# XLA's PlatformUtil names (case-insensitive), and what each is here.
PLATFORM_ALIASES = {"cpu": "cpu", "host": "cpu", "gpu": "cuda", "cuda": "cuda", "tpu": "tpu",
                    "interpreter": "interpreter"}


def platform(name: str, flag: str = "platform") -> str:
    """XLA's platform spellings -> ``cpu``, ``cuda``, ``tpu`` or ``interpreter``."""
    got = PLATFORM_ALIASES.get(name.strip().lower())
    if got is None:
        raise DriverError(f"--{flag}={name}: unknown platform",
                          hint=did_you_mean(name.lower(), PLATFORM_ALIASES)
                          or "one of CPU, Host, CUDA, GPU, TPU, Interpreter")
    return got
