"""CUDA tools for device-less compiles: pip's ptxas and libdevice of the CUDA plugin's major
(12.9 for jax-cuda12-plugin, 13.x for jax-cuda13-plugin), no CUDA toolkit needed.

The namespace tests hide every system CUDA toolkit (discovered at test time)
in a private mount namespace, as a new user's machine would be: they need
root and ``unshare`` and are skipped otherwise (CI runs as root).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlirhlo_driver.cuda import tools as cuda_tools
from mlirhlo_driver.errors import ToolchainError
from tests.conftest import DATA, REPO, CliResult, assert_mentions, assert_one_line_error, filecheck

MLP = DATA / "mlp_train_step.before_optimizations.txt"


def _cubin_for_sm(sm: int, kernel: str) -> bytes:
    """The least ELF a cubin check reads: a CUDA header saying ``sm`` (ABI version 7:
    the SM in e_flags bits 0-7) and a section table with ``.text.<kernel>``."""
    import struct

    names = b"\0.text." + kernel.encode() + b"\0.shstrtab\0"
    shoff = 64 + len(names)
    head = bytearray(64)
    head[:4], head[4], head[5], head[6], head[8] = b"\x7fELF", 2, 1, 1, 7
    struct.pack_into("<H", head, 0x12, 190)
    struct.pack_into("<Q", head, 0x28, shoff)
    struct.pack_into("<I", head, 0x30, sm)
    struct.pack_into("<HHH", head, 0x3A, 64, 3, 2)
    section = [bytes(64)]
    for name_off, offset, size in ((1, 0, 0), (names.index(b".shstrtab"), 64, len(names))):
        section.append(struct.pack("<IIQQQQ", name_off, 0, 0, 0, offset, size).ljust(64, b"\0"))
    return bytes(head) + names + b"".join(section)


# ------------------------------------- pip's tools follow the plugin's CUDA major

def _fake_ptxas(path: Path, version: str, archs: list[str]) -> None:
    """A script that answers --version and --help as a ptxas of that version would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    release = ".".join(version.split(".")[:2])
    listed = ",".join(f"'{a}'" for a in archs)
    path.write_text("#!/bin/sh\n"
                    'if [ "$1" = --version ]; then\n'
                    f'  echo "Cuda compilation tools, release {release}, V{version}"\n'
                    "else\n"  # builtins only: the tests' PATH may be empty
                    "  echo '--gpu-name <gpu name>                       (-arch)'\n"
                    f'  echo "        Allowed values for this option:  {listed}."\n'
                    f'  echo "        Default value:  \'{archs[0]}\'."\n'
                    "fi\n")
    path.chmod(0o755)


def _fake_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"BC\xc0\xde")
    return path


def _fake_exe(path: Path) -> Path:
    _fake_file(path).chmod(0o755)
    return path


CU12_ARCHS = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_90a", "sm_100a", "sm_121"]

CU13_ARCHS = ["sm_75", "sm_80", "sm_90a", "sm_100a", "sm_121f"]


@pytest.fixture
def fake_pip(tmp_path, monkeypatch):
    """pip's nvidia/ tree with both CUDA majors' ptxas and libdevice (nvidia/cuda_nvcc 12.9,
    nvidia/cu13 13.5), and no other CUDA tool in reach (PATH, system roots, triton)."""

    root = tmp_path / "site-packages" / "nvidia"
    _fake_ptxas(root / "cuda_nvcc" / "bin" / "ptxas", "12.9.86", CU12_ARCHS)
    _fake_file(root / "cuda_nvcc" / cuda_tools.LIBDEVICE)
    _fake_ptxas(root / "cu13" / "bin" / "ptxas", "13.5.37", CU13_ARCHS)
    _fake_file(root / "cu13" / cuda_tools.LIBDEVICE)
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [str(root)])
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "no-system-cuda"),))
    monkeypatch.setattr(cuda_tools, "triton_bin_dirs", lambda: [])
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    return root


def _use_plugin(monkeypatch, major: int) -> None:
    from mlirhlo_driver._native import jaxlib as _jaxlib

    plugin = _jaxlib.CudaPlugin(f"jax-cuda{major}-plugin", _jaxlib.installed_versions()["jaxlib"])
    monkeypatch.setattr(_jaxlib, "cuda_plugin", lambda found=None: plugin)


def _under_cuda13(ptxas, cu12, sm: str = "sm_70", arch: str = "Volta", spec: str = "v100",
                  gpu: str = "Tesla V100-SXM2-16GB") -> tuple[str, ...]:
    """What the one error line of a spec CUDA 13 dropped names under jax-cuda13-plugin: the sm,
    its architecture and spec, the ptxas and its targets, the CUDA 12 way out (its words:
    test_cuda13_names_each_architecture_it_dropped, test_ptxas_refusal_hints_exactly)."""
    return (f"CUDA 13 dropped {sm}", f"{arch}; spec {spec}: {gpu}", f"ptxas {ptxas.version_str}",
            f"({ptxas.path}, pip nvidia-cuda-nvcc)", ptxas.arch_range(), "'mlirhlo-driver[cuda12]'",
            "--xla_gpu_cuda_data_dir=DIR", f"DIR={cu12}", "'nvidia-cuda-nvcc-cu12>=12.9,<13'")

# ------------------------------------------------- no CUDA toolkit, for real

SITE = os.path.realpath(sysconfig.get_paths()["purelib"])  # pip's packages: kept visible


def _system_toolkits() -> tuple[list[str], list[str]]:
    """(toolkit directories, ptxas/nvdisasm files on PATH) outside pip, found now."""
    files, dirs = [], set()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        for tool in ("ptxas", "nvdisasm") if d else ():
            f = os.path.join(d, tool)
            if not os.path.isfile(f) or os.path.realpath(f).startswith(SITE):
                continue
            files.append(f)  # hidden file by file: its bin/ may be /usr/bin or /usr/local/bin
            with open(f, "rb") as fh:
                head = fh.read(4096)
            if head.startswith(b"#!"):  # a wrapper script names the real binary
                roots = [m.group(1).decode() for m in re.finditer(rb"(/[^\s\"']+)/bin/" + tool.encode(), head)]
            else:
                roots = [os.path.dirname(os.path.dirname(os.path.realpath(f)))]
            # A toolkit directory (it has nvvm/) is hidden whole, libdevice included.
            dirs.update(os.path.realpath(r) for r in roots if os.path.isdir(os.path.join(r, "nvvm")))
    for root in [*cuda_tools.SYSTEM_ROOTS, *map(str, Path("/usr/local").glob("cuda-*"))]:
        if os.path.isdir(os.path.join(root, "bin")):
            dirs.add(os.path.realpath(root))
    return sorted(dirs), files


def _namespace_unavailable() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root to mount inside a private namespace (CI runs as root)"
    if shutil.which("unshare") is None:
        return "needs util-linux 'unshare'"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"'unshare -m' is not permitted here: {probe.stderr.strip()}"
    return None


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """Run a command with every system CUDA toolkit (and optionally pip's) hidden."""
    why = _namespace_unavailable()
    if why:
        pytest.skip(why)
    empty = tmp_path_factory.mktemp("empty")
    dirs, files = _system_toolkits()

    def run(argv: list[str], *, hide_pip: str | None = None, hide: tuple[str, ...] = ()) -> CliResult:
        """``hide_pip``: a part of pip's CUDA tools directory (nvidia/cuda_nvcc, nvidia/cu13) to
        hide too ("." for all of it); ``hide``: other directories to hide."""
        mounts = [f"mount --bind {shlex.quote(str(empty))} {shlex.quote(d)}" for d in dirs]
        mounts += [f"mount --bind /dev/null {shlex.quote(f)}" for f in files]
        hidden = [os.path.normpath(os.path.join(cuda_tools.pip_cuda_dir(), hide_pip))] if hide_pip else []
        for target in [*hidden, *hide]:
            mounts.append(f"mount --bind {shlex.quote(str(empty))} {shlex.quote(target)}")
        script = " && ".join([*mounts, "exec " + shlex.join(argv)])
        proc = subprocess.run(["unshare", "-m", "bash", "-c", script], capture_output=True,
                              text=True, cwd=REPO, timeout=300)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    # The namespace really is bare: the locators find only pip's ptxas and pip's nvdisasms there.
    seen = run([sys.executable, "-c", "from mlirhlo_driver.cuda import tools as c; from mlirhlo_driver.cuda import binaries as b; "
                                      "print([p.path for p in c.all_ptxas()]); print(c.nvdisasm_candidates(None))"])
    assert seen.code == 0, seen.err
    ptxas, nvdisasms = seen.out.splitlines()
    assert ptxas == repr([os.path.join(cuda_tools.pip_cuda_dir(), "bin", "ptxas")])
    assert eval(nvdisasms) and all(p.startswith(SITE) for p in eval(nvdisasms)), nvdisasms
    return run


MLIRHLO = [sys.executable, "-c", "from mlirhlo_driver.cli.mlirhlo import main; main()"]

# SASS as only Volta spells it: memory operations carry .SYS (Ampere's nvdisasm output drops it).
V100_SASS = """\
CHECK: // ----- input_reduce_fusion -----
CHECK-NEXT: .headerflags @"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM70 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM70)"
CHECK: .text.input_reduce_fusion:
CHECK: S2R R{{[0-9]+}}, SR_TID.X ;
CHECK: LDG.E.CONSTANT.SYS R{{[0-9]+}}, [R{{[0-9]+}}] ;
CHECK: SHFL.DOWN PT, R{{[0-9]+}}, R{{[0-9]+}}, 0x4, 0x1f ;
CHECK: STG.E.SYS [R{{[0-9]+}}], R{{[0-9]+}} ;
CHECK: EXIT ;
CHECK: // ----- loop_broadcast_fusion -----
CHECK-NOT: EF_CUDA_SM80
"""

ADD_HLO = """HloModule add

ENTRY main {
  x = f32[64] parameter(0)
  ROOT y = f32[64] add(x, x)
}
"""

