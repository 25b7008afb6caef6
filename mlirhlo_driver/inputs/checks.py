"""Self-checking StableHLO modules: prepare their ``check.*`` assertions for XLA.

StableHLO's test suite writes tests that check themselves, in two forms:

* custom calls, as in ``stablehlo/testdata/*.mlir``::

      stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true}
          : (tensor<20x20xf32>, tensor<20x20xf32>) -> ()

  (also ``@check.expect_eq``, ``@check.expect_almost_eq`` and the older
  ``@check.eq``, which returns a ``tensor<i1>``);
* ops of the ``check`` dialect, as in ``stablehlo/tests/interpret/*.mlir``
  (``check.expect_eq``, ``check.expect_eq_const``, ``check.expect_almost_eq``,
  ``check.expect_almost_eq_const``, ``check.expect_close``). jaxlib does not
  register that dialect, so :func:`preprocess_check_ops` rewrites them, as
  text and line for line, into the custom-call form before parsing.

XLA cannot run a check custom call, so :func:`prepare` takes them out and
returns their operands as extra results of ``@main``; it also turns the
constants that feed the computation into runtime parameters, since XLA would
otherwise constant-fold the whole test at compile time and never run a
backend kernel. The execution engine runs the prepared module and applies
the check semantics of the StableHLO interpreter to its outputs
(``execute.engine.evaluate_checks``; ``stablehlo/tests/CheckOps.cpp``,
``stablehlo/reference/Element.cpp``, ``stablehlo/tools/StablehloTranslateMain.cpp``),
with the options this module gives each :class:`Check`:

``expect_eq``
    exact. Integers and booleans must be equal; floats compare with IEEE
    equality, like ``APFloat::operator==``: ``-0.0 == 0.0`` passes and a NaN
    equals nothing, not even a NaN (use ``expect_close`` or
    ``expect_almost_eq`` where NaNs are expected). Complex: both parts.
``expect_almost_eq`` (tolerance; 1e-4 for the dialect ops, 1e-3 for the custom call)
    per element (each part of a complex): equal, or both NaN, or both finite
    with the same sign and ``|actual - expected| <= tolerance`` (absolute,
    computed in double). A zero and a value of the other sign differ.
``expect_close`` (``min_ulp_difference <= ULP <= max_ulp_difference``; the custom
    call uses [0, 3], the dialect op says its own ``max_ulp_difference``)
    ULP difference: 0 when bitwise equal or both NaN; for finite values
    ``|bits(|a|) - bits(|b|)|``, or ``bits(|a|) + bits(|b|)`` when the signs
    differ (so ``-0.0`` vs ``0.0`` is 0 and ``-x`` vs ``x`` is twice the
    distance to zero); any other pair with a non-finite value is 2**64-1.
    Complex: the larger of the two parts.
``check.eq`` (custom call)
    integers: ``expect_eq``; floats and complex: ``expect_almost_eq`` with
    tolerance 1e-4. Its ``tensor<i1>`` result is replaced by ``true``.

For integer and boolean operands ``expect_almost_eq`` compares
``|a - b| <= tolerance`` and ``expect_close`` counts one ULP per integer step
(the interpreter rejects these types).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._native.guards import LOCATION, first_op
from ..errors import InputError

#: What the dialect ops default to (stablehlo/tests/CheckOps.td).
DIALECT_TOLERANCE = 1e-4
DIALECT_MAX_ULP = 1
#: What the interpreter uses for the custom-call forms (StablehloTranslateMain.cpp).
CUSTOM_CALL_TOLERANCE = 1e-3
CUSTOM_CALL_MAX_ULP = 3
CHECK_EQ_TOLERANCE = 1e-4

# The file name jaxlib's parser gives locations of text parsed from a string
# (inputs.parse_mlir): a rewritten op that does not start where the check op
# did gets an explicit location in the same form.
_PARSER_FILENAME = "-"

KINDS = ("expect_eq", "expect_almost_eq", "expect_close")


# ============================================================ text rewriting

_IDENT_CHARS = re.compile(r"[\w$.\-]")
_SSA = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_NAME = re.compile(r"[A-Za-z_][\w$.]*")
_NUMBER = re.compile(r"[-+]?(?:0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)")
_INT_TYPE = re.compile(r"(?:ui|si|i)\d+\b")
_FLOAT_TYPE = re.compile(r"(?:f16|f32|f64|bf16)\b")
_ELEMENTS_ATTR = re.compile(r"(?:dense|dense_resource|sparse|array)<")

# Ops of the check dialect (and the first version's check.eq / check.almost_eq,
# which are the _const forms).
_CONST_OPS = {"expect_eq_const": "expect_eq", "expect_almost_eq_const": "expect_almost_eq",
              "eq": "expect_eq", "almost_eq": "expect_almost_eq"}
_VALUE_OPS = {"expect_eq": "expect_eq", "expect_almost_eq": "expect_almost_eq",
              "expect_close": "expect_close"}


def preprocess_check_ops(text: str, source: str, *, line_offset: int = 0) -> str:
    """Rewrite ``check`` dialect ops into ``stablehlo.custom_call @check.*`` ops.

    Every other line and column stays where it was: a rewritten op keeps its
    first line and column (an ``_const`` form becomes a ``stablehlo.constant``
    and the custom call on the same line, the call with an explicit
    ``loc(...)`` of the original op), and an op spread over several lines
    still covers as many. Options the dialect ops carry (``tolerance``,
    ``max_ulp_difference``, ``min_ulp_difference``) become attributes of the
    custom call, defaults included. A check op that cannot be rewritten
    raises InputError with its line (plus ``line_offset``, the chunk's first
    line in its file) and column.
    """
    if "check." not in text:
        return text
    out: list[str] = []
    last = 0
    for start in _find_check_ops(text):
        if start < last:
            continue
        parser = _Parser(text, start, source, line_offset)
        replacement, end = parser.rewrite()
        original = text[start:end]
        missing = original.count("\n") - replacement.count("\n")
        out.append(text[last:start])
        out.append(replacement + "\n" * max(missing, 0))
        last = end
    out.append(text[last:])
    return "".join(out)


def _find_check_ops(text: str) -> list[int]:
    """Offsets of check dialect ops: outside comments and strings, not ``@check.``."""
    found = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch == '"':
            j = _string_end(text, i)
            prev = _prev_nonspace(text, i)
            if text.startswith('"check.', i) and prev != "@" and \
                    _next_nonspace(text, j) == "(":
                found.append(i)
            i = j
            continue
        if ch == "c" and text.startswith("check.", i):
            prev = text[i - 1] if i else " "
            if not (_IDENT_CHARS.match(prev) or prev in "@%#!^"):
                found.append(i)
            i += 6
            continue
        i += 1
    return found


def _string_end(text: str, i: int) -> int:
    """Offset just past the string literal starting at ``text[i] == '"'``."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return j + 1
        if text[j] == "\n":
            break
        j += 1
    return j


