"""``mlirhlo fit``: will a program fit? One device-less compile per target (TPU slices,
GPU specs), each a :class:`FitRow`: the devices, the per-device requirement, the capacity,
the headroom and the verdict.

The requirement is the ``memory`` stage's "total" (tpu.memory.peak_bytes: arguments and
outputs less what they share, temporaries and code, per device), the figure that stage's
fits/does-not-fit verdict reads; XLA's own heap peak (``peak_memory_in_bytes``) is kept
beside it. The capacity is the TPU generation's HBM (``tpu_specs/``, over the devices a
chip is) or the GPU spec's ``device_memory_size``. A TPU compile libtpu refuses for HBM is
a row with XLA's numbers (its "required" and "available"), not an error; a target whose
compile fails otherwise is a row with the error (``error``), and the others still come.

Targets compile here, one after another (``jobs`` 0), or one per task in the shared worker
pool (``jobs`` N, _native/pool.py) or on a Dask cluster (``scheduler``), as ``opt``'s
modules do: each worker has its own TPU compile process (libtpu, with
``ALLOW_MULTIPLE_LIBTPU_LOAD``), so TPU compiles run side by side.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import CompileError, DriverError, InputError, NativeCrash, ToolchainError, param


@dataclass(frozen=True)
class FitRow:
    """One target's answer. Sizes are bytes per device; None where unknown."""

    target: str                   # the target's label: "v5e:2x2", "h100_sxm"
    platform: str                 # "tpu" or "cuda"
    devices: int                  # devices of the slice (TPU), or the devices compiled for (CUDA)
    partitions: int               # devices the program was compiled for (1: unpartitioned)
    required_bytes: int | None    # per device: the memory stage's total, or XLA's figure when refused
    capacity_bytes: int | None    # per device: HBM (tpu_specs) or the GPU spec's memory
    fits: bool | None             # None: unknown capacity, or the compile failed (error)
    xla_peak_bytes: int | None = None   # XLA's heap peak (peak_memory_in_bytes), when compiled
    temp_bytes: int | None = None       # temporaries, when compiled
    argument_bytes: int | None = None   # arguments, when compiled
    source: str = "compile"       # "compile": the executable's figures; "xla-oom": libtpu refused it
    detail: str = ""              # XLA's refusal, the capacity's source, or the error

    @property
    def headroom_bytes(self) -> int | None:
        """Capacity less requirement (negative: over by that much)."""
        if self.required_bytes is None or self.capacity_bytes is None:
            return None
        return self.capacity_bytes - self.required_bytes

    @property
    def error(self) -> bool:
        return self.source == "error"

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "platform": self.platform, "devices": self.devices,
                "partitions": self.partitions, "required_bytes": self.required_bytes,
                "capacity_bytes": self.capacity_bytes, "headroom_bytes": self.headroom_bytes, "fits": self.fits,
                "xla_peak_bytes": self.xla_peak_bytes, "temp_bytes": self.temp_bytes,
                "argument_bytes": self.argument_bytes, "source": self.source, "detail": self.detail}


@dataclass(frozen=True)
class FitJob:
    """What every task shares (pickled to workers)."""

    source: str
    input_format: str | None = None
    args: str | None = None
    num_partitions: int | None = None
    cache: bool = True
    # Without the cache every target compiles: each worker starts the TPU process for this
    # target as it starts, not after its first task has read the program (worker_init).
    tpu: Any = None


@dataclass(frozen=True)
class FitTask:
    index: int
    target: Any
    source: str                 # the program, as given (a Dask task carries its bytes: _native.cluster)
    data: bytes | None = None
    # What a JAX function is lowered for (core.program.InputOptions.lower_for): the first
    # slice of the target's generation (the lowering is the same for every slice of one), so
    # targets here share one lowering per generation, as opt's do.
    lower_for: tuple[Any, ...] | None = None


# XLA's sizes in its refusal ("(51.53G)"): HumanReadableNumBytes, powers of 1024.
_XLA_SIZE = {"": 1, "B": 1, "K": 1 << 10, "KI": 1 << 10, "M": 1 << 20, "MI": 1 << 20, "G": 1 << 30, "GI": 1 << 30,
             "T": 1 << 40, "TI": 1 << 40}
_REFUSAL = re.compile(r"required for .*?\(([\d.]+)\s*([KMGT]i?)?B?\) exceeds available HBM \(([\d.]+)\s*([KMGT]i?)?B?\)"
                      # libtpu 0.0.34 (jax 0.9's pin): "Used 16.00G of 15.75G hbm"
                      r"|Used ([\d.]+)\s*([KMGT]i?)?B? of ([\d.]+)\s*([KMGT]i?)?B? hbm", re.I)


