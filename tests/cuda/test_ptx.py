"""LLVM IR -> PTX with llvmlite's NVPTX backend (mlirhlo_driver.cuda.ptx)."""

from __future__ import annotations

import glob
import os
import re
import struct
import subprocess
import sys
from fractions import Fraction

import llvmlite.binding as llvm  # noqa: E402  (a pinned dependency: a missing one fails, not skips)
import numpy as np
import pytest

from mlirhlo_driver.cuda import ptx
from mlirhlo_driver.cuda import tools as cuda_tools
from mlirhlo_driver.errors import InputError, ToolchainError
from tests.conftest import assert_mentions

# ------------------------------------------------------------ normalization

def _norm(line: str) -> str:
    return ptx.normalize_llvm_ir(line)


def _double(hex16: str) -> float:
    return struct.unpack(">d", bytes.fromhex(hex16))[0]


def _bits_via_llvmlite(ty: str, width: int, literal: str) -> int:
    """What llvmlite's parser makes of a (classic) literal, as raw bits."""
    mod = llvm.parse_assembly(f"@g = global i{width} bitcast ({ty} {literal} to i{width})")
    m = re.search(rf"@g = global i{width} (-?\d+)", str(mod))
    return int(m.group(1)) % (1 << width)


def _decode(bits: int, ty: str) -> np.floating:
    import ml_dtypes

    dt = {"half": (np.uint16, np.float16), "bfloat": (np.uint16, ml_dtypes.bfloat16),
          "float": (np.uint32, np.float32), "double": (np.uint64, np.float64)}[ty]
    return np.array([bits], dt[0]).view(dt[1])[0]


def _assert_nearest(bits: int, decimal: str, ty: str) -> None:
    """bits hold the value nearest to the decimal (ties to even) among its neighbours."""
    x = Fraction(decimal)
    v = Fraction(float(_decode(bits, ty)))
    for nb in (bits - 1, bits + 1):
        w = _decode(nb, ty)
        if np.isfinite(w):
            d_v, d_w = abs(v - x), abs(Fraction(float(w)) - x)
            assert d_v < d_w or (d_v == d_w and bits % 2 == 0), (decimal, ty, hex(bits))


# (input line, exact expected output)
NORMALIZE_CASES = [
    # f0x raw bits (float) -> 64-bit double hex of the same value
    ("  %17 = fmul float %16, f0x40390000", "  %17 = fmul float %16, 0x4007200000000000"),
    ("  %1 = fadd float %0, f0x7F7FFFFF", "  %1 = fadd float %0, 0x47EFFFFFE0000000"),
    # shortest decimals that are not exact in the type -> hex of the rounded value
    ("  %669 = fmul float %668, 2.885390e+00", "  %669 = fmul float %668, 0x4007154760000000"),
    ("  %2 = fmul float %1, 1.000000e-01", "  %2 = fmul float %1, 0x3FB99999A0000000"),
    ("  %3 = select i1 %c, float %a, float 1.401300e-45", "  %3 = select i1 %c, float %a, float 0x36A0000000000000"),
    ("  %4 = select i1 %c, float %a, float 9.999940e-41", "  %4 = select i1 %c, float %a, float 0x37A16C2000000000"),
    ("  %18 = fmul bfloat %17, 2.890630e+00", "  %18 = fmul bfloat %17, 0xR4039"),
    ("  %5 = select i1 %c, bfloat %a, bfloat 1.000980e-01", "  %5 = select i1 %c, bfloat %a, bfloat 0xR3DCD"),
    ("  %6 = select i1 %c, bfloat %a, bfloat 9.183550e-41", "  %6 = select i1 %c, bfloat %a, bfloat 0xR0001"),
    ("  %7 = select i1 %c, half %a, half 9.997550e-02", "  %7 = select i1 %c, half %a, half 0xH2E66"),
    ("  %8 = select i1 %c, half %a, half 5.960460e-08", "  %8 = select i1 %c, half %a, half 0xH0001"),
    ("  %9 = fmul double %x, 1.000000e-01", "  %9 = fmul double %x, 0x3FB999999999999A"),
    ("  %10 = fmul double %x, 4.940660e-324", "  %10 = fmul double %x, 0x0000000000000001"),
    # infinities and NaNs (payloads exclude the quiet bit)
    ("  %15 = call float @region_0_1_maximum_1_0(float -inf, float %14)",
     "  %15 = call float @region_0_1_maximum_1_0(float 0xFFF0000000000000, float %14)"),
    ("  %11 = select i1 %c, float %a, float +inf", "  %11 = select i1 %c, float %a, float 0x7FF0000000000000"),
    ("  %12 = select i1 %c, float %a, float +qnan", "  %12 = select i1 %c, float %a, float 0x7FF8000000000000"),
    ("  %13 = select i1 %c, float %a, float -qnan", "  %13 = select i1 %c, float %a, float 0xFFF8000000000000"),
    ("  %14 = select i1 %c, float %a, float +nan(0x1)", "  %14 = select i1 %c, float %a, float 0x7FF8000020000000"),
    ("  %15 = select i1 %c, float %a, float +snan(0x200000)",
     "  %15 = select i1 %c, float %a, float 0x7FF4000000000000"),
    ("  %16 = select i1 %c, half %a, half +snan(0x100)", "  %16 = select i1 %c, half %a, half 0xH7D00"),
    ("  %17 = select i1 %c, half %a, half +nan(0x1)", "  %17 = select i1 %c, half %a, half 0xH7E01"),
    ("  %18 = select i1 %c, half %a, half +inf", "  %18 = select i1 %c, half %a, half 0xH7C00"),
    ("  %19 = select i1 %c, bfloat %a, bfloat -inf", "  %19 = select i1 %c, bfloat %a, bfloat 0xRFF80"),
    ("  %20 = select i1 %c, double %a, double +snan(0x4000000000000)",
     "  %20 = select i1 %c, double %a, double 0x7FF4000000000000"),
    ("  %21 = select i1 %c, double %a, double +nan(0x1)", "  %21 = select i1 %c, double %a, double 0x7FF8000000000001"),
    # wide types: LLVM 22 only takes their hex forms
    ("@q = global fp128 f0x3FFF0000000000000000000000000000", "@q = global fp128 0xL00000000000000003FFF000000000000"),
    ("@q = global fp128 1.000000e-01", "@q = global fp128 0xL999999999999999A3FFB999999999999"),
    ("@k = global x86_fp80 +inf", "@k = global x86_fp80 0xK7FFF8000000000000000"),
    ("@k = global x86_fp80 1.000000e-01", "@k = global x86_fp80 0xK3FFBCCCCCCCCCCCCCCCD"),
    # C99 hex floats, rounded to the type (ties to even)
    ("  %22 = fmul double %x, 0x1.8p3", "  %22 = fmul double %x, 0x4028000000000000"),
    ("  %23 = fmul float %x, 0x1.000001p0", "  %23 = fmul float %x, 0x3FF0000000000000"),
    # aggregates, splat, phi: the element type governs
    ("  %24 = fadd <2 x float> %v, <float 2.885390e+00, float -inf>",
     "  %24 = fadd <2 x float> %v, <float 0x4007154760000000, float 0xFFF0000000000000>"),
    ("  %25 = fmul <4 x float> %v, splat (float 1.000000e-01)",
     "  %25 = fmul <4 x float> %v, splat (float 0x3FB99999A0000000)"),
    ("  %26 = phi float [ -inf, %a ], [ %x, %b ]", "  %26 = phi float [ 0xFFF0000000000000, %a ], [ %x, %b ]"),
    ('@arr = constant [2 x half] [half f0x3C00, half +qnan]', '@arr = constant [2 x half] [half 0xH3C00, half 0xH7E00]'),
    ("!7 = !{float 2.885390e+00}", "!7 = !{float 0x4007154760000000}"),
    # alias scope domains with LLVM 23's disjointness flag (jaxlib 0.12's XLA)
    ('!7 = distinct !{!7, i1 false, !"fused_scatter"}', '!7 = distinct !{!7, !"fused_scatter"}'),
    ("!7 = distinct !{!7, i1 true}", "!7 = distinct !{!7}"),
]

UNCHANGED = [
    "  %6 = fadd float %5, 0.000000e+00",                  # exact decimals stay
    "  %18 = tail call float @llvm.fma.f32(float %16, float 5.000000e-01, float -0.000000e+00)",
    "  %7 = fmul ninf nnan float %inf, %nan",              # flags and identifiers
    '  call void @f0x3F800000(ptr @"2.885390e+00")',        # symbol names
    '!2 = !{!"clang version 3.8.0 2.885390e+00 -inf"}',    # metadata strings
    "  %x = fadd float %a, %b ; 2.885390e+00 -inf f0x3F800000",   # comments
    '  %s = call i32 @g(i32 -1, i64 0x10)',                # integers
    '#0 = { "nvvm.reqntid"="128,1,1" "x"="+inf" }',       # attribute strings
    "  %9 = select i1 %c, half %a, half 6.550400e+04",    # exact in half
    "  %10 = fmul double %x, 0x3FB999999999999A",         # classic forms stay
    "  %11 = fmul half %x, 0xH3C00",
    '!8 = distinct !{!8, !7, !"fused_scatter: argument 0"}',   # a scope, not a domain
    '!3 = !{i32 4, !"nvvm-reflect-ftz", i32 0}',
]

