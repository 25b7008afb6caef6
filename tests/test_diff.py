"""``mlirhlo diff``: two device-less compiles of one module, side by side."""

from __future__ import annotations

import json
import shutil

import pytest

from mlirhlo_driver.core.diff import canonical_names, stage_diff
from tests.conftest import DATA, assert_one_line_error, filecheck, run_subprocess

MLP = str(DATA / "mlp_train_step.before_optimizations.txt")
NO_TRITON_GEMM = "--flags-b=--xla_gpu_enable_triton_gemm=false"


# ------------------------------------------------------------------ names

def test_canonical_names_renumbers_by_first_appearance():
    text = ("%add.45 = f32[] add(%p.3, %p.9)\n%fusion.123 = fusion(%add.45), calls=%fused_computation.2.gemm.5_c\n"
            "ROOT %t = tuple(%add.7, %add.45) // gemm_fusion_dot_5_param_0 module_0042 sm_80 1.5 $L__BB0_2\n")
    assert canonical_names(text) == (
        "%add.0 = f32[] add(%p.0, %p.1)\n%fusion.0 = fusion(%add.0), calls=%fused_computation.gemm_c.0\n"
        "ROOT %t = tuple(%add.1, %add.0) // gemm_fusion_dot_param_0 module_0 sm_80 1.5 $L__BB0_2\n")


def test_canonical_names_make_numbering_alone_no_difference():
    a = "%fusion.3 = f32[4] fusion(%Arg_0.1), calls=%fused.3\n%copy.9 = copy(%fusion.3)\n"
    b = "%fusion.8 = f32[4] fusion(%Arg_0.5), calls=%fused.1\n%copy.2 = copy(%fusion.8)\n"
    assert canonical_names(a) == canonical_names(b)
    assert stage_diff(a, b, "A", "B") == ""
    # Another structure still shows: the copy reads another value.
    c = "%fusion.8 = f32[4] fusion(%Arg_0.5), calls=%fused.1\n%copy.2 = copy(%Arg_0.5)\n"
    diff = stage_diff(a, c, "A", "B")
    assert "-%copy.0 = copy(%fusion.0)" in diff and "+%copy.0 = copy(%Arg.0)" in diff


def test_fusions_outside_fused_computations_only():
    """Nested fusions (inside a Triton GEMM fusion's computation) are part of their fusion."""
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.xla.summary import fusions

    module = hlo_proto.message_class("HloModuleProto")()
    entry, fused, nested = module.computations.add(), module.computations.add(), module.computations.add()
    entry.id, fused.id, nested.id = 1, 2, 3
    entry.instructions.add(name="gemm_fusion_dot.5", opcode="fusion", fusion_kind="kCustom",
                           called_computation_ids=[2],
                           backend_config=b'{"fusion_backend_config":{"kind":"__triton_nested_gemm_fusion"}}')
    entry.instructions.add(name="cublas-lt-matmul.2", opcode="custom-call", custom_call_target="__cublas$lt$matmul")
    fused.instructions.add(name="block_fusion", opcode="fusion", fusion_kind="kCustom", called_computation_ids=[3])
    nested.instructions.add(name="inner", opcode="fusion", fusion_kind="kLoop")
    assert fusions(module) == [
        {"name": "gemm_fusion_dot.5", "opcode": "fusion", "kind": "kCustom __triton_nested_gemm_fusion"},
        {"name": "cublas-lt-matmul.2", "opcode": "custom-call", "kind": "__cublas$lt$matmul"}]


@pytest.mark.parametrize("config, kind", [
    (b'{"fusion_backend_config":{"kind":"__triton_gemm"}}', "__triton_gemm"),
    (b"", ""), (b"not json", ""), (b"[1, 2]", ""), (b'{"operation_queue_id":"0"}', ""),
    (b'{"fusion_backend_config":{"kind":7}}', ""),
])
def test_a_fusions_backend_kind_is_read_from_its_config_or_empty(config, kind):
    from mlirhlo_driver.xla.summary import _backend_kind

    assert _backend_kind(config) == kind


