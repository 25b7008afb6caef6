"""Textual pass pipelines: syntax, --passes nesting, named pipelines, debugging flags."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlirhlo_driver.errors import FLAGS, PipelineError, spell
from mlirhlo_driver.mlir import pipeline
from mlirhlo_driver.mlir.passes import all_passes
from tests.conftest import DATA, assert_mentions, filecheck


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


MLP_DUMP = DATA / "mlp_train_step.before_optimizations.txt"

ERF = DATA / "erf_inv.mlir"  # one function: one dump per pass


@pytest.fixture(scope="module")
def catalog():
    return all_passes()


# ------------------------------------------------------- debugging flags

def _dump_headers(err: str) -> list[str]:
    return re.findall(r"^// -----// IR Dump (\w+) (\S+) \((\S+)\) //----- //$", err, re.M)


BREAKER = """
import mlirhlo_driver
from jaxlib.mlir import ir

@mlirhlo_driver.register_pass("break-signature", anchor="func.func")
def break_signature(func_op):
    with func_op.context:
        func_op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([], []))
"""


# --------------------------------------------- validation and --passes, exactly

def _catalog(**anchors):
    from mlirhlo_driver.mlir.passes import PassInfo

    return {name.replace("_", "-"): PassInfo(name.replace("_", "-"), anchor.removeprefix("py:"),
                                             origin="python" if anchor.startswith("py:") else "jaxlib")
            for name, anchor in anchors.items()}


SMALL = _catalog(cse="any", symbol_dce="builtin.module", legalize="func.func", gpu_lower="gpu.module",
                 py_mod="py:builtin.module", py_func="py:func.func", py_any="py:any")

NATIVE_OUTPUT = """\
something a pass printed
// -----// IR Dump Before CSEPass (cse) ('func.func' operation: @main) //----- //
func.func @main() {

  return
}

// -----// IR Dump After CSEPass (cse) //----- //
module {
}
// -----// IR Dump After CanonicalizerPass Failed (canonicalize{max-iterations=3 top-down=true}) //----- //
failed body
// -----// IR Dump After Inliner: inline //----- //
inlined
// -----// IR Dump Before SymbolDCE //----- //
no name
===-------------------------------------------------------------------------===
                         ... Execution time report ...
===-------------------------------------------------------------------------===
  Total Execution Time: 0.0040 seconds

  ----User Time----  ----Wall Time----  ----Name----
    0.0020 ( 40.0%)    0.0012 ( 30.0%)  'func.func' Pipeline
    0.0010 ( 20.0%)    0.0008 ( 20.0%)    CSEPass
    0.0010 ( 20.0%)    0.0004 ( 10.0%)      Nested
    0.0006 ( 12.5%)  Canonicalizer
    0.0050 (100.0%)    0.0040 (100.0%)  Total
"""


def _dumps(inst):
    result = pipeline.PipelineRun("spec")
    pipeline._parse_native_output(NATIVE_OUTPUT, inst, result)
    return result


# ------------------------------------------------- Python passes, failures, reproducers

MARKER = """
import mlirhlo_driver
from jaxlib.mlir import ir

@mlirhlo_driver.register_pass("mark-op", anchor="any")
def mark(op):
    with op.context:
        op.attributes["x.marked"] = ir.UnitAttr.get()

@mlirhlo_driver.register_pass("explode", anchor="func.func")
def explode(func_op):
    raise ValueError("bad function")
"""


@pytest.fixture
def marker(tmp_path):
    """The marker plugin's path, and the pass set with it (the built-in and installed passes too)."""
    from mlirhlo_driver.mlir.python_passes import PassSet

    plugin = tmp_path / "marker.py"
    plugin.write_text(MARKER)
    return str(plugin.resolve()), PassSet.default().with_plugins(plugin)


def _with(spec, passes):
    """``spec`` parsed, as resolve() leaves a root: with the Python passes its names resolve to."""
    root = pipeline.parse_spec(spec)
    root.python_passes = passes
    return root


def _module(text):
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        return ir.Module.parse(text)


class _Diag:
    def __init__(self, location, message, notes=()):
        self.location, self.message, self.notes = location, message, list(notes)


class MLIRError(Exception):
    pass


def test_print_ir_keeps_the_first_character_of_native_output(cli, mlir_file, tmp_path):
    # MLIR prints IR dumps on fd 2; the driver captures and re-emits them. Reading the
    # capture from offset 1 (not 0) loses the dump header's first '/'.
    r = cli("opt", mlir_file, "--passes", "canonicalize", "--print-ir-after-all", "-o", tmp_path / "out.mlir")
    assert r.code == 0, r.err
    # MLIR's header, whole; the pass's class name is jaxlib's (CanonicalizerPass at 0.12,
    # Canonicalizer at 0.9).
    assert re.fullmatch(r"// -----// IR Dump After Canonicalizer(Pass)? \(canonicalize\) //----- //",
                        r.err.splitlines()[0]), r.err


# ------------------------------------------------------------------ syntax

@pytest.mark.parametrize("spec", [
    "builtin.module(func.func(chlo-legalize-to-stablehlo,canonicalize),cse)",
    "builtin.module(canonicalize{max-iterations=3 region-simplify=disabled},func.func(cse))",
    "builtin.module(func.func(canonicalize,cse),symbol-dce)",
])
def test_textual_pipeline_round_trips(spec, catalog):
    root = pipeline.parse_spec(spec)
    pipeline.validate(root, catalog)
    assert root.render() == spec
    assert pipeline.parse_spec(root.render()).render() == spec


def test_bare_list_is_module_level():
    assert pipeline.parse_spec(" cse , canonicalize ").render() == "builtin.module(cse,canonicalize)"


def test_pass_list_nests_at_anchors(catalog):
    root = pipeline.from_pass_list("chlo-legalize-to-stablehlo,canonicalize,cse,symbol-dce,inline", catalog)
    assert root.render() == \
        "builtin.module(func.func(chlo-legalize-to-stablehlo,canonicalize,cse),symbol-dce,inline)"
    # op-agnostic passes with no open function group run on the module
    assert pipeline.from_pass_list("cse,stablehlo-refine-shapes,canonicalize", catalog).render() == \
        "builtin.module(cse,stablehlo-refine-shapes,canonicalize)"


def test_pass_list_rejects_nesting(catalog):
    with pytest.raises(PipelineError) as e:
        pipeline.from_pass_list("cse,func.func(cse)", catalog)
    assert e.value.col == 5


def test_print_pipeline_round_trips(cli):
    result = cli("opt", "--passes", "chlo-legalize-to-stablehlo,canonicalize,cse", "--print-pipeline")
    assert result.code == 0
    built = result.out.strip()
    assert built == "builtin.module(func.func(chlo-legalize-to-stablehlo,canonicalize,cse))"
    again = cli("opt", "--pipeline", built, "--print-pipeline")
    assert again.out.strip() == built


# --------------------------------------------------------- named pipelines

def test_every_named_pipeline_has_a_header_and_parses(catalog):
    named = pipeline.named_pipelines()
    assert len(named) >= 5
    for p in named:
        assert p.summary, p.name
        pipeline.validate(pipeline.parse_spec(p.spec), catalog)


def test_simplify_on_xla_dump(cli, tmp_path):
    before = cli("opt", MLP_DUMP).out
    result = cli("opt", MLP_DUMP, "--pipeline", "@simplify")
    assert result.code == 0, result.err
    # duplicate constants merged, identity reshapes folded away
    assert result.out.count("stablehlo.constant") < before.count("stablehlo.constant")
    assert len(result.out.splitlines()) < len(before.splitlines())
    filecheck(result.out, """
CHECK: func.func @main(
CHECK: stablehlo.dot_general
CHECK: return
""", tmp_path)


