"""core/progress.py: events for a callback, a line on a terminal only, and the doors that report them."""

from __future__ import annotations

import io
import os
import pty

import pytest

from mlirhlo_driver.core import progress
from tests.conftest import DATA


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_report_calls_the_callback_and_none_is_nothing():
    seen = []
    progress.report(seen.append, 1, 3, "ptx")
    progress.report(None, 2, 3, "sass")  # no callback: nothing, no error
    assert seen == [progress.Progress(1, 3, "ptx")]


def test_terminal_is_a_line_only_on_a_terminal_and_not_quiet():
    assert progress.terminal(io.StringIO()) is None            # a pipe or file: nothing
    assert progress.terminal(_Tty(), quiet=True) is None       # --quiet
    assert isinstance(progress.terminal(_Tty()), progress.TerminalLine)

    class Closed:
        def isatty(self) -> bool:
            raise ValueError("I/O operation on closed file")

    assert progress.terminal(Closed()) is None


def _drawn(delay: float, events: list[progress.Progress]) -> str:
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as stream:
            with progress.TerminalLine(stream, delay=delay, label="opt") as line:
                for e in events:
                    line(e)
            stream.flush()
        os.set_blocking(master, False)
        out = b""
        while True:
            try:
                chunk = os.read(master, 1 << 16)
            except BlockingIOError:
                return out.decode(errors="replace")
            if not chunk:
                return out.decode(errors="replace")
            out += chunk
    finally:
        os.close(master)
        os.close(slave)


def test_the_line_waits_for_its_delay_then_shows_label_and_event():
    """Short work prints nothing; work past the delay shows 'label: what' and the count."""
    events = [progress.Progress(0, 2, "m: ptx"), progress.Progress(1, 2, "m: sass")]
    assert _drawn(3600, events) == ""
    drawn = _drawn(0, events)
    assert "opt: m: sass" in drawn and "1/2" in drawn


def test_compiled_write_reports_each_stage(tmp_path):
    """The API's write() gives one event per stage, in order, before writing it."""
    import mlirhlo_driver as mh

    compiled = mh.load(str(DATA / "erf_inv.mlir")).compile(mh.Target.cpu())
    seen: list[mh.Progress] = []
    written = compiled.write(str(tmp_path), ["hlo", "llvm"], progress=seen.append)
    assert [(e.done, e.total, e.what) for e in seen] == [(0, 2, "erf_inv: hlo"), (1, 2, "erf_inv: llvm")]
    assert len(written) == 2


def test_diff_reports_its_sides(tmp_path):
    from mlirhlo_driver.commands import mlirhlo as commands

    seen = []
    commands.diff(str(DATA / "erf_inv.mlir"), platform="cpu", flags_b="--xla_disable_hlo_passes=algsimp",
                  cache=False, say=lambda _: None, progress=seen.append)
    assert [(e.done, e.total, e.what) for e in seen] == [(0, 2, "side A"), (1, 2, "side B")]


@pytest.mark.parametrize("quiet", [False, True])
def test_opt_draws_its_line_on_a_terminal_stderr_only(cli, monkeypatch, tmp_path, quiet):
    """opt's stages as a line on a terminal stderr (the delay set to 0 here), cleared at
    the end; --quiet, none."""
    from mlirhlo_driver.cli import common

    stream = _Tty()
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(common.sys, "stderr", stream)
    args = ["opt", DATA / "erf_inv.mlir", "--platform", "cpu", "--stage", "hlo,llvm", "--no-cache",
            "--dump-dir", tmp_path]
    r = cli(*args, *(["--quiet"] if quiet else []))  # sys.stderr is the fake terminal
    drawn = stream.getvalue()
    assert r.code == 0, drawn
    assert ("opt: erf_inv" in drawn) != quiet, drawn
    assert "opt:" not in r.out
