"""``mlirhlo`` itself as a user runs it: typer's usage errors, an unknown option at every
command, a group alone, Ctrl-C at any moment, and XLA's flag spellings accepted by the commands.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, assert_one_line_error
from tests.e2e.conftest import mlirhlo_commands

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

INTERRUPTED_MAIN = """
import sys
from mlirhlo_driver.cli import mlirhlo as cli

def interrupted(argv):
    raise KeyboardInterrupt

cli._main = interrupted
sys.argv = ["mlirhlo", *sys.argv[1:]]
cli.main()
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
        assert (r.code, r.out) == (130, ""), signalled  # one line (its wording: tests/_native/test_interrupts.py)
        assert r.err.startswith("error: ") and r.err.count("\n") == 1 and "interrupted" in r.err, (signalled, r.err)


@pytest.mark.parametrize("command", ["run", "opt"])  # a normal exit, and one by os._exit
def test_ctrl_c_the_command_did_not_catch_is_exit_130(command):
    r = subprocess.run([sys.executable, "-c", INTERRUPTED_MAIN, command, "m.mlir"], capture_output=True,
                       text=True, cwd=str(REPO), timeout=120)
    assert (r.returncode, r.stdout) == (130, "")
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1 and "interrupted" in r.stderr, r.stderr


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
@pytest.mark.golden
def test_typer_usage_error_is_one_line_naming_the_commands_help(cli, small, argv, message):
    """Golden: a value typer refuses (range, non-finite tolerance or timeout, HOST:PORT): exactly one line,
    typer's message and the command's --help to see, exit 2."""
    line = assert_one_line_error(cli(*[a.format(small=small) for a in argv]))
    # (the program's name in the hint is sys.argv[0]'s: 'mlirhlo' from the console script)
    assert line.startswith(f"error: {message} (see '") and line.endswith(f" {argv[0]} --help')"), line


# ------------------------------------------------------------ an unknown option, at every command

# (command, its words, the line). Files named here need not exist: options are checked first.
UNKNOWN_OPTIONS = [
    ("", ["--versoin"], "error: no such option: --versoin (did you mean '--version'?)"),
    ("opt", ["m.mlir", "--stag=hlo"], "error: no such option: --stag (did you mean '--stage'?)"),
    ("opt", ["m.mlir", "--qqqqqqqq"], "error: no such option: --qqqqqqqq (see 'mlirhlo opt --help')"),
    ("watch", ["m.mlir", "--platfrom", "cpu"], "error: no such option: --platfrom (did you mean '--platform'?)"),
    ("explore", ["m.mlir", "--diff-flag=x"], "error: no such option: --diff-flag (did you mean '--diff-flags'?)"),
    ("explore", ["m.mlir", "--stage=hlo"], "error: no such option: --stage (explore writes the model-explorer "
                                           "stage to --dump-dir; see 'mlirhlo explore --help')"),
    ("passes", ["--load-plugin", "p.py"], "error: no such option: --load-plugin (did you mean '--load-pass-plugin'?)"),
    ("convert", ["m.mlir", "--too", "hlo"], "error: no such option: --too (did you mean '--to'?)"),
    ("run", ["m.mlir", "--platfom", "cpu"], "error: no such option: --platfom (did you mean '--platform'?)"),
    ("run", ["m.mlir", "--bogus=3"], "error: no such option: --bogus (see 'mlirhlo run --help')"),
    ("spmd-run", ["--num-partiton", "2", "m.mlir"],
     "error: no such option: --num-partiton (did you mean '--num-partitions', '--partitioner'?)"),
    ("kernels", ["m.mlir", "--tpu-topolgy", "v5e:1x1"],
     "error: no such option: --tpu-topolgy (did you mean '--tpu-topology'?)"),
    ("kernels", ["m.mlir", "--jsn"], "error: no such option: --jsn (did you mean '--json'?)"),
    ("diff", ["m.mlir", "--flag-a=x"], "error: no such option: --flag-a (did you mean '--flags-a', '--flags-b'?)"),
    ("ptx", ["k.ll", "--arc", "sm_80"], "error: no such option: --arc (did you mean '--arch'?)"),
    ("bench-pipeline", ["--bogus", "m.mlir"], "error: no such option: --bogus (see 'mlirhlo bench-pipeline --help')"),
    ("bench-pipeline", ["m.mlir", "--platform", "cpu", "--repet", "2"],
     "error: no such option: --repet (did you mean '--repeats'?)"),
    ("specs", ["--bogus"], "error: no such option: --bogus (see 'mlirhlo specs --help')"),
    ("specs list", ["--jsn"], "error: no such option: --jsn (did you mean '--json'?)"),
    ("specs show", ["h100_sxm", "--json"], "error: no such option: --json (see 'mlirhlo specs show --help')"),
    ("specs check", ["s.txtpb", "--strict"], "error: no such option: --strict (see 'mlirhlo specs check --help')"),
    ("cache", ["--bogus"], "error: no such option: --bogus (see 'mlirhlo cache --help')"),
    ("cache info", ["--json"], "error: no such option: --json (see 'mlirhlo cache info --help')"),
    ("cache clear", ["--all"], "error: no such option: --all (see 'mlirhlo cache clear --help')"),
    ("cuda-plugin", ["--bogus"], "error: no such option: --bogus (see 'mlirhlo cuda-plugin --help')"),
    ("cuda-plugin install", ["--forc"], "error: no such option: --forc (did you mean '--force'?)"),
    ("tpu-plugin", ["--bogus"], "error: no such option: --bogus (see 'mlirhlo tpu-plugin --help')"),
    ("tpu-plugin install", ["--forc"], "error: no such option: --forc (did you mean '--force'?)"),
    ("fit", ["m.mlir", "--tpu-topolgy", "v5e:2x2"], "error: no such option: --tpu-topolgy (did you mean "
                                                    "'--tpu-topology'?)"),
]


