"""Locate the CUDA tools device-less CUDA compiles need: ptxas, libdevice, nvdisasm, ...

XLA runs ``ptxas`` even when it compiles without a GPU, and links
``nvvm/libdevice/libdevice.10.bc`` for math functions. pip has both for each
CUDA major, so no CUDA toolkit is needed: the ``cuda12`` extra installs
``nvidia-cuda-nvcc-cu12`` (``nvidia/cuda_nvcc``: ptxas 12.9, libdevice), the
``cuda13`` extra ``nvidia-cuda-nvcc`` and ``nvidia-nvvm`` (``nvidia/cu13``).
The tools used are the ones matching the CUDA major of the jax CUDA plugin in
use (``_jaxlib.cuda_plugin``). XLA looks for ptxas in ``xla_gpu_cuda_data_dir``
first, then on PATH, then in ``/usr/local/cuda``, ``/opt/cuda`` and pip's copy;
a system ptxas of another CUDA major on PATH would win (CUDA 13's cannot target
sm_60/sm_70). So the driver sets ``xla_gpu_cuda_data_dir`` to pip's copy unless
the user chose a directory.

Everything here is pure Python (no jax import). Each ptxas is asked once for
its version and the ``--gpu-name`` values it accepts; answers are cached in
process and on disk (keyed by the binary's path, size and mtime).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from dataclasses import dataclass

from ..errors import ToolchainError


@dataclass(frozen=True)
class PipCuda:
    """pip's CUDA tools for one CUDA major: where they install and what installs them."""

    major: int
    subdir: str  # under site-packages/nvidia/: bin/ptxas, nvvm/libdevice/
    package: str  # the wheel with ptxas
    requirements: tuple[str, ...]  # ptxas and libdevice (pyproject's cuda<major> extra)

    @property
    def requirement(self) -> str:
        return " ".join(f"'{r}'" for r in self.requirements)


PIP_TOOLS = {
    12: PipCuda(12, "cuda_nvcc", "nvidia-cuda-nvcc-cu12", ("nvidia-cuda-nvcc-cu12>=12.9,<13",)),
    # nvidia-cuda-nvcc 13 has ptxas but no libdevice: that is nvidia-nvvm's.
    13: PipCuda(13, "cu13", "nvidia-cuda-nvcc", ("nvidia-cuda-nvcc>=13.0,<14", "nvidia-nvvm>=13.0,<14")),
}
DATA_DIR_FLAG = "xla_gpu_cuda_data_dir"
LIBDEVICE = os.path.join("nvvm", "libdevice", "libdevice.10.bc")
# Toolkit roots XLA itself tries after PATH (tsl's CandidateCudaRoots).
SYSTEM_ROOTS = ("/usr/local/cuda", "/opt/cuda")
# CUDA 13 dropped sm_50..sm_72 (Maxwell, Pascal, Volta) from ptxas and the offline tools.
CUDA13_OLDEST_SM = 75

__all__ = [
    "PIP_TOOLS", "DATA_DIR_FLAG", "PipCuda", "Ptxas",
    "cuda_major", "pip_tools", "fix_hint", "pip_cuda_dir", "pip_cuda_dir_for", "cuda_data_dir",
    "ptxas", "all_ptxas", "libdevice", "find_tool", "check_target", "translate_xla_error",
]


def cuda_major() -> int:
    """The CUDA major version (12, 13) of the jax CUDA plugin in use."""
    from .._native import jaxlib as _jaxlib

    return _jaxlib.cuda_plugin().cuda_major


def pip_tools(major: int | None = None) -> PipCuda:
    """pip's tools for CUDA ``major`` (default: the plugin's); CUDA 12's for an unknown major."""
    return PIP_TOOLS.get(cuda_major() if major is None else major, PIP_TOOLS[12])


