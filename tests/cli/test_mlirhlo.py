"""cli/mlirhlo.py, ``mlirhlo``'s entry point: which parser takes a command, how a short
command leaves (os._exit after flushing, with sys.exit's meaning), Ctrl-C and OS errors as
one line. In-process, with the library calls replaced where the front-end is what is tested.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest

import mlirhlo_driver.cli.mlirhlo as mlirhlo_cli
import mlirhlo_driver.cli.opt as opt_cli
from tests.conftest import assert_mentions

SEE_HELP = " (see 'mlirhlo opt --help')"


class _Left(Exception):
    """os._exit, replaced: the process would have ended with ``args[0]``."""


@pytest.fixture
def console(monkeypatch):
    """main() as the console script, in this process: sys.argv set, _main faked, os._exit raising
    _Left; what the fast exit does to the process (gc, exit handlers) is recorded instead."""
    import atexit
    import gc

    state = SimpleNamespace(argv=None, raised=None, calls=[])

    def fake_main(argv):
        state.argv = argv
        if state.raised is not None:
            raise state.raised

    def leave(code):
        raise _Left(code)

    monkeypatch.setattr(mlirhlo_cli, "_main", fake_main)
    monkeypatch.setattr(os, "_exit", leave)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: state.calls.append("atexit"))
    monkeypatch.setattr(gc, "freeze", lambda: state.calls.append("freeze"))
    monkeypatch.setattr(gc, "set_threshold", lambda *a: state.calls.append(("threshold", a)))
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)

    def run(*argv, raised=None):
        monkeypatch.setattr(sys, "argv", ["mlirhlo", *argv])
        state.raised, state.argv, state.calls[:] = raised, None, []
        with pytest.raises(_Left) as e:
            mlirhlo_cli.main()
        return e.value.args[0]

    state.run = run
    return state


class _Stdout:
    """A stdout whose flush fails with ``error``."""

    def __init__(self, error):
        self.error = error

    def write(self, text):
        return len(text)

    def flush(self):
        raise self.error


# ------------------------------------------------------------------ mlirhlo: the entry point

@pytest.mark.parametrize("argv, command", [
    ([], None), (["--help"], None), (["-h", "opt"], None), (["--verbose", "--help", "run"], None),
    (["opt", "--help"], "opt"), (["--x", "run", "m.hlo"], "run"), (["--x", "-y"], None), (["-"], None),
])
def test_invoked_command_is_the_first_word_before_any_help(argv, command):
    """The sub-command named: the first non-dash word, unless -h/--help comes before it."""
    assert mlirhlo_cli._invoked_command(argv) == command


def test_the_package_exposes_the_typer_app_lazily():
    """``mlirhlo.app`` is cli/app.py's typer app; other names are AttributeErrors."""
    from mlirhlo_driver.cli import app

    assert mlirhlo_cli.app is app.app
    with pytest.raises(AttributeError):
        mlirhlo_cli.no_such_name  # noqa: B018


def test_opt_is_parsed_by_its_own_parser_never_typers(monkeypatch):
    """``mlirhlo opt ARGS``: opt.main gets ARGS (typer's app is not used) and its code is the exit."""
    from mlirhlo_driver.cli import app

    seen = []
    monkeypatch.setattr(app, "run_app", lambda argv, command: pytest.fail("typer ran opt"))
    monkeypatch.setattr(opt_cli, "main", lambda argv: seen.append(argv) or 3)
    with pytest.raises(SystemExit) as e:
        mlirhlo_cli.main(["opt", "m.mlir", "--stage", "hlo"])
    assert e.value.code == 3 and seen == [["m.mlir", "--stage", "hlo"]]


def test_other_commands_go_to_the_typer_app(monkeypatch):
    """Any other command (and none) is typer's, with the command it names."""
    from mlirhlo_driver.cli import app

    seen = []
    monkeypatch.setattr(opt_cli, "main", lambda argv: pytest.fail("opt ran"))
    monkeypatch.setattr(app, "run_app", lambda argv, command: seen.append((argv, command)))
    mlirhlo_cli.main(["run", "opt"])
    mlirhlo_cli.main(["--help", "opt"])
    assert seen == [(["run", "opt"], "run"), (["--help", "opt"], None)]


def test_ctrl_c_in_opt_is_one_line_and_exit_130(monkeypatch):
    """Ctrl-C that opt did not catch: the interrupt's one report, exit 130."""
    from mlirhlo_driver._native import interrupts

    reports = []

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(opt_cli, "main", interrupted)
    monkeypatch.setattr(interrupts, "report", lambda *a: reports.append(a))
    with pytest.raises(SystemExit) as e:
        mlirhlo_cli.main(["opt", "m.mlir"])
    assert e.value.code == 130 and reports == [()]


@pytest.mark.parametrize("command", sorted(c for c in mlirhlo_cli._FAST_EXIT if c) + ["--help"])
def test_short_commands_leave_by_os_exit_after_the_exit_handlers(console, capfd, command):
    """The short-lived commands: argv is sys.argv's words after the program, the collector frozen
    and tuned, exit handlers run, then os._exit with the command's code (0 when it returns)."""
    assert console.run(command, "x") == 0
    assert console.argv == [command, "x"]
    assert console.calls == ["freeze", ("threshold", (50_000, 50, 100)), "atexit"]
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert capfd.readouterr() == ("", "")


