"""``run_hlo_module`` as a user runs it (XLA's flags and files).

Each ``test_doc_*`` runs one command line of XLA's tools documentation (docs/tools.md)
verbatim, with tests/data/xla_tools standing in for its files.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import DATA, FEED_HLO, assert_mentions, assert_one_line_error
from tests.e2e.conftest import assert_interrupted, interrupted_xla_tool


def _unexpanded_scatter() -> str:
    """What running a scatter that no XLA pass expanded gives on XLA:CPU: 0.10.2's XLA refuses
    it; jaxlib 0.12's aborts in codegen, without a word, in the helper where a compile with
    passes left out is tried first, and the run says so, naming the flag."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    return ("FAILED: XLA's compile aborted" if _jaxlib.jaxlib_at_least("0.12.0")
            else "FAILED: HLO opcode `scatter` is not supported by XLA:CPU")


_UNEXPANDED_SCATTER = _unexpanded_scatter()

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


@pytest.mark.slow
def test_run_hlo_module_takes_files_after_double_dash(capfd):
    # '--' ends the flags: what follows is kept as it is (here the module's path).
    from mlirhlo_driver.cli.xla import tools as xla_tools

    hlo = DATA / "xla_tools" / "computation.hlo"
    capfd.readouterr()
    try:
        xla_tools.run_hlo_module_main(["--platform=cpu", "--", str(hlo)])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "0/1 runs miscompared." in out + err


# ------------------------------------------------------------- run_hlo_module

@pytest.mark.slow
def test_doc_run_hlo_module_against_interpreter(tool):
    r = tool("run_hlo_module --platform=cpu --reference_platform=Interpreter computation.hlo")
    assert r.code == 0, r.err
    assert "computation: OK" in r.out and "reference (interpreter)" in r.out
    assert "0/1 runs miscompared." in r.err
    assert "note:" not in r.err  # the --isolate_instructions note is for that flag only


@pytest.mark.slow
def test_doc_run_hlo_module_dump_glob(tool, work):
    r = tool(f"run_hlo_module {work}/dump/*before_optimizations*")
    assert r.code == 0, r.err
    assert "module_0001.jit_scale: OK" in r.out and "module_0002.jit_rowsum: OK" in r.out
    assert "0/2 runs miscompared." in r.err  # the after_optimizations file is not picked up
    # num_partitions=2 from the second module's header: laid out over two host devices, as it says
    assert_mentions(r.err, "num_partitions=2", "2 host devices")
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


@pytest.mark.slow
def test_run_hlo_module_flags(tool):
    r = tool("run_hlo_module --platform Host --reference_platform= --print_literals "
             "--iterations=2 computation.hlo")
    assert r.code == 0, r.err
    assert "=== Iteration 2" in r.err and "output 0 (float32[8])" in r.out
    assert "inputs: random (seed 0)" in r.out and "inputs: random (seed 1)" in r.out  # new inputs each time
    assert "miscompared" not in r.err  # no reference, no comparison
    assert_one_line_error(tool("run_hlo_module --platform=TPU computation.hlo"), contains="no TPU is attached")
    raw = tool("run_hlo_module --reference_platform=CPU --run_test_hlo_passes=false input.hlo")
    assert raw.code == 1  # without XLA's passes nothing expands the scatter for XLA:CPU
    assert _UNEXPANDED_SCATTER in raw.out and "--xla_disable_all_hlo_passes=true" in raw.out
    # num_partitions=2 in its header: it ran partitioned, and spmd-run is how to run it again
    assert "reproduce: mlirhlo spmd-run input.hlo --num-partitions 2 --reference cpu" in raw.out


@pytest.mark.slow
def test_run_hlo_module_runs_what_jax_shards_partitioned(tool):
    """run_hlo_module on the sharded programs the installed jax writes: partitioned on as many
    host devices as the HLO header says (or, for an HloProto, its shardings name), laid out,
    run, gathered and matched with the reference."""
    from tests import sharded_programs

    progs = sharded_programs.programs(4)
    r = tool(f"run_hlo_module {progs['mlp']['hlo']} {progs['shard_map']['hlo.pb']} {progs['mlp_2d']['hlo']}")
    assert r.code == 0, r.out + r.err
    notes = [ln for ln in r.err.splitlines() if ln.startswith("note: ")]
    assert any(n.startswith(f"note: {progs['mlp']['hlo']}: num_partitions=4") for n in notes), r.err
    assert any(n.startswith(f"note: {progs['shard_map']['hlo.pb']}: ") and "4 devices" in n for n in notes), r.err
    assert "0/3 runs miscompared." in r.err
    assert r.out.count(": OK\n") == 3
    assert "  partitioned: 4 (1 replica x 4 partitions); partitioner: shardy\n" \
           "  parameter 0 x float32[8, 16]: {devices=[4,1]<=[4]}, [2, 16] per device" in r.out
    assert "  reference: the same module on the same 4 devices with replicated parameters and outputs" in r.out


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_run_hlo_module_replays_snapshot(tool, work):
    """An HloSnapshot from XLA's dump runs on the arguments it recorded (all ones, all 0.1)."""
    r = tool(f"run_hlo_module --print_literals {work}/snapshot/module_0008.jit__lambda.snapshot.75718513.pb")
    assert r.code == 0, r.err
    assert_mentions(r.err, "module_0008.jit__lambda.before_optimizations.txt", "recorded arguments")
    assert "output 0 (float32[3]): [2.656147, 2.656147, 2.656147]" in r.out  # the result XLA recorded


