"""scripts/xla_lit.py: XLA's lit tests run against a tool, pass/fail per RUN line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import xla_lit

# A lit file of our own, with what XLA's hlo-opt tests use: %s, %S, %t, a lit parameter,
# FileCheck prefixes, `not`, a RUN line continued with a backslash, lines that read what an
# earlier line wrote.
LIT = r"""// RUN: hlo-opt %s | FileCheck %s
// RUN: hlo-opt %s | FileCheck %s --check-prefix=ABSENT
// RUN: echo %{GPU} %{PTX} | FileCheck %s --check-prefix=PARAMS
// RUN: not hlo-opt %S/no_such_file.hlo
// RUN: hlo-opt %s > %t_dir_out \
// RUN:   && test -s %t_dir_out
// RUN: cat %t_dir_out | FileCheck %s --check-prefix=AGAIN

// CHECK: HloModule lit_input
// ABSENT: not in the file at all
// PARAMS: a100_pcie_80 PTX
// AGAIN: ENTRY main

HloModule lit_input

ENTRY main {
  ROOT c = f32[] constant(1)
}
"""


def _tools(tmp_path: Path) -> Path:
    """A folder with an hlo-opt that prints its input less its comments (so the CHECK lines do
    not match themselves) and the suite's filecheck."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "hlo-opt"
    fake.write_text('#!/bin/sh\nexec grep -v "^//" "$@"\n')
    fake.chmod(0o755)
    (bin_dir / "filecheck").symlink_to(Path(sys.executable).parent / "filecheck")
    return bin_dir


def test_run_lines_join_continuations_and_keep_their_line_numbers(tmp_path):
    f = tmp_path / "t.hlo"
    f.write_text(LIT)
    lines = xla_lit.run_lines(f)
    assert [r.line for r in lines] == [1, 2, 3, 4, 5, 7]
    assert lines[4].command == "hlo-opt %s > %t_dir_out  && test -s %t_dir_out"


@pytest.mark.slow
def test_each_run_line_passes_or_fails_on_its_own(tmp_path, capsys):
    f = tmp_path / "t.hlo"
    f.write_text(LIT)
    code = xla_lit.main([str(f), "--bin", str(_tools(tmp_path))])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL t.hlo:2" in out  # the absent CHECK
    for line in (1, 3, 4, 5, 7):
        assert f"PASS t.hlo:{line}" in out, out
    assert out.splitlines()[-1] == "5 of 6 RUN lines pass"


def test_a_checkout_root_runs_xla_s_hlo_opt_suites(tmp_path):
    """Given a folder, the files of XLA's two hlo-opt suites are the ones run."""
    tests = tmp_path / "xla" / "tools" / "hlo_opt" / "tests"
    hlo_tests = tmp_path / "xla" / "hlo" / "tools" / "tests"
    for d in (tests, hlo_tests):
        d.mkdir(parents=True)
    for p in (tests / "a.hlo", hlo_tests / "hlo_opt_b.mlir", hlo_tests / "other.hlo", hlo_tests / "BUILD",
              hlo_tests / "hlo_opt_test_only_passes.cc"):
        p.write_text("")
    found = {p.name for p in xla_lit.lit_files([str(tmp_path)])}
    assert found == {"a.hlo", "hlo_opt_b.mlir"}


@pytest.mark.slow
def test_filecheck_reads_a_binary_stage_as_llvm_s_does(tmp_path, capsys):
    """A stage that is not UTF-8 (XLA's Fusion Explorer zipapp) reaches FileCheck whole."""
    f = tmp_path / "b.hlo"
    f.write_text("// RUN: printf '#!/usr/bin/env python3\\nPK\\322\\377' | FileCheck %s\n"
                 "// CHECK: #!/usr/bin/env python3\n// CHECK-NEXT: PK\n")
    assert xla_lit.main([str(f), "--bin", str(_tools(tmp_path)), "-v"]) == 0, capsys.readouterr().out


def test_a_missing_lit_parameter_fails_that_line(tmp_path, capsys):
    f = tmp_path / "p.hlo"
    f.write_text("// RUN: echo %{NOPE}\n")
    env = dict(os.environ)
    assert xla_lit.main([str(f), "--bin", str(_tools(tmp_path)), "-v"]) == 1
    out = capsys.readouterr().out
    assert "FAIL p.hlo:1" in out and "NOPE" in out
    assert dict(os.environ) == env
