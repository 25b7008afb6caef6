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
