"""xla/tool_outputs.py: the files XLA's tools write (dump names per module number)."""

from __future__ import annotations


def test_xla_dump_files_are_named_per_module_number(tmp_path):
    """write_xla_dump: XLA's ``module_NNNN.`` prefix renumbered to this command's module, other keys
    prefixed with ``module_NNNN.<name>.``; the bytes as given."""
    from types import SimpleNamespace

    from mlirhlo_driver.xla.tool_outputs import write_xla_dump

    art = SimpleNamespace(hlo_module_name="jit_f", files={
        "module_0042.jit_f.before_optimizations.txt": b"before", "debug_options": b"opts"})
    write_xla_dump(str(tmp_path), art, 7)
    write_xla_dump(str(tmp_path), art, 12345)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "module_0007.jit_f.before_optimizations.txt": b"before", "module_0007.jit_f.debug_options": b"opts",
        "module_12345.jit_f.before_optimizations.txt": b"before", "module_12345.jit_f.debug_options": b"opts"}


def test_debug_options_text_is_xla_s_order_and_reads_back(tmp_path):
    """One field a line, in xla.proto's declaration order (XLA's hlo-opt's dump), repeated
    strings one value a line; --debug_options_file gives the same options back."""
    from mlirhlo_driver.xla import flags, tool_outputs

    given = {"xla_dump_large_constants": True, "xla_dump_to": 'out "dir"', "xla_gpu_dot_merger_threshold_mb": 3253,
             "xla_disable_hlo_passes": "algsimp,dce"}
    text = tool_outputs.debug_options_text(given)
    lines = text.splitlines()
    assert lines.index("xla_gpu_dot_merger_threshold_mb: 3253") < lines.index('xla_dump_to: "out \\"dir\\""') \
        < lines.index("xla_dump_large_constants: true")
    assert 'xla_disable_hlo_passes: "algsimp"' in lines and 'xla_disable_hlo_passes: "dce"' in lines
    path = tmp_path / "module_0000.m.debug_options"
    path.write_text("".join(ln + "\n" for ln in lines if not ln.startswith("xla_disable_hlo_passes")))
    back = flags.from_file(str(path))
    assert back == {k: v for k, v in given.items() if k != "xla_disable_hlo_passes"}


def test_hlo_opt_emit_proto_has_xla_s_parser_ids(tmp_path, capfd):
    """--emit-proto of HLO text: the ids XLA's hlo-opt prints since its parser counts them per
    computation (no computation id for the first, operands by their place); a proto given
    keeps its own."""
    from tests.conftest import filecheck, run_xla_tool

    (tmp_path / "m.hlo").write_text("HloModule m\n\nENTRY main {\n  a = f32[] parameter(0)\n"
                                    "  b = f32[] parameter(1)\n  ROOT res = f32[] multiply(a, b)\n}\n")
    r = run_xla_tool("hlo-opt", ["--emit-proto", "m.hlo"], tmp_path, capfd)
    assert r.code == 0, r.err
    filecheck(r.out, "CHECK: name: \"res\"\nCHECK: id: 2\nCHECK-NEXT: operand_ids: 0\nCHECK-NEXT: operand_ids: 1\n"
              "CHECK: parameter_names: \"b\"\nCHECK-NEXT: }\nCHECK-NEXT: root_id: 2\nCHECK-NEXT: }\n"
              "CHECK-NOT: entry_computation_id\n", tmp_path)
    # a proto given keeps its ids: jaxlib's, the second computation's in the upper 32 bits
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.ir import hlo_proto

    two = _jaxlib.hlo_text_to_proto("HloModule t\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
                                    "  ROOT s = f32[] add(x, y)\n}\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
                                    "  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, "
                                    "to_apply=add\n}\n")
    (tmp_path / "t.pb").write_bytes(two)
    given = run_xla_tool("hlo-opt", ["--emit-proto", "t.pb"], tmp_path, capfd)
    assert given.code == 0, given.err
    assert given.out == hlo_proto.to_text(hlo_proto.parse_text(given.out, "HloProto"))
    assert hlo_proto.encode(hlo_proto.parse_text(given.out, "HloProto").hlo_module) == two


def test_human_bytes_and_c_escape_write_as_xla_s_helpers_do():
    from mlirhlo_driver.xla.tool_outputs import c_escape, human_bytes

    assert [human_bytes(n) for n in (0, 1023, 2048, 2099208, 3 << 30, -1536)] == \
        ["0B", "1023B", "2.0KiB", "2.00MiB", "3.00GiB", "-1.5KiB"]
    assert c_escape('a"b\\c\n\té') == 'a\\"b\\\\c\\n\\t\\303\\251'


