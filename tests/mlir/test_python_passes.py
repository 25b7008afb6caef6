"""mlir/python_passes.py, passes written in Python: registration, plugins, entry points,
pipelines, failures.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import DATA, assert_mentions, assert_one_line_error, filecheck


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


PLUGIN = textwrap.dedent('''
    import mlirhlo_driver
    from jaxlib.mlir import ir


    @mlirhlo_driver.register_pass("double-to-add", anchor="func.func",
                                  description="x * 2.0 -> x + x")
    def double_to_add(func_op):
        from jaxlib.mlir.dialects import stablehlo
        for block in func_op.regions[0].blocks:
            for op in list(block.operations):
                if op.operation.name != "stablehlo.multiply":
                    continue
                rhs = op.operands[1].owner
                if getattr(rhs, "name", "") == "stablehlo.constant" and "2.0" in str(rhs.attributes["value"]):
                    with op.context, op.location, ir.InsertionPoint(op):
                        new = stablehlo.AddOp(op.operands[0], op.operands[0])
                    op.results[0].replace_all_uses_with(new.result)
                    op.operation.erase()
''')

BROKEN_PLUGIN = textwrap.dedent('''
    import mlirhlo_driver


    @mlirhlo_driver.register_pass("always-fails", anchor="builtin.module")
    def always_fails(module_op):
        raise RuntimeError("no luck today")
''')

DOUBLE = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %0 = stablehlo.multiply %x, %two : tensor<4xf32>
  %1 = stablehlo.negate %0 : tensor<4xf32>
  %2 = stablehlo.negate %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}
"""


@pytest.fixture
def plugin(tmp_path):
    path = tmp_path / "my_passes.py"
    path.write_text(PLUGIN)
    return path


TAGGING_PLUGIN = textwrap.dedent('''
    import mlirhlo_driver
    from jaxlib.mlir import ir


    @mlirhlo_driver.register_pass("tag-anchor", anchor="any", description="mark the op it ran on")
    def tag_anchor(op):
        op = op.operation
        with op.context:
            op.attributes["mlirhlo.ran_on"] = ir.StringAttr.get(op.name)
''')


# ------------------------------------------------------------------ registration rules


@pytest.fixture
def empty_registry(monkeypatch):
    """A private registry, as before the first registration (restored afterwards)."""
    from mlirhlo_driver.mlir import python_passes

    monkeypatch.setattr(python_passes, "_registry", {})
    monkeypatch.setattr(python_passes, "_loading", set())
    monkeypatch.setattr(python_passes, "_builtin_loaded", True)
    monkeypatch.setattr(python_passes, "_entry_points_loaded", True)
    return python_passes


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


TWO_PASSES = '''
    import mlirhlo_driver


    @mlirhlo_driver.register_pass("zz-one", anchor="builtin.module")
    def one(op):
        pass


    @mlirhlo_driver.register_pass("zz-two", anchor="any")
    def two(op):
        pass
'''


def test_python_pass_options_error_points_after_the_name(cli, mlir_file):
    r = cli("opt", mlir_file, "--passes", "cse,inline-calls{x=1}")
    assert_one_line_error(r, at="--passes:1:17", facts=("'inline-calls'", "no options"))


def test_load_plugin_returns_the_names_it_registered(tmp_path):
    from mlirhlo_driver.mlir import python_passes

    plugin = tmp_path / "guard_plugin.py"
    plugin.write_text("""\
import mlirhlo_driver


@mlirhlo_driver.register_pass("guard-noop-b", anchor="builtin.module")
def b(op):
    pass


@mlirhlo_driver.register_pass("guard-noop-a", anchor="builtin.module")
def a(op):
    pass
""")
    try:
        assert python_passes.load_plugin(str(plugin)) == ["guard-noop-a", "guard-noop-b"]
    finally:
        python_passes.unload_plugins()


