"""Writing results: one writer (:class:`Sink`) for stdout, ``-o`` and ``--dump-dir``, and
every file written atomically, so a failure never leaves a half-written file."""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

from .errors import DriverError


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write to a temp file beside ``path``, then rename it into place.

    A symlink is followed: its target is written atomically in the target's own
    directory, and the link stays. A path that is not a regular file (a FIFO, a
    character device such as /dev/null, a socket) is written directly, streaming:
    renaming over it would replace the device or pipe with a file. So is a file
    descriptor's path (/dev/stdout, /dev/fd/N, a link to one), appending, whatever the
    descriptor is open on (a pipe, or a file the shell redirected it to).
    Any failure (a directory in the way, a full disk, a file-size limit) raises
    DriverError naming ``path``, and leaves neither ``path`` nor the temp file.
    """
    path = Path(path)
    payload = data.encode() if isinstance(data, str) else data
    check_output_path(path)
    try:
        st = os.stat(path)  # follows links
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise DriverError(f"cannot write: {e.strerror or e}", file=str(path)) from None
    if st is not None and (not stat.S_ISREG(st.st_mode) or _names_a_descriptor(path)):
        _write_stream(path, payload)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # a dangling link: its target is created
    import tempfile  # here: stdout-only runs do not import it (~2 ms with shutil, random)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise DriverError(f"cannot write: {e.strerror or e}", file=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() would not
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise DriverError(f"cannot write: {e.strerror or e}", file=str(path)) from None
        raise


_DESCRIPTOR = re.compile(r"^/(?:dev|proc/(?:self|thread-self|\d+))/fd/\d+$|^/dev/std(?:out|err)$")


def _names_a_descriptor(path: Path) -> bool:
    """Whether ``path`` is, or links to, a path of an open file descriptor."""
    p = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        if _DESCRIPTOR.match(p):
            return True
        if not os.path.islink(p):
            return False
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return False


def _write_stream(path: Path, payload: bytes) -> None:
    try:
        # Appending: a descriptor's file may hold what this process wrote before.
        with open(path, "ab" if _names_a_descriptor(path) else "wb") as f:
            f.write(payload)
    except OSError as e:  # a socket cannot be opened, a reader that went away, ...
        raise DriverError(f"cannot write: {e.strerror or e}", file=str(path)) from None


def check_output_path(path: str | Path) -> None:
    """Refuse an output path that cannot become a file, before any work is done."""
    path = Path(path)
    if path.is_dir():
        raise DriverError("is a directory; expected an output file name", file=str(path))
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise DriverError(f"cannot write: {parent} is not a directory", file=str(path))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def dump_number(i: int, count: int) -> str:
    """``i`` of ``count`` numbered dumps, zero-padded to one width (at least 3 digits), so that
    sorting their names (``ls``) is their order even past 999."""
    return f"{i:0{max(3, len(str(count - 1)))}d}"


def write_stdout(data: str | bytes) -> None:
    if isinstance(data, bytes):
        if sys.stdout.isatty():
            raise DriverError("refusing to write binary output to a terminal", hint="use -o FILE")
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        text = data if data.endswith("\n") or not data else data + "\n"
        sys.stdout.write(text)
        sys.stdout.flush()


# What joins several text outputs on stdout or in one -o file (MLIR's --split-input-file marker).
SEPARATOR = "// -----\n"


class Sink:
    """Where a command's outputs go: stdout, one ``-o`` file, or files under ``dump_dir``.

    :meth:`emit` gives one output (a stage of a module): written to stdout at once, text
    outputs joined by :data:`SEPARATOR` lines, or held for ``-o`` and written by
    :meth:`finish` (one output as it is, several texts joined). :meth:`file` writes a
    file of its own (``dump_dir``/name, or a path as given). Every file is written
    atomically (:func:`write_atomic`: links followed, pipes and devices streamed).
    """

    def __init__(self, output: str | None = None, dump_dir: str | None = None) -> None:
        self.output = output if output not in ("", "-") else None
        self.dump_dir = dump_dir
        self.written: list[str] = []   # the files written, in order
        self._held: list[str | bytes] = []
        self._first = True

    def check(self) -> None:
        """Refuse an ``-o`` path that cannot become a file, before any work."""
        if self.output is not None:
            check_output_path(self.output)

    def file(self, name: str | Path, data: str | bytes) -> str:
        """Write ``name`` (under ``dump_dir`` when relative and there is one); its path."""
        path = Path(self.dump_dir) / name if self.dump_dir is not None and not Path(name).is_absolute() \
            else Path(name)
        write_atomic(path, data)
        self.written.append(str(path))
        return str(path)

    def emit(self, data: str | bytes) -> None:
        """One output: to stdout now, or held for ``-o``."""
        if self.output is not None:
            self._held.append(data)
        elif isinstance(data, bytes):
            write_stdout(data)  # one binary result (several are refused before any work)
        else:
            write_stdout(("" if self._first else SEPARATOR) + as_text(data))
        self._first = False

    def finish(self) -> None:
        """``-o``: the one file (a single output as it is, several joined)."""
        if self.output is None or not self._held:
            return
        if len(self._held) == 1:
            write_atomic(self.output, self._held[0])
        else:
            write_atomic(self.output, SEPARATOR.join(as_text(d) for d in self._held))
        self.written.append(self.output)
        self._held = []


def as_text(data: str | bytes) -> str:
    text = data if isinstance(data, str) else data.decode()
    return text if text.endswith("\n") else text + "\n"
