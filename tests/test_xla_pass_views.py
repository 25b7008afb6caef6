"""Inside XLA's compile: Triton IR stages, XLA's per-pass timing and IR, and the pass
behind a wrong number (``run --bisect-passes``)."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import DATA, assert_one_line_error, filecheck, run_xla_tool

# A dot with a bias and a tanh: XLA's CUDA compiler makes it one Triton gemm fusion.
GEMM = """HloModule gemm_tanh

ENTRY main {
  x = f32[4,16] parameter(0)
  w = f32[16,32] parameter(1)
  b = f32[32] parameter(2)
  d = f32[4,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[4,32] broadcast(b), dimensions={1}
  a = f32[4,32] add(d, bb)
  ROOT t = f32[4,32] tanh(a)
}
"""

# No dot: no Triton fusion; algsimp makes the divide by 2 a multiply by 0.5 (the
# importer folds simpler rewrites, such as an add of zero, before XLA sees them).
PLAIN = """HloModule plain

ENTRY main {
  p = f32[4,8] parameter(0)
  two = f32[] constant(2)
  tb = f32[4,8] broadcast(two), dimensions={}
  s = f32[4,8] divide(p, tb)
  ROOT t = f32[4,8] tanh(s)
}
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pass_views")
    (d / "gemm.hlo").write_text(GEMM)
    (d / "plain.hlo").write_text(PLAIN)
    return d


# ------------------------------------------------------------------ the pass log

LOG = textwrap.dedent("""\
    I1201 18:20:26.192600   17649 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module m: outer pipe
    I1201 18:20:26.192601   17649 hlo_pass_pipeline.cc:211]   HLO pass first pass
    I1201 18:20:26.192602   17649 hlo_pass_pipeline.cc:269]   Pass caused changes first pass
    I1201 18:20:26.192603   17649 hlo_pass_pipeline.cc:206] HLO pass: first pass time: 1.23 ms (1230 us) (cumulative: 1.23 ms, max: 1.23 ms, #called: 1)
    I1201 18:20:26.192604   17649 hlo_pass_pipeline.cc:211]   HLO pass simplification
    I1201 18:20:26.192605   17649 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module m: simplification
    I1201 18:20:26.192606   99999 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module other: elsewhere
    I1201 18:20:26.192607   17649 hlo_pass_pipeline.cc:211]   HLO pass algsimp
    I1201 18:20:26.192608   99999 hlo_pass_pipeline.cc:211]   HLO pass dce
    I1201 18:20:26.192609   17649 hlo_pass_pipeline.cc:206] HLO pass: algsimp time: 7 us (7 us) (cumulative: 1 ms, max: 1 ms, #called: 2)
    W1201 18:20:26.192610   17649 some_other.cc:1] not a pass line
    I1201 18:20:26.192611   17649 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module m: simplification
    I1201 18:20:26.192612   17649 hlo_pass_pipeline.cc:211]   HLO pass algsimp
    I1201 18:20:26.192613   17649 hlo_pass_pipeline.cc:206] HLO pass: algsimp time: 5 us (5 us) (cumulative: 1 ms, max: 1 ms, #called: 3)
    I1201 18:20:26.192614   99999 hlo_pass_pipeline.cc:206] HLO pass: dce time: 40 us (40 us) (cumulative: 1 ms, max: 1 ms, #called: 4)
    I1201 18:20:26.192615   17649 hlo_pass_pipeline.cc:206] HLO pass: simplification time: 20 us (20 us) (cumulative: 1 ms, max: 1 ms, #called: 5)
    I1201 18:20:26.192616   17649 hlo_pass_pipeline.cc:211]   HLO pass last
    I1201 18:20:26.192617   17649 hlo_pass_pipeline.cc:199]   Skipping HLO pass (filtered by xla_disable_hlo_passes / xla_enable_hlo_passes_only): last
    I1201 18:20:26.192618   17649 hlo_pass_pipeline.cc:206] HLO pass: last time: 1 us (1 us) (cumulative: 1 ms, max: 1 ms, #called: 6)
    """)


def test_pass_log_parses_nesting_threads_fixed_points_and_skips():
    from mlirhlo_driver.xla import pass_log

    calls = pass_log.parse(LOG, changes_logged=True)
    got = [(c.module, c.pipeline, c.name, c.us, c.changed, c.is_pipeline, c.skipped) for c in calls]
    assert got == [
        ("m", "outer pipe", "first pass", 1230, True, False, False),
        ("m", "simplification", "algsimp", 7, False, False, False),
        # a fixed-point pipeline runs again: still the same nested pipeline
        ("m", "simplification", "algsimp", 5, False, False, False),
        # another thread keeps its own pipeline
        ("other", "elsewhere", "dce", 40, False, False, False),
        # the nested pipeline ends: its passes were done, the outer one goes on
        ("m", "outer pipe", "simplification", 20, False, True, False),
        ("m", "outer pipe", "last", 1, False, False, True),
    ]
    rows = pass_log.rows(calls)
    # longest first; pipelines and skipped passes are not rows of their own
    assert [(r.name, r.pipeline, r.calls, r.us, r.changed) for r in rows] == [
        ("first pass", "outer pipe", 1, 1230, True), ("dce", "elsewhere", 1, 40, False),
        ("algsimp", "simplification", 2, 12, False)]
    text = pass_log.format_table(calls, "cpu")
    assert text.splitlines()[0] == "// XLA HLO passes (cpu): 4 runs of 3 passes, 1.282 ms in passes"
    assert re.search(r"^\s+1\.230\s+95\.9%\s+1\s+yes\s+first pass \(outer pipe\)$", text, re.M), text
    assert re.search(r"^\s+0\.012\s+0\.9%\s+2\s+no\s+algsimp \(simplification\)$", text, re.M), text


@pytest.mark.parametrize("us", [None, 0])
def test_a_table_of_no_time_says_zero_ms_and_zero_percent(us):
    """No pass, or passes of 0 us (the log's resolution): the title says 0.000 ms, each row 0.0%."""
    from mlirhlo_driver.xla import pass_log

    table = [] if us is None else [pass_log.PassRow("dce", "p", 2, us, False)]
    lines = pass_log.format_rows(table, "cpu").splitlines()
    runs = "0 runs of 0 passes" if us is None else "2 runs of 1 passes"
    assert lines[0] == f"// XLA HLO passes (cpu): {runs}, 0.000 ms in passes"
    assert all("  0.0%  " in ln for ln in lines[2:]) and len(lines) == (2 if us is None else 3)


def test_changes_come_from_a_level_3_log_of_the_same_compile():
    from mlirhlo_driver.xla import pass_log

    timed = pass_log.parse(LOG.replace("Pass caused changes first pass", "unrelated"))
    assert {c.changed for c in timed} == {None}  # a level-1 log says nothing about changes
    assert "?" in pass_log.format_table(timed, "cpu")
    merged = pass_log.merge_changes(timed, pass_log.parse(LOG, changes_logged=True))
    assert [(c.name, c.changed) for c in merged if not c.is_pipeline][:2] == [("first pass", True),
                                                                              ("algsimp", False)]


def test_log_env_is_what_xla_reads():
    from mlirhlo_driver.xla import pass_log

    assert pass_log.log_env(1) == {"TF_CPP_VMODULE": "hlo_pass_pipeline=1", "TF_CPP_MIN_LOG_LEVEL": "0"}


def _env_var_at_start(name: str) -> str | None:
    return os.environ.get(name)


def test_isolate_env_runs_in_a_helper_started_with_it():
    from mlirhlo_driver._native import isolate

    env = {"MLIRHLO_TEST_ENV_AT_START": "yes"}
    assert isolate.call(_env_var_at_start, ("MLIRHLO_TEST_ENV_AT_START",), env=env) == "yes"
    first = isolate._helpers[tuple(env.items())].pid
    assert isolate.call(_env_var_at_start, ("MLIRHLO_TEST_ENV_AT_START",), env=env) == "yes"
    assert isolate._helpers[tuple(env.items())].pid == first  # kept for later calls
    assert isolate.call(_env_var_at_start, ("MLIRHLO_TEST_ENV_AT_START",)) is None  # the default helper


# ------------------------------------------------------------------ --timing and --print-ir-*

def test_timing_lists_xla_passes_with_time_and_change(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--timing", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule plain")  # the stage is still written
    lines = r.err.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("// XLA HLO passes (cpu): "))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("// compile phases: plain on cpu: "))
    rows = [ln for ln in lines[head + 2:end] if ln.strip()]
    times = [float(ln.split()[0]) for ln in rows]
    assert times == sorted(times, reverse=True) and times[0] > 0
    algsimp = [ln for ln in rows if re.search(r"\balgsimp \(simplification\)$", ln)]
    assert algsimp and re.match(r"^\s+\d+\.\d{3}\s+\d+\.\d%\s+\d+\s+yes\s+algsimp", algsimp[0]), rows
    assert any(re.search(r"\s+no\s+\S", ln) for ln in rows)  # passes that changed nothing are listed too


