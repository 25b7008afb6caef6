"""Where a compile's time goes (xla/compile_phases.py): XLA's phase timers parsed from captured
logs (golden tables, jaxlib 0.9.0 and 0.12.0.1, CUDA and CPU), the phase model's rules on small
made-up logs, the driver's own rows, and a real device-less compile whose rows add up."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlirhlo_driver.xla import compile_phases as cp
from mlirhlo_driver.xla import pass_log
from tests.conftest import DATA

LOGS = sorted((DATA / "compile_phases").glob("*.log"))


@pytest.fixture
def utc(monkeypatch):
    """The captured logs' absl timestamps are local times of a UTC machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _captured(path: Path) -> tuple[dict, str]:
    head, log = path.read_text().split("\n", 1)
    return json.loads(head.removeprefix("# ")), log


def _rows(path: Path) -> tuple[dict, list[cp.PhaseRow]]:
    head, log = _captured(path)
    events = cp.parse_events(log, head["span"][0])
    return head, cp.xla_rows(events, tuple(head["span"]), pass_log.parse(log), head["names"])


# ------------------------------------------------------------------ the model, on small logs

def _line(t: float, thread: int, source: str, message: str) -> str:
    """An absl line logged at ``t`` seconds past 12:00:00 on Dec 4 (local time)."""
    whole, frac = divmod(t, 1)
    return f"I1204 12:{int(whole) // 60:02d}:{int(whole) % 60:02d}.{round(frac * 1e6):06d} {thread:>8} {source}:1] {message}"


def _timer(end: float, us: int, thread: int, label: str, source: str = "gpu_compiler.cc") -> str:
    return _line(end, thread, source, f"{label} time: {us / 1000:.3g} ms ({us} us) (cumulative: 1 ms, max: 1 ms, "
                                      "#called: 1)")


def _noon() -> float:
    return time.mktime((time.localtime().tm_year, 12, 4, 12, 0, 0, 0, 0, -1))


# ------------------------------------------------------------------ a real compile

GEMM = """HloModule gemm_tanh

ENTRY main {
  x = f32[4,16] parameter(0)
  w = f32[16,32] parameter(1)
  d = f32[4,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[4,32] tanh(d)
}
"""


def _json_objects(text: str) -> list[dict]:
    decoder, out, at = json.JSONDecoder(), [], 0
    while (start := text.find("\n{", at - 1 if at else 0)) >= 0 or text.startswith("{", at):
        start = at if text.startswith("{", at) else start + 1
        obj, at = decoder.raw_decode(text, start)
        out.append(obj)
    return out


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_captured_compiles_give_their_golden_tables(path, utc):
    """The MLP step's compile as jaxlib 0.9.0 and 0.12.0.1 logged it (device-less H100 and CPU):
    the table is the golden one, and its top rows add up to the compile's wall time."""
    head, rows = _rows(path)
    assert cp.format_table(rows, path.stem) == path.with_suffix(".table.txt").read_text()
    c0, c1 = head["span"]
    assert sum(r.wall_us for r in rows if r.depth == 0) == pytest.approx((c1 - c0) * 1e6, abs=len(rows))


def test_jaxlib_012_on_cuda_names_its_biggest_rows(utc):
    """jaxlib 0.12: config-assigner compiles each Triton GEMM fusion (autotuning, by fusion);
    each kernel's Triton compile, LLVM and ptxas run on codegen threads, named by the PTX
    file their thread dumped."""
    _, rows = _rows(DATA / "compile_phases" / "mlp_cuda_jaxlib-0.12.0.1.log")
    top = {r.phase: r for r in rows if r.depth == 0}
    assert list(top) == ["hlo-passes", "autotuning", "buffer-assignment", "codegen", "backend", "xla-other"]
    tuned = [r.name for r in rows if r.phase == "autotuning" and r.depth == 2]
    assert sorted(tuned) == ["gemm_fusion_dot", "gemm_fusion_dot.1", "gemm_fusion_dot.5", "gemm_fusion_dot.6",
                             "gemm_fusion_dot.7"]
    triton = [r.name for r in rows if r.phase == "triton" and r.depth == 2]
    assert sorted(triton) == ["gemm_fusion_dot", "gemm_fusion_dot_1", "gemm_fusion_dot_5", "gemm_fusion_dot_6",
                              "gemm_fusion_dot_7"]
    kinds = {r.phase: r for r in rows if r.depth == 1}
    assert kinds["llvm"].count == kinds["ptxas"].count == 12 and kinds["emitter"].count == 7
    # Codegen threads run at once: their time adds up past the phase's wall time.
    assert top["codegen"].busy_us > top["codegen"].wall_us