def test_buffer_assignment_verbose_is_xla_s_to_verbose_string_from_the_hlo_proto(tmp_path):
    """hlo-opt's buffer-assignment from an HloProto: the allocation totals by kind (a
    temporary is none of parameter, live-out, thread-local, constant), then each allocation's
    peak buffers largest first with their instruction: an entry parameter's subshape, else
    its opcode and shape (no layout); its metadata as XLA prints it."""
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.xla.tool_outputs import buffer_assignment_verbose
    from tests.conftest import filecheck

    proto = hlo_proto.message_class("HloProto")()
    m = proto.hlo_module
    m.entry_computation_id = 1
    entry = m.computations.add(id=1, name="main")
    entry.instructions.add(id=1, name="p", opcode="parameter").metadata.op_name = "x"
    entry.instructions[0].shape.CopyFrom(_shape(10, [4096], tuple_of=2))  # F16 in a tuple
    fusion = entry.instructions.add(id=2, name="f", opcode="fusion")
    fusion.shape.CopyFrom(_shape(11, [8, 8]))  # F32
    fusion.metadata.op_type, fusion.metadata.op_name, fusion.metadata.source_line = "Add", 'a"b', 7
    ba = proto.buffer_assignment
    ba.logical_buffers.add(id=5, size=8192).defined_at.instruction_id = 1
    ba.logical_buffers[0].defined_at.shape_index.append(1)
    ba.logical_buffers.add(id=6, size=256).defined_at.instruction_id = 2
    param = ba.buffer_allocations.add(index=0, size=8192, is_entry_computation_parameter=True)
    param.assigned.add(logical_buffer_id=5, offset=0, size=8192)
    temp = ba.buffer_allocations.add(index=1, size=1 << 20)
    temp.assigned.add(logical_buffer_id=6, offset=0, size=256)
    ba.buffer_allocations.add(index=2, size=4, maybe_live_out=True)
    ba.buffer_allocations.add(index=3, size=4, is_thread_local=True)
    ba.peak_buffers.add(index=1, logical_buffer_ids=[6])
    ba.peak_buffers.add(index=0, logical_buffer_ids=[5])
    filecheck(buffer_assignment_verbose(proto), """\
CHECK:      BufferAssignment OOM Debugging.
CHECK-NEXT: BufferAssignment stats:
CHECK-NEXT: {{^             }}parameter allocation:     8.0KiB
CHECK-NEXT: constant allocation: 0B
CHECK-NEXT: maybe_live_out allocation: 4B
CHECK-NEXT: preallocated temp allocation: 1.00MiB
CHECK-NEXT: total allocation: 1.01MiB
CHECK-NEXT: Peak buffers:
CHECK-NEXT: {{^	}}Buffer 1:
CHECK-NEXT: Size: 8.0KiB
CHECK-NEXT: Operator: op_name="x"
CHECK-NEXT: Entry Parameter Subshape: f16[4096]
CHECK-NEXT: ==========================
CHECK:      Buffer 2:
CHECK-NEXT: Size: 256B
CHECK-NEXT: Operator: op_type="Add" op_name="a\\"b" source_line=7
CHECK-NEXT: XLA Label: fusion
CHECK-NEXT: Shape: f32[8,8]
CHECK-NOT:  Buffer
""", tmp_path)


def _shape(element_type: int, dims: list[int], tuple_of: int = 0):
    from mlirhlo_driver.ir import hlo_proto

    shape = hlo_proto.message_class("xla.ShapeProto")(element_type=element_type, dimensions=dims)
    shape.layout.minor_to_major.extend(reversed(range(len(dims))))
    if not tuple_of:
        return shape
    outer = hlo_proto.message_class("xla.ShapeProto")(element_type=13)  # TUPLE
    for _ in range(tuple_of):
        outer.tuple_shapes.add().CopyFrom(shape)
    return outer


def test_hlo_opt_buffer_assignment_of_a_dump_without_one_is_a_stage_error(monkeypatch):
    """A backend whose optimized HloProto holds no buffer assignment gets the error naming
    it, not a page of zero statistics."""
    from types import SimpleNamespace

    import pytest

    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.xla import stages

    monkeypatch.setattr(stages, "_after_optimizations_proto", lambda req, stage: hlo_proto.message_class("HloProto")())
    with pytest.raises(StageError, match="holds no buffer assignment"):
        stages._hlo_opt_buffer_assignment(SimpleNamespace(options=SimpleNamespace(platform="tpu")))
