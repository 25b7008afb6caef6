"""SPMD runs: partitions, replicas and several processes (XLA's multihost_hlo_runner).

One module runs on ``num_replicas x num_partitions`` devices. Each stage is a
function of (module, options):

- ``prepare``: what XLA compiles, which partitioner, and (for modules that are
  already partitioned) how parameters and outputs lie over the partitions. Every
  sharding the module or ``--arg-sharding`` spells (GSPMD's ``{devices=...}``,
  iota tile assignments, named mesh shardings, tuples, manual) is read by XLA's
  parser in the isolate helper and answered in Python (ir/shardings.py): no
  HloSharding accessor, some of which abort the process, runs here;
- ``compile_plan``: XLA's SPMD partitioner (Shardy or GSPMD) with a device
  assignment; the executable says how it laid out parameters and outputs;
- ``make_inputs``: global arrays (what the unpartitioned program takes), one set
  per replica, or per-device values for ``device-id``;
- ``execute``: each device gets its part; ``gather_outputs`` reassembles full arrays;
- ``finish``: the reference run and the comparison: the unpartitioned module on
  one device, or, for a module with manual computations (``shard_map``), which
  only runs on its mesh, the same module with its parameters and outputs
  replicated on the same devices.

Inputs, compiles, runs, layouts and comparisons are the engine's
(execute/engine.py); this module plans them.

Several processes join JAX's distributed runtime (its coordination service,
gloo CPU collectives). Each process runs the same stages on its own devices and
stores its output shards in the coordinator's key-value store; process 0 gathers
them. The runtime aborts a process natively when a peer dies or never joins, so
workers always run as child processes of a supervisor (``supervise``,
``launch_local``) that turns such deaths and timeouts into one clear error.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._native import processes
from ..errors import EXIT_INTERRUPTED, DriverError, InputError, param
from . import engine
from .engine import ARGUMENT_MODES, Executable, Inputs, InputSpec, Layout, ModuleReport, TensorSpec

PARTITIONERS = ("shardy", "gspmd")
REFERENCES = ("cpu", "interpreter", "none")
# Host (CPU) devices one process may create. jaxlib creates 2048 quickly, but at
# 4096 XLA CPU fails with a misleading "multiprocess computations" error, and
# beyond that a run grows without bound; 1024 covers any realistic sharding.
MAX_HOST_DEVICES = 1024


@dataclass(frozen=True)
class SpmdOptions:
    num_partitions: int = 1
    num_replicas: int = 1
    partitioner: str | None = None          # None: the one the module's shardings are written for
    arg_shardings: tuple[tuple[int, str], ...] = ()   # (parameter, HLO sharding text)
    is_spmd_partitioned_module: bool = False
    run_xla_backend_only: bool = False
    argument_mode: str = "random"
    seed: int = 0
    inputs_npz: str | None = None
    large_float_range: bool = False
    rtol: float | None = None
    atol: float | None = None
    xla_error_spec: bool = False            # against the reference: as run.RunOptions' (run_hlo_module)
    num_repeats: int = 1
    reference: str = "cpu"
    reference_module: str | None = None
    xla_flags: tuple[tuple[str, Any], ...] = ()
    device_ids: tuple[int, ...] = ()        # logical device -> device id (a given device assignment)
    # The reference's compile flags (a CPU reference); None: the same as xla_flags.
    reference_xla_flags: tuple[tuple[str, Any], ...] | None = None
    platform: str = "cpu"                    # cpu (host devices) or tpu (the chips attached here)

    @property
    def num_devices(self) -> int:
        return self.num_replicas * self.num_partitions

    @property
    def target(self) -> Any:
        """The run's target: XLA CPU with the run's flags, on the host devices (or the TPU
        chips attached here)."""
        from ..xla.platforms import run_target

        return run_target(self.platform, tuple(self.xla_flags))

    @property
    def host_devices(self) -> int:
        """Host devices the run needs: as many as its device assignment names."""
        return max(self.num_devices, max(self.device_ids, default=-1) + 1)

    @property
    def per_device_module(self) -> bool:
        """The module is already per-device: XLA must not partition it again."""
        return self.is_spmd_partitioned_module or (self.run_xla_backend_only and self.num_partitions > 1)

    @property
    def inputs(self) -> InputSpec:
        return InputSpec(self.argument_mode, self.seed, self.inputs_npz, self.large_float_range)


def command_host_devices(count: int, platform: str = "cpu") -> None:
    """In a command line's own process: jax with ``count`` host devices, for a JAX function
    (``FILE:fn --args``) whose code builds its mesh from ``jax.devices()``; the run itself is
    on the driver's own devices either way. A TPU run leaves jax as it is: its devices are
    the chips."""
    from .._native import jaxlib as _jaxlib

    if platform == "cpu":
        _jaxlib.own_process_host_devices(count)


def about_module(error: Any, source: str) -> Any:
    """``error`` (the run of the module in ``source`` failed) naming the file, and the dump's
    module before XLA's optimizations where it refuses XLA's own output."""
    from ..xla.backend import before_optimizations_hint

    return before_optimizations_hint(error, source).about(source)


def check_options(o: SpmdOptions) -> None:
    """Usage errors that need no module."""
    if o.num_partitions < 1 or o.num_replicas < 1:
        raise DriverError(f"{param('num_partitions')} and {param('num_replicas')} must be >= 1")
    if o.num_partitions > 1 and o.num_replicas > 1:
        # jaxlib 0.10.2 aborts the process (a CHECK in xla_sharding.cc) when it
        # builds the output shardings of such an executable.
        raise DriverError("replicas and partitions together cannot run with jaxlib 0.10.2",
                          hint="use --num-replicas or --num-partitions, not both")
    if o.num_repeats < 1:
        raise DriverError(f"{param('num_repeats')} must be >= 1")
    if o.argument_mode not in ARGUMENT_MODES:
        from ..errors import did_you_mean

        raise DriverError(f"unknown argument mode '{o.argument_mode}'",
                          hint=did_you_mean(o.argument_mode, ARGUMENT_MODES) or ", ".join(ARGUMENT_MODES))
    if o.partitioner is not None and o.partitioner not in PARTITIONERS:
        raise DriverError(f"unknown partitioner '{o.partitioner}'", hint="shardy or gspmd")
    if o.reference not in REFERENCES:
        raise DriverError(f"unknown reference '{o.reference}'", hint="cpu, interpreter or none")


def check_devices_per_process(o: SpmdOptions, processes: int) -> None:
    """Each of ``processes`` processes creates its share of the devices: at most MAX_HOST_DEVICES."""
    processes = max(1, processes)
    per_process = o.num_devices // processes
    if per_process <= MAX_HOST_DEVICES:
        return
    need = f"{o.num_partitions} partitions x {o.num_replicas} replicas need {o.num_devices} devices"
    if processes > 1:
        need += f", {per_process} in each of {processes} processes"
    raise DriverError(f"{need}; one process can create at most {MAX_HOST_DEVICES} CPU devices",
                      hint="use fewer partitions or more processes")


def parse_arg_sharding(spec: str) -> tuple[int, str]:
    """``'0=devices=[4,1]<=[4]'`` -> (0, '{devices=[4,1]<=[4]}'); named mesh shardings too
    (``"0=mesh['b'=4], [{'b'}, {}]"``). Checked by XLA's parser (in the isolate helper)."""
    from ..ir import shardings

    m = re.match(r"^\s*(\d+)\s*=\s*(.+?)\s*$", spec)
    if not m:
        raise InputError("expected PARAM=SHARDING, e.g. 0=devices=[4,1]<=[4]", file=param("arg_sharding"))
    text = m.group(2)
    braced = text.startswith("{")
    if not braced:
        text = "{" + text + "}"
    (got,) = shardings.parse([text])
    if isinstance(got, shardings.Refused):
        col = got.column
        at = m.start(2) + (col - (0 if braced else 1) if col else 1)
        raise InputError(f"malformed sharding '{m.group(2)}': {got.message}", file=param("arg_sharding"),
                         col=max(at, m.start(2) + 1))
    return int(m.group(1)), text


