"""Fixtures and helpers the end-to-end tests share: a small module, the CLI in a fresh
process, recorders of what a command hands the library, XLA's tools run in a work folder."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DATA, MLIRHLO, REPO, CliResult, run_xla_tool

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
