"""The small native-substrate helpers, each against its own contract.

* _native/guards.py: the refusal of an integer division of two constants by zero
  (which jaxlib's conversion would fold into a SIGFPE), with its location;
* _native/fds.py: fd 2 captured for a block and given back, and the one line of a
  native log that says why a process died;
* _native/interrupts.py: the one ``error: interrupted`` line, and the SIGINT handler
  that holds Ctrl-C back while an import runs;
* _native/processes.py: child interpreters' command, environment, stop and signal names;
* _native/cluster.py: the Dask client, the tasks' contents, the result stream and
  the per-thread worker, with stand-ins for Dask and the pool's Worker.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

import mlirhlo_driver._native.cluster as cluster
import mlirhlo_driver._native.fds as fds
import mlirhlo_driver._native.guards as guards
import mlirhlo_driver._native.interrupts as interrupts
import mlirhlo_driver._native.processes as processes
from mlirhlo_driver._native import pool
from mlirhlo_driver.errors import DriverError, InputError
from tests.conftest import REPO, process_alive, processes_gone

# ------------------------------------------------------------------ guards


def _division(divisor: str, *, dividend: str = "dense<[7, 8]>", ty: str = "tensor<2xi32>",
              op: str = "stablehlo.divide", loc: str = "") -> str:
    """A module whose %c divides two constants (line 4, column 8 unless ``loc`` says otherwise)."""
    dialect = op.split(".")[0]
    return (f"func.func @main() -> {ty} {{\n"
            f"  %a = {dialect}.constant {dividend} : {ty}\n"
            f"  %b = {dialect}.constant {divisor} : {ty}\n"
            f"  %c = {op} %a, %b : {ty}{loc}\n"
            f"  return %c : {ty}\n}}\n")


def _refusal(text: str, source: str | None = None) -> InputError | None:
    """The InputError the guard raises for the module ``text`` (None: it lets it through)."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native.jaxlib import ir_context

    with ir_context():
        module = ir.Module.parse(text)
        try:
            if source is None:
                guards.refuse_fatal(module)
            else:
                guards.refuse_fatal(module, source)
        except InputError as e:
            return e
    return None


def _fields(e: InputError | None) -> tuple | None:
    return None if e is None else (e.message, e.file, e.line, e.col, e.hint)


def _message(op: str) -> str:
    return (f"{op} of two constants with a zero divisor: jaxlib's conversion to HLO dies "
            "folding it (SIGFPE)")


@pytest.mark.parametrize("op", ["stablehlo.divide", "stablehlo.remainder", "mhlo.divide", "mhlo.remainder"])
@pytest.mark.parametrize("divisor", ["dense<0>", "dense<[3, 0]>", "dense<[0, 3]>"],
                         ids=["splat-zero", "last-zero", "first-zero"])
def test_constant_division_by_a_zero_is_refused_at_its_location(op, divisor):
    """Each integer division op, by a splat zero or a zero element anywhere: one InputError
    with the op's name, its line and column, and the hint."""
    assert _fields(_refusal(_division(divisor, op=op))) == (
        _message(op), None, 4, 8, "pass the divisor as a parameter")


@pytest.mark.parametrize("divisor", ["dense<1>", "dense<3>", "dense<[3, 1]>", "dense<[1, 3]>", "dense<[-1, 2]>"])
def test_constant_division_by_nonzero_constants_passes(divisor):
    """No element of the divisor is zero (a splat or not, ones included): nothing to refuse."""
    assert _refusal(_division(divisor)) is None


@pytest.mark.parametrize("ty", ["tensor<2xui32>", "tensor<2xi8>", "tensor<2x1xi64>", "tensor<2xui8>"])
def test_every_integer_element_type_and_shape_is_checked(ty):
    """Unsigned, narrow and wide integers, of any rank, are integer divisions."""
    assert _refusal(_division("dense<0>", dividend="dense<7>", ty=ty)).line == 4


@pytest.mark.parametrize("ty", ["tensor<2xf32>", "tensor<2xf64>", "tensor<2xcomplex<f32>>"])
def test_a_floating_division_by_zero_is_left_alone(ty):
    """A float or complex division by zero gives inf/nan, never SIGFPE: it is not refused."""
    zero = "dense<(0.0, 0.0)>" if "complex" in ty else "dense<0.0>"
    assert _refusal(_division(zero, dividend=zero.replace("0.0", "1.0"), ty=ty)) is None


