"""``mlirhlo ptx`` (XLA's ptx-opt) as a user runs it, on XLA's own LLVM IR."""

from __future__ import annotations

import re

import pytest

from mlirhlo_driver.cuda import tools as cuda_tools
from tests.conftest import DATA, REPO, assert_one_line_error
from tests.e2e.conftest import NV_IR, mlirhlo

MLP = DATA / "mlp_train_step.before_optimizations.txt"


@pytest.fixture(scope="module")
def xla_outputs(tmp_path_factory):
    """XLA's LLVM IR (both stages) and its PTX for the MLP step on H100, device-less."""
    from mlirhlo_driver.cli.mlirhlo import main

    d = tmp_path_factory.mktemp("xla")
    try:
        main(["opt", str(MLP), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage",
              "llvm-before-optimizations,llvm,ptx", "--dump-dir", str(d)])
    except SystemExit as e:
        assert e.code == 0
    return {p.name.split(".", 1)[1]: p for p in d.iterdir()}


def _kernels(ptx: str) -> set[str]:
    return set(re.findall(r"^\.(?:visible )?\.entry (\w+)", ptx, re.M))


@pytest.mark.slow
def test_xla_llvm_ir_to_ptx_for_sm90a(cli, xla_outputs, tmp_path):
    xla_ptx = xla_outputs["ptx"].read_text()
    for stage, flags in (("ir-no-opt.ll", []), ("ir-with-opt.ll", ["--no-optimize"])):
        out = tmp_path / f"{stage}.ptx"
        result = cli("ptx", xla_outputs[stage], "--arch", "9.0a", "-O3", *flags, "-o", out)
        assert result.code == 0, result.err
        ours = out.read_text()
        assert ".target sm_90a" in ours
        assert _kernels(ours) == _kernels(xla_ptx), stage
        # the joined file is split and compiled module by module, in the same order;
        # XLA's module of constants has no kernel, hence no PTX of its own
        sections = [n for n in re.findall(r"^// ----- (\S+) -----$", ours, re.M) if n not in ("constants", "module")]
        assert sections == re.findall(r"^// ----- (\S+) -----$", xla_ptx, re.M)


def test_print_after_all_and_ir_dump_dir(cli, xla_outputs, tmp_path):
    src = tmp_path / "one.ll"
    text = xla_outputs["ir-no-opt.ll"].read_text()
    # The first module alone (jaxlib 0.9's XLA writes one module, without sections, holding
    # every kernel), compiled for the H100 XLA wrote it for: 0.9's module and 0.12's first
    # one (a Triton gemm calling stmatrix) hold sm_90 intrinsics.
    first = text.split("; ----- ")[1].split("\n", 1)[1] if "; ----- " in text else text
    arch = "9.0a"
    src.write_text(first)
    result = cli("ptx", src, "--arch", arch, "--print-after-all", "-o", tmp_path / "o.ptx")
    assert result.code == 0
    assert result.err.count("; *** IR Dump After ") > 10
    d = tmp_path / "dumps"
    assert cli("ptx", src, "--arch", arch, "--ir-dump-dir", d, "-o", tmp_path / "o2.ptx").code == 0
    files = sorted(p.name for p in d.iterdir())
    # One file per pass run, named by the pass (LLVM's names hold <>:, (replaced by _)), numbered
    # at one width (3 digits, more past 999 passes) so that sorting by name is pass order.
    width = max(3, len(str(len(files) - 1)))
    assert len(files) > 10 and files[0].startswith("0" * width + "-")
    assert [int(f.split("-", 1)[0]) for f in files] == list(range(len(files)))
    assert all(re.fullmatch(rf"\d{{{width}}}-[\w.-]+\.ll", f) for f in files), files
    # Several modules: each pass's name is led by its module's, cut to 80 characters in all
    # (XLA's kernel names can be long; a file name cannot).
    long = "fused_" + "x" * 90
    src.write_text(f"; ----- {long} -----\n{first}")
    d2 = tmp_path / "dumps2"
    assert cli("ptx", src, "--arch", arch, "--ir-dump-dir", d2, "-o", tmp_path / "o3.ptx").code == 0
    named = sorted(p.name for p in d2.iterdir())
    assert len(named) == len(files)
    assert all(re.fullmatch(rf"\d{{{width}}}-fused_x{{74}}\.ll", f) for f in named), named[:3]
    assert (tmp_path / "o.ptx").read_text() == (tmp_path / "o2.ptx").read_text()


