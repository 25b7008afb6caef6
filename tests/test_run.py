"""mlirhlo run: execute with XLA and compare against a reference."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlirhlo_driver.execute import engine, run
from mlirhlo_driver.inputs import loader as inputs
from tests.conftest import DATA, assert_one_line_error


def make_inputs(module, **options):
    """The engine's inputs for a module's parameters, as ``run`` makes them: (arrays, note)."""
    params, _ = engine.signature(module)
    made = engine.make_inputs(params, run.RunOptions(**options).inputs, module=module)
    return made.arrays, made.note

RUN = DATA / "run"
DUMPS = DATA / "jax_dumps"


def _module(tmp_path, text, name="m.mlir"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_jax_program_dumps_against_the_interpreter_in_workers(cli, tmp_path):
    report = tmp_path / "report.json"
    result = cli("run", DUMPS, "--jobs", "2", "--json", report)
    assert result.code == 0, result.out + result.err
    rows = json.loads(report.read_text())
    assert sorted(r["module"] for r in rows) == [
        "module_attention", "module_conv", "module_gather_scatter", "module_mlp_step", "module_scan",
        "module_sort"]
    assert all(r["status"] == "ok" and r["compile_ms"] > 0 and r["max_error"] < 1e-4 for r in rows)
    assert "6/6 modules passed" in result.out
    for col in ("module", "status", "max error", "compile ms", "run ms"):
        assert col in result.out


def test_deliberately_broken_platform_is_flagged_and_bisected(cli):
    src = RUN / "fast_min_max.mlir"
    assert cli("run", src, "--jobs", "0").code == 0  # XLA's default keeps NaN semantics
    result = cli("run", src, "--jobs", "0", "--xla_cpu_enable_fast_min_max=true", "--bisect")
    assert result.code == 1
    out = result.out
    assert "fast_min_max: MISMATCH: output 0: 8/8 differ" in out
    assert "output 0 (float32[8]): 8 of 8 elements differ" in out
    assert "worst at [0]: got " in out and "expected nan" in out
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines)
              if ln.startswith(f"  bisect: first divergence at {src}:8:8: %3 = stablehlo.maximum %arg0, %2"))
    # the op's operand types, then the first 3 lines of its value's mismatch, then the reproducer
    assert lines[at + 1:at + 4] == ["    operands: tensor<8xf32>, tensor<8xf32>",
                                    "    value (float32[8]): 8 of 8 elements differ",
                                    "      max abs error inf, max rel error inf"]
    assert lines[at + 4].startswith("      worst at [0]: got ") and lines[at + 5].startswith("  reproduce: ")
    assert "reproduce: mlirhlo run " in out and "--xla_cpu_enable_fast_min_max=true" in out


DTYPES = ["i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f16", "bf16", "f32", "f64",
          "complex<f32>", "complex<f64>", "f8E4M3FN", "f8E5M2"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reference", ["interpreter", "cpu"])
def test_every_dtype(cli, tmp_path, dtype, reference):
    t = f"tensor<3x4x{dtype}>"
    op = "stablehlo.xor" if dtype == "i1" else "stablehlo.add"
    text = (f"func.func @main(%a: {t}, %b: {t}) -> ({t}, {t}) {{\n"
            f"  %0 = {op} %a, %b : {t}\n"
            f"  %1 = stablehlo.reverse %a, dims = [1] : {t}\n"
            f"  return %0, %1 : {t}, {t}\n}}\n")
    src = _module(tmp_path, text)
    result = cli("run", src, "--jobs", "0", "--reference", reference, "--print-literals")
    assert result.code == 0, result.out + result.err
    assert "m: OK" in result.out and "output 1" in result.out


def test_tuples_and_multiple_results(cli, tmp_path):
    hlo = _module(tmp_path, "HloModule t\n\nENTRY main {\n  a = f32[4] parameter(0)\n"
                  "  b = s32[2] parameter(1)\n  n = f32[4] negate(a)\n"
                  "  ROOT t = (f32[4], s32[2], f32[4]) tuple(n, b, a)\n}\n", "t.hlo")
    out = tmp_path / "out.npz"
    result = cli("run", hlo, "--jobs", "0", "--save-outputs", out)
    assert result.code == 0, result.out
    saved = np.load(out)
    assert sorted(saved.keys()) == ["out0", "out1", "out2"]
    np.testing.assert_array_equal(saved["out0"], -saved["out2"])


def test_comparison_report_is_precise():
    expected = np.array([[1.0, 2.0], [3.0, np.nan]], np.float32)
    actual = np.array([[1.0, 2.5], [3.0, np.nan]], np.float32)
    mm = engine.compare(actual, expected, 0, None, None)
    assert (mm.count, mm.total, mm.worst_index) == (1, 4, (0, 1))
    assert mm.max_abs == pytest.approx(0.5) and mm.max_rel == pytest.approx(0.25)
    assert (mm.actual, mm.expected) == ("2.5", "2.0")
    # NaN vs NaN and equal infinities match; NaN vs number does not
    assert engine.compare(np.array([np.inf, np.nan]), np.array([np.inf, np.nan]), 0, 0, 0).count == 0
    assert engine.compare(np.array([1.0]), np.array([np.nan]), 0, 0, 0).count == 1
    # integers are exact whatever the tolerance
    assert engine.compare(np.array([3], np.int32), np.array([4], np.int32), 0, 1.0, 1.0).count == 1
    # tolerances
    assert engine.compare(np.array([1.00001], np.float32), np.array([1.0], np.float32), 0, None, None).count == 0
    assert engine.compare(np.array([1.01], np.float32), np.array([1.0], np.float32), 0, None, None).count == 1
    assert engine.compare(np.array([1.01], np.float32), np.array([1.0], np.float32), 0, 0.1, 0.0).count == 0


@pytest.mark.parametrize("dtype, unit", [("float64", 1.0), ("complex128", 1j)])
def test_default_tolerance_of_wide_types_is_tight(dtype, unit):
    # f64/c128 results are compared to ~1e-10 relative: a 1e-6 error is a mismatch.
    want = np.array([1.0 + unit], dtype)
    assert engine.compare(want * (1 + 1e-6), want, 0, None, None).count == 1
    assert engine.compare(want * (1 + 1e-13), want, 0, None, None).count == 0


def test_inputs_are_safe_for_each_op(tmp_path):
    text = ("func.func @main(%t: tensor<10x3xf32>, %i: tensor<5x1xi32>, %x: tensor<6xf32>, %s: tensor<i32>)"
            " -> (tensor<5x3xf32>, tensor<6xf32>, tensor<2xf32>) {\n"
            "  %g = \"stablehlo.gather\"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], "
            "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
            "slice_sizes = array<i64: 1, 3>} : (tensor<10x3xf32>, tensor<5x1xi32>) -> tensor<5x3xf32>\n"
            "  %l = stablehlo.log %x : tensor<6xf32>\n"
            "  %d = stablehlo.dynamic_slice %x, %s, sizes = [2] : (tensor<6xf32>, tensor<i32>) -> tensor<2xf32>\n"
            "  return %g, %l, %d : tensor<5x3xf32>, tensor<6xf32>, tensor<2xf32>\n}\n")
    module = inputs.load(str(_module(tmp_path, text)))[0].module
    seen_i, seen_s = set(), set()
    for seed in range(20):
        arrays, note = make_inputs(module, seed=seed)
        t, i, x, s = arrays
        assert i.min() >= 0 and i.max() <= 9          # row index into 10 rows
        assert (x > 0).all()                          # fed to log
        assert 0 <= int(s) <= 4                       # start of a 2-slice of 6
        seen_i.update(int(v) for v in i.ravel())
        seen_s.add(int(s))
    # The whole valid range is drawn, up to the last row and the last start.
    assert {0, 9} <= seen_i and 4 in seen_s
    assert "index-constrained" in note and "positive-constrained" in note
    wide, _ = make_inputs(module, large_float_range=True)
    assert np.abs(wide[0]).max() > 100


def test_dynamic_update_slice_starts_are_drawn_in_range(tmp_path):
    """Each start of a dynamic_update_slice (operands 2 on) keeps its update inside the operand,
    dimension by dimension, over the whole valid range."""
    text = ("func.func @main(%m: tensor<5x4xf32>, %u: tensor<2x3xf32>, %r: tensor<i32>, %c: tensor<i32>)"
            " -> tensor<5x4xf32> {\n"
            "  %d = stablehlo.dynamic_update_slice %m, %u, %r, %c : (tensor<5x4xf32>, tensor<2x3xf32>, "
            "tensor<i32>, tensor<i32>) -> tensor<5x4xf32>\n"
            "  return %d : tensor<5x4xf32>\n}\n")
    module = inputs.load(str(_module(tmp_path, text)))[0].module
    rows, cols = set(), set()
    for seed in range(30):
        _, _, r, c = make_inputs(module, seed=seed)[0]
        rows.add(int(r))
        cols.add(int(c))
    assert rows == {0, 1, 2, 3} and cols == {0, 1}


def test_seed_zeros_and_npz_inputs(cli, tmp_path):
    src = DATA / "erf_inv.mlir"
    a = tmp_path / "a.npz"
    b = tmp_path / "b.npz"
    assert cli("run", src, "--jobs", "0", "--seed", "3", "--save-outputs", a).code == 0
    assert cli("run", src, "--jobs", "0", "--seed", "3", "--save-outputs", b).code == 0
    np.testing.assert_array_equal(np.load(a)["out0"], np.load(b)["out0"])
    z = cli("run", src, "--jobs", "0", "--zeros", "--print-literals")
    assert z.code == 0 and "inputs: zeros" in z.out
    assert "input 0 (float32[8]): [0., 0., 0., 0., 0., 0., 0., 0.]" in z.out
    assert "output 0 (float32[8]): [0., 0., 0., 0., 0., 0., 0., 0.]" in z.out
    given = tmp_path / "in.npz"
    x = np.linspace(-0.5, 0.5, 8).astype(np.float32)
    np.savez(given, arg0=x)
    out = tmp_path / "out.npz"
    assert cli("run", src, "--jobs", "0", "--inputs", given, "--save-outputs", out).code == 0
    from scipy.special import erfinv

    e = erfinv(x)
    np.testing.assert_allclose(np.load(out)["out0"], (e + e) * (e + e), rtol=1e-5, atol=1e-6)
    # by parameter name (HLO parameter names survive the import), in any order
    mlp = DATA / "mlp_train_step.before_optimizations.txt"
    params, _ = engine.signature(inputs.load(str(mlp))[0].module)
    assert params[0].name.startswith("Arg_")
    arrays = {p.name: np.full(p.shape, 0.5, engine.np_dtype(p.dtype)) for p in reversed(params)}
    arrays[params[5].name] = np.array([0, 1, 2, 3], np.int32)
    by_name = tmp_path / "named.npz"
    np.savez(by_name, **arrays)
    named_out = tmp_path / "named_out.npz"
    assert cli("run", mlp, "--jobs", "0", "--inputs", by_name, "--save-outputs", named_out).code == 0
    positional = tmp_path / "positional.npz"
    np.savez(positional, *[arrays[p.name] for p in params])
    pos_out = tmp_path / "pos_out.npz"
    assert cli("run", mlp, "--jobs", "0", "--inputs", positional, "--save-outputs", pos_out).code == 0
    for k in np.load(named_out).keys():
        np.testing.assert_array_equal(np.load(named_out)[k], np.load(pos_out)[k])
    bad = tmp_path / "bad.npz"
    np.savez(bad, arg0=np.zeros(3, np.float32))
    line = assert_one_line_error(cli("run", src, "--jobs", "0", "--inputs", bad))
    assert "has shape [3], parameter 0 (" in line and "needs [8]" in line


def _count_executes(monkeypatch) -> list:
    """A list that gets one entry per execution of a compiled module, from now on."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    runs: list = []
    real = _jaxlib.execute
    monkeypatch.setattr(_jaxlib, "execute", lambda *a, **k: runs.append(1) or real(*a, **k))
    return runs