def test_buffer_totals_count_each_allocation_once_and_its_bytes_by_kind():
    """The buffers table: one allocation is one, and its bytes go to exactly one kind (the first
    of parameter, constant, thread-local, live-out that applies; else temp)."""
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.xla.summary import BUFFER_FIELDS, buffer_totals

    assignment = hlo_proto.message_class("BufferAssignmentProto")()
    for size, flags in [(8, {"is_entry_computation_parameter": True, "maybe_live_out": True}),
                        (16, {"is_constant": True}), (32, {"is_thread_local": True}),
                        (64, {"maybe_live_out": True}), (128, {}), (256, {})]:
        assignment.buffer_allocations.add(size=size, **flags)
    assert buffer_totals(assignment) == dict(zip(BUFFER_FIELDS, (6, 504, 8, 64, 384, 16, 32)))
    assert buffer_totals(hlo_proto.message_class("BufferAssignmentProto")()) == dict.fromkeys(BUFFER_FIELDS, 0)


def test_pair_matches_names_then_names_numbered_apart():
    from mlirhlo_driver.core.diff import _unnumbered, pair

    a = ["fusion.28", "loop_add_fusion", "fusion.3", "gemm_fusion_dot.5"]
    b = ["loop_add_fusion", "fusion.19", "fusion.3", "cublas-lt-matmul.2"]
    assert pair(a, b, _unnumbered) == (
        [("loop_add_fusion", "loop_add_fusion"), ("fusion.3", "fusion.3"), ("fusion.28", "fusion.19")],
        ["gemm_fusion_dot.5"], ["cublas-lt-matmul.2"])


# ------------------------------------------------------------------ CUDA

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


def test_python_api_diff():
    import mlirhlo_driver as mh

    program = mh.load(MLP)
    d = program.diff(mh.Target.cpu(), mh.Target.cpu(xla_flags={"xla_disable_hlo_passes": "algsimp"}),
                     stage="hlo")
    assert d["a"]["input"] == MLP and d["b"]["xla_flags"] == {"xla_disable_hlo_passes": "algsimp"}
    assert d["fusions"]["only_a"] and not d["identical"] and d["stage"]["diff"]
    assert program.diff(mh.Target.cpu(), other=program)["identical"]


# ------------------------------------------------------------------ compare, by hand-made sides

def _side(fusions, kernels, memory, spec="a100_sxm_80", stage=None):
    return {"input": "m.hlo", "module": "m", "platform": "cuda",
            "gpu_spec": {"name": spec, "sm": "sm_80", "gpu": "A100"}, "xla_flags": {},
            "fusions": [{"name": n, "kind": k} for n, k in fusions], "kernels": kernels,
            "memory": memory, "buffers": {"total_bytes": memory.get("temp_size_in_bytes", 0)},
            "stage": stage, "stage_name": "ptx" if stage is not None else None}


def _k(name, regs, grid=(4, 1, 1), warps=None):
    row = {"kernel": name, "registers": regs, "grid": list(grid), "block": [128, 1, 1]}
    if warps is not None:
        row["occupancy"] = {"warps_per_sm": warps, "blocks_per_sm": warps // 4, "occupancy": warps / 64,
                            "limiter": "registers"}
    return row