def test_legalize_chlo(cli, tmp_path):
    before = (DATA / "chlo_special.mlir").read_text()
    assert "chlo.erf_inv" in before and "chlo.lgamma" in before
    result = cli("opt", DATA / "chlo_special.mlir", "--pipeline", "@legalize-chlo")
    assert result.code == 0, result.err
    filecheck(result.out, """
CHECK-NOT: chlo.
CHECK: stablehlo.log_plus_one
CHECK-NOT: chlo.
""", tmp_path)


def test_refine_shapes(cli, tmp_path):
    result = cli("opt", DATA / "dynamic_reshape.mlir", "--pipeline", "@refine-shapes")
    assert result.code == 0, result.err
    filecheck(result.out, """
CHECK: func.func @main(%arg0: tensor<4x16xf32>) -> tensor<4x16xf32>
CHECK-NOT: dynamic_reshape
CHECK: stablehlo.exponential {{.*}} : tensor<4x16xf32>
CHECK-NOT: ?x16
""", tmp_path)


def test_prepare_export_then_vhlo(cli, tmp_path):
    out = tmp_path / "chlo.vhlo"
    result = cli("opt", DATA / "chlo_special.mlir", "--pipeline", "@prepare-export",
                 "--stage", "vhlo", "--target-version", "1.0.0", "-o", out)
    assert result.code == 0, result.err
    assert out.read_bytes().startswith(b"ML\xefR\rStableHLO_v1.0.0")
    # and it loads back as StableHLO with no CHLO left
    back = cli("opt", out)
    assert "stablehlo.log_plus_one" in back.out and "chlo." not in back.out


def test_shardy_propagation(cli, tmp_path):
    src = (DATA / "sharded_matmul.mlir").read_text()
    assert "sharding_per_value" not in src
    result = cli("opt", DATA / "sharded_matmul.mlir", "--pipeline", "@shardy-propagate")
    assert result.code == 0, result.err
    filecheck(result.out, """
CHECK: sdy.mesh @mesh = <["x"=4]>
CHECK: stablehlo.dot_general {{.*}} {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>}
CHECK: stablehlo.tanh {{.*}} {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>}
""", tmp_path)


def test_to_mhlo(cli, tmp_path):
    result = cli("opt", DATA / "chlo_special.mlir", "--pipeline", "@to-mhlo")
    assert result.code == 0, result.err
    filecheck(result.out, """
CHECK: mhlo.constant
CHECK-NOT: stablehlo.
CHECK-NOT: chlo.
""", tmp_path)


def test_pipeline_file(cli, tmp_path):
    f = tmp_path / "mine.pipeline"
    f.write_text("# mine: legalize then clean\nbuiltin.module(\n  func.func(chlo-legalize-to-stablehlo),\n  cse)\n")
    result = cli("opt", DATA / "chlo_special.mlir", "--pipeline-file", f, "--print-pipeline")
    assert result.code == 0, result.err
    assert result.err.splitlines()[0] == "builtin.module(func.func(chlo-legalize-to-stablehlo),cse)"
    assert "chlo." not in result.out


def test_what_a_pass_prints_reaches_stderr(cli, tmp_path):
    """A pass's own output (print-op-stats writes a table) goes to stderr, the module to stdout;
    with --ir-dump-dir too, it is not a dump."""
    result = cli("opt", ERF, "--passes", "print-op-stats")
    assert result.code == 0, result.err
    assert result.err.startswith("Operations encountered:\n")
    assert re.search(r"^\s+func\.func\s+, 1$", result.err, re.M)
    assert result.out.startswith("module {") and "Operations encountered" not in result.out
    dumped = cli("opt", ERF, "--passes", "print-op-stats", "--print-ir-after-all", "--ir-dump-dir", tmp_path)
    assert dumped.code == 0 and dumped.err.startswith("Operations encountered:\n"), dumped.err


def test_print_ir_after_all_in_order(cli):
    result = cli("opt", ERF, "--passes", "chlo-legalize-to-stablehlo,canonicalize,cse",
                 "--print-ir-after-all", "--print-ir-module-scope")
    assert result.code == 0
    headers = _dump_headers(result.err)
    assert [(w, n) for w, _, n in headers] == [
        ("After", "chlo-legalize-to-stablehlo"), ("After", "canonicalize"), ("After", "cse")]
    # without module scope, function passes print once per function (@main, @clip)
    per_op = cli("opt", DATA / "chlo_special.mlir", "--passes", "chlo-legalize-to-stablehlo",
                 "--print-ir-after-all")
    assert [n for _, _, n in _dump_headers(per_op.err)] == ["chlo-legalize-to-stablehlo"] * 2
    # the module itself goes to stdout, dumps to stderr
    assert result.out.startswith("module {")


def test_print_ir_after_change_skips_unchanged(cli):
    result = cli("opt", DATA / "dynamic_reshape.mlir", "--passes", "cse,stablehlo-refine-shapes,cse",
                 "--print-ir-after-change")
    names = [n for _, _, n in _dump_headers(result.err)]
    assert names == ["stablehlo-refine-shapes"]


def test_print_ir_before_named_pass(cli):
    result = cli("opt", ERF, "--passes", "chlo-legalize-to-stablehlo,canonicalize",
                 "--print-ir-before", "canonicalize")
    headers = _dump_headers(result.err)
    assert [(w, n) for w, _, n in headers] == [("Before", "canonicalize")]
    dump = result.err.split("//----- //", 1)[1]
    assert "chlo." not in dump and "stablehlo.log_plus_one" in dump


def test_ir_dump_dir_one_file_per_pass(cli, tmp_path):
    d = tmp_path / "ir"
    result = cli("opt", ERF, "--passes", "chlo-legalize-to-stablehlo,canonicalize,cse",
                 "--print-ir-after-all", "--print-ir-module-scope", "--ir-dump-dir", d)
    assert result.code == 0
    assert "IR Dump" not in result.err
    files = sorted(p.name for p in (d / "erf_inv").iterdir())
    assert files == ["000-after-chlo-legalize-to-stablehlo.mlir", "001-after-canonicalize.mlir",
                     "002-after-cse.mlir"]
    # each file is a loadable module
    assert cli("opt", d / "erf_inv" / files[0]).code == 0
    assert "chlo." not in (d / "erf_inv" / files[0]).read_text()


def test_timing_table(cli):
    result = cli("opt", MLP_DUMP, "--passes", "chlo-legalize-to-stablehlo,canonicalize,cse,symbol-dce",
                 "--timing")
    assert result.code == 0
    rows = result.err.splitlines()
    assert rows[0].split() == ["wall", "ms", "%", "pass"]
    names = [r.split("%", 1)[1].strip() for r in rows[1:]]
    # MLIR names it CanonicalizerPass in jaxlib 0.10.2, Canonicalizer in 0.9.
    assert "'func.func' Pipeline" in names and {"CanonicalizerPass", "Canonicalizer"} & set(names)
    assert {"SymbolDCEPass", "SymbolDCE"} & set(names) and names[-1] == "Total"
    table = [re.match(r"^\s*([\d.]+)\s+([\d.]+)%  ( *)(\S.*)$", r) for r in rows[1:]]
    assert all(table), rows
    total, total_percent = float(table[-1].group(1)), float(table[-1].group(2))
    assert total > 0.0 and total_percent == 100.0
    # The rows are MLIR's own figures, re-laid out: each percentage is its
    # share of the total, and the top-level rows add up to no more than it.
    for m in table[:-1]:
        wall, percent = float(m.group(1)), float(m.group(2))
        assert wall <= total + 0.001
        # MLIR prints seconds to 4 places: 0.1 ms steps
        assert abs(percent - 100.0 * wall / total) <= 0.1 + 100.0 * 0.1 / total, m.group(0)
    top = sum(float(m.group(1)) for m in table[:-1] if m.group(3) == "")
    assert top <= total + 0.1 * len(table)


