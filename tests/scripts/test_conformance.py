"""The conformance report (scripts/conformance.py) and the XLA reproducers it points to.

The script runs over tests/data/conformance/checkout, six files in the form of
openxla/stablehlo's testdata, one per rule that decides a class; each reproducer under
tests/data/conformance/ must still fail on XLA CPU, so these tests flip when XLA
changes. The script test runs ``mlirhlo run`` twice and ``opt --stage ptx`` once over
the six files, in subprocesses as a user would (about 15 s on 2 cores).

The TPU chip's column is read from rows made elsewhere; its test fakes them from a CPU run
of four files (two of them under tests/data/conformance/chip/, from StableHLO's testdata).
"""

from __future__ import annotations

import json
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


# --- the TPU chip's column: rows of `mlirhlo run --platform tpu --json` made elsewhere ------------

CHIP = HERE / "chip"  # a float32 dot_general and an f64 reduce_precision, as in the testdata
DOT, F64, PASSING, DROPPED = ("dot_general_float16_4_3_float32_3_6", "reduce_precision_float64", "add_float32_4",
                              "add_float32_2")


def _chip_checkout(root):
    testdata = root / "stablehlo" / "testdata"
    testdata.mkdir(parents=True)
    for src in (CHIP / f"{DOT}.mlir", CHIP / f"{F64}.mlir", CHECKOUT / conformance.TESTDATA / f"{PASSING}.mlir",
                CHECKOUT / conformance.TESTDATA / f"{DROPPED}.mlir"):
        (testdata / src.name).write_bytes(src.read_bytes())
    return root


def _failing(row, message):
    check = dict(row["checks"][0], passed=False, message=message)
    return dict(row, status="check-failed", message="0/1 checks passed", checks=[check])


def _report_row(text, name):
    rows = _rows(text.split("## TPU chip failures")[1])
    return rows.get(name)


@pytest.mark.slow
def test_chip_report_from_rows_made_elsewhere(tmp_path):
    """Chip rows faked from a CPU run of four files: the dot_general fails a float check by a
    bfloat16-sized error, the f64 file is refused in XLA's 64-bit words, one file has no row
    (the run stopped early), one passes; the rows come in two reports, the later winning."""
    checkout = _chip_checkout(tmp_path / "shlo")
    files = sorted((checkout / conformance.TESTDATA).glob("*.mlir"))
    cpu_json = tmp_path / "cpu.json"
    proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver", "run", *map(str, files), "--platform", "cpu",
                           "--json", str(cpu_json)], capture_output=True, text=True, timeout=600)
    assert cpu_json.is_file(), proc.stderr
    rows = {r["module"]: r for r in json.loads(cpu_json.read_text())}
    assert rows[DOT]["status"] == rows[F64]["status"] == rows[PASSING]["status"] == "ok"
    dot = _failing(rows[DOT], "7 of 24 elements outside 1 ULP; worst at index [2, 5]: actual=-3.140625, "
                              "expected=-3.1443298, ULP difference=31131")
    f64 = dict(rows[F64], status="failed", checks=[], message=(
        f"{files[-1]}: While rewriting computation to not contain X{{64|128}} element types, XLA encountered an "
        "HLO for which this rewriting is not implemented: %reduce-precision.1 = f64[] reduce-precision(%Arg_0.1)"))
    # chunk 1 holds an earlier row of the dot_general (ok) that chunk 2's overrides
    (tmp_path / "conf-1.json").write_text(json.dumps([rows[PASSING], rows[DOT]]))
    (tmp_path / "conf-2.json").write_text(json.dumps([dot, f64]))
    report = tmp_path / "conformance.md"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "conformance.py"), str(checkout),
                           "--platforms", "none", "--tpu-chip-json", str(tmp_path / "conf-*.json"),
                           "--tpu-chip-label", "TPU v5e chip (jax 0.10.2)", "--commit", "3c9301c11",
                           "-o", str(report)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    text = report.read_text()
    assert "openxla/stablehlo 3c9301c11" in text
    chip = next(line for line in text.splitlines() if line.startswith("| TPU v5e chip (jax 0.10.2) |"))
    cells = [c.strip() for c in chip.strip("|").split("|")]
    assert cells[1] == "`mlirhlo run FILES --platform tpu --json R`"
    assert cells[2:6] == ["4", "1", "2", "1"]  # files, pass, fail, not run
    for platform in ("XLA CPU", "CUDA device-less", "TPU device-less"):
        line = next(line for line in text.splitlines() if line.startswith(f"| {platform}"))
        assert "| not run |" in line, line
    stopped = next(line for line in text.splitlines() if "stopped early" in line)
    assert f"`{DROPPED}`" in stopped and "1 of 4" in stopped
    counts = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in text.splitlines()
              if line.startswith("| ") and line.count("|") == 6}
    assert counts[conformance.TPU_BF16] == "1" and counts[conformance.TPU_X64] == "1"
    assert counts[conformance.TPU_DEVIATION] == counts[conformance.DRIVER] == counts[conformance.UNCLASSIFIED] == "0"
    klass, why, evidence = _report_row(text, DOT)
    assert klass == conformance.TPU_BF16
    assert "0.0037" in why and "[2, 5]" in why  # the worst error, and where
    assert "ULP difference=31131" in evidence and "line 13" in evidence
    klass, why, evidence = _report_row(text, F64)
    assert klass == conformance.TPU_X64
    assert "reduce-precision" in evidence and str(files[-1]) not in evidence  # trimmed of the chip's path
    assert _report_row(text, DROPPED) is None and _report_row(text, PASSING) is None


