"""Behaviour: one-off forks (isolate.forked), this package's children (processes.py),
and the StableHLO interpreter on isolate.call's helper.

* ``isolate.forked`` tells every ending apart: returned, raised (with its words),
  died (a signal, or native code's ``exit(1)``, which is no raise), timed out
  (killed within the timeout); the child's output is its own; an interrupt in
  the caller takes the child with it.
* ``processes``: a child imports this package from where this process does, even
  with another copy on its PYTHONPATH; ``stop(group=True)`` also ends what each
  child started.
* the interpreter: one helper serves call after call and is replaced after a
  crash, which is a CompileError quoting the interpreter; its Python errors say
  "failed" and keep the helper.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import mlirhlo_driver
from mlirhlo_driver._native import isolate, processes
from mlirhlo_driver.errors import CompileError
from tests.conftest import processes_gone, readline_within

# ------------------------------------------------------------------ isolate.forked

def _abort_with_llvm_error() -> None:
    os.write(2, b"some noise\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo\n")
    os.abort()


def test_forked_tells_returned_raised_and_died_apart():
    lock = threading.Lock()  # nothing is pickled: any callable and argument will do
    got = isolate.forked(lock.acquire)
    assert (got.ended, got.status) == ("returned", 0)
    assert not lock.locked()  # what the child did stays in the child
    got = isolate.forked(int, "x")
    assert got.ended == "raised" and got.error == "ValueError: invalid literal for int() with base 10: 'x'"
    got = isolate.forked(_abort_with_llvm_error)
    assert got.ended == "died" and os.WTERMSIG(got.status) == signal.SIGABRT
    assert got.message("the probe") == "the probe aborted: Cannot select: intrinsic %llvm.nvvm.foo"
    # LLVM's fatal errors exit(1) when they do not abort: a death, not a Python error.
    got = isolate.forked(os._exit, 1)
    assert got.ended == "died" and got.message("the probe") == "the probe exited with status 1"


def test_forked_output_is_the_childs_own(capfd):
    def chatter() -> None:
        os.write(1, b"on fd 1\n")
        os.write(2, b"on fd 2\n")

    got = isolate.forked(chatter)
    assert got.ended == "returned" and got.log == "on fd 1\non fd 2\n"
    out, err = capfd.readouterr()
    assert "on fd" not in out + err


def test_forked_child_past_its_timeout_is_killed():
    def hang() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(600)

    started = time.monotonic()
    got = isolate.forked(hang, timeout=0.5)
    assert got.ended == "timed out" and os.WTERMSIG(got.status) == signal.SIGKILL
    assert time.monotonic() - started < 5
    assert isolate.forked(time.sleep, 0, timeout=60).ended == "returned"


def test_an_interrupt_while_forked_waits_kills_the_child(tmp_path):
    pid_file = tmp_path / "pid"

    def hang() -> None:
        pid_file.write_text(str(os.getpid()))
        while True:
            time.sleep(600)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 2.0)  # not inherited: only the caller is interrupted
    try:
        with pytest.raises(KeyboardInterrupt):
            isolate.forked(hang)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    pid = int(pid_file.read_text())
    assert processes_gone([pid], within=0)  # reaped before the interrupt went on
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # no zombie left behind


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


WITH_GRANDCHILD = '''
import subprocess, sys, time

grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(grandchild.pid, flush=True)
time.sleep(600)
'''


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


# ------------------------------------------------------------------ the interpreter

ADD = ("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
# The interpreter has no rng_bit_generator: it aborts the process (an LLVM fatal error).
RNG = ("func.func @main(%s: tensor<2xui64>) -> tensor<4xui32> {\n"
       "  %s2, %v = stablehlo.rng_bit_generator %s, algorithm = DEFAULT : "
       "(tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)\n  return %v : tensor<4xui32>\n}\n")


def test_the_interpreter_is_kept_and_replaced_after_a_crash():
    from mlirhlo_driver.execute import engine, interpreter
    from mlirhlo_driver.inputs.loader import parse_mlir

    add, rng = parse_mlir(ADD), parse_mlir(RNG)
    x = np.arange(4, dtype=np.float32)
    assert engine.run_interpreter(add, [x])[0][0].tolist() == (2 * x).tolist()
    helper = isolate._helpers[()].pid
    engine.run_interpreter(add, [x])
    with pytest.raises(CompileError, match="^the StableHLO interpreter failed: InputError: "):
        interpreter.evaluate(b"not MLIR", [], [])
    assert isolate._helpers[()].pid == helper  # one helper for all of these
    with pytest.raises(CompileError) as ei:
        engine.run_interpreter(rng, [np.zeros(2, np.uint64)])
    assert ei.value.message.startswith("the StableHLO interpreter crashed: ")
    assert "rng_bit_generator" in ei.value.message
    assert engine.run_interpreter(add, [x])[0][0].tolist() == (2 * x).tolist()
    assert isolate._helpers[()].pid != helper


class _Unpicklable(Exception):
    """An exception whose attribute cannot cross the pipe back (a lambda)."""

    def __init__(self) -> None:
        super().__init__("no pickles here")
        self.callback = lambda: None


def _raise_unpicklable() -> None:
    raise _Unpicklable()


def _return_unpicklable():
    return lambda: None


def test_call_reports_what_went_wrong_when_it_cannot_be_sent_back():
    """An exception that does not pickle comes back as its type and message; a result
    that does not pickle comes back as the pickling error, not as a crash."""
    with pytest.raises(RuntimeError, match=r"^_Unpicklable: no pickles here$"):
        isolate.call(_raise_unpicklable)
    with pytest.raises(Exception, match="local object") as e:
        isolate.call(_return_unpicklable)
    assert "no pickles here" not in str(e.value)



PRELOAD = """
import sys
from mlirhlo_driver._native import isolate

