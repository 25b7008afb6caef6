"""What the benchmark scripts share: timing a command as a fresh process."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def time_command(cmd: list[str], *, check: bool = True) -> float:
    """Wall seconds of one run of ``cmd`` from the repo root, output discarded."""
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check, cwd=REPO)
    return time.perf_counter() - t0