def test_entry_point_scan_is_cached(private_site, monkeypatch):
    import importlib.metadata

    from mlirhlo_driver.mlir import python_passes

    first = python_passes.entry_point_specs()

    def no_scan(**_):
        raise AssertionError("entry points scanned again")

    monkeypatch.setattr(importlib.metadata, "entry_points", no_scan)
    assert python_passes.entry_point_specs() == first


def test_entry_point_cache_sees_an_install(private_site):
    from mlirhlo_driver.mlir import python_passes

    assert ("late", "late_passes", "2.0") not in python_passes.entry_point_specs()
    dist = private_site / "late_passes-2.0.dist-info"  # what pip writes: the directory changes
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: late-passes\nVersion: 2.0\n")
    (dist / "entry_points.txt").write_text("[mlirhlo_driver.passes]\nlate = late_passes\n")
    assert ("late", "late_passes", "2.0") in python_passes.entry_point_specs()
    (dist / "entry_points.txt").write_text("[mlirhlo_driver.passes]\nlater = late_passes\n")  # edited in place
    specs = python_passes.entry_point_specs()
    assert ("later", "late_passes", "2.0") in specs and ("late", "late_passes", "2.0") not in specs


def test_a_ten_line_pass_in_a_textual_pipeline(cli, plugin, tmp_path):
    src = tmp_path / "double.mlir"
    src.write_text(DOUBLE)
    listing = cli("passes", "--load-pass-plugin", plugin)
    assert re.search(r"^double-to-add\s+func\.func\s+x \* 2\.0 -> x \+ x$", listing.out, re.M)
    result = cli("opt", src, "--load-pass-plugin", plugin, "--pipeline",
                 "builtin.module(func.func(cse,double-to-add,fold-involutions,canonicalize))",
                 "--print-ir-after-change", "--timing")
    assert result.code == 0, result.err
    filecheck(result.out, """
CHECK: func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
CHECK-NEXT: %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
CHECK-NEXT: return %0
""", tmp_path)
    dumped = re.findall(r"IR Dump After (\S+)", result.err)
    assert dumped[:2] == ["double-to-add", "fold-involutions"]
    assert re.search(r"\d+\.\d+%\s+double-to-add$", result.err, re.M)  # timing covers it


def test_function_pass_visits_every_function(cli, plugin, tmp_path):
    # The bindings run Python passes at module level; a func.func pass must
    # still see each function, not only the first.
    src = tmp_path / "two.mlir"
    src.write_text(DOUBLE.replace("return %2", "%3 = call @helper(%2) : (tensor<4xf32>) -> tensor<4xf32>\n"
                                                "  return %3") + """
func.func private @helper(%y: tensor<4xf32>) -> tensor<4xf32> {
  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %0 = stablehlo.multiply %y, %two : tensor<4xf32>
  return %0 : tensor<4xf32>
}
""")
    result = cli("opt", src, "--load-pass-plugin", plugin, "--pipeline",
                 "builtin.module(func.func(double-to-add))")
    assert result.code == 0, result.err
    filecheck(result.out, """
CHECK-LABEL: func.func @main
CHECK: stablehlo.add %arg0, %arg0
CHECK-LABEL: func.func private @helper
CHECK-NOT: stablehlo.multiply
CHECK: stablehlo.add %arg0, %arg0
""", tmp_path)


def test_python_pass_in_pass_list(cli, plugin, tmp_path):
    src = tmp_path / "double.mlir"
    src.write_text(DOUBLE)
    result = cli("opt", src, "--load-pass-plugin", plugin, "--passes", "double-to-add,canonicalize",
                 "--print-pipeline")
    assert result.err.splitlines()[0] == "builtin.module(func.func(double-to-add,canonicalize))"
    assert "stablehlo.add" in result.out


