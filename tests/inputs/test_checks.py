"""Self-checking StableHLO modules (inputs/checks.py): the check dialect rewrite and the
module's preparation for XLA.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from mlirhlo_driver.errors import InputError
from mlirhlo_driver.execute import engine
from mlirhlo_driver.inputs import checks
from mlirhlo_driver.inputs import loader as inputs
from mlirhlo_driver.inputs.checks import Check
from tests.conftest import REPO, assert_mentions


def prepare_checks(module, **kw):
    """inputs.checks.prepare with XLA CPU evaluating what numpy cannot read (as run and the stages do)."""
    from mlirhlo_driver.xla.backend import run_on_host

    return checks.prepare(module, evaluate=run_on_host, **kw)

DATA = REPO / "tests" / "data" / "checks"

FILES = sorted(p.name for p in DATA.glob("*.mlir"))

# Ops XLA keeps in each file's optimized HLO once the inputs are parameters
# (with the inputs left as constants, XLA folds them away).
COMPUTED = {
    "compare_select.mlir": ["compare", "select", "round-nearest-even", "clamp"],
    "control_flow.mlir": ["while", "conditional", "iota"],
    "convert.mlir": ["convert"],
    "dot_conv.mlir": ["dot", "convolution"],
    "elementwise_f32.mlir": ["exponential", "log", "tanh", "power", "rsqrt", "divide"],
    "gather_scatter.mlir": ["gather", "scatter", "dynamic-slice", "dynamic-update-slice"],
    "half_types.mlir": ["exponential", "tanh", "complex"],
    "integer_ops.mlir": ["popcnt", "count-leading-zeros", "shift-right-arithmetic", "remainder"],
    "reductions.mlir": ["reduce", "reduce-window"],
    "shapes.mlir": ["pad", "concatenate", "reverse"],
    "sort.mlir": ["sort"],
    "testdata_softplus.mlir": ["log-plus-one", "exponential"],
    "wide_types.mlir": ["atan2", "exponential", "shift-left"],
}


def load(name: str):
    [loaded] = inputs.load(str(DATA / name))
    return loaded.module


def parse(text: str, source: str = "t.mlir"):
    return inputs.parse_mlir(checks.preprocess_check_ops(text, source), source)


def compile_cpu(module):
    from mlirhlo_driver._native import jaxlib as _jaxlib

    devices = _jaxlib.cpu_devices()[:1]
    return _jaxlib.compile_executable(module, devices, _jaxlib.compile_options())


def entry_block(module):
    for op in module.body.operations:
        if op.operation.name == "func.func" and \
                str(op.operation.attributes["sym_name"]) == '"main"':
            return op.operation.regions[0].blocks[0]
    raise AssertionError("no @main")


def run(plan, args=()):
    return engine.run_plan(plan, list(args))[0]


# ================================================================ preprocess

DIALECT_SRC = """\
func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_eq %a, %a : tensor<2xf32>
  check.expect_eq_const %a, dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_almost_eq %a, %a, tolerance = 1.0e-03 : f64 : tensor<2xf32>
  check.expect_almost_eq_const %a, dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_close %a, %a, max_ulp_difference = 2, min_ulp_difference = 1 : tensor<2xf32>, tensor<2xf32>
  "check.expect_eq"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> ()
  check.expect_eq_const(%a, dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32>
  func.return
}
"""

DIALECT_OUT = """\
func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  stablehlo.custom_call @check.expect_eq(%a, %a) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
  %check_expected_4_3 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32> stablehlo.custom_call @check.expect_eq(%a, %check_expected_4_3) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> () loc("-":4:3)
  stablehlo.custom_call @check.expect_almost_eq(%a, %a) {has_side_effect = true, tolerance = 0.001 : f64} : (tensor<2xf32>, tensor<2xf32>) -> ()
  %check_expected_6_3 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32> stablehlo.custom_call @check.expect_almost_eq(%a, %check_expected_6_3) {has_side_effect = true, tolerance = 0.0001 : f64} : (tensor<2xf32>, tensor<2xf32>) -> () loc("-":6:3)
  stablehlo.custom_call @check.expect_close(%a, %a) {has_side_effect = true, max_ulp_difference = 2 : i64, min_ulp_difference = 1 : i64} : (tensor<2xf32>, tensor<2xf32>) -> ()
  stablehlo.custom_call @check.expect_eq(%a, %a) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
  %check_expected_9_3 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32> stablehlo.custom_call @check.expect_eq(%a, %check_expected_9_3) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> () loc("-":9:3)
  func.return
}
"""

# ------------------------------------------------ @inputs() values as parameters

CORPUS = DATA / "corpus"  # a sample of scripts/make_check_corpus.py's files

CORPUS_FILES = sorted(p.name for p in CORPUS.glob("*.mlir"))

# What each sample file keeps as a constant, and where its checked values come from:
# argmax over one element is index 0 whatever the input, so XLA computes it without
# reading the parameter.
KEPT = {"dynamic_reshape_f32_splat_shape_inputs.mlir": ["stablehlo.dynamic_reshape output shape"],
        "dynamic_broadcast_in_dim_i32_varied_shape_main.mlir": ["stablehlo.dynamic_broadcast_in_dim output dimensions"],
        "real_dynamic_slice_f32_splat_shape_inputs.mlir": [
            "stablehlo.real_dynamic_slice start indices", "stablehlo.real_dynamic_slice limit indices",
            "stablehlo.real_dynamic_slice strides"]}

FOLDED = {"argmax_f32_one.mlir"}


def _inputs_values(module):
    """The constants @inputs() returns (their types), read from the file's own module."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and str(op.operation.attributes["sym_name"]) == '"inputs"':
            return [str(t) for t in op.type.results]
    return []


def _optimized_deps(plan):
    from mlirhlo_driver.ir import hlo_dataflow

    exe = compile_cpu(plan.module)
    return hlo_dataflow.outputs_from_parameters(exe.hlo_modules()[0].as_serialized_hlo_module_proto())


CHECK_EQ_USED = """\
func.func public @main() -> (tensor<i1>, tensor<i1>) {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %2 = stablehlo.abs %0 : tensor<2xi32>
  %3 = stablehlo.custom_call @check.eq(%2, %0) : (tensor<2xi32>, tensor<2xi32>) -> tensor<i1>
  %4 = stablehlo.custom_call @check.eq(%1, %1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
  %5 = stablehlo.custom_call @check.eq(%1, %1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
  %6 = stablehlo.and %3, %4 : tensor<i1>
  return %6, %3 : tensor<i1>, tensor<i1>
}
"""


def test_preprocess_rewrites_every_form_exactly():
    assert checks.preprocess_check_ops(DIALECT_SRC, "t.mlir") == DIALECT_OUT


