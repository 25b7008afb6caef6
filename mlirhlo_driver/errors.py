"""Typed errors raised by the library, and the one exit-code policy.

Every error carries enough to print one line in the compiler convention:
``error: FILE:LINE:COL: message`` (location parts omitted where unknown),
plus an optional hint such as a close-match suggestion. Its class says how a
command exits for it (:attr:`DriverError.exit_code`): bad usage or input
exits 2, an input that was fine but failed to compile or run exits 1, as
XLA's tools do. The front-ends read it there and nowhere else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

EXIT_OK = 0
EXIT_FAILURE = 1       # the input was fine; compiling or running it failed, or it mismatched
EXIT_USAGE = 2         # bad usage or bad input
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# How errors name a parameter. A message is built once, deep in the library, but read by
# a caller that spells parameters its own way: the Python API by keyword (``gpu_spec``,
# ``platform='cuda'``), a command line by flag (``--gpu-spec``, ``--platform cuda``). So
# :func:`param` leaves a marker in the text and the reader picks the spelling when it
# renders it (:func:`spell`, :meth:`DriverError.format`): no process-wide switch, and a
# message made in a worker reads right wherever it is printed.
PARAMS = "params"   # Python: keyword names
FLAGS = "flags"     # a command line: its flags
SPELLINGS = (PARAMS, FLAGS)
_OPEN, _SEP, _CLOSE = "\ue000", "\ue001", "\ue002"
_MARKER = re.compile(f"{_OPEN}([^{_SEP}{_CLOSE}]*)(?:{_SEP}([^{_SEP}{_CLOSE}]*){_SEP}([^{_SEP}{_CLOSE}]*))?{_CLOSE}")
_NO_VALUE = object()


def param(name: str, value: Any = _NO_VALUE) -> str:
    """A parameter (and its value) in a message, spelled when the message is rendered:
    ``gpu_spec`` (``platform='cuda'``) for Python, ``--gpu-spec`` (``--platform cuda``) for
    a command line (:func:`spell`)."""
    if value is _NO_VALUE:
        return f"{_OPEN}{name}{_CLOSE}"
    return f"{_OPEN}{name}{_SEP}{value!r}{_SEP}{value}{_CLOSE}"


def xla_flag(name: str, value: Any = _NO_VALUE) -> str:
    """An XLA DebugOptions flag (and its value) in a message: ``--xla_name=value`` on a
    command line, ``xla_name='value'`` (the ``xla_flags`` key) in Python."""
    return param("--" + name, value)


def spell(text: str, spelling: str = PARAMS) -> str:
    """``text`` with its :func:`param` markers spelled for ``spelling`` (:data:`PARAMS` or
    :data:`FLAGS`)."""
    if _OPEN not in text:
        return text
    if spelling not in SPELLINGS:
        raise ValueError(f"unknown spelling {spelling!r}")

    def one(m: re.Match[str]) -> str:
        name, shown, plain = m.group(1), m.group(2), m.group(3)
        if name.startswith("--"):  # an XLA flag (xla_flag): its own name, underscores kept
            if spelling == FLAGS:
                return name if plain is None else f"{name}={plain}"
            return name[2:] if shown is None else f"{name[2:]}={shown}"
        if spelling == FLAGS:
            flag = "--" + name.replace("_", "-")
            return flag if plain is None else f"{flag} {plain}"
        return name if shown is None else f"{name}={shown}"

    return _MARKER.sub(one, text)


def log_note(message: str) -> None:
    """Where the Python API's notes go by default (a default taken, a feature this jaxlib
    lacks): the ``mlirhlo_driver`` logger at INFO, silent unless the caller configures
    logging. A command line passes its own (``note: ...`` lines on stderr)."""
    import logging

    # INFO: below logging's last-resort printing. Parameters named as Python names them.
    logging.getLogger("mlirhlo_driver").info(spell(message, PARAMS))


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

    def about(self, source: str) -> DriverError:
        """This error, naming ``source`` (a module's file; ``-`` is stdin, unnamed) as its
        file where it names none: the work on that module failed. Returns itself."""
        if self.file is None and source != "-":
            self.file = source
        return self

    def location(self, spelling: str = PARAMS) -> str:
        parts = [p for p in (self.file, self.line, self.col) if p is not None]
        return spell(":".join(str(p) for p in parts), spelling)

    def text(self, spelling: str = PARAMS) -> str:
        """``file:line:col: message (hint)``, parameters spelled for ``spelling``
        (:data:`PARAMS`: the API's keywords; :data:`FLAGS`: a command line's flags)."""
        loc = self.location(spelling)
        text = spell(f"{loc}: {self.message}" if loc else self.message, spelling)
        if self.hint:
            text += f" ({spell(self.hint, spelling)})"
        # Messages can quote the input (an op name from a fuzzed artifact): control
        # characters there must not break the one-line contract or the terminal.
        return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)

    def format(self, spelling: str = FLAGS) -> str:
        """The command line's one line: ``error: file:line:col: message (hint)``, naming
        the command line's flags unless ``spelling`` says otherwise."""
        return "error: " + self.text(spelling)

    def __str__(self) -> str:
        """What Python shows (a traceback, a notebook): :meth:`text` with the API's
        parameter names, and no ``error:`` prefix."""
        return self.text(PARAMS)


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
    import difflib  # error paths only: not in every command's start-up

    # Callers join several sources of names (a pipeline's and the catalogue's): name each once.
    matches = difflib.get_close_matches(word, list(dict.fromkeys(choices)), n=n, cutoff=0.6)
    if not matches:
        return None
    return "did you mean " + ", ".join(f"'{m}'" for m in matches) + "?"