def test_compare_pairs_renumbered_kernels_by_launch_and_counts_what_changed():
    """Every part of the JSON: fusions by name then by name but for numbering (of the same
    kind), kernels by (name, launch) likewise, each changed field with its change."""
    from mlirhlo_driver.core.diff import compare, text

    a = _side([("fusion.1", "kLoop"), ("fusion.2", "kInput"), ("dot.3", "kCustom"), ("old.4", "kLoop")],
              [_k("fusion_1", 32), _k("fusion_1", 32, grid=(8, 1, 1)), _k("loop_add", 16, warps=32),
               _k("gone", 8)],
              {"temp_size_in_bytes": 100, "peak_memory_in_bytes": 500})
    b = _side([("fusion.1", "kLoop"), ("fusion.7", "kInput"), ("dot.3", "kOutput"), ("new.9", "kLoop")],
              [_k("fusion_2", 32), _k("fusion_2", 40, grid=(8, 1, 1)), _k("loop_add", 16, warps=48),
               _k("added", 4)],
              {"temp_size_in_bytes": 60, "peak_memory_in_bytes": 500})
    d = compare(a, b)
    f = d["fusions"]
    assert [x["name"] for x in f["only_a"]] == ["old.4"] and [x["name"] for x in f["only_b"]] == ["new.9"]
    assert f["kind_changed"] == [{"name": "dot.3", "a": "kCustom", "b": "kOutput"}]
    assert f["renumbered"] == [{"a": "fusion.2", "b": "fusion.7"}] and f["both"] == 3
    k = d["kernels"]
    assert k["renumbered"] == [{"a": "fusion_1", "b": "fusion_2", "launch": 0},
                               {"a": "fusion_1", "b": "fusion_2", "launch": 1}]
    assert k["changed"] == [  # names equal on both sides pair first
        {"kernel": "loop_add", "launch": 0,
         "fields": {"blocks_per_sm": {"a": 8, "b": 12, "change": 4}, "warps_per_sm": {"a": 32, "b": 48, "change": 16},
                    "occupancy": {"a": 0.5, "b": 0.75, "change": 0.25}}},
        {"kernel": "fusion_1", "launch": 1, "kernel_b": "fusion_2",
         "fields": {"registers": {"a": 32, "b": 40, "change": 8}}}]
    assert k["unchanged"] == 1 and (k["count_a"], k["count_b"]) == (4, 4)
    assert [x["kernel"] for x in k["only_a"]] == ["gone"] and [x["kernel"] for x in k["only_b"]] == ["added"]
    assert d["memory"] == {"temp_size_in_bytes": {"a": 100, "b": 60, "change": -40},
                           "peak_memory_in_bytes": {"a": 500, "b": 500, "change": 0}}
    assert d["identical"] is False
    filecheck_text = text(d)
    assert "fusions and custom calls: 3 on both sides (1 numbered apart), 1 only in A, 1 only in B, 1 of another kind" \
        in filecheck_text
    assert "  = fusion.2 is fusion.7 in B" in filecheck_text
    assert "kernels: 4 in A, 4 in B; 2 changed, 1 the same (2 numbered apart), 1 only in A, 1 only in B" \
        in filecheck_text
    assert "fusion_1 (launch 2) (B: fusion_2)" in filecheck_text


@pytest.mark.parametrize("change", ["none", "renumbered", "memory", "kernel", "only_b", "kind", "stage"])
def test_compare_is_identical_only_when_renumbering_is_all(change):
    from mlirhlo_driver.core.diff import compare

    fa, fb = [("fusion.1", "kLoop")], [("fusion.1", "kLoop")]
    ka, kb = [_k("k_1", 32)], [_k("k_1", 32)]
    ma, mb = {"temp_size_in_bytes": 10}, {"temp_size_in_bytes": 10}
    sa = sb = None
    if change == "renumbered":
        fb, kb = [("fusion.5", "kLoop")], [_k("k_5", 32)]
    elif change == "memory":
        mb = {"temp_size_in_bytes": 11}
    elif change == "kernel":
        kb = [_k("k_1", 33)]
    elif change == "only_b":
        fb = fb + [("fusion.2", "kInput")]
    elif change == "kind":
        fb = [("fusion.1", "kInput")]
    elif change == "stage":
        sa, sb = "a\n", "b\n"
    d = compare(_side(fa, ka, ma, stage=sa), _side(fb, kb, mb, stage=sb))
    assert d["identical"] is (change in ("none", "renumbered"))


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
    assert "lacks registers_per_block_limit" in notes[1]
    r = cli("diff", hlo, "--platform", "cuda", "--gpu-spec", f"{lacking},{lacking}", "--no-cache")
    assert r.code == 0, r.err
    notes = [ln for ln in r.err.splitlines() if ln.startswith("note:")]
    assert len(notes) == 1 and "lacks registers_per_block_limit" in notes[0], r.err


# ------------------------------------------------------------------ pure parts, exactly

