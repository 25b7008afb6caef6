"""The ``html`` stage and the ``*.html`` of XLA dumps render offline (xla/html_page.py).

XLA's page loads Graphviz and svg-pan-zoom from a CDN; the driver inlines the vendored
npm packages (xla/_vendor/, pinned by scripts/vendor_js.py). The cheap tests read the
page; the browser tests open it from file:// in headless Chromium with no network
(tests/headless_chromium.py) and count what Graphviz drew against the dot graphs the
page carries: one SVG node per instruction node, one cluster per fusion.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO, assert_mentions, run_xla_tool
from tests.conftest import main_exit_code as _main
from tests.xla.conftest import RAW_DOT

MLP = DATA / "mlp_train_step.before_optimizations.txt"

TARGETS = {"cpu": ("--platform", "cpu"), "cuda": ("--platform", "cuda", "--gpu-spec", "h100_sxm")}

REMOTE = re.compile(r"^\s*(?:https?:|wss?:|ftp:|//)", re.I)

# Once XLA's page script says how long Graphviz took (or, through the shim, what Viz.js
# said), what it drew: node and cluster titles (the dot names), every text, the zoom controls.
RENDERED = """(() => {
  const note = document.getElementById('performance_note').innerText;
  if (!note.startsWith('Rendering took') && !note.startsWith('Graphviz:')) return null;
  const svg = document.querySelector('#rendered svg');
  const all = s => svg ? [...svg.querySelectorAll(s)].map(t => t.textContent) : [];
  return {note: note, nodes: all('g.node > title'), clusters: all('g.cluster > title'), text: all('text'),
          zoom: !!document.querySelector('#svg-pan-zoom-controls')};
})()"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    """``opt --stage html`` of the MLP step for CPU and for device-less H100."""
    d = tmp_path_factory.mktemp("html")
    out = {}
    for name, args in TARGETS.items():
        out[name] = d / f"{name}.html"
        assert _main(["opt", MLP, *args, "--stage", "html", "-o", out[name]]) == 0
    return out


def dots(page: str) -> list[str]:
    """The dot graphs XLA's page carries (gzip'd JSON, base64'd, in ``dots_compressed``)."""
    payload = re.search(r'const dots_compressed = "([A-Za-z0-9+/=]*)"', page).group(1)
    return json.loads(gzip.decompress(base64.b64decode(payload + "=" * (-len(payload) % 4))))


def dot_nodes(dot: str) -> tuple[list[str], list[str]]:
    """(node names, cluster names) of one of XLA's dot graphs: XLA writes each node
    statement ``nN [label=...`` and each fusion ``subgraph cluster_nN {`` on a line."""
    return (re.findall(r"^(\w+) \[label=", dot, re.M), re.findall(r"^subgraph (cluster_\w+) \{", dot, re.M))


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.refs += [v for k, v in attrs if k in ("src", "href", "data", "poster", "srcset") and v]
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def assert_fetches_nothing(page: str) -> None:
    refs = _Refs()
    refs.feed(page)
    assert not [r for r in refs.refs if REMOTE.match(r)], refs.refs
    # The stylesheet the page script takes out of each dot graph and puts in a <style>.
    for dot in dots(page):
        assert not re.search(r"@import|url\(\s*['\"]?(?:https?:)?//", dot), dot[:600]
    # XLA's script, kept whole, and the two libraries it calls, inline.
    assert any("hpccWasm.graphviz.layout(" in s and "svgPanZoom(" in s for s in refs.scripts)
    assert any("Viz.js 3.31.0" in s for s in refs.scripts)
    assert any("svg-pan-zoom v3.6.2" in s for s in refs.scripts)


def _dumped_html(tmp_path: Path, capfd) -> list[Path]:
    """The graph views among the files hlo-opt's --xla_dump_to writes (XLA's dump files),
    asked for as in XLA (--xla_dump_hlo_as_html)."""
    dump = tmp_path / "dump"
    r = run_xla_tool("hlo-opt", ["--platform=cpu", "--stage=hlo", f"--xla_dump_to={dump}", "--xla_dump_hlo_as_html",
                                 str(MLP)],
                     tmp_path, capfd)
    assert r.code == 0, r.err
    html = sorted(dump.glob("*.html"))
    assert any(p.name.endswith("_after_optimizations.html") for p in html), sorted(dump.iterdir())
    return html


# ----------------------------------------------------------------- in a browser

@pytest.fixture(scope="module")
def chromium() -> str:
    from tests.headless_chromium import find_or_install

    path, why = find_or_install()
    if path is None:
        pytest.skip(f"needs headless Chromium: {why}")
    return path


def assert_renders_offline(chromium: str, page: Path) -> None:
    from tests.headless_chromium import render

    r = render(chromium, page, RENDERED)
    drawn = r.value
    assert drawn["note"].startswith("Rendering took"), (drawn["note"], r.console)
    assert not [u for u in r.requests if REMOTE.match(u)], (r.isolation, r.requests)
    dot = dots(page.read_text())[0]
    nodes, clusters = dot_nodes(dot)
    # One SVG node per instruction node of the dot graph, one cluster per fusion.
    assert sorted(drawn["nodes"]) == sorted(nodes)
    assert sorted(drawn["clusters"]) == sorted(clusters)
    # XLA's labels (instruction and fusion names, in bold), drawn as text.
    labels = set(re.findall(r"<b>([^<]+)</b>", dot))
    assert len(labels) > 5 and labels <= set(drawn["text"]), labels - set(drawn["text"])
    assert drawn["zoom"]  # svg-pan-zoom put its controls on the graph


