"""``mlirhlo run`` as a user runs it: execute with XLA and compare against a reference."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlirhlo_driver.execute import engine
from mlirhlo_driver.inputs import loader as inputs
from tests.conftest import DATA, assert_mentions, assert_one_line_error, count_executes
from tests.e2e.conftest import SMALL, mlirhlo

RUN = DATA / "run"

DUMPS = DATA / "jax_dumps"


def _module(tmp_path, text, name="m.mlir"):
    path = tmp_path / name
    path.write_text(text)
    return path


DTYPES = ["i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f16", "bf16", "f32", "f64",
          "complex<f32>", "complex<f64>", "f8E4M3FN", "f8E5M2"]

SPLIT = SMALL + "// -----\n" + SMALL.replace("stablehlo.add", "stablehlo.bogus") + "// -----\n" + \
    SMALL.replace("stablehlo.add", "stablehlo.multiply")


@pytest.mark.slow
def test_jax_program_dumps_against_the_interpreter_in_workers(cli, tmp_path):
    report = tmp_path / "report.json"
    result = cli("run", DUMPS, "--jobs", "2", "--json", report)
    assert result.code == 0, result.out + result.err
    rows = json.loads(report.read_text())
    assert sorted(r["module"] for r in rows) == [
        "module_attention", "module_conv", "module_gather_scatter", "module_mlp_step", "module_scan",
        "module_sort"]
    assert all(r["status"] == "ok" and r["compile_ms"] > 0 and r["max_abs_error"] < 1e-4 for r in rows)
    assert "6/6 modules passed" in result.out
    for col in ("module", "status", "max abs error", "compile ms", "run ms"):
        assert col in result.out


def test_deliberately_broken_platform_is_flagged_and_bisected(cli):
    src = RUN / "fast_min_max.mlir"
    assert cli("run", src, "--jobs", "0").code == 0  # XLA's default keeps NaN semantics
    result = cli("run", src, "--jobs", "0", "--xla_cpu_enable_fast_min_max=true", "--bisect")
    assert result.code == 1
    out = result.out
    assert "fast_min_max: MISMATCH: output 0: 8/8 differ" in out
    assert "output 0 (float32[8]): 8 of 8 elements differ" in out
    assert "max abs error inf at [0]: got " in out and "expected nan" in out
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines)
              if ln.startswith(f"  bisect: first divergence at {src}:8:8: %3 = stablehlo.maximum %arg0, %2"))
    # the op's operand types, then the first 3 lines of its value's mismatch, then the reproducer
    assert lines[at + 1] == "    operands: tensor<8xf32>, tensor<8xf32>"
    assert lines[at + 2].startswith("    value (float32[8]): 8 of 8 elements differ (tolerance ")
    assert lines[at + 3].startswith("      max abs error inf at [0]: got ") and "expected nan" in lines[at + 3]
    assert lines[at + 4].startswith("      at [1]: got ") and lines[at + 5].startswith("  reproduce: ")
    assert "reproduce: mlirhlo run " in out and "--xla_cpu_enable_fast_min_max=true" in out


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


@pytest.mark.slow
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
    assert_mentions(line, "[3]", "parameter 0", "[8]")


def test_iterations_report_median(cli, monkeypatch):
    runs = count_executes(monkeypatch)
    result = cli("run", DATA / "erf_inv.mlir", "--jobs", "0", "--iterations", "5", "--reference", "none")
    assert result.code == 0
    assert "(median of 5)" in result.out and "RAN" in result.out
    assert len(runs) == 5  # five executions of one compile


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_interpreter_abort_is_that_modules_failure(cli, tmp_path):
    rng = _module(tmp_path, "func.func @main(%s: tensor<2xui64>) -> tensor<4xui32> {\n"
                  "  %s2, %v = stablehlo.rng_bit_generator %s, algorithm = DEFAULT : "
                  "(tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)\n"
                  "  return %v : tensor<4xui32>\n}\n", "rng.mlir")
    result = cli("run", rng, DATA / "erf_inv.mlir", "--jobs", "1")
    assert result.code == 1
    assert "rng: FAILED: the StableHLO interpreter crashed:" in result.out
    assert "1/2 modules passed" in result.out


@pytest.mark.slow
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
    assert_one_line_error(cli("run", DATA / "erf_inv.mlir", "--platform", "cuda"), facts=("--platform cuda", "GPU"))


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
    assert_one_line_error(cli("run", DATA / "erf_inv.mlir", "--reference", "interp"), facts=("'interp'",))
    assert_one_line_error(cli("run"), contains="no input modules given")
    assert_one_line_error(cli("run", DATA / "erf_inv.mlir", "--xla_nope=1"), contains="unknown XLA flag")


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def _attention(tmp_path):
    """A plain float32 self-attention block as jax.jit lowers it: 32 tokens of width 64, 4 heads
    with their q/k/v and output projections, softmax(q k^T / sqrt(16)) v."""
    import jax
    import jax.numpy as jnp

    def attention(x, wq, wk, wv, wo):
        def heads(w):
            return (x @ w).reshape(32, 4, 16).transpose(1, 0, 2)

        scores = jnp.einsum("hqd,hkd->hqk", heads(wq), heads(wk)) / jnp.float32(4.0)
        out = jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(scores, axis=-1), heads(wv))
        return out.transpose(1, 0, 2).reshape(32, 64) @ wo

    args = [jax.ShapeDtypeStruct((32, 64), jnp.float32)] + [jax.ShapeDtypeStruct((64, 64), jnp.float32)] * 4
    return _module(tmp_path, jax.jit(attention).lower(*args).as_text(), "attention.mlir")


@pytest.mark.slow
def test_a_float32_attention_block_matches_its_reference_at_default_tolerances(cli, tmp_path):
    """XLA CPU's reordered dots and reductions and its own exp put a correct float32 attention
    block up to 4.2e-5 from the interpreter's values (1.9e-5 off a 0.026: 10,000 ULP of that
    small output): within the default tolerance (2**14 ULP, 1.95e-3, at least as tolerant as XLA
    run_hlo_module's 1e-3 bounds). The former 1e-4/1e-5 defaults called it a mismatch (that one
    element of 2048)."""
    result = cli("run", _attention(tmp_path), "--jobs", "0")
    assert result.code == 0, result.out + result.err
    assert "attention: OK" in result.out


@pytest.mark.slow
def test_the_summary_the_mismatch_lines_and_the_json_give_one_max_abs_error(cli, tmp_path, small):
    """One figure per output, the largest |actual - expected| of any element: the mismatch lines,
    the summary table's column and the JSON row give the same number, even where that element is
    within its tolerance (a large value) and the differing ones are off by less (the tight former
    defaults on the attention block)."""
    import re

    report = tmp_path / "report.json"
    result = cli("run", _attention(tmp_path), small, "--jobs", "0", "--rtol", "1e-4", "--atol", "1e-5",
                 "--json", report)
    assert result.code == 1, result.out + result.err
    detail = re.search(r"^    max abs error (\S+) at \[(\d+), (\d+)\]: .*\(within tolerance\)$", result.out, re.M)
    assert detail, result.out
    assert re.search(r"^    worst differing at ", result.out, re.M)
    header = next(ln for ln in result.out.splitlines() if "module" in ln and "status" in ln).split("┃")
    row = next(ln for ln in result.out.splitlines() if ln.startswith("│ attention ")).split("│")
    column = [c.strip() for c in header].index("max abs error")
    assert row[column].strip() == detail.group(1)
    rows = {r["module"]: r for r in json.loads(report.read_text())}
    assert engine.format_error(rows["attention"]["max_abs_error"]) == detail.group(1)
    assert rows["attention"]["max_abs_error_at"] == f"output 0 [{detail.group(2)}, {detail.group(3)}]"
    assert rows["small"]["max_abs_error"] == 0.0


@pytest.mark.slow
def test_run_on_one_device_says_a_shard_map_module_needs_its_mesh(cli):
    """shard_map's manual computation runs only on its mesh: `run` (one device) says so in one line
    naming spmd-run, not XLA's "No registered implementation for ... xla.sdy.GlobalToLocalShape"."""
    from tests import sharded_programs

    r = cli("run", sharded_programs.programs(4)["shard_map"]["mlir"], "--jobs", "0")
    assert_one_line_error(r, facts=("shard_map", "mlirhlo spmd-run FILE --num-partitions N"))


