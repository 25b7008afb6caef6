"""mlirhlo_driver.ir.decompose: the HloModuleProto rewrites behind XLA's tools.

``isolate_instructions`` (``run_hlo_module --isolate_instructions``) and
``flatten_while_loops`` (``multihost_hlo_runner --while_execution_count``), on
modules from HLO text; their results are loaded and run as the tools do.
"""

from __future__ import annotations

import pytest

from mlirhlo_driver._native import jaxlib
from mlirhlo_driver.ir import decompose, hlo_proto
from tests.conftest import (
    FEED_HLO,
    LOOP_HLO,
    run_xla_tool,
)

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


# ------------------------------------------------------------------ the rewritten protos, instruction by instruction


def _shape(s) -> str:
    if s.tuple_shapes:
        return "(" + ", ".join(_shape(t) for t in s.tuple_shapes) + ")"
    return f"{s.element_type}{list(s.dimensions)}"


def _listing(data: bytes, original: bytes) -> list[str]:
    """Each computation and its instructions as ``name = opcode(operand names) shape``; an
    instruction the rewrite added is tagged ``+k@c``: local id k past the computation's
    own largest, in computation c (the upper 32 bits of its id)."""
    before = {c.id: {i.id for i in c.instructions} for c in hlo_proto.decode(original).computations}
    lines = []
    for c in hlo_proto.decode(data).computations:
        names = {i.id: i.name for i in c.instructions}
        top = max(i & 0xFFFFFFFF for i in before[c.id])
        lines.append(f"{c.name} root={names[c.root_id]}")
        for i in c.instructions:
            tag = "" if i.id in before[c.id] else f" +{(i.id & 0xFFFFFFFF) - top}@{i.id >> 32}"
            operands = ", ".join(names[o] for o in i.operand_ids)
            lines.append(f"  {i.name} = {i.opcode}({operands}) {_shape(i.shape)}{tag}")
    return lines


# The infeed's data is a tuple (zeros element by element); its computation is not the
# first (id 1), so the new ids show their computation's id in the upper bits.
_FEED_HLO = """HloModule feed

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[2] parameter(0)
  tok = token[] after-all()
  feed = ((f32[2], c64[]), token[]) infeed(tok)
  data = (f32[2], c64[]) get-tuple-element(feed), index=0
  d = f32[2] get-tuple-element(data), index=0
  t2 = token[] get-tuple-element(feed), index=1
  o = token[] outfeed(d, t2), outfeed_shape=f32[2]
  ROOT r = f32[2] add(x, d)
}
"""


def _details(data: bytes) -> dict[str, tuple]:
    """name -> (tuple_index, s32 constant values, comparison direction) of the
    get-tuple-element, constant and compare instructions the loop rewrite adds."""
    return {i.name: (i.tuple_index, list(i.literal.s32s), i.comparison_direction)
            for c in hlo_proto.decode(data).computations for i in c.instructions
            if i.name.startswith(("w.", "p.", "p.1.")) and i.opcode in ("get-tuple-element", "constant", "compare")}


_DUPLICATES_HLO = """HloModule dups

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] multiply(a, b)
}

ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  z = f32[] constant(0)
  u = f32[4] add(x, y)
  v = f32[4] add(y, u)
  m = f32[4] multiply(u, v)
  r1 = f32[] reduce(m, z), dimensions={0}, to_apply=add
  r2 = f32[] reduce(v, z), dimensions={0}, to_apply=mul
  r3 = f32[] reduce(u, z), dimensions={0}, to_apply=add
  ROOT t = (f32[], f32[], f32[]) tuple(r1, r2, r3)
}
"""


