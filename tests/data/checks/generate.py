"""Writes the self-checking StableHLO files of this directory.

Every expected value is computed here with numpy (transcendental functions in
float64, then rounded to the element type), never by XLA. Run from anywhere:

    .venv/bin/python tests/data/checks/generate.py

The files use the three spellings a self-checking module can have: ops of the
``check`` dialect (``stablehlo/tests/interpret`` style), custom calls with
``@inputs``/``@expected`` functions (``stablehlo/testdata`` style), and
custom calls on values computed in place.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np

HERE = Path(__file__).parent

_TYPES = {
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(ml_dtypes.float8_e4m3fn): "f8E4M3FN",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64", np.dtype(np.uint8): "ui8", np.dtype(np.uint16): "ui16",
    np.dtype(np.uint32): "ui32", np.dtype(np.uint64): "ui64", np.dtype(np.bool_): "i1",
    np.dtype(np.complex64): "complex<f32>", np.dtype(np.complex128): "complex<f64>",
}


def ttype(a: np.ndarray) -> str:
    a = np.asarray(a)
    dims = "".join(f"{d}x" for d in a.shape)
    return f"tensor<{dims}{_TYPES[a.dtype]}>"


def _scalar(x, dtype) -> str:
    if dtype == np.bool_:
        return "true" if x else "false"
    if dtype.kind in "iu":
        return str(int(x))
    if dtype.kind == "c":
        return f"({_scalar(x.real, np.dtype(np.float64))}, {_scalar(x.imag, np.dtype(np.float64))})"
    f = float(x)
    if np.isnan(f):
        return "0x7FC00000" if dtype == np.float32 else "0x7FF8000000000000"
    if np.isinf(f):
        return ("0x7F800000" if f > 0 else "0xFF800000") if dtype == np.float32 else \
               ("0x7FF0000000000000" if f > 0 else "0xFFF0000000000000")
    # The shortest decimal that reads back as this value of its own type.
    s = repr(x.item()) if dtype == np.float64 else str(x)
    if "e" in s and "." not in s.split("e")[0]:
        m, e = s.split("e")
        s = f"{m}.0e{e}"
    if "." not in s and "e" not in s and "inf" not in s:
        s += ".0"
    return s


def dense(a) -> str:
    """``dense<...> : tensor<...>`` for a numpy array."""
    a = np.asarray(a)

    def rec(x):
        if x.ndim == 0:
            return _scalar(x[()], a.dtype)
        return "[" + ", ".join(rec(x[i]) for i in range(x.shape[0])) + "]"

    return f"dense<{rec(a)}> : {ttype(a)}"


def f32(x):
    return np.asarray(x, dtype=np.float32)


def round32(x64):
    return np.asarray(x64, dtype=np.float64).astype(np.float32)


# ---------------------------------------------------------------------------

def elementwise_f32() -> str:
    x = f32([0.5, 1.25, 2.0, 3.75, 7.5, 0.1])
    y = f32([1.5, -0.75, 3.0, 0.5, 2.0, -2.5])
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    T = ttype(x)
    return f"""// Element-wise f32 arithmetic, checked with ops of the check dialect
// (stablehlo/tests/interpret style). Expected values: numpy, transcendental
// functions in float64 rounded to f32.
func.func @main() {{
  %x = stablehlo.constant {dense(x)}
  %y = stablehlo.constant {dense(y)}
  %add = stablehlo.add %x, %y : {T}
  check.expect_eq_const %add, {dense(x + y)}
  %sub = stablehlo.subtract %x, %y : {T}
  check.expect_eq_const %sub, {dense(x - y)}
  %mul = stablehlo.multiply %x, %y : {T}
  check.expect_eq_const %mul, {dense(x * y)}
  %div = stablehlo.divide %x, %y : {T}
  check.expect_eq_const %div, {dense(x / y)}
  %sqrt = stablehlo.sqrt %x : {T}
  check.expect_eq_const %sqrt, {dense(np.sqrt(x))}
  %rsqrt = stablehlo.rsqrt %x : {T}
  %rsqrt_expected = stablehlo.constant {dense(round32(1 / np.sqrt(xd)))}
  check.expect_close %rsqrt, %rsqrt_expected, max_ulp_difference = 2 : {T}, {T}
  %exp = stablehlo.exponential %x : {T}
  %exp_expected = stablehlo.constant {dense(round32(np.exp(xd)))}
  check.expect_close %exp, %exp_expected, max_ulp_difference = 3 : {T}, {T}
  %log = stablehlo.log %x : {T}
  %log_expected = stablehlo.constant {dense(round32(np.log(xd)))}
  check.expect_close %log, %log_expected, max_ulp_difference = 3, min_ulp_difference = 0 : {T}, {T}
  %tanh = stablehlo.tanh %y : {T}
  check.expect_almost_eq_const %tanh, {dense(round32(np.tanh(yd)))}, tolerance = 1.0e-06
  %pow = stablehlo.power %x, %y : {T}
  %pow_expected = stablehlo.constant {dense(round32(np.power(xd, yd)))}
  check.expect_almost_eq %pow, %pow_expected, tolerance = 1.0e-05 : {T}
  "check.expect_close"(%exp, %exp_expected) <{{max_ulp_difference = 3 : ui64}}> : ({T}, {T}) -> ()
  func.return
}}
"""


def testdata_softplus() -> str:
    x = f32([[-3.5, -1.0, -0.25, 0.0], [0.125, 0.5, 1.0, 2.5], [4.0, 6.0, -6.0, 10.0]])
    xd = x.astype(np.float64)
    soft = round32(np.log1p(np.exp(xd)))
    sig = round32(1 / (1 + np.exp(-xd)))
    T = ttype(x)
    k = np.array([[3, -7, 11, 0], [2, 5, -1, 8], [100, -100, 1, 4]], np.int32)
    kT = ttype(k)
    return f"""// The stablehlo/testdata form: @inputs and @expected return constants,
