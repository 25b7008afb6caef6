"""The front-ends: ``mlirhlo`` (cli/mlirhlo.py), ``mlirhlo opt`` (cli/opt.py) and XLA's tools
(cli/xla/tools.py): their argument parsing, what they hand the library, and how each error
becomes its lines and exit code. In-process, with the library calls replaced where the
front-end is what is tested."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

import mlirhlo_driver.cli.mlirhlo as mlirhlo_cli
import mlirhlo_driver.cli.opt as opt_cli
import mlirhlo_driver.cli.xla.tools as tools_cli
from mlirhlo_driver.errors import DriverError, FlagError
from tests.conftest import ADD_MODULE

SEE_HELP = " (see 'mlirhlo opt --help')"


def _usage_line(argv: list[str]) -> str:
    with pytest.raises(opt_cli.UsageError) as e:
        opt_cli.parse(argv)
    return e.value.format()


# ------------------------------------------------------------------ opt: parsing

OPT_DEFAULTS = {
    "inputs": [], "pipeline_spec": None, "passes": None, "pipeline_file": None, "print_pipeline": False,
    "stage": "stablehlo", "output": None, "dump_dir": None, "list_stages": False, "list_passes": False,
    "input_format": None, "split_input_file": False, "args": None, "print_ir_after_all": False,
    "print_ir_after_change": False, "print_ir_before": None, "print_ir_after": None,
    "print_ir_after_failure": False, "print_ir_module_scope": False, "ir_dump_dir": None, "timing": False,
    "timing_format": "text", "verify_each": True, "reproducer_dir": None, "target_version": None,
    "debug_info": False, "platform": None, "gpu_spec": None, "debug_options_file": None,
    "autotune_results": None, "xla_passes": None, "after_pass": None, "load_pass_plugin": None,
    "fold_constants": False, "no_cache": False, "quiet": False, "jobs": 0, "fail_fast": False, "timeout": None,
    "scheduler": None,
}


def test_opt_defaults_of_every_option():
    """An empty opt command line: every option at its documented default, nothing left over."""
    params, extra = opt_cli.parse([])
    assert params == OPT_DEFAULTS
    assert extra == []


def test_opt_every_option_spelling():
    """option_names(): every spelling opt accepts, in --help's order (the 'did you mean' pool)."""
    assert opt_cli.option_names() == [
        "-h", "--help", "--pipeline", "--passes", "--pipeline-file", "--print-pipeline", "--stage", "-o",
        "--output", "--o", "--dump-dir", "--list-stages", "--list-passes", "--input-format",
        "--split-input-file", "--args", "--print-ir-after-all", "--print-ir-after-change", "--print-ir-before",
        "--print-ir-after", "--print-ir-after-failure", "--print-ir-module-scope", "--ir-dump-dir", "--timing",
        "--timing-format", "--mlir-output-format", "--verify-each", "--no-verify-each", "--reproducer-dir",
        "--target-version", "--mlir-print-debuginfo", "--platform", "--gpu-spec", "--debug-options-file",
        "--autotune-results", "--xla-passes", "--after-pass", "--load-pass-plugin", "--fold-constants",
        "--no-cache", "--quiet", "-q", "--jobs", "-j", "--fail-fast", "--timeout", "--scheduler"]


@pytest.mark.parametrize("argv, name, value", [
    (["-o", "x"], "output", "x"), (["--output=x"], "output", "x"), (["--o", "x"], "output", "x"),
    (["--timing-format", "json"], "timing_format", "json"), (["--mlir-output-format=json"], "timing_format", "json"),
    (["--no-verify-each"], "verify_each", False), (["--verify-each"], "verify_each", True),
    (["--mlir-print-debuginfo"], "debug_info", True), (["--pipeline", "p"], "pipeline_spec", "p"),
    (["-j", "3"], "jobs", 3), (["--jobs=-1"], "jobs", -1), (["--timeout", "2.5"], "timeout", 2.5),
    (["--timeout=1e-300"], "timeout", 1e-300),
    (["--print-ir-before", "cse", "--print-ir-before=all"], "print_ir_before", ["cse", "all"]),
    (["--load-pass-plugin", "a.py", "--load-pass-plugin", "b.py"], "load_pass_plugin", ["a.py", "b.py"]),
])
def test_opt_option_spellings_and_typed_values(argv, name, value):
    """Each alias sets its option; -j/--jobs is an int and --timeout a float, as typed."""
    params, extra = opt_cli.parse(argv)
    assert params[name] == value and type(params[name]) is type(value)
    assert extra == []