@pytest.mark.parametrize("args, a, b", [
    ("%p: tensor<2xi32>", "%p", "%b"),        # dividend a parameter, divisor a zero constant
    ("%p: tensor<2xi32>", "%b", "%p"),        # divisor a parameter
    ("%p: tensor<2xi32>", "%p", "%p"),        # neither constant
    ("", "%a", "%n"),                         # divisor computed (a negate of a zero), not a constant
    ("", "%n", "%b"),                         # dividend computed
])
def test_only_a_division_of_two_constants_is_refused(args, a, b):
    """The conversion folds only when both operands are constants: any other operand passes."""
    text = (f"func.func @main({args}) -> tensor<2xi32> {{\n"
            "  %a = stablehlo.constant dense<[7, 8]> : tensor<2xi32>\n"
            "  %b = stablehlo.constant dense<0> : tensor<2xi32>\n"
            "  %n = stablehlo.negate %b : tensor<2xi32>\n"
            f"  %c = stablehlo.divide {a}, {b} : tensor<2xi32>\n"
            "  return %c : tensor<2xi32>\n}\n")
    assert _refusal(text) is None


def test_other_ops_of_constants_with_a_zero_pass():
    """Only divide and remainder trap: a multiply or subtract of a zero constant passes."""
    for op in ("stablehlo.multiply", "stablehlo.subtract", "stablehlo.maximum"):
        assert _refusal(_division("dense<0>", op=op)) is None, op


def test_a_module_without_any_division_passes():
    assert _refusal("func.func @main(%p: tensor<2xi32>) -> tensor<2xi32> {\n"
                    "  return %p : tensor<2xi32>\n}\n") is None


def test_the_first_constant_division_by_zero_is_the_one_named():
    """With two, the error names the first in the module (its own line and column)."""
    text = ("func.func @main() -> tensor<2xi32> {\n"
            "  %a = stablehlo.constant dense<[7, 8]> : tensor<2xi32>\n"
            "  %b = stablehlo.constant dense<0> : tensor<2xi32>\n"
            "  %ok = stablehlo.divide %a, %a : tensor<2xi32>\n"
            "      %r = stablehlo.remainder %a, %b : tensor<2xi32>\n"
            "  %d = stablehlo.divide %a, %b : tensor<2xi32>\n"
            "  return %d : tensor<2xi32>\n}\n")
    assert _fields(_refusal(text))[:4] == (_message("stablehlo.remainder"), None, 5, 12)


@pytest.mark.parametrize("loc, source, where", [
    ("", None, (None, 4, 8)),                                  # parsed without a name: "-"
    (' loc("model.mlir":12:34)', None, ("model.mlir", 12, 34)),  # the op's own file location
    (' loc("":12:34)', None, (None, 12, 34)),                  # an empty file name names nothing
    (' loc("-":12:34)', None, (None, 12, 34)),
    (' loc(unknown)', None, (None, None, None)),                # no position at all
    (' loc(unknown)', "given.mlir", ("given.mlir", None, None)),
    ("", "given.mlir", ("given.mlir", 4, 8)),                  # the caller names text parsed without a name
])
def test_the_refusal_names_the_file_line_and_column_it_can(loc, source, where):
    """file: the caller's ``source``, else the location's file unless "-" or ""; line and col:
    the file location's, None when there is none."""
    e = _refusal(_division("dense<0>", loc=loc), source)
    assert (e.file, e.line, e.col) == where


_MANUAL_CALL = ("func.func @main(%p: tensor<8xf32>) -> tensor<2xf32> {\n"
                "  %s = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%p) : (tensor<8xf32>) -> tensor<2xf32>\n"
                "  return %s : tensor<2xf32>\n}\n")


@pytest.mark.parametrize("target, refused", [("xla.sdy.GlobalToLocalShape", True), ("SPMDFullToShardShape", True),
                                             ("Sharding", False), ("xla.sdy.FuncResultSharding", False)])