def xla_refusal_bytes(text: str) -> tuple[int, int] | None:
    """(required, available) bytes from XLA's HBM refusal ("... temporaries (32.00G) exceeds
    available HBM (15.75G)"), to XLA's two decimals; None where the text has no such figures."""
    m = _REFUSAL.search(text)
    if m is None:
        return None

    def size(number: str, unit: str | None) -> int:
        return int(float(number) * _XLA_SIZE[(unit or "").upper()])

    g = m.groups()[:4] if m.group(1) is not None else m.groups()[4:]
    return size(g[0], g[1]), size(g[2], g[3])


def _capacity(target: Any) -> tuple[int | None, str]:
    if target.platform == "tpu":
        from ..tpu import memory

        return memory.capacity_bytes(target)
    spec = target.spec
    if spec is not None and spec.memory_bytes:
        return int(spec.memory_bytes), f"device_memory_size of {spec.name} ({spec.path.name})"
    return None, "the GPU spec gives no device_memory_size"


def _devices(target: Any, partitions: int) -> int:
    return target.topology.devices if target.topology is not None else partitions


# The compile's note on a sharded module (xla.backend.stage_spec), and libtpu's refusal of a
# slice too small for it (_native.jaxlib.tpu_compile_only_devices).
_PARTITIONS = re.compile(r"compiled for (\d+) partitions|this compile needs (\d+)")


def _partitions(compiled: Any, error: str = "") -> int:
    """The devices the program was compiled for: as the compile's notes say (read without
    parsing the module here: an HLO input goes to XLA as it was read)."""
    for text in [*compiled.notes, error]:
        m = _PARTITIONS.search(text)
        if m:
            return int(m.group(1) or m.group(2))
    return 1


def measure(job: FitJob, task: FitTask, loaded: dict[Any, list[Any]] | None = None) -> FitRow:
    """One target's row: compile (or read the cache), read its memory figures. A bad input
    raises (InputError and the like: the same for every target); a compile that fails is a
    row (``source`` "xla-oom" for an HBM refusal, else "error")."""
    import json

    from ..core.compiled import Compiled
    from ..core.program import InputOptions, programs, unit_programs
    from ..tpu import memory

    target = task.target
    options = InputOptions(job.input_format, False, job.args, lower_for=task.lower_for)
    found = (loaded or {}).get(task.lower_for)
    if found is None:
        found = programs([task.source], options) if task.data is None else \
            unit_programs(task.source, options, data=task.data)
        if loaded is not None:
            loaded[task.lower_for] = found
    if len(found) != 1:
        raise InputError(f"fit measures one module; '{job.source}' holds {len(found)}",
                         hint="give one module (a file, or package.module:function with --args)")
    program = found[0]
    if not job.cache:
        program.identity = None
    stage_options = target.options(num_partitions=job.num_partitions)
    capacity, where = _capacity(target)
    label = target.label()
    compiled = Compiled(program, target, stage_options, cache=job.cache)
    # Only the memory figures, which the executable gives: without it the compile dumps every
    # format (HLO text, HTML, DOT, proto, the executable's module), 1.5x the compile's time.
    compiled.expect(["memory-usage"])
    try:
        stats = json.loads(compiled.stage("memory-usage"))
    except (CompileError, NativeCrash) as e:  # this target's compile: a row, and the sweep goes on
        partitions = _partitions(compiled, e.message)
        text = e.text()
        refused = xla_refusal_bytes(text) if target.platform == "tpu" else None
        if refused is not None or (target.platform == "tpu" and "does not fit" in text):
            # XLA's numbers: what it required and the HBM it had (its own, a little under the spec's).
            required, available = refused if refused is not None else (None, capacity)
            why = e.message.split(": ", 1)[1] if e.message.startswith("does not fit on ") else e.message
            return FitRow(label, target.platform, _devices(target, partitions), partitions, required, available,
                          False, source="xla-oom", detail=f"XLA: {why}")
        return FitRow(label, target.platform, _devices(target, partitions), partitions, None, capacity, None,
                      source="error", detail=e.message)
    partitions = _partitions(compiled)
    required = memory.peak_bytes(stats)
    return FitRow(label, target.platform, _devices(target, partitions), partitions, required, capacity,
                  None if capacity is None else required <= capacity,
                  xla_peak_bytes=stats.get("peak_memory_in_bytes"), temp_bytes=stats.get("temp_size_in_bytes"),
                  argument_bytes=stats.get("argument_size_in_bytes"), detail=where)


# In a worker: the program read (or lowered) once per job and generation, as a sweep here reads
# it (a 16-block training step: 0.2 s a read, six times over six targets).
_worker_loaded: dict[FitJob, dict[Any, list[Any]]] = {}


