"""Compile targets: one frozen, hashable value per compile, and the resolver every front-end
shares (``mlirhlo opt``, ``kernels``, ``diff``, XLA's ``hlo-opt``, the Python API), through
the top-level ``mlirhlo_driver.targets``.

A :class:`Target` names one compile: a platform class (:class:`CpuTarget`,
:class:`CudaTarget`, :class:`TpuTarget`) with its GPU spec or TPU topology, and XLA's
DebugOptions. Everything the driver does
differently per platform (the devices it compiles and runs on, its DebugOptions defaults,
the checks before anything loads, the errors it translates, what a compile should tell
the user) is a method of that platform's class, so a platform is added in one place;
``xla.backend.compile`` calls them.

Promises:

* :func:`resolve` checks everything it is given before anything compiles and raises
  typed errors (errors.py); it prints nothing. What the user should be told (a default
  GPU spec, fields filled into a spec) is kept in :attr:`Targets.notes`, for the caller
  to say once its own checks have passed, never right before an error line.
* Platform names take XLA's spellings too (``CPU``, ``Host``, ``GPU``, ``CUDA``).
* DebugOptions come from ``--debug-options-file`` < ``XLA_FLAGS`` < the command line,
  and are checked against this jaxlib's XLA by name.
* A target holds no files and no state: an autotune results file XLA would misread by
  its extension is copied once into the cache folder, named by its content.
* Nothing here imports jax or jaxlib.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from ..errors import CompileError, DriverError, FlagError, log_note, param
from ..stages.base import StageOptions

TARGET_CONFIG_FLAG = "xla_gpu_target_config_filename"
TOPOLOGY_FLAG = "xla_gpu_topology_filename"  # cuda.topology.FLAG
# XLA's kernel cache file (a CompilationCacheProto), written into a CUDA compile's dump directory.
KERNEL_CACHE_FLAG = "xla_gpu_kernel_cache_file"
KERNEL_CACHE_FILE = "xla_kernel_cache.pb"
AUTOTUNE_FLAG = "xla_gpu_load_autotune_results_from"


@dataclass(frozen=True)
class Target:
    """What one compile is for: a platform and XLA's DebugOptions, one frozen, hashable value.

    Made by :meth:`cpu`, :meth:`cuda` and :meth:`of` in Python and by :func:`resolve` for
    the commands, which read XLA_FLAGS, flag files and autotune results the same way. Two
    targets are equal when they compile the same: the stage cache keys on their content.
    """

    xla_flags: tuple[tuple[str, Any], ...] = ()
    platform: ClassVar[str] = ""
    # XLA's spellings of the platform, for --platform (the first is the canonical one).
    spellings: ClassVar[tuple[str, ...]] = ()
    # The GPU spec (cuda.specs.GpuSpec) of a CUDA target; None for other platforms.
    spec: ClassVar[Any] = None
    # The TPU topology (tpu.topologies.Topology) of a TPU target; None for other platforms.
    topology: ClassVar[Any] = None

    # ------------------------------------------------------------ constructors

    @classmethod
    def cpu(cls, *, xla_flags: dict[str, Any] | None = None, debug_options_file: str | None = None) -> Target:
        """XLA's CPU backend. ``xla_flags``: DebugOptions fields by name, over
        ``XLA_FLAGS`` and ``debug_options_file`` (FlagError for a name this XLA lacks)."""
        return cls.of("cpu", xla_flags=xla_flags, debug_options_file=debug_options_file)

    @classmethod
    def cuda(cls, gpu_spec: str | None = None, *, xla_flags: dict[str, Any] | None = None,
             autotune_results: str | None = None, debug_options_file: str | None = None) -> Target:
        """XLA's CUDA backend, device-less, for one GPU spec: a shipped name
        (``h100_sxm``; ``mlirhlo specs list``) or a GpuTargetConfigProto file; the
        default spec without one. ``autotune_results``: XLA's AutotuneResults file."""
        if gpu_spec is not None and "," in gpu_spec:
            raise DriverError(f"gpu_spec '{gpu_spec}' names several specs: a Target is one compile target",
                              hint="make one Target per spec")
        return cls.of("cuda", gpu_spec=gpu_spec, xla_flags=xla_flags, autotune_results=autotune_results,
                      debug_options_file=debug_options_file)

    @classmethod
    def tpu(cls, topology: str | None = None, *, xla_flags: dict[str, Any] | None = None,
            debug_options_file: str | None = None) -> Target:
        """A TPU slice, device-less (libtpu's compile-only topology; ``mlirhlo tpu-plugin
        install``): libtpu's name (``v5e:2x2``, ``v5p:2x2x1``) or a Cloud TPU accelerator
        type (``v5litepod-16``, ``v6e-8``); the default topology without one."""
        if topology is not None and "," in topology:
            raise DriverError(f"tpu_topology '{topology}' names several topologies: a Target is one compile target",
                              hint="make one Target per topology")
        return cls.of("tpu", tpu_topology=topology, xla_flags=xla_flags, debug_options_file=debug_options_file)

    @classmethod
    def of(cls, platform: str, *, gpu_spec: str | None = None, xla_flags: dict[str, Any] | None = None,
           autotune_results: str | None = None, debug_options_file: str | None = None,
           tpu_topology: str | None = None) -> Target:
        """A target by platform name (XLA's spellings too: ``Host``, ``GPU``), resolved as
        every command resolves it (:func:`resolve`). Notes (the default spec used, fields
        filled into a spec) go to the ``mlirhlo_driver`` logger (errors.log_note)."""
        found = resolve(platform, gpu_spec=gpu_spec, cli_flags=dict(xla_flags or {}),
                        debug_options_file=debug_options_file, autotune_results=autotune_results,
                        spec_flag="gpu_spec", tpu_topology=tpu_topology, topology_flag="tpu_topology")
        found.say_notes()
        return found.targets[0]

    # ------------------------------------------------------------ the value

    @property
    def gpu_spec(self) -> Any:
        """Another name of :attr:`spec` (StageOptions' spelling)."""
        return self.spec

    def label(self) -> str:
        """How the target is named in listings and tables: ``cpu``, ``cuda (h100_sxm)``."""
        return self.platform

    def with_flags(self, flags: dict[str, Any]) -> Target:
        """This target with exactly these DebugOptions."""
        return replace(self, xla_flags=tuple(sorted(flags.items())))

    def with_flag(self, name: str, value: Any) -> Target:
        """This target with one DebugOption set (over its own)."""
        return self.with_flags({**dict(self.xla_flags), name: value})

    def options(self, **kw: Any) -> StageOptions:
        """The StageOptions of this target's compile (``kw``: the stage options)."""
        return StageOptions(target=self, **kw)

    # ------------------------------------------------------------ what xla.backend asks

    def check(self) -> None:
        """Refuse, before anything loads, what the compile cannot do here."""

    def flag_defaults(self, *, on_device: bool) -> dict[str, Any]:
        """The driver's DebugOptions defaults for this platform (the user's flags win);
        ``on_device``: the compile is for devices to run on, not device-less."""
        return {}

    def dump_flags(self, workdir: str) -> dict[str, Any]:
        """DebugOptions of this platform's for a compile that dumps into ``workdir`` (the
        user's own flags win)."""
        return {}

    def compile_devices(self, count: int, *, on_device: bool) -> list[Any]:
        """``count`` devices to compile for (``on_device``: ones to run on)."""
        raise NotImplementedError

    def translate_error(self, message: str, native_log: str) -> DriverError | None:
        """A compile failure said as one line of this platform's, or None."""
        return None

    def compile_notes(self) -> list[str]:
        """What every compile for this target should tell the user."""
        return []

    def identity_parts(self) -> list[tuple[str, Any]]:
        """What a compile's output depends on besides the module and the flags, for the
        cache key (core.compiled): ``(name, text)``, ``("file:NAME", path)`` for a file by its
        content, ``("stat:NAME", path)`` for an installed tool by its size and date."""
        return []

    def compile_env(self) -> dict[str, str]:
        """What the process compiling for this target must start with ({}: any process,
        this one included); a target that needs some always compiles in a helper process
        of the driver's (xla.backend.compile)."""
        return {}

    def check_module(self, module: Any) -> None:
        """Refuse, before the compile, a module this platform's compiler would die on."""

    def dump_env(self, dumps: tuple[str, ...]) -> dict[str, str]:
        """What the compiling process must also start with to write these dumps (xla.backend's
        names) that only process-wide flags give."""
        return {}

    def pass_log_env(self, xla_env: dict[str, str]) -> dict[str, str]:
        """What makes this platform's compiler log its HLO passes, given XLA's own variables
        for it (xla.pass_log.log_env)."""
        return xla_env

    # Whether a compile logging its passes sends the compiler's whole log to stderr (then
    # what the compiling process wrote is that log, parsed, not output for the user).
    pass_log_is_whole_log: ClassVar[bool] = False

    def collect_dumps(self, workdir: str) -> None:
        """In the compiling process, after a compile: move what :meth:`dump_env` had written
        into ``workdir``, where the compile's dump is read."""

    def lower_for(self) -> tuple[Any, ...] | None:
        """What a JAX function is lowered for when compiled for this target
        (core.program.InputOptions.lower_for): None, the driver's CPU device."""
        return None

    def crash_hint(self, dumps: tuple[str, ...] = ()) -> str | None:
        """What may have made this platform's compile process die, for its error line
        (``dumps``: what the compile was asked to dump, xla.backend's names)."""
        return None


