"""XLA's element types as the installed jaxlib has them, for the tests of ir/dtypes.py,
ir/literals.py and inputs/loader.py (each checks its part against the same tables)."""

from __future__ import annotations

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.ir import dtypes, protos

ARRAYS = dtypes.ARRAY_TYPES

HLO_MODULE = "xla.HloModuleProto"


def _enum():
    protos.message_class("xla.LiteralProto")  # loads xla/xla_data.proto into the pool
    return protos.pool().FindEnumTypeByName("xla.PrimitiveType")


# The installed jaxlib's element types: the table also holds those of newer jaxlibs
# in the supported range, which an older XLA cannot parse, convert or hold.
INSTALLED = {v.name for v in _enum().values}

NEWEST = _jaxlib.jaxlib_version() == _jaxlib.SUPPORTED_MAX

HERE = [t for t in ARRAYS if t.name in INSTALLED]
