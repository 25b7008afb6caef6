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


def _fake_copy(tmp_path: Path) -> Path:
    """A package of one function and three test files: one mapped, one that notices the
    mutant, one that fails with or without it."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("def f(x):\n    return x + 1\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_mapped.py").write_text("import pkg\n\n\ndef test_runs():\n    assert pkg.f(1) is not None\n")
    (tests / "test_other.py").write_text("import pkg\n\n\ndef test_value():\n    assert pkg.f(1) == 2\n")
    (tests / "test_broken.py").write_text("def test_always_fails():\n    assert False\n")
    return tmp_path


def test_a_survivor_of_its_mapped_tests_meets_the_rest_of_the_suite(tmp_path):
    """The mapped files only filter: a test elsewhere that fails with the mutant (and passes
    without it) kills it; a test failing either way is set aside, not taken as a kill."""
    copy = _fake_copy(tmp_path)
    target = copy / "pkg" / "__init__.py"
    original = target.read_text()
    status, by = mutation.confirm(copy, target, original.replace("x + 1", "x - 1"), original, ["test_mapped.py"], 120)
    assert (status, by) == ("failed", "killed by tests/test_other.py::test_value")
    assert target.read_text() == original  # the copy is left unmutated
    status, by = mutation.confirm(copy, target, original.replace("x + 1", "1 + x"), original, ["test_mapped.py"], 120)
    assert (status, by) == ("passed", "the whole suite passes (but tests/test_broken.py::test_always_fails, "
                                      "failing without the mutant too, or only once with it)")
    (copy / "tests" / "test_broken.py").unlink()
    assert mutation.confirm(copy, target, original, original, ["test_mapped.py"], 120) == (
        "passed", "the whole suite passes")


def test_a_mutant_changes_its_own_text_and_nothing_else(tmp_path):
    """Only the mutated node's text is replaced: comments, formatting and the other lines stay,
    so the linter and the source-reading tests see what a one-line regression would show."""
    src = tmp_path / "m.py"
    src.write_text("import os\nimport sys  # why\n\n\ndef f(a, b):\n    if a and not b:  # keep\n"
                   "        return a + 1\n    return (a or\n            b)\n")
    got = {what: mutation.mutant_source(src, i)[0] for i, (_, what) in enumerate(mutation.sites_of(src))}
    assert got["negate if condition"].splitlines()[5] == "    if not (a and not b):  # keep"
    assert got["drop 'not'"].splitlines()[5] == "    if a and b:  # keep"
    assert got["And -> Or"].splitlines()[5] == "    if a or not b:  # keep"
    assert got["1 -> 2"].splitlines()[6] == "        return a + 2"
    assert [t.count("\n") for t in got.values()] == [9] * len(got)
    assert got["Add -> Sub"].splitlines()[6] == "        return a - 1"
    assert got["Or -> And"].splitlines()[7:] == ["    return (a and", "            b)"]
    assert got["return None"].splitlines()[7:] == ["    return ((None", "))"]  # the last return: lines kept
    for text in got.values():
        assert text.startswith("import os\nimport sys  # why\n\n\ndef f(a, b):\n")


def test_every_mutant_of_a_module_keeps_its_comments():
    """No site of a real module falls back to printing the whole module again (which drops comments)."""
    path = REPO / "mlirhlo_driver" / "cuda" / "kernels.py"
    comments = [ln for ln in path.read_text().splitlines() if ln.strip().startswith("#")]
    for i in range(len(mutation.sites_of(path))):
        text, _ = mutation.mutant_source(path, i)
        assert [ln for ln in text.splitlines() if ln.strip().startswith("#")] == comments, i


def test_a_test_that_fails_once_under_load_is_no_kill(tmp_path):
    """A test that fails with the mutant in the whole run but passes when run alone with it (a
    timing bound under load) is flaky: set aside, and the mutant survives."""
    copy = _fake_copy(tmp_path)
    (copy / "tests" / "test_broken.py").unlink()
    marker = tmp_path / "ran_once"
    (copy / "tests" / "test_flaky.py").write_text(
        "from pathlib import Path\n\n\ndef test_slow_under_load():\n"
        f"    m = Path({str(marker)!r})\n    first = not m.exists()\n    m.touch()\n    assert not first\n")
    target = copy / "pkg" / "__init__.py"
    original = target.read_text()
    status, by = mutation.confirm(copy, target, original.replace("x + 1", "1 + x"), original, ["test_mapped.py"], 120)
    assert (status, by) == ("passed", "the whole suite passes (but tests/test_flaky.py::test_slow_under_load, "
                                      "failing without the mutant too, or only once with it)")