def _isolated(proto: bytes) -> dict[str, tuple]:
    """name -> (module name, id, entry (name, id), [(computation, id)], entry parameter names,
    entry instructions as (id, name, opcode, operand ids), root id)."""
    out = {}
    for name, data in decompose.isolate_instructions(proto):
        m = hlo_proto.decode(data)
        entry = m.computations[-1]
        assert m.host_program_shape == entry.program_shape, name
        assert list(entry.program_shape.parameters) == [i.shape for i in entry.instructions[:-1]], name
        assert entry.program_shape.result == entry.instructions[-1].shape, name
        out[name] = (m.name, m.id, (m.entry_computation_name, m.entry_computation_id),
                     [(c.name, c.id) for c in m.computations], list(entry.program_shape.parameter_names),
                     [(i.id, i.name, i.opcode, list(i.operand_ids)) for i in entry.instructions], entry.root_id)
    return out


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


@pytest.mark.slow
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


def test_remove_infeed_outfeed_gives_zeros_and_tokens_under_the_old_ids():
    """Infeed becomes a tuple of zeros (a constant and a broadcast per element) and an
    after-all of its token, outfeed an after-all of its token; both keep their name and
    id, the new instructions take the next ids of their computation."""
    proto = jaxlib.hlo_text_to_proto(_FEED_HLO)
    assert decompose.has_infeed_outfeed(proto) is True
    out, n = decompose.remove_infeed_outfeed(proto)
    assert n == 2
    assert decompose.has_infeed_outfeed(out) is False
    f32, c64, token = 11, 15, 17
    assert _listing(out, proto) == [
        "add root=s",
        f"  a = parameter() {f32}[]",
        f"  b = parameter() {f32}[]",
        f"  s = add(a, b) {f32}[]",
        "main root=r",
        f"  tok = after-all() {token}[]",
        f"  feed.zero.0 = constant() {f32}[] +1@1",
        f"  feed.zeros.0 = broadcast(feed.zero.0) {f32}[2] +2@1",
        f"  feed.zero.1 = constant() {c64}[] +3@1",
        f"  feed.zeros.1 = broadcast(feed.zero.1) {c64}[] +4@1",
        f"  feed.zeros = tuple(feed.zeros.0, feed.zeros.1) ({f32}[2], {c64}[]) +5@1",
        f"  feed.token = after-all(tok) {token}[] +6@1",
        f"  feed = tuple(feed.zeros, feed.token) (({f32}[2], {c64}[]), {token}[])",
        f"  data = get-tuple-element(feed) ({f32}[2], {c64}[])",
        f"  d = get-tuple-element(data) {f32}[2]",
        f"  t2 = get-tuple-element(feed) {token}[]",
        f"  o = after-all(t2) {token}[]",
        f"  x = parameter() {f32}[2]",
        f"  r = add(x, d) {f32}[2]",
    ]
    main = hlo_proto.decode(out).computations[1]
    zeros = {i.name: i.literal for i in main.instructions if i.opcode == "constant"}
    assert list(zeros["feed.zero.0"].f32s) == [0.0] and zeros["feed.zero.0"].shape.HasField("layout")
    assert list(zeros["feed.zero.1"].c64s) == [0.0, 0.0]
    o = next(i for i in main.instructions if i.name == "o")
    assert not o.HasField("outfeed_shape") and o.outfeed_config == b""


def test_a_module_without_infeed_or_outfeed_is_left_as_it_was():
    proto = jaxlib.hlo_text_to_proto(_WHOLE_STATE_LOOP_HLO)
    assert decompose.has_infeed_outfeed(proto) is False
    out, n = decompose.remove_infeed_outfeed(proto)
    assert n == 0 and hlo_proto.decode(out) == hlo_proto.decode(proto)