# ------------------------------------------------------------------- errors

BAD_IR = """\
target triple = "nvptx64-nvidia-cuda"

define float @f(float %x) {
  %a = fmul float %x, 2.885390e+00
  %c = fadd float f0x40390000, %nope
  ret float %c
}
"""

# jaxlib 0.12's XLA (input_scatter_fusion of the MLP step, trimmed): where its LLVM inlined
# noalias arguments, the scope's domain carries LLVM 23's flag, which LLVM 22's codegen
# verifier rejects ("domain must have one or two operands") unless normalized away.
DOMAIN_FLAG_IR = """\
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @k(ptr noalias %0, ptr noalias readonly %1) {
  %3 = addrspacecast ptr %1 to ptr addrspace(1)
  %4 = addrspacecast ptr %0 to ptr addrspace(1)
  %5 = load i32, ptr addrspace(1) %3, align 4, !alias.scope !2
  store i32 %5, ptr addrspace(1) %4, align 4
  ret void
}

!0 = distinct !{!0, i1 false, !"fused_scatter"}
!1 = distinct !{!1, !0, !"fused_scatter: argument 0"}
!2 = !{!1}
"""

# An overloaded intrinsic (jaxlib 0.12's XLA calls stmatrix with its .p3 suffix): LLVM names
# it without the suffix when it cannot select it, and the error still finds the call.
OVERLOADED_SM90_IR = """\
target triple = "nvptx64-nvidia-cuda"

declare void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3), i32, i32, i32, i32)

define ptx_kernel void @k(ptr addrspace(3) %p, i32 %v) {
  call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %p, i32 %v, i32 %v, i32 %v, i32 %v)
  ret void
}
"""

# ----------------------------------------------------------- print-after-all

SMALL_IR = """\
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define internal float @sq(float %x) {
  %y = fmul float %x, %x
  ret float %y
}

define ptx_kernel void @k(ptr noalias %p) {
  %a = load float, ptr %p, align 4
  %b = call float @sq(float %a)
  %c = fadd float %b, 2.885390e+00
  store float %c, ptr %p, align 4
  ret void
}
"""

# --------------------------------------------------- end to end against XLA

SPEC_A100 = """\
gpu_device_info {
  cuda_compute_capability { major: 8 minor: 0 }
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 167936
  shared_memory_per_block_optin: 166912
  threads_per_core_limit: 2048
  core_count: 108
  fpus_per_core: 64
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 1935000000000
  l2_cache_size: 41943040
  clock_rate_ghz: 1.41
  device_memory_size: 85899345920
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 1 patch: 0 }
device_description_str: "NVIDIA A100 80GB PCIe"
"""

# XLA's arch name for each spec: compute capability 9.0 is compiled for sm_90a.
SPECS = {
    "sm_80": SPEC_A100,
    "sm_90a": SPEC_A100.replace("cuda_compute_capability { major: 8 minor: 0 }",
                                "cuda_compute_capability { major: 9 minor: 0 }"),
}


def _functions(jax, jnp):
    # Explicit f32: an earlier test in the process may have enabled x64 (jax_enable_x64).
    return {
        "matmul_tanh": (lambda x, w: jnp.tanh(x @ w).sum(0),
                        (jnp.ones((8, 128), jnp.float32), jnp.ones((128, 64), jnp.float32))),
        "reduction": (lambda x: jnp.max(x, axis=1) + jnp.sum(x * x, axis=0)[:16],
                      (jnp.ones((16, 256), jnp.float32),)),
        "softmax": (lambda x: jax.nn.softmax(x, axis=-1), (jnp.ones((32, 1000), jnp.float32),)),
        "elementwise_f16_bf16": (
            lambda a, b: jnp.where(
                a > 0,
                (jnp.exp(a.astype(jnp.float32)) + jnp.log(b.astype(jnp.float32)))
                .astype(jnp.bfloat16) * 2.885390,
                jnp.bfloat16(jnp.nan)).astype(jnp.float16) * jnp.float16(0.1),
            (jnp.ones((1024,), jnp.float16), jnp.ones((1024,), jnp.bfloat16))),
        "scatter_add": (lambda x, i, u: x.at[i].add(u),
                        (jnp.zeros((100, 8), jnp.float32), jnp.zeros((20,), jnp.int32), jnp.ones((20, 8), jnp.float32))),
    }


@pytest.fixture(scope="module")
def xla_dumps(tmp_path_factory):
    """{arch: [dump dir per function]}, compiled device-less by XLA."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import specs as gpu_specs

    jax = _jaxlib.jax()
    import jax.numpy as jnp
    from jaxlib.mlir import ir

    out: dict[str, list[str]] = {}
    for arch, spec in SPECS.items():
        devices = _jaxlib.cuda_compile_only_devices(gpu_specs.target_config_for_installed_xla(spec))  # the plugin is pinned: no skip
        out[arch] = []
        for name, (fn, args) in _functions(jax, jnp).items():
            text = jax.jit(fn).lower(*args).as_text()
            with _jaxlib.ir_context():
                module = ir.Module.parse(text)
            d = str(tmp_path_factory.mktemp(f"{arch}-{name}"))
            # 0.12's XLA writes LLVM IR and PTX only for the emitters the flags name.
            opts = _jaxlib.compile_options(dump_to=d, env_overrides=[
                ("xla_gpu_autotune_level", 0), *_jaxlib.codegen_dump_flags().items()])
            _jaxlib.compile_executable(module, devices, opts)
            out[arch].append(d)
    return out


def _canon(text: str) -> list[str]:
    """PTX modulo comments and whitespace."""
    lines = []
    for line in text.splitlines():
        line = line.split("//", 1)[0].strip()
        if line:
            lines.append(" ".join(line.split()))
    return lines


_FLOAT_IMM = re.compile(r"\b0[fd][0-9A-F]{8,16}\b")

_MEM_OP = re.compile(r"^(?:ld|st|atom|red|bar|shfl|cp)\.\S*")

_SPECIAL_OP = re.compile(r"\b(?:ex2|lg2|rcp|sqrt|rsqrt|tanh|sin|cos)(?:\.\w+)+")


def _isa_version(text: str) -> tuple[int, ...]:
    m = re.search(r"^\.version (\d+)\.(\d+)", text, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else ()


def _facets(text: str) -> dict[str, list[str]]:
    """What a PTX file's kernels must keep through our reading of XLA's LLVM IR, whatever
    LLVM emits them: declarations and signatures, float constants, memory and atomic
    operations, special-function instructions. A newer NVPTX backend spells some of these
    differently, not differently in meaning: ``ld.param::entry`` (PTX ISA 8.3+) for
    ``ld.param``, and atomics' default ``.relaxed.sys`` written out."""
    lines = _canon(text)
    decls = [ln for ln in lines
             if re.match(r"\.(?:visible|entry|param|global|shared|extern|const|maxntid|reqntid)\b", ln)]
    mem = sorted(re.sub(r"::entry\b|\.relaxed\.sys\b", "", m.group(0).rstrip(";"))
                 for ln in lines if (m := _MEM_OP.match(ln)))
    return {"decls": decls, "float constants": sorted(set(_FLOAT_IMM.findall(text))),
            "memory ops": mem, "special ops": sorted(set(_SPECIAL_OP.findall(text)))}


_KERNEL_DEF = re.compile(r"^define\b[^@\n]*\bptx_kernel\b[^@\n]*@\"?([\w.$-]+)", re.M)

_ENTRY = re.compile(r"\.entry (\w+)\(")


def _pairs(d: str):
    """(ll path, kind, XLA's ptx text) for every .ll whose kernels XLA emitted as PTX.

    XLA may compile a module's LLVM modules in parallel, so dump numbers do
    not reliably pair files; a .ll is paired with the .ptx that has exactly
    the kernels the .ll defines (kernel names are unique per executable).
    """
    by_kernels = {}
    for p in glob.glob(os.path.join(d, "*.ptx")):
        with open(p) as fh:
            text = fh.read()
        if _ENTRY.search(text):
            by_kernels[frozenset(_ENTRY.findall(text))] = text
    for ll in sorted(glob.glob(os.path.join(d, "*.ll"))):
        m = re.search(r"\.ir-(no|with)-opt\.ll$", ll)
        with open(ll) as fh:
            kernels = frozenset(_KERNEL_DEF.findall(fh.read()))
        if m and kernels and kernels in by_kernels:
            yield ll, m.group(1), by_kernels[kernels]


# ---------------------------------------------------------- ptxas, per spec

def _shipped_specs():
    from mlirhlo_driver.cuda import specs as gpu_specs

    return gpu_specs.list_specs()


# ------------------------------------------------- rounding and range limits

