"""What XLA's runners (run_hlo_module, multihost_hlo_runner) read and write besides a module:
HloSnapshots and their recorded arguments, literal files, ExecutionOptions, the partitions a
module's header or shardings name, output literals, and their preprocessing of the HLO
(infeed/outfeed, while loops). commands/xla_tools.py parses the tools' flags and calls these.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import DriverError, FlagError, log_note
from ..timing import ms_since


def snapshot_module(path: str, keep: list[Any], say: Callable[[str], None] = log_note) -> tuple[str, str] | None:
    """An HloSnapshot file (XLA's ``*.snapshot.*.pb`` dumps) as (module file, arguments .npz):
    the module the loader reads for it (inputs.loader.snapshot_module: the dump's module
    before optimizations where it is beside the snapshot), on the recorded arguments.
    None for files that are no snapshot."""
    import tempfile

    import numpy as np

    from ..inputs import loader
    from ..ir import literals, protos

    p = Path(path)
    if not p.is_file() or p.suffix != ".pb":
        return None
    data = p.read_bytes()
    try:
        loader.detect_format(data, path)
        return None
    except DriverError:
        pass
    found = loader.snapshot_module(data, path)
    if found is None:
        return None
    snap = protos.message_class("xla.HloSnapshot").FromString(data)
    arrays = [literals.to_array(a, f"{path}: argument {i}") for i, a in enumerate(snap.arguments)]
    d = tempfile.TemporaryDirectory(prefix="mlirhlo-snapshot-")
    keep.append(d)
    source, _, module_bytes = found
    if source != path:
        say(f"{path}: running {Path(source).name} on the recorded arguments")
        module_file = Path(source)
    else:
        module_file = Path(d.name) / (p.name[: -len(".pb")] + ".pb")
        module_file.write_bytes(module_bytes)
    npz = Path(d.name) / "arguments.npz"
    np.savez(npz, *arrays)
    return str(module_file), str(npz)


def literal_arguments(path: str) -> list[list[Any]]:
    from ..ir import literals

    return literals.read_iteration_arguments(path)


def npz(arrays: list[Any], keep: list[Any]) -> str:
    """Arrays as the .npz ``run`` reads (arr_0, arr_1, ...: matched by position)."""
    import tempfile

    import numpy as np

    tmp = tempfile.NamedTemporaryFile(prefix="mlirhlo-literals-", suffix=".npz")
    np.savez(tmp, *arrays)
    tmp.flush()
    keep.append(tmp)
    return tmp.name




def header_counts(path: str) -> tuple[int | None, int | None]:
    """(replica_count, num_partitions) from an HLO text module's header line."""
    from ..inputs.loader import hlo_header_counts

    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16).decode(errors="replace")
    except OSError:
        return None, None
    return hlo_header_counts(head)


def proto_partitions(path: str) -> int | None:
    """For a binary HLO module (its header holds no counts): the devices its shardings name."""
    from ..ir import hlo_proto, shardings

    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if not hlo_proto.looks_like_hlo_proto(data):
        return None
    try:
        return shardings.devices_named(hlo_proto.module_proto_from_any(data))
    except DriverError:
        return None




def compile_only(loaded: Any, options: Any) -> str:
    """``--run=false``: partition and compile, report, run nothing."""
    import time

    from .._native import jaxlib as _jaxlib
    from . import spmd

    plan = spmd.prepare(loaded, options)
    start = time.perf_counter()
    spmd.compile_plan(plan, options, _jaxlib.local_device_order(options.num_devices)[: options.num_devices])
    return (f"{loaded.name}: COMPILED ({options.num_replicas} replica x {options.num_partitions} partitions, "
            f"{ms_since(start):.1f} ms); not run (--run=false)")


def execution_options(path: str) -> Any:
    """``--execution_options_path``: an xla.ExecutionOptions, text or binary as XLA's
    ReadTextOrBinaryProto reads it."""
    from ..ir import protos

    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise FlagError(e.strerror or str(e), file=path) from None
    protos.message_class("xla.ExecutionOptions")  # this jaxlib has the schema, or a clear error first
    try:
        text = data.decode()
        if not any(ch in text for ch in "\x00\x01\x02\x03\x04\x05\x06\x07"):
            return protos.parse_text(text, "xla.ExecutionOptions", file=path)
    except UnicodeDecodeError:
        pass
    return protos.decode(data, "xla.ExecutionOptions", file=path)


