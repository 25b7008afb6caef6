"""The conformance report: StableHLO's testdata on XLA CPU, device-less CUDA and TPU, and a TPU chip, docs/conformance.md.

    python scripts/conformance.py PATH/TO/stablehlo [-o docs/conformance.md] [--jobs 2]
        [--gpu-spec h100_sxm] [--tpu-topology v5e:1x1] [--platforms cpu,cuda,tpu|none]
        [--tpu-chip-json 'DIR/conf-*.json' ...] [--tpu-chip-label TEXT] [--tpu-chip-command TEXT]
        [--commit SHA]
    python scripts/conformance.py PATH/TO/stablehlo --chunks N --list-chunk K

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

**A TPU chip** is not on the machine that writes the report: the files run on one
elsewhere (``mlirhlo run --platform tpu``: compiled and run on the attached chip), in
chunks, so that the rows of the chunks that finished survive a time limit:
``python3 scripts/tpu_chip.py run --steps conformance --testdata TGZ --out OUT`` does it
within a time budget (``--first-chunk K`` resumes). By hand, on the chip's machine, with the
driver installed and a copy of the same checkout::

    for k in 0 1 2 3 4 5; do
      mlirhlo run $(python3 scripts/conformance.py /tmp/shlo-td --chunks 6 --list-chunk $k) \\
        --platform tpu --json $OUT/conf-$k.json
    done

(``--chunks N --list-chunk K`` prints chunk K, 0 to N-1, of the sorted testdata, one
file a line, and nothing else; it loads nothing.) Then, here, ``--tpu-chip-json
'DIR/conf-*.json'`` reads those rows (several files or globs; a glob's files in natural
order, ``conf-10`` after ``conf-9``; where two rows name one module, the later wins) into
the column "TPU chip": files with a row ``ok`` pass, the others fail, each classed by
:func:`classify_tpu_chip` (a refusal the device-less TPU column classed keeps that class),
and files of the checkout with no row are **not run**: the chip run stopped early; they
are counted apart, never as passes. The chip's own classes: **bfloat16 passes at DEFAULT
precision** (a float check fails in a file whose float products leave their precision to
the TPU, which computes a float32 product as one bfloat16 pass by design; the evidence
gives the worst error) and **XLA TPU deviation** (any other check that fails on the chip);
its refusals take the device-less classes (64-bit types, op forms not implemented on TPU).
``--platforms none --tpu-chip-json ...`` writes the
report with the chip's column alone; every platform not run here is still listed, as
"not run".

The report is rewritten whole on every run: counts per platform and class, then one
row per failing file with its class and evidence. ``--commit`` names the checkout's
commit where it is no git checkout (else ``git rev-parse``; else "unknown").
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


def checkout_commit(checkout: Path, given: str | None = None) -> str:
    """``given`` (``--commit``), else the checkout's HEAD where it is the top of a git
    checkout, else "unknown" (a copy without .git; a folder inside some other repository,
    whose HEAD says nothing of the testdata's)."""
    if given:
        return given
    try:
        top = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=30)
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != checkout.resolve():
            return "unknown"
        out = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def chunk(files: list[Path], count: int, index: int) -> list[Path]:
    """Chunk ``index`` (0 to count-1) of ``files`` cut into ``count`` runs of consecutive
    files, their sizes differing by one at most."""
    size, extra = divmod(len(files), count)
    start = index * size + min(index, extra)
    return files[start:start + size + (1 if index < extra else 0)]


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
    # libtpu 0.0.42.1 on the chip, on complex128 files the device-less 0.0.50.1 compiles.
    (r"RET_CHECK failure \(platforms/xla/service/jellyfish/", TPU_COMPILER,
     "libtpu's TPU compiler fails one of its own internal checks (RET_CHECK) on a valid module"),
    (r"crashed|aborted|SIG[A-Z]+", DRIVER, "libtpu's process died (the driver's TPU process: one line)"),
]


def classify_tpu(message: str) -> tuple[str, str]:
    for pattern, klass, why in TPU_RULES:
        if re.search(pattern, message):
            return klass, why
    return UNCLASSIFIED, "device-less compile failed"