def test_verify_each_catches_a_pass_that_breaks_the_ir(cli, tmp_path):
    plugin = tmp_path / "breaker.py"
    plugin.write_text(BREAKER)
    args = ("opt", DATA / "erf_inv.mlir", "--load-pass-plugin", plugin, "--passes", "break-signature,cse",
            "--reproducer-dir", tmp_path)
    checked = cli(*args, "--verify-each")
    assert checked.code == 1 and checked.out == ""
    assert_mentions(checked.err.splitlines()[0], "'break-signature'", "entry block must have 0 arguments")
    unchecked = cli(*args, "--no-verify-each")
    assert unchecked.code == 0, unchecked.err
    assert '"func.func"() <{function_type = () -> ()' in unchecked.out  # printed as found, unverified


def test_pass_failure_names_pass_and_writes_reproducer(cli, tmp_path):
    spec = "builtin.module(func.func(canonicalize),stablehlo-legalize-to-vhlo)"
    result = cli("opt", DATA / "chlo_special.mlir", "--pipeline", spec, "--reproducer-dir", tmp_path,
                 "-o", tmp_path / "out.mlir")
    assert result.code == 1
    assert not (tmp_path / "out.mlir").exists()
    first = result.err.splitlines()[0]
    assert first.startswith(f"error: {DATA / 'chlo_special.mlir'}:")
    assert_mentions(first, "'stablehlo-legalize-to-vhlo'", "failed")
    assert "Traceback" not in result.err
    m = re.search(r"^note: reproducer written to (\S+)$", result.err, re.M)
    assert m
    repro = m.group(1)
    assert repro.startswith(str(tmp_path))
    cmd = re.search(r"^note: reproduce with: mlirhlo (.+)$", result.err, re.M).group(1)
    import shlex

    again = cli(*shlex.split(cmd))
    assert again.code == 1
    assert_mentions(again.err, "'stablehlo-legalize-to-vhlo'", "failed")


def test_print_ir_after_failure(cli, tmp_path):
    result = cli("opt", DATA / "chlo_special.mlir", "--pipeline", "builtin.module(stablehlo-legalize-to-vhlo)",
                 "--print-ir-after-failure", "--reproducer-dir", tmp_path)
    assert result.code == 1
    assert "IR Dump After" in result.err and "Failed" in result.err


def test_opt_takes_no_snapshot_and_reloads_the_failing_chunk(cli, tmp_path, monkeypatch):
    """A pipeline that runs fine costs no copy of the module; a failing chunk of a split
    file gets its own text, loaded anew, in the reproducer."""
    from mlirhlo_driver.mlir import pipeline

    monkeypatch.setattr(pipeline, "_snapshot", lambda m: pytest.fail("snapshot taken"))
    src = tmp_path / "two.mlir"
    src.write_text("func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %0 = stablehlo.abs %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
                   "// -----\n"
                   "func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %0 = chlo.erf %a : tensor<4xf32> -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    result = cli("opt", src, "--split-input-file", "--passes", "canonicalize,stablehlo-legalize-to-vhlo",
                 "--reproducer-dir", tmp_path)
    assert result.code == 1, result.err
    (repro,) = tmp_path.glob("mlirhlo-reproducer-two.1-*.mlir")
    text = repro.read_text()
    assert "@second" in text and "chlo.erf" in text and "@first" not in text
    assert f"(reproducer: {repro})" in result.err
    # The file's line, in the second chunk (lines 6-8; chunk-relative it would be 1-3). jaxlib
    # 0.12 points at the return (8:3), 0.9 at the argument (6:19).
    line = int(re.search(rf"{re.escape(str(src))}:(\d+):\d+: pass 'stablehlo-legalize-to-vhlo' failed",
                         result.err).group(1))
    assert 6 <= line <= 8, result.err


def test_program_api_is_pure():
    import mlirhlo_driver as mhd

    prog = mhd.load(str(DATA / "chlo_special.mlir"))
    before = prog.as_text()
    legal = prog.optimize("@legalize-chlo")
    assert prog.as_text() == before  # the original is untouched
    assert "chlo." not in legal.as_text() and "chlo." in before


def test_reproducer_holds_the_module_as_it_was_before_the_pipeline(cli, tmp_path):
    """The passes change the module in place; the reproducer is its text as loaded, with
    the original locations (opt loads the file again on a failure; the API keeps a snapshot)."""
    src = tmp_path / "m.mlir"
    src.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %zero = stablehlo.constant dense<0.0> : tensor<4xf32>\n"
                   "  %0 = stablehlo.add %a, %zero : tensor<4xf32>\n"
                   "  %1 = chlo.erf %0 : tensor<4xf32> -> tensor<4xf32>\n"
                   "  return %1 : tensor<4xf32>\n}\n")
    result = cli("opt", src, "--passes", "canonicalize,stablehlo-legalize-to-vhlo", "--reproducer-dir", tmp_path)
    assert result.code == 1, result.err
    repro = re.search(r"^note: reproducer written to (\S+)$", result.err, re.M).group(1)
    text = open(repro).read()
    assert "stablehlo.add" in text  # canonicalize folded it away in the module that failed
    assert '":3:8)' in text  # the add's location in the input
    assert_mentions(result.err, "'stablehlo-legalize-to-vhlo'", "failed")


@pytest.mark.golden
def test_pass_failure_lines_name_what_is_known_of_the_place():
    """Golden: one diagnostic's line, with the place as far as it is known."""
    from mlirhlo_driver.mlir import pipeline

    assert pipeline._format_diag("error", (3, 5), "boom\n", "m.mlir") == "error: m.mlir:3:5: boom"
    assert pipeline._format_diag("error", (None, None), "boom", "m.mlir") == "error: m.mlir: boom"
    assert pipeline._format_diag("note", (None, None), "a\nb\nc", None) == "note: a ... (2 more lines)"


@pytest.mark.parametrize("col_base", [0, 7])
@pytest.mark.parametrize("spec, col, facts", [
    ("builtin.module(cse,,canonicalize)", 20, ("','",)),
    ("builtin.module(cse", 19, ("')'", "'builtin.module('", "column {}")),
    ("cse)", 4, ("')'",)),
    ("builtin.module(cse{a=1)", 19, ("braces", "'cse'")),
])
def test_a_malformed_spec_is_placed_at_its_column(spec, col, facts, col_base):
    """Columns count from 1, shifted by where the spec starts on its line (a pipeline file's);
    so is a column the message names. (The wording: test_spec_errors_name_the_place.)"""
    from mlirhlo_driver.errors import PipelineError
    from mlirhlo_driver.mlir import pipeline

    with pytest.raises(PipelineError) as e:
        pipeline.parse_spec(spec, col_base=col_base)
    assert (e.value.line, e.value.col) == (1, col + col_base)
    assert_mentions(e.value.message, *(f.format(1 + col_base) for f in facts))


@pytest.mark.parametrize("names, message", [
    (["all", "cse", "no-such-pass"], "unknown pass 'no-such-pass'"),
    (["no-such-pass", "all"], "unknown pass 'no-such-pass'"),
    (["all"], None),
    (["cse", "all"], None),
])
def test_print_ir_names_are_checked_beside_all(names, message):
    """--print-ir-before/after: 'all' is always accepted, and a misspelt name beside it is
    still refused (MLIR would print nothing for it)."""
    from mlirhlo_driver.errors import PipelineError
    from mlirhlo_driver.mlir import pipeline

    root = pipeline.parse_spec("builtin.module(cse)")
    if message is None:
        pipeline.check_print_ir_passes(names, root, "--print-ir-after")
        return
    with pytest.raises(PipelineError) as e:
        pipeline.check_print_ir_passes(names, root, "--print-ir-after")
    assert (e.value.file, e.value.message) == ("--print-ir-after", message)