def test_preprocess_keeps_lines_and_checks_keep_their_locations():
    src = """\
func.func @f() {
  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  // check.expect_eq in a comment, and a custom call: neither is rewritten
  stablehlo.custom_call @check.expect_eq(%a, %a) {has_side_effect = true} : (tensor<3xi32>, tensor<3xi32>) -> ()
    check.expect_eq_const %a, dense<[1,
                                    2,
                                    3]> : tensor<3xi32>
  %b = stablehlo.add %a, %a : tensor<3xi32>
  "check.expect_almost_eq_const"(%a) <{value = dense<[1.0, 2.0]> : tensor<2xf32>,
      tolerance = 5.0e-01 : f64}> : (tensor<3xi32>) -> ()
  func.return
}
"""
    out = checks.preprocess_check_ops(src, "t.mlir")
    src_lines, out_lines = src.split("\n"), out.split("\n")
    assert len(src_lines) == len(out_lines)
    for i in (0, 1, 2, 3, 7, 10, 11):
        assert src_lines[i] == out_lines[i], i
    assert out_lines[4].startswith("    %check_expected_5_5 = stablehlo.constant dense<[1,")
    assert out_lines[6].endswith('stablehlo.custom_call @check.expect_eq(%a, %check_expected_5_5) '
                                 '{has_side_effect = true} : (tensor<3xi32>, tensor<3xi32>) -> () '
                                 'loc("-":5:5)')
    assert "tolerance = 0.5 : f64" in out_lines[8]
    assert out_lines[9] == ""
    assert checks.preprocess_check_ops("func.func @f() { return }", "x") == "func.func @f() { return }"


def test_check_locations_point_at_the_original_ops():
    src = """\
func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.exponential %a : tensor<2xf32>
      check.expect_close %b, %b, max_ulp_difference = 0 : tensor<2xf32>, tensor<2xf32>
  check.expect_almost_eq_const %b, dense<[2.7182817, 7.3890561]> : tensor<2xf32>
  func.return
}
"""
    plan = prepare_checks(parse(src), source="dir/t.mlir", line_offset=10)
    assert [c.location for c in plan.checks] == ["dir/t.mlir:14:7", "dir/t.mlir:15:3"]
    assert [c.kind for c in plan.checks] == ["expect_close", "expect_almost_eq"]
    assert plan.checks[1].options == {"tolerance": 1e-4}
    assert prepare_checks(parse(src)).checks[0].location == "4:7"  # no file known


@pytest.mark.parametrize("line, facts", [
    ("  check.expect_close %a, %a : tensor<2xf32>, tensor<2xf32>", ("check.expect_close", "max_ulp_difference")),
    ('  check.expect_serialized_eq %a, probe_id = "p0" : tensor<2xf32>',
     ("check.expect_serialized_eq", "only the interpreter")),
    ("  check.expect_frobnicated %a, %a : tensor<2xf32>",
     ("check.expect_frobnicated", "unknown check op", "check.expect_eq", "check.expect_close")),
    ("  %r = check.expect_eq %a, %a : tensor<2xf32>", ("check.expect_eq", "no results")),
    ("  check.expect_eq_const %a, [1.0, 2.0] : tensor<2xf32>", ("check.expect_eq_const", "elements attribute")),
], ids=["no-ulp-bound", "serialized", "unknown-op", "results", "no-elements"])
def test_preprocess_errors_carry_line_and_column(line, facts):
    src = ("func.func @main() {\n  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
           + line + "\n  func.return\n}\n")
    with pytest.raises(InputError) as info:
        checks.preprocess_check_ops(src, "bad.mlir", line_offset=4)
    err = info.value
    assert err.file == "bad.mlir" and err.line == 7
    assert err.col is not None and err.col >= 3
    assert err.format().startswith(f"error: bad.mlir:7:{err.col}: ")
    assert_mentions(err.message, "cannot rewrite", *facts)


def test_preprocess_error_column_is_where_parsing_stopped():
    src = "func.func @main() {\n  check.expect_eq %a %b : tensor<f32>\n}\n"
    with pytest.raises(InputError) as info:
        checks.preprocess_check_ops(src, "x.mlir")
    assert (info.value.line, info.value.col) == (2, 21)
    assert_mentions(info.value.message, "check.expect_eq", "expected ','")


_WITH_A = "func.func @main() {{\n  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>\n{}\n  func.return\n}}\n"
_OF_A = "func.func @f(%a: tensor<2xf32>) {{\n  {}\n  return\n}}\n"


@pytest.mark.golden
@pytest.mark.parametrize("src, line_offset, message", [
    (_WITH_A.format("  check.expect_close %a, %a : tensor<2xf32>, tensor<2xf32>"), 4,
     "error: bad.mlir:7:28: cannot rewrite check.expect_close: expected ', max_ulp_difference = N'"),
    (_WITH_A.format('  check.expect_serialized_eq %a, probe_id = "p0" : tensor<2xf32>'), 4,
     "error: bad.mlir:7:3: cannot rewrite check.expect_serialized_eq: needs tensors that the interpreter's probe "
     "instrumentation serialized (index.csv); only the interpreter runs it"),
    (_WITH_A.format("  check.expect_frobnicated %a, %a : tensor<2xf32>"), 4,
     "error: bad.mlir:7:3: cannot rewrite check.expect_frobnicated: unknown check op (expected one of "
     "check.expect_eq, check.expect_eq_const, check.expect_almost_eq, check.expect_almost_eq_const, "
     "check.expect_close)"),
    (_WITH_A.format("  %r = check.expect_eq %a, %a : tensor<2xf32>"), 4,
     "error: bad.mlir:7:8: cannot rewrite check.expect_eq: a check op has no results"),
    (_WITH_A.format("  check.expect_eq_const %a, [1.0, 2.0] : tensor<2xf32>"), 4,
     "error: bad.mlir:7:29: cannot rewrite check.expect_eq_const: expected an elements attribute like "
     "dense<...> : tensor<...>"),
    ("func.func @main() {\n  check.expect_eq %a %b : tensor<f32>\n}\n", 0,
     "error: bad.mlir:2:21: cannot rewrite check.expect_eq: expected ','"),
    (_OF_A.format('"check.expect_eq"(%a) : (tensor<2xf32>) -> ()'), 0,
     "error: bad.mlir:2:3: cannot rewrite check.expect_eq: expected 2 operands, found 1"),
    (_OF_A.format('"check.expect_eq"(%a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> ()'), 0,
     "error: bad.mlir:2:3: cannot rewrite check.expect_eq: expected 2 operand types, found 3"),
    (_OF_A.format('"check.expect_eq_const"(%a, %a) {value = dense<1.0> : tensor<2xf32>} : '
                  '(tensor<2xf32>, tensor<2xf32>) -> ()'), 0,
     "error: bad.mlir:2:3: cannot rewrite check.expect_eq_const: expected 1 operand, found 2"),
    (_OF_A.format('"check.expect_eq_const"(%a) {value = dense<1.0> : tensor<2xf32>} : '
                  '(tensor<2xf32>, tensor<2xf32>) -> ()'), 0,
     "error: bad.mlir:2:3: cannot rewrite check.expect_eq_const: expected 1 operand type, found 2"),
    ("func.func @f(%a: tensor<2xf32>) {\n  check.expect_eq_const %a, dense<[1.0, 2.0", 0,
     "error: bad.mlir:2:34: cannot rewrite check.expect_eq_const: unterminated '<'"),
    ("func.func @f(%a: tensor<2xf32>) {\n  check.expect_eq_const %a, dense<[1.0, 2.0)> : tensor<2xf32>\n}\n", 0,
     "error: bad.mlir:2:44: cannot rewrite check.expect_eq_const: unbalanced ')'"),
    (_OF_A.format('"check.expect_close"(%a, %a) {max_ulp_difference = zz} : (tensor<2xf32>, tensor<2xf32>) -> ()'), 0,
     "error: bad.mlir:2:54: cannot rewrite check.expect_close: malformed max_ulp_difference 'zz'"),
    (_OF_A.format("check.expect_close %a, %a, max_ulp_difference = zz : tensor<2xf32>"), 0,
     "error: bad.mlir:2:51: cannot rewrite check.expect_close: expected a number for max_ulp_difference"),
])
def test_check_rewrite_errors_exactly(src, line_offset, message):
    """Check-dialect text the rewrite cannot read: the golden of preprocess_check_ops' errors."""
    with pytest.raises(InputError) as info:
        checks.preprocess_check_ops(src, "bad.mlir", line_offset=line_offset)
    assert info.value.format() == message


