"""batch/opt.py, opt over many modules: --jobs workers, failures as rows, --fail-fast,
streaming writes, deferred stages finished in groups.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CRASHER, DATA, GOOD, assert_mentions, assert_one_line_error, summary_rows


@pytest.fixture
def batch_dir(tmp_path, monkeypatch):
    """m1, bad (a parse error at 1:17), m2; and crasher:boom, a JAX function that segfaults."""
    (tmp_path / "m1.mlir").write_text(GOOD.format(name="m1"))
    (tmp_path / "bad.mlir").write_text("func.func @main( {\n")
    (tmp_path / "m2.mlir").write_text(GOOD.format(name="m2"))
    (tmp_path / "crasher.py").write_text(CRASHER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return tmp_path


# ------------------------------------------------ rows, summary, writing (unit level)

def _row(i, name, status="ok", message=""):
    from mlirhlo_driver.batch.opt import OptResult

    return OptResult(i, name, f"{name}.mlir", status=status, message=message)


def _fake_batch(monkeypatch, outcomes):
    """run_batch over fake modules: outcomes[i] is ('held', size), ('plain', None) or
    ('bad', None). Returns (job, tasks, finish_all sizes)."""
    from mlirhlo_driver.batch import opt as batch

    calls = []

    class Later(batch.Deferred):
        def __init__(self, i, size):
            self.i, self._size = i, size

        @property
        def size(self):
            return self._size

        @classmethod
        def finish_all(cls, items):
            calls.append(len(items))
            return [f"done {item.i}\n" for item in items]

    def process(job, task, progress=None, also_later=False):
        kind, size = outcomes[task.index]
        r = batch.OptResult(task.index, task.name, task.source)
        if kind == "held":
            r.parts = [(task.name, "stablehlo", Later(task.index, size))]
        elif kind == "plain":
            r.parts = [(task.name, "stablehlo", f"plain {task.index}\n")]
        else:
            r.status, r.message, r.stderr = "invalid", f"{task.name} is bad", f"error: {task.name} is bad\n"
        return r

    monkeypatch.setattr(batch, "process", process)
    job = batch.OptJob(root=None, stage_names=("stablehlo",), targets=(), platform=None, instrumentation=None)
    tasks = [batch.OptTask(i, f"m{i}.mlir", f"m{i}") for i in range(len(outcomes))]
    return job, tasks, calls


def _delivered(job, tasks, **kw):
    from mlirhlo_driver.batch import opt as batch

    got = []
    rows = batch.run_batch(job, tasks, on_result=lambda r: got.append((r.index, r.status,
                                                                        [d for _, _, d in r.parts])), **kw)
    return got, rows


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


@pytest.mark.slow
def test_a_crash_and_a_bad_module_are_rows_and_the_others_are_written(cli, batch_dir):
    out = batch_dir / "out"
    result = cli("opt", "m1.mlir", "bad.mlir", "crasher:boom", "m2.mlir", "--args", "f32[8]",
                 "--dump-dir", out, "--jobs", "2", "--no-cache")
    assert result.code == 2, result.err  # one module is bad input: exit 2, as `run` does
    assert_mentions(result.err, "opt: 2/4 ", "2 failed")
    assert summary_rows(result.err) == {"bad": "INVALID", "boom": "CRASHED"}
    assert "bad.mlir:1:17: " in result.err
    assert "SIGSEGV" in result.err
    assert sorted(p.name for p in out.iterdir()) == ["m1.stablehlo.mlir", "m2.stablehlo.mlir"]
    assert "stablehlo.add" in (out / "m2.stablehlo.mlir").read_text()
    assert "Traceback" not in result.err


def test_in_process_batch_reports_the_bad_module_and_writes_the_rest(cli, batch_dir):
    out = batch_dir / "out"
    result = cli("opt", "m1.mlir", "bad.mlir", "m2.mlir", "--dump-dir", out, "--no-cache")
    assert result.code == 2, result.err  # bad input among several modules: 2, as `run` exits
    assert summary_rows(result.err) == {"bad": "INVALID"}
    assert sorted(p.name for p in out.iterdir()) == ["m1.stablehlo.mlir", "m2.stablehlo.mlir"]


@pytest.mark.parametrize("jobs", ["0", "1"])
def test_fail_fast_stops_at_the_first_failure(cli, batch_dir, jobs):
    out = batch_dir / "out"
    result = cli("opt", "m1.mlir", "bad.mlir", "m2.mlir", "--dump-dir", out, "--fail-fast",
                 "--jobs", jobs, "--no-cache")
    assert_one_line_error(result, contains="bad.mlir:1:17: ")
    assert sorted(p.name for p in out.iterdir()) == ["m1.stablehlo.mlir"]  # m2 never ran


@pytest.mark.parametrize("jobs", ["0", "1"])
def test_a_single_bad_module_is_one_error_line(cli, batch_dir, jobs):
    result = cli("opt", "bad.mlir", "--dump-dir", batch_dir / "out", "--jobs", jobs, "--no-cache")
    assert_one_line_error(result, contains="bad.mlir:1:17: ")
    assert not (batch_dir / "out").exists()


def test_workers_print_in_task_order(cli, batch_dir):
    for i in range(3, 6):
        (batch_dir / f"m{i}.mlir").write_text(GOOD.format(name=f"m{i}"))
    files = [f"m{i}.mlir" for i in range(1, 6)]
    local = cli("opt", *files, "--no-cache")
    pooled = cli("opt", *files, "--jobs", "2", "--no-cache")
    assert local.code == pooled.code == 0, pooled.err
    assert pooled.out == local.out
    assert [ln for ln in local.out.splitlines() if ln.startswith("module @")] == \
        [f"module @m{i} {{" for i in range(1, 6)]


def test_each_module_is_written_as_it_finishes(cli, batch_dir):
    # A pass in the worker fails on the second module unless the first one's file
    # is on disk already: outputs are not held until the end.
    out = batch_dir / "out"
    first = out / "m1.stablehlo.mlir"
    (batch_dir / "probe.py").write_text(f"""
