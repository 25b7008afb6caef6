"""``hlo-opt`` as a user runs it (XLA's flags and files).

Each ``test_doc_*`` runs one command line of XLA's tools documentation (docs/tools.md)
verbatim, with tests/data/xla_tools standing in for its files (input.hlo,
computation.hlo, /dump, input.ll, results.textpb).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, CliResult, assert_mentions, assert_one_line_error
from tests.e2e.conftest import assert_interrupted, interrupted_xla_tool


def _hlo_opt(capfd, argv):
    from mlirhlo_driver.cli.xla import tools as xla_tools

    capfd.readouterr()
    try:
        xla_tools.hlo_opt_main([str(a) for a in argv])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    out, err = capfd.readouterr()
    return CliResult(code, out, err)


MLP = DATA / "mlp_train_step.before_optimizations.txt"


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


BIN = Path(sys.executable).parent


def shell(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """The line as a user types it, with the installed console scripts on PATH."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _root_tuple_operands(hlo: str) -> list[str]:
    """The names of the entry's root tuple's operands (XLA prints each with its shape)."""
    root = next(ln for ln in hlo.splitlines() if ln.startswith("  ROOT ") and " tuple(" in ln)
    return re.findall(r"%([\w.\-]+)", root.split(" tuple(")[1])


def test_hlo_opt_checks_its_output_path_before_reading_the_module(capfd, tmp_path):
    """A bad --o is the one error even when the input is bad too (nothing is read or compiled for an
    output that cannot be written); '-' and no --o are standard output, never checked as paths."""
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  ROOT x = f32[] nonsense()\n}\n")
    (tmp_path / "outdir").mkdir()
    r = _hlo_opt(capfd, [bad, f"--o={tmp_path / 'outdir'}"])
    assert_one_line_error(r, at=str(tmp_path / "outdir"), facts=("directory",))
    good = DATA / "xla_tools" / "computation.hlo"
    for o in (["--o=-"], []):
        r = _hlo_opt(capfd, [good, *o])
        assert r.code == 0 and r.out.startswith("HloModule"), r.err


def test_hlo_opt_xla_dump_to_writes_what_xla_would(tmp_path, capfd):
    """hlo-opt --xla_dump_to=DIR writes XLA's default dump (text); graphs only when asked."""
    from tests.conftest import run_xla_tool

    plain, graphs = tmp_path / "plain", tmp_path / "graphs"
    for args in ([f"--xla_dump_to={plain}"], [f"--xla_dump_to={graphs}", "--xla_dump_hlo_as_html"]):
        result = run_xla_tool("hlo-opt", ["--platform=cpu", "--stage=hlo", *args, str(MLP)], tmp_path, capfd)
        assert result.code == 0, result
    assert any(p.name.endswith(".txt") for p in plain.iterdir())
    assert not any(p.name.endswith((".html", ".dot")) for p in plain.iterdir())
    assert any(p.name.endswith(".html") for p in graphs.iterdir())


# -------------------------------------------------------------------- hlo-opt

def test_doc_list_stages_cuda(tool):
    r = tool("hlo-opt --platform=CUDA --list-stages")
    assert r.code == 0, r.err
    listed = r.out.split()
    for stage in ("buffer-assignment", "hlo", "hlo-backend", "html", "llvm", "llvm-after-optimizations",
                  "llvm-before-optimizations", "ptx"):
        assert stage in listed
    assert listed == sorted(listed)


def test_doc_cpu_stage_hlo(tool):
    r = tool("hlo-opt --platform=cpu --stage=hlo input.hlo")
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule doc_input, is_scheduled=true")


def test_doc_llvm_with_spec_from_xla_tree(tool):
    r = tool("hlo-opt --platform=CUDA --stage=llvm "
             "--xla_gpu_target_config_filename=/xla/tools/hlo_opt/gpu_specs/a100_pcie_80.txtpb input.hlo")
    assert r.code == 0, r.err
    assert r.err.startswith("note: ") and r.err.count("\n") == 1, r.err
    assert_mentions(r.err, "/xla/tools/hlo_opt/gpu_specs/a100_pcie_80.txtpb", "'a100_pcie_80'")
    assert 'target triple = "nvptx64-nvidia-cuda"' in r.out


