"""``mlirhlo bench-pipeline`` as a user runs it: options, one or two pipelines, Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO, CliResult, assert_one_line_error, readline_within


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


SLOW_PLUGIN = '''
import os
import time

import mlirhlo_driver


@mlirhlo_driver.register_pass("mark-and-wait", anchor="builtin.module", description="test: marks a run")
def mark_and_wait(module_op):
    open(os.environ["MARK_FILE"], "a").close()
    time.sleep(0.2)
'''

# ------------------------------------------------------------ Ctrl-C

BENCH_WRAPPER = """
import sys
from mlirhlo_driver.execute import bench
from mlirhlo_driver.cli.mlirhlo import main

original = bench.bench_pipelines

def announced(*args, **kwargs):
    print("benchmarking", flush=True)   # the test's cue to press Ctrl-C
    return original(*args, **kwargs)

bench.bench_pipelines = announced
main(sys.argv[1:])
"""


@pytest.mark.slow
def test_bench_pipeline_with_one_pipeline_prints_no_ratio(cli, mlir_file):
    # The B/A line compares two pipelines; with one there is nothing to divide by.
    r = cli("bench-pipeline", mlir_file, "--passes", "canonicalize", "--repeats", "1")
    assert r.code == 0, r.err
    assert r.out.startswith("# A: builtin.module(canonicalize)")
    assert "B/A" not in r.out


@pytest.mark.slow
def test_bench_pipeline_takes_one_repeat_and_refuses_zero(cli, mlir_file):
    r = cli("bench-pipeline", mlir_file, "--passes", "cse", "--repeats", "1")
    assert r.code == 0 and "cse" in r.out, r.err
    assert_one_line_error(cli("bench-pipeline", mlir_file, "--passes", "cse", "--repeats", "0"),
                          contains="--repeats must be >= 1")


def test_ctrl_c_in_bench_pipeline_is_one_error_line(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) stops a benchmark of
    native and Python passes: exit 130, one error line, no MLIR timing report."""
    import time

    (tmp_path / "plug.py").write_text(SLOW_PLUGIN)
    mark = tmp_path / "ran"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "bench-pipeline", str(REPO / "tests" / "data" / "erf_inv.mlir"),
         "--load-pass-plugin", str(tmp_path / "plug.py"), "--passes", "canonicalize,mark-and-wait,cse",
         "--repeats", "100000"],
        cwd=tmp_path, env=dict(os.environ, MARK_FILE=str(mark)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    try:
        while not mark.exists() and proc.poll() is None:  # the benchmark is running
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert_one_line_error(CliResult(proc.returncode, out, err), code=130, contains="interrupted")


@pytest.mark.slow
def test_bench_pipeline_compares_with_and_without_a_python_pass(cli, tmp_path):
    import json

    result = cli("bench-pipeline", DATA / "mlp_train_step.before_optimizations.txt", "--passes",
                 "canonicalize,cse", "--compare", "inline-calls,canonicalize,cse", "--repeats", "3", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    a, b = data["runs"]
    assert a["repeats"] == b["repeats"] == 3
    assert [p["pass"] for p in b["passes"]][0] == "inline-calls"
    assert all(p["runs"] == 3 and p["min_ms"] <= p["median_ms"] <= p["max_ms"] for p in b["passes"])
    assert data["ratio"] == pytest.approx(b["total_median_ms"] / a["total_median_ms"])
    table = cli("bench-pipeline", DATA / "erf_inv.mlir", "--pipeline", "@legalize-chlo", "--repeats", "2")
    assert "ChloLegalizeToStablehloPass" in table.out and "Total" in table.out
    assert "B/A" not in table.out
    # The text form of a comparison: each side's table, then B's total over A's.
    both = cli("bench-pipeline", DATA / "erf_inv.mlir", "--passes", "cse", "--compare", "canonicalize,cse",
               "--repeats", "2")
    assert both.code == 0, both.err
    heads = re.findall(r"^# ([AB]): (.*)  \(2 runs, fresh copy each\)$", both.out, re.M)
    assert [h[0] for h in heads] == ["A", "B"]
    totals = [float(t) for t in re.findall(r"^ *([0-9.]+) +[0-9.]+ +[0-9.]+  Total$", both.out, re.M)]
    ratio = re.search(r"^# B/A total \(medians, runs interleaved A B A B\): (.*)$", both.out, re.M)
    assert len(totals) == 2 and ratio, both.out
    if totals[0] > 0.01:  # printed to 3 decimals
        assert float(ratio.group(1).removesuffix("x")) == pytest.approx(totals[1] / totals[0], rel=0.05)
    elif totals[0] == 0:  # cse alone can be too fast for the timer: no ratio, and no crash
        assert ratio.group(1) == "none (A's median total is 0 ms)"


def test_bench_xla_pipeline_from_dump_timestamps(cli):
    result = cli("bench-pipeline", DATA / "erf_inv.mlir", "--platform", "cpu", "--repeats", "2")
    assert result.code == 0, result.err
    assert "from file timestamps" in result.out
    assert re.search(r"simplification / algsimp$", result.out, re.M)
    assert result.out.strip().endswith("whole compile")


@pytest.mark.slow
@pytest.mark.parametrize("passes", ["canonicalize,cse", "canonicalize,fold-involutions,cse"],
                         ids=["native", "python-pass"])
def test_ctrl_c_stops_bench_pipeline(passes):
    proc = subprocess.Popen(
        [sys.executable, "-c", BENCH_WRAPPER, "bench-pipeline", str(DATA / "mlp_train_step.before_optimizations.txt"),
         "--passes", passes, "--repeats", "1000000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(REPO))
    try:
        assert readline_within(proc.stdout, 300) == b"benchmarking\n"
        threading.Event().wait(1.0)  # well inside the runs
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err.decode(errors="replace")
    text = err.decode(errors="replace")
    assert "Traceback" not in text
    assert "===---" not in text and "Execution time report" not in text  # MLIR's raw timing report
    last = text.splitlines()[-1]
    assert last.startswith("error: ") and "interrupted" in last and text.count("interrupted") == 1, text
    assert out == b""


@pytest.mark.parametrize("args, facts", [
    (["--bogus", "--other"], ("--bogus", " bench-pipeline --help'")),
    (["--repet", "2"], ("--repet", "'--repeats'")),
    (["--platform", "cpu", "--gpu_spec", "x"], ("--gpu_spec", "'--gpu-spec'")),
    # No --platform, no XLA compile: an XLA flag is no option of the MLIR pipeline's.
    (["--xla_cpu_enable_fast_math"], ("--xla_cpu_enable_fast_math",)),
])
def test_bench_pipeline_unknown_option(cli, small, args, facts):
    """bench-pipeline: a word typer left is refused by name, with a suggestion from the command's own
    options (the wording: e2e/test_mlirhlo.py's table)."""
    line = assert_one_line_error(cli("bench-pipeline", small, *args), facts=facts)
    assert "--other" not in line and "no such option" in line


def test_bench_pipeline_takes_its_file_wherever_it_stands(cli, small, recorder):
    """typer gives FILE the first word it does not parse, an option it does not know too: an
    unknown option before FILE is refused as an option, an XLA flag before it is taken."""
    assert_one_line_error(cli("bench-pipeline", "--bogus", small), facts=("--bogus",), contains="no such option")
    r = cli("bench-pipeline", "--xla_cpu_enable_fast_math", small, "--platform", "cpu", "--repeats", "2")
    assert (r.code, r.out) == (0, "table\n"), r.err
    assert recorder["bench_pipeline"][0] == (str(small),)
    assert recorder["resolve"][1]["cli_flags"] == {"xla_cpu_enable_fast_math": True}
    assert_one_line_error(cli("bench-pipeline", "--xla_cpu_enable_fast_math", "--platform", "cpu"),
                          facts=("FILE", " bench-pipeline --help'"))


def test_bench_pipeline_command_hands_over_its_options(cli, small, recorder):
    """bench-pipeline: no --platform, no target; with one, targets.resolve's (the spec required);
    the table written as returned."""
    r = cli("bench-pipeline", small, "--passes", "cse", "--repeats", "3")
    assert (r.code, r.out, r.err) == (0, "table\n", "")
    args, kwargs = recorder["bench_pipeline"]
    assert args == (str(small),)
    from mlirhlo_driver.cli.common import say

    assert kwargs == {"target": None, "pipeline_spec": None, "passes": "cse", "compare": None, "repeats": 3,
                      "json_out": False, "input_format": None, "args": None, "say": say, "python_passes": None}
    assert "resolve" not in recorder and recorder["load_plugins"] == ((None,), {})
    r = cli("bench-pipeline", small, "--passes", "cse", "--platform", "cuda", "--gpu-spec", "a100",
            "--xla_gpu_autotune_level=0", "--json")
    assert (r.code, r.out) == (0, "table\n"), r.err
    args, kwargs = recorder["resolve"]
    assert args == ("cuda",) and kwargs["gpu_spec"] == "a100" and kwargs["needs_spec"] is True
    assert kwargs["cli_flags"] == {"xla_gpu_autotune_level": 0}
    assert recorder["bench_pipeline"][1]["target"] == "a target" and recorder["bench_pipeline"][1]["json_out"]
