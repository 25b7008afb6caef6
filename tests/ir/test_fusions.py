"""mlirhlo_driver.ir.fusions: the instructions XLA launches, read from an HloModuleProto.

Modules are written as HLO text and turned into protos by jaxlib's parser (no compile).
"""

from __future__ import annotations

import pytest

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.ir import dtypes, fusions


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


# An unfused entry computation: one op of each kind that is or is not a matrix multiply,
# each with a different lhs element type so the dot's type can be told apart.
UNFUSED = """
HloModule unfused

ENTRY main {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[3,4]{1,0} parameter(1)
  h = f16[2,3]{1,0} parameter(2)
  g = f16[3,4]{1,0} parameter(3)
  i = bf16[1,4,4,1]{3,2,1,0} parameter(4)
  k = bf16[2,2,1,1]{3,2,1,0} parameter(5)
  add = f32[2,3]{1,0} add(a, a)
  d = f32[2,4]{1,0} dot(add, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  gemm = f16[2,4]{1,0} custom-call(h, g), custom_call_target="__cublas$gemm"
  lt = f16[2,4]{1,0} custom-call(h, g), custom_call_target="__cublas$lt$matmul"
  other = f16[2,4]{1,0} custom-call(h, g), custom_call_target="my_kernel"
  conv = bf16[1,3,3,1]{3,2,1,0} convolution(i, k), window={size=2x2}, dim_labels=b01f_01io->b01f
  ROOT t = (f32[2,4]{1,0}, f16[2,4]{1,0}, f16[2,4]{1,0}, f16[2,4]{1,0}, bf16[1,3,3,1]{3,2,1,0}) tuple(d, gemm, lt, other, conv)
}
"""

# A fusion (calling a nested fusion with a dot) in the entry and a while loop whose
# body and condition launch their own kernels; metadata on some instructions only.
CONTROL_FLOW = """
HloModule flow

inner {
  q0 = f16[2,3]{1,0} parameter(0)
  q1 = f16[3,4]{1,0} parameter(1)
  ROOT dd = f32[2,4]{1,0} dot(q0, q1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot" source_file="m.py" source_line=7}
}

fused {
  a = f16[2,3]{1,0} parameter(0)
  b = f16[3,4]{1,0} parameter(1)
  n = f32[2,4]{1,0} fusion(a, b), kind=kLoop, calls=inner
  ROOT r = f32[2,4]{1,0} negate(n), metadata={op_name="jit(f)/neg" source_file="m.py" source_line=9 source_column=4}
}

fused2 {
  c = f32[4]{0} parameter(0)
  ROOT s = f32[4]{0} sine(c), metadata={op_name="jit(f)/sin" source_file="m.py" source_line=11}
}

body {
  bp = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(bp), index=0
  v = f32[4]{0} get-tuple-element(bp), index=1
  e = f32[4]{0} exponential(v), metadata={op_name="jit(f)/exp"}
  ROOT bt = (s32[], f32[4]{0}) tuple(i, e)
}

cond {
  cp = (s32[], f32[4]{0}) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  c5 = s32[] constant(5)
  ROOT lt = pred[] compare(ci, c5), direction=LT
}

ENTRY main {
  x = f16[2,3]{1,0} parameter(0)
  y = f16[3,4]{1,0} parameter(1)
  z = f32[4]{0} parameter(2)
  f = f32[2,4]{1,0} fusion(x, y), kind=kOutput, calls=fused
  g = f32[4]{0} fusion(z), kind=kLoop, calls=fused2, metadata={op_name="own"}
  zero = s32[] constant(0)
  tu = (s32[], f32[4]{0}) tuple(zero, z)
  w = (s32[], f32[4]{0}) while(tu), condition=cond, body=body
  bc = f32[2,4]{1,0} bitcast(f)
  ROOT out = (f32[2,4]{1,0}, (s32[], f32[4]{0}), f32[4]{0}) tuple(bc, w, g)
}
"""


