"""mlirhlo_driver.hlo_proto: HloModuleProto / HloProto binary <-> text format.

Real protos come from jaxlib (HLO text -> HloModuleProto) and from XLA's own
``--xla_dump_hlo_as_proto`` dump (HloProto, written with deterministic
serialization). The schema table is checked against the descriptors compiled
into jaxlib.
"""

from __future__ import annotations

import glob
import gzip
import io
import math
import mmap
import os
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from mlirhlo_driver import hlo_proto as hp
from mlirhlo_driver.errors import InputError

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
    from mlirhlo_driver import _jaxlib

    with _jaxlib.filtered_native_stderr():
        from jaxlib import _hlo
    return _hlo


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
    from mlirhlo_driver import _jaxlib

    jax = _jaxlib.jax()
    import jax.numpy as jnp
    from jaxlib.mlir import ir

    with _jaxlib.ir_context():
        module = ir.Module.parse(jax.jit(lambda x: x * 2).lower(jnp.ones(4)).as_text())
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


# ------------------------------------------------------------------ round trips

def _unknown_fields(msg):
    found = []
    for name, value in msg:
        if isinstance(name, int):
            found.append((msg.type, name))
        elif isinstance(value, hp.Message):
            found += _unknown_fields(value)
    return found


@pytest.mark.parametrize("name", sorted(MODULES))
def test_round_trips(name, protos, hlo):
    pb, module_text = protos[name]
    assert hp.looks_like_hlo_proto(pb) == "HloModuleProto"
    msg = hp.decode(pb)
    assert msg.type == "HloModuleProto"
    assert not _unknown_fields(msg)  # the schema knows every field jaxlib writes
    assert hp.encode(msg) == pb  # byte-exact
    # jaxlib's output is already canonical: fields by number, maps by key.
    assert hp.encode(msg, deterministic=True) == pb

    text = hp.to_text(msg)
    back = hp.parse_text(text)
    assert back == msg
    assert hp.to_text(back) == text  # text -> proto -> text is stable
    assert hp.encode(back) == pb

    reloaded = hlo.HloModule.from_serialized_hlo_module_proto(hp.encode(back))
    assert reloaded.to_string() == module_text


def test_decoded_tree(protos):
    msg = hp.decode(protos["sharding"][0])
    assert msg.get("name") == "sharded"
    comp = msg.get("computations")
    insts = {i.get("name"): i for i in comp.get_all("instructions")}
    p = insts["p"]
    assert p.get("sharding").get("type") == "OTHER"
    assert p.get("sharding").get_all("tile_assignment_dimensions") == [2, 1]
    assert p.get("sharding").get_all("tile_assignment_devices") == [0, 1]
    assert p.get("metadata").get("source_file") == "/tmp/t\u00e9st.py"
    assert p.get("metadata").get("source_line") == 12
    assert insts["a"].get("metadata").get("op_name") == "jit(f)/add\n\ttab"
    attrs = {e.get("key"): e.get("value") for e in insts["q"].get("frontend_attributes").get_all("map")}
    assert attrs == {"_xla_compute_type": "host", "a": "1", "b": "2"}
    cc = insts["cc"]
    assert cc.get("custom_call_target") == "MyTarget\x01"
    assert cc.get("custom_call_schedule") == "SCHEDULE_LATEST"
    assert cc.get("custom_call_api_version") == "API_VERSION_STATUS_RETURNING"
    assert cc.get("custom_call_has_side_effect") is True
    assert insts["t"].get("sharding").get("type") == "TUPLE"

    text = hp.to_text(msg)
    # C escapes: octal for non-ASCII / control bytes, \n \t \" as C++ CEscape writes them.
    assert '      source_file: "/tmp/t\\303\\251st.py"\n' in text
    assert '      op_name: "jit(f)/add\\n\\ttab"\n' in text
    assert '    custom_call_target: "MyTarget\\001"\n' in text
    assert '    backend_config: "{\\"k\\": \\"v\\\\u0000\\"}"\n' in text
    assert "      type: OTHER\n      tile_assignment_dimensions: 2\n      tile_assignment_dimensions: 1\n" in text
    # Map entries print sorted by key, key and value always.
    assert text.index('key: "_xla_compute_type"') < text.index('key: "a"') < text.index('key: "b"')