// @main computes and checks with custom calls (softplus, logistic, integers).
module @jit_softplus attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main() -> (tensor<3x4xf32> {{jax.result_info = ""}}) {{
    %0:2 = call @inputs() : () -> ({T}, {kT})
    %1:3 = call @expected() : () -> ({T}, {T}, {kT})
    %2 = stablehlo.exponential %0#0 : {T}
    %3 = stablehlo.log_plus_one %2 : {T}
    stablehlo.custom_call @check.expect_close(%3, %1#0) {{has_side_effect = true}} : ({T}, {T}) -> ()
    %4 = stablehlo.logistic %0#0 : {T}
    stablehlo.custom_call @check.expect_close(%4, %1#1) {{has_side_effect = true}} : ({T}, {T}) -> ()
    %5 = stablehlo.multiply %0#1, %0#1 : {kT}
    %6 = stablehlo.subtract %5, %0#1 : {kT}
    %7 = stablehlo.custom_call @check.eq(%6, %1#2) : ({kT}, {kT}) -> tensor<i1>
    return %3 : {T}
  }}
  func.func private @inputs() -> ({T} {{mhlo.layout_mode = "default"}}, {kT}) {{
    %cst = stablehlo.constant {dense(x)}
    %c = stablehlo.constant {dense(k)}
    return %cst, %c : {T}, {kT}
  }}
  func.func private @expected() -> ({T}, {T}, {kT}) {{
    %cst = stablehlo.constant {dense(soft)}
    %cst_0 = stablehlo.constant {dense(sig)}
    %c = stablehlo.constant {dense(k * k - k)}
    return %cst, %cst_0, %c : {T}, {T}, {kT}
  }}
}}
"""


def compare_select() -> str:
    a = f32([-2.5, -0.5, 0.0, 0.5, 1.5, 2.5, -3.7, 3.2])
    b = f32([-2.5, 0.5, -1.0, 0.25, 1.5, 3.0, -3.0, 3.0])
    i = np.array([-5, 3, 0, 7, -1, 2, 9, -8], np.int32)
    j = np.array([-5, 4, -2, 7, 1, -2, 9, 8], np.int32)
    T, I = ttype(a), ttype(i)
    B = ttype(np.zeros(8, bool))
    gt, lt, eq, ne = a > b, a < b, a == b, a != b
    ge_i = i >= j
    sel = np.where(gt, a, b)
    rne = np.round(a).astype(np.float32)
    afz = (np.sign(a) * np.floor(np.abs(a) + 0.5)).astype(np.float32)
    return f"""// compare (FLOAT, SIGNED), select, min/max, abs, negate, sign, clamp,
// rounding, and logic on i1.
func.func @main() {{
  %a = stablehlo.constant {dense(a)}
  %b = stablehlo.constant {dense(b)}
  %i = stablehlo.constant {dense(i)}
  %j = stablehlo.constant {dense(j)}
  %gt = stablehlo.compare GT, %a, %b, FLOAT : ({T}, {T}) -> {B}
  check.expect_eq_const %gt, {dense(gt)}
  %lt = stablehlo.compare LT, %a, %b, FLOAT : ({T}, {T}) -> {B}
  check.expect_eq_const %lt, {dense(lt)}
  %eq = stablehlo.compare EQ, %a, %b, FLOAT : ({T}, {T}) -> {B}
  check.expect_eq_const %eq, {dense(eq)}
  %ne = stablehlo.compare NE, %a, %b, FLOAT : ({T}, {T}) -> {B}
  check.expect_eq_const %ne, {dense(ne)}
  %ge = stablehlo.compare GE, %i, %j, SIGNED : ({I}, {I}) -> {B}
  check.expect_eq_const %ge, {dense(ge_i)}
  %sel = stablehlo.select %gt, %a, %b : {B}, {T}
  check.expect_eq_const %sel, {dense(sel)}
  %max = stablehlo.maximum %a, %b : {T}
  check.expect_eq_const %max, {dense(np.maximum(a, b))}
  %min = stablehlo.minimum %i, %j : {I}
  check.expect_eq_const %min, {dense(np.minimum(i, j))}
  %abs = stablehlo.abs %i : {I}
  check.expect_eq_const %abs, {dense(np.abs(i))}
  %neg = stablehlo.negate %a : {T}
  check.expect_eq_const %neg, {dense(-a)}
  %sign = stablehlo.sign %i : {I}
  check.expect_eq_const %sign, {dense(np.sign(i).astype(np.int32))}
  %lo = stablehlo.constant dense<-1.0> : tensor<f32>
  %hi = stablehlo.constant dense<2.0> : tensor<f32>
  %clamp = stablehlo.clamp %lo, %a, %hi : (tensor<f32>, {T}, tensor<f32>) -> {T}
  check.expect_eq_const %clamp, {dense(np.clip(a, -1, 2))}
  %floor = stablehlo.floor %a : {T}
  check.expect_eq_const %floor, {dense(np.floor(a))}
  %ceil = stablehlo.ceil %a : {T}
  check.expect_eq_const %ceil, {dense(np.ceil(a))}
  %rne = stablehlo.round_nearest_even %a : {T}
  check.expect_eq_const %rne, {dense(rne)}
  %afz = stablehlo.round_nearest_afz %a : {T}
  check.expect_eq_const %afz, {dense(afz)}
  %and = stablehlo.and %gt, %ne : {B}
  %or = stablehlo.or %lt, %eq : {B}
  %not = stablehlo.not %or : {B}
  check.expect_eq_const %and, {dense(gt & ne)}
  check.expect_eq_const %not, {dense(~(lt | eq))}
  func.return
}}
"""


def convert() -> str:
    x = f32([-3.75, -1.5, -0.5, 0.0, 0.75, 1.5, 100.25, 126.9])
    u = np.array([0, 1, 127, 128, 200, 255, 42, 7], np.uint8)
    i = np.array([-100000, -3, 0, 5, 1 << 20, 123456789, 77, -1], np.int32)
    T, U, I = ttype(x), ttype(u), ttype(i)
    to_i32 = np.trunc(x).astype(np.int32)
    to_i8 = np.trunc(x).astype(np.int8)
    to_f16 = x.astype(np.float16)
    to_bf16 = x.astype(ml_dtypes.bfloat16)
    u_f32 = u.astype(np.float32)
    i_f32 = i.astype(np.float32)
    b = x > 0
    b_i32 = b.astype(np.int32)
    f8 = f32([0.5, -1.0, 3.0, 448.0, -0.0625, 12.0, 2.5, -7.0])
    to_f8 = f8.astype(ml_dtypes.float8_e4m3fn)
    B = ttype(b)
    return f"""// convert between element types: float->int truncates, int->float rounds,
// narrowing floats round to nearest even, i1 -> i32, f32 -> f8E4M3FN.
func.func @main() {{
  %x = stablehlo.constant {dense(x)}
  %u = stablehlo.constant {dense(u)}
  %i = stablehlo.constant {dense(i)}
  %f8in = stablehlo.constant {dense(f8)}
  %0 = stablehlo.convert %x : ({T}) -> {ttype(to_i32)}
  check.expect_eq_const %0, {dense(to_i32)}
  %1 = stablehlo.convert %x : ({T}) -> {ttype(to_i8)}
  check.expect_eq_const %1, {dense(to_i8)}
  %2 = stablehlo.convert %x : ({T}) -> {ttype(to_f16)}
  check.expect_eq_const %2, {dense(to_f16)}
  %3 = stablehlo.convert %x : ({T}) -> {ttype(to_bf16)}
  check.expect_eq_const %3, {dense(to_bf16)}
  %4 = stablehlo.convert %u : ({U}) -> {ttype(u_f32)}
  check.expect_eq_const %4, {dense(u_f32)}
  %5 = stablehlo.convert %i : ({I}) -> {ttype(i_f32)}
  check.expect_eq_const %5, {dense(i_f32)}
  %zero = stablehlo.constant dense<0.0> : {T}
  %6 = stablehlo.compare GT, %x, %zero, FLOAT : ({T}, {T}) -> {B}
  %7 = stablehlo.convert %6 : ({B}) -> {ttype(b_i32)}
  check.expect_eq_const %7, {dense(b_i32)}
  %8 = stablehlo.convert %f8in : ({T}) -> {ttype(to_f8)}
  check.expect_eq_const %8, {dense(to_f8)}
  %9 = stablehlo.convert %8 : ({ttype(to_f8)}) -> {T}
  check.expect_eq_const %9, {dense(to_f8.astype(np.float32))}
  func.return
}}
"""


def shapes() -> str:
    a = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    v = np.array([10, 20, 30], np.int32)
    A, V = ttype(a), ttype(v)
    bcast = np.broadcast_to(v[:, None], (3, 4)) + a
    resh = a.reshape(2, 6)
    tr = a.T
    sl = a[0:3:2, 1:4:2]
    cat = np.concatenate([a, a * 10], axis=0)
    # pad: low [1, 0], high [0, 2], interior [1, 0]; then a negative low pad.
    p = np.full((1 + 3 + 2, 4 + 2), -1, np.int32)
    p[1::2, 0:4] = a
    neg = a[:, 1:]
    rev = a[::-1, ::-1]
    return f"""// Data movement: broadcast_in_dim, reshape, transpose, slice, concatenate,
// pad (edge, interior and negative), reverse, on i32.
func.func @main() {{
  %a = stablehlo.constant {dense(a)}
  %v = stablehlo.constant {dense(v)}
  %b = stablehlo.broadcast_in_dim %v, dims = [0] : ({V}) -> {A}
  %sum = stablehlo.add %b, %a : {A}
  check.expect_eq_const %sum, {dense(bcast)}
  %r = stablehlo.reshape %a : ({A}) -> {ttype(resh)}
  check.expect_eq_const %r, {dense(resh)}
  %t = stablehlo.transpose %a, dims = [1, 0] : ({A}) -> {ttype(tr)}
  check.expect_eq_const %t, {dense(tr)}
  %s = stablehlo.slice %a [0:3:2, 1:4:2] : ({A}) -> {ttype(sl)}
  check.expect_eq_const %s, {dense(sl)}
  %ten = stablehlo.constant dense<10> : {A}
  %a10 = stablehlo.multiply %a, %ten : {A}
  %c = stablehlo.concatenate %a, %a10, dim = 0 : ({A}, {A}) -> {ttype(cat)}
  check.expect_eq_const %c, {dense(cat)}
  %pv = stablehlo.constant dense<-1> : tensor<i32>
  %p = stablehlo.pad %a, %pv, low = [1, 0], high = [0, 2], interior = [1, 0] : ({A}, tensor<i32>) -> {ttype(p)}
  check.expect_eq_const %p, {dense(p)}
  %n = stablehlo.pad %a, %pv, low = [0, -1], high = [0, 0], interior = [0, 0] : ({A}, tensor<i32>) -> {ttype(neg)}
  check.expect_eq_const %n, {dense(neg)}
  %rev = stablehlo.reverse %a, dims = [0, 1] : {A}
  check.expect_eq_const %rev, {dense(rev)}
  func.return
}}
"""


def dot_conv() -> str:
    rng = np.random.default_rng(7)
    lhs = rng.integers(-4, 5, (2, 3, 4)).astype(np.float32)
    rhs = rng.integers(-4, 5, (2, 4, 5)).astype(np.float32)
    bmm = np.einsum("bij,bjk->bik", lhs, rhs).astype(np.float32)
    m = rng.integers(-3, 4, (3, 4)).astype(np.float32)
    vec = rng.integers(-3, 4, (4,)).astype(np.float32)
    mv = (m @ vec).astype(np.float32)
    # conv: NHWC input 1x5x5x2, HWIO kernel 3x3x2x3, stride 1, padding 1.
    img = rng.integers(-2, 3, (1, 5, 5, 2)).astype(np.float32)
    ker = rng.integers(-2, 3, (3, 3, 2, 3)).astype(np.float32)
    padded = np.pad(img, ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((1, 5, 5, 3), np.float32)
    for y in range(5):
        for x in range(5):
            conv[0, y, x] = np.einsum("hwi,hwio->o", padded[0, y:y + 3, x:x + 3], ker)
    # strided 1-D conv, NCW / OIW, stride 2, no padding.
    sig = rng.integers(-3, 4, (1, 1, 9)).astype(np.float32)
    k1 = np.array([[[1.0, -2.0, 1.0]]], np.float32)
    c1 = np.array([[[np.dot(sig[0, 0, s:s + 3], k1[0, 0]) for s in range(0, 7, 2)]]], np.float32)
    return f"""// dot_general (batched matmul, matrix-vector) and convolution (2-D NHWC
// with padding, strided 1-D NCW), on small integer-valued f32 (exact sums).
func.func @main() {{
  %lhs = stablehlo.constant {dense(lhs)}
  %rhs = stablehlo.constant {dense(rhs)}
  %bmm = stablehlo.dot_general %lhs, %rhs, batching_dims = [0] x [0], contracting_dims = [2] x [1] : ({ttype(lhs)}, {ttype(rhs)}) -> {ttype(bmm)}
  check.expect_eq_const %bmm, {dense(bmm)}
  %m = stablehlo.constant {dense(m)}
  %vec = stablehlo.constant {dense(vec)}
  %mv = stablehlo.dot_general %m, %vec, contracting_dims = [1] x [0] : ({ttype(m)}, {ttype(vec)}) -> {ttype(mv)}
  check.expect_eq_const %mv, {dense(mv)}
  %img = stablehlo.constant {dense(img)}
  %ker = stablehlo.constant {dense(ker)}
  %conv = stablehlo.convolution(%img, %ker) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{stride = [1, 1], pad = [[1, 1], [1, 1]]}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : ({ttype(img)}, {ttype(ker)}) -> {ttype(conv)}
  check.expect_eq_const %conv, {dense(conv)}
  %sig = stablehlo.constant {dense(sig)}
  %k1 = stablehlo.constant {dense(k1)}
  %c1 = stablehlo.convolution(%sig, %k1) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {{stride = [2]}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : ({ttype(sig)}, {ttype(k1)}) -> {ttype(c1)}
  check.expect_eq_const %c1, {dense(c1)}
  func.return
}}
"""


def reductions() -> str:
    x = f32([[1.5, -2.0, 3.25, 0.5], [4.0, 0.25, -1.0, 2.0], [-3.5, 6.0, 1.0, -0.75]])
    X = ttype(x)
    row_sum = x.sum(axis=1).astype(np.float32)
    col_max = x.max(axis=0)
    img = np.arange(16, dtype=np.float32).reshape(4, 4) * np.float32(0.5) - 3
    img[1, 2] = 9.0
    pool = img.reshape(2, 2, 2, 2).max(axis=(1, 3))
    padded = np.pad(img, 1)
    box = np.array([[padded[r:r + 3, c:c + 3].sum() for c in range(4)] for r in range(4)], np.float32)
    v = np.array([3, 9, -2, 9, 5, 1], np.int32)
    argmax = np.int32(np.argmax(v))
    return f"""// reduce (sum over a dim, max over a dim, variadic argmax) and
// reduce_window (2x2 max pool, 3x3 padded box sum).
func.func @main() {{
  %x = stablehlo.constant {dense(x)}
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : ({X}, tensor<f32>) -> {ttype(row_sum)}
  check.expect_eq_const %sum, {dense(row_sum)}
  %max = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [0] : ({X}, tensor<f32>) -> {ttype(col_max)}
  check.expect_eq_const %max, {dense(col_max)}
  %img = stablehlo.constant {dense(img)}
  %pool = "stablehlo.reduce_window"(%img, %ninf) <{{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }}) : ({ttype(img)}, tensor<f32>) -> {ttype(pool)}
  check.expect_eq_const %pool, {dense(pool)}
  %box = "stablehlo.reduce_window"(%img, %zero) <{{window_dimensions = array<i64: 3, 3>, padding = dense<1> : tensor<2x2xi64>}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }}) : ({ttype(img)}, tensor<f32>) -> {ttype(box)}
  check.expect_eq_const %box, {dense(box)}
  %v = stablehlo.constant {dense(v)}
  %iota = stablehlo.iota dim = 0 : tensor<6xi32>
  %imin = stablehlo.constant dense<-2147483648> : tensor<i32>
  %izero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%v init: %imin), (%iota init: %izero) across dimensions = [0] : (tensor<6xi32>, tensor<6xi32>, tensor<i32>, tensor<i32>) -> (tensor<i32>, tensor<i32>)
   reducer(%a: tensor<i32>, %c: tensor<i32>) (%b: tensor<i32>, %d: tensor<i32>) {{
    %gt = stablehlo.compare GT, %a, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %a, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %b, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %take = stablehlo.or %gt, %tie : tensor<i1>
    %val = stablehlo.select %take, %a, %c : tensor<i1>, tensor<i32>
    %idx = stablehlo.select %take, %b, %d : tensor<i1>, tensor<i32>
    stablehlo.return %val, %idx : tensor<i32>, tensor<i32>
  }}
  check.expect_eq_const %r#1, {dense(argmax)}
  check.expect_eq_const %r#0, {dense(np.int32(v.max()))}
  func.return
}}
"""


def gather_scatter() -> str:
    table = np.arange(20, dtype=np.float32).reshape(5, 4) * np.float32(1.5)
    idx = np.array([[3], [0], [4], [3]], np.int32)
    gathered = table[idx[:, 0]]
    upd = f32([[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [0.5, 0.5, 0.5, 0.5]])
    scattered = table.copy()
    for k in range(4):
        scattered[idx[k, 0]] += upd[k]
    start = np.array([1, 2], np.int32)  # column start 2 is clamped to 4 - 3 = 1
    ds = table[1:4, 1:4]
    patch = f32([[-1, -2], [-3, -4]])
    dus = table.copy()
    dus[3:5, 0:2] = patch
    T = ttype(table)
    return f"""// gather (rows by index), scatter (add, with a repeated index),
