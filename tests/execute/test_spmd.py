"""execute/spmd.py: the SPMD run's options, workers, supervisor and report; multi-process
failures (an unreachable coordinator, a process that never joins or dies) end within
the timeout.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import DATA, REPO, assert_mentions, readline_within

SPMD = DATA / "spmd"

MATMUL_AR = SPMD / "matmul_allreduce.partitioned.hlo"

PARTITIONED = ["--num-partitions", "4", "--is-spmd-partitioned-module"]


def spmd(*args: object, timeout: float = 120, cwd: Path = REPO) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "spmd-run", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def long_run(*extra: str) -> list[str]:
    """A run long enough to be interrupted mid-way."""
    return [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "spmd-run", str(MATMUL_AR), *PARTITIONED,
            "--num-repeats", "1000000", *extra]


def free_port() -> int:
    from mlirhlo_driver.execute.spmd import free_port as port

    return port()


# ------------------------------------------------- supervision, without jax

class FakeWorker:
    """A stand-in for a worker process: ``polls`` polls say running, then it exits ``code``
    (None: never); its stdout and stderr are the given bytes."""

    def __init__(self, code: int | None, polls: int = 0, out: bytes = b"", err: bytes = b"", pid: int = 4000):
        self.code, self.polls, self.pid = code, polls, pid
        self.returncode: int | None = None
        self.stdout, self.stderr = io.BytesIO(out), io.BytesIO(err)

    def poll(self) -> int | None:
        if self.polls > 0 or self.code is None:
            self.polls -= 1
            return None
        self.returncode = self.code
        return self.code


def run_supervised(monkeypatch, workers: list[FakeWorker], *, prefixed: bool = True,
                   deadline: float | None = None, on_start=None) -> int:
    """``supervise`` over fake workers (process i is workers[i]); nothing is really started or stopped."""
    from mlirhlo_driver.execute import spmd as spmd_mod

    monkeypatch.setattr(spmd_mod, "_spawn", lambda cfg: workers[cfg.process_id])
    stopped: list[list[FakeWorker]] = []
    monkeypatch.setattr(spmd_mod, "_stop", lambda procs: stopped.append(list(procs)))
    end = time.time() + 60 if deadline is None else deadline
    cfgs = [spmd_mod.WorkerConfig("m.hlo", None, None, {}, len(workers), i, "127.0.0.1:5", end, 7.0)
            for i in range(len(workers))]
    code = spmd_mod.supervise(cfgs, prefixed=prefixed, on_start=on_start)
    assert stopped == [workers], "every worker is stopped once at the end"
    return code


def supervisor_line(err: str) -> str:
    """The supervisor's own line: the last of stderr and its only 'error:' line (a worker's
    relayed lines carry their '[i] ' prefix)."""
    lines = err.splitlines()
    assert lines and lines[-1].startswith("error: "), err
    assert sum(ln.startswith("error: ") for ln in lines) == 1, err
    assert "Traceback" not in err
    return lines[-1]


class Interrupted(FakeWorker):
    """A worker whose poll is where Ctrl-C lands."""

    def poll(self):
        raise KeyboardInterrupt


_TERMINATING = (b"E1202 10:00:00.000000  77 c.cc:3] Task 0 heartbeat timeout\n"
                b"F1202 10:00:00.000000  77 c.cc:4] Terminating process because the service stopped\n")
_JOINED = b"process 1 of 2: joined the run at 127.0.0.1:5\n"


def bare_plan(params, param_layouts=None, reference_note="", partitioner=None):
    """A Plan with no module: enough for inputs, device arguments and the report."""
    from mlirhlo_driver.execute.spmd import Plan

    return Plan("m", "m.hlo", None, None, reference_note, partitioner, params, [], param_layouts, None)


class Dev:
    def __init__(self, id: int) -> None:
        self.id = id


@pytest.mark.slow
def test_unreachable_coordinator_is_a_clear_error_within_the_timeout():
    proc = spmd(MATMUL_AR, *PARTITIONED, "--num-processes", "2", "--process-id", "1",
                "--coordinator", f"127.0.0.1:{free_port()}", "--timeout", "3", timeout=60)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert_mentions(lines[0], "cannot reach", "coordinator", "127.0.0.1:")


@pytest.mark.slow
def test_a_process_that_never_joins_is_a_clear_error_within_the_timeout():
    proc = spmd(MATMUL_AR, *PARTITIONED, "--num-processes", "2", "--process-id", "0",
                "--coordinator", f"127.0.0.1:{free_port()}", "--timeout", "3", timeout=60)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: "), proc.stderr
    assert_mentions(last, "not all 2 processes joined", "coordinator")
    assert "Traceback" not in proc.stderr and "Check failure" not in proc.stderr


@pytest.mark.slow
def test_survivors_of_a_dead_process_report_it_within_the_timeout():
    address = f"127.0.0.1:{free_port()}"
    common = ("--num-processes", "2", "--coordinator", address, "--timeout", "20")
    p0 = subprocess.Popen(long_run(*common, "--process-id", "0"), cwd=REPO, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p1 = subprocess.Popen(long_run(*common, "--process-id", "1"), cwd=REPO, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert "joined the run" in readline_within(p0.stdout)
        assert "joined the run" in readline_within(p1.stdout)
        time.sleep(0.5)
        os.killpg(p1.pid, signal.SIGKILL)  # the process and its worker
        out, err = p0.communicate(timeout=40)
    finally:
        p0.kill()
        p1.kill()
    assert p0.returncode == 1
    # Either its collective's connection resets at once, or the coordinator
    # misses process 1's heartbeats; both say so in one line.
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "(it died or was killed)" in lines[0], err


@pytest.mark.golden
@pytest.mark.parametrize("returncode, native, why", [
    (-9, ["E1202 10:00:00.000000  77 coordination_service_agent.cc:120] RegisterTask timed out"],
     "not all 2 processes joined the coordinator at 127.0.0.1:5 within 30 s"),
    # the runtime's three spellings of a peer that went quiet (jaxlib 0.9's names the task by path)
    (1, ["E1202 10:00:00.000000  77 coordination_service.cc:300] The following tasks are unhealthy "
         "(stopped sending heartbeats): 1, 3"], "process 1, 3 stopped responding (it died or was killed)"),
    (1, ["E1202 10:00:00.000000  77 coordination_service.cc:300] Task 1 heartbeat timeout"],
     "process 1 stopped responding (it died or was killed)"),
    (1, ["E1202 10:00:00.000000  77 coordination_service.cc:300] The following tasks are unhealthy "
         "(stopped sending heartbeats): /job:jax_worker/replica:0/task:1"],
     "process 1 stopped responding (it died or was killed)"),
    (1, ["E1202 10:00:00.000000  77 client.cc:60] Socket closed"],
     "lost contact with the coordinator at 127.0.0.1:5 (process 0 died, or the network failed)"),
    (-6, ["I1202 10:00:00.000000  77 x.cc:1] fine", "F1202 10:00:00.000000  77 y.cc:2] Check failed: a == b"],
     "the process died (killed by SIGABRT): Check failed: a == b"),
    (3, [], "the process died (exit code 3)"),
])
def test_a_dead_process_is_explained_from_what_the_runtime_logged(returncode, native, why):
    """The golden of explain_death's explanations."""
    from mlirhlo_driver.execute.spmd import WorkerConfig, explain_death

    cfg = WorkerConfig("m.hlo", None, None, {}, 2, 0, "127.0.0.1:5", 0.0, 30.0)
    assert explain_death(returncode, native, cfg) == why