# ------------------------------------------------------------------- plan

@dataclass
class Plan:
    name: str
    source: str
    module: Any                          # what XLA compiles
    reference_module: Any | None         # the unpartitioned computation; None: no reference
    reference_note: str
    partitioner: str | None              # None: nothing to partition
    params: list[TensorSpec]             # global specs
    results: list[TensorSpec]
    param_layouts: list[Layout] | None   # known before compiling for per-device modules
    result_layouts: list[Layout] | None
    random_source: Any = None            # module whose parameters make_inputs constrains
    # The reference is ``reference_module`` on the run's own devices, not one device (a
    # module with manual computations: they need its mesh).
    reference_on_mesh: bool = False
    platform_note: str = ""              # how the platform's run is judged (engine.platform_reference)

    @property
    def per_device(self) -> bool:
        return self.param_layouts is not None


def _sharding_texts(module: Any) -> list[tuple[str, str]]:
    """(where, text) of every ``mhlo.sharding`` in the module: @main's parameters and
    results, then each op (its location)."""
    from jaxlib.mlir import ir

    args, res = _arg_result_attr(module, "mhlo.sharding")
    found = [(f"parameter {i}", t) for i, t in enumerate(args) if t is not None]
    found += [(f"output {i}", t) for i, t in enumerate(res) if t is not None]

    def visit(op: Any) -> Any:
        if "mhlo.sharding" in op.attributes:
            attr = op.attributes["mhlo.sharding"]
            try:
                found.append((f"{op.name} at {_loc(op.location)}", ir.StringAttr(attr).value))
            except ValueError:  # not a string: nothing XLA's sharding parser reads
                pass
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _loc(loc: Any) -> str:
    m = re.search(r'"([^"]*)":(\d+):(\d+)', str(loc))
    return f"{m.group(1)}:{m.group(2)}:{m.group(3)}" if m else str(loc)


def read_shardings(module: Any, source: str, flagged: set[int] = frozenset()) -> dict[str, Any]:
    """Every ``mhlo.sharding`` of the module read by XLA's parser, in the isolate helper:
    {text: ir.shardings.Sharding}. One it refuses, or dies on, is an InputError naming
    where it is (``--arg-sharding`` for the parameters in ``flagged``): left in, it
    would abort the compile."""
    from ..ir import shardings

    found = _sharding_texts(module)
    texts = [t for _, t in found]
    parsed = dict(zip(texts, shardings.parse(texts))) if texts else {}
    for where, text in found:
        got = parsed[text]
        if isinstance(got, shardings.Refused):
            from_flag = where.startswith("parameter ") and int(where.split()[1]) in flagged
            raise InputError(f"{where}: malformed sharding '{text}': {got.message}",
                             file=param("arg_sharding") if from_flag else source)
    return parsed


