"""Write a corpus of self-checking StableHLO files in the ``stablehlo/testdata`` style.

    python scripts/make_check_corpus.py OUT_DIR [--sample tests/data/checks/corpus]

Each file is ``module @jit_testcase { @main, @inputs, @expected }``: ``@inputs()``
returns the test's constants, ``@expected()`` the values numpy computed here
(never XLA), and ``@main`` checks with ``check.expect_eq`` / ``expect_close`` /
``expect_almost_eq`` / ``check.eq`` custom calls, the way StableHLO's testdata
does. The corpus leans on what XLA folds away when the inputs stay constants:
splat, one-element, scalar and uniform inputs (each a splat attribute), with
non-splat controls; i1, integer, float and complex element types; scatter,
gather, compare, select, slice, dynamic-slice/update-slice, argmax-style
reduces, iota, broadcasts and reshapes, and the dynamic-shape ops whose shape
operand must stay a constant (dynamic_broadcast_in_dim, dynamic_reshape,
dynamic_iota, dynamic_pad, real_dynamic_slice).

``--sample DIR`` also writes a handful of the files (one per family) to DIR, for
the tests. Nothing here is copied from StableHLO's files.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "data" / "checks"))

from generate import _TYPES, _scalar, dense, ttype  # noqa: E402

RNG = np.random.default_rng(22)
KINDS = ("splat", "one", "scalar", "uniform", "varied")
SHAPE = (3, 4)


def tt(shape, dtype) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{_TYPES[np.dtype(dtype)]}>"


class Value:
    """An @inputs() constant: its array and how it is written (a splat, or every element)."""

    def __init__(self, array, splat: bool = False):
        self.array = np.asarray(array)
        self.splat = splat

    def text(self) -> str:
        a = self.array
        if self.splat:
            return f"dense<{_scalar(a.reshape(-1)[0], a.dtype)}> : {ttype(a)}"
        return dense(a)

    @property
    def type(self) -> str:
        return ttype(self.array)


def sample(dtype, shape, lo=-4, hi=5):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.kind == "u":
        return RNG.integers(0, max(hi, 2), shape).astype(dtype)
    if dtype.kind == "i":
        return RNG.integers(lo, hi, shape).astype(dtype)
    if dtype.kind == "c":
        return (RNG.integers(lo, hi, shape) * 0.5 + 1j * RNG.integers(lo, hi, shape) * 0.25).astype(dtype)
    return (RNG.integers(lo * 4, hi * 4, shape) * 0.25).astype(dtype)


def make_input(kind: str, dtype, shape=SHAPE) -> Value:
    """An input of ``kind``: splat (dense<v> of a shape), one (tensor<1xT>), scalar
    (tensor<T>), uniform (every element written out, all equal) or varied."""
    if kind == "scalar":
        return Value(sample(dtype, ()))
    if kind == "one":
        return Value(sample(dtype, (1,)))
    if kind == "splat":
        return Value(np.full(shape, sample(dtype, ())), splat=True)
    if kind == "uniform":
        return Value(np.full(shape, sample(dtype, ())))
    a = sample(dtype, shape)
    while a.size > 1 and np.all(a == a.reshape(-1)[0]):
        a = sample(dtype, shape)
    return Value(a)


def check_call(kind: str, actual: str, expected: str, t: str) -> str:
    if kind == "check.eq":
        return f"%ok_{actual[1:].replace('#', '_')} = stablehlo.custom_call @check.eq({actual}, {expected}) : ({t}, {t}) -> tensor<i1>"
    return f"stablehlo.custom_call @{kind}({actual}, {expected}) {{has_side_effect = true}} : ({t}, {t}) -> ()"


def check_kind(dtype, exact: bool = True) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return "check.expect_eq" if RNG.random() < 0.7 else "check.eq"
    if dtype.kind == "c":
        return "check.expect_almost_eq"
    return "check.expect_eq" if exact and RNG.random() < 0.3 else "check.expect_close"


def module(comment: str, inputs: list[Value], body: list[str], results: list[tuple[str, np.ndarray]],
           kinds: list[str] | None = None) -> str:
    """A testdata-style module. ``body`` uses %in0, %in1...; ``results`` are the
    (SSA name, expected value) pairs checked, the first one also returned."""
    n = len(inputs)
    in_types = [v.type for v in inputs]
    ex_types = [ttype(e) for _, e in results]
    kinds = kinds or [check_kind(e.dtype) for _, e in results]
    lines = [f"// {comment}", "module @jit_testcase {"]
    ret_t = ex_types[0]
    lines.append(f"  func.func public @main() -> ({ret_t} {{jax.result_info = \"\"}}) {{")
    if n == 1:
        lines.append(f"    %in = call @inputs() : () -> {in_types[0]}")
        names = ["%in"]
    else:
        lines.append(f"    %in:{n} = call @inputs() : () -> ({', '.join(in_types)})")
        names = [f"%in#{i}" for i in range(n)]
    if len(results) == 1:
        lines.append(f"    %ex = call @expected() : () -> {ex_types[0]}")
        ex_names = ["%ex"]
    else:
        lines.append(f"    %ex:{len(results)} = call @expected() : () -> ({', '.join(ex_types)})")
        ex_names = [f"%ex#{i}" for i in range(len(results))]
    subst = {f"%in{i}": names[i] for i in range(n)}
    for line in body:
        for k in sorted(subst, key=len, reverse=True):
            line = line.replace(k + " ", subst[k] + " ").replace(k + ",", subst[k] + ",") \
                .replace(k + ")", subst[k] + ")")
            if line.endswith(k):
                line = line[: -len(k)] + subst[k]
        lines.append("    " + line)
    for (name, _), ex, t, kind in zip(results, ex_names, ex_types, kinds):
        lines.append("    " + check_call(kind, name, ex, t))
    lines.append(f"    return {results[0][0]} : {ret_t}")
    lines.append("  }")
    attrs = ", ".join(f"{t} {{mhlo.layout_mode = \"default\"}}" for t in in_types)
    lines.append(f"  func.func private @inputs() -> ({attrs}) {{")
    for i, v in enumerate(inputs):
        lines.append(f"    %c{i} = stablehlo.constant {v.text()}")
    lines.append(f"    return {', '.join(f'%c{i}' for i in range(n))} : {', '.join(in_types)}")
    lines.append("  }")
    lines.append(f"  func.func private @expected() -> ({', '.join(ex_types)}) {{")
    for i, (_, e) in enumerate(results):
        lines.append(f"    %e{i} = stablehlo.constant {dense(e)}")
    lines.append(f"    return {', '.join(f'%e{i}' for i in range(len(results)))} : {', '.join(ex_types)}")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


DT = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
      "i32": np.int32, "i8": np.int8, "i64": np.int64, "ui8": np.uint8, "ui32": np.uint32,
      "i1": np.bool_, "c64": np.complex64}


def shape_of(v: Value) -> tuple[int, ...]:
    return v.array.shape


# ------------------------------------------------------------------ families

def binary(op: str, dt: str, kind: str):
    d = DT[dt]
    a = make_input(kind, d)
    b = make_input(kind if RNG.random() < 0.6 else "varied", d, shape_of(a))
    x, y = a.array, b.array
    fn = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
          "minimum": np.minimum, "and": np.logical_and if d == np.bool_ else np.bitwise_and,
          "or": np.logical_or if d == np.bool_ else np.bitwise_or,
          "xor": np.logical_xor if d == np.bool_ else np.bitwise_xor}[op]
    if d == np.bool_ and op == "add":
        fn = np.logical_or
    with np.errstate(over="ignore"):
        r = np.asarray(fn(x, y)).astype(d)
    t = a.type
    return (f"{op}_{dt}_{kind}", module(f"{op} of {dt} inputs ({kind})", [a, b],
            [f"%r = stablehlo.{op} %in0, %in1 : {t}"], [("%r", r)]))


def unary(op: str, dt: str, kind: str):
    d = DT[dt]
    lo = 1 if op in ("sqrt", "log") else -4
    a = make_input(kind, d)
    if op in ("sqrt", "log"):
        a.array = np.abs(a.array) + d(1)
    x = a.array
    x64 = x.astype(np.float64) if np.dtype(d).kind == "f" else x
    fn = {"abs": np.abs, "negate": np.negative, "exponential": np.exp, "sqrt": np.sqrt, "log": np.log,
          "not": np.logical_not if d == np.bool_ else np.invert, "sign": np.sign}[op]
    with np.errstate(over="ignore"):
        r = np.asarray(fn(x64)).astype(d)
    del lo
    t = a.type
    return (f"{op}_{dt}_{kind}", module(f"{op} of a {dt} input ({kind})", [a],
            [f"%r = stablehlo.{op} %in0 : {t}"], [("%r", r)]))


def compare(direction: str, dt: str, kind: str):
    d = DT[dt]
    a = make_input(kind, d)
    b = make_input("varied" if kind == "varied" else kind, d, shape_of(a))
    if RNG.random() < 0.5:
        b = Value(a.array.copy(), splat=a.splat)  # equal operands: EQ/GE/LE all true
    ctype = {"f": "FLOAT", "i": "SIGNED", "u": "UNSIGNED", "b": "UNSIGNED"}[np.dtype(d).kind]
    fn = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
          "GE": np.greater_equal}[direction]
    r = np.asarray(fn(a.array, b.array))
    rt = tt(r.shape, np.bool_)
    return (f"compare_{direction}_{dt}_{kind}", module(
        f"compare {direction} of {dt} inputs ({kind}), an i1 result", [a, b],
        [f"%r = stablehlo.compare  {direction}, %in0, %in1,  {ctype} : ({a.type}, {b.type}) -> {rt}"],
        [("%r", r)]))


def select(dt: str, kind: str):
    d = DT[dt]
    on_true = make_input(kind, d)
    on_false = make_input("varied" if kind != "scalar" else "scalar", d, shape_of(on_true))
    if kind == "scalar":
        pred = Value(np.asarray(RNG.random() < 0.5))
    elif RNG.random() < 0.5:
        pred = Value(np.full(shape_of(on_true), RNG.random() < 0.5), splat=True)
    else:
        pred = Value(RNG.integers(0, 2, shape_of(on_true)).astype(bool))
    r = np.where(pred.array, on_true.array, on_false.array).astype(d)
    return (f"select_{dt}_{kind}", module(
        f"select on an i1 predicate from @inputs ({kind} values)", [pred, on_true, on_false],
        [f"%r = stablehlo.select %in0, %in1, %in2 : ({pred.type}, {on_true.type}, {on_false.type}) -> {on_true.type}"],
        [("%r", r)]))


def slice_(dt: str, kind: str):
    d = DT[dt]
    a = make_input(kind if kind not in ("one", "scalar") else "splat", d, (5, 6))
    r = a.array[1:4, 0:5:2]
    return (f"slice_{dt}_{kind}", module(
        f"slice [1:4, 0:5:2] of a {dt} input ({kind})", [a],
        [f'%r = "stablehlo.slice"(%in0) <{{start_indices = array<i64: 1, 0>, limit_indices = array<i64: 4, 5>, '
         f'strides = array<i64: 1, 2>}}> : ({a.type}) -> {ttype(r)}'], [("%r", r)]))


def dynamic_slice(dt: str, kind: str):
    d = DT[dt]
    a = make_input(kind if kind not in ("one", "scalar") else "splat", d, (5, 6))
    if kind == "varied":
        a = Value(np.arange(30).reshape(5, 6).astype(d))
    s0, s1 = int(RNG.integers(-1, 6)), int(RNG.integers(0, 7))  # out of range: clamped
    i0, i1 = Value(np.asarray(s0, np.int32)), Value(np.asarray(s1, np.int32))
    c0, c1 = min(max(s0, 0), 5 - 2), min(max(s1, 0), 6 - 3)
    r = a.array[c0:c0 + 2, c1:c1 + 3]
    return (f"dynamic_slice_{dt}_{kind}", module(
        f"dynamic_slice with start indices from @inputs ({s0}, {s1}; clamped), {kind} operand",
        [a, i0, i1],
        [f"%r = stablehlo.dynamic_slice %in0, %in1, %in2, sizes = [2, 3] : ({a.type}, tensor<i32>, tensor<i32>) -> {ttype(r)}"],
        [("%r", r)]))


def dynamic_update_slice(dt: str, kind: str):
    d = DT[dt]
    a = make_input(kind if kind not in ("one", "scalar") else "splat", d, (4, 4))
    u = make_input("splat" if kind != "varied" else "varied", d, (2, 3))
    s0, s1 = int(RNG.integers(0, 4)), int(RNG.integers(0, 3))
    i0, i1 = Value(np.asarray(s0, np.int32)), Value(np.asarray(s1, np.int32))
    c0, c1 = min(s0, 2), min(s1, 1)
    r = a.array.copy()
    r[c0:c0 + 2, c1:c1 + 3] = u.array
    return (f"dynamic_update_slice_{dt}_{kind}", module(
        f"dynamic_update_slice of a {kind} operand at ({s0}, {s1}) from @inputs", [a, u, i0, i1],
        [f"%r = stablehlo.dynamic_update_slice %in0, %in1, %in2, %in3 : ({a.type}, {u.type}, tensor<i32>, tensor<i32>) -> {a.type}"],
        [("%r", r)]))


def gather(dt: str, kind: str):
    d = DT[dt]
    table = make_input(kind if kind not in ("one", "scalar") else "splat", d, (5, 3))
    n = 1 if kind in ("one", "scalar") else 4
    idx = RNG.integers(0, 5, (n, 1)).astype(np.int32)
    if kind in ("splat", "uniform"):
        idx[:] = idx[0, 0]
    iv = Value(idx, splat=kind == "splat")
    r = table.array[idx[:, 0]]
    return (f"gather_{dt}_{kind}", module(
        f"gather of table rows by indices from @inputs ({kind})", [table, iv],
        ['%r = "stablehlo.gather"(%in0, %in1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], '
         'collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>, '
         f'indices_are_sorted = false}}> : ({table.type}, {iv.type}) -> {ttype(r)}'], [("%r", r)]))


def scatter(dt: str, kind: str, combine: str, indices_in: str):
    """Scatter into an operand from @inputs; the indices a constant of @main (as jax
    writes them) or another input; update values splat, one-element or varied."""
    d = DT[dt]
    operand = make_input(kind if kind not in ("one", "scalar") else "splat", d, (6,))
    n = 1 if kind in ("one", "scalar") else 3
    idx = RNG.integers(0, 6, (n, 1)).astype(np.int32)
    if kind in ("splat", "uniform"):
        idx[:] = idx[0, 0]
    upd = make_input("one" if n == 1 else ("splat" if kind == "splat" else "varied"), d, (n,))
    if upd.array.shape != (n,):
        upd = Value(upd.array.reshape(n))
    r = operand.array.copy()
    for k in range(n):
        if combine == "add":
            r[idx[k, 0]] = (r[idx[k, 0]] + upd.array[k]) if d != np.bool_ else (r[idx[k, 0]] or upd.array[k])
        else:
            r[idx[k, 0]] = upd.array[k]
    op = "or" if d == np.bool_ and combine == "add" else combine
    region_op = "" if combine == "replace" else f"      %s = stablehlo.{op} %a, %b : tensor<{_TYPES[np.dtype(d)]}>\n"
    ret = "%b" if combine == "replace" else "%s"
    et = f"tensor<{_TYPES[np.dtype(d)]}>"
    iv = Value(idx, splat=kind == "splat")
    inputs = [operand, upd] + ([iv] if indices_in == "inputs" else [])
    body = []
    index_name = "%in2"
    if indices_in == "main":
        body.append(f"%idx = stablehlo.constant {iv.text()}")
        index_name = "%idx"
    body.append(
        f'%r = "stablehlo.scatter"(%in0, {index_name}, %in1) <{{scatter_dimension_numbers = #stablehlo.scatter<'
        'update_window_dims = [], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], '
        'index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false}> ({')
    body.append(f"  ^bb0(%a: {et}, %b: {et}):")
    if region_op:
        body.append("    " + region_op.strip())
    body.append(f"    stablehlo.return {ret} : {et}")
    body.append(f"}}) : ({operand.type}, {iv.type}, {upd.type}) -> {operand.type}")
    return (f"scatter_{combine}_{dt}_{kind}_idx_{indices_in}", module(
        f"scatter ({combine}) of {kind} updates; indices in {'@main' if indices_in == 'main' else '@inputs'}",
        inputs, body, [("%r", r)]))


def argmax(dt: str, kind: str):
    d = DT[dt]
    x = make_input(kind if kind != "scalar" else "one", d, (7,))
    n = x.array.shape[0]
    et = f"tensor<{_TYPES[np.dtype(d)]}>"
    if np.dtype(d).kind == "f":
        init = "0xFF800000" if d == np.float32 else "-inf"
        init = f"dense<{init}> : {et}" if d == np.float32 else f"dense<{-65504.0 if d == np.float16 else -1e30}> : {et}"
        ctype = "FLOAT"
    elif d == np.bool_:
        init, ctype = f"dense<false> : {et}", "UNSIGNED"
    else:
        init, ctype = f"dense<{np.iinfo(d).min}> : {et}", "SIGNED" if np.dtype(d).kind == "i" else "UNSIGNED"
    r = np.asarray(np.argmax(x.array), np.int32)
    body = [
        f"%iota = stablehlo.iota dim = 0 : tensor<{n}xi32>",
        f"%init = stablehlo.constant {init}",
        "%zero = stablehlo.constant dense<0> : tensor<i32>",
        '%m:2 = "stablehlo.reduce"(%in0, %iota, %init, %zero) <{dimensions = array<i64: 0>}> ({',
        f"  ^bb0(%a: {et}, %ai: tensor<i32>, %b: {et}, %bi: tensor<i32>):",
        f"    %gt = stablehlo.compare  GT, %a, %b,  {ctype} : ({et}, {et}) -> tensor<i1>",
        f"    %eq = stablehlo.compare  EQ, %a, %b,  {ctype} : ({et}, {et}) -> tensor<i1>",
        "    %lt = stablehlo.compare  LT, %ai, %bi,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>",
        "    %tie = stablehlo.and %eq, %lt : tensor<i1>",
        "    %take = stablehlo.or %gt, %tie : tensor<i1>",
        f"    %v = stablehlo.select %gt, %a, %b : (tensor<i1>, {et}, {et}) -> {et}",
        "    %i = stablehlo.select %take, %ai, %bi : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>",
        f"    stablehlo.return %v, %i : {et}, tensor<i32>",
        f"}}) : ({x.type}, tensor<{n}xi32>, {et}, tensor<i32>) -> ({et}, tensor<i32>)",
    ]
    return (f"argmax_{dt}_{kind}", module(f"argmax as a variadic reduce with an iota ({kind} input; ties: "
                                         "the first index)", [x], body, [("%m#1", r)]))


def reduce_sum(dt: str, kind: str):
    d = DT[dt]
    x = make_input(kind if kind not in ("scalar",) else "one", d)
    et = f"tensor<{_TYPES[np.dtype(d)]}>"
    zero = "false" if d == np.bool_ else ("0.0" if np.dtype(d).kind in "fc" else "0")
    if np.dtype(d).kind == "c":
        zero = "(0.0, 0.0)"
    op = "or" if d == np.bool_ else "add"
    r = (np.any(x.array, axis=-1) if d == np.bool_ else np.sum(x.array, axis=-1)).astype(d)
    body = [f"%z = stablehlo.constant dense<{zero}> : {et}",
            f"%r = stablehlo.reduce(%in0 init: %z) applies stablehlo.{op} across dimensions = [{x.array.ndim - 1}] "
            f": ({x.type}, {et}) -> {ttype(r)}"]
    return (f"reduce_{op}_{dt}_{kind}", module(f"reduce ({op}) over the last dimension ({kind})", [x], body,
                                                [("%r", r)]))


def iota_plus(dt: str, kind: str):
    d = DT[dt]
    x = make_input(kind if kind != "one" else "scalar", d)
    out = SHAPE
    io = np.broadcast_to(np.arange(out[1]), out).astype(d)
    r = (io + x.array).astype(d)
    body = [f"%io = stablehlo.iota dim = 1 : {tt(out, d)}"]
    if x.array.shape == ():
        body.append(f"%b = stablehlo.broadcast_in_dim %in0, dims = [] : ({x.type}) -> {tt(out, d)}")
        body.append(f"%r = stablehlo.add %io, %b : {tt(out, d)}")
    else:
        body.append(f"%r = stablehlo.add %io, %in0 : {tt(out, d)}")
    return (f"iota_add_{dt}_{kind}", module(f"iota plus a {kind} input", [x], body, [("%r", r)]))


def shape_ops(dt: str, kind: str):
    d = DT[dt]
    x = make_input(kind if kind not in ("one", "scalar") else "splat", d, (4,))
    b = np.broadcast_to(x.array, (3, 4)).astype(d)
    rs = b.reshape(2, 6)
    tr = b.T.copy()
    body = [f"%b = stablehlo.broadcast_in_dim %in0, dims = [1] : ({x.type}) -> {ttype(b)}",
            f"%rs = stablehlo.reshape %b : ({ttype(b)}) -> {ttype(rs)}",
            f"%tr = stablehlo.transpose %b, dims = [1, 0] : ({ttype(b)}) -> {ttype(tr)}"]
    return (f"broadcast_reshape_transpose_{dt}_{kind}", module(
        f"broadcast_in_dim, reshape and transpose of a {kind} input", [x], body,
        [("%rs", rs), ("%tr", tr)]))


def dynamic_shape(op: str, dt: str, kind: str, shape_in: str):
    """An op with a shape operand, given by @inputs or @main: that operand must stay a
    constant (a parameter there makes the result's shape dynamic); the data is an input."""
    d = DT[dt]
    data = make_input(kind if kind not in ("one", "scalar") else "splat", d, (4,) if op != "dynamic_reshape" else (12,))
    inputs = [data]
    body = []

    def shape_operand(values, name):
        v = Value(np.asarray(values, np.int64))
        if shape_in == "inputs":
            inputs.append(v)
            return f"%in{len(inputs) - 1}", v.type
        body.append(f"%{name} = stablehlo.constant {v.text()}")
        return f"%{name}", v.type

    if op == "dynamic_broadcast_in_dim":
        s, st = shape_operand([3, 4], "shape")
        r = np.broadcast_to(data.array, (3, 4)).astype(d)
        body.append(f"%r = stablehlo.dynamic_broadcast_in_dim %in0, {s}, dims = [1] : ({data.type}, {st}) -> {ttype(r)}")
    elif op == "dynamic_reshape":
        s, st = shape_operand([3, 4], "shape")
        r = data.array.reshape(3, 4)
        body.append(f"%r = stablehlo.dynamic_reshape %in0, {s} : ({data.type}, {st}) -> {ttype(r)}")
    elif op == "dynamic_iota":
        s, st = shape_operand([4], "shape")
        io = np.arange(4).astype(d)
        r = (io + data.array).astype(d)
        body.append(f"%io = stablehlo.dynamic_iota {s}, dim = 0 : ({st}) -> {ttype(io)}")
        body.append(f"%r = stablehlo.add %io, %in0 : {ttype(r)}")
    elif op == "dynamic_pad":
        pv = Value(np.asarray(sample(d, ())))
        inputs.append(pv)
        lo, lt = shape_operand([1], "lo")
        hi, ht = shape_operand([2], "hi")
        it, itt = shape_operand([0], "interior")
        r = np.concatenate([[pv.array], data.array, [pv.array, pv.array]]).astype(d)
        body.append(f"%r = stablehlo.dynamic_pad %in0, %in1, {lo}, {hi}, {it} : "
                    f"({data.type}, {pv.type}, {lt}, {ht}, {itt}) -> {ttype(r)}")
    elif op == "real_dynamic_slice":
        a, at = shape_operand([1], "start")
        b, bt = shape_operand([4], "limit")
        c, ct = shape_operand([1], "strides")
        r = data.array[1:4]
        body.append(f"%r = stablehlo.real_dynamic_slice %in0, {a}, {b}, {c} : "
                    f"({data.type}, {at}, {bt}, {ct}) -> {ttype(r)}")
    return (f"{op}_{dt}_{kind}_shape_{shape_in}", module(
        f"{op}: data from @inputs ({kind}), the shape operand from {'@inputs' if shape_in == 'inputs' else '@main'}",
        inputs, body, [("%r", r)]))


def clamp_convert(dt: str, kind: str):
    d = DT[dt]
    x = make_input(kind, d)
    lo = Value(np.asarray(sample(d, ()) - d(1) if d != np.bool_ else False, d))
    hi = Value(np.asarray(lo.array + d(3), d))
    c = np.clip(x.array, lo.array, hi.array).astype(d)
    to = np.int32 if np.dtype(d).kind == "f" else np.float32
    cv = c.astype(to)
    body = [f"%c = stablehlo.clamp %in1, %in0, %in2 : ({lo.type}, {x.type}, {hi.type}) -> {x.type}",
            f"%cv = stablehlo.convert %c : ({x.type}) -> {ttype(cv)}"]
    return (f"clamp_convert_{dt}_{kind}", module(f"clamp by scalar bounds, then convert ({kind})", [x, lo, hi],
                                                 body, [("%c", c), ("%cv", cv)]))


def pad(dt: str, kind: str):
    d = DT[dt]
    x = make_input(kind if kind not in ("one", "scalar") else "splat", d, (3,))
    pv = Value(np.asarray(sample(d, ())))
    r = np.asarray([pv.array, x.array[0], pv.array, x.array[1], pv.array, x.array[2], pv.array, pv.array], d)
    body = [f"%r = stablehlo.pad %in0, %in1, low = [1], high = [2], interior = [1] : ({x.type}, {pv.type}) -> {ttype(r)}"]
    return (f"pad_{dt}_{kind}", module(f"pad with a padding value from @inputs ({kind})", [x, pv], body,
                                       [("%r", r)]))


def corpus():
    """(name, text) for every file, in a fixed order."""
    out = []
    for op, dts in (("add", ("f32", "f16", "i32", "i8", "ui8", "c64", "f64", "i1")),
                    ("multiply", ("f32", "i32", "c64", "ui32")), ("maximum", ("f32", "i32", "i1")),
                    ("subtract", ("f32", "i64")), ("and", ("i1", "i32")), ("xor", ("i1", "ui8"))):
        for dt, kind in itertools.product(dts, KINDS):
            out.append(binary(op, dt, kind))
    for op, dts in (("abs", ("f32", "i32")), ("negate", ("f32", "i8", "c64")), ("exponential", ("f32", "f16")),
                    ("sqrt", ("f32",)), ("not", ("i1", "i32"))):
        for dt, kind in itertools.product(dts, KINDS):
            out.append(unary(op, dt, kind))
    for direction, dts in (("EQ", ("f32", "i32", "i1")), ("LT", ("f32", "ui8")), ("GE", ("i32", "f16")),
                           ("NE", ("f32",))):
        for dt, kind in itertools.product(dts, KINDS):
            out.append(compare(direction, dt, kind))
    for dt, kind in itertools.product(("f32", "i32", "i1", "c64"), KINDS):
        out.append(select(dt, kind))
    for dt, kind in itertools.product(("f32", "i32", "i1"), ("splat", "uniform", "varied")):
        out.append(slice_(dt, kind))
        out.append(dynamic_slice(dt, kind))
        out.append(dynamic_update_slice(dt, kind))
        out.append(gather(dt, kind))
    for dt, kind in itertools.product(("f32", "i32"), ("one", "scalar")):
        out.append(gather(dt, kind))
    for dt, kind, combine, where in itertools.product(("f32", "i32", "i1", "f16"), ("splat", "one", "uniform", "varied"),
                                                      ("add", "replace"), ("main", "inputs")):
        out.append(scatter(dt, kind, combine, where))
    for dt, kind in itertools.product(("f32", "i32", "ui8", "i1", "f16"), KINDS):
        out.append(argmax(dt, kind))
    for dt, kind in itertools.product(("f32", "i32", "i1", "c64"), ("splat", "one", "uniform", "varied")):
        out.append(reduce_sum(dt, kind))
    for dt, kind in itertools.product(("f32", "i32"), ("splat", "scalar", "uniform", "varied")):
        out.append(iota_plus(dt, kind))
    for dt, kind in itertools.product(("f32", "i1", "i32"), ("splat", "uniform", "varied")):
        out.append(shape_ops(dt, kind))
    for op in ("dynamic_broadcast_in_dim", "dynamic_reshape", "dynamic_iota", "dynamic_pad", "real_dynamic_slice"):
        for dt, kind, where in itertools.product(("f32", "i32"), ("splat", "varied"), ("inputs", "main")):
            out.append(dynamic_shape(op, dt, kind, where))
    for dt, kind in itertools.product(("f32", "i32"), KINDS):
        out.append(clamp_convert(dt, kind))
    for dt, kind in itertools.product(("f32", "i8"), ("splat", "uniform", "varied")):
        out.append(pad(dt, kind))
    return out


# One file of each family for tests/data/checks/corpus.
SAMPLE = ("add_f32_splat", "add_i1_one", "compare_EQ_f32_scalar", "select_i1_splat", "slice_f32_uniform",
          "dynamic_slice_i32_splat", "scatter_add_f32_one_idx_main", "scatter_replace_i32_splat_idx_inputs",
          "argmax_f32_one", "dynamic_reshape_f32_splat_shape_inputs", "dynamic_broadcast_in_dim_i32_varied_shape_main",
          "add_c64_uniform", "real_dynamic_slice_f32_splat_shape_inputs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--sample", type=Path, help="also write one file per family here")
    a = ap.parse_args()
    files = corpus()
    names = [n for n, _ in files]
    assert len(set(names)) == len(names), "duplicate file names"
    a.out.mkdir(parents=True, exist_ok=True)
    for name, text in files:
        (a.out / f"{name}.mlir").write_text(text)
    if a.sample:
        a.sample.mkdir(parents=True, exist_ok=True)
        by_name = dict(files)
        for name in SAMPLE:
            (a.sample / f"{name}.mlir").write_text(by_name[name])
    print(f"{len(files)} files in {a.out}")


if __name__ == "__main__":
    main()
