"""XLA's HTML graph view, made to work offline.

XLA's page loads Graphviz (hpcc-js/wasm) and svg-pan-zoom from www.gstatic.com and
its graphs' stylesheet imports a Google font, so without a network (an air-gapped
cluster) it stays at "Loading..." (and upstream's CDN script has failed its
integrity check, openxla/xla#6608). :func:`self_contained` inlines the npm packages
vendored in ``_vendor/`` (scripts/vendor_js.py fetches and pins them): Viz.js, a
Graphviz build with its WebAssembly inside the one script, and svg-pan-zoom.
XLA's own page script is kept as it is (fusion clusters, labels, frame list,
j/k keys); it calls hpcc-js's ``graphviz.layout(dot, format, engine)``, which a
few lines map onto Viz.js's ``renderString``.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from ..errors import StageError

VIZ_JS = "viz-global.js"            # @viz-js/viz 3.31.0 (Graphviz 16.1.0)
PAN_ZOOM_JS = "svg-pan-zoom.min.js"  # svg-pan-zoom 3.6.2

# A <script src=...></script> tag that loads from the network.
_REMOTE_SCRIPT = re.compile(r'<script\b[^>]*\bsrc="(https?://[^"]*)"[^>]*>\s*</script>', re.I)
# The dot graphs' stylesheet imports Roboto from Google Fonts; without it the
# stylesheet's 'Roboto' falls back to a local font.
_FONT_IMPORT = re.compile(r"^[ \t]*@import url\(https?://[^)]*\);?[ \t]*\n", re.M)

# hpcc-js/wasm's API as XLA's page calls it, on top of Viz.js. A Graphviz error
# shows where the page says what it is doing, instead of a silent "Rendering...".
_HPCC_SHIM = """\
window["@hpcc-js/wasm"] = {graphviz: {layout: (dot, format, engine) =>
  Viz.instance().then(viz => viz.renderString(dot, {format: format, engine: engine}))
    .catch(e => {
      document.getElementById("performance_note").innerText = "Graphviz: " + e;
      throw e;
    })}};
"""


@functools.cache
def _vendored(name: str) -> str:
    return (resources.files(__package__) / "_vendor" / name).read_text(encoding="utf-8")


def _inline(js: str) -> str:
    # An inline script ends at the first "</script": vendor_js.py checks the files have none.
    return f"<script>\n{js}\n</script>"


def self_contained(text: str) -> str:
    """XLA's HTML dump ``text`` with nothing fetched from the network: the Graphviz
    and svg-pan-zoom scripts inlined in place of their CDN tags, and the font
    import dropped from the dot graphs it carries. Raises StageError if the page
    loads a script this module does not know (XLA changed its page)."""
    from .graph_dumps import map_dots

    def replace(m: re.Match) -> str:
        url = m.group(1).lower()
        if "hpcc" in url or "graphviz" in url:
            return _inline(_vendored(VIZ_JS)) + "\n" + _inline(_HPCC_SHIM)
        if "pan" in url and "zoom" in url:
            return _inline(_vendored(PAN_ZOOM_JS))
        raise StageError(f"XLA's HTML graph view loads {m.group(1)}, which the driver cannot inline",
                         hint="use --stage dot and render it with Graphviz")

    text = _REMOTE_SCRIPT.sub(replace, text)
    return map_dots(text, offline_dot)


def offline_dot(dot: str) -> str:
    """One of XLA's dot graphs without the font import its stylesheet makes."""
    return _FONT_IMPORT.sub("", dot)