def test_opt_inputs_and_leftover_flags_keep_their_order():
    """Inputs anywhere (and '-', stdin) are inputs in order; unknown dashed words are left over."""
    params, extra = opt_cli.parse(["a.mlir", "--stage", "hlo", "b.mlir", "--xla_foo=1", "c.mlir", "-",
                                   "--xla_bar", "--stag"])
    assert params["inputs"] == ["a.mlir", "b.mlir", "c.mlir", "-"]
    assert params["stage"] == "hlo"
    assert extra == ["--xla_foo=1", "--xla_bar", "--stag"]


def test_opt_options_are_never_abbreviated():
    """No prefix matching: '--stag' is left over (then refused), not taken for '--stage'."""
    params, extra = opt_cli.parse(["--stag", "hlo"])
    assert (params["stage"], params["inputs"], extra) == ("stablehlo", ["hlo"], ["--stag"])


@pytest.mark.parametrize("argv, message", [
    (["--jobs", "x"], "Invalid value for '--jobs' / '-j': 'x' is not a valid integer."),
    (["-j=1.5"], "Invalid value for '--jobs' / '-j': '1.5' is not a valid integer."),
    (["--timeout", "abc"], "Invalid value for '--timeout': 'abc' is not a valid float."),
    (["--timeout", "0"], "Invalid value for '--timeout': 0.0 is not a finite number > 0"),
    (["--timeout", "-1"], "Invalid value for '--timeout': -1.0 is not a finite number > 0"),
    (["--timeout", "inf"], "Invalid value for '--timeout': inf is not a finite number > 0"),
    (["--timeout=nan"], "Invalid value for '--timeout': nan is not a finite number > 0"),
    (["-j"], "Option '-j' requires an argument."),
    (["--jobs"], "Option '--jobs' requires an argument."),
    (["--mlir-output-format"], "Option '--mlir-output-format' requires an argument."),
    (["a.mlir", "--o"], "Option '--o' requires an argument."),
    (["--verify-each=1"], "Option '--verify-each' does not take a value."),
    (["--no-verify-each=1"], "Option '--no-verify-each' does not take a value."),
    (["-h=1"], "Option '-h' does not take a value."),
    (["--help=yes"], "Option '--help' does not take a value."),
])
def test_opt_usage_errors_name_the_spelling_typed(argv, message):
    """Refused values and options: click's words, naming the spelling the user typed."""
    assert _usage_line(argv) == f"error: {message}{SEE_HELP}"


def test_opt_refusal_without_the_spelling_typed_names_the_first():
    """An option's refusal whose spelling is not on the line names its first spelling; one of
    no option at all names none."""
    jobs = next(a for a in opt_cli.parser()._actions if "--jobs" in a.option_strings)
    e = argparse.ArgumentError(jobs, "expected one argument")
    assert opt_cli._typer_words(e, []) == "Option '--jobs' requires an argument."
    assert opt_cli._typer_words(e, ["--jobsx", "-j=2"]) == "Option '-j' requires an argument."
    bare = argparse.ArgumentError(None, "expected one argument")
    assert opt_cli._typer_words(bare, ["x"]) == "Option '' requires an argument."
    odd = argparse.ArgumentError(jobs, "something else")
    assert opt_cli._typer_words(odd, []) == "Invalid value for '--jobs' / '-j': something else"


def test_opt_parser_error_is_a_capitalized_usage_error():
    """What argparse would print with usage and exit 2 on is a UsageError: capitalized, full stop."""
    with pytest.raises(opt_cli.UsageError) as e:
        opt_cli.parser().error("the following arguments are required: FILE")
    assert e.value.message == "The following arguments are required: FILE."
    assert e.value.exit_code == 2
    with pytest.raises(opt_cli.UsageError) as e:
        opt_cli.parser().error("x")
    assert e.value.format() == f"error: X.{SEE_HELP}"


def test_opt_usage_error_format():
    """A UsageError's line names opt's --help, as typer's name each command's."""
    assert opt_cli.UsageError("bad").format() == f"error: bad{SEE_HELP}"


