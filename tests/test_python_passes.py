"""Passes written in Python: registration, plugins, pipelines, failures, the shipped three."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest
from conftest import DATA, filecheck

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
    from conftest import assert_one_line_error

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
    from mlirhlo_driver.execute import run

    module = path_or_module
    outs, _, _ = run.run_xla(module, arrays, "cpu")
    return outs


def test_inline_calls_on_jax_output_keeps_values():
    import mlirhlo_driver as mhd

    prog = mhd.load(str(DATA / "mlp_train_step.before_optimizations.txt"))
    inlined = prog.optimize(passes="inline-calls")
    text = inlined.as_text()
    assert "call @" not in text and text.count("func.func") == 1
    from mlirhlo_driver.execute import run

    arrays, _ = run.make_inputs(prog.module, run.RunOptions(seed=1))
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
