"""Everyday mistakes get one ``error:`` line and exit 2, not a traceback, a hang, a
silently wrong answer or native noise (issue 12)."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from tests.conftest import DATA, REPO, assert_one_line_error, readline_within

SMALL = """func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
# LLVM IR calling libdevice, for the --libdevice checks.
NV_IR = """target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare float @__nv_expf(float)

define void @k(ptr %p) {
  %x = load float, ptr %p
  %y = call float @__nv_expf(float %x)
  store float %y, ptr %p
  ret void
}
"""
MLIRHLO = [sys.executable, "-c", "from mlirhlo_driver.cli.mlirhlo import main; main()"]


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.mlir"
    path.write_text(SMALL)
    return path


def mlirhlo(*args, input: str | bytes | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI in a fresh process (for stdin, signals, fd-2 noise)."""
    return subprocess.run(MLIRHLO + [str(a) for a in args], capture_output=True,
                          input=input.encode() if isinstance(input, str) else input,
                          timeout=timeout, cwd=str(REPO))


def one_line_error(proc: subprocess.CompletedProcess, contains: str = "") -> str:
    err = proc.stderr.decode(errors="replace")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 2, (proc.returncode, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert contains in lines[0], lines[0]
    assert proc.stdout == b""
    return lines[0]


# ------------------------------------------------------------ output paths

@pytest.mark.parametrize("command", [
    ["opt", "{small}", "-o", "{dir}"],
    ["convert", "{small}", "--to", "hlo", "-o", "{dir}"],
    ["ptx", "{ll}", "-o", "{dir}"],
    ["run", "{small}", "--jobs", "0", "--json", "{dir}"],
    ["run", "{small}", "--jobs", "0", "--save-outputs", "{dir}"],
    ["spmd-run", "{small}", "--dump-output", "{dir}"],
])
def test_output_path_that_is_a_directory(cli, small, tmp_path, command):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    ll = tmp_path / "k.ll"
    ll.write_text(NV_IR)
    args = [a.format(small=small, dir=out_dir, ll=ll) for a in command]
    assert_one_line_error(cli(*args), contains=f"{out_dir}: is a directory")
    assert list(out_dir.iterdir()) == []


def test_convert_output_path_is_refused_before_the_input_is_read(cli, tmp_path):
    """convert: a bad -o is refused before any work, even before a missing input is noticed."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(cli("convert", tmp_path / "missing.mlir", "--to", "hlo", "-o", out_dir),
                          contains=f"{out_dir}: is a directory")


def test_output_under_a_file(cli, small, tmp_path):
    assert_one_line_error(cli("opt", small, "-o", small / "x.mlir"),
                          contains=f"{small / 'x.mlir'}: cannot write: {small} is not a directory")


def test_write_that_fails_midway_leaves_nothing(tmp_path):
    # A file-size limit (1 KiB, set by the shell: no fork-time hook in this
    # multithreaded process) makes the write fail with EFBIG after the first bytes.
    out = tmp_path / "big.mlir"
    command = " ".join(shlex.quote(str(a)) for a in [*MLIRHLO, "opt", DATA / "mlp_train_step.before_optimizations.txt",
                                                      "-o", out])
    proc = subprocess.run(["bash", "-c", f"ulimit -f 1 && exec {command}"], capture_output=True,
                          timeout=300, cwd=str(REPO))
    one_line_error(proc, f"{out}: cannot write: File too large")
    assert list(tmp_path.iterdir()) == [], "no partial file, no temp file"


# ------------------------------------------------------------ pipelines

@pytest.mark.parametrize("args, message", [
    (["--pipeline", "builtin.module(canonicalize{bogus=1})"],
     "error: --pipeline:1:28: bad options for pass 'canonicalize': no such option bogus"),
    (["--pipeline", "builtin.module(func.func(canonicalize{max-iterations=abc}))"],
     "error: --pipeline:1:38: bad options for pass 'canonicalize': for the --max-iterations option: "
     "'abc' value invalid"),
    (["--passes", "cse,canonicalize{max-iterations=abc}"], "error: --passes:1:17: bad options"),
    (["--passes", "cse,fold-involutions{x=1}"], "Python pass 'fold-involutions' takes no options"),
    (["--passes", "cse", "--print-ir-before", "canonicalise"],
     "error: --print-ir-before: unknown pass 'canonicalise' (did you mean 'canonicalize'?)"),
    (["--passes", "cse", "--print-ir-after", "canonicalize"],
     "error: --print-ir-after: pass 'canonicalize' is not in the pipeline (the pipeline runs: cse)"),
    (["--print-ir-after", "cse"], "no pipeline runs"),
    (["--pipeline", "builtin.module(" + "func.func(" * 100 + "cse" + ")" * 101],
     "pipeline nested more than 64 levels deep"),
    (["--pipeline", "builtin.module(func.func(stablehlo.while(fold-involutions)))"],
     "error: --pipeline:1:42: Python pass 'fold-involutions' can run at module level or directly under "
     "func.func, not under 'stablehlo.while'"),
])
def test_pipeline_mistakes(cli, small, args, message):
    assert_one_line_error(cli("opt", small, *args), contains=message)


def test_good_pass_options_still_run(cli, small):
    result = cli("opt", small, "--passes", "canonicalize{max-iterations=3},cse", "--print-ir-after", "cse")
    assert result.code == 0, result.err
    assert "IR Dump After CSE" in result.err


def test_binary_pipeline_file(cli, small, tmp_path):
    bad = tmp_path / "bin.pipeline"
    bad.write_bytes(bytes(range(256)))
    assert_one_line_error(cli("opt", small, "--pipeline-file", bad),
                          contains=f"error: {bad}: not a text file")


def test_unusable_reproducer_dir(cli, small, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_one_line_error(cli("opt", small, "--passes", "cse", "--reproducer-dir", blocker / "sub"),
                          contains="cannot create the reproducer directory")


# ----------------------------------------------------------- Python passes

PLUGINS = {
    "native.py": '''
        import mlirhlo_driver

        @mlirhlo_driver.register_pass("canonicalize")
        def mine(op):
            pass
    ''',
    "twice.py": '''
        import mlirhlo_driver

        @mlirhlo_driver.register_pass("my-pass")
        def a(op):
            pass

        @mlirhlo_driver.register_pass("my-pass")
        def b(op):
            pass
    ''',
    "other.py": '''
        import mlirhlo_driver

        @mlirhlo_driver.register_pass("my-pass")
        def a(op):
            pass
    ''',
}


@pytest.fixture
def plugins(tmp_path):
    for name, text in PLUGINS.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_plugin_cannot_replace_a_native_pass(cli, small, plugins):
    path = plugins / "native.py"
    assert_one_line_error(cli("opt", small, "--load-pass-plugin", path, "--passes", "canonicalize"),
                          contains=f"error: {path}:4: pass 'canonicalize' is a native jaxlib pass")
    # Refused, not half-registered: the native pass still runs afterwards.
    result = cli("opt", small, "--passes", "canonicalize")
    assert result.code == 0, result.err


def test_a_pass_name_registered_twice(cli, small, plugins):
    assert_one_line_error(cli("opt", small, "--load-pass-plugin", plugins / "twice.py", "--passes", "my-pass"),
                          contains=f"{plugins / 'twice.py'}:8: pass 'my-pass' is already registered earlier")
    assert_one_line_error(cli("opt", small, "--load-pass-plugin", plugins / "other.py",
                              "--load-pass-plugin", plugins / "twice.py", "--passes", "my-pass"),
                          contains=f"pass 'my-pass' is already registered by {plugins / 'other.py'}")
    # The same file given twice is one registration.
    result = cli("opt", small, "--load-pass-plugin", plugins / "other.py",
                 "--load-pass-plugin", plugins / "other.py", "--passes", "my-pass")
    assert result.code == 0, result.err


# ------------------------------------------------------------ inputs

@pytest.mark.parametrize("fmt", ["vhlo", "bytecode"])
def test_bytecode_format_on_text(cli, small, fmt):
    assert_one_line_error(cli("opt", small, "--input-format", fmt),
                          contains=f"--input-format {fmt} expects MLIR bytecode, but this is not bytecode "
                                   "(it looks like mlir: --input-format mlir)")


def test_jax_format_on_a_file(cli, small):
    assert_one_line_error(cli("opt", small, "--input-format", "jax", "--args", "f32[4]"),
                          contains="--input-format jax takes a JAX function as package.module:function; "
                                   "this is a file")


def test_missing_paren_in_hlo(cli, tmp_path):
    bad = tmp_path / "m.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n  ROOT a = f32[4] add(p0, p0\n}\n")
    line = assert_one_line_error(cli("opt", bad))
    assert line == f"error: {bad}:5:27: expects ')' at the end of operands"


