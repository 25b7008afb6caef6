"""The ``mlirhlo`` entry point: one process per command, its exit code, its exit path.

``opt`` parses its own command line (cli/opt.py, argparse): it runs in loops
and scripts, and typer's import alone is a tenth of a short MLIR-only command.
Every other command is a typer command in cli/app.py, imported only for it.
"""

from __future__ import annotations

import sys
from typing import Any

from .._native import interrupts

interrupts.install()  # before any parsing: Ctrl-C from here on is one error line, never an abort

from ..errors import EXIT_FAILURE, EXIT_INTERRUPTED  # noqa: E402

# Commands that leave nothing running once their outputs are written: the console
# entry point ends them with os._exit, skipping interpreter teardown (~40 ms, more
# with jaxlib loaded). run/spmd-run/bench-pipeline keep a normal exit: worker pools
# and jax's distributed runtime clean up at exit.
_FAST_EXIT = frozenset({None, "opt", "convert", "passes", "ptx", "specs", "cache", "diff", "fit"})


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer app, for embedding and tests; importing it imports typer
        from .app import app

        return app
    raise AttributeError(name)


def _invoked_command(argv: list[str]) -> str | None:
    """The sub-command argv names (the root takes only flags), or None (also for
    the root's own --help, which lists every command)."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word
    return None


def _own_process_settings() -> None:
    """What this process, the command's own, runs with (the library sets none of it in a
    user's): XLA's INFO lines (device counts, dump paths) can surface long after the call
    that logged them, so XLA logs warnings and errors only; LLVM does not symbolize stack
    traces, which XLA's Triton log asks for on every diagnostic of a compile (0.3 s each,
    xla.backend). Children inherit both."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    os.environ.setdefault("LLVM_DISABLE_SYMBOLIZATION", "1")
    # xla.flags.OWN_PROCESS_ENV: libtpu's options in XLA_FLAGS may be taken out of this
    # process's environment (XLA would end it on them); a user's process is never changed.
    os.environ["MLIRHLO_OWN_PROCESS"] = "1"


def main(argv: list[str] | None = None) -> None:
    """Entry point: usage errors become one ``error:`` line and exit 2.

    Called without ``argv`` (the console script) it is the whole process: after
    the outputs are flushed it leaves with os._exit for the commands in
    _FAST_EXIT. With ``argv`` (tests, embedding) it raises SystemExit as usual.
    """
    if argv is not None:
        _main(argv)
        return
    import gc
    import os

    # numpy, which jaxlib's MLIR bindings import, starts OpenBLAS with a thread per
    # core that busy-waits for BLAS calls the driver never makes: ~25% of a short
    # command's CPU, taken from the other core (or another worker). One thread,
    # unless the user set it (workers and helper processes inherit it).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _own_process_settings()
    argv = sys.argv[1:]
    command = _invoked_command(argv)
    if command not in _FAST_EXIT:
        try:
            _main(argv)
        except KeyboardInterrupt:
            interrupts.report()
            interrupts.leave(EXIT_INTERRUPTED)
        except SystemExit as e:
            if e.code == EXIT_INTERRUPTED:  # a command that reported its interrupt itself
                interrupts.leave(EXIT_INTERRUPTED)
            raise
        return
    # A short-lived process: what is imported stays for its whole life, so the
    # collector need not walk it again (gc.freeze), and jaxlib's import would
    # otherwise trigger full collections over a growing heap.
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    code: Any = 0
    try:
        _main(argv)
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:
        interrupts.report()
        code = EXIT_INTERRUPTED
    except BrokenPipeError:  # as at the flush below: the reader went away (| head)
        pass
    except OSError as e:  # the system refused a write (stdout on a full disk): one line, no traceback
        _say_os_error(e)
        code = EXIT_FAILURE
    except BaseException:
        import traceback

        traceback.print_exc()
        code = EXIT_FAILURE
    if not isinstance(code, int):
        if code is not None:
            sys.stderr.write(f"{code}\n")
        code = 0 if code is None else EXIT_FAILURE
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # a reader that went away (| head) is not a failure of ours
        pass
    except OSError as e:
        if not code:
            _say_os_error(e, "cannot write stdout")
        code = code or EXIT_FAILURE
    import atexit

    # Exit handlers still run (the isolate helper is waited for, nothing is left
    # behind); only the interpreter's teardown of every object is skipped.
    atexit._run_exitfuncs()
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(code)


def _say_os_error(e: OSError, where: str | None = None) -> None:
    where = where or e.filename
    try:
        sys.stderr.write(f"error: {where + ': ' if where else ''}{e.strerror or e}\n")
    except OSError:
        pass


def _main(argv: list[str]) -> None:
    """Run one command line; always exits (SystemExit) with the command's code."""
    if argv[:1] == ["opt"]:
        from . import opt

        try:
            code = opt.main(argv[1:])
        except KeyboardInterrupt:
            interrupts.report()
            code = EXIT_INTERRUPTED
        sys.exit(code)
    if argv[:1] == ["explore"]:  # opt's command line and more: argparse, as opt's
        from . import explore

        sys.exit(explore.main(argv[1:]))
    if argv[:1] == ["watch"]:  # opt's command line too, parsed as opt's
        from . import watch

        sys.exit(watch.main(argv[1:]))
    from . import app

    app.run_app(argv, _invoked_command(argv))


if __name__ == "__main__":
    main()
