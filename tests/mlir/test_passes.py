"""The catalogue of jaxlib's MLIR passes (mlir/passes.py): where the scan looks, what it keeps,
its cache, one-name probes, the lazy catalogue, and the guard against Python passes taking a
native pass's name.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from types import SimpleNamespace

import pytest

import mlirhlo_driver.mlir.passes as passes
from mlirhlo_driver.errors import InputError
from mlirhlo_driver.mlir import python_passes
from mlirhlo_driver.mlir.passes import all_passes

CSE = passes.PassInfo("cse", "any", "Eliminate common sub-expressions", "jaxlib")

SYMBOL_DCE = passes.PassInfo("symbol-dce", "builtin.module", "Eliminate dead symbols", "jaxlib")

CHLO = passes.PassInfo("chlo-legalize-to-stablehlo", "func.func", "Legalize CHLO to StableHLO", "jaxlib")


def _fake_jaxlib(monkeypatch, root):
    """Make util.find_spec('jaxlib') answer a package at ``root``."""
    monkeypatch.setattr(passes.util, "find_spec",
                        lambda name: SimpleNamespace(submodule_search_locations=[str(root)]))


def _fake_library(path, pieces):
    """A 'shared library' whose NUL-separated strings are ``pieces``."""
    path.write_bytes(b"\x7fELF\0" + b"\0".join(pieces) + b"\0")
    return path


# ------------------------------------------------------------------ the lazy catalogue


def _counting_probe(monkeypatch, known):
    probed = []

    def probe(name):
        probed.append(name)
        return known.get(name)

    monkeypatch.setattr(passes, "probe_pass", probe)
    return probed


def _python_pass(name, anchor="func.func", description="d", origin="builtin"):
    return python_passes.PythonPass(name, lambda op: None, anchor, description, origin)


@pytest.fixture(scope="module")
def catalog():
    return all_passes()


# ------------------------------------------------------------------ where the scan looks


def test_jaxlib_libraries_are_every_shared_object_at_any_depth_sorted(monkeypatch, tmp_path):
    """The scan reads jaxlib's .so files at the top and in nested folders, sorted, and nothing else
    (hidden names, as a glob leaves them out: an editor's or pip's temporary files)."""
    for rel in ("z.so", "mlir/_mlir_libs/_mlir.so", "cpu/_lapack.so", "a.so", "version.py", "notes.so.txt",
                ".partial.so", ".tmp/b.so"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x")
    _fake_jaxlib(monkeypatch, tmp_path)
    assert passes.jaxlib_libraries() == [str(tmp_path / r) for r in
                                         ("a.so", "cpu/_lapack.so", "mlir/_mlir_libs/_mlir.so", "z.so")]


def test_the_real_jaxlib_libraries_include_the_nested_mlir_bindings():
    """Installed jaxlib: the MLIR bindings two folders down are scanned with the top-level libraries."""
    libs = passes.jaxlib_libraries()
    assert libs == sorted(libs)
    assert any(lib.endswith("/jaxlib/mlir/_mlir_libs/_mlir.so") for lib in libs)
    assert any(lib.endswith("/jaxlib/_jax.so") for lib in libs)


def test_cache_key_follows_jaxlib_version_file_and_libraries(monkeypatch, tmp_path):
    """The cache key changes when jaxlib's version.py or one of its libraries changes; it is 16 hex digits."""
    _fake_jaxlib(monkeypatch, tmp_path)
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"one")
    no_version = passes.jaxlib_cache_key()  # no version.py: still a key
    (tmp_path / "version.py").write_text("__version__ = '1'\n")
    v1 = passes.jaxlib_cache_key()
    assert v1 == passes.jaxlib_cache_key()  # stable
    (tmp_path / "version.py").write_text("__version__ = '2'\n")
    v2 = passes.jaxlib_cache_key()
    lib.write_bytes(b"longer")
    v2_lib = passes.jaxlib_cache_key()
    keys = [no_version, v1, v2, v2_lib]
    assert len(set(keys)) == 4, keys
    assert all(len(k) == 16 and int(k, 16) >= 0 for k in keys)