def test_a_manual_computation_is_refused_only_for_one_device(target, refused):
    """Shardy's (or GSPMD's) entry into a manual computation: XLA compiles it only over its
    mesh, and jaxlib 0.12's CPU compile can segfault on it for one device; other sharding
    custom calls pass. Without ``one_device`` (a partitioned compile) nothing is refused."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native.jaxlib import ir_context

    text = _MANUAL_CALL.replace("xla.sdy.GlobalToLocalShape", target)
    with ir_context():
        module = ir.Module.parse(text)
        guards.refuse_fatal(module)  # a partitioned compile: nothing refused
        if not refused:
            guards.refuse_fatal(module, one_device=True)
            return
        with pytest.raises(InputError) as e:
            guards.refuse_fatal(module, "sm.mlir", one_device=True)
    assert (e.value.file, e.value.line, e.value.col) == ("sm.mlir", 2, 8)
    assert "manual computations (shard_map)" in e.value.message and "spmd-run" in e.value.hint


def test_the_location_pattern_reads_file_line_and_column():
    """checks.py reads positions with the same pattern: file, line and column, as groups 1-3."""
    m = guards.LOCATION.search('loc("a.mlir":3:14)')
    assert m.groups() == ("a.mlir", "3", "14")
    assert guards.LOCATION.search('loc("":1:2)').groups() == ("", "1", "2")
    assert guards.LOCATION.search("loc(unknown)") is None


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
])
def test_native_error_line_prefers_llvm_then_error_lines_then_the_last(log, line):
    """The last LLVM fatal error (its first sentence); else the last Check failed / Fatal / error
    line of any case; else the last non-blank line; all stripped and at most 300 characters."""
    assert fds.native_error_line(log) == line


def test_last_native_error_reads_a_log_file_and_is_empty_without_one(tmp_path):
    """The log file's line (undecodable bytes replaced); "" for a file that is not there."""
    log = tmp_path / "worker.log"
    log.write_bytes(b"start\nLLVM ERROR: Cannot select \xff. rest\nend\n")
    assert fds.last_native_error(str(log)) == "Cannot select \ufffd"
    assert fds.last_native_error(str(tmp_path / "missing.log")) == ""
    assert fds.last_native_error(str(tmp_path)) == ""   # a directory: an OSError too


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
    assert (r.stdout, r.stderr) == ("False False\nTrue\n", "error: interrupted (in opt)\n")


def test_report_writes_the_line_only_once(monkeypatch, capsys):
    monkeypatch.setattr(interrupts, "_reported", False)
    interrupts.report()
    interrupts.report(" again")
    assert capsys.readouterr().err == "error: interrupted\n"
    monkeypatch.setattr(interrupts, "_reported", True)
    interrupts.report()
    assert capsys.readouterr().err == ""


@pytest.fixture
def sigint_handler():
    """SIGINT's handler, restored after the test."""
    saved = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, saved)


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
    monkeypatch.setenv("AC_KEPT", "kept")
    env = processes.python_env(None, AC_EXTRA="1", AC_KEPT="over")
    assert (env["AC_EXTRA"], env["AC_KEPT"]) == ("1", "over")
    assert os.environ["AC_KEPT"] == "kept" and "AC_EXTRA" not in os.environ
    assert {k: v for k, v in env.items() if k not in ("AC_EXTRA", "AC_KEPT", "PYTHONPATH")} == {
        k: v for k, v in os.environ.items() if k not in ("AC_KEPT", "PYTHONPATH")}


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


_PARENT = ("import subprocess, sys, time\n"
           "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
           "print(child.pid, flush=True)\n"
           "time.sleep(120)\n")


def _parent_with_child():
    """A child in its own process group that started a grandchild; (child, grandchild pid)."""
    p = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True, start_new_session=True)
    grandchild = int(p.stdout.readline())
    return p, grandchild


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


# ------------------------------------------------------------------ cluster


def test_client_without_distributed_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(DriverError) as e:
        cluster._client("tcp://h:8786")
    assert (e.value.message, e.value.hint) == (
        "--scheduler needs Dask's distributed package, which is not installed",
        "pip install 'mlirhlo-driver[cluster]'")


def test_client_connects_with_a_timeout_and_not_as_the_default(monkeypatch):
    """Half a minute to reach the scheduler; the client never becomes Dask's default."""
    import distributed

    made = []

    def client(address, **kwargs):
        made.append((address, kwargs))
        return "client"

    monkeypatch.setattr(distributed, "Client", client)
    assert cluster._client("tcp://h:8786") == "client"
    assert made == [("tcp://h:8786", {"timeout": 30, "set_as_default": False})]


@pytest.mark.parametrize("error", [OSError("refused"), TimeoutError("refused"), ValueError("refused")])
def test_an_unreachable_scheduler_is_one_error_with_a_hint(monkeypatch, error):
    import distributed

    def client(address, **kwargs):
        raise error

    monkeypatch.setattr(distributed, "Client", client)
    with pytest.raises(DriverError) as e:
        cluster._client("tcp://h:1")
    assert (e.value.message, e.value.hint) == (
        "cannot reach the Dask scheduler at tcp://h:1: refused",
        "start one with 'dask scheduler' and a worker with 'dask worker tcp://HOST:8786'")


