"""ir/precision.py: which products of a module leave their precision to the platform."""

from __future__ import annotations

import pytest
from jaxlib.mlir import ir

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.ir import precision


def _module(element: str, config: str = "") -> ir.Module:
    text = f"""
    func.func @main(%a: tensor<2x3x{element}>, %b: tensor<3x4x{element}>) -> tensor<2x4x{element}> {{
      %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]{config}
        : (tensor<2x3x{element}>, tensor<3x4x{element}>) -> tensor<2x4x{element}>
      return %0 : tensor<2x4x{element}>
    }}"""
    return ir.Module.parse(text, _jaxlib.ir_context())


@pytest.mark.parametrize("element,config,count", [
    ("f32", "", 1),
    ("bf16", "", 1),
    ("complex<f32>", "", 1),
    ("i32", "", 0),
    ("f32", ", precision = [DEFAULT, DEFAULT]", 1),
    ("f32", ", precision = [HIGHEST, HIGHEST]", 0),
])
def test_default_precision_products_counts_float_products_at_default(element, config, count):
    assert precision.default_precision_products(_module(element, config)) == count


def test_with_precision_sets_every_product_and_leaves_an_explicit_algorithm():
    module = _module("f32", ", precision = [DEFAULT, HIGH]")
    raised = precision.with_precision(module, "highest")
    assert "precision = [HIGHEST, HIGHEST]" in str(raised)
    assert precision.default_precision_products(raised) == 0
    assert precision.default_precision_products(module) == 1  # the given module is left as it was
