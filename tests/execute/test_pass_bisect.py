"""execute/pass_bisect.py, ``run --bisect-passes``: the XLA pass behind a wrong number."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

from mlirhlo_driver.execute import run
from tests.conftest import PLAIN, assert_mentions


class _FakeModuleOp:
    """What pass_bisect.find needs of a module: its bytecode."""

    def __init__(self, data=b"MLIR-bytes"):
        self.operation = self
        self.data = data

    def write_bytecode(self, buf):
        buf.write(self.data)


def _pass_bisect_setup(monkeypatch, calls, culprit, user_flags=(), fail=()):
    """pass_bisect.find over a made-up pass log: a trial matches when every pass of ``culprit`` is
    disabled; a trial whose disabled set includes a pass of ``fail`` dies (a DriverError)."""
    from types import SimpleNamespace

    from mlirhlo_driver._native import isolate
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute import pass_bisect
    from mlirhlo_driver.xla import backend, pass_log

    seen = {"trials": [], "logged": [], "around": []}

    def compile(module, spec, name):
        seen["logged"].append((name, spec.platform, spec.target.xla_flags, spec.pass_log,
                               {"keep_going": spec.keep_going, "dumps": spec.dumps}))
        return SimpleNamespace(art=SimpleNamespace(pass_calls=calls))

    def call(fn, args, **kw):
        bytecode, arrays, target = args
        disabled = dict(target.xla_flags)["xla_disable_hlo_passes"].split(",")
        seen["trials"].append(disabled)
        assert (fn, bytecode, target.platform, kw["what"]) == ("trial", b"MLIR-bytes", "cpu",
                                                               "XLA with passes disabled")
        if any(set(f) == set(disabled) for f in fail):
            raise DriverError("the compile died")
        return ["match"] if set(culprit) <= set(disabled) else ["differ"]

    monkeypatch.setattr(backend, "compile", compile)
    monkeypatch.setattr(isolate, "call", call)
    monkeypatch.setattr(pass_bisect, "_around",
                        lambda module, name, target, p: seen["around"].append(p) or ("B", "A", "pipe"))
    options = run.RunOptions(platform="cpu", xla_flags=user_flags)
    result = pass_bisect.find(_FakeModuleOp(), "m", [np.zeros(2)], options, trial="trial",
                              matching=lambda outs: outs == ["match"])
    assert seen["logged"] == [("m", "cpu", user_flags, pass_log.TIMES_LEVEL,
                               {"keep_going": True, "dumps": (backend.HLO_TEXT,)})]
    return result, seen


def _pass_call(index, name, pipeline="simp", is_pipeline=False, skipped=False):
    from mlirhlo_driver.xla.pass_log import PassCall

    return PassCall("m", pipeline, name, 1, None, is_pipeline, skipped, index)


def _eight_passes():
    # logged out of order: candidates follow the log's index, each pass once; pipelines and
    # skipped runs are not candidates
    calls = [_pass_call(i, n) for i, n in enumerate("abcdefgh")]
    calls += [_pass_call(8, "c", "fusion"), _pass_call(9, "c", "simp"), _pass_call(10, "nested", is_pipeline=True),
              _pass_call(11, "gone", skipped=True)]
    return list(reversed(calls))


# ------------------------------------------------------------------ run --bisect-passes

# Two modules a known algsimp rewrite changes the numbers of. jaxlib 0.12's algsimp
# folds A - A to 0 only under fast math (inf - inf is NaN); older ones also assume
# abs(x) >= 0, which s8 abs(-128) breaks.
MINUS_ITSELF = """HloModule minus_itself

ENTRY main {
  x = f32[64] parameter(0)
  ax = f32[64] abs(x)
  c = f32[] constant(100)
  cb = f32[64] broadcast(c), dimensions={}
  y = f32[64] multiply(ax, cb)
  e = f32[64] exponential(y)
  ROOT d = f32[64] subtract(e, e)
}
"""

FAST_MATH = ["--xla_cpu_enable_fast_math=true", "--xla_cpu_fast_math_honor_infs=true",
             "--xla_cpu_fast_math_honor_nans=true"]

ABS_NONNEGATIVE = """HloModule abs_nonnegative

