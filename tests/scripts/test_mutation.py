"""scripts/mutation.py's commit-seeded mode: a draw over the whole package, weighted by
lines, that nobody picks and everybody at one commit repeats."""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import mutation
import pytest

from tests.conftest import REPO


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


def _copy_with_test(tmp_path: Path, name: str, text: str):
    """The fake copy with test file ``name`` in place of the one failing anyway: (copy, the
    module, its source, a mutant of it, x + 2)."""
    copy = _fake_copy(tmp_path)
    (copy / "tests" / "test_broken.py").unlink()
    (copy / "tests" / name).write_text(text)
    target = copy / "pkg" / "__init__.py"
    original = target.read_text()
    return copy, target, original, original.replace("x + 1", "x + 2")


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


def test_a_modules_tests_come_from_the_layout(tmp_path):
    """A module's test files are computed, never listed by hand: its own (tests/<folder>/
    test_<module>.py, then test_<module>_*.py), the end-to-end tests of the command it is named
    after, the files that import it by name, for a front-end every end-to-end test; for a module
    nothing names, the own tests of the package's modules that import it."""
    pkg = tmp_path / "mlirhlo_driver"
    for folder in ("sub", "cli"):
        (pkg / folder).mkdir(parents=True)
    (pkg / "sub" / "thing.py").write_text("X = 1\n")
    (pkg / "sub" / "helper.py").write_text("Y = 2\n")
    (pkg / "sub" / "user.py").write_text("from .helper import Y\n")
    (pkg / "sub" / "opt.py").write_text("Z = 3\n")
    (pkg / "cli" / "front.py").write_text("W = 4\n")
    tests = tmp_path / "tests"
    for folder in ("sub", "e2e", "other"):
        (tests / folder).mkdir(parents=True)
    (tests / "sub" / "test_thing.py").write_text("")
    (tests / "sub" / "test_thing_behaviour.py").write_text("")
    (tests / "sub" / "test_thingy.py").write_text("")  # another module's
    (tests / "sub" / "test_user.py").write_text("")
    (tests / "other" / "test_a.py").write_text("from mlirhlo_driver.sub import other, thing\n")
    (tests / "other" / "test_b.py").write_text("import mlirhlo_driver.sub.thing as t\n")
    (tests / "other" / "test_c.py").write_text("from mlirhlo_driver.sub import things\nimport mlirhlo_driver.sub.thingy\n")
    (tests / "e2e" / "test_opt.py").write_text("")
    (tests / "e2e" / "test_run.py").write_text("")
    assert mutation.tests_for("sub/thing.py", tmp_path) == [
        "sub/test_thing.py", "sub/test_thing_behaviour.py", "other/test_a.py", "other/test_b.py"]
    assert mutation.tests_for("sub/opt.py", tmp_path) == ["e2e/test_opt.py"]
    assert mutation.tests_for("cli/front.py", tmp_path) == ["e2e/test_opt.py", "e2e/test_run.py"]
    assert mutation.users("sub/helper.py", tmp_path) == ["sub/user.py"]
    assert mutation.tests_for("sub/helper.py", tmp_path) == ["sub/test_user.py"]
    assert not hasattr(mutation, "MODULE_TESTS")


def test_every_module_with_sites_has_test_files_here():
    """In this repository every module that can be mutated maps to at least one test file."""
    missing = [m for m in mutation.package_modules() if mutation.sites_of(REPO / "mlirhlo_driver" / m)
               and not mutation.tests_for(m)]
    assert missing == [], missing


def test_the_seed_is_the_commit_hash():
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    if not sha:
        import pytest

        pytest.skip("not a git checkout")
    seed, got = mutation.commit_seed()
    assert got == sha and seed == int(sha[:12], 16)


