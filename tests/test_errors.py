"""Every bad input: one ``error: FILE:LINE:COL: message`` line, exit 2, no traceback,
nothing written."""

from __future__ import annotations

import pytest
from conftest import DATA, assert_one_line_error

MLP_DUMP = DATA / "mlp_train_step.before_optimizations.txt"


def _opt_to_file(cli, tmp_path, *args):
    out = tmp_path / "out.mlir"
    result = cli("opt", *args, "-o", out)
    assert not out.exists(), "no half-written output on error"
    assert not list(tmp_path.glob(".out.mlir.*")), "no temp file left"
    return result


def test_malformed_hlo_text(cli, tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n"
                   "  ROOT add = f32[4] add(p0, p2)\n}\n")
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, bad))
    assert line == f"error: {bad}:5:29: instruction does not exist: p2"


def test_unknown_hlo_opcode(cli, tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n  ROOT x = f32[4] frob(p0)\n}\n")
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, bad))
    assert line == f"error: {bad}:5:19: Unknown opcode: frob"


def test_malformed_mlir(cli, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %0 = stablehlo.tanhh %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, bad))
    assert line == f"error: {bad}:2:8: custom op 'stablehlo.tanhh' is unknown"


def test_unregistered_dialect(cli, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  foo.bar() : () -> ()\n  return\n}\n")
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, bad))
    assert line.startswith(f"error: {bad}:2:3: Dialect `foo' not found for custom op 'foo.bar'")
    assert "unregistered dialect" in line


def test_truncated_bytecode(cli, tmp_path):
    from mlirhlo_driver.inputs import loader as inputs
    from mlirhlo_driver.ir import emit

    module = inputs.load(str(DATA / "chlo_special.mlir"))[0].module
    data = emit.bytecode(module)
    bad = tmp_path / "cut.mlirbc"
    bad.write_bytes(data[: len(data) // 2])
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, bad))
    assert line.startswith(f"error: {bad}: ")


def test_truncated_vhlo_artifact(cli, tmp_path):
    data = (DATA / "softmax.vhlo").read_bytes()
    bad = tmp_path / "cut.vhlo"
    bad.write_bytes(data[:200])
    assert_one_line_error(_opt_to_file(cli, tmp_path, bad), contains=f"{bad}: ")


def test_binary_garbage(cli, tmp_path):
    import random

    rng = random.Random(7)
    bad = tmp_path / "garbage.bin"
    bad.write_bytes(bytes(rng.randrange(256) for _ in range(4096)) + b"\x00")
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, bad))
    assert "neither MLIR bytecode nor an HLO proto" in line


@pytest.mark.parametrize("content", ["", "\n   \n"])
def test_empty_file(cli, tmp_path, content):
    bad = tmp_path / "empty.mlir"
    bad.write_text(content)
    assert assert_one_line_error(_opt_to_file(cli, tmp_path, bad)) == f"error: {bad}: empty file"


def test_missing_file(cli, tmp_path):
    missing = tmp_path / "nope.hlo"
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, missing))
    assert line == f"error: {missing}: no such file or directory"


def test_directory_without_modules(cli, tmp_path):
    d = tmp_path / "empty_dir"
    d.mkdir()
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, d))
    assert line == f"error: {d}: directory holds no loadable modules"


def test_unknown_pass_suggests(cli, tmp_path):
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, MLP_DUMP, "--passes", "cse,canonicalise"))
    assert line == "error: --passes:1:5: unknown pass 'canonicalise' (did you mean 'canonicalize'?)"


def test_unknown_pass_in_pipeline_points_at_column(cli, tmp_path):
    spec = "builtin.module(func.func(canonicalize,chlo-legalize-to-stablehlox))"
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, MLP_DUMP, "--pipeline", spec))
    col = spec.index("chlo-legalize-to-stablehlox") + 1
    assert line.startswith(f"error: --pipeline:1:{col}: unknown pass 'chlo-legalize-to-stablehlox'")
    assert "did you mean 'chlo-legalize-to-stablehlo'" in line


@pytest.mark.parametrize("spec,col,what", [
    ("builtin.module(func.func(canonicalize)", 39, "unbalanced parentheses"),
    ("builtin.module(cse,,canonicalize)", 20, "expected a pass name"),
    ("builtin.module(cse) x", 21, "unexpected 'x'"),
    ("builtin.module(canonicalize{max-iterations=3)", 28, "unbalanced braces"),
    ("builtin.module(func.func(symbol-dce))", 26, "runs on 'builtin.module' ops"),
    ("builtin.module(chlo-legalize-to-stablehlo)", 16, "runs on 'func.func' ops"),
])
def test_bad_pipeline_syntax(cli, tmp_path, spec, col, what):
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, MLP_DUMP, "--pipeline", spec))
    assert line.startswith(f"error: --pipeline:1:{col}: "), line
    assert what in line


def test_unknown_named_pipeline(cli, tmp_path):
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, MLP_DUMP, "--pipeline", "@simplfy"))
    assert "unknown named pipeline '@simplfy'" in line and "did you mean 'simplify'" in line


