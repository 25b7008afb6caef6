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