// dynamic_slice (start index clamped) and dynamic_update_slice.
func.func @main() {{
  %table = stablehlo.constant {dense(table)}
  %idx = stablehlo.constant {dense(idx)}
  %g = "stablehlo.gather"(%table, %idx) <{{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}}> : ({T}, {ttype(idx)}) -> {ttype(gathered)}
  check.expect_eq_const %g, {dense(gathered)}
  %upd = stablehlo.constant {dense(upd)}
  %s = "stablehlo.scatter"(%table, %idx, %upd) <{{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %sum = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %sum : tensor<f32>
  }}) : ({T}, {ttype(idx)}, {ttype(upd)}) -> {T}
  check.expect_eq_const %s, {dense(scattered)}
  %starts = stablehlo.constant {dense(start)}
  %i0 = stablehlo.slice %starts [0:1] : (tensor<2xi32>) -> tensor<1xi32>
  %i1 = stablehlo.slice %starts [1:2] : (tensor<2xi32>) -> tensor<1xi32>
  %r0 = stablehlo.reshape %i0 : (tensor<1xi32>) -> tensor<i32>
  %r1 = stablehlo.reshape %i1 : (tensor<1xi32>) -> tensor<i32>
  %ds = stablehlo.dynamic_slice %table, %r0, %r1, sizes = [3, 3] : ({T}, tensor<i32>, tensor<i32>) -> {ttype(ds)}
  check.expect_eq_const %ds, {dense(ds)}
  %patch = stablehlo.constant {dense(patch)}
  %big = stablehlo.constant dense<7> : tensor<i32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %dus = stablehlo.dynamic_update_slice %table, %patch, %big, %zero : ({T}, {ttype(patch)}, tensor<i32>, tensor<i32>) -> {T}
  check.expect_eq_const %dus, {dense(dus)}
  func.return
}}
"""


def sort() -> str:
    keys = f32([3.5, -1.0, 2.0, 3.5, 0.0, -7.25, 2.0, 10.0])
    vals = np.arange(8, dtype=np.int32)
    order = np.argsort(keys, kind="stable")
    mat = np.array([[5, 1, 4], [2, 8, 0], [9, 9, 3]], np.int32)
    desc = -np.sort(-mat, axis=1)
    K, V = ttype(keys), ttype(vals)
    return f"""// sort: stable two-operand sort by f32 key, and a descending i32 sort
