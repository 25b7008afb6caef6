"""xla/pass_log.py: XLA's pass pipeline log parsed into passes, times and changes."""

from __future__ import annotations

import re
import textwrap

import pytest

# ------------------------------------------------------------------ the pass log

LOG = textwrap.dedent("""\
    I1201 18:20:26.192600   17649 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module m: outer pipe
    I1201 18:20:26.192601   17649 hlo_pass_pipeline.cc:211]   HLO pass first pass
    I1201 18:20:26.192602   17649 hlo_pass_pipeline.cc:269]   Pass caused changes first pass
    I1201 18:20:26.192603   17649 hlo_pass_pipeline.cc:206] HLO pass: first pass time: 1.23 ms (1230 us) (cumulative: 1.23 ms, max: 1.23 ms, #called: 1)
    I1201 18:20:26.192604   17649 hlo_pass_pipeline.cc:211]   HLO pass simplification
    I1201 18:20:26.192605   17649 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module m: simplification
    I1201 18:20:26.192606   99999 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module other: elsewhere
    I1201 18:20:26.192607   17649 hlo_pass_pipeline.cc:211]   HLO pass algsimp
    I1201 18:20:26.192608   99999 hlo_pass_pipeline.cc:211]   HLO pass dce
    I1201 18:20:26.192609   17649 hlo_pass_pipeline.cc:206] HLO pass: algsimp time: 7 us (7 us) (cumulative: 1 ms, max: 1 ms, #called: 2)
    W1201 18:20:26.192610   17649 some_other.cc:1] not a pass line
    I1201 18:20:26.192611   17649 hlo_pass_pipeline.cc:303] Running HLO pass pipeline on module m: simplification
    I1201 18:20:26.192612   17649 hlo_pass_pipeline.cc:211]   HLO pass algsimp
    I1201 18:20:26.192613   17649 hlo_pass_pipeline.cc:206] HLO pass: algsimp time: 5 us (5 us) (cumulative: 1 ms, max: 1 ms, #called: 3)
    I1201 18:20:26.192614   99999 hlo_pass_pipeline.cc:206] HLO pass: dce time: 40 us (40 us) (cumulative: 1 ms, max: 1 ms, #called: 4)
    I1201 18:20:26.192615   17649 hlo_pass_pipeline.cc:206] HLO pass: simplification time: 20 us (20 us) (cumulative: 1 ms, max: 1 ms, #called: 5)
    I1201 18:20:26.192616   17649 hlo_pass_pipeline.cc:211]   HLO pass last
    I1201 18:20:26.192617   17649 hlo_pass_pipeline.cc:199]   Skipping HLO pass (filtered by xla_disable_hlo_passes / xla_enable_hlo_passes_only): last
    I1201 18:20:26.192618   17649 hlo_pass_pipeline.cc:206] HLO pass: last time: 1 us (1 us) (cumulative: 1 ms, max: 1 ms, #called: 6)
    """)


# ------------------------------------------------------------------ the pass log's edge cases

def _log(*lines: str) -> str:
    """XLA log lines (``thread|message``) as hlo_pass_pipeline.cc writes them on fd 2."""
    out = []
    for i, line in enumerate(lines):
        thread, msg = line.split("|", 1)
        out.append(f"I1201 18:20:26.{i:06d}   {thread} hlo_pass_pipeline.cc:211] {msg}")
    return "\n".join(out) + "\n"


def _calls(calls) -> list[tuple]:
    return [(c.module, c.pipeline, c.name, c.us, c.changed, c.is_pipeline, c.skipped, c.index) for c in calls]


def test_pass_log_parses_nesting_threads_fixed_points_and_skips():
    from mlirhlo_driver.xla import pass_log

    calls = pass_log.parse(LOG, changes_logged=True)
    got = [(c.module, c.pipeline, c.name, c.us, c.changed, c.is_pipeline, c.skipped) for c in calls]
    assert got == [
        ("m", "outer pipe", "first pass", 1230, True, False, False),
        ("m", "simplification", "algsimp", 7, False, False, False),
        # a fixed-point pipeline runs again: still the same nested pipeline
        ("m", "simplification", "algsimp", 5, False, False, False),
        # another thread keeps its own pipeline
        ("other", "elsewhere", "dce", 40, False, False, False),
        # the nested pipeline ends: its passes were done, the outer one goes on
        ("m", "outer pipe", "simplification", 20, False, True, False),
        ("m", "outer pipe", "last", 1, False, False, True),
    ]
    rows = pass_log.rows(calls)
    # longest first; pipelines and skipped passes are not rows of their own
    assert [(r.name, r.pipeline, r.calls, r.us, r.changed) for r in rows] == [
        ("first pass", "outer pipe", 1, 1230, True), ("dce", "elsewhere", 1, 40, False),
        ("algsimp", "simplification", 2, 12, False)]
    text = pass_log.format_table(calls, "cpu")
    assert text.splitlines()[0] == "// XLA HLO passes (cpu): 4 runs of 3 passes, 1.282 ms in passes"
    assert re.search(r"^\s+1\.230\s+95\.9%\s+1\s+yes\s+first pass \(outer pipe\)$", text, re.M), text
    assert re.search(r"^\s+0\.012\s+0\.9%\s+2\s+no\s+algsimp \(simplification\)$", text, re.M), text