def imported():
    return sorted(m for m in ("json", "wave") if m in sys.modules)

print(isolate.call(imported, preload=("wave", "json:JSONDecoder")), "wave" in sys.modules,
      "json" in sys.modules, isolate.fork_is_safe())
"""


def test_preload_imports_modules_first_and_runs_warm_ups_in_the_helper():
    """preload: a module is imported before the helper starts (here too, when the helper is
    forked: shared, not loaded twice); a ``module:function`` warm-up runs in the helper only."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(PRELOAD)
    assert proc.returncode == 0, proc.stderr
    in_helper, wave_here, json_here, forked = proc.stdout.strip().rsplit(" ", 3)
    assert in_helper == "['json', 'wave']"
    assert (wave_here, json_here) == (forked, "False"), proc.stdout


def _write_to_fd2(text: str) -> int:
    os.write(2, text.encode())
    return len(text)


def test_what_a_call_writes_to_stderr_comes_back_in_whole_lines(capfd):
    """Native output of the helper (fd 2) is written here after the call, ended by a newline."""
    assert isolate.call(_write_to_fd2, ("native says hi",)) == 14
    assert capfd.readouterr().err == "native says hi\n"
    assert isolate.call(_write_to_fd2, ("two\nlines\n",)) == 10
    assert capfd.readouterr().err == "two\nlines\n"
    seen: list[str] = []
    assert isolate.call(_write_to_fd2, ("to a handler",), on_stderr=seen.append) == 12
    assert seen == ["to a handler"] and capfd.readouterr().err == ""


def test_a_note_about_this_jaxlib_is_said_once_per_process(monkeypatch):
    """What the installed XLA does differently with a spec is a compile's note the first time only."""
    from types import SimpleNamespace

    from mlirhlo_driver.cuda import specs
    from mlirhlo_driver.xla import backend

    monkeypatch.setattr(backend, "_said", set())
    monkeypatch.setattr(specs, "installed_xla_notes", lambda text: ["no such field here", "another"])
    options = SimpleNamespace(platform="cuda", gpu_spec=SimpleNamespace(text="spec"))
    assert backend._spec_notes(options) == ["no such field here", "another"]
    assert backend._spec_notes(options) == []
    assert backend._spec_notes(SimpleNamespace(platform="cpu", gpu_spec=None)) == []