def _module_with_frames():
    from mlirhlo_driver.ir import hlo_proto

    m = hlo_proto.message_class("HloModuleProto")()
    idx = m.stack_frame_index
    idx.file_names.extend(["a.py", "b.py"])
    idx.function_names.append("f")
    # Locations 1..4: file id 0, file id past the end, a.py:3:5, b.py:8 (the last file).
    idx.file_locations.add(file_name_id=0, line=1)
    idx.file_locations.add(file_name_id=3, line=1)
    idx.file_locations.add(file_name_id=1, function_name_id=1, line=3, column=5)
    idx.file_locations.add(file_name_id=2, function_name_id=1, line=8, column=0)
    # Frames 1..7: locations 3, 4, 1, 2, 0 (none), 5 (past the end), 4 (the last frame, the last location).
    for loc in (3, 4, 1, 2, 0, 5, 4):
        idx.stack_frames.add(file_location_id=loc)
    return m


GEMMS = """
HloModule gemms

ENTRY main {
  h = f16[2,3,5]{2,1,0} parameter(0)
  g = f16[3,5,4]{2,1,0} parameter(1)
  h2 = f16[2,3]{1,0} parameter(2)
  g2 = f16[3,4]{1,0} parameter(3)
  gemm = (f16[2,4]{1,0}, s8[64]{0}) custom-call(h, g), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1","2"],"rhs_contracting_dimensions":["0","1"]}}}
  lt = f16[2,4]{1,0} custom-call(h2, g2), custom_call_target="__cublas$lt$matmul"
  other = f16[2,4]{1,0} custom-call(h2, g2), custom_call_target="my_kernel"
  gte = f16[2,4]{1,0} get-tuple-element(gemm), index=0
  ROOT t = (f16[2,4]{1,0}, f16[2,4]{1,0}, f16[2,4]{1,0}) tuple(gte, lt, other)
}
"""

# Dots whose operands differ in type: the row's dot type is the lhs operand's.
MIXED = """
HloModule mixed

fused {
  q0 = f16[2,3]{1,0} parameter(0)
  q1 = bf16[3,4]{1,0} parameter(1)
  ROOT dd = f32[2,4]{1,0} dot(q0, q1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY main {
  x = f16[2,3]{1,0} parameter(0)
  y = bf16[3,4]{1,0} parameter(1)
  d = f32[2,4]{1,0} dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  gemm = f32[2,4]{1,0} custom-call(y, x), custom_call_target="__cublas$lt$matmul$f8"
  f = f32[2,4]{1,0} fusion(x, y), kind=kLoop, calls=fused
  ROOT t = (f32[2,4]{1,0}, f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(d, gemm, f)
}
"""


def test_launched_computations_follow_control_flow_once_and_skip_missing_ids():
    """The computations whose instructions launch kernels: the entry and what its control flow
    calls, transitively, each once; fusion bodies are not followed, and an id the module lacks
    (a truncated dump) is passed over rather than failing the table."""
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.ir.fusions import _scheduled

    m = hlo_proto.message_class("HloModuleProto")()
    m.entry_computation_id = 1
    comps = {cid: m.computations.add(id=cid, name=f"c{cid}") for cid in (1, 2, 3, 4, 5)}
    comps[1].instructions.add(name="w", opcode="while", called_computation_ids=[2, 3, 99])
    comps[1].instructions.add(name="f", opcode="fusion", called_computation_ids=[5])
    comps[2].instructions.add(name="c", opcode="call", called_computation_ids=[4, 3])
    comps[3].instructions.add(name="c2", opcode="call", called_computation_ids=[4])
    assert _scheduled(m, {c.id: c for c in m.computations}) == {1, 2, 3, 4}


def test_unfused_dots_convolutions_and_cublas_gemms_count_as_dots():
    """An unfused dot, convolution or cuBLAS GEMM call has a dot of its lhs type; other ops and custom calls have none."""
    f32, f16, bf16 = (dtypes.BY_HLO[t].number for t in ("f32", "f16", "bf16"))
    rows = {ins.name: ins for ins in fusions.launched(_jaxlib.hlo_text_to_proto(UNFUSED))}
    assert {name: (ins.has_dot, ins.dot_type) for name, ins in rows.items()} == {
        "add": (False, None),
        "d": (True, f32),
        "gemm": (True, f16),
        "lt": (True, f16),
        "other": (False, None),
        "conv": (True, bf16),
    }
    assert rows["gemm"].custom_call_target == "__cublas$gemm" and rows["other"].custom_call_target == "my_kernel"
    assert rows["add"].custom_call_target is None and rows["conv"].out_type == bf16