def test_a_diagnostic_location_at_line_0_has_no_position_but_column_0_is_a_position():
    """A pass failure is placed at its diagnostic's line:col; line 0 means no position, column 0 is a column."""
    from mlirhlo_driver.mlir import pipeline

    assert pipeline._loc('loc("m.mlir":3:5)') == (3, 5)
    assert pipeline._loc('loc("m.mlir":3:0)') == (3, 0)
    assert pipeline._loc('loc("m.mlir":0:0)') == (None, None)
    assert pipeline._loc('loc("m.mlir":0:7)') == (None, None)
    assert pipeline._loc("loc(unknown)") == (None, None)


def test_a_module_the_bytecode_writer_refuses_is_kept_as_its_text():
    """The module before the pipeline is kept as its text, locations included, when it cannot be written as bytecode."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.mlir import pipeline

    class Refusing:
        def __init__(self, op):
            self.op = op

        def write_bytecode(self, file):
            raise RuntimeError("the bytecode writer refuses this module")

        def get_asm(self, **kw):
            return self.op.get_asm(**kw)

    class Module:
        def __init__(self, module):
            self.operation = Refusing(module.operation)

    with _jaxlib.ir_context():
        real = ir.Module.parse(ERF.read_text())
        snapshot = pipeline._snapshot(Module(real))
        text = pipeline._module_asm(real)
    assert isinstance(snapshot, str) and snapshot == text
    assert "loc(" in text and "func.func" in text
    assert pipeline._snapshot_text(snapshot) == text


@pytest.mark.parametrize("after", [["--print-ir-after-all"], ["--print-ir-after-change"],
                                   ["--print-ir-after", "canonicalize"]])
def test_print_ir_after_failure_beside_after_printing_keeps_the_after_dumps(cli, after):
    """--print-ir-after-failure added to after-printing takes no dump away: the passes that ran fine still print."""
    args = ("opt", ERF, "--passes", "chlo-legalize-to-stablehlo,canonicalize,cse", *after, "--print-ir-module-scope")
    alone = cli(*args)
    both = cli(*args, "--print-ir-after-failure")
    assert alone.code == 0 and both.code == 0, both.err
    expected = [(w, n) for w, _, n in _dump_headers(alone.err)]
    assert expected and all(w == "After" for w, _ in expected)
    assert [(w, n) for w, _, n in _dump_headers(both.err)] == expected


def test_print_ir_after_all_and_after_failure_on_a_failing_pipeline(cli, tmp_path):
    """With both flags a failing pipeline prints after each pass that ran fine, then the failed pass's dump."""
    result = cli("opt", DATA / "chlo_special.mlir", "--pipeline",
                 "builtin.module(canonicalize,stablehlo-legalize-to-vhlo)",
                 "--print-ir-after-all", "--print-ir-after-failure", "--reproducer-dir", tmp_path)
    assert result.code == 1
    headers = re.findall(r"^// -----// IR Dump After \S+( Failed)? \((\S+)\) //----- //$", result.err, re.M)
    assert headers == [("", "canonicalize"), (" Failed", "stablehlo-legalize-to-vhlo")], result.err


# ------------------------------------------------- the parser, exactly

def test_a_spec_records_each_name_and_its_column():
    """Every pass and op keeps its 1-based column (shifted by col_base) and its options as written."""
    root = pipeline.parse_spec("  cse , func.func( canonicalize{a={b} c=1} ,x.y-z )", col_base=3)
    assert root.render() == "builtin.module(cse,func.func(canonicalize{a={b} c=1},x.y-z))"
    assert (root.op, root.col) == ("builtin.module", 6)
    cse, nest = root.items
    assert (cse.name, cse.options, cse.col) == ("cse", None, 6)
    assert (nest.op, nest.col) == ("func.func", 12)
    assert [(p.name, p.options, p.col) for p in nest.items] == [("canonicalize", "a={b} c=1", 23),
                                                                ("x.y-z", None, 48)]
    assert [p.name for p in root.passes()] == ["cse", "canonicalize", "x.y-z"]
    whole = pipeline.parse_spec(" builtin.module ( cse{ a=1 } ) ", col_base=2)
    assert (whole.op, whole.col, whole.render()) == ("builtin.module", 4, "builtin.module(cse{ a=1 })")
    assert whole.items[0].col == 21
    assert pipeline.parse_spec("func.func(cse)").render() == "builtin.module(func.func(cse))"
    assert pipeline.parse_spec("builtin.module(func.func( ))").render() == "builtin.module(func.func())"


@pytest.mark.parametrize("spec, col, message", [
    ("cse,builtin.module(cse)", 1, "'builtin.module(...)' must be the whole pipeline"),
    ("   builtin.module(cse),cse", 4, "'builtin.module(...)' must be the whole pipeline"),
    ("cse,", 5, "expected a pass name or an op name, found end of pipeline"),
    ("cse{a=1}}", 9, "unexpected '}'"),
    ("builtin.module(cse) x", 21, "unexpected 'x'"),
    ("(cse)", 1, "expected a pass name or an op name, found '('"),
    ("  \t", 1, "empty pipeline"),
    ("builtin.module(cse,,canonicalize)", 20, "expected a pass name or an op name, found ','"),
    ("builtin.module(cse", 19, "unbalanced parentheses: expected ')' to close 'builtin.module(' from column 1"),
    ("cse)", 4, "unexpected ')'"),
    ("builtin.module(cse{a=1)", 19, "unbalanced braces in the options of 'cse'"),
    ("builtin.module(" + "a(" * 64 + "cse" + ")" * 65, 16 + 63 * 2, "pipeline nested more than 64 levels deep"),
])
@pytest.mark.golden
def test_spec_errors_name_the_place(spec, col, message):
    """Golden: each malformed spec gets its own message, at the column where it goes wrong."""
    with pytest.raises(PipelineError) as e:
        pipeline.parse_spec(spec, source="my.pipeline", line=4)
    assert (e.value.file, e.value.line, e.value.col, e.value.message) == ("my.pipeline", 4, col, message)


def test_pipelines_nest_up_to_64_levels():
    """64 levels of ops parse (the module counts); the 65th is refused at its name."""
    deep = "builtin.module(" + "a(" * 63 + "cse" + ")" * 64
    assert pipeline.parse_spec(deep).render() == deep
    with pytest.raises(PipelineError) as e:
        pipeline.parse_spec("builtin.module(" + "a(" * 64 + "cse" + ")" * 65)
    assert_mentions(e.value.message, "nested", "64")
    assert e.value.col == 16 + 63 * 2
    wide = "builtin.module(" + "func.func(cse)," * 70 + "a(b(c(cse))))"  # depth is nesting, not a count
    assert pipeline.parse_spec(wide).render() == wide


@pytest.mark.parametrize("spec", [
    "cse,symbol-dce,func.func(legalize,cse,py-func,py-any),py-mod,py-any",
    "builtin.module(gpu.module(gpu-lower,cse),any(symbol-dce,legalize))",
])
def test_validate_accepts_passes_at_their_anchors(spec):
    """Op-agnostic passes go anywhere, anchored ones under their op or 'any', Python ones at the top."""
    pipeline.validate(pipeline.parse_spec(spec), SMALL)


@pytest.mark.parametrize("spec, col, message, hint", [
    ("cse,symbl-dce", 5, "unknown pass 'symbl-dce'", "did you mean 'symbol-dce'?"),
    ("func.func(symbol-dce)", 11, "pass 'symbol-dce' runs on 'builtin.module' ops but is nested under 'func.func'",
     "write it as builtin.module(symbol-dce), or use --passes"),
    ("cse,legalize", 5, "pass 'legalize' runs on 'func.func' ops but is nested under 'builtin.module'",
     "write it as builtin.module(func.func(legalize)), or use --passes"),
    ("gpu.module(legalize)", 12, "pass 'legalize' runs on 'func.func' ops but is nested under 'gpu.module'",
     "write it as builtin.module(func.func(legalize)), or use --passes"),
    ("gpu.module(py-any)", 12, "Python pass 'py-any' can run at module level or directly under func.func, "
     "not under 'gpu.module'", None),
    ("gpu.module(func.func(py-func))", 22, "Python pass 'py-func' can run at module level or directly under "
     "func.func, not under 'func.func'", None),
])
def test_validate_refuses_misplaced_and_unknown_passes(spec, col, message, hint):
    """An unknown or misplaced pass is reported at its column, with how to write it instead."""
    with pytest.raises(PipelineError) as e:
        pipeline.validate(pipeline.parse_spec(spec), SMALL, source="p.pipeline", line=3)
    assert (e.value.file, e.value.line, e.value.col, e.value.message, e.value.hint) == \
        ("p.pipeline", 3, col, message, hint)