# ------------------------------------------------------------ run

@pytest.mark.parametrize("args, facts", [  # the wording: e2e/test_mlirhlo.py's golden table
    (["--seed", "-1"], ("-1",)),
    (["--rtol", "nan"], ("nan", ">= 0")),
    (["--atol", "-1e-3"], ("-0.001", ">= 0")),
    (["--timeout", "-1"], ("-1.0", "> 0")),
])
def test_run_option_values(cli, small, args, facts):
    line = assert_one_line_error(cli("run", small, *args), facts=facts)
    assert line.startswith(f"error: Invalid value for '{args[0]}'"), line


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--rtol", "0", "--atol", "0"], ["--rel_error_bound=0", "--abs_error_bound=0"]])
def test_run_takes_zero_tolerances(cli, small, args):
    """0 is a tolerance (exact comparison), not a bad value: x + x is exact in float32."""
    result = cli("run", small, *args)
    assert result.code == 0, result.err
    assert "Invalid value" not in result.err


@pytest.mark.golden
@pytest.mark.parametrize("arrays, message", [
    ({"arg0": np.array([1, "a", None, 2.0], dtype=object)}, "array 'arg0' cannot be read: Object arrays"),
    ({"arg0": np.arange(4, dtype=np.int32)},
     "array 'arg0' is int32, parameter 0 (arg0) is float32 (save it with that dtype; nothing is converted)"),
    ({"foo": np.ones(4, np.float32)}, "no array for parameter 0 (arg0); the file has: foo"),
    ({"arg0": np.ones(4, np.float32), "arg1": np.ones(3, np.float32)},
     "array 'arg1' matches no parameter of @main (arg0)"),
    ({"arg0": np.ones(5, np.float32)}, "array 'arg0' has shape [5], parameter 0 (arg0) needs [4]"),
])
def test_inputs_npz_is_strict(cli, small, tmp_path, arrays, message):
    """Golden (the words of an --inputs file that does not fit the module; pinned only here)."""
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    assert_one_line_error(cli("run", small, "--jobs", "0", "--inputs", path), contains=message)


