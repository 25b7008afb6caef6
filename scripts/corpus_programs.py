"""Small real JAX programs for the corpus (scripts/make_corpus.py): what users jit today.

Each program is a function of flat arrays (so ``corpus_programs:NAME --args SPECS`` loads
it) and a ``Program`` record: its argument specs, the host CPU devices it needs, how it is
jitted (shardings), and what it needs of jax. Shapes stay tiny (dims 8..64): the corpus
goes through every door of the driver in the suite. Sharded programs build their mesh
from ``jax.devices()``, so they are lowered in a process with 8 host CPU devices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

F32 = jnp.float32


@dataclass(frozen=True)
class Program:
    name: str
    fn: Callable[..., Any]
    args: str  # --args specs, e.g. "f32[8,32],i32[8]"
    partitions: int = 1  # host CPU devices it is partitioned over
    # (in_shardings, out_shardings) builder, given the devices; None: plain jit
    shardings: Callable[[list], tuple[Any, Any]] | None = None
    needs: tuple[str, ...] = field(default=())  # jax features; see missing()
    mesh: Callable[[list], Any] | None = None  # a mesh to lower under (explicit axes)


# ------------------------------------------------------------------ the programs

def _layer_norm(x, g, b):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b


def transformer_block(x, wq, wk, wv, wo, g1, b1, w1, w2, g2, b2):
    """Pre-LN attention (4 heads, causal) and a GELU MLP, with residuals."""
    t, d = x.shape
    h = _layer_norm(x, g1, b1)
    heads = 4

    def split(a):
        return a.reshape(t, heads, d // heads).transpose(1, 0, 2)

    q, k, v = split(h @ wq), split(h @ wk), split(h @ wv)
    s = jnp.einsum("htd,hsd->hts", q, k) / jnp.sqrt(jnp.float32(d // heads))
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e9)
    a = jnp.einsum("hts,hsd->htd", jax.nn.softmax(s, axis=-1), v).transpose(1, 0, 2).reshape(t, d)
    x = x + a @ wo
    return x + jax.nn.gelu(_layer_norm(x, g2, b2) @ w1) @ w2


def mlp_train_step(w1, b1, w2, b2, m1, m2, x, y):
    """Cross-entropy MLP, grad, and an Adam-style update (first and second moments kept in one)."""
    def loss(p):
        h = jax.nn.relu(x @ p[0] + p[1])
        logits = h @ p[2] + p[3]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    params = (w1, b1, w2, b2)
    lval, g = jax.value_and_grad(loss)(params)
    new_m1 = 0.9 * m1 + 0.1 * g[0]
    new_m2 = 0.999 * m2 + 0.001 * g[0] * g[0]
    w1 = w1 - 1e-2 * new_m1 / (jnp.sqrt(new_m2) + 1e-8)
    rest = [p - 1e-2 * d for p, d in zip(params[1:], g[1:])]
    return (lval, w1, *rest, new_m1, new_m2)


def scan_rnn(h0, xs, wx, wh):
    """An Elman RNN over time with lax.scan; the last state and every output."""
    def step(h, x):
        h = jnp.tanh(x @ wx + h @ wh)
        return h, h

    return jax.lax.scan(step, h0, xs)


def conv_net(img, k1, k2, w):
    """Two 3x3 convolutions (NHWC), ReLU, a 2x2 average pool and a dense head."""
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.nn.relu(jax.lax.conv_general_dilated(img, k1, (1, 1), "SAME", dimension_numbers=dn))
    h = jax.nn.relu(jax.lax.conv_general_dilated(h, k2, (1, 1), "SAME", dimension_numbers=dn))
    h = jax.lax.reduce_window(h, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    return h.reshape(h.shape[0], -1) @ w


def checkpointed_grad(x, w1, w2):
    """The gradient of a rematerialized two-layer block (jax.checkpoint)."""
    @jax.checkpoint
    def block(x, w1, w2):
        return jnp.sin(jnp.tanh(x @ w1) @ w2)

    return jax.grad(lambda a, b: jnp.sum(block(x, a, b) ** 2), argnums=(0, 1))(w1, w2)


@jax.custom_vjp
def _clipped_tanh(x):
    return jnp.tanh(x)


def _clipped_tanh_fwd(x):
    y = jnp.tanh(x)
    return y, y


def _clipped_tanh_bwd(y, g):
    return (jnp.clip(g * (1 - y * y), -0.5, 0.5),)


_clipped_tanh.defvjp(_clipped_tanh_fwd, _clipped_tanh_bwd)


def custom_vjp_grad(x, w):
    """A custom_vjp nonlinearity (gradient clipped in its backward rule), differentiated."""
    return jax.grad(lambda w: jnp.sum(_clipped_tanh(x @ w)))(w)


def while_newton(a):
    """Newton's method for sqrt(a) in a while_loop until every element converged (or 50 steps)."""
    def cond(s):
        i, x, prev = s
        return (i < 50) & jnp.any(jnp.abs(x - prev) > 1e-6)

    def body(s):
        i, x, _ = s
        return i + 1, 0.5 * (x + a / x), x

    return jax.lax.while_loop(cond, body, (0, jnp.maximum(a, 1.0), jnp.zeros_like(a)))[1]