def test_loader_rewrites_check_dialect_files(tmp_path):
    path = tmp_path / "split.mlir"
    path.write_text(
        "func.func @first() {\n"
        "  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>\n"
        "  %b = stablehlo.add %a, %a : tensor<2xi32>\n"
        "  check.expect_eq_const %b, dense<[2, 4]> : tensor<2xi32>\n"
        "  func.return\n"
        "}\n"
        "// -----\n"
        "func.func @second() {\n"
        "  %a = stablehlo.constant dense<[1.0, 4.0]> : tensor<2xf64>\n"
        "  %b = stablehlo.sqrt %a : tensor<2xf64>\n"
        "  check.expect_almost_eq_const %b, dense<[1.0, 2.5]> : tensor<2xf64>\n"
        "  func.return\n"
        "}\n")
    loaded = inputs.load(str(path), split_input_file=True)
    assert len(loaded) == 2
    assert "stablehlo.custom_call @check.expect_eq" in loaded[0].module.operation.get_asm()
    results = []
    for chunk in loaded:
        plan = prepare_checks(chunk.module, source=chunk.source, line_offset=chunk.line_offset)
        results += engine.evaluate_checks(plan, run(plan))
    assert [r.passed for r in results] == [True, False]
    assert results[1].location == f"{path}:11:3"
    assert_mentions(results[1].message, "1 of 2", "0.0001", "[1]", "actual=2.0", "expected=2.5")


def test_loader_reports_rewrite_errors_at_file_lines(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @a() {\n  func.return\n}\n// -----\nfunc.func @b() {\n"
                    "  check.expect_close %x, %y : tensor<f32>, tensor<f32>\n}\n")
    with pytest.raises(InputError) as info:
        inputs.load(str(path), split_input_file=True)
    assert (info.value.file, info.value.line) == (str(path), 6)


# =================================================================== prepare

@pytest.mark.parametrize("name", FILES)
def test_data_file_passes_with_constants_as_parameters(name):
    module = load(name)
    before = str(module)
    assert checks.has_checks(module)
    plan = prepare_checks(module, source=name)
    assert str(module) == before  # the input is not touched
    assert not plan.folded and plan.parameters
    assert not checks.has_checks(plan.module)
    block = entry_block(plan.module)
    assert len(block.arguments) == plan.num_original_params + len(plan.parameters)
    for arg, value in zip(list(block.arguments)[plan.num_original_params:], plan.parameters):
        assert list(value.shape) == list(arg.type.shape)
    hlo = compile_cpu(plan.module).hlo_modules()[0].to_string()
    for opcode in COMPUTED[name]:
        assert re.search(rf" {re.escape(opcode)}\(", hlo), (opcode, name)
    results = engine.evaluate_checks(plan, run(plan))
    assert results and len(results) == len(plan.checks)
    assert all(r.passed for r in results), [r for r in results if not r.passed]
    assert all(r.location.startswith(f"{name}:") for r in results)


@pytest.mark.parametrize("name", ["elementwise_f32.mlir", "wide_types.mlir", "integer_ops.mlir",
                                  "testdata_softplus.mlir"])
def test_fold_constants_keeps_constants_and_xla_folds_them(name):
    plan = prepare_checks(load(name), fold_constants=True)
    assert plan.folded and plan.parameters == []
    assert len(entry_block(plan.module).arguments) == 0
    hlo = compile_cpu(plan.module).hlo_modules()[0].to_string()
    assert not any(re.search(rf" {re.escape(op)}\(", hlo) for op in COMPUTED[name])
    assert all(r.passed for r in engine.evaluate_checks(plan, run(plan)))


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_every_inputs_value_reaches_xla_as_a_parameter(name):
    [loaded] = inputs.load(str(CORPUS / name))
    plan = prepare_checks(loaded.module, source=name)
    wanted = _inputs_values(loaded.module)
    kept_from_inputs = [k for k in plan.kept if k.from_inputs and not k.also_parameter]
    # Splat, one-element and scalar values too: each is a parameter unless kept, with a reason.
    assert len(plan.parameters) == len(wanted) - len(kept_from_inputs), (wanted, plan.kept)
    assert [r for k in plan.kept for r in k.reasons] == KEPT.get(name, [])
    assert all(k.location.startswith(f"{name}:") for k in plan.kept)
    args = list(entry_block(plan.module).arguments)
    assert [str(a.type) for a in args] == [str(t) for t in (
        [t for t in wanted if t not in [k.type for k in kept_from_inputs]] if "shape_main" not in name else wanted)]
    results = engine.evaluate_checks(plan, run(plan))
    assert results and all(r.passed for r in results), results
    provenance = checks.checked_values(plan, _optimized_deps(plan))
    assert provenance.state == ("folded" if name in FOLDED else "compiled"), provenance


@pytest.mark.parametrize("name", ["add_f32_splat.mlir", "scatter_add_f32_one_idx_main.mlir", "select_i1_splat.mlir"])
def test_fold_constants_leaves_the_checked_values_to_the_folder(name):
    [loaded] = inputs.load(str(CORPUS / name))
    plan = prepare_checks(loaded.module, source=name, fold_constants=True)
    assert plan.parameters == [] and plan.kept == []
    assert checks.checked_values(plan, _optimized_deps(plan)).state == "folded"
    assert all(r.passed for r in engine.evaluate_checks(plan, run(plan)))


def test_a_constant_used_as_data_and_as_a_shape_is_both():
    src = """\
func.func @main() {
  %0 = call @inputs() : () -> tensor<2xi64>
  %d = stablehlo.constant dense<[1.5, 2.5, 3.5, 4.5, 5.5, 6.5]> : tensor<6xf32>
  %r = stablehlo.dynamic_reshape %d, %0 : (tensor<6xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %s = stablehlo.add %0, %0 : tensor<2xi64>
  check.expect_eq_const %s, dense<[4, 6]> : tensor<2xi64>
  check.expect_eq_const %r, dense<[[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]]> : tensor<2x3xf32>
  func.return
}
func.func private @inputs() -> tensor<2xi64> {
  %c = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  return %c : tensor<2xi64>
}
"""
    plan = prepare_checks(parse(src), source="t.mlir")
    [kept] = plan.kept
    assert (kept.reasons, kept.from_inputs, kept.also_parameter) == (
        ["stablehlo.dynamic_reshape output shape"], True, True)
    assert kept.location == "t.mlir:11:8"
    assert_mentions(checks.kept_note(plan), "1 constant", "stablehlo.dynamic_reshape output shape")
    assert [a.tolist() for a in plan.parameters] == [[2, 3], [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]]
    text = str(plan.module)
    assert "stablehlo.dynamic_reshape %arg1, %c" in text and "stablehlo.add %arg0, %arg0" in text
    assert all(r.passed for r in engine.evaluate_checks(plan, run(plan)))