@pytest.fixture
def console_script(monkeypatch):
    """This process named as the ``mlirhlo`` console script names it: typer takes the program
    name of its usage hints from sys.argv[0], or ``python -m PACKAGE`` under pytest's __main__."""
    monkeypatch.setattr(sys, "argv", ["mlirhlo"])
    monkeypatch.setattr(sys.modules["__main__"], "__package__", None, raising=False)


@pytest.mark.golden
@pytest.mark.parametrize("command, words, line", UNKNOWN_OPTIONS,
                         ids=[f"{command or 'mlirhlo'} {' '.join(words)}" for command, words, _ in UNKNOWN_OPTIONS])
def test_an_unknown_option_is_refused_at_every_command(cli, console_script, command, words, line):
    """Golden (cli/common.py's no_such_option, for every command: argparse's, typer's and the
    words typer leaves): the option named, the closest of the command's own (compared without
    dashes), a command's word on an option it leaves out on purpose, or its --help; exit 2."""
    assert assert_one_line_error(cli(*command.split(), *words)) == line


def test_the_unknown_option_table_covers_every_command():
    assert {command for command, _, _ in UNKNOWN_OPTIONS} == {" ".join(path) for path, _ in mlirhlo_commands()}


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


def test_mlirhlo_accepts_xla_spellings(cli, work, tmp_path):
    """mlirhlo's own commands take XLA's spellings of the same options as aliases."""
    r = cli("run", work / "computation.hlo", "--reference", "cpu", "--jobs", "0", "--abs_error_bound=0.01",
            "--rel_error_bound", "0.01", "--use_large_float_range", "--print_literals")
    assert r.code == 0, r.err
    assert "output 0 (float32[8])" in r.out
    assert cli("opt", work / "computation.hlo", f"--o={tmp_path / 'c.mlir'}").code == 0
    assert (tmp_path / "c.mlir").read_text().startswith("module @computation")
    help_text = cli("spmd-run", "--help").out
    for alias in ("--num_partitions", "--num_replicas", "--is_spmd_partitioned_module", "--num_repeats"):
        assert alias in help_text
