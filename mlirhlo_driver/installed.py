"""What ``importlib.metadata`` finds on ``sys.path`` (distribution versions, entry
points), kept on disk so that a command does not pay for the scan each time.

The scan costs 50-150 ms a process: importing ``importlib.metadata`` pulls in
email, zipfile and csv, and each lookup walks every ``sys.path`` entry. A small
``opt`` takes about 0.3 s in all. The result is keyed on ``sys.path`` and, per
entry, the distributions' metadata directories in it (pip adds, renames or removes
a ``NAME-VERSION.dist-info`` on every install, upgrade and uninstall), not the
entry's mtime: ``python -m`` puts the working directory on ``sys.path``, and any
file written there would change it. It is also keyed on the metadata files it read
(``METADATA``, ``entry_points.txt``), which an editable project can rewrite in
place. A stale or unreadable cache only costs a fresh scan.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from pathlib import Path

from .resources import cache_dir

_VARIANTS = 16  # sys.path variants kept per interpreter: console script, python -m, pytest...


def versions(dists: tuple[str, ...]) -> dict[str, str | None]:
    """The installed version of each distribution in ``dists`` (None: not installed); the
    caller keeps it for the process (_native.jaxlib.installed_versions)."""
    return dict(_facts(("versions", *dists))["versions"])


def entry_points(group: str) -> tuple[tuple[str, str, str], ...]:
    """``(name, value, distribution version)`` of each installed entry point in ``group``,
    sorted. Not kept in the process: a test or a notebook may install one meanwhile."""
    return tuple(tuple(e) for e in _facts(("entry_points", group))["entry_points"])


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg-link")


def _entry_stamp(entry: str) -> list | None:
    """What of a sys.path entry decides which distributions it holds: a directory's
    metadata directories by name (their versions are in the names), a zip's size and mtime."""
    try:
        return sorted(n for n in os.listdir(entry) if n.endswith(_METADATA_SUFFIXES))
    except NotADirectoryError:
        return _stat(entry)
    except OSError:
        return None


def _facts(request: tuple[str, ...]) -> dict:
    entries = [os.path.abspath(entry or os.curdir) for entry in sys.path]  # '' is the current directory
    stamp = [[entry, _entry_stamp(entry)] for entry in entries]
    path = cache_dir() / f"installed-{zlib.crc32(sys.executable.encode()):08x}.json"  # one per venv
    try:
        variants = json.loads(path.read_text())["variants"]
        for v in variants:
            if v["request"] == list(request) and v["stamp"] == stamp and \
                    all(_stat(f) == st for f, st in v["files"]):
                return v
    except (OSError, ValueError, KeyError, TypeError):
        variants = []
    fresh = {"request": list(request), "stamp": stamp, **_scan(request)}
    try:
        kept = [v for v in variants if isinstance(v, dict) and
                (v.get("request"), [e for e, _ in v.get("stamp", [])]) != (list(request), entries)]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"variants": [fresh, *kept[:_VARIANTS - 1]]}))
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        pass  # a read-only cache directory only costs the scan next time
    return fresh


def _scan(request: tuple[str, ...]) -> dict:
    from importlib import metadata

    kind, args = request[0], request[1:]
    files: set[str] = set()

    def read(dist: metadata.Distribution, name: str) -> None:
        if getattr(dist, "_path", None) is not None:
            files.add(str(Path(dist._path) / name))

    if kind == "versions":
        found = {}
        for name in args:
            try:
                dist = metadata.distribution(name)
            except metadata.PackageNotFoundError:
                found[name] = None
                continue
            found[name] = dist.version
            read(dist, "METADATA")
        out: dict = {"versions": found}
    else:
        eps = list(metadata.entry_points(group=args[0]))
        for ep in eps:
            if ep.dist is not None:
                read(ep.dist, "entry_points.txt")
        out = {"entry_points": sorted([ep.name, ep.value, getattr(ep.dist, "version", None) or ""]
                                      for ep in eps)}
    out["files"] = [[f, _stat(f)] for f in sorted(files)]
    return out