@pytest.mark.parametrize("platform, gpu_spec, names", [
    ("cpu", None, (None, None)), ("cpu", "", (None, None)), ("cuda", None, (None, None)),
    ("cuda", "h100_sxm", ("h100_sxm", "h100_sxm")), ("cuda", " a100_sxm_80 , h100_sxm ", ("a100_sxm_80", "h100_sxm")),
])
def test_spec_names_give_side_a_the_first_spec_and_side_b_the_last(platform, gpu_spec, names):
    """One spec is both sides' spec; two are A's and B's (blanks stripped); none leaves the default to targets."""
    from mlirhlo_driver.commands.mlirhlo import diff_spec_names as _spec_names

    assert _spec_names(platform, gpu_spec) == names


@pytest.mark.parametrize("platform, gpu_spec, message", [
    ("cpu", "h100_sxm", "gpu_spec is for platform='cuda'"),
    ("cuda", "", "gpu_spec='' names an empty spec"),
    ("cuda", "a100_sxm_80,", "gpu_spec='a100_sxm_80,' names an empty spec"),
    ("cuda", "a,b,c", "gpu_spec='a,b,c' names 3 specs: diff compares two"),
])
def test_spec_names_refuse_a_spec_off_cuda_an_empty_one_and_more_than_two(platform, gpu_spec, message):
    """A GPU spec off CUDA, an empty name and a third spec are DriverErrors naming the parameter."""
    from mlirhlo_driver.commands.mlirhlo import diff_spec_names as _spec_names
    from mlirhlo_driver.errors import DriverError, spell

    with pytest.raises(DriverError) as e:
        _spec_names(platform, gpu_spec)
    assert spell(e.value.message) == message


def test_parse_flags_reads_typed_flags_and_nothing_for_none():
    """No flags string is no flags; a flag's value is typed; a stray word or unknown flag is a FlagError."""
    from mlirhlo_driver.commands.mlirhlo import diff_flags as parse_flags
    from mlirhlo_driver.errors import DriverError

    assert parse_flags(None, "flags_a") == {} and parse_flags("", "flags_a") == {}
    assert parse_flags("--xla_gpu_enable_triton_gemm=false --xla_disable_hlo_passes=algsimp", "flags_b") == {
        "xla_gpu_enable_triton_gemm": False, "xla_disable_hlo_passes": "algsimp"}
    for bad, message in [("xla_gpu_enable_triton_gemm=false", "cannot parse flags_b"),
                         ("--xla_gpu_enable_trition_gemm=false", "unknown XLA flag"),
                         ("--xla_gpu_enable_triton_gemm=maybe", "expected true or false")]:
        with pytest.raises(DriverError, match=message):
            parse_flags(bad, "flags_b")


@pytest.mark.parametrize("a, b, change", [
    (1, 3, 2), (3, 1, -2), (5, 5, 0), (0.5, 0.75, 0.25), (0.75, 0.5, -0.25), (1, 0.5, -0.5),
    (0.1, 0.3, 0.2), (0, 1 / 3, 0.3333), (2 / 3, 1, 0.3333), (True, False, None), (1, True, None), (False, 1, None), ([4, 1, 1], [8, 1, 1], None),
    ("registers", "shared", None), (None, 3, None), (3, None, None),
])
def test_change_is_b_minus_a_for_numbers_only(a, b, change):
    """A field's change: B - A for ints and floats (floats rounded to 4 places); None for bools, lists, names, None."""
    from mlirhlo_driver.core.diff import _change

    got = _change(a, b)
    assert got == change and type(got) is type(change)


def test_keyed_kernels_number_each_kernels_launches_from_zero():
    """A kernel launched twice is two rows, (name, 0) and (name, 1), whatever lies between them."""
    from mlirhlo_driver.core.diff import _keyed_kernels

    rows = [{"kernel": "a"}, {"kernel": "b"}, {"kernel": "a"}, {"kernel": "a"}]
    keyed = _keyed_kernels(rows)
    assert list(keyed) == [("a", 0), ("b", 0), ("a", 1), ("a", 2)]
    assert [keyed[k] is r for k, r in zip(keyed, rows)] == [True] * 4


