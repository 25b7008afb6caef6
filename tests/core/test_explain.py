"""``mlirhlo diff --explain`` (core/explain.py): per differing kernel, the fewest differing
flags or GPU spec fields that reproduce it on side A, and the XLA pass behind it.

One case per cause, on a one-dot module (a Triton GEMM fusion and a loop fusion on H100):
a flag (``--xla_gpu_enable_triton_gemm=false`` among three), a spec field
(``threads_per_core_limit`` among three changed fields), and a pass (the GEMM kernel's:
``triton-gemm-rewriter``); the MLP step once. Trials are kept in the stage cache: a
second run compiles nothing.

Cost: about 40 s on 2 cores, of which the MLP step's explain is 25 s (about ten compiles
of the step, each with ptxas for its kernels): that case is the issue's own acceptance
test; every other case compiles the one-dot module (~0.5 s a trial). Each test has a
stage cache of its own (conftest.py), so each pays for its own trials.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlirhlo_driver.core import explain
from tests.conftest import DATA, REPO, assert_one_line_error

MLP = DATA / "mlp_train_step.before_optimizations.txt"

SPECS = REPO / "gpu_specs"

SMALL = """func.func @main(%x: tensor<64x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<64x256xf32> {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
  %s = stablehlo.add %d, %bb : tensor<64x256xf32>
  %t = stablehlo.tanh %s : tensor<64x256xf32>
  return %t : tensor<64x256xf32>
}
"""

# Three flags differ; only the first changes this module's kernels.
FLAGS_B = "--xla_gpu_enable_triton_gemm=false --xla_gpu_enable_fast_min_max=true --xla_gpu_exhaustive_tiling_search=true"


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("explain") / "small.mlir"
    path.write_text(SMALL)
    return path


@pytest.fixture(scope="module")
def half_threads(tmp_path_factory) -> Path:
    """H100 with half the threads per SM, less bandwidth and another name: three fields differ."""
    text = (SPECS / "h100_sxm.txtpb").read_text()
    for old, new in (("threads_per_core_limit: 2048", "threads_per_core_limit: 1024"),
                     ("memory_bandwidth: 3350000000000", "memory_bandwidth: 2000000000000"),
                     ('"NVIDIA H100 80GB HBM3"', '"H100, half the threads"')):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path_factory.mktemp("specs") / "h100_half_threads.txtpb"
    path.write_text(text)
    return path


# ------------------------------------------------------------------ ddmin

@pytest.mark.parametrize("items, culprit", [
    (list(range(8)), {5}),
    (list(range(8)), {1, 6}),       # needs two, from both halves
    (list(range(7)), {0, 3, 6}),
    (["only"], {"only"}),
])
def test_ddmin_finds_the_smallest_set_that_reproduces(items, culprit):
    calls = []

    def test(subset):
        calls.append(tuple(subset))
        return culprit <= set(subset)

    assert set(explain.ddmin(items, test)) == culprit
    n = len(items)
    assert len(set(calls)) <= (n * n + 7 * n) / 2  # ddmin's worst case (Zeller 2002), not 2**n
    assert explain.ddmin(items, test) == [x for x in items if x in culprit]  # order kept


def test_ddmin_result_is_one_minimal_when_several_sets_work():
    """Either {1} or {2, 3} reproduces: the result is one of them, and none of its items can go."""
    def test(s):
        return 1 in s or {2, 3} <= set(s)

    got = explain.ddmin(list(range(6)), test)
    assert test(got) and all(not test([x for x in got if x != y]) for y in got)


# ------------------------------------------------------------------ candidates

def test_flag_candidates_and_applying_them():
    a = {"xla_gpu_autotune_level": 0, "xla_gpu_enable_triton_gemm": True, "xla_same": 1}
    b = {"xla_gpu_enable_triton_gemm": False, "xla_same": 1, "xla_gpu_enable_fast_min_max": True}
    got = explain.flag_candidates(a, b)
    assert [(c.name, c.a, c.b) for c in got] == [("xla_gpu_autotune_level", "0", "(removed)"),
                                                 ("xla_gpu_enable_fast_min_max", "(removed)", "true"),
                                                 ("xla_gpu_enable_triton_gemm", "true", "false")]
    assert [c.text() for c in got] == ["--xla_gpu_autotune_level unset", "--xla_gpu_enable_fast_min_max=true",
                                       "--xla_gpu_enable_triton_gemm=false"]
    assert explain.apply_flags(a, b, got) == b  # all of them: B
    assert explain.apply_flags(a, b, got[:1]) == {"xla_gpu_enable_triton_gemm": True, "xla_same": 1}
    assert explain.apply_flags(a, b, got[2:]) == {**a, "xla_gpu_enable_triton_gemm": False}


def test_spec_candidates_are_the_differing_fields_applied_to_a_copy_of_a(half_threads):
    from mlirhlo_driver.cuda import specs

    a, b = specs.resolve_spec("h100_sxm"), specs.resolve_spec(str(half_threads))
    got = explain.spec_candidates(a, b)
    assert [(c.name, c.a, c.b) for c in got] == [
        ("device_description_str", "NVIDIA H100 80GB HBM3", "H100, half the threads"),
        ("gpu_device_info.memory_bandwidth", "3350000000000", "2000000000000"),
        ("gpu_device_info.threads_per_core_limit", "2048", "1024")]
    one = specs.parse_spec(explain.spec_text_with(a, b, got[2:]), a.path)
    assert one.proto.gpu_device_info.threads_per_core_limit == 1024
    assert one.memory_bandwidth == a.memory_bandwidth and one.gpu == a.gpu
    # Maps and repeated fields count whole: a100's rate tables differ from H100's.
    a100 = specs.resolve_spec("a100_sxm_80")
    names = [c.name for c in explain.spec_candidates(a, a100)]
    assert "gpu_device_info.cuda_compute_capability.major" in names
    assert "gpu_device_info.matrix_unit_description.rate_infos" in names
    all_of_a100 = specs.parse_spec(explain.spec_text_with(a, a100, explain.spec_candidates(a, a100)), a.path)
    assert explain.spec_candidates(all_of_a100, a100) == []  # every field applied: A becomes B


# ------------------------------------------------------------------ one case per cause

@pytest.mark.slow
def test_a_flag_explains_the_gemm_kernel_and_a_pass_makes_it(cli, small):
    r = cli("diff", small, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--flags-b", FLAGS_B, "--explain", "--json")
    assert r.code == 0, r.err
    ex = json.loads(r.out)["explain"]
    assert [c["name"] for c in ex["candidates"]] == ["xla_gpu_enable_fast_min_max", "xla_gpu_enable_triton_gemm",
                                                     "xla_gpu_exhaustive_tiling_search"]
    by = {k["kernel"]: k for k in ex["kernels"]}
    gemm = by["gemm_fusion_dot"]
    assert gemm["change"] == "only_a" and gemm["reproduced"]
    assert [c["name"] for c in gemm["cause"]] == ["xla_gpu_enable_triton_gemm"]
    # Only in A: on A, disabling the pass that made Triton's GEMM fusion removes it.
    assert gemm["pass"]["side"] == "a" and gemm["pass"]["name"] == "triton-gemm-rewriter"
    assert gemm["pass"]["trials"] == 1  # the pass that first wrote the instruction goes first
    assert all(k["reproduced"] and [c["name"] for c in k["cause"]] == ["xla_gpu_enable_triton_gemm"]
               for k in ex["kernels"])
    assert ex["compiles"] > 3 and ex["from_cache"] == 0
    # Again: every trial comes from the stage cache.
    again = json.loads(cli("diff", small, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--flags-b", FLAGS_B,
                           "--explain", "--json").out)["explain"]
    assert again["compiles"] == 0 and again["from_cache"] > 0
    assert again["kernels"] == ex["kernels"]


@pytest.mark.slow
def test_explain_text_is_one_line_per_kernel(cli, small):
    ex = json.loads(cli("diff", small, "--platform", "cuda", "--flags-b", FLAGS_B, "--explain", "--json").out)["explain"]
    r = cli("diff", small, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--flags-b", FLAGS_B, "--explain")
    assert r.code == 0, r.err
    text = r.out.split("differences found\n\n", 1)[1]
    lines = text.splitlines()
    assert lines[0] == ("explain: 3 candidate(s) differ between the sides: --xla_gpu_enable_fast_min_max=true, "
                        "--xla_gpu_enable_triton_gemm=false, --xla_gpu_exhaustive_tiling_search=true")
    gemm = next(ln for ln in lines if ln.lstrip().startswith("gemm_fusion_dot "))
    assert gemm.split(None, 1)[1] == ("only in A; cause: --xla_gpu_enable_triton_gemm=false; pass (A): "
                                      "triton-gemm-rewriter (disabling it removes the difference)")
    assert len(lines) == 2 + len(ex["kernels"])
    # Every trial the JSON run compiled (or XLA refused) is the stage cache's now.
    assert ex["compiles"] > 3 and lines[-1] == f"explain: 0 trial compile(s), {ex['compiles']} from the stage cache"


@pytest.mark.slow
def test_a_spec_field_explains_the_occupancy_change(cli, small, half_threads):
    r = cli("diff", small, "--platform", "cuda", "--gpu-spec", f"h100_sxm,{half_threads}", "--explain", "--json")
    assert r.code == 0, r.err
    result = json.loads(r.out)
    ex = result["explain"]
    assert [c["name"] for c in ex["candidates"]] == ["device_description_str", "gpu_device_info.memory_bandwidth",
                                                     "gpu_device_info.threads_per_core_limit"]
    assert ex["kernels"] and len(ex["kernels"]) == len(result["kernels"]["changed"])
    for k in ex["kernels"]:
        assert k["change"] == "changed" and "warps_per_sm" in k["fields"]
        assert k["cause"] == [{"kind": "spec", "name": "gpu_device_info.threads_per_core_limit",
                               "a": "2048", "b": "1024"}]
        # The optimized HLO is the same on both sides: no pass is looked for.
        assert k["pass"] == {"side": "b", "name": None, "trials": 0, "candidates": 0, "same_hlo": True}


def test_explain_refuses_two_inputs_and_stage(cli, small, tmp_path):
    other = tmp_path / "other.mlir"
    other.write_text(SMALL.replace("tanh", "exponential"))
    line = assert_one_line_error(cli("diff", small, other, "--platform", "cuda", "--explain"), code=2)
    assert "--explain explains the differences of flags and GPU specs: give one input" in line
    line = assert_one_line_error(cli("diff", small, "--platform", "cuda", "--explain", "--stage", "hlo"), code=2)
    assert "give --stage or --explain, not both" in line


def test_no_difference_explains_nothing(cli, small):
    r = cli("diff", small, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--explain", "--json")
    ex = json.loads(r.out)["explain"]
    assert ex == {"candidates": [], "kernels": [], "compiles": 0, "from_cache": 0, "failed": 0}


@pytest.mark.slow
def test_compiled_diff_explains_in_the_api(small):
    import mlirhlo_driver as mh

    p = mh.load(str(small))
    a = p.compile(mh.Target.cuda("h100_sxm"))
    b = p.compile(mh.Target.cuda("h100_sxm", xla_flags={"xla_gpu_enable_triton_gemm": False}))
    result = a.diff(b, explain=True)
    gemm = next(k for k in result["explain"]["kernels"] if k["kernel"] == "gemm_fusion_dot")
    assert [c["name"] for c in gemm["cause"]] == ["xla_gpu_enable_triton_gemm"]
    assert "explain" not in a.diff(b)
    other = mh.load(str(MLP)).compile(mh.Target.cuda("h100_sxm"))
    with pytest.raises(mh.DriverError, match="one program"):
        a.diff(other, explain=True)


@pytest.mark.golden
def test_explain_of_two_programs_message_exactly(small):
    """Golden: Compiled.diff(explain=True) of two programs, refused before anything compiles
    (core/compiled.py's words)."""
    import mlirhlo_driver as mh

    a = mh.load(str(small)).compile(mh.Target.cpu())
    with pytest.raises(mh.DriverError) as e:
        a.diff(mh.load(str(MLP)).compile(mh.Target.cpu()), explain=True)
    assert e.value.format() == ("error: explain compares flags and GPU specs: both sides must compile one program "
                                "(a.compile(target_a).diff(a.compile(target_b), explain=True))")


@pytest.mark.slow
def test_mlp_step_flags_explained(cli):
    """The MLP step once: cuBLAS instead of Triton's GEMMs. One flag (the small module's
    tests delta-debug three): each kernel is reproduced by it, and the passes are found
    with trials shared between kernels (~10 compiles of the step, ~20 s)."""
    r = cli("diff", MLP, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--flags-b",
            "--xla_gpu_enable_triton_gemm=false", "--explain", "--json")
    assert r.code == 0, r.err
    result = json.loads(r.out)
    ex = result["explain"]
    k = result["kernels"]
    assert len(ex["kernels"]) == len({c["kernel"] for c in k["changed"]} | {x["kernel"] for x in k["only_a"]}
                                     | {x["kernel"] for x in k["only_b"]})
    gemms = [e for e in ex["kernels"] if e["kernel"].startswith("gemm_fusion_dot")]
    assert len(gemms) == 5
    for e in gemms:
        assert e["change"] == "only_a" and [c["name"] for c in e["cause"]] == ["xla_gpu_enable_triton_gemm"]
        assert e["pass"]["name"] == "triton-gemm-rewriter"
    assert all(e["reproduced"] for e in ex["kernels"])
    # Kernels only in B come from B's passes: cuBLAS's rewriter or the fusion that follows it.
    assert {e["pass"]["name"] for e in ex["kernels"] if e["change"] == "only_b"} <= {"cublas-gemm-rewriter",
                                                                                    "priority-fusion"}
    assert ex["compiles"] < 16


def test_diff_explain_hands_its_options_to_the_library(cli, monkeypatch):
    """The front-end only parses: --explain's call gets every option as given."""
    from mlirhlo_driver.cli.common import say
    from mlirhlo_driver.commands import mlirhlo as commands

    seen = {}
    monkeypatch.setattr(commands, "diff", lambda *a, **k: seen.update(args=a, kwargs=k) or "explained\n")
    r = cli("diff", "a.hlo", "--explain", "--platform", "cuda", "--gpu-spec", "a100_sxm_80,h100_sxm",
            "--flags-a=--xla_gpu_autotune_level=0", "--debug-options-file-a", "a.txt", "--debug-options-file-b",
            "b.txt", "--json", "--no-cache")
    assert (r.code, r.out, r.err) == (0, "explained\n", "")
    kwargs = seen["kwargs"]
    assert kwargs.pop("say") is say and kwargs.pop("input_options").input_format is None
    assert kwargs.pop("progress") is None  # stderr is not a terminal here: no progress line
    assert seen["args"] == ("a.hlo", None) and kwargs == {
        "platform": "cuda", "gpu_spec": "a100_sxm_80,h100_sxm", "flags_a": "--xla_gpu_autotune_level=0",
        "flags_b": None, "stage": None, "as_json": True, "cache": False, "explain": True,
        "debug_options_file_a": "a.txt", "debug_options_file_b": "b.txt", "num_partitions": None,
        "tpu_topology": None}