def sort_topk(x):
    """Sort, argsort and top-k along the last axis."""
    vals, idx = jax.lax.top_k(x, 4)
    return jnp.sort(x, axis=-1), jnp.argsort(x, axis=0), vals, idx


def gather_scatter(table, idx, upd, seg):
    """Row gather, scatter-add, and a segment sum."""
    rows = table[idx]
    added = table.at[idx].add(upd)
    sums = jax.ops.segment_sum(upd, seg, num_segments=8)
    return rows, added, sums


def bf16_mixed(x, w1, w2):
    """bf16 weights and activations, f32 accumulation and softmax."""
    h = jax.lax.dot(x.astype(jnp.bfloat16), w1.astype(jnp.bfloat16), preferred_element_type=F32)
    h = jax.nn.gelu(h).astype(jnp.bfloat16)
    out = jax.lax.dot(h, w2.astype(jnp.bfloat16), preferred_element_type=F32)
    return jax.nn.softmax(out, axis=-1)


def fp8_mixed(x, w):
    """Per-tensor scaled e4m3 inputs, an f32 dot, descaled (an fp8 training matmul)."""
    sx = jnp.max(jnp.abs(x)) / 448.0 + 1e-12
    sw = jnp.max(jnp.abs(w)) / 448.0 + 1e-12
    x8 = (x / sx).astype(jnp.float8_e4m3fn)
    w8 = (w / sw).astype(jnp.float8_e4m3fn)
    return jax.lax.dot(x8, w8, preferred_element_type=F32) * (sx * sw)


def sharded_mlp(x, w1, w2):
    """A data-parallel MLP forward (the batch split over the mesh)."""
    return jnp.tanh(x @ w1) @ w2


def sharded_matmul_2d(x, w):
    """Batch over 'data', the weight's columns over 'model' (2x4 mesh)."""
    return jax.nn.relu(x @ w)


def _shard_map():
    return getattr(jax, "shard_map", None) or __import__("jax.experimental.shard_map", fromlist=["x"]).shard_map


def shard_map_psum(x, w):
    """shard_map over 4 devices: local matmuls, a psum over the axis, a local tanh."""
    from jax.sharding import PartitionSpec as P

    mesh = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("i",))

    def local(xs, ws):
        return jnp.tanh(jax.lax.psum(xs @ ws, "i"))

    return _shard_map()(local, mesh=mesh, in_specs=(P(None, "i"), P("i", None)), out_specs=P())(x, w)


def explicit_axes(x, w):
    """A 2x4 mesh with Explicit axes: the batch split over both, a replicated weight."""
    return jnp.tanh(x @ w) * 2.0


def _named(spec_fn):
    def build(devices):
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        mesh, ins, outs = spec_fn(devices)
        return (tuple(NamedSharding(mesh, P(*s)) for s in ins), NamedSharding(mesh, P(*outs)))
    return build


def _mesh_4(devices):
    return jax.sharding.Mesh(np.array(devices[:4]), ("b",))