import os
import mlirhlo_driver

@mlirhlo_driver.register_pass("probe-first-written", anchor="builtin.module",
                              description="fails on @m2 unless m1's output exists")
def probe(module_op):
    if "module @m2" in str(module_op) and not os.path.exists({str(first)!r}):
        raise RuntimeError("m1 not written yet")
""")
    result = cli("opt", "m1.mlir", "m2.mlir", "--load-pass-plugin", "probe.py",
                 "--passes", "probe-first-written", "--dump-dir", out, "--jobs", "1", "--no-cache")
    assert result.code == 0, result.err
    assert (out / "m2.stablehlo.mlir").exists()


def test_workers_run_the_plugin_bytes_the_command_loaded_and_nothing_outlives_it(batch_dir):
    """run_opt with a pass set: its --jobs workers get the set with the pipeline and run the plugin's
    bytes as this process read them (the file is gone by then); after the batch, no pipeline of
    the process knows the plugin's pass."""
    import mlirhlo_driver as mh
    from mlirhlo_driver import targets
    from mlirhlo_driver.batch import opt as batch

    plugin = batch_dir / "tagger.py"
    plugin.write_text("""
import mlirhlo_driver
from jaxlib.mlir import ir


@mlirhlo_driver.register_pass("tag-in-worker", anchor="builtin.module")
def tag(module_op):
    with module_op.context:
        module_op.attributes["x.tag"] = ir.StringAttr.get("as-loaded")
""")
    loaded = mh.PassSet.default().with_plugins(plugin)
    plugin.unlink()
    out = batch_dir / "out"
    options = batch.OptOptions(inputs=["m1.mlir", "m2.mlir"], passes="tag-in-worker", dump_dir=str(out), jobs=1,
                               no_cache=True)
    rows = batch.run_opt(options, targets.resolve(None), python_passes=loaded)
    assert [r.status for r in rows] == ["ok", "ok"], [r.message for r in rows]
    assert all('x.tag = "as-loaded"' in (out / f"{m}.stablehlo.mlir").read_text() for m in ("m1", "m2"))
    with pytest.raises(mh.PipelineError):
        mh.load(str(batch_dir / "m1.mlir")).optimize("tag-in-worker")