// along the last dimension.
func.func @main() {{
  %k = stablehlo.constant {dense(keys)}
  %v = stablehlo.constant {dense(vals)}
  %s:2 = "stablehlo.sort"(%k, %v) <{{dimension = 0 : i64, is_stable = true}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }}) : ({K}, {V}) -> ({K}, {V})
  check.expect_eq_const %s#0, {dense(keys[order])}
  check.expect_eq_const %s#1, {dense(vals[order])}
  %m = stablehlo.constant {dense(mat)}
  %d = "stablehlo.sort"(%m) <{{dimension = 1 : i64}}> ({{
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %gt = stablehlo.compare GT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }}) : ({ttype(mat)}) -> {ttype(mat)}
  check.expect_eq_const %d, {dense(desc)}
  func.return
}}
"""


def control_flow() -> str:
    x = f32([1.0, -0.5, 2.25, 0.125])
    acc = np.zeros(4, np.float32)
    for _ in range(5):
        acc = (acc * np.float32(2) + x).astype(np.float32)
    sel = np.array([2, 0], np.int32)
    iota2 = (np.arange(3)[:, None] * 10 + np.arange(4)[None, :]).astype(np.int32)
    X = ttype(x)
    return f"""// while (5 iterations of acc = 2 * acc + x, the trip count a runtime
