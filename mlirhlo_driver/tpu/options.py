"""libtpu's per-compile options (its TPU compilation environment), by name and kind, read
without a chip: the flags a TPU compile takes as ``--xla_*`` beside XLA's DebugOptions.

jaxlib's DebugOptions schema does not hold them (``xla_tpu_max_hbm_size_mib``,
``xla_jf_*``): libtpu keeps them in its own ``TpuCompilationEnvironment``, which a compile
dumped with ``xla_dump_to`` writes out whole (``tpu_comp_env.txt``, one ``name: value`` per
field, ~770 fields with libtpu 0.0.50.1), beside the ``flagfile`` of every flag libtpu knows
(1,449, the process-wide ones too: ``xla_jf_dump_to`` is read once, from
``LIBTPU_INIT_ARGS``). So one tiny compile in a libtpu process of the driver's, once per
libtpu version, gives both lists; they are cached as JSON beside the XLA-flag list.

Per-compile options go through ``CompileOptions.env_option_overrides`` like DebugOptions;
libtpu parses each value with its own flag parser (a string ``"60"`` works for an integer
field) and refuses a bad one with ``Failed to parse 'X' into flag NAME``. A kind here comes
from the dumped default: ``bool``, ``int``, ``float``, ``str``, ``enum`` (an identifier such as
``AUTO``) or ``spec`` (a per-generation setting, ``name { spec: "..." }``, given as text).
An integer default may belong to a floating-point field: ``int`` takes any number, and libtpu
has the last word.

Never in the user's process: XLA there ends the process on a TPU-only name in ``XLA_FLAGS``
("Unknown flag in XLA_FLAGS"), so such names are read by the driver and applied per compile.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass

from ..errors import DriverError


@dataclass(frozen=True)
class TpuOptions:
    """libtpu's option names: ``per_compile`` (name -> kind) and ``process_wide`` (the flagfile's
    names that are not per-compile: LIBTPU_INIT_ARGS only)."""

    libtpu: str
    per_compile: dict[str, str]
    process_wide: frozenset[str]


_FIELD = re.compile(r"^([a-z][a-z0-9_]*)(?:: (.*)| \{)$")


def parse_comp_env(text: str) -> dict[str, str]:
    """``tpu_comp_env.txt`` (a text proto): top-level field name -> kind."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _FIELD.match(line)  # nested lines are indented: only top-level fields match
        if not m:
            continue
        name, value = m.group(1), m.group(2)
        if value is None:
            kind = "spec"
        elif value in ("true", "false"):
            kind = "bool"
        elif value.startswith('"'):
            kind = "str"
        elif re.fullmatch(r"-?\d+", value):
            kind = "int"
        elif re.fullmatch(r"-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|-?inf|nan", value):
            kind = "float"
        else:
            kind = "enum"
        out[name] = kind
    return out


def parse_flagfile(text: str) -> set[str]:
    """libtpu's dumped ``flagfile`` (``--name=value`` lines): the names."""
    return set(re.findall(r"^--([A-Za-z0-9_]+)=", text, re.M))


def _probe(workdir: str) -> tuple[str, str]:
    """In a libtpu process: compile a one-op module for v5e:1x1 dumped into ``workdir``; the
    texts of its ``tpu_comp_env.txt`` and ``flagfile``."""
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib

    text = ("func.func public @main(%arg0: tensor<8x128xf32>) -> tensor<8x128xf32> {\n"
            "  %0 = stablehlo.add %arg0, %arg0 : tensor<8x128xf32>\n  return %0 : tensor<8x128xf32>\n}\n")
    devices = _jaxlib.tpu_compile_only_devices("v5e:1x1", (1, 1), 1)
    with _jaxlib.ir_context():
        module = ir.Module.parse(text)
        opts = _jaxlib.compile_options(env_overrides=[], dump_to=workdir)
        _jaxlib.compile_executable(module, devices[:1], opts)
    found = {}
    for name in os.listdir(workdir):
        for suffix in ("tpu_comp_env.txt", "flagfile"):
            if name.endswith("." + suffix):
                with open(os.path.join(workdir, name)) as f:
                    found[suffix] = f.read()
    return found.get("tpu_comp_env.txt", ""), found.get("flagfile", "")


@functools.cache
def options() -> TpuOptions | None:
    """libtpu's options, from the cache or one probe compile; None without libtpu (or where
    its dump holds no compilation environment: the names are then left to libtpu)."""
    from .._native import libtpu

    found = libtpu.in_use()
    if found is None:
        return None
    from ..resources import cache_dir

    path = cache_dir() / f"tpu-options-{found.version}.json"
    try:
        data = json.loads(path.read_text())
        return TpuOptions(found.version, dict(data["per_compile"]), frozenset(data["process_wide"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    comp_env, flagfile = _run_probe()
    per_compile = parse_comp_env(comp_env)
    if not per_compile:
        return None
    process_wide = frozenset(parse_flagfile(flagfile) - set(per_compile))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"per_compile": per_compile, "process_wide": sorted(process_wide)}, indent=0))
        os.replace(tmp, path)
    except OSError:
        pass
    return TpuOptions(found.version, per_compile, process_wide)


def _run_probe() -> tuple[str, str]:
    import atexit
    import shutil
    import tempfile

    from .._native import isolate
    from .._native import jaxlib as _jaxlib

    # libtpu's environment as a TPU compile's (quiet, nothing left in /tmp: its TMPDIR is
    # removed at exit); a process of its own, started once per libtpu version.
    base = tempfile.mkdtemp(prefix="mlirhlo-tpu-options-")
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    os.mkdir(os.path.join(base, "tmp"))
    os.mkdir(os.path.join(base, "dump"))
    env = {**_jaxlib.TPU_COMPILE_ENV, "TMPDIR": os.path.join(base, "tmp")}
    try:
        return isolate.call(_probe, (os.path.join(base, "dump"),), what="libtpu's option list", env=env,
                            preload=_jaxlib.MLIR_PRELOAD, timeout=300)
    except DriverError:
        return "", ""
    finally:
        shutil.rmtree(os.path.join(base, "dump"), ignore_errors=True)


def kind(name: str) -> str | None:
    """The kind of libtpu's per-compile option ``name`` (None: not one, or no libtpu)."""
    found = options()
    return found.per_compile.get(name) if found is not None else None
