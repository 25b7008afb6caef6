"""What a run on a TPU chip is made of that needs no chip: the bfloat16-pass tolerance, a
dumped module's options, comparing a chip's optimized HLO with a device-less one, and the
one-line refusals where no chip is attached (tests/tpu/test_chip.py runs on one)."""

from __future__ import annotations

import numpy as np
import pytest
from jaxlib.mlir import ir

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.execute import engine, tpu_chip
from mlirhlo_driver.execute.run import RunOptions
from mlirhlo_driver.tpu import chips
from tests.conftest import DATA, assert_one_line_error

no_chip = pytest.mark.skipif(chips.attached() is not None, reason="a TPU chip is attached here")


def _dot(element: str = "f32") -> ir.Module:
    return ir.Module.parse(f"""
    func.func @main(%a: tensor<4x4x{element}>) -> tensor<4x4x{element}> {{
      %0 = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : (tensor<4x4x{element}>, tensor<4x4x{element}>) -> tensor<4x4x{element}>
      return %0 : tensor<4x4x{element}>
    }}""", _jaxlib.ir_context())


def _matmul_tanh_sum(m: int, k: int, n: int) -> ir.Module:
    return ir.Module.parse(f"""
    func.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{k}x{n}xf32>) -> tensor<{n}xf32> {{
      %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
      %1 = stablehlo.tanh %0 : tensor<{m}x{n}xf32>
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<{m}x{n}xf32>, tensor<f32>) -> tensor<{n}xf32>
      return %2 : tensor<{n}xf32>
    }}""", _jaxlib.ir_context())


def test_a_tpu_runs_reference_computes_default_precision_products_as_the_chip_does():
    judged = engine.platform_reference("tpu", _dot(), None)
    assert judged.floor == 0.0 and "rounds their operands to bfloat16" in judged.note
    assert "--precision highest" in judged.note
    import ml_dtypes

    rng = np.random.default_rng(0)
    # the dump test's step (tanh(x @ w).sum(0)): where XLA CPU once dropped a bf16 convert round trip
    # as excess precision (measured: its reference was float32's product, 0.17 off the chip's)
    for module, shapes, after in ((_dot(), [(4, 4)], lambda p: p),
                                  (_matmul_tanh_sum(64, 256, 128), [(64, 256), (256, 128)], lambda p: np.tanh(p).sum(axis=0))):
        judged = engine.platform_reference("tpu", module, None)
        arrays = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
        rounded = [a.astype(ml_dtypes.bfloat16).astype(np.float64) for a in arrays]
        want = after(rounded[0] @ rounded[-1])  # one bfloat16 pass: exact products, float32 sums
        for reference in ("cpu", "interpreter"):
            (got,), _ = engine.run_reference(judged.module, arrays, reference)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=reference)
            assert np.abs(got - after(arrays[0].astype(np.float64) @ arrays[-1])).max() > 1e-4  # not float32's
    for platform, module, precision in (("tpu", _dot(), "highest"), ("cpu", _dot(), None), ("tpu", _dot("i32"), None)):
        judged = engine.platform_reference(platform, module, precision)
        assert judged.module is module and (judged.floor, judged.note) == (0.0, "")
    complex_ = engine.platform_reference("tpu", _dot("complex<f32>"), None)
    assert complex_.floor == engine.BF16_PASS_TOLERANCE and "complex" in complex_.note


def test_the_floor_widens_floats_only():
    expected = np.full(8, 3.0, np.float32)
    actual = expected + np.float32(0.05)  # 0.05 < 2**-5 * (1 + 3)
    assert engine.compare(actual, expected, 0, None, None).count == 8
    assert engine.compare(actual, expected, 0, None, None, floor=engine.BF16_PASS_TOLERANCE).count == 0
    ints = engine.compare_outputs([np.array([1, 2], np.int32)], [np.array([1, 3], np.int32)], None, None,
                                  floor=1.0)
    assert not ints.matched  # integers stay exact


def test_execute_timed_runs_n_times_and_gives_the_last_outputs():
    exe = engine.compile_one(_dot())
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    outputs, times = engine.execute_one(exe, [x], 3)
    assert len(times) == 3 and all(t > 0 for t in times)
    np.testing.assert_allclose(outputs[0], x @ x, rtol=1e-6)


def test_comparable_hlo_leaves_out_metadata_the_header_and_stack_frames():
    a = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}, allow_spmd_sharding_propagation_to_parameters={true}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0:T(128)} parameter(0), metadata={op_name="x" stack_frame_id=3}
  ROOT %t = f32[4]{0:T(128)} tanh(f32[4]{0:T(128)} %p), metadata={op_name="jit(f)/tanh" source_file="a.py"}
}