def test_doc_llvm_with_autotune_results(tool):
    r = tool("hlo-opt --platform=CUDA --stage=llvm --xla_gpu_target_config_filename=gpu_specs/a100_pcie_80.txtpb "
             "--xla_gpu_load_autotune_results_from=results.textpb input.hlo")
    assert r.code == 0, r.err
    assert 'target triple = "nvptx64-nvidia-cuda"' in r.out


def test_doc_passes_collective_cse(tool):
    r = tool("hlo-opt --passes=schedule-aware-collective-cse input.hlo")
    assert r.code == 0, r.err
    assert "using 100" in r.err  # XLA runs the pass only with a threshold > 0
    assert _root_tuple_operands(r.out)[:2] == ["ag0", "ag0"]  # the second all-gather is CSE'd
    assert "window={size=1024 pad=1023_0}" in r.out  # no other pass ran


def test_doc_passes_collective_cse_threshold(tool):
    r = tool("hlo-opt --passes=schedule-aware-collective-cse "
             "--xla_gpu_experimental_collective_cse_distance_threshold=20 input.hlo")
    assert r.code == 0, r.err
    assert r.err == ""
    assert _root_tuple_operands(r.out)[:2] == ["ag0", "ag0"]


def test_doc_list_passes(tool):
    """XLA's format: the names on one line, comma-separated, sorted; without --platform, those of
    the CPU pipeline and the CUDA one's, each once (the passes --passes without a platform runs)."""
    r = tool("hlo-opt --list-passes")
    assert r.code == 0, r.err
    assert r.out.count("\n") == 1 and r.out.endswith("\n")
    names = r.out.strip().split(",")
    assert len(names) == len(set(names))
    for name in ("reduce-window-rewriter", "scatter_simplifier", "algsimp", "dot-algorithm-rewriter",
                 "all-gather-bcast-reorder", "schedule-aware-collective-cse"):
        assert name in names, name
    assert names == sorted(names)
    cpu = tool("hlo-opt --list-passes --platform=cpu").out.strip().split(",")
    assert set(cpu) < set(names) and "dot-algorithm-rewriter" not in cpu


def test_hlo_opt_passes_print_the_user_s_names_as_xla_prints_them(tool):
    """After XLA's passes (a trip through StableHLO for jaxlib's compile) and without any, the
    module keeps the names the user wrote, computations too, prints as XLA's
    HloModule::ToString does (operands without their shapes), and carries no metadata the trip made."""
    for line in ("hlo-opt --passes=algsimp computation.hlo", "hlo-opt computation.hlo",
                 "hlo-opt --platform=cpu --stage=hlo-before-optimizations computation.hlo"):
        r = tool(line)
        assert r.code == 0, r.err
        assert "ENTRY %main (x.1: f32[16,32], w: f32[32,8]) -> f32[8] {" in r.out
        assert "%dot = f32[16,8]{1,0} dot(%x.1, %w)" in r.out
        assert "ROOT %sum = f32[8]{0} reduce(%t, %zero), dimensions={0}, to_apply=%add" in r.out
        assert "%add (x: f32[], y: f32[]) -> f32[] {" in r.out and "metadata" not in r.out
    # XLA's optimized module: what survives keeps the user's names; what XLA made, its own
    optimized = tool("hlo-opt --platform=cpu --stage=hlo computation.hlo")
    assert optimized.code == 0, optimized.err
    assert "ENTRY %main (x.1: f32[16,32], w: f32[32,8]) -> f32[8] {" in optimized.out
    assert "%w = f32[32,8]{1,0} parameter(1)" in optimized.out and "calls=%fused_computation" in optimized.out


