"""xla/backend.py: the one compile function (a CompileSpec: its DebugOptions, devices and
isolation), one compile per request with only the dumps its stages read, and the dump files
read back.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import mlirhlo_driver
from mlirhlo_driver import registry
from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.xla import backend as xla_backend
from mlirhlo_driver.xla.platforms import CpuTarget
from tests.conftest import (
    DATA,
    assert_mentions,
)
from tests.conftest import main_exit_code as _main


@pytest.fixture(scope="module")
def add_file(add_mlir_file) -> Path:
    return add_mlir_file


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


MLP = DATA / "mlp_train_step.before_optimizations.txt"


def _dumped(monkeypatch, opt_args: list[str]) -> list[tuple[tuple[str, ...], set[str]]]:
    """(dumps asked for, file extensions XLA wrote) per compile of an in-process ``opt``."""
    from mlirhlo_driver.xla import backend as xla_backend

    seen = []
    real = xla_backend.compile

    def recording(*a, **kw):
        done = real(*a, **kw)
        seen.append((done.art.dumps, {k.rsplit(".", 1)[-1] for k in done.art.files}))
        return done

    monkeypatch.setattr(xla_backend, "compile", recording)
    assert _main(["opt", *opt_args, "--no-cache", MLP]) == 0
    return seen


def _pass_art(*names: str):
    from mlirhlo_driver.xla import backend as xla_backend

    files = {n: n.encode() for n in names}
    files["before_optimizations.txt"] = b"as given"
    return xla_backend.XlaArtifacts("cpu", "m", files)


def test_a_note_about_this_jaxlib_comes_with_every_compile_for_that_spec(monkeypatch, add_file):
    """What the installed XLA does differently with a spec is every such compile's note: a second
    Compiled of the same program (the cache off) says it too, not only the first in the process."""
    from mlirhlo_driver.cuda import specs

    monkeypatch.setattr(specs, "installed_xla_notes", lambda text: ["no such field here"])
    target = mlirhlo_driver.Target.cuda("h100_sxm")
    assert target.compile_notes() == target.compile_notes() == ["no such field here"]
    assert xla_backend.CompileSpec(mlirhlo_driver.Target.cpu()).target.compile_notes() == []
    program = mlirhlo_driver.load(str(add_file))
    for _ in range(2):
        compiled = program.compile(target, cache=False)
        compiled.stage("hlo")
        assert compiled.notes == ["no such field here"]


def test_user_kernel_cache_file_is_kept(add_file, tmp_path):
    # The driver points XLA's kernel cache at its work directory only when the user
    # gave none; a user's --xla_gpu_kernel_cache_file must be where XLA writes.
    target = tmp_path / "kernels.bin"
    c = mlirhlo_driver.compile(str(add_file), platform="cuda",
                               xla_flags={"xla_gpu_kernel_cache_file": str(target)})
    assert ".entry" in c.stage("ptx")
    assert target.is_file() and target.stat().st_size > 0


def test_missing_stage_output_names_the_failed_compile():
    # Only the dumps written before a failed compile exist: the error says why the stage has none.
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.backend import XlaArtifacts

    art = XlaArtifacts("cuda", "m", {"m.before_optimizations.txt": b"HloModule m"}, compile_error="ptxas died")
    with pytest.raises(StageError) as info:
        art.one(r"\.ptx$", "ptx")
    assert_mentions(info.value.message, "'ptx'", "cuda", "ptxas died")


@pytest.mark.golden
@pytest.mark.parametrize("platform, stage, compile_error, message", [
    ("cuda", "hlo", None, "XLA wrote no output for stage 'hlo' on cuda"),
    ("cuda", "ptx", "ptxas died", "XLA wrote no output for stage 'ptx' on cuda (compile failed: ptxas died)"),
    ("cpu", "llvm", "boom", "XLA wrote no output for stage 'llvm' on cpu (compile failed: boom)"),
])
def test_no_output_for_a_stage_messages_exactly(platform, stage, compile_error, message):
    """Golden: a stage whose dump XLA did not write, and why when the compile failed."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.backend import XlaArtifacts

    art = XlaArtifacts(platform, "m", {"m.before_optimizations.txt": b"HloModule m"}, compile_error=compile_error)
    with pytest.raises(StageError) as info:
        art.one("nothing", stage)
    assert info.value.message == message
    assert art.one(r"before_optimizations\.txt$", "hlo") == b"HloModule m"


