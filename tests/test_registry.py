"""registry.py: the populated stage registry."""

from __future__ import annotations

import pytest

from mlirhlo_driver import registry
from mlirhlo_driver.errors import StageError
from mlirhlo_driver.stages.base import StageRequest
from tests.conftest import REPO, stage_options

MLP = REPO / "tests" / "data" / "mlp_train_step.before_optimizations.txt"


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def _names(stages) -> list[str]:
    return [s.name for s in stages]


def test_binary_stages_are_the_ones_that_give_bytes(a100):
    """A stage's ``binary`` says how it is written (-o, stdout, --dump-dir): it must match
    what the stage gives."""
    from mlirhlo_driver import registry

    for name in ("ptx", "sass", "kernels", "cubin"):
        out = a100.stage(name)
        values = list(out.values()) if isinstance(out, dict) else [out]
        assert values and all(isinstance(v, bytes) == registry.get(name, "cuda").binary for v in values), name


def test_the_populated_registry():
    """registry.py's one registry: built once, MLIR stages first, aliases left out of 'all',
    lookups with the same errors, requests that produce any stage."""
    reg = registry.stages()
    assert registry.stages() is reg
    mlir = ["stablehlo", "stablehlo-bytecode", "vhlo", "mhlo", "hlo-before-optimizations"]
    assert _names(registry.available(None)) == mlir
    assert _names(registry.available("cpu")) == _names(reg.available("cpu"))
    assert "ptx" in _names(registry.available("cuda")) and "ptx" not in _names(registry.available("cpu"))
    assert _names(registry.all_for(None)) == mlir
    assert "llvm-after-optimizations" not in _names(registry.all_for("cpu"))
    assert "llvm-after-optimizations" in _names(registry.available("cpu"))
    assert registry.get("hlo", "cpu") is reg.stages["hlo"]
    with pytest.raises(StageError, match="does not exist for"):
        registry.get("ptx", "cpu")
    req = registry.request("mod", "name", stage_options(platform="cpu"), line_offset=3)
    assert isinstance(req, StageRequest)
    assert (req.module, req.module_name, req.options.platform, req.registry, req.line_offset) == (
        "mod", "name", "cpu", reg, 3)
