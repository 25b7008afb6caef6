"""The one place that touches jax/jaxlib internals.

Everything private we rely on (``jax._src``, ``jaxlib._jax``, ``jaxlib._hlo``,
``jaxlib.mlir._mlir_libs``, the CUDA PJRT plugin) is used here and only here,
behind a version check, so a jax upgrade touches one file. Heavy imports are
done lazily, on first use, so ``mlirhlo --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Any

from ..errors import (
    CompileError,
    DistributedError,
    EnvironmentMismatch,
    ExecutionError,
    NoGpu,
    param,
)
from ..timing import ms, ms_since
from . import interrupts, plugin_copy
from .fds import capture_fd2

# The supported jax/jaxlib range, both ends tested by .ci/run; pyproject.toml declares
# the same (tests/_native/test_jaxlib_versions.py checks). The CUDA plugin must equal jaxlib exactly.
SUPPORTED_MIN = "0.9.0"
SUPPORTED_MAX = "0.12.0.1"
# jax's CUDA plugins, newest CUDA first: where both match jaxlib, jax's own discovery
# loads both, and the CUDA 13 one is the environment the user asked for last.
CUDA_PLUGIN_DISTS = ("jax-cuda13-plugin", "jax-cuda12-plugin")
# The plugin named in messages when none is installed (the README's set-up installs its copy).
PLUGIN_DIST = "jax-cuda12-plugin"
# What installs the driver's copy of a plugin (_native/plugin_copy.py): the README's set-up.
INSTALL_COMMAND = "mlirhlo cuda-plugin install"


@dataclass(frozen=True)
class CudaPlugin:
    """The jax CUDA plugin in use: its distribution, CUDA major version and installed version."""

    dist: str  # "jax-cuda12-plugin"
    version: str | None  # None: not installed
    # The driver's copy (plugin_copy.Copy) when the plugin comes from there, not site-packages.
    copy: plugin_copy.Copy | None = None

    @property
    def cuda_major(self) -> int:
        return int(re.search(r"cuda(\d+)", self.dist).group(1))  # type: ignore[union-attr]

    @property
    def module(self) -> str:
        """The Python package with its extensions (``jax_cuda12_plugin``)."""
        return self.dist.replace("-plugin", "_plugin").replace("-", "_")

    @property
    def namespace_dir(self) -> str:
        """Its directory in the ``jax_plugins`` namespace package (``xla_cuda12``)."""
        return f"xla_cuda{self.cuda_major}"

    @property
    def extra(self) -> str:
        """jax's extra that installs it at jax's exact version (``cuda12-local``)."""
        return f"cuda{self.cuda_major}-local"


def cuda_plugin(found: dict[str, str | None] | None = None) -> CudaPlugin:
    """The CUDA plugin the driver uses: one installed at jaxlib's exact version (a user's
    own jax CUDA environment, kept as it is), CUDA 13 before 12; else the driver's copy at
    jaxlib's version (``mlirhlo cuda-plugin install``; ``found["DIST copy"]``); else an
    installed one (check_cuda_plugin names the mismatch); else jax-cuda12-plugin, not installed."""
    found = installed_versions() if found is None else found
    installed = [d for d in CUDA_PLUGIN_DISTS if found.get(d) is not None]
    matching = [d for d in installed if found.get(d) == found.get("jaxlib")]
    if not matching:
        for dist in CUDA_PLUGIN_DISTS:  # CUDA 13 first
            version = found.get(f"{dist} copy")
            copy = plugin_copy.find(dist, version) if version is not None else None
            if version == found.get("jaxlib") and copy is not None:
                return CudaPlugin(dist, version, copy)
    dist = (matching or installed or [PLUGIN_DIST])[0]
    return CudaPlugin(dist, found.get(dist))


def _use_plugin_copy() -> None:
    """Where the plugin in use is the driver's copy, its Python package (``jax_cuda12_plugin``:
    custom-call targets, build versions) becomes importable in this process, by that name
    alone: the copy stays off sys.path, so metadata scans (here and in the children that
    inherit sys.path) do not take it for an installed plugin, and its PJRT library's
    namespace package stays out of jax's discovery."""
    import importlib.abc
    import importlib.machinery

    plugin = cuda_plugin()
    if plugin.copy is None or any(getattr(f, "mlirhlo_copy", None) == plugin.module for f in sys.meta_path):
        return
    directory = str(plugin.copy.python_dir)

    class CopyFinder(importlib.abc.MetaPathFinder):
        mlirhlo_copy = plugin.module

        def find_spec(self, fullname, path=None, target=None):  # noqa: ARG002 - the finder protocol
            if fullname != self.mlirhlo_copy:
                return None  # its submodules are found through the package's __path__
            return importlib.machinery.PathFinder.find_spec(fullname, [directory])

    sys.meta_path.append(CopyFinder())


# Lines that jaxlib's native code prints on fd 2 when no CUDA driver exists.
# They say nothing to a user compiling device-less, so they are dropped; any
# other native output is passed through unchanged. Patterns, compiled when first
# matched (re's cache): most runs print nothing natively.
_NATIVE_NOISE = (
    r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$",
    r"^[IWE]\d{4} [\d:. ]+\d+ cudart_stub\.cc:\d+\] Could not find cuda drivers on your machine, GPU will not be used\.$",
    # absl INFO lines (plugin found, device counts): they escape TF_CPP_MIN_LOG_LEVEL
    # when jaxlib's libraries were loaded before this module set it.
    r"^I\d{4} [\d:. ]+\d+ [\w.-]+:\d+\] ",  # libtpu's files have dashes (init-domain.cc)
    # jaxlib 0.9's XLA warns at every device-less CUDA compile with a sort; 0.10.2 picks
    # the same sort kernels device-less without a word. No GPU is the point here.
    (r"^W\d{4} [\d:. ]+\d+ gpu_compiler\.cc:\d+\] Using fallback sort algorithm rather "
     r"than SortRewriter, which will be slower at runtime\. To avoid this, compile with "
     r"a GPU present\.$"),
)

# XLA warns on every GSPMD compile; the driver picks GSPMD where a module's shardings are
# written for it, so the advice to migrate to Shardy says nothing to the user.
_NATIVE_NOISE += (
    r"^W\d{4} [\d:. ]+\d+ sharding_propagation\.cc:\d+\] GSPMD sharding propagation is going to be deprecated",
)

# Logged on the way to an error status that becomes the error line anyway: a string
# field with invalid UTF-8 (protobuf), an element type a fuzzed proto made up.
_NATIVE_NOISE += (
    r"^E\d{4} [\d:. ]+\d+ wire_format_lite\.cc:\d+\] String field '[\w.]+' contains invalid UTF-8",
    r"^E\d{4} [\d:. ]+\d+ shape\.cc:\d+\] Unsupported element type: \d+$",
)
# The lines after "Buffer Assignment Stats for M", an INFO record of several lines that
# --timing's compile logs (xla.compile_phases: VLOG(1) of compile_module_to_llvm_ir.cc).
_NATIVE_NOISE += (
    r"^BufferAssignment stats:$",
    r"^ +[a-z_ ]+ (?:allocation|fragmentation): +[\d.]+[KMGT]?i?B(?: \([\d.]+%\))?$",
)

_lock = threading.RLock()

