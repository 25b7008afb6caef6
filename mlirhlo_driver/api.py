"""The library API: load modules, run pipelines, produce stages.

Example::

    import mlirhlo_driver as mhd

    prog = mhd.load("dump/module_0001.jit_f.before_optimizations.txt")
    simple = prog.optimize("@simplify")          # a new Program; prog is unchanged
    print(simple.stage("stablehlo"))             # MLIR text
    artifact = simple.stage("vhlo")              # portable artifact bytes

A ``Program`` holds one StableHLO module and never changes: every stage is a
function of (module, options), so results can be cached or computed in worker
processes without hidden state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import inputs, pipeline, stages
from .errors import InputError


@dataclass
class Program:
    """One module, as loaded or after a pipeline."""

    name: str
    source: str
    module: Any = field(repr=False)  # jaxlib.mlir.ir.Module; treat as read-only
    input_format: str = "mlir"
    last_run: pipeline.PipelineRun | None = field(default=None, repr=False)
    hlo_proto: bytes | None = field(default=None, repr=False)  # as read, for HLO inputs

    def optimize(self, spec: str | None = None, *, passes: str | None = None,
                 pipeline_file: str | None = None,
                 instrumentation: pipeline.Instrumentation | None = None,
                 reproducer_dir: str | None = None) -> Program:
        """Run a pipeline (MLIR syntax, ``@name``, a ``passes`` list or a file) on a copy."""
        from . import emit

        root = pipeline.resolve(spec, passes=passes, pipeline_file=pipeline_file)
        copy = emit.clone(self.module)
        if root is None:
            return Program(self.name, self.source, copy, self.input_format)
        run = pipeline.run(copy, root, instrumentation=instrumentation, module_name=self.name,
                           reproducer_dir=reproducer_dir, source_for_reproducer=self.source)
        return Program(self.name, self.source, copy, self.input_format, run)

    def stage(self, name: str = "stablehlo", **options: Any) -> str | bytes:
        """The module at an MLIR-level stage, or at an XLA stage with ``platform=``."""
        return stages.StageRequest(self.module, self.name, stages.StageOptions(**options)).produce(name)

    def convert(self, fmt: str, *, target_version: str | None = None) -> str | bytes:
        """The module in ``fmt`` (one of :data:`CONVERT_FORMATS`); see :func:`convert`."""
        return convert(self, fmt, target_version=target_version)

    def as_text(self, dialect: str = "stablehlo") -> str:
        """Text of the module: ``stablehlo``, ``mhlo`` or ``hlo``."""
        stage = {"stablehlo": "stablehlo", "mhlo": "mhlo", "hlo": "hlo-before-optimizations"}.get(dialect)
        if stage is None:
            raise InputError(f"unknown dialect '{dialect}' (stablehlo, mhlo, hlo)")
        out = self.stage(stage)
        assert isinstance(out, str)
        return out


# Formats a module converts to (``mlirhlo convert --to``, hlo-opt's output).
CONVERT_FORMATS = ("hlo", "hlo-proto", "hlo-pbtxt", "stablehlo", "bytecode", "vhlo", "mhlo")


def convert(loaded: Any, fmt: str, *, target_version: str | None = None) -> str | bytes:
    """``loaded`` (a Program or inputs.LoadedModule: ``.module``, ``.hlo_proto``) in ``fmt``.

    HLO read as HLO stays HLO (its proto is printed, not a trip through
    StableHLO, which would rename computations). ``target_version``: the VHLO
    version of a ``vhlo`` artifact.
    """
    from . import emit

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
    from .errors import DriverError, did_you_mean

    if fmt not in CONVERT_FORMATS:
        raise DriverError(f"unknown format '{fmt}'",
                          hint=did_you_mean(fmt, CONVERT_FORMATS) or ", ".join(CONVERT_FORMATS))


def load_all(sources: str | list[str], *, input_format: str | None = None,
             split_input_file: bool = False, args: str | None = None) -> list[Program]:
    """Every module in the given files, globs, directories or JAX entry points."""
    specs = [sources] if isinstance(sources, str) else list(sources)
    return [Program(m.name, m.source, m.module, m.format, hlo_proto=m.hlo_proto)
            for m in inputs.load_inputs(specs, input_format=input_format,
                                        split_input_file=split_input_file, arg_specs=args)]


def load(source: str, *, input_format: str | None = None, args: str | None = None) -> Program:
    """Exactly one module from a file or ``package.module:function`` (with ``args``)."""
    programs = load_all(source, input_format=input_format, args=args)
    if len(programs) != 1:
        raise InputError(f"expected one module, found {len(programs)}", file=source)
    return programs[0]


@dataclass
class Compiled:
    """A module compiled by XLA for one target; every stage reads the same compile.

    Example::

        c = mlirhlo_driver.compile("model.hlo", platform="cuda", gpu_spec="h100_sxm")
        ptx = c.stage("ptx")            # str
        c.write("out/", stages="all")   # <module>.<stage>.<ext> files
    """

    program: Program
    request: stages.StageRequest = field(repr=False)

    @property
    def platform(self) -> str:
        return self.request.options.platform  # type: ignore[return-value]

    def stage(self, name: str) -> str | bytes | dict[str, bytes]:
        """Output of one stage (MLIR-level or XLA); compiles at most once.
        Multi-file stages (``cubin``) give {kernel module: bytes}."""
        return self.request.produce(name)

    def stage_names(self) -> list[str]:
        return [s.name for s in stages.all_for(self.platform)]

    def write(self, directory: str, stages_to_write: str | list[str] = "all") -> list[str]:
        """Write stages as ``<module>.<ext>`` files atomically; returns the paths."""
        import os

        from .outputs import write_atomic

        names = self.stage_names() if stages_to_write == "all" else list(stages_to_write)
        paths = []
        for name in names:
            for filename, data in stages.get(name, self.platform).files(self.program.name, self.stage(name)):
                path = os.path.join(directory, filename)
                write_atomic(path, data)
                paths.append(path)
        return paths


def compile(module_or_path: Program | str, *, platform: str = "cpu", gpu_spec: str | None = None,
            xla_flags: dict[str, Any] | None = None, args: str | None = None) -> Compiled:
    """Compile with XLA for ``platform`` ("cpu", or "cuda" device-less with ``gpu_spec``).

    ``xla_flags`` are DebugOptions fields by name (``{"xla_gpu_autotune_level": 0}``).
    """
    from . import gpu_specs, xla_flags as flags_mod
    from .errors import DriverError

    program = module_or_path if isinstance(module_or_path, Program) else load(module_or_path, args=args)
    if platform not in stages.PLATFORMS:
        raise DriverError(f"unknown platform '{platform}'", hint="cpu or cuda")
    spec = None
    if platform == "cuda":
        spec = gpu_specs.resolve_spec(gpu_spec or gpu_specs.DEFAULT_SPEC)
    elif gpu_spec is not None:
        raise DriverError("gpu_spec is for platform='cuda'")
    flags = dict(xla_flags or {})
    if flags:
        flags_mod.check_names(flags, flags_mod.known_names())
    options = stages.StageOptions(platform=platform, gpu_spec=spec, xla_flags=tuple(sorted(flags.items())))
    return Compiled(program, stages.StageRequest(program.module, program.name, options,
                                                 source=program.source))