def test_failing_python_pass_names_pass_module_and_reproducer(cli, tmp_path):
    bad = tmp_path / "bad_passes.py"
    bad.write_text(BROKEN_PLUGIN)
    result = cli("opt", DATA / "erf_inv.mlir", "--load-pass-plugin", bad, "--passes", "cse,always-fails",
                 "--reproducer-dir", tmp_path)
    assert result.code == 1
    first = result.err.splitlines()[0]
    assert first.startswith(f"error: {DATA / 'erf_inv.mlir'}: Python pass 'always-fails' failed on module "
                            "'erf_inv': RuntimeError: no luck today (at ")
    assert f"{bad}:7)" in first
    cmd = re.search(r"^note: reproduce with: mlirhlo (.+)$", result.err, re.M).group(1)
    assert f"--load-pass-plugin {bad}" in cmd
    import shlex

    assert "always-fails' failed" in cli(*shlex.split(cmd)).err


def test_plugin_errors(cli, tmp_path):
    from tests.conftest import assert_one_line_error

    missing = tmp_path / "nope.py"
    assert_one_line_error(cli("passes", "--load-pass-plugin", missing), contains=f"{missing}: no such")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n")
    line = assert_one_line_error(cli("passes", "--load-pass-plugin", syntax))
    assert line.startswith(f"error: {syntax}:1:")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert_one_line_error(cli("passes", "--load-pass-plugin", empty), contains="registers no pass")


def test_entry_point_group(tmp_path, monkeypatch):
    """An installed package advertises a module in the mlirhlo_driver.passes group."""
    pkg = tmp_path / "site"
    (pkg / "ep_passes").mkdir(parents=True)
    (pkg / "ep_passes" / "__init__.py").write_text(PLUGIN.replace("double-to-add", "ep-double-to-add"))
    dist = pkg / "ep_passes-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-passes\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[mlirhlo_driver.passes]\nmine = ep_passes\n")
    monkeypatch.syspath_prepend(str(pkg))
    from mlirhlo_driver.mlir import python_passes

    monkeypatch.setattr(python_passes, "_entry_points_loaded", False)
    names = [p.name for p in python_passes.registered()]
    assert "ep-double-to-add" in names
    assert python_passes.get("ep-double-to-add").origin == "entry point mine"


def test_an_any_anchored_python_pass_under_func_func_runs_on_each_function(cli, tmp_path):
    """Nested in func.func after MLIR passes, a pass anchored on any op runs once per function,
    as its place in the pipeline says; at the top level, on the module."""
    plugin = tmp_path / "tagging.py"
    plugin.write_text(TAGGING_PLUGIN)
    src = tmp_path / "two.mlir"
    src.write_text(DOUBLE + DOUBLE.replace("@main", "@helper").replace("func.func", "func.func private"))
    nested = cli("opt", src, "--load-pass-plugin", plugin, "--pipeline",
                 "builtin.module(func.func(cse,tag-anchor))")
    assert nested.code == 0, nested.err
    assert nested.out.count('mlirhlo.ran_on = "func.func"') == 2 and "builtin.module" not in nested.out
    top = cli("opt", src, "--load-pass-plugin", plugin, "--pipeline", "builtin.module(cse,tag-anchor)")
    assert top.code == 0, top.err
    assert top.out.count("mlirhlo.ran_on") == 1 and 'mlirhlo.ran_on = "builtin.module"' in top.out


@pytest.mark.parametrize("name", ["my-pass", "a", "x2-y3-z", "pass9"])
def test_register_pass_accepts_lowercase_dashed_names(empty_registry, name):
    """A name of lowercase words joined by single dashes is a pass name; the decorator returns the function."""
    def fn(op):
        pass

    assert empty_registry.register_pass(name, anchor="any", description="d")(fn) is fn
    assert empty_registry.get(name) == empty_registry.PythonPass(name, fn, "any", "d", "python")


@pytest.mark.parametrize("name", ["My-pass", "my_pass", "-my", "my-", "my--pass", "9pass", "my pass", ""])
def test_register_pass_refuses_other_names(empty_registry, name):
    """Anything else is refused before the function is seen, with the rule in the message."""
    with pytest.raises(ValueError) as e:
        empty_registry.register_pass(name)
    assert_mentions(str(e.value), f"'{name}'", "'my-pass'")
    assert empty_registry.registered() == []