@dataclass(frozen=True)
class CpuTarget(Target):
    """XLA's CPU backend, on the driver's own host client (``_native.jaxlib.cpu_client``)."""

    platform: ClassVar[str] = "cpu"
    spellings: ClassVar[tuple[str, ...]] = ("cpu", "host")

    def compile_devices(self, count: int, *, on_device: bool) -> list[Any]:
        from .._native import jaxlib as _jaxlib

        return _jaxlib.cpu_devices(count)[:count]


@dataclass(frozen=True, kw_only=True)
class CudaTarget(Target):
    """XLA's CUDA backend for one GPU spec: device-less (the spec's compile-only devices), or
    on the GPUs there are for runs (a run's target needs no spec: ``spec`` None)."""

    spec: Any  # cuda.specs.GpuSpec; None: the GPU of a run
    # cuda.topology.GpuTopology (--xla_gpu_topology_filename): the device-less devices are
    # that topology's; None: one host with as many devices as a compile needs. Not `topology`,
    # which names a TPU target's slice.
    gpu_topology: Any = None
    platform: ClassVar[str] = "cuda"
    spellings: ClassVar[tuple[str, ...]] = ("cuda", "gpu")

    def label(self) -> str:
        return f"cuda ({self.spec.name})" if self.spec is not None else "cuda"

    def _user_data_dir(self) -> str | None:
        return str(dict(self.xla_flags).get("xla_gpu_cuda_data_dir") or "") or None

    def check(self) -> None:
        if self.spec is None:
            return
        from ..cuda import tools as cuda_tools

        # XLA runs ptxas even device-less; a ptxas that cannot target the spec's sm
        # fails deep inside XLA, so say so before loading anything.
        cuda_tools.check_target(self.spec.sm, self._user_data_dir(), gpu=f"spec {self.spec.name}: {self.spec.gpu}")

    def flag_defaults(self, *, on_device: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if not on_device:
            # Without a GPU there is nothing to autotune on: XLA must pick kernels heuristically.
            out["xla_gpu_autotune_level"] = 0
        if not self._user_data_dir():
            # XLA tries PATH before pip's ptxas; one of another CUDA major may be there.
            from ..cuda import tools as cuda_tools

            out["xla_gpu_cuda_data_dir"] = cuda_tools.cuda_data_dir()[0]
        return out

    def dump_flags(self, workdir: str) -> dict[str, Any]:
        import os

        if dict(self.xla_flags).get(KERNEL_CACHE_FLAG):
            return {}
        # XLA writes the cubins it assembled there, one per kernel module: the cubin, sass and
        # kernels stages read them instead of running ptxas again (same output).
        return {KERNEL_CACHE_FLAG: os.path.join(workdir, KERNEL_CACHE_FILE)}

    def compile_devices(self, count: int, *, on_device: bool) -> list[Any]:
        from .._native import jaxlib as _jaxlib

        if on_device:
            found = _jaxlib.cuda_devices()
            if len(found) < count:
                from ..errors import NoGpu

                raise NoGpu(f"{count} GPUs needed, {len(found)} here")
            return found[:count]
        if self.spec is None:
            raise DriverError(f"{param('platform', 'cuda')} compiles device-less for a GPU spec: give {param('gpu_spec')}")
        from ..cuda.specs import target_config_for_installed_xla

        shape = None
        if self.gpu_topology is not None:
            if count > self.gpu_topology.num_devices:
                raise DriverError(f"--xla_gpu_topology_filename: {self.gpu_topology.source}: the compile needs "
                                  f"{count} devices, the topology has {self.gpu_topology.num_devices}")
            shape = self.gpu_topology.shape()
        return _jaxlib.cuda_compile_only_devices(target_config_for_installed_xla(self.spec.text),
                                                 name=self.spec.name, count=count, topology=shape)

    def translate_error(self, message: str, native_log: str) -> DriverError | None:
        from ..cuda import tools as cuda_tools

        # XLA's multi-line "no suitable ptxas" report, as one line.
        return cuda_tools.translate_xla_error(message, native_log, self._user_data_dir(),
                                              self.spec.sm if self.spec is not None else None)

    def compile_notes(self) -> list[str]:
        if self.spec is None:
            return []
        from ..cuda.specs import installed_xla_notes

        return installed_xla_notes(self.spec.text)

    def identity_parts(self) -> list[tuple[str, Any]]:
        import os

        from ..cuda.tools import tool_paths

        data_dir = self._user_data_dir()
        parts: list[tuple[str, Any]] = [("spec-name", getattr(self.spec, "name", None)),
                                        ("spec-text", getattr(self.spec, "text", None))]
        # Which ptxas and nvdisasm the CUDA stages may run here, and which builds.
        parts += [("stat:cuda-tool", path) for path in tool_paths(data_dir)]
        if data_dir:
            parts += [(f"file:data-dir:{rel}", os.path.join(data_dir, rel))
                      for rel in ("nvvm/libdevice/libdevice.10.bc", "bin/ptxas", "bin/nvdisasm")]
        return parts


@dataclass(frozen=True, kw_only=True)
class TpuTarget(Target):
    """A TPU slice, device-less: libtpu's compile-only topology (tpu.topologies.Topology).

    libtpu is loaded only in a process of the driver's own, started with the environment
    :meth:`compile_env` gives (quiet, no logs or lock file in /tmp): never in the user's
    process, whose jax would otherwise print libtpu's start-up errors. Its aborts (a dynamic
    dimension, a bad flag) end that process only, and come back as one error line.
    """

    topology: Any  # tpu.topologies.Topology
    # The chips attached here (run_target): compiled and run in the process that holds them,
    # through jax's own TPU backend; a compile that needs a helper process is the device-less
    # one for their topology (device_less), whose HLO is the chip's (measured on a v5e).
    attached: bool = False
    # No topology was named: the default one, which a dumped module's own replaces (tpu.replay).
    topology_default: bool = field(default=False, compare=False)
    platform: ClassVar[str] = "tpu"
    spellings: ClassVar[tuple[str, ...]] = ("tpu",)

    def label(self) -> str:
        return f"tpu ({self.topology.name}{', attached' if self.attached else ''})"

    def device_less(self) -> TpuTarget:
        """This target's compile without the chips: libtpu's compile-only topology."""
        return replace(self, attached=False)

    def lower_for(self) -> tuple[Any, ...] | None:
        # A TPU device of the topology, in the driver's TPU process (the same for the chips
        # attached here): TPU lowering rules, Pallas kernels.
        target = self.device_less()
        return ("tpu", target.topology.name, target.topology.shape, tuple(sorted(target.compile_env().items())))

    def check(self) -> None:
        from .._native import libtpu

        if not self.attached:
            libtpu.require()  # one line with the install command, before any process starts

    def compile_devices(self, count: int, *, on_device: bool) -> list[Any]:
        from .._native import jaxlib as _jaxlib

        if self.attached:
            devices = _jaxlib.tpu_devices()
            if len(devices) < count:
                from ..errors import InputError

                raise InputError(f"this run needs {count} TPU devices; {len(devices)} "
                                 f"{'is' if len(devices) == 1 else 'are'} attached here ({self.topology.name})",
                                 hint=f"compile for the whole slice device-less: mlirhlo opt --platform tpu "
                                      f"--tpu-topology NAME --num-partitions {count}")
            return devices
        if on_device:
            from ..errors import InputError

            raise InputError("no TPU is attached here: TPU compiles are device-less",
                             hint="mlirhlo opt --platform tpu --tpu-topology NAME")
        return _jaxlib.tpu_compile_only_devices(self.topology.name, self.topology.shape, count)

    def translate_error(self, message: str, native_log: str) -> DriverError | None:
        import re

        from ..tpu import memory

        m = re.search(r"Custom emitter for (\S+) not found", message)
        if m:
            return DriverError(f"libtpu has no kernel for custom call '{m.group(1)}': the module was lowered for "
                               "another platform", hint="give the JAX function itself (model.py:f --args ...): "
                                                        "the driver lowers it for the TPU")
        if "device assignment should include all slice devices" in message:
            # libtpu 0.0.50.1 on v5e 16x16 (limited ICI routing): a compile uses all of the slice or none.
            return CompileError(f"{self.label()} compiles for all {self.topology.devices} devices of the slice, not "
                                "fewer", hint="a topology with as many devices as the module has partitions")
        return memory.translate_oom(message, self)

    def identity_parts(self) -> list[tuple[str, Any]]:
        from .._native import libtpu

        found = libtpu.in_use()
        return [("tpu-topology", self.topology.name),
                ("libtpu", f"{found.version} {found.library}" if found is not None else None)]

    def compile_env(self) -> dict[str, str]:
        from .._native import jaxlib as _jaxlib

        if self.attached:
            return {}  # the process holding the chips compiles for them
        # libtpu writes glog files (tpu_driver.*.log.*) into TMPDIR whatever TPU_LOG_DIR says: a
        # directory of this process's, removed at exit, so none are left in /tmp. The user's
        # LIBTPU_INIT_ARGS stay first: the driver's own dump and log flags are added after them.
        user = os.environ.get("LIBTPU_INIT_ARGS")
        return {**_jaxlib.TPU_COMPILE_ENV, "TMPDIR": _private_dirs()[2], **({"LIBTPU_INIT_ARGS": user} if user else {})}

    def check_module(self, module: Any) -> None:
        import re

        from ..errors import InputError

        # libtpu aborts its process on a dynamic dimension ("Check failed: !count_overflow",
        # libtpu 0.0.50.1) where the CPU and CUDA compilers refuse it with an error.
        text = module.operation.get_asm(large_elements_limit=1)
        m = re.search(r"tensor<(?:\d+x)*\?[x?\d]*x?[a-z]\w*>", text)
        if m:
            raise InputError(f"the module has a dynamic dimension ({m.group(0)}): libtpu compiles static shapes only",
                             hint="export it with concrete shapes (jax.export with ShapeDtypeStructs)")
        # jax's CPU lowering of linalg, FFT and host callbacks calls into jaxlib's CPU kernels,
        # which libtpu has no emitter for ("Custom emitter for lapack_sgetrf_ffi not found").
        cpu_only = sorted(set(re.findall(r"custom_call @\"?((?:lapack_|ducc_|cpu_|xla_python_cpu|xla_ffi_python_cpu)"
                                         r"[\w.]*)", text)))
        if cpu_only:
            raise InputError(f"the module holds CPU-only custom calls ({', '.join(cpu_only)}): it was lowered "
                             "for the CPU", hint="give the JAX function itself (model.py:f --args ...): the driver "
                                                 "lowers it for the TPU")

    def dump_env(self, dumps: tuple[str, ...]) -> dict[str, str]:
        if "tpu-llo" not in dumps or self.attached:  # xla.backend.TPU_LLO; attached: device_less's
            return {}
        # libtpu reads its dump flags once, as it loads: a directory of this process's for the
        # TPU process's lifetime, emptied after each compile (collect_dumps). Only the final
        # bundles: all LLO passes are ~25x the files. Only the codegen category: libtpu 0.0.34 (jax
        # 0.9's pin) otherwise also writes a VMEM report, from an HTML template its wheel lacks,
        # and aborts; 0.0.50.1 writes the same bundles with it (less the report and TLP-hlo.txt).
        from .._native import libtpu

        where = _private_dirs()
        profile = f" --xla_jf_dump_static_llo_profile_to={where[1]}" if libtpu.writes_static_profile() else ""
        return {"LIBTPU_INIT_ARGS": f"--xla_jf_dump_to={where[0]} --xla_jf_dump_llo_pass_label_regex=final_bundles "
                                    f"--xla_jf_dump_category_filter=codegen{profile}",
                LLO_DIRS_ENV: os.pathsep.join(where[:2])}

    pass_log_is_whole_log: ClassVar[bool] = True

    def pass_log_env(self, xla_env: dict[str, str]) -> dict[str, str]:
        # libtpu's XLA reads its logging flags from LIBTPU_INIT_ARGS, not TF_CPP_VMODULE; to
        # stderr, where the compile's log is captured (xla.pass_log parses the same lines).
        vmodule = xla_env.get("TF_CPP_VMODULE", "")
        return {"LIBTPU_INIT_ARGS": f"--vmodule={vmodule} --stderrthreshold=0 --logtostderr"} if vmodule else {}

    def collect_dumps(self, workdir: str) -> None:
        import shutil

        dirs = os.environ.get(LLO_DIRS_ENV)
        if not dirs:
            return
        for kind, directory in zip(("llo", "static-profile"), dirs.split(os.pathsep)[:2]):
            target = os.path.join(workdir, kind)
            os.makedirs(target, exist_ok=True)
            for name in os.listdir(directory):
                shutil.move(os.path.join(directory, name), os.path.join(target, name))

    def crash_hint(self, dumps: tuple[str, ...] = ()) -> str | None:
        if "tpu-llo" in dumps:
            # Seen on libtpu 0.0.42.1 (a v5e VM) and 0.0.50.1: an MLP step, a transformer block, a
            # gather/scatter step die writing --xla_jf_dump_static_llo_profile_to's file.
            return ("libtpu dies writing its LLO bundles or static profile for some programs; the other "
                    "TPU stages (hlo, memory, cost) compile without them")
        # jax on a TPU VM puts a flag of its own there (--xla_tpu_use_enhanced_launch_barrier)
        user = [f for f in os.environ.get("LIBTPU_INIT_ARGS", "").split()
                if not f.startswith("--xla_tpu_use_enhanced_launch_barrier")]
        if user:
            return "libtpu ends its process on a flag it does not know: check LIBTPU_INIT_ARGS"
        # Seen with libtpu 0.0.50.1: SIGILL for cross-partition collectives of an unsharded
        # module compiled for one device (XLA's hlo-opt docs' input.hlo).
        return ("libtpu ends its process on what it cannot compile, such as collectives over more devices "
                "than the compile has: --num-partitions N for a module that names its partitions")


# Where the TPU process started for libtpu's own dumps writes them (llo, static profile).
LLO_DIRS_ENV = "MLIRHLO_TPU_DUMP_DIRS"
_private: list[str] = []
os.register_at_fork(after_in_child=_private.clear)  # a forked worker's TPU process writes apart


def _private_dirs() -> tuple[str, str, str]:
    """Directories of this process's (removed at exit) for its TPU processes: libtpu's LLO
    dumps, its static profiles, and its TMPDIR (glog files)."""
    if not _private:
        import atexit
        import tempfile

        base = tempfile.mkdtemp(prefix="mlirhlo-tpu-")
        atexit.register(_remove_private, base)
        for kind in ("llo", "profile", "tmp"):
            os.mkdir(os.path.join(base, kind))
            _private.append(os.path.join(base, kind))
    return _private[0], _private[1], _private[2]


def _remove_private(base: str) -> None:
    """At exit: the TPU processes ended first (libtpu writes glog files into their TMPDIR until
    then: a file made while the tree was being removed left it behind), then the directories."""
    import shutil

    from .._native import isolate

    isolate.shutdown()
    shutil.rmtree(base, ignore_errors=True)



PLATFORMS: dict[str, type[Target]] = {cls.platform: cls for cls in (CpuTarget, CudaTarget, TpuTarget)}


def run_target(platform: str, xla_flags: tuple[tuple[str, Any], ...] = ()) -> Target:
    """The target of a run on ``platform``'s devices here (a CUDA run needs a GPU, no spec)."""
    if platform == "cuda":
        return CudaTarget(spec=None, xla_flags=tuple(xla_flags))
    if platform == "tpu":
        from ..errors import NoGpu
        from ..tpu import chips

        found = chips.attached()
        if found is None:
            raise NoGpu(f"{param('platform', 'tpu')} runs on a TPU chip; no TPU is attached here (none on the PCI bus)",
                        hint="compile device-less: mlirhlo opt --platform tpu --tpu-topology NAME, or hlo-opt "
                             "--platform=TPU")
        return TpuTarget(topology=found.topology(), attached=True, xla_flags=tuple(xla_flags))
    if platform not in PLATFORMS:
        from ..errors import InputError

        *first, last = PLATFORMS
        raise InputError(f"unknown platform '{platform}'", hint=f"{', '.join(first)} or {last}")
    return PLATFORMS[platform](xla_flags=tuple(xla_flags))


@dataclass(frozen=True)
class Targets:
    """A command's compile targets: one per GPU spec (``--gpu-spec a,b``), one for CPU, none
    where the command compiles nothing (``platform`` None); the flags they share, and what
    the user should be told (:meth:`say_notes`)."""

    platform: str | None
    targets: tuple[Target, ...] = ()
    xla_flags: tuple[tuple[str, Any], ...] = ()
    notes: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[Target]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    @property
    def specs(self) -> list[Any]:
        """The GPU spec of each target (CUDA)."""
        return [t.spec for t in self.targets if t.spec is not None]

    def say_notes(self, say: Callable[[str], None] = log_note) -> None:
        """Give each note to ``say`` (default: the logger; a command line: stderr). A note
        comes after every usage check, never right before an error line."""
        for line in self.notes:
            say(line)

    def stage_options(self, **kw: Any) -> list[tuple[str | None, StageOptions]]:
        """(spec name or None, StageOptions) per compile: one per target, or one for the
        MLIR-level stages when the command compiles nothing (``kw``: the stage options)."""
        if not self.targets:
            return [(None, StageOptions(**kw))]
        return [(t.spec.name if t.spec is not None else t.topology.name if t.topology is not None else None,
                 t.options(**kw)) for t in self.targets]

    def one(self) -> Target:
        """The one target; DriverError for several specs or none."""
        if self.platform is None or not self.targets:
            raise DriverError("the target has no platform: XLA stages need cpu, cuda or tpu")
        if len(self.targets) > 1:
            what = "TPU topologies" if self.platform == "tpu" else "GPU specs"
            raise DriverError(f"the target names {len(self.targets)} {what}: compile one at a time",
                              hint="Target.tpu(name) per topology" if self.platform == "tpu"
                              else "Target.cuda(name) per spec")
        return self.targets[0]

    def options(self, **kw: Any) -> StageOptions:
        """The StageOptions of the one target's compile (:meth:`one`)."""
        return self.one().options(**kw)

    def options_for(self, platform: str) -> StageOptions:
        """The StageOptions of a compile for ``platform`` (:meth:`for_platform`)."""
        return self.for_platform(platform).options()

    def for_platform(self, platform: str) -> Target:
        """A target to compile for ``platform`` (this one's, or another pipeline a tool
        tries): the first requested spec for CUDA, else the default one, quietly."""
        for t in self.targets:
            if t.platform == platform:
                return t
        if platform == "cuda":
            from ..cuda import specs as gpu_specs

            return CudaTarget(spec=gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC), xla_flags=self.xla_flags)
        if platform == "tpu":
            from ..tpu import topologies

            return TpuTarget(topology=topologies.parse(topologies.DEFAULT), xla_flags=self.xla_flags,
                             topology_default=True)
        return PLATFORMS[platform](xla_flags=self.xla_flags)


