"""Textual pass pipelines: syntax, --passes nesting, named pipelines, debugging flags."""

from __future__ import annotations

import re
import sys

import pytest
from conftest import DATA, filecheck

from mlirhlo_driver.errors import PipelineError
from mlirhlo_driver.mlir import pipeline
from mlirhlo_driver.mlir.passes import all_passes

MLP_DUMP = DATA / "mlp_train_step.before_optimizations.txt"
ERF = DATA / "erf_inv.mlir"  # one function: one dump per pass


@pytest.fixture(scope="module")
def catalog():
    return all_passes()


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


# ------------------------------------------------------- debugging flags

def _dump_headers(err: str) -> list[str]:
    return re.findall(r"^// -----// IR Dump (\w+) (\S+) \((\S+)\) //----- //$", err, re.M)


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


BREAKER = """
import mlirhlo_driver
from jaxlib.mlir import ir

@mlirhlo_driver.register_pass("break-signature", anchor="func.func")
def break_signature(func_op):
    with func_op.context:
        func_op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([], []))
"""


def test_verify_each_catches_a_pass_that_breaks_the_ir(cli, tmp_path):
    plugin = tmp_path / "breaker.py"
    plugin.write_text(BREAKER)
    args = ("opt", DATA / "erf_inv.mlir", "--load-pass-plugin", plugin, "--passes", "break-signature,cse",
            "--reproducer-dir", tmp_path)
    checked = cli(*args, "--verify-each")
    assert checked.code == 1 and checked.out == ""
    assert "pass 'break-signature' failed: 'func.func' op entry block must have 0 arguments" \
        in checked.err.splitlines()[0]
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
    assert "pass 'stablehlo-legalize-to-vhlo' failed" in first
    assert "Traceback" not in result.err
    m = re.search(r"^note: reproducer written to (\S+)$", result.err, re.M)
    assert m
    repro = m.group(1)
    assert repro.startswith(str(tmp_path))
    cmd = re.search(r"^note: reproduce with: mlirhlo (.+)$", result.err, re.M).group(1)
    import shlex

    again = cli(*shlex.split(cmd))
    assert again.code == 1 and "pass 'stablehlo-legalize-to-vhlo' failed" in again.err


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
    assert "pass 'stablehlo-legalize-to-vhlo' failed" in result.err


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
    catalogue = list((tmp_path / "cache" / "mlirhlo-driver").glob("passes-*.json"))
    assert catalogue == []  # no full scan happened
    bad = subprocess.run(cmd + ["--passes", "canonicalise"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "did you mean 'canonicalize'" in bad.stderr
    assert list((tmp_path / "cache" / "mlirhlo-driver").glob("passes-*.json"))  # scanned once, kept


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


def test_pass_failure_lines_name_what_is_known_of_the_place():
    from mlirhlo_driver.mlir import pipeline

    assert pipeline._format_diag("error", (3, 5), "boom\n", "m.mlir") == "error: m.mlir:3:5: boom"
    assert pipeline._format_diag("error", (None, None), "boom", "m.mlir") == "error: m.mlir: boom"
    assert pipeline._format_diag("note", (None, None), "a\nb\nc", None) == "note: a ... (2 more lines)"


@pytest.mark.parametrize("col_base", [0, 7])
@pytest.mark.parametrize("spec, col, message", [
    ("builtin.module(cse,,canonicalize)", 20, "expected a pass name or an op name, found ','"),
    ("builtin.module(cse", 19, "unbalanced parentheses: expected ')' to close 'builtin.module(' from column {}"),
    ("cse)", 4, "unexpected ')'"),
    ("builtin.module(cse{a=1)", 19, "unbalanced braces in the options of 'cse'"),
])
def test_a_malformed_spec_is_placed_at_its_column(spec, col, message, col_base):
    """Columns count from 1, shifted by where the spec starts on its line (a pipeline file's)."""
    from mlirhlo_driver.errors import PipelineError
    from mlirhlo_driver.mlir import pipeline

    with pytest.raises(PipelineError) as e:
        pipeline.parse_spec(spec, col_base=col_base)
    assert (e.value.line, e.value.col, e.value.message) == (1, col + col_base, message.format(1 + col_base))


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
def test_a_failed_pass_scan_says_its_last_line(monkeypatch, stderr, said):
    """The child that lists jaxlib's passes failing: one error with its last stderr line, as text."""
    import sys

    from mlirhlo_driver._native import processes
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.mlir import passes

    code = f"import sys; sys.stderr.write({stderr!r}); sys.exit(3)"
    monkeypatch.setattr(processes, "python_command", lambda module, *args: [sys.executable, "-c", code])
    with pytest.raises(DriverError) as e:
        passes._scan_in_subprocess()
    assert e.value.message == f"could not list jaxlib's passes: {said}"


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
