"""The drop-in XLA tools: hlo-opt, run_hlo_module, multihost_hlo_runner, ptx-opt.

Each ``test_doc_*`` runs one command line of XLA's tools documentation
(docs/tools.md) verbatim, with tests/data/xla_tools standing in for its files
(input.hlo, computation.hlo, /dump, input.ll, results.textpb).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, XLA_TOOL_MAINS, CliResult, assert_one_line_error, run_xla_tool

BIN = Path(sys.executable).parent
TOOLS = XLA_TOOL_MAINS


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("xla_tools")
    for p in (DATA / "xla_tools").iterdir():
        (shutil.copytree if p.is_dir() else shutil.copy)(p, d / p.name)
    return d


@pytest.fixture
def tool(capfd, work):
    """``tool("hlo-opt --platform=cpu input.hlo")``: the console script's main, in this process, in ``work``."""
    def run(line: str) -> CliResult:
        name, *argv = line.split()
        return run_xla_tool(name, argv, work, capfd)

    return run


def shell(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """The line as a user types it, with the installed console scripts on PATH."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------- run_hlo_module

def test_doc_run_hlo_module_against_interpreter(tool):
    r = tool("run_hlo_module --platform=cpu --reference_platform=Interpreter computation.hlo")
    assert r.code == 0, r.err
    assert "computation: OK" in r.out and "reference (interpreter)" in r.out
    assert "0/1 runs miscompared." in r.err
    assert "note:" not in r.err  # the --isolate_instructions note is for that flag only


def test_doc_run_hlo_module_dump_glob(tool, work):
    r = tool(f"run_hlo_module {work}/dump/*before_optimizations*")
    assert r.code == 0, r.err
    assert "module_0001.jit_scale: OK" in r.out and "module_0002.jit_rowsum: OK" in r.out
    assert "0/2 runs miscompared." in r.err  # the after_optimizations file is not picked up
    # num_partitions=2 from the second module's header: laid out over two host devices, as it says
    assert "num_partitions=2: run SPMD-partitioned on 2 host devices" in r.err
    assert "  partitioned: 2 (1 replica x 2 partitions); partitioner: gspmd" in r.out


def test_run_hlo_module_cuda_without_gpu(tool):
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import DriverError

    try:
        _jaxlib.cuda_devices()
        pytest.skip("a GPU is present")
    except DriverError:
        pass
    assert_one_line_error(tool("run_hlo_module --platform=CUDA computation.hlo"), contains="GPU")


def _unexpanded_scatter() -> str:
    """What running a scatter that no XLA pass expanded gives on XLA:CPU: 0.10.2's XLA refuses
    it; jaxlib 0.12's aborts in codegen, without a word, and the run's worker dies of it."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    return ("CRASHED: worker killed by SIGABRT (a crash in native code)" if _jaxlib.jaxlib_at_least("0.12.0")
            else "FAILED: HLO opcode `scatter` is not supported by XLA:CPU")


_UNEXPANDED_SCATTER = _unexpanded_scatter()


def test_run_hlo_module_flags(tool):
    r = tool("run_hlo_module --platform Host --reference_platform= --print_literals "
             "--iterations=2 computation.hlo")
    assert r.code == 0, r.err
    assert "=== Iteration 2" in r.err and "output 0 (float32[8])" in r.out
    assert "inputs: random (seed 0)" in r.out and "inputs: random (seed 1)" in r.out  # new inputs each time
    assert "miscompared" not in r.err  # no reference, no comparison
    assert_one_line_error(tool("run_hlo_module --platform=TPU computation.hlo"), contains="unknown platform")
    raw = tool("run_hlo_module --reference_platform=CPU --run_test_hlo_passes=false input.hlo")
    assert raw.code == 1  # without XLA's passes nothing expands the scatter for XLA:CPU
    assert _UNEXPANDED_SCATTER in raw.out and "--xla_disable_all_hlo_passes=true" in raw.out
    # num_partitions=2 in its header: it ran partitioned, and spmd-run is how to run it again
    assert "reproduce: mlirhlo spmd-run input.hlo --num-partitions 2 --reference cpu" in raw.out


# ------------------------------------------------------- multihost_hlo_runner

def test_doc_multihost_dump_glob(work):
    # A fresh process: the host devices are created before jax starts.
    p = shell("multihost_hlo_runner /dump/*before_optimizations*".replace("/dump", str(work / "dump")), work)
    assert p.returncode == 0, p.stderr
    # num_partitions=2 from the second module's header, without a flag
    assert "devices: 2 (1 replica x 2 partitions)" in p.stdout
    assert "2/2 modules passed" in p.stdout


def test_multihost_flags(work):
    rowsum = "dump/module_0002.jit_rowsum.before_optimizations.txt"
    p = shell(f"hlo_runner_main --norun --hlo_file={rowsum} && echo === && "
              f"multihost_hlo_runner -num_partitions 2 --hlo_argument_mode=uninitialized --log_output {rowsum}",
              work)
    assert p.returncode == 0, p.stderr
    compiled, ran = p.stdout.split("===\n")
    assert compiled.startswith("module_0002.jit_rowsum: COMPILED (1 replica x 2 partitions,")
    assert "inputs: zeros" in ran and "output 0 = [0., 0., 0., 0.]" in ran


def test_run_hlo_module_runs_what_jax_shards_partitioned(tool):
    """run_hlo_module on the sharded programs the installed jax writes: partitioned on as many
    host devices as the HLO header says (or, for an HloProto, its shardings name), laid out,
    run, gathered and matched with the reference."""
    from tests import sharded_programs

    progs = sharded_programs.programs(4)
    r = tool(f"run_hlo_module {progs['mlp']['hlo']} {progs['shard_map']['hlo.pb']} {progs['mlp_2d']['hlo']}")
    assert r.code == 0, r.out + r.err
    assert f"note: {progs['mlp']['hlo']}: num_partitions=4: run SPMD-partitioned on 4 host devices" in r.err
    assert f"note: {progs['shard_map']['hlo.pb']}: its shardings name 4 devices: run SPMD-partitioned" in r.err
    assert "0/3 runs miscompared." in r.err
    assert r.out.count(": OK\n") == 3
    assert "  partitioned: 4 (1 replica x 4 partitions); partitioner: shardy\n" \
           "  parameter 0 x float32[8, 16]: {devices=[4,1]<=[4]}, [2, 16] per device" in r.out
    assert "  reference: the same module on the same 4 devices with replicated parameters and outputs" in r.out


def test_multihost_runner_and_hlo_runner_main_run_what_jax_shards(work):
    """multihost_hlo_runner and hlo_runner_main on XLA's dumps of jax's sharded programs (the
    counts from the header), HLO text and HloProto, shard_map included."""
    from tests import sharded_programs

    progs = sharded_programs.programs(4)
    p = shell(f"multihost_hlo_runner {progs['mlp']['hlo']} {progs['shard_map']['hlo']} && echo === && "
              f"hlo_runner_main --num_partitions=4 --hlo_file={progs['explicit']['hlo.pb']}", work)
    assert p.returncode == 0, p.stdout + p.stderr
    runner, main = p.stdout.split("===\n")
    assert "2/2 modules passed" in runner and runner.count("devices: 4 (1 replica x 4 partitions); "
                                                            "partitioner: shardy") == 2
    assert main.startswith("explicit: OK\n") and "parameter 0 a float32[8, 16]: {devices=[4,1]<=[4]}" in main


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
    assert r.err.strip() == ("note: /xla/tools/hlo_opt/gpu_specs/a100_pcie_80.txtpb does not exist: "
                             "using the shipped spec 'a100_pcie_80'")
    assert 'target triple = "nvptx64-nvidia-cuda"' in r.out


def test_doc_llvm_with_autotune_results(tool):
    r = tool("hlo-opt --platform=CUDA --stage=llvm --xla_gpu_target_config_filename=gpu_specs/a100_pcie_80.txtpb "
             "--xla_gpu_load_autotune_results_from=results.textpb input.hlo")
    assert r.code == 0, r.err
    assert 'target triple = "nvptx64-nvidia-cuda"' in r.out


def _all_gathers_in_root(hlo: str) -> str:
    root = next(ln for ln in hlo.splitlines() if "ROOT %tuple" in ln)
    return root.split("tuple(")[1]