FORKED_CHATTER = """
import os
from mlirhlo_driver._native import isolate

def chatter():
    os.write(1, b"child on fd 1\\n")
    os.write(2, b"child on fd 2\\n")

print(repr(isolate.forked(chatter).log))
"""


def test_a_forked_childs_output_stays_out_of_the_callers_stdout_and_stderr():
    """What a forked child writes on fd 1 and fd 2 goes to its log, none of it to the caller's own
    stdout or stderr (a command's output stays clean)."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(FORKED_CHATTER)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == repr("child on fd 1\nchild on fd 2\n") + "\n"
    assert proc.stderr == ""


def test_file_line_lines_are_dropped_only_inside_a_source_location_trace(capfd):
    """Native output keeps a FILE:LINE line unless it follows XLA's '=== Source Location Trace'
    header; the trace ends at the first line of another shape."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    text = ("model.py:12\nmain.cc:7\nsome detail\n"
            "=== Source Location Trace: ===\nxla/service/foo.cc:42\nxla/bar.cc:9\n"
            "after the trace\nuser.py:3\n")
    assert _jaxlib.without_native_noise(text) == [
        "model.py:12", "main.cc:7", "some detail", "after the trace", "user.py:3"]
    with _jaxlib.filtered_native_stderr():
        os.write(2, b"something went wrong in\nkernel.cc:88\n")
    assert capfd.readouterr().err == "something went wrong in\nkernel.cc:88\n"


def _nested_call() -> tuple[bool, int, int]:
    return isolate.in_helper(), isolate.call(os.getpid), os.getpid()


def test_a_call_made_inside_the_helper_runs_in_place_and_returns_its_result():
    """isolate.call from code already running in the helper runs there, in the same process,
    and gives back the function's result."""
    in_helper, inner_pid, helper_pid = isolate.call(_nested_call)
    assert in_helper and not isolate.in_helper()
    assert inner_pid == helper_pid != os.getpid()


def test_dense_elements_attr_refuses_an_array_that_does_not_fit_the_type():
    """An array whose size or element type does not fit the MLIR type is a ValueError from the
    bindings (bool arrays included: this jaxlib takes their bytes, never packed bits)."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib

    with ir.Context():
        assert str(_jaxlib.dense_elements_attr(np.array([True, False, True, True]),
                                               ir.Type.parse("tensor<4xi1>"))) == \
            "dense<[true, false, true, true]> : tensor<4xi1>"
        bad = [(np.zeros((2, 3), np.float32), "tensor<4xf32>"), (np.zeros((2, 3), np.int32), "tensor<4xi32>")]
        if _jaxlib.jaxlib_at_least("0.10.2"):
            bad += [(np.zeros(5, np.bool_), "tensor<4xi1>"), (np.ones(8, np.bool_), "tensor<4xi1>")]
        for array, type_ in bad:
            with pytest.raises(ValueError, match="could not be constructed"):
                _jaxlib.dense_elements_attr(array, ir.Type.parse(type_))


# ------------------------------------------------------------------ how a death is worded

@pytest.mark.parametrize(("status", "log", "words"), [
    (None, "LLVM ERROR: out of registers\n", "the probe died: out of registers"),
    (signal.SIGSEGV, "", "the probe crashed (SIGSEGV: a stack overflow or a bug)"),
    (signal.SIGABRT, "Check failed: x > 0\n", "the probe aborted: Check failed: x > 0"),
    (signal.SIGKILL, "", "the probe died (SIGKILL)"),
    (40, "", "the probe died (signal 40)"),  # a real-time signal without a name of its own
    (3 << 8, "", "the probe exited with status 3"),
    (0, "nothing telling\n", "the probe exited with status 0"),
])
def test_a_death_is_worded_by_its_wait_status_and_its_telling_line(status, log, words):
    """Forked.message (as call() words a crash): the signal or exit code of the wait status, then
    the native reason after a colon when the log has one."""
    assert isolate.Forked("died", status, log).message("the probe") == words


def test_a_fresh_interpreter_helper_reports_its_exit_code_and_signal_as_a_wait_status():
    """A helper started as a fresh interpreter (a call with env) that dies gives the same wait
    status and words as a forked one: exit code shifted by 8, a signal in the low 7 bits."""
    from mlirhlo_driver.errors import NativeCrash

    env = {"MLIRHLO_TEST_DYING_HELPER": "1"}
    with pytest.raises(NativeCrash) as ei:
        isolate.call(os._exit, (3,), env=env, what="the helper")
    assert ei.value.status == 3 << 8 and ei.value.message == "the helper exited with status 3"
    with pytest.raises(NativeCrash) as ei:
        isolate.call(os.abort, env=env, what="the helper")
    assert ei.value.status == signal.SIGABRT and ei.value.message == "the helper aborted"
    assert tuple(env.items()) not in isolate._helpers


def test_a_helper_killed_between_calls_is_replaced_without_an_error():
    """A helper that died before a call (killed from outside) is restarted for that call, once:
    the call returns, from a new helper."""
    first = isolate.call(os.getpid)
    os.kill(first, signal.SIGKILL)
    os.waitid(os.P_PID, first, os.WEXITED | os.WNOWAIT)  # dead, and left for the helper's own wait
    second = isolate.call(os.getpid)
    assert second != first and isolate._helpers[()].pid == second
    assert isolate.call(os.getpid) == second


def test_a_result_of_several_megabytes_crosses_the_pipe_whole():
    """Results are framed by their length, whatever the pipe's chunks: 3 MiB come back intact."""
    data = isolate.call(bytes.fromhex, ("ab" * (3 << 20),))
    assert len(data) == 3 << 20 and data == b"\xab" * (3 << 20)


