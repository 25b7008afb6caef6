"""Guards found by scripts/mutation.py: promises of the library API that no
other test pinned (each test names the regression it would catch).

Fakes stand in only where the real thing is a clock or a slow scan: the unit
conversions of the benchmarks are checked against a fake clock / fake MLIR
timing rows, and the pass-list cache against a fake scan.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import mlirhlo_driver
from mlirhlo_driver.errors import FlagError
from mlirhlo_driver.inputs import checks
from mlirhlo_driver.inputs import loader as inputs


@pytest.fixture(scope="module")
def add_file(add_mlir_file) -> Path:
    return add_mlir_file


# ------------------------------------------------------------------ api.compile

def test_compile_rejects_an_unknown_xla_flag_before_compiling(add_file):
    # The check runs in compile() itself, not later inside XLA at the first stage.
    # From Python, the flag is named as the xla_flags key it was given as.
    with pytest.raises(FlagError, match=r"unknown XLA flag 'xla_cpu_no_such_flag'"):
        mlirhlo_driver.compile(str(add_file), xla_flags={"xla_cpu_no_such_flag": True})


def test_user_kernel_cache_file_is_kept(add_file, tmp_path):
    # The driver points XLA's kernel cache at its work directory only when the user
    # gave none; a user's --xla_gpu_kernel_cache_file must be where XLA writes.
    target = tmp_path / "kernels.bin"
    c = mlirhlo_driver.compile(str(add_file), platform="cuda",
                               xla_flags={"xla_gpu_kernel_cache_file": str(target)})
    assert ".entry" in c.stage("ptx")
    assert target.is_file() and target.stat().st_size > 0


# ------------------------------------------------------------------ checks

def test_expect_eq_on_complex_compares_the_imaginary_part():
    src = """\
func.func @main() {
  %c = stablehlo.constant dense<[(1.5, 2.0), (3.0, -1.0)]> : tensor<2xcomplex<f32>>
  %n = stablehlo.negate %c : tensor<2xcomplex<f32>>
  check.expect_eq_const %n, dense<[(-1.5, -2.0), (-3.0, 1.0)]> : tensor<2xcomplex<f32>>
  check.expect_eq_const %n, dense<[(-1.5, -2.0), (-3.0, 1.5)]> : tensor<2xcomplex<f32>>
  func.return
}
"""
    module = inputs.parse_mlir(checks.preprocess_check_ops(src, "c.mlir"), "c.mlir")
    plan = checks.prepare(module, source="c.mlir")
    from mlirhlo_driver.execute import engine

    results = engine.evaluate_checks(plan, engine.run_plan(plan, [])[0])
    # Same real parts, one imaginary part differs: only the second check fails.
    assert [r.passed for r in results] == [True, False]


# ------------------------------------------------------------------ bench

def test_pipeline_bench_reports_milliseconds(monkeypatch):
    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.ir import emit
    from mlirhlo_driver.mlir import pipeline

    rows = [SimpleNamespace(name="canonicalize", depth=1, wall_s=0.002),
            SimpleNamespace(name="cse", depth=1, wall_s=0.0005),
            SimpleNamespace(name="Total", depth=0, wall_s=0.003)]
    monkeypatch.setattr(pipeline, "run", lambda *a, **k: SimpleNamespace(timing=rows, total_s=0.004))
    monkeypatch.setattr(emit, "clone", lambda m: m)
    [res] = bench.bench_pipelines(object(), [SimpleNamespace(render=lambda: "p")], repeats=2, warmup=0)
    d = res.to_dict()
    assert d["total_median_ms"] == pytest.approx(3.0)
    assert [(p["pass"], p["median_ms"], p["runs"]) for p in d["passes"]] == \
        [("canonicalize", pytest.approx(2.0), 2), ("cse", pytest.approx(0.5), 2)]


def test_xla_pipeline_bench_reports_milliseconds(monkeypatch):
    import time

    from mlirhlo_driver import timing
    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.stages import base as stages
    from mlirhlo_driver.xla import backend as xla_backend

    clock = iter(np.arange(100.0, 200.0, 0.25))  # every perf_counter() call: +250 ms
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(clock)))
    monkeypatch.setattr(timing, "perf_counter", time.perf_counter)  # the one clock, read there too
    dumps = [SimpleNamespace(key=k, pipeline="simplification", after=a)
             for k, a in (("a", "start"), ("b", "algsimp"), ("c", "dce"))]
    art = SimpleNamespace(mtimes_ns={"a": 0, "b": 2_000_000, "c": 5_000_000})
    monkeypatch.setattr(xla_backend, "compile_module", lambda *a, **k: art)
    monkeypatch.setattr(xla_backend, "pass_dumps", lambda a: dumps)
    rows, compiles = bench.bench_xla_pipeline(object(), "m", stages.StageOptions(platform="cpu"), repeats=2)
    assert compiles == [pytest.approx(250.0)] * 2
    assert [(r.ending_with, r.times_ms) for r in rows] == [("algsimp", [2.0, 2.0]), ("dce", [3.0, 3.0])]


# ------------------------------------------------------------------ the native pass list cache

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


# ------------------------------------------------------------------ isolate

def test_isolated_call_with_an_unpicklable_result_raises_the_pickling_error():
    from mlirhlo_driver._native import isolate

    try:
        with pytest.raises(TypeError, match="pickle"):
            isolate.call(threading.Lock)
    finally:
        isolate.shutdown()


# ------------------------------------------------------------------ Python passes

def test_inline_calls_leaves_calls_to_external_functions(tmp_path):
    path = tmp_path / "ext.mlir"
    path.write_text("""\
