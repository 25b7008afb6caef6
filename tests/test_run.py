"""mlirhlo run: execute with XLA and compare against a reference."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA, assert_one_line_error

from mlirhlo_driver.execute import run
from mlirhlo_driver.inputs import loader as inputs

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
    mm = run.compare(actual, expected, 0, None, None)
    assert (mm.count, mm.total, mm.worst_index) == (1, 4, (0, 1))
    assert mm.max_abs == pytest.approx(0.5) and mm.max_rel == pytest.approx(0.25)
    assert (mm.actual, mm.expected) == ("2.5", "2.0")
    # NaN vs NaN and equal infinities match; NaN vs number does not
    assert run.compare(np.array([np.inf, np.nan]), np.array([np.inf, np.nan]), 0, 0, 0).count == 0
    assert run.compare(np.array([1.0]), np.array([np.nan]), 0, 0, 0).count == 1
    # integers are exact whatever the tolerance
    assert run.compare(np.array([3], np.int32), np.array([4], np.int32), 0, 1.0, 1.0).count == 1
    # tolerances
    assert run.compare(np.array([1.00001], np.float32), np.array([1.0], np.float32), 0, None, None).count == 0
    assert run.compare(np.array([1.01], np.float32), np.array([1.0], np.float32), 0, None, None).count == 1
    assert run.compare(np.array([1.01], np.float32), np.array([1.0], np.float32), 0, 0.1, 0.0).count == 0


@pytest.mark.parametrize("dtype, unit", [("float64", 1.0), ("complex128", 1j)])
def test_default_tolerance_of_wide_types_is_tight(dtype, unit):
    # f64/c128 results are compared to ~1e-10 relative: a 1e-6 error is a mismatch.
    want = np.array([1.0 + unit], dtype)
    assert run.compare(want * (1 + 1e-6), want, 0, None, None).count == 1
    assert run.compare(want * (1 + 1e-13), want, 0, None, None).count == 0


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
        arrays, note = run.make_inputs(module, run.RunOptions(seed=seed))
        t, i, x, s = arrays
        assert i.min() >= 0 and i.max() <= 9          # row index into 10 rows
        assert (x > 0).all()                          # fed to log
        assert 0 <= int(s) <= 4                       # start of a 2-slice of 6
        seen_i.update(int(v) for v in i.ravel())
        seen_s.add(int(s))
    # The whole valid range is drawn, up to the last row and the last start.
    assert {0, 9} <= seen_i and 4 in seen_s
    assert "index-constrained" in note and "positive-constrained" in note
    wide, _ = run.make_inputs(module, run.RunOptions(large_float_range=True))
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
        _, _, r, c = run.make_inputs(module, run.RunOptions(seed=seed))[0]
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
    params, _ = run.signature(inputs.load(str(mlp))[0].module)
    assert params[0].name.startswith("Arg_")
    arrays = {p.name: np.full(p.shape, 0.5, run.np_dtype(p.dtype)) for p in reversed(params)}
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


def test_iterations_report_median(cli, monkeypatch):
    from mlirhlo_driver._native import jaxlib as _jaxlib

    runs = []
    real = _jaxlib.execute
    monkeypatch.setattr(_jaxlib, "execute", lambda *a, **k: runs.append(1) or real(*a, **k))
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
    run._compare_all(report, got, want, run.RunOptions())
    assert report.status == "ok" and not report.mismatches
    assert report.max_error == pytest.approx(float(np.float32(2.0 + 3e-6) - np.float32(2.0)))


def test_npz_raw_integers_stand_for_types_npz_cannot_name_and_nothing_is_converted(tmp_path):
    """A bf16 / f8 parameter takes raw integers of its width (uint16 for bf16, uint8 or int8 for f8),
    reinterpreted bit for bit; an array of another kind (f16 for bf16, same width) or another width
    is refused, and a type numpy can name (f32) takes no integers at all."""
    import ml_dtypes

    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.execute.run import TensorSpec, _inputs_from_npz

    bf16 = TensorSpec((2,), "bf16", "bfloat16", "x")
    f8 = TensorSpec((2,), "f8E4M3FN", "float8_e4m3fn", "y")
    want = np.array([1.5, -2.0], ml_dtypes.bfloat16)
    path = tmp_path / "ok.npz"
    np.savez(path, x=want.view(np.uint16), y=np.array([0x38, 0xC0], np.uint8))
    got = _inputs_from_npz(str(path), [bf16, f8])
    assert got[0].dtype == ml_dtypes.bfloat16 and got[0].tolist() == want.tolist()
    assert got[1].dtype == ml_dtypes.float8_e4m3fn and got[1].astype(np.float32).tolist() == [1.0, -2.0]
    for bad, spec in [(np.array([1.5, -2.0], np.float16), bf16), (np.array([1, 2], np.uint32), bf16),
                      (np.array([1, 2], np.int32), TensorSpec((2,), "f32", "float32", "x"))]:
        path = tmp_path / "bad.npz"
        np.savez(path, x=bad)
        with pytest.raises(InputError, match=rf"array 'x' is {bad.dtype}, parameter 0 \(x\) is "):
            _inputs_from_npz(str(path), [spec])


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
    (x, p, c), note = run.make_inputs(module, run.RunOptions(seed=0, large_float_range=True))
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
        arrays, note = run.make_inputs(module, run.RunOptions(seed=seed))
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