def fix_hint(major: int | None = None) -> str:
    """What to install (or pass) when there is no ptxas/libdevice for the plugin's CUDA."""
    tools = pip_tools(major)
    return (f"pip install {tools.requirement} (CUDA {tools.major}'s ptxas and libdevice, for "
            f"jax-cuda{tools.major}-plugin), or pass --{DATA_DIR_FLAG}=DIR for a CUDA toolkit DIR "
            f"with bin/ptxas")


@dataclass(frozen=True)
class Ptxas:
    """One ptxas binary: where it is, its version and the sm_XX targets it accepts."""

    path: str
    version: tuple[int, ...]  # (12, 9, 86)
    archs: tuple[str, ...]  # sm_XX names from its --gpu-name list, oldest first
    source: str  # how it was found: "pip nvidia-cuda-nvcc-cu12", "PATH", ...

    @property
    def version_str(self) -> str:
        return ".".join(map(str, self.version))

    def can_target(self, sm: str) -> bool:
        return sm in self.archs

    def arch_range(self) -> str:
        return f"{self.archs[0]}..{self.archs[-1]}" if self.archs else "nothing"

    def describe(self) -> str:
        return f"ptxas {self.version_str} ({self.path}, {self.source})"

    def require(self, sm: str, gpu: str | None = None) -> None:
        """Raise ToolchainError unless this ptxas can assemble for ``sm`` (``gpu``: the
        spec, for the message)."""
        if self.can_target(sm):
            return
        others = [p for p in all_ptxas() if p.path != self.path and p.can_target(sm)]
        dropped = self.version >= (13,) and 0 <= sm_number(sm) < CUDA13_OLDEST_SM
        if dropped:
            arch = _ARCH_NAMES.get(sm_number(sm) // 10, "pre-Turing") + (f"; {gpu}" if gpu else "")
            message = f"CUDA 13 dropped {sm} ({arch}): {self.describe()} targets {self.arch_range()}"
        else:
            message = f"{self.describe()} cannot target {sm}: {_why(self, sm)}"
        if others:
            hint = (f"ptxas {others[0].version_str} at {others[0].path} can: pass "
                    f"--{DATA_DIR_FLAG}={_data_dir_of(others[0].path) or 'DIR'}")
        elif dropped and cuda_major() >= 13:
            hint = cuda12_hint()
        elif self.source == f"pip {pip_tools().package}":
            hint = (f"no ptxas here targets {sm}; pass --{DATA_DIR_FLAG}=DIR for a CUDA "
                    f"toolkit DIR whose bin/ptxas does")
        else:
            hint = fix_hint()
        raise ToolchainError(message, hint=hint)

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "version": self.version_str, "source": self.source,
                "archs": list(self.archs)}


_ARCH_NAMES = {5: "Maxwell", 6: "Pascal", 7: "Volta"}


def cuda12_hint() -> str:
    """The ways to compile for a GPU CUDA 13 dropped, under jax-cuda13-plugin.

    Its XLA compiles sm_60/sm_70 with a CUDA 12 ptxas (measured with 0.12.0.1:
    PTX 8.8 and cubins from ptxas 12.9), so a CUDA 12 data dir works as well.
    """
    return (f"use a CUDA 12 environment: a venv with pip install 'mlirhlo-driver[cuda12]' and no "
            f"jax-cuda13-plugin; or pass --{DATA_DIR_FLAG}=DIR for a CUDA 12 toolkit DIR with "
            f"bin/ptxas, e.g. DIR={os.path.join(_site_nvidia(), PIP_TOOLS[12].subdir)} after "
            f"pip install {PIP_TOOLS[12].requirement}")


def _site_nvidia() -> str:
    """Where pip's nvidia/ namespace directory is (or would be) here."""
    roots = _nvidia_roots()
    if roots:
        return roots[0]
    import sysconfig

    return os.path.join(sysconfig.get_paths()["purelib"], "nvidia")


_SM_NAME = re.compile(r"sm_(\d+)[a-z]?")