def test_launched_rows_of_fusions_and_control_flow_exactly():
    """Launched: fusions with their flattened body (nested fusions inline, parameters left
    out), a fusion's metadata else its root's, the ops of while bodies and conditions, and
    no bookkeeping ops (parameter, constant, tuple, get-tuple-element, bitcast, while)."""
    f16, f32, pred = (dtypes.BY_HLO[t].number for t in ("f16", "f32", "pred"))
    rows = fusions.launched(_jaxlib.hlo_text_to_proto(CONTROL_FLOW))
    assert rows == [
        fusions.Launched("e", "body", "exponential", None, None, "jit(f)/exp", None, (), False, None, f32),
        fusions.Launched("lt", "cond", "compare", None, None, None, None, (), False, None, pred),
        fusions.Launched(
            "f", "main", "fusion", "kOutput", None, "jit(f)/neg", "m.py:9:4",
            (fusions.FusedOp("dd", "dot", "jit(f)/dot", "m.py:7"), fusions.FusedOp("r", "negate", "jit(f)/neg", "m.py:9:4")),
            True, f16, f32),
        fusions.Launched("g", "main", "fusion", "kLoop", None, "own", "m.py:11",
                         (fusions.FusedOp("s", "sine", "jit(f)/sin", "m.py:11"),), False, None, f32),
    ]
    assert rows[2].kernel == "f" and rows[2].fused[0].to_dict() == {
        "name": "dd", "opcode": "dot", "op_name": "jit(f)/dot", "source": "m.py:7"}
    assert fusions.by_kernel(rows) == {"e": rows[0], "lt": rows[1], "f": rows[2], "g": rows[3]}


def test_kernel_names_replace_what_ptx_does_not_allow():
    """A kernel is named as its instruction with every character outside [A-Za-z0-9_] made ``_``."""
    assert fusions.kernel_name("loop_subtract_fusion.1") == "loop_subtract_fusion_1"
    assert fusions.kernel_name("a-b$c.d e") == "a_b_c_d_e"
    assert fusions.kernel_name("Az09_x") == "Az09_x"


def test_source_from_metadata_fields_or_the_stack_frame_index():
    """``file:line[:col]`` from source_file (line and column only when set), else from the
    1-based stack frame id through the index; any id out of range gives no source."""
    from mlirhlo_driver.ir import hlo_proto

    m = _module_with_frames()
    md = hlo_proto.message_class("OpMetadata")

    def src(msg=m, **kw):
        return fusions._source(msg, md(**kw))

    assert src(source_file="x.py", source_line=3, source_column=5) == "x.py:3:5"
    assert src(source_file="x.py", source_line=3) == "x.py:3"
    assert src(source_file="x.py") == "x.py"
    assert src(source_file="x.py", source_column=5) == "x.py:5"
    assert src(source_file="x.py", stack_frame_id=1) == "x.py"
    assert src() is None
    assert src(stack_frame_id=1) == "a.py:3:5"
    assert src(stack_frame_id=2) == "b.py:8"
    assert src(stack_frame_id=7) == "b.py:8"
    assert [src(stack_frame_id=k) for k in (3, 4, 5, 6, 8)] == [None] * 5
    assert src(hlo_proto.message_class("HloModuleProto")(), stack_frame_id=1) is None


def test_first_array_type_looks_into_nested_tuples():
    """A result's type: the array's own, or the first array found depth-first in its tuples; None without one."""
    from mlirhlo_driver.ir import hlo_proto

    shape = hlo_proto.message_class("ShapeProto")
    f16, s32 = dtypes.BY_HLO["f16"].number, dtypes.BY_HLO["s32"].number
    assert fusions._first_array_type(shape(element_type=f16)) == f16
    assert fusions._first_array_type(shape()) is None
    nested = shape(element_type=13, tuple_shapes=[shape(element_type=13, tuple_shapes=[shape()]),
                                                  shape(element_type=13, tuple_shapes=[shape(), shape(element_type=s32)]),
                                                  shape(element_type=f16)])
    assert fusions._first_array_type(nested) == s32
    assert fusions._first_array_type(shape(element_type=13, tuple_shapes=[shape(), shape()])) is None


