"""Fixtures the execute/ tests share."""

from __future__ import annotations

import pytest

from mlirhlo_driver.execute import engine, run


def make_inputs(module, **options):
    """The engine's inputs for a module's parameters, as ``run`` makes them: (arrays, note)."""
    params, _ = engine.signature(module)
    made = engine.make_inputs(params, run.RunOptions(**options).inputs, module=module)
    return made.arrays, made.note


def _module(tmp_path, text, name="m.mlir"):
    """``text`` written to ``tmp_path/name``: the path."""
    path = tmp_path / name
    path.write_text(text)
    return path


# ------------------------------------------------- layouts and reports, in process

@pytest.fixture
def python_names(monkeypatch):
    """Messages name parameters as Python spells them (not as command-line flags)."""
    monkeypatch.delenv("MLIRHLO_DRIVER_ERRORS_NAME_FLAGS", raising=False)
