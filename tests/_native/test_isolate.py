"""_native/isolate.py: native code run where its death becomes an error.

* ``isolate.forked`` tells every ending apart: returned, raised (with its words),
  died (a signal, or native code's ``exit(1)``, which is no raise), timed out
  (killed within the timeout); the child's output is its own; an interrupt in
  the caller takes the child with it.
* ``isolate.call``'s helper: one helper serves call after call and is replaced
  after a crash; what a call writes to stderr comes back in whole lines; a death
  is worded by its wait status and its telling line.
* forking is refused once native threads run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from mlirhlo_driver._native import isolate
from mlirhlo_driver.errors import InputError, NativeCrash
from tests.conftest import assert_mentions, processes_gone

# ------------------------------------------------------------------ isolate.forked

def _abort_with_llvm_error() -> None:
    os.write(2, b"some noise\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo\n")
    os.abort()


class _Unpicklable(Exception):
    """An exception whose attribute cannot cross the pipe back (a lambda)."""

    def __init__(self) -> None:
        super().__init__("no pickles here")
        self.callback = lambda: None


def _raise_unpicklable() -> None:
    raise _Unpicklable()


def _return_unpicklable():
    return lambda: None


PRELOAD = """
import sys
from mlirhlo_driver._native import isolate

def imported():
    return sorted(m for m in ("json", "wave") if m in sys.modules)

print(isolate.call(imported, preload=("wave", "json:JSONDecoder")), "wave" in sys.modules,
      "json" in sys.modules, isolate.fork_is_safe())
"""


def _write_to_fd2(text: str) -> int:
    os.write(2, text.encode())
    return len(text)


FORKED_CHATTER = """
import os
from mlirhlo_driver._native import isolate

def chatter():
    os.write(1, b"child on fd 1\\n")
    os.write(2, b"child on fd 2\\n")

print(repr(isolate.forked(chatter).log))
"""


def _nested_call() -> tuple[bool, int, int]:
    return isolate.in_helper(), isolate.call(os.getpid), os.getpid()


FD_OUTPUT = """
import os
from mlirhlo_driver._native import isolate

both_fds = ("echo on fd 1; echo on fd 2 >&2",)  # a shell that inherits the helper's fd 1 and fd 2
seen = []
print(isolate.fork_is_safe(), isolate.call(os.system, both_fds, on_stderr=seen.append), repr(seen))
seen = []
print(isolate.call(os.system, both_fds, on_stderr=seen.append, env={"MLIRHLO_TEST_FRESH": "1"}), repr(seen))
"""

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


def _raise_long() -> None:
    raise ValueError("x" * 5000)


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


def _write_if_asked(text: str) -> int:
    if text:
        os.write(2, text.encode())
    return len(text)


def _nested_abs_call(x: int) -> int:
    from mlirhlo_driver._native import isolate

    # Inside the helper a call runs in place, and its value comes back.
    return isolate.call(abs, (x,)) + 1


# ------------------------------------------------------------- isolate.call

def _write_fd2_and_return(value: int) -> int:
    os.write(2, b"native chatter\n")
    return value * 2


def _raise_input_error() -> None:
    raise InputError("bad thing", file="f.mlir", line=3, col=4, hint="fix it")


def _die_with_llvm_error() -> None:
    os.write(2, b"some noise\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo\n")
    os.abort()


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _sleep(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def _env_var_at_start(name: str) -> str | None:
    return os.environ.get(name)


def test_forked_tells_returned_raised_and_died_apart():
    lock = threading.Lock()  # nothing is pickled: any callable and argument will do
    got = isolate.forked(lock.acquire)
    assert (got.ended, got.status) == ("returned", 0)
    assert not lock.locked()  # what the child did stays in the child
    got = isolate.forked(int, "x")
    assert got.ended == "raised" and got.error.startswith("ValueError: ") and "'x'" in got.error
    got = isolate.forked(_abort_with_llvm_error)
    assert got.ended == "died" and os.WTERMSIG(got.status) == signal.SIGABRT
    assert_mentions(got.message("the probe"), "the probe", "aborted", "Cannot select: intrinsic %llvm.nvvm.foo")
    # LLVM's fatal errors exit(1) when they do not abort: a death, not a Python error.
    got = isolate.forked(os._exit, 1)
    assert got.ended == "died" and os.WEXITSTATUS(got.status) == 1
    assert_mentions(got.message("the probe"), "the probe", "status 1")


def test_forked_output_is_the_childs_own(capfd):
    def chatter() -> None:
        os.write(1, b"on fd 1\n")
        os.write(2, b"on fd 2\n")

    got = isolate.forked(chatter)
    assert got.ended == "returned" and got.log == "on fd 1\non fd 2\n"
    out, err = capfd.readouterr()
    assert "on fd" not in out + err


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_call_reports_what_went_wrong_when_it_cannot_be_sent_back():
    """An exception that does not pickle comes back as its type and message; a result
    that does not pickle comes back as the pickling error, not as a crash."""
    with pytest.raises(RuntimeError) as e:
        isolate.call(_raise_unpicklable)
    assert_mentions(str(e.value), "_Unpicklable", "no pickles here")
    with pytest.raises(Exception, match="local object") as e:
        isolate.call(_return_unpicklable)
    assert "no pickles here" not in str(e.value)


def test_preload_imports_modules_first_and_runs_warm_ups_in_the_helper():
    """preload: a module is imported before the helper starts (here too, when the helper is
    forked: shared, not loaded twice); a ``module:function`` warm-up runs in the helper only."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(PRELOAD)
    assert proc.returncode == 0, proc.stderr
    in_helper, wave_here, json_here, forked = proc.stdout.strip().rsplit(" ", 3)
    assert in_helper == "['json', 'wave']"
    assert (wave_here, json_here) == (forked, "False"), proc.stdout


