#!/usr/bin/env python
"""Which tests pin a message's wording outside its golden test (CONTRIBUTING.md, "Messages: pinned once").

    python scripts/pinned_messages.py            # the count, then each assertion: file:line test
    python scripts/pinned_messages.py --files    # counts per test file
    python scripts/pinned_messages.py tests/cuda # one folder

A heuristic over the tests' syntax trees: an assertion pins a message when it compares with
``==`` or ``in`` a string literal (or f-string, or a concatenation of them) of 25 or more
characters against an expression that reads like a message (``message``, ``err``, ``hint``,
``format(``, ``text(``, ``error``, ``note``, ``warn``, ``reason``, ``why``), or passes such a
literal as ``match=`` (pytest.raises) or ``contains=`` (assert_one_line_error). Tests marked
``@pytest.mark.golden`` are where a family's exact text belongs: counted apart. A stage's
output compared exactly is a golden of output, not a message, and is not what this looks for.
Exits 0; it reports, the reviewer judges.
"""

from __future__ import annotations

import argparse
import ast
import collections
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LONG = 25
MESSAGE_WORDS = ("message", "err", "hint", "format(", "str(e", "text(", "error", "note", "warn", "reason", "why")


def literal_length(node: ast.AST) -> int:
    """Characters of literal text in a string expression (0 for anything else)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return len(node.value)
    if isinstance(node, ast.JoinedStr):
        return sum(literal_length(v) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return literal_length(node.left) + literal_length(node.right)
    if isinstance(node, ast.Tuple):
        return max((literal_length(e) for e in node.elts), default=0)
    return 0


def _pins(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Eq, ast.In)) for o in node.ops):
        sides = [node.left, *node.comparators]
        if max(literal_length(s) for s in sides) >= LONG:
            other = " ".join(ast.unparse(s) for s in sides if literal_length(s) < LONG)
            return any(w in other for w in MESSAGE_WORDS)
    return isinstance(node, ast.keyword) and node.arg in ("match", "contains") and literal_length(node.value) >= LONG


def _golden(fn: ast.FunctionDef) -> bool:
    return any("golden" in ast.unparse(d) for d in fn.decorator_list)


def scan(root: Path) -> tuple[list[tuple[str, int, str]], int]:
    """(file, line, test) of each pinning assertion outside golden tests, and how many are in them."""
    found, in_golden = [], 0
    for path in sorted(root.rglob("test_*.py")):
        if "data" in path.relative_to(root).parts:
            continue
        for fn in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_")):
                continue
            golden = _golden(fn)
            for node in ast.walk(fn):
                if node in fn.decorator_list or not _pins(node):
                    continue
                if golden:
                    in_golden += 1
                else:
                    found.append((str(path.relative_to(REPO) if path.is_relative_to(REPO) else path),
                                  getattr(node, "lineno", fn.lineno), fn.name))
    return found, in_golden


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?", type=Path, default=REPO / "tests")
    ap.add_argument("--files", action="store_true", help="counts per test file")
    args = ap.parse_args(argv)
    found, in_golden = scan(args.root.resolve())
    tests = {(f, t) for f, _, t in found}
    print(f"{len(found)} assertions pin a message in {len(tests)} tests outside golden tests "
          f"({in_golden} in golden tests)")
    if args.files:
        for name, n in collections.Counter(f for f, _, _ in found).most_common():
            print(f"{n:5d}  {name}")
    else:
        for f, line, test in found:
            print(f"{f}:{line}  {test}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
