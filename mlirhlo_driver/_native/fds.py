"""Capture what native (C++) code writes to file descriptor 2.

MLIR's IR printing and timing report, and jaxlib's logging, write straight to
fd 2, past ``sys.stderr``; to order, filter or redirect that text the
descriptor itself is swapped for a temporary file for the length of a block.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator


class Captured:
    text: str = ""


@contextlib.contextmanager
def capture_fd2() -> Iterator[Captured]:
    """Within the block, fd 2 goes to a temp file; ``.text`` holds it afterwards."""
    result = Captured()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield result
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            result.text = sink.read().decode("utf-8", "replace")


def last_native_error(log_path: str) -> str:
    """The line of a native log file that best says why a process died ("" if none)."""
    try:
        with open(log_path, errors="replace") as f:
            return native_error_line(f.read())
    except OSError:
        return ""


_PYTHON_WARNING = re.compile(r"^(?:\S+\.py:\d+: \w*Warning: |warnings\.warn\()")


def native_error_line(log: str) -> str:
    """The line of native output that best says why a process died ("" if none).

    LLVM fatal errors come first; then other error-looking lines; then the
    last line.
    """
    # A Python warning the process printed before it died (jax's on a TPU VM: "UserWarning:
    # Transparent hugepages are not enabled", then its source line) says nothing of the death.
    lines = [ln.strip() for ln in log.splitlines()
             if ln.strip() and not _PYTHON_WARNING.match(ln.strip())]
    for ln in reversed(lines):
        if ln.startswith("LLVM ERROR:"):
            return ln.removeprefix("LLVM ERROR:").strip().split(". ")[0]
    for ln in reversed(lines):
        if "Check failed" in ln or "Fatal" in ln or "error" in ln.lower():
            return ln[:300]
    return lines[-1][:300] if lines else ""