ENTRY main {
  p = s8[1024] parameter(0)
  k = s8[] constant(16)
  kb = s8[1024] broadcast(k), dimensions={}
  x = s8[1024] multiply(p, kb)
  a = s8[1024] abs(x)
  z = s8[] constant(0)
  zb = s8[1024] broadcast(z), dimensions={}
  ROOT c = pred[1024] compare(a, zb), direction=GE
}
"""


def test_pass_bisect_halves_down_to_one_culprit_with_a_trial_per_new_set(monkeypatch):
    """One culprit: all passes disabled, then halves (the first half first) down to the one pass,
    each set tried once; its pipelines in the log's order, once each; the HLO around it asked for."""
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["c"])
    assert seen["trials"] == [list("abcdefgh"), list("abcd"), list("ab"), list("cd"), ["c"]]
    assert (result.passes, result.candidates, result.trials, result.confirmed) == (["c"], 8, 5, True)
    assert result.pipelines == {"c": ["simp", "fusion"]}
    assert (result.before, result.after, result.dump_pipeline, result.note) == ("B", "A", "pipe", "")
    assert seen["around"] == ["c"] and result.already_disabled == []
    last, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["h"])
    assert seen["trials"] == [list("abcdefgh"), list("abcd"), list("efgh"), list("ef"), list("gh"), ["g"], ["h"]]
    assert (last.passes, last.trials, last.confirmed, last.pipelines) == (["h"], 7, True, {"h": ["simp"]})


def test_pass_bisect_culprit_spread_over_both_halves_leaves_one_pass_out_at_a_time(monkeypatch):
    """A culprit that needs passes of both halves: one pass left out at a time gives the smallest
    set, confirmed from the cache (no trial twice); the HLO shown is around its first pass."""
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["b", "g"])
    assert seen["trials"][:3] == [list("abcdefgh"), list("abcd"), list("efgh")]
    assert seen["trials"][3:] == [list("bcdefgh"), list("cdefgh"), list("bdefgh"), list("befgh"), list("bfgh"),
                                  list("bgh"), ["b", "h"], ["b", "g"]]
    assert (result.passes, result.trials, result.confirmed) == (["b", "g"], 11, True)
    assert result.pipelines == {"b": ["simp"], "g": ["simp"]} and seen["around"] == ["b"]


def test_pass_bisect_keeps_the_users_disabled_passes_out_of_the_candidates(monkeypatch):
    """Passes the user's own --xla_disable_hlo_passes names are no candidates, and stay disabled
    in every trial (first) and in the flag that makes the module match."""
    user = (("xla_cpu_enable_fast_math", True), ("xla_disable_hlo_passes", "a, e,"))
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["d"], user_flags=user)
    assert seen["trials"][0] == ["a", "e", "b", "c", "d", "f", "g", "h"]
    assert all(t[:2] == ["a", "e"] for t in seen["trials"])
    assert (result.passes, result.candidates, result.already_disabled) == (["d"], 6, ["a", "e"])
    assert result.flag == "--xla_disable_hlo_passes=a,e,d"
    assert result.row() == {"passes": ["d"], "pipelines": {"d": ["simp"]}, "candidates": 6, "trials": 6,
                            "confirmed": True, "flag": "--xla_disable_hlo_passes=a,e,d", "note": ""}


def test_pass_bisect_finds_nothing_when_disabling_every_pass_does_not_match(monkeypatch):
    """No HLO pass explains it: one trial (or none without candidates), a note saying so, no passes."""
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["not-a-pass"])
    assert seen["trials"] == [list("abcdefgh")] and seen["around"] == []
    assert (result.passes, result.candidates, result.trials, result.confirmed) == ([], 8, 1, False)
    assert_mentions(result.note, "all 8 HLO passes", "does not make it match", "codegen")
    assert result.row()["flag"] is None
    none, seen = _pass_bisect_setup(monkeypatch, [_pass_call(0, "p", is_pipeline=True)], ["p"])
    assert seen["trials"] == [] and (none.passes, none.candidates, none.trials) == ([], 0, 0)
    assert_mentions(none.note, "all 0 HLO passes", "does not make it match")


@pytest.mark.golden
def test_pass_bisect_nothing_found_note_exactly(monkeypatch):
    """The note of a bisection that no HLO pass explains: its golden."""
    result, _ = _pass_bisect_setup(monkeypatch, _eight_passes(), ["not-a-pass"])
    assert result.note == ("disabling all 8 HLO passes that ran does not make it match: the difference "
                           "comes from XLA's codegen (or the reference), not from one HLO pass")


def test_pass_bisect_counts_a_trial_whose_compile_dies_as_no_match(monkeypatch):
    """A trial whose compile fails without its passes (a DriverError from the helper) does not
    match: the search goes on, one pass left out at a time."""
    result, seen = _pass_bisect_setup(monkeypatch, _eight_passes(), ["f"], fail=[["e", "f"]])
    assert seen["trials"] == [list("abcdefgh"), list("abcd"), list("efgh"), list("ef"), list("gh"), list("fgh"),
                              list("fh"), ["f"]]
    assert (result.passes, result.trials, result.confirmed) == (["f"], 8, True)


