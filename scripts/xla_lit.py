"""Run XLA's lit tests of ``hlo-opt`` against this package's ``hlo-opt``: pass/fail per RUN line.

    python scripts/xla_lit.py XLA_ROOT                 # XLA_ROOT holds xla/tools/hlo_opt/tests, ...
    python scripts/xla_lit.py XLA_ROOT -v              # with each failing line's output
    python scripts/xla_lit.py FILE.hlo ...             # given lit files only

XLA_ROOT is a checkout of openxla/xla (or tensorflow's ``third_party/xla``), best at the
commit the installed jaxlib was built from (jax's ``third_party/xla/revision.bzl``): XLA's
tests follow its printer and tools. The files run are ``xla/tools/hlo_opt/tests/*.hlo`` and
``xla/hlo/tools/tests/hlo_opt_*``. Nothing of XLA's is vendored here: this measures the
driver against XLA's own suite.

Each RUN line runs as lit runs it: in ``bash -o pipefail``, with lit's substitutions
(``%s`` the file, ``%S`` its folder, ``%t`` a temporary path per file, ``%{NAME}`` XLA's lit
parameters: ``--param GPU=a100_pcie_80`` and ``PTX=PTX`` by default), ``FileCheck`` the pip
``filecheck`` package's (its input taken as bytes, as LLVM's: what is not UTF-8 comes as
U+FFFD) and ``not`` inverting an exit status; ``hlo-opt`` is the one beside this Python
(the venv's), or ``--bin DIR``'s. The lines of a file run in order (later lines read what
earlier ones dumped); a failing line does not stop the next.
The exit status is 0 when every line passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PARAMS = {"GPU": "a100_pcie_80", "PTX": "PTX"}
SUITES = ("xla/tools/hlo_opt/tests/*.hlo", "xla/hlo/tools/tests/hlo_opt_*")
_SOURCE_SUFFIXES = (".hlo", ".mlir", ".txt")


@dataclass
class RunLine:
    file: Path
    line: int  # 1-based line of the RUN: that starts it
    command: str


@dataclass
class Result:
    run: RunLine
    passed: bool
    status: int
    output: str


def lit_files(paths: list[str]) -> list[Path]:
    """The lit files named (files), or those of XLA's suites under each folder named."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for pattern in SUITES:
                found += sorted(f for f in p.glob(pattern) if f.suffix in _SOURCE_SUFFIXES)
        else:
            found.append(p)
    return found


def run_lines(path: Path) -> list[RunLine]:
    """The RUN commands of a lit file, a trailing backslash joining lines as lit does."""
    out: list[RunLine] = []
    pending: RunLine | None = None
    for n, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = re.search(r"\bRUN:(.*)$", text)
        if not m:
            continue
        body = m.group(1).strip()
        if pending is None:
            pending = RunLine(path, n, "")
        if body.endswith("\\"):
            pending.command += body[:-1] + " "
            continue
        pending.command += body
        out.append(pending)
        pending = None
    return out


def substitute(command: str, path: Path, tmp: str, params: dict[str, str]) -> str:
    """lit's substitutions: ``%{NAME}`` parameters, ``%s``, ``%S``, ``%t``, ``%%``."""
    def param(m: re.Match[str]) -> str:
        if m.group(1) not in params:
            raise KeyError(f"lit parameter %{{{m.group(1)}}} not given (--param {m.group(1)}=...)")
        return params[m.group(1)]

    command = re.sub(r"%\{(\w+)\}", param, command)
    subs = {"%s": str(path), "%S": str(path.parent), "%t": tmp, "%%": "%"}
    return re.sub(r"%[sSt%]", lambda m: subs[m.group(0)], command)


def tool_dir(bin_dir: str | None) -> Path:
    """A folder for PATH's front: hlo-opt (and XLA's other tool names), FileCheck, not."""
    src = Path(bin_dir) if bin_dir else Path(sys.executable).parent
    missing = [t for t in ("hlo-opt", "filecheck") if shutil.which(t, path=str(src)) is None]
    if missing:
        raise SystemExit(f"error: {', '.join(missing)} not found in {src} (give --bin DIR)")
    d = Path(tempfile.mkdtemp(prefix="xla-lit-bin-"))
    for name in ("hlo-opt", "run_hlo_module", "multihost_hlo_runner"):
        if (src / name).exists():
            (d / name).symlink_to(src / name)
    # LLVM's FileCheck reads its input as bytes; the pip clone decodes it as UTF-8 and stops on a
    # binary stage (XLA's Fusion Explorer zipapp): a byte that is not UTF-8 reaches it as U+FFFD.
    _script(d / "FileCheck", f"#!{sys.executable}\n"
                             "import subprocess, sys\n"
                             "data = sys.stdin.buffer.read().decode('utf-8', 'replace').encode('utf-8')\n"
                             f"sys.exit(subprocess.run([{str(src / 'filecheck')!r}, *sys.argv[1:]], "
                             "input=data).returncode)\n")
    _script(d / "not", '#!/bin/sh\n"$@"\n[ $? -ne 0 ]\n')
    return d


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def run_file(path: Path, bins: Path, params: dict[str, str], timeout: float) -> list[Result]:
    results = []
    workdir = Path(tempfile.mkdtemp(prefix="xla-lit-"))
    env = dict(os.environ, PATH=f"{bins}{os.pathsep}{os.environ.get('PATH', '')}")
    try:
        tmp = str(workdir / (path.name + ".tmp"))
        for run in run_lines(path):
            try:
                command = substitute(run.command, path.resolve(), tmp, params)
            except KeyError as e:
                results.append(Result(run, False, -1, str(e)))
                continue
            try:
                done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=workdir, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
                results.append(Result(run, done.returncode == 0, done.returncode,
                                      done.stdout.decode(errors="replace")))
            except subprocess.TimeoutExpired:
                results.append(Result(run, False, -1, f"timed out after {timeout:g} s"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="XLA checkout roots, or lit files")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="a lit parameter (default GPU=a100_pcie_80, PTX=PTX)")
    ap.add_argument("--bin", help="folder holding hlo-opt and filecheck (default: beside this Python)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per RUN line")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each failing line's output")
    args = ap.parse_args(argv)
    params = dict(DEFAULT_PARAMS)
    for p in args.param:
        name, eq, value = p.partition("=")
        if not eq:
            ap.error(f"--param {p}: give NAME=VALUE")
        params[name] = value
    files = lit_files(args.paths)
    if not files:
        ap.error("no lit files found")
    bins = tool_dir(args.bin)
    total = passed = 0
    try:
        for f in files:
            results = run_file(f, bins, params, args.timeout)
            good = sum(r.passed for r in results)
            total, passed = total + len(results), passed + good
            print(f"{f.name}: {good}/{len(results)}")
            for r in results:
                print(f"  {'PASS' if r.passed else 'FAIL'} {f.name}:{r.run.line}")
                if args.verbose and not r.passed:
                    tail = r.output.strip().splitlines()[-15:]
                    print("\n".join("      | " + t for t in tail))
            sys.stdout.flush()
    finally:
        shutil.rmtree(bins, ignore_errors=True)
    print(f"{passed} of {total} RUN lines pass")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
