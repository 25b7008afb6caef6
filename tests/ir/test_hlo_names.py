"""ir/hlo_names.py: the user's names back after the trip HLO -> StableHLO -> HLO."""

from __future__ import annotations

import pytest

ORIGINAL = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY test {
  p0 = f32[12] parameter(0)
  c1 = f32[12] constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
  x = f32[12] multiply(p0, c1), metadata={op_name="jit(f)/mul" source_file="f.py" source_line=3}
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(x, zero), dimensions={0}, to_apply=add
}
"""


def _proto(text: str) -> bytes:
    from mlirhlo_driver._native import jaxlib as _jaxlib

    return _jaxlib.hlo_text_to_proto(text)


def _trip(proto: bytes) -> bytes:
    """What XLA receives from the driver: the module through StableHLO and XLA's exporter."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    return _jaxlib.stablehlo_to_hlo_proto(_jaxlib.hlo_proto_to_stablehlo_bytecode(proto))


def _decode(proto: bytes):
    from mlirhlo_driver.ir import hlo_proto

    return hlo_proto.decode(proto)


def _instructions(proto: bytes) -> dict[str, dict[str, object]]:
    return {c.name: {i.name: i for i in c.instructions} for c in _decode(proto).computations}


def test_the_trip_renames_and_restore_names_gives_the_user_s_names_back():
    from mlirhlo_driver.ir import hlo_names

    original = _proto(ORIGINAL)
    tripped = _trip(hlo_names.tag(original))
    assert "test" not in _instructions(tripped)  # the trip's own names (main.N, x.N, constant.N)
    restored = _decode(hlo_names.restore_names(tripped, original))
    assert restored.entry_computation_name == "test"
    comps = {c.name: c for c in restored.computations}
    assert set(comps) == {"test", "add"}
    assert {i.name for i in comps["test"].instructions} == {"p0", "c1", "x", "zero", "r"}
    assert {i.name for i in comps["add"].instructions} == {"a", "b", "s"}
    assert list(comps["test"].program_shape.parameter_names) == ["p0"]
    by_name = {i.name: i for i in comps["test"].instructions}
    # the metadata the user gave is kept, and the trip adds none
    assert by_name["x"].metadata.op_name == "jit(f)/mul" and by_name["x"].metadata.source_line == 3
    assert not by_name["p0"].HasField("metadata") and not by_name["r"].HasField("metadata")


def test_an_instruction_a_pass_made_keeps_xla_s_name_and_loses_the_trip_s_op_name():
    """A pass's new instruction may copy metadata (the tagged op_name) but has a name of its own."""
    from mlirhlo_driver.ir import hlo_names, hlo_proto

    original = _proto(ORIGINAL)
    result = _decode(_trip(hlo_names.tag(original)))
    entry = next(c for c in result.computations if c.id == result.entry_computation_id)
    made = next(i for i in entry.instructions if i.opcode == "multiply")
    made.name = "bitcast.9"  # as if a pass replaced x by a new instruction that copied its metadata
    restored = _instructions(hlo_names.restore_names(hlo_proto.encode(result), original))["test"]
    assert "bitcast.9" in restored and "x" not in restored
    assert restored["bitcast.9"].metadata.op_name == "jit(f)/mul"  # x's own op_name, not the tag


def test_a_name_is_never_given_twice():
    from mlirhlo_driver.ir import hlo_names, hlo_proto

    original = _proto(ORIGINAL)
    result = _decode(_trip(hlo_names.tag(original)))
    entry = next(c for c in result.computations if c.id == result.entry_computation_id)
    names = [i for i in entry.instructions if i.opcode in ("multiply", "reduce")]
    for i in names:  # two instructions the exporter named after x
        i.name, i.metadata.op_name = f"x.{i.id + 40}", "x"
    restored = _instructions(hlo_names.restore_names(hlo_proto.encode(result), original))["test"]
    assert "x" in restored and sum(n.startswith("x.") for n in restored) == 1


def test_a_computation_a_pass_made_keeps_its_names():
    from mlirhlo_driver.ir import hlo_names, hlo_proto

    original = _proto(ORIGINAL)
    result = _decode(_trip(hlo_names.tag(original)))
    reducer = next(c for c in result.computations if c.id != result.entry_computation_id)
    reducer.name = "fused_computation.7"  # as if a pass made it, and the instruction calling it
    entry = next(c for c in result.computations if c.id == result.entry_computation_id)
    fusion = next(i for i in entry.instructions if i.opcode == "reduce")
    fusion.name, fusion.opcode = "fusion.3", "fusion"
    restored = _instructions(hlo_names.restore_names(hlo_proto.encode(result), original))
    assert "fused_computation.7" in restored and "add" not in restored
    assert "fusion.3" in restored["test"]
    assert not {"a", "b", "s"} & set(restored["fused_computation.7"])


