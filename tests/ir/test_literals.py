"""ir/literals.py: XLA's literals (run_hlo_module's literal files and text), checked against
the bytes and text the installed jaxlib writes.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.errors import InputError
from mlirhlo_driver.ir import dtypes, literals, protos
from tests.conftest import assert_mentions
from tests.dtype_tables import ARRAYS, HERE, HLO_MODULE, INSTALLED


def _entry(*instructions: str) -> str:
    return "HloModule m\n\nENTRY e {\n" + "\n".join(f"  {i}" for i in instructions) + "\n}\n"


# ------------------------------------------------------------------ literals

# Values each type holds exactly: negatives where it has them, e8m0 only powers of two.
def _values(t) -> list:
    if t.kind == "pred":
        return [True, False, True]
    if t.kind == "signed":
        return {1: [0, -1, -1], 2: [-2, 1, -1]}.get(t.bits, [-8, 7, -1])
    if t.kind == "unsigned":
        return {1: [1, 0, 1]}.get(t.bits, [3, 1, 2])
    if t.kind == "complex":
        return [1 - 0.5j, 2, 1j]
    return [1, 0.25, 2] if t.name == "F8E8M0FNU" else [1, -0.5, 2]


def _hlo_values(t) -> str:
    if t.kind == "pred":
        return "{true, false, true}"
    if t.kind == "complex":
        return "{(1, -0.5), (2, 0), (0, 1)}"
    return "{" + ", ".join(str(v) for v in _values(t)) + "}"


# XLA's LiteralProto writer CHECK-fails on the f6 types (jaxlib 0.12: "Unhandled primitive
# type F6E3M2FN", the process aborts): their literals are checked by round trip only.
XLA_WRITES = [t for t in HERE if not t.name.startswith("F6")]


def _constants(types) -> bytes:
    consts = [f"c{i} = {t.hlo}[3] constant({_hlo_values(t)})" for i, t in enumerate(types)]
    return _jaxlib.hlo_text_to_proto(_entry(*consts[:-1], "ROOT " + consts[-1]))


# XLA's HLO printer refuses s1/u1 constants ("unsupported shape") and writes pred ones
# as 1/0, where --print_literals (literal_text's model) writes true/false.
XLA_PRINTS = [t for t in XLA_WRITES if t.bits > 1 and t.kind != "pred"]


def test_literals_read_and_write_xlas_own_bytes():
    """HLO constants of every type XLA writes: to_array reads XLA's literal as the values,
    and from_array writes XLA's field to the byte (sub-byte types: one per element, low bits)."""
    found = {ins.name: ins.literal for ins in protos.message_class(HLO_MODULE).FromString(
        _constants(XLA_WRITES)).computations[0].instructions}
    for i, t in enumerate(XLA_WRITES):
        xla = found[f"c{i}"]
        expected = np.array(_values(t), dtype=dtypes.np_dtype(t.numpy))
        got = literals.to_array(xla)
        assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), t.name
        ours = literals.from_array(expected)
        field = t.name.lower() + "s"
        assert ours.shape.element_type == xla.shape.element_type == t.number
        assert getattr(ours, field) == getattr(xla, field), t.name


def test_literal_text_prints_each_type_as_xla_does():
    text = _jaxlib.hlo_proto_to_text(_constants(XLA_PRINTS))
    printed = dict(re.findall(r"%(c\d+) = \S+ constant\((.*)\)", text))
    for i, t in enumerate(XLA_PRINTS):
        a = np.array(_values(t), dtype=dtypes.np_dtype(t.numpy))
        assert literals.literal_text(a) == f"{t.hlo}[3] {printed[f'c{i}']}", t.name


@pytest.mark.parametrize("t", ARRAYS, ids=lambda t: t.name)
def test_literal_round_trip(t):
    """numpy -> LiteralProto -> wire bytes -> numpy, 2-D, for every type numpy/ml_dtypes holds;
    a type this jaxlib's XLA lacks is a typed error."""
    values = _values(t)
    if t.name not in INSTALLED:
        with pytest.raises(InputError) as e:
            literals.from_array(np.array(values, dtype=dtypes.np_dtype(t.numpy)))
        assert_mentions(e.value.message, "LiteralProto", f" {t.name} ")
        return
    a = np.array([values, values[::-1]], dtype=dtypes.np_dtype(t.numpy))
    lit = literals.from_array(a)
    assert list(lit.shape.dimensions) == [2, 3] and lit.shape.element_type == t.number
    back = literals.to_array(type(lit).FromString(protos.serialize(lit)))
    assert back.dtype == a.dtype and back.shape == a.shape and back.tobytes() == a.tobytes()
    zero = type(lit)()
    zero.shape.element_type = t.number
    literals.set_zero(zero, t.name)
    assert literals.to_array(zero).tobytes() == np.zeros((), a.dtype).tobytes()