FD_OUTPUT = """
import os
from mlirhlo_driver._native import isolate

both_fds = ("echo on fd 1; echo on fd 2 >&2",)  # a shell that inherits the helper's fd 1 and fd 2
seen = []
print(isolate.fork_is_safe(), isolate.call(os.system, both_fds, on_stderr=seen.append), repr(seen))
seen = []
print(isolate.call(os.system, both_fds, on_stderr=seen.append, env={"MLIRHLO_TEST_FRESH": "1"}), repr(seen))
"""


def test_what_a_helper_writes_on_fd_1_and_fd_2_goes_to_on_stderr_only():
    """Both a forked helper's and a fresh interpreter's fd 1 and fd 2 output of a call reach
    on_stderr, in order; none of it lands in the caller's stdout or stderr."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(FD_OUTPUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "True 0 ['on fd 1\\non fd 2\\n']\n0 ['on fd 1\\non fd 2\\n']\n"
    assert proc.stderr == ""


WARM_UP_ONCE = """
from mlirhlo_driver._native import isolate

warm_ups = []

def warm_up():
    warm_ups.append(1)

def count():
    return len(warm_ups)

print(isolate.call(count, preload=["__main__:warm_up"]), isolate.call(count, preload=["__main__:warm_up"]),
      isolate.call(count), count())
"""


def test_a_warm_up_runs_once_per_helper_and_only_there():
    """A ``module:function`` preload runs in the helper before the first call that names it,
    not again for later calls, and never in the caller."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(WARM_UP_ONCE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1 1 1 0\n"


def test_a_fork_exits_0_after_its_child_returns_and_1_after_it_raises():
    """isolate._fork: the child's exit code says whether child() returned (0) or raised (1)."""
    returned = isolate._fork(lambda: None)
    assert os.waitpid(returned, 0)[1] == 0
    raised = isolate._fork(lambda: 1 / 0)
    status = os.waitpid(raised, 0)[1]
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1


def _raise_long() -> None:
    raise ValueError("x" * 5000)


def test_forked_keeps_the_first_2000_bytes_of_an_error_and_exits_0():
    """A forked child's error note is cut to 2000 bytes (one pipe write); the child exits 0."""
    got = isolate.forked(_raise_long)
    assert got.ended == "raised" and got.status == 0
    assert got.error == ("ValueError: " + "x" * 5000)[:2000]