def test_flattened_loop_instruction_by_instruction():
    """The loop's state gains an s32 counter (0 at first), the body adds 1 to it, the
    condition becomes counter < count; every reader of a whole state gets a tuple of its
    first elements; the new instructions take the next ids of their computation."""
    proto = jaxlib.hlo_text_to_proto(_WHOLE_STATE_LOOP_HLO)
    out, n = decompose.flatten_while_loops(proto, 5)
    assert n == 1
    s32, f32, pred = 4, 11, 1
    state, wide = f"({s32}[], {f32}[4])", f"({s32}[], {f32}[4], {s32}[])"
    assert _listing(out, proto) == [
        "body root=w.next",
        f"  p = parameter() {wide}",
        f"  p.element0 = get-tuple-element(p) {s32}[] +1@0",
        f"  p.element1 = get-tuple-element(p) {f32}[4] +2@0",
        f"  p.original = tuple(p.element0, p.element1) {state} +3@0",
        f"  c = copy(p.original) {state}",
        f"  i = get-tuple-element(c) {s32}[]",
        f"  one = constant() {s32}[]",
        f"  i2 = add(i, one) {s32}[]",
        f"  v = get-tuple-element(c) {f32}[4]",
        f"  v2 = add(v, v) {f32}[4]",
        f"  t = tuple(i2, v2) {state}",
        f"  w.next0 = get-tuple-element(t) {s32}[] +4@0",
        f"  w.next1 = get-tuple-element(t) {f32}[4] +5@0",
        f"  w.body_counter = get-tuple-element(p) {s32}[] +6@0",
        f"  w.one = constant() {s32}[] +7@0",
        f"  w.counter_next = add(w.body_counter, w.one) {s32}[] +8@0",
        f"  w.next = tuple(w.next0, w.next1, w.counter_next) {wide} +9@0",
        "cond root=w.continue",
        f"  p.1 = parameter() {wide}",
        f"  p.1.element0 = get-tuple-element(p.1) {s32}[] +1@1",
        f"  p.1.element1 = get-tuple-element(p.1) {f32}[4] +2@1",
        f"  p.1.original = tuple(p.1.element0, p.1.element1) {state} +3@1",
        f"  c.1 = copy(p.1.original) {state}",
        f"  i.1 = get-tuple-element(c.1) {s32}[]",
        f"  ten = constant() {s32}[]",
        f"  lt = compare(i.1, ten) {pred}[]",
        f"  w.cond_counter = get-tuple-element(p.1) {s32}[] +4@1",
        f"  w.trip_count = constant() {s32}[] +5@1",
        f"  w.continue = compare(w.cond_counter, w.trip_count) {pred}[] +6@1",
        "main root=iterations",
        f"  zero = constant() {s32}[]",
        f"  x = parameter() {f32}[4]",
        f"  init = tuple(zero, x) {state}",
        f"  w.init0 = get-tuple-element(init) {s32}[] +1@2",
        f"  w.init1 = get-tuple-element(init) {f32}[4] +2@2",
        f"  w.counter_init = constant() {s32}[] +3@2",
        f"  w.init = tuple(w.init0, w.init1, w.counter_init) {wide} +4@2",
        f"  w = while(w.init) {wide}",
        f"  w.element0 = get-tuple-element(w) {s32}[] +5@2",
        f"  w.element1 = get-tuple-element(w) {f32}[4] +6@2",
        f"  w.original = tuple(w.element0, w.element1) {state} +7@2",
        f"  wc = copy(w.original) {state}",
        f"  iterations = get-tuple-element(wc) {s32}[]",
    ]
    assert _details(out) == {
        "p.element0": (0, [], ""), "p.element1": (1, [], ""),
        "w.next0": (0, [], ""), "w.next1": (1, [], ""), "w.body_counter": (2, [], ""), "w.one": (0, [1], ""),
        "p.1.element0": (0, [], ""), "p.1.element1": (1, [], ""),
        "w.cond_counter": (2, [], ""), "w.trip_count": (0, [5], ""), "w.continue": (0, [], "LT"),
        "w.init0": (0, [], ""), "w.init1": (1, [], ""), "w.counter_init": (0, [0], ""),
        "w.element0": (0, [], ""), "w.element1": (1, [], ""),
    }
    body, cond, _ = hlo_proto.decode(out).computations
    for comp, result in ((body, wide), (cond, f"{pred}[]")):
        assert [_shape(s) for s in comp.program_shape.parameters] == [wide], comp.name
        assert _shape(comp.program_shape.result) == result, comp.name