def test_iterations_report_median(cli, monkeypatch):
    runs = _count_executes(monkeypatch)
    result = cli("run", DATA / "erf_inv.mlir", "--jobs", "0", "--iterations", "5", "--reference", "none")
    assert result.code == 0
    assert "(median of 5)" in result.out and "RAN" in result.out
    assert len(runs) == 5  # five executions of one compile


def test_crashing_module_is_isolated(cli, tmp_path, monkeypatch):
    (tmp_path / "crasher.py").write_text(
        "import ctypes\n\ndef boom(x):\n    ctypes.string_at(0)\n    return x\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    report = tmp_path / "r.json"
    result = cli("run", "crasher:boom", DATA / "erf_inv.mlir", "--args", "f32[8]", "--jobs", "2",
                 "--json", report)
    assert result.code == 1
    rows = {r["module"]: r for r in json.loads(report.read_text())}
    assert rows["boom"]["status"] == "crashed"
    assert "SIGSEGV" in rows["boom"]["message"]
    assert rows["boom"]["reproducer"].startswith("mlirhlo run crasher:boom")
    assert rows["erf_inv"]["status"] == "ok"


def test_a_crashed_worker_is_replaced(cli, tmp_path, monkeypatch):
    # One worker, three modules, the first crashes it: the next two still run.
    (tmp_path / "crasher.py").write_text(
        "import ctypes\n\ndef boom(x):\n    ctypes.string_at(0)\n    return x\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    report = tmp_path / "r.json"
    result = cli("run", "crasher:boom", DATA / "erf_inv.mlir", DATA / "softmax.vhlo", "--args", "f32[8]",
                 "--jobs", "1", "--reference", "cpu", "--json", report)
    assert result.code == 1
    rows = {r["module"]: r["status"] for r in json.loads(report.read_text())}
    assert rows == {"boom": "crashed", "erf_inv": "ok", "softmax": "ok"}


def test_expect_eq_compares_imaginary_parts(cli, tmp_path):
    path = _module(tmp_path, """func.func @main() {
  %a = stablehlo.constant dense<[(1.0, 2.0), (3.0, 4.0)]> : tensor<2xcomplex<f32>>
  %b = stablehlo.constant dense<[(1.0, 2.0), (3.0, 5.0)]> : tensor<2xcomplex<f32>>
  stablehlo.custom_call @check.expect_eq(%a, %b) {has_side_effect = true} : (tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>>) -> ()
  stablehlo.custom_call @check.expect_eq(%a, %a) {has_side_effect = true} : (tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>>) -> ()
  return
}
""", "cplx.mlir")
    result = cli("run", path, "--jobs", "0")
    assert result.code == 1, result.out + result.err
    assert f"FAIL expect_eq at {path}:4:3: 1 of 2 elements not equal; worst at index [1]: " \
           "actual=(3+4j), expected=(3+5j)" in result.out
    assert f"PASS expect_eq at {path}:5:3: 2 elements ok" in result.out


def test_interpreter_abort_is_that_modules_failure(cli, tmp_path):
    rng = _module(tmp_path, "func.func @main(%s: tensor<2xui64>) -> tensor<4xui32> {\n"
                  "  %s2, %v = stablehlo.rng_bit_generator %s, algorithm = DEFAULT : "
                  "(tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)\n"
                  "  return %v : tensor<4xui32>\n}\n", "rng.mlir")
    result = cli("run", rng, DATA / "erf_inv.mlir", "--jobs", "1")
    assert result.code == 1
    assert "rng: FAILED: the StableHLO interpreter crashed:" in result.out
    assert "1/2 modules passed" in result.out


def test_hanging_module_times_out(cli, tmp_path):
    # 2^62 loop trips. (A 2^40-element iota reduction hangs jaxlib 0.10.2's XLA, which
    # fuses it, but jaxlib 0.9's allocates it and fails at once.)
    hang = _module(tmp_path, "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n"
                   "  %c0 = stablehlo.constant dense<0> : tensor<i64>\n"
                   "  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i64>, tensor<f32>\n"
                   "  cond {\n"
                   "    %big = stablehlo.constant dense<4611686018427387904> : tensor<i64>\n"
                   "    %lt = stablehlo.compare LT, %i, %big : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
                   "    stablehlo.return %lt : tensor<i1>\n"
                   "  } do {\n"
                   "    %one = stablehlo.constant dense<1> : tensor<i64>\n"
                   "    %n = stablehlo.add %i, %one : tensor<i64>\n"
                   "    %w = stablehlo.sine %v : tensor<f32>\n"
                   "    stablehlo.return %n, %w : tensor<i64>, tensor<f32>\n"
                   "  }\n"
                   "  return %r#1 : tensor<f32>\n}\n", "hang.mlir")
    report = tmp_path / "r.json"
    result = cli("run", hang, DATA / "erf_inv.mlir", "--jobs", "2", "--timeout", "8", "--reference", "none",
                 "--json", report)
    assert result.code == 1
    rows = {r["module"]: r for r in json.loads(report.read_text())}
    assert rows["hang"]["status"] == "timeout" and "8 s" in rows["hang"]["message"]
    assert rows["erf_inv"]["status"] == "ran"


def test_cuda_without_gpu_is_a_clear_error(cli):
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import DriverError

    try:
        _jaxlib.cuda_devices()
        pytest.skip("a GPU is present: see test_cuda_run_matches_cpu")
    except DriverError:
        pass
    line = assert_one_line_error(cli("run", DATA / "erf_inv.mlir", "--platform", "cuda"))
    assert "--platform cuda needs an NVIDIA GPU" in line


def test_cuda_devices_are_what_the_plugin_finds(monkeypatch):
    """Without a GPU here, the plugin's client is stood in for: the devices it lists are
    returned as they are; none is a NoGpu of its own, not an empty list to run on."""
    from types import SimpleNamespace

    from jax._src.lib import xla_client

    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import NoGpu

    found: list = []
    monkeypatch.setattr(xla_client, "make_c_api_client",
                        lambda *a, **k: SimpleNamespace(devices=lambda: list(found)))
    # The function itself, not its per-process cache: stand-in devices must not outlive the test.
    cuda_devices = _jaxlib.cuda_devices.__wrapped__
    with pytest.raises(NoGpu) as e:
        cuda_devices()
    assert e.value.message.endswith(" needs an NVIDIA GPU; the CUDA plugin found none")
    found[:] = ["gpu0", "gpu1"]
    assert cuda_devices() == ["gpu0", "gpu1"]


@pytest.mark.gpu
def test_cuda_run_matches_cpu(cli):
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import DriverError

    try:
        _jaxlib.cuda_devices()
    except DriverError:
        pytest.skip("needs an NVIDIA GPU")
    result = cli("run", DUMPS, "--platform", "cuda", "--reference", "cpu", "--jobs", "0")
    assert result.code == 0, result.out


def test_bad_usage(cli):
    assert_one_line_error(cli("run", DATA / "erf_inv.mlir", "--reference", "interp"),
                          contains="unknown reference 'interp'")
    assert_one_line_error(cli("run"), contains="no input modules given")
    assert_one_line_error(cli("run", DATA / "erf_inv.mlir", "--xla_nope=1"), contains="unknown XLA flag")


def test_self_checking_files_run_on_xla(cli, tmp_path):
    result = cli("run", *sorted((DATA / "checks").glob("*.mlir")), "--jobs", "2")
    assert result.code == 0, result.out
    assert "13/13 modules passed" in result.out
    assert "constants fed as runtime parameters" in result.out
    folded = cli("run", DATA / "checks" / "wide_types.mlir", "--jobs", "0", "--fold-constants")
    assert folded.code == 0 and "constants folded by XLA (--fold-constants)" in folded.out
    # a wrong expectation fails, precisely
    text = (DATA / "checks" / "integer_ops.mlir").read_text()
    broken = tmp_path / "broken_checks.mlir"
    import re

    m = re.search(r"check\.expect_eq_const (%\w+), dense<\[(-?\d+)", text)
    assert m, "integer_ops.mlir has an expect_eq_const with an integer list"
    wrong = str(int(m.group(2)) + 1)
    broken.write_text(text[:m.start(2)] + wrong + text[m.end(2):])
    result = cli("run", broken, "--jobs", "0")
    assert result.code == 1
    assert "broken_checks: CHECK-FAILED" in result.out
    fail = [ln for ln in result.out.splitlines() if ln.strip().startswith("FAIL")]
    assert len(fail) == 1 and f"{broken}:" in fail[0] and f"expected={wrong}" in fail[0]


def test_progress_bar_on_a_terminal_only(tmp_path):
    import os
    import pty
    import subprocess
    import sys
    import threading

    master, slave = pty.openpty()
    cmd = [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "run", str(DATA / "erf_inv.mlir"),
           str(DATA / "chlo_special.mlir"), "--jobs", "0", "--reference", "none"]
    chunks: list[bytes] = []

    def drain() -> None:  # read while it runs: a closed pty drops what was not read
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=slave, timeout=300)
    os.close(slave)
    reader.join(10)
    os.close(master)
    seen = b"".join(chunks)
    assert proc.returncode == 0
    assert b"running modules" in seen            # drawn on the terminal (stderr)
    assert b"running modules" not in proc.stdout  # never in the report itself
    piped = subprocess.run(cmd, capture_output=True, timeout=300)
    assert b"running modules" not in piped.stderr


def test_max_error_of_a_match_is_the_largest_difference_within_tolerance():
    """A module that matches still reports how far it was from the reference (the
    report's max error), not 0 because every difference was within tolerance."""
    report = run.ModuleReport("m", "m.mlir")
    got = [np.array([1.0, 2.0 + 3e-6, 3.0], np.float32), np.array([5, 6], np.int32)]
    want = [np.array([1.0, 2.0, 3.0], np.float32), np.array([5, 6], np.int32)]
    report.judge(engine.compare_outputs(got, want, None, None))
    assert report.status == "ok" and not report.mismatches
    assert report.max_error == pytest.approx(float(np.float32(2.0 + 3e-6) - np.float32(2.0)))


def test_npz_raw_integers_stand_for_types_npz_cannot_name_and_nothing_is_converted(tmp_path):
    """A bf16 / f8 parameter takes raw integers of its width (uint16 for bf16, uint8 or int8 for f8),
    reinterpreted bit for bit; an array of another kind (f16 for bf16, same width) or another width
    is refused, and a type numpy can name (f32) takes no integers at all."""
    import ml_dtypes

    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.execute.engine import TensorSpec, inputs_from_npz

    bf16 = TensorSpec((2,), "bf16", "bfloat16", "x")
    f8 = TensorSpec((2,), "f8E4M3FN", "float8_e4m3fn", "y")
    want = np.array([1.5, -2.0], ml_dtypes.bfloat16)
    path = tmp_path / "ok.npz"
    np.savez(path, x=want.view(np.uint16), y=np.array([0x38, 0xC0], np.uint8))
    got = inputs_from_npz(str(path), [bf16, f8])
    assert got[0].dtype == ml_dtypes.bfloat16 and got[0].tolist() == want.tolist()
    assert got[1].dtype == ml_dtypes.float8_e4m3fn and got[1].astype(np.float32).tolist() == [1.0, -2.0]
    for bad, spec in [(np.array([1.5, -2.0], np.float16), bf16), (np.array([1, 2], np.uint32), bf16),
                      (np.array([1, 2], np.int32), TensorSpec((2,), "f32", "float32", "x"))]:
        path = tmp_path / "bad.npz"
        np.savez(path, x=bad)
        with pytest.raises(InputError, match=rf"array 'x' is {bad.dtype}, parameter 0 \(x\) is "):
            inputs_from_npz(str(path), [spec])


def test_saved_outputs_of_several_modules_are_named_per_module(cli, tmp_path):
    """--save-outputs with more than one module keys each array by its module ('NAME/outI'), so
    two modules' out0 never overwrite each other; one module keeps plain 'outI'."""
    a = _module(tmp_path, "HloModule a\n\nENTRY main {\n  ROOT c = f32[2] constant({1, 2})\n}\n", "a.hlo")
    b = _module(tmp_path, "HloModule b\n\nENTRY main {\n  ROOT c = s32[3] constant({7, 8, 9})\n}\n", "b.hlo")
    out = tmp_path / "both.npz"
    result = cli("run", a, b, "--jobs", "0", "--save-outputs", out)
    assert result.code == 0, result.out + result.err
    saved = np.load(out)
    assert sorted(saved.keys()) == ["a/out0", "b/out0"]
    assert saved["a/out0"].tolist() == [1.0, 2.0] and saved["b/out0"].tolist() == [7, 8, 9]


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


def test_jobs_run_each_module_in_a_worker_and_jobs_0_in_this_process(cli, tmp_path, monkeypatch):
    """--jobs N (N >= 1) runs the modules in worker processes, --jobs 0 in the calling process."""
    import os
    import sys

    pids = tmp_path / "pids.txt"
    (tmp_path / "whose.py").write_text(
        "import os\n\ndef f(x):\n"
        f"    with open({str(pids)!r}, 'a') as out:\n"
        "        out.write(f'{os.getpid()}\\n')\n"
        "    return x\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    for jobs, here in (("1", False), ("0", True)):
        pids.unlink(missing_ok=True)
        result = cli("run", "whose:f", "--args", "f32[8]", "--jobs", jobs, "--reference", "none")
        assert result.code == 0, result.out + result.err
        ran_in = {int(p) for p in (pids.read_text().split() if pids.exists() else [])}
        assert ran_in and (ran_in == {os.getpid()}) == here, (jobs, ran_in, os.getpid())
    sys.modules.pop("whose", None)  # imported by the --jobs 0 run; no other test needs it


def test_jobs_0_with_a_scheduler_still_runs_on_the_cluster(cli, monkeypatch):
    """--scheduler sends the modules to the cluster whatever --jobs says, --jobs 0 included."""
    from mlirhlo_driver._native import cluster
    from mlirhlo_driver.batch import run_pool

    asked: list[str] = []

    def on_cluster(address, fn, context, tasks, *, timeout=None, init=None):
        asked.append(address)
        return ((i, run_pool.worker_task(context, t)) for i, t in enumerate(tasks))

    monkeypatch.setattr(cluster, "imap", on_cluster)
    result = cli("run", DATA / "erf_inv.mlir", "--jobs", "0", "--scheduler", "tcp://127.0.0.1:8786",
                 "--reference", "none")
    assert result.code == 0, result.out + result.err
    assert asked == ["tcp://127.0.0.1:8786"]


def test_large_float_range_draws_over_the_whole_plus_minus_1e4_and_never_beyond(tmp_path):
    """--large-float-range draws floats (real and imaginary parts) over [-1e4, 1e4], [1e-4, 1e4] for log's input."""
    text = ("func.func @main(%x: tensor<512x512xf64>, %p: tensor<512x512xf64>, %c: tensor<512x512xcomplex<f64>>)"
            " -> (tensor<512x512xf64>, tensor<512x512xf64>, tensor<512x512xcomplex<f64>>) {\n"
            "  %l = stablehlo.log %p : tensor<512x512xf64>\n"
            "  return %x, %l, %c : tensor<512x512xf64>, tensor<512x512xf64>, tensor<512x512xcomplex<f64>>\n}\n")
    module = inputs.load(str(_module(tmp_path, text)))[0].module
    (x, p, c), note = make_inputs(module, seed=0, large_float_range=True)
    assert "1 positive-constrained" in note
    for values in (x, c.real, c.imag):
        assert values.min() >= -1e4 and values.max() <= 1e4
        assert values.min() < -9990 and values.max() > 9990  # the whole range is drawn
    assert p.min() >= 1e-4 and p.max() <= 1e4
    assert p.min() < 1 and p.max() > 9990


_GATHER_WHOLE_DIM = (  # the slice covers all of the indexed dimension: one valid start, 0
    "func.func @main(%t: tensor<4xf32>, %i: tensor<8x1xi32>) -> tensor<8x4xf32> {\n"
    "  %g = \"stablehlo.gather\"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], "
    "collapsed_slice_dims = [], start_index_map = [0], index_vector_dim = 1>, "
    "slice_sizes = array<i64: 4>} : (tensor<4xf32>, tensor<8x1xi32>) -> tensor<8x4xf32>\n"
    "  return %g : tensor<8x4xf32>\n}\n")
_GATHER_NO_START_DIM = (  # no start_index_map: the parameter reaches the indices through an empty slice
    "func.func @main(%t: tensor<4xf32>, %p: tensor<6xi32>) -> tensor<0x4xf32> {\n"
    "  %s = stablehlo.slice %p [0:0] : (tensor<6xi32>) -> tensor<0xi32>\n"
    "  %r = stablehlo.reshape %s : (tensor<0xi32>) -> tensor<0x0xi32>\n"
    "  %g = \"stablehlo.gather\"(%t, %r) {dimension_numbers = #stablehlo.gather<offset_dims = [1], "
    "index_vector_dim = 1>, slice_sizes = array<i64: 4>} : (tensor<4xf32>, tensor<0x0xi32>) "
    "-> tensor<0x4xf32>\n"
    "  return %g : tensor<0x4xf32>\n}\n")


@pytest.mark.parametrize("text", [_GATHER_WHOLE_DIM, _GATHER_NO_START_DIM], ids=["whole-dim", "no-start-dim"])
def test_gather_indices_with_one_valid_start_are_drawn_as_zeros(tmp_path, text):
    """An integer parameter feeding a gather's indices is index-constrained to the valid starts:
    where the only one is 0, every drawn value is 0, never one past it."""
    module = inputs.load(str(_module(tmp_path, text)))[0].module
    for seed in range(10):
        arrays, note = make_inputs(module, seed=seed)
        assert (arrays[1] == 0).all()
        assert "1 index-constrained" in note


def test_a_mismatch_is_bisected_only_when_asked(cli, tmp_path):
    """Without --bisect a mismatching module is reported without a bisect (no line, null in JSON)."""
    src = RUN / "fast_min_max.mlir"
    report = tmp_path / "report.json"
    result = cli("run", src, "--jobs", "0", "--xla_cpu_enable_fast_min_max=true", "--json", report)
    assert result.code == 1
    assert "fast_min_max: MISMATCH" in result.out
    assert "bisect:" not in result.out and "first divergence" not in result.out
    [row] = json.loads(report.read_text())
    assert row["status"] == "mismatch" and row["bisect"] is None


def _loaded(tmp_path, text, name="m.mlir"):
    path = _module(tmp_path, text, name)
    return path, inputs.load(str(path))[0].module


def test_mismatch_describe_gives_the_counts_errors_worst_element_and_up_to_3_examples():
    """A mismatch's lines: what differs and how many, the largest errors, the worst element, then at
    most 3 other differing elements in index order; a match is the first line alone."""
    expected = np.zeros(6)
    actual = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 0.0])
    mm = engine.compare(actual, expected, 1, 0.0, 0.0)
    assert mm.describe() == (
        "output 1 (float64[6]): 5 of 6 elements differ\n"
        "  max abs error 5, max rel error inf\n"
        "  worst at [4]: got 5.0, expected 0.0\n"
        "  at [0]: got 1.0, expected 0.0\n"
        "  at [1]: got 2.0, expected 0.0\n"
        "  at [2]: got 3.0, expected 0.0")
    mm.label = "value"
    assert mm.describe().startswith("value (float64[6]): 5 of 6 elements differ\n")
    # the worst one among the first differing elements is not listed twice
    two = engine.compare(np.array([[1.0, 2.5], [1.25, 1.0]], np.float32), np.ones((2, 2), np.float32), 0,
                      0.0, 0.1)
    assert two.describe() == (
        "output 0 (float32[2, 2]): 2 of 4 elements differ\n"
        "  max abs error 1.5, max rel error 1.5\n"
        "  worst at [0, 1]: got 2.5, expected 1.0\n"
        "  at [1, 0]: got 1.25, expected 1.0")
    # the worst among the first four: the other three are the examples
    early = engine.compare(np.array([2.0, 9.0, 3.0, 4.0, 5.0]), np.ones(5), 0, 0.0, 0.0)
    assert (early.worst_index, [e[0] for e in early.examples]) == ((1,), [(0,), (2,), (3,)])
    assert engine.compare(np.ones(2), np.ones(2), 3, 0.0, 0.0).describe() == \
        "output 3 (float64[2]): 0 of 2 elements differ"
    assert engine.compare(np.zeros(2, np.float32), np.zeros(3), 0, 0.0, 0.0).describe() == (
        "output 0 (float64[3]): 3 of 3 elements differ (shape or type differs)\n"
        "  max abs error inf, max rel error inf\n"
        "  worst at []: got float32[2], expected float64[3]")