def test_kernel_fields_flatten_occupancy_and_fill_missing_fields_with_none():
    """The compared fields of a kernel row, occupancy's by name; a field the row lacks is None."""
    from mlirhlo_driver.core.diff import KERNEL_FIELDS, _kernel_fields

    row = {"kernel": "k", "registers": 32, "grid": [4, 1, 1], "block": [128, 1, 1], "stack_frame": 0,
           "occupancy": {"blocks_per_sm": 8, "warps_per_sm": 32, "occupancy": 0.5, "limiter": "registers",
                         "other": 1}}
    assert _kernel_fields(row) == {
        "registers": 32, "spill_stores": None, "spill_loads": None, "static_shared_memory": None,
        "dynamic_shared_memory": None, "stack_frame": 0, "grid": [4, 1, 1], "block": [128, 1, 1],
        "blocks_per_sm": 8, "warps_per_sm": 32, "occupancy": 0.5, "limiter": "registers"}
    assert _kernel_fields({"kernel": "k", "occupancy": None}) == dict.fromkeys(KERNEL_FIELDS)


def _text_sides():
    a = _side([("fusion.1", "kLoop"), ("fusion.2", "kInput"), ("dot.3", "kCustom"), ("old_long_name.4", "kLoop")],
              [_k("fusion_1", 32), _k("fusion_1", 32, grid=(8, 2, 1)), _k("loop_add", 16, warps=32),
               _k("gone", 8, warps=16), {**_k("gone", 8), "grid": None}],
              {"temp_size_in_bytes": 100, "peak_memory_in_bytes": 500})
    a["xla_flags"] = {"xla_a": True, "xla_b": 3}
    b = _side([("fusion.1", "kLoop"), ("fusion.7", "kInput"), ("dot.3", "kOutput"), ("new.9", "kLoop")],
              [_k("fusion_2", 32), _k("fusion_2", 40, grid=(8, 2, 3)), _k("loop_add", 16, warps=48),
               {**_k("added", 4), "block": [256, 2, 1]}],
              {"temp_size_in_bytes": 60, "peak_memory_in_bytes": 500}, spec="h100_sxm")
    b["gpu_spec"] = {"name": "h100_sxm", "sm": "sm_90a", "gpu": "H100"}
    return a, b


def test_text_of_a_comparison_exactly():
    """Every section of the text: side lines with flags, fusion and kernel lists padded to one width,
    the changed kernels' table (dims, percentages, signed changes), the memory table, the verdict."""
    from mlirhlo_driver.core.diff import compare, text

    assert text(compare(*_text_sides())) == """\
A: m.hlo on cuda a100_sxm_80 (sm_80, A100) --xla_a=true --xla_b=3
B: m.hlo on cuda h100_sxm (sm_90a, H100)

fusions and custom calls: 3 on both sides (1 numbered apart), 1 only in A, 1 only in B, 1 of another kind
  - old_long_name.4  kLoop
  + new.9            kLoop
  ~ dot.3            kCustom -> kOutput
  = fusion.2 is fusion.7 in B

kernels: 5 in A, 4 in B; 2 changed, 1 the same (2 numbered apart), 2 only in A, 1 only in B
  - gone             8 regs, 4 × 128, 16 warps/SM (25%)
  - gone (launch 2)  8 regs
  + added            4 regs, 4 × 256x2x1

 kernel                              field           A       B   change
 ──────────────────────────────────────────────────────────────────────
 loop_add                            blocks/SM       8      12       +4
                                     warps/SM       32      48      +16
                                     occupancy     50%     75%     +25%
 fusion_1 (launch 2) (B: fusion_2)   registers      32      40       +8
                                     grid        8x2x1   8x2x3

memory (bytes; executable's stats, then buffer assignment)
                 A     B   change
 ────────────────────────────────
 temporaries   100    60      -40
 peak memory   500   500        0
 allocated     100    60      -40

differences found
"""