@pytest.mark.parametrize("name, text, where", [
    ("latin.mlir", b"// caf\xe9\n" + SMALL.encode(), "1:7"),
    ("latin.hlo", b"HloModule m // caf\xe9\nENTRY main {\n  ROOT p0 = f32[4] parameter(0)\n}\n", "1:19"),
])
def test_one_non_utf8_byte_is_not_binary_data(cli, tmp_path, name, text, where):
    path = tmp_path / name
    path.write_bytes(text)
    assert_one_line_error(cli("opt", path),
                          contains=f"error: {path}:{where}: byte 0xe9 is not UTF-8; a text module must be UTF-8")


def test_malformed_proto_has_no_native_stack(cli, tmp_path):
    from mlirhlo_driver.ir import hlo_proto

    good = tmp_path / "m.pb"
    assert cli("convert", DATA / "chlo_special.mlir", "--to", "hlo-proto", "-o", good).code == 0
    msg = hlo_proto.message_class("HloModuleProto")()
    msg.ParseFromString(good.read_bytes())
    msg.entry_computation_id = 999  # XLA: RET_CHECK failure ... entry != nullptr, with a stack
    bad = tmp_path / "bad.pb"
    bad.write_bytes(msg.SerializeToString())
    line = assert_one_line_error(cli("opt", bad), contains=f"error: {bad}: ")
    assert "RET_CHECK failure" in line


def test_vhlo_of_chlo_suggests_prepare_export(cli, tmp_path):
    result = cli("opt", DATA / "chlo_special.mlir", "--stage", "vhlo", "-o", tmp_path / "x.vhlo")
    line = assert_one_line_error(result, contains="cannot serialize as a StableHLO")
    assert "legalize them first: --pipeline @prepare-export" in line
    assert "loc(" not in result.err


def test_no_gpu_spec_note_before_an_error(cli, tmp_path):
    assert_one_line_error(cli("opt", tmp_path / "missing.mlir", "--platform", "cuda", "--stage", "ptx"),
                          contains="missing.mlir: no such file or directory")


@pytest.mark.parametrize("args, message", [
    (["--platform", "cpu", "--xla_dump_to", "--stage", "hlo"], "--xla_dump_to needs a value"),
    (["--platform", "cpu", "--xla_gpu_autotune_level"], "--xla_gpu_autotune_level needs a number"),
])
def test_valueless_xla_flag(cli, small, args, message):
    assert_one_line_error(cli("opt", small, *args), contains=message)


def test_emit_proto_conflicts_with_to(cli, small):
    assert_one_line_error(cli("convert", small, "--emit-proto", "--to", "stablehlo"),
                          contains="--emit-proto means --to hlo-proto; it conflicts with --to stablehlo")


def test_garbage_libdevice(cli, tmp_path):
    ll = tmp_path / "k.ll"
    ll.write_text(NV_IR)
    garbage = tmp_path / "libdevice.10.bc"
    garbage.write_bytes(b"\x01\x02" * 600)
    assert_one_line_error(cli("ptx", ll, "--libdevice", garbage),
                          contains=f"error: {garbage}: not a libdevice bitcode file")


# ------------------------------------------------------------ stdin

def test_ptx_and_specs_check_read_stdin():
    proc = mlirhlo("ptx", "-", input=NV_IR)
    assert proc.returncode == 0, proc.stderr
    assert b".entry k" in proc.stdout or b".func k" in proc.stdout or b"k(" in proc.stdout
    spec = (REPO / "gpu_specs" / "h100_sxm.txtpb").read_text()
    proc = mlirhlo("specs", "check", "-", input=spec)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().startswith("-: ok (")


def test_process_substitution_input(tmp_path):
    # A pipe given as a path (bash's <(...)), read like a file.
    hlo = tmp_path / "m.hlo"
    hlo.write_text("HloModule m\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n  ROOT a = f32[4] add(p0, p0)\n}\n")
    cmd = " ".join(shlex.quote(a) for a in MLIRHLO) + f" opt <(cat {shlex.quote(str(hlo))}) --stage hlo-before-optimizations"
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=300, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"HloModule")


# ------------------------------------------------------------ noise