# (input, exact output): each side of the limits where a literal is still a finite,
# nonzero value of its type (else it is left for llvmlite to reject, located), and of
# the ties that round to even.
BOUNDARY_CASES = [
    # ties: to the even neighbour, up from an odd one and down to an even one
    ("float 0x1.000003p0", "float 0x3FF0000040000000"),
    ("float 0x1.000005p0", "float 0x3FF0000040000000"),
    ("float 0x1.000001p0", "float 0x3FF0000000000000"),
    ("double -0x1.8p-1", "double 0xBFE8000000000000"),
    ("double 0x.8p1", "double 0x3FF0000000000000"),
    # the largest float, and what rounds to infinity (kept)
    ("float 0x1p127", "float 0x47E0000000000000"),
    ("float 0x1.fffffep127", "float 0x47EFFFFFE0000000"),
    ("float 0x1.fffffefp127", "float 0x47EFFFFFE0000000"),
    ("float 0x1.ffffffp127", "float 0x1.ffffffp127"),
    ("float 0x1p128", "float 0x1p128"),
    ("float 3.402823e+38", "float 0x47EFFFFFA0000000"),
    ("float 3.402824e+38", "float 3.402824e+38"),
    ("half 6.551900e+04", "half 0xH7BFF"),
    ("half 6.552000e+04", "half 6.552000e+04"),
    # the smallest subnormal, the normal/subnormal border, and what rounds to zero (kept)
    ("float 0x1p-149", "float 0x36A0000000000000"),
    ("float 0x1.0000001p-150", "float 0x36A0000000000000"),
    ("float 0x1p-150", "float 0x1p-150"),
    ("float 1.000000e-50", "float 1.000000e-50"),
    ("float 0x1p-126", "float 0x3810000000000000"),
    ("float 0x1.fffffcp-127", "float 0x380FFFFFC0000000"),
    ("half 2.980233e-08", "half 0xH0001"),
    ("half 2.980232e-08", "half 2.980232e-08"),
    ("half 6.103515e-05", "half 0xH0400"),
    ("half 1.000980e+00", "half 0xH3C01"),
    ("half 5.9604644775390625e-08", "half 5.9604644775390625e-08"),   # exactly the smallest subnormal
    ("bfloat 1.003910e+00", "bfloat 0xR3F81"),
    ("bfloat 1.000000e+00", "bfloat 1.000000e+00"),
    # hex floats without digits are not numbers: kept
    ("float 0x.p1", "float 0x.p1"),
    ("float 0xp1", "float 0xp1"),
    # NaN payloads: the largest that fits beside the quiet bit; one more, or an sNaN without one, is kept
    ("float +nan(0x3FFFFF)", "float 0x7FFFFFFFE0000000"),
    ("float +nan(0x400000)", "float +nan(0x400000)"),
    ("float -nan(5)", "float 0xFFF80000A0000000"),
    ("float +snan(0x1)", "float 0x7FF0000020000000"),
    ("float +snan(0x0)", "float +snan(0x0)"),
    ("half +nan(0x1FF)", "half 0xH7FFF"),
    ("half +nan(0x200)", "half +nan(0x200)"),
    ("bfloat +snan", "bfloat 0xR7FA0"),
    ("bfloat +qnan", "bfloat 0xR7FC0"),
    # the wide types' specials: x87 keeps its integer bit, fp128 is low half first
    ("x86_fp80 -inf", "x86_fp80 0xKFFFF8000000000000000"),
    ("x86_fp80 +nan(0x1)", "x86_fp80 0xK7FFFC000000000000001"),
    ("x86_fp80 +snan", "x86_fp80 0xK7FFFA000000000000000"),
    ("fp128 +inf", "fp128 0xL00000000000000007FFF000000000000"),
    ("fp128 -qnan", "fp128 0xL0000000000000000FFFF800000000000"),
    ("fp128 +snan(0x1)", "fp128 0xL00000000000000017FFF000000000000"),
    # wide types take no decimals at all, exact ones included
    ("fp128 1.000000e+00", "fp128 0xL00000000000000003FFF000000000000"),
    ("x86_fp80 1.000000e+00", "x86_fp80 0xK3FFF8000000000000000"),
    # raw bits: every bit of the type's width, and no more (kept)
    ("float f0xFFFFFFFF", "float 0xFFFFFFFFE0000000"),
    ("float f0x100000000", "float f0x100000000"),
    ("half f0xFFFF", "half 0xHFFFF"),
    ("half f0x10000", "half f0x10000"),
    ("bfloat f0x8000", "bfloat 0xR8000"),
    ("double f0xFFF0000000000000", "double 0xFFF0000000000000"),
    ("double f0x10000000000000000", "double f0x10000000000000000"),
    ("x86_fp80 f0x3FFF8000000000000000", "x86_fp80 0xK3FFF8000000000000000"),
    # the type in force is the last type word: integers and ppc_fp128 end a float's reach
    ("ppc_fp128 1.000000e-01", "ppc_fp128 1.000000e-01"),
    ("float 1.000000e-01, i32 1.000000e-01", "float 0x3FB99999A0000000, i32 1.000000e-01"),
    ("i64 1.000000e-01, double 1.000000e-01", "i64 1.000000e-01, double 0x3FB999999999999A"),
    ("double 1.000000e-01, ppc_fp128 1.000000e-01", "double 0x3FB999999999999A, ppc_fp128 1.000000e-01"),
]


def _nv_ir(names: list[str]) -> str:
    decls = "".join(f"declare float @{n}(float)\n" for n in names)
    calls = "".join(f"  %v{i} = call float @{n}(float %x)\n" for i, n in enumerate(names))
    return ('target triple = "nvptx64-nvidia-cuda"\n' + decls
            + "define float @f(float %x) {\n" + calls + f"  ret float %v{len(names) - 1}\n}}\n")


# ------------------------------------------------------------ ptxas, faked

class _FakePtxas:
    path, version_str = "/fake/ptxas", "12.9"

    def __init__(self, missing: str | None = None):
        self.missing = missing

    def require(self, sm, gpu=None):
        if self.missing:
            raise ToolchainError(self.missing)

    def describe(self):
        return f"ptxas {self.version_str} ({self.path}, fake)"


def _fake_run(monkeypatch, output: bytes = b"", returncode: int = 0, error: OSError | None = None):
    """Replace ptxas by a fake one; returns the argument lists it was started with."""
    calls: list[list[str]] = []

    class FakePopen:
        def __init__(self, args, **kwargs):
            if error is not None:
                raise error
            calls.append(args)
            self.args, self.returncode = args, returncode

        def communicate(self):
            return output, None

    monkeypatch.setattr(cuda_tools, "ptxas", lambda *a, **k: _FakePtxas())
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    return calls


# ----------------------------------------------------- joined modules, API

JOINED = ("; ----- a -----\ndefine void @f() {\n  ret void\n}\n"
          "; ----- b -----\ndefine void @g() {\n  ret void\n}\n")


@pytest.mark.parametrize("line,expected", NORMALIZE_CASES)
def test_normalize_exact_output(line, expected):
    assert _norm(line) == expected


@pytest.mark.parametrize("line", UNCHANGED)
def test_normalize_leaves_alone(line):
    assert _norm(line) == line


@pytest.mark.parametrize("ty,decimal,expected", [
    ("float", "2.885390e+00", "0x4007154760000000"),
    ("float", "1.000000e-01", "0x3FB99999A0000000"),
    ("float", "1.401300e-45", "0x36A0000000000000"),
    ("float", "9.999940e-41", "0x37A16C2000000000"),
    ("float", "5.724980e-03", None),
    ("float", "3.402823e+38", None),
    ("float", "1.999999990e+00", "0x4000000000000000"),   # rounds up into the next binade
    ("float", "-1.999999990e+00", "0xC000000000000000"),
    ("double", "1.000000e-01", "0x3FB999999999999A"),
])
def test_decimal_rounding_is_bit_exact(ty, decimal, expected):
    out = _norm(f"{ty} {decimal}").split()[1]
    if expected is not None:
        assert out == expected
    assert re.fullmatch(r"0x[0-9A-F]{16}", out)
    d = _double(out[2:])
    if ty == "float":
        # the double holds a float exactly: struct-pack round trip is lossless
        (f,) = struct.unpack("<f", struct.pack("<f", d))
        assert f == d
        bits = struct.unpack("<I", struct.pack("<f", d))[0]
    else:
        bits = struct.unpack("<Q", struct.pack("<d", d))[0]
    _assert_nearest(bits, decimal, ty)
    # and llvmlite's own parser reads exactly those bits
    width = 32 if ty == "float" else 64
    assert _bits_via_llvmlite(ty, width, out) == bits