def _prev_nonspace(text: str, i: int, spaces: str = " \t") -> str:
    j = i - 1
    while j >= 0 and text[j] in spaces:
        j -= 1
    return text[j] if j >= 0 else ""


def _next_nonspace(text: str, i: int) -> str:
    j = i
    while j < len(text) and text[j] in " \t":
        j += 1
    return text[j] if j < len(text) else ""


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


def _mlir_float(value: float) -> str:
    """A float literal MLIR's parser accepts (it needs a '.')."""
    s = repr(float(value))
    if "e" in s and "." not in s:
        mantissa, exp = s.split("e")
        s = f"{mantissa}.0e{exp}"
    return s


_OPENERS = {"(": ")", "[": "]", "{": "}", "<": ">"}


class _Parser:
    """A small recursive-descent reader of one check op, from its first character."""

    def __init__(self, text: str, start: int, source: str, line_offset: int = 0) -> None:
        self.line_offset = line_offset
        self.text = text
        self.start = start
        self.pos = start
        self.source = source
        self.op = ""
        # The expected operand's type where the op spells it apart from the
        # actual one's (a dynamic result checked against a static constant).
        self.expected_type: str | None = None
        # Where each attribute's value starts (attr_dict), so a bad one is reported there.
        self.value_at: dict[str, int] = {}

    # ---------------------------------------------------------------- errors
    def error(self, message: str, pos: int | None = None) -> InputError:
        line, col = _line_col(self.text, self.pos if pos is None else pos)
        what = f"cannot rewrite {self.op}: " if self.op else ""
        return InputError(what + message, file=self.source, line=line + self.line_offset, col=col)

    # ---------------------------------------------------------------- lexing
    def _skip(self, pos: int) -> int:
        """The first offset at or after ``pos`` that is not whitespace or a comment."""
        t, n = self.text, len(self.text)
        while pos < n:
            if t[pos] in " \t\r\n":
                pos += 1
            elif t.startswith("//", pos):
                j = t.find("\n", pos)
                pos = n if j < 0 else j
            else:
                break
        return pos

    def ws(self) -> None:
        self.pos = self._skip(self.pos)

    def peek(self, s: str) -> bool:
        """Whether ``s`` comes next (after whitespace); consumes nothing."""
        return self.text.startswith(s, self._skip(self.pos))

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos = self._skip(self.pos) + len(s)
            return True
        return False

    def expect(self, s: str, what: str | None = None) -> None:
        if not self.accept(s):
            raise self.error(f"expected {what or repr(s)}")

    def regex(self, pattern: re.Pattern, what: str) -> str:
        self.ws()
        m = pattern.match(self.text, self.pos)
        if not m:
            raise self.error(f"expected {what}")
        self.pos = m.end()
        return m.group(0)

    def ssa(self) -> str:
        return self.regex(_SSA, "an SSA value like %0")

    def balanced(self) -> str:
        """From an opening bracket to its match (strings and '->' skipped)."""
        t, start = self.text, self.pos
        stack = [_OPENERS[t[start]]]
        j = start + 1
        while j < len(t):
            ch = t[j]
            if ch == '"':
                j = _string_end(t, j)
                continue
            if ch == "-" and t.startswith("->", j):
                j += 2
                continue
            if ch in _OPENERS:
                stack.append(_OPENERS[ch])
            elif ch in ")]}>":
                if ch != stack[-1]:
                    raise self.error(f"unbalanced '{ch}'", j)
                stack.pop()
                if not stack:
                    self.pos = j + 1
                    return t[start:j + 1]
            j += 1
        raise self.error(f"unterminated '{t[start]}'", start)

    def type_(self) -> str:
        """A type: ``tensor<...>``, ``!dialect.type<...>``, ``f32``, ``(T, T)``..."""
        self.ws()
        t, start = self.text, self.pos
        if self.pos < len(t) and t[self.pos] == "(":
            self.balanced()
            return t[start:self.pos]
        if self.pos < len(t) and t[self.pos] == "!":
            self.pos += 1
        m = _NAME.match(t, self.pos)
        if not m:
            raise self.error("expected a type")
        self.pos = m.end()
        if self.pos < len(t) and t[self.pos] == "<":
            self.balanced()
        return t[start:self.pos]

    def elements_attr(self) -> tuple[str, str]:
        """``dense<...> : tensor<...>`` -> (the whole text, its type)."""
        self.ws()
        start = self.pos
        m = _ELEMENTS_ATTR.match(self.text, self.pos)
        if not m:
            raise self.error("expected an elements attribute like dense<...> : tensor<...>")
        self.pos = m.end() - 1
        self.balanced()
        self.expect(":", "':' and the attribute's type")
        type_ = self.type_()
        return self.text[start:self.pos], type_

    def attr_value(self) -> str:
        """Text of one attribute value, up to a top-level ',' or closing bracket."""
        self.ws()
        t, start = self.text, self.pos
        j = start
        while j < len(t):
            ch = t[j]
            if ch == '"':
                j = _string_end(t, j)
                continue
            if ch == "-" and t.startswith("->", j):
                j += 2
                continue
            if ch in _OPENERS:
                self.pos = j
                self.balanced()
                j = self.pos
                continue
            if ch in ",)]}>":
                break
            j += 1
        self.pos = j
        value = t[start:j].strip()
        if not value:
            raise self.error("expected an attribute value")
        return value

    def attr_dict(self) -> dict[str, str]:
        """``{name = value, flag}`` -> {name: value text}; the '{' is next."""
        self.expect("{")
        entries: dict[str, str] = {}
        if self.accept("}"):
            return entries
        while True:
            self.ws()
            if self.peek('"'):
                j = _string_end(self.text, self.pos)
                name = self.text[self.pos + 1:j - 1]
                self.pos = j
            else:
                name = self.regex(_NAME, "an attribute name")
            if self.accept("="):
                self.ws()
                self.value_at[name] = self.pos
                entries[name] = self.attr_value()
            else:
                entries[name] = "unit"
            if self.accept("}"):
                return entries
            self.expect(",", "',' or '}'")

    # ------------------------------------------------------------- op forms
    def rewrite(self) -> tuple[str, int]:
        t = self.text
        line, col = _line_col(t, self.start)
        prev = _prev_token_before(t, self.start)
        generic = t[self.start] == '"'
        if generic:
            end = _string_end(t, self.start)
            name = t[self.start + 1:end - 1]
            self.pos = end
        else:
            m = _NAME.match(t, self.start)
            name = m.group(0)
            self.pos = m.end()
        self.op = name
        if prev == "=":
            raise self.error("a check op has no results", self.start)
        short = name[len("check."):]
        if short == "expect_serialized_eq":
            raise self.error("needs tensors that the interpreter's probe instrumentation "
                             "serialized (index.csv); only the interpreter runs it", self.start)
        if short not in _CONST_OPS and short not in _VALUE_OPS:
            raise self.error("unknown check op (expected one of check.expect_eq, "
                             "check.expect_eq_const, check.expect_almost_eq, "
                             "check.expect_almost_eq_const, check.expect_close)", self.start)
        if generic:
            form = self._generic(short)
        elif self.peek("("):
            form = self._parenthesized(short)
        else:
            form = self._pretty(short)
        actual, expected, value, type_, opts = form
        kind = _CONST_OPS.get(short) or _VALUE_OPS[short]
        attrs = ["has_side_effect = true"]
        if kind == "expect_almost_eq":
            tol = opts.get("tolerance", DIALECT_TOLERANCE)
            attrs.append(f"tolerance = {_mlir_float(tol)} : f64")
        elif kind == "expect_close":
            attrs.append(f"max_ulp_difference = {opts.get('max_ulp_difference', DIALECT_MAX_ULP)} : i64")
            attrs.append(f"min_ulp_difference = {opts.get('min_ulp_difference', 0)} : i64")
        end = self.pos
        prefix = ""
        loc = ""
        if value is not None:
            expected = _fresh_name(t, f"%check_expected_{line}_{col}")
            prefix = f"{expected} = stablehlo.constant {value} "
            if not _trailing_loc(t, end):
                loc = f' loc("{_PARSER_FILENAME}":{line}:{col})'
        call = (f"stablehlo.custom_call @check.{kind}({actual}, {expected}) "
                f"{{{', '.join(attrs)}}} : ({type_}, {self.expected_type or type_}) -> (){loc}")
        return prefix + call, end

    def _options(self, entries: dict[str, str]) -> dict[str, Any]:
        opts: dict[str, Any] = {}
        for key, raw in entries.items():
            if key not in ("tolerance", "max_ulp_difference", "min_ulp_difference"):
                continue
            text = raw.split(":")[0].strip()
            try:
                if key == "tolerance":
                    opts[key] = float(text)
                else:
                    opts[key] = int(text, 16) if text.lower().lstrip("+-").startswith("0x") \
                        else int(text)
            except ValueError:
                raise self.error(f"malformed {key} '{raw}'", self.value_at.get(key)) from None
        return opts

    def _keyword_options(self, names: tuple[str, ...]) -> dict[str, Any]:
        """``, name = NUMBER (: type)?`` repeated (the pretty forms' options)."""
        opts: dict[str, Any] = {}
        while True:
            save = self.pos
            if not self.accept(","):
                break
            self.ws()
            m = _NAME.match(self.text, self.pos)
            if not m or m.group(0) not in names:
                self.pos = save
                break
            self.pos = m.end()
            self.expect("=")
            number = self.regex(_NUMBER, f"a number for {m.group(0)}")
            # An attribute type (`: f64`, `: ui64`), never the op's tensor type.
            save2 = self.pos
            if self.accept(":"):
                self.ws()
                pattern = _FLOAT_TYPE if m.group(0) == "tolerance" else _INT_TYPE
                tm = pattern.match(self.text, self.pos)
                if tm:
                    self.pos = tm.end()
                else:
                    self.pos = save2
            opts.update(self._options({m.group(0): number}))
        return opts

    def _optional_attr_dict(self) -> dict[str, Any]:
        if self.peek("{"):
            return self._options(self.attr_dict())
        return {}

    def _pretty(self, short: str):
        actual = self.ssa()
        self.expect(",")
        if short in _CONST_OPS:
            value, type_ = self.elements_attr()
            opts = self._keyword_options(("tolerance",))
            opts.update(self._optional_attr_dict())
            return actual, None, value, type_, opts
        expected = self.ssa()
        if short == "expect_close":
            opts = self._keyword_options(("max_ulp_difference", "min_ulp_difference"))
            if "max_ulp_difference" not in opts:
                raise self.error("expected ', max_ulp_difference = N'")
            self.expect(":")
            opts.update(self._optional_attr_dict())
            type_ = self.type_()
            self.expect(",", "',' and the expected operand's type")
            self.expected_type = self.type_()
            return actual, expected, None, type_, opts
        opts = self._keyword_options(("tolerance",))
        opts.update(self._optional_attr_dict())
        self.expect(":", "':' and the operands' type")
        type_ = self.type_()
        if self.accept(","):  # both operands' types, as the parenthesized form allows
            self.expected_type = self.type_()
        return actual, expected, None, type_, opts

    def _parenthesized(self, short: str):
        """IREE's spelling: ``check.expect_eq(%a, %b) : T``, ``..._const(%a, dense<..> : T) : T``."""
        self.expect("(")
        actual = self.ssa()
        self.expect(",")
        value = expected = None
        if short in _CONST_OPS:
            value, _ = self.elements_attr()
        else:
            expected = self.ssa()
        opts = self._keyword_options(("tolerance", "max_ulp_difference", "min_ulp_difference"))
        self.expect(")")
        opts.update(self._optional_attr_dict())
        self.expect(":", "':' and the operand type")
        type_ = self.type_()
        if self.accept(","):
            second = self.type_()
            if expected is not None:
                self.expected_type = second
        return actual, expected, value, type_, opts

    def _generic(self, short: str):
        """``"check.expect_close"(%a, %b) <{props}> {attrs} : (T, T) -> ()``."""
        self.expect("(")
        operands = []
        if not self.accept(")"):
            while True:
                operands.append(self.ssa())
                if self.accept(")"):
                    break
                self.expect(",", "',' or ')'")
        entries: dict[str, str] = {}
        if self.peek("<{"):
            self.expect("<")
            entries.update(self.attr_dict())
            self.expect(">")
        if self.peek("{"):
            entries.update(self.attr_dict())
        self.expect(":", "':' and the function type")
        self.ws()
        if not self.peek("("):
            raise self.error("expected a function type like (T, T) -> ()")
        types = _split_top(self.balanced()[1:-1])
        self.expect("->")
        self.type_()
        opts = self._options(entries)
        want = 1 if short in _CONST_OPS else 2
        if len(operands) != want or len(types) != want:
            what, found = ("operand", len(operands)) if len(operands) != want else ("operand type", len(types))
            raise self.error(f"expected {want} {what}{'s' if want > 1 else ''}, found {found}", self.start)
        if short in _CONST_OPS:
            if "value" not in entries:
                raise self.error("missing the 'value' attribute", self.start)
            return operands[0], None, entries["value"], types[0], opts
        self.expected_type = types[1]
        return operands[0], operands[1], None, types[0], opts


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts, depth, cur = [], 0, []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "-" and text.startswith("->", i):
            cur.append("->")
            i += 2
            continue
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _prev_token_before(text: str, i: int) -> str:
    return _prev_nonspace(text, i, " \t\r\n")