def test_pass_bisect_disabled_pass_lists_from_a_string_or_a_list():
    """The user's disabled passes: a comma list (blanks dropped) or a list; merged with new ones,
    each once, the user's first, into a sorted flag tuple."""
    from mlirhlo_driver.execute import pass_bisect

    assert pass_bisect._disabled(()) == [] and pass_bisect._disabled((("xla_disable_hlo_passes", ""),)) == []
    assert pass_bisect._disabled((("xla_disable_hlo_passes", " cse , ,dce"),)) == ["cse", "dce"]
    assert pass_bisect._disabled((("xla_disable_hlo_passes", ["cse", " ", "dce "]),)) == ["cse", "dce"]
    assert pass_bisect._disabled((("xla_disable_hlo_passes", ("x",)),)) == ["x"]
    flags = (("xla_disable_hlo_passes", "cse,dce"), ("b_flag", 1))
    assert pass_bisect._with_disabled(flags, ["dce", "algsimp"]) == (
        ("b_flag", 1), ("xla_disable_hlo_passes", "cse,dce,algsimp"))
    assert pass_bisect._with_disabled((("z", 2),), ["p"]) == (("xla_disable_hlo_passes", "p"), ("z", 2))


def test_pass_bisect_hlo_around_the_first_run_that_changed_the_module(monkeypatch):
    """_around compiles once more with XLA dumping just that pass (its name escaped, keep going past
    a failed compile, HLO text only) and gives the HLO before and after its first run that changed
    the instructions, with that run's pipeline; Nones and '' when no run changed them."""
    from types import SimpleNamespace

    from mlirhlo_driver.execute import pass_bisect
    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.platforms import CpuTarget

    texts = {"a0": "HloModule m, id=9\nROOT x = f32[] add(p, q)\n",  # an 'after' with no 'before' yet
             "b1": "HloModule m, id=1\nROOT x = f32[] add(p, q)\n", "a1": "HloModule m, id=2\nROOT x = f32[] add(p, q)\n",
             "o2": "HloModule m, id=3\nROOT x = f32[] add(q, p)\n",  # another pass changed it
             # the instructions below the first one changed
             "b3": "HloModule m, id=4\ny = f32[] p\nROOT x = f32[] add(q, p)\n",
             "a3": "HloModule m, id=5\ny = f32[] p\nROOT x = f32[] mul(q, p)\n",
             "b4": "HloModule m, id=6\nROOT x = f32[] mul(q, p)\n", "a4": "HloModule m, id=7\nROOT x = f32[] sub(q, p)\n"}
    dumps = [backend.PassDump(0, "p0", "a.b", "x", "a0"), backend.PassDump(1, "p1", "cse", "a.b", "b1"),
             backend.PassDump(2, "p1", "a.b", "dce", "a1"), backend.PassDump(3, "p2", "dce", "cse", "o2"),
             backend.PassDump(4, "p3", "cse", "a.b", "b3"), backend.PassDump(5, "p3", "a.b", "dce", "a3"),
             backend.PassDump(6, "p4", "cse", "a.b", "b4"), backend.PassDump(7, "p4", "a.b", "dce", "a4")]
    seen = []

    def compile(module, spec, name):
        seen.append((module, name, spec))
        return SimpleNamespace(art=SimpleNamespace(files={k: v.encode() for k, v in texts.items()}))

    monkeypatch.setattr(backend, "compile", compile)
    monkeypatch.setattr(backend, "pass_dumps", lambda art: list(dumps))
    spec = backend.CompileSpec(CpuTarget(xla_flags=(("xla_a", 2), ("xla_z", 1))), dumps=(backend.HLO_TEXT,),
                               keep_going=True)
    assert pass_bisect._around("mod", "m", spec, "a.b") == (texts["b3"], texts["a3"], "p3")
    [(module, name, used)] = seen
    assert (module, name, used.keep_going, used.dumps) == ("mod", "m", True, (backend.HLO_TEXT,))
    assert used.pass_dump_re == r"^a\.b$" and dict(used.debug_options())["xla_dump_hlo_pass_re"] == r"^a\.b$"
    assert used.target == spec.target
    dumps[:] = dumps[:3]
    assert pass_bisect._around("mod", "m", spec, "a.b") == (None, None, "")
    assert pass_bisect._body("HloModule m\n") == "" and pass_bisect._body("one line") == "one line"
    assert pass_bisect._body("HloModule m\na\nb\n") == "a\nb\n"


