"""libtpu's device-less estimate per op against the time the chip measures (issue 48, item 5).

Run ON a TPU VM: for each program (HLO/StableHLO files, or corpus names read from a directory
``scripts/make_corpus.py`` wrote), compile device-less for the attached chip's topology and take
the ``kernels`` rows (tpu/kernels.py); then compile the same module for the chip, run it under
``jax.profiler``, read each op's device time (tpu/profile.py) and join the two by the optimized
HLO's instruction names. Prints a table per program and the ratios per op kind; ``--json FILE``
writes everything. Without a chip it runs up to the device-less estimates and says so in one line.

    python scripts/tpu_estimates.py tests/data/tpu/matmul_2048.mlir --iterations 20 --json est.json
    python scripts/tpu_estimates.py --corpus /tmp/corpus mlp_train_step conv_net
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def _inputs(args: argparse.Namespace) -> list[str]:
    if args.corpus is None:
        return list(args.programs)
    corpus = Path(args.corpus)
    names = args.programs or sorted(p.name.removesuffix(".mlir") for p in corpus.glob("*.mlir"))
    return [str(corpus / f"{n}.mlir") for n in names]


def estimates(path: str, topology: str) -> tuple[Any, Any, list[Any]]:
    """(the program, its Compiled for ``topology``, its kernels rows)."""
    import mlirhlo_driver as mh
    from mlirhlo_driver.targets import Target

    program = mh.load(path)
    compiled = program.compile(Target.tpu(topology))
    return program, compiled, list(compiled.kernels())


def measure(program: Any, compiled: Any, iterations: int) -> tuple[dict[str, Any], str]:
    """Per-op device times of the module run on the chip ``iterations`` times under jax's
    profiler, and the HLO module name they were read for."""
    import jax

    from mlirhlo_driver.execute import engine
    from mlirhlo_driver.tpu import profile
    from mlirhlo_driver.xla.platforms import run_target

    exe = engine.compile_one(program.module, run_target("tpu"), program.name)
    params, _ = engine.signature(program.module)
    arrays = engine.make_inputs(params, engine.InputSpec(), module=program.module).arrays
    engine.execute_one(exe, arrays, 2)  # warm
    hlo_name = compiled.stage("hlo").split(",", 1)[0].split()[1]  # "HloModule NAME, ..."
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d):
            engine.execute_one(exe, arrays, iterations)
        (path,) = Path(d).glob("**/*.xplane.pb")
        found = profile.op_times(path, hlo_name)
        return (found, hlo_name) if found else (profile.op_times(path, None), "*")  # the run's own name


def joined_table(name: str, rows: list[Any], measured: dict[str, Any]) -> str:
    from mlirhlo_driver.tpu import profile

    lines = [f"# {name}: estimated (static profile) vs measured (chip) per execution, us",
             f"{'op':<40} {'kind':<16} {'est. us':>10} {'meas. us':>10} {'ratio':>7}"]
    for j in profile.join(rows, measured):
        lines.append(f"{j.name:<40} {j.kind:<16} {j.estimated_us:>10.3f} {j.measured_us:>10.3f} {j.ratio:>7.3g}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*", help="HLO/StableHLO files, or corpus names with --corpus")
    ap.add_argument("--corpus", metavar="DIR", help="a directory scripts/make_corpus.py wrote")
    ap.add_argument("--tpu-topology", default="v5e:1x1", help="the attached chip's topology (default v5e:1x1)")
    ap.add_argument("--iterations", type=int, default=10, help="runs under the profiler (default 10)")
    ap.add_argument("--json", metavar="FILE", help="write estimates, measurements and ratios here")
    args = ap.parse_args(argv)
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.tpu import profile

    paths = _inputs(args)
    if not paths:
        ap.error("no programs given")
    out: dict[str, Any] = {"topology": args.tpu_topology, "programs": []}
    all_rows: list[Any] = []
    all_measured: dict[str, Any] = {}
    chip = True
    for path in paths:
        entry: dict[str, Any] = {"program": path}
        out["programs"].append(entry)
        try:
            program, compiled, rows = estimates(path, args.tpu_topology)
        except DriverError as e:
            entry["error"] = e.format()
            print(f"{path}: {e.format()}", file=sys.stderr)
            continue
        entry["rows"] = [r.to_dict() for r in rows]
        if not chip:
            continue
        try:
            measured, hlo_name = measure(program, compiled, args.iterations)
        except DriverError as e:  # no chip here (run_target says so): the estimates are what there is
            chip = False
            print(f"{path}: estimates made device-less; no measurement: {e.format().removeprefix('error: ')}")
            continue
        entry["hlo_module"] = hlo_name
        entry["measured"] = {k: v.to_dict() for k, v in measured.items()}
        entry["ratios"] = profile.compare_estimates(rows, measured)
        print(joined_table(program.name, rows, measured))
        # names repeat across programs: key them by program
        all_rows += [{**r.to_dict(), "name": f"{program.name}/{r.name}"} for r in rows]
        all_measured.update({f"{program.name}/{k}": v for k, v in measured.items()})
    if all_measured:
        out["ratios"] = profile.compare_estimates(all_rows, all_measured)
        print(profile.ratio_table(out["ratios"]))
    else:
        done = sum("rows" in e for e in out["programs"])
        print(f"estimates for {done} of {len(paths)} programs on {args.tpu_topology}; "
              + ("no chip measured them" if not chip else "no op was measured"))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if all("error" not in e for e in out["programs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
