"""scripts/mutation.py's commit-seeded mode: a draw over the whole package, weighted by
lines, that nobody picks and everybody at one commit repeats."""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

import mutation  # noqa: E402


def test_every_module_of_the_package_can_be_drawn():
    modules = mutation.package_modules()
    on_disk = {str(p.relative_to(REPO / "mlirhlo_driver")) for p in (REPO / "mlirhlo_driver").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert set(modules) == on_disk and "commands/xla_tools.py" in modules


def test_the_draw_is_weighted_by_lines_and_repeatable():
    modules = ["cuda/specs.py", "mlir/ops.py"]  # about 870 lines against 17
    a = mutation.weighted_sample(40, 7, modules)
    assert a == mutation.weighted_sample(40, 7, modules)
    assert a != mutation.weighted_sample(40, 8, modules)
    counts = collections.Counter(m for m, *_ in a)
    assert counts["cuda/specs.py"] >= 35
    assert len({(m, i) for m, i, *_ in a}) == len(a)  # no site twice


def test_a_module_outside_the_table_runs_the_tests_that_import_it(tmp_path):
    (tmp_path / "mlirhlo_driver" / "sub").mkdir(parents=True)
    (tmp_path / "mlirhlo_driver" / "sub" / "thing.py").write_text("X = 1\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("from mlirhlo_driver.sub import other, thing\n")
    (tests / "test_b.py").write_text("import mlirhlo_driver.sub.thing as t\n")
    (tests / "test_c.py").write_text("from mlirhlo_driver.sub import things\nimport mlirhlo_driver.sub.thingy\n")
    assert mutation.tests_for("sub/thing.py", tmp_path) == ["test_a.py", "test_b.py"]
    assert mutation.tests_for("commands/mlirhlo.py", tmp_path) == mutation.MODULE_TESTS["commands/mlirhlo.py"]


def test_the_seed_is_the_commit_hash():
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    if not sha:
        import pytest

        pytest.skip("not a git checkout")
    seed, got = mutation.commit_seed()
    assert got == sha and seed == int(sha[:12], 16)


def test_a_fields_repr_flag_is_no_mutation_site(tmp_path):
    """field(repr=...) changes only how an object prints: never drawn."""
    src = tmp_path / "m.py"
    src.write_text("from dataclasses import dataclass, field\n\n\n@dataclass\nclass A:\n"
                   "    x: int = field(default=1, repr=False)\n")
    assert mutation.sites_of(src) == [(6, "1 -> 2")]


def test_every_equivalent_mutant_is_still_in_the_source():
    """An EQUIVALENT entry names a (module, line text, change) that exists: after a move or
    an edit, a stale entry would silently stop excusing its mutant."""
    keys = set()
    for mod in {m for m, _, _ in mutation.EQUIVALENT}:
        path = REPO / "mlirhlo_driver" / mod
        lines = path.read_text().splitlines()
        seen: dict = {}
        keys |= {mutation.site_key(mod, lines, line, what, seen) for line, what in mutation.sites_of(path)}
    assert set(mutation.EQUIVALENT) - keys == set()