def test_cache_key_is_the_same_for_the_same_jaxlib_installed_elsewhere(monkeypatch, tmp_path):
    """A new environment with the same jaxlib (same version file, same libraries by name and
    size, other place and times) reuses the catalogue: the key ignores where and when."""
    keys = []
    for where, when in (("env-a", 1_000_000_000), ("env-b", 2_000_000_000)):
        root = tmp_path / where / "jaxlib"
        (root / "mlir").mkdir(parents=True)
        (root / "version.py").write_text("__version__ = '0.12.0.1'\n")
        for rel, data in (("libjax_common.so", b"common"), ("mlir/_mlir.so", b"mlir")):
            (root / rel).write_bytes(data)
            os.utime(root / rel, ns=(when, when))
        _fake_jaxlib(monkeypatch, root)
        keys.append(passes.jaxlib_cache_key())
    assert keys[0] == keys[1]
    (root / "mlir" / "_mlir.so").write_bytes(b"mlir, rebuilt")
    assert passes.jaxlib_cache_key() != keys[0]


def test_the_scan_reads_string_literals_from_rodata(tmp_path):
    """A real ELF library: only its .rodata section is read (where a pass's name, a string
    literal, lives); a file that is no ELF file is read whole."""
    libs = passes.jaxlib_libraries()
    common = [lib for lib in libs if os.path.basename(lib).startswith("libjax_common")] or libs
    data = passes._string_data(common[0])
    assert b"\0canonicalize\0" in data and len(data) < os.path.getsize(common[0])
    other = _fake_library(tmp_path / "libfake.so", [b"cse"])
    assert passes._string_data(str(other)) == other.read_bytes()


def test_nested_tries_share_a_child_until_one_kills_it(monkeypatch):
    """Many names, few forks: a child tries names in turn and the next one starts after the
    name that killed it (Shardy's pipelines abort nested under func.func); the outcomes are
    those of one fork per name."""
    from mlirhlo_driver._native import isolate

    forks = []
    real = isolate.forked
    monkeypatch.setattr(isolate, "forked", lambda *a, **kw: forks.append(a[2][0]) or real(*a, **kw))
    names = ["cse", "sdy-import-pipeline", "symbol-dce", "canonicalize", "sdy-export-pipeline",
             "sdy-propagation-pipeline"]
    assert passes._run_nested_in_children(names) == {
        "cse": True, "sdy-import-pipeline": False, "symbol-dce": False, "canonicalize": True,
        "sdy-export-pipeline": False, "sdy-propagation-pipeline": False}
    assert forks == ["cse", "symbol-dce", "sdy-propagation-pipeline"]
    assert [passes._runs_nested_in_child(n) for n in names] == [True, False, False, True, False, False]


# ------------------------------------------------------------------ the cache


def test_native_passes_writes_its_cache_per_key_under_a_missing_cache_home(monkeypatch, tmp_path):
    """A scan's result is written as passes-KEY.json under XDG_CACHE_HOME/mlirhlo-driver (folders
    made as needed), one file per jaxlib build, and read back on the next call."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not" / "yet"))
    keys = iter(["aaaa", "aaaa", "bbbb", "bbbb"])
    monkeypatch.setattr(passes, "jaxlib_cache_key", lambda: next(keys))
    scans = []
    monkeypatch.setattr(passes, "_scan_in_subprocess", lambda: scans.append(1) or [CSE, SYMBOL_DCE])
    assert passes.native_passes() == [CSE, SYMBOL_DCE]
    assert passes.native_passes() == [CSE, SYMBOL_DCE] and len(scans) == 1
    assert passes.native_passes() == [CSE, SYMBOL_DCE] and len(scans) == 2  # another key
    folder = tmp_path / "not" / "yet" / "mlirhlo-driver"
    assert sorted(p.name for p in folder.iterdir()) == ["passes-aaaa.json", "passes-bbbb.json"]
    rows = json.loads((folder / "passes-bbbb.json").read_text())
    assert rows == [{"name": "cse", "anchor": "any", "description": "Eliminate common sub-expressions",
                     "origin": "jaxlib"},
                    {"name": "symbol-dce", "anchor": "builtin.module", "description": "Eliminate dead symbols",
                     "origin": "jaxlib"}]
    assert passes.native_passes() == [CSE, SYMBOL_DCE] and len(scans) == 2


def test_an_unwritable_cache_only_costs_a_rescan(monkeypatch, tmp_path):
    """A cache home that is a file: the scan's result is still returned, each time."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    scans = []
    monkeypatch.setattr(passes, "_scan_in_subprocess", lambda: scans.append(1) or [CSE])
    assert passes.native_passes() == [CSE]
    assert passes.native_passes() == [CSE] and len(scans) == 2


