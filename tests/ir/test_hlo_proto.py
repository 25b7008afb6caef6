"""mlirhlo_driver.ir.hlo_proto: HloModuleProto / HloProto binary, text and JSON via protobuf.

Real protos come from jaxlib (HLO text -> HloModuleProto) and from XLA's own
``--xla_dump_hlo_as_proto`` dump (HloProto, written with C++ deterministic
serialization, integer-keyed schedule map included). The descriptors
themselves are checked against jaxlib in ir/test_protos.py.
"""

from __future__ import annotations

import gzip
import io
import math
import random
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlirhlo_driver.errors import InputError
from mlirhlo_driver.ir import hlo_proto as hp
from tests.conftest import REPO, assert_mentions

# ------------------------------------------------------------------ fixtures

MODULES = {
    "elementwise": """
HloModule elementwise, entry_computation_layout={(f32[2,3]{1,0}, f32[2,3]{1,0})->f32[2,3]{1,0}}

ENTRY main {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[2,3]{1,0} parameter(1)
  add = f32[2,3]{1,0} add(a, b)
  e = f32[2,3]{1,0} exponential(add)
  c = f32[] constant(0.5)
  bc = f32[2,3]{1,0} broadcast(c), dimensions={}
  cmp = pred[2,3]{1,0} compare(e, bc), direction=GT, type=TOTALORDER
  ROOT sel = f32[2,3]{1,0} select(cmp, e, bc)
}
""",
    "dot": """
HloModule dot

ENTRY main {
  a = f32[8,16]{1,0} parameter(0)
  b = f32[4,16,32]{2,1,0} parameter(1)
  b0 = f32[1,16,32]{2,1,0} slice(b), slice={[0:1], [0:16], [0:32]}
  r = f32[16,32]{1,0} reshape(b0)
  d = f32[8,32]{1,0} dot(a, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,default}
  t = f32[32,8]{1,0} transpose(d), dimensions={1,0}
  ROOT p = f32[34,10]{1,0} pad(t, f32[] constant(0)), padding=1_1x0_2_1
}
""",
    "reduce": """
HloModule reduce

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[4,5]{1,0} parameter(0)
  z = f32[] constant(0)
  r = f32[4]{0} reduce(p, z), dimensions={1}, to_apply=add
  w = f32[2,5]{1,0} reduce-window(p, z), window={size=2x1 stride=2x1}, to_apply=add
  ROOT t = (f32[4]{0}, f32[2,5]{1,0}) tuple(r, w)
}
""",
    "while": """
HloModule while_loop, is_scheduled=true

cond {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v2 = f32[3] multiply(v, v)
  ROOT t = (s32[], f32[3]) tuple(i2, v2)
}

ENTRY main {
  v = f32[3] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[3]) tuple(z, v)
  w = (s32[], f32[3]) while(init), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=1
}
""",
    "conditional": """
HloModule cond

on_true {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
}

on_false {
  x = f32[] parameter(0)
  ROOT a = f32[] abs(x)
}

b0 {
  x = f32[] parameter(0)
  ROOT c = f32[] ceil(x)
}

ENTRY main {
  p = pred[] parameter(0)
  x = f32[] parameter(1)
  i = s32[] parameter(2)
  c1 = f32[] conditional(p, x, x), true_computation=on_true, false_computation=on_false
  ROOT c2 = f32[] conditional(i, c1, c1, c1), branch_computations={on_true, on_false, b0}
}
""",
    "gather_scatter": """
HloModule gs

upd {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  operand = f32[5,4]{1,0} parameter(0)
  idx = s32[3,1]{1,0} parameter(1)
  g = f32[3,4]{1,0} gather(operand, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=true
  ROOT s = f32[5,4]{1,0} scatter(operand, idx, g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=upd, unique_indices=true
}
""",
    "sort": """
HloModule sort

cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}

ENTRY main {
  k = f32[16]{0} parameter(0)
  v = s32[16]{0} iota(), iota_dimension=0
  ROOT s = (f32[16]{0}, s32[16]{0}) sort(k, v), dimensions={0}, is_stable=true, to_apply=cmp
}
""",
    "convolution": """
HloModule conv

ENTRY main {
  x = f32[1,8,8,3]{3,2,1,0} parameter(0)
  w = f32[3,3,3,16]{3,2,1,0} parameter(1)
  ROOT c = f32[1,4,4,16]{3,2,1,0} convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1 rhs_dilate=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=1
}
""",
    "constants": """
HloModule constants

ENTRY main {
  a = bf16[3]{0} constant({1.5, -2, 0.1})
  b = f16[2]{0} constant({0.1, 65504})
  c = s8[4]{0} constant({-128, -1, 0, 127})
  d = pred[3]{0} constant({true, false, true})
  e = c64[2]{0} constant({(1, 2), (-3.5, 0.25)})
  f = c128[1]{0} constant({(1e300, -1e-300)})
  g = f64[3]{0} constant({0.1, -0, 1.7976931348623157e308})
  h = f32[4]{0} constant({0.1, inf, -inf, nan})
  i = s64[2]{0} constant({-9223372036854775808, 9223372036854775807})
  j = u64[2]{0} constant({0, 18446744073709551615})
  k = u8[3]{0} constant({0, 34, 255})
  l = s32[2,2]{1,0} constant({{1, -2}, {3, -4}})
  m = u32[1]{0} constant({4294967295})
  n = s4[2]{0} constant({-8, 7})
  o = f8e4m3fn[2]{0} constant({1, -0.5})
  ROOT t = (bf16[3]{0}, f16[2]{0}, s8[4]{0}, pred[3]{0}, c64[2]{0}, c128[1]{0}, f64[3]{0}, f32[4]{0}, s64[2]{0}, u64[2]{0}, u8[3]{0}, s32[2,2]{1,0}, u32[1]{0}, s4[2]{0}, f8e4m3fn[2]{0}) tuple(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o)
}
""",
    "sharding": r"""
HloModule sharded, frontend_attributes={xla.sdy.meshes="{mesh = #sdy.mesh<[\"x\"=2]>}", zeta="1"}

ENTRY main {
  p = f32[8,4]{1,0} parameter(0), sharding={devices=[2,1]0,1}, metadata={op_type="add" op_name="jit(f)/add" source_file="/tmp/t\303\251st.py" source_line=12}
  q = f32[8,4]{1,0} parameter(1), sharding={replicated}, frontend_attributes={_xla_compute_type="host", b="2", a="1"}
  a = f32[8,4]{1,0} add(p, q), sharding={devices=[2,1]0,1}, metadata={op_type="add" op_name="jit(f)/add\n\ttab" source_file="x.py" source_line=3}
  cc = f32[8,4]{1,0} custom-call(a), custom_call_target="MyTarget\x01", backend_config="{\"k\": \"v\\u0000\"}", custom_call_has_side_effect=true, api_version=API_VERSION_STATUS_RETURNING, schedule=SCHEDULE_LATEST
  ROOT t = (f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(a, cc), sharding={{devices=[2,1]0,1}, {maximal device=1}}
}
""",
    "collectives": """
HloModule coll

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[16]{0} parameter(0)
  ar = f32[16]{0} all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum, channel_id=1
  cp = f32[16]{0} collective-permute(ar), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  rp = f32[16]{0} reduce-precision(cp), exponent_bits=5, mantissa_bits=10
  ds = f32[4]{0} dynamic-slice(rp, s32[] constant(2)), dynamic_slice_sizes={4}
  ROOT ag = f32[16]{0} all-gather(ds), replica_groups=[1,4]<=[4], dimensions={0}
}
""",
}


