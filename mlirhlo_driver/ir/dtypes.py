"""XLA's element types, one row each: the one table every other module reads.

Each :class:`ElementType` gives a ``PrimitiveType`` (xla/xla_data.proto) its
enum name and number, its HLO text spelling, its MLIR spelling and its
numpy / ml_dtypes dtype name. tests/ir/test_dtypes.py checks the table against
the installed jaxlib: every value of its enum, the spellings its HLO parser
and StableHLO converter use, the dtypes jax lowers to them, and the bytes of
its literals.

Import-light: nothing here imports numpy, ml_dtypes or jax until
:func:`np_dtype` is called (the listing commands import this without them).

Public API::

    TYPES                        every ElementType, in the enum's declaration order
    ARRAY_TYPES                  those a tensor can hold (kind is not None)
    BY_NAME / BY_HLO / BY_NUMPY  name -> ElementType ("F8E4M3FN", "f8e4m3fn", "float8_e4m3fn")
    BY_MLIR                      MLIR element type -> ElementType ("i1" is PRED, as in XLA)
    np_dtype(numpy_name) -> numpy.dtype     ml_dtypes' types included
    from_ml_dtypes(numpy_name) -> bool      whether only ml_dtypes names it (.npz cannot)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import EnvironmentMismatch, InputError

__all__ = [
    "ARRAY_TYPES",
    "BY_HLO",
    "BY_MLIR",
    "BY_NAME",
    "BY_NUMPY",
    "TYPES",
    "ElementType",
    "from_ml_dtypes",
    "np_dtype",
]


@dataclass(frozen=True)
class ElementType:
    name: str           # PrimitiveType enum name: "F8E4M3FN"
    number: int         # its enum number (what a ShapeProto's element_type holds)
    hlo: str            # HLO text: "f8e4m3fn" as in f8e4m3fn[2,3] (XLA's LowercasePrimitiveTypeName)
    mlir: str | None    # MLIR type: "f8E4M3FN", "ui8", "complex<f32>"; None where there is none
    numpy: str | None   # numpy / ml_dtypes dtype name; None where neither has one
    bits: int           # width of one element (XLA's BitWidth: 8 for PRED); 0 for non-arrays
    kind: str | None    # "pred", "signed", "unsigned", "float", "complex"; None: not an array element


# In the order xla_data.proto declares them. Not listed: PRIMITIVE_TYPE_INVALID
# (0, the proto3 default: no type at all).
# Quirks kept as XLA has them: S1 converts to MLIR i1 like PRED (BY_MLIR reads
# i1 as PRED, as XLA's MLIR -> HLO conversion does); tuples and buffers print
# in HLO text as "(...)" and "b(...)", their names below being what XLA's
# primitive_util calls them; OPAQUE_TYPE is "opaque" there.
_ROWS = (
    # name           number  hlo             mlir                 numpy                 bits kind
    ("PRED",              1, "pred",          "i1",               "bool",                  8, "pred"),
    ("S1",               30, "s1",            "i1",               "int1",                  1, "signed"),
    ("S2",               26, "s2",            "i2",               "int2",                  2, "signed"),
    ("S4",               21, "s4",            "i4",               "int4",                  4, "signed"),
    ("S8",                2, "s8",            "i8",               "int8",                  8, "signed"),
    ("S16",               3, "s16",           "i16",              "int16",                16, "signed"),
    ("S32",               4, "s32",           "i32",              "int32",                32, "signed"),
    ("S64",               5, "s64",           "i64",              "int64",                64, "signed"),
    ("U1",               31, "u1",            "ui1",              "uint1",                 1, "unsigned"),
    ("U2",               27, "u2",            "ui2",              "uint2",                 2, "unsigned"),
    ("U4",               22, "u4",            "ui4",              "uint4",                 4, "unsigned"),
    ("U8",                6, "u8",            "ui8",              "uint8",                 8, "unsigned"),
    ("U16",               7, "u16",           "ui16",             "uint16",               16, "unsigned"),
    ("U32",               8, "u32",           "ui32",             "uint32",               32, "unsigned"),
    ("U64",               9, "u64",           "ui64",             "uint64",               64, "unsigned"),
    ("F16",              10, "f16",           "f16",              "float16",              16, "float"),
    ("F32",              11, "f32",           "f32",              "float32",              32, "float"),
    ("BF16",             16, "bf16",          "bf16",             "bfloat16",             16, "float"),
    ("F64",              12, "f64",           "f64",              "float64",              64, "float"),
    ("F8E5M2",           19, "f8e5m2",        "f8E5M2",           "float8_e5m2",           8, "float"),
    ("F8E4M3",           28, "f8e4m3",        "f8E4M3",           "float8_e4m3",           8, "float"),
    ("F8E4M3FN",         20, "f8e4m3fn",      "f8E4M3FN",         "float8_e4m3fn",         8, "float"),
    ("F8E4M3B11FNUZ",    23, "f8e4m3b11fnuz", "f8E4M3B11FNUZ",    "float8_e4m3b11fnuz",    8, "float"),
    ("F8E3M4",           29, "f8e3m4",        "f8E3M4",           "float8_e3m4",           8, "float"),
    ("F8E5M2FNUZ",       24, "f8e5m2fnuz",    "f8E5M2FNUZ",       "float8_e5m2fnuz",       8, "float"),
    ("F8E4M3FNUZ",       25, "f8e4m3fnuz",    "f8E4M3FNUZ",       "float8_e4m3fnuz",       8, "float"),
    ("F4E2M1FN",         32, "f4e2m1fn",      "f4E2M1FN",         "float4_e2m1fn",         4, "float"),
    ("F8E8M0FNU",        33, "f8e8m0fnu",     "f8E8M0FNU",        "float8_e8m0fnu",        8, "float"),
    ("F6E3M2FN",         35, "f6e3m2fn",      "f6E3M2FN",         "float6_e3m2fn",         6, "float"),
    ("F6E2M3FN",         36, "f6e2m3fn",      "f6E2M3FN",         "float6_e2m3fn",         6, "float"),
    ("C64",              15, "c64",           "complex<f32>",     "complex64",            64, "complex"),
    ("C128",             18, "c128",          "complex<f64>",     "complex128",          128, "complex"),
    ("TUPLE",            13, "tuple",         None,               None,                    0, None),
    ("OPAQUE_TYPE",      14, "opaque",        None,               None,                    0, None),
    # StableHLO's token is a type of its own, not a tensor element.
    ("TOKEN",            17, "token",         "!stablehlo.token", None,                    0, None),
    ("BUFFER",           34, "buffer",        None,               None,                    0, None),
)

TYPES: tuple[ElementType, ...] = tuple(ElementType(*row) for row in _ROWS)
ARRAY_TYPES: tuple[ElementType, ...] = tuple(t for t in TYPES if t.kind is not None)

BY_NAME: dict[str, ElementType] = {t.name: t for t in TYPES}
BY_HLO: dict[str, ElementType] = {t.hlo: t for t in TYPES}
BY_NUMPY: dict[str, ElementType] = {t.numpy: t for t in TYPES if t.numpy is not None}
# First row wins: PRED before S1 for "i1".
BY_MLIR: dict[str, ElementType] = {}
for _t in TYPES:
    if _t.mlir is not None:
        BY_MLIR.setdefault(_t.mlir, _t)
del _t

# The dtypes numpy itself names; every other numpy name above is ml_dtypes'.
_NUMPY_BUILTIN = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"})


def from_ml_dtypes(numpy_name: str) -> bool:
    """Whether the dtype is one of ml_dtypes' (bfloat16, float8_*, int4, ...), which
    numpy's own formats (.npy/.npz) cannot name."""
    return numpy_name in BY_NUMPY and numpy_name not in _NUMPY_BUILTIN


def np_dtype(numpy_name: str) -> Any:
    """The ``numpy.dtype`` of a dtype name in the table (ml_dtypes' types included)."""
    import numpy as np

    if numpy_name in _NUMPY_BUILTIN:
        return np.dtype(numpy_name)
    if numpy_name not in BY_NUMPY:
        raise InputError(f"no XLA element type has numpy dtype '{numpy_name}'")
    import ml_dtypes

    found = getattr(ml_dtypes, numpy_name, None)
    if found is None:
        # ml_dtypes gains types as XLA does: an older one lacks the newest.
        raise EnvironmentMismatch(
            f"the installed ml_dtypes {getattr(ml_dtypes, '__version__', '(version unknown)')} "
            f"has no {numpy_name} (XLA's {BY_NUMPY[numpy_name].name})", hint="upgrade ml_dtypes")
    return np.dtype(found)