PTXAS_V = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'fusion_1' for 'sm_90a'
ptxas info    : Function properties for fusion_1
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 384 bytes cmem[0]
ptxas info    : Compiling entry function 'loop_add_fusion' for 'sm_90a'
ptxas info    : Used 12 registers, 368 bytes cmem[0]
"""

CUDA13_PTXAS = cuda_tools.Ptxas("/opt/cu13/bin/ptxas", (13, 0, 88), ("sm_75", "sm_80", "sm_90a"), "PATH")


def _fake_toolkit(root: Path) -> Path:
    bc = root / "nvvm" / "libdevice" / "libdevice.10.bc"
    bc.parent.mkdir(parents=True)
    bc.write_bytes(b"BC")
    return bc


# ------------------------------------------------------------- the locator

def test_pip_ptxas_of_the_plugins_cuda_is_the_default():
    """jax-cuda12-plugin: nvidia/cuda_nvcc's ptxas 12.9, every shipped spec; jax-cuda13-plugin:
    nvidia/cu13's ptxas 13, every spec but P100/V100 (CUDA 13 dropped sm_60/sm_70)."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import specs as gpu_specs

    major = _jaxlib.cuda_plugin().cuda_major
    tools = cuda_tools.PIP_TOOLS[major]
    data_dir, source = cuda_tools.cuda_data_dir()
    assert source == f"pip {tools.package}"
    assert Path(data_dir).name == tools.subdir and Path(data_dir).parent.name == "nvidia"
    assert cuda_tools.libdevice(data_dir) == os.path.join(data_dir, cuda_tools.LIBDEVICE)
    p = cuda_tools.ptxas()
    assert p.path == os.path.join(data_dir, "bin", "ptxas") and p.source == source
    assert p.version[0] == major and (major > 12 or p.version[:2] >= (12, 9))
    # Read from the tool's own --gpu-name list: 12.9 still has Pascal and Volta, 13 starts at Turing.
    assert {"sm_75", "sm_80", "sm_90a", "sm_100a"} <= set(p.archs)
    assert ({"sm_60", "sm_70"} <= set(p.archs)) is (major == 12)
    assert all(re.fullmatch(r"sm_\d+[a-z]?", a) for a in p.archs)
    for spec in gpu_specs.list_specs():
        assert p.can_target(spec.sm) is (major == 12 or spec.sm not in ("sm_60", "sm_70")), spec.name


def test_user_data_dir_wins(tmp_path):
    assert cuda_tools.cuda_data_dir(str(tmp_path)) == (str(tmp_path), "--xla_gpu_cuda_data_dir")


def _debug_options(platform: str, **flags) -> dict:
    """The DebugOptions a compile for ``platform`` gets (xla.backend.CompileSpec)."""
    from mlirhlo_driver.xla.backend import CompileSpec
    from mlirhlo_driver.xla.platforms import run_target

    return dict(CompileSpec(run_target(platform, tuple(sorted(flags.items())))).debug_options())


def test_every_cuda_compile_points_xla_at_the_chosen_ptxas(tmp_path):
    assert _debug_options("cuda")["xla_gpu_cuda_data_dir"] == cuda_tools.cuda_data_dir()[0]
    assert _debug_options("cuda", xla_gpu_cuda_data_dir=str(tmp_path))["xla_gpu_cuda_data_dir"] == str(tmp_path)
    assert "xla_gpu_cuda_data_dir" not in _debug_options("cpu")


def test_ptxas_too_old_or_too_new_for_the_sm(monkeypatch):
    with pytest.raises(ToolchainError) as e:
        cuda_tools.check_target("sm_999")
    assert_mentions(e.value.message, "sm_999", "too old")
    # A CUDA 12.4-like ptxas (no sm_100a yet) is too old for it, one without sm_50 too new.
    old = cuda_tools.Ptxas("/opt/old/bin/ptxas", (12, 4, 131), ("sm_50", "sm_90a"), "PATH")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [old])
    with pytest.raises(ToolchainError) as e:
        old.require("sm_100a")
    assert_mentions(e.value.message, "ptxas 12.4.131 (/opt/old/bin/ptxas, PATH)", "sm_100a", "too old", "sm_90a")
    with pytest.raises(ToolchainError) as e:
        cuda_tools.Ptxas("/opt/new/bin/ptxas", (12, 9), ("sm_52", "sm_90a"), "PATH").require("sm_50")
    assert_mentions(e.value.message, "sm_50", "too new", "sm_52")
    # A CUDA 13 ptxas (no Pascal/Volta) for sm_70: where another ptxas here can, the hint names it.
    cuda13 = cuda_tools.Ptxas("/opt/fake/bin/ptxas", (13, 0, 88), ("sm_75", "sm_80", "sm_90a"), "PATH")
    cuda12 = cuda_tools.Ptxas("/opt/cuda-12.9/bin/ptxas", (12, 9, 86), ("sm_60", "sm_70", "sm_90a"), "PATH")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [cuda13, cuda12])
    with pytest.raises(ToolchainError) as e:
        cuda13.require("sm_70")
    assert_mentions(e.value.message, "CUDA 13 dropped sm_70", "Volta", "ptxas 13.0.88 (/opt/fake/bin/ptxas, PATH)",
                    "sm_75..sm_90a")
    assert_mentions(e.value.hint, "12.9.86", "/opt/cuda-12.9/bin/ptxas", "--xla_gpu_cuda_data_dir")
    cuda13.require("sm_80")  # no error


def test_sm_number_is_one_function_with_one_fallback(monkeypatch):
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    assert [cuda_tools.sm_number(s) for s in ("sm_60", "sm_90", "sm_90a", "sm_100f", "sm_121a")] == \
        [60, 90, 90, 100, 121]
    for name in ("compute_90", "sm90", "9.0", "sm_90ab", "sm_", "", "SM_90"):
        assert cuda_tools.sm_number(name) == -1, name
    assert cuda_binaries.sm_number is cuda_tools.sm_number and not hasattr(cuda_binaries, "_sm_number")
    # binaries' call site: such a name matches no cubin, not even one whose header says SM 0
    # (binaries' own copy fell back to 0, and took it).
    for sm, name, taken in ((80, "sm_80", True), (80, "sm_90a", False), (0, "compute_0", False)):
        module = cuda_binaries.KernelModule("k", "k.ptx", ["k"], "")
        assert cuda_binaries._take_xla_cubin(module, {"k": _cubin_for_sm(sm, "k")}, name) is taken, name
    # tools' call sites: the name is called what it is, not "too new" for ptxas; never
    # "dropped by CUDA 13".
    ptxas = cuda_tools.Ptxas("/opt/x/bin/ptxas", (13, 0, 88), ("sm_75", "sm_90a"), "PATH")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [ptxas])
    with pytest.raises(ToolchainError) as e:
        ptxas.require("compute_90")
    assert_mentions(e.value.message, "compute_90", "not an sm_NN name")
    assert "too new" not in e.value.message and "dropped" not in e.value.message


def test_no_ptxas_at_all_names_the_places_and_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(cuda_tools, "pip_cuda_dir", lambda: None)
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [])
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "none"),))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError) as e:
        cuda_tools.check_target("sm_90a")
    text = e.value.format()
    assert "\n" not in text
    assert "PATH" in text and str(tmp_path / "none" / "bin" / "ptxas") in text
    assert f"pip install {cuda_tools.pip_tools().requirement} " in text and "--xla_gpu_cuda_data_dir=DIR" in text


def test_translate_xla_reports():
    report = ("No PTX compilation provider is available. Details: \n - ptxas_path: Couldn't find a "
              "suitable version of ptxas. The following locations were considered: ./cuda_sdk_lib/bin/ptxas")
    err = cuda_tools.translate_xla_error(report)
    assert err is not None and "\n" not in err.format() and "no usable ptxas" in err.message
    err = cuda_tools.translate_xla_error("INTERNAL: libdevice not found at ./libdevice.10.bc")
    assert err is not None and "libdevice" in err.message
    assert cuda_tools.translate_xla_error("some other failure") is None
    # XLA's "ptxas too old" (its ptxas cannot target the GPU): the spec's sm, and the data dir given.
    old = "UNIMPLEMENTED: ptxas ptxas too old. Falling back to the driver to compile."
    err = cuda_tools.translate_xla_error(old, sm="sm_100a", data_dir="/opt/cuda-12.4")
    assert_mentions(err.message, "sm_100a", "ptxas too old", "xla_gpu_cuda_data_dir=/opt/cuda-12.4")
    assert err.hint == cuda_tools.fix_hint()
    err = cuda_tools.translate_xla_error("", native_log="W asm_compiler.cc] /usr/bin/ptxas too old.")
    assert_mentions(err.message, "/usr/bin/ptxas", "this GPU", "ptxas too old")


@pytest.mark.parametrize("major, subdir, package, version, other", [
    (12, "cuda_nvcc", "nvidia-cuda-nvcc-cu12", (12, 9, 86), (13, 5, 37)),
    (13, "cu13", "nvidia-cuda-nvcc", (13, 5, 37), (12, 9, 86))])
def test_pip_tools_follow_the_plugins_cuda_major(fake_pip, monkeypatch, major, subdir, package,
                                                 version, other):
    """Both pip stacks installed: XLA gets the plugin's own, never the other major's ptxas."""
    _use_plugin(monkeypatch, major)
    assert cuda_tools.cuda_major() == major
    data_dir = str(fake_pip / subdir)
    assert cuda_tools.cuda_data_dir() == (data_dir, f"pip {package}")
    assert cuda_tools.pip_cuda_dir() == data_dir
    p = cuda_tools.ptxas()
    assert (p.path, p.version, p.source) == (os.path.join(data_dir, "bin", "ptxas"), version, f"pip {package}")
    assert cuda_tools.check_target("sm_90a") == p
    assert _debug_options("cuda")["xla_gpu_cuda_data_dir"] == data_dir
    assert cuda_tools.libdevice() == os.path.join(data_dir, cuda_tools.LIBDEVICE)
    assert cuda_tools.find_tool("ptxas") == p.path
    # The other major's ptxas is found too, listed after (specs list: "not used").
    assert [q.version for q in cuda_tools.all_ptxas()] == [version, other]
    # The pip tools and the fix named are those of the plugin in use.
    assert cuda_tools.pip_tools().package == package
    assert cuda_tools.pip_tools().requirement == cuda_tools.PIP_TOOLS[major].requirement


def test_cuda13_needs_its_own_ptxas_and_falls_back_in_order(fake_pip, monkeypatch, tmp_path):
    """nvidia/cu13 with only nvidia-cuda-nvdisasm in it (as beside CUDA 12's tools) is no CUDA 13
    toolkit: a system toolkit comes first, then pip's CUDA 12 tools."""
    import shutil as sh

    sh.rmtree(fake_pip / "cu13")
    _fake_exe(fake_pip / "cu13" / "bin" / "nvdisasm")
    _use_plugin(monkeypatch, 13)
    assert cuda_tools.pip_cuda_dir() is None
    assert cuda_tools.cuda_data_dir() == (str(fake_pip / "cuda_nvcc"), "pip nvidia-cuda-nvcc-cu12")
    system = tmp_path / "cuda-13.0"
    _fake_ptxas(system / "bin" / "ptxas", "13.0.88", CU13_ARCHS)
    _fake_file(system / cuda_tools.LIBDEVICE)
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(system),))
    assert cuda_tools.cuda_data_dir() == (str(system), "system CUDA toolkit")
    p = cuda_tools.ptxas()
    assert (p.version, p.source) == ((13, 0, 88), "system CUDA toolkit")