@pytest.mark.parametrize("anchor", ["func.func", "builtin.module", "any"])
def test_register_pass_takes_the_three_anchors(empty_registry, anchor):
    """Each of func.func, builtin.module and any is an anchor."""
    empty_registry.register_pass("p", anchor=anchor)(lambda op: None)
    assert empty_registry.get("p").anchor == anchor


@pytest.mark.parametrize("anchor", ["gpu.module", "module", "Any", ""])
def test_register_pass_refuses_other_anchors(empty_registry, anchor):
    """Another anchor is refused with the list of the three."""
    with pytest.raises(ValueError) as e:
        empty_registry.register_pass("p", anchor=anchor)
    assert_mentions(str(e.value), "anchor", "func.func, builtin.module, any")


@pytest.mark.golden
@pytest.mark.parametrize("name, anchor, message", [
    ("My-pass", "any", "pass name 'My-pass' must look like 'my-pass' (lowercase, dashes)"),
    ("p", "gpu.module", "anchor must be one of func.func, builtin.module, any"),
])
def test_register_pass_refusals_exactly(empty_registry, name, anchor, message):
    """Golden: register_pass on a name or an anchor it does not take."""
    with pytest.raises(ValueError) as e:
        empty_registry.register_pass(name, anchor=anchor)
    assert str(e.value) == message


def test_a_pass_description_defaults_to_its_docstrings_first_line(empty_registry):
    """description= wins; else the docstring's first line; else nothing; the default anchor is func.func."""
    reg = empty_registry.register_pass

    def documented(op):
        """First line.

        More text."""

    def one_line(op):
        """  Just this.  """

    def undocumented(op):
        pass

    def both(op):
        """Not this."""

    def blank_doc(op):
        """   """

    reg("documented")(documented)
    reg("one-line")(one_line)
    reg("undocumented")(undocumented)
    reg("both", description="Given.")(both)
    reg("blank-doc")(blank_doc)
    assert {p.name: (p.description, p.anchor) for p in empty_registry.registered()} == {
        "blank-doc": ("", "func.func"), "both": ("Given.", "func.func"), "documented": ("First line.", "func.func"),
        "one-line": ("Just this.", "func.func"), "undocumented": ("", "func.func")}
    assert [p.name for p in empty_registry.registered()] == ["blank-doc", "both", "documented", "one-line",
                                                             "undocumented"]


def test_plugin_file_is_the_origin_only_for_a_py_file(empty_registry):
    """A pass knows the plugin file it came from; built-in and entry-point passes have none."""
    fn = lambda op: None  # noqa: E731
    assert empty_registry.PythonPass("p", fn, "any", "", "/x/my_passes.py").plugin_file() == "/x/my_passes.py"
    assert empty_registry.PythonPass("p", fn, "any", "", "builtin").plugin_file() is None
    assert empty_registry.PythonPass("p", fn, "any", "", "entry point mine").plugin_file() is None


def test_reloading_a_plugin_file_replaces_its_passes(tmp_path):
    """The same file loaded again (another command in one process) registers its passes anew."""
    from mlirhlo_driver.mlir import python_passes

    plugin = _write(tmp_path / "two_passes.py", TWO_PASSES)
    try:
        assert python_passes.load_plugin(str(plugin)) == ["zz-one", "zz-two"]
        first = python_passes.get("zz-one").fn
        assert python_passes.load_plugin(str(plugin)) == ["zz-one", "zz-two"]
        assert python_passes.get("zz-one").fn is not first
        assert python_passes.get("zz-two").origin == str(plugin.resolve())
        assert python_passes.get("zz-two").plugin_file() == str(plugin.resolve())
    finally:
        python_passes.unload_plugins()
    assert python_passes.get("zz-one") is None and python_passes.get("zz-two") is None
    assert python_passes.get("inline-calls").origin == "builtin"  # unloading keeps the built-in ones


