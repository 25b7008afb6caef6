"""``mlirhlo watch`` as a user runs it: a save rebuilds, Ctrl-C ends it; its usage errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error, readline_within

ADD = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.mark.slow
def test_mlirhlo_watch_sees_a_save_and_ends_on_ctrl_c(tmp_path):
    """The command as a user runs it: a build at start, another after the file is saved (by
    rename, as editors do), its output written; Ctrl-C ends it with exit 0."""
    path = tmp_path / "m.mlir"
    path.write_text(ADD)
    out = tmp_path / "m.out.mlir"
    proc = subprocess.Popen([sys.executable, "-m", "mlirhlo_driver", "watch", str(path), "--passes", "canonicalize",
                             "-o", str(out)], cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        first = readline_within(proc.stderr, 120)
        assert first.startswith("watch: build 0 (start): ok in "), first
        assert "stablehlo.add" in out.read_text()
        time.sleep(0.3)  # the watch is set up once the first build is reported; give it a moment
        tmp = tmp_path / "m.mlir.tmp"
        tmp.write_text(ADD.replace("add", "subtract"))
        os.replace(tmp, path)
        second = readline_within(proc.stderr, 120)
        assert second.startswith("watch: build 1 (m.mlir): ok in "), second
        assert "stablehlo.subtract" in out.read_text()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("watch did not end on Ctrl-C")
    assert code == 0


def test_watch_help_and_usage_errors(cli):
    r = cli("watch", "--help")
    assert r.code == 0 and "opt's OPTIONS" in r.out
    r = cli("watch")
    assert r.code == 2 and r.err.startswith("error: no input modules given")
    r = cli("watch", str(Path(__file__)), "--list-stages")
    assert r.code == 2 and "--list-stages" in r.err


def test_watch_refuses_an_unknown_option_before_watching(cli):
    """An unknown option is refused once, before any build: the command line does not change
    while it is watched (a build would fail on it at every change)."""
    r = cli("watch", str(Path(__file__)), "--platfrom", "cpu")
    assert_one_line_error(r, facts=("--platfrom", "'--platform'"))
    assert "build" not in r.err


def test_watch_refuses_an_unknown_topology_or_spec_once_before_watching(cli):
    """A target that does not resolve is a usage error said once, before any build (it was a
    failed build, then the same line again as the watch set itself up)."""
    r = cli("watch", str(Path(__file__)), "--platform", "tpu", "--tpu-topology", "v9z:2x2")
    assert_one_line_error(r, at="--tpu-topology", facts=("v9z",))
    r = cli("watch", str(Path(__file__)), "--platform", "cuda", "--gpu-spec", "bogus")
    assert_one_line_error(r, facts=("bogus",))