def test_doc_passes_collective_cse(tool):
    r = tool("hlo-opt --passes=schedule-aware-collective-cse input.hlo")
    assert r.code == 0, r.err
    assert "using 100" in r.err  # XLA runs the pass only with a threshold > 0
    assert _all_gathers_in_root(r.out).startswith("%ag0.1, %ag0.1,")  # the second all-gather is CSE'd
    assert "window={size=1024 pad=1023_0}" in r.out  # no other pass ran


def test_doc_passes_collective_cse_threshold(tool):
    r = tool("hlo-opt --passes=schedule-aware-collective-cse "
             "--xla_gpu_experimental_collective_cse_distance_threshold=20 input.hlo")
    assert r.code == 0, r.err
    assert r.err == ""
    assert _all_gathers_in_root(r.out).startswith("%ag0.1, %ag0.1,")


def test_doc_list_passes(tool):
    r = tool("hlo-opt --list-passes")
    assert r.code == 0, r.err
    cpu, cuda = r.out.split("# XLA HLO passes of the cuda")
    assert cpu.startswith("# XLA HLO passes of the cpu pipeline")
    for name in ("reduce-window-rewriter", "scatter_simplifier", "algsimp"):
        assert f"  {name}\n" in cpu and f"  {name}\n" in cuda
    gated = "  schedule-aware-collective-cse (with --xla_gpu_experimental_collective_cse_distance_threshold > 0)"
    # A pass gated by a flag is listed once, in the pipeline that runs it.
    lines = cuda.splitlines()
    start = lines.index("collective-optimizations:") + 1
    group = lines[start:next(i for i in range(start, len(lines)) if not lines[i].startswith("  "))]
    assert gated in group and cuda.count(gated) == 1


def test_doc_time_passes(work):
    p = shell("time hlo-opt --passes=reduce-window-rewriter,scatter_simplifier "
              "--xla_reduce_window_rewrite_base_length=128 input.hlo", work)
    assert p.returncode == 0, p.stderr
    assert "window={size=1x128" in p.stdout  # the scan is split at the base length asked for
    assert "window={size=1024" not in p.stdout
    assert "index_vector_dim=1" in p.stdout and "update_window_dims={1}" in p.stdout  # simplified scatter
    assert _all_gathers_in_root(p.stdout).startswith("%ag0.1, %ag1.1,")  # collectives untouched
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
    line = assert_one_line_error(tool("hlo-opt --platfrom=cpu input.hlo"))
    assert line == "error: unknown flag '--platfrom' (did you mean '--platform'?)"
    assert_one_line_error(tool("hlo-opt --platform=tpu input.hlo"), contains="unknown platform")
    assert_one_line_error(tool("hlo-opt --xla_cpu_enable_fast_mth input.hlo"),
                          contains="unknown XLA flag '--xla_cpu_enable_fast_mth'")
    assert_one_line_error(tool("hlo-opt --passes=no-such-pass --platform=cpu input.hlo"),
                          contains="did not run")


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_help_and_version(tool, name):
    from mlirhlo_driver.cli.xla import tools as xla_tools

    r = tool(f"{name} --help")
    assert r.code == 0 and r.out.startswith(f"usage: {name} ")
    flags = {"hlo-opt": xla_tools.HLO_OPT_FLAGS, "run_hlo_module": xla_tools.RUN_HLO_MODULE_FLAGS,
             "multihost_hlo_runner": xla_tools.MULTIHOST_FLAGS, "ptx-opt": xla_tools.PTX_OPT_FLAGS}[name]
    for f in flags:
        assert f"--{f.name}" in r.out
    assert "<" not in r.out  # metavariables are words, not Python types
    v = tool(f"{name} --version")
    assert v.code == 0 and v.out.startswith(name) and "mlirhlo-driver" in v.out


# -------------------------------------------------------------------- ptx-opt

def test_doc_ptx_opt(tool):
    r = tool("ptx-opt --arch=9.0 input.ll")
    assert r.code == 0, r.err
    assert ".target sm_90\n" in r.out and ".entry scale(" in r.out


def test_doc_ptx_opt_dump_llvmir(tool, work):
    r = tool("ptx-opt --arch=9.0 --xla_dump_to=DIR --xla_gpu_dump_llvmir input.ll")
    assert r.code == 0, r.err
    assert r.out == tool("ptx-opt --arch=9.0 input.ll").out
    dumps = sorted((work / "DIR").iterdir())
    assert len(dumps) > 10 and dumps[0].name.startswith("input.0000.")
    assert all("@scale" in p.read_text() for p in dumps)


def test_ptx_opt_stdin(work):
    p = shell("ptx-opt --arch=8.0 - < input.ll", work)
    assert p.returncode == 0, p.stderr
    assert ".target sm_80" in p.stdout


# -------------------------------------------------------------- flag syntax

def test_flag_syntax():
    from mlirhlo_driver.xla.cli_flags import Flag, parse

    flags = [Flag("o", "str", "-", ""), Flag("n", "int", 1, ""), Flag("list-stages", "bool", False, ""),
             Flag("run", "bool", True, "")]
    p = parse(["-o", "-", "--n", "3", "in.hlo", "--list_stages", "--norun", "--xla_gpu_dump_llvmir",
               "x.ll", "--xla_dump_to", "DIR", "--noxla_cpu_enable_fast_math",
               "--xla_reduce_window_rewrite_base_length=128", "--", "--not-a-flag"], flags)
    assert (p["o"], p["n"], p["list-stages"], p["run"]) == ("-", 3, True, False)
    assert p.positionals == ["in.hlo", "x.ll", "--not-a-flag"]
    assert p.xla_flags == {"xla_gpu_dump_llvmir": True, "xla_dump_to": "DIR",
                           "xla_cpu_enable_fast_math": False, "xla_reduce_window_rewrite_base_length": 128}
    assert parse(["--run=false", "--list-stages=1", "--o=f"], flags).values == {
        "o": "f", "n": 1, "list_stages": True, "run": False}


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


def test_mlirhlo_accepts_xla_spellings(cli, work, tmp_path):
    """mlirhlo's own commands take XLA's spellings of the same options as aliases."""
    r = cli("run", work / "computation.hlo", "--reference", "cpu", "--jobs", "0", "--abs_error_bound=0.01",
            "--rel_error_bound", "0.01", "--use_large_float_range", "--print_literals")
    assert r.code == 0, r.err
    assert "output 0 (float32[8])" in r.out
    assert cli("opt", work / "computation.hlo", f"--o={tmp_path / 'c.mlir'}").code == 0
    assert (tmp_path / "c.mlir").read_text().startswith("module @computation")
    help_text = cli("spmd-run", "--help").out
    for alias in ("--num_partitions", "--num_replicas", "--is_spmd_partitioned_module", "--num_repeats"):
        assert alias in help_text


def test_hlo_opt_passes_world(tool):
    forced = tool("hlo-opt --passes=mlir:canonicalize computation.hlo")
    assert forced.code == 0, forced.err
    assert forced.out.startswith("module @computation")  # MLIR passes print StableHLO
    only_mlir = tool("hlo-opt --passes=canonicalize computation.hlo")  # no XLA pass of that name
    assert only_mlir.code == 0 and only_mlir.out == forced.out
    assert "not in XLA's pipelines; run as MLIR passes" in only_mlir.err
    assert_one_line_error(tool("hlo-opt --passes=xla:canonicalize --platform=cpu computation.hlo"),
                          contains="cpu: canonicalize did not run")


def test_run_hlo_module_literal_files(tool, work):
    first = tool("run_hlo_module --reference_platform=CPU --output_literals_file=lits.pbtxt computation.hlo")
    assert first.code == 0, first.err
    text = (work / "lits.pbtxt").read_text()
    assert text.startswith("iterations {\n  arguments {\n    shape {\n      element_type: F32")
    assert "reference_result {" in text
    again = tool("run_hlo_module --reference_platform=CPU --input_literals_file=lits.pbtxt "
                 "--output_literals_file=lits.pb computation.hlo")
    assert again.code == 0, again.err
    assert "inputs: from lits.pbtxt" in again.out
    from mlirhlo_driver.ir import literals

    # the same arguments came back, through the binary file this time
    assert [a.tolist() for a in literals.read_iteration_arguments(str(work / "lits.pb"))[0]] == \
        [a.tolist() for a in literals.read_iteration_arguments(str(work / "lits.pbtxt"))[0]]
    # Both results are the module's value of the written arguments: sum over rows of tanh(x @ w).
    import numpy as np

    files_cls, _ = literals._file_classes()
    msg = files_cls()
    msg.ParseFromString((work / "lits.pb").read_bytes())
    (it,) = msg.iterations
    x, w = (literals.to_array(a) for a in it.arguments)
    want = np.tanh(x.astype(np.float64) @ w).sum(axis=0)
    for field in ("result", "reference_result"):
        assert it.HasField(field), field
        np.testing.assert_allclose(literals.to_array(getattr(it, field)), want, rtol=1e-4, atol=1e-4)


