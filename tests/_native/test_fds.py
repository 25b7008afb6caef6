"""_native/fds.py: fd 2 captured for a block and given back (also when what follows is
an error line), and the one line of a native log that says why a process died.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import mlirhlo_driver._native.fds as fds
import mlirhlo_driver._native.processes as processes
from tests.conftest import CliResult, assert_one_line_error


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


def test_error_after_a_captured_native_call_still_reaches_stderr(mlir_file):
    # Bad pass options are found by parsing the pass with fd 2 captured; fd 2 must be
    # restored afterwards, or the error line that follows goes into the discarded capture.
    # A real process: in-process, pytest's capture writes sys.stderr past fd 2.
    proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", str(mlir_file),
                           "--passes", "cse,canonicalize{bogus=1}"], capture_output=True, text=True,
                          timeout=300)
    assert_one_line_error(CliResult(proc.returncode, proc.stdout, proc.stderr), at="--passes:1:17",
                          facts=("'canonicalize'", "bogus"))


# ------------------------------------------------------------------ fds


def test_capture_fd2_takes_what_native_code_writes_and_gives_fd2_back():
    """Bytes written to descriptor 2 inside the block are the ``.text`` afterwards (undecodable
    bytes replaced), not before; descriptor 2 is the same file again after the block."""
    before = os.fstat(2)
    with fds.capture_fd2() as captured:
        os.write(2, b"native line\n")
        os.write(2, b"bad \xff byte\n")
        assert captured.text == ""
        assert not os.path.samestat(os.fstat(2), before)
    assert captured.text == "native line\nbad \ufffd byte\n"
    assert os.path.samestat(os.fstat(2), before)


def test_capture_fd2_gives_fd2_back_when_the_block_raises():
    """An exception in the block still restores descriptor 2 and keeps what was captured."""
    before = os.fstat(2)
    with pytest.raises(RuntimeError, match="inside"), fds.capture_fd2() as captured:
        os.write(2, b"x")
        raise RuntimeError("inside")
    assert captured.text == "x"
    assert os.path.samestat(os.fstat(2), before)


def test_capture_fd2_in_a_fresh_process_orders_python_and_native_output(tmp_path):
    """In a process of its own: sys.stderr's buffered text before the block stays outside,
    text inside (both kinds) is captured, and fd 2 writes after it reach the real stderr."""
    code = ("import os, sys\n"
            "from mlirhlo_driver._native.fds import capture_fd2\n"
            "sys.stderr.write('before\\n')\n"
            "with capture_fd2() as c:\n"
            "    os.write(2, b'native\\n')\n"
            "    sys.stderr.write('python\\n')\n"
            "os.write(2, b'after\\n')\n"
            "print(repr(c.text))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(tmp_path),
                       env=processes.python_env(), timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "'native\\npython\\n'\n", "before\nafter\n")


@pytest.mark.parametrize("log, line", [
    ("LLVM ERROR: first. x\nCheck failed: y\nLLVM ERROR: second one. More\ntail\n", "second one"),
    ("  LLVM ERROR:   spaced out  \n", "spaced out"),
    ("an error here\nF0101 Fatal: out of memory\nplain tail\n", "F0101 Fatal: out of memory"),
    ("Some Error happened\nplain tail\n", "Some Error happened"),
    ("error one\nERROR two\nplain tail\n", "ERROR two"),
    ("Check failed: a == b\nplain\n", "Check failed: a == b"),
    ("first\n\n   \nsecond  \n\n", "second"),
    ("only\n", "only"),
    ("\n  \n", ""),
    ("z" * 299 + "\nFatal " + "f" * 400 + "\n", ("Fatal " + "f" * 400)[:300]),
    ("noise\n" + "w" * 301 + "\n", "w" * 300),
    ("noise\nLLVM ERROR: Cannot select: intrinsic. More text\nlast\n", "Cannot select: intrinsic"),
    ("x\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo. Stack dump follows\n#0 0x1\n",
     "Cannot select: intrinsic %llvm.nvvm.foo"),
    ("loading\nF0101 shape_inference.cc:1] Check failed: a == b\n*** Begin stack trace ***\n    frame 1\n",
     "F0101 shape_inference.cc:1] Check failed: a == b"),
    ("noise\nF0101 check.cc:1] Check failed: " + "x" * 400 + "\nlast\n",
     ("F0101 check.cc:1] Check failed: " + "x" * 400)[:300]),
    ("noise\n" + "y" * 400 + "\n", "y" * 300),
    ("one\ntwo\n", "two"),
    ("", ""),
    # jax's warning on a TPU VM, printed before libtpu aborted (a v5e), is not the death's line
    ("F1206 tpu.cc:9] stop\n/opt/jax/_src/cloud_tpu_init.py:88: UserWarning: Transparent hugepages are not "
     "enabled.\n  warnings.warn(\n", "F1206 tpu.cc:9] stop"),
])
@pytest.mark.golden
def test_native_error_line_exactly(log, line):
    """The line a native log gives a one-line error (the family's golden table): the last LLVM
    fatal error (its first sentence); else the last Check failed / Fatal / error line of any
    case; else the last non-blank line; Python warnings left out; all stripped and at most 300
    characters."""
    assert fds.native_error_line(log) == line


def test_last_native_error_reads_a_log_file_and_is_empty_without_one(tmp_path):
    """The log file's line (undecodable bytes replaced); "" for a file that is not there."""
    log = tmp_path / "worker.log"
    log.write_bytes(b"start\nLLVM ERROR: Cannot select \xff. rest\nend\n")
    assert fds.last_native_error(str(log)) == "Cannot select \ufffd"
    assert fds.last_native_error(str(tmp_path / "missing.log")) == ""
    assert fds.last_native_error(str(tmp_path)) == ""   # a directory: an OSError too