def test_what_a_call_writes_to_stderr_comes_back_in_whole_lines(capfd):
    """Native output of the helper (fd 2) is written here after the call, ended by a newline."""
    assert isolate.call(_write_to_fd2, ("native says hi",)) == 14
    assert capfd.readouterr().err == "native says hi\n"
    assert isolate.call(_write_to_fd2, ("two\nlines\n",)) == 10
    assert capfd.readouterr().err == "two\nlines\n"
    seen: list[str] = []
    assert isolate.call(_write_to_fd2, ("to a handler",), on_stderr=seen.append) == 12
    assert seen == ["to a handler"] and capfd.readouterr().err == ""


def test_a_forked_childs_output_stays_out_of_the_callers_stdout_and_stderr():
    """What a forked child writes on fd 1 and fd 2 goes to its log, none of it to the caller's own
    stdout or stderr (a command's output stays clean)."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(FORKED_CHATTER)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == repr("child on fd 1\nchild on fd 2\n") + "\n"
    assert proc.stderr == ""


def test_a_call_made_inside_the_helper_runs_in_place_and_returns_its_result():
    """isolate.call from code already running in the helper runs there, in the same process,
    and gives back the function's result."""
    in_helper, inner_pid, helper_pid = isolate.call(_nested_call)
    assert in_helper and not isolate.in_helper()
    assert inner_pid == helper_pid != os.getpid()


# ------------------------------------------------------------------ how a death is worded

@pytest.mark.parametrize(("status", "log", "words"), [
    (None, "LLVM ERROR: out of registers\n", "the probe died: out of registers"),
    (signal.SIGSEGV, "", "the probe crashed (SIGSEGV: a stack overflow or a bug)"),
    (signal.SIGABRT, "Check failed: x > 0\n", "the probe aborted: Check failed: x > 0"),
    (signal.SIGKILL, "", "the probe died (SIGKILL)"),
    (40, "", "the probe died (signal 40)"),  # a real-time signal without a name of its own
    (3 << 8, "", "the probe exited with status 3"),
    (0, "nothing telling\n", "the probe exited with status 0"),
    (1 << 8, "", "the probe exited with status 1"),
    (signal.SIGABRT, "", "the probe aborted"),
    (signal.SIGABRT, "some noise\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo\n",
     "the probe aborted: Cannot select: intrinsic %llvm.nvvm.foo"),
])
@pytest.mark.golden
def test_a_death_is_worded_by_its_wait_status_and_its_telling_line(status, log, words):
    """Forked.message (as call() words a crash): the signal or exit code of the wait status, then
    the native reason after a colon when the log has one. The family's golden table."""
    assert isolate.Forked("died", status, log).message("the probe") == words


def test_a_fresh_interpreter_helper_reports_its_exit_code_and_signal_as_a_wait_status():
    """A helper started as a fresh interpreter (a call with env) that dies gives the same wait
    status and words as a forked one: exit code shifted by 8, a signal in the low 7 bits."""
    from mlirhlo_driver.errors import NativeCrash

    env = {"MLIRHLO_TEST_DYING_HELPER": "1"}
    with pytest.raises(NativeCrash) as ei:
        isolate.call(os._exit, (3,), env=env, what="the helper")
    assert ei.value.status == 3 << 8
    assert_mentions(ei.value.message, "the helper", "status 3")
    with pytest.raises(NativeCrash) as ei:
        isolate.call(os.abort, env=env, what="the helper")
    assert ei.value.status == signal.SIGABRT
    assert_mentions(ei.value.message, "the helper", "aborted")
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