def test_a_name_twice_in_one_plugin_is_refused_at_its_line(tmp_path):
    """Registering one name twice in a file is an error at the second registration; nothing of it is kept."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.mlir import python_passes

    plugin = _write(tmp_path / "twice.py", TWO_PASSES.replace('"zz-two"', '"zz-one"'))
    with pytest.raises(InputError) as e:
        python_passes.load_plugin(str(plugin))
    assert (e.value.file, e.value.line) == (str(plugin), 10)
    assert_mentions(e.value.message, "'zz-one'", "earlier in this file")
    assert python_passes.get("zz-one") is None
    assert python_passes.get("fold-involutions").origin == "builtin"


def test_a_plugin_cannot_take_a_built_in_passs_name(tmp_path):
    """A plugin pass named like a built-in one is refused, naming the owner; the built-in one stays,
    and the plugin's other passes are dropped."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.mlir import python_passes

    plugin = _write(tmp_path / "taker.py", TWO_PASSES.replace('"zz-two"', '"inline-calls"'))
    with pytest.raises(InputError) as e:
        python_passes.load_plugin(str(plugin))
    assert e.value.line == 10
    assert_mentions(e.value.message, "'inline-calls'", "builtin")
    assert python_passes.get("zz-one") is None
    inline = python_passes.get("inline-calls")
    assert inline.origin == "builtin" and inline.anchor == "builtin.module"
    assert [p.name for p in python_passes.registered() if p.origin == "builtin"] == [
        "fold-involutions", "inline-calls", "strip-frontend-attributes"]


def test_a_plugin_naming_a_reserved_pass_is_refused_and_forgotten(tmp_path):
    """load_plugin(reserved=...): a pass named in reserved() is refused at its decorator's line, and the
    file's other passes are forgotten; reserved() is only asked when the file registered something."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.mlir import python_passes

    asked = []

    def reserved():
        asked.append(1)
        return {"zz-two", "cse"}

    plugin = _write(tmp_path / "reserved.py", TWO_PASSES)
    with pytest.raises(InputError) as e:
        python_passes.load_plugin(str(plugin), reserved=reserved)
    assert e.value.line == 10
    assert_mentions(e.value.message, "'zz-two'", "native jaxlib pass")
    assert_mentions(e.value.hint, "another name")
    assert asked == [1] and python_passes.get("zz-one") is None and python_passes.get("zz-two") is None
    empty = _write(tmp_path / "empty.py", "x = 1\n")
    with pytest.raises(InputError, match="registers no pass"):
        python_passes.load_plugin(str(empty), reserved=reserved)
    assert asked == [1]
    fine = _write(tmp_path / "fine.py", TWO_PASSES.replace("zz-two", "zz-three"))
    try:
        assert python_passes.load_plugin(str(fine), reserved=reserved) == ["zz-one", "zz-three"]
    finally:
        python_passes.unload_plugins()
    assert asked == [1, 1]


def test_a_non_python_plugin_file_is_refused(tmp_path):
    """A plugin file Python cannot import as source (no .py suffix) is 'not a Python file'."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.mlir import python_passes

    plugin = _write(tmp_path / "passes.txt", TWO_PASSES)
    with pytest.raises(InputError) as e:
        python_passes.load_plugin(str(plugin))
    assert e.value.file == str(plugin)
    assert_mentions(e.value.message, "not a Python file")