def test_a_data_dir_is_labelled_by_the_pip_package_that_installed_it(fake_pip, monkeypatch, tmp_path):
    """ptxas(DIR)/all_ptxas(DIR) name a pip CUDA dir by its own package (either major), any other
    DIR by the --xla_gpu_cuda_data_dir flag; a source the caller gives wins."""
    _use_plugin(monkeypatch, 12)
    for subdir, package in (("cuda_nvcc", "nvidia-cuda-nvcc-cu12"), ("cu13", "nvidia-cuda-nvcc")):
        data_dir = str(fake_pip / subdir)
        p = cuda_tools.ptxas(data_dir)
        assert (p.path, p.source) == (os.path.join(data_dir, "bin", "ptxas"), f"pip {package}")
        assert cuda_tools.all_ptxas(data_dir)[0].source == f"pip {package}"
    mine = tmp_path / "my-cuda"
    _fake_ptxas(mine / "bin" / "ptxas", "12.8.93", CU12_ARCHS)
    assert cuda_tools.ptxas(str(mine)).source == "--xla_gpu_cuda_data_dir"
    assert [p.source for p in cuda_tools.all_ptxas(str(mine))] == [
        "--xla_gpu_cuda_data_dir", "pip nvidia-cuda-nvcc-cu12", "pip nvidia-cuda-nvcc"]
    assert cuda_tools.ptxas(str(mine), "system CUDA toolkit").source == "system CUDA toolkit"


def test_a_target_no_ptxas_here_has_gets_the_hint_for_where_the_ptxas_came_from(fake_pip, monkeypatch, tmp_path):
    """pip's own ptxas of the plugin's major cannot target the SM (nor any other here): the hint asks
    for a toolkit DIR; a ptxas from elsewhere (the user's DIR, PATH, the other major's pip) gets the
    install-or-pass fix."""
    _use_plugin(monkeypatch, 12)
    with pytest.raises(ToolchainError) as e:
        cuda_tools.check_target("sm_999")
    assert_mentions(e.value.message, f"({fake_pip / 'cuda_nvcc' / 'bin' / 'ptxas'}, pip nvidia-cuda-nvcc-cu12)")
    assert_mentions(e.value.hint, "sm_999", "--xla_gpu_cuda_data_dir=DIR", "bin/ptxas")
    assert e.value.hint != cuda_tools.fix_hint()
    mine = tmp_path / "my-cuda"
    _fake_ptxas(mine / "bin" / "ptxas", "12.8.93", CU12_ARCHS)
    with pytest.raises(ToolchainError) as e:
        cuda_tools.check_target("sm_999", str(mine))
    assert "--xla_gpu_cuda_data_dir)" in e.value.message and e.value.hint == cuda_tools.fix_hint()
    for source in ("PATH", "pip nvidia-cuda-nvcc", "system CUDA toolkit"):
        with pytest.raises(ToolchainError) as e:
            cuda_tools.Ptxas("/opt/x/bin/ptxas", (12, 9, 86), tuple(CU12_ARCHS), source).require("sm_999")
        assert e.value.hint == cuda_tools.fix_hint(), source


@pytest.mark.golden
def test_fix_hints_name_each_majors_packages():
    """fix_hint's words for each CUDA major (its golden test)."""
    assert cuda_tools.fix_hint(12) == (
        "pip install 'nvidia-cuda-nvcc-cu12>=12.9,<13' (CUDA 12's ptxas and libdevice, for "
        "jax-cuda12-plugin), or pass --xla_gpu_cuda_data_dir=DIR for a CUDA toolkit DIR with bin/ptxas")
    assert cuda_tools.fix_hint(13) == (
        "pip install 'nvidia-cuda-nvcc>=13.0,<14' 'nvidia-nvvm>=13.0,<14' (CUDA 13's ptxas and libdevice, "
        "for jax-cuda13-plugin), or pass --xla_gpu_cuda_data_dir=DIR for a CUDA toolkit DIR with bin/ptxas")


def test_pip_requirements_are_the_extras_in_pyproject():
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for major, tools in cuda_tools.PIP_TOOLS.items():
        assert set(tools.requirements) <= set(extras[f"cuda{major}"]), major


def test_libdevice_and_nvdisasm_searches_take_the_plugins_major_first(fake_pip, monkeypatch):
    from mlirhlo_driver.cuda import ptx

    for sub in ("cuda_nvcc", "cu13"):
        _fake_exe(fake_pip / sub / "bin" / "nvdisasm")
    for major, first, second in ((12, "cuda_nvcc", "cu13"), (13, "cu13", "cuda_nvcc")):
        _use_plugin(monkeypatch, major)
        pip = [c for c in ptx._libdevice_candidates() if c.startswith(str(fake_pip))]
        assert pip == [str(fake_pip / first / cuda_tools.LIBDEVICE), str(fake_pip / second / cuda_tools.LIBDEVICE)]
        assert cuda_tools.nvdisasm_candidates(None) == [str(fake_pip / first / "bin" / "nvdisasm"),
                                                            str(fake_pip / second / "bin" / "nvdisasm")]


def test_the_cache_key_sees_cuda13s_tools(fake_pip):
    from mlirhlo_driver.core import cache

    def key() -> str:
        h = cache._Hasher()
        cache._add_environment(h)
        return h.hexdigest()

    before = key()
    _fake_ptxas(fake_pip / "cu13" / "bin" / "ptxas", "13.6.1", CU13_ARCHS + ["sm_130"])
    after_ptxas = key()
    (fake_pip / "cu13" / cuda_tools.LIBDEVICE).write_bytes(b"BC\xc0\xde another build")
    assert len({before, after_ptxas, key()}) == 3


def test_v100_under_cuda13_is_one_error_line_before_compiling(fake_pip, monkeypatch, cli):
    """jax-cuda13-plugin with CUDA 13's tools alone: P100/V100 stop before XLA is reached."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    shutil.rmtree(fake_pip / "cuda_nvcc")
    _use_plugin(monkeypatch, 13)

    def no_compile(*a, **k):
        raise AssertionError("compiled")

    monkeypatch.setattr(_jaxlib, "cuda_compile_only_devices", no_compile)
    r = cli("opt", "--platform=CUDA", "--stage=ptx", "--gpu-spec", "v100", MLP)
    cu13 = cuda_tools.Ptxas(str(fake_pip / "cu13" / "bin" / "ptxas"), (13, 5, 37), tuple(CU13_ARCHS), "pip")
    assert cu13.arch_range() == "sm_75..sm_121f"
    assert_one_line_error(r, at=str(MLP), facts=_under_cuda13(cu13, fake_pip / "cuda_nvcc"))
    # A CUDA 12 ptxas as the data dir: the cu13 plugin's XLA compiles sm_70 with it (measured with
    # jaxlib 0.12.0.1), so the check lets it through.
    _fake_ptxas(fake_pip / "cuda_nvcc" / "bin" / "ptxas", "12.9.86", CU12_ARCHS)
    _fake_file(fake_pip / "cuda_nvcc" / cuda_tools.LIBDEVICE)
    assert cuda_tools.check_target("sm_70", str(fake_pip / "cuda_nvcc")).version == (12, 9, 86)
    # Installed beside, pip's CUDA 12 ptxas is not used on its own: the hint names it instead.
    with pytest.raises(ToolchainError) as e:
        cuda_tools.check_target("sm_70")
    assert_mentions(e.value.hint, "12.9.86", str(fake_pip / "cuda_nvcc" / "bin" / "ptxas"),
                    f"--xla_gpu_cuda_data_dir={fake_pip / 'cuda_nvcc'}")


# ------------------------------------------------------------ specs commands

def test_specs_check_rejects_a_cc_no_ptxas_here_can_target(cli, tmp_path):
    text = (REPO / "gpu_specs" / "a100_sxm_80.txtpb").read_text()
    text, n = re.subn(r"cuda_compute_capability \{[^}]*\}",
                      "cuda_compute_capability { major: 99 minor: 9 }", text)
    assert n == 1
    spec = tmp_path / "cc99.txtpb"
    spec.write_text(text)
    line_no = next(i for i, ln in enumerate(text.splitlines(), 1) if "cuda_compute_capability" in ln)
    col = text.splitlines()[line_no - 1].index("cuda_compute_capability") + 1
    line = assert_one_line_error(cli("specs", "check", spec), at=f"{spec}:{line_no}:{col}")
    assert_mentions(line, "ptxas", "sm_999")


def test_specs_check_without_any_ptxas(cli, monkeypatch):
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [])
    spec = REPO / "gpu_specs" / "v100.txtpb"
    line = assert_one_line_error(cli("specs", "check", spec), contains=f"{spec}:")
    assert_mentions(line, "no ptxas", "sm_70", "pip install")


def test_specs_list_names_the_ptxas_in_use(cli):
    r = cli("specs", "list")
    assert r.code == 0 and r.err == ""
    p = cuda_tools.ptxas()
    footer = [ln for ln in r.out.splitlines() if ln.startswith("ptxas:")]
    assert footer == [f"ptxas: {p.version_str} {p.path} ({p.source}; targets {p.arch_range()})"]
    rows = {ln.split()[0]: ln.split()[-1] for ln in r.out.splitlines()[1:]
            if not ln.startswith(("ptxas:", " "))}
    assert rows["h100_sxm"] == rows["t4"] == "ok"
    # CUDA 13's ptxas dropped P100/V100.
    assert rows["v100"] == rows["p100"] == ("ok" if p.version < (13,) else "no")


@pytest.mark.slow
@pytest.mark.parametrize("spec, target", [
    ("h100_sxm", "sm_90a"), pytest.param("v100", "sm_70", marks=pytest.mark.sm70_ptxas)])
def test_main_job_without_a_cuda_toolkit(bare, spec, target, tmp_path):
    # The README's main job.
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=ptx", "--gpu-spec", spec, str(MLP)])
    assert r.code == 0, r.err
    assert r.err == ""
    filecheck(r.out, f"CHECK: .target {target}\nCHECK: .visible .entry\n", tmp_path)


@pytest.mark.cuda13
def test_main_job_under_cuda13_runs_cuda13s_ptxas(bare, tmp_path):
    """The README's main job with jax-cuda13-plugin and pip's CUDA 13 tools alone: Hopper PTX of
    PTX ISA 9.x (CUDA 13's), and --version names the tools in use."""
    p = cuda_tools.ptxas()
    assert p.version[0] == 13 and p.source == "pip nvidia-cuda-nvcc", p
    assert Path(p.path).parent.parent.name == "cu13"
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=ptx", "--gpu-spec", "h100_sxm", str(MLP)])
    assert r.code == 0, r.err
    assert r.err == ""
    filecheck(r.out, "CHECK: .version 9.\nCHECK: .target sm_90a\nCHECK: .visible .entry\n", tmp_path)
    assert not re.search(r"^\.version [0-8]\.", r.out, re.M)
    v = bare([*MLIRHLO, "--version"])
    assert v.code == 0 and v.err == "", v.err
    lines = v.out.splitlines()
    assert f"ptxas {p.version_str} {p.path} (pip nvidia-cuda-nvcc)" in lines
    assert f"libdevice {os.path.join(cuda_tools.pip_cuda_dir(), cuda_tools.LIBDEVICE)}" in lines
    nvdisasm = [ln for ln in lines if ln.startswith("nvdisasm ")]
    assert nvdisasm == [f"nvdisasm {p.version_str} {Path(p.path).parent / 'nvdisasm'}"], lines


@pytest.mark.cuda13
def test_xla_assembles_with_cuda13s_ptxas():
    """XLA's own cubins (its kernel cache) name the ptxas that made them (.note.nv.tkinfo):
    pip's CUDA 13 one, not a system toolkit's (ptxas 12.9 writes no such note)."""
    import mlirhlo_driver
    from mlirhlo_driver.xla import stages as xla_stages

    p = cuda_tools.ptxas()
    asm = xla_stages._assembly(mlirhlo_driver.compile(str(MLP), platform="cuda", gpu_spec="h100_sxm")._stage_request)
    assert len(asm.xla_cubins) >= 10
    release = f"release {p.version[0]}.{p.version[1]}, V{p.version_str}".encode()
    for kernel, cubin in asm.xla_cubins.items():
        assert b"Cuda compilation tools, " + release in cubin, kernel


@pytest.mark.cuda13
@pytest.mark.parametrize("spec, sm, arch, gpu", [("v100", "sm_70", "Volta", "Tesla V100-SXM2-16GB"),
                                                 ("p100", "sm_60", "Pascal", "Tesla P100-SXM2-16GB")])
def test_p100_v100_under_cuda13_are_one_error_line(bare, spec, sm, arch, gpu):
    p = cuda_tools.ptxas()
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=ptx", "--gpu-spec", spec, str(MLP)])
    assert r.code == 2
    assert_one_line_error(r, at=str(MLP), facts=_under_cuda13(
        p, Path(cuda_tools.pip_cuda_dir()).parent / "cuda_nvcc", sm, arch, spec, gpu))


@pytest.mark.sm70_ptxas
@pytest.mark.legacy_nvdisasm(pip=True)
def test_sass_v100_without_a_cuda_toolkit(bare, tmp_path):
    """pip alone: CUDA 13's nvdisasm refuses sm_70 cubins; Triton's bundled CUDA 12.8 one reads them."""
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=sass", "--gpu-spec", "v100", "--no-cache", str(MLP)])
    assert r.code == 0, r.err
    assert r.err == ""
    filecheck(r.out, V100_SASS, tmp_path)


@pytest.mark.sm70_ptxas
def test_sass_v100_without_a_cuda12_nvdisasm_names_the_legacy_sass_extra(bare):
    """pip's CUDA 12 tools without triton (not installed by default; hidden here if it is):
    SASS for V100 is one error line naming the legacy-sass extra."""

    triton = tuple(d for d in cuda_tools.triton_bin_dirs() if os.path.isdir(d))
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=sass", "--gpu-spec", "v100", "--no-cache", str(MLP)],
             hide=triton)
    assert r.code == 2
    line = assert_one_line_error(r, at=str(MLP), facts=("nvdisasm", "sm_70", "CUDA 13", "found 13."))
    from mlirhlo_driver.cuda import binaries as cuda_binaries  # the words: tests/cuda/test_binaries.py

    assert line.endswith(f" ({cuda_binaries.LEGACY_SASS_HINT})"), line