# The XLA log level the driver's own processes start with (the command lines, their helpers):
# XLA's INFO lines (plugin found, device counts, dump paths) are queued and can surface on
# stderr long after the call that logged them, past any fd-2 capture. The library never sets
# it in a user's process; there the lines it provokes are captured and dropped (_NATIVE_NOISE).
QUIET_LOG_ENV = {"TF_CPP_MIN_LOG_LEVEL": "1"}


def native_library_path(library: str) -> str | None:
    """Path of ``jaxlib/libjax_common.so`` ("jaxlib") or the CUDA plugin's
    ``xla_cuda_plugin.so`` ("cuda_plugin"), found without importing (or loading)
    either; None when not installed. ir/protos.py reads their protobuf descriptors."""
    import importlib.util

    if library == "jaxlib":
        spec, rel = importlib.util.find_spec("jaxlib"), "libjax_common.so"
    elif library == "cuda_plugin":
        plugin = cuda_plugin()
        if plugin.copy is not None:  # the pjrt wheel's files, off sys.path
            path = os.path.join(plugin.copy.pjrt_dir, "jax_plugins", plugin.namespace_dir, plugin_copy.LIBRARY)
            return path if os.path.isfile(path) else None
        # A namespace package: finding it runs none of the plugin's code.
        spec = importlib.util.find_spec("jax_plugins")
        rel = os.path.join(plugin.namespace_dir, "xla_cuda_plugin.so")
    else:
        raise ValueError(f"unknown native library {library!r}")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, rel)
        if os.path.isfile(path):
            return path
    return None


def installed_versions() -> dict[str, str | None]:
    """Installed versions of jax, jaxlib and the CUDA plugins (None: not installed), and
    under ``"DIST copy"`` the version of the driver's copy of each plugin at jaxlib's
    version (_native/plugin_copy.py; None: no such copy).

    Read from package metadata (kept on disk), without importing them, so it costs
    no start-up; once per process (the CUDA tool lookups ask for the plugin many times).
    """
    found = dict(_read_installed_versions())
    copies = _read_plugin_copies()
    for dist in CUDA_PLUGIN_DISTS:
        found[f"{dist} copy"] = found["jaxlib"] if (dist, found["jaxlib"]) in copies else None
    return found


@functools.cache
def _read_plugin_copies() -> frozenset[tuple[str, str]]:
    return frozenset((c.dist, c.version) for c in plugin_copy.copies())


@functools.cache
def _read_installed_versions() -> tuple[tuple[str, str | None], ...]:
    from .. import installed  # the metadata scan, kept on disk: it costs 50+ ms a process

    return tuple(installed.versions(("jax", "jaxlib", *CUDA_PLUGIN_DISTS)).items())


def version_tuple(version: str) -> tuple[int, ...]:
    """The release numbers of a version: '0.9.0.1' -> (0, 9, 0, 1); '0.10.0rc1' -> (0, 10, 0)."""
    parts = []
    for piece in version.split("+")[0].split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
        if m.end() != len(piece):  # a pre/dev/post suffix ends the release part
            break
    return tuple(parts)


def in_supported_range(version: str) -> bool:
    return version_tuple(SUPPORTED_MIN) <= version_tuple(version) <= version_tuple(SUPPORTED_MAX)


def jaxlib_at_least(version: str) -> bool:
    """Whether the installed jaxlib is ``version`` or newer (per-version API choices key on this)."""
    return version_tuple(jaxlib_version()) >= version_tuple(version)


@functools.cache
def jaxlib_version() -> str:
    return installed_versions()["jaxlib"] or SUPPORTED_MAX


def check_versions() -> None:
    """Raise EnvironmentMismatch unless jax and jaxlib are installed within the supported range.

    The CUDA plugin is not checked here: CPU-only and MLIR-only work runs
    without it (see check_cuda_plugin).
    """
    found = installed_versions()
    bad = {k: found.get(k) for k in ("jax", "jaxlib")
           if found.get(k) is None or not in_supported_range(found[k])}
    if bad:
        have = ", ".join(f"{k} {v or 'not installed'}" for k, v in bad.items())
        raise EnvironmentMismatch(
            f"mlirhlo-driver supports jax/jaxlib {SUPPORTED_MIN} to {SUPPORTED_MAX}, found {have}",
            hint=f"pip install 'jax[{cuda_plugin(found).extra}]>={SUPPORTED_MIN},<={SUPPORTED_MAX}'",
        )


def check_cuda_plugin() -> None:
    """Raise EnvironmentMismatch unless a CUDA plugin is installed at exactly jaxlib's version.

    A plugin built for another jaxlib may load and then fail or crash inside a
    compile, so CUDA work is refused up front with the one command that fixes it.
    """
    found = installed_versions()
    jaxlib_version, plugin = found["jaxlib"], cuda_plugin(found)
    if plugin.version is not None and plugin.version == jaxlib_version:
        return
    if plugin.version is None:
        raise EnvironmentMismatch(f"{plugin.dist} is not installed (jaxlib {jaxlib_version}); CUDA needs "
                                  "the plugin at jaxlib's exact version", hint=INSTALL_COMMAND)
    raise EnvironmentMismatch(f"{plugin.dist} {plugin.version} does not match jaxlib {jaxlib_version}; "
                              "CUDA needs the plugin at jaxlib's exact version",
                              hint=f"pip install {plugin.dist}=={jaxlib_version}")


def version_lines() -> list[str]:
    """``NAME VERSION`` for jax, jaxlib and the CUDA plugin in use, each with what is wrong,
    if anything (unsupported, missing, not matching jaxlib). Imports nothing heavy."""
    found = installed_versions()
    lines = []
    for dist in ("jax", "jaxlib"):
        version = found[dist]
        if version is None:
            lines.append(f"{dist} not installed")
        elif not in_supported_range(version):
            lines.append(f"{dist} {version} (unsupported: {SUPPORTED_MIN} to {SUPPORTED_MAX} are)")
        else:
            lines.append(f"{dist} {version}")
    jaxlib_version = found["jaxlib"]
    plugin = cuda_plugin(found)
    if plugin.version is None:
        lines.append(f"{plugin.dist} not installed (CUDA needs it at jaxlib's version: {INSTALL_COMMAND})")
    elif plugin.copy is not None:
        lines.append(f"{plugin.dist} {plugin.version} (the driver's copy, {plugin.copy.path})")
    elif plugin.version != jaxlib_version:
        lines.append(f"{plugin.dist} {plugin.version} (does not match jaxlib {jaxlib_version}: "
                     f"CUDA needs {plugin.dist}=={jaxlib_version})")
    else:
        lines.append(f"{plugin.dist} {plugin.version}")
    for dist in CUDA_PLUGIN_DISTS:  # a second plugin stays unused: say so
        if dist != plugin.dist and found.get(dist) is not None:
            lines.append(f"{dist} {found[dist]} (installed, not used)")
    return lines


@contextlib.contextmanager
def filtered_native_stderr():
    """Run a block with fd 2 captured, then replay it minus known CUDA noise."""
    try:
        with capture_fd2() as captured:
            yield
    finally:
        _replay_without_noise(captured.text)


# XLA logs every failed RET_CHECK with a stack trace when it makes the error
# status; the status itself becomes the error line, so the log is redundant.
_STATUS_LOG = r"^E\d{4} [\d:. ]+\d+ status_macros\.cc:\d+\] "
# jaxlib 0.12's statuses carry where they were made: that log line goes on with
# "=== Source Location Trace: ===" and one FILE:LINE line per place.
_SOURCE_TRACE = "=== Source Location Trace: ==="
_SOURCE_TRACE_LINE = r"^\S+:\d+$"


