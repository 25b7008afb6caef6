"""cuda/kernels.py: the kernel rows (launches from the thunk sequence, ptxas's resources,
occupancy against NVIDIA's formula recomputed here from the documented constants) and
the kernels table.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import REPO, ptx_sections
from tests.cuda.conftest import _ptxas_v

MLP = REPO / "tests" / "data" / "mlp_train_step.before_optimizations.txt"


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


# ------------------------------------------------------------------ kernels

# NVIDIA's occupancy formula (cuda_occupancy.h, cudaOccMaxActiveBlocksPerMultiprocessor),
# written out again from the documented constants, for the two specs checked below:
# registers allocated per warp in units of 256, in 4 register-file partitions; shared
# memory in units of 128 B plus 1 KiB reserved per block on CC 8.x/9.x; 32 resident
# blocks per SM on CC 8.0 and 9.0; A100 SXM 65536 regs, 164 KiB smem, 2048 threads per
# SM; H100 SXM 65536 regs, 228 KiB smem, 2048 threads per SM.
HAND = {"a100": dict(regs=65536, smem=167936, warps=64, blocks=32),
        "h100": dict(regs=65536, smem=233472, warps=64, blocks=32)}


def _hand_occupancy(gpu: dict, threads: int, regs: int, smem_static: int, smem_dynamic: int) -> int:
    warps = -(-threads // 32)
    regs_per_warp = -(-regs * 32 // 256) * 256
    by_regs = (gpu["regs"] // 4 // regs_per_warp) * 4 // warps
    smem = -(-(smem_static + 1024 + smem_dynamic) // 128) * 128
    by_smem = gpu["smem"] // smem
    return min(gpu["warps"] // warps, gpu["blocks"], by_regs, by_smem) * warps


# cuda_occupancy.h and the Programming Guide's "Technical Specifications per Compute
# Capability", per CC: (max resident blocks per SM, register-file sub-partitions,
# shared-memory allocation unit, driver-reserved shared memory per block, max
# registers per thread). Registers are allocated per warp in units of 256 on all.
DOCUMENTED = {(6, 0): (32, 2, 256, 0, 255), (6, 1): (32, 4, 256, 0, 255), (7, 0): (32, 4, 256, 0, 256),
              (7, 5): (16, 4, 256, 0, 256), (8, 0): (32, 4, 128, 1024, 256), (8, 6): (16, 4, 128, 1024, 256),
              (8, 7): (16, 4, 128, 1024, 256), (8, 9): (24, 4, 128, 1024, 256), (9, 0): (32, 4, 128, 1024, 256),
              (10, 0): (32, 4, 128, 1024, 256)}


def _documented_warps(cc, limits, threads, regs, smem):
    blocks, parts, smem_unit, reserved, max_regs = DOCUMENTED[cc]
    warps = -(-threads // 32)
    regs_per_warp = -(-regs * 32 // 256) * 256
    if regs > max_regs or regs_per_warp * (-(-warps // parts) * parts) > limits.regs_per_block:
        return 0
    by_regs = (limits.regs_per_sm // parts // regs_per_warp) * parts // warps if regs_per_warp else blocks
    by_smem = limits.smem_per_sm // (-(-(smem + reserved) // smem_unit) * smem_unit) if smem + reserved else blocks
    return min(limits.max_warps // warps, blocks, by_regs, by_smem) * warps


# ------------------------------------------------------------ kernels: the table by hand

# A thunk sequence with a nested (indented) launch, a launch without a shared_memory
# field, and a repeated launch (the same grid, block and shared memory: one row).
THUNKS = """\
000: kKernel [source] loop_add_fusion grid: [4, 1, 1] threads: [128, 1, 1]  shared_memory: 0 bytes
001: kWhile [source | next=003 (1)] while
  000: kCustomKernel [source | next=004 (2)] reduce grid: [2, 3, 1] threads: [256, 2, 1]  shared_memory: 2048 bytes
