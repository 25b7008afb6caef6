"""Ctrl-C that never kills the process inside native code.

Python raises KeyboardInterrupt at the next bytecode, wherever that is. Inside
the initialisation of one of jaxlib's nanobind extension modules (measured:
``import jaxlib.mlir.ir``, in enum creation) the exception crosses C++, and the
process aborts ("terminate called after throwing an instance of
'nanobind::python_error'") or segfaults. The handler installed here raises
KeyboardInterrupt as Python's own does, except inside an import: there it asks
again a moment later, until the import is done.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

_RETRY_S = 0.05
received = False   # a SIGINT reached the handler
abandoned = False  # a native call left running in a thread (_native.jaxlib.interruptible)
_reported = False


def report(detail: str = "") -> None:
    """The one ``error: interrupted`` line, however many places see the interrupt. Said by a
    command that is ending: where a native call still runs in an abandoned thread, what XLA
    logs from now on (a compile's warnings) goes nowhere, so this line stays the last."""
    global _reported
    if _reported:
        return
    line = f"error: interrupted{detail}\n"
    if not abandoned:
        _reported = True
        sys.stderr.write(line)
        return
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    terminal = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    _reported = True  # only once fd 2 goes nowhere: from here on nothing lands after the line
    os.write(terminal, line.encode())
    os.close(terminal)


def install() -> None:
    """Use the handler for SIGINT, unless someone chose another one (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def _in_import(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global received
    received = True
    if _in_import(frame):
        retry = threading.Timer(_RETRY_S, os.kill, (os.getpid(), signal.SIGINT))
        retry.daemon = True
        retry.start()
        return
    raise KeyboardInterrupt


def leave(code: int) -> None:
    """End this process now with ``code`` (after a Ctrl-C): exit handlers run (the isolate
    helper and pool workers are stopped), the interpreter's teardown is skipped. A compile or
    run abandoned in a worker thread (``_native.jaxlib.interruptible``) may still be inside
    XLA, whose static objects a normal exit would destroy under it."""
    import atexit

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()
    os._exit(code)