@pytest.mark.slow
def test_a_snapshot_alone_runs_its_own_module(tool, work, tmp_path):
    """Without XLA's before_optimizations dump beside it, the module the snapshot holds runs on
    the recorded arguments. That is XLA's optimized module: jaxlib 0.9's CPU runs its fusions,
    later ones refuse them (the HLO import drops their backend configs), said for what it is."""
    import shutil

    alone = tmp_path / "module_0008.jit__lambda.snapshot.75718513.pb"
    shutil.copy(work / "snapshot" / alone.name, alone)
    r = tool(f"run_hlo_module --print_literals {alone}")
    assert "recorded arguments" not in r.err
    assert r.out.startswith("module_0008.jit__lambda.snapshot.75718513: ")
    if r.code == 0:
        assert "output 0 (float32[3]): [2.656147, 2.656147, 2.656147]" in r.out
    else:
        assert r.code == 1, r.out
        assert_mentions(r.out.splitlines()[0], "XLA's output after its optimizations", "before_optimizations.txt")


@pytest.mark.slow
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
                          facts=("--isolate_instructions", "--input_literals_file"))


@pytest.mark.parametrize("flags, bounds", [("", (1e-3, 1e-3)),
                                           ("--abs_error_bound=0.5 --rel_error_bound=0 ", (0.5, 0.0))])
def test_run_hlo_module_judges_by_xlas_error_bounds(tool, monkeypatch, flags, bounds):
    """XLA's bounds (its defaults whatever the dtype, or those given) by XLA's ErrorSpec rule; a
    mismatch's reproducer is the run_hlo_module command, since mlirhlo run's --rtol/--atol judge
    by their sum and may let it pass."""
    from mlirhlo_driver.batch import run_report
    from mlirhlo_driver.execute import engine

    handed = []

    def execute_tasks(tasks, options, jobs, timeout, scheduler=None):
        handed.append(options)
        report = engine.ModuleReport(tasks[0].name, tasks[0].source)
        report.judge(engine.compare_outputs([np.float32([1.0015])], [np.float32([1.0])], options.rtol, options.atol,
                                            xla_error_spec=options.xla_error_spec))
        return [report]

    monkeypatch.setattr(run_report, "execute_tasks", execute_tasks)
    r = tool(f"run_hlo_module {flags}computation.hlo")
    [options] = handed
    assert (options.atol, options.rtol, options.xla_error_spec) == (*bounds, True)
    if bounds == (1e-3, 1e-3):  # 1.5e-3 off 1.0: beyond both bounds, within their sum
        assert r.code == 1 and "computation: MISMATCH" in r.out
        assert "tolerance 0.001 absolute or 0.001 relative" in r.out
        assert "reproduce: run_hlo_module computation.hlo" in r.out
    else:
        assert r.code == 0 and "computation: OK" in r.out, r.out


@pytest.mark.slow
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


@pytest.mark.slow
def test_run_hlo_module_input_flags(tool, work):
    zeros = tool("run_hlo_module --random_init_input_literals=false --print_literals --reference_platform= "
                 "computation.hlo")
    assert zeros.code == 0, zeros.err
    assert "inputs: zeros" in zeros.out and "output 0 (float32[8]): [0., 0., 0., 0., 0., 0., 0., 0.]" in zeros.out
    line = assert_one_line_error(tool("run_hlo_module --different_random_seeds computation.hlo"))
    assert_mentions(line, "seed")
    snap = f"{work}/snapshot/module_0008.jit__lambda.snapshot.75718513.pb"
    fake = tool(f"run_hlo_module --nodifferent_random_seeds --force_fake_data --print_literals {snap}")
    assert fake.code == 0, fake.err
    assert fake.err.startswith("note: ") and "fake data" in fake.err
    assert "inputs: random (seed 0)" in fake.out and "2.656147, 2.656147" not in fake.out