def _trailing_loc(text: str, i: int) -> bool:
    return re.match(r"\s*loc\(", text[i:i + 200]) is not None


def _fresh_name(text: str, base: str) -> str:
    name, k = base, 0
    while re.search(re.escape(name) + r"(?![\w$.\-])", text):
        k += 1
        name = f"{base}_{k}"
    return name


# ============================================================ module surgery

@dataclass
class Check:
    """One check of a prepared module; indices are into the module's outputs."""

    kind: str                 # expect_eq | expect_almost_eq | expect_close
    actual_index: int
    expected_index: int
    options: dict[str, Any] = field(default_factory=dict)
    location: str = ""        # file:line:col of the check op
    target: str = ""          # the custom call target as written (check.eq, ...)


@dataclass
class CheckPlan:
    """A runnable module (checks removed) and what to feed and compare."""

    module: Any                       # ir.Module, @main without check custom calls
    parameters: list[Any]             # numpy arrays for the new @main arguments, in order
    num_original_params: int          # @main's own arguments, first, without values here
    num_original_results: int         # @main's own results, first among the outputs
    checks: list[Check]
    folded: bool                      # True: constants left for XLA to fold
    x64: bool = False                 # the module has 64-bit types (jax x64 was enabled)
    kept: list[KeptConstant] = field(default_factory=list)  # constants XLA must see as constants