// value so that XLA keeps the loop), if on a runtime predicate,
// case with three branches, and iota along two dimensions.
func.func @main() {{
  %x = stablehlo.constant {dense(x)}
  %zero = stablehlo.constant dense<0.0> : {X}
  %two = stablehlo.constant dense<2.0> : {X}
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %limits = stablehlo.constant dense<[5, 1]> : tensor<2xi32>
  %l0 = stablehlo.slice %limits [0:1] : (tensor<2xi32>) -> tensor<1xi32>
  %l1 = stablehlo.slice %limits [1:2] : (tensor<2xi32>) -> tensor<1xi32>
  %n = stablehlo.reshape %l0 : (tensor<1xi32>) -> tensor<i32>
  %one = stablehlo.reshape %l1 : (tensor<1xi32>) -> tensor<i32>
  %w:2 = stablehlo.while(%i = %i0, %acc = %zero) : tensor<i32>, {X}
    cond {{
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }} do {{
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %m = stablehlo.multiply %acc, %two : {X}
      %a = stablehlo.add %m, %x : {X}
      stablehlo.return %i1, %a : tensor<i32>, {X}
    }}
  check.expect_eq_const %w#1, {dense(acc)}
  check.expect_eq_const %w#0, dense<5> : tensor<i32>
  %sel = stablehlo.constant {dense(sel)}
  %s0 = stablehlo.slice %sel [0:1] : (tensor<2xi32>) -> tensor<1xi32>
  %s1 = stablehlo.slice %sel [1:2] : (tensor<2xi32>) -> tensor<1xi32>
  %b0 = stablehlo.reshape %s0 : (tensor<1xi32>) -> tensor<i32>
  %b1 = stablehlo.reshape %s1 : (tensor<1xi32>) -> tensor<i32>
  %p = stablehlo.compare GT, %b0, %b1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %if = "stablehlo.if"(%p) ({{
    %neg = stablehlo.negate %x : {X}
    stablehlo.return %neg : {X}
  }}, {{
    stablehlo.return %x : {X}
  }}) : (tensor<i1>) -> {X}
  check.expect_eq_const %if, {dense(-x)}
  %case = "stablehlo.case"(%b0) ({{
    stablehlo.return %zero : {X}
  }}, {{
    stablehlo.return %x : {X}
  }}, {{
    %sq = stablehlo.multiply %x, %x : {X}
    stablehlo.return %sq : {X}
  }}) : (tensor<i32>) -> {X}
  check.expect_eq_const %case, {dense(x * x)}
  %r = stablehlo.iota dim = 0 : tensor<3x4xi32>
  %c = stablehlo.iota dim = 1 : tensor<3x4xi32>
  %ten = stablehlo.constant dense<10> : tensor<3x4xi32>
  %r10 = stablehlo.multiply %r, %ten : tensor<3x4xi32>
  %grid = stablehlo.add %r10, %c : tensor<3x4xi32>
  check.expect_eq_const %grid, {dense(iota2)}
  func.return
}}
"""


def integer_ops() -> str:
    a8 = np.array([100, -100, 127, -128, 5, -7, 64, 1], np.int8)
    b8 = np.array([100, -100, 1, -1, -3, 2, 2, -1], np.int8)
    u = np.array([0xFFFF, 0x8001, 0x00F0, 12345, 7, 65000, 2, 1], np.uint16)
    s = np.array([1, 15, 4, 3, 0, 2, 16, 7], np.uint16)
    w = np.array([-17, 17, -1, 1024, -2147483648, 2147483647, 6, -6], np.int32)
    sh = np.array([1, 2, 31, 3, 4, 30, 0, 1], np.int32)
    fl = f32([1.0, -2.0, 0.0, -0.0, 0.1, 3.4028235e38, 1.0e-45, -1.5])
    add8 = (a8.astype(np.int16) + b8).astype(np.int8)
    mul8 = (a8.astype(np.int16) * b8).astype(np.int8)
    div8 = np.array([int(x / y) for x, y in zip(a8.astype(int), b8.astype(int))]).astype(np.int8)
    rem8 = np.array([int(np.fmod(x, y)) for x, y in zip(a8.astype(int), b8.astype(int))], np.int8)
    shl = (u.astype(np.uint32) << np.minimum(s, 16)).astype(np.uint16)
    shl = np.where(s >= 16, 0, shl).astype(np.uint16)
    shr = np.where(s >= 16, 0, u >> np.minimum(s, 15)).astype(np.uint16)
    sra = (w >> np.minimum(sh, 31)).astype(np.int32)
    srl = (w.view(np.uint32) >> sh.astype(np.uint32)).view(np.int32)
    pop = np.array([bin(int(x)).count("1") for x in u], np.uint16)
    clz = np.array([16 - int(x).bit_length() for x in u], np.uint16)
    bits = fl.view(np.int32)
    back = np.array([1, -1, 0x3F800000, -8388608], np.int32)
    return f"""// Integer ops: i8 add/multiply/divide/remainder (wrap-around, truncating