@pytest.mark.parametrize("us", [None, 0])
def test_a_table_of_no_time_says_zero_ms_and_zero_percent(us):
    """No pass, or passes of 0 us (the log's resolution): the title says 0.000 ms, each row 0.0%."""
    from mlirhlo_driver.xla import pass_log

    table = [] if us is None else [pass_log.PassRow("dce", "p", 2, us, False)]
    lines = pass_log.format_rows(table, "cpu").splitlines()
    runs = "0 runs of 0 passes" if us is None else "2 runs of 1 passes"
    assert lines[0] == f"// XLA HLO passes (cpu): {runs}, 0.000 ms in passes"
    assert all("  0.0%  " in ln for ln in lines[2:]) and len(lines) == (2 if us is None else 3)


def test_changes_come_from_a_level_3_log_of_the_same_compile():
    from mlirhlo_driver.xla import pass_log

    timed = pass_log.parse(LOG.replace("Pass caused changes first pass", "unrelated"))
    assert {c.changed for c in timed} == {None}  # a level-1 log says nothing about changes
    assert "?" in pass_log.format_table(timed, "cpu")
    merged = pass_log.merge_changes(timed, pass_log.parse(LOG, changes_logged=True))
    assert [(c.name, c.changed) for c in merged if not c.is_pipeline][:2] == [("first pass", True),
                                                                              ("algsimp", False)]


def test_log_env_is_what_xla_reads():
    from mlirhlo_driver.xla import pass_log

    assert pass_log.log_env(1) == {"TF_CPP_VMODULE": "hlo_pass_pipeline=1", "TF_CPP_MIN_LOG_LEVEL": "0"}


def test_pass_log_ignores_timers_of_passes_it_did_not_see_start():
    """A timer line with no matching start (nothing open, or only other passes open) is no pass run;
    nor is a start line before any pipeline line on its thread."""
    from mlirhlo_driver.xla import pass_log

    text = _log(
        "1|HLO pass: orphan time: 3 us (3 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass early",
        "1|HLO pass: early time: 4 us (4 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|Running HLO pass pipeline on module m: p",
        "1|HLO pass: orphan time: 3 us (3 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass a",
        "1|HLO pass: orphan time: 3 us (3 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|HLO pass: a time: 9 us (9 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass b",
        "1|HLO pass: b time: 2 us (2 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
    )
    assert _calls(pass_log.parse(text)) == [("m", "p", "a", 9, None, False, False, 0),
                                            ("m", "p", "b", 2, None, False, False, 1)]