@pytest.mark.parametrize("ty,width,new,bits", [
    ("float", 32, "f0x40390000", 0x40390000),
    ("float", 32, "f0x7F7FFFFF", 0x7F7FFFFF),
    ("float", 32, "-inf", 0xFF800000),
    ("float", 32, "+nan(0x1)", 0x7FC00001),
    ("float", 32, "+snan(0x200000)", 0x7FA00000),
    ("float", 32, "-qnan", 0xFFC00000),
    ("half", 16, "+snan(0x100)", 0x7D00),
    ("half", 16, "9.997550e-02", 0x2E66),
    ("bfloat", 16, "2.890630e+00", 0x4039),
    ("bfloat", 16, "+nan(0x1)", 0x7FC1),
    ("double", 64, "+snan(0x4000000000000)", 0x7FF4000000000000),
    ("double", 64, "f0x3FF0000000000001", 0x3FF0000000000001),
    ("fp128", 128, "1.000000e-01", 0x3FFB999999999999999999999999999A),
    ("x86_fp80", 80, "-qnan", 0xFFFFC000000000000000),
    # sNaN without a payload: APFloat's default, the quiet bit's neighbour
    ("float", 32, "+snan", 0x7FA00000),
    ("half", 16, "-snan", 0xFD00),
    ("double", 64, "+snan", 0x7FF4000000000000),
    # raw subnormals and signed zeros, carried into the double form exactly
    ("float", 32, "f0x00000001", 0x00000001),
    ("float", 32, "f0x80400000", 0x80400000),
    ("float", 32, "f0x80000000", 0x80000000),
    ("half", 16, "f0x0001", 0x0001),
])
def test_special_and_raw_forms_are_bit_exact(ty, width, new, bits):
    classic = _norm(f"{ty} {new}").split()[1]
    assert _bits_via_llvmlite(ty, width, classic) == bits
    if ty == "float" and not (new.endswith("inf") or "nan" in new):
        assert struct.unpack(">I", struct.pack(">f", _double(classic[2:])))[0] == bits


def test_normalize_preserves_lines():
    text = "\n".join(line for line, _ in NORMALIZE_CASES) + "\n"
    out = ptx.normalize_llvm_ir(text)
    assert out.count("\n") == text.count("\n")
    assert out.splitlines() == [exp for _, exp in NORMALIZE_CASES]


def test_parse_error_maps_to_original_line_and_col():
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(BAD_IR, "sm_80", filename="k.ll")
    e = ei.value
    assert (e.file, e.line, e.col) == ("k.ll", 5, 32)
    assert BAD_IR.splitlines()[4][e.col - 1:].startswith("%nope")
    assert_mentions(e.message, "'%nope'")


@pytest.mark.golden
def test_llvm_parse_error_line_exactly():
    """A parse error is LLVM's words, at the line and column of the text as given."""
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(BAD_IR, "sm_80", filename="k.ll")
    assert ei.value.format() == "error: k.ll:5:32: use of undefined value '%nope'"


def test_error_columns_after_and_inside_rewritten_literals():
    src = ("define void @f(float %x, ptr %p) {\n"
           "  store float -inf, ptr %p, align 3\n"
           "  ret void\n}\n")
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(src, "sm_80")
    assert (ei.value.line, ei.value.col) == (2, 35)
    assert_mentions(ei.value.message, "alignment", "power of two")
    # a column that falls inside a rewritten literal maps to the literal's start
    line = "  %a = fadd float %x, 2.885390e+00, !x"
    normalized, edits = ptx._normalize(line)
    start = normalized.index("0x4007154760000000") + 1
    for col in range(start, start + 18):
        assert ptx._map_col(edits, 1, col) == line.index("2.885390e+00") + 1
    assert ptx._map_col(edits, 1, normalized.index("!x") + 1) == line.index("!x") + 1
    assert ptx._map_col(edits, 1, 3) == 3


@pytest.mark.parametrize("optimize", [False, True])
def test_alias_scope_domain_flag_compiles(optimize):
    out = ptx.compile_to_ptx(DOMAIN_FLAG_IR, "sm_90a", optimize=optimize)
    assert ".entry k(" in out and "ld.global" in out


@pytest.mark.parametrize("spelling", [86, "86", "8.6", " +ptx86 ", "PTX86", "ptx8.6"])
def test_every_ptx_version_spelling_reaches_the_ptx_header(spelling):
    out = ptx.compile_to_ptx(DOMAIN_FLAG_IR, "sm_80", ptx_version=spelling, assemble=False)
    assert re.search(r"^\.version (\S+)", out, re.M).group(1) == "8.6"


def test_a_ptx_version_llvm_lacks_or_below_the_arch_is_refused():
    for bad in ("8.9", "89", "ptx", "x", 0):
        with pytest.raises(InputError) as ei:
            ptx.compile_to_ptx(DOMAIN_FLAG_IR, "sm_80", ptx_version=bad)
        assert_mentions(ei.value.message, "PTX ISA", f"'{bad}'")
        assert_mentions(ei.value.hint, "3.2, 4.0, 4.1,", ", 8.8, 9.0")
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(DOMAIN_FLAG_IR, "sm_90a", ptx_version="7.8")
    assert_mentions(ei.value.message, "sm_90a", "8.0", "7.8")
    # The lowest the arch takes is taken.
    out = ptx.compile_to_ptx(DOMAIN_FLAG_IR, "sm_90a", ptx_version=80, assemble=False)
    assert re.search(r"^\.version (\S+)", out, re.M).group(1) == "8.0"


def test_every_llvm_opt_level_and_no_other():
    for level in (0, 1, 2, 3):
        assert ".entry k(" in ptx.compile_to_ptx(DOMAIN_FLAG_IR, "sm_90a", opt_level=level, assemble=False)
    for level in (-1, 4):
        with pytest.raises(InputError) as ei:
            ptx.compile_to_ptx(DOMAIN_FLAG_IR, "sm_90a", opt_level=level)
        assert_mentions(ei.value.message, "opt_level", "0, 1, 2 or 3", f"got {level}")


@pytest.mark.golden
@pytest.mark.parametrize("arch, options, message, hint", [
    ("sm_9", {}, "unsupported NVPTX arch 'sm_9' (supported: {archs})", "did you mean 'sm_90', 'sm_89', 'sm_90a'?"),
    ("sm_80", {"ptx_version": "8.9"}, "unsupported PTX ISA version '8.9'",
     "supported: 3.2, 4.0, 4.1, 4.2, 4.3, 5.0, 6.0, 6.1, 6.2, 6.3, 6.5, 7.0, 7.1, 7.2, 7.3, 7.4, 7.5, 7.6, 7.7, "
     "7.8, 8.0, 8.1, 8.2, 8.3, 8.4, 8.5, 8.6, 8.7, 8.8, 9.0"),
    ("sm_90a", {"ptx_version": "7.8"}, "sm_90a needs PTX ISA 8.0 or newer, got 7.8", None),
    ("sm_90a", {"opt_level": 4}, "opt_level must be 0, 1, 2 or 3, got 4", None),
], ids=["arch", "isa", "isa-below-arch", "opt-level"])
def test_ptx_target_refusals_exactly(arch, options, message, hint):
    """compile_to_ptx's refusals of the target it is asked for, word for word (the supported
    archs are LLVM's, listed in its order)."""
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(DOMAIN_FLAG_IR, arch, **options)
    assert (ei.value.message, ei.value.hint) == (message.format(archs=", ".join(ptx.supported_archs())), hint)


def test_missing_overloaded_intrinsic_is_located():
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(OVERLOADED_SM90_IR, "sm_80", filename="k.ll")
    assert (ei.value.file, ei.value.line, ei.value.col) == ("k.ll", 6, 13)
    assert_mentions(ei.value.message, "llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16", "sm_80")
    assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx.compile_to_ptx(OVERLOADED_SM90_IR, "sm_90a")


@pytest.mark.parametrize("arch,target", [
    ("9.0", "sm_90"), ("90", "sm_90"), ("sm_90", "sm_90"), ("sm_90a", "sm_90a"),
    ("9.0a", "sm_90a"), ("8.0", "sm_80"), ("sm_80", "sm_80"), ("10.0a", "sm_100a"),
])
def test_arch_forms(arch, target):
    out = ptx.compile_to_ptx('target triple = "nvptx64-nvidia-cuda"\n'
                             "define ptx_kernel void @k() {\n  ret void\n}\n", arch)
    assert re.search(r"^\.target (\S+)", out, re.M).group(1) == target
    assert re.search(r"^\.version (\S+)", out, re.M).group(1) == "8.8"
    assert ".entry k(" in out


@pytest.mark.parametrize("arch", ["sm_99", "9", "gfx90a", "sm_90x", "7.7"])
def test_unknown_arch(arch):
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx("", arch)
    assert "sm_80" in ei.value.message and "sm_90a" in ei.value.message
    if arch == "sm_99":
        assert ei.value.hint.startswith("did you mean") and "'sm_90'" in ei.value.hint