def test_the_users_openblas_threads_are_kept(console, monkeypatch):
    """OPENBLAS_NUM_THREADS is 1 only where the user did not set it."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    console.run("opt")
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


@pytest.mark.parametrize("command", ["run", "spmd-run", "bench-pipeline"])
def test_long_commands_exit_normally(console, monkeypatch, command):
    """run, spmd-run, bench-pipeline: no os._exit (their pools clean up at exit); SystemExit propagates."""
    monkeypatch.setattr(sys, "argv", ["mlirhlo", command, "m.hlo"])
    console.raised = SystemExit(5)
    with pytest.raises(SystemExit) as e:
        mlirhlo_cli.main()
    assert e.value.code == 5 and console.argv == [command, "m.hlo"] and console.calls == []


def test_long_command_ctrl_c_is_exit_130(console, monkeypatch, capfd):
    """Ctrl-C that run did not catch: 'error: interrupted', exit 130, at once (an abandoned
    compile may still run inside XLA: the interpreter's teardown is skipped)."""
    from mlirhlo_driver._native import interrupts

    monkeypatch.setattr(interrupts, "_reported", False)
    monkeypatch.setattr(sys, "argv", ["mlirhlo", "run", "m.hlo"])
    console.raised = KeyboardInterrupt()
    with pytest.raises(_Left) as e:
        mlirhlo_cli.main()
    assert e.value.args[0] == 130 and console.calls == ["atexit"]  # exit handlers run: helpers stopped
    err = capfd.readouterr().err  # _native/interrupts.py's one line (its wording: tests/_native/test_interrupts.py)
    assert err.startswith("error: ") and err.count("\n") == 1 and "interrupted" in err, err


@pytest.mark.parametrize("raised, code, err", [
    (SystemExit(None), 0, ""), (SystemExit(0), 0, ""), (SystemExit(2), 2, ""), (SystemExit("text"), 1, "text\n"),
    (KeyboardInterrupt(), 130, "error: interrupted\n"), (BrokenPipeError(32, "Broken pipe"), 0, ""),
    (OSError(28, "No space left on device", "out.txt"), 1, "error: out.txt: No space left on device\n"),
    (OSError(28, "No space left on device"), 1, "error: No space left on device\n"),
    (OSError("plain"), 1, "error: plain\n"),
])
def test_short_command_exit_codes_and_lines(console, monkeypatch, capfd, raised, code, err):
    """How a short command's end becomes its exit code and stderr lines."""
    from mlirhlo_driver._native import interrupts

    monkeypatch.setattr(interrupts, "_reported", False)
    assert console.run("opt", raised=raised) == code
    assert capfd.readouterr() == ("", err)
    assert console.calls[-1] == "atexit"


def test_short_command_crash_is_a_traceback_and_exit_1(console, capfd):
    """An exception no one caught: its traceback on stderr, exit 1."""
    assert console.run("opt", raised=RuntimeError("boom")) == 1
    err = capfd.readouterr().err
    assert err.startswith("Traceback") and err.endswith("RuntimeError: boom\n")


@pytest.mark.parametrize("error, raised, code, err", [
    (OSError(28, "No space left on device"), None, 1, "error: cannot write stdout: No space left on device\n"),
    (OSError(28, "No space left on device"), SystemExit(2), 2, ""),
    (OSError(28, "No space left on device"), SystemExit("why"), 1, "why\n"),
    (BrokenPipeError(32, "Broken pipe"), None, 0, ""),
    (BrokenPipeError(32, "Broken pipe"), SystemExit(3), 3, ""),
])
@pytest.mark.golden
def test_stdout_that_cannot_be_flushed(console, monkeypatch, capfd, error, raised, code, err):
    """Golden: output the system refuses at the last flush: one line and exit 1 unless the command already
    failed; a reader that went away (| head) is no failure."""
    monkeypatch.setattr(sys, "stdout", _Stdout(error))
    assert console.run("opt", raised=raised) == code
    assert capfd.readouterr().err == err


@pytest.mark.golden
def test_say_os_error_wording(capsys):
    """One 'error:' line: the place (given, else the file), then the system's words (else the error)."""
    mlirhlo_cli._say_os_error(OSError(5, "I/O error", "f.txt"), "stdout")
    mlirhlo_cli._say_os_error(OSError(5, "I/O error", "f.txt"))
    mlirhlo_cli._say_os_error(OSError(5, "I/O error"), "stdout")
    mlirhlo_cli._say_os_error(OSError("odd"))
    assert capsys.readouterr().err == ("error: stdout: I/O error\nerror: f.txt: I/O error\n"
                                       "error: stdout: I/O error\nerror: odd\n")


def test_python_dash_m_runs_the_entry_point():
    """``python -m mlirhlo_driver.cli.mlirhlo`` is the mlirhlo command."""
    import subprocess

    r = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", "--jobs", "x"],
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.startswith("error: ") and r.stderr.endswith(f"{SEE_HELP}\n") and r.stderr.count("\n") == 1
    assert_mentions(r.stderr, "'--jobs'", "'x'")


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
