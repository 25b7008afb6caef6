"""The stage cache: what any door computed for a (program, target, stage), kept by content.

Every door (``opt``, ``kernels``, ``diff``, the XLA-named tools, the Python API) asks the
compile core (core/compiled.py) for stages, and the core asks here first. So a stage the
command line computed is served to a notebook, and the other way round.

What is promised:
- The key is content, never a command line: the program (its input bytes and how they
  were read, or its module's bytecode; the pass pipeline, its files and plugins), the
  target (platform, the GPU spec's text, the XLA flags with the content of the files they
  name, the CUDA tools in use), the stage and its options, and the environment: Python,
  the driver (its files' sizes and mtimes, so an edited checkout never serves stale
  output), jax, jaxlib and the CUDA plugin (their native libraries' sizes and mtimes) and
  pip's CUDA tools. Computing it imports no jax or jaxlib: a hit is served before either
  is loaded.
- An entry holds a stage's output exactly as the miss produced it (text, bytes, or
  {part: bytes}) and the notes the compile gave, so a hit says the same.
- Entries are written to a temp file and renamed into place, and carry a SHA-256 of
  their body: concurrent writers of one key are safe, and a corrupt or truncated entry is
  never served (it is deleted and rebuilt). A cache that cannot be written is skipped.
- The directory is ``MLIRHLO_CACHE_DIR``, else ``$XDG_CACHE_HOME/mlirhlo-driver/stages``,
  else ``~/.cache/mlirhlo-driver/stages``. Its size is capped by ``MLIRHLO_CACHE_MAX_BYTES``
  (default 512 MiB): the least recently used entries go first (a hit refreshes the
  entry's mtime).
- Failures are never cached, nor what depends on the run rather than the content
  (timing tables, IR printed around passes).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 2
MAGIC = b"mlirhlo-cache 3\n"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
_SUFFIX = ".entry"
# Environment variables an output can depend on besides XLA_FLAGS, which the target's
# flags already hold: what jax lowers (x64) and which devices XLA sees.
_ENV_KEYS = ("JAX_PLATFORMS", "JAX_ENABLE_X64", "CUDA_VISIBLE_DEVICES")


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

        self._h = hashlib.sha256(b"mlirhlo-driver stage cache %d\n" % FORMAT)

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


@functools.lru_cache(maxsize=1)
def _installed() -> str:
    h = _Hasher()
    _add_environment(h)
    return h.hexdigest()


def environment() -> str:
    """The environment's fingerprint (hex): Python, the driver's files, jax, jaxlib, the
    CUDA plugin, pip's CUDA tools and the environment variables outputs depend on. The
    files are taken once per process (``environment.cache_clear()`` takes them again: a
    process that outlives an edit or an install, ``mlirhlo watch``); the variables each
    time (a notebook may set them after its first compile)."""
    h = _Hasher()
    h.add("installed", _installed())
    h.add("env", repr([(k, os.environ.get(k)) for k in _ENV_KEYS]))
    return h.hexdigest()


environment.cache_clear = _installed.cache_clear  # type: ignore[attr-defined]


def digest(*parts: tuple[str, bytes | str | None]) -> str:
    """A SHA-256 (hex) over labelled parts (no two lists of parts collide by concatenation)."""
    h = _Hasher()
    for label, data in parts:
        h.add(label, data)
    return h.hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """A file's content as a digest part; an unreadable file is its path and errno."""
    h = _Hasher()
    h.add_file("file", path)
    return h.hexdigest()


def stat_digest(path: str | os.PathLike[str] | None) -> str:
    """An installed file by its path, size and date (a tool: ptxas, nvdisasm)."""
    h = _Hasher()
    h.add_stat("stat", path)
    return h.hexdigest()


# ------------------------------------------------------------------ stage outputs

# An output's records: "str" (text) or "bytes" (one record); a {part: bytes} output is a
# "parts" record then one "part" record per part, named by its path field; "note" records
# carry what the compile said.
Output = Any  # str | bytes | dict[str, bytes]


def put_output(key: str, data: Output, notes: list[str] | tuple[str, ...] = (), printed: str = "") -> None:
    """Keep a stage's output under ``key``, with the notes its compile gave and what its
    program's pipeline printed besides IR (a pass that prints), so a hit says the same."""
    records: list[tuple[str, str | None, bytes]] = []
    if isinstance(data, str):
        records.append(("str", None, data.encode("utf-8", "surrogateescape")))
    elif isinstance(data, bytes):
        records.append(("bytes", None, data))
    elif isinstance(data, dict):
        records.append(("parts", None, b""))
        records += [("part", name, part if isinstance(part, bytes) else part.encode()) for name, part in data.items()]
    else:
        raise TypeError(f"a stage output is str, bytes or dict, not {type(data).__name__}")
    records += [("note", None, n.encode("utf-8", "surrogateescape")) for n in notes]
    if printed:
        records.append(("printed", None, printed.encode("utf-8", "surrogateescape")))
    store(key, records)


@dataclass(frozen=True)
class Entry:
    """Where an output will be kept, and what is kept beside it (put_output's arguments);
    picklable, so a worker's output can be kept by the process that finishes it."""

    key: str
    notes: tuple[str, ...] = ()
    printed: str = ""


def put_entry(entry: Entry | None, data: Output) -> None:
    """:func:`put_output` for an :class:`Entry` (None: not cached)."""
    if entry is not None:
        put_output(entry.key, data, entry.notes, entry.printed)


def get_output(key: str) -> tuple[Output, list[str], str] | None:
    """``(output, notes, printed)`` kept under ``key`` (see :func:`put_output`), or None."""
    records = lookup(key)
    if not records:
        return None
    data: Output = None
    notes = []
    printed = ""
    for kind, path, raw in records:
        if kind == "str":
            data = raw.decode("utf-8", "surrogateescape")
        elif kind == "bytes":
            data = raw
        elif kind == "parts":
            data = {}
        elif kind == "part" and isinstance(data, dict) and path is not None:
            data[path] = raw
        elif kind == "note":
            notes.append(raw.decode("utf-8", "surrogateescape"))
        elif kind == "printed":
            printed = raw.decode("utf-8", "surrogateescape")
        else:
            return None  # not an entry this version writes
    return (data, notes, printed) if data is not None else None


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