@pytest.mark.sm70_ptxas
@pytest.mark.legacy_nvdisasm(pip=True)
def test_stage_all_p100_without_a_cuda_toolkit(bare, tmp_path):
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    out = tmp_path / "out"
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=all", "--gpu-spec", "p100", "--no-cache",
              "--dump-dir", str(out), str(MLP)])
    assert r.code == 0, r.err
    stem = MLP.name.split(".")[0]
    cubins = sorted(out.glob("*.cubin"))
    assert len(cubins) > 1 and all(cuda_binaries.elf_sm(p.read_bytes()) == 60 for p in cubins)
    sass = (out / f"{stem}.sass").read_text()
    assert "EF_CUDA_SM60" in sass and re.search(r"\bLDG\.E\.CI R\d+, \[R\d+\]", sass)  # Pascal's spelling
    filecheck((out / f"{stem}.ptx").read_text(), "CHECK: .target sm_60\n", tmp_path)
    assert re.search(r"^\s*loop_broadcast_fusion\s+\d+\s+0/0\s", (out / f"{stem}.kernels.txt").read_text(), re.M)


@pytest.mark.slow
def test_kernels_three_specs_without_a_cuda_toolkit(bare):
    # CUDA 13 dropped P100/V100: its three are Turing, Ada and Hopper.
    specs = ["p100", "v100", "h100_sxm"] if cuda_tools.ptxas().can_target("sm_70") else ["t4", "l4", "h100_sxm"]
    r = bare([*MLIRHLO, "kernels", str(MLP), "--gpu-spec", ",".join(specs), "--json"])
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [s["name"] for s in data["gpu_specs"]] == specs
    row = next(k for k in data["kernels"] if k["kernel"] == "loop_broadcast_fusion")
    assert set(row["specs"]) == set(specs)
    for spec in specs:
        figures = row["specs"][spec]
        assert figures["registers"] > 0 and figures["block"][0] > 0, (spec, figures)
        assert 0 < figures["occupancy"]["occupancy"] <= 1, (spec, figures)


def test_no_usable_ptxas_is_one_error_line(bare, tmp_path):
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=ptx", "--gpu-spec", "v100",
              f"--xla_gpu_cuda_data_dir={tmp_path}", str(MLP)], hide_pip=".")
    line = assert_one_line_error(r, contains="no usable ptxas")
    assert str(tmp_path / "bin" / "ptxas") in line and f"pip install {cuda_tools.pip_tools().requirement} " in line


@pytest.mark.slow
@pytest.mark.parametrize("module, hide, message", [
    ("add", ".", "XLA found no usable ptxas"),  # no math functions: XLA gets as far as ptxas
    ("mlp", "nvvm", "XLA found no libdevice"),  # ptxas there, but exp and tanh need libdevice
])
def test_xlas_own_reports_become_one_error_line(bare, tmp_path, module, hide, message):
    path = MLP
    if module == "add":
        path = tmp_path / "add.hlo"
        path.write_text(ADD_HLO)
    empty = tmp_path / "cuda"
    empty.mkdir()
    # Skip the driver's pre-check so that XLA itself searches, fails and prints its report.
    code = ("from mlirhlo_driver.cuda import tools as cuda_tools; cuda_tools.check_target = lambda *a, **k: None\n"
            "from mlirhlo_driver.cli.mlirhlo import main; main()")
    r = bare([sys.executable, "-c", code, "opt", "--platform=CUDA", "--stage=ptx", "--gpu-spec",
              "h100_sxm", f"--xla_gpu_cuda_data_dir={empty}", str(path)], hide_pip=hide)
    line = assert_one_line_error(r, contains=message)
    assert "pip install" in line


def test_the_cache_fingerprints_ptxas_in_the_order_tried(tmp_path):
    """The stage cache's tool list starts with the ptxas the stages run: the one cuda_data_dir
    picks, or a given data dir's."""

    picked = cuda_tools.ptxas()
    assert cuda_tools.tool_paths()[0] == picked.path
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ptxas").write_text("")
    paths = cuda_tools.tool_paths(str(tmp_path))
    assert paths[0] == str(tmp_path / "bin" / "ptxas") and picked.path in paths


def test_a_ptxas_wrapper_script_is_probed_every_time_and_a_binary_once(tmp_path, monkeypatch):
    """A script's stat says nothing of the binary it runs: its answers never go to the probe's
    disk cache. A script is a file that starts with '#!'; one that cannot be read counts as one."""
    import json

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    script = tmp_path / "wrap" / "ptxas"
    _fake_ptxas(script, "12.9.86", CU12_ARCHS)
    cuda_tools._probe.cache_clear()
    assert cuda_tools._probe_file(str(script))[0] == (12, 9, 86)
    cache = Path(cuda_tools._cache_path())
    assert not cache.exists() or not any(str(script) in k for k in json.loads(cache.read_text()))
    binary = tmp_path / "bin" / "ptxas"
    _fake_ptxas(binary, "13.2.51", CU13_ARCHS)
    binary.write_bytes(b"\x7fELF" + binary.read_bytes()[2:])
    assert cuda_tools._is_script(str(script)) and not cuda_tools._is_script(str(binary))
    assert cuda_tools._is_script(str(tmp_path / "missing"))  # unreadable: as careful as a script


def test_the_version_lists_the_other_ptxas_found_once_per_version(fake_pip, monkeypatch, tmp_path):
    """--version names the ptxas in use, then each other version found; a second copy of the one
    in use (same version, elsewhere) is not news."""
    from mlirhlo_driver import targets

    _use_plugin(monkeypatch, 12)
    copy = tmp_path / "on-path" / "ptxas"
    _fake_ptxas(copy, "12.9.86", CU12_ARCHS)
    monkeypatch.setenv("PATH", str(copy.parent))
    cuda_tools._probe.cache_clear()
    used, others, why = targets.ptxas_in_use()
    assert (used.version, used.path, why) == ((12, 9, 86), str(fake_pip / "cuda_nvcc" / "bin" / "ptxas"), "")
    assert [(p.version, p.path) for p in others] == [((13, 5, 37), str(fake_pip / "cu13" / "bin" / "ptxas"))]