@dataclass
class KeptConstant:
    """A constant that stays one in the prepared module, and why."""

    location: str             # file:line:col of the constant (in @inputs for its values)
    type: str
    reasons: list[str]        # the operands that need it, e.g. "stablehlo.dynamic_reshape output shape"
    from_inputs: bool         # a value @inputs() returns
    also_parameter: bool      # its other uses read a parameter

    def describe(self) -> str:
        return f"{self.location} {self.type} ({'; '.join(self.reasons)})"


@dataclass
class Provenance:
    """Where a prepared module's checked values came from, read from XLA's optimized HLO.

    ``compiled``: every checked value is computed from an entry parameter, by the
    code XLA generated. ``folded``: none is (XLA computed them while compiling,
    with its constant folder). ``partly folded``: some are. ``unknown``: no
    optimized module to read.
    """

    state: str
    from_parameters: int = 0
    total: int = 0

    def describe(self) -> str:
        n, t = self.from_parameters, self.total
        if self.state == "compiled":
            return f"compiled ({n} of {t} computed from parameters by XLA's generated code)"
        if self.state == "folded":
            return (f"folded (none of {t} depends on a parameter: XLA computed "
                    f"{'it' if t == 1 else 'them'} while compiling)")
        if self.state == "partly folded":
            return f"partly folded ({n} of {t} computed from parameters, the rest while compiling)"
        return "unknown (no optimized HLO to read)"


