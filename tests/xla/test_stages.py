"""XLA stages (xla/stages.py) through the CLI and the API.

Each target is compiled once per test module (module-scoped fixtures): CPU,
and device-less CUDA for a100_sxm_80 (sm_80) and h100_sxm (sm_90a) in one
``--stage all`` run; everything else reads those dumps.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mlirhlo_driver import registry
from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.stages import base as stages
from tests.conftest import DATA, REPO, assert_mentions, assert_one_line_error, cpu_llvm_ir_for_comparison, filecheck
from tests.conftest import main_exit_code as _main
from tests.xla.conftest import _request_on

# Each target compiled once for the file (module fixtures): one worker takes the file.
pytestmark = pytest.mark.xdist_group("xla_stages")

MLP = DATA / "mlp_train_step.before_optimizations.txt"

STEM = "mlp_train_step"

SPECS = {"a100_sxm_80": "sm_80", "h100_sxm": "sm_90a"}

MLIRHLO = Path(sys.executable).parent / "mlirhlo"

# The MLP's parameters: f32[32], f32[8], f32[16,32], f32[32,8], f32[4,16], s32[4].
ARGUMENT_BYTES = 4 * (32 + 8 + 16 * 32 + 32 * 8 + 4 * 16 + 4)

OUTPUT_DATA_BYTES = 4 * (32 + 8 + 16 * 32 + 32 * 8)

# Its five dots (forward 4x16x32, 4x32x8; backward 4x8x32, 32x4x8, 16x4x32), 2 flops per MAC.
DOT_FLOPS = 2 * (4 * 16 * 32 + 4 * 32 * 8 + 4 * 8 * 32 + 32 * 4 * 8 + 16 * 4 * 32)


def _clean_env() -> dict[str, str]:
    """The environment for a child process, without what jax put in ours.

    Once jax is up, this (pytest) process has TF_CPP_MIN_LOG_LEVEL=1 in its
    environment (_jaxlib sets it on import), which would hide native INFO
    logging in children whatever the driver does; a user's shell has no such
    variable, so the stderr checks below run without it.
    """
    drop = {"XLA_FLAGS", "TF_CPP_MIN_LOG_LEVEL", "TF_CPP_MAX_VLOG_LEVEL", "TPU_SKIP_MDS_QUERY"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _run_child(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          env=_clean_env(), cwd=str(REPO), timeout=300)


@dataclass
class DumpRun:
    """One in-process ``opt --stage all --dump-dir`` run and what it left."""

    directory: Path
    code: int
    compiles: list[str]           # module name per xla_backend.compile call
    xla_tmpdirs: list[str]        # mlirhlo-xla-* dirs made during the run
    tmp_left: list[str]           # what the run left in its (private) temp dir
    files: set[str] = field(default_factory=set)

    def path(self, ext: str, spec: str | None = None) -> Path:
        stem = f"{STEM}.{spec}" if spec else STEM
        return self.directory / f"{stem}.{ext}"

    def text(self, stage: str, platform: str, spec: str | None = None) -> str:
        return self.path(registry.get(stage, platform).ext, spec).read_text()


def _dump_all(tmp_path_factory, name: str, *opt_args: str) -> DumpRun:
    from mlirhlo_driver.xla import backend as xla_backend

    out = tmp_path_factory.mktemp(name)
    # A private temp dir: other test runs on this machine make mlirhlo-xla-* dirs too.
    private_tmp = tmp_path_factory.mktemp(name + "-tmp")
    compiles: list[str] = []
    made: list[str] = []
    real_compile, real_mkdtemp = xla_backend.compile, tempfile.mkdtemp

    def counting(module, spec, module_name="module", **kw):
        compiles.append(module_name)
        return real_compile(module, spec, module_name, **kw)

    def recording_mkdtemp(*args, **kw):
        made.append(real_mkdtemp(*args, **kw))
        return made[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("XLA_FLAGS", raising=False)
        mp.setattr(xla_backend, "compile", counting)
        mp.setattr(tempfile, "tempdir", str(private_tmp))
        mp.setenv("TMPDIR", str(private_tmp))  # helper processes' temp dirs too
        mp.setattr(tempfile, "mkdtemp", recording_mkdtemp)
        code = _main(["opt", *opt_args, "--stage", "all", "--dump-dir", out, MLP])
    xla_dirs = [d for d in made if os.path.basename(d).startswith("mlirhlo-xla-")]
    run = DumpRun(out, code, compiles, xla_dirs, sorted(os.listdir(private_tmp)))
    run.files = set(os.listdir(out))
    return run


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory) -> DumpRun:
    return _dump_all(tmp_path_factory, "cpu", "--platform", "cpu")


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory) -> DumpRun:
    return _dump_all(tmp_path_factory, "cuda", "--platform", "cuda", "--gpu-spec", ",".join(SPECS))


@pytest.fixture(scope="module")
def h100_api():
    """``mlirhlo_driver.compile`` for h100_sxm: a second, independent CUDA compile."""
    import mlirhlo_driver

    return mlirhlo_driver.compile(str(MLP), platform="cuda", gpu_spec="h100_sxm")


@pytest.fixture(scope="module")
def cpu_api():
    import mlirhlo_driver

    return mlirhlo_driver.compile(str(MLP), platform="cpu")


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def _before_is_not_optimized(before: str, after: str) -> None:
    # LLVM's function-attrs pass adds `mustprogress`; XLA's emitters do not.
    assert before != after
    assert "mustprogress" not in before
    assert "mustprogress" in after


def _listed(out: str) -> list[str]:
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


# ------------------------------------------------------------ determinism

# Multi-file stages are {part: bytes} in the API (model-explorer's determinism:
# tests/ir/test_model_explorer.py).
CPU_TEXT = [s.name for s in registry.all_for("cpu") if not s.binary and not s.multi]

# The Triton stages' second compile of the MLP step costs 25 s (XLA's Triton log): they are
# checked for determinism on a one-fusion module (xla/test_stages_triton.py).
CUDA_TEXT = [s.name for s in registry.all_for("cuda") if not s.binary and not s.multi
             and s.name not in ("triton", "ttgir", "triton-passes")]


# ------------------------------------------------------------ XLA pass selection

@pytest.fixture(scope="module")
def before_hlo() -> str:
    import mlirhlo_driver

    return mlirhlo_driver.load(str(MLP)).stage("hlo-before-optimizations")


def _count(op: str, hlo: str) -> int:
    return len(re.findall(rf" {op}\(", hlo))


# ------------------------------------------------------------ --stage all runs

def test_cpu_stage_all_writes_every_stage_with_one_compile(cpu_run):
    assert cpu_run.code == 0
    expected = {s.filename(STEM) for s in registry.all_for("cpu")}
    assert cpu_run.files == expected  # nothing else: no leftover .tmp files
    assert "ptx" not in {s.name for s in registry.all_for("cpu")}
    assert cpu_run.compiles == [STEM]
    assert len(cpu_run.xla_tmpdirs) == 1
    assert cpu_run.tmp_left == []  # the dump dir is removed


@pytest.mark.slow
def test_cuda_stage_all_several_specs(cuda_run):
    assert cuda_run.code == 0
    expected = {f"{STEM}.{spec}.{s.ext}" for spec in SPECS for s in registry.all_for("cuda") if not s.multi}
    # multi-file stages write <module>.<spec>.<part>.<ext>: cubin one per kernel module,
    # triton-passes one per Triton fusion (gemm_fusion_dot.5), model-explorer the graph (part "":
    # <module>.<spec>.<ext>) and one overlay per figure
    multi = {f for f in cuda_run.files
             if re.fullmatch(rf"{STEM}\.({'|'.join(SPECS)})(\.[\w.-]+)?\.(cubin|triton-passes\.txt|model-explorer\.json)",
                             f)}
    assert cuda_run.files - multi == expected
    for ext in ("cubin", "triton-passes.txt", "model-explorer.json"):
        assert {f.split(".")[1] for f in multi if f.endswith(ext)} == set(SPECS), ext
    # One compile per (module, spec), however many stages are written.
    assert cuda_run.compiles == [STEM] * len(SPECS)
    # --stage all writes XLA's Triton log; each compile dumps into one dump dir made here
    assert len(cuda_run.xla_tmpdirs) == len(SPECS)
    assert cuda_run.tmp_left == []
    for spec, sm in SPECS.items():
        targets = set(re.findall(r"^\.target (\S+)", cuda_run.text("ptx", "cuda", spec), re.M))
        assert targets == {sm}, spec


def test_dump_files_respect_umask(cpu_run):
    umask = os.umask(0)
    os.umask(umask)
    modes = {f: os.stat(cpu_run.directory / f).st_mode & 0o777 for f in cpu_run.files}
    assert set(modes.values()) == {0o666 & ~umask}, modes


# ------------------------------------------------------------ stage contents: CPU

def test_cpu_hlo(cpu_run, tmp_path):
    hlo = cpu_run.text("hlo", "cpu")
    filecheck(hlo, """\
