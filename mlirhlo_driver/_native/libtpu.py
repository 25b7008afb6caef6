"""Which libtpu the driver's TPU compiles load, and the driver's own copy of it.

libtpu in site-packages is found by jax's backend discovery: on a machine without a TPU
the user's own ``jnp.zeros(3)`` then prints libtpu's start-up errors ("Failed to find host
bounds", an ``unexpected worker hostname`` trace). So, as for jax's CUDA plugin
(plugin_copy.py), ``mlirhlo tpu-plugin install`` has pip put libtpu, at the version jax's
``tpu`` extra pins, into this environment's ``share/mlirhlo-driver/tpu-plugins/`` (or
``$MLIRHLO_TPU_PLUGIN_DIR``), ``libtpu-<version>/libtpu/libtpu.so``, where jax never looks.
A copy is complete once renamed into place. A libtpu importable from site-packages (a TPU
VM's ``jax[tpu]``) is used instead, as it is.

Nothing here loads libtpu or imports jax: the driver loads it only in its own compile
process (xla.platforms.TpuTarget), never in the user's.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import EnvironmentMismatch
from . import plugin_copy

ENV = "MLIRHLO_TPU_PLUGIN_DIR"
DIST = "libtpu"
LIBRARY = "libtpu.so"
INSTALL_COMMAND = "mlirhlo tpu-plugin install"
_COPY = re.compile(r"^libtpu-(\d[\w.+]*)$")


def root() -> Path:
    """Where the copies live: ``$MLIRHLO_TPU_PLUGIN_DIR``, else ``<sys.prefix>/share/mlirhlo-driver/tpu-plugins``."""
    return plugin_copy.share_dir(ENV, "tpu-plugins")


@dataclass(frozen=True)
class LibTpu:
    """The libtpu in use: its version, its shared library, and whether it is the driver's copy."""

    version: str
    library: str
    copy: bool

    def describe(self) -> str:
        """--version's line."""
        where = f"the driver's copy, {Path(self.library).parent.parent}" if self.copy else "installed"
        return f"libtpu {self.version} ({where})"


@functools.cache
def jax_pin() -> str | None:
    """The libtpu requirement of the installed jax's ``tpu`` extra (``libtpu==0.0.50.*``), or
    None where jax has no such extra. Read from jax's metadata: each jax pins its own."""
    from importlib import metadata

    try:
        requires = metadata.requires("jax") or []
    except metadata.PackageNotFoundError:
        return None
    for req in requires:
        m = re.match(r"^\s*libtpu\s*(==\s*[\w.*+]+)?\s*;(.*)$", req)
        if m and re.search(r"extra\s*==\s*['\"]tpu['\"]", m.group(2)):
            return "libtpu" + (m.group(1) or "").replace(" ", "")
    return None


def pin_matches(version: str, pin: str | None) -> bool:
    """Whether ``version`` meets an ``==X.Y.*`` / ``==X.Y.Z`` pin (no pin: any)."""
    if pin is None or "==" not in pin:
        return True
    want = pin.split("==", 1)[1]
    if want.endswith(".*"):
        return version == want[:-2] or version.startswith(want[:-1])
    return version == want


def copies() -> list[tuple[str, Path]]:
    """(version, directory) of each complete copy under root(), newest first."""
    try:
        names = os.listdir(root())
    except OSError:
        return []
    found = []
    for name in names:
        m = _COPY.match(name)
        if m and (root() / name / "libtpu" / LIBRARY).is_file():
            found.append((m.group(1), root() / name))
    return sorted(found, key=lambda c: _version_key(c[0]), reverse=True)


# libtpu 0.0.34 (jax 0.9's pin) writes no static LLO profile textproto (a critical path and
# the bundles per fusion instead), and aborts its process writing them for v6e ("Dma latency
# model is currently only supported on VF/VL/VLP") and for some programs on v5e; 0.0.42 (jax
# 0.10's) writes the textprotos the kernels and static-profile stages read.
STATIC_PROFILE_SINCE = "0.0.42"


