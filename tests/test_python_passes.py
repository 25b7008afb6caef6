"""Passes written in Python: registration, plugins, pipelines, failures, the shipped three."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from tests.conftest import DATA, filecheck

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


def _run(path_or_module, arrays):
    from mlirhlo_driver.execute import engine

    module = path_or_module
    outs, _, _ = engine.run_xla(module, arrays, "cpu")
    return outs


def test_inline_calls_on_jax_output_keeps_values():
    import mlirhlo_driver as mhd

    prog = mhd.load(str(DATA / "mlp_train_step.before_optimizations.txt"))
    inlined = prog.optimize(passes="inline-calls")
    text = inlined.as_text()
    assert "call @" not in text and text.count("func.func") == 1
    from mlirhlo_driver.execute import engine, run

    params, _ = engine.signature(prog.module)
    arrays = engine.make_inputs(params, run.RunOptions(seed=1).inputs, module=prog.module).arrays
    for a, b in zip(_run(prog.module, arrays), _run(inlined.module, arrays)):
        np.testing.assert_array_equal(a, b)


def test_fold_involutions(tmp_path):
    import mlirhlo_driver as mhd

    src = tmp_path / "inv.mlir"
    src.write_text("""func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<4xi1>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<4xi1>) {
  %t1 = stablehlo.transpose %a, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %t2 = stablehlo.transpose %t1, dims = [1, 2, 0] : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %r1 = stablehlo.reverse %a, dims = [0, 2] : tensor<2x3x4xf32>
  %r2 = stablehlo.reverse %r1, dims = [0, 2] : tensor<2x3x4xf32>
  %n1 = stablehlo.not %b : tensor<4xi1>
  %n2 = stablehlo.not %n1 : tensor<4xi1>
  return %t2, %r2, %n2 : tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<4xi1>
}
""")
    prog = mhd.load(str(src))
    folded = prog.optimize(passes="fold-involutions")
    text = folded.as_text()
    assert text.count("stablehlo.transpose") == 1 and "dims = [2, 0, 1]" in text
    assert "reverse" not in text and "stablehlo.not" not in text
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3, 4)).astype(np.float32), rng.integers(0, 2, 4).astype(bool)]
    for a, b in zip(_run(prog.module, arrays), _run(folded.module, arrays)):
        np.testing.assert_array_equal(a, b)


def test_strip_frontend_attributes(cli, tmp_path):
    before = cli("opt", DATA / "mlp_train_step.before_optimizations.txt").out
    assert "xla_shape" in before and "result_layout" in before
    after = cli("opt", DATA / "mlp_train_step.before_optimizations.txt", "--passes",
                "strip-frontend-attributes").out
    assert "xla_shape" not in after and "result_layout" not in after
    exported = cli("opt", DATA / "softmax.vhlo", "--passes", "strip-frontend-attributes").out
    assert "jax." not in exported and "mhlo.num_partitions" in exported


def test_bench_pipeline_compares_with_and_without_a_python_pass(cli, tmp_path):
    import json

    result = cli("bench-pipeline", DATA / "mlp_train_step.before_optimizations.txt", "--passes",
                 "canonicalize,cse", "--compare", "inline-calls,canonicalize,cse", "--repeats", "3", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    a, b = data["runs"]
    assert a["repeats"] == b["repeats"] == 3
    assert [p["pass"] for p in b["passes"]][0] == "inline-calls"
    assert all(p["runs"] == 3 and p["min_ms"] <= p["median_ms"] <= p["max_ms"] for p in b["passes"])
    assert data["ratio"] == pytest.approx(b["total_median_ms"] / a["total_median_ms"])
    table = cli("bench-pipeline", DATA / "erf_inv.mlir", "--pipeline", "@legalize-chlo", "--repeats", "2")
    assert "ChloLegalizeToStablehloPass" in table.out and "Total" in table.out
    assert "B/A" not in table.out
    # The text form of a comparison: each side's table, then B's total over A's.
    both = cli("bench-pipeline", DATA / "erf_inv.mlir", "--passes", "cse", "--compare", "canonicalize,cse",
               "--repeats", "2")
    assert both.code == 0, both.err
    heads = re.findall(r"^# ([AB]): (.*)  \(2 runs, fresh copy each\)$", both.out, re.M)
    assert [h[0] for h in heads] == ["A", "B"]
    totals = [float(t) for t in re.findall(r"^ *([0-9.]+) +[0-9.]+ +[0-9.]+  Total$", both.out, re.M)]
    ratio = re.search(r"^# B/A total \(medians, runs interleaved A B A B\): (.*)$", both.out, re.M)
    assert len(totals) == 2 and ratio, both.out
    if totals[0] > 0.01:  # printed to 3 decimals
        assert float(ratio.group(1).removesuffix("x")) == pytest.approx(totals[1] / totals[0], rel=0.05)
    elif totals[0] == 0:  # cse alone can be too fast for the timer: no ratio, and no crash
        assert ratio.group(1) == "none (A's median total is 0 ms)"


def test_bench_xla_pipeline_from_dump_timestamps(cli):
    result = cli("bench-pipeline", DATA / "erf_inv.mlir", "--platform", "cpu", "--repeats", "2")
    assert result.code == 0, result.err
    assert "from file timestamps" in result.out
    assert re.search(r"simplification / algsimp$", result.out, re.M)
    assert result.out.strip().endswith("whole compile")


TAGGING_PLUGIN = textwrap.dedent('''
    import mlirhlo_driver
    from jaxlib.mlir import ir


    @mlirhlo_driver.register_pass("tag-anchor", anchor="any", description="mark the op it ran on")
    def tag_anchor(op):
        op = op.operation
        with op.context:
            op.attributes["mlirhlo.ran_on"] = ir.StringAttr.get(op.name)
''')


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
    assert str(e.value) == f"pass name '{name}' must look like 'my-pass' (lowercase, dashes)"
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
    assert str(e.value) == "anchor must be one of func.func, builtin.module, any"


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
    assert (e.value.message, e.value.file, e.value.line) == (
        "pass 'zz-one' is already registered earlier in this file", str(plugin), 10)
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
    assert (e.value.message, e.value.line) == ("pass 'inline-calls' is already registered by builtin", 10)
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
    assert (e.value.message, e.value.line, e.value.hint) == (
        "pass 'zz-two' is a native jaxlib pass; a plugin cannot replace it", 10, "give the Python pass another name")
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
    assert (e.value.message, e.value.file) == ("not a Python file", str(plugin))


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


def test_a_failing_entry_point_is_reported_once(monkeypatch):
    """An entry point that cannot be imported is an input error the first time; later lookups go on without it."""
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


# ------------------------------------------------------------------ the shipped passes, exactly


def _optimized(tmp_path, text, passes):
    import mlirhlo_driver as mhd

    src = tmp_path / "in.mlir"
    src.write_text(textwrap.dedent(text))
    return mhd.load(str(src)).optimize(passes=passes).as_text()


def test_fold_involutions_folds_only_true_pairs(tmp_path):
    """Only an op over the same op folds: negate(abs) and reverses over different dims stay, a
    transpose pair that cancels leaves nothing, and an inner op still used elsewhere is kept."""
    out = _optimized(tmp_path, """\
        func.func @main(%a: tensor<2x3xf32>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
          %n = stablehlo.abs %x : tensor<4xf32>
          %nn = stablehlo.negate %n : tensor<4xf32>
          %r1 = stablehlo.reverse %a, dims = [0] : tensor<2x3xf32>
          %r2 = stablehlo.reverse %r1, dims = [1] : tensor<2x3xf32>
          %t1 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
          %t2 = stablehlo.transpose %t1, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
          %m1 = stablehlo.negate %x : tensor<4xf32>
          %m2 = stablehlo.negate %m1 : tensor<4xf32>
          %k = stablehlo.negate %x : tensor<4xf32>
          return %nn, %r2, %t2, %m2, %m1, %k : tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
        }
        """, "fold-involutions")
    assert out == textwrap.dedent("""\
        module {
          func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
            %0 = stablehlo.abs %arg1 : tensor<4xf32>
            %1 = stablehlo.negate %0 : tensor<4xf32>
            %2 = stablehlo.reverse %arg0, dims = [0] : tensor<2x3xf32>
            %3 = stablehlo.reverse %2, dims = [1] : tensor<2x3xf32>
            %4 = stablehlo.negate %arg1 : tensor<4xf32>
            %5 = stablehlo.negate %arg1 : tensor<4xf32>
            return %1, %3, %arg0, %arg1, %4, %5 : tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
          }
        }
        """)


def test_inline_calls_reaches_into_regions_unrolls_recursion_64_times_and_drops_unused_private_functions(tmp_path):
    """A call inside a region is inlined; a self-recursive callee is inlined 64 times, then left
    as a call (it stays, being called); an unused private function goes, a public one stays."""
    out = _optimized(tmp_path, """\
        func.func @main(%x: tensor<4xf32>, %i: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
          %r = "stablehlo.case"(%i) ({
            %c = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
            stablehlo.return %c : tensor<4xf32>
          }, {
            stablehlo.return %x : tensor<4xf32>
          }) : (tensor<i32>) -> tensor<4xf32>
          %s = func.call @rec(%x) : (tensor<4xf32>) -> tensor<4xf32>
          return %r, %s : tensor<4xf32>, tensor<4xf32>
        }
        func.func private @helper(%y: tensor<4xf32>) -> tensor<4xf32> {
          %0 = stablehlo.abs %y : tensor<4xf32>
          %1 = stablehlo.exponential %0 : tensor<4xf32>
          return %1 : tensor<4xf32>
        }
        func.func private @rec(%y: tensor<4xf32>) -> tensor<4xf32> {
          %0 = stablehlo.negate %y : tensor<4xf32>
          %1 = func.call @rec(%0) : (tensor<4xf32>) -> tensor<4xf32>
          return %1 : tensor<4xf32>
        }
        func.func @unused_public(%y: tensor<4xf32>) -> tensor<4xf32> {
          return %y : tensor<4xf32>
        }
        func.func private @unused_private(%y: tensor<4xf32>) -> tensor<4xf32> {
          return %y : tensor<4xf32>
        }
        """, "inline-calls")
    negates = "".join(f"    %{i} = stablehlo.negate %{i - 1 if i > 1 else 'arg0'} : tensor<4xf32>\n"
                      for i in range(1, 65))
    assert out == textwrap.dedent("""\
        module {
          func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>) {
            %0 = "stablehlo.case"(%arg1) ({
              %66 = stablehlo.abs %arg0 : tensor<4xf32>
              %67 = stablehlo.exponential %66 : tensor<4xf32>
              stablehlo.return %67 : tensor<4xf32>
            }, {
              stablehlo.return %arg0 : tensor<4xf32>
            }) : (tensor<i32>) -> tensor<4xf32>
        """) + negates + textwrap.dedent("""\
            %65 = call @rec(%64) : (tensor<4xf32>) -> tensor<4xf32>
            return %0, %65 : tensor<4xf32>, tensor<4xf32>
          }
          func.func private @rec(%arg0: tensor<4xf32>) -> tensor<4xf32> {
            %0 = stablehlo.negate %arg0 : tensor<4xf32>
            %1 = call @rec(%0) : (tensor<4xf32>) -> tensor<4xf32>
            return %1 : tensor<4xf32>
          }
          func.func @unused_public(%arg0: tensor<4xf32>) -> tensor<4xf32> {
            return %arg0 : tensor<4xf32>
          }
        }
        """)


def test_strip_frontend_attributes_keeps_everything_else(tmp_path):
    """Exactly jax.*, mhlo.layout_mode, mhlo.frontend_attributes, result_layout and xla_shape go,
    from the module, ops, and function argument and result attributes; look-alikes stay."""
    out = _optimized(tmp_path, """\
        module @m attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32} {
          func.func @main(%x: tensor<4xf32> {jax.arg_info = "x", mhlo.sharding = "{replicated}", mhlo.layout_mode = "default"}, %y: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "r", mhlo.layout_mode = "default", mhlo.result_layout_x = 1 : i32}) {
            %0 = stablehlo.add %x, %y {xla_shape = "f32[4]", mhlo.frontend_attributes = {a = "b"}, jaxish = 1 : i32, result_layout = dense<0> : tensor<1xindex>} : tensor<4xf32>
            return %0 : tensor<4xf32>
          }
        }
        """, "strip-frontend-attributes")
    assert out == textwrap.dedent("""\
        module @m attributes {mhlo.num_partitions = 1 : i32} {
          func.func @main(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}"}, %arg1: tensor<4xf32>) -> (tensor<4xf32> {mhlo.result_layout_x = 1 : i32}) {
            %0 = stablehlo.add %arg0, %arg1 {jaxish = 1 : i32} : tensor<4xf32>
            return %0 : tensor<4xf32>
          }
        }
        """)


def test_builtin_passes_are_registered_in_order_with_their_functions():
    """The shipped passes, in registration order, with anchors and the module's own functions."""
    from mlirhlo_driver.mlir import builtin_passes as bp

    assert [(n, a, fn) for n, a, _, fn in bp.PASSES] == [
        ("inline-calls", "builtin.module", bp.inline_calls), ("fold-involutions", "func.func", bp.fold_involutions),
        ("strip-frontend-attributes", "builtin.module", bp.strip_frontend_attributes)]
    assert all(callable(fn) for *_, fn in bp.PASSES)
