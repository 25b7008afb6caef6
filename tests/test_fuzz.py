"""A small, fixed-seed sample of the mutation fuzz (scripts/fuzz.py runs the large one).

Every input kind the loader takes is mutated and fed to the command that reads
it; no case may end in a Python traceback, a signal death or a hang. The run
happens in a fresh process: the fuzz harness forks one child per case, which is
only safe before a jax backend exists, and this pytest process may have one.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests import fuzz_harness
from tests.conftest import REPO

# The sample runs once (a module fixture, two fuzz jobs): one worker takes all its checks.
pytestmark = pytest.mark.xdist_group("fuzz")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "fuzz.py"), "44", "--seed", "12", "--jobs", "2", "--timeout", "120",
         "-q", "--failures", str(tmp / "failures"), "--json", str(tmp / "report.json")],
        capture_output=True, text=True, timeout=600, cwd=str(tmp))
    assert (tmp / "report.json").exists(), proc.stdout + proc.stderr
    return json.loads((tmp / "report.json").read_text()), proc


@pytest.mark.slow
def test_fuzz_sample_has_no_tracebacks_signals_or_hangs(report):
    data, proc = report
    bad = [f for f in data["failures"] if f["outcome"] in fuzz_harness.DEFECTS]
    assert not bad, proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_fuzz_sample_covers_every_kind(report):
    data, _ = report
    assert sum(data["counts"].values()) == 44
    assert set(data["by_kind"]) == set(fuzz_harness.KINDS)
    # The mutations reach the loaders: most cases are rejected, each with one error line.
    assert data["counts"]["clean"] >= 20, data["counts"]


def test_mutations_are_deterministic():
    contents = {"x": b"HloModule m\nENTRY main {\n  ROOT p = f32[4] parameter(0)\n}\n"}
    seeds = (fuzz_harness.Seed("hlo", "x", ".hlo", False, (("opt", "{in}"),)),)
    a = [fuzz_harness.make_case(5, i, seeds, contents) for i in range(20)]
    b = [fuzz_harness.make_case(5, i, seeds, contents) for i in range(20)]
    assert [c.data for c in a] == [c.data for c in b]
    assert len({c.data for c in a}) > 15, "mutations differ from case to case"
    assert sum(c.data != contents["x"] for c in a) >= 15


@pytest.mark.parametrize("code,sig,err,out,written,expected", [
    (0, None, "", "x", [], "ok"),
    (2, None, "error: f.hlo:1:2: bad\n", "", [], "clean"),
    (1, None, "error: f.hlo: failed\n", "", [], "clean"),
    (2, None, "note: x\nerror: f.hlo: bad\n", "", [], "other"),
    (2, None, "error: f.hlo: bad\n", "", ["x.mlir"], "other"),
    (2, None, "error: f.hlo: bad\n", "partial", [], "other"),
    (3, None, "error: f.hlo: bad\n", "", [], "other"),
    (1, None, "Traceback (most recent call last):\n  File ...\nValueError: x\n", "", [], "traceback"),
    (None, 6, "LLVM ERROR: Cannot select\n", "", [], "signal"),
    (134, None, "LLVM ERROR: Cannot select\n", "", [], "signal"),
])
def test_outcome_classes(code, sig, err, out, written, expected):
    assert fuzz_harness._classify(code, sig, out, err, written)[0] == expected


# ---------------------------------------------------------- hypothesis, in process
# The pure-Python parsers, on arbitrary input: a value or the library's typed error, nothing else.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

_FUZZ_SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
_PIPELINE_ALPHABET = st.sampled_from(list("(){},=.-_ ") + ["builtin.module", "func.func", "cse", "canonicalize",
                                                           "max-iterations", "3", "@", "\n", "\"", "x"])


@_FUZZ_SETTINGS
@given(st.lists(_PIPELINE_ALPHABET, max_size=40).map("".join))
def test_pipeline_parser_on_any_text(text):
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.mlir.pipeline import parse_spec

    try:
        parse_spec(text)
    except DriverError as e:
        assert "\n" not in e.format()


@_FUZZ_SETTINGS
@given(st.lists(st.sampled_from(list("{}:<>[],\"'#\\ \n-.0123456789abcdefxyz_\t")
                                + ["core_count", "gpu_device_info", "platform_name", "major", "inf", "0x1f"]),
                max_size=50).map("".join))
def test_spec_textproto_parser_on_any_text(text):
    from mlirhlo_driver.cuda import specs as gpu_specs
    from mlirhlo_driver.errors import DriverError

    try:
        gpu_specs.validate(gpu_specs.parse_textproto(text, "x.txtpb"), "x.txtpb")
    except DriverError as e:
        assert e.file == "x.txtpb"


@_FUZZ_SETTINGS
@given(st.binary(max_size=200) | st.binary(max_size=60).map(lambda b: b"\x0a\x01m\x12" + b))
def test_hlo_proto_sniffing_on_any_bytes(data):
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.ir import hlo_proto

    kind = hlo_proto.looks_like_hlo_proto(data)
    assert kind in (None, "HloProto", "HloModuleProto")
    try:
        hlo_proto.module_proto_from_any(data)
    except DriverError:
        pass


@_FUZZ_SETTINGS
@given(st.text(max_size=120))
def test_llvm_ir_float_normalizer_on_any_text(text):
    from mlirhlo_driver.cuda.ptx import normalize_llvm_ir

    out = normalize_llvm_ir(text)
    assert out.count("\n") == text.count("\n"), "line-preserving"
