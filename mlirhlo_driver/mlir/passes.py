"""The catalog of MLIR passes that the installed jaxlib really accepts.

MLIR's Python bindings cannot list registered passes, so the catalog is found
from jaxlib itself: every identifier-like string in jaxlib's shared libraries is
a candidate, and a candidate is a pass when ``PassManager.parse`` accepts it.
The anchor comes from how parsing behaves:

- ``builtin.module(P)`` fails with "restricted to 'OP'": P is anchored on OP;
- otherwise P runs on modules; nesting it under ``func.func`` is then tried in a
  forked child (isolate.forked), because a module-anchored pass nested there may
  abort the process (an LLVM fatal error, not an exception): success means P is
  op-agnostic. One child tries the names one after another until one kills it;
  the next child goes on after that name (jaxlib 0.12: 89 tries, 3 deaths).

Only each library's read-only data (``.rodata``, where string literals live) is
read: 21 of jaxlib 0.12's 331 MB. The scan takes about a second, and its result is
cached under ``$XDG_CACHE_HOME/mlirhlo-driver`` per jaxlib build (its version file
and its libraries' names and sizes, so a new environment with the same jaxlib
reuses it); reading the cache does not import jax.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from importlib import util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..resources import cache_dir

if TYPE_CHECKING:
    from .python_passes import PassSet

ANY = "any"  # op-agnostic: runs on whatever op its pass manager is nested on
MODULE = "builtin.module"
FUNC = "func.func"


@dataclass(frozen=True)
class PassInfo:
    name: str
    anchor: str          # "any", "builtin.module", "func.func", or another op name
    description: str = ""
    origin: str = "jaxlib"  # "jaxlib" (native) or "python"


# One-line descriptions of passes whose registrations jaxlib does not expose to
# Python. Names are only shown when jaxlib accepts them; this just adds text.
DESCRIPTIONS = {
    "canonicalize": "Canonicalize operations (folding and canonicalization patterns)",
    "cse": "Eliminate common sub-expressions",
    "inline": "Inline function calls",
    "symbol-dce": "Eliminate dead symbols",
    "symbol-privatize": "Mark symbols private",
    "sccp": "Sparse conditional constant propagation",
    "loop-invariant-code-motion": "Hoist loop invariant instructions outside of the loop",
    "loop-invariant-subset-hoisting": "Hoist loop invariant subset ops outside of the loop",
    "control-flow-sink": "Sink operations into conditional blocks",
    "remove-dead-values": "Remove dead values",
    "strip-debuginfo": "Strip debug info from all operations",
    "topological-sort": "Sort regions without SSA dominance in topological order",
    "trivial-dce": "Trivial dead code elimination",
    "print-ir": "Print IR on the debug stream",
    "print-op-stats": "Print statistics of operations",
    "view-op-graph": "Print Graphviz visualization of an operation",
    "snapshot-op-locations": "Generate new locations from the current IR",
    "sroa": "Scalar Replacement of Aggregates",
    "generate-runtime-verification": "Generate additional runtime op verification checks",
    "composite-fixed-point-pass": "Composite fixed point pass",
    "chlo-legalize-to-stablehlo": "Legalize CHLO to StableHLO",
    "stablehlo-aggressive-folder": "Fold StableHLO operations",
    "stablehlo-aggressive-simplification": "Canonicalize StableHLO operations",
    "stablehlo-canonicalize-dynamism": "Canonicalize dynamic StableHLO ops into static ops",
    "stablehlo-compatibility-expander": "Expand StableHLO ops for compatibility with older versions",
    "stablehlo-complex-math-expander": "Expand StableHLO complex math operations",
    "stablehlo-convert-to-signless": "Convert IR to signless integers",
    "stablehlo-legalize-composite-to-call": "Replace composite ops with a call to their decomposition",
    "stablehlo-legalize-deprecated-ops": "Legalize deprecated ops to well-supported ops",
    "stablehlo-legalize-qdq-to-quantized-op": "Fuse (de-quantize, float op, quantize) into a quantized op",
    "stablehlo-legalize-quant-to-math": "Convert from StableHLO quantized ops to primitive math ops",
    "stablehlo-legalize-quantized-op-to-qdq": "Decompose quantized StableHLO ops to (de-quantize, float op, quantize)",
    "stablehlo-legalize-to-vhlo": "Legalize StableHLO to VHLO",
    "stablehlo-legalize-to-linalg": "Legalize StableHLO to Linalg",
    "stablehlo-legalize-to-hlo": "Legalize StableHLO to MHLO",
    "hlo-legalize-to-stablehlo": "Legalize MHLO to StableHLO",
    "stablehlo-refine-arguments": "Refine the main function's argument shapes",
    "stablehlo-refine-shapes": "Refine shapes across a StableHLO program",
    "stablehlo-wrap-in-composite": "Wrap a non-composite StableHLO op in a composite op",
    "stablehlo-instrument-with-probe": "Instrument ops with probes of intermediate values",
    "stablehlo-target-independent-optimization": "Target-independent StableHLO optimizations",
    "vhlo-legalize-to-stablehlo": "Legalize VHLO to StableHLO",
    "vhlo-to-version": "Convert between VHLO versions",
    "expand-hlo-tuples": "Expand HLO tuple for the entry function of the module",
    "shape-legalize-to-stablehlo": "Legalize shape-related ops to StableHLO",
    "sdy-propagation-pipeline": "Shardy: import, propagate and export shardings",
    "sdy-import-pipeline": "Shardy: import pipeline",
    "sdy-export-pipeline": "Shardy: export pipeline",
    "sdy-basic-propagate": "Shardy: basic sharding propagation",
    "sdy-aggressive-propagate": "Shardy: aggressive sharding propagation",
    "sdy-op-priority-propagate": "Shardy: op-priority sharding propagation",
    "sdy-user-priority-propagate": "Shardy: user-priority sharding propagation",
    "sdy-close-shardings": "Shardy: close tensor shardings and drop replicated axes",
    "sdy-drop-sharding-and-mesh": "Shardy: drop shardings and meshes",
    "sdy-inline-meshes": "Shardy: inline meshes into shardings",
    "sdy-lift-inlined-meshes": "Shardy: lift inlined meshes to symbols",
    "gpu-kernel-outlining": "Outline gpu.launch bodies to kernel functions",
    "nvvm-attach-target": "Attach an NVVM target to gpu.module ops",
    "sparsification": "Automatically generate sparse tensor code from annotations",
}

_CANDIDATE = re.compile(rb"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
# A whole NUL-terminated string shaped like a pass name (findall over the data in C:
# splitting 331 MB on NULs into Python objects took 14 s).
_CANDIDATE_STRING = rb"(?<![^\0])[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?=\0|\Z)"  # the scan's; compiled then
_RESTRICTED = r"restricted to '([^']+)'"


def jaxlib_libraries() -> list[str]:
    """Every shared object in jaxlib's folder, at any depth, sorted (hidden names left out,
    as a glob would: os.walk, at half of glob's cost, runs at every --passes)."""
    spec = util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = list(spec.submodule_search_locations)[0]
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        found += [os.path.join(folder, f) for f in files if f.endswith(".so") and not f.startswith(".")]
    return sorted(found)


