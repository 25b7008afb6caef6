"""Help text of every front-end: every option has help, metavariables are words
(FILE, NAME, N, SECONDS, HOST:PORT), never Python types; every console script
has --version."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

BIN = Path(sys.executable).parent
# What typer/click print for an option without a metavar of its own.
PYTHON_TYPES = re.compile(r"<(str|int|float|list|path|bool|text|integer|choice|tuple)\b|\bTEXT\b|\bINTEGER\b|\bFLOAT\b")


def _commands() -> list[tuple[list[str], object]]:
    """(path, click command) of every ``mlirhlo`` command and sub-command, groups included."""
    import typer

    from mlirhlo_driver.cli import mlirhlo as cli

    found = []

    def walk(cmd: object, path: list[str]) -> None:
        found.append((path, cmd))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, path + [name])

    walk(typer.main.get_command(cli.app), [])
    return found


COMMANDS = _commands()


def test_every_command_is_scanned():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "opt", "run", "spmd-run", "ptx", "convert", "passes", "kernels", "diff", "bench-pipeline",
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


XLA_TOOLS = {"hlo-opt": ("hlo_opt_main", "HLO_OPT_FLAGS"),
             "run_hlo_module": ("run_hlo_module_main", "RUN_HLO_MODULE_FLAGS"),
             "multihost_hlo_runner": ("multihost_main", "MULTIHOST_FLAGS"),
             "ptx-opt": ("ptx_opt_main", "PTX_OPT_FLAGS")}


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


def _console_scripts() -> list[str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return sorted(tomllib.load(f)["project"]["scripts"])


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


@pytest.fixture
def fake_versions(monkeypatch):
    """version_text's sources as fakes: jax/jaxlib lines, the ptxas in use, the CUDA tools, llvmlite."""
    from importlib import metadata
    from types import SimpleNamespace

    from mlirhlo_driver import targets
    from mlirhlo_driver._native import jaxlib

    state = {"ptxas": SimpleNamespace(version_str="12.8.93", path="/cuda/bin/ptxas", source="nvidia-cuda-nvcc"),
             "llvmlite": "0.44.0"}

    def version(dist):
        assert dist == "llvmlite", dist
        if state["llvmlite"] is None:
            raise metadata.PackageNotFoundError(dist)
        return state["llvmlite"]

    monkeypatch.setattr(jaxlib, "version_lines", lambda: ["jax 0.1", "jaxlib 0.1"])
    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (state["ptxas"], [], "no CUDA found"))
    monkeypatch.setattr(targets, "cuda_tool_lines", lambda ptxas: [f"libdevice for {ptxas and ptxas.path}",
                                                                   "nvdisasm none"])
    monkeypatch.setattr(metadata, "version", version)
    return state


def test_version_text_lists_every_tool_one_per_line(fake_versions):
    """--version: the driver, jax lines, the ptxas in use (version, path, where from), the CUDA tools, llvmlite."""
    from mlirhlo_driver import __version__
    from mlirhlo_driver.listings import version_text

    assert version_text() == (f"mlirhlo-driver {__version__}\njax 0.1\njaxlib 0.1\n"
                              "ptxas 12.8.93 /cuda/bin/ptxas (nvidia-cuda-nvcc)\n"
                              "libdevice for /cuda/bin/ptxas\nnvdisasm none\nllvmlite 0.44.0\n")


def test_version_text_without_ptxas_or_llvmlite(fake_versions):
    """No usable ptxas: why; llvmlite missing: said so, not a crash."""
    from mlirhlo_driver import __version__
    from mlirhlo_driver.listings import version_text

    fake_versions.update(ptxas=None, llvmlite=None)
    assert version_text() == (f"mlirhlo-driver {__version__}\njax 0.1\njaxlib 0.1\n"
                              "ptxas none usable: no CUDA found\nlibdevice for None\nnvdisasm none\n"
                              "llvmlite not installed\n")


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
    assert [name for name, _ in rows] == ["opt", "watch", "passes", "convert", "run", "spmd-run", "kernels", "explore",
                                          "diff", "ptx", "bench-pipeline", "specs", "cache", "cuda-plugin"]
    summaries = dict(rows)
    assert summaries["ptx"] == "LLVM IR to PTX with LLVM's NVPTX backend (XLA's ptx-opt)."
    assert summaries["cache"] == "The stage cache every command and the Python API share."
    assert summaries["passes"].startswith("List every pass the installed jaxlib accepts")


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
        "platform": "cpu", "reference": "interpreter", "seed": 0, "zeros": False, "inputs_npz": None,
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
        "input_format": None, "args": None, "say": log_note}
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
