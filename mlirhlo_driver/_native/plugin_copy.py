"""The driver's own copy of jax's CUDA plugin, kept where jax's plugin discovery does not look.

jax imports every module of its plugin namespace package (and every entry point
of that group) and calls its ``initialize()``. ``jax-cudaN-pjrt``, the
only package on the index with jax's CUDA PJRT library, installs one: in an
environment without NVIDIA's runtime libraries (all that device-less compiles need)
its ``initialize()`` fails on cuDNN and jax logs a 25-line traceback at the user's
first ``jnp.zeros(3)``. So the README's set-up does not install it into
site-packages: ``mlirhlo cuda-plugin install`` has pip put ``jax-cudaN-plugin`` and
``jax-cudaN-pjrt`` at jaxlib's exact version into this environment's
``share/mlirhlo-driver/cuda-plugins/`` (or ``$MLIRHLO_CUDA_PLUGIN_DIR``), one directory
per plugin and version, and the driver loads that library itself
(``_native.jaxlib``). A jax CUDA plugin already installed in site-packages at
jaxlib's version (a user's own GPU jax) is used instead, as it is.

Layout of one copy, ``<root>/jax-cuda12-plugin-0.12.0.1/``:
``python/`` holds ``jax_cuda12_plugin`` (the driver's process imports it from
there: custom-call targets, build versions), ``pjrt/`` the ``jax-cuda12-pjrt`` wheel's
files with ``xla_cuda_plugin.so`` (never on ``sys.path``; _native/jaxlib.py knows its
place in them). A copy is complete once it is renamed into place, so a failed install
leaves nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import EnvironmentMismatch

ENV = "MLIRHLO_CUDA_PLUGIN_DIR"
LIBRARY = "xla_cuda_plugin.so"  # the PJRT plugin, in the pjrt wheel
_COPY = re.compile(r"^(jax-cuda(\d+)-plugin)-(\d[\w.+]*)$")


def share_dir(env: str, name: str) -> Path:
    """Where a kind of the driver's copies lives: ``$env``, else ``<sys.prefix>/share/mlirhlo-driver/<name>``
    (this environment's, where no jax discovery looks)."""
    return Path(os.environ.get(env) or Path(sys.prefix, "share", "mlirhlo-driver", name))


def root() -> Path:
    """Where the copies live: ``$MLIRHLO_CUDA_PLUGIN_DIR``, else ``<sys.prefix>/share/mlirhlo-driver/cuda-plugins``."""
    return share_dir(ENV, "cuda-plugins")


@dataclass(frozen=True)
class Copy:
    """One complete copy: ``dist`` ("jax-cuda12-plugin"), its version, its directory."""

    dist: str
    version: str
    path: Path

    @property
    def cuda_major(self) -> int:
        return int(re.search(r"cuda(\d+)", self.dist).group(1))  # type: ignore[union-attr]

    @property
    def python_dir(self) -> Path:
        return self.path / "python"

    @property
    def pjrt_dir(self) -> Path:
        return self.path / "pjrt"


def copies() -> list[Copy]:
    """The complete copies under root() (both parts renamed into place), CUDA 13 before 12."""
    try:
        names = sorted(os.listdir(root()))
    except OSError:
        return []
    found = []
    for name in names:
        m = _COPY.match(name)
        copy = Copy(m.group(1), m.group(3), root() / name) if m else None
        if copy is not None and copy.python_dir.is_dir() and copy.pjrt_dir.is_dir():
            found.append(copy)
    return sorted(found, key=lambda c: (-c.cuda_major, c.version))


def find(dist: str, version: str) -> Copy | None:
    """The copy of ``dist`` at ``version``, if complete."""
    return next((c for c in copies() if c.dist == dist and c.version == version), None)


def install(cuda_major: int, jaxlib_version: str, *, force: bool = False,
            python: str = sys.executable) -> tuple[Copy, bool]:
    """Install ``jax-cudaN-plugin`` and ``jax-cudaN-pjrt`` at ``jaxlib_version`` with pip
    (``python -m pip``, so pip's own settings and ``PIP_*`` variables apply) into a copy.

    Returns the copy and whether it was installed now (False: it was there already;
    ``force`` replaces it). Raises EnvironmentMismatch with pip's last error line
    when pip fails; nothing is left behind then.
    """
    import shutil  # here, not at import: every jaxlib user reads the copies (find, copies)
    import tempfile

    dist = f"jax-cuda{cuda_major}-plugin"
    existing = find(dist, jaxlib_version)
    if existing is not None and not force:
        return existing, False
    target = root() / f"{dist}-{jaxlib_version}"
    try:
        root().mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root()))
        staging.chmod(0o755)  # mkdtemp makes it private; the copy is read like site-packages
    except OSError as e:
        raise EnvironmentMismatch(f"cannot write the CUDA plugin's directory {root()}: {e.strerror}",
                                  hint=f"set {ENV} to a writable directory") from None
    try:
        for sub, package in (("python", dist), ("pjrt", f"jax-cuda{cuda_major}-pjrt")):
            pip_install(python, staging / sub, f"{package}=={jaxlib_version}")
        if not any((staging / "pjrt").rglob(LIBRARY)):
            raise EnvironmentMismatch(f"jax-cuda{cuda_major}-pjrt {jaxlib_version} has no {LIBRARY}")
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=root()))
            os.replace(target, old / "copy")
            shutil.rmtree(old, ignore_errors=True)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Copy(dist, jaxlib_version, target), True


def pip_install(python: str, target: Path, requirement: str) -> None:
    """``pip install --target`` of one requirement, without its dependencies."""
    # --no-deps: the CUDA plugin's only dependency is the pjrt package, installed beside it;
    # its with-cuda extra (NVIDIA's runtime) is what device-less compiles do without. libtpu
    # has none.
    cmd = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
           "--only-binary=:all:", "--no-compile", "--target", str(target), requirement]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("ERROR:")] or lines or [f"exit status {proc.returncode}"]
        raise EnvironmentMismatch(f"pip could not install {requirement}: {errors[-1]}",
                                  hint="pip's index settings (PIP_INDEX_URL, PIP_FIND_LINKS) apply")
