"""The conformance report: StableHLO's testdata on XLA CPU, device-less CUDA and TPU, docs/conformance.md.

    python scripts/conformance.py PATH/TO/stablehlo [-o docs/conformance.md] [--jobs 2]
        [--gpu-spec h100_sxm] [--tpu-topology v5e:1x1] [--platforms cpu,cuda,tpu]

PATH is a checkout of openxla/stablehlo (nothing is fetched); its
``stablehlo/testdata/*.mlir`` files are the corpus. The script runs, as a user would:

* ``mlirhlo run FILES --jobs N --json R`` (XLA CPU; the files check themselves with
  their ``check.*`` calls),
* ``mlirhlo opt FILES --platform cuda --gpu-spec SPEC --stage ptx --jobs N`` (device-less),
* ``mlirhlo opt FILES --platform tpu --tpu-topology T --stage hlo --jobs N`` (device-less,
  where libtpu is installed: ``mlirhlo tpu-plugin install``; each refusal classed by
  :func:`classify_tpu`),

timing each. For every file that fails on CPU it recomputes the failing checks'
values with the driver's library (``inputs.checks``: the same preparation and XLA CPU
compile as ``run``) and measures, element by element, what differs: ULP distances, the
bits of NaNs, each side's distance from a reference (the same computation in float64
for narrower floats; exact rational sums for a float64 ``dot_general``; long-double
FFTs), and whether the file passes with LLVM's optimizations off
(``--xla_backend_optimization_level=0``). Each failure gets one class by the rules in
:func:`classify`:

* **XLA kernel deviation**: XLA computes something other than the ops' semantics (IEEE
  rounding of each op), or is clearly less accurate than the expected values;
* **expected value over-specified**: the test asks for more than the ops define (the
  order of equal keys in an unstable sort, NaN signs, NaN == NaN under ``expect_eq``,
  a tolerance finer than the type resolves, 3 ULP per component for a sum whose
  rounding depends on the order), and XLA's values are as close to the exact ones as
  the expected values are;
* **driver defect**: the driver, not XLA or the test, is wrong (a crash, a lost worker,
  a bad-input verdict on a valid file);
* **unclassified**: none of the rules decides; a person has to look.

The report is rewritten whole on every run: counts per platform and class, then one
row per failing file with its class and evidence.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTDATA = Path("stablehlo") / "testdata"

KERNEL = "XLA kernel deviation"
OVERSPECIFIED = "expected value over-specified"
DRIVER = "driver defect"
UNCLASSIFIED = "unclassified"
CLASSES = (KERNEL, OVERSPECIFIED, DRIVER, UNCLASSIFIED)

# Reproducers under tests/data/conformance/ and the evidence that points to each.
REPRODUCERS = {
    "llvm-opt": ("tests/data/conformance/fma_contraction_f64.hlo",
                 "XLA CPU contracts multiply + add into one fused multiply-add (one rounding)"),
}

# XLA's normwise error may be this many times the expected values' before it counts as
# less accurate (two correct implementations differ by small factors).
ACCURACY_SLACK = 2.0


def mlirhlo(*args: str) -> list[str]:
    return [sys.executable, "-m", "mlirhlo_driver", *args]


# ================================================================== running

def testdata_files(checkout: Path) -> list[Path]:
    """The ``*.mlir`` files of ``checkout/stablehlo/testdata``, sorted; an error line and
    exit 2 if there are none."""
    folder = checkout / TESTDATA
    files = sorted(folder.glob("*.mlir"))
    if not files:
        print(f"error: {folder}: no *.mlir files (give a checkout of openxla/stablehlo)", file=sys.stderr)
        raise SystemExit(2)
    return files


def checkout_commit(checkout: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def run_cpu(files: list[Path], jobs: int, work: Path, extra: tuple[str, ...] = ()) -> tuple[list[dict], float]:
    """``mlirhlo run FILES --jobs N --json``: the report rows and the wall seconds."""
    report = work / f"run{len(list(work.glob('run*.json')))}.json"
    start = time.perf_counter()
    proc = subprocess.run(mlirhlo("run", *map(str, files), "--jobs", str(jobs), "--json", str(report), *extra),
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1) or not report.exists():
        raise SystemExit(f"error: mlirhlo run exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return json.loads(report.read_text()), wall


def _opt_batch(files: list[Path], jobs: int, target: list[str], stage: str, suffix: str, what: str,
               work: Path) -> tuple[dict[str, str], float]:
    """One ``mlirhlo opt`` batch writing ``stage`` for ``target``: {file stem: error} for the
    files that wrote no ``*suffix`` file, and the wall seconds."""
    dump = work / stage
    dump.mkdir()
    start = time.perf_counter()
    proc = subprocess.run(mlirhlo("opt", *map(str, files), *target, "--stage", stage, "--no-cache",
                                  "--jobs", str(jobs), "--dump-dir", str(dump)),
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    failed = {}
    for f in files:
        if not list(dump.glob(f"{f.stem}*{suffix}")):
            # a batch's table row (FAILED/INVALID and why), else the error line naming the file
            row = re.search(rf"^\s+{re.escape(f.stem)}\s+(?:FAILED|INVALID)\s+(.*)$", proc.stderr, re.M)
            said = [e for e in errors if f"{f.stem}.mlir" in e or f"/{f.stem}:" in e]
            failed[f.stem] = (row.group(1) if row else said[0] if said else
                              errors[0] if len(errors) == 1 else f"no {what} written (opt exit {proc.returncode})")
    return failed, wall


def run_cuda(files: list[Path], jobs: int, spec: str, work: Path) -> tuple[dict[str, str], float]:
    """``mlirhlo opt --platform cuda --stage ptx`` device-less."""
    return _opt_batch(files, jobs, ["--platform", "cuda", "--gpu-spec", spec], "ptx", ".ptx", "PTX", work)


def run_tpu(files: list[Path], jobs: int, topology: str, work: Path) -> tuple[dict[str, str], float]:
    """``mlirhlo opt --platform tpu --stage hlo`` device-less (libtpu's compile-only topology)."""
    return _opt_batch(files, jobs, ["--platform", "tpu", "--tpu-topology", topology], "hlo", ".hlo",
                      "optimized HLO", work)


# What a TPU compile refuses, in XLA's TPU compiler's words (libtpu 0.0.50.1): (pattern, class, why).
TPU_X64 = "64-bit type the TPU compiler does not take"
TPU_UNIMPLEMENTED = "op form not implemented on TPU"
TPU_COMPILER = "XLA TPU compiler defect"
TPU_CLASSES = (TPU_X64, TPU_UNIMPLEMENTED, TPU_COMPILER)
TPU_RULES = [
    (r"rewriting computation to not contain X\{64\|128\} element types", TPU_X64,
     "TPUs have no 64-bit units: XLA rewrites 64-bit values into 32-bit pairs, and has no rewrite for this op"),
    (r"Unexpected operand type for FFT: (?:f64|c128)", TPU_X64, "the TPU FFT takes f32/c64 only"),
    (r"not implemented on TPU", TPU_UNIMPLEMENTED, "XLA's TPU compiler says this form of the op is not implemented"),
    (r"Binary op \w+ with different element types", TPU_COMPILER,
     "XLA's own verifier refuses the HLO its TPU passes made of a valid module (mixed s32/u32 after the "
     "64-bit rewrite)"),
    (r"crashed|aborted|SIG[A-Z]+", DRIVER, "libtpu's process died (the driver's TPU process: one line)"),
]


def classify_tpu(message: str) -> tuple[str, str]:
    for pattern, klass, why in TPU_RULES:
        if re.search(pattern, message):
            return klass, why
    return UNCLASSIFIED, "device-less compile failed"


# ================================================================= evidence

@dataclass
class CheckEvidence:
    """What one failing check shows, measured on the arrays (never the printed line)."""

    kind: str
    location: str
    op: str                   # the op that made the checked value (func.call @f for a call)
    dtype: str
    shape: tuple[int, ...]
    bad: int
    total: int
    options: dict = field(default_factory=dict)
    max_ulp: int | None = None            # over the failing elements (float/complex)
    ulp_counts: dict[str, int] = field(default_factory=dict)  # failing elements by ULP range
    nan_only: bool = False                # every failing element is NaN on both sides
    nan_identical: bool = False           # ... with the same bits on both sides
    nan_bits: list[str] = field(default_factory=list)   # "[i]: 0x... vs 0x..." for differing NaNs
    same_multiset: bool | None = None     # actual and expected hold the same bit patterns
    unstable_sort: bool = False           # the op is a sort without is_stable
    tolerance: float | None = None        # expect_almost_eq's
    min_ulp_of_expected: float | None = None  # the smallest ULP of |expected| among failing elements
    reference: str = ""                   # how the reference was computed ("" for none)
    err_xla: float | None = None          # normwise ||x - ref|| / ||ref||, in units of u
    err_expected: float | None = None
    worst: str = ""                       # the failing element with the largest error, both sides
    elements: list[str] = field(default_factory=list)  # "[i]: N ULP" of each failing element, up to 8


@dataclass
class FileEvidence:
    name: str
    path: str
    status: str
    message: str
    checks: list[CheckEvidence] = field(default_factory=list)
    passes_without_llvm_opt: bool | None = None
    passes_folded: bool | None = None     # passes with --fold-constants (XLA's constant folder computes it)
    klass: str = UNCLASSIFIED
    reason: str = ""
    reproducer: str = ""


def _unit_roundoff(dtype: Any) -> float:
    import ml_dtypes
    import numpy as np

    dt = np.dtype(dtype)
    if dt.kind == "c":
        dt = np.dtype(np.float32 if dt.itemsize == 8 else np.float64)
    return float(ml_dtypes.finfo(dt).eps) / 2


def _part_dtype(dtype: Any) -> Any:
    import numpy as np

    dt = np.dtype(dtype)
    if dt.kind == "c":
        return np.dtype(np.float32 if dt.itemsize == 8 else np.float64)
    return dt


def _bits_hex(x: Any) -> str:
    import numpy as np

    a = np.asarray(x)
    uint = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return f"0x{int(a.reshape(1).view(uint)[0]):0{a.dtype.itemsize * 2}X}"


def _ulp_bucket(u: int) -> str:
    for hi, label in ((3, "<=3"), (16, "4-16"), (256, "17-256"), (65536, "257-65536")):
        if u <= hi:
            return label
    return ">65536" if u < 2**64 - 1 else "non-finite"


@dataclass
class OpInfo:
    """What the evidence needs of the op that made a checked value, read while its module
    is alive (an op of a freed module must not be touched)."""

    name: str = "(argument)"          # func.call @f for a call
    unstable_sort: bool = False       # a stablehlo.sort without is_stable
    fft: tuple[str, list[int]] | None = None        # (type, fft_length)
    dot: tuple[list[int], ...] | None = None        # lhs/rhs batching, lhs/rhs contracting dims


def _op_info(owner: Any) -> OpInfo:
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return OpInfo()
    op = owner.operation
    attrs = op.attributes
    if op.name == "func.call":
        return OpInfo(f"func.call @{str(attrs['callee']).lstrip('@')}")
    info = OpInfo(op.name)
    if op.name == "stablehlo.sort":
        info.unstable_sort = "is_stable" not in attrs or str(attrs["is_stable"]) != "true"
    elif op.name == "stablehlo.fft":
        text = str(op)
        info.fft = (re.search(r"type\s*=\s*(\w+)", text).group(1),
                    [int(x) for x in re.search(r"length\s*=\s*\[([^\]]*)\]", text).group(1).split(",")])
    elif op.name == "stablehlo.dot_general":
        d = stablehlo.DotDimensionNumbers(attrs["dot_dimension_numbers"])
        info.dot = (list(d.lhs_batching_dimensions), list(d.rhs_batching_dimensions),
                    list(d.lhs_contracting_dimensions), list(d.rhs_contracting_dimensions))
    return info


def _check_values(module: Any, source: str, line_offset: int) -> tuple[Any, list[Any], list[tuple[OpInfo, list]]]:
    """(plan, outputs, [(the op that made each check's actual value, its operands' values)])
    for a check file, compiled and run on XLA CPU as ``mlirhlo run`` does, with probe checks
    added after the originals that return the operands of each checked value's op."""
    from jaxlib.mlir import ir

    from mlirhlo_driver.execute import engine
    from mlirhlo_driver.inputs import checks
    from mlirhlo_driver.ir import emit

    m = emit.clone(module)
    infos, probed = [], []
    with m.context, ir.Location.unknown():
        main = checks._entry_function(m, source)
        block = main.regions[0].blocks[0]
        ops = [o.operation for o in block.operations]
        ret = ops[-1]
        for op in [o for o in ops if checks._is_check_call(o)]:
            owner = op.operands[0].owner
            info = _op_info(owner)
            infos.append(info)
            operands = list(owner.operation.operands) if info.name != "(argument)" else []
            for v in operands:
                ir.Operation.create("stablehlo.custom_call", results=[], operands=[v, v], attributes={
                    "call_target_name": ir.StringAttr.get("check.expect_eq"),
                    "has_side_effect": ir.BoolAttr.get(True)}, ip=ir.InsertionPoint(ret))
            probed.append(len(operands))
    from mlirhlo_driver.xla.backend import run_on_host

    plan = checks.prepare(m, evaluate=run_on_host, source=source, line_offset=line_offset)
    outputs = engine.run_plan(plan)[0]
    n = len(infos)
    probes, operands, at = plan.checks[n:], [], 0
    for count in probed:
        operands.append([outputs[c.actual_index] for c in probes[at:at + count]])
        at += count
    plan.checks = plan.checks[:n]
    return plan, outputs, list(zip(infos, operands))


_NARROW = re.compile(r"(?<=[x<])(bf16|f16|f32)(?=>)")
# A dense elements attribute of a narrow float type: its body is hex data (quoted), one
# hex element (a splat) or a list whose elements may be hex (MLIR prints NaNs and
# infinities so).
_DENSE = re.compile(r'dense<([^<>]*)>(\s*:\s*tensor<(?:\d+x)*)(bf16|f16|f32|complex<f32>|complex<f16>)>')
_HEX_TOKEN = re.compile(r"0x[0-9A-Fa-f]+")


def _widen_hex(match: re.Match) -> str:
    """The attribute of ``match`` with its hex data or elements re-encoded for f64
    (complex<f64>), the widened type's width."""
    import ml_dtypes
    import numpy as np

    body, shape, elem = match.groups()
    complex_ = elem.startswith("complex")
    part = elem[len("complex<"):-1] if complex_ else elem
    narrow = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}[part]
    new_elem = "complex<f64>" if complex_ else "f64"
    if body.startswith('"0x'):
        raw = np.frombuffer(bytes.fromhex(body[3:-1]), dtype=narrow)
        if complex_:  # real and imaginary parts interleaved, each of the part type
            raw = raw.reshape(-1, 2)
        data = raw.astype(np.float64).tobytes()
        return f'dense<"0x{data.hex().upper()}">{shape}{new_elem}>'

    def element(tok: re.Match) -> str:  # one element's bits, most significant digit first
        value = np.array([int(tok.group(0), 16)], dtype=f"u{np.dtype(narrow).itemsize}").view(narrow)
        return f"0x{int(value.astype(np.float64).view(np.uint64)[0]):016X}"

    return f"dense<{_HEX_TOKEN.sub(element, body)}>{shape}{new_elem}>"


