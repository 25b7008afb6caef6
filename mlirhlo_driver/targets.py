"""Compile targets, for every front-end and the Python API: the platform classes and the
resolver (``xla.platforms``), and the CUDA tools a CUDA target uses (``--version``).

Nothing here imports jax or jaxlib.
"""

from __future__ import annotations

from typing import Any

from .errors import DriverError
from .xla.platforms import (
    AUTOTUNE_FLAG,
    PLATFORMS,
    TARGET_CONFIG_FLAG,
    CpuTarget,
    CudaTarget,
    Target,
    Targets,
    TpuTarget,
    autotune_file,
    debug_options,
    platform_name,
    resolve,
)

__all__ = ["AUTOTUNE_FLAG", "PLATFORMS", "TARGET_CONFIG_FLAG", "CpuTarget", "CudaTarget", "Target", "Targets", "TpuTarget",
           "autotune_file", "cuda_tool_lines", "debug_options", "platform_name", "ptxas_in_use", "resolve"]


def _user_cuda_dir() -> str | None:
    """The CUDA data dir a user set in XLA_FLAGS; a malformed XLA_FLAGS does not matter here."""
    from .cuda import tools as cuda_tools
    from .xla import flags as xla_flags

    try:
        return xla_flags.from_environment().get(cuda_tools.DATA_DIR_FLAG) or None
    except DriverError:
        return None


def ptxas_in_use() -> tuple[Any, list[Any], str]:
    """(the ptxas XLA will run for CUDA targets, the other ones found, why there is none)."""
    from .cuda import tools as cuda_tools

    user_dir = _user_cuda_dir()
    try:
        ptxas = cuda_tools.ptxas(*cuda_tools.cuda_data_dir(user_dir))
    except DriverError as e:
        return None, cuda_tools.all_ptxas(), e.format().removeprefix("error: ")
    others = [p for p in cuda_tools.all_ptxas(user_dir) if p.path != ptxas.path
              and p.version != ptxas.version]
    return ptxas, others, ""


def cuda_tool_lines(ptxas: Any) -> list[str]:
    """--version's lines for the libdevice XLA links and the nvdisasm 'sass' runs; a second
    nvdisasm line for sm_60/sm_70 where the ptxas in use can target them (CUDA 12 only)."""
    from .cuda import binaries as cuda_binaries
    from .cuda import tools as cuda_tools

    user_dir = _user_cuda_dir()
    try:
        data_dir = cuda_tools.cuda_data_dir(user_dir)[0]
    except DriverError:
        data_dir = user_dir
    found = cuda_tools.libdevice(data_dir)
    lines = [f"libdevice {found}" if found else f"libdevice none ({cuda_tools.fix_hint()})"]
    newest = ptxas.archs[-1] if ptxas is not None and ptxas.archs else "sm_90a"
    try:
        main = cuda_binaries.nvdisasm_for(newest, user_dir)
        lines.append(f"nvdisasm {main.version_str} {main.path}")
    except DriverError as e:
        main = None
        lines.append(f"nvdisasm none usable: {e.format().removeprefix('error: ')}")
    if ptxas is not None and ptxas.can_target("sm_70"):
        try:
            legacy = cuda_binaries.nvdisasm_for("sm_70", user_dir)
            if main is None or legacy.path != main.path:
                lines.append(f"nvdisasm {legacy.version_str} {legacy.path} (for sm_60/sm_70)")
        except DriverError:
            lines.append(f"nvdisasm for sm_60/sm_70 none ({cuda_binaries.LEGACY_SASS_HINT})")
    return lines