def _check_sharding_devices(module: Any, params: list[TensorSpec], results: list[TensorSpec],
                            options: SpmdOptions, source: str, sdy: bool, parsed: dict[str, Any]) -> None:
    """Shardings written for another device count than --num-partitions: one line naming
    the flag, not XLA's verifier text after a compile."""
    P = options.num_partitions
    flagged = {i for i, _ in options.arg_shardings}
    if sdy:
        text = module.operation.get_asm(large_elements_limit=1)
        for mesh in re.findall(r"#sdy\.mesh<\[([^\]]*)\]", text) + re.findall(r"sdy\.mesh @\S+ = <\[([^\]]*)\]", text):
            axes = re.findall(r'([A-Za-z_]\w*?)(?:\\22|\\"|")?\s*=\s*(\d+)', mesh)
            size = 1
            for _, n in axes:
                size *= int(n)
            if size > 1 and size != P:
                shown = ", ".join(f"{a}={n}" for a, n in axes)
                raise InputError(f"the module's Shardy mesh [{shown}] has {size} devices, "
                                 f"but {param('num_partitions')} is {P}", file=source,
                                 hint=param("num_partitions", size))
        return
    args, res = _arg_result_attr(module, "mhlo.sharding")
    for kind, texts, specs in (("parameter", args, params), ("output", res, results)):
        for i, (text, spec) in enumerate(zip(texts, specs)):
            if text is None:
                continue
            from_flag = kind == "parameter" and i in flagged
            where = "--arg-sharding" if from_flag else source
            s = parsed[text]
            if from_flag:  # what the layout would refuse after the compile, named before it
                why = None
                if s.kind == "manual" or "manual" in s.subgroups:
                    why = engine.per_device_reason()
                elif "unreduced" in s.subgroups:
                    why = "unreduced values hold partial sums"
                elif s.kind not in ("replicated", "maximal", "tiled"):
                    why = ""
                if why is not None:
                    raise InputError(engine.unsupported_message(f"{kind} {i}", text, why), file=where)
            if s.kind in ("tuple", "replicated", "manual", "unknown", "unreduced"):
                continue
            if s.named:
                n = s.mesh_devices
                if n > 1 and n != P:
                    fix = f"give a sharding over {P} devices" if from_flag else f"--num-partitions {n}"
                    raise InputError(f"{kind} {i}: sharding {text} is for a mesh of {n} devices, but "
                                     f"{param('num_partitions')} is {P}", file=where, hint=fix)
            devices = list(s.devices)
            fix = f"give a sharding over {P} devices" if from_flag else f"--num-partitions {len(devices)}"
            if s.kind == "maximal":
                if devices and devices[0] >= P:
                    raise InputError(f"{kind} {i}: sharding {text} names device {devices[0]}, but "
                                     f"{param('num_partitions')} is {P}", file=where, hint=fix)
                continue
            if len(devices) != P:
                raise InputError(f"{kind} {i}: sharding {text} is for {len(devices)} devices, but "
                                 f"{param('num_partitions')} is {P}", file=where, hint=fix)
            if s.rank != len(spec.shape):
                raise InputError(f"{kind} {i}: sharding {text} tiles {s.rank} dimensions, but the {kind} "
                                 f"is {spec.mlir()} (rank {len(spec.shape)})", file=where)


def _carries(module: Any) -> tuple[bool, bool]:
    """(Shardy shardings, HLO shardings) present in the module (xla.backend.sharding_kinds)."""
    from ..xla.backend import sharding_kinds

    return sharding_kinds(module)


# What marks a manual computation (shard_map): Shardy's op, the custom calls jaxlib's
# export and XLA's HLO dumps spell it with, GSPMD's.
def has_manual_computations(module: Any) -> bool:
    """Whether the module has manual computations (``shard_map``): they run only on its mesh."""
    from .._native.guards import manual_computation

    return manual_computation(module) is not None


def _arg_result_attr(module: Any, key: str) -> tuple[list[str | None], list[str | None]]:
    from jaxlib.mlir import ir

    main = engine.main_function(module)

    def read(name: str, count: int) -> list[str | None]:
        if name not in main.attributes:
            return [None] * count
        out: list[str | None] = []
        for d in ir.ArrayAttr(main.attributes[name]):
            d = ir.DictAttr(d)
            out.append(ir.StringAttr(d[key]).value if key in d else None)
        return out + [None] * (count - len(out))

    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    return read("arg_attrs", len(ftype.inputs)), read("res_attrs", len(ftype.results))


def _set_arg_shardings(module: Any, shardings: tuple[tuple[int, str], ...]) -> Any:
    """A copy of ``module`` with ``mhlo.sharding`` on the given parameters of @main."""
    from jaxlib.mlir import ir

    from ..ir.emit import clone

    copy = clone(module)
    main = engine.main_function(copy)
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    n = len(ftype.inputs)
    with copy.context:
        attrs = [ir.DictAttr(a) for a in ir.ArrayAttr(main.attributes["arg_attrs"])] \
            if "arg_attrs" in main.attributes else [ir.DictAttr.get({})] * n
        for index, text in shardings:
            if index >= n:
                raise InputError(f"parameter {index} does not exist: @main has {n} parameters",
                                 file=param("arg_sharding"))
            entries = {a.name: a.attr for a in attrs[index]}
            entries["mhlo.sharding"] = ir.StringAttr.get(text)
            attrs[index] = ir.DictAttr.get(entries)
        main.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    return copy


def _replicated(module: Any, *, ops: bool = True) -> Any:
    """A copy of ``module`` with its parameters and results replicated, in the notation its
    shardings use: Shardy's ``sdy.sharding`` (a module with ``sdy.mesh`` ops), Shardy's
    round-trip frontend attributes (an HLO dump of jax 0.9-0.11, its meshes in the module's
    ``xla.sdy.meshes``), else ``mhlo.sharding``. ``ops``: the ops' HLO shardings dropped too."""
    from jaxlib.mlir import ir

    from ..ir.emit import clone

    copy = clone(module)

    def strip(op: Any) -> Any:
        if "mhlo.sharding" in op.attributes:
            del op.attributes["mhlo.sharding"]
        return ir.WalkResult.ADVANCE

    text = copy.operation.get_asm(large_elements_limit=1)
    mesh = re.search(r"sdy\.mesh @([\w.$-]+) = ", text)
    round_trip = None if mesh else re.search(r"xla\.sdy\.meshes = \"\{([\w.$-]+) = ", text)
    with copy.context:
        if ops:
            copy.operation.walk(strip)
        main = engine.main_function(copy)
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        for key, types in (("arg_attrs", ftype.inputs), ("res_attrs", ftype.results)):
            have = list(ir.ArrayAttr(main.attributes[key])) if key in main.attributes else []
            have += [ir.DictAttr.get({})] * (len(types) - len(have))
            attrs = []
            for d, t in zip(have, types):
                entries = {a.name: a.attr for a in ir.DictAttr(d)}
                dims = ", ".join(["{}"] * len(ir.RankedTensorType(t).shape))
                if mesh is not None:
                    entries.pop("mhlo.sharding", None)
                    entries["sdy.sharding"] = ir.Attribute.parse(f"#sdy.sharding<@{mesh.group(1)}, [{dims}]>")
                elif round_trip is not None:
                    frontend = entries.get("mhlo.frontend_attributes")
                    fe = {a.name: a.attr for a in ir.DictAttr(frontend)} if frontend is not None else {}
                    fe["xla.sdy.sharding"] = ir.StringAttr.get(f"#sdy.sharding<@{round_trip.group(1)}, [{dims}]>")
                    entries["mhlo.frontend_attributes"] = ir.DictAttr.get(fe)
                    if "mhlo.sharding" in entries:
                        entries["mhlo.sharding"] = ir.StringAttr.get("{replicated}")
                else:
                    entries["mhlo.sharding"] = ir.StringAttr.get("{replicated}")
                attrs.append(ir.DictAttr.get(entries))
            if attrs:
                main.attributes[key] = ir.ArrayAttr.get(attrs)
    return copy