@pytest.fixture(scope="module")
def hlo():
    """jaxlib._hlo, imported with its absl noise on fd 2 filtered."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.filtered_native_stderr():
        return _jaxlib.hlo_lib()


@pytest.fixture(scope="module")
def protos(hlo):
    """name -> (serialized HloModuleProto, module.to_string())."""
    out = {}
    for name, text in MODULES.items():
        module = hlo.hlo_module_from_text(text)
        out[name] = (module.as_serialized_hlo_module_proto(), module.to_string())
    return out


@pytest.fixture(scope="module")
def xla_dump(tmp_path_factory):
    """A real ``--xla_dump_to`` directory with ``--xla_dump_hlo_as_proto`` (and text)."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    jax = _jaxlib.jax()
    import jax.numpy as jnp
    from jaxlib.mlir import ir

    with _jaxlib.ir_context():
        # A loop: the optimized module's schedule has several computations, so the
        # dump holds an integer-keyed map with several entries (C++ writes them ascending).
        fn = jax.jit(lambda x: jax.lax.fori_loop(0, 3, lambda i, c: c * 2, x))
        module = ir.Module.parse(fn.lower(jnp.ones(4)).as_text())
        bytecode = io.BytesIO()
        module.operation.write_bytecode(bytecode)
    d = str(tmp_path_factory.mktemp("dump"))
    opts = _jaxlib.compile_options(dump_to=d, env_overrides=[
        ("xla_dump_hlo_as_proto", True), ("xla_dump_hlo_as_text", True)])
    _jaxlib.compile_executable(module, _jaxlib.cpu_devices()[:1], opts)
    gz = str(tmp_path_factory.mktemp("dump_gz"))
    opts = _jaxlib.compile_options(dump_to=gz, env_overrides=[
        ("xla_dump_hlo_as_proto", True), ("xla_dump_compress_protos", True)])
    _jaxlib.compile_executable(module, _jaxlib.cpu_devices()[:1], opts)
    return Path(d), Path(gz), bytecode.getvalue()


# ------------------------------------------------------------------ helpers

def _without_unknown(msg):
    copy = type(msg)()
    copy.CopyFrom(msg)
    copy.DiscardUnknownFields()
    return copy


def _has_unknown_fields(msg) -> bool:
    """Whether any field at any depth is one the schema does not know."""
    return (_without_unknown(msg).SerializeToString(deterministic=True)
            != msg.SerializeToString(deterministic=True))


def _record(number: int, wire: int, payload: bytes) -> bytes:
    def varint(v):
        out = bytearray()
        while v >= 0x80:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        return bytes(out + bytes([v]))
    if wire == 2:
        payload = varint(len(payload)) + payload
    return varint(number << 3 | wire) + payload