def test_run_times_are_listed_up_to_twenty_then_summarized():
    from mlirhlo_driver.execute.spmd import _times

    assert _times([1.0, 2.5]) == "1.000, 2.500"
    twenty = [float(i) for i in range(1, 21)]
    assert _times(twenty) == ", ".join(f"{t:.3f}" for t in twenty)
    assert _times([*twenty, 21.0]) == "min 1.000, median 11.000, max 21.000 over 21 runs"


def test_supervise_returns_process_0s_code_when_all_succeed_and_relays_with_prefixes(monkeypatch, capsys):
    """All workers exit 0: exit 0, no error line; each line relayed with its '[i] ' prefix, and
    on_start hears each process id with its pid."""
    started: list[tuple[int, int]] = []
    code = run_supervised(monkeypatch, [FakeWorker(0, 2, b"process 0 of 2: joined the run at x\nhello\n", pid=11),
                                        FakeWorker(0, 1, b"bye\n", b"a note\n", pid=12)],
                          on_start=lambda i, pid: started.append((i, pid)))
    assert code == 0
    assert started == [(0, 11), (1, 12)]
    out, err = capsys.readouterr()
    assert sorted(out.splitlines()) == ["[0] hello", "[0] process 0 of 2: joined the run at x", "[1] bye"]
    assert err == "[1] a note\n"


def test_supervise_unprefixed_single_worker_passes_its_code_and_output_through(monkeypatch, capsys):
    """One worker, no prefix: its own usage error (2) or failure (1) is its exit code, with no
    added error line (it said why itself)."""
    for code in (1, 2):
        assert run_supervised(monkeypatch, [FakeWorker(code, 1, b"x: MISMATCH\n", b"error: bad\n")],
                              prefixed=False) == code
        assert capsys.readouterr() == ("x: MISMATCH\n", "error: bad\n")


@pytest.mark.slow
def test_supervise_names_the_process_that_failed_and_stops_the_others(monkeypatch, capsys):
    """A worker that reports its own failure (exit 1 or 2): that code, one line naming it."""
    for code in (1, 2):
        assert run_supervised(monkeypatch, [FakeWorker(None), FakeWorker(code, 1, err=b"error: bad input\n")]) == code
        err = capsys.readouterr().err
        assert err.splitlines()[0] == "[1] error: bad input"  # its own words, relayed
        assert_mentions(supervisor_line(err), "process 1 ", "failed", "stopped the other processes")