def test_each_iteration_takes_its_own_literals_then_the_last_again(tool, work):
    """--iterations=3 on a file of 2 iterations' literals: iteration i takes set i, and the
    third takes the last set again (as XLA's run_hlo_module)."""
    from mlirhlo_driver.ir import literals

    made = tool("run_hlo_module --reference_platform= --iterations=2 --random_init_input_literals "
                "--output_literals_file=two.pb computation.hlo")
    assert made.code == 0, made.err
    sets = literals.read_iteration_arguments(str(work / "two.pb"))
    assert len(sets) == 2 and sets[0][0].tolist() != sets[1][0].tolist()
    again = tool("run_hlo_module --reference_platform= --iterations=3 --input_literals_file=two.pb "
                 "--output_literals_file=three.pb computation.hlo")
    assert again.code == 0, again.err
    used = literals.read_iteration_arguments(str(work / "three.pb"))
    assert [[a.tolist() for a in args] for args in used] == \
        [[a.tolist() for a in args] for args in (sets[0], sets[1], sets[1])]


def test_literal_layouts_and_types():
    import ml_dtypes
    import numpy as np

    from mlirhlo_driver.ir import literals

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    lit = literals.from_array(a)
    del lit.shape.layout.minor_to_major[:]
    lit.shape.layout.minor_to_major.extend([0, 1])  # column-major: the data is a's transpose
    lit.ClearField("f32s")
    lit.f32s.extend(a.T.reshape(-1).tolist())
    assert literals.to_array(lit).tolist() == a.tolist()
    for x in (np.array([1.5, -2], dtype=ml_dtypes.bfloat16), np.array([[1 + 2j]], dtype=np.complex64),
              np.array([True, False]), np.array([-3, 4], dtype=np.int8)):
        back = literals.to_array(literals.from_array(x))
        assert back.dtype == x.dtype and back.tolist() == x.tolist()


def test_run_hlo_module_replays_snapshot(tool, work):
    """An HloSnapshot from XLA's dump runs on the arguments it recorded (all ones, all 0.1)."""
    r = tool(f"run_hlo_module --print_literals {work}/snapshot/module_0008.jit__lambda.snapshot.75718513.pb")
    assert r.code == 0, r.err
    assert "running module_0008.jit__lambda.before_optimizations.txt on the recorded arguments" in r.err
    assert "output 0 (float32[3]): [2.656147, 2.656147, 2.656147]" in r.out  # the result XLA recorded


def test_a_snapshot_alone_runs_its_own_module(tool, work, tmp_path):
    """Without XLA's before_optimizations dump beside it, the module the snapshot holds runs on
    the recorded arguments. That is XLA's optimized module: jaxlib 0.9's CPU runs its fusions,
    later ones refuse them (the HLO import drops their backend configs)."""
    import shutil

    alone = tmp_path / "module_0008.jit__lambda.snapshot.75718513.pb"
    shutil.copy(work / "snapshot" / alone.name, alone)
    r = tool(f"run_hlo_module --print_literals {alone}")
    assert "on the recorded arguments" not in r.err
    assert r.out.startswith("module_0008.jit__lambda.snapshot.75718513: ")
    if r.code == 0:
        assert "output 0 (float32[3]): [2.656147, 2.656147, 2.656147]" in r.out
    else:
        assert r.code == 1 and "Fusion must have backend config" in r.out.splitlines()[0], r.out


@pytest.mark.parametrize("header, note", [
    ("", None),
    (", replica_count=2", "replica_count=2, num_partitions=1: run here on one device; multihost_hlo_runner runs "
                          "it partitioned"),
    (", num_partitions=4", "num_partitions=4: run SPMD-partitioned on 4 host devices"),
])
def test_run_hlo_module_says_how_a_replicated_or_partitioned_module_runs(tool, tmp_path, header, note):
    """Replicas run on one device; partitions, on as many host devices as the header says."""
    path = tmp_path / "m.hlo"
    path.write_text(f"HloModule m{header}\n\nENTRY main {{\n  p = f32[4] parameter(0)\n"
                    "  ROOT n = f32[4] negate(p)\n}\n")
    r = tool(f"run_hlo_module --platform=cpu {path}")
    assert r.code == 0, r.err
    notes = [ln for ln in r.err.splitlines() if ln.startswith("note:")]
    assert notes == ([] if note is None else [f"note: {path}: {note}"])
    assert ("partitioned: 4 (1 replica x 4 partitions)" in r.out) == ("num_partitions" in header)


def test_multihost_nodes(work):
    """Two nodes: one command per host (--address, --task_id), and simulated on this machine."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rowsum = "dump/module_0002.jit_rowsum.before_optimizations.txt"
    node = f"multihost_hlo_runner --num_nodes=2 --address=127.0.0.1:{port} {rowsum}"
    p = shell(f"{node} --task_id=1 > task1.txt 2>&1 & {node} --task_id=0; r=$?; wait $!; echo rc=$r,$?", work)
    assert p.stdout.rstrip().endswith("rc=0,0"), p.stdout + p.stderr + (work / "task1.txt").read_text()
    assert "module_0002.jit_rowsum: OK" in p.stdout and "gathered from 2 processes" in p.stdout
    mock = shell(f"multihost_hlo_runner --enable_mock_nccl --num_nodes=2 {rowsum}", work)
    assert mock.returncode == 0, mock.stderr
    assert "[0] module_0002.jit_rowsum: OK" in mock.stdout and "2 simulated nodes" in mock.stderr


# ------------------------------------- run_hlo_module / multihost: the rest of XLA's flags

_SCATTER_HLO = """HloModule scat

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  v = f32[8] parameter(0)
  idx = s32[3,1] parameter(1)
  upd = f32[3] parameter(2)
  ROOT r = f32[8] scatter(v, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}
"""

_LOOP_HLO = """HloModule loop

body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v2 = f32[4] add(v, v)
  ROOT t = (s32[], f32[4]) tuple(i2, v2)
}

cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(i, ten), direction=LT
}

ENTRY main {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT iterations = s32[] get-tuple-element(w), index=0
}
"""

_FEED_F32_HLO = """HloModule feed