def trim_tpu_message(message: str) -> str:
    """XLA's words, without the file's path, the op's metadata and jax's location, cut to 300
    characters: the evidence of a TPU row."""
    return re.sub(r"\s*(?:, metadata=\{[^}]*\})?\s*Suspected Python Code Location:.*$", "",
                  re.sub(r"^\S*\.mlir: ", "", message), flags=re.S)[:300]


# ================================================================= TPU chip

CHIP_COMMAND = "mlirhlo run FILES --platform tpu --json R"

# A run on the chip (mlirhlo run --platform tpu) fails in classes of its own besides the compiler's.
TPU_BF16 = "bfloat16 passes at DEFAULT precision"
TPU_DEVIATION = "XLA TPU deviation"
# The worker running the module on the chip died of a signal: libtpu ended its process (the
# driver isolated it: the run went on with the next module). Seen with libtpu 0.0.42.1 on 12
# complex128 files (abs, tanh, rsqrt, dot_general ...) that compile device-less.
TPU_CHIP_ABORT = "libtpu aborted on the chip"
TPU_CHIP_CLASSES = (TPU_BF16, TPU_DEVIATION, TPU_CHIP_ABORT)
# 64-bit refusals in other words than the device-less compile's (a runtime's, another libtpu's).
TPU_X64_WORDS = (r"(?i)\b(?:f64|s64|u64|c128|i64|float64|int64|uint64|complex128)\b[^\n]{0,80}"
                 r"(?:not supported|unsupported|not implemented)|(?:not supported|unsupported|not implemented)"
                 r"[^\n]{0,80}\b(?:f64|s64|u64|c128|i64|float64|int64|uint64|complex128)\b")
# Statuses that say the driver lost the module, or judged a valid file bad input.
TPU_CHIP_DRIVER_STATUSES = ("crashed", "lost", "invalid")
_WORST = re.compile(r"worst at index (\[[^\]]*\]|\(\)|\S+): actual=(\S+), expected=(\S+?)(?:,|$)")


def _element(text: str) -> complex | None:
    """A value as a check message prints it (engine.format_value), or None for a NaN's
    bits, a bool or what does not parse."""
    if text in ("true", "false") or "nan" in text:
        return None
    try:
        return complex(text)
    except ValueError:
        return None


def _is_float_text(text: str) -> bool:
    """Whether a check message's value is a float or complex (engine.format_value prints an
    int as digits, a bool as true/false)."""
    return not re.fullmatch(r"-?\d+|true|false", text)


def worst_error(check: dict) -> tuple[str, float, float] | None:
    """(index, |actual - expected|, |expected|) of a failing check's worst element, read
    from its message; None where the message names no two numbers (a NaN's bits, bools)."""
    m = _WORST.search(check.get("message", ""))
    if not m:
        return None
    actual, expected = _element(m.group(2)), _element(m.group(3))
    if actual is None or expected is None:
        return None
    return m.group(1), abs(actual - expected), abs(expected)


def _on_floats(check: dict) -> bool:
    m = _WORST.search(check.get("message", ""))
    return bool(m) and _is_float_text(m.group(2))


