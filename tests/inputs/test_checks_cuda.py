"""Self-checking StableHLO files compile for CUDA (and CPU) with ``opt --platform``.

XLA has no implementation of the ``check.*`` custom calls, so the XLA stages
compile the module as ``mlirhlo run`` executes it: checks out, their operands
results, constants fed as parameters. The MLIR-level stages print the module
as given. All 13 files of tests/data/checks compile for all 12 shipped specs
(156/156, measured); this test compiles a spread of them for the oldest spec
the CUDA toolkit in use targets (P100 under CUDA 12, T4 under 13) and the newest,
from one CLI run.
"""

from __future__ import annotations

import re

import pytest

from mlirhlo_driver.cuda.specs import resolve_spec
from tests.conftest import DATA, assert_one_line_error, filecheck, oldest_spec

CHECKS = DATA / "checks"

# Sorts, while/conditional, dot and convolution, f16/bf16/complex, gather and
# scatter, 64-bit types: the op families the GPU backend emits differently.
FILES = ["sort", "control_flow", "dot_conv", "half_types", "gather_scatter", "wide_types"]

SPECS = [oldest_spec(), "b200"]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """One ``opt`` run: every file x spec, PTX and optimized HLO from the same compile."""
    from mlirhlo_driver.cli.mlirhlo import main

    out = tmp_path_factory.mktemp("checks_cuda")
    try:
        main(["opt", "--platform", "cuda", "--gpu-spec", ",".join(SPECS), "--stage", "ptx,hlo",
              "--dump-dir", str(out)] + [str(CHECKS / f"{f}.mlir") for f in FILES])
    except SystemExit as e:
        if e.code not in (0, None):
            pytest.fail(f"opt exited with {e.code}")
    return out


# Splat and one-element @inputs() values: before they were parameters, XLA folded these
# tests and the PTX held no kernel.
SPLAT_FILES = ["scatter_add_f32_one_idx_main", "add_i1_one", "compare_EQ_f32_scalar", "select_i1_splat"]


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("name", FILES)
def test_check_file_compiles_to_ptx(compiled, name, spec):
    ptx = (compiled / f"{name}.{spec}.ptx").read_text()
    assert set(re.findall(r"^\.target\s+(\w+)", ptx, re.M)) == {resolve_spec(spec).sm}
    assert re.search(r"^\.visible \.entry ", ptx, re.M), ptx[:500]
    hlo = (compiled / f"{name}.{spec}.hlo").read_text()
    assert "check." not in hlo


def test_checks_become_outputs_and_constants_parameters(compiled, tmp_path):
    # sort.mlir: @main() with three constants and three check.expect_eq_const;
    # each check's two operands are outputs, the sorted constants parameters.
    filecheck((compiled / "sort.b200.hlo").read_text(), """\
CHECK: entry_computation_layout={(f32[8]{0}, s32[8]{0}, s32[3,3]{1,0})->(f32[8]{0}, f32[8]{0}, s32[8]{0}, s32[8]{0}, s32[3,3]{1,0}, /*index=5*/s32[3,3]{1,0})}
CHECK: ENTRY
CHECK-NOT: custom-call
CHECK: ROOT
""", tmp_path)


def test_mlir_stages_keep_the_checks(cli):
    r = cli("opt", "--platform", "cuda", "--gpu-spec", "b200", CHECKS / "sort.mlir")
    assert r.code == 0, r.err
    assert r.out.count("@check.expect_eq") == 3


def test_cpu_compiles_check_files_too(cli):
    r = cli("opt", "--platform", "cpu", "--stage", "hlo", CHECKS / "control_flow.mlir")
    assert r.code == 0, r.err
    assert "while(" in r.out and "check." not in r.out


def test_misplaced_check_is_one_error_line(cli, tmp_path):
    bad = tmp_path / "nested.mlir"
    bad.write_text("""\
func.func @main() -> tensor<2xf32> {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = func.call @helper(%0) : (tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
func.func private @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  check.expect_eq_const %x, dense<[1.0, 2.0]> : tensor<2xf32>
  return %x : tensor<2xf32>
}
""")
    r = cli("opt", "--platform", "cuda", "--gpu-spec", "b200", "--stage", "ptx", bad)
    line = assert_one_line_error(r, facts=("top-level", "@main"))
    assert line.startswith(f"error: {bad}:7:")