def without_native_noise(text: str) -> list[str]:
    """The lines of native output worth showing: no known noise, no status stack traces."""
    kept, in_trace, in_source_trace = [], False, False
    for ln in text.replace("\x00", "").splitlines():  # a log file rewritten past a truncation has NUL holes
        if in_source_trace and re.match(_SOURCE_TRACE_LINE, ln.strip()):
            continue
        in_source_trace = False
        if ln.strip() == "*** Begin stack trace ***":
            in_trace = True
        elif in_trace:
            in_trace = ln.strip() != "*** End stack trace ***"
        elif ln.strip() == _SOURCE_TRACE:
            in_source_trace = True
        elif not (re.match(_STATUS_LOG, ln) or any(re.match(p, ln) for p in _NATIVE_NOISE)):
            kept.append(ln)
    return kept


def _replay_without_noise(text: str) -> None:
    kept = without_native_noise(text)
    if any(ln.strip() for ln in kept):
        sys.stderr.write("\n".join(kept) + "\n")
        sys.stderr.flush()


def replay_native_stderr(text: str) -> None:
    """What a child's native code wrote, minus noise, on this process's stderr."""
    _replay_without_noise(text)


@functools.cache
def jax() -> Any:
    """``import jax``, quietly, and nothing more.

    The driver never changes the process's jax: no platform, device count or other
    config, no backend started. It compiles and runs on clients of its own
    (:func:`cpu_client`, the CUDA plugin's compile-only devices), and lowers JAX
    functions with one of those devices as the default device, for that lowering only;
    so a user's jax keeps its platforms, and jax's plugin discovery (which prints CUDA's
    and libtpu's start-up noise on a machine without them) runs only if the user's own
    code starts it.
    """
    with _lock:
        with filtered_native_stderr():
            return _import_jax()


def _import_jax() -> Any:
    """``import jax``, its warning about a CUDA plugin built for another jaxlib kept quiet
    (CUDA commands refuse such a plugin with one line: check_cuda_plugin). Call under _lock."""
    import warnings

    check_versions()
    _use_plugin_copy()
    found = installed_versions()
    plugin_matches = all(found.get(d) in (None, found["jaxlib"]) for d in CUDA_PLUGIN_DISTS)
    with warnings.catch_warnings():
        if not plugin_matches:
            warnings.filterwarnings("ignore", category=RuntimeWarning,
                                    message=r"JAX plugin jax_cuda\d+_plugin version")
        import jax as jax_module
    _exclude_driver_frames()
    return jax_module


def _exclude_driver_frames() -> None:
    """The driver's frames are not the user's: a JAX function lowered through it gets
    ops located at the user's lines, and HLO metadata whose stack frames stop there
    (as jax leaves out its own frames)."""
    from jax._src import source_info_util

    source_info_util.register_exclusion(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)


def own_process_host_devices(count: int) -> None:
    """For a process that is the driver's own (a command line, a worker it started), never a
    user's: jax on the CPU with ``count`` host devices, so that a JAX function whose own code
    builds a mesh from ``jax.devices()`` finds them. Before jax starts its backends only."""
    jax_module = jax()
    from jax._src import xla_bridge

    if getattr(xla_bridge, "_backends", None):
        return  # started already: the user's (or an earlier command's) choice stands
    _own_process_cpu_jax(jax_module, count)


def _own_process_cpu_jax(jax_module: Any, count: int) -> None:
    """jax of a process the driver owns, on the CPU only with ``count`` host devices. Its plugin
    discovery still initializes a CUDA plugin in site-packages: before 0.9.2 that plugin checks
    the CUDA runtime as it registers and logs a traceback without one, unless told to skip it."""
    if not jaxlib_at_least("0.9.2"):
        os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")  # this process is the driver's
    jax_module.config.update("jax_platforms", "cpu")
    jax_module.config.update("jax_num_cpu_devices", max(1, count))


@contextlib.contextmanager
def lowering_device(device: Any = None) -> Any:
    """jax's default device for what runs inside (a lowering), this thread only: the
    driver's own CPU device unless ``device`` is given. jax would otherwise start its
    backends (and the plugins it discovers) to pick a default device."""
    jax_module = jax()
    with jax_module.default_device(device if device is not None else cpu_devices(1)[0]):
        yield


@contextlib.contextmanager
def x64(on: bool = True) -> Any:
    """jax's x64 mode for what runs inside (a lowering, a run) only, not the whole process:
    64-bit types are canonicalised away (f64 -> f32) without it, and the caller's own jax
    keeps its setting. (jax's config states are context managers,
    thread-local, in every supported jax.)"""
    if not on:
        yield
        return
    jax()
    from jax._src import config

    with config.enable_x64(True):
        yield


@functools.cache
def _register_all_passes() -> None:
    import jaxlib.mlir._mlir_libs._mlirGPUPasses  # noqa: F401  (registers gpu-*)
    import jaxlib.mlir._mlir_libs._mlirSparseTensorPasses  # noqa: F401
    from jaxlib.mlir._mlir_libs import _mlirHlo, _stablehlo

    _stablehlo.register_stablehlo_passes()
    _mlirHlo.register_mhlo_passes()


@functools.cache
def ir_context() -> Any:
    """The process's MLIR context: every dialect and pass that jaxlib ships.

    Built from jaxlib alone, as jax's ``make_ir_context`` builds it (jax
    0.9.0-0.10.2: jax_mlir_ext's dialect registry, then sdy, mpmd, mhlo, chlo and
    stablehlo registered), so MLIR-only work never imports jax (~0.5 s).
    tests/test_startup.py checks it against the installed jax's context.
    Outside the supported range it raises EnvironmentMismatch: an untested
    jaxlib may parse, run passes and print differently without a word.
    """
    check_versions()
    with _lock, filtered_native_stderr():
        # sdy's dialect module first (3 ms): imported after its native module, it lacked
        # DimMappingAttr and four more (jaxlib 0.12.0.1), and jax's lowering in this process
        # then failed on them.
        import jaxlib.mlir.dialects.sdy  # noqa: F401
        from jaxlib.mlir import ir

        # The native registration functions, which jaxlib.mlir.dialects.{sdy,mpmd,
        # mhlo,chlo,stablehlo} re-export: those modules' generated op classes cost
        # ~0.1 s to import, and code that builds ops imports them itself.
        from jaxlib.mlir._mlir_libs import _chlo, _jax_mlir_ext, _mlirHlo, _sdy, _stablehlo

        _register_all_passes()
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        ctx = _bare_context_class()()
        ctx.append_dialect_registry(registry)
        ctx.load_all_available_dialects()
        _sdy.register_dialect(ctx)
        try:
            from jaxlib.mlir._mlir_libs import _sdyMpmd
        except ImportError:  # a jaxlib without the MPMD dialect
            _sdyMpmd = None
        if _sdyMpmd is not None:
            _sdyMpmd.register_dialect(ctx)
        _mlirHlo.register_mhlo_dialect(ctx)
        _chlo.register_dialect(ctx)
        _stablehlo.register_dialect(ctx)
        ctx.allow_unregistered_dialects = False
        return ctx


@functools.cache
def _bare_context_class() -> Any:
    from jaxlib.mlir import ir

    class BareContext(ir.Context):
        """ir.Context without every dialect linked into jaxlib loaded (as jax's JaxIrContext)."""

        def __init__(self) -> None:
            super(ir.Context, self).__init__()

    return BareContext