def test_testdata_form_inlines_inputs_and_expected():
    plan = prepare_checks(load("testdata_softplus.mlir"))
    text = str(plan.module)
    assert "call @inputs" not in text and "call @expected" not in text
    assert "func.func private @inputs" not in text  # unused now, removed
    assert plan.num_original_results == 1
    assert [c.kind for c in plan.checks] == ["expect_close", "expect_close", "expect_eq"]
    assert plan.checks[0].actual_index == 0  # the checked value is @main's own result
    assert plan.checks[0].options == {"max_ulp_difference": 3, "min_ulp_difference": 0}
    assert [p.dtype for p in plan.parameters] == [np.float32, np.int32]


def test_64_bit_parameters_keep_their_values():
    plan = prepare_checks(load("wide_types.mlir"))
    assert plan.x64
    dtypes = [p.dtype for p in plan.parameters]
    assert dtypes == [np.float64, np.float64, np.int64, np.int64, np.uint64,
                      np.complex128, np.complex128]
    assert plan.parameters[4][0] == np.uint64(18446744073709551615)
    assert plan.parameters[3][0] == 3037000499
    assert plan.parameters[5][0] == 1.5 + 2.0j
    outs = run(plan)
    assert outs[1].dtype == np.int64 and outs[1][0] == 3037000499 ** 2
    assert all(r.passed for r in engine.evaluate_checks(plan, outs))


def test_parameter_values_for_every_dtype():
    src = """\
func.func @main() {
  %0 = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  %1 = stablehlo.constant dense<[(1.5, 2.0), (3.0, -1.0)]> : tensor<2xcomplex<f32>>
  %2 = stablehlo.constant dense<[0.5, 448.0]> : tensor<2xf8E4M3FN>
  %3 = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %4 = stablehlo.constant dense<[65535, 2]> : tensor<2xui16>
  %5 = stablehlo.constant dense<[-128, 127]> : tensor<2xi8>
  %6 = stablehlo.constant dense<[6.1e-05, 65504.0]> : tensor<2xf16>
  %r0 = stablehlo.negate %0 : tensor<2xbf16>
  %r1 = stablehlo.negate %1 : tensor<2xcomplex<f32>>
  %r2 = stablehlo.convert %2 : (tensor<2xf8E4M3FN>) -> tensor<2xf32>
  %r3 = stablehlo.not %3 : tensor<2xi1>
  %r4 = stablehlo.not %4 : tensor<2xui16>
  %r5 = stablehlo.negate %5 : tensor<2xi8>
  %r6 = stablehlo.negate %6 : tensor<2xf16>
  check.expect_eq_const %r0, dense<[-1.5, 2.0]> : tensor<2xbf16>
  check.expect_eq_const %r1, dense<[(-1.5, -2.0), (-3.0, 1.0)]> : tensor<2xcomplex<f32>>
  check.expect_eq_const %r2, dense<[0.5, 448.0]> : tensor<2xf32>
  check.expect_eq_const %r3, dense<[false, true]> : tensor<2xi1>
  check.expect_eq_const %r4, dense<[0, 65533]> : tensor<2xui16>
  check.expect_eq_const %r5, dense<[-128, -127]> : tensor<2xi8>
  check.expect_eq_const %r6, dense<[-6.1e-05, -65504.0]> : tensor<2xf16>
  func.return
}
"""
    plan = prepare_checks(parse(src))
    p = plan.parameters
    assert [a.dtype for a in p] == [ml_dtypes.bfloat16, np.complex64, ml_dtypes.float8_e4m3fn,
                                    np.bool_, np.uint16, np.int8, np.float16]
    assert p[1].tolist() == [1.5 + 2j, 3 - 1j] and p[2].astype(np.float32).tolist() == [0.5, 448.0]
    assert p[4].tolist() == [65535, 2] and p[6][1] == np.float16(65504.0)
    assert all(r.passed for r in engine.evaluate_checks(plan, run(plan)))


def test_original_arguments_come_first_and_results_are_deduplicated():
    src = """\
func.func @main(%x: tensor<3xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<3xf32> {jax.result_info = "y"}) {
  %w = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = stablehlo.multiply %x, %w : tensor<3xf32>
  %e = stablehlo.constant dense<[2.0, 4.0, 6.0]> : tensor<3xf32>
  check.expect_eq %y, %e : tensor<3xf32>
  check.expect_close %y, %e, max_ulp_difference = 0 : tensor<3xf32>, tensor<3xf32>
  func.return %y : tensor<3xf32>
}
"""
    plan = prepare_checks(parse(src))
    assert plan.num_original_params == 1 and plan.num_original_results == 1
    assert [a.tolist() for a in plan.parameters] == [[1.0, 2.0, 3.0]]
    assert [(c.actual_index, c.expected_index) for c in plan.checks] == [(0, 1), (0, 1)]
    text = str(plan.module)
    assert '%arg0: tensor<3xf32> {mhlo.sharding = "{replicated}"}, %arg1: tensor<3xf32>)' in text
    assert '-> (tensor<3xf32> {jax.result_info = "y"}, tensor<3xf32>)' in text
    outs = run(plan, [np.float32([2, 2, 2])])
    assert len(outs) == 2 and all(r.passed for r in engine.evaluate_checks(plan, outs))
    results = engine.evaluate_checks(plan, run(plan, [np.float32([2, 2, 3])]))
    assert not results[0].passed
    assert_mentions(results[0].message, "1 of 3", "[2]", "actual=9.0", "expected=6.0")
    assert_mentions(results[1].message, "0 ULP", "[2]", "5242880")  # 0x41100000 - 0x40C00000


def test_check_eq_custom_call_result_becomes_true():
    src = """\
func.func public @main() -> tensor<i1> {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.constant dense<[1.00001, 2.0]> : tensor<2xf32>
  %2 = stablehlo.abs %0 : tensor<2xf32>
  %3 = stablehlo.custom_call @check.eq(%2, %1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
  return %3 : tensor<i1>
}
"""
    plan = prepare_checks(parse(src))
    assert [(c.kind, c.options) for c in plan.checks] == [("expect_almost_eq", {"tolerance": 1e-4})]
    outs = run(plan)
    assert outs[0].dtype == np.bool_ and bool(outs[0])
    assert engine.evaluate_checks(plan, outs)[0].passed


def test_custom_call_options_from_attributes_and_backend_config():
    src = """\
func.func @main() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.sine %0 : tensor<2xf32>
  stablehlo.custom_call @check.expect_close(%1, %0) {has_side_effect = true, max_ulp_difference = 7 : i64} : (tensor<2xf32>, tensor<2xf32>) -> ()
  stablehlo.custom_call @check.expect_almost_eq(%1, %0) {has_side_effect = true, backend_config = "{\\"tolerance\\": 0.5}"} : (tensor<2xf32>, tensor<2xf32>) -> ()
  stablehlo.custom_call @check.expect_almost_eq(%1, %0) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
  return
}
"""
    plan = prepare_checks(parse(src))
    assert [c.options for c in plan.checks] == [
        {"max_ulp_difference": 7, "min_ulp_difference": 0}, {"tolerance": 0.5}, {"tolerance": 1e-3}]


def test_entry_function_need_not_be_called_main():
    src = ("func.func @sqrt_test() {\n  %a = stablehlo.constant dense<[4.0, 9.0]> : tensor<2xf32>\n"
           "  %r = stablehlo.sqrt %a : tensor<2xf32>\n"
           "  check.expect_eq_const %r, dense<[2.0, 3.0]> : tensor<2xf32>\n  func.return\n}\n")
    plan = prepare_checks(parse(src))
    assert "func.func @main(" in str(plan.module)
    assert engine.evaluate_checks(plan, run(plan))[0].passed


