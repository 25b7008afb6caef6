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

    def as_text(self, dialect: str = "stablehlo") -> str:
        """Text of the module: ``stablehlo``, ``mhlo`` or ``hlo``."""
        stage = {"stablehlo": "stablehlo", "mhlo": "mhlo", "hlo": "hlo-before-optimizations"}.get(dialect)
        if stage is None:
            raise InputError(f"unknown dialect '{dialect}' (stablehlo, mhlo, hlo)")
        out = self.stage(stage)
        assert isinstance(out, str)
        return out


def load_all(sources: str | list[str], *, input_format: str | None = None,
             split_input_file: bool = False, args: str | None = None) -> list[Program]:
    """Every module in the given files, globs, directories or JAX entry points."""
    specs = [sources] if isinstance(sources, str) else list(sources)
    return [Program(m.name, m.source, m.module, m.format)
            for m in inputs.load_inputs(specs, input_format=input_format,
                                        split_input_file=split_input_file, arg_specs=args)]


def load(source: str, *, input_format: str | None = None, args: str | None = None) -> Program:
    """Exactly one module from a file or ``package.module:function`` (with ``args``)."""
    programs = load_all(source, input_format=input_format, args=args)
    if len(programs) != 1:
        raise InputError(f"expected one module, found {len(programs)}", file=source)
    return programs[0]