def worker_task(job: FitJob, task: FitTask) -> FitRow | DriverError:
    """In a worker: the row, or the input's error (sent back, raised there)."""
    if task.data is not None:  # a cluster's task carries the bytes: read from them
        loaded = None
    else:
        if job not in _worker_loaded:
            _worker_loaded.clear()  # one job at a time
        loaded = _worker_loaded.setdefault(job, {})
    try:
        return measure(job, task, loaded)
    except DriverError as e:
        return e


def resolve(tpu_topology: str | None, gpu_spec: str | None) -> list[Any]:
    """The targets of a sweep: every TPU topology of ``tpu_topology`` (a comma list), then
    every GPU spec of ``gpu_spec``; checked before anything loads."""
    from .. import targets

    if not tpu_topology and not gpu_spec:
        raise DriverError(f"fit needs targets: give {param('tpu_topology')} and/or {param('gpu_spec')}",
                          hint="--tpu-topology v5e:2x2,v5p:2x2x1 --gpu-spec h100_sxm")
    found: list[Any] = []
    if tpu_topology is not None:
        found += list(targets.resolve("tpu", tpu_topology=tpu_topology))
    if gpu_spec is not None:
        found += list(targets.resolve("cuda", gpu_spec=gpu_spec))
    return list(dict.fromkeys(found))


def run(source: str, target_list: Sequence[Any], *, input_format: str | None = None, args: str | None = None,
        num_partitions: int | None = None, cache: bool = True, jobs: int = 0, scheduler: str | None = None,
        timeout: float | None = None, progress: Callable[[Any], None] | None = None) -> list[FitRow]:
    """One :class:`FitRow` per target, in the order given. ``jobs`` 0 compiles here, one
    target after another; N > 0 in N workers of the shared pool; ``scheduler`` on a Dask
    cluster. A bad input raises its DriverError (the first target's)."""
    from ..core.progress import report as tell

    if jobs < 0:
        raise DriverError(f"{param('jobs')} must be >= 0")
    if num_partitions is not None and num_partitions < 1:
        raise DriverError(f"{param('num_partitions')} must be >= 1")
    if not target_list:
        raise DriverError("fit needs at least one target")
    job = FitJob(source, input_format, args, num_partitions, cache,
                 None if cache else next((t for t in target_list if t.platform == "tpu"), None))
    from ..inputs.loader import is_jax_input

    # A JAX function is lowered once per generation; a file reads the same for every target:
    # once per process (a 16-block step's MLIR: ~0.1 s a read, four generations in a sweep).
    lowered = is_jax_input(source, input_format)
    first: dict[str, tuple[Any, ...] | None] = {}
    for t in target_list:
        first.setdefault(t.topology.generation if t.topology is not None else "", t.lower_for() if lowered else None)
    tasks = [FitTask(i, t, source, lower_for=first[t.topology.generation if t.topology is not None else ""])
             for i, t in enumerate(target_list)]
    rows: dict[int, FitRow] = {}
    if jobs == 0 and scheduler is None:
        _prestart(job)
        loaded: dict[Any, list[Any]] = {}  # read (or lowered) once per generation
        for task in tasks:
            tell(progress, len(rows), len(tasks), task.target.label())
            rows[task.index] = measure(job, task, loaded)
        return [rows[i] for i in range(len(tasks))]
    from .._native import cluster, pool

    # The largest slices first (their compiles take longest): the workers finish together
    # instead of one compiling v5e:4x4 alone at the end.
    queued = sorted(tasks, key=lambda t: -(t.target.topology.devices if t.target.topology is not None else 1))
    results = cluster.imap_anywhere("mlirhlo_driver.batch.fit:worker_task", job, queued, jobs=jobs, timeout=timeout,
                                    init="mlirhlo_driver.batch.fit:worker_init", scheduler=scheduler)
    try:
        for position, result in results:
            task = queued[position]
            index = task.index
            if isinstance(result, pool.Lost):
                result = FitRow(task.target.label(), task.target.platform, 0, 0, None, _capacity(task.target)[0],
                                None, source="error", detail=result.message)
            elif isinstance(result, DriverError):
                raise result
            rows[index] = result
            tell(progress, len(rows), len(tasks), task.target.label())
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    return [rows[i] for i in range(len(tasks))]


def worker_init(job: FitJob) -> None:
    """Once per worker: jaxlib's MLIR context, and without the cache the TPU compile process
    (with the cache it starts on the first miss; the CUDA plugin with the first CUDA compile)."""
    from .._native import jaxlib as _jaxlib

    _prestart(job)
    _jaxlib.ir_context()