def test_mismatch_of_a_scalar_and_relative_error_against_a_nonzero_expected():
    """A rank-0 value's worst index is []; the relative error divides by |expected|."""
    mm = engine.compare(np.array(3.0), np.array(-2.0), 0, 0.0, 0.0)
    assert (mm.count, mm.total, mm.worst_index, mm.max_abs, mm.max_rel) == (1, 1, (), 5.0, 2.5)
    assert (mm.actual, mm.expected, mm.examples) == ("3.0", "-2.0", [])
    ints = engine.compare(np.array([7, 1], np.int32), np.array([3, 0], np.int32), 0, None, None)
    assert (ints.max_abs, ints.max_rel, ints.worst_index, ints.actual, ints.expected) == \
        (4.0, 4 / 3, (0,), "7", "3")
    bools = engine.compare(np.array([True, False]), np.array([False, False]), 0, None, None)
    assert (bools.count, bools.max_abs, bools.max_rel, bools.actual, bools.expected) == \
        (1, 1.0, 1.0, "true", "false")  # as StableHLO spells them, as check files' reports do
    cplx = engine.compare(np.array([1 + 2j], np.complex64), np.array([1 + 1j], np.complex64), 0, 0.0, 0.0)
    assert (cplx.actual, cplx.expected, cplx.max_abs) == ("(1+2j)", "(1+1j)", 1.0)
    # Against an expected 0 a float's relative error is inf, whatever the dtype and the error's size.
    for dtype in (np.float16, np.float32, np.float64):
        zero = engine.compare(np.array([1.5, 0.0], dtype), np.array([0.0, 0.0], dtype), 0, 0.0, 0.0)
        assert (zero.count, zero.max_abs, zero.max_rel) == (1, 1.5, np.inf)


def test_module_report_status_and_json_row():
    """passed/ok only for ok and ran; the JSON row carries every field, bisect and mismatches described."""
    for status, ok in [("ok", True), ("ran", True), ("mismatch", False), ("check-failed", False),
                       ("failed", False), ("invalid", False), ("crashed", False), ("timeout", False)]:
        r = run.ModuleReport("m", "m.mlir", status=status)
        assert (r.passed, r.ok) == (ok, ok), status
    mm = engine.compare(np.array([2.0]), np.array([1.0]), 0, 0.0, 0.0)
    report = run.ModuleReport("m", "d/m.mlir", status="mismatch", message="output 0: 1/1 differ",
                              max_error=1.0, compile_ms=2.0, run_ms=3.0, reference_ms=4.0, mismatches=[mm],
                              checks=[engine.CheckResult("expect_eq", False, "m.mlir:1:1", "bad")],
                              bisect=run.BisectResult("%0 = stablehlo.add", "m.mlir:2:3", ["tensor<f32>"], mm),
                              inputs_note="zeros", checked_values="compiled", checked_values_detail="d",
                              kept_constants=[{"k": 1}], reproducer="mlirhlo run d/m.mlir")
    assert report.row() == {
        "module": "m", "source": "d/m.mlir", "status": "mismatch", "max_error": 1.0, "compile_ms": 2.0,
        "run_ms": 3.0, "reference_ms": 4.0, "message": "output 0: 1/1 differ",
        "checks": [{"kind": "expect_eq", "passed": False, "location": "m.mlir:1:1", "message": "bad"}],
        "mismatches": [mm.describe()],
        "bisect": {"op": "%0 = stablehlo.add", "location": "m.mlir:2:3", "operand_shapes": ["tensor<f32>"],
                   "mismatch": mm.describe()},
        "bisect_passes": None, "xla_passes": None, "inputs": "zeros", "checked_values": "compiled",
        "checked_values_detail": "d", "kept_constants": [{"k": 1}], "notes": [],
        "reproducer": "mlirhlo run d/m.mlir"}
    assert run.ModuleReport("m", "m.mlir").row()["bisect"] is None