// division), ui16 shifts, and/or/xor, popcnt, count_leading_zeros, i32
// arithmetic/logical right shifts, bitcast_convert f32 <-> i32.
func.func @main() {{
  %a8 = stablehlo.constant {dense(a8)}
  %b8 = stablehlo.constant {dense(b8)}
  %add8 = stablehlo.add %a8, %b8 : {ttype(a8)}
  check.expect_eq_const %add8, {dense(add8)}
  %mul8 = stablehlo.multiply %a8, %b8 : {ttype(a8)}
  check.expect_eq_const %mul8, {dense(mul8)}
  %div8 = stablehlo.divide %a8, %b8 : {ttype(a8)}
  check.expect_eq_const %div8, {dense(div8)}
  %rem8 = stablehlo.remainder %a8, %b8 : {ttype(a8)}
  check.expect_eq_const %rem8, {dense(rem8)}
  %u = stablehlo.constant {dense(u)}
  %s = stablehlo.constant {dense(s)}
  %shl = stablehlo.shift_left %u, %s : {ttype(u)}
  check.expect_eq_const %shl, {dense(shl)}
  %shr = stablehlo.shift_right_logical %u, %s : {ttype(u)}
  check.expect_eq_const %shr, {dense(shr)}
  %and = stablehlo.and %u, %s : {ttype(u)}
  check.expect_eq_const %and, {dense(u & s)}
  %or = stablehlo.or %u, %s : {ttype(u)}
  check.expect_eq_const %or, {dense(u | s)}
  %xor = stablehlo.xor %u, %s : {ttype(u)}
  check.expect_eq_const %xor, {dense(u ^ s)}
  %pop = stablehlo.popcnt %u : {ttype(u)}
  check.expect_eq_const %pop, {dense(pop)}
  %clz = stablehlo.count_leading_zeros %u : {ttype(u)}
  check.expect_eq_const %clz, {dense(clz)}
  %w = stablehlo.constant {dense(w)}
  %sh = stablehlo.constant {dense(sh)}
  %sra = stablehlo.shift_right_arithmetic %w, %sh : {ttype(w)}
  check.expect_eq_const %sra, {dense(sra)}
  %srl = stablehlo.shift_right_logical %w, %sh : {ttype(w)}
  check.expect_eq_const %srl, {dense(srl)}
  %fl = stablehlo.constant {dense(fl)}
  %bits = stablehlo.bitcast_convert %fl : ({ttype(fl)}) -> {ttype(bits)}
  check.expect_eq_const %bits, {dense(bits)}
  %back = stablehlo.constant {dense(back)}
  %f = stablehlo.bitcast_convert %back : ({ttype(back)}) -> {ttype(back.view(np.float32))}
  %fbits = stablehlo.bitcast_convert %f : ({ttype(back.view(np.float32))}) -> {ttype(back)}
  check.expect_eq %fbits, %back : {ttype(back)}
  func.return
}}
"""


def wide_types() -> str:
    x = np.array([0.5, 1.0e-3, 2.0, 123.456, 1.0e10, 0.75], np.float64)
    y = np.array([3.0, -7.0, 0.1, 2.5, -1.0e-5, 4.0], np.float64)
    i = np.array([3037000499, -3037000499, 1 << 40, -(1 << 62), 9, 123456789012], np.int64)
    j = np.array([3037000499, 3037000499, 1 << 20, 2, -9, 1000], np.int64)
    u = np.array([18446744073709551615, 1 << 63, 12345678901234567890, 0], np.uint64)
    c = np.array([1.5 + 2.0j, -0.25 + 4.0j, 3.0 - 1.0j], np.complex128)
    d = np.array([0.5 - 1.0j, 2.0 + 0.0j, -1.0 + 3.0j], np.complex128)
    X, I, U, C = ttype(x), ttype(i), ttype(u), ttype(c)
    return f"""// 64-bit types in the stablehlo/testdata form: f64 (divide, exp, log,