@pytest.mark.slow
def test_ir_dump_dir_past_a_thousand_passes_sorts_in_pass_order(cli, tmp_path):
    """Ten small modules run over 1,000 passes: every number gets 4 digits, so `ls` is pass order."""
    src = tmp_path / "many.ll"
    src.write_text("".join(f"; ----- m{i} -----\ndefine void @f() {{\n  ret void\n}}\n" for i in range(10)))
    d = tmp_path / "dumps"
    assert cli("ptx", src, "--arch", "sm_80", "--no-ptxas", "--ir-dump-dir", d, "-o", tmp_path / "o.ptx").code == 0
    files = sorted(p.name for p in d.iterdir())
    assert 1000 < len(files) < 10000
    assert all(re.fullmatch(r"\d{4}-m\d_[\w.-]+\.ll", f) for f in files), files[:3]
    assert [int(f[:4]) for f in files] == list(range(len(files)))
    assert files[0].startswith("0000-m0_") and files[-1].startswith(f"{len(files) - 1}-m9_")


def test_ptx_errors(cli, tmp_path):
    bad = tmp_path / "bad.ll"
    bad.write_text("define void @f() {\n  ret i32 0\n}\n")
    assert_one_line_error(cli("ptx", bad, "-o", tmp_path / "x.ptx"), at=f"{bad}:2:7", facts=("'void'",))
    assert not (tmp_path / "x.ptx").exists()
    good = tmp_path / "good.ll"
    good.write_text("define void @f() {\n  ret void\n}\n")
    assert_one_line_error(cli("ptx", good, "--arch", "sm_99"), facts=("'sm_99'", "did you mean"))
    assert_one_line_error(cli("ptx", tmp_path / "none.ll"), contains="no such file")


def test_ptxas_rejection_names_the_ptx_line(cli, tmp_path):
    """PTX that ptxas refuses (here: inline asm LLVM passes through) is one located error."""
    src = tmp_path / "asm.ll"
    src.write_text('target triple = "nvptx64-nvidia-cuda"\n\n'
                   "define ptx_kernel void @k() {\n"
                   '  call void asm sideeffect "bogus.instruction;", ""()\n'
                   "  ret void\n}\n")
    out = tmp_path / "asm.ptx"
    line = assert_one_line_error(cli("ptx", src, "--arch", "sm_80", "-o", out))
    version = cuda_tools.ptxas().version_str  # the one device-less compiles use (12.9, or 13.x)
    assert line.startswith(f"error: {src}: ptxas {version} rejected the PTX for sm_80 at PTX line"), line
    assert "[bogus.instruction;]" in line     # the PTX line itself is quoted
    assert not out.exists()
    # --no-ptxas writes LLVM's PTX unchecked
    assert cli("ptx", src, "--arch", "sm_80", "--no-ptxas", "-o", out).code == 0
    assert "bogus.instruction;" in out.read_text()


def test_split_modules_keep_the_files_line_numbers():
    """Each module of an 'llvm' stage's output is compiled with the lines before it
    counted, so an error's line is the file's, blank lines at the top included."""
    from mlirhlo_driver.cuda import ptx

    text = "\n; ----- a -----\nX\n\n; ----- b -----\nY\n"
    assert ptx.split_llvm_modules(text) == [("a", 2, "X\n\n"), ("b", 5, "Y\n")]
    assert ptx.split_llvm_modules("define void @f() {\n}\n") == [("", 0, "define void @f() {\n}\n")]


def test_garbage_libdevice(cli, tmp_path):
    ll = tmp_path / "k.ll"
    ll.write_text(NV_IR)
    garbage = tmp_path / "libdevice.10.bc"
    garbage.write_bytes(b"\x01\x02" * 600)
    assert_one_line_error(cli("ptx", ll, "--libdevice", garbage), at=str(garbage), facts=("libdevice",))


# ------------------------------------------------------------ stdin

def test_ptx_and_specs_check_read_stdin():
    proc = mlirhlo("ptx", "-", input=NV_IR)
    assert proc.returncode == 0, proc.stderr
    assert b".entry k" in proc.stdout or b".func k" in proc.stdout or b"k(" in proc.stdout
    spec = (REPO / "gpu_specs" / "h100_sxm.txtpb").read_text()
    proc = mlirhlo("specs", "check", "-", input=spec)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().startswith("-: ok (")