def test_inputs_npy_is_not_npz(cli, small, tmp_path):
    path = tmp_path / "in.npy"
    np.save(path, np.ones(4, np.float32))
    assert_one_line_error(cli("run", small, "--jobs", "0", "--inputs", path), at=str(path), facts=(".npy", ".npz"))


def test_inputs_by_position_and_name_still_work(cli, small, tmp_path):
    for name, kwargs in (("pos.npz", {}), ("named.npz", {"arg0": None})):
        path = tmp_path / name
        x = np.arange(4, dtype=np.float32)
        if kwargs:
            np.savez(path, arg0=x)
        else:
            np.savez(path, x)  # arr_0
        out = tmp_path / f"{name}.out.npz"
        result = cli("run", small, "--jobs", "0", "--inputs", path, "--save-outputs", out)
        assert result.code == 0, result.err
        np.testing.assert_array_equal(np.load(out)["out0"], x + x)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["0", "2"])
def test_split_input_file_reports_each_chunk_alone(cli, tmp_path, jobs):
    path = tmp_path / "split.mlir"
    path.write_text(SPLIT)
    result = cli("run", path, "--split-input-file", "--reference", "cpu", "--jobs", jobs)
    assert result.code == 2, result.err  # one invalid module among several: bad input
    assert "split.0: OK" in result.out
    assert f"split.1: INVALID: {path}:7:8: custom op 'stablehlo.bogus' is unknown" in result.out
    assert "split.2: OK" in result.out
    assert "--split-input-file" in result.out  # the reproducer reruns the chunks


