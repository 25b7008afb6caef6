"""The Python API, in the style of JAX's ``Lowered``/``Compiled``.

Example (from the checkout's root; every name below is defined here)::

    import mlirhlo_driver as mh

    p = mh.load("tests/data/mlp_train_step.before_optimizations.txt")   # any input the CLI reads
    q = p.optimize("canonicalize,cse")    # a --passes list, a textual pipeline or "@name"
    q.as_text(); q.as_text("hlo")         # MLIR-level stages need no compile
    t = mh.Target.cuda("h100_sxm", xla_flags={"xla_gpu_autotune_level": 0})  # or mh.Target.cpu()
    c = q.compile(t)                      # one XLA compile serves every stage
    c.stage("ptx"); list(c.stages); c.kernels()[0].registers
    c.write("/tmp/mlp-out", stages=["ptx", "sass"])
    r = mh.load("tests/data/erf_inv.mlir").run(reference="interpreter")   # r.ok, r.mismatches

The API is the compile core (mlirhlo_driver.core) that every command uses: a
:class:`Program` (core.program) holds one StableHLO module and never changes; a
:class:`Compiled` (core.compiled) reads its stages from one XLA compile, and from the
stage cache the command line fills too (``cache=False`` turns it off). Errors are the
package's typed errors (``mlirhlo_driver.errors``), with file, line and column where
they have one; ``str(error)`` names the API's parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.compiled import Compiled
from .core.program import CONVERT_FORMATS, InputOptions, Program
from .errors import DriverError, InputError
from .targets import Target

if TYPE_CHECKING:  # fit's rows: batch.fit is imported by fit() alone (start-up of the rest)
    from .batch.fit import FitRow

__all__ = ["CONVERT_FORMATS", "Compiled", "Program", "Target", "check_format", "compile", "convert",
           "fit", "from_jax", "llvm_to_ptx", "load", "load_all"]


def convert(source: Any, fmt: str, *, target_version: str | None = None,
            input_format: str | None = None, args: str | None = None) -> str | bytes:
    """The module of ``source`` (a Program, a module the loader made, or what :func:`load`
    reads) in ``fmt``, one of :data:`CONVERT_FORMATS` (see :meth:`Program.convert`)."""
    from .core.program import from_loaded

    check_format(fmt)
    if isinstance(source, str):
        program = load(source, input_format=input_format, args=args)
    else:
        program = source if isinstance(source, Program) else from_loaded(source)
    return program.convert(fmt, target_version=target_version)


def check_format(fmt: str) -> None:
    """DriverError unless ``fmt`` is one of :data:`CONVERT_FORMATS` (with close matches)."""
    from .errors import did_you_mean

    if fmt not in CONVERT_FORMATS:
        raise DriverError(f"unknown format '{fmt}'",
                          hint=did_you_mean(fmt, CONVERT_FORMATS) or ", ".join(CONVERT_FORMATS))


def load_all(sources: str | list[str], *, input_format: str | None = None,
             split_input_file: bool = False, args: str | None = None) -> list[Program]:
    """Every module in the given files, globs, directories or JAX entry points
    (``package.module:function`` or ``FILE.py:function`` with ``args``, e.g.
    ``"f32[8,128],i32[8]"``). A file's module is parsed when first needed (a stage not in
    the stage cache): InputError, with file, line and column, for an input that does not
    read."""
    from .core import program

    specs = [sources] if isinstance(sources, str) else list(sources)
    return program.programs(specs, InputOptions(input_format, split_input_file, args))


def load(source: str, *, input_format: str | None = None, args: str | None = None) -> Program:
    """Exactly one module from a file (HLO text or proto, StableHLO/MHLO text or
    bytecode, VHLO; detected by content) or a JAX function with ``args``."""
    programs = load_all(source, input_format=input_format, args=args)
    if len(programs) != 1:
        raise InputError(f"expected one module, found {len(programs)}", file=source)
    return programs[0]


def from_jax(fn: Any, *example_args: Any, name: str | None = None) -> Program:
    """The StableHLO module of ``jax.jit(fn).lower(*example_args)``: arrays or
    ``jax.ShapeDtypeStruct`` values. 64-bit arguments lower in jax's x64 mode, as the
    CLI's ``--args`` does. InputError if jax cannot lower it."""
    from .core import program

    return program.from_jax(fn, example_args, name=name)


def compile(source: Program | str, target: Target | None = None, *, platform: str | None = None,
            gpu_spec: str | None = None, xla_flags: dict[str, Any] | None = None,
            args: str | None = None, cache: bool = True) -> Compiled:
    """``load(source).compile(target)``. Without a target, one is made from
    ``platform`` (default ``"cpu"``), ``gpu_spec`` and ``xla_flags``, as
    :meth:`Target.cpu` and :meth:`Target.cuda` make it. For a TPU target
    (:meth:`Target.tpu`) a JAX function (``"model.py:f"`` with ``args``) is lowered for the
    TPU, in the driver's TPU process. ``cache``: False neither reads
    nor writes the stage cache."""
    if target is None:
        target = Target.of(platform or "cpu", gpu_spec=gpu_spec, xla_flags=xla_flags)
    elif platform is not None or gpu_spec is not None or xla_flags is not None:
        raise DriverError("give a target, or platform/gpu_spec/xla_flags, not both")
    if isinstance(source, Program):
        program = source
    elif target.topology is not None:  # a JAX function is lowered for the TPU (its lowering rules)
        from .core import program as core_program

        found = core_program.programs([source], InputOptions(args=args, lower_for=target.lower_for()))
        if len(found) != 1:
            raise InputError(f"expected one module, found {len(found)}", file=source)
        program = found[0]
    else:
        program = load(source, args=args)
    return program.compile(target, cache=cache)


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


def fit(source: str, targets: Any, *, args: str | None = None, input_format: str | None = None,
        num_partitions: int | None = None, jobs: int = 0, cache: bool = True) -> list[FitRow]:
    """Will ``source`` fit? One :class:`FitRow` per target of ``targets`` (a :class:`Target`,
    or a sequence of them: ``[Target.tpu("v5e:2x2"), Target.tpu("v5p:2x2x1"),
    Target.cuda("h100_sxm")]``), as ``mlirhlo fit`` prints them: each a device-less compile,
    its per-device requirement (the ``memory`` stage's total) against the target's capacity
    (the TPU generation's HBM, the GPU spec's memory). A TPU compile libtpu refuses for HBM is
    a row with XLA's numbers (``fits`` False, ``source`` "xla-oom"); another failed compile a
    row with ``source`` "error". ``source`` is a file or ``"model.py:f"`` with ``args``,
    lowered for each TPU target. ``jobs`` > 0 compiles the targets in that many worker
    processes at once. ``num_partitions``: a sharded module's (None: as it says)."""
    from .batch import fit as batch_fit

    if not isinstance(source, str):
        raise DriverError("fit reads its program from a file or a JAX function's entry point: give a path "
                          "or 'model.py:f'", hint="fit compiles it in each target's process, workers too")
    listed = [targets] if isinstance(targets, Target) else list(targets)
    if not all(isinstance(t, Target) for t in listed):
        raise DriverError("targets: give Target values (Target.tpu(...), Target.cuda(...))")
    if any(t.platform not in ("tpu", "cuda") for t in listed):
        raise DriverError("fit measures TPU and CUDA targets: a CPU target has no device memory to fit in")
    return batch_fit.run(source, listed, input_format=input_format, args=args, num_partitions=num_partitions,
                         cache=cache, jobs=jobs)
