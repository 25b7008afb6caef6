"""cli/opt.py, ``mlirhlo opt``'s own parser: every option and spelling, what it hands the
library, and how each refusal becomes its line and exit code. In-process, with the
library calls replaced where the front-end is what is tested.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

import mlirhlo_driver.cli.opt as opt_cli
from mlirhlo_driver.errors import DriverError
from tests.conftest import ADD_MODULE, assert_mentions

SEE_HELP = " (see 'mlirhlo opt --help')"


def _usage_line(argv: list[str]) -> str:
    with pytest.raises(opt_cli.UsageError) as e:
        opt_cli.parse(argv)
    return e.value.format()


# ------------------------------------------------------------------ opt: parsing

OPT_DEFAULTS = {
    "inputs": [], "pipeline_spec": None, "passes": None, "pipeline_file": None, "print_pipeline": False,
    "stage": "stablehlo", "output": None, "plot": None, "dump_dir": None, "list_stages": False, "list_passes": False,
    "input_format": None, "split_input_file": False, "args": None, "print_ir_after_all": False,
    "print_ir_after_change": False, "print_ir_before": None, "print_ir_after": None,
    "print_ir_after_failure": False, "print_ir_module_scope": False, "ir_dump_dir": None, "timing": False,
    "timing_format": "text", "verify_each": True, "reproducer_dir": None, "target_version": None,
    "debug_info": False, "platform": None, "gpu_spec": None, "tpu_topology": None, "debug_options_file": None,
    "autotune_results": None, "xla_passes": None, "after_pass": None, "load_pass_plugin": None,
    "fold_constants": False, "num_partitions": None, "no_cache": False, "quiet": False, "jobs": 0,
    "fail_fast": False, "timeout": None, "scheduler": None,
}


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def fake_run(monkeypatch):
    """batch.run_opt replaced: records the options and target, returns ``rows`` (or raises)."""
    from mlirhlo_driver.batch import opt as batch

    seen = SimpleNamespace(options=None, target=None, rows=[], raises=None)

    def run_opt(o, target, *, say, progress=None, python_passes=None):
        seen.options, seen.target, seen.say = o, target, say
        if seen.raises is not None:
            raise seen.raises
        return seen.rows

    monkeypatch.setattr(batch, "run_opt", run_opt)
    return seen


def _row(name, status="ok", message=""):
    from mlirhlo_driver.batch.opt import OptResult

    return OptResult(index=0, name=name, source=name, status=status, message=message,
                     error_text=f"error: {message}\n" if message else "")


def test_opt_defaults_of_every_option():
    """An empty opt command line: every option at its documented default, nothing left over."""
    params, extra = opt_cli.parse([])
    assert params == OPT_DEFAULTS
    assert extra == []


def test_opt_every_option_spelling():
    """option_names(): every spelling opt accepts, in --help's order (the 'did you mean' pool)."""
    assert opt_cli.option_names() == [
        "-h", "--help", "--pipeline", "--passes", "--pipeline-file", "--print-pipeline", "--stage", "-o",
        "--output", "--o", "--plot", "--dump-dir", "--list-stages", "--list-passes", "--input-format",
        "--split-input-file", "--args", "--print-ir-after-all", "--print-ir-after-change", "--print-ir-before",
        "--print-ir-after", "--print-ir-after-failure", "--print-ir-module-scope", "--ir-dump-dir", "--timing",
        "--timing-format", "--mlir-output-format", "--verify-each", "--no-verify-each", "--reproducer-dir",
        "--target-version", "--mlir-print-debuginfo", "--platform", "--gpu-spec", "--tpu-topology",
        "--debug-options-file",
        "--autotune-results", "--xla-passes", "--after-pass", "--load-pass-plugin", "--fold-constants",
        "--num-partitions", "--no-cache", "--quiet", "-q", "--jobs", "-j", "--fail-fast", "--timeout", "--scheduler"]


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


@pytest.mark.golden
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


@pytest.mark.golden
def test_opt_refusal_without_the_spelling_typed_names_the_first():
    """Golden (_typer_words, the formatter of the table above). An option's refusal whose spelling is not on the line names its first spelling; one of
    no option at all names none."""
    jobs = next(a for a in opt_cli.parser()._actions if "--jobs" in a.option_strings)
    e = argparse.ArgumentError(jobs, "expected one argument")
    assert opt_cli._typer_words(e, []) == "Option '--jobs' requires an argument."
    assert opt_cli._typer_words(e, ["--jobsx", "-j=2"]) == "Option '-j' requires an argument."
    bare = argparse.ArgumentError(None, "expected one argument")
    assert opt_cli._typer_words(bare, ["x"]) == "Option '' requires an argument."
    odd = argparse.ArgumentError(jobs, "something else")
    assert opt_cli._typer_words(odd, []) == "Invalid value for '--jobs' / '-j': something else"