def test_text_of_cpu_sides_says_stage_sameness_and_no_differences_exactly():
    """CPU sides: no spec in the side lines, no kernels section, a stage equal but for numbering, no differences."""
    from mlirhlo_driver.core.diff import compare, text

    def cpu(input_, flags, stage):
        s = _side([("fusion.3", "kLoop")], None, {"peak_memory_in_bytes": 64}, stage=stage)
        s.update(input=input_, platform="cpu", gpu_spec=None, xla_flags=flags, stage_name="hlo")
        return s

    d = compare(cpu("m.hlo", {}, "%add.4 = add(%p.1)\n"), cpu(None, None, "%add.9 = add(%p.2)\n"))
    assert d["kernels"] is None and d["stage"] == {"name": "hlo", "diff": ""} and d["identical"] is True
    assert text(d) == """\
A: m.hlo on cpu
B: m on cpu

fusions and custom calls: 1 on both sides, 0 only in A, 0 only in B, 0 of another kind

memory (bytes; executable's stats, then buffer assignment)
                A    B   change
 ──────────────────────────────
 peak memory   64   64        0
 allocated      0    0        0

stage hlo: the same, names renumbered

no differences
"""
    d = compare(cpu("m.hlo", {"xla_x": False}, "%add.4 = add(%p.1)\nx\n"), cpu("m.hlo", {}, "%add.9 = add(%p.2)\ny\n"))
    assert d["stage"]["diff"] == "--- A cpu\n+++ B cpu\n@@ -1,2 +1,2 @@\n %add.0 = add(%p.0)\n-x\n+y\n"
    assert text(d).endswith("""\
stage hlo, names renumbered by first appearance:
--- A cpu
+++ B cpu
@@ -1,2 +1,2 @@
 %add.0 = add(%p.0)
-x
+y

differences found
""")
    assert text(d).startswith("A: m.hlo on cpu --xla_x=false\nB: m.hlo on cpu\n\n")


def test_compare_has_kernels_and_a_stage_only_when_both_sides_have_them():
    """A side without kernel rows or stage text leaves that part None (and not a difference)."""
    from mlirhlo_driver.core.diff import compare

    for ka, kb in [(None, [_k("k", 8)]), ([_k("k", 8)], None)]:
        for sa, sb in [(None, "x\n"), ("x\n", None)]:
            d = compare(_side([], ka, {}, stage=sa), _side([], kb, {}, stage=sb))
            assert d["kernels"] is None and d["stage"] is None and d["identical"] is True
    d = compare(_side([], [], {}, stage=""), _side([], [], {}, stage=""))
    assert d["kernels"] == {"only_a": [], "only_b": [], "changed": [], "unchanged": 0, "renumbered": [],
                            "count_a": 0, "count_b": 0}
    assert d["stage"] == {"name": "ptx", "diff": ""} and d["identical"] is True


def test_stage_diff_is_a_unified_diff_with_one_newline_per_line():
    """Labels as the file names, lines after renumbering, every line (headers too) ending in one newline."""
    assert stage_diff("%a.1\nb\nc\n", "%a.7\nb\nd\n", "A x", "B y") == (
        "--- A x\n+++ B y\n@@ -1,3 +1,3 @@\n %a.0\n b\n-c\n+d\n")
    assert stage_diff("same\n", "same\n", "A", "B") == ""


