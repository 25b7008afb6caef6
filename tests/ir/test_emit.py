"""ir/emit.py: module -> output conversions, called directly on small modules."""

from __future__ import annotations

import re

import pytest

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.errors import StageError
from mlirhlo_driver.inputs import loader
from mlirhlo_driver.ir import emit
from mlirhlo_driver.ir import hlo_proto as codec
from tests.conftest import DATA, assert_mentions

ADD = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

TOPK = """\
func.func @main(%a: tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>) {
  %v, %i = mhlo.topk(%a, k = 2) : tensor<4x8xf32> -> (tensor<4x2xf32>, tensor<4x2xi32>)
  return %v, %i : tensor<4x2xf32>, tensor<4x2xi32>
}
"""

FOUR_CHLO = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = chlo.lgamma %a : tensor<4xf32> -> tensor<4xf32>
  %1 = chlo.sinh %0 : tensor<4xf32> -> tensor<4xf32>
  %2 = chlo.erf_inv %1 : tensor<4xf32> -> tensor<4xf32>
  %3 = chlo.digamma %2 : tensor<4xf32> -> tensor<4xf32>
  return %3 : tensor<4xf32>
}
"""


def _parse(text: str):
    return loader.parse_mlir(text, "t.mlir")


def _versions() -> tuple[str, str]:
    from jaxlib.mlir.dialects import stablehlo

    return stablehlo.get_minimum_version(), stablehlo.get_current_version()


def _str_attr(module, value):
    from jaxlib.mlir import ir

    with module.context:
        return ir.StringAttr.get(value)


def _read_vhlo(data: bytes, tmp_path):
    """The artifact as the driver loads a .vhlo file."""
    path = tmp_path / "t.vhlo"
    path.write_bytes(data)
    [loaded] = loader.load(str(path))
    return loaded.module


def test_vhlo_of_an_hlo_module_with_topk(cli, tmp_path):
    """XLA's HLO import leaves TopK as mhlo.topk, which VHLO cannot hold: the artifact
    carries it as MHLO's custom call, and XLA reads back the same topk."""
    dump = DATA / "jax_dumps" / "module_sort.before_optimizations.txt"
    out = tmp_path / "sort.vhlo"
    r = cli("opt", str(dump), "--stage", "vhlo", "-o", str(out))
    assert r.code == 0, r.err
    back = cli("opt", str(out), "--platform", "cpu", "--stage", "hlo-before-optimizations")
    assert back.code == 0, back.err
    assert re.search(r"= \(f32\[4,3\]\{1,0\}, s32\[4,3\]\{1,0\}\) topk\(%\S+\), k=3, largest=true", back.out)
    text = cli("opt", str(out))
    assert "stablehlo.custom_call @mhlo.topk(" in text.out and "= mhlo.topk(" not in text.out


def test_stablehlo_text_and_bytecode_and_clone():
    """Text prints locations only when asked; bytecode is MLIR bytecode that parses back to the
    same module; a clone is a separate module with the same text and locations."""
    m = _parse(ADD)
    text = emit.stablehlo_text(m)
    assert "stablehlo.add %arg0, %arg0 : tensor<4xf32>" in text and "loc(" not in text
    assert "loc(" in emit.stablehlo_text(m, debug_info=True)
    data = emit.bytecode(m)
    assert data.startswith(b"ML\xefR")
    assert emit.stablehlo_text(_parse(data)) == text
    copy = emit.clone(m)
    assert copy is not m and copy.operation is not m.operation
    assert emit.stablehlo_text(copy, debug_info=True) == emit.stablehlo_text(m, debug_info=True)
    copy.body.operations[0].operation.attributes["sym_name"] = _str_attr(copy, "renamed")
    assert "@renamed" in emit.stablehlo_text(copy) and "@main" in emit.stablehlo_text(m)


