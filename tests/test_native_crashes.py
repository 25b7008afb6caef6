"""No input kills opt, convert or ptx: native aborts and stack overflows become one error line.

The triggers run the CLI in a subprocess: if a fix regresses, the native
crash must fail one test, not end the test run. Being the whole process,
the CLI there forks its isolation helper before jax starts (the fast path);
the in-process tests below use whatever path the test process allows.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mlirhlo_driver._native import jaxlib as _jaxlib
from tests.conftest import DATA, MLIRHLO, REPO, CliResult, assert_one_line_error

RESHAPE_HLO = """HloModule bad_reshape

ENTRY main {
  p0 = f32[4] parameter(0)
  ROOT r = f32[2,3] reshape(p0)
}
"""

LONE_PARAMETER_HLO = """HloModule lone_parameter

ENTRY main {
  ROOT p = f32[4] parameter(3)
}
"""

_F32_6 = "element_type: F32 dimensions: 6 layout { minor_to_major: 0 }"

# get-tuple-element of an array: XLA's import to MLIR dies ("LLVM ERROR: Failed
# to infer result type(s).").
GTE_ON_ARRAY_PBTXT = f"""name: "gte_on_array"
entry_computation_name: "main"
computations {{
  name: "main"
  instructions {{ name: "p0" opcode: "parameter" shape {{ {_F32_6} }} }}
  instructions {{ name: "g" opcode: "get-tuple-element" shape {{ {_F32_6} }} id: 1 operand_ids: 0 }}
  program_shape {{ parameters {{ {_F32_6} }} result {{ {_F32_6} }} parameter_names: "p0" }}
  root_id: 1
}}
host_program_shape {{ parameters {{ {_F32_6} }} result {{ {_F32_6} }} parameter_names: "p0" }}
"""

# barrier.cluster.* exists from sm_90 on: codegen for sm_80 is an LLVM fatal error.
SM90_ONLY_LL = """target triple = "nvptx64-nvidia-cuda"

declare void @llvm.nvvm.barrier.cluster.arrive()

define ptx_kernel void @k() {
  call void @llvm.nvvm.barrier.cluster.arrive()
  ret void
}
"""


def _nested_tuples(n: int) -> str:
    ty = "tuple<" * n + "tensor<f32>" + ">" * n
    return f"func.func @main(%arg0: {ty}) -> {ty} {{\n  return %arg0 : {ty}\n}}\n"


def _nested_whiles(n: int) -> str:
    head = "".join(
        f"%r{i} = stablehlo.while(%it{i} = {'%arg0' if i == 0 else f'%it{i - 1}'}) : tensor<i32> cond {{\n"
        f"  %c{i} = stablehlo.constant dense<true> : tensor<i1>\n  stablehlo.return %c{i} : tensor<i1>\n"
        "} do {\n" for i in range(n))
    tail = "".join(f"  stablehlo.return %it{i} : tensor<i32>\n}}\n" for i in reversed(range(n)))
    return ("func.func @main(%arg0: tensor<i32>) -> tensor<i32> {\n" + head + tail
            + "  return %arg0 : tensor<i32>\n}\n")


def _gte_on_array_pb() -> bytes:
    from mlirhlo_driver.ir import hlo_proto

    return hlo_proto.encode(hlo_proto.parse_text(GTE_ON_ARRAY_PBTXT))


def _mlirhlo(*args: str) -> CliResult:
    proc = subprocess.run([sys.executable, "-c", "from mlirhlo_driver.cli.mlirhlo import main; main()", *args],
                          capture_output=True, text=True, cwd=str(REPO), timeout=300)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


# jaxlib 0.12's HLO parser refuses the reshape (at the token after it; the driver
# names the reshape) where older ones died on a CHECK.
if _jaxlib.jaxlib_at_least("0.12.0"):
    RESHAPE_ERROR = ("bad.hlo:5:8: expects the same number of elements in result shape f32[2,3] "
                     "and operand shape f32[4]")
    RESHAPE_CONVERT_ERROR = RESHAPE_ERROR
else:
    RESHAPE_ERROR = "bad.hlo:5:8: malformed HLO module: XLA's HLO parser aborted: Check failed: operand->shape()"
    RESHAPE_CONVERT_ERROR = "shape: f32[2,3] operand: f32[4]"

# (id, file name, content, command, what the error line must say)
CASES = [
    ("hlo-reshape-opt", "bad.hlo", RESHAPE_HLO, ["opt"], RESHAPE_ERROR),
    ("hlo-reshape-convert", "bad.hlo", RESHAPE_HLO, ["convert", "--to", "hlo"], RESHAPE_CONVERT_ERROR),
    ("hlo-lone-parameter-opt", "p.hlo", LONE_PARAMETER_HLO, ["opt", "--platform", "cpu", "--stage", "hlo"],
     "p.hlo:4:8: malformed HLO module: XLA's HLO parser aborted: Check failed: param_no >= 0 && "
     "param_no < parameter_count; invalid parameter number. Expected [0, 1), got 3"),
    ("hlo-lone-parameter-convert", "p.hlo", LONE_PARAMETER_HLO, ["convert", "--to", "stablehlo"],
     "XLA's HLO parser aborted: Check failed: param_no"),
    ("pb-gte-on-array-opt", "g.pb", _gte_on_array_pb, ["opt"],
     "HLO-to-StableHLO import aborted: Failed to infer result type(s)"),
    ("mlir-20000-nested-tuples", "t.mlir", lambda: _nested_tuples(20_000), ["opt"],
     "t.mlir:1:1559: nested more than 256 levels deep"),
    ("mlir-30000-nested-whiles", "w.mlir", lambda: _nested_whiles(30_000), ["convert", "--to", "hlo"],
     "w.mlir:1019:35: nested more than 256 levels deep"),
    ("ptx-sm90-intrinsic-on-sm80", "k.ll", SM90_ONLY_LL, ["ptx", "--arch", "sm_80"],
     "k.ll:6:13: intrinsic llvm.nvvm.barrier.cluster.arrive is not available on sm_80"),
]


@pytest.mark.parametrize("name,content,command,expected", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_native_crash_is_one_error_line(tmp_path, name, content, command, expected):
    content = content() if callable(content) else content
    src = tmp_path / name
    if isinstance(content, bytes):
        src.write_bytes(content)
    else:
        src.write_text(content)
    out = tmp_path / "out.txt"
    result = _mlirhlo(command[0], str(src), *command[1:], "-o", str(out))
    line = assert_one_line_error(result, contains=expected)
    assert line.startswith(f"error: {src}"), line
    assert not out.exists()


def test_a_valid_module_after_a_crash_still_loads(cli, tmp_path):
    """In process: the helper survives its worker's death and serves the next call."""
    bad = tmp_path / "bad.hlo"
    bad.write_text(LONE_PARAMETER_HLO)  # a CHECK failure in every jaxlib (the reshape's ends at 0.12)
    good = tmp_path / "good.hlo"
    good.write_text(RESHAPE_HLO.replace("f32[4]", "f32[6]"))
    assert_one_line_error(cli("opt", bad), contains="XLA's HLO parser aborted")
    result = cli("opt", good)
    assert result.code == 0, result.err
    assert "stablehlo.reshape" in result.out and "tensor<6xf32>" in result.out