// sqrt, atan2), i64 (products near 2^63, shifts), ui64 (wrap-around), and
// complex<f64> (multiply, divide, abs).
module @jit_wide {{
  func.func public @main() -> ({X}, {I}) {{
    %0:5 = call @inputs() : () -> ({X}, {X}, {I}, {I}, {U})
    %1:9 = call @expected() : () -> ({X}, {X}, {X}, {X}, {I}, {I}, {U}, {C}, {C})
    %div = stablehlo.divide %0#0, %0#1 : {X}
    stablehlo.custom_call @check.expect_eq(%div, %1#0) {{has_side_effect = true}} : ({X}, {X}) -> ()
    %exp = stablehlo.exponential %0#1 : {X}
    stablehlo.custom_call @check.expect_close(%exp, %1#1) {{has_side_effect = true}} : ({X}, {X}) -> ()
    %log = stablehlo.log %0#0 : {X}
    %sqrt = stablehlo.sqrt %0#0 : {X}
    %ls = stablehlo.add %log, %sqrt : {X}
    stablehlo.custom_call @check.expect_close(%ls, %1#2) {{has_side_effect = true}} : ({X}, {X}) -> ()
    %atan2 = stablehlo.atan2 %0#1, %0#0 : {X}
    stablehlo.custom_call @check.expect_almost_eq(%atan2, %1#3) {{has_side_effect = true}} : ({X}, {X}) -> ()
    %mul = stablehlo.multiply %0#2, %0#3 : {I}
    stablehlo.custom_call @check.expect_eq(%mul, %1#4) {{has_side_effect = true}} : ({I}, {I}) -> ()
    %three = stablehlo.constant dense<3> : {I}
    %shl = stablehlo.shift_left %0#2, %three : {I}
    stablehlo.custom_call @check.expect_eq(%shl, %1#5) {{has_side_effect = true}} : ({I}, {I}) -> ()
    %two = stablehlo.constant dense<2> : {U}
    %uadd = stablehlo.add %0#4, %0#4 : {U}
    %umul = stablehlo.multiply %uadd, %two : {U}
    stablehlo.custom_call @check.expect_eq(%umul, %1#6) {{has_side_effect = true}} : ({U}, {U}) -> ()
    %c:2 = call @complex_inputs() : () -> ({C}, {C})
    %cmul = stablehlo.multiply %c#0, %c#1 : {C}
    stablehlo.custom_call @check.expect_close(%cmul, %1#7) {{has_side_effect = true}} : ({C}, {C}) -> ()
    %cdiv = stablehlo.divide %c#0, %c#1 : {C}
    stablehlo.custom_call @check.expect_close(%cdiv, %1#8) {{has_side_effect = true}} : ({C}, {C}) -> ()
    %cabs = stablehlo.abs %c#0 : ({C}) -> tensor<3xf64>
    %cabs_expected = stablehlo.constant {dense(np.abs(c))}
    stablehlo.custom_call @check.expect_close(%cabs, %cabs_expected) {{has_side_effect = true}} : (tensor<3xf64>, tensor<3xf64>) -> ()
    return %div, %mul : {X}, {I}
  }}
  func.func private @inputs() -> ({X}, {X}, {I}, {I}, {U}) {{
    %cst = stablehlo.constant {dense(x)}
    %cst_0 = stablehlo.constant {dense(y)}
    %c = stablehlo.constant {dense(i)}
    %c_1 = stablehlo.constant {dense(j)}
    %c_2 = stablehlo.constant {dense(u)}
    return %cst, %cst_0, %c, %c_1, %c_2 : {X}, {X}, {I}, {I}, {U}
  }}
  func.func private @complex_inputs() -> ({C}, {C}) {{
    %cst = stablehlo.constant {dense(c)}
    %cst_0 = stablehlo.constant {dense(d)}
    return %cst, %cst_0 : {C}, {C}
  }}
  func.func private @expected() -> ({X}, {X}, {X}, {X}, {I}, {I}, {U}, {C}, {C}) {{
    %cst = stablehlo.constant {dense(x / y)}
    %cst_0 = stablehlo.constant {dense(np.exp(y))}
    %cst_1 = stablehlo.constant {dense(np.log(x) + np.sqrt(x))}
    %cst_2 = stablehlo.constant {dense(np.arctan2(y, x))}
    %c = stablehlo.constant {dense(i * j)}
    %c_0 = stablehlo.constant {dense(i << 3)}
    %c_1 = stablehlo.constant {dense((u + u) * np.uint64(2))}
    %cst_3 = stablehlo.constant {dense(c * d)}
    %cst_4 = stablehlo.constant {dense(c / d)}
    return %cst, %cst_0, %cst_1, %cst_2, %c, %c_0, %c_1, %cst_3, %cst_4 : {X}, {X}, {X}, {X}, {I}, {I}, {U}, {C}, {C}
  }}
}}
"""


def half_types() -> str:
    h = np.array([0.5, -1.25, 3.0, 100.0, 0.0999755859375, -7.5], np.float16)
    g = np.array([2.0, 0.75, -1.5, 0.5, 8.0, 0.25], np.float16)
    hb = h.astype(ml_dtypes.bfloat16)
    gb = g.astype(ml_dtypes.bfloat16)
    H, Bt = ttype(h), ttype(hb)
    # Products and sums of these values are exact in f32: one rounding to f16/bf16.
    h_mul = (h.astype(np.float32) * g.astype(np.float32)).astype(np.float16)
    h_add = (h.astype(np.float32) + g.astype(np.float32)).astype(np.float16)
    h_exp = np.exp(g.astype(np.float64)).astype(np.float16)
    b_mul = (hb.astype(np.float32) * gb.astype(np.float32)).astype(ml_dtypes.bfloat16)
    b_div = (hb.astype(np.float64) / gb.astype(np.float64)).astype(ml_dtypes.bfloat16)
    b_tanh = np.tanh(gb.astype(np.float64)).astype(ml_dtypes.bfloat16)
    c = np.array([1.0 + 1.0j, -2.0 + 0.5j, 0.25 - 3.0j], np.complex64)
    d = np.array([0.5 + 2.0j, 1.0 - 1.0j, -4.0 + 0.0j], np.complex64)
    C = ttype(c)
    cm = (c * d).astype(np.complex64)
    real = cm.real.astype(np.float32)
    R = ttype(real)
    return f"""// f16, bf16 and complex<f32>: arithmetic, exp and tanh, complex multiply,
// real/imag/complex. Several checks on the same values.
func.func @main() {{
  %h = stablehlo.constant {dense(h)}
  %g = stablehlo.constant {dense(g)}
  %hm = stablehlo.multiply %h, %g : {H}
  check.expect_eq_const %hm, {dense(h_mul)}
  %ha = stablehlo.add %h, %g : {H}
  check.expect_eq_const %ha, {dense(h_add)}
  %he = stablehlo.exponential %g : {H}
  %he_expected = stablehlo.constant {dense(h_exp)}
  check.expect_close %he, %he_expected, max_ulp_difference = 1 : {H}, {H}
  %hb = stablehlo.constant {dense(hb)}
  %gb = stablehlo.constant {dense(gb)}
  %bm = stablehlo.multiply %hb, %gb : {Bt}
  check.expect_eq_const %bm, {dense(b_mul)}
  %bd = stablehlo.divide %hb, %gb : {Bt}
  %bd_expected = stablehlo.constant {dense(b_div)}
  check.expect_close %bd, %bd_expected, max_ulp_difference = 1 : {Bt}, {Bt}
  %bt = stablehlo.tanh %gb : {Bt}
  check.expect_almost_eq_const %bt, {dense(b_tanh)}, tolerance = 1.0e-02
  %c = stablehlo.constant {dense(c)}
  %d = stablehlo.constant {dense(d)}
  %cm = stablehlo.multiply %c, %d : {C}
  %cm_expected = stablehlo.constant {dense(cm)}
  check.expect_close %cm, %cm_expected, max_ulp_difference = 2 : {C}, {C}
  check.expect_almost_eq_const %cm, {dense(cm)}
  %re = stablehlo.real %cm : ({C}) -> {R}
  check.expect_almost_eq_const %re, {dense(real)}
  %im = stablehlo.imag %c : ({C}) -> {R}
  %back = stablehlo.complex %re, %im : {C}
  check.expect_eq_const %back, {dense((real + 1j * c.imag).astype(np.complex64))}
  func.return
}}
"""


FILES = {
    "elementwise_f32.mlir": elementwise_f32,
    "testdata_softplus.mlir": testdata_softplus,
    "compare_select.mlir": compare_select,
    "convert.mlir": convert,
    "shapes.mlir": shapes,
    "dot_conv.mlir": dot_conv,
    "reductions.mlir": reductions,
    "gather_scatter.mlir": gather_scatter,
    "sort.mlir": sort,
    "control_flow.mlir": control_flow,
    "integer_ops.mlir": integer_ops,
    "wide_types.mlir": wide_types,
    "half_types.mlir": half_types,
}


def main() -> None:
    for name, make in FILES.items():
        (HERE / name).write_text(make())
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
