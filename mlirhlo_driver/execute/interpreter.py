"""The StableHLO reference interpreter (``stablehlo.eval_module``), isolated.

The interpreter aborts the whole process (an LLVM fatal error) on ops it does
not support, so it runs in isolate.call's helper process, which is kept for
reuse and restarted after a crash; the crash becomes a CompileError quoting
the interpreter's own message. Before evaluation, CHLO and deprecated ops (XLA's
HLO import yields ``stablehlo.dot``) are legalized to what it supports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native.fds import native_error_line
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


def _evaluate_in_helper(bytecode: bytes, arrays: list[np.ndarray],
                        carrier_types: list[str]) -> tuple[str, Any]:
    """evaluate_in_process, run by isolate.call: ("ok", outputs) or ("error", its words)."""
    try:
        return "ok", evaluate_in_process(bytecode, arrays, carrier_types)
    except Exception as e:  # noqa: BLE001 - reported as text, whether it pickles or not
        return "error", f"{type(e).__name__}: {e}"


def _discard(text: str) -> None:
    """What the interpreter writes on fd 1/2 when it succeeds: nothing the user asked for."""


def evaluate(bytecode: bytes, arrays: list[np.ndarray], carrier_types: list[str]) -> list[np.ndarray]:
    """The interpreter's outputs for a module's bytecode, in isolate.call's helper process:
    kept for the next call and replaced after a crash, which becomes a CompileError
    quoting the interpreter."""
    from .._native import isolate
    from ..errors import NativeCrash

    try:
        status, payload = isolate.call(_evaluate_in_helper, (bytecode, arrays, carrier_types),
                                       what="the StableHLO interpreter", on_stderr=_discard)
    except NativeCrash as e:
        message = native_error_line(e.native_log) or "no message"
        raise CompileError(f"the StableHLO interpreter crashed: {message}") from None
    if status != "ok":
        raise CompileError(f"the StableHLO interpreter failed: {payload}")
    return payload
