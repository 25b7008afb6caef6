"""mlirhlo_driver.ir.decompose: the HloModuleProto rewrites behind XLA's tools.

``isolate_instructions`` (``run_hlo_module --isolate_instructions``) and
``flatten_while_loops`` (``multihost_hlo_runner --while_execution_count``), on
modules from HLO text; their results are loaded and run as the tools do.
"""

from __future__ import annotations

from conftest import run_xla_tool

from mlirhlo_driver._native import jaxlib
from mlirhlo_driver.ir import decompose, hlo_proto

# One computation reached twice from one instruction: the call's body reduces with
# ``add`` twice, and the while loop's body and condition both reduce with ``add``.
_SHARED_CALLEE_HLO = """HloModule shared

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

both {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  r1 = f32[] reduce(x, z), dimensions={0}, to_apply=add
  r2 = f32[] reduce(x, z), dimensions={0}, to_apply=add
  ROOT m = f32[] multiply(r1, r2)
}

body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[4] get-tuple-element(p), index=1
  z = f32[] constant(0)
  r = f32[] reduce(v, z), dimensions={0}, to_apply=add
  rb = f32[4] broadcast(r), dimensions={}
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = (s32[], f32[4]) tuple(i2, rb)
}

cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[4] get-tuple-element(p), index=1
  z = f32[] constant(0)
  r = f32[] reduce(v, z), dimensions={0}, to_apply=add
  big = f32[] constant(1e30)
  small = pred[] compare(r, big), direction=LT
  three = s32[] constant(3)
  few = pred[] compare(i, three), direction=LT
  ROOT go = pred[] and(small, few)
}

ENTRY main {
  x = f32[4] parameter(0)
  c = f32[] call(x), to_apply=both
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT out = (f32[], (s32[], f32[4])) tuple(c, w)
}
"""

# A while loop whose state is read whole, not only element by element: the body's and
# the condition's parameter, and the loop's result, each go through a copy.
_WHOLE_STATE_LOOP_HLO = """HloModule whole

body {
  p = (s32[], f32[4]) parameter(0)
  c = (s32[], f32[4]) copy(p)
  i = s32[] get-tuple-element(c), index=0
  v = f32[4] get-tuple-element(c), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v2 = f32[4] add(v, v)
  ROOT t = (s32[], f32[4]) tuple(i2, v2)
}

cond {
  p = (s32[], f32[4]) parameter(0)
  c = (s32[], f32[4]) copy(p)
  i = s32[] get-tuple-element(c), index=0
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(i, ten), direction=LT
}

ENTRY main {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  wc = (s32[], f32[4]) copy(w)
  ROOT iterations = s32[] get-tuple-element(wc), index=0
}
"""


def test_isolated_instruction_carries_a_shared_callee_once(capfd, tmp_path):
    """An isolated instruction that reaches one computation by several paths carries it
    once, callees first, and each isolated module runs and matches the reference."""
    parts = decompose.isolate_instructions(jaxlib.hlo_text_to_proto(_SHARED_CALLEE_HLO))
    assert [name for name, _ in parts] == ["c", "w"]  # the root tuple is not isolated
    listed = {name: [c.name for c in hlo_proto.decode(data).computations] for name, data in parts}
    assert listed["c"] == ["add", "both", "entry_computation"]
    assert sorted(listed["w"]) == ["add", "body", "cond", "entry_computation"]
    assert listed["w"][0] == "add" and listed["w"][-1] == "entry_computation"

    (tmp_path / "shared.hlo").write_text(_SHARED_CALLEE_HLO)
    r = run_xla_tool("run_hlo_module", ["--isolate_instructions", "--reference_platform=CPU", "shared.hlo"],
                     tmp_path, capfd)
    assert r.code == 0, r.out + r.err
    assert "2/2 modules passed" in r.out, r.out


def test_flattened_loop_state_read_whole_keeps_its_shape(capfd, tmp_path):
    """After flattening, what reads a loop's whole state (its result, the body's or the
    condition's parameter) still gets the state without the counter, and the module runs
    exactly the requested iterations."""
    out, n = decompose.flatten_while_loops(jaxlib.hlo_text_to_proto(_WHOLE_STATE_LOOP_HLO), 3)
    assert n == 1
    msg = hlo_proto.decode(out)
    for comp in msg.computations:
        by_id = {i.id: i for i in comp.instructions}
        copies = [i for i in comp.instructions if i.opcode == "copy"]
        assert len(copies) == 1, comp.name
        (operand,) = (by_id[o] for o in copies[0].operand_ids)
        width = len(operand.shape.tuple_shapes)
        assert width == 2, f"{comp.name}: the copy reads {operand.name}, of {width} elements"  # no counter

    (tmp_path / "flat.pb").write_bytes(out)
    r = run_xla_tool("run_hlo_module", ["--reference_platform=", "--print_literals", "flat.pb"], tmp_path, capfd)
    assert r.code == 0, r.out + r.err
    assert "output 0 (int32[]): 3" in r.out, r.out  # 3 iterations, not the loop's own 10
