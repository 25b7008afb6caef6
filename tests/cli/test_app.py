"""cli/app.py, the typer app of the commands other than opt: what each command hands the
library, its defaults (the same as the library functions'), and how typer's own usage
errors and aborts become one line.
"""

from __future__ import annotations

import pytest


class _Refusal(Exception):
    """Shaped like a click error, but not a usage error (exit code 1)."""

    exit_code = 1

    def format_message(self) -> str:
        return "refused"


@pytest.mark.parametrize("name", ["run", "convert", "ptx", "bench_pipeline"])
def test_command_functions_default_to_what_the_cli_defaults_to(name):
    """commands/mlirhlo.py's functions, called from Python, behave as the command line does without
    options: every keyword default is the typer command's, and there is one for every option."""
    import inspect

    from mlirhlo_driver.cli import app
    from mlirhlo_driver.commands import mlirhlo as commands

    cli_params = inspect.signature(getattr(app, name)).parameters
    lib_params = inspect.signature(getattr(commands, name)).parameters
    options = {k: p.default for k, p in cli_params.items()
               if p.default is not inspect.Parameter.empty and k not in ("inputs", "input_b")}
    library = {k: p.default for k, p in lib_params.items()
               if p.default is not inspect.Parameter.empty and k in cli_params}
    if name == "bench_pipeline":  # the CLI resolves --platform/--gpu-spec into target
        options = {k: v for k, v in options.items() if k not in ("platform", "gpu_spec", "load_pass_plugin")}
        assert lib_params["target"].default is None
    assert library == options
    assert len(options) >= 4, options


def test_cli_defaults_of_the_thin_commands():
    """The documented defaults: run on cpu against the interpreter, once, seed 0, one worker;
    ptx for sm_90a at -O3 with the -O pipeline and ptxas; 10 bench repeats."""
    import inspect

    from mlirhlo_driver.commands import mlirhlo as commands

    def defaults(f):
        return {k: p.default for k, p in inspect.signature(f).parameters.items()
                if p.default is not inspect.Parameter.empty}

    assert defaults(commands.run) == {
        "platform": "cpu", "reference": None, "precision": None, "seed": 0, "zeros": False, "inputs_npz": None,
        "large_float_range": False, "rtol": None, "atol": None, "iterations": 1, "print_literals": False,
        "save_outputs": None, "fold_constants": False, "bisect": False, "bisect_passes": False, "timing": False,
        "jobs": 1, "timeout": None, "scheduler": None, "json_report": None, "input_format": None,
        "split_input_file": False, "args": None}
    assert defaults(commands.ptx) == {
        "arch": "sm_90a", "opt_level": 3, "optimize": True, "output": None, "print_after_all": False,
        "ir_dump_dir": None, "libdevice": None, "check_ptxas": True}
    from mlirhlo_driver.errors import log_note

    assert defaults(commands.bench_pipeline) == {
        "target": None, "pipeline_spec": None, "passes": None, "compare": None, "repeats": 10, "json_out": False,
        "input_format": None, "args": None, "say": log_note, "python_passes": None}
    assert defaults(commands.convert) == {"output": None, "to": None, "emit_proto": False, "input_format": None,
                                          "args": None, "target_version": None}


def test_opt_invoked_through_the_typer_app_is_opts_own_parser(capfd):
    """The app's 'opt' command (the root's listing; an app invoked directly) hands every word to
    opt's own parser: its --help and its options, not typer's."""
    from mlirhlo_driver.cli import app

    capfd.readouterr()
    with pytest.raises(SystemExit) as e:
        app.run_app(["opt", "--help"], "opt")
    out = capfd.readouterr().out
    assert e.value.code == 0
    assert out.startswith("Usage: mlirhlo opt [OPTIONS] [FILE...]\n") and "--list-stages" in out
    with pytest.raises(SystemExit) as e:
        app.run_app(["opt", "--list-stages"], "opt")
    out, err = capfd.readouterr()
    assert (e.value.code, err) == (0, "")
    assert "hlo-before-optimizations" in out


@pytest.mark.golden
def test_typer_abort_is_one_line_and_exit_130(monkeypatch, capfd):
    """Golden: click's Abort (Ctrl-C at a prompt or inside a command) is 'error: aborted', exit 130, as an
    interrupt is everywhere else."""
    import typer

    from mlirhlo_driver.cli import app

    def aborting(**kwargs):
        raise typer.Abort()

    monkeypatch.setattr(app, "_app_for", lambda command: aborting)
    with pytest.raises(SystemExit) as e:
        app.run_app(["run"], "run")
    assert e.value.code == 130 and capfd.readouterr().err == "error: aborted\n"


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
    assert capfd.readouterr() == ("", f"error: {Unconfigured().format_message()}\n")  # its words, no hint
