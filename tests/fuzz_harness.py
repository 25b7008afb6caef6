"""Mutation fuzzing of every input kind the driver loads, through the real CLI.

A *case* is a seeded mutation of a valid input (HLO text, HloModuleProto binary
and text, MLIR text and bytecode, a VHLO artifact, a GPU spec textproto, a
pipeline file or string, LLVM IR) and the ``mlirhlo`` command that reads it.
Each case runs in its own process and ends in one of these outcomes:

* ``ok``: exit 0;
* ``clean``: exit 1 or 2, stderr is exactly one ``error:`` line, stdout is
  empty and no output file was left behind;
* ``traceback``: a Python traceback on stderr;
* ``signal``: the process died of a signal (an abort, a segfault);
* ``hang``: it ran past the timeout and was killed;
* ``other``: anything else (several stderr lines, an exit code out of
  range, a file written by a failing command).

Only ``traceback``, ``signal`` and ``hang`` are defects the fuzz run gates on;
``other`` is reported for a human to judge.

How cases run: a *fork server*. This process imports the driver (and jax,
without starting a backend) once, then forks one child per case; the child
runs ``mlirhlo_driver.cli.mlirhlo.main(argv)`` as the ``mlirhlo`` entry point would,
in its own process group, with stdout/stderr in files. A fork costs a few
milliseconds where a fresh interpreter costs a second or more of imports.
The driver itself forks the same way (mlirhlo_driver/_native/isolate.py), before any
backend exists, so a child is as good as a fresh ``mlirhlo`` process, except
that import-time noise (printed once, by this process) is not seen per case.

Everything is deterministic for a given seed: case ``i`` of seed ``s`` is the
same mutation on every machine (``random.Random(f"{s}:{i}")``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
OUTCOMES = ("ok", "clean", "traceback", "signal", "hang", "other")
DEFECTS = ("traceback", "signal", "hang")


# ------------------------------------------------------------------ seeds

@dataclasses.dataclass(frozen=True)
class Seed:
    """A valid input and the commands that read it; ``{in}``/``{out}`` are filled in."""
    kind: str
    path: str            # relative to the repo, or "gen:NAME" for a generated seed
    suffix: str
    binary: bool
    commands: tuple[tuple[str, ...], ...]


_OPT = ("opt", "{in}", "-o", "{out}/out.mlir")
_CONVERT_HLO = ("convert", "{in}", "--to", "hlo", "-o", "{out}/out.hlo")
_MLIR = "tests/data/erf_inv.mlir"

SEEDS: tuple[Seed, ...] = (
    Seed("hlo", "tests/data/xla_tools/input.hlo", ".hlo", False, (_OPT, _CONVERT_HLO)),
    Seed("hlo", "tests/data/jax_dumps/module_conv.before_optimizations.txt", ".txt", False, (_OPT,)),
    Seed("hlo", "tests/data/jax_dumps/module_sort.before_optimizations.txt", ".txt", False, (_OPT,)),
    Seed("hlo", "tests/data/spmd/matmul.hlo", ".hlo", False, (_OPT, _CONVERT_HLO)),
    # Forcing the format gets mangled protos past format detection, into the decoder.
    Seed("hlo-proto", "tests/data/xla_tools/input.pb", ".pb", True,
         (_OPT, ("opt", "{in}", "--input-format", "hlo-proto", "-o", "{out}/out.mlir"), _CONVERT_HLO)),
    Seed("hlo-pbtxt", "tests/data/xla_tools/input.pbtxt", ".pbtxt", False, (_OPT,)),
    Seed("mlir", _MLIR, ".mlir", False, (_OPT, _CONVERT_HLO)),
    Seed("mlir", "tests/data/chlo_special.mlir", ".mlir", False, (_OPT,)),
    Seed("mlir", "tests/data/dynamic_reshape.mlir", ".mlir", False, (_OPT,)),
    Seed("bytecode", "gen:bytecode", ".mlirbc", True, (_OPT, _CONVERT_HLO)),
    Seed("vhlo", "tests/data/softmax.vhlo", ".vhlo", True, (_OPT, _CONVERT_HLO)),
    Seed("spec", "gpu_specs/h100_sxm.txtpb", ".txtpb", False,
         (("specs", "check", "{in}"), ("specs", "show", "{in}"))),
    Seed("pipeline-file", "pipelines/simplify.pipeline", ".pipeline", False,
         (("opt", _MLIR, "--pipeline-file", "{in}", "-o", "{out}/out.mlir"),)),
    Seed("pipeline", "gen:pipeline", "", False,
         (("opt", _MLIR, "--pipeline", "{text}", "-o", "{out}/out.mlir"),
          ("opt", _MLIR, "--passes", "{text}", "-o", "{out}/out.mlir"))),
    Seed("llvm-ir", "tests/data/xla_tools/input.ll", ".ll", False,
         (("ptx", "{in}", "-O1", "-o", "{out}/out.ptx"),)),
)
KINDS = tuple(dict.fromkeys(s.kind for s in SEEDS))

_PIPELINE_TEXT = ("builtin.module(inline-calls,func.func(canonicalize{max-iterations=3},cse,"
                  "chlo-legalize-to-stablehlo),symbol-dce)")


def seed_bytes(seed: Seed, workdir: Path) -> bytes:
    """The seed's content; generated ones are made once, by the CLI, into ``workdir``."""
    if seed.path == "gen:pipeline":
        return _PIPELINE_TEXT.encode()
    if seed.path == "gen:bytecode":
        target = workdir / "seed.mlirbc"
        if not target.exists():
            res = run_case(["opt", str(REPO / _MLIR), "--stage", "stablehlo-bytecode", "-o", str(target)],
                           workdir / "gen-bytecode", timeout=120)
            if res.outcome != "ok" or not target.exists():
                raise RuntimeError(f"cannot generate the bytecode seed: {res.stderr}")
        return target.read_bytes()
    return (REPO / seed.path).read_bytes()