def _row(status="check-failed", message="", checks=()):
    return {"module": "m", "source": "m.mlir", "status": status, "message": message,
            "checks": [{"kind": "expect_close", "passed": False, "location": "m.mlir:9:5", "message": c}
                       for c in checks]}


FLOAT_MISS = "2 of 24 elements outside 1 ULP; worst at index [0, 1]: actual=2.0078125, expected=2.0, ULP difference=8"
BIG_MISS = "2 of 24 elements outside 1 ULP; worst at index [0, 1]: actual=9.5, expected=2.0, ULP difference=9999"
INT_MISS = "1 of 24 elements outside 0 ULP; worst at index [3]: actual=7, expected=6, ULP difference=1"


@pytest.mark.parametrize("row,kw,klass", [
    (_row(checks=[FLOAT_MISS]), {"products": 1}, conformance.TPU_BF16),
    (_row(checks=[FLOAT_MISS]), {"products": 0}, conformance.TPU_DEVIATION),       # no product to blame
    (_row(checks=[BIG_MISS]), {"products": 1}, conformance.TPU_DEVIATION),         # beyond bfloat16's error
    (_row(checks=[INT_MISS]), {"products": 1}, conformance.TPU_DEVIATION),         # integers: exact on any chip
    (_row(checks=[FLOAT_MISS, INT_MISS]), {"products": 1}, conformance.TPU_DEVIATION),
    (_row(checks=[INT_MISS]), {"on_cpu": (conformance.OVERSPECIFIED, "r")}, conformance.OVERSPECIFIED),
    (_row("failed", "Unexpected operand type for FFT: c128[4]"), {}, conformance.TPU_X64),
    (_row("failed", "UNIMPLEMENTED: F64 is not supported on this TPU"), {}, conformance.TPU_X64),
    (_row("failed", "Select and Scatter with less than 2 inactive dims is not implemented on TPU."), {},
     conformance.TPU_UNIMPLEMENTED),
    (_row("failed", "some words the device-less rules do not know"),
     {"device_less": (conformance.TPU_COMPILER, "r")}, conformance.TPU_COMPILER),
    (_row("failed", "RET_CHECK failure (platforms/xla/service/jellyfish/xprecision_rewriter.cc:4027) operand"),
     {}, conformance.TPU_COMPILER),
    (_row("failed", "some words no rule knows"), {}, conformance.UNCLASSIFIED),
    (_row("crashed", "worker died (SIGSEGV)"), {}, conformance.DRIVER),
    (_row("crashed", "worker killed by SIGABRT (a crash in native code): warnings.warn("), {},
     conformance.TPU_CHIP_ABORT),
    (_row("invalid", "the module has a dynamic dimension"), {}, conformance.DRIVER),
    (_row("timeout", "ran past 600 s"), {}, conformance.UNCLASSIFIED),
])
def test_classify_tpu_chip_rules(row, kw, klass):
    assert conformance.classify_tpu_chip(row, **kw)[0] == klass