def checked_values(plan: CheckPlan, outputs_from_parameters: list[bool] | None) -> Provenance:
    """The provenance of ``plan``'s checked (actual) values, from which of the compiled
    module's outputs depend on its parameters (ir.hlo_dataflow.outputs_from_parameters)."""
    indices = sorted({c.actual_index for c in plan.checks})
    if outputs_from_parameters is None or any(i >= len(outputs_from_parameters) for i in indices):
        return Provenance("unknown", 0, len(indices))
    n = sum(bool(outputs_from_parameters[i]) for i in indices)
    state = "compiled" if n == len(indices) else "folded" if n == 0 else "partly folded"
    return Provenance(state, n, len(indices))


def kept_note(plan: CheckPlan) -> str:
    """``kept N constant(s) (reason, ...)`` for a plan that kept some, else ''."""
    if not plan.kept:
        return ""
    reasons: list[str] = []
    for k in plan.kept:
        reasons += [r for r in k.reasons if r not in reasons]
    n = len(plan.kept)
    return f"kept {n} constant{'s' if n != 1 else ''} ({', '.join(reasons)})"


def _is_check_call(op: Any) -> bool:
    from jaxlib.mlir import ir

    if op.name != "stablehlo.custom_call":
        return False
    try:
        target = ir.StringAttr(op.attributes["call_target_name"]).value
    except (KeyError, ValueError):
        return False
    return target.startswith("check.")


def has_checks(module: Any) -> bool:
    """Whether any ``stablehlo.custom_call`` targets ``check.*``."""
    return first_op(module, _is_check_call) is not None


def _location(op: Any, source: str | None, line_offset: int) -> tuple[str, int | None, int | None]:
    """(``file:line:col``, line, col) of an op's location (the first file one found)."""
    m = LOCATION.search(str(op.location))
    if not m:
        return (source or "<unknown>"), None, None
    file, line, col = m.group(1), int(m.group(2)), int(m.group(3))
    if file == _PARSER_FILENAME:
        line += line_offset  # a chunk's own line: the loader names a file's ops at the file's lines
    if source is not None:
        file = source
    if not file or file == _PARSER_FILENAME:
        return f"{line}:{col}", line, col
    return f"{file}:{line}:{col}", line, col


