"""core/diff.py: two compiles compared (kernels paired by launch after renumbering,
fusions, buffers, a stage's unified diff) and the comparison's text and JSON.
"""

from __future__ import annotations

import pytest

from mlirhlo_driver.core.diff import canonical_names, stage_diff
from tests.conftest import DATA

MLP = str(DATA / "mlp_train_step.before_optimizations.txt")


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


def test_pair_matches_names_then_names_numbered_apart():
    from mlirhlo_driver.core.diff import _unnumbered, pair

    a = ["fusion.28", "loop_add_fusion", "fusion.3", "gemm_fusion_dot.5"]
    b = ["loop_add_fusion", "fusion.19", "fusion.3", "cublas-lt-matmul.2"]
    assert pair(a, b, _unnumbered) == (
        [("loop_add_fusion", "loop_add_fusion"), ("fusion.3", "fusion.3"), ("fusion.28", "fusion.19")],
        ["gemm_fusion_dot.5"], ["cublas-lt-matmul.2"])


@pytest.mark.slow
def test_python_api_diff():
    import mlirhlo_driver as mh

    program = mh.load(MLP)
    d = program.diff(mh.Target.cpu(), mh.Target.cpu(xla_flags={"xla_disable_hlo_passes": "algsimp"}),
                     stage="hlo")
    assert d["a"]["input"] == MLP and d["b"]["xla_flags"] == {"xla_disable_hlo_passes": "algsimp"}
    assert d["fusions"]["only_a"] and not d["identical"] and d["stage"]["diff"]
    assert program.diff(mh.Target.cpu(), other=program)["identical"]


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


@pytest.mark.golden
def test_a_binary_stage_refusal_exactly():
    """Golden: diff asked to show a stage that is not text."""
    from mlirhlo_driver.core.diff import check_stage
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError) as e:
        check_stage("cubin", "cuda")
    assert e.value.format() == ("error: stage 'cubin' is binary: diff shows text stages "
                                "(hlo, buffer-assignment, thunk-sequence, llvm, ptx, sass, kernels, ...)")


def test_stage_diff_is_a_unified_diff_with_one_newline_per_line():
    """Labels as the file names, lines after renumbering, every line (headers too) ending in one newline."""
    assert stage_diff("%a.1\nb\nc\n", "%a.7\nb\nd\n", "A x", "B y") == (
        "--- A x\n+++ B y\n@@ -1,3 +1,3 @@\n %a.0\n b\n-c\n+d\n")
    assert stage_diff("same\n", "same\n", "A", "B") == ""


def test_tpu_rows_are_compared_by_name_on_their_own_fields():
    from mlirhlo_driver.core import diff

    def side(rows):
        return {"fusions": [], "kernels": rows, "memory": {}, "buffers": {}, "platform": "tpu"}

    row = {"name": "fusion.1", "kind": "loop fusion", "cycles": 100, "flops": 1.0, "bytes_accessed": 8.0,
           "bound": "memory", "seconds": 1e-7}
    result = diff.compare(side([row]), side([{**row, "name": "fusion.2", "cycles": 80}]))
    (changed,) = result["kernels"]["changed"]
    assert changed["kernel"] == "fusion.1" and changed["kernel_b"] == "fusion.2"
    assert changed["fields"] == {"cycles": {"a": 100, "b": 80, "change": -20}}
    assert "est. cycles" in diff.text(result)
