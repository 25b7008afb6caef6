"""commands/xla_tools.py: the XLA tools' library side (input format names)."""

from __future__ import annotations

import pytest


def test_input_format_names():
    """XLA's --input_format/--format words, any case, name the loader's formats; empty is 'detect'."""
    from mlirhlo_driver.commands import xla_tools
    from mlirhlo_driver.errors import DriverError

    want = {"hlo": "hlo", "TXT": "hlo", "text": "hlo", "pb": "hlo-proto", "Proto_Binary": "hlo-proto",
            "pbtxt": "hlo-pbtxt", "proto_text": "hlo-pbtxt", "stablehlo": "mlir", "MHLO": "mlir", "mlir": "mlir",
            "bytecode": "bytecode", "vhlo": "vhlo"}
    assert {name: xla_tools._input_format(name, "format") for name in want} == want
    assert xla_tools._input_format("", "format") is None
    with pytest.raises(DriverError) as e:
        xla_tools._input_format("pbtx", "input_format")
    assert e.value.format("params").startswith("error: --input_format=pbtx: unknown input format (did you mean 'pbtxt'")


def test_hlo_opt_reads_a_binary_proto_named_through_the_lit_file(tmp_path, capfd):
    """XLA's hlo_opt_hlo_protobinary_to_hlotext.hlo runs ``hlo-opt %s/../NAME.pb``: the path goes
    through the test file, as XLA's file layer cleans it; the binary HloModuleProto (made here by
    jaxlib from the text XLA's test holds) prints as XLA's text, the entry computation's name kept."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from tests.conftest import filecheck, run_xla_tool

    text = "mod1 {\n  a = s8[] constant(0)\n}\n"
    (tmp_path / "lit.hlo").write_text(text)
    (tmp_path / "m.pb").write_bytes(_jaxlib.hlo_text_to_proto(text))
    r = run_xla_tool("hlo-opt", [str(tmp_path / "lit.hlo") + "/../m.pb"], tmp_path, capfd)
    assert r.code == 0, r.err
    filecheck(r.out, "CHECK: ENTRY\nCHECK-SAME: mod1\nCHECK-NEXT: ROOT {{.*}} = s8[] constant(0)\n", tmp_path)
