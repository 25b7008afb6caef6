"""Shared fixtures: run the CLI in-process and capture what it writes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _private_stage_cache(tmp_path_factory):
    """Each test has a stage cache of its own (subprocesses inherit it): it never reads or
    writes the user's, and what one test computed is never another's cache hit. (Not through
    ``monkeypatch``: that would make every test's monkeypatch outlive other fixtures' teardown.)"""
    saved = os.environ.get("MLIRHLO_CACHE_DIR")
    os.environ["MLIRHLO_CACHE_DIR"] = str(tmp_path_factory.mktemp("stage-cache"))
    yield
    if saved is None:
        os.environ.pop("MLIRHLO_CACHE_DIR", None)
    else:
        os.environ["MLIRHLO_CACHE_DIR"] = saved


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def private_site(tmp_path, monkeypatch) -> Path:
    """A private cache directory and a fresh sys.path entry to put distributions in, as pip would."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


@pytest.fixture
def cli(capfd):
    """``cli("opt", path, ...)`` runs ``mlirhlo`` in this process (jax is imported once)."""
    from mlirhlo_driver.cli.mlirhlo import main

    def run(*args: str) -> CliResult:
        capfd.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out, err = capfd.readouterr()
        return CliResult(code, out, err)

    return run


XLA_TOOL_MAINS = {"hlo-opt": "hlo_opt_main", "run_hlo_module": "run_hlo_module_main",
                  "multihost_hlo_runner": "multihost_main", "ptx-opt": "ptx_opt_main"}


def run_xla_tool(name: str, argv: list[str], cwd: Path, capfd) -> CliResult:
    """An XLA-named console script's main, in this process, in ``cwd``."""
    from mlirhlo_driver.cli.xla import tools as xla_tools

    capfd.readouterr()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        getattr(xla_tools, XLA_TOOL_MAINS[name])(argv)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    finally:
        os.chdir(here)
    out, err = capfd.readouterr()
    return CliResult(code, out, err)