@pytest.mark.parametrize("text", [ORIGINAL, ORIGINAL.replace("HloModule m", "HloModule m, is_scheduled=false")])
def test_restore_names_of_a_module_that_did_not_take_the_trip_changes_nothing(text):
    from mlirhlo_driver.ir import hlo_names, hlo_proto

    original = _proto(text)
    assert hlo_proto.decode(hlo_names.restore_names(original, original)) == hlo_proto.decode(original)


def test_names_the_exporter_shuffled_all_come_back():
    """The exporter drops a name's own .N and numbers anew: the negate a.5 comes back as a.4,
    the name the exponential had. All get their own name back."""
    from mlirhlo_driver.ir import hlo_names

    text = ("HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  a.5 = f32[4] negate(p)\n"
            "  a.6 = f32[4] abs(a.5)\n  a.4 = f32[4] exponential(a.6)\n  ROOT a = f32[4] add(a.4, a.5)\n}\n")
    original = _proto(text)
    tripped = _trip(hlo_names.tag(original))
    assert {i.opcode: i.name for i in _decode(tripped).computations[0].instructions}["negate"] == "a.4"
    restored = _instructions(hlo_names.restore_names(tripped, original))["e"]
    assert {n: i.opcode for n, i in restored.items()} == {
        "p": "parameter", "a.5": "negate", "a.6": "abs", "a.4": "exponential", "a": "add"}


def test_a_jax_module_through_the_trip_and_xla_s_optimizations_keeps_unique_names():
    """A real program (the MLP step JAX dumped, its names and op_names JAX's) optimized by XLA CPU:
    every name stays unique, so XLA reads the module back."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.inputs.loader import parse_mlir
    from mlirhlo_driver.ir import hlo_names
    from mlirhlo_driver.targets import CpuTarget
    from mlirhlo_driver.xla import backend
    from tests.conftest import DATA

    original = _proto((DATA / "mlp_train_step.before_optimizations.txt").read_text())
    module = parse_mlir(_jaxlib.hlo_proto_to_stablehlo_bytecode(original), "mlp")
    done = backend.compile(module, backend.CompileSpec(CpuTarget(), dumps=(backend.EXECUTABLE_HLO,)), "mlp")
    restored = hlo_names.restore_names(done.art.optimized_proto, original)
    names = [i.name for c in _decode(restored).computations for i in c.instructions]
    assert len(names) == len(set(names))
    assert _jaxlib.hlo_proto_to_text(restored).startswith("HloModule jit_mlp_train_step")


SWAPPED = """HloModule m

region_0.1 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}

region_1.2 {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT s = f32[] add(u, v)
}

ENTRY e {
  p = f32[8] parameter(0)
  z = f32[] constant(0)
  a = f32[] reduce(p, z), dimensions={0}, to_apply=region_1.2
  b = f32[] reduce(p, z), dimensions={0}, to_apply=region_0.1
  ROOT t = (f32[], f32[]) tuple(a, b)
}
"""


def test_computations_are_placed_by_their_callers_even_where_the_trip_swapped_their_names():
    """The trip names the reducers in the order they are called: region_0.1 comes back holding
    the add. Each reducer gets the name its caller gave it; the root tuple its own name."""
    from mlirhlo_driver.ir import hlo_names

    original = _proto(SWAPPED)
    tripped = _trip(hlo_names.tag(original))
    came_back = {c.name: [i.opcode for i in c.instructions] for c in _decode(tripped).computations}
    assert "add" in came_back["region_0.1"]  # the trip's swap, which the test is about
    restored = _instructions(hlo_names.restore_names(tripped, original))
    assert {n: i.opcode for n, i in restored["region_0.1"].items()} == {
        "x": "parameter", "y": "parameter", "m": "maximum"}
    assert {n: i.opcode for n, i in restored["region_1.2"].items()} == {"u": "parameter", "v": "parameter", "s": "add"}
    assert set(restored["e"]) == {"p", "z", "a", "b", "t"}


def test_an_instruction_named_without_a_number_is_not_taken_for_the_exporter_s():
    """XLA's passes name what they make 'reshape', 'broadcast' (no .N): such a name is a pass's,
    even where the instruction copied an original's op_name (gather_expander's reshape)."""
    from mlirhlo_driver.ir import hlo_names

    original = _proto("HloModule m\n\nENTRY e {\n  p = s32[1,3] parameter(0)\n  ROOT gather = s32[3] reshape(p)\n}\n")
    made = _proto("HloModule m\n\nENTRY main.1 {\n  p.1 = s32[1,3] parameter(0), metadata={op_name=\"p\"}\n"
                  "  reshape = s32[3] reshape(p.1), metadata={op_name=\"gather\"}\n"
                  "  ROOT broadcast = s32[2,3] broadcast(reshape), dimensions={1}, metadata={op_name=\"gather\"}\n}\n")
    restored = _instructions(hlo_names.restore_names(made, original))["e"]
    assert set(restored) == {"p", "reshape", "broadcast"}