def test_jax_entry_that_does_not_import(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, "no_such_pkg.model:f", "--args", "f32[2]"))
    assert line.startswith("error: no_such_pkg.model:f: cannot import module 'no_such_pkg.model'")


def test_jax_entry_missing_function(cli, tmp_path, monkeypatch):
    (tmp_path / "mm_fwd.py").write_text("def forward(x):\n    return x\n")
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, "mm_fwd:forwrd", "--args", "f32[2]"))
    assert "has no attribute 'forwrd'" in line and "did you mean 'forward'" in line


@pytest.mark.parametrize("spec,col,what", [
    ("f32[8,128],i32[8", 12, "expected DTYPE[DIMS]"),
    ("f33[8]", 1, "unknown dtype 'f33'"),
    ("f32[8];i32[8]", 7, "expected ','"),
])
def test_malformed_args_spec(cli, tmp_path, monkeypatch, spec, col, what):
    (tmp_path / "mm_fwd.py").write_text("def forward(x):\n    return x\n")
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, "mm_fwd:forward", "--args", spec))
    assert line.startswith(f"error: --args:{col}: ") and what in line, line


def test_unknown_option_and_stage(cli):
    assert_one_line_error(cli("opt", MLP_DUMP, "--bogus"), contains="no such option: --bogus")
    line = assert_one_line_error(cli("opt", MLP_DUMP, "--stage", "stablehl"))
    assert "unknown stage 'stablehl'" in line and "did you mean 'stablehlo'" in line


def test_usage_errors_are_one_line(cli):
    result = cli("convert")
    assert result.code == 2
    assert result.err.startswith("error: ") and len(result.err.strip().splitlines()) == 1


def test_convert_a_directory(cli, tmp_path):
    import shutil

    d = tmp_path / "two"
    d.mkdir()
    shutil.copy(DATA / "erf_inv.mlir", d / "a.mlir")
    shutil.copy(DATA / "softmax.vhlo", d / "b.vhlo")
    line = assert_one_line_error(cli("convert", d, "--to", "hlo", "-o", tmp_path / "x.hlo"))
    assert line == f"error: {d}: expected one module, found 2"
    assert not (tmp_path / "x.hlo").exists()


def test_parameters_are_spelled_by_the_reader():
    """A message names a parameter once, where it is made; the reader spells it: the API's
    keywords from Python (str), the flags on a command line (format), in the message, the
    location and the hint; a message made in a worker reads the same wherever it is shown."""
    import pickle

    from mlirhlo_driver.errors import FLAGS, PARAMS, DriverError, param, spell

    text = f"{param('gpu_spec')} is for {param('platform', 'cuda')}, {param('num_partitions', 4)}"
    assert spell(text, PARAMS) == "gpu_spec is for platform='cuda', num_partitions=4"
    assert spell(text, FLAGS) == "--gpu-spec is for --platform cuda, --num-partitions 4"
    e = pickle.loads(pickle.dumps(DriverError(text, file=param("arg_sharding"), hint=param("platform", "cpu"))))
    assert str(e) == "arg_sharding: gpu_spec is for platform='cuda', num_partitions=4 (platform='cpu')"
    assert e.format() == "error: --arg-sharding: --gpu-spec is for --platform cuda, --num-partitions 4 (--platform cpu)"
    assert e.format(PARAMS) == "error: " + str(e)
    with pytest.raises(ValueError):
        spell(text, "shell")


def test_xla_flags_are_spelled_as_given():
    """An XLA flag keeps its underscores either way: ``--xla_name=value`` on a command line,
    the ``xla_flags`` key (and the value's repr) from Python."""
    from mlirhlo_driver.errors import FLAGS, PARAMS, spell, xla_flag

    text = f"unknown XLA flag '{xla_flag('xla_gpu_autotune_levl')}'; {xla_flag('xla_dump_to', 'x')}"
    assert spell(text, FLAGS) == "unknown XLA flag '--xla_gpu_autotune_levl'; --xla_dump_to=x"
    assert spell(text, PARAMS) == "unknown XLA flag 'xla_gpu_autotune_levl'; xla_dump_to='x'"


@pytest.mark.parametrize("log, line", [
    ("noise\nLLVM ERROR: Cannot select: intrinsic. More text\nlast\n", "Cannot select: intrinsic"),
    ("noise\nF0101 check.cc:1] Check failed: " + "x" * 400 + "\nlast\n", ("F0101 check.cc:1] Check failed: " + "x" * 400)[:300]),
    ("noise\n" + "y" * 400 + "\n", "y" * 300),
    ("", ""),
])
def test_native_error_line_picks_the_line_that_says_why_and_bounds_it(log, line):
    """LLVM's fatal error first, then an error-looking line, then the last: at most 300
    characters of it, the rest of a long line is noise in a one-line error."""
    from mlirhlo_driver._native.fds import native_error_line

    assert native_error_line(log) == line


