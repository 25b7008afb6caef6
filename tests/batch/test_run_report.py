"""batch/run_report.py: run's tasks and its report: per-module blocks, the summary table,
saved outputs, the reproducer line and the pass bisect's lines.
"""

from __future__ import annotations

import numpy as np
import pytest

from mlirhlo_driver.execute import engine, run
from mlirhlo_driver.inputs import loader as inputs


def _module(tmp_path, text, name="m.mlir"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _full_report():
    """A mismatching report with every part print_run_reports shows."""
    from mlirhlo_driver.xla.pass_log import PassRow

    mm = engine.compare(np.float32([2.0, 2.5]), np.float32([2.0, 2.0]), 1, 0.0, 0.25)
    value = engine.compare(np.float32([1, 3]), np.float32([0, 2]), 0, 0.0, 0.0)
    value.label = "value"
    return run.ModuleReport(
        "m", "dir/m.mlir", "mismatch", "output 1: 1/2 differ", max_abs_error=0.5, max_abs_error_at="output 1 [1]", compile_ms=12.34, run_ms=0.5678,
        reference_ms=3.21, mismatches=[mm], checks=[engine.CheckResult("expect_eq", True, "m.mlir:3:5", ""),
                                                    engine.CheckResult("expect_close", False, "m.mlir:4:5", "off by 1")],
        bisect=run.BisectResult("%1 = stablehlo.add %a, %b", "m.mlir:2:3", ["tensor<2xf32>", "tensor<2xf32>"], value),
        xla_passes=[PassRow("algsimp", "simp", 2, 1500, True)], inputs_note="zeros",
        checked_values_detail="compiled by XLA",
        kept_constants=[{"location": "m.mlir:1:1", "type": "tensor<2xf32>", "reasons": ["too big", "used twice"]}],
        inputs=[np.array([1 / 3, 2.0], np.float32)], outputs=[np.array([3, 4], np.int32)],
        reference_outputs=[np.array([3, 5], np.int32)])


@pytest.mark.parametrize("options, tail", [
    (dict(), ""),
    (dict(seed=5), " --seed 5"),
    (dict(zeros=True, seed=5), " --zeros"),
    (dict(inputs_npz="in puts.npz", seed=5), " --inputs 'in puts.npz'"),
    (dict(rtol=0.5, atol=0.0), " --rtol 0.5 --atol 0.0"),
    (dict(large_float_range=True, fold_constants=True), " --large-float-range --fold-constants"),
])
def test_the_reproducer_line_gives_every_option_that_shaped_the_run(options, tail):
    """The command line that runs the module again the same way: its inputs (zeros, a file, or
    a seed other than 0), tolerances given, the input range, folding; quoted for a shell."""
    from types import SimpleNamespace

    from mlirhlo_driver.batch.run_report import reproducer

    opts = run.RunOptions(platform="cpu", reference="interpreter", **options)
    line = reproducer(SimpleNamespace(source="dir/m.mlir"), opts, ["--xla_cpu_enable_fast_math=true"])
    assert line == ("mlirhlo run dir/m.mlir --platform cpu --reference interpreter" + tail
                    + " --xla_cpu_enable_fast_math=true")


def test_the_pass_bisect_report_lines():
    """--bisect-passes' lines: the passes found (confirmed or not), the command that matches,
    the HLO around the first changing run, or why there is none; or why nothing was found."""
    from types import SimpleNamespace

    from mlirhlo_driver.batch.run_report import _pass_bisect_lines
    from mlirhlo_driver.execute.pass_bisect import PassBisect

    opts = run.RunOptions(platform="cpu", reference="interpreter")

    def lines(b):
        return _pass_bisect_lines(SimpleNamespace(source="m.mlir", pass_bisect=b), opts, [])

    for trials, word in ((1, "trial"), (4, "trials")):
        assert lines(PassBisect([], 9, trials, note="no pass explains it")) == \
            [f"  bisect-passes: no pass explains it ({trials} {word})"]
    found = PassBisect(["algsimp"], 30, 7, {"algsimp": ["simplification", "fusion"]}, True,
                       "HloModule a\n", "HloModule b\n", "simplification")
    assert lines(found) == [
        "  bisect-passes: XLA pass 'algsimp' (simplification, fusion): disabled, the module matches its "
        "reference (7 trials over 30 passes)",
        "  matches with: mlirhlo run m.mlir --platform cpu --reference interpreter --xla_disable_hlo_passes=algsimp",
        "  // -----// HLO before algsimp (simplification) //----- //", "  HloModule a",
        "  // -----// HLO after algsimp (simplification) //----- //", "  HloModule b"]
    two = PassBisect(["a", "b"], 30, 9, {"a": ["p"]}, already_disabled=["mine", "a"])
    assert two.flag == "--xla_disable_hlo_passes=mine,a,b"  # the user's own kept, none twice
    assert lines(two)[0] == ("  bisect-passes: XLA passes 'a' (p), 'b' (?): disabled, the module matches its "
                             "reference (not confirmed alone) (9 trials over 30 passes)")
    assert lines(two)[-1] == "  (XLA dumped no run of a that changed the module)"


def test_summary_table_prints_module_names_as_written(capsys):
    """The summary of several modules names each as its file does: '[..]' and ':ok:' in a
    name are not rich markup or emoji codes."""
    from mlirhlo_driver.batch.run_report import print_summary_table

    reports = [run.ModuleReport("m[1]", "m[1].hlo", "ok", compile_ms=1.0, run_ms=0.5),
               run.ModuleReport("a:ok:[/b]", "a.mlir", "mismatch", max_abs_error=0.25)]
    print_summary_table(reports)
    out = capsys.readouterr().out
    assert "1/2 modules passed" in out
    assert "│ m[1]      │ ok       │" in out and "│ a:ok:[/b] │ mismatch │          0.25 │" in out


def test_print_run_reports_gives_every_part_of_a_report_in_order(capsys):
    """A report's lines: status and message, inputs, kept constants, checked values, timing (the
    median of N iterations, the reference's), checks, mismatches, bisect (the first 3 lines of its
    value's mismatch), XLA passes, literals (6 digits), the reproducer; one module: no summary table."""
    from mlirhlo_driver.batch.run_report import print_run_reports

    opts = run.RunOptions(platform="cpu", reference="cpu", iterations=5, seed=2)
    print_run_reports([_full_report()], opts, True, ["--x"])
    assert capsys.readouterr().out.splitlines() == [
        "m: MISMATCH: output 1: 1/2 differ",
        "  inputs: zeros",
        "  kept constant: m.mlir:1:1 tensor<2xf32> (too big; used twice)",
        "  checked values: compiled by XLA",
        "  compile 12.3 ms, run 0.568 ms (median of 5), reference (cpu) 3.2 ms",
        "  PASS expect_eq at m.mlir:3:5",
        "  FAIL expect_close at m.mlir:4:5: off by 1",
        "  output 1 (float32[2]): 1 of 2 elements differ (tolerance 0.25 + 0*|expected|)",
        "    max abs error 0.5 at [1]: got 2.5, expected 2.0 (rel error 0.25, 2097152 ULP apart)",
        "  bisect: first divergence at m.mlir:2:3: %1 = stablehlo.add %a, %b",
        "    operands: tensor<2xf32>, tensor<2xf32>",
        "    value (float32[2]): 2 of 2 elements differ (tolerance 0 + 0*|expected|)",
        "      max abs error 1 at [0]: got 1.0, expected 0.0 (rel error inf)",
        "      at [1]: got 3.0, expected 2.0",
        "  // XLA HLO passes (cpu): 2 runs of 1 passes, 1.500 ms in passes",
        "    total ms       %  calls  changed  pass (pipeline)",
        "       1.500  100.0%      2  yes      algsimp (simp)",
        "  input 0 (float32[2]): [0.333333, 2.      ]",
        "  output 0 (int32[2]): [3, 4]",
        "  reference 0: [3, 5]",
        "  reproduce: mlirhlo run dir/m.mlir --platform cpu --reference cpu --seed 2 --x",
    ]


def test_print_run_reports_leaves_out_what_a_report_lacks(capsys):
    """A passing report without timing, literals kept or a reproducer is its status line alone;
    one iteration has no median note, no reference time no reference part; a front-end's own
    reproducer is kept; literals only when asked, over 200 elements summarized."""
    from mlirhlo_driver.batch.run_report import print_run_reports

    opts = run.RunOptions(platform="cpu", reference="none")
    print_run_reports([run.ModuleReport("a", "a.mlir", "ok")], opts, True, [])
    assert capsys.readouterr().out == "a: OK\n"
    timed = run.ModuleReport("t", "t.mlir", "ran", compile_ms=1.0, run_ms=2.0, outputs=[np.array([1], np.int8)])
    print_run_reports([timed], opts, False, [])
    assert capsys.readouterr().out == "t: RAN\n  compile 1.0 ms, run 2.000 ms\n"
    print_run_reports([timed], run.RunOptions(iterations=2), False, [])
    assert capsys.readouterr().out == "t: RAN\n  compile 1.0 ms, run 2.000 ms (median of 2)\n"
    bisect = run.BisectResult("op", "l", [], engine.Mismatch(0, "int8", (), 0, 1, label="value"))
    own = run.ModuleReport("f", "f.mlir", "failed", "boom", reproducer="my command", bisect=bisect,
                           outputs=[np.arange(201, dtype=np.int32)])
    print_run_reports([own], opts, True, [])
    assert capsys.readouterr().out == ("f: FAILED: boom\n  bisect: first divergence at l: op\n"
                                       "    value (int8[]): 0 of 1 elements differ\n"
                                       "  output 0 (int32[201]): [  0,   1,   2, ..., 198, 199, 200]\n"
                                       "  reproduce: my command\n")
    assert own.reproducer == "my command"
    bad = run.ModuleReport("b", "b.mlir", "crashed")
    print_run_reports([bad], opts, False, [])
    assert bad.reproducer == "mlirhlo run b.mlir --platform cpu --reference none"


def test_print_run_reports_adds_the_summary_table_for_several_modules(capsys):
    """Several modules: each report, then a table with passed count, max abs error (3 significant
    digits, as the mismatch lines give it), compile ms (1 decimal) and run ms (3 decimals), blanks
    where unknown."""
    from mlirhlo_driver.batch.run_report import print_run_reports

    reports = [run.ModuleReport("one", "one.mlir", "ok", max_abs_error=1.23456e-5, compile_ms=10.06, run_ms=0.12345),
               run.ModuleReport("two", "two.mlir", "failed", "bad")]
    print_run_reports(reports, run.RunOptions(), False, [])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[:4] == ["one: OK", "  compile 10.1 ms, run 0.123 ms", "two: FAILED: bad",
                         "  reproduce: mlirhlo run two.mlir --platform cpu --reference interpreter"]
    assert "1/2 modules passed" in lines[4]
    row = next(ln for ln in lines if "one" in ln and "│" in ln).split("│")
    assert [c.strip() for c in row[1:-1]] == ["one", "ok", "1.23e-05", "10.1", "0.123"]
    row = next(ln for ln in lines if "two" in ln and "│" in ln).split("│")
    assert [c.strip() for c in row[1:-1]] == ["two", "failed", "", "", ""]
    assert max(len(ln) for ln in lines[4:]) <= 100


def test_the_summary_table_and_the_mismatch_lines_print_one_max_abs_error(capsys):
    """A module's figure in the table is its outputs' max abs error as the mismatch lines print
    it, where the largest error is within tolerance (a large value) and a smaller one is not."""
    from mlirhlo_driver.batch.run_report import print_run_reports

    reports = [run.ModuleReport("a", "a.mlir"), run.ModuleReport("b", "b.mlir")]
    reports[0].judge(engine.compare_outputs([np.float32([200.0172, 5.4e-4 + 1.16e-5])], [np.float32([200.0, 5.4e-4])],
                                            1e-4, 1e-5))
    reports[1].judge(engine.compare_outputs([np.ones(2)], [np.ones(2)], None, None))
    print_run_reports(reports, run.RunOptions(), False, [])
    lines = capsys.readouterr().out.splitlines()
    detail = next(ln for ln in lines if ln.startswith("    max abs error "))
    assert detail.startswith("    max abs error 0.0172 at [0]: ") and detail.endswith("(within tolerance)")
    assert any(ln.startswith("    worst differing at [1]: ") for ln in lines)
    assert [c.strip() for c in next(ln for ln in lines if ln.startswith("│ a ")).split("│")][3] == "0.0172"
    assert [c.strip() for c in next(ln for ln in lines if ln.startswith("│ b ")).split("│")][3] == "0"
    assert engine.format_error(reports[0].row()["max_abs_error"]) == "0.0172"


def test_summary_table_widens_for_long_module_names(capsys):
    """The table is at least 100 columns wide for its console, and wide enough for the longest name
    plus 60: a long name is never cut or wrapped."""
    from mlirhlo_driver.batch.run_report import print_summary_table

    name = "x" * 90
    print_summary_table([run.ModuleReport(name, "a", "ok", max_abs_error=0.5, compile_ms=1.0, run_ms=2.0),
                         run.ModuleReport("b", "b", "ok")])
    out = capsys.readouterr().out
    assert "2/2 modules passed" in out
    assert any(f"│ {name} │ ok     │           0.5 │        1.0 │  2.000 │" == ln for ln in out.splitlines()), out


def test_save_outputs_of_one_module_and_of_several(tmp_path):
    """save_outputs: one module's arrays as outI; several modules' as NAME/outI; a module without
    outputs adds none."""
    from mlirhlo_driver.batch.run_report import save_outputs

    one = tmp_path / "one.npz"
    save_outputs(str(one), [run.ModuleReport("a", "a", outputs=[np.array([1, 2]), np.array([3.0])])])
    saved = np.load(one)
    assert sorted(saved.keys()) == ["out0", "out1"] and saved["out1"].tolist() == [3.0]
    both = tmp_path / "both.npz"
    save_outputs(str(both), [run.ModuleReport("a", "a", outputs=[np.array([1])]), run.ModuleReport("b", "b")])
    assert list(np.load(both).keys()) == ["a/out0"]


def test_reproducer_leaves_out_seed_0_and_prefers_zeros_then_inputs(tmp_path):
    """The reproducer's inputs: --zeros over --inputs over --seed (the default seed 0 unsaid);
    tolerances only when given, 0 included."""
    from types import SimpleNamespace

    from mlirhlo_driver.batch.run_report import reproducer

    r = SimpleNamespace(source="m.mlir")
    base = "mlirhlo run m.mlir --platform cpu --reference interpreter"
    assert reproducer(r, run.RunOptions(seed=0), []) == base
    assert reproducer(r, run.RunOptions(seed=1), []) == base + " --seed 1"
    assert reproducer(r, run.RunOptions(zeros=True, inputs_npz="i.npz"), []) == base + " --zeros"
    assert reproducer(r, run.RunOptions(inputs_npz="i.npz", seed=3), []) == base + " --inputs i.npz"
    assert reproducer(r, run.RunOptions(rtol=0.0), ["a b"]) == base + " --rtol 0.0 'a b'"
    assert reproducer(r, run.RunOptions(atol=0.0), []) == base + " --atol 0.0"


def test_run_tasks_number_each_module_of_each_input(tmp_path):
    """One task per module, numbered in order, carrying the format, split flag, its chunk and the
    argument specs; a split file gives one task per chunk."""
    from mlirhlo_driver.batch.run_report import run_tasks

    hlo = "HloModule m\n\nENTRY main {\n  ROOT c = f32[] constant(1)\n}\n"
    a = _module(tmp_path, hlo, "a.hlo")
    b = _module(tmp_path, hlo + "\n// -----\n\n" + hlo, "b.hlo")
    tasks = run_tasks([str(a), str(b)], "hlo", True, "f32[2]")
    assert [(t.index, t.source, t.name, t.chunk) for t in tasks] == [
        (0, str(a), "a", 0), (1, str(b), "b.0", 0), (2, str(b), "b.1", 1)]
    assert {(t.input_format, t.split_input_file, t.arg_specs, t.data) for t in tasks} == {("hlo", True, "f32[2]", None)}


def test_execute_isolated_runs_each_instruction_as_its_own_module(monkeypatch):
    """--isolate_instructions: each instruction of each task a module of its own, named after it
    (FILE:instruction with several files); a file that cannot load is invalid, an instruction that
    cannot load or run alone (invalid) is failed; messages without 'error: '."""
    from types import SimpleNamespace

    from mlirhlo_driver.batch.run_report import execute_isolated
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.ir import decompose

    def load(source, input_format=None, data=None):
        if source in ("bad.hlo", "f:broken", "broken"):
            raise DriverError("cannot load", file=source)
        return [SimpleNamespace(hlo_proto=(source, data), module=source)]

    def isolate(proto):
        return [("add", b"p-add"), ("broken", b"p-broken"), ("tok", b"p-tok")]

    def run_module(module, label, source, options):
        return run.ModuleReport(label, source, "invalid" if label.endswith("tok") else "ok", module)

    def unit_programs(source, options, data=None):
        return load(source, options.input_format, data)

    from mlirhlo_driver.core import program

    monkeypatch.setattr(inputs, "load", load)
    monkeypatch.setattr(program, "unit_programs", unit_programs)
    monkeypatch.setattr(decompose, "isolate_instructions", isolate)
    monkeypatch.setattr(run, "run_module", run_module)

    def task(source, name):
        return SimpleNamespace(source=source, name=name, input_format="hlo", data=None)

    one = execute_isolated([task("f.hlo", "f")], run.RunOptions())
    assert [(r.name, r.source, r.status, r.message) for r in one] == [
        ("add", "f.hlo", "ok", "add"), ("broken", "f.hlo", "failed", "broken: cannot load"),
        ("tok", "f.hlo", "failed", "tok")]
    two = execute_isolated([task("f.hlo", "f"), task("bad.hlo", "bad")], run.RunOptions())
    assert [(r.name, r.status, r.message) for r in two] == [
        ("f:add", "ok", "f:add"), ("f:broken", "failed", "f:broken: cannot load"), ("f:tok", "failed", "f:tok"),
        ("bad", "invalid", "bad.hlo: cannot load")]


def test_the_pass_bisect_lines_show_hlo_only_with_both_dumps():
    """The HLO around the culprit is shown only when both its before and after dumps are there;
    with one missing, the line saying XLA dumped no changing run stands for them."""
    from types import SimpleNamespace

    from mlirhlo_driver.batch.run_report import _pass_bisect_lines
    from mlirhlo_driver.execute.pass_bisect import PassBisect

    opts = run.RunOptions(platform="cpu", reference="interpreter")
    for before, after in (("HloModule a\n", None), (None, "HloModule b\n")):
        b = PassBisect(["cse"], 3, 2, {"cse": ["p"]}, True, before, after, "p")
        assert _pass_bisect_lines(SimpleNamespace(source="m.mlir", pass_bisect=b), opts, [])[2:] == [
            "  (XLA dumped no run of cse that changed the module)"]