@pytest.mark.parametrize("code, why", [
    (3, ("died", "exit code 3")),
    (-9, ("died", "SIGKILL")),
    (-6, ("died", "SIGABRT", "Check failed: a == b")),
], ids=["exit-code", "sigkill", "sigabrt"])
def test_supervise_explains_a_worker_that_died(monkeypatch, capsys, code, why):
    """A death (a signal, or an exit code above 2) is exit 1 and explained from the native log,
    which is kept out of the relayed output."""
    err = (b"W1202 10:00:00.000000  77 x.cc:1] a warning\n  its second line\n"
           b"F1202 10:00:00.000000  77 y.cc:2] Check failed: a == b\n") if code == -6 else b""
    assert run_supervised(monkeypatch, [FakeWorker(None), FakeWorker(code, 1, err=err)]) == 1
    line = supervisor_line(capsys.readouterr().err)
    assert line.startswith("error: process 1: "), line
    assert_mentions(line, *why, "stopped the other processes")
    assert "a warning" not in line and "its second line" not in line


@pytest.mark.parametrize("code", [3, -9])
def test_supervise_blames_a_peer_that_died_over_one_that_then_failed(monkeypatch, capsys, code):
    """Process 0 fails (1) as process 1 dies: the death is the cause reported."""
    assert run_supervised(monkeypatch, [FakeWorker(1), FakeWorker(code)]) == 1
    why = "exit code 3" if code == 3 else "SIGKILL"
    line = supervisor_line(capsys.readouterr().err)
    assert line.startswith("error: process 1: "), line
    assert_mentions(line, "died", why)


def test_supervise_blames_the_first_of_several_peers_that_died(monkeypatch, capsys):
    """Process 0 fails as processes 1 and 2 die: the first of those is reported."""
    assert run_supervised(monkeypatch, [FakeWorker(1), FakeWorker(3), FakeWorker(-9)]) == 1
    line = supervisor_line(capsys.readouterr().err)
    assert line.startswith("error: process 1: "), line
    assert_mentions(line, "died", "exit code 3")


@pytest.mark.parametrize("codes, code", [((2, 1), 2), ((1, 2), 1), ((1, 0), 1)])
def test_supervise_keeps_the_first_failure_when_the_others_only_failed_too(monkeypatch, capsys, codes, code):
    """Others that failed by themselves (1, 2) or succeeded (0) are no deaths: the first failure
    is named, with its code."""
    assert run_supervised(monkeypatch, [FakeWorker(c) for c in codes]) == code
    line = supervisor_line(capsys.readouterr().err)
    assert_mentions(line, "process 0 ", "failed")
    assert "died" not in line


@pytest.mark.slow
@pytest.mark.parametrize("line", [b"F1202 10:00:00.000000  77 y.cc:2] Check failed: a == b",
                                  b"E1202 10:00:00.000000  77 c.cc:4] Terminating process soon"])
def test_supervise_takes_exit_1_for_a_failure_without_an_f_terminating_line(monkeypatch, capsys, line):
    """Exit 1 is the worker's own failure unless an F line says 'Terminating process'."""
    assert run_supervised(monkeypatch, [FakeWorker(None), FakeWorker(1, 1, err=line + b"\n")]) == 1
    said = supervisor_line(capsys.readouterr().err)
    assert_mentions(said, "process 1 ", "failed")
    assert "died" not in said and "stopped responding" not in said


def test_supervise_stops_every_worker_on_ctrl_c(monkeypatch, capsys):
    """Ctrl-C while waiting: every worker stopped, exit 130, one 'interrupted' line."""
    from mlirhlo_driver._native import interrupts

    monkeypatch.setattr(interrupts, "_reported", False)
    assert run_supervised(monkeypatch, [FakeWorker(None), Interrupted(None)]) == 130
    assert_mentions(supervisor_line(capsys.readouterr().err), "interrupted", "every process")


@pytest.mark.slow
def test_supervise_treats_a_runtime_termination_with_exit_1_as_a_death(monkeypatch, capsys):
    """jaxlib 0.9 ends a process whose peer died with exit 1 and an F 'Terminating process' line."""
    assert run_supervised(monkeypatch, [FakeWorker(None), FakeWorker(1, 1, err=_TERMINATING)]) == 1
    line = supervisor_line(capsys.readouterr().err)
    assert line.startswith("error: process 1: "), line
    assert_mentions(line, "process 0 stopped responding", "died or was killed")