@pytest.mark.golden
def test_a_revision_that_names_no_commit_is_one_error_line():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "mutation.py"), "--commit", "HEAD~99999",
                           "--list", "-n", "1"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == "error: --commit: 'HEAD~99999' names no commit of this repository\n"


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_every_mutant_of_a_module_keeps_its_comments():
    """No site of a real module falls back to printing the whole module again (which drops comments)."""
    path = REPO / "mlirhlo_driver" / "cuda" / "kernels.py"
    comments = [ln for ln in path.read_text().splitlines() if ln.strip().startswith("#")]
    for i in range(len(mutation.sites_of(path))):
        text, _ = mutation.mutant_source(path, i)
        assert [ln for ln in text.splitlines() if ln.strip().startswith("#")] == comments, i


@pytest.mark.slow
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


def test_a_site_knows_whether_it_runs_at_import_or_when_called(tmp_path):
    """Module and class level, defaults and decorators run at import (every test relies on
    them); a function's body runs when called (only the tests that call it can notice)."""
    src = tmp_path / "m.py"
    src.write_text("X = 1\n\n\n@deco(2)\ndef f(a=3):\n    return a + 4\n\n\nclass C:\n    y = 5\n\n"
                   "    def g(self):\n        def h():\n            return 6\n        return h\n")
    m = mutation.Mutator()
    import ast

    m.visit(ast.parse(src.read_text()))
    got = {what: call for (line, what), call in zip(m.sites, m.in_call)}
    assert got == {"1 -> 2": False, "2 -> 3": False, "3 -> 4": False, "4 -> 5": True, "Add -> Sub": True,
                   "return None": True, "5 -> 6": False, "6 -> 7": True}
    # A memoized body runs once per process, for whichever test came first: as at import.
    src.write_text("import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef f():\n    return 1\n\n\n"
                   "@cache\ndef g():\n    return 2\n\n\ndef h():\n    return 3\n")
    m = mutation.Mutator()
    m.visit(ast.parse(src.read_text()))
    assert [(what, call) for (line, what), call in zip(m.sites, m.in_call)] == [
        ("1 -> 2", False), ("return None", False), ("2 -> 3", False), ("return None", False),
        ("3 -> 4", True), ("return None", True)]


def test_a_site_in_a_statement_over_several_lines_is_known_by_its_first():
    text = "x = (1 +\n     2)\nif (a and\n        b):\n    y = [3,\n         4]\n"
    starts = mutation.statement_lines(text)
    assert [starts[n] for n in range(1, 7)] == [1, 1, 3, 3, 5, 5]


@pytest.mark.slow
def test_a_test_file_that_cannot_be_imported_with_the_mutant_kills_it(tmp_path):
    """A mutant that makes a test file's top level raise stops pytest before any test: the file
    is named and the mutant killed, in the whole suite and among a line's tests; a file that
    cannot be imported without the mutant either kills nothing."""
    copy, target, original, mutant = _copy_with_test(
        tmp_path, "test_import.py", "import pkg\n\nSPECS = ['a', 'b'][pkg.f(0)]\n\n\ndef test_spec():\n    assert SPECS\n")
    killed = ("failed", "killed by tests/test_import.py (it cannot be imported)")
    assert mutation.confirm(copy, target, mutant, original, ["test_mapped.py"], 120) == killed
    assert mutation.confirm(copy, target, mutant, original, [], 120,
                            select=["tests/test_import.py::test_spec", "tests/test_mapped.py::test_runs"]) == killed
    assert target.read_text() == original
    (copy / "tests" / "test_import.py").write_text("import pkg\n\nSPECS = ['a'][pkg.f(0)]\n")
    assert mutation.confirm(copy, target, mutant, original, ["test_mapped.py"], 120) == (
        "passed", "test files that cannot be imported without the mutant too: tests/test_import.py")