def test_constants_text(protos):
    text = hp.to_text(hp.decode(protos["constants"][0]))
    for line in [
        'bf16s: "\\300?\\000\\300\\315="',      # 1.5, -2, 0.1 as little-endian bf16
        's8s: "\\200\\377\\000\\177"',
        "preds: true\n      preds: false\n      preds: true",
        "c64s: 1\n      c64s: 2\n      c64s: -3.5\n      c64s: 0.25",
        "c128s: 1e+300\n      c128s: -1e-300",
        "f64s: 0.1\n      f64s: 0\n      f64s: 1.7976931348623157e+308",  # XLA reads -0 as 0
        "f32s: 0.1\n      f32s: inf\n      f32s: -inf\n      f32s: nan",
        "s64s: -9223372036854775808\n      s64s: 9223372036854775807",
        "u64s: 0\n      u64s: 18446744073709551615",
        "s32s: 1\n      s32s: -2\n      s32s: 3\n      s32s: -4",
        "u32s: 4294967295",
        's4s: "\\010\\007"',
        'f8e4m3fns: "8\\260"',
        'u8s: "\\000\\"\\377"',
        "element_type: F8E4M3FN",
    ]:
        assert line in text, line


# ------------------------------------------------------------------ text format details

def test_float_formatting_matches_cpp():
    # protobuf io::SimpleFtoa / SimpleDtoa: %.6g / %.15g when that reads back, else %.9g / %.17g.
    cases_f = [(0.1, "0.1"), (1 / 3, "0.333333343"), (16777216.0, "16777216"), (1.5, "1.5"),
               (3.4028234663852886e38, "3.40282347e+38"), (1e-45, "1.40129846e-45"),
               (-0.0, "-0"), (1e10, "1e+10"), (math.inf, "inf"), (-math.inf, "-inf"),
               (math.nan, "nan"), (2.5e-3, "0.0025")]
    for value, want in cases_f:
        msg = hp.Message("HloInstructionProto", [("epsilon", hp._to_float32(value))])
        assert hp.to_text(msg) == f"epsilon: {want}\n", value
    cases_d = [(0.1, "0.1"), (0.1 + 0.2, "0.30000000000000004"), (0.7999999999999999, "0.79999999999999993"),
               (1e300, "1e+300"), (5e-324, "4.94065645841247e-324"), (123456789.0, "123456789"),
               (-2.5, "-2.5"), (1e15, "1e+15"), (1e16, "1e+16"), (math.nan, "nan")]
    for value, want in cases_d:
        msg = hp.Message("Statistic", [("stat_val", value)])
        assert hp.to_text(msg) == f"stat_val: {want}\n", value