@pytest.mark.slow
def test_supervise_times_out_naming_who_never_joined_or_is_still_running(monkeypatch, capsys):
    """Past the deadline (plus a grace period): either not everyone joined, or the ones still
    running are named (one 'process', several 'processes')."""
    from mlirhlo_driver.execute.spmd import _GRACE_S

    soon = lambda: time.time() - _GRACE_S + 0.3  # noqa: E731
    joined = _JOINED
    assert run_supervised(monkeypatch, [FakeWorker(0), FakeWorker(None, out=joined)], deadline=soon()) == 1
    line = supervisor_line(capsys.readouterr().err)
    assert_mentions(line, "timed out", "7 s", "--timeout", "process 1 still running")
    both = [FakeWorker(None, out=joined.replace(b"1 of", b"0 of")), FakeWorker(None, out=joined)]
    assert run_supervised(monkeypatch, both, deadline=soon()) == 1
    assert_mentions(supervisor_line(capsys.readouterr().err), "processes 0, 1 still running")
    # Only a 'joined' line on stdout counts: other output, or the words on stderr, do not.
    quiet = FakeWorker(None, out=b"loading\n", err=joined)
    assert run_supervised(monkeypatch, [FakeWorker(None, out=joined), quiet], deadline=soon()) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "[1] " + joined.decode().strip()  # relayed, not counted
    assert_mentions(supervisor_line(err), "not all 2 processes joined", "127.0.0.1:5", "7 s", "--timeout")


def test_supervise_waits_a_grace_period_past_the_deadline(monkeypatch, capsys):
    """Workers that end just after their deadline, within the grace period, are no timeout."""
    assert run_supervised(monkeypatch, [FakeWorker(0, 3), FakeWorker(0, 3)], deadline=time.time()) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.golden
@pytest.mark.parametrize("workers, late, code, err", [
    (lambda: [FakeWorker(0), FakeWorker(1, 1, err=b"error: bad input\n")], False, 1,
     "[1] error: bad input\nerror: process 1 failed; stopped the other processes\n"),
    (lambda: [FakeWorker(2), FakeWorker(1)], False, 2, "error: process 0 failed; stopped the other processes\n"),
    (lambda: [FakeWorker(None), FakeWorker(3, 1)], False, 1,
     "error: process 1: the process died (exit code 3); stopped the other processes\n"),
    (lambda: [FakeWorker(None), FakeWorker(-9, 1)], False, 1,
     "error: process 1: the process died (killed by SIGKILL); stopped the other processes\n"),
    (lambda: [FakeWorker(None), FakeWorker(-6, 1, err=b"F1202 10:00:00.000000  77 y.cc:2] Check failed: a == b\n")],
     False, 1, "error: process 1: the process died (killed by SIGABRT): Check failed: a == b; "
               "stopped the other processes\n"),
    (lambda: [FakeWorker(0), FakeWorker(1, 1, err=_TERMINATING)], False, 1,
     "error: process 1: process 0 stopped responding (it died or was killed); stopped the other processes\n"),
    # past the deadline (and its grace period): most of a second each
    pytest.param(lambda: [FakeWorker(0), FakeWorker(None, out=_JOINED)], True, 1,
                 "error: timed out after 7 s (--timeout); process 1 still running (waiting on a process that "
                 "stopped responding?); stopped the other processes\n", marks=pytest.mark.slow, id="timeout"),
    pytest.param(lambda: [FakeWorker(None, out=_JOINED.replace(b"1 of", b"0 of")), FakeWorker(None, out=_JOINED)],
                 True, 1, "error: timed out after 7 s (--timeout); processes 0, 1 still running (waiting on a "
                 "process that stopped responding?); stopped the other processes\n",
                 marks=pytest.mark.slow, id="timeout-several"),
    pytest.param(lambda: [FakeWorker(None, out=_JOINED), FakeWorker(None)], True, 1,
                 "error: not all 2 processes joined the coordinator at 127.0.0.1:5 within 7 s (--timeout); "
                 "stopped the other processes\n", marks=pytest.mark.slow, id="not-joined"),
    pytest.param(lambda: [FakeWorker(None), Interrupted(None)], False, 130,
                 "error: interrupted; stopped every process\n", id="ctrl-c"),
], ids=["failed", "failed-first", "exit-code", "signal", "fatal-line", "peer-quiet", None, None, None, None])
def test_supervise_error_lines_exactly(monkeypatch, capsys, workers, late, code, err):
    """What the supervisor writes when a run of several processes fails: the golden of
    supervise's lines (the deaths' explanations: explain_death's table below)."""
    from mlirhlo_driver._native import interrupts
    from mlirhlo_driver.execute.spmd import _GRACE_S

    monkeypatch.setattr(interrupts, "_reported", False)
    deadline = time.time() - _GRACE_S + 0.3 if late else None
    assert run_supervised(monkeypatch, workers(), deadline=deadline) == code
    assert capsys.readouterr().err == err


def test_the_relay_drops_native_noise_and_keeps_native_logs_aside(monkeypatch, capsys):
    """gloo retries and stack traces are dropped; absl lines and their continuations are kept for
    explaining a death, not relayed; an 'error:' line ends such a block and is relayed."""
    err = (b"E1202 10:00:00.000000  77 x.cc:1] native trouble\n  more of it\n"
           b"error: the worker's own message\n"
           b"[Gloo] Rank 0 is connected to 1 peer ranks\n[external/gloo/x.cc:1] retry\n"
           # jaxlib 0.12's spelling of gloo's retries
           b"[external/xla++third_party_ext+gloo/gloo/transport/tcp/debug_logger.cc:25] ERROR failed to "
           b"connect, willRetry=1, retry=1, retryLimit=3, rank=0, size=4\n"
           b"    @     0x7f0011 foo\n*** Check failure stack trace: ***\n*** SIGABRT received at time=1\n"
           b"plain text\n")
    out = b"W1202 10:00:00.000000  77 y.cc:2] a stdout warning\nresult line\n  indented result\n"
    assert run_supervised(monkeypatch, [FakeWorker(0, 1, out, err)], prefixed=False) == 0
    assert capsys.readouterr() == ("result line\n  indented result\n",
                                   "error: the worker's own message\nplain text\n")