def test_a_clone_keeps_the_module_ops_name_attributes_and_location():
    """A jax-written module (``module @jit_f attributes {mhlo.num_partitions ...}``, an
    sdy mesh, named locations): the clone prints the same with locations, and is its own
    (an attribute set on it is not on the original)."""
    m = _parse((DATA / "sharded_matmul.mlir").read_text())
    copy = emit.clone(m)
    assert emit.stablehlo_text(copy, debug_info=True) == emit.stablehlo_text(m, debug_info=True)
    assert "module @jit__lambda attributes {mhlo.num_partitions = 4" in emit.stablehlo_text(copy)
    copy.operation.attributes["sym_name"] = _str_attr(copy, "renamed")
    assert "module @renamed" in emit.stablehlo_text(copy) and "module @jit__lambda" in emit.stablehlo_text(m)
    assert copy.operation.verify()


def test_resolve_vhlo_version_names_and_bounds():
    """'current' (also None or ''), 'minimum', or an explicit version between them, both
    ends included."""
    minimum, current = _versions()
    assert [emit.resolve_vhlo_version(t) for t in (None, "", "current")] == [current] * 3
    assert emit.resolve_vhlo_version("minimum") == minimum
    assert emit.resolve_vhlo_version(minimum) == minimum
    assert emit.resolve_vhlo_version(current) == current
    assert emit.resolve_vhlo_version("1.0.0") == "1.0.0"


@pytest.mark.parametrize("target", ["1.2", "1.2.3.4", "1.x.0", "a.b.c", "1..0", "-1.0.0", "latest"])
def test_resolve_vhlo_version_refuses_malformed(target, monkeypatch):
    """Anything but three dot-separated numbers is malformed, naming the range."""
    monkeypatch.delenv("MLIRHLO_DRIVER_ERRORS_NAME_FLAGS", raising=False)
    minimum, current = _versions()
    with pytest.raises(StageError) as e:
        emit.resolve_vhlo_version(target)
    assert_mentions(e.value.format("params"), "malformed", f"'{target}'", "MAJOR.MINOR.PATCH", minimum, current)


def test_resolve_vhlo_version_refuses_outside_the_range(monkeypatch):
    """A version below the minimum or above the current one (compared as numbers) is refused."""
    monkeypatch.delenv("MLIRHLO_DRIVER_ERRORS_NAME_FLAGS", raising=False)
    minimum, current = _versions()
    major, minor, patch = (int(p) for p in current.split("."))
    lo = [int(p) for p in minimum.split(".")]
    below = f"{lo[0]}.{lo[1]}.{lo[2] - 1}" if lo[2] else f"{lo[0]}.{lo[1] - 1}.99"
    for target in (below, f"{major}.{minor}.{patch + 1}", f"{major}.{minor + 1}.0", f"{major + 1}.0.0", "0.0.0"):
        with pytest.raises(StageError) as e:
            emit.resolve_vhlo_version(target)
        assert_mentions(e.value.format("params"), f"target_version='{target}'", "outside", minimum, current)


@pytest.mark.golden
@pytest.mark.parametrize("target, message", [
    ("1.2", "error: malformed target_version '1.2' (use MAJOR.MINOR.PATCH between {minimum} and {current}, or "
            "'current'/'minimum')"),
    ("0.0.0", "error: target_version='0.0.0' is outside what this StableHLO supports (between {minimum} and "
              "{current})"),
])
def test_vhlo_version_refusals_exactly(monkeypatch, target, message):
    """A target version the installed StableHLO cannot write: the golden of resolve_vhlo_version's errors."""
    monkeypatch.delenv("MLIRHLO_DRIVER_ERRORS_NAME_FLAGS", raising=False)
    minimum, current = _versions()
    with pytest.raises(StageError) as e:
        emit.resolve_vhlo_version(target)
    assert e.value.format("params") == message.format(minimum=minimum, current=current)


def test_vhlo_artifact_is_written_for_the_target_version(tmp_path):
    """The artifact is VHLO bytecode that names its target version and reads back as the module."""
    minimum, current = _versions()
    m = _parse(ADD)
    data = emit.vhlo_artifact(m)
    assert data.startswith(b"ML\xefR") and f"StableHLO_v{current}\x00".encode() in data
    assert f"StableHLO_v{minimum}\x00".encode() in emit.vhlo_artifact(m, target_version="minimum")
    back = _read_vhlo(data, tmp_path)
    assert "stablehlo.add %arg0, %arg0 : tensor<4xf32>" in emit.stablehlo_text(back)


