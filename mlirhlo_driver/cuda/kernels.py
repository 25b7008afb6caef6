"""Per-kernel resources, launch dimensions and theoretical occupancy (``kernels``).

For each kernel of a CUDA compile:
- registers per thread, spill stores/loads and stack frame (local memory), from
  ``ptxas -v`` on XLA's PTX with XLA's options, and static shared memory from the
  kernel's cubin (``cuda_binaries.assemble_many``, ``Assembly.shared_sizes``);
- the launch dimensions XLA chose and the dynamic shared memory it asks for,
  from the thunk sequence (``thunk_sequence.txt``);
- theoretical occupancy on the spec: blocks and warps per SM, computed with
  NVIDIA's occupancy formula (``cuda_occupancy.h``, CUDA 12/13:
  ``cudaOccMaxActiveBlocksPerMultiprocessor``) from the spec's per-SM limits.

Per-SM limits come from the spec (registers per SM/block, shared memory per
SM/block, threads per SM/block, warp size). The constants a spec does not
carry are per compute capability, from ``cuda_occupancy.h`` and the CUDA C++
Programming Guide's table "Technical Specifications per Compute
Capability" (:data:`ARCH`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArchConstants:
    """Occupancy constants a GpuTargetConfigProto does not carry."""

    max_blocks_per_sm: int      # cudaOccMaxBlocksPerMultiprocessor; Programming Guide "Maximum number of resident blocks per SM"
    reg_alloc_unit: int         # cudaOccRegAllocationGranularity: registers are allocated per warp in units of this
    sub_partitions: int         # cudaOccSubPartitionsPerMultiprocessor: register file partitions per SM
    max_regs_per_thread: int    # cudaOccRegAllocationMaxPerThread
    smem_alloc_unit: int        # cudaOccSMemAllocationGranularity, bytes
    reserved_smem_per_block: int  # cudaDevAttrReservedSharedMemoryPerBlock: 1 KiB from CC 8.0 on (driver-reserved)


# Keyed by (major, minor). cuda_occupancy.h: register unit 256 and 4 sub-partitions
# (2 on CC 6.0) for every CC here; shared memory granularity 256 B up to CC 7.x and
# 128 B from CC 8.0; max registers per thread 255 on CC 6.x, 256 from 7.0 (ptxas never
# uses more than 255). Max resident blocks per SM: 6.0 32, 7.0 32, 7.5 16, 8.0 32,
# 8.6 16, 8.7 16, 8.9 24, 9.0 32, 10.0 32 (Programming Guide, and the header's switch).
ARCH: dict[tuple[int, int], ArchConstants] = {
    (6, 0): ArchConstants(32, 256, 2, 255, 256, 0),
    (6, 1): ArchConstants(32, 256, 4, 255, 256, 0),
    (7, 0): ArchConstants(32, 256, 4, 256, 256, 0),
    (7, 5): ArchConstants(16, 256, 4, 256, 256, 0),
    (8, 0): ArchConstants(32, 256, 4, 256, 128, 1024),
    (8, 6): ArchConstants(16, 256, 4, 256, 128, 1024),
    (8, 7): ArchConstants(16, 256, 4, 256, 128, 1024),
    (8, 9): ArchConstants(24, 256, 4, 256, 128, 1024),
    (9, 0): ArchConstants(32, 256, 4, 256, 128, 1024),
    (10, 0): ArchConstants(32, 256, 4, 256, 128, 1024),
}


@dataclass(frozen=True)
class SmLimits:
    """The spec's per-SM and per-block limits (GpuDeviceInfoProto fields)."""

    cc: tuple[int, int]
    warp_size: int
    threads_per_sm: int         # threads_per_core_limit
    threads_per_block: int      # threads_per_block_limit
    regs_per_sm: int            # registers_per_core_limit
    regs_per_block: int         # registers_per_block_limit
    smem_per_sm: int            # shared_memory_per_core
    smem_per_block: int         # shared_memory_per_block
    smem_per_block_optin: int   # shared_memory_per_block_optin

    @property
    def max_warps(self) -> int:
        return self.threads_per_sm // self.warp_size


