"""The one XLA compile: :func:`compile` a module as a :class:`CompileSpec` says.

Every caller compiles through it: the stages, ``run`` and the XLA-named runners (one
device, or SPMD over replicas x partitions), ``--timing`` and printed HLO, XLA pass lists,
``bench-pipeline``, ``--bisect-passes``, ``diff --explain``'s trials and a check file's
constants. The spec is a frozen value (the target, the replicas and partitions, what to
dump, how to isolate); :meth:`CompileSpec.compile_options` makes XLA's CompileOptions
from it in one place, with the platform's defaults (``Target.flag_defaults``).

Where it dumps, XLA writes into a private temporary directory (``xla_dump_to`` set for
this compile only, never the process's XLA_FLAGS); every file is read into memory under a
stable key (XLA's ``module_NNNN.<name>.`` prefix carries a process-wide counter and is
dropped) and the directory is removed. CUDA compiles are device-less, for the spec's
GpuTargetConfigProto, unless they are for a run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import CompileError, StageError, param
from ..timing import ms_since

# What XLA can dump for the stages, each asked for only where a stage needs it: on a
# 64-block transformer step (16.7k HLO lines) the HTML and dot graphs were 80 of the dump's
# 101 MB, and XLA renders and deflates them inside the compile. XLA dumps text whenever it
# dumps in no other format, and writes the thunk sequence and buffer assignment with it.
HLO_TEXT, HLO_HTML, HLO_DOT, HLO_PROTO = "hlo-text", "hlo-html", "hlo-dot", "hlo-proto"
# The codegen dumps, apart: printing a large module's LLVM IR twice (before and after
# LLVM's optimizations) is work inside the compile that the PTX stages do not read.
LLVM_IR, PTX = "llvm-ir", "ptx"  # the emitters _jaxlib.codegen_dump_flags names
# Not a dump: the executable's optimized module, as text and proto. Copying it out of the
# executable took 9.9 s after a 66k-line module's compile; only some stages read it.
EXECUTABLE_HLO = "executable-hlo"
# The module as XLA's HLO passes hand it to the backend (GpuCompiler::RunHloPasses' result,
# what XLA's hlo-opt prints as 'hlo'): CUDA's backend starts with the pre-scheduling-passes
# pipeline, and XLA dumps the module at that pipeline's start when the pass and pipeline
# regexes below pick it (one file; measured with jaxlib 0.12). Not in ALL_DUMPS: only
# hlo-opt's stages read it.
HLO_PASSES_END = "hlo-passes-end"
HLO_PASSES_END_FLAGS = (("xla_dump_hlo_pass_re", "^pipeline-start$"),
                        ("xla_dump_hlo_pipeline_re", "^pre-scheduling-passes$"))
HLO_PASSES_END_FILE = r"^\d+\.pre-scheduling-passes\.after_pipeline-start\.before_[^.]+\.txt$"  # its key
ALL_DUMPS = (HLO_TEXT, HLO_HTML, HLO_DOT, HLO_PROTO, LLVM_IR, PTX, EXECUTABLE_HLO)
# libtpu's own dumps (the final VLIW bundles, the static profile): process-wide flags, so a
# compile that asks for them runs in a TPU process started with them (TpuTarget.dump_env);
# never part of ALL_DUMPS (a large module's bundles are many megabytes).
TPU_LLO = "tpu-llo"
# XLA's Fusion Explorer of its fusion decisions: since jaxlib 0.11's XLA an executable Python
# zipapp (*_fusion.pyz); hlo-opt's html stage packs its own frames with XLA's viewer and server.
# XLA renders a graph per decision: never in ALL_DUMPS.
FUSION_EXPLORER = "fusion-explorer"
_FORMAT_FLAGS = {HLO_TEXT: "xla_dump_hlo_as_text", HLO_HTML: "xla_dump_hlo_as_html", HLO_DOT: "xla_dump_hlo_as_dot",
                 HLO_PROTO: "xla_dump_hlo_as_proto", FUSION_EXPLORER: "xla_dump_fusion_visualization"}
# DebugOptions that cut XLA's HLO pass pipeline short.
_PIPELINE_CUTTING_FLAGS = ("xla_disable_all_hlo_passes", "xla_disable_hlo_passes", "xla_enable_hlo_passes_only")
# The DebugOptions that CompileSpec's own fields set: spelled there, not in a target's flags.
PASS_DUMP_FLAG = "xla_dump_hlo_pass_re"
ONLY_PASSES_FLAG = "xla_enable_hlo_passes_only"
DISABLED_PASSES_FLAG = "xla_disable_hlo_passes"


def pipeline_cuts(xla_flags: Any) -> list[str]:
    """Those of these flags that leave out some of XLA's HLO passes. The HLO that is left
    can be what XLA's codegen aborts on: jaxlib 0.12's CPU scatter emitter without
    scatter_simplifier (``--xla_disable_all_hlo_passes``) ends the process without a word,
    where 0.10.2 refused it."""
    flags = dict(xla_flags)
    return [n for n in _PIPELINE_CUTTING_FLAGS if flags.get(n) not in (None, False, "", "false", "False", 0)]


def cuts_pipeline(xla_flags: Any) -> bool:
    return bool(pipeline_cuts(xla_flags))


@dataclass
class XlaArtifacts:
    """What one XLA compile produced, keyed by dump file name sans prefix."""

    platform: str
    hlo_module_name: str
    files: dict[str, bytes] = field(repr=False)
    scheduled_hlo: str = field(repr=False, default="")
    memory_stats: dict[str, int] = field(default_factory=dict)
    cost: dict[str, float] | None = None
    # The optimized HloModuleProto (the executable's, as ``scheduled_hlo`` prints it):
    # kernel sources and per-fusion cost read its instructions and metadata.
    optimized_proto: bytes = field(repr=False, default=b"")
    compile_error: str | None = None  # set when only the dumps written before a failure exist
    mtimes_ns: dict[str, int] = field(default_factory=dict, repr=False)  # when XLA wrote each file
    pass_calls: list[Any] | None = field(default=None, repr=False)  # xla.pass_log.PassCall, when logged
    compile_span: tuple[float, float] | None = None  # time.time() around XLA's compile call, when here
    phases: list[Any] | None = field(default=None, repr=False)  # xla.compile_phases.PhaseRow, when timed
    emitters: tuple[str, ...] = ()  # codegen emitters dumped besides LLVM IR and PTX (Triton's)
    dumps: tuple[str, ...] = ALL_DUMPS  # what the compile was asked to dump (ALL_DUMPS' names)
    notes: list[str] = field(default_factory=list)  # what the user should know of this compile

    def matching(self, pattern: str) -> list[tuple[str, bytes]]:
        rx = re.compile(pattern)
        return sorted(((k, v) for k, v in self.files.items() if rx.search(k)),
                      key=lambda kv: _natural_key(kv[0]))

    def one(self, pattern: str, stage: str) -> bytes:
        found = self.matching(pattern)
        if not found:
            raise StageError(f"XLA wrote no output for stage '{stage}' on {self.platform}"
                             + (f" (compile failed: {self.compile_error})" if self.compile_error else ""))
        return found[0][1]


def _natural_key(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


# ------------------------------------------------------------------ the one compile

@dataclass(frozen=True)
class CompileSpec:
    """One XLA compile as a value: everything its ``CompileOptions``, its devices and the
    way it runs are made of. Every caller compiles through :func:`compile` with one.

    ``target`` (targets.Target: the platform class, its GPU spec, the user's DebugOptions)
    says what for; the rest says how: replicas and partitions over a device assignment
    (``device_ids`` in logical order, replica-major; empty: 0..N-1) and the SPMD
    ``partitioner`` (``shardy``, ``gspmd``; None: nothing to partition); XLA's
    ``run_backend_only``; which of :data:`ALL_DUMPS` and which codegen ``emitters`` to read
    back; per-pass HLO dumps (``pass_dump_re``, XLA's ``xla_dump_hlo_pass_re``) and a pass
    list run alone (``disabled_passes``: every other pass, as ``xla_disable_hlo_passes``;
    xla.passes says why not ``xla_enable_hlo_passes_only``); XLA's pass log at
    ``pass_log`` (a level of xla.pass_log, read only by a process started with it: such a
    compile runs in a helper); ``keep_going`` (a failed compile still gives what it dumped);
    ``isolated`` (in a helper process, whose death becomes a CompileError; no executable
    comes back); ``on_device`` (for devices to run on, not device-less); ``build_options``
    (ExecutableBuildOptions fields by name, a dumped compile's: tpu.replay).
    """

    target: Any
    num_replicas: int = 1
    num_partitions: int = 1
    device_ids: tuple[int, ...] = ()
    partitioner: str | None = None
    backend_only: bool = False
    dumps: tuple[str, ...] = ()
    emitters: tuple[str, ...] = ()
    pass_dump_re: str | None = None
    disabled_passes: tuple[str, ...] = ()
    pass_log: int = 0
    keep_going: bool = False
    isolated: bool = False
    on_device: bool = False
    build_options: tuple[tuple[str, Any], ...] = ()

    @property
    def platform(self) -> str:
        return self.target.platform

    @property
    def num_devices(self) -> int:
        return self.num_replicas * self.num_partitions

    def with_(self, **changes: Any) -> CompileSpec:
        return replace(self, **changes)

    def debug_options(self, workdir: str | None = None) -> list[tuple[str, Any]]:
        """DebugOptions for this compile: the target's defaults, what the spec asks XLA to
        dump, then the user's flags (the user's own dump flags are kept; the driver owns
        the dump directory). ``workdir``: where XLA dumps (CUDA's kernel cache file too)."""
        from .._native import jaxlib as _jaxlib

        user = dict(self.target.xla_flags)
        flags: dict[str, Any] = dict(self.target.flag_defaults(on_device=self.on_device))
        if workdir is not None:
            # The codegen dump regex holds the user's own, beside the driver's.
            codegen = _jaxlib.codegen_dump_flags(user.get("xla_dump_emitter_re"), self.emitters,
                                                 llvm=LLVM_IR in self.dumps, ptx=PTX in self.dumps)
            flags.update({_FORMAT_FLAGS[d]: True for d in self.dumps if d in _FORMAT_FLAGS})
            flags.update(codegen)
            flags.update(self.target.dump_flags(workdir))
            if HLO_PASSES_END in self.dumps and self.pass_dump_re is None and \
                    not any(k in user for k, _ in HLO_PASSES_END_FLAGS):
                flags.update(HLO_PASSES_END_FLAGS)  # the user's own pass dumps hold that file too
            user = {k: v for k, v in user.items() if k not in codegen}
        flags.update(user)
        if self.pass_dump_re is not None:
            flags[PASS_DUMP_FLAG] = self.pass_dump_re
        if self.disabled_passes:
            # XLA CHECK-fails on both flags at once: the list run alone wins over the user's
            flags.pop(ONLY_PASSES_FLAG, None)
            flags[DISABLED_PASSES_FLAG] = ",".join(self.disabled_passes)
        flags.pop("xla_dump_to", None)  # the driver owns the dump directory
        return sorted(flags.items())

    def compile_options(self, devices: list[Any], workdir: str | None = None) -> Any:
        """XLA's CompileOptions of this compile, for ``devices`` (logical order)."""
        from .._native import jaxlib as _jaxlib

        opts = _jaxlib.compile_options(num_replicas=self.num_replicas, num_partitions=self.num_partitions,
                                       env_overrides=self.debug_options(workdir), dump_to=workdir)
        # Devices not numbered 0..N-1 (a multislice TPU topology's, 100000..) need their
        # assignment said: libtpu refuses a multislice compile without a static one.
        numbered = [d.id for d in devices] != list(range(len(devices)))
        if self.num_devices > 1 or self.backend_only or self.device_ids or numbered:
            opts = _jaxlib.spmd_options(opts, device_ids=[d.id for d in devices],
                                        num_replicas=self.num_replicas, num_partitions=self.num_partitions,
                                        use_shardy=self.partitioner == "shardy",
                                        run_backend_only=self.backend_only)
        for name, value in self.build_options:
            setattr(opts.executable_build_options, name, list(value) if isinstance(value, tuple) else value)
        return opts

    def cuts_pipeline(self) -> bool:
        return bool(self.disabled_passes) or cuts_pipeline(self.target.xla_flags)


@dataclass
class Compilation:
    """What :func:`compile` gives: the artifacts (dumps, optimized module, memory, cost), and
    the executable with its devices in logical order, where the compile ran here."""

    art: XlaArtifacts
    executable: Any = None
    devices: list[Any] = field(default_factory=list)
    compile_ms: float = 0.0


def compile(module: Any, spec: CompileSpec, name: str = "module", *,
            native_log: list[str] | None = None) -> Compilation:
    """Compile ``module`` (an ir.Module, as XLA takes it) as ``spec`` says: the one way the
    driver asks XLA for a compile.

    Before anything loads, the target refuses what it cannot do (``Target.check``) and a
    walk over the module refuses what XLA would die on (``_native.guards``). A module
    XLA may abort on (XLA's own output, with fusions) and a pipeline cut short compile in
    the isolate helper, where a death becomes a CompileError; so does everything
    ``spec.isolated`` asks for, a pass log, and a Triton log (XLA's Triton pipeline then
    leaves LLVM symbolizing stack traces for the rest of its process). A compile for
    devices to run on (``spec.on_device``) that is at risk is tried in the helper first,
    then made here. XLA's errors come back as typed errors (a flag it refuses, a ptxas
    report, malformed autotune results); with ``keep_going`` a failed compile still gives
    the dumps written before it failed. ``native_log`` gets what XLA wrote on fd 2 while
    it compiled here. Ctrl-C ends the wait at once (``_native.jaxlib.interruptible``).
    """
    from .._native import guards

    spec.target.check()
    spec.target.check_module(module)
    risky = guards.refuse_fatal(module, one_device=spec.num_devices == 1 and not spec.backend_only)
    env = _helper_env(spec)
    if env or spec.isolated or ((risky or spec.cuts_pipeline()) and not spec.on_device):
        art = _in_helper(module, name, _helper_spec(spec), _helper_env(_helper_spec(spec)))
        return Compilation(art)
    if risky or spec.cuts_pipeline():  # a run's compile: tried where a death is an error first
        trial = _helper_spec(spec.with_(dumps=(), emitters=(), keep_going=False))
        _in_helper(module, name, trial, _helper_env(trial))
    return _compile_here(module, name, spec, native_log)


def prestart(target: Any, dumps: tuple[str, ...]) -> None:
    """Start the process a device-less TPU compile of ``target`` dumping ``dumps`` runs in, now:
    its interpreter, jaxlib and libtpu load and the topology is made while this process reads the
    module (a fresh process of its own; a command that compiles one module waited ~0.2 s for
    that first). Nothing for other targets, or where the compile would refuse at once."""
    if target.platform != "tpu" or getattr(target, "attached", False):
        return
    from .._native import isolate
    from .._native import jaxlib as _jaxlib
    from ..errors import DriverError

    try:
        target.check()
    except DriverError:
        return  # the compile says it
    env = _helper_env(CompileSpec(target, dumps=tuple(dumps)))
    isolate.prestart(_jaxlib.MLIR_PRELOAD, env, _warm_tpu, (target.topology.name, target.topology.shape))


def _warm_tpu(name: str, shape: tuple[int, ...]) -> None:
    """In the TPU process: libtpu loaded, the topology made (its errors are the compile's to say)."""
    from .._native import jaxlib as _jaxlib

    try:
        _jaxlib.tpu_compile_only_devices(name, shape)
    except Exception:  # noqa: BLE001 - the compile makes the same call and reports it
        pass


def _helper_spec(spec: CompileSpec) -> CompileSpec:
    """``spec`` as a helper process compiles it: for chips attached here (which this process
    holds), the device-less compile for their topology."""
    device_less = getattr(spec.target, "device_less", None)
    if getattr(spec.target, "attached", False) and device_less is not None:
        return spec.with_(target=device_less(), on_device=False)
    return spec


def stage_spec(options: Any, module: Any, source: str, *, dumps: tuple[str, ...] = (),
               emitters: tuple[str, ...] = ()) -> tuple[CompileSpec, list[str]]:
    """The compile the XLA stages read (stages.base.StageOptions ``options``), and what to tell
    the user of it: a sharded module (``mhlo.num_partitions`` > 1) is compiled partitioned
    over as many devices, as XLA's runners do, unless ``options.num_partitions`` says how many
    (1: the unpartitioned program)."""
    spec = CompileSpec(options.target, dumps=tuple(dumps), emitters=tuple(emitters))
    dumped = getattr(options, "dumped", None)
    if dumped is not None:  # a dumped module, as its dump's compile options say (tpu.replay)
        return spec.with_(num_replicas=dumped.num_replicas, num_partitions=dumped.num_partitions,
                          device_ids=dumped.device_ids, partitioner=dumped.partitioner,
                          build_options=dumped.build_options), []
    declared = declared_partitions(module)
    partitions = declared if options.num_partitions is None else options.num_partitions
    if partitions <= 1 or (options.num_partitions is None and not has_shardings(module)):
        return spec, []  # nothing sharded: each device would run the whole program
    partitioner = partitioner_of(module)
    why = "as its mhlo.num_partitions says" if options.num_partitions is None else "as asked"
    unpartitioned = f"; {param('num_partitions', 1)} compiles the unpartitioned program" \
        if options.num_partitions is None else ""
    note = (f"{source}: compiled for {partitions} partitions, {why} ({partitioner}: per-device shapes and "
            f"collectives){unpartitioned}")
    return spec.with_(num_partitions=partitions, partitioner=partitioner), [note]


def declared_partitions(module: Any) -> int:
    """The partition count a module says it is for (``mhlo.num_partitions``; 1 without it)."""
    from jaxlib.mlir import ir

    attrs = module.operation.attributes
    if "mhlo.num_partitions" not in attrs:
        return 1
    try:
        return max(1, ir.IntegerAttr(attrs["mhlo.num_partitions"]).value)
    except (TypeError, ValueError):
        return 1


def sharding_kinds(module: Any) -> tuple[bool, bool]:
    """(Shardy shardings, HLO shardings) the module carries: Shardy's ops and attributes or
    their round-trip form in an HLO dump (``xla.sdy.*``), and ``mhlo.sharding`` attributes."""
    text = module.operation.get_asm(large_elements_limit=1)
    return bool(re.search(r"\bsdy\.|xla\.sdy\.", text)), "mhlo.sharding" in text


def has_shardings(module: Any) -> bool:
    """Whether the module says how anything is sharded."""
    return any(sharding_kinds(module))


def partitioner_of(module: Any) -> str:
    """The SPMD partitioner a module's shardings are written for: ``shardy`` for Shardy's
    own (or their round-trip form) and named mesh shardings (``{mesh['b'=4], ...}``, jax
    0.12's), else ``gspmd``."""
    sdy, _ = sharding_kinds(module)
    if sdy or "{mesh[" in module.operation.get_asm(large_elements_limit=1):
        return "shardy"
    return "gspmd"


def run_on_host(module: Any, x64: bool = False) -> list[Any]:
    """The results of a module without parameters, run by XLA CPU on the driver's host client
    (a check file's constants numpy cannot read: inputs.checks); ``x64``: 64-bit values
    kept, for this run only."""
    from .._native import jaxlib as _jaxlib
    from .platforms import CpuTarget

    with _jaxlib.x64(x64):
        done = compile(module, CompileSpec(CpuTarget(), on_device=True), "constants")
        return _jaxlib.execute(done.executable, [], done.devices[0])


def _helper_env(spec: CompileSpec) -> dict[str, str]:
    """What the process compiling ``spec`` must start with: the platform's (Target.compile_env),
    XLA's pass log and timers (read once, when XLA loads), LLVM without stack-trace
    symbolization for a Triton log."""
    env: dict[str, str] = dict(spec.target.compile_env())  # a platform's own (TPU: libtpu's)
    _merge_env(env, spec.target.dump_env(spec.dumps))
    if spec.pass_log:
        from . import compile_phases, pass_log

        _merge_env(env, spec.target.pass_log_env(pass_log.log_env(spec.pass_log)))
        if spec.pass_log == pass_log.TIMES_LEVEL and "TF_CPP_VMODULE" in env:
            env = compile_phases.with_timers(env)
    if _dumps_triton_log(spec) and not os.environ.get(_NO_SYMBOLIZATION):
        env[_NO_SYMBOLIZATION] = "1"  # the command lines set it for their own process
    return env


def _merge_env(env: dict[str, str], more: dict[str, str]) -> None:
    """``more`` into ``env``; libtpu's flags (LIBTPU_INIT_ARGS) from both are kept."""
    for key, value in more.items():
        env[key] = f"{env[key]} {value}" if key == "LIBTPU_INIT_ARGS" and env.get(key) else value


def _dumps_anything(spec: CompileSpec) -> bool:
    """Whether the compile dumps: a run's compile asks for nothing; a stage's does (XLA writes
    the thunk sequence, buffer assignment and autotune results with any dump)."""
    return not spec.on_device or bool(spec.dumps or spec.emitters or spec.pass_dump_re or spec.keep_going)


def _compile_here(module: Any, name: str, spec: CompileSpec, native_log: list[str] | None,
                  workdir: str | None = None) -> Compilation:
    """The compile, in this process; dumped into ``workdir`` (kept: its owner removes it), else
    into a temporary directory of its own."""
    from .._native import jaxlib as _jaxlib
    from . import flags as xla_flags

    devices = _devices(spec)
    own = workdir is None and _dumps_anything(spec)
    if own:
        workdir = tempfile.mkdtemp(prefix="mlirhlo-xla-")
    executable, error, span, ms = None, None, None, 0.0
    try:
        opts = spec.compile_options(devices, workdir)
        try:
            started, t0 = time.time(), time.perf_counter()
            executable = _jaxlib.compile_executable(module, devices, opts, native_log=native_log,
                                                    load=spec.on_device)
            span, ms = (started, time.time()), ms_since(t0)
        except CompileError as e:
            flag_error = xla_flags.translate_compile_error(e.message, xla_flags.known_names())
            if flag_error is not None:
                raise flag_error from None
            autotune_file = dict(spec.target.xla_flags).get("xla_gpu_load_autotune_results_from")
            if autotune_file and "autotune" in e.message.lower():
                raise _autotune_error(str(autotune_file), getattr(e, "native_log", "")) from None
            tool_error = spec.target.translate_error(e.message, getattr(e, "native_log", ""))
            if tool_error is not None and not spec.keep_going:
                raise tool_error from None
            if not spec.keep_going:
                raise
            error = (tool_error or e).message
        if workdir is not None:
            spec.target.collect_dumps(workdir)
        files, mtimes = _read_dump(workdir) if workdir is not None else ({}, {})
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    art = _artifacts(spec, files, mtimes, executable, error, span)
    return Compilation(art, executable, devices, ms)


def _artifacts(spec: CompileSpec, files: dict[str, bytes], mtimes: dict[str, int], executable: Any,
               error: str | None, span: tuple[float, float] | None) -> XlaArtifacts:
    """What a compile gives, keyed without XLA's ``module_NNNN.<name>.`` prefix."""
    name = _hlo_module_name(files, executable)
    # libtpu puts its build after the module name (``module_0001.main.cl_1004524046.``): dropped
    # too, so a stage's key does not change with the libtpu version.
    prefix = re.compile(r"^module_\d+\." + (re.escape(name) + r"\." if name else "") + r"(?:cl_\d+\.)?")
    keyed = {prefix.sub("", k): v for k, v in files.items()}
    art = XlaArtifacts(spec.platform, name, keyed, compile_error=error,
                       mtimes_ns={prefix.sub("", k): v for k, v in mtimes.items()}, emitters=tuple(spec.emitters),
                       dumps=tuple(spec.dumps), compile_span=span, notes=spec.target.compile_notes())
    if executable is not None:
        _read_executable(art, executable, EXECUTABLE_HLO in spec.dumps)
    return art


def _devices(spec: CompileSpec) -> list[Any]:
    """The compile's devices in logical order (replica-major), as the device assignment names them."""
    count = spec.num_devices
    ids = list(spec.device_ids) or list(range(count))
    if len(ids) != count:
        raise CompileError(f"{len(ids)} device ids for {count} devices")
    found = spec.target.compile_devices(max(ids) + 1, on_device=spec.on_device)
    by_id = {d.id: d for d in found}
    missing = [i for i in ids if i not in by_id]
    if missing and not spec.device_ids and len(found) >= count:
        return list(found[:count])  # a multislice TPU topology's: 100000.., 200000..
    if missing:
        raise CompileError(f"no device {missing[0]} among the {len(found)} of {spec.target.label()}")
    return [by_id[i] for i in ids]


def _read_executable(art: XlaArtifacts, executable: Any, optimized: bool) -> None:
    """What the executable tells beside the dumps: its optimized module (when asked: copying
    a 66k-line module out took 9.9 s), memory stats and XLA's cost analysis."""
    if optimized:
        module = executable.hlo_modules()[0]
        art.scheduled_hlo = module.to_string()
        art.optimized_proto = module.as_serialized_hlo_module_proto()
    try:
        stats = executable.get_compiled_memory_stats()
        art.memory_stats = {k: getattr(stats, k) for k in dir(stats)
                            if k.endswith("_in_bytes") and isinstance(getattr(stats, k), int)}
    except Exception:  # UNIMPLEMENTED where a client keeps none
        art.memory_stats = {}
    try:
        cost = executable.cost_analysis()
        art.cost = {k: float(v) for k, v in sorted(dict(cost).items())}
    except Exception:  # UNIMPLEMENTED on the CUDA compile-only client
        art.cost = None


TRITON_LOG_EMITTER = "triton-to-llvm"
# XLA's Triton log (xla/codegen/ir_printing.cc) sets ``printStackTraceOnDiagnostic`` on the
# MLIR context of Triton's pipeline, and the flag stays set there for later compiles in the
# process. Every Triton diagnostic (the MLP step's fusions emit a dozen warnings and remarks
# each) then gets a stack trace, which LLVM symbolizes against the CUDA plugin's library:
# about 0.3 s each, 36 s of the MLP step's 37 s compile. The log never holds those traces
# (XLA writes ``diag.str()`` only). So such compiles run where LLVM's symbolization is off
# (LLVM reads the variable at each trace): the command lines turn it off for their own
# process; in another (a user's) they run in a helper started with it off.
_NO_SYMBOLIZATION = "LLVM_DISABLE_SYMBOLIZATION"


def _dumps_triton_log(spec: CompileSpec) -> bool:
    """Whether this compile writes XLA's Triton log (asked by a stage, or by the user's own
    ``--xla_dump_emitter_re``, which XLA matches as a regex)."""
    if spec.platform != "cuda":
        return False
    if TRITON_LOG_EMITTER in spec.emitters:
        return True
    user = str(dict(spec.target.xla_flags).get("xla_dump_emitter_re") or "")
    try:
        return bool(user) and re.search(user, TRITON_LOG_EMITTER) is not None
    except re.error:
        return False  # XLA refuses it: that compile's error


def _in_helper(module: Any, name: str, spec: CompileSpec, env: dict[str, str]) -> XlaArtifacts:
    """:func:`compile` in isolate's helper (one per ``env``, kept for later calls): its
    artifacts, with XLA's pass log parsed when ``spec.pass_log`` asked for one. XLA dumps
    into a directory made here, so a death there still leaves what it wrote before: with
    ``keep_going`` those are the artifacts; otherwise the death is a CompileError naming
    what may have caused it."""
    import io

    from .._native import isolate
    from .._native import jaxlib as _jaxlib
    from ..errors import NativeCrash

    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    workdir = tempfile.mkdtemp(prefix="mlirhlo-xla-") if _dumps_anything(spec) else None
    try:
        try:
            quiet = spec.pass_log and spec.target.pass_log_is_whole_log  # libtpu's log, parsed below
            art, log = isolate.call(_compile_in_helper, (buf.getvalue(), name, spec, workdir),
                                    what="XLA's compile", env=env or None,
                                    on_stderr=(lambda _: None) if quiet else None,
                                    preload=_jaxlib.MLIR_PRELOAD)
        except CompileError as e:
            if _fused(module) and re.search(r"fusion|failed to legalize operation 'mhlo\.", e.message, re.I):
                raise CompileError(_jaxlib.REFUSED_FUSIONS, hint=_jaxlib.BEFORE_OPTIMIZATIONS) from None
            raise
        except NativeCrash as e:
            if spec.keep_going and workdir is not None:
                files, mtimes = _read_dump(workdir)
                art, log = _artifacts(spec, files, mtimes, None, e.message, None), e.native_log or ""
            elif _fused(module):
                raise CompileError(_jaxlib.REFUSED_FUSIONS, hint=_jaxlib.BEFORE_OPTIMIZATIONS) from None
            else:
                cut = ", ".join(f"--{n}" for n in pipeline_cuts(spec.debug_options()))
                raise CompileError(e.message, hint=f"{cut} may have left HLO that XLA's codegen aborts on"
                                   if cut else spec.target.crash_hint(spec.dumps)) from None
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
    if spec.pass_log:
        from . import compile_phases, pass_log

        art.pass_calls = pass_log.parse(log, changes_logged=spec.pass_log >= pass_log.CHANGES_LEVEL)
        if spec.pass_log == pass_log.TIMES_LEVEL and art.compile_span is not None and art.compile_error is None:
            events = compile_phases.parse_events(log, art.compile_span[0])
            art.phases = compile_phases.xla_rows(events, art.compile_span, art.pass_calls,
                                                 compile_phases.ptx_kernels(art.files))
    return art


def before_optimizations_hint(error: Any, source: str | None) -> Any:
    """``error``, where it refuses XLA's own output, with a hint naming the dump's
    ``*.before_optimizations.txt`` beside ``source`` (an ``*after_optimizations*`` file) when
    there is one. Returns the error."""
    from .._native import jaxlib as _jaxlib

    if source and getattr(error, "message", None) == _jaxlib.REFUSED_FUSIONS:
        m = re.match(r"^(.*?)\.(?:\w+_)?after_optimizations.*$", os.path.basename(source))
        if m:
            sibling = os.path.join(os.path.dirname(source), m.group(1) + ".before_optimizations.txt")
            if os.path.isfile(sibling):
                error.hint = f"give {sibling}, the same dump's module before XLA's optimizations"
    return error


def _fused(module: Any) -> bool:
    from .._native.guards import first_fusion

    return first_fusion(module) is not None


def _compile_in_helper(bytecode: bytes, name: str, spec: CompileSpec,
                       workdir: str | None) -> tuple[XlaArtifacts, str]:
    """In the helper: the compile, here, dumped into the caller's ``workdir``; its artifacts
    and what XLA wrote on fd 2."""
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib

    log: list[str] = []
    with _jaxlib.ir_context():
        module = ir.Module.parse(bytecode)
        art = _compile_here(module, name, spec, log, workdir).art
    return art, "".join(log)


def _autotune_error(path: str, native_log: str) -> Exception:
    from ..errors import FlagError

    m = re.search(r"Error parsing text-format xla\.AutotuneResults: (\d+):(\d+): (.*)", native_log)
    if m:
        return FlagError(f"malformed autotune results: {m.group(3).strip()}", file=path,
                         line=int(m.group(1)), col=int(m.group(2)))
    return FlagError("malformed autotune results (not an AutotuneResults textproto)", file=path)


def _read_dump(directory: str) -> tuple[dict[str, bytes], dict[str, int]]:
    out, mtimes = {}, {}
    for root, _, names in os.walk(directory):
        for n in names:
            path = os.path.join(root, n)
            key = os.path.relpath(path, directory)
            with open(path, "rb") as f:
                out[key] = f.read()
            mtimes[key] = os.stat(path).st_mtime_ns
    return out, mtimes


def _hlo_module_name(files: dict[str, bytes], executable: Any) -> str:
    # The dump's own spelling first: jaxlib 0.9's device-less CUDA executable reports
    # the clone XLA compiled ("<name>-clone"), while the dump files use the name. Text or
    # proto: diff's compiles dump the HLO as a proto only.
    for k in files:
        m = re.match(r"^module_\d+\.(.+?)(?:\.cl_\d+)?\.before_optimizations\.(?:txt|hlo\.pb)$", k)
        if m:
            return m.group(1)
    if executable is not None:
        return executable.hlo_modules()[0].name
    return ""


# ---------------------------------------------------------- per-pass HLO dumps

_PASS_DUMP = re.compile(r"^(\d{4})\.(.+?)\.after_(.+?)\.before_(.+?)\.txt$")


@dataclass(frozen=True)
class PassDump:
    index: int
    pipeline: str
    after: str
    before: str
    key: str


def pass_dumps(art: XlaArtifacts) -> list[PassDump]:
    out = []
    for key in art.files:
        m = _PASS_DUMP.match(key)
        if m:
            out.append(PassDump(int(m.group(1)), m.group(2), m.group(3), m.group(4), key))
    return sorted(out, key=lambda d: d.index)


def hlo_after_pass(art: XlaArtifacts, pass_name: str) -> str:
    """HLO right after the first run of ``pass_name`` (from XLA's per-pass dumps)."""
    dumps = pass_dumps(art)
    for d in dumps:
        if d.after == pass_name:
            return art.files[d.key].decode()
    seen = sorted({d.after for d in dumps} | {d.before for d in dumps}
                  - {"pipeline-start", "pipeline-end"})
    from ..errors import did_you_mean

    if pass_name in seen:
        # XLA dumps only after passes that changed the module.
        raise StageError(f"XLA pass '{pass_name}' ran but did not change this module")
    raise StageError(f"XLA pass '{pass_name}' did not run on this module",
                     hint=did_you_mean(pass_name, seen) or "see --list-passes --platform")


def hlo_after_only(art: XlaArtifacts, enabled: list[str]) -> str:
    """HLO after the last change by any of the ``enabled`` passes (or as given)."""
    last = None
    for d in pass_dumps(art):
        if d.after in enabled:
            last = d
    if last is not None:
        return art.files[last.key].decode()
    before = art.matching(r"^before_optimizations\.txt$")
    if before:
        return before[0][1].decode()
    raise StageError("XLA wrote no HLO for this module")


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


# What --list-passes compiles when given no input. XLA dumps only the passes that
# ran and changed a module, so it holds the ops many passes look for: dot, reduce,
# transpose, elementwise, collectives (two partitions), reduce-window, scatter.
REFERENCE_HLO = """HloModule reference, num_partitions=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[32,64] parameter(0)
  w = f32[64,16] parameter(1)
  dot = f32[32,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[32,16] tanh(dot)
  tt = f32[16,32] transpose(t), dimensions={1,0}
  zero = f32[] constant(0)
  sum = f32[16] reduce(tt, zero), dimensions={1}, to_apply=add
  b = f32[16,32] broadcast(sum), dimensions={0}
  centered = f32[16,32] subtract(tt, b)
  ag0 = f32[32,32] all-gather(centered), dimensions={0}, replica_groups={{0,1}}, channel_id=1, use_global_device_ids=true
  ag1 = f32[32,32] all-gather(centered), dimensions={0}, replica_groups={{0,1}}, channel_id=2, use_global_device_ids=true
  v = f32[1024] parameter(2)
  cumsum = f32[1024] reduce-window(v, zero), window={size=1024 pad=1023_0}, to_apply=add
  idx = s32[3] parameter(3)
  upd = f32[3] parameter(4)
  scattered = f32[1024] scatter(cumsum, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT out = (f32[32,32], f32[32,32], f32[1024]) tuple(ag0, ag1, scattered)
}
"""


def reference_module() -> Any:
    return hlo_module(REFERENCE_HLO, "<reference>")


def hlo_module(text: str, source: str) -> Any:
    """The ir.Module of HLO text the driver holds (a built-in module, not a user's input)."""
    from .._native import jaxlib as _jaxlib
    from ..inputs.loader import parse_mlir

    return parse_mlir(_jaxlib.hlo_proto_to_stablehlo_bytecode(_jaxlib.hlo_text_to_proto(text)), source)


def module_for_xla(module: Any, source: str | None = None, line_offset: int = 0,
                   fold_constants: bool = False) -> Any:
    """The module XLA compiles for the XLA stages (:func:`prepared_for_xla`'s module)."""
    return prepared_for_xla(module, source, line_offset, fold_constants)[0]


def prepared_for_xla(module: Any, source: str | None = None, line_offset: int = 0,
                     fold_constants: bool = False) -> tuple[Any, Any]:
    """(the module XLA compiles for the XLA stages, its ``checks.CheckPlan`` or None).

    A self-checking module (``check.*`` custom calls, which no XLA backend
    implements) is compiled as ``mlirhlo run`` executes it: ``checks.prepare``
    takes the checks out, makes their operands results of ``@main`` and feeds
    its ``@inputs()`` values (and @main's non-splat constants) as parameters, so
    XLA compiles the ops under test instead of folding them away; with
    ``fold_constants`` they stay constants. Any other module is compiled as
    given (plan None). The MLIR-level stages keep printing the module itself.
    """
    from ..inputs import checks

    if not checks.has_checks(module):
        return module, None
    plan = checks.prepare(module, evaluate=run_on_host, fold_constants=fold_constants, source=source,
                          line_offset=line_offset)
    return plan.module, plan