@pytest.mark.slow
def test_a_test_whose_process_dies_with_the_mutant_kills_it(tmp_path):
    """A mutant that makes a test kill its own process (a native crash) leaves no report: the
    test that was running is named, and the mutant killed when it passes alone without it."""
    copy, target, original, mutant = _copy_with_test(
        tmp_path, "test_crash.py",
        "import os\n\nimport pkg\n\n\ndef test_native():\n    if pkg.f(1) != 2:\n        os.abort()\n")
    killed = ("failed", "killed by tests/test_crash.py::test_native")
    assert mutation.confirm(copy, target, mutant, original, [], 120, select=["tests/test_crash.py::test_native"],
                            timeout_kills=True) == killed
    assert mutation.confirm(copy, target, mutant, original, ["test_mapped.py", "test_other.py"], 120) == killed
    assert mutation.confirm(copy, target, original, original, ["test_mapped.py", "test_other.py"], 120) == (
        "passed", "the whole suite passes")


@pytest.mark.slow
def test_each_test_run_has_a_private_copy_of_the_users_cache(tmp_path, monkeypatch):
    """A mutant's run reads the user's driver cache but writes only its own copy: neither the
    user's cache nor the next run sees what it wrote."""
    user = tmp_path / "xdg" / "mlirhlo-driver"
    user.mkdir(parents=True)
    (user / "probe.json").write_text("good")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "copy").mkdir()
    copy = _fake_copy(tmp_path / "copy")
    (copy / "tests" / "test_broken.py").write_text(
        "import os\nfrom pathlib import Path\n\n\ndef test_spoils_the_cache():\n"
        "    probe = Path(os.environ['XDG_CACHE_HOME']) / 'mlirhlo-driver' / 'probe.json'\n"
        "    assert probe.read_text() == 'good'\n    probe.write_text('bad')\n")
    for _ in range(2):
        assert mutation.run_tests(copy, ["test_broken.py"], 120)[0] == "passed"
    assert (user / "probe.json").read_text() == "good"


@pytest.mark.slow
def test_the_tests_that_run_a_line_judge_its_mutant(tmp_path):
    """With a covmap, a mutant runs the tests that run its line, and only them: a failing one
    (that passes without it) kills it, a test elsewhere failing is not run, a hang the mutant
    causes is a kill, and a line no test runs survives without a run."""
    import json

    copy = _fake_copy(tmp_path)
    target = copy / "pkg" / "__init__.py"
    original = target.read_text()
    mutant = original.replace("x + 1", "x - 1")
    assert mutation.confirm(copy, target, mutant, original, [], 120,
                            select=["tests/test_other.py::test_value"]) == (
        "failed", "killed by tests/test_other.py::test_value")
    # Only the selected test runs: test_broken (failing anyway) is not even collected.
    assert mutation.confirm(copy, target, mutant, original, [], 120, select=["tests/test_mapped.py::test_runs"]) == (
        "passed", "the tests that run it pass")
    hang = original.replace("return x + 1", "while True:\n        pass")
    assert mutation.confirm(copy, target, hang, original, [], 5, select=["tests/test_other.py::test_value"],
                            timeout_kills=True)[0] == "timeout"
    assert target.read_text() == original

    pkg = tmp_path / "tree" / mutation.PKG
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text("K = 1\n\n\ndef f(x):\n    if x:\n        return (x +\n                2)\n"
                              "    return 3\n")
    sha = __import__("hashlib").sha256((pkg / "m.py").read_bytes()).hexdigest()
    covmap = tmp_path / "covmap.json"
    covmap.write_text(json.dumps({"tests": ["tests/test_a.py::t1", "tests/test_a.py::t2"], "seconds": {},
                                  "modules": {"m.py": {"sha256": sha, "lines": {"5": [0, 1], "6": [1]}}}}))
    cm = mutation.Covmap(covmap)
    sites = {what: i for i, (_, what) in enumerate(mutation.sites_of(pkg / "m.py"))}
    base = tmp_path / "tree"
    assert cm.covering("m.py", sites["1 -> 2"], base) is None  # at import: every test relies on it
    assert cm.covering("m.py", sites["negate if condition"], base) == ["tests/test_a.py::t1", "tests/test_a.py::t2"]
    assert cm.covering("m.py", sites["2 -> 3"], base) == ["tests/test_a.py::t2"]  # line 7: statement of line 6
    assert cm.covering("m.py", sites["3 -> 4"], base) == []  # line 8: no test runs it
    (pkg / "other.py").write_text("def g():\n    return 1\n")
    assert cm.covering("other.py", 0, base) == []  # no test imports it
    source = (pkg / "m.py").read_text()
    (pkg / "m.py").write_text(source + "\n")
    assert cm.covering("m.py", sites["2 -> 3"], base) is None  # changed since the map: it cannot say
    # A map with the module's source: an edit elsewhere moves the lines, their tests stay.
    covmap.write_text(json.dumps({"tests": ["tests/test_a.py::t1", "tests/test_a.py::t2"], "seconds": {},
                                  "modules": {"m.py": {"sha256": sha, "source": source,
                                                       "lines": {"5": [0, 1], "6": [1]}}}}))
    cm = mutation.Covmap(covmap)
    (pkg / "m.py").write_text(source.replace("def f(x):\n", "def f(x):\n    x = abs(x)\n    y = 0\n"))
    sites = {what: i for i, (_, what) in enumerate(mutation.sites_of(pkg / "m.py"))}
    assert cm.covering("m.py", sites["negate if condition"], base) == ["tests/test_a.py::t1", "tests/test_a.py::t2"]
    assert cm.covering("m.py", sites["2 -> 3"], base) == ["tests/test_a.py::t2"]
    assert cm.covering("m.py", sites["0 -> 1"], base) is None  # the new line: nothing known
    # The site's own statement edited: it cannot say, even for a line of it left as it was.
    (pkg / "m.py").write_text(source.replace("return (x +", "return (x *"))
    sites = {what: i for i, (_, what) in enumerate(mutation.sites_of(pkg / "m.py"))}
    assert cm.covering("m.py", sites["2 -> 3"], base) is None
    assert cm.covering("m.py", sites["negate if condition"], base) == ["tests/test_a.py::t1", "tests/test_a.py::t2"]