@functools.cache
def _xla_client() -> Any:
    """jaxlib's xla_client, imported quietly and without jax: jaxlib alone compiles.
    EnvironmentMismatch outside the supported range."""
    check_versions()
    with _lock, filtered_native_stderr():
        from jaxlib import xla_client

    return xla_client


def dense_elements_attr(array: Any, type_: Any) -> Any:
    """An ir.DenseElementsAttr of a host array, of MLIR type ``type_`` (in a context).

    For i1, jaxlib 0.10.2's bindings take one byte per element; 0.9's take the
    bits packed, little-endian (measured with 0.9.0), and refuse the bytes.
    """
    import numpy as np
    from jaxlib.mlir import ir

    a = np.ascontiguousarray(array)
    try:
        return ir.DenseElementsAttr.get(a, type=type_)
    except ValueError:
        if a.dtype != np.bool_ or jaxlib_at_least("0.10.2"):
            raise
    return ir.DenseElementsAttr.get(np.packbits(a, axis=None, bitorder="little"), type=type_)


# ---------------------------------------------------------------- HLO <-> MLIR

def _hlo_lib_name() -> str:
    """HloModule, hlo_module_from_text, hlo_module_to_dot_graph: their own module from
    jaxlib 0.10.2; in jaxlib._jax before (checked: 0.9.0, 0.9.2, 0.10.0, 0.10.1)."""
    return "jaxlib._hlo" if jaxlib_at_least("0.10.2") else "jaxlib._jax"


def hlo_lib() -> Any:
    """jaxlib's module holding HloModule and hlo_module_from_text (it moved in 0.10.2)."""
    import importlib

    check_versions()  # cheap: the versions are read once per process

    return importlib.import_module(_hlo_lib_name())


def __getattr__(name: str) -> Any:
    # ISOLATED_PRELOAD depends on the installed jaxlib: computed on use, not at import.
    if name == "ISOLATED_PRELOAD":
        return tuple(dict.fromkeys((_hlo_lib_name(), "jaxlib._jax")))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def hlo_text_to_proto(text: str) -> bytes:
    """HLO text -> serialized HloModuleProto. Raises RuntimeError with XLA's message."""
    _hlo = hlo_lib()

    try:
        return _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    except Exception as e:  # JaxRuntimeError; its message carries line:col
        raise RuntimeError(str(e)) from None


def hlo_proto_to_text(proto: bytes, *, large_constants: bool = False) -> str:
    """HloModuleProto -> HLO text, as XLA's ``HloModule::ToString()`` prints it (XLA's tools
    print that way: its default HloPrintOptions, which jaxlib's are; operands without their
    shapes since XLA's March 2025 default); ``large_constants``: every constant's value, not
    ``{...}``."""
    _hlo = hlo_lib()

    from .fds import capture_fd2

    options = _hlo.HloPrintOptions()
    options.print_large_constants = large_constants
    try:
        # XLA logs why the proto is bad (an absl E line) and returns the same as a
        # status: on failure the status alone becomes the one error line.
        with capture_fd2() as captured:
            text = _hlo.HloModule.from_serialized_hlo_module_proto(proto).to_string(options)
    except Exception as e:
        raise RuntimeError(str(e)) from None
    _replay_without_noise(captured.text)
    return text


def hlo_proto_to_stablehlo_bytecode(proto: bytes) -> bytes:
    _xla_client()  # first, so the native libraries load quietly
    from jaxlib import _jax

    try:
        return _jax.mlir.hlo_to_stablehlo(proto)
    except Exception as e:
        raise RuntimeError(str(e)) from None


# Both steps can die natively (XLA CHECKs) on malformed input: isolate.call
# runs them in a child. Neither needs jax started, which would cost more there
# than the work itself.
# ISOLATED_PRELOAD (module __getattr__ above): the modules those steps import.

# What ir_context() imports, for isolate.call's preload: imported in this process
# before the helper is forked, they are not loaded a second time there.
MLIR_PRELOAD = tuple(f"jaxlib.mlir.{m}" for m in (
    "ir", "dialects.sdy", "_mlir_libs._chlo", "_mlir_libs._jax_mlir_ext", "_mlir_libs._mlirHlo", "_mlir_libs._sdy",
    "_mlir_libs._stablehlo", "_mlir_libs._mlirGPUPasses", "_mlir_libs._mlirSparseTensorPasses"))
# For a helper that lowers a JAX function. The driver's TPU process compiles with MLIR_PRELOAD
# alone (jax's import was ~0.45 CPU-s of its ~0.8 s start) and imports jax only to lower one.
JAX_PRELOAD = (f"{__name__}:jax", *MLIR_PRELOAD)


def hlo_to_stablehlo_in_child(text: str | None, proto: bytes | None) -> tuple[str, bytes | str, bytes]:
    """HLO text or HloModuleProto -> ("ok", proto, StableHLO bytecode), without starting jax.

    For an isolated child (_native/isolate.py). XLA's refusals come back as
    ``("parse", message, b"")`` or ``("convert", message, b"")``.
    """
    from jaxlib import _jax

    _hlo = hlo_lib()

    if text is not None:
        try:
            proto = _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        except Exception as e:
            return ("parse", str(e), b"")
    try:
        return ("ok", proto, _jax.mlir.hlo_to_stablehlo(proto))
    except Exception as e:
        return ("convert", str(e), b"")


def stablehlo_to_hlo_proto(module_bytecode: bytes) -> bytes:
    """StableHLO (bytecode or text) -> HloModuleProto, the form XLA receives."""
    _xla_client()  # first, so the native libraries load quietly
    from jaxlib import _jax

    try:
        with filtered_native_stderr():  # protobuf's invalid-UTF-8 complaint precedes the error
            comp = _jax.mlir.mlir_module_to_xla_computation(module_bytecode, use_tuple_args=False,
                                                            return_tuple=False)
            return comp.as_serialized_hlo_module_proto()
    except Exception as e:
        raise RuntimeError(str(e)) from None


def hlo_cost_analysis(protos: list[bytes]) -> list[dict[str, float] | str]:
    """XLA's ``HloCostAnalysis`` of each HloModuleProto, as jaxlib exposes it
    (``hlo_module_cost_analysis``, with the CPU client's shape sizes: dense arrays, no
    padding): its module-level figures (``flops``, ``transcendentals``, ``bytes
    accessed``, ...). The analysis reads only the HLO, so it runs on modules optimized for
    any backend; ``-1`` marks what it cannot count (a custom call). A module it refuses
    gives XLA's message instead of a dict."""
    from jaxlib import _jax

    _hlo = hlo_lib()
    client = _cost_analysis_client()
    out: list[dict[str, float] | str] = []
    with filtered_native_stderr():
        for proto in protos:
            try:
                found = _jax.hlo_module_cost_analysis(client, _hlo.HloModule.from_serialized_hlo_module_proto(proto))
                out.append({k: float(v) for k, v in sorted(dict(found).items())})
            except Exception as e:  # XlaRuntimeError / JaxRuntimeError
                out.append(str(e))
    return out


def _cost_analysis_client() -> Any:
    """A CPU client whose shape sizes the cost analysis uses: the driver's own, made without
    importing jax (on CUDA, where nothing else needs jax, ``import jax`` was 29% of ``opt
    --stage all``'s samples on the MLP step)."""
    return cpu_client(1)


