"""batch/fit.py as a library: XLA's refusal read into bytes, the rows' figures, the table, the
JSON, the exit code, the checks made before anything compiles, and what a compile is asked
for (stopped where it would start: no libtpu)."""

from __future__ import annotations

import json

import pytest

from mlirhlo_driver.batch import fit
from mlirhlo_driver.errors import DriverError
from tests.tpu.conftest import needs_libtpu

GIB = 1 << 30

ROWS = [
    fit.FitRow("tpu (v5e:1x1)", "tpu", 1, 1, int(32.00 * GIB), int(15.75 * GIB), False, source="xla-oom",
               detail="XLA: the total memory required for HLO temporaries (32.00G) exceeds available HBM (15.75G)"),
    fit.FitRow("tpu (v5p:2x2x1)", "tpu", 4, 1, 32 * GIB, 95 * GIB, True, xla_peak_bytes=16 * GIB,
               detail="95 GiB per chip"),
    fit.FitRow("tpu (v5e:1x1)", "tpu", 1, 4, None, 16 * GIB, None, source="error",
               detail="TPU topology v5e:1x1 has 1 device; this compile needs 4"),
]


def test_xlas_refusal_is_read_in_its_own_units():
    text = ("does not fit on tpu (v5e:1x1): the total memory required for HLO temporaries (51.53G) exceeds "
            "available HBM (15.75G)")
    assert fit.xla_refusal_bytes(text) == (int(51.53 * GIB), int(15.75 * GIB))
    assert fit.xla_refusal_bytes("required for arguments (512.00M) exceeds available HBM (1.50G)") == (
        512 << 20, int(1.5 * GIB))
    assert fit.xla_refusal_bytes("INVALID_ARGUMENT: something else") is None
    # libtpu 0.0.34's words (tpu.memory.translate_oom keeps them)
    assert fit.xla_refusal_bytes("does not fit on tpu (v5e:1x1): Used 16.00G of 15.75G hbm; exceeded hbm capacity "
                                 "by 258.00M") == (16 * GIB, int(15.75 * GIB))


def test_headroom_is_capacity_less_requirement_negative_when_over():
    assert ROWS[0].headroom_bytes == int(15.75 * GIB) - 32 * GIB < 0
    assert ROWS[1].headroom_bytes == 63 * GIB
    assert ROWS[2].headroom_bytes is None and ROWS[2].error


def test_the_table_has_a_row_per_target_and_xlas_words_under_it():
    text = fit.table(ROWS)
    lines = text.splitlines()
    assert "required/device" in lines[1] and "capacity/device" in lines[1] and "headroom" in lines[1]
    rows = [ln for ln in lines if ln.lstrip().startswith("tpu (")]
    assert len(rows) == 5  # three rows, then two lines of words (the refused and the failed targets)
    assert rows[0].endswith("no (XLA)") and "32.00 GiB" in rows[0] and "-16.25 GiB" in rows[0]
    assert rows[1].endswith("yes") and "63.00 GiB" in rows[1]
    assert rows[2].endswith("error")
    assert rows[3] == "tpu (v5e:1x1): XLA: the total memory required for HLO temporaries (32.00G) exceeds " \
                      "available HBM (15.75G)"


def test_the_json_is_one_object_per_target():
    data = json.loads(fit.to_json(ROWS))
    assert [t["target"] for t in data["targets"]] == [r.target for r in ROWS]
    assert set(data["targets"][1]) == {"target", "platform", "devices", "partitions", "required_bytes",
                                       "capacity_bytes", "headroom_bytes", "fits", "xla_peak_bytes", "temp_bytes",
                                       "argument_bytes", "source", "detail"}
    assert data["targets"][0]["fits"] is False and data["targets"][0]["source"] == "xla-oom"


def test_exit_code_is_1_only_for_a_failed_compile_or_with_require_fit():
    assert fit.exit_code(ROWS[:2]) == 0
    assert fit.exit_code(ROWS[:2], require_fit=True) == 1
    assert fit.exit_code(ROWS[1:2], require_fit=True) == 0
    assert fit.exit_code(ROWS) == 1


@pytest.mark.golden
def test_a_sweep_without_targets_is_refused():
    with pytest.raises(DriverError) as e:
        fit.resolve(None, None)
    assert e.value.format() == ("error: fit needs targets: give --tpu-topology and/or --gpu-spec "
                                "(--tpu-topology v5e:2x2,v5p:2x2x1 --gpu-spec h100_sxm)")


