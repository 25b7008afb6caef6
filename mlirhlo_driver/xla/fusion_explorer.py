"""XLA's Fusion Explorer as its hlo-opt's ``--stage=html`` writes it since jaxlib 0.11's XLA:
an executable Python zipapp (a ``#!/usr/bin/env python3`` line, then a zip of ``__main__.py``,
``viewer.html`` and ``fusions.db``). Run, it serves the viewer on 127.0.0.1 and opens a
browser where there is one.

The server and the viewer are XLA's own: jaxlib's XLA writes them into the zipapp of its
``--xla_dump_fusion_visualization`` dump (:func:`shell` takes them from there), and they are
not copied into this package. The frames in ``fusions.db`` are the driver's, in XLA's schema
(``metadata``: the title; ``graphs``: gzip'd dot; ``frames``: label, graph and the CSS
selector of what to draw red). The viewer loads Graphviz from a CDN: it gets the same
offline inlining as every HTML view here (:func:`html_page.self_contained`).
"""

from __future__ import annotations

import gzip
import io
import sqlite3
import zipfile

from ..errors import StageError

SHEBANG = b"#!/usr/bin/env python3\n"
FILE = r"_fusion\.pyz$"  # the zipapp's name in XLA's dump: module_N.<module>.<computation>..._fusion.pyz
_SERVER, _VIEWER, _DB = "__main__.py", "viewer.html", "fusions.db"
# XLA's schema (hlo_graph_dumper.cc's CreateSqliteDb), which its server reads.
_SCHEMA = ("CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT);",
           "CREATE TABLE graphs (id INTEGER PRIMARY KEY, content BLOB);",
           "CREATE TABLE frames (id INTEGER PRIMARY KEY, label TEXT, graph_id INTEGER, to_highlight TEXT);")
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip's earliest date, as XLA's zip writer dates its files


def shell(zipapp: bytes) -> dict[str, bytes]:
    """XLA's server and viewer out of a Fusion Explorer zipapp XLA wrote."""
    try:
        with zipfile.ZipFile(io.BytesIO(zipapp)) as z:
            return {name: z.read(name) for name in (_SERVER, _VIEWER)}
    except (zipfile.BadZipFile, KeyError) as e:
        raise StageError(f"XLA's Fusion Explorer zipapp does not hold its server and viewer ({e})") from None


def package(shell_files: dict[str, bytes], title: str, graphs: list[str],
            frames: list[tuple[str, int, str]]) -> bytes:
    """The zipapp of ``frames`` (label, index into ``graphs``, CSS selector or "") over the dot
    ``graphs``, titled ``title``, with XLA's server and viewer (:func:`shell`), the viewer
    made to work offline. Byte-deterministic: the same frames give the same file."""
    from .html_page import self_contained

    viewer = self_contained(shell_files[_VIEWER].decode("utf-8")).encode("utf-8")
    out = io.BytesIO()
    out.write(SHEBANG)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in ((_SERVER, shell_files[_SERVER]), (_VIEWER, viewer),
                           (_DB, _database(title, graphs, frames))):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return out.getvalue()


def _database(title: str, graphs: list[str], frames: list[tuple[str, int, str]]) -> bytes:
    db = sqlite3.connect(":memory:")
    try:
        for statement in _SCHEMA:
            db.execute(statement)
        db.execute("INSERT INTO metadata (key, value) VALUES ('title', ?)", (title,))
        db.executemany("INSERT INTO graphs (id, content) VALUES (?, ?)",
                       [(i, gzip.compress(dot.encode("utf-8"), mtime=0)) for i, dot in enumerate(graphs)])
        db.executemany("INSERT INTO frames (id, label, graph_id, to_highlight) VALUES (?, ?, ?, ?)",
                       [(i, label, graph, css) for i, (label, graph, css) in enumerate(frames)])
        db.commit()
        return db.serialize()
    finally:
        db.close()