# ------------------------------------------------------------------ a compile's DebugOptions

def _cpu(**flags):
    return xla_backend.CompileSpec(CpuTarget(xla_flags=tuple(sorted(flags.items()))),
                                   dumps=xla_backend.ALL_DUMPS)


def test_debug_options_cpu_defaults():
    got = _cpu().debug_options("/work")
    # jaxlib 0.12's XLA dumps LLVM IR and PTX only for the emitters xla_dump_emitter_re names.
    assert got == sorted([("xla_dump_hlo_as_dot", True), ("xla_dump_hlo_as_html", True),
                          ("xla_dump_hlo_as_proto", True), ("xla_dump_hlo_as_text", True),
                          *_jaxlib.codegen_dump_flags().items()])
    assert _cpu().debug_options() == []  # no dump directory: nothing to dump


def test_debug_options_user_over_driver_defaults():
    from mlirhlo_driver.cuda import tools as cuda_tools
    from mlirhlo_driver.targets import Target

    target = Target.cuda("h100_sxm", xla_flags={"xla_dump_hlo_as_html": False, "xla_gpu_autotune_level": 4})
    target = target.with_flags({**dict(target.xla_flags), "xla_dump_to": "/somewhere"})
    got = xla_backend.CompileSpec(target, dumps=xla_backend.ALL_DUMPS).debug_options("/work")
    assert got == sorted([("xla_dump_hlo_as_dot", True), ("xla_dump_hlo_as_html", False),
                          ("xla_dump_hlo_as_proto", True), ("xla_dump_hlo_as_text", True), ("xla_gpu_autotune_level", 4),
                          ("xla_gpu_cuda_data_dir", cuda_tools.cuda_data_dir()[0]),
                          ("xla_gpu_kernel_cache_file", "/work/xla_kernel_cache.pb"),
                          *_jaxlib.codegen_dump_flags().items()])
    assert "xla_dump_to" not in dict(got)  # the driver owns the dump directory


def test_the_platform_defaults_reach_every_caller_and_a_run_autotunes():
    """Device-less CUDA picks kernels without autotuning; a CUDA run (on a GPU) does autotune,
    and both get the pip ptxas; CPU has no defaults. The spec's own fields set their flags,
    over the user's."""
    from mlirhlo_driver.targets import Target
    from mlirhlo_driver.xla.platforms import run_target

    cuda = xla_backend.CompileSpec(Target.cuda("h100_sxm"))
    assert dict(cuda.debug_options())["xla_gpu_autotune_level"] == 0
    ran = dict(xla_backend.CompileSpec(run_target("cuda"), on_device=True).debug_options())
    assert "xla_gpu_autotune_level" not in ran and ran["xla_gpu_cuda_data_dir"]
    assert "xla_gpu_autotune_level" not in dict(_cpu().debug_options())
    spec = _cpu(xla_dump_hlo_pass_re="mine", xla_enable_hlo_passes_only="cse").with_(
        pass_dump_re=".*", disabled_passes=("dce", "algsimp"))
    # XLA CHECK-fails on enabled and disabled lists together: the pass list run alone wins
    assert dict(spec.debug_options()) == {"xla_dump_hlo_pass_re": ".*", "xla_disable_hlo_passes": "dce,algsimp"}
    assert dict(_cpu(xla_dump_hlo_pass_re="mine").debug_options()) == {"xla_dump_hlo_pass_re": "mine"}