def execution_debug_flags(eo: Any, path: str) -> dict[str, Any]:
    """The DebugOptions fields an ExecutionOptions sets, as per-compile flags
    (XLA drops its xla_dump_to)."""
    from ..ir.protos import is_repeated

    out: dict[str, Any] = {}
    for fd, value in eo.debug_options.ListFields():
        if fd.name == "xla_dump_to":
            continue
        if fd.type == fd.TYPE_ENUM and not is_repeated(fd):
            value = fd.enum_type.values_by_number[value].name
        elif is_repeated(fd) or fd.type == fd.TYPE_MESSAGE:
            raise FlagError(f"debug_options.{fd.name}: list and message fields cannot be passed to a "
                            "jaxlib compile (per-compile options take scalars)", file=path)
        out[fd.name] = value
    return out


def device_ids(eo: Any, replicas: int, partitions: int, path: str) -> tuple[int, ...]:
    """Logical device (replica * partitions + partition) -> device id, from the
    ExecutionOptions' DeviceAssignmentProto (computation = partition)."""
    da = eo.device_assignment
    if not eo.HasField("device_assignment"):
        return ()
    if (da.replica_count, da.computation_count) != (replicas, partitions) or \
            len(da.computation_devices) != partitions or \
            any(len(c.replica_device_ids) != replicas for c in da.computation_devices):
        raise DriverError(f"device_assignment is {da.replica_count} replicas x {da.computation_count} "
                          f"computations; the run has {replicas} x {partitions}", file=path)
    ids = tuple(da.computation_devices[p].replica_device_ids[r] for r in range(replicas) for p in range(partitions))
    if len(set(ids)) != len(ids):
        raise DriverError("device_assignment names a device twice", file=path)
    return ids


def dump_output_literals(report: Any, path: str, task_id: int) -> list[str]:
    """``--dump_output_literal_to``: XLA's FunctionalHloRunner::DumpOutput naming
    (the path split at '.', ``task_N``, ``device_D``, ``literal_L`` inserted
    before the last part, which must be ``txt``), each file one literal's text."""
    from .. import outputs
    from ..ir import literals

    words = path.split(".")
    suffix, stem = words[-1], words[:-1]
    written = []
    for device, arrays in sorted(report.device_outputs.items()):
        for i, a in enumerate(arrays):
            name = ".".join(stem + [f"task_{task_id}", f"device_{device}", f"literal_{i}", suffix])
            outputs.write_atomic(name, literals.literal_text(a) + "\n")
            written.append(name)
    return written


def preprocess(loaded: Any, remove: bool, while_count: int, path: str,
               say: Callable[[str], None] = log_note) -> bytes | None:
    """XLA's runner preprocessing on the HLO: infeed/outfeed replaced (its default) or refused,
    while loops flattened to ``while_count`` iterations. The HloModuleProto to run instead,
    or None when nothing changed; what changed goes to ``say``."""
    from ..ir import decompose as hlo_decompose
    from ..ir import emit

    if loaded.hlo_proto is None and while_count <= 0 and not any(
            w in emit.stablehlo_text(loaded.module) for w in ("stablehlo.infeed", "stablehlo.outfeed")):
        return None
    proto = loaded.hlo_proto or emit.hlo_proto(loaded.module)
    changed = False
    if hlo_decompose.has_infeed_outfeed(proto):
        if not remove:
            raise DriverError("the module has infeed/outfeed, which nothing feeds in this process",
                              file=path, hint="--remove_infeed_outfeed=true (XLA's default) replaces them")
        proto, count = hlo_decompose.remove_infeed_outfeed(proto)
        say(f"{path}: {count} infeed/outfeed replaced (infeed gives zeros)")
        changed = True
    if while_count > 0:
        try:
            proto, count = hlo_decompose.flatten_while_loops(proto, while_count)
        except DriverError as e:
            e.file = path
            raise
        if count:
            say(f"{path}: {count} while loop{'s' if count > 1 else ''} set to run "
                f"{while_count} iteration{'s' if while_count > 1 else ''}")
            changed = True
    return proto if changed else None


def literals_file(runs: list[Any], path: str) -> str:
    """``--output_literals_file``: each run's arguments, outputs and reference outputs as XLA's
    RunHloModuleLiterals text (ir.literals.literals_file)."""
    from ..ir import literals

    return literals.literals_file(runs, path)
