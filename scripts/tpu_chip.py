"""The driver on a TPU chip elsewhere: wheels made here, tests and measurements run there.

Here (a checkout, with network or a package mirror):

    python scripts/tpu_chip.py wheels [--out .whl-tpu]

writes CPython 3.11 manylinux wheels of the driver and of what it needs beyond what a TPU VM
has (jax, jaxlib, libtpu, numpy, ml_dtypes, scipy; llvmlite, which only ptx-opt imports), and
adds OUT to .git/info/exclude. There (the TPU machine: Python 3.11, its jax and libtpu, no
network), from the checkout root, with the wheels folder beside it:

    python3 scripts/tpu_chip.py run --out $OUT [--steps tests,corpus,...] [--budget 560]

installs them under /tmp/site (PYTHONPATH's own entries stay first: the machine's jax), then
runs each step in a process of its own (one program holds a chip at a time), each step's
output in OUT:

- ``tests``: ``pytest -m tpu tests/tpu/test_chip.py`` on a copy of tests/ (the installed
  driver, not the checkout's) -> chip-tests.txt;
- ``corpus``: scripts/make_corpus.py, then ``mlirhlo run CORPUS --platform tpu --json`` ->
  corpus-run.json;
- ``device-less``: each corpus program compiled on the chip and device-less for its topology
  (execute/tpu_chip.py) -> device-less.json;
- ``estimates``: scripts/tpu_estimates.py over the corpus -> estimates.json;
- ``timing``: ``mlirhlo run --iterations N --reference none`` against a bare jax script
  running the same module N times -> timing.json;
- ``conformance``: StableHLO's testdata (``--testdata`` a .tgz of ``stablehlo/testdata``) in
  chunks, ``mlirhlo run FILES --platform tpu --json``, as long as the budget lasts ->
  conformance.tgz (scripts/conformance.py --tpu-chip-json reads them); ``--only NAMES`` runs
  the files named there (what an earlier run left) in chunks of their own; ``--precision
  highest`` runs them with ``mlirhlo run --precision highest``.

A log of every step's command, exit status and time -> log.txt. Steps that would outlast
``--budget`` seconds are left out and said so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ON_MACHINE = {"jax", "jaxlib", "numpy", "ml-dtypes", "ml_dtypes", "scipy", "libtpu", "llvmlite"}
PLATFORMS = ["manylinux_2_31_x86_64", "manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"]
SITE = Path("/tmp/site")
STEPS = ("tests", "corpus", "device-less", "estimates", "timing", "conformance")


# ------------------------------------------------------------------ here

def wheels(out: Path) -> int:
    import tomllib

    exclude = REPO / ".git" / "info" / "exclude"
    known = exclude.read_text(errors="replace").split() if exclude.exists() else []
    if exclude.parent.exists() and f"/{out}/" not in known:
        with exclude.open("a") as f:
            f.write(f"/{out}/\n")
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = [d for d in deps if re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].strip().lower() not in ON_MACHINE]
    target = REPO / out
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    plat = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", "3.11",
                    "--implementation", "cp", *plat, "-d", str(target), *wanted], check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(target)], check=True)
    for w in sorted(target.glob("*.whl")):
        if re.match(r"(jax|jaxlib|numpy|ml_dtypes|scipy|libtpu|llvmlite)-", w.name):
            w.unlink()  # a dependency's dependency: the machine has its own
    size = sum(w.stat().st_size for w in target.glob("*.whl")) / 2**20
    print(f"{len(list(target.glob('*.whl')))} wheels, {size:.1f} MiB in {out}/")
    return 0


# ------------------------------------------------------------------ there

class Log:
    def __init__(self, out: Path, budget: float) -> None:
        self.path, self.start, self.budget = out / "log.txt", time.monotonic(), budget

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.start)

    def say(self, line: str) -> None:
        print(line, flush=True)
        with self.path.open("a") as f:
            f.write(line + "\n")

    def run(self, argv: list[str], *, env: dict[str, str], cwd: Path | None = None, timeout: float = 300,
            stdout_to: Path | None = None) -> int:
        t0 = time.monotonic()
        timeout = max(5.0, min(timeout, self.left()))
        try:
            done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
            code, text = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as e:
            code = 124
            text = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        if stdout_to is not None:
            stdout_to.write_text(text)
        tail = "\n".join(text.strip().splitlines()[-8:])
        self.say(f"$ {' '.join(argv)}\n  -> exit {code} in {time.monotonic() - t0:.1f} s\n{tail}")
        return code


def install(log: Log, wheel_dir: Path) -> dict[str, str]:
    found = sorted(wheel_dir.glob("*.whl"))
    if not found:
        raise SystemExit(f"error: {wheel_dir}: no wheels (python scripts/tpu_chip.py wheels, here)")
    env = {**os.environ, "PIP_CONFIG_FILE": "/dev/null"}
    log.run([sys.executable, "-m", "pip", "install", "--isolated", "-q", "--no-index", "--no-deps", "--no-compile",
             "--no-cache-dir", "--upgrade", "--target", str(SITE), *map(str, found)], env=env)
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{path}:{SITE}" if path else str(SITE),
            "PATH": f"{SITE / 'bin'}:{os.environ.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}


def mlirhlo(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; sys.argv[0] = 'mlirhlo'; from mlirhlo_driver.cli.mlirhlo import main; "
            "main()", *args]


BARE = r'''
import json, statistics, sys, time
import numpy as np
import jax
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import xla_client
from jaxlib.mlir import ir
path, n = sys.argv[1], int(sys.argv[2])
device = jax.devices("tpu")[0]
with jax_mlir.make_ir_context():
    module = ir.Module.parse(open(path).read())
    main = [op for op in module.body.operations if "main" in str(op.attributes["sym_name"])][0]
    types = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs
    shapes = [tuple(ir.RankedTensorType(t).shape) for t in types]
    exe = device.client.compile_and_load(module, xla_client.DeviceList((device,)), xla_client.CompileOptions())
rng = np.random.default_rng(0)
host = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
times = []
for _ in range(n):  # as mlirhlo run times an iteration: inputs onto the chip, run, outputs back
    t0 = time.perf_counter()
    args = [jax.device_put(a, device) for a in host]
    outs = [np.asarray(x[0]) for x in exe.execute_sharded(args).disassemble_into_single_device_arrays()]
    times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"median_ms": statistics.median(times), "n": n}))
'''


def step_tests(log: Log, env: dict[str, str], out: Path, work: Path) -> None:
    shutil.copytree(REPO / "tests", work / "tests", dirs_exist_ok=True)
    shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")  # the markers
    # The suite's addopts name pytest-xdist's options, which the machine's pytest lacks: one process.
    log.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:randomly", "-p", "no:cacheprovider",
             "-m", "tpu", "-rA",
             "tests/tpu/test_chip.py"], env=env, cwd=work, timeout=300, stdout_to=out / "chip-tests.txt")


def corpus_dir(log: Log, env: dict[str, str], work: Path) -> Path:
    corpus = work / "corpus"
    if not (corpus / "manifest.json").exists():
        # The corpus programs' own jax on host devices, never the chip.
        log.run([sys.executable, str(REPO / "scripts" / "make_corpus.py"), str(corpus)],
                env={**env, "JAX_PLATFORMS": "cpu"}, timeout=240)
    return corpus


def single_device(corpus: Path) -> list[Path]:
    manifest = json.loads((corpus / "manifest.json").read_text())
    entries = manifest.get("programs", manifest) if isinstance(manifest, dict) else manifest
    names = []
    for e in entries if isinstance(entries, list) else [dict(v, name=k) for k, v in entries.items()]:
        if isinstance(e, dict) and e.get("partitions", 1) == 1 and not e.get("skipped"):
            names.append(e["name"])
    return [p for n in sorted(names) for p in [corpus / f"{n}.before_optimizations.txt"] if p.exists()]


def step_corpus(log: Log, env: dict[str, str], out: Path, work: Path) -> None:
    corpus = corpus_dir(log, env, work)
    files = sorted(corpus.glob("*.before_optimizations.txt")) + sorted(corpus.glob("*.mlir"))
    log.run(mlirhlo("run", *map(str, files), "--platform", "tpu", "--json", str(out / "corpus-run.json")),
            env=env, timeout=300)


def step_device_less(log: Log, env: dict[str, str], out: Path, work: Path) -> None:
    corpus = corpus_dir(log, env, work)
    code = ("import json, sys\n"
            "from mlirhlo_driver.core.program import InputOptions, programs\n"
            "from mlirhlo_driver.errors import DriverError\n"
            "from mlirhlo_driver.execute import tpu_chip\n"
            "from mlirhlo_driver.xla import backend\n"
            "rows = []\n"
            "for path in sys.argv[1:]:\n"
            "    p = programs([path], InputOptions())[0]\n"
            "    try:\n"
            "        rows.append(tpu_chip.compare(backend.module_for_xla(p.module, p.source), p.name).row())\n"
            "    except DriverError as e:\n"
            "        rows.append({'module': p.name, 'error': e.message})\n"
            f"open({str(out / 'device-less.json')!r}, 'w').write(json.dumps(rows, indent=1))\n")
    log.run([sys.executable, "-c", code, *map(str, single_device(corpus))], env=env, timeout=300)


def step_estimates(log: Log, env: dict[str, str], out: Path, work: Path) -> None:
    corpus = corpus_dir(log, env, work)
    names = [p.name.removesuffix(".before_optimizations.txt") for p in single_device(corpus)]
    log.run([sys.executable, str(REPO / "scripts" / "tpu_estimates.py"), "--corpus", str(corpus), *names,
             "--json", str(out / "estimates.json")], env=env, timeout=300)


def step_timing(log: Log, env: dict[str, str], out: Path, work: Path) -> None:
    rows = []
    for path, n in ((REPO / "tests" / "data" / "mm_add.mlir", 200), (REPO / "tests" / "data" / "erf_inv.mlir", 200)):
        report = work / f"timing-{path.stem}.json"
        log.run(mlirhlo("run", str(path), "--platform", "tpu", "--reference", "none", "--iterations", str(n),
                        "--json", str(report)), env=env, timeout=120)
        bare = work / f"bare-{path.stem}.txt"
        (work / "bare.py").write_text(BARE)
        log.run([sys.executable, str(work / "bare.py"), str(path), str(n)], env=env, timeout=120, stdout_to=bare)
        try:
            ours = json.loads(report.read_text())[0]["run_ms"]
            theirs = next(json.loads(line) for line in bare.read_text().splitlines()
                          if line.startswith("{"))["median_ms"]
            rows.append({"module": path.name, "iterations": n, "mlirhlo_run_median_ms": ours,
                         "bare_jax_median_ms": theirs, "ratio": ours / theirs})
        except (OSError, ValueError, KeyError, IndexError) as e:
            rows.append({"module": path.name, "error": str(e)})
    (out / "timing.json").write_text(json.dumps(rows, indent=1))


def step_conformance(log: Log, env: dict[str, str], out: Path, work: Path, testdata: Path | None,
                     chunks: int, first: int = 0, only: Path | None = None, precision: str | None = None) -> None:
    if testdata is None or not testdata.exists():
        log.say("conformance: no --testdata .tgz given; skipped")
        return
    with tarfile.open(testdata) as tar:
        tar.extractall(work / "stablehlo-checkout", filter="data")
    sys.path.insert(0, str(REPO / "scripts"))
    from conformance import chunk, testdata_files  # the report's own cut of the testdata

    files = testdata_files(work / "stablehlo-checkout")
    if only is not None:  # the files an earlier run left (their names, one a line), in chunks of their own
        names = {line.strip() for line in only.read_text().splitlines() if line.strip()}
        files = [f for f in files if f.stem in names]
    results = work / "conformance"
    results.mkdir(exist_ok=True)
    took = 30.0  # the longest chunk so far: a chunk cut short by the budget is lost whole
    for k in range(first, chunks):
        part = chunk(files, chunks, k)
        if log.left() < took * 1.2:
            log.say(f"conformance: chunks {k}..{chunks - 1} not run (budget)")
            break
        started = time.monotonic()
        flags = ("--precision", precision) if precision else ()
        log.run(mlirhlo("run", *map(str, part), "--platform", "tpu", *flags, "--json", str(results / f"conf-{k}.json")),
                env=env, timeout=log.left() - 10)
        took = max(took, time.monotonic() - started)
    with tarfile.open(out / "conformance.tgz", "w:gz") as tar:
        tar.add(results, arcname="conformance")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out, args.budget)
    env = install(log, REPO / args.wheels)
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        raise SystemExit(f"error: --steps: unknown {', '.join(unknown)} (of {', '.join(STEPS)})")
    work = Path(tempfile.mkdtemp(prefix="tpu-chip-"))
    for step in steps:
        if log.left() < 20:
            log.say(f"{step}: not run (budget)")
            continue
        log.say(f"== {step} ({log.left():.0f} s left)")
        if step == "conformance":
            step_conformance(log, env, out, work, Path(args.testdata) if args.testdata else None, args.chunks,
                             args.first_chunk, Path(args.only) if args.only else None, args.precision)
        else:
            globals()[f"step_{step.replace('-', '_')}"](log, env, out, work)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    w = sub.add_parser("wheels", help="here: the wheels to carry")
    w.add_argument("--out", default=".whl-tpu")
    r = sub.add_parser("run", help="there: install, test, measure")
    r.add_argument("--out", required=True)
    r.add_argument("--wheels", default=".whl-tpu")
    r.add_argument("--steps", default=",".join(STEPS))
    r.add_argument("--budget", type=float, default=560.0, help="seconds for all steps")
    r.add_argument("--testdata", help="a .tgz of stablehlo/testdata (the conformance step)")
    r.add_argument("--chunks", type=int, default=8)
    r.add_argument("--first-chunk", type=int, default=0, help="resume: the chunks before it ran earlier")
    r.add_argument("--only", help="conformance: a file of testdata names (one a line), the files to run")
    r.add_argument("--precision", choices=("default", "high", "highest"),
                   help="conformance: run's --precision (the files' DEFAULT products at full precision)")
    args = ap.parse_args(argv)
    return wheels(Path(args.out)) if args.command == "wheels" else run(args)


if __name__ == "__main__":
    sys.exit(main())
