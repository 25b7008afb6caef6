"""XLA literals (``xla.LiteralProto``) as numpy arrays, and ``run_hlo_module``'s
literal files (``xla.RunHloModuleLiterals``).

``LiteralProto`` comes from the descriptors inside jaxlib (ir/protos.py). The
literal-file messages live in XLA's ``xla/tools/run_hlo_module.proto``, which
jaxlib does not carry; their four fields are declared here, numbered as XLA
numbers them, on top of jaxlib's ``LiteralProto``. Files are read as binary or
text by content, as XLA's ``ReadTextOrBinaryProto`` does; written as text for
``.pbtxt``/``.txt``/``.textproto`` names, binary otherwise.

Every array element type numpy or ml_dtypes can hold converts both ways
(dtypes.py's table); the rest (tuples, tokens, ...) are refused with an InputError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from . import dtypes


def _literal_class() -> type:
    from . import protos

    return protos.message_class("xla.LiteralProto")


def _file_classes() -> tuple[type, type]:
    """(RunHloModuleLiterals, RunHloModuleIterationLiterals), declared once per process."""
    from google.protobuf import descriptor_pb2, message_factory

    from . import protos

    _literal_class()  # puts xla/xla_data.proto in the pool
    pool = protos.pool()
    try:
        pool.FindMessageTypeByName("xla.RunHloModuleLiterals")
    except KeyError:
        f = descriptor_pb2.FieldDescriptorProto
        fdp = descriptor_pb2.FileDescriptorProto(name="xla/tools/run_hlo_module.proto", package="xla",
                                                 dependency=["xla/xla_data.proto"], syntax="proto3")
        it = fdp.message_type.add(name="RunHloModuleIterationLiterals")
        it.field.add(name="arguments", number=2, label=f.LABEL_REPEATED, type=f.TYPE_MESSAGE,
                     type_name=".xla.LiteralProto")
        for name, number in (("result", 3), ("reference_result", 4)):
            it.field.add(name=name, number=number, label=f.LABEL_OPTIONAL, type=f.TYPE_MESSAGE,
                         type_name=".xla.LiteralProto")
        top = fdp.message_type.add(name="RunHloModuleLiterals")
        top.field.add(name="iterations", number=1, label=f.LABEL_REPEATED, type=f.TYPE_MESSAGE,
                      type_name=".xla.RunHloModuleIterationLiterals")
        pool.AddSerializedFile(fdp.SerializeToString())
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName("xla.RunHloModuleLiterals")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName("xla.RunHloModuleIterationLiterals")))


def _type_name(shape: Any) -> str:
    """A ShapeProto's element type as its enum name; unknown numbers (a newer writer's
    type) as the number, to be refused below like any other unsupported type."""
    value = shape.DESCRIPTOR.fields_by_name["element_type"].enum_type.values_by_number.get(shape.element_type)
    return value.name if value is not None else str(shape.element_type)


def _storage(type_name: str, where: str | None = None) -> tuple[str, np.dtype, bool]:
    """(LiteralProto field, numpy dtype, whether the field holds little-endian bytes)
    for an array type. XLA names each type's field after it (F8E4M3FN: f8e4m3fns);
    which ones are bytes is read from the schema. Sub-byte types (s4, f4e2m1fn)
    take one byte per element there, as in ml_dtypes' arrays."""
    at = f"{where}: " if where else ""
    t = dtypes.BY_NAME.get(type_name)
    if t is None:
        raise InputError(f"{at}literals of type {type_name} are not supported here")
    if t.numpy is None:
        raise InputError(f"{at}literals of type {type_name} are not arrays; only array literals "
                         "are supported here")
    field = _literal_class().DESCRIPTOR.fields_by_name.get(t.name.lower() + "s")
    if field is None:  # a jaxlib older than the table
        raise InputError(f"{at}this jaxlib's LiteralProto cannot hold {type_name} values")
    return field.name, dtypes.np_dtype(t.numpy), field.type == field.TYPE_BYTES