@pytest.mark.slow
def test_every_listed_pass_runs_alone(tool, work):
    """XLA's smoke test: hlo-opt --passes=$(hlo-opt --list-passes) runs, and keeps the entry's name."""
    (work / "smoke.hlo").write_text("HloModule smoke\n\nENTRY smoke_entry {\n  a = f32[10] parameter(0)\n"
                                    "  b = f32[10] parameter(1)\n  s = f32[10] add(a, b)\n"
                                    "  ROOT r = f32[10] sqrt(s)\n}\n")
    listed = tool("hlo-opt --list-passes").out.strip()
    r = tool(f"hlo-opt --passes={listed} smoke.hlo")
    assert r.code == 0, r.err
    assert "ENTRY %smoke_entry (a: f32[10], b: f32[10]) -> f32[10] {" in r.out


@pytest.mark.slow
def test_doc_time_passes(work):
    p = shell("time hlo-opt --passes=reduce-window-rewriter,scatter_simplifier "
              "--xla_reduce_window_rewrite_base_length=128 input.hlo", work)
    assert p.returncode == 0, p.stderr
    assert "window={size=1x128" in p.stdout  # the scan is split at the base length asked for
    assert "window={size=1024" not in p.stdout
    assert "index_vector_dim=1" in p.stdout and "update_window_dims={1}" in p.stdout  # simplified scatter
    assert _root_tuple_operands(p.stdout)[:2] == ["ag0", "ag1"]  # collectives untouched
    assert "real" in p.stderr


def test_doc_emit_proto_and_back(tool, work):
    r = tool("hlo-opt --emit-proto input.hlo")
    assert r.code == 0, r.err
    assert r.out.startswith("hlo_module {\n  name: \"doc_input\"")
    (work / "emitted.pbtxt").write_text(r.out)
    back = tool("hlo-opt emitted.pbtxt")
    assert back.code == 0, back.err
    assert back.out == tool("hlo-opt input.hlo").out


@pytest.mark.parametrize("name", ["input.pbtxt", "input.pb"])
def test_doc_proto_to_text(tool, name):
    r = tool(f"hlo-opt {name}")
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule computation, entry_computation_layout=")
    assert "dot(" in r.out and "tanh(" in r.out


def test_hlo_opt_output_and_flag_spellings(tool, work):
    first = tool("hlo-opt --platform=cpu input.hlo")  # the default stage is hlo
    assert first.code == 0, first.err
    assert tool("hlo-opt -platform cpu -o - input.hlo").out == first.out
    r = tool("hlo-opt input.hlo --o=out.hlo --platform=Host --stage hlo --xla_cpu_enable_fast_math=false")
    assert r.code == 0 and r.out == ""
    assert (work / "out.hlo").read_text() == first.out


def test_hlo_opt_usage_errors(tool):
    assert_one_line_error(tool("hlo-opt --platfrom=cpu input.hlo"), facts=("'--platfrom'", "'--platform'"))
    assert_one_line_error(tool("hlo-opt --platform=tpux input.hlo"), contains="unknown platform")
    assert_one_line_error(tool("hlo-opt --xla_cpu_enable_fast_mth input.hlo"), facts=("'--xla_cpu_enable_fast_mth'",))
    assert_one_line_error(tool("hlo-opt --passes=no-such-pass --platform=cpu input.hlo"),
                          contains="INVALID_ARGUMENT", facts=("no-such-pass",))  # XLA's status, grepped by its tests


def test_hlo_opt_reads_a_path_as_xla_s_file_layer_cleans_it(tool, work):
    """XLA's lit tests name an input beside the test file as FILE.hlo/../input.pb: XLA cleans the
    path lexically, where the system refuses to go through a file."""
    r = tool("hlo-opt computation.hlo/../input.pb")
    assert r.code == 0, r.err
    assert r.out == tool("hlo-opt input.pb").out
    assert_one_line_error(tool("hlo-opt computation.hlo/../no_such.pb"), facts=("no_such.pb",))