def jaxlib_cache_key() -> str:
    """16 hex digits naming this jaxlib build: its version file, and its libraries' paths
    inside the package and sizes. Not where it is installed nor when: every environment
    with the same jaxlib wheel shares what is cached under the key.

    Two zlib checksums: the name of a local cache file, not a security boundary, and an
    MLIR-only command that consults no stage cache loads no hashlib (OpenSSL, ~2 ms)."""
    import zlib

    data = bytearray()
    # jaxlib's version.py, read: importlib.metadata would cost ~20 ms of start-up,
    # and importing jaxlib is not needed to list the passes from the cache.
    spec = util.find_spec("jaxlib")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        try:
            data += Path(root, "version.py").read_bytes() + b"\0"
        except OSError:
            pass
    for lib in jaxlib_libraries():
        rel = os.path.relpath(lib, roots[0]) if roots else lib
        data += f"{rel}:{os.stat(lib).st_size}\0".encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def native_passes() -> list[PassInfo]:
    """Every pass jaxlib accepts, from the cache or a fresh scan."""
    import json

    path = cache_dir() / f"passes-{jaxlib_cache_key()}.json"
    cached = _cached_native_passes(path)
    if cached is not None:
        return cached
    with _scan_status():
        found = _scan_in_subprocess()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps([asdict(p) for p in found], indent=0))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home only costs a rescan next time
    return found


def _scan_status() -> Any:
    """A transient line on a terminal while the first scan of a jaxlib runs (a second or
    so); nothing otherwise."""
    import contextlib
    import sys

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status("listing this jaxlib's passes (once per jaxlib build)", spinner="dots")