@pytest.mark.parametrize("spec, result", [
    ("0=devices=[4,1]<=[4]", (0, "{devices=[4,1]<=[4]}")),
    (" 12 = {devices=[4,1]<=[4]} ", (12, "{devices=[4,1]<=[4]}")),
    ("1={maximal device=0}", (1, "{maximal device=0}")),
])
def test_parse_arg_sharding_braces_the_sharding(spec, result):
    """PARAM=SHARDING, spaces and braces optional."""
    from mlirhlo_driver.execute.spmd import parse_arg_sharding

    assert parse_arg_sharding(spec) == result


@pytest.mark.golden
@pytest.mark.parametrize("spec, message", [
    ("0={devices=[4,1<=[4]}", "error: arg_sharding:15: malformed sharding '{devices=[4,1<=[4]}': expected ']' "
                              "to end sharding devices shape"),
    ("0=devices=[4,1<=[4]", "error: arg_sharding:14: malformed sharding 'devices=[4,1<=[4]': expected ']' "
                            "to end sharding devices shape"),
    ("12=bogus", "error: arg_sharding:4: malformed sharding 'bogus': unexpected token"),
    ("0={bogus}", "error: arg_sharding:3: malformed sharding '{bogus}': unexpected token"),
    ("x=devices=[4]<=[4]", "error: arg_sharding: expected PARAM=SHARDING, e.g. 0=devices=[4,1]<=[4]"),
    ("0=", "error: arg_sharding: expected PARAM=SHARDING, e.g. 0=devices=[4,1]<=[4]"),
])
def test_parse_arg_sharding_points_at_the_column_of_a_mistake(python_names, spec, message):
    """A malformed sharding names the column in the whole PARAM=SHARDING text (braced or not): the
    golden of parse_arg_sharding's errors."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.execute.spmd import parse_arg_sharding

    with pytest.raises(InputError) as e:
        parse_arg_sharding(spec)
    assert e.value.format("params") == message


def test_devices_per_process_limit_is_1024_per_process(python_names):
    """Up to 1024 devices in each process; beyond, one error saying how they divide."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute.spmd import SpmdOptions, check_devices_per_process

    for options, procs in ((SpmdOptions(num_partitions=1024), 1), (SpmdOptions(num_partitions=1024), 0),
                           (SpmdOptions(num_replicas=1024), 1), (SpmdOptions(num_partitions=2048), 2)):
        check_devices_per_process(options, procs)
    with pytest.raises(DriverError) as e:
        check_devices_per_process(SpmdOptions(num_partitions=1025), 1)
    assert_mentions(e.value.format("params"), "1025 partitions", "1025 devices", "at most 1024",
                    "more processes")
    with pytest.raises(DriverError) as e:
        check_devices_per_process(SpmdOptions(num_replicas=2050), 2)
    assert_mentions(e.value.format("params"), "2050 replicas", "2050 devices", "1025 in each of 2 processes",
                    "at most 1024")


@pytest.mark.golden
@pytest.mark.parametrize("kwargs, processes, message", [
    ({"num_partitions": 1025}, 1, "error: 1025 partitions x 1 replicas need 1025 devices; one process can create at "
                                  "most 1024 CPU devices (use fewer partitions or more processes)"),
    ({"num_replicas": 2050}, 2, "error: 1 partitions x 2050 replicas need 2050 devices, 1025 in each of 2 "
                                "processes; one process can create at most 1024 CPU devices (use fewer partitions "
                                "or more processes)"),
])
def test_devices_per_process_refusals_exactly(python_names, kwargs, processes, message):
    """More devices than one process can create: the golden of check_devices_per_process's error."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute.spmd import SpmdOptions, check_devices_per_process

    with pytest.raises(DriverError) as e:
        check_devices_per_process(SpmdOptions(**kwargs), processes)
    assert e.value.format("params") == message


@pytest.mark.golden
@pytest.mark.parametrize("kwargs, message", [
    ({"num_partitions": 0}, "error: num_partitions and num_replicas must be >= 1"),
    ({"num_replicas": 0}, "error: num_partitions and num_replicas must be >= 1"),
    ({"num_partitions": 2, "num_replicas": 2}, "error: replicas and partitions together cannot run with jaxlib "
                                               "0.10.2 (use --num-replicas or --num-partitions, not both)"),
    ({"num_repeats": 0}, "error: num_repeats must be >= 1"),
    ({"argument_mode": "zero"}, "error: unknown argument mode 'zero' (did you mean 'zeros'?)"),
    ({"argument_mode": "qqq"}, "error: unknown argument mode 'qqq' (random, shared-random, zeros, device-id)"),
    ({"partitioner": "gsmpd"}, "error: unknown partitioner 'gsmpd' (shardy or gspmd)"),
    ({"reference": "gpu"}, "error: unknown reference 'gpu' (cpu, interpreter or none)"),
])
def test_check_options_refuses_each_bad_option(python_names, kwargs, message):
    """Each usage error with its message: the golden of check_options' errors."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute.spmd import SpmdOptions, check_options

    with pytest.raises(DriverError) as e:
        check_options(SpmdOptions(**kwargs))
    assert e.value.format("params") == message


