"""mlir/python_passes.py, passes written in Python: the decorator, pass sets, plugins, entry
points, pipelines, failures.
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


def _default():
    from mlirhlo_driver.mlir.python_passes import PassSet

    return PassSet.default()


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


def test_a_plugins_passes_are_those_its_top_level_decorates(tmp_path):
    """with_plugins: the passes of the file, by name, with the file as their origin; the set
    it was made from is unchanged."""
    from mlirhlo_driver.mlir.python_passes import PassSet

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
    base = PassSet()
    loaded = base.with_plugins(str(plugin))
    assert list(loaded) == ["guard-noop-a", "guard-noop-b"] and len(base) == 0
    assert {p.origin for p in loaded.values()} == {str(plugin.resolve())}
    assert loaded.plugin_files == (str(plugin.resolve()),)


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
    found = _default()
    assert "ep-double-to-add" in found and "inline-calls" in found
    assert found["ep-double-to-add"].origin == "entry point mine"
    assert ("mine", "ep_passes", "1.0") in found.entry_points


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
def test_register_pass_accepts_lowercase_dashed_names(name):
    """A name of lowercase words joined by single dashes is a pass name; the decorator returns the
    pass, which calls the function when called."""
    from mlirhlo_driver.mlir import python_passes

    seen = []

    def fn(op):
        seen.append(op)
        return "done"

    made = python_passes.register_pass(name, anchor="any", description="d")(fn)
    assert made == python_passes.PythonPass(name, fn, "any", "d", "python")
    assert made("op") == "done" and seen == ["op"]


@pytest.mark.parametrize("name", ["My-pass", "my_pass", "-my", "my-", "my--pass", "9pass", "my pass", ""])
def test_register_pass_refuses_other_names(name):
    """Anything else is refused before the function is seen, with the rule in the message."""
    from mlirhlo_driver.mlir import python_passes

    with pytest.raises(ValueError) as e:
        python_passes.register_pass(name)
    assert_mentions(str(e.value), f"'{name}'", "'my-pass'")


@pytest.mark.parametrize("anchor", ["func.func", "builtin.module", "any"])
def test_register_pass_takes_the_three_anchors(anchor):
    """Each of func.func, builtin.module and any is an anchor."""
    from mlirhlo_driver.mlir import python_passes

    assert python_passes.register_pass("p", anchor=anchor)(lambda op: None).anchor == anchor


@pytest.mark.parametrize("anchor", ["gpu.module", "module", "Any", ""])
def test_register_pass_refuses_other_anchors(anchor):
    """Another anchor is refused with the list of the three."""
    from mlirhlo_driver.mlir import python_passes

    with pytest.raises(ValueError) as e:
        python_passes.register_pass("p", anchor=anchor)
    assert_mentions(str(e.value), "anchor", "func.func, builtin.module, any")


@pytest.mark.golden
@pytest.mark.parametrize("name, anchor, message", [
    ("My-pass", "any", "pass name 'My-pass' must look like 'my-pass' (lowercase, dashes)"),
    ("p", "gpu.module", "anchor must be one of func.func, builtin.module, any"),
])
def test_register_pass_refusals_exactly(name, anchor, message):
    """Golden: register_pass on a name or an anchor it does not take."""
    from mlirhlo_driver.mlir import python_passes

    with pytest.raises(ValueError) as e:
        python_passes.register_pass(name, anchor=anchor)
    assert str(e.value) == message


def test_a_pass_description_defaults_to_its_docstrings_first_line():
    """description= wins; else the docstring's first line; else nothing; the default anchor is func.func."""
    from mlirhlo_driver.mlir import python_passes

    reg = python_passes.register_pass

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

    made = [reg("documented")(documented), reg("one-line")(one_line), reg("undocumented")(undocumented),
            reg("both", description="Given.")(both), reg("blank-doc")(blank_doc)]
    assert {p.name: (p.description, p.anchor) for p in made} == {
        "blank-doc": ("", "func.func"), "both": ("Given.", "func.func"), "documented": ("First line.", "func.func"),
        "one-line": ("Just this.", "func.func"), "undocumented": ("", "func.func")}
    assert list(python_passes.PassSet(made)) == ["blank-doc", "both", "documented", "one-line", "undocumented"]


