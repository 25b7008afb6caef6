"""xla/instrument.py: XLA's per-pass timing and IR (--timing, --print-ir-*, --ir-dump-dir
with a platform), asked of XLA only when a view needs it.
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from tests.conftest import PLAIN, assert_one_line_error, filecheck

# ------------------------------------------------------------------ instrument.compile, over a fake XLA

def _fake_xla(monkeypatch, dumps=None, timed=(), changes=(), logged=()):
    """backend's compiles replaced by ones that record how they were called. Each gives
    per-pass dumps (name -> text: ``after.before``) only when asked for them by a dump regex;
    a logged compile gives ``timed`` at level 1 and ``changes`` at level 3, and ``logged`` at
    level 1 with only HLO text dumps (the compile that names what ran)."""
    from types import SimpleNamespace

    from mlirhlo_driver.xla import backend

    seen = []
    dumps = dumps if dumps is not None else {}

    def art(kind, spec, level, dumps_asked):
        rx = spec.pass_dump_re if spec.pass_dump_re is not None else dict(spec.target.xla_flags).get(
            "xla_dump_hlo_pass_re")
        seen.append((kind, level, rx, dumps_asked))
        pass_calls = None
        if level == 1:
            pass_calls = list(logged if dumps_asked == (backend.HLO_TEXT,) else timed)
        elif level == 3:
            pass_calls = list(changes)
        files = {f"dump{i}:{k}": v for i, (k, v) in enumerate(dumps.items())} if rx else {}
        return SimpleNamespace(art=SimpleNamespace(files=files, pass_calls=pass_calls, rx=rx, kind=kind, phases=None,
                                                   compile_span=None))

    def pass_dumps(a):
        out = []
        for key in a.files:
            i, name = key.split(":")
            after, before = name.split(".")
            out.append(backend.PassDump(int(i[4:]), "pipe", after, before, key))
        return out

    monkeypatch.setattr(backend, "compile",
                        lambda module, spec, name: art("logged" if spec.pass_log else "module", spec,
                                                       spec.pass_log or None, spec.dumps))
    monkeypatch.setattr(backend, "pass_dumps", pass_dumps)
    return seen


# dumps "after X, before Y" in pipeline order; byte 0xff is no UTF-8
_DUMPS = {"pipeline-start.algsimp": b"HloModule a\n", "algsimp.dce": b"HloModule b\xff\n",
          "dce.pipeline-end": b"HloModule c\n"}


def _inst_call(inst, dumps=None):
    from mlirhlo_driver.xla import instrument
    from mlirhlo_driver.xla.backend import ALL_DUMPS, CompileSpec
    from mlirhlo_driver.xla.platforms import CpuTarget

    spec = CompileSpec(CpuTarget(xla_flags=(("xla_dump_hlo_pass_re", "old"), ("xla_zz", True))),
                       dumps=ALL_DUMPS if dumps is None else dumps)
    return instrument.compile("MODULE", "m", spec, inst)


def _printed(out) -> list[tuple[str, str, str, str]]:
    return [(p.when, p.pass_name, p.pipeline, p.text) for p in out.printed]


AFTER_CHANGE = [("after", "algsimp", "pipe", "HloModule b\ufffd\n"), ("after", "dce", "pipe", "HloModule c\n")]

NAMED = [("before", "dce", "pipe", "HloModule b\ufffd\n"), ("after", "algsimp", "pipe", "HloModule b\ufffd\n")]

NAMES_RE = "^(?:algsimp|dce)$"


# ------------------------------------------------------------------ --timing and --print-ir-*

@pytest.mark.slow
def test_timing_lists_xla_passes_with_time_and_change(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--timing", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule plain")  # the stage is still written
    lines = r.err.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("// XLA HLO passes (cpu): "))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("// compile phases: plain on cpu: "))
    rows = [ln for ln in lines[head + 2:end] if ln.strip()]
    times = [float(ln.split()[0]) for ln in rows]
    assert times == sorted(times, reverse=True) and times[0] > 0
    algsimp = [ln for ln in rows if re.search(r"\balgsimp \(simplification\)$", ln)]
    assert algsimp and re.match(r"^\s+\d+\.\d{3}\s+\d+\.\d%\s+\d+\s+yes\s+algsimp", algsimp[0]), rows
    assert any(re.search(r"\s+no\s+\S", ln) for ln in rows)  # passes that changed nothing are listed too


def test_timing_json_has_mlir_and_xla_tables(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--timing", "--timing-format", "json",
            "--passes", "canonicalize", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    doc, end = json.JSONDecoder().raw_decode(r.err)
    assert json.loads(r.err[end:])["module"] == "plain"  # then the compile's phases (xla/test_compile_phases.py)
    assert doc["module"] == "plain"
    assert doc["mlir"] and {"pass", "wall_us", "percent", "depth"} <= set(doc["mlir"][0])
    # MLIR's own figures: whole microseconds, and the percentages it prints (one decimal)
    assert all(isinstance(r["wall_us"], int) and round(r["percent"], 1) == r["percent"] for r in doc["mlir"])
    assert doc["mlir"][-1]["pass"] == "Total" and doc["mlir"][-1]["percent"] == 100.0
    (xla,) = doc["xla"]
    assert xla["target"] == "cpu"
    passes = xla["passes"]
    assert [p["total_us"] for p in passes] == sorted((p["total_us"] for p in passes), reverse=True)
    assert {"pass": "algsimp", "pipeline": "simplification"}.items() <= next(
        p for p in passes if p["pass"] == "algsimp").items()
    assert sum(p["total_us"] for p in passes) == xla["total_us"]


def test_print_ir_after_change_shows_hlo_after_algsimp(cli, files, tmp_path):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-after-change", "--stage", "hlo",
            "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.err, textwrap.dedent("""\
        CHECK: // -----// HLO after algsimp (simplification) //----- //
        CHECK-NEXT: HloModule plain
        CHECK-NOT: divide(
        CHECK: multiply(
        CHECK: tanh(
        """), tmp_path)


def test_print_ir_before_and_after_a_named_pass(cli, files, tmp_path):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-before=algsimp",
            "--print-ir-after=algsimp", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.err, textwrap.dedent("""\
        CHECK: // -----// HLO before algsimp (simplification) //----- //
        CHECK: divide(
        CHECK: // -----// HLO after algsimp (simplification) //----- //
        CHECK-NOT: divide(
        CHECK: multiply(
        CHECK: tanh(
        """), tmp_path)
    # a run that changed nothing is printed too: every run of a named pass is
    assert r.err.count("HLO after algsimp") >= 2


def test_ir_dump_dir_gets_one_file_per_xla_pass(cli, files, tmp_path):
    out = tmp_path / "ir"
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-after-change", "--ir-dump-dir", out,
            "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert "HLO after" not in r.err
    dumps = sorted((out / "plain").iterdir())
    assert dumps and all(re.fullmatch(r"xla-\d{3}-after-[\w.-]+\.hlo", p.name) for p in dumps), dumps
    algsimp = next(p for p in dumps if p.name.endswith("-after-algsimp.hlo"))
    assert algsimp.read_text().startswith("// -----// HLO after algsimp (simplification) //----- //\nHloModule")


def test_an_xla_pass_that_did_not_run_is_one_error(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-after", "algsimpx", "--stage", "hlo",
            "--no-cache")
    # the wording: test_instrument_named_pass_that_printed_nothing_is_an_error_naming_what_ran
    assert_one_line_error(r, at="--print-ir-after", facts=("'algsimpx'", "did not run", "'algsimp'"))


def test_without_a_platform_print_ir_names_stay_mlirs(cli, files):
    r = cli("opt", files / "plain.hlo", "--print-ir-after", "algsimp")
    assert_one_line_error(r, contains="unknown pass 'algsimp'")


def test_mlir_names_in_the_pipeline_stay_mlirs_with_a_platform(cli, files):
    r = cli("opt", files / "plain.hlo", "--passes", "canonicalize", "--platform", "cpu",
            "--print-ir-after", "canonicalize", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert "IR Dump After" in r.err and "HLO after" not in r.err


def test_instrumentation_costs_nothing_unless_asked(monkeypatch, cli, files):
    from mlirhlo_driver.xla import backend

    real = backend.compile

    def no_log(module, spec, name, **kw):
        assert not spec.pass_log, "a logged compile without --timing"
        return real(module, spec, name, **kw)

    monkeypatch.setattr(backend, "compile", no_log)
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert "XLA HLO passes" not in r.err


@pytest.mark.slow
def test_run_timing_gives_each_modules_xla_pass_table(cli, tmp_path):
    path = tmp_path / "plain.hlo"
    path.write_text(PLAIN)
    report = tmp_path / "r.json"
    r = cli("run", path, "--timing", "--json", report)
    assert r.code == 0, r.err
    assert re.search(r"^  // XLA HLO passes \(cpu\): \d+ runs of \d+ passes", r.out, re.M), r.out
    assert re.search(r"^\s+\d+\.\d{3}\s+\d+\.\d%\s+\d+\s+yes\s+algsimp \(simplification\)$", r.out, re.M), r.out
    (row,) = json.loads(report.read_text())
    assert any(p["pass"] == "algsimp" and p["changed"] for p in row["xla_passes"])
    plain = cli("run", path)
    assert "XLA HLO passes" not in plain.out


def test_instrumentation_shows_only_what_it_is_asked(files):
    """XlaInstrumentation's fields default to showing nothing: timing alone logs the passes and
    prints no IR (the API's xla_passes() and run's --timing ask for only that); after_change
    alone prints IR and logs no passes."""
    from mlirhlo_driver import api
    from mlirhlo_driver.xla import backend, instrument

    assert not instrument.XlaInstrumentation().wanted
    from mlirhlo_driver.xla.platforms import CpuTarget

    module = backend.module_for_xla(api.load(str(files / "plain.hlo")).module)
    spec = backend.CompileSpec(CpuTarget(), dumps=backend.ALL_DUMPS)
    timed = instrument.compile(module, "plain", spec, instrument.XlaInstrumentation(timing=True))
    assert timed.calls and timed.printed == []
    changed = instrument.compile(module, "plain", spec, instrument.XlaInstrumentation(after_change=True))
    assert changed.calls is None
    assert "algsimp" in [p.pass_name for p in changed.printed]
    assert {p.when for p in changed.printed} == {"after"}


@pytest.mark.parametrize("when", ["before", "after"])
def test_print_ir_before_or_after_alone_prints_that_named_pass(when, cli, files):
    """--print-ir-before=PASS or --print-ir-after=PASS given alone prints that pass's HLO, only on that side."""
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", f"--print-ir-{when}=algsimp", "--stage", "hlo",
            "--no-cache")
    assert r.code == 0, r.err
    assert f"// -----// HLO {when} algsimp (simplification) //----- //" in r.err
    other = "after" if when == "before" else "before"
    assert f"HLO {other} " not in r.err


def test_instrument_compile_without_timing_dumps_on_the_stages_compile(monkeypatch):
    """No timing: the stages' compile carries the first dump regex (.* for after-change, the
    names' otherwise), one more HLO-text compile the other; no pass log, no logged compile."""
    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.instrument import XlaInstrumentation

    seen = _fake_xla(monkeypatch, _DUMPS)
    out = _inst_call(XlaInstrumentation(after_change=True, before=("dce",), after=("algsimp",)), ("hlo",))
    assert seen == [("module", None, ".*", ("hlo",)), ("module", None, NAMES_RE, (backend.HLO_TEXT,))]
    assert out.art.kind == "module" and out.art.rx == ".*" and out.calls is None
    assert _printed(out) == AFTER_CHANGE + NAMED

    seen.clear()
    out = _inst_call(XlaInstrumentation(before=("dce",), after=("algsimp", "dce", "algsimp")))
    assert seen == [("module", None, NAMES_RE, backend.ALL_DUMPS)]
    assert _printed(out) == NAMED + [("after", "dce", "pipe", "HloModule c\n")]

    seen.clear()
    out = _inst_call(XlaInstrumentation(after_change=True))
    assert seen == [("module", None, ".*", backend.ALL_DUMPS)] and _printed(out) == AFTER_CHANGE

    seen.clear()
    out = _inst_call(XlaInstrumentation())
    assert seen == [("module", None, "old", backend.ALL_DUMPS)]  # the user's own flags, untouched
    assert out.printed == [] and out.calls is None


def test_instrument_compile_with_timing_dumps_on_the_level_3_compile(monkeypatch):
    """Timing: the stages come from a level-1 compile (its times), the first dump regex rides on
    the level-3 one (its changes, merged into the times), any other on an HLO-text compile."""
    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.instrument import XlaInstrumentation
    from mlirhlo_driver.xla.pass_log import PassCall

    timed = [PassCall("m", "pipe", "algsimp", 7, None, False, False, 0),
             PassCall("m", "pipe", "dce", 3, None, False, False, 1)]
    changes = [PassCall("m", "pipe", "algsimp", 70, True, False, False, 0),
               PassCall("m", "pipe", "dce", 30, False, False, False, 1)]
    seen = _fake_xla(monkeypatch, _DUMPS, timed, changes)
    out = _inst_call(XlaInstrumentation(timing=True, after_change=True, before=("dce",), after=("algsimp",)))
    assert seen == [("logged", 1, "old", backend.ALL_DUMPS), ("logged", 3, ".*", (backend.HLO_TEXT,)),
                    ("module", None, NAMES_RE, (backend.HLO_TEXT,))]
    assert out.art.kind == "logged" and out.art.rx == "old"
    assert [(c.name, c.us, c.changed) for c in out.calls] == [("algsimp", 7, True), ("dce", 3, False)]
    assert _printed(out) == AFTER_CHANGE + NAMED

    seen.clear()
    out = _inst_call(XlaInstrumentation(timing=True, after=("algsimp",)), ("hlo",))
    assert seen == [("logged", 1, "old", ("hlo",)), ("logged", 3, "^(?:algsimp)$", (backend.HLO_TEXT,))]
    assert _printed(out) == [NAMED[1]]

    seen.clear()
    out = _inst_call(XlaInstrumentation(timing=True))
    assert seen == [("logged", 1, "old", backend.ALL_DUMPS), ("logged", 3, "old", (backend.HLO_TEXT,))]
    assert out.printed == [] and [c.changed for c in out.calls] == [True, False]


@pytest.mark.golden
def test_instrument_named_pass_that_printed_nothing_is_an_error_naming_what_ran(monkeypatch):
    """Golden (the words of a named pass that did not run). A named pass with no print on its side is an error on its flag; the hint names close passes
    that ran: from the timing compile's log, else from one level-1 compile made for it."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.instrument import XlaInstrumentation
    from mlirhlo_driver.xla.pass_log import PassCall

    logged = [PassCall("m", "pipe", "algsimpy", 1, None, False, False, 0)]
    timed = [PassCall("m", "pipe", "algsimpz", 1, None, False, False, 0)]
    # the compile stopped inside dce: no dump after it
    partial = {k: v for k, v in _DUMPS.items() if k != "dce.pipeline-end"}
    seen = _fake_xla(monkeypatch, partial, timed=timed, logged=logged)
    cases = [
        (XlaInstrumentation(after=("algsimp", "algsimpx")), "--print-ir-after", "algsimpx",
         "did you mean 'algsimpy'?"),
        (XlaInstrumentation(before=("algsimpx",), after=("algsimp",)), "--print-ir-before", "algsimpx",
         "did you mean 'algsimpy'?"),
        # printed before dce, never after it; after the pipeline's start, never before it
        (XlaInstrumentation(before=("dce",), after=("dce",)), "--print-ir-after", "dce",
         "see --list-passes --platform"),
        (XlaInstrumentation(before=("pipeline-start",), after=("pipeline-start",)), "--print-ir-before",
         "pipeline-start", "see --list-passes --platform"),
        (XlaInstrumentation(timing=True, after=("algsimpx",)), "--print-ir-after", "algsimpx",
         "did you mean 'algsimpz'?"),
    ]
    for inst, flag, name, hint in cases:
        seen.clear()
        with pytest.raises(DriverError) as e:
            _inst_call(inst)
        assert (e.value.message, e.value.file, e.value.hint) == (
            f"XLA pass '{name}' did not run on this module", flag, hint), inst
        if not inst.timing:  # the compile that names what ran: level 1, HLO text only, no dump regex
            assert seen[-1] == ("logged", 1, "old", (backend.HLO_TEXT,)), inst
        else:
            assert [s[:2] for s in seen] == [("logged", 1), ("logged", 3)], inst
    seen.clear()
    out = _inst_call(XlaInstrumentation(before=("algsimp", "dce"), after=("algsimp", "pipeline-start")))
    assert len(out.printed) == 4 and [s[0] for s in seen] == ["module"]  # all printed: no logged compile


def test_instrumentation_values_and_printed_headers():
    """Any one flag makes an instrumentation wanted; a printed module's header names its side,
    pass and pipeline like MLIR's IR dumps; the dump regex matches exactly the names given."""
    from mlirhlo_driver.xla import instrument
    from mlirhlo_driver.xla.instrument import PrintedIR, XlaInstrumentation

    assert [XlaInstrumentation(**kw).wanted for kw in (
        {}, {"timing": True}, {"after_change": True}, {"before": ("a",)}, {"after": ("a",)},
        {"timing_format": "json"})] == [False, True, True, True, True, False]
    assert PrintedIR("before", "algsimp", "simplification", "x").header() == \
        "// -----// HLO before algsimp (simplification) //----- //"
    assert instrument._names_re(("b.c", "a", "b.c")) == r"^(?:a|b\.c)$"


def test_printed_hlo_on_stderr_ends_each_module_with_one_newline(monkeypatch, cli, files):
    """HLO printed around XLA's passes goes to stderr one module after another: a module whose
    text lacks its final newline gets one, one that has it gets no second."""
    from mlirhlo_driver.xla import instrument
    from mlirhlo_driver.xla.backend import XlaArtifacts

    def printed(*a, **k):  # the stage below is MLIR's: XLA's artifacts are never read
        return instrument.Instrumented(XlaArtifacts("cpu", "plain", {}), None, [
            instrument.PrintedIR("after", "algsimp", "simplification", "HloModule one"),
            instrument.PrintedIR("after", "dce", "p", "HloModule two\n")])

    monkeypatch.setattr(instrument, "compile", printed)
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--print-ir-after-change", "--stage", "stablehlo",
            "--no-cache")
    assert r.code == 0, r.err
    assert r.out.startswith("module @plain")
    assert r.err == ("// -----// HLO after algsimp (simplification) //----- //\nHloModule one\n"
                     "// -----// HLO after dce (p) //----- //\nHloModule two\n")