def test_parse_text_syntax():
    text = """
# a comment
name: 'mod' "ule"   # adjacent literals concatenate; both quote styles
computations: {
  name: "c", id: 0x10;
  instructions <
    name: "p" opcode: "parameter"
    shape { element_type: F32 dimensions: [2, 3] layout { minor_to_major: [1, 0] } }
    epsilon: 1.5f
    operand_ids: []
    frontend_attributes { map { key: "b" value: "\\x41\\101\\u00e9\\n" } map: { key: "a" value: '' } }
  >
  instructions: [{ name: "q" opcode: "negate" operand_ids: [0] }, { name: "r" opcode: "abs" parameter_number: -3 }]
  root_id: 2
}
is_dynamic: t
12345: 7
"""
    msg = hp.parse_text(text)
    assert msg.get("name") == "module"
    comp = msg.get("computations")
    assert comp.get("id") == 16
    p, q, r = comp.get_all("instructions")
    assert p.get_all("dimensions") == [] and p.get("shape").get_all("dimensions") == [2, 3]
    assert p.get("epsilon") == 1.5
    assert "operand_ids" not in dict(p)
    assert q.get_all("operand_ids") == [0]
    assert r.get("parameter_number") == -3
    entries = p.get("frontend_attributes").get_all("map")
    assert entries[0].get("value") == "AA\u00e9\n"
    assert msg.get("is_dynamic") is True
    assert msg[-1] == (12345, hp.Unknown(0, 7))

    printed = hp.to_text(msg)
    assert printed.startswith('name: "module"\ncomputations {\n  name: "c"\n  id: 16\n')
    assert ('    frontend_attributes {\n      map {\n        key: "a"\n        value: ""\n      }\n'
            '      map {\n        key: "b"\n        value: "AA\\303\\251\\n"\n      }\n    }\n') in printed
    assert printed.endswith("is_dynamic: true\n12345: 7\n")
    again = hp.parse_text(printed)
    assert hp.to_text(again) == printed
    assert hp.decode(hp.encode(again)) == again


def test_unknown_fields_are_kept(protos, hlo):
    pb = protos["elementwise"][0]
    msg = hp.decode(pb)
    comp = msg.get("computations")
    inst = comp.get_all("instructions")[0]
    inst.append((4000, hp.Unknown(0, 2**64 - 1)))
    msg.append((12345, hp.Unknown(0, 7)))
    msg.append((12346, hp.Unknown(5, 0x0000000A)))
    msg.append((12347, hp.Unknown(1, 0x123456789ABCDEF0)))
    msg.append((12348, hp.Unknown(2, b"raw\xffbytes")))
    msg.append((12349, hp.Unknown(2, bytes([8, 150, 1, 0x12, 3, 0x68, 0x69, 0x21]))))  # {1: 150, 2: "hi!"}
    msg.append((12350, hp.Unknown(2, b"")))
    data = hp.encode(msg)

    # decoding keeps them, printing shows them like protoc --decode_raw, and they come back.
    decoded = hp.decode(data)
    assert decoded == msg
    assert hp.encode(decoded) == data
    text = hp.to_text(decoded)
    assert "    4000: 18446744073709551615\n" in text
    assert text.endswith('12345: 7\n12346: 0x0000000a\n12347: 0x123456789abcdef0\n'
                         '12348: "raw\\377bytes"\n12349 {\n  1: 150\n  2: "hi!"\n}\n12350: ""\n')
    assert hp.parse_text(text) == decoded
    assert hp.encode(hp.parse_text(text)) == data
    # XLA ignores fields it does not know.
    original = hlo.HloModule.from_serialized_hlo_module_proto(pb).to_string()
    assert hlo.HloModule.from_serialized_hlo_module_proto(data).to_string() == original


def test_wrong_wire_type_is_an_unknown_field():
    # name (field 1) sent as a varint: kept as an unknown field, not an error.
    data = bytes([0x08, 0x05]) + bytes([0x12, 0x01]) + b"e"
    msg = hp.decode(data)
    assert list(msg) == [(1, hp.Unknown(0, 5)), ("entry_computation_name", "e")]
    assert hp.encode(msg) == data
    assert hp.to_text(msg) == '1: 5\nentry_computation_name: "e"\n'