_NESTED_CHECK = """\
func.func @main() {
  %p = stablehlo.constant dense<true> : tensor<i1>
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = "stablehlo.if"(%p) ({
    stablehlo.custom_call @check.expect_eq(%a, %a) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    stablehlo.return %a : tensor<2xf32>
  }, {
    stablehlo.return %a : tensor<2xf32>
  }) : (tensor<i1>) -> tensor<2xf32>
  return
}
"""


def test_misplaced_or_unknown_checks_are_input_errors():
    nested = _NESTED_CHECK
    with pytest.raises(InputError) as info:
        prepare_checks(parse(nested), source="n.mlir")
    assert (info.value.file, info.value.line, info.value.col) == ("n.mlir", 5, 5)
    assert_mentions(info.value.message, "top-level op of @main")
    unknown = nested.replace("check.expect_eq(%a, %a)", "check.expect_sameish(%a, %a)")
    unknown = re.sub(r'  %r = "stablehlo.if".*?\) -> tensor<2xf32>\n', "", unknown, flags=re.S)
    unknown = unknown.replace("  return\n", "  stablehlo.custom_call @check.expect_sameish(%a, %a) "
                              "{has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()\n"
                              "  return\n")
    with pytest.raises(InputError) as info:
        prepare_checks(parse(unknown))
    assert_mentions(info.value.format(), "unknown", "'check.expect_sameish'", "check.expect_eq")


@pytest.mark.golden
@pytest.mark.parametrize("src, line_offset, message", [
    (_NESTED_CHECK, 0, "error: m.mlir:5:5: a check must be a top-level op of @main (found one in a nested region "
                       "or another function)"),
    ("func.func @main(%a: tensor<2xf32>) {\n  stablehlo.custom_call @check.expect_sameish(%a, %a) "
     "{has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()\n  return\n}\n", 0,
     "error: m.mlir:2:3: unknown check custom call 'check.expect_sameish' (one of check.expect_eq, "
     "check.expect_almost_eq, check.expect_close, check.eq)"),
    ("func.func @a() { return }\nfunc.func @b() { return }\n", 0,
     "error: m.mlir: a self-checking module needs a @main function (or exactly one public one)"),
    ("func.func @main(%a: tensor<2xf32>) {\n  stablehlo.custom_call @check.expect_eq(%a) "
     "{has_side_effect = true} : (tensor<2xf32>) -> ()\n  return\n}\n", 3,
     "error: m.mlir:5:3: check.expect_eq needs 2 operands (actual, expected), found 1"),
])
def test_check_plan_refusals_exactly(src, line_offset, message):
    """A module whose checks cannot be prepared for XLA: the golden of prepare's errors."""
    with pytest.raises(InputError) as info:
        prepare_checks(inputs.parse_mlir(src, "m.mlir"), source="m.mlir", line_offset=line_offset)
    assert info.value.format() == message


def test_has_checks():
    assert not checks.has_checks(parse("func.func @main() -> tensor<f32> {\n"
                                       "  %0 = stablehlo.constant dense<1.0> : tensor<f32>\n"
                                       "  return %0 : tensor<f32>\n}\n"))
    assert checks.has_checks(parse(DIALECT_SRC))


def test_wrong_expected_value_fails_with_index_and_values():
    src = (DATA / "shapes.mlir").read_text()
    wrong = src.replace("dense<[[11, 12, 13, 14], [25, 26, 27, 28], [39, 40, 41, 42]]>",
                        "dense<[[11, 12, 13, 14], [25, 26, 27, 28], [39, 40, 14, 42]]>")
    assert wrong != src
    plan = prepare_checks(parse(wrong, "shapes.mlir"), source="shapes.mlir")
    results = engine.evaluate_checks(plan, run(plan))
    failed = [r for r in results if not r.passed]
    assert len(failed) == 1 and len(results) == 8
    assert failed[0].location == "shapes.mlir:8:3"
    assert_mentions(failed[0].message, "1 of 12", "[2, 2]", "actual=41", "expected=14")


# ====================================================================== CLI

def test_run_and_opt_report_where_the_checked_values_came_from(cli, tmp_path):
    import json

    from tests.conftest import assert_one_line_error

    files = [CORPUS / n for n in ("add_f32_splat.mlir", "argmax_f32_one.mlir",
                                  "dynamic_reshape_f32_splat_shape_inputs.mlir")]
    report = tmp_path / "run.json"
    result = cli("run", *files, "--jobs", "0", "--json", report)
    assert result.code == 0, result.out
    rows = {r["module"]: r for r in json.loads(report.read_text())}
    assert {m: r["checked_values"] for m, r in rows.items()} == {
        "add_f32_splat": "compiled", "argmax_f32_one": "folded",
        "dynamic_reshape_f32_splat_shape_inputs": "compiled"}
    [kept] = rows["dynamic_reshape_f32_splat_shape_inputs"]["kept_constants"]
    assert kept["reasons"] == ["stablehlo.dynamic_reshape output shape"] and kept["from_inputs"]
    assert rows["add_f32_splat"]["inputs"] == "2 constants fed as runtime parameters"
    assert "  checked values: compiled (1 of 1 computed from parameters by XLA's generated code)" in result.out
    assert (f"  kept constant: {files[2]}:12:11 tensor<2xi64> (stablehlo.dynamic_reshape output shape)"
            in result.out)
    folded = cli("run", files[0], "--jobs", "0", "--fold-constants", "--json", report)
    assert folded.code == 0 and json.loads(report.read_text())[0]["checked_values"] == "folded"

    out = cli("opt", *files, "--platform", "cpu", "--stage", "hlo", "--no-cache", "--dump-dir", tmp_path / "d")
    assert out.code == 0, out.err
    notes = [ln for ln in out.err.splitlines() if ln.startswith("note:")]
    assert len(notes) == 2, out.err
    assert notes[0].startswith(f"note: {files[1]}: ")
    assert_mentions(notes[0], "checked values folded", "none of 1")
    assert notes[1].startswith(f"note: {files[2]}: ")
    assert_mentions(notes[1], "kept 1 constant", "stablehlo.dynamic_reshape output shape")
    assert "parameter(" in (tmp_path / "d" / "add_f32_splat.hlo").read_text()
    out = cli("opt", files[0], "--platform", "cpu", "--stage", "hlo", "--no-cache", "--fold-constants")
    assert out.code == 0 and "(--fold-constants)" in out.err and "ENTRY %main.1 () ->" in out.out
    assert_one_line_error(cli("opt", files[0], "--fold-constants"), facts=("--fold-constants", "--platform cpu|cuda"))


@pytest.mark.parametrize("op, facts", [
    ('"check.expect_eq"(%a) : (tensor<2xf32>) -> ()', ("2 operands", "found 1")),
    ('"check.expect_eq"(%a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> ()',
     ("2 operand types", "found 3")),
    ('"check.expect_eq_const"(%a, %a) {value = dense<1.0> : tensor<2xf32>} : (tensor<2xf32>, tensor<2xf32>) -> ()',
     ("1 operand,", "found 2")),
    ('"check.expect_eq_const"(%a) {value = dense<1.0> : tensor<2xf32>} : (tensor<2xf32>, tensor<2xf32>) -> ()',
     ("1 operand type", "found 2")),
], ids=["operands", "operand-types", "const-operands", "const-operand-types"])
def test_a_generic_check_op_with_the_wrong_arity_says_which_part(op, facts):
    src = f"func.func @f(%a: tensor<2xf32>) {{\n  {op}\n  return\n}}\n"
    with pytest.raises(InputError) as e:
        checks.preprocess_check_ops(src, "t.mlir")
    short = op.split('"')[1]
    assert (e.value.file, e.value.line, e.value.col) == ("t.mlir", 2, 3)
    assert_mentions(e.value.message, short, *facts)