FileNames
1 "a.py"

StackFrames
1 1 1 0
"""
    b = a.replace("stack_frame_id=3", "stack_frame_id=7").replace('"a.py"', '"b.py"').replace(
        ", allow_spmd_sharding_propagation_to_parameters={true}", "")
    assert tpu_chip.comparable_hlo(a) == tpu_chip.comparable_hlo(b)
    assert len(tpu_chip.comparable_hlo(a)) == 4  # ENTRY, two instructions, }
    assert tpu_chip.comparable_hlo(a) != tpu_chip.comparable_hlo(a.replace("T(128)} tanh", "T(256)} tanh"))


def test_a_module_from_a_tpu_dump_runs_with_the_options_it_was_compiled_with():
    from mlirhlo_driver.batch import run_pool
    from mlirhlo_driver.core.program import InputOptions, unit_programs

    source = sorted((DATA / "tpu" / "jax_dump").glob("*.before_optimizations.txt"))[0]
    loaded = unit_programs(str(source), InputOptions())[0]
    options, partitions, note = run_pool._as_dumped(loaded, RunOptions(platform="tpu"), 1)
    flags = dict(options.xla_flags)
    assert flags["xla_allow_excess_precision"] is False and partitions == 4
    assert "compiled as dumped" in note and "xla_allow_excess_precision" in note
    mine = RunOptions(platform="tpu", xla_flags=(("xla_allow_excess_precision", True),))
    assert dict(run_pool._as_dumped(loaded, mine, 1)[0].xla_flags)["xla_allow_excess_precision"] is True


@no_chip
@pytest.mark.parametrize("command", [
    ("run", "--platform", "tpu"),
    ("spmd-run", "--platform", "tpu"),
])
def test_without_a_chip_a_tpu_run_is_one_line(cli, command):
    r = cli(*command[:1], DATA / "mm_add.mlir", *command[1:])
    line = assert_one_line_error(r, code=2)
    assert "no TPU is attached" in line and "device-less" in line


def test_spmd_run_runs_on_host_devices_or_tpu_chips(cli):
    line = assert_one_line_error(cli("spmd-run", DATA / "mm_add.mlir", "--platform", "cuda"), code=2)
    assert "--platform cuda" in line and "tpu" in line


def test_run_refuses_an_unknown_precision(cli):
    line = assert_one_line_error(cli("run", DATA / "mm_add.mlir", "--precision", "hihgest"), code=2)
    assert "'highest'" in line


def test_precision_highest_runs_on_the_cpu_against_its_reference(cli):
    r = cli("run", DATA / "mm_add.mlir", "--precision", "highest", "--reference", "cpu", "--jobs", "0")
    assert r.code == 0, r.out + r.err


def test_precision_reaches_a_check_files_products(tmp_path, monkeypatch):
    # StableHLO's testdata on the chip: --precision highest once left the checked dots at DEFAULT
    checked = tmp_path / "dot_check.mlir"
    checked.write_text("""
    func.func @main() -> tensor<i1> {
      %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
      %d = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
      %e = stablehlo.constant dense<[[7.0, 10.0], [15.0, 22.0]]> : tensor<2x2xf32>
      %r = stablehlo.custom_call @check.expect_almost_eq(%d, %e) {has_side_effect = true} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<i1>
      return %r : tensor<i1>
    }""")
    from mlirhlo_driver.execute import run
    from mlirhlo_driver.inputs import loader

    seen = []
    real = engine.run_plan
    monkeypatch.setattr(engine, "run_plan", lambda plan, *a, **k: seen.append(str(plan.module)) or real(plan, *a, **k))
    module = loader.load(str(checked))[0].module
    report = run.run_compared(module, "dot_check", str(checked), RunOptions(platform="cpu", precision="highest"))
    assert report.status == "ok", report.message
    assert seen and "HIGHEST" in seen[0]


def test_several_default_precision_products_are_judged_within_a_bfloat16_step():
    two = ir.Module.parse("""
    func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
      %0 = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %1 = stablehlo.dot_general %0, %a, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      return %1 : tensor<4x4xf32>
    }""", _jaxlib.ir_context())
    judged = engine.platform_reference("tpu", two, None)
    assert judged.floor == engine.BF16_STEP and "one bfloat16 step" in judged.note
    assert engine.platform_reference("tpu", _dot(), None).floor == 0.0