def test_plugin_file_is_the_origin_only_for_a_py_file():
    """A pass knows the plugin file it came from; built-in and entry-point passes have none."""
    from mlirhlo_driver.mlir import python_passes

    fn = lambda op: None  # noqa: E731
    assert python_passes.PythonPass("p", fn, "any", "", "/x/my_passes.py").plugin_file() == "/x/my_passes.py"
    assert python_passes.PythonPass("p", fn, "any", "", "builtin").plugin_file() is None
    assert python_passes.PythonPass("p", fn, "any", "", "entry point mine").plugin_file() is None


def test_a_plugin_file_is_loaded_once_per_set_and_anew_for_another(tmp_path):
    """The same file given twice to one set is one load; a set made later reads the file as it is
    then, and the earlier set keeps what it ran (its passes and bytes)."""
    plugin = _write(tmp_path / "two_passes.py", TWO_PASSES)
    first = _default().with_plugins(str(plugin))
    assert first.with_plugins(str(plugin), tmp_path / "." / "two_passes.py") is first
    assert first["zz-two"].origin == first["zz-two"].plugin_file() == str(plugin.resolve())
    _write(plugin, TWO_PASSES.replace("zz-two", "zz-three"))
    second = _default().with_plugins(str(plugin))
    assert "zz-three" in second and "zz-two" not in second
    assert "zz-two" in first and "zz-three" not in first
    assert first.plugins[0].source != second.plugins[0].source == plugin.read_bytes()
    assert first["inline-calls"].origin == "builtin" and "zz-one" not in _default()


def test_a_name_twice_in_one_plugin_is_refused_at_its_line(tmp_path):
    """Registering one name twice in a file is an error at the second registration; nothing of it is kept."""
    from mlirhlo_driver.errors import InputError

    base = _default()
    plugin = _write(tmp_path / "twice.py", TWO_PASSES.replace('"zz-two"', '"zz-one"'))
    with pytest.raises(InputError) as e:
        base.with_plugins(str(plugin))
    assert (e.value.file, e.value.line) == (str(plugin), 10)
    assert_mentions(e.value.message, "'zz-one'", "earlier in this file")
    assert "zz-one" not in base and base.plugin_files == ()
    assert base["fold-involutions"].origin == "builtin"


def test_a_plugin_cannot_take_a_built_in_passs_name(tmp_path):
    """A plugin pass named like a built-in one is refused, naming the owner; the built-in one stays,
    and the plugin's other passes are dropped."""
    from mlirhlo_driver.errors import InputError

    base = _default()
    plugin = _write(tmp_path / "taker.py", TWO_PASSES.replace('"zz-two"', '"inline-calls"'))
    with pytest.raises(InputError) as e:
        base.with_plugins(str(plugin))
    assert e.value.line == 10
    assert_mentions(e.value.message, "'inline-calls'", "builtin")
    assert "zz-one" not in base
    inline = base["inline-calls"]
    assert inline.origin == "builtin" and inline.anchor == "builtin.module"
    assert [p.name for p in base.values() if p.origin == "builtin"] == [
        "fold-involutions", "inline-calls", "strip-frontend-attributes"]