def test_signature_names_parameters_and_refuses_what_run_cannot_make(tmp_path):
    """A name location names a parameter (else argN); results are unnamed; dynamic shapes, tokens,
    sub-byte element types and a module without @main are input errors saying so."""
    from mlirhlo_driver.errors import InputError

    _, m = _loaded(tmp_path, 'func.func @main(%x: tensor<2x3xf32> loc("x"), %y: tensor<i8>) '
                   "-> (tensor<2x3xf32>, tensor<i8>) {\n  return %x, %y : tensor<2x3xf32>, tensor<i8>\n}\n")
    params, results = engine.signature(m)
    assert params == [engine.TensorSpec((2, 3), "f32", "float32", "x"), engine.TensorSpec((), "i8", "int8", "arg1")]
    assert results == [engine.TensorSpec((2, 3), "f32", "float32"), engine.TensorSpec((), "i8", "int8")]
    assert [p.mlir() for p in params] == ["tensor<2x3xf32>", "tensor<i8>"]
    for t, message in [("tensor<?xf32>", "cannot run a module with dynamic shapes (tensor<?xf32>); "
                                         "refine them first (--pipeline @refine-shapes)"),
                       ("tensor<4xi4>", "element type i4 is not supported by mlirhlo run"),
                       ("!stablehlo.token", "cannot run a module with a !stablehlo.token parameter or result")]:
        _, m = _loaded(tmp_path, f"func.func @main(%x: {t}) -> {t} {{\n  return %x : {t}\n}}\n")
        with pytest.raises(InputError) as e:
            engine.signature(m)
        assert e.value.message == message
    _, m = _loaded(tmp_path, "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n  return %x : tensor<f32>\n}\n")
    with pytest.raises(InputError, match="module has no @main function"):
        engine.signature(m)


def test_random_inputs_per_element_kind_cover_their_whole_range(tmp_path):
    """Random inputs: bools both values, signed ints -8..8, unsigned 0..15, floats and complex parts
    in [-1, 1); --zeros gives zeros of each dtype; the note says how they were made."""
    types = ["i1", "i8", "ui8", "i32", "ui64", "f32", "bf16", "complex<f32>"]
    args = ", ".join(f"%a{i}: tensor<4096x{t}>" for i, t in enumerate(types))
    rets = ", ".join(f"tensor<4096x{t}>" for t in types)
    _, m = _loaded(tmp_path, f"func.func @main({args}) -> ({rets}) {{\n"
                   f"  return {', '.join(f'%a{i}' for i in range(len(types)))} : {rets}\n}}\n")
    arrays, note = make_inputs(m, seed=7)
    assert note == "random (seed 7)"
    assert [str(a.dtype) for a in arrays] == ["bool", "int8", "uint8", "int32", "uint64", "float32", "bfloat16",
                                              "complex64"]
    assert sorted(set(arrays[0].tolist())) == [False, True]
    assert 0.45 < arrays[0].mean() < 0.55  # True and False equally likely
    for a in arrays[1], arrays[3]:
        assert sorted(set(a.tolist())) == list(range(-8, 9))
    for a in arrays[2], arrays[4]:
        assert sorted(set(a.tolist())) == list(range(16))
    for a in (arrays[5], arrays[6].astype(np.float32), arrays[7].real, arrays[7].imag):
        assert -1.0 <= a.min() < -0.99 and 0.99 < a.max() <= 1.0
    assert len(np.unique(arrays[7].real - arrays[7].imag)) > 4000  # real and imaginary parts drawn apart
    again, _ = make_inputs(m, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(arrays, again))
    other, _ = make_inputs(m, seed=8)
    assert not np.array_equal(arrays[5], other[5])
    zeros, note = make_inputs(m, seed=7, zeros=True)
    assert note == "zeros"
    assert [a.dtype for a in zeros] == [a.dtype for a in arrays] and not any(a.any() for a in zeros)
    assert all(a.shape == (4096,) for a in zeros)


def _convert_chain(n: int) -> str:
    lines, v = [], "%x"
    for i in range(n):
        lines.append(f"  %c{i} = stablehlo.convert {v} : (tensor<4xf32>) -> tensor<4xf32>")
        v = f"%c{i}"
    return ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n" + "\n".join(lines)
            + f"\n  %l = stablehlo.log {v} : tensor<4xf32>\n  return %l : tensor<4xf32>\n}}\n")


def test_positive_constraint_follows_up_to_8_transparent_ops(tmp_path):
    """A parameter reaching log through at most 8 shape/convert ops is drawn positive; 9 are not followed."""
    for n, want in [(0, {0: ("positive", 0)}), (8, {0: ("positive", 0)}), (9, {})]:
        _, m = _loaded(tmp_path, _convert_chain(n))
        assert engine.input_constraints(m) == want, n


def test_positive_ops_and_power_base_only(tmp_path):
    """log/sqrt/lgamma... inputs and a power's base are drawn in [0.1, 1) (large: [1e-4, 1e4]);
    the exponent is not constrained."""
    _, m = _loaded(tmp_path, (
        "func.func @main(%x: tensor<512xf32>, %p: tensor<512xf32>, %g: tensor<512xf32>, %q: tensor<512xf32>)"
        " -> (tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) {\n"
        "  %0 = stablehlo.power %x, %p : tensor<512xf32>\n"
        "  %1 = chlo.lgamma %g : tensor<512xf32> -> tensor<512xf32>\n"
        "  %2 = stablehlo.sqrt %q : tensor<512xf32>\n"
        "  return %0, %1, %2 : tensor<512xf32>, tensor<512xf32>, tensor<512xf32>\n}\n"))
    assert engine.input_constraints(m) == {0: ("positive", 0), 2: ("positive", 0), 3: ("positive", 0)}
    arrays, note = make_inputs(m, seed=1)
    assert note == "random (seed 1); 3 positive-constrained"
    for i in (0, 2, 3):
        assert 0.1 <= arrays[i].min() < 0.11 and 0.99 < arrays[i].max() < 1.0
    assert arrays[1].min() < -0.99


def test_index_bounds_of_dynamic_slice_gather_and_scatter(tmp_path):
    """Index parameters are bounded by operand size minus slice/window size, per dimension, the
    smallest bound over all uses; an index use wins over a positive one, whatever the order."""
    _, m = _loaded(tmp_path, (
        "func.func @main(%m: tensor<7x5xf32>, %r: tensor<i32>, %c: tensor<i32>, %l: tensor<i64>, %k: tensor<i32>)"
        " -> (tensor<3x2xf32>, tensor<6x1xf32>, tensor<1x1xf32>, tensor<f32>) {\n"
        "  %d = stablehlo.dynamic_slice %m, %r, %c, sizes = [3, 2] : "
        "(tensor<7x5xf32>, tensor<i32>, tensor<i32>) -> tensor<3x2xf32>\n"
        "  %lc = stablehlo.convert %l : (tensor<i64>) -> tensor<i32>\n"
        "  %e = stablehlo.dynamic_slice %m, %lc, %lc, sizes = [6, 1] : "
        "(tensor<7x5xf32>, tensor<i32>, tensor<i32>) -> tensor<6x1xf32>\n"
        "  %kf = stablehlo.convert %k : (tensor<i32>) -> tensor<f32>\n"
        "  %kl = stablehlo.log %kf : tensor<f32>\n"
        "  %f = stablehlo.dynamic_slice %m, %k, %k, sizes = [1, 1] : "
        "(tensor<7x5xf32>, tensor<i32>, tensor<i32>) -> tensor<1x1xf32>\n"
        "  return %d, %e, %f, %kl : tensor<3x2xf32>, tensor<6x1xf32>, tensor<1x1xf32>, tensor<f32>\n}\n"))
    assert engine.input_constraints(m) == {1: ("index", 4), 2: ("index", 3), 3: ("index", 1), 4: ("index", 4)}
    gather = (
        "func.func @main(%t: tensor<10x6xf32>, %i: tensor<5x2xi32>) -> tensor<5x2x4xf32> {\n"
        "  %g = \"stablehlo.gather\"(%t, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 2], "
        "start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 2, 4>} "
        ": (tensor<10x6xf32>, tensor<5x2xi32>) -> tensor<5x2x4xf32>\n"
        "  return %g : tensor<5x2x4xf32>\n}\n")
    _, m = _loaded(tmp_path, gather)
    assert engine.input_constraints(m) == {1: ("index", 2)}
    scatter = """func.func @main(%op: tensor<10x6xf32>, %idx: tensor<5x2xi32>, %upd: tensor<5x4xf32>) -> tensor<10x6xf32> {
  %0 = "stablehlo.scatter"(%op, %idx, %upd) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      stablehlo.return %b : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>}
      : (tensor<10x6xf32>, tensor<5x2xi32>, tensor<5x4xf32>) -> tensor<10x6xf32>
  return %0 : tensor<10x6xf32>
}
"""
    _, m = _loaded(tmp_path, scatter)
    assert engine.input_constraints(m) == {1: ("index", 2)}  # window 1 (inserted) x 4: min(10 - 1, 6 - 4)
    arrays, note = make_inputs(m, seed=3)
    assert note == "random (seed 3); 1 index-constrained"
    assert sorted(set(arrays[1].ravel().tolist())) == [0, 1, 2]


def test_npz_inputs_errors_name_the_file_and_what_is_wrong(tmp_path):
    """--inputs: a missing file, a directory, an unreadable file, a lone .npy, a missing array
    (with the names accepted) and arrays left over are input errors, each with its exact message."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.execute.engine import TensorSpec, inputs_from_npz

    x = TensorSpec((2,), "f32", "float32", "x")
    y = TensorSpec((), "i32", "int32", "y")

    def error(path, params=(x, y)):
        with pytest.raises(InputError) as e:
            inputs_from_npz(str(path), list(params))
        return e.value.format()

    assert error(tmp_path / "nope.npz") == f"error: {tmp_path / 'nope.npz'}: no such file"
    assert error(tmp_path) == f"error: {tmp_path}: is a directory, not an .npz file"
    (tmp_path / "junk.npz").write_text("hello")
    assert error(tmp_path / "junk.npz").startswith(f"error: {tmp_path / 'junk.npz'}: not a readable .npz file: ")
    np.save(tmp_path / "one.npy", np.zeros(2, np.float32))
    assert error(tmp_path / "one.npy") == (f"error: {tmp_path / 'one.npy'}: a single .npy array, not an .npz "
                                           "archive (np.savez(path, arg0=...) writes one array per parameter)")
    np.savez(tmp_path / "z.npz", z=np.zeros(2, np.float32))
    assert error(tmp_path / "z.npz") == (f"error: {tmp_path / 'z.npz'}: no array for parameter 0 (x); the file "
                                         "has: z (name it 'x' or 'arg0' or 'arr_0')")
    np.savez(tmp_path / "empty.npz")
    assert error(tmp_path / "empty.npz").endswith("the file has: no arrays (name it 'x' or 'arg0' or 'arr_0')")
    arg0 = TensorSpec((2,), "f32", "float32", "arg0")
    assert error(tmp_path / "z.npz", [arg0]).endswith("the file has: z (name it 'arg0' or 'arr_0')")  # no name twice
    np.savez(tmp_path / "extra.npz", x=np.zeros(2, np.float32), arg1=np.int32(3), extra=np.zeros(1),
             more=np.zeros(1))
    assert error(tmp_path / "extra.npz") == (f"error: {tmp_path / 'extra.npz'}: arrays 'extra', 'more' match no "
                                             "parameter of @main (x, y)")
    np.savez(tmp_path / "one_extra.npz", np.zeros(2, np.float32), np.int32(3), np.zeros(1))
    assert error(tmp_path / "one_extra.npz") == (f"error: {tmp_path / 'one_extra.npz'}: array 'arr_2' matches no "
                                                 "parameter of @main (x, y)")
    np.savez(tmp_path / "ok.npz", np.zeros(2, np.float32), y=np.int32(3))
    got = inputs_from_npz(str(tmp_path / "ok.npz"), [x, y])
    assert [a.tolist() for a in got] == [[0.0, 0.0], 3] and [a.dtype for a in got] == [np.float32, np.int32]


def test_run_module_invalid_inputs_are_invalid_not_failed(tmp_path):
    """An unknown reference or platform, a missing --inputs file or dynamic shapes: status invalid,
    with the error's message (no 'error: ' prefix)."""
    path, m = _loaded(tmp_path, "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %0 = stablehlo.negate %x : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    for options, message in [
            (run.RunOptions(reference="bogus"), "unknown reference 'bogus' (interpreter, cpu, none)"),
            (run.RunOptions(platform="tpu"), "unknown platform 'tpu' (cpu or cuda)"),
            (run.RunOptions(inputs_npz=str(tmp_path / "none.npz")), f"{tmp_path / 'none.npz'}: no such file")]:
        r = run.run_module(m, "m", str(path), options)
        assert (r.status, r.message, r.xla_passes) == ("invalid", message, None)
    dyn, m = _loaded(tmp_path, "func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n"
                     "  return %x : tensor<?xf32>\n}\n", "dyn.mlir")
    r = run.run_module(m, "dyn", str(dyn), run.RunOptions())
    assert r.status == "invalid" and r.message.startswith("cannot run a module with dynamic shapes")


