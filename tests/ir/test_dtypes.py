"""ir/dtypes.py, XLA's element types in one table, checked against the installed jaxlib:
its PrimitiveType enum, the spellings its HLO parser and StableHLO converter use, the
types jax lowers numpy dtypes to, and the bytes XLA's own literals hold; and what
ir/literals.py, execute/run.py and inputs/loader.py derive from it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.errors import InputError
from mlirhlo_driver.ir import dtypes, protos
from tests.conftest import run_subprocess
from tests.dtype_tables import ARRAYS, HERE, HLO_MODULE, INSTALLED, NEWEST, _enum


def _module(text: str):
    return protos.message_class(HLO_MODULE).FromString(_jaxlib.hlo_text_to_proto(text))


def _entry(*instructions: str) -> str:
    return "HloModule m\n\nENTRY e {\n" + "\n".join(f"  {i}" for i in instructions) + "\n}\n"


# ------------------------------------------------------------------ the table

def test_the_table_is_jaxlibs_primitive_type_enum():
    """Every value, by name and number, in declaration order; a jaxlib with a new type fails here."""
    values = [(v.name, v.number) for v in _enum().values if v.name != "PRIMITIVE_TYPE_INVALID"]
    assert [(t.name, t.number) for t in dtypes.TYPES if t.name in INSTALLED] == values
    if NEWEST:  # the newest supported jaxlib: nothing more, nothing less
        assert [(t.name, t.number) for t in dtypes.TYPES] == values


def test_the_table_is_one_to_one_where_it_must_be():
    for column in ("name", "number", "hlo"):
        seen = [getattr(t, column) for t in dtypes.TYPES]
        assert len(set(seen)) == len(seen), column
    numpy_names = [t.numpy for t in dtypes.TYPES if t.numpy is not None]
    assert len(set(numpy_names)) == len(numpy_names)
    # MLIR spellings: only S1 shares one (i1) and the lookup gives PRED, as XLA's conversion does.
    mlir = [t.mlir for t in dtypes.TYPES if t.mlir is not None]
    shared = {m for m in mlir if mlir.count(m) > 1}
    assert shared == {"i1"} and dtypes.BY_MLIR["i1"].name == "PRED"
    assert {t.name for t in dtypes.TYPES if t.kind is None} == {"TUPLE", "OPAQUE_TYPE", "TOKEN", "BUFFER"}
    assert all(t.mlir and t.numpy and t.bits > 0 for t in ARRAYS)
    assert all(t.numpy is None and t.bits == 0 for t in dtypes.TYPES if t.kind is None)


@pytest.mark.parametrize("t", ARRAYS, ids=lambda t: t.name)
def test_numpy_dtype_width_and_kind(t):
    import ml_dtypes

    dt = dtypes.np_dtype(t.numpy)
    assert dt.name == t.numpy
    assert dtypes.from_ml_dtypes(t.numpy) == (dt.type.__module__ == "ml_dtypes")
    if t.kind == "pred":
        assert dt == np.bool_ and t.bits == 8  # XLA's BitWidth(PRED)
    elif t.kind == "complex":
        assert dt.kind == "c" and t.bits == 8 * dt.itemsize
    elif t.kind == "float":
        assert ml_dtypes.finfo(dt).bits == t.bits
    else:
        info = ml_dtypes.iinfo(dt)
        assert info.bits == t.bits and (info.min < 0) == (t.kind == "signed")


@pytest.mark.golden
def test_np_dtype_refuses_names_outside_the_table():
    """The golden of np_dtype's refusal of a name no XLA type has."""
    with pytest.raises(InputError) as e:
        dtypes.np_dtype("float128")
    assert e.value.format() == "error: no XLA element type has numpy dtype 'float128'"