@pytest.mark.parametrize("names, rendered", [
    ("cse,legalize,cse,symbol-dce,cse", "builtin.module(cse,func.func(legalize,cse),symbol-dce,cse)"),
    ("legalize,symbol-dce,legalize{x=1}", "builtin.module(func.func(legalize),symbol-dce,func.func(legalize{x=1}))"),
    ("legalize,gpu-lower,cse,gpu-lower,legalize",
     "builtin.module(func.func(legalize),gpu.module(gpu-lower,cse,gpu-lower),func.func(legalize))"),
    ("symbol-dce", "builtin.module(symbol-dce)"),
])
def test_a_pass_list_groups_consecutive_passes_of_one_anchor(names, rendered):
    """--passes: runs of passes with one anchor share a nest; op-agnostic ones join the nest before them."""
    root = pipeline.from_pass_list(names, SMALL)
    assert root.render() == rendered
    pipeline.validate(root, SMALL)


def test_a_pass_list_places_its_nests_and_errors_at_their_columns():
    """The nests --passes makes sit at their first pass's column; an unknown pass is placed and hinted."""
    root = pipeline.from_pass_list("cse,legalize,cse", SMALL)
    assert [(type(i).__name__, i.col) for i in root.items] == [("PassRef", 1), ("Nest", 5)]
    with pytest.raises(PipelineError) as e:
        pipeline.from_pass_list("cse,legalise", SMALL)
    assert (spell(e.value.file, FLAGS), e.value.line, e.value.col) == ("--passes", 1, 5)
    assert_mentions(e.value.text(FLAGS), "'legalise'", "'legalize'")
    with pytest.raises(PipelineError) as e:
        pipeline.from_pass_list("cse,,cse", SMALL)
    assert (spell(e.value.file, FLAGS), e.value.col) == ("--passes", 5)
    with pytest.raises(PipelineError) as e:
        pipeline.from_pass_list("cse,func.func(cse)", SMALL)
    assert (spell(e.value.file, FLAGS), e.value.line) == ("--passes", 1)
    assert_mentions(spell(e.value.message, FLAGS), "plain comma list", "--pipeline")


# ------------------------------------------------- pipeline files and resolve

def test_a_pipeline_file_is_its_header_then_its_spec(tmp_path):
    """Leading '#' lines are the header (its first non-empty line the summary); the rest joins into the spec."""
    f = tmp_path / "mine.pipeline"
    f.write_text("#\n##   Legalize, then clean  \n# more words\n\n  builtin.module(  \n"
                 "  # not the summary\n  func.func(cse),\n\n  symbol-dce)\n")
    named = pipeline.read_pipeline_file(str(f))
    assert named == pipeline.NamedPipeline("mine", f, "builtin.module(func.func(cse),symbol-dce)",
                                           "Legalize, then clean")
    other = tmp_path / "other.txt"
    other.write_text("cse\n")
    assert pipeline.read_pipeline_file(other) == pipeline.NamedPipeline("other", other, "cse", "")


@pytest.mark.parametrize("content, message", [
    (None, "no such pipeline file"),
    ("# only a header\n\n#\n", "pipeline file holds no pipeline"),
    ("", "pipeline file holds no pipeline"),
    (b"\xff\xfe\x00cse", "not a text file; a pipeline file holds a textual pipeline"),
    ("dir", "Is a directory"),
])
def test_an_unusable_pipeline_file_is_named(tmp_path, content, message):
    """A missing, empty, binary or directory pipeline file: one error naming the file."""
    f = tmp_path / "bad.pipeline"
    if content == "dir":
        f.mkdir()
    elif isinstance(content, bytes):
        f.write_bytes(content)
    elif content is not None:
        f.write_text(content)
    with pytest.raises(PipelineError) as e:
        pipeline.read_pipeline_file(f)
    assert (e.value.file, e.value.line, e.value.message) == (str(f), None, message)


def test_named_pipelines_are_the_pipeline_files_by_name():
    """@NAME is the file NAME.pipeline of the package's pipelines, listed in name order."""
    named = pipeline.named_pipelines()
    names = [p.name for p in named]
    assert names == sorted(names) and "simplify" in names
    assert [p.path.name for p in named] == [f"{n}.pipeline" for n in names]
    simplify = pipeline.resolve_named("simplify")
    assert simplify == named[names.index("simplify")]
    assert simplify.path == pipeline.pipeline_dir() / "simplify.pipeline"


@pytest.mark.parametrize("name, hint", [("simplfy", "'simplify'"), ("zzzzzzzz", "'mlirhlo passes'")])
def test_an_unknown_named_pipeline_gets_a_hint(name, hint):
    """An unknown @NAME: a close match if there is one, else where to look."""
    with pytest.raises(PipelineError) as e:
        pipeline.resolve_named(name)
    assert spell(e.value.file, FLAGS) == "--pipeline"
    assert_mentions(e.value.message, f"'@{name}'")
    assert_mentions(e.value.hint, hint)


@pytest.mark.golden
@pytest.mark.parametrize("make, line", [
    (lambda: pipeline.from_pass_list("cse,legalise", SMALL),
     "error: --passes:1:5: unknown pass 'legalise' (did you mean 'legalize'?)"),
    (lambda: pipeline.from_pass_list("cse,func.func(cse)", SMALL),
     "error: --passes:1:5: --passes takes a plain comma list; use --pipeline for nesting"),
    (lambda: pipeline.resolve(passes="py-func{a=1}", catalog=SMALL),
     "error: --passes:1:8: Python pass 'py-func' takes no options"),
    (lambda: pipeline.resolve("cse", passes="cse", catalog=SMALL),
     "error: give only one of --pipeline, --passes and --pipeline-file"),
    (lambda: pipeline.resolve("builtin.module(func.func(stablehlo.while(py-func)))", catalog=SMALL),
     "error: --pipeline:1:42: Python pass 'py-func' can run at module level or directly under func.func, "
     "not under 'stablehlo.while'"),
    (lambda: pipeline.resolve_named("simplfy"), "error: --pipeline: unknown named pipeline '@simplfy' "
                                                "(did you mean 'simplify'?)"),
    (lambda: pipeline.resolve_named("zzzzzzzz"), "error: --pipeline: unknown named pipeline '@zzzzzzzz' "
                                                 "(see 'mlirhlo passes')"),
    (lambda: pipeline.check_options(pipeline.parse_spec("cse{no-such=1}"), all_passes(), source="f.pipeline", line=2),
     "error: f.pipeline:2:4: bad options for pass 'cse': no such option no-such ('mlirhlo passes' lists the passes)"),
])
def test_pipeline_pass_refusals_exactly(make, line):
    """Golden: a pipeline naming passes, pipelines or options the driver does not have, or
    given more than one way."""
    with pytest.raises(PipelineError) as e:
        make()
    assert e.value.format() == line