def test_exit_code_follows_run_bad_input_first():
    """2 when any module is bad input (as `run` exits), 1 for other failures, 0 when all are done."""
    from mlirhlo_driver.batch.opt import OptResult, exit_code

    def rows(*statuses):
        return [OptResult(i, f"m{i}", f"m{i}.mlir", status=s) for i, s in enumerate(statuses)]

    assert exit_code(rows("ok", "ok")) == 0
    assert exit_code(rows("ok", "crashed", "failed", "timeout")) == 1
    assert exit_code(rows("crashed", "invalid", "ok")) == 2


def test_cuda_batch_in_workers_compiles_each_module(cli, batch_dir):
    """The GPU spec travels to the workers (its proto message cannot be pickled)."""
    out = batch_dir / "out"
    result = cli("opt", "m1.mlir", "m2.mlir", "--platform", "cuda", "--gpu-spec", "a100_sxm_80",
                 "--stage", "ptx", "--dump-dir", out, "--jobs", "1", "--no-cache")
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    assert sorted(p.name for p in out.iterdir()) == ["m1.ptx", "m2.ptx"]
    assert ".target sm_80" in (out / "m2.ptx").read_text()


def test_timing_tables_get_a_title_only_among_several_modules(cli, tmp_path):
    one = cli("opt", DATA / "chlo_special.mlir", "--passes", "cse", "--timing", "--no-cache")
    assert one.code == 0 and "// timing:" not in one.err and "Total" in one.err
    two = cli("opt", DATA / "chlo_special.mlir", DATA / "erf_inv.mlir", "--passes", "cse", "--timing",
              "--no-cache", "--dump-dir", tmp_path)
    assert two.code == 0
    assert [line for line in two.err.splitlines() if line.startswith("// timing:")] == [
        "// timing: chlo_special", "// timing: erf_inv"]


@pytest.mark.parametrize("platform", [None, "cpu", "cuda"])
@pytest.mark.parametrize("asked", ["nothing", "timing", "after_change", "before", "after"])
def test_xla_instrumentation_exactly_when_a_platform_and_a_view_are_asked(platform, asked):
    """XLA's pass views (--timing, --print-ir-after-change, --print-ir-before/after NAME)
    instrument the compile only with a platform, and each one alone is enough."""
    from mlirhlo_driver.batch import opt as batch

    o = batch.OptOptions(timing=asked == "timing", print_ir_after_change=asked == "after_change")
    before = ("simplify-fp-conversions",) if asked == "before" else ()
    after = ("algsimp",) if asked == "after" else ()
    got = batch._xla_instrumentation(o, platform, before, after)
    assert (got is not None) == (platform is not None and asked != "nothing")
    if got is not None:
        assert (got.timing, got.after_change, tuple(got.before), tuple(got.after)) == \
            (o.timing, o.print_ir_after_change, before, after)


@pytest.mark.golden
def test_summary_is_a_count_then_one_aligned_row_per_failure():
    """Golden: 'opt: D/N modules done, F failed', then each failed module: name padded to the longest,
    status upper-cased in 8 columns, its message."""
    from mlirhlo_driver.batch.opt import summary

    rows = [_row(0, "a"), _row(1, "long_name", "invalid", "bad.mlir:1:2: parse error"),
            _row(2, "b", "crashed", "SIGSEGV"), _row(3, "c"), _row(4, "cc", "timeout", "past 5 s")]
    assert summary(rows) == ("opt: 2/5 modules done, 3 failed\n"
                             "  long_name  INVALID  bad.mlir:1:2: parse error\n"
                             "  b          CRASHED  SIGSEGV\n"
                             "  cc         TIMEOUT  past 5 s\n")
    assert summary([_row(0, "a"), _row(1, "b")]) == "opt: 2/2 modules done, 0 failed\n"
    assert summary([]) == "opt: 0/0 modules done, 0 failed\n"


