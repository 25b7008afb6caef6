"""core/program.py: what a Program is made of."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("spec, is_list", [
    ("canonicalize", True), ("canonicalize,cse", True),
    ("@simplify", False), ("func.func(cse)", False), ("cse{max-iterations=1}", False),
])
def test_a_comma_list_of_passes_is_told_from_a_textual_pipeline(spec, is_list):
    """optimize(spec) reads a bare comma list as --passes; '@name', '(' or '{' make it a pipeline."""
    from mlirhlo_driver.core.program import is_pass_list

    assert is_pass_list(spec) is is_list


@pytest.mark.golden
def test_an_unknown_dialect_message_exactly():
    """Golden: as_text in a dialect it does not give."""
    import mlirhlo_driver as mh
    from tests.conftest import DATA

    with pytest.raises(mh.InputError) as e:
        mh.load(str(DATA / "chlo_special.mlir")).as_text("xla")
    assert e.value.format() == "error: unknown dialect 'xla' (stablehlo, mhlo, hlo)"


def _count_parses(monkeypatch) -> list[str]:
    from mlirhlo_driver.inputs import loader

    parsed: list[str] = []
    real = loader.parse_unit

    def counting(unit):
        parsed.append(unit.format)
        return real(unit)

    monkeypatch.setattr(loader, "parse_unit", counting)
    return parsed


def test_a_pipeline_over_mlir_text_parses_it_once_and_leaves_the_program_as_read(tmp_path, monkeypatch):
    """MLIR text read from a file: its optimized program parses the bytes in hand for a module
    of its own (no parse-then-copy); the program read is unparsed until asked, then as read."""
    import mlirhlo_driver as mh

    src = tmp_path / "m.mlir"
    src.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  %1 = stablehlo.add %a, %a : tensor<4xf32>\n"
                   "  %2 = stablehlo.multiply %0, %1 : tensor<4xf32>\n  return %2 : tensor<4xf32>\n}\n")
    parsed = _count_parses(monkeypatch)
    read = mh.load(str(src))
    done = read.optimize("cse")
    assert done.as_text().count("stablehlo.add") == 1
    assert parsed == ["mlir"] and not read.loaded
    assert read.as_text().count("stablehlo.add") == 2  # made now, as read
    assert parsed == ["mlir", "mlir"]
    again = read.optimize("cse")  # the read program is parsed now: copied, not parsed again
    assert again.as_text() == done.as_text() and parsed == ["mlir", "mlir"]


def test_a_pipeline_over_hlo_copies_the_converted_module(monkeypatch):
    """HLO is converted once (an XLA round trip): the optimized program takes a copy of it."""
    import mlirhlo_driver as mh
    from tests.conftest import DATA

    parsed = _count_parses(monkeypatch)
    read = mh.load(str(DATA / "mlp_train_step.before_optimizations.txt"))
    done = read.optimize("cse")
    assert done.as_text() and read.loaded and parsed == ["hlo"]
    assert read.as_text() and parsed == ["hlo"]