def test_what_a_helper_writes_on_fd_1_and_fd_2_goes_to_on_stderr_only():
    """Both a forked helper's and a fresh interpreter's fd 1 and fd 2 output of a call reach
    on_stderr, in order; none of it lands in the caller's stdout or stderr."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(FD_OUTPUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "True 0 ['on fd 1\\non fd 2\\n']\n0 ['on fd 1\\non fd 2\\n']\n"
    assert proc.stderr == ""


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


def test_a_helper_is_forked_only_while_one_thread_runs_and_exits_0_when_closed():
    """fork_is_safe is False while another Python thread runs; a helper, forked or a fresh
    interpreter, ends with exit status 0 once its request pipe closes, and is reaped."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(HELPER_ENDS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "True False True 0 False\nFalse 0\n"


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
    assert ei.value.timed_out
    assert_mentions(ei.value.message, "the nap", "0 s")
    assert isolate.call(time.sleep, (0,), timeout=60) is None


@pytest.mark.golden
def test_call_timeout_and_unsendable_error_messages_exactly():
    """call()'s own words: a call past its timeout (its seconds as ``:g`` writes them), and an
    exception that cannot cross the pipe back (its type and text)."""
    with pytest.raises(NativeCrash) as ei:
        isolate.call(time.sleep, (5,), what="the reader", file="m.mlirbc", timeout=0)
    assert ei.value.format() == "error: m.mlirbc: the reader did not finish in 0 s"
    with pytest.raises(RuntimeError) as e:
        isolate.call(_raise_unpicklable)
    assert str(e.value) == "_Unpicklable: no pickles here"


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


def test_isolated_call_with_an_unpicklable_result_raises_the_pickling_error():
    from mlirhlo_driver._native import isolate

    try:
        with pytest.raises(TypeError, match="pickle"):
            isolate.call(threading.Lock)
    finally:
        isolate.shutdown()