def test_no_absl_info_lines_when_jaxlib_was_imported_first(tmp_path):
    # jaxlib's libraries loaded before the driver set its log level used to
    # leak "pjrt_api.cc ... GetPjrtApi was found" and device-count INFO lines.
    small = tmp_path / "s.mlir"
    small.write_text(SMALL)
    code = ("import jaxlib.mlir.passmanager\nfrom mlirhlo_driver.cli.mlirhlo import main\n"
            f"main(['opt', {str(small)!r}, '--passes', 'canonicalize{{max-iterations=3}}'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_cuda_compile_prints_only_the_note(tmp_path):
    proc = mlirhlo("opt", DATA / "chlo_special.mlir", "--platform", "cuda", "--stage", "ptx",
                   "-o", tmp_path / "x.ptx")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode().splitlines() == [
        "note: no --gpu-spec given: compiling for h100_sxm (NVIDIA H100 80GB HBM3, sm_90a)"]


# ------------------------------------------------------------ Ctrl-C

BENCH_WRAPPER = """
import sys
from mlirhlo_driver.execute import bench
from mlirhlo_driver.cli.mlirhlo import main

original = bench.bench_pipelines

def announced(*args, **kwargs):
    print("benchmarking", flush=True)   # the test's cue to press Ctrl-C
    return original(*args, **kwargs)

bench.bench_pipelines = announced
main(sys.argv[1:])
"""


@pytest.mark.parametrize("passes", ["canonicalize,cse", "canonicalize,fold-involutions,cse"],
                         ids=["native", "python-pass"])
def test_ctrl_c_stops_bench_pipeline(passes):
    proc = subprocess.Popen(
        [sys.executable, "-c", BENCH_WRAPPER, "bench-pipeline", str(DATA / "mlp_train_step.before_optimizations.txt"),
         "--passes", passes, "--repeats", "1000000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(REPO))
    try:
        assert readline_within(proc.stdout, 300) == b"benchmarking\n"
        threading.Event().wait(1.0)  # well inside the runs
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err.decode(errors="replace")
    text = err.decode(errors="replace")
    assert "Traceback" not in text
    assert "===---" not in text and "Execution time report" not in text  # MLIR's raw timing report
    assert text.splitlines()[-1:] == ["error: interrupted"] and text.count("error: interrupted") == 1, text
    assert out == b""


# ------------------------------------------------------------ run

@pytest.mark.parametrize("args, message", [
    (["--seed", "-1"], "-1"),
    (["--rtol", "nan"], "nan is not a finite number >= 0"),
    (["--atol", "-1e-3"], "-0.001 is not a finite number >= 0"),
    (["--timeout", "-1"], "-1.0 is not a finite number > 0"),
])
def test_run_option_values(cli, small, args, message):
    line = assert_one_line_error(cli("run", small, *args), contains=message)
    assert line.startswith(f"error: Invalid value for '{args[0]}'"), line


@pytest.mark.parametrize("args", [["--rtol", "0", "--atol", "0"], ["--rel_error_bound=0", "--abs_error_bound=0"]])
def test_run_takes_zero_tolerances(cli, small, args):
    """0 is a tolerance (exact comparison), not a bad value: x + x is exact in float32."""
    result = cli("run", small, *args)
    assert result.code == 0, result.err
    assert "Invalid value" not in result.err


@pytest.mark.parametrize("command, extra, message", [
    ("run", ["--bogus=3"], "no such option: --bogus"),
    ("run", ["--no-such-flag"], "no such option: --no-such-flag"),
    ("spmd-run", ["--bogus=3"], "no such option: --bogus"),
    ("spmd-run", ["--no-such-flag"], "no such option: --no-such-flag"),
    ("spmd-run", ["other.hlo"], "unexpected argument 'other.hlo' (spmd-run takes one module)"),
    # XLA flags take their value after '=' (as in XLA_FLAGS): a separate word is another argument
    ("spmd-run", ["--xla_dump_to", "dumps"], "unexpected argument 'dumps' (spmd-run takes one module)"),
])
def test_words_left_after_the_options(cli, small, command, extra, message):
    """What typer leaves unparsed is an --xla_* flag or one error line naming the word."""
    assert assert_one_line_error(cli(command, small, *extra)) == f"error: {message}"


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
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    assert_one_line_error(cli("run", small, "--jobs", "0", "--inputs", path), contains=message)


def test_inputs_npy_is_not_npz(cli, small, tmp_path):
    path = tmp_path / "in.npy"
    np.save(path, np.ones(4, np.float32))
    assert_one_line_error(cli("run", small, "--jobs", "0", "--inputs", path),
                          contains="a single .npy array, not an .npz archive")


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


SPLIT = SMALL + "// -----\n" + SMALL.replace("stablehlo.add", "stablehlo.bogus") + "// -----\n" + \
    SMALL.replace("stablehlo.add", "stablehlo.multiply")


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


def test_run_reads_the_users_stdin():
    proc = mlirhlo("run", "-", "--reference", "cpu", input=SMALL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().startswith("-: OK")
    proc = mlirhlo("run", "-", "--split-input-file", "--reference", "cpu", "--jobs", "2", input=SPLIT)
    assert proc.returncode == 2, proc.stderr
    out = proc.stdout.decode()
    assert "-.0: OK" in out and "-.1: INVALID: -:7:8:" in out and "-.2: OK" in out


@pytest.mark.parametrize("extra, stage, message", [
    (1, "stablehlo,mhlo", "several stages need --dump-dir, not -o"),
    (2, "vhlo", "several modules in a binary stage need --dump-dir, not -o"),
])
def test_o_takes_one_output(cli, small, tmp_path, extra, stage, message):
    """-o is one file: two stages, or two modules of a binary stage, are refused before any work."""
    out = tmp_path / "out"
    r = cli("opt", *[str(small)] * extra, "--stage", stage, "-o", str(out))
    assert_one_line_error(r, contains=message)
    assert not out.exists()


def test_two_modules_of_a_binary_stage_need_a_destination(cli, small):
    r = cli("opt", str(small), str(small), "--stage", "vhlo")
    assert_one_line_error(r, contains="several modules in a binary stage need --dump-dir or -o")


# ------------------------------------------------------------ Ctrl-C

INTERRUPTED_IMPORT = """
import importlib, sys, time
sys.path.insert(0, sys.argv[1])
from mlirhlo_driver._native import interrupts
interrupts.install()
try:
    importlib.import_module("signals_itself")   # SIGINT to itself, then 0.3 s more of import
except KeyboardInterrupt:
    print("interrupted inside the import")
    raise SystemExit(1)
try:
    time.sleep(5)
except KeyboardInterrupt:
    import signals_itself
    print("interrupted after the import", signals_itself.DONE, interrupts.received)
"""


def test_ctrl_c_waits_for_an_import_to_finish(tmp_path):
    """A KeyboardInterrupt inside a native module's initialisation aborts the process
    (jaxlib.mlir, measured): inside an import the handler holds it until the import is done."""
    (tmp_path / "signals_itself.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(0.3)\nDONE = True\n")
    r = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT, str(tmp_path)], capture_output=True, text=True,
                       cwd=str(REPO), timeout=60)
    assert r.stdout == "interrupted after the import True True\n", r.stdout + r.stderr


@pytest.mark.parametrize("target, argv", [("mlirhlo_driver.batch.opt:run_batch", ["opt", "{small}"]),
                                          ("mlirhlo_driver.listings:spec_table", ["specs", "list"])],
                         ids=["opt", "typer-command"])
def test_ctrl_c_a_command_did_not_catch_is_one_error_line(cli, small, monkeypatch, target, argv):
    """A KeyboardInterrupt inside opt, or escaping a typer command (which typer makes a silent
    exit 130), is one error line and exit 130, written once, whether or not the console
    script's handler saw a signal."""
    import importlib

    from mlirhlo_driver._native import interrupts

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    module, name = target.split(":")
    monkeypatch.setattr(importlib.import_module(module), name, interrupted)
    for signalled in (True, False):
        monkeypatch.setattr(interrupts, "received", signalled)
        monkeypatch.setattr(interrupts, "_reported", False)
        r = cli(*[a.format(small=small) for a in argv])
        assert (r.code, r.err, r.out) == (130, "error: interrupted\n", ""), signalled


INTERRUPTED_MAIN = """
import sys
from mlirhlo_driver.cli import mlirhlo as cli

def interrupted(argv):
    raise KeyboardInterrupt

cli._main = interrupted
sys.argv = ["mlirhlo", *sys.argv[1:]]
cli.main()
"""


@pytest.mark.parametrize("command", ["run", "opt"])  # a normal exit, and one by os._exit
def test_ctrl_c_the_command_did_not_catch_is_exit_130(command):
    r = subprocess.run([sys.executable, "-c", INTERRUPTED_MAIN, command, "m.mlir"], capture_output=True,
                       text=True, cwd=str(REPO), timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (130, "", "error: interrupted\n")


def test_a_split_marker_splits_only_when_asked(cli, tmp_path):
    """As mlir-opt: ``// -----`` is a comment unless --split-input-file is given."""
    src = tmp_path / "two.mlir"
    src.write_text("func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"
                   "// -----\n"
                   "func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n")
    whole = cli("opt", src)
    assert whole.code == 0, whole.err
    assert whole.out.count("module {") == 1 and "@first" in whole.out and "@second" in whole.out
    split = cli("opt", src, "--split-input-file")
    assert split.code == 0, split.err
    assert split.out.count("module {") == 2 and "// -----" in split.out


# ------------------------------------------------------------ opt's own parser (cli/opt.py)

@pytest.mark.parametrize("args, message", [
    (["--jobs", "x"], "Invalid value for '--jobs' / '-j': 'x' is not a valid integer."),
    (["-j", "1.5"], "Invalid value for '--jobs' / '-j': '1.5' is not a valid integer."),
    (["--timeout", "0"], "Invalid value for '--timeout': 0.0 is not a finite number > 0"),
    (["--timeout", "nan"], "Invalid value for '--timeout': nan is not a finite number > 0"),
    (["--stage"], "Option '--stage' requires an argument."),
    (["--print-pipeline=yes"], "Option '--print-pipeline' does not take a value."),
    (["--no-verify-each=1"], "Option '--no-verify-each' does not take a value."),
])
def test_opt_option_values(cli, small, args, message):
    assert assert_one_line_error(cli("opt", small, *args)) == f"error: {message} (see 'mlirhlo opt --help')"


def test_opt_inputs_anywhere_on_the_line(cli, tmp_path):
    """Inputs before, between and after options, and after an --xla_* flag, are all modules."""
    names = []
    for i in range(3):
        path = tmp_path / f"m{i}.mlir"
        t = f"tensor<{i + 2}xf32>"  # each module's own shape, to find it in the output
        path.write_text(f"func.func @main(%a: {t}) -> {t} {{\n  %0 = stablehlo.add %a, %a : {t}\n  return %0 : {t}\n}}\n")
        names.append(str(path))
    r = cli("opt", names[0], "--platform", "cpu", names[1], "--xla_cpu_enable_fast_math=true", names[2],
            "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert [f"f32[{i + 2}]" in r.out for i in range(3)] == [True] * 3


def test_opt_unknown_and_abbreviated_options_are_refused(cli, small):
    """No prefix matching (click has none): '--stag' is not '--stage'."""
    assert assert_one_line_error(cli("opt", small, "--stag", "hlo")) == \
        "error: no such option: --stag (did you mean '--stage', '--args', '--list-stages'?)"


def test_argparse_refusals_in_opt_are_a_usage_error_never_an_exit():
    """opt's parser: what argparse would print with its usage and exit 2 on is raised as the
    driver's UsageError instead, in typer's words (capitalized, with a full stop)."""
    from mlirhlo_driver.cli import opt

    with pytest.raises(opt.UsageError) as e:
        opt.parser().error("the following arguments are required: FILE")
    assert e.value.format() == "error: The following arguments are required: FILE. (see 'mlirhlo opt --help')"


@pytest.mark.parametrize("unbuffered", [False, True])
def test_stdout_on_a_full_disk_is_one_error_line_and_exit_1(unbuffered):
    """Output that cannot be written (disk full), whether it fails as it is written
    (PYTHONUNBUFFERED) or when the buffer is flushed at exit: one error line, exit 1, not 0."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        proc = subprocess.run(MLIRHLO + ["opt", "--list-stages"], stdout=full, stderr=subprocess.PIPE,
                              env=env, timeout=300, cwd=str(REPO), text=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == ["error: " + ("" if unbuffered else "cannot write stdout: ")
                                        + os.strerror(28)], proc.stderr
    with open(os.devnull, "w") as null:  # the same command, written out, succeeds
        ok = subprocess.run(MLIRHLO + ["opt", "--list-stages"], stdout=null, stderr=subprocess.PIPE,
                            env=env, timeout=300, cwd=str(REPO))
    assert ok.returncode == 0, ok.stderr


# ------------------------------------------------------------ bench-pipeline's report (fake timings)

@pytest.fixture
def fake_bench(monkeypatch):
    """bench_pipeline over fixed timings: the program, the pipelines and the clock are fakes;
    ``calls`` records what was resolved and benchmarked."""
    from types import SimpleNamespace

    from mlirhlo_driver import api
    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.mlir import pipeline

    calls: dict = {"resolved": [], "benched": None, "totals": [[3.0, 2.0, 4.0], [6.0, 5.0, 7.0]]}

    def resolve(spec=None, *, passes=None):
        calls["resolved"].append((spec, passes))
        given = spec if spec is not None else passes
        return None if given is None else SimpleNamespace(spec=f"P({given})")

    def bench_pipelines(module, roots, repeats):
        calls["benched"] = (module, [r.spec for r in roots], repeats)
        return [bench.PipelineBench(root.spec, [bench.PassStat("outer", 0, [1.0, 0.5, 1.5]),
                                                bench.PassStat("inner", 1, [0.25, 0.125, 2.0])], totals)
                for root, totals in zip(roots, calls["totals"])]

    monkeypatch.setattr(api, "load", lambda input, input_format=None, args=None:
                        SimpleNamespace(module=f"module of {input}", name="m"))
    monkeypatch.setattr(pipeline, "resolve", resolve)
    monkeypatch.setattr(bench, "bench_pipelines", bench_pipelines)
    return calls


def test_bench_pipeline_table_of_two_pipelines_and_their_ratio(fake_bench):
    """Each pipeline's table (passes indented by depth, then Total), then B's median total over A's."""
    from mlirhlo_driver.commands import mlirhlo as commands

    out = commands.bench_pipeline("x.mlir", passes="cse", compare="canonicalize,cse", repeats=3)
    assert fake_bench["benched"] == ("module of x.mlir", ["P(cse)", "P(canonicalize,cse)"], 3)
    assert out == (
        "# A: P(cse)  (3 runs, fresh copy each)\n"
        " median ms       min       max  pass\n"
        "     1.000     0.500     1.500  outer\n"
        "     0.250     0.125     2.000    inner\n"
        "     3.000     2.000     4.000  Total\n"
        "# B: P(canonicalize,cse)  (3 runs, fresh copy each)\n"
        " median ms       min       max  pass\n"
        "     1.000     0.500     1.500  outer\n"
        "     0.250     0.125     2.000    inner\n"
        "     6.000     5.000     7.000  Total\n"
        "# B/A total (medians, runs interleaved A B A B): 2.000x\n")


def test_bench_pipeline_one_pipeline_has_no_ratio(fake_bench):
    """One pipeline: its table alone, no B/A line, and no "ratio" in the JSON."""
    import json

    from mlirhlo_driver.commands import mlirhlo as commands

    out = commands.bench_pipeline("x.mlir", pipeline_spec="@p", repeats=1)
    assert out.splitlines()[0] == "# A: P(@p)  (1 runs, fresh copy each)"
    assert out.endswith("     3.000     2.000     4.000  Total\n") and "B/A" not in out
    data = json.loads(commands.bench_pipeline("x.mlir", pipeline_spec="@p", repeats=1, json_out=True))
    assert data == {"module": "m", "runs": [{
        "pipeline": "P(@p)", "repeats": 3, "total_median_ms": 3.0, "total_min_ms": 2.0, "total_max_ms": 4.0,
        "passes": [{"pass": "outer", "depth": 0, "median_ms": 1.0, "min_ms": 0.5, "max_ms": 1.5, "runs": 3},
                   {"pass": "inner", "depth": 1, "median_ms": 0.25, "min_ms": 0.125, "max_ms": 2.0, "runs": 3}]}]}


def test_bench_pipeline_json_of_two_pipelines_has_the_ratio(fake_bench):
    """JSON: both runs and B/A's ratio of median totals, indented by 2, one final newline."""
    import json

    from mlirhlo_driver.commands import mlirhlo as commands

    out = commands.bench_pipeline("x.mlir", passes="cse", compare="@other", repeats=2, json_out=True)
    assert out.startswith('{\n  "module": "m",\n  "runs": [\n') and out.endswith("\n}\n")
    data = json.loads(out)
    assert [r["pipeline"] for r in data["runs"]] == ["P(cse)", "P(@other)"]
    assert data["ratio"] == 2.0


@pytest.mark.parametrize("compare, resolved", [
    ("@named", ("@named", None)),
    ("builtin.module(cse)", ("builtin.module(cse)", None)),
    ("canonicalize,cse", (None, "canonicalize,cse")),
])
def test_bench_pipeline_compare_is_a_spec_a_name_or_a_pass_list(fake_bench, compare, resolved):
    """--compare: '@NAME' or 'builtin.module(...)' is a pipeline; anything else a pass list."""
    from mlirhlo_driver.commands import mlirhlo as commands

    commands.bench_pipeline("x.mlir", passes="cse", compare=compare, repeats=1)
    assert fake_bench["resolved"] == [(None, "cse"), resolved]


def test_bench_pipeline_ratio_is_none_when_a_takes_0_ms(fake_bench):
    """A's median total 0 ms (too fast for the timer): no division; text and JSON say none."""
    import json

    from mlirhlo_driver.commands import mlirhlo as commands

    fake_bench["totals"] = [[0.0, 0.0, 1.0], [6.0, 5.0, 7.0]]
    out = commands.bench_pipeline("x.mlir", passes="cse", compare="canonicalize", repeats=3)
    assert out.endswith("\n# B/A total (medians, runs interleaved A B A B): none (A's median total is 0 ms)\n")
    assert json.loads(commands.bench_pipeline("x.mlir", passes="cse", compare="canonicalize", repeats=3,
                                              json_out=True))["ratio"] is None


def test_bench_pipeline_needs_a_pipeline_and_a_repeat(fake_bench):
    """No --pipeline nor --passes, or --repeats below 1: a usage error, before any benchmark."""
    from mlirhlo_driver.commands import mlirhlo as commands
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError) as e:
        commands.bench_pipeline("x.mlir", repeats=1)
    assert e.value.message == "give --pipeline or --passes"
    with pytest.raises(DriverError) as e:
        commands.bench_pipeline("x.mlir", passes="cse", repeats=0)
    assert e.value.message == "--repeats must be >= 1"
    assert fake_bench["benched"] is None


@pytest.fixture
def fake_xla_bench(monkeypatch, fake_bench):
    """bench_pipeline with a target: XLA's pipeline timed by a fake; records the options used."""
    from types import SimpleNamespace

    from mlirhlo_driver.execute import bench

    seen: dict = {}

    def bench_xla_pipeline(module, name, options, repeats):
        seen["call"] = (module, name, options, repeats)
        return ([bench.XlaPassTime("simplification", "algsimp", [2.0, 1.0, 4.0]),
                 bench.XlaPassTime("fusion", "fusion-merger", [0.5, 0.25, 0.75])], [10.0, 8.0, 12.5])

    monkeypatch.setattr(bench, "bench_xla_pipeline", bench_xla_pipeline)
    target = SimpleNamespace(platform="cpu", say_notes=lambda say: seen.setdefault("note", True),
                             stage_options=lambda: [("first", "options-1"), ("second", "options-2")])
    return target, seen


def test_bench_pipeline_of_xla_table(fake_xla_bench):
    """With a target: XLA's HLO pipeline per dump interval, then the whole compile."""
    from mlirhlo_driver.commands import mlirhlo as commands

    target, seen = fake_xla_bench
    out = commands.bench_pipeline("x.mlir", target=target, repeats=3)
    assert seen == {"note": True, "call": ("module of x.mlir", "m", "options-1", 3)}
    assert out == (
        "# XLA cpu HLO pipeline, 3 compiles; times between per-pass dumps (XLA dumps after passes that "
        "change the module), from file timestamps\n"
        " median ms       min       max  pipeline / ending with pass\n"
        "     2.000     1.000     4.000  simplification / algsimp\n"
        "     0.500     0.250     0.750  fusion / fusion-merger\n"
        "    10.000     8.000    12.500  whole compile\n")


def test_bench_pipeline_of_xla_json(fake_xla_bench):
    """With a target and --json: the platform, the source of the times, and every row."""
    import json

    from mlirhlo_driver.commands import mlirhlo as commands

    target, _ = fake_xla_bench
    out = commands.bench_pipeline("x.mlir", target=target, repeats=3, json_out=True)
    assert out.startswith('{\n  "platform": "cpu",\n') and out.endswith("\n}\n")
    assert json.loads(out) == {
        "platform": "cpu", "source": "per-pass dump file timestamps", "compile_ms": [10.0, 8.0, 12.5],
        "passes": [{"pipeline": "simplification", "ending_with": "algsimp", "times_ms": [2.0, 1.0, 4.0]},
                   {"pipeline": "fusion", "ending_with": "fusion-merger", "times_ms": [0.5, 0.25, 0.75]}]}


# ------------------------------------------------------------ the typer commands' front-end (cli/app.py)

@pytest.mark.parametrize("argv, message", [
    (["run", "{small}", "--seed", "-1"], "Invalid value for '--seed': -1 is not in the range x>=0."),
    (["run", "{small}", "--rtol", "inf"],
     "Invalid value for '--rtol' / '--rel_error_bound': inf is not a finite number >= 0"),
    (["run", "{small}", "--atol", "-inf"],
     "Invalid value for '--atol' / '--abs_error_bound': -inf is not a finite number >= 0"),
    (["run", "{small}", "--timeout", "inf"], "Invalid value for '--timeout': inf is not a finite number > 0"),
    (["spmd-run", "{small}", "--coordinator", "localhost"],
     "Invalid value for '--coordinator': 'localhost' is not HOST:PORT, e.g. 10.0.0.1:1234"),
])
def test_typer_usage_error_is_one_line_naming_the_commands_help(cli, small, argv, message):
    """A value typer refuses (range, non-finite tolerance or timeout, HOST:PORT): exactly one line,
    typer's message and the command's --help to see, exit 2."""
    line = assert_one_line_error(cli(*[a.format(small=small) for a in argv]))
    # (the program's name in the hint is sys.argv[0]'s: 'mlirhlo' from the console script)
    assert line.startswith(f"error: {message} (see '") and line.endswith(f" {argv[0]} --help')"), line


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
def test_run_refuses_bad_combinations_before_any_compile(cli, small, args, message):
    """run's own checks, each one exact line and exit 2."""
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


def test_specs_check_reports_every_file_and_fails_if_one_is_bad(cli, small):
    """specs check: an ok line per good file (GPU, sm, SMs), an error line per bad one, exit 2 if any is bad."""
    good = REPO / "gpu_specs" / "h100_sxm.txtpb"
    result = cli("specs", "check", good, small, good)
    assert result.code == 2, result.err
    assert result.out == f"{good}: ok (NVIDIA H100 80GB HBM3, sm_90a, 132 SMs)\n" * 2
    assert result.err == f"error: {small}:1:5: field 'func' expects a message: func {{ ... }}\n"
    result = cli("specs", "check", good)
    assert (result.code, result.err) == (0, "")


@pytest.mark.parametrize("args, message", [
    (["--bogus", "--other"], "error: no such option: --bogus"),
    (["--platform", "cpu", "--repet", "2"], "error: no such option: --repet (did you mean '--repeats'?)"),
    (["--platform", "cpu", "--gpu_spec", "x"], "error: no such option: --gpu_spec (did you mean '--gpu-spec'?)"),
])
def test_bench_pipeline_unknown_option(cli, small, args, message):
    """bench-pipeline: a word typer left is refused by name; with --platform, with a suggestion
    from the command's own options."""
    assert assert_one_line_error(cli("bench-pipeline", small, *args)) == message


def test_emit_proto_alone_is_to_hlo_proto(cli, small, tmp_path):
    """--emit-proto (hlo-opt's spelling) writes what --to hlo-proto writes; given together they agree."""
    outs = []
    for i, args in enumerate((["--emit-proto"], ["--to", "hlo-proto"], ["--emit-proto", "--to", "hlo-proto"])):
        out = tmp_path / f"{i}.bin"  # an extension that names no format
        result = cli("convert", small, *args, "-o", out)
        assert result.code == 0, result.err
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2] and outs[0][:6] == b"\n\x04main"


@pytest.mark.parametrize("name, fmt", [("m.hlo", "HloModule"), ("m.txt", "HloModule"), ("m.mlir", "module"),
                                       ("m.pbtxt", "name:")])
def test_convert_format_from_the_output_extension(cli, small, tmp_path, name, fmt):
    """Without --to, -o's extension picks the format; an unknown extension asks for --to."""
    out = tmp_path / name
    result = cli("convert", small, "-o", out)
    assert result.code == 0, result.err
    assert out.read_text().lstrip().startswith(fmt), out.read_text()[:80]


def test_convert_to_wins_over_the_output_extension(cli, small, tmp_path):
    """--to FORMAT is the format whatever -o's extension says."""
    out = tmp_path / "m.mlir"
    result = cli("convert", small, "--to", "hlo", "-o", out)
    assert result.code == 0, result.err
    assert out.read_text().startswith("HloModule")


def test_convert_needs_a_format(cli, small, tmp_path):
    """No --to and no -o (or an -o whose extension names no format): one line listing the formats."""
    message = ("error: give --to FORMAT (or an -o file with a known extension) "
               "(formats: hlo, hlo-proto, hlo-pbtxt, stablehlo, bytecode, vhlo, mhlo)")
    assert assert_one_line_error(cli("convert", small)) == message
    assert assert_one_line_error(cli("convert", small, "-o", tmp_path / "m.xyz")) == message
    assert not (tmp_path / "m.xyz").exists()


def test_a_failed_conversion_names_the_file(cli, tmp_path):
    """A conversion the module cannot take (CHLO into VHLO): the error names the input file."""
    src = DATA / "chlo_special.mlir"
    line = assert_one_line_error(cli("convert", src, "--to", "vhlo", "-o", tmp_path / "x.vhlo"))
    assert line.startswith(f"error: {src}: cannot serialize as a StableHLO ")


class _Refusal(Exception):
    """Shaped like a click error, but not a usage error (exit code 1)."""

    exit_code = 1

    def format_message(self) -> str:
        return "refused"


@pytest.mark.parametrize("raised", [_Refusal(), "driver-error"], ids=["click-shaped-exit-1", "driver-error"])
def test_run_app_reraises_what_is_not_a_usage_error(monkeypatch, raised):
    """run_app turns only typer's usage errors (format_message and exit code 2) into an error line;
    anything else a command raises reaches the caller unchanged."""
    from mlirhlo_driver.cli import app
    from mlirhlo_driver.core import cache
    from mlirhlo_driver.errors import DriverError

    error = DriverError("cache is broken") if raised == "driver-error" else raised

    def info():
        raise error

    monkeypatch.setattr(cache, "info", info)
    with pytest.raises(type(error)) as e:
        app.run_app(["cache", "info"], "cache")
    assert e.value is error


def test_run_app_usage_error_without_a_context_has_no_hint(monkeypatch, capfd):
    """A usage error (by its shape) raised outside any typer context: the message alone, exit 2."""
    from mlirhlo_driver.cli import app
    from mlirhlo_driver.core import cache

    class Unconfigured(Exception):
        exit_code = 2
        ctx = None

        def format_message(self) -> str:
            return "the cache is not configured"

    def info():
        raise Unconfigured()

    monkeypatch.setattr(cache, "info", info)
    capfd.readouterr()
    with pytest.raises(SystemExit) as e:
        app.run_app(["cache", "info"], "cache")
    assert e.value.code == 2
    assert capfd.readouterr() == ("", "error: the cache is not configured\n")


@pytest.mark.parametrize("group, listing", [
    ("specs", ["list", "show", "check"]),
    ("cache", ["info", "clear"]),
])
def test_a_group_alone_prints_its_help_and_exits_2(cli, group, listing):
    """A command group without a sub-command: its help (every sub-command listed), exit 2."""
    r = cli(group)
    assert r.code == 2 and r.err == ""
    assert r.out.startswith("Usage: ") and r.out.splitlines()[0].endswith(f" {group} [OPTIONS] COMMAND [ARGS]...")
    assert re.findall(r"^  (\S+)  ", r.out.split("Commands:\n")[1], re.M) == listing


# ------------------------------------------------------------ run's verdict (fake reports)

@pytest.fixture
def fake_run(monkeypatch):
    """commands.run over fake modules and reports: ``state["statuses"]`` are the reports' statuses
    (OK passes); ``state`` records the options, the printing and the saving."""
    from types import SimpleNamespace

    from mlirhlo_driver.batch import run_report
    from mlirhlo_driver.execute import engine

    state: dict = {"statuses": ["OK"], "printed": None, "saved": None}

    def execute_tasks(tasks, options, jobs, timeout, scheduler):
        state["executed"] = (tasks, options, jobs, timeout, scheduler)
        return [SimpleNamespace(status=s, passed=s == "OK", message=f"{s} message", row=lambda s=s: {"status": s})
                for s in state["statuses"]]

    def print_run_reports(reports, options, print_literals, extra_flags):
        state["printed"] = ([r.status for r in reports], print_literals, extra_flags)

    monkeypatch.setattr(run_report, "run_tasks", lambda inputs, fmt, split, args: [f"task {i}" for i in inputs])
    monkeypatch.setattr(run_report, "execute_tasks", execute_tasks)
    monkeypatch.setattr(run_report, "print_run_reports", print_run_reports)
    monkeypatch.setattr(run_report, "save_outputs", lambda path, reports: state.update(saved=(path, len(reports))))
    monkeypatch.setattr(engine, "require_devices", lambda platform: None)
    return state


@pytest.mark.parametrize("statuses, code", [
    (["OK"], 0), (["OK", "OK"], 0), (["OK", "MISMATCH"], 1), (["FAILED"], 1), (["OK", "invalid"], 2),
])
def test_run_exit_code_is_the_worst_report(fake_run, statuses, code):
    """0 when every module matches, 1 when one mismatches or fails, 2 when one (of several) is invalid;
    every report is printed."""
    from mlirhlo_driver.commands import mlirhlo as commands

    fake_run["statuses"] = statuses
    assert commands.run(["a.mlir"], cli_flags={}, extra_words=[]) == code
    assert fake_run["printed"] == (statuses, False, [])


def test_run_of_one_invalid_module_is_one_error_line(fake_run, capsys):
    """A single module that is invalid: its message as the one error line, exit 2, no report printed."""
    from mlirhlo_driver.commands import mlirhlo as commands

    fake_run["statuses"] = ["invalid"]
    assert commands.run(["a.mlir"], cli_flags={}, extra_words=["--xla_x=1"]) == 2
    assert capsys.readouterr() == ("", "error: invalid message\n")
    assert fake_run["printed"] is None


def test_run_passes_its_options_on(fake_run, tmp_path):
    """What run hands the runner and the report: reference aliases resolved, outputs kept only when
    printed or saved, the XLA flags sorted, --split-input-file in the reproducer's flags."""
    from mlirhlo_driver.commands import mlirhlo as commands

    commands.run(["a.mlir", "b.mlir"], cli_flags={}, extra_words=["--xla_b=1"], reference="Host", jobs=0,
                 timeout=2.5, scheduler="tcp://h:8786", split_input_file=True)
    tasks, options, jobs, timeout, scheduler = fake_run["executed"]
    assert (tasks, jobs, timeout, scheduler) == (["task a.mlir", "task b.mlir"], 0, 2.5, "tcp://h:8786")
    assert (options.reference, options.platform, options.keep_outputs) == ("cpu", "cpu", False)
    assert fake_run["printed"][2] == ["--xla_b=1", "--split-input-file"]
    for kwargs in ({"print_literals": True}, {"save_outputs": str(tmp_path / "o.npz")}):
        commands.run(["a.mlir"], cli_flags={}, extra_words=[], **kwargs)
        assert fake_run["executed"][1].keep_outputs is True, kwargs
        assert fake_run["printed"][1] is bool(kwargs.get("print_literals")), kwargs
    assert fake_run["saved"] == (str(tmp_path / "o.npz"), 1)


def test_run_json_report_rows(fake_run, tmp_path):
    """--json: every report's row, a JSON list indented by 2, one final newline; written whatever the verdict."""
    from mlirhlo_driver.commands import mlirhlo as commands

    fake_run["statuses"] = ["OK", "MISMATCH"]
    path = tmp_path / "r.json"
    assert commands.run(["a.mlir"], cli_flags={}, extra_words=[], json_report=str(path)) == 1
    assert path.read_text() == '[\n  {\n    "status": "OK"\n  },\n  {\n    "status": "MISMATCH"\n  }\n]\n'
    assert fake_run["saved"] is None


# ------------------------------------------------------------ ptx's outputs (fake LLVM)

@pytest.fixture
def fake_ptx(monkeypatch):
    """commands.ptx over a fake NVPTX backend: two modules' pass dumps (one unnamed, one named, one
    IR without its final newline); ``seen`` records the options compiled with."""
    from types import SimpleNamespace

    from mlirhlo_driver.cuda import ptx as ptx_backend

    seen: dict = {}
    long_pass = "x" * 100

    def compile_llvm_ir(text, source, options):
        seen["call"] = (text, source, options)
        return SimpleNamespace(text="// ptx\n", dumps=[("", "pass-a", "ir a\n"), ("mod1", "pass b/c", "ir b"),
                                                       ("", long_pass, "ir c\n")])

    monkeypatch.setattr(ptx_backend, "read_llvm_ir", lambda source: f"IR of {source}")
    monkeypatch.setattr(ptx_backend, "compile_llvm_ir", compile_llvm_ir)
    return seen


def test_ptx_to_stdout_with_the_options_asked(fake_ptx, capsys):
    """No -o: the PTX on stdout; the options reach the backend; no pass dumps unless asked for."""
    from mlirhlo_driver.commands import mlirhlo as commands

    commands.ptx("k.ll", arch="sm_80", opt_level=1, optimize=False, libdevice="ld.bc", check_ptxas=False)
    assert capsys.readouterr() == ("// ptx\n", "")
    text, source, options = fake_ptx["call"]
    assert (text, source) == ("IR of k.ll", "k.ll")
    assert (options.arch, options.opt_level, options.optimize, options.libdevice, options.check_ptxas,
            options.dump_passes) == ("sm_80", 1, False, "ld.bc", False, False)


def test_ptx_print_after_all_writes_each_ir_to_stderr(fake_ptx, capsys, tmp_path):
    """--print-after-all: every pass's IR on stderr, each ending in one newline; -o takes the PTX."""
    from mlirhlo_driver.commands import mlirhlo as commands

    out = tmp_path / "k.ptx"
    commands.ptx("k.ll", print_after_all=True, output=str(out))
    assert capsys.readouterr() == ("", "ir a\nir b\nir c\n")
    assert out.read_text() == "// ptx\n"
    assert fake_ptx["call"][2].dump_passes is True


def test_ptx_ir_dump_dir_has_one_numbered_file_per_pass(fake_ptx, capsys, tmp_path):
    """--ir-dump-dir: NNN-MODULE_PASS.ll per pass (unsafe characters as '_', names cut at 80), in
    order; nothing on stderr even with --print-after-all."""
    from mlirhlo_driver.commands import mlirhlo as commands

    dump = tmp_path / "dump"
    commands.ptx("k.ll", ir_dump_dir=str(dump), print_after_all=True)
    assert capsys.readouterr() == ("// ptx\n", "")
    assert sorted(p.name for p in dump.iterdir()) == ["000-pass-a.ll", "001-mod1_pass_b_c.ll",
                                                      "002-" + "x" * 80 + ".ll"]
    assert (dump / "001-mod1_pass_b_c.ll").read_text() == "ir b"
    assert fake_ptx["call"][2].dump_passes is True


# ------------------------------------------------------------ what the typer commands hand the library

@pytest.fixture
def recorder(monkeypatch):
    """Library entry points the thin typer commands call, replaced by recorders returning a fixed text."""
    from mlirhlo_driver import listings, targets
    from mlirhlo_driver.batch import kernels
    from mlirhlo_driver.commands import mlirhlo as commands

    calls: dict = {}

    def record(name, result="table\n"):
        def fake(*args, **kwargs):
            calls[name] = (args, kwargs)
            return result
        return fake

    monkeypatch.setattr(commands, "bench_pipeline", record("bench_pipeline"))
    monkeypatch.setattr(targets, "resolve", record("resolve", "a target"))
    monkeypatch.setattr(kernels, "report", record("kernels"))
    monkeypatch.setattr(commands, "diff", record("diff"))
    monkeypatch.setattr(listings, "spec_table", record("spec_table"))
    monkeypatch.setattr(listings, "pass_catalog", record("pass_catalog"))
    monkeypatch.setattr(listings, "load_plugins", record("load_plugins", None))
    return calls


def test_bench_pipeline_command_hands_over_its_options(cli, small, recorder):
    """bench-pipeline: no --platform, no target; with one, targets.resolve's (the spec required);
    the table written as returned."""
    r = cli("bench-pipeline", small, "--passes", "cse", "--repeats", "3")
    assert (r.code, r.out, r.err) == (0, "table\n", "")
    args, kwargs = recorder["bench_pipeline"]
    assert args == (str(small),)
    from mlirhlo_driver.cli.common import say

    assert kwargs == {"target": None, "pipeline_spec": None, "passes": "cse", "compare": None, "repeats": 3,
                      "json_out": False, "input_format": None, "args": None, "say": say}
    assert "resolve" not in recorder and recorder["load_plugins"] == ((None,), {})
    r = cli("bench-pipeline", small, "--passes", "cse", "--platform", "cuda", "--gpu-spec", "a100",
            "--xla_gpu_autotune_level=0", "--json")
    assert (r.code, r.out) == (0, "table\n"), r.err
    args, kwargs = recorder["resolve"]
    assert args == ("cuda",) and kwargs["gpu_spec"] == "a100" and kwargs["needs_spec"] is True
    assert kwargs["cli_flags"] == {"xla_gpu_autotune_level": 0}
    assert recorder["bench_pipeline"][1]["target"] == "a target" and recorder["bench_pipeline"][1]["json_out"]


@pytest.mark.parametrize("argv, name, expected", [
    (["kernels"], "kernels", (([], "a target"), {"input_options": ("jax", None, False, None), "as_json": False,
                                                 "cache": True})),
    (["kernels", "a.hlo", "b.hlo", "--gpu-spec", "a100,h100_sxm", "--json", "--input-format", "hlo",
      "--no-cache"], "kernels",
     ((["a.hlo", "b.hlo"], "a target"), {"input_options": ("jax", "hlo", False, None), "as_json": True,
                                         "cache": False})),
    (["diff", "a.hlo"], "diff", (("a.hlo", None), {
        "platform": None, "gpu_spec": None, "flags_a": None, "flags_b": None, "stage": None,
        "input_options": ("jax", None, False, None), "as_json": False, "cache": True,
        "explain": False, "debug_options_file_a": None, "debug_options_file_b": None})),
    (["diff", "m.py:f", "--args", "f32[8]", "--no-cache", "--json", "--stage", "hlo"], "diff", (("m.py:f", None), {
        "platform": None, "gpu_spec": None, "flags_a": None, "flags_b": None, "stage": "hlo",
        "input_options": ("jax", None, False, "f32[8]"), "as_json": True, "cache": False,
        "explain": False, "debug_options_file_a": None, "debug_options_file_b": None})),
    (["specs", "list"], "spec_table", ((), {"as_json": False})),
    (["specs", "list", "--json"], "spec_table", ((), {"as_json": True})),
    (["passes"], "pass_catalog", ((), {})),
])
def test_report_commands_hand_over_their_options(cli, recorder, argv, name, expected):
    """kernels, diff, specs list and passes: the library's text on stdout as is, their options passed
    through (defaults: all inputs none, text not JSON, the cache used; kernels' target resolved for
    CUDA; notes go to the command line's ``say``)."""
    from mlirhlo_driver.cli.common import say

    r = cli(*argv)
    assert (r.code, r.out, r.err) == (0, "table\n", "")
    args, kwargs = recorder[name]
    if "input_options" in kwargs:
        o = kwargs["input_options"]
        kwargs = {**kwargs, "input_options": ("jax", o.input_format, o.split_input_file, o.args)}
        assert kwargs.pop("say") is say
        kwargs.pop("progress", None)
    assert (args, kwargs) == expected
    if name == "kernels":
        assert recorder["resolve"][0] == ("cuda",)


@pytest.fixture
def run_recorder(monkeypatch):
    """commands.run and the spmd launcher replaced by recorders; ``calls["code"]`` is what they return."""
    from mlirhlo_driver.commands import mlirhlo as commands
    from mlirhlo_driver.commands import spmd_run as spmd_launch

    calls: dict = {"code": 0}

    def run(inputs, **kwargs):
        calls["run"] = (inputs, kwargs)
        return calls["code"]

    def spmd_options(flags, **kwargs):
        calls["spmd_options"] = (flags, kwargs)
        return "options"

    def spmd_run(launch, options):
        calls["spmd_run"] = launch
        return calls["code"]

    monkeypatch.setattr(commands, "run", run)
    monkeypatch.setattr(spmd_launch, "spmd_options", spmd_options)
    monkeypatch.setattr(spmd_launch, "run", spmd_run)
    return calls


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
    assert (kwargs["seed"], kwargs["jobs"], kwargs["iterations"], kwargs["reference"]) == (3, 1, 1, "interpreter")
    assert (kwargs["rtol"], kwargs["atol"], kwargs["timeout"]) == (None, None, None)
    r = cli("run", "a.mlir", "--seed", "0", "--rtol", "0.5", "--atol", "0", "--timeout", "7", "--jobs", "2")
    assert r.code == code, r.err
    kwargs = run_recorder["run"][1]
    assert (kwargs["seed"], kwargs["rtol"], kwargs["atol"], kwargs["timeout"], kwargs["jobs"]) == (0, 0.5, 0.0, 7.0, 2)


@pytest.mark.parametrize("code", [0, 1])
def test_spmd_run_command_hands_over_its_options(cli, run_recorder, code):
    """spmd-run: the module, its options (defaults: one partition and replica, 300 s) and the
    --xla_* flags reach the launcher; the exit code is the launcher's."""
    run_recorder["code"] = code
    r = cli("spmd-run", "m.hlo", "--xla_cpu_enable_fast_math=true", "--arg-sharding", "0={replicated}")
    assert (r.code, r.out, r.err) == (code, "", "")
    flags, kwargs = run_recorder["spmd_options"]
    assert flags == {"xla_cpu_enable_fast_math": True}
    assert kwargs == {
        "argument_mode": None, "inputs_npz": None, "partitioner": None, "arg_sharding": ("0={replicated}",),
        "num_partitions": 1, "num_replicas": 1, "is_spmd_partitioned_module": False, "run_xla_backend_only": False,
        "seed": 0, "large_float_range": False, "rtol": None, "atol": None, "num_repeats": 1, "reference": "cpu",
        "reference_module": None}
    launch = run_recorder["spmd_run"]
    assert (launch.source, launch.input_format, launch.args, launch.arg_sharding, launch.dump_output,
            launch.num_processes, launch.process_id, launch.coordinator, launch.launch_local, launch.timeout) == \
        ("m.hlo", None, None, ("0={replicated}",), None, 1, None, None, None, 300.0)
    cli("spmd-run", "m.hlo", "--coordinator", "10.0.0.1:1234", "--process-id", "0", "--num-processes", "2")
    assert (run_recorder["spmd_run"].coordinator, run_recorder["spmd_run"].arg_sharding) == ("10.0.0.1:1234", ())


def test_specs_show_prints_the_summary_then_the_textproto(cli):
    """specs show: '# key: value' per summary field, then the spec file's text, nothing on stderr."""
    path = REPO / "gpu_specs" / "h100_sxm.txtpb"
    r = cli("specs", "show", "h100_sxm")
    assert r.code == 0 and r.err == "", r.err
    assert r.out.startswith(f"# name: h100_sxm\n# path: {path}\n# gpu: NVIDIA H100 80GB HBM3\n")
    assert r.out.endswith("\n" + path.read_text().rstrip("\n") + "\n")


def test_specs_notes_go_to_stderr(cli, tmp_path):
    """A spec lacking a field its compute capability determines: show and check print the note on
    stderr, one line, and still succeed."""
    text = (REPO / "gpu_specs" / "h100_sxm.txtpb").read_text()
    assert text.count("fpus_per_core: 128\n") == 1
    path = tmp_path / "short.txtpb"
    path.write_text(text.replace("fpus_per_core: 128\n", ""))
    note = (f"note: {path} lacks fpus_per_core; filled in as every compute capability 9.0 GPU reports: "
            "fpus_per_core: 128\n")
    for argv in (["show", path], ["check", path]):
        r = cli("specs", *argv)
        assert (r.code, r.err) == (0, note), argv
    assert r.out == f"{path}: ok (NVIDIA H100 80GB HBM3, sm_90a, 132 SMs)\n"


def test_cache_info_and_clear(cli, private_site, monkeypatch):
    """cache info: directory, entries, bytes and the cap, one per line; cache clear: how many went."""
    from mlirhlo_driver.core import cache

    monkeypatch.setattr(cache, "info", lambda: {"directory": "/c", "entries": 3, "bytes": 1234, "max_bytes": 99})
    r = cli("cache", "info")
    assert (r.code, r.err) == (0, "")
    assert r.out == ("directory  /c\nentries    3\nsize       1234 bytes\n"
                     "max size   99 bytes (MLIRHLO_CACHE_MAX_BYTES; least recently used go first)\n")
    monkeypatch.setattr(cache, "clear", lambda: 3)
    r = cli("cache", "clear")
    assert (r.code, r.out) == (0, f"removed 3 entries from {cache.cache_dir()}\n")


def test_xla_pass_listing_on_the_given_modules_or_xla_reference(monkeypatch):
    """opt --list-passes --platform P: the target's options for its platform, on the given modules
    (loaded with --input-format/--args), or on none (XLA's reference module) without inputs."""
    from types import SimpleNamespace

    from mlirhlo_driver.commands import mlirhlo as commands
    from mlirhlo_driver.core import program
    from mlirhlo_driver.xla import passes as xla_passes

    loaded = []
    monkeypatch.setattr(program, "programs", lambda specs, options:
                        loaded.append((specs, options.input_format, options.args)) or ["module"])
    monkeypatch.setattr(xla_passes, "listing", lambda candidates, modules=None: f"{candidates} on {modules}\n")
    target = SimpleNamespace(platform="cuda", options_for=lambda platform: f"options for {platform}")
    assert commands.xla_pass_listing(target, []) == "['options for cuda'] on None\n"
    assert loaded == []
    assert commands.xla_pass_listing(target, ["m.py:f"], input_format="jax", args="f32[4]") == \
        "['options for cuda'] on ['module']\n"
    assert loaded == [(["m.py:f"], "jax", "f32[4]")]