def test_check_options_accepts_every_valid_choice():
    """The smallest counts, each mode, partitioner and reference are fine."""
    from mlirhlo_driver.execute.spmd import ARGUMENT_MODES, SpmdOptions, check_options

    for mode in ARGUMENT_MODES:
        check_options(SpmdOptions(argument_mode=mode))
    for kwargs in ({"partitioner": "shardy"}, {"partitioner": "gspmd"}, {"reference": "none"},
                   {"num_partitions": 2}, {"num_replicas": 2}, {"num_repeats": 1}):
        check_options(SpmdOptions(**kwargs))


def test_options_describe_devices_and_per_device_modules():
    """Devices are replicas x partitions; backend-only is per-device only when partitioned."""
    from mlirhlo_driver.execute.spmd import SpmdOptions

    assert SpmdOptions(num_partitions=4).num_devices == 4 and SpmdOptions(num_replicas=3).num_devices == 3
    assert SpmdOptions(num_partitions=2, num_replicas=3).num_devices == 6
    assert SpmdOptions(is_spmd_partitioned_module=True).per_device_module
    assert SpmdOptions(run_xla_backend_only=True, num_partitions=2).per_device_module
    assert not SpmdOptions(run_xla_backend_only=True, num_partitions=1).per_device_module
    assert not SpmdOptions(num_partitions=4).per_device_module


@pytest.mark.parametrize("timeout, seconds", [(1, 3), (12, 3), (15.9, 3), (16, 4), (100, 25), (120, 30),
                                               (123.9, 30), (1000, 30)])
def test_heartbeat_is_a_quarter_of_the_timeout_within_3_to_30_seconds(timeout, seconds):
    """A silent process is called dead after timeout/4 seconds, never under 3 or over 30."""
    from mlirhlo_driver.execute.spmd import heartbeat_seconds

    assert heartbeat_seconds(timeout) == seconds


def test_worker_configs_carry_the_options_and_only_process_0_dumps(monkeypatch):
    """One config per process id; the deadline is now plus the timeout; options round-trip."""
    from mlirhlo_driver.execute import spmd as spmd_mod

    monkeypatch.setattr(spmd_mod.time, "time", lambda: 1000.0)
    options = spmd_mod.SpmdOptions(num_partitions=4, arg_shardings=((0, "{replicated}"),),
                                   xla_flags=(("xla_cpu_x", True),), seed=7, device_ids=(1, 0, 3, 2))
    cfgs = spmd_mod.worker_configs("m.hlo", "hlo", "f32[2]", options, num_processes=2, process_ids=[0, 1],
                                   coordinator="h:5", timeout=30.0, dump_output="o.npz")
    assert [(c.process_id, c.deadline, c.dump_output, c.num_processes) for c in cfgs] == \
        [(0, 1030.0, "o.npz", 2), (1, 1030.0, None, 2)]
    assert cfgs[1].input == "m.hlo" and cfgs[1].input_format == "hlo" and cfgs[1].args == "f32[2]"
    import json

    got = spmd_mod._options_from_dict(json.loads(json.dumps(cfgs[1].options)))
    assert got == options and hash(got) == hash(options)


def test_output_shards_travel_between_processes_as_raw_bytes():
    """Packed shards of any dtype unpack to the same arrays, in their per-device shapes."""
    from mlirhlo_driver.execute.engine import Layout, TensorSpec
    from mlirhlo_driver.execute.spmd import _pack, _unpack

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[1, -2]], dtype=np.int8)
    shards = {(0, 2): a, (0, 3): a + 1, (1, 3): b}
    specs = [TensorSpec((4, 3), "f32", "float32"), TensorSpec((1, 4), "i8", "int8")]
    layouts = [Layout("tiled", (4, 3), (2, 3), ((0, 0), (1, 0))), Layout("tiled", (1, 4), (1, 2), ((0, 0), (0, 1)))]
    got = _unpack(_pack(shards), layouts, specs)
    assert sorted(got) == sorted(shards)
    for k, v in shards.items():
        np.testing.assert_array_equal(got[k], v)
        assert got[k].dtype == v.dtype and got[k].shape == v.shape


