"""The docs site's pictures, made by the commands themselves and photographed, never drawn.

    python scripts/docs_pictures.py [-o DIR]     # default: docs/images

- ``hlo-graph.png``: ``mlirhlo opt --stage html`` of ``tests/data/mm_add.mlir`` (a matmul,
  then add and tanh) for device-less H100, the
  page XLA's graph view becomes offline (docs/commands/opt.md), as headless Chromium draws
  it with no network, once Graphviz has laid it out.
- ``roofline.svg``: ``mlirhlo opt --stage roofline --plot`` of the same module on the same
  spec (docs/commands/kernels.md): the spec's ceilings and one point per kernel, drawn by
  matplotlib (the ``plot`` extra), no browser needed.

- ``model-explorer.png``: ``mlirhlo explore`` of the same module on the same spec, serving
  Model Explorer (the ``explorer`` extra) with its ``roofline-time`` and ``bound``
  overlays, as headless Chromium shows it with no network once the app has laid the graph
  out and loaded both overlays (docs/commands/explore.md).

The screenshots need Chromium (tests/headless_chromium.py finds it, or installs Debian's as root). Run it
again after a change to what the page draws, and commit the pictures with the change:
tests/scripts/test_docs_pictures.py makes them into a temporary directory and checks what
each shows.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "docs" / "images"
MODULE = "tests/data/mm_add.mlir"
# Graphviz has drawn the graph (the page's note says how long it took): its nodes and clusters.
DRAWN = """(() => {
  const note = document.getElementById('performance_note').innerText;
  if (!note.startsWith('Rendering took')) return null;
  const svg = document.querySelector('#rendered svg');
  return svg ? {nodes: svg.querySelectorAll('g.node').length, clusters: svg.querySelectorAll('g.cluster').length}
             : null;
})()"""


def hlo_graph(browser: str, output: Path) -> dict:
    """``hlo-graph.png`` into ``output``; what the page drew (nodes, clusters)."""
    from tests.headless_chromium import render

    with tempfile.TemporaryDirectory(prefix="mlirhlo-pictures-") as tmp:
        page = Path(tmp) / "mm_add.html"
        subprocess.run([sys.executable, "-m", "mlirhlo_driver", "opt", MODULE, "--gpu-spec", "h100_sxm", "--stage",
                        "html", "--no-cache", "-o", str(page)], cwd=REPO, check=True)
        drawn = render(browser, page, DRAWN, screenshot=True, size=(1200, 900))
    output.mkdir(parents=True, exist_ok=True)
    (output / "hlo-graph.png").write_bytes(drawn.screenshot)
    return drawn.value


# Model Explorer has laid the graph out and loaded both overlays: its graph info, the node
# data table with both figures' columns, and the canvas it draws on.
EXPLORED = """(() => {
  const t = document.body.innerText;
  if (t.includes('Processing') || t.includes('Converting') || !t.includes('NODE DATA PROVIDERS')) return null;
  if (!t.includes('roofline time') || !t.includes('bound')) return null;
  const tables = [...document.querySelectorAll('table')].map(
      table => [...table.querySelectorAll('tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim())));
  const last = tables.length ? tables[tables.length - 1] : [];
  if (!last.some(row => row.length === 4) || !document.querySelector('canvas')) return null;
  const nodes = t.match(/op node count\\s+(\\d+)/), layers = t.match(/layer count\\s+(\\d+)/);
  return {nodes: nodes ? +nodes[1] : null, layers: layers ? +layers[1] : null,
          rows: last.filter(row => row.length === 4).map(row => row.slice(1))};
})()"""
OVERLAYS = ("roofline-time", "bound")


def model_explorer(browser: str, output: Path) -> dict:
    """``model-explorer.png`` into ``output``: ``mlirhlo explore`` serving the module's
    graph and two overlays; what the app showed (op nodes, layers, node-data rows)."""
    import socket

    from mlirhlo_driver.batch import explore
    from tests.headless_chromium import render

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="mlirhlo-pictures-") as tmp:
        out = Path(tmp) / "explore"
        graph = out / f"mm_add{explore.SUFFIX}"
        overlays = [out / f"mm_add.{f}{explore.SUFFIX}" for f in OVERLAYS]
        # The page's address, as explore's server prints it (the graph's label is all it
        # reads now; explore writes the files before it serves them).
        out.mkdir()
        graph.write_text('{"label": "mm_add", "graphs": []}')
        files = explore.Files(str(out), [str(graph)], [(str(o), str(graph)) for o in overlays])
        url = f"http://127.0.0.1:{port}/?data={explore.config(files).to_url_param_value()}"
        serve = [sys.executable, "-m", "mlirhlo_driver", "explore", MODULE, "--gpu-spec", "h100_sxm",
                 "--no-cache", "--dump-dir", str(out), "--host", "127.0.0.1", "--port", str(port), "--no-browser"]
        shown = render(browser, url, EXPLORED, serve=serve, port=port, timeout=240, screenshot=True,
                       size=(1400, 800))
    output.mkdir(parents=True, exist_ok=True)
    (output / "model-explorer.png").write_bytes(shown.screenshot)
    return shown.value


def roofline(output: Path) -> int:
    """``roofline.svg`` into ``output``; how many kernels it draws."""
    import xml.etree.ElementTree as ET

    output.mkdir(parents=True, exist_ok=True)
    picture = output / "roofline.svg"
    subprocess.run([sys.executable, "-m", "mlirhlo_driver", "opt", MODULE, "--gpu-spec", "h100_sxm", "--stage",
                    "roofline", "--no-cache", "-q", "--plot", str(picture)], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    return sum(1 for g in ET.parse(picture).iter("{http://www.w3.org/2000/svg}g")
               if (g.get("id") or "").startswith("roofline-kernel-"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT,
                        help=f"directory to write the pictures into (default: {DEFAULT_OUTPUT.relative_to(REPO)})")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))  # tests.headless_chromium, and the checkout's package
    from tests.headless_chromium import find_or_install

    for module, extra in (("matplotlib", "plot"), ("model_explorer", "explorer")):
        if importlib.util.find_spec(module) is None:
            sys.stderr.write(f"error: the pictures need the {extra} extra (pip install -e '.[{extra}]')\n")
            return 2
    kernels = roofline(args.output)
    print(f"{args.output / 'roofline.svg'}: {kernels} kernels on h100_sxm's roofline")

    browser, why = find_or_install()
    if browser is None:
        sys.stderr.write(f"error: the pictures need headless Chromium: {why}\n")
        return 2
    drawn = hlo_graph(browser, args.output)
    print(f"{args.output / 'hlo-graph.png'}: {drawn['nodes']} nodes in {drawn['clusters']} fusion clusters")
    shown = model_explorer(browser, args.output)
    print(f"{args.output / 'model-explorer.png'}: {shown['nodes']} op nodes in {shown['layers']} layers, "
          f"{len(shown['rows'])} rows of node data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