def sm_number(sm: str) -> int:
    """``sm_90a`` -> 90, ``sm_100f`` -> 100: the number of an ``sm_NN[a-z]`` name.

    Any other name (``compute_90``, ``sm90``, ``9.0``) gives -1, never an error:
    the callers compare it while choosing a tool or explaining why none fits.
    -1 sorts below every SM and equals none (a cubin's ELF header holds 0..255):
    such a name matches no cubin, and the tool checks take it as older than any.
    """
    m = _SM_NAME.fullmatch(sm)
    return int(m.group(1)) if m else -1


def _why(p: Ptxas, sm: str) -> str:
    nums = [sm_number(a) for a in p.archs]
    n = sm_number(sm)
    if n < 0:
        return "not an sm_NN name"
    if nums and n > max(nums):
        return f"too old (newest target {p.archs[-1]})"
    if nums and n < min(nums):
        return f"too new (oldest target {p.archs[0]})"
    return f"not among its targets ({p.arch_range()})"


# ------------------------------------------------------------------ locations

def pip_cuda_dir_for(major: int) -> str | None:
    """pip's directory for CUDA ``major`` with bin/ptxas (nvidia/cuda_nvcc, nvidia/cu13), if
    installed. nvidia/cu13 without ptxas (only nvidia-cuda-nvdisasm, say) does not count."""
    tools = PIP_TOOLS.get(major)
    for root in _nvidia_roots() if tools else []:
        d = os.path.join(root, tools.subdir)
        if os.path.isfile(os.path.join(d, "bin", "ptxas")):
            return d
    return None


def pip_cuda_dir() -> str | None:
    """pip's CUDA tools directory for the plugin in use (bin/ptxas, nvvm/libdevice), if installed."""
    return pip_cuda_dir_for(cuda_major())


def _pip_dirs() -> list[tuple[str, PipCuda]]:
    """Every pip CUDA tools directory here, the plugin's CUDA major first."""
    major = cuda_major()
    out = []
    for m in sorted(PIP_TOOLS, key=lambda m: m != major):
        d = pip_cuda_dir() if m == major else pip_cuda_dir_for(m)
        if d is not None:
            out.append((d, PIP_TOOLS[m]))
    return out


def _nvidia_roots() -> list[str]:
    """Directories of the ``nvidia`` namespace package (pip's CUDA wheels)."""
    return list(_find_nvidia_roots())


@functools.cache
def _find_nvidia_roots() -> tuple[str, ...]:
    from importlib import util

    try:
        spec = util.find_spec("nvidia")
    except (ImportError, ValueError):
        return ()
    if spec is None or not spec.submodule_search_locations:
        return ()
    return tuple(str(p) for p in spec.submodule_search_locations)


def _system_dirs() -> list[str]:
    """CUDA toolkits installed outside pip: XLA's fixed roots, then the one above PATH's ptxas."""
    out = [d for d in SYSTEM_ROOTS if os.path.isfile(os.path.join(d, "bin", "ptxas"))]
    on_path = shutil.which("ptxas")
    if on_path:
        d = _data_dir_of(on_path)
        if d and d not in out:
            out.append(d)
    return out


def _data_dir_of(ptxas_path: str) -> str | None:
    """The toolkit directory holding ``ptxas_path`` (its bin/..), if it has libdevice."""
    d = os.path.dirname(os.path.dirname(os.path.realpath(ptxas_path)))
    return d if os.path.isfile(os.path.join(d, LIBDEVICE)) else None


def _searched(user_dir: str | None = None) -> list[str]:
    """Where a ptxas was looked for, in XLA's order (for error messages)."""
    places = [os.path.join(user_dir, "bin", "ptxas")] if user_dir else []
    places.append("PATH")
    places += [os.path.join(d, "bin", "ptxas") for d in SYSTEM_ROOTS]
    subdir = pip_tools().subdir
    places += [os.path.join(r, subdir, "bin", "ptxas") for r in _nvidia_roots()] \
        or [f"pip's {pip_tools().package} (not installed)"]
    return places


