"""Programs: every input, at every door, as one StableHLO module with an identity.

A :class:`Program` is what the core compiles (core/compiled.py): a module read from a
file (HLO text/proto, StableHLO/MHLO text or bytecode, VHLO), a chunk of a split file,
a JAX function lowered for example arguments, or another program after a pass
pipeline. Every door makes its programs here (:func:`programs`), so each takes the same
inputs, formats and errors.

Promises:

* A program read from a file holds its bytes, read once; its module is parsed when
  first needed (:attr:`Program.module`, a stage not in the stage cache, a pipeline).
  Reading, format detection and :attr:`Program.identity` import no jax or jaxlib, so a
  cached stage is served without them. A module that does not parse raises
  :class:`~mlirhlo_driver.errors.InputError` (with file, line and column) then.
* A pipeline's program (:meth:`Program.optimize`) runs the pipeline when its module is
  first needed, on a module of its own: its parent is never changed. A parent read from
  MLIR text and not yet parsed stays so: the bytes in hand are parsed for the child
  (parsing, then copying, cost a copy more); any other parent's module is copied.
* :attr:`Program.identity` is a digest of everything the module depends on: the
  bytes and how they were read (format, file name, chunk), or the module's bytecode;
  the pipeline spec, the pipeline files it can read, and its Python passes (the bytes
  of the plugin files loaded into its pass set, the installed entry points). A file's is
  made when first asked (from the bytes in hand); a pipeline's when the pipeline is given
  (its files as they are then). It is None where that cannot be known (a pipeline naming
  a Python pass made by running code, a notebook's): such a program is never served from
  the cache.
* A pipeline names the Python passes it is given (``python_passes``) and the built-in and
  installed ones, no other: what one pipeline loads is not seen by another.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

# Formats a module converts to (``mlirhlo convert --to``, hlo-opt's output).
CONVERT_FORMATS = ("hlo", "hlo-proto", "hlo-pbtxt", "stablehlo", "bytecode", "vhlo", "mhlo")


@dataclass(frozen=True)
class InputOptions:
    """How inputs are read, the same at every door."""

    input_format: str | None = None   # force one of inputs.loader.INPUT_FORMATS
    split_input_file: bool = False    # '// -----' chunks are modules of their own
    args: str | None = None           # a JAX function's argument specs, 'f32[8,128],i32[8]'
    # What a JAX function is lowered for: None, the driver's CPU device; ("tpu", topology name,
    # shape, the TPU process's environment as items): that TPU topology's device, in the
    # driver's TPU process (the compiles' own), so TPU lowering rules apply.
    lower_for: tuple[Any, ...] | None = None


class Program:
    """One StableHLO module, as loaded or after a pipeline; never changed in place.

    ``name`` (file-name friendly: outputs are ``<name>.<stage>.<ext>``), ``source`` (the
    path or entry point as given), ``format`` (how it was read), ``line_offset`` (a
    chunk's first line in its file), ``identity`` (what the stage cache keys it by),
    ``module`` (the jaxlib ``ir.Module``, made when first read), ``hlo_proto`` (the
    HloModuleProto as read, for HLO inputs) and ``last_run`` (the pipeline run that made
    it, once made; None for a loaded program).
    """

    def __init__(self, name: str, source: str, format: str, *, identity: str | None | Callable[[], str | None],
                 make: Callable[[], Any] | None = None, module: Any = None, hlo_proto: bytes | None = None,
                 line_offset: int = 0, data: bytes | None = None, make_again: bool = False) -> None:
        """``identity``: the digest, or a function that makes it from what is in hand (the
        bytes read): called when first asked, so a run that consults no cache makes none.
        ``make_again``: ``make`` may run again for a module of a derived program's own (MLIR
        text parsed from the bytes in hand): cheaper than making it, then copying it."""
        self.name = name
        self.source = source
        self.format = format
        self._identity, self._identify = (None, identity) if callable(identity) else (identity, None)
        self.line_offset = line_offset
        self.data = data              # the bytes read, where it was read from a file
        self.last_run: Any = None
        # What the pipeline printed besides IR (a pass that prints), for the caller to show.
        self.pipeline_output = ""
        self._make = make
        self._module = module
        self._hlo_proto = hlo_proto
        self._make_again = make_again

    def __repr__(self) -> str:
        return f"Program(name={self.name!r}, source={self.source!r}, format={self.format!r})"

    @property
    def identity(self) -> str | None:
        """What the stage cache keys it by (a digest of everything the module depends on),
        made when first asked; None: never served from the cache."""
        if self._identify is not None:
            self._identity, self._identify = self._identify(), None
        return self._identity

    @identity.setter
    def identity(self, value: str | None) -> None:
        self._identity, self._identify = value, None

    @property
    def input_format(self) -> str:
        """The format it was read from (``hlo``, ``mlir``, ``jax``, ...)."""
        return self.format

    @property
    def loaded(self) -> bool:
        """Whether its module exists yet (read from a file but not parsed: False)."""
        return self._module is not None

    @property
    def module(self) -> Any:
        """The StableHLO ``ir.Module``, made on first read (InputError if it does not parse,
        PassFailure if its pipeline fails)."""
        if self._module is None:
            assert self._make is not None
            made = self._make()
            self._module, self._hlo_proto = made if isinstance(made, tuple) else (made, self._hlo_proto)
            self._make = None
        return self._module

    @property
    def hlo_proto(self) -> bytes | None:
        """The HloModuleProto as read, for HLO inputs (HLO-to-HLO conversions print it:
        a trip through StableHLO renames computations); None otherwise."""
        if self._module is None and self.format in ("hlo", "hlo-proto", "hlo-pbtxt"):
            self.module  # noqa: B018 - parses, which reads the proto
        return self._hlo_proto

    def optimize(self, spec: str | None = None, *, passes: str | None = None, pipeline_file: str | None = None,
                 python_passes: Any = None, instrumentation: Any = None, reproducer_dir: str | None = None,
                 plugin_files: Sequence[str] = (), root: Any = None) -> Program:
        """A new Program: this module after a pass pipeline; this one is unchanged.

        ``spec`` is MLIR's textual pipeline (``builtin.module(func.func(cse))``), a
        shipped or user pipeline by ``@name``, or hlo-opt's comma list of pass names
        (``canonicalize,cse``, each nested at its anchor); ``passes`` and
        ``pipeline_file`` say the last two explicitly. No pipeline: an equal program.
        ``python_passes``: the passes written in Python it may name besides the built-in
        and installed ones: passes (``@mlirhlo_driver.register_pass``) and plugin files
        (paths, as ``--load-pass-plugin``) in a list, or a ``PassSet`` (all it may name);
        ``plugin_files`` are more plugin files. The spec is checked now (PipelineError for
        an unknown pass or bad syntax; InputError for a plugin file that does not load);
        the pipeline runs when the new program's module is first needed (PassFailure, with
        the reproducer's path under ``reproducer_dir``, when a pass fails).
        ``instrumentation`` (mlir.pipeline.Instrumentation): IR printing and timing, in
        ``last_run``; such a program is never served from the cache. ``root``: the
        pipeline already resolved, with its Python passes (a batch resolves it once).
        """
        from ..mlir import pipeline

        if spec is not None and passes is None and pipeline_file is None and is_pass_list(spec):
            spec, passes = None, spec
        if root is None:
            from ..mlir.python_passes import pass_set

            root = pipeline.resolve(spec, passes=passes, pipeline_file=pipeline_file,
                                    python_passes=pass_set(python_passes, plugin_files))
        if root is None:
            return self._derived(self.identity, self._own_module)
        identity = None
        if self.identity is not None and not (instrumentation is not None and instrumentation.observes()):
            identity = pipeline_identity(self.identity, spec, passes, pipeline_file, root, instrumentation)
        child = self._derived(identity, None)

        def make() -> Any:
            copy = self._own_module()
            # Where a failing pass's reproducer comes from: this module, made anew (not a
            # snapshot taken before every run; a file edited meanwhile is the one difference).
            try:
                child.last_run = pipeline.run(
                    copy, root, instrumentation=instrumentation, module_name=self.name,
                    reproducer_dir=reproducer_dir, source_for_reproducer=self.source,
                    remake=lambda: self.module, line_offset=self.line_offset)
            except Exception as e:
                child.last_run = getattr(e, "run", None)
                raise
            child.pipeline_output = child.last_run.other_output
            return copy

        child._make = make
        return child

    def stage(self, name: str = "stablehlo", *, debug_info: bool = False,
              target_version: str | None = None, cache: bool = True) -> str | bytes:
        """The module at an MLIR-level stage (``registry.available(None)``): text, or
        bytes for ``stablehlo-bytecode`` and ``vhlo``. StageError for an XLA stage:
        those come from :meth:`compile`. Served from the stage cache when there."""
        from ..stages.base import StageOptions
        from .compiled import Compiled

        options = StageOptions(debug_info=debug_info, target_version=target_version)
        out = Compiled(self, None, options, cache=cache).stage(name)
        assert not isinstance(out, dict)
        return out

    def as_text(self, dialect: str = "stablehlo", *, debug_info: bool = False) -> str:
        """Text of the module: ``stablehlo``, ``mhlo``, or ``hlo`` (as XLA receives it)."""
        from ..errors import InputError

        stage = {"stablehlo": "stablehlo", "mhlo": "mhlo", "hlo": "hlo-before-optimizations"}.get(dialect)
        if stage is None:
            raise InputError(f"unknown dialect '{dialect}' (stablehlo, mhlo, hlo)")
        out = self.stage(stage, debug_info=debug_info)
        assert isinstance(out, str)
        return out

    def convert(self, fmt: str, *, target_version: str | None = None) -> str | bytes:
        """The module in ``fmt`` (one of :data:`CONVERT_FORMATS`). HLO read as HLO stays
        HLO (its proto is printed, not a trip through StableHLO, which renames
        computations). ``target_version``: the VHLO version of a ``vhlo`` artifact."""
        from ..errors import DriverError, did_you_mean
        from ..ir import emit

        if fmt not in CONVERT_FORMATS:
            raise DriverError(f"unknown format '{fmt}'",
                              hint=did_you_mean(fmt, CONVERT_FORMATS) or ", ".join(CONVERT_FORMATS))
        proto = self.hlo_proto
        module = self.module
        producers = {
            "hlo": lambda: emit.hlo_text_from_proto(proto) if proto else emit.hlo_text(module),
            "hlo-proto": lambda: proto if proto else emit.hlo_proto(module),
            "hlo-pbtxt": lambda: emit.hlo_pbtxt_from_proto(proto) if proto else emit.hlo_pbtxt(module),
            "stablehlo": lambda: emit.stablehlo_text(module),
            "bytecode": lambda: emit.bytecode(module),
            "vhlo": lambda: emit.vhlo_artifact(module, target_version=target_version),
            "mhlo": lambda: emit.mhlo_text(module),
        }
        return producers[fmt]()

    def compile(self, target: Any = None, *, num_partitions: int | None = None, cache: bool = True) -> Any:
        """XLA's compile of this module for ``target`` (targets.Target; default
        ``Target.cpu()``), a :class:`~mlirhlo_driver.core.compiled.Compiled`.

        Nothing compiles yet: the first XLA stage asked of the result that is not in the
        stage cache compiles, once, and every later stage reads that compile. A CUDA
        target compiles device-less. A sharded module (``mhlo.num_partitions`` > 1, as jax
        and XLA's dumps say) is compiled partitioned over as many devices, as XLA's runners
        do; ``num_partitions`` overrides the count (1: the unpartitioned program).
        ``cache``: False neither reads nor writes the stage cache.
        """
        from ..targets import Target
        from .compiled import Compiled

        target = target if target is not None else Target.cpu()
        return Compiled(self, target, target.options(num_partitions=num_partitions), cache=cache)

    def diff(self, target_a: Any, target_b: Any = None, *, other: Program | None = None,
             stage: str | None = None) -> dict[str, Any]:
        """Two compiles side by side, as ``mlirhlo diff --json`` gives them: this module
        for ``target_a``, and ``other`` (default: this module) for ``target_b`` (default:
        ``target_a``). The keys: ``a``, ``b``, ``fusions``, ``kernels`` (None on CPU),
        ``memory``, ``buffers``, ``stage`` (a unified diff of ``stage``, names
        renumbered; None without one) and ``identical``; see ``core.diff.compare``.
        """
        a = self.compile(target_a)
        b = (other if other is not None else self).compile(target_b or target_a)
        return a.diff(b, stage=stage)

    def run(self, target: Any = None, *, reference: str = "interpreter", seed: int = 0,
            rtol: float | None = None, atol: float | None = None, inputs_npz: str | None = None,
            zeros: bool = False, bisect: bool = False, bisect_passes: bool = False,
            fold_constants: bool = False) -> Any:
        """Compile for ``target`` (default: CPU), execute on generated inputs (``seed``,
        ``zeros``, or the arrays of ``inputs_npz``), and compare with ``reference``:
        ``"interpreter"`` (StableHLO's), ``"cpu"`` (XLA CPU) or ``"none"``.

        Returns the run's report (``execute.engine.ModuleReport``): ``ok``, ``status``,
        ``mismatches``, ``outputs``, ``reference_outputs``, ``inputs``; with ``bisect``,
        the first op whose value diverges (``bisect``); with ``bisect_passes``, the XLA
        HLO passes whose disabling makes a mismatch match (``pass_bisect``,
        ``execute.pass_bisect.PassBisect``; None when the module matched). A self-checking
        module runs its ``check.*`` assertions instead (``checks``). A CUDA target needs a GPU.
        The same as ``compile(target).run(...)`` (``Compiled.run``).
        """
        from ..targets import Target

        compiled = self.compile(target if target is not None else Target.cpu(), cache=False)
        return compiled.run(reference=reference, seed=seed, rtol=rtol, atol=atol, inputs_npz=inputs_npz,
                            zeros=zeros, bisect=bisect, bisect_passes=bisect_passes, fold_constants=fold_constants)

    def run_spmd(self, *, num_partitions: int = 1, num_replicas: int = 1, reference: str = "cpu",
                 partitioner: str | None = None, seed: int = 0, rtol: float | None = None,
                 atol: float | None = None, xla_flags: dict[str, Any] | None = None) -> Any:
        """Run SPMD-partitioned on ``num_replicas x num_partitions`` CPU devices of this
        process, as XLA's multihost_hlo_runner does on one host, and compare the gathered
        outputs with ``reference``: ``"cpu"`` or ``"interpreter"`` (the unpartitioned module
        on one device; for a module with manual computations, ``shard_map``, the same module
        on the same devices with replicated parameters and outputs) or ``"none"``. Every
        sharding spelling is read: GSPMD's, Shardy's and named mesh shardings (what jax 0.12
        dumps).

        Returns ``execute.spmd.SpmdReport``: ``report`` (the ModuleReport), the layouts,
        ``outputs`` per replica. The devices are the driver's own host client's, whatever
        the process's jax was started with. The same as ``compile(Target.cpu(xla_flags=...),
        num_partitions=...).run_spmd(...)`` (``Compiled.run_spmd``).
        """
        from ..targets import Target

        compiled = self.compile(Target.cpu(xla_flags=xla_flags), num_partitions=num_partitions, cache=False)
        return compiled.run_spmd(num_replicas=num_replicas, reference=reference, partitioner=partitioner,
                                 seed=seed, rtol=rtol, atol=atol)

    def _own_module(self) -> Any:
        """A module equal to :attr:`module` that the caller may change: made anew where this
        program may make it again and has not yet (this program stays unparsed), else a copy."""
        if self._module is None and self._make is not None and self._make_again:
            made = self._make()
            return made[0] if isinstance(made, tuple) else made
        return _clone(self.module)

    def _derived(self, identity: str | None, make: Callable[[], Any] | None) -> Program:
        return Program(self.name, self.source, self.format, identity=identity, make=make,
                       line_offset=self.line_offset)


def is_pass_list(spec: str) -> bool:
    """``a,b,c`` (hlo-opt's --passes), not a textual pipeline or ``@name``."""
    return not spec.startswith("@") and "(" not in spec and "{" not in spec


def _clone(module: Any) -> Any:
    from ..ir import emit

    return emit.clone(module)


# ------------------------------------------------------------------ identities

def file_identity(unit: Any) -> str:
    """A module read from a file (inputs.loader.Unit): its bytes and how they were read."""
    from . import cache

    return cache.digest(("kind", "file"), ("source", unit.source), ("name", unit.name),
                        ("format", unit.format), ("offset", str(unit.offset)), ("bytes", unit.data))


def module_identity(name: str, source: str, module: Any) -> str:
    """A module made otherwise (a JAX function): its bytecode."""
    from ..ir import emit
    from . import cache

    return cache.digest(("kind", "module"), ("source", source), ("name", name), ("bytes", emit.bytecode(module)))


def pipeline_identity(parent: str, spec: str | None, passes: str | None, pipeline_file: str | None,
                      root: Any, instrumentation: Any = None) -> str | None:
    """``parent`` after a pipeline: the spec as written, the pipeline files it can read
    (``pipeline_file``, the named pipelines), verification, and the Python passes of
    ``root`` (the resolved pipeline): the bytes of every plugin file loaded into its pass
    set and the installed entry points it was made with; None when it names a Python pass
    made by running code (its code is in no file) or one whose file is not in the set."""
    from ..mlir.pipeline import PIPELINE_SUFFIX, pipeline_dir
    from ..mlir.python_passes import BUILTIN, PassSet
    from . import cache

    python = root.python_passes if root.python_passes is not None else PassSet.default()
    # A pass whose code the parts below do not cover: made by running code, or taken from
    # another set's plugin file or entry point.
    covered = {BUILTIN, *python.plugin_files, *(f"entry point {e[0]}" for e in python.entry_points)}
    if any((p := python.get(ref.name)) is not None and p.origin not in covered for ref in root.passes()):
        return None
    parts: list[tuple[str, bytes | str | None]] = [
        ("parent", parent), ("spec", spec), ("passes", passes),
        ("verify_each", str(getattr(instrumentation, "verify_each", True)))]
    if pipeline_file is not None:
        parts.append(("pipeline-file", cache.file_digest(pipeline_file)))
    for path in sorted(pipeline_dir().glob(f"*{PIPELINE_SUFFIX}")):  # what @NAME can read
        parts.append((f"named:{path.name}", cache.file_digest(path)))
    for plugin in python.plugins:  # the bytes its passes ran, not the file as it is now
        parts.append(("plugin", plugin.source))
    parts.append(("entry-points", repr([tuple(e) for e in python.entry_points])))
    return cache.digest(*parts)


# ------------------------------------------------------------------ making programs

def from_unit(unit: Any) -> Program:
    """A program of one module read from a file (inputs.loader.Unit); parsed when needed."""
    from ..inputs import loader

    def make() -> tuple[Any, bytes | None]:
        loaded = loader.parse_unit(unit)
        return loaded.module, loaded.hlo_proto

    # Parsing MLIR text again is cheap and gives the same module; converting HLO or reading
    # bytecode (in a child process) is not, and those are copied.
    return Program(unit.name, unit.source, unit.format, identity=functools.partial(file_identity, unit), make=make,
                   line_offset=unit.offset, data=unit.data, make_again=unit.format == "mlir")


def from_loaded(loaded: Any) -> Program:
    """A program of a module already made (inputs.loader.LoadedModule)."""
    return Program(loaded.name, loaded.source, loaded.format, module=loaded.module, hlo_proto=loaded.hlo_proto,
                   identity=module_identity(loaded.name, loaded.source, loaded.module),
                   line_offset=loaded.line_offset)


def from_jax(fn: Any, example_args: Sequence[Any], *, name: str | None = None) -> Program:
    """The StableHLO module of ``jax.jit(fn).lower(*example_args)`` (arrays or
    ``jax.ShapeDtypeStruct`` values); InputError if jax cannot lower it."""
    from ..inputs import loader

    return from_loaded(loader.lower_jax_function(fn, list(example_args), name=name))


def input_paths(inputs: Sequence[str]) -> list[str]:
    """The files (and JAX entry points) the input words name: globs and directories expanded
    (an XLA dump directory: its ``*before_optimizations*`` modules); InputError for none."""
    from ..inputs import loader

    return loader.expand_inputs(list(inputs))


def programs(inputs: Sequence[str], options: InputOptions = InputOptions(), *,
             units: Sequence[Any] | None = None) -> list[Program]:
    """Every module of ``inputs`` (files, globs, directories, XLA dump directories, ``-``,
    JAX entry points ``package.module:function`` or ``FILE.py:function`` with
    ``options.args``), in order. Files are read here, parsed later (see the module's
    promises); a JAX function is lowered here. InputError, located, for an input that
    does not read."""
    from ..inputs import loader

    out: list[Program] = []
    for source, _, chunk, split, data in (units if units is not None else
                                          loader.module_units(list(inputs), split_input_file=options.split_input_file)):
        out.extend(unit_programs(source, options, chunk=chunk if split else None, data=data))
    if not out and not inputs:
        raise InputError("no input modules given")
    return out


def unit_programs(source: str, options: InputOptions, *, chunk: int | None = None,
                  data: bytes | None = None) -> list[Program]:
    """The programs of one input word (one chunk of it with ``chunk``)."""
    from ..inputs import loader

    if loader.is_jax_input(source, options.input_format):
        return [from_loaded(loader.load(source, input_format=options.input_format, arg_specs=options.args,
                                        lower_for=options.lower_for)[0])]
    return [from_unit(u) for u in loader.read_units(source, input_format=options.input_format,
                                                    split_input_file=options.split_input_file,
                                                    chunk=chunk, data=data)]
