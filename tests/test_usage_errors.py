"""Everyday mistakes get one ``error:`` line and exit 2, not a traceback, a hang, a
silently wrong answer or native noise (issue 12)."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from conftest import DATA, REPO, assert_one_line_error, readline_within

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
    spec = (REPO / "mlirhlo_driver" / "gpu_specs" / "h100_sxm.txtpb").read_text()
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