@pytest.mark.parametrize("value, ok", [(0.0, False), (-0.0, False), (-1.0, False), (5e-324, True), (0.5, True),
                                       (1.0, True), (1e308, True), (float("inf"), False),
                                       (float("-inf"), False), (float("nan"), False)])
def test_finite_positive_is_the_timeout_rule(value, ok):
    """--timeout's rule: finite and > 0 (0, infinities and NaN refused)."""
    assert opt_cli.finite_positive(value) is ok


def test_number_types_convert_and_check():
    """_number: the converted value, click's words for a non-number, the rule's for a failed check."""
    as_int = opt_cli._number(int, "integer")
    assert as_int.__name__ == "integer"
    assert as_int("7") == 7 and as_int("-2") == -2
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'7\.0' is not a valid integer\.$"):
        as_int("7.0")
    even = opt_cli._number(int, "integer", lambda v: v % 2 == 0, "even")
    assert even("4") == 4
    with pytest.raises(argparse.ArgumentTypeError, match=r"^3 is not even$"):
        even("3")


# ------------------------------------------------------------------ opt: main

def test_opt_help_is_typer_shaped_and_exits_0(capsys):
    """--help: 'Usage: mlirhlo opt [OPTIONS] [FILE...]', the description as written, exit 0."""
    assert opt_cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: mlirhlo opt [OPTIONS] [FILE...]\n\n" + opt_cli.DESCRIPTION + "\n\n")
    assert opt_cli.DESCRIPTION.startswith(opt_cli.HELP + "\n\nAny --xla_NAME=VALUE DebugOptions flag")
    # Python 3.13's argparse names the metavar once ("-o, --output, --o FILE"), older ones per spelling.
    assert re.search(r"^  -o( FILE)?, --output( FILE)?, --o FILE", out, re.M)
    assert re.search(r"^  --jobs( N)?, -j N", out, re.M)


