"""CUDA tools for device-less compiles: pip's ptxas 12.9 and libdevice, no CUDA toolkit needed.

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

from conftest import DATA, REPO, CliResult, assert_one_line_error, filecheck
from mlirhlo_driver import cuda_tools
from mlirhlo_driver.errors import ToolchainError

MLP = DATA / "mlp_train_step.before_optimizations.txt"


# ------------------------------------------------------------- the locator

def test_pip_ptxas_is_the_default_and_targets_every_shipped_spec():
    from mlirhlo_driver import gpu_specs

    data_dir, source = cuda_tools.cuda_data_dir()
    assert source == "pip nvidia-cuda-nvcc-cu12"
    assert Path(data_dir).name == "cuda_nvcc" and Path(data_dir).parent.name == "nvidia"
    assert cuda_tools.libdevice(data_dir) == os.path.join(data_dir, cuda_tools.LIBDEVICE)
    p = cuda_tools.ptxas()
    assert p.path == os.path.join(data_dir, "bin", "ptxas")
    assert (12, 9) <= p.version[:2] < (13, 0)
    # Read from the tool's own --gpu-name list: 12.9 still has Pascal and Volta.
    assert {"sm_60", "sm_70", "sm_80", "sm_90a", "sm_100a"} <= set(p.archs)
    assert all(re.fullmatch(r"sm_\d+[a-z]?", a) for a in p.archs)
    for spec in gpu_specs.list_specs():
        assert p.can_target(spec.sm), spec.name


def test_user_data_dir_wins(tmp_path):
    assert cuda_tools.cuda_data_dir(str(tmp_path)) == (str(tmp_path), "--xla_gpu_cuda_data_dir")


def test_flag_overrides_point_xla_at_the_chosen_ptxas(tmp_path):
    from mlirhlo_driver.xla_backend import flag_overrides

    opts = SimpleNamespace(platform="cuda", xla_flags=())
    assert dict(flag_overrides(opts))["xla_gpu_cuda_data_dir"] == cuda_tools.cuda_data_dir()[0]
    mine = SimpleNamespace(platform="cuda", xla_flags=(("xla_gpu_cuda_data_dir", str(tmp_path)),))
    assert dict(flag_overrides(mine))["xla_gpu_cuda_data_dir"] == str(tmp_path)
    assert "xla_gpu_cuda_data_dir" not in dict(flag_overrides(SimpleNamespace(platform="cpu", xla_flags=())))


def test_ptxas_too_old_or_too_new_for_the_sm():
    with pytest.raises(ToolchainError) as e:
        cuda_tools.check_target("sm_999")
    assert "cannot target sm_999: too old" in e.value.message
    # A CUDA 13-like ptxas (no Pascal/Volta) is too new for sm_70; pip's can, and the hint says so.
    cuda13 = cuda_tools.Ptxas("/opt/fake/bin/ptxas", (13, 0, 88), ("sm_75", "sm_80", "sm_90a"), "PATH")
    with pytest.raises(ToolchainError) as e:
        cuda13.require("sm_70")
    assert "cannot target sm_70: too new (oldest target sm_75)" in e.value.message
    assert f"--xla_gpu_cuda_data_dir={cuda_tools.cuda_data_dir()[0]}" in e.value.hint
    cuda13.require("sm_80")  # no error


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
    assert "pip install 'nvidia-cuda-nvcc-cu12" in text and "--xla_gpu_cuda_data_dir=DIR" in text


def test_translate_xla_reports():
    report = ("No PTX compilation provider is available. Details: \n - ptxas_path: Couldn't find a "
              "suitable version of ptxas. The following locations were considered: ./cuda_sdk_lib/bin/ptxas")
    err = cuda_tools.translate_xla_error(report)
    assert err is not None and "\n" not in err.format() and "no usable ptxas" in err.message
    err = cuda_tools.translate_xla_error("INTERNAL: libdevice not found at ./libdevice.10.bc")
    assert err is not None and "libdevice" in err.message
    assert cuda_tools.translate_xla_error("some other failure") is None


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
    line = assert_one_line_error(cli("specs", "check", spec), contains=f"{spec}:{line_no}:{col}: ")
    assert "no ptxas here can target sm_999" in line


def test_specs_check_without_any_ptxas(cli, monkeypatch):
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [])
    spec = REPO / "gpu_specs" / "v100.txtpb"
    line = assert_one_line_error(cli("specs", "check", spec), contains=f"{spec}:")
    assert "no ptxas here to assemble sm_70" in line and "pip install" in line


def test_specs_list_names_the_ptxas_in_use(cli):
    r = cli("specs", "list")
    assert r.code == 0 and r.err == ""
    p = cuda_tools.ptxas()
    footer = [ln for ln in r.out.splitlines() if ln.startswith("ptxas:")]
    assert footer == [f"ptxas: {p.version_str} {p.path} ({p.source}; targets {p.arch_range()})"]
    rows = {ln.split()[0]: ln.split()[-1] for ln in r.out.splitlines()[1:]
            if not ln.startswith(("ptxas:", " "))}
    assert rows["v100"] == rows["p100"] == rows["h100_sxm"] == "ok"


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

    def run(argv: list[str], *, hide_pip: str | None = None) -> CliResult:
        """``hide_pip``: a part of pip's nvidia/cuda_nvcc to hide too ("." for all of it)."""
        mounts = [f"mount --bind {shlex.quote(str(empty))} {shlex.quote(d)}" for d in dirs]
        mounts += [f"mount --bind /dev/null {shlex.quote(f)}" for f in files]
        if hide_pip:
            target = os.path.normpath(os.path.join(cuda_tools.pip_cuda_dir(), hide_pip))
            mounts.append(f"mount --bind {shlex.quote(str(empty))} {shlex.quote(target)}")
        script = " && ".join([*mounts, "exec " + shlex.join(argv)])
        proc = subprocess.run(["unshare", "-m", "bash", "-c", script], capture_output=True,
                              text=True, cwd=REPO, timeout=300)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    # The namespace really is bare: the locators find only pip's ptxas and pip's nvdisasms there.
    seen = run([sys.executable, "-c", "from mlirhlo_driver import cuda_tools as c, cuda_binaries as b; "
                                      "print([p.path for p in c.all_ptxas()]); print(b._nvdisasm_candidates(None))"])
    assert seen.code == 0, seen.err
    ptxas, nvdisasms = seen.out.splitlines()
    assert ptxas == repr([os.path.join(cuda_tools.pip_cuda_dir(), "bin", "ptxas")])
    assert eval(nvdisasms) and all(p.startswith(SITE) for p in eval(nvdisasms)), nvdisasms
    return run