def test_literals_of_other_types_are_typed_errors():
    cls = protos.message_class("xla.LiteralProto")
    for name in ("TUPLE", "TOKEN", "OPAQUE_TYPE", "BUFFER"):
        lit = cls()
        lit.shape.element_type = dtypes.BY_NAME[name].number
        with pytest.raises(InputError) as e:
            literals.to_array(lit, "x")
        assert e.value.message.startswith("x: "), e.value.message
        assert_mentions(e.value.message, f"type {name}", "not arrays")
    lit = cls()
    lit.shape.element_type = 999  # a newer writer's type: proto3 keeps the number
    with pytest.raises(InputError) as e:
        literals.to_array(lit, "x")
    assert e.value.message.startswith("x: ")
    assert_mentions(e.value.message, "type 999", "not supported")
    with pytest.raises(InputError) as e:
        literals.from_array(np.array([None]))
    assert_mentions(e.value.message, "dtype object")


def _typed(name: str):
    """A LiteralProto of element type ``name`` (its enum name) or number."""
    lit = protos.message_class("xla.LiteralProto")()
    lit.shape.element_type = dtypes.BY_NAME[name].number if isinstance(name, str) else name
    return lit


def _short(shape, values):
    """A literal of ``shape`` holding ``values`` f32 values."""
    lit = protos.message_class("xla.LiteralProto")()
    lit.shape.element_type = dtypes.BY_NAME["F32"].number
    lit.shape.dimensions.extend(shape)
    lit.f32s.extend([0.0] * values)
    return lit


@pytest.mark.golden
@pytest.mark.parametrize("call, message", [
    (lambda: literals.to_array(_typed("TUPLE"), "x"),
     "error: x: literals of type TUPLE are not arrays; only array literals are supported here"),
    (lambda: literals.to_array(_typed("TOKEN")),
     "error: literal: literals of type TOKEN are not arrays; only array literals are supported here"),
    (lambda: literals.to_array(_typed(999), "x"), "error: x: literals of type 999 are not supported here"),
    (lambda: literals.from_array(np.array([None])),
     "error: arrays of dtype object cannot be written as XLA literals here"),
    (lambda: literals.to_array(_short([2, 3], 5), "arg"), "error: arg: F32[2, 3] holds 5 values, not 6"),
    (lambda: literals.to_array(_short([], 2)), "error: literal: F32[] holds 2 values, not 1"),
    # a jaxlib whose LiteralProto has no field for the type (here: one with no fields of that kind)
    (lambda: literals.from_array(np.zeros(2, np.float32)), "error: this jaxlib's LiteralProto cannot hold F32 values"),
], ids=["tuple", "token", "unknown-number", "object", "too-few", "too-many", "no-field"])
def test_literal_refusals_exactly(monkeypatch, request, call, message):
    """Arrays and literals that do not convert: the golden of to_array's and from_array's errors."""
    if request.node.callspec.id == "no-field":
        monkeypatch.setattr(literals, "_literal_class", lambda: protos.message_class("xla.ShapeProto"))
    with pytest.raises(InputError) as e:
        call()
    assert e.value.format() == message


@pytest.mark.parametrize("name", ["F16", "BF16", "F32", "F64"])
def test_literal_text_prints_nan_and_inf_as_xla_does(name):
    t = dtypes.BY_NAME[name]
    text = _jaxlib.hlo_proto_to_text(_jaxlib.hlo_text_to_proto(
        _entry(f"ROOT c = {t.hlo}[5] constant({{nan, -nan, inf, -inf, 1.5}})")))
    (printed,) = re.findall(r"constant\((.*)\)", text)
    a = np.array([np.nan, -np.nan, np.inf, -np.inf, 1.5], dtype=dtypes.np_dtype(t.numpy))
    assert literals.literal_text(a) == f"{t.hlo}[5] {printed}"