# -------------------------------------------------------------- mutations

_INTERESTING = ["0", "-1", "1", "4294967296", "9223372036854775808", "-2147483649", "1e309", "nan",
                "inf", "0x7fffffff", "", " ", "(", ")", "{", "}", "[", "]", "<", ">", ",", ":", "=",
                '"', "\\", "%", "@", "#", "f16", "f64", "s4", "pred", "tuple", "token", "?", "-",
                "\u00e9", "\x00", "\t", "\n", "//", "/*", "HloModule", "ENTRY", "ROOT", "func.func",
                "stablehlo.add", "tensor<?xf32>", "!stablehlo.token", "builtin.module("]
_TOKEN = re.compile(r"[A-Za-z_][\w.\-]*|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\S")


def _byte_mutation(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    b = bytearray(data)
    n = len(b)
    op = rng.choice(["flip", "set", "insert", "delete", "duplicate", "truncate", "splice"])
    if n == 0:
        op = "insert"
    i = rng.randrange(max(n, 1))
    if op == "flip":
        b[i] ^= 1 << rng.randrange(8)
    elif op == "set":
        b[i] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
    elif op == "insert":
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    elif op == "delete":
        del b[i:i + rng.randint(1, 16)]
    elif op == "duplicate":
        j = min(n, i + rng.randint(1, 64))
        b[j:j] = b[i:j]
    elif op == "truncate":
        del b[i:]
    else:  # splice: copy one range over another
        j = rng.randrange(n)
        k = rng.randint(1, 32)
        b[i:i + k] = data[j:j + k]
    return bytes(b), f"{op}@{i}"


def _line_mutation(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.split("\n")
    op = rng.choice(["delete", "duplicate", "swap", "move"])
    i = rng.randrange(len(lines))
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    else:
        line = lines.pop(i)
        lines.insert(rng.randrange(len(lines) + 1), line)
    return "\n".join(lines), f"line-{op}@{i + 1}"


def _token_mutation(rng: random.Random, text: str) -> tuple[str, str]:
    tokens = list(_TOKEN.finditer(text))
    if not tokens:
        return text + rng.choice(_INTERESTING), "token-append"
    m = rng.choice(tokens)
    op = rng.choice(["replace", "replace", "interesting", "delete", "repeat"])
    if op == "replace":
        new = rng.choice(tokens).group()
    elif op == "interesting":
        new = rng.choice(_INTERESTING)
    elif op == "delete":
        new = ""
    else:
        new = m.group() * rng.choice([2, 3, 50])
    line = text.count("\n", 0, m.start()) + 1
    return text[:m.start()] + new + text[m.end():], f"token-{op}@{line}:{m.group()[:20]!r}->{new[:20]!r}"


def mutate(rng: random.Random, data: bytes, binary: bool) -> tuple[bytes, str]:
    """One to three stacked mutations; text kinds also get line and token edits."""
    what = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if binary or rng.random() < 0.25:
            data, w = _byte_mutation(rng, data)
        else:
            text = data.decode("utf-8", "surrogateescape")
            if rng.random() < 0.3:
                text, w = _line_mutation(rng, text)
            else:
                text, w = _token_mutation(rng, text)
            data = text.encode("utf-8", "surrogateescape")
        what.append(w)
    return data, "; ".join(what)


@dataclasses.dataclass
class Case:
    index: int
    kind: str
    seed_path: str
    data: bytes
    argv_template: tuple[str, ...]
    mutation: str
    suffix: str


def make_case(seed_value: int, index: int, seeds: tuple[Seed, ...], contents: dict[str, bytes]) -> Case:
    """Case ``index`` of run ``seed_value``: kinds in turn, then a random seed file, command, mutation."""
    rng = random.Random(f"{seed_value}:{index}")
    kinds = tuple(dict.fromkeys(s.kind for s in seeds))
    kind = kinds[index % len(kinds)]
    seed = rng.choice([s for s in seeds if s.kind == kind])
    data, what = mutate(rng, contents[seed.path], seed.binary)
    command = rng.choice(seed.commands)
    return Case(index, kind, seed.path, data, command, what, seed.suffix)


# ------------------------------------------------------------------ running

@dataclasses.dataclass
class Result:
    outcome: str
    code: int | None          # exit code, or None
    sig: int | None           # signal number, or None
    stdout: str
    stderr: str
    seconds: float
    argv: list[str] = dataclasses.field(default_factory=list)
    detail: str = ""


def preload() -> None:
    """Import what every case needs once, in this (the fork server's) process; no backend."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jaxlib.mlir.ir  # noqa: F401
    from jax._src.lib import xla_client  # noqa: F401

    import mlirhlo_driver.cli.mlirhlo  # noqa: F401


def read_timeout_env(timeout: float) -> dict[str, str]:
    """The driver's read deadline for a case with this hang timeout: well inside it,
    so that a reader that loops forever is the driver's error, not the harness's kill."""
    from mlirhlo_driver.inputs.loader import READ_TIMEOUT_ENV

    return {READ_TIMEOUT_ENV: f"{max(1.0, timeout / 3):g}"}


def _child(argv: list[str], workdir: Path, timeout: float = 60.0) -> None:
    """In the forked child: become an ``mlirhlo`` process running ``argv``; never returns."""
    code = 70
    try:
        os.setpgid(0, 0)
        os.chdir(workdir)
        os.environ["TMPDIR"] = str(workdir / "tmp")
        os.environ.update(read_timeout_env(timeout))
        tempfile.tempdir = None
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        out = os.open(workdir / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(workdir / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        sys.argv = ["mlirhlo", *argv]
        from mlirhlo_driver.cli.mlirhlo import main

        try:
            main(argv)
            code = 0
        except SystemExit as e:
            # As the interpreter does for an uncaught SystemExit.
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 - the interpreter's default handler
            import traceback

            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _classify(code: int | None, sig: int | None, out: str, err: str, written: list[str]) -> tuple[str, str]:
    if sig is not None:
        return "signal", signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
    if "Traceback (most recent call last)" in err:
        return "traceback", err.strip().splitlines()[-1] if err.strip() else ""
    if code is not None and code >= 128:
        return "signal", f"exit {code}"
    if code == 0:
        return "ok", ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if code in (1, 2) and len(lines) == 1 and lines[0].startswith("error: ") and not out and not written:
        return "clean", ""
    why = []
    if code not in (1, 2):
        why.append(f"exit {code}")
    if len(lines) != 1:
        why.append(f"{len(lines)} stderr lines")
    elif not lines[0].startswith("error: "):
        why.append("no 'error:' line")
    if out:
        why.append("stdout not empty")
    if written:
        why.append("wrote " + ", ".join(written))
    return "other", "; ".join(why)


class Runner:
    """Runs cases in forked children, up to ``jobs`` at a time."""

    def __init__(self, jobs: int = 1, timeout: float = 60.0) -> None:
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.running: dict[int, tuple[object, list[str], Path, float]] = {}

    def start(self, key: object, argv: list[str], workdir: Path) -> None:
        (workdir / "out").mkdir(parents=True, exist_ok=True)
        (workdir / "tmp").mkdir(exist_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(argv, workdir, self.timeout)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        self.running[pid] = (key, argv, workdir, time.monotonic())

    def _finish(self, pid: int, status: int | None) -> tuple[object, Result]:
        key, argv, workdir, started = self.running.pop(pid)
        try:
            os.killpg(pid, signal.SIGKILL)  # whatever the case left running (the isolate zygote)
        except (ProcessLookupError, PermissionError):
            pass
        seconds = time.monotonic() - started
        out = (workdir / "stdout").read_text(errors="replace")
        err = (workdir / "stderr").read_text(errors="replace")
        written = sorted(p.name for p in (workdir / "out").iterdir())
        if status is None:
            res = Result("hang", None, None, out, err, seconds, argv, f"killed after {self.timeout:g} s")
        else:
            code = os.waitstatus_to_exitcode(status)
            sig = -code if code < 0 else None
            outcome, detail = _classify(None if sig else code, sig, out, err,
                                        written if code != 0 else [])
            res = Result(outcome, None if sig else code, sig, out, err, seconds, argv, detail)
        return key, res

    def wait_one(self) -> tuple[object, Result]:
        """Block until a running case ends (or times out); return its key and result."""
        while True:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid in self.running:
                return self._finish(pid, status)
            now = time.monotonic()
            for pid, (_, _, _, started) in list(self.running.items()):
                if now - started > self.timeout:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    os.waitpid(pid, 0)
                    return self._finish(pid, None)
            time.sleep(0.005)


def run_case(argv: list[str], workdir: Path, timeout: float = 60.0) -> Result:
    """Run one command line as a fresh ``mlirhlo`` process would; wait for it."""
    runner = Runner(1, timeout)
    runner.start(None, argv, workdir)
    return runner.wait_one()[1]


def _argv(case: Case, workdir: Path) -> list[str]:
    inp = workdir / f"input{case.suffix}"
    text = case.data.decode("utf-8", "replace").replace("\x00", "")
    if "{in}" in case.argv_template:
        inp.write_bytes(case.data)
    out = []
    for a in case.argv_template:
        if a == "{text}":
            out.append(text)
        elif a.startswith("tests/"):
            out.append(str(REPO / a))
        else:
            out.append(a.replace("{in}", str(inp)).replace("{out}", str(workdir / "out")))
    return out


def recheck(argv: list[str], cwd: Path, timeout: float) -> Result:
    """Run ``argv`` again through the real entry point, in a fresh interpreter, in ``cwd``.

    Confirms a defect outside the fork server: the driver's code can change on
    disk during a long run, and a fork server holds the code it imported first.
    """
    import subprocess

    out_dir = cwd / "out"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir()
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", *argv], cwd=cwd, capture_output=True,
                              text=True, errors="replace", timeout=timeout, stdin=subprocess.DEVNULL,
                              start_new_session=True, env={**os.environ, **read_timeout_env(timeout)})
    except subprocess.TimeoutExpired as e:
        return Result("hang", None, None, str(e.stdout or ""), str(e.stderr or ""), time.monotonic() - started, argv)
    code = proc.returncode
    sig = -code if code < 0 else None
    written = sorted(p.name for p in out_dir.iterdir()) if code else []
    outcome, detail = _classify(None if sig else code, sig, proc.stdout, proc.stderr, written)
    shutil.rmtree(out_dir, ignore_errors=True)
    return Result(outcome, None if sig else code, sig, proc.stdout, proc.stderr, time.monotonic() - started, argv,
                  detail)


def reproduce_line(argv: list[str]) -> str:
    return "mlirhlo " + " ".join(shlex.quote(a) for a in argv)


def fuzz(n: int, *, seed: int = 0, jobs: int = 1, timeout: float = 60.0, kinds: tuple[str, ...] | None = None,
         failures_dir: Path | None = None, progress=None, recheck_defects: bool = True) -> dict:
    """Run ``n`` cases of run ``seed``; return counts by outcome (overall and per kind) and the defects.

    Non-ok, non-clean cases are saved under ``failures_dir/<outcome>/<index>/`` (the input,
    ``cmd.sh`` to reproduce, stdout, stderr) when it is given. With ``recheck_defects``
    (and ``failures_dir``), each traceback, signal or hang is run again from the saved files
    by a fresh ``python -m mlirhlo_driver.cli.mlirhlo``; ``confirmed`` counts those that recur.
    """
    preload()
    seeds = tuple(s for s in SEEDS if kinds is None or s.kind in kinds)
    if not seeds:
        raise ValueError(f"no seeds for kinds {kinds}; known: {', '.join(KINDS)}")
    scratch = Path(tempfile.mkdtemp(prefix="mlirhlo-fuzz-"))
    contents = {s.path: seed_bytes(s, scratch) for s in seeds}
    runner = Runner(jobs, timeout)
    counts = {o: 0 for o in OUTCOMES}
    by_kind: dict[str, dict[str, int]] = {}
    failures = []
    started = time.monotonic()
    pending = iter(range(n))
    cases: dict[int, Case] = {}
    done = 0
    try:
        while True:
            while len(runner.running) < runner.jobs:
                i = next(pending, None)
                if i is None:
                    break
                case = make_case(seed, i, seeds, contents)
                workdir = scratch / f"case{i}"
                workdir.mkdir()
                cases[i] = case
                runner.start(i, _argv(case, workdir), workdir)
            if not runner.running:
                break
            i, res = runner.wait_one()
            case = cases.pop(i)
            workdir = scratch / f"case{i}"
            counts[res.outcome] += 1
            by_kind.setdefault(case.kind, {o: 0 for o in OUTCOMES})[res.outcome] += 1
            if res.outcome not in ("ok", "clean"):
                failure = {"index": i, "kind": case.kind, "outcome": res.outcome, "detail": res.detail,
                                 "mutation": case.mutation, "seed_file": case.seed_path,
                                 "command": reproduce_line(res.argv),
                                 "stderr_tail": res.stderr.strip().splitlines()[-3:]}
                failures.append(failure)
                if failures_dir is not None:
                    dest = Path(failures_dir) / res.outcome / f"{i:06d}"
                    dest.mkdir(parents=True, exist_ok=True)
                    for f in workdir.glob("input*"):
                        shutil.copy(f, dest / f.name)
                    argv = [a.replace(str(workdir), ".") for a in res.argv]
                    (dest / "cmd.sh").write_text(
                        f"# {case.kind} mutant of {case.seed_path}: {case.mutation}\n"
                        f"# outcome: {res.outcome} {res.detail}\nmkdir -p out\n{reproduce_line(argv)}\n")
                    (dest / "stderr").write_text(res.stderr)
                    (dest / "stdout").write_text(res.stdout)
                    if recheck_defects and res.outcome in DEFECTS:
                        again = recheck(argv, dest, timeout)
                        failure["recheck"] = again.outcome
                        (dest / "recheck.stderr").write_text(again.stderr)
            shutil.rmtree(workdir, ignore_errors=True)
            done += 1
            if progress is not None:
                progress(done, n, counts)
    finally:
        for pid in list(runner.running):
            try:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        shutil.rmtree(scratch, ignore_errors=True)
    return {"n": n, "seed": seed, "jobs": jobs, "timeout": timeout, "seconds": round(time.monotonic() - started, 2),
            "counts": counts, "by_kind": by_kind, "failures": failures,
            "defects": sum(counts[o] for o in DEFECTS),
            "confirmed": sum(1 for f in failures if f.get("recheck", f["outcome"]) in DEFECTS
                             and f["outcome"] in DEFECTS)}


def summary_text(report: dict) -> str:
    lines = [f"defects: {report['defects']} ({report['confirmed']} confirmed in a fresh process)"]
    lines += [f"{report['n']} cases, seed {report['seed']}, {report['jobs']} jobs, {report['seconds']} s "
             f"({report['n'] / max(report['seconds'], 1e-9):.2f} cases/s)"]
    lines.append(f"{'outcome':<14}" + "".join(f"{o:>10}" for o in OUTCOMES))
    lines.append(f"{'all':<14}" + "".join(f"{report['counts'][o]:>10}" for o in OUTCOMES))
    for kind, c in sorted(report["by_kind"].items()):
        lines.append(f"{kind:<14}" + "".join(f"{c[o]:>10}" for o in OUTCOMES))
    for f in report["failures"]:
        again = f" [fresh process: {f['recheck']}]" if "recheck" in f else ""
        lines.append(f"{f['outcome']}{again}: #{f['index']} {f['kind']} ({f['mutation']}) {f['detail']}\n    "
                     f"{f['command'][:300]}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - scripts/fuzz.py is the front end
    print(json.dumps(fuzz(int(sys.argv[1]) if len(sys.argv) > 1 else 10), indent=1))
