"""What every front-end gives the library: where notes go, and the progress line."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import FLAGS, spell


def say(message: str) -> None:
    """A note for the user, on stderr, naming the command line's flags."""
    sys.stderr.write(f"note: {spell(message, FLAGS)}\n")
    sys.stderr.flush()


def progress_line(quiet: bool = False, label: str = "") -> Any:
    """The library's progress events as a line on stderr while it is a terminal
    (core.progress.TerminalLine, a context manager and the callback); None otherwise."""
    from ..core.progress import terminal

    return terminal(sys.stderr, quiet=quiet, label=label)
