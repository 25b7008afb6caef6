"""The conformance report (scripts/conformance.py) and the XLA reproducers it points to.

The script runs over tests/data/conformance/checkout, six files in the form of
openxla/stablehlo's testdata, one per rule that decides a class; each reproducer under
tests/data/conformance/ must still fail on XLA CPU, so these tests flip when XLA
changes. The script test runs ``mlirhlo run`` twice and ``opt --stage ptx`` once over
the six files, in subprocesses as a user would (about 15 s on 2 cores).
"""

from __future__ import annotations

import re
import subprocess
import sys
from fractions import Fraction

import conformance
import numpy as np
import pytest

from tests.conftest import DATA, REPO

HERE = DATA / "conformance"

CHECKOUT = HERE / "checkout"


def _rows(section: str) -> dict[str, tuple[str, str, str]]:
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `([^`]+)` \| ([^|]+) \| (.*?) \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = (m.group(2).strip(), m.group(3), m.group(4))
    return rows


def _check(**kw) -> conformance.CheckEvidence:
    base = dict(kind="expect_close", location="f.mlir:1:1", op="stablehlo.dot_general", dtype="float32",
                shape=(4,), bad=1, total=4)
    return conformance.CheckEvidence(**{**base, **kw})


def test_every_reproducer_the_script_names_is_shipped():
    for path, _ in conformance.REPRODUCERS.values():
        assert (REPO / path).is_file(), path
        assert (REPO / path).with_suffix(".npz").is_file(), path


def test_fma_reproducer_fails_on_xla_cpu_because_xla_contracts(cli, tmp_path):
    hlo = HERE / "fma_contraction_f64.hlo"
    npz = hlo.with_suffix(".npz")
    out = tmp_path / "out.npz"
    r = cli("run", hlo, "--inputs", npz, "--rtol", "0", "--atol", "0", "--jobs", "0", "--save-outputs", out)
    assert r.code == 1, r.out + r.err
    assert "fma_contraction_f64: MISMATCH: output 0: 1/2 differ" in r.out
    inputs = np.load(npz)
    a, b, c = inputs["a"], inputs["b"], inputs["c"]
    got = np.load(out)["out0"]
    fused = np.array([float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c)])
    assert got.tolist() == fused.tolist() == [-(2.0**-60), 16.0]
    assert (a * b + c).tolist() == [0.0, 16.0]  # each op rounded: what the reproducer says is right


def test_fma_reproducer_matches_without_llvm_optimization(cli):
    hlo = HERE / "fma_contraction_f64.hlo"
    r = cli("run", hlo, "--inputs", hlo.with_suffix(".npz"), "--rtol", "0", "--atol", "0", "--jobs", "0",
            "--xla_backend_optimization_level=0")
    assert r.code == 0, r.out + r.err


@pytest.mark.slow
def test_report_over_a_small_checkout(tmp_path):
    report = tmp_path / "conformance.md"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "conformance.py"), str(CHECKOUT),
                           "--jobs", "1", "-o", str(report)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    text = report.read_text()
    cpu, cuda = text.split("## XLA CPU failures")[1].split("## CUDA device-less failures")
    assert "| XLA CPU | `mlirhlo run FILES --jobs 1` | 6 | 1 | 5 |" in text
    assert "| CUDA device-less (h100_sxm) | " in text and "| 6 | 6 | 0 |" in text
    assert "| XLA kernel deviation | 1 | 0 |" in text
    assert "| expected value over-specified | 4 | 0 |" in text
    assert "| driver defect | 0 | 0 |" in text and "| unclassified | 0 | 0 |" in text
    rows = _rows(cpu)
    assert set(rows) == {"sort_nan_float32_4", "abs_nan_float32_3", "multiply_add_float64_2",
                         "multiply_float32_2", "add_float32_2"}
    klass, why, evidence = rows["multiply_add_float64_2"]
    assert klass == conformance.KERNEL
    assert "fma_contraction_f64.hlo" in why and "passes with `--xla_backend_optimization_level=0`" in evidence
    klass, why, evidence = rows["sort_nan_float32_4"]
    assert klass == conformance.OVERSPECIFIED and "without is_stable" in why
    assert "[2]: 0x7FC00000 vs 0xFFC00000, [3]: 0xFFC00000 vs 0x7FC00000" in evidence
    klass, why, evidence = rows["abs_nan_float32_3"]
    assert "NaN == NaN is false" in why and "1 of 3 elements fail" in evidence and "bits identical" in evidence
    klass, why, evidence = rows["multiply_float32_2"]
    assert "tolerance 0.001 is below one ULP" in why and "ULP distance max 1" in evidence
    klass, why, evidence = rows["add_float32_2"]
    assert klass == conformance.OVERSPECIFIED and "ULP distance max 4 (4-16: 1)" in evidence
    assert "against the same computation in float64 on XLA CPU" in evidence
    assert cuda.split("\n## ")[0].strip().endswith("None.")
    assert "## Reproducers" in text
    from mlirhlo_driver._native import libtpu

    if libtpu.in_use() is not None:  # the TPU door, device-less: every file compiles, f64 too
        assert "| TPU device-less (v5e:1x1) | `mlirhlo opt FILES --platform tpu --tpu-topology v5e:1x1 --stage hlo " \
               "--jobs 1` | 6 | 6 | 0 |" in text, text
    else:
        assert "| TPU device-less (v5e:1x1) | " in text and "| not run |" in text


def test_report_refuses_a_folder_without_testdata(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "conformance.py"), str(tmp_path),
                           "-o", str(tmp_path / "c.md")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {tmp_path / 'stablehlo' / 'testdata'}: no *.mlir files")
    assert not (tmp_path / "c.md").exists()


@pytest.mark.parametrize("status,checks,o0,klass", [
    ("lost", [], None, conformance.DRIVER),
    ("check-failed", [_check(err_xla=40.0, err_expected=1.0, reference="r")], False, conformance.KERNEL),
    ("check-failed", [_check(err_xla=3.0, err_expected=1.0, reference="r")], False, conformance.OVERSPECIFIED),
    ("check-failed", [_check(err_xla=0.5, err_expected=1.0, reference="r")], True, conformance.KERNEL),
    ("check-failed", [_check(max_ulp=9)], False, conformance.UNCLASSIFIED),
    ("check-failed", [_check(nan_only=True, nan_identical=False, unstable_sort=False)], False,
     conformance.OVERSPECIFIED),
])
def test_classify_rules(status, checks, o0, klass):
    ev = conformance.FileEvidence("f", "f.mlir", status, "worker lost", checks, passes_without_llvm_opt=o0)
    assert conformance.classify(ev)[0] == klass


def test_widened_constants_keep_their_values():
    text = ('dense<[1.000000e+00, 0x7FC00000]> : tensor<2xf32> dense<"0x0000C03F0000803F"> : tensor<2xf32> '
            'dense<0xFC00> : tensor<f16>')
    widened = conformance._NARROW.sub("f64", conformance._DENSE.sub(conformance._widen_hex, text))
    assert widened == ('dense<[1.000000e+00, 0x7FF8000000000000]> : tensor<2xf64> '
                       'dense<"0x000000000000F83F000000000000F03F"> : tensor<2xf64> '
                       'dense<0xFFF0000000000000> : tensor<f64>')
