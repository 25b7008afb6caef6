"""Run a native call in a helper process, so that its crash becomes an error.

XLA's CHECK failures, LLVM's fatal errors ("LLVM ERROR: Cannot select ...")
and stack overflows in native parsers end the whole process: no Python
exception, no cleanup. :func:`call` runs ``fn(*args, **kwargs)`` in a helper
process and returns its result; if the helper dies instead (signal, abort,
exit), it raises :class:`~mlirhlo_driver.errors.NativeCrash` carrying the
wait status and the most telling line the helper wrote on fd 2 (``LLVM
ERROR: ...``, ``Check failed: ...``). An exception that ``fn`` raises (a
:class:`~mlirhlo_driver.errors.DriverError` with its location, say) is
raised again here, unchanged as long as it pickles.

Promises and limits:

* ``fn`` must be a module-level function, and its arguments and result must
  pickle. The helper is a copy of this process taken when it started (or a
  fresh interpreter, see below): it sees no later state of this one (no
  modules imported since, no monkeypatches), so pass everything ``fn`` needs.
* Calls run one at a time in the same helper, which lives until one of them
  kills it; the next call then starts a new one. So ``fn`` must leave no
  process-wide state behind that would change a later call.
* What the helper writes on fd 1 and fd 2 during a call is captured; after a
  successful call it goes to ``on_stderr`` (default: this process's stderr),
  so native output never lands in the command's stdout.
* A call made inside the helper runs in place: the helper is expendable.

How the helper starts: forking a process whose native code already started
threads (XLA's thread pools) is unsafe, since a lock another thread held at
the fork stays locked in the child. So the helper is ``os.fork()``-ed from
this process only while XLA and MLIR run no threads here and Python runs no
other thread (:func:`fork_is_safe`): a few milliseconds, and it shares every
module imported so far. Otherwise it is a fresh interpreter
(``sys.executable``), which imports what it needs once (about 0.1 s, plus
the imports). Commands that can make their first isolated call before XLA
starts threads. A helper that runs calls in place, rather than forking a
worker per call, keeps each call's cost to a pipe round trip: LLVM compiles
ran 10-15% slower in freshly forked workers, on top of ~25 ms per fork and
exit.

:func:`forked` is the other way round: one try in a fork of this process,
taken whatever runs here, for work that is expected to kill its process now
and then (a pass probe), where the helper would be restarted each time; only
how it ended comes back. processes.py says which mechanism serves what.
"""

from __future__ import annotations

import atexit
import importlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import NativeCrash
from . import processes

__all__ = ["Forked", "call", "fork_is_safe", "forked", "in_helper", "native_reason", "prestart", "shutdown"]

_lock = threading.Lock()
# One helper per environment it was started with: () is the default helper.
_helpers: dict[tuple[tuple[str, str], ...], _Helper] = {}
_in_helper = False


def in_helper() -> bool:
    """Whether this process is a helper (calls made here run in place)."""
    return _in_helper


def _after_fork_in_child() -> None:
    # A fork taken while _lock was held leaves it held in the child.
    global _lock
    _lock = threading.Lock()
    _helpers.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


# ------------------------------------------------------------------ framing

def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(fd, struct.pack("<Q", len(data)) + data)


def _recv(fd: int) -> Any | None:
    head = _read_exact(fd, 8)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack("<Q", head)[0])
    return None if body is None else pickle.loads(body)


def _read_log(fd: int) -> str:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0).decode("utf-8", "replace") if size else ""


# ---------------------------------------------------------- the helper side