def test_exit_codes_of_each_error_class():
    """Bad usage or input exits 2, a fine input that failed to compile or run exits 1, Ctrl-C 130."""
    from mlirhlo_driver import errors as E

    assert (E.EXIT_OK, E.EXIT_FAILURE, E.EXIT_USAGE, E.EXIT_INTERRUPTED) == (0, 1, 2, 130)
    usage = [E.DriverError, E.InputError, E.PipelineError, E.StageError, E.NoGpu, E.SpecError,
             E.FlagError, E.ToolchainError, E.EnvironmentMismatch, E.NativeCrash]
    failure = [E.PassFailure, E.CompileError, E.ExecutionError, E.DistributedError]
    assert [c.exit_code for c in usage] == [2] * len(usage)
    assert [c.exit_code for c in failure] == [1] * len(failure)


@pytest.mark.parametrize("kw, text", [
    ({}, "error: boom"),
    ({"file": "a.mlir"}, "error: a.mlir: boom"),
    ({"file": "a.mlir", "line": 3}, "error: a.mlir:3: boom"),
    ({"file": "a.mlir", "line": 3, "col": 7}, "error: a.mlir:3:7: boom"),
    ({"line": 0, "col": 0}, "error: 0:0: boom"),
    ({"file": "--args", "col": 12}, "error: --args:12: boom"),
    ({"hint": "did you mean 'x'?"}, "error: boom (did you mean 'x'?)"),
    ({"file": "f", "line": 1, "hint": "h"}, "error: f:1: boom (h)"),
    ({"hint": ""}, "error: boom"),
])
def test_driver_error_one_line_form(kw, text):
    """``error: FILE:LINE:COL: message (hint)``: each known location part, 0 included, and the hint."""
    from mlirhlo_driver.errors import DriverError

    e = DriverError("boom", **kw)
    assert e.format() == text
    assert str(e) == text.removeprefix("error: ")  # what a traceback or a notebook shows
    assert (e.message, e.file, e.line, e.col, e.hint) == (
        "boom", kw.get("file"), kw.get("line"), kw.get("col"), kw.get("hint"))
    assert e.location() == ":".join(str(kw[k]) for k in ("file", "line", "col") if k in kw)


def test_driver_error_escapes_control_characters():
    """Control characters quoted from the input are escaped, so the error stays one line."""
    from mlirhlo_driver.errors import DriverError

    e = DriverError("op 'a\nb\x1b\x7f'", file="f\tg", hint="c\rd")
    assert e.format() == "error: f\\tg: op 'a\\nb\\x1b\\x7f' (c\\rd)"
    assert e.message == "op 'a\nb\x1b\x7f'"


def test_pass_failure_and_native_crash_carry_their_details():
    """PassFailure keeps the pass, diagnostics and reproducer; NativeCrash the status, log and
    whether it timed out; both keep the location of a DriverError."""
    from mlirhlo_driver.errors import NativeCrash, PassFailure

    p = PassFailure("failed", file="m.mlir", line=2)
    assert (p.pass_name, p.diagnostics, p.reproducer, p.format()) == (None, "", None, "error: m.mlir:2: failed")
    p = PassFailure("failed", pass_name="cse", diagnostics="d", reproducer="r.mlir", hint="h")
    assert (p.pass_name, p.diagnostics, p.reproducer, p.hint) == ("cse", "d", "r.mlir", "h")
    c = NativeCrash("died", file="m.hlo")
    assert (c.status, c.native_log, c.timed_out, c.format()) == (None, "", False, "error: m.hlo: died")
    c = NativeCrash("died", status=134, native_log="log", timed_out=True)
    assert (c.status, c.native_log, c.timed_out) == (134, "log", True)


def test_did_you_mean_names_up_to_n_close_choices_once():
    """The closest choices (3 by default), each once, best first; None when nothing is close."""
    from mlirhlo_driver.errors import did_you_mean

    names = ["canonicalize", "canonicalise", "canonicalizer", "canonicalized", "cse"]
    assert did_you_mean("canonicalizee", names) == "did you mean 'canonicalize', 'canonicalizer', 'canonicalized'?"
    assert did_you_mean("canonicalizee", names, n=1) == "did you mean 'canonicalize'?"
    assert did_you_mean("cse", ["cse", "cse", "dce"]) == "did you mean 'cse', 'dce'?"
    assert did_you_mean("xyz", names) is None
    assert did_you_mean("cse", []) is None
    # difflib's ratio is 2*matches/total: 0.6 is close enough, below it is not.
    assert did_you_mean("abcde", ["abcxy"]) == "did you mean 'abcxy'?"
    assert did_you_mean("abcde", ["abxyz"]) is None


def test_notes_go_to_the_logger_from_python_and_stderr_on_the_command_line(capfd, caplog):
    """From Python a note is an INFO record of the 'mlirhlo_driver' logger and nothing on stderr;
    a command line's ``say`` writes one ``note: ...`` line on stderr, naming its flags."""
    import logging

    from mlirhlo_driver.cli.common import say
    from mlirhlo_driver.errors import log_note, param

    capfd.readouterr()
    with caplog.at_level(logging.INFO, logger="mlirhlo_driver"):
        log_note("from python")
        say(f"from the command line, {param('gpu_spec')}")
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("mlirhlo_driver", logging.INFO, "from python")]
    assert capfd.readouterr().err == "note: from the command line, --gpu-spec\n"
