"""Every time the driver prints (compile, run, pass, interpreter) is converted in one
place, timing.py: its arithmetic against a clock that is set by hand, and no other
module scaling seconds by a literal."""

from __future__ import annotations

import ast

import pytest

from mlirhlo_driver import timing
from tests.conftest import REPO

PKG = REPO / "mlirhlo_driver"


def test_milliseconds_from_a_clock_set_by_hand(monkeypatch):
    monkeypatch.setattr(timing, "perf_counter", lambda: 12.5)
    assert timing.ms_since(10.0) == 2500.0
    assert timing.ms_since(12.5) == 0.0
    assert timing.ms(0.25) == 250.0 and timing.ms(3) == 3000.0
    assert timing.ms_from_us(2500) == 2.5


@pytest.mark.parametrize("path", sorted(p for p in PKG.rglob("*.py") if p.name != "timing.py"),
                         ids=lambda p: str(p.relative_to(PKG)))
def test_no_module_converts_seconds_itself(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            for side in (node.left, node.right):
                assert not (isinstance(side, ast.Constant) and side.value in (1000, 1e3)), \
                    f"{path.name}:{node.lineno}: use timing.ms / timing.ms_since"