ENTRY main {
  x = f32[4] parameter(0)
  tok = token[] after-all()
  feed = (f32[4], token[]) infeed(tok)
  d = f32[4] get-tuple-element(feed), index=0
  s = f32[4] add(x, d)
  t2 = token[] get-tuple-element(feed), index=1
  o = token[] outfeed(s, t2), outfeed_shape=f32[4]
  ROOT r = f32[4] add(d, d)
}
"""


def test_run_hlo_module_isolate_instructions(tool):
    """Each entry instruction runs alone: dot and tanh differ from the interpreter in the last
    bits (caught with zero error bounds), the reduce matches exactly; each is named."""
    r = tool("run_hlo_module --isolate_instructions --abs_error_bound=0 --rel_error_bound=0 computation.hlo")
    assert r.code == 1, r.err
    import re

    rows = re.findall(r"^(\w+): ([A-Z]+)", r.out, re.M)  # one report per instruction, in program order
    assert rows == [("dot", "MISMATCH"), ("t", "MISMATCH"), ("sum", "OK")]
    assert "1/3 modules passed" in r.out and "2/3 runs miscompared." in r.err
    assert "reproduce: run_hlo_module --isolate_instructions --abs_error_bound=0" in r.out
    assert_one_line_error(tool("run_hlo_module --isolate_instructions --input_literals_file=x.pb computation.hlo"),
                          contains="--isolate_instructions takes no --input_literals_file")


def test_run_hlo_module_reference_hlo_passes(tool, work):
    (work / "scatter.hlo").write_text(_SCATTER_HLO)
    ok = tool("run_hlo_module --reference_platform=CPU scatter.hlo")
    assert ok.code == 0, ok.out + ok.err
    raw = tool("run_hlo_module --reference_platform=CPU --run_reference_hlo_passes=false scatter.hlo")
    assert raw.code == 1  # the reference compile, without XLA's passes, has nothing to expand the scatter
    assert raw.out.startswith(f"scatter: {_UNEXPANDED_SCATTER}")
    if "CRASHED" not in _UNEXPANDED_SCATTER:  # (a worker that died reports nothing it ran)
        assert "  compile " in raw.out  # the test platform compiled and ran; the reference did not
    assert "reproduce: run_hlo_module --reference_platform=CPU --run_reference_hlo_passes=false" in raw.out


def test_run_hlo_module_input_flags(tool, work):
    zeros = tool("run_hlo_module --random_init_input_literals=false --print_literals --reference_platform= "
                 "computation.hlo")
    assert zeros.code == 0, zeros.err
    assert "inputs: zeros" in zeros.out and "output 0 (float32[8]): [0., 0., 0., 0., 0., 0., 0., 0.]" in zeros.out
    line = assert_one_line_error(tool("run_hlo_module --different_random_seeds computation.hlo"))
    assert "jaxlib cannot set the HloModuleConfig seed" in line
    snap = f"{work}/snapshot/module_0008.jit__lambda.snapshot.75718513.pb"
    fake = tool(f"run_hlo_module --nodifferent_random_seeds --force_fake_data --print_literals {snap}")
    assert fake.code == 0, fake.err
    assert "ignoring the snapshot's recorded arguments; using fake data" in fake.err
    assert "inputs: random (seed 0)" in fake.out and "2.656147, 2.656147" not in fake.out


def test_mlirhlo_run_reference_spelling(cli, work):
    r = cli("run", work / "computation.hlo", "--reference", "Interpreter", "--jobs", "0")
    assert r.code == 0, r.err
    assert "reference (interpreter)" in r.out


def test_multihost_runner_options(work):
    """ExecutionOptions (a swapped device assignment), output literals per device, profiles,
    snapshots, while-loop flattening and infeed removal, in one fresh process each."""
    (work / "loop.hlo").write_text(_LOOP_HLO)
    (work / "feed.hlo").write_text(_FEED_F32_HLO)
    (work / "eo.pbtxt").write_text(
        "num_replicas: 1\nnum_partitions: 2\ndevice_assignment {\n  replica_count: 1\n  computation_count: 2\n"
        "  computation_devices { replica_device_ids: 1 }\n  computation_devices { replica_device_ids: 0 }\n}\n"
        "debug_options { xla_cpu_enable_fast_math: false }\n")
    rowsum = "dump/module_0002.jit_rowsum.before_optimizations.txt"
    snap = "snapshot/module_0008.jit__lambda.snapshot.75718513.pb"
    p = shell(f"multihost_hlo_runner --execution_options_path=eo.pbtxt --hlo_argument_mode=use_device_id_as_input "
              f"--dump_output_literal_to=lits/out.txt --profile_execution --num_repeats=2 {rowsum} && echo === && "
              f"multihost_hlo_runner --input_format=snapshot_proto_binary --log_output {snap} && echo === && "
              f"multihost_hlo_runner --while_execution_count=3 --log_output loop.hlo && echo === && "
              "multihost_hlo_runner --log_output loop.hlo && echo === && "
              "multihost_hlo_runner --log_output feed.hlo && echo === && "
              "multihost_hlo_runner --remove_infeed_outfeed=false feed.hlo", work)
    assert p.returncode == 2, p.stdout + p.stderr
    eo, snapshot, flat, loop, feed, _ = p.stdout.split("===\n")
    # partition 0 (rows 0-1) ran on device 1, so its rows hold 1s: each sums to 6
    for d in (0, 1):
        assert (work / f"lits/out.task_0.device_{d}.literal_0.txt").read_text() == "f32[4] {6, 6, 0, 0}\n"
    assert eo.count(f"## Execution time, file={rowsum} repeat=") == 2 and "repeat=1 duration=" in eo
    assert "inputs: the arguments the HloSnapshot recorded" in snapshot
    assert "output 0 = [2.65615, 2.65615, 2.65615]" in snapshot
    assert "output 0 = 3" in flat and "output 0 = 10" in loop
    assert "1 while loop set to run 3 iterations" in p.stderr
    assert "output 0 = [0., 0., 0., 0.]" in feed and "2 infeed/outfeed replaced" in p.stderr
    assert p.stderr.count("infeed/outfeed replaced") == 1  # the modules without any are left alone
    assert p.stderr.rstrip().splitlines()[-1].startswith("error: feed.hlo: the module has infeed/outfeed")


def test_literal_text():
    """XLA's Literal::ToString forms, as --dump_output_literal_to writes them."""
    import numpy as np

    from mlirhlo_driver.ir import literals

    assert literals.literal_text(np.float32(1.5).reshape(())) == "f32[] 1.5"
    assert literals.literal_text(np.array([0.1, 2, -3e-8], np.float32)) == "f32[3] {0.1, 2, -3e-08}"
    assert literals.literal_text(np.array([1 / 3], np.float32)) == "f32[1] {0.333333343}"  # 6 digits do not round-trip
    assert literals.literal_text(np.array([True, False])) == "pred[2] {true, false}"
    assert literals.literal_text(np.arange(6, dtype=np.int32).reshape(2, 3)) == \
        "s32[2,3] {\n  { 0, 1, 2 },\n  { 3, 4, 5 }\n}"
    # rank 3 and up: each block of the outer dimensions is labelled with its index, as XLA does
    assert literals.literal_text(np.arange(8, dtype=np.int32).reshape(2, 2, 2)) == \
        "s32[2,2,2] {\n{ /*i0=0*/\n{ 0, 1 },\n{ 2, 3 }\n},\n{ /*i0=1*/\n{ 4, 5 },\n{ 6, 7 }\n}\n}"
    assert literals.literal_text(np.arange(4, dtype=np.int8).reshape(1, 2, 1, 2)) == \
        "s8[1,2,1,2] {\n{ /*i0=0*/\n{ /*i1=0*/\n{ 0, 1 }\n},\n{ /*i1=1*/\n{ 2, 3 }\n}\n}\n}"


def test_multihost_counts_on_the_command_line_beat_execution_options(work):
    """Both --num_replicas and --num_partitions given: they win over ExecutionOptions' counts
    (as XLA's runner), 1 included; one of them alone leaves the file's. A fresh process each
    (jax starts its CPU devices once)."""
    (work / "two_replicas.pbtxt").write_text("num_replicas: 2\nnum_partitions: 1\n")
    rowsum = "dump/module_0002.jit_rowsum.before_optimizations.txt"
    common = f"--execution_options_path=two_replicas.pbtxt --hlo_argument_mode=use_device_id_as_input --log_output {rowsum}"
    p = shell(f"multihost_hlo_runner --num_replicas=1 --num_partitions=2 {common} && echo === && "
              f"multihost_hlo_runner --num_partitions=2 {common}", work)
    assert p.returncode == 0, p.stdout + p.stderr
    flags, from_file = p.stdout.split("===\n")
    assert "output 0 = [0., 0., 6., 6.]" in flags and "replica 1" not in flags  # 2 partitions
    assert "replica 1 output 0 = [6., 6., 6., 6.]" in from_file  # the file's 2 replicas


def test_multihost_device_assignment_may_name_devices_past_the_run_s_count(work):
    """A device_assignment naming devices 3 and 2 for a 2-device run: a fresh process starts 4 host
    devices (the highest id's count), runs partition 0 on device 3 and partition 1 on device 2."""
    (work / "high_ids.pbtxt").write_text(
        "num_replicas: 1\nnum_partitions: 2\ndevice_assignment {\n  replica_count: 1\n  computation_count: 2\n"
        "  computation_devices { replica_device_ids: 3 }\n  computation_devices { replica_device_ids: 2 }\n}\n")
    p = shell("multihost_hlo_runner --execution_options_path=high_ids.pbtxt --hlo_argument_mode=use_device_id_as_input "
              "--dump_output_literal_to=high/out.txt dump/module_0002.jit_rowsum.before_optimizations.txt", work)
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(f.name for f in (work / "high").iterdir()) == [
        "out.task_0.device_2.literal_0.txt", "out.task_0.device_3.literal_0.txt"]
    # rows 0-1 (partition 0) filled with 3 sum to 18 over 6 columns; rows 2-3 with 2, to 12
    for d in (2, 3):
        assert (work / f"high/out.task_0.device_{d}.literal_0.txt").read_text() == "f32[4] {18, 18, 12, 12}\n"


def test_multihost_device_assignment_of_other_counts_is_refused(tool, work):
    """A device_assignment whose counts differ from the run's, even where its lists fit."""
    (work / "da.pbtxt").write_text(
        "num_replicas: 1\nnum_partitions: 2\ndevice_assignment {\n  replica_count: 1\n  computation_count: 3\n"
        "  computation_devices { replica_device_ids: 1 }\n  computation_devices { replica_device_ids: 0 }\n}\n")
    r = tool("multihost_hlo_runner --execution_options_path=da.pbtxt "
             "dump/module_0002.jit_rowsum.before_optimizations.txt")
    assert r.code == 2
    assert r.err == "error: da.pbtxt: device_assignment is 1 replicas x 3 computations; the run has 1 x 2\n"