@pytest.mark.slow
def test_fork_is_safe_until_xla_starts_its_threads():
    # A fresh process (no XLA client yet) may fork its isolation helper; once XLA's
    # CPU client runs its thread pools it must not.
    code = ("from mlirhlo_driver._native import isolate; from mlirhlo_driver._native import jaxlib as _jaxlib\n"
            "print(isolate.fork_is_safe())\n"
            "_jaxlib.cpu_devices()\n"
            "print(isolate.fork_is_safe())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["True", "False"], proc.stdout + proc.stderr


def test_no_fork_once_mlir_runs_its_thread_pool(tmp_path):
    # A pipeline over several functions starts the MLIR context's worker threads; a helper
    # forked after that inherits the pool without them, and its parse of the StableHLO that
    # XLA made from HLO (verified in parallel: two called computations) waited forever.
    (tmp_path / "two.mlir").write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  %1 = call @f(%0) : (tensor<4xf32>) -> tensor<4xf32>\n  return %1 : tensor<4xf32>\n}\n"
        "func.func private @f(%y: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.negate %y : tensor<4xf32>\n  %1 = stablehlo.negate %0 : tensor<4xf32>\n"
        "  return %1 : tensor<4xf32>\n}\n")
    (tmp_path / "calls.hlo").write_text(
        "HloModule calls\n\nf {\n  a = f32[4] parameter(0)\n  ROOT n = f32[4] negate(a)\n}\n\n"
        "g {\n  b = f32[4] parameter(0)\n  ROOT m = f32[4] add(b, b)\n}\n\n"
        "ENTRY main {\n  p = f32[4] parameter(0)\n  c = f32[4] call(p), to_apply=f\n"
        "  ROOT d = f32[4] call(c), to_apply=g\n}\n")
    code = ("import mlirhlo_driver as mhd\nfrom mlirhlo_driver._native import isolate\n"
            "mhd.load('two.mlir').optimize(passes='canonicalize,cse')\n"
            "print(isolate._llvm_pool_threads(), isolate.fork_is_safe())\n"
            "print(mhd.load('calls.hlo').as_text().count('func.func'))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "MLIRHLO_READ_TIMEOUT": "60"})
    assert proc.returncode == 0, proc.stderr
    workers, safe, funcs = proc.stdout.split()
    assert not (workers == "True" and safe == "True"), proc.stdout  # (one CPU: MLIR starts none)
    assert funcs == "3"


def test_a_call_inside_the_helper_runs_in_place_and_returns(tmp_path):
    from mlirhlo_driver._native import isolate

    assert isolate.call(_nested_abs_call, (-41,)) == 42


def test_isolate_returns_reraises_and_reports_deaths():
    seen: list[str] = []
    assert isolate.call(_write_fd2_and_return, (21,), on_stderr=seen.append) == 42
    assert seen == ["native chatter\n"]
    with pytest.raises(InputError) as ei:
        isolate.call(_raise_input_error)
    assert (ei.value.message, ei.value.file, ei.value.line, ei.value.col, ei.value.hint) == (
        "bad thing", "f.mlir", 3, 4, "fix it")
    with pytest.raises(NativeCrash) as ei:
        isolate.call(_die_with_llvm_error, what="codegen", file="k.ll")
    assert ei.value.file == "k.ll"
    assert_mentions(ei.value.message, "codegen", "aborted", "Cannot select: intrinsic %llvm.nvvm.foo")
    assert os.WTERMSIG(ei.value.status) == signal.SIGABRT
    with pytest.raises(NativeCrash, match=r"died \(SIGKILL\)"):
        isolate.call(_kill_self)
    assert isolate.call(_write_fd2_and_return, (1,), on_stderr=seen.append) == 2


@pytest.mark.golden
def test_native_reason_picks_the_telling_line():
    """The native reason a death's message ends with (the family's golden test)."""
    absl = ("F1130 18:32:04.923132   24233 hlo_computation.cc:188] Check failed: "
            "param_no >= 0 && param_no < parameter_count \n"
            "ERROR: invalid parameter number. Expected [0, 1), got 3\n"
            "*** Check failure stack trace: ***\n"
            "    @     0x7fa15050bd08  xla::LogMessageFatal::~LogMessageFatal()\n")
    assert isolate.native_reason(absl) == ("Check failed: param_no >= 0 && param_no < parameter_count; "
                                           "invalid parameter number. Expected [0, 1), got 3")
    assert isolate.native_reason("x\nLLVM ERROR: out of memory\n") == "out of memory"
    assert isolate.native_reason("    @ 0x1 abc::Fatal\n") == ""
    # without a Check failed: the last absl error line, else the last line saying error or fatal
    assert isolate.native_reason("E1130 18:32:04.923132 1 a.cc:1] first\nE1130 18:32:04.923132 1 b.cc:2] last\n"
                                 "noise\n") == "last"
    assert isolate.native_reason("Fatal Python error: Segmentation fault\nthread 1\n") == \
        "Fatal Python error: Segmentation fault"
    assert isolate.native_reason("an Error here\nsome error there\nbye\n") == "some error there"
    assert isolate.native_reason("terror\n#0 0x1 in f\n0xdeadbeef x\n") == ""
    assert isolate.native_reason("E1130 18:32:04.923132 1 a.cc:1] " + "x" * 500) == "x" * 400


def test_isolate_output_of_each_call_is_its_own():
    """The helper's log is emptied between calls: no NUL-filled hole where the last call's text was."""
    seen: list[str] = []
    for value in (1, 2, 3):
        assert isolate.call(_write_fd2_and_return, (value,), on_stderr=seen.append) == value * 2
    assert seen == ["native chatter\n"] * 3


@pytest.mark.slow
def test_isolate_deadline_kills_a_call_that_does_not_finish():
    with pytest.raises(NativeCrash) as ei:
        isolate.call(_sleep, (600,), what="the reader", file="m.mlirbc", timeout=0.5)
    assert ei.value.timed_out
    assert ei.value.file == "m.mlirbc"
    assert_mentions(ei.value.message, "the reader", "0.5 s")
    # The killed helper is replaced; a call within its deadline returns.
    assert isolate.call(_sleep, (0,), timeout=60) == 0


def test_isolate_env_runs_in_a_helper_started_with_it():
    from mlirhlo_driver._native import isolate

    env = {"MLIRHLO_TEST_ENV_AT_START": "yes"}
    assert isolate.call(_env_var_at_start, ("MLIRHLO_TEST_ENV_AT_START",), env=env) == "yes"
    first = isolate._helpers[tuple(env.items())].pid
    assert isolate.call(_env_var_at_start, ("MLIRHLO_TEST_ENV_AT_START",), env=env) == "yes"
    assert isolate._helpers[tuple(env.items())].pid == first  # kept for later calls
    assert isolate.call(_env_var_at_start, ("MLIRHLO_TEST_ENV_AT_START",)) is None  # the default helper