def _sniff_module(name: str, entry: str = "main"):
    msg = hp.message_class()(name=name, entry_computation_name=entry)
    comp = msg.computations.add(name="main")
    comp.instructions.add(name="p", opcode="parameter")
    return msg


# ------------------------------------------------------------------ round trips

@pytest.mark.parametrize("name", sorted(MODULES))
def test_round_trips(name, protos, hlo):
    pb, module_text = protos[name]
    assert hp.looks_like_hlo_proto(pb) == "HloModuleProto"
    msg = hp.decode(pb)
    assert msg.DESCRIPTOR.full_name == "xla.HloModuleProto"
    assert not _has_unknown_fields(msg)  # jaxlib's descriptors know every field jaxlib writes
    assert hp.encode(msg) == pb  # byte-exact

    text = hp.to_text(msg)
    back = hp.parse_text(text)
    # Compared as bytes: older protobuf compares NaN fields (in "constants") unequal.
    assert hp.encode(back) == pb
    assert hp.to_text(back) == text  # text -> proto -> text is stable
    assert hp.encode(hp.parse_json(hp.to_json(msg))) == pb

    reloaded = hlo.HloModule.from_serialized_hlo_module_proto(hp.encode(back))
    assert reloaded.to_string() == module_text


def test_decoded_message(protos):
    msg = hp.decode(protos["sharding"][0])
    assert msg.name == "sharded"
    insts = {i.name: i for i in msg.computations[0].instructions}
    p = insts["p"]
    assert hp.message_class("OpSharding").Type.Name(p.sharding.type) == "OTHER"
    assert list(p.sharding.tile_assignment_dimensions) == [2, 1]
    assert list(p.sharding.tile_assignment_devices) == [0, 1]
    assert p.metadata.source_file == "/tmp/t\u00e9st.py"
    assert p.metadata.source_line == 12
    assert insts["a"].metadata.op_name == "jit(f)/add\n\ttab"
    assert dict(insts["q"].frontend_attributes.map) == {"_xla_compute_type": "host", "a": "1", "b": "2"}
    cc = insts["cc"]
    assert cc.custom_call_target == "MyTarget\x01"
    assert cc.custom_call_has_side_effect is True
    assert hp.message_class("OpSharding").Type.Name(insts["t"].sharding.type) == "TUPLE"

    text = hp.to_text(msg)
    # C escapes: octal for non-ASCII / control bytes, \n \t \" as C++ TextFormat writes them.
    assert '      source_file: "/tmp/t\\303\\251st.py"\n' in text
    assert '      op_name: "jit(f)/add\\n\\ttab"\n' in text
    assert '    custom_call_target: "MyTarget\\001"\n' in text
    assert '    backend_config: "{\\"k\\": \\"v\\\\u0000\\"}"\n' in text
    assert "    custom_call_schedule: SCHEDULE_LATEST\n" in text
    assert "    custom_call_api_version: API_VERSION_STATUS_RETURNING\n" in text
    assert "      type: OTHER\n      tile_assignment_dimensions: 2\n      tile_assignment_dimensions: 1\n" in text
    # Map entries print sorted by key.
    assert text.index('key: "_xla_compute_type"') < text.index('key: "a"') < text.index('key: "b"')


def test_constants(protos):
    msg = hp.decode(protos["constants"][0])
    root = msg.computations[0].instructions
    lits = {i.name: i.literal for i in root if i.opcode == "constant"}
    assert lits["a"].bf16s == b"\xc0?\x00\xc0\xcd="  # 1.5, -2, 0.1 as little-endian bf16
    assert lits["c"].s8s == b"\x80\xff\x00\x7f"
    assert list(lits["d"].preds) == [True, False, True]
    assert list(lits["e"].c64s) == [1, 2, -3.5, 0.25]
    assert list(lits["f"].c128s) == [1e300, -1e-300]
    assert list(lits["g"].f64s) == [0.1, 0.0, 1.7976931348623157e308]
    f32s = list(lits["h"].f32s)
    assert f32s[0] == pytest.approx(0.1) and f32s[1:3] == [math.inf, -math.inf] and math.isnan(f32s[3])
    assert list(lits["i"].s64s) == [-(2**63), 2**63 - 1]
    assert list(lits["j"].u64s) == [0, 2**64 - 1]
    assert list(lits["l"].s32s) == [1, -2, 3, -4]
    assert list(lits["m"].u32s) == [2**32 - 1]
    assert lits["n"].s4s == b"\x08\x07"
    assert lits["o"].f8e4m3fns == b"8\xb0"

    text = hp.to_text(msg)
    for line in ['bf16s: "\\300?\\000\\300\\315="', 's8s: "\\200\\377\\000\\177"',
                 'u8s: "\\000\\"\\377"', "element_type: F8E4M3FN", "f32s: inf\n      f32s: -inf\n      f32s: nan",
                 "u64s: 0\n      u64s: 18446744073709551615"]:
        assert line in text, line


# ------------------------------------------------------------------ text format

