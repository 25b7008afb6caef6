"""The API reference (scripts/api_docs.py, pdoc): every public name is documented
there with its docstring, and the methods and properties of Program, Compiled and
Target, the API's contract, each have a docstring of their own."""

from __future__ import annotations

import dataclasses
import html
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mlirhlo_driver
from tests.conftest import REPO

CONTRACT = ("Program", "Compiled", "Target")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    import importlib.util

    if importlib.util.find_spec("pdoc") is None:
        pytest.fail("pdoc is not installed: pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("api")
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "api_docs.py"), "-o", str(out)],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _page(reference: Path, name: str) -> str:
    """The page of the module that defines public ``name``."""
    path = reference / ("mlirhlo_driver/" + mlirhlo_driver._LAZY[name].replace(".", "/") + ".html")
    assert path.is_file(), f"no page for {name}: {path}"
    return path.read_text()


def _own_docstring(obj: object) -> str:
    """``obj``'s docstring; "" for the signature a dataclass gets when it has none."""
    doc = inspect.getdoc(obj) or ""
    if dataclasses.is_dataclass(obj) and isinstance(obj, type) and doc.startswith(obj.__name__ + "("):
        return ""
    return doc


def _rendered(page: str, anchor: str) -> str:
    """The text of the docstring pdoc rendered for ``anchor`` ("" if none), tags dropped."""
    start = re.search(rf'\bid="{re.escape(anchor)}"', page)
    assert start is not None, f"{anchor} is not in the reference"
    end = re.compile(r'<(?:section|div) id="').search(page, start.end())
    chunk = page[start.end():end.start() if end else len(page)]
    doc = re.search(r'<div class="docstring">(.*?)</div>', chunk, re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", doc.group(1))) if doc else ""


def _words(text: str) -> list[str]:
    """The words of reST (roles and markup dropped: ``:class:`~a.B``` reads ``B``)."""
    text = re.sub(r":\w+:`~[\w.]*?(\w+)`", r"\1", text)
    text = re.sub(r":\w+:`([^`]*)`", r"\1", text)
    return re.findall(r"\w+", text)


def _contains(haystack: list[str], needle: list[str]) -> bool:
    return any(haystack[i:i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


def _assert_documented(page: str, anchor: str, obj: object) -> None:
    doc = _own_docstring(obj)
    assert doc, f"{anchor} has no docstring"
    first = _words(doc.splitlines()[0])
    shown = _words(_rendered(page, anchor))
    assert first and _contains(shown, first), f"{anchor}: {doc.splitlines()[0]!r} not in the reference"


def _public_members(cls: type) -> list[str]:
    """The methods and properties ``cls`` defines (dataclass fields are data, not these)."""
    kinds = (property, classmethod, staticmethod, type(lambda: None))
    return sorted(n for n, v in vars(cls).items() if not n.startswith("_") and isinstance(v, kinds))


@pytest.mark.parametrize("name", mlirhlo_driver.__all__)
def test_public_name_is_documented(reference, name):
    _assert_documented(_page(reference, name), name, getattr(mlirhlo_driver, name))


@pytest.mark.parametrize("member", [f"{c}.{m}" for c in CONTRACT
                                    for m in _public_members(getattr(mlirhlo_driver, c))])
def test_contract_member_is_documented(reference, member):
    cls_name, name = member.split(".")
    cls = getattr(mlirhlo_driver, cls_name)
    _assert_documented(_page(reference, cls_name), member, inspect.getattr_static(cls, name))


def test_reference_lists_only_the_public_modules(reference):
    pages = sorted(str(p.relative_to(reference)) for p in reference.rglob("*.html"))
    expected = sorted({"mlirhlo_driver/" + m.replace(".", "/") + ".html" for m in mlirhlo_driver._LAZY.values()})
    assert pages == sorted(["index.html", *expected])