def test_a_root_built_by_hand_with_a_misplaced_python_pass_is_refused_as_validate_refuses_it(marker):
    """build_pass_manager of a root that skipped validate(): the same refusal (its sentence is
    pinned in test_pipeline_pass_refusals_exactly), at the pass's line and column."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.ir_context(), pytest.raises(PipelineError) as e:
        pipeline.build_pass_manager(pipeline.parse_spec("builtin.module(cse,gpu.module(cse,mark-op))"), marker[1])
    assert e.value.format().startswith("error: --pipeline:1:35: ")
    assert_mentions(e.value.message, "'mark-op'", "not under 'gpu.module'")


def test_resolve_takes_one_spelling_of_a_pipeline(tmp_path):
    """resolve: none given is no pipeline, two are refused; each spelling is parsed, checked, and errors name it."""
    assert pipeline.resolve(catalog=SMALL) is None
    with pytest.raises(PipelineError) as e:
        pipeline.resolve("cse", passes="cse", catalog=SMALL)
    assert_mentions(str(e.value), "pipeline, passes and pipeline_file")
    with pytest.raises(PipelineError):
        pipeline.resolve(passes="cse", pipeline_file="x.pipeline", catalog=SMALL)
    assert pipeline.resolve(passes="legalize,cse", catalog=SMALL).render() == \
        "builtin.module(func.func(legalize,cse))"
    assert pipeline.resolve("cse,symbol-dce", catalog=SMALL).render() == "builtin.module(cse,symbol-dce)"
    f = tmp_path / "p.pipeline"
    f.write_text("# p\nfunc.func(legalize),\n  symbol-dce\n")
    assert pipeline.resolve(pipeline_file=str(f), catalog=SMALL).render() == \
        "builtin.module(func.func(legalize),symbol-dce)"
    f.write_text("# p\nfunc.func(legalize),\n  symbol-dse\n")
    with pytest.raises(PipelineError) as e:
        pipeline.resolve(pipeline_file=str(f), catalog=SMALL)
    assert (e.value.file, e.value.col) == (str(f), 21)
    assert_mentions(e.value.message, "'symbol-dse'")
    with pytest.raises(PipelineError) as e:
        pipeline.resolve("cse,legalize", catalog=SMALL)
    assert (spell(e.value.file, FLAGS), e.value.col) == ("--pipeline", 5)
    with pytest.raises(PipelineError) as e:
        pipeline.resolve("@simplify", catalog=SMALL)  # its passes are not in this catalogue
    assert e.value.file == str(pipeline.pipeline_dir() / "simplify.pipeline")
    with pytest.raises(PipelineError) as e:
        pipeline.resolve(passes="py-func{a=1}", catalog=SMALL)
    assert (spell(e.value.file, FLAGS), e.value.col) == ("--passes", 8)
    assert_mentions(e.value.message, "'py-func'", "no options")
    with pytest.raises(PipelineError) as e:
        pipeline.resolve("py-mod{a=1}", catalog=SMALL)
    assert (spell(e.value.file, FLAGS), e.value.col) == ("--pipeline", 7)
    assert_mentions(e.value.message, "'py-mod'", "no options")


def test_resolve_a_named_pipeline_is_its_files_spec(catalog):
    """--pipeline @NAME is the spec in NAME.pipeline, checked against the real catalogue."""
    named = pipeline.resolve_named("simplify")
    assert pipeline.resolve("@simplify").render() == pipeline.parse_spec(named.spec).render()
    assert pipeline.resolve(named.spec, catalog=catalog).render() == pipeline.parse_spec(named.spec).render()


@pytest.mark.parametrize("spec, col, facts", [
    ("cse{no-such=1}", 4, ("'cse'", "no-such")),
    ("builtin.module(symbol-dce,func.func(chlo-legalize-to-stablehlo{bogus=2}))", 63,
     ("'chlo-legalize-to-stablehlo'", "bogus")),
])
def test_options_mlir_refuses_are_placed_after_the_pass_name(catalog, spec, col, facts):
    """Native pass options are checked at the pass's anchor; MLIR's complaint is placed after the name."""
    with pytest.raises(PipelineError) as e:
        pipeline.check_options(pipeline.parse_spec(spec), catalog, source="f.pipeline", line=2)
    assert (e.value.file, e.value.line, e.value.col) == ("f.pipeline", 2, col)
    assert_mentions(e.value.message, *facts)
    assert_mentions(e.value.hint, "'mlirhlo passes'")
    good = "builtin.module(cse,func.func(canonicalize{max-iterations=3},chlo-legalize-to-stablehlo{}),symbol-dce{}," \
        "no-such{x=1})"  # each at its anchor; a pass not in the catalogue is validate's to report
    pipeline.check_options(pipeline.parse_spec(good), catalog)


@pytest.mark.golden
def test_print_ir_names_must_be_passes_of_the_pipeline():
    """Golden: --print-ir-before/after NAME: a pass of the pipeline; else why not, with the pipeline's passes as a hint."""
    root = pipeline.parse_spec("builtin.module(cse,func.func(canonicalize,cse),inline-calls)")
    pipeline.check_print_ir_passes(("canonicalize", "inline-calls", "all"), root, "--print-ir-before")
    pipeline.check_print_ir_passes([], None, "--print-ir-after")
    pipeline.check_print_ir_passes(["all"], None, "--print-ir-after")

    def refused(names, root):
        with pytest.raises(PipelineError) as e:
            pipeline.check_print_ir_passes(names, root, "--print-ir-after")
        return (e.value.file, e.value.line, e.value.message, e.value.hint)

    assert refused(["symbol-dce"], root) == ("--print-ir-after", None, "pass 'symbol-dce' is not in the pipeline",
                                             "the pipeline runs: cse, canonicalize, inline-calls")
    assert refused(["cse", "inline"], root) == ("--print-ir-after", None, "pass 'inline' is not in the pipeline",
                                                "did you mean 'inline-calls'?")
    assert refused(["cse"], None) == ("--print-ir-after", None, "no pipeline runs, so no IR is printed around 'cse'",
                                      "give --pipeline or --passes")
    assert refused(["canonicalise"], pipeline.parse_spec("cse"))[2:] == \
        ("unknown pass 'canonicalise'", "did you mean 'canonicalize'?")
    # A name both in the pipeline and in the catalogue is suggested once.
    assert refused(["canonicalise"], root)[2:] == ("unknown pass 'canonicalise'", "did you mean 'canonicalize'?")
    for composite in ("sdy-propagation-pipeline", "composite-fixed-point-pass"):
        pipeline.check_print_ir_passes(["symbol-dce"], pipeline.parse_spec(f"cse,{composite}"), "--print-ir-after")


# ------------------------------------------------- what a run prints, parsed

def test_ir_dump_headers_are_mlirs():
    """A dump's header is the line MLIR prints for it, 'Failed' for the pass that failed."""
    dumps = [pipeline.IRDump(w, "CSEPass", "cse", "", "") for w in ("before", "after", "after-failure")]
    assert [d.header() for d in dumps] == [
        "// -----// IR Dump Before CSEPass (cse) //----- //",
        "// -----// IR Dump After CSEPass (cse) //----- //",
        "// -----// IR Dump After CSEPass Failed (cse) //----- //"]


@pytest.mark.parametrize("flags, prints", [
    ({}, False), ({"print_ir_module_scope": True, "timing": True, "verify_each": False}, False),
    ({"print_ir_after_all": True}, True), ({"print_ir_after_change": True}, True),
    ({"print_ir_before": ("cse",)}, True), ({"print_ir_after": ("all",)}, True),
    ({"print_ir_after_failure": True}, True),
])
def test_which_flags_print_ir(flags, prints):
    """Only the five IR-printing flags print IR; scope, timing and verification do not."""
    assert pipeline.Instrumentation(**flags).prints_ir() is prints