def _entry_function(module: Any, source: str | None) -> Any:
    """@main, else the one public function (interpret tests name theirs freely)."""
    from jaxlib.mlir import ir

    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    by_name = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in funcs}
    if "main" in by_name:
        return by_name["main"]
    public = [f for f in funcs if "sym_visibility" not in f.attributes
              or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"]
    if len(public) == 1:
        entry = public[0]
        entry.attributes["sym_name"] = ir.StringAttr.get("main")  # XLA runs @main
        return entry
    raise InputError("a self-checking module needs a @main function (or exactly one public one)",
                     file=source)


def _symbol_ref_name(attr: Any) -> str:
    from jaxlib.mlir import ir

    return ir.FlatSymbolRefAttr(attr).value


def _inline_constant_calls(module: Any, block: Any) -> list[Any]:
    """Replace calls to functions that only return constants with those constants;
    returns the constant ops made (the values ``@inputs()`` and ``@expected()`` return)."""
    from jaxlib.mlir import ir

    made: list[Any] = []
    funcs = {ir.StringAttr(op.attributes["sym_name"]).value: op
             for op in module.body.operations if op.operation.name == "func.func"}
    inlined: set[str] = set()
    for op in list(block.operations):
        op = op.operation
        if op.name != "func.call":
            continue
        callee = funcs.get(_symbol_ref_name(op.attributes["callee"]))
        if callee is None or not len(callee.regions[0].blocks):
            continue
        body = callee.regions[0].blocks[0]
        ops = [o.operation for o in body.operations]
        ret = ops[-1]
        if len(body.arguments) or any(o.name != "stablehlo.constant" for o in ops[:-1]):
            continue
        defining = []
        for v in ret.operands:
            owner = v.owner
            if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
                owner = owner.operation
            if not isinstance(owner, ir.Operation) or owner.name != "stablehlo.constant":
                break
            defining.append(owner)
        else:
            with ir.InsertionPoint(op):
                clones = {}
                for res, const in zip(op.results, defining):
                    key = id(const)
                    if key not in clones:
                        clones[key] = const.clone()
                        made.append(clones[key].operation)
                    res.replace_all_uses_with(clones[key].result)
            inlined.add(ir.StringAttr(callee.attributes["sym_name"]).value)
            op.erase()
    # Drop private callees nothing refers to any more.
    for name in inlined:
        f = funcs[name]
        vis = f.attributes["sym_visibility"] if "sym_visibility" in f.attributes else None
        if vis is None or ir.StringAttr(vis).value != "private":
            continue
        if not _symbol_used(module, name):
            f.operation.erase()
    return made


def _symbol_used(module: Any, name: str) -> bool:
    return first_op(module, lambda op: op.name == "func.call"
                    and _symbol_ref_name(op.attributes["callee"]) == name) is not None


def _element_type(type_: Any) -> str | None:
    from jaxlib.mlir import ir

    try:
        return str(ir.ShapedType(type_).element_type)
    except ValueError:
        return None


_X64_ELEMENTS = {"i64", "ui64", "si64", "f64", "complex<f64>"}


def needs_x64(module: Any) -> bool:
    """Whether any value in the module has a 64-bit element type."""

    def wide(op: Any) -> bool:
        types = [r.type for r in op.results]
        for region in op.regions:
            for block in region.blocks:
                types.extend(a.type for a in block.arguments)
        return any(_element_type(t) in _X64_ELEMENTS for t in types)

    return first_op(module, wide) is not None


# Operands that give a result's shape, by op and operand number: XLA compiles static
# shapes only, and jaxlib's conversion turns these ops into their static forms only
# while the operand is a constant (a parameter there makes the result dynamic).
_SHAPE_OPERANDS = {
    "stablehlo.dynamic_broadcast_in_dim": {1: "output dimensions"},
    "stablehlo.dynamic_reshape": {1: "output shape"},
    "stablehlo.dynamic_iota": {0: "output shape"},
    "stablehlo.dynamic_pad": {2: "low padding", 3: "high padding", 4: "interior padding"},
    "stablehlo.real_dynamic_slice": {1: "start indices", 2: "limit indices", 3: "strides"},
    "stablehlo.dynamic_gather": {2: "slice sizes"},
    "stablehlo.dynamic_conv": {2: "padding"},
    "stablehlo.rng": {2: "shape"},
}


def _kept_reason(owner: Any, operand_number: int) -> str | None:
    """Why this operand must stay a constant for XLA, or None where a parameter does."""
    from jaxlib.mlir import ir

    roles = _SHAPE_OPERANDS.get(owner.name)
    if roles is not None:
        role = roles.get(operand_number)
        return None if role is None else f"{owner.name} {role}"
    if owner.name == "stablehlo.custom_call":
        # What a custom call does with its operands is its target's business (some
        # read them as shapes or attributes at compile time): left as written.
        try:
            target = ir.StringAttr(owner.attributes["call_target_name"]).value
        except (KeyError, ValueError):
            target = "?"
        return f"operand of stablehlo.custom_call @{target}"
    return None

# jaxlib's StableHLO -> HLO conversion folds an integer division or remainder
# whose operands are both constants, and a zero divisor then kills the whole
# process (SIGFPE) before XLA sees the module. The interpret tests divide by
# zero on purpose, with splat constants: those become parameters too.
_INT_DIVISION_OPS = ("stablehlo.divide", "stablehlo.remainder")
_INT_ELEMENT = re.compile(r"(?:ui|si|i)\d+")


def _feeds_integer_division(op: Any) -> bool:
    """Whether a constant is an operand of an integer divide or remainder."""
    for use in op.result.uses:
        owner = use.owner
        owner = owner.operation if hasattr(owner, "operation") else owner
        if owner.name in _INT_DIVISION_OPS and \
                _INT_ELEMENT.fullmatch(_element_type(owner.results[0].type) or ""):
            return True
    return False


def _isa(attr: Any, cls: Any) -> bool:
    """Whether an attribute is of an attribute class (the bindings downcast, mostly)."""
    if isinstance(attr, cls):
        return True
    try:
        cls(attr)
        return True
    except (ValueError, TypeError):
        return False


def _named_attrs(attrs: Any) -> dict[str, Any]:
    """name -> attribute of an op's attributes or a DictAttr."""
    out: dict[str, Any] = {}
    for item in attrs:
        if isinstance(item, str):
            out[item] = attrs[item]
        else:  # a NamedAttribute
            out[item.name] = item.attr
    return out


_CONSTANT_VALUE = re.compile(r"stablehlo\.constant\s+(?:\{[^}]*\}\s*)?(dense(?:_resource)?<)(.?)")


def _inside(op: Any, ancestor: Any) -> bool:
    """Whether ``op`` is nested (at any depth) in ``ancestor``."""
    parent = op.parent
    while parent is not None:
        parent = parent.operation if hasattr(parent, "operation") else parent
        if parent == ancestor:
            return True
        parent = parent.parent
    return False


def _is_splat_constant(op: Any) -> bool:
    """Whether a stablehlo.constant holds one repeated value (or none).

    Read from the op's text with large elements elided: the bindings cannot
    even hand out a complex DenseElementsAttr (``op.attributes["value"]``
    raises), and a splat always prints as one element.
    """
    text = op.get_asm(large_elements_limit=16)
    m = _CONSTANT_VALUE.search(text)
    if m is None:
        return False
    if m.group(1) == "dense_resource<":
        return False
    return m.group(2) not in ('[', '"')


def _check_options(op: Any, target: str) -> dict[str, Any]:
    """tolerance / ULP limits from the op's attributes (or a dict/JSON backend_config)."""
    from jaxlib.mlir import ir

    raw = _named_attrs(op.attributes)
    config = raw.get("backend_config")
    merged: dict[str, Any] = {}
    if config is not None:
        if _isa(config, ir.DictAttr):
            merged.update(_named_attrs(ir.DictAttr(config)))
        elif _isa(config, ir.StringAttr):
            try:
                decoded = json.loads(ir.StringAttr(config).value or "{}")
            except ValueError:
                decoded = None
            if isinstance(decoded, dict):
                merged.update(decoded)
    merged.update(raw)
    opts: dict[str, Any] = {}
    for key in ("tolerance", "max_ulp_difference", "min_ulp_difference"):
        if key not in merged:
            continue
        value = merged[key]
        if isinstance(value, ir.Attribute):
            if _isa(value, ir.FloatAttr):
                value = ir.FloatAttr(value).value
            elif _isa(value, ir.IntegerAttr):
                value = ir.IntegerAttr(value).value
            elif _isa(value, ir.StringAttr):
                value = ir.StringAttr(value).value
            else:
                continue
        try:
            opts[key] = float(value) if key == "tolerance" else int(value)
        except (TypeError, ValueError):
            continue
    return opts


def prepare(module: Any, *, evaluate: Callable[[Any, bool], list[Any]], fold_constants: bool = False,
            source: str | None = None, line_offset: int = 0) -> CheckPlan:
    """A runnable copy of a self-checking module (the input is not changed).

    In the copy's @main: calls to functions that only return constants
    (``@inputs``/``@expected``) are replaced by those constants; every check
    custom call is removed and its operands become extra results (each value
    once; an original result is reused); unless ``fold_constants``, every
    value ``@inputs()`` (any inlined constant call) returns, splats included,
    every other non-splat ``stablehlo.constant`` of @main, and every constant
    operand of an integer divide or remainder, where it feeds the computation
    (is used by an op other than a check or the return), becomes a new
    trailing argument, whose value ``parameters`` holds. Uses that XLA needs
    as constants (shape operands of the dynamic-shape ops, custom call
    operands: ``_kept_reason``) keep reading the constant, and ``kept`` says
    which and why. ``source``/``line_offset`` name the file and the chunk's
    first line for check locations. ``evaluate(module, x64)``: the host values of a
    module's results, run by XLA (xla.backend.run_on_host): the constants numpy cannot
    read from their attributes (bf16, f8, complex) are computed by it.
    """
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func

    from ..ir import emit

    m = emit.clone(module)
    with m.context, ir.Location.unknown():
        entry = _entry_function(m, source)
        block = entry.regions[0].blocks[0]
        inlined = _inline_constant_calls(m, block)

        # Check calls must be top-level ops of the entry function.
        misplaced = first_op(m, lambda op: _is_check_call(op) and op.parent is not None
                             and op.parent != entry.operation)
        if misplaced is not None:
            loc, line, col = _location(misplaced, source, line_offset)
            raise InputError("a check must be a top-level op of @main (found one in a nested "
                             "region or another function)", file=source, line=line, col=col)

        ops = [o.operation for o in block.operations]
        ret = ops[-1]
        check_ops = [o for o in ops if _is_check_call(o)]

        results = list(ret.operands)
        num_original_results = len(results)
        num_original_params = len(block.arguments)
        extra: list[Any] = []

        def output_index(value: Any) -> int:
            for i, r in enumerate(results):
                if r == value:
                    return i
            results.append(value)
            extra.append(value)
            return len(results) - 1

        plan_checks: list[Check] = []
        for op in check_ops:
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            loc, line, col = _location(op, source, line_offset)
            if len(op.operands) != 2:
                raise InputError(f"{target} needs 2 operands (actual, expected), found "
                                 f"{len(op.operands)}", file=source, line=line, col=col)
            actual, expected = op.operands[0], op.operands[1]
            opts = _check_options(op, target)
            if target == "check.expect_eq":
                kind = "expect_eq"
            elif target == "check.expect_almost_eq":
                kind = "expect_almost_eq"
                opts.setdefault("tolerance", CUSTOM_CALL_TOLERANCE)
            elif target == "check.expect_close":
                kind = "expect_close"
                opts.setdefault("max_ulp_difference", CUSTOM_CALL_MAX_ULP)
                opts.setdefault("min_ulp_difference", 0)
            elif target == "check.eq":
                is_int = _element_type(expected.type) not in (None,) and \
                    re.fullmatch(r"(?:ui|si|i)\d+", _element_type(expected.type) or "") is not None
                kind = "expect_eq" if is_int else "expect_almost_eq"
                if not is_int:
                    opts.setdefault("tolerance", CHECK_EQ_TOLERANCE)
            else:
                raise InputError(f"unknown check custom call '{target}'", file=source, line=line,
                                 col=col, hint="one of check.expect_eq, check.expect_almost_eq, "
                                 "check.expect_close, check.eq")
            plan_checks.append(Check(kind, output_index(actual), output_index(expected), opts,
                                     loc, target))

        # Remove the checks (check.eq's i1 result becomes `true`).
        for op in check_ops:
            for res in op.results:
                if len(list(res.uses)):
                    with ir.InsertionPoint(op):
                        true = ir.Operation.create(
                            "stablehlo.constant", results=[res.type],
                            attributes={"value": ir.DenseElementsAttr.get_splat(
                                res.type, ir.BoolAttr.get(True))})
                    res.replace_all_uses_with(true.result)
                    for i, r in enumerate(results):
                        if r == res:
                            results[i] = true.result

        # Constants that feed the computation become parameters: every value that
        # @inputs() returns (splats too: XLA folds a splat as readily as any other
        # constant), and @main's own non-splat constants (its splats are mostly
        # init values and bounds, as jax writes them). An operand XLA must see as a
        # constant keeps it (_kept_reason); the constant's other uses still read
        # the parameter.
        params_consts: list[tuple[Any, list[tuple[Any, int]]]] = []
        kept: list[KeptConstant] = []
        if not fold_constants:
            for op in ops:
                if op.name != "stablehlo.constant":
                    continue
                from_inputs = any(op == c for c in inlined)
                if not from_inputs and _is_splat_constant(op) and not _feeds_integer_division(op):
                    continue
                lift: list[tuple[Any, int]] = []
                reasons: list[str] = []
                for use in op.result.uses:
                    owner = use.owner
                    owner = owner.operation if hasattr(owner, "operation") else owner
                    if owner == ret or any(owner == c for c in check_ops):
                        continue
                    # A use inside a region (while body, if branch) is an implicit
                    # capture, which XLA takes from a parameter too.
                    reason = _kept_reason(owner, use.operand_number)
                    if reason is None and not _inside(owner, entry.operation):
                        reason = "used outside @main"
                    if reason is None:
                        lift.append((owner, use.operand_number))
                    elif reason not in reasons:
                        reasons.append(reason)
                if reasons:
                    loc, _, _ = _location(op, source, line_offset)
                    kept.append(KeptConstant(loc, str(op.result.type), reasons, from_inputs, bool(lift)))
                if lift:
                    params_consts.append((op, lift))

        parameters = _constant_values([op for op, _ in params_consts], evaluate) if params_consts else []

        for op, uses in params_consts:
            arg = block.add_argument(op.result.type, op.location)
            for owner, number in uses:
                owner.operands[number] = arg
            for i, r in enumerate(results):
                if r == op.result:
                    results[i] = arg

        # The new return, then the checks and the replaced constants go.
        with ir.InsertionPoint(ret):
            func.ReturnOp(results)
        ret.erase()
        for op in check_ops:
            op.erase()
        for op, _ in params_consts:
            if not len(list(op.result.uses)):  # a kept operand still reads it
                op.erase()

        arg_types = [a.type for a in block.arguments]
        res_types = [r.type for r in results]
        entry.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, res_types))
        for name, count in (("arg_attrs", len(arg_types)), ("res_attrs", len(res_types))):
            if name in entry.attributes:
                have = list(ir.ArrayAttr(entry.attributes[name]))
                have += [ir.DictAttr.get({})] * (count - len(have))
                entry.attributes[name] = ir.ArrayAttr.get(have)
        if "sym_visibility" in entry.attributes:
            del entry.attributes["sym_visibility"]

        try:
            m.operation.verify()
        except Exception as e:  # pragma: no cover - a bug here, reported as an input error
            raise InputError(f"the prepared self-checking module does not verify: {e}",
                             file=source) from None

    x64 = needs_x64(m)  # its run keeps 64-bit values (execute.engine.run_plan)
    return CheckPlan(m, parameters, num_original_params, num_original_results, plan_checks,
                     folded=fold_constants, x64=x64, kept=kept)