def test_a_plugin_naming_a_reserved_pass_is_refused_and_forgotten(tmp_path):
    """with_plugins(reserved=...): a pass named in reserved() is refused at its decorator's line, and the
    file's other passes are forgotten; reserved() is only asked when the file registered something."""
    from mlirhlo_driver.errors import InputError

    asked = []

    def reserved():
        asked.append(1)
        return {"zz-two", "cse"}

    base = _default()
    plugin = _write(tmp_path / "reserved.py", TWO_PASSES)
    with pytest.raises(InputError) as e:
        base.with_plugins(str(plugin), reserved=reserved)
    assert e.value.line == 10
    assert_mentions(e.value.message, "'zz-two'", "native jaxlib pass")
    assert_mentions(e.value.hint, "another name")
    assert asked == [1] and "zz-one" not in base and "zz-two" not in base
    empty = _write(tmp_path / "empty.py", "x = 1\n")
    with pytest.raises(InputError, match="registers no pass"):
        base.with_plugins(str(empty), reserved=reserved)
    assert asked == [1]
    fine = _write(tmp_path / "fine.py", TWO_PASSES.replace("zz-two", "zz-three"))
    loaded = base.with_plugins(str(fine), reserved=reserved)
    assert sorted(n for n, p in loaded.items() if p.plugin_file()) == ["zz-one", "zz-three"]
    assert asked == [1, 1]


def test_a_non_python_plugin_file_is_refused(tmp_path):
    """A plugin file Python cannot import as source (no .py suffix) is 'not a Python file'."""
    from mlirhlo_driver.errors import InputError

    plugin = _write(tmp_path / "passes.txt", TWO_PASSES)
    with pytest.raises(InputError) as e:
        _default().with_plugins(str(plugin))
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

    plugin = tmp_path / name if text is None else _write(tmp_path / name, text)
    with pytest.raises(InputError) as e:
        _default().with_plugins(str(plugin), reserved=lambda: {"zz-two"} if name == "reserved.py" else set())
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
        _default().with_plugins(str(plugin))
    assert e.value.message.startswith("pass plugin failed to load: JSONDecodeError: Expecting property name")
    assert (e.value.file, e.value.line) == (str(plugin), 6)
    assert python_passes._plugin_line(ValueError("no traceback"), str(plugin)) is None


@pytest.mark.golden
def test_a_failing_entry_point_is_reported_once(monkeypatch, tmp_path):
    """Golden (an entry point's failure to load). An entry point that cannot be imported is an input
    error the first time; later sets go on without it, with the entry points after it."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.mlir import python_passes

    (tmp_path / "zz_after_broken.py").write_text(textwrap.dedent(TWO_PASSES))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(python_passes, "_DEFAULTS", {})
    monkeypatch.setattr(python_passes, "entry_point_specs", lambda: [("broken", "no_such_module_zz", "1.0"),
                                                                     ("fine", "zz_after_broken", "1.0")])
    with pytest.raises(InputError) as e:
        python_passes.PassSet.default()
    assert e.value.message == ("cannot load pass plugin entry point 'broken' (no_such_module_zz): "
                               "ModuleNotFoundError: No module named 'no_such_module_zz'")
    again = python_passes.PassSet.default()
    assert again["inline-calls"].origin == "builtin" and again["zz-two"].origin == "entry point fine"
    assert python_passes._loading.get() is None


def test_a_fresh_process_loads_installed_entry_points(tmp_path):
    """In a new process the default pass set imports the entry points' modules."""
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
            "print(sorted((x.name, x.origin) for x in p.PassSet.default().values() if x.name.startswith('zz-')))")
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
    assert "quiet-noop" in python_passes.PassSet().with_plugins(str(plugin))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quiet_plugin.py"]
    assert sys.dont_write_bytecode is False


# ------------------------------------------------------------------ no process-wide registry