@pytest.mark.slow
def test_run_reads_the_users_stdin():
    proc = mlirhlo("run", "-", "--reference", "cpu", input=SMALL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().startswith("-: OK")
    proc = mlirhlo("run", "-", "--split-input-file", "--reference", "cpu", "--jobs", "2", input=SPLIT)
    assert proc.returncode == 2, proc.stderr
    out = proc.stdout.decode()
    assert "-.0: OK" in out and "-.1: INVALID: -:7:8:" in out and "-.2: OK" in out


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--rtol", "1e300", "--atol", "0.5"], ["--timeout", "1e-3", "--jobs", "0"]])
def test_run_takes_any_finite_tolerance_and_positive_timeout(cli, small, args):
    """The callbacks pass every finite value in range through: huge tolerances, a tiny timeout."""
    from mlirhlo_driver.cli import app

    assert app._non_negative(1e300) == 1e300 and app._non_negative(0.0) == 0.0 and app._non_negative(None) is None
    assert app._positive(1e-3) == 1e-3 and app._positive(None) is None
    result = cli("run", small, "--reference", "cpu", *args)
    assert result.code == 0, result.err


@pytest.mark.parametrize("args, message", [
    (["--iterations", "0"], "error: --iterations must be >= 1 and --jobs >= 0"),
    (["--jobs", "-1"], "error: --iterations must be >= 1 and --jobs >= 0"),
    (["--zeros", "--inputs", "none.npz"], "error: give --zeros or --inputs, not both"),
    (["{small}", "--inputs", "none.npz"], "error: --inputs is for one module"),
    (["--reference", "interp"], "error: unknown reference 'interp' (did you mean 'interpreter'?)"),
    (["--reference", "bogus"], "error: unknown reference 'bogus' (interpreter, cpu, none)"),
])
@pytest.mark.golden
def test_run_refuses_bad_combinations_before_any_compile(cli, small, args, message):
    """Golden: run's own checks, each one exact line and exit 2."""
    line = assert_one_line_error(cli("run", small, *[a.format(small=small) for a in args]))
    assert line == message


@pytest.mark.parametrize("reference, label", [
    ("Default", "reference (interpreter)"), ("Interpreter", "reference (interpreter)"), ("HOST", "reference (cpu)"),
    ("CPU", "reference (cpu)"), ("", None), ("None", None),
])
def test_run_reference_spellings_of_run_hlo_module(cli, small, reference, label):
    """XLA's spellings of the reference, any case: default/interpreter, host/cpu, '' or none (no reference)."""
    result = cli("run", small, "--reference", reference, "--jobs", "0", "--iterations", "1")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == ("small: OK" if label else "small: RAN"), result.out
    assert (label in lines[2]) if label else ("reference" not in result.out), result.out


@pytest.mark.parametrize("code", [0, 1, 2])
def test_run_command_separates_inputs_from_xla_flags_and_exits_with_the_verdict(cli, run_recorder, code):
    """run: files (and '-', stdin) are inputs wherever they stand; --xla_* words are flags, kept as typed
    for the reproducer; the exit code is commands.run's."""
    run_recorder["code"] = code
    r = cli("run", "a.mlir", "--xla_cpu_enable_fast_math=true", "-", "b.mlir", "--seed", "3")
    assert (r.code, r.out, r.err) == (code, "", "")
    inputs, kwargs = run_recorder["run"]
    assert inputs == ["a.mlir", "-", "b.mlir"]
    assert kwargs["cli_flags"] == {"xla_cpu_enable_fast_math": True}
    assert kwargs["extra_words"] == ["--xla_cpu_enable_fast_math=true"]
    # the reference: None, per platform (commands.run: the interpreter on the CPU)
    assert (kwargs["seed"], kwargs["jobs"], kwargs["iterations"], kwargs["reference"]) == (3, 1, 1, None)
    assert (kwargs["rtol"], kwargs["atol"], kwargs["timeout"]) == (None, None, None)
    r = cli("run", "a.mlir", "--seed", "0", "--rtol", "0.5", "--atol", "0", "--timeout", "7", "--jobs", "2")
    assert r.code == code, r.err
    kwargs = run_recorder["run"][1]
    assert (kwargs["seed"], kwargs["rtol"], kwargs["atol"], kwargs["timeout"], kwargs["jobs"]) == (0, 0.5, 0.0, 7.0, 2)


def test_mlirhlo_run_reference_spelling(cli, work):
    r = cli("run", work / "computation.hlo", "--reference", "Interpreter", "--jobs", "0")
    assert r.code == 0, r.err
    assert "reference (interpreter)" in r.out