def test_array_bytes_packs_sub_byte_types_and_sums_tuples():
    """Bytes of a shape: elements x bits rounded up to whole bytes; a tuple's the sum of its
    elements'; types without a size (token) count 0."""
    from mlirhlo_driver.ir import hlo_proto

    shape = hlo_proto.message_class("ShapeProto")

    def of(t, *dims):
        return shape(element_type=dtypes.BY_HLO[t].number, dimensions=dims)

    assert fusions.array_bytes(of("f32", 2, 3)) == 24
    assert fusions.array_bytes(of("f32")) == 4
    assert fusions.array_bytes(of("pred", 5)) == 5
    assert fusions.array_bytes(of("s4", 3)) == 2
    assert fusions.array_bytes(of("s4", 4)) == 2
    assert fusions.array_bytes(of("u1", 9)) == 2
    assert fusions.array_bytes(of("c128", 2)) == 32
    assert fusions.array_bytes(shape(element_type=17)) == 0
    assert fusions.array_bytes(shape(element_type=13, tuple_shapes=[of("f32", 2), of("s8", 3)])) == 11


def test_gemm_cost_counts_two_flops_per_output_and_contracted_element():
    """A cuBLAS call's flops are 2 x output elements x contracted elements (none contracted
    without a config); bytes its operands and its result without the workspace; None for
    any other instruction or name."""
    proto = _jaxlib.hlo_text_to_proto(GEMMS)
    assert fusions.gemm_cost(proto, "gemm") == {"flops": 2.0 * 8 * 15, "bytes accessed": 60.0 + 120.0 + 16.0}
    assert fusions.gemm_cost(proto, "lt") == {"flops": 2.0 * 8, "bytes accessed": 12.0 + 24.0 + 16.0}
    assert fusions.gemm_cost(proto, "other") is None
    assert fusions.gemm_cost(proto, "h") is None
    assert fusions.gemm_cost(proto, "nope") is None


def test_isolate_wraps_each_named_instruction_as_its_own_module():
    """Each named instruction that exists becomes a module named as its kernel, entered by a
    new computation (an id past the module's) whose parameters p0, p1, ... are its operands,
    with the computations it calls."""
    from mlirhlo_driver.ir import hlo_proto

    proto = _jaxlib.hlo_text_to_proto(CONTROL_FLOW)
    msg = hlo_proto.decode(proto)
    new_id = max(c.id for c in msg.computations) + 1
    out = fusions.isolate(proto, ["f", "e", "nope", "f"])
    assert sorted(out) == ["e", "f"]
    m = hlo_proto.decode(out["f"])
    assert m.name == "f" and m.entry_computation_id == new_id
    entry = next(c for c in m.computations if c.id == new_id)
    assert [(i.name, i.opcode) for i in entry.instructions] == [("p0", "parameter"), ("p1", "parameter"), ("f", "fusion")]
    assert sorted(c.name for c in m.computations if c.id != new_id) == ["fused", "inner"]
    e = hlo_proto.decode(out["e"])
    assert [c.name for c in e.computations] == ["entry_computation"]
    assert fusions.isolate(proto, []) == {}


def test_isolated_parameters_never_take_a_name_the_callees_use():
    """XLA wants names unique in a module: a fusion whose body has its own p0 is isolated with
    parameters named apart from it, and XLA reads the module (its figures are computed)."""
    from mlirhlo_driver.ir import hlo_proto

    text = ("HloModule m\n\nfused {\n  p0 = f32[4]{0} parameter(0)\n"
            "  ROOT p1 = f32[4]{0} multiply(p0, p0)\n}\n\n"
            "ENTRY main {\n  a = f32[4]{0} parameter(0)\n"
            "  ROOT f = f32[4]{0} fusion(a), kind=kLoop, calls=fused\n}\n")
    out = fusions.isolate(_jaxlib.hlo_text_to_proto(text), ["f"])
    m = hlo_proto.decode(out["f"])
    names = [i.name for c in m.computations for i in c.instructions]
    assert len(names) == len(set(names)) and "p0_" in names
    assert _jaxlib.hlo_proto_to_text(out["f"]).count("parameter(0)") == 2


def test_a_dots_type_is_its_lhs_operands_not_its_rhs_or_result():
    """Unfused, as a cuBLAS call or inside a fusion, a dot's type is its first operand's."""
    f16, bf16, f32 = (dtypes.BY_HLO[t].number for t in ("f16", "bf16", "f32"))
    rows = fusions.launched(_jaxlib.hlo_text_to_proto(MIXED))
    assert [(r.name, r.has_dot, r.dot_type, r.out_type) for r in rows] == [
        ("d", True, f16, f32), ("gemm", True, bf16, f32), ("f", True, f16, f32)]
