"""Regenerate the sample modules in tests/data/ from small JAX programs.

    python scripts/make_samples.py

Writes, for each program, what an engineer meets in practice: XLA's own dump
(``*.before_optimizations.txt`` as ``--xla_dump_to`` writes it), a jax.export
portable artifact (``*.vhlo``), and StableHLO text (``*.mlir``). The files are
committed; tests read them, so the suite does not depend on this script.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mlirhlo_driver._native import jaxlib as _jaxlib  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def main() -> None:
    jax = _jaxlib.jax()  # this script's own: CPU, with host devices for the sharded samples
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", 4)
    import jax.numpy as jnp
    from jax import export

    DATA.mkdir(parents=True, exist_ok=True)

    def mlp_train_step(params, x, y):
        def loss(p):
            h = jnp.tanh(x @ p["w1"] + p["b1"])
            logits = h @ p["w2"] + p["b2"]
            return jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y] * -1.0)

        g = jax.grad(loss)(params)
        return jax.tree.map(lambda p, d: p - 0.1 * d, params, g)

    params = {"w1": jnp.zeros((16, 32)), "b1": jnp.zeros((32,)),
              "w2": jnp.zeros((32, 8)), "b2": jnp.zeros((8,))}
    x = jnp.zeros((4, 16))
    y = jnp.zeros((4,), jnp.int32)
    _xla_dump("mlp_train_step", jax.jit(mlp_train_step), params, x, y)

    # CHLO ops survive jax lowering (erf_inv, lgamma...): input for legalize-chlo.
    def special(x):
        return jax.lax.erf_inv(jnp.clip(x, -0.9, 0.9)) + jax.lax.lgamma(x * x + 1.0)

    text = jax.jit(special).lower(jnp.zeros((8,), jnp.float32)).as_text()
    (DATA / "chlo_special.mlir").write_text(text)

    # A shape-polymorphic export: dynamic shapes for refine-shapes.
    def softmax(x):
        return jax.nn.softmax(x, axis=-1)

    (b,) = export.symbolic_shape("b")
    exp = export.export(jax.jit(softmax))(jax.ShapeDtypeStruct((b, 16), jnp.float32))
    (DATA / "softmax_dynamic.mlir").write_text(exp.mlir_module())
    exp_static = export.export(jax.jit(softmax))(jax.ShapeDtypeStruct((4, 16), jnp.float32))
    (DATA / "softmax.vhlo").write_bytes(exp_static.mlir_module_serialized)

    # Shardy-annotated module (4 CPU devices): input for shardy propagation.
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(jax.devices()[:4], ("x",))
    sharded = jax.jit(lambda a, w: jnp.tanh(a @ w),
                      in_shardings=(NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())))
    text = sharded.lower(jnp.zeros((8, 16)), jnp.zeros((16, 4))).as_text()
    (DATA / "sharded_matmul.mlir").write_text(text)
    _jax_program_dumps(jax, jnp)
    print("wrote", sorted(p.name for p in DATA.iterdir()))


def _jax_program_dumps(jax, jnp) -> None:
    """XLA dumps of small real JAX programs, one dump directory, for `mlirhlo run`."""
    out = DATA / "jax_dumps"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    k = jax.random.key(0)

    def attention(q, kk, v):
        s = jnp.einsum("bqd,bkd->bqk", q, kk) / jnp.sqrt(q.shape[-1])
        return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, axis=-1), v)

    def scan_cumulative(xs):
        def step(carry, x):
            carry = carry * 0.9 + jnp.tanh(x)
            return carry, carry
        return jax.lax.scan(step, jnp.zeros(xs.shape[1:]), xs)[1]

    def sort_topk(x):
        return jnp.sort(x, axis=-1), jax.lax.top_k(x, 3)[0]

    def gather_scatter(table, idx, upd):
        rows = table[idx]
        return rows, table.at[idx].add(upd)

    def conv(img, kern):
        return jax.lax.conv_general_dilated(img, kern, (1, 1), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def mlp_step(w1, w2, x, y):
        def loss(ws):
            return jnp.mean((jnp.tanh(x @ ws[0]) @ ws[1] - y) ** 2)
        g = jax.grad(loss)((w1, w2))
        return w1 - 0.1 * g[0], w2 - 0.1 * g[1]

    programs = {
        "attention": (attention, (jnp.zeros((2, 8, 16)),) * 3),
        "scan": (scan_cumulative, (jnp.zeros((12, 4)),)),
        "sort": (sort_topk, (jnp.zeros((4, 10)),)),
        "gather_scatter": (gather_scatter, (jnp.zeros((10, 3)), jnp.zeros((5,), jnp.int32),
                                            jnp.zeros((5, 3)))),
        "conv": (conv, (jnp.zeros((1, 8, 8, 3)), jnp.zeros((3, 3, 3, 4)))),
        "mlp_step": (mlp_step, (jnp.zeros((16, 32)), jnp.zeros((32, 4)), jnp.zeros((8, 16)),
                                jnp.zeros((8, 4)))),
    }
    del k
    for name, (fn, args) in programs.items():
        _xla_dump(name, jax.jit(fn), *args, into=out)


def _xla_dump(name: str, fn, *args, into: Path = DATA) -> None:
    """Compile on CPU with --xla_dump_to and keep XLA's before_optimizations text."""
    from jaxlib.mlir import ir

    from mlirhlo_driver.xla import backend
    from mlirhlo_driver.xla.platforms import CpuTarget

    text = fn.lower(*args).as_text()
    with _jaxlib.ir_context():
        module = ir.Module.parse(text)
    art = backend.compile(module, backend.CompileSpec(CpuTarget(), dumps=(backend.HLO_TEXT,)), name).art
    kept = f"{name}.before_optimizations.txt" if into == DATA else f"module_{name}.before_optimizations.txt"
    (into / kept).write_bytes(art.files["before_optimizations.txt"])


if __name__ == "__main__":
    main()
