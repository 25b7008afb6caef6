"""opt over many modules: --jobs workers, failures as rows, --fail-fast, streaming writes."""

from __future__ import annotations

import pytest
from conftest import DATA, assert_one_line_error

GOOD = """module @{name} {{
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {{
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }}
}}
"""
CRASHER = "import ctypes\n\ndef boom(x):\n    ctypes.string_at(0)  # SIGSEGV\n    return x\n"


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


def _rows(err: str) -> dict[str, str]:
    """module -> status from the closing summary."""
    lines = err[err.index("opt: "):].splitlines()[1:]
    return {ln.split()[0]: ln.split()[1] for ln in lines if ln.strip()}


def test_a_crash_and_a_bad_module_are_rows_and_the_others_are_written(cli, batch_dir):
    out = batch_dir / "out"
    result = cli("opt", "m1.mlir", "bad.mlir", "crasher:boom", "m2.mlir", "--args", "f32[8]",
                 "--dump-dir", out, "--jobs", "2", "--no-cache")
    assert result.code == 2, result.err  # one module is bad input: exit 2, as `run` does
    assert "opt: 2/4 modules done, 2 failed" in result.err
    assert _rows(result.err) == {"bad": "INVALID", "boom": "CRASHED"}
    assert "bad.mlir:1:17: " in result.err
    assert "SIGSEGV" in result.err
    assert sorted(p.name for p in out.iterdir()) == ["m1.stablehlo.mlir", "m2.stablehlo.mlir"]
    assert "stablehlo.add" in (out / "m2.stablehlo.mlir").read_text()
    assert "Traceback" not in result.err


def test_in_process_batch_reports_the_bad_module_and_writes_the_rest(cli, batch_dir):
    out = batch_dir / "out"
    result = cli("opt", "m1.mlir", "bad.mlir", "m2.mlir", "--dump-dir", out, "--no-cache")
    assert result.code == 2, result.err  # bad input among several modules: 2, as `run` exits
    assert _rows(result.err) == {"bad": "INVALID"}
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


def loaded_modules(context, task):
    """A pool task (run in a worker): which modules the worker has imported."""
    import sys

    return sorted(m for m in sys.modules if m.startswith(("mlirhlo_driver", "typer", "click", "rich", "jax")))


def test_pool_workers_start_without_the_cli(monkeypatch):
    from pathlib import Path

    from mlirhlo_driver._native import pool

    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    results = dict(pool.imap("test_batch:loaded_modules", None, ["a", "b"], jobs=1))
    assert results[0] == results[1]  # one worker, reused
    assert "mlirhlo_driver" in results[0]
    # Only what the task function needs: no CLI (typer, click, rich), no jax before a task asks.
    assert not [m for m in results[0] if m.startswith(("mlirhlo_driver.cli.mlirhlo", "typer", "click", "rich", "jax"))]


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