def test_parse_text_syntax():
    # What C++ TextFormat accepts: ``name: {``, ``<...>``, lists, comments, both quotes,
    # adjacent literals, hex, ``1.5f``, ``t`` for true.
    text = """
# a comment
name: 'mod' "ule"
computations: {
  name: "c", id: 0x10;
  instructions <
    name: "p" opcode: "parameter"
    shape { element_type: F32 dimensions: [2, 3] layout { minor_to_major: [1, 0] } }
    epsilon: 1.5f
    operand_ids: []
    frontend_attributes { map { key: "b" value: "\\x41\\101\\303\\251\\n" } map: { key: "a" value: '' } }
  >
  instructions: [{ name: "q" opcode: "negate" operand_ids: [0] }, { name: "r" opcode: "abs" parameter_number: -3 }]
  root_id: 2
}
is_dynamic: t
"""
    msg = hp.parse_text(text)
    assert msg.name == "module"
    comp = msg.computations[0]
    assert comp.id == 16
    p, q, r = comp.instructions
    assert list(p.shape.dimensions) == [2, 3] and list(p.shape.layout.minor_to_major) == [1, 0]
    assert p.epsilon == 1.5
    assert list(p.operand_ids) == [] and list(q.operand_ids) == [0]
    assert r.parameter_number == -3
    assert dict(p.frontend_attributes.map) == {"a": "", "b": "AA\u00e9\n"}
    assert msg.is_dynamic is True

    printed = hp.to_text(msg)
    # Fields print in field-number order, as C++ prints them.
    assert printed.startswith('name: "module"\ncomputations {\n  name: "c"\n  instructions {\n')
    assert '  }\n  id: 16\n  root_id: 2\n}\nis_dynamic: true\n' in printed
    assert ('    frontend_attributes {\n      map {\n        key: "a"\n      }\n'
            '      map {\n        key: "b"\n        value: "AA\\303\\251\\n"\n      }\n    }\n') in printed
    again = hp.parse_text(printed)
    assert again == msg and hp.to_text(again) == printed
    assert hp.decode(hp.encode(again)) == again


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False), max_size=4),
       st.lists(st.floats(allow_nan=False), max_size=4),
       st.binary(max_size=16), st.text(max_size=12), st.integers(-(2**63), 2**63 - 1))
def test_text_and_binary_round_trip_property(f32s, f64s, raw, name, i64):
    cls = hp.message_class("HloInstructionProto")
    msg = cls(name=name, id=i64)
    msg.literal.f32s.extend(f32s)
    msg.literal.f64s.extend(f64s)
    msg.literal.u8s = raw
    msg.literal.s64s.append(i64)
    text = hp.to_text(msg)
    back = hp.parse_text(text, "HloInstructionProto")
    assert back == msg
    # -0.0 == 0.0, so compare the bits too.
    assert hp.encode(back) == hp.encode(msg)
    assert hp.to_text(back) == text
    assert hp.decode(hp.encode(msg), "HloInstructionProto") == msg


def test_nan_payload_survives_binary():
    # A signalling NaN's payload survives a binary round trip (text prints it as nan).
    raw = bytes([0x42, 0x08]) + b"\x01\x00\x80\x7f" + b"\x00\x00\xc0\x7f"  # LiteralProto.f32s
    lit = hp.decode(raw, "LiteralProto")
    assert hp.encode(lit) == raw
    assert hp.to_text(lit) == "f32s: nan\nf32s: nan\n"


# ------------------------------------------------------------------ binary details

def test_unknown_fields_are_kept(protos, hlo):
    pb = protos["elementwise"][0]
    msg = hp.decode(pb)
    inst = msg.computations[0].instructions[0]
    inst.MergeFromString(_record(4000, 0, b"\xff" * 9 + b"\x01"))  # 2**64 - 1
    extra = (_record(12345, 0, b"\x07") + _record(12346, 5, b"\x0a\x00\x00\x00")
             + _record(12348, 2, b"raw\xffbytes"))
    data = hp.encode(msg) + extra  # C++ writes unknown fields last, in the order read
    decoded = hp.decode(data)
    assert _has_unknown_fields(decoded)
    assert hp.encode(decoded) == data
    text = hp.to_text(decoded)
    assert "    4000: 18446744073709551615\n" in text
    assert text.endswith('12345: 7\n12346: 10\n12348: "raw\\377bytes"\n')
    # XLA ignores fields it does not know.
    original = hlo.HloModule.from_serialized_hlo_module_proto(pb).to_string()
    assert hlo.HloModule.from_serialized_hlo_module_proto(data).to_string() == original


def test_wrong_wire_type_is_an_unknown_field():
    # name (field 1) sent as a varint: kept as an unknown field, not an error; written
    # after the known fields, as C++ does.
    data = _record(1, 0, b"\x05") + _record(2, 2, b"e")
    msg = hp.decode(data)
    assert msg.name == "" and msg.entry_computation_name == "e"
    assert hp.encode(msg) == _record(2, 2, b"e") + _record(1, 0, b"\x05")
    assert hp.looks_like_hlo_proto(data) is None