def test_a_row_s_own_exit_code_and_ok():
    """A row is ok only with status 'ok'; alone, bad input exits 2 and any other failure 1."""
    assert [(_row(0, "m", s).ok, _row(0, "m", s).exit_code) for s in
            ("ok", "invalid", "failed", "crashed", "timeout")] == \
        [(True, 1), (False, 2), (False, 1), (False, 1), (False, 1)]


def test_as_text_ends_with_one_newline():
    from mlirhlo_driver.outputs import as_text

    assert [as_text(d) for d in ("a", "a\n", b"b", b"b\n", "", "x\n\n")] == ["a\n", "a\n", "b\n", "b\n", "\n", "x\n\n"]


def test_the_size_a_held_result_keeps():
    """Text and bytes by length, a multi-file output by its files, a deferred stage by its size; both parts and files."""
    from mlirhlo_driver.batch import opt as batch

    class Held(batch.Deferred):
        size = 1000

        @classmethod
        def finish_all(cls, items):
            return ["" for _ in items]

    r = _row(0, "m")
    r.parts = [("m", "ptx", "abc"), ("m", "cubin", {"k1": b"12", "k2": b"3456"}), ("m", "sass", Held()),
               ("m", "x", None)]
    r.files = [("out/m.ll", b"\x00" * 7), ("out/m.html", "12345")]
    assert batch._size(r) == 3 + 6 + 1000 + 7 + 5
    assert batch.HOLD_BYTES == 256 * 1024 * 1024


def test_the_writer_joins_stdout_in_task_order(capfd, tmp_path):
    """Results arriving out of order: stdout follows the task order, joined by '// -----'
    lines; each result's stderr and files are written at once."""
    from mlirhlo_driver.batch.opt import Writer

    w = Writer(None)
    second, first, third = _row(1, "b"), _row(0, "a"), _row(2, "c")
    second.parts, second.stderr = [("b", "stablehlo", "B")], "note: b\n"
    second.files = [(str(tmp_path / "b.txt"), "file b")]
    w(second)
    assert capfd.readouterr() == ("", "note: b\n")
    assert (tmp_path / "b.txt").read_text() == "file b"
    first.parts = [("a", "stablehlo", "A\n"), ("a", "hlo", "A2")]
    w(first)
    third.parts = [("c", "stablehlo", "C")]
    w(third)
    w.finish()  # no -o: nothing more
    assert capfd.readouterr() == ("A\n// -----\nA2\n// -----\nB\n// -----\nC\n", "")


def test_the_writer_sends_one_binary_output_to_stdout_as_it_is(capfdbinary):
    """A binary output on stdout is its bytes: no separator, no newline added."""
    from mlirhlo_driver.batch.opt import Writer

    w = Writer(None)
    r = _row(0, "a")
    r.parts = [("a", "stablehlo-bytecode", b"ML\xefR\x00")]
    w(r)
    w.finish()
    assert capfdbinary.readouterr() == (b"ML\xefR\x00", b"")


def test_the_writer_s_one_file(tmp_path, capfd):
    """-o: nothing on stdout; one output is written as it is (bytes too), several joined as text."""
    from mlirhlo_driver.batch.opt import Writer

    one = tmp_path / "one.bin"
    w = Writer(str(one))
    r = _row(0, "a")
    r.parts = [("a", "stablehlo-bytecode", b"ML\xefR\x00")]
    w(r)
    w.finish()
    assert one.read_bytes() == b"ML\xefR\x00"
    several = tmp_path / "several.mlir"
    w = Writer(str(several))
    for i, text in enumerate(["A", "B\n", "C"]):
        r = _row(i, f"m{i}")
        r.parts = [(f"m{i}", "stablehlo", text)]
        w(r)
    w.finish()
    assert several.read_text() == "A\n// -----\nB\n// -----\nC\n"
    empty = tmp_path / "empty.mlir"
    Writer(str(empty)).finish()
    assert not empty.exists()
    assert capfd.readouterr() == ("", "")