def test_jaxlib_09_compiles_its_one_llvm_module_after_emission(utc):
    """jaxlib 0.9: one LLVM module and one ptxas run, on the compiling thread after IR
    emission: rows of their own, named by the kernels of the one PTX file."""
    _, rows = _rows(DATA / "compile_phases" / "mlp_cuda_jaxlib-0.9.0.log")
    assert [r.phase for r in rows if r.depth == 0] == ["hlo-passes", "buffer-assignment", "codegen", "llvm", "ptxas",
                                                       "xla-other"]
    assert [(r.phase, r.name) for r in rows if r.phase in ("llvm", "ptxas") and r.depth == 1] == [
        ("llvm", "fusion_19 (+12)"), ("ptxas", "fusion_19 (+12)")]


def test_each_instant_goes_to_the_innermost_phase_and_an_autotuning_pass_takes_all_its_time():
    """Passes inside the pipelines' timer are HLO passes; a pass inside which another module
    was compiled is autotuning, all of it (its compile's LLVM too); buffer assignment runs
    from the last pass to XLA's line; what no timer covers is xla-other."""
    noon = _noon()
    log = "\n".join([
        _line(0.0, 7, "hlo_pass_pipeline.cc", "Running HLO pass pipeline on module m: opt"),
        _line(0.0, 7, "hlo_pass_pipeline.cc", "  HLO pass algsimp"),
        _timer(1.0, 1_000_000, 7, "HLO pass: algsimp", "hlo_pass_pipeline.cc"),
        _line(1.0, 7, "hlo_pass_pipeline.cc", "  HLO pass tuner"),
        _timer(2.5, 500_000, 7, "Compile module f_llvm", "nvptx_backend.cc"),
        _timer(3.0, 1_500_000, 7, "GpuCompiler::RunBackend - IR emission for f", "compile_module_to_llvm_ir.cc"),
        _timer(4.0, 3_000_000, 7, "HLO pass: tuner", "hlo_pass_pipeline.cc"),
        _timer(4.0, 4_000_000, 7, "GpuCompiler::RunHloPasses for m"),
        _line(4.5, 7, "compile_module_to_llvm_ir.cc", "Buffer Assignment Stats for m"),
        _line(4.6, 7, "other.cc", "something else time: 9 ms (9000 us)"),
        _timer(6.0, 1_000_000, 8, "CubinCustomKernelCompiler::CompileTritonToLlvmImpl for m",
               "cubin_custom_kernel_compiler.cc"),
        _timer(6.5, 500_000, 8, "Compile module LLVMDialectModule", "nvptx_backend.cc"),
        _line(6.5, 8, "dump.cc", "Dumping module_0001.m.1.ptx to /tmp/x"),
        _timer(7.0, 500_000, 8, "NVPTXCompiler::CompileTargetBinary - PtxToCubin for m", "nvptx_compiler.cc"),
        _timer(7.0, 2_500_000, 7, "GpuCompiler::RunBackend - IR emission for m", "compile_module_to_llvm_ir.cc"),
        _timer(7.5, 3_500_000, 7, "GpuCompiler::RunBackend for m"),
    ])
    events = cp.parse_events(log, noon)
    assert [e.label for e in events if e.us is None] == ["Buffer Assignment Stats for m", "Dumping module_0001.m.1.ptx to /tmp/x"]
    calls = pass_log.parse(log)
    rows = cp.xla_rows(events, (noon - 0.5, noon + 8.0), calls, {"1.ptx": "gemm_fusion_kernel"})
    top = [(r.phase, r.wall_us) for r in rows if r.depth == 0]
    assert top == [("hlo-passes", 1_000_000), ("autotuning", 3_000_000), ("buffer-assignment", 500_000),
                   ("codegen", 2_500_000), ("backend", 500_000), ("xla-other", 1_000_000)]
    assert sum(w for _, w in top) == 8_500_000
    parts = [(r.phase, r.name, r.busy_us, r.depth) for r in rows if r.depth]
    assert ("autotuning", "tuner", 3_000_000, 1) in parts and ("autotuning", "f", 1_500_000, 2) in parts
    assert ("pipeline", "opt", 1_000_000, 1) in parts  # the tuner's time is autotuning's, not its pipeline's
    assert [p for p in parts if p[0] in ("triton", "llvm", "ptxas") and p[3] == 2] == [
        ("triton", "gemm_fusion_kernel", 1_000_000, 2), ("llvm", "gemm_fusion_kernel", 500_000, 2),
        ("ptxas", "gemm_fusion_kernel", 500_000, 2)]


