"""scripts/pinned_messages.py: which assertions pin a message's wording outside golden tests."""

from __future__ import annotations

import importlib.util

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("pinned_messages", REPO / "scripts" / "pinned_messages.py")
pinned = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pinned)

SENTENCE = "unknown GPU spec 'h100_sx' (did you mean 'h100_sxm'?)"

TESTS = f'''
import pytest

def test_pins_by_equality(e):
    assert e.value.message == "{SENTENCE}"

def test_pins_by_containment_and_match(r):
    assert "{SENTENCE}" in r.err
    with pytest.raises(ValueError, match=r"{SENTENCE}"):
        pass

def test_asserts_facts(e, r):
    assert "'h100_sx'" in e.value.message          # a fact, short
    assert r.out == "{SENTENCE}"                   # an output, not a message

@pytest.mark.golden
@pytest.mark.parametrize("name", ["x"])
def test_family_exactly(e, name):
    assert e.value.message == "{SENTENCE}"
'''


def test_counts_pinning_assertions_outside_golden_tests_only(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "test_x.py").write_text(TESTS)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test_data.py").write_text(TESTS)  # inputs, not tests
    found, in_golden = pinned.scan(tmp_path)
    assert sorted((line, test) for _, line, test in found) == [
        (5, "test_pins_by_equality"), (8, "test_pins_by_containment_and_match"),
        (9, "test_pins_by_containment_and_match")]
    assert in_golden == 1


def test_main_prints_the_count_and_the_places(tmp_path, capsys):
    (tmp_path / "test_x.py").write_text(TESTS)
    assert pinned.main([str(tmp_path), "--files"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("3 assertions pin a message in 2 tests") and "(1 in golden tests)" in out[0]
    assert out[1].split() == ["3", str(tmp_path / "test_x.py")]