def test_report_compiles_each_side_once_and_reads_sides_back_from_the_cache(tmp_path, monkeypatch):
    """The same compile on both sides is done once; a side in the stage cache is neither parsed nor
    compiled; without the cache it is computed again."""
    from mlirhlo_driver.commands.mlirhlo import diff as report
    from mlirhlo_driver.inputs import loader
    from mlirhlo_driver.xla import backend

    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(tmp_path / "cache"))
    hlo = tmp_path / "add.hlo"
    hlo.write_text("HloModule add\n\nENTRY main {\n  p = f32[8] parameter(0)\n  ROOT a = f32[8] add(p, p)\n}\n")
    calls = []
    real_parse, real_compile = loader.parse_unit, backend.compile_module
    monkeypatch.setattr(loader, "parse_unit", lambda u: calls.append("parse") or real_parse(u))
    monkeypatch.setattr(backend, "compile_module", lambda *a, **k: calls.append("compile") or real_compile(*a, **k))
    first = report(str(hlo), platform="cpu", stage="hlo", as_json=True)
    assert calls == ["parse", "compile"]
    d = json.loads(first)
    assert d["identical"] is True and d["kernels"] is None and d["stage"] == {"name": "hlo", "diff": ""}
    assert d["a"] == d["b"] == {"input": str(hlo), "module": "add", "platform": "cpu", "gpu_spec": None,
                                "xla_flags": {}}
    calls.clear()
    assert report(str(hlo), platform="cpu", stage="hlo", as_json=True) == first and calls == []
    # Side A is the one cached; B, with other flags, is compiled.
    out = report(str(hlo), platform="cpu", stage="hlo", flags_b="--xla_disable_hlo_passes=algsimp")
    assert calls == ["parse", "compile"]
    assert out.startswith(f"A: {hlo} on cpu\nB: {hlo} on cpu --xla_disable_hlo_passes=algsimp\n\n"
                          "fusions and custom calls: 1 on both sides, 0 only in A, 0 only in B, 0 of another kind\n")
    calls.clear()
    out = report(str(hlo), platform="cpu", stage="hlo", cache=False)
    assert calls == ["parse", "compile"]
    assert out.endswith("\nstage hlo: the same, names renumbered\n\nno differences\n")


def test_report_of_a_cuda_side_is_one_compile_with_kernels_and_the_stage_an_alias_names(tmp_path, monkeypatch):
    """A CUDA side: one device-less compile gives the summary, the kernel rows and the stage, named as aliased."""
    from mlirhlo_driver.commands.mlirhlo import diff as report
    from mlirhlo_driver.xla import backend

    hlo = tmp_path / "add.hlo"
    hlo.write_text("HloModule add\n\nENTRY main {\n  p = f32[8] parameter(0)\n  ROOT a = f32[8] add(p, p)\n}\n")
    compiles = []
    real = backend.compile_module
    monkeypatch.setattr(backend, "compile_module", lambda *a, **k: compiles.append(1) or real(*a, **k))
    d = json.loads(report(str(hlo), platform="cuda", gpu_spec="h100_sxm", stage="llvm-after-optimizations",
                          as_json=True, cache=False))
    assert len(compiles) == 1
    assert d["a"]["gpu_spec"]["name"] == "h100_sxm" and d["a"]["gpu_spec"]["sm"] == "sm_90a"
    assert (d["kernels"]["count_a"], d["kernels"]["unchanged"]) == (1, 1)
    assert d["stage"] == {"name": "llvm", "diff": ""} and d["identical"] is True


@pytest.mark.parametrize("platform, stage, message", [
    ("cpu", "vhlo", "stage 'vhlo' is binary: diff shows text stages"),
    ("cuda", "cubin", "stage 'cubin' is binary: diff shows text stages"),
    ("cuda", "triton-passes", "no such file"),  # several parts, joined into one text
    ("cpu", "hlo", "no such file"),
    ("cpu", None, "no such file"),
])
def test_report_refuses_binary_stages_before_reading_the_input(tmp_path, platform, stage, message):
    """A binary stage is refused before the input is read; a text stage (one joined from parts too) is not."""
    from mlirhlo_driver.commands.mlirhlo import diff as report
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError, match=message):
        report(str(tmp_path / "nope.hlo"), platform=platform, stage=stage)


def test_parse_flags_refuses_a_word_that_is_not_an_xla_flag():
    """Unlike XLA_FLAGS, a flags option with a stray option word (not --xla_*) is a mistake, not ignored."""
    from mlirhlo_driver.commands.mlirhlo import diff_flags as parse_flags
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError, match="cannot parse flags_b near '--verbose'"):
        parse_flags("--xla_gpu_enable_triton_gemm=false --verbose", "flags_b")


# ------------------------------------------------------------------ summarize, on a made-up compile