def test_a_flattened_loop_that_is_the_root_or_read_by_index_only():
    """A loop that is its computation's root: the root becomes the tuple of the state's
    first elements. One read only by get-tuple-element: nothing reads it whole, nothing added."""
    rooted = _WHOLE_STATE_LOOP_HLO.replace("  wc = (s32[], f32[4]) copy(w)\n", "").replace(
        "  ROOT iterations = s32[] get-tuple-element(wc), index=0\n", "").replace("  w = (s32", "  ROOT w = (s32")
    proto = jaxlib.hlo_text_to_proto(rooted)
    out, _ = decompose.flatten_while_loops(proto, 2)
    main = _listing(out, proto)[-12:]
    assert main[0] == "main root=w.original" and main[-1].startswith("  w.original = tuple(w.element0, w.element1)")
    by_index = _WHOLE_STATE_LOOP_HLO.replace("  wc = (s32[], f32[4]) copy(w)\n", "").replace(
        "get-tuple-element(wc), index=0", "get-tuple-element(w), index=0")
    proto = jaxlib.hlo_text_to_proto(by_index)
    out, _ = decompose.flatten_while_loops(proto, 2)
    listing = _listing(out, proto)
    main = listing[listing.index("main root=iterations"):]
    assert main[-2:] == ["  w = while(w.init) (4[], 11[4], 4[])", "  iterations = get-tuple-element(w) 4[]"]


@pytest.mark.golden
def test_loops_that_cannot_be_flattened_are_refused():
    """A loop whose state is not a tuple, or whose body or condition another loop shares:
    an InputError naming it; nothing is flattened. The golden of flatten_while_loops' refusal."""
    from mlirhlo_driver.errors import InputError

    scalar = """HloModule scalar

body {
  p = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(p, one)
}

cond {
  p = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(p, ten), direction=LT
}

ENTRY main {
  zero = s32[] constant(0)
  ROOT w = s32[] while(zero), condition=cond, body=body
}
"""
    with pytest.raises(InputError) as e:
        decompose.flatten_while_loops(jaxlib.hlo_text_to_proto(scalar), 3)
    assert e.value.message == ("while loop 'w': only loops with a tuple state and a body and condition of their "
                               "own can be flattened here")
    shared = _WHOLE_STATE_LOOP_HLO.replace(
        "  wc = (s32[], f32[4]) copy(w)\n",
        "  w2 = (s32[], f32[4]) while(w), condition=cond, body=body\n  wc = (s32[], f32[4]) copy(w2)\n")
    with pytest.raises(InputError) as e:
        decompose.flatten_while_loops(jaxlib.hlo_text_to_proto(shared), 3)
    assert e.value.message == ("while loop 'w2': only loops with a tuple state and a body and condition of their "
                               "own can be flattened here")


def test_isolated_modules_once_per_distinct_instruction_with_their_operands_as_parameters():
    """One module per entry instruction but parameters, constants, tuples and their
    elements; one that repeats an earlier one's op, shapes, attributes and callee bodies is
    left out. Each module: the original's id, its callees, then an entry computation of the
    next free id whose parameters are named after the operands."""
    msg = hlo_proto.decode(jaxlib.hlo_text_to_proto(_DUPLICATES_HLO))
    msg.id = 42
    proto = hlo_proto.encode(msg)
    base = 3 << 32  # the entry computation's id: one past the largest (main, 2)

    def entry(ins, opcode, a, b):
        return [(base, a, "parameter", []), (base + 1, b, "parameter", []), (base + 2, ins, opcode, [base, base + 1])]

    assert _isolated(proto) == {
        "u": ("u", 42, ("entry_computation", 3), [("entry_computation", 3)], ["x", "y"],
              entry("u", "add", "x", "y"), base + 2),
        "m": ("m", 42, ("entry_computation", 3), [("entry_computation", 3)], ["u", "v"],
              entry("m", "multiply", "u", "v"), base + 2),
        "r1": ("r1", 42, ("entry_computation", 3), [("add", 0), ("entry_computation", 3)], ["m", "z"],
               entry("r1", "reduce", "m", "z"), base + 2),
        "r2": ("r2", 42, ("entry_computation", 3), [("mul", 1), ("entry_computation", 3)], ["v", "z"],
               entry("r2", "reduce", "v", "z"), base + 2),
    }
    assert list(_isolated(proto)) == ["u", "m", "r1", "r2"]  # program order
    for _, data in decompose.isolate_instructions(proto):
        assert not hlo_proto.decode(data).HasField("stack_frame_index")