def test_non_canonical_encodings():
    # What C++ never writes still decodes; it re-encodes canonically.
    unpacked = bytes([0x18, 0x01, 0x18, 0x02])  # ShapeProto.dimensions (3) sent unpacked
    msg = hp.decode(unpacked, "ShapeProto")
    assert msg.get_all("dimensions") == [1, 2]
    assert hp.encode(msg) == bytes([0x1A, 0x02, 0x01, 0x02])  # packed
    overlong = bytes([0x10, 0x81, 0x00])  # element_type = PRED in a two-byte varint
    assert hp.decode(overlong, "ShapeProto").get("element_type") == "PRED"
    assert hp.encode(hp.decode(overlong, "ShapeProto")) == bytes([0x10, 0x01])
    # Negative int32 values are 10-byte varints, as C++ writes them.
    msg = hp.Message("OpMetadata", [("source_line", -1)])
    assert hp.encode(msg) == bytes([0x20]) + b"\xff" * 9 + b"\x01"
    assert hp.decode(hp.encode(msg), "OpMetadata") == msg
    # Enum numbers the enum does not name stay numbers.
    msg = hp.decode(bytes([0x10, 0x63]), "ShapeProto")
    assert msg.get("element_type") == 99 and hp.to_text(msg) == "element_type: 99\n"
    # A signalling NaN's payload survives a binary round trip (text prints it as nan).
    raw = bytes([0x42, 0x08]) + b"\x01\x00\x80\x7f" + b"\x00\x00\xc0\x7f"  # LiteralProto.f32s
    lit = hp.decode(raw, "LiteralProto")
    assert hp.encode(lit) == raw
    assert hp.to_text(lit) == "f32s: nan\nf32s: nan\n"


def test_deterministic_encoding_sorts():
    msg = hp.Message("HloModuleProto", [
        ("id", 3), ("name", "m"), (99, hp.Unknown(0, 1)),
        ("frontend_attributes", hp.Message("FrontendAttributes", [
            ("map", hp.Message("FrontendAttributes.MapEntry", [("key", "z"), ("value", "1")])),
            ("map", hp.Message("FrontendAttributes.MapEntry", [("key", "a"), ("value", "2")])),
        ])),
    ])
    canonical = hp.Message("HloModuleProto", [
        ("name", "m"), ("id", 3),
        ("frontend_attributes", hp.Message("FrontendAttributes", [
            ("map", hp.Message("FrontendAttributes.MapEntry", [("key", "a"), ("value", "2")])),
            ("map", hp.Message("FrontendAttributes.MapEntry", [("key", "z"), ("value", "1")])),
        ])),
        (99, hp.Unknown(0, 1)),
    ])
    assert hp.encode(msg, deterministic=True) == hp.encode(canonical)
    assert hp.decode(hp.encode(msg)) == msg  # default keeps the given order
    assert hp.to_text(msg) == hp.to_text(hp.Message("HloModuleProto", [
        ("id", 3), ("name", "m"), (99, hp.Unknown(0, 1)), canonical[2]]))  # maps sorted in text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(width=32), max_size=4), st.lists(st.floats(), max_size=4),
       st.binary(max_size=16), st.text(max_size=12), st.integers(-(2**63), 2**63 - 1))