@pytest.mark.parametrize("field", ['xla_disable_hlo_passes: "algsimp"', "xla_gpu_disable_async_collectives: ALLREDUCE"])
def test_execution_options_with_a_list_field_is_refused(tool, work, field):
    """A repeated DebugOptions field (strings or enums) cannot be a per-compile flag: one line
    naming it, not a list handed to jaxlib."""
    (work / "lists.pbtxt").write_text(f"debug_options {{\n  {field}\n}}\n")
    r = tool("multihost_hlo_runner --execution_options_path=lists.pbtxt "
             "dump/module_0002.jit_rowsum.before_optimizations.txt")
    name = field.split(":")[0]
    assert (r.code, r.err) == (2, f"error: lists.pbtxt: debug_options.{name}: list and message fields cannot be "
                                  "passed to a jaxlib compile (per-compile options take scalars)\n")


def test_run_hlo_module_bad_modules_exit_2(tool, tmp_path):
    """An invalid module is exit 2, alone (one error line) or among good ones (its row)."""
    broken = tmp_path / "broken.hlo"
    broken.write_text("HloModule broken\n\nENTRY main {\n  ROOT x = f32[2] bogus()\n}\n")
    alone = tool(f"run_hlo_module --platform=cpu {broken}")
    assert (alone.code, alone.out, alone.err) == (2, "", f"error: {broken}:4:19: Unknown opcode: bogus\n")
    both = tool(f"run_hlo_module --platform=cpu computation.hlo {broken}")
    assert both.code == 2 and "computation: OK" in both.out
    assert f"broken: INVALID: {broken}:4:19: Unknown opcode: bogus" in both.out
    assert both.err == "1/2 runs miscompared.\n"
    assert_one_line_error(tool("run_hlo_module --input_format=bogus computation.hlo"),
                          contains="error: --input_format=bogus: unknown input format (one of hlo, pb, pbtxt, "
                                   "stablehlo, mhlo)")


def test_execution_options_are_read_as_text_or_binary(tool, work, tmp_path):
    """--execution_options_path: a binary ExecutionOptions as well as a textproto (the same
    refusal of its device assignment here); a folder is the OS's one line."""
    from mlirhlo_driver.ir import protos

    text = ("num_replicas: 1\nnum_partitions: 2\ndevice_assignment {\n  replica_count: 1\n  computation_count: 3\n"
            "  computation_devices { replica_device_ids: 1 }\n}\n")
    binary = tmp_path / "da.pb"
    binary.write_bytes(protos.parse_text(text, "xla.ExecutionOptions").SerializeToString())
    r = tool(f"multihost_hlo_runner --execution_options_path={binary} "
             "dump/module_0002.jit_rowsum.before_optimizations.txt")
    assert (r.code, r.err) == (2, f"error: {binary}: device_assignment is 1 replicas x 3 computations; "
                                  "the run has 1 x 2\n")
    assert_one_line_error(tool(f"multihost_hlo_runner --execution_options_path={tmp_path} computation.hlo"),
                          contains=f"error: {tmp_path}: Is a directory")


@pytest.mark.parametrize("entry_id", [0, 7])
def test_the_entry_computation_is_found_by_id_else_by_name(entry_id):
    """A proto may leave entry_computation_id unset (0): the entry is then the computation
    of that name, not the first one listed (XLA lists callees, like a reducer, first)."""
    from mlirhlo_driver.ir import decompose, protos

    msg = protos.message_class("xla.HloModuleProto")()
    msg.entry_computation_name = "main"
    msg.entry_computation_id = entry_id
    for cid, name in ((3, "add"), (7, "main"), (9, "other")):
        c = msg.computations.add()
        c.id, c.name = cid, name
    assert decompose._entry(msg).name == "main"
    msg.entry_computation_name = ""
    assert decompose._entry(msg).name == ("main" if entry_id else "other")  # else XLA's habit: the last


def test_infeed_and_outfeed_in_stablehlo_input_are_replaced(tool, work):
    """The same module as StableHLO text (no HLO proto read): its infeed and outfeed,
    both, are found in the text and replaced as for HLO input."""
    from mlirhlo_driver.inputs import loader
    from mlirhlo_driver.ir import emit

    (work / "feed_in.hlo").write_text(_FEED_F32_HLO)
    text = emit.stablehlo_text(loader.load(str(work / "feed_in.hlo"))[0].module)
    assert "stablehlo.infeed" in text and "stablehlo.outfeed" in text
    (work / "feed.mlir").write_text(text)
    r = tool("multihost_hlo_runner --log_output feed.mlir")
    assert r.code == 0, r.err
    assert "note: feed.mlir: 2 infeed/outfeed replaced (infeed gives zeros)" in r.err
    assert "output 0 = [0., 0., 0., 0.]" in r.out


def test_rewritten_modules_keep_xlas_instruction_ids():
    """An instruction the rewrites add takes XLA's 64-bit id: its computation's id in the
    upper 32 bits, a local id past the computation's own in the lower; ids stay unique."""
    from mlirhlo_driver._native import jaxlib
    from mlirhlo_driver.ir import decompose, protos

    def check(data: bytes) -> None:
        msg = protos.message_class("xla.HloModuleProto")()
        msg.ParseFromString(data)
        ids = []
        for c in msg.computations:
            assert all(i.id >> 32 == c.id for i in c.instructions), c.name
            ids += [i.id for i in c.instructions]
        assert len(ids) == len(set(ids))

    out, n = decompose.remove_infeed_outfeed(jaxlib.hlo_text_to_proto(_FEED_F32_HLO))
    assert n == 2
    check(out)
    out, n = decompose.flatten_while_loops(jaxlib.hlo_text_to_proto(_LOOP_HLO), 3)
    assert n == 1
    check(out)


def test_while_execution_count_note_counts_iterations_in_the_singular_and_plural(tool, work):
    """--while_execution_count=N notes "N iteration" for one and "N iterations" for more, and the loop runs N times."""
    (work / "loop_n.hlo").write_text(_LOOP_HLO)
    one = tool("multihost_hlo_runner --while_execution_count=1 --log_output loop_n.hlo")
    assert one.code == 0, one.err
    assert "note: loop_n.hlo: 1 while loop set to run 1 iteration\n" in one.err
    assert "output 0 = 1\n" in one.out
    two = tool("multihost_hlo_runner --while_execution_count=2 --log_output loop_n.hlo")
    assert two.code == 0, two.err
    assert "note: loop_n.hlo: 1 while loop set to run 2 iterations\n" in two.err
    assert "output 0 = 2\n" in two.out


# ------------------------------------------------ flag syntax: values, negation, errors, help

def _syntax_flags():
    from mlirhlo_driver.xla.cli_flags import Flag

    return [Flag("o", "str", "-", "Output file.", "FILE"), Flag("n", "int", 1, "Count.", "N"),
            Flag("list-stages", "bool", False, "List the stages."), Flag("run", "bool", True, "Run it."),
            Flag("tol", "float", 0.5, "Tolerance.", "X"), Flag("stage", "str", "", "Stage.", "NAME"),
            Flag("fmt", "str", "", "Format.", "NAME", choices=("Text", "Binary"))]


def _flag_error(argv: list[str], **kw) -> str:
    from mlirhlo_driver.errors import FlagError
    from mlirhlo_driver.xla.cli_flags import parse

    with pytest.raises(FlagError) as e:
        parse(argv, _syntax_flags(), **kw)
    return e.value.format("params")


