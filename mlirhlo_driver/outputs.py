"""Writing results: atomically, so a failure never leaves a half-written file."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .errors import DriverError


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write to a temp file beside ``path``, then rename it into place."""
    path = Path(path)
    payload = data.encode() if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise DriverError(f"cannot write: {e.strerror or e}", file=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() would not
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_stdout(data: str | bytes) -> None:
    if isinstance(data, bytes):
        if sys.stdout.isatty():
            raise DriverError("refusing to write binary output to a terminal", hint="use -o FILE")
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(data if data.endswith("\n") or not data else data + "\n")
        sys.stdout.flush()