@pytest.mark.slow
def test_bisect_passes_names_the_pass(cli, tmp_path):
    mismatched = 0
    for name, text, flags in (("minus_itself", MINUS_ITSELF, FAST_MATH), ("abs_nonnegative", ABS_NONNEGATIVE, [])):
        path = tmp_path / f"{name}.hlo"
        path.write_text(text)
        plain = cli("run", path, *flags)
        if plain.code == 0:
            continue  # this XLA does not make that rewrite
        mismatched += 1
        report = tmp_path / f"{name}.json"
        r = cli("run", path, *flags, "--bisect-passes", "--json", report)
        assert r.code == 1, r.err  # the mismatch is real
        assert re.search(r"^  bisect-passes: XLA pass 'algsimp' \(simplification[,)].*: disabled, the module "
                         r"matches its reference \(\d+ trials over \d+ passes\)$", r.out, re.M), r.out
        flag_line = next(ln for ln in r.out.splitlines() if ln.startswith("  matches with: "))
        assert flag_line.endswith(" --xla_disable_hlo_passes=algsimp")
        assert "// -----// HLO before algsimp (simplification) //----- //" in r.out
        assert "// -----// HLO after algsimp (simplification) //----- //" in r.out
        # the line it prints does make the module match
        argv = flag_line.removeprefix("  matches with: mlirhlo ").split()
        assert cli(*argv).code == 0
        row = json.loads(report.read_text())[0]["bisect_passes"]
        assert row["passes"] == ["algsimp"] and row["confirmed"] and row["flag"] == "--xla_disable_hlo_passes=algsimp"
    assert mismatched, "no module here mismatches on this XLA: the test would prove nothing"


def test_bisect_passes_on_a_difference_no_pass_explains(cli, tmp_path):
    from mlirhlo_driver.execute import pass_bisect

    b = pass_bisect.PassBisect([], 90, 1, note="disabling all 90 HLO passes that ran does not make it match")
    assert b.row()["flag"] is None and b.row()["passes"] == []


@pytest.mark.slow
def test_bisect_passes_is_not_run_for_a_match(cli, tmp_path):
    path = tmp_path / "plain.hlo"
    path.write_text(PLAIN)
    r = cli("run", path, "--bisect-passes")
    assert r.code == 0 and "bisect-passes" not in r.out


@pytest.mark.skipif(sys.platform != "linux", reason="the isolate helper needs Linux")
def test_pass_bisect_keeps_the_users_disabled_passes():
    from mlirhlo_driver.execute import pass_bisect

    b = pass_bisect.PassBisect(["algsimp"], 10, 3, already_disabled=["cse"])
    assert b.flag == "--xla_disable_hlo_passes=cse,algsimp"
    flags = pass_bisect._with_disabled((("xla_disable_hlo_passes", "cse"),), ["algsimp"])
    assert dict(flags)["xla_disable_hlo_passes"] == "cse,algsimp"


def test_the_pass_shown_is_the_first_run_that_changed_the_instructions(monkeypatch):
    """bisect-passes shows HLO around the first run of the culprit whose instructions changed:
    a run whose dumps differ only in the module's header line (XLA numbers it) is passed over,
    and a one-line dump is compared whole."""
    from types import SimpleNamespace

    from mlirhlo_driver.execute import pass_bisect
    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.platforms import CpuTarget

    texts = {
        "0": "HloModule m, id=1\nROOT a = f32[] add(x, y)\n",   # before the first run
        "1": "HloModule m, id=2\nROOT a = f32[] add(x, y)\n",   # after it: the header alone changed
        "2": "HloModule m, id=3\nROOT a = f32[] add(x, y)\n",   # before the second run
        "3": "HloModule m, id=4\nROOT a = f32[] add(y, x)\n",   # after it: the instructions changed
    }
    dumps = [backend.PassDump(0, "p", "cse", "algsimp", "0"), backend.PassDump(1, "p", "algsimp", "dce", "1"),
             backend.PassDump(2, "q", "cse", "algsimp", "2"), backend.PassDump(3, "q", "algsimp", "dce", "3")]
    art = SimpleNamespace(files={k: v.encode() for k, v in texts.items()})
    monkeypatch.setattr(backend, "compile", lambda *a, **k: SimpleNamespace(art=art))
    monkeypatch.setattr(backend, "pass_dumps", lambda a: dumps)
    spec = backend.CompileSpec(CpuTarget())
    assert pass_bisect._around(None, "m", spec, "algsimp") == (texts["2"], texts["3"], "q")
    assert pass_bisect._body("ROOT a = f32[] add(x, y)") == "ROOT a = f32[] add(x, y)"
    assert pass_bisect._body(texts["0"]) == pass_bisect._body(texts["1"]) != pass_bisect._body(texts["3"])
