"""Help text of every front-end: every option has help, metavariables are words
(FILE, NAME, N, SECONDS, HOST:PORT), never Python types; every console script
has --version.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO, XLA_TOOL_MAINS
from tests.e2e.conftest import mlirhlo_commands

BIN = Path(sys.executable).parent

# What typer/click print for an option without a metavar of its own.
PYTHON_TYPES = re.compile(r"<(str|int|float|list|path|bool|text|integer|choice|tuple)\b|\bTEXT\b|\bINTEGER\b|\bFLOAT\b")

COMMANDS = mlirhlo_commands()

XLA_TOOLS = {"hlo-opt": ("hlo_opt_main", "HLO_OPT_FLAGS"),
             "run_hlo_module": ("run_hlo_module_main", "RUN_HLO_MODULE_FLAGS"),
             "multihost_hlo_runner": ("multihost_main", "MULTIHOST_FLAGS"),
             "ptx-opt": ("ptx_opt_main", "PTX_OPT_FLAGS")}


def _console_scripts() -> list[str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return sorted(tomllib.load(f)["project"]["scripts"])


TOOLS = XLA_TOOL_MAINS


def test_every_command_is_scanned():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "opt", "run", "spmd-run", "ptx", "convert", "passes", "kernels", "fit", "diff", "bench-pipeline",
            "specs", "specs list", "specs show", "specs check", "cache", "cache info"} <= names


def test_opt_help_has_words_and_help_for_every_option(cli):
    """opt parses with argparse (cli/opt.py): the same rules as the typer commands."""
    from mlirhlo_driver.cli import opt

    r = cli("opt", "--help")
    assert r.code == 0, r.err
    assert r.out.startswith("Usage: mlirhlo opt [OPTIONS] [FILE...]\n")
    assert not PYTHON_TYPES.search(r.out), PYTHON_TYPES.search(r.out).group(0)
    actions = opt.parser()._actions
    assert len(actions) >= 40
    for action in actions:
        assert (action.help or "").strip(), f"mlirhlo opt {action.dest}: no help text"
        for spelling in action.option_strings:
            assert spelling in r.out, spelling
        takes_value = action.nargs != 0 and action.option_strings and action.dest != "help"
        if takes_value:  # its metavariable is an upper-case word
            assert action.metavar and re.fullmatch(r"[A-Z][A-Z0-9_:=.\[\],]*", action.metavar), \
                (action.option_strings, action.metavar)
        if not action.option_strings:
            assert action.metavar == "FILE" and "[FILE...]" in r.out


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "mlirhlo")
def test_mlirhlo_help_has_words_and_help_for_every_option(cli, path):
    cmd = dict((" ".join(p), c) for p, c in COMMANDS)[" ".join(path)]
    r = cli(*path, "--help")
    assert r.code == 0, r.err
    assert not PYTHON_TYPES.search(r.out), PYTHON_TYPES.search(r.out).group(0)
    for param in cmd.params:
        if param.param_type_name != "option" or param.hidden:
            continue
        assert (param.help or "").strip(), f"mlirhlo {' '.join(path)} {param.opts[0]}: no help text"
        assert param.opts[0] in r.out
        if not param.is_flag:  # a value: its metavariable is an upper-case word
            assert param.metavar and re.fullmatch(r"[A-Z][A-Z0-9_:=.\[\],]*", param.metavar), \
                (param.opts[0], param.metavar)
    for param in cmd.params:
        if param.param_type_name == "argument":
            assert param.metavar and param.metavar.rstrip(".").isupper(), (param.name, param.metavar)


@pytest.mark.parametrize("name", sorted(XLA_TOOLS))
def test_xla_front_end_help(capfd, name):
    from mlirhlo_driver.cli.xla import tools as xla_tools

    main, flags_name = XLA_TOOLS[name]
    with pytest.raises(SystemExit) as e:
        getattr(xla_tools, main)(["--help"])
    out = capfd.readouterr().out
    assert e.value.code == 0
    assert not PYTHON_TYPES.search(out) and "<" not in out
    for flag in getattr(xla_tools, flags_name):
        assert flag.help.strip(), f"{name} --{flag.name}: no help text"
        if flag.kind == "bool":
            assert f"--{flag.name}" in out
        else:
            assert re.fullmatch(r"[A-Z][A-Z0-9_:.]*", flag.metavar), (flag.name, flag.metavar)
            assert f"--{flag.name}={flag.metavar}" in out or f"--{flag.name} {flag.metavar}" in out, flag.name
    # XLA's own flags, which every one of these tools takes, and the two flags every tool has
    rows = [ln.split()[0] for ln in out.splitlines() if ln.startswith("  --")]
    assert rows[-3:] == ["--xla_NAME=VALUE", "--version", "--help"], rows
    assert "--xla_NAME=VALUE Any XLA DebugOptions flag, anywhere on the line (booleans: --xla_NAME, --noxla_NAME)." \
        in " ".join(out.split())


def test_console_scripts_are_the_front_ends():
    assert set(_console_scripts()) == {"mlirhlo", "hlo_runner_main", *XLA_TOOLS}


@pytest.mark.parametrize("script", _console_scripts())
def test_every_console_script_has_version(script):
    exe = BIN / script
    if not exe.exists():
        pytest.skip(f"{script} is not installed in this environment (pip install -e .)")
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "mlirhlo-driver" in proc.stdout.splitlines()[0]
    assert proc.stderr == ""


def test_mlirhlo_alone_prints_the_root_help_and_exits_2(cli):
    """No command: the root's help (every command listed), as typer's no_args_is_help gives."""
    r = cli()
    assert r.code == 2
    assert r.out.startswith("Usage: ") and "Commands:" in r.out, r.out + r.err
    for name in ("opt", "run", "convert", "specs"):
        assert f"\n  {name} " in r.out, name


def test_mlirhlo_version_prints_version_text_and_exits_0(cli, fake_versions):
    """mlirhlo --version: exactly version_text() on stdout (no extra newline), exit 0, before any command."""
    from mlirhlo_driver.listings import version_text

    for argv in (["--version"], ["--version", "run"]):
        r = cli(*argv)
        assert (r.code, r.out, r.err) == (0, version_text(), ""), argv


def test_root_help_lists_every_command_with_its_summary(cli):
    """mlirhlo --help: every command and group by its command-line name, in order, with its help's first line."""
    r = cli("--help")
    assert r.code == 0, r.err
    assert re.findall(r"^  (-.*?)  ", r.out.split("Options:\n")[1].split("\n\n")[0], re.M) == ["--version",
                                                                                             "-h, --help"]
    rows = re.findall(r"^  (\S+) +(.*)$", r.out.split("Commands:\n")[1], re.M)
    assert [name for name, _ in rows] == ["opt", "watch", "passes", "convert", "run", "spmd-run", "kernels", "fit",
                                          "explore", "diff", "ptx", "bench-pipeline", "specs", "cache", "cuda-plugin",
                                          "tpu-plugin"]
    summaries = dict(rows)
    assert summaries["ptx"] == "LLVM IR to PTX with LLVM's NVPTX backend (XLA's ptx-opt)."
    assert summaries["cache"] == "The stage cache every command and the Python API share."
    assert summaries["passes"].startswith("List every pass the installed jaxlib accepts")


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_help_and_version(tool, name):
    from mlirhlo_driver.cli.xla import tools as xla_tools

    r = tool(f"{name} --help")
    assert r.code == 0 and r.out.startswith(f"usage: {name} ")
    flags = {"hlo-opt": xla_tools.HLO_OPT_FLAGS, "run_hlo_module": xla_tools.RUN_HLO_MODULE_FLAGS,
             "multihost_hlo_runner": xla_tools.MULTIHOST_FLAGS, "ptx-opt": xla_tools.PTX_OPT_FLAGS}[name]
    for f in flags:
        assert f"--{f.name}" in r.out
    assert "<" not in r.out  # metavariables are words, not Python types
    v = tool(f"{name} --version")
    assert v.code == 0 and v.out.startswith(name) and "mlirhlo-driver" in v.out
