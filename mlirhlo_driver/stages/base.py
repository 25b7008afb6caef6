"""What a stage is: a name mapped to a function of a :class:`StageRequest`.

As in Triton's driver, a stage is a name mapped to a function, and the name
doubles as the file extension where natural (``<module>.<stage>.<ext>``). Each
level adds its stages to a :class:`Registry` with one explicit ``add_stages``
call (stages/mlir.py, then xla/stages.py), in pipeline order; the populated
registry is ``mlirhlo_driver.registry``'s. MLIR-level stages need no XLA compile;
XLA stages read one compile per request, however many are asked.

This module is import-light (no jax) so ``--list-stages`` starts fast; stage
functions import what they need when called.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import DriverError, StageError, did_you_mean, param

PLATFORMS = ("cpu", "cuda")
MLIR = "mlir"  # computed from the module alone
XLA = "xla"    # read from an XLA compile for a platform


@dataclass(frozen=True)
class StageOptions:
    """Everything a stage's output depends on, besides the module."""

    target: Any = None                     # targets.Target (frozen); None: MLIR-level stages only
    target_version: str | None = None      # VHLO target
    debug_info: bool = False               # print MLIR locations
    fold_constants: bool = False           # check files: leave their constants for XLA to fold
    # Partitions to compile a sharded module for: None, as many as the module says
    # (``mhlo.num_partitions``); 1, the unpartitioned program.
    num_partitions: int | None = None
    # A dumped module's compile options (tpu.replay.DumpOptions): its replicas, partitions,
    # device assignment and build options, as it was compiled; None: the module's own.
    dumped: Any = None

    @property
    def platform(self) -> str | None:
        """``cpu``, ``cuda``, or None (MLIR-level stages only)."""
        return self.target.platform if self.target is not None else None

    @property
    def gpu_spec(self) -> Any:
        """The target's GPU spec (cuda.specs.GpuSpec), or None."""
        return self.target.spec if self.target is not None else None

    @property
    def xla_flags(self) -> tuple[tuple[str, Any], ...]:
        """The target's DebugOptions."""
        return self.target.xla_flags if self.target is not None else ()


@dataclass(frozen=True)
class Stage:
    name: str
    ext: str                         # file suffix after the module name; the stage name where natural
    level: str                       # MLIR or XLA
    binary: bool
    description: str
    produce: Callable[..., str | bytes | dict[str, bytes]] = field(repr=False)
    platforms: frozenset[str] = frozenset(PLATFORMS)
    alias_of: str | None = None      # another name for that stage (left out of 'all')
    # A multi-file stage produces {part: data} (e.g. one cubin per kernel module),
    # written as <module>.<part>.<ext>; see files().
    multi: bool = False
    # A multi-file text stage whose parts, for -o or stdout, join into one text, each
    # after a "<join> ----- <part> -----" line (triton-passes: one log per fusion).
    join: str | None = None
    # What the stage reads of XLA's compile besides what every compile gives: dumps
    # (xla.backend.ALL_DUMPS' names) and codegen emitters whose output XLA writes only on
    # request (Triton's). The first compile of a request asks for what all its stages
    # declare here, so one compile serves them (xla/stages.py dumps_for).
    dumps: tuple[str, ...] = ()
    emitters: tuple[str, ...] = ()
    # Not a user's output but a product other parts read (diff's summary, kernel rows as
    # data): produced and cached as a stage, never listed or in 'all'.
    hidden: bool = False
    # What a multi-file stage's parts are, for the error that it has several.
    parts: str = "one per kernel module"

    def filename(self, module_name: str, part: str | None = None) -> str:
        return f"{module_name}.{part}.{self.ext}" if part else f"{module_name}.{self.ext}"

    def files(self, module_name: str, data: str | bytes | dict[str, bytes]) -> list[tuple[str, str | bytes]]:
        """(file name, data) for what this stage produced for a module."""
        if isinstance(data, dict):
            return [(self.filename(module_name, part), d) for part, d in data.items()]
        return [(self.filename(module_name), data)]


def single_output(stage: Stage, data: str | bytes | dict[str, bytes]) -> str | bytes:
    """The one output of a stage, for -o or stdout; StageError if it made several files."""
    if not isinstance(data, dict):
        return data
    if stage.join is not None:
        return join_sections(stage.join, [(part, d.decode() if isinstance(d, bytes) else d)
                                          for part, d in data.items()])
    if len(data) == 1:
        return next(iter(data.values()))
    if not data:
        raise StageError(f"stage '{stage.name}' has nothing to give: the compile made no kernels "
                         "(XLA ran every op without one)")
    raise StageError(f"stage '{stage.name}' gives {len(data)} files ({stage.parts}): "
                     "use --dump-dir", hint=", ".join(stage.filename("<module>", p) for p in list(data)[:3])
                     + (", ..." if len(data) > 3 else ""))