def _artifacts(monkeypatch, files: dict[str, bytes], memory_stats=None, compile_error=None):
    """A made-up compile (XlaArtifacts) holding ``files``."""
    from mlirhlo_driver.xla.backend import XlaArtifacts

    return XlaArtifacts("cuda", "m", files, memory_stats=memory_stats or {}, compile_error=compile_error)


def _hlo_proto(fusion_name: str, sizes: list[int]) -> bytes:
    """An optimized HloProto: one kLoop fusion called ``fusion_name``; temp allocations of ``sizes``."""
    from mlirhlo_driver.ir import hlo_proto

    proto = hlo_proto.message_class("HloProto")()
    comp = proto.hlo_module.computations.add(id=1)
    comp.instructions.add(name=fusion_name, opcode="fusion", fusion_kind="kLoop", called_computation_ids=[2])
    for size in sizes:
        proto.buffer_assignment.buffer_allocations.add(size=size)
    return hlo_proto.encode(proto)


def test_summarize_reads_the_first_optimized_proto_and_every_memory_stat(monkeypatch):
    """The optimized module's proto (the first by name; not the unoptimized one) gives fusions and
    buffers; memory has all six stats, as ints, in order."""
    from mlirhlo_driver.xla.summary import MEMORY_FIELDS, summarize

    art = _artifacts(monkeypatch, {
        "sm_9.0_gpu_after_optimizations.hlo.pb": _hlo_proto("second", [1]),
        "gpu_after_optimizations.hlo.pb": _hlo_proto("loop_add_fusion", [64, 32]),
        "before_optimizations.hlo.pb": _hlo_proto("unoptimized", [9]),
        "gpu_after_optimizations.hlo.pb.txt": b"not a proto"},
        memory_stats={"peak_memory_in_bytes": 96.0, "temp_size_in_bytes": 32, "argument_size_in_bytes": 64,
                      "output_size_in_bytes": 8, "alias_size_in_bytes": 0, "serialized_size_in_bytes": 5,
                      "generated_code_size_in_bytes": 7})
    s = summarize(art)
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.xla.summary import fingerprint

    # The fingerprint is the optimized module's (the first proto), not another's.
    chosen = hlo_proto.decode(_hlo_proto("loop_add_fusion", [64, 32]), "HloProto").hlo_module
    assert s.pop("hlo_fingerprint") == fingerprint(chosen) != fingerprint(
        hlo_proto.decode(_hlo_proto("second", [1]), "HloProto").hlo_module)
    assert s == {"fusions": [{"name": "loop_add_fusion", "opcode": "fusion", "kind": "kLoop"}],
                 "buffers": {"allocations": 2, "total_bytes": 96, "parameter_bytes": 0, "output_bytes": 0,
                             "temp_bytes": 96, "constant_bytes": 0, "thread_local_bytes": 0},
                 "memory": {"peak_memory_in_bytes": 96, "temp_size_in_bytes": 32, "argument_size_in_bytes": 64,
                            "output_size_in_bytes": 8, "alias_size_in_bytes": 0, "generated_code_size_in_bytes": 7}}
    assert list(s["memory"]) == list(MEMORY_FIELDS) and type(s["memory"]["peak_memory_in_bytes"]) is int
    json.dumps(s)  # serializable, for the cache


@pytest.mark.parametrize("compile_error, message", [
    (None, "XLA wrote no optimized HloProto on cuda"),
    ("INTERNAL: ptxas died", "XLA wrote no optimized HloProto on cuda (compile failed: INTERNAL: ptxas died)"),
])
def test_summarize_without_an_optimized_proto_says_so_and_why(monkeypatch, compile_error, message):
    """No optimized proto (the compile failed before it, or XLA did not dump it): a StageError
    naming the platform, and the compile's error when there was one."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.summary import summarize

    art = _artifacts(monkeypatch, {"before_optimizations.hlo.pb": _hlo_proto("f", []),
                             "gpu_after_optimizations.hlo.pb.txt": b""},
               compile_error=compile_error)
    with pytest.raises(StageError) as ei:
        summarize(art)
    assert ei.value.message == message