def classify_tpu_chip(row: dict, *, products: int = 0, device_less: tuple[str, str] | None = None,
                      on_cpu: tuple[str, str] | None = None) -> tuple[str, str]:
    """(class, reason) of one failing row of ``mlirhlo run --platform tpu --json`` made on a
    chip. ``products``: the file's float products at DEFAULT precision
    (``ir.precision.default_precision_products``); ``device_less``: the class and reason the
    device-less TPU compile gave the file, where it refused it; ``on_cpu``: XLA CPU's, where
    its checks fail there too. The rules, in order:

    1. refused (``failed``, ``invalid``) where the device-less compile refused it too: its class;
    2. a message the device-less rules (:data:`TPU_RULES`) decide: their class (64-bit types,
       op forms not implemented on TPU, the compiler's verifier, libtpu's death); a 64-bit
       type named as unsupported in other words: the 64-bit class;
    3. the worker running it on the chip killed by a signal: libtpu aborted on the chip
       (isolated by the driver); otherwise crashed, lost, or judged bad input: driver defect
       (every file is valid input);
    4. checks fail, every failing one on floats, in a file with float products at DEFAULT
       precision, each one's worst element within the tolerance ``mlirhlo run`` gives a
       TPU's bfloat16 passes (engine.BF16_PASS_TOLERANCE, as atol and rtol): bfloat16
       passes at DEFAULT precision (the TPU computes a float32 product as one bfloat16
       pass, by design);
    5. checks that fail on XLA CPU too: XLA CPU's class;
    6. other failing checks (or a mismatch): XLA TPU deviation;
    7. otherwise (a failure no rule names, a timeout): unclassified.
    """
    from mlirhlo_driver.execute.engine import BF16_PASS_TOLERANCE

    status, message = row.get("status", ""), row.get("message") or ""
    if status in ("failed", "invalid") and device_less is not None:
        return device_less[0], f"as the device-less compile: {device_less[1]}"
    signal = re.search(r"killed by (SIG[A-Z]+)", message)
    if status == "crashed" and signal:
        return TPU_CHIP_ABORT, (f"the worker running it on the chip died of {signal.group(1)}: libtpu ended its "
                                "process; the driver reported it as this module's failure and went on")
    klass, why = classify_tpu(message)
    if klass != UNCLASSIFIED:
        return klass, why
    if re.search(TPU_X64_WORDS, message):
        return TPU_X64, "TPUs have no 64-bit units: the chip refuses this 64-bit type here"
    if status in TPU_CHIP_DRIVER_STATUSES:
        return DRIVER, f"{status} on a valid file"
    if status in ("check-failed", "mismatch"):
        failing = [c for c in row.get("checks") or [] if not c.get("passed")]
        worst = [worst_error(c) for c in failing]
        read = failing and all(w is not None for w in worst) and all(_on_floats(c) for c in failing)
        if read:
            index, err, expected = max(worst, key=lambda w: w[1])
            said = f"worst error {err:.3g} at {index}" + (f" ({err / expected:.3g} relative)" if expected else "")
        if read and products:
            if all(e <= BF16_PASS_TOLERANCE * (1 + x) for _, e, x in worst):
                return TPU_BF16, (f"{products} float product{'s' if products != 1 else ''} at DEFAULT precision, "
                                  "which the TPU computes as one bfloat16 pass by design (`--precision highest` "
                                  f"for full float32); {said}, within the {BF16_PASS_TOLERANCE:g} a TPU run allows "
                                  "such products")
        if failing and on_cpu is not None:
            return on_cpu[0], f"fails on XLA CPU too: {on_cpu[1]}"
        if failing or status == "mismatch":
            beyond = (f"; {said}, beyond what bfloat16 products at DEFAULT precision explain"
                      if read and products else f"; {said}" if read else "")
            return TPU_DEVIATION, "a check fails on the chip" + beyond
    if status == "timeout":
        return UNCLASSIFIED, "ran past its time limit on the chip"
    return UNCLASSIFIED, f"{status} on the chip; no rule decides"


def read_chip_rows(patterns: list[str]) -> tuple[dict[str, dict], list[Path]]:
    """The rows of ``mlirhlo run --json`` reports by module (the later of two rows for one
    module wins) and the files read: ``patterns`` in their order, each a path or a glob
    whose files are taken in natural order (conf-2 before conf-10). An error line and exit 2
    for a pattern that names no file or a file that is not such a report."""
    import glob

    def natural(path: str) -> list:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]

    rows: dict[str, dict] = {}
    read: list[Path] = []
    for pattern in patterns:
        found = sorted(glob.glob(pattern), key=natural) if glob.has_magic(pattern) else \
            [pattern] if Path(pattern).is_file() else []
        if not found:
            print(f"error: --tpu-chip-json {pattern}: no such file", file=sys.stderr)
            raise SystemExit(2)
        for name in found:
            try:
                data = json.loads(Path(name).read_text())
                if not isinstance(data, list) or not all(isinstance(r, dict) and "module" in r and "status" in r
                                                         for r in data):
                    raise ValueError("not a list of report rows (mlirhlo run --json)")
            except (OSError, ValueError) as e:
                print(f"error: --tpu-chip-json {name}: {e}", file=sys.stderr)
                raise SystemExit(2) from None
            for r in data:
                rows[r["module"]] = r
            read.append(Path(name))
    return rows, read


