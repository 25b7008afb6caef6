"""A content-addressed cache of ``mlirhlo opt`` results.

The same ``opt`` command over the same bytes gives the same output (XLA's stages
are byte-stable), so a repeat is served from disk without importing jaxlib.
This module is import-light on purpose: the lookup runs before any heavy import.

What is promised:
- The key covers everything the output depends on: the input files' bytes and
  the names they were given as, every ``opt`` option, the XLA flags (command
  line, ``XLA_FLAGS``, the ``--debug-options-file`` content, files flags name),
  the pipeline files, GPU spec files, pass plugins (file contents, installed
  entry points), and the versions of Python, the driver (its source files'
  sizes and mtimes too, so an edited checkout never serves stale output),
  jax, jaxlib and the CUDA plugin (their native libraries' sizes and mtimes).
- A hit writes exactly what the miss wrote: the same stdout bytes, the same
  files and the same stderr text, in the same order.
- Entries are written to a temp file and renamed into place, and carry a
  SHA-256 of their body: concurrent writers of one key are safe, and a corrupt
  or truncated entry is never served (it is deleted and rebuilt).
- The directory is ``MLIRHLO_CACHE_DIR``, else ``$XDG_CACHE_HOME/mlirhlo-driver/stages``,
  else ``~/.cache/mlirhlo-driver/stages``. Its size is capped by
  ``MLIRHLO_CACHE_MAX_BYTES`` (default 512 MiB): the least recently used
  entries go first (a hit refreshes the entry's mtime).
- Only deterministic outputs are cached: not with ``--timing``, IR printing,
  ``--ir-dump-dir``, listings, stdin or JAX-function inputs, and never a failure.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FORMAT = 1
MAGIC = b"mlirhlo-cache 2\n"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
_SUFFIX = ".entry"
# Environment variables an output can depend on (logging level: what stderr shows).
_ENV_KEYS = ("XLA_FLAGS", "TF_CPP_MIN_LOG_LEVEL", "TF_CPP_MAX_VLOG_LEVEL", "JAX_PLATFORMS",
             "JAX_ENABLE_X64", "CUDA_VISIBLE_DEVICES")


def cache_dir() -> Path:
    explicit = os.environ.get("MLIRHLO_CACHE_DIR")
    if explicit:
        return Path(explicit)
    from ..resources import cache_dir as driver_cache

    return driver_cache("stages")


def max_bytes() -> int:
    value = os.environ.get("MLIRHLO_CACHE_MAX_BYTES")
    if value:
        try:
            return max(0, int(value))
        except ValueError:
            pass
    return DEFAULT_MAX_BYTES


# -------------------------------------------------------------------- the key

class _Hasher:
    """A SHA-256 over labelled, length-prefixed parts (no two inputs collide by concatenation)."""

    def __init__(self) -> None:
        import hashlib

        self._h = hashlib.sha256(b"mlirhlo-driver opt cache %d\n" % FORMAT)

    def add(self, label: str, data: bytes | str | None) -> None:
        raw = b"\x00none" if data is None else (data.encode() if isinstance(data, str) else data)
        head = label.encode()
        self._h.update(len(head).to_bytes(4, "little") + head + len(raw).to_bytes(8, "little"))
        self._h.update(raw)

    def add_file(self, label: str, path: str | os.PathLike[str]) -> None:
        try:
            with open(path, "rb") as f:
                self.add(label, f.read())
        except OSError as e:
            self.add(label + ":unreadable", f"{path}: {e.errno}")

    def add_stat(self, label: str, path: str | os.PathLike[str] | None) -> None:
        try:
            st = os.stat(path) if path is not None else None
        except OSError:
            st = None
        self.add(label, None if st is None else f"{path} {st.st_size} {st.st_mtime_ns}")

    def hexdigest(self) -> str:
        return self._h.hexdigest()


_UNCACHEABLE_FLAGS = ("timing", "print_ir_after_all", "print_ir_after_change", "print_ir_before",
                      "print_ir_after", "print_ir_after_failure", "ir_dump_dir", "list_stages",
                      "list_passes", "args")


def opt_key(params: dict[str, Any], extra: list[str]) -> str | None:
    """The key of an ``opt`` command, or None when its output must not be cached.

    ``params``: the parsed options of ``opt`` (name -> value); ``extra``: the
    words typer left over (``--xla_*`` flags).
    """
    if any(params.get(name) for name in _UNCACHEABLE_FLAGS):
        return None
    if params.get("input_format") == "jax":
        return None
    words = list(params.get("inputs") or [])
    if "-" in words:
        return None  # stdin is read once, not hashed
    inputs = [w for w in words if not w.startswith("-")]
    if not inputs:
        return None  # no input is a usage error
    h = _Hasher()
    _add_environment(h)
    for word in inputs:
        files = _input_files(word)
        if files is None:
            return None  # a JAX function, or a path that does not exist (an error)
        h.add("input", word)
        for path in files:
            h.add("input-file", path)
            h.add_file("input-bytes", path)
    for name in sorted(params):
        if name != "inputs":
            h.add("param:" + name, repr(params[name]))
    h.add("extra", repr([w for w in words if w.startswith("-")] + list(extra)))
    for word in extra:  # a flag naming a file (autotune results, a data dir): its content
        _add_flag_value(h, word.partition("=")[2])
    h.add("env", repr([(k, os.environ.get(k)) for k in _ENV_KEYS]))
    for flag in (os.environ.get("XLA_FLAGS") or "").split():
        _add_flag_value(h, flag.partition("=")[2])
    for name in ("debug_options_file", "autotune_results", "pipeline_file"):
        if params.get(name):
            h.add_file(name, params[name])
            if name == "debug_options_file":
                for line in Path(params[name]).read_text(errors="replace").splitlines() \
                        if os.path.isfile(params[name]) else []:
                    _add_flag_value(h, line.partition(":")[2].strip().strip('"'))
    from ..resources import data_dir

    if params.get("pipeline_spec") or params.get("passes") or params.get("pipeline_file"):
        for path in sorted(data_dir("pipelines").glob("*.pipeline")):
            h.add_file("pipeline:" + path.name, path)
        _add_entry_points(h)
    for plugin in params.get("load_pass_plugin") or []:
        h.add_file("plugin", plugin)
    if params.get("platform") or params.get("gpu_spec") or extra:
        for path in sorted(data_dir("gpu_specs").glob("*.txtpb")):
            h.add_file("spec:" + path.name, path)
        for spec in (params.get("gpu_spec") or "").split(","):
            if spec.strip() and os.path.isfile(spec.strip()):
                h.add_file("spec-file", spec.strip())
    if str(params.get("platform") or "").lower() == "cuda" or params.get("gpu_spec"):
        from ..cuda.binaries import tool_paths

        # The ptxas XLA runs and the nvdisasm 'sass' runs: which ones, and which builds.
        for path in tool_paths():
            h.add_stat("cuda-tool", path)
    return h.hexdigest()


def _input_files(word: str) -> list[str] | None:
    """The files an input word reads, in a stable order; None if it names none."""
    if os.path.isfile(word):
        return [word]
    if os.path.isdir(word):
        found = []
        for root, dirs, files in os.walk(word):
            dirs.sort()
            found.extend(os.path.join(root, f) for f in sorted(files))
        return found
    if any(c in word for c in "*?["):
        import glob

        matches = sorted(glob.glob(word))
        if matches:
            out: list[str] = []
            for m in matches:
                out.extend(_input_files(m) or [])
            return out
    return None


def _add_flag_value(h: _Hasher, value: str) -> None:
    """A flag value that names a file or a CUDA data directory: what lies there."""
    if not value or len(value) > 4096:
        return
    if os.path.isfile(value):
        h.add_file("flag-file:" + value, value)
    elif os.path.isdir(value):
        for rel in ("nvvm/libdevice/libdevice.10.bc", "bin/ptxas", "bin/nvdisasm"):
            h.add_stat("flag-dir", os.path.join(value, rel))


def _add_environment(h: _Hasher) -> None:
    """Python, the driver, jax, jaxlib, the CUDA plugin and pip's CUDA tools.

    Files are fingerprinted by size and mtime, which any install or edit
    changes; importlib.metadata would cost more than the whole lookup (it
    imports the email package).
    """
    import importlib.util

    from .. import __version__
    from .._native.jaxlib import native_library_path
    from ..cuda.tools import LIBDEVICE, PIP_TOOLS, _nvidia_roots

    h.add("python", sys.version)
    h.add("driver", __version__)
    # Every file of the package, in every subpackage (its code, specs, pipelines, vendored
    # JavaScript): an edit or reinstall at the same version is another driver.
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for root, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            h.add_stat("driver-file", os.path.join(root, name))
    for library in ("jaxlib", "cuda_plugin"):
        h.add_stat("library:" + library, native_library_path(library))
    for top in ("jax", "jaxlib"):
        try:
            spec = importlib.util.find_spec(top)  # finds, runs nothing
        except (ImportError, ValueError):
            spec = None
        for root in (spec.submodule_search_locations or []) if spec else []:
            h.add_stat(f"{top}/version.py", os.path.join(root, "version.py"))
    # pip's CUDA tools of every CUDA major (nvidia/cuda_nvcc, nvidia/cu13): which are used
    # follows the plugin, whose library is fingerprinted above.
    for root in _nvidia_roots():
        for tools in PIP_TOOLS.values():
            for rel in (os.path.join("bin", "ptxas"), LIBDEVICE):
                h.add_stat(f"nvidia/{tools.subdir}/{rel}", os.path.join(root, tools.subdir, rel))


def _add_entry_points(h: _Hasher) -> None:
    from ..mlir.python_passes import entry_point_specs

    h.add("entry-points", repr([tuple(e) for e in entry_point_specs()]))


# ------------------------------------------------------------------ entries

def _entry_path(key: str) -> Path:
    return cache_dir() / key[:2] / (key + _SUFFIX)


# An entry: MAGIC, the records' data one after another, the header (a line
# "kind<TAB>size<TAB>path" per record), the header's length (8 bytes), and the
# SHA-256 (hex) of all that. Data comes first so that an entry is written as the
# command runs (_Spool): nothing of it is held in memory until the end.
_TRAILER = 8 + 64


def _decode(blob: bytes) -> list[tuple[str, str | None, bytes]] | None:
    """The records of an entry, or None for anything not exactly as written."""
    import hashlib

    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _TRAILER:
        return None
    if hashlib.sha256(blob[:-64]).hexdigest().encode() != blob[-64:]:
        return None
    try:
        n = int.from_bytes(blob[-_TRAILER:-64], "little")
        end = len(blob) - _TRAILER - n
        if end < len(MAGIC):
            return None
        header = blob[end:-_TRAILER].decode("utf-8", "surrogateescape")
        offset, records = len(MAGIC), []
        for line in header.split("\n") if header else []:
            kind, size, path = line.split("\t", 2)
            records.append((kind, path or None, blob[offset:offset + int(size)]))
            offset += int(size)
    except ValueError:
        return None
    return records if offset == end else None


def lookup(key: str) -> list[tuple[str, str | None, bytes]] | None:
    """The stored records for ``key``; a bad entry is removed and reads as a miss."""
    path = _entry_path(key)
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    records = _decode(blob)
    if records is None:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # least recently *used*
    return records


class _Spool:
    """An entry being written as the command runs: each record's data goes to a
    temp file in the cache directory at once (only its kind, size and path stay
    in memory), and :meth:`commit` renames the finished entry into place.

    A cache that cannot be written (read-only, full) is skipped silently: it
    must never make a command fail.
    """

    def __init__(self, key: str) -> None:
        import hashlib
        import tempfile

        self.key = key
        self._hash = hashlib.sha256()
        self._header: list[str] = []
        self._file: Any = None
        self._tmp: str | None = None
        self.path = _entry_path(key)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, self._tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=self.path.parent)
            self._file = os.fdopen(fd, "wb")
            self._write(MAGIC)
            self._file.flush()
        except OSError:
            self.abort()

    @property
    def written(self) -> int:
        """Bytes of the entry on disk so far (0 once aborted)."""
        return self._file.tell() if self._file is not None else 0

    def _write(self, data: bytes) -> None:
        self._file.write(data)
        self._hash.update(data)

    def append(self, record: tuple[str, str | None, bytes]) -> None:
        kind, path, data = record
        if self._file is None:
            return
        if "\n" in (path or ""):
            self.abort()  # the header is line-based: such an output is not cached
            return
        try:
            self._write(data)
            self._file.flush()  # on disk now, not in a buffer that grows with the batch
        except OSError:
            self.abort()
            return
        self._header.append(f"{kind}\t{len(data)}\t{path or ''}")

    def commit(self) -> None:
        """Finish the entry and put it in place, then evict old entries above the cap."""
        if self._file is None:
            return
        header = "\n".join(self._header).encode("utf-8", "surrogateescape")
        try:
            self._write(header + len(header).to_bytes(8, "little"))
            self._file.write(self._hash.hexdigest().encode())
            self._file.close()
            self._file = None
            os.replace(self._tmp, self.path)
        except OSError:
            self.abort()
            return
        evict(max_bytes())

    def abort(self) -> None:
        """Drop the partial entry (a failed command, or a cache that cannot be written)."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)
            self._tmp = None