def test_opt_usage_error_is_one_line_and_exit_2(capsys):
    """A refused option: its one line on stderr, exit 2, nothing on stdout."""
    assert opt_cli.main(["--jobs", "x"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: Invalid value for '--jobs' / '-j': 'x' is not a valid integer.{SEE_HELP}\n"


def test_opt_unknown_option_is_refused_with_a_hint(capsys):
    """An unknown option (with or without a value): 'no such option' naming it, and the closest ones."""
    assert opt_cli.main(["m.mlir", "--stag=hlo", "--no-cache"]) == 2
    assert capsys.readouterr().err == \
        "error: no such option: --stag (did you mean '--stage', '--args', '--list-stages'?)\n"
    assert opt_cli.main(["m.mlir", "--qqqqqqqq", "--no-cache"]) == 2
    assert capsys.readouterr().err == "error: no such option: --qqqqqqqq\n"


def test_resolve_target_refuses_words_that_are_not_xla_flags():
    """resolve_target: the --xla_* flags are the target's; a dashed word is no such option,
    any other word an unexpected argument; the hint comes from ``known``."""
    def known():
        return ["--platform"]

    with pytest.raises(DriverError) as e:
        opt_cli.resolve_target(None, None, ["--platfrm=cpu"], None, None, needs_spec=True, known=known)
    assert e.value.format() == "error: no such option: --platfrm (did you mean '--platform'?)"
    with pytest.raises(DriverError) as e:
        opt_cli.resolve_target(None, None, ["--xla_cpu_enable_fast_math", "stray"], None, None,
                               needs_spec=True, known=known)
    assert e.value.format() == "error: unexpected argument 'stray'"
    target = opt_cli.resolve_target("cpu", None, ["--xla_cpu_enable_fast_math", "--xla_backend_optimization_level=1"],
                                    None, None, needs_spec=True, known=known)
    assert target.platform == "cpu"
    assert dict(target.xla_flags) == {"xla_cpu_enable_fast_math": True, "xla_backend_optimization_level": 1}


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_opt_runs_a_module_and_exits_0(private_cache, capsys):
    """A module through opt: its StableHLO on stdout, exit 0."""
    path = private_cache / "add.mlir"
    path.write_text(ADD_MODULE)
    assert opt_cli.main([str(path), "--no-cache"]) == 0
    out, err = capsys.readouterr()
    assert "stablehlo.add %arg0, %arg0 : tensor<4xf32>" in out and err == ""


def test_opt_repeats_are_answered_from_the_stage_cache(private_cache, capsys, monkeypatch):
    """A repeated command is served from the stage cache (the module is not parsed); another file
    or option is not; --no-cache neither reads nor writes it."""
    from mlirhlo_driver.inputs import loader

    a, b = private_cache / "a.mlir", private_cache / "b.mlir"
    a.write_text(ADD_MODULE)
    b.write_text(ADD_MODULE.replace("add", "multiply"))
    assert opt_cli.main([str(a)]) == 0
    first = capsys.readouterr().out
    assert "stablehlo.add" in first
    assert opt_cli.main([str(b)]) == 0
    assert "stablehlo.multiply" in capsys.readouterr().out
    assert opt_cli.main([str(a), "--mlir-print-debuginfo"]) == 0
    assert "loc(" in capsys.readouterr().out
    calls = []
    real = loader.parse_unit
    monkeypatch.setattr(loader, "parse_unit", lambda u: calls.append(u.source) or real(u))
    assert opt_cli.main([str(a)]) == 0
    assert capsys.readouterr().out == first and calls == []
    assert opt_cli.main([str(a), "--no-cache"]) == 0
    assert capsys.readouterr().out == first and calls == [str(a)]


@pytest.fixture
def fake_run(monkeypatch):
    """batch.run_opt replaced: records the options and target, returns ``rows`` (or raises)."""
    from mlirhlo_driver.batch import opt as batch

    seen = SimpleNamespace(options=None, target=None, rows=[], raises=None)

    def run_opt(o, target, *, say, progress=None):
        seen.options, seen.target, seen.say = o, target, say
        if seen.raises is not None:
            raise seen.raises
        return seen.rows

    monkeypatch.setattr(batch, "run_opt", run_opt)
    return seen


def test_opt_hands_its_options_to_the_library(fake_run, capsys):
    """Every option reaches batch.OptOptions by name: repeatable ones as tuples, inputs as a list,
    options not given at their OptOptions defaults."""
    from mlirhlo_driver.batch.opt import OptOptions

    argv = ["a.mlir", "--stage", "hlo", "b.mlir", "--print-ir-before", "cse", "--print-ir-before=all",
            "--print-ir-after", "canonicalize", "-j", "2", "--timeout", "3", "--no-verify-each",
            "--mlir-output-format", "json", "-o", "out.txt", "--fold-constants", "--no-cache"]
    assert opt_cli.main(argv) == 0
    assert capsys.readouterr() == ("", "")
    assert fake_run.options == OptOptions(
        inputs=["a.mlir", "b.mlir"], stage="hlo", print_ir_before=("cse", "all"), print_ir_after=("canonicalize",),
        jobs=2, timeout=3.0, verify_each=False, timing_format="json", output="out.txt", fold_constants=True,
        no_cache=True)
    assert type(fake_run.options.inputs) is list
    assert fake_run.target.platform is None
    assert opt_cli.main(["a.mlir"]) == 0
    assert fake_run.options == OptOptions(inputs=["a.mlir"])


def _row(name, status="ok", message=""):
    from mlirhlo_driver.batch.opt import OptResult

    return OptResult(index=0, name=name, source=name, status=status, message=message,
                     error_text=f"error: {message}\n" if message else "")


@pytest.mark.parametrize("statuses, code", [(["ok", "ok"], 0), (["ok", "failed"], 1), (["invalid", "failed"], 2)])
def test_opt_batch_exit_code_and_summary(fake_run, capsys, statuses, code):
    """A batch: exit 0 when every module is done; else the summary on stderr and the worst code."""
    fake_run.rows = [_row(f"m{i}.mlir", s, "" if s == "ok" else f"bad {i}") for i, s in enumerate(statuses)]
    assert opt_cli.main(["m0.mlir", "m1.mlir", "--no-cache"]) == code
    out, err = capsys.readouterr()
    assert out == ""
    if code == 0:
        assert err == ""
    else:
        failed = [s for s in statuses if s != "ok"]
        assert err.startswith(f"opt: {2 - len(failed)}/2 modules done, {len(failed)} failed\n")
        assert err.count("\n") == 1 + len(failed)


@pytest.mark.parametrize("status, code", [("failed", 1), ("invalid", 2)])
def test_opt_stopped_batch_prints_the_modules_error(fake_run, capsys, status, code):
    """A module failing in a worker of a single-module or --fail-fast run: its error text, its code."""
    from mlirhlo_driver.batch.opt import BatchStopped

    fake_run.raises = BatchStopped(_row("m.mlir", status, "it broke"))
    assert opt_cli.main(["m.mlir", "--jobs", "2", "--no-cache"]) == code
    assert capsys.readouterr() == ("", "error: it broke\n")


def test_opt_driver_error_from_the_library_is_its_line_and_code(fake_run, capsys):
    """A DriverError from the run: error_text's lines on stderr, the error's exit code."""
    from mlirhlo_driver.errors import CompileError

    fake_run.raises = CompileError("no good", file="m.mlir", line=3)
    assert opt_cli.main(["m.mlir", "--no-cache"]) == CompileError.exit_code == 1
    assert capsys.readouterr() == ("", "error: m.mlir:3: no good\n")


@pytest.mark.parametrize("raised, code, said", [(SystemExit(None), 0, ""), (SystemExit(0), 0, ""),
                                                (SystemExit(4), 4, ""), (SystemExit("plugin refused"), 1,
                                                                         "plugin refused\n")])
def test_opt_main_maps_system_exit_to_its_code(monkeypatch, capsys, raised, code, said):
    """A SystemExit inside opt (argparse's --help exits 0; sys.exit in a pass plugin): an int is the
    code, None is 0, a message goes to stderr with exit 1, as Python itself does."""
    def fail(params, extra):
        raise raised

    monkeypatch.setattr(opt_cli, "_opt", fail)
    assert opt_cli.main([]) == code
    assert capsys.readouterr() == ("", said)


def test_a_pass_plugin_that_calls_sys_exit_with_a_message_fails_the_command(tmp_path):
    """``sys.exit("why")`` in a --load-pass-plugin file: the message on stderr and exit 1."""
    plugin = tmp_path / "plug.py"
    plugin.write_text('import sys\nsys.exit("plugin refused")\n')
    proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver", "opt", "--load-pass-plugin", str(plugin),
                           "--list-stages", "--no-cache"], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "plugin refused\n")