def _default_precision_products(path: Path) -> int:
    """The file's float products at DEFAULT precision, as ``mlirhlo run`` counts them for
    its TPU tolerance (0 where the file does not load)."""
    from mlirhlo_driver.inputs import loader
    from mlirhlo_driver.ir import precision

    try:
        return sum(precision.default_precision_products(m.module) for m in loader.load(str(path)))
    except Exception:  # noqa: BLE001 - a file the driver cannot read has no products to speak of
        return 0


def _chip_evidence(row: dict) -> str:
    """A chip row's evidence: a refusal's words, else each failing check, trimmed as the
    device-less TPU rows are."""
    failing = [c for c in row.get("checks") or [] if not c.get("passed")]
    if not failing:
        return f"{row.get('status')}: {trim_tpu_message(row.get('message') or '')}"
    parts = []
    for c in failing:
        line = re.search(r":(\d+):\d+$", c.get("location", ""))
        parts.append(f"`{c.get('kind')}`" + (f" at line {line.group(1)}" if line else "") + ": " +
                     trim_tpu_message(c.get("message", "")))
    return "; ".join(parts)


def chip_results(rows: dict[str, dict], files: list[Path], *, device_less: dict[str, tuple[str, str]],
                 on_cpu: dict[str, tuple[str, str]], command: str, label: str, read: list[Path]) -> dict:
    """The TPU chip column: its failures (FileEvidence, classed), the passing count, the files
    with no row (not run) and the rows that name no file of the checkout (ignored)."""
    names = [f.stem for f in files]
    by_name = dict(zip(names, files))
    failures, passed, not_run = [], 0, []
    for name in names:
        row = rows.get(name)
        if row is None:
            not_run.append(name)
            continue
        if row["status"] in ("ok", "ran"):
            passed += 1
            continue
        failing_floats = row["status"] in ("check-failed", "mismatch")
        products = _default_precision_products(by_name[name]) if failing_floats else 0
        ev = FileEvidence(name, row.get("source", ""), row["status"], row.get("message") or "")
        ev.klass, ev.reason = classify_tpu_chip(row, products=products, device_less=device_less.get(name),
                                                on_cpu=on_cpu.get(name))
        ev.evidence = _chip_evidence(row)
        failures.append(ev)
    return {"failures": failures, "passed": passed, "not_run": not_run,
            "ignored": sorted(set(rows) - set(names)), "command": command, "label": label,
            "reports": [str(p) for p in read]}