def _cached_native_passes(path: Path | None = None) -> list[PassInfo] | None:
    """The catalogue a previous scan left, or None."""
    import json

    path = path or cache_dir() / f"passes-{jaxlib_cache_key()}.json"
    try:
        return [PassInfo(**row) for row in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        return None


def probe_pass(name: str) -> PassInfo | None:
    """The PassInfo of one name, as the full scan would record it, or None when jaxlib
    has no such pass: a parse, and for an op-agnostic pass one forked run."""
    from .._native import jaxlib as _jaxlib
    from .._native.fds import capture_fd2

    if not _CANDIDATE.fullmatch(name.encode()):
        return None
    with _jaxlib.ir_context(), capture_fd2():
        return _pass_info(name)


def _pass_info(name: str) -> PassInfo | None:
    """PassInfo of ``name``, or None if it is not a pass (in an active MLIR context)."""
    anchor = _parsed_anchor(name)
    if anchor == MODULE:
        anchor = ANY if _runs_nested_in_child(name) else MODULE
    return PassInfo(name, anchor, DESCRIPTIONS.get(name, "")) if anchor else None


def _parsed_anchor(name: str) -> str | None:
    """What parsing ``builtin.module(name)`` says: MODULE when it parses (it may yet be
    op-agnostic), the op it is restricted to, or None: no pass."""
    from jaxlib.mlir import passmanager

    try:
        passmanager.PassManager.parse(f"builtin.module({name})")
        return MODULE
    except ValueError as e:
        m = re.search(_RESTRICTED, str(e))
        return m.group(1) if m else None


def _scan_in_subprocess() -> list[PassInfo]:
    # The scan parses thousands of strings and forks; native code logs freely
    # while doing so. A child process keeps all of that away from the user.
    import json
    import subprocess

    from .._native import processes

    proc = subprocess.run(processes.python_command("mlirhlo_driver.mlir.passes"), capture_output=True,
                          text=True, check=False, env=processes.python_env())
    if proc.returncode != 0:
        from ..errors import DriverError

        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise DriverError(f"could not list jaxlib's passes: {tail}")
    return [PassInfo(**row) for row in json.loads(proc.stdout)]


def scan_native_passes() -> list[PassInfo]:
    from .._native import jaxlib as _jaxlib
    from .._native.fds import capture_fd2

    ctx = _jaxlib.ir_context()
    candidates: set[str] = set()
    for lib in jaxlib_libraries():
        candidates.update(m.decode() for m in re.findall(_CANDIDATE_STRING, _string_data(lib))
                          if 3 <= len(m) <= 64)
    # Parsing thousands of non-pass strings makes native code log; none of it is news.
    with ctx, capture_fd2():
        anchors = {name: a for name in sorted(candidates) if (a := _parsed_anchor(name)) is not None}
        nested = _run_nested_in_children([n for n, a in anchors.items() if a == MODULE])
    return [PassInfo(name, ANY if nested.get(name) else anchor, DESCRIPTIONS.get(name, ""))
            for name, anchor in anchors.items()]


def _string_data(lib: str) -> bytes:
    """What of a library can hold a pass's name: its ``.rodata`` section (string literals);
    the whole file when it is no ELF file or has no such section."""
    from ..ir.protos import elf_section

    try:
        section = elf_section(lib, b".rodata")
    except ValueError:
        section = None
    if section is not None:
        return section
    with open(lib, "rb") as f:
        return f.read()


def _runs_nested_in_child(name: str) -> bool:
    """Whether pass ``name`` parses and runs nested under func.func.

    Tried in a forked child (isolate.forked), which may abort safely. Running
    it on a trivial function also catches op-agnostic passes that need a symbol
    table (symbol-dce): for placement they are module passes.
    """
    import shutil
    import tempfile

    from .._native import isolate
    from .._native import jaxlib as _jaxlib

    ctx = _jaxlib.ir_context()
    # Some passes write files: snapshot-op-locations keeps an mlir_snapshot-*.tmp.mlir
    # in TMPDIR. The child's TMPDIR and cwd are a scratch dir, removed after it.
    scratch = tempfile.mkdtemp(prefix="mlirhlo-pass-probe-")
    try:
        # Forked whatever threads run here: a one-function pipeline uses no MLIR thread pool.
        return isolate.forked(_run_nested, ctx, name, scratch).ended == "returned"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_nested(ctx: Any, name: str, scratch: str) -> None:  # pragma: no cover - in the child
    from jaxlib.mlir import ir, passmanager

    os.environ["TMPDIR"] = scratch
    os.chdir(scratch)
    with ctx:
        pm = passmanager.PassManager.parse(f"builtin.module(func.func({name}))")
        pm.run(ir.Module.parse("func.func @f() { return }").operation)


_OUTCOMES = "outcomes"


def _run_nested_in_children(names: list[str]) -> dict[str, bool]:
    """:func:`_runs_nested_in_child` of each name, with one forked child for many names: it
    writes each outcome before the next try, so when one kills it the next child starts
    after that name. A fork per name cost 1.1-1.6 s of the scan on jaxlib 0.12."""
    import shutil
    import tempfile

    from .._native import isolate
    from .._native import jaxlib as _jaxlib

    ctx = _jaxlib.ir_context()
    out: dict[str, bool] = {}
    todo = list(names)
    while todo:
        scratch = tempfile.mkdtemp(prefix="mlirhlo-pass-probe-")
        try:
            isolate.forked(_run_each_nested, ctx, todo, scratch)
            with open(os.path.join(scratch, _OUTCOMES)) as f:
                done = [line.rstrip("\n").split("\t") for line in f]
        except OSError:
            done = []
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        out.update((name, ok == "returned") for name, ok in done)
        todo = todo[len(done):]
        if todo:  # the child died trying this one
            out[todo.pop(0)] = False
    return out


def _run_each_nested(ctx: Any, names: list[str], scratch: str) -> None:  # pragma: no cover - in the child
    fd = os.open(os.path.join(scratch, _OUTCOMES), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for name in names:
        try:
            _run_nested(ctx, name, scratch)
            ended = "returned"
        except Exception:  # noqa: BLE001 - a pass that fails nested is no op-agnostic pass
            ended = "raised"
        os.write(fd, f"{name}\t{ended}\n".encode())  # written before the next try can kill the child


def all_passes(python_passes: PassSet | None = None) -> Mapping[str, PassInfo]:
    """Every pass a pipeline may name, by name: jaxlib's and the Python passes of
    ``python_passes`` (None: ``PassSet.default()``, the built-in and installed ones).

    Looking a name up probes that one pass (a few ms) until the full catalogue is
    cached, and the answer is kept for later runs (:class:`_Probes`); iterating
    (listings, did-you-mean hints) scans all of jaxlib once (about a second, then
    cached). So the first ``--passes a,b`` in a new environment costs two probes,
    not the scan, and the next one neither.
    """
    from .python_passes import PassSet

    python = python_passes if python_passes is not None else PassSet.default()
    key = jaxlib_cache_key()
    cached = _cached_native_passes(cache_dir() / f"passes-{key}.json")
    full = {p.name: p for p in cached} if cached is not None else None
    probes = _Probes(cache_dir() / f"passes-probed-{key}.json") if full is None else _Probes(None)
    written: dict[str, PassInfo] = {}
    for p in python.values():
        native = full.get(p.name) if full is not None else probes.get(p.name)
        if native is not None:  # plugin files are refused on load; this catches the other origins
            from ..errors import InputError

            raise InputError(f"Python pass '{p.name}' (from {p.origin}) has the name of a native "
                             "jaxlib pass; it cannot replace it", hint="give the Python pass another name")
        written[p.name] = PassInfo(p.name, p.anchor, p.description, "python")
    return _Catalog(full, written, probes)


class _Probes:
    """One-name probes (:func:`probe_pass`), each made once and remembered at ``path`` (per
    jaxlib build, beside the catalogue): an ``opt --passes a,b`` in an environment whose
    catalogue was never listed forks for its op-agnostic names the first time only (the
    forks were ~10% of an MLIR-only command's wall). ``path`` None: remembered in memory."""

    def __init__(self, path: Path | None) -> None:
        import json

        self.path = path
        self.known: dict[str, PassInfo | None] = {}
        try:
            rows = json.loads(path.read_text()) if path is not None else {}
            self.known = {name: PassInfo(**row) if row is not None else None for name, row in rows.items()}
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # none yet, or unreadable: probed again

    def get(self, name: str) -> PassInfo | None:
        if name not in self.known:
            self.known[name] = probe_pass(name)
            self._write()
        return self.known[name]

    def _write(self) -> None:
        import json

        if self.path is None:
            return
        rows = {n: asdict(i) if i is not None else None for n, i in sorted(self.known.items())}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(rows, indent=0))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only home only costs the probe next time


class _Catalog(Mapping):
    """Native passes probed name by name until something needs them all."""

    def __init__(self, full: dict[str, PassInfo] | None, written: dict[str, PassInfo],
                 probes: _Probes | None = None) -> None:
        self._full = full
        self._written = written
        self._probes = probes if probes is not None else _Probes(None)

    def _everything(self) -> dict[str, PassInfo]:
        if self._full is None:
            self._full = {p.name: p for p in native_passes()}
        return {**self._full, **self._written}

    def __getitem__(self, name: str) -> PassInfo:
        if name in self._written:
            return self._written[name]
        if self._full is not None:
            return self._full[name]
        info = self._probes.get(name)
        if info is None:
            raise KeyError(name)
        return info

    def __iter__(self) -> Iterator[str]:
        return iter(self._everything())

    def __len__(self) -> int:
        return len(self._everything())


def load_plugins(files: Iterable[str], base: PassSet | None = None) -> PassSet:
    """``base`` (None: ``PassSet.default()``) with the passes of
    the plugin files ``files`` (``--load-pass-plugin``), a new set; a plugin pass that has
    the name of one of jaxlib's is refused at its line."""
    from .python_passes import PassSet

    base = base if base is not None else PassSet.default()
    return base.with_plugins(*files, reserved=lambda: {p.name for p in native_passes()})


if __name__ == "__main__":
    import json

    print(json.dumps([asdict(p) for p in scan_native_passes()]))