def test_flag_values_are_converted_by_kind_and_bad_text_is_one_error():
    """bool takes true/false/1/0 in any case, int an optional sign and digits, float any number,
    a closed str one of its choices (case-insensitively, kept as typed); anything else names the flag."""
    from mlirhlo_driver.xla.cli_flags import parse

    flags = _syntax_flags()
    for text, want in (("true", True), ("TRUE", True), ("1", True), ("false", False), ("False", False), ("0", False)):
        assert parse([f"--run={text}"], flags)["run"] is want, text
    for text, want in (("+3", 3), ("-2", -2), ("07", 7), ("3 ", 3)):
        assert parse([f"--n={text}"], flags)["n"] == want, text
    assert parse(["--tol=1e-3"], flags)["tol"] == 1e-3 and parse(["--tol", "2"], flags)["tol"] == 2.0
    assert parse(["--fmt=tEXT"], flags)["fmt"] == "tEXT"
    assert _flag_error(["--run=yes"]) == "error: --run=yes: expected true or false"
    assert _flag_error(["--n=1.5"]) == "error: --n=1.5: expected an integer"
    assert _flag_error(["--n=x1"]) == "error: --n=x1: expected an integer"
    assert _flag_error(["--tol=abc"]) == "error: --tol=abc: expected a number"
    assert _flag_error(["--fmt=json"]) == "error: --fmt=json: expected one of Text, Binary"
    assert _flag_error(["--fmt=Binar"]) == "error: --fmt=Binar: expected one of Text, Binary (did you mean 'Binary'?)"


def test_parsed_flags_fill_defaults_and_record_what_was_given():
    """Defaults stand for flags not typed; ``given`` and was_given() hold exactly the typed ones,
    by either spelling of the name."""
    from mlirhlo_driver.xla.cli_flags import parse

    p = parse(["--list_stages", "-n", "4", "in.hlo"], _syntax_flags())
    assert p.values == {"o": "-", "n": 4, "list_stages": True, "run": True, "tol": 0.5, "stage": "", "fmt": ""}
    assert p.given == {"list_stages", "n"}
    assert p.was_given("list-stages") and p.was_given("list_stages") and p.was_given("n")
    assert not p.was_given("run") and not p.was_given("o")
    assert (p.positionals, p.xla_flags, p.help, p.version) == (["in.hlo"], {}, False, False)
    assert p["list-stages"] is True


def test_negated_booleans_are_bare_no_words_only():
    """``--noNAME`` sets a boolean false; it takes no ``=value`` and is no spelling of a non-boolean."""
    from mlirhlo_driver.xla.cli_flags import parse

    flags = _syntax_flags()
    p = parse(["--norun", "-nolist-stages"], flags)
    assert (p["run"], p["list_stages"], p.given) == (False, False, {"run", "list_stages"})
    assert parse(["--run"], flags)["run"] is True
    assert _flag_error(["--norun=true"]) == "error: unknown flag '--norun' (did you mean '--run'?)"
    assert _flag_error(["--norun=false"]) == "error: unknown flag '--norun' (did you mean '--run'?)"
    assert _flag_error(["--nostage"]) == "error: unknown flag '--nostage' (did you mean '--stage'?)"
    assert _flag_error(["--notol"]) == "error: unknown flag '--notol' (did you mean '--tol'?)"


def test_value_flags_take_the_next_word_unless_it_is_missing():
    """``--name value`` consumes exactly one word; at the end of the line it is an error showing
    the ``--name=METAVAR`` form. Booleans never take the next word."""
    from mlirhlo_driver.xla.cli_flags import parse

    p = parse(["--o", "out.txt", "a.hlo", "--run", "b.hlo", "-stage", "--weird", "c.hlo"], _syntax_flags())
    assert (p["o"], p["run"], p["stage"]) == ("out.txt", True, "--weird")
    assert p.positionals == ["a.hlo", "b.hlo", "c.hlo"]
    assert _flag_error(["a.hlo", "--o"]) == "error: --o needs a value (--o=FILE)"
    assert _flag_error(["--n"]) == "error: --n needs a value (--n=N)"


def test_help_version_dashes_and_numbers():
    """-h, --help, --helpfull and --version are switches (not with a value); '-', negative numbers
    and words after '--' are positionals."""
    from mlirhlo_driver.xla.cli_flags import parse

    flags = _syntax_flags()
    for word in ("-h", "--help", "-help", "--helpfull"):
        p = parse([word], flags)
        assert (p.help, p.version) == (True, False), word
    p = parse(["--version", "-", "-5", "-1x", "--", "--run", "-h"], flags)
    assert (p.help, p.version, p["run"]) == (False, True, True)
    assert p.positionals == ["-", "-5", "-1x", "--run", "-h"]
    assert _flag_error(["--help=1"]) == "error: --help takes no value (give --help alone)"
    assert _flag_error(["-version=true"]) == "error: -version takes no value (give -version alone)"


def test_unknown_flags_name_the_closest_known_ones_with_dashes():
    """An unknown word is one error: the flag as typed (less its value), the close names each
    with '--', else 'see --help'."""
    assert _flag_error(["--list-stage"]) == \
        "error: unknown flag '--list-stage' (did you mean '--list-stages', '--stage'?)"
    assert _flag_error(["-tools=1"]) == "error: unknown flag '-tools' (did you mean '--tol'?)"
    assert _flag_error(["--qqqqqq=1"]) == "error: unknown flag '--qqqqqq' (see --help)"
    assert _flag_error(["--verison"]) == "error: unknown flag '--verison' (did you mean '--version'?)"


def test_xla_debug_options_on_the_tool_line():
    """--xla_* flags typed from DebugOptions: a bare boolean is true, --noxla_* false (bare only),
    a non-boolean takes '=' or the next word; unknown names and wrong forms are one error each;
    a parser without them treats them as unknown."""
    from mlirhlo_driver.xla.cli_flags import parse

    flags = _syntax_flags()
    p = parse(["--xla_cpu_enable_fast_math=0", "--xla_gpu_dump_llvmir=TRUE", "--xla_dump_to", "d",
               "--xla_reduce_window_rewrite_base_length=-3", "-xla_gpu_experimental_collective_cse_distance_threshold",
               "+5", "in.hlo"], flags)
    assert p.xla_flags == {"xla_cpu_enable_fast_math": False, "xla_gpu_dump_llvmir": True, "xla_dump_to": "d",
                           "xla_reduce_window_rewrite_base_length": -3,
                           "xla_gpu_experimental_collective_cse_distance_threshold": 5}
    assert p.positionals == ["in.hlo"] and p.given == set()
    # a string stays as typed; a float is a number; an enum's text is read as XLA_FLAGS reads it (quotes dropped)
    typed = parse(["--xla_dump_to=123", "--xla_gpu_autotune_gemm_rtol=1e-2",
                   '--xla_step_marker_location="STEP_MARK_AT_TOP_LEVEL_WHILE_LOOP"'], flags).xla_flags
    assert typed == {"xla_dump_to": "123", "xla_gpu_autotune_gemm_rtol": 0.01,
                     "xla_step_marker_location": "STEP_MARK_AT_TOP_LEVEL_WHILE_LOOP"}
    assert _flag_error(["--xla_gpu_autotune_gemm_rtol=tight"]) == \
        "error: --xla_gpu_autotune_gemm_rtol=tight: expected a number"
    assert _flag_error(["--noxla_dump_to"]) == "error: --noxla_dump_to: --xla_dump_to is not a boolean"
    assert _flag_error(["--noxla_cpu_enable_fast_math=false"]) == \
        "error: unknown flag '--noxla_cpu_enable_fast_math' (see --help)"
    assert _flag_error(["--xla_dump_to"]) == "error: --xla_dump_to needs a value (--xla_dump_to=VALUE)"
    assert _flag_error(["--xla_reduce_window_rewrite_base_length=1.5"]) == \
        "error: --xla_reduce_window_rewrite_base_length=1.5: expected an integer"
    assert _flag_error(["--xla_cpu_enable_fast_math=maybe"]) == \
        "error: --xla_cpu_enable_fast_math=maybe: expected true or false"
    assert _flag_error(["--xla_cpu_enable_fast_mth"]).startswith(
        "error: unknown XLA flag '--xla_cpu_enable_fast_mth' (did you mean 'xla_cpu_enable_fast_math'")
    assert _flag_error(["--xla_dump_to=d"], xla_flags=False) == "error: unknown flag '--xla_dump_to' (see --help)"


