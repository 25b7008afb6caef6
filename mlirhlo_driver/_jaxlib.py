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
from importlib import metadata
from typing import Any

from .errors import CompileError, DriverError, EnvironmentMismatch
from .native_io import capture_fd2

# The one tested jax/jaxlib/jax-cuda12-plugin version (pyproject pins the same).
PINNED_VERSION = "0.10.2"

# Lines that jaxlib's native code prints on fd 2 when no CUDA driver exists.
# They say nothing to a user compiling device-less, so they are dropped; any
# other native output is passed through unchanged.
_NATIVE_NOISE = (
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$"),
    re.compile(r"^[IWE]\d{4} [\d:. ]+\d+ cudart_stub\.cc:\d+\] Could not find cuda drivers on your machine, GPU will not be used\.$"),
)

_lock = threading.RLock()

# XLA's INFO log lines (plugin found, device counts, dump paths) are queued and
# can surface on stderr long after the call that logged them (at a fork, at
# exit), past any fd-2 capture. Warnings and errors still show; a user's own
# setting wins. Set before any jaxlib native library is loaded.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


def installed_versions() -> dict[str, str | None]:
    """Installed versions of the pinned distributions, read without importing them."""
    out: dict[str, str | None] = {}
    for dist in ("jax", "jaxlib", "jax-cuda12-plugin"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def check_versions() -> None:
    """Raise EnvironmentMismatch unless jax and jaxlib are the pinned version."""
    found = installed_versions()
    bad = {k: v for k, v in found.items() if k != "jax-cuda12-plugin" and v != PINNED_VERSION}
    plugin = found["jax-cuda12-plugin"]
    if plugin is not None and plugin != PINNED_VERSION:
        bad["jax-cuda12-plugin"] = plugin
    if bad:
        have = ", ".join(f"{k}=={v}" for k, v in bad.items())
        raise EnvironmentMismatch(
            f"mlirhlo-driver is tested with jax/jaxlib {PINNED_VERSION}, found {have}",
            hint=f"pip install 'jax=={PINNED_VERSION}' 'jaxlib=={PINNED_VERSION}' "
                 f"'jax-cuda12-plugin=={PINNED_VERSION}'",
        )


@contextlib.contextmanager
def filtered_native_stderr():
    """Run a block with fd 2 captured, then replay it minus known CUDA noise."""
    try:
        with capture_fd2() as captured:
            yield
    finally:
        _replay_without_noise(captured.text)


def _replay_without_noise(text: str) -> None:
    kept = [ln for ln in text.splitlines() if not any(p.match(ln) for p in _NATIVE_NOISE)]
    if kept:
        sys.stderr.write("\n".join(kept) + "\n")
        sys.stderr.flush()


@functools.cache
def jax() -> Any:
    """Import jax configured for the driver: CPU as jax's default platform.

    jax's plugin discovery would try to initialise CUDA and print a traceback
    on a machine without a driver; restricting jax to CPU avoids that, and the
    CUDA plugin is reached directly for device-less compiles (cuda_c_api()).
    """
    with _lock:
        check_versions()
        with filtered_native_stderr():
            import jax as jax_module

            if not os.environ.get("JAX_PLATFORMS"):
                jax_module.config.update("jax_platforms", "cpu")
            if _cpu_device_count is not None:
                jax_module.config.update("jax_num_cpu_devices", _cpu_device_count)
            jax_module.devices()  # plugin discovery prints CUDA noise: start it while filtered
        return jax_module


_cpu_device_count: int | None = None


def enable_x64() -> None:
    """64-bit types are canonicalised away (f64 -> f32) unless this is on."""
    jax().config.update("jax_enable_x64", True)


@functools.cache
def _register_all_passes() -> None:
    from jaxlib.mlir._mlir_libs import _mlirHlo, _stablehlo
    import jaxlib.mlir._mlir_libs._mlirGPUPasses  # noqa: F401  (registers gpu-*)
    import jaxlib.mlir._mlir_libs._mlirSparseTensorPasses  # noqa: F401

    _stablehlo.register_stablehlo_passes()
    _mlirHlo.register_mhlo_passes()


@functools.cache
def ir_context() -> Any:
    """The process's MLIR context: every dialect and pass that jaxlib ships."""
    jax()
    with _lock, filtered_native_stderr():
        from jax._src.interpreters import mlir as jax_mlir

        _register_all_passes()
        ctx = jax_mlir.make_ir_context()
        ctx.allow_unregistered_dialects = False
        return ctx


# ---------------------------------------------------------------- HLO <-> MLIR

def hlo_text_to_proto(text: str) -> bytes:
    """HLO text -> serialized HloModuleProto. Raises RuntimeError with XLA's message."""
    from jaxlib import _hlo

    try:
        return _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    except Exception as e:  # JaxRuntimeError; its message carries line:col
        raise RuntimeError(str(e)) from None


def hlo_proto_to_text(proto: bytes) -> str:
    from jaxlib import _hlo

    try:
        return _hlo.HloModule.from_serialized_hlo_module_proto(proto).to_string()
    except Exception as e:
        raise RuntimeError(str(e)) from None


def hlo_proto_to_stablehlo_bytecode(proto: bytes) -> bytes:
    jax()
    from jaxlib import _jax

    try:
        return _jax.mlir.hlo_to_stablehlo(proto)
    except Exception as e:
        raise RuntimeError(str(e)) from None


def stablehlo_to_hlo_proto(module_bytecode: bytes) -> bytes:
    """StableHLO (bytecode or text) -> HloModuleProto, the form XLA receives."""
    jax()
    from jaxlib import _jax

    try:
        comp = _jax.mlir.mlir_module_to_xla_computation(module_bytecode, use_tuple_args=False,
                                                        return_tuple=False)
    except Exception as e:
        raise RuntimeError(str(e)) from None
    return comp.as_serialized_hlo_module_proto()


def hlo_proto_to_dot(proto: bytes) -> str:
    from jaxlib import _hlo

    return _hlo.hlo_module_to_dot_graph(_hlo.HloModule.from_serialized_hlo_module_proto(proto))


# ----------------------------------------------------------------- XLA clients

def compile_options(*, num_replicas: int = 1, num_partitions: int = 1,
                    env_overrides: list[tuple[str, Any]] | None = None,
                    dump_to: str | None = None) -> Any:
    jax()  # first, so its import is quiet
    from jax._src.lib import xla_client

    opts = xla_client.CompileOptions()
    opts.num_replicas = num_replicas
    opts.num_partitions = num_partitions
    if env_overrides:
        opts.env_option_overrides = list(env_overrides)
    if dump_to is not None:
        opts.executable_build_options.debug_options.xla_dump_to = dump_to
    return opts


def debug_options_fields() -> dict[str, Any]:
    """Name -> default value of every DebugOptions field this jaxlib's XLA knows."""
    jax()  # first, so its import is quiet
    from jax._src.lib import xla_client

    dbg = xla_client.CompileOptions().executable_build_options.debug_options
    out = {}
    for name in dir(dbg):
        if name.startswith("xla_"):
            try:
                out[name] = getattr(dbg, name)
            except Exception:  # some fields are write-only in the bindings
                out[name] = None
    return out


def cpu_devices() -> list[Any]:
    return list(jax().devices("cpu"))


@functools.cache
def cuda_c_api() -> Any:
    """The CUDA PJRT plugin's C API, loaded without touching a GPU or driver."""
    jax()
    from jax._src import xla_bridge
    jax()  # first, so its import is quiet
    from jax._src.lib import xla_client

    with _lock, filtered_native_stderr():
        factory = getattr(xla_bridge, "_backend_factories", {}).get("cuda")
        if factory is not None and getattr(factory, "c_api", None) is not None:
            return factory.c_api  # jax's discovery loaded it already; loading twice fails
        try:
            import jax_plugins.xla_cuda12 as plugin
        except ImportError:
            raise CompileError(
                "--platform cuda needs the CUDA PJRT plugin",
                hint=f"pip install 'jax-cuda12-plugin=={PINNED_VERSION}'") from None
        return xla_client.load_pjrt_plugin_dynamically("cuda", str(plugin._get_library_path()))


def cuda_compile_only_devices(target_config_text: str, name: str = "mlirhlo") -> list[Any]:
    """Compile-only CUDA devices for a GpuTargetConfigProto textproto (no GPU needed)."""
    jax()  # first, so its import is quiet
    from jax._src.lib import xla_client

    c_api = cuda_c_api()
    with _lock, filtered_native_stderr():
        topo = xla_client.make_c_api_device_topology(
            c_api, name, target_config=target_config_text, topology="1x1x1")
        return list(topo._make_compile_only_devices())


def compile_executable(module: Any, devices: list[Any], options: Any) -> Any:
    """Compile an ir.Module for the given devices (CPU: loaded; CUDA: compile-only).

    On failure the CompileError carries what XLA logged natively meanwhile
    (``native_log``): some errors are explained only there.
    """
    jax()  # first, so its import is quiet
    from jax._src.lib import xla_client

    client = devices[0].client
    device_list = xla_client.DeviceList(tuple(devices))
    failure: Exception | None = None
    with capture_fd2() as captured:
        try:
            if hasattr(client, "compile_and_load") and devices[0].platform == "cpu":
                executable = client.compile_and_load(module, device_list, options)
            else:
                executable = client.compile(module, executable_devices=device_list,
                                            compile_options=options)
        except Exception as e:
            failure = e
    if failure is not None:
        err = CompileError(_strip_status(str(failure)))
        err.native_log = captured.text
        raise err from None
    _replay_without_noise(captured.text)
    return executable


def _strip_status(message: str) -> str:
    return re.sub(r"^[A-Z_]+: ", "", message.strip())


def execute(executable: Any, arguments: list[Any], device: Any) -> list[Any]:
    """Run a loaded single-device executable on host arrays; numpy results."""
    import numpy as np

    jax_module = jax()
    try:
        buffers = [jax_module.device_put(a, device) for a in arguments]
        with filtered_native_stderr():
            results = executable.execute_sharded(buffers)
            return [np.asarray(r[0]) for r in results.disassemble_into_single_device_arrays()]
    except Exception as e:
        raise ExecutionError(f"execution failed: {_strip_status(str(e))}") from None


class ExecutionError(DriverError):
    """XLA compiled the module but running it failed (out of memory, ...)."""


class NoGpu(DriverError):
    """--platform cuda execution without a usable NVIDIA GPU."""


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
        raise NoGpu("--platform cuda needs an NVIDIA GPU and driver to run on; none is usable here: "
                    + _strip_status(str(failure)).splitlines()[0],
                    hint="compile device-less with 'mlirhlo opt --platform cuda' instead") from None
    _replay_without_noise(captured.text)
    if not devices:
        raise NoGpu("--platform cuda needs an NVIDIA GPU; the CUDA plugin found none")
    return devices


# ------------------------------------------------------- SPMD and multi-process

class DistributedError(DriverError):
    """JAX's distributed runtime failed: a coordinator or process unreachable, a timeout."""


def ensure_cpu_devices(count: int) -> None:
    """At least ``count`` CPU devices: set before jax starts, or check the ones it has."""
    global _cpu_device_count
    if jax.cache_info().currsize:
        have = len(jax().devices("cpu"))
        if have < count:
            raise DriverError(f"{count} CPU devices needed, but jax already started with {have}",
                              hint="run in a fresh process")
        return
    _cpu_device_count = count


def hlo_sharding(text: str | None = None, proto: Any = None) -> Any:
    """An xla HloSharding from HLO's spelling (``{devices=[4,1]<=[4]}``) or an OpSharding.

    Raises ValueError(XLA's message, 1-based column or None) for text it cannot
    parse. Needs no backend: command-line shardings are checked before the
    device count is fixed.
    """
    with _lock, filtered_native_stderr():
        from jax._src.lib import xla_client

    if proto is not None:
        return xla_client.HloSharding.from_proto(proto)
    try:
        return xla_client.HloSharding.from_string(text)
    except Exception as e:
        message = _strip_status(str(e))
        m = re.search(r"was parsing \d+:(\d+): error: (.*)", message)
        if m:
            raise ValueError(m.group(2).strip(), int(m.group(1))) from None
        raise ValueError(message.splitlines()[0], None) from None


def spmd_compile_options(*, num_replicas: int, num_partitions: int, device_ids: list[int],
                         use_shardy: bool, run_backend_only: bool,
                         env_overrides: list[tuple[str, Any]]) -> Any:
    """CompileOptions for R replicas x P partitions on the given (logical order) device ids."""
    import numpy as np
    from jax._src.lib import xla_client

    opts = compile_options(num_replicas=num_replicas, num_partitions=num_partitions,
                           env_overrides=env_overrides)
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


def executable_shardings(executable: Any) -> tuple[list[Any] | None, list[Any] | None]:
    """(parameter, output) HloShardings XLA chose; None where it reports none (replicated)."""
    def convert(ops: Any) -> list[Any] | None:
        return None if ops is None else [None if o is None else hlo_sharding(proto=o) for o in ops]

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

    try:
        t0 = time.perf_counter()
        results = executable.execute_sharded(arguments).disassemble_into_single_device_arrays()
        for out in results:
            for a in out:
                a.block_until_ready()
        ms = (time.perf_counter() - t0) * 1000
        return [[(next(iter(a.devices())), np.asarray(a)) for a in out] for out in results], ms
    except Exception as e:
        raise ExecutionError(f"execution failed: {_strip_status(str(e)).splitlines()[0]}") from None


def local_device_order() -> list[Any]:
    """This process's CPU devices first as jax numbers them; then all others (global order)."""
    return sorted(jax().devices("cpu"), key=lambda d: (d.process_index, d.id))


def distributed_initialize(coordinator: str, num_processes: int, process_id: int,
                           local_device_count: int, timeout_s: int, heartbeat_s: int) -> None:
    """Join a JAX distributed run on CPU (gloo collectives), then start the backend.

    Must come before anything else starts jax. The runtime's own failures
    (a peer that never registers, missed heartbeats) abort the process natively;
    whoever started this process reports those (spmd.supervise).
    """
    global _cpu_device_count
    with _lock:
        check_versions()
        with filtered_native_stderr():
            import jax as jax_module
        if not os.environ.get("JAX_PLATFORMS"):
            jax_module.config.update("jax_platforms", "cpu")
        jax_module.config.update("jax_cpu_collectives_implementation", "gloo")
        # Its SIGTERM handler would keep a stopped process alive; nothing here is preemptible.
        jax_module.config.update("jax_enable_preemption_service", False)
        _cpu_device_count = local_device_count
        try:
            jax_module.distributed.initialize(
                coordinator, num_processes, process_id, cluster_detection_method="deactivate",
                initialization_timeout=timeout_s, heartbeat_timeout_seconds=heartbeat_s,
                shutdown_timeout_seconds=timeout_s)
        except Exception as e:
            raise DistributedError(f"cannot join the distributed run at {coordinator}: "
                                   f"{_strip_status(str(e)).splitlines()[0]}") from None
    jax()


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
        return _distributed_client().blocking_key_value_get_bytes(key, max(1, int(timeout_s * 1000)))
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
    return any(p.match(line) for p in _NATIVE_NOISE)