def test_pass_log_ends_the_passes_left_open_inside_one_that_ends():
    """A pass whose timer comes while passes started after it are still open ends them with it:
    they are not runs, and their late timers are ignored; a "caused changes" line marks the
    innermost open pass of that name."""
    from mlirhlo_driver.xla import pass_log

    text = _log(
        "1|Running HLO pass pipeline on module m: p",
        "1|  HLO pass outer",
        "1|  HLO pass inner",
        "1|  HLO pass deeper",
        "1|  Pass caused changes inner",
        "1|  Pass caused changes nobody",
        "1|HLO pass: outer time: 30 us (30 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|HLO pass: inner time: 20 us (20 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass x",
        "1|  HLO pass x",
        "1|  Pass caused changes x",
        "1|HLO pass: x time: 5 us (5 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|HLO pass: x time: 6 us (6 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|  HLO pass y",
        "1|  HLO pass z",
        "1|HLO pass: y time: 8 us (8 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "1|HLO pass: z time: 9 us (9 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
    )
    assert _calls(pass_log.parse(text, changes_logged=True)) == [
        ("m", "p", "outer", 30, False, False, False, 0),
        ("m", "p", "x", 5, True, False, False, 1),
        ("m", "p", "x", 6, False, False, False, 2),
        ("m", "p", "y", 8, False, False, False, 3)]
    assert _calls(pass_log.parse(text)) == [
        ("m", "p", "outer", 30, None, False, False, 0),
        ("m", "p", "x", 5, True, False, False, 1),
        ("m", "p", "x", 6, None, False, False, 2),
        ("m", "p", "y", 8, None, False, False, 3)]


def test_pass_log_nested_pipelines_two_deep_and_a_new_top_level_pipeline():
    """Pipelines nested two deep give each pass its innermost pipeline, and each ends back in
    its outer one; a top-level pipeline line on the thread ends whatever was open there."""
    from mlirhlo_driver.xla import pass_log

    text = _log(
        "7|Running HLO pass pipeline on module m: top",
        "7|  HLO pass mid",
        "7|Running HLO pass pipeline on module m: mid",
        "7|  HLO pass low",
        "7|Running HLO pass pipeline on module m: low",
        "7|  HLO pass leaf",
        "7|  Skipping HLO pass (filtered by xla_disable_hlo_passes): leaf",
        "7|HLO pass: leaf time: 1 us (1 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|HLO pass: low time: 2 us (2 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|  HLO pass after_low",
        "7|HLO pass: after_low time: 3 us (3 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|HLO pass: mid time: 4 us (4 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|  HLO pass in_top",
        "7|HLO pass: in_top time: 7 us (7 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|  HLO pass after_mid",
        "7|Running HLO pass pipeline on module n: next",
        "7|HLO pass: after_mid time: 5 us (5 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
        "7|  HLO pass first",
        "7|HLO pass: first time: 6 us (6 us) (cumulative: 1 ms, max: 1 ms, #called: 1)",
    )
    calls = pass_log.parse(text)
    assert _calls(calls) == [
        ("m", "low", "leaf", 1, None, False, True, 0),
        ("m", "mid", "low", 2, None, True, False, 1),
        ("m", "mid", "after_low", 3, None, False, False, 2),
        ("m", "top", "mid", 4, None, True, False, 3),
        ("m", "top", "in_top", 7, None, False, False, 4),
        ("n", "next", "first", 6, None, False, False, 5)]
    assert pass_log.ran(calls) == {"low", "after_low", "mid", "in_top", "first"}  # the skipped pass did not run
    assert pass_log.ran([]) == set()


def test_pass_log_levels_are_one_for_times_and_three_for_changes():
    """Times come from a level-1 log, changes from a level-3 one (the module's docstring)."""
    from mlirhlo_driver.xla import pass_log

    assert (pass_log.TIMES_LEVEL, pass_log.CHANGES_LEVEL) == (1, 3)
    assert pass_log.log_env(pass_log.CHANGES_LEVEL)["TF_CPP_VMODULE"] == "hlo_pass_pipeline=3"


def test_merge_changes_marks_every_run_of_a_pass_that_changed_once():
    """A (pipeline, pass) that changed in any run of the level-3 log is changed in every timed run;
    one that the level-3 log never ran keeps None."""
    from mlirhlo_driver.xla.pass_log import PassCall, merge_changes

    def call(pipeline, name, changed, i):
        return PassCall("m", pipeline, name, 10 + i, changed, False, False, i)

    timed = [call("p", "a", None, 0), call("p", "a", None, 1), call("q", "a", None, 2), call("p", "b", None, 3)]
    changes = [call("p", "a", False, 0), call("p", "a", True, 1), call("q", "a", False, 2)]
    assert [(c.pipeline, c.name, c.us, c.changed, c.index) for c in merge_changes(timed, changes)] == [
        ("p", "a", 10, True, 0), ("p", "a", 11, True, 1), ("q", "a", 12, False, 2), ("p", "b", 13, None, 3)]


def test_pass_table_text_and_json_exactly():
    """The text table's exact layout (widths, percent, yes/no/?) and the JSON form of the same rows."""
    from mlirhlo_driver.xla.pass_log import PassCall, PassRow, as_json, format_rows

    table = [PassRow("algsimp", "simplification", 2, 1500, True), PassRow("dce", "p", 1, 500, None),
             PassRow("cse", "p", 1, 0, False)]
    assert format_rows(table, "cuda (h100_sxm)") == (
        "// XLA HLO passes (cuda (h100_sxm)): 4 runs of 3 passes, 2.000 ms in passes\n"
        "  total ms       %  calls  changed  pass (pipeline)\n"
        "     1.500   75.0%      2  yes      algsimp (simplification)\n"
        "     0.500   25.0%      1  ?        dce (p)\n"
        "     0.000    0.0%      1  no       cse (p)\n")
    calls = [PassCall("m", "p", "dce", 5, False, False, False, 0),
             PassCall("m", "p", "inner", 50, True, True, False, 1),
             PassCall("m", "p", "cse", 7, True, False, False, 2),
             PassCall("m", "p", "dce", 6, True, False, False, 3),
             PassCall("m", "p", "gone", 9, False, False, True, 4)]
    assert as_json(calls, "cpu") == {"target": "cpu", "total_us": 18, "passes": [
        {"pass": "dce", "pipeline": "p", "calls": 2, "total_us": 11, "changed": True},
        {"pass": "cse", "pipeline": "p", "calls": 1, "total_us": 7, "changed": True}]}
