"""Compiled programs: XLA's stages of one program for one target, through the stage cache.

:class:`Compiled` is the one way every door reads a stage: ``opt``, ``kernels``,
``diff``, ``hlo-opt``, the Python API. A stage is looked up in the stage cache
(core/cache.py) first, by the program's identity, the target's content and the stage;
only a miss parses the program and compiles. One XLA compile serves every stage of a
``Compiled`` (stages/base.StageRequest), asking XLA for what the stages it expects
declare they read (``Stage.dumps``/``Stage.emitters``).

Promises:
* ``stage(name)`` gives what the stage's function gives (text, bytes, or {part:
  bytes}), the same whether computed or cached; a miss is stored, a failure never.
* ``notes`` holds what the compiles said for the user (a check file's folded values, a
  field this jaxlib lacks), in order, each once, cached with the stages.
* Nothing is computed before a stage is asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .. import registry
from ..errors import PARAMS, CompileError, DriverError, param, spell
from ..stages.base import Deferred, StageOptions, StageRequest

# DebugOptions whose effect is outside the stage's output (XLA writes files of its own):
# such compiles are never served from the cache, or those files would not be written.
_SIDE_EFFECT_FLAGS = ("xla_dump_to",)


def target_identity(target: Any) -> str | None:
    """What a compile's output depends on in its target (targets.Target): the platform, its
    own inputs (``Target.identity_parts``: a GPU spec's name and text, the CUDA tools in use),
    the XLA flags (a flag naming a file: by its content). None when it cannot be cached."""
    import os

    from . import cache

    flags = dict(target.xla_flags)
    if any(flags.get(name) for name in _SIDE_EFFECT_FLAGS):
        return None
    parts: list[tuple[str, bytes | str | None]] = [("platform", target.platform)]
    for name, value in target.identity_parts():
        if name.startswith("file:"):
            parts.append((name, cache.file_digest(value) if os.path.isfile(value) else None))
        elif name.startswith("stat:"):
            parts.append((name, cache.stat_digest(value)))
        else:
            parts.append((name, value))
    for name, value in sorted(flags.items()):
        parts.append(("flag:" + name, repr(value)))
        if isinstance(value, str) and value and len(value) < 4096 and os.path.isfile(value):
            parts.append(("flag-file:" + name, cache.file_digest(value)))
    return cache.digest(*parts)


def options_identity(options: StageOptions) -> str | None:
    """What a compile's output depends on in its options: the target (:func:`target_identity`)
    and the stage options. None when it cannot be cached."""
    from . import cache

    target = target_identity(options.target) if options.target is not None else ""
    if target is None:
        return None
    return cache.digest(("target", target), ("target_version", options.target_version),
                        ("debug_info", str(options.debug_info)), ("fold_constants", str(options.fold_constants)),
                        ("num_partitions", repr(options.num_partitions)), ("dumped", repr(options.dumped)))


class Compiled:
    """A program compiled by XLA for one target; every stage reads the same compile.

    ``program`` (core.program.Program), ``target`` (targets.Target), ``options`` (its
    stages.base.StageOptions: one GPU spec), ``notes`` (what the compile said). With
    ``cache`` False the stage cache is neither read nor written. ``instrumentation``
    (xla.instrument.XlaInstrumentation) instruments the compile (the cache is then off:
    its tables show a real compile); what it showed is :attr:`instrumented`.
    """

    def __init__(self, program: Any, target: Any, options: StageOptions | None = None, *, cache: bool = True,
                 instrumentation: Any = None, defer: bool = False) -> None:
        self.program = program
        self.options = options if options is not None else target.options()
        self._notes: list[str] = []  # said by stages served from the cache
        if self.options.platform == "tpu":  # a module of a TPU program's XLA dump: its own options
            from ..tpu import replay

            self.options, said = replay.replay(self.options, program.source)
            self._notes.extend(said)
        self.target = self.options.target if self.options.target is not None else target
        self.cache = cache and instrumentation is None
        self.instrumentation = instrumentation
        self.defer = defer
        self._expected: tuple[str, ...] = ()
        self._req: StageRequest | None = None
        self._base: str | None | bool = False  # the key's common part, once (False: not yet)

    def __repr__(self) -> str:
        return f"Compiled({self.program!r}, platform={self.platform!r})"

    @property
    def platform(self) -> str | None:
        """``cpu``, ``cuda``, or None (MLIR-level stages only)."""
        return self.options.platform

    @property
    def _stage_request(self) -> StageRequest:
        """The compile's stage request: made on first use, which parses the program."""
        if self._req is None:
            p = self.program
            self._req = registry.request(p.module, p.name, self.options, stages=self._expected, source=p.source,
                                             line_offset=p.line_offset, defer=self.defer,
                                             instrumentation=self.instrumentation)
        return self._req

    @property
    def notes(self) -> list[str]:
        """What the compile said for the user (a check file's folded values, a field this
        jaxlib lacks, the partitions of a sharded module), in order, each once: from the
        cache or from the compile; parameters named as Python names them."""
        return self.notes_for(PARAMS)

    def notes_for(self, spelling: str) -> list[str]:
        """:attr:`notes` with parameters named for ``spelling`` (errors.PARAMS, or FLAGS: a
        command line's)."""
        said = self._notes + (self._req.notes if self._req is not None else [])
        return [spell(n, spelling) for n in dict.fromkeys(said)]

    @property
    def _instrumented(self) -> Any:
        """What the instrumented compile showed (xla.instrument.Instrumented), or None."""
        return self._req.instrumented if self._req is not None else None

    def expect(self, names: list[str] | tuple[str, ...]) -> None:
        """The stages that will be asked for: the first compile dumps what they declare."""
        self._expected = tuple(dict.fromkeys((*self._expected, *names)))
        if self._req is not None:
            self._req.expect(names)

    # ------------------------------------------------------------ the cache

    def _base_key(self) -> str | None:
        """The keys' common part: the environment, the program and the target; None when
        nothing of this compile is cached."""
        if not self.cache:
            return None
        if self._base is False:
            self._base = None
            if self.program.identity is not None:
                from . import cache

                target = options_identity(self.options) if self.platform is not None else \
                    cache.digest(("target_version", self.options.target_version),
                                 ("debug_info", str(self.options.debug_info)))
                if target is not None:
                    self._base = cache.digest(("environment", cache.environment()),
                                              ("program", self.program.identity), ("target", target))
        return self._base  # type: ignore[return-value]

    def _key(self, stage: Any) -> str | None:
        if self._base_key() is None:
            return None
        from . import cache

        name = stage.alias_of or stage.name
        if stage.level == "mlir":  # the module alone: the same for every platform
            return cache.digest(("program", self.program.identity), ("environment", cache.environment()),
                                ("stage", name), ("target_version", self.options.target_version),
                                ("debug_info", str(self.options.debug_info)))
        return cache.digest(("base", self._base), ("stage", name))

    def _cached(self, name: str) -> Any:
        """The stage's output from the cache (its notes joining :attr:`notes`), or None."""
        stage = self._stage(name)
        key = self._key(stage)
        if key is None:
            return None
        from . import cache

        found = cache.get_output(key)
        if found is None:
            return None
        data, notes, printed = found
        self._notes.extend(notes)
        if printed and not self.program.pipeline_output:
            self.program.pipeline_output = printed
        return data

    def in_cache(self, name: str) -> bool:
        """Whether stage ``name`` is in the stage cache: reading it would compile nothing."""
        return self._cached(name) is not None

    def _entry(self, name: str) -> Any:
        """Where a stage's output is kept in the stage cache, with what is kept beside it
        (core.cache.Entry), or None when it is not cached; for an output finished later,
        elsewhere (a Deferred a batch finishes in a group): ``cache.put_entry(entry, data)``."""
        key = self._key(self._stage(name))
        if key is None:
            return None
        from . import cache

        return cache.Entry(key, tuple(self._req.notes if self._req is not None else ()),
                           self.program.pipeline_output)

    def _cache_key(self, what: str) -> str | None:
        """Where a product of this compile that is no stage (``diff --explain``'s pass log)
        is kept in the stage cache (``core.cache.put_output``/``get_output``): keyed by
        ``what`` over the same environment, program and target as the stages; None when
        this compile is not cached."""
        base = self._base_key()
        if base is None:
            return None
        from . import cache

        return cache.digest(("base", base), ("product", what))

    def _keep(self, name: str, data: Any) -> None:
        """Store a stage's output computed here."""
        entry = self._entry(name)
        if entry is not None:
            from . import cache

            cache.put_entry(entry, data)

    # ------------------------------------------------------------ stages

    def _stage(self, name: str) -> Any:
        stage = registry.stages().stages.get(name)
        if stage is not None and stage.hidden:
            return stage
        return registry.get(name, self.platform)

    def stage(self, name: str) -> str | bytes | dict[str, bytes]:
        """One stage's output, MLIR-level or XLA's; the first XLA stage not in the cache
        compiles, once. Text for text stages, bytes for binary ones, {part: bytes} for the
        multi-file ``cubin`` and ``triton-passes``. StageError for a stage this platform
        lacks."""
        out = self._produce(name)
        if isinstance(out, Deferred):
            out = out.finish()
            self._keep(name, out)
        return out

    def output(self, name: str) -> str | bytes:
        """The stage as one output, for stdout or one file: a multi-file stage's parts joined
        where they join (``triton-passes``), its one part, or StageError saying to write a
        directory."""
        from ..stages.base import single_output

        return single_output(self._stage(name), self.stage(name))

    def _produce(self, name: str) -> Any:
        """:meth:`stage`, but with ``defer`` a stage that finishes in groups may be given as a
        Deferred: the caller finishes it and hands the output to :meth:`keep`."""
        self._stage(name)  # checked before anything is read
        hit = self._cached(name)
        if hit is not None:
            return hit
        if self._req is None and self.platform == "tpu" and self.instrumentation is None:
            self._prestart(name)
        request = self._stage_request
        if self._expected:  # else nothing was said: the first compile dumps everything (the API)
            request.expect([name])
        try:
            out = request.produce(name)
        except CompileError as e:
            raise e.about(self.program.source) from None  # this program's compile failed: say which file
        if not isinstance(out, Deferred):
            self._keep(name, out)
        return out

    def _prestart(self, name: str) -> None:
        """A miss compiles for a TPU in a process of its own: started now, it loads jax and
        libtpu while this one reads the program (xla.backend.prestart); its environment is the
        one the request's first compile will have (the dumps its stages declare)."""
        from ..xla import backend
        from ..xla.stages import dumps_for_stages

        names = (*self._expected, name) if self._expected else ()
        backend.prestart(self.options.target, dumps_for_stages(registry.stages(), names,
                                                               platform=self.options.target.platform))

    @property
    def stages(self) -> Mapping[str, str | bytes | dict[str, bytes]]:
        """Every stage this target has (``--stage all``), by name, in pipeline order; a stage
        is produced when first read, like Triton's ``CompiledKernel.asm``."""
        return _Stages(self)

    def kernels(self) -> Any:
        """Per CUDA kernel launch, a flat ``cuda.kernels.KernelRow`` (``row.registers``,
        ``row.spill_stores``, ``row.occupancy``, ``row.launch``, ``row.source``, ...), in a
        ``records.Rows`` (``to_records()``; a table in Jupyter). On TPU, per fusion or op, a
        ``tpu.kernels.TpuKernelRow`` (``row.cycles``, ``row.seconds``, ``row.flops``,
        ``row.bound``). None on CPU, which has no kernels to list."""
        if self.platform not in ("cuda", "tpu"):
            return None
        import json

        from ..cuda.kernels import KernelRow
        from ..records import Rows
        from ..tpu.kernels import TpuKernelRow

        row = TpuKernelRow if self.platform == "tpu" else KernelRow
        self.expect(["kernel-rows"])  # TPU: libtpu's dump flags are the first compile's, or none
        return Rows(row.from_dict(d) for d in json.loads(self.stage("kernel-rows")))

    def summary(self) -> dict[str, Any]:
        """The compile as plain data (xla.summary.summarize): ``fusions``, ``buffers``, ``memory``."""
        import json

        return json.loads(self.stage("summary"))


    def artifacts(self) -> Any:
        """What XLA's compile wrote (xla.backend.XlaArtifacts: its dump files by name, the
        optimized module, memory stats): the compile, made if it was not. Never cached."""
        from ..xla import stages as xla_stages

        return xla_stages.artifacts(self._stage_request)

    def fusion_costs(self) -> Any:
        """Per launched fusion of a CUDA compile (``cuda.roofline.CostRow``): FLOPs, bytes
        accessed and where those figures came from, arithmetic intensity, the peak it is
        held to, memory or compute bound and a lower-bound time on the spec's GPU, as the
        ``cost`` and ``roofline`` stages show them, in a ``records.Rows``. None on CPU (the
        ``cost`` stage there is XLA's own analysis)."""
        if self.platform != "cuda":
            return None
        from ..records import Rows
        from ..xla.stages import cost_rows

        return Rows(cost_rows(self._stage_request)[0])

    def plot_roofline(self, path: str | None = None) -> Any:
        """The roofline of a CUDA compile as a picture (``cuda.roofline_plot``), as
        ``--stage roofline --plot FILE`` draws it: the spec's ceilings and one point per
        launched kernel (TPU: the MXU's bf16 peak and one point per fusion or op,
        ``tpu.roofline``). With ``path`` (``.svg`` or ``.png``), written there and the path
        returned; without, the matplotlib ``Figure``. Needs matplotlib (the ``plot``
        extra); a DriverError on CPU."""
        import json

        from ..cuda import roofline_plot

        if self.platform not in ("cuda", "tpu"):
            raise DriverError(f"plot_roofline: the roofline is drawn on a GPU spec or a TPU, not for {self.platform}",
                              hint="compile with platform='cuda' (and a gpu_spec) or platform='tpu'")
        who = "plot_roofline"
        if path is not None:
            roofline_plot.check_path(path, who)
        roofline_plot.require(who)
        cost = json.loads(self.stage("cost" if self.platform == "cuda" else "roofline-data"))
        roofline_plot.check_drawable(cost, who)
        return roofline_plot.figure(cost) if path is None else roofline_plot.write(cost, path, who)

    def xla_passes(self) -> Any:
        """XLA's HLO passes in this compile, longest first (``xla.pass_log.PassRow``: name,
        pipeline, calls, total microseconds, whether it changed the module), as
        ``--timing`` shows them, in a ``records.Rows``. XLA logs its passes only in a
        process started for it, so this compiles twice more, in helper processes (one for
        the times, one for the changes); the result is kept."""
        from ..records import Rows

        def compute(req: StageRequest) -> list[Any]:
            from ..xla import backend, instrument, pass_log

            module = backend.module_for_xla(req.module, req.source, req.line_offset, req.options.fold_constants)
            spec, _ = backend.stage_spec(req.options, module, req.source or req.module_name)
            done = instrument.compile(module, req.module_name, spec, instrument.XlaInstrumentation(timing=True))
            return pass_log.rows(done.calls or [])

        return Rows(self._stage_request.derived("xla-pass-rows", compute))

    def compile_phases(self) -> Any:
        """Where XLA's compile of this module for this target spends its wall time
        (``xla.compile_phases.PhaseRow``: phase, name, wall and busy microseconds, count,
        depth), as ``--timing``'s phase table shows the compile, in a ``records.Rows``: HLO
        passes by pipeline, autotuning by fusion, buffer assignment, IR emission and kernel
        compile (fusion emission, Triton compile, LLVM optimization and ptxas per kernel),
        the backend's other work, and what XLA does not time (``xla-other``). Rows of depth 0
        add up to the compile's wall time; a deeper row breaks down the row above it, and its
        busy time counts each thread (codegen runs on several at once). XLA logs its timers
        only in a process started for it, so this compiles once more, in a helper process;
        the result is kept. CompileError if that compile fails."""
        from ..records import Rows

        def compute(req: StageRequest) -> list[Any]:
            from ..errors import CompileError
            from ..xla import backend, pass_log

            module = backend.module_for_xla(req.module, req.source, req.line_offset, req.options.fold_constants)
            # PTX dumped (CUDA): its kernels name the LLVM modules.
            spec, _ = backend.stage_spec(req.options, module, req.source or req.module_name,
                                         dumps=(backend.PTX,) if req.options.platform == "cuda" else ())
            art = backend.compile(module, spec.with_(pass_log=pass_log.TIMES_LEVEL), req.module_name).art
            if art.phases is None:
                raise CompileError("XLA's timed compile gave no phases")
            return art.phases

        return Rows(self._stage_request.derived("xla-compile-phases", compute))

    def run(self, *, reference: str | None = None, seed: int = 0, rtol: float | None = None,
            atol: float | None = None, inputs_npz: str | None = None, zeros: bool = False,
            iterations: int = 1, bisect: bool = False, bisect_passes: bool = False,
            fold_constants: bool = False, precision: str | None = None) -> Any:
        """Execute on generated inputs (``seed``, ``zeros``, or the arrays of ``inputs_npz``),
        ``iterations`` times, and compare with ``reference``: ``"interpreter"`` (StableHLO's;
        the default for CPU), ``"cpu"`` (XLA CPU; the default for CUDA and TPU) or
        ``"none"``. The executable is this compile's own, made once and kept (for CPU, the one
        its stages read); a CUDA target needs a GPU to run on, a TPU target a TPU chip (the
        chips attached here, whatever topology the compile was for). ``precision``: every
        dot and convolution at ``"default"``, ``"high"`` or ``"highest"`` on the platform
        (a TPU computes float32 products at DEFAULT as bfloat16 passes, and the comparison
        allows for it: ``execute.engine.platform_reference``).

        Returns the run's report (``execute.engine.ModuleReport``): ``ok``, ``status``,
        ``mismatches``, ``outputs``, ``reference_outputs``, ``inputs``; with ``bisect``,
        the first op whose value diverges (``bisect``); with ``bisect_passes``, the XLA
        HLO passes whose disabling makes a mismatch match (``pass_bisect``,
        ``execute.pass_bisect.PassBisect``; None when the module matched). A self-checking
        module runs its ``check.*`` assertions instead (``checks``); a sharded one,
        :meth:`run_spmd`."""
        from ..errors import DriverError
        from ..execute import run as run_mod

        if reference is None:
            reference = "interpreter" if self.platform == "cpu" else "cpu"
        if reference not in run_mod.REFERENCES:
            raise DriverError(f"unknown reference '{reference}'", hint=", ".join(run_mod.REFERENCES))
        if precision is not None and precision not in ("default", "high", "highest"):
            raise DriverError(f"unknown precision '{precision}'", hint="default, high or highest")
        if self.target is None:
            raise DriverError("a run needs a target: compile(Target.cpu()) or compile(Target.cuda(...))")
        if self.platform == "tpu":  # the chips attached here, or one line: never a fake run
            from ..xla.platforms import run_target

            run_target("tpu")
        p = self.program
        options = run_mod.RunOptions(platform=self.platform, reference=reference, seed=seed, zeros=zeros,
                                     inputs_npz=inputs_npz, rtol=rtol, atol=atol, iterations=iterations,
                                     bisect=bisect, bisect_passes=bisect_passes, fold_constants=fold_constants,
                                     keep_outputs=True, xla_flags=self.target.xla_flags, precision=precision,
                                     platform_tolerance=rtol is None and atol is None)
        if precision is not None:  # the module changes: a compile of the run's own
            return run_mod.run_module(p.module, p.name, p.source, options, p.line_offset)
        return run_mod.run_module(p.module, p.name, p.source, options, p.line_offset, executable=self._executable)

    def run_spmd(self, *, num_replicas: int = 1, reference: str = "cpu", partitioner: str | None = None,
                 seed: int = 0, rtol: float | None = None, atol: float | None = None) -> Any:
        """Run SPMD-partitioned on ``num_replicas x`` this compile's partitions (its
        ``num_partitions``, else as many as the module says) of the driver's host CPU
        devices, as XLA's multihost_hlo_runner does on one host, and compare the gathered
        outputs with ``reference``: ``"cpu"`` or ``"interpreter"`` (the unpartitioned module
        on one device; for a module with manual computations, ``shard_map``, the same module
        on the same devices with replicated parameters and outputs) or ``"none"``. Every
        sharding spelling is read: GSPMD's, Shardy's and named mesh shardings.

        Returns ``execute.spmd.SpmdReport``: ``report`` (the ModuleReport), the layouts,
        ``outputs`` per replica."""
        from ..errors import DriverError
        from ..execute import spmd
        from ..xla.backend import declared_partitions

        if self.platform not in ("cpu", "tpu"):
            raise DriverError(f"run_spmd runs on host CPU devices or TPU chips: compile for "
                              f"{param('platform', 'cpu')} or {param('platform', 'tpu')}")
        partitions = self.options.num_partitions
        partitions = declared_partitions(self.program.module) if partitions is None else partitions
        options = spmd.SpmdOptions(num_partitions=partitions, num_replicas=num_replicas, partitioner=partitioner,
                                   seed=seed, rtol=rtol, atol=atol, reference=reference,
                                   xla_flags=self.target.xla_flags, platform=self.platform)
        spmd.check_options(options)
        return spmd.run_in_process(self.program, options)

    def _executable(self) -> Any:
        """This compile's executable to run (execute.engine.Executable), made once: the stages'
        compile where it ran here for one device, else a compile for the target's devices."""
        def make(req: StageRequest) -> Any:
            from ..execute import engine
            from ..xla import backend

            done = req._derived.get("xla-executable")
            if done is None:
                target = req.options.target
                if target.platform == "tpu":  # a device-less compile's program, for the chips here
                    from ..xla.platforms import run_target

                    target = run_target("tpu", target.xla_flags)
                module = backend.module_for_xla(req.module, req.source, req.line_offset, req.options.fold_constants)
                done = backend.compile(module, backend.CompileSpec(target, on_device=True), req.module_name)
            return engine.Executable(done.executable, done.devices, [], [], done.compile_ms)

        return self._stage_request.derived("run-executable", make)

    def with_options(self, options: StageOptions) -> Compiled:
        """The same program compiled for other stage options (another GPU spec, other XLA
        flags), with this one's target and cache setting: ``diff --explain``'s trials, whose
        stages the cache keeps like any other."""
        return Compiled(self.program, self.target, options, cache=self.cache)

    def diff(self, other: Compiled, *, explain: bool = False, stage: str | None = None,
             progress: Any = None) -> dict[str, Any]:
        """This compile (side A) against ``other`` (side B), as ``mlirhlo diff --json`` gives
        it: ``a``, ``b``, ``fusions``, ``kernels`` (None on CPU), ``memory``, ``buffers``,
        ``stage`` (a unified diff of ``stage``, XLA's names renumbered; None without one)
        and ``identical`` (see ``core.diff.compare``). ``explain``: also ``explain``, as
        ``diff --explain`` gives it: per differing kernel, the fewest differing DebugOptions
        or GPU spec fields that reproduce the difference on A and the XLA pass whose
        disabling removes it (``core.explain.explain``); both sides must compile one
        program (DriverError otherwise). ``progress``: a callback of
        :class:`~mlirhlo_driver.core.progress.Progress` events (each kernel explained)."""
        from . import diff

        if explain and not same_program(self.program, other.program):
            from ..errors import DriverError

            raise DriverError("explain compares flags and GPU specs: both sides must compile one program",
                              hint="a.compile(target_a).diff(a.compile(target_b), explain=True)")
        if stage is not None:
            stage = diff.check_stage(stage, self.platform)
        side_a = diff.side(self, stage)
        side_b = diff.side(other, stage)
        result = diff.compare(side_a, side_b)
        if explain:
            from . import explain as explaining

            result["explain"] = explaining.explain(self, other, side_a, side_b, result, progress=progress)
        return result

    def write(self, directory: str, stages: str | list[str] = "all", *, progress: Any = None) -> list[str]:
        """Write stages as ``<module>.<ext>`` files (``<module>.<part>.<ext>`` for
        multi-file stages), each atomically; returns the paths written. ``"all"``: every
        stage of :attr:`stages`. ``progress``: a callback of
        :class:`~mlirhlo_driver.core.progress.Progress` events, one per stage."""
        from .. import outputs
        from .progress import report

        names = list(self.stages) if stages == "all" else [stages] if isinstance(stages, str) else list(stages)
        checked = [self._stage(name) for name in names]  # every name checked before anything is written
        self.expect(names)  # one compile dumps what they all need
        sink = outputs.Sink(dump_dir=directory)
        for i, stage in enumerate(checked):
            report(progress, i, len(checked), f"{self.program.name}: {stage.name}")
            for filename, data in stage.files(self.program.name, self.stage(stage.name)):
                sink.file(filename, data)
        return sink.written


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


def same_program(a: Any, b: Any) -> bool:
    """Whether two programs (core.program.Program) are one module: the same object, the
    same content identity, or the same StableHLO text."""
    if a is b or (a.identity is not None and a.identity == b.identity):
        return True
    return a.stage("stablehlo") == b.stage("stablehlo")


def compile_all(programs: list[Any], targets: Any, **kw: Any) -> Iterator[tuple[Any, Compiled]]:
    """(program, Compiled) for each program and each of the targets (targets.Targets: one
    compile per GPU spec; a CPU target: one per program)."""
    for program in programs:
        for target in targets:
            yield program, Compiled(program, target, **kw)