def test_hlo_opt_names_the_file_whose_compile_fails(tool, work):
    """XLA's refusal at compile time (a custom call no CPU library implements) is one line that
    names the input file, exit 1, as opt says it."""
    (work / "custom.hlo").write_text("HloModule m\n\nENTRY main {\n  p = f32[4] parameter(0)\n"
                                     '  ROOT c = f32[4] custom-call(p), custom_call_target="no_such_target_xyz"\n}\n')
    r = tool("hlo-opt custom.hlo --platform=cpu --stage=hlo")
    assert r.code == 1 and r.out == ""
    assert r.err.startswith("error: custom.hlo: ") and r.err.count("\n") == 1, r.err
    assert_mentions(r.err, "no_such_target_xyz")


def test_hlo_opt_xla_dump_to(tool, work):
    r = tool("hlo-opt --platform=cpu --xla_dump_to=dumped input.hlo")
    assert r.code == 0, r.err
    names = {p.name for p in (work / "dumped").iterdir()}
    for what in ("before_optimizations.txt", "cpu_after_optimizations.txt",
                 "cpu_after_optimizations-buffer-assignment.txt", "debug_options"):
        assert f"module_0001.doc_input.{what}" in names
    assert_one_line_error(tool("hlo-opt --xla_dump_to=dumped input.hlo"), contains="needs an XLA compile")


def test_hlo_opt_split_input_file(tool, work):
    text = (work / "computation.hlo").read_text()
    (work / "two.hlo").write_text(text + "// -----\n" + text.replace("HloModule computation", "HloModule second"))
    r = tool("hlo-opt --split-input-file two.hlo")
    assert r.code == 0, r.err
    assert [ln.split(",")[0] for ln in r.out.splitlines() if ln.startswith("HloModule")] == [
        "HloModule computation", "HloModule second"]


def test_hlo_opt_passes_world(tool):
    forced = tool("hlo-opt --passes=mlir:canonicalize computation.hlo")
    assert forced.code == 0, forced.err
    assert forced.out.startswith("module @computation")  # MLIR passes print StableHLO
    only_mlir = tool("hlo-opt --passes=canonicalize computation.hlo")  # no XLA pass of that name
    assert only_mlir.code == 0 and only_mlir.out == forced.out
    assert only_mlir.err.startswith("note: ") and "canonicalize" in only_mlir.err
    assert_one_line_error(tool("hlo-opt --passes=xla:canonicalize --platform=cpu computation.hlo"),
                          facts=("canonicalize",))


# ------------------------------------------------ the tools' own checks, before any compile

def test_hlo_opt_writes_one_binary_module_and_refuses_several(tool, work):
    """A binary stage (StableHLO bytecode) writes the one module's bytes as they are; two modules
    at such a stage are one error, not bytes run together."""
    r = tool("hlo-opt --stage=stablehlo-bytecode --o=one.mlirbc computation.hlo")
    assert (r.code, r.out, r.err) == (0, "", "")
    assert (work / "one.mlirbc").read_bytes().startswith(b"ML\xefR")
    text = (work / "computation.hlo").read_text()
    (work / "pair.hlo").write_text(text + "// -----\n" + text.replace("HloModule computation", "HloModule second"))
    assert_one_line_error(tool("hlo-opt --stage=stablehlo-bytecode --split-input-file --o=two.mlirbc pair.hlo"))
    assert not (work / "two.mlirbc").exists()