def test_timing_json_has_mlir_and_xla_tables(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--timing", "--timing-format", "json",
            "--passes", "canonicalize", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    doc, end = json.JSONDecoder().raw_decode(r.err)
    assert json.loads(r.err[end:])["module"] == "plain"  # then the compile's phases (test_compile_phases.py)
    assert doc["module"] == "plain"
    assert doc["mlir"] and {"pass", "wall_us", "percent", "depth"} <= set(doc["mlir"][0])
    # MLIR's own figures: whole microseconds, and the percentages it prints (one decimal)
    assert all(isinstance(r["wall_us"], int) and round(r["percent"], 1) == r["percent"] for r in doc["mlir"])
    assert doc["mlir"][-1]["pass"] == "Total" and doc["mlir"][-1]["percent"] == 100.0
    (xla,) = doc["xla"]
    assert xla["target"] == "cpu"
    passes = xla["passes"]
    assert [p["total_us"] for p in passes] == sorted((p["total_us"] for p in passes), reverse=True)
    assert {"pass": "algsimp", "pipeline": "simplification"}.items() <= next(
        p for p in passes if p["pass"] == "algsimp").items()
    assert sum(p["total_us"] for p in passes) == xla["total_us"]


def test_print_ir_after_change_shows_hlo_after_algsimp(cli, files, tmp_path):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-after-change", "--stage", "hlo",
            "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.err, textwrap.dedent("""\
        CHECK: // -----// HLO after algsimp (simplification) //----- //
        CHECK-NEXT: HloModule plain
        CHECK-NOT: divide(
        CHECK: multiply(
        CHECK: tanh(
        """), tmp_path)


def test_print_ir_before_and_after_a_named_pass(cli, files, tmp_path):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-before=algsimp",
            "--print-ir-after=algsimp", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.err, textwrap.dedent("""\
        CHECK: // -----// HLO before algsimp (simplification) //----- //
        CHECK: divide(
        CHECK: // -----// HLO after algsimp (simplification) //----- //
        CHECK-NOT: divide(
        CHECK: multiply(
        CHECK: tanh(
        """), tmp_path)
    # a run that changed nothing is printed too: every run of a named pass is
    assert r.err.count("HLO after algsimp") >= 2


def test_ir_dump_dir_gets_one_file_per_xla_pass(cli, files, tmp_path):
    out = tmp_path / "ir"
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-after-change", "--ir-dump-dir", out,
            "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert "HLO after" not in r.err
    dumps = sorted((out / "plain").iterdir())
    assert dumps and all(re.fullmatch(r"xla-\d{3}-after-[\w.-]+\.hlo", p.name) for p in dumps), dumps
    algsimp = next(p for p in dumps if p.name.endswith("-after-algsimp.hlo"))
    assert algsimp.read_text().startswith("// -----// HLO after algsimp (simplification) //----- //\nHloModule")


def test_an_xla_pass_that_did_not_run_is_one_error(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-after", "algsimpx", "--stage", "hlo",
            "--no-cache")
    line = assert_one_line_error(r, contains="XLA pass 'algsimpx' did not run on this module")
    assert line.startswith("error: --print-ir-after: ") and "did you mean 'algsimp'?" in line


def test_without_a_platform_print_ir_names_stay_mlirs(cli, files):
    r = cli("opt", files / "plain.hlo", "--print-ir-after", "algsimp")
    assert_one_line_error(r, contains="unknown pass 'algsimp'")


def test_mlir_names_in_the_pipeline_stay_mlirs_with_a_platform(cli, files):
    r = cli("opt", files / "plain.hlo", "--passes", "canonicalize", "--platform", "cpu",
            "--print-ir-after", "canonicalize", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert "IR Dump After" in r.err and "HLO after" not in r.err


def test_instrumentation_costs_nothing_unless_asked(monkeypatch, cli, files):
    from mlirhlo_driver.xla import backend

    def no(*a, **k):
        raise AssertionError("a logged compile without --timing")

    monkeypatch.setattr(backend, "compile_logged", no)
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert "XLA HLO passes" not in r.err


# ------------------------------------------------------------------ hlo-opt --passes

def _tool(name: str, argv: list[str], cwd: Path, capfd) -> tuple[int, str, str]:
    r = run_xla_tool(name, argv, cwd, capfd)
    return r.code, r.out, r.err


@pytest.mark.parametrize("line", [
    "--passes=schedule-aware-collective-cse --xla_gpu_experimental_collective_cse_distance_threshold=20",
    "--passes=reduce-window-rewriter,scatter_simplifier --xla_reduce_window_rewrite_base_length=128",
])
def test_doc_pass_lines_print_the_module_when_the_passes_changed_nothing(line, files, capfd):
    """XLA's tools page's command lines, on a module that gives the passes nothing to do:
    the pass log shows they ran, so the module is printed."""
    (files / "input.hlo").write_text(PLAIN)
    code, out, err = _tool("hlo-opt", [*line.split(), "input.hlo"], files, capfd)
    assert code == 0, err
    assert out.startswith("HloModule plain") and "tanh(" in out


def test_hlo_opt_pass_that_no_pipeline_runs_is_still_an_error(files, capfd):
    (files / "input.hlo").write_text(PLAIN)
    code, out, err = _tool("hlo-opt", ["--passes=algsimpx", "input.hlo"], files, capfd)
    assert code == 2 and out == ""
    assert "algsimpx did not run" in err and "algsimp" in err


def test_list_passes_comes_from_the_pipelines_own_log(files, capfd):
    code, out, err = _tool("hlo-opt", ["--list-passes", "--platform=CPU"], files, capfd)
    assert code == 0, err
    # passes that change nothing on the reference module are listed too, under their pipelines
    assert "\nsimplification:\n  algsimp\n" in out
    for name in ("cholesky_expander", "qr_expander", "copy-insertion", "layout-assignment"):
        assert f"\n  {name}\n" in out, name


# ------------------------------------------------------------------ Triton stages

@pytest.fixture(scope="module")
def triton_dump(files, tmp_path_factory) -> Path:
    from mlirhlo_driver.cli.mlirhlo import main

    out = tmp_path_factory.mktemp("triton")
    try:
        main(["opt", str(files / "gemm.hlo"), "--platform", "cuda", "--gpu-spec", "h100_sxm",
              "--stage", "triton,ttgir,triton-passes", "--dump-dir", str(out), "--no-cache"])
    except SystemExit as e:
        assert not e.code
    return out


def test_triton_stage_has_each_fusions_hlo_and_ttir(triton_dump, tmp_path):
    text = (triton_dump / "gemm.ttir").read_text()
    filecheck(text, textwrap.dedent("""\
        CHECK: // ----- [[FUSION:gemm_fusion[\\w.]*]] -----
        CHECK-NEXT: // HloModule [[FUSION]]
        CHECK: //   {{.*}} dot(
        CHECK: // ENTRY
        CHECK-NOT: // -----
        CHECK: tt.dot
        """), tmp_path)


def test_ttgir_stage_is_tritongpu_ir_before_llvm(triton_dump, tmp_path):
    text = (triton_dump / "gemm.ttgir").read_text()
    filecheck(text, textwrap.dedent("""\
        CHECK: // ----- gemm_fusion{{[\\w.]*}} -----
        CHECK: #ttg.
        CHECK: "tt.func"
        CHECK-NOT: IR Dump
        CHECK-NOT: llvm.func
        """), tmp_path)


def test_triton_passes_with_dump_dir_is_one_log_per_fusion(triton_dump):
    (log,) = triton_dump.glob("gemm.*.triton-passes.txt")
    assert re.fullmatch(r"gemm\.gemm_fusion[\w.]*\.triton-passes\.txt", log.name)
    text = log.read_text()
    passes = re.findall(r"^// -----// IR Dump Before (\w+)", text, re.M)
    assert len(passes) > 20 and "ConvertTritonGPUToLLVM" in passes


def test_triton_stages_of_a_module_without_triton_fusions_say_so(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "triton",
            "--no-cache")
    assert r.code == 0, r.err
    assert r.out == "// plain: no Triton fusions (XLA emitted every kernel of this module without Triton)\n"


def test_triton_stages_are_cuda_only(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--stage", "ttgir")
    assert_one_line_error(r, contains="stage 'ttgir' does not exist for --platform cpu")
    listing = cli("opt", "--list-stages", "--platform", "cuda").out
    for name in ("triton", "ttir", "ttgir", "triton-passes"):
        assert re.search(rf"^\s*{name}\b", listing, re.M), listing
    same = cli("opt", files / "gemm.hlo", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ttir",
               "--no-cache")
    assert same.code == 0 and "tt.dot" in same.out  # Triton's name for the stage


def test_only_stages_that_need_them_ask_xla_for_triton_dumps():
    from mlirhlo_driver import api
    from mlirhlo_driver.xla import stages as xla_stages

    program = api.load(str(DATA / "xla_tools" / "input.hlo"))
    compiled = program.compile(api.Target.cuda("h100_sxm"))
    compiled.stage("hlo")
    assert xla_stages.artifacts(compiled.request).emitters == ()
    # asked later: a compile of its own, once
    assert compiled.stage("triton").startswith("// ")
    assert "triton-fusion" in xla_stages.artifacts(compiled.request, ("triton-fusion",)).emitters


# ------------------------------------------------------------------ run --bisect-passes

# Two modules a known algsimp rewrite changes the numbers of. jaxlib 0.12's algsimp
# folds A - A to 0 only under fast math (inf - inf is NaN); older ones also assume
# abs(x) >= 0, which s8 abs(-128) breaks.
MINUS_ITSELF = """HloModule minus_itself

ENTRY main {
  x = f32[64] parameter(0)
  ax = f32[64] abs(x)
  c = f32[] constant(100)
  cb = f32[64] broadcast(c), dimensions={}
  y = f32[64] multiply(ax, cb)
  e = f32[64] exponential(y)
  ROOT d = f32[64] subtract(e, e)
}
"""
FAST_MATH = ["--xla_cpu_enable_fast_math=true", "--xla_cpu_fast_math_honor_infs=true",
             "--xla_cpu_fast_math_honor_nans=true"]
ABS_NONNEGATIVE = """HloModule abs_nonnegative

ENTRY main {
  p = s8[1024] parameter(0)
  k = s8[] constant(16)
  kb = s8[1024] broadcast(k), dimensions={}
  x = s8[1024] multiply(p, kb)
  a = s8[1024] abs(x)
  z = s8[] constant(0)
  zb = s8[1024] broadcast(z), dimensions={}
  ROOT c = pred[1024] compare(a, zb), direction=GE
}
"""


def test_bisect_passes_names_the_pass(cli, tmp_path):
    mismatched = 0
    for name, text, flags in (("minus_itself", MINUS_ITSELF, FAST_MATH), ("abs_nonnegative", ABS_NONNEGATIVE, [])):
        path = tmp_path / f"{name}.hlo"
        path.write_text(text)
        plain = cli("run", path, *flags)
        if plain.code == 0:
            continue  # this XLA does not make that rewrite
        mismatched += 1
        report = tmp_path / f"{name}.json"
        r = cli("run", path, *flags, "--bisect-passes", "--json", report)
        assert r.code == 1, r.err  # the mismatch is real
        assert re.search(r"^  bisect-passes: XLA pass 'algsimp' \(simplification[,)].*: disabled, the module "
                         r"matches its reference \(\d+ trials over \d+ passes\)$", r.out, re.M), r.out
        flag_line = next(ln for ln in r.out.splitlines() if ln.startswith("  matches with: "))
        assert flag_line.endswith(" --xla_disable_hlo_passes=algsimp")
        assert "// -----// HLO before algsimp (simplification) //----- //" in r.out
        assert "// -----// HLO after algsimp (simplification) //----- //" in r.out
        # the line it prints does make the module match
        argv = flag_line.removeprefix("  matches with: mlirhlo ").split()
        assert cli(*argv).code == 0
        row = json.loads(report.read_text())[0]["bisect_passes"]
        assert row["passes"] == ["algsimp"] and row["confirmed"] and row["flag"] == "--xla_disable_hlo_passes=algsimp"
    assert mismatched, "no module here mismatches on this XLA: the test would prove nothing"


def test_bisect_passes_on_a_difference_no_pass_explains(cli, tmp_path):
    from mlirhlo_driver.execute import pass_bisect

    b = pass_bisect.PassBisect([], 90, 1, note="disabling all 90 HLO passes that ran does not make it match")
    assert b.row()["flag"] is None and b.row()["passes"] == []


def test_bisect_passes_is_not_run_for_a_match(cli, tmp_path):
    path = tmp_path / "plain.hlo"
    path.write_text(PLAIN)
    r = cli("run", path, "--bisect-passes")
    assert r.code == 0 and "bisect-passes" not in r.out


@pytest.mark.skipif(sys.platform != "linux", reason="the isolate helper needs Linux")
def test_pass_bisect_keeps_the_users_disabled_passes():
    from mlirhlo_driver.execute import pass_bisect

    b = pass_bisect.PassBisect(["algsimp"], 10, 3, already_disabled=["cse"])
    assert b.flag == "--xla_disable_hlo_passes=cse,algsimp"
    flags = pass_bisect._with_disabled((("xla_disable_hlo_passes", "cse"),), ["algsimp"])
    assert dict(flags)["xla_disable_hlo_passes"] == "cse,algsimp"


def test_run_timing_gives_each_modules_xla_pass_table(cli, tmp_path):
    path = tmp_path / "plain.hlo"
    path.write_text(PLAIN)
    report = tmp_path / "r.json"
    r = cli("run", path, "--timing", "--json", report)
    assert r.code == 0, r.err
    assert re.search(r"^  // XLA HLO passes \(cpu\): \d+ runs of \d+ passes", r.out, re.M), r.out
    assert re.search(r"^\s+\d+\.\d{3}\s+\d+\.\d%\s+\d+\s+yes\s+algsimp \(simplification\)$", r.out, re.M), r.out
    (row,) = json.loads(report.read_text())
    assert any(p["pass"] == "algsimp" and p["changed"] for p in row["xla_passes"])
    plain = cli("run", path)
    assert "XLA HLO passes" not in plain.out


@pytest.mark.parametrize("stage, ext", [("triton", "ttir"), ("ttgir", "ttgir")])
def test_triton_stages_are_deterministic(stage, ext, triton_dump, files):
    """A second, independent compile gives the same bytes (the API's, here)."""
    from mlirhlo_driver import api

    again = api.load(str(files / "gemm.hlo")).compile(api.Target.cuda("h100_sxm"))
    assert again.stage(stage) == (triton_dump / f"gemm.{ext}").read_text()


def test_a_triton_log_compile_runs_here_and_leaves_later_compiles_as_they_were(files):
    """XLA's Triton log leaves stack traces switched on for Triton's diagnostics in its
    process (xla.backend.unsymbolized_llvm_traces): the log's compile runs in this process,
    with LLVM's symbolization off from then on (so the variable is never unset here), and
    compiles after it give what they gave before it; a second log is the first one again
    (nothing was left printing)."""
    from mlirhlo_driver import api

    program, target = api.load(str(files / "gemm.hlo")), api.Target.cuda("h100_sxm")
    before = program.compile(target).stage("ptx")
    first = program.compile(target).stage("triton-passes")
    assert "LLVM_DISABLE_SYMBOLIZATION" in os.environ
    assert program.compile(target).stage("ptx") == before
    assert program.compile(target).stage("triton-passes") == first


def test_the_pass_shown_is_the_first_run_that_changed_the_instructions(monkeypatch):
    """bisect-passes shows HLO around the first run of the culprit whose instructions changed:
    a run whose dumps differ only in the module's header line (XLA numbers it) is passed over,
    and a one-line dump is compared whole."""
    from types import SimpleNamespace

    from mlirhlo_driver.execute import pass_bisect
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla import backend

    texts = {
        "0": "HloModule m, id=1\nROOT a = f32[] add(x, y)\n",   # before the first run
        "1": "HloModule m, id=2\nROOT a = f32[] add(x, y)\n",   # after it: the header alone changed
        "2": "HloModule m, id=3\nROOT a = f32[] add(x, y)\n",   # before the second run
        "3": "HloModule m, id=4\nROOT a = f32[] add(y, x)\n",   # after it: the instructions changed
    }
    dumps = [backend.PassDump(0, "p", "cse", "algsimp", "0"), backend.PassDump(1, "p", "algsimp", "dce", "1"),
             backend.PassDump(2, "q", "cse", "algsimp", "2"), backend.PassDump(3, "q", "algsimp", "dce", "3")]
    art = SimpleNamespace(files={k: v.encode() for k, v in texts.items()})
    monkeypatch.setattr(backend, "compile_module", lambda *a, **k: art)
    monkeypatch.setattr(backend, "pass_dumps", lambda a: dumps)
    assert pass_bisect._around(None, "m", StageOptions(platform="cpu"), "algsimp") == (texts["2"], texts["3"], "q")
    assert pass_bisect._body("ROOT a = f32[] add(x, y)") == "ROOT a = f32[] add(x, y)"
    assert pass_bisect._body(texts["0"]) == pass_bisect._body(texts["1"]) != pass_bisect._body(texts["3"])


def test_instrumentation_shows_only_what_it_is_asked(files):
    """XlaInstrumentation's fields default to showing nothing: timing alone logs the passes and
    prints no IR (the API's xla_passes() and run's --timing ask for only that); after_change
    alone prints IR and logs no passes."""
    from mlirhlo_driver import api
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla import backend, instrument

    assert not instrument.XlaInstrumentation().wanted
    module = backend.module_for_xla(api.load(str(files / "plain.hlo")).module)
    options = StageOptions(platform="cpu")
    timed = instrument.compile(module, "plain", options, instrument.XlaInstrumentation(timing=True))
    assert timed.calls and timed.printed == []
    changed = instrument.compile(module, "plain", options, instrument.XlaInstrumentation(after_change=True))
    assert changed.calls is None
    assert "algsimp" in [p.pass_name for p in changed.printed]
    assert {p.when for p in changed.printed} == {"after"}


@pytest.mark.parametrize("when", ["before", "after"])
def test_print_ir_before_or_after_alone_prints_that_named_pass(when, cli, files):
    """--print-ir-before=PASS or --print-ir-after=PASS given alone prints that pass's HLO, only on that side."""
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", f"--print-ir-{when}=algsimp", "--stage", "hlo",
            "--no-cache")
    assert r.code == 0, r.err
    assert f"// -----// HLO {when} algsimp (simplification) //----- //" in r.err
    other = "after" if when == "before" else "before"
    assert f"HLO {other} " not in r.err


# ------------------------------------------------------------------ the pass log's edge cases

def _log(*lines: str) -> str:
    """XLA log lines (``thread|message``) as hlo_pass_pipeline.cc writes them on fd 2."""
    out = []
    for i, line in enumerate(lines):
        thread, msg = line.split("|", 1)
        out.append(f"I1201 18:20:26.{i:06d}   {thread} hlo_pass_pipeline.cc:211] {msg}")
    return "\n".join(out) + "\n"


def _calls(calls) -> list[tuple]:
    return [(c.module, c.pipeline, c.name, c.us, c.changed, c.is_pipeline, c.skipped, c.index) for c in calls]


def test_pass_log_ignores_timers_of_passes_it_did_not_see_start():
    """A timer line with no matching start (nothing open, or only other passes open) is no pass run;
    nor is a start line before any pipeline line on its thread."""
    from mlirhlo_driver.xla import pass_log

    text = _log(
        "1|HLO pass: orphan time: 3 us (3 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass early",
        "1|HLO pass: early time: 4 us (4 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|Running HLO pass pipeline on module m: p",
        "1|HLO pass: orphan time: 3 us (3 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass a",
        "1|HLO pass: orphan time: 3 us (3 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|HLO pass: a time: 9 us (9 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass b",
        "1|HLO pass: b time: 2 us (2 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
    )
    assert _calls(pass_log.parse(text)) == [("m", "p", "a", 9, None, False, False, 0),
                                            ("m", "p", "b", 2, None, False, False, 1)]


def test_pass_log_ends_the_passes_left_open_inside_one_that_ends():
    """A pass whose timer comes while passes started after it are still open ends them with it:
    they are not runs, and their late timers are ignored; a "caused changes" line marks the
    innermost open pass of that name."""
    from mlirhlo_driver.xla import pass_log

    text = _log(
        "1|Running HLO pass pipeline on module m: p",
        "1|  HLO pass outer",
        "1|  HLO pass inner",
        "1|  HLO pass deeper",
        "1|  Pass caused changes inner",
        "1|  Pass caused changes nobody",
        "1|HLO pass: outer time: 30 us (30 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|HLO pass: inner time: 20 us (20 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass x",
        "1|  HLO pass x",
        "1|  Pass caused changes x",
        "1|HLO pass: x time: 5 us (5 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|HLO pass: x time: 6 us (6 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass y",
        "1|  HLO pass z",
        "1|HLO pass: y time: 8 us (8 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|HLO pass: z time: 9 us (9 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
    )
    assert _calls(pass_log.parse(text, changes_logged=True)) == [
        ("m", "p", "outer", 30, False, False, False, 0),
        ("m", "p", "x", 5, True, False, False, 1),
        ("m", "p", "x", 6, False, False, False, 2),
        ("m", "p", "y", 8, False, False, False, 3)]
    assert _calls(pass_log.parse(text)) == [
        ("m", "p", "outer", 30, None, False, False, 0),
        ("m", "p", "x", 5, True, False, False, 1),
        ("m", "p", "x", 6, None, False, False, 2),
        ("m", "p", "y", 8, None, False, False, 3)]


def test_pass_log_nested_pipelines_two_deep_and_a_new_top_level_pipeline():
    """Pipelines nested two deep give each pass its innermost pipeline, and each ends back in
    its outer one; a top-level pipeline line on the thread ends whatever was open there."""
    from mlirhlo_driver.xla import pass_log

    text = _log(
        "7|Running HLO pass pipeline on module m: top",
        "7|  HLO pass mid",
        "7|Running HLO pass pipeline on module m: mid",
        "7|  HLO pass low",
        "7|Running HLO pass pipeline on module m: low",
        "7|  HLO pass leaf",
        "7|  Skipping HLO pass (filtered by xla_disable_hlo_passes): leaf",
        "7|HLO pass: leaf time: 1 us (1 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|HLO pass: low time: 2 us (2 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|  HLO pass after_low",
        "7|HLO pass: after_low time: 3 us (3 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|HLO pass: mid time: 4 us (4 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|  HLO pass in_top",
        "7|HLO pass: in_top time: 7 us (7 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|  HLO pass after_mid",
        "7|Running HLO pass pipeline on module n: next",
        "7|HLO pass: after_mid time: 5 us (5 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|  HLO pass first",
        "7|HLO pass: first time: 6 us (6 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
    )
    calls = pass_log.parse(text)
    assert _calls(calls) == [
        ("m", "low", "leaf", 1, None, False, True, 0),
        ("m", "mid", "low", 2, None, True, False, 1),
        ("m", "mid", "after_low", 3, None, False, False, 2),
        ("m", "top", "mid", 4, None, True, False, 3),
        ("m", "top", "in_top", 7, None, False, False, 4),
        ("n", "next", "first", 6, None, False, False, 5)]
    assert pass_log.ran(calls) == {"low", "after_low", "mid", "in_top", "first"}  # the skipped pass did not run
    assert pass_log.ran([]) == set()


def test_pass_log_levels_are_one_for_times_and_three_for_changes():
    """Times come from a level-1 log, changes from a level-3 one (the module's docstring)."""
    from mlirhlo_driver.xla import pass_log

    assert (pass_log.TIMES_LEVEL, pass_log.CHANGES_LEVEL) == (1, 3)
    assert pass_log.log_env(pass_log.CHANGES_LEVEL)["TF_CPP_VMODULE"] == "hlo_pass_pipeline=3"


def test_merge_changes_marks_every_run_of_a_pass_that_changed_once():
    """A (pipeline, pass) that changed in any run of the level-3 log is changed in every timed run;
    one that the level-3 log never ran keeps None."""
    from mlirhlo_driver.xla.pass_log import PassCall, merge_changes

    def call(pipeline, name, changed, i):
        return PassCall("m", pipeline, name, 10 + i, changed, False, False, i)

    timed = [call("p", "a", None, 0), call("p", "a", None, 1), call("q", "a", None, 2), call("p", "b", None, 3)]
    changes = [call("p", "a", False, 0), call("p", "a", True, 1), call("q", "a", False, 2)]
    assert [(c.pipeline, c.name, c.us, c.changed, c.index) for c in merge_changes(timed, changes)] == [
        ("p", "a", 10, True, 0), ("p", "a", 11, True, 1), ("q", "a", 12, False, 2), ("p", "b", 13, None, 3)]


def test_pass_table_text_and_json_exactly():
    """The text table's exact layout (widths, percent, yes/no/?) and the JSON form of the same rows."""
    from mlirhlo_driver.xla.pass_log import PassCall, PassRow, as_json, format_rows

    table = [PassRow("algsimp", "simplification", 2, 1500, True), PassRow("dce", "p", 1, 500, None),
             PassRow("cse", "p", 1, 0, False)]
    assert format_rows(table, "cuda (h100_sxm)") == (
        "// XLA HLO passes (cuda (h100_sxm)): 4 runs of 3 passes, 2.000 ms in passes\n"
        "  total ms       %  calls  changed  pass (pipeline)\n"
        "     1.500   75.0%      2  yes      algsimp (simplification)\n"
        "     0.500   25.0%      1  ?        dce (p)\n"
        "     0.000    0.0%      1  no       cse (p)\n")
    calls = [PassCall("m", "p", "dce", 5, False, False, False, 0),
             PassCall("m", "p", "inner", 50, True, True, False, 1),
             PassCall("m", "p", "cse", 7, True, False, False, 2),
             PassCall("m", "p", "dce", 6, True, False, False, 3),
             PassCall("m", "p", "gone", 9, False, False, True, 4)]
    assert as_json(calls, "cpu") == {"target": "cpu", "total_us": 18, "passes": [
        {"pass": "dce", "pipeline": "p", "calls": 2, "total_us": 11, "changed": True},
        {"pass": "cse", "pipeline": "p", "calls": 1, "total_us": 7, "changed": True}]}


# ------------------------------------------------------------------ instrument.compile, over a fake XLA

def _fake_xla(monkeypatch, dumps=None, timed=(), changes=(), logged=()):
    """backend's compiles replaced by ones that record how they were called. Each gives
    per-pass dumps (name -> text: ``after.before``) only when asked for them by a dump regex;
    compile_logged gives ``timed`` at level 1 and ``changes`` at level 3, and ``logged`` at
    level 1 with only HLO text dumps (the compile that names what ran)."""
    from types import SimpleNamespace

    from mlirhlo_driver.xla import backend

    seen = []
    dumps = dumps if dumps is not None else {}

    def art(kind, options, level, dumps_asked):
        rx = dict(options.xla_flags).get("xla_dump_hlo_pass_re")
        seen.append((kind, level, rx, dumps_asked))
        pass_calls = None
        if level == 1:
            pass_calls = list(logged if dumps_asked == (backend.HLO_TEXT,) else timed)
        elif level == 3:
            pass_calls = list(changes)
        files = {f"dump{i}:{k}": v for i, (k, v) in enumerate(dumps.items())} if rx else {}
        return SimpleNamespace(files=files, pass_calls=pass_calls, rx=rx, kind=kind, phases=None, compile_span=None)

    def pass_dumps(a):
        out = []
        for key in a.files:
            i, name = key.split(":")
            after, before = name.split(".")
            out.append(backend.PassDump(int(i[4:]), "pipe", after, before, key))
        return out

    monkeypatch.setattr(backend, "compile_logged",
                        lambda module, name, options, level, *, keep_going=False, dumps=backend.ALL_DUMPS:
                        art("logged", options, level, dumps))
    monkeypatch.setattr(backend, "compile_module",
                        lambda module, name, options, *, dumps=backend.ALL_DUMPS, **kw:
                        art("module", options, None, dumps))
    monkeypatch.setattr(backend, "pass_dumps", pass_dumps)
    return seen


# dumps "after X, before Y" in pipeline order; byte 0xff is no UTF-8
_DUMPS = {"pipeline-start.algsimp": b"HloModule a\n", "algsimp.dce": b"HloModule b\xff\n",
          "dce.pipeline-end": b"HloModule c\n"}


def _inst_call(inst, dumps=None):
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla import instrument

    options = StageOptions(platform="cpu", xla_flags=(("xla_zz", True), ("xla_dump_hlo_pass_re", "old")))
    return instrument.compile("MODULE", "m", options, inst, dumps)


def _printed(out) -> list[tuple[str, str, str, str]]:
    return [(p.when, p.pass_name, p.pipeline, p.text) for p in out.printed]


AFTER_CHANGE = [("after", "algsimp", "pipe", "HloModule b\ufffd\n"), ("after", "dce", "pipe", "HloModule c\n")]
NAMED = [("before", "dce", "pipe", "HloModule b\ufffd\n"), ("after", "algsimp", "pipe", "HloModule b\ufffd\n")]
NAMES_RE = "^(?:algsimp|dce)$"


def test_instrument_compile_without_timing_dumps_on_the_stages_compile(monkeypatch):
    """No timing: the stages' compile carries the first dump regex (.* for after-change, the
    names' otherwise), one more HLO-text compile the other; no pass log, no logged compile."""
    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.instrument import XlaInstrumentation

    seen = _fake_xla(monkeypatch, _DUMPS)
    out = _inst_call(XlaInstrumentation(after_change=True, before=("dce",), after=("algsimp",)), ("hlo",))
    assert seen == [("module", None, ".*", ("hlo",)), ("module", None, NAMES_RE, (backend.HLO_TEXT,))]
    assert out.art.kind == "module" and out.art.rx == ".*" and out.calls is None
    assert _printed(out) == AFTER_CHANGE + NAMED

    seen.clear()
    out = _inst_call(XlaInstrumentation(before=("dce",), after=("algsimp", "dce", "algsimp")))
    assert seen == [("module", None, NAMES_RE, backend.ALL_DUMPS)]
    assert _printed(out) == NAMED + [("after", "dce", "pipe", "HloModule c\n")]

    seen.clear()
    out = _inst_call(XlaInstrumentation(after_change=True))
    assert seen == [("module", None, ".*", backend.ALL_DUMPS)] and _printed(out) == AFTER_CHANGE

    seen.clear()
    out = _inst_call(XlaInstrumentation())
    assert seen == [("module", None, "old", backend.ALL_DUMPS)]  # the user's own flags, untouched
    assert out.printed == [] and out.calls is None


def test_instrument_compile_with_timing_dumps_on_the_level_3_compile(monkeypatch):
    """Timing: the stages come from a level-1 compile (its times), the first dump regex rides on
    the level-3 one (its changes, merged into the times), any other on an HLO-text compile."""
    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.instrument import XlaInstrumentation
    from mlirhlo_driver.xla.pass_log import PassCall

    timed = [PassCall("m", "pipe", "algsimp", 7, None, False, False, 0),
             PassCall("m", "pipe", "dce", 3, None, False, False, 1)]
    changes = [PassCall("m", "pipe", "algsimp", 70, True, False, False, 0),
               PassCall("m", "pipe", "dce", 30, False, False, False, 1)]
    seen = _fake_xla(monkeypatch, _DUMPS, timed, changes)
    out = _inst_call(XlaInstrumentation(timing=True, after_change=True, before=("dce",), after=("algsimp",)))
    assert seen == [("logged", 1, "old", backend.ALL_DUMPS), ("logged", 3, ".*", (backend.HLO_TEXT,)),
                    ("module", None, NAMES_RE, (backend.HLO_TEXT,))]
    assert out.art.kind == "logged" and out.art.rx == "old"
    assert [(c.name, c.us, c.changed) for c in out.calls] == [("algsimp", 7, True), ("dce", 3, False)]
    assert _printed(out) == AFTER_CHANGE + NAMED

    seen.clear()
    out = _inst_call(XlaInstrumentation(timing=True, after=("algsimp",)), ("hlo",))
    assert seen == [("logged", 1, "old", ("hlo",)), ("logged", 3, "^(?:algsimp)$", (backend.HLO_TEXT,))]
    assert _printed(out) == [NAMED[1]]

    seen.clear()
    out = _inst_call(XlaInstrumentation(timing=True))
    assert seen == [("logged", 1, "old", backend.ALL_DUMPS), ("logged", 3, "old", (backend.HLO_TEXT,))]
    assert out.printed == [] and [c.changed for c in out.calls] == [True, False]


def test_instrument_named_pass_that_printed_nothing_is_an_error_naming_what_ran(monkeypatch):
    """A named pass with no print on its side is an error on its flag; the hint names close passes
    that ran: from the timing compile's log, else from one level-1 compile made for it."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.instrument import XlaInstrumentation
    from mlirhlo_driver.xla.pass_log import PassCall

    logged = [PassCall("m", "pipe", "algsimpy", 1, None, False, False, 0)]
    timed = [PassCall("m", "pipe", "algsimpz", 1, None, False, False, 0)]
    # the compile stopped inside dce: no dump after it
    partial = {k: v for k, v in _DUMPS.items() if k != "dce.pipeline-end"}
    seen = _fake_xla(monkeypatch, partial, timed=timed, logged=logged)
    cases = [
        (XlaInstrumentation(after=("algsimp", "algsimpx")), "--print-ir-after", "algsimpx",
         "did you mean 'algsimpy'?"),
        (XlaInstrumentation(before=("algsimpx",), after=("algsimp",)), "--print-ir-before", "algsimpx",
         "did you mean 'algsimpy'?"),
        # printed before dce, never after it; after the pipeline's start, never before it
        (XlaInstrumentation(before=("dce",), after=("dce",)), "--print-ir-after", "dce",
         "see --list-passes --platform"),
        (XlaInstrumentation(before=("pipeline-start",), after=("pipeline-start",)), "--print-ir-before",
         "pipeline-start", "see --list-passes --platform"),
        (XlaInstrumentation(timing=True, after=("algsimpx",)), "--print-ir-after", "algsimpx",
         "did you mean 'algsimpz'?"),
    ]
    for inst, flag, name, hint in cases:
        seen.clear()
        with pytest.raises(DriverError) as e:
            _inst_call(inst)
        assert (e.value.message, e.value.file, e.value.hint) == (
            f"XLA pass '{name}' did not run on this module", flag, hint), inst
        if not inst.timing:  # the compile that names what ran: level 1, HLO text only, no dump regex
            assert seen[-1] == ("logged", 1, "old", (backend.HLO_TEXT,)), inst
        else:
            assert [s[:2] for s in seen] == [("logged", 1), ("logged", 3)], inst
    seen.clear()
    out = _inst_call(XlaInstrumentation(before=("algsimp", "dce"), after=("algsimp", "pipeline-start")))
    assert len(out.printed) == 4 and [s[0] for s in seen] == ["module"]  # all printed: no logged compile


def test_instrumentation_values_and_printed_headers():
    """Any one flag makes an instrumentation wanted; a printed module's header names its side,
    pass and pipeline like MLIR's IR dumps; the dump regex matches exactly the names given."""
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla import instrument
    from mlirhlo_driver.xla.instrument import PrintedIR, XlaInstrumentation

    assert [XlaInstrumentation(**kw).wanted for kw in (
        {}, {"timing": True}, {"after_change": True}, {"before": ("a",)}, {"after": ("a",)},
        {"timing_format": "json"})] == [False, True, True, True, True, False]
    assert PrintedIR("before", "algsimp", "simplification", "x").header() == \
        "// -----// HLO before algsimp (simplification) //----- //"
    assert instrument._names_re(("b.c", "a", "b.c")) == r"^(?:a|b\.c)$"
    options = StageOptions(platform="cpu", xla_flags=(("xla_zz", 1), ("xla_aa", 2)))
    assert instrument._with_dump_re(options, None) is options
    assert instrument._with_dump_re(options, ".*").xla_flags == (
        ("xla_aa", 2), ("xla_dump_hlo_pass_re", ".*"), ("xla_zz", 1))


def test_printed_hlo_on_stderr_ends_each_module_with_one_newline(monkeypatch, cli, files):
    """HLO printed around XLA's passes goes to stderr one module after another: a module whose
    text lacks its final newline gets one, one that has it gets no second."""
    from mlirhlo_driver.xla import instrument
    from mlirhlo_driver.xla.backend import XlaArtifacts

    def printed(*a, **k):  # the stage below is MLIR's: XLA's artifacts are never read
        return instrument.Instrumented(XlaArtifacts("cpu", "plain", {}), None, [
            instrument.PrintedIR("after", "algsimp", "simplification", "HloModule one"),
            instrument.PrintedIR("after", "dce", "p", "HloModule two\n")])

    monkeypatch.setattr(instrument, "compile", printed)
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-after-change", "--stage", "stablehlo",
            "--no-cache")
    assert r.code == 0, r.err
    assert r.out.startswith("module @plain")
    assert r.err == ("// -----// HLO after algsimp (simplification) //----- //\nHloModule one\n"
                     "// -----// HLO after dce (p) //----- //\nHloModule two\n")
