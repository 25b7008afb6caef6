"""xla/passes.py: XLA's pass lists and the passes hlo-opt runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PLAIN, run_xla_tool

# ------------------------------------------------------------------ hlo-opt --passes

def _tool(name: str, argv: list[str], cwd: Path, capfd) -> tuple[int, str, str]:
    r = run_xla_tool(name, argv, cwd, capfd)
    return r.code, r.out, r.err


@pytest.mark.parametrize("line", [
    "--passes=schedule-aware-collective-cse --xla_gpu_experimental_collective_cse_distance_threshold=20",
    "--passes=reduce-window-rewriter,scatter_simplifier --xla_reduce_window_rewrite_base_length=128",
])
def test_doc_pass_lines_print_the_module_when_the_passes_changed_nothing(line, files, capfd):
    """XLA's tools page's command lines, on a module that gives the passes nothing to do:
    the pass log shows they ran, so the module is printed."""
    (files / "input.hlo").write_text(PLAIN)
    code, out, err = _tool("hlo-opt", [*line.split(), "input.hlo"], files, capfd)
    assert code == 0, err
    assert out.startswith("HloModule plain") and "tanh(" in out


def test_hlo_opt_pass_that_no_pipeline_runs_is_still_an_error(files, capfd):
    (files / "input.hlo").write_text(PLAIN)
    code, out, err = _tool("hlo-opt", ["--passes=algsimpx", "input.hlo"], files, capfd)
    assert code == 2 and out == ""
    assert "algsimpx did not run" in err and "algsimp" in err


def test_list_passes_comes_from_the_pipelines_own_log(files, capfd):
    code, out, err = _tool("hlo-opt", ["--list-passes", "--platform=CPU"], files, capfd)
    assert code == 0, err
    # passes that change nothing on the reference module are listed too, under their pipelines
    assert "\nsimplification:\n  algsimp\n" in out
    for name in ("cholesky_expander", "qr_expander", "copy-insertion", "layout-assignment"):
        assert f"\n  {name}\n" in out, name