@pytest.mark.parametrize("spelling", ["check.expect_eq({}, {})", "check.expect_eq {}, {}"])
def test_each_spelling_takes_one_type_or_one_per_operand(spelling):
    """``check.expect_eq(%a, %b) : T[, T2]`` (IREE's) and ``check.expect_eq %a, %b : T[, T2]``:
    a second type is the expected operand's (MLIR then checks it against the value's)."""
    src = ("func.func @f(%a: tensor<2xf32>, %b: tensor<2xf64>) {\n"
           f"  {spelling.format('%a', '%b')} : tensor<2xf32>, tensor<2xf64>\n"
           f"  {spelling.format('%a', '%a')} : tensor<2xf32>\n  return\n}}\n")
    lines = checks.preprocess_check_ops(src, "t.mlir").splitlines()
    assert lines[1] == ("  stablehlo.custom_call @check.expect_eq(%a, %b) {has_side_effect = true} : "
                        "(tensor<2xf32>, tensor<2xf64>) -> ()")
    assert lines[2] == ("  stablehlo.custom_call @check.expect_eq(%a, %a) {has_side_effect = true} : "
                        "(tensor<2xf32>, tensor<2xf32>) -> ()")


def test_an_attribute_holding_a_function_type_is_read_past_its_arrow():
    """A generic op's attribute dict may hold a function type: its '->' closes nothing, and
    the options after it are still read."""
    src = ('func.func @f(%a: tensor<2xf32>) {\n  "check.expect_almost_eq"(%a, %a) {note = (tensor<2xf32>) -> '
           'tensor<2xf32>, tolerance = 0.5 : f64} : (tensor<2xf32>, tensor<2xf32>) -> ()\n  return\n}\n')
    assert checks.preprocess_check_ops(src, "t.mlir").splitlines()[1] == (
        "  stablehlo.custom_call @check.expect_almost_eq(%a, %a) {has_side_effect = true, tolerance = 0.5 : f64} "
        ": (tensor<2xf32>, tensor<2xf32>) -> ()")


def test_symbol_references_named_check_are_not_check_ops():
    """A generic-form check op is found; '@"check.helper"' (a callee's quoted name, with or
    without a space after the '@') and a commented-out op are not."""
    text = ('func.func @main() {\n'
            '  %0 = func.call @"check.helper"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n'
            '  %1 = func.call @ "check.other"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n'
            '  "check.expect_eq"(%0, %b) : (tensor<2xf32>, tensor<2xf32>) -> ()\n'
            '  // "check.expect_eq"(%0, %b)\n'
            '  return\n}\n')
    assert checks._find_check_ops(text) == [text.index('  "check.expect_eq"') + 2]
    # The '@' is seen wherever it is, the text's first character too (a split file's piece).
    assert checks._find_check_ops('@"check.helper"(%a)') == []
    assert checks._find_check_ops('"check.expect_eq"(%a, %b)') == [0]


def test_a_generic_check_ops_operand_type_may_hold_an_arrow():
    """A generic op's operand type may hold a '->' (a sparse tensor's encoding map): it closes no
    bracket, so the function type still gives two operand types, each kept as written."""
    sparse = "tensor<2xf32, #sparse_tensor.encoding<{map = (d0) -> (d0 : compressed)}>>"
    src = (f'func.func @f(%a: {sparse}, %b: tensor<2xf32>) {{\n'
           f'  "check.expect_eq"(%a, %b) : ({sparse}, tensor<2xf32>) -> ()\n  return\n}}\n')
    assert checks.preprocess_check_ops(src, "t.mlir").splitlines()[1] == (
        f"  stablehlo.custom_call @check.expect_eq(%a, %b) {{has_side_effect = true}} : "
        f"({sparse}, tensor<2xf32>) -> ()")


# ======================================================= rewrite edge cases

@pytest.mark.parametrize("tail, facts, col", [
    ("  check.expect_eq_const %a, dense<[1.0, 2.0", ("unterminated", "'<'"), 34),
    ("  check.expect_eq_const %a, dense<[1.0, 2.0)> : tensor<2xf32>\n}\n", ("unbalanced", "')'"), 44),
], ids=["unclosed", "mismatched"])
def test_an_unclosed_or_mismatched_bracket_is_an_input_error_at_it(tail, facts, col):
    """A bracket the text never closes (a truncated file) or closes with the wrong bracket is
    an InputError naming the bracket and where it is, never a crash."""
    src = "func.func @f(%a: tensor<2xf32>) {\n" + tail
    with pytest.raises(InputError) as info:
        checks.preprocess_check_ops(src, "t.mlir")
    assert (info.value.file, info.value.line, info.value.col) == ("t.mlir", 2, col)
    assert_mentions(info.value.message, "check.expect_eq_const", *facts)


def test_string_attributes_are_skipped_whole_empty_and_escaped_ones_too():
    """An empty string and one with an escaped quote are read to their closing quote, so the
    options after them are still found, and a check-like text inside a string is no op."""
    src = ('func.func @f(%a: tensor<2xf32>) {\n'
           '  "check.expect_almost_eq"(%a, %a) {note = "", msg = "say \\"hi\\", check.expect_eq %a", '
           'tolerance = 0.5 : f64} : (tensor<2xf32>, tensor<2xf32>) -> ()\n'
           '  "check.expect_close"(%a, %a) {msg = "\\\\", max_ulp_difference = 4} : '
           '(tensor<2xf32>, tensor<2xf32>) -> ()\n}\n')
    assert checks.preprocess_check_ops(src, "t.mlir").splitlines()[1:3] == [
        "  stablehlo.custom_call @check.expect_almost_eq(%a, %a) {has_side_effect = true, tolerance = 0.5 : f64} "
        ": (tensor<2xf32>, tensor<2xf32>) -> ()",
        "  stablehlo.custom_call @check.expect_close(%a, %a) {has_side_effect = true, max_ulp_difference = 4 : i64, "
        "min_ulp_difference = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> ()"]
    assert checks._string_end('"" x', 0) == 2
    assert checks._string_end('"a\\"b" x', 0) == 6
    assert checks._string_end('"ab\ncd"', 0) == 3  # a string ends at its line's end