def test_version_lines_for_libdevice_and_each_nvdisasm(monkeypatch):
    """--version's CUDA tool lines: libdevice, the nvdisasm for the newest arch, and a second
    nvdisasm line for sm_60/sm_70 only where the ptxas in use targets them (CUDA 12) and a
    different nvdisasm reads them."""
    from mlirhlo_driver import targets
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    tool = {"sm_100a": SimpleNamespace(version_str="13.0", path="/new/nvdisasm"),
            "sm_90a": SimpleNamespace(version_str="13.0", path="/new/nvdisasm"),
            "sm_70": SimpleNamespace(version_str="12.8", path="/old/nvdisasm")}
    asked: list[str] = []

    def nvdisasm_for(sm, data_dir=None):
        asked.append(sm)
        if sm not in tool:
            raise ToolchainError(f"no nvdisasm here reads {sm} cubins")
        return tool[sm]

    monkeypatch.setattr(cuda_binaries, "nvdisasm_for", nvdisasm_for)
    monkeypatch.setattr(targets, "_user_cuda_dir", lambda: None)
    monkeypatch.setattr(cuda_tools, "cuda_data_dir", lambda user_dir=None: ("/cuda", "pip"))
    monkeypatch.setattr(cuda_tools, "libdevice", lambda d=None: f"{d}/nvvm/libdevice/libdevice.10.bc")
    cuda12 = SimpleNamespace(archs=["sm_70", "sm_90a", "sm_100a"], can_target=lambda sm: True)
    cuda13 = SimpleNamespace(archs=["sm_75", "sm_100a"], can_target=lambda sm: sm != "sm_70")

    assert targets.cuda_tool_lines(cuda12) == [
        "libdevice /cuda/nvvm/libdevice/libdevice.10.bc", "nvdisasm 13.0 /new/nvdisasm",
        "nvdisasm 12.8 /old/nvdisasm (for sm_60/sm_70)"]
    assert asked == ["sm_100a", "sm_70"]
    asked.clear()
    assert targets.cuda_tool_lines(cuda13) == ["libdevice /cuda/nvvm/libdevice/libdevice.10.bc",
                                               "nvdisasm 13.0 /new/nvdisasm"]
    assert asked == ["sm_100a"]
    # No ptxas: the newest arch XLA targets by default; no sm_70 line.
    assert targets.cuda_tool_lines(None)[1:] == ["nvdisasm 13.0 /new/nvdisasm"]
    # One nvdisasm reads them all: one line.
    tool["sm_70"] = tool["sm_100a"]
    assert targets.cuda_tool_lines(cuda12)[1:] == ["nvdisasm 13.0 /new/nvdisasm"]
    # None reads sm_70 cubins: say what to install.
    del tool["sm_70"]
    assert targets.cuda_tool_lines(cuda12)[2] == \
        f"nvdisasm for sm_60/sm_70 none ({cuda_binaries.LEGACY_SASS_HINT})"
    # None reads the newest arch, an old one reads sm_70: both said.
    tool.clear()
    tool["sm_70"] = SimpleNamespace(version_str="12.8", path="/old/nvdisasm")
    assert targets.cuda_tool_lines(cuda12)[1:] == [
        "nvdisasm none usable: no nvdisasm here reads sm_100a cubins",
        "nvdisasm 12.8 /old/nvdisasm (for sm_60/sm_70)"]
    # No libdevice: what to install; the data dir lookup failing falls back to the user's dir.
    monkeypatch.setattr(cuda_tools, "libdevice", lambda d=None: None)
    assert targets.cuda_tool_lines(cuda13)[0] == f"libdevice none ({cuda_tools.fix_hint()})"
    seen: list = []
    monkeypatch.setattr(targets, "_user_cuda_dir", lambda: "/mine")
    monkeypatch.setattr(cuda_tools, "libdevice", lambda d=None: seen.append(d))

    def no_dir(user_dir=None):
        raise ToolchainError("no CUDA data dir")

    monkeypatch.setattr(cuda_tools, "cuda_data_dir", no_dir)
    targets.cuda_tool_lines(cuda13)
    assert seen == ["/mine"]


@pytest.mark.parametrize("flags, extra", [
    ({}, []),
    ({"xla_gpu_disable_gpuasm_optimizations": False}, []),
    ({"xla_gpu_disable_gpuasm_optimizations": "false"}, []),
    ({"xla_gpu_disable_gpuasm_optimizations": "0"}, []),
    ({"xla_gpu_disable_gpuasm_optimizations": True}, ["-O0"]),
    ({"xla_gpu_disable_gpuasm_optimizations": "True"}, ["-O0"]),
    ({"xla_gpu_disable_gpuasm_optimizations": "1"}, ["-O0"]),
    ({"xla_gpu_ptx_compiler_extra_flags": "-maxrregcount=32 -lineinfo"}, ["-maxrregcount=32", "-lineinfo"]),
    ({"xla_gpu_ptx_compiler_extra_flags": ["-lineinfo"], "xla_gpu_disable_gpuasm_optimizations": True},
     ["-O0", "-lineinfo"]),
])
def test_ptxas_options_follow_xlas_debug_options(flags, extra):
    """ptxas runs as XLA runs it: -O0 only for a true xla_gpu_disable_gpuasm_optimizations,
    then the extra flags, split like a command line."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    assert cuda_binaries.ptxas_options("sm_90a", flags) == ["-arch=sm_90a", "--warn-on-spills", *extra]


def test_ptxas_v_report_gives_each_kernels_resources():
    """Entry functions only; a kernel without a properties block has no stack frame or spills,
    and one without smem or barriers words has none of them."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    got = cuda_binaries.parse_ptxas_log(PTXAS_V)
    assert got == {
        "fusion_1": cuda_binaries.KernelResources("fusion_1", 40, 16, 8, 4, 1024, 1),
        "loop_add_fusion": cuda_binaries.KernelResources("loop_add_fusion", 12, 0, 0, 0, 0, 0)}


def test_a_ptxas_binarys_probe_is_read_back_from_the_disk_cache_and_a_bad_cache_is_ignored(
        tmp_path, monkeypatch):
    """A probed ptxas binary is not run again in a later process: its version and targets come
    from the disk cache. A cache file that is not a JSON object, or not JSON, counts as empty."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cuda_tools, "_is_script", lambda path: False)  # as a real binary would be
    ptxas = tmp_path / "bin" / "ptxas"
    runs = tmp_path / "runs.log"
    _fake_ptxas(ptxas, "12.9.86", CU12_ARCHS)
    lines = ptxas.read_text().splitlines()
    ptxas.write_text("\n".join([lines[0], f'echo "$1" >> {shlex.quote(str(runs))}', *lines[1:]]) + "\n")

    def probe():
        cuda_tools._probe.cache_clear()  # as a new process would start
        return cuda_tools._probe_file(str(ptxas))

    def ran() -> int:
        return len(runs.read_text().splitlines()) if runs.exists() else 0

    expected = ((12, 9, 86), tuple(sorted(CU12_ARCHS, key=lambda s: (cuda_tools.sm_number(s), s))))
    assert probe() == expected and ran() == 2  # --version and --help
    assert probe() == expected and ran() == 2  # from the disk cache: not run again
    cache = Path(cuda_tools._cache_path())
    for bad in ("[]", "not json"):
        cache.write_text(bad)
        before = ran()
        assert probe() == expected and ran() == before + 2
        assert any(k.startswith(os.path.realpath(ptxas)) for k in json.loads(cache.read_text()))
        assert probe() == expected and ran() == before + 2


# ------------------------------------------------ the locator, piece by piece


def test_pip_cuda_and_ptxas_describe_themselves():
    """PipCuda.requirement quotes each requirement; Ptxas names its version, range, place and dict."""
    assert cuda_tools.PIP_TOOLS[12].requirement == "'nvidia-cuda-nvcc-cu12>=12.9,<13'"
    assert cuda_tools.PIP_TOOLS[13].requirement == "'nvidia-cuda-nvcc>=13.0,<14' 'nvidia-nvvm>=13.0,<14'"
    p = cuda_tools.Ptxas("/opt/c/bin/ptxas", (12, 9, 86), ("sm_50", "sm_75", "sm_90a"), "PATH")
    assert p.version_str == "12.9.86" and p.arch_range() == "sm_50..sm_90a"
    assert p.describe() == "ptxas 12.9.86 (/opt/c/bin/ptxas, PATH)"
    assert p.to_dict() == {"path": "/opt/c/bin/ptxas", "version": "12.9.86", "source": "PATH",
                           "archs": ["sm_50", "sm_75", "sm_90a"]}
    assert p.can_target("sm_75") and not p.can_target("sm_80") and not p.can_target("sm_90")
    one = cuda_tools.Ptxas("/x/ptxas", (13, 0), ("sm_75",), "PATH")
    assert one.arch_range() == "sm_75..sm_75" and one.version_str == "13.0"
    assert cuda_tools.Ptxas("/x/ptxas", (13, 0), (), "PATH").arch_range() == "nothing"


def test_pip_tools_of_an_unknown_major_are_cuda12s(monkeypatch):
    """pip_tools(major) picks that major's tools, the plugin's without one, CUDA 12's for any other."""
    assert cuda_tools.pip_tools(13) is cuda_tools.PIP_TOOLS[13]
    assert cuda_tools.pip_tools(12) is cuda_tools.PIP_TOOLS[12]
    assert cuda_tools.pip_tools(11) is cuda_tools.PIP_TOOLS[12]
    assert cuda_tools.pip_tools(14) is cuda_tools.PIP_TOOLS[12]
    for major in (12, 13):
        _use_plugin(monkeypatch, major)
        assert cuda_tools.pip_tools() is cuda_tools.PIP_TOOLS[major]
        assert cuda_tools.fix_hint() == cuda_tools.fix_hint(major)
    assert cuda_tools.fix_hint(11) == cuda_tools.fix_hint(12)


@pytest.mark.parametrize("sm, gpu, arch", [
    ("sm_70", None, "Volta"),
    ("sm_72", "spec xavier: Jetson AGX Xavier", "Volta; spec xavier: Jetson AGX Xavier"),
    ("sm_74", None, "Volta"),
    ("sm_60", "spec p100: Tesla P100-SXM2-16GB", "Pascal; spec p100: Tesla P100-SXM2-16GB"),
    ("sm_61", None, "Pascal"),
    ("sm_50", None, "Maxwell"),
    ("sm_53", "spec nano: Jetson Nano", "Maxwell; spec nano: Jetson Nano"),
    ("sm_35", None, "pre-Turing"),
    ("sm_0", "spec zero: Nothing", "pre-Turing; spec zero: Nothing"),
])
@pytest.mark.golden
def test_cuda13_names_each_architecture_it_dropped(monkeypatch, sm, gpu, arch):
    """A CUDA 13 ptxas asked for an SM below sm_75: the generation by name (pre-Turing below
    Maxwell) and the spec when given; alone here under jax-cuda12-plugin, the fix to install.
    The golden table of the 'dropped' refusal."""
    _use_plugin(monkeypatch, 12)
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [CUDA13_PTXAS])
    with pytest.raises(ToolchainError) as e:
        CUDA13_PTXAS.require(sm, gpu)
    assert e.value.message == (f"CUDA 13 dropped {sm} ({arch}): ptxas 13.0.88 (/opt/cu13/bin/ptxas, PATH) "
                               "targets sm_75..sm_90a")
    assert e.value.hint == cuda_tools.fix_hint(12)


