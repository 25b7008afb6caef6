"""``mlirhlo diff`` as a user runs it: two device-less compiles of one module, side by side."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import DATA, assert_mentions, assert_one_line_error, filecheck, run_subprocess

MLP = str(DATA / "mlp_train_step.before_optimizations.txt")

NO_TRITON_GEMM = "--flags-b=--xla_gpu_enable_triton_gemm=false"


# ------------------------------------------------------------------ CUDA

@pytest.mark.slow
def test_a100_against_h100_text(cli, tmp_path):
    r = cli("diff", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80,h100_sxm")
    assert r.code == 0, r.err
    filecheck(r.out, """
CHECK: A: {{.*}}mlp_train_step.before_optimizations.txt on cuda a100_sxm_80 (sm_80, NVIDIA A100
CHECK-NEXT: B: {{.*}} on cuda h100_sxm (sm_90a, NVIDIA H100
CHECK: fusions and custom calls: {{1[0-9]}} on both sides{{.*}}, 0 only in A, 0 only in B
CHECK: kernels: [[N:[0-9]+]] in A, [[N]] in B; {{[1-9][0-9]*}} changed
CHECK: kernel {{ +}}field {{ +}}A {{ +}}B {{ +}}change
CHECK: gemm_fusion_dot {{ +}}smem B {{ +}}0 {{ +}}1024 {{ +}}+1024
CHECK: memory (bytes; executable's stats, then buffer assignment)
CHECK: peak memory {{ +}}[[PEAK:[0-9]+]] {{ +}}[[PEAK]] {{ +}}0
CHECK: temporaries
CHECK: arguments
CHECK: outputs
CHECK: allocations
CHECK: allocated
CHECK: differences found
""", tmp_path)


@pytest.mark.slow
def test_a100_against_h100_json(cli):
    r = cli("diff", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80,h100_sxm", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert set(d) == {"a", "b", "fusions", "kernels", "memory", "buffers", "stage", "identical"}
    assert (d["a"]["gpu_spec"]["sm"], d["b"]["gpu_spec"]["sm"]) == ("sm_80", "sm_90a")
    assert d["identical"] is False and d["stage"] is None
    changed = {c["kernel"]: c["fields"] for c in d["kernels"]["changed"]}
    assert changed["gemm_fusion_dot"]["static_shared_memory"] == {"a": 0, "b": 1024, "change": 1024}
    assert d["kernels"]["count_a"] == d["kernels"]["count_b"] >= 12
    assert not d["kernels"]["only_a"] and not d["kernels"]["only_b"]
    assert set(d["memory"]) >= {"peak_memory_in_bytes", "temp_size_in_bytes", "argument_size_in_bytes",
                                "output_size_in_bytes"}
    # The buffer assignment's totals agree with the executable's own stats.
    for side in "ab":
        assert d["buffers"]["parameter_bytes"][side] == d["memory"]["argument_size_in_bytes"][side]
        assert d["buffers"]["output_bytes"][side] == d["memory"]["output_size_in_bytes"][side]
        assert d["buffers"]["temp_bytes"][side] == d["memory"]["temp_size_in_bytes"][side]
    assert d["buffers"]["total_bytes"]["a"] == sum(d["buffers"][k]["a"] for k in (
        "parameter_bytes", "output_bytes", "temp_bytes", "constant_bytes", "thread_local_bytes"))


@pytest.mark.slow
def test_without_triton_gemm_kernels_and_fusions_on_one_side(cli, tmp_path):
    r = cli("diff", MLP, "--platform", "cuda", "--gpu-spec", "h100_sxm", NO_TRITON_GEMM, "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["b"]["xla_flags"]["xla_gpu_enable_triton_gemm"] is False
    only_a = {f["kind"] for f in d["fusions"]["only_a"]}
    only_b = {f["kind"] for f in d["fusions"]["only_b"]}
    assert "kCustom __triton_nested_gemm_fusion" in only_a
    assert any(kind.startswith("__cublas$") for kind in only_b)  # __cublas$lt$matmul; jaxlib 0.9: __cublas$gemm
    assert any(k["kernel"].startswith("gemm_fusion_dot") for k in d["kernels"]["only_a"])
    assert not any(k["kernel"].startswith("gemm_fusion_dot") for k in d["kernels"]["only_b"])
    # cuBLAS's workspace is a temporary buffer the Triton GEMMs did not need.
    assert d["memory"]["temp_size_in_bytes"]["change"] > 0
    assert d["buffers"]["temp_bytes"]["change"] == d["memory"]["temp_size_in_bytes"]["change"]
    # The same flag given as a separate word; the sides come from the stage cache now.
    r = cli("diff", MLP, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--flags-b",
            "--xla_gpu_enable_triton_gemm=false")
    assert r.code == 0, r.err
    filecheck(r.out, """
CHECK: B: {{.*}} --xla_gpu_enable_triton_gemm=false
CHECK: fusions and custom calls:
CHECK-DAG: - gemm_fusion_dot.{{[0-9]+}} {{ +}}kCustom __triton_nested_gemm_fusion
CHECK-DAG: + {{[a-z-]+}}.{{[0-9]+}} {{ +}}__cublas$
CHECK: kernels:
CHECK-DAG: - gemm_fusion_dot {{ +}}{{[0-9]+}} regs
CHECK: differences found
""", tmp_path)


@pytest.mark.slow
def test_stage_diff_of_ptx(cli, tmp_path):
    r = cli("diff", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80,h100_sxm", "--stage", "ptx")
    assert r.code == 0, r.err
    filecheck(r.out, """
CHECK: stage ptx, names renumbered by first appearance:
CHECK-NEXT: --- A a100_sxm_80
CHECK-NEXT: +++ B h100_sxm
CHECK: -.target sm_80
CHECK-NEXT: +.target sm_90a
CHECK: differences found
""", tmp_path)


@pytest.mark.slow
def test_a_repeat_is_answered_from_the_stage_cache_without_jaxlib(cli):
    argv = ["diff", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80,h100_sxm", "--json"]
    first = cli(*argv)
    assert first.code == 0, first.err
    proc = run_subprocess(
        "import sys\nfrom mlirhlo_driver.cli.mlirhlo import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\nsys.stdout.flush()\n"
        "print('IMPORTED:', sorted(m for m in ('jax', 'jaxlib', 'jaxlib.mlir') if m in sys.modules))\n")
    assert proc.returncode == 0, proc.stderr
    out, imported = proc.stdout.rsplit("IMPORTED:", 1)
    assert imported.strip() == "[]"
    assert json.loads(out) == json.loads(first.out)


# ------------------------------------------------------------------ CPU

@pytest.mark.slow
def test_cpu_diff(cli, tmp_path):
    r = cli("diff", MLP, "--platform", "cpu", "--flags-b", "--xla_disable_hlo_passes=algsimp", "--stage", "hlo",
            "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["kernels"] is None and d["a"]["gpu_spec"] is None
    assert d["fusions"]["only_a"] and d["fusions"]["only_b"]
    assert d["stage"]["name"] == "hlo" and d["stage"]["diff"].startswith("--- A cpu\n+++ B cpu\n")
    r = cli("diff", MLP, "--platform", "cpu", "--flags-b", "--xla_disable_hlo_passes=algsimp")
    assert r.code == 0, r.err
    assert "kernels:" not in r.out
    filecheck(r.out, """
CHECK: A: {{.*}} on cpu
CHECK-NEXT: B: {{.*}} on cpu --xla_disable_hlo_passes=algsimp
CHECK: fusions and custom calls: {{[0-9]+}} on both sides, {{[1-9][0-9]*}} only in A, {{[1-9][0-9]*}} only in B
CHECK: - {{[a-z_.0-9]+}} {{ +}}kLoop
CHECK: peak memory
CHECK: differences found
""", tmp_path)


@pytest.mark.slow
def test_json_output_is_two_space_indented_json_with_a_final_newline(cli):
    """``diff --json`` prints its result indented by two spaces and ends in one newline, as every --json does."""
    r = cli("diff", MLP, "--platform", "cpu", "--flags-b", "--xla_disable_hlo_passes=algsimp", "--stage", "hlo",
            "--json")
    assert r.code == 0, r.err
    assert r.out == json.dumps(json.loads(r.out), indent=2) + "\n"
    assert r.out.startswith('{\n  "a": {\n    "input": ')


def test_two_compiles_of_the_same_module_have_no_differences(cli, tmp_path):
    """Two files, so two compiles: XLA's other numbering is no difference."""
    copy = tmp_path / "copy.hlo"
    shutil.copy(MLP, copy)
    r = cli("diff", MLP, str(copy), "--platform", "cpu", "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.out, """
CHECK: A: {{.*}}mlp_train_step.before_optimizations.txt on cpu
CHECK-NEXT: B: {{.*}}copy.hlo on cpu
CHECK: 0 only in A, 0 only in B, 0 of another kind
CHECK: stage hlo: the same, names renumbered
CHECK: no differences
""", tmp_path)


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("args, message", [
    (["--platform", "cuda", "--gpu-spec", "a100_sxm_80,h200_nope"], "unknown GPU spec 'h200_nope'"),
    (["--platform", "cuda", "--gpu-spec", "a100_sxm_80,h100_sxm,h200"], "names 3 specs: diff compares two"),
    (["--platform", "cuda", "--flags-b", "--xla_gpu_enable_trition_gemm=false"],
     "unknown XLA flag '--xla_gpu_enable_trition_gemm'"),
    (["--platform", "cuda", "--flags-a=--xla_gpu_enable_triton_gemm=maybe"], "expected true or false"),
    (["--platform", "cuda", "--flags-b", "xla_gpu_enable_triton_gemm=false"], "cannot parse --flags-b near"),
    (["--platform", "cuda", "--flags-b", "'--xla_gpu_enable_triton_gemm"], "cannot parse --flags-b"),
    (["--flags-b", "--xla_gpu_enable_triton_gemm=false"], "give --platform cpu|cuda"),
    (["--platform", "cuda", "--stage", "cubin"], "stage 'cubin' is binary"),
    (["--platform", "cpu", "--stage", "ptx"], "stage 'ptx' does not exist for --platform cpu"),
    (["--platform", "cpu", "--gpu-spec", "h100_sxm"], "--gpu-spec is for --platform cuda"),
])
def test_bad_input_is_one_error_line(cli, args, message):
    assert_one_line_error(cli("diff", MLP, *args), contains=message)


def test_missing_input_is_one_error_line(cli, tmp_path):
    assert_one_line_error(cli("diff", str(tmp_path / "nope.hlo"), "--platform", "cpu"),
                          contains="no such file")


def test_both_sides_spec_notes_are_said_once_each(cli, tmp_path):
    """``diff`` says the notes of both sides' GPU specs on stderr, A's then B's, a note both share once."""
    hlo = tmp_path / "add.hlo"
    hlo.write_text("HloModule add\n\nENTRY main {\n  p = f32[8] parameter(0)\n  ROOT a = f32[8] add(p, p)\n}\n")
    moved = "/xla/tools/hlo_opt/gpu_specs/a100_pcie_80.txtpb"  # not here: the shipped spec, with a note
    lacking = str(DATA / "xla_specs" / "a100_pcie_80.txtpb")  # lacks a required field: filled in, with a note
    r = cli("diff", hlo, "--platform", "cuda", "--gpu-spec", f"{moved},{lacking}", "--no-cache")
    assert r.code == 0, r.err
    notes = [ln for ln in r.err.splitlines() if ln.startswith("note:")]
    assert len(notes) == 2, r.err
    assert f"{moved} does not exist" in notes[0]
    assert_mentions(notes[1], "registers_per_block_limit")
    r = cli("diff", hlo, "--platform", "cuda", "--gpu-spec", f"{lacking},{lacking}", "--no-cache")
    assert r.code == 0, r.err
    notes = [ln for ln in r.err.splitlines() if ln.startswith("note:")]
    assert len(notes) == 1, r.err
    assert_mentions(notes[0], "registers_per_block_limit")