def test_supported_archs():
    archs = ptx.supported_archs()
    assert {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120"} <= set(archs)
    assert all(re.fullmatch(r"sm_\d+[af]?", a) for a in archs)


def test_import_is_cheap():
    code = ("import sys, mlirhlo_driver.cuda.ptx; "
            "bad = [m for m in ('llvmlite', 'jax', 'jaxlib') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_print_after_all(capfd):
    calls: list[tuple[str, str]] = []
    out = ptx.compile_to_ptx(SMALL_IR, "sm_80", print_after_all=lambda n, t: calls.append((n, t)))
    names = [n for n, _ in calls]
    assert len(calls) > 20
    assert {"InstCombinePass", "InlinerPass", "NVVMReflectPass"} <= set(names)
    assert all(t.startswith(f"; *** IR Dump After {n} on ") for n, t in calls)
    assert "@sq" in calls[0][1]                 # before inlining
    assert "0x4007154760000000" in calls[0][1]   # the normalized constant
    # same PTX as without the callback, and the option does not stick
    assert ptx.compile_to_ptx(SMALL_IR, "sm_80") == out
    assert "IR Dump" not in capfd.readouterr().err
    assert "fma.rn.f32" in out or "add.rn.f32" in out


@pytest.mark.slow
def test_against_xla_ptx(xla_dumps, capsys):
    have_libdevice = bool(ptx._libdevice_candidates())
    report = []
    for arch, dirs in xla_dumps.items():
        counts = {"no": [0, 0], "with": [0, 0]}
        newer_llvm = False
        for d in dirs:
            for ll, kind, ref in _pairs(d):
                with open(ll) as fh:
                    ir_text = fh.read()
                if kind == "no" and "@__nv_" in ir_text and not have_libdevice:
                    continue
                # XLA's with-opt IR goes straight to codegen; no-opt IR gets -O3 first.
                out = ptx.compile_to_ptx(ir_text, arch, 3, filename=ll, optimize=(kind == "no"))
                target = re.compile(r"^\.target (\S+)", re.M)
                assert target.findall(out) == target.findall(ref) == [arch], ll
                assert sorted(_ENTRY.findall(out)) == sorted(_ENTRY.findall(ref)), ll
                # jaxlib 0.12's XLA has an LLVM far newer than llvmlite's (PTX ISA 9.0 against
                # 8.8): it folds immediates into fma and compares into setp.{and,or}, so its
                # PTX is never identical to ours; what our IR reading must keep is compared.
                newer = _isa_version(ref) > _isa_version(out)
                newer_llvm |= newer
                counts[kind][1] += 1
                counts[kind][0] += (_facets(out) == _facets(ref)) if newer else (_canon(out) == _canon(ref))
        same = counts["no"][0] + counts["with"][0]
        total = counts["no"][1] + counts["with"][1]
        report.append(f"{arch}: {same}/{total} {'like' if newer_llvm else 'identical to'} XLA's PTX "
                      f"(with-opt {counts['with'][0]}/{counts['with'][1]}, "
                      f"no-opt {counts['no'][0]}/{counts['no'][1]})")
        assert counts["with"][1] >= 5 and (counts["no"][1] >= 5 or not have_libdevice)
        # XLA's LLVM is newer than llvmlite's, so some codegen differs; most must not.
        assert 2 * same >= total, report[-1]
        # Compared by facets, XLA's optimized IR (straight to codegen) must lose nothing.
        assert not newer_llvm or counts["with"][0] == counts["with"][1], report[-1]
    with capsys.disabled():
        print("\n" + "\n".join(report))


@pytest.mark.parametrize("spec", _shipped_specs(), ids=lambda s: s.name)
def test_ptx_for_each_shipped_spec_assembles(spec, monkeypatch):
    """LLVM IR -> PTX for the spec's target -> ptxas for that target succeeds; where the
    ptxas in use lacks the target (CUDA 13: sm_60/sm_70), the check says so and is skippable."""
    if not cuda_tools.ptxas().can_target(spec.sm):
        with pytest.raises(ToolchainError, match=f"ptxas: CUDA 13 dropped {spec.sm} "):
            ptx.compile_to_ptx(SMALL_IR, spec.sm)
        out = ptx.compile_to_ptx(SMALL_IR, spec.sm, assemble=False)
        assert re.search(r"^\.target (\S+)", out, re.M).group(1) == spec.sm
        return
    assembled: list[str] = []
    real = ptx.check_with_ptxas
    monkeypatch.setattr(ptx, "check_with_ptxas", lambda code, cpu, filename: (
        assembled.append(cpu), real(code, cpu, filename)))
    out = ptx.compile_to_ptx(SMALL_IR, spec.sm)
    assert re.search(r"^\.target (\S+)", out, re.M).group(1) == spec.sm
    assert assembled == [spec.sm]


def test_ptxas_error_quotes_the_line():
    with pytest.raises(InputError) as ei:
        ptx.check_with_ptxas(".version 8.8\n.target sm_80\n.address_size 64\nnot.an.instruction;\n",
                             "sm_80", "k.ll")
    assert ei.value.file == "k.ll"
    assert_mentions(ei.value.message, "ptxas", "sm_80", "PTX line 4")
    assert ei.value.message.endswith("[not.an.instruction;]")


def test_lowest_ptx_isa_per_target_is_what_llvm_picks():
    """_MIN_PTX is measured, not copied: for every target, LLVM's NVPTX backend given no
    +ptxNN writes the lowest PTX ISA it accepts; the table must say the same."""
    from mlirhlo_driver.cuda import ptx

    llvm = ptx._llvm()
    ir = (f'target triple = "{ptx.TRIPLE}"\n'
          "define ptx_kernel void @k() {\n  ret void\n}\n")
    target = llvm.Target.from_triple(ptx.TRIPLE)
    picked = {}
    for cpu in ptx.supported_archs():
        text = target.create_target_machine(cpu=cpu, features="").emit_assembly(llvm.parse_assembly(ir))
        major, minor = re.search(r"^\.version (\d+)\.(\d+)$", text, re.M).groups()
        picked[cpu] = int(major) * 10 + int(minor)
    assert picked == ptx._MIN_PTX


def test_ptxas_runs_at_most_one_per_cpu_and_reports_the_first_rejected_module(monkeypatch):
    """check_all_with_ptxas runs no more ptxas processes at once than there are CPUs (one at a
    time where there is one CPU or the count is unknown), checks every module, and reports
    the first rejected one in module order."""
    class FakePtxas:
        path, version_str = "/fake/ptxas", "12.9"

        def require(self, sm, gpu=None):
            pass

        def describe(self):
            return f"ptxas {self.version_str} ({self.path}, fake)"

    live: list[object] = []
    peak = [0]
    started: list[str] = []

    class FakePopen:
        def __init__(self, args, **kwargs):
            self.args = args
            src = args[2]
            with open(src) as fh:
                code = fh.read()
            self.returncode = 1 if "bad" in code else 0
            self._out = (f"ptxas {src}, line 1; error   : rejected {code}\n".encode()
                         if self.returncode else b"")
            started.append(code)
            live.append(self)
            peak[0] = max(peak[0], len(live))

        def communicate(self):
            live.remove(self)
            return self._out, None

    monkeypatch.setattr(cuda_tools, "ptxas", lambda *a, **k: FakePtxas())
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    modules = [(f"m{i}", "bad" if i in (2, 4) else f"ok{i}") for i in range(5)]
    for cpus, allowed in ((None, 1), (1, 1), (2, 2), (3, 3), (64, 5)):
        monkeypatch.setattr(os, "cpu_count", lambda n=cpus: n)
        live.clear()
        started.clear()
        peak[0] = 0
        with pytest.raises(InputError) as ei:
            ptx.check_all_with_ptxas(modules, "sm_80", "k.ll")
        assert peak[0] == allowed, (cpus, peak[0])
        assert started == [code for _, code in modules] and not live
        assert_mentions(ei.value.message, "module m2", "sm_80", "line 1", "rejected bad [bad]")
        assert ei.value.file == "k.ll"
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    started.clear()
    peak[0] = 0
    ptx.check_all_with_ptxas([("a", "ok-a"), ("b", "ok-b")], "sm_80")
    assert started == ["ok-a", "ok-b"] and peak[0] == 1


@pytest.mark.parametrize("ty,width,new,bits", [
    ("float", 32, "1.000000e+00", 0x3F800000),
    ("float", 32, "-1.000000e+00", 0xBF800000),
    ("float", 32, "0.000000e+00", 0x00000000),
    ("float", 32, "-0.000000e+00", 0x80000000),
    ("float", 32, "0x1p0", 0x3F800000),
    ("float", 32, "-0x0p0", 0x80000000),
    ("half", 16, "0x1.0p0", 0x3C00),
    ("double", 64, "1.000000e+00", 0x3FF0000000000000),
    ("double", 64, "0x0.0p0", 0x0000000000000000),
    ("fp128", 128, "1.000000e+00", 0x3FFF0000000000000000000000000000),
    ("fp128", 128, "0.000000e+00", 0),
    ("fp128", 128, "-0.000000e+00", 1 << 127),
    ("x86_fp80", 80, "1.000000e+00", 0x3FFF8000000000000000),
    ("x86_fp80", 80, "0.000000e+00", 0),
])
def test_zero_and_one_literals_keep_their_values(ty, width, new, bits):
    """Literals of value one and (signed) zero, decimal or hex, in every type read back as exactly that value."""
    classic = _norm(f"{ty} {new}").split()[1]
    assert _bits_via_llvmlite(ty, width, classic) == bits


@pytest.mark.parametrize("line,target", [
    ("!a = !{!a, i1 false}", "!a, i1 false}"),         # the error is before the removed flag
    ("!0 = distinct !{!0, i1 false, !\"x\", !99}", "99}"),   # ... and after it (LLVM points past the '!')
])
def test_errors_on_a_domain_line_with_its_flag_removed_point_into_the_original(line, target):
    """A parse error on an alias-scope domain line whose LLVM 23 flag was dropped is located at its original column."""
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(f'target triple = "nvptx64-nvidia-cuda"\n{line}\n', "sm_80", filename="k.ll")
    assert (ei.value.file, ei.value.line) == ("k.ll", 2)
    assert ei.value.col == line.index(target) + 1


@pytest.mark.parametrize("line,expected", BOUNDARY_CASES)
def test_normalize_limits_ties_and_types_exact(line, expected):
    """Literals at each side of a type's range, rounding ties and width limits normalize exactly as LLVM reads them."""
    assert _norm(line) == expected


def test_normalized_limits_read_back_as_the_same_bits():
    """The rewritten limits parse in llvmlite to the very bits meant (max/min float, half max/min normal)."""
    for ty, width, literal, bits in (("float", 32, "0x47EFFFFFE0000000", 0x7F7FFFFF),
                                     ("float", 32, "0x36A0000000000000", 0x00000001),
                                     ("float", 32, "0x380FFFFFC0000000", 0x007FFFFF),
                                     ("half", 16, "0xH7BFF", 0x7BFF), ("half", 16, "0xH0400", 0x0400)):
        assert _bits_via_llvmlite(ty, width, literal) == bits


# ----------------------------------------------------------- arch and ISA

@pytest.mark.parametrize("arch,target,version", [
    ("SM_90A", "sm_90a", "8.8"), ("sm90", "sm_90", "8.8"), ("12.1", "sm_121", "8.8"),
    ("10.0f", "sm_100f", "8.8"), ("120f", "sm_120f", "8.8"), (" sm_80 ", "sm_80", "8.8"),
    ("75", "sm_75", "8.8"), ("sm_20", "sm_20", "8.8"),
    # the default ISA is XLA's 8.8, or the arch's minimum where that is newer
    ("sm_88", "sm_88", "9.0"), ("11.0", "sm_110", "9.0"),
])
def test_more_arch_spellings_and_default_isa(arch, target, version):
    """Case, missing underscore, major.minor and a/f suffixes all name the arch; the ISA defaults to max(8.8, minimum)."""
    out = ptx.compile_to_ptx("define void @f() {\n  ret void\n}\n", arch, assemble=False)
    assert re.search(r"^\.target (\S+)", out, re.M).group(1) == target
    assert re.search(r"^\.version (\S+)", out, re.M).group(1) == version


@pytest.mark.parametrize("arch,close", [("sm_9", "'sm_90', 'sm_89', 'sm_90a'"), ("sm-90", "'sm_90', 'sm_90a', 'sm_89'"),
                                        ("sm_8", "'sm_89', 'sm_88', 'sm_87'"),
                                        ("SM_9", "'sm_90', 'sm_89', 'sm_90a'")])
def test_unknown_arch_message_lists_every_arch_and_the_closest(arch, close):
    """An unknown arch names itself, every supported one in order, and the closest three."""
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx("define void @f() {\n  ret void\n}\n", arch)
    assert_mentions(ei.value.message, f"'{arch}'", ", ".join(ptx.supported_archs()))
    assert_mentions(ei.value.hint, close)


# ------------------------------------------------------ modules and triples

def test_module_triple_other_than_nvptx_is_refused():
    """IR for another target is one error naming its triple; 32-bit NVPTX and no triple at all compile."""
    body = "define void @f() {\n  ret void\n}\n"
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(f'target triple = "x86_64-unknown-linux-gnu"\n{body}', "sm_80", filename="k.ll")
    assert ei.value.file == "k.ll"
    assert_mentions(ei.value.message, "'x86_64-unknown-linux-gnu'", "NVPTX")
    out32 = ptx.compile_to_ptx(f'target triple = "nvptx-nvidia-cuda"\n{body}', "sm_80", assemble=False)
    assert re.search(r"^\.address_size (\d+)", out32, re.M).group(1) == "32"
    out = ptx.compile_to_ptx(body, "sm_80", assemble=False)
    assert re.search(r"^\.address_size (\d+)", out, re.M).group(1) == "64"
    assert ".visible .func f()" in out


def test_ir_without_triple_or_layout_gets_nvptx_ones():
    """The pipeline sees IR without a triple or data layout as NVPTX IR: the target's triple and layout are set."""
    calls: list[tuple[str, str]] = []
    ptx.compile_to_ptx("define void @f() {\n  ret void\n}\n", "sm_80", assemble=False,
                       print_after_all=lambda n, t: calls.append((n, t)))
    header = calls[0][1].split("\n")
    assert 'target triple = "nvptx64-nvidia-cuda"' in header
    assert 'target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"' in header


def test_ir_that_fails_verification_is_one_error():
    """IR that parses but does not verify is 'invalid LLVM IR:' with LLVM's reason on one line."""
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx("define void @f() {\n  %x = add i32 %x, 1\n  ret void\n}\n", "sm_80", filename="k.ll")
    assert "\n" not in ei.value.message
    assert_mentions(ei.value.message, "invalid LLVM IR", "Only PHI nodes", "%x = add i32 %x, 1")
    assert (ei.value.file, ei.value.line) == ("k.ll", None)


def test_libdevice_missing_names_up_to_three_functions(tmp_path):
    """IR calling libdevice without one is an error naming the first three __nv_ functions (then '...')."""
    four = ["__nv_expf", "__nv_logf", "__nv_sinf", "__nv_cosf"]
    for names, lib, listed in ((four, str(tmp_path / "none.bc"), "__nv_expf, __nv_logf, __nv_sinf, ..."),
                               (four[:3], str(tmp_path), "__nv_expf, __nv_logf, __nv_sinf"),
                               (four[:1], str(tmp_path / "none.bc"), "__nv_expf")):
        with pytest.raises(InputError) as ei:
            ptx.compile_to_ptx(_nv_ir(names), "sm_80", filename="k.ll", libdevice=lib)
        assert_mentions(ei.value.message, f"({listed})", "libdevice.10.bc")
        assert ei.value.file == "k.ll"
        assert_mentions(ei.value.hint, "libdevice=PATH", "CUDA_HOME")
    # IR XLA already optimized is not linked: no libdevice needed
    out = ptx.compile_to_ptx(_nv_ir(four[:1]), "sm_80", optimize=False, libdevice=str(tmp_path / "none.bc"),
                             assemble=False)
    assert "call.uni (retval0), __nv_expf," in out


def test_libdevice_not_bitcode_is_named(tmp_path):
    """A libdevice that is not bitcode is an error located at that file."""
    bad = tmp_path / "libdevice.10.bc"
    bad.write_text("not bitcode\n")
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(_nv_ir(["__nv_expf"]), "sm_80", filename="k.ll", libdevice=str(bad))
    assert_mentions(ei.value.message, "libdevice", "bitcode header")
    assert ei.value.file == str(bad)


@pytest.mark.skipif(not ptx._libdevice_candidates(), reason="no libdevice.10.bc here")
def test_libdevice_is_linked_inlined_and_dropped():
    """Linked libdevice functions are internal: the used one is inlined, none is left in the PTX."""
    out = ptx.compile_to_ptx(_nv_ir(["__nv_expf", "__nv_logf"]), "sm_80", assemble=False)
    assert "__nv_" not in out
    assert re.findall(r"^\.\w.*\bfunc\b.*", out, re.M) == [".visible .func  (.param .b32 func_retval0) f("]


def test_missing_intrinsic_located_at_its_first_call():
    """An intrinsic named exactly as LLVM names it is located at its first call, not its declaration
    nor a call in a comment."""
    ir = ('target triple = "nvptx64-nvidia-cuda"\n'
          "declare void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 immarg)\n"
          "define ptx_kernel void @k() {\n"
          "  ; call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 128)\n"
          "  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 256)\n"
          "  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 256)\n"
          "  ret void\n}\n")
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(ir, "sm_80", filename="k.ll")
    assert (ei.value.file, ei.value.line, ei.value.col) == ("k.ll", 5, 13)
    assert_mentions(ei.value.message, "llvm.nvvm.setmaxnreg.inc.sync.aligned.u32", "sm_80")
    assert_mentions(ei.value.hint, "--arch")


def test_codegen_crash_other_than_cannot_select():
    """A fatal LLVM error that is not 'Cannot select' is passed on as it is; an unlocated one has no line."""
    from mlirhlo_driver.errors import NativeCrash

    crash = NativeCrash("LLVM ERROR: out of memory")
    e = ptx._codegen_crash(crash, "x\n", "sm_80", "k.ll")
    assert (e.message, e.file, e.line, e.hint) == (crash.message, "k.ll", None, None)
    e = ptx._codegen_crash(NativeCrash("LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo"), "x\n", "sm_90", "k.ll")
    assert (e.line, e.col) == (None, None)
    assert_mentions(e.message, "llvm.nvvm.foo", "sm_90")


_SETMAXNREG_IR = ('target triple = "nvptx64-nvidia-cuda"\n'
                  "declare void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 immarg)\n"
                  "define ptx_kernel void @k() {\n"
                  "  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 256)\n"
                  "  ret void\n}\n")


def _codegen_crash_of(log: str):
    from mlirhlo_driver.errors import NativeCrash

    raise ptx._codegen_crash(NativeCrash(log), "x\n", "sm_90", "k.ll")


@pytest.mark.golden
@pytest.mark.parametrize("compile_, line", [
    (lambda: ptx.compile_to_ptx('target triple = "x86_64-unknown-linux-gnu"\ndefine void @f() {\n  ret void\n}\n',
                                "sm_80", filename="k.ll"),
     "error: k.ll: module targets 'x86_64-unknown-linux-gnu', not NVPTX"),
    (lambda: ptx.compile_to_ptx("define void @f() {\n  %x = add i32 %x, 1\n  ret void\n}\n", "sm_80",
                                filename="k.ll"),
     "error: k.ll: invalid LLVM IR: Only PHI nodes may reference their own value!   %x = add i32 %x, 1"),
    (lambda: ptx.compile_to_ptx(_SETMAXNREG_IR, "sm_80", filename="k.ll"),
     "error: k.ll:4:13: intrinsic llvm.nvvm.setmaxnreg.inc.sync.aligned.u32 is not available on sm_80: LLVM "
     "cannot select it (compile for an arch that has it with --arch)"),
    (lambda: _codegen_crash_of("LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo"),
     "error: k.ll: intrinsic llvm.nvvm.foo is not available on sm_90: LLVM cannot select it "
     "(compile for an arch that has it with --arch)"),
], ids=["triple", "verifier", "cannot-select", "cannot-select-unlocated"])
def test_llvm_ir_refusals_exactly(compile_, line):
    """IR compile_to_ptx refuses: another target's, IR that does not verify (LLVM's reason on
    one line), an intrinsic the arch lacks (located at its call where the IR has one)."""
    with pytest.raises(InputError) as ei:
        compile_()
    assert ei.value.format() == line


def test_ptxas_is_run_for_the_canonical_arch(monkeypatch):
    """ptxas gets --gpu-name=<canonical sm>, the PTX file and a cubin output, one module at a time in order."""
    calls = _fake_run(monkeypatch)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    ptx.check_all_with_ptxas([("a", "x"), ("b", "y")], "9.0a")
    assert [(c[0], c[1], os.path.basename(c[2]), c[3], os.path.basename(c[4])) for c in calls] == [
        ("/fake/ptxas", "--gpu-name=sm_90a", "m0.ptx", "-o", "m0.cubin"),
        ("/fake/ptxas", "--gpu-name=sm_90a", "m1.ptx", "-o", "m1.cubin")]


def test_ptxas_missing_or_unable_is_a_toolchain_error(monkeypatch):
    """No usable ptxas, or one that cannot start, is a ToolchainError saying how to skip the check."""
    monkeypatch.setattr(cuda_tools, "ptxas", lambda *a, **k: _FakePtxas(missing="CUDA 13 dropped sm_60"))
    with pytest.raises(ToolchainError) as ei:
        ptx.check_with_ptxas(".version 8.8\n", "sm_60", "k.ll")
    assert ei.value.file == "k.ll"
    assert_mentions(ei.value.message, "ptxas", "CUDA 13 dropped sm_60")
    assert_mentions(ei.value.hint, "--no-ptxas", "assemble=False")
    _fake_run(monkeypatch, error=OSError(8, "Exec format error"))
    with pytest.raises(ToolchainError) as ei:
        ptx.check_with_ptxas(".version 8.8\n", "sm_80", "k.ll")
    assert ei.value.file == "k.ll"
    assert_mentions(ei.value.message, "ptxas 12.9 (/fake/ptxas, fake)", "Exec format error")


def test_ptxas_rejection_without_a_line_number(monkeypatch):
    """ptxas output with no 'line N' is quoted on one line (at most 300 characters), else its exit status."""
    _fake_run(monkeypatch, b"ptxas fatal   :  Unresolved\n  extern function 'g'\n", returncode=255)
    with pytest.raises(InputError) as ei:
        ptx.check_all_with_ptxas([("", "a;")], "sm_80", "k.ll")
    assert_mentions(ei.value.message, "sm_80", "ptxas fatal : Unresolved extern function 'g'")
    assert "line" not in ei.value.message
    assert ei.value.file == "k.ll"
    _fake_run(monkeypatch, b"x" * 299 + b" yz", returncode=1)
    with pytest.raises(InputError) as ei:
        ptx.check_all_with_ptxas([("m", "a;")], "sm_80")
    assert_mentions(ei.value.message, "module m", "x" * 299)
    assert ei.value.message.endswith("x" * 299 + " ")  # 300 characters of the output, no more
    _fake_run(monkeypatch, b" \n", returncode=3)
    with pytest.raises(InputError) as ei:
        ptx.check_all_with_ptxas([("", "a;")], "sm_80")
    assert_mentions(ei.value.message, "sm_80", "exit status 3")


@pytest.mark.parametrize("number,quote", [(1, " [a;]"), (3, " [c;]"), (4, ""), (0, "")])
def test_ptxas_error_quotes_only_a_line_the_ptx_has(monkeypatch, number, quote):
    """The PTX line ptxas names is quoted when the PTX has it (first and last), never another one."""
    _fake_run(monkeypatch, f"ptxas /tmp/m0.ptx, line {number}; fatal : bad  thing \n".encode(), returncode=1)
    with pytest.raises(InputError) as ei:
        ptx.check_all_with_ptxas([("", "  a;\nb;\nc;  ")], "sm_80")
    assert_mentions(ei.value.message, f"PTX line {number}", "bad  thing")
    assert ei.value.message.endswith("bad  thing" + quote), ei.value.message


@pytest.mark.golden
@pytest.mark.parametrize("fake, modules, message, hint", [
    ({"missing": "CUDA 13 dropped sm_80"}, [("", "a;")],
     "cannot check the PTX with ptxas: CUDA 13 dropped sm_80", "--no-ptxas (assemble=False) skips the check"),
    ({"error": OSError(8, "Exec format error")}, [("", "a;")],
     "cannot run ptxas 12.9 (/fake/ptxas, fake): [Errno 8] Exec format error", None),
    ({"output": b"ptxas fatal   :  Unresolved\n  extern function 'g'\n", "returncode": 255}, [("", "a;")],
     "ptxas 12.9 rejected the PTX for sm_80: ptxas fatal : Unresolved extern function 'g'", None),
    ({"output": b"x" * 299 + b" yz", "returncode": 1}, [("m", "a;")],
     "ptxas 12.9 rejected the PTX of module m for sm_80: " + "x" * 299 + " ", None),
    ({"output": b" \n", "returncode": 3}, [("", "a;")], "ptxas 12.9 rejected the PTX for sm_80: exit status 3", None),
    ({"output": b"ptxas /tmp/m0.ptx, line 3; fatal : bad  thing \n", "returncode": 1}, [("", "  a;\nb;\nc;  ")],
     "ptxas 12.9 rejected the PTX for sm_80 at PTX line 3: bad  thing [c;]", None),
    ({"output": b"ptxas /tmp/m1.ptx, line 1; error   : rejected bad\n", "returncode": 1}, [("m1", "bad")],
     "ptxas 12.9 rejected the PTX of module m1 for sm_80 at PTX line 1: rejected bad [bad]", None),
], ids=["cannot-target", "cannot-run", "no-line", "long", "silent", "quoted-line", "module"])
def test_ptxas_refusals_exactly(monkeypatch, fake, modules, message, hint):
    """check_all_with_ptxas' words: a ptxas that cannot target the sm (and how to skip it), one
    that cannot start, and a rejection: with its module, PTX line and that line quoted where
    ptxas names one, else its output on one line (300 characters at most) or its exit status."""
    if "missing" in fake:
        monkeypatch.setattr(cuda_tools, "ptxas", lambda *a, **k: _FakePtxas(missing=fake["missing"]))
    else:
        _fake_run(monkeypatch, **fake)
    with pytest.raises((InputError, ToolchainError)) as ei:
        ptx.check_all_with_ptxas(modules, "sm_80", "k.ll")
    assert (ei.value.message, ei.value.file, ei.value.hint) == (message, "k.ll", hint)


def test_compile_llvm_ir_joins_modules_and_checks_them_together(monkeypatch):
    """Each module's PTX is headed by '// ----- NAME -----'; ptxas gets them all at once, for the source."""
    checked = []
    monkeypatch.setattr(ptx, "check_all_with_ptxas", lambda *a: checked.append(a))
    res = ptx.compile_llvm_ir(JOINED, "j.ll", ptx.PtxOptions(arch="sm_80", opt_level=0))
    a = ptx.compile_to_ptx("define void @f() {\n  ret void\n}\n", "sm_80", 0, assemble=False)
    b = ptx.compile_to_ptx("define void @g() {\n  ret void\n}\n", "sm_80", 0, assemble=False)
    assert res.modules == [("a", a), ("b", b)]
    assert res.text == f"// ----- a -----\n{a}// ----- b -----\n{b}"
    assert res.dumps == []
    assert checked == [([("a", a), ("b", b)], "sm_80", "j.ll")]
    one = ptx.compile_llvm_ir("define void @f() {\n  ret void\n}\n", "-", ptx.PtxOptions(arch="sm_80", opt_level=0,
                                                                                         check_ptxas=False))
    assert (one.text, one.modules) == (a, [("", a)])
    assert len(checked) == 1


def test_compile_llvm_ir_defaults_and_dumps(monkeypatch):
    """PtxOptions() asks for sm_90a, -O3 with the pipeline, no libdevice, ptxas on, no dumps; dumps name the module."""
    seen = []

    def fake(text, arch, opt_level, **kw):
        seen.append((text, arch, opt_level, kw))
        if kw["print_after_all"] is not None:
            kw["print_after_all"]("P", "ir")
        return "ptx\n"

    checked = []
    monkeypatch.setattr(ptx, "compile_to_ptx", fake)
    monkeypatch.setattr(ptx, "check_all_with_ptxas", lambda *a: checked.append(a))
    res = ptx.compile_llvm_ir("\n" + JOINED, "j.ll", ptx.PtxOptions())
    assert [(t, arch, lvl) for t, arch, lvl, _ in seen] == [
        ("\n\ndefine void @f() {\n  ret void\n}\n", "sm_90a", 3),
        ("\n" * 6 + "define void @g() {\n  ret void\n}\n", "sm_90a", 3)]
    assert [{k: v for k, v in kw.items() if k != "print_after_all"} for *_, kw in seen] == [
        {"filename": "j.ll", "optimize": True, "libdevice": None, "assemble": False}] * 2
    assert all(kw["print_after_all"] is None for *_, kw in seen) and res.dumps == []
    assert checked == [([("a", "ptx\n"), ("b", "ptx\n")], "sm_90a", "j.ll")]
    res = ptx.compile_llvm_ir(JOINED, "j.ll", ptx.PtxOptions(dump_passes=True, check_ptxas=False, libdevice="l.bc",
                                                            optimize=False))
    assert res.dumps == [("a", "P", "ir"), ("b", "P", "ir")]
    assert seen[-1][3]["optimize"] is False and seen[-1][3]["libdevice"] == "l.bc"
    assert len(checked) == 1


def test_errors_in_a_later_module_keep_the_files_line():
    """A parse error in the second of joined modules is located at the file's line."""
    with pytest.raises(InputError) as ei:
        ptx.compile_llvm_ir(JOINED.replace("define void @g() {\n  ret void", "define void @g() {\n  ret i32 0"),
                            "j.ll", ptx.PtxOptions(arch="sm_80", check_ptxas=False))
    assert (ei.value.file, ei.value.line, ei.value.col) == ("j.ll", 7, 7)
    assert_mentions(ei.value.message, "'void'")


def test_read_llvm_ir(tmp_path, monkeypatch):
    """A file's or stdin's text is returned as read; blank input is 'empty file' / 'empty input'."""
    import io

    f = tmp_path / "k.ll"
    f.write_text("define void @f()\n")
    assert ptx.read_llvm_ir(str(f)) == "define void @f()\n"
    f.write_text(" \n\t\n")
    with pytest.raises(InputError) as ei:
        ptx.read_llvm_ir(str(f))
    assert (ei.value.message, ei.value.file) == ("empty file", str(f))
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n\n"))
    with pytest.raises(InputError) as ei:
        ptx.read_llvm_ir("-")
    assert (ei.value.message, ei.value.file) == ("empty input", "-")
    monkeypatch.setattr(sys, "stdin", io.StringIO("x\n"))
    assert ptx.read_llvm_ir("-") == "x\n"
    with pytest.raises(InputError) as ei:
        ptx.read_llvm_ir(str(tmp_path))
    assert ei.value.file == str(tmp_path)
    assert_mentions(ei.value.message, "LLVM IR", "Is a directory")


@pytest.mark.golden
@pytest.mark.parametrize("source, stdin, message", [
    ("blank.ll", None, "empty file"),
    ("-", "\n\n", "empty input"),
    ("none.ll", None, "no such file or directory"),
    (".", None, "cannot read LLVM IR: Is a directory"),
])
def test_read_llvm_ir_refusals_exactly(tmp_path, monkeypatch, source, stdin, message):
    """read_llvm_ir's words for input it cannot use, at the file (``-``: stdin)."""
    import io

    (tmp_path / "blank.ll").write_text(" \n\t\n")
    monkeypatch.chdir(tmp_path)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with pytest.raises(InputError) as ei:
        ptx.read_llvm_ir(source)
    assert (ei.value.message, ei.value.file) == (message, source)


def test_collected_dumps_are_in_pass_number_order(tmp_path):
    """LLVM's dump files are read in numeric order (unnumbered first), named by their header or file name."""
    for name, body in (("10-m-B.ll", "; *** IR Dump After BPass on f ***\nb"),
                       ("9-m-A.ll", "; *** IR Dump After APass on [module] ***\na"),
                       ("x-Odd-1.ll", "odd"), ("1-m-C.txt", "not a dump")):
        (tmp_path / name).write_text(body)
    assert ptx._collect_dumps(str(tmp_path)) == [
        ("Odd", "odd"), ("APass", "; *** IR Dump After APass on [module] ***\na"),
        ("BPass", "; *** IR Dump After BPass on f ***\nb")]


def test_error_right_after_a_rewritten_literal_points_past_it():
    """An error at the first character after a rewritten literal (another one later) is located in the original line."""
    src = "define void @f(float %x, ptr %p) {\n  store float -inf) , float +inf\n  ret void\n}\n"
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(src, "sm_80", filename="k.ll")
    assert (ei.value.file, ei.value.line, ei.value.col) == ("k.ll", 2, 19)
    assert_mentions(ei.value.message, "store operand")
    assert src.splitlines()[1][ei.value.col - 1] == ")"


@pytest.mark.parametrize("line,expected", [
    ("\t!7 = distinct !{!7, i1 false}", "\t!7 = distinct !{!7}"),
    ('  !8 = !{!8, i1 true, !"d"}', '  !8 = !{!8, !"d"}'),
    ("x!9 = !{!9, i1 false}", "x!9 = !{!9, i1 false}"),
])
def test_domain_flag_dropped_whatever_the_indent(line, expected):
    """A domain line indented by a tab or spaces loses its flag too; a line not starting a metadata node keeps it."""
    assert _norm(line) == expected


@pytest.mark.skipif(not os.path.isfile("/proc/self/mem"), reason="needs Linux's /proc/self/mem (a file that cannot be read)")
def test_libdevice_unreadable_says_why():
    """A libdevice file that cannot be read is an error with the OS's reason, located at that file."""
    with pytest.raises(InputError) as ei:
        ptx.compile_to_ptx(_nv_ir(["__nv_expf"]), "sm_80", filename="k.ll", libdevice="/proc/self/mem")
    assert ei.value.file == "/proc/self/mem"
    assert_mentions(ei.value.message, "libdevice", "Input/output error")


@pytest.mark.golden
@pytest.mark.parametrize("names, libdevice, message, hint", [
    (["__nv_expf", "__nv_logf", "__nv_sinf", "__nv_cosf"], "none.bc",
     "the IR calls libdevice (__nv_expf, __nv_logf, __nv_sinf, ...) but libdevice.10.bc was not found",
     "pass libdevice=PATH or set CUDA_HOME"),
    (["__nv_expf"], "text/libdevice.10.bc",
     "not a libdevice bitcode file: LLVM bitcode parsing error file doesn't start with bitcode header", None),
    pytest.param(["__nv_expf"], "/proc/self/mem", "cannot read libdevice: Input/output error", None,
                 marks=pytest.mark.skipif(not os.path.isfile("/proc/self/mem"), reason="needs Linux's /proc/self/mem")),
], ids=["missing", "not-bitcode", "unreadable"])
def test_libdevice_refusals_exactly(tmp_path, names, libdevice, message, hint):
    """IR that calls libdevice, with none found (the first three functions named), or one that
    is not bitcode, or cannot be read (the OS's reason)."""
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "libdevice.10.bc").write_text("not bitcode\n")
    with pytest.raises(InputError) as ei:  # (the compile runs in a helper: a path from here)
        ptx.compile_to_ptx(_nv_ir(names), "sm_80", filename="k.ll", libdevice=str(tmp_path / libdevice))
    assert (ei.value.message, ei.value.hint) == (message, hint)
