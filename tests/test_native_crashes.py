"""No input kills opt, convert or ptx: native aborts and stack overflows become one error line.

The triggers run the CLI in a subprocess: if a fix regresses, the native
crash must fail one test, not end the test run. Being the whole process,
the CLI there forks its isolation helper before jax starts (the fast path);
the in-process tests below use whatever path the test process allows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from mlirhlo_driver._native import isolate
from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.errors import InputError, NativeCrash
from tests.conftest import REPO, CliResult, assert_one_line_error

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


# ------------------------------------------------------------- isolate.call

def _write_fd2_and_return(value: int) -> int:
    os.write(2, b"native chatter\n")
    return value * 2


def _raise_input_error() -> None:
    raise InputError("bad thing", file="f.mlir", line=3, col=4, hint="fix it")


def _die_with_llvm_error() -> None:
    os.write(2, b"some noise\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo\n")
    os.abort()


def test_isolate_returns_reraises_and_reports_deaths():
    seen: list[str] = []
    assert isolate.call(_write_fd2_and_return, (21,), on_stderr=seen.append) == 42
    assert seen == ["native chatter\n"]
    with pytest.raises(InputError) as ei:
        isolate.call(_raise_input_error)
    assert ei.value.format() == "error: f.mlir:3:4: bad thing (fix it)"
    with pytest.raises(NativeCrash) as ei:
        isolate.call(_die_with_llvm_error, what="codegen", file="k.ll")
    assert ei.value.format() == "error: k.ll: codegen aborted: Cannot select: intrinsic %llvm.nvvm.foo"
    assert os.WTERMSIG(ei.value.status) == signal.SIGABRT
    with pytest.raises(NativeCrash, match=r"died \(SIGKILL\)"):
        isolate.call(_kill_self)
    assert isolate.call(_write_fd2_and_return, (1,), on_stderr=seen.append) == 2


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_native_reason_picks_the_telling_line():
    absl = ("F1130 18:32:04.923132   24233 hlo_computation.cc:188] Check failed: "
            "param_no >= 0 && param_no < parameter_count \n"
            "ERROR: invalid parameter number. Expected [0, 1), got 3\n"
            "*** Check failure stack trace: ***\n"
            "    @     0x7fa15050bd08  xla::LogMessageFatal::~LogMessageFatal()\n")
    assert isolate.native_reason(absl) == ("Check failed: param_no >= 0 && param_no < parameter_count; "
                                           "invalid parameter number. Expected [0, 1), got 3")
    assert isolate.native_reason("x\nLLVM ERROR: out of memory\n") == "out of memory"
    assert isolate.native_reason("    @ 0x1 abc::Fatal\n") == ""
    # without a Check failed: the last absl error line, else the last line saying error or fatal
    assert isolate.native_reason("E1130 18:32:04.923132 1 a.cc:1] first\nE1130 18:32:04.923132 1 b.cc:2] last\n"
                                 "noise\n") == "last"
    assert isolate.native_reason("Fatal Python error: Segmentation fault\nthread 1\n") == \
        "Fatal Python error: Segmentation fault"
    assert isolate.native_reason("an Error here\nsome error there\nbye\n") == "some error there"
    assert isolate.native_reason("terror\n#0 0x1 in f\n0xdeadbeef x\n") == ""
    assert isolate.native_reason("E1130 18:32:04.923132 1 a.cc:1] " + "x" * 500) == "x" * 400


def test_isolate_output_of_each_call_is_its_own():
    """The helper's log is emptied between calls: no NUL-filled hole where the last call's text was."""
    seen: list[str] = []
    for value in (1, 2, 3):
        assert isolate.call(_write_fd2_and_return, (value,), on_stderr=seen.append) == value * 2
    assert seen == ["native chatter\n"] * 3


def _sleep(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def test_isolate_deadline_kills_a_call_that_does_not_finish():
    with pytest.raises(NativeCrash) as ei:
        isolate.call(_sleep, (600,), what="the reader", file="m.mlirbc", timeout=0.5)
    assert ei.value.timed_out
    assert ei.value.format() == "error: m.mlirbc: the reader did not finish in 0.5 s"
    # The killed helper is replaced; a call within its deadline returns.
    assert isolate.call(_sleep, (0,), timeout=60) == 0


def test_read_timeout_comes_from_the_environment(monkeypatch):
    from mlirhlo_driver.inputs import loader as inputs

    monkeypatch.delenv(inputs.READ_TIMEOUT_ENV, raising=False)
    assert inputs.read_timeout() == inputs.DEFAULT_READ_TIMEOUT
    monkeypatch.setenv(inputs.READ_TIMEOUT_ENV, "2.5")
    assert inputs.read_timeout() == 2.5
    for bad in ("0", "-1", "nan", "inf", "soon"):
        monkeypatch.setenv(inputs.READ_TIMEOUT_ENV, bad)
        with pytest.raises(InputError, match="MLIRHLO_READ_TIMEOUT must be a positive number"):
            inputs.read_timeout()


SLOW_PLUGIN = '''
import os
import time

import mlirhlo_driver


@mlirhlo_driver.register_pass("mark-and-wait", anchor="builtin.module", description="test: marks a run")
def mark_and_wait(module_op):
    open(os.environ["MARK_FILE"], "a").close()
    time.sleep(0.2)
'''


def test_ctrl_c_in_bench_pipeline_is_one_error_line(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) stops a benchmark of
    native and Python passes: exit 130, one error line, no MLIR timing report."""
    import time

    (tmp_path / "plug.py").write_text(SLOW_PLUGIN)
    mark = tmp_path / "ran"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "bench-pipeline", str(REPO / "tests" / "data" / "erf_inv.mlir"),
         "--load-pass-plugin", str(tmp_path / "plug.py"), "--passes", "canonicalize,mark-and-wait,cse",
         "--repeats", "100000"],
        cwd=tmp_path, env=dict(os.environ, MARK_FILE=str(mark)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    try:
        while not mark.exists() and proc.poll() is None:  # the benchmark is running
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert_one_line_error(CliResult(proc.returncode, out, err), code=130, contains="interrupted")
