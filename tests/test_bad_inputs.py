"""The bad-input corpus: every command, every input kind, bad flags and values.

Each case is a command line with small input files made here. Each must end
with exit 2, exactly one ``error:`` line on stderr, nothing on stdout, no
traceback, and nothing written: outputs point into an ``out/`` directory and
the command runs in an empty working directory; both must stay empty.

Most cases run in this process (the ``cli`` fixture): they fail before any
XLA compile. Cases whose input once killed the process natively (XLA CHECK
failures, stack overflows in MLIR's parser, LLVM fatal errors) run in a
subprocess, so that a regression fails one test instead of the session.
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mlirhlo_driver._native import jaxlib as _jaxlib
from tests.conftest import DATA, REPO, CliResult, assert_mentions

MLIR = str(DATA / "erf_inv.mlir")
HLO = str(DATA / "spmd" / "matmul.hlo")
PB = str(DATA / "xla_tools" / "input.pb")
VHLO = str(DATA / "softmax.vhlo")
LL = str(DATA / "xla_tools" / "input.ll")
SPEC_TEXT = (REPO / "gpu_specs" / "h100_sxm.txtpb").read_text()


# ------------------------------------------------------------------ inputs

def hlo(body: str, header: str = "HloModule m\n\n") -> str:
    return f"{header}ENTRY main {{\n{body}\n}}\n"


GOOD_HLO = hlo("  p0 = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p0)")
GOOD_MLIR = ("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
             "  %0 = stablehlo.negate %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")


def mlir_fn(body: str, sig: str = "%a: tensor<4xf32>", ret: str = "tensor<4xf32>") -> str:
    return f"func.func @main({sig}) -> {ret} {{\n{body}\n}}\n"


def _bytecode() -> bytes:
    from mlirhlo_driver.inputs import loader as inputs
    from mlirhlo_driver.ir import emit

    if not hasattr(_bytecode, "cache"):
        _bytecode.cache = emit.bytecode(inputs.load(MLIR)[0].module)
    return _bytecode.cache


def _npz(**arrays) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def _npz_object() -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.savez(buf, arg0=np.array([{"a": 1}, None], dtype=object),
             arg1=np.zeros((16, 6), np.float32))
    return buf.getvalue()


def _npy() -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.zeros((8, 16), np.float32))
    return buf.getvalue()


def _spec_without(field_name: str) -> str:
    return "\n".join(ln for ln in SPEC_TEXT.splitlines() if not ln.strip().startswith(field_name + ":"))


def _spec_with(old: str, new: str) -> str:
    assert old in SPEC_TEXT
    return SPEC_TEXT.replace(old, new, 1)


def _deep_tuple(n: int) -> str:
    t = "tensor<f32>"
    for _ in range(n):
        t = f"tuple<{t}>"
    return f"func.func @main(%a: {t}) -> {t} {{\n  return %a : {t}\n}}\n"


def _deep_while(n: int) -> str:
    return "func.func @main() {\n" + "  \"test.op\"() ({\n" * n + "  }) : () -> ()\n" * n + "  return\n}\n"


@dataclass
class Case:
    id: str
    argv: list[str]
    files: dict[str, object] = field(default_factory=dict)
    contains: str | tuple[str, ...] = ""  # what the error line must mention: a fragment, or facts
    names_file: str | None = None  # the error must name this input file
    subprocess: bool = False      # may kill the process: run it in a child
    timeout: float = 240          # (subprocess) seconds before it counts as a hang
    env: dict[str, str] = field(default_factory=dict)  # (subprocess) extra environment


def C(id: str, *argv: str, files: dict | None = None, contains: str | tuple[str, ...] = "", names: str | None = None,
      sub: bool = False) -> Case:
    return Case(id, list(argv), dict(files or {}), contains, names, sub)


def file_case(id: str, cmd: list[str], name: str, content: object, *, contains: str | tuple[str, ...] = "",
              sub: bool = False, extra: list[str] = ()) -> Case:
    """``cmd`` with ``{f}`` as the bad file ``name``; the error must name that file."""
    argv = [a.replace("{f}", "{in}/" + name) for a in cmd] + list(extra)
    return Case(id, argv, {name: content}, contains, name, sub)


OPT = ["opt", "{f}", "-o", "{out}/x.mlir"]
OPT_DUMP = ["opt", "{f}", "--dump-dir", "{out}/d", "--stage", "stablehlo,hlo-before-optimizations"]
CONVERT = ["convert", "{f}", "--to", "hlo", "-o", "{out}/x.hlo"]
RUN = ["run", "{f}", "--jobs", "0", "--reference", "none", "--json", "{out}/r.json",
       "--save-outputs", "{out}/o.npz"]
SPMD = ["spmd-run", "{f}", "--reference", "none", "--dump-output", "{out}/o.npz"]
BENCH = ["bench-pipeline", "{f}", "--passes", "cse", "--repeats", "1"]
PTX = ["ptx", "{f}", "-o", "{out}/x.ptx"]
CHECK = ["specs", "check", "{f}"]
SHOW = ["specs", "show", "{f}"]

CASES: list[Case] = []


def add(*cases: Case) -> None:
    CASES.extend(cases)


# --- HLO text, through every command that loads a module --------------------------------------
BAD_HLO = {
    "undefined-operand": hlo("  p0 = f32[4] parameter(0)\n  ROOT a = f32[4] add(p0, p2)"),
    "unknown-opcode": hlo("  p0 = f32[4] parameter(0)\n  ROOT x = f32[4] frob(p0)"),
    "missing-paren": hlo("  p0 = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p0"),
    "header-only": "HloModule m\n",
    "bad-dtype": hlo("  p0 = f33[4] parameter(0)\n  ROOT n = f33[4] negate(p0)"),
    "duplicate-name": hlo("  p0 = f32[4] parameter(0)\n  p0 = f32[4] parameter(1)\n  ROOT n = f32[4] negate(p0)"),
    "wrong-arity": hlo("  p0 = f32[4] parameter(0)\n  ROOT a = f32[4] add(p0)"),
    "shape-mismatch-add": hlo("  p0 = f32[4] parameter(0)\n  p1 = f32[5] parameter(1)\n"
                              "  ROOT a = f32[4] add(p0, p1)"),
    "unterminated-comment": hlo("  /* p0 = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p0)"),
    "truncated": GOOD_HLO[: len(GOOD_HLO) // 2],
    "non-utf8-comment": hlo("  // caf\xe9\n  p0 = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p0)")
                        .encode("latin-1"),
    "nul-byte": GOOD_HLO.encode().replace(b"negate", b"neg\x00ate"),
    "missing-to-apply": hlo("  p0 = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                            "  ROOT r = f32[] reduce(p0, z), dimensions={0}, to_apply=nosuch"),
    "bad-layout": hlo("  p0 = f32[4,4]{9,0} parameter(0)\n  ROOT n = f32[4,4]{9,0} negate(p0)"),
    "negative-dim": hlo("  p0 = f32[-3] parameter(0)\n  ROOT n = f32[-3] negate(p0)"),
    "gte-out-of-range": hlo("  p0 = (f32[4], f32[4]) parameter(0)\n  ROOT g = f32[4] get-tuple-element(p0), index=7"),
    "bad-constant": hlo("  ROOT c = f32[2] constant({1, 2, 3})"),
    "broadcast-bad-dims": hlo("  p0 = f32[4] parameter(0)\n  ROOT b = f32[4,4] broadcast(p0), dimensions={5}"),
    "unknown-attribute": hlo("  p0 = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p0), frobnicate=3"),
    "deep-nesting-brackets": "HloModule m\n\nENTRY main {\n  p0 = " + "(" * 5000 + "f32[]" + ")" * 5000
                             + " parameter(0)\n  ROOT t = f32[] constant(0)\n}\n",
}
for name, text in BAD_HLO.items():
    add(file_case(f"opt-hlo-{name}", OPT, f"{name}.hlo", text))
for name in ("undefined-operand", "missing-paren", "bad-dtype", "wrong-arity", "shape-mismatch-add"):
    add(file_case(f"convert-hlo-{name}", CONVERT, f"{name}.hlo", BAD_HLO[name]))
    add(file_case(f"run-hlo-{name}", RUN, f"{name}.hlo", BAD_HLO[name]))
for name in ("undefined-operand", "unknown-opcode", "header-only"):
    add(file_case(f"spmd-hlo-{name}", SPMD, f"{name}.hlo", BAD_HLO[name]))
    add(file_case(f"bench-hlo-{name}", BENCH, f"{name}.hlo", BAD_HLO[name]))
    add(file_case(f"opt-dump-hlo-{name}", OPT_DUMP, f"{name}.hlo", BAD_HLO[name]))
# XLA CHECK failures in the HLO verifier / shape inference: once SIGABRT. jaxlib 0.12's
# parser refuses the reshape instead, at the token after it: the error still names the
# instruction's own line and column.
NATIVE_HLO = {
    "reshape-element-count": (hlo("  p0 = f32[4] parameter(0)\n  ROOT r = f32[2,3] reshape(p0)"), ":5:8: "),
    "lone-parameter-3": (hlo("  ROOT p = f32[4] parameter(3)"), ":4:8: malformed HLO module"),
}
for name, (text, where) in NATIVE_HLO.items():
    add(file_case(f"opt-hlo-{name}", OPT, f"{name}.hlo", text, sub=True, contains=f"{name}.hlo{where}"))
    add(file_case(f"convert-hlo-{name}", CONVERT, f"{name}.hlo", text, sub=True, contains=f"{name}.hlo{where}"))

# An integer division of two constants by zero: jaxlib's StableHLO -> HLO conversion folds it
# and once died with SIGFPE (whole process, no message) in opt, convert and run.
DIV_ZERO = ("func.func @main() -> tensor<2xui32> {\n"
            "  %a = stablehlo.constant dense<[1, 2]> : tensor<2xui32>\n"
            "  %b = stablehlo.constant dense<[3, 0]> : tensor<2xui32>\n"
            "  %c = stablehlo.remainder %a, %b : tensor<2xui32>\n"
            "  return %c : tensor<2xui32>\n}\n")
for cid, cmd in (("opt-cpu", OPT + ["--platform", "cpu", "--stage", "hlo"]), ("convert", CONVERT),
                 ("opt-cuda", OPT + ["--platform", "cuda", "--gpu-spec", "a100_sxm_80", "--stage", "ptx"]),
                 ("run", RUN)):
    add(file_case(f"{cid}-constant-division-by-zero", cmd, "div0.mlir", DIV_ZERO, sub=True,
                  contains=("div0.mlir:4:8: ", "stablehlo.remainder", "zero divisor")))

# --- HLO proto, binary ----------------------------------------------------------------------
_PB = Path(PB).read_bytes()
BAD_PB = {
    "truncated": _PB[: len(_PB) // 2],
    "garbage": bytes(range(256)) * 4,
    "gzip-garbage": gzip.compress(b"\x0a\x03abc\xff\xff\xff\xff"),
    "gzip-truncated": gzip.compress(_PB)[:40],
    "flipped-tag": _PB[:10] + b"\xff" + _PB[11:],
    "name-only": b"\x0a\x01m",
}
for name, data in BAD_PB.items():
    add(file_case(f"opt-pb-{name}", OPT, f"{name}.pb", data))
for name in ("truncated", "flipped-tag", "name-only", "garbage"):
    add(file_case(f"opt-pb-forced-{name}", OPT, f"forced-{name}.pb", BAD_PB[name],
                  extra=["--input-format", "hlo-proto"]))
add(file_case("convert-pb-truncated", CONVERT, "t.pb", BAD_PB["truncated"]),
    file_case("run-pb-garbage", RUN, "g.pb", BAD_PB["garbage"]),
    file_case("opt-pb-forced-on-text", OPT, "text.pb", GOOD_HLO, extra=["--input-format", "hlo-proto"]))

# --- HLO proto, text --------------------------------------------------------------------------
_PBTXT = (DATA / "xla_tools" / "input.pbtxt").read_text()
BAD_PBTXT = {
    "unknown-field": 'name: "m"\nentry_computation_name: "main"\nfrobnicate: 3\n',
    "bad-enum": _PBTXT.replace("element_type: F32", "element_type: F33", 1),
    "unclosed-brace": 'name: "m"\ncomputations {\n  name: "main"\n',
    "wrong-type": 'name: 7\n',
    "hloproto-without-module": "hlo_module {\n}\n",
    "no-computations": 'name: "m"\nentry_computation_name: "main"\n',
    "truncated": _PBTXT[: len(_PBTXT) // 2],
    "bad-string-escape": 'name: "m\\q"\n',
}
for name, text in BAD_PBTXT.items():
    add(file_case(f"opt-pbtxt-{name}", OPT, f"{name}.pbtxt", text))
add(file_case("convert-pbtxt-unknown-field", CONVERT, "u.pbtxt", BAD_PBTXT["unknown-field"]),
    file_case("run-pbtxt-bad-enum", RUN, "e.pbtxt", BAD_PBTXT["bad-enum"]))

# --- MLIR text --------------------------------------------------------------------------------
BAD_MLIR = {
    "unknown-op": mlir_fn("  %0 = stablehlo.tanhh %a : tensor<4xf32>\n  return %0 : tensor<4xf32>"),
    "unregistered-dialect": "func.func @f() {\n  foo.bar() : () -> ()\n  return\n}\n",
    "undefined-value": mlir_fn("  return %b : tensor<4xf32>"),
    "return-type-mismatch": mlir_fn("  return %a : tensor<5xf32>"),
    "missing-terminator": mlir_fn("  %0 = stablehlo.negate %a : tensor<4xf32>"),
    "unbalanced-brace": mlir_fn("  return %a : tensor<4xf32>").rstrip("}\n") + "\n",
    "verifier-shape": mlir_fn("  %0 = stablehlo.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>\n"
                              "  return %a : tensor<4xf32>"),
    "bad-attribute": mlir_fn('  %0 = stablehlo.constant dense<[1.0, "x"]> : tensor<2xf32>\n'
                             "  return %a : tensor<4xf32>"),
    "bad-type": mlir_fn("  return %a : tensor<4xf33>"),
    "redefined-value": mlir_fn("  %0 = stablehlo.negate %a : tensor<4xf32>\n"
                               "  %0 = stablehlo.negate %a : tensor<4xf32>\n  return %0 : tensor<4xf32>"),
    "mhlo-bad": mlir_fn('  %0 = "mhlo.frob"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>'),
    "non-utf8": GOOD_MLIR.encode().replace(b"negate %a", b"negate %a // \xff\xfe"),
    "duplicate-func": GOOD_MLIR + GOOD_MLIR,
    "garbage-text": "this is not a module at all\n",
    "deep-tuple-300": _deep_tuple(300),
    "check-op-bad": mlir_fn("  check.expect_eq %a, %a, %a : tensor<4xf32>\n  return %a : tensor<4xf32>"),
}
for name, text in BAD_MLIR.items():
    add(file_case(f"opt-mlir-{name}", OPT, f"{name}.mlir", text))
for name in ("unknown-op", "undefined-value", "verifier-shape"):
    add(file_case(f"convert-mlir-{name}", CONVERT, f"{name}.mlir", BAD_MLIR[name]),
        file_case(f"run-mlir-{name}", RUN, f"{name}.mlir", BAD_MLIR[name]),
        file_case(f"spmd-mlir-{name}", SPMD, f"{name}.mlir", BAD_MLIR[name]),
        file_case(f"bench-mlir-{name}", BENCH, f"{name}.mlir", BAD_MLIR[name]))
add(file_case("opt-mlir-split-only-chunk-bad", OPT, "split.mlir",
              "// -----\n" + BAD_MLIR["unknown-op"] + "// -----\n", extra=["--split-input-file"]),
    file_case("opt-mlir-stage-vhlo-chlo", ["opt", "{f}", "--stage", "vhlo", "-o", "{out}/x.vhlo"],
              "chlo.mlir", Path(MLIR).read_text()),
    # Native stack overflows in MLIR's parser: once SIGSEGV with nothing printed.
    file_case("opt-mlir-deep-tuple-20000", OPT, "deep_tuple.mlir", _deep_tuple(20000), sub=True),
    file_case("opt-mlir-deep-regions-30000", OPT, "deep_while.mlir", _deep_while(30000), sub=True),
    file_case("convert-mlir-deep-tuple-20000", CONVERT, "deep_tuple2.mlir", _deep_tuple(20000), sub=True))

# --- MLIR bytecode and VHLO -------------------------------------------------------------------
_VHLO = Path(VHLO).read_bytes()
BAD_BC = {
    "truncated": lambda: _bytecode()[: len(_bytecode()) // 2],
    "magic-only": b"ML\xefR",
    "magic-garbage": b"ML\xefR" + bytes(range(200)),
    "flipped": lambda: _bytecode()[:20] + bytes([_bytecode()[20] ^ 0xFF]) + _bytecode()[21:],
}
for name, data in BAD_BC.items():
    add(file_case(f"opt-bc-{name}", OPT, f"{name}.mlirbc", data))
add(file_case("convert-bc-truncated", CONVERT, "t.mlirbc", BAD_BC["truncated"]),
    file_case("run-bc-magic-garbage", RUN, "g.mlirbc", BAD_BC["magic-garbage"]),
    file_case("opt-bc-forced-on-text", OPT, "text.mlirbc", GOOD_MLIR, extra=["--input-format", "bytecode"]))
BAD_VHLO = {
    "truncated": _VHLO[:200],
    "garbage-after-magic": _VHLO[:16] + bytes(range(1, 255)),
    "tail-cut": _VHLO[:-7],
    "middle-zeroed": _VHLO[:300] + bytes(64) + _VHLO[364:],
}
for name, data in BAD_VHLO.items():
    add(file_case(f"opt-vhlo-{name}", OPT, f"{name}.vhlo", data))
add(file_case("convert-vhlo-truncated", CONVERT, "t.vhlo", BAD_VHLO["truncated"]),
    file_case("spmd-vhlo-truncated", SPMD, "t2.vhlo", BAD_VHLO["truncated"]),
    file_case("opt-vhlo-forced-on-mlir-text", OPT, "text.mlir", GOOD_MLIR, extra=["--input-format", "vhlo"]),
    C("opt-vhlo-bad-target-version", "opt", MLIR, "--pipeline", "@prepare-export", "--stage", "vhlo",
      "--target-version", "9.9.9", "-o", "{out}/x.vhlo"),
    C("opt-vhlo-garbage-target-version", "opt", MLIR, "--pipeline", "@prepare-export", "--stage", "vhlo",
      "--target-version", "banana", "-o", "{out}/x.vhlo"),
    C("convert-vhlo-bad-target-version", "convert", MLIR, "--to", "vhlo", "--target-version", "0.0.0.1",
      "-o", "{out}/x.vhlo"))

# Found by scripts/fuzz.py (tests/data/bad/), in a subprocess where native code writes to
# fd 2 (the in-process fixture sees only part of it): a bytecode file whose diagnostic holds bytes
# that are not UTF-8 (once: SIGABRT in nanobind while converting the message), and a VHLO file
# whose error names an op with control characters (once: one message broken over 4 lines).
BAD_DIR = DATA / "bad"
for name, cmd in (("bytecode_nonutf8_diagnostic.mlirbc", OPT), ("bytecode_nonutf8_diagnostic.mlirbc", CONVERT)):
    add(C(f"{cmd[0]}-fuzz-{name}", *[a.replace("{f}", str(BAD_DIR / name)) for a in cmd], names=name, sub=True,
          contains=("malformed MLIR bytecode", "not UTF-8")))
# More from the fuzz: a VHLO file `convert --to hlo` once answered with a Python traceback
# ("Failed to deserialize HloModuleProto"), a VHLO, an HLO proto and a bytecode file that once
# segfaulted, and a 278-byte bytecode file that once kept the parser busy for good. jaxlib 0.12's
# import of the proto no longer crashes; the StableHLO it makes fails to verify
# ("Out-of-bounds dimension 0, expected to be in range [0, 0)").
add(C("convert-fuzz-vhlo-traceback", "convert", str(BAD_DIR / "vhlo_convert_traceback.vhlo"), "--to", "hlo",
      "-o", "{out}/x.hlo", names="vhlo_convert_traceback.vhlo", sub=True),
    C("opt-fuzz-vhlo-segv", "opt", str(BAD_DIR / "vhlo_segv.vhlo"), "-o", "{out}/x.mlir", names="vhlo_segv.vhlo",
      sub=True, contains="malformed StableHLO portable artifact"),
    C("opt-fuzz-hlo-proto-segv", "opt", str(BAD_DIR / "hlo_proto_segv.pb"), "--input-format", "hlo-proto",
      "-o", "{out}/x.mlir", names="hlo_proto_segv.pb", sub=True,
      contains="XLA could not convert the HLO module to StableHLO: its StableHLO does not parse: Out-of-bounds"
      if _jaxlib.jaxlib_at_least("0.12.0") else "malformed HLO module: XLA's HLO-to-StableHLO import crashed"),
    C("convert-fuzz-bytecode-segv", "convert", str(BAD_DIR / "bytecode_segv.mlirbc"), "--to", "hlo",
      "-o", "{out}/x.hlo", names="bytecode_segv.mlirbc", sub=True, contains="malformed MLIR bytecode"))
# The reader's deadline is set low (MLIRHLO_READ_TIMEOUT): the case costs ~2 s, not the default 60 s.
CASES.append(Case("opt-fuzz-bytecode-hang", ["opt", str(BAD_DIR / "bytecode_hang.mlirbc"), "-o", "{out}/x.mlir"],
                  {}, "did not finish in 2 s", "bytecode_hang.mlirbc", True, timeout=60,
                  env={"MLIRHLO_READ_TIMEOUT": "2"}))
# A VHLO file the artifact reader never finishes (the 10k fuzz of issue 12's first round).
CASES.append(Case("convert-fuzz-vhlo-hang", ["convert", str(BAD_DIR / "vhlo_hang.vhlo"), "--to", "hlo",
                                             "-o", "{out}/x.hlo"],
                  {}, "did not finish in 2 s", "vhlo_hang.vhlo", True, timeout=60,
                  env={"MLIRHLO_READ_TIMEOUT": "2"}))
# An HloModuleProto with element type 43: XLA logged an absl "E... shape.cc" line before the error
# (and jaxlib 0.12 a "=== Source Location Trace: ===" block after its RET_CHECK log line).
add(C("opt-fuzz-hlo-proto-bad-element-type", "opt", str(BAD_DIR / "hlo_proto_bad_element_type.pb"),
      "--input-format", "hlo-proto", "-o", "{out}/x.mlir", names="hlo_proto_bad_element_type.pb", sub=True,
      contains=("StableHLO", "RET_CHECK failure")))
add(C("opt-fuzz-vhlo-control-chars", *[a.replace("{f}", str(BAD_DIR / "vhlo_control_chars_in_op_name.vhlo"))
                                       for a in OPT], names="vhlo_control_chars_in_op_name.vhlo"))

# --- files that are not there, not files, empty -------------------------------------------------
for cmd_name, cmd in (("opt", OPT), ("convert", CONVERT), ("run", RUN), ("spmd", SPMD), ("bench", BENCH),
                      ("ptx", PTX), ("check", CHECK)):
    add(file_case(f"{cmd_name}-empty-file", cmd, "empty.txt", ""),
        C(f"{cmd_name}-missing-file", *[a.replace("{f}", "{in}/nope.hlo") for a in cmd], names="nope.hlo"))
add(C("opt-directory-without-modules", "opt", "{in}", "-o", "{out}/x.mlir"),
    C("opt-glob-matches-nothing", "opt", "{in}/*.nothing", "-o", "{out}/x.mlir"),
    C("convert-directory", "convert", "{in}", "--to", "hlo", "-o", "{out}/x.hlo"),
    C("ptx-directory", "ptx", "{in}", "-o", "{out}/x.ptx"),
    C("specs-check-directory", "specs", "check", "{in}"),
    # stdin is empty (subprocess: pytest's own stdin cannot be read).
    C("ptx-stdin-dash", "ptx", "-", "-o", "{out}/x.ptx", sub=True),
    C("specs-check-stdin-dash", "specs", "check", "-", sub=True),
    C("opt-input-format-jax-on-file", "opt", MLIR, "--input-format", "jax", "-o", "{out}/x.mlir"),
    C("opt-input-format-bogus", "opt", MLIR, "--input-format", "hlo-text", "-o", "{out}/x.mlir"),
    C("opt-jax-entry-missing-module", "opt", "no_such_pkg_x.model:f", "--args", "f32[2]", "-o", "{out}/x.mlir"),
    C("opt-jax-entry-bad-args", "opt", "no_such_pkg_x.model:f", "--args", "f33[2]", "-o", "{out}/x.mlir"))

# --- GPU spec textprotos ----------------------------------------------------------------------
BAD_SPEC = {
    "missing-core-count": _spec_without("core_count"),
    "missing-platform": _spec_without("platform_name"),
    "unknown-field": SPEC_TEXT + "\nfrobnicate: 1\n",
    "syntax-error": _spec_with("core_count: 132", "core_count 132 {"),
    "bad-escape": _spec_with('"NVIDIA H100 80GB HBM3"', '"NVIDIA \\q H100"'),
    "wrong-type": _spec_with("core_count: 132", 'core_count: "many"'),
    "negative": _spec_with("core_count: 132", "core_count: -132"),
    "zero-warp": _spec_with("threads_per_warp: 32", "threads_per_warp: 0"),
    "overflow-int32": _spec_with("core_count: 132", "core_count: 99999999999"),
    "cc-1-0": _spec_with("major: 9 minor: 0", "major: 1 minor: 0"),
    "bad-enum": _spec_with("feature_extension: ACCELERATED_FEATURES", "feature_extension: SUPER_FEATURES"),
    "unclosed": SPEC_TEXT.rstrip()[:-60],
    "duplicate-scalar": SPEC_TEXT + '\nplatform_name: "CUDA"\n',
    "binary": bytes(range(256)),
    "comments-only": "# nothing here\n",
}
# The cut-off block is dnn_version_info, a field jaxlib 0.12's schema lacks: the brace is still the error.
BAD_SPEC_SAYS = {"unclosed": ("'{'", "'dnn_version_info'", "never closed")}
for name, text in BAD_SPEC.items():
    add(file_case(f"specs-check-{name}", CHECK, f"{name}.txtpb", text, contains=BAD_SPEC_SAYS.get(name, "")))
for name in ("missing-core-count", "syntax-error", "cc-1-0"):
    add(file_case(f"specs-show-{name}", SHOW, f"show-{name}.txtpb", BAD_SPEC[name]),
        file_case(f"opt-gpu-spec-{name}", ["opt", MLIR, "--platform", "cuda", "--gpu-spec", "{f}",
                                           "--stage", "ptx", "-o", "{out}/x.ptx"],
                  f"opt-{name}.txtpb", BAD_SPEC[name]))
add(C("specs-show-unknown-name", "specs", "show", "h100_sxn"),
    C("specs-show-missing-path", "specs", "show", "{in}/none.txtpb"),
    C("specs-list-bad-flag", "specs", "list", "--csv"),
    C("specs-unknown-subcommand", "specs", "verify", "x"),
    C("specs-check-no-files", "specs", "check"),
    C("opt-gpu-spec-unknown", "opt", MLIR, "--platform", "cuda", "--gpu-spec", "h100_sxn", "--stage", "ptx",
      "-o", "{out}/x.ptx"),
    C("opt-gpu-spec-one-of-two-unknown", "opt", MLIR, "--platform", "cuda", "--gpu-spec", "h100_sxm,zz9",
      "--stage", "ptx", "--dump-dir", "{out}/d"))

# --- pipelines ---------------------------------------------------------------------------------
BAD_PIPELINES = {
    "unbalanced": "builtin.module(func.func(canonicalize)",
    "empty-element": "builtin.module(cse,,canonicalize)",
    "trailing": "builtin.module(cse) x",
    "unknown-pass": "builtin.module(func.func(canonicalise))",
    "wrong-anchor": "builtin.module(func.func(symbol-dce))",
    "bad-option-name": "builtin.module(canonicalize{bogus=1})",
    "bad-option-value": "builtin.module(canonicalize{max-iterations=abc})",
    "unbalanced-brace": "builtin.module(canonicalize{max-iterations=3)",
    "unknown-named": "@simplfy",
    "empty-named": "@",
    "only-anchor": "builtin.module(",
    "nul-like": "builtin.module(cse\u0001)",
}
for name, spec in BAD_PIPELINES.items():
    add(C(f"opt-pipeline-{name}", "opt", MLIR, "--pipeline", spec, "-o", "{out}/x.mlir"))
for name in ("unknown-pass", "bad-option-value", "unbalanced"):
    add(C(f"bench-pipeline-{name}", "bench-pipeline", MLIR, "--pipeline", BAD_PIPELINES[name], "--repeats", "1"),
        C(f"bench-compare-{name}", "bench-pipeline", MLIR, "--passes", "cse", "--compare", BAD_PIPELINES[name],
          "--repeats", "1"))
add(C("opt-passes-unknown", "opt", MLIR, "--passes", "cse,canonicalise", "-o", "{out}/x.mlir"),
    C("opt-passes-empty-item", "opt", MLIR, "--passes", "cse,,cse", "-o", "{out}/x.mlir"),
    C("opt-passes-and-pipeline", "opt", MLIR, "--passes", "cse", "--pipeline", "builtin.module(cse)",
      "-o", "{out}/x.mlir"),
    file_case("opt-pipeline-file-binary", ["opt", MLIR, "--pipeline-file", "{f}", "-o", "{out}/x.mlir"],
              "bin.pipeline", bytes(range(256))),
    file_case("opt-pipeline-file-empty", ["opt", MLIR, "--pipeline-file", "{f}", "-o", "{out}/x.mlir"],
              "empty.pipeline", ""),
    file_case("opt-pipeline-file-comments-only", ["opt", MLIR, "--pipeline-file", "{f}", "-o", "{out}/x.mlir"],
              "comments.pipeline", "# just a header\n"),
    file_case("opt-pipeline-file-unknown-pass", ["opt", MLIR, "--pipeline-file", "{f}", "-o", "{out}/x.mlir"],
              "unknown.pipeline", "# header\nbuiltin.module(func.func(canonicalise))\n"),
    C("opt-pipeline-file-missing", "opt", MLIR, "--pipeline-file", "{in}/none.pipeline", "-o", "{out}/x.mlir"),
    # the OS's reason alone, not Python's "[Errno 21] ...: 'path'"
    C("opt-pipeline-file-is-a-directory", "opt", MLIR, "--pipeline-file", "{in}", "-o", "{out}/x.mlir",
      contains="in: Is a directory"),
    C("opt-print-ir-before-unknown", "opt", MLIR, "--passes", "cse", "--print-ir-before", "csee",
      "-o", "{out}/x.mlir"),
    C("opt-print-ir-after-unknown", "opt", MLIR, "--passes", "cse", "--print-ir-after", "canonicalise",
      "-o", "{out}/x.mlir"),
    file_case("opt-plugin-syntax-error", ["opt", MLIR, "--load-pass-plugin", "{f}", "-o", "{out}/x.mlir"],
              "plug_syntax.py", "def broken(:\n"),
    file_case("opt-plugin-raises-on-import", ["opt", MLIR, "--load-pass-plugin", "{f}", "-o", "{out}/x.mlir"],
              "plug_raise.py", "raise RuntimeError('no')\n"),
    file_case("passes-plugin-syntax-error", ["passes", "--load-pass-plugin", "{f}"], "plug_syntax2.py",
              "x = (\n"),
    C("opt-plugin-missing", "opt", MLIR, "--load-pass-plugin", "{in}/none.py", "-o", "{out}/x.mlir"),
    C("passes-plugin-missing", "passes", "--load-pass-plugin", "{in}/none.py"),
    C("passes-bad-flag", "passes", "--all"))

# --- LLVM IR ----------------------------------------------------------------------------------
_LL = Path(LL).read_text()
BAD_LL = {
    "syntax": "define void @f( {\n",
    "undefined-value": "define void @f() {\n  %x = add i32 %y, 1\n  ret void\n}\n",
    "type-mismatch": "define i32 @f() {\n  ret float 1.0\n}\n",
    "undefined-function": "define void @f() {\n  call void @nosuch()\n  ret void\n}\n",
    "binary": bytes(range(256)),
    "truncated": _LL[: len(_LL) // 2],
    "non-utf8": _LL.encode().replace(b"; Stands", b"; \xff Stands"),
    "bad-float-constant": _LL.replace("2.000000e+00", "0xZZ"),
    # From the fuzz: once a RuntimeError traceback ("No available targets ... triple").
    "bad-triple": _LL.replace("nvptx64-nvidia-cuda", "nvptx64Mnvidia-cuda"),
}
# Calls a libdevice function: --libdevice is read.
NV_LL = ('target triple = "nvptx64-nvidia-cuda"\n'
         "define float @f(float %x) {\n  %y = call float @__nv_expf(float %x)\n  ret float %y\n}\n"
         "declare float @__nv_expf(float)\n")
for name, text in BAD_LL.items():
    add(file_case(f"ptx-{name}", PTX, f"{name}.ll", text))
add(C("ptx-bad-arch", "ptx", LL, "--arch", "sm_1", "-o", "{out}/x.ptx"),
    C("ptx-garbage-arch", "ptx", LL, "--arch", "banana", "-o", "{out}/x.ptx"),
    C("ptx-bad-opt-level", "ptx", LL, "-O", "7", "-o", "{out}/x.ptx"),
    C("ptx-negative-opt-level", "ptx", LL, "-O", "-1", "-o", "{out}/x.ptx"),
    C("ptx-libdevice-missing", "ptx", "{in}/nv.ll", "--libdevice", "{in}/none.bc", "-o", "{out}/x.ptx",
      files={"nv.ll": NV_LL}),
    C("ptx-libdevice-garbage", "ptx", "{in}/nv.ll", "--libdevice", "{in}/libdevice.10.bc", "-o", "{out}/x.ptx",
      files={"nv.ll": NV_LL, "libdevice.10.bc": b"BC\xc0\xde" + bytes(100)}, names="libdevice.10.bc"),
    C("ptx-libdevice-text", "ptx", "{in}/nv.ll", "--libdevice", "{in}/libdevice.bc", "-o", "{out}/x.ptx",
      files={"nv.ll": NV_LL, "libdevice.bc": "not bitcode\n"}, names="libdevice.bc"),
    C("ptx-output-is-directory", "ptx", LL, "-o", "{in}"),
    C("ptx-ir-dump-dir-is-file", "ptx", LL, "--ir-dump-dir", LL, "-o", "{out}/x.ptx"),
    # LLVM fatal error ("Cannot select") for an intrinsic the arch lacks: once exit 134.
    file_case("ptx-intrinsic-arch-lacks", ["ptx", "{f}", "--arch", "sm_60", "-o", "{out}/x.ptx"], "sm90.ll",
              'target triple = "nvptx64-nvidia-cuda"\n'
              "define ptx_kernel void @k() {\n  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 256)\n"
              "  ret void\n}\ndeclare void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 immarg)\n", sub=True))

# --- opt / convert flags and values ----------------------------------------------------------------
add(C("opt-unknown-stage", "opt", MLIR, "--stage", "stablehl", "-o", "{out}/x.mlir"),
    C("opt-unknown-platform", "opt", MLIR, "--platform", "tpux", "--stage", "hlo", "-o", "{out}/x.hlo"),
    C("opt-tpu-unknown-topology", "opt", MLIR, "--platform", "tpu", "--tpu-topology", "v9:2x2", "--stage", "hlo",
      "-o", "{out}/x.hlo"),
    C("opt-tpu-topology-on-cpu", "opt", MLIR, "--platform", "cpu", "--tpu-topology", "v5e:2x2", "--stage", "hlo",
      "-o", "{out}/x.hlo"),
    C("opt-tpu-zero-dimension", "opt", MLIR, "--platform", "tpu", "--tpu-topology", "v5e:0x2", "--stage", "hlo",
      "-o", "{out}/x.hlo"),
    C("opt-xla-stage-without-platform", "opt", MLIR, "--stage", "ptx", "-o", "{out}/x.ptx"),
    C("opt-ptx-on-cpu", "opt", MLIR, "--platform", "cpu", "--stage", "ptx", "-o", "{out}/x.ptx"),
    C("opt-stage-all-without-dump-dir", "opt", MLIR, "--platform", "cpu", "--stage", "all", "-o", "{out}/x"),
    C("opt-unknown-option", "opt", MLIR, "--bogus"),
    C("opt-unknown-xla-flag", "opt", MLIR, "--platform", "cpu", "--stage", "hlo", "--xla_bogus_flag=1",
      "-o", "{out}/x.hlo"),
    C("opt-xla-flag-bad-type", "opt", MLIR, "--platform", "cpu", "--stage", "hlo",
      "--xla_cpu_enable_fast_math=maybe", "-o", "{out}/x.hlo"),
    C("opt-xla-flag-no-value", "opt", MLIR, "--platform", "cpu", "--stage", "hlo", "--xla_dump_to",
      "-o", "{out}/x.hlo"),
    C("opt-debug-options-file-missing", "opt", MLIR, "--platform", "cpu", "--stage", "hlo",
      "--debug-options-file", "{in}/none.txt", "-o", "{out}/x.hlo"),
    file_case("opt-debug-options-file-malformed", ["opt", MLIR, "--platform", "cpu", "--stage", "hlo",
                                                   "--debug-options-file", "{f}", "-o", "{out}/x.hlo"],
              "dbg.txt", "xla_cpu_enable_fast_math: {\n", contains="dbg.txt:1:27: "),
    file_case("opt-debug-options-file-bad-int", ["opt", MLIR, "--platform", "cpu", "--stage", "hlo",
                                                 "--debug-options-file", "{f}", "-o", "{out}/x.hlo"],
              "dbg3.txt", "# flags\n--xla_cpu_parallel_codegen_split_count=abc\n",
              contains=("dbg3.txt:2:40: ", "--xla_cpu_parallel_codegen_split_count=abc", "integer")),
    file_case("opt-debug-options-file-unknown", ["opt", MLIR, "--platform", "cpu", "--stage", "hlo",
                                                 "--debug-options-file", "{f}", "-o", "{out}/x.hlo"],
              "dbg2.txt", "xla_no_such_option: true\n"),
    C("opt-autotune-results-missing", "opt", MLIR, "--platform", "cuda", "--stage", "ptx",
      "--autotune-results", "{in}/none.txtpb", "-o", "{out}/x.ptx"),
    C("opt-xla-passes-unknown", "opt", MLIR, "--platform", "cpu", "--xla-passes", "algsimpp", "-o", "{out}/x.hlo"),
    C("opt-xla-passes-without-platform", "opt", MLIR, "--xla-passes", "algsimp", "-o", "{out}/x.hlo"),
    C("opt-after-pass-unknown", "opt", MLIR, "--platform", "cpu", "--after-pass", "nosuchpass",
      "-o", "{out}/x.hlo"),
    C("opt-list-stages-bad-platform", "opt", "--list-stages", "--platform", "tpux"),
    C("opt-output-is-directory", "opt", MLIR, "-o", "{in}"),
    C("opt-dump-dir-is-file", "opt", MLIR, "--dump-dir", MLIR),
    C("opt-ir-dump-dir-is-file", "opt", MLIR, "--passes", "cse", "--print-ir-after-all", "--ir-dump-dir", MLIR,
      "-o", "{out}/x.mlir"),
    C("opt-reproducer-dir-is-file", "opt", MLIR, "--passes", "cse", "--reproducer-dir", MLIR,
      "-o", "{out}/x.mlir"),
    C("opt-no-inputs", "opt", "-o", "{out}/x.mlir"),
    C("convert-unknown-target", "convert", MLIR, "--to", "onnx", "-o", "{out}/x.onnx"),
    C("convert-unknown-extension", "convert", MLIR, "-o", "{out}/x.weird"),
    C("convert-emit-proto-and-to", "convert", MLIR, "--emit-proto", "--to", "stablehlo", "-o", "{out}/x.mlir"),
    C("convert-output-is-directory", "convert", MLIR, "--to", "hlo", "-o", "{in}"),
    C("convert-no-input", "convert", "--to", "hlo"),
    C("convert-two-inputs", "convert", MLIR, HLO, "--to", "hlo"),
    C("top-unknown-command", "frobnicate", MLIR),
    C("top-unknown-option", "--frob"))

# --- run: flags, values and npz inputs -------------------------------------------------------------
RUN_HLO = ["run", HLO, "--jobs", "0", "--json", "{out}/r.json", "--save-outputs", "{out}/o.npz"]
for name, extra in {
    "seed-negative": ["--seed", "-1"],
    "rtol-negative": ["--rtol", "-1"],
    "rtol-nan": ["--rtol", "nan"],
    "atol-negative": ["--atol", "-0.5"],
    "atol-nan": ["--atol", "nan"],
    "atol-text": ["--atol", "small"],
    "timeout-negative": ["--timeout", "-1"],
    "iterations-zero": ["--iterations", "0"],
    "jobs-negative": ["--jobs", "-1"],
    "reference-bogus": ["--reference", "gpu"],
    "platform-bogus": ["--platform", "tpux"],
    "input-format-bogus": ["--input-format", "onnx"],
    "inputs-missing-file": ["--inputs", "{in}/none.npz"],
    "zeros-and-inputs": ["--zeros", "--inputs", "{in}/none.npz"],
}.items():
    add(C(f"run-{name}", *RUN_HLO, *extra))
NPZ = {
    "garbage": b"PK\x03\x04 not really a zip",
    "text": "not an npz\n",
    "wrong-shape": lambda: _npz(arg0=[[1.0]], arg1=[[2.0]]),
    "int-for-float": lambda: _npz(arg0=[[1] * 16] * 8, arg1=[[1] * 6] * 16),
    "missing-array": lambda: _npz(arg0=[[0.0] * 16] * 8),
    "extra-array": lambda: _npz(arg0=[[0.0] * 16] * 8, arg1=[[0.0] * 6] * 16, arg7=[1.0]),
    "misnamed": lambda: _npz(x=[[0.0] * 16] * 8, y=[[0.0] * 6] * 16, z=[0.0]),
    "object-array": _npz_object,
    "npy-not-npz": _npy,
}
for name, content in NPZ.items():
    add(file_case(f"run-inputs-{name}", [*RUN_HLO, "--inputs", "{f}"], f"{name}.npz", content))
for name in ("wrong-shape", "garbage", "missing-array"):
    add(file_case(f"spmd-inputs-{name}", ["spmd-run", HLO, "--num-partitions", "1", "--inputs", "{f}",
                                          "--dump-output", "{out}/o.npz"], f"spmd-{name}.npz", NPZ[name]))
add(C("run-json-is-directory", "run", HLO, "--jobs", "0", "--reference", "none", "--json", "{in}"),
    C("run-save-outputs-is-directory", "run", HLO, "--jobs", "0", "--reference", "none", "--save-outputs", "{in}"),
    C("run-stdin-dash-empty", "run", "-", "--jobs", "0", "--json", "{out}/r.json", sub=True),
    C("run-no-inputs", "run", "--jobs", "0", "--json", "{out}/r.json"))

# --- spmd-run flags and values ------------------------------------------------------------------
SPMD_HLO = ["spmd-run", HLO, "--dump-output", "{out}/o.npz"]
for name, extra in {
    "partitions-zero": ["--num-partitions", "0"],
    "partitions-negative": ["--num-partitions", "-2"],
    "partitions-huge": ["--num-partitions", "100000"],
    "replicas-zero": ["--num-replicas", "0"],
    "replicas-and-partitions": ["--num-replicas", "2", "--num-partitions", "2"],
    "partitioner-bogus": ["--partitioner", "magic"],
    "arg-sharding-no-equals": ["--num-partitions", "4", "--arg-sharding", "devices=[1,4]<=[4]"],
    "arg-sharding-bad-index": ["--num-partitions", "4", "--arg-sharding", "9=devices=[1,4]<=[4]"],
    "arg-sharding-garbage": ["--num-partitions", "4", "--arg-sharding", "0=frob"],
    "argument-mode-bogus": ["--argument-mode", "ones"],
    "seed-negative": ["--seed", "-1"],
    "num-repeats-zero": ["--num-repeats", "0"],
    "rtol-nan": ["--rtol", "nan"],
    "reference-bogus": ["--reference", "gpu"],
    "timeout-negative": ["--timeout", "-5"],
    "coordinator-port-too-big": ["--num-processes", "2", "--process-id", "0", "--coordinator", "localhost:99999"],
    "coordinator-port-zero": ["--num-processes", "2", "--process-id", "0", "--coordinator", "localhost:0"],
    "coordinator-no-port": ["--num-processes", "2", "--process-id", "0", "--coordinator", "localhost"],
    "process-id-out-of-range": ["--num-processes", "2", "--process-id", "5", "--coordinator", "127.0.0.1:1234"],
    "processes-without-coordinator": ["--num-processes", "2", "--process-id", "0"],
    "launch-local-zero": ["--launch-local", "0"],
    "reference-module-missing": ["--reference-module", "{in}/none.hlo"],
}.items():
    add(C(f"spmd-{name}", *SPMD_HLO, *extra))
add(C("spmd-dump-output-is-directory", "spmd-run", HLO, "--reference", "none", "--dump-output", "{in}"),
    file_case("spmd-reference-module-bad", [*SPMD_HLO, "--reference-module", "{f}"], "ref.hlo",
              BAD_HLO["undefined-operand"]))

# --- bench-pipeline flags and values -----------------------------------------------------------------
add(C("bench-repeats-zero", "bench-pipeline", MLIR, "--passes", "cse", "--repeats", "0"),
    C("bench-repeats-negative", "bench-pipeline", MLIR, "--passes", "cse", "--repeats", "-3"),
    C("bench-platform-bogus", "bench-pipeline", MLIR, "--platform", "tpux", "--repeats", "1"),
    C("bench-gpu-spec-unknown", "bench-pipeline", MLIR, "--platform", "cuda", "--gpu-spec", "zz9", "--repeats", "1"),
    C("bench-no-pipeline", "bench-pipeline", MLIR, "--repeats", "1"),
    C("bench-plugin-missing", "bench-pipeline", MLIR, "--passes", "cse", "--load-pass-plugin", "{in}/none.py"))


# ------------------------------------------------------------------ running

def _materialize(case: Case, tmp_path: Path) -> tuple[list[str], Path, Path]:
    inp, out, cwd = tmp_path / "in", tmp_path / "out", tmp_path / "cwd"
    for d in (inp, out, cwd):
        d.mkdir()
    for name, content in case.files.items():
        if callable(content):
            content = content()
        target = inp / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    argv = [a.replace("{in}", str(inp)).replace("{out}", str(out)) for a in case.argv]
    return argv, out, cwd


def _check(case: Case, result: CliResult, out: Path, cwd: Path, inputs_before: list[str]) -> None:
    detail = f"\nexit {result.code}\nstderr:\n{result.err[-3000:]}\nstdout:\n{result.out[-1000:]}"
    assert "Traceback" not in result.err, "traceback" + detail
    assert result.code == 2, "exit code" + detail
    lines = [ln for ln in result.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), "not exactly one error line" + detail
    assert result.out == "", "stdout" + detail
    assert_mentions(lines[0], *((case.contains,) if isinstance(case.contains, str) else case.contains))
    if case.names_file:
        assert case.names_file in lines[0], f"the error does not name {case.names_file}: {lines[0]}"
    written = sorted(str(p.relative_to(out.parent)) for d in (out, cwd) for p in d.rglob("*"))
    assert not written, f"written on error: {written}" + detail
    assert _listing(out.parent / "in") == inputs_before, "the input directory changed" + detail


def _tmpdir(tmp_path: Path) -> Path:
    d = tmp_path / "tmpdir"
    d.mkdir(exist_ok=True)
    return d


def _listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


# Cases still broken, as strict xfails (the day one is fixed, its xfail fails and must
# be removed), and cases not run at all (a hang would cost its whole timeout): none today.
KNOWN_BROKEN: dict[str, str] = {}
NOT_RUN: dict[str, str] = {}


def _params(cases):
    out = []
    for c in cases:
        marks = []
        if c.id in KNOWN_BROKEN:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BROKEN[c.id]))
        if c.id in NOT_RUN:
            marks.append(pytest.mark.xfail(run=False, reason=NOT_RUN[c.id]))
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


IN_PROCESS = [c for c in CASES if not c.subprocess]
NATIVE = [c for c in CASES if c.subprocess]


def test_corpus_size_and_ids():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    assert len(CASES) >= 150
    commands = {c.argv[0] if c.argv[0] != "specs" else "specs " + c.argv[1] for c in CASES}
    assert {"opt", "convert", "run", "spmd-run", "ptx", "specs check", "specs show", "specs list", "passes",
            "bench-pipeline"} <= commands


@pytest.mark.parametrize("case", _params(IN_PROCESS))
def test_bad_input(cli, tmp_path, monkeypatch, case):
    argv, out, cwd = _materialize(case, tmp_path)
    monkeypatch.chdir(cwd)
    # Native code (MLIR's location snapshots) may keep temp files in TMPDIR a moment
    # after a command; they are not its output, so TMPDIR is kept apart from cwd.
    monkeypatch.setenv("TMPDIR", str(_tmpdir(tmp_path)))
    before = _listing(tmp_path / "in")
    _check(case, cli(*argv), out, cwd, before)


@pytest.mark.slow
@pytest.mark.parametrize("case", _params(NATIVE))
def test_bad_input_native(tmp_path, case):
    """Inputs that once killed the process: run as a fresh ``mlirhlo`` would."""
    argv, out, cwd = _materialize(case, tmp_path)
    env = dict(os.environ, TMPDIR=str(_tmpdir(tmp_path)), **case.env)
    before = _listing(tmp_path / "in")
    try:
        proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", *argv], capture_output=True, text=True,
                              cwd=cwd, env=env, timeout=case.timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hangs: no answer in {case.timeout:g} s")
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    _check(case, CliResult(code, proc.stdout, proc.stderr), out, cwd, before)
