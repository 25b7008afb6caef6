"""xla/graph_dumps.py: XLA's dot and html graph dumps made canonical."""

from __future__ import annotations

import base64
import gzip
import json
import re

from tests.xla.conftest import RAW_DOT


def dots(page: str) -> list[str]:
    """The dot graphs XLA's page carries (gzip'd JSON, base64'd, in ``dots_compressed``)."""
    payload = re.search(r'const dots_compressed = "([A-Za-z0-9+/=]*)"', page).group(1)
    return json.loads(gzip.decompress(base64.b64decode(payload + "=" * (-len(payload) % 4))))


CANONICAL_DOT = """\
digraph G {
stylesheet=<
  data:text/css,
  @import url(https://fonts.googleapis.com/css?family=Roboto:400,700);
  svg text { font-family: 'Roboto'; }
  %23legend text { fill: gray; }

  %23clust1:hover ~ %23edge3 text { fill: blue; }

  %23node1:hover ~ %23edge2 text { fill: red; }

  %23node2:hover ~ %23edge1 text { fill: red; }
  %23node2:hover ~ %23edge1 path { stroke: red; }
>
n0 [label=<<b>Parameter 0</b>>, tooltip="Arg_0.1"];
subgraph cluster_n1 {
n2 [label=<<b>add</b>>, tooltip="a:hover ~ b"];
}  // cluster_n1
n0 -> n2 [tooltip="12345678 bytes, #123456789012, %923456789012, x123456789012"];
}
"""


def _page(dots_value, before: str = "<html><script>\n", after: str = ";\n</script></html>\n") -> str:
    """A page carrying ``dots_value`` as XLA's does, its base64 without the '=' padding."""
    payload = base64.b64encode(gzip.compress(json.dumps(dots_value).encode())).decode().rstrip("=")
    assert len(payload) % 4  # the padding the reader must put back
    return f'{before}const dots_compressed = "{payload}"{after}'


def _payload(page: str) -> bytes:
    return base64.b64decode(re.search(r'const dots_compressed = "([A-Za-z0-9+/=]*)"', page).group(1))


def test_canonical_dot_renames_addresses_drops_the_module_counter_and_sorts_hover_rules():
    """Addresses become n0, n1, ... by first appearance (cluster_ kept), ``module_N.`` goes, the
    hover rules are sorted as blocks with one indent; nothing else changes."""
    from mlirhlo_driver.xla.graph_dumps import canonical_dot

    assert canonical_dot(RAW_DOT) == CANONICAL_DOT
    assert canonical_dot(CANONICAL_DOT) == CANONICAL_DOT


def test_canonical_dot_sorts_rules_up_to_the_last_one():
    """The last rule's block ends the sorted part: the line right after it stays where it is."""
    from mlirhlo_driver.xla.graph_dumps import canonical_dot

    dot = "a\n  %23b:hover ~ %23x { }\n\n  %23a:hover ~ %23y { }\nz\n  %23c { }\n"
    assert canonical_dot(dot) == "a\n  %23a:hover ~ %23y { }\n\n  %23b:hover ~ %23x { }\nz\n  %23c { }\n"


def test_a_dot_graph_without_hover_rules_only_has_its_names_changed():
    from mlirhlo_driver.xla.graph_dumps import canonical_dot

    assert canonical_dot("digraph {\n  %23legend { }\n 987654321 -> 123456789;\n}") == \
        "digraph {\n  %23legend { }\n n0 -> n1;\n}"
    assert canonical_dot("") == ""


def test_canonical_html_canonicalizes_each_dot_graph_and_repacks_it_without_a_timestamp():
    """Each dot string in the page's list is canonicalized (other entries kept), the page around
    the payload is kept byte for byte, and the new gzip has mtime 0, so the page is deterministic."""
    from mlirhlo_driver.xla.graph_dumps import canonical_html

    for extra in ([], ["x"]):  # payloads of two lengths: both paddings
        page = _page([RAW_DOT, 7, "subgraph cluster_1234567890 {}", *extra])
        out = canonical_html(page)
        assert out.startswith('<html><script>\nconst dots_compressed = "')
        assert out.endswith('";\n</script></html>\n')
        assert dots(out) == [CANONICAL_DOT, 7, "subgraph cluster_n0 {}", *extra]
        assert _payload(out)[4:8] == b"\0\0\0\0"  # gzip's MTIME field
        assert canonical_html(out) == out


def test_a_payload_that_is_not_a_list_is_repacked_unchanged():
    from mlirhlo_driver.xla.graph_dumps import canonical_html

    page = _page({"140212345678901": "module_1.x 140212345678901"})
    assert dots(canonical_html(page)) == {"140212345678901": "module_1.x 140212345678901"}


_EXPLORER_DOT = """\
digraph G {
label = <<b>Computation main</b>>;
n0 [label=<<b>Parameter 0</b><br/>f32[4]{0}>, shape=rect, tooltip="p"];
n1 [label=<<b>out</b><br/>(f32[4])>, shape=rect, tooltip=""];
subgraph cluster_n2 {
style="rounded,filled,bold";
label = <Fused expression for <b>wrapped_exp</b><br/>loop fusion<br/>kind=kLoop>;
n3 [label=<<b>exp.1</b><br/>exponential<br/>f32[4]{0}>, shape=rect, tooltip="e"];
n4 [label=<<b>Parameter 0</b><br/>f32[4]{0}>, shape=rect, tooltip=""];
}  // cluster_n2
n3 -> n1 [arrowhead=normal tooltip="exp.1 -> out"];
n0 -> n4 [arrowhead=normal tooltip="p -> param_0"];
}
"""


def test_with_frames_gives_a_frame_per_name_with_its_node_or_fusion_highlighted():
    """XLA's fusion explorer page gets one frame per instruction, in the order given, each the
    page's graph with the instruction's SVG element (Graphviz's node<N>/clust<N>, in declaration
    order) to highlight: an entry parameter is its top-level 'Parameter N' node, not a fused
    parameter; a name not drawn gets no highlight. The graphs are kept."""
    from mlirhlo_driver.xla.graph_dumps import with_frames

    page = _page([_EXPLORER_DOT], after='";\n  const frames = [[0, "module_main", ""]];\n</script></html>\n')
    out = with_frames(page, ["out", "wrapped_exp", "p", "gone"], {"p": 0})
    assert dots(out) == [_EXPLORER_DOT]
    frames = json.loads(re.search(r"^\s*const frames = (.*);$", out, re.M).group(1))
    assert frames == [[0, "out", "#node2"], [0, "wrapped_exp", "#clust1"], [0, "p", "#node1"], [0, "gone", ""]]
    assert with_frames("<html>no explorer</html>", ["out"]) == "<html>no explorer</html>"
