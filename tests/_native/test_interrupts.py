"""_native/interrupts.py: the one ``error: interrupted`` line, and the SIGINT handler
that holds Ctrl-C back while an import runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

import mlirhlo_driver._native.interrupts as interrupts
from tests.conftest import REPO, assert_mentions


@pytest.fixture
def sigint_handler():
    """SIGINT's handler, restored after the test."""
    saved = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, saved)


class _Timer:
    """threading.Timer's stand-in: records what would be sent again, sends nothing."""

    made: list[_Timer] = []

    def __init__(self, interval, function, args):
        self.interval, self.function, self.args = interval, function, args
        self.daemon = False
        self.started = False
        _Timer.made.append(self)

    def start(self):
        self.started = True


@pytest.fixture
def timers(monkeypatch):
    _Timer.made = []
    monkeypatch.setattr(threading, "Timer", _Timer)
    monkeypatch.setattr(interrupts, "received", False)
    return _Timer.made


def _import_running(tmp_path, monkeypatch, name: str, body: str):
    """Import a module written to ``tmp_path`` whose top level runs ``body``; the module."""
    import importlib

    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.modules.pop(name, None)


# ------------------------------------------------------------------ interrupts


def test_a_fresh_process_has_seen_no_interrupt_and_reports_it_once():
    """At import nothing was received or reported; report() writes its line once, with the
    first caller's detail."""
    code = ("from mlirhlo_driver._native import interrupts as i\n"
            "print(i.received, i._reported)\n"
            "i.report(' (in opt)')\n"
            "i.report()\n"
            "print(i._reported)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert r.stdout == "False False\nTrue\n"
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: interrupted"), r.stderr
    assert_mentions(r.stderr, " (in opt)")


@pytest.mark.golden
@pytest.mark.parametrize("detail, line", [("", "error: interrupted\n"),
                                          (" (in opt)", "error: interrupted (in opt)\n")])
def test_interrupted_line_exactly(monkeypatch, capsys, detail, line):
    """The one line an interrupt ends a command with, and its caller's detail."""
    monkeypatch.setattr(interrupts, "_reported", False)
    interrupts.report(detail)
    assert capsys.readouterr().err == line


def test_report_writes_the_line_only_once(monkeypatch, capsys):
    monkeypatch.setattr(interrupts, "_reported", False)
    interrupts.report()
    interrupts.report(" again")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: interrupted") and "again" not in err, err
    monkeypatch.setattr(interrupts, "_reported", True)
    interrupts.report()
    assert capsys.readouterr().err == ""


def test_after_an_abandoned_native_call_the_interrupted_line_stays_last():
    """A compile abandoned on Ctrl-C (``_native.jaxlib.interruptible``) goes on in its thread
    and XLA may log a warning while the command leaves (jaxlib 0.9's device-less CUDA sort
    warning did, after the line): once the line is said, native writes to fd 2 go nowhere."""
    code = ("import os, threading, time\n"
            "from mlirhlo_driver._native import interrupts as i, jaxlib as j\n"
            "started, written = threading.Event(), threading.Event()\n"
            "def xla():\n"
            "    started.set()\n"
            "    while not i._reported: time.sleep(0.01)\n"
            "    os.write(2, b'W1206 gpu_compiler.cc] late warning\\n'); written.set()\n"
            "def interrupt():\n"
            "    started.wait(); import _thread; _thread.interrupt_main()\n"
            "threading.Thread(target=interrupt).start()\n"
            "try:\n"
            "    j.interruptible(xla)\n"
            "except KeyboardInterrupt:\n"
            "    print(i.abandoned)\n"
            "    i.report()\n"
            "print(written.wait(30))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert r.stdout == "True\nTrue\n", r.stderr
    assert r.stderr.strip().splitlines() == ["error: interrupted"], r.stderr


def test_install_replaces_only_pythons_default_handler(sigint_handler):
    """The default KeyboardInterrupt handler is replaced; a handler someone chose is kept."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupts.install()
    assert signal.getsignal(signal.SIGINT) is interrupts._on_sigint

    def chosen(signum, frame):
        pass

    for handler in (chosen, signal.SIG_IGN, signal.SIG_DFL):
        signal.signal(signal.SIGINT, handler)
        interrupts.install()
        assert signal.getsignal(signal.SIGINT) is handler


def test_install_outside_the_main_thread_does_nothing(sigint_handler):
    """Only the main thread may set a signal handler: elsewhere install() returns quietly."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    outcome = []
    t = threading.Thread(target=lambda: outcome.append(interrupts.install()))
    t.start()
    t.join(60)
    assert outcome == [None]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_in_import_is_true_only_under_an_import(tmp_path, monkeypatch):
    """A frame with importlib's machinery below it is in an import; this one, or none, is not."""
    module = _import_running(tmp_path, monkeypatch, "ac_in_import_probe",
                             "import sys\nfrom mlirhlo_driver._native import interrupts\n"
                             "INSIDE = interrupts._in_import(sys._getframe())\n")
    assert module.INSIDE is True
    assert interrupts._in_import(sys._getframe()) is False
    assert interrupts._in_import(None) is False


def test_sigint_outside_an_import_raises_keyboard_interrupt(timers):
    """As Python's own handler: KeyboardInterrupt at once, and the signal is noted."""
    with pytest.raises(KeyboardInterrupt):
        interrupts._on_sigint(signal.SIGINT, sys._getframe())
    assert interrupts.received is True
    assert timers == []


def test_sigint_inside_an_import_asks_again_a_moment_later(tmp_path, monkeypatch, timers):
    """Inside an import no exception is raised: a daemon timer sends SIGINT to this process again
    shortly (well under a second), and the signal is noted."""
    module = _import_running(tmp_path, monkeypatch, "ac_sigint_probe",
                             "import signal, sys\nfrom mlirhlo_driver._native import interrupts\n"
                             "RESULT = interrupts._on_sigint(signal.SIGINT, sys._getframe())\n")
    assert module.RESULT is None
    assert interrupts.received is True
    assert len(timers) == 1
    t = timers[0]
    assert (t.function, t.args, t.daemon, t.started) == (os.kill, (os.getpid(), signal.SIGINT), True, True)
    assert 0 < t.interval < 0.5