002: kKernel [] loop_add_fusion grid: [8, 1, 1] threads: [128, 1, 1]
003: kKernel [] loop_add_fusion grid: [4, 1, 1] threads: [128, 1, 1]  shared_memory: 0 bytes
"""


def _table_inputs():
    from types import SimpleNamespace

    from mlirhlo_driver.cuda.binaries import KernelResources

    resources = {"loop_add_fusion": KernelResources("loop_add_fusion", 16, 0, 0, 0, 0),
                 "reduce": KernelResources("reduce", 64, 24, 8, 4, 4096, 1),
                 "zeta": KernelResources("zeta", 8, 0, 0, 0, 0)}
    from mlirhlo_driver.ir.fusions import FusedOp

    fused = (FusedOp("add.2", "add", None, None), FusedOp("exp.1", "exp", "jit(f)/exp", "m.py:2"))
    hlo = SimpleNamespace(name="reduce.1", op_name="jit(f)/reduce_sum", source="m.py:3", fused=fused)
    return resources, hlo


KERNELS_TABLE = """\
mod on a100_sxm_80 (sm_80, 64 warps/SM)

 kernel            regs   spill st/ld B   smem B   dyn smem B   stack B      grid × block   blocks/SM       warps/SM   limiter     op_name @ source             fused
 ────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────
 loop_add_fusion     16             0/0        0            0         0           4 × 128          16   64/64 (100%)   warps       -                                -
 loop_add_fusion     16             0/0        0            0         0           8 × 128          16   64/64 (100%)   warps       -                                -
 reduce              64             8/4     4096         2048        24   2x3x1 × 256x2x1           2    32/64 (50%)   registers   jit(f)/reduce_sum @ m.py:3       2
 zeta                 8             0/0        0            -         0                 -           -              -   -           -                                -

"""  # noqa: E501

SIDE_BY_SIDE = """\

                                                a100_sxm_80                                                  t4
 kernel            op_name @ source                    regs   spill   smem   grid × block       warps/SM   regs   spill   smem      grid × block       warps/SM
 ──────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────
 loop_add_fusion   -                                     16     0/0      0        4 × 128   64/64 (100%)     16     0/0      0           4 × 128   32/32 (100%)
 loop_add_fusion   -                                     16     0/0      0        8 × 128   64/64 (100%)     16     0/0      0           8 × 128   32/32 (100%)
 zeta              -                                      8     0/0      0              -              -      -       -      -                 -              -
 reduce            jit(f)/reduce_sum @ m.py:3             -       -      -              -              -     64     8/4   6144   2x3x1 × 256x2x1   32/32 (100%)

