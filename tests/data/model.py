"""A small JAX model for README.md's examples of a JAX function as an input:
``mlirhlo kernels tests/data/model.py:mlp --args 'f32[64,256],f32[256,512],f32[512]'``."""

import jax


def mlp(x, w, b):
    return jax.nn.gelu(x @ w + b)
