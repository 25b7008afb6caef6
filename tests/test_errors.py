"""errors.py: the typed errors, their one-line form, exit codes and hints."""

from __future__ import annotations

import pytest


@pytest.mark.golden
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


@pytest.mark.golden
def test_xla_flags_are_spelled_as_given():
    """An XLA flag keeps its underscores either way: ``--xla_name=value`` on a command line,
    the ``xla_flags`` key (and the value's repr) from Python."""
    from mlirhlo_driver.errors import FLAGS, PARAMS, spell, xla_flag

    text = f"unknown XLA flag '{xla_flag('xla_gpu_autotune_levl')}'; {xla_flag('xla_dump_to', 'x')}"
    assert spell(text, FLAGS) == "unknown XLA flag '--xla_gpu_autotune_levl'; --xla_dump_to=x"
    assert spell(text, PARAMS) == "unknown XLA flag 'xla_gpu_autotune_levl'; xla_dump_to='x'"


def test_exit_codes_of_each_error_class():
    """Bad usage or input exits 2, a fine input that failed to compile or run exits 1, Ctrl-C 130."""
    from mlirhlo_driver import errors as E

    assert (E.EXIT_OK, E.EXIT_FAILURE, E.EXIT_USAGE, E.EXIT_INTERRUPTED) == (0, 1, 2, 130)
    usage = [E.DriverError, E.InputError, E.PipelineError, E.StageError, E.NoGpu, E.SpecError,
             E.FlagError, E.ToolchainError, E.EnvironmentMismatch, E.NativeCrash]
    failure = [E.PassFailure, E.CompileError, E.ExecutionError, E.DistributedError]
    assert [c.exit_code for c in usage] == [2] * len(usage)
    assert [c.exit_code for c in failure] == [1] * len(failure)


@pytest.mark.golden
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


@pytest.mark.golden
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
    assert (p.pass_name, p.diagnostics, p.reproducer, p.location()) == (None, "", None, "m.mlir:2")
    p = PassFailure("failed", pass_name="cse", diagnostics="d", reproducer="r.mlir", hint="h")
    assert (p.pass_name, p.diagnostics, p.reproducer, p.hint) == ("cse", "d", "r.mlir", "h")
    c = NativeCrash("died", file="m.hlo")
    assert (c.status, c.native_log, c.timed_out, c.location()) == (None, "", False, "m.hlo")
    c = NativeCrash("died", status=134, native_log="log", timed_out=True)
    assert (c.status, c.native_log, c.timed_out) == (134, "log", True)


@pytest.mark.golden
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


@pytest.mark.golden
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


@pytest.mark.golden
def test_library_errors_print_as_their_one_line_form():
    from mlirhlo_driver.errors import InputError

    e = InputError("bad thing", file="m.mlir", line=3, col=5, hint="try this")
    assert e.format() == "error: " + str(e) == "error: m.mlir:3:5: bad thing (try this)"
