"""The execution engine: inputs, runs on one device or sharded over many, and comparison.

Every door that executes a module goes through here: ``mlirhlo run`` and
``run_hlo_module`` (execute/run.py), ``spmd-run`` and ``multihost_hlo_runner``
(execute/spmd.py), self-checking test files (their ``check.*`` assertions;
inputs/checks.py prepares them), and the API's ``Program.run``/``run_spmd``. So
each makes inputs, runs and compares one way:

- **values**: :class:`TensorSpec` and :func:`signature`, what can be made, fed and
  compared (every dtype numpy or ml_dtypes holds, a byte wide or more);
- **inputs**: :func:`make_inputs` for an :class:`InputSpec`: seeded random (kept
  safe per op as XLA's fake-data generator keeps it: indices in bounds, log/sqrt
  operands positive), zeros, each device's id, or a .npz; one set per replica;
- **running**: :func:`compile_one` (one device) and :func:`compile_spmd`
  (replicas x partitions; the layouts of parameters and outputs come from the
  shardings XLA chose, read in Python: ir/shardings.py) give an
  :class:`Executable`; :func:`execute` runs it on :class:`Inputs` and
  :func:`gather` reassembles whole outputs. :func:`run_xla` is the one-device
  shorthand, :func:`run_reference` the StableHLO interpreter or XLA CPU;
- **comparison**: :func:`compare` (one output, tolerances per dtype, NaN- and
  Inf-aware), :func:`compare_outputs` (a run's outputs against its reference),
  :func:`evaluate_checks` (the ``check.*`` semantics of StableHLO's interpreter),
  and :func:`format_value`, which shows what printing hides: a NaN's sign and
  payload (``-nan(0xffc00000)``) and a zero's sign.

Promises: nothing here prints; module failures raise the package's typed errors
(DriverError subclasses) and callers turn them into reports. Everything runs in
the calling process except the interpreter (execute/interpreter.py's helper);
callers isolate what else can crash.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DriverError, InputError, param
from ..ir import dtypes
from ..timing import ms_since

ARGUMENT_MODES = ("random", "shared-random", "zeros", "device-id")
REFERENCES = ("interpreter", "cpu", "none")


# ====================================================================== values

# MLIR element type -> numpy dtype name, for what can be made, fed and compared:
# types numpy or ml_dtypes hold, a byte wide or more. Narrower ones (i4, f4E2M1FN,
# ...) are left out: nothing here packs, carries or compares them. "i1" is PRED
# (bool), as XLA reads it.
_NP_TYPES = {t.mlir: t.numpy for t in dtypes.ARRAY_TYPES if t.numpy is not None and t.bits >= 8}
# The interpreter's attributes cannot take the floats narrower than f32 (bf16, f16,
# f8): they travel as same-width integers.
_CARRIER = {t.numpy: f"int{t.bits}" for t in dtypes.ARRAY_TYPES
            if t.mlir in _NP_TYPES and t.kind == "float" and t.bits < 32}

np_dtype = dtypes.np_dtype  # numpy dtype name -> numpy.dtype


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    element: str     # MLIR element type text
    dtype: str       # numpy dtype name
    name: str = ""

    def mlir(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        return f"tensor<{dims + 'x' if dims else ''}{self.element}>"


def tensor_spec(mlir_type: Any, name: str = "") -> TensorSpec:
    from jaxlib.mlir import ir

    try:
        t = ir.RankedTensorType(mlir_type)
    except ValueError:  # tokens, tuples: nothing can be made or compared
        raise InputError(f"cannot run a module with a {mlir_type} parameter or result") from None
    if not t.has_static_shape:
        raise InputError(f"cannot run a module with dynamic shapes ({t}); "
                         "refine them first (--pipeline @refine-shapes)")
    element = str(t.element_type)
    if element not in _NP_TYPES:
        raise InputError(f"element type {element} is not supported by mlirhlo run")
    return TensorSpec(tuple(t.shape), element, _NP_TYPES[element], name)


def main_function(module: Any) -> Any:
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    raise InputError("module has no @main function")


def signature(module: Any) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """(parameters, results) of @main; a parameter is named by its name location."""
    from jaxlib.mlir import ir

    main = main_function(module)
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    args = main.regions[0].blocks[0].arguments
    names = []
    for i, a in enumerate(args):
        # A name location, loc("x"), names the parameter; loc("file":1:2) does not.
        m = re.match(r'loc\("([^"]+)"(?:\)|\()', str(a.location))
        names.append(m.group(1) if m else f"arg{i}")
    return ([tensor_spec(t, n) for t, n in zip(ftype.inputs, names)],
            [tensor_spec(t) for t in ftype.results])


def specs_text(specs: list[TensorSpec]) -> str:
    return ", ".join(f"{s.dtype}{list(s.shape)}" for s in specs) or "none"


# ====================================================================== inputs

@dataclass(frozen=True)
class InputSpec:
    """How to make a run's arguments: ``mode`` (one of ARGUMENT_MODES), ``seed``, or the
    arrays of ``npz``; ``large_float_range`` draws floats from [-1e4, 1e4]."""

    mode: str = "random"
    seed: int = 0
    npz: str | None = None
    large_float_range: bool = False


@dataclass
class Inputs:
    """Global arguments (what the unpartitioned program takes) per replica; None for
    device-id inputs, which each device makes itself."""

    per_replica: list[list[np.ndarray]] | None
    note: str

    @property
    def arrays(self) -> list[np.ndarray]:
        """The first replica's arguments (a one-device run's)."""
        if self.per_replica is None:
            raise DriverError("device-id inputs have no global arrays")
        return self.per_replica[0]


def make_inputs(params: list[TensorSpec], spec: InputSpec, *, module: Any = None,
                replicas: int = 1) -> Inputs:
    """Arguments for ``params``, one set per replica, and a note saying how they were made.

    Random inputs keep ``module``'s ops safe as XLA's fake-data generator does
    (:func:`input_constraints`; parameters whose shape differs from the module's
    are left unconstrained). Replica r draws from ``seed + r`` unless the mode is
    ``shared-random``.
    """
    if spec.npz:
        arrays = inputs_from_npz(spec.npz, params)
        return Inputs([arrays] * replicas, f"from {spec.npz}")
    if spec.mode == "zeros":
        return Inputs([[np.zeros(p.shape, np_dtype(p.dtype)) for p in params]] * replicas, "zeros")
    if spec.mode == "device-id":
        return Inputs(None, "device-id (each device's part filled with its device id)")
    constraints: dict[int, tuple[str, int]] = {}
    if module is not None:
        own, _ = signature(module)
        constraints = {i: c for i, c in input_constraints(module).items()
                       if i < len(params) and i < len(own) and own[i].shape == params[i].shape}
    shared = spec.mode == "shared-random" or replicas == 1
    seeds = [spec.seed] if shared else [spec.seed + r for r in range(replicas)]
    per_replica = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        per_replica.append([_random_array(rng, p, constraints.get(i), spec.large_float_range)
                            for i, p in enumerate(params)])
    if not shared:
        return Inputs(per_replica, f"random (seeds {spec.seed}..{spec.seed + replicas - 1}, one per replica)")
    note = f"random (seed {spec.seed})"
    kinds = sorted({c[0] for c in constraints.values()})
    if kinds:
        note += "; " + ", ".join(f"{sum(1 for c in constraints.values() if c[0] == k)} {k}-constrained"
                                 for k in kinds)
    if replicas > 1:
        note += "; the same for every replica"
    return Inputs(per_replica * replicas, note)


def input_constraints(module: Any) -> dict[int, tuple[str, int]]:
    """Per parameter: ("index", bound) or ("positive", 0), the way XLA's fake-data
    generator keeps indices in bounds and logs/roots away from NaN."""
    main = main_function(module)
    args = list(main.regions[0].blocks[0].arguments)
    out: dict[int, tuple[str, int]] = {}
    transparent = {"stablehlo.convert", "stablehlo.reshape", "stablehlo.broadcast_in_dim",
                   "stablehlo.transpose", "stablehlo.slice", "stablehlo.concatenate"}
    positive_ops = {"stablehlo.log", "stablehlo.sqrt", "stablehlo.rsqrt", "stablehlo.log_plus_one",
                    "stablehlo.power", "chlo.lgamma", "chlo.digamma"}

    def visit(value: Any, argno: int, depth: int = 0) -> None:
        if depth > 8:
            return
        for use in value.uses:
            owner = use.owner
            name = owner.name
            k = use.operand_number
            if name in transparent:
                for r in owner.results:
                    visit(r, argno, depth + 1)
            elif (bound := _index_bound(owner, name, k)) is not None:
                prev = out.get(argno)
                if prev is None or prev[0] != "index" or bound < prev[1]:
                    out[argno] = ("index", bound)
            elif name in positive_ops and (name != "stablehlo.power" or k == 0):
                out.setdefault(argno, ("positive", 0))

    for i, a in enumerate(args):
        visit(a, i)
    return out


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _attr_list(op: Any, key: str, within: str | None = None) -> list[int]:
    text = str(op.attributes[within if within else key]) if (within or key) in op.attributes else ""
    if within:
        m = re.search(key + r" = \[([^\]]*)\]", text)
        return _ints(m.group(1)) if m else []
    return _ints(text.split(":", 1)[-1]) if text else []


def _shape(value: Any) -> list[int]:
    from jaxlib.mlir import ir

    return list(ir.RankedTensorType(value.type).shape)


def _index_bound(op: Any, name: str, k: int) -> int | None:
    try:
        if name == "stablehlo.gather" and k == 1:
            operand = _shape(op.operands[0])
            sizes = _attr_list(op, "slice_sizes")
            dims = _attr_list(op, "start_index_map", "dimension_numbers")
            return max(0, min((operand[d] - sizes[d] for d in dims), default=0))
        if name == "stablehlo.scatter" and k == 1:
            n = (len(op.operands) - 1) // 2
            operand = _shape(op.operands[0])
            updates = _shape(op.operands[1 + n])
            dn = "scatter_dimension_numbers"
            inserted = set(_attr_list(op, "inserted_window_dims", dn))
            batching = set(_attr_list(op, "input_batching_dims", dn))
            window_dims = _attr_list(op, "update_window_dims", dn)
            to_operand = _attr_list(op, "scatter_dims_to_operand_dims", dn)
            window = {}
            it = iter(window_dims)
            for d in range(len(operand)):
                if d in inserted or d in batching:
                    window[d] = 1
                else:
                    w = next(it, None)
                    window[d] = updates[w] if w is not None else 1
            return max(0, min((operand[d] - window[d] for d in to_operand), default=0))
        if name == "stablehlo.dynamic_slice" and k >= 1:
            return max(0, _shape(op.operands[0])[k - 1] - _attr_list(op, "slice_sizes")[k - 1])
        if name == "stablehlo.dynamic_update_slice" and k >= 2:
            return max(0, _shape(op.operands[0])[k - 2] - _shape(op.operands[1])[k - 2])
    except (IndexError, KeyError, ValueError):
        return None
    return None


def _random_array(rng: np.random.Generator, p: TensorSpec, constraint: tuple[str, int] | None,
                  large: bool) -> np.ndarray:
    dt = np_dtype(p.dtype)
    shape = p.shape
    if constraint and constraint[0] == "index" and dt.kind in "iu":
        return rng.integers(0, constraint[1] + 1, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        lo, hi = (0, 16) if dt.kind == "u" else (-8, 9)
        return rng.integers(lo, hi, size=shape).astype(dt)
    positive = bool(constraint and constraint[0] == "positive")
    lo, hi = (1e-4 if positive else -1e4, 1e4) if large else ((0.1 if positive else -1.0), 1.0)
    if dt.kind == "c":
        real = rng.uniform(lo, hi, size=shape)
        imag = rng.uniform(lo, hi, size=shape)
        return (real + 1j * imag).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def inputs_from_npz(path: str, params: list[TensorSpec]) -> list[np.ndarray]:
    """One array per parameter, named after it (its name, ``argN``, or np.savez's ``arr_N``).

    As strict as XLA: every array must match a parameter, with its shape and
    dtype; nothing is converted. bf16/f8 arrays may come as same-width raw
    integers (or numpy's void), since .npz cannot name those types.
    """
    import zipfile

    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not an .npz file", file=path) from None
    except Exception as e:
        raise InputError(f"not a readable .npz file: {e}", file=path) from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise InputError("a single .npy array, not an .npz archive", file=path,
                         hint="np.savez(path, arg0=...) writes one array per parameter")
    keys = list(data.keys())
    used: set[str] = set()
    out = []
    for i, p in enumerate(params):
        names = [n for n in (p.name, f"arg{i}", f"arr_{i}") if n]
        key = next((n for n in names if n in data), None)
        if key is None:
            accepted = " or ".join(f"'{n}'" for n in dict.fromkeys(names))
            raise InputError(f"no array for parameter {i} ({p.name}); the file has: "
                             f"{', '.join(keys) or 'no arrays'}", file=path, hint=f"name it {accepted}")
        used.add(key)
        try:
            arr = np.asarray(data[key])
        except (ValueError, OSError, zipfile.BadZipFile) as e:
            raise InputError(f"array '{key}' cannot be read: {e}", file=path) from None
        want = np_dtype(p.dtype)
        if tuple(arr.shape) != p.shape:
            raise InputError(f"array '{key}' has shape {list(arr.shape)}, parameter {i} ({p.name}) needs "
                             f"{list(p.shape)}", file=path)
        if arr.dtype != want:
            raw_ok = dtypes.from_ml_dtypes(p.dtype)  # types .npz cannot name
            if raw_ok and arr.dtype.itemsize == want.itemsize and arr.dtype.kind in "iuV":
                arr = arr.view(want)  # bf16/f8 saved as raw integers
            else:
                raise InputError(f"array '{key}' is {arr.dtype}, parameter {i} ({p.name}) is {want}",
                                 file=path, hint="save it with that dtype; nothing is converted")
        out.append(arr)
    extra = [k for k in keys if k not in used]
    if extra:
        raise InputError(f"array{'s' if len(extra) > 1 else ''} {', '.join(repr(k) for k in extra)} "
                         f"match{'' if len(extra) > 1 else 'es'} no parameter of @main "
                         f"({', '.join(p.name for p in params)})", file=path)
    return out


# ===================================================================== layouts

@dataclass(frozen=True)
class Layout:
    """How one parameter or output lies over the partitions of a replica.

    ``tiled``: partition p holds the tile ``tiles[p]`` (its index in each data
    dimension) and, for a sharding with a manual subgroup, the value
    ``manual[p]`` of the ``manual_count`` independent ones, which the global
    array stacks first. ``stacked``: each partition holds a value of its own
    (per-device modules' unsharded outputs, ``{manual}``), gathered as
    [partition, ...].
    """

    kind: str                           # replicated, tiled, maximal, stacked
    global_shape: tuple[int, ...]
    shard_shape: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()   # tiled: per partition, its tile index in each dim
    device: int = 0                     # maximal: the partition holding the value
    text: str = "{replicated}"
    manual: tuple[int, ...] = ()        # tiled with a manual subgroup: per partition, its value's index
    manual_count: int = 1

    def unique(self, num_partitions: int) -> bool:
        """Whether every element lives on exactly one partition."""
        if self.kind == "stacked":
            return True
        if self.kind == "tiled":
            keys = self._keys()
            return len(set(keys)) == len(keys)
        return num_partitions == 1

    def _keys(self) -> list[tuple[int, tuple[int, ...]]]:
        return [(self.manual[p] if self.manual else 0, t) for p, t in enumerate(self.tiles)]

    @property
    def data_shape(self) -> tuple[int, ...]:
        """The global shape without the stacked manual values' axis."""
        return self.global_shape[1:] if self.manual else self.global_shape

    def slices(self, p: int) -> tuple[slice, ...]:
        if self.kind != "tiled":
            return tuple(slice(0, n) for n in self.global_shape)
        return tuple(slice(t * s, min(n, (t + 1) * s))
                     for t, s, n in zip(self.tiles[p], self.shard_shape, self.data_shape))

    def shard(self, full: np.ndarray, p: int) -> np.ndarray:
        """Partition ``p``'s part of the global array, padded to the per-device shape."""
        if self.kind == "stacked":
            return np.ascontiguousarray(full[p])
        if self.kind != "tiled":
            return np.ascontiguousarray(full)
        part = (full[self.manual[p]] if self.manual else full)[self.slices(p)]
        if part.shape != self.shard_shape:  # uneven tiling: XLA pads the last tiles
            padded = np.zeros(self.shard_shape, full.dtype)
            padded[tuple(slice(0, n) for n in part.shape)] = part
            part = padded
        return np.ascontiguousarray(part)

    def describe(self) -> str:
        if self.kind == "stacked":
            if self.text == "{manual}":
                return "{manual}: one value per device, gathered as [partition, ...]"
            return "per device (no sharding): gathered as [partition, ...]"
        text = self.text
        if self.manual:
            text += f", {self.manual_count} manual values gathered as [{self.manual_count}, ...]"
        if self.global_shape == self.shard_shape:
            return text
        return f"{text}, {list(self.shard_shape)} per device"


def per_device_reason() -> str:
    """Why a manual value cannot be laid out from a global array, and what to do instead."""
    return ("manual values are per device: run an already partitioned module, "
            f"{param('is_spmd_partitioned_module')}")


def unsupported_message(what: str, text: str, why: str = "") -> str:
    return (f"{what}: sharding {text} is not supported by spmd-run"
            + (f" ({why})" if why else " (tiled, replicated, maximal and manual are)"))


def layout(sharding: Any, shape: tuple[int, ...], num_partitions: int, *, per_device: bool,
           what: str) -> Layout:
    """The Layout of an ``ir.shardings.Sharding`` (None: replicated) for a value of ``shape``.

    ``per_device``: ``shape`` is one device's (an already partitioned module);
    else it is the global shape. A sharding that cannot be laid out (unreduced,
    unknown, tuple, or one that does not fit the value or the partitions) raises
    InputError naming ``what``.
    """
    if sharding is None or sharding.kind == "replicated":
        return Layout("replicated", shape, shape)
    text = sharding.text
    if sharding.kind == "maximal":
        device = int(sharding.devices[0]) if sharding.devices else 0
        if not 0 <= device < num_partitions:
            raise InputError(f"{what}: sharding {text} names device {device}, but there are "
                             f"{num_partitions} partitions")
        return Layout("maximal", shape, shape, device=device, text=text)
    if sharding.kind == "manual":
        if per_device:
            return Layout("stacked", (num_partitions,) + shape, shape, text="{manual}")
        raise InputError(unsupported_message(what, text, per_device_reason()))
    if sharding.kind != "tiled":
        raise InputError(unsupported_message(what, text))
    if "unreduced" in sharding.subgroups or set(sharding.subgroups) - {"replicated", "manual"}:
        raise InputError(unsupported_message(what, text, "unreduced values hold partial sums: spmd-run lays "
                                             "out tiled, replicated, maximal and manual ones"))
    dims = list(sharding.dims)
    devices = list(sharding.devices)
    rank = len(shape)
    if sharding.rank != rank:
        raise InputError(f"{what}: sharding {text} has {sharding.rank} tile dimensions for a "
                         f"rank-{rank} value")
    if sorted(devices) != list(range(num_partitions)):
        raise InputError(f"{what}: sharding {text} spans {len(devices)} devices, but there are "
                         f"{num_partitions} partitions", hint=param("num_partitions", len(devices)))
    grid = np.asarray(devices).reshape(dims)
    manual_axes = [rank + k for k, kind in enumerate(sharding.subgroups) if kind == "manual"]
    tiles, manual = [], []
    for p in range(num_partitions):
        at = np.argwhere(grid == p)[0]
        tiles.append(tuple(int(c) for c in at[:rank]))
        if manual_axes:
            manual.append(int(np.ravel_multi_index([at[a] for a in manual_axes], [dims[a] for a in manual_axes])))
    counts = dims[:rank]
    manual_count = math.prod(dims[a] for a in manual_axes)
    if per_device:
        shard_shape, data_shape = shape, tuple(n * c for n, c in zip(shape, counts))
    else:
        if manual_axes:  # a manual value's global shape is the module's, per manual index
            raise InputError(unsupported_message(what, text, per_device_reason()))
        data_shape, shard_shape = shape, tuple(-(-n // c) for n, c in zip(shape, counts))
    global_shape = ((manual_count,) + data_shape) if manual_axes else data_shape
    return Layout("tiled", global_shape, shard_shape, tuple(tiles), text=text,
                  manual=tuple(manual), manual_count=manual_count)


def gather(lay: Layout, shards: dict[int, np.ndarray], rtol: float | None = None,
           atol: float | None = None) -> tuple[np.ndarray, list[str]]:
    """The global array from each partition's shard, and where copies of an element disagree."""
    first = shards[min(shards)]
    if lay.kind == "stacked":
        return np.stack([shards[p] for p in sorted(shards)]), []
    if lay.kind == "maximal":
        return shards[lay.device], []
    full = np.zeros(lay.global_shape, first.dtype)
    owner: dict[tuple[int, tuple[int, ...]], int] = {}
    problems: list[str] = []
    for p in sorted(shards):
        region = lay.slices(p)
        valid = shards[p][tuple(slice(0, s.stop - s.start) for s in region)]
        key = (lay.manual[p] if lay.manual else 0, lay.tiles[p] if lay.kind == "tiled" else ())
        target = (key[0],) + region if lay.manual else region
        if key in owner:  # a replicated copy: it must agree with the first one
            mm = compare(valid, full[target], 0, rtol, atol)
            if mm.count:
                problems.append(f"partitions {owner[key]} and {p} disagree on {mm.count} of "
                                f"{mm.total} elements (max abs difference {format_error(mm.max_abs_error)})")
            continue
        owner[key] = p
        full[target] = valid
    return full, problems


# ===================================================================== running

def require_devices(platform: str) -> None:
    """NoGpu now, once, when ``platform`` cannot run here (cuda without a usable GPU, tpu
    without a chip on the PCI bus), rather than one failure per module. A TPU is not opened
    here: the process that runs the modules does (one program holds a chip at a time)."""
    if platform == "tpu":
        from ..xla.platforms import run_target

        run_target("tpu")
    if platform == "cuda":
        from .._native import jaxlib as _jaxlib

        _jaxlib.cuda_devices()


@dataclass
class Executable:
    """A compiled module and how its parameters and outputs lie over its devices."""

    executable: Any
    devices: list[Any]               # logical order: replica-major, then partition
    param_layouts: list[Layout]
    result_layouts: list[Layout]
    compile_ms: float
    params: list[TensorSpec] = field(default_factory=list)    # global shapes
    results: list[TensorSpec] = field(default_factory=list)
    num_replicas: int = 1
    num_partitions: int = 1


def compile_one(module: Any, target: Any = None, name: str = "module") -> Executable:
    """``module`` (named ``name``) compiled by XLA for one device of ``target``
    (targets.Target; default: XLA CPU) to run on."""
    from ..xla import backend
    from ..xla.platforms import CpuTarget

    done = backend.compile(module, backend.CompileSpec(target or CpuTarget(), on_device=True), name)
    return Executable(done.executable, done.devices, [], [], done.compile_ms)


def compile_spmd(module: Any, target: Any, *, num_replicas: int, num_partitions: int,
                 params: list[TensorSpec], results: list[TensorSpec], device_ids: tuple[int, ...] = (),
                 partitioner: str | None = None, backend_only: bool = False,
                 param_layouts: list[Layout] | None = None,
                 result_layouts: list[Layout] | None = None) -> Executable:
    """``module`` compiled for ``target``'s devices ``device_ids`` (replicas x partitions, in
    logical order; empty: the first ones) by XLA's SPMD partitioner (``partitioner``: shardy
    or gspmd; None: nothing to partition).

    The layouts are the given ones (an already partitioned module says its own),
    else those of the shardings XLA chose for ``params``/``results`` (global specs).
    """
    from .._native import jaxlib as _jaxlib
    from ..ir import shardings
    from ..xla import backend

    spec = backend.CompileSpec(target, num_replicas=num_replicas, num_partitions=num_partitions,
                               device_ids=tuple(device_ids), partitioner=partitioner, backend_only=backend_only,
                               on_device=True)
    done = backend.compile(module, spec)
    exe = done.executable
    made = Executable(exe, list(done.devices), [], [], done.compile_ms, list(params), list(results),
                      num_replicas, num_partitions)
    if param_layouts is not None and result_layouts is not None:
        made.param_layouts, made.result_layouts = list(param_layouts), list(result_layouts)
        return made
    param_sh, out_sh = _jaxlib.executable_shardings(exe)

    def read(found: list[bytes | None] | None, i: int) -> Any:
        data = None if found is None or i >= len(found) else found[i]
        return None if data is None else shardings.from_bytes(data)

    made.param_layouts = [layout(read(param_sh, i), p.shape, num_partitions, per_device=False,
                                 what=f"parameter {i}") for i, p in enumerate(params)]
    made.result_layouts = [layout(read(out_sh, i), r.shape, num_partitions, per_device=False,
                                  what=f"output {i}") for i, r in enumerate(results)]
    return made


def execute_one(exe: Executable, arrays: list[np.ndarray], iterations: int = 1) -> tuple[list[np.ndarray], list[float]]:
    """Run a one-device executable ``iterations`` times: the last outputs and each run's ms."""
    from .._native import jaxlib as _jaxlib

    return _jaxlib.execute_timed(exe.executable, arrays, exe.devices[0], iterations)


def run_xla(module: Any, arrays: list[np.ndarray], target: Any = None, iterations: int = 1,
            name: str = "module") -> tuple[list[np.ndarray], float, float]:
    """(outputs, compile ms, median run ms) for ``module`` on one device of ``target``
    (default: XLA CPU)."""
    exe = compile_one(module, target, name)
    outputs, times = execute_one(exe, arrays, iterations)
    return outputs, exe.compile_ms, statistics.median(times)


def run_in_helper(bytecode: bytes, arrays: list[np.ndarray], target: Any) -> list[np.ndarray]:
    """:func:`run_xla`'s outputs for a module given as bytecode (isolate's helper runs it)."""
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        return run_xla(ir.Module.parse(bytecode), arrays, target, 1)[0]


def run_plan(plan: Any, arguments: list[np.ndarray] | None = None, target: Any = None, iterations: int = 1,
             ) -> tuple[list[np.ndarray], Executable, list[float]]:
    """A self-checking module prepared by ``inputs.checks.prepare`` (``plan``) on one device
    of ``target``: ``arguments`` for @main's own parameters, then the plan's lifted
    constants (default target: XLA CPU). The outputs (the module's, then each check's
    operands), the executable and each run's ms."""
    from .._native import jaxlib as _jaxlib

    args = list(arguments or [])
    if len(args) != plan.num_original_params:
        raise InputError(f"@main takes {plan.num_original_params} arguments of its own, {len(args)} given")
    with _jaxlib.x64(plan.x64):  # for this run only: the caller's jax keeps its own setting
        exe = compile_one(plan.module, target)
        outputs, times = execute_one(exe, args + list(plan.parameters), iterations)
    return outputs, exe, times


def device_arguments(exe: Executable, inputs: Inputs, logical: int) -> list[np.ndarray]:
    """What device number ``logical`` (replica * P + partition) receives for each parameter."""
    r, p = divmod(logical, exe.num_partitions)
    out = []
    for spec, lay in zip(exe.params, exe.param_layouts):
        if inputs.per_replica is None:
            # XLA fills with the device's id (the same as ``logical`` unless a device assignment reorders them)
            out.append(np.full(lay.shard_shape, exe.devices[logical].id).astype(np_dtype(spec.dtype)))
        else:
            out.append(lay.shard(inputs.per_replica[r][len(out)], p))
    return out


@dataclass
class Execution:
    shards: dict[tuple[int, int], np.ndarray]   # (output, logical device) -> this process's shards
    run_ms: list[float]


def execute(exe: Executable, inputs: Inputs, repeats: int = 1) -> Execution:
    """Run ``repeats`` times on this process's devices of ``exe``: the last run's output
    shards by (output, logical device), and each run's ms."""
    from .._native import jaxlib as _jaxlib

    logical = {d.id: i for i, d in enumerate(exe.devices)}
    mine = set(exe.executable.local_devices())
    local = [d for d in exe.devices if d in mine]
    if local != list(exe.executable.local_devices()):
        # sharded_argument hands buffers over in device-assignment order.
        raise DriverError("the executable's devices are not in device-assignment order")
    per_device = {d.id: device_arguments(exe, inputs, logical[d.id]) for d in local}
    times: list[float] = []
    results: list[list[tuple[Any, np.ndarray]]] = []
    for _ in range(repeats):
        # Fresh buffers each time: a module may donate (alias) its inputs.
        args = [_jaxlib.sharded_argument([per_device[d.id][i] for d in local], local, exe.devices)
                for i in range(len(exe.params))]
        results, ms = _jaxlib.execute_spmd(exe.executable, args)
        times.append(ms)
    shards = {(i, logical[dev.id]): arr for i, out in enumerate(results) for dev, arr in out}
    return Execution(shards, times)


def gather_outputs(exe: Executable, shards: dict[tuple[int, int], np.ndarray], rtol: float | None = None,
                   atol: float | None = None) -> tuple[list[list[np.ndarray]], list[str]]:
    """Whole outputs per replica from every device's shards; where copies disagree."""
    P = exe.num_partitions
    per_replica, problems = [], []
    for r in range(exe.num_replicas):
        outs = []
        for i, lay in enumerate(exe.result_layouts):
            full, bad = gather(lay, {p: shards[(i, r * P + p)] for p in range(P)}, rtol, atol)
            where = f"output {i}" + (f" of replica {r}" if exe.num_replicas > 1 else "")
            problems.extend(f"{where}: {b}" for b in bad)
            outs.append(full)
        per_replica.append(outs)
    return per_replica, problems


def device_id_globals(exe: Executable) -> list[list[np.ndarray]] | None:
    """The global arrays device-id inputs amount to, when every element has one owner."""
    P = exe.num_partitions
    if not all(lay.unique(P) for lay in exe.param_layouts):
        return None
    out = []
    for r in range(exe.num_replicas):
        arrays = []
        for spec, lay in zip(exe.params, exe.param_layouts):
            parts = {p: np.full(lay.shard_shape, exe.devices[r * P + p].id).astype(np_dtype(spec.dtype))
                     for p in range(P)}
            arrays.append(gather(lay, parts)[0])
        out.append(arrays)
    return out


# ================================================================== references

def run_reference(module: Any, arrays: list[np.ndarray], reference: str,
                  xla_flags: tuple[tuple[str, Any], ...] = ()) -> tuple[list[np.ndarray], float]:
    """(outputs, ms) of ``module`` on the ``reference``: "interpreter" (StableHLO's) or
    "cpu" (XLA CPU, with ``xla_flags``)."""
    if reference == "interpreter":
        return run_interpreter(module, arrays)
    if reference == "cpu":
        from ..xla.platforms import CpuTarget

        outs, _, ms = run_xla(module, arrays, CpuTarget(xla_flags=tuple(xla_flags)), 1)
        return outs, ms
    raise InputError(f"unknown reference '{reference}'", hint=", ".join(REFERENCES))


def run_interpreter(module: Any, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """The StableHLO reference interpreter (stablehlo.eval_module) on host arrays.

    It runs in a separate process (execute/interpreter.py): it aborts on ops it does
    not support. Types numpy cannot take from MLIR attributes (bf16, f16, f8,
    complex) travel as same-width integers or real/imag pairs: the module is
    wrapped with conversions on both ends.
    """
    from ..ir import emit
    from . import interpreter

    params, results = signature(module)
    wrapped = _wrap_for_interpreter(_without_sharding_annotations(module), params, results)
    carried = [np.ascontiguousarray(_to_carrier(a, p)) for a, p in zip(arrays, params)]
    t0 = time.perf_counter()
    outs = interpreter.evaluate(emit.bytecode(wrapped), carried, [_carrier_spec_text(p) for p in params])
    ms = ms_since(t0)
    return [_from_carrier(a, r) for a, r in zip(outs, results)], ms


# Ops that only say how a value is sharded: the value passes through unchanged. jax writes
# them for sharding constraints and explicit mesh axes; the interpreter knows none of them.
_SHARDING_CALLS = ("Sharding", "xla.sdy.FuncResultSharding", "xla.sdy.ShardingConstraint")
_SHARDING_OPS = ("sdy.sharding_constraint", "sdy.reshard")


def _without_sharding_annotations(module: Any) -> Any:
    """``module`` (a copy, where it has any) without its sharding annotations: each such op's
    result replaced by its operand."""
    from jaxlib.mlir import ir

    from ..ir import emit

    text = module.operation.get_asm(large_elements_limit=1)
    if not any(f"@{t}(" in text for t in _SHARDING_CALLS) and not any(o in text for o in _SHARDING_OPS):
        return module
    copy = emit.clone(module)
    found: list[Any] = []

    def visit(op: Any) -> Any:
        name = op.name
        target = ir.StringAttr(op.attributes["call_target_name"]).value \
            if name == "stablehlo.custom_call" and "call_target_name" in op.attributes else None
        if (name in _SHARDING_OPS or target in _SHARDING_CALLS) and len(op.operands) == 1 \
                and len(op.results) == 1 and op.operands[0].type == op.results[0].type:
            found.append(op)
        return ir.WalkResult.ADVANCE

    with copy.context:
        copy.operation.walk(visit)
        for op in found:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
    return copy


def _to_carrier(a: np.ndarray, p: TensorSpec) -> np.ndarray:
    if p.dtype in _CARRIER:
        return a.view(_CARRIER[p.dtype])
    if p.dtype.startswith("complex"):
        return np.stack([a.real, a.imag], axis=-1)
    if p.dtype == "bool":
        return a.astype(bool)
    return a


def _from_carrier(a: np.ndarray, r: TensorSpec) -> np.ndarray:
    if r.dtype in _CARRIER:
        return a.astype(_CARRIER[r.dtype]).view(np_dtype(r.dtype)).reshape(r.shape)
    if r.dtype.startswith("complex"):
        return (a[..., 0] + 1j * a[..., 1]).astype(np_dtype(r.dtype)).reshape(r.shape)
    return a.astype(np_dtype(r.dtype)).reshape(r.shape)


def _wrap_for_interpreter(module: Any, params: list[TensorSpec], results: list[TensorSpec]) -> Any:
    from jaxlib.mlir import ir

    from ..inputs import loader as inputs
    from ..ir import emit

    if not any(p.dtype in _CARRIER or p.dtype.startswith("complex") for p in params + results):
        return module
    copy = emit.clone(module)
    main = main_function(copy)
    with copy.context:
        main.attributes["sym_name"] = ir.StringAttr.get("__mlirhlo_inner_main")
        main.attributes["sym_visibility"] = ir.StringAttr.get("private")
    lines, args, call_args = [], [], []
    for i, p in enumerate(params):
        ct = _carrier_spec_text(p)
        args.append(f"%a{i}: {ct}")
        call_args.append(_unwrap_value(lines, f"%a{i}", p, ct, f"in{i}"))
    res_types = ", ".join(r.mlir() for r in results)
    outs = [f"%r#{i}" if len(results) > 1 else "%r" for i in range(len(results))]
    call = f"%r{':' + str(len(results)) if len(results) > 1 else ''} = func.call @__mlirhlo_inner_main(" \
           f"{', '.join(call_args)}) : ({', '.join(p.mlir() for p in params)}) -> ({res_types})"
    lines.append(call)
    returned = [_wrap_value(lines, v, r, f"out{i}") for i, (v, r) in enumerate(zip(outs, results))]
    out_types = ", ".join(_carrier_spec_text(r) for r in results)
    lines.append(f"func.return {', '.join(returned)} : {out_types}")
    wrapper = (f"func.func @main({', '.join(args)}) -> ({out_types}) {{\n  " + "\n  ".join(lines) + "\n}\n")
    text = copy.operation.get_asm()
    end = text.rstrip().rfind("}")
    return inputs.parse_mlir(text[:end] + wrapper + "}\n", "<interpreter wrapper>")


def _carrier_spec_text(p: TensorSpec) -> str:
    if p.dtype in _CARRIER:
        return TensorSpec(p.shape, dtypes.BY_NUMPY[_CARRIER[p.dtype]].mlir, "").mlir()
    if p.dtype.startswith("complex"):
        return TensorSpec(p.shape + (2,), "f32" if p.dtype == "complex64" else "f64", "").mlir()
    return p.mlir()


def _unwrap_value(lines: list[str], v: str, p: TensorSpec, carrier: str, tag: str) -> str:
    if p.dtype in _CARRIER:
        lines.append(f"%{tag} = stablehlo.bitcast_convert {v} : ({carrier}) -> {p.mlir()}")
        return f"%{tag}"
    if p.dtype.startswith("complex"):
        part = TensorSpec(p.shape, p.element[8:-1], "").mlir()
        lines.append(f"%{tag}_re2 = stablehlo.slice {v} [{', '.join(['0:' + str(d) for d in p.shape] + ['0:1'])}]"
                     f" : ({carrier}) -> {TensorSpec(p.shape + (1,), p.element[8:-1], '').mlir()}")
        lines.append(f"%{tag}_im2 = stablehlo.slice {v} [{', '.join(['0:' + str(d) for d in p.shape] + ['1:2'])}]"
                     f" : ({carrier}) -> {TensorSpec(p.shape + (1,), p.element[8:-1], '').mlir()}")
        one = TensorSpec(p.shape + (1,), p.element[8:-1], "").mlir()
        lines.append(f"%{tag}_re = stablehlo.reshape %{tag}_re2 : ({one}) -> {part}")
        lines.append(f"%{tag}_im = stablehlo.reshape %{tag}_im2 : ({one}) -> {part}")
        lines.append(f"%{tag} = stablehlo.complex %{tag}_re, %{tag}_im : {p.mlir()}")
        return f"%{tag}"
    return v


def _wrap_value(lines: list[str], v: str, r: TensorSpec, tag: str) -> str:
    if r.dtype in _CARRIER:
        lines.append(f"%{tag} = stablehlo.bitcast_convert {v} : ({r.mlir()}) -> {_carrier_spec_text(r)}")
        return f"%{tag}"
    if r.dtype.startswith("complex"):
        part = TensorSpec(r.shape, r.element[8:-1], "").mlir()
        one = TensorSpec(r.shape + (1,), r.element[8:-1], "").mlir()
        lines.append(f"%{tag}_re = stablehlo.real {v} : ({r.mlir()}) -> {part}")
        lines.append(f"%{tag}_im = stablehlo.imag {v} : ({r.mlir()}) -> {part}")
        lines.append(f"%{tag}_re1 = stablehlo.reshape %{tag}_re : ({part}) -> {one}")
        lines.append(f"%{tag}_im1 = stablehlo.reshape %{tag}_im : ({part}) -> {one}")
        lines.append(f"%{tag} = stablehlo.concatenate %{tag}_re1, %{tag}_im1, dim = {len(r.shape)}"
                     f" : ({one}, {one}) -> {_carrier_spec_text(r)}")
        return f"%{tag}"
    return v


# ================================================================== comparison

# The default tolerances, one figure per float type from its epsilon (eps, the step from 1.0 to
# the next value): rtol = atol = min(ULP_BUDGET * eps, max(COARSEST_TOLERANCE, eps)).
# * A correct compile and its reference differ by an amount that, counted in ULP, belongs to
#   the program rather than to its type: XLA CPU tiles and vectorises reductions and dots
#   (Eigen), contracts a*b+c into FMAs and evaluates exp/log/tanh with its own polynomials,
#   where the interpreter goes op by op, element by element, in order. Measured against the
#   interpreter on random inputs in +-1, the same jax programs are as many ULP off in float32
#   as in float64: a 4-head attention block 158 and 137 eps (float16: 130), a dense, layer-norm
#   and gelu block 15 in both, elementwise transcendentals 1-2; a 128-wide attention block's
#   float32 dump 1e-4 (840 eps). So every type gets one budget, 2**14 ULP (the last 14 bits of
#   the significand): float32 2**-9 = 1.95e-3, at least as tolerant as XLA run_hlo_module's
#   default bounds (1e-3 absolute or relative), where the former 1e-4/1e-5 called plain float32
#   attention a mismatch; float64 2**-38 = 3.6e-12, which still tells a float64 result that
#   went through float32 (up to 6e-8 off) from a right one.
# * 2**14 ULP is more than the whole significand of float16, bfloat16 and the float8 types, so
#   theirs is capped at 1/16 (they must still agree on their leading 4 bits); a type whose own
#   step at 1.0 is coarser (float8_e4m3fn 1/8, float8_e5m2 1/4) gets that step, so neighbouring
#   values always match.
# rtol and atol are one figure: under |a - e| <= atol + rtol*|e| an element near zero may be
# atol off, a large one rtol relatively. Integers and bools compare exactly whatever is asked.
ULP_BUDGET = 2**14
COARSEST_TOLERANCE = 2.0**-4


def default_tolerance(dtype: Any) -> float:
    """The default ``rtol`` and ``atol`` (one figure) of a float or complex dtype (its parts'
    epsilon); 0 for the exact ones, integers and bools."""
    try:
        dt = np.dtype(dtype)
        cls = _dtype_class(dt)
    except TypeError:
        return 0.0
    if cls == "complex":
        dt = np.dtype(np.float32 if dt == np.complex64 else np.float64)
    elif cls != "float":
        return 0.0
    import ml_dtypes

    eps = float((np.finfo if dt.kind == "f" else ml_dtypes.finfo)(dt).eps)
    return min(ULP_BUDGET * eps, max(COARSEST_TOLERANCE, eps))


# A TPU computes a float32 product (dot, convolution) at DEFAULT precision as one bfloat16
# pass: operands rounded to bfloat16, products summed in float32. Compared with XLA CPU's
# float32 result, a v5e (jax 0.10.2) was off by up to 0.10 for a 1024-term dot of values in
# [-1, 1] (0.13 relative), more than any fixed tolerance of float32's should allow. So the
# reference computes those products the same way (ir.precision.with_bfloat16_operands) and
# the comparison keeps float32's tolerance: on the v5e, a matmul+tanh, the MLP step, a conv
# net and a transformer block then matched within 4.4e-5. Where a product's operand comes
# from another product, the chip's and the reference's values of it may round to neighbouring
# bfloat16 values: a gradient through products (checkpoint) and a 12-step recurrence
# (scan_rnn) differed by 0.0070 and 0.0054 (0.6% and 1.8% relative). So a module with
# several such products is judged within at least one bfloat16 step (BF16_STEP, 2^-7 at
# 1.0). Complex products cannot be rounded so: they get BF16_PASS_TOLERANCE, four steps.
BF16_PASS_TOLERANCE = 2.0**-5
BF16_STEP = 2.0**-7


@dataclass(frozen=True)
class PlatformReference:
    """How a run on a platform is judged: the reference's module, the least float tolerance
    (0: the dtype's own), and the note that says so (empty: nothing to say)."""

    module: Any
    floor: float = 0.0
    note: str = ""


def platform_reference(platform: str, module: Any, precision: str | None) -> PlatformReference:
    """The reference of a run of ``module`` on ``platform`` with its products at
    ``precision`` (None: as the module says): on a TPU, products at DEFAULT precision are
    computed by the reference as the chip computes them."""
    from ..ir import precision as precisions

    if platform != "tpu" or precision not in (None, "default"):
        return PlatformReference(module)
    rounded_module, rounded = precisions.with_bfloat16_operands(module)
    complex_products = precisions.default_precision_products(module, complex_only=True)
    notes, floor = [], 0.0
    if rounded:
        notes.append(f"tpu: {rounded} float32 product{'s' if rounded != 1 else ''} at DEFAULT precision, one "
                     "bfloat16 pass on the chip: the reference rounds their operands to bfloat16 too "
                     "(--precision highest: float32 on both)")
    if rounded > 1:
        floor = BF16_STEP
        notes.append(f"an operand computed by another product may round one bfloat16 step apart: floats "
                     f"compared within at least {format_error(BF16_STEP)}")
    if complex_products:
        floor = BF16_PASS_TOLERANCE
        notes.append(f"tpu: {complex_products} complex product{'s' if complex_products != 1 else ''} at DEFAULT "
                     f"precision (bfloat16 passes): floats compared within at least {format_error(BF16_PASS_TOLERANCE)}")
    return PlatformReference(rounded_module if rounded else module, floor, "; ".join(notes))


def tolerance(dtype: str, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """(rtol, atol) for ``dtype``: those given, else the dtype's default."""
    base = default_tolerance(dtype) if rtol is None or atol is None else 0.0
    return (base if rtol is None else rtol, base if atol is None else atol)


def format_error(error: float) -> str:
    """An error figure as every report prints it (3 significant digits): the mismatch lines,
    the summary table, spmd-run's report."""
    return f"{error:.3g}"


@dataclass
class Mismatch:
    """How one output differs from the reference.

    ``max_abs_error`` is the output's one error figure: the largest ``|actual - expected|``
    of any element, within tolerance or not (inf where a NaN meets a number or an Inf meets
    another value), at ``max_abs_error_at``. The mismatch lines, the summary table and the
    JSON rows all give this figure. ``worst_index`` is the differing element with the largest
    error: the same element, unless the largest error is within its tolerance (a large value,
    a small relative error) and a smaller one is not.
    """

    output: int
    dtype: str
    shape: tuple[int, ...]
    count: int                       # elements beyond tolerance
    total: int
    max_abs_error: float = 0.0
    max_abs_error_at: tuple[int, ...] = ()
    worst_index: tuple[int, ...] = ()
    actual: str = ""                 # the worst differing element's values, as format_value spells them
    expected: str = ""
    examples: list[tuple[tuple[int, ...], str, str]] = field(default_factory=list)
    note: str = ""
    label: str = ""  # what the values are, when not an output (bisect: "value")
    worst_ulp: int | None = None   # floats within about a factor of two: how many ULP apart the worst pair is
    worst_abs: float = 0.0         # the worst differing element's absolute and relative errors
    worst_rel: float = 0.0
    max_values: tuple[str, str] = ("", "")   # actual and expected at max_abs_error_at
    bound: str = ""                # the tolerance the elements were judged by, in words

    def describe(self) -> str:
        what = self.label or f"output {self.output}"
        head = f"{what} ({self.dtype}{list(self.shape)}): {self.count} of {self.total} elements differ"
        if self.note:
            return "\n".join([f"{head} {self.note}", f"  got {self.actual}, expected {self.expected}"])
        lines = [head + (f" ({self.bound})" if self.count and self.bound else "")]
        if self.count:
            ulp = "" if self.worst_ulp is None else f", {self.worst_ulp} ULP apart"
            worst = f"got {self.actual}, expected {self.expected}"
            figure = f"  max abs error {format_error(self.max_abs_error)} at {list(self.max_abs_error_at)}"
            if self.max_abs_error_at == self.worst_index:
                lines.append(f"{figure}: {worst} (rel error {format_error(self.worst_rel)}{ulp})")
            else:
                got, want = self.max_values
                lines.append(f"{figure}: got {got}, expected {want} (within tolerance)")
                lines.append(f"  worst differing at {list(self.worst_index)}: {worst} (abs error "
                             f"{format_error(self.worst_abs)}, rel error {format_error(self.worst_rel)}{ulp})")
            for idx, got, want in self.examples:
                lines.append(f"  at {list(idx)}: got {got}, expected {want}")
        return "\n".join(lines)


def _errors(a: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per element of two float (float64) or complex (complex128) arrays: the absolute error
    (0 for NaN against NaN and for equal infinities, inf for a NaN against a value), the
    relative error (inf against an expected 0) and where one side alone is NaN."""
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    both_inf = np.isinf(a) & np.isinf(e) & (a == e)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(a - e)
        err = np.where(both_inf | (a_nan & e_nan), 0.0, err)
        err = np.where((a_nan ^ e_nan) | np.isnan(err), np.inf, err)
        rel = err / np.abs(e)  # against an expected 0: inf, whatever the error's size
        rel = np.where(err == 0, 0.0, np.where(np.isnan(rel), np.inf, rel))
    return err, rel, a_nan ^ e_nan


def _beyond(a: np.ndarray, e: np.ndarray, rt: float, at: float, xla_error_spec: bool) -> np.ndarray:
    """Where elements of two float or complex arrays differ beyond the tolerances."""
    if xla_error_spec and a.dtype.kind == "c":  # XLA judges a complex number's parts one by one
        return _beyond(a.real, e.real, rt, at, True) | _beyond(a.imag, e.imag, rt, at, True)
    err, rel, one_nan = _errors(a, e)
    if xla_error_spec:
        return (err > at) & (rel > rt)
    with np.errstate(invalid="ignore", over="ignore"):
        return (err > at + rt * np.abs(np.where(np.isfinite(e), e, 0))) | one_nan


def compare(actual: np.ndarray, expected: np.ndarray, index: int, rtol: float | None,
            atol: float | None, examples: int = 3, *, xla_error_spec: bool = False,
            floor: float = 0.0) -> Mismatch:
    """Element-wise comparison, NaN- and Inf-aware; exact for ints and bools. NaN matches
    NaN (any sign or payload); an Inf must meet an Inf of its sign.

    An element matches within ``atol + rtol * |expected|`` (numpy's allclose), or, with
    ``xla_error_spec``, as XLA's ErrorSpec judges it (run_hlo_module): within ``atol`` or
    within ``rtol * |expected|``, a complex number's real and imaginary parts each.
    ``floor``: the least tolerance of a float (the platform's, :func:`platform_reference`)."""
    dtype = str(expected.dtype)
    shape = tuple(expected.shape)
    if tuple(actual.shape) != shape or actual.dtype != expected.dtype:
        return Mismatch(index, dtype, shape, expected.size, expected.size, float("inf"),
                        actual=f"{actual.dtype}{list(actual.shape)}", expected=f"{dtype}{list(shape)}",
                        note="(shape or type differs)", worst_abs=float("inf"), worst_rel=float("inf"))
    rt, at = tolerance(dtype, rtol, atol)
    rt, at = max(rt, floor), max(at, floor)
    bound = ""
    if expected.dtype.kind in "biu":
        bad = actual != expected
        err = np.abs(actual.astype(np.float64) - expected.astype(np.float64)) if expected.dtype.kind != "b" \
            else bad.astype(np.float64)
        rel = err / np.maximum(np.abs(expected.astype(np.float64)), 1)
    else:
        a = actual.astype(np.complex128 if expected.dtype.kind == "c" else np.float64)
        e = expected.astype(a.dtype)
        err, rel, _ = _errors(a, e)
        bad = _beyond(a, e, rt, at, xla_error_spec)
        bound = (f"tolerance {format_error(at)} absolute or {format_error(rt)} relative" if xla_error_spec
                 else f"tolerance {format_error(at)} + {format_error(rt)}*|expected|")
    count = int(np.count_nonzero(bad))
    flat_actual, flat_expected = actual.reshape(-1), expected.reshape(-1)

    def where(flat: int) -> tuple[int, ...]:
        return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()

    mm = Mismatch(index, dtype, shape, count, int(expected.size), bound=bound)
    if err.size:
        top = int(np.argmax(err.reshape(-1)))
        mm.max_abs_error = float(err.reshape(-1)[top])
        if mm.max_abs_error:
            mm.max_abs_error_at = where(top)
            mm.max_values = (format_value(flat_actual[top]), format_value(flat_expected[top]))
    if count:
        worst = int(np.argmax(np.where(bad, err, -1).reshape(-1)))
        mm.worst_index = where(worst)
        mm.worst_abs, mm.worst_rel = float(err.reshape(-1)[worst]), float(rel.reshape(-1)[worst])
        got, want = flat_actual[worst], flat_expected[worst]
        mm.actual, mm.expected = format_value(got), format_value(want)
        if _dtype_class(expected.dtype) == "float":
            ulp = int(ulp_difference(np.asarray(got), np.asarray(want)))
            # Only where it tells how close they came: a distance within the significand's
            # range (about a factor of two apart); across zero or orders of magnitude it is noise.
            if ulp <= 1 << _mantissa_bits(expected.dtype):
                mm.worst_ulp = ulp
        for flat in np.flatnonzero(bad.reshape(-1))[: examples + 1]:
            if int(flat) == worst or len(mm.examples) >= examples:
                continue
            mm.examples.append((where(int(flat)), format_value(flat_actual[flat]), format_value(flat_expected[flat])))
    return mm


@dataclass
class Comparison:
    """A run's outputs against its reference."""

    mismatches: list[Mismatch]
    max_abs_error: float = 0.0   # the largest of the outputs' max_abs_error (0: identical)
    max_abs_error_at: str = ""   # which output and element: "output 1 [2, 0]" ("" when 0)
    message: str = ""            # "" when everything matches

    @property
    def matched(self) -> bool:
        return not self.message


def compare_outputs(outputs: list[np.ndarray], reference: list[np.ndarray], rtol: float | None,
                    atol: float | None, *, label: str = "", xla_error_spec: bool = False,
                    floor: float = 0.0) -> Comparison:
    """Each output against the reference's (``label``: what to call them, e.g. "replica 1
    output"; the outputs are numbered). ``xla_error_spec``, ``floor``: as :func:`compare`."""
    if len(outputs) != len(reference):
        return Comparison([], float("inf"), message=f"{len(outputs)} outputs, reference has {len(reference)}")
    result = Comparison([])
    for i, (a, e) in enumerate(zip(outputs, reference)):
        mm = compare(a, e, i, rtol, atol, xla_error_spec=xla_error_spec,
                     floor=floor if np.dtype(e.dtype).kind in "fcV" else 0.0)
        if label:
            mm.label = f"{label} {i}"
        if mm.max_abs_error > result.max_abs_error:
            result.max_abs_error = mm.max_abs_error
            result.max_abs_error_at = f"{mm.label or f'output {i}'} {list(mm.max_abs_error_at)}"
        if mm.count:
            result.mismatches.append(mm)
    result.message = "; ".join(f"{m.label or f'output {m.output}'}: {m.count}/{m.total} differ"
                               for m in result.mismatches)
    return result


# -------------------------------------------------------------- showing values

def format_value(v: Any) -> str:
    """One element as a mismatch line shows it: what tells two values apart.

    Floats print in their own type's shortest form, so two different values
    never print the same, except where printing hides the difference: a NaN
    shows its sign and its bits at the type's width (``-nan(0xffc00000)`` for
    f32), a zero its sign (``-0.0``). Bools are ``true``/``false``.
    """
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    v = np.asarray(v)[()] if not np.isscalar(v) else v
    dt = np.asarray(v).dtype
    cls = _dtype_class(dt) if dt.kind not in "OUS" else "other"
    if cls == "float":
        f = float(v)
        if math.isnan(f):
            bits = _float_bits(dt)
            raw = int(np.asarray(v).reshape(1).view({8: np.uint8, 16: np.uint16, 32: np.uint32,
                                                      64: np.uint64}[dt.itemsize * 8])[0])
            sign = "-" if raw >> (bits - 1) & 1 else ""
            return f"{sign}nan(0x{raw:0{(bits + 3) // 4}x})"
        if f == 0.0:
            return "-0.0" if math.copysign(1.0, f) < 0 else "0.0"
        return str(v)
    if cls == "complex":
        re_, im = np.asarray(v).real[()], np.asarray(v).imag[()]
        if math.isnan(float(re_)) or math.isnan(float(im)) or float(re_) == 0.0 or float(im) == 0.0:
            im_text = format_value(im)
            return f"({format_value(re_)}{'' if im_text.startswith('-') else '+'}{im_text}j)"
        return str(v)
    if cls in ("int", "bool"):
        return str(int(v)) if cls == "int" else ("true" if v else "false")
    return str(v)


# ============================================================ check semantics

# The ULP difference of a pair that has no finite distance (a NaN against a number, an Inf
# against a finite value): as the interpreter counts it, the largest uint64.
MAX_ULP = 2**64 - 1


@dataclass
class CheckResult:
    """One ``check.*`` assertion of a self-checking module, applied to its outputs."""

    kind: str
    passed: bool
    location: str
    message: str


def _dtype_class(dt: Any) -> str:
    """'bool', 'int', 'float', 'complex' (ml_dtypes' types included)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return "bool"
    if dt.kind == "c":
        return "complex"
    if dt.kind in "iu":
        return "int"
    if dt.kind == "f":
        return "float"
    import ml_dtypes

    try:
        ml_dtypes.finfo(dt)
        return "float"
    except (ValueError, TypeError):
        pass
    try:
        ml_dtypes.iinfo(dt)
        return "int"
    except (ValueError, TypeError):
        pass
    raise TypeError(f"unsupported element type {dt}")


def _float_bits(dt: Any) -> int:
    dt = np.dtype(dt)
    if dt.kind == "f":
        return dt.itemsize * 8
    import ml_dtypes

    return int(ml_dtypes.finfo(dt).bits)


def _mantissa_bits(dt: Any) -> int:
    import ml_dtypes

    dt = np.dtype(dt)
    return int((np.finfo if dt.kind == "f" else ml_dtypes.finfo)(dt).nmant)


def ulp_difference(actual: Any, expected: Any) -> Any:
    """Element-wise ULP difference (uint64) of two float or complex arrays, as
    the interpreter's ``check.expect_close`` counts it: 0 when bitwise equal or both
    NaN; for finite values ``|bits(|a|) - bits(|b|)|``, or ``bits(|a|) + bits(|b|)``
    when the signs differ; :data:`MAX_ULP` for any other pair with a non-finite
    value. Complex: the larger of the two parts."""
    a, b = np.asarray(actual), np.asarray(expected)
    if a.dtype.kind == "c":
        return np.maximum(ulp_difference(np.ascontiguousarray(a.real), np.ascontiguousarray(b.real)),
                          ulp_difference(np.ascontiguousarray(a.imag), np.ascontiguousarray(b.imag)))
    bits = _float_bits(a.dtype)
    uint = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    ab = np.ascontiguousarray(a).view(uint).astype(np.uint64)
    bb = np.ascontiguousarray(b).view(uint).astype(np.uint64)
    width_mask = np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(MAX_ULP)
    ab &= width_mask
    bb &= width_mask
    sign = np.uint64(1 << (bits - 1))
    mag_a, mag_b = ab & ~sign, bb & ~sign
    neg_a, neg_b = (ab & sign) != 0, (bb & sign) != 0
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(fa) & np.isfinite(fb)
    both_nan = np.isnan(fa) & np.isnan(fb)
    with np.errstate(over="ignore"):
        diff = np.where(neg_a != neg_b, mag_a + mag_b,
                        np.maximum(mag_a, mag_b) - np.minimum(mag_a, mag_b))
    out = np.where(finite, diff, np.where(both_nan, np.uint64(0), np.uint64(MAX_ULP)))
    # ascontiguousarray makes a scalar 1-d: the differences keep the inputs' shape.
    return np.where(ab == bb, np.uint64(0), out).astype(np.uint64).reshape(a.shape)


def _almost_equal_parts(a: Any, b: Any, tol: float) -> Any:
    """The interpreter's areApproximatelyEqual on float64 copies of float parts."""
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        equal = fa == fb
        both_nan = np.isnan(fa) & np.isnan(fb)
        finite = np.isfinite(fa) & np.isfinite(fb)
        same_sign = np.signbit(fa) == np.signbit(fb)
        close = np.abs(fa - fb) <= tol
    return equal | both_nan | (finite & same_sign & close)


def _abs_error(a: Any, b: Any, cls: str) -> Any:
    if cls in ("bool", "int"):
        if a.dtype.itemsize >= 8:
            return np.abs(a.astype(object) - b.astype(object)).astype(np.float64)
        return np.abs(a.astype(np.int64) - b.astype(np.int64)).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        if cls == "complex":
            d = np.abs(a.astype(np.complex128) - b.astype(np.complex128))
        else:
            d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return d


def _fmt_index(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def evaluate_checks(plan: Any, outputs: list[Any]) -> list[CheckResult]:
    """Every check of ``plan`` (inputs.checks.CheckPlan) applied to the outputs of its module."""
    return [evaluate_check(c, outputs) for c in plan.checks]


def evaluate_check(check: Any, outputs: list[Any]) -> CheckResult:
    """One ``check`` (inputs.checks.Check) with the semantics of StableHLO's interpreter
    (``stablehlo/tests/CheckOps.cpp``, ``stablehlo/reference/Element.cpp``):

    ``expect_eq``
        exact. Integers and booleans must be equal; floats compare with IEEE
        equality, like ``APFloat::operator==``: ``-0.0 == 0.0`` passes and a NaN
        equals nothing, not even a NaN. Complex: both parts.
    ``expect_almost_eq`` (``tolerance``)
        per element (each part of a complex): equal, or both NaN, or both finite
        with the same sign and ``|actual - expected| <= tolerance`` (absolute,
        in double). A zero and a value of the other sign differ.
    ``expect_close`` (``min_ulp_difference <= ULP <= max_ulp_difference``)
        :func:`ulp_difference`.

    For integer and boolean operands ``expect_almost_eq`` compares
    ``|a - b| <= tolerance`` and ``expect_close`` counts one ULP per integer step
    (the interpreter rejects these types). A failure's message names how many
    elements fail and the worst one, its values spelled by :func:`format_value`.
    """
    from ..inputs.checks import CUSTOM_CALL_MAX_ULP, DIALECT_TOLERANCE

    where = check.location
    for idx in (check.actual_index, check.expected_index):
        if idx >= len(outputs):
            return CheckResult(check.kind, False, where, f"output {idx} missing ({len(outputs)} outputs)")
    a, b = np.asarray(outputs[check.actual_index]), np.asarray(outputs[check.expected_index])
    if a.shape != b.shape or a.dtype != b.dtype:
        return CheckResult(check.kind, False, where,
                           f"actual is {a.dtype}{list(a.shape)}, expected {b.dtype}{list(b.shape)}")
    try:
        cls = _dtype_class(a.dtype)
    except TypeError as e:
        return CheckResult(check.kind, False, where, str(e))
    total = a.size
    kind = check.kind
    ulp = None
    if kind == "expect_eq":
        if cls in ("float", "complex"):
            with np.errstate(invalid="ignore"):
                if cls == "complex":
                    ok = (a.real.astype(np.float64) == b.real.astype(np.float64)) & \
                         (a.imag.astype(np.float64) == b.imag.astype(np.float64))
                else:
                    ok = a.astype(np.float64) == b.astype(np.float64)
        else:
            ok = a == b
        limit = "not equal"
    elif kind == "expect_almost_eq":
        tol = float(check.options.get("tolerance", DIALECT_TOLERANCE))
        if cls == "complex":
            ok = _almost_equal_parts(a.real, b.real, tol) & _almost_equal_parts(a.imag, b.imag, tol)
        elif cls == "float":
            ok = _almost_equal_parts(a, b, tol)
        else:
            ok = _abs_error(a, b, cls) <= tol
        limit = f"outside tolerance {tol:g}"
    elif kind == "expect_close":
        lo = int(check.options.get("min_ulp_difference", 0))
        hi = int(check.options.get("max_ulp_difference", CUSTOM_CALL_MAX_ULP))
        if cls in ("float", "complex"):
            ulp = ulp_difference(a, b)
        else:
            ulp = np.minimum(_abs_error(a, b, cls), 2.0**63).astype(np.uint64)
        ok = (ulp >= np.uint64(lo)) & (ulp <= np.uint64(hi))
        limit = f"outside {hi} ULP" if lo == 0 else f"outside [{lo}, {hi}] ULP"
    else:
        return CheckResult(kind, False, where, f"unknown check kind '{kind}'")
    ok = np.asarray(ok, dtype=bool).reshape(a.shape)
    bad = int(total - np.count_nonzero(ok))
    if not bad:
        detail = f"{total} element{'s' if total != 1 else ''} ok"
        if ulp is not None and total:
            detail += f", max ULP difference {int(ulp.max())}"
        return CheckResult(kind, True, where, detail)

    # The worst failing element: largest ULP difference, else largest error.
    if ulp is not None:
        score = np.where(ok, 0, ulp.astype(np.float64) + 1)
    else:
        err = _abs_error(a, b, cls)
        score = np.where(ok, -1.0, np.where(np.isnan(err), np.inf, err))
    flat = int(np.argmax(score.reshape(-1))) if total else 0
    index = np.unravel_index(flat, a.shape) if a.shape else ()
    av, ev = a[index] if a.shape else a[()], b[index] if b.shape else b[()]
    parts = [f"actual={format_value(av)}", f"expected={format_value(ev)}"]
    if ulp is not None:
        u = int(ulp[index] if a.shape else ulp[()])
        parts.append(f"ULP difference={'inf' if u == MAX_ULP else u}")
    elif cls in ("bool", "int"):
        parts.append(f"abs error={abs(int(av) - int(ev))}")
    else:
        abs_err = float(_abs_error(np.asarray(av), np.asarray(ev), cls))
        if not math.isnan(abs_err):  # a NaN's difference says nothing: its bits above do
            parts.append(f"abs error={abs_err:.6g}")
            denom = abs(complex(ev)) if cls == "complex" else abs(float(ev))
            if denom and np.isfinite(abs_err):
                parts.append(f"rel error={abs_err / denom:.6g}")
    message = (f"{bad} of {total} element{'s' if total != 1 else ''} {limit}; worst at index "
               f"{_fmt_index(tuple(index))}: " + ", ".join(parts))
    return CheckResult(kind, False, where, message)


# ===================================================================== reports

@dataclass
class ModuleReport:
    """What one run of one module came to (``mlirhlo run``, ``run_hlo_module``, the API's
    ``Program.run``; ``spmd-run``'s SpmdReport holds one): never an exception."""

    name: str
    source: str
    status: str = "ok"                 # ok, ran, mismatch, check-failed, failed, invalid, crashed, timeout
    message: str = ""
    # The largest |actual - expected| of any output element, within tolerance or not (the
    # outputs' Mismatch.max_abs_error; None: not compared), and which output and element.
    max_abs_error: float | None = None
    max_abs_error_at: str = ""
    compile_ms: float | None = None
    run_ms: float | None = None        # median over iterations
    reference_ms: float | None = None
    mismatches: list[Mismatch] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    bisect: Any = None                 # execute.run.BisectResult, with --bisect
    pass_bisect: Any = None            # execute.pass_bisect.PassBisect, with --bisect-passes
    xla_passes: list[Any] | None = None  # xla.pass_log.PassRow, with --timing
    inputs_note: str = ""
    # Check files: where the checked values came from (inputs.checks.Provenance.describe),
    # and the constants left for XLA (inputs.checks.KeptConstant fields).
    checked_values: str | None = None      # compiled, folded, partly folded, unknown
    checked_values_detail: str = ""
    kept_constants: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[Any] | None = None            # kept with keep_outputs, for --print-literals
    outputs: list[Any] | None = None
    reference_outputs: list[Any] | None = None
    reproducer: str = ""
    notes: list[str] = field(default_factory=list)   # what else the run says (partitioned: devices, layouts)

    @property
    def passed(self) -> bool:
        return self.status in ("ok", "ran")

    @property
    def ok(self) -> bool:
        """It ran and matched its reference or passed its checks (or ran, without a reference)."""
        return self.passed

    def judge(self, comparison: Comparison) -> None:
        """Take a comparison's verdict: its mismatches, the largest error, the status."""
        self.mismatches.extend(comparison.mismatches)
        if self.max_abs_error is None or comparison.max_abs_error > self.max_abs_error:
            self.max_abs_error, self.max_abs_error_at = comparison.max_abs_error, comparison.max_abs_error_at
        if not comparison.matched:
            self.status = "mismatch"
            self.message = "; ".join(m for m in (self.message, comparison.message) if m)

    def row(self) -> dict[str, Any]:
        b = self.bisect
        return {"module": self.name, "source": self.source, "status": self.status,
                "max_abs_error": self.max_abs_error, "max_abs_error_at": self.max_abs_error_at,
                "compile_ms": self.compile_ms, "run_ms": self.run_ms,
                "reference_ms": self.reference_ms, "message": self.message,
                "checks": [c.__dict__ for c in self.checks],
                "mismatches": [m.describe() for m in self.mismatches],
                "bisect": None if b is None else {
                    "op": b.op, "location": b.location, "operand_shapes": b.operand_shapes,
                    "mismatch": b.mismatch.describe()},
                "bisect_passes": None if self.pass_bisect is None else self.pass_bisect.row(),
                "xla_passes": None if self.xla_passes is None else [p.as_dict() for p in self.xla_passes],
                "inputs": self.inputs_note,
                "checked_values": self.checked_values, "checked_values_detail": self.checked_values_detail,
                "kept_constants": self.kept_constants, "notes": self.notes,
                "reproducer": self.reproducer}