@pytest.mark.slow
def test_run_hlo_module_bad_modules_exit_2(tool, tmp_path):
    """An invalid module is exit 2, alone (one error line) or among good ones (its row)."""
    broken = tmp_path / "broken.hlo"
    broken.write_text("HloModule broken\n\nENTRY main {\n  ROOT x = f32[2] bogus()\n}\n")
    alone = tool(f"run_hlo_module --platform=cpu {broken}")
    assert_one_line_error(alone, at=f"{broken}:4:19", facts=("bogus",))
    both = tool(f"run_hlo_module --platform=cpu computation.hlo {broken}")
    assert both.code == 2 and "computation: OK" in both.out
    assert f"broken: INVALID: {broken}:4:19: Unknown opcode: bogus" in both.out
    assert both.err == "1/2 runs miscompared.\n"
    assert_one_line_error(tool("run_hlo_module --input_format=bogus computation.hlo"), at="--input_format=bogus",
                          facts=("hlo, pb, pbtxt, stablehlo, mhlo",))


def test_infeed_and_outfeed_in_stablehlo_input_are_replaced(tool, work):
    """The same module as StableHLO text (no HLO proto read): its infeed and outfeed,
    both, are found in the text and replaced as for HLO input."""
    from mlirhlo_driver.inputs import loader
    from mlirhlo_driver.ir import emit

    (work / "feed_in.hlo").write_text(FEED_HLO)
    text = emit.stablehlo_text(loader.load(str(work / "feed_in.hlo"))[0].module)
    assert "stablehlo.infeed" in text and "stablehlo.outfeed" in text
    (work / "feed.mlir").write_text(text)
    r = tool("multihost_hlo_runner --log_output feed.mlir")
    assert r.code == 0, r.err
    assert "note: feed.mlir: " in r.err and "2 infeed/outfeed" in r.err
    assert "output 0 = [0., 0., 0., 0.]" in r.out


@pytest.mark.parametrize("line, error", [
    ("--iterations=0 computation.hlo", "--iterations must be >= 1"),
    ("--iterations=-1 computation.hlo", "--iterations must be >= 1"),
    ("--abs_error_bound=-0.001 computation.hlo", "--abs_error_bound must be a number >= 0"),
    ("--rel_error_bound=-1 computation.hlo", "--rel_error_bound must be a number >= 0"),
    ("--rel_error_bound=nan computation.hlo", "--rel_error_bound must be a number >= 0"),
    ("--platform=Interpreter computation.hlo", "--platform=Interpreter: jaxlib has no XLA interpreter backend "
     "(the StableHLO interpreter is the reference: --reference_platform=Interpreter)"),
    ("--reference_platform=gpu computation.hlo", "--reference_platform=CUDA is not supported here (Interpreter or CPU)"),
    ("--reference_platform=zzz computation.hlo",
     "--reference_platform=zzz: unknown platform (one of CPU, Host, CUDA, GPU, TPU, Interpreter)"),
    ("--output_literals_file=o.pb computation.hlo computation.hlo",
     "--input_literals_file and --output_literals_file are for one module"),
    ("--isolate_instructions --output_literals_file=o.pb computation.hlo",
     "--isolate_instructions takes no --input_literals_file or --output_literals_file: each instruction runs on "
     "inputs of its own"),
    ("--platform=cpu", "no input module given (run_hlo_module [FLAGS] FILE; see --help)"),
])
@pytest.mark.golden
def test_run_hlo_module_refuses_bad_flag_values(tool, line, error):
    """Golden (run_hlo_module's own checks, commands/xla_tools.py's words): each bad value is one error line, before anything compiles."""
    got = assert_one_line_error(tool(f"run_hlo_module {line}"))
    assert got.startswith(f"error: {error}"), got


@pytest.mark.slow
def test_run_hlo_module_one_iteration_and_zero_bounds_are_accepted(tool):
    """The boundaries of the checks: --iterations=1 and error bounds of 0 run (no iteration banner);
    'default' is the StableHLO interpreter, which notes it runs no HLO passes either way."""
    r = tool("run_hlo_module --iterations=1 --abs_error_bound=0 --rel_error_bound=0.5 --reference_platform=DEFAULT "
             "--run_reference_hlo_passes=false computation.hlo")
    assert r.code == 0, r.out + r.err
    assert "computation: OK" in r.out and "reference (interpreter)" in r.out
    assert "=== Iteration" not in r.err
    note, summary = r.err.splitlines()
    assert note.startswith("note: --run_reference_hlo_passes=false: ") and summary == "0/1 runs miscompared."


@pytest.mark.slow
def test_ctrl_c_in_run_hlo_module_is_one_error_line(work):
    """Ctrl-C between the iterations of a long run: exit 130, one error line after the
    iterations' banners, no traceback."""
    r = interrupted_xla_tool("run_hlo_module", ["--iterations=1000000000", "--reference_platform=",
                                                "computation.hlo"], work, busy=b"=== Iteration 2")
    assert_interrupted(r)
