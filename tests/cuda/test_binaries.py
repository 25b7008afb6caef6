"""cuda/binaries.py: cubins and SASS (device-less CUDA). XLA's own cubins, ptxas run once
per group of kernel modules, nvdisasm found per sm and its text cut per kernel; ELF headers
and sections read by hand. Figures are checked against ptxas -v and cuobjdump -res-usage.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

import mlirhlo_driver
from tests.conftest import REPO, assert_mentions, ptx_sections
from tests.cuda.conftest import _ptxas_v

MLP = REPO / "tests" / "data" / "mlp_train_step.before_optimizations.txt"


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


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


def _cache_file(entries: dict[str, bytes]) -> bytes:
    from mlirhlo_driver.ir import protos

    cache = protos.message_class("xla.gpu.CompilationCacheProto")()
    for name, binary in entries.items():
        cache.entries[name].binary = binary
    return cache.SerializeToString()


def _tiny_ptx(name: str, body: str = "ret;") -> str:
    return f".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry {name}()\n{{\n\t{body}\n}}\n"


def _tiny_job(*modules: tuple[str, str]):
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    tool = cuda_tools.ptxas()
    return cuda_binaries.PtxJob("sm_90a", tool.path, tool.version_str, ("-arch=sm_90a", "--warn-on-spills"), None,
                                tuple((name, (name,), _tiny_ptx(name, *body)) for name, *body in modules))


@pytest.fixture(scope="module")
def add_file(add_mlir_file) -> Path:
    return add_mlir_file


# ------------------------------------------------------------------ cubin

@pytest.mark.slow
@pytest.mark.parametrize("which, sm_number, flag", [("a100", 80, "EF_CUDA_SM80"), ("h100", 90, "EF_CUDA_SM90")])
def test_cubin_one_elf_per_kernel_module_for_the_spec_sm(request, which, sm_number, flag):
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    compiled = request.getfixturevalue(which)
    cubins = compiled.stage("cubin")
    # One file per kernel module, named as the ptx stage names its sections.
    assert sorted(cubins) == sorted(ptx_sections(compiled))
    for name, data in cubins.items():
        assert data[:4] == b"\x7fELF"
        assert cuda_binaries.elf_sm(data) == sm_number, name
        assert name in _text_sections(data)  # the module's first kernel is in it
    sass = compiled.stage("sass")
    if cuda_tools.ptxas().version < (13,):
        assert '@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS' in sass and flag in sass
    else:  # CUDA 13's cubins (ELF ABI version 8): nvdisasm names the target, no header flags
        assert f"\t.target\t{compiled._stage_request.options.gpu_spec.sm}\n" in sass and ".headerflags" not in sass


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


@pytest.mark.slow
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
    job = cuda_binaries.ptx_job(xla_stages._assembly(compiled._stage_request))
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

    asm = xla_stages._assembly(a100._stage_request)
    cubins = {m.name: m.cubin for m in asm.modules_assembled()}
    assert len(asm.xla_cubins) >= 10 and len(cubins) >= 10
    assert all(asm.xla_cubins[k] == m.cubin for m in asm.modules for k in m.kernels)
    ptx = xla_stages.artifacts(a100._stage_request).matching(xla_stages._PTX_FILE)
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
    assert "\n" not in text
    assert_mentions(text, "nvdisasm", "sm_70", "pip's nvidia/*/bin", "PATH", str(tmp_path / "none" / "bin"),
                    "triton not installed")
    assert text.endswith(f" ({cuda_binaries.LEGACY_SASS_HINT})"), text  # its words: test_nvdisasm_refusals_exactly
    assert_mentions(cuda_binaries.LEGACY_SASS_HINT, "mlirhlo-driver[legacy-sass]", "CUDA 12")


@pytest.mark.slow
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


@pytest.mark.slow
def test_group_elf_holds_xlas_code_under_prefixed_names():
    """Renaming a compile's module-level names for the group ELF changes no code: each
    kernel's .text equals the one in its module's cubin from the compile (XLA's own)."""
    import mlirhlo_driver
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.xla import stages as xla_stages

    compiled = [mlirhlo_driver.compile(str(p), platform="cuda", gpu_spec="h100_sxm") for p in GROUP]
    jobs = [cuda_binaries.ptx_job(xla_stages._assembly(c._stage_request)) for c in compiled]
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


@pytest.mark.slow
def test_a_job_that_fails_in_a_group_fails_alone(h100):
    """The group's ptxas fails on one job's PTX: that job gets the error, the others
    their SASS and figures as if alone."""
    from dataclasses import replace

    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import stages as xla_stages

    good = cuda_binaries.ptx_job(xla_stages._assembly(h100._stage_request))
    name, kernels, ptx = good.modules[0]
    bad = replace(good, modules=((name, kernels, ptx.replace("ret;", "not_an_instruction;", 1)),))
    assert bad.modules[0][2] != ptx
    out = cuda_binaries.assemble_many([good, bad, good], disassemble=True)
    assert isinstance(out[1], StageError) and "ptxas" in str(out[1]) and "not_an_instruction" in str(out[1])
    alone = cuda_binaries.assemble_many([good], disassemble=True)[0]
    assert out[0] == out[2] == alone and len(alone.sass) == len(good.modules)
    assert alone.resources.keys() == {k for _, ks, _ in good.modules for k in ks}


@pytest.mark.slow
def test_two_compiles_with_the_same_kernel_names_share_one_ptxas_and_nvdisasm(h100, monkeypatch):
    """A group of just two compiles that reuse kernel names still gets one ptxas and one nvdisasm run, each its own."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.xla import stages as xla_stages

    job = cuda_binaries.ptx_job(xla_stages._assembly(h100._stage_request))
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


@pytest.mark.slow
def test_sass_does_not_depend_on_the_order_of_the_group():
    """Whichever compile comes first in a group (batch workers finish in any order),
    and so whichever kernel nvdisasm prints last, each compile's SASS is the same."""
    import itertools

    import mlirhlo_driver
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.xla import stages as xla_stages

    # A100: sm_80 cubins have no SYMBOLS section after the last kernel (sm_90a ones do).
    jobs = [cuda_binaries.ptx_job(xla_stages._assembly(
        mlirhlo_driver.compile(str(p), platform="cuda", gpu_spec="a100_sxm_80")._stage_request)) for p in GROUP]
    alone = [cuda_binaries.assemble_many([job], disassemble=True)[0].sass for job in jobs]
    for order in itertools.permutations(range(len(jobs))):
        got = cuda_binaries.assemble_many([jobs[i] for i in order], disassemble=True)
        assert [got[order.index(i)].sass for i in range(len(jobs))] == alone, order
    # Each kernel's section ends with two blank lines, the last one printed too.
    for sections in alone:
        for _, text in sections:
            assert text.endswith(":\n\n\n") and not text.endswith("\n\n\n\n")


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

    with pytest.raises(StageError, match="62"):
        cuda_binaries.elf_sm(data[:0x12] + (62).to_bytes(2, "little") + data[0x14:])
    with pytest.raises(StageError, match="ELF"):
        cuda_binaries.elf_sm(data[:4] + b"\x01" + data[5:])


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
        assert_mentions(e.value.message, "64-bit", "ELF")
    with pytest.raises(StageError) as e:
        elf_sm(_elf({}, machine=191))
    assert_mentions(e.value.message, "191", "EM_CUDA (190)")


def test_elf_section_sizes_names_every_section():
    from mlirhlo_driver.cuda.binaries import elf_section_sizes
    from mlirhlo_driver.errors import StageError

    cubin = _elf({".text.k": 256, ".nv.shared.k": 1536, ".nv.info": 12})
    assert elf_section_sizes(cubin) == {"": 0, ".text.k": 256, ".nv.shared.k": 1536, ".nv.info": 12,
                                        ".shstrtab": len(b"\0.text.k\0.nv.shared.k\0.nv.info\0.shstrtab\0")}
    for bad in (cubin[:100], cubin[:0x40], b""):
        with pytest.raises(StageError) as e:
            elf_section_sizes(bad)
        assert_mentions(e.value.message, "cubin", "section table")


@pytest.mark.golden
@pytest.mark.parametrize("read, data, message", [
    ("elf_sm", b"", "not a 64-bit little-endian ELF file"),
    ("elf_sm", _elf({}, machine=191), "ELF e_machine is 191, not EM_CUDA (190)"),
    ("elf_section_sizes", b"", "ptxas wrote a cubin whose ELF section table cannot be read"),
], ids=["not-elf64", "not-cuda", "no-section-table"])
def test_cubin_refusals_exactly(read, data, message):
    """What the ELF readers say of a file they cannot read, word for word."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import StageError

    with pytest.raises(StageError) as e:
        getattr(cuda_binaries, read)(data)
    assert e.value.message == message


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


@pytest.mark.golden
def test_kernel_module_name_and_first_error_line():
    """The module's name, and the line of ptxas' log a failure is worded by (that line's golden test)."""
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


def _four_nvdisasms(tmp_path, monkeypatch) -> tuple[list[str], list[str]]:
    """nvdisasm_for's candidates: a (no version), b 11.7, c 13.0, d 12.8, found in that order
    (the list, to shorten), and their paths; triton not installed; the system root /sys."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools

    paths = []
    for d in "abcd":
        path = tmp_path / d / "nvdisasm"
        path.parent.mkdir()
        path.write_text("")
        paths.append(str(path))
    versions = dict(zip(paths, [None, (11, 7), (13, 0), (12, 8)]))
    found = list(paths)
    monkeypatch.setattr(cuda_tools, "nvdisasm_candidates", lambda data_dir: found)
    monkeypatch.setattr(cuda_binaries, "_nvdisasm_version", lambda path, mtime: versions[path])
    monkeypatch.setattr(cuda_tools, "triton_bin_dirs", lambda: [])
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", ("/sys",))
    return found, paths


def test_nvdisasm_for_takes_the_first_that_reads_the_sm_or_says_why_none(tmp_path, monkeypatch):
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import tools as cuda_tools
    from mlirhlo_driver.errors import ToolchainError

    found, (a, b, c, d) = _four_nvdisasms(tmp_path, monkeypatch)
    assert cuda_binaries.nvdisasm_for("sm_80") == cuda_binaries.Nvdisasm(b, (11, 7))
    assert cuda_binaries.nvdisasm_for("sm_90a") == cuda_binaries.Nvdisasm(c, (13, 0))
    assert cuda_binaries.nvdisasm_for("sm_70", "/data") == cuda_binaries.Nvdisasm(b, (11, 7))
    assert cuda_binaries.Nvdisasm("/c/nvdisasm", (13, 0, 48)).version_str == "13.0.48"
    places = ("pip's nvidia/*/bin", "PATH", "/sys/bin", "triton/backends/nvidia/bin", "triton not installed")
    found[:] = [a, c]
    with pytest.raises(ToolchainError) as e:
        cuda_binaries.nvdisasm_for("sm_70")
    assert_mentions(e.value.message, "sm_70", "CUDA 13", "13.0", c, *places)
    assert e.value.hint == cuda_binaries.LEGACY_SASS_HINT
    found[:] = [a, b]
    with pytest.raises(ToolchainError) as e:
        cuda_binaries.nvdisasm_for("sm_100a", "/data")
    assert_mentions(e.value.message, "sm_100a", "too old", "11.7", b, "/data/bin", *places[1:])
    assert_mentions(e.value.hint, cuda_binaries.NVDISASM_REQUIREMENT)
    found[:] = [a]
    with pytest.raises(ToolchainError) as e:
        cuda_binaries.nvdisasm_for("sm_90a")
    assert_mentions(e.value.message, "no nvdisasm", *places)
    assert_mentions(e.value.hint, cuda_binaries.NVDISASM_REQUIREMENT)
    monkeypatch.setattr(cuda_tools, "triton_bin_dirs", lambda: ["/t/bin"])
    assert cuda_tools.nvdisasm_searched(None)[-1] == "/t/bin"


_SEARCHED = "searched pip's nvidia/*/bin, PATH, /sys/bin, triton/backends/nvidia/bin (triton not installed)"


@pytest.mark.golden
@pytest.mark.parametrize("usable, sm, data_dir, message, hint", [
    ("ac", "sm_70", None, "no nvdisasm here reads sm_70 cubins (CUDA 13's dropped sm_50..sm_72): found 13.0 at {c}; "
     + _SEARCHED, "pip install 'mlirhlo-driver[legacy-sass]', i.e. 'triton>=3.3,<3.7', which bundles CUDA 12.8's "
     "nvdisasm; or put a CUDA 12 toolkit's bin/ on PATH; docs/commands/kernels.md"),
    ("ab", "sm_100a", "/data", "no nvdisasm here reads sm_100a cubins (too old): found 11.7 at {b}; searched "
     "/data/bin, pip's nvidia/*/bin, PATH, /sys/bin, triton/backends/nvidia/bin (triton not installed)",
     "pip install 'nvidia-cuda-nvdisasm>=13.2'"),
    ("a", "sm_90a", None, "no nvdisasm found; " + _SEARCHED, "pip install 'nvidia-cuda-nvdisasm>=13.2'"),
], ids=["cuda13-dropped", "too-old", "none"])
def test_nvdisasm_refusals_exactly(tmp_path, monkeypatch, usable, sm, data_dir, message, hint):
    """nvdisasm_for's words when no nvdisasm found reads the sm (a: one without a version, b
    11.7, c 13.0): the ones found, the places searched, the fix."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import ToolchainError

    found, paths = _four_nvdisasms(tmp_path, monkeypatch)
    found[:] = [paths["abcd".index(x)] for x in usable]
    with pytest.raises(ToolchainError) as e:
        cuda_binaries.nvdisasm_for(sm, data_dir)
    assert (e.value.message, e.value.hint) == (message.format(b=paths[1], c=paths[2]), hint)


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


def _nvdisasm_printing_k_twice(tmp_path, monkeypatch) -> None:
    """nvdisasm_for gives a fake nvdisasm 13.0 that prints kernel k of groups 0 and 1, nothing else."""
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


def test_sass_per_job_from_one_nvdisasm_print_and_a_kernel_it_left_out(tmp_path, monkeypatch):
    """Each job's SASS: per kernel module, nvdisasm's header and its kernels' sections, made
    canonical; a kernel nvdisasm printed no code for fails that group's SASS, not its figures."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    _nvdisasm_printing_k_twice(tmp_path, monkeypatch)
    job = _tiny_job(("k",))
    out = cuda_binaries.assemble_many([job, job], disassemble=True)
    banner = "//" + "-" * 21 + " .text.k " + "-" * 26
    header = "\t.elftype\t@\"ET_EXEC\"\n\n\n"
    assert out[0].sass == [("k", f"{header}{banner}\n.L_x_0:\n EXIT ;\n\n\n")]
    assert out[1].sass == [("k", f"{header}{banner}\n.L_x_0:\n BRA `(.L_x_1) ;\n\n\n")]
    assert out[0].resources.keys() == out[1].resources.keys() == {"k"}
    got = cuda_binaries.assemble_many([_tiny_job(("k",), ("j",)), job], disassemble=True)
    for r in got:
        assert_mentions(r.sass.message, "nvdisasm 13.0", "'j'")
    assert got[0].resources.keys() == {"k", "j"} and got[1].resources.keys() == {"k"}


@pytest.mark.golden
def test_a_kernel_nvdisasm_printed_no_code_for_exactly(tmp_path, monkeypatch):
    """The SASS of a group missing a kernel's code, word for word."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import StageError

    _nvdisasm_printing_k_twice(tmp_path, monkeypatch)
    got = cuda_binaries.assemble_many([_tiny_job(("k",), ("j",)), _tiny_job(("k",))], disassemble=True)
    assert all(isinstance(r.sass, StageError) for r in got)
    assert [r.sass.format() for r in got] == ["error: nvdisasm 13.0 printed no code for kernel 'j'"] * 2


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
    assert_mentions(e.value.message, f"ptxas {asm.ptxas.version_str}", "'bad'", "sm_90a", "not_an_instruction")
    assert "\n" not in e.value.message
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


def test_sass_of_one_kernel_module_has_no_section_headers(add_file):
    # Headers name the kernel modules only when there are several to tell apart.
    from mlirhlo_driver.cuda import tools as cuda_tools

    c = mlirhlo_driver.compile(str(add_file), platform="cuda")
    assert len(c.stage("cubin")) == 1
    sass = c.stage("sass")
    # CUDA 13's cubins (ELF ABI version 8): nvdisasm prints .target instead of .headerflags.
    header = ".headerflags" if cuda_tools.ptxas().version < (13,) else "\t.target\tsm_90a\n"
    assert header in sass and "// ----- " not in sass


def test_cubin_stage_takes_xla_s_own_cubins_without_a_second_ptxas(add_file, monkeypatch):
    # The driver points XLA's kernel cache into the compile's dump directory, so the cubin
    # stage reads the cubins XLA assembled; ptxas runs again only for modules XLA did not cache.
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    def no_ptxas(asm, modules):
        assert not modules, f"ptxas ran again for {[m.name for m in modules]}, which XLA had cached"

    monkeypatch.setattr(cuda_binaries, "_assemble_modules", no_ptxas)
    cubins = mlirhlo_driver.compile(str(add_file), platform="cuda").stage("cubin")
    [cubin] = cubins.values()
    assert cubin[:4] == b"\x7fELF"


@pytest.mark.golden
def test_ptxas_failure_on_a_kernel_module_exactly(tmp_path):
    """A kernel module ptxas refuses, word for word: the ptxas, the module, the sm and the first
    error line of its output."""
    from types import SimpleNamespace

    from mlirhlo_driver.cuda.binaries import Assembly, KernelModule
    from mlirhlo_driver.errors import StageError

    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\necho 'ptxas info    : compiling'\necho 'ptxas error   : bad thing  '\nexit 1\n")
    fake.chmod(0o755)
    asm = Assembly("sm_80", SimpleNamespace(path=str(fake), version_str="12.9"), (),
                   [KernelModule("bad", "b.ptx", ["bad"], "x")], None)
    with pytest.raises(StageError) as e:
        asm.modules_assembled()
    assert e.value.message == "ptxas 12.9 failed on kernel module 'bad' for sm_80: ptxas error   : bad thing"