def test_run_module_keeps_inputs_outputs_and_reference_when_asked(tmp_path):
    """keep_outputs returns inputs, outputs and the reference's; reference none: status ran, no
    reference run, no error measured."""
    path, m = _loaded(tmp_path, "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %0 = stablehlo.negate %x : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    r = run.run_module(m, "m", str(path), run.RunOptions(reference="cpu", keep_outputs=True, seed=2))
    assert (r.status, r.message, r.inputs_note, r.max_error) == ("ok", "", "random (seed 2)", 0.0)
    [x], [out], [ref] = r.inputs, r.outputs, r.reference_outputs
    np.testing.assert_array_equal(out, -x)
    np.testing.assert_array_equal(ref, -x)
    assert r.compile_ms > 0 and r.run_ms > 0 and r.reference_ms > 0
    plain = run.run_module(m, "m", str(path), run.RunOptions(reference="cpu"))
    assert (plain.inputs, plain.outputs, plain.reference_outputs, plain.xla_passes) == (None, None, None, None)
    ran = run.run_module(m, "m", str(path), run.RunOptions(reference="none", keep_outputs=True))
    assert (ran.status, ran.message, ran.max_error, ran.reference_ms, ran.reference_outputs) == \
        ("ran", "", None, None, None)
    assert ran.outputs is not None and ran.passed


def test_pass_timing_runs_for_modules_that_ran_and_a_failure_is_noted(tmp_path, monkeypatch):
    """--timing compiles once more, instrumented, on the run's platform and flags, for a module that
    ran (not an invalid one); when that fails the run's result stands and the message says why."""
    from types import SimpleNamespace

    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.xla import instrument

    asked = []

    def timed(module, name, options, instrumentation):
        asked.append((name, options.platform, options.xla_flags, instrumentation.timing))
        if name == "broken":
            raise DriverError("no timing here")
        return SimpleNamespace(calls=None)

    monkeypatch.setattr(instrument, "compile", timed)
    path, m = _loaded(tmp_path, "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  return %x : tensor<4xf32>\n}\n")
    flags = (("xla_cpu_enable_fast_math", False),)
    r = run.run_module(m, "m", str(path), run.RunOptions(reference="none", timing=True, xla_flags=flags))
    assert (r.status, r.message, r.xla_passes) == ("ran", "", [])
    assert asked == [("m", "cpu", flags, True)]
    r = run.run_module(m, "broken", str(path), run.RunOptions(reference="none", timing=True))
    assert (r.status, r.message, r.xla_passes) == ("ran", " (no pass timing: no timing here)", None)
    checks_path, checks_module = _loaded(tmp_path, _TWO_CHECKS, "checks.mlir")
    r = run.run_module(checks_module, "broken", str(checks_path), run.RunOptions(timing=True))
    assert (r.status, r.message) == ("check-failed", "1/2 checks passed (no pass timing: no timing here)")
    r = run.run_module(m, "m", str(path), run.RunOptions(platform="tpu", timing=True))
    assert (r.status, r.message, r.xla_passes) == ("invalid", "unknown platform 'tpu' (cpu or cuda)", None)
    r = run.run_module(m, "m", str(path), run.RunOptions(reference="none"))
    assert r.xla_passes is None
    assert len(asked) == 3


def test_run_xla_runs_at_least_once_and_compare_all_counts_outputs(monkeypatch):
    """iterations below 1 still run once; an output count that differs from the reference's is a mismatch."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    module = inputs.parse_mlir("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                               "  %0 = stablehlo.negate %x : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
                               "m.mlir")
    runs = _count_executes(monkeypatch)
    for iterations, times in [(0, 1), (1, 1), (3, 3)]:
        runs.clear()
        with _jaxlib.ir_context():
            outs, compile_ms, run_ms = engine.run_xla(module, [np.ones(4, np.float32)], "cpu", iterations)
        assert [o.tolist() for o in outs] == [[-1.0] * 4] and compile_ms > 0 and run_ms > 0
        assert len(runs) == times, iterations
    report = run.ModuleReport("m", "m.mlir")
    report.judge(engine.compare_outputs([np.ones(2), np.ones(2)], [np.ones(2)], None, None))
    assert (report.status, report.message) == ("mismatch", "2 outputs, reference has 1")
    report = run.ModuleReport("m", "m.mlir")
    report.judge(engine.compare_outputs([np.ones(2), np.array([1.0, 1.5]), np.array([3, 4], np.int32)],
                                        [np.ones(2), np.ones(2), np.array([3, 5], np.int32)], None, None))
    assert (report.status, report.message, report.max_error) == \
        ("mismatch", "output 1: 1/2 differ; output 2: 1/2 differ", 1.0)
    assert [m.output for m in report.mismatches] == [1, 2]


_ONE_CHECK = """func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.add %a, %a : tensor<2xf32>
  check.expect_eq_const %b, dense<[2.0, 4.0]> : tensor<2xf32>
  return
}
"""
_TWO_CHECKS = """func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = stablehlo.constant dense<[3.0, 5.0]> : tensor<2xf32>
  %b = stablehlo.add %a, %c : tensor<2xf32>
  check.expect_eq_const %b, dense<[4.0, 7.0]> : tensor<2xf32>
  check.expect_eq_const %b, dense<[4.0, 8.0]> : tensor<2xf32>
  return
}
"""
_CHECK_AND_PARAM = """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.add %a, %a : tensor<2xf32>
  check.expect_eq_const %b, dense<[2.0, 4.0]> : tensor<2xf32>
  %y = stablehlo.add %x, %a : tensor<2xf32>
  return %y : tensor<2xf32>
}
"""


@pytest.mark.parametrize("text, fold, status, message, note", [
    (_ONE_CHECK, False, "ok", "1/1 checks passed", "1 constant fed as runtime parameters"),
    (_TWO_CHECKS, False, "check-failed", "1/2 checks passed", "2 constants fed as runtime parameters"),
    (_TWO_CHECKS, True, "check-failed", "1/2 checks passed", "constants folded by XLA (--fold-constants)"),
    (_CHECK_AND_PARAM, False, "ok", "1/1 checks passed", "1 constant fed as runtime parameters; random (seed 4)"),
])
def test_check_files_report_status_message_and_how_values_were_fed(tmp_path, text, fold, status, message, note):
    """A self-checking module: passed/total checks, each check's verdict, how constants were fed
    (count, pluralized, or folded) and, with parameters, how those were made."""
    path, m = _loaded(tmp_path, text)
    r = run.run_module(m, "m", str(path), run.RunOptions(fold_constants=fold, seed=4, keep_outputs=True))
    assert (r.status, r.message, r.inputs_note) == (status, message, note)
    assert [c.passed for c in r.checks] == [True] * (text.count("expect_eq_const") - (status != "ok")) + \
        [False] * (status != "ok")
    assert r.checked_values == ("folded" if fold else "compiled")
    if text is _CHECK_AND_PARAM:
        x = make_inputs(m, seed=4)[0][0]
        [out] = r.outputs
        np.testing.assert_array_equal(out, x + np.array([1.0, 2.0], np.float32))
    else:
        assert r.outputs == []


@pytest.mark.parametrize("loc", ["mymax", "-mymax"])
def test_bisect_location_of_a_named_op_is_its_name(tmp_path, loc):
    """A diverging op with a name location, loc("mymax"), is reported at that name, not a file position
    (only '-:LINE:COL', this module's own text, becomes the file's name)."""
    t = "tensor<8xf32>"
    path, m = _loaded(tmp_path, f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
                      f"  %a = stablehlo.add %x, %x : {t}\n"
                      f'  %m = stablehlo.maximum %a, %y : {t} loc("{loc}")\n'
                      f"  return %m : {t}\n}}\n")
    npz = tmp_path / "in.npz"
    np.savez(npz, arg0=np.arange(1, 9, dtype=np.float32), arg1=np.full(8, np.nan, np.float32))
    options = run.RunOptions(reference="cpu", bisect=True, inputs_npz=str(npz),
                             xla_flags=(("xla_cpu_enable_fast_min_max", True),))
    r = run.run_module(m, "m", str(path), options)
    assert r.status == "mismatch" and r.bisect is not None
    assert (r.bisect.location, r.bisect.operand_shapes) == (loc, [t, t])
    assert r.bisect.op.startswith("%1 = stablehlo.maximum %0, %arg1")


def test_loc_text_of_each_location_kind():
    """File positions print as FILE:LINE:COL (the first one, inside names and call sites too), a
    name location as its name, anything else as MLIR prints it."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        file = ir.Location.file("a.py", 3, 4)
        assert run._loc_text(file) == "a.py:3:4"
        assert run._loc_text(ir.Location.name("foo")) == "foo"
        assert run._loc_text(ir.Location.name("n", ir.Location.file("b.py", 5, 6))) == "b.py:5:6"
        assert run._loc_text(ir.Location.callsite(ir.Location.file("c.py", 7, 8), [file])) == "c.py:7:8"
        assert run._loc_text(ir.Location.unknown()) == "loc(unknown)"


def test_require_devices_checks_cuda_only():
    """Only cuda needs devices found up front: cpu always passes; cuda without a GPU is NoGpu now."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import NoGpu

    assert engine.require_devices("cpu") is None
    try:
        _jaxlib.cuda_devices()
    except NoGpu:
        with pytest.raises(NoGpu):
            engine.require_devices("cuda")
    else:
        assert engine.require_devices("cuda") is None


def test_devices_are_the_first_of_the_platform(monkeypatch):
    """One device to run on: the first CPU, or the first GPU the CUDA plugin lists; another platform
    is an input error."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import InputError

    assert engine.devices("cpu") == _jaxlib.cpu_devices()[:1] and len(engine.devices("cpu")) == 1
    monkeypatch.setattr(_jaxlib, "cuda_devices", lambda: ["gpu0", "gpu1"])
    assert engine.devices("cuda") == ["gpu0"]
    with pytest.raises(InputError, match="unknown platform 'rocm'"):
        engine.devices("rocm")


def test_run_in_helper_runs_bytecode_once_and_returns_the_outputs(monkeypatch):
    """The helper's entry point (pass bisection): a module given as bytecode, executed once, its outputs."""
    from mlirhlo_driver.ir import emit

    module = inputs.parse_mlir("func.func @main(%x: tensor<3xi32>) -> tensor<3xi32> {\n"
                               "  %0 = stablehlo.add %x, %x : tensor<3xi32>\n  return %0 : tensor<3xi32>\n}\n",
                               "m.mlir")
    runs = _count_executes(monkeypatch)
    outs = engine.run_in_helper(emit.bytecode(module), [np.array([1, 2, 3], np.int32)], "cpu", ())
    assert [o.tolist() for o in outs] == [[2, 4, 6]] and len(runs) == 1


