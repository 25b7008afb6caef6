"""Behaviour: an input's format comes from its content; the file name only breaks ties.

One table, (file name, content) -> format, over every format and the misleading
names users give files: a ``.txt`` that is MLIR, a ``.mlir`` that is HLO text,
a ``.pb`` that is text, a ``.hlo`` that is a proto, ... Each row is checked at
the detector (inputs.detect_format) and, for a sample, through the loader.
"""

from __future__ import annotations

import gzip

import pytest

from mlirhlo_driver import api
from mlirhlo_driver.errors import InputError
from mlirhlo_driver.inputs import loader as inputs

MLIR = ("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")

MLIR_MODULE = "module @m {\n" + MLIR.replace("\n", "\n  ").rstrip() + "\n}\n"

MLIR_COMMENTED = "// RUN: mlirhlo opt %s\n\n" + MLIR

MLIR_ENTRY_COMMENT = "// the ENTRY computation, lowered\n" + MLIR_MODULE

MLIR_GENERIC = '"builtin.module"() ({\n}) : () -> ()\n'

HLO = "HloModule m\n\nENTRY main {\n  a = f32[4] parameter(0)\n  ROOT s = f32[4] add(a, a)\n}\n"

HLO_COMMENTED = "// an XLA dump\n# another comment\n" + HLO

HLO_NO_HEADER = "ENTRY main {\n  a = f32[4] parameter(0)\n  ROOT s = f32[4] add(a, a)\n}\n"


@pytest.fixture(scope="module")
def content():
    """Every format, made by the driver itself from one module."""
    loaded = inputs.load("m.mlir", data=MLIR.encode())[0]
    proto = api.convert(loaded, "hlo-proto")
    wrapped = b"\x0a" + _varint(len(proto)) + proto  # XLA's *.hlo.pb: HloProto { hlo_module: ... }
    return {
        "mlir": MLIR.encode(), "mlir-module": MLIR_MODULE.encode(), "mlir-commented": MLIR_COMMENTED.encode(),
        "mlir-generic": MLIR_GENERIC.encode(), "mlir-entry-comment": MLIR_ENTRY_COMMENT.encode(),
        "hlo": HLO.encode(), "hlo-commented": HLO_COMMENTED.encode(), "hlo-no-header": HLO_NO_HEADER.encode(),
        "junk-text": b"neither HLO nor MLIR\n",
        "hlo-pbtxt": api.convert(loaded, "hlo-pbtxt").encode(),
        "hlo-pbtxt-wrapped": b"hlo_module {\n  name: \"m\"\n}\n",
        "hlo-proto": proto, "hlo-proto-wrapped": wrapped, "hlo-proto-gzip": gzip.compress(proto),
        "bytecode": api.convert(loaded, "bytecode"), "vhlo": api.convert(loaded, "vhlo"),
    }


def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


