"""``multihost_hlo_runner`` (and ``hlo_runner_main``) as a user runs it.

Each ``test_doc_*`` runs one command line of XLA's tools documentation (docs/tools.md)
verbatim, with tests/data/xla_tools standing in for its files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FEED_HLO, LOOP_HLO, assert_mentions, assert_one_line_error
from tests.e2e.conftest import assert_interrupted, interrupted_xla_tool

BIN = Path(sys.executable).parent


def shell(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """The line as a user types it, with the installed console scripts on PATH."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# ------------------------------------------------------- multihost_hlo_runner

@pytest.mark.slow
def test_doc_multihost_dump_glob(work):
    # A fresh process: the host devices are created before jax starts.
    p = shell("multihost_hlo_runner /dump/*before_optimizations*".replace("/dump", str(work / "dump")), work)
    assert p.returncode == 0, p.stderr
    # num_partitions=2 from the second module's header, without a flag
    assert "devices: 2 (1 replica x 2 partitions)" in p.stdout
    assert "2/2 modules passed" in p.stdout


@pytest.mark.slow
def test_multihost_flags(work):
    rowsum = "dump/module_0002.jit_rowsum.before_optimizations.txt"
    p = shell(f"hlo_runner_main --norun --hlo_file={rowsum} && echo === && "
              f"multihost_hlo_runner -num_partitions 2 --hlo_argument_mode=uninitialized --log_output {rowsum}",
              work)
    assert p.returncode == 0, p.stderr
    compiled, ran = p.stdout.split("===\n")
    assert compiled.startswith("module_0002.jit_rowsum: COMPILED (1 replica x 2 partitions,")
    assert "inputs: zeros" in ran and "output 0 = [0., 0., 0., 0.]" in ran


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_multihost_runner_options(work):
    """ExecutionOptions (a swapped device assignment), output literals per device, profiles,
    snapshots, while-loop flattening and infeed removal, in one fresh process each."""
    (work / "loop.hlo").write_text(LOOP_HLO)
    (work / "feed.hlo").write_text(FEED_HLO)
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
    assert_mentions(p.stderr, "1 while loop", "3 iterations")
    assert "output 0 = [0., 0., 0., 0.]" in feed and "2 infeed/outfeed" in p.stderr
    assert p.stderr.count("infeed/outfeed") == 2  # the modules without any are left alone; the error below
    assert p.stderr.rstrip().splitlines()[-1].startswith("error: feed.hlo: the module has infeed/outfeed")


@pytest.mark.slow
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


@pytest.mark.slow
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
    assert_one_line_error(r, at="da.pbtxt", facts=("1 replicas x 3 computations", "1 x 2"))


@pytest.mark.golden
@pytest.mark.parametrize("field", ['xla_disable_hlo_passes: "algsimp"', "xla_gpu_disable_async_collectives: ALLREDUCE"])
def test_execution_options_with_a_list_field_is_refused(tool, work, field):
    """Golden (execute/runner_files.py's words, pinned only here). A repeated DebugOptions field (strings or enums) cannot be a per-compile flag: one line
    naming it, not a list handed to jaxlib."""
    (work / "lists.pbtxt").write_text(f"debug_options {{\n  {field}\n}}\n")
    r = tool("multihost_hlo_runner --execution_options_path=lists.pbtxt "
             "dump/module_0002.jit_rowsum.before_optimizations.txt")
    name = field.split(":")[0]
    assert (r.code, r.err) == (2, f"error: lists.pbtxt: debug_options.{name}: list and message fields cannot be "
                                  "passed to a jaxlib compile (per-compile options take scalars)\n")


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
    assert_one_line_error(r, at=str(binary), facts=("1 replicas x 3 computations", "1 x 2"))
    assert_one_line_error(tool(f"multihost_hlo_runner --execution_options_path={tmp_path} computation.hlo"),
                          contains=f"error: {tmp_path}: Is a directory")


def test_while_execution_count_note_counts_iterations_in_the_singular_and_plural(tool, work):
    """--while_execution_count=N notes "N iteration" for one and "N iterations" for more, and the loop runs N times."""
    (work / "loop_n.hlo").write_text(LOOP_HLO)
    one = tool("multihost_hlo_runner --while_execution_count=1 --log_output loop_n.hlo")
    assert one.code == 0, one.err
    assert "note: loop_n.hlo: " in one.err and "1 iteration\n" in one.err
    assert "output 0 = 1\n" in one.out
    two = tool("multihost_hlo_runner --while_execution_count=2 --log_output loop_n.hlo")
    assert two.code == 0, two.err
    assert "note: loop_n.hlo: " in two.err and "2 iterations\n" in two.err
    assert "output 0 = 2\n" in two.out


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
@pytest.mark.golden
def test_multihost_refuses_bad_flag_values(tool, line, error):
    """Golden (multihost_hlo_runner's own checks, commands/xla_tools.py's words): each bad combination is one error line, before any device is made or process launched."""
    r = tool(f"multihost_hlo_runner {line}")
    assert (r.code, r.out) == (2, "")
    assert [ln for ln in r.err.splitlines() if not ln.startswith("note: ")] == [f"error: {error}"], r.err


@pytest.mark.slow
def test_ctrl_c_in_multihost_hlo_runner_is_one_error_line(work):
    """Ctrl-C among the repeats of a run: exit 130, one error line, no traceback."""
    r = interrupted_xla_tool("multihost_hlo_runner", ["--num_repeats=1000000000", "computation.hlo"], work)
    assert_interrupted(r)
    assert r.out == ""