def test_interpreter_carries_only_the_types_that_need_it(tmp_path):
    """A module mixing bf16/complex (carried as integers/pairs) with f32/i32 (passed as they are)
    runs on the interpreter with every value intact."""
    import ml_dtypes

    path, m = _loaded(tmp_path, (
        "func.func @main(%a: tensor<3xbf16>, %b: tensor<3xf32>, %c: tensor<2xcomplex<f32>>, %d: tensor<2xi32>)"
        " -> (tensor<3xf32>, tensor<3xbf16>, tensor<2xi32>, tensor<2xcomplex<f32>>) {\n"
        "  %0 = stablehlo.add %b, %b : tensor<3xf32>\n"
        "  %1 = stablehlo.add %a, %a : tensor<3xbf16>\n"
        "  %2 = stablehlo.add %d, %d : tensor<2xi32>\n"
        "  return %0, %1, %2, %c : tensor<3xf32>, tensor<3xbf16>, tensor<2xi32>, tensor<2xcomplex<f32>>\n}\n"))
    a = np.array([1.5, -2.0, 0.25], ml_dtypes.bfloat16)
    b = np.array([1.0, 2.0, 3.0], np.float32)
    c = np.array([1 + 2j, -3 - 4j], np.complex64)
    d = np.array([5, -6], np.int32)
    outs, _ = engine.run_interpreter(m, [a, b, c, d])
    assert [o.dtype for o in outs] == [np.float32, a.dtype, np.int32, np.complex64]
    assert [o.tolist() for o in outs] == [[2.0, 4.0, 6.0], (a + a).tolist(), [10, -12], c.tolist()]


def test_bisect_passes_matches_outputs_against_the_reference(tmp_path, monkeypatch):
    """--bisect-passes runs only on a mismatch; a trial 'matches' when it has the reference's outputs,
    as many, each within tolerance."""
    from mlirhlo_driver.execute import pass_bisect

    found = []

    def find(module, name, arrays, options, trial, matching):
        found.append(matching)
        return "found"

    monkeypatch.setattr(pass_bisect, "find", find)
    t = "tensor<8xf32>"
    path, m = _loaded(tmp_path, f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
                      f"  %m = stablehlo.maximum %x, %y : {t}\n  return %m : {t}\n}}\n")
    npz = tmp_path / "in.npz"
    x = np.arange(1, 9, dtype=np.float32)
    np.savez(npz, arg0=x, arg1=np.full(8, np.nan, np.float32))
    options = run.RunOptions(reference="cpu", bisect_passes=True, inputs_npz=str(npz),
                             xla_flags=(("xla_cpu_enable_fast_min_max", True),))
    r = run.run_module(m, "m", str(path), options)
    assert (r.status, r.pass_bisect) == ("mismatch", "found")
    [matching] = found
    nan = np.full(8, np.nan, np.float32)
    assert matching([nan]) and not matching([x]) and not matching([nan, nan]) and not matching([])
    assert not matching([np.where(np.arange(8) == 7, 1.0, nan).astype(np.float32)])
    ok = run.run_module(m, "m", str(path), run.RunOptions(reference="cpu", bisect_passes=True, inputs_npz=str(npz)))
    assert (ok.status, ok.pass_bisect, len(found)) == ("ok", None, 1)


def test_summary_table_prints_module_names_as_written(capsys):
    """The summary of several modules names each as its file does: '[..]' and ':ok:' in a
    name are not rich markup or emoji codes."""
    from mlirhlo_driver.batch.run_report import print_summary_table

    reports = [run.ModuleReport("m[1]", "m[1].hlo", "ok", compile_ms=1.0, run_ms=0.5),
               run.ModuleReport("a:ok:[/b]", "a.mlir", "mismatch", max_error=0.25)]
    print_summary_table(reports)
    out = capsys.readouterr().out
    assert "1/2 modules passed" in out
    assert "│ m[1]      │ ok       │" in out and "│ a:ok:[/b] │ mismatch │      0.25 │" in out


class _FakeModuleOp:
    """What pass_bisect.find needs of a module: its bytecode."""

    def __init__(self, data=b"MLIR-bytes"):
        self.operation = self
        self.data = data

    def write_bytecode(self, buf):
        buf.write(self.data)


def _pass_bisect_setup(monkeypatch, calls, culprit, user_flags=(), fail=()):
    """pass_bisect.find over a made-up pass log: a trial matches when every pass of ``culprit`` is
    disabled; a trial whose disabled set includes a pass of ``fail`` dies (a DriverError)."""
    from types import SimpleNamespace

    from mlirhlo_driver._native import isolate
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute import pass_bisect
    from mlirhlo_driver.xla import backend, pass_log

    seen = {"trials": [], "logged": [], "around": []}

    def compile_logged(module, name, target, level, **kw):
        seen["logged"].append((name, target.platform, target.xla_flags, level, kw))
        return SimpleNamespace(pass_calls=calls)

    def call(fn, args, **kw):
        bytecode, arrays, platform, flags = args
        disabled = dict(flags)["xla_disable_hlo_passes"].split(",")
        seen["trials"].append(disabled)
        assert (fn, bytecode, platform, kw["what"]) == ("trial", b"MLIR-bytes", "cpu", "XLA with passes disabled")
        if any(set(f) == set(disabled) for f in fail):
            raise DriverError("the compile died")
        return ["match"] if set(culprit) <= set(disabled) else ["differ"]

    monkeypatch.setattr(backend, "compile_logged", compile_logged)
    monkeypatch.setattr(isolate, "call", call)
    monkeypatch.setattr(pass_bisect, "_around",
                        lambda module, name, target, p: seen["around"].append(p) or ("B", "A", "pipe"))
    options = run.RunOptions(platform="cpu", xla_flags=user_flags)
    result = pass_bisect.find(_FakeModuleOp(), "m", [np.zeros(2)], options, trial="trial",
                              matching=lambda outs: outs == ["match"])
    assert seen["logged"] == [("m", "cpu", user_flags, pass_log.TIMES_LEVEL,
                               {"keep_going": True, "dumps": (backend.HLO_TEXT,)})]
    return result, seen


def _pass_call(index, name, pipeline="simp", is_pipeline=False, skipped=False):
    from mlirhlo_driver.xla.pass_log import PassCall

    return PassCall("m", pipeline, name, 1, None, is_pipeline, skipped, index)


def _eight_passes():
    # logged out of order: candidates follow the log's index, each pass once; pipelines and
    # skipped runs are not candidates
    calls = [_pass_call(i, n) for i, n in enumerate("abcdefgh")]
    calls += [_pass_call(8, "c", "fusion"), _pass_call(9, "c", "simp"), _pass_call(10, "nested", is_pipeline=True),
              _pass_call(11, "gone", skipped=True)]
    return list(reversed(calls))


def test_pass_bisect_halves_down_to_one_culprit_with_a_trial_per_new_set(monkeypatch):
    """One culprit: all passes disabled, then halves (the first half first) down to the one pass,
    each set tried once; its pipelines in the log's order, once each; the HLO around it asked for."""
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["c"])
    assert seen["trials"] == [list("abcdefgh"), list("abcd"), list("ab"), list("cd"), ["c"]]
    assert (result.passes, result.candidates, result.trials, result.confirmed) == (["c"], 8, 5, True)
    assert result.pipelines == {"c": ["simp", "fusion"]}
    assert (result.before, result.after, result.dump_pipeline, result.note) == ("B", "A", "pipe", "")
    assert seen["around"] == ["c"] and result.already_disabled == []
    last, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["h"])
    assert seen["trials"] == [list("abcdefgh"), list("abcd"), list("efgh"), list("ef"), list("gh"), ["g"], ["h"]]
    assert (last.passes, last.trials, last.confirmed, last.pipelines) == (["h"], 7, True, {"h": ["simp"]})


def test_pass_bisect_culprit_spread_over_both_halves_leaves_one_pass_out_at_a_time(monkeypatch):
    """A culprit that needs passes of both halves: one pass left out at a time gives the smallest
    set, confirmed from the cache (no trial twice); the HLO shown is around its first pass."""
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["b", "g"])
    assert seen["trials"][:3] == [list("abcdefgh"), list("abcd"), list("efgh")]
    assert seen["trials"][3:] == [list("bcdefgh"), list("cdefgh"), list("bdefgh"), list("befgh"), list("bfgh"),
                                  list("bgh"), ["b", "h"], ["b", "g"]]
    assert (result.passes, result.trials, result.confirmed) == (["b", "g"], 11, True)
    assert result.pipelines == {"b": ["simp"], "g": ["simp"]} and seen["around"] == ["b"]


def test_pass_bisect_keeps_the_users_disabled_passes_out_of_the_candidates(monkeypatch):
    """Passes the user's own --xla_disable_hlo_passes names are no candidates, and stay disabled
    in every trial (first) and in the flag that makes the module match."""
    user = (("xla_cpu_enable_fast_math", True), ("xla_disable_hlo_passes", "a, e,"))
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["d"], user_flags=user)
    assert seen["trials"][0] == ["a", "e", "b", "c", "d", "f", "g", "h"]
    assert all(t[:2] == ["a", "e"] for t in seen["trials"])
    assert (result.passes, result.candidates, result.already_disabled) == (["d"], 6, ["a", "e"])
    assert result.flag == "--xla_disable_hlo_passes=a,e,d"
    assert result.row() == {"passes": ["d"], "pipelines": {"d": ["simp"]}, "candidates": 6, "trials": 6,
                            "confirmed": True, "flag": "--xla_disable_hlo_passes=a,e,d", "note": ""}


def test_pass_bisect_finds_nothing_when_disabling_every_pass_does_not_match(monkeypatch):
    """No HLO pass explains it: one trial (or none without candidates), a note saying so, no passes."""
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["not-a-pass"])
    assert seen["trials"] == [list("abcdefgh")] and seen["around"] == []
    assert (result.passes, result.candidates, result.trials, result.confirmed) == ([], 8, 1, False)
    assert result.note == ("disabling all 8 HLO passes that ran does not make it match: the difference "
                           "comes from XLA's codegen (or the reference), not from one HLO pass")
    assert result.row()["flag"] is None
    none, seen = _pass_bisect_setup(monkeypatch, [_pass_call(0, "p", is_pipeline=True)], ["p"])
    assert seen["trials"] == [] and (none.passes, none.candidates, none.trials) == ([], 0, 0)
    assert none.note.startswith("disabling all 0 HLO passes that ran does not make it match")


def test_pass_bisect_counts_a_trial_whose_compile_dies_as_no_match(monkeypatch):
    """A trial whose compile fails without its passes (a DriverError from the helper) does not
    match: the search goes on, one pass left out at a time."""
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["f"], fail=[["e", "f"]])
    assert seen["trials"] == [list("abcdefgh"), list("abcd"), list("efgh"), list("ef"), list("gh"), list("fgh"),
                              list("fh"), ["f"]]
    assert (result.passes, result.trials, result.confirmed) == (["f"], 8, True)


def test_pass_bisect_disabled_pass_lists_from_a_string_or_a_list():
    """The user's disabled passes: a comma list (blanks dropped) or a list; merged with new ones,
    each once, the user's first, into a sorted flag tuple."""
    from mlirhlo_driver.execute import pass_bisect

    assert pass_bisect._disabled(()) == [] and pass_bisect._disabled((("xla_disable_hlo_passes", ""),)) == []
    assert pass_bisect._disabled((("xla_disable_hlo_passes", " cse , ,dce"),)) == ["cse", "dce"]
    assert pass_bisect._disabled((("xla_disable_hlo_passes", ["cse", " ", "dce "]),)) == ["cse", "dce"]
    assert pass_bisect._disabled((("xla_disable_hlo_passes", ("x",)),)) == ["x"]
    flags = (("xla_disable_hlo_passes", "cse,dce"), ("b_flag", 1))
    assert pass_bisect._with_disabled(flags, ["dce", "algsimp"]) == (
        ("b_flag", 1), ("xla_disable_hlo_passes", "cse,dce,algsimp"))
    assert pass_bisect._with_disabled((("z", 2),), ["p"]) == (("xla_disable_hlo_passes", "p"), ("z", 2))