@pytest.mark.parametrize("major", [12, 13])
def test_cuda13_dropped_hint_depends_on_the_plugins_major(monkeypatch, major):
    """No other ptxas here: under jax-cuda13-plugin the way to a CUDA 12 environment; under
    jax-cuda12-plugin, for a CUDA 13 ptxas from pip's CUDA 12 package (not possible, but the
    source decides), the ask for a toolkit DIR."""
    _use_plugin(monkeypatch, major)
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: ["/site/nvidia"])
    p = cuda_tools.Ptxas("/opt/cu13/bin/ptxas", (13, 0, 88), ("sm_75", "sm_90a"), f"pip {cuda_tools.pip_tools().package}")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [p])
    with pytest.raises(ToolchainError) as e:
        p.require("sm_70")
    assert_mentions(e.value.message, "CUDA 13 dropped sm_70", "Volta")
    if major == 13:
        assert e.value.hint == cuda_tools.cuda12_hint()
        assert_mentions(e.value.hint, "CUDA 12", "'mlirhlo-driver[cuda12]'", "DIR=/site/nvidia/cuda_nvcc")
    else:
        assert_mentions(e.value.hint, "sm_70", "--xla_gpu_cuda_data_dir=DIR")
        assert e.value.hint not in (cuda_tools.cuda12_hint(), cuda_tools.fix_hint())


def test_not_dropped_by_cuda13_from_sm75_up_nor_by_cuda12(monkeypatch):
    """sm_75 is Turing, which CUDA 13 keeps: a CUDA 13 ptxas without it is just too new; a
    CUDA 12 ptxas without sm_60 is too new, never 'dropped'."""
    _use_plugin(monkeypatch, 13)
    p = cuda_tools.Ptxas("/opt/cu13/bin/ptxas", (13, 0, 88), ("sm_80", "sm_90a"), "PATH")
    old = cuda_tools.Ptxas("/opt/cu12/bin/ptxas", (12, 9, 86), ("sm_75", "sm_90a"), "PATH")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [p, old])
    with pytest.raises(ToolchainError) as e:
        p.require("sm_75")
    assert_mentions(e.value.message, "ptxas 13.0.88", "sm_75", "too new", "sm_80")
    assert "dropped" not in e.value.message
    assert_mentions(e.value.hint, "12.9.86", "/opt/cu12/bin/ptxas", "--xla_gpu_cuda_data_dir")
    with pytest.raises(ToolchainError) as e:
        old.require("sm_60")
    assert_mentions(e.value.message, "ptxas 12.9.86", "sm_60", "too new", "sm_75")
    assert "dropped" not in e.value.message
    assert e.value.hint == cuda_tools.fix_hint(13)


@pytest.mark.parametrize("archs, sm, why", [
    (("sm_50", "sm_90a"), "sm_0", "too new (oldest target sm_50)"),
    (("sm_50", "sm_90a"), "sm_90", "not among its targets (sm_50..sm_90a)"),
    (("sm_90a", "sm_100a"), "sm_90", "not among its targets (sm_90a..sm_100a)"),
    (("sm_75", "sm_90"), "sm_80", "not among its targets (sm_75..sm_90)"),
    (("sm_75", "sm_90"), "sm_91", "too old (newest target sm_90)"),
    (("sm_75", "sm_90"), "sm_74", "too new (oldest target sm_75)"),
    ((), "sm_80", "not among its targets (nothing)"),
    ((), "sm80", "not an sm_NN name"),
])
@pytest.mark.golden
def test_why_a_ptxas_cannot_target_an_sm(monkeypatch, archs, sm, why):
    """Too old only above its newest SM number, too new only below its oldest; an SM number it
    lists in another variant (sm_90 vs sm_90a) or a gap is 'not among its targets'. The golden
    table of require's 'cannot target' refusal."""
    p = cuda_tools.Ptxas("/opt/c/bin/ptxas", (12, 9, 86), archs, "PATH")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [p])
    with pytest.raises(ToolchainError) as e:
        p.require(sm)
    assert e.value.message == f"ptxas 12.9.86 (/opt/c/bin/ptxas, PATH) cannot target {sm}: {why}"


def test_another_ptxas_that_can_is_named_with_its_data_dir(monkeypatch, tmp_path):
    """The hint names the first other ptxas here (not this one, even at another version) that
    targets the SM, with its toolkit directory when that has libdevice."""
    kit = tmp_path / "cuda-12.9"
    _fake_exe(kit / "bin" / "ptxas")
    _fake_file(kit / cuda_tools.LIBDEVICE)
    p = cuda_tools.Ptxas("/opt/cu13/bin/ptxas", (13, 0, 88), ("sm_75", "sm_90a"), "PATH")
    twin = cuda_tools.Ptxas("/opt/cu13/bin/ptxas", (12, 0, 1), ("sm_70",), "PATH")
    cant = cuda_tools.Ptxas("/opt/cu13b/bin/ptxas", (13, 1, 0), ("sm_75",), "PATH")
    first = cuda_tools.Ptxas(str(kit / "bin" / "ptxas"), (12, 9, 86), ("sm_60", "sm_70"), "PATH")
    second = cuda_tools.Ptxas("/opt/cu12.8/bin/ptxas", (12, 8, 93), ("sm_70",), "PATH")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [p, twin, cant, first, second])
    with pytest.raises(ToolchainError) as e:
        p.require("sm_70", "spec v100: Tesla V100-SXM2-16GB")
    assert_mentions(e.value.hint, "ptxas 12.9.86", str(kit / "bin" / "ptxas"), f"--xla_gpu_cuda_data_dir={kit}")
    assert "12.8.93" not in e.value.hint and "/opt/cu13" not in e.value.hint


def _another_ptxas(tmp_path, libdevice: bool) -> cuda_tools.Ptxas:
    """A CUDA 12.9 ptxas in a toolkit dir under ``tmp_path`` (with libdevice or without)."""
    kit = tmp_path / "cuda-12.9"
    _fake_exe(kit / "bin" / "ptxas")
    if libdevice:
        _fake_file(kit / cuda_tools.LIBDEVICE)
    return cuda_tools.Ptxas(str(kit / "bin" / "ptxas"), (12, 9, 86), ("sm_60", "sm_70"), "PATH")


@pytest.mark.golden
@pytest.mark.parametrize("major, source, other, hint", [
    (12, "PATH", "kit", "ptxas 12.9.86 at {kit}/bin/ptxas can: pass --xla_gpu_cuda_data_dir={kit}"),
    (12, "PATH", "bare", "ptxas 12.9.86 at {kit}/bin/ptxas can: pass --xla_gpu_cuda_data_dir=DIR"),
    (12, "pip", None, "no ptxas here targets sm_70; pass --xla_gpu_cuda_data_dir=DIR for a CUDA toolkit DIR "
     "whose bin/ptxas does"),
    (13, "pip", None, "use a CUDA 12 environment: a venv with pip install 'mlirhlo-driver[cuda12]' and no "
     "jax-cuda13-plugin; or pass --xla_gpu_cuda_data_dir=DIR for a CUDA 12 toolkit DIR with bin/ptxas, "
     "e.g. DIR=/site/nvidia/cuda_nvcc after pip install 'nvidia-cuda-nvcc-cu12>=12.9,<13'"),
], ids=["another-can-with-its-dir", "another-can", "pips-own-cannot", "cuda13-plugin"])
def test_ptxas_refusal_hints_exactly(monkeypatch, tmp_path, major, source, other, hint):
    """The hint of a ptxas that cannot target sm_70 (CUDA 13's), word for word: another ptxas
    here that can (with its toolkit dir where that has libdevice); else, for pip's own ptxas of
    the plugin's major, the ask for a toolkit DIR, or under jax-cuda13-plugin the way to CUDA 12.
    (A ptxas from elsewhere gets fix_hint: test_fix_hints_name_each_majors_packages.)"""
    _use_plugin(monkeypatch, major)
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: ["/site/nvidia"])
    label = f"pip {cuda_tools.pip_tools().package}" if source == "pip" else source
    p = cuda_tools.Ptxas("/opt/cu13/bin/ptxas", (13, 0, 88), ("sm_75", "sm_90a"), label)
    others = [] if other is None else [_another_ptxas(tmp_path, libdevice=other == "kit")]
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [p, *others])
    with pytest.raises(ToolchainError) as e:
        p.require("sm_70")
    assert e.value.hint == hint.format(kit=tmp_path / "cuda-12.9")


def test_cuda12_hint_names_the_site_packages_nvidia_dir(monkeypatch):
    """The CUDA 12 DIR suggested is under the first nvidia/ root, or site-packages' when none."""
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: ["/a/nvidia", "/b/nvidia"])
    assert cuda_tools._site_nvidia() == "/a/nvidia"
    assert_mentions(cuda_tools.cuda12_hint(), "DIR=/a/nvidia/cuda_nvcc", "'nvidia-cuda-nvcc-cu12>=12.9,<13'")
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [])
    purelib = os.path.join(sysconfig.get_paths()["purelib"], "nvidia")
    assert cuda_tools._site_nvidia() == purelib
    assert_mentions(cuda_tools.cuda12_hint(), f"DIR={os.path.join(purelib, 'cuda_nvcc')}")


def test_find_nvidia_roots_reads_the_namespace_packages_locations(monkeypatch):
    """Every directory of the nvidia namespace, in order; none when it is absent, not a package,
    or its lookup fails."""
    from importlib import util

    from tests.conftest import find_spec_giving

    cases = [(SimpleNamespace(submodule_search_locations=["/a/nvidia", Path("/b/nvidia")]), ("/a/nvidia", "/b/nvidia")),
             (SimpleNamespace(submodule_search_locations=[]), ()),
             (SimpleNamespace(submodule_search_locations=None), ()),
             (None, ()), (ImportError("no"), ()), (ValueError("bad"), ())]
    try:
        for result, roots in cases:
            monkeypatch.setattr(util, "find_spec", find_spec_giving("nvidia", result))
            cuda_tools._find_nvidia_roots.cache_clear()
            assert cuda_tools._find_nvidia_roots() == roots, result
            assert cuda_tools._nvidia_roots() == list(roots)
    finally:
        monkeypatch.undo()
        cuda_tools._find_nvidia_roots.cache_clear()


def test_pip_cuda_dir_for_takes_the_first_root_with_ptxas(monkeypatch, tmp_path):
    """Each nvidia/ root in turn; a subdir without bin/ptxas does not count; an unknown major has none."""
    a, b = tmp_path / "a" / "nvidia", tmp_path / "b" / "nvidia"
    _fake_exe(a / "cu13" / "bin" / "nvdisasm")
    _fake_exe(b / "cu13" / "bin" / "ptxas")
    _fake_exe(a / "cuda_nvcc" / "bin" / "ptxas")
    _fake_exe(b / "cuda_nvcc" / "bin" / "ptxas")
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [str(a), str(b)])
    assert cuda_tools.pip_cuda_dir_for(13) == str(b / "cu13")
    assert cuda_tools.pip_cuda_dir_for(12) == str(a / "cuda_nvcc")
    assert cuda_tools.pip_cuda_dir_for(11) is None
    _use_plugin(monkeypatch, 13)
    assert cuda_tools._pip_dirs() == [(str(b / "cu13"), cuda_tools.PIP_TOOLS[13]),
                                      (str(a / "cuda_nvcc"), cuda_tools.PIP_TOOLS[12])]
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [str(a)])
    assert cuda_tools.pip_cuda_dir_for(13) is None and cuda_tools.pip_cuda_dir() is None
    assert cuda_tools._pip_dirs() == [(str(a / "cuda_nvcc"), cuda_tools.PIP_TOOLS[12])]