def test_compile_options_say_the_replicas_partitions_and_device_assignment():
    """One place makes XLA's CompileOptions: counts, SPMD partitioning, Shardy, and the device
    assignment by the devices' ids in logical order."""
    devices = _jaxlib.cpu_devices(4)
    spec = _cpu().with_(num_partitions=4, device_ids=(3, 2, 1, 0), partitioner="shardy")
    opts = spec.compile_options(xla_backend._devices(spec))
    assert (opts.num_replicas, opts.num_partitions) == (1, 4)
    build = opts.executable_build_options
    assert build.use_spmd_partitioning and build.use_shardy_partitioner
    assert [d.id for d in xla_backend._devices(spec)] == [3, 2, 1, 0]
    assert [devices[i].id for i in (3, 2, 1, 0)] == [3, 2, 1, 0]
    one = _cpu().compile_options(xla_backend._devices(_cpu()))
    assert (one.num_replicas, one.num_partitions) == (1, 1)
    assert not one.executable_build_options.use_spmd_partitioning


def test_cuts_pipeline():
    assert xla_backend.cuts_pipeline([("xla_disable_all_hlo_passes", True)])
    assert xla_backend.cuts_pipeline([("xla_disable_hlo_passes", "scatter_expander")])
    assert xla_backend.cuts_pipeline({"xla_enable_hlo_passes_only": "dce"})
    assert not xla_backend.cuts_pipeline([("xla_disable_all_hlo_passes", False), ("xla_disable_hlo_passes", ""),
                                          ("xla_cpu_enable_fast_math", True)])


def test_only_a_compile_error_about_autotuning_blames_the_autotune_file(monkeypatch, tmp_path):
    """With --autotune-results given, XLA's error names the file only when it is about
    autotuning; any other compile error stays XLA's own."""
    from mlirhlo_driver._native import guards
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import CompileError, FlagError
    from mlirhlo_driver.xla import backend

    results = tmp_path / "autotune.pbtxt"
    message = []

    def failing(*args, **kwargs):
        raise CompileError(message[0])

    monkeypatch.setattr(_jaxlib, "compile_executable", failing)
    monkeypatch.setattr(guards, "refuse_fatal", lambda module, **kw: False)
    spec = _cpu(xla_gpu_load_autotune_results_from=str(results))
    message[:] = ["INVALID_ARGUMENT: Failed to load autotune results"]
    with pytest.raises(FlagError) as e:
        backend.compile(None, spec)
    assert e.value.file == str(results)
    assert_mentions(e.value.message, "autotune results", "AutotuneResults")
    message[:] = ["INTERNAL: the module has no entry computation"]
    with pytest.raises(CompileError) as e:
        backend.compile(None, spec)
    assert type(e.value) is CompileError and e.value.message == message[0]


# ------------------------------------------------------------ what a compile dumps

def test_every_xla_stage_says_what_it_reads():
    """Each stage's record declares the dumps and emitters it reads, and only known ones."""
    from mlirhlo_driver.xla import backend as xla_backend

    declared = [s for s in registry.stages().stages.values() if s.level == "xla"]
    # ALL_DUMPS; libtpu's LLO (TPU stages); the module at the backend's start that hlo-opt's 'hlo' alone reads
    assert set().union(*(s.dumps for s in declared)) <= {*xla_backend.ALL_DUMPS, xla_backend.TPU_LLO,
                                                         xla_backend.HLO_PASSES_END}
    assert {s.name for s in declared if xla_backend.HLO_PASSES_END in s.dumps} == {"hlo-opt:hlo"}
    assert {s.name for s in declared if s.emitters} == {"triton", "ttir", "ttgir", "triton-passes"}
    assert {s.name: s.dumps for s in declared if s.name in ("hlo", "kernels", "summary", "memory-usage")} == {
        "hlo": ("hlo-text",), "kernels": ("ptx", "executable-hlo", "tpu-llo"), "summary": ("hlo-proto",), "memory-usage": ()}


