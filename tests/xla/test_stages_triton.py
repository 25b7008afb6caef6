"""XLA's Triton stages (xla/stages.py): Triton IR per fusion and the Triton pass log."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import DATA, assert_one_line_error, filecheck
from tests.xla.conftest import _request_on

# ------------------------------------------------------------------ Triton stages

@pytest.fixture(scope="module")
def triton_dump(files, tmp_path_factory) -> Path:
    from mlirhlo_driver.cli.mlirhlo import main

    out = tmp_path_factory.mktemp("triton")
    try:
        main(["opt", str(files / "gemm.hlo"), "--platform", "cuda", "--gpu-spec", "h100_sxm",
              "--stage", "triton,ttgir,triton-passes", "--dump-dir", str(out), "--no-cache"])
    except SystemExit as e:
        assert not e.code
    return out


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


# Triton fusions' dumps as XLA names them (TTIR and HLO per fusion; the Triton log per fusion,
# named after the HLO module with '_' for '.', or not at all).
_TO_LLVM = "// -----// IR Dump Before ConvertTritonGPUToLLVM (convert-triton-gpu-to-llvm) ('builtin.module' operation)\n"

TRITON_FILES = {
    "gemm_fusion_dot.10.ttir.txt": b"tt.func @ten\n",
    "gemm_fusion_dot.9.ttir.txt": b"tt.func @nine",
    "gemm_fusion_dot.9.hlo": b"fused_computation {\n  ROOT d = dot()\n}\n",
    "gemm_fusion_dot.9.before_validation.ttir.txt": b"not this one\n",
    "jit_m.x.gemm_fusion_dot.9.triton-to-llvm.txt": (
        b"// -----// IR Dump Before Foo (foo) ('builtin.module' operation)\nfoo ir\n"
        + _TO_LLVM.encode() + b"\nttgir nine\n\n// -----// IR Dump After Bar (bar)\nbar ir\n"),
    "jit_m_x.gemm_fusion_dot_10.triton-to-llvm.txt": _TO_LLVM.encode() + b"ttgir ten",
    "jit_m_x.fusion_2.triton-to-llvm.txt": _TO_LLVM.encode() + b"two\n",
    "other.triton-to-llvm.txt": _TO_LLVM.encode() + b"last\n",
}


def test_triton_stage_has_each_fusions_hlo_and_ttir(triton_dump, tmp_path):
    text = (triton_dump / "gemm.ttir").read_text()
    filecheck(text, textwrap.dedent("""\
        CHECK: // ----- [[FUSION:gemm_fusion[\\w.]*]] -----
        CHECK-NEXT: // HloModule [[FUSION]]
        CHECK: //   {{.*}} dot(
        CHECK: // ENTRY
        CHECK-NOT: // -----
        CHECK: tt.dot
        """), tmp_path)


def test_ttgir_stage_is_tritongpu_ir_before_llvm(triton_dump, tmp_path):
    text = (triton_dump / "gemm.ttgir").read_text()
    filecheck(text, textwrap.dedent("""\
        CHECK: // ----- gemm_fusion{{[\\w.]*}} -----
        CHECK: #ttg.
        CHECK: "tt.func"
        CHECK-NOT: IR Dump
        CHECK-NOT: llvm.func
        """), tmp_path)


def test_triton_passes_with_dump_dir_is_one_log_per_fusion(triton_dump):
    (log,) = triton_dump.glob("gemm.*.triton-passes.txt")
    assert re.fullmatch(r"gemm\.gemm_fusion[\w.]*\.triton-passes\.txt", log.name)
    text = log.read_text()
    passes = re.findall(r"^// -----// IR Dump Before (\w+)", text, re.M)
    assert len(passes) > 20 and "ConvertTritonGPUToLLVM" in passes


def test_triton_stages_of_a_module_without_triton_fusions_say_so(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "triton",
            "--no-cache")
    assert r.code == 0, r.err
    assert r.out == "// plain: no Triton fusions (XLA emitted every kernel of this module without Triton)\n"


def test_triton_stages_are_cuda_only(cli, files):
    r = cli("opt", files / "plain.hlo", "--platform", "cpu", "--stage", "ttgir")
    assert_one_line_error(r, facts=("'ttgir'", "--platform cpu"))
    listing = cli("opt", "--list-stages", "--platform", "cuda").out
    for name in ("triton", "ttir", "ttgir", "triton-passes"):
        assert re.search(rf"^\s*{name}\b", listing, re.M), listing
    same = cli("opt", files / "gemm.hlo", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ttir",
               "--no-cache")
    assert same.code == 0 and "tt.dot" in same.out  # Triton's name for the stage


def test_only_stages_that_need_them_ask_xla_for_triton_dumps():
    from mlirhlo_driver import api
    from mlirhlo_driver.xla import stages as xla_stages

    program = api.load(str(DATA / "xla_tools" / "input.hlo"))
    compiled = program.compile(api.Target.cuda("h100_sxm"))
    compiled.stage("hlo")
    assert xla_stages.artifacts(compiled._stage_request).emitters == ()
    # asked later: a compile of its own, once
    assert compiled.stage("triton").startswith("// ")
    assert "triton-fusion" in xla_stages.artifacts(compiled._stage_request, ("triton-fusion",)).emitters


@pytest.mark.parametrize("stage, ext", [("triton", "ttir"), ("ttgir", "ttgir")])
def test_triton_stages_are_deterministic(stage, ext, triton_dump, files):
    """A second, independent compile gives the same bytes (the API's, here)."""
    from mlirhlo_driver import api

    again = api.load(str(files / "gemm.hlo")).compile(api.Target.cuda("h100_sxm"))
    assert again.stage(stage) == (triton_dump / f"gemm.{ext}").read_text()


def test_a_triton_log_compile_leaves_the_users_environment_and_later_compiles_as_they_were(files, monkeypatch):
    """XLA's Triton log leaves stack traces switched on for Triton's diagnostics in its
    process, which LLVM symbolizes (0.3 s each) unless told not to: in a user's process the
    log's compile runs in a helper started with symbolization off, so the user's environment
    stays as it was, and compiles after it give what they gave before it; a second log is the
    first one again (nothing was left printing)."""
    from mlirhlo_driver import api

    monkeypatch.delenv("LLVM_DISABLE_SYMBOLIZATION", raising=False)
    program, target = api.load(str(files / "gemm.hlo")), api.Target.cuda("h100_sxm")
    before = program.compile(target, cache=False).stage("ptx")
    environ = dict(os.environ)
    first = program.compile(target, cache=False).stage("triton-passes")
    assert dict(os.environ) == environ
    assert program.compile(target, cache=False).stage("ptx") == before
    assert program.compile(target, cache=False).stage("triton-passes") == first


def test_triton_stages_on_given_dumps():
    """triton: each fusion's HLO as '//' lines, then its TTIR; ttgir: the IR dumped before
    ConvertTritonGPUToLLVM, up to the next dump; triton-passes: each fusion's whole log.
    Fusions in natural order (9 before 10), named as in the HLO where the TTIR names them."""
    from mlirhlo_driver.xla import stages as xla_stages

    req = _request_on(TRITON_FILES, "cuda", hlo_module_name="jit_m.x")
    assert xla_stages._triton(req) == (
        "// ----- gemm_fusion_dot.9 -----\n// fused_computation {\n//   ROOT d = dot()\n// }\ntt.func @nine\n"
        "// ----- gemm_fusion_dot.10 -----\ntt.func @ten\n")
    assert xla_stages._ttgir(req) == (
        "// ----- fusion_2 -----\ntwo\n// ----- gemm_fusion_dot.9 -----\nttgir nine\n"
        "// ----- gemm_fusion_dot.10 -----\nttgir ten\n// ----- other -----\nlast\n")
    passes = xla_stages._triton_passes(req)
    assert list(passes) == ["fusion_2", "gemm_fusion_dot.9", "gemm_fusion_dot.10", "other"]
    assert passes["gemm_fusion_dot.9"] == TRITON_FILES["jit_m.x.gemm_fusion_dot.9.triton-to-llvm.txt"]
    assert passes["gemm_fusion_dot.10"] == _TO_LLVM.encode() + b"ttgir ten"


@pytest.mark.golden
def test_triton_stages_without_triton_fusions_say_so():
    """Golden: no Triton fusion: each Triton stage says so in one comment line; a log without TTGIR is an error."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import stages as xla_stages

    req = _request_on({"gemm_fusion_dot.1.before_validation.ttir.txt": b"x\n"}, "cuda")
    note = "// m: no Triton fusions (XLA emitted every kernel of this module without Triton)\n"
    assert xla_stages._triton(req) == xla_stages._ttgir(req) == xla_stages._triton_passes(req) == note
    bad = _request_on({"jit_m.f.triton-to-llvm.txt": b"// -----// IR Dump Before Foo (foo)\n"}, "cuda")
    with pytest.raises(StageError) as info:
        xla_stages._ttgir(bad)
    assert info.value.message == ("XLA's Triton log for fusion 'f' has no TritonGPU IR "
                                  "(no dump before ConvertTritonGPUToLLVM)")


def test_ttgir_is_the_dump_before_the_whole_pass_name_at_a_line_start():
    """The TTGIR is the dump headed by ConvertTritonGPUToLLVM itself (with options after a
    colon, as XLA's pipeline prints it), at the start of a line: a longer pass name or the
    header quoted inside a line is not it; it ends at the next dump, whatever its pass."""
    from mlirhlo_driver.xla import stages as xla_stages

    log = (b"x // -----// IR Dump Before ConvertTritonGPUToLLVM (quoted)\n"
           b"// -----// IR Dump Before ConvertTritonGPUToLLVMLater (later)\nnot it\n"
           b"// -----// IR Dump Before ConvertTritonGPUToLLVM: convert-triton-gpu-to-llvm{x=1} ('builtin.module')\n"
           b"\nthe ttgir\n\n// -----// IR Dump Before Next (next)\nafter\n")
    req = _request_on({"jit_m.f.triton-to-llvm.txt": log}, "cuda")
    assert xla_stages._ttgir(req) == "// ----- f -----\nthe ttgir\n"
