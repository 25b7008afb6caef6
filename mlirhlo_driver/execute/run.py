"""Compile, execute and compare against a reference (XLA's run_hlo_module, and more).

``run_module`` is a function of (module, options): it makes the inputs, runs
the module on the platform with XLA, runs the reference (the StableHLO
interpreter that ships in jaxlib, or XLA CPU), and compares. Self-checking
StableHLO test files (``check.expect_*``) are compared against their own
expected values instead. Everything here runs in the calling process; the
worker pool (batch/run_pool.py) isolates modules from each other.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DriverError, InputError, PipelineError
from ..ir import dtypes
from ..timing import ms_since

REFERENCES = ("interpreter", "cpu", "none")


@dataclass(frozen=True)
class RunOptions:
    platform: str = "cpu"
    reference: str = "interpreter"
    seed: int = 0
    zeros: bool = False
    inputs_npz: str | None = None
    large_float_range: bool = False
    rtol: float | None = None          # None: per-dtype default
    atol: float | None = None
    iterations: int = 1
    fold_constants: bool = False
    bisect: bool = False
    bisect_passes: bool = False        # on a mismatch, find the XLA HLO pass behind it
    timing: bool = False               # XLA's per-pass table of the module's compile
    keep_outputs: bool = False         # return the arrays, inputs too (print/save them)
    xla_flags: tuple[tuple[str, Any], ...] = ()
    reference_xla_flags: tuple[tuple[str, Any], ...] = ()   # for a CPU reference's compile


@dataclass
class Mismatch:
    """How one output differs from the reference."""

    output: int
    dtype: str
    shape: tuple[int, ...]
    count: int
    total: int
    max_abs: float
    max_rel: float
    worst_index: tuple[int, ...]
    actual: str
    expected: str
    examples: list[tuple[tuple[int, ...], str, str]] = field(default_factory=list)
    note: str = ""
    label: str = ""  # what the values are, when not an output (bisect: "value")

    def describe(self) -> str:
        what = self.label or f"output {self.output}"
        lines = [f"{what} ({self.dtype}{list(self.shape)}): {self.count} of {self.total} "
                 f"elements differ{' ' + self.note if self.note else ''}"]
        if self.count:
            lines.append(f"  max abs error {self.max_abs:.6g}, max rel error {self.max_rel:.6g}")
            lines.append(f"  worst at {list(self.worst_index)}: got {self.actual}, expected {self.expected}")
            for idx, got, want in self.examples:
                lines.append(f"  at {list(idx)}: got {got}, expected {want}")
        return "\n".join(lines)


@dataclass
class CheckReport:
    kind: str
    passed: bool
    location: str
    message: str


@dataclass
class BisectResult:
    op: str               # the op, as one line of MLIR
    location: str
    operand_shapes: list[str]
    mismatch: Mismatch


@dataclass
class ModuleReport:
    name: str
    source: str
    status: str = "ok"                 # ok, ran, mismatch, check-failed, failed, invalid, crashed, timeout
    message: str = ""
    max_error: float | None = None
    compile_ms: float | None = None
    run_ms: float | None = None        # median over iterations
    reference_ms: float | None = None
    mismatches: list[Mismatch] = field(default_factory=list)
    checks: list[CheckReport] = field(default_factory=list)
    bisect: BisectResult | None = None
    pass_bisect: Any = None            # execute.pass_bisect.PassBisect, with --bisect-passes
    xla_passes: list[Any] | None = None  # xla.pass_log.PassRow, with --timing
    inputs_note: str = ""
    # Check files: where the checked values came from (inputs.checks.Provenance.describe),
    # and the constants left for XLA (inputs.checks.KeptConstant fields).
    checked_values: str | None = None      # compiled, folded, partly folded, unknown
    checked_values_detail: str = ""
    kept_constants: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[Any] | None = None            # kept with keep_outputs, for --print-literals
    outputs: list[Any] | None = None
    reference_outputs: list[Any] | None = None
    reproducer: str = ""

    @property
    def passed(self) -> bool:
        return self.status in ("ok", "ran")

    @property
    def ok(self) -> bool:
        """It ran and matched its reference or passed its checks (or ran, without a reference)."""
        return self.passed

    def row(self) -> dict[str, Any]:
        return {"module": self.name, "source": self.source, "status": self.status,
                "max_error": self.max_error, "compile_ms": self.compile_ms, "run_ms": self.run_ms,
                "reference_ms": self.reference_ms, "message": self.message,
                "checks": [c.__dict__ for c in self.checks],
                "mismatches": [m.describe() for m in self.mismatches],
                "bisect": None if self.bisect is None else {
                    "op": self.bisect.op, "location": self.bisect.location,
                    "operand_shapes": self.bisect.operand_shapes,
                    "mismatch": self.bisect.mismatch.describe()},
                "bisect_passes": None if self.pass_bisect is None else self.pass_bisect.row(),
                "xla_passes": None if self.xla_passes is None else [p.as_dict() for p in self.xla_passes],
                "inputs": self.inputs_note,
                "checked_values": self.checked_values, "checked_values_detail": self.checked_values_detail,
                "kept_constants": self.kept_constants,
                "reproducer": self.reproducer}


# --------------------------------------------------------------------- types

# MLIR element type -> numpy dtype name, for what run can make, feed and
# compare: types numpy or ml_dtypes hold, a byte wide or more. Narrower ones
# (i4, f4E2M1FN, ...) are left out: nothing here packs, carries or compares them.
# "i1" is PRED (bool), as XLA reads it.
_NP_TYPES = {t.mlir: t.numpy for t in dtypes.ARRAY_TYPES if t.numpy is not None and t.bits >= 8}
# The interpreter's attributes cannot take the floats narrower than f32 (bf16, f16,
# f8): they travel as same-width integers.
_CARRIER = {t.numpy: f"int{t.bits}" for t in dtypes.ARRAY_TYPES
            if t.mlir in _NP_TYPES and t.kind == "float" and t.bits < 32}

np_dtype = dtypes.np_dtype  # numpy dtype name -> numpy.dtype (execute/spmd.py reads it here too)


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    element: str     # MLIR element type text
    dtype: str       # numpy dtype name
    name: str = ""

    def mlir(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        return f"tensor<{dims + 'x' if dims else ''}{self.element}>"


def tensor_spec(mlir_type: Any, name: str = "") -> TensorSpec:
    from jaxlib.mlir import ir

    try:
        t = ir.RankedTensorType(mlir_type)
    except ValueError:  # tokens, tuples: nothing run can make or compare
        raise InputError(f"cannot run a module with a {mlir_type} parameter or result") from None
    if not t.has_static_shape:
        raise InputError(f"cannot run a module with dynamic shapes ({t}); "
                         "refine them first (--pipeline @refine-shapes)")
    element = str(t.element_type)
    if element not in _NP_TYPES:
        raise InputError(f"element type {element} is not supported by mlirhlo run")
    return TensorSpec(tuple(t.shape), element, _NP_TYPES[element], name)


def main_function(module: Any) -> Any:
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    raise InputError("module has no @main function")


def signature(module: Any) -> tuple[list[TensorSpec], list[TensorSpec]]:
    from jaxlib.mlir import ir

    main = main_function(module)
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    args = main.regions[0].blocks[0].arguments
    names = []
    for i, a in enumerate(args):
        # A name location, loc("x"), names the parameter; loc("file":1:2) does not.
        m = re.match(r'loc\("([^"]+)"(?:\)|\()', str(a.location))
        names.append(m.group(1) if m else f"arg{i}")
    return ([tensor_spec(t, n) for t, n in zip(ftype.inputs, names)],
            [tensor_spec(t) for t in ftype.results])


# -------------------------------------------------------------------- inputs

def _constraints(module: Any) -> dict[int, tuple[str, int]]:
    """Per parameter: ("index", bound) or ("positive", 0), the way XLA's fake-data
    generator keeps indices in bounds and logs/roots away from NaN."""
    main = main_function(module)
    args = list(main.regions[0].blocks[0].arguments)
    out: dict[int, tuple[str, int]] = {}
    transparent = {"stablehlo.convert", "stablehlo.reshape", "stablehlo.broadcast_in_dim",
                   "stablehlo.transpose", "stablehlo.slice", "stablehlo.concatenate"}
    positive_ops = {"stablehlo.log", "stablehlo.sqrt", "stablehlo.rsqrt", "stablehlo.log_plus_one",
                    "stablehlo.power", "chlo.lgamma", "chlo.digamma"}

    def visit(value: Any, argno: int, depth: int = 0) -> None:
        if depth > 8:
            return
        for use in value.uses:
            owner = use.owner
            name = owner.name
            k = use.operand_number
            if name in transparent:
                for r in owner.results:
                    visit(r, argno, depth + 1)
            elif (bound := _index_bound(owner, name, k)) is not None:
                prev = out.get(argno)
                if prev is None or prev[0] != "index" or bound < prev[1]:
                    out[argno] = ("index", bound)
            elif name in positive_ops and (name != "stablehlo.power" or k == 0):
                out.setdefault(argno, ("positive", 0))

    for i, a in enumerate(args):
        visit(a, i)
    return out


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _attr_list(op: Any, key: str, within: str | None = None) -> list[int]:
    text = str(op.attributes[within if within else key]) if (within or key) in op.attributes else ""
    if within:
        m = re.search(key + r" = \[([^\]]*)\]", text)
        return _ints(m.group(1)) if m else []
    return _ints(text.split(":", 1)[-1]) if text else []


def _shape(value: Any) -> list[int]:
    from jaxlib.mlir import ir

    return list(ir.RankedTensorType(value.type).shape)


def _index_bound(op: Any, name: str, k: int) -> int | None:
    try:
        if name == "stablehlo.gather" and k == 1:
            operand = _shape(op.operands[0])
            sizes = _attr_list(op, "slice_sizes")
            dims = _attr_list(op, "start_index_map", "dimension_numbers")
            return max(0, min((operand[d] - sizes[d] for d in dims), default=0))
        if name == "stablehlo.scatter" and k == 1:
            n = (len(op.operands) - 1) // 2
            operand = _shape(op.operands[0])
            updates = _shape(op.operands[1 + n])
            dn = "scatter_dimension_numbers"
            inserted = set(_attr_list(op, "inserted_window_dims", dn))
            batching = set(_attr_list(op, "input_batching_dims", dn))
            window_dims = _attr_list(op, "update_window_dims", dn)
            to_operand = _attr_list(op, "scatter_dims_to_operand_dims", dn)
            window = {}
            it = iter(window_dims)
            for d in range(len(operand)):
                if d in inserted or d in batching:
                    window[d] = 1
                else:
                    w = next(it, None)
                    window[d] = updates[w] if w is not None else 1
            return max(0, min((operand[d] - window[d] for d in to_operand), default=0))
        if name == "stablehlo.dynamic_slice" and k >= 1:
            return max(0, _shape(op.operands[0])[k - 1] - _attr_list(op, "slice_sizes")[k - 1])
        if name == "stablehlo.dynamic_update_slice" and k >= 2:
            return max(0, _shape(op.operands[0])[k - 2] - _shape(op.operands[1])[k - 2])
    except (IndexError, KeyError, ValueError):
        return None
    return None


def make_inputs(module: Any, options: RunOptions) -> tuple[list[np.ndarray], str]:
    """Arguments for @main and a note saying how they were made."""
    params, _ = signature(module)
    if options.inputs_npz:
        return _inputs_from_npz(options.inputs_npz, params), f"from {options.inputs_npz}"
    if options.zeros:
        return [np.zeros(p.shape, np_dtype(p.dtype)) for p in params], "zeros"
    rng = np.random.default_rng(options.seed)
    constraints = _constraints(module)
    out = []
    for i, p in enumerate(params):
        out.append(_random_array(rng, p, constraints.get(i), options.large_float_range))
    kinds = sorted({c[0] for c in constraints.values()})
    note = f"random (seed {options.seed})"
    if kinds:
        note += "; " + ", ".join(f"{sum(1 for c in constraints.values() if c[0] == k)} {k}-constrained"
                                 for k in kinds)
    return out, note


def _random_array(rng: np.random.Generator, p: TensorSpec, constraint: tuple[str, int] | None,
                  large: bool) -> np.ndarray:
    dt = np_dtype(p.dtype)
    shape = p.shape
    if constraint and constraint[0] == "index" and dt.kind in "iu":
        return rng.integers(0, constraint[1] + 1, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        lo, hi = (0, 16) if dt.kind == "u" else (-8, 9)
        return rng.integers(lo, hi, size=shape).astype(dt)
    positive = bool(constraint and constraint[0] == "positive")
    lo, hi = (1e-4 if positive else -1e4, 1e4) if large else ((0.1 if positive else -1.0), 1.0)
    if dt.kind == "c":
        real = rng.uniform(lo, hi, size=shape)
        imag = rng.uniform(lo, hi, size=shape)
        return (real + 1j * imag).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def _inputs_from_npz(path: str, params: list[TensorSpec]) -> list[np.ndarray]:
    """One array per parameter, named after it (its name, ``argN``, or np.savez's ``arr_N``).

    As strict as XLA: every array must match a parameter, with its shape and
    dtype; nothing is converted. bf16/f8 arrays may come as same-width raw
    integers (or numpy's void), since .npz cannot name those types.
    """
    import zipfile

    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not an .npz file", file=path) from None
    except Exception as e:
        raise InputError(f"not a readable .npz file: {e}", file=path) from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise InputError("a single .npy array, not an .npz archive", file=path,
                         hint="np.savez(path, arg0=...) writes one array per parameter")
    keys = list(data.keys())
    used: set[str] = set()
    out = []
    for i, p in enumerate(params):
        names = [n for n in (p.name, f"arg{i}", f"arr_{i}") if n]
        key = next((n for n in names if n in data), None)
        if key is None:
            accepted = " or ".join(f"'{n}'" for n in dict.fromkeys(names))
            raise InputError(f"no array for parameter {i} ({p.name}); the file has: "
                             f"{', '.join(keys) or 'no arrays'}", file=path, hint=f"name it {accepted}")
        used.add(key)
        try:
            arr = np.asarray(data[key])
        except (ValueError, OSError, zipfile.BadZipFile) as e:
            raise InputError(f"array '{key}' cannot be read: {e}", file=path) from None
        want = np_dtype(p.dtype)
        if tuple(arr.shape) != p.shape:
            raise InputError(f"array '{key}' has shape {list(arr.shape)}, parameter {i} ({p.name}) needs "
                             f"{list(p.shape)}", file=path)
        if arr.dtype != want:
            raw_ok = dtypes.from_ml_dtypes(p.dtype)  # types .npz cannot name
            if raw_ok and arr.dtype.itemsize == want.itemsize and arr.dtype.kind in "iuV":
                arr = arr.view(want)  # bf16/f8 saved as raw integers
            else:
                raise InputError(f"array '{key}' is {arr.dtype}, parameter {i} ({p.name}) is {want}",
                                 file=path, hint="save it with that dtype; nothing is converted")
        out.append(arr)
    extra = [k for k in keys if k not in used]
    if extra:
        raise InputError(f"array{'s' if len(extra) > 1 else ''} {', '.join(repr(k) for k in extra)} "
                         f"match{'' if len(extra) > 1 else 'es'} no parameter of @main "
                         f"({', '.join(p.name for p in params)})", file=path)
    return out


# ----------------------------------------------------------------- execution

def require_devices(platform: str) -> None:
    """NoGpu now, once, when ``platform`` cannot run here (cuda without a usable GPU),
    rather than one failure per module."""
    if platform == "cuda":
        from .._native import jaxlib as _jaxlib

        _jaxlib.cuda_devices()


def _devices(platform: str) -> list[Any]:
    from .._native import jaxlib as _jaxlib

    if platform == "cpu":
        return _jaxlib.cpu_devices()[:1]
    if platform == "cuda":
        return _jaxlib.cuda_devices()[:1]
    raise InputError(f"unknown platform '{platform}'", hint="cpu or cuda")


def run_xla(module: Any, arrays: list[np.ndarray], platform: str, iterations: int = 1,
            xla_flags: tuple[tuple[str, Any], ...] = ()) -> tuple[list[np.ndarray], float, float]:
    """(outputs, compile ms, median run ms) for ``module`` on ``platform``."""
    return _compile_and_run(module, arrays, platform, iterations, xla_flags)[:3]


def _compile_and_run(module: Any, arrays: list[np.ndarray], platform: str, iterations: int,
                     xla_flags: tuple[tuple[str, Any], ...]) -> tuple[list[np.ndarray], float, float, Any]:
    """:func:`run_xla`'s results and the loaded executable."""
    from .._native import jaxlib as _jaxlib

    device = _devices(platform)[0]
    t0 = time.perf_counter()
    exe = _jaxlib.compile_executable(module, [device],
                                     _jaxlib.compile_options(env_overrides=list(xla_flags)))
    compile_ms = ms_since(t0)
    times, outputs = [], []
    for _ in range(max(1, iterations)):
        t0 = time.perf_counter()
        outputs = _jaxlib.execute(exe, arrays, device)
        times.append(ms_since(t0))
    return outputs, compile_ms, statistics.median(times), exe


def run_in_helper(bytecode: bytes, arrays: list[np.ndarray], platform: str,
                  xla_flags: tuple[tuple[str, Any], ...]) -> list[np.ndarray]:
    """:func:`run_xla`'s outputs for a module given as bytecode (isolate's helper runs it)."""
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        return run_xla(ir.Module.parse(bytecode), arrays, platform, 1, xla_flags)[0]


def run_interpreter(module: Any, arrays: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """The StableHLO reference interpreter (stablehlo.eval_module) on host arrays.

    It runs in a separate process (execute/interpreter.py): it aborts on ops it does
    not support. Types numpy cannot take from MLIR attributes (bf16, f16, f8,
    complex) travel as same-width integers or real/imag pairs: the module is
    wrapped with conversions on both ends.
    """
    from ..ir import emit
    from . import interpreter

    params, results = signature(module)
    wrapped = _wrap_for_interpreter(module, params, results)
    carried = [np.ascontiguousarray(_to_carrier(a, p)) for a, p in zip(arrays, params)]
    t0 = time.perf_counter()
    outs = interpreter.evaluate(emit.bytecode(wrapped), carried,
                                         [_carrier_spec_text(p) for p in params])
    ms = ms_since(t0)
    return [_from_carrier(a, r) for a, r in zip(outs, results)], ms


def _to_carrier(a: np.ndarray, p: TensorSpec) -> np.ndarray:
    if p.dtype in _CARRIER:
        return a.view(_CARRIER[p.dtype])
    if p.dtype.startswith("complex"):
        return np.stack([a.real, a.imag], axis=-1)
    if p.dtype == "bool":
        return a.astype(bool)
    return a


def _from_carrier(a: np.ndarray, r: TensorSpec) -> np.ndarray:
    if r.dtype in _CARRIER:
        return a.astype(_CARRIER[r.dtype]).view(np_dtype(r.dtype)).reshape(r.shape)
    if r.dtype.startswith("complex"):
        return (a[..., 0] + 1j * a[..., 1]).astype(np_dtype(r.dtype)).reshape(r.shape)
    return a.astype(np_dtype(r.dtype)).reshape(r.shape)


def _wrap_for_interpreter(module: Any, params: list[TensorSpec], results: list[TensorSpec]) -> Any:
    from jaxlib.mlir import ir

    from ..inputs import loader as inputs
    from ..ir import emit

    if not any(p.dtype in _CARRIER or p.dtype.startswith("complex") for p in params + results):
        return module
    copy = emit.clone(module)
    main = main_function(copy)
    with copy.context:
        main.attributes["sym_name"] = ir.StringAttr.get("__mlirhlo_inner_main")
        main.attributes["sym_visibility"] = ir.StringAttr.get("private")
    lines, args, call_args = [], [], []
    for i, p in enumerate(params):
        ct = _carrier_spec_text(p)
        args.append(f"%a{i}: {ct}")
        call_args.append(_unwrap_value(lines, f"%a{i}", p, ct, f"in{i}"))
    res_types = ", ".join(r.mlir() for r in results)
    outs = [f"%r#{i}" if len(results) > 1 else "%r" for i in range(len(results))]
    call = f"%r{':' + str(len(results)) if len(results) > 1 else ''} = func.call @__mlirhlo_inner_main(" \
           f"{', '.join(call_args)}) : ({', '.join(p.mlir() for p in params)}) -> ({res_types})"
    lines.append(call)
    returned = [_wrap_value(lines, v, r, f"out{i}") for i, (v, r) in enumerate(zip(outs, results))]
    out_types = ", ".join(_carrier_spec_text(r) for r in results)
    lines.append(f"func.return {', '.join(returned)} : {out_types}")
    wrapper = (f"func.func @main({', '.join(args)}) -> ({out_types}) {{\n  " + "\n  ".join(lines) + "\n}\n")
    text = copy.operation.get_asm()
    end = text.rstrip().rfind("}")
    return inputs.parse_mlir(text[:end] + wrapper + "}\n", "<interpreter wrapper>")


def _carrier_spec_text(p: TensorSpec) -> str:
    if p.dtype in _CARRIER:
        return TensorSpec(p.shape, dtypes.BY_NUMPY[_CARRIER[p.dtype]].mlir, "").mlir()
    if p.dtype.startswith("complex"):
        return TensorSpec(p.shape + (2,), "f32" if p.dtype == "complex64" else "f64", "").mlir()
    return p.mlir()


def _unwrap_value(lines: list[str], v: str, p: TensorSpec, carrier: str, tag: str) -> str:
    if p.dtype in _CARRIER:
        lines.append(f"%{tag} = stablehlo.bitcast_convert {v} : ({carrier}) -> {p.mlir()}")
        return f"%{tag}"
    if p.dtype.startswith("complex"):
        part = TensorSpec(p.shape, p.element[8:-1], "").mlir()
        lines.append(f"%{tag}_re2 = stablehlo.slice {v} [{', '.join(['0:' + str(d) for d in p.shape] + ['0:1'])}]"
                     f" : ({carrier}) -> {TensorSpec(p.shape + (1,), p.element[8:-1], '').mlir()}")
        lines.append(f"%{tag}_im2 = stablehlo.slice {v} [{', '.join(['0:' + str(d) for d in p.shape] + ['1:2'])}]"
                     f" : ({carrier}) -> {TensorSpec(p.shape + (1,), p.element[8:-1], '').mlir()}")
        one = TensorSpec(p.shape + (1,), p.element[8:-1], "").mlir()
        lines.append(f"%{tag}_re = stablehlo.reshape %{tag}_re2 : ({one}) -> {part}")
        lines.append(f"%{tag}_im = stablehlo.reshape %{tag}_im2 : ({one}) -> {part}")
        lines.append(f"%{tag} = stablehlo.complex %{tag}_re, %{tag}_im : {p.mlir()}")
        return f"%{tag}"
    return v


def _wrap_value(lines: list[str], v: str, r: TensorSpec, tag: str) -> str:
    if r.dtype in _CARRIER:
        lines.append(f"%{tag} = stablehlo.bitcast_convert {v} : ({r.mlir()}) -> {_carrier_spec_text(r)}")
        return f"%{tag}"
    if r.dtype.startswith("complex"):
        part = TensorSpec(r.shape, r.element[8:-1], "").mlir()
        one = TensorSpec(r.shape + (1,), r.element[8:-1], "").mlir()
        lines.append(f"%{tag}_re = stablehlo.real {v} : ({r.mlir()}) -> {part}")
        lines.append(f"%{tag}_im = stablehlo.imag {v} : ({r.mlir()}) -> {part}")
        lines.append(f"%{tag}_re1 = stablehlo.reshape %{tag}_re : ({part}) -> {one}")
        lines.append(f"%{tag}_im1 = stablehlo.reshape %{tag}_im : ({part}) -> {one}")
        lines.append(f"%{tag} = stablehlo.concatenate %{tag}_re1, %{tag}_im1, dim = {len(r.shape)}"
                     f" : ({one}, {one}) -> {_carrier_spec_text(r)}")
        return f"%{tag}"
    return v


# ---------------------------------------------------------------- comparison

_DEFAULT_TOL = {  # (rtol, atol) per dtype; exact for integers and bools
    "float64": (1e-10, 1e-12), "complex128": (1e-10, 1e-12),
    "float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2),
}
_F8_TOL = (1.3e-1, 6e-2)


def tolerance(dtype: str, rtol: float | None, atol: float | None) -> tuple[float, float]:
    base = _DEFAULT_TOL.get(dtype, _F8_TOL if dtype.startswith("float8") else (0.0, 0.0))
    return (base[0] if rtol is None else rtol, base[1] if atol is None else atol)


def compare(actual: np.ndarray, expected: np.ndarray, index: int, rtol: float | None,
            atol: float | None, examples: int = 3) -> Mismatch:
    """Element-wise comparison, NaN- and Inf-aware; exact for ints and bools."""
    dtype = str(expected.dtype)
    shape = tuple(expected.shape)
    if tuple(actual.shape) != shape or actual.dtype != expected.dtype:
        return Mismatch(index, dtype, shape, expected.size, expected.size, float("inf"), float("inf"),
                        (), f"{actual.dtype}{list(actual.shape)}", f"{dtype}{list(shape)}",
                        note="(shape or type differs)")
    rt, at = tolerance(dtype, rtol, atol)
    if expected.dtype.kind in "biu":
        bad = actual != expected
        err = np.abs(actual.astype(np.float64) - expected.astype(np.float64)) if expected.dtype.kind != "b" \
            else bad.astype(np.float64)
        rel = err / np.maximum(np.abs(expected.astype(np.float64)), 1)
    else:
        a = actual.astype(np.complex128 if expected.dtype.kind == "c" else np.float64)
        e = expected.astype(a.dtype)
        a_nan, e_nan = np.isnan(a), np.isnan(e)
        both_inf = np.isinf(a) & np.isinf(e) & (a == e)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            err = np.abs(a - e)
            err = np.where(both_inf | (a_nan & e_nan), 0.0, err)
            err = np.where(a_nan ^ e_nan, np.inf, err)
            rel = err / np.abs(e)  # against an expected 0: inf, whatever the error's size
            rel = np.where(err == 0, 0.0, np.where(np.isnan(rel), np.inf, rel))
            bad = (err > at + rt * np.abs(np.where(np.isfinite(e), e, 0))) | (a_nan ^ e_nan)
    count = int(np.count_nonzero(bad))
    mm = Mismatch(index, dtype, shape, count, int(expected.size), 0.0, 0.0, (), "", "")
    if count:
        flat_err = np.where(bad, err, -1).reshape(-1)
        worst = int(np.argmax(flat_err))
        mm.worst_index = tuple(int(i) for i in np.unravel_index(worst, shape)) if shape else ()
        mm.max_abs = float(np.max(np.where(bad, err, 0)))
        mm.max_rel = float(np.max(np.where(bad, rel, 0)))
        mm.actual = _fmt(actual.reshape(-1)[worst])
        mm.expected = _fmt(expected.reshape(-1)[worst])
        for flat in np.flatnonzero(bad.reshape(-1))[: examples + 1]:
            if int(flat) == worst or len(mm.examples) >= examples:
                continue
            idx = tuple(int(i) for i in np.unravel_index(int(flat), shape)) if shape else ()
            mm.examples.append((idx, _fmt(actual.reshape(-1)[flat]), _fmt(expected.reshape(-1)[flat])))
    return mm


def _fmt(v: Any) -> str:
    if isinstance(v, (np.floating, float)) or getattr(v, "dtype", None) is not None and \
            np.dtype(v.dtype).kind == "f":
        return repr(float(v))
    if isinstance(v, (np.complexfloating, complex)):
        return repr(complex(v))
    return repr(v.item() if hasattr(v, "item") else v)


# ------------------------------------------------------------------- running

def run_module(module: Any, name: str, source: str, options: RunOptions, line_offset: int = 0) -> ModuleReport:
    """Inputs, platform run, reference run, comparison; never raises for module failures."""

    report = run_compared(module, name, source, options, line_offset)
    if options.timing and report.status not in ("invalid", "failed"):
        from ..stages.base import StageOptions
        from ..xla import backend, instrument, pass_log

        try:
            done = instrument.compile(backend.module_for_xla(module, source, line_offset, options.fold_constants),
                                      name,
                                      StageOptions(platform=options.platform, xla_flags=options.xla_flags),
                                      instrument.XlaInstrumentation(timing=True))
            report.xla_passes = pass_log.rows(done.calls or [])
        except DriverError as e:
            report.message += f" (no pass timing: {e.message})"
    return report


def run_compared(module: Any, name: str, source: str, options: RunOptions, line_offset: int = 0) -> ModuleReport:
    from .._native import jaxlib as _jaxlib
    from ..inputs import checks

    report = ModuleReport(name, source)
    try:
        if checks.needs_x64(module):
            _jaxlib.enable_x64()
        if checks.has_checks(module):
            return _run_checks(module, report, options, line_offset)
        arrays, report.inputs_note = make_inputs(module, options)
        outputs, report.compile_ms, report.run_ms = run_xla(
            module, arrays, options.platform, options.iterations, options.xla_flags)
        if options.keep_outputs:
            report.inputs, report.outputs = arrays, outputs
        if options.reference == "none":
            report.status = "ran"
            return report
        reference, report.reference_ms = _run_reference(module, arrays, options)
        if options.keep_outputs:
            report.reference_outputs = reference
        _compare_all(report, outputs, reference, options)
        if report.status == "mismatch" and options.bisect:
            report.bisect = bisect(module, arrays, options)
            if report.bisect is not None and report.bisect.location.startswith("-:"):
                report.bisect.location = source + report.bisect.location[1:]
        if report.status == "mismatch" and options.bisect_passes:
            from . import pass_bisect

            def matching(outs: list[np.ndarray]) -> bool:
                return len(outs) == len(reference) and all(
                    compare(a, e, i, options.rtol, options.atol).count == 0
                    for i, (a, e) in enumerate(zip(outs, reference)))

            report.pass_bisect = pass_bisect.find(module, name, arrays, options, trial=run_in_helper,
                                                  matching=matching)
    except (InputError, PipelineError) as e:
        report.status = "invalid"  # bad input, not a failure of the module: exit code 2
        if e.file is None and e.line is not None:
            e.file = source  # a position in this module's text (the guards' errors): say which file
        report.message = e.format().removeprefix("error: ")
    except DriverError as e:
        report.status = "failed"
        report.message = e.format().removeprefix("error: ")
    return report


def _run_reference(module: Any, arrays: list[np.ndarray], options: RunOptions) -> tuple[list[np.ndarray], float]:
    if options.reference == "interpreter":
        return run_interpreter(module, arrays)
    if options.reference == "cpu":
        outs, _, ms = run_xla(module, arrays, "cpu", 1, options.reference_xla_flags)
        return outs, ms
    raise InputError(f"unknown reference '{options.reference}'", hint=", ".join(REFERENCES))


def _compare_all(report: ModuleReport, outputs: list[np.ndarray], reference: list[np.ndarray],
                 options: RunOptions) -> None:
    if len(outputs) != len(reference):
        report.status = "mismatch"
        report.message = f"{len(outputs)} outputs, reference has {len(reference)}"
        return
    worst = 0.0
    for i, (a, e) in enumerate(zip(outputs, reference)):
        mm = compare(a, e, i, options.rtol, options.atol)
        if mm.count:
            report.mismatches.append(mm)
        else:
            rel = compare(a, e, i, 0.0, 0.0)
            worst = max(worst, rel.max_abs)
        worst = max(worst, mm.max_abs)
    report.max_error = worst
    if report.mismatches:
        report.status = "mismatch"
        report.message = "; ".join(f"output {m.output}: {m.count}/{m.total} differ" for m in report.mismatches)


def _run_checks(module: Any, report: ModuleReport, options: RunOptions, line_offset: int) -> ModuleReport:
    from ..inputs import checks

    plan = checks.prepare(module, fold_constants=options.fold_constants, source=report.source,
                          line_offset=line_offset)
    report.inputs_note = ("constants folded by XLA (--fold-constants)" if plan.folded
                          else f"{len(plan.parameters)} constant{'s' if len(plan.parameters) != 1 else ''} "
                          "fed as runtime parameters")
    report.kept_constants = [dict(k.__dict__) for k in plan.kept]
    extra, note = [], ""
    if plan.num_original_params:
        sub = RunOptions(**{**options.__dict__})
        extra, note = make_inputs(plan.module, sub)
        extra = extra[: plan.num_original_params]
        report.inputs_note += f"; {note}"
    outputs, report.compile_ms, report.run_ms, exe = _compile_and_run(
        plan.module, list(extra) + list(plan.parameters), options.platform, options.iterations,
        options.xla_flags)
    provenance = checks.checked_values(plan, _outputs_from_parameters(exe))
    report.checked_values, report.checked_values_detail = provenance.state, provenance.describe()
    if options.keep_outputs:
        report.outputs = outputs[: plan.num_original_results]
    results = checks.evaluate(plan, outputs)
    report.checks = [CheckReport(r.kind, r.passed, r.location, r.message) for r in results]
    failed = [r for r in results if not r.passed]
    report.status = "check-failed" if failed else "ok"
    report.message = f"{len(results) - len(failed)}/{len(results)} checks passed"
    return report


def _outputs_from_parameters(exe: Any) -> list[bool] | None:
    """Which outputs of the executable's optimized module depend on its parameters."""
    from ..ir import hlo_dataflow

    modules = exe.hlo_modules()
    if len(modules) != 1:
        return None
    return hlo_dataflow.outputs_from_parameters(modules[0].as_serialized_hlo_module_proto())


# ------------------------------------------------------------------- bisect

def bisect(module: Any, arrays: list[np.ndarray], options: RunOptions) -> BisectResult | None:
    """The first op of @main (in program order) whose value differs between the
    platform and the reference: every intermediate value is made an output of
    one instrumented module, run on both sides, and compared in order."""
    from jaxlib.mlir import ir

    from ..ir import emit

    probe = emit.clone(module)
    main = main_function(probe)
    block = main.regions[0].blocks[0]
    ops = list(block.operations)
    ret = ops[-1]
    candidates = []
    for op in ops[:-1]:
        if op.operation.name in ("stablehlo.constant",) or not len(op.results):
            continue
        for r in op.results:
            try:
                ir.RankedTensorType(r.type)
            except ValueError:
                continue
            candidates.append((op, r))
    if not candidates:
        return None
    with probe.context, ir.Location.unknown():
        from jaxlib.mlir.dialects import func

        new_results = [r for _, r in candidates]
        ir.InsertionPoint(ret)
        func.ReturnOp(new_results, ip=ir.InsertionPoint(ret))
        ret.operation.erase()
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(ftype.inputs, [r.type for r in new_results]))
    got, _, _ = run_xla(probe, arrays, options.platform, 1, options.xla_flags)
    want, _ = _run_reference(probe, arrays, options)
    for i, ((op, _), a, e) in enumerate(zip(candidates, got, want)):
        mm = compare(a, e, i, options.rtol, options.atol)
        if mm.count:
            mm.label = "value"
            line = op.operation.get_asm(large_elements_limit=4).strip().splitlines()[0]
            shapes = [str(o.type) for o in op.operands]
            return BisectResult(line, _loc_text(op.location), shapes, mm)
    return None


def _loc_text(loc: Any) -> str:
    m = re.search(r'"([^"]*)":(\d+):(\d+)', str(loc))
    if m:
        return f"{m.group(1)}:{m.group(2)}:{m.group(3)}"
    m = re.match(r'loc\("([^"]+)"', str(loc))
    return m.group(1) if m else str(loc)
