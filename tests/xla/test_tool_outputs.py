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