@pytest.mark.slow
@pytest.mark.parametrize("stage, wanted, unwanted", [
    ("ptx", {"ptx"}, {"html", "dot", "ll"}),
    ("sass", {"ptx"}, {"html", "dot", "ll"}),
    ("llvm", {"ll"}, {"html", "dot", "ptx"}),
    ("hlo", {"txt"}, {"html", "dot", "ptx", "ll"}),
    ("html", {"html"}, {"dot", "ptx", "ll"}),
])
def test_a_compile_dumps_only_what_its_stages_read(monkeypatch, capsys, stage, wanted, unwanted):
    """The HTML and dot graphs were 80 of 101 MB of a 16.7k-line module's dumps, written on
    every compile; LLVM IR and PTX are printed only when asked, each apart (jaxlib 0.11+)."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    seen = _dumped(monkeypatch, ["--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", stage])
    capsys.readouterr()
    assert len(seen) == 1
    _, exts = seen[0]
    assert wanted <= exts
    if not _jaxlib.codegen_dumps_need_emitters():
        unwanted = unwanted - {"ptx", "ll"}  # 0.10's XLA writes them whenever it dumps
    assert not exts & unwanted


def test_stage_all_still_compiles_once_with_every_dump(monkeypatch, capsys, tmp_path):
    from mlirhlo_driver.xla import backend as xla_backend

    seen = []
    real = xla_backend.compile
    monkeypatch.setattr(xla_backend, "compile",
                        lambda module, spec, name, **kw: seen.append(spec.dumps) or real(module, spec, name, **kw))
    assert _main(["opt", "--platform", "cpu", "--stage", "hlo,html,dot,llvm", "--no-cache",
                  "--dump-dir", str(tmp_path), MLP]) == 0
    # Every dump those stages read, in one compile; PTX is not among them (llvm reads LLVM IR), nor
    # the HloProto (only diff's summary reads it).
    assert seen == [tuple(sorted(set(xla_backend.ALL_DUMPS) - {xla_backend.EXECUTABLE_HLO, xla_backend.PTX,
                                                               xla_backend.HLO_PROTO}))]


def test_the_executables_module_is_copied_out_only_for_the_stages_that_read_it(monkeypatch, capsys):
    """Copying the optimized module out of the executable took 9.9 s after a 66k-line
    module's compile; ``ptx`` does not read it, ``hlo-backend`` does."""
    ptx = _dumped(monkeypatch, ["--platform", "cpu", "--stage", "llvm"])
    assert "executable-hlo" not in ptx[0][0]
    monkeypatch.undo()
    backend_hlo = _dumped(monkeypatch, ["--platform", "cpu", "--stage", "hlo-backend"])
    capsys.readouterr()
    assert "executable-hlo" in backend_hlo[0][0]


# ------------------------------------------------------------ xla/backend.py helpers

def test_pipeline_cuts_names_the_flags_that_leave_passes_out_in_order():
    """Pass-cutting flags, in a fixed order, count unless unset, false, empty or 0."""
    from mlirhlo_driver.xla import backend as xla_backend

    flags = [("xla_enable_hlo_passes_only", "dce"), ("xla_disable_all_hlo_passes", True),
             ("xla_disable_hlo_passes", "x"), ("xla_cpu_enable_fast_math", True)]
    assert xla_backend.pipeline_cuts(flags) == [
        "xla_disable_all_hlo_passes", "xla_disable_hlo_passes", "xla_enable_hlo_passes_only"]
    for off in (None, False, "", "false", "False", 0):
        assert xla_backend.pipeline_cuts({"xla_disable_hlo_passes": off}) == [], off
        assert not xla_backend.cuts_pipeline({"xla_disable_hlo_passes": off})
    for on in (True, "true", 1, "dce"):
        assert xla_backend.pipeline_cuts({"xla_disable_hlo_passes": on}) == ["xla_disable_hlo_passes"], on
        assert xla_backend.cuts_pipeline({"xla_disable_hlo_passes": on}) is True