def _serve(rfd: int, wfd: int, logfd: int) -> None:
    """The helper's loop: run each request in place, reply; EOF ends it."""
    global _in_helper
    _in_helper = True
    # Ctrl-C reaches the whole process group: die quietly, the caller reports it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # A fault here is the expected outcome the caller reports, not a Python bug
    # to dump a traceback for (pytest, PYTHONFAULTHANDLER).
    import faulthandler

    faulthandler.disable()
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(logfd, 1)
    os.dup2(logfd, 2)
    while True:
        try:
            request = _recv(rfd)
        except Exception as e:  # a function that does not unpickle here
            _send(wfd, (pickle.dumps(("raised", _picklable(e))), ""))
            continue
        if request is None:
            os._exit(0)
        fn, args, kwargs, preload = request
        # fd 1 and 2 share logfd's offset: without the seek, the next call's
        # output would land after a hole of NUL bytes as long as the last one's.
        os.ftruncate(logfd, 0)
        os.lseek(logfd, 0, os.SEEK_SET)
        try:
            for name in preload:
                _preload(name)
            out = ("ok", fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - every failure goes back to the caller
            out = ("raised", e)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            data = pickle.dumps(("raised", _picklable(out[1] if out[0] == "raised" else e)))
        _send(wfd, (data, _read_log(logfd)))


_preloaded: set[str] = set()


def _preload(name: str) -> None:
    """Import ``module``, or run ``module:function``, once in the helper."""
    if name in _preloaded:
        return
    module, _, function = name.partition(":")
    mod = importlib.import_module(module)
    if function:
        getattr(mod, function)()
    _preloaded.add(name)


def _picklable(e: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:
        return RuntimeError(f"{type(e).__name__}: {e}")


# ---------------------------------------------------------- the caller side

class _Helper:
    def __init__(self, pid: int, wfd: int, rfd: int, log: Any,
                 proc: subprocess.Popen | None = None) -> None:
        self.pid, self.wfd, self.rfd, self.log, self.proc = pid, wfd, rfd, log, proc
        self.warming = False  # prestart's request sent, its reply not read yet
        self.warm_log = ""    # what the helper wrote during it, for the next call's on_stderr

    def wait(self) -> int | None:
        """The helper's wait status once it has ended (None if unknown)."""
        try:
            if self.proc is not None:
                self.proc.wait(timeout=10)
                code = self.proc.returncode
                return (-code) & 0x7F if code < 0 else code << 8
            return os.waitpid(self.pid, 0)[1]
        except (OSError, subprocess.TimeoutExpired):
            return None

    def close(self) -> int | None:
        for fd in (self.wfd, self.rfd):
            try:
                os.close(fd)
            except OSError:
                pass
        status = self.wait()  # EOF on its request pipe ends it at once
        self.log.close()
        return status


def fork_is_safe() -> bool:
    """True while this process may be forked: Linux, one Python thread, no XLA threads.

    XLA's clients, compiles and plugins start native thread pools that Python
    cannot see; ``_jaxlib.native_threads_started()`` knows whether the driver
    or jax started one. An MLIR context's pool starts its threads when it first
    runs work in parallel (a pass pipeline, a parse verifying several functions):
    those are told by the name LLVM gives them (:func:`_llvm_pool_threads`).
    Other native threads seen here are fork-aware (OpenBLAS shuts its pool down
    at a fork).
    """
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    from . import jaxlib as _jaxlib  # light: it imports jaxlib only when used

    return not _jaxlib.native_threads_started() and not _llvm_pool_threads()


def _llvm_pool_threads() -> bool:
    """Whether an LLVM thread pool has worker threads in this process (LLVM names them
    ``llvm-worker-N``; jaxlib 0.9.0-0.12.0.1 checked). A forked child keeps the pool but
    not its threads: MLIR work there waits on them forever. Unreadable: assumed so."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return True
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as fh:
                if fh.read().startswith("llvm-worker"):
                    return True
        except OSError:  # the thread ended meanwhile
            continue
    return False


def _start(preload: tuple[str, ...], env: tuple[tuple[str, str], ...] = ()) -> _Helper:
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    log = tempfile.TemporaryFile()
    if not env and fork_is_safe():
        # Modules imported here before the fork are shared with the helper
        # rather than loaded twice (this process mostly needs them too).
        for name in preload:
            if ":" not in name:
                importlib.import_module(name)

        # The other helpers' pipe ends stay this process's: held here too, a helper would see no
        # EOF when this process closes its end (shutdown would wait for it in vain).
        inherited = [fd for h in _helpers.values() for fd in (h.wfd, h.rfd)]

        def helper() -> None:  # _fork's exit ends it: 0 at EOF, 1 if the loop raised
            for fd in inherited:
                try:
                    os.close(fd)
                except OSError:
                    pass
            os.close(req_w)
            os.close(resp_r)
            _serve(req_r, resp_w, log.fileno())

        pid = _fork(helper)
        proc = None
    else:
        # The same imports as here: a test's or an editable install's paths included.
        proc = processes.start_python("mlirhlo_driver._native.isolate", req_r, resp_w, log.fileno(),
                                      path=sys.path, env=dict(env), pass_fds=(req_r, resp_w, log.fileno()),
                                      stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        pid = proc.pid
    os.close(req_r)
    os.close(resp_w)
    return _Helper(pid, req_w, resp_r, log, proc)


def shutdown() -> None:
    """End the helper processes, if any run (also done at exit)."""
    with _lock:
        for helper in list(_helpers.values()):
            helper.close()
        _helpers.clear()


atexit.register(shutdown)


def prestart(preload: Iterable[str], env: dict[str, str], warm: Callable[..., Any] | None = None,
             args: Iterable[Any] = ()) -> None:
    """Start the helper :func:`call` with ``env`` will use, now, and have it run ``preload`` and
    ``warm(*args)`` while this process goes on: the next call there waits for that first (its
    failure is ignored: the call does the same work again and reports it). Nothing if that
    helper runs already, or for an empty ``env`` (a fork of this process, taken at the call)."""
    key = tuple(sorted(env.items()))
    if not key or _in_helper:
        return
    with _lock:
        if key in _helpers:
            return
        helper = _helpers[key] = _start(tuple(preload), key)
        try:
            _send(helper.wfd, (warm or _nothing, tuple(args), {}, tuple(preload)))
            helper.warming = True
        except BrokenPipeError:
            del _helpers[key]
            helper.close()


def _nothing() -> None:
    return None


def _warmed(helper: _Helper) -> bool:
    """Read prestart's reply, if one is due: False when the helper died during it."""
    if not helper.warming:
        return True
    helper.warming = False
    reply = _recv(helper.rfd)
    if reply is None:
        return False
    helper.warm_log = reply[1]
    return True


def call(fn: Callable[..., Any], args: Iterable[Any] = (), kwargs: dict | None = None, *,
         what: str = "native code", file: str | None = None, preload: Iterable[str] = (),
         on_stderr: Callable[[str], None] | None = None, timeout: float | None = None,
         env: dict[str, str] | None = None) -> Any:
    """``fn(*args, **kwargs)`` in the helper process; its result, or its exception re-raised.

    Raises NativeCrash (``"{what} aborted: {reason}"``, located at ``file``)
    when the helper dies instead of returning. ``timeout``: seconds the call
    (preloads included) may take; past it the helper is killed and
    NativeCrash says ``"{what} did not finish in N s"`` (``timed_out`` set).
    ``preload``: modules (``module``) the helper imports, or warm-up functions
    (``module:function``) it calls, once, before the call, so later calls
    find them ready. ``on_stderr`` gets what the helper wrote on fd 1/2
    during the call (whether it returned or raised).
    ``env``: variables the helper's process must have had from its start (native
    code reads some once, when it loads: XLA's ``TF_CPP_VMODULE``). Such a call
    runs in a helper of its own, always a fresh interpreter, kept for later calls
    with the same ``env``.
    """
    args, kwargs, preload = tuple(args), dict(kwargs or {}), tuple(preload)
    key = tuple(sorted((env or {}).items()))
    if _in_helper and not key:
        return fn(*args, **kwargs)
    request = (fn, args, kwargs, preload)
    with _lock:
        for attempt in range(2):
            helper = _helpers.get(key)
            if helper is None:
                helper = _helpers[key] = _start(preload, key)
            try:
                _send(helper.wfd, request)
            except BrokenPipeError:
                # It ended before this call (killed from outside, or it never
                # started): a new one, once.
                del _helpers[key]
                log = _read_log(helper.log.fileno())
                status = helper.close()
                if attempt:
                    raise NativeCrash(_death_message("the isolation helper process", status, log),
                                      file=file, status=status, native_log=log) from None
                continue
            try:
                warmed = _warmed(helper)  # prestart's work first (the call's own preloads, done)
                if warmed and timeout is not None and not _wait_readable(helper.rfd, timeout):
                    del _helpers[key]
                    _kill(helper)
                    log = _read_log(helper.log.fileno())
                    status = helper.close()
                    raise NativeCrash(f"{what} did not finish in {timeout:g} s", file=file, status=status,
                                      native_log=log, timed_out=True)
                reply = _recv(helper.rfd) if warmed else None
                if reply is not None and helper.warm_log:
                    reply, helper.warm_log = (reply[0], helper.warm_log + reply[1]), ""
            except KeyboardInterrupt:
                # Ctrl-C while the helper works: its reply would answer the next call. It is
                # stopped now (the wait ends at once, not when the call would have finished).
                _helpers.pop(key, None)
                _kill(helper)
                helper.close()
                raise
            if reply is not None:
                break
            # This call killed it.
            del _helpers[key]
            log = _read_log(helper.log.fileno())
            status = helper.close()
            raise NativeCrash(_death_message(what, status, log), file=file, status=status,
                              native_log=log)
    payload, text = reply
    result, value = pickle.loads(payload)
    if text:
        (on_stderr or _to_stderr)(text)
    if result == "raised":
        raise value
    return value


def _wait_readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has data (or EOF) within ``timeout`` seconds."""
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        return bool(sel.select(max(timeout, 0.0)))


def _kill(helper: _Helper) -> None:
    try:
        os.kill(helper.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _to_stderr(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()


# ------------------------------------------------------------ one-off forks

def _fork(child: Callable[[], object]) -> int:
    """``os.fork()``: the child runs ``child()`` and exits, 0 or (if it raised) 1, never
    returning into the caller's frames. This process's buffered stdio is flushed
    first, or the child would write it a second time."""
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        # Python's "use of fork() may lead to deadlocks" when threads run: each caller
        # says why its child needs no lock another thread may hold.
        warnings.filterwarnings("ignore", message=r".*fork\(\) may lead to deadlocks")
        # jax's own at-fork hook says the same once jax is imported (from_jax, a JAX input).
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called")
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            child()
            code = 0
        finally:
            os._exit(code)
    return pid


@dataclass(frozen=True)
class Forked:
    """How a :func:`forked` child ended."""

    ended: str            # "returned", "raised" (error says what), "died" or "timed out"
    status: int | None    # its wait status
    log: str = ""         # what it wrote on fd 1 and 2
    error: str = ""       # "ValueError: ..." when fn raised

    def message(self, what: str) -> str:
        """How it died, as call() words it: ``"{what} aborted: Cannot select ..."``."""
        return _death_message(what, self.status, self.log)


def forked(fn: Callable[..., object], *args: Any, timeout: float | None = None) -> Forked:
    """``fn(*args)`` once, in a fork of this process that may die doing it: how it ended.

    For tries that are expected to kill their process now and then, where
    :func:`call`'s helper would be restarted each time (a pass probe: a parse and
    a one-function pipeline, a few ms). Nothing is pickled (``fn`` may be a
    closure) and nothing comes back but the outcome; what the child changes in
    its memory, cwd or environment stays there. Unlike :func:`call`, it
    forks whatever threads run here: ``fn`` must need no lock another thread may
    hold (MLIR runs a one-function pipeline without its thread pool). Past
    ``timeout`` seconds the child is killed: ``ended == "timed out"``.
    """
    import faulthandler  # here, not in every child

    rfd, wfd = os.pipe()
    log = tempfile.TemporaryFile()

    def child() -> None:
        os.close(rfd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: die quietly, the caller sees it
        faulthandler.disable()  # a fault is an outcome here, not a bug to dump a traceback for
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            fn(*args)
            note = b"r"
        except BaseException as e:  # noqa: BLE001 - the caller gets its words
            # One write under PIPE_BUF, so that it arrives whole or not at all.
            note = b"e" + f"{type(e).__name__}: {e}".encode("utf-8", "replace")[:2000]
        sys.stdout.flush()
        sys.stderr.flush()
        _write_all(wfd, note)  # then _fork's exit: 0, whatever fn did (the note says)

    try:
        pid = _fork(child)
    except BaseException:
        os.close(rfd)
        os.close(wfd)
        log.close()
        raise
    os.close(wfd)
    try:
        # Its note, or EOF when it died: native code gets no say in how it ends.
        finished = timeout is None or _wait_readable(rfd, timeout)
        note = os.read(rfd, 4096) if finished else b""
        if not finished:
            os.kill(pid, signal.SIGKILL)
        status = os.waitpid(pid, 0)[1]
    except BaseException:  # interrupted while it ran: it must not outlive the caller
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
        raise
    finally:
        os.close(rfd)
        text = _read_log(log.fileno())
        log.close()
    if not finished:
        return Forked("timed out", status, text)
    if note[:1] == b"r":
        return Forked("returned", status, text)
    if note[:1] == b"e":
        return Forked("raised", status, text, note[1:].decode("utf-8", "replace"))
    return Forked("died", status, text)


# ------------------------------------------------------------------ reasons

def _death_message(what: str, status: int | None, log: str) -> str:
    reason = native_reason(log)
    if status is None:
        how = "died"
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = processes.signal_name(sig) or f"signal {sig}"
        how = {"SIGSEGV": "crashed (SIGSEGV: a stack overflow or a bug)",
               "SIGABRT": "aborted"}.get(name, f"died ({name})")
    else:
        how = f"exited with status {os.WEXITSTATUS(status)}"
    return f"{what} {how}: {reason}" if reason else f"{what} {how}"


def native_reason(log: str) -> str:
    """The line of a dying native library's output that says why ("" if none).

    ``LLVM ERROR: ...`` first; then an absl ``Check failed: ...`` (without
    its ``F1130 12:00:00.000 123 file.cc:12]`` prefix), joined with the
    ``ERROR: ...`` detail line XLA prints after it; then other error lines.
    Stack-trace lines are skipped.
    """
    import re

    absl = re.compile(r"^[FE]\d{4} [\d:. ]+\d+ [\w.]+:\d+\] (.*)")
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("@ ", "*** ", "PC: @")) and
             not re.match(r"^0x[0-9a-f]+\b|^#\d+ ", ln)]
    for ln in lines:
        if ln.startswith("LLVM ERROR:"):
            return ln.removeprefix("LLVM ERROR:").strip()
    for i, ln in enumerate(lines):
        m = absl.match(ln)
        text = m.group(1).strip() if m else ln
        if text.startswith("Check failed"):
            detail = [x for x in lines[i + 1:i + 3] if x.startswith("ERROR: ")]
            if detail:
                text += "; " + detail[0].removeprefix("ERROR: ")
            return text[:400]
    for ln in reversed(lines):
        m = absl.match(ln)
        if m:
            return m.group(1)[:400]
        if re.search(r"\berror\b|fatal", ln, re.IGNORECASE):
            return ln[:400]
    return ""


if __name__ == "__main__":  # pragma: no cover - the helper, when it cannot be forked
    # Served by the module under its own name, where a nested call looks for _in_helper.
    from mlirhlo_driver._native.isolate import _serve as _serve_here

    _serve_here(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