def test_text_round_trip_property(f32s, f64s, raw, name, i64):
    lit = hp.Message("LiteralProto", [("f32s", v) for v in f32s] + [("f64s", v) for v in f64s]
                     + [("u8s", raw), ("s64s", i64)])
    msg = hp.Message("HloInstructionProto", [("name", name), ("literal", lit), ("id", i64)])
    text = hp.to_text(msg)
    back = hp.parse_text(text, "HloInstructionProto")
    assert back == msg
    assert hp.to_text(back) == text
    assert hp.decode(hp.encode(msg), "HloInstructionProto") == msg


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("text, line, col, message, hint", [
    ('name: "m"\ncomputations {\n  name: "c"\n  instructions {\n    nmae: "x"\n  }\n}\n',
     5, 5, 'message type "xla.HloInstructionProto" has no field named "nmae"', "did you mean 'name'?"),
    ('name: "m"\ncomputations {\n  name: "c"\n', 4, 1, 'expected "}", found end of input', None),
    ('computations {\n  instructions {\n    shape { element_type: F33 }\n  }\n}\n',
     3, 27, 'unknown enumeration value "F33" for field "element_type" (PrimitiveType)', "did you mean"),
    ('name: "a"\n  name: "b"\n', 2, 3, 'non-repeated field "name" is specified multiple times', None),
    ('name: "abc\n', 1, 7, "unterminated string literal (strings cannot span lines)", None),
    ("id: 9223372036854775808\n", 1, 5, 'integer out of range for field "id" (int64)', None),
    ("id 5\n", 1, 4, 'expected ":", found "5"', None),
    ("name: [\"a\"]\n", 1, 7, 'field "name" is not repeated; "[" needs a repeated field', None),
    ("computations { id: 1.5 }", 1, 20, 'expected an integer, found "1.5"', None),
    ("is_dynamic: yes", 1, 13, 'expected true or false for field "is_dynamic", found "yes"', None),
    ('name: "\\q"', 1, 8, "invalid escape sequence \\q", None),
])
def test_parse_text_errors(text, line, col, message, hint):
    with pytest.raises(InputError) as info:
        hp.parse_text(text, file="m.pbtxt")
    err = info.value
    assert (err.file, err.line, err.col, err.message) == ("m.pbtxt", line, col, message)
    if hint is None:
        assert err.hint is None
    else:
        assert err.hint is not None and err.hint.startswith(hint)
    assert err.format().startswith(f"error: m.pbtxt:{line}:{col}: ")