def test_artifacts_match_in_natural_order_and_say_when_nothing_matched():
    """Dump files match in natural order (2 < 9 < 10); no match is the 'no output' error."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import backend as xla_backend

    art = xla_backend.XlaArtifacts("cuda", "m", {"x.10.txt": b"10", "x.9.txt": b"9", "x.2.txt": b"2", "y.txt": b"y"})
    assert art.matching(r"^x\.\d+\.txt$") == [("x.2.txt", b"2"), ("x.9.txt", b"9"), ("x.10.txt", b"10")]
    assert art.one(r"\.txt$", "hlo") == b"2"
    with pytest.raises(StageError) as info:
        art.one("nothing", "hlo")
    assert_mentions(info.value.message, "'hlo'", "cuda")
    art.compile_error = "boom"
    with pytest.raises(StageError) as info:
        art.one("nothing", "ptx")
    assert_mentions(info.value.message, "'ptx'", "cuda", "boom")


def test_devices_are_the_assignments_ids_in_order_and_cuda_compiles_for_a_spec():
    """A compile's devices are those its device assignment names, in logical order; an id the
    target lacks is an error, and so is a device-less CUDA compile without a spec."""
    from mlirhlo_driver.errors import CompileError, DriverError
    from mlirhlo_driver.xla.platforms import run_target

    assert [d.id for d in xla_backend._devices(_cpu().with_(num_replicas=2, device_ids=(1, 0)))] == [1, 0]
    assert [d.id for d in xla_backend._devices(_cpu().with_(num_partitions=3))] == [0, 1, 2]
    with pytest.raises(CompileError) as info:
        xla_backend._devices(_cpu().with_(num_partitions=2, device_ids=(0,)))
    assert_mentions(info.value.message, "1 device ids", "2 devices")
    with pytest.raises(DriverError) as info:
        xla_backend._devices(xla_backend.CompileSpec(run_target("cuda")))
    assert_mentions(info.value.message, "device-less", "GPU spec")


def test_which_compiles_write_xlas_triton_log():
    """A CUDA compile writes the log when a stage asks for its emitter or the user's
    --xla_dump_emitter_re matches it; a CPU compile or a bad regex never does."""
    from mlirhlo_driver.targets import Target

    def writes(platform, emitters=(), user=None):
        flags = {"xla_dump_emitter_re": user} if user is not None else {}
        target = Target.cuda("h100_sxm", xla_flags=flags) if platform == "cuda" else Target.cpu(xla_flags=flags)
        return xla_backend._dumps_triton_log(xla_backend.CompileSpec(target, emitters=emitters))

    assert writes("cuda", ("triton-fusion", "triton-to-llvm")) is True
    assert writes("cuda", ("triton-fusion",)) is False
    assert writes("cuda") is False
    assert writes("cuda", user="triton-to") is True
    assert writes("cuda", user=".*") is True
    assert writes("cuda", user="triton-fusion") is False
    assert writes("cuda", user="triton.*") is True
    assert writes("cuda", user="^ptx$") is False
    assert writes("cuda", user="") is False
    assert writes("cpu", ("triton-to-llvm",), user=".*") is False


def test_a_triton_log_compiles_where_llvm_does_not_symbolize(monkeypatch):
    """The Triton log's compile runs in a helper started with LLVM's symbolization off, unless
    this process has it off already (the command lines do): the library leaves the user's
    environment as it was."""
    import os

    from mlirhlo_driver.targets import Target

    spec = xla_backend.CompileSpec(Target.cuda("h100_sxm"), emitters=("triton-fusion", "triton-to-llvm"))
    monkeypatch.delenv("LLVM_DISABLE_SYMBOLIZATION", raising=False)
    assert xla_backend._helper_env(spec) == {"LLVM_DISABLE_SYMBOLIZATION": "1"}
    assert "LLVM_DISABLE_SYMBOLIZATION" not in os.environ
    monkeypatch.setenv("LLVM_DISABLE_SYMBOLIZATION", "1")
    assert xla_backend._helper_env(spec) == {}
    assert xla_backend._helper_env(spec.with_(emitters=())) == {}


@pytest.mark.golden
def test_malformed_autotune_results_error_points_at_the_line():
    """Golden: XLA's autotune parse error becomes a FlagError at the file's line and column, else a plain one."""
    from mlirhlo_driver.xla import backend as xla_backend

    e = xla_backend._autotune_error("/p/a.pbtxt", "x\nE0101 Error parsing text-format xla.AutotuneResults: "
                                                  "3:14: Expected identifier, got: }  \nmore")
    assert (e.message, e.file, e.line, e.col) == ("malformed autotune results: Expected identifier, got: }",
                                                  "/p/a.pbtxt", 3, 14)
    e = xla_backend._autotune_error("/p/a.pbtxt", "")
    assert (e.message, e.file, e.line, e.col) == ("malformed autotune results (not an AutotuneResults textproto)",
                                                  "/p/a.pbtxt", None, None)


def test_read_dump_keys_files_by_relative_path(tmp_path):
    """Every file under the dump directory, keyed by its path relative to it, with its mtime."""
    from mlirhlo_driver.xla import backend as xla_backend

    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_bytes(b"a")
    (tmp_path / "sub" / "b.ll").write_bytes(b"b")
    files, mtimes = xla_backend._read_dump(str(tmp_path))
    assert files == {"a.txt": b"a", os.path.join("sub", "b.ll"): b"b"}
    assert mtimes == {k: os.stat(tmp_path / k).st_mtime_ns for k in files}


def test_hlo_module_name_from_the_dump_first():
    """The HLO module's name: the dump's before_optimizations file first, then the executable's, else ''."""
    from types import SimpleNamespace

    from mlirhlo_driver.xla import backend as xla_backend

    exe = SimpleNamespace(hlo_modules=lambda: [SimpleNamespace(name="jit_f-clone")])
    dump = {"module_0003.jit_f.cpu_after_optimizations.txt": b"", "module_0003.jit_f.before_optimizations.txt": b""}
    assert xla_backend._hlo_module_name(dump, exe) == "jit_f"
    assert xla_backend._hlo_module_name({"module_0003.jit_f.ir-no-opt.ll": b""}, exe) == "jit_f-clone"
    # a proto-only dump (diff's): jaxlib 0.9's device-less CUDA executable says "-clone", and
    # the thunk sequence's key kept its prefix ('XLA wrote no output for stage thunk-sequence')
    assert xla_backend._hlo_module_name({"module_0001.jit_f.before_optimizations.hlo.pb": b"",
                                         "module_0001.jit_f.thunk_sequence.txt": b""}, exe) == "jit_f"
    assert xla_backend._hlo_module_name({}, None) == ""


