"""The driver's copy of jax's CUDA PJRT plugin (``mlirhlo cuda-plugin install``): device-less
CUDA compiles without a jax CUDA backend that needs NVIDIA's runtime (_native/plugin_copy.py)."""

from __future__ import annotations


def install(*, cuda: int | None = None, force: bool = False) -> str:
    """``mlirhlo cuda-plugin install``: the driver's copy of jax's CUDA plugin at jaxlib's
    version (_native/plugin_copy.py), for device-less CUDA without a jax CUDA backend.

    ``cuda``: the CUDA major (12, 13); default: the plugin in use's, else CUDA 13 where
    only CUDA 13's pip tools are installed, else 12. Returns the line to print.
    """
    from .._native import jaxlib as _jaxlib
    from .._native import plugin_copy
    from ..errors import EnvironmentMismatch, param
    from . import tools

    _jaxlib.check_versions()
    version = _jaxlib.jaxlib_version()
    plugin = _jaxlib.cuda_plugin()
    if cuda is None:
        if plugin.version is not None:
            cuda = plugin.cuda_major
        else:
            only13 = tools.pip_cuda_dir_for(13) is not None and tools.pip_cuda_dir_for(12) is None
            cuda = 13 if only13 else 12
    if cuda not in tools.PIP_TOOLS:
        raise EnvironmentMismatch(f"{param('cuda', cuda)} must be one of "
                                  + ", ".join(str(m) for m in sorted(tools.PIP_TOOLS)))
    dist = f"jax-cuda{cuda}-plugin"
    if plugin.copy is None and plugin.dist == dist and plugin.version == version:
        return f"{dist} {version} is installed in this environment (jax's own); it is used as it is\n"
    copy, installed = plugin_copy.install(cuda, version, force=force)
    return f"{dist} {version} {'installed in' if installed else 'is already in'} {copy.path}\n"