def test_options_are_written_as_mlir_reads_them():
    """A tolerance without a '.' in Python's spelling gets one (1e-05 -> 1.0e-05); a hex ULP
    bound is read as hex; an unreadable option names itself."""
    src = ("func.func @f(%a: tensor<2xf32>) {\n"
           "  check.expect_almost_eq %a, %a, tolerance = 1e-5 : tensor<2xf32>\n"
           "  check.expect_close %a, %a, max_ulp_difference = 0x10, min_ulp_difference = 2 : "
           "tensor<2xf32>, tensor<2xf32>\n}\n")
    assert checks.preprocess_check_ops(src, "t.mlir").splitlines()[1:3] == [
        "  stablehlo.custom_call @check.expect_almost_eq(%a, %a) {has_side_effect = true, tolerance = 1.0e-05 : f64} "
        ": (tensor<2xf32>, tensor<2xf32>) -> ()",
        "  stablehlo.custom_call @check.expect_close(%a, %a) {has_side_effect = true, max_ulp_difference = 16 : i64, "
        "min_ulp_difference = 2 : i64} : (tensor<2xf32>, tensor<2xf32>) -> ()"]
    assert checks._mlir_float(1e-05) == "1.0e-05"
    assert checks._mlir_float(2.5e-07) == "2.5e-07"
    assert checks._mlir_float(0.5) == "0.5"
    bad = ('func.func @f(%a: tensor<2xf32>) {\n  "check.expect_close"(%a, %a) {max_ulp_difference = zz} : '
           '(tensor<2xf32>, tensor<2xf32>) -> ()\n}\n')
    with pytest.raises(InputError) as info:
        checks.preprocess_check_ops(bad, "t.mlir")
    assert_mentions(info.value.message, "check.expect_close", "max_ulp_difference", "'zz'")


def test_a_const_forms_constant_gets_a_fresh_name_and_keeps_a_written_location():
    """The expected constant's name never collides with a value already named so, and an op
    that carries its own loc(...) keeps it instead of getting one."""
    src = ("func.func @f(%a: tensor<2xf32>) {\n"
           "  %check_expected_3_3 = stablehlo.constant dense<1.0> : tensor<2xf32>\n"
           "  check.expect_eq_const %a, dense<1.0> : tensor<2xf32> loc(\"x\":1:1)\n"
           "  %check_expected_4_3_1 = stablehlo.constant dense<1.0> : tensor<2xf32>\n}\n")
    src = src.replace("  %check_expected_4_3_1", "  check.expect_eq_const %a, dense<2.0> : tensor<2xf32>\n"
                      "  %check_expected_4_3 = stablehlo.constant dense<1.0> : tensor<2xf32>\n"
                      "  %check_expected_4_3_1")
    lines = checks.preprocess_check_ops(src, "t.mlir").splitlines()
    assert lines[2] == ("  %check_expected_3_3_1 = stablehlo.constant dense<1.0> : tensor<2xf32> "
                        "stablehlo.custom_call @check.expect_eq(%a, %check_expected_3_3_1) {has_side_effect = true} "
                        ": (tensor<2xf32>, tensor<2xf32>) -> () loc(\"x\":1:1)")
    assert lines[3] == ("  %check_expected_4_3_2 = stablehlo.constant dense<2.0> : tensor<2xf32> "
                        "stablehlo.custom_call @check.expect_eq(%a, %check_expected_4_3_2) {has_side_effect = true} "
                        ": (tensor<2xf32>, tensor<2xf32>) -> () loc(\"-\":4:3)")


# ============================================================ plan reporting

@pytest.mark.golden
def test_provenance_and_kept_notes_read_as_sentences():
    """Each provenance state and count reads as written, singular and plural: the golden of the
    checked values' provenance and of the kept-constants note."""
    assert checks.Provenance("compiled", 2, 2).describe() == (
        "compiled (2 of 2 computed from parameters by XLA's generated code)")
    assert checks.Provenance("folded", 0, 1).describe() == (
        "folded (none of 1 depends on a parameter: XLA computed it while compiling)")
    assert checks.Provenance("folded", 0, 3).describe() == (
        "folded (none of 3 depends on a parameter: XLA computed them while compiling)")
    assert checks.Provenance("partly folded", 1, 3).describe() == (
        "partly folded (1 of 3 computed from parameters, the rest while compiling)")
    assert checks.Provenance("unknown", 0, 2).describe() == "unknown (no optimized HLO to read)"
    k1 = checks.KeptConstant("t.mlir:3:5", "tensor<2xi64>", ["a", "b"], True, False)
    k2 = checks.KeptConstant("t.mlir:4:5", "tensor<i64>", ["b", "c"], False, True)
    assert k1.describe() == "t.mlir:3:5 tensor<2xi64> (a; b)"
    plan = checks.CheckPlan(None, [], 0, 0, [], folded=False, kept=[k1, k2])
    assert checks.kept_note(plan) == "kept 2 constants (a, b, c)"
    plan.kept = [k2]
    assert checks.kept_note(plan) == "kept 1 constant (b, c)"
    plan.kept = []
    assert checks.kept_note(plan) == ""


def test_checked_values_counts_the_distinct_checked_outputs():
    """Provenance comes from the checked (actual) outputs, each counted once; an index past
    the known outputs, or none known, is 'unknown'."""
    plan = checks.CheckPlan(None, [], 0, 1, [Check("expect_eq", 0, 3), Check("expect_close", 0, 4),
                                             Check("expect_eq", 2, 3)], folded=False)
    got = lambda deps: checks.checked_values(plan, deps)  # noqa: E731
    assert got([True, False, True, False, False]) == checks.Provenance("compiled", 2, 2)
    assert got([False, True, False, True, True]) == checks.Provenance("folded", 0, 2)
    assert got([True, True, False, True, True]) == checks.Provenance("partly folded", 1, 2)
    assert got([True, True, True]) == checks.Provenance("compiled", 2, 2)
    assert got([True, True]) == checks.Provenance("unknown", 0, 2)
    assert got(None) == checks.Provenance("unknown", 0, 2)


def test_check_eq_results_in_use_become_true_and_the_process_survives():
    """check.eq is expect_eq on integers and expect_almost_eq (1e-4) on floats; its i1 result,
    used or returned, reads `true` (prepared in a child process: a check op erased while its
    result is still used aborts the process)."""
    from tests.conftest import run_subprocess

    code = (
        "from mlirhlo_driver.inputs import checks, loader\n"
        "from mlirhlo_driver.xla.backend import run_on_host\n"
        f"plan = checks.prepare(loader.parse_mlir({CHECK_EQ_USED!r}, 't.mlir'), evaluate=run_on_host)\n"
        "print([(c.kind, c.target, c.options, c.actual_index, c.expected_index) for c in plan.checks])\n"
        "print(plan.module)\n"
    )
    proc = run_subprocess(code)
    assert proc.returncode == 0, proc.stderr
    kinds, *module = proc.stdout.splitlines()
    assert kinds == ("[('expect_eq', 'check.eq', {}, 2, 3), "
                     "('expect_almost_eq', 'check.eq', {'tolerance': 0.0001}, 4, 4), "
                     "('expect_almost_eq', 'check.eq', {'tolerance': 0.0001}, 4, 4)]")
    assert [ln.strip() for ln in module[2:7]] == [
        "%cst = stablehlo.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>",
        "%0 = stablehlo.abs %arg0 : tensor<2xi32>",
        "%c = stablehlo.constant dense<true> : tensor<i1>",
        "%c_0 = stablehlo.constant dense<true> : tensor<i1>",
        "%1 = stablehlo.and %c, %c_0 : tensor<i1>"]
    assert module[7].strip() == ("return %1, %c, %0, %arg0, %cst : tensor<i1>, tensor<i1>, tensor<2xi32>, "
                                 "tensor<2xi32>, tensor<2xf32>")


