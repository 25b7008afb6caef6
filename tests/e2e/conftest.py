"""Fixtures and helpers the end-to-end tests share: a small module, the CLI in a fresh
process, recorders of what a command hands the library, XLA's tools run in a work folder
or interrupted."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DATA, MLIRHLO, REPO, XLA_TOOL_MAINS, CliResult, readline_within, run_xla_tool

SMALL = """func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


# LLVM IR calling libdevice, for the --libdevice checks.
NV_IR = """target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare float @__nv_expf(float)

define void @k(ptr %p) {
  %x = load float, ptr %p
  %y = call float @__nv_expf(float %x)
  store float %y, ptr %p
  ret void
}
"""


def mlirhlo_commands() -> list[tuple[list[str], object]]:
    """(path, click command) of every ``mlirhlo`` command and sub-command, groups included
    (the root's path is [])."""
    import typer

    from mlirhlo_driver.cli import mlirhlo as cli

    found = []

    def walk(cmd: object, path: list[str]) -> None:
        found.append((path, cmd))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, path + [name])

    walk(typer.main.get_command(cli.app), [])
    return found


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.mlir"
    path.write_text(SMALL)
    return path


def mlirhlo(*args, input: str | bytes | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI in a fresh process (for stdin, signals, fd-2 noise)."""
    return subprocess.run(MLIRHLO + [str(a) for a in args], capture_output=True,
                          input=input.encode() if isinstance(input, str) else input,
                          timeout=timeout, cwd=str(REPO))


# ------------------------------------------------------------ what the typer commands hand the library

@pytest.fixture
def recorder(monkeypatch):
    """Library entry points the thin typer commands call, replaced by recorders returning a fixed text."""
    from mlirhlo_driver import listings, targets
    from mlirhlo_driver.batch import kernels
    from mlirhlo_driver.commands import mlirhlo as commands

    calls: dict = {}

    def record(name, result="table\n"):
        def fake(*args, **kwargs):
            calls[name] = (args, kwargs)
            return result
        return fake

    monkeypatch.setattr(commands, "bench_pipeline", record("bench_pipeline"))
    monkeypatch.setattr(targets, "resolve", record("resolve", "a target"))
    monkeypatch.setattr(kernels, "report", record("kernels"))
    monkeypatch.setattr(commands, "diff", record("diff"))
    monkeypatch.setattr(listings, "spec_table", record("spec_table"))
    monkeypatch.setattr(listings, "pass_catalog", record("pass_catalog"))
    monkeypatch.setattr(listings, "load_plugins", record("load_plugins", None))
    return calls


@pytest.fixture
def run_recorder(monkeypatch):
    """commands.run and the spmd launcher replaced by recorders; ``calls["code"]`` is what they return."""
    from mlirhlo_driver.commands import mlirhlo as commands
    from mlirhlo_driver.commands import spmd_run as spmd_launch

    calls: dict = {"code": 0}

    def run(inputs, **kwargs):
        calls["run"] = (inputs, kwargs)
        return calls["code"]

    def spmd_options(flags, **kwargs):
        calls["spmd_options"] = (flags, kwargs)
        return "options"

    def spmd_run(launch, options):
        calls["spmd_run"] = launch
        return calls["code"]

    monkeypatch.setattr(commands, "run", run)
    monkeypatch.setattr(spmd_launch, "spmd_options", spmd_options)
    monkeypatch.setattr(spmd_launch, "run", spmd_run)
    return calls


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("xla_tools")
    for p in (DATA / "xla_tools").iterdir():
        (shutil.copytree if p.is_dir() else shutil.copy)(p, d / p.name)
    return d


@pytest.fixture
def tool(capfd, work):
    """``tool("hlo-opt --platform=cpu input.hlo")``: the console script's main, in this process, in ``work``."""
    def run(line: str) -> CliResult:
        name, *argv = line.split()
        return run_xla_tool(name, argv, work, capfd)

    return run


def report_line(out: str, start: str) -> str:
    """The line of a run report that begins with ``start`` (after its indent and a ``[N] ``
    process prefix): a test then asserts its facts, not the layout of the line."""
    for line in out.splitlines():
        if re.sub(r"^\[\d+\] ", "", line).lstrip().startswith(start):
            return line
    raise AssertionError(f"no line starting {start!r} in:\n{out}")


# The console script's own lines (``sys.exit(main())``), with a line on stderr once the
# module is imported: its Ctrl-C handler is installed from then on.
_STARTED = b"-- started --"
_XLA_TOOL = "import sys\nfrom mlirhlo_driver.cli.xla import tools\nsys.stderr.write({started!r} + '\\n')\n" \
            "sys.stderr.flush()\nsys.exit(tools.{main}())\n"


def interrupted_xla_tool(name: str, argv: list, cwd: Path, *, busy: bytes = b"", after: float = 1.0) -> CliResult:
    """Ctrl-C at XLA's tool ``name`` (``hlo-opt``, ...) busy with ``argv`` in ``cwd``: SIGINT to
    its process group, as a terminal sends it, once it runs (``busy``: once a line on
    stderr starts so) and ``after`` seconds more. Its stage cache is a fresh one under
    ``cwd``, so no compile is already done. The result, less the start line."""
    code = _XLA_TOOL.format(started=_STARTED.decode(), main=XLA_TOOL_MAINS[name])
    env = dict(os.environ, MLIRHLO_CACHE_DIR=str(cwd / "interrupted-cache"))
    proc = subprocess.Popen([sys.executable, "-c", code, *map(str, argv)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    seen = []
    try:
        for mark in (_STARTED, busy) if busy else (_STARTED,):
            while True:
                line = readline_within(proc.stderr, 300)
                assert line, f"{name} stopped before {mark!r}: {b''.join(seen).decode(errors='replace')}"
                if line.rstrip(b"\n") != _STARTED:
                    seen.append(line)
                if line.startswith(mark):
                    break
        time.sleep(after)
        assert proc.poll() is None, f"{name} finished before Ctrl-C: give it more work"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return CliResult(proc.returncode, out.decode(errors="replace"),
                     b"".join(seen).decode(errors="replace") + err.decode(errors="replace"))


def assert_interrupted(result: CliResult) -> None:
    """Ctrl-C's contract at every front-end: exit 130, its one error line last on stderr
    (its wording: tests/_native/test_interrupts.py), written once, and no traceback."""
    assert result.code == 130, (result.code, result.err[-2000:])
    assert "Traceback" not in result.err, result.err
    last = result.err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "interrupted" in last and result.err.count("interrupted") == 1, result.err