@pytest.mark.slow
def test_hlo_opt_xla_dump_to_with_passes_is_xla_s_hlo_opt_layout(tool, work):
    """--passes with --xla_dump_to (no --platform needed) writes what XLA's hlo-opt writes: the
    module before and after, the DebugOptions given (read back by --debug_options_file), and
    with --xla_dump_hlo_pass_re the pipeline's start and each pass that changed the module."""
    r = tool("hlo-opt --passes=reduce-window-rewriter,dce --xla_dump_to=pass_dump input.hlo "
             "--xla_reduce_window_rewrite_base_length=128")
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule doc_input")
    names = sorted(p.name for p in (work / "pass_dump").iterdir())
    assert names == [f"module_0000.doc_input.{w}" for w in
                     ("after_optimization.txt", "before_optimization.txt", "debug_options")]
    dumped = work / "pass_dump" / "module_0000.doc_input."
    assert (work / "pass_dump" / "module_0000.doc_input.after_optimization.txt").read_text() == r.out
    assert "window={size=1024 pad=1023_0}" in Path(f"{dumped}before_optimization.txt").read_text()
    options = Path(f"{dumped}debug_options").read_text()
    assert options.splitlines() == ['xla_dump_to: "pass_dump"', "xla_reduce_window_rewrite_base_length: 128"]
    again = tool(f"hlo-opt --passes=reduce-window-rewriter,dce --debug_options_file={dumped}debug_options "
                 "--xla_dump_hlo_pass_re=.* input.hlo")
    assert again.code == 0 and again.out == r.out  # the file's options, and its dump folder
    assert sorted(p.name for p in (work / "pass_dump").iterdir() if ".transforms_pipeline." in p.name) == [
        "module_0000.doc_input.0000.transforms_pipeline.after_pipeline-start.before_reduce-window-rewriter.txt",
        "module_0000.doc_input.0001.transforms_pipeline.after_reduce-window-rewriter.before_dce.txt"]


def test_hlo_opt_xla_dump_to_without_a_compile_is_refused_before_reading_input(tool):
    """--xla_dump_to with neither --platform nor --passes, or with --emit-proto, is refused up front:
    the one error names the missing compile, even for an input that does not exist."""
    for line in ("hlo-opt --xla_dump_to=nowhere no_such_input.hlo",
                 "hlo-opt --emit-proto --platform=cpu --xla_dump_to=nowhere input.hlo"):
        assert_one_line_error(tool(line), facts=("--xla_dump_to", "--platform", "--passes"))


def test_hlo_opt_without_a_platform(tool):
    """With no --platform, --list-stages lists only the module itself (hlo), an XLA stage asks for
    a platform, and a line with no input file is one error."""
    r = tool("hlo-opt --list-stages")
    assert (r.code, r.out, r.err) == (0, "hlo\n", "")
    assert_one_line_error(tool("hlo-opt --stage=llvm input.hlo"), facts=("'llvm'", "--platform cpu|cuda"))
    assert_one_line_error(tool("hlo-opt --platform=cpu"), facts=("FILE", "--help"))


@pytest.mark.slow
def test_ctrl_c_in_hlo_opt_is_one_error_line_and_writes_nothing(tmp_path):
    """Ctrl-C while hlo-opt compiles module after module: exit 130, one error line, no
    traceback, and no -o file, whole or half written."""
    module = (DATA / "xla_tools" / "computation.hlo").read_text()
    (tmp_path / "many.hlo").write_text("\n// -----\n".join(  # distinct modules: none comes from the cache
        module.replace("constant(0)", f"constant({i})") for i in range(1, 301)))
    r = interrupted_xla_tool("hlo-opt", ["--platform=cpu", "--split-input-file", "many.hlo", "-o", "out.txt"],
                             tmp_path)
    assert_interrupted(r)
    assert r.out == ""
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "interrupted-cache") == ["many.hlo"]


# ------------------------------------------- stages as XLA's hlo-opt means them

_TWO_KERNELS = """\
HloModule two_kernels

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[5000,600] parameter(0)
  e = f32[5000,600] sqrt(p)
  z = f32[] constant(0)
  r = f32[600] reduce(e, z), dimensions={0}, to_apply=add
  ROOT out = (f32[5000,600], f32[600]) tuple(e, r)
}
"""