# Element types whose DenseElementsAttr numpy reads directly, with the dtype it must give.
_HOST_READABLE = {"i1": "bool", "f16": "float16", "f32": "float32", "f64": "float64",
                  **{f"{p}{w}": f"{'u' if p == 'ui' else ''}int{w}"
                     for p in ("i", "si", "ui") for w in (8, 16, 32, 64)}}


def _host_value(op: Any) -> Any | None:
    """The constant's value read from its attribute, or None where only XLA can read it."""
    import numpy as np
    from jaxlib.mlir import ir

    want = _HOST_READABLE.get(_element_type(op.result.type) or "")
    # numpy raises for bf16, the process dies for complex, and the bindings cannot even
    # hand out a complex attribute: only the listed types go further.
    if want is None:
        return None
    attr = op.attributes["value"]
    if not isinstance(attr, (ir.DenseIntElementsAttr, ir.DenseFPElementsAttr)):
        return None
    value = np.array(attr)
    shape = list(ir.ShapedType(op.result.type).shape)
    if value.dtype != np.dtype(want) or list(value.shape) != shape:
        return None
    if attr.is_splat:
        # A splat stores one element; jaxlib 0.9's buffer for an i1 splat reads past it
        # (dense<true> : tensor<3x4xi1> came back as eight trues and four falses).
        return np.full(shape, value.ravel()[0], dtype=value.dtype)
    return np.ascontiguousarray(value)