@pytest.mark.slow
def test_the_covmap_records_each_test_and_the_processes_it_starts(tmp_path, monkeypatch):
    """--build-covmap: a line run in the test's own process and one run only in a subprocess
    it starts are both put down to that test; a line no test runs, to none."""
    import json

    tree = tmp_path / "tree"
    (tree / mutation.PKG).mkdir(parents=True)
    (tree / mutation.PKG / "__init__.py").write_text(
        "def here():\n    return 1\n\n\ndef there():\n    return 2\n\n\ndef nowhere():\n    return 3\n\n\n"
        "def once():\n    return 4\n")
    (tree / "tests").mkdir()
    (tree / "tests" / "test_x.py").write_text(
        "import subprocess\nimport sys\n\nimport pytest\n\nimport mlirhlo_driver\n\n\n"
        "def test_in_process():\n    assert mlirhlo_driver.here() == 1\n\n\n"
        "@pytest.mark.parametrize('p', ['a|b'])\ndef test_again(p):\n    assert mlirhlo_driver.here() == 1\n\n\n"
        "@pytest.fixture(scope='module')\ndef shared():\n    return mlirhlo_driver.once()\n\n\n"
        "def test_first_user(shared):\n    assert shared == 4\n\n\n"
        "def test_second_user(shared):\n    assert shared == 4\n\n\n"
        "def test_in_a_subprocess():\n"
        "    subprocess.run([sys.executable, '-c', 'import mlirhlo_driver; mlirhlo_driver.there()'], check=True)\n")
    monkeypatch.setattr(mutation, "REPO", tree)
    out = tmp_path / "covmap.json"
    assert mutation.build_covmap(out, 300) == 0
    raw = json.loads(out.read_text())
    lines = {int(n): sorted(raw["tests"][i] for i in ids)
             for n, ids in raw["modules"]["__init__.py"]["lines"].items()}
    # Every test that runs a line, not only the first (sys.monitoring reports a line once).
    assert lines[2] == ["tests/test_x.py::test_again[a|b]", "tests/test_x.py::test_in_process"]
    assert lines[6] == ["tests/test_x.py::test_in_a_subprocess"]
    assert 10 not in lines
    # A module-scoped fixture runs once, under the first test: its lines are every user's.
    assert lines[14] == ["tests/test_x.py::test_first_user", "tests/test_x.py::test_second_user"]
    assert raw["modules"]["__init__.py"]["source"] == (tree / mutation.PKG / "__init__.py").read_text()
    assert set(raw["seconds"]) == {"tests/test_x.py::test_in_process", "tests/test_x.py::test_again[a|b]",
                                   "tests/test_x.py::test_in_a_subprocess", "tests/test_x.py::test_first_user",
                                   "tests/test_x.py::test_second_user"}