def test_importing_the_table_imports_neither_numpy_nor_jax():
    proc = run_subprocess("import sys\nfrom mlirhlo_driver.ir import dtypes\n"
                          "print(sorted(m for m in ('numpy', 'ml_dtypes', 'jax', 'jaxlib') if m in sys.modules))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# ------------------------------------------------------------------ spellings, as jaxlib has them

def test_hlo_spellings_parse_print_and_convert_to_the_mlir_spellings():
    """One parameter per array type, and a token: XLA's HLO parser reads each spelling as
    the table's enum number and prints it back the same; its HLO -> StableHLO conversion
    gives the table's MLIR spelling."""
    from jaxlib.mlir import ir

    types = [*HERE, dtypes.BY_NAME["TOKEN"]]
    params = [f"p{i} = {t.hlo}[{'' if t.kind is None else 2}] parameter({i})" for i, t in enumerate(types)]
    text = _entry(*params[:-1], "ROOT " + params[-1])
    proto = _jaxlib.hlo_text_to_proto(text)
    shapes = protos.message_class(HLO_MODULE).FromString(proto).host_program_shape.parameters
    assert [s.element_type for s in shapes] == [t.number for t in types]
    printed = {int(m.group(2)): m.group(1)
               for m in re.finditer(r"= (\w+)\[\d*\]\S* parameter\((\d+)\)", _jaxlib.hlo_proto_to_text(proto))}
    assert printed == {i: t.hlo for i, t in enumerate(types)}
    with _jaxlib.ir_context():
        module = ir.Module.parse(_jaxlib.hlo_proto_to_stablehlo_bytecode(proto))
        (main,) = [op for op in module.body.operations if op.operation.name == "func.func"]
        inputs = [str(x) for x in ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs]
    assert inputs == [f"tensor<2x{t.mlir}>" for t in HERE] + ["!stablehlo.token"]


def test_the_non_array_spellings():
    """Tuples and buffers are written as shapes, "(...)" and "b(...)"; opaque and token by name."""
    for shape, name in (("(f32[2], s4[])", "TUPLE"), ("b(f32[2])", "BUFFER"), ("opaque[]", "OPAQUE_TYPE"),
                        ("token[]", "TOKEN")):
        (param,) = _module(_entry(f"ROOT p = {shape} parameter(0)")).host_program_shape.parameters
        assert param.element_type == dtypes.BY_NAME[name].number, shape
    assert dtypes.BY_NAME["OPAQUE_TYPE"].hlo == "opaque" and dtypes.BY_NAME["TOKEN"].hlo == "token"


def test_mlir_spellings_convert_to_their_types():
    """StableHLO -> HLO (what XLA compiles) reads each MLIR spelling as BY_MLIR's type."""
    spellings = [m for m in list(dtypes.BY_MLIR)[:-1] if dtypes.BY_MLIR[m].name in INSTALLED]  # no token tensor
    assert dtypes.BY_MLIR["!stablehlo.token"].name == "TOKEN"
    args = ", ".join(f"%a{i}: tensor<2x{m}>" for i, m in enumerate(spellings))
    text = f"func.func @main({args}) -> tensor<2x{spellings[0]}> {{\n  return %a0 : tensor<2x{spellings[0]}>\n}}\n"
    proto = _jaxlib.stablehlo_to_hlo_proto(text.encode())
    shapes = protos.message_class(HLO_MODULE).FromString(proto).host_program_shape.parameters
    # XLA reads every 1-bit integer as PRED, ui1 too (U1 converts to ui1 the other way).
    pred = dtypes.BY_NAME["PRED"].number
    assert [s.element_type for s in shapes] == [pred if dtypes.BY_MLIR[m].bits == 1 else dtypes.BY_MLIR[m].number
                                                for m in spellings]
    assert "ui1" in spellings and dtypes.BY_MLIR["ui1"].name == "U1"


# The types run gained from the table (it listed 20 by hand). Data movement only: the
# interpreter aborts on arithmetic in f8E8M0FNU.
@pytest.mark.parametrize("element", ["f8E4M3", "f8E3M4", "f8E8M0FNU"])
@pytest.mark.parametrize("reference", ["interpreter", "cpu"])
def test_run_the_new_f8_types(cli, tmp_path, element, reference):
    t, t2 = f"tensor<3x4x{element}>", f"tensor<6x4x{element}>"
    src = tmp_path / "m.mlir"
    src.write_text(f"func.func @main(%a: {t}, %b: {t}) -> ({t2}, {t}) {{\n"
                   f"  %0 = stablehlo.concatenate %a, %b, dim = 0 : ({t}, {t}) -> {t2}\n"
                   f"  %1 = stablehlo.reverse %a, dims = [1] : {t}\n"
                   f"  return %0, %1 : {t2}, {t}\n}}\n")
    result = cli("run", src, "--jobs", "0", "--reference", reference)
    assert result.code == 0, result.out + result.err
    assert "m: OK" in result.out


# ------------------------------------------------------------------ the table's lookups and literal files


def test_from_ml_dtypes_only_for_the_tables_ml_dtypes_names():
    """numpy's own dtypes and names outside the table are not ml_dtypes' ones."""
    assert [n for n in dtypes.BY_NUMPY if dtypes.from_ml_dtypes(n)] == [
        t.numpy for t in ARRAYS if t.numpy not in (
            "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64", "complex64", "complex128")]
    assert dtypes.from_ml_dtypes("bfloat16") is True and dtypes.from_ml_dtypes("float32") is False
    for outside in ("float128", "object", "int3", ""):
        assert dtypes.from_ml_dtypes(outside) is False, outside
    assert dtypes.np_dtype("float32") == np.float32 and dtypes.np_dtype("bool") == np.bool_


@pytest.mark.golden
def test_np_dtype_of_a_type_the_installed_ml_dtypes_lacks(monkeypatch):
    """An older ml_dtypes without one of the table's types: an EnvironmentMismatch naming
    the type and the version, with the hint to upgrade (the golden of that message)."""
    import ml_dtypes

    from mlirhlo_driver.errors import EnvironmentMismatch

    monkeypatch.delattr(ml_dtypes, "float8_e8m0fnu")
    monkeypatch.setattr(ml_dtypes, "__version__", "0.1.0", raising=False)
    with pytest.raises(EnvironmentMismatch) as e:
        dtypes.np_dtype("float8_e8m0fnu")
    assert e.value.message == "the installed ml_dtypes 0.1.0 has no float8_e8m0fnu (XLA's F8E8M0FNU)"
    assert e.value.hint == "upgrade ml_dtypes"
    assert dtypes.np_dtype("bfloat16") == ml_dtypes.bfloat16  # the others still there