def join_sections(comment: str, sections: list[tuple[str, str]]) -> str:
    """Texts as one, each after a ``<comment> ----- <name> -----`` line (tools split them again)."""
    return "".join(f"{comment} ----- {name} -----\n{text}" + ("" if text.endswith("\n") else "\n")
                   for name, text in sections)


class Deferred(abc.ABC):
    """A stage output that is finished later, together with others of its kind.

    A stage returns one when its last step is a tool whose start-up costs more
    than its work on one module (``sass``: nvdisasm spends ~0.2 s of CPU
    starting, whatever the input). A batch (batch/opt.py) holds up to
    :attr:`group_size` of them and finishes them with one run of the tool; a
    lone request finishes its own at once (:meth:`StageRequest.produce`).
    What a module gets must not depend on which others it was finished with.
    """

    group_size = 16

    @property
    def size(self) -> int:
        """Bytes it holds until finished (a batch finishes a group early past a bound)."""
        return 0

    @classmethod
    @abc.abstractmethod
    def finish_all(cls, items: list[Deferred]) -> list[str | bytes | DriverError]:
        """Each item's output, or the DriverError that item failed with, in order."""

    def finish(self) -> str | bytes:
        out = type(self).finish_all([self])[0]
        if isinstance(out, DriverError):
            raise out
        return out


class Registry:
    """Stages by name, in the order they were added (pipeline order)."""

    def __init__(self) -> None:
        self.stages: dict[str, Stage] = {}

    def add(self, stage: Stage) -> Stage:
        if stage.name in self.stages:
            raise ValueError(f"stage '{stage.name}' registered twice")
        self.stages[stage.name] = stage
        return stage

    def available(self, platform: str | None) -> list[Stage]:
        """Stages in pipeline order; without a platform, only MLIR-level ones."""
        return [s for s in self.stages.values() if not s.hidden
                and (s.level == MLIR or (platform is not None and platform in s.platforms))]

    def get(self, name: str, platform: str | None) -> Stage:
        """The stage ``name`` for ``platform``; StageError naming the choices if there is none."""
        stage = self.stages.get(name)
        names = [s.name for s in self.available(platform)]
        if stage is None:
            raise StageError(f"unknown stage '{name}'",
                             hint=did_you_mean(name, names) or "stages: " + ", ".join(names))
        if stage.level == XLA and platform is None:
            raise StageError(f"stage '{name}' is produced by XLA: give "
                             + param("platform", "|".join(sorted(stage.platforms))))
        if stage.level == XLA and platform not in stage.platforms:
            raise StageError(f"stage '{name}' does not exist for {param('platform', platform)}",
                             hint=f"{platform} stages: " + ", ".join(names))
        return stage

    def all_for(self, platform: str | None) -> list[Stage]:
        """What ``--stage all`` produces: every available stage, aliases once."""
        return [s for s in self.available(platform) if s.alias_of is None]


@dataclass
class StageRequest:
    """What stages are computed from: a module and its options.

    What several stages read (XLA's compile, a cubin assembly) is computed once
    per request through :meth:`derived`, so asking for several stages never
    compiles a module twice.
    """

    module: Any
    module_name: str
    options: StageOptions
    registry: Registry = field(repr=False)  # the stages produce() can give
    # The stages the caller will ask for: the first XLA compile dumps what they all need.
    stages: tuple[str, ...] = ()
    source: str | None = None  # the file, for errors in check ops (xla.backend.module_for_xla)
    line_offset: int = 0       # the chunk's first line in it (--split-input-file)
    defer: bool = False        # produce() may return a Deferred: the caller finishes it
    # XLA's pass timing and IR printing around passes (xla.instrument.XlaInstrumentation):
    # the request's first compile is then instrumented, and what it showed is kept in
    # ``instrumented`` (xla.instrument.Instrumented) for the caller.
    instrumentation: Any = None
    instrumented: Any = None
    # Notes about the module the stages found (a check file's kept constants, checked
    # values XLA folded), for the caller to print with the module's other output.
    notes: list[str] = field(default_factory=list)
    _derived: dict[str, Any] = field(default_factory=dict, repr=False)

    def expect(self, names: list[str] | tuple[str, ...]) -> None:
        """The caller will ask for these stages too: the first XLA compile dumps what they
        need (no effect once it has run; a stage that needs more compiles again, once)."""
        self.stages = tuple(dict.fromkeys((*self.stages, *names)))

    def derived(self, key: str, compute: Callable[[StageRequest], Any]) -> Any:
        """``compute(self)`` once per request, for what several stages read (a cubin assembly)."""
        if key not in self._derived:
            self._derived[key] = compute(self)
        return self._derived[key]

    def produce(self, name: str) -> str | bytes | dict[str, bytes] | Deferred:
        """A stage's output; a dict {part: bytes} for multi-file stages (Stage.multi).
        With ``defer``, a :class:`Deferred` for stages that finish in groups."""
        stage = self.registry.stages.get(name)
        out = (stage if stage is not None and stage.hidden else
               self.registry.get(name, self.options.platform)).produce(self)
        if isinstance(out, Deferred) and not self.defer:
            out = out.finish()
        return out