def test_isolated_modules_carry_the_stack_frame_index():
    """Metadata points into the module's stack frame index: each isolated module has the original's."""
    msg = hlo_proto.decode(jaxlib.hlo_text_to_proto(_DUPLICATES_HLO))
    msg.stack_frame_index.file_names.append("model.py")
    msg.stack_frame_index.function_names.append("f")
    for name, data in decompose.isolate_instructions(hlo_proto.encode(msg)):
        assert hlo_proto.decode(data).stack_frame_index == msg.stack_frame_index, name


def test_instruction_module_with_numbered_parameters():
    """numbered_params: parameters p0, p1, ... one per operand, an operand used twice included."""
    msg = hlo_proto.decode(jaxlib.hlo_text_to_proto(_DUPLICATES_HLO.replace("add(y, u)", "add(u, u)")))
    main = msg.computations[-1]
    by_name = {i.name: i for i in main.instructions}
    ins = by_name["v"]
    m = decompose.instruction_module(msg, ins, [by_name["u"], by_name["u"]], [], 7, "k", numbered_params=True)
    (entry,) = m.computations
    assert [(i.name, i.opcode, i.parameter_number, i.id) for i in entry.instructions] == [
        ("p0", "parameter", 0, 7 << 32), ("p1", "parameter", 1, (7 << 32) + 1), ("v", "add", 0, (7 << 32) + 2)]
    assert list(entry.instructions[-1].operand_ids) == [7 << 32, (7 << 32) + 1]
    assert list(entry.program_shape.parameter_names) == ["p0", "p1"] and m.name == "k"


def test_isolated_duplicates_whatever_order_their_attribute_maps_come_in():
    """Two instructions alike but for the order their frontend attributes (a map) come in
    on the wire: still one module."""
    import string

    msg = hlo_proto.decode(jaxlib.hlo_text_to_proto(_DUPLICATES_HLO))
    by_name = {i.name: i for i in msg.computations[-1].instructions}
    for keys, name in ((string.ascii_lowercase, "u"), (string.ascii_lowercase[::-1], "v")):
        for k in keys:
            by_name[name].frontend_attributes.map[k] = "1"
    data = msg.SerializeToString()  # not deterministic: map entries as inserted
    assert [name for name, _ in decompose.isolate_instructions(data)] == ["u", "m", "r1", "r2"]


def test_rewritten_modules_keep_xlas_instruction_ids():
    """An instruction the rewrites add takes XLA's 64-bit id: its computation's id in the
    upper 32 bits, a local id past the computation's own in the lower; ids stay unique."""
    from mlirhlo_driver._native import jaxlib
    from mlirhlo_driver.ir import decompose, protos

    def check(data: bytes) -> None:
        msg = protos.message_class("xla.HloModuleProto")()
        msg.ParseFromString(data)
        ids = []
        for c in msg.computations:
            assert all(i.id >> 32 == c.id for i in c.instructions), c.name
            ids += [i.id for i in c.instructions]
        assert len(ids) == len(set(ids))

    out, n = decompose.remove_infeed_outfeed(jaxlib.hlo_text_to_proto(FEED_HLO))
    assert n == 2
    check(out)
    out, n = decompose.flatten_while_loops(jaxlib.hlo_text_to_proto(LOOP_HLO), 3)
    assert n == 1
    check(out)