def _constant_values(consts: list[Any], evaluate: Callable[[Any, bool], list[Any]]) -> list[Any]:
    """numpy values of constant ops, for every dtype.

    Ints, bools, f16, f32 and f64 are read from the attribute. The rest (bf16,
    f8, complex, dense_resource) go through XLA CPU, in one module that returns
    them all: ``numpy.array(DenseElementsAttr)`` raises for bf16 and aborts the
    process for complex types.
    """
    values = [_host_value(c) for c in consts]
    rest = [c for c, v in zip(consts, values) if v is None]
    if rest:
        computed = iter(_compiled_constant_values(rest, evaluate))
        values = [next(computed) if v is None else v for v in values]
    return values


def _compiled_constant_values(consts: list[Any], evaluate: Callable[[Any, bool], list[Any]]) -> list[Any]:
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func

    ctx = consts[0].context
    with ctx, ir.Location.unknown():
        tiny = ir.Module.create()
        types = [c.result.type for c in consts]
        wide = any(_element_type(t) in _X64_ELEMENTS for t in types)
        with ir.InsertionPoint(tiny.body):
            f = func.FuncOp("main", ir.FunctionType.get([], types))
            body = f.add_entry_block()
            with ir.InsertionPoint(body):
                values = [c.clone().result for c in consts]
                func.ReturnOp(values)
    return evaluate(tiny, wide)  # 64-bit constants read back as such (``wide``), for this run only