CHECK: HloModule jit_mlp_train_step, is_scheduled=true
CHECK: ENTRY
CHECK: fusion({{.*}}), kind=kLoop
CHECK: ROOT {{.*}} tuple(
""", tmp_path)
    kinds = set(re.findall(r"kind=(k\w+)", hlo))
    # jaxlib 0.9's XLA CPU makes no kCustom (dot) fusions of this module.
    assert {"kLoop", "kCustom"} - kinds <= (set() if _jaxlib.jaxlib_at_least("0.10.2") else {"kCustom"})
    assert kinds <= {"kLoop", "kInput", "kOutput", "kCustom"}


def test_cpu_hlo_backend_is_scheduled_module(cpu_run):
    text = cpu_run.text("hlo-backend", "cpu")
    assert re.match(r"HloModule jit_mlp_train_step, is_scheduled=true", text)
    assert re.search(r"^ENTRY ", text, re.M)
    assert text.endswith("\n")


def test_cpu_html_dot(cpu_run):
    html = cpu_run.text("html", "cpu")
    assert html.lstrip().startswith("<!DOCTYPE html>")
    assert html.rstrip().endswith("</html>")
    assert "<body>" in html
    dot = cpu_run.text("dot", "cpu")
    assert dot.startswith("digraph")
    assert dot.rstrip().endswith("}")


def test_cpu_buffer_assignment(cpu_run, tmp_path):
    text = cpu_run.text("buffer-assignment", "cpu")
    filecheck(text, """\
CHECK: BufferAssignment:
CHECK-NEXT: allocation 0: size {{[0-9]+}}
""", tmp_path)
    # jaxlib 0.12's XLA writes each allocation's page too: "size 2048, page 0, parameter 2".
    params = {int(p) for p in re.findall(r"^allocation \d+: size \d+,(?: page \d+,)? parameter (\d+)",
                                         text, re.M)}
    assert params == set(range(6))


def test_cpu_memory_usage(cpu_run):
    usage = json.loads(cpu_run.text("memory-usage", "cpu"))
    for key in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
                "alias_size_in_bytes", "generated_code_size_in_bytes"):
        assert isinstance(usage[key], int), key
    assert usage["argument_size_in_bytes"] == ARGUMENT_BYTES
    assert usage["output_size_in_bytes"] >= OUTPUT_DATA_BYTES


def test_cpu_cost(cpu_run):
    cost = json.loads(cpu_run.text("cost", "cpu"))
    assert cost["flops"] >= DOT_FLOPS > 0
    # tanh over f32[4,32] and exp over f32[4,8] (log_softmax)
    assert cost["transcendentals"] == 4 * 32 + 4 * 8
    assert cost["bytes accessed"] > 0


def test_cpu_llvm(cpu_run, tmp_path):
    for stage in ("llvm-before-optimizations", "llvm"):
        text = cpu_run.text(stage, "cpu")
        filecheck(text, """\
CHECK: ; ----- {{[a-z_0-9]+}}_kernel_module -----
CHECK: target triple = "{{.+}}"
CHECK: define {{.*}}@{{[A-Za-z_]}}
""", tmp_path)
        assert "nvptx" not in text
        assert len(re.findall(r"^define ", text, re.M)) >= 5
    assert cpu_run.path("ir-with-opt.ll").read_text() == cpu_run.text("llvm-after-optimizations", "cpu")
    _before_is_not_optimized(cpu_run.text("llvm-before-optimizations", "cpu"), cpu_run.text("llvm", "cpu"))


# ------------------------------------------------------------ stage contents: CUDA

@pytest.mark.parametrize("spec", list(SPECS))
def test_cuda_hlo(cuda_run, spec, tmp_path):
    hlo = cuda_run.text("hlo", "cuda", spec)
    filecheck(hlo, """\
CHECK: HloModule jit_mlp_train_step, is_scheduled=true
CHECK: ENTRY
CHECK-DAG: kind=kLoop
CHECK-DAG: kind=kInput
CHECK-DAG: kind=kCustom
""", tmp_path)
    assert set(re.findall(r"kind=(k\w+)", hlo)) <= {"kLoop", "kInput", "kOutput", "kCustom"}
    backend = cuda_run.text("hlo-backend", "cuda", spec)
    # jaxlib 0.9's device-less executable holds the clone XLA compiled.
    clone = "" if _jaxlib.jaxlib_at_least("0.10.2") else "-clone"
    assert backend.startswith(f"HloModule jit_mlp_train_step{clone}, is_scheduled=true")


@pytest.mark.parametrize("spec", list(SPECS))
def test_cuda_html_dot_buffers_memory(cuda_run, spec):
    html = cuda_run.text("html", "cuda", spec)
    assert html.lstrip().startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert cuda_run.text("dot", "cuda", spec).startswith("digraph")
    assert re.search(r"^allocation \d+: size \d+", cuda_run.text("buffer-assignment", "cuda", spec), re.M)
    usage = json.loads(cuda_run.text("memory-usage", "cuda", spec))
    assert usage["argument_size_in_bytes"] == ARGUMENT_BYTES
    assert usage["output_size_in_bytes"] >= OUTPUT_DATA_BYTES
    assert "temp_size_in_bytes" in usage


@pytest.mark.parametrize("spec", list(SPECS))
def test_cuda_llvm(cuda_run, spec, tmp_path):
    for stage in ("llvm-before-optimizations", "llvm"):
        text = cuda_run.text(stage, "cuda", spec)
        filecheck(text, """\
CHECK: target triple = "nvptx64-nvidia-cuda"
CHECK: define ptx_kernel void @{{[a-z_0-9]+}}(
""", tmp_path)
        assert "x86_64" not in text
    _before_is_not_optimized(cuda_run.text("llvm-before-optimizations", "cuda", spec),
                             cuda_run.text("llvm", "cuda", spec))


@pytest.mark.parametrize("spec, sm", list(SPECS.items()))
def test_cuda_ptx(cuda_run, spec, sm, tmp_path):
    ptx = cuda_run.text("ptx", "cuda", spec)
    filecheck(ptx, f"""\
CHECK: .version {{{{[0-9]+\\.[0-9]+}}}}
CHECK-NEXT: .target {sm}
CHECK-NEXT: .address_size 64
CHECK: .visible .entry {{{{[a-z_0-9]+}}}}(
""", tmp_path)
    assert set(re.findall(r"^\.target (\S+)", ptx, re.M)) == {sm}
    # Every kernel launched by the thunk sequence has a PTX entry, and vice versa.
    entries = set(re.findall(r"^\.visible \.entry (\w+)\(", ptx, re.M))
    thunks = cuda_run.text("thunk-sequence", "cuda", spec)
    kernels = set(re.findall(r"^\d+: k\w*Kernel \[.*?\] (\w+) grid:", thunks, re.M)
                  # jaxlib 0.9: "001: kKernel\t, kernel = NAME, launch dimensions = ..."
                  + re.findall(r"^\d+: k\w*Kernel\s*, kernel = (\w+),", thunks, re.M))
    assert kernels and entries == kernels


@pytest.mark.parametrize("spec", list(SPECS))
def test_cuda_thunk_sequence_and_autotune(cuda_run, spec):
    thunks = cuda_run.text("thunk-sequence", "cuda", spec)
    lines = [ln for ln in thunks.splitlines() if ln.strip()]
    assert lines and all(re.match(r"^\d{3}: k\w+", ln) for ln in lines), thunks
    assert any("Kernel" in ln.split()[1] for ln in lines)
    assert re.search(r"^version: \d+", cuda_run.text("autotune-results", "cuda", spec), re.M)


# ------------------------------------------------------------ platform / stage errors

def test_ptx_on_cpu_names_cpu_stages(cli):
    line = assert_one_line_error(cli("opt", "--platform", "cpu", "--stage", "ptx", MLP),
                                 facts=("'ptx'", "--platform cpu"))
    cpu_names = line.split("cpu stages: ", 1)[1]
    assert "cost" in cpu_names and "hlo-backend" in cpu_names and "ptx" not in cpu_names


def test_roofline_on_cpu_names_cpu_stages(cli):
    line = assert_one_line_error(cli("opt", "--platform", "cpu", "--stage", "roofline", MLP),
                                 facts=("'roofline'", "--platform cpu"))
    cpu_names = line.split("cpu stages: ", 1)[1]
    assert "cost" in cpu_names and "roofline" not in cpu_names


def test_unknown_stage_did_you_mean(cli):
    assert_one_line_error(cli("opt", "--platform", "cpu", "--stage", "hlo-backnd", MLP),
                          facts=("'hlo-backnd'", "'hlo-backend'"))


def test_xla_stage_without_platform(cli):
    assert_one_line_error(cli("opt", "--stage", "hlo", MLP), contains="give --platform cpu|cuda")


def test_stage_all_needs_dump_dir(cli):
    assert_one_line_error(cli("opt", "--platform", "cpu", "--stage", "all", MLP),
                          facts=("--stage all", "--dump-dir"))


def test_list_stages_per_platform(cli):
    r = cli("opt", "--list-stages", "--platform", "cpu")
    assert r.code == 0
    assert _listed(r.out) == [s.name for s in registry.available("cpu")]
    assert "ptx" not in _listed(r.out) and "cost" in _listed(r.out) and "roofline" not in _listed(r.out)
    r = cli("opt", "--list-stages", "--platform", "cuda")
    assert r.code == 0 and r.err == ""  # no default-spec note for a listing
    assert "ptx" in _listed(r.out) and "cost" in _listed(r.out) and "roofline" in _listed(r.out)


def test_list_stages_without_platform_is_mlir_only_and_does_not_import_jax():
    proc = _run_child([
        sys.executable, "-c",
        "import sys\n"
        "from mlirhlo_driver.cli.mlirhlo import main\n"
        "try:\n    main(['opt', '--list-stages'])\nexcept SystemExit as e:\n    code = e.code\n"
        "print('EXIT', code)\n"
        "print('JAX', 'jax' in sys.modules, 'jaxlib' in sys.modules)\n"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2:] == ["EXIT 0", "JAX False False"]
    names = _listed("\n".join(lines[:-2]))
    assert names == [s.name for s in registry.stages().stages.values() if s.level == stages.MLIR]
    assert "hlo" not in names and "ptx" not in names


# ------------------------------------------------------------ spec selection

def test_readme_target_config_filename_line(cli, monkeypatch):
    monkeypatch.chdir(REPO)
    r = cli("opt", "--platform=CUDA", "--stage=llvm",
            "--xla_gpu_target_config_filename=gpu_specs/a100_pcie_80.txtpb",
            "tests/data/mlp_train_step.before_optimizations.txt")
    assert r.code == 0, r.err
    assert r.err == ""
    assert 'target triple = "nvptx64-nvidia-cuda"' in r.out
    assert re.search(r"^define ptx_kernel void @\w+\(", r.out, re.M)


@pytest.mark.slow
def test_default_spec_note(cli, tmp_path):
    out = tmp_path / "k.thunks"
    r = cli("opt", "--platform", "cuda", "--stage", "thunk-sequence", "-o", out, MLP)
    assert r.code == 0, r.err
    # one note, the default spec's (its wording: test_targets.py's golden test)
    assert r.err.startswith("note: ") and r.err.count("\n") == 1, r.err
    assert_mentions(r.err, "--gpu-spec", "h100_sxm", "sm_90a")
    assert "Kernel" in out.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("platform, stage",
                         [("cpu", s) for s in CPU_TEXT] + [("cuda", s) for s in CUDA_TEXT])
def test_text_stages_are_deterministic(platform, stage, cpu_run, cuda_run, cpu_api, h100_api):
    """The same module and flags give byte-identical output on a second compile."""
    if platform == "cpu":
        first, second = cpu_run.path(registry.get(stage, "cpu").ext).read_bytes(), cpu_api.stage(stage)
    else:
        first = cuda_run.path(registry.get(stage, "cuda").ext, "h100_sxm").read_bytes()
        second = h100_api.stage(stage)
    assert isinstance(second, str)
    if (platform, stage) == ("cpu", "llvm"):  # jaxlib 0.12 numbers alias-scope lists at random
        first, second = cpu_llvm_ir_for_comparison(first.decode()).encode(), cpu_llvm_ir_for_comparison(second)
    assert first == second.encode()


def test_cuda_kernel_set_is_deterministic(cuda_run, h100_api):
    """Whatever the order, both compiles produce the same PTX kernels."""
    def chunks(text: str) -> list[str]:
        return sorted(re.split(r"^// ----- \S+ -----\n", text, flags=re.M))

    assert chunks(cuda_run.text("ptx", "cuda", "h100_sxm")) == chunks(h100_api.stage("ptx"))


# ------------------------------------------------------------ -o is atomic

def test_output_file_written(cli, tmp_path):
    out = tmp_path / "sub" / "m.hlo"
    r = cli("opt", "--platform", "cpu", "--stage", "hlo", "-o", out, MLP)
    assert r.code == 0 and r.out == ""
    assert out.read_text().startswith("HloModule jit_mlp_train_step, is_scheduled=true")
    assert os.listdir(out.parent) == ["m.hlo"]


def test_output_not_created_on_unknown_stage(cli, tmp_path):
    out = tmp_path / "m.txt"
    assert_one_line_error(cli("opt", "--platform", "cpu", "--stage", "nosuch", "-o", out, MLP),
                          contains="unknown stage 'nosuch'")
    assert os.listdir(tmp_path) == []


def test_output_not_created_on_bad_flag_value(cli, tmp_path):
    out = tmp_path / "m.ll"
    assert_one_line_error(cli("opt", "--platform", "cpu", "--stage", "llvm",
                              "--xla_cpu_enable_fast_math=3", "-o", out, MLP),
                          contains="expected true or false")
    assert os.listdir(tmp_path) == []


def test_existing_output_kept_on_compile_error(cli, tmp_path):
    """A module XLA cannot compile (exit 1) leaves an existing -o file as it was."""
    module = tmp_path / "cc.hlo"
    module.write_text("HloModule cc\n\nENTRY main {\n  p = f32[4] parameter(0)\n"
                      "  ROOT c = f32[4] custom-call(p), custom_call_target=\"no_such_target_xyz\"\n}\n")
    out = tmp_path / "m.hlo"
    out.write_text("old\n")
    assert_one_line_error(cli("opt", "--platform", "cpu", "--stage", "hlo", "-o", out, module),
                          code=1, contains="no_such_target_xyz")
    assert out.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["cc.hlo", "m.hlo"]


def test_after_pass_algsimp(cli, before_hlo):
    r = cli("opt", "--platform", "cpu", "--after-pass", "algsimp", MLP)
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule jit_mlp_train_step")
    assert r.out != before_hlo
    # algsimp folds the backward pass's transposes into the dots
    assert _count("transpose", before_hlo) > 0 and _count("transpose", r.out) == 0
    assert _count("dot", r.out) == _count("dot", before_hlo) == 5
    assert "is_scheduled=true" not in r.out and _count("fusion", r.out) == 0


def test_after_pass_unknown(cli):
    assert_one_line_error(cli("opt", "--platform", "cpu", "--after-pass", "algsmp", MLP),
                          contains="did you mean 'algsimp'?")


def test_xla_passes_algsimp_only(cli, before_hlo):
    r = cli("opt", "--platform", "cpu", "--xla-passes", "algsimp", MLP)
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule jit_mlp_train_step")
    assert _count("transpose", before_hlo) > 0 and _count("transpose", r.out) == 0
    assert _count("reshape", r.out) < _count("reshape", before_hlo)
    # only algsimp (and the pipelines around it) ran: no fusion, no scheduling
    assert _count("fusion", r.out) == 0 and "is_scheduled=true" not in r.out


def test_xla_passes_unknown(cli):
    assert_one_line_error(cli("opt", "--platform", "cpu", "--xla-passes", "algsmp", MLP),
                          contains="did you mean 'algsimp'?")


def test_list_passes_cpu_has_simplification(cli):
    r = cli("opt", "--list-passes", "--platform", "cpu")
    assert r.code == 0
    lines = r.out.splitlines()
    i = lines.index("simplification:")
    block = []
    for ln in lines[i + 1:]:
        if not ln.startswith("  "):
            break
        block.append(ln.strip())
    assert "algsimp" in block


# ------------------------------------------------------------ Python API

@pytest.mark.slow
def test_api_compile_ptx_and_write(h100_api, tmp_path):
    ptx = h100_api.stage("ptx")
    assert re.search(r"^\.target sm_90a$", ptx, re.M)
    assert re.search(r"^\.visible \.entry \w+\(", ptx, re.M)
    paths = h100_api.write(str(tmp_path))
    assert {os.path.basename(p) for p in paths} == {
        f for s in registry.all_for("cuda") for f, _ in s.files(STEM, h100_api.stage(s.name))}
    assert set(os.listdir(tmp_path)) == {os.path.basename(p) for p in paths}
    assert (tmp_path / f"{STEM}.ptx").read_text() == ptx


def test_api_compiles_once(monkeypatch):
    import mlirhlo_driver
    from mlirhlo_driver.xla import backend as xla_backend

    calls = []
    real = xla_backend.compile
    monkeypatch.setattr(xla_backend, "compile",
                        lambda module, spec, name, **kw: calls.append(name) or real(module, spec, name, **kw))
    c = mlirhlo_driver.compile(str(MLP), platform="cpu")
    assert calls == []  # lazy
    c.stage("hlo"), c.stage("cost"), c.stage("llvm")
    assert calls == [STEM]


# ------------------------------------------------------------ native noise on stderr

@pytest.mark.slow
def test_cuda_stage_all_stderr_is_only_the_driver(tmp_path):
    proc = _run_child([MLIRHLO, "opt", "--platform", "cuda", "--stage", "all", "--dump-dir", tmp_path, MLP])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("note: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert_mentions(proc.stderr, "--gpu-spec", "h100_sxm")
    assert proc.stdout == ""
    assert (tmp_path / f"{STEM}.ptx").is_file()


@pytest.mark.slow
def test_jaxlib_startup_is_quiet():
    proc = _run_child([sys.executable, "-c",
                       "from mlirhlo_driver._native import jaxlib as _jaxlib; _jaxlib.jax(); _jaxlib.cuda_c_api()"])
    assert proc.returncode == 0
    assert proc.stderr == ""


@pytest.mark.slow
def test_list_passes_cpu_stderr_is_quiet():
    """Without an input a reference HLO module is parsed (jaxlib._hlo) before jax starts:
    absl's INFO lines (pjrt_api.cc, pjrt_client.cc, dump.cc) must not reach stderr."""
    proc = _run_child([MLIRHLO, "opt", "--list-passes", "--platform", "cpu"])
    assert proc.returncode == 0
    assert "simplification:" in proc.stdout
    assert proc.stderr == ""


@pytest.mark.slow
def test_a_stage_read_later_compiles_once_more_for_its_dumps():
    """A request that named only ``ptx`` still gives ``html`` when asked (one more compile)."""
    from mlirhlo_driver.cuda.specs import resolve_spec
    from mlirhlo_driver.inputs import loader
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla.platforms import CudaTarget

    loaded = loader.load(str(MLP))[0]
    req = registry.request(loaded.module, loaded.name,
                           StageOptions(CudaTarget(spec=resolve_spec("h100_sxm"))), stages=("ptx",))
    assert ".entry" in req.produce("ptx")
    assert "<html" in req.produce("html").lower()


def test_sass_and_kernels_look_for_nvdisasm_in_the_users_cuda_data_dir(monkeypatch, tmp_path):
    """The ptxas job 'sass' and 'kernels' finish with carries the user's xla_gpu_cuda_data_dir
    (where nvdisasm is looked for first), and None when it is not given or empty."""
    from types import SimpleNamespace

    from mlirhlo_driver.xla import stages as xla_stages

    ptxas = SimpleNamespace(path="/opt/cuda/bin/ptxas", version_str="12.9.86")
    assembly = SimpleNamespace(sm="sm_90a", ptxas=ptxas, args=("-O3",),
                               modules=[SimpleNamespace(name="m", kernels=["k"], ptx="// ptx")])
    monkeypatch.setattr(xla_stages, "_assembly", lambda req: assembly)

    def job(xla_flags):
        req = SimpleNamespace(options=SimpleNamespace(xla_flags=xla_flags))
        req.derived = lambda key, compute: compute(req)
        return xla_stages._ptx_job(req)

    mine = job((("xla_gpu_autotune_level", 0), ("xla_gpu_cuda_data_dir", str(tmp_path))))
    assert mine.data_dir == str(tmp_path)
    assert (mine.sm, mine.ptxas, mine.args, mine.modules) == ("sm_90a", ptxas.path, ("-O3",), (("m", ("k",), "// ptx"),))
    assert job(()).data_dir is None
    assert job((("xla_gpu_autotune_level", 0),)).data_dir is None
    assert job((("xla_gpu_cuda_data_dir", ""),)).data_dir is None


@pytest.mark.parametrize("platform, stage", [("cpu", "llvm"), ("cpu", "llvm-before-optimizations"),
                                             ("cuda", "ptx")])
@pytest.mark.parametrize("failed, need_emitters, empty", [
    (False, True, True),    # jaxlib 0.11+: a compile without kernels writes no file, so no kernels
    (True, True, False),    # a failed compile: the error says so, whatever the jaxlib
    (False, False, False),  # jaxlib 0.10: every compile writes the files, so none is an error
    (True, False, False),
])
def test_a_codegen_stage_without_files_is_empty_only_after_a_good_compile_that_needs_emitters(
        monkeypatch, platform, stage, failed, need_emitters, empty):
    """LLVM IR / PTX that XLA did not write is an empty output only when the compile worked
    and this XLA writes none for a module without kernels; otherwise the "no output" error."""
    from mlirhlo_driver.cuda.specs import resolve_spec
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.inputs import loader
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla import backend as xla_backend
    from mlirhlo_driver.xla.platforms import CpuTarget, CudaTarget

    def compile(module, spec, name):
        return xla_backend.Compilation(xla_backend.XlaArtifacts(
            platform, name, {f"{name}.before_optimizations.txt": b"HloModule m"},
            compile_error="boom" if failed else None, emitters=spec.emitters, dumps=spec.dumps))

    monkeypatch.setattr(xla_backend, "compile", compile)
    monkeypatch.setattr(_jaxlib, "codegen_dumps_need_emitters", lambda: need_emitters)
    loaded = loader.load(str(MLP))[0]
    spec = resolve_spec("h100_sxm") if platform == "cuda" else None
    req = registry.request(loaded.module, loaded.name, StageOptions(
        CudaTarget(spec=spec) if platform == "cuda" else CpuTarget()), stages=(stage,))
    if empty:
        assert req.produce(stage) == ""
        return
    with pytest.raises(StageError) as info:
        req.produce(stage)
    assert_mentions(info.value.message, f"'{stage}'", platform)
    assert ("boom" in info.value.message) == failed


def test_llvm_ir_files_are_sections_named_by_module_or_first_kernel_and_sorted():
    """Each non-empty LLVM IR file is a '; ----- NAME -----' section, sorted by name: the file's
    module name, or for a numbered or unnamed file its first GPU entry point (else its first
    function, else 'module'); a text without a final newline gets one."""
    from mlirhlo_driver.xla import stages as xla_stages

    files = {
        "b_module.ir-no-opt.ll": b"define void @f()\n",
        "a_module.ir-no-opt.ll": b"; a",
        "blank.ir-no-opt.ll": b"  \n",
        "2.ir-no-opt.ll": b"define ptx_kernel void @zeta()\ndefine void @alpha()\n",
        "10.ir-no-opt.ll": b'define void @"beta.1"()\ndefine void @aaa()\n',
        "3..ir-no-opt.ll": b"define void @gamma()\n",
        "4.ir-no-opt.ll": b"; nothing\n",
        "ir-no-opt.ll": b"define internal void @$x-y()\n",
        "a_module.ir-with-opt.ll": b"; optimized\n",
    }
    assert xla_stages._llvm_before(_request_on(files)) == (
        "; ----- $x-y -----\ndefine internal void @$x-y()\n"
        "; ----- a_module -----\n; a\n"
        '; ----- aaa -----\ndefine void @"beta.1"()\ndefine void @aaa()\n'
        "; ----- b_module -----\ndefine void @f()\n"
        "; ----- gamma -----\ndefine void @gamma()\n"
        "; ----- module -----\n; nothing\n"
        "; ----- zeta -----\ndefine ptx_kernel void @zeta()\ndefine void @alpha()\n")
    # One non-empty file is given as it is, without a section line; none gives nothing.
    assert xla_stages._llvm_after(_request_on(files)) == "; optimized\n"
    assert xla_stages._llvm_after(_request_on({"x.ir-with-opt.ll": b"one", "y.ir-with-opt.ll": b"\n"})) == "one"
    assert xla_stages._llvm_after(_request_on({"x.ir-with-opt.ll": b" \n"})) == ""


def test_ptx_files_are_sections_named_by_their_first_entry():
    """PTX sections are named after the first '.visible .entry' (or bare '.entry') of a numbered file,
    '//' comments."""
    from mlirhlo_driver.xla import stages as xla_stages

    files = {"1.ptx": b".visible .entry k2(\n.visible .entry k1(\n", "0.ptx": b".visible .entry z(",
             "ptx": b"// no entries\n", "foo.ptx": b"x\n", "foo.ll": b"not ptx\n", "2.ptx": b".entry y(\n"}
    assert xla_stages._ptx(_request_on(files, "cuda")) == (
        "// ----- foo -----\nx\n"
        "// ----- k1 -----\n.visible .entry k2(\n.visible .entry k1(\n"
        "// ----- module -----\n// no entries\n"
        "// ----- y -----\n.entry y(\n"
        "// ----- z -----\n.visible .entry z(\n")


def test_sass_text_joins_non_empty_sections():
    """SASS of several modules: non-empty ones as '// ----- NAME -----' sections; one alone as it is."""
    from mlirhlo_driver.xla import stages as xla_stages

    assert xla_stages._sass_text([("a", "sass a"), ("b", " \n"), ("c", "sass c\n")]) == \
        "// ----- a -----\nsass a\n// ----- c -----\nsass c\n"
    assert xla_stages._sass_text([("a", ""), ("b", "only b")]) == "only b"
    assert xla_stages._sass_text([]) == ""


def test_hlo_backend_ends_with_one_newline():
    """hlo-backend is the executable's scheduled module, ending in a newline whether or not XLA's did."""
    from mlirhlo_driver.xla import stages as xla_stages

    assert xla_stages._hlo_backend(_request_on({}, scheduled_hlo="HloModule m")) == "HloModule m\n"
    assert xla_stages._hlo_backend(_request_on({}, scheduled_hlo="HloModule m\n")) == "HloModule m\n"


def test_text_stages_read_their_dump_file():
    """hlo, buffer-assignment, thunk-sequence and autotune-results give XLA's file as it is."""
    from mlirhlo_driver.xla import stages as xla_stages

    req = _request_on({
        "module_0001.jit_m.before_optimizations.txt": b"before",
        "cpu_after_optimizations.txt": b"HloModule after \xff",
        "cpu_after_optimizations-buffer-assignment.txt": b"BufferAssignment:",
        "thunk_sequence.txt": b"001: kKernel",
        "autotune_results.pbtxt": b"version: 3",
    })
    assert xla_stages._hlo(req) == "HloModule after \ufffd"
    assert xla_stages._buffer_assignment(req) == "BufferAssignment:"
    assert xla_stages._thunk_sequence(req) == "001: kKernel"
    assert xla_stages._autotune_results(req) == "version: 3"
    gpu = _request_on({"sm_9.0_gpu_after_optimizations.txt": b"gpu hlo"}, "cuda")
    assert xla_stages._hlo(gpu) == "gpu hlo"


def test_cpu_cost_and_memory_usage_are_sorted_json():
    """CPU cost and memory-usage: XLA's figures as sorted, indented JSON ({} without a cost analysis)."""
    from mlirhlo_driver.xla import stages as xla_stages

    req = _request_on({}, cost={"flops": 2.0, "bytes accessed": 8.0}, memory_stats={"temp_size_in_bytes": 0})
    assert xla_stages._cost(req) == '{\n  "bytes accessed": 8.0,\n  "flops": 2.0\n}\n'
    assert xla_stages._memory_usage(req) == '{\n  "temp_size_in_bytes": 0\n}\n'
    assert xla_stages._cost(_request_on({}, cost=None)) == "{}\n"


@pytest.mark.golden
def test_optimized_module_missing_is_an_error_saying_why():
    """Golden: stages that read the optimized module fail cleanly without one, naming a failed compile's error."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import stages as xla_stages

    assert xla_stages._optimized_proto(_request_on({}, optimized_proto=b"\x0a\x01m")) == b"\x0a\x01m"
    with pytest.raises(StageError) as info:
        xla_stages._optimized_proto(_request_on({}))
    assert info.value.message == "stage 'cost' reads the optimized module, and XLA made no executable"
    with pytest.raises(StageError) as info:
        xla_stages._optimized_proto(_request_on({}, compile_error="boom"))
    assert info.value.message == ("stage 'cost' reads the optimized module, and XLA made no executable"
                                  " (compile failed: boom)")


def test_a_stage_needing_more_than_the_first_compile_compiles_once_more(monkeypatch):
    """artifacts(): the first compile serves every stage it dumped for; one that needs other
    emitters or dumps gets a compile of its own, once, keyed by what it needs."""
    from mlirhlo_driver.xla import backend as xla_backend
    from mlirhlo_driver.xla import stages as xla_stages

    compiles = []

    def compile_(req, emitters=(), dumps=()):
        compiles.append((emitters, dumps))
        return xla_backend.XlaArtifacts("cpu", "m", {}, emitters=tuple(emitters), dumps=tuple(dumps) or ("hlo-text",))

    monkeypatch.setattr(xla_stages, "_compile", compile_)
    req = _request_on({})
    del req._derived["xla"]
    first = xla_stages.artifacts(req)
    assert xla_stages.artifacts(req, (), ("hlo-text",)) is first
    assert compiles == [((), ())]
    second = xla_stages.artifacts(req, ("b", "a"), ("ptx", "hlo-text"))
    assert second is not first and compiles[1] == (("b", "a"), ("ptx", "hlo-text"))
    assert set(req._derived) == {"xla", "xla:a,b:hlo-text,ptx"}
    assert xla_stages.artifacts(req, ("b", "a"), ("ptx", "hlo-text")) is second
    assert xla_stages.artifacts(req, ("a",)) is req._derived["xla:a:"]
    assert len(compiles) == 3


def test_first_compile_dumps_what_the_requests_xla_stages_read():
    """dumps_for: the union of what the request's XLA stages read, plus extra; all dumps with no XLA stage."""
    from mlirhlo_driver.xla import backend as xla_backend
    from mlirhlo_driver.xla import stages as xla_stages

    def dumps(stages_, extra=()):
        req = _request_on({}, "cuda")  # a CUDA compile: kernels reads PTX, not libtpu's LLO
        req.stages = stages_
        return xla_stages.dumps_for(req, extra)

    assert dumps(()) == dumps(("text",)) == xla_backend.ALL_DUMPS
    assert dumps(("text", "hlo")) == ("hlo-text",)
    assert dumps(("llvm", "html", "memory-usage"), ("executable-hlo",)) == ("executable-hlo", "hlo-html", "llvm-ir")
    assert dumps(("kernels", "ptx")) == ("executable-hlo", "ptx")
    assert dumps(("memory-usage",)) == ()


def test_xla_stages_are_registered_with_their_files_and_platforms():
    """Each XLA stage's file suffix, binary-ness, platforms, alias and parts, in pipeline order."""
    both, cuda, tpu, every = ("cpu", "cuda"), ("cuda",), ("tpu",), ("cpu", "cuda", "tpu")
    cuda_tpu = ("cuda", "tpu")
    got = [(s.name, s.ext, s.binary, tuple(sorted(s.platforms)), s.alias_of, s.multi, s.join)
           for s in registry.stages().stages.values() if s.level == stages.XLA and not s.hidden]
    assert got == [
        ("hlo", "hlo", False, every, None, False, None),
        ("hlo-backend", "hlo-backend.hlo", False, every, None, False, None),
        ("html", "html", False, every, None, False, None),
        ("dot", "dot", False, every, None, False, None),
        ("buffer-assignment", "buffer-assignment.txt", False, every, None, False, None),
        ("memory-usage", "memory-usage.json", False, every, None, False, None),
        ("memory-usage-report", "memory-usage-report.txt", False, tpu, None, False, None),
        ("memory", "memory.txt", False, tpu, None, False, None),
        ("llo", "llo", False, tpu, None, True, "//"),
        ("static-profile", "static-profile.txt", False, tpu, None, False, None),
        ("cost", "cost.json", False, every, None, False, None),
        ("roofline", "roofline.txt", False, cuda_tpu, None, False, None),
        ("model-explorer", "model-explorer.json", False, every, None, True, None),
        ("llvm-before-optimizations", "ir-no-opt.ll", False, both, None, False, None),
        ("llvm", "ir-with-opt.ll", False, both, None, False, None),
        ("llvm-after-optimizations", "ir-with-opt.ll", False, both, "llvm", False, None),
        ("ptx", "ptx", False, cuda, None, False, None),
        ("triton", "ttir", False, cuda, None, False, None),
        ("ttir", "ttir", False, cuda, "triton", False, None),
        ("ttgir", "ttgir", False, cuda, None, False, None),
        ("triton-passes", "triton-passes.txt", False, cuda, None, True, "//"),
        ("cubin", "cubin", True, cuda, None, True, None),
        ("sass", "sass", False, cuda, None, False, None),
        ("kernels", "kernels.txt", False, cuda_tpu, None, False, None),
        ("thunk-sequence", "thunk_sequence.txt", False, cuda, None, False, None),
        ("autotune-results", "autotune_results.pbtxt", False, cuda, None, False, None),
    ]


def test_compile_asks_for_the_requests_emitters_and_notes_a_check_file_once(monkeypatch):
    """_compile: the emitters of every stage the request names, sorted; a check file's
    compile dumps the optimized module too and notes its checks on the first compile only."""
    from mlirhlo_driver.xla import backend as xla_backend
    from mlirhlo_driver.xla import stages as xla_stages

    plans = {"plain": None, "checks": "plan"}
    compiles, notes = [], []

    def compile(module, spec, name):
        compiles.append((module, spec.emitters, spec.dumps))
        return xla_backend.Compilation(xla_backend.XlaArtifacts("cuda", name, {}))

    monkeypatch.setattr(xla_backend, "prepared_for_xla", lambda m, s, o, f: (f"{m} for xla", plans[m]))
    monkeypatch.setattr(xla_backend, "declared_partitions", lambda module: 1)
    monkeypatch.setattr(xla_backend, "compile", compile)
    monkeypatch.setattr(xla_stages, "_check_file_notes", lambda req, plan, art: notes.append(plan))

    def request(module, *names):
        req = _request_on({}, "cuda")
        req.module, req.stages = module, names
        return req

    xla_stages._compile(request("plain", "hlo", "ttgir", "triton"))
    assert compiles[-1] == ("plain for xla", ("triton-fusion", "triton-to-llvm"), ("hlo-text",))
    xla_stages._compile(request("plain", "hlo"), ("x-emitter",), ("ptx",))
    assert compiles[-1] == ("plain for xla", ("x-emitter",), ("hlo-text", "ptx"))
    assert notes == []
    xla_stages._compile(request("checks", "hlo"))
    assert compiles[-1] == ("checks for xla", (), ("executable-hlo", "hlo-text"))
    assert notes == ["plan"]
    xla_stages._compile(request("checks", "hlo"), (), ("ptx",))
    xla_stages._compile(request("checks", "hlo"), ("x-emitter",))
    assert compiles[-2][2] == ("executable-hlo", "hlo-text", "ptx")
    assert notes == ["plan"]


def test_check_file_notes_name_kept_constants_and_folded_checked_values(monkeypatch):
    """A self-checking module's notes, each after its file (else module) name: the constants
    kept for XLA, and checked values XLA folded (saying so when --fold-constants did it)."""
    from types import SimpleNamespace

    from mlirhlo_driver.inputs import checks
    from mlirhlo_driver.ir import hlo_dataflow
    from mlirhlo_driver.xla import stages as xla_stages

    seen = []
    monkeypatch.setattr(checks, "kept_note", lambda plan: plan.kept)
    monkeypatch.setattr(hlo_dataflow, "outputs_from_parameters", lambda proto: [proto == b"p"])
    monkeypatch.setattr(checks, "checked_values", lambda plan, deps: seen.append(deps) or SimpleNamespace(
        state=plan.state, describe=lambda: f"are {plan.state}"))

    def notes(source, optimized, **plan):
        req = _request_on({}, optimized_proto=optimized)
        req.source = source
        xla_stages._check_file_notes(req, SimpleNamespace(**plan), req._derived["xla"])
        return req.notes

    assert notes("f.mlir", b"p", kept="kept 2 constants", state="compiled", folded=False) == \
        ["f.mlir: kept 2 constants"]
    assert notes(None, b"q", kept="", state="folded", folded=False) == ["m: checked values are folded"]
    assert notes("f.mlir", b"", kept="", state="partly folded", folded=True) == \
        ["f.mlir: checked values are partly folded (--fold-constants)"]
    assert seen == [[True], [False], None]


def test_launched_kernels_come_from_the_optimized_module(monkeypatch):
    """Kernel -> launched instruction, read from the optimized module; none without one."""
    from mlirhlo_driver.ir import fusions
    from mlirhlo_driver.xla import stages as xla_stages

    monkeypatch.setattr(fusions, "launched", lambda proto: [proto])
    monkeypatch.setattr(fusions, "by_kernel", lambda launched: {"k": launched})
    assert xla_stages._launched(_request_on({}, "cuda", optimized_proto=b"p")) == {"k": [b"p"]}
    assert xla_stages._launched(_request_on({}, "cuda")) == {}