def test_a_plugin_loaded_for_one_command_is_not_seen_by_later_pipelines(cli, plugin, tmp_path):
    """--load-pass-plugin loads into that command's pass set: after the command, neither a pipeline
    of the API nor another command can name the plugin's passes."""
    import mlirhlo_driver as mh
    from mlirhlo_driver.mlir import pipeline

    src = tmp_path / "double.mlir"
    src.write_text(DOUBLE)
    ran = cli("opt", src, "--load-pass-plugin", plugin, "--passes", "double-to-add")
    assert ran.code == 0 and "stablehlo.add" in ran.out, ran.err
    with pytest.raises(mh.PipelineError) as e:
        mh.load(str(src)).optimize("double-to-add")
    assert_mentions(e.value.message, "unknown pass 'double-to-add'")
    with pytest.raises(mh.PipelineError):
        pipeline.resolve(passes="double-to-add")
    assert "double-to-add" not in mh.PassSet.default()
    assert_one_line_error(cli("opt", src, "--passes", "double-to-add"), facts=("'double-to-add'",))


TAGGER = textwrap.dedent('''
    import mlirhlo_driver
    from jaxlib.mlir import ir


    @mlirhlo_driver.register_pass("tag-module", anchor="builtin.module")
    def tag(module_op):
        with module_op.context:
            module_op.attributes["x.tag"] = ir.StringAttr.get("VALUE")
''')


def test_two_pass_sets_with_a_pass_of_one_name_do_not_interfere(tmp_path):
    """Two sets, each with its own 'tag-module' (plugin files, or passes made in Python): each
    pipeline runs the pass of the set it was given, whatever was loaded or run in between; a set
    refuses a second pass of a name it holds."""
    import mlirhlo_driver as mh
    from mlirhlo_driver.mlir.python_passes import PassNameClash, PassSet

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = _write(tmp_path / "a" / "tagger.py", TAGGER.replace("VALUE", "from-a"))
    b = _write(tmp_path / "b" / "tagger.py", TAGGER.replace("VALUE", "from-b"))
    set_a, set_b = PassSet.default().with_plugins(a), PassSet.default().with_plugins(b)
    p = mh.load(str(DATA / "erf_inv.mlir"))
    first = p.optimize("tag-module", python_passes=set_a)
    second = p.optimize("tag-module", python_passes=set_b)
    assert 'x.tag = "from-b"' in second.as_text() and 'x.tag = "from-a"' in first.as_text()
    assert 'x.tag = "from-a"' in p.optimize("tag-module", python_passes=[a]).as_text()

    def made(value):
        @mh.register_pass("tag-module", anchor="builtin.module")
        def tag(module_op):
            from jaxlib.mlir import ir

            with module_op.context:
                module_op.attributes["x.tag"] = ir.StringAttr.get(value)
        return tag

    one, two = made("one"), made("two")
    assert 'x.tag = "two"' in p.optimize("tag-module", python_passes=[two]).as_text()
    assert 'x.tag = "one"' in p.optimize("tag-module", python_passes=[one]).as_text()
    with pytest.raises(PassNameClash) as e:
        set_a.with_passes(one)
    assert_mentions(str(e.value), "'tag-module'", str(a.resolve()))
    assert set_a.with_passes(set_a["tag-module"]) == set_a  # the same pass again is no clash


def test_a_pass_set_pickles_as_its_recipe_and_runs_the_bytes_it_loaded(tmp_path):
    """What a batch sends its workers: the set unpickled makes its plugins' passes again from the
    bytes the command loaded, even with the file changed or gone since."""
    import pickle

    from mlirhlo_driver.mlir.python_passes import PassSet

    plugin = _write(tmp_path / "tagger.py", TAGGER.replace("VALUE", "loaded"))
    sent = pickle.dumps(PassSet.default().with_plugins(plugin))
    plugin.unlink()
    got = pickle.loads(sent)
    assert got.plugin_files == (str(plugin.resolve()),) and "inline-calls" in got
    from mlirhlo_driver.mlir import pipeline

    module = _parse((DATA / "erf_inv.mlir").read_text())
    pipeline.run(module, pipeline.resolve("tag-module", python_passes=got))
    assert 'x.tag = "loaded"' in str(module)


def _parse(text):
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        return ir.Module.parse(text)
