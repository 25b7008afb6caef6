"""Helpers the cuda/ tests share: ptxas -v on a PTX text, as an independent check."""

from __future__ import annotations

import subprocess
from pathlib import Path


def _ptxas_v(ptx: str, sm: str, tmp_path: Path, *extra: str) -> str:
    from mlirhlo_driver.cuda import tools as cuda_tools

    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([cuda_tools.ptxas().path, str(src), "-o", str(tmp_path / "k.cubin"),
                           f"-arch={sm}", "-v", *extra], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr
