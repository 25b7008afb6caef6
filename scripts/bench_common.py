"""What the benchmark scripts share: timing a command as a fresh process."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def driver_cli(root: str | Path | None = None) -> list[str]:
    """The ``mlirhlo`` command: the console script a user runs, or, with ``root``, the
    package of another checkout (``git worktree add DIR COMMIT``) imported first by
    this same Python and jax, for a before/after comparison in one interleaved run."""
    import sys

    if root is None:
        script = Path(sys.executable).parent / "mlirhlo"
        if script.exists():
            return [str(script)]
        root = REPO
    return [sys.executable, "-c", f"import sys; sys.path[:0] = {_paths(root)!r}; sys.argv[0] = 'mlirhlo'; "
                                  "from mlirhlo_driver.cli.mlirhlo import main; main()"]


def plugin_copy_paths() -> list[str]:
    """The driver's copy of jax's CUDA plugin (``mlirhlo cuda-plugin install``), the one it
    uses, for a bare jax script: where a user's ``pip install jax[cuda12]`` would put it.
    None where the plugin in use is installed in site-packages (jax finds it there)."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    copy = _jaxlib.cuda_plugin().copy
    return [str(copy.python_dir), str(copy.pjrt_dir)] if copy is not None else []


def bare_python(code: str) -> list[str]:
    """``python -c code`` for a bare jax/jaxlib script, with the CUDA plugin in reach."""
    import sys

    return [sys.executable, "-c", f"import sys; sys.path[:0] = {plugin_copy_paths()!r}\n" + code]


def _paths(root: str | Path) -> list[str]:
    """``root`` first on the path; for another checkout, also this environment's copy of
    jax's CUDA plugin (``mlirhlo cuda-plugin install``): a checkout from before that copy
    found the plugin in site-packages."""
    if Path(root).resolve() == REPO:
        return [str(root)]
    return [str(root)] + plugin_copy_paths()


def driver_python(root: str | Path | None, code: str) -> list[str]:
    """``python -c code`` with ``root``'s package (None: this checkout's) imported first."""
    import sys

    return [sys.executable, "-c", f"import sys; sys.path[:0] = {_paths(root if root is not None else REPO)!r}\n" + code]


def time_command(cmd: list[str], *, check: bool = True) -> float:
    """Wall seconds of one run of ``cmd`` from the repo root, output discarded."""
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check, cwd=REPO)
    return time.perf_counter() - t0


def time_command_cpu(cmd: list[str], *, env: dict[str, str] | None = None,
                     check: bool = True) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``cmd`` from the repo root, output discarded.

    CPU is user + system time of the process and the children it waited for:
    on a loaded machine it is the steadier figure; wall includes waiting for a core.
    """
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check,
                   cwd=REPO, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def time_command_rss(cmd: list[str], *, env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS in KiB) of one run of ``cmd`` from the repo root, output
    discarded. The figures are the child's own (wait4), with the children it waited for."""
    import os

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def bytecode_env(mode: str, prefix: str) -> dict[str, str]:
    """The environment for a benchmark run, as a user's install has it.

    ``installed``: Python writes and reads bytecode (under ``prefix``), as after a
    regular ``pip install``, which compiles .pyc files. ``none``: no bytecode for
    the editable checkout (PYTHONDONTWRITEBYTECODE, as in this project's dev setup).
    """
    import os

    env = dict(os.environ)
    if mode == "installed":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = prefix
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def interleaved(commands: dict[str, list[str]], repeats: int, env: dict[str, str]
                ) -> dict[str, list[tuple[float, float]]]:
    """Each command ``repeats`` times, in turn (A B C A B C ...), after one warm-up round:
    every command sees the same machine load. Name -> [(wall, cpu), ...]."""
    for cmd in commands.values():
        time_command_cpu(cmd, env=env)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, cmd in commands.items():
            runs[name].append(time_command_cpu(cmd, env=env))
    return runs


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    import statistics

    return statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples)


def pair_ratios(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    """Median wall ratio, median CPU ratio, and the CPU ratio's min and max, pair by pair."""
    import statistics

    wall = [x[0] / y[0] for x, y in zip(a, b)]
    cpu = [x[1] / y[1] for x, y in zip(a, b)]
    return statistics.median(wall), statistics.median(cpu), min(cpu), max(cpu)
