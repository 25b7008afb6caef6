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
    """--emit-proto of HLO text: the ids XLA's hlo-opt prints (computation and entry by the root's
    id); a proto given keeps its own."""
    from tests.conftest import filecheck, run_xla_tool

    (tmp_path / "m.hlo").write_text("HloModule m\n\nENTRY main {\n  a = f32[] parameter(0)\n"
                                    "  b = f32[] parameter(1)\n  ROOT res = f32[] multiply(a, b)\n}\n")
    r = run_xla_tool("hlo-opt", ["--emit-proto", "m.hlo"], tmp_path, capfd)
    assert r.code == 0, r.err
    filecheck(r.out, "CHECK: name: \"res\"\nCHECK: id: 2\nCHECK-NEXT: operand_ids: 0\nCHECK-NEXT: operand_ids: 1\n"
              "CHECK: parameter_names: \"b\"\nCHECK-NEXT: }\nCHECK-NEXT: id: 2\nCHECK-NEXT: root_id: 2\n"
              "CHECK: entry_computation_id: 2\n", tmp_path)
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