def test_deferred_modules_are_finished_in_groups_of_16(monkeypatch):
    """40 deferred modules: finished 16, 16, then the last 8; each delivered with its own
    output, in order; a plain module between them is delivered at once."""
    outcomes = [("held", 0)] * 40
    outcomes[20] = ("plain", None)
    job, tasks, calls = _fake_batch(monkeypatch, outcomes)
    got, rows = _delivered(job, tasks)
    assert calls == [16, 16, 7]
    order = list(range(16)) + [20] + list(range(16, 20)) + list(range(21, 33)) + list(range(33, 40))
    assert [i for i, _, _ in got] == order
    assert all(data == [f"{'plain' if i == 20 else 'done'} {i}\n"] for i, _, data in got)
    assert [r.index for r in rows] == list(range(40))
    assert all(r.parts == [] and r.files == [] and r.exception is None for r in rows)


def test_held_modules_are_finished_early_at_the_byte_bound(monkeypatch):
    """Held modules are finished once they keep HOLD_BYTES or more (the count starts anew)."""
    from mlirhlo_driver.batch import opt as batch

    monkeypatch.setattr(batch, "HOLD_BYTES", 100)
    job, tasks, calls = _fake_batch(monkeypatch, [("held", s) for s in (60, 40, 60, 39, 1, 99)])
    got, _ = _delivered(job, tasks)
    assert calls == [2, 3, 1]
    assert [i for i, _, _ in got] == list(range(6))


def test_in_a_batch_a_failure_is_a_row(monkeypatch):
    """Two modules or more, no fail_fast: a bad module is a row among the others."""
    job, tasks, calls = _fake_batch(monkeypatch, [("held", 0), ("bad", None)])
    got, rows = _delivered(job, tasks)
    assert [(i, s) for i, s, _ in got] == [(1, "invalid"), (0, "ok")]
    assert [(r.index, r.status) for r in rows] == [(0, "ok"), (1, "invalid")]


@pytest.mark.parametrize("outcomes, fail_fast", [([("bad", None)], False),
                                                 ([("held", 0), ("bad", None), ("plain", None)], True)],
                         ids=["alone", "fail-fast"])
def test_the_first_failure_stops_after_the_modules_before_it(monkeypatch, capsys, outcomes, fail_fast):
    """One module, or fail_fast: the modules before the failure are finished and delivered,
    its error text printed, and BatchStopped carries its row; nothing after it runs."""
    from mlirhlo_driver.batch import opt as batch

    job, tasks, calls = _fake_batch(monkeypatch, outcomes)
    got = []
    with pytest.raises(batch.BatchStopped) as stopped:
        batch.run_batch(job, tasks, fail_fast=fail_fast, on_result=lambda r: got.append(r.index))
    bad = len(outcomes) - 1 if not fail_fast else 1
    assert stopped.value.result.index == bad and str(stopped.value) == f"m{bad} is bad"
    assert got == list(range(bad))
    assert capsys.readouterr().err == f"error: m{bad} is bad\n"


@pytest.mark.golden
def test_stage_list_checks_each_named_stage():
    """Golden (the line of 'all' without a dump directory). A comma list (blanks dropped) is checked name by name; 'all' needs a dump directory
    and is every stage of the platform."""
    from mlirhlo_driver import registry
    from mlirhlo_driver.batch.opt import stage_list
    from mlirhlo_driver.errors import StageError

    assert stage_list(" stablehlo, ,hlo ,", "cpu", None) == ["stablehlo", "hlo"]
    assert stage_list("all", "cpu", "d") == [s.name for s in registry.all_for("cpu")]
    with pytest.raises(StageError) as e:
        stage_list("all", "cpu", None)
    assert e.value.format() == "error: --stage all needs --dump-dir"  # the one place this line is pinned
    with pytest.raises(StageError):
        stage_list("stablehlo,hlo", None, None)  # hlo needs a platform


def test_print_ir_names_split_between_mlir_and_xla():
    """Without a platform every name is MLIR's; with one, names the pipeline does not run
    (but 'all') are XLA's passes."""
    from types import SimpleNamespace

    from mlirhlo_driver.batch.opt import _split_print_names

    root = SimpleNamespace(passes=lambda: [SimpleNamespace(name="cse"), SimpleNamespace(name="canonicalize")])
    names = ("cse", "algsimp", "all", "canonicalize")
    assert _split_print_names(names, root, None) == (names, ())
    assert _split_print_names(names, root, "cpu") == (("cse", "all", "canonicalize"), ("algsimp",))
    assert _split_print_names(names, None, "cuda") == (("all",), ("cse", "algsimp", "canonicalize"))