def to_array(lit: Any, where: str = "literal") -> np.ndarray:
    """An array literal as numpy, in row-major order whatever its layout."""
    type_name = _type_name(lit.shape)
    field_name, dtype, as_bytes = _storage(type_name, where)
    dims = list(lit.shape.dimensions)
    raw = getattr(lit, field_name)
    if as_bytes:
        flat = np.frombuffer(bytes(raw), dtype=dtype.newbyteorder("<")).astype(dtype)
    elif dtype.kind == "c":
        parts = np.asarray(list(raw), dtype=np.float32 if dtype == np.complex64 else np.float64)
        flat = (parts[0::2] + 1j * parts[1::2]).astype(dtype)
    else:
        flat = np.asarray(list(raw), dtype=dtype)
    count = int(np.prod(dims)) if dims else 1
    if flat.size != count:
        raise InputError(f"{where}: {type_name}{dims} holds {flat.size} values, not {count}")
    minor_to_major = list(lit.shape.layout.minor_to_major) if lit.shape.HasField("layout") else []
    if not minor_to_major or minor_to_major == list(range(len(dims) - 1, -1, -1)):
        return flat.reshape(dims)
    major_to_minor = minor_to_major[::-1]
    physical = flat.reshape([dims[d] for d in major_to_minor])
    return physical.transpose(np.argsort(major_to_minor))


def from_array(a: np.ndarray) -> Any:
    """A numpy array as a LiteralProto with XLA's default (row-major) layout."""
    lit = _literal_class()()
    t = dtypes.BY_NUMPY.get(a.dtype.name)
    if t is None:
        raise InputError(f"arrays of dtype {a.dtype} cannot be written as XLA literals here")
    field_name, _, as_bytes = _storage(t.name)
    lit.shape.element_type = t.number
    lit.shape.dimensions.extend(int(d) for d in a.shape)
    lit.shape.layout.minor_to_major.extend(range(a.ndim - 1, -1, -1))
    flat = np.ascontiguousarray(a).reshape(-1)
    if as_bytes:
        setattr(lit, field_name, flat.astype(flat.dtype.newbyteorder("<")).tobytes())
    elif a.dtype.kind == "c":
        getattr(lit, field_name).extend(np.stack([flat.real, flat.imag], axis=1).reshape(-1).tolist())
    else:
        getattr(lit, field_name).extend(flat.tolist())
    return lit


def from_arrays(arrays: list[np.ndarray]) -> Any:
    """One array as its literal; several as a tuple literal (a module's results)."""
    if len(arrays) == 1:
        return from_array(arrays[0])
    lit = _literal_class()()
    lit.shape.element_type = lit.shape.DESCRIPTOR.fields_by_name["element_type"].enum_type.values_by_name[
        "TUPLE"].number
    for a in arrays:
        element = from_array(a)
        lit.shape.tuple_shapes.add().CopyFrom(element.shape)
        lit.tuple_literals.add().CopyFrom(element)
    return lit


def read_iteration_arguments(path: str) -> list[list[np.ndarray]]:
    """The arguments of each iteration in a RunHloModuleLiterals file (binary or text)."""
    from . import protos

    files_cls, _ = _file_classes()
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except OSError as e:
        raise InputError(e.strerror or str(e), file=path) from None
    msg = None
    try:
        msg = files_cls.FromString(data)
        if not msg.iterations:
            msg = None
    except Exception:  # not binary: try text below
        msg = None
    if msg is None:
        msg = protos.parse_text(data, "xla.RunHloModuleLiterals", file=path)
    if not msg.iterations:
        raise InputError("no iterations in this literals file", file=path)
    return [[to_array(a, f"{path}: iteration {i} argument {k}") for k, a in enumerate(it.arguments)]
            for i, it in enumerate(msg.iterations)]


