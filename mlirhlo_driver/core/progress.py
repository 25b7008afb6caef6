"""Progress of work that takes a while: events for a callback, and a line on a terminal.

The library reports progress as :class:`Progress` events to a callback its caller
passes (``progress=`` in the API, None: nothing). A command line passes
:func:`terminal` 's line: a rich progress line on stderr while it is a terminal, shown
only once the work has run for :data:`DELAY` seconds (short commands print nothing
more), and cleared when the work ends. Nothing at all when stderr is not a terminal, or
with ``--quiet``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DELAY = 2.0  # seconds of work before a line is worth showing


@dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` steps (None: unknown), and what is being done now."""

    done: int
    total: int | None
    what: str


Callback = Callable[[Progress], None]


def report(callback: Callback | None, done: int, total: int | None, what: str) -> None:
    """Give the event to ``callback``, if there is one."""
    if callback is not None:
        callback(Progress(done, total, what))


class TerminalLine:
    """A rich progress line on ``stream`` (a terminal), shown after :data:`DELAY` seconds.

    Use as a context manager around the work and as the callback; leaving clears it.
    """

    def __init__(self, stream: Any, delay: float | None = None, label: str = "") -> None:
        self._stream = stream
        self._delay = DELAY if delay is None else delay
        self._label = label
        self._start = time.monotonic()
        self._progress: Any = None
        self._task: Any = None
        self._last: Progress | None = None

    def __enter__(self) -> TerminalLine:
        self._start = time.monotonic()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __call__(self, event: Progress) -> None:
        self._last = event
        if self._progress is None:
            if time.monotonic() - self._start < self._delay:
                return
            self._show()
        self._update(event)

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        console = Console(file=self._stream, stderr=True)
        self._progress = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)
        self._progress.start()
        self._task = self._progress.add_task(self._label, total=None)

    def _update(self, event: Progress) -> None:
        what = f"{self._label}: {event.what}" if self._label else event.what
        self._progress.update(self._task, completed=event.done, total=event.total, description=what)


def terminal(stream: Any, *, quiet: bool = False, label: str = "") -> TerminalLine | None:
    """A :class:`TerminalLine` on ``stream`` when it is a terminal and not ``quiet``; else None."""
    if quiet:
        return None
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError, OSError):
        return None
    return TerminalLine(stream, label=label)