@pytest.mark.golden
def test_error_text_adds_diagnostics_and_the_reproducer(tmp_path):
    """Golden: a plain error is its one line; a pass failure adds MLIR's diagnostics and how to reproduce."""
    from mlirhlo_driver.batch.opt import error_text
    from mlirhlo_driver.errors import DriverError, PassFailure

    assert error_text(DriverError("plain")) == "error: plain\n"
    assert error_text(PassFailure("pass failed")) == "error: pass failed\n"
    repro = tmp_path / "r.mlir"
    repro.write_text("// header\n// mlirhlo opt x.mlir --passes cse\nmodule {}\n")
    e = PassFailure("pass failed", diagnostics="x.mlir:1:1: error: boom", reproducer=str(repro))
    assert error_text(e) == (f"error: pass failed\nx.mlir:1:1: error: boom\nnote: reproducer written to {repro}\n"
                             "note: reproduce with: mlirhlo opt x.mlir --passes cse\n")


@pytest.mark.parametrize("error, status", [("InputError", "invalid"), ("PipelineError", "invalid"),
                                           ("CompileError", "failed"), ("PassFailure", "failed")])
def test_a_failed_module_s_row(tmp_path, error, status):
    """fail(): bad input (a file, a pipeline) is 'invalid', any other error 'failed'; the
    message is the error's line naming the module's file, with the reproducer; only the
    IR dumps under --ir-dump-dir are still written."""
    from mlirhlo_driver import errors
    from mlirhlo_driver.batch import opt as batch

    job = batch.OptJob(root=None, stage_names=("stablehlo",), targets=(), platform=None, instrumentation=None,
                       ir_dump_dir="dumps")
    r = _row(0, "m")
    r.parts = [("m", "stablehlo", "text")]
    r.files = [("dumps/m/1-after-cse.mlir", "ir"), ("out/m.stablehlo.mlir", "text")]
    kw = {"reproducer": str(tmp_path / "r.mlir")} if error == "PassFailure" else {}
    if kw:
        (tmp_path / "r.mlir").write_text("// header\n// mlirhlo opt m.mlir\n")
    e = getattr(errors, error)("it broke", **kw)
    batch.fail(job, r, e)
    suffix = f" (reproducer: {tmp_path / 'r.mlir'})" if kw else ""
    assert (r.status, r.message, r.exception) == (status, "m.mlir: it broke" + suffix, e)
    assert r.error_text.startswith("error: m.mlir: it broke\n")
    assert (r.parts, r.files) == ([], [("dumps/m/1-after-cse.mlir", "ir")])


def test_a_failed_module_s_row_keeps_its_own_file_and_no_files_without_an_ir_dump_dir():
    """An error that names its file keeps it; stdin is not named; without --ir-dump-dir nothing is kept."""
    from mlirhlo_driver.batch import opt as batch
    from mlirhlo_driver.errors import CompileError

    job = batch.OptJob(root=None, stage_names=("stablehlo",), targets=(), platform=None, instrumentation=None)
    r = _row(0, "m")
    r.files = [("dumps/m/1-after-cse.mlir", "ir")]
    batch.fail(job, r, CompileError("it broke", file="other.mlir"))
    assert (r.message, r.files) == ("other.mlir: it broke", [])
    stdin = batch.OptResult(0, "stdin", "-")
    batch.fail(job, stdin, CompileError("it broke"))
    assert stdin.message == "it broke"