def test_vhlo_artifact_writes_mhlo_ops_as_custom_calls_and_leaves_the_module(tmp_path):
    """MHLO ops (TopK, from XLA's HLO import) go into the artifact as custom calls; the
    caller's module keeps its MHLO op."""
    m = _parse(TOPK)
    assert emit.has_mhlo(m) and not emit.has_mhlo(_parse(ADD))
    back = emit.stablehlo_text(_read_vhlo(emit.vhlo_artifact(m), tmp_path))
    assert "stablehlo.custom_call @mhlo.topk(%arg0) {mhlo.attributes = {k = 2 : i64}" in back
    assert "= mhlo.topk(" not in back and not emit.has_mhlo(_parse(back))
    assert emit.has_mhlo(m) and "= mhlo.topk(%arg0, k = 2)" in emit.stablehlo_text(m)


def test_vhlo_artifact_of_chlo_names_the_ops_and_the_fix():
    """CHLO cannot be serialized: the serializer's own error line, and a hint naming at most three
    of the CHLO ops, sorted, with the pipeline that legalizes them."""
    _, current = _versions()
    m = _parse(FOUR_CHLO)
    with pytest.raises(StageError) as e:
        emit.vhlo_artifact(m)
    assert_mentions(e.value.message, "cannot serialize", current, "portable artifact: ")
    detail = e.value.message.split("portable artifact: ", 1)[1]
    assert detail and detail == detail.strip() and "\n" not in detail and "error:" not in detail
    assert_mentions(e.value.hint, "(chlo.digamma, chlo.erf_inv, chlo.lgamma)", "--pipeline @prepare-export")


def test_vhlo_artifact_error_without_a_diagnostic_uses_the_exception(monkeypatch):
    """When the serializer prints nothing, the detail is the exception's own line, and a module
    without CHLO has no hint."""
    from jaxlib.mlir.dialects import stablehlo

    def fail(module, version):
        raise RuntimeError("first\nerror: the reason  \nlast")

    monkeypatch.setattr(stablehlo, "serialize_portable_artifact", fail)
    with pytest.raises(StageError) as e:
        emit.vhlo_artifact(_parse(ADD))
    _, current = _versions()
    assert_mentions(e.value.message, current, "the reason")
    assert "first" not in e.value.message and "last" not in e.value.message
    assert e.value.hint is None


@pytest.mark.golden
@pytest.mark.parametrize("text, message", [
    (ADD, "error: cannot serialize as a StableHLO {current} portable artifact: the reason"),
    (FOUR_CHLO, "error: cannot serialize as a StableHLO {current} portable artifact: the reason (the module has "
                "CHLO ops (chlo.digamma, chlo.erf_inv, chlo.lgamma), which VHLO cannot hold; legalize them first: "
                "--pipeline @prepare-export)"),
])
def test_vhlo_artifact_errors_exactly(monkeypatch, text, message):
    """A module the serializer refuses (here: a serializer that says 'the reason'): the golden of
    vhlo_artifact's error and its CHLO hint."""
    from jaxlib.mlir.dialects import stablehlo

    def fail(module, version):
        raise RuntimeError("first\nerror: the reason  \nlast")

    m = _parse(text)
    monkeypatch.setattr(stablehlo, "serialize_portable_artifact", fail)
    with pytest.raises(StageError) as e:
        emit.vhlo_artifact(m)
    assert e.value.format() == message.format(current=_versions()[1])


def test_mhlo_text_legalizes_a_copy():
    """MHLO text without locations unless asked; the module itself stays StableHLO."""
    m = _parse(ADD)
    text = emit.mhlo_text(m)
    assert "mhlo.add %arg0, %arg0 : tensor<4xf32>" in text and "stablehlo." not in text and "loc(" not in text
    assert "loc(" in emit.mhlo_text(m, debug_info=True)
    assert "stablehlo.add" in emit.stablehlo_text(m)


