"""The scripts under scripts/ are imported by name (``import mutation``), as they import
each other when run."""

from __future__ import annotations

import sys

from tests.conftest import REPO

if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))
