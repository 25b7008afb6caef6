"""xla/passes.py: XLA's pass lists and the passes hlo-opt runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PLAIN, assert_one_line_error, run_xla_tool

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


@pytest.mark.slow
def test_hlo_opt_unknown_pass_is_xla_s_invalid_argument(files, capfd):
    (files / "input.hlo").write_text(PLAIN)
    r = run_xla_tool("hlo-opt", ["--passes=algsimpx", "input.hlo"], files, capfd)
    line = assert_one_line_error(r, facts=("algsimpx", "'algsimp'"))
    assert "INVALID_ARGUMENT:" in line  # XLA's lit test greps for its status code


def test_hlo_opt_test_only_pass_says_jaxlib_lacks_it_before_any_compile(files, capfd, monkeypatch):
    from mlirhlo_driver.xla import backend

    def no_compile(*a, **k):
        raise AssertionError("compiled")

    monkeypatch.setattr(backend, "compile", no_compile)
    (files / "input.hlo").write_text(PLAIN)
    r = run_xla_tool("hlo-opt", ["--passes=algsimp,test-only-foo2bar", "input.hlo"], files, capfd)
    assert_one_line_error(r, at="--passes", facts=("test-only-foo2bar", "jaxlib"))


@pytest.mark.golden
def test_pass_not_found_messages():
    from mlirhlo_driver.xla import passes

    unknown = passes.not_found("nonexistent-optimization-pass", ["algsimp", "dce"])
    assert unknown.format() == ("error: INVALID_ARGUMENT: Pass nonexistent-optimization-pass not found. "
                                "(hlo-opt --list-passes prints the names)")
    assert passes.not_found("algsimpx", ["algsimp"]).format() == \
        "error: INVALID_ARGUMENT: Pass algsimpx not found. (did you mean 'algsimp'?)"
    assert passes.not_found("test-only-bar2hello", []).format() == (
        "error: --passes: test-only-bar2hello is one of XLA's test-only passes, built into XLA's own "
        "hlo-opt alone: jaxlib's XLA does not have it")
    assert unknown.exit_code == 2


def test_a_pass_alone_disables_every_other_pass_and_the_pipelines_that_do_not_hold_it():
    from mlirhlo_driver.xla.passes import _alone

    known = {"top": ["a", "nested", "b"], "nested": ["algsimp", "dce"], "other": ["algsimp", "c"],
             "empty": [], "": ["skipped"]}
    # algsimp runs in 'nested' (inside 'top') and in 'other': those keep running, with it alone
    assert _alone(known, "algsimp") == ["a", "b", "c", "dce", "empty", "skipped"]
    # a pass right in a top-level pipeline: every other pipeline is off whole
    assert _alone(known, "b") == ["a", "algsimp", "c", "dce", "empty", "nested", "other", "skipped"]


ORDERED = """HloModule test

ENTRY main {
  operand = s32[1,3] parameter(0)
  indices = s32[7,5] parameter(1)
  ROOT gather = s32[7,3,5] gather(operand, indices), offset_dims={1}, collapsed_slice_dims={0},
      start_index_map={0}, index_vector_dim=2, slice_sizes={1,3}
}
"""


@pytest.mark.slow
def test_hlo_opt_passes_run_once_each_in_the_order_given_with_the_user_s_names(files, capfd):
    """gather_expander makes a reshape and a broadcast of the gather; reshape-decomposer after it
    makes the reshape a bitcast, before it finds no reshape. XLA's CPU pipeline runs
    reshape-decomposer after gather_expander (one compile would give the bitcast either way):
    the order given is kept."""
    (files / "input.hlo").write_text(ORDERED)

    def run(spec: str) -> str:
        r = run_xla_tool("hlo-opt", ["--platform=cpu", f"--passes={spec}", "input.hlo"], files, capfd)
        assert r.code == 0, r.err
        return r.out

    expand_then_decompose = run("gather_expander,reshape-decomposer")
    decompose_then_expand = run("reshape-decomposer,gather_expander")
    assert "bitcast(%operand)" in expand_then_decompose
    assert "reshape(%operand)" in decompose_then_expand and "bitcast" not in decompose_then_expand
    for out in (expand_then_decompose, decompose_then_expand):
        assert "ENTRY %main (operand: s32[1,3], indices: s32[7,5])" in out  # the user's names
        assert "%indices = s32[7,5]{1,0} parameter(1)" in out
        assert "metadata" not in out  # none given, none added by the trip through StableHLO
        assert "gather(" not in out


def test_list_passes_is_xla_s_comma_list_from_the_pipelines_own_log(files, capfd):
    r = run_xla_tool("hlo-opt", ["--list-passes", "--platform=CPU"], files, capfd)
    assert r.code == 0, r.err
    assert r.out.endswith("\n") and r.out.count("\n") == 1
    names = r.out.strip().split(",")
    # passes that change nothing on the reference module are listed too; pipelines are not
    for name in ("algsimp", "cholesky_expander", "qr_expander", "copy-insertion", "layout-assignment"):
        assert name in names, name
    assert "simplification" not in names and not any(" " in n for n in names)
    assert len(names) == len(set(names))
    assert names == sorted(names)  # XLA sorts its registry's names (XLA's list_passes.hlo greps a neighbour)


def test_list_passes_cpu_has_the_hardware_independent_passes_only_the_cuda_pipeline_runs(files, capfd):
    """XLA registers its hardware-independent passes for every platform: jaxlib's CPU pipeline lacks
    all-gather-bcast-reorder, the CUDA one lends it; CUDA's own passes it does not."""
    names = run_xla_tool("hlo-opt", ["--list-passes", "--platform=cpu"], files, capfd).out.strip().split(",")
    assert "all-gather-bcast-reorder" in names and "slice-sinker" in names
    assert "dot-algorithm-rewriter" not in names and "gpu-all-gather-combiner" not in names
    gpu = run_xla_tool("hlo-opt", ["--list-passes", "--platform=gpu"], files, capfd).out.strip().split(",")
    assert "tree_reduction_rewriter" in gpu and "fusion-wrapper" not in gpu  # the CPU pipeline's lent, its own not