def platform_name(name: str, flag: str = "platform") -> str:
    """``cpu`` or ``cuda`` from any of XLA's spellings; XLA's interpreter is refused."""
    from .cli_flags import platform

    got = platform(name, flag)
    if got == "interpreter":
        raise DriverError(f"--{flag}={name}: jaxlib has no XLA interpreter backend",
                          hint="use CPU or CUDA; run_hlo_module's reference is the StableHLO interpreter")
    return got


def debug_options(cli_flags: dict[str, Any] | None = None, debug_options_file: str | None = None) -> dict[str, Any]:
    """DebugOptions of a compile or run: ``debug_options_file`` < ``XLA_FLAGS`` < ``cli_flags``,
    each name checked against this jaxlib's XLA (FlagError with a close match)."""
    from . import flags as xla_flags

    file_flags = xla_flags.from_file_checked(debug_options_file) if debug_options_file else {}
    flags = xla_flags.merge(file_flags, xla_flags.from_environment(), dict(cli_flags or {}))
    if flags:
        xla_flags.check_names(flags, xla_flags.known_names())
    return flags


def resolve(platform: str | None, *, gpu_spec: str | None = None, cli_flags: dict[str, Any] | None = None,
            debug_options_file: str | None = None, autotune_results: str | None = None,
            needs_spec: bool = True, xla_tool: bool = False, spec_flag: str = "--gpu-spec",
            tpu_topology: str | None = None, topology_flag: str = "--tpu-topology") -> Targets:
    """The targets of a command.

    ``gpu_spec`` is a comma list of spec names or files (gpu_specs.resolve_spec);
    ``--xla_gpu_target_config_filename`` names one too. ``needs_spec``: the command
    compiles, so a CUDA target gets the default spec (with a note) if none is named;
    listings need none. ``tpu_topology``: a comma list of TPU topologies (tpu.topologies),
    which names a TPU target; the default one (with a note) where a TPU command compiles
    without. ``xla_tool``: XLA's tools' conventions, where a command may compile without
    ``--platform`` (hlo-opt ``--passes`` picks a pipeline): ``XLA_FLAGS`` is always read,
    and flags need no platform. ``spec_flag`` names the spec option in the default-spec note.
    """
    from . import flags as xla_flags

    flags_given = dict(cli_flags or {})
    notes: list[str] = []
    config_file = flags_given.pop(TARGET_CONFIG_FLAG, None)
    spec_from_flag = config_file is not None
    if config_file is not None:
        if gpu_spec is not None:
            raise DriverError("give --gpu-spec or --xla_gpu_target_config_filename, not both")
        gpu_spec = str(config_file)
    if platform is not None:
        platform = platform_name(platform)
    elif config_file is not None or gpu_spec is not None:
        platform = "cuda"  # a GPU spec names a CUDA target, as XLA's config file does
    elif tpu_topology is not None:
        platform = "tpu"
    if tpu_topology is not None and platform != "tpu":
        raise DriverError(f"{param('tpu_topology')} is for {param('platform', 'tpu')}")
    if platform == "tpu" and (gpu_spec is not None or config_file is not None):
        raise DriverError(f"{param('gpu_spec')} is for {param('platform', 'cuda')}; a TPU target takes "
                          f"{param('tpu_topology')}")
    if autotune_results is not None:
        flags_given[AUTOTUNE_FLAG] = autotune_results
    file_flags = xla_flags.from_file_checked(debug_options_file, platform) if debug_options_file else {}
    # XLA_FLAGS may be set for other tools: it matters only when XLA compiles.
    env_flags = xla_flags.from_environment() if platform is not None or xla_tool else {}
    flags = xla_flags.merge(file_flags, env_flags, flags_given)
    if TARGET_CONFIG_FLAG in flags:  # from the file or XLA_FLAGS: the spec, as on the command line
        named = str(flags.pop(TARGET_CONFIG_FLAG))
        if gpu_spec is None:
            gpu_spec, platform, spec_from_flag = named, platform or "cuda", True
    topology = None
    if TOPOLOGY_FLAG in flags:  # read here: jaxlib's compile does not read it (cuda/topology.py)
        from ..cuda import topology as gpu_topology

        if platform not in (None, "cuda"):
            raise DriverError(f"--{TOPOLOGY_FLAG} is for --platform=CUDA")
        # kept among the flags: XLA's dumped debug_options name it as given
        topology = gpu_topology.resolve(str(flags[TOPOLOGY_FLAG]))
        if TOPOLOGY_FLAG not in xla_flags.known_names():  # jaxlib 0.9's DebugOptions lack it: ours alone
            flags.pop(TOPOLOGY_FLAG)
        platform = "cuda"
    if flags:
        xla_flags.check_names(flags, xla_flags.known_names(), platform)
    if platform == "tpu" and env_flags:
        # libtpu's options in XLA_FLAGS: read, and kept from XLA's parse in this process
        xla_flags.shield_or_refuse({n for n in env_flags if n not in xla_flags.debug_option_types()})
    if platform is None and not xla_tool:
        if flags:
            raise DriverError(f"XLA flags need {param('platform', 'cpu|cuda|tpu')}")
    if platform == "cpu" and gpu_spec is not None:
        raise DriverError(f"{param('gpu_spec')} is for {param('platform', 'cuda')}" if not spec_from_flag
                          else "--xla_gpu_target_config_filename is for --platform=CUDA")
    path = flags.get(AUTOTUNE_FLAG)
    if path is not None:
        if platform in ("cpu", "tpu") and not xla_tool:
            raise DriverError(f"autotune results are for {param('platform', 'cuda')}")
        flags[AUTOTUNE_FLAG] = autotune_file(str(path))
    frozen = tuple(sorted(flags.items()))
    specs: list[Any] = []
    if platform == "cuda" and (needs_spec or gpu_spec is not None):  # a listing's spec is still checked
        from ..cuda import specs as gpu_specs

        if gpu_spec is None and topology is not None and topology.spec is not None:
            spec = topology.spec
            notes.append(f"compiling for the GPU of --{TOPOLOGY_FLAG}={topology.source} ({spec.gpu}, {spec.sm})")
            notes += list(spec.notes)
            specs = [spec]
        elif gpu_spec is None:
            spec = gpu_specs.resolve_spec(gpu_specs.DEFAULT_SPEC)
            notes.append(f"no {spec_flag} given: compiling for {spec.name} ({spec.gpu}, {spec.sm})")
            specs = [spec]
        else:
            specs = [gpu_specs.resolve_spec(s.strip()) for s in gpu_spec.split(",") if s.strip()]
        # Fields filled in or left out of a spec: said with the other notes, after validation.
        notes += [n for s in specs for n in s.notes if n not in notes]
    if platform == "tpu":
        from ..tpu import topologies

        named = tpu_topology is not None
        if tpu_topology is None:
            tpu_topology = topologies.DEFAULT
            if needs_spec:
                default = topologies.parse(tpu_topology)
                notes.append(f"no {topology_flag} given: compiling for {default.name} (TPU {default.generation}, "
                             f"{'x'.join(map(str, default.shape))} chips)")
        # XLA's tools spell it --tpu_topology (a "--" name is shown as it is: errors.spell).
        flag = topology_flag if xla_tool else "tpu_topology"
        found: tuple[Target, ...] = tuple(TpuTarget(topology=t, xla_flags=frozen, topology_default=not named)
                                          for t in topologies.parse_list(tpu_topology, flag))
    elif platform == "cuda":
        found = tuple(CudaTarget(spec=s, xla_flags=frozen, gpu_topology=topology) for s in specs)
    elif platform is not None:
        found = (PLATFORMS[platform](xla_flags=frozen),)
    else:
        found = ()
    return Targets(platform, found, frozen, tuple(n.removeprefix("note: ") for n in notes))