def test_opt_list_stages_and_passes(private_cache, capsys, monkeypatch):
    """--list-stages prints the stage table (of --platform); --list-passes the pass catalogue and,
    with --platform, XLA's pass listing for that target and the inputs. No module is run."""
    from mlirhlo_driver import listings
    from mlirhlo_driver.batch import opt as batch
    from mlirhlo_driver.commands import mlirhlo as commands

    monkeypatch.setattr(batch, "run_opt", lambda o, t: pytest.fail("ran a module"))
    seen = []
    monkeypatch.setattr(commands, "xla_pass_listing",
                        lambda target, inputs, input_format, args: seen.append(
                            (target.platform, inputs, input_format, args)) or "XLA PASSES\n")
    assert opt_cli.main(["--list-stages", "--no-cache"]) == 0
    assert capsys.readouterr() == (listings.stage_table(None), "")
    assert opt_cli.main(["--list-stages", "--platform", "cpu", "--no-cache"]) == 0
    cpu_table = capsys.readouterr().out
    assert cpu_table == listings.stage_table("cpu") != listings.stage_table(None)
    assert opt_cli.main(["--list-passes", "--no-cache"]) == 0
    assert capsys.readouterr().out == listings.pass_catalog() and seen == []
    assert opt_cli.main(["--list-passes", "m.hlo", "--platform", "cpu", "--input-format", "hlo", "--no-cache"]) == 0
    assert capsys.readouterr().out == listings.pass_catalog() + "\nXLA PASSES\n"
    assert seen == [("cpu", ["m.hlo"], "hlo", None)]