# ----------------------------------------------------------------- XLA clients

def compile_options(*, num_replicas: int = 1, num_partitions: int = 1,
                    env_overrides: list[tuple[str, Any]] | None = None,
                    dump_to: str | None = None) -> Any:
    xla_client = _xla_client()

    opts = xla_client.CompileOptions()
    opts.num_replicas = num_replicas
    opts.num_partitions = num_partitions
    if env_overrides:
        opts.env_option_overrides = list(env_overrides)
    if dump_to is not None:
        opts.executable_build_options.debug_options.xla_dump_to = dump_to
    return opts


def compile_options_from_proto(data: bytes) -> Any:
    """CompileOptions from CompileOptions.SerializeAsString()'s bytes (for a child process)."""
    return _xla_client().CompileOptions.ParseFromString(data)


# The emitters whose dumps are the LLVM IR (before/after optimization) and PTX stages.
_LLVM_EMITTER, _PTX_EMITTER = "llvm", "ptx"


def codegen_dumps_need_emitters() -> bool:
    """Whether this XLA dumps LLVM IR and PTX per emitter (jaxlib 0.11+; 0.12 measured). Such
    an XLA writes no file at all for a compile without kernels, where 0.10.2 wrote empty ones."""
    return jaxlib_at_least("0.11.0")


def codegen_dump_flags(user_emitter_re: str | None = None, emitters: tuple[str, ...] = (), *,
                       llvm: bool = True, ptx: bool = True) -> dict[str, Any]:
    """DebugOptions that make this XLA dump its LLVM IR (``llvm``) and PTX (``ptx``), and
    what ``emitters`` emit.

    jaxlib 0.10.2's XLA writes ``*.ir-no-opt.ll``, ``*.ir-with-opt.ll`` and ``*.ptx``
    whenever it dumps. 0.12's writes them only for emitters ``xla_dump_emitter_re``
    matches (``llvm`` and ``ptx``; measured: unset, neither is written). Every supported
    XLA (0.9.0-0.12.0.1) dumps Triton's IR for the emitters ``triton-fusion`` (TTIR) and
    ``triton-to-llvm`` (the log of Triton's pipeline), and only when asked (the log is
    megabytes per fusion). A user's own regex is kept beside them.
    """
    codegen = [e for e, wanted in ((_LLVM_EMITTER, llvm), (_PTX_EMITTER, ptx)) if wanted]
    names = (codegen if codegen_dumps_need_emitters() else []) + [re.escape(e) for e in emitters]
    if not names:
        return {"xla_dump_emitter_re": user_emitter_re} if user_emitter_re else {}
    ours = "^(?:" + "|".join(names) + ")$"
    return {"xla_dump_emitter_re": f"{ours}|{user_emitter_re}" if user_emitter_re else ours}


@functools.cache
def cpu_client(num_devices: int = 1) -> Any:
    """A CPU client of the driver's own with ``num_devices`` devices, made without jax:
    what the driver compiles and runs on the host. jax's own backends (its platforms,
    ``jax_num_cpu_devices``) are never started or changed; one client per device count,
    kept for the process."""
    xla_client = _xla_client()
    with _lock, filtered_native_stderr():  # it logs its device count on fd 2
        _started_native_threads()
        return xla_client.make_cpu_client(num_devices=num_devices)


def cpu_devices(num_devices: int = 1) -> list[Any]:
    """The devices of :func:`cpu_client` (``num_devices`` of them), or of jax's CPU backend in
    a process that joined a distributed run (:func:`distributed_initialize`), whose
    collectives span its processes."""
    if _distributed:
        return list(jax().devices("cpu"))
    return list(cpu_client(max(1, num_devices)).devices())


def cuda_c_api() -> Any:
    """The CUDA PJRT plugin's C API, loaded without touching a GPU or driver.

    Raises EnvironmentMismatch, every call, unless the plugin matches jaxlib exactly.
    """
    check_cuda_plugin()
    return _load_cuda_c_api()


@functools.cache
def _load_cuda_c_api() -> Any:
    """The plugin's C API, loaded once per process.

    A plugin installed in site-packages (the user's own jax CUDA environment) is loaded
    the way jax loads it, by jax's plugin discovery, which registers it and its
    custom-call targets and starts no backend: the user's jax then finds it loaded and
    uses it as it would have (a second, separate load would fail with ALREADY_EXISTS and
    cost the user's jax its GPU). The driver's copy, which jax never discovers, is
    loaded here, its custom-call and FFI targets registered with XLA as the plugin's own
    initialize() does (a compile resolves them).
    """
    plugin = cuda_plugin()
    if plugin.copy is None:
        c_api = _discovered_c_api()
        if c_api is not None:
            return c_api
    xla_client = _xla_client()
    _use_plugin_copy()
    with _lock, filtered_native_stderr():
        _started_native_threads()
        c_api = xla_client.load_pjrt_plugin_dynamically("cuda", native_library_path("cuda_plugin"))
        _register_cuda_targets(xla_client, c_api)
        return c_api


def _discovered_c_api() -> Any:
    """The CUDA plugin's C API from jax's plugin discovery (run now if it has not run), or None."""
    jax_module = jax()
    from jax._src import xla_bridge

    discover = getattr(xla_bridge, "_discover_and_register_pjrt_plugins", None)
    if discover is not None:
        with _lock, filtered_native_stderr(), _scoped_env(_discovery_env()):
            _started_native_threads()
            discover()
    factory = getattr(xla_bridge, "_backend_factories", {}).get("cuda")
    del jax_module
    return getattr(factory, "c_api", None)


def _discovery_env() -> dict[str, str]:
    # A CUDA plugin checks the CUDA runtime and cuDNN as it registers, unless jax_platforms
    # leaves CUDA out (0.9.2 and later) or this is set, and logs a traceback without them
    # (jax-cuda13-plugin 0.12: "cuDNN not found"). Device-less compiles need neither.
    return {"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"}


@contextlib.contextmanager
def _scoped_env(values: dict[str, str]) -> Any:
    """Variables set for the block only (what a plugin reads while it registers), then
    restored: no change to the environment outlives the call."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update({k: v for k, v in values.items() if k not in os.environ or saved[k] is None})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_native_threads = False


def _started_native_threads() -> None:
    global _native_threads
    _native_threads = True


def native_threads_started() -> bool:
    """Whether XLA may run native threads in this process: the driver loaded a
    plugin or compiled, or jax started a backend (isolate.fork_is_safe asks)."""
    if _native_threads:
        return True
    bridge = sys.modules.get("jax._src.xla_bridge")
    return bool(bridge is not None and getattr(bridge, "_backends", None))


def _register_cuda_targets(xla_client: Any, c_api: Any) -> None:
    """The CUDA plugin's custom-call/FFI targets and types, as jax_plugins.xla_cuda12's
    initialize() registers them (jaxlib 0.9.0-0.12.0.1). Its Triton handler serves
    jax's own Pallas lowering only, not XLA's compile, and is left out."""
    import importlib

    try:
        ext = importlib.import_module(f"{cuda_plugin().module}.cuda_plugin_extension")
    except ImportError:
        return  # the plugin's initialize() registers nothing then either
    xla_client.register_custom_type_handler("CUDA", functools.partial(ext.register_custom_type, c_api))
    xla_client.register_custom_call_handler(
        "CUDA", functools.partial(ext.register_custom_call_target, c_api))
    for name, value in ext.ffi_types().items():
        xla_client.register_custom_type(name, value, platform="CUDA")
    for name, value in ext.ffi_handlers().items():
        xla_client.register_custom_call_target(name, value, platform="CUDA", api_version=1)


def cuda_compile_only_devices(target_config_text: str, name: str = "mlirhlo", count: int = 1,
                              topology: str | None = None) -> list[Any]:
    """``count`` compile-only CUDA devices for a GpuTargetConfigProto textproto (no GPU
    needed), in the installed XLA's schema (``cuda.specs.target_config_for_installed_xla``);
    with ``topology`` (``PARTITIONSxHOSTSxDEVICES``, cuda.topology) every device of that
    topology instead, on one host per partition's host as it says."""
    xla_client = _xla_client()

    c_api = cuda_c_api()
    with _lock, filtered_native_stderr():
        topo = xla_client.make_c_api_device_topology(
            c_api, name, target_config=target_config_text, topology=topology or f"1x1x{count}")
        return list(topo._make_compile_only_devices())


# What the driver's TPU compile process starts with; libtpu reads them once, as it loads.
# Without a chip libtpu prints "Failed to find host bounds" and an "unexpected worker
# hostname" trace on load: an accelerator type and one worker silence both without changing
# any output (optimized HLO, code and temporary sizes compared on v4, v5e, v5p, v6e). Its
# logs would go to /tmp/tpu_logs, and a second process compiling at the same time fails on
# /tmp/libtpu_lockfile unless several loads are allowed. XLA_FLAGS is emptied: the driver
# read the user's into the target and passes them per compile, and a TPU-only flag there
# ends the process as XLA parses it. Without TPU_SKIP_MDS_QUERY, libtpu asks the GCE metadata
# server for the host's bounds, 30 tries per key: 10 minutes off a cloud VM (jax sets it too,
# when it finds no chip, as it imports: jax._src.cloud_tpu_init).
TPU_COMPILE_ENV = {"TPU_SKIP_MDS_QUERY": "1", "TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_WORKER_HOSTNAMES": "localhost",
                   "TPU_LOG_DIR": "disabled", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1", "XLA_FLAGS": "",
                   "TF_CPP_MIN_LOG_LEVEL": "1"}
_tpu_topologies: dict[str, Any] = {}


def tpu_compile_only_devices(name: str, shape: tuple[int, ...], count: int = 1) -> list[Any]:
    """The compile-only devices of the TPU topology ``name`` (libtpu's spelling, already
    checked: tpu.topologies; ``NxNAME``: N slices of it, libtpu's ``num_slices``), at least
    ``count`` of them, loading libtpu (_native.libtpu) on first use. Only for the driver's own TPU compile process (TPU_COMPILE_ENV): libtpu stays
    loaded in a process for good."""
    from . import libtpu

    xla_client = _xla_client()
    with _lock, filtered_native_stderr():
        if not xla_client.pjrt_plugin_loaded("tpu"):
            found = libtpu.require()
            _started_native_threads()
            xla_client.load_pjrt_plugin_dynamically("tpu", found.library)
        if not xla_client.pjrt_plugin_initialized("tpu"):
            xla_client.initialize_pjrt_plugin("tpu")
        topo = _tpu_topologies.get(name)
        if topo is None:
            topo = _tpu_topologies[name] = _tpu_topology(xla_client, name, shape)
    devices = list(topo._make_compile_only_devices())
    if len(devices) < count:
        raise CompileError(f"TPU topology {name} has {len(devices)} device{'s' if len(devices) != 1 else ''}; "
                           f"this compile needs {count}",
                           hint="a larger --tpu-topology, or --num-partitions")
    return devices


def _tpu_topology(xla_client: Any, full_name: str, shape: tuple[int, ...]) -> Any:
    # 2xv5e:2x2: two slices (multislice), their devices numbered from 100000 per slice
    m = re.match(r"^(\d+)x([a-z].*)$", full_name)
    name, slices = (m.group(2), int(m.group(1))) if m else (full_name, 1)
    # v4's chips are one megacore device each, as jax on a v4 VM shows them; libtpu's default
    # there is a device per TensorCore (v5p's default is megacore already).
    kwargs: dict[str, Any] = {"chip_config_name": "megacore"} if name.startswith("v4:") else {}
    if slices > 1:
        kwargs["num_slices"] = slices
    try:
        return xla_client.make_tfrt_tpu_c_api_device_topology(name, **kwargs)
    except Exception as e:
        message = _strip_status(str(e))
        if "chips_per_host_bounds" not in message:
            raise CompileError(f"libtpu refused TPU topology {name}: {one_line(message)}") from None
    # A slice smaller than (or not tiling) libtpu's default host (v5e:1x1 on libtpu 0.0.42:
    # "not divisible by ... chips_per_host_bounds 2x2x1"): one host holding it all.
    bounds = tuple(shape) + (1,) * (3 - len(shape))
    try:
        return xla_client.make_tfrt_tpu_c_api_device_topology(name, chips_per_host_bounds=bounds, **kwargs)
    except Exception as e:
        raise CompileError(f"libtpu refused TPU topology {name}: {one_line(_strip_status(str(e)))}") from None


def plugin_build_versions() -> dict[str, str]:
    """The CUDA runtime and cuDNN versions the CUDA plugin in use was built with
    (``"12.9.0"``), as its ``_versions`` extension reports them without a GPU; {} where
    it cannot say (not installed, or an extension that needs a driver)."""
    try:
        module = cuda_plugin().module
        _use_plugin_copy()
    except Exception:
        return {}
    return dict(_build_versions(module))


@functools.cache
def _build_versions(module: str) -> tuple[tuple[str, str], ...]:
    # Per plugin module: a lookup for a plugin that is not installed caches nothing for another.
    import importlib

    def cudart(n: int) -> str:  # major * 1000 + minor * 10: 12090 -> 12.9.0
        return f"{n // 1000}.{n % 1000 // 10}.0"

    def cudnn(n: int) -> str:  # major * 10000 + minor * 100 + patch: 91002 -> 9.10.2
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}"

    try:
        with filtered_native_stderr():
            versions = importlib.import_module(f"{module}._versions")
            return (("cuda", cudart(versions.cuda_runtime_build_version())),
                    ("cudnn", cudnn(versions.cudnn_build_version())))
    except Exception:
        return ()


def compile_executable(module: Any, devices: list[Any], options: Any,
                       native_log: list[str] | None = None, *, load: bool = False) -> Any:
    """Compile an ir.Module for the given devices (CPU: loaded; CUDA: compile-only), the
    one call into XLA's compile (``xla.backend.compile`` makes every request).

    On failure the CompileError carries what XLA logged natively meanwhile
    (``native_log``): some errors are explained only there. ``native_log``: a
    list that gets all of it, whether the compile failed or not (XLA's pass log).
    Ctrl-C ends the wait within a fraction of a second (:func:`interruptible`). ``load``:
    loaded onto the devices, to run (CPU executables always are).
    """
    xla_client = _xla_client()
    _started_native_threads()  # XLA's compile thread pools

    client = devices[0].client
    device_list = xla_client.DeviceList(tuple(devices))
    loaded = hasattr(client, "compile_and_load") and (load or devices[0].platform == "cpu")

    def call() -> Any:
        if loaded:
            return client.compile_and_load(module, device_list, options)
        return client.compile(module, executable_devices=device_list, compile_options=options)

    failure: Exception | None = None
    with capture_fd2() as captured:
        try:
            executable = interruptible(call)
        except Exception as e:
            failure = e
    if native_log is not None:
        native_log.append(captured.text)
    if failure is not None:
        err = CompileError(one_line(_strip_status(str(failure))))
        # About XLA's own output, not another complaint (a flag): its fusions, or the ops only
        # its output holds that the import to HLO cannot legalize (a layout-changing bitcast).
        if hasattr(module, "operation") and re.search(r"fusion|failed to legalize operation 'mhlo\.",
                                                      err.message, re.I):
            from .guards import first_fusion

            if first_fusion(module) is not None:
                err = CompileError(REFUSED_FUSIONS, hint=BEFORE_OPTIMIZATIONS)
        err.native_log = captured.text
        raise err from None
    _replay_without_noise(captured.text)
    return executable