def test_a_kernels_lowering_on_one_thread_joins_its_llvm_and_ptxas_on_another():
    """XLA may lower a fusion on one codegen thread and compile its LLVM module on another: the
    lowering goes with the first unclaimed LLVM run to start after it, and both are named
    after the PTX that LLVM run's thread dumped; an LLVM module with no PTX dumped and no name
    of its own is numbered."""
    noon = _noon()
    log = "\n".join([
        _timer(1.0, 500_000, 7, "GpuCompiler::RunHloPasses for m"),
        _timer(2.0, 400_000, 8, "CubinCustomKernelCompiler::CompileTritonToLlvmImpl for m",
               "cubin_custom_kernel_compiler.cc"),
        _timer(2.05, 300_000, 8, "CubinCustomKernelCompiler::CompileMlirToLlvmImpl for m",
               "cubin_custom_kernel_compiler.cc"),
        _timer(2.6, 500_000, 9, "Compile module LLVMDialectModule", "nvptx_backend.cc"),
        _line(2.6, 9, "dump.cc", "Dumping module_0002.m.3.ptx to /tmp/x"),
        _timer(3.0, 300_000, 9, "NVPTXCompiler::CompileTargetBinary - PtxToCubin for m", "nvptx_compiler.cc"),
        _timer(2.95, 800_000, 8, "Compile module LLVMDialectModule", "nvptx_backend.cc"),
        _timer(3.2, 200_000, 8, "NVPTXCompiler::CompileTargetBinary - PtxToCubin for m", "nvptx_compiler.cc"),
        _timer(3.5, 2_500_000, 7, "GpuCompiler::RunBackend - IR emission for m", "compile_module_to_llvm_ir.cc"),
    ])
    rows = cp.xla_rows(cp.parse_events(log, noon), (noon, noon + 4.0), (), {"3.ptx": "triton_kernel"})
    parts = {(r.phase, r.name, r.busy_us) for r in rows if r.depth == 2}
    assert parts == {("triton", "triton_kernel", 400_000), ("llvm", "triton_kernel", 500_000),
                     ("ptxas", "triton_kernel", 300_000), ("emitter", "LLVM module 2", 300_000),
                     ("llvm", "LLVM module 2", 800_000), ("ptxas", "LLVM module 2", 200_000)}


def test_a_log_without_known_timers_is_one_row_of_xla():
    """An XLA that logged none of the known timers: the whole compile, unsplit."""
    rows = cp.xla_rows(cp.parse_events("plain text\nI1204 12:00:00.000000 1 x.cc:1] hello\n", _noon()),
                       (10.0, 12.5))
    assert rows == [cp.PhaseRow("xla-other", "", 2_500_000, 2_500_000)]


def test_log_times_get_the_year_of_the_compile_across_new_year():
    """absl stamps lines without a year: a line of Dec 31 read by a compile that started on
    Jan 1 is from the year before."""
    new_year = time.mktime((2031, 1, 1, 0, 0, 1, 0, 0, -1))
    (e,) = cp.parse_events("I1231 23:59:59.500000 1 gpu_compiler.cc:1] GpuCompiler::RunHloPasses for m "
                           "time: 1 ms (1000 us)", new_year)
    assert e.end == pytest.approx(new_year - 1.5) and e.start == pytest.approx(new_year - 1.501)
    assert (e.thread, e.us, e.label, e.source) == (1, 1000, "GpuCompiler::RunHloPasses for m", "gpu_compiler.cc")


def test_top_rows_keep_five_and_sum_the_rest():
    rows = cp._top("llvm", [(f"k{i}", i) for i in range(8)], depth=2)
    assert [(r.name, r.busy_us, r.count) for r in rows] == [
        ("k7", 7, 1), ("k6", 6, 1), ("k5", 5, 1), ("k4", 4, 1), ("k3", 3, 1), ("(3 more)", 3, 3)]


def test_ptx_kernels_name_a_file_by_its_entries():
    files = {"1.ptx": b".visible .entry b_kernel(\n.visible .entry a_kernel(\n", "ptx": b".entry one(\n",
             "0.ir-no-opt.ll": b"", "3.ptx": b"// no kernel\n"}
    assert cp.ptx_kernels(files) == {"1.ptx": "a_kernel (+1)", "ptx": "one"}


# ------------------------------------------------------------------ the driver's own rows