def test_custom_call_options_merge_attributes_over_backend_config():
    """Options come from a dict or JSON backend_config, the op's own attributes winning; an
    unreadable config or value is ignored, and defaults fill the rest."""
    src = """\
func.func @main(%a: tensor<2xf32>) {
  stablehlo.custom_call @check.expect_close(%a, %a) {api_version = 4 : i32, has_side_effect = true, backend_config = {max_ulp_difference = 5 : i64, min_ulp_difference = "2", tolerance = [1]}} : (tensor<2xf32>, tensor<2xf32>) -> ()
  stablehlo.custom_call @check.expect_almost_eq(%a, %a) {backend_config = "not json"} : (tensor<2xf32>, tensor<2xf32>) -> ()
  stablehlo.custom_call @check.expect_almost_eq(%a, %a) {backend_config = "{\\"tolerance\\": 0.25, \\"max_ulp_difference\\": \\"x\\"}", tolerance = 0.5 : f32} : (tensor<2xf32>, tensor<2xf32>) -> ()
  stablehlo.custom_call @check.expect_almost_eq(%a, %a) {backend_config = "[1]", max_ulp_difference = 3.0 : f32} : (tensor<2xf32>, tensor<2xf32>) -> ()
  return
}
"""
    plan = prepare_checks(inputs.parse_mlir(src, "t.mlir"), source="o.mlir", line_offset=1)
    assert [(c.kind, c.options, c.location) for c in plan.checks] == [
        ("expect_close", {"max_ulp_difference": 5, "min_ulp_difference": 2}, "o.mlir:3:3"),
        ("expect_almost_eq", {"tolerance": 1e-3}, "o.mlir:4:3"),
        ("expect_almost_eq", {"tolerance": 0.5}, "o.mlir:5:3"),
        ("expect_almost_eq", {"max_ulp_difference": 3, "tolerance": 1e-3}, "o.mlir:6:3")]
    assert (plan.num_original_params, plan.num_original_results, plan.parameters) == (1, 0, [])
    assert [(c.actual_index, c.expected_index) for c in plan.checks] == [(0, 0)] * 4


def test_prepare_and_run_plan_reject_what_they_cannot_run():
    """No entry function, a check with one operand, and a wrong argument count are input
    errors that say what is wrong and where; a lone public function is the entry."""
    with pytest.raises(InputError) as info:
        prepare_checks(inputs.parse_mlir("func.func @a() { return }\nfunc.func @b() { return }\n", "m.mlir"),
                       source="m.mlir")
    assert (info.value.file, info.value.line) == ("m.mlir", None)
    assert_mentions(info.value.message, "@main", "one public one")
    one = ("func.func @main(%a: tensor<2xf32>) {\n  stablehlo.custom_call @check.expect_eq(%a) "
           "{has_side_effect = true} : (tensor<2xf32>) -> ()\n  return\n}\n")
    with pytest.raises(InputError) as info:
        prepare_checks(inputs.parse_mlir(one, "m.mlir"), source="m.mlir", line_offset=3)
    assert (info.value.file, info.value.line, info.value.col) == ("m.mlir", 5, 3)
    assert_mentions(info.value.message, "check.expect_eq", "2 operands", "found 1")
    lone = ("func.func private @h() { return }\nfunc.func @only(%a: tensor<2xf32>) {\n"
            "  stablehlo.custom_call @check.expect_eq(%a, %a) {has_side_effect = true} : "
            "(tensor<2xf32>, tensor<2xf32>) -> ()\n  return\n}\n")
    plan = prepare_checks(inputs.parse_mlir(lone, "m.mlir"), source="m.mlir", line_offset=5)
    assert [(c.kind, c.location) for c in plan.checks] == [("expect_eq", "m.mlir:8:3")]
    assert "func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32>" in str(plan.module)
    with pytest.raises(InputError) as info:
        engine.run_plan(plan, [])
    assert info.value.file is None
    assert_mentions(info.value.message, "@main", "1 arguments", "0 given")
    [out] = engine.run_plan(plan, [np.float32([1, 2])])[0]
    assert out.tolist() == [1.0, 2.0]


def test_main_splats_stay_constants_unless_an_integer_division_reads_them():
    """@main's splat constants stay for XLA (init values, bounds), except the operands of an
    integer divide or remainder (a constant zero divisor would kill the process while
    converting); non-splat constants become parameters; only check-read constants stay."""
    src = """\
func.func @main() {
  %s = stablehlo.constant dense<2.0> : tensor<2xf32>
  %v = stablehlo.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %z = stablehlo.constant dense<0> : tensor<2xi32>
  %n = stablehlo.constant dense<[7, 8]> : tensor<2xi32>
  %m = stablehlo.multiply %s, %v : tensor<2xf32>
  %f = stablehlo.divide %m, %s : tensor<2xf32>
  %d = stablehlo.divide %n, %z : tensor<2xi32>
  %u = stablehlo.constant dense<5> : tensor<2xi32>
  %w = stablehlo.add %u, %n : tensor<2xi32>
  check.expect_eq_const %f, dense<[1.0, 3.0]> : tensor<2xf32>
  check.expect_eq_const %d, dense<-1> : tensor<2xi32>
  check.expect_eq_const %w, dense<[12, 13]> : tensor<2xi32>
  func.return
}
"""
    plan = prepare_checks(parse(src))
    assert [a.tolist() for a in plan.parameters] == [[1.0, 3.0], [0, 0], [7, 8]]
    assert (plan.x64, plan.kept, plan.num_original_params, plan.num_original_results) == (False, [], 0, 0)
    body = [ln.strip() for ln in str(plan.module).splitlines()[2:8]]
    assert body == [
        "%cst = stablehlo.constant dense<2.000000e+00> : tensor<2xf32>",
        "%0 = stablehlo.multiply %cst, %arg0 : tensor<2xf32>",
        "%1 = stablehlo.divide %0, %cst : tensor<2xf32>",
        "%2 = stablehlo.divide %arg2, %arg1 : tensor<2xi32>",
        "%c = stablehlo.constant dense<5> : tensor<2xi32>",
        "%3 = stablehlo.add %c, %arg2 : tensor<2xi32>"]
    results = engine.evaluate_checks(plan, run(plan))
    assert [r.passed for r in results] == [True] * 3
    assert all("2 elements" in r.message for r in results)


@pytest.mark.golden
def test_golden_a_check_failing_on_nans_shows_their_sign_bits(cli):
    """Golden, the one exact mismatch line: StableHLO's testdata sort_float32_5 sorts NaNs of both
    signs that compare equal; XLA gives the other order, and expect_eq fails. Printed as 'nan'
    both would look equal: the line shows each NaN's sign and bits."""
    path = DATA.parent / "run" / "sort_float32_5.mlir"
    r = cli("run", path, "--jobs", "0")
    assert r.code == 1, r.out + r.err
    fails = [ln for ln in r.out.splitlines() if ln.startswith("  FAIL ")]
    assert fails == [f"  FAIL expect_eq at {path}:33:5: 2 of 5 elements not equal; worst at index [3]: "
                     "actual=nan(0x7fc00000), expected=-nan(0xffc00000)"]


def test_line_col_after_a_newline_at_offset_zero():
    from mlirhlo_driver.inputs.checks import _line_col

    assert _line_col("\nab", 2) == (2, 2)
    assert _line_col("ab\ncd", 4) == (2, 2)


def test_an_attribute_the_bindings_did_not_downcast_is_still_recognised():
    """_isa: a base ``Attribute`` (bindings that do not downcast) is of a class when it casts
    to it, and is not when the cast is refused."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        number = ir.Attribute(ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 7))
        text = ir.Attribute(ir.StringAttr.get("seven"))
        assert checks._isa(number, ir.IntegerAttr) and not checks._isa(text, ir.IntegerAttr)
        assert checks._isa(ir.StringAttr.get("seven"), ir.StringAttr)