def test_constant_integer_division_by_zero_compiles(tmp_path):
    # Both operands constant: jaxlib's StableHLO->HLO conversion folds the
    # division and dies with SIGFPE on the zero divisor. The interpret tests
    # (divide.mlir, remainder.mlir) do this on purpose; prepare feeds such
    # constants as parameters, so the kernel divides at run time. In a
    # subprocess: a regression kills that process, not the test run.
    import subprocess
    import sys

    from tests.conftest import REPO

    src = tmp_path / "div0.mlir"
    src.write_text("""\
func.func @div_by_zero() {
  %lhs = stablehlo.constant dense<5> : tensor<ui32>
  %rhs = stablehlo.constant dense<0> : tensor<ui32>
  %q = stablehlo.divide %lhs, %rhs : tensor<ui32>
  %r = stablehlo.remainder %lhs, %rhs : tensor<ui32>
  check.expect_eq_const %q, dense<4294967295> : tensor<ui32>
  check.expect_eq_const %r, dense<5> : tensor<ui32>
  func.return
}
""")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", "from mlirhlo_driver.cli.mlirhlo import main; main()", "opt", str(src),
         "--platform", "cuda", "--gpu-spec", SPECS[0], "--stage", "hlo,ptx", "--dump-dir", str(out),
         "--no-cache"], capture_output=True, text=True, cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    filecheck((out / "div0.hlo").read_text(), """\
CHECK: entry_computation_layout={(u32[], u32[])->(u32[], u32[], u32[], u32[])}
CHECK-DAG: divide(
CHECK-DAG: remainder(
""", tmp_path)
    assert re.search(rf"^\.target\s+{resolve_spec(SPECS[0]).sm}\b", (out / "div0.ptx").read_text(), re.M)


def test_generic_check_with_differing_operand_types(cli, tmp_path):
    # The generic form spells each operand's type: a dynamic result checked
    # against a static constant keeps both (it used to take the first for
    # both, and the parser refused the module). Shape refinement then makes
    # the iota static, as the interpreter does before running.
    src = tmp_path / "dyn.mlir"
    src.write_text("""\
func.func @dynamic_iota() {
  %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %0 = stablehlo.dynamic_iota %shape, dim = 1 : (tensor<2xi64>) -> tensor<?x?xi32>
  %expected = stablehlo.constant dense<[[0, 1, 2], [0, 1, 2]]> : tensor<2x3xi32>
  "check.expect_eq"(%0, %expected) : (tensor<?x?xi32>, tensor<2x3xi32>) -> ()
  func.return
}
""")
    r = cli("opt", src)
    assert r.code == 0, r.err
    assert "(tensor<?x?xi32>, tensor<2x3xi32>) -> ()" in r.out
    out = tmp_path / "out"
    r = cli("opt", src, "--passes", "stablehlo-refine-shapes,stablehlo-canonicalize-dynamism",
            "--platform", "cuda", "--gpu-spec", "b200", "--stage", "hlo,ptx", "--dump-dir", out)
    assert r.code == 0, r.err
    filecheck((out / "dyn.hlo").read_text(), """\
CHECK: entry_computation_layout={()->(s32[2,3]{1,0}, s32[2,3]{1,0})}
CHECK: iota(), iota_dimension=1
""", tmp_path)
    assert re.search(r"^\.target\s+sm_100a\b", (out / "dyn.ptx").read_text(), re.M)


def test_splat_inputs_compile_to_kernels(cli, tmp_path):
    files = [CHECKS / "corpus" / f"{f}.mlir" for f in SPLAT_FILES]
    result = cli("opt", *files, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx,hlo",
                 "--dump-dir", tmp_path, "--no-cache")
    assert result.code == 0, result.err
    assert "checked values" not in result.err  # each is computed from parameters
    for name in SPLAT_FILES:
        entry = (tmp_path / f"{name}.hlo").read_text().split("\nENTRY ", 1)[1]
        assert " parameter(0)" in entry, name
        assert re.search(r"^\.visible \.entry ", (tmp_path / f"{name}.ptx").read_text(), re.M), name