def test_native_output_splits_into_dumps_other_output_and_timing():
    """What MLIR printed: the text before the first dump, each dump's parts, the timing rows (wall time)."""
    result = _dumps(pipeline.Instrumentation(print_ir_before=("all",), print_ir_after_all=True, timing=True))
    assert result.other_output == "something a pass printed\n"
    assert [(d.when, d.pass_class, d.pass_name, d.scope, d.text) for d in result.dumps] == [
        ("before", "CSEPass", "cse", "'func.func' operation: @main", "func.func @main() {\n\n  return\n}\n"),
        ("after", "CSEPass", "cse", "", "module {\n}\n"),
        ("after-failure", "CanonicalizerPass", "canonicalize", "", "failed body\n"),
        ("after", "Inliner", "inline", "", "inlined\n"),
        ("before", "SymbolDCE", "", "", "no name\n")]
    assert [(r.name, r.depth, r.wall_s, r.percent) for r in result.timing] == [
        ("'func.func' Pipeline", 0, 0.0012, 30.0), ("CSEPass", 1, 0.0008, 20.0), ("Nested", 2, 0.0004, 10.0),
        ("Canonicalizer", 0, 0.0006, 12.5), ("Total", 0, 0.004, 100.0)]
    assert "Execution time report" not in result.dumps[-1].text
    assert pipeline.format_timing(result) == (
        "   wall ms       %  pass\n"
        "     1.200   30.0%  'func.func' Pipeline\n"
        "     0.800   20.0%    CSEPass\n"
        "     0.400   10.0%      Nested\n"
        "     0.600   12.5%  Canonicalizer\n"
        "     4.000  100.0%  Total\n")


def test_native_output_without_timing_keeps_the_report_as_text():
    """Without --timing a report-like text is no timing: it stays in the last dump; no dumps: all is other output."""
    result = _dumps(pipeline.Instrumentation(print_ir_before=("all",)))
    assert result.timing == []
    assert result.dumps[-1].text.startswith("no name\n===---") and result.dumps[-1].text.endswith("  Total\n")
    plain = pipeline.PipelineRun("spec")
    pipeline._parse_native_output("just text\n===--- x\n", pipeline.Instrumentation(timing=True), plain)
    assert (plain.other_output, plain.dumps, plain.timing) == ("just text\n", [], [])
    report = pipeline.PipelineRun("spec")
    pipeline._parse_native_output(NATIVE_OUTPUT[NATIVE_OUTPUT.index("===---"):], pipeline.Instrumentation(timing=True),
                                  report)
    assert (report.other_output, report.dumps, len(report.timing)) == ("", [], 5)


@pytest.mark.parametrize("flags, kept", [
    ({}, ["after-failure"]),
    ({"print_ir_before": ("cse",)}, ["before cse", "after-failure"]),
    ({"print_ir_before": ("all",)}, ["before cse", "after-failure", "before "]),
    ({"print_ir_after": ("inline",)}, ["after-failure", "after inline"]),
    ({"print_ir_after": ("all",)}, ["after cse", "after-failure", "after inline"]),
    ({"print_ir_after_all": True}, ["after cse", "after-failure", "after inline"]),
    ({"print_ir_after_change": True}, ["after cse", "after-failure", "after inline"]),
    ({"print_ir_after": ("canonicalize",), "print_ir_before": ("inline",)}, ["after-failure"]),
])
def test_only_the_asked_for_dumps_are_kept(flags, kept):
    """Before-dumps for the passes asked for, after-dumps likewise or all, and always the failed pass's."""
    result = _dumps(pipeline.Instrumentation(**flags))
    assert [d.when if d.when == "after-failure" else f"{d.when} {d.pass_name}" for d in result.dumps] == kept


@pytest.mark.parametrize("kind, loc, message, source, line", [
    ("error", (3, 5), "boom", None, "error: 3:5: boom"),
    ("error", (3, None), "boom", "m.mlir", "error: m.mlir:3: boom"),
    ("note", (None, None), "", None, "note: "),
    ("note", (None, None), "\n  \n  see current operation: %0 = x\n", "m", "note: m: see current operation: %0 = x"),
    ("note", (1, 2), "   \nfirst\n\nthird\n", "m", "note: m:1:2: first ... (2 more lines)"),
    ("note", (1, 2), "first\nsecond", "m", "note: m:1:2: first ... (1 more line)"),
])
def test_diagnostic_lines(kind, loc, message, source, line):
    """One line per diagnostic: the place known, its first non-blank line, how many more there were."""
    assert pipeline._format_diag(kind, loc, message, source) == line


def test_prefix_specs_keep_each_pass_in_its_nest():
    """The growing prefixes that find a failing pass: each pass wrapped in its own ops, options kept."""
    items = [(["func.func"], pipeline.PassRef("cse", None, 1)), ([], pipeline.PassRef("inline", "a=1", 5)),
             (["gpu.module", "func.func"], pipeline.PassRef("canonicalize", None, 9))]
    assert pipeline._prefix_spec(items) == \
        "builtin.module(func.func(cse),inline{a=1},gpu.module(func.func(canonicalize)))"
    assert pipeline._prefix_spec([]) == "builtin.module()"


def test_reproducer_names_are_safe_and_short():
    """A module's name in a reproducer's file name: word characters, dots and dashes, at most 60."""
    assert pipeline._safe("my mod/ule:v1.2-x") == "my_mod_ule_v1.2-x"
    assert pipeline._safe("a" * 70) == "a" * 60