def interruptible(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a worker thread while this one waits in short steps, so that Ctrl-C
    (Python raises KeyboardInterrupt in the main thread only, between bytecodes, and never
    inside a native call) ends the wait at once. An abandoned call finishes in the
    background and its result is dropped; jaxlib releases the GIL while XLA compiles or
    runs. Outside the main thread the call runs in place."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # handed to the waiting thread
            box["error"] = e
        finally:
            done.set()

    worker = threading.Thread(target=run, name="mlirhlo-xla", daemon=True)
    try:  # Ctrl-C may land in start(), once the thread runs
        worker.start()
        while not done.wait(0.05):
            pass
    except KeyboardInterrupt:
        interrupts.abandoned = True
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


# XLA's own output (an after_optimizations dump, an executable's HloSnapshot) holds fusions;
# jaxlib 0.12 fails them (CPU: a RET_CHECK on their backend config, which the HLO import
# drops; CUDA: a page-long legalization of mhlo.fusion), jaxlib 0.9's CPU runs them.
REFUSED_FUSIONS = ("XLA cannot compile this module: it is XLA's output after its optimizations, and this "
                    "jaxlib does not compile its fusions again")
BEFORE_OPTIMIZATIONS = "give the dump's *.before_optimizations.txt, which XLA writes with --xla_dump_hlo_as_text"


def _strip_status(message: str) -> str:
    return re.sub(r"^[A-Z_]+: ", "", message.strip())


def one_line(message: str) -> str:
    """A native message of several lines (MLIR's diagnostics inside XLA's status) as one:
    its non-blank lines, stripped, joined by spaces."""
    return " ".join(ln.strip() for ln in message.splitlines() if ln.strip())


def execute(executable: Any, arguments: list[Any], device: Any) -> list[Any]:
    """Run a loaded single-device executable on host arrays; numpy results."""
    return execute_timed(executable, arguments, device)[0]


def execute_timed(executable: Any, arguments: list[Any], device: Any,
                  iterations: int = 1) -> tuple[list[Any], list[float]]:
    """Run a loaded single-device executable on host arrays ``iterations`` times: the last
    run's numpy results and each run's ms (inputs onto the device, the run, outputs back).
    The runs share one wait and one stderr filter: a thread and an fd swap per run cost
    1.8 ms of a 3.1 ms run on a TPU v5e."""
    import time

    import numpy as np

    jax_module = jax()
    from jax._src import config

    wide = bool(config.enable_x64.value)  # the caller's, thread-local: the runs' thread takes it

    def run() -> tuple[list[Any], list[float]]:
        times: list[float] = []
        outputs: list[Any] = []
        with x64(wide):
            for _ in range(max(1, iterations)):
                t0 = time.perf_counter()
                # Fresh buffers each time: a module may donate (alias) its inputs.
                buffers = [jax_module.device_put(a, device) for a in arguments]
                results = executable.execute_sharded(buffers)
                outputs = [np.asarray(r[0]) for r in results.disassemble_into_single_device_arrays()]
                times.append(ms_since(t0))
        return outputs, times

    try:
        with filtered_native_stderr():
            return interruptible(run)
    except Exception as e:
        raise ExecutionError(f"execution failed: {_strip_status(str(e))}") from None


@functools.cache
def cuda_devices() -> list[Any]:
    """Real CUDA devices, for running (not just compiling). Raises NoGpu without one."""
    jax()  # first, so its import is quiet
    from jax._src.lib import xla_client

    cuda_c_api()  # loading registers the plugin with xla_client
    failure: Exception | None = None
    with _lock, capture_fd2() as captured:
        try:
            client = xla_client.make_c_api_client("cuda", xla_client.generate_pjrt_gpu_plugin_options())
            devices = list(client.devices())
        except Exception as e:
            failure = e
    if failure is not None:
        # Native log lines (cuInit failed ...) say no more than this message.
        raise NoGpu(f"{param('platform', 'cuda')} needs an NVIDIA GPU and driver to run on; none is usable here: "
                    + _strip_status(str(failure)).splitlines()[0],
                    hint="compile device-less with 'mlirhlo opt --platform cuda' instead") from None
    _replay_without_noise(captured.text)
    if not devices:
        raise NoGpu(f"{param('platform', 'cuda')} needs an NVIDIA GPU; the CUDA plugin found none")
    return devices


_tpu_devices: list[Any] = []


def tpu_devices() -> list[Any]:
    """The TPU devices attached here, for running: jax's own TPU backend, started if the
    user's jax has not started it (one program holds a chip at a time, so the driver shares
    the process's, never opens a second client). libtpu is the one jax finds, else the
    driver's copy (its path given to jax for that start only). Raises NoGpu when jax cannot
    open the chips (another process holds them; jax's platforms leave TPU out)."""
    if _tpu_devices:
        return list(_tpu_devices)
    import warnings

    from . import libtpu

    found = libtpu.in_use()
    scoped = {"TPU_LIBRARY_PATH": found.library} if found is not None and found.copy else {}
    failure: Exception | None = None
    # jax's advice on the VM's hugepages setting (cloud_tpu_init), printed as the backend
    # starts, is about the machine, not this run: on a one-line error it made three lines.
    with _lock, capture_fd2() as captured, _scoped_env(scoped), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Transparent hugepages", category=UserWarning)
        try:
            jax()
            from jax._src import xla_bridge

            _started_native_threads()
            devices = list(xla_bridge.get_backend("tpu").local_devices())
        except Exception as e:
            failure = e
    if failure is not None:
        text = _strip_status(str(failure)).strip().splitlines() or ["no reason given"]
        raise NoGpu(f"{param('platform', 'tpu')}: jax could not open the TPU attached here: {text[0]}",
                    hint="one program holds a TPU at a time: is another using it? (JAX_PLATFORMS must allow tpu)")
    _replay_without_noise(captured.text)
    _tpu_devices.extend(devices)
    return devices


# ------------------------------------------------------- SPMD and multi-process

def sharding_protos(texts: list[str]) -> list[bytes | tuple[str, int | None]]:
    """Each of ``texts`` (HLO's spelling, ``{devices=[4,1]<=[4]}`` or a named mesh sharding
    ``{mesh['b'=4], [{'b'}, {}]}``) read by XLA's own parser: a serialized OpSharding, or
    (XLA's message, 1-based column or None) where it refuses the text.

    XLA's parser and HloSharding's accessors CHECK-fail on some inputs (a named
    sharding using one axis twice; ``subgroup_types()`` of any named sharding), so
    this runs in the isolate helper (``ir.shardings.parse``), needs no jax, and
    only serializes what the parser built: every question about a sharding is
    answered from the OpSharding in Python.
    """
    sharding_class = getattr(hlo_lib(), "HloSharding", None)
    if sharding_class is None:  # where jaxlib's HLO module does not hold it, _jax does
        from jaxlib import _jax

        sharding_class = _jax.HloSharding
    out: list[bytes | tuple[str, int | None]] = []
    for text in texts:
        try:
            out.append(sharding_class.from_string(text).to_proto().SerializeToString())
        except Exception as e:
            message = _strip_status(str(e))
            m = re.search(r"was parsing \d+:(\d+): error: (.*)", message)
            out.append((m.group(2).strip(), int(m.group(1))) if m else (message.splitlines()[0], None))
    return out


def spmd_options(opts: Any, *, device_ids: list[int], num_replicas: int, num_partitions: int,
                 use_shardy: bool, run_backend_only: bool) -> Any:
    """``opts`` (CompileOptions) for R replicas x P partitions on the given device ids, in
    logical order (replica-major)."""
    import numpy as np

    xla_client = _xla_client()
    build = opts.executable_build_options
    build.use_spmd_partitioning = num_partitions > 1  # XLA refuses partitions without it
    build.use_shardy_partitioner = use_shardy
    opts.device_assignment = xla_client.DeviceAssignment.create(
        np.asarray(device_ids, dtype=np.int64).reshape(num_replicas, num_partitions))
    if run_backend_only:
        # ExecutableBuildOptions.run_backend_only has no Python setter. Serialized
        # protos merge on parse: append CompileOptionsProto.executable_build_options
        # (field 3) holding ExecutableBuildOptionsProto.run_backend_only (field 11) = true.
        opts = xla_client.CompileOptions.ParseFromString(opts.SerializeAsString() + b"\x1a\x02\x58\x01")
    return opts


def executable_shardings(executable: Any) -> tuple[list[bytes | None] | None, list[bytes | None] | None]:
    """(parameter, output) shardings XLA chose, as serialized OpShardings (``ir.shardings``
    reads them; no HloSharding accessor runs here); None where it reports none (replicated)."""
    def convert(ops: Any) -> list[bytes | None] | None:
        return None if ops is None else [None if o is None else o.SerializeToString() for o in ops]

    return convert(executable.get_parameter_shardings()), convert(executable.get_output_shardings())


def sharded_argument(shards: list[Any], devices: list[Any], all_devices: list[Any]) -> Any:
    """One executable argument from per-device host arrays (``devices``: this process's).

    execute_sharded only takes each device's buffer from the array; the
    replicated sharding over every device is a carrier, so shards may differ
    (device-id inputs, tiles).
    """
    jax_module = jax()
    from jax._src import core
    from jax._src.array import ArrayImpl
    from jax._src.sharding_impls import GSPMDSharding

    buffers = [jax_module.device_put(s, d) for s, d in zip(shards, devices)]
    aval = core.ShapedArray(shards[0].shape, shards[0].dtype)
    return ArrayImpl(aval, GSPMDSharding.get_replicated(all_devices), buffers, committed=True,
                     _skip_checks=True)


def execute_spmd(executable: Any, arguments: list[Any]) -> tuple[list[list[tuple[Any, Any]]], float]:
    """Run on this process's devices: per output [(device, host array)], and the wall ms."""
    import time

    import numpy as np

    def run() -> tuple[list[list[Any]], float]:
        t0 = time.perf_counter()
        results = executable.execute_sharded(arguments).disassemble_into_single_device_arrays()
        for out in results:
            for a in out:
                a.block_until_ready()
        return results, ms_since(t0)

    try:
        results, ms = interruptible(run)
        return [[(next(iter(a.devices())), np.asarray(a)) for a in out] for out in results], ms
    except Exception as e:
        raise ExecutionError(f"execution failed: {_strip_status(str(e)).splitlines()[0]}") from None


def local_device_order(count: int = 1) -> list[Any]:
    """The host devices of a run on ``count`` of them (:func:`cpu_devices`): in a distributed
    run, this process's first as jax numbers them, then all others (global order)."""
    return sorted(cpu_devices(count), key=lambda d: (d.process_index, d.id))


def distributed_initialize(coordinator: str, num_processes: int, process_id: int,
                           local_device_count: int, timeout_s: int, heartbeat_s: int) -> None:
    """Join a JAX distributed run on CPU (gloo collectives), then start the backend.

    Must come before anything else starts jax. Only a process started for the run (a
    peer of ``spmd-run --processes``) calls it: it configures that process's jax (CPU
    only, its device count, gloo). The runtime's own failures (a peer that never
    registers, missed heartbeats) abort the process natively; whoever started this
    process reports those (spmd.supervise).
    """
    global _distributed
    with _lock:
        with filtered_native_stderr():
            jax_module = _import_jax()
        _own_process_cpu_jax(jax_module, local_device_count)
        jax_module.config.update("jax_cpu_collectives_implementation", "gloo")
        # Its SIGTERM handler would keep a stopped process alive; nothing here is preemptible.
        jax_module.config.update("jax_enable_preemption_service", False)
        try:
            jax_module.distributed.initialize(
                coordinator, num_processes, process_id, cluster_detection_method="deactivate",
                initialization_timeout=timeout_s, heartbeat_timeout_seconds=heartbeat_s,
                shutdown_timeout_seconds=timeout_s)
        except Exception as e:
            raise DistributedError(f"cannot join the distributed run at {coordinator}: "
                                   f"{_strip_status(str(e)).splitlines()[0]}") from None
        _distributed = True
    with filtered_native_stderr():
        jax_module.devices()  # the backend starts now, joined to the run


_distributed = False  # this process joined a distributed run (its jax's CPU devices are the run's)


def _distributed_client() -> Any:
    from jax._src import distributed

    client = distributed.global_state.client
    if client is None:
        raise DistributedError("not part of a distributed run")
    return client


def kv_set(key: str, value: bytes) -> None:
    """Store bytes in the coordinator's key-value store."""
    try:
        _distributed_client().key_value_set_bytes(key, value)
    except DistributedError:
        raise
    except Exception as e:
        raise DistributedError(f"cannot reach the coordinator: {_strip_status(str(e)).splitlines()[0]}") from None


def kv_get(key: str, timeout_s: float) -> bytes | None:
    """Bytes stored under ``key`` by any process, waiting up to ``timeout_s``; None on timeout."""
    try:
        return _distributed_client().blocking_key_value_get_bytes(key, max(1, int(ms(timeout_s))))
    except DistributedError:
        raise
    except Exception as e:
        if "DEADLINE_EXCEEDED" in str(e):
            return None
        raise DistributedError(f"cannot reach the coordinator: {_strip_status(str(e)).splitlines()[0]}") from None


def distributed_shutdown() -> None:
    """Leave the run; waits (bounded by the shutdown timeout) until every process leaves."""
    import jax as jax_module

    try:
        jax_module.distributed.shutdown()
    except Exception as e:
        raise DistributedError(f"shutting down the distributed run failed: "
                               f"{_strip_status(str(e)).splitlines()[0]}") from None


def is_native_noise(line: str) -> bool:
    """A line jaxlib's native code prints that says nothing to a user (see _NATIVE_NOISE)."""
    return any(re.match(p, line) for p in _NATIVE_NOISE)