def store(key: str, records: list[tuple[str, str | None, bytes]]) -> None:
    """Write an entry for ``records`` atomically, then evict old entries above the size cap."""
    spool = _Spool(key)
    for record in records:
        spool.append(record)
    spool.commit()


def _entries() -> list[tuple[float, int, Path]]:
    """(mtime, size, path) of every entry."""
    out = []
    root = cache_dir()
    if not root.is_dir():
        return out
    for sub in os.scandir(root):
        if not sub.is_dir():
            continue
        for entry in os.scandir(sub.path):
            if entry.name.endswith(_SUFFIX):
                with contextlib.suppress(OSError):
                    st = entry.stat()
                    out.append((st.st_mtime, st.st_size, Path(entry.path)))
    return out


def evict(limit: int) -> None:
    """Delete least recently used entries until the total is at most ``limit`` bytes."""
    entries = sorted(_entries())
    total = sum(size for _, size, _ in entries)
    for _, size, path in entries:
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            path.unlink()
        total -= size


def info() -> dict[str, Any]:
    entries = _entries()
    return {"directory": str(cache_dir()), "entries": len(entries),
            "bytes": sum(size for _, size, _ in entries), "max_bytes": max_bytes()}


def clear() -> int:
    """Remove every entry (and stale temp files); the number of entries removed."""
    removed = 0
    root = cache_dir()
    for _, _, path in _entries():
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    if root.is_dir():
        for tmp in root.glob("*/.*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()
    return removed


# ------------------------------------------------------- recording, replaying

class _Tee:
    """sys.stderr as the command sees it: written through, and recorded."""

    def __init__(self, stream: Any, records: Any) -> None:  # anything with append((kind, path, data))
        self._stream, self._records = stream, records

    def write(self, text: str) -> int:
        self._records.append(("stderr", None, text.encode("utf-8", "surrogateescape")))
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def recording(key: str | None) -> Iterator[_Spool | None]:
    """Within the block, what ``opt`` writes is recorded; stored if the block succeeds.

    Each output goes into the entry's file as it is written (a batch's modules
    one by one), so memory does not grow with the number of modules; the entry
    becomes visible, complete, only when the block succeeds. Yields the spool
    (None when nothing is recorded).
    """
    if key is None:
        yield None
        return
    from .. import outputs

    spool = _Spool(key)
    saved_stderr, saved_record = sys.stderr, outputs.recorder
    sys.stderr = _Tee(saved_stderr, spool)  # type: ignore[assignment]
    outputs.recorder = spool  # type: ignore[assignment]
    ok = False
    try:
        yield spool
        ok = True
    finally:
        sys.stderr = saved_stderr
        outputs.recorder = saved_record
        if ok:
            spool.commit()
        else:
            spool.abort()


def replay(records: list[tuple[str, str | None, bytes]]) -> None:
    """Write the recorded outputs again, in their order, the way the miss wrote them."""
    from .. import outputs

    for kind, path, data in records:
        if kind == "stderr":
            sys.stderr.write(data.decode("utf-8", "surrogateescape"))
        elif kind == "file":
            outputs.write_atomic(path, data)
        elif kind == "stdout-text":
            outputs.write_stdout(data.decode("utf-8", "surrogateescape"))
        elif kind == "stdout-bytes":
            outputs.write_stdout(data)
    sys.stderr.flush()