# (file name, content key, detected format)
TABLE = [
    # named for what they hold
    ("m.mlir", "mlir", "mlir"), ("m.mlir", "mlir-module", "mlir"), ("m.mlir", "mlir-commented", "mlir"),
    ("m.mlir", "mlir-generic", "mlir"), ("m.stablehlo", "mlir", "mlir"),
    ("m.hlo", "hlo", "hlo"), ("module_0001.jit_f.before_optimizations.txt", "hlo", "hlo"),
    ("m.txt", "hlo-commented", "hlo"), ("m.txt", "hlo-no-header", "hlo"), ("m.hlo", "hlo-no-header", "hlo"),
    ("m.pbtxt", "hlo-pbtxt", "hlo-pbtxt"), ("m.pbtxt", "hlo-pbtxt-wrapped", "hlo-pbtxt"),
    ("m.pb", "hlo-proto", "hlo-proto"), ("m.hlo.pb", "hlo-proto-wrapped", "hlo-proto"),
    ("m.pb.gz", "hlo-proto-gzip", "hlo-proto"),
    ("m.mlirbc", "bytecode", "bytecode"), ("m.vhlo", "vhlo", "vhlo"),
    ("exported.mlir_module_serialized", "vhlo", "vhlo"),
    # misleading names: the content decides
    ("m.txt", "mlir", "mlir"), ("m.txt", "mlir-module", "mlir"), ("m.txt", "mlir-commented", "mlir"),
    ("before_optimizations.txt", "mlir", "mlir"), ("m.txt", "mlir-entry-comment", "mlir"),
    ("m.mlir", "hlo", "hlo"), ("m.mlir", "hlo-commented", "hlo"), ("m.stablehlo", "hlo", "hlo"),
    ("m.pb", "hlo", "hlo"), ("m.pb", "mlir", "mlir"), ("m.pb", "hlo-pbtxt", "hlo-pbtxt"),
    ("m.pbtxt", "hlo", "hlo"), ("m.pbtxt", "mlir", "mlir"), ("m.pbtxt", "mlir-module", "mlir"),
    ("m.hlo", "mlir", "mlir"), ("m.hlo", "mlir-module", "mlir"), ("m.hlo", "hlo-pbtxt", "hlo-pbtxt"),
    ("m.hlo", "hlo-proto", "hlo-proto"), ("m.txt", "hlo-proto", "hlo-proto"),
    ("m.mlir", "hlo-proto", "hlo-proto"), ("m.mlir", "hlo-proto-wrapped", "hlo-proto"),
    ("m.hlo", "bytecode", "bytecode"), ("m.mlir", "bytecode", "bytecode"), ("m.pb", "bytecode", "bytecode"),
    ("m.mlirbc", "vhlo", "vhlo"), ("m.vhlo", "bytecode", "bytecode"), ("m.pb", "vhlo", "vhlo"),
    ("m.mlirbc", "mlir", "mlir"), ("m.vhlo", "hlo", "hlo"),
    # text that is neither: MLIR's parser says what is wrong, unless the name says HLO
    ("m.txt", "junk-text", "mlir"), ("m.mlir", "junk-text", "mlir"), ("m.hlo", "junk-text", "hlo"),
    ("m.pbtxt", "junk-text", "hlo-pbtxt"),
    ("m", "mlir", "mlir"), ("m", "hlo", "hlo"), ("m", "hlo-proto", "hlo-proto"), ("m", "vhlo", "vhlo"),
    ("-", "hlo", "hlo"), ("-", "mlir", "mlir"),
]


@pytest.mark.parametrize("name, key, fmt", TABLE, ids=[f"{n}:{k}" for n, k, _ in TABLE])
def test_detected_format(content, name, key, fmt):
    assert inputs.detect_format(content[key], name) == fmt


@pytest.mark.parametrize("name, key, fmt", [
    ("m.txt", "mlir", "mlir"), ("m.mlir", "hlo", "hlo"), ("m.pb", "hlo", "hlo"), ("m.hlo", "hlo-proto", "hlo-proto"),
    ("m.txt", "bytecode", "bytecode"), ("m.pbtxt", "hlo", "hlo"), ("m.mlir", "vhlo", "vhlo"),
    ("m.hlo", "mlir", "mlir"), ("m.txt", "mlir-entry-comment", "mlir"),
])
def test_misnamed_files_load(tmp_path, content, name, key, fmt):
    path = tmp_path / name
    path.write_bytes(content[key])
    loaded = inputs.load(str(path))
    assert [m.format for m in loaded] == [fmt]
    assert "stablehlo.add" in str(loaded[0].module)


@pytest.mark.parametrize("name", ["m.pb", "m.mlirbc", "m.hlo", "m.txt"])
def test_binary_that_is_no_module_is_an_error(name):
    with pytest.raises(InputError, match="binary data") as e:
        inputs.detect_format(bytes(range(256)) * 4, name)
    assert e.value.file == name


@pytest.mark.parametrize("key", ["hlo", "mlir", "bytecode"])
def test_a_dash_reads_the_module_from_standard_input(content, key):
    """FILE '-' is standard input, read whole as bytes (text or bytecode), and named '-' nowhere else."""
    import subprocess
    import sys

    data = content[key]
    proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", "-"],
                          input=data if isinstance(data, bytes) else data.encode(), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"func.func" in proc.stdout and b"stablehlo." in proc.stdout