def _with_device_counts(module: Any, options: SpmdOptions) -> Any:
    """A copy saying its replica and partition counts; JAX writes 1 and 1 into what it lowers,
    and the conversion to HLO takes them from there (shardings are dropped for 1 partition)."""
    from jaxlib.mlir import ir

    from ..ir.emit import clone

    copy = clone(module)
    with copy.context:
        i32 = ir.IntegerType.get_signless(32)
        copy.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, options.num_partitions)
        copy.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, options.num_replicas)
    return copy


def _named_only(parsed: dict[str, Any]) -> bool:
    """Every HLO sharding is a named mesh sharding (jax 0.12's NamedSharding dumps), replicated
    ones aside: Shardy's own model, which Shardy imports as it is."""
    found = list(parsed.values())
    return all(s.named or s.kind in ("replicated", "manual") for s in found) and any(s.named for s in found)


def prepare(loaded: Any, options: SpmdOptions) -> Plan:
    """Choose the partitioner, apply --arg-sharding, and lay out per-device modules."""
    from .._native import jaxlib as _jaxlib
    from ..inputs import loader as inputs

    module = loaded.module
    sdy, hlo = _carries(module)
    if options.arg_shardings:
        if sdy:
            raise InputError("this module carries Shardy shardings; --arg-sharding is for modules "
                             "without them", file=loaded.source)
        module = _set_arg_shardings(module, options.arg_shardings)
        hlo = True
    # Before anything else reads them: a sharding XLA dies on is an error here.
    parsed = read_shardings(module, loaded.source, {i for i, _ in options.arg_shardings})
    partitioner = None
    if options.num_partitions > 1 and not options.per_device_module:
        named = _named_only(parsed)
        partitioner = options.partitioner or ("shardy" if sdy or named else "gspmd")
        # Shardy reads its own attributes and named mesh shardings; GSPMD, the others.
        # XLA drops (or rejects) shardings written for the other partitioner.
        if partitioner == "gspmd" and sdy:
            raise InputError("this module's shardings are Shardy's (sdy); the GSPMD partitioner "
                             "cannot read them", file=loaded.source, hint=param("partitioner", "shardy"))
        if partitioner == "shardy" and hlo and not sdy and not named:
            raise InputError("this module's shardings are HLO shardings (mhlo.sharding); "
                             f"Shardy cannot import them in jaxlib {_jaxlib.jaxlib_version()}", file=loaded.source,
                             hint=param("partitioner", "gspmd"))
    params, results = engine.signature(module)
    P = options.num_partitions
    if partitioner is not None:
        _check_sharding_devices(module, params, results, options, loaded.source, sdy, parsed)
    param_layouts = result_layouts = None
    if options.per_device_module:
        arg_text, res_text = _arg_result_attr(module, "mhlo.sharding")
        param_layouts = [engine.layout(None if t is None else parsed[t], p.shape, P, per_device=True,
                                       what=f"parameter {i}") for i, (t, p) in enumerate(zip(arg_text, params))]
        result_layouts = []
        for i, (t, r) in enumerate(zip(res_text, results)):
            if t is None and P > 1:  # nothing says how the devices' values relate
                result_layouts.append(Layout("stacked", (P,) + r.shape, r.shape, text="per device"))
            else:
                result_layouts.append(engine.layout(None if t is None else parsed[t], r.shape, P, per_device=True,
                                                    what=f"output {i}"))
        params = [TensorSpec(lay.global_shape, p.element, p.dtype, p.name) for lay, p in zip(param_layouts, params)]
        results = [TensorSpec(lay.global_shape, r.element, r.dtype, r.name) for lay, r in zip(result_layouts, results)]
        # XLA's runner marks such a module replicated and turns every HLO pass
        # off. On CPU some ops need their passes (an array all-to-all crashes
        # the runtime without its decomposer), so only partitioning is avoided:
        # everything replicated leaves the SPMD partitioner nothing to do.
        # --xla_disable_all_hlo_passes=true gives XLA's exact behaviour.
        compiled_module = _replicated(module)
    else:
        compiled_module = module
    compiled_module = _with_device_counts(compiled_module, options)
    reference, note, on_mesh = module, "", False
    if options.reference == "none":
        reference, note = None, "no reference (--reference none)"
    elif options.reference_module:
        found = inputs.load(options.reference_module)
        if len(found) != 1:
            raise InputError("the reference must be one module", file=options.reference_module)
        reference = found[0].module
        ref_params, ref_results = engine.signature(reference)
        for kind, want, have in (("parameters", params, ref_params), ("outputs", results, ref_results)):
            if [(s.shape, s.dtype) for s in want] != [(s.shape, s.dtype) for s in have]:
                raise InputError(f"the reference's {kind} ({engine.specs_text(have)}) differ from the global "
                                 f"{kind} of {loaded.source} ({engine.specs_text(want)})",
                                 file=options.reference_module)
        note = f"reference module {options.reference_module}"
    elif options.per_device_module and P > 1:
        reference = None
        note = ("no single-device reference: the module is already partitioned "
                "(give the unpartitioned one with --reference-module)")
    elif P > 1 and has_manual_computations(module):
        # A shard_map body runs per device, on its mesh: no single device can run it.
        reference = _with_device_counts(_replicated(module, ops=False), options)
        on_mesh = True
        note = (f"the same module on the same {options.num_devices} devices with replicated parameters and "
                "outputs (its manual computations need the mesh: no single-device reference)")
    return Plan(loaded.name, loaded.source, compiled_module, reference, note, partitioner, params, results,
                param_layouts, result_layouts, random_source=None if options.per_device_module else module,
                reference_on_mesh=on_mesh)


# ---------------------------------------------------------------- compile

