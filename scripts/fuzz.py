#!/usr/bin/env python
"""Mutation fuzzing of the driver's inputs: ``scripts/fuzz.py N [--seed S] [--jobs J]``.

Runs N seeded mutations of valid inputs of every kind the loader takes (HLO
text, proto, pbtxt, MLIR text and bytecode, VHLO, GPU spec textprotos,
pipelines, LLVM IR), each through the ``mlirhlo`` command that reads it, and
prints the counts by outcome: ok, clean (one ``error:`` line, exit 1/2),
traceback, signal, hang, other. Inputs of every case that is neither ok nor
clean are saved under --failures DIR with a ``cmd.sh`` that reproduces it.
Exit code 1 when any case gave a traceback, a signal death or a hang.
The machinery is tests/fuzz_harness.py; tests/test_fuzz.py runs a small sample in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fuzz_harness  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, help="number of mutated cases")
    ap.add_argument("--seed", type=int, default=0, help="run seed; case i of seed S is always the same")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="cases run at once")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds before a case counts as a hang; the driver's own read deadline "
                         "(MLIRHLO_READ_TIMEOUT) is a third of it")
    ap.add_argument("--kinds", help="comma list of input kinds (default all): " + ",".join(fuzz_harness.KINDS))
    ap.add_argument("--failures", default="fuzz-failures", help="where failing inputs are saved")
    ap.add_argument("--json", help="also write the report as JSON here")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    args = ap.parse_args()
    kinds = tuple(args.kinds.split(",")) if args.kinds else None
    last = [0.0]

    def progress(done: int, n: int, counts: dict) -> None:
        now = time.monotonic()
        if args.quiet or (now - last[0] < 2 and done != n):
            return
        last[0] = now
        sys.stderr.write(f"\r{done}/{n} " + " ".join(f"{k}={v}" for k, v in counts.items() if v) + "   ")
        if done == n:
            sys.stderr.write("\n")

    report = fuzz_harness.fuzz(args.n, seed=args.seed, jobs=args.jobs, timeout=args.timeout, kinds=kinds,
                               failures_dir=Path(args.failures), progress=progress)
    print(fuzz_harness.summary_text(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 1 if report["defects"] else 0


if __name__ == "__main__":
    sys.exit(main())