def test_opt_listings_need_no_gpu_spec_but_say_a_named_ones_notes(fake_run, capsys, monkeypatch):
    """A cuda listing takes no default spec (no note), but a spec named is checked and its notes
    said; a cuda run gets h100_sxm's, with a note to say so."""
    from mlirhlo_driver.commands import mlirhlo as commands
    from mlirhlo_driver.cuda.specs import load_spec
    from tests.conftest import DATA

    monkeypatch.setattr(commands, "xla_pass_listing", lambda target, *a, **k: "XLA PASSES\n")
    spec = DATA / "xla_specs" / "a100_pcie_80.txtpb"  # lacks a field: a note says it is filled in
    for listing in ("--list-stages", "--list-passes"):
        assert opt_cli.main([listing, "--platform", "cuda", "--no-cache"]) == 0
        out, err = capsys.readouterr()
        assert out and err == ""
    assert opt_cli.main(["--list-stages", "--platform", "cuda", "--gpu-spec", str(spec), "--no-cache"]) == 0
    out, err = capsys.readouterr()
    assert out and err == "".join(n + "\n" for n in load_spec(spec).notes) != ""
    assert fake_run.target is None
    assert opt_cli.main(["m.mlir", "--platform", "cuda", "--no-cache"]) == 0
    target = fake_run.target
    assert target.platform == "cuda" and [s.name for s in target.specs] == ["h100_sxm"]
    assert target.notes[0].startswith("no --gpu-spec given: compiling for h100_sxm")


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
    """Ctrl-C that run did not catch: 'error: interrupted', exit 130 (a normal exit)."""
    from mlirhlo_driver._native import interrupts

    monkeypatch.setattr(interrupts, "_reported", False)
    monkeypatch.setattr(sys, "argv", ["mlirhlo", "run", "m.hlo"])
    console.raised = KeyboardInterrupt()
    with pytest.raises(SystemExit) as e:
        mlirhlo_cli.main()
    assert e.value.code == 130 and console.calls == []
    assert capfd.readouterr().err == "error: interrupted\n"


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


class _Stdout:
    """A stdout whose flush fails with ``error``."""

    def __init__(self, error):
        self.error = error

    def write(self, text):
        return len(text)

    def flush(self):
        raise self.error


@pytest.mark.parametrize("error, raised, code, err", [
    (OSError(28, "No space left on device"), None, 1, "error: cannot write stdout: No space left on device\n"),
    (OSError(28, "No space left on device"), SystemExit(2), 2, ""),
    (OSError(28, "No space left on device"), SystemExit("why"), 1, "why\n"),
    (BrokenPipeError(32, "Broken pipe"), None, 0, ""),
    (BrokenPipeError(32, "Broken pipe"), SystemExit(3), 3, ""),
])
def test_stdout_that_cannot_be_flushed(console, monkeypatch, capfd, error, raised, code, err):
    """Output the system refuses at the last flush: one line and exit 1 unless the command already
    failed; a reader that went away (| head) is no failure."""
    monkeypatch.setattr(sys, "stdout", _Stdout(error))
    assert console.run("opt", raised=raised) == code
    assert capfd.readouterr().err == err


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
    assert r.stderr == f"error: Invalid value for '--jobs' / '-j': 'x' is not a valid integer.{SEE_HELP}\n"


# ------------------------------------------------------------------ XLA's tools

TOOL_DEFAULTS = {
    "hlo_opt_main": {"o": "-", "platform": "", "format": "", "stage": "hlo", "list_stages": False,
                     "split_input_file": False, "passes": "", "list_passes": False, "emit_proto": False,
                     "debug_options_file": ""},
    "run_hlo_module_main": {"platform": "CPU", "reference_platform": "default", "print_literals": False,
                            "run_test_hlo_passes": True, "use_large_float_range": False, "abs_error_bound": 1e-3,
                            "rel_error_bound": 1e-3, "input_format": "", "input_module": "", "iterations": 1,
                            "debug_options_file": "", "input_literals_file": "", "output_literals_file": "",
                            "run_reference_hlo_passes": True, "random_init_input_literals": True,
                            "force_fake_data": False, "isolate_instructions": False},
    "multihost_main": {"num_replicas": -1, "num_partitions": -1, "use_spmd_partitioning": False,
                       "is_spmd_partitioned_module": False, "run_xla_backend_only": False,
                       "hlo_argument_mode": "use_random_inputs", "num_repeats": 1, "input_format": "",
                       "hlo_file": "", "device_type": "host", "task_id": 0, "num_nodes": 1, "address": "",
                       "enable_mock_nccl": False, "run": True, "log_output": False, "debug_options_file": "",
                       "dump_output_literal_to": "", "while_execution_count": -1, "remove_infeed_outfeed": True,
                       "execution_options_path": "", "profile_execution": False},
    "ptx_opt_main": {"arch": "9.0", "o": "-"},
}

RUNNERS = {"hlo_opt_main": "hlo_opt", "run_hlo_module_main": "run_hlo_module", "multihost_main": "multihost",
           "ptx_opt_main": "ptx_opt"}