def main_exit_code(argv: list) -> int:
    """``mlirhlo ARGV``'s main in this process; its exit code."""
    from mlirhlo_driver.cli.mlirhlo import main

    try:
        main([str(a) for a in argv])
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def ptx_sections(compiled) -> dict[str, str]:
    """A compile's ``ptx`` stage split by kernel module: {module name: its PTX}."""
    text = compiled.stage("ptx")
    parts = re.split(r"^// ----- (\S+) -----\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


# ``mlirhlo ARGV`` in a fresh process (``IMPORT_PROBE.format(argv=[...])`` to run_subprocess):
# its output, then which of jax, jaxlib and jaxlib.mlir it imported (what start-up must not).
IMPORT_PROBE = """
import sys
from mlirhlo_driver.cli.mlirhlo import main
try:
    main({argv!r})
except SystemExit:
    pass
sys.stdout.flush()
print("IMPORTED:", sorted(m for m in ("jax", "jaxlib", "jaxlib.mlir") if m in sys.modules))
"""


def run_subprocess(code: str, *, env: dict | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, cwd=cwd or str(REPO), timeout=300)


def assert_one_line_error(result: CliResult, *, code: int = 2, contains: str = "", at: str | None = None,
                          facts: tuple[str, ...] = ()) -> str:
    """Bad input: exit ``code`` (2), exactly one ``error:`` line, no traceback, nothing on stdout;
    the line. ``at``: the place it names first (a FILE, FILE:LINE:COL, --flag); ``facts``: what it
    must mention (names, values), whatever the wording; ``contains``: a fragment it holds. A
    message's exact wording is pinned once, in its family's golden test (``-m golden``)."""
    assert result.code == code, (result.code, result.err)
    lines = [ln for ln in result.err.splitlines() if ln.strip()]
    assert len(lines) == 1, result.err
    assert lines[0].startswith("error: "), result.err
    assert "Traceback" not in result.err
    assert result.out == ""
    assert contains in lines[0], lines[0]
    if at is not None:
        assert lines[0].startswith(f"error: {at}: ") or lines[0] == f"error: {at}", (at, lines[0])
    assert_mentions(lines[0], *facts)
    return lines[0]


def assert_mentions(text: str, *facts: str) -> None:
    """``text`` names each of ``facts`` (names, values, places): what a message says, not how."""
    missing = [f for f in facts if f not in text]
    assert not missing, f"{missing} not in {text!r}"


def filecheck(output: str, checks: str, tmp_path: Path) -> None:
    """Run FileCheck-style ``checks`` (CHECK:, CHECK-NEXT:, CHECK-NOT: ...) on ``output``."""
    check_file = tmp_path / f"checks-{abs(hash(checks))}.txt"
    check_file.write_text(checks)
    exe = Path(sys.executable).parent / "filecheck"
    proc = subprocess.run([str(exe), str(check_file)], input=output, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr + "\n--- output ---\n" + output


def cpu_llvm_ir_for_comparison(text: str) -> str:
    """XLA's CPU LLVM IR, for comparing two compiles: jaxlib 0.12's emitter numbers its
    ``!noalias``/``!alias.scope`` lists in an order that varies from compile to compile
    (the same lists, other numbers), so there each reference to an uniqued (non-distinct)
    metadata node is spelled out as its operands, module by module. Older jaxlibs: as is."""
    import re

    from mlirhlo_driver._native import jaxlib as _jaxlib

    if not _jaxlib.jaxlib_at_least("0.12.0"):
        return text
    definition = re.compile(r"^!(\d+) = !\{(.*)\}$", re.M)
    reference = re.compile(r"!(\d+)\b")
    out = []
    for part in re.split(r"(^; ----- \S+ -----$)", text, flags=re.M):
        nodes = {m.group(1): m.group(2) for m in definition.finditer(part)}

        def spelled(m: re.Match, depth: int = 0) -> str:
            body = nodes.get(m.group(1))
            if body is None or depth > 16:
                return m.group(0)
            return "!{" + reference.sub(lambda n: spelled(n, depth + 1), body) + "}"

        out.append(reference.sub(spelled, definition.sub("", part)))
    return "".join(out)


def readline_within(stream, timeout: float = 120.0):
    """One line from a child's pipe, or "" (b"" for a binary pipe) once ``timeout``
    seconds pass: a child that dies or stalls early fails the test instead of hanging it."""
    import threading

    got: list = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if got:
        return got[0]
    return b"" if "b" in getattr(stream, "mode", "") else ""


ADD_MODULE = """\
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def add_mlir_file(tmp_path_factory) -> Path:
    """A one-op StableHLO module (x + x on f32[4]) in a file of its own."""
    path = tmp_path_factory.mktemp("add") / "add.mlir"
    path.write_text(ADD_MODULE)
    return path


# ------------------------------------------------------- CUDA environment markers

def pytest_configure(config):
    import signal

    # A suite started in the background of a non-interactive shell (``cmd &``) inherits
    # SIGINT ignored, as would every process it starts: the Ctrl-C tests would fail for
    # nothing. Python's own handler, as an interactive start has it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line("markers", "cuda13: needs jax-cuda13-plugin as the CUDA plugin in use")
    config.addinivalue_line("markers", "sm70_ptxas: needs a ptxas in use that targets sm_60/sm_70 "
                                       "(CUDA 12's: CUDA 13 dropped them)")
    config.addinivalue_line("markers", "legacy_nvdisasm(pip=False): needs an nvdisasm that reads sm_60/sm_70 "
                                       "cubins (CUDA 12's: triton via the legacy-sass extra, or a toolkit's); "
                                       "pip=True: one under site-packages (a system toolkit's may be hidden)")


def pytest_terminal_summary(terminalreporter, config):
    # pytest-randomly says its seed in the header, which -q hides: the order is said last,
    # with the options that replay it (CONTRIBUTING.md, "Test order").
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int) and getattr(config.option, "randomly_reorganize", True):
        terminalreporter.write_line(f"test order: random; -p randomly --randomly-seed={seed} replays it")


def pytest_runtest_setup(item):
    for name in ("cuda13", "sm70_ptxas", "legacy_nvdisasm"):
        mark = item.get_closest_marker(name)
        if mark is not None:
            why = _cuda_skip_reason(name, bool(mark.kwargs.get("pip")))
            if why:
                pytest.skip(why)


def oldest_spec() -> str:
    """The oldest shipped spec the ptxas in use targets: P100 (sm_60) under CUDA 12, T4 (sm_75)
    under CUDA 13, which dropped sm_60/sm_70."""
    from mlirhlo_driver.cuda import tools as cuda_tools
    from mlirhlo_driver.errors import ToolchainError

    try:
        return "p100" if cuda_tools.ptxas().can_target("sm_60") else "t4"
    except ToolchainError:
        return "p100"


def legacy_nvdisasm():
    """The nvdisasm 'sass' runs for sm_70 cubins, or None (CUDA 13's nvdisasm dropped sm_70)."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import ToolchainError

    try:
        return cuda_binaries.nvdisasm_for("sm_70")
    except ToolchainError:
        return None


def _cuda_skip_reason(name: str, pip: bool = False) -> str | None:
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import tools as cuda_tools
    from mlirhlo_driver.errors import ToolchainError

    if name == "cuda13":
        plugin = _jaxlib.cuda_plugin()
        return None if plugin.cuda_major == 13 else f"needs jax-cuda13-plugin in use (this is {plugin.dist})"
    if name == "sm70_ptxas":
        try:
            p = cuda_tools.ptxas()
        except ToolchainError as e:
            return f"no ptxas: {e.message}"
        return None if p.can_target("sm_70") else (
            f"ptxas {p.version_str} in use (CUDA {p.version[0]}, jax-cuda{cuda_tools.cuda_major()}-plugin) "
            "cannot target sm_60/sm_70: CUDA 13 dropped them")
    tool = legacy_nvdisasm()
    if tool is None:
        return ("no nvdisasm here reads sm_60/sm_70 cubins (CUDA 13's dropped them): "
                "pip install 'mlirhlo-driver[legacy-sass]' to run this")
    if pip and not os.path.realpath(tool.path).startswith(os.path.realpath(sys.prefix)):
        return f"the nvdisasm for sm_60/sm_70 here is outside pip's packages ({tool.path})"
    return None


def process_alive(pid: int) -> bool:
    """The process exists and is not a zombie (reaped or not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def processes_gone(pids: list[int], within: float = 5.0) -> bool:
    """All of ``pids`` exit within ``within`` s (SIGKILL is delivered and reaped asynchronously)."""
    import time

    deadline = time.monotonic() + within
    while any(process_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(process_alive(p) for p in pids)


def find_spec_giving(expected: str, result):
    """A stand-in for importlib.util.find_spec that looks up ``expected`` only and gives
    ``result`` (a spec, None) or raises it (an exception)."""
    def find_spec(name):
        assert name == expected
        if isinstance(result, Exception):
            raise result
        return result
    return find_spec


# ------------------------------------------------ shared by several test files: fakes and small modules

MLP = DATA / "mlp_train_step.before_optimizations.txt"


# The MLP training step compiled device-less for A100 and H100, once per test file (stages
# are computed when first read).
@pytest.fixture(scope="module")
def a100():
    import mlirhlo_driver

    return mlirhlo_driver.compile(str(MLP), platform="cuda", gpu_spec="a100_sxm_80")


@pytest.fixture(scope="module")
def h100():
    import mlirhlo_driver

    return mlirhlo_driver.compile(str(MLP), platform="cuda", gpu_spec="h100_sxm")



@pytest.fixture
def fake_versions(monkeypatch):
    """version_text's sources as fakes: jax/jaxlib lines, the ptxas in use, the CUDA tools, llvmlite."""
    from importlib import metadata
    from types import SimpleNamespace

    from mlirhlo_driver import targets
    from mlirhlo_driver._native import jaxlib

    state = {"ptxas": SimpleNamespace(version_str="12.8.93", path="/cuda/bin/ptxas", source="nvidia-cuda-nvcc"),
             "llvmlite": "0.44.0"}

    def version(dist):
        assert dist == "llvmlite", dist
        if state["llvmlite"] is None:
            raise metadata.PackageNotFoundError(dist)
        return state["llvmlite"]

    monkeypatch.setattr(jaxlib, "version_lines", lambda: ["jax 0.1", "jaxlib 0.1"])
    from mlirhlo_driver._native import libtpu

    monkeypatch.setattr(libtpu, "version_line", lambda: "libtpu 0.2 (the driver's copy, /tpu)")
    monkeypatch.setattr(targets, "ptxas_in_use", lambda: (state["ptxas"], [], "no CUDA found"))
    monkeypatch.setattr(targets, "cuda_tool_lines", lambda ptxas: [f"libdevice for {ptxas and ptxas.path}",
                                                                   "nvdisasm none"])
    monkeypatch.setattr(metadata, "version", version)
    return state


# One dense layer with tanh (a GEMM fusion and a loop fusion on CUDA), for the explorer tests.
DENSE_IN = "tensor<64x128xf32>"
DENSE_LAYER = f"""func.func @main(%x: {DENSE_IN}, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<64x256xf32> {{
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({DENSE_IN}, tensor<128x256xf32>) -> tensor<64x256xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<256xf32>) -> tensor<64x256xf32>
  %s = stablehlo.add %d, %bb : tensor<64x256xf32>
  %t = stablehlo.tanh %s : tensor<64x256xf32>
  return %t : tensor<64x256xf32>
}}
"""


def count_executes(monkeypatch) -> list:
    """A list that gets one entry per execution of a compiled module, from now on."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    runs: list = []
    timed = _jaxlib.execute_timed  # every one-device execution goes through it (execute too)

    def counted(executable, arguments, device, iterations=1):
        runs.extend([1] * max(1, iterations))
        return timed(executable, arguments, device, iterations)

    monkeypatch.setattr(_jaxlib, "execute_timed", counted)
    return runs


# The CLI in a fresh process.
MLIRHLO = [sys.executable, "-c", "from mlirhlo_driver.cli.mlirhlo import main; main()"]


# No dot: no Triton fusion; algsimp makes the divide by 2 a multiply by 0.5 (the
# importer folds simpler rewrites, such as an add of zero, before XLA sees them).
PLAIN = """HloModule plain

ENTRY main {
  p = f32[4,8] parameter(0)
  two = f32[] constant(2)
  tb = f32[4,8] broadcast(two), dimensions={}
  s = f32[4,8] divide(p, tb)
  ROOT t = f32[4,8] tanh(s)
}
"""


# A loop of 10 iterations doubling a vector, and a module with an infeed and an outfeed
# (multihost_hlo_runner's --while_execution_count and the feeds it replaces, ir/decompose.py).
LOOP_HLO = """HloModule loop

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


FEED_HLO = """HloModule feed

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


# ------------------------------------------------ batches (batch/test_opt.py, _native/test_cluster.py)

# A module named {name}, a JAX function that segfaults, and opt's closing summary read back.
GOOD = """module @{name} {{
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {{
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }}
}}
"""

CRASHER = "import ctypes\n\ndef boom(x):\n    ctypes.string_at(0)  # SIGSEGV\n    return x\n"


def summary_rows(err: str) -> dict[str, str]:
    """module -> status from the closing summary."""
    lines = err[err.index("opt: "):].splitlines()[1:]
    return {ln.split()[0]: ln.split()[1] for ln in lines if ln.strip()}


def stage_options(platform: str | None = None, gpu_spec=None, xla_flags=(), **kw):
    """stages.base.StageOptions for a platform by name (its target: xla.platforms), a GPU spec
    (a GpuSpec, or a shipped name) and DebugOptions; ``kw``: the stage options."""
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla.platforms import CpuTarget, CudaTarget

    if platform is None:
        return StageOptions(**kw)
    if platform == "cuda":
        from mlirhlo_driver.cuda.specs import DEFAULT_SPEC, resolve_spec

        spec = resolve_spec(gpu_spec or DEFAULT_SPEC) if not hasattr(gpu_spec, "text") else gpu_spec
        return StageOptions(CudaTarget(spec=spec, xla_flags=tuple(xla_flags)), **kw)
    return StageOptions(CpuTarget(xla_flags=tuple(xla_flags)), **kw)


def long_compile_hlo(steps: int = 6000) -> str:
    """An HLO module XLA CPU takes seconds to compile (a chain of ``steps`` dot-and-tanh
    steps, each its own kernel), for what must happen while XLA compiles."""
    lines = ["HloModule long_compile", "", "ENTRY main {", "  x0 = f32[32,32] parameter(0)"]
    for i in range(1, steps + 1):
        lines.append(f"  d{i} = f32[32,32] dot(x{i - 1}, x{i - 1}), lhs_contracting_dims={{1}}, "
                     "rhs_contracting_dims={0}")
        lines.append(f"  {'ROOT ' if i == steps else ''}x{i} = f32[32,32] tanh(d{i})")
    return "\n".join(lines + ["}", ""])


def interrupt_once_xla_compiles(argv: list, tmp_path: Path, *, after: float = 0.5,
                                env: dict | None = None) -> tuple[subprocess.Popen, float, str, str]:
    """Start ``argv`` with a private temporary directory, wait until XLA's compile has begun
    (the driver's dump directory, ``mlirhlo-xla-*``, appears there), ``after`` seconds more,
    then send SIGINT: (the process, seconds from the signal to its exit, its stdout, its stderr)."""
    import signal
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**(env if env is not None else os.environ), "TMPDIR": str(tmp)})
    deadline = time.monotonic() + 120
    while not any(p.name.startswith("mlirhlo-xla-") for p in tmp.iterdir()):
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate()
            raise AssertionError(f"the compile never began (exit {proc.returncode}):\n{err[-2000:]}")
        time.sleep(0.02)
    time.sleep(after)
    assert proc.poll() is None, "the compile ended before the signal: make it longer"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc, time.monotonic() - sent, out, err