@dataclass(frozen=True)
class _Task:
    source: str
    data: bytes | None = None


def test_with_contents_gives_each_task_its_files_bytes(tmp_path):
    """A task without data gets its file's bytes; data already there, or a source that is no
    file (a directory, a name only), stays as it is; the order and sources are kept."""
    f = tmp_path / "m.mlir"
    f.write_bytes(b"module {}\n")
    tasks = [_Task(str(f)), _Task(str(f), b"given"), _Task(str(tmp_path / "gone.mlir")), _Task(str(tmp_path)),
             _Task("pkg.mod:fn", b"")]
    assert cluster.with_contents(tasks) == [
        _Task(str(f), b"module {}\n"), _Task(str(f), b"given"), _Task(str(tmp_path / "gone.mlir")),
        _Task(str(tmp_path)), _Task("pkg.mod:fn", b"")]
    assert tasks[0].data is None   # the caller's tasks are not changed


class _Future:
    def __init__(self, log, key, value):
        self.log, self.key, self.value = log, key, value

    def result(self):
        if isinstance(self.value, Exception):
            raise self.value
        return self.value

    def release(self):
        self.log.append(("release", self.key))


class _Client:
    """distributed.Client's stand-in: runs nothing, answers each task with ``outcome(task)``."""

    loop = "the-loop"

    def __init__(self, outcome):
        self.outcome, self.log, self.submitted = outcome, [], []

    def scatter(self, data, broadcast):
        self.log.append(("scatter", data, broadcast))
        return "blob-future"

    def submit(self, fn, blob, task, timeout, *, pure, key):
        self.submitted.append((fn, blob, task, timeout, pure, key))
        return _Future(self.log, key, self.outcome(task))

    def close(self):
        self.log.append(("close",))


@pytest.fixture
def completed_in_reverse(monkeypatch):
    """distributed.as_completed, finishing the futures last first (on the client's loop)."""
    import distributed

    def as_completed(futures, *, loop):
        assert loop == "the-loop"
        return reversed(list(futures))

    monkeypatch.setattr(distributed, "as_completed", as_completed)


def test_stream_yields_each_result_as_it_finishes_and_a_lost_worker_as_a_row(completed_in_reverse):
    """(index, result) in finishing order; a task whose Dask worker was lost is a crashed Lost
    row; each future is released once yielded; the context is scattered once to every worker;
    every task has its own key; the client is closed at the end."""
    client = _Client(lambda task: RuntimeError("worker gone") if task == "t1" else task.upper())
    rows = list(cluster._stream(client, "mod:fn", {"ctx": 1}, ["t0", "t1", "t2"], 4.5, "mod:init"))
    assert rows == [(2, "T2"), (1, pool.Lost("crashed", "on the cluster: RuntimeError: worker gone")), (0, "T0")]
    keys = [s[5] for s in client.submitted]
    assert client.log == [("scatter", pickle.dumps(("mod:fn", "mod:init", {"ctx": 1})), True),
                          ("release", keys[2]), ("release", keys[1]), ("release", keys[0]), ("close",)]
    assert [s[:5] for s in client.submitted] == [(cluster.run_task, "blob-future", t, 4.5, False)
                                                 for t in ("t0", "t1", "t2")]
    batch = keys[0].split("-")[1]
    assert keys == [f"mlirhlo-{batch}-{i}" for i in range(3)] and len(batch) == 32
    other = _Client(str.upper)
    list(cluster._stream(other, "mod:fn", None, ["t0"], None, None))
    assert other.submitted[0][5] != keys[0]   # a new batch: new keys


def test_stream_closes_the_client_when_the_caller_stops_early(completed_in_reverse):
    client = _Client(str.upper)
    rows = cluster._stream(client, "mod:fn", None, ["a", "b"], None, None)
    assert next(rows) == (1, "B")
    rows.close()
    assert client.log[-1] == ("close",) and ("release", client.submitted[0][5]) not in client.log