def test_driver_rows_fill_the_time_around_the_compiles():
    """Marks end the driver's steps; before the first compile the module is prepared for XLA,
    between and after compiles stages are produced, after the last mark outputs are written;
    the top rows add up to the clock's whole span."""
    row = cp.PhaseRow("hlo-passes", "m", 2_000_000, 2_000_000)
    part = cp.PhaseRow("pipeline", "opt", 0, 1_000_000, 3, 1)
    clock = cp.Clock(100.0, [("driver:start-up", 100.5), ("driver:load", 101.0), ("driver:stages", 112.0)],
                     [cp.TimedCompile("cuda (a)", (101.5, 105.0), (102.0, 104.0), (row, part), (105.0, 106.0)),
                      cp.TimedCompile("cuda (b)", (107.0, 110.0), (107.5, 109.5), (row,), None)])
    rows = cp.report_rows(clock, 113.0)
    assert [(r.phase, r.name, r.wall_us) for r in rows if r.depth == 0] == [
        ("driver:start-up", "", 500_000), ("driver:load", "", 500_000), ("driver:prepare", "", 500_000),
        ("driver:helper", "cuda (a)", 1_500_000), ("hlo-passes", "cuda (a): m", 2_000_000),
        ("driver:changes", "cuda (a)", 1_000_000), ("driver:stages", "", 1_000_000),
        ("driver:helper", "cuda (b)", 1_000_000), ("hlo-passes", "cuda (b): m", 2_000_000),
        ("driver:stages", "", 2_000_000), ("driver:write", "", 1_000_000)]
    assert sum(r.wall_us for r in rows if r.depth == 0) == 13_000_000
    assert ("pipeline", "opt", 1) in [(r.phase, r.name, r.depth) for r in rows]


def test_the_first_clock_of_a_process_starts_with_it(monkeypatch):
    monkeypatch.setattr(cp, "_begun", False)
    monkeypatch.setattr(cp, "process_start", lambda: 50.0)
    first = cp.Clock.begin()
    assert first.start == 50.0 and [m[0] for m in first.marks] == ["driver:start-up"]
    later = cp.Clock.begin()
    assert later.start > 50.0 and later.marks == []


def test_process_start_is_before_now():
    started = cp.process_start()
    assert started is not None and started <= time.time()


def test_report_prints_a_table_or_one_json_object_per_module():
    clock = cp.Clock(100.0, [("driver:load", 101.0)], [])
    results = [type("R", (), {"name": "m", "phases": clock})(), type("R", (), {"name": "n", "phases": None})()]
    text = cp.report(results, "text", end=102.0)
    assert text.splitlines()[0] == "// compile phases: m: 2000.0 ms wall"
    obj = json.loads(cp.report(results, "json", end=102.0))
    assert obj["module"] == "m" and obj["phases"]["total_us"] == 2_000_000
    assert [p["phase"] for p in obj["phases"]["phases"]] == ["driver:load", "driver:write"]


@pytest.mark.slow
def test_timing_of_a_device_less_compile_adds_up_to_the_commands_wall_time(tmp_path):
    """opt --timing on CUDA: after the pass table, one phase table per module; its top rows add
    up to its total, which is the command's wall time give or take its exit (10%); the Triton
    fusion is named where it was compiled (its own Triton compile on jaxlib 0.12, the LLVM
    module holding it on 0.9)."""
    path = tmp_path / "gemm.hlo"
    path.write_text(GEMM)
    cmd = [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", str(path), "--platform", "cuda",
           "--gpu-spec", "h100_sxm", "--stage", "ptx", "--timing", "--timing-format", "json", "--no-cache"]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    wall = time.time() - started
    assert proc.returncode == 0, proc.stderr
    timing, phases = _json_objects(proc.stderr)
    assert set(timing) == {"module", "xla"} and phases["module"] == "gemm"
    table = phases["phases"]
    assert table["title"] == "gemm on cuda (h100_sxm)"
    top = [r for r in table["phases"] if r["depth"] == 0]
    assert sum(r["wall_us"] for r in top) == table["total_us"]
    assert table["total_us"] / 1e6 == pytest.approx(wall, rel=0.1)
    assert [r["phase"] for r in top][:2] == ["driver:start-up", "driver:load"]
    assert {"hlo-passes", "codegen", "driver:helper", "driver:changes", "driver:write"} <= {r["phase"] for r in top}
    # jaxlib 0.12 times the Triton fusion's compile by itself; 0.9 within its one LLVM module
    assert any(r["phase"] in ("triton", "llvm") and re.match(r"gemm_fusion\w*", r["name"]) for r in table["phases"])
    assert ".entry" in proc.stdout


def test_compiled_compile_phases_are_one_timed_compile_kept(monkeypatch):
    """Compiled.compile_phases(): XLA's rows of one timed compile in a helper, kept for later calls."""
    import mlirhlo_driver as mh
    from mlirhlo_driver.xla import backend

    calls = []
    real = backend.compile
    monkeypatch.setattr(backend, "compile",
                        lambda module, spec, name, **kw: calls.append(spec.pass_log) or real(module, spec, name, **kw))
    compiled = mh.load(str(DATA / "mlp_train_step.before_optimizations.txt")).compile(mh.Target.cpu())
    rows = compiled.compile_phases()
    assert compiled.compile_phases() == rows and calls == [pass_log.TIMES_LEVEL]
    assert all(isinstance(r, cp.PhaseRow) for r in rows)
    assert [r.phase for r in rows if r.depth == 0][:2] == ["hlo-passes", "codegen"]
    assert any(r.phase == "llvm" and r.depth == 2 for r in rows)
