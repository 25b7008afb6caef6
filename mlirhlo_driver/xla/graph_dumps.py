"""Make XLA's graph dumps (dot, html) byte-deterministic.

XLA's HLO graph renderer names dot nodes and clusters after object addresses
and emits its hover-highlight CSS rules in hash-map order, so the same module
renders differently on every compile. The graph itself is the same: nodes are
renamed by first appearance and the CSS rules sorted, which changes nothing a
viewer shows. The HTML view carries the dot graphs gzip'd and base64'd inside
a script; they are canonicalized the same way and re-packed with a fixed
gzip timestamp.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from typing import Any, Callable

_ADDRESS = re.compile(r"(?<![\w#%])(cluster_)?(\d{9,})(?!\d)")
_PAYLOAD = re.compile(r'(const dots_compressed = ")([A-Za-z0-9+/=]*)(")')


def canonical_dot(text: str) -> str:
    ids: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        key = m.group(2)
        if key not in ids:
            ids[key] = str(len(ids))
        return f"{m.group(1) or ''}n{ids[key]}"

    text = _ADDRESS.sub(rename, text)
    text = re.sub(r"\bmodule_\d+\.", "", text)  # XLA's process-wide module counter
    return _sort_hover_rules(text)


def _sort_hover_rules(text: str) -> str:
    lines = text.split("\n")
    rule_lines = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("%23") and ":hover ~ " in ln]
    if not rule_lines:
        return text
    start, end = rule_lines[0], rule_lines[-1]
    groups: list[list[str]] = []
    current: list[str] = []
    for ln in lines[start:end + 1]:
        if ln.strip():
            current.append("  " + ln.strip())  # the first rule's indent varies
        elif current:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    groups.sort()
    block: list[str] = []
    for g in groups:
        block += g + [""]
    return "\n".join(lines[:start] + block[:-1] + lines[end + 1:])


def canonical_html(text: str) -> str:
    return map_dots(text, canonical_dot)


def _dots(payload: str) -> Any:
    """The dot graphs an XLA HTML page carries: its payload (base64 of gzipped JSON) decoded."""
    return json.loads(gzip.decompress(base64.b64decode(payload + "=" * (-len(payload) % 4))))


def map_dots(text: str, fn: Callable[[str], str]) -> str:
    """XLA's HTML page ``text`` with ``fn`` applied to each dot graph it carries,
    re-packed with a fixed gzip timestamp; a page without them is returned as is."""
    m = _PAYLOAD.search(text)
    if not m:
        return text
    dots = _dots(m.group(2))
    if isinstance(dots, list):
        dots = [fn(d) if isinstance(d, str) else d for d in dots]
    packed = base64.b64encode(gzip.compress(json.dumps(dots).encode(), mtime=0)).decode()
    return text[:m.start(2)] + packed + text[m.end(2):]


_FRAMES = re.compile(r"^(\s*const frames = )(\[.*\]);$", re.M)
# XLA's dot: a node statement (``n4 [label=<<b>e.1.1</b>...``), a fusion's cluster
# (``subgraph cluster_n3 {`` then ``label = <Fused expression for <b>NAME</b>``).
_NODE = re.compile(r'^\s*(\w+) \[label=<(?:<b>([^<]*)</b>)?')
_CLUSTER_LABEL = re.compile(r"^\s*label = <Fused expression for <b>([^<]*)</b>")


def _svg_ids(dot: str) -> dict[str, str]:
    """Instruction name -> the CSS selector of its element in Graphviz's SVG of ``dot``:
    Graphviz numbers nodes ``node1``.. and clusters ``clust1``.. in the order the dot
    declares them (XLA's own hover rules rely on that). Entry parameters, which XLA labels
    ``Parameter N``, are keyed so; a fusion is its cluster."""
    ids: dict[str, str] = {}
    nodes = clusters = depth = 0
    for line in dot.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("subgraph cluster"):
            clusters += 1
            depth += 1
            continue
        if stripped.startswith("}") and depth:
            depth -= 1
            continue
        m = _CLUSTER_LABEL.match(line)
        if m and depth:
            ids.setdefault(m.group(1), f"#clust{clusters}")
            continue
        m = _NODE.match(line)
        if m and "->" not in line:
            nodes += 1
            label = m.group(2)
            if label and (depth == 0 or not label.startswith("Parameter ")):
                ids.setdefault(label, f"#node{nodes}")
    return ids


def entry_graph(page: str) -> str | None:
    """The dot graph of XLA's HTML view ``page`` (its first; None for a page without one)."""
    m = _PAYLOAD.search(page)
    dots = _dots(m.group(2)) if m else None
    return dots[0] if dots and isinstance(dots[0], str) else None


def selectors(dot: str, names: list[str], parameters: dict[str, int] | None = None) -> list[str]:
    """The CSS selector of each named instruction's node in Graphviz's SVG of XLA's ``dot``
    (a fusion's cluster; "" for a name the graph does not show). ``parameters``: entry
    parameters' numbers by name (XLA labels them ``Parameter N``)."""
    ids = _svg_ids(dot)
    numbers = parameters or {}
    return [ids.get(f"Parameter {numbers[n]}" if n in numbers else n, "") for n in names]


def with_frames(page: str, names: list[str], parameters: dict[str, int] | None = None) -> str:
    """XLA's fusion explorer ``page`` (one frame: a computation's graph) with one frame per
    name, in order, as XLA's RenderAllComputationsToHtml lists an entry's instructions:
    each shows that graph with the instruction's node (a fusion's cluster) highlighted.
    ``parameters``: entry parameters' numbers by name (XLA labels them ``Parameter N``).
    A page without XLA's frame list is returned as is."""
    frames = _FRAMES.search(page)
    if frames is None or _PAYLOAD.search(page) is None:
        return page
    dot = entry_graph(page)
    css = selectors(dot, names, parameters) if dot is not None else [""] * len(names)
    listed = [[0, n, c] for n, c in zip(names, css)]
    return page[:frames.start(2)] + json.dumps(listed) + page[frames.end(2):]