MLIRHLO = [sys.executable, "-c", "from mlirhlo_driver.cli import main; main()"]


@pytest.mark.parametrize("spec, target", [("h100_sxm", "sm_90a"), ("v100", "sm_70")])
def test_main_job_without_a_cuda_toolkit(bare, spec, target, tmp_path):
    # The README's main job.
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=ptx", "--gpu-spec", spec, str(MLP)])
    assert r.code == 0, r.err
    assert r.err == ""
    filecheck(r.out, f"CHECK: .target {target}\nCHECK: .visible .entry\n", tmp_path)


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


def test_sass_v100_without_a_cuda_toolkit(bare, tmp_path):
    """pip alone: CUDA 13's nvdisasm refuses sm_70 cubins; Triton's bundled CUDA 12.8 one reads them."""
    r = bare([*MLIRHLO, "opt", "--platform=CUDA", "--stage=sass", "--gpu-spec", "v100", "--no-cache", str(MLP)])
    assert r.code == 0, r.err
    assert r.err == ""
    filecheck(r.out, V100_SASS, tmp_path)


def test_stage_all_p100_without_a_cuda_toolkit(bare, tmp_path):
    from mlirhlo_driver import cuda_binaries

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


def test_kernels_three_specs_without_a_cuda_toolkit(bare):
    specs = ["p100", "v100", "h100_sxm"]
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
    assert str(tmp_path / "bin" / "ptxas") in line and "pip install 'nvidia-cuda-nvcc-cu12" in line


ADD_HLO = """HloModule add

ENTRY main {
  x = f32[64] parameter(0)
  ROOT y = f32[64] add(x, x)
}
"""


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
    code = ("from mlirhlo_driver import cuda_tools; cuda_tools.check_target = lambda *a, **k: None\n"
            "from mlirhlo_driver.cli import main; main()")
    r = bare([sys.executable, "-c", code, "opt", "--platform=CUDA", "--stage=ptx", "--gpu-spec",
              "h100_sxm", f"--xla_gpu_cuda_data_dir={empty}", str(path)], hide_pip=hide)
    line = assert_one_line_error(r, contains=message)
    assert "pip install" in line