def _runs_of(names: list[str], missing: list[str]) -> list[tuple[str, str, int]]:
    """The missing names as runs of consecutive files of ``names``: (first, last, count)."""
    gone = set(missing)
    runs: list[tuple[str, str, int]] = []
    start = None
    for i, name in enumerate([*names, None]):
        if name is not None and name in gone:
            start = i if start is None else start
        elif start is not None:
            runs.append((names[start], names[i - 1], i - start))
            start = None
    return runs


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
    evidence: str = ""                    # the evidence as written, where no measurement makes it (the chip's)


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
    if ev.evidence:
        return ev.evidence.replace("|", "\\|")
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
           versions: str, tpu: dict | None = None, topology: str = "v5e:1x1", chip: dict | None = None,
           names: list[str] | None = None) -> str:
    """The report. ``chip``: :func:`chip_results` (None: no chip rows given); ``names``: the
    testdata's files in order, for the chip's runs of files not run."""
    lines = ["# Conformance: StableHLO's testdata on XLA", "",
             f"Written by `python scripts/conformance.py STABLEHLO_CHECKOUT --jobs {jobs}"
             f"{' --tpu-chip-json DIR/conf-*.json' if chip else ''}` (do not edit by hand): "
             f"openxla/stablehlo {commit}, {files} files in `stablehlo/testdata/*.mlir`; {versions}; "
             f"{datetime.date.today().isoformat()}.", "",
             "Each file checks itself (`check.expect_eq`, `expect_close`, `expect_almost_eq`), with the "
             "StableHLO interpreter's semantics; every `@inputs()` value is a runtime parameter, so the "
             "checked values come from XLA's kernels. Classes and the rules that assign them: "
             "`scripts/conformance.py` (`classify`, `classify_tpu`, `classify_tpu_chip`). u is the unit roundoff "
             "of the checked type (2^-24 for f32, 2^-53 for f64); a normwise error is ||x - ref|| / ||ref|| in "
             "units of u.", "",
             "| platform | command | files | pass | fail | not run | wall |", "|---|---|---|---|---|---|---|"]
    for label, res, cmd in (("XLA CPU", cpu, f"`mlirhlo run FILES --jobs {jobs}`"),
                            (f"CUDA device-less ({spec})", cuda,
                             f"`mlirhlo opt FILES --platform cuda --gpu-spec {spec} --stage ptx --jobs {jobs}`"),
                            (f"TPU device-less ({topology})", tpu,
                             f"`mlirhlo opt FILES --platform tpu --tpu-topology {topology} --stage hlo --jobs {jobs}`")):
        if res is None:
            lines.append(f"| {label} | {cmd} | not run | | | | |")
        else:
            fails = len(res["failures"])
            lines.append(f"| {label} | {cmd} | {files} | {files - fails} | {fails} | 0 | {res['wall']:.0f} s |")
    chip_label = chip["label"] if chip else "TPU chip"
    chip_cmd = f"`{chip['command']}`" if chip else "`mlirhlo run FILES --platform tpu --json R`"
    if chip is None:
        lines.append(f"| {chip_label} | {chip_cmd} | not run | | | | |")
    else:
        lines.append(f"| {chip_label} | {chip_cmd} | {files} | {chip['passed']} | {len(chip['failures'])} | "
                     f"{len(chip['not_run'])} | - |")
    if chip is not None:
        lines += ["", f"The TPU chip's rows were made on a chip elsewhere, in chunks (the loop in "
                      f"`scripts/conformance.py`'s docstring), and read from {len(chip['reports'])} "
                      f"report{'s' if len(chip['reports']) != 1 else ''} (`--tpu-chip-json`)."]
        if chip["not_run"]:
            runs = _runs_of(names or [], chip["not_run"])
            shown = ", ".join(f"`{a}`" if n == 1 else f"`{a}` to `{b}` ({n} files)" for a, b, n in runs[:12])
            more = f", and {len(runs) - 12} more runs" if len(runs) > 12 else ""
            lines.append("")
            lines.append(f"**The chip run stopped early**: {len(chip['not_run'])} of {files} files have no row: "
                         f"not run, counted neither as passes nor as failures: {shown}{more}.")
        if chip["ignored"]:
            lines.append("")
            n = len(chip["ignored"])
            lines.append(f"{n} row{'s name' if n != 1 else ' names'} no file of this checkout, left out: "
                         + ", ".join(f"`{n}`" for n in chip["ignored"][:12])
                         + (", ..." if len(chip["ignored"]) > 12 else "") + ".")
    results = (cpu, cuda, tpu, chip)
    lines += ["", "| class | XLA CPU | CUDA device-less | TPU device-less | TPU chip |", "|---|---|---|---|---|"]
    for klass in (*CLASSES, *TPU_CLASSES, *TPU_CHIP_CLASSES):
        counts = [sum(1 for ev in res["failures"] if ev.klass == klass) if res else "-" for res in results]
        lines.append(f"| {klass} | " + " | ".join(str(c) for c in counts) + " |")
    for label, res in zip(("XLA CPU", "CUDA device-less", "TPU device-less", "TPU chip"), results):
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
    used = sorted({ev.reproducer for res in results if res for ev in res["failures"]
                   if getattr(ev, "reproducer", None)})
    if used:
        lines += ["", "## Reproducers", "", "| reproducer | what it shows | files |", "|---|---|---|"]
        for key in used:
            path, what = REPRODUCERS[key]
            names_ = [ev.name for res in results if res for ev in res["failures"]
                      if getattr(ev, "reproducer", None) == key]
            lines.append(f"| `{path}` | {what} | {', '.join(f'`{n}`' for n in names_)} |")
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
                    help="cpu, cuda, tpu (comma list; default: cpu,cuda, and tpu where libtpu is installed), "
                         "or none: run nothing here (the report of --tpu-chip-json alone)")
    ap.add_argument("--tpu-chip-json", action="extend", nargs="+", default=[], metavar="JSON",
                    help="rows of `mlirhlo run FILES --platform tpu --json R` made on a TPU chip: files or "
                         "globs (quoted), later rows for a module winning; the report's 'TPU chip' column")
    ap.add_argument("--tpu-chip-label", default="TPU chip", help="the chip's platform in the report "
                    "(say the chip and versions: 'TPU v5e chip (jax 0.10.2, libtpu 0.0.42.1)')")
    ap.add_argument("--tpu-chip-command", default=CHIP_COMMAND,
                    help=f"the command that made the chip's rows (default: {CHIP_COMMAND})")
    ap.add_argument("--commit", default=None,
                    help="the checkout's commit, for a checkout that is no git repository (else git's HEAD)")
    ap.add_argument("--chunks", type=int, default=None, metavar="N",
                    help="with --list-chunk: cut the testdata into N chunks for runs on a chip")
    ap.add_argument("--list-chunk", type=int, default=None, metavar="K",
                    help="print the files of chunk K (0 to N-1), one a line, and exit")
    args = ap.parse_args(argv)
    if (args.chunks is None) != (args.list_chunk is None):
        ap.error("--chunks and --list-chunk go together")
    if args.chunks is not None:
        if args.chunks < 1 or not 0 <= args.list_chunk < args.chunks:
            ap.error(f"--list-chunk K takes 0 to N-1, N = --chunks >= 1 (got --chunks {args.chunks} "
                     f"--list-chunk {args.list_chunk})")
        for f in chunk(testdata_files(args.checkout), args.chunks, args.list_chunk):
            print(f)
        return 0
    if args.platforms is None:
        from mlirhlo_driver._native import libtpu

        args.platforms = "cpu,cuda" + (",tpu" if libtpu.in_use() is not None else "")
    platforms = {p.strip() for p in args.platforms.split(",") if p.strip()}
    if platforms == {"none"}:
        platforms = set()
        if not args.tpu_chip_json:
            ap.error("--platforms none runs nothing here: give --tpu-chip-json")
    elif not platforms or platforms - {"cpu", "cuda", "tpu"}:
        ap.error("--platforms takes a comma list of cpu, cuda, tpu, or none")
    files = testdata_files(args.checkout)
    chip_rows, chip_read = read_chip_rows(args.tpu_chip_json) if args.tpu_chip_json else ({}, [])
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
                ev.message = trim_tpu_message(ev.message)
            tpu = {"failures": evidence, "wall": wall}
            print(f"TPU device-less: {len(files) - len(failed)} of {len(files)} compile ({wall:.0f} s)",
                  file=sys.stderr)
    chip = None
    if args.tpu_chip_json:
        chip = chip_results(chip_rows, files, read=chip_read, command=args.tpu_chip_command,
                            label=args.tpu_chip_label,
                            device_less={ev.name: (ev.klass, ev.reason) for ev in (tpu or {}).get("failures", [])},
                            on_cpu={ev.name: (ev.klass, ev.reason) for ev in (cpu or {}).get("failures", [])
                                    if ev.status == "check-failed"})
        print(f"TPU chip: {chip['passed']} of {len(files)} pass, {len(chip['failures'])} fail, "
              f"{len(chip['not_run'])} not run (from {len(chip_read)} reports)", file=sys.stderr)
    text = render(commit=checkout_commit(args.checkout, args.commit), files=len(files), cpu=cpu, cuda=cuda,
                  jobs=args.jobs, spec=args.gpu_spec, versions=_versions(), tpu=tpu, topology=args.tpu_topology,
                  chip=chip, names=[f.stem for f in files])
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.output.with_name(args.output.name + ".tmp")
    tmp_out.write_text(text)
    os.replace(tmp_out, args.output)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