def test_outputs_npz_adds_a_replica_axis_only_for_several_replicas():
    """out<i> per output; stacked [replica, ...] when there are several replicas."""
    from mlirhlo_driver.execute.engine import ModuleReport
    from mlirhlo_driver.execute.spmd import SpmdReport, outputs_npz

    a, b = np.arange(3.0), np.ones((2, 2))
    one = np.load(io.BytesIO(outputs_npz(SpmdReport(ModuleReport("m", "m"), outputs=[[a, b]]))))
    assert sorted(one.files) == ["out0", "out1"]
    np.testing.assert_array_equal(one["out0"], a)
    two = np.load(io.BytesIO(outputs_npz(SpmdReport(ModuleReport("m", "m"), outputs=[[a, b], [a + 1, b * 2]]))))
    np.testing.assert_array_equal(two["out0"], [a, a + 1])
    np.testing.assert_array_equal(two["out1"], [b, b * 2])
    assert np.load(io.BytesIO(outputs_npz(SpmdReport(ModuleReport("m", "m"))))).files == []


def test_format_report_lays_out_every_part():
    """The whole report text: status, devices, inputs, layouts, timings, notes, error, values."""
    from mlirhlo_driver.execute.engine import ModuleReport
    from mlirhlo_driver.execute.spmd import SpmdReport, format_report

    rep = ModuleReport("m", "m.hlo", status="mismatch", message="output 0: 1/3 differ", max_abs_error=0.25,
                       max_abs_error_at="replica 1 output 0 [0]",
                       compile_ms=12.34, run_ms=1.5, reference_ms=3.25, inputs_note="zeros")
    sr = SpmdReport(rep, devices="2 (2 replicas x 1 partition)", partitioner="none",
                    param_layouts=["0 x float32[3]: {replicated}"], result_layouts=["0 float32[3]: {replicated}"],
                    run_times=[1.0, 1.5, 2.0], notes=["reference: the same module on 1 device", ""],
                    outputs=[[np.array([1.0, 2.0, 3.0])], [np.array([0.5, 0.0, 1.0])]])
    assert format_report(sr) == (
        "m: MISMATCH: output 0: 1/3 differ\n"
        "  devices: 2 (2 replicas x 1 partition); partitioner: none\n"
        "  inputs: zeros\n"
        "  parameter 0 x float32[3]: {replicated}\n"
        "  output 0 float32[3]: {replicated}\n"
        "  compile 12.3 ms, run 1.500 ms (median of 3), reference 3.2 ms\n"
        "  run times (ms): 1.000, 1.500, 2.000\n"
        "  reference: the same module on 1 device\n"
        "  max abs error 0.25 at replica 1 output 0 [0]\n"
        "  replica 0 output 0 = [1., 2., 3.]\n"
        "  replica 1 output 0 = [0.5, 0. , 1. ]")
    one = SpmdReport(ModuleReport("m", "m.hlo", status="ran", compile_ms=2.0, run_ms=0.25),
                     devices="1 (1 replica x 1 partition)", partitioner="none", run_times=[0.25],
                     outputs=[[np.arange(21)]])  # one past the 20 shown in full
    assert format_report(one) == (
        "m: RAN\n"
        "  devices: 1 (1 replica x 1 partition); partitioner: none\n"
        "  compile 2.0 ms, run 0.250 ms\n"
        "  output 0 = [ 0,  1, ..., 19, 20]")
    assert format_report(one, values=False) == "m: RAN\n  devices: 1 (1 replica x 1 partition); partitioner: none\n" \
        "  compile 2.0 ms, run 0.250 ms"
    one.run_times = [0.5, 0.25]
    assert format_report(one, values=False).splitlines()[2:] == ["  compile 2.0 ms, run 0.250 ms (median of 2)",
                                                                 "  run times (ms): 0.500, 0.250"]


def test_make_inputs_gives_each_replica_its_seed_unless_shared(tmp_path):
    """Random inputs: seed+r for replica r (or one seed for all); zeros, device-id and .npz say so."""
    from mlirhlo_driver.execute.engine import TensorSpec
    from mlirhlo_driver.execute.spmd import SpmdOptions, make_inputs

    plan = bare_plan([TensorSpec((2, 3), "f32", "float32", "x"), TensorSpec((4,), "i32", "int32", "n")])
    alone = {s: make_inputs(plan, SpmdOptions(seed=s)) for s in (5, 6, 7)}
    assert_mentions(alone[5].note, "random", "seed 5")
    per = make_inputs(plan, SpmdOptions(num_replicas=3, seed=5))
    assert_mentions(per.note, "seeds 5..7", "per replica")
    for r in range(3):
        for got, want in zip(per.per_replica[r], alone[5 + r].per_replica[0]):
            np.testing.assert_array_equal(got, want)
    assert not np.array_equal(per.per_replica[0][0], per.per_replica[1][0])
    shared = make_inputs(plan, SpmdOptions(num_replicas=2, seed=5, argument_mode="shared-random"))
    assert_mentions(shared.note, "seed 5", "the same for every replica")
    assert len(shared.per_replica) == 2
    alone_shared = make_inputs(plan, SpmdOptions(seed=5, argument_mode="shared-random")).note
    assert "seed 5" in alone_shared and "replica" not in alone_shared
    for r in range(2):
        np.testing.assert_array_equal(shared.per_replica[r][0], alone[5].per_replica[0][0])
    zeros = make_inputs(plan, SpmdOptions(num_replicas=2, argument_mode="zeros"))
    assert "zeros" in zeros.note and len(zeros.per_replica) == 2
    assert [(a.dtype, a.shape, a.any()) for a in zeros.per_replica[1]] == \
        [(np.float32, (2, 3), False), (np.int32, (4,), False)]
    ids = make_inputs(plan, SpmdOptions(argument_mode="device-id"))
    assert ids.per_replica is None
    assert_mentions(ids.note, "device-id", "device id")
    path = npz(tmp_path / "in.npz", x=np.ones((2, 3), np.float32), n=np.arange(4, dtype=np.int32))
    given = make_inputs(plan, SpmdOptions(num_replicas=2, inputs_npz=str(path)))
    assert_mentions(given.note, str(path))
    assert len(given.per_replica) == 2
    np.testing.assert_array_equal(given.per_replica[1][1], np.arange(4))