def test_system_dirs_are_the_fixed_roots_with_ptxas_then_paths_toolkit(monkeypatch, tmp_path):
    """Fixed roots with bin/ptxas, in order; then the toolkit above PATH's ptxas if it has libdevice
    and is not listed already."""
    r1, r2, r3 = tmp_path / "r1", tmp_path / "r2", tmp_path / "r3"
    _fake_exe(r1 / "bin" / "ptxas")
    (r2 / "bin").mkdir(parents=True)
    _fake_exe(r3 / "bin" / "ptxas")
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(r1), str(r2), str(r3)))
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert cuda_tools._system_dirs() == [str(r1), str(r3)]
    kit = tmp_path / "kit"
    _fake_exe(kit / "bin" / "ptxas")
    monkeypatch.setenv("PATH", str(kit / "bin"))
    assert cuda_tools._data_dir_of(str(kit / "bin" / "ptxas")) is None
    assert cuda_tools._system_dirs() == [str(r1), str(r3)]  # no libdevice: not a toolkit
    _fake_file(kit / cuda_tools.LIBDEVICE)
    assert cuda_tools._data_dir_of(str(kit / "bin" / "ptxas")) == str(kit)
    assert cuda_tools._system_dirs() == [str(r1), str(r3), str(kit)]
    _fake_file(r3 / cuda_tools.LIBDEVICE)
    monkeypatch.setenv("PATH", str(r3 / "bin"))
    assert cuda_tools._system_dirs() == [str(r1), str(r3)]  # listed once


def test_searched_lists_places_in_xlas_order(monkeypatch):
    """The user's DIR, PATH, the fixed roots, pip's dir for the plugin's major in each root (or
    the package to install)."""
    _use_plugin(monkeypatch, 13)
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", ("/s1", "/s2"))
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: ["/p1/nvidia", "/p2/nvidia"])
    assert cuda_tools._searched("/mine") == ["/mine/bin/ptxas", "PATH", "/s1/bin/ptxas", "/s2/bin/ptxas",
                                             "/p1/nvidia/cu13/bin/ptxas", "/p2/nvidia/cu13/bin/ptxas"]
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [])
    assert cuda_tools._searched() == ["PATH", "/s1/bin/ptxas", "/s2/bin/ptxas",
                                      "pip's nvidia-cuda-nvcc (not installed)"]
    _use_plugin(monkeypatch, 12)
    assert cuda_tools._searched("")[-1] == "pip's nvidia-cuda-nvcc-cu12 (not installed)"


@pytest.mark.golden
def test_no_cuda_data_dir_error_names_every_place(monkeypatch, tmp_path):
    """Nothing anywhere: one message listing the places searched, with the install fix. The
    golden test of the no-toolkit and no-ptxas refusals."""
    _use_plugin(monkeypatch, 12)
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [])
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "s"),))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError) as e:
        cuda_tools.cuda_data_dir()
    assert e.value.message == ("no CUDA toolkit for device-less CUDA compiles: no ptxas and libdevice in PATH, "
                               f"{tmp_path / 's' / 'bin' / 'ptxas'}, pip's nvidia-cuda-nvcc-cu12 (not installed)")
    assert e.value.hint == cuda_tools.fix_hint(12)
    assert cuda_tools.libdevice() is None
    with pytest.raises(ToolchainError) as e:
        cuda_tools.ptxas()
    assert e.value.message.startswith("no CUDA toolkit for device-less CUDA compiles")
    with pytest.raises(ToolchainError) as e:
        cuda_tools.ptxas(str(tmp_path / "mine"))
    assert e.value.message == ("no usable ptxas (XLA runs it even device-less); searched "
                               f"{tmp_path / 'mine' / 'bin' / 'ptxas'}, PATH, {tmp_path / 's' / 'bin' / 'ptxas'}, "
                               "pip's nvidia-cuda-nvcc-cu12 (not installed)")
    assert e.value.hint == cuda_tools.fix_hint(12)


def test_a_system_toolkit_without_libdevice_is_passed_over(fake_pip, monkeypatch, tmp_path):
    """Under jax-cuda13-plugin with only pip's CUDA 12 tools: a system root with ptxas but no
    libdevice is skipped for them; one with libdevice wins."""
    shutil.rmtree(fake_pip / "cu13")
    _use_plugin(monkeypatch, 13)
    bare_kit, kit = tmp_path / "bare-kit", tmp_path / "kit"
    _fake_ptxas(bare_kit / "bin" / "ptxas", "13.0.88", CU13_ARCHS)
    _fake_ptxas(kit / "bin" / "ptxas", "13.0.88", CU13_ARCHS)
    _fake_file(kit / cuda_tools.LIBDEVICE)
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(bare_kit),))
    assert cuda_tools.cuda_data_dir() == (str(fake_pip / "cuda_nvcc"), "pip nvidia-cuda-nvcc-cu12")
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(bare_kit), str(kit)))
    assert cuda_tools.cuda_data_dir() == (str(kit), "system CUDA toolkit")
    assert cuda_tools.cuda_data_dir(str(bare_kit)) == (str(bare_kit), "--xla_gpu_cuda_data_dir")


def test_candidates_are_listed_in_xlas_order(fake_pip, monkeypatch, tmp_path):
    """The data dir's ptxas, each PATH entry's (empty entries skipped), the fixed roots', pip's
    (the plugin's major first), each labelled by where it came from."""
    _use_plugin(monkeypatch, 13)
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", ("/s1", "/s2"))
    monkeypatch.setenv("PATH", os.pathsep.join(["/p1", "", "/p2"]))
    pip13 = (str(fake_pip / "cu13" / "bin" / "ptxas"), "pip nvidia-cuda-nvcc")
    pip12 = (str(fake_pip / "cuda_nvcc" / "bin" / "ptxas"), "pip nvidia-cuda-nvcc-cu12")
    rest = [("/p1/ptxas", "PATH"), ("/p2/ptxas", "PATH"), ("/s1/bin/ptxas", "system CUDA toolkit"),
            ("/s2/bin/ptxas", "system CUDA toolkit"), pip13, pip12]
    assert cuda_tools._candidates(None) == rest
    assert cuda_tools._candidates("") == rest
    assert cuda_tools._candidates("/mine") == [("/mine/bin/ptxas", "--xla_gpu_cuda_data_dir"), *rest]
    assert cuda_tools._candidates("/mine", "chosen") == [("/mine/bin/ptxas", "chosen"), *rest]
    assert cuda_tools._candidates(str(fake_pip / "cuda_nvcc")) == [pip12, *rest]
    monkeypatch.delenv("PATH")
    assert cuda_tools._candidates(None) == rest[2:]


def test_all_ptxas_lists_each_binary_and_version_once(fake_pip, monkeypatch, tmp_path):
    """A symlink to a ptxas already seen, or another ptxas of a version already seen, is not listed
    again; a file that does not run is skipped."""
    _use_plugin(monkeypatch, 12)
    on_path = tmp_path / "on-path"
    on_path.mkdir()
    os.symlink(fake_pip / "cu13" / "bin" / "ptxas", on_path / "ptxas")
    broken, odd = tmp_path / "broken", tmp_path / "odd"
    _fake_exe(broken / "ptxas")  # not a script, not a binary: does not run
    _fake_ptxas(odd / "ptxas", "12.9.86", CU12_ARCHS)  # a copy of cuda_nvcc's version
    monkeypatch.setenv("PATH", os.pathsep.join([str(broken), str(on_path), str(odd)]))
    got = [(p.path, p.version, p.source) for p in cuda_tools.all_ptxas()]
    assert got == [(str(on_path / "ptxas"), (13, 5, 37), "PATH"), (str(odd / "ptxas"), (12, 9, 86), "PATH")]


def test_libdevice_is_looked_for_in_the_data_dir_then_fixed_roots_then_pip(fake_pip, monkeypatch, tmp_path):
    """The data dir's libdevice first; without one there, a fixed root's, then pip's (plugin's major
    first); no data dir found: still the fixed roots and pip's; none anywhere: None."""
    _use_plugin(monkeypatch, 12)
    mine, s1, s2 = tmp_path / "mine", tmp_path / "s1", tmp_path / "s2"
    _fake_file(s2 / cuda_tools.LIBDEVICE)
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(s1), str(s2)))
    assert cuda_tools.libdevice(str(mine)) == str(s2 / cuda_tools.LIBDEVICE)
    _fake_file(mine / cuda_tools.LIBDEVICE)
    assert cuda_tools.libdevice(str(mine)) == str(mine / cuda_tools.LIBDEVICE)
    assert cuda_tools.libdevice() == str(fake_pip / "cuda_nvcc" / cuda_tools.LIBDEVICE)
    (s2 / cuda_tools.LIBDEVICE).unlink()
    (fake_pip / "cuda_nvcc" / cuda_tools.LIBDEVICE).unlink()
    assert cuda_tools.libdevice(str(tmp_path / "none")) == str(fake_pip / "cu13" / cuda_tools.LIBDEVICE)

    def no_dir(user_dir=None):
        raise ToolchainError("none")

    monkeypatch.setattr(cuda_tools, "cuda_data_dir", no_dir)
    _fake_file(s1 / cuda_tools.LIBDEVICE)
    assert cuda_tools.libdevice() == str(s1 / cuda_tools.LIBDEVICE)
    (s1 / cuda_tools.LIBDEVICE).unlink()
    (fake_pip / "cu13" / cuda_tools.LIBDEVICE).unlink()
    assert cuda_tools.libdevice() is None


def test_pip_bin_dirs_put_the_plugins_major_first_then_by_name(monkeypatch, tmp_path):
    """Every package's bin/ under each nvidia/ root: the plugin's subdir first, the rest sorted;
    a root that cannot be listed is skipped."""
    a, b = tmp_path / "a" / "nvidia", tmp_path / "b" / "nvidia"
    for sub in ("nvjitlink", "cu13", "cuda_nvcc", "cublas"):
        (a / sub).mkdir(parents=True)
    (b / "cu13").mkdir(parents=True)
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [str(a), str(tmp_path / "missing"), str(b)])
    _use_plugin(monkeypatch, 13)
    assert cuda_tools.pip_bin_dirs() == [str(a / s / "bin") for s in ("cu13", "cublas", "cuda_nvcc", "nvjitlink")] \
        + [str(b / "cu13" / "bin")]
    _use_plugin(monkeypatch, 12)
    assert cuda_tools.pip_bin_dirs()[:4] == [str(a / s / "bin") for s in ("cuda_nvcc", "cu13", "cublas", "nvjitlink")]