def compile_plan(plan: Plan, options: SpmdOptions, devices: list[Any]) -> Executable:
    """XLA compile for ``devices`` (one per replica x partition, in logical order)."""
    return engine.compile_spmd(plan.module, options.target, device_ids=tuple(d.id for d in devices),
                               num_replicas=options.num_replicas,
                               num_partitions=options.num_partitions, params=plan.params, results=plan.results,
                               partitioner=plan.partitioner, backend_only=options.run_xla_backend_only,
                               param_layouts=plan.param_layouts,
                               result_layouts=plan.result_layouts)


def make_inputs(plan: Plan, options: SpmdOptions) -> Inputs:
    """Global arrays for every replica, as the unpartitioned program takes them."""
    return engine.make_inputs(plan.params, options.inputs, module=plan.random_source, replicas=options.num_replicas)


def execute(plan: Plan, compiled: Executable, inputs: Inputs, options: SpmdOptions) -> engine.Execution:
    """Run ``num_repeats`` times on this process's devices; the last run's output shards."""
    return engine.execute(compiled, inputs, options.num_repeats)


def gather_outputs(plan: Plan, compiled: Executable, shards: dict[tuple[int, int], np.ndarray],
                   options: SpmdOptions) -> tuple[list[list[np.ndarray]], list[str]]:
    """Full outputs per replica from every device's shards; disagreements between copies."""
    return engine.gather_outputs(compiled, shards, options.rtol, options.atol)


# ---------------------------------------------------------------- reports

@dataclass
class SpmdReport:
    """``run``'s ModuleReport, with what an SPMD run adds."""

    report: ModuleReport
    devices: str = ""
    partitioner: str = ""
    param_layouts: list[str] = field(default_factory=list)
    result_layouts: list[str] = field(default_factory=list)
    run_times: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    outputs: list[list[np.ndarray]] = field(default_factory=list)   # per replica
    device_outputs: dict[int, list[np.ndarray]] = field(default_factory=dict)  # device id -> its output shards


def _reference_outputs(plan: Plan, compiled: Executable, arrays: list[np.ndarray],
                       options: SpmdOptions) -> tuple[list[np.ndarray], float]:
    """The reference's outputs for one replica's global arrays, and its ms."""
    flags = options.xla_flags if options.reference_xla_flags is None else options.reference_xla_flags
    if options.platform != "cpu":
        flags = ()  # the run's flags are the chip's (xla_tpu_*): the CPU reference compiles with its own
    if not plan.reference_on_mesh:
        judged = engine.platform_reference(options.platform, plan.reference_module, None)
        plan.platform_note = judged.note
        return engine.run_reference(judged.module, arrays, options.reference, flags)
    from ..xla.platforms import CpuTarget

    exe = engine.compile_spmd(plan.reference_module, CpuTarget(xla_flags=tuple(flags)),
                              device_ids=tuple(d.id for d in compiled.devices), num_replicas=1,
                              num_partitions=options.num_partitions, params=plan.params, results=plan.results,
                              partitioner=plan.partitioner)
    done = engine.execute(exe, Inputs([arrays], ""), 1)
    outs, problems = engine.gather_outputs(exe, done.shards, options.rtol, options.atol)
    if problems:
        raise DriverError("the replicated reference's copies disagree: " + problems[0])
    return outs[0], exe.compile_ms + done.run_ms[0]


def finish(plan: Plan, compiled: Executable, inputs: Inputs, outputs: list[list[np.ndarray]],
           problems: list[str], run_ms: list[float], options: SpmdOptions) -> SpmdReport:
    """The reference run of the unpartitioned computation, and the comparison."""
    import statistics

    rep = ModuleReport(plan.name, plan.source, inputs_note=inputs.note,
                       compile_ms=compiled.compile_ms, run_ms=statistics.median(run_ms))
    out = SpmdReport(rep, run_times=run_ms, outputs=outputs)
    R, P = options.num_replicas, options.num_partitions
    out.devices = f"{R * P} ({R} replica{'s' if R > 1 else ''} x {P} partition{'s' if P > 1 else ''})"
    out.partitioner = plan.partitioner or ("none: already partitioned" if plan.per_device else "none")
    out.param_layouts = [f"{i} {s.name} {s.dtype}{list(s.shape)}: {lay.describe()}"
                         for i, (s, lay) in enumerate(zip(plan.params, compiled.param_layouts))]
    out.result_layouts = [f"{i} {s.dtype}{list(s.shape)}: {lay.describe()}"
                          for i, (s, lay) in enumerate(zip(plan.results, compiled.result_layouts))]
    reference_inputs = inputs.per_replica
    if reference_inputs is None and plan.reference_module is not None:
        reference_inputs = engine.device_id_globals(compiled)
        if reference_inputs is None:
            plan.reference_note = ("no reference: with device-id inputs, devices holding the same "
                                   "elements of a parameter get different values")
    if plan.reference_module is None or reference_inputs is None:
        rep.status = "ran"
        out.notes.append(plan.reference_note)
    else:
        ms = 0.0
        cache: dict[int, list[np.ndarray]] = {}
        for r in range(R):
            key = id(reference_inputs[r])
            if key not in cache:
                cache[key], t = _reference_outputs(plan, compiled, reference_inputs[r], options)
                ms += t
            rep.judge(engine.compare_outputs(outputs[r], cache[key], options.rtol, options.atol,
                                             label=f"replica {r} output" if R > 1 else "",
                                             xla_error_spec=options.xla_error_spec))
        rep.reference_ms = ms
        where = "on 1 device" if not plan.reference_on_mesh else ""
        out.notes.append(f"reference: {plan.reference_note or 'the same module'}" + (f" {where}" if where else ""))
        if plan.platform_note:
            out.notes.append(plan.platform_note)
    if problems:
        rep.status = "mismatch"
        rep.message = "; ".join(([rep.message] if rep.message else []) + problems)
    return out