# XLA's own output after its optimizations, of a 4-way sharded training step jax 0.12 wrote
# (tests/data/sharded_step/sharded_step.py): XLA CPU's compile CHECK-fails on it
# (its cost analysis meets fusion operands without layouts) and killed the process at the
# stage doors; CUDA's import fails it with a page of MLIR legalization errors.
_SHARDED_AFTER = DATA / "sharded_step" / "module_0008.jit_step.cpu_after_optimizations.txt"
_SHARDED_BEFORE = _SHARDED_AFTER.with_name("module_0008.jit_step.before_optimizations.txt")
_API = ("import sys, mlirhlo_driver as mh\n"
        "try:\n    mh.load(sys.argv[1]).compile(mh.Target.cpu(), cache=False).stage('hlo')\n"
        "except mh.DriverError as e:\n    print('error:', e, file=sys.stderr)\n    sys.exit(e.exit_code)\n")
XLA_OUTPUT_DOORS = {
    "opt-cpu": [*MLIRHLO, "opt", "{f}", "--platform", "cpu", "--stage", "hlo", "--no-cache"],
    "opt-cuda": [*MLIRHLO, "opt", "{f}", "--platform", "cuda", "--stage", "ptx", "--no-cache"],
    # --stage=llvm: XLA's hlo-opt prints a scheduled module at --stage=hlo as it is (optimized
    # already: tests/e2e/test_hlo_opt.py); what compiles it again meets its fusions.
    "hlo-opt": ["hlo-opt", "--platform=cpu", "--stage=llvm", "{f}"],
    "kernels": [*MLIRHLO, "kernels", "{f}", "--no-cache"],
    "diff": [*MLIRHLO, "diff", "{f}", "--platform", "cpu", "--no-cache"],
    "run": [*MLIRHLO, "run", "{f}", "--jobs", "0"],
    "run_hlo_module": ["run_hlo_module", "{f}"],
    "spmd-run": [*MLIRHLO, "spmd-run", "{f}", "--num-partitions", "4"],
    "multihost_hlo_runner": ["multihost_hlo_runner", "--num_partitions=4", "{f}"],
    "api": [sys.executable, "-c", _API, "{f}"],
}


@pytest.mark.slow
@pytest.mark.parametrize("door", list(XLA_OUTPUT_DOORS))
def test_xlas_own_output_is_one_line_at_every_door(door):
    """XLA's after-optimizations dump of a sharded step, at every door: exit 1, a line that says
    what the file is and names the same dump's before-optimizations module; no abort, no
    traceback, nothing else on stderr (the run doors say it in their report's row)."""
    argv = [str(_SHARDED_AFTER) if a == "{f}" else a for a in XLA_OUTPUT_DOORS[door]]
    if argv[0] in ("hlo-opt", "run_hlo_module", "multihost_hlo_runner"):
        argv = [str(Path(sys.executable).with_name(argv[0])), *argv[1:]]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    said = [ln for ln in (proc.stderr + proc.stdout).splitlines() if "after its optimizations" in ln]
    assert said, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "Check failed" not in proc.stderr
    if door not in ("multihost_hlo_runner",):  # its row says what XLA said, as XLA's tool prints it
        assert str(_SHARDED_BEFORE) in said[0] or _SHARDED_BEFORE.name in said[0], said[0]
    if door in ("opt-cpu", "opt-cuda", "hlo-opt", "kernels", "diff", "spmd-run", "api"):
        errors = [ln for ln in proc.stderr.splitlines() if not ln.startswith("note: ")]
        assert errors == [said[0]] and said[0].startswith(f"error: {_SHARDED_AFTER}:"), proc.stderr
