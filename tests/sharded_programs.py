"""Sharded programs written by the installed jax, for the SPMD doors' tests (and the checked-in dumps).

    python tests/sharded_programs.py            # rewrite tests/data/spmd/jax_*_4way.* with this jax

:func:`programs` makes them at test time, once per process and device count: a
child jax with ``devices`` host CPU devices jits each program, and XLA's own
``--xla_dump_to`` gives what a user's dump holds (with jax 0.12, named mesh
shardings: ``sharding={mesh['b'=4], [{'b'}, {}]}``); ``Lowered.as_text()`` gives
the StableHLO with Shardy's ``sdy.mesh``/``sdy.sharding``. Each is a few KB:

- ``mlp``: a two-layer MLP jitted with ``NamedSharding``, batch over a 1-D mesh
  ``b`` (Auto axes: ``jax.sharding.Mesh``), weights replicated;
- ``mlp_2d``: the same over a 2 x N/2 mesh ``(x, y)``, each weight tiled on one axis
  and partly replicated on the other;
- ``shard_map``: ``jax.shard_map`` of a matmul whose partial sums are ``psum``-ed
  over ``y`` (Shardy's manual computation: ``xla.sdy.GlobalToLocalShape`` in HLO);
- ``explicit``: ``sin(a) @ b`` on a mesh of Explicit axes (``jax.make_mesh``'s
  default from jax 0.12), ``a`` sharded by its type.

Files: ``<name>.hlo`` (the before-optimizations dump), ``<name>.hlo.pb`` (the
same as an HloProto, ``--xla_dump_hlo_as_proto``) and ``<name>.mlir`` (StableHLO).
"""

from __future__ import annotations

import functools
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKED_IN = HERE / "data" / "spmd"

# Runs in a child: the device count and XLA_FLAGS are read once, when jax's backend starts.
_CHILD = r"""
import json, sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

n = int(sys.argv[1])
jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_num_cpu_devices", n)
devices = np.array(jax.devices()[:n])
line, grid = Mesh(devices, ("b",)), Mesh(devices.reshape(2, n // 2), ("x", "y"))
S = lambda m, *spec: NamedSharding(m, P(*spec))
f32 = lambda *shape, sharding=None: jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)

def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2

def partial_sums(a, b):
    return jax.lax.psum(a @ b, "y")

programs = {
    "mlp": (jax.jit(mlp, in_shardings=(S(line, "b", None), S(line), S(line)), out_shardings=S(line, "b", None)),
            (f32(8, 16), f32(16, 32), f32(32, 4))),
    "mlp_2d": (jax.jit(mlp, in_shardings=(S(grid, "x", None), S(grid, None, "y"), S(grid, "y", None)),
                       out_shardings=S(grid, "x", None)), (f32(8, 16), f32(16, 32), f32(32, 4))),
    "shard_map": (jax.jit(jax.shard_map(partial_sums, mesh=grid, in_specs=(P("x", "y"), P("y", None)),
                                        out_specs=P("x", None))), (f32(8, 8), f32(8, 4))),
}
written = {}
for name, (fn, args) in programs.items():
    lowered = fn.lower(*args)
    written[name] = lowered.as_text()
    lowered.compile()
# jax.make_mesh's axes are Explicit from jax 0.12; say so, whatever this jax defaults to.
explicit = jax.make_mesh((n,), ("e",), axis_types=(jax.sharding.AxisType.Explicit,))
with jax.set_mesh(explicit):
    lowered = jax.jit(lambda a, b: jnp.sin(a) @ b).lower(f32(8, 16, sharding=S(explicit, "e", None)),
                                                          f32(16, 4, sharding=S(explicit)))
    written["explicit"] = lowered.as_text()
    lowered.compile()
print(json.dumps(written))
"""

# The jit names XLA's dumps carry, per program.
_JIT_NAMES = {"mlp": "jit_mlp", "mlp_2d": "jit_mlp", "shard_map": "jit_partial_sums", "explicit": "jit__lambda"}


def write(directory: Path, devices: int) -> dict[str, dict[str, Path]]:
    """Write every program for ``devices`` host devices into ``directory``:
    {program: {"hlo": path, "hlo.pb": path, "mlir": path}}."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as dump:
        env = dict(os.environ, JAX_PLATFORMS="cpu",
                   XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text --xla_dump_hlo_as_proto")
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(devices)], env=env,
                              capture_output=True, text=True, timeout=300)
        if proc.returncode:
            raise RuntimeError(f"jax could not write the sharded programs:\n{proc.stderr[-3000:]}")
        texts = json.loads(proc.stdout.strip().splitlines()[-1])
        # Dumps come in compile order, numbered by a process-wide counter.
        dumped = sorted(glob.glob(os.path.join(dump, "module_*.before_optimizations.txt")))
        found: dict[str, dict[str, Path]] = {}
        for name, path in zip(texts, dumped):
            assert _JIT_NAMES[name] in os.path.basename(path), (name, path)
            files = {"hlo": directory / f"{name}.hlo", "hlo.pb": directory / f"{name}.hlo.pb",
                     "mlir": directory / f"{name}.mlir"}
            shutil.copyfile(path, files["hlo"])
            shutil.copyfile(path.replace(".txt", ".hlo.pb"), files["hlo.pb"])
            files["mlir"].write_text(texts[name])
            found[name] = files
    return found


@functools.cache
def programs(devices: int) -> dict[str, dict[str, Path]]:
    """:func:`write` once per test process and device count, into a directory removed at exit."""
    import atexit

    directory = Path(tempfile.mkdtemp(prefix=f"mlirhlo-sharded-{devices}-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return write(directory, devices)


def main() -> None:
    import jax

    found = write(Path(tempfile.mkdtemp()), 4)
    major_minor = "".join(jax.__version__.split(".")[:2])
    for name in ("mlp", "shard_map"):
        target = CHECKED_IN / f"jax{major_minor}_{name}_4way.before_optimizations.txt"
        shutil.copyfile(found[name]["hlo"], target)
        print(f"wrote {target.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