def _page(dots_value, before: str = "<html><script>\n", after: str = ";\n</script></html>\n") -> str:
    """A page carrying ``dots_value`` as XLA's does, its base64 without the '=' padding."""
    payload = base64.b64encode(gzip.compress(json.dumps(dots_value).encode())).decode().rstrip("=")
    assert len(payload) % 4  # the padding the reader must put back
    return f'{before}const dots_compressed = "{payload}"{after}'


@pytest.mark.slow
@pytest.mark.parametrize("target", list(TARGETS))
def test_html_stage_references_nothing_remote(pages, target):
    page = pages[target].read_text()
    assert_fetches_nothing(page)
    nodes, clusters = dot_nodes(dots(page)[0])
    assert len(nodes) > 40 and clusters  # the MLP step's graph: fusions and their instructions


def test_dumped_html_is_self_contained(tmp_path, capfd):
    for p in _dumped_html(tmp_path, capfd):
        assert_fetches_nothing(p.read_text())


def test_an_unknown_remote_script_is_an_error():
    """XLA changing its page must not give a page that silently needs the network."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.html_page import self_contained

    with pytest.raises(StageError) as e:
        self_contained('<html><script src="https://cdn.example/d3.js"></script></html>')
    assert_mentions(e.value.message, "https://cdn.example/d3.js")


@pytest.mark.golden
def test_a_script_the_driver_cannot_inline_message_exactly():
    """Golden: XLA's page loading a script the driver does not know."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.html_page import self_contained

    with pytest.raises(StageError) as e:
        self_contained('<html><script src="https://cdn.example/d3.js"></script></html>')
    assert e.value.format() == ("error: XLA's HTML graph view loads https://cdn.example/d3.js, which the driver "
                                "cannot inline (use --stage dot and render it with Graphviz)")


def test_a_page_without_graphs_is_kept_as_is():
    """No graph payload (XLA changed its page, or a page of text only): inlining and
    canonicalizing change nothing, rather than failing or dropping the page."""
    from mlirhlo_driver.xla.graph_dumps import canonical_html
    from mlirhlo_driver.xla.html_page import self_contained

    page = "<html><body><pre>HloModule m</pre></body></html>"
    assert self_contained(page) == page
    assert canonical_html(page) == page


def test_vendored_scripts_match_their_pins():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "vendor_js.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("target", list(TARGETS))
def test_html_stage_renders_offline_in_chromium(pages, chromium, target):
    assert_renders_offline(chromium, pages[target])
    assert len(dot_nodes(dots(pages[target].read_text())[0])[1]) >= 5  # fusions, drawn as clusters


@pytest.mark.slow
def test_dumped_html_renders_offline_in_chromium(chromium, tmp_path, capfd):
    page = next(p for p in _dumped_html(tmp_path, capfd) if p.name.endswith("_after_optimizations.html"))
    assert_renders_offline(chromium, page)


@pytest.mark.parametrize("src", ["https://www.gstatic.com/external_hosted/hpcc_js_wasm/index.min.js",
                                 "https://CDN.example/GraphViz.js"])
def test_the_graphviz_script_is_replaced_by_viz_js_and_the_hpcc_shim(src):
    """A Graphviz (hpcc-js) script tag becomes Viz.js inline, then the shim giving hpcc-js's API."""
    from mlirhlo_driver.xla import html_page

    viz = html_page._vendored(html_page.VIZ_JS)
    assert "Viz.js 3.31.0" in viz
    out = html_page.self_contained(f'<head>\n<script async src="{src}" integrity="x"> </script>\n</head>')
    assert out == f"<head>\n<script>\n{viz}\n</script>\n<script>\n{html_page._HPCC_SHIM}\n</script>\n</head>"


def test_the_pan_zoom_script_is_inlined():
    from mlirhlo_driver.xla import html_page

    pan_zoom = html_page._vendored(html_page.PAN_ZOOM_JS)
    assert "svg-pan-zoom v3.6.2" in pan_zoom
    out = html_page.self_contained('<script src="http://x.org/svg-Pan-Zoom.min.js"></script><p>')
    assert out == f"<script>\n{pan_zoom}\n</script><p>"


@pytest.mark.parametrize("src", ["https://x.org/pan.js", "https://x.org/zoom.js"])
def test_a_script_with_pan_or_zoom_alone_in_its_url_is_not_known(src):
    """Only a URL naming both pan and zoom is svg-pan-zoom; the error names the URL and says what to do."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.html_page import self_contained

    with pytest.raises(StageError) as ei:
        self_contained(f'<script src="{src}"></script>')
    assert_mentions(ei.value.message, src)
    assert_mentions(ei.value.hint, "--stage dot", "Graphviz")


def test_the_font_import_is_dropped_from_the_dot_graphs():
    """The Google Fonts @import line goes from every dot graph; the rest of the graph stays."""
    from mlirhlo_driver.xla.html_page import self_contained

    page = _page([RAW_DOT, "x\n @import url(http://f.example/a.css)\ny", "@import url(https://f/b);\n"])
    out = self_contained(page)
    assert dots(out) == [RAW_DOT.replace(
        "  @import url(https://fonts.googleapis.com/css?family=Roboto:400,700);\n", ""), "x\ny", ""]
    assert out.startswith('<html><script>\nconst dots_compressed = "') and out.endswith('";\n</script></html>\n')