def _spmd_check_error(launch_fields, **spmd_fields):
    from mlirhlo_driver.commands import spmd_run as spmd_launch
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute import spmd

    launch = spmd_launch.SpmdLaunch("m.hlo", **launch_fields)
    try:
        spmd_launch.check(launch, spmd.SpmdOptions(**spmd_fields))
    except DriverError as e:
        return e.format()
    return None


@pytest.mark.parametrize("launch, spmd_fields, error", [
    (dict(), dict(), None),
    (dict(launch_local=2), dict(num_partitions=2), None),
    (dict(launch_local=1), dict(), "error: --launch-local needs at least 2 processes"),
    (dict(launch_local=0), dict(), "error: --launch-local needs at least 2 processes"),
    (dict(launch_local=2, num_processes=2), dict(num_partitions=2),
     "error: give --launch-local N, or --num-processes/--process-id/--coordinator, not both"),
    (dict(launch_local=2, process_id=0), dict(num_partitions=2),
     "error: give --launch-local N, or --num-processes/--process-id/--coordinator, not both"),
    (dict(launch_local=2, coordinator="h:1"), dict(num_partitions=2),
     "error: give --launch-local N, or --num-processes/--process-id/--coordinator, not both"),
    (dict(num_processes=2, process_id=0, coordinator="h:1"), dict(num_partitions=2), None),
    (dict(num_processes=2, process_id=1, coordinator="h:1"), dict(num_partitions=2), None),
    (dict(num_processes=2, process_id=2, coordinator="h:1"), dict(num_partitions=2),
     "error: --process-id must be 0 to 1"),
    (dict(num_processes=3, process_id=-1, coordinator="h:1"), dict(num_partitions=3),
     "error: --process-id must be 0 to 2"),
    (dict(num_processes=2, coordinator="h:1"), dict(num_partitions=2),
     "error: --num-processes needs --process-id and --coordinator HOST:PORT"),
    (dict(num_processes=2, process_id=0), dict(num_partitions=2),
     "error: --num-processes needs --process-id and --coordinator HOST:PORT"),
    (dict(num_processes=0), dict(), "error: --num-processes must be >= 1"),
    (dict(process_id=0), dict(), "error: --process-id and --coordinator need --num-processes > 1"),
    (dict(coordinator="h:1"), dict(), "error: --process-id and --coordinator need --num-processes > 1"),
    (dict(launch_local=2), dict(num_partitions=3), "error: 3 devices cannot be split evenly over 2 processes"),
    (dict(num_processes=4, process_id=0, coordinator="h:1"), dict(num_replicas=6),
     "error: 6 devices cannot be split evenly over 4 processes"),
    (dict(), dict(num_partitions=3), None),
    (dict(timeout=0.0), dict(), "error: --timeout must be > 0"),
    (dict(timeout=-1.0), dict(), "error: --timeout must be > 0"),
    (dict(timeout=0.001), dict(), None),
])
def test_spmd_launch_checks_the_process_layout(launch, spmd_fields, error):
    """spmd-run's process layout: --launch-local N >= 2 alone, or --num-processes > 1 with a
    process id in range and a coordinator, devices split evenly, a positive timeout."""
    assert _spmd_check_error(launch, **spmd_fields) == error


def test_spmd_launch_defaults_and_output_path_check(tmp_path):
    """One process, a 300 s timeout, nothing dumped by default; --dump-output is refused up front
    when it names a directory."""
    from mlirhlo_driver.commands import spmd_run as spmd_launch

    launch = spmd_launch.SpmdLaunch("m.hlo")
    assert (launch.num_processes, launch.process_id, launch.coordinator, launch.launch_local,
            launch.timeout, launch.dump_output, launch.arg_sharding) == (1, None, None, None, 300.0, None, ())
    assert _spmd_check_error(dict(dump_output=str(tmp_path))) == \
        f"error: {tmp_path}: is a directory; expected an output file name"
    assert _spmd_check_error(dict(dump_output=str(tmp_path / "out.npz"))) is None


@pytest.mark.parametrize("value, want", [
    ("h:1", ("h", 1)), ("10.0.0.1:65535", ("10.0.0.1", 65535)), ("[::1]:80", ("[::1]", 80)),
    ("h:0", "port 0 is not 1-65535"), ("h:65536", "port 65536 is not 1-65535"),
    ("h:99999", "port 99999 is not 1-65535"), ("h:123456", "'h:123456' is not HOST:PORT, e.g. 10.0.0.1:1234"),
    ("h", "'h' is not HOST:PORT, e.g. 10.0.0.1:1234"), (":80", "':80' is not HOST:PORT, e.g. 10.0.0.1:1234"),
    ("a b:1", "'a b:1' is not HOST:PORT, e.g. 10.0.0.1:1234"),
])
def test_spmd_coordinator_host_port(value, want):
    """--coordinator HOST:PORT: a port of 1 to 5 digits in 1-65535; a bracketed IPv6 host."""
    from mlirhlo_driver.commands.spmd_run import check_host_port
    from mlirhlo_driver.errors import DriverError

    if isinstance(want, tuple):
        assert check_host_port(value) == want
    else:
        with pytest.raises(DriverError) as e:
            check_host_port(value)
        assert e.value.format() == f"error: {want}"


def test_spmd_options_from_the_command_line(monkeypatch):
    """spmd_options: the partitioner lower-cased, 'random' arguments unless asked, the flags sorted;
    --inputs with --argument-mode, or --arg-sharding where XLA does not partition, refused."""
    from mlirhlo_driver.commands.spmd_run import spmd_options
    from mlirhlo_driver.errors import DriverError

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    flags = {"xla_cpu_enable_fast_math": True, "xla_backend_optimization_level": 1}
    o = spmd_options(flags, partitioner="GSPMD", num_partitions=2, arg_sharding=("0={replicated}",))
    assert (o.partitioner, o.argument_mode, o.inputs_npz, o.num_partitions) == ("gspmd", "random", None, 2)
    assert o.xla_flags == (("xla_backend_optimization_level", 1), ("xla_cpu_enable_fast_math", True))
    o = spmd_options({}, argument_mode="zeros")
    assert (o.partitioner, o.argument_mode, o.xla_flags) == (None, "zeros", ())
    assert spmd_options({}, inputs_npz="x.npz").inputs_npz == "x.npz"
    for kwargs, message in [
        (dict(inputs_npz="x.npz", argument_mode="zeros"), "error: give --inputs or --argument-mode, not both"),
        (dict(arg_sharding=("0={replicated}",), num_partitions=2, is_spmd_partitioned_module=True),
         "error: --arg-sharding is for modules that XLA partitions, not already partitioned ones"),
        (dict(arg_sharding=("0={replicated}",)), "error: --arg-sharding needs --num-partitions > 1"),
        (dict(num_repeats=0), None),
    ]:
        with pytest.raises(DriverError) as e:
            spmd_options({}, **kwargs)
        if message:
            assert e.value.format() == message


def test_spmd_with_shardings_parses_each_spec_and_keeps_options_without_any():
    """--arg-sharding PARAM=SHARDING specs become (parameter, braced sharding) pairs; none: the
    options unchanged."""
    from mlirhlo_driver.commands.spmd_run import with_shardings
    from mlirhlo_driver.execute import spmd

    o = spmd.SpmdOptions(num_partitions=4)
    assert with_shardings(o, ()) is o
    assert with_shardings(o, ["1=devices=[4,1]<=[4]", "0={replicated}"]).arg_shardings == (
        (1, "{devices=[4,1]<=[4]}"), (0, "{replicated}"))


def test_spmd_load_one_refuses_more_than_one_module(tmp_path, monkeypatch):
    """spmd-run takes exactly one module: a directory of two files, or a file of two modules, is refused."""
    from mlirhlo_driver.commands.spmd_run import load_one
    from mlirhlo_driver.errors import DriverError

    for n in "ab":
        _module(tmp_path, "HloModule m\n\nENTRY main {\n  ROOT c = f32[] constant(1)\n}\n", f"{n}.hlo")
    with pytest.raises(DriverError) as e:
        load_one(str(tmp_path), None, None)
    assert e.value.format() == f"error: spmd-run takes one module; {tmp_path} gives 2"
    one = load_one(str(tmp_path / "a.hlo"), None, None)
    assert engine.signature(one.module)[1][0].dtype == "float32"
    from mlirhlo_driver.core import program

    monkeypatch.setattr(program, "programs", lambda specs, options: [one, one])
    with pytest.raises(DriverError) as e:
        load_one(str(tmp_path / "a.hlo"), None, None)
    assert e.value.format() == f"error: spmd-run takes one module; {tmp_path / 'a.hlo'} gives 2"


def test_spmd_run_in_this_process_for_one_process_else_workers(monkeypatch):
    """run: the layout checked and --arg-sharding parsed, then one process runs here; several are
    started as workers once the module is checked here (spmd.prepare); their exit status is returned."""
    from mlirhlo_driver.commands import spmd_run as spmd_launch
    from mlirhlo_driver.execute import spmd

    seen = []
    monkeypatch.setattr(spmd_launch, "_in_process", lambda launch, o: seen.append(("here", o.arg_shardings)) or 3)
    monkeypatch.setattr(spmd_launch, "launch_processes",
                        lambda launch, o: seen.append(("workers", o.arg_shardings)) or 4)
    monkeypatch.setattr(spmd_launch, "load_one", lambda *a: seen.append(("load", a)) or "loaded")
    monkeypatch.setattr(spmd, "prepare", lambda loaded, o: seen.append(("prepare", loaded)))
    o = spmd.SpmdOptions(num_partitions=2)
    assert spmd_launch.run(spmd_launch.SpmdLaunch("m.hlo", arg_sharding=("0={replicated}",)), o) == 3
    assert seen == [("here", ((0, "{replicated}"),))]
    seen.clear()
    assert spmd_launch.run(spmd_launch.SpmdLaunch("m.hlo", "hlo", "f32[2]", launch_local=2), o) == 4
    assert seen == [("load", ("m.hlo", "hlo", "f32[2]")), ("prepare", "loaded"), ("workers", ())]
    seen.clear()
    many = spmd_launch.SpmdLaunch("m.hlo", num_processes=2, process_id=1, coordinator="h:1")
    assert spmd_launch.run(many, o) == 4 and [s[0] for s in seen] == ["load", "prepare", "workers"]
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError):
        spmd_launch.run(spmd_launch.SpmdLaunch("m.hlo", launch_local=1), o)


def test_spmd_launch_processes_local_or_this_hosts_one(monkeypatch, capsys):
    """--launch-local N: N workers (ids 0..N-1) on a free 127.0.0.1 port, each noted with its pid,
    their output prefixed; --num-processes: this host's one worker, unprefixed."""
    from mlirhlo_driver.commands import spmd_run as spmd_launch
    from mlirhlo_driver.execute import spmd

    seen = []

    def worker_configs(source, input_format, args, options, **kw):
        seen.append((source, input_format, args, kw))
        return ["cfgs"]

    def supervise(cfgs, *, prefixed, on_start=None):
        seen.append((cfgs, prefixed))
        if on_start:
            on_start(1, 4242)
        return 5

    monkeypatch.setattr(spmd, "free_port", lambda: 6123)
    monkeypatch.setattr(spmd, "worker_configs", worker_configs)
    monkeypatch.setattr(spmd, "supervise", supervise)
    o = spmd.SpmdOptions(num_partitions=3)
    local = spmd_launch.SpmdLaunch("m.hlo", "hlo", None, launch_local=3, timeout=9.0, dump_output="o.npz")
    assert spmd_launch.launch_processes(local, o, what="workers") == 5
    assert seen == [("m.hlo", "hlo", None, dict(num_processes=3, process_ids=[0, 1, 2], coordinator="127.0.0.1:6123",
                                                 timeout=9.0, dump_output="o.npz")), (["cfgs"], True)]
    assert capsys.readouterr().err == ("note: 3 workers, coordinator 127.0.0.1:6123\n"
                                       "note: process 1 is pid 4242\n")
    seen.clear()
    one = spmd_launch.SpmdLaunch("m.hlo", num_processes=3, process_id=2, coordinator="h:7")
    assert spmd_launch.launch_processes(one, o) == 5
    assert seen == [("m.hlo", None, None, dict(num_processes=3, process_ids=[2], coordinator="h:7", timeout=300.0,
                                                dump_output=None)), (["cfgs"], False)]
    seen.clear()
    unnamed = spmd_launch.SpmdLaunch("m.hlo", num_processes=3)
    spmd_launch.launch_processes(unnamed, o)
    assert seen[0][3]["process_ids"] == [0] and seen[0][3]["coordinator"] == ""
    assert capsys.readouterr().err == ""