@pytest.mark.parametrize("text, expected", [
    ('[{"name": "cse", "anchor": "any", "description": "Eliminate common sub-expressions", "origin": "jaxlib"}]',
     [CSE]),
    ('[{"name": "cse", "anchor": "any"}]', [passes.PassInfo("cse", "any")]),
    ("[]", []),
    ("not json", None),
    ('[{"name": "cse", "colour": "red"}]', None),
    (None, None),
], ids=["full-row", "defaults", "empty", "not-json", "unknown-field", "missing"])
def test_cached_native_passes_reads_rows_or_says_none(monkeypatch, tmp_path, text, expected):
    """The cache file at the default path (the current jaxlib's key) read back as PassInfo rows;
    a missing, malformed or foreign file is None (a rescan), never an error."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(passes, "jaxlib_cache_key", lambda: "k123")
    path = tmp_path / "mlirhlo-driver" / "passes-k123.json"
    if text is not None:
        path.parent.mkdir(parents=True)
        path.write_text(text)
    assert passes._cached_native_passes() == expected
    assert passes._cached_native_passes(path) == expected


# ------------------------------------------------------------------ probing and scanning


def test_probe_pass_records_name_anchor_and_description():
    """One name probed as the scan would record it; a name that is no pass, or is a pipeline
    rather than one name, is None."""
    assert passes.probe_pass("cse") == CSE
    assert passes.probe_pass("symbol-dce") == SYMBOL_DCE
    assert passes.probe_pass("chlo-legalize-to-stablehlo") == CHLO
    assert passes.probe_pass("sccp") == passes.PassInfo("sccp", "any", "Sparse conditional constant propagation")
    assert passes.probe_pass("no-such-pass") is None
    assert passes.probe_pass("cse,canonicalize") is None  # parses as a pipeline, is no one pass
    assert passes.probe_pass("func.func(cse)") is None


def test_scan_keeps_identifier_strings_of_3_to_64_characters_that_are_passes(monkeypatch, tmp_path):
    """The scan reads each library's NUL-separated strings; those of 3..64 characters shaped like
    a pass name and accepted by jaxlib are passes, sorted by name, each with its anchor."""
    lib = _fake_library(tmp_path / "libfake.so", [
        b"symbol-dce", b"cse", b"cse", b"chlo-legalize-to-stablehlo", b"no-such-pass", b"ab",
        b"Canonicalize", b"\xff\xfe\xfd\xfc", b"cse canonicalize", b"a" * 65, b"sccp"])
    monkeypatch.setattr(passes, "jaxlib_libraries", lambda: [str(lib)])
    seen = []
    real = passes._parsed_anchor
    monkeypatch.setattr(passes, "_parsed_anchor", lambda name: seen.append(name) or real(name))
    assert passes.scan_native_passes() == [
        CHLO, CSE, passes.PassInfo("sccp", "any", "Sparse conditional constant propagation"), SYMBOL_DCE]
    assert seen == ["chlo-legalize-to-stablehlo", "cse", "no-such-pass", "sccp", "symbol-dce"]


def test_scan_candidates_may_be_as_short_as_3_characters(monkeypatch, tmp_path):
    """Three characters (``cse``) are a candidate, two are not. The upper bound (64) only keeps the
    scan cheap, far above any pass name: mutation.py records it as equivalent."""
    names = [b"abc", b"x" * 40, b"ab"]
    lib = _fake_library(tmp_path / "libfake.so", names)
    monkeypatch.setattr(passes, "jaxlib_libraries", lambda: [str(lib)])
    seen = []
    monkeypatch.setattr(passes, "_parsed_anchor", lambda name: seen.append(name) or None)
    assert passes.scan_native_passes() == []
    assert seen == ["abc", "x" * 40]


def test_scan_in_subprocess_reads_the_childs_json_rows(monkeypatch):
    """The child's stdout is the catalogue: JSON rows, one per pass, read back as PassInfo."""
    from mlirhlo_driver._native import processes

    rows = [{"name": "cse", "anchor": "any", "description": "Eliminate common sub-expressions",
             "origin": "jaxlib"}, {"name": "x-pass", "anchor": "func.func", "description": "",
                                   "origin": "jaxlib"}]
    code = f"import sys; sys.stderr.write('noise from native code\\n'); print({json.dumps(rows)!r})"
    monkeypatch.setattr(processes, "python_command", lambda module, *args: [sys.executable, "-c", code])
    assert passes._scan_in_subprocess() == [CSE, passes.PassInfo("x-pass", "func.func")]