def test_finish_without_a_reference_describes_the_run():
    """No reference: status 'ran' with the plan's note; devices, partitioner and layouts spelled out;
    disagreeing copies make it a mismatch."""
    from mlirhlo_driver.execute.engine import Executable, Inputs, Layout, TensorSpec
    from mlirhlo_driver.execute.spmd import SpmdOptions, finish

    spec = TensorSpec((4,), "f32", "float32", "x")
    lay = Layout("tiled", (4,), (1,), tiles=((0,), (1,), (2,), (3,)), text="{devices=[4]<=[4]}")
    plan = bare_plan([spec], param_layouts=[lay], reference_note="no reference (--reference none)")
    plan.results = [TensorSpec((4,), "f32", "float32")]
    compiled = Executable(None, [Dev(i) for i in range(4)], [lay], [Layout("replicated", (4,), (4,))], 5.0)
    out = finish(plan, compiled, Inputs(None, "ids"), [[np.zeros(4)]], [], [3.0, 1.0, 2.0],
                 SpmdOptions(num_partitions=4, reference="none"))
    assert (out.report.status, out.report.run_ms, out.report.inputs_note) == ("ran", 2.0, "ids")
    assert out.devices == "4 (1 replica x 4 partitions)"
    assert out.partitioner == "none: already partitioned"
    assert out.param_layouts == ["0 x float32[4]: {devices=[4]<=[4]}, [1] per device"]
    assert out.result_layouts == ["0 float32[4]: {replicated}"]
    assert out.notes == ["no reference (--reference none)"]
    assert out.run_times == [3.0, 1.0, 2.0]
    plan = bare_plan([spec], partitioner="gspmd")
    plan.results = []
    problem = "output 0: partitions 0 and 1 disagree"
    one = finish(plan, Executable(None, [Dev(0)], [Layout("replicated", (4,), (4,))], [], 1.0),
                 Inputs([[np.zeros(4)]], "zeros"), [[]], [problem], [1.0], SpmdOptions(reference="none"))
    assert one.devices == "1 (1 replica x 1 partition)" and one.partitioner == "gspmd"
    assert (one.report.status, one.report.message) == ("mismatch", problem)  # the problem, as found
    plan = bare_plan([spec])
    assert finish(plan, Executable(None, [Dev(0)], [Layout("replicated", (4,), (4,))], [], 1.0),
                  Inputs([[np.zeros(4)]], "zeros"), [[]], [], [1.0], SpmdOptions()).partitioner == "none"
    for kwargs, devices in (({"num_replicas": 2}, "2 (2 replicas x 1 partition)"),
                            ({"num_partitions": 2}, "2 (1 replica x 2 partitions)")):
        assert finish(bare_plan([]), Executable(None, [Dev(0), Dev(1)], [], [], 1.0), Inputs(None, "ids"),
                      [[], []], [], [1.0], SpmdOptions(reference="none", **kwargs)).devices == devices


def test_probe_waits_for_a_listening_coordinator_and_names_an_unreachable_one(python_names):
    """A listening port answers at once; a closed one past the deadline is one DistributedError."""
    import socket

    from mlirhlo_driver.errors import DistributedError
    from mlirhlo_driver.execute.spmd import _probe

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert _probe(f"127.0.0.1:{port}", time.time()) is None
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(DistributedError) as e:
        _probe(address, time.time())
    assert_mentions(e.value.format("params"), "cannot reach", address, "Connection refused", "process 0 running")


@pytest.mark.golden
def test_unreachable_coordinator_message_exactly(python_names):
    """The golden of _probe's error."""
    from mlirhlo_driver.errors import DistributedError
    from mlirhlo_driver.execute.spmd import _probe

    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(DistributedError) as e:
        _probe(address, time.time())
    assert e.value.format("params") == (f"error: cannot reach the coordinator at {address}: Connection refused "
                                        "(is process 0 running, and is the address right?)")