def test_spmd_in_process_prints_the_report_dumps_outputs_and_exits_by_the_match(monkeypatch, capsys, tmp_path):
    """One process: the host devices made first, the report on stdout, the outputs written when
    asked; exit 0 when it matched, 1 when not."""
    from types import SimpleNamespace

    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.commands import spmd_run as spmd_launch
    from mlirhlo_driver.execute import spmd

    seen = []
    passed = [True]
    monkeypatch.setattr(_jaxlib, "ensure_cpu_devices", lambda n: seen.append(("devices", n)))
    monkeypatch.setattr(spmd_launch, "load_one", lambda *a: seen.append(("load", a)) or "loaded")
    monkeypatch.setattr(spmd, "run_in_process",
                        lambda loaded, o: SimpleNamespace(report=SimpleNamespace(passed=passed[0])))
    monkeypatch.setattr(spmd, "format_report", lambda r: "the report")
    monkeypatch.setattr(spmd, "outputs_npz", lambda r: b"npz bytes")
    o = spmd.SpmdOptions(num_partitions=4)
    out = tmp_path / "o.npz"
    assert spmd_launch._in_process(spmd_launch.SpmdLaunch("m.hlo", "hlo", "a", dump_output=str(out)), o) == 0
    assert seen == [("devices", 4), ("load", ("m.hlo", "hlo", "a"))]
    assert capsys.readouterr().out == "the report\n" and out.read_bytes() == b"npz bytes"
    passed[0] = False
    out.unlink()
    assert spmd_launch._in_process(spmd_launch.SpmdLaunch("m.hlo"), o) == 1
    assert not out.exists()


def _full_report():
    """A mismatching report with every part print_run_reports shows."""
    from mlirhlo_driver.xla.pass_log import PassRow

    mm = engine.Mismatch(1, "float32", (2,), 1, 2, 0.5, 0.25, (1,), "2.5", "2.0", examples=[((1,), "2.5", "2.0")])
    value = engine.Mismatch(0, "float32", (2,), 2, 2, 1.0, 1.0, (0,), "1", "0", examples=[((1,), "3", "2")],
                         label="value")
    return run.ModuleReport(
        "m", "dir/m.mlir", "mismatch", "output 1: 1/2 differ", max_error=0.5, compile_ms=12.34, run_ms=0.5678,
        reference_ms=3.21, mismatches=[mm], checks=[engine.CheckResult("expect_eq", True, "m.mlir:3:5", ""),
                                                    engine.CheckResult("expect_close", False, "m.mlir:4:5", "off by 1")],
        bisect=run.BisectResult("%1 = stablehlo.add %a, %b", "m.mlir:2:3", ["tensor<2xf32>", "tensor<2xf32>"], value),
        xla_passes=[PassRow("algsimp", "simp", 2, 1500, True)], inputs_note="zeros",
        checked_values_detail="compiled by XLA",
        kept_constants=[{"location": "m.mlir:1:1", "type": "tensor<2xf32>", "reasons": ["too big", "used twice"]}],
        inputs=[np.array([1 / 3, 2.0], np.float32)], outputs=[np.array([3, 4], np.int32)],
        reference_outputs=[np.array([3, 5], np.int32)])


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
        "  output 1 (float32[2]): 1 of 2 elements differ",
        "    max abs error 0.5, max rel error 0.25",
        "    worst at [1]: got 2.5, expected 2.0",
        "    at [1]: got 2.5, expected 2.0",
        "  bisect: first divergence at m.mlir:2:3: %1 = stablehlo.add %a, %b",
        "    operands: tensor<2xf32>, tensor<2xf32>",
        "    value (float32[2]): 2 of 2 elements differ",
        "      max abs error 1, max rel error 1",
        "      worst at [0]: got 1, expected 0",
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
    bisect = run.BisectResult("op", "l", [], engine.Mismatch(0, "int8", (), 0, 1, 0.0, 0.0, (), "", "", label="value"))
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
    """Several modules: each report, then a table with passed count, max error (3 significant
    digits), compile ms (1 decimal) and run ms (3 decimals), blanks where unknown."""
    from mlirhlo_driver.batch.run_report import print_run_reports

    reports = [run.ModuleReport("one", "one.mlir", "ok", max_error=1.23456e-5, compile_ms=10.06, run_ms=0.12345),
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


def test_summary_table_widens_for_long_module_names(capsys):
    """The table is at least 100 columns wide for its console, and wide enough for the longest name
    plus 60: a long name is never cut or wrapped."""
    from mlirhlo_driver.batch.run_report import print_summary_table

    name = "x" * 90
    print_summary_table([run.ModuleReport(name, "a", "ok", max_error=0.5, compile_ms=1.0, run_ms=2.0),
                         run.ModuleReport("b", "b", "ok")])
    out = capsys.readouterr().out
    assert "2/2 modules passed" in out
    assert any(f"│ {name} │ ok     │       0.5 │        1.0 │  2.000 │" == ln for ln in out.splitlines()), out


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


def _fake_progress(monkeypatch, tty):
    import sys

    import rich.progress

    events = []

    class Progress:
        def __init__(self, console, transient):
            events.append(("new", console.stderr, transient))

        def add_task(self, what, total):
            events.append(("task", what, total))
            return "bar"

        def start(self):
            events.append("start")

        def refresh(self):
            events.append("refresh")

        def advance(self, bar):
            events.append(("advance", bar))

        def stop(self):
            events.append("stop")

    monkeypatch.setattr(rich.progress, "Progress", Progress)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty, raising=False)
    return events


def test_execute_tasks_in_this_process_for_jobs_0_else_in_workers(monkeypatch):
    """--jobs 0 without a scheduler runs each task here, in order; otherwise the workers run them
    (jobs, timeout, scheduler passed on). On a terminal, several tasks draw a progress bar on
    stderr that advances once per report and is stopped, even when a run fails."""
    from mlirhlo_driver.batch import run_pool
    from mlirhlo_driver.batch.run_report import execute_tasks

    seen = []

    def run_task(t, options):
        seen.append(("here", t))
        if t == "boom":
            raise RuntimeError(t)
        return f"report {t}"

    def run_in_workers(tasks, options, *, jobs, timeout, on_done, scheduler):
        seen.append(("workers", tasks, jobs, timeout, scheduler))
        for t in tasks:
            on_done(t)
        return ["w"]

    monkeypatch.setattr(run_pool, "run_task", run_task)
    monkeypatch.setattr(run_pool, "run_in_workers", run_in_workers)
    events = _fake_progress(monkeypatch, tty=True)
    assert execute_tasks(["a", "b"], "opts", 0, None) == ["report a", "report b"]
    assert seen == [("here", "a"), ("here", "b")]
    assert events == [("new", True, True), ("task", "running modules", 2), "start", "refresh",
                      ("advance", "bar"), "refresh", ("advance", "bar"), "refresh", "stop"]
    seen.clear()
    events.clear()
    assert execute_tasks(["a"], "opts", 0, None) == ["report a"] and events == []
    assert execute_tasks(["a", "b", "c"], "opts", 2, 5.0) == ["w"]
    assert seen[-1] == ("workers", ["a", "b", "c"], 2, 5.0, None) and events.count(("advance", "bar")) == 3
    assert execute_tasks(["a"], "opts", 0, None, scheduler="dask:addr") == ["w"]
    assert seen[-1] == ("workers", ["a"], 0, None, "dask:addr")
    events.clear()
    with pytest.raises(RuntimeError):
        execute_tasks(["a", "boom"], "opts", 0, None)
    assert events[-1] == "stop"
    piped = _fake_progress(monkeypatch, tty=False)
    assert execute_tasks(["a", "b"], "opts", 0, None) == ["report a", "report b"] and piped == []


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


def test_pass_bisect_hlo_around_the_first_run_that_changed_the_module(monkeypatch):
    """_around compiles once more with XLA dumping just that pass (its name escaped, keep going past
    a failed compile, HLO text only) and gives the HLO before and after its first run that changed
    the instructions, with that run's pipeline; Nones and '' when no run changed them."""
    from types import SimpleNamespace

    from mlirhlo_driver.execute import pass_bisect
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla import backend

    texts = {"a0": "HloModule m, id=9\nROOT x = f32[] add(p, q)\n",  # an 'after' with no 'before' yet
             "b1": "HloModule m, id=1\nROOT x = f32[] add(p, q)\n", "a1": "HloModule m, id=2\nROOT x = f32[] add(p, q)\n",
             "o2": "HloModule m, id=3\nROOT x = f32[] add(q, p)\n",  # another pass changed it
             # the instructions below the first one changed
             "b3": "HloModule m, id=4\ny = f32[] p\nROOT x = f32[] add(q, p)\n",
             "a3": "HloModule m, id=5\ny = f32[] p\nROOT x = f32[] mul(q, p)\n",
             "b4": "HloModule m, id=6\nROOT x = f32[] mul(q, p)\n", "a4": "HloModule m, id=7\nROOT x = f32[] sub(q, p)\n"}
    dumps = [backend.PassDump(0, "p0", "a.b", "x", "a0"), backend.PassDump(1, "p1", "cse", "a.b", "b1"),
             backend.PassDump(2, "p1", "a.b", "dce", "a1"), backend.PassDump(3, "p2", "dce", "cse", "o2"),
             backend.PassDump(4, "p3", "cse", "a.b", "b3"), backend.PassDump(5, "p3", "a.b", "dce", "a3"),
             backend.PassDump(6, "p4", "cse", "a.b", "b4"), backend.PassDump(7, "p4", "a.b", "dce", "a4")]
    seen = []

    def compile_module(module, name, target, **kw):
        seen.append((module, name, target, kw))
        return SimpleNamespace(files={k: v.encode() for k, v in texts.items()})

    monkeypatch.setattr(backend, "compile_module", compile_module)
    monkeypatch.setattr(backend, "pass_dumps", lambda art: list(dumps))
    target = StageOptions(platform="cpu", xla_flags=(("xla_z", 1), ("xla_a", 2)))
    assert pass_bisect._around("mod", "m", target, "a.b") == (texts["b3"], texts["a3"], "p3")
    [(module, name, used, kw)] = seen
    assert (module, name, kw) == ("mod", "m", {"keep_going": True, "dumps": (backend.HLO_TEXT,)})
    assert used.platform == "cpu" and used.xla_flags == (
        ("xla_a", 2), ("xla_dump_hlo_pass_re", r"^a\.b$"), ("xla_z", 1))
    dumps[:] = dumps[:3]
    assert pass_bisect._around("mod", "m", target, "a.b") == (None, None, "")
    assert pass_bisect._body("HloModule m\n") == "" and pass_bisect._body("one line") == "one line"
    assert pass_bisect._body("HloModule m\na\nb\n") == "a\nb\n"


def test_run_on_one_device_says_a_shard_map_module_needs_its_mesh(cli):
    """shard_map's manual computation runs only on its mesh: `run` (one device) says so in one line
    naming spmd-run, not XLA's "No registered implementation for ... xla.sdy.GlobalToLocalShape"."""
    from tests import sharded_programs

    r = cli("run", sharded_programs.programs(4)["shard_map"]["mlir"], "--jobs", "0")
    assert_one_line_error(r, contains="the module has manual computations (shard_map): they run only on their "
                                      "mesh's devices, not on one (mlirhlo spmd-run FILE --num-partitions N)")