def _mesh_2x4(devices):
    return jax.sharding.Mesh(np.array(devices[:8]).reshape(2, 4), ("data", "model"))


def _explicit_mesh(devices):
    axis_type = jax.sharding.AxisType.Explicit
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(axis_type, axis_type), devices=devices[:8])


PROGRAMS = [
    Program("transformer_block", transformer_block,
            "f32[16,32],f32[32,32],f32[32,32],f32[32,32],f32[32,32],f32[32],f32[32],f32[32,64],f32[64,32],"
            "f32[32],f32[32]"),
    Program("mlp_train_step", mlp_train_step,
            "f32[16,32],f32[32],f32[32,8],f32[8],f32[16,32],f32[16,32],f32[8,16],i32[8]"),
    Program("scan_rnn", scan_rnn, "f32[8,16],f32[12,8,16],f32[16,16],f32[16,16]"),
    Program("conv_net", conv_net, "f32[2,8,8,3],f32[3,3,3,8],f32[3,3,8,8],f32[128,10]"),
    Program("checkpoint", checkpointed_grad, "f32[8,16],f32[16,32],f32[32,8]"),
    Program("custom_vjp", custom_vjp_grad, "f32[8,16],f32[16,8]"),
    Program("while_loop", while_newton, "f32[8,8]"),
    Program("sort_topk", sort_topk, "f32[8,16]"),
    Program("gather_scatter", gather_scatter, "f32[16,8],i32[12],f32[12,8],i32[12]"),
    Program("bf16_mixed", bf16_mixed, "f32[8,32],f32[32,64],f32[64,16]"),
    Program("fp8_mixed", fp8_mixed, "f32[16,32],f32[32,16]", needs=("float8_e4m3fn",)),
    Program("sharded_mlp_4", sharded_mlp, "f32[16,32],f32[32,32],f32[32,8]", partitions=4,
            shardings=_named(lambda d: (_mesh_4(d), [("b", None), (), ()], ("b", None)))),
    Program("sharded_2d_8", sharded_matmul_2d, "f32[16,32],f32[32,16]", partitions=8,
            shardings=_named(lambda d: (_mesh_2x4(d), [("data", None), (None, "model")], ("data", "model")))),
    Program("shard_map_4", shard_map_psum, "f32[8,32],f32[32,16]", partitions=4, needs=("shard_map",)),
    Program("explicit_axes_8", explicit_axes, "f32[16,32],f32[32,16]", partitions=8,
            shardings=_named(lambda d: (_explicit_mesh(d), [(("x", "y"), None), ()], (("x", "y"), None))),
            needs=("explicit_axes",), mesh=_explicit_mesh),
]


def missing(program: Program) -> str | None:
    """Why the installed jax cannot express ``program`` (None: it can)."""
    for need in program.needs:
        if need == "float8_e4m3fn" and not hasattr(jnp, "float8_e4m3fn"):
            return f"jax {jax.__version__} has no float8_e4m3fn"
        if need == "shard_map":
            try:
                _shard_map()
            except ImportError:
                return f"jax {jax.__version__} has no shard_map"
        if need == "explicit_axes" and not (hasattr(jax.sharding, "AxisType") and hasattr(jax, "make_mesh")):
            return f"jax {jax.__version__} has no explicit mesh axes (jax.sharding.AxisType)"
    return None


def jitted(program: Program) -> Any:
    """``jax.jit`` of the program as its user jits it: with its shardings over this
    process's devices (traced under its mesh, for explicit axes)."""
    if program.shardings is None:
        return jax.jit(program.fn)
    ins, outs = program.shardings(jax.devices())
    return jax.jit(program.fn, in_shardings=ins, out_shardings=outs)


def _entry(program: Program) -> Callable[..., Any]:
    def entry(*args):
        return jitted(program)(*args)  # a nested jit keeps its shardings in the lowering

    entry.__name__ = program.name
    return entry


# Entry points by program name, for `corpus_programs:NAME --args SPECS`.
for _p in PROGRAMS:
    globals()[_p.name] = _entry(_p) if _p.shardings is not None else _p.fn