func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @ext(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = func.call @helper(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
""")
    text = mlirhlo_driver.load(str(path)).optimize(passes="inline-calls").as_text()
    assert "call @ext" in text and "func.func private @ext" in text  # no body: nothing to inline
    assert "@helper" not in text and "stablehlo.negate" in text       # inlined, then dropped


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


# ------------------------------------------------------------------ CUDA tooling

def _fake_toolkit(root: Path) -> Path:
    bc = root / "nvvm" / "libdevice" / "libdevice.10.bc"
    bc.parent.mkdir(parents=True)
    bc.write_bytes(b"BC")
    return bc


def test_libdevice_default_follows_the_chosen_data_dir(monkeypatch, tmp_path):
    # pip's toolkit is cuda_data_dir's first choice, so its libdevice wins over a system one.
    from mlirhlo_driver.cuda import tools as cuda_tools

    pip_bc = _fake_toolkit(tmp_path / "pip")
    _fake_toolkit(tmp_path / "system")
    monkeypatch.setattr(cuda_tools, "pip_cuda_dir", lambda: str(tmp_path / "pip"))
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "system"),))
    assert cuda_tools.libdevice() == str(pip_bc)


def test_sass_of_one_kernel_module_has_no_section_headers(add_file):
    # Headers name the kernel modules only when there are several to tell apart.
    from mlirhlo_driver.cuda import tools as cuda_tools

    c = mlirhlo_driver.compile(str(add_file), platform="cuda")
    assert len(c.stage("cubin")) == 1
    sass = c.stage("sass")
    # CUDA 13's cubins (ELF ABI version 8): nvdisasm prints .target instead of .headerflags.
    header = ".headerflags" if cuda_tools.ptxas().version < (13,) else "\t.target\tsm_90a\n"
    assert header in sass and "// ----- " not in sass


def test_cubin_stage_takes_xla_s_own_cubins_without_a_second_ptxas(add_file, monkeypatch):
    # The driver points XLA's kernel cache into the compile's dump directory, so the cubin
    # stage reads the cubins XLA assembled; ptxas runs again only for modules XLA did not cache.
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    def no_ptxas(asm, modules):
        assert not modules, f"ptxas ran again for {[m.name for m in modules]}, which XLA had cached"

    monkeypatch.setattr(cuda_binaries, "_assemble_modules", no_ptxas)
    cubins = mlirhlo_driver.compile(str(add_file), platform="cuda").stage("cubin")
    [cubin] = cubins.values()
    assert cubin[:4] == b"\x7fELF"


def test_ptxas_arch_range_names_oldest_and_newest():
    from mlirhlo_driver.cuda.tools import Ptxas

    p = Ptxas("/x/ptxas", (12, 9, 86), ("sm_50", "sm_90", "sm_100", "sm_121f"), "PATH")
    assert p.arch_range() == "sm_50..sm_121f"
    assert Ptxas("/x/ptxas", (12, 9), (), "PATH").arch_range() == "nothing"


def test_find_tool_falls_back_to_the_system_toolkits(monkeypatch, tmp_path):
    from mlirhlo_driver.cuda import tools as cuda_tools

    tool = tmp_path / "toolkit" / "bin" / "guard-no-such-cuda-tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "toolkit"),))
    assert cuda_tools.find_tool("guard-no-such-cuda-tool") == str(tool)
    tool.chmod(0o644)  # not executable: not a tool
    assert cuda_tools.find_tool("guard-no-such-cuda-tool") is None


def test_last_native_error_prefers_the_check_failure_over_the_stack(tmp_path):
    from mlirhlo_driver._native.fds import last_native_error

    log = tmp_path / "log"
    log.write_text("loading\nF0101 shape_inference.cc:1] Check failed: a == b\n*** Begin stack trace ***\n"
                   "    frame 1\n")
    assert last_native_error(str(log)) == "F0101 shape_inference.cc:1] Check failed: a == b"
    log.write_text("one\ntwo\n")
    assert last_native_error(str(log)) == "two"


@pytest.mark.parametrize("value", ["abc", True, 1.5])
def test_integer_flag_value_must_be_an_integer(value):
    from mlirhlo_driver.xla import flags as xla_flags

    with pytest.raises(FlagError, match=r"^xla_gpu_autotune_level=\S+: expected an integer"):
        xla_flags.check_value_types({"xla_gpu_autotune_level": value})
    xla_flags.check_value_types({"xla_gpu_autotune_level": 3})


# ------------------------------------------------------------------ errors, isolate, jax inputs

def test_library_errors_print_as_their_one_line_form():
    from mlirhlo_driver.errors import InputError

    e = InputError("bad thing", file="m.mlir", line=3, col=5, hint="try this")
    assert e.format() == "error: " + str(e) == "error: m.mlir:3:5: bad thing (try this)"


def test_fork_is_safe_until_xla_starts_its_threads():
    # A fresh process (no XLA client yet) may fork its isolation helper; once XLA's
    # CPU client runs its thread pools it must not.
    code = ("from mlirhlo_driver._native import isolate; from mlirhlo_driver._native import jaxlib as _jaxlib\n"
            "print(isolate.fork_is_safe())\n"
            "_jaxlib.cpu_devices()\n"
            "print(isolate.fork_is_safe())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["True", "False"], proc.stdout + proc.stderr


def test_no_fork_once_mlir_runs_its_thread_pool(tmp_path):
    # A pipeline over several functions starts the MLIR context's worker threads; a helper
    # forked after that inherits the pool without them, and its parse of the StableHLO that
    # XLA made from HLO (verified in parallel: two called computations) waited forever.
    (tmp_path / "two.mlir").write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  %1 = call @f(%0) : (tensor<4xf32>) -> tensor<4xf32>\n  return %1 : tensor<4xf32>\n}\n"
        "func.func private @f(%y: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.negate %y : tensor<4xf32>\n  %1 = stablehlo.negate %0 : tensor<4xf32>\n"
        "  return %1 : tensor<4xf32>\n}\n")
    (tmp_path / "calls.hlo").write_text(
        "HloModule calls\n\nf {\n  a = f32[4] parameter(0)\n  ROOT n = f32[4] negate(a)\n}\n\n"
        "g {\n  b = f32[4] parameter(0)\n  ROOT m = f32[4] add(b, b)\n}\n\n"
        "ENTRY main {\n  p = f32[4] parameter(0)\n  c = f32[4] call(p), to_apply=f\n"
        "  ROOT d = f32[4] call(c), to_apply=g\n}\n")
    code = ("import mlirhlo_driver as mhd\nfrom mlirhlo_driver._native import isolate\n"
            "mhd.load('two.mlir').optimize(passes='canonicalize,cse')\n"
            "print(isolate._llvm_pool_threads(), isolate.fork_is_safe())\n"
            "print(mhd.load('calls.hlo').as_text().count('func.func'))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "MLIRHLO_READ_TIMEOUT": "60"})
    assert proc.returncode == 0, proc.stderr
    workers, safe, funcs = proc.stdout.split()
    assert not (workers == "True" and safe == "True"), proc.stdout  # (one CPU: MLIR starts none)
    assert funcs == "3"


def test_jax_function_with_f64_arguments_keeps_f64(tmp_path):
    # 64-bit argument specs switch jax to x64 first; without it jax would make them f32.
    # A fresh process: x64 is process-wide, and another test may have switched it on.
    (tmp_path / "guard_f64_model.py").write_text("def double(x):\n    return x * 2\n")
    code = ("from mlirhlo_driver.inputs import loader as inputs\n"
            "(m,) = inputs.load('guard_f64_model:double', arg_specs='f64[3]')\n"
            "print(m.module)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "tensor<3xf64>" in proc.stdout and "f32" not in proc.stdout


def test_missing_stage_output_names_the_failed_compile():
    # Only the dumps written before a failed compile exist: the error says why the stage has none.
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.backend import XlaArtifacts

    art = XlaArtifacts("cuda", "m", {"m.before_optimizations.txt": b"HloModule m"}, compile_error="ptxas died")
    with pytest.raises(StageError) as info:
        art.one(r"\.ptx$", "ptx")
    assert info.value.message == "XLA wrote no output for stage 'ptx' on cuda (compile failed: ptxas died)"
    assert art.one(r"before_optimizations\.txt$", "hlo") == b"HloModule m"


def test_random_scatter_indices_stay_in_bounds():
    # As XLA's fake-data generator does: scatter start indices stay within operand - window
    # (8 - 3 here), so random inputs never scatter out of bounds.
    from mlirhlo_driver.execute import engine, run

    src = """\
func.func @main(%op: tensor<8xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>) -> tensor<8xf32> {
  %0 = "stablehlo.scatter"(%op, %idx, %upd) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      stablehlo.return %b : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}
      : (tensor<8xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""
    module = inputs.parse_mlir(src, "scatter.mlir")
    for seed in range(3):
        params, _ = engine.signature(module)
        made = engine.make_inputs(params, run.RunOptions(seed=seed).inputs, module=module)
        arrays, note = made.arrays, made.note
        assert "1 index-constrained" in note
        assert 0 <= arrays[1].min() and arrays[1].max() <= 5, arrays[1].ravel()


def test_program_convert_accepts_each_format_and_names_a_wrong_one(add_file):
    from mlirhlo_driver.errors import DriverError

    prog = mlirhlo_driver.load(str(add_file))
    mhlo = prog.convert("mhlo")
    assert "mhlo.add" in mhlo and "loc(" not in mhlo  # no locations unless asked for
    assert prog.convert("hlo").startswith("HloModule")
    with pytest.raises(DriverError, match="unknown format 'hlo-text'"):
        prog.convert("hlo-text")


def test_check_naming_a_missing_output_fails_with_the_count():
    from mlirhlo_driver.execute.engine import evaluate_check
    from mlirhlo_driver.inputs.checks import Check

    r = evaluate_check(Check("expect_eq", 0, 2, {}, "f.mlir:3:5"), [np.zeros(2), np.zeros(2)])
    assert not r.passed and "output 2 missing (2 outputs)" in r.message


def test_last_native_error_takes_the_llvm_error_s_first_sentence(tmp_path):
    from mlirhlo_driver._native.fds import last_native_error

    log = tmp_path / "log"
    log.write_text("x\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo. Stack dump follows\n#0 0x1\n")
    assert last_native_error(str(log)) == "Cannot select: intrinsic %llvm.nvvm.foo"


def test_xla_pipeline_bench_with_more_dumps_in_a_later_compile(monkeypatch):
    # Rows come from the first compile; a later one's extra intervals are dropped, not an error.
    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.stages import base as stages
    from mlirhlo_driver.xla import backend as xla_backend

    def dumps(n):
        return [SimpleNamespace(key=str(k), pipeline="p", after=f"pass{k}") for k in range(n)]

    runs = iter([dumps(2), dumps(3)])
    art = SimpleNamespace(mtimes_ns={"0": 0, "1": 1_000_000, "2": 3_000_000})
    monkeypatch.setattr(xla_backend, "compile_module", lambda *a, **k: art)
    monkeypatch.setattr(xla_backend, "pass_dumps", lambda a: next(runs))
    rows, _ = bench.bench_xla_pipeline(object(), "m", stages.StageOptions(platform="cpu"), repeats=2)
    assert [(r.ending_with, r.times_ms) for r in rows] == [("pass1", [1.0, 1.0])]


def test_error_text_without_an_error_line_is_its_last_line():
    from mlirhlo_driver.ir.emit import _first_line

    assert _first_line(RuntimeError("first\n\nsecond\n")) == "second"
    assert _first_line(RuntimeError("noise\nerror: the reason\nmore")) == "the reason"
    # Only the first "error:" marks where the reason starts; the rest of the line is the reason.
    assert _first_line(RuntimeError("m.hlo:3: error: bad op: error: in operand 0")) == "bad op: error: in operand 0"
    assert _first_line(RuntimeError("")) == "RuntimeError"


def test_line_col_after_a_newline_at_offset_zero():
    from mlirhlo_driver.inputs.checks import _line_col

    assert _line_col("\nab", 2) == (2, 2)
    assert _line_col("ab\ncd", 4) == (2, 2)


def test_a_fixed32_field_inside_a_group_is_skipped():
    from mlirhlo_driver.ir import protos

    # field 1 as a group holding field 2 (fixed32), then the group's end tag
    data = bytes([0x0B, 0x15, 1, 2, 3, 4, 0x0C])
    assert protos._skip(data, 1, 0x0B, len(data), 0) == len(data)


def test_bench_runs_off_the_main_thread_and_keeps_the_sigint_handler():
    """A notebook or server thread may benchmark: only the main thread can install the
    Ctrl-C handler, so elsewhere the runs go on without it; on the main thread the
    handler is in place while the runs go and the previous one comes back after."""
    import signal
    import threading

    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.mlir import pipeline

    module = mlirhlo_driver.load(str(Path(__file__).parent / "data" / "chlo_special.mlir")).module
    root = pipeline.resolve(passes="cse")
    out: list = []
    worker = threading.Thread(target=lambda: out.append(bench.bench_pipelines(module, [root], 2)))
    worker.start()
    worker.join(120)
    assert len(out) == 1 and len(out[0][0].totals_ms) == 2
    before = signal.getsignal(signal.SIGINT)
    with bench.interruptible() as check:
        assert signal.getsignal(signal.SIGINT) is not before
        check()  # no Ctrl-C yet: nothing raised
    assert signal.getsignal(signal.SIGINT) is before


# ------------------------------------------------------------------ sample of e036971

TOPK = """HloModule topk_rows

ENTRY main {
  x = f32[4,8] parameter(0)
  ROOT t = (f32[4,2], s32[4,2]) topk(x), k=2, largest=true
}
"""


def test_topk_runs_against_the_interpreter(tmp_path):
    # XLA's import leaves TopK as mhlo.topk; the interpreter gets it as chlo.top_k
    # (execute/interpreter.py), else it refuses the op.
    path = tmp_path / "topk.hlo"
    path.write_text(TOPK)
    report = mlirhlo_driver.load(str(path)).run()
    assert report.status == "ok", report.message
    values, indices = report.reference_outputs
    np.testing.assert_array_equal(values, -np.sort(-report.inputs[0], axis=1)[:, :2])
    assert indices.dtype == np.int32


def _nested_call(x: int) -> int:
    from mlirhlo_driver._native import isolate

    # Inside the helper a call runs in place, and its value comes back.
    return isolate.call(abs, (x,)) + 1


def test_a_call_inside_the_helper_runs_in_place_and_returns(tmp_path):
    from mlirhlo_driver._native import isolate

    assert isolate.call(_nested_call, (-41,)) == 42


def test_kernels_json_is_two_space_indented(cli, tmp_path):
    import json

    path = tmp_path / "topk.hlo"
    path.write_text(TOPK)
    r = cli("kernels", path, "--gpu-spec", "h100_sxm", "--json")
    assert r.code == 0, r.err
    assert r.out == json.dumps(json.loads(r.out), indent=2) + "\n"


def test_the_spec_table_names_the_ptxas_in_use_or_why_there_is_none(monkeypatch):
    from types import SimpleNamespace

    from mlirhlo_driver import listings, targets

    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (None, [], "no ptxas on PATH or in pip's nvidia packages"))
    lines = listings.spec_table().splitlines()
    assert lines[-1] == "ptxas: none usable: no ptxas on PATH or in pip's nvidia packages"
    assert all(ln.endswith("  no") for ln in lines[1:-1])
    found = SimpleNamespace(version_str="12.9.86", path="/opt/ptxas", source="pip nvidia-cuda-nvcc-cu12",
                            can_target=lambda sm: sm == "sm_80", arch_range=lambda: "sm_50-sm_90a")
    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (found, [], ""))
    lines = listings.spec_table().splitlines()
    assert lines[-1] == "ptxas: 12.9.86 /opt/ptxas (pip nvidia-cuda-nvcc-cu12; targets sm_50-sm_90a)"
    assert any(" sm_80 " in ln and ln.endswith("  ok") for ln in lines)


def test_a_constant_division_by_zero_is_placed_where_its_location_says():
    """The refusal names the file, line and column of the divide's own location; a location
    without a file name ('-', the parser's name for unnamed text) leaves the file to the caller."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver._native.guards import refuse_fatal
    from mlirhlo_driver.errors import InputError

    def text(file):
        return ("func.func @main() -> tensor<i32> {\n"
                "  %a = stablehlo.constant dense<7> : tensor<i32>\n"
                "  %b = stablehlo.constant dense<0> : tensor<i32>\n"
                f'  %c = stablehlo.divide %a, %b : tensor<i32> loc("{file}":4:8)\n'
                "  return %c : tensor<i32>\n}\n")

    with _jaxlib.ir_context():
        for file, want in (("model.mlir", "model.mlir"), ("-", None)):
            with pytest.raises(InputError) as e:
                refuse_fatal(ir.Module.parse(text(file)))
            assert (e.value.file, e.value.line, e.value.col) == (want, 4, 8)
            assert "stablehlo.divide of two constants with a zero divisor" in str(e.value)


@pytest.mark.parametrize("raised, code", [(None, 0), (0, 0), (2, 2), ("error: text", 1)])
def test_the_fast_exit_keeps_what_sys_exit_means(monkeypatch, capfd, raised, code):
    """The short-lived commands leave by os._exit: SystemExit(None) is success as in Python, an
    int is itself, and a message is printed to stderr with exit 1."""
    import os
    import sys

    from mlirhlo_driver.cli import mlirhlo

    class Left(Exception):
        pass

    def fake_exit(c):
        raise Left(c)

    def fake_main(argv):
        raise SystemExit(raised)

    monkeypatch.setattr(sys, "argv", ["mlirhlo", "opt", "m.mlir"])
    monkeypatch.setattr(mlirhlo, "_main", fake_main)
    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: None)
    # What main does to its own short-lived process stays out of pytest's.
    monkeypatch.setattr("gc.freeze", lambda: None)
    monkeypatch.setattr("gc.set_threshold", lambda *a: None)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    with pytest.raises(Left) as e:
        mlirhlo.main()
    assert e.value.args == (code,)
    assert capfd.readouterr().err == (f"{raised}\n" if isinstance(raised, str) else "")


@pytest.mark.parametrize("found", [None, SimpleNamespace(submodule_search_locations=[])],
                         ids=["not-installed", "no-package-dir"])
def test_without_a_jaxlib_package_there_are_no_libraries_and_still_a_cache_key(monkeypatch, found):
    """No jaxlib package dir: jaxlib_libraries() is an empty list and the cache key is still computed."""
    from mlirhlo_driver.mlir import passes

    monkeypatch.setattr(passes.util, "find_spec", lambda name: found)
    assert passes.jaxlib_libraries() == []
    key = passes.jaxlib_cache_key()
    assert len(key) == 16 and int(key, 16) >= 0
