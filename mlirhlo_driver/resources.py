"""Where the shipped data folders (gpu_specs/, pipelines/) are found, and the cache folder.

They live at the repository's root and ship inside the package as the data-only
packages ``mlirhlo_driver.gpu_specs`` and ``mlirhlo_driver.pipelines`` (pyproject's
package-dir), found by the import system, so a checkout (editable install), a wheel
(``--user``, ``--target``, a venv) and a zipped install all find them. Callers get a
real directory: the folder itself where it is on the file system, else (a zip) a
temporary copy made once per process, through importlib.resources.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any


@functools.cache
def data_dir(name: str) -> Path:
    """The shipped data folder ``name`` (``gpu_specs``, ``pipelines``) as a directory."""
    folder = _on_file_system(name)
    if folder is not None:
        return folder
    # importlib.resources (with zipfile, ~2 ms) only where the folder is no directory.
    from importlib import resources

    return _extracted(resources.files(f"{__package__}.{name}"), name)


def _on_file_system(name: str) -> Path | None:
    """The data package's folder where the import system finds it as a directory (a
    checkout through the editable finder, a wheel's files); None otherwise (a zip)."""
    import importlib.util

    spec = importlib.util.find_spec(f"{__package__}.{name}")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        if os.path.isdir(location):
            return Path(location)
    return None


def _extracted(folder: Any, name: str) -> Path:
    """A zipped install's ``folder``, copied to a temporary directory removed at exit."""
    import atexit
    import shutil
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="mlirhlo-driver-")) / name
    atexit.register(shutil.rmtree, out.parent, ignore_errors=True)
    out.mkdir()
    if folder.is_dir():
        for item in folder.iterdir():
            if item.is_file() and not item.name.endswith((".py", ".pyc")):
                (out / item.name).write_bytes(item.read_bytes())
    return out


def cache_dir(name: str | None = None) -> Path:
    """The driver's cache folder, ``$XDG_CACHE_HOME/mlirhlo-driver`` (``~/.cache`` without
    it), or ``name`` in it. Every cache lives here: the pass catalogue, the record of the
    installed distributions and entry points (installed.py), the XLA-flag list, the ptxas
    probe, the GPU spec summaries (cuda/specs.py), and the stage cache (``stages/``), which alone moves with ``MLIRHLO_CACHE_DIR`` (core/cache.py)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = Path(base) / "mlirhlo-driver"
    return root / name if name else root