@pytest.mark.slow
def test_a_test_id_with_spaces_is_rerun_as_itself(tmp_path):
    """Failing tests are known by their full ids (parameters can hold spaces), so the rerun
    alone finds them and the kill stands."""
    copy = _fake_copy(tmp_path)
    (copy / "tests" / "test_other.py").write_text(
        "import pytest\n\nimport pkg\n\n\n@pytest.mark.parametrize('text', ['a b: c'])\n"
        "def test_value(text):\n    assert pkg.f(1) == 2\n")
    target = copy / "pkg" / "__init__.py"
    original = target.read_text()
    status, by = mutation.confirm(copy, target, original.replace("x + 1", "x - 1"), original, ["test_mapped.py"], 120)
    assert (status, by) == ("failed", "killed by tests/test_other.py::test_value[a b: c]")
    status, by = mutation.confirm(copy, target, original.replace("x + 1", "x - 1"), original, [], 120,
                                  select=["tests/test_other.py::test_value[a b: c]"])
    assert (status, by) == ("failed", "killed by tests/test_other.py::test_value[a b: c]")


@pytest.mark.slow
def test_baselines_running_at_once_keep_their_own_failures(tmp_path):
    """Two test files' baselines run at once, one copy each: each reports only its own failing
    tests (sharing one copy, a passing file was charged with the other's failure)."""
    copies = []
    for name in ("copy0", "copy1"):
        (tmp_path / name).mkdir()
        copy = _fake_copy(tmp_path / name)
        # Both files start together and overlap for a second: a shared failure record would mix.
        (copy / "tests" / "test_broken.py").write_text(
            "import time\n\n\ndef test_always_fails():\n    time.sleep(1)\n    assert False\n")
        (copy / "tests" / "test_other.py").write_text(
            "import time\n\n\ndef test_value():\n    time.sleep(2)\n")
        copies.append(copy)
    got = {name: failing for name, failing, _ in mutation.baselines(copies, ["test_broken.py", "test_other.py"], 120)}
    assert got == {"test_broken.py": ["tests/test_broken.py::test_always_fails"], "test_other.py": []}


def test_the_copy_holds_what_the_tests_read(tmp_path):
    """The package, its data folders kept at the root (gpu_specs/, pipelines/: the tests read
    them by path), the tests and scripts, the docs tests/test_readme.py runs; no bytecode."""
    copy = mutation.make_copy(tmp_path / "copy")
    assert sorted(p.name for p in copy.iterdir()) == sorted(
        [".ci", "ARCHITECTURE.md", "CONTRIBUTING.md", "README.md", "docs", "gpu_specs", "mkdocs.yml", "mlirhlo_driver",
         "pipelines", "pyproject.toml", "scripts", "tests"])
    assert (copy / "gpu_specs" / "h100_sxm.txtpb").is_file()
    assert {p.name for p in (copy / "pipelines").iterdir()} == {
        p.name for p in (REPO / "pipelines").iterdir() if p.name != "__pycache__"}
    assert not list(copy.rglob("__pycache__"))