@pytest.mark.slow
def test_hlo_opt_stage_hlo_is_the_module_after_the_hlo_passes_not_the_scheduled_one(tool, work):
    """XLA's hlo-opt prints, for --stage=hlo, the module its compiler's HLO passes return:
    fused, laid out, not yet scheduled. hlo-backend is the executable's (scheduled) module,
    and mlirhlo opt's 'hlo' stays XLA's after_optimizations dump (scheduled)."""
    (work / "two.hlo").write_text(_TWO_KERNELS)
    spec = "--xla_gpu_target_config_filename=a100_pcie_80"
    hlo = tool(f"hlo-opt --platform=CUDA --stage=hlo {spec} --xla_dump_to=dumped two.hlo")
    backend = tool(f"hlo-opt --platform=CUDA --stage=hlo-backend {spec} two.hlo")
    assert hlo.code == 0 and backend.code == 0, hlo.err + backend.err
    # the per-pass file the stage reads is not in the user's dump (no --xla_dump_hlo_pass_re)
    dumped = sorted(p.name for p in (work / "dumped").iterdir())
    assert any(n.endswith("after_optimizations.txt") for n in dumped)
    assert not any("pre-scheduling" in n or "after_pipeline-start" in n for n in dumped), dumped
    assert hlo.out.startswith("HloModule two_kernels, entry_computation_layout=")
    assert "is_scheduled" not in hlo.out and "scheduling_name" not in hlo.out
    assert backend.out.startswith("HloModule two_kernels, is_scheduled=true")
    assert " fusion(" in hlo.out and "ROOT %out = " in hlo.out  # the user's names, XLA's fusions
    from typer.testing import CliRunner

    from mlirhlo_driver.cli.app import app

    opt = CliRunner().invoke(app, ["opt", str(work / "two.hlo"), "--platform", "cuda", "--gpu-spec",
                                   "a100_pcie_80", "--stage", "hlo"])
    assert opt.exit_code == 0, opt.output
    assert "is_scheduled=true" in opt.output.splitlines()[0]


@pytest.mark.slow
def test_hlo_opt_stage_ptx_is_the_executable_s_text_one_module_after_another(tool, work):
    """--stage=ptx prints XLA's GpuExecutable::text(): XLA's '// GPU Executable' marker, then
    each PTX module XLA split the kernels into, in XLA's order, one after the other, without mlirhlo opt's '// ----- NAME -----'
    section lines; every kernel of opt's sections is there, once."""
    (work / "two.hlo").write_text(_TWO_KERNELS)
    r = tool("hlo-opt --platform=CUDA --stage=ptx --xla_gpu_target_config_filename=a100_pcie_80 two.hlo")
    assert r.code == 0, r.err
    assert "// ----- " not in r.out
    assert r.out.startswith("// GPU Executable\n//\n// Generated by LLVM NVPTX Back-End")  # XLA's marker first
    entries = re.findall(r"^\.visible \.entry (\w+)\(", r.out, re.M)
    modules = r.out.count("// Generated by LLVM NVPTX Back-End")
    assert len(entries) == len(set(entries)) >= 2 and modules >= 2
    assert re.findall(r"^\.target (\w+)", r.out, re.M) == ["sm_80"] * modules


def test_hlo_opt_topology_file_missing_is_one_error_line(tool, work):
    """--xla_gpu_topology_filename names a file XLA would read: one not there is the error,
    before anything compiles (jaxlib's compile alone would ignore it)."""
    # a name no test writes: the work folder is shared, and another test writes gb200_2x4.txtpb
    r = tool("hlo-opt --platform=CUDA --stage=hlo --xla_gpu_topology_filename=absent_2x4.txtpb input.hlo")
    assert_one_line_error(r, at="--xla_gpu_topology_filename", facts=("absent_2x4.txtpb", "no such file"))
    r = tool("hlo-opt --platform=cpu --stage=hlo --xla_gpu_topology_filename=1x2x4 input.hlo")
    assert_one_line_error(r, facts=("--xla_gpu_topology_filename", "CUDA"))


