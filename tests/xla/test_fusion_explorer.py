"""hlo-opt's ``--stage=html`` as XLA's Fusion Explorer zipapp (xla/fusion_explorer.py).

The cheap tests read the zipapp: XLA's schema, the frames, the same bytes twice. The
browser test runs the zipapp's own server (XLA's, from jaxlib's dump) and opens it in
headless Chromium with no network: Graphviz draws the graph and the frame's instruction
is drawn red.
"""

from __future__ import annotations

import gzip
import io
import re
import socket
import sqlite3
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import run_xla_tool

_SHELL = {"__main__.py": b"print('served')\n",
          "viewer.html": b'<html><script src="https://www.gstatic.com/external_hosted/svg_pan_zoom/svg-pan-zoom.js">'
                         b"</script></html>"}
_DOT = 'digraph G {\n  n0 [label=<<b>p</b>>];\n  n1 [label=<<b>out</b>>];\n  n0 -> n1;\n}\n'


def explorer_contents(data: bytes) -> tuple[str, list[tuple[str, int, str]], list[str], bytes]:
    """(title, frames as (label, graph, selector), the dot graphs, viewer.html) of a zipapp."""
    assert data.startswith(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.namelist() == ["__main__.py", "viewer.html", "fusions.db"]
        db, viewer = z.read("fusions.db"), z.read("viewer.html")
    with tempfile.NamedTemporaryFile(suffix=".db") as f:
        f.write(db)
        f.flush()
        c = sqlite3.connect(f.name)
        try:
            title = c.execute("SELECT value FROM metadata WHERE key = 'title'").fetchone()[0]
            frames = c.execute("SELECT label, graph_id, to_highlight FROM frames ORDER BY id").fetchall()
            graphs = [gzip.decompress(b).decode() for (b,) in c.execute("SELECT content FROM graphs ORDER BY id")]
        finally:
            c.close()
    return title, frames, graphs, viewer


def test_package_writes_xla_s_schema_with_the_viewer_offline_and_the_same_bytes_twice():
    from mlirhlo_driver.xla import fusion_explorer

    frames = [("out", 0, "#node2 polygon"), ("p", 0, "")]
    data = fusion_explorer.package(_SHELL, "m", [_DOT], frames)
    assert data == fusion_explorer.package(_SHELL, "m", [_DOT], frames)
    title, got, graphs, viewer = explorer_contents(data)
    assert (title, got, graphs) == ("m", frames, [_DOT])
    assert b"gstatic.com" not in viewer and b"svg-pan-zoom v3.6.2" in viewer
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.read("__main__.py") == _SHELL["__main__.py"]
        db = z.read("fusions.db")
    with tempfile.NamedTemporaryFile(suffix=".db") as f:
        f.write(db)
        f.flush()
        schema = sqlite3.connect(f.name).execute("SELECT sql FROM sqlite_master WHERE type = 'table'").fetchall()
    # XLA's server reads these tables and columns
    assert [s for (s,) in schema] == [
        "CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT)",
        "CREATE TABLE graphs (id INTEGER PRIMARY KEY, content BLOB)",
        "CREATE TABLE frames (id INTEGER PRIMARY KEY, label TEXT, graph_id INTEGER, to_highlight TEXT)"]


def test_shell_of_a_zip_without_xla_s_server_is_one_stage_error():
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import fusion_explorer

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("viewer.html", "<html></html>")
    with pytest.raises(StageError, match="does not hold its server and viewer"):
        fusion_explorer.shell(out.getvalue())
    with pytest.raises(StageError):
        fusion_explorer.shell(b"#!/usr/bin/env python3\nnot a zip")


# ----------------------------------------------------------------- XLA's own, in a browser

_MODULE = """HloModule explorer

ENTRY main {
  p = f32[512,256] parameter(0)
  e = f32[512,256] sqrt(p)
  t = f32[256,512] transpose(p), dimensions={1,0}
  ROOT out = (f32[512,256], f32[256,512]) tuple(e, t)
}
"""

# The zipapp as a user runs it, on a port the test knows (XLA's server takes any free one).
_SERVE = """import http.server, runpy, sys
port, sys.argv = int(sys.argv[1]), sys.argv[2:]
init = http.server.HTTPServer.__init__
http.server.HTTPServer.__init__ = lambda self, address, handler, *a: init(self, (address[0], port), handler, *a)
runpy.run_path(sys.argv[0], run_name="__main__")
"""

_DRAWN = """(() => {
  const note = document.getElementById('performance_note').textContent;
  if (!note.startsWith('Rendering took') && !note.startsWith('Graphviz:') && !note.startsWith('Error')) return null;
  const svg = document.querySelector('#svg_container svg');
  const red = svg ? [...svg.querySelectorAll('polygon, path')].filter(p => p.style.fill === 'red') : [];
  return {note: note, nodes: svg ? svg.querySelectorAll('g.node').length : 0,
          red: red.map(p => p.closest('g.node, g.cluster').querySelector('title').textContent),
          label: document.getElementById('collapsed_frame_desc').textContent};
})()"""


@pytest.mark.slow
def test_hlo_opt_html_is_xla_s_fusion_explorer_served_and_drawn_offline(tmp_path, capfd):
    from mlirhlo_driver._native.jaxlib import jaxlib_at_least
    from tests.headless_chromium import find_or_install, render

    if not jaxlib_at_least("0.11"):
        pytest.skip("XLA writes its Fusion Explorer as a zipapp from jaxlib 0.11 on")
    (tmp_path / "m.hlo").write_text(_MODULE)
    r = run_xla_tool("hlo-opt", ["--platform=cpu", "--stage=html", "m.hlo", "-o", "m.pyz"], tmp_path, capfd)
    assert r.code == 0, r.err
    zipapp = tmp_path / "m.pyz"
    title, frames, graphs, _ = explorer_contents(zipapp.read_bytes())
    # A frame per entry instruction but constants and tuple elements, in reverse post order.
    labels = [label for label, _, _ in frames]
    assert title == "explorer" and labels[-1].startswith("p") and len(labels) == len(set(labels))
    fused = next(i for i, (_, _, css) in enumerate(frames) if css.startswith("#clust"))
    browser, why = find_or_install()
    if browser is None:
        pytest.skip(f"needs headless Chromium: {why}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "serve.py").write_text(_SERVE)
    drawn = render(browser, f"http://127.0.0.1:{port}/#frame{fused}", _DRAWN,
                   serve=[sys.executable, str(tmp_path / "serve.py"), str(port), str(zipapp)], port=port)
    value = drawn.value
    assert value["note"].startswith("Rendering took"), (value, drawn.console)
    assert value["nodes"] == len(re.findall(r"^\s*\w+ \[label=", graphs[0], re.M))
    assert value["label"] == frames[fused][0] and len(value["red"]) == 1, value
    assert not [u for u in drawn.requests if not u.startswith(f"http://127.0.0.1:{port}/")], drawn.requests


def test_the_zipapp_runs_as_a_program(tmp_path):
    """``python m.pyz`` starts XLA's server from the zip (its own argv[0]): exercised on the
    test's package, whose __main__ says so."""
    import subprocess

    from mlirhlo_driver.xla import fusion_explorer

    path = Path(tmp_path / "m.pyz")
    path.write_bytes(fusion_explorer.package(_SHELL, "m", [_DOT], [("p", 0, "")]))
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "served\n"), out.stderr
