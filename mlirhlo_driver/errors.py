"""Typed errors raised by the library. Only the CLI turns them into exit codes.

Every error carries enough to print one line in the compiler convention:
``error: FILE:LINE:COL: message`` (location parts omitted where unknown),
plus an optional hint such as a close-match suggestion.
"""

from __future__ import annotations

import difflib
import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
from collections.abc import Iterable


class DriverError(Exception):
    """Base class for every error the driver reports to a user."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.hint = hint

    def location(self) -> str:
        parts = [p for p in (self.file, self.line, self.col) if p is not None]
        return ":".join(str(p) for p in parts)

    def format(self) -> str:
        """The one-line form: ``error: file:line:col: message`` (+ hint)."""
        loc = self.location()
        text = f"error: {loc}: {self.message}" if loc else f"error: {self.message}"
        if self.hint:
            text += f" ({self.hint})"
        # Messages can quote the input (an op name from a fuzzed artifact): control
        # characters there must not break the one-line contract or the terminal.
        return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)

    def __str__(self) -> str:  # pragma: no cover - used in tracebacks only
        return self.format()


class InputError(DriverError):
    """A file or argument that cannot be loaded as a module."""


class PipelineError(DriverError):
    """A pass pipeline spec that is malformed or names unknown passes."""


class PassFailure(DriverError):
    """A pass ran and failed; carries diagnostics and a reproducer path."""

    def __init__(self, message: str, *, pass_name: str | None = None,
                 diagnostics: str = "", reproducer: str | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.pass_name = pass_name
        self.diagnostics = diagnostics
        self.reproducer = reproducer


class StageError(DriverError):
    """An unknown stage, or a stage the chosen platform cannot produce."""


class CompileError(DriverError):
    """XLA rejected the module or failed while compiling it."""


class SpecError(DriverError):
    """A malformed or incomplete GPU target spec file."""


class FlagError(DriverError):
    """An unknown or mistyped XLA DebugOptions flag."""


class ToolchainError(DriverError):
    """No usable CUDA tool (ptxas, libdevice, ...) for a device-less CUDA compile."""


class EnvironmentMismatch(DriverError):
    """The installed jax/jaxlib does not match the version this driver pins."""


class NativeCrash(DriverError):
    """Native code (XLA, LLVM, MLIR) died on an input, in the helper process (isolate.py).

    ``status`` is the helper's wait status (None if unknown), ``native_log``
    what it wrote on fd 1/2 before dying; ``timed_out``: it was killed for
    running past its deadline.
    """

    def __init__(self, message: str, *, status: int | None = None, native_log: str = "",
                 timed_out: bool = False, **kw) -> None:
        super().__init__(message, **kw)
        self.status = status
        self.native_log = native_log
        self.timed_out = timed_out


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str | None:
    """A 'did you mean ...?' hint naming the closest choices, or None."""
    matches = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    if not matches:
        return None
    return "did you mean " + ", ".join(f"'{m}'" for m in matches) + "?"