def sm_limits(spec: Any) -> SmLimits:
    """The occupancy-relevant limits of a gpu_specs.GpuSpec (read from its text)."""
    return _sm_limits(spec.text, str(spec.path))


@functools.lru_cache(maxsize=None)
def _sm_limits(text: str, path: str) -> SmLimits:
    # Once per spec text: the checked parse costs ~10 ms, and every module's table reads it.
    from .specs import parse_textproto

    info = parse_textproto(text, path).message.gpu_device_info
    cc = info.cuda_compute_capability
    return SmLimits(
        cc=(cc.major, cc.minor),
        warp_size=info.threads_per_warp or 32,
        threads_per_sm=info.threads_per_core_limit,
        threads_per_block=info.threads_per_block_limit,
        regs_per_sm=info.registers_per_core_limit,
        regs_per_block=info.registers_per_block_limit,
        smem_per_sm=info.shared_memory_per_core,
        smem_per_block=info.shared_memory_per_block,
        smem_per_block_optin=info.shared_memory_per_block_optin or info.shared_memory_per_block,
    )


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    max_warps: int
    limiter: str                 # "warps", "registers", "shared memory", "blocks", or why none fits

    @property
    def ratio(self) -> float:
        return self.warps_per_sm / self.max_warps if self.max_warps else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"blocks_per_sm": self.blocks_per_sm, "warps_per_sm": self.warps_per_sm,
                "max_warps_per_sm": self.max_warps, "occupancy": round(self.ratio, 4),
                "limiter": self.limiter}


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(limits: SmLimits, block_threads: int, registers: int, static_smem: int,
              dynamic_smem: int) -> Occupancy | None:
    """Theoretical occupancy of one launch, as ``cudaOccMaxActiveBlocksPerMultiprocessor``
    computes it with the default cache/carveout preference (the SM's whole shared
    memory is available) and partitioned global caching off. None when the
    compute capability has no constants in :data:`ARCH`."""
    arch = ARCH.get(limits.cc)
    if arch is None:
        return None
    warps_per_block = -(-block_threads // limits.warp_size)
    if block_threads > limits.threads_per_block:
        return Occupancy(0, 0, limits.max_warps, "block too large")
    by_warps = limits.max_warps // warps_per_block
    by_blocks = arch.max_blocks_per_sm

    # Registers: allocated per warp in units of reg_alloc_unit, per sub-partition.
    regs_per_warp = _round_up(registers * limits.warp_size, arch.reg_alloc_unit)
    regs_per_block = regs_per_warp * warps_per_block
    regs_assumed = regs_per_warp * _round_up(warps_per_block, arch.sub_partitions)  # the hardware's check
    if regs_assumed > limits.regs_per_block or regs_per_block > limits.regs_per_block \
            or registers > arch.max_regs_per_thread:
        return Occupancy(0, 0, limits.max_warps, "registers per block")
    if regs_per_warp:
        warps_per_partition = (limits.regs_per_sm // arch.sub_partitions) // regs_per_warp
        by_regs = warps_per_partition * arch.sub_partitions // warps_per_block
    else:
        by_regs = 1 << 30

    # Shared memory: the driver's reserved KiB counts as static shared memory.
    smem = _round_up(static_smem + arch.reserved_smem_per_block + dynamic_smem, arch.smem_alloc_unit)
    # A block may use up to the opt-in size (dynamic shared memory, once the kernel asks for it).
    block_limit = max(limits.smem_per_block, limits.smem_per_block_optin) + arch.reserved_smem_per_block
    if smem > block_limit:
        return Occupancy(0, 0, limits.max_warps, "shared memory per block")
    by_smem = limits.smem_per_sm // smem if smem else 1 << 30

    limits_by = {"warps": by_warps, "blocks": by_blocks, "registers": by_regs, "shared memory": by_smem}
    blocks = min(limits_by.values())
    limiter = min(limits_by, key=lambda k: (limits_by[k], list(limits_by).index(k)))
    return Occupancy(blocks, blocks * warps_per_block, limits.max_warps, limiter)


# ------------------------------------------------------------------ launches

@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_memory: int  # dynamic shared memory asked for at launch, bytes

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


# e.g. "002: kCustomKernel [source | next=004 (2)] loop_broadcast_fusion grid: [1, 1, 1]
#       threads: [4, 1, 1]  shared_memory: 0 bytes" (XLA's ThunkSequence::ToString; nested
# sequences of while/conditional thunks are indented the same way).
_LAUNCH = re.compile(r"^\s*\d+: k\w+\s+\[[^\]]*\]\s+([\w$.]+) grid: \[(\d+), (\d+), (\d+)\] "
                     r"threads: \[(\d+), (\d+), (\d+)\](?:.*?shared_memory: (\d+) bytes)?", re.M)


def parse_launches(thunk_sequence: str) -> dict[str, list[Launch]]:
    """Kernel name -> its distinct launches, in thunk order."""
    out: dict[str, list[Launch]] = {}
    for m in _LAUNCH.finditer(thunk_sequence):
        g = [int(x) for x in m.groups()[1:7]]
        launch = Launch((g[0], g[1], g[2]), (g[3], g[4], g[5]), int(m.group(8) or 0))
        seen = out.setdefault(m.group(1), [])
        if launch not in seen:
            seen.append(launch)
    return out


# ------------------------------------------------------------------ the table

@dataclass(frozen=True)
class KernelRow:
    """One kernel launch (a kernel XLA never launches directly: one row without a launch).

    Flat, for notebooks and scripts: what ``ptxas -v`` says of the kernel (``registers``,
    ``spill_stores``/``spill_loads`` and ``stack_frame`` in bytes, ``static_shared_memory``
    from its cubin), how XLA launches it (``launch``: grid, block, dynamic shared memory;
    also ``grid``, ``block``, ``dynamic_shared_memory``), the occupancy that gives on the
    spec's GPU (``occupancy`` as a fraction, ``blocks_per_sm``, ``warps_per_sm``,
    ``max_warps_per_sm``, ``limiter``), and the HLO it runs (``hlo_instruction``, that
    fusion root's ``op_name`` and ``source`` ``file:line``, the ops ``fused`` into it).
    """

    kernel: str
    module: str                        # the kernel module (PTX file) it is in
    registers: int
    spill_stores: int                  # bytes
    spill_loads: int                   # bytes
    static_shared_memory: int          # bytes: the cubin's .nv.shared.<kernel> section
    stack_frame: int                   # bytes per thread
    launch: Launch | None = None
    blocks_per_sm: int | None = None
    warps_per_sm: int | None = None
    max_warps_per_sm: int | None = None
    limiter: str | None = None         # "warps", "registers", "shared memory", "blocks", or why none fits
    hlo_instruction: str | None = None  # None: no instruction of the optimized module is named after it
    op_name: str | None = None
    source: str | None = None
    fused: tuple[Any, ...] = ()         # ir.fusions.FusedOp

    @property
    def occupancy(self) -> float | None:
        """Resident warps per SM over the most the SM holds; None without a launch."""
        if self.warps_per_sm is None or not self.max_warps_per_sm:
            return None
        return self.warps_per_sm / self.max_warps_per_sm

    @property
    def grid(self) -> tuple[int, int, int] | None:
        return self.launch.grid if self.launch else None

    @property
    def block(self) -> tuple[int, int, int] | None:
        return self.launch.block if self.launch else None

    @property
    def dynamic_shared_memory(self) -> int | None:
        return self.launch.shared_memory if self.launch else None

    def to_dict(self) -> dict[str, Any]:
        """The row as ``kernels --json`` and ``diff`` write it."""
        occ = None
        if self.warps_per_sm is not None:
            occ = {"blocks_per_sm": self.blocks_per_sm, "warps_per_sm": self.warps_per_sm,
                   "max_warps_per_sm": self.max_warps_per_sm, "occupancy": round(self.occupancy or 0.0, 4),
                   "limiter": self.limiter}
        return {
            "kernel": self.kernel, "kernel_module": self.module,
            "registers": self.registers, "spill_stores": self.spill_stores, "spill_loads": self.spill_loads,
            "static_shared_memory": self.static_shared_memory, "stack_frame": self.stack_frame,
            "grid": list(self.grid) if self.launch else None,
            "block": list(self.block) if self.launch else None,
            "dynamic_shared_memory": self.dynamic_shared_memory,
            "occupancy": occ,
            "hlo_instruction": self.hlo_instruction,
            "op_name": self.op_name, "source": self.source,
            "fused": [f.to_dict() for f in self.fused],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KernelRow:
        """The row :meth:`to_dict` wrote."""
        from ..ir.fusions import FusedOp

        occ = d.get("occupancy") or {}
        launch = None if d.get("grid") is None else Launch(tuple(d["grid"]), tuple(d["block"]),
                                                           d.get("dynamic_shared_memory") or 0)
        return cls(d["kernel"], d["kernel_module"], d["registers"], d["spill_stores"], d["spill_loads"],
                   d["static_shared_memory"], d["stack_frame"], launch, occ.get("blocks_per_sm"),
                   occ.get("warps_per_sm"), occ.get("max_warps_per_sm"), occ.get("limiter"),
                   d.get("hlo_instruction"), d.get("op_name"), d.get("source"),
                   tuple(FusedOp(f["name"], f["opcode"], f.get("op_name"), f.get("source")) for f in d.get("fused", ())))

    def to_record(self) -> dict[str, Any]:
        """One flat dict (records.Rows.to_records): every figure, launch dims as text."""
        return {"kernel": self.kernel, "module": self.module, "registers": self.registers,
                "spill_stores": self.spill_stores, "spill_loads": self.spill_loads,
                "static_shared_memory": self.static_shared_memory, "stack_frame": self.stack_frame,
                "grid": _dims(self.grid) if self.launch else None, "block": _dims(self.block) if self.launch else None,
                "dynamic_shared_memory": self.dynamic_shared_memory, "occupancy": self.occupancy,
                "blocks_per_sm": self.blocks_per_sm, "warps_per_sm": self.warps_per_sm,
                "limiter": self.limiter, "hlo_instruction": self.hlo_instruction, "op_name": self.op_name,
                "source": self.source, "fused": len(self.fused)}


def rows(modules: list[tuple[str, list[str]]], resources: dict[str, Any], thunk_sequence: str,
         spec: Any, launched: dict[str, Any] | None = None) -> list[KernelRow]:
    """One row per (kernel, distinct launch); kernels XLA never launches directly get one row.
    ``modules``: (kernel module, its kernels); ``resources``: kernel -> KernelResources;
    ``launched``: kernel -> the HLO instruction it runs (ir.fusions.by_kernel)."""
    launched = launched or {}
    limits = sm_limits(spec)
    launches = parse_launches(thunk_sequence)
    out = []
    for module_name, kernel_names in modules:
        for name in kernel_names:
            res = resources.get(name)
            if res is None:
                continue
            hlo = launched.get(name)
            for launch in launches.get(name) or [None]:
                occ = None if launch is None else occupancy(
                    limits, launch.threads, res.registers, res.shared, launch.shared_memory)
                out.append(KernelRow(
                    name, module_name, res.registers, res.spill_stores, res.spill_loads, res.shared,
                    res.stack_frame, launch, occ.blocks_per_sm if occ else None,
                    occ.warps_per_sm if occ else None, occ.max_warps if occ else None,
                    occ.limiter if occ else None, hlo.name if hlo else None,
                    hlo.op_name if hlo else None, hlo.source if hlo else None, hlo.fused if hlo else ()))
    out.sort(key=lambda r: r.kernel)
    return out


def _dims(d: Any) -> str:
    return "x".join(str(v) for v in (d if d[1:] != (1, 1) else d[:1]))


def _launch_text(launch: Launch | None) -> str:
    return f"{_dims(launch.grid)} × {_dims(launch.block)}" if launch else "-"


def _occ_text(r: KernelRow) -> str:
    if r.occupancy is None:
        return "-"
    return f"{r.warps_per_sm}/{r.max_warps_per_sm} ({r.occupancy:.0%})"


def _spill_text(r: KernelRow) -> str:
    return f"{r.spill_stores}/{r.spill_loads}"


def source_text(row: KernelRow) -> str:
    """``op_name @ file:line``, what of it the metadata has, or ``-``."""
    return " @ ".join(x for x in (row.op_name, row.source) if x) or "-"


def _render(table: Any) -> str:
    import io

    from rich.console import Console

    buf = io.StringIO()
    # Cells are the user's text (op_names like transpose[permutation=(1, 0)]), not rich markup.
    Console(file=buf, width=1000, no_color=True, highlight=False, emoji=False, markup=False).print(table)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


def table_text(module_name: str, spec: Any, kernel_rows: list[KernelRow]) -> str:
    """The ``kernels`` stage for one (module, spec): a table for people."""
    from rich import box
    from rich.table import Table

    limits = sm_limits(spec)
    t = Table(box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
              title=f"{module_name} on {spec.name} ({spec.sm}, {limits.max_warps} warps/SM)")
    for col, just in (("kernel", "left"), ("regs", "right"), ("spill st/ld B", "right"),
                      ("smem B", "right"), ("dyn smem B", "right"), ("stack B", "right"),
                      ("grid × block", "right"), ("blocks/SM", "right"), ("warps/SM", "right"),
                      ("limiter", "left"), ("op_name @ source", "left"), ("fused", "right")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in kernel_rows:
        t.add_row(r.kernel, str(r.registers), _spill_text(r), str(r.static_shared_memory),
                  str(r.launch.shared_memory) if r.launch else "-", str(r.stack_frame),
                  _launch_text(r.launch), str(r.blocks_per_sm) if r.launch else "-", _occ_text(r),
                  r.limiter if r.launch else "-", source_text(r),
                  str(len(r.fused)) if r.hlo_instruction is not None else "-")
    return _render(t)


# --------------------------------------------------- several specs side by side

def side_by_side(per_spec: list[tuple[Any, list[tuple[str, list[KernelRow]]]]]) -> tuple[str, dict[str, Any]]:
    """Text and JSON for ``mlirhlo kernels``: one row per (module, kernel, launch index),
    a group of columns per spec, so what changes between GPUs shows.

    ``per_spec``: (spec, [(module name, rows)]) in the order the specs were given.
    """
    from rich import box
    from rich.table import Table

    keys: list[tuple[str, str, int]] = []
    cells: dict[tuple[str, str, int], dict[str, KernelRow]] = {}
    for spec, modules in per_spec:
        for module_name, kernel_rows in modules:
            count: dict[str, int] = {}
            for r in kernel_rows:
                i = count[r.kernel] = count.get(r.kernel, -1) + 1
                key = (module_name, r.kernel, i)
                if key not in cells:
                    keys.append(key)
                    cells[key] = {}
                cells[key][spec.name] = r
    several_modules = len({k[0] for k in keys}) > 1
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    if several_modules:
        t.add_column("module")
    t.add_column("kernel")
    t.add_column("op_name @ source")
    for spec, _ in per_spec:
        for i, col in enumerate(("regs", "spill", "smem", "grid × block", "warps/SM")):
            t.add_column(f"{spec.name if i == 0 else ''}\n{col}", justify="right")
    js_rows = []
    for key in keys:
        row = [key[0]] if several_modules else []
        row.append(key[1])
        # The instruction a kernel runs can differ between specs (XLA fuses per GPU):
        # the table shows the first spec's, each spec's JSON its own.
        first = next(r for r in (cells[key].get(s.name) for s, _ in per_spec) if r is not None)
        row.append(source_text(first))
        js = {"module": key[0], "kernel": key[1], "op_name": first.op_name, "source": first.source,
              "specs": {}}
        for spec, _ in per_spec:
            r = cells[key].get(spec.name)
            if r is None:
                row += ["-"] * 5
                js["specs"][spec.name] = None
                continue
            smem = r.static_shared_memory + (r.launch.shared_memory if r.launch else 0)
            row += [str(r.registers), _spill_text(r), str(smem), _launch_text(r.launch), _occ_text(r)]
            js["specs"][spec.name] = r.to_dict()
        t.add_row(*row)
        js_rows.append(js)
    data = {"gpu_specs": [{"name": s.name, "sm": s.sm, "gpu": s.gpu} for s, _ in per_spec],
            "kernels": js_rows}
    return _render(t), data