PROGS = {"hlo_opt_main": "hlo-opt", "run_hlo_module_main": "run_hlo_module", "multihost_main": "multihost_hlo_runner",
         "ptx_opt_main": "ptx-opt"}


@pytest.fixture
def tool_run(monkeypatch, capsys):
    """A tool's main with its library call replaced: (exit code, stdout, stderr, what the call got)."""
    from mlirhlo_driver.commands import xla_tools

    def run(main, argv, *, result=0, raises=None):
        seen = []

        def fake(p, *rest):
            seen.append((p, *rest))
            if raises is not None:
                raise raises
            return result

        monkeypatch.setattr(xla_tools, RUNNERS[main], fake)
        with pytest.raises(SystemExit) as e:
            getattr(tools_cli, main)(argv)
        out, err = capsys.readouterr()
        return e.value.code, out, err, seen

    return run


@pytest.mark.parametrize("main", sorted(TOOL_DEFAULTS))
def test_xla_tool_defaults_are_xlas(tool_run, main):
    """Each tool's flags, not given, are XLA's defaults; the input is a positional; exit is the run's."""
    code, out, err, seen = tool_run(main, ["in.hlo"], result=0)
    assert (code, out, err) == (0, "", "")
    [(p, *_)] = seen
    assert p.values == TOOL_DEFAULTS[main]
    assert p.positionals == ["in.hlo"] and p.given == set() and p.xla_flags == {}


@pytest.mark.parametrize("main", sorted(TOOL_DEFAULTS))
def test_xla_tool_exit_code_is_the_runs(tool_run, main):
    """The run's return value is the exit code (1: a module failed)."""
    assert tool_run(main, ["in.hlo"], result=1)[:3] == (1, "", "")


@pytest.mark.parametrize("main", sorted(TOOL_DEFAULTS))
@pytest.mark.parametrize("word", ["--version", "-version"])
def test_xla_tool_version(tool_run, main, word):
    """--version: one line naming the tool and the driver's version, exit 0, nothing run."""
    from mlirhlo_driver import __version__

    code, out, err, seen = tool_run(main, [word], result=5)
    assert (code, err, seen) == (0, "", [])
    assert out == f"{PROGS[main]} (mlirhlo-driver {__version__}, XLA from jaxlib)\n"


@pytest.mark.parametrize("main", sorted(TOOL_DEFAULTS))
def test_xla_tool_help(tool_run, main):
    """--help: the usage text of the tool's flag table, exit 0, nothing run."""
    from mlirhlo_driver.xla.cli_flags import usage

    code, out, err, seen = tool_run(main, ["-h", "in.hlo"], result=5)
    assert (code, err, seen) == (0, "", [])
    flags = {"hlo_opt_main": tools_cli.HLO_OPT_FLAGS, "run_hlo_module_main": tools_cli.RUN_HLO_MODULE_FLAGS,
             "multihost_main": tools_cli.MULTIHOST_FLAGS, "ptx_opt_main": tools_cli.PTX_OPT_FLAGS}[main]
    synopsis = "[FLAGS] FILE" if main == "ptx_opt_main" else "[FLAGS] FILE..."
    assert out == usage(PROGS[main], synopsis, getattr(tools_cli, {
        "hlo_opt_main": "_HLO_OPT_DESCRIPTION", "run_hlo_module_main": "_RUN_DESCRIPTION",
        "multihost_main": "_MULTIHOST_DESCRIPTION", "ptx_opt_main": "_PTX_DESCRIPTION"}[main]), flags)
    assert out.startswith(f"usage: {PROGS[main]} {synopsis}\n")


def test_xla_tool_reads_sys_argv_without_argv(tool_run, monkeypatch):
    """The console script (argv None) parses sys.argv's words after the program name."""
    monkeypatch.setattr(sys, "argv", ["ptx-opt", "--arch=8.0", "in.ll"])
    code, out, err, [(p, *_)] = tool_run("ptx_opt_main", None)
    assert code == 0 and p.values == {"arch": "8.0", "o": "-"} and p.positionals == ["in.ll"]


@pytest.mark.parametrize("raises, code, line", [
    (DriverError("bad input", file="in.hlo", line=2), 2, "error: in.hlo:2: bad input\n"),
    (FlagError("--xla_x: unknown"), 2, "error: --xla_x: unknown\n"),
])
def test_xla_tool_errors_are_one_line_and_their_code(tool_run, raises, code, line):
    """A DriverError from the run: its one line on stderr, its exit code."""
    assert tool_run("hlo_opt_main", ["in.hlo"], raises=raises)[:3] == (code, "", line)