def test_per_pass_dumps_in_order_and_the_hlo_after_a_pass():
    """Per-pass dumps by index; --after-pass takes the first run, --xla-passes the last enabled one."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import backend as xla_backend

    art = _pass_art("0010.simp.after_dce.before_algsimp.txt", "0002.simp.after_pipeline-start.before_algsimp.txt",
                    "0005.simp.after_algsimp.before_dce.txt", "0011.simp.after_algsimp.before_pipeline-end.txt")
    dumps = xla_backend.pass_dumps(art)
    assert [(d.index, d.pipeline, d.after, d.before) for d in dumps] == [
        (2, "simp", "pipeline-start", "algsimp"), (5, "simp", "algsimp", "dce"),
        (10, "simp", "dce", "algsimp"), (11, "simp", "algsimp", "pipeline-end")]
    assert xla_backend.hlo_after_pass(art, "algsimp") == "0005.simp.after_algsimp.before_dce.txt"
    assert xla_backend.hlo_after_pass(art, "dce") == "0010.simp.after_dce.before_algsimp.txt"
    assert xla_backend.hlo_after_only(art, ["algsimp"]) == "0011.simp.after_algsimp.before_pipeline-end.txt"
    assert xla_backend.hlo_after_only(art, ["dce", "cse"]) == "0010.simp.after_dce.before_algsimp.txt"
    assert xla_backend.hlo_after_only(art, ["cse"]) == "as given"
    ran = _pass_art("0001.p.after_algsimp.before_cse.txt", "0002.p.after_cse.before_pipeline-end.txt")
    # The wording of each refusal: test_xla_pass_dump_refusals_exactly.
    with pytest.raises(StageError) as info:
        xla_backend.hlo_after_pass(ran, "dce")
    assert_mentions(info.value.message, "'dce'", "did not run")
    ran = _pass_art("0001.p.after_algsimp.before_cse.txt")
    with pytest.raises(StageError) as info:
        xla_backend.hlo_after_pass(ran, "cse")
    assert_mentions(info.value.message, "'cse'", "did not change")
    with pytest.raises(StageError) as info:
        xla_backend.hlo_after_pass(ran, "algsmp")
    assert_mentions(info.value.message, "'algsmp'", "did not run")
    assert_mentions(info.value.hint, "'algsimp'")
    with pytest.raises(StageError) as info:
        xla_backend.hlo_after_pass(_pass_art("0002.p.after_cse.before_pipeline-end.txt"), "pipeline-end")
    assert_mentions(info.value.message, "'pipeline-end'", "did not run")
    with pytest.raises(StageError) as info:
        xla_backend.hlo_after_only(xla_backend.XlaArtifacts("cpu", "m", {}), ["cse"])
    assert_mentions(info.value.message, "no HLO")


@pytest.mark.golden
@pytest.mark.parametrize("files, ask, line", [
    (("0001.p.after_algsimp.before_cse.txt", "0002.p.after_cse.before_pipeline-end.txt"), "dce",
     "error: XLA pass 'dce' did not run on this module (did you mean 'cse'?)"),
    (("0001.p.after_algsimp.before_cse.txt",), "cse", "error: XLA pass 'cse' ran but did not change this module"),
    (("0001.p.after_algsimp.before_cse.txt",), "algsmp",
     "error: XLA pass 'algsmp' did not run on this module (did you mean 'algsimp'?)"),
    (None, ["cse"], "error: XLA wrote no HLO for this module"),
])
def test_xla_pass_dump_refusals_exactly(files, ask, line):
    """Golden: the HLO after a named XLA pass, where the compile's per-pass dumps have none."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import backend as xla_backend

    with pytest.raises(StageError) as info:
        if files is None:
            xla_backend.hlo_after_only(xla_backend.XlaArtifacts("cpu", "m", {}), ask)
        else:
            xla_backend.hlo_after_pass(_pass_art(*files), ask)
    assert info.value.format() == line