"""  # noqa: E501


@pytest.mark.parametrize("which", ["a100", "h100"])
@pytest.mark.parametrize("kernel", ["gemm_fusion_dot", "loop_subtract_fusion_1"])
def test_kernel_rows_match_ptxas_thunks_and_occupancy_formula(request, which, kernel, tmp_path):
    from mlirhlo_driver.cuda import tools as cuda_tools
    from mlirhlo_driver.xla import stages as xla_stages

    compiled = request.getfixturevalue(which)
    row = next(r for r in xla_stages.kernel_rows(compiled._stage_request) if r.kernel == kernel)
    # registers/spills/stack as ptxas -v prints them for the kernel's PTX, assembled here
    log = _ptxas_v(ptx_sections(compiled)[row.module], compiled._stage_request.options.gpu_spec.sm, tmp_path)
    block = log[log.index(f"Function properties for {kernel}"):]
    regs = int(re.search(r"Used (\d+) registers", block).group(1))
    stack, st, ld = map(int, re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                                       r"(\d+) bytes spill loads", block).groups())
    assert (row.registers, row.stack_frame, row.spill_stores, row.spill_loads) == (regs, stack, st, ld)
    exe = cuda_tools.find_tool("cuobjdump")
    if exe is not None:  # and the ELF's own record of them
        res = subprocess.run([exe, "-res-usage", str(tmp_path / "k.cubin")], capture_output=True, text=True).stdout
        m = re.search(rf"Function {kernel}:\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", res)
        assert (int(m.group(1)), int(m.group(2)), int(m.group(3))) == (regs, stack, row.static_shared_memory)
    # launch dimensions: the thunk sequence's line for this kernel
    line = re.search(rf"\] {kernel} grid: \[(\d+), (\d+), (\d+)\] threads: \[(\d+), (\d+), (\d+)\]"
                     r"\s+shared_memory: (\d+) bytes", compiled.stage("thunk-sequence"))
    g = [int(x) for x in line.groups()]
    assert row.launch.grid == tuple(g[0:3]) and row.launch.block == tuple(g[3:6])
    assert row.launch.shared_memory == g[6]
    # theoretical occupancy, recomputed by hand
    expected = _hand_occupancy(HAND[which], g[3] * g[4] * g[5], regs, row.static_shared_memory, g[6])
    assert row.warps_per_sm == expected and row.max_warps_per_sm == 64 and row.occupancy == expected / 64


def test_occupancy_limiters():
    """Each limiter bites where the formula says (A100 limits)."""
    from mlirhlo_driver.cuda.kernels import SmLimits, occupancy

    a100 = SmLimits((8, 0), 32, 2048, 1024, 65536, 65536, 167936, 49152, 166912)
    assert occupancy(a100, 256, 32, 0, 0).limiter == "warps"          # 8 blocks x 8 warps
    o = occupancy(a100, 256, 128, 0, 0)                                  # 4096 regs/warp: 4 warps/partition
    assert (o.warps_per_sm, o.limiter) == (16, "registers")
    o = occupancy(a100, 128, 16, 48 * 1024, 0)                           # 49 KiB + 1 KiB per block
    assert (o.blocks_per_sm, o.limiter) == (3, "shared memory")
    assert occupancy(a100, 32, 16, 0, 0).limiter == "blocks"             # 32 blocks of 1 warp
    assert occupancy(a100, 1024, 255, 0, 0).warps_per_sm == 0            # 255 regs x 1024 > 64K
    # Dynamic shared memory past 48 KiB, up to the opt-in size (163 KiB), plus the reserved KiB.
    o = occupancy(a100, 128, 16, 0, 100 * 1024)
    assert (o.blocks_per_sm, o.limiter) == (1, "shared memory")
    assert occupancy(a100, 128, 16, 0, 166912).blocks_per_sm == 1
    o = occupancy(a100, 128, 16, 0, 166912 + 1)
    assert (o.blocks_per_sm, o.limiter) == (0, "shared memory per block")


def test_occupancy_for_every_compute_capability():
    """The per-CC constants, over a sweep of launches that makes each of them bind."""
    from mlirhlo_driver.cuda.kernels import ARCH, SmLimits, occupancy

    assert set(ARCH) == set(DOCUMENTED)
    for cc in DOCUMENTED:
        smem_sm = {(6, 0): 65536, (7, 0): 98304, (7, 5): 65536, (8, 0): 167936, (9, 0): 233472}.get(cc, 102400)
        limits = SmLimits(cc, 32, 2048 if cc != (7, 5) else 1024, 1024, 65536, 65536, smem_sm, 49152, 49152)
        checked = 0
        for threads in (32, 96, 160, 256, 1024):
            for regs in [*range(0, 250, 9), 255, 256, 257]:  # each side of the per-thread maximum
                # whole allocation units too: there a reserved byte more or less changes the count
                for smem in [*range(0, 44000, 1237), *range(4096, 49153, 4096)]:
                    got = occupancy(limits, threads, regs, smem, 0)
                    assert got.warps_per_sm == _documented_warps(cc, limits, threads, regs, smem), \
                        (cc, threads, regs, smem)
                    checked += got.warps_per_sm > 0
        assert checked > 1000, cc


def test_launches_parsed_from_the_thunk_sequence():
    """Each kernel's distinct launches in thunk order, nested thunks included; no shared_memory
    field reads as 0 bytes."""
    from mlirhlo_driver.cuda.kernels import Launch, parse_launches

    assert parse_launches(THUNKS) == {
        "loop_add_fusion": [Launch((4, 1, 1), (128, 1, 1), 0), Launch((8, 1, 1), (128, 1, 1), 0)],
        "reduce": [Launch((2, 3, 1), (256, 2, 1), 2048)]}
    assert Launch((2, 3, 1), (256, 2, 3), 0).threads == 1536
    assert parse_launches("") == {}


def test_kernel_rows_one_per_launch_sorted_with_occupancy_and_source():
    """rows(): a row per (kernel, distinct launch), one without launch for a kernel never
    launched, none for a kernel without figures; sorted by kernel; occupancy per launch."""
    from mlirhlo_driver.cuda import kernels, specs
    from mlirhlo_driver.cuda.kernels import KernelRow, Launch

    resources, hlo = _table_inputs()
    got = kernels.rows([("m2", ["zeta"]), ("m1", ["reduce", "unused", "loop_add_fusion"])], resources, THUNKS,
                       specs.resolve_spec("a100_sxm_80"), {"reduce": hlo})
    occupancy = [(r.blocks_per_sm, r.warps_per_sm, r.max_warps_per_sm, r.limiter) for r in got]
    assert [(r.module, r.kernel, r.launch) for r in got] == [
        ("m1", "loop_add_fusion", Launch((4, 1, 1), (128, 1, 1), 0)),
        ("m1", "loop_add_fusion", Launch((8, 1, 1), (128, 1, 1), 0)),
        ("m1", "reduce", Launch((2, 3, 1), (256, 2, 1), 2048)), ("m2", "zeta", None)]
    # 512 threads x 64 regs: 8 warps a partition, 2 blocks; smem 4096 + 1024 reserved + 2048 dynamic
    assert occupancy == [(16, 64, 64, "warps"), (16, 64, 64, "warps"), (2, 32, 64, "registers"),
                         (None, None, None, None)]
    assert [r.occupancy for r in got] == [1.0, 1.0, 0.5, None]
    assert [r.hlo_instruction for r in got] == [None, None, "reduce.1", None]
    assert [(r.registers, r.grid, r.block, r.dynamic_shared_memory) for r in got[2:]] == [
        (64, (2, 3, 1), (256, 2, 1), 2048), (8, None, None, None)]
    # Flat, so a row goes through JSON and back (the stage cache keeps rows so).
    assert [KernelRow.from_dict(r.to_dict()) for r in got] == got
    assert (got[2].op_name, got[2].source, got[0].op_name, got[0].source) == ("jit(f)/reduce_sum", "m.py:3",
                                                                              None, None)
    assert [kernels.source_text(r) for r in got] == ["-", "-", "jit(f)/reduce_sum @ m.py:3", "-"]
    assert got[2].to_dict() == {
        "kernel": "reduce", "kernel_module": "m1", "registers": 64, "spill_stores": 8, "spill_loads": 4,
        "static_shared_memory": 4096, "stack_frame": 24, "grid": [2, 3, 1], "block": [256, 2, 1],
        "dynamic_shared_memory": 2048,
        "occupancy": {"blocks_per_sm": 2, "warps_per_sm": 32, "max_warps_per_sm": 64, "occupancy": 0.5,
                      "limiter": "registers"},
        "hlo_instruction": "reduce.1", "op_name": "jit(f)/reduce_sum", "source": "m.py:3",
        "fused": [{"name": "add.2", "opcode": "add", "op_name": None, "source": None},
                  {"name": "exp.1", "opcode": "exp", "op_name": "jit(f)/exp", "source": "m.py:2"}]}
    assert got[3].to_dict() == {
        "kernel": "zeta", "kernel_module": "m2", "registers": 8, "spill_stores": 0, "spill_loads": 0,
        "static_shared_memory": 0, "stack_frame": 0, "grid": None, "block": None, "dynamic_shared_memory": None,
        "occupancy": None, "hlo_instruction": None, "op_name": None, "source": None, "fused": []}
    # The launched map is optional.
    assert [r.hlo_instruction for r in kernels.rows([("m", ["reduce"])], resources, THUNKS,
                                                    specs.resolve_spec("t4"))] == [None]


def test_source_text_has_what_the_metadata_has():

    from mlirhlo_driver.cuda.kernels import KernelRow, source_text

    def row(op_name, source):
        return KernelRow("k", "m", 8, 0, 0, 0, 0, op_name=op_name, source=source)

    assert [source_text(row(*x)) for x in (("a/b", "f.py:1"), ("a/b", None), (None, "f.py:1"), (None, None),
                                           ("", ""))] == ["a/b @ f.py:1", "a/b", "f.py:1", "-", "-"]


def test_kernels_table_text_exactly():
    """The kernels stage's table: title with the spec's warps per SM, one line per row, a 1-D
    grid or block written as its one number, '-' where a row has no launch or source."""
    from mlirhlo_driver.cuda import kernels, specs

    resources, hlo = _table_inputs()
    a100 = specs.resolve_spec("a100_sxm_80")
    got = kernels.rows([("m2", ["zeta"]), ("m1", ["reduce", "loop_add_fusion"])], resources, THUNKS, a100,
                       {"reduce": hlo})
    assert kernels.table_text("mod", a100, got) == KERNELS_TABLE


def test_launch_dims_write_trailing_ones_only_when_needed():
    from mlirhlo_driver.cuda.kernels import Launch, _launch_text

    assert _launch_text(Launch((4, 1, 1), (128, 1, 1), 0)) == "4 × 128"
    assert _launch_text(Launch((4, 2, 1), (1, 1, 2), 0)) == "4x2x1 × 1x1x2"
    assert _launch_text(Launch((1, 1, 1), (1, 3, 1), 0)) == "1 × 1x3x1"
    assert _launch_text(None) == "-"


def test_kernels_side_by_side_text_and_json():
    """mlirhlo kernels: a row per (module, kernel, launch index) in first-seen order, a column
    group per spec, '-' cells where a spec has no such row (its JSON null), the source of the
    first spec that has the row; a module column only when there are several modules."""
    from mlirhlo_driver.cuda import kernels, specs

    resources, hlo = _table_inputs()
    a100, t4 = specs.resolve_spec("a100_sxm_80"), specs.resolve_spec("t4")
    rows_a = kernels.rows([("m", ["loop_add_fusion", "zeta"])], resources, THUNKS, a100)
    rows_t = kernels.rows([("m", ["loop_add_fusion", "reduce"])], resources, THUNKS, t4, {"reduce": hlo})
    text, data = kernels.side_by_side([(a100, [("mod", rows_a)]), (t4, [("mod", rows_t)])])
    assert text == SIDE_BY_SIDE
    assert data["gpu_specs"] == [{"name": "a100_sxm_80", "sm": "sm_80", "gpu": "NVIDIA A100-SXM4-80GB"},
                                 {"name": "t4", "sm": "sm_75", "gpu": "Tesla T4"}]
    assert [(k["module"], k["kernel"], k["op_name"], k["source"]) for k in data["kernels"]] == [
        ("mod", "loop_add_fusion", None, None), ("mod", "loop_add_fusion", None, None), ("mod", "zeta", None, None),
        ("mod", "reduce", "jit(f)/reduce_sum", "m.py:3")]
    assert data["kernels"][1]["specs"] == {"a100_sxm_80": rows_a[1].to_dict(), "t4": rows_t[1].to_dict()}
    assert data["kernels"][2]["specs"] == {"a100_sxm_80": rows_a[2].to_dict(), "t4": None}
    assert data["kernels"][3]["specs"] == {"a100_sxm_80": None, "t4": rows_t[2].to_dict()}
    # Two modules: a module column first; a kernel's rows count per module.
    text, data = kernels.side_by_side([(a100, [("one", rows_a[:1]), ("two", rows_a)])])
    lines = text.splitlines()
    assert lines[2].split()[:3] == ["module", "kernel", "op_name"]
    assert [ln.split()[:2] for ln in lines[4:-1]] == [["one", "loop_add_fusion"], ["two", "loop_add_fusion"],
                                                    ["two", "loop_add_fusion"], ["two", "zeta"]]
    assert [k["module"] for k in data["kernels"]] == ["one", "two", "two", "two"]


def test_sm_limits_read_from_the_spec_with_its_defaults():
    """The spec's per-SM limits; a spec without threads_per_warp has 32, one without an
    opt-in shared memory size has the per-block size."""
    from mlirhlo_driver.cuda import kernels, specs
    from mlirhlo_driver.cuda.kernels import SmLimits

    a100 = specs.resolve_spec("a100_sxm_80")
    assert kernels.sm_limits(a100) == SmLimits((8, 0), 32, 2048, 1024, 65536, 65536, 167936, 49152, 166912)
    assert kernels.sm_limits(a100).max_warps == 64
    assert kernels.sm_limits(specs.resolve_spec("t4")) == SmLimits((7, 5), 32, 1024, 1024, 65536, 65536, 65536,
                                                                   49152, 65536)
    text = "\n".join(ln for ln in a100.text.splitlines() if "threads_per_warp" not in ln and "optin" not in ln)
    assert kernels._sm_limits(text, "x.txtpb") == SmLimits((8, 0), 32, 2048, 1024, 65536, 65536, 167936, 49152,
                                                           49152)
    assert SmLimits((8, 0), 16, 2048, 1024, 65536, 65536, 167936, 49152, 49152).max_warps == 128


def test_occupancy_edges_and_its_dict():
    """No constants for the CC: None. The block-size limit is inclusive. A kernel with no
    registers or shared memory (CC 6.0 reserves none) is held by warps or blocks only; ties go
    to warps, then blocks. The ratio and its rounding."""
    from mlirhlo_driver.cuda.kernels import Occupancy, SmLimits, occupancy

    a100 = SmLimits((8, 0), 32, 2048, 1024, 65536, 65536, 167936, 49152, 166912)
    assert occupancy(SmLimits((12, 0), 32, 2048, 1024, 65536, 65536, 167936, 49152, 166912), 128, 16, 0, 0) is None
    assert occupancy(a100, 1024, 16, 0, 0) == Occupancy(2, 64, 64, "warps")
    assert occupancy(a100, 1025, 16, 0, 0) == Occupancy(0, 0, 64, "block too large")
    assert occupancy(a100, 1000, 16, 0, 0) == Occupancy(2, 64, 64, "warps")      # 1000 threads: 32 warps
    assert occupancy(a100, 64, 16, 0, 0) == Occupancy(32, 64, 64, "warps")       # 32 by warps and by blocks
    # Registers: exactly the block's 64K (1024 threads x 64) fits, one more register does not.
    assert occupancy(a100, 1024, 64, 0, 0) == Occupancy(1, 32, 64, "registers")
    assert occupancy(a100, 1024, 65, 0, 0) == Occupancy(0, 0, 64, "registers per block")
    assert occupancy(a100, 32, 256, 0, 0) == Occupancy(8, 8, 64, "registers")
    assert occupancy(a100, 32, 257, 0, 0) == Occupancy(0, 0, 64, "registers per block")
    p100 = SmLimits((6, 0), 32, 2048, 1024, 65536, 65536, 65536, 49152, 49152)
    assert occupancy(p100, 32, 0, 0, 0) == Occupancy(32, 32, 64, "blocks")
    assert occupancy(p100, 256, 0, 0, 0) == Occupancy(8, 64, 64, "warps")
    assert occupancy(p100, 32, 0, 1, 0) == Occupancy(32, 32, 64, "blocks")       # 256 B: 256 blocks by smem
    assert occupancy(p100, 32, 0, 8192, 0) == Occupancy(8, 8, 64, "shared memory")
    assert occupancy(p100, 32, 0, 8192, 1) == Occupancy(7, 7, 64, "shared memory")  # 8448 B
    assert occupancy(p100, 32, 0, 0, 49152) == Occupancy(1, 1, 64, "shared memory")
    assert occupancy(p100, 32, 0, 0, 49153) == Occupancy(0, 0, 64, "shared memory per block")
    o = occupancy(a100, 96, 80, 0, 0)   # 80 x 32 = 2560 regs a warp: 6 warps a partition, 8 blocks of 3
    assert o == Occupancy(8, 24, 64, "registers")
    assert (o.ratio, o.to_dict()) == (0.375, {"blocks_per_sm": 8, "warps_per_sm": 24, "max_warps_per_sm": 64,
                                              "occupancy": 0.375, "limiter": "registers"})
    assert Occupancy(1, 21, 64, "warps").to_dict()["occupancy"] == 0.3281
    assert Occupancy(0, 0, 0, "x").ratio == 0.0


@pytest.mark.parametrize("op_name", ["jit(f)/check:ok:", "jit(f)/transpose[permutation=(1, 0)]",
                                     "jit(f)/mul[/b]"])
def test_kernels_tables_print_op_names_as_written(op_name):
    """An op_name is the user's text, not rich markup nor emoji codes: ':ok:', JAX's
    '[permutation=...]' and a stray '[/b]' stay as written in both tables."""
    from mlirhlo_driver.cuda import kernels, specs

    a100 = specs.resolve_spec("a100_sxm_80")
    row = kernels.KernelRow("k", "m", 1, 0, 0, 0, 0, hlo_instruction="k", op_name=op_name, source="m.py:1:2")
    assert f"{op_name} @ m.py:1:2" in kernels.table_text("mod", a100, [row])
    assert f"{op_name} @ m.py:1:2" in kernels.side_by_side([(a100, [("m", [row])])])[0]


def test_register_limit_per_block_counts_warps_in_whole_sub_partitions():
    """cuda_occupancy.h checks a block's registers with its warps rounded up to the register
    file's sub-partitions: on a (hypothetical) SM with 24K registers a block, 3 warps of 256
    registers a thread need 4 x 8K and do not fit, though 3 x 8K would; with 2 sub-partitions
    (CC 6.0) 1 warp counts as 2."""
    from mlirhlo_driver.cuda.kernels import Occupancy, SmLimits, occupancy

    small = SmLimits((8, 0), 32, 2048, 1024, 65536, 24576, 167936, 49152, 166912)
    assert occupancy(small, 96, 256, 0, 0) == Occupancy(0, 0, 64, "registers per block")
    assert occupancy(small, 96, 192, 0, 0) == Occupancy(2, 6, 64, "registers")   # 4 x 6K = 24K fits
    pascal = SmLimits((6, 0), 32, 2048, 1024, 65536, 8192, 65536, 49152, 49152)
    assert occupancy(pascal, 32, 192, 0, 0) == Occupancy(0, 0, 64, "registers per block")  # 2 x 6K
    assert occupancy(pascal, 32, 96, 0, 0) == Occupancy(20, 20, 64, "registers")   # 2 x 3K; 10 warps a partition