def test_chip_rows_later_report_wins_in_natural_order(tmp_path):
    for k, status in ((10, "check-failed"), (2, "ok"), (9, "ok")):
        (tmp_path / f"conf-{k}.json").write_text(json.dumps([{"module": "m", "status": status}]))
    rows, read = conformance.read_chip_rows([str(tmp_path / "conf-*.json")])
    assert [p.name for p in read] == ["conf-2.json", "conf-9.json", "conf-10.json"]
    assert rows["m"]["status"] == "check-failed"
    rows, _ = conformance.read_chip_rows([str(tmp_path / "conf-10.json"), str(tmp_path / "conf-2.json")])
    assert rows["m"]["status"] == "ok"  # files given one by one: in their order
    for bad in (str(tmp_path / "none-*.json"), str(tmp_path / "missing.json")):
        with pytest.raises(SystemExit) as e:
            conformance.read_chip_rows([bad])
        assert e.value.code == 2
    (tmp_path / "x.json").write_text('{"not": "rows"}')
    with pytest.raises(SystemExit):
        conformance.read_chip_rows([str(tmp_path / "x.json")])


def test_chunks_list_every_file_once_in_order(capsys):
    files = conformance.testdata_files(CHECKOUT)
    listed = []
    for k in range(4):
        assert conformance.main([str(CHECKOUT), "--chunks", "4", "--list-chunk", str(k)]) == 0
        chunk = capsys.readouterr().out.splitlines()
        assert len(chunk) in (1, 2)
        listed += chunk
    assert listed == [str(f) for f in files]
    with pytest.raises(SystemExit) as e:
        conformance.main([str(CHECKOUT), "--chunks", "4", "--list-chunk", "4"])
    assert e.value.code == 2


def test_checkout_commit_without_its_own_git(tmp_path):
    # the small checkout lies inside this repository: its HEAD is not the testdata's commit
    assert conformance.checkout_commit(CHECKOUT) == "unknown"
    assert conformance.checkout_commit(tmp_path) == "unknown"
    assert conformance.checkout_commit(tmp_path, "3c9301c11") == "3c9301c11"


def test_render_lists_the_chip_beside_the_other_platforms():
    def ev(name, klass):
        e = conformance.FileEvidence(name, "", "check-failed", "")
        e.klass = klass
        return e

    cpu = {"failures": [ev("a", conformance.OVERSPECIFIED)], "wall": 3.0}
    chip = {"failures": [ev("a", conformance.OVERSPECIFIED), ev("b", conformance.TPU_BF16)], "passed": 1,
            "not_run": ["c", "d"], "ignored": [], "command": "mlirhlo run FILES --platform tpu --json R",
            "label": "TPU chip", "reports": ["conf-0.json"]}
    text = conformance.render(commit="x", files=5, cpu=cpu, cuda=None, jobs=2, spec="h100_sxm", versions="",
                              chip=chip, names=["a", "b", "c", "d", "e"])
    assert "| XLA CPU | `mlirhlo run FILES --jobs 2` | 5 | 4 | 1 | 0 |" in text
    assert "| TPU chip | `mlirhlo run FILES --platform tpu --json R` | 5 | 1 | 2 | 2 |" in text
    assert f"| {conformance.OVERSPECIFIED} | 1 | - | - | 1 |" in text
    assert f"| {conformance.TPU_BF16} | 0 | - | - | 1 |" in text
    assert "`c` to `d` (2 files)" in text
    assert text.index("## XLA CPU failures") < text.index("## TPU chip failures")