def test_the_module_run_as_a_script_prints_the_scan_as_json(tmp_path):
    """``python -m mlirhlo_driver.mlir.passes`` (the scan's child) prints the catalogue as JSON rows
    (here of a library holding four candidate strings) and nothing else on stdout."""
    import subprocess

    from mlirhlo_driver._native import processes

    lib = _fake_library(tmp_path / "libfake.so", [b"cse", b"symbol-dce", b"no-such-pass", b"sccp"])
    code = textwrap.dedent(f"""
        import os, runpy
        real = os.walk
        def walk(root, *a, **kw):  # jaxlib's folder holds the fake library alone
            if os.path.basename(os.path.normpath(root)) == "jaxlib":
                return iter([({str(lib.parent)!r}, [], [{lib.name!r}])])
            return real(root, *a, **kw)
        os.walk = walk
        runpy.run_module("mlirhlo_driver.mlir.passes", run_name="__main__")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=processes.python_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        {"name": "cse", "anchor": "any", "description": "Eliminate common sub-expressions", "origin": "jaxlib"},
        {"name": "sccp", "anchor": "any", "description": "Sparse conditional constant propagation",
         "origin": "jaxlib"},
        {"name": "symbol-dce", "anchor": "builtin.module", "description": "Eliminate dead symbols",
         "origin": "jaxlib"}]


def test_importing_the_module_prints_nothing():
    """Importing the catalogue module (not running it) scans nothing and prints nothing."""
    import subprocess

    from mlirhlo_driver._native import processes

    proc = subprocess.run([sys.executable, "-c", "import mlirhlo_driver.mlir.passes"], capture_output=True,
                          text=True, env=processes.python_env(), check=False, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "")


def test_catalog_probes_each_name_once_until_it_needs_them_all(monkeypatch):
    """Without a cached catalogue, a lookup probes that one name (once, answer or not); Python
    passes are answered without probing; iterating or counting scans once, and lookups then
    come from the scan."""
    probed = _counting_probe(monkeypatch, {"cse": CSE})
    scans = []
    monkeypatch.setattr(passes, "native_passes", lambda: scans.append(1) or [CSE, SYMBOL_DCE])
    mine = passes.PassInfo("my-pass", "func.func", "mine", "python")
    cat = passes._Catalog(None, {"my-pass": mine})
    assert cat["cse"] == CSE and cat["cse"] == CSE
    assert cat["my-pass"] is mine
    for _ in range(2):
        with pytest.raises(KeyError):
            cat["no-such-pass"]
    assert "cse" in cat and "no-such-pass" not in cat
    assert probed == ["cse", "no-such-pass"] and scans == []
    assert list(cat) == ["cse", "symbol-dce", "my-pass"]
    assert len(cat) == 3 and scans == [1]
    assert cat["symbol-dce"] == SYMBOL_DCE and cat["my-pass"] is mine
    with pytest.raises(KeyError):
        cat["sccp"]  # the full list has it not: no probe
    assert probed == ["cse", "no-such-pass"] and scans == [1]
    assert dict(cat) == {"cse": CSE, "symbol-dce": SYMBOL_DCE, "my-pass": mine}


def test_catalog_with_the_full_list_never_probes(monkeypatch):
    """A cached catalogue answers every lookup; a Python pass wins over nothing, and is listed last."""
    probed = _counting_probe(monkeypatch, {"sccp": CSE})
    monkeypatch.setattr(passes, "native_passes", lambda: pytest.fail("no scan with a full list"))
    mine = passes.PassInfo("my-pass", "any", "", "python")
    cat = passes._Catalog({"cse": CSE}, {"my-pass": mine})
    assert cat["cse"] == CSE and cat["my-pass"] is mine
    with pytest.raises(KeyError):
        cat["sccp"]
    assert list(cat) == ["cse", "my-pass"] and len(cat) == 2 and probed == []


def test_probes_are_remembered_per_jaxlib_build_until_the_catalogue_is_there(monkeypatch, tmp_path):
    """A name probed once (pass or not) is answered from the cache by the next process's
    catalogue, without a probe; another jaxlib build probes again, and so does everything
    once a full catalogue is cached (it answers alone)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(passes, "jaxlib_cache_key", lambda: "k1")
    monkeypatch.setattr(passes, "_cached_native_passes", lambda path=None: None)
    none = python_passes.PassSet()
    probed = _counting_probe(monkeypatch, {"cse": CSE, "symbol-dce": SYMBOL_DCE})
    first = passes.all_passes(none)
    assert first["cse"] == CSE and "no-such-pass" not in first
    assert probed == ["cse", "no-such-pass"]
    rows = json.loads((tmp_path / "mlirhlo-driver" / "passes-probed-k1.json").read_text())
    assert rows == {"cse": {"name": "cse", "anchor": "any", "description": "Eliminate common sub-expressions",
                            "origin": "jaxlib"}, "no-such-pass": None}
    again = passes.all_passes(none)  # as the next command would
    assert again["cse"] == CSE and "no-such-pass" not in again and again["symbol-dce"] == SYMBOL_DCE
    assert probed == ["cse", "no-such-pass", "symbol-dce"]
    monkeypatch.setattr(passes, "jaxlib_cache_key", lambda: "k2")
    assert passes.all_passes(none)["cse"] == CSE and probed[-1] == "cse"
    (tmp_path / "mlirhlo-driver" / "passes-probed-k2.json").write_text("not json")
    assert passes.all_passes(none)["cse"] == CSE and probed[-1] == "cse"  # unreadable: probed again


def test_all_passes_joins_python_passes_without_probing_when_cached(monkeypatch):
    """With a cached catalogue, each Python pass is checked against it (no probe) and listed
    with origin 'python' after jaxlib's."""
    monkeypatch.setattr(passes, "_cached_native_passes", lambda path=None: [CSE, SYMBOL_DCE])
    probed = _counting_probe(monkeypatch, {})
    cat = passes.all_passes(python_passes.PassSet([_python_pass("my-pass", "any", "mine")]))
    assert probed == []
    assert dict(cat) == {"cse": CSE, "symbol-dce": SYMBOL_DCE,
                         "my-pass": passes.PassInfo("my-pass", "any", "mine", "python")}


def test_all_passes_probes_each_python_pass_name_when_not_cached(monkeypatch, tmp_path):
    """Without a cached catalogue, each Python pass's name is probed (to refuse a native name),
    and nothing is scanned until the catalogue is listed."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the fake probes are remembered there
    monkeypatch.setattr(passes, "_cached_native_passes", lambda path=None: None)
    probed = _counting_probe(monkeypatch, {"cse": CSE})
    monkeypatch.setattr(passes, "native_passes", lambda: pytest.fail("no scan for a lookup"))
    cat = passes.all_passes(python_passes.PassSet([_python_pass("a-pass"),
                                                   _python_pass("b-pass", "builtin.module", "b")]))
    assert probed == ["a-pass", "b-pass"]
    assert cat["b-pass"] == passes.PassInfo("b-pass", "builtin.module", "b", "python")
    assert cat["cse"] == CSE and probed == ["a-pass", "b-pass", "cse"]


@pytest.mark.golden
@pytest.mark.parametrize("cached", [True, False], ids=["cached", "probed"])
def test_a_python_pass_with_a_native_name_is_refused(monkeypatch, tmp_path, cached):
    """Golden (its message and hint). A Python pass (from any origin) named like one of jaxlib's passes is an input error naming it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(passes, "_cached_native_passes", lambda path=None: [CSE] if cached else None)
    _counting_probe(monkeypatch, {"cse": CSE})
    with pytest.raises(InputError) as e:
        passes.all_passes(python_passes.PassSet([_python_pass("a-pass"), _python_pass("cse", origin="entry point mine")]))
    assert e.value.message == ("Python pass 'cse' (from entry point mine) has the name of a native jaxlib "
                               "pass; it cannot replace it")
    assert e.value.hint == "give the Python pass another name"


def test_load_plugins_refuses_a_native_name_and_keeps_the_others(monkeypatch, tmp_path):
    """passes.load_plugins: a new set with a plugin's passes, beside the built-in ones; a plugin
    with a pass named like a jaxlib pass is refused, and nothing of it is in any set."""
    monkeypatch.setattr(passes, "native_passes", lambda: [CSE, SYMBOL_DCE])
    good = tmp_path / "good_passes.py"
    good.write_text(textwrap.dedent("""
        import mlirhlo_driver


        @mlirhlo_driver.register_pass("zz-guard-b")
        def b(op):
            pass


        @mlirhlo_driver.register_pass("zz-guard-a")
        def a(op):
            pass
    """))
    bad = tmp_path / "bad_passes.py"
    bad.write_text(good.read_text().replace("zz-guard-a", "symbol-dce").replace("zz-guard-b", "zz-guard-c"))
    loaded = passes.load_plugins([str(good)])
    assert sorted(n for n, p in loaded.items() if p.plugin_file()) == ["zz-guard-a", "zz-guard-b"]
    assert "inline-calls" in loaded and "zz-guard-a" not in python_passes.PassSet.default()
    with pytest.raises(InputError) as e:
        passes.load_plugins([str(bad)], base=loaded)
    assert "'symbol-dce'" in e.value.message and "native" in e.value.message  # wording: test_python_passes.py
    assert "zz-guard-c" not in loaded and "zz-guard-c" not in python_passes.PassSet.default()


def test_cached_native_passes_reads_the_path_it_is_given(monkeypatch, tmp_path):
    """An explicit cache path is read, not the default one of the current jaxlib."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(passes, "jaxlib_cache_key", lambda: "k123")
    default = tmp_path / "xdg" / "mlirhlo-driver" / "passes-k123.json"
    default.parent.mkdir(parents=True)
    default.write_text('[{"name": "symbol-dce", "anchor": "builtin.module"}]')
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('[{"name": "cse", "anchor": "any"}]')
    assert passes._cached_native_passes(elsewhere) == [passes.PassInfo("cse", "any")]
    assert passes._cached_native_passes(tmp_path / "missing.json") is None
    assert passes._cached_native_passes() == [passes.PassInfo("symbol-dce", "builtin.module")]


def test_a_first_scan_shows_a_transient_line_on_a_terminal_only(monkeypatch):
    """While the first scan of a jaxlib runs, a terminal gets rich's status line; piped
    stderr gets nothing."""
    import contextlib
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert isinstance(passes._scan_status(), contextlib.nullcontext)
    monkeypatch.setattr(sys, "stderr", Terminal())
    with passes._scan_status() as status:
        assert "listing this jaxlib's passes" in str(status.status)


def test_native_pass_list_is_cached_per_jaxlib(monkeypatch, tmp_path):
    from mlirhlo_driver.mlir import passes

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    scans: list[int] = []

    def fake_scan():
        scans.append(1)
        return [passes.PassInfo("canonicalize", "any", "", "jaxlib")]

    monkeypatch.setattr(passes, "_scan_in_subprocess", fake_scan)
    first = passes.native_passes()
    assert first == [passes.PassInfo("canonicalize", "any", "", "jaxlib")]
    assert passes.native_passes() == first and len(scans) == 1  # the second read the cache
    # Another jaxlib (its libraries changed): the cache no longer applies.
    lib = tmp_path / "libother.so"
    lib.write_bytes(b"x")
    monkeypatch.setattr(passes, "jaxlib_libraries", lambda: [str(lib)])
    assert passes.native_passes() == first and len(scans) == 2


@pytest.mark.parametrize("found", [None, SimpleNamespace(submodule_search_locations=[])],
                         ids=["not-installed", "no-package-dir"])
def test_without_a_jaxlib_package_there_are_no_libraries_and_still_a_cache_key(monkeypatch, found):
    """No jaxlib package dir: jaxlib_libraries() is an empty list and the cache key is still computed."""
    from mlirhlo_driver.mlir import passes

    monkeypatch.setattr(passes.util, "find_spec", lambda name: found)
    assert passes.jaxlib_libraries() == []
    key = passes.jaxlib_cache_key()
    assert len(key) == 16 and int(key, 16) >= 0


def test_pass_catalog_comes_from_jaxlib(cli, catalog):
    # Names jaxlib really accepts, with anchors found from jaxlib itself.
    assert catalog["canonicalize"].anchor == "any"
    assert catalog["chlo-legalize-to-stablehlo"].anchor == "func.func"
    assert catalog["stablehlo-legalize-to-vhlo"].anchor == "builtin.module"
    assert catalog["symbol-dce"].anchor == "builtin.module"  # needs a symbol table
    assert any(n.startswith("sdy-") for n in catalog)
    assert len(catalog) > 100
    # Every listed pass parses in its anchor.
    from jaxlib.mlir import passmanager

    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        for info in catalog.values():
            if info.origin == "python":
                continue  # run by the driver, not parsed by MLIR
            nested = info.name if info.anchor in ("any", "builtin.module") else f"{info.anchor}({info.name})"
            passmanager.PassManager.parse(f"builtin.module({nested})")
    listing = cli("passes")
    assert listing.code == 0
    assert re.search(r"^chlo-legalize-to-stablehlo\s+func\.func\s+Legalize CHLO", listing.out, re.M)
    assert "@simplify" in listing.out and "@shardy-propagate" in listing.out
    # One column: the passes' anchors, and each named pipeline's summary and its spec below it.
    rows = listing.out.splitlines()
    anchor = re.search(r"^chlo-legalize-to-stablehlo\s+", listing.out, re.M)
    column = anchor.end() - anchor.start()
    at = next(i for i, r in enumerate(rows) if r.startswith("@simplify "))
    summary, spec = rows[at], rows[at + 1]
    assert summary[:column].rstrip() == "@simplify" and summary[column] != " " and summary[column - 1] == " "
    assert len(spec) - len(spec.lstrip()) == column and spec[column:].startswith("builtin.module(")
    assert cli("opt", "--list-passes").out == listing.out


@pytest.mark.slow
def test_first_passes_in_a_new_environment_probes_only_the_named_passes(tmp_path):
    """No pass catalogue yet (a new environment): `--passes` probes the passes it names
    instead of scanning all of jaxlib (seconds); a did-you-mean hint still gets the scan."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    module = tmp_path / "m.mlir"
    module.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  %1 = stablehlo.add %a, %a : tensor<4xf32>\n"
                      "  %2 = stablehlo.multiply %0, %1 : tensor<4xf32>\n  return %2 : tensor<4xf32>\n}\n")
    cmd = [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", str(module), "--no-cache"]
    ok = subprocess.run(cmd + ["--passes", "canonicalize,cse"], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count("stablehlo.add") == 1  # cse merged the two adds
    folder = tmp_path / "cache" / "mlirhlo-driver"
    (probed,) = folder.glob("passes-*.json")  # no full scan happened; the probes are kept
    assert probed.name.startswith("passes-probed-")
    rows = json.loads(probed.read_text())  # the named passes, and the shipped Python passes' names
    assert rows["cse"]["anchor"] == rows["canonicalize"]["anchor"] == "any"
    assert all(row is None for name, row in rows.items() if name not in ("canonicalize", "cse"))
    bad = subprocess.run(cmd + ["--passes", "canonicalise"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "'canonicalize'" in bad.stderr
    assert len(list(folder.glob("passes-*.json"))) == 2  # scanned once, kept


def test_a_probe_tells_each_passs_anchor():
    """How the catalogue learns an anchor without a registry: a pass MLIR restricts names
    its op; one that runs nested in a function is op-agnostic; one that does not (it works on
    symbol tables) is the module's; anything else is no pass."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.mlir import passes

    with _jaxlib.ir_context():
        anchors = {n: passes._pass_info(n) for n in ("cse", "canonicalize", "symbol-dce",
                                                      "chlo-legalize-to-stablehlo", "no-such-pass")}
    assert anchors.pop("no-such-pass") is None
    assert {n: p.anchor for n, p in anchors.items()} == {
        "cse": passes.ANY, "canonicalize": passes.ANY, "symbol-dce": passes.MODULE,
        "chlo-legalize-to-stablehlo": passes.FUNC}


@pytest.mark.skipif(sys.platform != "linux", reason="the probe forks")
def test_a_pass_probe_answers_even_when_its_scratch_dir_cannot_be_removed(monkeypatch):
    """The placement probe runs each pass in a child whose cwd and TMPDIR are a scratch dir,
    removed afterwards; a leftover that cannot be removed (another user's file, a busy NFS
    handle) costs a stray directory, never the answer or the command."""
    import os

    from mlirhlo_driver.mlir import passes

    real_rmdir, refused = os.rmdir, []

    def rmdir(path, *args, **kwargs):
        if "mlirhlo-pass-probe-" in str(path):
            refused.append(path)
            raise PermissionError(13, "Permission denied", str(path))
        return real_rmdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "rmdir", rmdir)
    assert passes._runs_nested_in_child("canonicalize") is True
    assert passes._runs_nested_in_child("symbol-dce") is False
    assert refused
    for path in refused:
        real_rmdir(path)


@pytest.mark.parametrize("stderr, said", [("Traceback ...\nImportError: no jaxlib here\n", "ImportError: no jaxlib here"),
                                          ("", "no output")])
@pytest.mark.golden
def test_a_failed_pass_scan_says_its_last_line(monkeypatch, stderr, said):
    """Golden: the child that lists jaxlib's passes failing: one error with its last stderr line, as text."""
    import sys

    from mlirhlo_driver._native import processes
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.mlir import passes

    code = f"import sys; sys.stderr.write({stderr!r}); sys.exit(3)"
    monkeypatch.setattr(processes, "python_command", lambda module, *args: [sys.executable, "-c", code])
    with pytest.raises(DriverError) as e:
        passes._scan_in_subprocess()
    assert e.value.message == f"could not list jaxlib's passes: {said}"