@pytest.mark.golden
def test_opt_parser_error_is_a_capitalized_usage_error():
    """Golden: what argparse would print with usage and exit 2 on is a UsageError: capitalized, full stop."""
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


@pytest.mark.golden
def test_number_types_convert_and_check():
    """Golden: _number: the converted value, click's words for a non-number, the rule's for a failed check."""
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
    assert err.startswith("error: ") and err.endswith(f"{SEE_HELP}\n") and err.count("\n") == 1, err
    assert_mentions(err, "'--jobs'", "'x'")


def test_opt_unknown_option_is_refused_with_a_hint(capsys):
    """An unknown option (with or without a value): one line naming it, and the closest of
    opt's options, or else opt's --help (the wording: tests/e2e/test_mlirhlo.py's table)."""
    assert opt_cli.main(["m.mlir", "--stag=hlo", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert_mentions(err, "--stag", "'--stage'")
    assert "=hlo" not in err and "--no-cache" not in err
    assert opt_cli.main(["m.mlir", "--qqqqqqqq", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean" not in err, err
    assert_mentions(err, "--qqqqqqqq", "'mlirhlo opt --help'")


@pytest.mark.golden
def test_a_stray_word_among_xla_flags_is_an_unexpected_argument():
    """Golden: resolve_target's refusal of a word that is neither an option nor an XLA flag."""
    with pytest.raises(DriverError) as e:
        opt_cli.resolve_target(None, None, ["--xla_cpu_enable_fast_math", "stray"], None, None, needs_spec=True,
                               known=lambda: ["--platform"], command="mlirhlo opt")
    assert e.value.format() == "error: unexpected argument 'stray'"


def test_resolve_target_refuses_words_that_are_not_xla_flags():
    """resolve_target: the --xla_* flags are the target's; a dashed word is no such option,
    any other word an unexpected argument; the hint comes from ``known``, or names the
    command's --help."""
    def known():
        return ["--platform"]

    with pytest.raises(DriverError) as e:
        opt_cli.resolve_target(None, None, ["--platfrm=cpu"], None, None, needs_spec=True, known=known,
                               command="mlirhlo opt")
    assert_mentions(e.value.format(), "--platfrm", "'--platform'")
    with pytest.raises(DriverError) as e:
        opt_cli.resolve_target(None, None, ["--xla_cpu_enable_fast_math", "-x"], None, None, needs_spec=True,
                               known=known, command="mlirhlo watch")
    assert_mentions(e.value.format(), "-x", "'mlirhlo watch --help'")
    with pytest.raises(DriverError) as e:
        opt_cli.resolve_target(None, None, ["--xla_cpu_enable_fast_math", "stray"], None, None,
                               needs_spec=True, known=known, command="mlirhlo opt")
    assert_mentions(e.value.format(), "'stray'")
    target = opt_cli.resolve_target("cpu", None, ["--xla_cpu_enable_fast_math", "--xla_backend_optimization_level=1"],
                                    None, None, needs_spec=True, known=known, command="mlirhlo opt")
    assert target.platform == "cpu"
    assert dict(target.xla_flags) == {"xla_cpu_enable_fast_math": True, "xla_backend_optimization_level": 1}


def test_xla_flags_among_keeps_the_words_that_are_no_options():
    """xla_flags_among: the --xla_* flags typed, the words that are no options (``-``, stdin,
    among them) left to the caller in their order; ``known`` asked only for a refusal."""
    def known():
        raise AssertionError("no hint needed")

    flags, rest = opt_cli.xla_flags_among(["a.mlir", "--xla_cpu_enable_fast_math", "-", "b"], known, "mlirhlo run")
    assert (flags, rest) == ({"xla_cpu_enable_fast_math": True}, ["a.mlir", "-", "b"])


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
    assert capsys.readouterr() == ("", fake_run.raises.format() + "\n")


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


def test_argparse_refusals_in_opt_are_a_usage_error_never_an_exit():
    """opt's parser: what argparse would print with its usage and exit 2 on is raised as the
    driver's UsageError instead, in typer's words (capitalized, with a full stop)."""
    from mlirhlo_driver.cli import opt

    with pytest.raises(opt.UsageError) as e:
        opt.parser().error("the following arguments are required: FILE")
    assert e.value.exit_code == 2 and e.value.format().endswith(SEE_HELP)
    assert_mentions(e.value.format(), "FILE")