@pytest.mark.golden
@pytest.mark.parametrize("name, text, line", [
    ("twice.py", TWO_PASSES.replace('"zz-two"', '"zz-one"'),
     "{p}:10: pass 'zz-one' is already registered earlier in this file"),
    ("taker.py", TWO_PASSES.replace('"zz-two"', '"inline-calls"'),
     "{p}:10: pass 'inline-calls' is already registered by builtin"),
    ("reserved.py", TWO_PASSES,
     "{p}:10: pass 'zz-two' is a native jaxlib pass; a plugin cannot replace it (give the Python pass another name)"),
    ("passes.txt", TWO_PASSES, "{p}: not a Python file"),
    ("nope.py", None, "{p}: no such pass plugin file"),
])
def test_pass_plugin_refusals_exactly(tmp_path, name, text, line):
    """Golden: a pass plugin file that cannot be loaded as one."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.mlir import python_passes

    plugin = tmp_path / name if text is None else _write(tmp_path / name, text)
    with pytest.raises(InputError) as e:
        python_passes.load_plugin(str(plugin), reserved=lambda: {"zz-two"} if name == "reserved.py" else set())
    assert e.value.format() == "error: " + line.format(p=plugin)


def test_a_plugin_failing_inside_a_library_is_placed_at_the_plugins_line(tmp_path):
    """A plugin whose top level fails in library code is reported at its own last line on the way."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.mlir import python_passes

    plugin = _write(tmp_path / "fails.py", '''
        import json


        def load():
            return json.loads("{")


        CONFIG = load()
    ''')
    with pytest.raises(InputError) as e:
        python_passes.load_plugin(str(plugin))
    assert e.value.message.startswith("pass plugin failed to load: JSONDecodeError: Expecting property name")
    assert (e.value.file, e.value.line) == (str(plugin), 6)
    assert python_passes._plugin_line(ValueError("no traceback"), str(plugin)) is None


@pytest.mark.golden
def test_a_failing_entry_point_is_reported_once(monkeypatch):
    """Golden (an entry point's failure to load). An entry point that cannot be imported is an input error the first time; later lookups go on without it."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.mlir import python_passes

    monkeypatch.setattr(python_passes, "_entry_points_loaded", False)
    monkeypatch.setattr(python_passes, "entry_point_specs", lambda: [("broken", "no_such_module_zz", "1.0")])
    with pytest.raises(InputError) as e:
        python_passes.registered()
    assert e.value.message == ("cannot load pass plugin entry point 'broken' (no_such_module_zz): "
                               "ModuleNotFoundError: No module named 'no_such_module_zz'")
    assert python_passes.get("inline-calls").origin == "builtin"
    assert python_passes._current_origin == "python"


def test_a_fresh_process_loads_installed_entry_points(tmp_path):
    """In a new process the first registry lookup imports the entry points' modules."""
    import subprocess
    import sys

    from mlirhlo_driver._native import processes

    pkg = tmp_path / "site"
    (pkg / "fresh_passes").mkdir(parents=True)
    (pkg / "fresh_passes" / "__init__.py").write_text(textwrap.dedent(TWO_PASSES))
    dist = pkg / "fresh_passes-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fresh-passes\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[mlirhlo_driver.passes]\nfresh = fresh_passes\n")
    code = ("from mlirhlo_driver.mlir import python_passes as p\n"
            "print(sorted((x.name, x.origin) for x in p.registered() if x.name.startswith('zz-')))")
    env = processes.python_env()
    env["PYTHONPATH"] = str(pkg) + ":" + env.get("PYTHONPATH", "")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[('zz-one', 'entry point fresh'), ('zz-two', 'entry point fresh')]"


def test_a_plugin_is_read_and_nothing_is_written_beside_it(tmp_path, monkeypatch):
    """No __pycache__ next to the user's plugin, even where Python writes bytecode; the
    process's own setting is kept."""
    import sys

    from mlirhlo_driver.mlir import python_passes

    plugin = tmp_path / "quiet_plugin.py"
    plugin.write_text("import mlirhlo_driver\n\n\n@mlirhlo_driver.register_pass('quiet-noop', "
                      "anchor='builtin.module')\ndef f(op):\n    pass\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    try:
        assert python_passes.load_plugin(str(plugin)) == ["quiet-noop"]
    finally:
        python_passes._forget(str(plugin.resolve()))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quiet_plugin.py"]
    assert sys.dont_write_bytecode is False