def test_non_canonical_encodings():
    # What C++ never writes still decodes; it re-encodes canonically.
    unpacked = bytes([0x18, 0x01, 0x18, 0x02])  # ShapeProto.dimensions (3) sent unpacked
    msg = hp.decode(unpacked, "ShapeProto")
    assert list(msg.dimensions) == [1, 2]
    assert hp.encode(msg) == bytes([0x1A, 0x02, 0x01, 0x02])  # packed
    overlong = bytes([0x10, 0x81, 0x00])  # element_type = PRED in a two-byte varint
    assert hp.encode(hp.decode(overlong, "ShapeProto")) == bytes([0x10, 0x01])
    # Negative int32 values are 10-byte varints, as C++ writes them.
    meta = hp.message_class("OpMetadata")(source_line=-1)
    assert hp.encode(meta) == bytes([0x20]) + b"\xff" * 9 + b"\x01"
    # Enum numbers the enum does not name stay numbers (proto3 enums are open).
    msg = hp.decode(bytes([0x10, 0x63]), "ShapeProto")
    assert msg.element_type == 99 and hp.to_text(msg) == "element_type: 99\n"


def test_encode_is_cpp_deterministic():
    # Map entries by key: string keys, and integer keys, which upb alone writes descending.
    cls = hp.message_class("HloModuleProto")
    msg = cls(name="m", id=3)
    for key, value in (("z", "1"), ("a", "2")):
        msg.frontend_attributes.map[key] = value
    for key in (7, 1, 300, 0):
        msg.schedule.sequences[key].instruction_ids.extend([key, 1])
    seq = b"".join(
        _record(1, 2, _record(1, 0, bytes([k]) if k < 128 else b"\xac\x02")
                + _record(2, 2, _record(1, 2, (bytes([k]) if k < 128 else b"\xac\x02") + b"\x01")))
        for k in (0, 1, 7, 300))
    attrs = _record(1, 2, _record(1, 2, b"a") + _record(2, 2, b"2")) + _record(1, 2, _record(1, 2, b"z") + _record(2, 2, b"1"))
    want = _record(1, 2, b"m") + _record(5, 0, b"\x03") + _record(7, 2, seq) + _record(19, 2, attrs)
    assert hp.encode(msg) == want
    assert hp.decode(want) == msg


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("text, line, col, facts, hint", [
    ('name: "m"\ncomputations {\n  name: "c"\n  instructions {\n    nmae: "x"\n  }\n}\n',
     5, 5, ('"xla.HloInstructionProto"', '"nmae"'), "'name'"),
    ('computations {\n  instructions {\n    shape { element_type: F33 }\n  }\n}\n',
     3, 27, ('"xla.PrimitiveType"', "F33"), "'F32'"),
    ('name: "m"\ncomputations {\n  name: "c"\n', 3, 9, ('"}"',), None),
    ('name: "abc\n', 1, 7, ("ending quote", '"abc'), None),
    ("id: 9223372036854775808\n", 1, 5, ("out of range", "9223372036854775808"), None),
    ("id 5\n", 1, 4, ('":"',), None),
    ("computations { id: 1.5 }", 1, 20, ("integer", "1.5"), None),
    ("is_dynamic: yes", 1, 13, ('"true"', '"false"'), None),
    ('name: "a"\n  name: "b"\n', 2, 9, ('"xla.HloModuleProto"', "multiple", '"name"'), None),
], ids=["field-typo", "enum-typo", "unclosed", "string-quote", "out-of-range", "no-colon", "not-integer", "not-bool",
        "repeated-field"])
def test_parse_text_errors(text, line, col, facts, hint):
    """Protobuf's words, placed at the file's line and column (their exact text: protos'
    test_parse_text_errors_exactly)."""
    with pytest.raises(InputError) as info:
        hp.parse_text(text, file="m.pbtxt")
    err = info.value
    assert (err.file, err.line, err.col) == ("m.pbtxt", line, col)
    assert_mentions(err.message, *facts)
    if hint is None:
        assert err.hint is None
    else:
        assert_mentions(err.hint, hint)
    assert err.format().startswith(f"error: m.pbtxt:{line}:{col}: ")