def test_literal_text_prints_floats_with_the_fewest_digits_that_read_back_as_xla_does():
    """f64 elements print with 15 significant digits when those read back exactly, else 17
    (f32: 6, else 9), matching XLA's printer element for element."""
    values = [0.1 + 0.2, 1 / 3, 2 / 3, 0.1, 1e300 / 7, -5e-324, 123456789.123456789, 1.5]
    expected = {
        "f64": "{0.30000000000000004, 0.33333333333333331, 0.66666666666666663, 0.1, "
               "1.4285714285714286e+299, -4.94065645841247e-324, 123456789.12345679, 1.5}",
        "f32": "{0.3, 0.333333343, 0.666666687, 0.1, 1.4285714e+29, -0, 123456792, 1.5}",
    }
    for hlo, dtype in (("f64", np.float64), ("f32", np.float32)):
        a = np.array([v if hlo == "f64" or abs(v) < 1e38 else v * 1e-270 for v in values], dtype=dtype)
        body = ", ".join(repr(float(v)) for v in a)
        text = _jaxlib.hlo_proto_to_text(_jaxlib.hlo_text_to_proto(
            _entry(f"ROOT c = {hlo}[{a.size}] constant({{{body}}})")))
        (printed,) = re.findall(r"constant\((.*)\)", text)
        assert printed == expected[hlo]
        assert literals.literal_text(a) == f"{hlo}[{a.size}] {printed}"
        assert literals.literal_text(a[0]) == f"{hlo}[] {printed[1:].split(',')[0]}"


def test_literals_file_is_xlas_run_hlo_module_literals_wire_format():
    """RunHloModuleLiterals as XLA numbers it: iterations 1; arguments 2, result 3,
    reference_result 4, each literal as LiteralProto writes it."""
    a = np.array([1.5, -2], np.float32)
    data = literals.literals_file([([a], [np.array(7, np.int32)], [np.array(3, np.int32)])], "x.pb")
    assert isinstance(data, bytes)
    assert data.hex() == (
        "0a2e"  # 1: iterations
        "1216" "0a0a" "100b" "1a0102" "2a03" "0a0100" "4208" "0000c03f000000c0"  # 2: arguments, f32[2] {1.5, -2}
        "1a09" "0a04" "1004" "2a00" "220107"  # 3: result, s32[] 7 (shape: element_type, layout; s32s)
        "2209" "0a04" "1004" "2a00" "220103")  # 4: reference_result, s32[] 3
    files_cls, iteration_cls = literals._file_classes()
    assert {f.name: f.number for f in iteration_cls.DESCRIPTOR.fields} == {
        "arguments": 2, "result": 3, "reference_result": 4}
    assert {f.name: f.number for f in files_cls.DESCRIPTOR.fields} == {"iterations": 1}


def test_from_arrays_one_literal_or_a_tuple():
    """One array is its own literal; several a TUPLE literal of their shapes and literals, in order."""
    a, b = np.array([1, 2], np.int8), np.array(True)
    assert literals.from_arrays([a]) == literals.from_array(a)
    lit = literals.from_arrays([a, b])
    assert lit.shape.element_type == dtypes.BY_NAME["TUPLE"].number
    assert list(lit.shape.tuple_shapes) == [literals.from_array(a).shape, literals.from_array(b).shape]
    assert list(lit.tuple_literals) == [literals.from_array(a), literals.from_array(b)]


@pytest.mark.parametrize("suffix", [".pbtxt", ".txt", ".textproto", ".pb", ".bin"])
def test_literals_file_is_text_by_name_binary_otherwise(tmp_path, suffix):
    """Text for .pbtxt/.txt/.textproto, binary else; both read back as the iterations' arguments,
    results absent where none were given."""
    a, b = np.arange(6, dtype=np.float64).reshape(2, 3), np.array([True, False])
    data = literals.literals_file([([a, b], None, None), ([b], [a, b], None)], "f" + suffix)
    text = suffix in (".pbtxt", ".txt", ".textproto")
    assert isinstance(data, str if text else bytes)
    path = tmp_path / f"lits{suffix}"
    (path.write_text if text else path.write_bytes)(data)
    got = literals.read_iteration_arguments(str(path))
    assert [[x.tolist() for x in args] for args in got] == [[a.tolist(), b.tolist()], [b.tolist()]]
    files_cls, _ = literals._file_classes()
    first, second = (protos.parse_text(data, "xla.RunHloModuleLiterals") if text else
                     files_cls.FromString(data)).iterations
    assert not first.HasField("result") and not first.HasField("reference_result")
    assert second.HasField("result") and not second.HasField("reference_result")
    if text:
        assert data.startswith("iterations {\n  arguments {\n    shape {\n      element_type: F64\n")