def test_imap_sends_the_tasks_with_their_contents(tmp_path, monkeypatch, completed_in_reverse):
    """imap connects to the address and streams the tasks, each carrying its file's bytes."""
    f = tmp_path / "a.mlir"
    f.write_bytes(b"A")
    client = _Client(lambda task: task.data)
    monkeypatch.setattr(cluster, "_client", lambda address: client if address == "tcp://s:1" else None)
    rows = list(cluster.imap("tcp://s:1", "mod:fn", "ctx", [_Task(str(f))], timeout=2.0, init="mod:i"))
    assert rows == [(0, b"A")]
    assert client.submitted[0][2:4] == (_Task(str(f), b"A"), 2.0)
    assert client.log[0] == ("scatter", pickle.dumps(("mod:fn", "mod:i", "ctx")), True)


class _Worker:
    """pool.Worker's stand-in: answers each call from ``replies`` (a task's own name by default)."""

    made: list[_Worker] = []
    replies: dict = {}

    def __init__(self, fn, context, init=None):
        self.args = (fn, context, init)
        self.alive, self.closed, self.task, self.calls = True, False, "unset", []
        _Worker.made.append(self)

    def call(self, task, timeout=None):
        self.task = task
        self.calls.append((task, timeout))
        return _Worker.replies.get(task, task)

    def close(self):
        self.closed = True
        self.alive = False


@pytest.fixture
def workers(monkeypatch):
    """Fake pool workers and a fresh per-thread slot, as on a new Dask worker thread."""
    _Worker.made, _Worker.replies = [], {}
    monkeypatch.setattr(pool, "Worker", _Worker)
    monkeypatch.setattr(cluster, "_local", threading.local())
    return _Worker.made


def test_run_task_keeps_one_worker_per_thread_for_the_same_batch(workers):
    """The first task starts a worker from the scattered (fn, init, context); later tasks of the
    same batch reuse it; its task is cleared after each call."""
    blob = pickle.dumps(("mod:fn", "mod:init", {"c": 1}))
    assert cluster.run_task(blob, "t1", 3.0) == "t1"
    assert cluster.run_task(blob, "t2", None) == "t2"
    assert len(workers) == 1
    w = workers[0]
    assert (w.args, w.calls, w.task, w.closed) == (("mod:fn", {"c": 1}, "mod:init"), [("t1", 3.0), ("t2", None)],
                                                   None, False)


def test_run_task_replaces_the_worker_for_another_batch_or_a_dead_one(workers):
    one, two = pickle.dumps(("f", None, 1)), pickle.dumps(("f", None, 2))
    cluster.run_task(one, "a", None)
    cluster.run_task(two, "b", None)      # another batch's context
    assert [w.args for w in workers] == [("f", 1, None), ("f", 2, None)] and workers[0].closed
    workers[1].alive = False              # died between tasks
    cluster.run_task(two, "c", None)
    assert len(workers) == 3 and workers[1].closed and not workers[2].closed
    assert [w.calls for w in workers] == [[("a", None)], [("b", None)], [("c", None)]]


@pytest.mark.parametrize("status, replaced", [("crashed", True), ("timeout", True), ("failed", False)])
def test_run_task_drops_a_worker_that_crashed_or_timed_out(workers, status, replaced):
    """A crash or timeout closes the worker and the next task gets a new one; a task whose
    function raised ("failed") keeps it."""
    blob = pickle.dumps(("f", None, None))
    lost = pool.Lost(status, "why")
    _Worker.replies = {"bad": lost}
    assert cluster.run_task(blob, "bad", 1.0) == lost
    assert workers[0].closed is replaced
    assert cluster.run_task(blob, "next", 1.0) == "next"
    assert len(workers) == (2 if replaced else 1)


def test_imap_anywhere_runs_locally_without_a_scheduler(monkeypatch):
    seen = []
    monkeypatch.setattr(pool, "imap", lambda *a, **k: seen.append(("local", a, k)) or "local-rows")
    monkeypatch.setattr(cluster, "imap", lambda *a, **k: seen.append(("cluster", a, k)) or "cluster-rows")
    assert cluster.imap_anywhere("m:f", "ctx", ["t"], jobs=3, timeout=2.0, init="m:i") == "local-rows"
    assert cluster.imap_anywhere("m:f", "ctx", ["t"], jobs=3, timeout=2.0, init="m:i",
                                 scheduler="tcp://s:1") == "cluster-rows"
    assert seen == [("local", ("m:f", "ctx", ["t"]), {"jobs": 3, "timeout": 2.0, "init": "m:i"}),
                    ("cluster", ("tcp://s:1", "m:f", "ctx", ["t"]), {"timeout": 2.0, "init": "m:i"})]
