"""``mlirhlo tpu-plugin install``: libtpu at the installed jax's ``tpu`` pin, in the driver's
own directory where jax's backend discovery does not look (_native/libtpu.py)."""

from __future__ import annotations


def install(*, force: bool = False) -> str:
    """Install the driver's copy of libtpu (or say that site-packages' is used); the line to print."""
    from .._native import jaxlib as _jaxlib
    from .._native import libtpu

    _jaxlib.check_versions()
    found = libtpu.in_use()
    if found is not None and not found.copy:
        return f"libtpu {found.version} is installed in this environment; it is used as it is\n"
    copy, installed = libtpu.install(force=force)
    where = str(copy.library).rsplit("/libtpu/", 1)[0]
    return f"libtpu {copy.version} ({libtpu.jax_pin()}) {'installed in' if installed else 'is already in'} {where}\n"