def test_python_passes_join_the_native_ones_in_one_pass_manager(marker):
    """A Python pass in func.func(...) splits the group and runs at module level; native runs stay whole."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    _, passes = marker
    with _jaxlib.ir_context():
        pm = pipeline.build_pass_manager(_with(
            "builtin.module(func.func(cse,fold-involutions,cse,symbol-dce),strip-frontend-attributes,cse,"
            "func.func(fold-involutions),func.func(mark-op,cse),mark-op)", passes))
        assert str(pm) == ("builtin.module(func.func(cse),fold-involutions,func.func(cse,symbol-dce),"
                           "strip-frontend-attributes,cse,fold-involutions,mark-op,func.func(cse),mark-op)")
        native = pipeline.build_pass_manager(pipeline.parse_spec("builtin.module(func.func(cse),symbol-dce)"))
        assert str(native) == "builtin.module(func.func(cse),symbol-dce)"
        with pytest.raises(PipelineError) as e:
            pipeline.build_pass_manager(pipeline.parse_spec("builtin.module(cse,gpu.module(cse,mark-op))"), passes)
    assert (spell(e.value.file, FLAGS), e.value.col) == ("--pipeline", 35)
    assert_mentions(e.value.message, "'mark-op'", "func.func", "'gpu.module'")


def test_a_python_pass_runs_on_the_module_or_on_each_function(marker):
    """An op-agnostic Python pass gets the module at top level, and each function inside func.func(...)."""
    _, passes = marker
    module = _module(ERF.read_text())
    result = pipeline.run(module, _with("builtin.module(cse,func.func(mark-op),cse)", passes))
    assert result.spec == "builtin.module(cse,func.func(mark-op),cse)"
    asm = module.operation.get_asm()
    assert asm.startswith("module {") and re.search(r"^  func\.func @\w+\(.*attributes \{x\.marked\}", asm, re.M)
    module = _module(ERF.read_text())
    pipeline.run(module, _with("builtin.module(mark-op,cse)", passes))
    asm = module.operation.get_asm()
    assert asm.startswith("module attributes {x.marked} {") and asm.count("marked") == 1


@pytest.mark.golden
def test_a_failing_python_pass_names_itself_the_module_and_the_line(marker, tmp_path):
    """Golden (a failing Python pass's message). A Python pass that raises: its name, the exception, where in the plugin, and a reproducer of the input."""
    marker, passes = marker
    module = _module(ERF.read_text())
    before = pipeline._module_asm(module)
    root = _with("builtin.module(cse,func.func(explode),cse)", passes)
    with pytest.raises(pipeline.PassFailure) as e:
        pipeline.run(module, root, module_name="erf", reproducer_dir=str(tmp_path / "r"), source_for_reproducer="x")
    line = MARKER.splitlines().index('    raise ValueError("bad function")') + 1
    assert e.value.message == f"Python pass 'explode' failed on module 'erf': ValueError: bad function " \
        f"(at {marker}:{line})"
    assert (e.value.pass_name, e.value.file, e.value.line) == ("explode", "x", None)
    assert isinstance(e.value.run, pipeline.PipelineRun) and e.value.run.spec == root.render()
    repro = e.value.reproducer
    assert repro.startswith(str(tmp_path / "r" / "mlirhlo-reproducer-erf-")) and repro.endswith(".mlir")
    assert pipeline.reproducer_command(repro) == \
        f"mlirhlo opt {repro} --pipeline 'builtin.module(cse,func.func(explode),cse)' --load-pass-plugin {marker}"
    assert open(repro).read().split("\n", 2)[2] == before


@pytest.mark.golden
def test_a_native_failure_reports_its_diagnostics(tmp_path):
    """Golden (a failed native pipeline's message and diagnostics lines). MLIR's diagnostics: the first is the error's message and place, the rest and all notes lines below it.
    A chunk's own ("-") lines count from the chunk's first line; the file's are its own."""
    exc = MLIRError("ignored")
    exc.error_diagnostics = [
        _Diag('loc("-":3:5)', "  boom\nmore\n", [_Diag('loc("m.mlir":14:1)', "see current operation:\na\nb\nc")]),
        _Diag("loc(unknown)", "second", [_Diag('loc("m.mlir":0:0)', "why")]),
    ]
    result = pipeline.PipelineRun("s")
    err = pipeline._pass_failure(exc, pipeline.parse_spec("cse"), ERF.read_text(), "m", str(tmp_path), "m.mlir",
                                 result, line_offset=10)
    assert (err.message, err.file, err.line, err.col, err.pass_name) == \
        ("pass pipeline failed: boom", "m.mlir", 13, 5, None)
    assert err.diagnostics == "note: m.mlir:14:1: see current operation: ... (3 more lines)\n" \
        "error: m.mlir: second\nnote: m.mlir: why"
    assert err.run is result and err.reproducer.startswith(str(tmp_path / "mlirhlo-reproducer-m-"))
    bare = pipeline._pass_failure(MLIRError("header\n  the last line  \n"), pipeline.parse_spec("cse"),
                                  ERF.read_text(), "m", str(tmp_path), None, result)
    assert (bare.message, bare.diagnostics, bare.file, bare.line, bare.col) == \
        ("pass pipeline failed: the last line", "header\n  the last line", None, None, None)
    other = pipeline._pass_failure(ValueError("x"), pipeline.parse_spec("cse"), ERF.read_text(), "m",
                                   str(tmp_path), "m.mlir", result)
    assert (other.message, other.file, other.line, other.pass_name) == \
        ("Python pass '?' failed on module 'm': ValueError: x", "m.mlir", None, None)


def test_a_failing_native_pass_is_found_by_its_prefix():
    """The culprit is the first pass whose prefix of the pipeline fails on the original module."""
    text = (DATA / "chlo_special.mlir").read_text()
    root = pipeline.parse_spec("builtin.module(func.func(canonicalize,cse),stablehlo-legalize-to-vhlo,cse)")
    assert pipeline._find_failing_pass(root, text) == "stablehlo-legalize-to-vhlo"
    assert pipeline._find_failing_pass(pipeline.parse_spec("func.func(cse),canonicalize"), text) is None
    assert pipeline._find_failing_pass(pipeline.parse_spec("stablehlo-legalize-to-vhlo,cse"), text) == \
        "stablehlo-legalize-to-vhlo"


def test_a_reproducer_is_a_runnable_header_then_the_module(tmp_path, monkeypatch):
    """The reproducer file: a two-line comment with the command (plugins once each), then the module text."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = pipeline.write_reproducer("module {\n}\n", "builtin.module(func.func(cse))", "a b", None)
    assert path.startswith(str(tmp_path / "mlirhlo-reproducer-a_b-")) and path.endswith(".mlir")
    assert open(path).read() == ("// Reproducer written by mlirhlo after a pass failure. Run it with:\n"
                                 f"//   mlirhlo opt {path} --pipeline 'builtin.module(func.func(cse))'\nmodule {{\n}}\n")
    assert pipeline.reproducer_command(path) == f"mlirhlo opt {path} --pipeline 'builtin.module(func.func(cse))'"
    assert pipeline._plugins_for("builtin.module(fold-involutions,cse)") == []


def test_plugins_of_a_reproducer_are_listed_once(marker):
    """Each plugin file whose passes the spec runs is loaded once by the reproducer's command."""
    path, passes = marker
    assert pipeline._plugins_for("builtin.module(mark-op,func.func(explode,fold-involutions),mark-op)",
                                 passes) == [path]


@pytest.mark.golden
def test_the_reproducer_dir_is_made_or_refused(tmp_path, monkeypatch):
    """--reproducer-dir: made if missing; a path through a file, or a directory not writable, is an error."""
    import os

    pipeline.check_reproducer_dir(str(tmp_path / "a" / "b"))
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "f").write_text("")
    with pytest.raises(PipelineError) as e:
        pipeline.check_reproducer_dir(str(tmp_path / "f" / "sub"))
    assert (e.value.file, e.value.message) == (str(tmp_path / "f" / "sub"),
                                               "cannot create the reproducer directory: Not a directory")
    asked = []
    monkeypatch.setattr(os, "access", lambda path, mode: asked.append(mode) or False)
    with pytest.raises(PipelineError) as e:
        pipeline.check_reproducer_dir(str(tmp_path))
    assert (e.value.file, e.value.message) == (str(tmp_path), "the reproducer directory is not writable")
    assert asked == [os.W_OK | os.X_OK]


def test_the_module_before_the_run_is_kept_as_bytecode():
    """The snapshot taken before a run is bytecode that reads back as the module's text with its locations."""
    module = _module(ERF.read_text())
    snapshot = pipeline._snapshot(module)
    assert isinstance(snapshot, bytes) and snapshot.startswith(b"ML\xefR")
    assert pipeline._snapshot_text(snapshot) == pipeline._module_asm(module)
    assert 'loc("' in pipeline._module_asm(module)


def test_a_run_reports_its_dumps_and_timing():
    """pipeline.run: the dumps asked for, in pass order, and MLIR's timing rows ending with the total."""
    module = _module(ERF.read_text())
    inst = pipeline.Instrumentation(print_ir_after=("cse",), print_ir_module_scope=True, timing=True)
    result = pipeline.run(module, pipeline.parse_spec("canonicalize,cse"), instrumentation=inst)
    assert [(d.when, d.pass_name, d.scope) for d in result.dumps] == [("after", "cse", "'builtin.module' operation")]
    assert result.dumps[0].text.startswith("module {")
    assert result.timing[-1].name == "Total" and result.timing[-1].percent == 100.0
    assert result.total_s > 0 and result.other_output == ""


@pytest.mark.parametrize("after", [{"print_ir_after_all": True}, {"print_ir_after_change": True},
                                   {"print_ir_after": ("canonicalize",)}])
def test_a_run_with_after_printing_and_after_failure_keeps_every_after_dump(after, tmp_path):
    """pipeline.run with after-printing and after-failure: the passes that ran print, then the failed one."""
    inst = pipeline.Instrumentation(print_ir_after_failure=True, print_ir_module_scope=True, **after)
    module = _module(ERF.read_text())
    ran = pipeline.run(module, pipeline.parse_spec("canonicalize,cse"), instrumentation=inst)
    assert [(d.when, d.pass_name) for d in ran.dumps] == \
        ([("after", "cse")] if "print_ir_after_change" in after else [("after", "canonicalize")] +
         ([("after", "cse")] if "print_ir_after_all" in after else []))
    module = _module((DATA / "chlo_special.mlir").read_text())
    with pytest.raises(pipeline.PassFailure) as e:
        pipeline.run(module, pipeline.parse_spec("canonicalize,stablehlo-legalize-to-vhlo"), instrumentation=inst,
                     reproducer_dir=str(tmp_path))
    assert [(d.when, d.pass_name) for d in e.value.run.dumps] == \
        [("after", "canonicalize"), ("after-failure", "stablehlo-legalize-to-vhlo")]
