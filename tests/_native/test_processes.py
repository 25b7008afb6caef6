"""_native/processes.py: child interpreters of this package. Their command and
environment (a child imports this package from where this process does, even with another
copy on its PYTHONPATH), stopping a child with or without what it started, signal names.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mlirhlo_driver
from mlirhlo_driver._native import processes
from tests.conftest import REPO, process_alive, processes_gone, readline_within

WITH_GRANDCHILD = '''
import subprocess, sys, time

grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(grandchild.pid, flush=True)
time.sleep(600)
'''

_PARENT = ("import subprocess, sys, time\n"
           "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
           "print(child.pid, flush=True)\n"
           "time.sleep(120)\n")


def _parent_with_child():
    """A child in its own process group that started a grandchild; (child, grandchild pid)."""
    p = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True, start_new_session=True)
    grandchild = int(p.stdout.readline())
    return p, grandchild


# ------------------------------------------------------------------ processes

def test_a_child_imports_this_package_not_another_copy(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "mlirhlo_driver").mkdir(parents=True)
    (elsewhere / "mlirhlo_driver" / "__init__.py").write_text("")
    (elsewhere / "where_from.py").write_text("import mlirhlo_driver\nprint(mlirhlo_driver.__file__)\n")
    monkeypatch.setenv("PYTHONPATH", str(elsewhere))
    proc = processes.start_python("where_from", cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=60)
    assert out.strip() == mlirhlo_driver.__file__


def test_python_env_keeps_a_given_path_in_its_order():
    # isolate's helper gets this process's sys.path: where the root already is, it stays.
    root = processes.package_root()
    env = processes.python_env(path=["/a", root, "/b"], EXTRA="1")
    assert env["PYTHONPATH"] == os.pathsep.join(["/a", root, "/b"]) and env["EXTRA"] == "1"
    assert processes.python_env(path=["/a", ""])["PYTHONPATH"] == os.pathsep.join([root, "/a"])


def test_stop_a_group_ends_what_each_child_started(tmp_path, monkeypatch):
    (tmp_path / "with_grandchild.py").write_text(WITH_GRANDCHILD)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    procs = [processes.start_python("with_grandchild", stdout=subprocess.PIPE, text=True,
                                    start_new_session=True) for _ in range(2)]
    try:
        grandchildren = [int(readline_within(p.stdout)) for p in procs]
        started = time.monotonic()
        processes.stop(procs, group=True)
        assert time.monotonic() - started < 5
        assert [processes.signal_name(-p.returncode) for p in procs] == ["SIGKILL", "SIGKILL"]
        assert processes_gone(grandchildren)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            p.stdout.close()


# ------------------------------------------------------------------ processes


def test_package_root_and_python_command():
    """The root is the directory holding mlirhlo_driver; the command runs this interpreter."""
    assert processes.package_root() == str(REPO.resolve())
    assert Path(processes.package_root(), "mlirhlo_driver", "_native", "processes.py").is_file()
    assert processes.python_command("pkg.mod", 3, Path("x"), "-v") == [sys.executable, "-m", "pkg.mod", "3", "x", "-v"]
    assert processes.python_command("m") == [sys.executable, "-m", "m"]


@pytest.mark.parametrize("inherited, path, expected", [
    (None, None, ["ROOT"]),
    ("", None, ["ROOT"]),
    ("/a:/b", None, ["ROOT", "/a:/b"]),
    ("/inherited", ["/x", "", "/y"], ["ROOT", "/x", "/y"]),   # path replaces it; empties dropped
    (None, ["/x", "ROOT"], ["/x", "ROOT"]),                  # the root already there stays where it is
    (None, ["ROOT"], ["ROOT"]),
    (None, [], ["ROOT"]),
    (None, ["", ""], ["ROOT"]),
])
def test_python_env_puts_the_package_root_on_pythonpath(monkeypatch, inherited, path, expected):
    """PYTHONPATH: the package root first, then the inherited PYTHONPATH or ``path`` (empty
    entries dropped; a ``path`` that has the root keeps its order)."""
    root = processes.package_root()
    if inherited is None:
        monkeypatch.delenv("PYTHONPATH", raising=False)
    else:
        monkeypatch.setenv("PYTHONPATH", inherited)
    path = None if path is None else [root if p == "ROOT" else p for p in path]
    env = processes.python_env(path)
    assert env["PYTHONPATH"] == os.pathsep.join(root if p == "ROOT" else p for p in expected)


def test_python_env_keeps_this_environment_and_adds_extra(monkeypatch):
    """A child's environment is this one's, ``extra`` over it; XLA's log level is warnings and
    errors unless this environment or ``extra`` says otherwise."""
    monkeypatch.setenv("AC_KEPT", "kept")
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    env = processes.python_env(None, AC_EXTRA="1", AC_KEPT="over")
    assert (env["AC_EXTRA"], env["AC_KEPT"], env["TF_CPP_MIN_LOG_LEVEL"]) == ("1", "over", "1")
    assert os.environ["AC_KEPT"] == "kept" and "AC_EXTRA" not in os.environ
    assert {k: v for k, v in env.items() if k not in ("AC_EXTRA", "AC_KEPT", "PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL")} \
        == {k: v for k, v in os.environ.items() if k not in ("AC_KEPT", "PYTHONPATH")}
    assert processes.python_env(None, TF_CPP_MIN_LOG_LEVEL="0")["TF_CPP_MIN_LOG_LEVEL"] == "0"
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    assert processes.python_env(None)["TF_CPP_MIN_LOG_LEVEL"] == "2"


def test_start_python_runs_a_module_with_this_package_and_the_given_env(tmp_path):
    """The child imports this package (not another copy), sees ``path`` and ``env``, and gets
    the arguments as text; Popen's own arguments pass through."""
    (tmp_path / "ac_child_probe.py").write_text(
        "import os, sys\nimport mlirhlo_driver\n"
        "print(os.path.dirname(os.path.dirname(mlirhlo_driver.__file__)), os.environ['AC_VAR'], *sys.argv[1:])\n")
    p = processes.start_python("ac_child_probe", 1, "two", path=[str(tmp_path)], env={"AC_VAR": "set"},
                               stdout=subprocess.PIPE, text=True, cwd=str(tmp_path))
    out, _ = p.communicate(timeout=60)
    assert (p.returncode, out) == (0, f"{processes.package_root()} set 1 two\n")