def test_deferred_stages_finish_in_groups_and_fail_their_own_module():
    from mlirhlo_driver.batch import opt as batch
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.stages import base as stages

    class Upper(stages.Deferred):
        group_size = 2
        calls: list[int] = []

        def __init__(self, text):
            self.text = text

        @classmethod
        def finish_all(cls, items):
            cls.calls.append(len(items))
            return [StageError("no upper case") if i.text == "bad" else i.text.upper() for i in items]

    job = batch.OptJob(root=None, stage_names=("stablehlo",), targets=(), platform=None, instrumentation=None)
    results = [batch.OptResult(i, f"m{i}", f"m{i}.mlir", parts=[(f"m{i}", "stablehlo", Upper(t))])
               for i, t in enumerate(["a", "bad", "c"])]
    assert all(batch.pending(r) for r in results)
    batch.finish_pending(job, results)
    assert Upper.calls == [2, 1]
    assert [r.status for r in results] == ["ok", "failed", "ok"]
    assert results[0].parts == [("m0", "stablehlo", "A")] and results[2].parts == [("m2", "stablehlo", "C")]
    assert results[1].message == "m1.mlir: no upper case" and results[1].parts == []
    assert Upper("x").finish() == "X"
    with pytest.raises(StageError):
        Upper("bad").finish()


def test_a_batch_finishes_held_modules_early_past_its_memory_bound(monkeypatch):
    """Held modules (their other stages' outputs, the PTX they wait on) are finished as
    soon as they pass batch.HOLD_BYTES, not only at group_size."""
    from mlirhlo_driver.batch import opt as batch
    from mlirhlo_driver.stages import base as stages

    class Later(stages.Deferred):
        calls: list[int] = []

        def __init__(self, text):
            self.text = text

        @property
        def size(self):
            return len(self.text)

        @classmethod
        def finish_all(cls, items):
            cls.calls.append(len(items))
            return [i.text for i in items]

    job = batch.OptJob(root=None, stage_names=("stablehlo",), targets=(), platform=None, instrumentation=None)
    made = [batch.OptResult(i, f"m{i}", f"m{i}.mlir", parts=[(f"m{i}", "stablehlo", "x" * 4),
                                                              (f"m{i}", "stablehlo", Later("y" * 6))])
            for i in range(5)]
    monkeypatch.setattr(batch, "_results", lambda *a, **k: ((r.index, r) for r in made))
    monkeypatch.setattr(batch, "HOLD_BYTES", 25)  # 10 bytes a module: the third one passes it
    written = []
    rows = batch.run_batch(job, [None] * 5, on_result=lambda r: written.append((r.index, list(r.parts))))
    assert Later.calls == [3, 2]
    assert [i for i, _ in written] == [0, 1, 2, 3, 4] and [r.status for r in rows] == ["ok"] * 5
    assert written[4][1] == [("m4", "stablehlo", "xxxx"), ("m4", "stablehlo", "yyyyyy")]


def test_html_stage_of_several_modules_goes_to_stdout(cli, mlir_file, tmp_path):
    # html is a text stage: several modules' pages may share stdout (binary stages may not).
    other = tmp_path / "m2.mlir"
    other.write_text(mlir_file.read_text())
    r = cli("opt", mlir_file, other, "--platform", "cpu", "--stage", "html")
    assert r.code == 0, r.err
    # (the page's inlined Graphviz holds an "<HTML>" of its own)
    assert r.out.count("<!DOCTYPE html>") == 2


def test_no_cache_makes_no_digest_and_the_cache_makes_them(cli, tmp_path, monkeypatch):
    """--no-cache: nothing is looked up, so neither the input's digest nor the pipeline's
    (its files, the named pipelines, the plugins) is made; with the cache, both are."""
    from mlirhlo_driver.core import program

    made: list[str] = []
    for name in ("file_identity", "pipeline_identity"):
        real = getattr(program, name)
        monkeypatch.setattr(program, name, lambda *a, _n=name, _r=real, **k: made.append(_n) or _r(*a, **k))
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(tmp_path / "cache"))
    src = DATA / "double.mlir"
    assert cli("opt", src, "--passes", "cse", "--no-cache", "-o", tmp_path / "a.mlir").code == 0
    assert made == []
    assert cli("opt", src, "--passes", "cse", "-o", tmp_path / "b.mlir").code == 0
    assert sorted(set(made)) == ["file_identity", "pipeline_identity"]
    assert (tmp_path / "a.mlir").read_text() == (tmp_path / "b.mlir").read_text()