@pytest.mark.slow
def test_hlo_opt_compiles_for_the_gpu_of_a_topology_file(tool, work):
    """A topology file's gpu_target_config is the GPU compiled for when no target config is
    given (XLA's gb200_2x4.txtpb: GB200, sm_100a), said in a note."""
    from tests.cuda.test_topology import _topology_text

    (work / "gb200_2x4.txtpb").write_text(_topology_text(2, 4))
    (work / "two.hlo").write_text(_TWO_KERNELS)
    r = tool("hlo-opt --platform=CUDA --stage=ptx --xla_gpu_topology_filename=gb200_2x4.txtpb two.hlo")
    assert r.code == 0, r.err
    # one note for the topology (jaxlib 0.9 adds one of its own about CC 10.x loads)
    said = [ln for ln in r.err.splitlines() if "topology" in ln]
    assert len(said) == 1 and all(ln.startswith("note: ") for ln in r.err.splitlines()), r.err
    assert_mentions(said[0], "gb200_2x4.txtpb", "NVIDIA GB200", "sm_100a")
    assert set(re.findall(r"^\.target (\w+)", r.out, re.M)) == {"sm_100a"}


@pytest.mark.slow
def test_hlo_opt_stage_hlo_prints_a_scheduled_module_as_given(tool, work):
    """XLA's hlo-opt takes a module with a schedule as optimized already: no HLO pass runs
    and --stage=hlo prints it as written (XLA's printer), where an unscheduled module of the
    same instructions is fused."""
    body = ("\n\nENTRY main {\n  a = f32[1024] parameter(0)\n  b = f32[1024] exponential(a)\n"
            "  ROOT c = f32[1024] negate(b)\n}\n")
    (work / "scheduled.hlo").write_text("HloModule s, is_scheduled=true" + body)
    (work / "plain.hlo").write_text("HloModule s" + body)
    spec = "--xla_gpu_target_config_filename=a100_pcie_80"
    given = tool(f"hlo-opt --platform=CUDA --stage=hlo {spec} scheduled.hlo")
    assert given.code == 0, given.err
    assert given.out.startswith("HloModule s, is_scheduled=true")
    assert "  %b = f32[1024]{0} exponential(%a)\n" in given.out and "fusion" not in given.out
    optimized = tool(f"hlo-opt --platform=CUDA --stage=hlo {spec} plain.hlo")
    assert optimized.code == 0 and " fusion(" in optimized.out, optimized.err


def test_hlo_opt_passes_on_cuda_take_a_dot_with_an_algorithm(tool, work):
    """A dot with an algorithm reaches the CUDA plugin (its VHLO had refused the import's form
    of it), and XLA's dot-algorithm-rewriter splits it into three bf16 dots."""
    from tests.conftest import filecheck

    (work / "dot3.hlo").write_text(
        "HloModule m\n\nENTRY e {\n  p0 = f32[16,16] parameter(0)\n  p1 = f32[16,16] parameter(1)\n"
        "  ROOT dot = f32[16,16] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0},"
        " algorithm=dot_bf16_bf16_f32_x3\n}\n")
    r = tool("hlo-opt --platform=CUDA --passes=dot-algorithm-rewriter "
             "--xla_gpu_target_config_filename=a100_pcie_80 dot3.hlo")
    assert r.code == 0, r.err
    filecheck(r.out, """\
CHECK: ENTRY %e
CHECK-COUNT-3: dot(%{{.*}}, %{{.*}}), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_bf16_bf16_f32{{$}}
CHECK-NOT: algorithm=dot_bf16_bf16_f32_x3
""", work)