def _prestart(job: FitJob) -> None:
    """The TPU process of ``job.tpu``'s compiles, started now, as the stage would start it on
    its first miss (core.compiled): it loads jaxlib and libtpu (~0.35 s) while this process
    imports and reads the program, instead of after."""
    if job.tpu is None:
        return
    from ..registry import stages
    from ..xla import backend
    from ..xla.stages import dumps_for_stages

    backend.prestart(job.tpu, dumps_for_stages(stages(), ("memory-usage",), platform="tpu"))


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{sign}{n / scale:.2f} {unit}"
    return f"{sign}{n} B"


def table(rows: Sequence[FitRow]) -> str:
    """The rows as a table (rich), then a line per refused or failed target with XLA's words.
    "required" is what the verdict reads (the memory stage's total); "XLA peak" XLA's heap
    peak, shown beside it (on TPU it can be above or below the total)."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name, justify in (("target", "left"), ("devices", "right"), ("partitions", "right"),
                          ("required/device", "right"), ("XLA peak", "right"), ("capacity/device", "right"),
                          ("headroom", "right"), ("fits", "left")):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        fits = "error" if r.error else "?" if r.fits is None else "yes" if r.fits else "no"
        if r.source == "xla-oom":
            fits += " (XLA)"
        t.add_row(r.target, str(r.devices) if r.devices else "-", str(r.partitions) if r.partitions else "-",
                  _size(r.required_bytes), _size(r.xla_peak_bytes), _size(r.capacity_bytes),
                  _size(r.headroom_bytes), fits)
    buf = io.StringIO()
    Console(file=buf, width=1000, no_color=True, highlight=False, emoji=False, markup=False).print(t)
    lines = [line.rstrip() for line in buf.getvalue().splitlines()]
    for r in rows:
        if r.source != "compile":
            lines.append(f"{r.target}: {r.detail}")
    return "\n".join(lines) + "\n"


def to_json(rows: Sequence[FitRow]) -> str:
    import json

    return json.dumps({"targets": [r.to_dict() for r in rows]}, indent=2) + "\n"


def exit_code(rows: Sequence[FitRow], *, require_fit: bool = False) -> int:
    """0 when every target compiled or was refused for memory; 1 when a compile failed
    otherwise, or (``require_fit``) when a target does not fit or its fit is unknown."""
    if any(r.error for r in rows):
        return 1
    if require_fit and any(r.fits is not True for r in rows):
        return 1
    return 0




PLOT_FORMATS = ("png", "svg", "pdf")


def check_plot_path(path: str) -> None:
    """Before any compile: the picture's format (its extension) and matplotlib (the ``plot``
    extra)."""
    import importlib.util
    from pathlib import Path

    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        raise DriverError(f"{param('plot')}: '{path}' has no picture extension",
                          hint="one of " + ", ".join(f".{e}" for e in PLOT_FORMATS))
    if importlib.util.find_spec("matplotlib") is None:
        raise ToolchainError(f"{param('plot')} draws with matplotlib, which is not installed",
                             hint="pip install 'mlirhlo-driver[plot]'")


def plot(rows: Sequence[FitRow], path: str, title: str = "") -> None:
    """A picture of the sweep at ``path`` (.png, .svg or .pdf): per target, a bar of the
    per-device requirement against a mark at its capacity, green where it fits, red where
    not, grey where unknown; XLA's refusals hatched."""
    import io
    from pathlib import Path

    # A Figure of its own, not pyplot: no display, and the caller's backend stays as it was.
    from matplotlib.figure import Figure

    from .. import outputs

    check_plot_path(path)
    fig = Figure(figsize=(8, 0.5 * len(rows) + 1.5), layout="constrained")
    ax = fig.add_subplot()
    labels = [r.target for r in rows]
    gib = float(1 << 30)
    for y, r in enumerate(rows):
        color = "#9e9e9e" if r.fits is None else "#2e7d32" if r.fits else "#c62828"
        if r.required_bytes is not None:
            ax.barh(y, r.required_bytes / gib, color=color, hatch="//" if r.source == "xla-oom" else None,
                    edgecolor="black", linewidth=0.5)
        if r.capacity_bytes is not None:
            ax.plot([r.capacity_bytes / gib] * 2, [y - 0.4, y + 0.4], color="black", linewidth=2)
        if r.error:
            ax.text(0, y, "  compile failed", va="center", fontsize=8)
    values = [v for r in rows for v in (r.required_bytes, r.capacity_bytes) if v]
    if values and min(values) < max(values) / 100:  # a small program beside GiB of HBM: a log axis shows both
        ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("GiB per device (bar: required; line: capacity)")
    ax.set_title(title or "will it fit?")
    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lower().lstrip("."))
    outputs.write_atomic(path, buf.getvalue())
