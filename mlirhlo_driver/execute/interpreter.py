"""The StableHLO reference interpreter (``stablehlo.eval_module``), isolated.

The interpreter aborts the whole process (an LLVM fatal error) on ops it does
not support, so it runs in a child process that is kept for reuse and
restarted after a crash; the crash becomes a CompileError quoting the
interpreter's own message. Before evaluation, CHLO and deprecated ops (XLA's
HLO import yields ``stablehlo.dot``) are legalized to what it supports.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
import threading
from multiprocessing import util as mp_util
from typing import Any

import numpy as np

from .._native.fds import last_native_error
from ..errors import CompileError

_PREPARE = "builtin.module(func.func(chlo-legalize-to-stablehlo,stablehlo-legalize-deprecated-ops))"


def evaluate_in_process(bytecode: bytes, arrays: list[np.ndarray], carrier_types: list[str]) -> list[np.ndarray]:
    """eval_module on a module given as bytecode; arrays already in carrier form."""
    from jaxlib.mlir import ir, passmanager
    from jaxlib.mlir.dialects import stablehlo

    from .._native import jaxlib as _jaxlib
    from ..inputs.loader import parse_mlir

    module = parse_mlir(bytecode, "<interpreter>")
    text = module.operation.get_asm()
    if "mhlo.topk(" in text:
        # XLA's TopK imports as mhlo.topk, which CHLO spells chlo.top_k (same
        # syntax and meaning); CHLO then legalizes to sort + slice.
        module = parse_mlir(text.replace("mhlo.topk(", "chlo.top_k("), "<interpreter>")
    ctx = _jaxlib.ir_context()
    with ctx:
        passmanager.PassManager.parse(_PREPARE).run(module.operation)
        attrs = [_jaxlib.dense_elements_attr(a, ir.Type.parse(t)) for a, t in zip(arrays, carrier_types)]
        return [np.array(a) for a in stablehlo.eval_module(module, attrs)]


def _serve(conn: Any, stderr_path: str) -> None:  # pragma: no cover - child process
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 2)  # an abort's message lands here for the parent to quote
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        try:
            conn.send(("ok", evaluate_in_process(*request)))
        except Exception as e:  # noqa: BLE001 - reported to the parent as text
            conn.send(("error", f"{type(e).__name__}: {e}"))


class InterpreterServer:
    """One reusable child process running the interpreter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None
        self._stderr = tempfile.NamedTemporaryFile(prefix="mlirhlo-interpreter-", suffix=".log", delete=False)
        self._stderr.close()
        # Runs at interpreter exit, and also in multiprocessing children (which skip atexit).
        mp_util.Finalize(self, self.close, exitpriority=10)

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self._stderr.name), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def evaluate(self, bytecode: bytes, arrays: list[np.ndarray], carrier_types: list[str]) -> list[np.ndarray]:
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                self._start()
            try:
                self._conn.send((bytecode, arrays, carrier_types))
                status, payload = self._conn.recv()
            except (EOFError, OSError, BrokenPipeError):
                self._proc.join(5)
                message = last_native_error(self._stderr.name) or "no message"
                self._proc = None
                raise CompileError(f"the StableHLO interpreter crashed: {message}") from None
        if status != "ok":
            raise CompileError(f"the StableHLO interpreter failed: {payload}")
        return payload

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
            except (OSError, BrokenPipeError):
                pass
            self._proc.join(2)
            if self._proc.is_alive():
                self._proc.kill()
        try:
            os.unlink(self._stderr.name)
        except OSError:
            pass


_server: InterpreterServer | None = None


def server() -> InterpreterServer:
    global _server
    if _server is None:
        _server = InterpreterServer()
    return _server