def autotune_file(path: str) -> str:
    """An autotune results file XLA reads by its content, whatever its extension.

    XLA picks text or binary from the extension (.txt/.textproto/.prototxt/.pbtxt
    are text); ``results.textpb`` from XLA's own documentation would be read
    as binary. A copy with the extension matching the content is passed on, kept in the
    cache folder under a name made from its content (so a target holds no file of its own).
    """
    import zlib

    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise FlagError("no such autotune results file", file=path) from None
    except IsADirectoryError:
        raise FlagError("no such autotune results file", file=path) from None
    except OSError as e:
        raise FlagError(e.strerror or str(e), file=path) from None
    try:
        text = data.decode()
        is_text = not any(ch in text for ch in "\x00\x01\x02\x03\x04\x05\x06\x07")
    except UnicodeDecodeError:
        is_text = False
    suffix = ".pbtxt" if is_text else ".pb"
    if path.endswith((".txt", ".textproto", ".prototxt", ".pbtxt") if is_text else (".pb",)):
        return path
    from .. import outputs, resources

    copy = resources.cache_dir("autotune") / f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{suffix}"
    if not copy.is_file() or copy.read_bytes() != data:
        copy.parent.mkdir(parents=True, exist_ok=True)
        outputs.write_atomic(str(copy), data)
    return str(copy)
