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
