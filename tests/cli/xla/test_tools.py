"""cli/xla/tools.py, the XLA-named console scripts' front-ends: what each hands the library,
--version and --help, and how each error becomes its line and exit code.
"""

from __future__ import annotations

import sys

import pytest

import mlirhlo_driver.cli.xla.tools as tools_cli
from mlirhlo_driver.errors import DriverError, FlagError
from tests.conftest import assert_mentions

# ------------------------------------------------------------------ XLA's tools

TOOL_DEFAULTS = {
    "hlo_opt_main": {"o": "-", "platform": "", "tpu_topology": "", "format": "", "stage": "hlo", "list_stages": False,
                     "split_input_file": False, "passes": "", "list_passes": False, "emit_proto": False,
                     "debug_options_file": "", "num_partitions": -1},
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


@pytest.mark.parametrize("main, typo, meant", [
    ("hlo_opt_main", "--platfrom=cpu", "'--platform'"),
    ("run_hlo_module_main", "--iteration=3", "'--iterations'"),
    ("multihost_main", "-num_repeat", "'--num_repeats'"),
    ("ptx_opt_main", "--ach", "'--arch'"),
])
def test_xla_tool_flag_errors_are_one_line_exit_2(tool_run, main, typo, meant):
    """A flag the tool does not have, before or after the input, near one of its own or not:
    one line naming it (and the closest flags, or --help), exit 2, nothing run. XLA's words
    ('unknown flag'), as its own tools say it (xla/cli_flags.py's golden test)."""
    for argv, named, hint in (([typo, "in.hlo"], typo.split("=")[0], meant),
                              (["in.hlo", "--qqqqqq"], "--qqqqqq", "--help")):
        code, out, err, seen = tool_run(main, argv)
        assert (code, out, seen) == (2, "", []) and err.startswith("error: ") and err.count("\n") == 1, err
        assert_mentions(err, f"'{named}'", hint)


@pytest.mark.parametrize("main", sorted(TOOL_DEFAULTS))
def test_xla_tool_ctrl_c_is_one_line_exit_130(tool_run, main, monkeypatch):
    """Ctrl-C in the run: ``error: interrupted`` (its wording: tests/_native/test_interrupts.py),
    exit 130, nothing on stdout (the tools in a real process: tests/e2e/test_<tool>.py)."""
    from mlirhlo_driver._native import interrupts

    monkeypatch.setattr(interrupts, "_reported", False)
    code, out, err, _ = tool_run(main, ["in.hlo"], raises=KeyboardInterrupt())
    assert (code, out) == (130, "") and err.startswith("error: ") and err.count("\n") == 1, err
    assert "interrupted" in err


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
    assert e.value.format().startswith("error: --different_random_seeds: ")
    assert_mentions(e.value.message, "seed")
    assert_mentions(e.value.hint, "random inputs")


@pytest.mark.parametrize("word, value", [("--different_random_seeds=maybe", "maybe"),
                                         ("-different-random-seeds=no", "no"), ("--different_random_seeds=", "")])
def test_other_different_random_seeds_values_are_flag_errors(word, value):
    """Any other value: a FlagError naming the value."""
    with pytest.raises(FlagError) as e:
        tools_cli._refuse_different_random_seeds([word])
    assert_mentions(e.value.format(), f"error: --different_random_seeds={value}: ", "true or false")


@pytest.mark.parametrize("word", ["--nodifferent_random_seeds=true", "--nodifferent_random_seeds=false"])
def test_no_different_random_seeds_takes_no_value(word):
    """As every bool flag's --noNAME: a value after it is an unknown flag, not a silent false."""
    with pytest.raises(FlagError) as e:
        tools_cli._refuse_different_random_seeds([word])
    assert_mentions(e.value.format(), "'--nodifferent_random_seeds'", "--different_random_seeds=false")


@pytest.mark.golden
@pytest.mark.parametrize("word, line", [
    ("--different_random_seeds", "error: --different_random_seeds: jaxlib cannot set the HloModuleConfig seed that XLA "
     "varies per iteration (its compile options have no seed field) (each iteration already gets new random inputs)"),
    ("--different_random_seeds=maybe", "error: --different_random_seeds=maybe: expected true or false"),
    ("--nodifferent_random_seeds=true", "error: unknown flag '--nodifferent_random_seeds' (--different_random_seeds=false)"),
])
def test_different_random_seeds_refusals_exactly(word, line):
    """Golden: run_hlo_module's --different_random_seeds, which jaxlib cannot honour, and its misspellings."""
    with pytest.raises(DriverError) as e:
        tools_cli._refuse_different_random_seeds([word])
    assert e.value.format() == line
