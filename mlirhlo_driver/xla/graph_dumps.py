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
from typing import Callable

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


def map_dots(text: str, fn: Callable[[str], str]) -> str:
    """XLA's HTML page ``text`` with ``fn`` applied to each dot graph it carries,
    re-packed with a fixed gzip timestamp; a page without them is returned as is."""
    m = _PAYLOAD.search(text)
    if not m:
        return text
    payload = m.group(2)
    raw = gzip.decompress(base64.b64decode(payload + "=" * (-len(payload) % 4)))
    dots = json.loads(raw)
    if isinstance(dots, list):
        dots = [fn(d) if isinstance(d, str) else d for d in dots]
    packed = base64.b64encode(gzip.compress(json.dumps(dots).encode(), mtime=0)).decode()
    return text[:m.start(2)] + packed + text[m.end(2):]
