"""Where the shipped data folders (pipelines/, gpu_specs/) are found.

In a checkout (and an editable install) they sit next to the package; a wheel
installs them under ``<prefix>/share/mlirhlo-driver/``.
"""

from __future__ import annotations

import sys
from pathlib import Path


def data_dir(name: str) -> Path:
    beside_package = Path(__file__).resolve().parent.parent / name
    if beside_package.is_dir():
        return beside_package
    return Path(sys.prefix) / "share" / "mlirhlo-driver" / name
