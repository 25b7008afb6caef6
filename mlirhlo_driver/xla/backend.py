"""Compile a module with jaxlib's XLA and collect what the XLA stages read.

One compile per (module, options): XLA is told to dump into a private
temporary directory (``xla_dump_to`` set for this compile only, never the
process's XLA_FLAGS); every file is read into memory under a stable key (XLA's
``module_NNNN.<name>.`` prefix carries a process-wide counter and is dropped)
and the directory is removed. CUDA compiles are device-less: the target is a
GpuTargetConfigProto from gpu_specs/, no GPU or driver is involved.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import CompileError, StageError, param

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
ALL_DUMPS = (HLO_TEXT, HLO_HTML, HLO_DOT, HLO_PROTO, LLVM_IR, PTX, EXECUTABLE_HLO)
_FORMAT_FLAGS = {HLO_TEXT: "xla_dump_hlo_as_text", HLO_HTML: "xla_dump_hlo_as_html", HLO_DOT: "xla_dump_hlo_as_dot",
                 HLO_PROTO: "xla_dump_hlo_as_proto"}
# XLA's kernel cache file (a CompilationCacheProto), written into the dump directory.
KERNEL_CACHE_FLAG = "xla_gpu_kernel_cache_file"
KERNEL_CACHE_FILE = "xla_kernel_cache.pb"
# Without a GPU there is nothing to autotune on: XLA must pick kernels heuristically.
_DEVICELESS_CUDA_DEFAULTS = (("xla_gpu_autotune_level", 0),)
# DebugOptions that cut XLA's HLO pass pipeline short.
_PIPELINE_CUTTING_FLAGS = ("xla_disable_all_hlo_passes", "xla_disable_hlo_passes", "xla_enable_hlo_passes_only")


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


def flag_overrides(options: Any, emitters: tuple[str, ...] = (),
                   dumps: tuple[str, ...] = ALL_DUMPS) -> list[tuple[str, Any]]:
    """DebugOptions for this compile: driver defaults, then the user's flags. ``emitters``:
    codegen emitters whose output to dump too (Triton's, for the Triton stages); ``dumps``:
    which of :data:`ALL_DUMPS` to ask XLA for (the user's own dump flags are kept)."""
    from .._native import jaxlib as _jaxlib

    user = dict(options.xla_flags)
    # The codegen dump regex already holds the user's own, beside the driver's.
    codegen = _jaxlib.codegen_dump_flags(user.get("xla_dump_emitter_re"), emitters,
                                         llvm=LLVM_IR in dumps, ptx=PTX in dumps)
    flags: dict[str, Any] = {**{_FORMAT_FLAGS[d]: True for d in dumps if d in _FORMAT_FLAGS}, **codegen}
    if options.platform == "cuda":
        flags.update(_DEVICELESS_CUDA_DEFAULTS)
        if not user.get("xla_gpu_cuda_data_dir"):
            # XLA tries PATH before pip's ptxas; one of another CUDA major may be there.
            from ..cuda import tools as cuda_tools

            flags["xla_gpu_cuda_data_dir"] = cuda_tools.cuda_data_dir()[0]
    flags.update({k: v for k, v in user.items() if k not in codegen})
    flags.pop("xla_dump_to", None)  # the driver owns the dump directory
    return sorted(flags.items())


def devices_for(options: Any) -> list[Any]:
    return _devices(*_device_args(options))


def _device_args(options: Any) -> tuple[str, str | None, str]:
    """(platform, spec text, spec name): what _devices needs, picklable for the helper."""
    spec = options.gpu_spec
    return (options.platform, spec.text if spec is not None else None,
            spec.name if spec is not None else "mlirhlo")


def _devices(platform: str, spec_text: str | None, spec_name: str) -> list[Any]:
    from .._native import jaxlib as _jaxlib
    from ..cuda.specs import target_config_for_installed_xla

    if platform == "cpu":
        return _jaxlib.cpu_devices()[:1]
    if platform == "cuda":
        if spec_text is None:
            raise CompileError(f"{param('platform', 'cuda')} needs a GPU spec ({param('gpu_spec')})")
        return _jaxlib.cuda_compile_only_devices(target_config_for_installed_xla(spec_text), name=spec_name)
    raise CompileError(f"unknown platform '{platform}'", hint="cpu or cuda")


def compile_module(module: Any, module_name: str, options: Any, *,
                   keep_going: bool = False, isolated: bool = False,
                   native_log: list[str] | None = None, emitters: tuple[str, ...] = (),
                   dumps: tuple[str, ...] = ALL_DUMPS) -> XlaArtifacts:
    """Compile ``module`` for ``options.platform`` and read back every artifact.

    With ``keep_going``, a failed compile still returns the dumps XLA wrote
    before failing (used to read per-pass HLO when a reduced pipeline cannot
    finish codegen). With ``isolated``, XLA compiles in isolate's helper process into
    this process's dump directory: a reduced pipeline can leave HLO that codegen
    CHECK-fails on (jaxlib 0.12's CPU scatter emitter without scatter_simplifier), and
    the dumps written before that death are still read (no executable then). Flags that
    cut the pipeline short (:func:`cuts_pipeline`) compile that way first as well; once
    that compile has finished, XLA compiles here again for the executable.
    ``native_log`` gets what XLA wrote on fd 2 while it compiled here. ``emitters`` and
    ``dumps`` (what to dump, :data:`ALL_DUMPS` by default): see :func:`flag_overrides`.
    """
    from .._native import jaxlib as _jaxlib
    from . import flags as xla_flags

    triton_log = _dumps_triton_log(options, emitters)
    if triton_log:
        unsymbolized_llvm_traces()
    user_cuda_dir = str(dict(options.xla_flags).get("xla_gpu_cuda_data_dir") or "") or None
    if options.platform == "cuda" and options.gpu_spec is not None:
        from ..cuda import tools as cuda_tools

        # XLA runs ptxas even device-less; a ptxas that cannot target the spec's sm
        # fails deep inside XLA, so say so before loading anything.
        spec = options.gpu_spec
        cuda_tools.check_target(spec.sm, user_cuda_dir, gpu=f"spec {spec.name}: {spec.gpu}")
    devices = None if isolated else devices_for(options)
    workdir = tempfile.mkdtemp(prefix="mlirhlo-xla-")
    try:
        overrides = flag_overrides(options, emitters, dumps)
        if options.platform == "cuda" and not dict(options.xla_flags).get(KERNEL_CACHE_FLAG):
            # XLA writes the cubins it assembled there, one per kernel module: the cubin,
            # sass and kernels stages read them instead of running ptxas again (same output).
            overrides = sorted([*overrides, (KERNEL_CACHE_FLAG, os.path.join(workdir, KERNEL_CACHE_FILE))])
        opts = _jaxlib.compile_options(dump_to=workdir, env_overrides=overrides)
        executable, error, span = None, None, None
        trial = not isolated and cuts_pipeline(options.xla_flags)
        try:
            if isolated or trial:
                _compile_isolated(module, options, opts, triton_log)
            if trial:  # it compiles: again here, for the executable (its dumps are those above)
                with tempfile.TemporaryDirectory(prefix="mlirhlo-xla-") as scratch:
                    executable = _jaxlib.compile_executable(
                        module, devices, _jaxlib.compile_options(dump_to=scratch, env_overrides=overrides))
            elif not isolated:
                started = time.time()
                executable = _jaxlib.compile_executable(module, devices, opts, native_log=native_log)
                span = (started, time.time())
        except CompileError as e:
            flag_error = xla_flags.translate_compile_error(e.message, xla_flags.known_names())
            if flag_error is not None:
                raise flag_error from None
            autotune_file = dict(options.xla_flags).get("xla_gpu_load_autotune_results_from")
            if autotune_file and "autotune" in e.message.lower():
                raise _autotune_error(str(autotune_file), getattr(e, "native_log", "")) from None
            tool_error = None
            if options.platform == "cuda":
                from ..cuda import tools as cuda_tools

                # XLA's multi-line "no suitable ptxas" report, as one line.
                tool_error = cuda_tools.translate_xla_error(
                    e.message, getattr(e, "native_log", ""), user_cuda_dir,
                    getattr(options.gpu_spec, "sm", None))
                if tool_error is not None and not keep_going:
                    raise tool_error from None
            if not keep_going:
                raise
            error = (tool_error or e).message
        files, mtimes = _read_dump(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    name = _hlo_module_name(files, executable)
    prefix = re.compile(r"^module_\d+\." + re.escape(name) + r"\.") if name else re.compile(r"^module_\d+\.")
    keyed = {prefix.sub("", k): v for k, v in files.items()}
    art = XlaArtifacts(options.platform, name, keyed, compile_error=error,
                       mtimes_ns={prefix.sub("", k): v for k, v in mtimes.items()}, emitters=tuple(emitters),
                       dumps=tuple(dumps), compile_span=span, notes=_spec_notes(options))
    if executable is not None:
        if EXECUTABLE_HLO in dumps:
            optimized = executable.hlo_modules()[0]
            art.scheduled_hlo = optimized.to_string()
            art.optimized_proto = optimized.as_serialized_hlo_module_proto()
        stats = executable.get_compiled_memory_stats()
        art.memory_stats = {k: getattr(stats, k) for k in dir(stats)
                            if k.endswith("_in_bytes") and isinstance(getattr(stats, k), int)}
        try:
            cost = executable.cost_analysis()
            art.cost = {k: float(v) for k, v in sorted(dict(cost).items())}
        except Exception:  # UNIMPLEMENTED on the CUDA compile-only client
            art.cost = None
    return art


_said: set[str] = set()  # notes about this jaxlib, said once per process


def _spec_notes(options: Any) -> list[str]:
    """What the installed XLA does differently with this compile's GPU spec, the first time."""
    if options.platform != "cuda" or options.gpu_spec is None:
        return []
    from ..cuda.specs import installed_xla_notes

    fresh = [n for n in installed_xla_notes(options.gpu_spec.text) if n not in _said]
    _said.update(fresh)
    return fresh


TRITON_LOG_EMITTER = "triton-to-llvm"
_NO_SYMBOLIZATION = "LLVM_DISABLE_SYMBOLIZATION"


def unsymbolized_llvm_traces() -> None:
    """Keep LLVM from symbolizing stack traces in this process, from now on.

    XLA's Triton log (xla/codegen/ir_printing.cc) sets ``printStackTraceOnDiagnostic``
    on the MLIR context of Triton's pipeline, and the flag stays set on that context for
    later compiles in the process too. Every Triton diagnostic (the MLP step's fusions
    emit a dozen warnings and remarks each) then gets a stack trace, which LLVM
    symbolizes against the CUDA plugin's library: about 0.3 s each, 36 s of the MLP
    step's 37 s compile, and 58 s of the next, log-less compile in the same process. The
    log never holds those traces (XLA's handler writes ``diag.str()`` only), so its
    bytes do not change. LLVM reads the variable at each trace (any value disables), so
    it stays set for the process's later compiles; a crash's trace then names symbols
    through ``dladdr`` only.
    """
    os.environ.setdefault(_NO_SYMBOLIZATION, "1")


def _dumps_triton_log(options: Any, emitters: tuple[str, ...]) -> bool:
    """Whether this compile writes XLA's Triton log (asked by a stage, or by the user's own
    ``--xla_dump_emitter_re``, which XLA matches as a regex)."""
    if options.platform != "cuda":
        return False
    if TRITON_LOG_EMITTER in emitters:
        return True
    user = str(dict(options.xla_flags).get("xla_dump_emitter_re") or "")
    try:
        return bool(user) and re.search(user, TRITON_LOG_EMITTER) is not None
    except re.error:
        return False  # XLA refuses it: that compile's error


def compile_logged(module: Any, module_name: str, options: Any, level: int, *,
                   keep_going: bool = False, dumps: tuple[str, ...] = ALL_DUMPS) -> XlaArtifacts:
    """:func:`compile_module`, in a helper process whose XLA logs its HLO passes at ``level``
    (xla.pass_log); the artifacts come back with ``pass_calls`` set. At
    ``pass_log.TIMES_LEVEL`` XLA logs its phase timers too, and ``phases`` is set
    (xla.compile_phases; None for a compile that failed). The helper starts once per
    environment (a fresh interpreter: XLA reads the setting when it loads) and is kept.
    With ``keep_going`` a failed compile still gives its dumps and its log so far."""
    from . import compile_phases, pass_log

    timed = level == pass_log.TIMES_LEVEL
    env = compile_phases.with_timers(pass_log.log_env(level)) if timed else pass_log.log_env(level)
    art, log = _in_helper_process(module, module_name, options, env, keep_going=keep_going, dumps=dumps)
    art.pass_calls = pass_log.parse(log, changes_logged=level >= pass_log.CHANGES_LEVEL)
    if timed and art.compile_span is not None and art.compile_error is None:
        events = compile_phases.parse_events(log, art.compile_span[0])
        art.phases = compile_phases.xla_rows(events, art.compile_span, art.pass_calls,
                                             compile_phases.ptx_kernels(art.files))
    return art


def _in_helper_process(module: Any, module_name: str, options: Any, env: dict[str, str], *,
                       keep_going: bool = False, emitters: tuple[str, ...] = (),
                       dumps: tuple[str, ...] = ALL_DUMPS) -> tuple[XlaArtifacts, str]:
    """:func:`compile_module` in isolate's helper started with ``env`` (one per ``env``, kept
    for later calls): its artifacts, and what XLA wrote on fd 2."""
    import io

    from .._native import isolate
    from .._native import jaxlib as _jaxlib

    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return isolate.call(_compile_in_helper_process,
                        (buf.getvalue(), module_name, options, keep_going, emitters, dumps),
                        what="XLA's compile", preload=_jaxlib.MLIR_PRELOAD, env=env)


def _compile_in_helper_process(bytecode: bytes, module_name: str, options: Any, keep_going: bool,
                               emitters: tuple[str, ...], dumps: tuple[str, ...]) -> tuple[XlaArtifacts, str]:
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib

    log: list[str] = []
    with _jaxlib.ir_context():
        module = ir.Module.parse(bytecode)
        art = compile_module(module, module_name, options, keep_going=keep_going, native_log=log,
                             emitters=emitters, dumps=dumps)
    return art, "".join(log)


def _compile_isolated(module: Any, options: Any, compile_options: Any, triton_log: bool = False) -> None:
    """Compile in isolate's helper; a native death there becomes a CompileError.
    ``triton_log``: the compile writes XLA's Triton log (:func:`unsymbolized_llvm_traces`)."""
    import io

    from .._native import isolate
    from .._native import jaxlib as _jaxlib
    from ..errors import NativeCrash

    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    try:
        message = isolate.call(_compile_in_helper, (buf.getvalue(), *_device_args(options),
                                                    compile_options.SerializeAsString(), triton_log),
                               what="XLA's compile", preload=_jaxlib.MLIR_PRELOAD)
    except NativeCrash as e:
        cut = ", ".join(f"--{n}" for n in pipeline_cuts(options.xla_flags))
        raise CompileError(e.message, hint=f"{cut} may have left HLO that XLA's codegen aborts on"
                           if cut else None) from None
    if message is not None:
        raise CompileError(message)


def _compile_in_helper(bytecode: bytes, platform: str, spec_text: str | None, spec_name: str,
                       compile_options: bytes, triton_log: bool = False) -> str | None:
    """In the helper: compile for the dumps only. XLA's error message, or None."""
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib

    if triton_log:
        unsymbolized_llvm_traces()

    with _jaxlib.ir_context():
        module = ir.Module.parse(bytecode)
        devices = _devices(platform, spec_text, spec_name)
        try:
            _jaxlib.compile_executable(module, devices, _jaxlib.compile_options_from_proto(compile_options))
        except CompileError as e:
            return e.message
    return None


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
        m = re.match(r"^module_\d+\.(.+)\.before_optimizations\.(?:txt|hlo\.pb)$", k)
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
    from .._native import jaxlib as _jaxlib
    from ..inputs.loader import parse_mlir

    proto = _jaxlib.hlo_text_to_proto(REFERENCE_HLO)
    return parse_mlir(_jaxlib.hlo_proto_to_stablehlo_bytecode(proto), "<reference>")


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
    plan = checks.prepare(module, fold_constants=fold_constants, source=source, line_offset=line_offset)
    return plan.module, plan