def literals_file(iterations: list[tuple[list[np.ndarray], list[np.ndarray] | None,
                                         list[np.ndarray] | None]], path: str) -> bytes | str:
    """A RunHloModuleLiterals file of (arguments, result, reference result) per iteration."""
    from . import protos

    files_cls, _ = _file_classes()
    msg = files_cls()
    for args, result, reference in iterations:
        it = msg.iterations.add()
        for a in args:
            it.arguments.add().CopyFrom(from_array(a))
        if result is not None:
            it.result.CopyFrom(from_arrays(result))
        if reference is not None:
            it.reference_result.CopyFrom(from_arrays(reference))
    if path.endswith((".pbtxt", ".txt", ".textproto")):
        return protos.to_text(msg)
    return protos.serialize(msg)


def set_zero(lit: Any, type_name: str) -> None:
    """Fill a scalar LiteralProto of PrimitiveType ``type_name`` with zero."""
    field_name, dtype, as_bytes = _storage(type_name)
    zero = np.zeros((), dtype)
    if as_bytes:
        setattr(lit, field_name, zero.astype(zero.dtype.newbyteorder("<")).tobytes())
    elif zero.dtype.kind == "c":
        getattr(lit, field_name).extend([0.0, 0.0])
    else:
        getattr(lit, field_name).append(zero.item())


def _element_text(v: Any, dtype: np.dtype) -> str:
    """One element as XLA prints it: shortest of 6/9 (f32) or 15/17 (f64)
    significant digits that reads back to the same value (RoundTripFpToString)."""
    if dtype.kind == "b":
        return "true" if v else "false"
    if dtype.kind in "iu":
        return str(int(v))
    if dtype.kind == "c":
        part = np.float32 if dtype == np.complex64 else np.float64
        return f"({_element_text(part(v.real), np.dtype(part))}, {_element_text(part(v.imag), np.dtype(part))})"
    x = float(v)
    if np.isnan(x):
        return "nan" if not np.signbit(x) else "-nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    short, long = (15, 17) if dtype == np.float64 else (6, 9)
    text = f"{x:.{short}g}"
    same = float(np.array(text, dtype=np.float64 if dtype == np.float64 else np.float32)) == \
        float(np.array(x, dtype=np.float64 if dtype == np.float64 else np.float32))
    return text if same else f"{x:.{long}g}"


def literal_text(a: np.ndarray) -> str:
    """An array as XLA's ``Literal::ToString`` prints it: ``f32[2,3] {...}``."""
    dims = ",".join(str(d) for d in a.shape)
    t = dtypes.BY_NUMPY.get(a.dtype.name)
    head = f"{t.hlo if t is not None else a.dtype.name}[{dims}]"
    if a.ndim == 0:
        return f"{head} {_element_text(a.item() if a.dtype.kind != 'V' else a, a.dtype)}"
    if dtypes.from_ml_dtypes(a.dtype.name):  # printed through float32, which holds them all
        values = a.astype(np.float32)
        fmt = np.dtype(np.float32)
    else:
        values, fmt = a, a.dtype
    if a.ndim == 1:
        return f"{head} {{{', '.join(_element_text(v, fmt) for v in values)}}}"

    def block(x: np.ndarray, depth: int, index: tuple[int, ...]) -> str:
        if x.ndim == 1:
            return "{ " + ", ".join(_element_text(v, fmt) for v in x) + " }"
        if x.ndim == 2 and depth == 0:
            rows = ",\n".join("  " + block(r, depth + 1, index + (i,)) for i, r in enumerate(x))
            return "{\n" + rows + "\n}"
        inner = ",\n".join(block(r, depth + 1, index + (i,)) for i, r in enumerate(x))
        label = f" /*i{len(index) - 1}={index[-1]}*/" if index else ""
        return "{" + label + "\n" + inner + "\n}"

    return f"{head} {block(values, 0, ())}"