def run_in_process(loaded: Any, options: SpmdOptions) -> SpmdReport:
    """The whole run on this process's first ``num_devices`` CPU devices (or TPU chips)."""
    from .._native import jaxlib as _jaxlib

    plan = prepare(loaded, options)
    order = (_jaxlib.local_device_order(options.host_devices) if options.platform == "cpu"
             else options.target.compile_devices(options.host_devices, on_device=True))
    if options.device_ids:
        by_id = {d.id: d for d in order}
        missing = sorted(set(options.device_ids) - set(by_id))
        if missing:
            raise DriverError(f"the device assignment names device {missing[0]}, which this process lacks")
        devices = [by_id[i] for i in options.device_ids]
    else:
        devices = order[: options.num_devices]
    if len(devices) < options.num_devices:
        raise DriverError(f"{options.num_devices} devices needed, {len(devices)} available")
    compiled = compile_plan(plan, options, devices)
    inputs = make_inputs(plan, options)
    execution = execute(plan, compiled, inputs, options)
    outputs, problems = gather_outputs(plan, compiled, execution.shards, options)
    report = finish(plan, compiled, inputs, outputs, problems, execution.run_ms, options)
    n_out = len(compiled.result_layouts)
    report.device_outputs = {d.id: [execution.shards[(i, k)] for i in range(n_out)]
                             for k, d in enumerate(devices)}
    return report


def outputs_npz(report: SpmdReport) -> bytes:
    """Gathered outputs as .npz: ``out<i>``, with a leading replica axis when there are several."""
    arrays = {}
    n = len(report.outputs[0]) if report.outputs else 0
    for i in range(n):
        if len(report.outputs) == 1:
            arrays[f"out{i}"] = report.outputs[0][i]
        else:
            arrays[f"out{i}"] = np.stack([rep[i] for rep in report.outputs])
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _times(ms: list[float]) -> str:
    """Each repeat's time; min/median/max instead when there are too many to read."""
    import statistics

    if len(ms) <= 20:
        return ", ".join(f"{t:.3f}" for t in ms)
    return f"min {min(ms):.3f}, median {statistics.median(ms):.3f}, max {max(ms):.3f} over {len(ms)} runs"


def format_report(sr: SpmdReport, *, values: bool = True) -> str:
    r = sr.report
    lines = [f"{r.name}: {r.status.upper()}" + (f": {r.message}" if r.message else "")]
    lines.append(f"  devices: {sr.devices}; partitioner: {sr.partitioner}")
    if r.inputs_note:
        lines.append(f"  inputs: {r.inputs_note}")
    lines.extend(f"  parameter {p}" for p in sr.param_layouts)
    lines.extend(f"  output {o}" for o in sr.result_layouts)
    timing = f"  compile {r.compile_ms:.1f} ms, run {r.run_ms:.3f} ms"
    if len(sr.run_times) > 1:
        timing += f" (median of {len(sr.run_times)})"
    if r.reference_ms is not None:
        timing += f", reference {r.reference_ms:.1f} ms"
    lines.append(timing)
    if len(sr.run_times) > 1:
        lines.append(f"  run times (ms): {_times(sr.run_times)}")
    lines.extend(f"  {n}" for n in sr.notes if n)
    if r.max_abs_error is not None:
        at = f" at {r.max_abs_error_at}" if r.max_abs_error_at else ""
        lines.append(f"  max abs error {engine.format_error(r.max_abs_error)}{at}")
    for m in r.mismatches:
        lines.extend("  " + ln for ln in m.describe().splitlines())
    if values:
        with np.printoptions(threshold=20, edgeitems=2, precision=5, linewidth=100):
            for rep_index, outs in enumerate(sr.outputs):
                for i, o in enumerate(outs):
                    where = f"replica {rep_index} output {i}" if len(sr.outputs) > 1 else f"output {i}"
                    text = np.array2string(o, separator=", ").replace("\n", "\n      ")
                    lines.append(f"  {where} = {text}")
    return "\n".join(lines)


# ----------------------------------------------------------- several processes

@dataclass
class WorkerConfig:
    """What one process of a distributed run needs (passed to it as JSON)."""

    input: str
    input_format: str | None
    args: str | None
    options: dict[str, Any]
    num_processes: int
    process_id: int
    coordinator: str
    deadline: float          # time.time() by which the run must be over
    timeout: float
    dump_output: str | None = None


def _options_from_dict(d: dict[str, Any]) -> SpmdOptions:
    d = dict(d)
    d["arg_shardings"] = tuple(tuple(x) for x in d["arg_shardings"])
    d["xla_flags"] = tuple(tuple(x) for x in d["xla_flags"])
    d["device_ids"] = tuple(d["device_ids"])  # JSON gives lists; the options are frozen and hashable
    return SpmdOptions(**d)