def writes_static_profile(found: LibTpu | None = None) -> bool:
    """Whether the libtpu in use (or ``found``) writes the static LLO profile the driver reads."""
    found = found or in_use()
    return found is None or _version_key(found.version)[:3] >= _version_key(STATIC_PROFILE_SINCE)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def _installed() -> LibTpu | None:
    """libtpu importable from this environment's site-packages, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(DIST)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        library = os.path.join(location, LIBRARY)
        if os.path.isfile(library):
            from importlib import metadata

            try:
                version = metadata.version(DIST)
            except metadata.PackageNotFoundError:
                version = "unknown"
            return LibTpu(version, library, copy=False)
    return None


def in_use() -> LibTpu | None:
    """The libtpu TPU compiles load: site-packages' (a TPU VM's jax[tpu]), else the driver's
    copy at jax's pin, else the newest copy there is; None without any."""
    installed = _installed()
    if installed is not None:
        return installed
    found = copies()
    pin = jax_pin()
    for version, path in found:
        if pin_matches(version, pin):
            return LibTpu(version, str(path / "libtpu" / LIBRARY), copy=True)
    if found:
        version, path = found[0]
        return LibTpu(version, str(path / "libtpu" / LIBRARY), copy=True)
    return None


def require() -> LibTpu:
    """:func:`in_use`, or EnvironmentMismatch naming the install command."""
    found = in_use()
    if found is None:
        raise EnvironmentMismatch("TPU compiles need libtpu, and none is installed",
                                  hint=f"run '{INSTALL_COMMAND}' (pip, {jax_pin() or 'libtpu'}, into the "
                                       "driver's own directory, out of jax's way)")
    return found


def version_line() -> str:
    """``--version``'s libtpu line: which one TPU compiles use, or how to get one."""
    found = in_use()
    if found is None:
        return f"libtpu not installed (TPU needs it: {INSTALL_COMMAND})"
    pin = jax_pin()
    line = found.describe()
    if found.copy and not pin_matches(found.version, pin):
        line += f" (jax pins {pin}: {INSTALL_COMMAND})"
    return line


def install(*, force: bool = False, python: str = sys.executable) -> tuple[LibTpu, bool]:
    """pip-install libtpu at jax's ``tpu`` pin into a copy under root(). Returns the copy and
    whether it was installed now (False: there already; ``force`` replaces it). Raises
    EnvironmentMismatch with pip's last error line; a failed install leaves nothing."""
    import shutil
    import tempfile

    pin = jax_pin()
    if pin is None:
        raise EnvironmentMismatch("the installed jax has no 'tpu' extra naming a libtpu",
                                  hint="pip install 'jax[tpu]' on a TPU VM")
    for version, path in copies():
        if pin_matches(version, pin) and not force:
            return LibTpu(version, str(path / "libtpu" / LIBRARY), copy=True), False
    try:
        root().mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".libtpu.", dir=root()))
        staging.chmod(0o755)
    except OSError as e:
        raise EnvironmentMismatch(f"cannot write the TPU plugin's directory {root()}: {e.strerror}",
                                  hint=f"set {ENV} to a writable directory") from None
    try:
        plugin_copy.pip_install(python, staging, pin)
        infos = [p.name for p in staging.glob("libtpu-*.dist-info")]
        m = re.match(r"^libtpu-(.+)\.dist-info$", infos[0]) if infos else None
        if m is None or not (staging / "libtpu" / LIBRARY).is_file():
            raise EnvironmentMismatch(f"pip's {pin} has no libtpu/{LIBRARY}")
        version = m.group(1)
        target = root() / f"libtpu-{version}"
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=".libtpu.old.", dir=root()))
            os.replace(target, old / "copy")
            shutil.rmtree(old, ignore_errors=True)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return LibTpu(version, str(target / "libtpu" / LIBRARY), copy=True), True