def test_decode_errors(protos):
    pb = protos["elementwise"][0]
    with pytest.raises(InputError) as info:
        hp.decode(pb[: len(pb) // 2])
    assert_mentions(info.value.message, "HloModuleProto", "runs past the end")
    with pytest.raises(InputError) as info:
        hp.decode(b"\x08\xff")
    assert info.value.file is None
    assert_mentions(info.value.message, "HloModuleProto", "truncated varint", "byte 1")
    # Inside a sub-message: the field path says where.
    bad = _record(3, 2, _record(2, 2, _record(2, 2, b"\xff")))
    with pytest.raises(InputError) as info:
        hp.decode(bad)
    assert_mentions(info.value.message, "UTF-8", "byte 6", "computations[0].instructions[0].opcode")
    with pytest.raises(ValueError, match="unknown message type"):
        hp.decode(pb, "HloModuleProt")


# ------------------------------------------------------------------ sniffing

def test_looks_like_hlo_proto_negatives(protos):
    rng = random.Random(1234)
    for size in (0, 1, 3, 4, 16, 100, 1000, 10000):
        for _ in range(20):
            assert hp.looks_like_hlo_proto(rng.randbytes(size)) is None
    pb = protos["dot"][0]
    assert hp.looks_like_hlo_proto(b"") is None
    assert hp.looks_like_hlo_proto(b"ML\xefR" + pb) is None  # MLIR bytecode magic
    assert hp.looks_like_hlo_proto(MODULES["dot"].encode()) is None  # HLO text
    assert hp.looks_like_hlo_proto(hp.to_text(hp.decode(pb)).encode()) is None  # pbtxt
    assert hp.looks_like_hlo_proto(b"module {\n  func.func @main() {\n  }\n}\n") is None
    assert hp.looks_like_hlo_proto(pb[:-7]) is None  # truncated
    comp = hp.decode(pb).computations[0]
    assert hp.looks_like_hlo_proto(hp.encode(comp)) is None  # a computation is not a module
    assert hp.looks_like_hlo_proto("text") is None  # type: ignore[arg-type]


def test_module_proto_from_any(protos):
    pb = protos["while"][0]
    assert hp.module_proto_from_any(pb) == pb
    wrapped = hp.encode(hp.message_class("HloProto")(hlo_module=hp.decode(pb)))
    assert hp.looks_like_hlo_proto(wrapped) == "HloProto"
    assert hp.module_proto_from_any(wrapped) == pb
    assert hp.module_proto_from_any(gzip.compress(wrapped)) == pb
    assert hp.module_proto_from_any(gzip.compress(pb)) == pb
    with pytest.raises(InputError, match="HloModuleProto"):
        hp.module_proto_from_any(b"HloModule m\n")
    with pytest.raises(InputError) as info:  # a truncated file says where it breaks
        hp.module_proto_from_any(gzip.compress(pb[:-7]))
    assert_mentions(info.value.message, "HloModuleProto")
    assert re.search(r" at byte \d+", info.value.message), info.value.message


def test_strip_module_id(protos):
    assert hp.message_class().DESCRIPTOR.fields_by_name["id"].number == hp._MODULE_ID_FIELD
    pb = protos["reduce"][0]
    msg = hp.decode(pb)
    msg.id = 1234
    stripped = hp.strip_module_id(hp.encode(msg))
    assert hp.decode(stripped).id == 0
    msg.ClearField("id")
    assert stripped == hp.encode(msg)


def test_xla_dump_hlo_pb(xla_dump, hlo):
    dump_dir, gz_dir, bytecode = xla_dump
    names = sorted(p.name for p in dump_dir.iterdir())
    pbs = [n for n in names if n.endswith(".hlo.pb")]
    assert any(n.endswith(".before_optimizations.hlo.pb") for n in pbs), names
    assert any(n.endswith(".cpu_after_optimizations.hlo.pb") for n in pbs), names
    # XLA has no text-format HLO dump: --xla_dump_hlo_as_text writes HLO text (*.txt).
    assert not any(n.endswith((".pbtxt", ".textproto")) for n in names), names
    assert any(n.endswith(".before_optimizations.txt") for n in names), names

    for name in pbs:
        data = (dump_dir / name).read_bytes()
        assert hp.looks_like_hlo_proto(data) == "HloProto", name
        msg = hp.decode(data, "HloProto")
        assert not _has_unknown_fields(msg)
        assert hp.encode(msg) == data  # SerializeToStringDeterministic's bytes
        text = hp.to_text(msg)
        assert hp.parse_text(text, "HloProto") == msg
        module_pb = hp.module_proto_from_any(data)
        assert module_pb == hp.encode(msg.hlo_module)
        assert hp.looks_like_hlo_proto(module_pb) == "HloModuleProto"
        hlo_text = hlo.HloModule.from_serialized_hlo_module_proto(module_pb).to_string()
        assert "multiply" in hlo_text
        if "after_optimizations" in name:
            assert msg.buffer_assignment.buffer_allocations
            assert "buffer_assignment {\n  logical_buffers {\n" in text
            # Several schedule entries: the integer-keyed map C++ writes in ascending order.
            assert len(msg.hlo_module.schedule.sequences) > 1
    # The memory-usage report is a different proto: not sniffed as HLO.
    reports = [n for n in names if n.endswith("-memory-usage-report.pb")]
    from mlirhlo_driver._native import jaxlib as _jaxlib

    assert bool(reports) == _jaxlib.jaxlib_at_least("0.10.2"), names  # jaxlib 0.9 writes none
    for name in reports:
        assert hp.looks_like_hlo_proto((dump_dir / name).read_bytes()) is None

    # --xla_dump_compress_protos writes *.hlo.pb.gz.
    gzs = sorted(p for p in gz_dir.iterdir() if p.name.endswith(".hlo.pb.gz"))
    assert gzs
    for path in gzs:
        module_pb = hp.module_proto_from_any(path.read_bytes())
        assert module_pb == hp.module_proto_from_any(gzip.decompress(path.read_bytes()))
        assert hp.looks_like_hlo_proto(module_pb) == "HloModuleProto"

    assert bytecode.startswith(b"ML\xefR")
    assert hp.looks_like_hlo_proto(bytecode) is None


def test_gzip_protos_load_through_inputs(xla_dump, protos, tmp_path):
    from mlirhlo_driver.inputs import loader as inputs

    _, gz_dir, _ = xla_dump
    dumped = sorted(p for p in gz_dir.iterdir() if p.name.endswith(".before_optimizations.hlo.pb.gz"))[0]
    module_pb = protos["while"][0]
    plain = tmp_path / "while.pb.gz"
    plain.write_bytes(gzip.compress(module_pb))
    for path, want in ((dumped, hp.module_proto_from_any(dumped.read_bytes())), (plain, module_pb)):
        [loaded] = inputs.load(str(path))
        assert loaded.format == "hlo-proto"
        assert loaded.hlo_proto == want
        assert "func.func" in str(loaded.module)
    garbage = tmp_path / "bad.pb.gz"
    garbage.write_bytes(gzip.compress(b"\x0f\x00not a proto"))
    with pytest.raises(InputError) as info:
        inputs.load(str(garbage))
    assert info.value.file == str(garbage)
    assert_mentions(info.value.message, "not a serialized", "HloModuleProto")


def test_pbtxt_errors_through_inputs(tmp_path):
    from mlirhlo_driver.inputs import loader as inputs

    path = tmp_path / "m.pbtxt"
    path.write_text('name: "m"\nentry_computation_name: "main"\ncomputations {\n  nmae: "x"\n}\n')
    with pytest.raises(InputError) as info:
        inputs.load(str(path))
    assert (info.value.file, info.value.line, info.value.col) == (str(path), 4, 3)
    assert_mentions(info.value.format(), '"xla.HloComputationProto"', '"nmae"', "'name'")


def test_no_jax_import_at_module_import():
    code = ("import sys, mlirhlo_driver; before = set(sys.modules); "
            "import mlirhlo_driver.ir.hlo_proto, mlirhlo_driver.ir.protos; "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "assert not new & {'jax', 'jaxlib', 'numpy', 'google'}, new")
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_sniffing_text_imports_no_protobuf():
    # Every input is sniffed: text must be turned away before protobuf is imported.
    code = ("import sys; from mlirhlo_driver.ir import hlo_proto as hp; "
            "assert hp.looks_like_hlo_proto(b'\\nmodule {\\n}\\n') is None; "
            "assert hp.looks_like_hlo_proto(b'HloModule m\\n\\nENTRY main {}') is None; "
            "assert not [m for m in sys.modules if m.startswith('google')]")
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_looks_like_hlo_proto_turns_away_a_module_with_an_implausible_computation():
    """A module is sniffed as HLO only if every computation has instructions, a first opcode
    that looks like an HLO opcode and no misread field; else the bytes are no HLO proto."""
    module_class = hp.message_class()

    def module(*computations):
        msg = module_class(name="m", entry_computation_name="main")
        for comp in computations:
            msg.computations.add().MergeFromString(comp)
        return msg

    def comp(name, *opcodes):
        c = hp.message_class("HloComputationProto")(name=name)
        for i, op in enumerate(opcodes):
            c.instructions.add(name=f"i{i}", opcode=op)
        return hp.encode(c)

    good = comp("main", "parameter", "add")
    assert hp.looks_like_hlo_proto(hp.encode(module(good))) == "HloModuleProto"
    assert hp.looks_like_hlo_proto(hp.encode(module(comp("a", "all-reduce"), good))) == "HloModuleProto"
    bad = {
        "no instructions": comp("main"),
        "capitalised opcode": comp("main", "Parameter", "add"),
        "empty opcode": comp("main", "", "add"),
        "opcode with a call": comp("main", "add(x)"),
        "name sent as a varint": good + _record(1, 0, b"\x07"),
    }
    for why, c in bad.items():
        for comps in ((c,), (c, good), (good, c)):
            data = hp.encode(module(*comps))
            assert hp.looks_like_hlo_proto(data) is None, (why, len(comps))
            wrapped = hp.encode(hp.message_class("HloProto")(hlo_module=hp.decode(data)))
            assert hp.looks_like_hlo_proto(wrapped) is None, why
            with pytest.raises(InputError, match="HloModuleProto"):
                hp.module_proto_from_any(data)


# ------------------------------------------------------------------ names, sniffing edges, errors

@pytest.mark.golden
def test_message_names_are_xla_unless_qualified():
    """Short names are package ``xla`` (nested ones too); names qualified with xla.,
    stream_executor., tsl. or google. are taken as they are; others are a ValueError (the golden of
    its message)."""
    for name, full in [("HloModuleProto", "xla.HloModuleProto"),
                       ("HloModuleProto.ProfileInfo", "xla.HloModuleProto.ProfileInfo"),
                       ("xla.HloProto", "xla.HloProto"),
                       ("stream_executor.GpuTargetConfigProto", "stream_executor.GpuTargetConfigProto"),
                       ("tsl.profiler.Trace", "tsl.profiler.Trace"),
                       ("google.protobuf.Any", "google.protobuf.Any")]:
        assert hp.message_class(name).DESCRIPTOR.full_name == full, name
    with pytest.raises(ValueError) as info:
        hp.message_class("Nope")
    assert str(info.value) == "unknown message type 'Nope'"


def test_sniffing_reads_multi_byte_lengths_and_what_may_follow():
    """A module whose name needs a two-byte length is sniffed, bare or in an HloProto; after the
    name a module has field 2 or 3, an HloProto's module is last or followed by field 3."""
    long = _sniff_module("m" * 200)
    data = hp.encode(long)
    assert data[:3] == b"\x0a\xc8\x01"
    assert hp.looks_like_hlo_proto(data) == "HloModuleProto"
    assert hp.looks_like_hlo_proto(hp.encode(_sniff_module("m", entry=""))) == "HloModuleProto"  # 3 follows 1
    data128 = hp.encode(_sniff_module("m" * 128))
    assert data128[:3] == b"\x0a\x80\x01" and hp.looks_like_hlo_proto(data128) == "HloModuleProto"
    for unterminated in (b"\x0a\x80\x80\x80", b"\x0a\xff\xff\xff\xff\xff\x01\x12"):  # a length never ending
        assert hp.looks_like_hlo_proto(unterminated) is None
    short = hp.encode(_sniff_module("m"))
    assert short[:2] == b"\x0a\x01"
    # a name length written in five bytes (the most a length may take) is read as protobuf reads it
    assert hp.looks_like_hlo_proto(b"\x0a\x81\x80\x80\x80\x00" + short[2:]) == "HloModuleProto"
    wrapper = hp.message_class("HloProto")
    wrapped = hp.encode(wrapper(hlo_module=long))
    assert hp.looks_like_hlo_proto(wrapped) == "HloProto" and hp.module_proto_from_any(wrapped) == data
    with_assignment = wrapper(hlo_module=_sniff_module("m"))
    with_assignment.buffer_assignment.SetInParent()
    assert hp.encode(with_assignment).endswith(b"\x1a\x00")
    assert hp.looks_like_hlo_proto(hp.encode(with_assignment)) == "HloProto"
    # anything else after the module: not an HloProto as XLA writes it
    assert hp.looks_like_hlo_proto(hp.encode(wrapper(hlo_module=_sniff_module("m"))) + b"\x10\x01") is None
    # the module's records split around field 3 merge, as protobuf merges them
    module = hp.encode(_sniff_module("m"))
    cut = 3  # after the name record
    split = _record(1, 2, module[:cut]) + _record(3, 2, b"") + _record(1, 2, module[cut:])
    assert hp.looks_like_hlo_proto(split) == "HloProto"
    assert hp.module_proto_from_any(split) == module


@pytest.mark.golden
def test_module_proto_from_any_errors_say_why():
    """Bad gzip data, bytes that start like a module but break (with where), and bytes that do
    not start like one (no reason) are InputErrors; strip_module_id and decode name the type.
    The golden of module_proto_from_any's and strip_module_id's errors (zlib's own words after
    'cannot decompress gzip data: ' are Python's; decode's: protos' test_decode_errors_exactly)."""
    with pytest.raises(InputError) as info:
        hp.module_proto_from_any(b"\x1f\x8b\x08\x00\x00")
    assert info.value.message.startswith("cannot decompress gzip data: ")
    hint = "expected XLA's binary HLO proto (*.pb); text protos go through parse_text"
    with pytest.raises(InputError) as info:
        hp.module_proto_from_any(b"\x0a\x05abc")
    assert info.value.message == ("not a serialized HloProto or HloModuleProto: length 5 runs past the end "
                                  "of the enclosing message at byte 1")
    assert info.value.hint == hint
    with pytest.raises(InputError) as info:
        hp.module_proto_from_any(b"\x12\x05abc")
    assert (info.value.message, info.value.hint) == ("not a serialized HloProto or HloModuleProto", hint)
    with pytest.raises(InputError) as info:
        hp.strip_module_id(b"\x08\x01\x0a\x05abc")
    assert info.value.message == "malformed HloModuleProto: length 5 runs past the end of the enclosing message at byte 3"
    with pytest.raises(InputError) as info:
        hp.decode(b"\x0a\x05abc", "xla.HloComputationProto", file="c.pb")
    assert info.value.file == "c.pb"
    assert_mentions(info.value.message, "malformed HloComputationProto", "byte 1")  # the short name
    assert "xla." not in info.value.message
    assert hp.strip_module_id(b"\x28\x07\x0a\x01m\x28\x08") == b"\x0a\x01m"


@pytest.mark.parametrize("entry_id", [0, 7])
def test_the_entry_computation_is_found_by_id_else_by_name(entry_id):
    """A proto may leave entry_computation_id unset (0): the entry is then the computation
    of that name, not the first one listed (XLA lists callees, like a reducer, first)."""
    from mlirhlo_driver.ir import protos

    msg = protos.message_class("xla.HloModuleProto")()
    msg.entry_computation_name = "main"
    msg.entry_computation_id = entry_id
    for cid, name in ((3, "add"), (7, "main"), (9, "other")):
        c = msg.computations.add()
        c.id, c.name = cid, name
    assert hp.entry_computation(msg).name == "main"
    msg.entry_computation_name = ""
    assert hp.entry_computation(msg).name == ("main" if entry_id else "other")  # else XLA's habit: the last