def cuda_data_dir(user_dir: str | None = None) -> tuple[str, str]:
    """The directory to hand XLA as ``xla_gpu_cuda_data_dir``, and where it came from.

    The user's choice wins; then pip's tools for the plugin's CUDA major; then a
    system CUDA toolkit (with bin/ptxas and libdevice); then pip's tools of the
    other CUDA major. Raises ToolchainError when there is none.
    """
    if user_dir:
        return user_dir, f"--{DATA_DIR_FLAG}"
    pip = _pip_dirs()
    if pip and pip[0][1].major == cuda_major():
        return pip[0][0], f"pip {pip[0][1].package}"
    for d in _system_dirs():
        if os.path.isfile(os.path.join(d, LIBDEVICE)):
            return d, "system CUDA toolkit"
    if pip:
        return pip[0][0], f"pip {pip[0][1].package}"
    raise ToolchainError("no CUDA toolkit for device-less CUDA compiles: no ptxas and libdevice "
                         "in " + ", ".join(_searched()), hint=fix_hint())


def _candidates(data_dir: str | None, source: str | None = None) -> list[tuple[str, str]]:
    """ptxas paths in the order XLA tries them, with a source label each (``source``: the
    data dir's, as cuda_data_dir named it)."""
    out: list[tuple[str, str]] = []
    pip = _pip_dirs()
    if data_dir:
        label = source or next((f"pip {t.package}" for d, t in pip if d == data_dir), f"--{DATA_DIR_FLAG}")
        out.append((os.path.join(data_dir, "bin", "ptxas"), label))
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d:
            out.append((os.path.join(d, "ptxas"), "PATH"))
    out += [(os.path.join(d, "bin", "ptxas"), "system CUDA toolkit") for d in SYSTEM_ROOTS]
    out += [(os.path.join(d, "bin", "ptxas"), f"pip {t.package}") for d, t in pip]
    return out


def ptxas(data_dir: str | None = None, source: str | None = None) -> Ptxas:
    """The ptxas XLA will run when given ``xla_gpu_cuda_data_dir=data_dir``.

    Without ``data_dir``, the directory :func:`cuda_data_dir` picks. Like XLA,
    a directory without bin/ptxas falls through to PATH and the fixed roots.
    Raises ToolchainError when no ptxas there runs.
    """
    if data_dir is None:
        data_dir, source = cuda_data_dir()
    for path, label in _candidates(data_dir, source):
        found = _probe_file(path)
        if found is not None:
            return Ptxas(path, found[0], found[1], label)
    raise ToolchainError("no usable ptxas (XLA runs it even device-less); searched "
                         + ", ".join(_searched(data_dir)), hint=fix_hint())


def all_ptxas(user_dir: str | None = None) -> list[Ptxas]:
    """Every distinct working ptxas here: the user's, PATH's, the system toolkits', pip's."""
    seen: set[object] = set()
    out: list[Ptxas] = []
    for path, source in _candidates(user_dir):
        real = os.path.realpath(path)
        if real in seen:
            continue
        found = _probe_file(path)
        # A wrapper script on PATH and the toolkit binary it runs report the same version.
        if found is not None and found[0] not in seen:
            seen.update((real, found[0]))
            out.append(Ptxas(path, found[0], found[1], source))
    return out


def libdevice(data_dir: str | None = None) -> str | None:
    """libdevice.10.bc as XLA finds it: the data dir (default: :func:`cuda_data_dir`'s)
    first, then its fixed roots and pip's. None if there is none."""
    if data_dir is None:
        try:
            data_dir = cuda_data_dir()[0]
        except ToolchainError:
            data_dir = None
    roots = [data_dir] if data_dir else []
    roots += [*SYSTEM_ROOTS, *(d for d, _ in _pip_dirs())]
    for r in roots:
        path = os.path.join(r, LIBDEVICE)
        if os.path.isfile(path):
            return path
    return None


