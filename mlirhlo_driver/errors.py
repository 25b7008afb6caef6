"""Typed errors raised by the library, and the one exit-code policy.

Every error carries enough to print one line in the compiler convention:
``error: FILE:LINE:COL: message`` (location parts omitted where unknown),
plus an optional hint such as a close-match suggestion. Its class says how a
command exits for it (:attr:`DriverError.exit_code`): bad usage or input
exits 2, an input that was fine but failed to compile or run exits 1, as
XLA's tools do. The front-ends read it there and nowhere else.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

EXIT_OK = 0
EXIT_FAILURE = 1       # the input was fine; compiling or running it failed, or it mismatched
EXIT_USAGE = 2         # bad usage or bad input
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# How errors name a parameter: as the Python API's keyword (the default), or as the
# command line's flag while a front-end runs (spelled_as_flags). An environment
# variable, so that the workers and helpers a command starts say it the same way.
_FLAGS_ENV = "MLIRHLO_DRIVER_ERRORS_NAME_FLAGS"
_NO_VALUE = object()


def param(name: str, value: Any = _NO_VALUE) -> str:
    """A parameter as the caller spells it, in a message: ``gpu_spec`` (``platform='cuda'``)
    from Python, ``--gpu-spec`` (``--platform cuda``) on the command line."""
    if os.environ.get(_FLAGS_ENV) == "1":
        flag = "--" + name.replace("_", "-")
        return flag if value is _NO_VALUE else f"{flag} {value}"
    return name if value is _NO_VALUE else f"{name}={value!r}"


def note(message: str) -> None:
    """A note for the user (a default taken, a feature this jaxlib lacks), never an error:
    ``note: MESSAGE`` on stderr while a command line runs (its workers too), else the
    ``mlirhlo_driver`` logger at INFO, which is silent unless the caller configures logging."""
    if os.environ.get(_FLAGS_ENV) == "1":
        import sys

        sys.stderr.write(f"note: {message}\n")
        sys.stderr.flush()
        return
    import logging

    logging.getLogger("mlirhlo_driver").info(message)  # INFO: below logging's last-resort printing


@contextlib.contextmanager
def spelled_as_flags() -> Iterator[None]:
    """While a command line runs: errors name its flags, not the API's parameters, and
    notes go to stderr."""
    saved = os.environ.get(_FLAGS_ENV)
    os.environ[_FLAGS_ENV] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(_FLAGS_ENV, None)
        else:
            os.environ[_FLAGS_ENV] = saved


class DriverError(Exception):
    """Base class for every error the driver reports to a user."""

    exit_code = EXIT_USAGE

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

    exit_code = EXIT_FAILURE

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

    exit_code = EXIT_FAILURE


class ExecutionError(DriverError):
    """XLA compiled the module but running it failed (out of memory, ...)."""

    exit_code = EXIT_FAILURE


class NoGpu(DriverError):
    """CUDA execution without a usable NVIDIA GPU: the command cannot be run here."""


class DistributedError(DriverError):
    """JAX's distributed runtime failed: a coordinator or process unreachable, a timeout."""

    exit_code = EXIT_FAILURE


class SpecError(DriverError):
    """A malformed or incomplete GPU target spec file."""


class FlagError(DriverError):
    """An unknown or mistyped XLA DebugOptions flag."""


class ToolchainError(DriverError):
    """No usable CUDA tool (ptxas, libdevice, ...) for a device-less CUDA compile."""


class EnvironmentMismatch(DriverError):
    """The installed jax/jaxlib does not match the version this driver pins."""


class NativeCrash(DriverError):
    """Native code (XLA, LLVM, MLIR) died on an input, in the helper process (_native/isolate.py).

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
    # Callers join several sources of names (a pipeline's and the catalogue's): name each once.
    matches = difflib.get_close_matches(word, list(dict.fromkeys(choices)), n=n, cutoff=0.6)
    if not matches:
        return None
    return "did you mean " + ", ".join(f"'{m}'" for m in matches) + "?"