def test_usage_text_lists_every_flag_with_its_metavariable_and_default():
    """The whole help text: synopsis, description, one aligned row per flag (booleans bare, with
    a default only when true; others NAME=METAVAR, with a default unless empty), XLA's rows last."""
    from mlirhlo_driver.xla.cli_flags import Flag, usage

    flags = _syntax_flags() + [Flag("on", "bool", True, "On."), Flag("opt", "str", None, "Optional.")]
    assert usage("tool", "[FLAGS] FILE", "\n  Does things.  \n", flags) == (
        "usage: tool [FLAGS] FILE\n"
        "\n"
        "Does things.\n"
        "\n"
        "Flags (--name=VALUE or --name VALUE; one dash or two; booleans also --noNAME):\n"
        "  --o=FILE          Output file. (default: -)\n"
        "  --n=N             Count. (default: 1)\n"
        "  --list-stages     List the stages.\n"
        "  --run             Run it. (default: true)\n"
        "  --tol=X           Tolerance. (default: 0.5)\n"
        "  --stage=NAME      Stage.\n"
        "  --fmt=NAME        Format. One of: Text, Binary.\n"
        "  --on              On. (default: true)\n"
        "  --opt=VALUE       Optional.\n"
        "  --xla_NAME=VALUE  Any XLA DebugOptions flag, anywhere on the line (booleans: --xla_NAME, --noxla_NAME).\n"
        "  --version         Print the version and exit.\n"
        "  --help            Print this help and exit.\n")
    wide = usage("t", "F", "D.", [Flag("a-very-long-flag-name", "int", 0, "Wide.", "COUNT")])
    assert "  --a-very-long-flag-name=COUNT  Wide. (default: 0)\n" in wide
    assert "  --help                         Print this help and exit.\n" in wide


def test_platform_spellings():
    """XLA's platform names in any case and spacing map to cpu, cuda or interpreter; others are
    an error naming the flag, with the close names or the list."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.xla.cli_flags import platform

    for name, want in (("CPU", "cpu"), (" Host ", "cpu"), ("gpu", "cuda"), ("Cuda", "cuda"),
                       ("INTERPRETER", "interpreter")):
        assert platform(name) == want, name
    with pytest.raises(DriverError) as e:
        platform("cpux", "reference_platform")
    assert e.value.format("params") == "error: --reference_platform=cpux: unknown platform (did you mean 'cpu'?)"
    with pytest.raises(DriverError) as e:
        platform("zzzzzz")
    assert e.value.format("params") == "error: --platform=zzzzzz: unknown platform (one of CPU, Host, CUDA, GPU, Interpreter)"


# ------------------------------------------------ the tools' own checks, before any compile

def test_hlo_opt_writes_one_binary_module_and_refuses_several(tool, work):
    """A binary stage (StableHLO bytecode) writes the one module's bytes as they are; two modules
    at such a stage are one error, not bytes run together."""
    r = tool("hlo-opt --stage=stablehlo-bytecode --o=one.mlirbc computation.hlo")
    assert (r.code, r.out, r.err) == (0, "", "")
    assert (work / "one.mlirbc").read_bytes().startswith(b"ML\xefR")
    text = (work / "computation.hlo").read_text()
    (work / "pair.hlo").write_text(text + "// -----\n" + text.replace("HloModule computation", "HloModule second"))
    line = assert_one_line_error(tool("hlo-opt --stage=stablehlo-bytecode --split-input-file --o=two.mlirbc pair.hlo"))
    assert line == "error: several modules at a binary stage: give one module"
    assert not (work / "two.mlirbc").exists()


def test_hlo_opt_xla_dump_to_with_passes_needs_no_platform(tool, work):
    """--xla_dump_to takes an XLA compile: --passes is one (no --platform needed, XLA's dump written)."""
    r = tool("hlo-opt --passes=reduce-window-rewriter --xla_dump_to=pass_dump input.hlo")
    assert r.code == 0, r.err
    assert r.out.startswith("HloModule doc_input")
    assert any(p.name.startswith("module_0001.doc_input.") for p in (work / "pass_dump").iterdir())


def test_hlo_opt_xla_dump_to_without_a_compile_is_refused_before_reading_input(tool):
    """--xla_dump_to with neither --platform nor --passes, or with --emit-proto, is refused up front:
    the one error names the missing compile, even for an input that does not exist."""
    line = assert_one_line_error(tool("hlo-opt --xla_dump_to=nowhere no_such_input.hlo"))
    assert line == "error: --xla_dump_to needs an XLA compile: give --platform or --passes"
    line = assert_one_line_error(tool("hlo-opt --emit-proto --platform=cpu --xla_dump_to=nowhere input.hlo"))
    assert line == "error: --xla_dump_to needs an XLA compile: give --platform or --passes"


@pytest.mark.parametrize("line, error", [
    ("--iterations=0 computation.hlo", "--iterations must be >= 1"),
    ("--iterations=-1 computation.hlo", "--iterations must be >= 1"),
    ("--abs_error_bound=-0.001 computation.hlo", "--abs_error_bound must be a number >= 0"),
    ("--rel_error_bound=-1 computation.hlo", "--rel_error_bound must be a number >= 0"),
    ("--rel_error_bound=nan computation.hlo", "--rel_error_bound must be a number >= 0"),
    ("--platform=Interpreter computation.hlo", "--platform=Interpreter: jaxlib has no XLA interpreter backend "
     "(the StableHLO interpreter is the reference: --reference_platform=Interpreter)"),
    ("--reference_platform=gpu computation.hlo", "--reference_platform=CUDA is not supported here (Interpreter or CPU)"),
    ("--reference_platform=tpux computation.hlo",
     "--reference_platform=tpux: unknown platform (one of CPU, Host, CUDA, GPU, Interpreter)"),
    ("--output_literals_file=o.pb computation.hlo computation.hlo",
     "--input_literals_file and --output_literals_file are for one module"),
    ("--isolate_instructions --output_literals_file=o.pb computation.hlo",
     "--isolate_instructions takes no --input_literals_file or --output_literals_file: each instruction runs on "
     "inputs of its own"),
    ("--platform=cpu", "no input module given (run_hlo_module [FLAGS] FILE; see --help)"),
])
def test_run_hlo_module_refuses_bad_flag_values(tool, line, error):
    """Each bad value is one error line, before anything compiles."""
    got = assert_one_line_error(tool(f"run_hlo_module {line}"))
    assert got.startswith(f"error: {error}"), got


def test_run_hlo_module_one_iteration_and_zero_bounds_are_accepted(tool):
    """The boundaries of the checks: --iterations=1 and error bounds of 0 run (no iteration banner);
    'default' is the StableHLO interpreter, which notes it runs no HLO passes either way."""
    r = tool("run_hlo_module --iterations=1 --abs_error_bound=0 --rel_error_bound=0.5 --reference_platform=DEFAULT "
             "--run_reference_hlo_passes=false computation.hlo")
    assert r.code == 0, r.out + r.err
    assert "computation: OK" in r.out and "reference (interpreter)" in r.out
    assert "=== Iteration" not in r.err
    assert r.err == ("note: --run_reference_hlo_passes=false: the StableHLO interpreter runs no HLO passes "
                     "either way\n0/1 runs miscompared.\n")


@pytest.mark.parametrize("line, error", [
    ("--device_type=GPU computation.hlo",
     "--device_type=gpu: SPMD runs here use host devices only (jaxlib 0.10.2) (--device_type=host)"),
    ("--num_nodes=0 computation.hlo", "--num_nodes must be >= 1 and --task_id 0 to --num_nodes - 1"),
    ("--num_nodes=2 --task_id=2 computation.hlo", "--num_nodes must be >= 1 and --task_id 0 to --num_nodes - 1"),
    ("--task_id=-1 computation.hlo", "--num_nodes must be >= 1 and --task_id 0 to --num_nodes - 1"),
    ("--task_id=1 computation.hlo", "--num_nodes must be >= 1 and --task_id 0 to --num_nodes - 1"),
    ("--num_nodes=2 --task_id=1 computation.hlo", "--num_nodes > 1 needs --address=HOST:PORT (task 0's coordinator) "
     "and --task_id (or --enable_mock_nccl to simulate the hosts on this machine)"),
    # task_id = num_nodes - 1 is in range: the check after it speaks
    ("--num_nodes=2 --task_id=1 --address=127.0.0.1:1 --norun computation.hlo", "--run=false is for one node"),
    ("--num_nodes=2 --enable_mock_nccl --norun --input_format=text computation.hlo", "--run=false is for one node"),
    ("--num_nodes=2 --enable_mock_nccl --norun computation.hlo computation.hlo",
     "a run over several nodes takes one module"),
    ("--num_nodes=2 --enable_mock_nccl --num_partitions=3 computation.hlo",
     "3 devices cannot be split evenly over 2 nodes"),
    ("--num_nodes=2 --enable_mock_nccl --profile_execution --while_execution_count=-1 computation.hlo",
     "--profile_execution, --while_execution_count: for a run on one node here (drop --num_nodes)"),
    ("--num_nodes=2 --enable_mock_nccl --dump_output_literal_to=x.txt --input_format=snapshot_proto_binary "
     "snapshot/module_0008.jit__lambda.snapshot.75718513.pb",
     "--dump_output_literal_to, --input_format: for a run on one node here (drop --num_nodes)"),
    ("--log_output", "no input module given (multihost_hlo_runner [FLAGS] FILE; see --help)"),
    ("--dump_output_literal_to=out.lit computation.hlo",
     "--dump_output_literal_to=out.lit: the name must end in .txt (XLA writes literal text)"),
    ("--dump_output_literal_to=out.txt computation.hlo computation.hlo",
     "--dump_output_literal_to is for one input module"),
    ("--input_format=snapshot_proto_binary computation.hlo", "computation.hlo: not an HloSnapshot (binary) "
     "(--input_format=text, proto_text or proto_binary for a module)"),
])
def test_multihost_refuses_bad_flag_values(tool, line, error):
    """Each bad combination is one error line, before any device is made or process launched."""
    r = tool(f"multihost_hlo_runner {line}")
    assert (r.code, r.out) == (2, "")
    assert [ln for ln in r.err.splitlines() if not ln.startswith("note: ")] == [f"error: {error}"], r.err


def test_ptx_opt_refuses_other_xla_flags_and_file_counts(tool):
    """ptx-opt reads two XLA flags only, and exactly one input."""
    assert assert_one_line_error(tool("ptx-opt --xla_cpu_enable_fast_math input.ll")) == (
        "error: --xla_cpu_enable_fast_math has no effect on ptx-opt "
        "(ptx-opt reads --xla_dump_to and --xla_gpu_dump_llvmir)")
    for line in ("ptx-opt input.ll input.ll", "ptx-opt --arch=9.0"):
        assert assert_one_line_error(tool(line)) == \
            "error: give one LLVM IR file ('-' for stdin) (ptx-opt --arch=9.0 FILE)"


def test_input_format_names():
    """XLA's --input_format/--format words, any case, name the loader's formats; empty is 'detect'."""
    from mlirhlo_driver.commands import xla_tools
    from mlirhlo_driver.errors import DriverError

    want = {"hlo": "hlo", "TXT": "hlo", "text": "hlo", "pb": "hlo-proto", "Proto_Binary": "hlo-proto",
            "pbtxt": "hlo-pbtxt", "proto_text": "hlo-pbtxt", "stablehlo": "mlir", "MHLO": "mlir", "mlir": "mlir",
            "bytecode": "bytecode", "vhlo": "vhlo"}
    assert {name: xla_tools._input_format(name, "format") for name in want} == want
    assert xla_tools._input_format("", "format") is None
    with pytest.raises(DriverError) as e:
        xla_tools._input_format("pbtx", "input_format")
    assert e.value.format("params").startswith("error: --input_format=pbtx: unknown input format (did you mean 'pbtxt'")


def test_header_counts_come_from_the_first_64_kib_header_line(tmp_path):
    """replica_count and num_partitions of the HloModule line (each alone, or neither), found within
    the file's first 64 KiB; a missing file or no header is (None, None)."""
    from mlirhlo_driver.execute.runner_files import header_counts as _header_counts

    def counts(text: str):
        path = tmp_path / "m.hlo"
        path.write_text(text)
        return _header_counts(str(path))

    assert counts("HloModule m, replica_count=2, num_partitions=4\n\nENTRY e {}\n") == (2, 4)
    assert counts("// a comment\nHloModule m, num_partitions=8\nreplica_count=3\n") == (None, 8)
    assert counts("HloModule m, replica_count=16\n") == (16, None)
    assert counts("HloModule m, xreplica_count=2\n") == (None, None)
    assert counts("module @m {}\n") == (None, None)
    header = "HloModule m, replica_count=2\n"  # its count ends at byte 28
    fits = "/" * ((1 << 16) - 29) + "\n"  # the count's last digit is the 65536th byte
    assert counts(fits + header) == (2, None)
    assert counts("/" + fits + header) == (None, None)  # cut short at 64 KiB: no digit left
    assert _header_counts(str(tmp_path / "missing.hlo")) == (None, None)


def test_xla_dump_files_are_named_per_module_number(tmp_path):
    """write_xla_dump: XLA's ``module_NNNN.`` prefix renumbered to this command's module, other keys
    prefixed with ``module_NNNN.<name>.``; the bytes as given."""
    from types import SimpleNamespace

    from mlirhlo_driver.xla.tool_outputs import write_xla_dump

    art = SimpleNamespace(hlo_module_name="jit_f", files={
        "module_0042.jit_f.before_optimizations.txt": b"before", "debug_options": b"opts"})
    write_xla_dump(str(tmp_path), art, 7)
    write_xla_dump(str(tmp_path), art, 12345)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "module_0007.jit_f.before_optimizations.txt": b"before", "module_0007.jit_f.debug_options": b"opts",
        "module_12345.jit_f.before_optimizations.txt": b"before", "module_12345.jit_f.debug_options": b"opts"}


