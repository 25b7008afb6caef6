"""Regenerate the JAX sample in this directory: a data-parallel MLP training step.

    python tests/data/spmd/make_spmd_samples.py

It writes ``mlp_step_4way.before_optimizations.txt``: XLA's own
``--xla_dump_to`` output for ``jax.jit(step)`` with the batch sharded 4 ways
over CPU devices and the weights replicated, so the SPMD partitioner has to
insert the all-reduces that sum the gradients. The HLO carries JAX's shardings
(``sharding={...}`` plus Shardy's round-trip attributes), as a user's dump does.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "mlp_step_4way.before_optimizations.txt"

# Runs in a child: XLA reads --xla_dump_to from XLA_FLAGS once, when the backend starts.
_CHILD = r"""
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_num_cpu_devices", 4)
mesh = Mesh(np.array(jax.devices()), ("batch",))
rows, repl = NamedSharding(mesh, P("batch")), NamedSharding(mesh, P())

def step(w1, b1, w2, b2, x, y):
    def loss(params):
        w1, b1, w2, b2 = params
        h = jnp.tanh(x @ w1 + b1)
        return jnp.mean((h @ w2 + b2 - y) ** 2)
    value, grads = jax.value_and_grad(loss)((w1, b1, w2, b2))
    new = [p - 0.1 * g for p, g in zip((w1, b1, w2, b2), grads)]
    return (*new, value)

f32 = jnp.float32
shapes = [((16, 32), repl), ((32,), repl), ((32, 8), repl), ((8,), repl), ((32, 16), rows), ((32, 8), rows)]
args = [jax.ShapeDtypeStruct(s, f32, sharding=sh) for s, sh in shapes]
jax.jit(step, out_shardings=(repl,) * 5).lower(*args).compile()
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as dump:
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump}", JAX_PLATFORMS="cpu")
        subprocess.run([sys.executable, "-c", _CHILD], check=True, env=env)
        found = glob.glob(os.path.join(dump, "*jit_step*.before_optimizations.txt"))
        if len(found) != 1:
            sys.exit(f"expected one jit_step dump, found {found}")
        shutil.copyfile(found[0], OUT)
    print(f"wrote {OUT.relative_to(HERE.parent.parent.parent)}")


if __name__ == "__main__":
    main()