def test_decode_errors(protos):
    pb = protos["elementwise"][0]
    with pytest.raises(InputError, match="malformed HloModuleProto"):
        hp.decode(pb[: len(pb) // 2])
    with pytest.raises(InputError, match="malformed HloModuleProto: truncated varint"):
        hp.decode(b"\x08\xff")
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
    comp = hp.decode(pb).get("computations")
    assert hp.looks_like_hlo_proto(hp.encode(comp)) is None  # a computation is not a module
    assert hp.looks_like_hlo_proto("text") is None  # type: ignore[arg-type]


def test_module_proto_from_any(protos):
    pb = protos["while"][0]
    assert hp.module_proto_from_any(pb) == pb
    wrapped = hp.encode(hp.Message("HloProto", [("hlo_module", hp.decode(pb))]))
    assert hp.looks_like_hlo_proto(wrapped) == "HloProto"
    assert hp.module_proto_from_any(wrapped) == pb
    assert hp.module_proto_from_any(gzip.compress(wrapped)) == pb
    with pytest.raises(InputError, match="not a serialized HloProto or HloModuleProto"):
        hp.module_proto_from_any(b"HloModule m\n")


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
        assert not _unknown_fields(msg)
        assert hp.encode(msg) == data  # written with SerializeToStringDeterministic
        assert hp.encode(msg, deterministic=True) == data
        text = hp.to_text(msg)
        assert hp.parse_text(text, "HloProto") == msg
        module_pb = hp.module_proto_from_any(data)
        assert module_pb == hp.encode(msg.get("hlo_module"))
        assert hp.looks_like_hlo_proto(module_pb) == "HloModuleProto"
        hlo_text = hlo.HloModule.from_serialized_hlo_module_proto(module_pb).to_string()
        assert "multiply" in hlo_text
        if "after_optimizations" in name:
            assert msg.get("buffer_assignment").get_all("buffer_allocations")
            assert "buffer_assignment {\n  logical_buffers {\n" in text
    # The memory-usage report is a different proto: not sniffed as HLO.
    for name in names:
        if name.endswith("-memory-usage-report.pb"):
            assert hp.looks_like_hlo_proto((dump_dir / name).read_bytes()) is None

    # --xla_dump_compress_protos writes *.hlo.pb.gz.
    gzs = sorted(p for p in gz_dir.iterdir() if p.name.endswith(".hlo.pb.gz"))
    assert gzs
    for path in gzs:
        module_pb = hp.module_proto_from_any(path.read_bytes())
        assert hp.looks_like_hlo_proto(module_pb) == "HloModuleProto"

    assert bytecode.startswith(b"ML\xefR")
    assert hp.looks_like_hlo_proto(bytecode) is None


# ------------------------------------------------------------------ schema vs jaxlib

def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return result, pos


def _fields(buf, pos=0, end=None, stop_outside=None):
    end = len(buf) if end is None else end
    while pos < end:
        tag, p = _varint(buf, pos)
        number, wt = tag >> 3, tag & 7
        if stop_outside is not None and (number not in stop_outside or wt not in (0, 2)):
            return
        if wt == 0:
            value, p = _varint(buf, p)
        elif wt == 2:
            n, p = _varint(buf, p)
            value, p = bytes(buf[p:p + n]), p + n
        elif wt == 5:
            value, p = bytes(buf[p:p + 4]), p + 4
        elif wt == 1:
            value, p = bytes(buf[p:p + 8]), p + 8
        else:
            return
        yield number, value
        pos = p


_TYPE_NAMES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64",
               7: "fixed32", 8: "bool", 9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32",
               16: "sfixed64", 17: "sint32", 18: "sint64"}


def _walk_enum(raw, prefix, enums):
    name, values = None, []
    for number, value in _fields(raw):
        if number == 1:
            name = value.decode()
        elif number == 2:
            ev = dict(_fields(value))
            v = ev.get(2, 0)
            values.append((ev[1].decode(), v - (1 << 64) if v >> 63 else v))
    enums[prefix + name] = values


def _walk_message(raw, prefix, messages, enums):
    fields_ = list(_fields(raw))
    name = prefix + next(v.decode() for n, v in fields_ if n == 1)
    out = []
    for number, value in fields_:
        if number == 2:
            fd = dict(_fields(value))
            type_ = _TYPE_NAMES.get(fd[5]) or fd[6].decode().removeprefix(".xla.")
            out.append((fd[3], fd[1].decode(), type_, fd.get(4) == 3))
        elif number == 3:
            _walk_message(value, name + ".", messages, enums)
        elif number == 4:
            _walk_enum(value, name + ".", enums)
    messages[name] = out


def test_schema_matches_jaxlib_descriptors():
    import jaxlib

    libs = glob.glob(os.path.join(os.path.dirname(jaxlib.__file__), "libjax_common.so"))
    if not libs:
        pytest.skip("libjax_common.so not found")
    messages, enums = {}, {}
    with open(libs[0], "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as so:
        for path in (b"xla/service/hlo.proto", b"xla/xla_data.proto"):
            start = so.find(b"\n" + bytes([len(path)]) + path + b"\x12")
            if start < 0:
                pytest.skip(f"descriptor of {path.decode()} not found in jaxlib")
            window = so[start:start + 200_000]
            top = list(_fields(window, stop_outside=set(range(1, 15))))
            for number, value in top:
                if number == 4:
                    _walk_message(value, "", messages, enums)
                elif number == 5:
                    _walk_enum(value, "", enums)

    for name, schema in hp.SCHEMA.items():
        assert name in messages, name
        want = sorted(messages[name])
        have = sorted((f.number, f.name, f.type, f.repeated) for f in schema.fields)
        assert have == want, name
    for name, schema in hp.ENUMS.items():
        assert sorted(schema.by_name.items()) == sorted(enums[name]), name
    # Every message and enum the table's fields reach is in the table.
    for schema in hp.SCHEMA.values():
        for f in schema.fields:
            assert f.kind != "scalar" or f.type in hp._SCALAR_WIRE, (schema.name, f.name)


def test_no_jax_import_at_module_import():
    code = ("import sys, mlirhlo_driver; before = set(sys.modules); "
            "import mlirhlo_driver.hlo_proto; "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "assert not new & {'jax', 'jaxlib', 'numpy'}, new")
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])
