"""``ptx-opt`` as a user runs it (XLA's documented command lines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, assert_one_line_error
from tests.e2e.conftest import assert_interrupted, interrupted_xla_tool

BIN = Path(sys.executable).parent


def shell(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """The line as a user types it, with the installed console scripts on PATH."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# -------------------------------------------------------------------- ptx-opt

def test_doc_ptx_opt(tool):
    r = tool("ptx-opt --arch=9.0 input.ll")
    assert r.code == 0, r.err
    assert ".target sm_90\n" in r.out and ".entry scale(" in r.out


def test_doc_ptx_opt_dump_llvmir(tool, work):
    r = tool("ptx-opt --arch=9.0 --xla_dump_to=DIR --xla_gpu_dump_llvmir input.ll")
    assert r.code == 0, r.err
    assert r.out == tool("ptx-opt --arch=9.0 input.ll").out
    dumps = sorted((work / "DIR").iterdir())
    assert len(dumps) > 10 and dumps[0].name.startswith("input.0000.")
    assert all("@scale" in p.read_text() for p in dumps)


def test_ptx_opt_stdin(work):
    p = shell("ptx-opt --arch=8.0 - < input.ll", work)
    assert p.returncode == 0, p.stderr
    assert ".target sm_80" in p.stdout


def test_ptx_opt_refuses_other_xla_flags_and_file_counts(tool):
    """ptx-opt reads two XLA flags only, and exactly one input."""
    assert_one_line_error(tool("ptx-opt --xla_cpu_enable_fast_math input.ll"),
                          facts=("--xla_cpu_enable_fast_math", "--xla_dump_to", "--xla_gpu_dump_llvmir"))
    for line in ("ptx-opt input.ll input.ll", "ptx-opt --arch=9.0"):
        assert_one_line_error(tool(line), facts=("one LLVM IR file", "ptx-opt --arch=9.0 FILE"))


@pytest.mark.slow
def test_ctrl_c_in_ptx_opt_is_one_error_line_and_writes_nothing(tmp_path):
    """Ctrl-C while ptx-opt compiles kernel after kernel: exit 130, one error line, no
    traceback, and no -o file, whole or half written."""
    kernel = (DATA / "xla_tools" / "input.ll").read_text()
    (tmp_path / "many.ll").write_text("".join(f"; ----- k{i} -----\n{kernel}" for i in range(5000)))
    r = interrupted_xla_tool("ptx-opt", ["--arch=9.0", "many.ll", "-o", "out.ptx"], tmp_path)
    assert_interrupted(r)
    assert r.out == ""
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "interrupted-cache") == ["many.ll"]
