"""Replaying what JAX wrote for a TPU: a module of an XLA dump recompiled with the options it had.

JAX's compile of a module under ``--xla_dump_to=D --xla_dump_hlo_as_proto`` (on a chip, or
device-less with ``jax.experimental.topologies``) writes, beside the module's
``module_NNNN.<name>[.cl_NNN].before_optimizations.txt`` (with ``--xla_dump_hlo_as_text``) or
``.before_optimizations.hlo.pb``, a folder of the same stem holding what the compile was given
(PjRt's compile inputs; libtpu 0.0.50.1, jax 0.12.0.1)::

    module_0000.jit_step.cl_1004524046/compile_options.pb   xla.CompileOptionsProto
    module_0000.jit_step.cl_1004524046/topology.pb          xla.PjRtTopologyDescriptionProto
    module_0000.jit_step.cl_1004524046/module.mlir          the StableHLO JAX compiled

:func:`dump_options` reads the first two into a :class:`DumpOptions` value: the replicas,
partitions and device assignment, the SPMD build options that show in the optimized module's
header, the DebugOptions that differ from this XLA's defaults with the per-compile overrides
(``env_option_overrides``: what ``.compile(compiler_options)`` was given, libtpu's options
too), and the slice (libtpu's spelling). :func:`replay` turns a compile's StageOptions into
that compile's (every door reaches it through core.compiled.Compiled): the dump's options are
values of the target and of ``StageOptions.dumped``, which ``xla.backend.stage_spec`` makes
the CompileSpec of; no other compile path. A dump whose options cannot be honoured is an
InputError naming the file.

Not carried: libtpu's process-wide options of the dumping process (``LIBTPU_INIT_ARGS``), which
live in ``comp_envs`` (a TpuCompilationEnvironment, whose schema jaxlib does not hold).
Nothing here loads libtpu.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError

COMPILE_OPTIONS = "compile_options.pb"
TOPOLOGY = "topology.pb"
# A dump file of a module: its stem is the folder of that module's compile inputs.
_DUMP_FILE = re.compile(r"^(module_\d+\..+?)\.(?:before_optimizations|after_optimizations)\b.*$")
# DebugOptions a replay leaves out: where the dumping process wrote its dump, and other
# platforms' options (jax sets xla_gpu_cuda_data_dir on every platform).
_NOT_REPLAYED = re.compile(r"^xla_(?:dump_|enable_dumping$|gpu_|cpu_)")
# PjRtTopologyDescriptionProto.platform_version ("TFRT TPU v5 lite\nBuilt on ...") -> generation
_GENERATION = {("v2", ""): "v2", ("v3", ""): "v3", ("v4", ""): "v4", ("v5", " lite"): "v5e", ("v5", ""): "v5p",
               ("v6", " lite"): "v6e", ("7x", ""): "tpu7x"}
_SLICE_STRIDE = 100000  # jax numbers a multislice topology's devices from 100000 per slice


@dataclass(frozen=True)
class DumpOptions:
    """What one dumped compile was given, as values (what a compile or a run on a chip needs).

    ``source``: the compile_options.pb read; ``device_ids``: the device assignment in logical
    order (replica-major); ``partitioner``: ``shardy``, ``gspmd`` or None (no SPMD
    partitioning); ``build_options``: ExecutableBuildOptions fields by name (the sharding
    propagation flags, which show in the optimized module's header); ``xla_flags``: the
    DebugOptions and per-compile options that differ from this XLA's defaults, by name;
    ``topology``: the slice in libtpu's spelling (``v5e:2x2``), None where the dump has no
    topology.pb; ``topology_source``: where it was read."""

    source: str
    num_replicas: int = 1
    num_partitions: int = 1
    device_ids: tuple[int, ...] = ()
    partitioner: str | None = None
    build_options: tuple[tuple[str, Any], ...] = ()
    xla_flags: tuple[tuple[str, Any], ...] = ()
    topology: str | None = None
    topology_source: str | None = None

    @property
    def num_devices(self) -> int:
        return self.num_replicas * self.num_partitions


def dump_folder(source: str | None) -> str | None:
    """The folder of a dumped module's compile inputs (holding compile_options.pb) for
    ``source``: one of the module's dump files (``*.before_optimizations.txt``, ``.hlo.pb``,
    ``*.after_optimizations*``), that folder itself, or its ``module.mlir``; None otherwise."""
    if not source:
        return None
    if os.path.isdir(source):
        return source if os.path.isfile(os.path.join(source, COMPILE_OPTIONS)) else None
    here = os.path.dirname(source)
    if os.path.basename(source) == "module.mlir" and os.path.isfile(os.path.join(here, COMPILE_OPTIONS)):
        return here
    m = _DUMP_FILE.match(os.path.basename(source))
    if m:
        folder = os.path.join(here, m.group(1))
        if os.path.isfile(os.path.join(folder, COMPILE_OPTIONS)):
            return folder
    return None


def dump_options(source: str | None) -> DumpOptions | None:
    """The options a dumped module was compiled with (:class:`DumpOptions`), for one of its dump
    files or its folder (:func:`dump_folder`); None where the dump holds none (written without
    ``--xla_dump_hlo_as_proto``, or not a dump). InputError, naming the file, for options that
    cannot be read."""
    folder = dump_folder(source)
    if folder is None:
        return None
    path = os.path.join(folder, COMPILE_OPTIONS)
    try:
        stat = os.stat(path)
    except OSError as e:
        raise InputError(e.strerror or str(e), file=path) from None
    return _read(path, stat.st_mtime_ns, stat.st_size)


def program_options(program: Any) -> DumpOptions | None:
    """:func:`dump_options` of a loaded program (core.program.Program, or anything with a
    ``source`` path): what a run on a chip compiles it with (``num_partitions``,
    ``num_replicas``, ``device_ids``, ``xla_flags``: a ``CompileSpec``'s fields, the flags over
    the target's), or None for a module that is not from such a dump."""
    return dump_options(getattr(program, "source", None))


_cache: dict[tuple[str, int, int], DumpOptions] = {}


def _read(path: str, mtime: int, size: int) -> DumpOptions:
    key = (path, mtime, size)
    if key not in _cache:
        _cache[key] = _parse(path)
    return _cache[key]


def _parse(path: str) -> DumpOptions:
    from ..ir import protos

    cls = protos.message_class("xla.CompileOptionsProto")
    try:
        with open(path, "rb") as f:
            data = f.read()
        proto = cls()
        proto.ParseFromString(data)
    except OSError as e:
        raise InputError(e.strerror or str(e), file=path) from None
    except Exception as e:  # protobuf's DecodeError
        raise InputError(f"not an xla.CompileOptionsProto: {e}", file=path) from None
    build = proto.executable_build_options
    replicas, partitions = max(1, build.num_replicas), max(1, build.num_partitions)
    ids: tuple[int, ...] = ()
    if build.HasField("device_assignment"):
        da = build.device_assignment
        if da.replica_count * da.computation_count != replicas * partitions or \
                len(da.computation_devices) != da.computation_count:
            raise InputError(f"the device assignment ({da.replica_count} replicas x {da.computation_count} "
                             f"partitions) does not match num_replicas={replicas}, num_partitions={partitions}",
                             file=path)
        # computation_devices[p].replica_device_ids[r]: logical order is replica-major
        ids = tuple(int(da.computation_devices[p].replica_device_ids[r])
                    for r in range(da.replica_count) for p in range(da.computation_count))
    partitioner = None
    if build.use_spmd_partitioning:
        partitioner = "shardy" if build.use_shardy_partitioner else "gspmd"
    build_options: list[tuple[str, Any]] = []
    for name in ("allow_spmd_sharding_propagation_to_output", "allow_spmd_sharding_propagation_to_parameters"):
        values = tuple(bool(v) for v in getattr(build, name))
        if values:
            build_options.append((name, values))
    flags = _changed_debug_options(build.debug_options, protos)
    for name, value in proto.env_option_overrides.items():
        if not _NOT_REPLAYED.match(name):
            flags[name] = _override_value(value)
    topology, topology_source = _topology(os.path.join(os.path.dirname(path), TOPOLOGY), ids)
    return DumpOptions(path, replicas, partitions, ids, partitioner, tuple(build_options),
                       tuple(sorted(flags.items())), topology, topology_source)


def _changed_debug_options(dumped: Any, protos: Any) -> dict[str, Any]:
    """The dumped DebugOptions' fields that differ from this XLA's defaults (a new
    CompileOptions' own), by name, as the driver's flags spell them."""
    from .._native import jaxlib as _jaxlib

    cls = protos.message_class("xla.CompileOptionsProto")
    fresh = _jaxlib._xla_client().CompileOptions()
    _ = fresh.executable_build_options.debug_options  # filled in with XLA's defaults
    defaults = cls()
    defaults.ParseFromString(fresh.SerializeAsString())
    base = {f.name: v for f, v in defaults.executable_build_options.debug_options.ListFields()}
    out: dict[str, Any] = {}
    for f, value in dumped.ListFields():
        if _NOT_REPLAYED.match(f.name) or base.get(f.name) == value:
            continue
        out[f.name] = _field_value(f, value)
    # A field the dump leaves at proto3's zero where this XLA's default is not zero.
    for f, _ in defaults.executable_build_options.debug_options.ListFields():
        if f.name not in out and not _NOT_REPLAYED.match(f.name) and not _has(dumped, f):
            out[f.name] = _field_value(f, getattr(dumped, f.name))
    return out


def _has(message: Any, f: Any) -> bool:
    value = getattr(message, f.name)
    if getattr(f, "is_repeated", False) or getattr(f, "label", 1) == 3:
        return len(value) > 0
    return value != f.default_value or (f.has_presence and message.HasField(f.name))


def _field_value(f: Any, value: Any) -> Any:
    """A DebugOptions field's value as a flag: an enum by its name, a repeated field as XLA's
    comma list."""
    repeated = getattr(f, "is_repeated", False) or getattr(f, "label", 1) == 3
    if f.type == 14:  # enum
        names = [f.enum_type.values_by_number[v].name if v in f.enum_type.values_by_number else str(v)
                 for v in (value if repeated else [value])]
        return ",".join(names) if repeated else names[0]
    if repeated:
        return ",".join(str(v) for v in value)
    return value


def _override_value(value: Any) -> Any:
    """An OptionOverrideProto's value (bool, int, float or string)."""
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else ""


def _topology(path: str, device_ids: tuple[int, ...]) -> tuple[str | None, str | None]:
    """The slice a dump's topology.pb describes, in libtpu's spelling, and its path; (None,
    None) without the file."""
    if not os.path.isfile(path):
        return None, None
    from ..ir import protos

    try:
        with open(path, "rb") as f:
            data = f.read()
        proto = protos.message_class("xla.PjRtTopologyDescriptionProto")()
        proto.ParseFromString(data)
    except Exception as e:
        raise InputError(f"not an xla.PjRtTopologyDescriptionProto: {e}", file=path) from None
    if proto.platform_name != "tpu":
        raise InputError(f"a topology of platform '{proto.platform_name}', not a TPU's", file=path)
    m = re.search(r"TPU (v\d+|7x)( lite)?", proto.platform_version)
    generation = _GENERATION.get((m.group(1), m.group(2) or "")) if m else None
    if generation is None:
        raise InputError(f"unknown TPU generation '{proto.platform_version.splitlines()[0]}'", file=path)
    # TpuPjRtTopologyDescriptionProto (libtpu's, not in jaxlib's schema): field 1 holds the
    # chips per host (field 5) and the host bounds (field 6), each {1: x, 2: y, 3: z}; the
    # slice is their product per axis (measured on v4, v5e, v5p, v6e shapes, libtpu 0.0.50.1).
    bounds = _tpu_bounds(proto.platform_specific_topology.value)
    if bounds is None:
        raise InputError("cannot read the TPU slice's shape from libtpu's topology description", file=path)
    from . import topologies

    rank = topologies.GENERATIONS[generation]
    shape = bounds[:rank] if all(d == 1 for d in bounds[rank:]) else bounds
    slices = max(device_ids) // _SLICE_STRIDE + 1 if device_ids else 1
    name = f"{slices}x" * (slices > 1) + f"{generation}:{'x'.join(map(str, shape))}"
    try:
        topologies.parse(name)
    except Exception as e:
        raise InputError(f"topology {name}: {getattr(e, 'message', e)}", file=path) from None
    return name, path


def _fields(data: bytes) -> dict[int, Any]:
    """A message's fields by number, read by protobuf without its schema (the first of each
    number): varints as ints, length-delimited ones as bytes."""
    from google.protobuf import empty_pb2, unknown_fields

    message = empty_pb2.Empty()
    message.ParseFromString(data)
    found: dict[int, Any] = {}
    for field in unknown_fields.UnknownFieldSet(message):
        found.setdefault(field.field_number, field.data)
    return found


def _tpu_bounds(data: bytes) -> tuple[int, ...] | None:
    """The slice shape (x, y, z) in libtpu's TpuPjRtTopologyDescriptionProto bytes."""
    try:
        inner = _fields(_fields(data)[1])
        per_host, hosts = _fields(inner[5]), _fields(inner[6])
    except Exception:  # not that message (a missing field, protobuf's DecodeError)
        return None
    return tuple(per_host.get(i, 1) * hosts.get(i, 1) for i in (1, 2, 3))


def replay(options: Any, source: str | None) -> tuple[Any, list[str]]:
    """``options`` (stages.base.StageOptions of a TPU compile) for the dumped module ``source``:
    as it was compiled (:class:`DumpOptions` in ``options.dumped``; its flags under the target's
    own, which the user gave; its slice unless the user named one), and what to tell the user.
    ``options`` as they are, and no notes, for anything else."""
    target = options.target
    if target is None or target.platform != "tpu" or options.dumped is not None:
        return options, []
    found = dump_options(source)
    if found is None:
        return options, []
    from . import topologies

    notes: list[str] = []
    topology = target.topology
    if found.topology is not None and found.topology != target.topology.name:
        if getattr(target, "topology_default", False):
            topology = topologies.parse(found.topology)
        else:
            notes.append(f"{source}: compiling for {target.topology.name} as asked, not for the dump's "
                         f"{found.topology} ({found.topology_source})")
    if found.num_devices > topology.devices or any(i % _SLICE_STRIDE >= topology.devices // topology.slices
                                                   for i in found.device_ids):
        raise InputError(f"the dumped compile is for {found.num_devices} devices (ids "
                         f"{', '.join(map(str, found.device_ids))}); {topology.name} has {topology.devices}",
                         file=found.source, hint=f"--tpu-topology {found.topology}" if found.topology else None)
    user = dict(target.xla_flags)
    flags = {**dict(found.xla_flags), **user}
    overridden = sorted(n for n in user if n in dict(found.xla_flags) and user[n] != dict(found.xla_flags)[n])
    if overridden:
        notes.append(f"{source}: {', '.join('--' + n for n in overridden)} as given, over the dump's")
    if options.num_partitions is not None:
        notes.append(f"{source}: {options.num_partitions} partitions as asked, not the dump's device assignment "
                     f"({found.num_replicas} replicas x {found.num_partitions} partitions)")
        found = None
    new_target = replace(target, topology=topology).with_flags(flags)
    what = f"{found.num_replicas} replica{'s' * (found.num_replicas != 1)} x {found.num_partitions} " \
           f"partition{'s' * (found.num_partitions != 1)}, " if found is not None else ""
    changed = ", ".join(f"--{n}={_spell(v)}" for n, v in sorted(flags.items()) if n not in user)
    notes.insert(0, f"{source}: compiled with the dump's options ({what}{topology.name}"
                    + (f", {changed}" if changed else "") + ")")
    return replace(options, target=new_target, dumped=found), notes


def _spell(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
