"""The Python API, in the style of JAX's ``Lowered``/``Compiled``.

Example::

    import mlirhlo_driver as mh

    p = mh.load("dump/module_0001.jit_f.before_optimizations.txt")  # any input the CLI reads
    p = mh.from_jax(f, *example_args)                                 # a JAX function
    q = p.optimize("canonicalize,cse")    # a --passes list, a textual pipeline or "@name"
    q.as_text(); q.as_text("hlo")         # MLIR-level stages need no compile
    t = mh.Target.cuda("h100_sxm", xla_flags={"xla_gpu_autotune_level": 0})  # or mh.Target.cpu()
    c = q.compile(t)                      # one XLA compile serves every stage
    c.stage("ptx"); list(c.stages); c.kernels(); c.write("out/", stages=["ptx", "sass"])
    r = p.run(reference="interpreter")    # r.ok, r.mismatches, r.outputs

A :class:`Program` holds one StableHLO module and never changes: every stage is
a function of (module, options), so results can be cached or computed in worker
processes without hidden state. Errors are the package's typed errors
(``mlirhlo_driver.errors``), with file, line and column where they have one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import registry
from .errors import DriverError, InputError
from .inputs import loader as inputs
from .mlir import pipeline
from .stages.base import StageRequest
from .targets import Target

__all__ = ["CONVERT_FORMATS", "Compiled", "Program", "Target", "check_format", "compile", "convert",
           "from_jax", "llvm_to_ptx", "load", "load_all"]


@dataclass
class Program(inputs.LoadedModule):
    """One StableHLO module, as loaded or after a pipeline; never changed in place.

    It is the loader's module (``name``, ``source``, ``format``, ``module``,
    ``line_offset``, ``hlo_proto``), so every part of the library takes it as is,
    with the pipeline run that made it (``last_run``, None for a loaded one).
    """

    last_run: pipeline.PipelineRun | None = field(default=None, repr=False)

    @property
    def input_format(self) -> str:
        """The format it was read from (``hlo``, ``mlir``, ``jax``, ...)."""
        return self.format

    def optimize(self, spec: str | None = None, *, passes: str | None = None,
                 pipeline_file: str | None = None,
                 instrumentation: pipeline.Instrumentation | None = None,
                 reproducer_dir: str | None = None) -> Program:
        """A new Program: this module after a pass pipeline; this one is unchanged.

        ``spec`` is MLIR's textual pipeline (``builtin.module(func.func(cse))``), a
        shipped or user pipeline by ``@name``, or hlo-opt's comma list of pass names
        (``canonicalize,cse``, each nested at its anchor); ``passes`` and
        ``pipeline_file`` say the last two explicitly. No pipeline: a copy.
        Raises PipelineError for an unknown pass or bad syntax, PassFailure when a
        pass fails (with the reproducer's path under ``reproducer_dir``).
        """
        from .ir import emit

        if spec is not None and passes is None and pipeline_file is None and _is_pass_list(spec):
            spec, passes = None, spec
        root = pipeline.resolve(spec, passes=passes, pipeline_file=pipeline_file)
        copy = emit.clone(self.module)
        if root is None:
            return self._with(copy, None)
        # The pipeline runs on a copy: this program's own module is the one before it.
        run = pipeline.run(copy, root, instrumentation=instrumentation, module_name=self.name,
                           reproducer_dir=reproducer_dir, source_for_reproducer=self.source,
                           remake=lambda: self.module, line_offset=self.line_offset)
        return self._with(copy, run)

    def stage(self, name: str = "stablehlo", *, debug_info: bool = False,
              target_version: str | None = None) -> str | bytes:
        """The module at an MLIR-level stage (``registry.available(None)``): text, or
        bytes for ``stablehlo-bytecode`` and ``vhlo``. StageError for an XLA stage:
        those come from :meth:`compile`."""
        from .stages.base import StageOptions

        options = StageOptions(debug_info=debug_info, target_version=target_version)
        out = registry.request(self.module, self.name, options).produce(name)
        assert not isinstance(out, dict)
        return out

    def as_text(self, dialect: str = "stablehlo", *, debug_info: bool = False) -> str:
        """Text of the module: ``stablehlo``, ``mhlo``, or ``hlo`` (as XLA receives it)."""
        stage = {"stablehlo": "stablehlo", "mhlo": "mhlo", "hlo": "hlo-before-optimizations"}.get(dialect)
        if stage is None:
            raise InputError(f"unknown dialect '{dialect}' (stablehlo, mhlo, hlo)")
        out = self.stage(stage, debug_info=debug_info)
        assert isinstance(out, str)
        return out

    def convert(self, fmt: str, *, target_version: str | None = None) -> str | bytes:
        """The module in ``fmt`` (one of :data:`CONVERT_FORMATS`); see :func:`convert`."""
        return convert(self, fmt, target_version=target_version)

    def compile(self, target: Target | None = None) -> Compiled:
        """XLA's compile of this module for ``target`` (default: ``Target.cpu()``).

        Nothing compiles yet: the first XLA stage asked of the result compiles,
        once, and every later stage reads that compile. A CUDA target compiles
        device-less. DriverError for a target of several GPU specs.
        """
        target = target if target is not None else Target.cpu()
        return Compiled(self, target, registry.request(
            self.module, self.name, target.options(), source=self.source, line_offset=self.line_offset))

    def diff(self, target_a: Target, target_b: Target | None = None, *, other: Program | None = None,
             stage: str | None = None) -> dict[str, Any]:
        """Two compiles side by side, as ``mlirhlo diff --json`` gives them: this module
        for ``target_a``, and ``other`` (default: this module) for ``target_b`` (default:
        ``target_a``). The keys: ``a``, ``b``, ``fusions``, ``kernels`` (None on CPU),
        ``memory``, ``buffers``, ``stage`` (a unified diff of ``stage``, names
        renumbered; None without one) and ``identical``; see ``batch.diff.compare``.
        """
        from .batch import diff

        if stage is not None:
            stage = registry.get(stage, target_a.platform).name
        side_a = diff.side(self, target_a, stage)
        side_b = diff.side(other if other is not None else self, target_b or target_a, stage)
        return diff.compare(side_a, side_b)

    def run(self, target: Target | None = None, *, reference: str = "interpreter", seed: int = 0,
            rtol: float | None = None, atol: float | None = None, inputs_npz: str | None = None,
            zeros: bool = False, bisect: bool = False, bisect_passes: bool = False,
            fold_constants: bool = False) -> Any:
        """Compile for ``target`` (default: CPU), execute on generated inputs (``seed``,
        ``zeros``, or the arrays of ``inputs_npz``), and compare with ``reference``:
        ``"interpreter"`` (StableHLO's), ``"cpu"`` (XLA CPU) or ``"none"``.

        Returns the run's report (``execute.run.ModuleReport``): ``ok``, ``status``,
        ``mismatches``, ``outputs``, ``reference_outputs``, ``inputs``; with ``bisect``,
        the first op whose value diverges (``bisect``); with ``bisect_passes``, the XLA
        HLO passes whose disabling makes a mismatch match (``pass_bisect``,
        ``execute.pass_bisect.PassBisect``; None when the module matched). A self-checking module runs
        its ``check.*`` assertions instead (``checks``). A CUDA target needs a GPU.
        """
        from .execute import run as run_mod

        target = target if target is not None else Target.cpu()
        if reference not in run_mod.REFERENCES:
            raise DriverError(f"unknown reference '{reference}'", hint=", ".join(run_mod.REFERENCES))
        options = run_mod.RunOptions(platform=target.platform, reference=reference, seed=seed, zeros=zeros,
                                     inputs_npz=inputs_npz, rtol=rtol, atol=atol, bisect=bisect,
                                     bisect_passes=bisect_passes, fold_constants=fold_constants, keep_outputs=True,
                                     xla_flags=target.xla_flags)
        return run_mod.run_module(self.module, self.name, self.source, options, self.line_offset)

    def run_spmd(self, *, num_partitions: int = 1, num_replicas: int = 1, reference: str = "cpu",
                 partitioner: str | None = None, seed: int = 0, rtol: float | None = None,
                 atol: float | None = None, xla_flags: dict[str, Any] | None = None) -> Any:
        """Run SPMD-partitioned on ``num_replicas x num_partitions`` CPU devices of
        this process, as XLA's multihost_hlo_runner does on one host, and compare
        the gathered outputs with ``reference`` (``"cpu"``: the unpartitioned module).

        Returns ``execute.spmd.SpmdReport``: ``report`` (the ModuleReport), the
        layouts, ``outputs`` per replica. The host devices must be asked for before
        jax first starts in this process: DriverError if it already runs with fewer.
        """
        from ._native import jaxlib as _jaxlib
        from .execute import spmd
        from .xla import flags as xla_flags_mod

        flags = xla_flags_mod.merge({}, xla_flags_mod.from_environment(), dict(xla_flags or {}))
        if flags:
            xla_flags_mod.check_names(flags, xla_flags_mod.known_names())
        options = spmd.SpmdOptions(num_partitions=num_partitions, num_replicas=num_replicas,
                                   partitioner=partitioner, seed=seed, rtol=rtol, atol=atol,
                                   reference=reference, xla_flags=tuple(sorted(flags.items())))
        spmd.check_options(options)
        _jaxlib.ensure_cpu_devices(options.num_devices)
        return spmd.run_in_process(self, options)

    def _with(self, module: Any, run: pipeline.PipelineRun | None) -> Program:
        # A pipeline's result: HLO text/proto read in no longer describe it.
        return Program(self.name, self.source, self.format, module, self.line_offset, last_run=run)


def _is_pass_list(spec: str) -> bool:
    """``a,b,c`` (hlo-opt's --passes), not a textual pipeline or ``@name``."""
    return not spec.startswith("@") and "(" not in spec and "{" not in spec


class _Stages(Mapping):
    """A Compiled's stages by name, each produced when first read (``Compiled.stages``)."""

    def __init__(self, compiled: Compiled) -> None:
        self._compiled = compiled

    def __getitem__(self, name: str) -> str | bytes | dict[str, bytes]:
        if name not in self._names():
            raise KeyError(name)
        return self._compiled.stage(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> list[str]:
        return [s.name for s in registry.all_for(self._compiled.platform)]


@dataclass
class Compiled:
    """A module compiled by XLA for one target; every stage reads the same compile."""

    program: Program
    target: Target
    request: StageRequest = field(repr=False)

    @property
    def platform(self) -> str:
        """``cpu`` or ``cuda``."""
        return self.target.platform  # type: ignore[return-value]

    @property
    def stages(self) -> Mapping[str, str | bytes | dict[str, bytes]]:
        """Every stage this target has (``--stage all``), by name, in pipeline order;
        a stage is produced when first read, like Triton's ``CompiledKernel.asm``."""
        return _Stages(self)

    def stage(self, name: str) -> str | bytes | dict[str, bytes]:
        """One stage's output, MLIR-level or XLA's; the first XLA stage compiles, once.

        Text for text stages, bytes for binary ones, and {part: bytes} for the
        multi-file ``cubin`` (per kernel module) and ``triton-passes`` (per Triton
        fusion). StageError for a stage this platform lacks.
        """
        return self.request.produce(name)

    def kernels(self) -> list[Any] | None:
        """Per CUDA kernel (``cuda.kernels.KernelRow``): registers, spills, shared and
        local memory, launch dimensions, occupancy on the spec's GPU, and its source:
        the HLO instruction it runs, that fusion root's ``op_name`` and ``file:line``
        (``op_name``, ``source``) and the instructions fused into it. None on CPU,
        which has no kernels to list."""
        if self.platform != "cuda":
            return None
        from .xla.stages import kernel_rows

        return kernel_rows(self.request)

    def fusion_costs(self) -> list[Any] | None:
        """Per launched fusion of a CUDA compile (``cuda.roofline.CostRow``): FLOPs, bytes
        accessed and where those figures came from, arithmetic intensity, the peak it is
        held to, memory or compute bound and a lower-bound time on the spec's GPU, as the
        ``cost`` and ``roofline`` stages show them. None on CPU (the ``cost`` stage there
        is XLA's own analysis)."""
        if self.platform != "cuda":
            return None
        from .xla.stages import cost_rows

        return list(cost_rows(self.request)[0])

    def xla_passes(self) -> list[Any]:
        """XLA's HLO passes in this compile, longest first (``xla.pass_log.PassRow``: name,
        pipeline, calls, total microseconds, whether it changed the module), as
        ``--timing`` shows them. XLA logs its passes only in a process started for it, so
        this compiles twice more, in helper processes (one for the times, one for the
        changes); the result is kept."""
        def compute(req: StageRequest) -> list[Any]:
            from .xla import backend, instrument, pass_log

            module = backend.module_for_xla(req.module, req.source, req.line_offset, req.options.fold_constants)
            done = instrument.compile(module, req.module_name, req.options,
                                      instrument.XlaInstrumentation(timing=True))
            return pass_log.rows(done.calls or [])

        return list(self.request.derived("xla-pass-rows", compute))

    def diff(self, other: Compiled, *, explain: bool = False, stage: str | None = None) -> dict[str, Any]:
        """This compile (side A) against ``other`` (side B), as ``mlirhlo diff --json`` gives
        them (see :meth:`Program.diff`). ``explain``: also ``explain``, as ``diff --explain``
        gives it: per differing kernel, the fewest differing DebugOptions or GPU spec fields
        that reproduce the difference on A and the XLA pass whose disabling removes it
        (``batch.explain.explain``); both sides must compile the same program.
        DriverError for targets of several specs, or ``explain`` across two programs."""
        from .batch import diff
        from .batch import explain as explaining

        if explain and other.program is not self.program and \
                self.program.stage("stablehlo") != other.program.stage("stablehlo"):
            raise DriverError("explain compares flags and GPU specs: both sides must compile one program",
                              hint="a.compile(target_a).diff(a.compile(target_b), explain=True)")
        if stage is not None:
            stage = registry.get(stage, self.platform).name
        side_a = diff.side(self.program, self.target, stage)
        side_b = diff.side(other.program, other.target, stage)
        result = diff.compare(side_a, side_b)
        if explain:
            result["explain"] = explaining.explain_sides(self.program, self.target, other.target, side_a, side_b, result)
        return result

    def write(self, directory: str, stages: str | list[str] = "all") -> list[str]:
        """Write stages as ``<module>.<ext>`` files (``<module>.<part>.<ext>`` for
        multi-file stages), each atomically; returns the paths written. ``"all"``:
        every stage of :attr:`stages`."""
        import os

        from .outputs import write_atomic

        names = list(self.stages) if stages == "all" else [stages] if isinstance(stages, str) else list(stages)
        for name in names:
            registry.get(name, self.platform)  # every name checked before anything is written
        self.request.expect(names)  # one compile dumps what they all need
        paths = []
        for name in names:
            for filename, data in registry.get(name, self.platform).files(self.program.name, self.stage(name)):
                path = os.path.join(directory, filename)
                write_atomic(path, data)
                paths.append(path)
        return paths


# Formats a module converts to (``mlirhlo convert --to``, hlo-opt's output).
CONVERT_FORMATS = ("hlo", "hlo-proto", "hlo-pbtxt", "stablehlo", "bytecode", "vhlo", "mhlo")


def convert(loaded: Any, fmt: str, *, target_version: str | None = None) -> str | bytes:
    """``loaded`` (a Program or inputs.LoadedModule: ``.module``, ``.hlo_proto``) in ``fmt``.

    HLO read as HLO stays HLO (its proto is printed, not a trip through
    StableHLO, which would rename computations). ``target_version``: the VHLO
    version of a ``vhlo`` artifact.
    """
    from .ir import emit

    module, proto = loaded.module, loaded.hlo_proto
    producers = {
        "hlo": lambda: emit.hlo_text_from_proto(proto) if proto else emit.hlo_text(module),
        "hlo-proto": lambda: proto if proto else emit.hlo_proto(module),
        "hlo-pbtxt": lambda: emit.hlo_pbtxt_from_proto(proto) if proto else emit.hlo_pbtxt(module),
        "stablehlo": lambda: emit.stablehlo_text(module),
        "bytecode": lambda: emit.bytecode(module),
        "vhlo": lambda: emit.vhlo_artifact(module, target_version=target_version),
        "mhlo": lambda: emit.mhlo_text(module),
    }
    check_format(fmt)
    return producers[fmt]()


def check_format(fmt: str) -> None:
    """DriverError unless ``fmt`` is one of :data:`CONVERT_FORMATS` (with close matches)."""
    from .errors import did_you_mean

    if fmt not in CONVERT_FORMATS:
        raise DriverError(f"unknown format '{fmt}'",
                          hint=did_you_mean(fmt, CONVERT_FORMATS) or ", ".join(CONVERT_FORMATS))


def _program(m: inputs.LoadedModule) -> Program:
    return Program(m.name, m.source, m.format, m.module, m.line_offset, m.hlo_proto)


def load_all(sources: str | list[str], *, input_format: str | None = None,
             split_input_file: bool = False, args: str | None = None) -> list[Program]:
    """Every module in the given files, globs, directories or JAX entry points
    (``package.module:function`` with ``args``, e.g. ``"f32[8,128],i32[8]"``).
    InputError, with file, line and column, for an input that does not read."""
    specs = [sources] if isinstance(sources, str) else list(sources)
    return [_program(m) for m in inputs.load_inputs(specs, input_format=input_format,
                                                    split_input_file=split_input_file, arg_specs=args)]


def load(source: str, *, input_format: str | None = None, args: str | None = None) -> Program:
    """Exactly one module from a file (HLO text or proto, StableHLO/MHLO text or
    bytecode, VHLO; detected by content) or ``package.module:function`` with ``args``."""
    programs = load_all(source, input_format=input_format, args=args)
    if len(programs) != 1:
        raise InputError(f"expected one module, found {len(programs)}", file=source)
    return programs[0]


def from_jax(fn: Any, *example_args: Any, name: str | None = None) -> Program:
    """The StableHLO module of ``jax.jit(fn).lower(*example_args)``: arrays or
    ``jax.ShapeDtypeStruct`` values. 64-bit arguments turn on jax's x64 mode, as
    the CLI's ``--args`` does. InputError if jax cannot lower it."""
    return _program(inputs.lower_jax_function(fn, example_args, name=name))


def compile(source: Program | str, target: Target | None = None, *, platform: str | None = None,
            gpu_spec: str | None = None, xla_flags: dict[str, Any] | None = None,
            args: str | None = None) -> Compiled:
    """``load(source).compile(target)``. Without a target, one is made from
    ``platform`` (default ``"cpu"``), ``gpu_spec`` and ``xla_flags``, as
    :meth:`Target.cpu` and :meth:`Target.cuda` make it."""
    program = source if isinstance(source, Program) else load(source, args=args)
    if target is None:
        target = Target.of(platform or "cpu", gpu_spec=gpu_spec, xla_flags=xla_flags)
    elif platform is not None or gpu_spec is not None or xla_flags is not None:
        raise DriverError("give a target, or platform/gpu_spec/xla_flags, not both")
    return program.compile(target)


def llvm_to_ptx(llvm_ir: str, *, gpu_spec: str | None = None, arch: str | None = None,
                opt_level: int = 3, optimize: bool = True, check_ptxas: bool = True,
                source: str = "<llvm-ir>") -> str:
    """PTX for LLVM IR text, with LLVM's NVPTX backend (XLA's ``ptx-opt``), for the
    compute capability of ``gpu_spec`` or for ``arch`` (``sm_90a``; default: the
    default spec's). Libdevice is linked for math functions; with ``check_ptxas``
    each PTX module is assembled by ptxas. InputError with ``source``'s line and
    column for IR that does not parse or compile."""
    from .cuda import ptx
    from .cuda import specs as gpu_specs

    if gpu_spec is not None and arch is not None:
        raise DriverError("give gpu_spec or arch, not both")
    if arch is None:
        arch = gpu_specs.resolve_spec(gpu_spec or gpu_specs.DEFAULT_SPEC).sm
    options = ptx.PtxOptions(arch=arch, opt_level=opt_level, optimize=optimize, check_ptxas=check_ptxas)
    return ptx.compile_llvm_ir(llvm_ir, source, options).text