def test_dump_output_literals_names_each_device_and_literal(tmp_path):
    """XLA's DumpOutput naming: task, device and literal inserted before the last '.' part, each
    file one literal's text; devices in order."""
    from types import SimpleNamespace

    import numpy as np

    from mlirhlo_driver.execute.runner_files import dump_output_literals as _dump_output_literals

    report = SimpleNamespace(device_outputs={
        1: [np.array([1, 2], np.int32)], 0: [np.float32(0.5).reshape(()), np.array([True])]})
    base = tmp_path / "out.v1.txt"
    written = _dump_output_literals(report, str(base), 3)
    names = [str(tmp_path / n) for n in ("out.v1.task_3.device_0.literal_0.txt", "out.v1.task_3.device_0.literal_1.txt",
                                         "out.v1.task_3.device_1.literal_0.txt")]
    assert written == names
    assert [Path(n).read_text() for n in names] == ["f32[] 0.5\n", "pred[1] {true}\n", "s32[2] {1, 2}\n"]


def test_execution_options_device_assignment_and_debug_options():
    """ExecutionOptions' device assignment maps logical device replica * partitions + partition to
    its id (none: empty); one naming a device twice is refused. Its scalar DebugOptions become
    flags (enums by name), less xla_dump_to."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute.runner_files import device_ids as _device_ids
    from mlirhlo_driver.execute.runner_files import execution_debug_flags as _execution_debug_flags
    from mlirhlo_driver.ir import protos

    def eo(text: str):
        return protos.parse_text(text, "xla.ExecutionOptions")

    two_by_two = eo("device_assignment { replica_count: 2 computation_count: 2 "
                    "computation_devices { replica_device_ids: [3, 1] } "
                    "computation_devices { replica_device_ids: [2, 0] } }")
    assert _device_ids(two_by_two, 2, 2, "eo") == (3, 2, 1, 0)
    assert _device_ids(eo("num_replicas: 2"), 2, 1, "eo") == ()
    with pytest.raises(DriverError) as e:
        _device_ids(two_by_two, 2, 1, "eo")
    assert e.value.format("params") == "error: eo: device_assignment is 2 replicas x 2 computations; the run has 2 x 1"
    twice = eo("device_assignment { replica_count: 1 computation_count: 2 "
               "computation_devices { replica_device_ids: 1 } computation_devices { replica_device_ids: 1 } }")
    with pytest.raises(DriverError) as e:
        _device_ids(twice, 1, 2, "eo")
    assert e.value.format("params") == "error: eo: device_assignment names a device twice"
    flags = _execution_debug_flags(eo('debug_options { xla_cpu_enable_fast_math: true xla_dump_to: "d" '
                                      "xla_backend_optimization_level: 2 xla_step_marker_location: "
                                      "STEP_MARK_AT_TOP_LEVEL_WHILE_LOOP }"), "eo")
    assert flags == {"xla_cpu_enable_fast_math": True, "xla_backend_optimization_level": 2,
                     "xla_step_marker_location": "STEP_MARK_AT_TOP_LEVEL_WHILE_LOOP"}


def test_hlo_opt_without_a_platform(tool):
    """With no --platform, --list-stages lists only the module itself (hlo), an XLA stage asks for
    a platform, and a line with no input file is one error."""
    r = tool("hlo-opt --list-stages")
    assert (r.code, r.out, r.err) == (0, "hlo\n", "")
    assert assert_one_line_error(tool("hlo-opt --stage=llvm input.hlo")) == \
        "error: stage 'llvm' is produced by XLA: give --platform cpu|cuda"
    assert assert_one_line_error(tool("hlo-opt --platform=cpu")) == \
        "error: no input file given (hlo-opt [FLAGS] FILE; see --help)"