def test_read_iteration_arguments_refusals(tmp_path):
    """Missing, unreadable, empty and iteration-less files, and an argument that is not an
    array: each an InputError on the file, the bad argument named by iteration and position."""
    def refused(path) -> InputError:
        with pytest.raises(InputError) as e:
            literals.read_iteration_arguments(str(path))
        return e.value

    e = refused(tmp_path / "missing.pb")
    assert e.file == str(tmp_path / "missing.pb")
    assert_mentions(e.message, "no such file")
    e = refused(tmp_path)
    assert e.file == str(tmp_path)
    assert_mentions(e.message, "directory")
    for name, content in (("empty.pb", b""), ("none.pbtxt", b"# no iterations\n")):
        (tmp_path / name).write_bytes(content)
        e = refused(tmp_path / name)
        assert e.file == str(tmp_path / name)
        assert_mentions(e.message, "no iterations")
    _iterations_with_a_token(tmp_path / "bad.pb")
    e = refused(tmp_path / "bad.pb")
    assert e.message.startswith(f"{tmp_path / 'bad.pb'}: ")
    assert_mentions(e.message, "iteration 1 argument 1", "TOKEN", "not arrays")


def _iterations_with_a_token(path):
    """A literals file whose second iteration's second argument is a token."""
    good = literals.from_array(np.array([1], np.int32))
    files_cls, _ = literals._file_classes()
    msg = files_cls()
    msg.iterations.add().arguments.add().CopyFrom(good)
    second = msg.iterations.add()
    second.arguments.add().CopyFrom(good)
    second.arguments.add().shape.element_type = dtypes.BY_NAME["TOKEN"].number
    path.write_bytes(protos.serialize(msg))


@pytest.mark.golden
@pytest.mark.parametrize("name, message", [
    ("missing.pb", "error: {path}: no such file"),
    ("", "error: {path}: Is a directory"),
    ("empty.pb", "error: {path}: no iterations in this literals file"),
    ("none.pbtxt", "error: {path}: no iterations in this literals file"),
    ("bad.pb", "error: {path}: iteration 1 argument 1: literals of type TOKEN are not arrays; only array literals "
               "are supported here"),
])
def test_literals_file_refusals_exactly(tmp_path, name, message):
    """A --iteration_literals_file that gives no arguments: the golden of read_iteration_arguments' errors."""
    (tmp_path / "empty.pb").write_bytes(b"")
    (tmp_path / "none.pbtxt").write_bytes(b"# no iterations\n")
    _iterations_with_a_token(tmp_path / "bad.pb")
    path = tmp_path / name if name else tmp_path
    with pytest.raises(InputError) as e:
        literals.read_iteration_arguments(str(path))
    assert e.value.format() == message.format(path=path)


def test_to_array_refuses_a_literal_of_the_wrong_size():
    lit = literals.from_array(np.zeros((2, 3), np.float32))
    del lit.f32s[-1]
    with pytest.raises(InputError) as e:
        literals.to_array(lit, "arg")
    assert e.value.message.startswith("arg: ")
    assert_mentions(e.value.message, "F32[2, 3]", "5 values", "not 6")
    scalar = literals.from_array(np.array(1.5, np.float32))
    scalar.f32s.append(2.5)
    with pytest.raises(InputError) as e:
        literals.to_array(scalar)
    assert_mentions(e.value.message, "F32[]", "2 values", "not 1")


def test_to_array_reads_any_layout_and_none():
    """Row-major whatever the layout: none at all (XLA's default), the default spelled out,
    and each permutation of a rank-3 array's dimensions."""
    import itertools

    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    bare = literals.from_array(a)
    bare.shape.ClearField("layout")
    assert literals.to_array(bare).tolist() == a.tolist()
    for minor_to_major in itertools.permutations(range(3)):
        lit = literals.from_array(a)
        del lit.shape.layout.minor_to_major[:]
        lit.shape.layout.minor_to_major.extend(minor_to_major)
        lit.ClearField("s32s")
        lit.s32s.extend(a.transpose(minor_to_major[::-1]).reshape(-1).tolist())  # major to minor
        assert literals.to_array(lit).tolist() == a.tolist(), minor_to_major
    assert list(literals.from_array(a).shape.layout.minor_to_major) == [2, 1, 0]
    assert list(literals.from_array(np.float32(1).reshape(())).shape.layout.minor_to_major) == []


