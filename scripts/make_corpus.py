"""Write the corpus: real JAX programs (scripts/corpus_programs.py) as the installed jax
and XLA give them, for the suite to put through every door of the driver.

    python scripts/make_corpus.py OUT_DIR

For each program that this jax can express, OUT_DIR gets ``NAME.before_optimizations.txt``
(the HLO XLA received from jax's own compile, as ``--xla_dump_to`` writes it),
``NAME.mlir`` (jax's StableHLO, ``lowered.as_text()``) and, in ``manifest.json``, its
entry point (``corpus_programs:NAME``, with OUT_DIR as the working directory, and its
``--args``), its partition count, and why it was skipped where it was. The process
starts jax with 8 host CPU devices. Nothing is fetched; tests/test_corpus.py calls
this into a temporary directory once per session.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEVICES = 8


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: make_corpus.py OUT_DIR\n")
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    from mlirhlo_driver._native import jaxlib as _jaxlib

    # This script's own jax: CPU only (quiet about a CUDA plugin it cannot start, a user's
    # jax[cuda12-local] without NVIDIA's runtime), with host devices for the sharded programs.
    jax = _jaxlib.jax()
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", DEVICES)
    import corpus_programs as cp

    shutil.copy(HERE / "corpus_programs.py", out / "corpus_programs.py")
    from mlirhlo_driver.inputs.loader import parse_arg_specs  # the driver's own --args reading
    from mlirhlo_driver.ir import dtypes

    manifest = {"jax": jax.__version__, "devices": len(jax.devices()), "programs": []}
    for program in cp.PROGRAMS:
        entry = {"name": program.name, "partitions": program.partitions, "args": program.args,
                 "entry": f"corpus_programs:{program.name}"}
        manifest["programs"].append(entry)
        why = cp.missing(program)
        if why is None and program.partitions > len(jax.devices()):
            why = f"needs {program.partitions} host CPU devices, jax started {len(jax.devices())}"
        if why is not None:
            entry["skipped"] = why
            continue
        structs = [jax.ShapeDtypeStruct(shape, dtypes.np_dtype(dt)) for dt, shape in parse_arg_specs(program.args)]
        mesh_ctx = _mesh_context(jax, program.mesh(jax.devices())) if program.mesh else _nothing()
        with mesh_ctx:
            lowered = cp.jitted(program).lower(*structs)
            (out / f"{program.name}.mlir").write_text(lowered.as_text())
            with tempfile.TemporaryDirectory() as d:
                lowered.compile({"xla_dump_to": d})
                found = [p for p in glob.glob(os.path.join(d, "*.before_optimizations.txt"))
                         if f".jit_{program.fn.__name__}." in os.path.basename(p)]
                if len(found) != 1:
                    raise SystemExit(f"error: {program.name}: XLA's dump has {len(found)} entry modules")
                shutil.copy(found[0], out / f"{program.name}.before_optimizations.txt")
        entry["files"] = {"hlo": f"{program.name}.before_optimizations.txt", "mlir": f"{program.name}.mlir"}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _mesh_context(jax, mesh):
    """The mesh as the ambient one for explicit axes: jax.set_mesh (0.12) or use_mesh (0.9)."""
    setter = getattr(jax, "set_mesh", None) or jax.sharding.use_mesh
    return setter(mesh)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
