"""LLVM IR -> PTX with llvmlite's NVPTX backend (XLA's ``ptx-opt`` step).

XLA dumps the LLVM IR of every GPU module (``*.ir-no-opt.ll`` before its
LLVM pipeline, ``*.ir-with-opt.ll`` after it). This module turns such IR into
PTX without XLA: normalize the text so llvmlite's (older) LLVM can parse it,
verify, optionally run LLVM's ``-O<n>`` pipeline, and emit PTX for an
``nvptx64-nvidia-cuda`` target machine.

Nothing here imports jax/jaxlib, and llvmlite is imported lazily inside the
functions that need it, so importing this module stays cheap.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from ..errors import InputError, ToolchainError, did_you_mean

__all__ = ["normalize_llvm_ir", "compile_to_ptx", "check_with_ptxas", "check_all_with_ptxas",
           "supported_archs"]

TRIPLE = "nvptx64-nvidia-cuda"

# ------------------------------------------------------------------ targets

# Every processor llvmlite 0.50's NVPTX backend (LLVM 22) knows, with the
# lowest PTX ISA it accepts for it (what LLVM picks when no +ptxNN is given;
# measured by emitting an empty kernel for each CPU).
_MIN_PTX: dict[str, int] = {
    "sm_20": 32, "sm_21": 32, "sm_30": 32, "sm_32": 40, "sm_35": 32, "sm_37": 41,
    "sm_50": 40, "sm_52": 41, "sm_53": 42,
    "sm_60": 50, "sm_61": 50, "sm_62": 50,
    "sm_70": 60, "sm_72": 61, "sm_75": 63,
    "sm_80": 70, "sm_86": 71, "sm_87": 74, "sm_88": 90, "sm_89": 78,
    "sm_90": 78, "sm_90a": 80,
    "sm_100": 86, "sm_100a": 86, "sm_100f": 88,
    "sm_101": 86, "sm_101a": 86, "sm_101f": 88,
    "sm_103": 88, "sm_103a": 88, "sm_103f": 88,
    "sm_110": 90, "sm_110a": 90, "sm_110f": 90,
    "sm_120": 87, "sm_120a": 87, "sm_120f": 88,
    "sm_121": 88, "sm_121a": 88, "sm_121f": 88,
}

# PTX ISA versions the backend implements (its +ptxNN features).
_PTX_VERSIONS = (32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 65, 70, 71, 72, 73, 74,
                 75, 76, 77, 78, 80, 81, 82, 83, 84, 85, 86, 87, 88, 90)

# XLA asks LLVM for the PTX ISA of the CUDA toolkit it targets rather than the
# arch's minimum; jaxlib 0.10.2's XLA emits ``.version 8.8`` (CUDA 12.9) for
# every arch. Use the same, raised to the arch's minimum where that is newer.
_XLA_PTX = 88


def supported_archs() -> list[str]:
    """The NVPTX processors (``sm_XX[a|f]``) this backend can target."""
    return list(_MIN_PTX)


_ARCH_RE = re.compile(r"^(?:sm_?)?(\d+)(?:\.(\d))?([af]?)$", re.IGNORECASE)


def _canonical_arch(arch: str) -> str:
    """``9.0``/``90``/``sm_90``/``sm_90a``/``9.0a`` -> ``sm_90[a]``; InputError if unknown."""
    text = str(arch).strip()
    m = _ARCH_RE.match(text)
    name = None
    if m:
        major, minor, suffix = m.group(1), m.group(2), m.group(3).lower()
        if minor is not None:           # "9.0", "10.0a": major.minor
            name = f"sm_{int(major)}{minor}{suffix}"
        elif text.lower().startswith("sm") or len(major) >= 2:   # "90", "sm_90"
            name = f"sm_{int(major)}{suffix}"
    if name not in _MIN_PTX:
        choices = supported_archs()
        raise InputError(f"unsupported NVPTX arch '{arch}' (supported: {', '.join(choices)})",
                         hint=did_you_mean(name or text, choices))
    return name


def _ptx_feature(cpu: str, ptx_version: int | str | None) -> int:
    if ptx_version is None:
        return max(_XLA_PTX, _MIN_PTX[cpu])
    text = str(ptx_version).strip().lower().removeprefix("+").removeprefix("ptx")
    try:
        v = int(round(float(text) * 10)) if "." in text else int(text)
    except ValueError:
        v = -1
    if v not in _PTX_VERSIONS:
        raise InputError(f"unsupported PTX ISA version '{ptx_version}'",
                         hint="supported: " + ", ".join(f"{p // 10}.{p % 10}" for p in _PTX_VERSIONS))
    if v < _MIN_PTX[cpu]:
        need = _MIN_PTX[cpu]
        raise InputError(f"{cpu} needs PTX ISA {need // 10}.{need % 10} or newer, "
                         f"got {v // 10}.{v % 10}")
    return v


# ------------------------------------------------------- float normalization

@dataclass(frozen=True)
class _Fmt:
    bits: int        # total width
    ebits: int       # exponent field width
    p: int           # precision in bits, including the leading (hidden or explicit) bit
    explicit: bool   # x86_fp80 stores the integer bit

    @property
    def mbits(self) -> int:       # stored significand field width
        return self.p if self.explicit else self.p - 1

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1


_FMTS = {
    "half": _Fmt(16, 5, 11, False),
    "bfloat": _Fmt(16, 8, 8, False),
    "float": _Fmt(32, 8, 24, False),
    "double": _Fmt(64, 11, 53, False),
    "fp128": _Fmt(128, 15, 113, False),
    "x86_fp80": _Fmt(80, 15, 64, True),
}
_DOUBLE = _FMTS["double"]


def _round_to_bits(value: Fraction, negative: bool, f: _Fmt) -> int | None:
    """Bits of ``(-1)**negative * value`` rounded to ``f`` (nearest, ties to even).

    Returns None where LLVM's parser rejects the literal: a nonzero value that
    underflows to zero or one that overflows to infinity.
    """
    sign = (1 << (f.bits - 1)) if negative else 0
    if value == 0:
        return sign
    emax = f.bias
    emin = 1 - f.bias
    n, d = value.numerator, value.denominator
    e = n.bit_length() - d.bit_length()           # floor(log2(value)) is e or e-1
    if Fraction(n, d) < Fraction(2) ** e:
        e -= 1
    e = max(e, emin)
    scaled = value * Fraction(2) ** (f.p - 1 - e)  # significand as a real number
    m = scaled.numerator // scaled.denominator
    rem = scaled - m
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m & 1):
        m += 1
    if m == 1 << f.p:                              # rounding carried into a new binade
        m >>= 1
        e += 1
    if m == 0 or e > emax:
        return None
    if m < 1 << (f.p - 1):                         # subnormal
        biased = 0
    else:
        biased = e + f.bias
    field = m if f.explicit else m & ((1 << f.mbits) - 1)
    return sign | (biased << f.mbits) | field


def _special_bits(kind: str, negative: bool, payload: int, f: _Fmt) -> int | None:
    """inf / quiet NaN / signaling NaN (payload excludes the quiet bit) in format f."""
    sign = (1 << (f.bits - 1)) if negative else 0
    exp = ((1 << f.ebits) - 1) << f.mbits
    intbit = (1 << (f.mbits - 1)) if f.explicit else 0   # x87: integer bit set for inf/NaN
    quiet = 1 << (f.p - 2)
    if kind == "inf":
        return sign | exp | intbit
    if payload >= quiet:
        return None
    if kind == "qnan":
        return sign | exp | intbit | quiet | payload
    if payload == 0:                                       # snan needs a nonzero payload
        return None
    return sign | exp | intbit | payload


def _widen_to_double(bits: int, f: _Fmt) -> int:
    """Exact bits of the double holding the value of ``bits`` in format f (<= double).

    NaN payloads shift left with the significand, as APFloat's widening does,
    so narrowing the double back to f (what the old parser does) restores them.
    """
    sign = bits >> (f.bits - 1)
    exp = (bits >> f.mbits) & ((1 << f.ebits) - 1)
    man = bits & ((1 << f.mbits) - 1)
    shift = _DOUBLE.mbits - f.mbits
    if exp == (1 << f.ebits) - 1:                          # inf / NaN
        return (sign << 63) | (0x7FF << 52) | (man << shift)
    if exp == 0 and man == 0:
        return sign << 63
    if exp == 0:                                           # subnormal: renormalize
        e = 1 - f.bias
        while not man & (1 << f.mbits):
            man <<= 1
            e -= 1
        man &= (1 << f.mbits) - 1
    else:
        e = exp - f.bias
    return (sign << 63) | ((e + _DOUBLE.bias) << 52) | (man << shift)


def _classic(bits: int, ty: str) -> str:
    """The spelling LLVM <= 22 prints (and llvmlite parses) for these bits."""
    if ty == "half":
        return f"0xH{bits:04X}"
    if ty == "bfloat":
        return f"0xR{bits:04X}"
    if ty == "float":
        return f"0x{_widen_to_double(bits, _FMTS['float']):016X}"
    if ty == "double":
        return f"0x{bits:016X}"
    if ty == "fp128":         # 0xL: low 64 bits first, then high 64 bits
        return f"0xL{bits & ((1 << 64) - 1):016X}{bits >> 64:016X}"
    if ty == "x86_fp80":      # 0xK: sign+exponent (16 bits), then the 64-bit significand
        return f"0xK{bits:020X}"
    raise AssertionError(ty)


def _exact_in(value: Fraction, negative: bool, ty: str) -> bool:
    """True when ``value`` is exactly a finite value of ``ty`` (and of double)."""
    bits = _round_to_bits(value, negative, _FMTS[ty])
    if bits is None:
        return False
    return _bits_value(bits, _FMTS[ty]) == value


def _bits_value(bits: int, f: _Fmt) -> Fraction:
    """Magnitude of a finite value given by its bits, for a format with an implicit leading bit
    (only the IEEE types are asked whether a literal is exact in them)."""
    exp = (bits >> f.mbits) & ((1 << f.ebits) - 1)
    man = bits & ((1 << f.mbits) - 1)
    if exp == 0:
        return Fraction(man) * Fraction(2) ** (1 - f.bias - f.mbits)
    return Fraction(man | (1 << f.mbits)) * Fraction(2) ** (exp - f.bias - f.mbits)


# ppc_fp128 (double-double) is not rewritten: NVPTX has no use for it, and a
# literal left as written gets llvmlite's own located parse error.
_FP_TYPES = frozenset(_FMTS)
_NON_FP_TYPE = re.compile(r"^(?:i\d+|ptr|void|label|metadata|token|x86_amx|x86_mmx|target)$")

# One token of a line. Float-literal alternatives come before the generic word
# and number rules so that e.g. ``f0x3F800000`` is not taken as a word.
_TOKEN = re.compile(r"""
    (?P<comment>;.*)
  | (?P<string>c?"[^"]*"?)
  | (?P<sigil>[%@!$#](?:"[^"]*"?|[-A-Za-z$._0-9]+)?)
  | (?P<bitfp>f0x(?P<bitdigits>[0-9A-Fa-f]+))(?![\w.])
  | (?P<special>(?P<ssign>[-+]?)(?:
        (?P<inf>inf)
      | (?P<qnan>qnan)
      | (?P<nankind>s?nan)(?:\((?P<payload>0x[0-9A-Fa-f]+|\d+)\))?
    ))(?![\w.(])
  | (?P<hexfloat>(?P<hsign>[-+]?)0x(?P<hint>[0-9A-Fa-f]*)(?:\.(?P<hfrac>[0-9A-Fa-f]*))?[pP](?P<hexp>[-+]?\d+))(?![\w.])
  | (?P<decimal>[-+]?\d+\.\d*(?:[eE][-+]?\d+)?)(?![\w.])
  | (?P<word>[A-Za-z_][\w.]*|[-+]?\d+|0x[0-9A-Fa-f]+)
""", re.VERBOSE)


# A cheap pre-filter: lines without any of these cannot hold a literal to rewrite.
_CANDIDATE = re.compile(r"f0x|inf|nan|\d\.|0x[0-9A-Fa-f]*[.pP]")

# An alias scope domain (a self-referencing node) with LLVM 23's disjointness flag as its
# second operand: ``!7 = distinct !{!7, i1 false, !"name"}`` (jaxlib 0.12's XLA writes these
# where its LLVM inlined noalias arguments). LLVM 22's verifier wants one or two operands.
_DOMAIN_FLAG = re.compile(
    r"^(?P<head>\s*(?P<id>![-A-Za-z$._0-9]+)\s*=\s*(?:distinct\s+)?!\{\s*(?P=id))"
    r"(?P<flag>\s*,\s*i1\s+(?:false|true))(?=\s*[,}])")


@dataclass(frozen=True)
class _Edit:
    line: int        # 1-based
    new_col: int     # 1-based start column in the normalized text
    new_len: int
    old_col: int     # 1-based start column in the original text
    old_len: int


def _rewrite_literal(m: re.Match, ty: str) -> str | None:
    """The classic spelling of a new-style float literal of type ``ty``, or None to keep it."""
    f = _FMTS[ty]
    if m.group("bitfp"):
        # f0x<hex>: the raw bits of the value in its own type (LLVM 23 syntax);
        # the old parser has no raw-bits form for float/double other than the
        # double-hex one, so re-spell the same bits classically.
        bits = int(m.group("bitdigits"), 16)
        return _classic(bits, ty) if bits < 1 << f.bits else None
    if m.group("special"):
        # +inf/-inf/+qnan/-qnan/+nan(0xP)/+snan(0xP): new spellings of the
        # special values; NaN payloads exclude the quiet bit.
        neg = m.group("ssign") == "-"
        if m.group("inf"):
            bits = _special_bits("inf", neg, 0, f)
        elif m.group("qnan"):
            bits = _special_bits("qnan", neg, 0, f)
        else:
            payload_text = m.group("payload")
            payload = int(payload_text, 0) if payload_text else 0
            kind = "qnan" if m.group("nankind") == "nan" else "snan"
            if kind == "snan" and payload_text is None:
                payload = 1 << max(f.p - 3, 0)    # APFloat's default sNaN payload
            bits = _special_bits(kind, neg, payload, f)
        return None if bits is None else _classic(bits, ty)
    if m.group("hexfloat"):
        # C99 hex floats (0x1.8p3): the new parser rounds them to the type.
        digits = m.group("hint") + (m.group("hfrac") or "")
        if not digits:
            return None
        value = Fraction(int(digits, 16), 16 ** len(m.group("hfrac") or "")) \
            * Fraction(2) ** int(m.group("hexp"))
        bits = _round_to_bits(value, m.group("hsign") == "-", f)
        return None if bits is None else _classic(bits, ty)
    # Decimal. LLVM 23 prints the shortest decimal that rounds back to the
    # value *in its own type* (2.885390e+00 for a float) and parses decimals
    # by rounding (nearest-even) to the type. LLVM 22 instead requires the
    # decimal to be exact in the type (and wider types to use hex forms), so
    # replace every inexact decimal with the classic hex of the value rounded
    # to the type; exact decimals are left as written.
    text = m.group("decimal")
    neg = text.startswith("-")
    value = Fraction(text.lstrip("+-"))
    if ty in ("half", "bfloat", "float", "double") and _exact_in(value, neg, ty):
        return None
    bits = _round_to_bits(value, neg, f)
    return None if bits is None else _classic(bits, ty)


def _normalize(text: str) -> tuple[str, list[_Edit]]:
    out_lines: list[str] = []
    edits: list[_Edit] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        domain = _DOMAIN_FLAG.match(line) if line.startswith(("!", " ", "\t")) else None
        if domain:   # metadata: no float literal to rewrite on the line
            start, end = domain.span("flag")
            edits.append(_Edit(lineno, start + 1, 0, start + 1, end - start))
            out_lines.append(line[:start] + line[end:])
            continue
        if not _CANDIDATE.search(line):   # fast path: nothing that could need a rewrite
            out_lines.append(line)
            continue
        pieces: list[str] = []
        pos = 0
        new_pos = 0
        ty: str | None = None   # the last type keyword seen on this line
        while pos < len(line):
            m = _TOKEN.match(line, pos)
            if m is None:
                pieces.append(line[pos])
                pos += 1
                new_pos += 1
                continue
            tok = m.group(0)
            replacement = None
            kind = m.lastgroup
            if kind == "word":
                if tok in _FP_TYPES:
                    ty = tok
                elif tok == "ppc_fp128" or _NON_FP_TYPE.match(tok):
                    ty = None
            elif kind in ("bitfp", "special", "hexfloat", "decimal") or m.group("special"):
                if ty is not None:
                    replacement = _rewrite_literal(m, ty)
            if kind == "comment":
                pieces.append(tok)
                break
            if replacement is not None and replacement != tok:
                edits.append(_Edit(lineno, new_pos + 1, len(replacement), pos + 1, len(tok)))
                pieces.append(replacement)
                new_pos += len(replacement)
            else:
                pieces.append(tok)
                new_pos += len(tok)
            pos = m.end()
        out_lines.append("".join(pieces))
    return "\n".join(out_lines), edits


def normalize_llvm_ir(text: str) -> str:
    """Rewrite newer-LLVM (XLA's) textual IR into a form llvmlite 0.50 parses.

    Line-preserving: only tokens within a line are replaced, so line numbers
    of the result are those of the input. Rewrites, each value bit-exact:

    * ``f0x<hex>`` raw-bits float literals -> ``0xH``/``0xR`` (half/bfloat),
      64-bit double-hex ``0x<16 hex>`` (float/double), ``0xL``/``0xK`` (fp128/x86_fp80);
    * ``+inf``/``-inf``/``+qnan``/``-qnan``/``+nan(0xP)``/``+snan(0xP)``
      -> the same bit pattern in those classic forms;
    * decimals not exactly representable in their type (LLVM 23 prints the
      shortest decimal that round-trips in the type, e.g. ``2.885390e+00`` for
      a float) -> the classic hex of the value rounded to the type;
    * C99 hex floats (``0x1.8p3``) -> the classic hex of the rounded value;
    * alias scope domains with LLVM 23's disjointness flag (``!7 = distinct !{!7, i1 false,
      !"name"}``, from jaxlib 0.12's XLA) -> the domain without it: ``i1 false`` is LLVM 22's
      only kind of domain; ``i1 true`` (each scope implicitly ``noalias`` with the others)
      becomes that too, which assumes less and so stays correct.

    Only literals in a floating-point typed position are touched: identifiers,
    strings, comments and metadata names are copied verbatim.

    Nothing else needs rewriting: the other newer-LLVM syntax in XLA's dumps
    (``captures(none)``, ``nocreateundeforpoison``, ``memory(...)``,
    ``range(...)``, ``nuw``/``nusw`` GEPs, ``samesign``, ``splat (...)``,
    ``ptx_kernel``) already parses in llvmlite 0.50's LLVM 22; this was
    checked on XLA output for matmuls, reductions, softmax, sort, scan, conv,
    gather/scatter, RNG, f16/bf16/f64/complex math for sm_80 and sm_90a.
    """
    return _normalize(text)[0]


def _map_col(edits: list[_Edit], line: int, col: int) -> int:
    """Column in the original text of column ``col`` of normalized line ``line``."""
    delta = 0
    for e in edits:
        if e.line != line or e.new_col > col:
            continue
        if col < e.new_col + e.new_len:       # inside a rewritten literal: its start
            return e.old_col
        delta += e.old_len - e.new_len
    return col + delta


# ----------------------------------------------------------------- compiling

_lock = threading.RLock()
_PARSE_ERROR = re.compile(r"<string>:(\d+):(\d+): error: (.*)")


def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def _parse(llvm, llvm_ir: str, filename: str):
    normalized, edits = _normalize(llvm_ir)
    try:
        return llvm.parse_assembly(normalized)
    except RuntimeError as e:
        msg = str(e)
        m = _PARSE_ERROR.search(msg)
        if m is None:
            raise InputError(msg.strip().replace("\n", " "), file=filename) from None
        line, col = int(m.group(1)), int(m.group(2))
        raise InputError(m.group(3).strip(), file=filename, line=line,
                         col=_map_col(edits, line, col)) from None


def _libdevice_candidates() -> list[str]:
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_DIR")]
    roots += sorted(glob.glob("/usr/local/cuda*"), reverse=True) + ["/usr/lib/cuda", "/opt/cuda"]
    out = []
    for r in roots:
        if r:
            out += sorted(glob.glob(os.path.join(r, "nvvm", "libdevice", "libdevice*.bc")))
    # pip's: nvidia/cuda_nvcc (CUDA 12), nvidia/cu13 (nvidia-nvvm), the plugin's CUDA major first.
    from . import tools as cuda_tools

    first = cuda_tools.pip_tools().subdir
    subdirs = sorted((t.subdir for t in cuda_tools.PIP_TOOLS.values()), key=lambda s: s != first)
    for loc in cuda_tools._nvidia_roots():
        for sub in subdirs:
            out += sorted(glob.glob(os.path.join(loc, sub, "nvvm", "libdevice", "*.bc")))
    return out


def _link_libdevice(llvm, module, libdevice: str | None, filename: str) -> None:
    """Link libdevice when the IR calls ``__nv_*`` functions, as XLA does.

    The linked functions get internal linkage, so the pipeline inlines what is
    used and drops the rest (XLA links with LinkOnlyNeeded + internalize).
    """
    needed = [f.name for f in module.functions if f.is_declaration and f.name.startswith("__nv_")]
    if not needed:
        return
    path = libdevice
    if path is None:
        found = _libdevice_candidates()
        path = found[0] if found else None
    if path is None or not os.path.isfile(path):
        raise InputError(f"the IR calls libdevice ({', '.join(needed[:3])}"
                         f"{', ...' if len(needed) > 3 else ''}) but libdevice.10.bc was not found",
                         file=filename, hint="pass libdevice=PATH or set CUDA_HOME")
    try:
        with open(path, "rb") as fh:
            lib = llvm.parse_bitcode(fh.read())
    except OSError as e:
        raise InputError(f"cannot read libdevice: {e.strerror or e}", file=path) from None
    except RuntimeError as e:
        detail = " ".join(str(e).split())
        raise InputError(f"not a libdevice bitcode file: {detail}", file=path) from None
    lib.triple = module.triple
    lib.data_layout = module.data_layout
    defined = {f.name for f in lib.functions if not f.is_declaration}
    try:
        module.link_in(lib)
    except RuntimeError as e:
        raise InputError(f"cannot link libdevice: {' '.join(str(e).split())}", file=path) from None
    for f in module.functions:
        if f.name in defined and not f.is_declaration:
            f.linkage = "internal"


def _collect_dumps(directory: str) -> list[tuple[str, str]]:
    def number(path: str) -> int:
        head = os.path.basename(path).split("-", 1)[0]
        return int(head) if head.isdigit() else 0

    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*.ll")), key=number):
        with open(path, encoding="utf-8", errors="replace") as fh:
            body = fh.read()
        m = re.match(r"; \*\*\* IR Dump After (.+?) on (.+?) \*\*\*", body)
        name = m.group(1) if m else os.path.basename(path).rsplit("-", 2)[-2]
        out.append((name, body))
    return out


def compile_to_ptx(
    llvm_ir: str,
    arch: str = "sm_90a",
    opt_level: int = 3,
    *,
    filename: str = "<input>",
    optimize: bool = True,
    ptx_version: int | str | None = None,
    libdevice: str | None = None,
    print_after_all: Callable[[str, str], None] | None = None,
    assemble: bool = True,
) -> str:
    """Compile (XLA) LLVM IR text to PTX for ``arch`` with llvmlite's NVPTX backend.

    The IR is normalized (see :func:`normalize_llvm_ir`), parsed and verified;
    with ``optimize`` (default) LLVM's ``-O<opt_level>`` module pipeline runs
    (which for NVPTX includes NVVMReflect), then PTX is emitted by a target
    machine at codegen level ``opt_level``. Pass ``optimize=False`` for IR that
    XLA already optimized (``*.ir-with-opt.ll``), which XLA hands straight to
    codegen. ``ptx_version`` (e.g. ``88``, ``"8.8"``, ``"+ptx88"``) defaults
    to XLA's 8.8, or the arch's minimum where that is newer. IR calling
    libdevice (``__nv_*``) is linked with ``libdevice`` (a ``libdevice.10.bc``;
    found under ``CUDA_HOME`` or ``/usr/local/cuda*`` when not given).

    ``print_after_all(pass_name, ir_text)`` is called once per pass of the
    optimization pipeline, in order, with what LLVM's ``-print-after-all``
    printed after it (the IR unit the pass ran on, headed by LLVM's
    ``; *** IR Dump After ...`` line). The calls come after the pipeline has
    finished: LLVM writes the dumps (``-ir-dump-directory``), and they are
    read back from there. Only the IR pipeline is covered (nothing is called
    with ``optimize=False``); codegen's machine passes are not IR passes.
    The options are process-wide LLVM state, so compiles are serialized.

    The compile runs in a helper process (_native/isolate.py), so LLVM's fatal
    errors cannot end the caller. With ``assemble`` (default) the PTX is then
    assembled by ptxas for ``arch`` (:func:`check_with_ptxas`).

    Raises InputError for an unknown arch, unparsable or invalid IR (parse
    errors carry the line and column of the original text), IR that LLVM
    dies on (an intrinsic the arch lacks: named, with the line of its first
    call), or PTX that ptxas rejects; ToolchainError without a usable ptxas.
    """
    if opt_level not in (0, 1, 2, 3):
        raise InputError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    cpu = _canonical_arch(arch)
    ptx = _ptx_feature(cpu, ptx_version)
    from .._native import isolate
    from ..errors import NativeCrash

    # LLVM's fatal errors ("LLVM ERROR: Cannot select: intrinsic ...", for an
    # intrinsic the arch lacks) abort the process: codegen runs in a helper.
    try:
        code, dumps = isolate.call(
            _compile_in_child, (llvm_ir, cpu, ptx, opt_level, filename, optimize, libdevice,
                                print_after_all is not None),
            what=f"LLVM's NVPTX backend ({cpu})", file=filename, preload=("llvmlite.binding",))
    except NativeCrash as e:
        raise _codegen_crash(e, llvm_ir, cpu, filename) from None
    except RuntimeError as e:  # llvmlite: "No available targets are compatible with triple ..."
        raise InputError(str(e).strip().splitlines()[0], file=filename,
                         hint=f"the IR must target {TRIPLE}") from None
    if print_after_all is not None:
        for name, body in dumps:
            print_after_all(name, body)
    if assemble:
        check_with_ptxas(code, cpu, filename)
    return code


def _compile_in_child(llvm_ir: str, cpu: str, ptx: int, opt_level: int, filename: str,
                      optimize: bool, libdevice: str | None,
                      want_dumps: bool) -> tuple[str, list[tuple[str, str]]]:
    """compile_to_ptx's work, run by isolate.call: (PTX, [(pass, IR after it)])."""
    dumps: list[tuple[str, str]] = []
    collect = (lambda name, body: dumps.append((name, body))) if want_dumps else None
    with _lock:
        llvm = _llvm()
        module = _parse(llvm, llvm_ir, filename)
        if module.triple and not module.triple.startswith("nvptx"):
            raise InputError(f"module targets '{module.triple}', not NVPTX", file=filename)
        try:
            module.verify()
        except RuntimeError as e:
            raise InputError("invalid LLVM IR: " + str(e).strip().replace("\n", " "),
                             file=filename) from None
        target = llvm.Target.from_triple(module.triple or TRIPLE)
        tm = target.create_target_machine(cpu=cpu, features=f"+ptx{ptx}", opt=opt_level,
                                          codemodel="default")
        if not module.triple:
            module.triple = TRIPLE
        if not module.data_layout:
            module.data_layout = str(tm.target_data)
        if optimize:
            _link_libdevice(llvm, module, libdevice, filename)
            _optimize(llvm, tm, module, opt_level, collect)
        return tm.emit_assembly(module), dumps


_CANNOT_SELECT = re.compile(r"Cannot select: (?:intrinsic )?%?(llvm\.[\w.]+)")


def _codegen_crash(e: Exception, llvm_ir: str, cpu: str, filename: str) -> InputError:
    """An LLVM fatal error in codegen as one located InputError."""
    m = _CANNOT_SELECT.search(e.message)
    if m is None:
        return InputError(e.message, file=filename)
    name = m.group(1)
    line = col = None
    # LLVM names an overloaded intrinsic without its type suffixes: the IR calls
    # llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16.p3 (jaxlib 0.12's XLA) where it says
    # ...x4.b16. The exact name is looked for first, then the name with suffixes.
    lines = llvm_ir.split("\n")
    for suffixes in ("", r"(?:\.\w+)+"):
        call = re.compile(r"\bcall\b.*@" + re.escape(name) + suffixes + r"\(")
        for number, text in enumerate(lines, start=1):
            if call.search(text.partition(";")[0]):  # not a call in a comment
                line, col = number, text.index("@" + name) + 1
                break
        if line is not None:
            break
    return InputError(f"intrinsic {name} is not available on {cpu}: LLVM cannot select it",
                      file=filename, line=line, col=col,
                      hint="compile for an arch that has it with --arch")


_PTXAS_LINE = re.compile(r"^ptxas[^,\n]*, line (\d+); (?:error|fatal)\s*:\s*(.*)$", re.M)


def check_with_ptxas(code: str, cpu: str, filename: str = "<input>") -> None:
    """Assemble PTX with ptxas for ``cpu``, as XLA does with the PTX it emits.

    Uses the ptxas that device-less compiles use (cuda_tools.ptxas: pip's copy
    for the CUDA plugin's major unless configured otherwise). ToolchainError where there is
    none or it cannot target ``cpu``; InputError naming the PTX line (and
    quoting it) where ptxas rejects the PTX.
    """
    check_all_with_ptxas([("", code)], cpu, filename)


def check_all_with_ptxas(modules: list[tuple[str, str]], cpu: str, filename: str = "<input>") -> None:
    """:func:`check_with_ptxas` for several (name, PTX) modules, ptxas runs side by side.

    ``cpu`` takes any spelling :func:`compile_to_ptx` takes. The first
    rejected module (in order) is reported, by name when it has one.
    """
    import subprocess

    from . import tools as cuda_tools

    cpu = _canonical_arch(cpu)
    try:
        tool = cuda_tools.ptxas()
        tool.require(cpu)
    except ToolchainError as e:
        raise ToolchainError(f"cannot check the PTX with ptxas: {e.message}", file=filename,
                             hint="--no-ptxas (assemble=False) skips the check") from None
    jobs = max(1, os.cpu_count() or 1)
    results: list[subprocess.CompletedProcess] = []
    with tempfile.TemporaryDirectory(prefix="mlirhlo-ptxas-") as d:
        for start in range(0, len(modules), jobs):
            procs = []
            for i, (_, code) in enumerate(modules[start:start + jobs], start=start):
                src = os.path.join(d, f"m{i}.ptx")
                with open(src, "w") as fh:
                    fh.write(code)
                try:
                    procs.append(subprocess.Popen(
                        [tool.path, f"--gpu-name={cpu}", src, "-o", os.path.join(d, f"m{i}.cubin")],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
                except OSError as e:
                    raise ToolchainError(f"cannot run {tool.describe()}: {e}", file=filename) from None
            for p in procs:
                out, _ = p.communicate()
                results.append(subprocess.CompletedProcess(p.args, p.returncode,
                                                           out.decode("utf-8", "replace")))
    for (name, code), proc in zip(modules, results):
        if proc.returncode != 0:
            raise _ptxas_error(proc, code, cpu, name, tool.version_str, filename)


def _ptxas_error(proc, code: str, cpu: str, name: str, version: str, filename: str) -> InputError:
    of = f" of module {name}" if name else ""
    m = _PTXAS_LINE.search(proc.stdout)
    if m is None:
        detail = " ".join(proc.stdout.split())[:300] or f"exit status {proc.returncode}"
        return InputError(f"ptxas {version} rejected the PTX{of} for {cpu}: {detail}", file=filename)
    number = int(m.group(1))
    lines = code.split("\n")
    quoted = lines[number - 1].strip() if 0 < number <= len(lines) else ""
    return InputError(f"ptxas {version} rejected the PTX{of} for {cpu} at PTX line {number}: "
                      f"{m.group(2).strip()}" + (f" [{quoted}]" if quoted else ""), file=filename)


def _optimize(llvm, tm, module, opt_level: int,
              print_after_all: Callable[[str, str], None] | None) -> None:
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    # A fresh PassBuilder per run: llvmlite registers instrumentation
    # callbacks on the builder each time a pass manager runs with it.
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    if print_after_all is None:
        mpm.run(module, pb)
        return
    dump_dir = tempfile.mkdtemp(prefix="mlirhlo-print-after-all-")
    try:
        # -print-after-all is a process-wide LLVM option that the pass
        # instrumentation reads when the pipeline starts; it is switched off
        # again before codegen (whose legacy pass manager would print MIR).
        llvm.set_option("", f"-ir-dump-directory={dump_dir}")
        llvm.set_option("", "-print-after-all=true")
        try:
            mpm.run(module, pb)
        finally:
            llvm.set_option("", "-print-after-all=false")
            llvm.set_option("", "-ir-dump-directory=")
        for name, body in _collect_dumps(dump_dir):
            print_after_all(name, body)
    finally:
        shutil.rmtree(dump_dir, ignore_errors=True)


# The '; ----- NAME -----' lines the llvm stages put between XLA's LLVM modules.
LLVM_MODULE_SEPARATOR = r"^; ----- (\S+) -----$"


def split_llvm_modules(text: str) -> list[tuple[str, int, str]]:
    """(name, line offset, text) of each module; one unnamed part if not joined."""
    import re

    marks = list(re.finditer(LLVM_MODULE_SEPARATOR, text, re.M))
    if not marks:
        return [("", 0, text)]
    parts = []
    for i, m in enumerate(marks):
        start = m.end() + 1
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        parts.append((m.group(1), text.count("\n", 0, start), text[start:end]))
    return parts


def read_llvm_ir(source: str) -> str:
    """The LLVM IR text of a file, or of stdin for ``-``; InputError if unreadable or empty."""
    import sys
    from pathlib import Path

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
    except FileNotFoundError:
        raise InputError("no such file or directory", file=source) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read LLVM IR: {getattr(e, 'strerror', None) or e}", file=source) from None
    if not text.strip():
        raise InputError("empty input" if source == "-" else "empty file", file=source)
    return text


@dataclass(frozen=True)
class PtxOptions:
    """What ``mlirhlo ptx`` and XLA's ``ptx-opt`` ask of :func:`compile_llvm_ir`."""

    arch: str = "sm_90a"
    opt_level: int = 3
    optimize: bool = True          # LLVM's -O pipeline first (off for XLA's already optimized IR)
    libdevice: str | None = None
    check_ptxas: bool = True       # assemble each PTX module with ptxas for arch
    dump_passes: bool = False      # keep the IR after each LLVM pass (PtxResult.dumps)


@dataclass
class PtxResult:
    text: str                                   # the PTX; several modules joined by '// ----- NAME -----'
    modules: list[tuple[str, str]]              # (module name or '', PTX) per module
    dumps: list[tuple[str, str, str]]           # (module name or '', pass name, IR after it)


def compile_llvm_ir(text: str, source: str, options: PtxOptions) -> PtxResult:
    """PTX for LLVM IR text read from ``source`` (for error locations).

    Several modules joined by '; ----- NAME -----' lines (the 'llvm' stages'
    output) are compiled one by one, each keeping the file's line numbers;
    with ``check_ptxas`` all are then assembled by ptxas side by side.
    """
    dumps: list[tuple[str, str, str]] = []
    out, compiled = [], []
    for name, offset, body in split_llvm_modules(text):
        code = compile_to_ptx(
            "\n" * offset + body, options.arch, options.opt_level, filename=source,
            optimize=options.optimize, libdevice=options.libdevice, assemble=False,
            print_after_all=(lambda p, ir, n=name: dumps.append((n, p, ir))) if options.dump_passes else None)
        compiled.append((name, code))
        out.append((f"// ----- {name} -----\n" if name else "") + code)
    if options.check_ptxas:
        check_all_with_ptxas(compiled, options.arch, source)
    return PtxResult("".join(out), compiled, dumps)