_ALL_GATHER_OF_BROADCAST = """HloModule m, replica_count=2

ENTRY e {
  p = f32[8] parameter(0)
  b = f32[8,128] broadcast(p), dimensions={0}
  ROOT ag = f32[16,128] all-gather(b), dimensions={0}, replica_groups={{0,1}}
}
"""


def test_cpu_runs_a_lent_hardware_independent_pass_in_the_cuda_pipeline(files, capfd):
    (files / "ag.hlo").write_text(_ALL_GATHER_OF_BROADCAST)
    r = run_xla_tool("hlo-opt", ["--platform=cpu", "--passes=all-gather-bcast-reorder", "ag.hlo"], files, capfd)
    assert r.code == 0, r.err
    # the all-gather moved before the broadcast: the pass ran
    assert "%ag = f32[16]{0} all-gather(%p)" in r.out
    assert "ROOT %b = f32[16,128]{1,0} broadcast(%ag), dimensions={0}" in r.out
    assert "all-gather-bcast-reorder: not in XLA's cpu pipeline" in r.err and "cuda" in r.err


def test_a_module_xla_refuses_before_any_pass_is_its_compile_error_not_an_unknown_pass(monkeypatch):
    """The pass log of a compile that failed before any pass ran names no pass: that is XLA's
    refusal of the module (exit 1), never 'Pass NAME not found'."""
    from types import SimpleNamespace

    from mlirhlo_driver.errors import CompileError
    from mlirhlo_driver.xla import backend, passes

    refused = SimpleNamespace(art=SimpleNamespace(pass_calls=[], compile_error="XLA said no"))
    monkeypatch.setattr(backend, "compile", lambda *a, **k: refused)
    with pytest.raises(CompileError) as e:
        passes._known_pipelines(object(), "m", SimpleNamespace(platform="cuda", xla_flags=()))
    assert "XLA said no" in e.value.message and e.value.exit_code == 1


def test_passes_note_names_the_op_jaxlib_s_export_changed_before_xla_s_passes(files, capfd):
    """jaxlib's compile takes StableHLO only, and its export to HLO makes a transpose of a unit
    dimension a reshape before any XLA pass runs (XLA's cpu_hlo_pass.hlo expects the transpose
    kept): the note says which instruction became what."""
    (files / "t.hlo").write_text("HloModule t\n\nENTRY e {\n  p = f32[256,1] parameter(0)\n"
                                 "  ROOT t = f32[1,256] transpose(p), dimensions={1,0}\n}\n")
    r = run_xla_tool("hlo-opt", ["--platform=cpu", "--passes=dce", "t.hlo"], files, capfd)
    assert r.code == 0, r.err
    assert "ROOT %t = f32[1,256]{1,0} reshape(%p)" in r.out  # what XLA received, printed
    assert "t.hlo: jaxlib compiles StableHLO" in r.err and "(%t: transpose -> reshape)" in r.err