def test_hlo_opt_buffer_assignment_and_html_are_xla_s_hlo_opt_s(tool, work):
    """--stage=buffer-assignment is XLA's hlo-opt's ToVerboseString (statistics, peak buffers),
    --stage=html its fusion explorer with a frame per entry instruction; mlirhlo opt's
    buffer-assignment stays XLA's dump (the allocation list)."""
    from typer.testing import CliRunner

    from mlirhlo_driver.cli.app import app
    from tests.conftest import filecheck

    (work / "two.hlo").write_text(_TWO_KERNELS)
    spec = "--xla_gpu_target_config_filename=a100_pcie_80"
    ba = tool(f"hlo-opt --platform=CUDA --stage=buffer-assignment {spec} two.hlo")
    assert ba.code == 0, ba.err
    filecheck(ba.out, """\
CHECK:      BufferAssignment OOM Debugging.
CHECK-NEXT: BufferAssignment stats:
CHECK-NEXT: parameter allocation: 11.44MiB
CHECK:      total allocation:
CHECK-NEXT: Peak buffers:
CHECK-NEXT: Buffer 1:
CHECK-NEXT: Size: 11.44MiB
CHECK-NEXT: Operator: op_name="p"
CHECK-NEXT: Entry Parameter Subshape: f32[5000,600]
CHECK-NOT:  allocation 0:
""", work)
    html = tool(f"hlo-opt --platform=CUDA --stage=html {spec} two.hlo -o explorer.out")
    assert html.code == 0, html.err
    data = (work / "explorer.out").read_bytes()
    from mlirhlo_driver._native.jaxlib import jaxlib_at_least

    if jaxlib_at_least("0.11"):  # XLA's Fusion Explorer zipapp (tests/xla/test_fusion_explorer.py)
        from tests.xla.test_fusion_explorer import explorer_contents

        title, frames, graphs, viewer = explorer_contents(data)
        assert title == "two_kernels" and len(graphs) == 1, (title, len(graphs))
        assert frames[-1][0].startswith("p") and all(graph == 0 for _, graph, _ in frames)
        assert all(re.fullmatch(r"(#(node|clust)\d+) polygon, \1 path", css) for _, _, css in frames), frames
        assert b"gstatic.com" not in viewer
    else:
        filecheck(data.decode(), """\
CHECK: <!DOCTYPE html>
CHECK: const frames = [[0, "{{[^"]+}}", "#node{{[0-9]+}}"], {{.*}}[0, "p{{[.0-9]*}}", "#node{{[0-9]+}}"]];
CHECK-NOT: gstatic.com
""", work)
    opt = CliRunner().invoke(app, ["opt", str(work / "two.hlo"), "--platform", "cuda", "--gpu-spec",
                                   "a100_pcie_80", "--stage", "buffer-assignment"])
    assert opt.exit_code == 0 and opt.output.startswith("BufferAssignment:\nallocation 0:"), opt.output


_ALL_REDUCE_8 = """\
HloModule ar, replica_count=8

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[1024] parameter(0)
  ROOT r = f32[1024] all-reduce(p), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true,
    to_apply=add
}
"""


def test_hlo_opt_all_reduce_on_a_gb200_topology_is_xla_s_triton_collective_kernel(tool, work):
    """XLA's gb200_2x4.txtpb names its GPU by platform_version alone (oberon_b200: GB200); the
    shipped GB200 spec carries the NVLink domain (collective memory granularity), with which
    XLA makes an all-reduce a __triton_collective fusion, a kernel in the PTX, not an NCCL call."""
    from tests.conftest import filecheck

    (work / "oberon_2x4.txtpb").write_text('platform_version: "oberon_b200"\nnum_partitions: 1\n'
                                           "num_hosts_per_partition: 2\nnum_devices_per_host: 4\n")
    (work / "ar8.hlo").write_text(_ALL_REDUCE_8)
    hlo = tool("hlo-opt --platform=CUDA --stage=hlo --xla_gpu_topology_filename=oberon_2x4.txtpb ar8.hlo")
    assert hlo.code == 0, hlo.err
    assert_mentions(hlo.err, "oberon_2x4.txtpb", "NVIDIA GB200", "sm_100a")
    filecheck(hlo.out, """\
CHECK: all-reduce(
CHECK: ENTRY
CHECK: fusion-start({{.*}}), kind=kCustom, {{.*}}"kind":"__triton_collective"
""", work)
    ptx = tool("hlo-opt --platform=CUDA --stage=ptx --xla_gpu_topology_filename=oberon_2x4.txtpb ar8.hlo")
    assert ptx.code == 0, ptx.err
    filecheck(ptx.out, """\
CHECK-LABEL: // GPU Executable
CHECK: .target sm_100a
CHECK: .visible .entry
""", work)