def test_targets_are_tpu_slices_then_gpu_specs_each_once():
    found = fit.resolve("v5e:2x2,v5litepod-4,v5p-8", "h100_sxm")
    assert [t.label() for t in found] == ["tpu (v5e:2x2)", "tpu (v5p:2x2x1)", "cuda (h100_sxm)"]


def test_bad_run_arguments_fail_before_any_compile():
    target = fit.resolve("v5e:2x2", None)
    with pytest.raises(DriverError, match="jobs"):
        fit.run("x.mlir", target, jobs=-1)
    with pytest.raises(DriverError, match="num_partitions"):
        fit.run("x.mlir", target, num_partitions=0)


def test_a_targets_compile_dumps_nothing_the_memory_stage_does_not_read(monkeypatch, tmp_path):
    """The memory figures come from the executable: a compile that dumped every format (the
    API's default: HLO text, HTML, DOT, proto, the executable's module) took 1.5x as long on a
    16-block training step. The compile is stopped where it would start (no libtpu here)."""
    from mlirhlo_driver.errors import CompileError
    from mlirhlo_driver.xla import backend

    seen = []

    def compile(module, spec, name="module", **kw):
        seen.append(spec.dumps)
        raise CompileError("stopped here")

    monkeypatch.setattr(backend, "compile", compile)
    monkeypatch.setattr(backend, "prestart", lambda *a, **k: None)
    path = tmp_path / "m.mlir"
    path.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n")
    rows = fit.run(str(path), fit.resolve("v5e:2x2", None), cache=False)
    assert [r.detail for r in rows] == ["stopped here"] and seen == [()]


def _record_tpu_processes(monkeypatch, events):
    """isolate's TPU processes recorded, not started: each one's environment as it would
    start, each compile's (a compile stops there), and each read of the program. Returns
    what forgets the started ones (a new process)."""
    from mlirhlo_driver._native import isolate
    from mlirhlo_driver.core import program
    from mlirhlo_driver.errors import CompileError

    def call(fn, args=(), kwargs=None, **kw):
        events.append(("compile", kw.get("env")))
        raise CompileError("stopped here")

    real_programs = program.programs

    def programs(*a, **k):
        events.append(("read", None))
        return real_programs(*a, **k)

    started: list = []

    def prestart(preload, env, *a):
        if env not in started:  # as isolate's: nothing where that process runs already
            started.append(env)
            events.append(("prestart", env))

    monkeypatch.setattr(isolate, "prestart", prestart)
    monkeypatch.setattr(isolate, "call", call)
    monkeypatch.setattr(program, "programs", programs)
    return started.clear


@needs_libtpu
def test_without_the_cache_the_tpu_process_starts_before_the_program_is_read(monkeypatch, tmp_path):
    """Every target then compiles: the TPU process (jax, libtpu: ~0.5 s) starts first, in this
    process and in each worker as it starts (worker_init), and it is the one the compiles use
    (the same environment). With the cache it starts only on a miss, after the read."""
    events: list = []
    new_process = _record_tpu_processes(monkeypatch, events)
    path = tmp_path / "m.mlir"
    # A shape no other test compiles: the session's stage cache holds no row of it.
    path.write_text("func.func @main(%a: tensor<13x7xf32>) -> tensor<13x7xf32> {\n"
                    "  return %a : tensor<13x7xf32>\n}\n")
    targets = fit.resolve("v5e:2x2", None)
    rows = fit.run(str(path), targets, cache=False)
    assert rows[0].detail == "stopped here"
    (first, env), read, compile = events
    assert (first, read[0], compile[0]) == ("prestart", "read", "compile") and env and compile[1] == env
    events.clear()
    new_process()
    fit.worker_init(fit.FitJob(str(path), cache=False, tpu=targets[0]))
    assert events == [("prestart", env)]
    events.clear()
    new_process()
    fit.run(str(path), targets, cache=True)
    assert [e[0] for e in events] == ["read", "prestart", "compile"]


@needs_libtpu
def test_a_file_is_read_once_for_targets_of_every_generation(monkeypatch, tmp_path):
    """A JAX function is lowered per generation (its TPU lowering rules); a file reads the same
    for every target, so a sweep over four generations reads it once, not four times."""
    events: list = []
    _record_tpu_processes(monkeypatch, events)
    path = tmp_path / "m.mlir"
    path.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n")
    rows = fit.run(str(path), fit.resolve("v5e:2x2,v5p:2x2x1,v6e:2x2,v4:2x2x1", None), cache=False)
    assert [r.detail for r in rows] == ["stopped here"] * 4
    assert [e[0] for e in events].count("read") == 1
    assert [e[0] for e in events].count("compile") == 4
