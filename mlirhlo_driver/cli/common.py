"""What every front-end gives the library (where notes go, the progress line), and the one
refusal of an option a command does not have."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from ..errors import FLAGS, DriverError, spell


def say(message: str) -> None:
    """A note for the user, on stderr, naming the command line's flags."""
    sys.stderr.write(f"note: {spell(message, FLAGS)}\n")
    sys.stderr.flush()


def progress_line(quiet: bool = False, label: str = "") -> Any:
    """The library's progress events as a line on stderr while it is a terminal
    (core.progress.TerminalLine, a context manager and the callback); None otherwise."""
    from ..core.progress import terminal

    return terminal(sys.stderr, quiet=quiet, label=label)


def is_option(word: str) -> bool:
    """A word that is written as an option: it starts with a dash and is not ``-`` (stdin)."""
    return word.startswith("-") and word != "-"


def no_such_option(word: str, known: Iterable[str], command: str, hint: str | None = None) -> DriverError:
    """The refusal of ``word`` (``--name`` or ``--name=value``), an option ``command`` (its
    path, ``mlirhlo kernels``) does not have: ``no such option: --name``, with ``hint`` (the
    command's word on an option it leaves out on purpose), else the closest of ``known``
    (the command's option spellings), else the command's --help to see."""
    import re

    from ..errors import did_you_mean

    name = word.split("=", 1)[0]
    if hint is not None:
        return DriverError(f"no such option: {name}", hint=hint)
    by_key: dict[str, str] = {}
    for spelling in known:
        by_key.setdefault(_key(spelling), spelling)
    close = did_you_mean(_key(name), by_key)
    # did_you_mean quotes the keys it found: each is said as the option is spelled.
    hint = re.sub(r"'([^']*)'", lambda m: f"'{by_key[m.group(1)]}'", close) if close else f"see '{command} --help'"
    return DriverError(f"no such option: {name}", hint=hint)


def _key(option: str) -> str:
    """An option's name as it is compared for a hint: without its leading dashes, which every
    name shares, nor the dashes and underscores inside it, which read alike. With them any two
    long names look close (``--bogus``: ``--jobs``; ``--platform``: ``--input-format``), and
    ``--gpu_spec`` is ``--gpu-spec``."""
    return option.lstrip("-").replace("-", "").replace("_", "")