@pytest.mark.golden
def test_mhlo_text_failure_is_a_stage_error(monkeypatch):
    """A failing legalization is a StageError with the pass's first error line (the golden of its message)."""
    from jaxlib.mlir import passmanager

    class Failing:
        @staticmethod
        def parse(spec):
            assert spec == "builtin.module(stablehlo-legalize-to-hlo)"
            return Failing()

        def run(self, op):
            raise RuntimeError("Failure while executing pass pipeline:\nerror: 'x' op cannot be legalized\n")

    monkeypatch.setattr(passmanager, "PassManager", Failing)
    with pytest.raises(StageError) as e:
        emit.mhlo_text(_parse(ADD))
    assert e.value.format() == "error: cannot legalize to MHLO: 'x' op cannot be legalized"


def test_hlo_proto_text_and_pbtxt():
    """The HLO proto has no module id (the same module gives the same bytes); its text and
    text-proto forms read the same proto."""
    m = _parse(ADD)
    proto = emit.hlo_proto(m)
    assert proto == emit.hlo_proto(_parse(ADD))
    msg = codec.decode(proto)
    assert msg.id == 0 and msg.name == "main"
    assert emit.hlo_text(m) == _jaxlib.hlo_proto_to_text(proto)
    assert emit.hlo_text(m).startswith("HloModule main, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n")
    assert "add(%Arg_0.1, %Arg_0.1)" in emit.hlo_text(m)
    pbtxt = emit.hlo_pbtxt(m)
    assert pbtxt == codec.to_text(msg) and pbtxt.startswith('name: "main"\n') and 'opcode: "add"' in pbtxt
    with_id = codec.decode(proto)
    with_id.id = 42
    assert emit.stable_hlo_proto(codec.encode(with_id)) == proto


@pytest.mark.golden
def test_hlo_proto_errors():
    """A module XLA cannot convert, or a proto it cannot read, is a StageError with XLA's reason
    (the golden of those errors)."""
    with pytest.raises(StageError) as e:
        emit.hlo_proto(_parse("func.func @notmain() {\n  return\n}\n"))
    assert e.value.format() == ("error: XLA cannot convert this module to HLO: "
                                "conversion requires module with `main` function")
    with pytest.raises(StageError) as e:
        emit.hlo_text_from_proto(b"\x08\x01")
    assert e.value.format() == ("error: XLA cannot read this module as HLO: "
                                "FAILED_PRECONDITION: No program shape found in the proto")


@pytest.mark.golden
@pytest.mark.parametrize("message, line", [
    ("noise\n  error: the reason  \nerror: a later one", "the reason"),
    ("loc: error: a error: b", "a error: b"),
    ("m.hlo:3: error: bad op: error: in operand 0", "bad op: error: in operand 0"),
    ("first\n\nsecond\n  \n", "second"),
    ("only", "only"),
])
def test_first_line_of_an_error(message, line):
    """The text after the first 'error:', else the last non-blank line: the golden of _first_line."""
    assert emit._first_line(RuntimeError(message)) == line


def test_first_line_of_an_empty_error_is_its_type():
    """An exception without text is named by its type."""
    assert emit._first_line(ValueError("")) == "ValueError"
    assert emit._first_line(KeyError()) == "KeyError"


def test_error_text_without_an_error_line_is_its_last_line():
    from mlirhlo_driver.ir.emit import _first_line

    assert _first_line(RuntimeError("first\n\nsecond\n")) == "second"
    assert _first_line(RuntimeError("noise\nerror: the reason\nmore")) == "the reason"
    # Only the first "error:" marks where the reason starts; the rest of the line is the reason.
    reason = _first_line(RuntimeError("m.hlo:3: error: bad op: error: in operand 0"))
    assert reason.startswith("bad op") and reason.endswith("in operand 0") and "m.hlo" not in reason
    assert _first_line(RuntimeError("")) == "RuntimeError"
