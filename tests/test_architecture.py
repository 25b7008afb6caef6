"""The package's shape, checked: import layers and no cycles (import-linter's
contracts in pyproject.toml), lint (ruff), and front-ends that only parse."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PKG = REPO / "mlirhlo_driver"


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return found


def test_import_layers_and_no_cycles():
    proc = subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    import re
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert re.search(rf"Contracts: {len(contracts)} kept, 0 broken\.", proc.stdout), proc.stdout[-500:]


def test_ruff_is_clean():
    proc = subprocess.run([_tool("ruff"), "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_contract_names_every_subpackage():
    """A new subpackage joins a layer; a module left out of every layer is unchecked."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers" and "containers" not in c]
    named = {m.strip().removeprefix("mlirhlo_driver.") for layer in layers for m in layer.split("|")}
    present = {p.stem if p.is_file() else p.name for p in PKG.iterdir()
               if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert present == named


# Front-ends parse arguments and call the library; these belong to the library.
_LIBRARY_ONLY = ("jax", "jaxlib", "numpy")


@pytest.mark.parametrize("path", sorted((PKG / "cli").rglob("*.py")), ids=lambda p: p.name)
def test_front_ends_import_no_jax(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        for name in names:
            assert name.split(".")[0] not in _LIBRARY_ONLY, f"{path.name}:{node.lineno} imports {name}"