def test_find_tool_looks_in_the_data_dir_pip_path_then_fixed_roots(monkeypatch, tmp_path):
    """The first executable file named so: the data dir's bin/, pip's bin dirs, PATH, then the
    fixed roots; a file that is not executable, or a directory, does not count."""
    _use_plugin(monkeypatch, 12)
    root = tmp_path / "nvidia"
    mine, on_path, s1, s2 = tmp_path / "mine", tmp_path / "on-path", tmp_path / "s1", tmp_path / "s2"
    monkeypatch.setattr(cuda_tools, "_nvidia_roots", lambda: [str(root)])
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(s1), str(s2)))
    on_path.mkdir()
    monkeypatch.setenv("PATH", str(on_path))
    assert cuda_tools.find_tool("nvdisasm") is None
    (s1 / "bin" / "nvdisasm").mkdir(parents=True)  # a directory
    _fake_file(s2 / "bin" / "nvdisasm")  # not executable
    assert cuda_tools.find_tool("nvdisasm") is None
    _fake_exe(s2 / "bin" / "nvdisasm")
    assert cuda_tools.find_tool("nvdisasm") == str(s2 / "bin" / "nvdisasm")
    _fake_exe(on_path / "nvdisasm")
    assert cuda_tools.find_tool("nvdisasm") == str(on_path / "nvdisasm")
    _fake_file(root / "cuda_nvcc" / "bin" / "nvdisasm")  # not executable
    _fake_exe(root / "cu13" / "bin" / "nvdisasm")
    assert cuda_tools.find_tool("nvdisasm") == str(root / "cu13" / "bin" / "nvdisasm")
    _fake_exe(root / "cuda_nvcc" / "bin" / "nvdisasm")
    assert cuda_tools.find_tool("nvdisasm") == str(root / "cuda_nvcc" / "bin" / "nvdisasm")
    assert cuda_tools.find_tool("nvdisasm", str(mine)) == str(root / "cuda_nvcc" / "bin" / "nvdisasm")
    _fake_exe(mine / "bin" / "nvdisasm")
    assert cuda_tools.find_tool("nvdisasm", str(mine)) == str(mine / "bin" / "nvdisasm")
    assert cuda_tools.find_tool("cuobjdump", str(mine)) is None


def test_probing_answers_none_for_what_is_no_working_ptxas(monkeypatch, tmp_path):
    """Missing, not executable, a directory, not runnable, or not saying a release: no ptxas.
    A --help without a --gpu-name list: no targets. Targets sort by SM number, then name."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cuda_tools._probe_file(str(tmp_path / "missing")) is None
    assert cuda_tools._probe_file(str(_fake_file(tmp_path / "plain" / "ptxas"))) is None
    (tmp_path / "dir" / "ptxas").mkdir(parents=True)
    os.chmod(tmp_path / "dir" / "ptxas", 0o755)
    assert cuda_tools._probe_file(str(tmp_path / "dir" / "ptxas")) is None
    assert cuda_tools._probe_file(str(_fake_exe(tmp_path / "garbage" / "ptxas"))) is None
    mute = tmp_path / "mute" / "ptxas"
    mute.parent.mkdir()
    mute.write_text("#!/bin/sh\necho 'ptxas: fatal'\n")
    mute.chmod(0o755)
    assert cuda_tools._probe_file(str(mute)) is None
    nolist = tmp_path / "nolist" / "ptxas"
    nolist.parent.mkdir()
    nolist.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.9, V12.9.86'\n")
    nolist.chmod(0o755)
    assert cuda_tools._probe_file(str(nolist)) == ((12, 9, 86), ())
    mixed = tmp_path / "mixed" / "ptxas"
    _fake_ptxas(mixed, "13.1", ["sm_90a", "sm_100f", "sm_90", "sm_75", "sm_100a", "sm_90a"])
    assert cuda_tools._probe_file(str(mixed)) == ((13, 1), ("sm_75", "sm_90", "sm_90a", "sm_100a", "sm_100f"))


def test_archs_are_read_only_from_the_gpu_name_list():
    """Only the quoted sm_ names between --gpu-name's 'Allowed values' and 'Default value'."""
    text = ("--input-as-string  Allowed values for this option:  'sm_10'. Default value: 'x'.\n"
            "--gpu-name <gpu name>   (-arch)\n"
            "        Allowed values for this option:  'compute_90','sm_90a','sm_75','lto_90','sm_100f'.\n"
            "        Default value:  'sm_75'.\n"
            "--other  Allowed values for this option: 'sm_120'. Default value: 'sm_120'.\n")
    assert cuda_tools._archs_from_help(text) == ("sm_75", "sm_90a", "sm_100f")
    assert cuda_tools._archs_from_help("--gpu-name <gpu name>\n  no list here\n") == ()


@pytest.mark.golden
def test_translate_xla_reports_name_the_data_dir_and_missing_libdevice(fake_pip, monkeypatch):
    """XLA's libdevice report names the data dir; its autotuner's 'All supported configs failed'
    means no libdevice only where there is none; the places searched for ptxas are listed. The
    golden test of translate_xla_error's words."""
    _use_plugin(monkeypatch, 12)
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", ("/s1",))
    err = cuda_tools.translate_xla_error("INTERNAL: libdevice not found at ./libdevice.10.bc", data_dir="/mine")
    assert err.message == ("XLA found no libdevice (nvvm/libdevice/libdevice.10.bc, needed for math functions) "
                           "(xla_gpu_cuda_data_dir=/mine)")
    assert err.hint == cuda_tools.fix_hint(12)
    failed = "INTERNAL: All supported configs failed to compile"
    assert cuda_tools.translate_xla_error(failed) is None
    assert cuda_tools.translate_xla_error("", native_log=failed) is None
    (fake_pip / "cuda_nvcc" / cuda_tools.LIBDEVICE).unlink()
    (fake_pip / "cu13" / cuda_tools.LIBDEVICE).unlink()
    err = cuda_tools.translate_xla_error("", native_log=failed)
    assert err.message == "XLA found no libdevice (nvvm/libdevice/libdevice.10.bc, needed for math functions)"
    err = cuda_tools.translate_xla_error("No PTX compilation provider", data_dir="/mine")
    assert err.message == ("XLA found no usable ptxas (it runs ptxas even device-less); searched /mine/bin/ptxas, "
                           f"PATH, /s1/bin/ptxas, {fake_pip / 'cuda_nvcc' / 'bin' / 'ptxas'}")
    err = cuda_tools.translate_xla_error("W] /opt/c/bin/ptxas-12.4 too old", sm="sm_90a")
    assert err.message == "/opt/c/bin/ptxas cannot target sm_90a (XLA: ptxas too old)"
    old = "UNIMPLEMENTED: ptxas ptxas too old. Falling back to the driver to compile."
    err = cuda_tools.translate_xla_error(old, sm="sm_100a", data_dir="/opt/cuda-12.4")
    assert err.message == "ptxas cannot target sm_100a (XLA: ptxas too old) (xla_gpu_cuda_data_dir=/opt/cuda-12.4)"
    err = cuda_tools.translate_xla_error("", native_log="W asm_compiler.cc] /usr/bin/ptxas too old.")
    assert err.message == "/usr/bin/ptxas cannot target this GPU (XLA: ptxas too old)"


def test_a_ptxas_made_executable_later_is_found_in_the_same_process(tmp_path, monkeypatch):
    """chmod +x keeps a file's size and mtime, the probe's cache key: a file that could not run
    when looked at must not be remembered as no ptxas."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "bin" / "ptxas"
    _fake_ptxas(path, "12.9.86", ["sm_75", "sm_90a"])
    path.chmod(0o644)
    assert cuda_tools._probe_file(str(path)) is None
    path.chmod(0o755)
    assert cuda_tools._probe_file(str(path)) == ((12, 9, 86), ("sm_75", "sm_90a"))


def test_libdevice_default_follows_the_chosen_data_dir(monkeypatch, tmp_path):
    # pip's toolkit is cuda_data_dir's first choice, so its libdevice wins over a system one.
    from mlirhlo_driver.cuda import tools as cuda_tools

    pip_bc = _fake_toolkit(tmp_path / "pip")
    _fake_toolkit(tmp_path / "system")
    monkeypatch.setattr(cuda_tools, "pip_cuda_dir", lambda: str(tmp_path / "pip"))
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "system"),))
    assert cuda_tools.libdevice() == str(pip_bc)


def test_ptxas_arch_range_names_oldest_and_newest():
    from mlirhlo_driver.cuda.tools import Ptxas

    p = Ptxas("/x/ptxas", (12, 9, 86), ("sm_50", "sm_90", "sm_100", "sm_121f"), "PATH")
    assert p.arch_range() == "sm_50..sm_121f"
    assert Ptxas("/x/ptxas", (12, 9), (), "PATH").arch_range() == "nothing"


def test_find_tool_falls_back_to_the_system_toolkits(monkeypatch, tmp_path):
    from mlirhlo_driver.cuda import tools as cuda_tools

    tool = tmp_path / "toolkit" / "bin" / "guard-no-such-cuda-tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(cuda_tools, "SYSTEM_ROOTS", (str(tmp_path / "toolkit"),))
    assert cuda_tools.find_tool("guard-no-such-cuda-tool") == str(tool)
    tool.chmod(0o644)  # not executable: not a tool
    assert cuda_tools.find_tool("guard-no-such-cuda-tool") is None


# ------------------------------------- nvdisasm and triton's bin dirs (the lookups binaries uses)

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


def test_triton_bin_dirs_are_found_without_importing_triton(monkeypatch):
    """Each triton package root's backends/nvidia/bin; none when triton is not installed or
    cannot be looked up."""
    from importlib import util
    from types import SimpleNamespace

    from tests.conftest import find_spec_giving

    for spec, dirs in ((SimpleNamespace(submodule_search_locations=["/sp/triton", "/ed/triton"]),
                        ["/sp/triton/backends/nvidia/bin", "/ed/triton/backends/nvidia/bin"]),
                       (SimpleNamespace(submodule_search_locations=None), []), (None, []),
                       (ImportError("broken"), []), (ValueError("no spec"), [])):
        monkeypatch.setattr(util, "find_spec", find_spec_giving("triton", spec))
        assert cuda_tools.triton_bin_dirs() == dirs, spec