@pytest.mark.golden
def test_a_native_death_after_a_pipeline_cut_message_exactly(monkeypatch):
    """Golden: XLA's compile dying in the helper, with flags that leave passes out, names them as
    the likely cause (the first part is the helper's: _native/isolate.py)."""
    from types import SimpleNamespace

    from mlirhlo_driver._native import isolate
    from mlirhlo_driver.errors import CompileError, NativeCrash

    def dies(*args, **kwargs):
        raise NativeCrash("XLA's compile aborted")

    monkeypatch.setattr(isolate, "call", dies)
    monkeypatch.setattr(xla_backend, "_fused", lambda module: False)
    module = SimpleNamespace(operation=SimpleNamespace(write_bytecode=lambda buf: buf.write(b"mlir")))
    spec = _cpu(xla_disable_all_hlo_passes=True, xla_disable_hlo_passes="dce")
    with pytest.raises(CompileError) as e:
        xla_backend._in_helper(module, "m", spec, {})
    assert e.value.format() == ("error: XLA's compile aborted (--xla_disable_all_hlo_passes, --xla_disable_hlo_passes "
                                "may have left HLO that XLA's codegen aborts on)")


def test_to_json_is_sorted_indented_and_ends_with_a_newline():
    """JSON stages: keys sorted, two-space indent, one final newline."""
    from mlirhlo_driver.xla import backend as xla_backend

    assert xla_backend.to_json({"b": 1, "a": [1, 2]}) == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'


