"""What wrote this folder's dumps (jax 0.12.0.1, 4 host CPU devices): a jitted training step
over a 4-way NamedSharding, with XLA's dump on. XLA's after-optimizations output of it killed
`opt`, `hlo-opt` and the API with SIGABRT (a CHECK in its CPU cost analysis) before the
compile door isolated XLA's own output.

    python sharded_step.py DIR   # then keep DIR's module_*.jit_step.{before,cpu_after}_optimizations.txt
"""
import os
import sys

os.environ["XLA_FLAGS"] = f"--xla_dump_to={sys.argv[1]} --xla_dump_hlo_as_text"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

jax.config.update("jax_num_cpu_devices", 4)
jax.config.update("jax_platforms", "cpu")
mesh = Mesh(np.array(jax.devices()), ("b",))


def step(w, x):
    def loss(w):
        return jnp.mean(jnp.tanh(x @ w) ** 2)
    return w - 0.1 * jax.grad(loss)(w)


x = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("b", None)))
print(jax.jit(step)(jnp.ones((8, 4)), x).shape)