def test_stop_with_group_kills_the_child_and_what_it_started():
    p, grandchild = _parent_with_child()
    try:
        processes.stop([p], group=True, timeout=30)
        assert p.returncode == -signal.SIGKILL
        assert processes_gone([grandchild])
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        p.stdout.close()


@pytest.mark.slow
def test_stop_without_group_kills_only_the_child():
    p, grandchild = _parent_with_child()
    try:
        processes.stop(iter([p]), timeout=30)   # any iterable of children
        assert p.returncode == -signal.SIGKILL
        assert process_alive(grandchild) and not processes_gone([grandchild], within=1.0)   # still there a second later
    finally:
        os.killpg(p.pid, signal.SIGKILL)   # the group this test made: the grandchild
        p.wait()
        p.stdout.close()
    assert processes_gone([grandchild])


def test_stop_leaves_a_finished_child_as_it_ended_and_reaps_it():
    """A child that already exited keeps its own exit status (no kill, no error), even as a group."""
    done = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], start_new_session=True)
    done.wait(60)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        processes.stop([done, running], group=True, timeout=30)
        assert (done.returncode, running.returncode) == (3, -signal.SIGKILL)
    finally:
        if running.poll() is None:
            running.kill()
            running.wait()


@pytest.mark.parametrize("number, name", [(11, "SIGSEGV"), (9, "SIGKILL"), (6, "SIGABRT"), (2, "SIGINT"),
                                          (0, None), (999, None), (-11, None)])
def test_signal_name(number, name):
    assert processes.signal_name(number) == name