def test_a_logged_compile_runs_in_a_helper_and_reads_changes_only_at_their_level(monkeypatch):
    """A compile with a pass log runs in a helper whose XLA logs passes at that level (read
    when XLA loads), and 'caused changes' lines are read only at CHANGES_LEVEL."""
    from mlirhlo_driver._native import guards
    from mlirhlo_driver.xla import pass_log

    seen, parsed = [], []

    def helper(module, name, spec, env):
        seen.append((env, spec.keep_going, spec.dumps))
        art = xla_backend.XlaArtifacts("cpu", name, {})
        art.pass_calls = pass_log.parse("", changes_logged=False)
        return art

    monkeypatch.setattr(xla_backend, "_in_helper", helper)
    monkeypatch.setattr(guards, "refuse_fatal", lambda module, **kw: False)
    monkeypatch.setattr(pass_log, "parse", lambda log, changes_logged: parsed.append(changes_logged) or ["p"])
    level = pass_log.CHANGES_LEVEL - 1
    done = xla_backend.compile(None, _cpu().with_(pass_log=level), "m")
    assert done.executable is None and done.art.pass_calls == ["p"]
    assert seen == [(pass_log.log_env(level), False, xla_backend.ALL_DUMPS)]
    xla_backend.compile(None, _cpu().with_(pass_log=pass_log.CHANGES_LEVEL, keep_going=True, dumps=("hlo-text",)), "m")
    assert seen[1] == (pass_log.log_env(pass_log.CHANGES_LEVEL), True, ("hlo-text",))


def test_a_kept_going_compile_that_died_in_the_helper_gives_what_xla_dumped_before(monkeypatch, tmp_path):
    """keep_going in the helper: XLA dumps into a directory made here, so a death there still
    gives the files it wrote (the death is the artifacts' compile_error)."""
    from types import SimpleNamespace

    from mlirhlo_driver._native import isolate
    from mlirhlo_driver.errors import NativeCrash

    def dies(fn, args, **kw):
        workdir = args[-1]
        Path(workdir, "module_0001.m.before_optimizations.txt").write_text("HloModule m")
        raise NativeCrash("XLA's compile aborted: Check failed")

    monkeypatch.setattr(isolate, "call", dies)
    module = SimpleNamespace(operation=SimpleNamespace(write_bytecode=lambda buf: buf.write(b"mlir")))
    art = xla_backend._in_helper(module, "m", _cpu().with_(keep_going=True), {})
    assert art.files == {"before_optimizations.txt": b"HloModule m"} and art.hlo_module_name == "m"
    assert_mentions(art.compile_error, "Check failed")


# ------------------------------------------------------------ a sharded module's compile

def _module(text: str):
    from mlirhlo_driver.inputs import loader

    return loader.load("m.hlo", data=text.encode())[0].module


_TWO_WAY = """HloModule m, num_partitions=2

ENTRY main {
  p = f32[8,4] parameter(0){sharding}
  ROOT n = f32[8,4] negate(p)
}
"""


@pytest.mark.golden
def test_a_sharded_module_compiles_over_its_partitions_with_a_note():
    """Golden (the partitions note). stage_spec: a module whose header says 2 partitions and
    that shards something compiles over 2 devices with the partitioner its shardings are
    written for; num_partitions overrides the count (1: unpartitioned, no note); a module
    that shards nothing compiles on one device (each would run the whole program)."""
    from mlirhlo_driver.errors import FLAGS, spell
    from mlirhlo_driver.targets import Target

    sharded = _module(_TWO_WAY.replace("{sharding}", ", sharding={devices=[2,1]<=[2]}"))
    options = Target.cpu().options()
    spec, notes = xla_backend.stage_spec(options, sharded, "m.hlo")
    assert (spec.num_partitions, spec.partitioner) == (2, "gspmd")
    assert [spell(n, FLAGS) for n in notes] == [
        "m.hlo: compiled for 2 partitions, as its mhlo.num_partitions says (gspmd: per-device shapes and "
        "collectives); --num-partitions 1 compiles the unpartitioned program"]
    spec, notes = xla_backend.stage_spec(Target.cpu().options(num_partitions=1), sharded, "m.hlo")
    assert (spec.num_partitions, notes) == (1, [])
    plain = _module(_TWO_WAY.replace("{sharding}", ""))
    assert xla_backend.declared_partitions(plain) == 2 and not xla_backend.has_shardings(plain)
    assert xla_backend.stage_spec(options, plain, "m.hlo")[0].num_partitions == 1
    if _jaxlib.jaxlib_at_least("0.12.0"):  # named mesh shardings: jaxlib 0.12's HLO parser
        named = _module(_TWO_WAY.replace("{sharding}", ", sharding={mesh['x'=2], [{'x'}, {}]}"))
        assert xla_backend.partitioner_of(named) == "shardy"