def pip_bin_dirs() -> list[str]:
    """bin/ of every pip nvidia package, the plugin's CUDA major's first (nvidia/cu13/bin holds
    CUDA 13's nvdisasm and cuobjdump even beside CUDA 12's nvidia/cuda_nvcc)."""
    first = pip_tools().subdir
    out = []
    for root in _nvidia_roots():
        try:
            subs = sorted(os.listdir(root), key=lambda s: (s != first, s))
        except OSError:
            continue
        out += [os.path.join(root, sub, "bin") for sub in subs]
    return out


def find_tool(name: str, data_dir: str | None = None) -> str | None:
    """An executable CUDA tool (ptxas, nvdisasm, cuobjdump, ...): the data dir's bin/,
    pip's nvidia packages (the plugin's CUDA major first), PATH, then the system
    toolkits. None if absent."""
    dirs = [os.path.join(data_dir, "bin")] if data_dir else []
    for d in dirs + pip_bin_dirs():
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found:
        return found
    for d in SYSTEM_ROOTS:
        path = os.path.join(d, "bin", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def check_target(sm: str, user_dir: str | None = None, gpu: str | None = None) -> Ptxas:
    """The ptxas a device-less compile for ``sm`` will use; ToolchainError if it cannot target
    it (``gpu``: the spec, for the message)."""
    p = ptxas(*cuda_data_dir(user_dir))
    p.require(sm, gpu)
    return p


# ------------------------------------------------------------------ probing

def _probe_file(path: str) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None
    return _probe(path, st.st_size, st.st_mtime_ns, st.st_ino)


@functools.lru_cache(maxsize=None)
def _probe(path: str, size: int, mtime_ns: int, ino: int) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """(version, sm targets) of the ptxas at ``path``, or None if it does not run."""
    key = f"{os.path.realpath(path)}|{size}|{mtime_ns}|{ino}"
    # A wrapper script's stat says nothing about the binary it runs: never cache it on disk.
    cacheable = not _is_script(path)
    cache = _read_cache() if cacheable else {}
    hit = cache.get(key)
    if hit is not None:
        return tuple(hit["version"]), tuple(hit["archs"])
    result = _run_ptxas(path)
    if result is not None and cacheable:
        cache[key] = {"version": list(result[0]), "archs": list(result[1])}
        _write_cache(cache)
    return result


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return True


def _run_ptxas(path: str) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    import subprocess

    # --version and --help together: each is one short process, run side by side.
    try:
        procs = [subprocess.Popen([path, arg], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL)
                 for arg in ("--version", "--help")]
    except OSError:
        return None
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            return None
        outs.append(out.decode("utf-8", "replace"))
    m = re.search(r"release [\d.]+, V(\d+(?:\.\d+)+)", outs[0])
    if not m:
        return None
    return tuple(int(x) for x in m.group(1).split(".")), _archs_from_help(outs[1])


def _archs_from_help(text: str) -> tuple[str, ...]:
    """The sm_XX values listed under ``--gpu-name`` in ``ptxas --help``."""
    m = re.search(r"--gpu-name.*?Allowed values for this option:(.*?)Default value", text, re.S)
    if not m:
        return ()
    names = set(re.findall(r"'(sm_\d+[a-z]?)'", m.group(1)))
    return tuple(sorted(names, key=lambda s: (sm_number(s), s)))


def _cache_path() -> str:
    from ..resources import cache_dir

    return str(cache_dir("ptxas-probe.json"))


def _read_cache() -> dict[str, dict[str, list]]:
    try:
        with open(_cache_path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(cache: dict[str, dict[str, list]]) -> None:
    path = _cache_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(cache, f)
        os.replace(tmp, path)
    except OSError:
        pass


# ------------------------------------------------------- XLA's own complaints

_NO_PTXAS = re.compile(r"Couldn't find a suitable version of ptxas|No PTX compilation provider")
_NO_LIBDEVICE = re.compile(r"libdevice not found at (\S+)")
_TOO_OLD = re.compile(r"(\S*ptxas)\S* too old")
# jaxlib 0.12's autotuner reports only this when no kernel links (no libdevice, say).
_NO_CONFIG_COMPILED = re.compile(r"All supported configs failed to compile")


def translate_xla_error(message: str, native_log: str = "", data_dir: str | None = None,
                        sm: str | None = None) -> ToolchainError | None:
    """XLA's multi-line report about missing CUDA tools, as one ToolchainError (else None)."""
    text = message + "\n" + native_log
    where = f" (xla_gpu_cuda_data_dir={data_dir})" if data_dir else ""
    if _NO_PTXAS.search(text):
        return ToolchainError("XLA found no usable ptxas (it runs ptxas even device-less); "
                              "searched " + ", ".join(_searched(data_dir)), hint=fix_hint())
    if _NO_LIBDEVICE.search(text) or (_NO_CONFIG_COMPILED.search(text) and libdevice(data_dir) is None):
        # XLA names only "./libdevice.10.bc", its last resort; say what it needs instead.
        return ToolchainError(f"XLA found no libdevice ({LIBDEVICE}, needed for math "
                              f"functions){where}", hint=fix_hint())
    m = _TOO_OLD.search(text)
    if m:
        target = f" {sm}" if sm else " this GPU"
        return ToolchainError(f"{m.group(1)} cannot target{target} (XLA: ptxas too old){where}",
                              hint=fix_hint())
    return None


# ------------------------------------------------------------- nvdisasm and tool paths

def triton_bin_dirs() -> list[str]:
    """triton/backends/nvidia/bin of an installed triton (found, never imported)."""
    from importlib import util

    try:
        spec = util.find_spec("triton")
    except (ImportError, ValueError):
        return []
    roots = (spec.submodule_search_locations or []) if spec else []
    return [os.path.join(root, "backends", "nvidia", "bin") for root in roots]


def nvdisasm_searched(data_dir: str | None) -> list[str]:
    """Where nvdisasm is looked for, in order (for error messages)."""
    places = [os.path.join(data_dir, "bin")] if data_dir else []
    places += ["pip's nvidia/*/bin", "PATH", *(os.path.join(d, "bin") for d in SYSTEM_ROOTS)]
    return places + (triton_bin_dirs() or ["triton/backends/nvidia/bin (triton not installed)"])


def nvdisasm_candidates(data_dir: str | None) -> list[str]:
    """Every nvdisasm here, in the order tried: the CUDA data dir, pip's nvidia
    packages (the plugin's CUDA major first), PATH, the system toolkits, then the
    CUDA 12 copy Triton bundles."""
    dirs = [os.path.join(data_dir, "bin")] if data_dir else []
    dirs += pip_bin_dirs()
    dirs += [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    dirs += [os.path.join(d, "bin") for d in SYSTEM_ROOTS]
    dirs += triton_bin_dirs()
    out: list[str] = []
    for d in dirs:
        path = os.path.join(d, "nvdisasm")
        real = os.path.realpath(path)
        if os.path.isfile(path) and os.access(path, os.X_OK) and real not in out:
            out.append(real)
    return out


def tool_paths(data_dir: str | None = None) -> list[str]:
    """Every ptxas and nvdisasm the CUDA stages may run here, in the order tried: what
    the stage cache key fingerprints (by stat; no process is started). Here, not in
    binaries.py, so that a cached stage's key imports no more than this module."""
    ptxas = [path for path, _ in _candidates(data_dir or pip_cuda_dir()) if os.path.isfile(path)]
    return ptxas + nvdisasm_candidates(data_dir)
