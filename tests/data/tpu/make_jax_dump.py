"""What JAX dumps for a TPU program, made without a chip (tests/data/tpu/README.md says how it ran):
a step sharded over a v5e 2x2 slice's 4 chips, compiled with two compiler options (a
DebugOptions field and a libtpu option)."""
import jax
import jax.numpy as jnp
from jax.experimental import topologies
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

topo = topologies.get_topology_desc("v5e:2x2", "tpu")
mesh = Mesh(topo.devices, ("batch",))


def step(w, x):
    h = jnp.tanh(x @ w)
    return (h * h).sum(axis=0)


w = jax.ShapeDtypeStruct((128, 128), jnp.bfloat16, sharding=NamedSharding(mesh, P()))
x = jax.ShapeDtypeStruct((32, 128), jnp.bfloat16, sharding=NamedSharding(mesh, P("batch")))
jax.jit(step).lower(w, x).compile({"xla_allow_excess_precision": False, "xla_tpu_enable_copy_fusion": False})