def promoted_reference(plan: Any, index: int) -> Any | None:
    """Output ``index`` of ``plan``'s module computed with every bf16/f16/f32 (and their
    complex) type widened to f64 on XLA CPU, or None where the widened text does not
    parse or compile (e.g. hex constants whose width is the type's)."""
    import numpy as np

    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.execute import engine
    from mlirhlo_driver.inputs import loader

    text = _NARROW.sub("f64", _DENSE.sub(_widen_hex, str(plan.module)))
    if text == str(plan.module):
        return None
    try:
        module = loader.parse_mlir(text, "<promoted>")
        args = []
        for p in plan.parameters:
            p = np.asarray(p)
            kind = engine._dtype_class(p.dtype)
            if kind == "complex":
                p = p.astype(np.complex128)
            elif kind == "float":
                p = p.astype(np.float64)
            args.append(p)
        with _jaxlib.x64(True):  # the widened module's f64 values stay f64
            return engine.run_xla(module, args)[0][index]
    except Exception as e:  # noqa: BLE001 - no reference is a finding, not a failure of the report
        print(f"note: no float64 reference: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        return None


def exact_dot_general(dims: tuple[list[int], ...], lhs: Any, rhs: Any) -> Any:
    """dot_general of two float/complex arrays in exact rational arithmetic: an object
    array of (real, imag) Fraction pairs in the result's layout (batch, lhs free, rhs free)."""
    import numpy as np

    lb, rb, lc, rc = dims
    lf = [d for d in range(lhs.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.ndim) if d not in rb + rc]
    L = np.transpose(lhs, lb + lf + lc)
    R = np.transpose(rhs, rb + rc + rf)
    bshape = L.shape[:len(lb)]
    fl, k, fr = math.prod(L.shape[len(lb):len(lb) + len(lf)]), math.prod(L.shape[len(lb) + len(lf):]), \
        math.prod(R.shape[len(rb) + len(rc):])
    B = math.prod(bshape)
    L = L.reshape(B, fl, k)
    R = R.reshape(B, k, fr)
    out = np.empty((B, fl, fr), dtype=object)

    def parts(x: Any) -> tuple[Fraction, Fraction]:
        c = complex(x)
        return Fraction(c.real), Fraction(c.imag)

    Lp = [[[parts(L[b, i, t]) for t in range(k)] for i in range(fl)] for b in range(B)]
    Rp = [[[parts(R[b, t, j]) for j in range(fr)] for t in range(k)] for b in range(B)]
    for b in range(B):
        for i in range(fl):
            for j in range(fr):
                re_, im_ = Fraction(0), Fraction(0)
                for t in range(k):
                    (ar, ai), (br, bi) = Lp[b][i][t], Rp[b][t][j]
                    re_ += ar * br - ai * bi
                    im_ += ar * bi + ai * br
                out[b, i, j] = (re_, im_)
    shape = tuple(bshape) + tuple(lhs.shape[d] for d in lf) + tuple(rhs.shape[d] for d in rf)
    return out.reshape(shape)


def longdouble_fft(fft: tuple[str, list[int]], operand: Any) -> Any:
    """stablehlo.fft (type, fft_length) of ``operand`` in long double (scipy.fft), for float64 FFTs."""
    import numpy as np
    import scipy.fft

    kind, lengths = fft
    axes = tuple(range(operand.ndim - len(lengths), operand.ndim))
    x = operand.astype(np.clongdouble if operand.dtype.kind == "c" else np.longdouble)
    if kind == "FFT":
        return scipy.fft.fftn(x, axes=axes)
    if kind == "IFFT":
        return scipy.fft.ifftn(x, axes=axes)
    if kind == "RFFT":
        return scipy.fft.rfftn(x, axes=axes)
    return scipy.fft.irfftn(x, s=lengths, axes=axes)


def _errors(values: Any, ref: Any) -> Any:
    """|values - ref| per element (float64; complex: the modulus), ref numeric or exact pairs."""
    import numpy as np

    v = np.asarray(values)
    if ref.dtype == object:
        flat = []
        for x, (rr, ri) in zip(v.reshape(-1), ref.reshape(-1)):
            c = complex(x)
            dr, di = Fraction(c.real) - rr, Fraction(c.imag) - ri
            flat.append(math.hypot(float(dr), float(di)))
        return np.array(flat).reshape(v.shape)
    wide = np.clongdouble if (v.dtype.kind == "c" or ref.dtype.kind == "c") else np.longdouble
    return np.abs(v.astype(wide) - ref.astype(wide)).astype(np.float64)


def _magnitudes(ref: Any) -> Any:
    import numpy as np

    if ref.dtype == object:
        return np.array([math.hypot(float(r), float(i)) for r, i in ref.reshape(-1)]).reshape(ref.shape)
    return np.abs(ref.astype(np.clongdouble if ref.dtype.kind == "c" else np.longdouble)).astype(np.float64)


def check_evidence(check: Any, outputs: list[Any], info: OpInfo, operands: list[Any], plan: Any) -> CheckEvidence:
    """The evidence of one failing check, from the arrays."""
    import numpy as np

    from mlirhlo_driver.execute import engine
    from mlirhlo_driver.inputs import checks

    a, e = np.asarray(outputs[check.actual_index]), np.asarray(outputs[check.expected_index])
    cls = engine._dtype_class(a.dtype)
    ok = _passing(check, a, e, cls)
    bad_idx = list(zip(*np.nonzero(~ok))) if a.ndim else ([()] if not ok else [])
    ev = CheckEvidence(check.kind, check.location, info.name, str(a.dtype), tuple(a.shape),
                       len(bad_idx), int(a.size), dict(check.options), unstable_sort=info.unstable_sort)
    if cls not in ("float", "complex") or not bad_idx:
        return ev
    ulp = engine.ulp_difference(a, e)
    bad_ulps = [int(ulp[i]) for i in bad_idx]
    ev.max_ulp = max(bad_ulps)
    if len(bad_idx) <= 8:
        ev.elements = [f"[{', '.join(map(str, map(int, i)))}]: {'inf' if u == engine.MAX_ULP else u}"
                       for i, u in zip(bad_idx, bad_ulps)]
    for u in bad_ulps:
        ev.ulp_counts[_ulp_bucket(u)] = ev.ulp_counts.get(_ulp_bucket(u), 0) + 1
    a_nan = np.isnan(a.real) | (np.isnan(a.imag) if cls == "complex" else False)
    e_nan = np.isnan(e.real) | (np.isnan(e.imag) if cls == "complex" else False)
    ev.nan_only = all(a_nan[i] and e_nan[i] for i in bad_idx)
    if ev.nan_only:
        ev.nan_identical = all(_bits_hex(a[i]) == _bits_hex(e[i]) for i in bad_idx)
        ev.nan_bits = [f"[{', '.join(map(str, map(int, i)))}]: {_bits_hex(a[i])} vs {_bits_hex(e[i])}"
                       for i in bad_idx if _bits_hex(a[i]) != _bits_hex(e[i])]
        ev.same_multiset = sorted(_bits_hex(x) for x in a.reshape(-1)) == \
            sorted(_bits_hex(x) for x in e.reshape(-1))
        return ev
    if check.kind == "expect_almost_eq":
        ev.tolerance = float(check.options.get("tolerance", checks.DIALECT_TOLERANCE))
        part = _part_dtype(a.dtype)
        spacing = [float(np.spacing(part.type(abs(complex(e[i]).real)))) for i in bad_idx] + \
                  ([float(np.spacing(part.type(abs(complex(e[i]).imag)))) for i in bad_idx]
                   if cls == "complex" else [])
        ev.min_ulp_of_expected = min(max(spacing[j], spacing[j + len(bad_idx)]) if cls == "complex"
                                     else spacing[j] for j in range(len(bad_idx)))
    ref, how = _reference(check, info, operands, plan, a)
    if ref is None:
        return ev
    ev.reference = how
    err_x, err_e = _errors(a, ref), _errors(e, ref)
    norm = float(np.sqrt(np.sum(_magnitudes(ref) ** 2))) or 1.0
    u = _unit_roundoff(a.dtype)
    ev.err_xla = float(np.sqrt(np.sum(err_x ** 2))) / norm / u
    ev.err_expected = float(np.sqrt(np.sum(err_e ** 2))) / norm / u
    worst = max(bad_idx, key=lambda i: err_x[i])
    ev.worst = (f"[{', '.join(map(str, map(int, worst)))}]: XLA {_fmt(a[worst])} (off by {err_x[worst]:.3g}), "
                f"expected {_fmt(e[worst])} (off by {err_e[worst]:.3g}), {ulp[worst]} ULP apart")
    return ev


def _fmt(x: Any) -> str:
    c = complex(x)
    return repr(c) if c.imag or isinstance(x, complex) or getattr(x, "dtype", None) is not None and \
        x.dtype.kind == "c" else repr(float(c.real))


def _passing(check: Any, a: Any, e: Any, cls: str) -> Any:
    """The elements that pass, by the check's semantics (execute.engine.evaluate_check's)."""
    import numpy as np

    from mlirhlo_driver.execute import engine
    from mlirhlo_driver.inputs import checks

    if check.kind == "expect_eq":
        if cls == "complex":
            with np.errstate(invalid="ignore"):
                return (a.real == e.real) & (a.imag == e.imag)
        with np.errstate(invalid="ignore"):
            return np.asarray(a == e)
    if check.kind == "expect_almost_eq":
        tol = float(check.options.get("tolerance", checks.DIALECT_TOLERANCE))
        if cls == "complex":
            return engine._almost_equal_parts(a.real, e.real, tol) & engine._almost_equal_parts(a.imag, e.imag, tol)
        if cls == "float":
            return engine._almost_equal_parts(a, e, tol)
        return engine._abs_error(a, e, cls) <= tol
    lo = int(check.options.get("min_ulp_difference", 0))
    hi = int(check.options.get("max_ulp_difference", checks.CUSTOM_CALL_MAX_ULP))
    if cls in ("float", "complex"):
        u = engine.ulp_difference(a, e)
    else:
        u = np.minimum(engine._abs_error(a, e, cls), 2.0**63).astype(np.uint64)
    return (u >= np.uint64(lo)) & (u <= np.uint64(hi))


def _reference(check: Any, info: OpInfo, operands: list[Any], plan: Any, a: Any) -> tuple[Any | None, str]:
    import numpy as np

    if np.dtype(_part_dtype(a.dtype)).itemsize < 8:
        ref = promoted_reference(plan, check.actual_index)
        return (ref, "the same computation in float64 on XLA CPU") if ref is not None else (None, "")
    if info.dot is not None and len(operands) == 2:
        return exact_dot_general(info.dot, *operands), "exact rational dot_general"
    if info.fft is not None and len(operands) == 1:
        return longdouble_fft(info.fft, operands[0]), "long-double FFT (scipy.fft)"
    return None, ""


def file_evidence(row: dict) -> FileEvidence:
    """Evidence of one failing row of ``mlirhlo run --json``."""
    from mlirhlo_driver.execute import engine
    from mlirhlo_driver.inputs import loader

    ev = FileEvidence(row["module"], row["source"], row["status"], row["message"])
    if row["status"] != "check-failed":
        return ev
    loaded = loader.load(row["source"])[0]
    plan, outputs, producers = _check_values(loaded.module, row["source"], loaded.line_offset)
    for check, (info, operands) in zip(plan.checks, producers):
        if engine.evaluate_check(check, outputs).passed:
            continue
        ev.checks.append(check_evidence(check, outputs, info, operands, plan))
    return ev


# ============================================================ classification

def classify(ev: FileEvidence) -> tuple[str, str, str]:
    """(class, reason, reproducer key or '') of one failing file, by these rules in order:

    1. not a failed check (the module failed, crashed, hung or was refused): driver
       defect, since every file of the corpus is valid input the driver must run.
    2. the file passes with LLVM's optimizations off: XLA kernel deviation (the kernels
       XLA's LLVM optimizes compute something else than the ops, one rounding each).
    3. every failing element is NaN on both sides: expected value over-specified
       (the same bits: ``expect_eq`` never holds for a NaN; an unstable sort holding
       the same values: the order of equal keys; else the NaN's sign or payload).
    4. ``expect_almost_eq`` whose tolerance is below one ULP of every failing expected
       value, XLA within 3 ULP: expected value over-specified.
    5. with a reference: XLA's normwise error at most ACCURACY_SLACK times the expected
       values' (or within 4 units of roundoff): expected value over-specified; else XLA
       kernel deviation.
    6. otherwise unclassified.
    """
    if ev.status != "check-failed":
        return DRIVER, f"{ev.status}: {ev.message}", ""
    if ev.passes_without_llvm_opt:
        return KERNEL, ("passes with --xla_backend_optimization_level=0: LLVM's optimization of XLA's "
                        "kernels changes the values; " + REPRODUCERS["llvm-opt"][1]), "llvm-opt"
    if not ev.checks:
        return UNCLASSIFIED, "the failing checks pass when recomputed", ""
    reasons = []
    for c in ev.checks:
        if c.nan_only:
            if c.nan_identical:
                reasons.append((OVERSPECIFIED, f"{c.kind} on NaN elements: XLA's bits equal the expected "
                                               "ones, and NaN == NaN is false under IEEE equality"))
            elif c.unstable_sort and c.same_multiset:
                reasons.append((OVERSPECIFIED, "order of NaNs the comparator makes equal in a sort without "
                                               "is_stable: XLA holds the same values in another order"))
            else:
                reasons.append((OVERSPECIFIED, "NaN sign or payload, which the ops leave unspecified"))
            continue
        if c.tolerance is not None and c.min_ulp_of_expected is not None and \
                c.min_ulp_of_expected > c.tolerance and (c.max_ulp or 0) <= 3:
            reasons.append((OVERSPECIFIED, f"tolerance {c.tolerance:g} is below one ULP of the failing "
                                           f"expected values (at least {c.min_ulp_of_expected:.3g}); XLA is "
                                           f"within {c.max_ulp} ULP"))
            continue
        if c.err_xla is not None:
            if c.err_xla <= max(ACCURACY_SLACK * c.err_expected, 4.0):
                reasons.append((OVERSPECIFIED, f"XLA is as close to the reference as the expected values "
                                               f"({c.err_xla:.3g} u vs {c.err_expected:.3g} u normwise); the "
                                               f"check's per-element bound is tighter than the op's rounding"))
            else:
                reasons.append((KERNEL, f"XLA's normwise error is {c.err_xla:.3g} u, the expected values' "
                                        f"{c.err_expected:.3g} u"))
            continue
        reasons.append((UNCLASSIFIED, "no rule decides (no reference for this op and type)"))
    for klass in (KERNEL, UNCLASSIFIED, OVERSPECIFIED):
        picked = [r for k, r in reasons if k == klass]
        if picked:
            return klass, "; ".join(dict.fromkeys(picked)), ""
    return UNCLASSIFIED, "", ""


# =================================================================== report

def _evidence_text(ev: FileEvidence) -> str:
    parts = []
    for c in ev.checks:
        head = f"`{c.kind}` on `{c.op}` ({c.dtype}{list(c.shape)}): {c.bad} of {c.total} elements fail"
        if c.max_ulp is not None and not c.nan_only:
            buckets = ", ".join(f"{k}: {v}" for k, v in sorted(c.ulp_counts.items(), key=_bucket_order))
            head += f"; ULP distance max {c.max_ulp} ({buckets})"
            if c.elements:
                head += "; by element " + ", ".join(c.elements)
        if c.nan_only:
            head += "; all NaN on both sides"
            head += ("; bits identical" if c.nan_identical else
                     "; bits (XLA vs expected) " + ", ".join(c.nan_bits))
            if c.unstable_sort:
                head += "; sort without is_stable" + ("; same values, other order" if c.same_multiset else "")
        if c.tolerance is not None and c.min_ulp_of_expected is not None:
            head += f"; tolerance {c.tolerance:g}, ULP of the failing expected values >= {c.min_ulp_of_expected:.3g}"
        if c.reference:
            head += (f"; against {c.reference}: normwise error XLA {c.err_xla:.3g} u, expected "
                     f"{c.err_expected:.3g} u; worst {c.worst}")
        parts.append(head)
    if ev.passes_without_llvm_opt is not None:
        parts.append("passes with `--xla_backend_optimization_level=0`" if ev.passes_without_llvm_opt
                     else "fails with `--xla_backend_optimization_level=0` too")
    if ev.passes_folded is not None:
        parts.append("passes with `--fold-constants` (XLA's constant folder computes the checks)"
                     if ev.passes_folded else "fails with `--fold-constants` too")
    if not ev.checks and ev.status != "check-failed":
        parts.append(f"{ev.status}: {ev.message}")
    return "; ".join(parts).replace("|", "\\|")


def _bucket_order(item: tuple[str, int]) -> int:
    return ["<=3", "4-16", "17-256", "257-65536", ">65536", "non-finite"].index(item[0])


def render(*, commit: str, files: int, cpu: dict | None, cuda: dict | None, jobs: int, spec: str,
           versions: str, tpu: dict | None = None, topology: str = "v5e:1x1") -> str:
    lines = ["# Conformance: StableHLO's testdata on XLA", "",
             f"Written by `python scripts/conformance.py STABLEHLO_CHECKOUT --jobs {jobs}` (do not edit by hand): "
             f"openxla/stablehlo {commit}, {files} files in `stablehlo/testdata/*.mlir`; {versions}; "
             f"{datetime.date.today().isoformat()}.", "",
             "Each file checks itself (`check.expect_eq`, `expect_close`, `expect_almost_eq`), with the "
             "StableHLO interpreter's semantics; every `@inputs()` value is a runtime parameter, so the "
             "checked values come from XLA's kernels. Classes and the rules that assign them: "
             "`scripts/conformance.py` (`classify`). u is the unit roundoff of the checked type "
             "(2^-24 for f32, 2^-53 for f64); a normwise error is ||x - ref|| / ||ref|| in units of u.", "",
             "| platform | command | files | pass | fail | wall |", "|---|---|---|---|---|---|"]
    for label, res, cmd in (("XLA CPU", cpu, f"`mlirhlo run FILES --jobs {jobs}`"),
                            (f"CUDA device-less ({spec})", cuda,
                             f"`mlirhlo opt FILES --platform cuda --gpu-spec {spec} --stage ptx --jobs {jobs}`"),
                            (f"TPU device-less ({topology})", tpu,
                             f"`mlirhlo opt FILES --platform tpu --tpu-topology {topology} --stage hlo --jobs {jobs}`")):
        if res is None:
            lines.append(f"| {label} | {cmd} | not run | | | |")
        else:
            fails = len(res["failures"])
            lines.append(f"| {label} | {cmd} | {files} | {files - fails} | {fails} | {res['wall']:.0f} s |")
    lines += ["", "| class | XLA CPU | CUDA device-less | TPU device-less |", "|---|---|---|---|"]
    for klass in (*CLASSES, *TPU_CLASSES):
        counts = [sum(1 for ev in res["failures"] if ev.klass == klass) if res else "-" for res in (cpu, cuda, tpu)]
        lines.append(f"| {klass} | {counts[0]} | {counts[1]} | {counts[2]} |")
    for label, res in (("XLA CPU", cpu), ("CUDA device-less", cuda), ("TPU device-less", tpu)):
        if res is None:
            continue
        lines += ["", f"## {label} failures", ""]
        if not res["failures"]:
            lines.append("None.")
            continue
        lines += ["| file | class | why | evidence |", "|---|---|---|---|"]
        for ev in res["failures"]:
            why = ev.reason.replace("|", "\\|")
            if ev.reproducer:
                why += f" (reproducer: `{REPRODUCERS[ev.reproducer][0]}`)"
            lines.append(f"| `{ev.name}` | {ev.klass} | {why} | {_evidence_text(ev)} |")
        if res.get("folded"):
            lines += ["", f"Not failures: in {len(res['folded'])} passing files no checked value depends on "
                      "an input (XLA computes it while compiling): " + ", ".join(f"`{n}`" for n in res["folded"])
                      + "."]
    used = sorted({ev.reproducer for res in (cpu, cuda, tpu) if res for ev in res["failures"]
                   if getattr(ev, "reproducer", None)})
    if used:
        lines += ["", "## Reproducers", "", "| reproducer | what it shows | files |", "|---|---|---|"]
        for key in used:
            path, what = REPRODUCERS[key]
            names = [ev.name for res in (cpu, cuda, tpu) if res for ev in res["failures"]
                     if getattr(ev, "reproducer", None) == key]
            lines.append(f"| `{path}` | {what} | {', '.join(f'`{n}`' for n in names)} |")
    return "\n".join(lines) + "\n"


def _versions() -> str:
    from importlib import metadata

    out = []
    for dist in ("jax", "jaxlib"):
        try:
            out.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout", type=Path, help="a checkout of openxla/stablehlo")
    ap.add_argument("-o", "--output", type=Path, default=REPO / "docs" / "conformance.md")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--gpu-spec", default="h100_sxm")
    ap.add_argument("--tpu-topology", default="v5e:1x1")
    ap.add_argument("--platforms", default=None,
                    help="cpu, cuda, tpu (comma list; default: cpu,cuda, and tpu where libtpu is installed)")
    args = ap.parse_args(argv)
    if args.platforms is None:
        from mlirhlo_driver._native import libtpu

        args.platforms = "cpu,cuda" + (",tpu" if libtpu.in_use() is not None else "")
    platforms = {p.strip() for p in args.platforms.split(",") if p.strip()}
    if not platforms or platforms - {"cpu", "cuda", "tpu"}:
        ap.error("--platforms takes a comma list of cpu, cuda, tpu")
    files = testdata_files(args.checkout)
    cpu = cuda = tpu = None
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        work = Path(tmp)
        if "cpu" in platforms:
            rows, wall = run_cpu(files, args.jobs, work)
            failing = [r for r in rows if r["status"] not in ("ok", "ran")]
            evidence = [file_evidence(r) for r in failing]
            check_failed = [Path(ev.path) for ev in evidence if ev.status == "check-failed"]
            if check_failed:
                again, _ = run_cpu(check_failed, args.jobs, work, ("--xla_backend_optimization_level=0",))
                unoptimized = {r["module"] for r in again if r["status"] == "ok"}
                again, _ = run_cpu(check_failed, args.jobs, work, ("--fold-constants",))
                folded = {r["module"] for r in again if r["status"] == "ok"}
                for ev in evidence:
                    if ev.status == "check-failed":
                        ev.passes_without_llvm_opt = ev.name in unoptimized
                        ev.passes_folded = ev.name in folded
            for ev in evidence:
                ev.klass, ev.reason, ev.reproducer = classify(ev)
            cpu = {"failures": evidence, "wall": wall,
                   "folded": [r["module"] for r in rows if r["status"] == "ok" and r.get("checked_values") == "folded"]}
            print(f"XLA CPU: {len(files) - len(failing)} of {len(files)} pass ({wall:.0f} s)", file=sys.stderr)
        if "cuda" in platforms:
            failed, wall = run_cuda(files, args.jobs, args.gpu_spec, work)
            evidence = [FileEvidence(name, "", "compile-failed", msg) for name, msg in sorted(failed.items())]
            for ev in evidence:
                ev.klass, ev.reason = UNCLASSIFIED, f"device-less compile failed: {ev.message}"
            cuda = {"failures": evidence, "wall": wall}
            print(f"CUDA device-less: {len(files) - len(failed)} of {len(files)} compile ({wall:.0f} s)",
                  file=sys.stderr)
        if "tpu" in platforms:
            failed, wall = run_tpu(files, args.jobs, args.tpu_topology, work)
            evidence = [FileEvidence(name, "", "compile-failed", msg) for name, msg in sorted(failed.items())]
            for ev in evidence:
                ev.klass, ev.reason = classify_tpu(ev.message)
                # the evidence: XLA's words, without the file's path and the op's metadata
                ev.message = re.sub(r"\s*(?:, metadata=\{[^}]*\})?\s*Suspected Python Code Location:.*$", "",
                                    re.sub(r"^\S*\.mlir: ", "", ev.message))[:300]
            tpu = {"failures": evidence, "wall": wall}
            print(f"TPU device-less: {len(files) - len(failed)} of {len(files)} compile ({wall:.0f} s)",
                  file=sys.stderr)
    text = render(commit=checkout_commit(args.checkout), files=len(files), cpu=cpu, cuda=cuda, jobs=args.jobs,
                  spec=args.gpu_spec, versions=_versions(), tpu=tpu, topology=args.tpu_topology)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.output.with_name(args.output.name + ".tmp")
    tmp_out.write_text(text)
    os.replace(tmp_out, args.output)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