def test_xla_tool_failure_exit_code_is_the_errors(tool_run):
    """A compile failure (exit_code 1) exits 1."""
    from mlirhlo_driver.errors import CompileError

    assert tool_run("ptx_opt_main", ["in.ll"], raises=CompileError("no"))[:3] == (1, "", "error: no\n")


def test_xla_tool_flag_errors_are_one_line_exit_2(tool_run):
    """A flag the tool does not have: one line, exit 2, nothing run."""
    code, out, err, seen = tool_run("hlo_opt_main", ["--platfrom=cpu", "in.hlo"])
    assert (code, out, err, seen) == (2, "", "error: unknown flag '--platfrom' (did you mean '--platform'?)\n", [])


def test_run_hlo_module_gets_the_line_without_different_random_seeds(tool_run):
    """run_hlo_module: the run gets the flags parsed and the line as given, less a false
    --different_random_seeds."""
    from mlirhlo_driver.cli.common import say

    code, out, err, [(p, argv, notes)] = tool_run(
        "run_hlo_module_main", ["--nodifferent_random_seeds", "--iterations=3", "m.hlo", "--different-random-seeds=0"])
    assert notes is say  # the tool's notes go to its stderr
    assert (code, out, err) == (0, "", "")
    assert argv == ["--nodifferent_random_seeds", "--iterations=3", "m.hlo", "--different-random-seeds=0"]
    assert p["iterations"] == 3 and p.positionals == ["m.hlo"]


@pytest.mark.parametrize("argv, kept", [
    (["--different_random_seeds=false", "a.hlo"], ["a.hlo"]),
    (["--different_random_seeds=0", "a.hlo"], ["a.hlo"]),
    (["--different_random_seeds=FALSE"], []),
    (["--nodifferent_random_seeds", "--iterations=2"], ["--iterations=2"]),
    (["-nodifferent-random-seeds", "a.hlo"], ["a.hlo"]),
    (["a.hlo", "--", "--different_random_seeds"], ["a.hlo", "--", "--different_random_seeds"]),
    (["--", "x"], ["--", "x"]),
    (["--different_random_seedsx", "--random_seeds"], ["--different_random_seedsx", "--random_seeds"]),
])
def test_false_different_random_seeds_is_accepted_and_dropped(argv, kept):
    """--different_random_seeds false (XLA's default, what always happens) is dropped; after '--'
    nothing is a flag."""
    assert tools_cli._refuse_different_random_seeds(argv) == kept


@pytest.mark.parametrize("word", ["--different_random_seeds", "--different_random_seeds=true",
                                  "-different-random-seeds=1", "--different_random_seeds=True"])
def test_true_different_random_seeds_is_refused(word):
    """--different_random_seeds (true): refused, naming why, with a hint; a usage error (exit 2)."""
    with pytest.raises(DriverError) as e:
        tools_cli._refuse_different_random_seeds(["a.hlo", word])
    assert type(e.value) is DriverError and e.value.exit_code == 2
    assert e.value.format() == (
        "error: --different_random_seeds: jaxlib cannot set the HloModuleConfig seed that XLA varies per "
        "iteration (its compile options have no seed field) (each iteration already gets new random inputs)")


@pytest.mark.parametrize("word, value", [("--different_random_seeds=maybe", "maybe"),
                                         ("-different-random-seeds=no", "no"), ("--different_random_seeds=", "")])
def test_other_different_random_seeds_values_are_flag_errors(word, value):
    """Any other value: a FlagError naming the value."""
    with pytest.raises(FlagError) as e:
        tools_cli._refuse_different_random_seeds([word])
    assert e.value.format() == f"error: --different_random_seeds={value}: expected true or false"


@pytest.mark.parametrize("word", ["--nodifferent_random_seeds=true", "--nodifferent_random_seeds=false"])
def test_no_different_random_seeds_takes_no_value(word):
    """As every bool flag's --noNAME: a value after it is an unknown flag, not a silent false."""
    with pytest.raises(FlagError) as e:
        tools_cli._refuse_different_random_seeds([word])
    assert e.value.format() == "error: unknown flag '--nodifferent_random_seeds' (--different_random_seeds=false)"