def test_native_reason_joins_an_error_detail_at_most_two_lines_after_the_check_and_cuts_at_400():
    """The ``ERROR:`` detail is joined when it is one of the two lines after ``Check failed``;
    a Check failed line and a plain error line are cut to 400 characters."""
    assert isolate.native_reason("Check failed: a\nnoise\nERROR: near\n") == "Check failed: a; near"
    assert isolate.native_reason("Check failed: a\nnoise\nmore\nERROR: far\n") == "Check failed: a"
    assert isolate.native_reason("Check failed: " + "y" * 500) == ("Check failed: " + "y" * 500)[:400]
    assert isolate.native_reason("fatal " + "z" * 500 + "\nbye\n") == ("fatal " + "z" * 500)[:400]
    assert isolate.native_reason("PC: @ 0x1 error\n*** error\nok\n") == ""


HELPER_ENDS = """
import os, threading
from mlirhlo_driver._native import isolate

alone = isolate.fork_is_safe()
stop = threading.Event()
thread = threading.Thread(target=stop.wait)
thread.start()
with_a_thread = isolate.fork_is_safe()
stop.set()
thread.join()
helper = isolate._start((), ())
forked = helper.proc is None
print(alone, with_a_thread, forked, helper.close(), os.path.exists(f"/proc/{helper.pid}"))
fresh = isolate._start((), (("MLIRHLO_TEST_FRESH", "1"),))
print(fresh.proc is None, fresh.close())
"""


def test_a_helper_is_forked_only_while_one_thread_runs_and_exits_0_when_closed():
    """fork_is_safe is False while another Python thread runs; a helper, forked or a fresh
    interpreter, ends with exit status 0 once its request pipe closes, and is reaped."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(HELPER_ENDS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "True False True 0 False\nFalse 0\n"


def _write_if_asked(text: str) -> int:
    if text:
        os.write(2, text.encode())
    return len(text)


def test_a_call_that_writes_nothing_hands_on_nothing_after_one_that_wrote():
    """The helper's log is emptied before each call: a silent call after a chatty one gives
    on_stderr nothing, not a leftover of the last call's text."""
    seen: list[str] = []
    assert isolate.call(_write_if_asked, ("chatty\n",), on_stderr=seen.append) == 7
    assert isolate.call(_write_if_asked, ("",), on_stderr=seen.append) == 0
    assert seen == ["chatty\n"]


def test_a_timeout_of_0_does_not_wait_for_the_call():
    """timeout=0: the call is given no time at all; one that has not answered at once (it sleeps
    5 s) is killed and reported as not finished in 0 s."""
    from mlirhlo_driver.errors import NativeCrash

    with pytest.raises(NativeCrash) as ei:
        isolate.call(time.sleep, (5,), what="the nap", timeout=0)
    assert ei.value.timed_out and ei.value.message == "the nap did not finish in 0 s"
    assert isolate.call(time.sleep, (0,), timeout=60) is None


def test_llvm_pool_threads_reads_thread_names_and_assumes_them_when_it_cannot(monkeypatch):
    """An ``llvm-worker-N`` thread among /proc/self/task's means the pool has threads; other names
    or threads that ended meanwhile do not; an unreadable task list counts as threads (no fork)."""
    comms = {"1": "python3\n", "2": "llvm-worker-0\n", "3": None}

    def listdir(path):
        assert path == "/proc/self/task"
        return list(tasks)

    def fake_open(path, *args, **kwargs):
        import io

        task = path.split("/")[4]
        if comms[task] is None:
            raise FileNotFoundError(path)  # the thread ended between listdir and open
        return io.StringIO(comms[task])

    monkeypatch.setattr(isolate.os, "listdir", listdir)
    monkeypatch.setattr(isolate, "open", fake_open, raising=False)
    tasks = ["1", "3", "2"]
    assert isolate._llvm_pool_threads() is True
    tasks = ["1", "3"]
    assert isolate._llvm_pool_threads() is False

    def unreadable(path):
        raise PermissionError(path)

    monkeypatch.setattr(isolate.os, "listdir", unreadable)
    assert isolate._llvm_pool_threads() is True
