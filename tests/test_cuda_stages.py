"""The cubin, sass and kernels stages, and ``mlirhlo kernels`` (device-less CUDA).

One compile of the MLP training step per spec (module-scoped). The kernel
figures are checked against what ptxas -v and cuobjdump -res-usage say for the
same PTX, and the occupancy against NVIDIA's formula recomputed here from the
documented constants.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import assert_one_line_error

REPO = Path(__file__).resolve().parent.parent
MLP = REPO / "tests" / "data" / "mlp_train_step.before_optimizations.txt"
STEM = "mlp_train_step"


@pytest.fixture(scope="module")
def a100():
    import mlirhlo_driver

    return mlirhlo_driver.compile(str(MLP), platform="cuda", gpu_spec="a100_sxm_80")


@pytest.fixture(scope="module")
def h100():
    import mlirhlo_driver

    return mlirhlo_driver.compile(str(MLP), platform="cuda", gpu_spec="h100_sxm")


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def _ptx_sections(compiled) -> dict[str, str]:
    text = compiled.stage("ptx")
    parts = re.split(r"^// ----- (\S+) -----\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def _text_sections(cubin: bytes) -> dict[str, bytes]:
    """The .text.<kernel> sections of an ELF64 (the ELF standard's section table)."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = secs[shstrndx][4]
    out = {}
    for s in secs:
        name = cubin[names_at + s[0]:cubin.index(b"\0", names_at + s[0])].decode()
        if name.startswith(".text."):
            out[name[6:]] = cubin[s[4]:s[4] + s[5]]
    return out


# ------------------------------------------------------------------ cubin

@pytest.mark.parametrize("which, sm_number, flag", [("a100", 80, "EF_CUDA_SM80"), ("h100", 90, "EF_CUDA_SM90")])
def test_cubin_one_elf_per_kernel_module_for_the_spec_sm(request, which, sm_number, flag):
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    compiled = request.getfixturevalue(which)
    cubins = compiled.stage("cubin")
    # One file per kernel module, named as the ptx stage names its sections.
    assert sorted(cubins) == sorted(_ptx_sections(compiled))
    for name, data in cubins.items():
        assert data[:4] == b"\x7fELF"
        assert cuda_binaries.elf_sm(data) == sm_number, name
        assert name in _text_sections(data)  # the module's first kernel is in it
    sass = compiled.stage("sass")
    if cuda_tools.ptxas().version < (13,):
        assert '@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS' in sass and flag in sass
    else:  # CUDA 13's cubins (ELF ABI version 8): nvdisasm names the target, no header flags
        assert f"\t.target\t{compiled.request.options.gpu_spec.sm}\n" in sass and ".headerflags" not in sass


def test_cuobjdump_names_the_arch(h100, tmp_path):
    from mlirhlo_driver.cuda import tools as cuda_tools

    exe = cuda_tools.find_tool("cuobjdump")
    if exe is None:
        pytest.skip("cuobjdump not installed (pip install nvidia-cuda-cuobjdump)")
    name, data = next(iter(h100.stage("cubin").items()))
    path = tmp_path / "k.cubin"
    path.write_bytes(data)
    out = subprocess.run([exe, "-lelf", str(path)], capture_output=True, text=True).stdout
    assert "sm_90a" in out, out


def test_cubin_files_in_dump_dir_and_refused_with_o(cli, tmp_path):
    r = cli("opt", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80", "--stage", "cubin,kernels",
            "--dump-dir", tmp_path)
    assert r.code == 0, r.err
    cubins = sorted(p.name for p in tmp_path.glob("*.cubin"))
    assert len(cubins) > 1 and f"{STEM}.gemm_fusion_dot.cubin" in cubins
    assert (tmp_path / f"{STEM}.kernels.txt").is_file()
    out = tmp_path / "one.cubin"
    assert_one_line_error(cli("opt", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80",
                              "--stage", "cubin", "-o", out), contains="use --dump-dir")
    assert not out.exists()


def test_a_compile_with_no_kernels(cli, tmp_path):
    """A module XLA runs without a kernel: no cubin to give, an empty SASS and table."""
    path = tmp_path / "ident.mlir"
    path.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n")
    r = cli("opt", str(path), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "cubin", "--no-cache")
    assert_one_line_error(r, contains="stage 'cubin' has nothing to give: the compile made no kernels")
    r = cli("opt", str(path), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "kernels", "--no-cache")
    assert r.code == 0 and r.out.startswith("ident on h100_sxm") and "regs" in r.out and "fusion" not in r.out
    r = cli("opt", str(path), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "sass", "--no-cache")
    assert (r.code, r.out.strip()) == (0, "")


def test_list_stages_has_the_cuda_binary_stages(cli):
    r = cli("opt", "--list-stages", "--platform", "cuda")
    names = [ln.split()[0] for ln in r.out.splitlines() if ln.strip()]
    assert names.index("ptx") < names.index("cubin") < names.index("sass") < names.index("kernels")
    assert "cubin" not in cli("opt", "--list-stages", "--platform", "cpu").out


# ------------------------------------------------------------------ sass

def test_sass_has_every_kernel_and_sass_opcodes(a100, h100):
    for compiled in (a100, h100):
        sass = compiled.stage("sass")
        kernels = sorted(k for text in _ptx_sections(compiled).values()
                         for k in re.findall(r"^\.visible \.entry (\w+)", text, re.M))
        for k in kernels:
            assert re.search(rf"^//-+ \.text\.{k} ", sass, re.M), k
        # SASS, not PTX: S2R reads special registers, EXIT ends a thread.
        assert re.search(r"^\s+/\*[0-9a-f]{4}\*/\s+S2R R\d+, SR_TID\.X ;", sass, re.M)
        assert re.search(r"^\s+/\*[0-9a-f]{4}\*/\s+EXIT ;", sass, re.M)


def test_sass_banners_are_nvdisasms_own(a100, tmp_path):
    """Each kernel's banner reads as nvdisasm prints it for that kernel's own cubin, with
    nvdisasm's padding (to the ELF's longest section name) taken out."""
    import subprocess

    from mlirhlo_driver.cuda import binaries as cuda_binaries

    tool = cuda_binaries.nvdisasm_for("sm_80")
    sass = a100.stage("sass")
    checked = 0
    for name, cubin in sorted(a100.stage("cubin").items())[:3]:
        path = tmp_path / f"{name}.cubin"
        path.write_bytes(cubin)
        out = subprocess.run([tool.path, "-c", "-ndf", str(path)], capture_output=True, text=True, check=True).stdout
        for banner in re.findall(r"^//-+ \.text\.\S+ +-+$", out, re.M):
            assert re.sub(r" +", " ", banner) in sass.splitlines(), banner
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("which", ["a100", "h100"])
def test_one_ptxas_run_gives_the_per_module_code(request, which):
    """sass reads one ELF of every kernel: each kernel's code must equal that of its
    own module's cubin (the cubin stage: XLA's, one ptxas per PTX file)."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.xla import stages as xla_stages

    compiled = request.getfixturevalue(which)
    job = cuda_binaries.ptx_job(xla_stages._assembly(compiled.request))
    combined = _text_sections(cuda_binaries.assemble_group([job])[0])
    per_module = {}
    for data in compiled.stage("cubin").values():
        per_module.update(_text_sections(data))
    assert combined.keys() == per_module.keys() and len(per_module) >= 10
    assert all(combined[k] == per_module[k] for k in per_module)


def test_cubins_are_xlas_own_and_ptxas_remakes_them(a100):
    """The cubin stage hands out the cubins XLA assembled in the same compile (its kernel
    cache file); assembling XLA's PTX again with XLA's ptxas and options, as the driver
    does for modules XLA does not cache, gives the same bytes."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.xla import stages as xla_stages

    asm = xla_stages._assembly(a100.request)
    cubins = {m.name: m.cubin for m in asm.modules_assembled()}
    assert len(asm.xla_cubins) >= 10 and len(cubins) >= 10
    assert all(asm.xla_cubins[k] == m.cubin for m in asm.modules for k in m.kernels)
    ptx = xla_stages.artifacts(a100.request).matching(xla_stages._PTX_FILE)
    again = cuda_binaries.prepare(ptx, asm.sm, {}, kernel_cache=None)
    assert not again.xla_cubins
    assert {m.name: m.cubin for m in again.modules_assembled()} == cubins


@pytest.mark.parametrize("version, sm, reads", [
    ((13, 0), "sm_75", True), ((13, 0), "sm_70", False), ((12, 8), "sm_60", True),
    ((12, 8), "sm_100a", True), ((12, 7), "sm_100a", False),
    ((11, 8), "sm_90a", True), ((11, 7), "sm_90a", False), ((11, 7), "sm_89", True)])
def test_which_nvdisasm_reads_which_sm(version, sm, reads):
    """NVIDIA's release notes: sm_90 from CUDA 11.8, sm_100 from 12.8, sm_50..sm_72 gone in 13.0."""
    from mlirhlo_driver.cuda.binaries import Nvdisasm

    assert Nvdisasm("nvdisasm", version).reads(sm) is reads


@pytest.mark.parametrize("version, threads", [("12.9.86", True), ("12.8.93", True), ("13.0.88", True),
                                              ("12.4.131", False), ("11.8.89", False), ("", False)])
def test_group_ptxas_threads_only_where_ptxas_has_them(version, threads):
    from mlirhlo_driver.cuda.binaries import PtxJob, _threads

    args = _threads(PtxJob("sm_90a", "ptxas", version, (), None))
    assert (args[:1] == ["--split-compile"] and int(args[1]) >= 1) if threads else args == []


def _spilling_ptx(n: int = 32) -> str:
    """A kernel that keeps n loaded values live (a product over them forwards, then a sum
    backwards; volatile loads cannot be repeated) under ``.maxnreg 16``: it must spill."""
    body = [f"\tld.volatile.global.f32 %f{i}, [%rd2+{4 * i}];" for i in range(n)]
    body.append(f"\tmul.f32 %f{n}, %f0, %f1;")
    body += [f"\tmul.f32 %f{n + i - 1}, %f{n + i - 2}, %f{i};" for i in range(2, n)]
    prev = f"%f{2 * n - 2}"
    for k, i in enumerate(reversed(range(n))):
        body.append(f"\tadd.f32 %f{2 * n + k}, {prev}, %f{i};")
        prev = f"%f{2 * n + k}"
    return "\n".join([".version 8.0", ".target sm_90a", ".address_size 64",
                      ".visible .entry spill(.param .u64 p) .maxnreg 16", "{", f"\t.reg .f32 %f<{3 * n + 2}>;",
                      "\t.reg .b64 %rd<3>;", "\tld.param.u64 %rd1, [p];", "\tcvta.to.global.u64 %rd2, %rd1;",
                      *body, f"\tst.global.f32 [%rd2], {prev};", "\tret;", "}", ""])


def test_stack_frame_and_spills_come_from_ptxas_v(tmp_path):
    """Figures the MLP's kernels have none of (all 0): a kernel that spills, in a group
    with another compile, reads as ptxas -v prints it alone."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    tool = cuda_tools.ptxas()
    ptx = _spilling_ptx()
    job = cuda_binaries.PtxJob("sm_90a", tool.path, tool.version_str, ("-arch=sm_90a", "--warn-on-spills"), None,
                               (("spill", ("spill",), ptx),))
    got = cuda_binaries.assemble_many([job, job], disassemble=False)
    log = _ptxas_v(ptx, "sm_90a", tmp_path)
    block = log[log.index("Function properties for spill\n"):]
    stack, st, ld = map(int, re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                                       r"(\d+) bytes spill loads", block).groups())
    regs = int(re.search(r"Used (\d+) registers", block).group(1))
    assert st > 0 and ld > 0 and stack >= st
    for result in got:
        r = result.resources["spill"]
        assert (r.name, r.registers, r.stack_frame, r.spill_stores, r.spill_loads) == ("spill", regs, stack, st, ld)


def test_no_nvdisasm_for_sm70_names_the_places_and_the_fix(monkeypatch, tmp_path):
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools
    from mlirhlo_driver.errors import ToolchainError

    monkeypatch.setattr(cuda_tools, "triton_bin_dirs", lambda: [])
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "none"),))
    monkeypatch.setenv("PATH", str(tmp_path))
    try:
        tool = cuda_binaries.nvdisasm_for("sm_70")
    except ToolchainError as e:
        text = e.format()
    else:
        pytest.skip(f"a CUDA 12 nvdisasm is installed outside triton: {tool.path}")
    assert "\n" not in text and "no nvdisasm here reads sm_70 cubins" in text
    assert f"searched pip's nvidia/*/bin, PATH, {tmp_path / 'none' / 'bin'}" in text
    assert "triton not installed" in text
    assert text.endswith(" (pip install 'mlirhlo-driver[legacy-sass]', i.e. 'triton>=3.3,<3.7', which bundles "
                         "CUDA 12.8's nvdisasm; or put a CUDA 12 toolkit's bin/ on PATH)"), text


@pytest.mark.sm70_ptxas
def test_stage_sass_v100(cli):
    """V100 (sm_70): CUDA 13's nvdisasm dropped sm_70; a CUDA 12 one is used when present,
    else one error line names the legacy-sass extra."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import ToolchainError

    r = cli("opt", MLP, "--platform", "cuda", "--gpu-spec", "v100", "--stage", "sass")
    try:
        cuda_binaries.nvdisasm_for("sm_70")
    except ToolchainError:
        line = assert_one_line_error(r, contains="no nvdisasm here reads sm_70 cubins")
        assert "pip install 'mlirhlo-driver[legacy-sass]'" in line
        return
    assert r.code == 0, r.err
    assert "EF_CUDA_SM70" in r.out and re.search(r"\bEXIT ;", r.out)


# ------------------------------------------------------------ sass in groups

# Three compiles that reuse kernel names (gemm_fusion_dot, input_reduce_fusion, ...),
# so a group ELF has to keep them apart, and a sort module (kernels XLA does not cache).
GROUP = [MLP, REPO / "tests/data/jax_dumps/module_mlp_step.before_optimizations.txt",
         REPO / "tests/data/jax_dumps/module_sort.before_optimizations.txt"]


def _count_nvdisasm(monkeypatch) -> list[list[str]]:
    runs: list[list[str]] = []
    real = subprocess.run

    def counting(args, *a, **kw):
        if Path(str(args[0])).name == "nvdisasm" and "--version" not in args:
            runs.append([str(x) for x in args])
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", counting)
    return runs


def test_sass_of_a_batch_is_each_module_alone_from_one_nvdisasm(cli, tmp_path, monkeypatch):
    runs = _count_nvdisasm(monkeypatch)
    r = cli("opt", *map(str, GROUP), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "sass",
            "--no-cache", "--dump-dir", str(tmp_path / "all"))
    assert r.code == 0, r.err
    assert len(runs) == 1, runs  # the whole batch: one disassembly
    for path in GROUP:
        stem = path.name.split(".before_optimizations")[0]
        batch = (tmp_path / "all" / f"{stem}.sass").read_text()
        alone = cli("opt", str(path), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "sass",
                    "--no-cache")
        assert alone.code == 0, alone.err
        assert batch == alone.out, stem
        assert "__mlirhlo" not in batch and "SYMBOLS" not in batch
        # Labels numbered in order of appearance, each defined once in the file.
        defined = re.findall(r"^(\.L_x_\d+):", batch, re.M)
        assert len(defined) == len(set(defined))
        firsts = list(dict.fromkeys(re.findall(r"\.L_x_\d+", batch)))
        assert firsts == [f".L_x_{i}" for i in range(len(firsts))]
    assert len(runs) == 4
    # Workers hand their compiles' PTX back (pickled); this process finishes them, in one group.
    r = cli("opt", *map(str, GROUP), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "sass,kernels",
            "--no-cache", "--jobs", "2", "--dump-dir", str(tmp_path / "workers"))
    assert r.code == 0, r.err
    assert len(runs) == 5
    for path in GROUP:
        stem = path.name.split(".before_optimizations")[0]
        assert (tmp_path / "workers" / f"{stem}.sass").read_text() == (tmp_path / "all" / f"{stem}.sass").read_text()
        table = (tmp_path / "workers" / f"{stem}.kernels.txt").read_text()
        assert table.startswith(f"{stem} on h100_sxm (sm_90a, 64 warps/SM)") and "regs" in table


def test_group_elf_holds_xlas_code_under_prefixed_names():
    """Renaming a compile's module-level names for the group ELF changes no code: each
    kernel's .text equals the one in its module's cubin from the compile (XLA's own)."""
    import mlirhlo_driver
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.xla import stages as xla_stages

    compiled = [mlirhlo_driver.compile(str(p), platform="cuda", gpu_spec="h100_sxm") for p in GROUP]
    jobs = [cuda_binaries.ptx_job(xla_stages._assembly(c.request)) for c in compiled]
    group = _text_sections(cuda_binaries.assemble_group(jobs)[0])
    checked = 0
    for c, prefix in zip(compiled, cuda_binaries.group_prefixes(len(jobs))):
        assert prefix.startswith("__mlirhlo")
        for cubin in c.stage("cubin").values():
            for kernel, code in _text_sections(cubin).items():
                assert group[prefix + kernel] == code, kernel
                checked += 1
    assert checked == len(group) >= 20


def test_renamed_ptx_prefixes_module_level_names_only():
    from mlirhlo_driver.cuda.binaries import _renamed

    ptx = "\n".join([
        ".extern .shared .align 16 .b8 global_smem[];",
        ".visible .global .align 1 .b8 buffer_for_constant_1[4] = {0, 0, 128, 63};",
        ".global .align 8 .u64 table[2];",
        ".func  (.param .b32 func_retval0) helper$1(",
        "\t.param .b32 helper$1_param_0",
        ")",
        "{ ret; }",
        ".visible .entry fusion(",
        "\t.param .u64 fusion_param_0",
        ")",
        "{",
        "\t.shared .align 4 .b8 fusion$tile[64];",
        "\tmov.u64 %rd1, buffer_for_constant_1;",
        "\tmov.u64 %rd2, table;",
        "\tcall.uni (retval0), helper$1, (param0);",
        "\tmov.u64 %rd3, fusion$tile;",
        "$L__BB0_1:",
        "\tld.param.u64 %rd4, [fusion_param_0];",
        "}",
    ])
    out = _renamed(ptx, "P_")
    for renamed in (".extern .shared .align 16 .b8 P_global_smem[];", ".b8 P_buffer_for_constant_1[4] = {",
                    ".u64 P_table[2];", "(.param .b32 func_retval0) P_helper$1(", ".visible .entry P_fusion(",
                    "%rd1, P_buffer_for_constant_1;", "%rd2, P_table;", "(retval0), P_helper$1, (param0)"):
        assert renamed in out, renamed
    # Parameters, function-scope variables, labels and registers keep their names.
    for kept in ("\t.param .b32 helper$1_param_0", "[fusion_param_0]", "\t.shared .align 4 .b8 fusion$tile[64];",
                 "%rd3, fusion$tile;", "\n$L__BB0_1:", "%rd4,"):
        assert kept in out, kept
    assert out.count("P_") == 8
    assert _renamed(ptx, "") == ptx
    bare = ".version 8.0\n.target sm_90a\n.address_size 64\n"  # no module-level names
    assert _renamed(bare, "P_") == bare


def test_a_job_that_fails_in_a_group_fails_alone(h100):
    """The group's ptxas fails on one job's PTX: that job gets the error, the others
    their SASS and figures as if alone."""
    from dataclasses import replace

    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import stages as xla_stages

    good = cuda_binaries.ptx_job(xla_stages._assembly(h100.request))
    name, kernels, ptx = good.modules[0]
    bad = replace(good, modules=((name, kernels, ptx.replace("ret;", "not_an_instruction;", 1)),))
    assert bad.modules[0][2] != ptx
    out = cuda_binaries.assemble_many([good, bad, good], disassemble=True)
    assert isinstance(out[1], StageError) and "ptxas" in str(out[1]) and "not_an_instruction" in str(out[1])
    alone = cuda_binaries.assemble_many([good], disassemble=True)[0]
    assert out[0] == out[2] == alone and len(alone.sass) == len(good.modules)
    assert alone.resources.keys() == {k for _, ks, _ in good.modules for k in ks}


def test_two_compiles_with_the_same_kernel_names_share_one_ptxas_and_nvdisasm(h100, monkeypatch):
    """A group of just two compiles that reuse kernel names still gets one ptxas and one nvdisasm run, each its own."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.xla import stages as xla_stages

    job = cuda_binaries.ptx_job(xla_stages._assembly(h100.request))
    alone = cuda_binaries.assemble_many([job], disassemble=True)[0]
    assert len(cuda_binaries.group_prefixes(2)) == len(set(cuda_binaries.group_prefixes(2))) == 2
    runs: list[str] = []
    real = subprocess.run

    def counting(args, *a, **kw):
        if Path(str(args[0])).name in ("ptxas", "nvdisasm") and "--version" not in args:
            runs.append(Path(str(args[0])).name)
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", counting)
    out = cuda_binaries.assemble_many([job, job], disassemble=True)
    assert sorted(runs) == ["nvdisasm", "ptxas"], runs   # not retried one job at a time
    assert out[0] == out[1] == alone and len(alone.sass) == len(job.modules)


def test_sass_does_not_depend_on_the_order_of_the_group():
    """Whichever compile comes first in a group (batch workers finish in any order),
    and so whichever kernel nvdisasm prints last, each compile's SASS is the same."""
    import itertools

    import mlirhlo_driver
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.xla import stages as xla_stages

    # A100: sm_80 cubins have no SYMBOLS section after the last kernel (sm_90a ones do).
    jobs = [cuda_binaries.ptx_job(xla_stages._assembly(
        mlirhlo_driver.compile(str(p), platform="cuda", gpu_spec="a100_sxm_80").request)) for p in GROUP]
    alone = [cuda_binaries.assemble_many([job], disassemble=True)[0].sass for job in jobs]
    for order in itertools.permutations(range(len(jobs))):
        got = cuda_binaries.assemble_many([jobs[i] for i in order], disassemble=True)
        assert [got[order.index(i)].sass for i in range(len(jobs))] == alone, order
    # Each kernel's section ends with two blank lines, the last one printed too.
    for sections in alone:
        for _, text in sections:
            assert text.endswith(":\n\n\n") and not text.endswith("\n\n\n\n")


def test_deferred_stages_finish_in_groups_and_fail_their_own_module():
    from mlirhlo_driver.batch import opt as batch
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.stages import base as stages

    class Upper(stages.Deferred):
        group_size = 2
        calls: list[int] = []

        def __init__(self, text):
            self.text = text

        @classmethod
        def finish_all(cls, items):
            cls.calls.append(len(items))
            return [StageError("no upper case") if i.text == "bad" else i.text.upper() for i in items]

    job = batch.OptJob(root=None, stage_names=("stablehlo",), targets=(), platform=None, instrumentation=None)
    results = [batch.OptResult(i, f"m{i}", f"m{i}.mlir", parts=[(f"m{i}", "stablehlo", Upper(t))])
               for i, t in enumerate(["a", "bad", "c"])]
    assert all(batch.pending(r) for r in results)
    batch.finish_pending(job, results)
    assert Upper.calls == [2, 1]
    assert [r.status for r in results] == ["ok", "failed", "ok"]
    assert results[0].parts == [("m0", "stablehlo", "A")] and results[2].parts == [("m2", "stablehlo", "C")]
    assert results[1].message == "m1.mlir: no upper case" and results[1].parts == []
    assert Upper("x").finish() == "X"
    with pytest.raises(StageError):
        Upper("bad").finish()


def test_a_batch_finishes_held_modules_early_past_its_memory_bound(monkeypatch):
    """Held modules (their other stages' outputs, the PTX they wait on) are finished as
    soon as they pass batch.HOLD_BYTES, not only at group_size."""
    from mlirhlo_driver.batch import opt as batch
    from mlirhlo_driver.stages import base as stages

    class Later(stages.Deferred):
        calls: list[int] = []

        def __init__(self, text):
            self.text = text

        @property
        def size(self):
            return len(self.text)

        @classmethod
        def finish_all(cls, items):
            cls.calls.append(len(items))
            return [i.text for i in items]

    job = batch.OptJob(root=None, stage_names=("stablehlo",), targets=(), platform=None, instrumentation=None)
    made = [batch.OptResult(i, f"m{i}", f"m{i}.mlir", parts=[(f"m{i}", "stablehlo", "x" * 4),
                                                              (f"m{i}", "stablehlo", Later("y" * 6))])
            for i in range(5)]
    monkeypatch.setattr(batch, "_results", lambda *a, **k: ((r.index, r) for r in made))
    monkeypatch.setattr(batch, "HOLD_BYTES", 25)  # 10 bytes a module: the third one passes it
    written = []
    rows = batch.run_batch(job, [None] * 5, on_result=lambda r: written.append((r.index, list(r.parts))))
    assert Later.calls == [3, 2]
    assert [i for i, _ in written] == [0, 1, 2, 3, 4] and [r.status for r in rows] == ["ok"] * 5
    assert written[4][1] == [("m4", "stablehlo", "xxxx"), ("m4", "stablehlo", "yyyyyy")]


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


def _ptxas_v(ptx: str, sm: str, tmp_path: Path, *extra: str) -> str:
    from mlirhlo_driver.cuda import tools as cuda_tools

    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    proc = subprocess.run([cuda_tools.ptxas().path, str(src), "-o", str(tmp_path / "k.cubin"),
                           f"-arch={sm}", "-v", *extra], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("which", ["a100", "h100"])
@pytest.mark.parametrize("kernel", ["gemm_fusion_dot", "loop_subtract_fusion_1"])
def test_kernel_rows_match_ptxas_thunks_and_occupancy_formula(request, which, kernel, tmp_path):
    from mlirhlo_driver.cuda import tools as cuda_tools
    from mlirhlo_driver.xla import stages as xla_stages

    compiled = request.getfixturevalue(which)
    row = next(r for r in xla_stages.kernel_rows(compiled.request) if r.kernel == kernel)
    # registers/spills/stack as ptxas -v prints them for the kernel's PTX, assembled here
    log = _ptxas_v(_ptx_sections(compiled)[row.module], compiled.request.options.gpu_spec.sm, tmp_path)
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


def test_kernels_stage_text(a100):
    text = a100.stage("kernels")
    assert text.startswith(f"{STEM} on a100_sxm_80 (sm_80, 64 warps/SM)")
    assert re.search(r"^\s*gemm_fusion_dot\s+\d+\s+0/0\s+0\s+1536\s+0\s+4 × 64\s+\d+\s+\d+/64 \(\d+%\)", text, re.M)


def test_kernels_command_three_specs(cli):
    specs = "a100_sxm_80,h100_sxm,t4"
    r = cli("kernels", MLP, "--gpu-spec", specs)
    assert r.code == 0, r.err
    header = r.out.splitlines()[1]
    assert [s for s in specs.split(",") if s in header] == specs.split(",")
    assert re.search(r"^\s*loop_broadcast_fusion\s", r.out, re.M)
    j = cli("kernels", MLP, "--gpu-spec", specs, "--json")
    assert j.code == 0, j.err
    data = json.loads(j.out)
    assert [s["name"] for s in data["gpu_specs"]] == specs.split(",")
    row = next(k for k in data["kernels"] if k["kernel"] == "loop_broadcast_fusion")
    assert set(row["specs"]) == set(specs.split(","))
    a = row["specs"]["a100_sxm_80"]
    assert a["registers"] > 0 and a["block"][0] > 0 and 0 < a["occupancy"]["occupancy"] <= 1


def test_kernels_command_bad_spec(cli):
    assert_one_line_error(cli("kernels", MLP, "--gpu-spec", "a100_sxm_80,h99"), contains="h99")


# ------------------------------------------------------------------ sources and cost

# A matmul and an elementwise kernel, with the two location forms XLA turns into
# metadata: loc("name"("file":line:col)) becomes op_name plus a stack frame
# (stack_frame_id), a bare loc("file":line:col) becomes source_file/source_line. The
# tanh is the add's consumer, so they fuse: the root (tanh) has no op_name of its own.
MM_ADD = """\
func.func @main(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>, %c: tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc("jit(f)/dot_general"("model.py":3:8))
  %1 = stablehlo.add %b, %c : tensor<1024x1024xf32> loc("jit(f)/add"("model.py":4:8))
  %2 = stablehlo.tanh %1 : tensor<1024x1024xf32> loc("model.py":5:8)
  return %0, %2 : tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
"""


@pytest.fixture(scope="module")
def mm_add(tmp_path_factory):
    path = tmp_path_factory.mktemp("mm") / "mm_add.mlir"
    path.write_text(MM_ADD)
    return path


def test_kernels_json_rows_name_their_source(cli, mm_add):
    r = cli("kernels", mm_add, "--gpu-spec", "h100_sxm", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    rows = [k["specs"]["h100_sxm"] for k in data["kernels"]]
    dot = next(k for k in rows if any(f["opcode"] == "dot" for f in k["fused"]))
    assert (dot["op_name"], dot["source"]) == ("jit(f)/dot_general", "model.py:3:8")
    assert dot["hlo_instruction"].replace(".", "_") == dot["kernel"]
    ew = next(k for k in rows if any(f["opcode"] == "tanh" for f in k["fused"]))
    # The root is the tanh: its source_file/line, and no op_name (the loc had no name).
    assert (ew["op_name"], ew["source"]) == (None, "model.py:5:8")
    fused = {f["opcode"]: f for f in ew["fused"]}
    assert (fused["add"]["op_name"], fused["add"]["source"]) == ("jit(f)/add", "model.py:4:8")
    # The side-by-side row carries the first spec's source as well.
    top = next(k for k in data["kernels"] if k["kernel"] == dot["kernel"])
    assert (top["op_name"], top["source"]) == ("jit(f)/dot_general", "model.py:3:8")


def test_kernels_table_names_the_source(cli, mm_add, tmp_path):
    from conftest import filecheck

    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "kernels", "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.out, """\
CHECK: mm_add on h100_sxm (sm_90a, 64 warps/SM)
CHECK: kernel {{.*}} limiter   op_name @ source {{ *}}fused
CHECK: gemm_fusion{{.*}} jit(f)/dot_general @ model.py:3:8 {{ *}}1
CHECK: model.py:5:8 {{ *}}2
""", tmp_path)


# H100 SXM (h100_sxm.txtpb): 132 SMs; FP32 CUDA cores: scalar_unit_description F32, 128
# units x 1 FMA per clock at 1.98 GHz; tensor cores for F32 (TF32):
# matrix_unit_description F32, 4 units x 256 FMAs per clock at 1.8295201 GHz; 3.35 TB/s.
H100_FP32 = 2 * 128 * 1 * 132 * 1.98e9          # 66.9 TFLOP/s
H100_TC_F32 = 2 * 4 * 256 * 132 * 1.8295201e9   # 494.6 TFLOP/s
H100_BW = 3.35e12
N = 1024


def test_cost_on_cuda_by_hand(cli, mm_add):
    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "cost", "--no-cache")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    rows = data["fusions"]
    assert len(rows) == 2, [x["name"] for x in rows]
    mm = next(x for x in rows if x["op_name"] == "jit(f)/dot_general")
    ew = next(x for x in rows if x["source"] == "model.py:5:8")
    # The matmul: 2 x M x N x K flops; it reads both f32 operands and writes its result.
    assert mm["flops"] == 2 * N ** 3 and mm["bytes_accessed"] == 3 * N * N * 4
    assert mm["figures_from"] == "xla-cost-analysis" and mm["transcendentals"] == 0
    assert (mm["peak"]["unit"], mm["peak"]["dtype"]) == ("tensor core", "F32")
    assert mm["peak"]["flops_per_s"] == pytest.approx(H100_TC_F32, rel=1e-9)
    assert mm["arithmetic_intensity"] == pytest.approx(2 * N / 12)          # 170.7 FLOP/B
    assert mm["ridge_flops_per_byte"] == pytest.approx(H100_TC_F32 / H100_BW)  # 147.6 FLOP/B
    assert mm["bound"] == "compute"
    assert mm["lower_bound_seconds"] == pytest.approx(2 * N ** 3 / H100_TC_F32)  # 4.34 us
    # The elementwise kernel: one add per element (tanh counted as a transcendental),
    # two f32 inputs read and one written.
    assert ew["flops"] == N * N and ew["transcendentals"] == N * N and ew["bytes_accessed"] == 3 * N * N * 4
    assert (ew["peak"]["unit"], ew["peak"]["dtype"]) == ("cuda core", "F32")
    assert ew["peak"]["flops_per_s"] == pytest.approx(H100_FP32, rel=1e-9)
    assert ew["arithmetic_intensity"] == pytest.approx(1 / 12) and ew["bound"] == "memory"
    assert ew["lower_bound_seconds"] == pytest.approx(3 * N * N * 4 / H100_BW)   # 3.76 us
    # Module totals: the rows summed; the CPU stage's keys.
    assert data["flops"] == 2 * N ** 3 + N * N and data["bytes accessed"] == 6 * N * N * 4
    assert data["transcendentals"] == N * N
    assert data["lower_bound_seconds"] == pytest.approx(2 * N ** 3 / H100_TC_F32 + 3 * N * N * 4 / H100_BW)
    assert data["peaks"]["fp32"]["flops_per_s"] == pytest.approx(H100_FP32, rel=1e-9)


def test_fp32_peak_without_scalar_rates_is_the_fpus_formula():
    """Specs before Hopper have no scalar/matrix unit descriptions: FP32 is 2 x
    fpus_per_core x SMs x clock, and a dot is held to it, with a note."""
    from mlirhlo_driver.cuda import roofline, specs

    p = roofline.peaks(specs.resolve_spec("a100_sxm_80"))
    assert p.fp32.flops_per_s == pytest.approx(2 * 64 * 108 * 1.41e9)   # 19.5 TFLOP/s
    assert p.bandwidth == 2.039e12 and not p.matrix
    peak, note = p.for_row(True, 11, 11)
    assert peak is p.fp32 and note == "spec has no tensor-core rates"


def test_roofline_table(cli, mm_add, tmp_path):
    from conftest import filecheck

    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "roofline", "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.out, """\
CHECK: mm_add on h100_sxm (sm_90a): FP32 66.9TFLOP/s, memory 3.35TB/s, ridge 20.0 FLOP/B
CHECK: fusion {{.*}} FLOPs {{.*}} bytes {{.*}} FLOP/B {{.*}} bound {{.*}} op_name @ source
CHECK-DAG: gemm_fusion{{[^ ]*}} {{ *}}kCustom {{ *}}2.15G {{ *}}12.6M {{ *}}170.67 {{ *}}TC F32 495T {{ *}}compute {{ *}}4.342 {{ *}}xla-cost-analysis {{ *}}jit(f)/dot_general @ model.py:3:8
CHECK-DAG: {{ *}}kLoop {{ *}}1.05M {{ *}}12.6M {{ *}}0.08 {{ *}}CUDA F32 66.9T {{ *}}memory {{ *}}3.756 {{ *}}xla-cost-analysis {{ *}}model.py:5:8
CHECK: total: 2.15G FLOPs, 1.05M transcendentals, 25.2MB accessed, time ≥ 8.098 µs
""", tmp_path)


def test_cost_counts_a_cublas_gemm_from_its_hlo(cli, mm_add):
    """XLA's analysis cannot count a cuBLAS call (-1): its figures come from the HLO,
    2 x M x N x K FLOPs, both operands read and the result written."""
    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "cost", "--no-cache",
            "--xla_gpu_enable_triton_gemm=false")
    assert r.code == 0, r.err
    rows = json.loads(r.out)["fusions"]
    (gemm,) = [x for x in rows if x["figures_from"] == "hlo-gemm"]
    assert gemm["flops"] == 2 * N ** 3 and gemm["bytes_accessed"] == 3 * N * N * 4 and gemm["transcendentals"] == 0
    assert gemm["bound"] == "compute"


def test_binary_stages_are_the_ones_that_give_bytes(a100):
    """A stage's ``binary`` says how it is written (-o, stdout, --dump-dir): it must match
    what the stage gives."""
    from mlirhlo_driver import registry

    for name in ("ptx", "sass", "kernels", "cubin"):
        out = a100.stage(name)
        values = list(out.values()) if isinstance(out, dict) else [out]
        assert values and all(isinstance(v, bytes) == registry.get(name, "cuda").binary for v in values), name


def test_roofline_totals_sum_the_rows_with_figures_and_count_the_others():
    """Each launch with figures adds its flops, bytes and lower bound once; a launch without
    figures (a custom call XLA cannot count) adds nothing and is counted apart."""
    from mlirhlo_driver.cuda.roofline import CostRow, Peak, totals

    peak = Peak("cuda core", "F32", 1e12, "test")

    def row(name, flops, nbytes, trans=0.0):
        return CostRow(name, name, "main", "fusion", None, None, None, flops, trans, nbytes,
                       "xla-cost-analysis" if flops is not None else "none: test", peak, None, 1e9)

    rows = [row("a", 2e12, 1e9, 5.0), row("b", 1e6, 3e9), row("c", None, None), row("d", None, 4e9)]
    assert totals(rows) == {"flops": 2e12 + 1e6, "transcendentals": 5.0, "bytes accessed": 4e9,
                            "lower_bound_seconds": 2.0 + 3.0, "rows_without_figures": 2.0}
    assert totals([])["rows_without_figures"] == 0.0


def test_launched_computations_follow_control_flow_once_and_skip_missing_ids():
    """The computations whose instructions launch kernels: the entry and what its control flow
    calls, transitively, each once; fusion bodies are not followed, and an id the module lacks
    (a truncated dump) is passed over rather than failing the table."""
    from mlirhlo_driver.ir import hlo_proto
    from mlirhlo_driver.ir.fusions import _scheduled

    m = hlo_proto.message_class("HloModuleProto")()
    m.entry_computation_id = 1
    comps = {cid: m.computations.add(id=cid, name=f"c{cid}") for cid in (1, 2, 3, 4, 5)}
    comps[1].instructions.add(name="w", opcode="while", called_computation_ids=[2, 3, 99])
    comps[1].instructions.add(name="f", opcode="fusion", called_computation_ids=[5])
    comps[2].instructions.add(name="c", opcode="call", called_computation_ids=[4, 3])
    comps[3].instructions.add(name="c2", opcode="call", called_computation_ids=[4])
    assert _scheduled(m, {c.id: c for c in m.computations}) == {1, 2, 3, 4}


@pytest.mark.parametrize("sm", ["sm_75", "sm_90a", "sm_100a", "sm_120"])
def test_elf_sm_reads_both_elf_abi_versions(sm, tmp_path):
    """ptxas puts the SM in e_flags' low byte up to sm_90a (ELF ABI 7), in the next byte from
    sm_100 (ABI 8): elf_sm reads each cubin as ptxas wrote it."""
    import subprocess

    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    ptx = tmp_path / "k.ptx"
    ptx.write_text(f".version 8.7\n.target {sm}\n.address_size 64\n\n.visible .entry k()\n{{\n  ret;\n}}\n")
    out = tmp_path / "k.cubin"
    subprocess.run([cuda_tools.ptxas().path, "-arch", sm, str(ptx), "-o", str(out)], check=True)
    data = out.read_bytes()
    number = int(sm[3:].rstrip("a"))
    # EI_ABIVERSION: ptxas 12.9 writes 8 from sm_100, 7 below; a newer ptxas may write 8 throughout.
    assert data[8] == 8 if number >= 100 else data[8] in (7, 8)
    assert cuda_binaries.elf_sm(data) == number
    from mlirhlo_driver.errors import StageError

    with pytest.raises(StageError, match="ELF e_machine is 62, not EM_CUDA"):
        cuda_binaries.elf_sm(data[:0x12] + (62).to_bytes(2, "little") + data[0x14:])
    with pytest.raises(StageError, match="not a 64-bit little-endian ELF file"):
        cuda_binaries.elf_sm(data[:4] + b"\x01" + data[5:])


def test_a_failing_nvdisasm_is_one_error_line_naming_its_version_sm_and_message(cli, mm_add, monkeypatch, tmp_path):
    """nvdisasm exiting non-zero on a compile's cubins: the sass stage fails with one line
    naming the nvdisasm version, the cubins' sm and nvdisasm's own error."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    fake = tmp_path / "nvdisasm"
    fake.write_text("#!/bin/sh\necho 'nvdisasm fatal   : Input file is not a cubin' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(cuda_binaries, "nvdisasm_for",
                        lambda sm, data_dir=None: cuda_binaries.Nvdisasm(str(fake), (13, 0)))
    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "sass", "--no-cache")
    line = assert_one_line_error(r, contains="nvdisasm 13.0 failed on sm_90a cubins: ")
    assert line.endswith("nvdisasm fatal   : Input file is not a cubin"), line


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


KERNELS_TABLE = """\
mod on a100_sxm_80 (sm_80, 64 warps/SM)

 kernel            regs   spill st/ld B   smem B   dyn smem B   stack B      grid × block   blocks/SM       warps/SM   limiter     op_name @ source             fused
 ────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────
 loop_add_fusion     16             0/0        0            0         0           4 × 128          16   64/64 (100%)   warps       -                                -
 loop_add_fusion     16             0/0        0            0         0           8 × 128          16   64/64 (100%)   warps       -                                -
 reduce              64             8/4     4096         2048        24   2x3x1 × 256x2x1           2    32/64 (50%)   registers   jit(f)/reduce_sum @ m.py:3       2
 zeta                 8             0/0        0            -         0                 -           -              -   -           -                                -

"""  # noqa: E501


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


SIDE_BY_SIDE = """\

                                                a100_sxm_80                                                  t4
 kernel            op_name @ source                    regs   spill   smem   grid × block       warps/SM   regs   spill   smem      grid × block       warps/SM
 ──────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────
 loop_add_fusion   -                                     16     0/0      0        4 × 128   64/64 (100%)     16     0/0      0           4 × 128   32/32 (100%)
 loop_add_fusion   -                                     16     0/0      0        8 × 128   64/64 (100%)     16     0/0      0           8 × 128   32/32 (100%)
 zeta              -                                      8     0/0      0              -              -      -       -      -                 -              -
 reduce            jit(f)/reduce_sum @ m.py:3             -       -      -              -              -     64     8/4   6144   2x3x1 × 256x2x1   32/32 (100%)

"""  # noqa: E501


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


# ------------------------------------------------------------ binaries: pieces by hand

def _elf(sections: dict[str, int], *, sm: int = 0x50, abi: int = 7, machine: int = 190) -> bytes:
    """A 64-bit little-endian ELF with a null section, ``sections`` (name -> size) and .shstrtab."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n in sections) + b".shstrtab\0"
    shoff = 64 + len(names)
    head = bytearray(64)
    head[:4], head[4], head[5], head[6], head[8] = b"\x7fELF", 2, 1, 1, abi
    struct.pack_into("<H", head, 0x12, machine)
    struct.pack_into("<Q", head, 0x28, shoff)
    struct.pack_into("<I", head, 0x30, sm)
    struct.pack_into("<HHH", head, 0x3A, 64, len(sections) + 2, len(sections) + 1)
    table = [bytes(64)]
    for name, size in [*sections.items(), (".shstrtab", len(names))]:
        offset = 64 if name == ".shstrtab" else 0
        table.append(struct.pack("<IIQQQQ", names.index(b"\0" + name.encode() + b"\0") + 1, 0, 0, 0, offset,
                                 size).ljust(64, b"\0"))
    return bytes(head) + names + b"".join(table)


def test_elf_sm_reads_the_header_byte_its_abi_version_says():
    """e_flags' low byte below ELF ABI version 8, the next byte from 8 on; anything but a
    64-bit little-endian CUDA ELF of at least a header's 64 bytes is refused."""
    from mlirhlo_driver.cuda.binaries import elf_sm
    from mlirhlo_driver.errors import StageError

    flags = 0x7F_00_64_50  # byte 1: 100, byte 0: 80, high bits set as ptxas sets them
    assert [elf_sm(_elf({}, sm=flags, abi=abi)) for abi in (6, 7, 8, 9)] == [80, 80, 100, 100]
    cubin = _elf({}, sm=flags)
    assert elf_sm(cubin[:64]) == 80
    for bad in (cubin[:63], b"\x7fELG" + cubin[4:], cubin[:4] + b"\x01" + cubin[5:], cubin[:5] + b"\x02" + cubin[6:],
                b""):
        with pytest.raises(StageError) as e:
            elf_sm(bad)
        assert e.value.message == "not a 64-bit little-endian ELF file"
    with pytest.raises(StageError) as e:
        elf_sm(_elf({}, machine=191))
    assert e.value.message == "ELF e_machine is 191, not EM_CUDA (190)"


def test_elf_section_sizes_names_every_section():
    from mlirhlo_driver.cuda.binaries import elf_section_sizes
    from mlirhlo_driver.errors import StageError

    cubin = _elf({".text.k": 256, ".nv.shared.k": 1536, ".nv.info": 12})
    assert elf_section_sizes(cubin) == {"": 0, ".text.k": 256, ".nv.shared.k": 1536, ".nv.info": 12,
                                        ".shstrtab": len(b"\0.text.k\0.nv.shared.k\0.nv.info\0.shstrtab\0")}
    for bad in (cubin[:100], cubin[:0x40], b""):
        with pytest.raises(StageError) as e:
            elf_section_sizes(bad)
        assert e.value.message == "ptxas wrote a cubin whose ELF section table cannot be read"


def _cache_file(entries: dict[str, bytes]) -> bytes:
    from mlirhlo_driver.ir import protos

    cache = protos.message_class("xla.gpu.CompilationCacheProto")()
    for name, binary in entries.items():
        cache.entries[name].binary = binary
    return cache.SerializeToString()


def test_xla_cubins_from_the_kernel_cache_file():
    """Kernel -> its module's cubin; entries without a binary left out; no file, an empty one
    or one that is not the proto: none (the modules are then assembled here)."""
    from mlirhlo_driver.cuda.binaries import xla_cubins

    data = _cache_file({"k": b"ELF-k", "j": b"ELF-k", "empty": b""})
    assert xla_cubins(data) == {"k": b"ELF-k", "j": b"ELF-k"}
    assert xla_cubins(None) == {} and xla_cubins(b"") == {}
    assert xla_cubins(b"\xff\xff\xff") == {}


def test_modules_take_xlas_cubin_only_when_it_holds_all_their_kernels_for_the_sm():
    """A module takes XLA's cubin when its kernels all map to one ELF for the sm with each
    kernel's .text; then nothing is assembled; shared_sizes reads its .nv.shared sections."""
    from mlirhlo_driver.cuda.binaries import Assembly, KernelModule, _take_xla_cubin

    two = _elf({".text.k": 64, ".text.j": 64, ".nv.shared.k": 512}, sm=80)
    other = _elf({".text.j": 64}, sm=80)

    def module():
        return KernelModule("k", "k.ptx", ["j", "k"], "")

    assert _take_xla_cubin(m := module(), {"k": two, "j": two}, "sm_80") is True and m.cubin == two
    for cubins, sm in (({"k": two, "j": two}, "sm_90a"), ({"k": two, "j": other}, "sm_80"), ({"k": two}, "sm_80"),
                       ({"k": other, "j": other}, "sm_80"), ({"k": b"junk", "j": b"junk"}, "sm_80"),
                       ({}, "sm_80")):
        assert _take_xla_cubin(m := module(), cubins, sm) is False and m.cubin == b"", (cubins.keys(), sm)
    asm = Assembly("sm_80", None, (), [module()], _cache_file({"k": two, "j": two}))
    assert asm.xla_cubins == {"k": two, "j": two}
    assert asm.modules_assembled()[0].cubin == two  # no ptxas (there is none here to run)
    assert asm.shared_sizes() == {"k": 512}
    assert Assembly("sm_80", None, (), [], None).xla_cubins == {}


def test_kernel_module_name_and_first_error_line():
    from mlirhlo_driver.cuda.binaries import _first_error, kernel_module_name

    ptx = ".visible .entry zeta(\n)\n  .visible .entry alpha$1(\n)\n.func beta()\n.visible  .entry  gamma()\n"
    assert kernel_module_name(ptx, "file.ptx") == "alpha$1"
    assert kernel_module_name(".func beta()\n", "file.ptx") == "file.ptx"
    # A kernel need not be .visible: '.entry k(' names it too.
    assert kernel_module_name(".entry k(\n)\n{\nret;\n}\n", "fb") == "k"
    log = "ptxas info : fine\nptxas error   : bad thing  \nptxas fatal : worse\n"
    assert _first_error(log, 1) == "ptxas error   : bad thing"
    assert _first_error("x\n ptxas fatal : gone \n", 1) == "ptxas fatal : gone"
    assert _first_error("\n  first line  \nsecond\n", 2) == "first line"
    assert _first_error("  \n", 7) == "exit 7"


def test_group_prefixes_and_ptxas_threads():
    import os

    from mlirhlo_driver.cuda.binaries import PtxJob, _threads, group_prefixes

    assert group_prefixes(1) == [""] and group_prefixes(0) == []
    assert group_prefixes(3) == ["__mlirhlo0_", "__mlirhlo1_", "__mlirhlo2_"]
    cores = str(len(os.sched_getaffinity(0)))
    for version, args in (("12.8", ["--split-compile", cores]), ("12.7.9", []), ("13", ["--split-compile", cores]), ("x.y", []), ("", []),
                          ("14.0.1", ["--split-compile", cores])):
        assert _threads(PtxJob("sm_90a", "ptxas", version, (), None)) == args, version


def test_nvdisasm_text_cut_per_kernel_and_made_canonical():
    """nvdisasm's text: the header, and each .text.<kernel> section ending in two blank lines;
    other sections dropped. Canonical: the group prefix gone, banners unpadded, labels
    numbered in order of appearance across the compile's modules."""
    from mlirhlo_driver.cuda.binaries import _canonical, _text_sections

    pad = "-" * 30
    text = (f"\t.headerflags\t@\"EF_CUDA_SM80\"\n\n\n//{pad} .nv.info.__mlirhlo1_k {pad}\n\t.section\t.nv.info\n\n\n"
            f"//{pad} .text.__mlirhlo1_k       {pad}\n__mlirhlo1_k:\n.L_x_7:\n BRA `(.L_x_9) ;\n.L_x_9:\n EXIT ;\n\n\n"
            f"//{pad} .text.__mlirhlo1_j       {pad}\n__mlirhlo1_j:\n.L_x_3:\n BRA `(.L_x_3) ;\n")
    header, sections = _text_sections(text)
    assert header == "\t.headerflags\t@\"EF_CUDA_SM80\"\n\n\n"
    assert sections == {
        "__mlirhlo1_k": f"//{pad} .text.__mlirhlo1_k       {pad}\n__mlirhlo1_k:\n.L_x_7:\n BRA `(.L_x_9) ;\n"
                        ".L_x_9:\n EXIT ;\n\n\n",
        "__mlirhlo1_j": f"//{pad} .text.__mlirhlo1_j       {pad}\n__mlirhlo1_j:\n.L_x_3:\n BRA `(.L_x_3) ;\n\n\n"}
    assert _text_sections("no banners\n") == ("no banners\n", {})
    parts = [("m1", header + sections["__mlirhlo1_k"]), ("m2", header + sections["__mlirhlo1_j"])]
    banner = "//" + "-" * 21 + " .text.{} " + "-" * 26
    assert _canonical(parts, "__mlirhlo1_") == [
        ("m1", f"{header}{banner.format('k')}\nk:\n.L_x_0:\n BRA `(.L_x_1) ;\n.L_x_1:\n EXIT ;\n\n\n"),
        ("m2", f"{header}{banner.format('j')}\nj:\n.L_x_2:\n BRA `(.L_x_2) ;\n\n\n")]
    assert _canonical([("m", "k:\n.L_x_5:\n")], "") == [("m", "k:\n.L_x_0:\n")]


def test_nvdisasm_version_is_probed_once_and_cached_on_disk_for_binaries(tmp_path, monkeypatch):
    """nvdisasm --version's V<version>; a binary's is kept in the probe cache (a script's is
    not: it may change without its stat changing); no version line or no file: None."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    monkeypatch.setattr(cuda_tools, "_cache_path", lambda: str(tmp_path / "probe.json"))
    runs = tmp_path / "runs"
    exe = tmp_path / "nvdisasm"
    exe.write_text(f"#!/bin/sh\necho x >> {runs}\n"
                   "echo 'Cuda compilation tools, release 12.8, V12.8.93'\necho 'Build cuda_12.8'\n")
    exe.chmod(0o755)

    def probe(path=str(exe)):
        cuda_binaries._nvdisasm_version.cache_clear()  # as a new process would start
        return cuda_binaries._nvdisasm_version(path, 1)

    assert probe() == (12, 8, 93) and probe() == (12, 8, 93)
    assert len(runs.read_text().splitlines()) == 2 and not (tmp_path / "probe.json").exists()
    monkeypatch.setattr(cuda_tools, "_is_script", lambda path: False)
    assert probe() == (12, 8, 93) and probe() == (12, 8, 93)
    assert len(runs.read_text().splitlines()) == 3
    (key, value), = json.loads((tmp_path / "probe.json").read_text()).items()
    assert key.startswith(f"nvdisasm|{os.path.realpath(exe)}|") and value == {"version": [12, 8, 93]}
    exe.write_text("#!/bin/sh\necho 'nvdisasm: no version here'\n")
    assert probe() is None
    assert probe(str(tmp_path / "none")) is None
    cuda_binaries._nvdisasm_version.cache_clear()


def test_nvdisasm_for_takes_the_first_that_reads_the_sm_or_says_why_none(tmp_path, monkeypatch):
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools
    from mlirhlo_driver.errors import ToolchainError

    paths = {}
    for d in "abcd":
        paths[d] = tmp_path / d / "nvdisasm"
        paths[d].parent.mkdir()
        paths[d].write_text("")
    a, b, c, d = (str(paths[x]) for x in "abcd")
    versions = {a: None, b: (11, 7), c: (13, 0), d: (12, 8)}
    found = list(versions)
    monkeypatch.setattr(cuda_tools, "nvdisasm_candidates", lambda data_dir: found)
    monkeypatch.setattr(cuda_binaries, "_nvdisasm_version", lambda path, mtime: versions[path])
    monkeypatch.setattr(cuda_tools, "triton_bin_dirs", lambda: [])
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", ("/sys",))
    assert cuda_binaries.nvdisasm_for("sm_80") == cuda_binaries.Nvdisasm(b, (11, 7))
    assert cuda_binaries.nvdisasm_for("sm_90a") == cuda_binaries.Nvdisasm(c, (13, 0))
    assert cuda_binaries.nvdisasm_for("sm_70", "/data") == cuda_binaries.Nvdisasm(b, (11, 7))
    assert cuda_binaries.Nvdisasm("/c/nvdisasm", (13, 0, 48)).version_str == "13.0.48"
    searched = "searched pip's nvidia/*/bin, PATH, /sys/bin, triton/backends/nvidia/bin (triton not installed)"
    found[:] = [a, c]
    with pytest.raises(ToolchainError) as e:
        cuda_binaries.nvdisasm_for("sm_70")
    assert e.value.message == ("no nvdisasm here reads sm_70 cubins (CUDA 13's dropped sm_50..sm_72): "
                               f"found 13.0 at {c}; {searched}")
    assert e.value.hint == cuda_binaries.LEGACY_SASS_HINT
    found[:] = [a, b]
    with pytest.raises(ToolchainError) as e:
        cuda_binaries.nvdisasm_for("sm_100a", "/data")
    assert e.value.message == (f"no nvdisasm here reads sm_100a cubins (too old): found 11.7 at {b}; "
                               f"searched /data/bin, {searched[9:]}")
    assert e.value.hint == "pip install 'nvidia-cuda-nvdisasm>=13.2'"
    found[:] = [a]
    with pytest.raises(ToolchainError) as e:
        cuda_binaries.nvdisasm_for("sm_90a")
    assert (e.value.message, e.value.hint) == (f"no nvdisasm found; {searched}",
                                               "pip install 'nvidia-cuda-nvdisasm>=13.2'")
    monkeypatch.setattr(cuda_tools, "triton_bin_dirs", lambda: ["/t/bin"])
    assert cuda_tools.nvdisasm_searched(None)[-1] == "/t/bin"


def test_nvdisasm_candidates_in_order_executables_once(tmp_path, monkeypatch):
    """The data dir's bin first, then PATH, the system roots, triton's; a file that is not
    executable is passed over, one reached twice (a link) listed once, by its real path."""
    from mlirhlo_driver.cuda import tools as cuda_tools

    def exe(d, mode=0o755):
        p = tmp_path / d / "nvdisasm"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(mode)
        return str(p)

    data, on_path, plain, sys_root, triton = exe("data/bin"), exe("p"), exe("plain", 0o644), exe("sys/bin"), exe("t")
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "nvdisasm").symlink_to(on_path)
    monkeypatch.setattr(cuda_tools, "pip_bin_dirs", lambda: [])
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "sys"),))
    monkeypatch.setattr(cuda_tools, "triton_bin_dirs", lambda: [str(tmp_path / "t")])
    monkeypatch.setenv("PATH", os.pathsep.join(["", str(tmp_path / "link"), str(tmp_path / "plain"),
                                                str(tmp_path / "p"), str(tmp_path / "none")]))
    assert plain
    assert cuda_tools.nvdisasm_candidates(str(tmp_path / "data")) == [data, on_path, sys_root, triton]
    assert cuda_tools.nvdisasm_candidates(None) == [on_path, sys_root, triton]
    assert cuda_tools.nvdisasm_searched(str(tmp_path / "data"))[:3] == [
        str(tmp_path / "data" / "bin"), "pip's nvidia/*/bin", "PATH"]


def _tiny_ptx(name: str, body: str = "ret;") -> str:
    return f".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry {name}()\n{{\n\t{body}\n}}\n"


def _tiny_job(*modules: tuple[str, str]):
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    tool = cuda_tools.ptxas()
    return cuda_binaries.PtxJob("sm_90a", tool.path, tool.version_str, ("-arch=sm_90a", "--warn-on-spills"), None,
                                tuple((name, (name,), _tiny_ptx(name, *body)) for name, *body in modules))


def test_assemble_many_groups_jobs_and_passes_a_missing_nvdisasm_to_the_sass(monkeypatch):
    """A job without modules gets nothing (an empty SASS when asked); jobs sharing sm and
    tools share one ptxas run, except one whose PTX already holds the group prefix (alone);
    no usable nvdisasm: each job keeps its figures and gets the error as its SASS."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda.binaries import GroupResult, KernelResources
    from mlirhlo_driver.errors import ToolchainError

    runs: list[int] = []
    real = subprocess.run

    def counting(args, *a, **kw):
        if Path(str(args[0])).name == "ptxas":
            runs.append(sum(str(x).endswith(".ptx") for x in args))
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", counting)
    empty, one, odd, two = _tiny_job(), _tiny_job(("k",)), _tiny_job(("__mlirhlo_k",)), _tiny_job(("j",), ("k",))
    out = cuda_binaries.assemble_many([empty, one, odd, two], disassemble=False)
    assert sorted(runs) == [1, 3]  # one, two together; the one with the prefix alone
    assert out[0] == GroupResult({}, None)
    assert out[1] == GroupResult({"k": KernelResources("k", out[1].resources["k"].registers, 0, 0, 0, 0, 0)}, None)
    assert out[2].resources.keys() == {"__mlirhlo_k"} and out[2].sass is None
    assert out[3].resources.keys() == {"j", "k"} and out[3].resources["k"] == out[1].resources["k"]

    def no_nvdisasm(sm, data_dir=None):
        raise ToolchainError("no nvdisasm here", hint="install one")  # a new error each time

    monkeypatch.setattr(cuda_binaries, "nvdisasm_for", no_nvdisasm)
    runs.clear()
    out = cuda_binaries.assemble_many([empty, one, two], disassemble=True)
    assert runs == [3]  # the same error: still one group
    assert out[0] == GroupResult({}, [])
    assert out[1].resources.keys() == {"k"} and out[2].resources.keys() == {"j", "k"}
    assert all(isinstance(r.sass, ToolchainError) and r.sass.message == "no nvdisasm here" for r in out[1:])


def test_sass_per_job_from_one_nvdisasm_print_and_a_kernel_it_left_out(tmp_path, monkeypatch):
    """Each job's SASS: per kernel module, nvdisasm's header and its kernels' sections, made
    canonical; a kernel nvdisasm printed no code for fails that group's SASS, not its figures."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    pad = "-" * 12
    printed = tmp_path / "printed.txt"
    printed.write_text(f"\t.elftype\t@\"ET_EXEC\"\n\n\n//{pad} .text.__mlirhlo0_k {pad}\n.L_x_4:\n EXIT ;\n\n\n"
                       f"//{pad} .text.__mlirhlo1_k {pad}\n.L_x_9:\n BRA `(.L_x_4) ;\n\n\n"
                       f"//{pad} .nv.info {pad}\n\t.section .nv.info\n")
    fake = tmp_path / "nvdisasm"
    fake.write_text(f"#!/bin/sh\ncat {printed}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(cuda_binaries, "nvdisasm_for", lambda sm, data_dir=None: cuda_binaries.Nvdisasm(str(fake),
                                                                                                    (13, 0)))
    job = _tiny_job(("k",))
    out = cuda_binaries.assemble_many([job, job], disassemble=True)
    banner = "//" + "-" * 21 + " .text.k " + "-" * 26
    header = "\t.elftype\t@\"ET_EXEC\"\n\n\n"
    assert out[0].sass == [("k", f"{header}{banner}\n.L_x_0:\n EXIT ;\n\n\n")]
    assert out[1].sass == [("k", f"{header}{banner}\n.L_x_0:\n BRA `(.L_x_1) ;\n\n\n")]
    assert out[0].resources.keys() == out[1].resources.keys() == {"k"}
    got = cuda_binaries.assemble_many([_tiny_job(("k",), ("j",)), job], disassemble=True)
    assert all(r.sass.format() == "error: nvdisasm 13.0 printed no code for kernel 'j'" for r in got)
    assert got[0].resources.keys() == {"k", "j"} and got[1].resources.keys() == {"k"}


def test_prepare_lists_the_kernel_modules_and_a_ptxas_failure_names_its_module():
    """prepare(): the non-empty PTX files as modules named after their first kernel, in name
    order, with XLA's options; assembling them, a ptxas failure names the module, the sm and
    ptxas's first error line."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import StageError

    files = [("z.ptx", _tiny_ptx("zed").encode()), ("e.ptx", b" \n\t\n"),
             ("b.ptx", _tiny_ptx("bad", "not_an_instruction;").encode()),
             ("a.ptx", (_tiny_ptx("kb") + "\n.visible .entry ka()\n{\n\tret;\n}\n").encode())]
    asm = cuda_binaries.prepare(files, "sm_90a", {"xla_gpu_disable_gpuasm_optimizations": True})
    assert [(m.name, m.ptx_key, m.kernels) for m in asm.modules] == [
        ("bad", "b.ptx", ["bad"]), ("ka", "a.ptx", ["ka", "kb"]), ("zed", "z.ptx", ["zed"])]
    assert asm.args == ("-arch=sm_90a", "--warn-on-spills", "-O0") and asm.sm == "sm_90a"
    job = cuda_binaries.ptx_job(asm, "/data")
    assert (job.sm, job.ptxas, job.ptxas_version, job.args, job.data_dir) == (
        "sm_90a", asm.ptxas.path, asm.ptxas.version_str, asm.args, "/data")
    assert job.modules[1] == ("ka", ("ka", "kb"), asm.modules[1].ptx)
    with pytest.raises(StageError) as e:
        asm.modules_assembled()
    assert e.value.message.startswith(f"ptxas {asm.ptxas.version_str} failed on kernel module 'bad' for sm_90a: ")
    assert "not_an_instruction" in e.value.message and "\n" not in e.value.message
    good = cuda_binaries.prepare(files[:1], "sm_90a", {})
    (m,) = good.modules_assembled()
    assert cuda_binaries.elf_sm(m.cubin) == 90 and ".text.zed" in cuda_binaries.elf_section_sizes(m.cubin)
    assert good.shared_sizes() == {}


def test_prepare_looks_for_ptxas_in_the_users_cuda_data_dir(monkeypatch):
    """The ptxas comes from --xla_gpu_cuda_data_dir when given (else the default search)."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    asked = []
    monkeypatch.setattr(cuda_tools, "check_target", lambda sm, user_dir=None: asked.append((sm, user_dir)) or "tool")
    for flags in ({"xla_gpu_cuda_data_dir": "/opt/cuda"}, {}, {"xla_gpu_cuda_data_dir": ""},
                  {"xla_gpu_cuda_data_dir": None}):
        assert cuda_binaries.prepare([], "sm_80", flags).ptxas == "tool"
    assert asked == [("sm_80", "/opt/cuda"), ("sm_80", None), ("sm_80", None), ("sm_80", None)]


def test_ptxas_v_lines_out_of_place_are_passed_over():
    """A frame line with no 'Function properties' line before it, and a 'Used' line with no
    entry being compiled (a function's), count for no kernel; each kernel keeps its own; a
    kernel without a frame line (none, or a properties line without one) has none."""
    from mlirhlo_driver.cuda.binaries import KernelResources, parse_ptxas_log

    log = """\
ptxas info    : Used 99 registers, 1 bytes smem
    64 bytes stack frame, 64 bytes spill stores, 64 bytes spill loads
ptxas info    : Compiling entry function 'a' for 'sm_90a'
ptxas info    : Function properties for a
    8 bytes stack frame, 4 bytes spill stores, 2 bytes spill loads
    32 bytes stack frame, 32 bytes spill stores, 32 bytes spill loads
ptxas info    : Used 20 registers, used 2 barriers, 16 bytes smem, 368 bytes cmem[0]
ptxas info    : Used 77 registers
ptxas info    : Function properties for b$1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'b$1' for 'sm_90a'
ptxas info    : Used 3 registers, 368 bytes cmem[0]
ptxas info    : Compiling entry function 'c' for 'sm_90a'
ptxas info    : Function properties for c
ptxas info    : Used 5 registers, 368 bytes cmem[0]
ptxas info    : Compiling entry function 'd' for 'sm_90a'
ptxas info    : Used 6 registers, used 1 barriers
"""
    assert parse_ptxas_log(log) == {"a": KernelResources("a", 20, 8, 4, 2, 16, 2),
                                    "b$1": KernelResources("b$1", 3, 0, 0, 0, 0, 0),
                                    "c": KernelResources("c", 5, 0, 0, 0, 0, 0),
                                    "d": KernelResources("d", 6, 0, 0, 0, 0, 1)}
    assert parse_ptxas_log("") == {}
    assert KernelResources("k", 1, 0, 0, 0, 0).barriers == 0  # none unless given


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


def test_triton_bin_dirs_are_found_without_importing_triton(monkeypatch):
    """Each triton package root's backends/nvidia/bin; none when triton is not installed or
    cannot be looked up."""
    from importlib import util
    from types import SimpleNamespace

    from conftest import find_spec_giving

    from mlirhlo_driver.cuda import tools as cuda_tools
    for spec, dirs in ((SimpleNamespace(submodule_search_locations=["/sp/triton", "/ed/triton"]),
                        ["/sp/triton/backends/nvidia/bin", "/ed/triton/backends/nvidia/bin"]),
                       (SimpleNamespace(submodule_search_locations=None), []), (None, []),
                       (ImportError("broken"), []), (ValueError("no spec"), [])):
        monkeypatch.setattr(util, "find_spec", find_spec_giving("triton", spec))
        assert cuda_tools.triton_bin_dirs() == dirs, spec


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