def test_complex_literals_keep_every_bit():
    """c128 parts are doubles, c64 parts floats: values of full precision come back exactly."""
    for dtype in (np.complex128, np.complex64):
        a = np.array([0.1 + 1j / 3, -2 / 3 + 0.2j], dtype)
        lit = literals.from_array(a)
        back = literals.to_array(lit)
        assert back.dtype == a.dtype and back.tobytes() == a.tobytes()
        zero = type(lit)()
        zero.shape.element_type = lit.shape.element_type
        literals.set_zero(zero, dtypes.BY_NUMPY[a.dtype.name].name)
        assert literals.to_array(zero).tolist() == 0j


def test_literal_text_of_scalars_complex_and_ml_dtypes():
    """Scalars of every kind, complex parts at their own precision, ml_dtypes' types through float32."""
    import ml_dtypes

    assert literals.literal_text(np.array(1.5, ml_dtypes.bfloat16)) == "bf16[] 1.5"
    assert literals.literal_text(np.array(-8, ml_dtypes.int4)) == "s4[] -8"
    assert literals.literal_text(np.array([1, -8, 7], ml_dtypes.int4)) == "s4[3] {1, -8, 7}"
    assert literals.literal_text(np.array([0.1, -3], ml_dtypes.bfloat16)) == "bf16[2] {0.100097656, -3}"
    assert literals.literal_text(np.array(True)) == "pred[] true"
    assert literals.literal_text(np.array(-5, np.int64)) == "s64[] -5"
    assert literals.literal_text(np.array(0.1 + 2j, np.complex64)) == "c64[] (0.1, 2)"
    assert literals.literal_text(np.array([1 - 0.5j, 0.1 + 2j], np.complex128)) == "c128[2] {(1, -0.5), (0.1, 2)}"
    assert literals.literal_text(np.array([1 / 3 + 0j], np.complex64)) == "c64[1] {(0.333333343, 0)}"
    assert literals.literal_text(np.array([[True]])) == "pred[1,1] {\n  { true }\n}"
    assert literals.literal_text(np.array([-np.inf, np.nan], np.float32)) == "f32[2] {-inf, nan}"


def test_literal_layouts_and_types():
    import ml_dtypes
    import numpy as np

    from mlirhlo_driver.ir import literals

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    lit = literals.from_array(a)
    del lit.shape.layout.minor_to_major[:]
    lit.shape.layout.minor_to_major.extend([0, 1])  # column-major: the data is a's transpose
    lit.ClearField("f32s")
    lit.f32s.extend(a.T.reshape(-1).tolist())
    assert literals.to_array(lit).tolist() == a.tolist()
    for x in (np.array([1.5, -2], dtype=ml_dtypes.bfloat16), np.array([[1 + 2j]], dtype=np.complex64),
              np.array([True, False]), np.array([-3, 4], dtype=np.int8)):
        back = literals.to_array(literals.from_array(x))
        assert back.dtype == x.dtype and back.tolist() == x.tolist()


def test_literal_text():
    """XLA's Literal::ToString forms, as --dump_output_literal_to writes them."""
    import numpy as np

    from mlirhlo_driver.ir import literals

    assert literals.literal_text(np.float32(1.5).reshape(())) == "f32[] 1.5"
    assert literals.literal_text(np.array([0.1, 2, -3e-8], np.float32)) == "f32[3] {0.1, 2, -3e-08}"
    assert literals.literal_text(np.array([1 / 3], np.float32)) == "f32[1] {0.333333343}"  # 6 digits do not round-trip
    assert literals.literal_text(np.array([True, False])) == "pred[2] {true, false}"
    assert literals.literal_text(np.arange(6, dtype=np.int32).reshape(2, 3)) == \
        "s32[2,3] {\n  { 0, 1, 2 },\n  { 3, 4, 5 }\n}"
    # rank 3 and up: each block of the outer dimensions is labelled with its index, as XLA does
    assert literals.literal_text(np.arange(8, dtype=np.int32).reshape(2, 2, 2)) == \
        "s32[2,2,2] {\n{ /*i0=0*/\n{ 0, 1 },\n{ 2, 3 }\n},\n{ /*i0=1*/\n{ 4, 5 },\n{ 6, 7 }\n}\n}"
    assert literals.literal_text(np.arange(4, dtype=np.int8).reshape(1, 2, 1, 2)) == \
        "s8[1,2,1,2] {\n{ /*i0=0*/\n{ /*i1=0*/\n{ 0, 1 }\n},\n{ /*i1=1*/\n{ 2, 3 }\n}\n}\n}"
