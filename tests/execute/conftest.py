"""Fixtures the execute/ tests share."""

from __future__ import annotations

import pytest

# ------------------------------------------------- layouts and reports, in process

@pytest.fixture
def python_names(monkeypatch):
    """Messages name parameters as Python spells them (not as command-line flags)."""
    monkeypatch.delenv("MLIRHLO_DRIVER_ERRORS_NAME_FLAGS", raising=False)