def heartbeat_seconds(timeout: float) -> int:
    """How long the coordinator waits for a silent process before calling it dead."""
    return int(max(3, min(30, timeout // 4)))


def _probe(coordinator: str, deadline: float) -> None:
    """Wait until the coordinator's port accepts connections, or fail clearly by ``deadline``.

    JAX's runtime, failing to reach it, aborts the process after its own timeout
    with a stack trace; this says what is wrong in one line instead.
    """
    from .._native import jaxlib as _jaxlib

    host, _, port = coordinator.rpartition(":")
    host = host.strip("[]")
    last = ""
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=1.0):
                return
        except OSError as e:
            last = e.strerror or str(e)
        if time.time() + 0.2 >= deadline:
            raise _jaxlib.DistributedError(f"cannot reach the coordinator at {coordinator}: {last}",
                                           hint="is process 0 running, and is the address right?")
        time.sleep(0.2)


def worker(cfg: WorkerConfig) -> int:
    """One process of a distributed run; returns the exit code (process 0: the comparison's)."""
    from .. import outputs
    from .._native import jaxlib as _jaxlib
    from ..inputs import loader as inputs

    options = _options_from_dict(cfg.options)
    n, me = cfg.num_processes, cfg.process_id
    left = lambda: cfg.deadline - time.time()  # noqa: E731
    if me != 0:
        _probe(cfg.coordinator, cfg.deadline)
    _jaxlib.distributed_initialize(cfg.coordinator, n, me, options.num_devices // n,
                                   max(1, int(left())), heartbeat_seconds(cfg.timeout))
    print(f"process {me} of {n}: joined the run at {cfg.coordinator}", flush=True)
    loaded = inputs.load(cfg.input, input_format=cfg.input_format, arg_specs=cfg.args)[0]
    plan = prepare(loaded, options)
    if plan.reference_on_mesh:
        # That reference is one more SPMD run, which every process would have to join.
        plan.reference_module = None
        plan.reference_note = ("no reference: a module with manual computations is compared with itself "
                               "replicated on its mesh in one process only (give --reference-module)")
    devices = _jaxlib.local_device_order(options.num_devices)
    if len(devices) != options.num_devices:
        raise DriverError(f"the run has {len(devices)} devices, {options.num_devices} are needed")
    compiled = compile_plan(plan, options, devices)
    run_inputs = make_inputs(plan, options)
    try:
        execution = execute(plan, compiled, run_inputs, options)
    except _jaxlib.ExecutionError as e:
        if re.search(r"Gloo .*(reset by peer|Connection closed|Broken pipe|Connection refused)", e.message):
            # A peer that dies mid-collective resets its connections; one that died before the
            # collective's first connection refuses it (gloo's context initialization).
            raise _jaxlib.DistributedError("a collective lost its connection to another process "
                                           f"(it died or was killed): {e.message}") from None
        raise
    mine = sorted({dev for (_, dev) in execution.shards})
    P = options.num_partitions
    where = ", ".join(f"{d} (replica {d // P}, partition {d % P})" for d in mine)
    print(f"process {me} of {n}: devices {where}; compile {compiled.compile_ms:.1f} ms, run "
          f"{_times(execution.run_ms)} ms", flush=True)
    for (i, dev), arr in sorted(execution.shards.items()):
        print(f"process {me}:   output {i} on device {dev}: {arr.dtype}{list(arr.shape)}, "
              f"sum {np.asarray(arr, dtype=np.float64 if arr.dtype.kind != 'c' else np.complex128).sum():.6g}",
              flush=True)
    _jaxlib.kv_set(f"mlirhlo/spmd/shards/{me}", _pack(execution.shards))
    code = 0
    if me == 0:
        shards: dict[tuple[int, int], np.ndarray] = dict(execution.shards)
        for other in range(1, n):
            data = _jaxlib.kv_get(f"mlirhlo/spmd/shards/{other}", left())
            if data is None:
                raise _jaxlib.DistributedError(f"process {other} sent no outputs within the timeout "
                                               f"({cfg.timeout:g} s)")
            shards.update(_unpack(data, compiled.result_layouts, plan.results))
        outs, problems = gather_outputs(plan, compiled, shards, options)
        report = finish(plan, compiled, run_inputs, outs, problems, execution.run_ms, options)
        report.notes.insert(0, f"gathered from {n} processes")
        print(format_report(report), flush=True)
        if cfg.dump_output:
            outputs.write_atomic(cfg.dump_output, outputs_npz(report))
        code = 0 if report.report.passed else 1
    _jaxlib.distributed_shutdown()
    return code


def _pack(shards: dict[tuple[int, int], np.ndarray]) -> bytes:
    # Raw bytes, so that bf16/f8 travel without pickling; the receiver knows dtypes and shapes.
    buf = io.BytesIO()
    np.savez(buf, **{f"{i}/{d}": np.frombuffer(np.ascontiguousarray(a).tobytes(), np.uint8)
                     for (i, d), a in shards.items()})
    return buf.getvalue()


def _unpack(data: bytes, layouts: list[Layout], specs: list[Any]) -> dict[tuple[int, int], np.ndarray]:
    out = {}
    with np.load(io.BytesIO(data)) as z:
        for key in z.files:
            i, d = (int(x) for x in key.split("/"))
            out[(i, d)] = z[key].view(engine.np_dtype(specs[i].dtype)).reshape(layouts[i].shard_shape)
    return out


def _watchdog(cfg: WorkerConfig) -> None:
    """Ends a worker whose supervisor is gone: a hung collective must not outlive the run."""
    time.sleep(max(0.0, cfg.deadline - time.time()) + 2 * _GRACE_S)
    sys.stderr.write(f"error: process {cfg.process_id}: timed out after {cfg.timeout:g} s (--timeout)\n")
    sys.stderr.flush()
    os._exit(1)


def worker_main(argv: list[str]) -> None:
    """``python -m mlirhlo_driver.execute.spmd CONFIG_JSON``: run one process, exit with its code."""
    cfg = WorkerConfig(**json.loads(argv[0]))
    # Ctrl-C reaches the whole process group; the supervisor stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watchdog, args=(cfg,), daemon=True).start()
    try:
        code = worker(cfg)
    except DriverError as e:
        sys.stderr.write(e.format() + "\n")
        code = e.exit_code
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip jax's atexit shutdown: after a failure it would wait for the peers
    # (or abort); on success distributed_shutdown() has already run.
    os._exit(code)


# ------------------------------------------------------------- supervision

_JOINED = re.compile(r"^process \d+ of \d+: joined ")
_ABSL_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\] ")
# gloo's retry log: "[Gloo] ..." in jaxlib 0.10.2, "[external/gloo/..." in 0.9,
# "[external/xla++third_party_ext+gloo/gloo/..." in 0.12.
_GLOO_LOG = re.compile(r"^\[(Gloo\] |external/[^\]]*gloo/)")
_STACK_LINE = re.compile(r"^\s*@\s+0x[0-9a-f]+|^\*\*\* (Check failure stack trace|SIGABRT received)")


class _Relay:
    """Copies a worker's output to ours line by line (with a prefix), minus native noise.

    Native log lines are kept aside: when the worker dies, they say why.
    """

    def __init__(self, proc: subprocess.Popen, prefix: str, lock: threading.Lock) -> None:
        self.proc, self.prefix, self.lock = proc, prefix, lock
        self.native: list[str] = []
        self.joined = False
        self.threads = [threading.Thread(target=self._pump, args=(proc.stdout, sys.stdout), daemon=True),
                        threading.Thread(target=self._pump, args=(proc.stderr, sys.stderr), daemon=True)]
        for t in self.threads:
            t.start()

    def _pump(self, stream: Any, out: Any) -> None:
        from .._native import jaxlib as _jaxlib

        native_block = False
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            if _jaxlib.is_native_noise(line) or _GLOO_LOG.match(line) or _STACK_LINE.match(line):
                continue
            if _ABSL_LINE.match(line):
                native_block = True
                self.native.append(line)
                continue
            if native_block and out is sys.stderr and not line.startswith("error: "):
                self.native.append(line)  # continuation of a multi-line native message
                continue
            native_block = False
            if out is sys.stdout and _JOINED.match(line):
                self.joined = True
            with self.lock:
                out.write(self.prefix + line + "\n")
                out.flush()

    def join(self) -> None:
        for t in self.threads:
            t.join(timeout=5)


def explain_death(returncode: int, native: list[str], cfg: WorkerConfig) -> str:
    """Why a worker that did not exit by itself died, from what the runtime logged."""
    text = "\n".join(native)
    if "RegisterTask" in text:
        return (f"not all {cfg.num_processes} processes joined the coordinator at {cfg.coordinator} "
                f"within {cfg.timeout:g} s")
    m = re.search(r"stopped sending heartbeats\):\s*(\d[\d\s,]*)", text) or \
        re.search(r"Task (\d+) heartbeat timeout", text) or \
        re.search(r"stopped sending heartbeats\):\s*/job:\w+/replica:\d+/task:(\d+)", text)  # jaxlib 0.9
    if m:
        ids = ", ".join(x for x in re.split(r"[\s,]+", m.group(1)) if x)
        return f"process {ids} stopped responding (it died or was killed)"
    if re.search(r"Connection reset by peer|failed to connect|Socket closed|UNAVAILABLE", text):
        return f"lost contact with the coordinator at {cfg.coordinator} (process 0 died, or the network failed)"
    fatal = [ln for ln in native if ln.startswith("F")]
    detail = _ABSL_LINE.sub("", fatal[-1]) if fatal else ""
    name = processes.signal_name(-returncode) if returncode < 0 else None
    how = f"killed by {name}" if name else f"exit code {returncode}"
    return f"the process died ({how})" + (f": {detail}" if detail else "")


def _spawn(cfg: WorkerConfig) -> subprocess.Popen:
    # Unbuffered: the relay passes each line on as the worker prints it.
    return processes.start_python("mlirhlo_driver.execute.spmd", json.dumps(asdict(cfg)),
                                  env={"PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _stop(procs: list[subprocess.Popen]) -> None:
    processes.stop(procs, timeout=10)  # SIGKILL: gloo and gRPC threads ignore anything gentler


# How long past the deadline a supervisor waits for a worker to report its own timeout.
_GRACE_S = 3.0


def supervise(cfgs: list[WorkerConfig], *, prefixed: bool,
              on_start: Callable[[int, int], None] | None = None) -> int:
    """Run one worker per config; relay their output; stop them all at the first failure.

    Returns the exit code: process 0's when all succeed, else the first failing
    one's (1 for a death or timeout). Every failure is explained in one
    ``error:`` line naming the process.
    """
    lock = threading.Lock()
    procs: list[subprocess.Popen] = []
    relays: list[_Relay] = []
    first_failure: tuple[int, int] | None = None      # (process, code)
    message = ""
    try:
        for cfg in cfgs:
            proc = _spawn(cfg)
            procs.append(proc)
            relays.append(_Relay(proc, f"[{cfg.process_id}] " if prefixed else "", lock))
            if on_start is not None:
                on_start(cfg.process_id, proc.pid)
        deadline = max(c.deadline for c in cfgs) + _GRACE_S
        while True:
            codes = [p.poll() for p in procs]
            for i, code in enumerate(codes):
                if code not in (None, 0) and first_failure is None:
                    first_failure = (i, code)
            if first_failure is not None or all(c is not None for c in codes):
                break
            if time.time() > deadline:
                waiting = [i for i, c in enumerate(codes) if c is None]
                cfg = cfgs[waiting[0]]
                if not all(relays[i].joined for i in waiting):
                    message = (f"not all {cfg.num_processes} processes joined the coordinator at "
                               f"{cfg.coordinator} within {cfg.timeout:g} s (--timeout)")
                else:
                    ids = ", ".join(str(cfgs[i].process_id) for i in waiting)
                    message = (f"timed out after {cfg.timeout:g} s (--timeout); process"
                               f"{'es' if len(waiting) > 1 else ''} {ids} still running "
                               "(waiting on a process that stopped responding?)")
                first_failure = (waiting[0], 1)
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        _stop(procs)
        for r in relays:
            r.join()
        from .._native import interrupts

        interrupts.report("; stopped every process")
        return EXIT_INTERRUPTED
    if first_failure is not None and first_failure[1] in (1, 2):
        # A peer's death often makes the others fail at once (a collective's
        # connection resets): give them a moment, and blame the one that died.
        end = time.time() + 0.5
        while time.time() < end and any(p.poll() is None for p in procs):
            time.sleep(0.05)
        died = [(i, p.returncode) for i, p in enumerate(procs)
                if p.returncode is not None and (p.returncode < 0 or p.returncode > 2)]
        if died:
            first_failure = died[0]
    _stop(procs)
    for r in relays:
        r.join()
    if first_failure is None:
        return procs[0].returncode
    index, code = first_failure
    cfg, relay = cfgs[index], relays[index]
    others = "; stopped the other processes" if len(cfgs) > 1 else ""
    # jaxlib 0.9's runtime ends a process whose peer died with exit code 1 (a QFATAL
    # log line), not an abort: that is a death too, not a failure the worker reported.
    terminated = code == 1 and any(ln.startswith("F") and "Terminating process" in ln
                                   for ln in relay.native)
    if not message and (code < 0 or code > 2 or terminated):  # died without saying why
        message = f"process {cfg.process_id}: {explain_death(code, relay.native, cfg)}"
    elif not message:  # it said why itself
        message = f"process {cfg.process_id} failed" if others else ""
    if message:
        sys.stderr.write(f"error: {message}{others}\n")
        sys.stderr.flush()
    return code if 0 < code <= 2 else 1


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_configs(source: str, input_format: str | None, args: str | None, options: SpmdOptions,
                   *, num_processes: int, process_ids: list[int], coordinator: str, timeout: float,
                   dump_output: str | None) -> list[WorkerConfig]:
    deadline = time.time() + timeout
    return [WorkerConfig(source, input_format, args, asdict(options), num_processes, pid, coordinator,
                         deadline, timeout, dump_output if pid == 0 else None)
            for pid in process_ids]


if __name__ == "__main__":  # a worker process
    worker_main(sys.argv[1:])
