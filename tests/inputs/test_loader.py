"""inputs/loader.py: every input format becomes a StableHLO module, detected by content."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlirhlo_driver.errors import InputError
from mlirhlo_driver.inputs import loader as inputs
from mlirhlo_driver.ir import dtypes, emit, protos
from tests.conftest import DATA, assert_mentions
from tests.dtype_tables import ARRAYS, HERE, NEWEST

MLP_DUMP = DATA / "mlp_train_step.before_optimizations.txt"


def _ops(module) -> str:
    return emit.stablehlo_text(module)


class _Diag:
    message = "op has no StableHLO form"


class _FailureWithDiagnostics(Exception):
    error_diagnostics = [_Diag()]


# ------------------------------------------------------ pinned loader contracts

_TINY_MLIR = b"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"

_CRASHY_HLO = ("HloModule m\nENTRY e {\n  p0 = f32[2] parameter(0)\n  p3 = f32[2] parameter(3)\n"
               "  ROOT r = f32[3] reshape(p0)\n}\n")


def test_jax_lowers_each_args_spelling_to_the_mlir_spelling():
    """--args: every HLO spelling (and the aliases) names the dtype jax lowers to the table's
    MLIR type."""
    from mlirhlo_driver.inputs import loader

    spec = ",".join(f"{t.hlo}[2]" for t in ARRAYS) + ",bool[],i8[],i64[1],i4[3]"
    args = loader.parse_arg_specs(spec)
    assert args == [(t.numpy, (2,)) for t in ARRAYS] + [("bool", ()), ("int8", ()), ("int64", (1,)),
                                                         ("int4", (3,))]
    import jax

    # jax lowers the types its own dtype table knows (jax 0.9 has no int1): all of them from
    # the newest supported jax on.
    lowers = [t for t in HERE if NEWEST or t.numpy not in ("int1", "uint1")]
    structs = [jax.ShapeDtypeStruct((2,), dtypes.np_dtype(t.numpy)) for t in lowers]
    text = loader.lower_jax_function(lambda *a: a, structs, name="ids").module.operation.get_asm()
    signature = re.search(r"func\.func public @main\((.*?)\) ->", text).group(1)
    assert re.findall(r"tensor<2x([^>]+>?)>", signature) == [t.mlir for t in lowers]


def test_args_spelling_errors_stay_one_typed_error():
    from mlirhlo_driver.inputs import loader

    with pytest.raises(InputError) as e:
        loader.parse_arg_specs("f32[2],f8e4m3fm[2]")
    assert e.value.col == 8 and e.value.hint.startswith("did you mean 'f8e4m3fn'")
    with pytest.raises(InputError, match="unknown dtype 'i1'"):  # MLIR's i1 is pred: no alias
        loader.parse_arg_specs("i1[2]")


def test_xla_dump_loads_as_is():
    (loaded,) = inputs.load(str(MLP_DUMP))
    assert loaded.format == "hlo"
    assert loaded.name == "mlp_train_step"
    text = _ops(loaded.module)
    assert "func.func @main" in text and "stablehlo.dot_general" in text


def test_vhlo_artifact_from_jax_export():
    (loaded,) = inputs.load(str(DATA / "softmax.vhlo"))
    assert loaded.format == "vhlo"
    assert "stablehlo.exponential" in _ops(loaded.module)
    assert "vhlo." not in _ops(loaded.module)


def test_detection_by_content_not_extension(tmp_path):
    # An HLO module and a VHLO artifact under misleading names.
    hlo = tmp_path / "model.mlir"
    shutil.copy(MLP_DUMP, hlo)
    art = tmp_path / "model.txt"
    shutil.copy(DATA / "softmax.vhlo", art)
    assert inputs.load(str(hlo))[0].format == "hlo"
    assert inputs.load(str(art))[0].format == "vhlo"


def test_mlir_text_and_bytecode(tmp_path):
    (text,) = inputs.load(str(DATA / "chlo_special.mlir"))
    assert text.format == "mlir" and "chlo.erf_inv" in _ops(text.module)
    bc = tmp_path / "x.mlirbc"
    bc.write_bytes(emit.bytecode(text.module))
    (back,) = inputs.load(str(bc))
    assert back.format == "bytecode"
    assert _ops(back.module) == _ops(text.module)


def test_hlo_proto_binary_and_text(tmp_path):
    from mlirhlo_driver.ir import hlo_proto

    (src,) = inputs.load(str(MLP_DUMP))
    pb = tmp_path / "m.pb"
    pb.write_bytes(emit.hlo_proto(src.module))
    assert inputs.load(str(pb))[0].format == "hlo-proto"
    pbtxt = tmp_path / "m.pbtxt"
    pbtxt.write_text(hlo_proto.to_text(hlo_proto.decode(pb.read_bytes())))
    assert inputs.load(str(pbtxt))[0].format == "hlo-pbtxt"
    assert "stablehlo.dot_general" in _ops(inputs.load(str(pbtxt))[0].module)


def test_an_hlo_snapshot_reads_as_the_dumps_module_before_optimizations(tmp_path):
    """XLA's HloSnapshot (*.snapshot.*.pb): the module before optimizations beside it, as
    XLA compiled it; alone, the snapshot's own (optimized) module."""
    snap = next((DATA / "xla_tools" / "snapshot").glob("*.snapshot.*.pb"))
    [u] = inputs.read_units(str(snap))
    assert (u.format, u.source) == ("hlo", str(snap.with_name("module_0008.jit__lambda.before_optimizations.txt")))
    lone = tmp_path / snap.name
    shutil.copy(snap, lone)
    [u] = inputs.read_units(str(lone))
    assert (u.format, u.source) == ("hlo-proto", str(lone))
    m = inputs.parse_unit(u)
    assert "stablehlo.dot" in str(m.module) or "stablehlo.dot_general" in str(m.module)
    assert inputs.snapshot_module(b"\x0a\x00junk", "x.pb") is None
    # A snapshot needs a module with a name and computations: either missing, it is none.

    whole = protos.message_class("xla.HloSnapshot").FromString(snap.read_bytes())
    for drop in ("name", "computations"):
        part = type(whole)()
        part.CopyFrom(whole)
        part.hlo.hlo_module.ClearField(drop)
        assert inputs.snapshot_module(part.SerializeToString(), str(lone)) is None, drop


def test_every_door_takes_a_snapshot(cli):
    snap = next((DATA / "xla_tools" / "snapshot").glob("*.snapshot.*.pb"))
    r = cli("opt", snap, "--platform", "cpu", "--stage", "hlo")
    assert r.code == 0 and r.out.startswith("HloModule jit__lambda"), r.err
    r = cli("kernels", snap, "--gpu-spec", "h100_sxm", "--json")
    assert r.code == 0 and '"module": "module_0008.jit__lambda"' in r.out, r.err


def test_input_format_forced(tmp_path):
    odd = tmp_path / "noext"
    shutil.copy(DATA / "chlo_special.mlir", odd)
    assert inputs.load(str(odd), input_format="mlir")[0].format == "mlir"
    with pytest.raises(InputError) as e:
        inputs.load(str(odd), input_format="hlo")
    assert e.value.line == 1  # HLO parser rejects the first line


def test_jax_function_entry_point(tmp_path, monkeypatch):
    import sys

    (tmp_path / "my_model.py").write_text(
        "import jax.numpy as jnp\n\n"
        "def layer(x, idx):\n"
        "    return jnp.tanh(x).sum(1)[idx]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as a user's Python does
    (loaded,) = inputs.load("my_model:layer", arg_specs="f32[8,128],i32[8]")
    assert loaded.format == "jax" and loaded.name == "layer"
    text = _ops(loaded.module)
    assert "tensor<8x128xf32>" in text and "tensor<8xi32>" in text
    # The user's file is read, nothing written beside it (no __pycache__).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my_model.py"]
    assert sys.dont_write_bytecode is False


def test_arg_specs_parse():
    assert inputs.parse_arg_specs("f32[8,128],i32[8],pred[],bf16[2, 3]") == [
        ("float32", (8, 128)), ("int32", (8,)), ("bool", ()), ("bfloat16", (2, 3))]


def test_split_input_file_chunks_and_offsets(tmp_path):
    src = (DATA / "dynamic_reshape.mlir").read_text()
    body = src.split("\n", 2)[2]  # drop the two comment lines
    f = tmp_path / "two.mlir"
    f.write_text(body + "// -----\n" + body.replace("@main", "@second"))
    chunks = inputs.load(str(f), split_input_file=True)
    assert [c.name for c in chunks] == ["two.0", "two.1"]
    assert "@second" in _ops(chunks[1].module)
    bad = tmp_path / "bad.mlir"
    bad.write_text(body + "// -----\n" + "func.func @f() {\n  %0 = foo.bar : i32\n}\n")
    with pytest.raises(InputError) as e:
        inputs.load(str(bad), split_input_file=True)
    # Line numbers are the file's, not the chunk's.
    first_chunk_lines = body.count("\n") + 1
    assert e.value.line == first_chunk_lines + 2


def test_directories_globs_and_dump_dirs(tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    shutil.copy(MLP_DUMP, dump / "module_0001.jit_a.before_optimizations.txt")
    (dump / "module_0001.jit_a.cpu_after_optimizations.txt").write_text("HloModule x\n")
    # An XLA dump dir: only its before_optimizations modules are inputs.
    assert [p.split("/")[-1] for p in inputs.expand_inputs([str(dump)])] == [
        "module_0001.jit_a.before_optimizations.txt"]
    assert inputs.load_inputs([str(dump)])[0].name == "module_0001.jit_a"
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(DATA / "chlo_special.mlir", mixed / "a.mlir")
    shutil.copy(DATA / "softmax.vhlo", mixed / "b.vhlo")
    assert len(inputs.load_inputs([str(mixed)])) == 2
    assert len(inputs.load_inputs([str(mixed / "*.mlir")])) == 1


def test_one_context_for_all_modules():
    a = inputs.load(str(MLP_DUMP))[0].module
    b = inputs.load(str(DATA / "sharded_matmul.mlir"))[0].module
    assert a.context is b.context
    assert "sdy.sharding" in _ops(b)  # shardy dialect is registered


def test_mhlo_input_becomes_stablehlo(tmp_path):
    from mlirhlo_driver.ir import emit

    (src,) = inputs.load(str(DATA / "chlo_special.mlir"))
    mhlo = tmp_path / "m.mlir"
    mhlo.write_text(emit.mhlo_text(src.module))
    assert "mhlo.constant" in mhlo.read_text()
    (loaded,) = inputs.load(str(mhlo))
    text = _ops(loaded.module)
    assert "= mhlo." not in text and "stablehlo.constant" in text


@pytest.mark.golden
@pytest.mark.parametrize("diagnostics, native_stderr, said", [
    (True, b"", "op has no StableHLO form"),  # MLIR's own diagnostic first
    (False, b"LLVM ERROR: first\nlegalization ran out of patterns\n", "legalization ran out of patterns"),
    (False, b"", "failed"),
])
def test_mhlo_legalization_failure_says_why(tmp_path, monkeypatch, diagnostics, native_stderr, said):
    """A legalization that fails gives MLIR's diagnostic, else the last line the pass wrote
    to the native stderr, else 'failed': one line, never an IndexError. The golden of that error."""
    import os

    from jaxlib.mlir import passmanager

    (src,) = inputs.load(str(DATA / "chlo_special.mlir"))
    mhlo = tmp_path / "m.mlir"
    mhlo.write_text(emit.mhlo_text(src.module))

    class FailingPipeline:
        @staticmethod
        def parse(_spec):
            return FailingPipeline()

        def run(self, _op):
            os.write(2, native_stderr)
            raise _FailureWithDiagnostics("pass failed") if diagnostics else RuntimeError("pass failed")

    monkeypatch.setattr(passmanager, "PassManager", FailingPipeline)
    with pytest.raises(InputError) as e:
        inputs.load(str(mhlo))
    assert e.value.format() == f"error: {mhlo}: cannot legalize MHLO to StableHLO: {said}"


@pytest.mark.parametrize("line, candidate", [
    ("%0 = mhlo.add %a, %b : tensor<f32>", True),
    ("  mhlo.return %0 : tensor<f32>", True),
    ('%0 = "mhlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>', True),
    ('"mhlo.return"() : () -> ()', True),
    ("%1 = stablehlo.abs %a : tensor<f32>  %2 = mhlo.abs %1 : tensor<f32>", True),  # two ops, one line
    ("%0:2 = mhlo.while(%iterArg = %a) : tensor<f32>", True),
    ("module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {", False),
    ('func.func @main(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}"}) -> tensor<4xf32> {', False),
    ("func.func public @main() attributes {mhlo.is_entry}", False),
    ("%0 = stablehlo.custom_call @mhlo.topk(%a) : (tensor<4xf32>) -> tensor<4xf32>", False),
    ('%0 = stablehlo.add %a, %a {"mhlo.frontend_attributes" = {}} : tensor<f32>', False),
    ('%0 = stablehlo.abs %a : tensor<f32> loc("mhlo.abs")', False),
    ("%t = stablehlo.after_all : !mhlo.token", False),
])
def test_mhlo_op_names_are_told_from_mhlo_attributes(line, candidate):
    """Only text that can name an MHLO op makes the loader walk the module for one."""
    assert inputs.names_mhlo_op(line) == candidate


def test_mhlo_attributes_alone_cost_no_walk_and_ops_on_one_line_are_found(tmp_path, monkeypatch):
    from mlirhlo_driver.ir import emit as ir_emit

    attrs = tmp_path / "attrs.mlir"
    attrs.write_text('module @m attributes {mhlo.num_partitions = 1 : i32} {\n'
                     '  func.func @main(%a: tensor<4xf32> {mhlo.sharding = "{replicated}"}) -> tensor<4xf32> {\n'
                     "    %0 = stablehlo.abs %a : tensor<4xf32>\n    return %0 : tensor<4xf32>\n  }\n}\n")
    walked = []
    real = ir_emit.has_mhlo
    monkeypatch.setattr(ir_emit, "has_mhlo", lambda m: walked.append(1) or real(m))
    inputs.load(str(attrs))
    assert walked == []
    one_line = tmp_path / "one_line.mlir"
    one_line.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                        "  %0 = stablehlo.abs %a : tensor<4xf32>  %1 = mhlo.negate %0 : tensor<4xf32>\n"
                        "  return %1 : tensor<4xf32>\n}\n")
    (loaded,) = inputs.load(str(one_line))
    assert walked == [1]
    text = _ops(loaded.module)
    assert "mhlo." not in text and "stablehlo.negate" in text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["", "  ", "// c", "# c", "HloModule m", " module {", "x", "\t//"]), max_size=8),
       st.lists(st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\x0c", "\u2028", "\x1c"]), min_size=8, max_size=8))
def test_first_code_line_is_the_first_line_splitlines_gives(lines, breaks):
    """The head is read line by line, not by splitting the whole text; every line break
    str.splitlines knows still ends a line."""
    from mlirhlo_driver.inputs.loader import _first_code_line

    text = "".join(line + brk for line, brk in zip(lines, breaks))
    expected = next((s for s in (ln.strip() for ln in text.splitlines()) if s and not s.startswith(("//", "#"))), "")
    assert _first_code_line(text) == expected


@pytest.mark.parametrize("opener, closer", [("(", ")"), ("[", "]"), ("{", "}"), ("<", ">")])
def test_nesting_up_to_the_limit_is_read_and_one_deeper_is_one_error(opener, closer):
    """check_nesting's bound is exact, for each bracket kind alone and mixed with the others: MAX_NESTING
    levels pass, one more is refused at the bracket that goes over (line and column), with the offset
    of a split file's part added; '->' closes nothing."""
    from mlirhlo_driver.errors import InputError
    from mlirhlo_driver.inputs.loader import MAX_NESTING, check_nesting

    mixed = "([{<" * MAX_NESTING
    for text in (opener * MAX_NESTING + closer * MAX_NESTING, "x\n" + "->".join(opener * MAX_NESTING),
                 mixed[:MAX_NESTING] + ")" * MAX_NESTING + "()" * 300):
        check_nesting(text)
    deep = "a\n  " + opener * (MAX_NESTING + 1) + closer * (MAX_NESTING + 1)
    with pytest.raises(InputError) as e:
        check_nesting(deep, "m.mlir", offset=10)
    assert (e.value.file, e.value.line, e.value.col) == ("m.mlir", 12, 3 + MAX_NESTING)
    assert_mentions(str(e.value), f"more than {MAX_NESTING} levels")
    with pytest.raises(InputError):
        check_nesting(mixed[:MAX_NESTING + 1])


@pytest.mark.golden
def test_nesting_refusal_exactly():
    """The golden of check_nesting's error."""
    with pytest.raises(InputError) as e:
        inputs.check_nesting("a\n  " + "(" * (inputs.MAX_NESTING + 1), "m.mlir", offset=10)
    assert e.value.format() == ("error: m.mlir:12:259: nested more than 256 levels deep (brackets, types or "
                                "regions) (the parser recurses once per level; flatten the nesting)")


@pytest.mark.slow
def test_64_bit_arguments_and_only_they_turn_on_jax_64_bit_mode(tmp_path):
    """A JAX function's 64-bit arguments (f64, s64, u64; not c64, which is two f32) lower with JAX's
    64-bit mode on, which also widens the function's own integers; other arguments leave it off."""
    import subprocess
    import sys

    (tmp_path / "m64.py").write_text("import jax.numpy as jnp\n\ndef f(x):\n    return x, jnp.arange(2)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for arg, wide in [("f32[2]", False), ("c64[2]", False), ("f64[2]", True), ("u64[2]", True), ("s64[2]", True)]:
        proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", "m64:f", "--args", arg],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert ("-> (tensor<2x" in proc.stdout) and (("tensor<2xi64>" in proc.stdout) == wide), (arg, proc.stdout)
        assert ("tensor<2xi32>" in proc.stdout) == (not wide), arg


@pytest.mark.parametrize("size, bad, as_text", [
    (100, 3, True), (100, 4, False),  # a small file: up to 3 bad bytes
    (1000, 10, True), (1000, 11, False),  # a larger one: up to 1% of its bytes
])
def test_a_text_module_with_up_to_1_percent_non_utf8_bytes_is_text_with_the_first_bad_byte_placed(size, bad, as_text):
    """Up to max(3, 1% of the file) non-UTF-8 bytes: text, the first bad byte's line:col named; more: binary data."""
    head = b"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"
    comment = b"// " + b"\xe9 " * bad + b"\n"
    data = head + comment + b"//" + b"x" * (size - len(head) - len(comment) - 3) + b"\n"
    assert len(data) == size and data.decode("utf-8", "replace").count("\ufffd") == bad
    with pytest.raises(InputError) as e:
        inputs.load("latin.mlir", data=data)
    if as_text:
        assert_mentions(e.value.message, "0xe9", "UTF-8")
        assert (e.value.file, e.value.line, e.value.col) == ("latin.mlir", 4, 4)
    else:
        assert_mentions(e.value.message, "binary data")
        assert (e.value.file, e.value.line) == ("latin.mlir", None)


def test_mhlo_bytecode_becomes_stablehlo_and_stablehlo_bytecode_costs_no_walk(tmp_path, monkeypatch):
    """MLIR bytecode holding MHLO ops loads as StableHLO; bytecode naming no MHLO is not walked."""
    from mlirhlo_driver.ir import emit as ir_emit

    src = inputs.parse_mlir("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                            "  %0 = stablehlo.constant dense<1.0> : tensor<4xf32>\n"
                            "  %1 = stablehlo.add %a, %0 : tensor<4xf32>\n"
                            "  %2 = stablehlo.negate %1 : tensor<4xf32>\n"
                            "  return %2 : tensor<4xf32>\n}\n")
    walked = []
    real = ir_emit.has_mhlo
    monkeypatch.setattr(ir_emit, "has_mhlo", lambda m: walked.append(1) or real(m))
    plain = tmp_path / "plain.mlirbc"
    plain.write_bytes(emit.bytecode(src))
    assert b"mhlo" not in plain.read_bytes()
    (loaded,) = inputs.load(str(plain))
    assert loaded.format == "bytecode" and walked == []
    assert _ops(loaded.module) == _ops(src)
    mhlo_bc = tmp_path / "mhlo.mlirbc"
    mhlo_bc.write_bytes(emit.bytecode(inputs.parse_mlir(emit.mhlo_text(src))))
    assert b"mhlo" in mhlo_bc.read_bytes()
    (loaded,) = inputs.load(str(mhlo_bc))
    assert loaded.format == "bytecode" and walked == [1]
    text = _ops(loaded.module)
    assert "mhlo." not in text and "stablehlo.negate" in text and "stablehlo.add" in text


@pytest.mark.parametrize("text, candidate", [
    ("mhlo.add %a, %b : tensor<f32>", True),  # at the very start of the text
    ('"mhlo.add" (%a) : (tensor<f32>) -> tensor<f32>', True),
    ('"mhlo.sharding" = "x"', False),  # a quoted attribute key, no '('
    ("%0 = my_mhlo.add %a : tensor<f32>", False),
    ("%0 = xmhlo.add %a : tensor<f32>", False),
    ("%0 = $mhlo.add %a : tensor<f32>", False),
    ("{mhlo.flag, other}", False),
    ("[mhlo.x]", False),
    ("#mhlo.x = 1 mhlo.sharding = 2 mhlo.negate %a", True),  # the third one is an op
    ("no dialect here", False),
])
def test_mhlo_op_names_at_the_start_and_after_each_kind_of_prefix(text, candidate):
    """An MHLO op name is found at offset 0 and after any non-name character; a name glued to a word,
    '$', '#', or standing as a key is not; every occurrence in the text is judged."""
    assert inputs.names_mhlo_op(text) is candidate


def test_split_chunks_give_each_chunk_its_line_offset():
    """split_chunks: text between '// -----' lines (trailing blanks allowed), blank chunks dropped,
    each with the 0-based line where it starts in the file."""
    text = "a\n// -----\nb\nc\n// -----  \n\n// -----\nd\n"
    assert inputs.split_chunks(text) == [("a\n", 0), ("b\nc\n", 2), ("d\n", 7)]
    assert inputs.split_chunks("x\ny\n") == [("x\ny\n", 0)]
    assert inputs.split_chunks("// -----\nx\n") == [("x\n", 1)]


@pytest.mark.parametrize("source, stem", [
    ("x.before_optimizations.txt", "x"),
    ("module_1.jit_f.before_optimizations.hlo.pb", "module_1.jit_f"),
    ("m.after_optimizations.stablehlo.mlir", "m"),
    ("a.hlo.pb", "a"),
    ("d/m.stablehlo.mlir", "m"),
    ("q.mhlo.mlir", "q"),
    ("r.after_optimizations.hlo", "r"),
    ("k.vhlo", "k"),
    ("f.mlirbc", "f"),
    ("p.pbtxt", "p"),
    ("z.bin", "z.bin"),
    ("dir/.mlir", "module"),
])
def test_module_stem_strips_one_loadable_suffix_then_dump_suffixes(source, stem):
    """Output names drop the file's loadable suffix and XLA's dump suffixes; nothing left: 'module'."""
    assert inputs.module_stem(source) == stem


@pytest.mark.parametrize("data, source, fmt", [
    (b"foo bar", "x.pbtxt", "hlo-pbtxt"),
    (b"foo", "x.hlo", "hlo"),
    (b"foo\nENTRY e {", "x.txt", "hlo"),
    (b"foo", "x.txt", "mlir"),
    (b"foo", "x", "mlir"),
    (b"HloModule m", "x.mlir", "hlo"),
    (b"  // c\n# d\nhlo_module {", "x", "hlo-pbtxt"),
    (b'name: "m"', "x", "hlo-pbtxt"),
    (b"computations {", "x", "hlo-pbtxt"),
    (b'entry_computation_name: "e"', "x", "hlo-pbtxt"),
    (b"module {\n}", "x.pbtxt", "mlir"),
    (b"module @m {}", "x.hlo", "mlir"),
    (b"module attributes {}", "x.txt", "mlir"),
    (b"func.func @f", "x.hlo", "mlir"),
    (b'"builtin.module"()', "x.pbtxt", "mlir"),
    (b"!t = tensor<f32>", "x.hlo", "mlir"),
    (b"sdy.mesh @m = <>", "x.hlo", "mlir"),
    (b"\x1f\x8bxx", "x.mlir", "hlo-proto"),
    (b"ML\xefR\x00StableHLO_v1.0", "x", "vhlo"),
    (b"ML\xefR\x00MLIR", "x", "bytecode"),
    (b"\x0afoo ENTRY", "a.txt", "hlo"),  # starts like a proto, but is not one
    (b"module {}\n" + b" " * 4086 + b"\x00", "n.mlir", "mlir"),  # a NUL past the first 4096 bytes
])
def test_detect_format_by_head_then_by_extension(data, source, fmt):
    """Content decides (bytecode magic, gzip, HLO/pbtxt/MLIR heads); only unknown text falls back on the name."""
    assert inputs.detect_format(data, source) == fmt


@pytest.mark.golden
@pytest.mark.parametrize("data, message, line, col", [
    (b"x\x00y", "not a module: binary data that is neither MLIR bytecode nor an HLO proto", None, None),
    (b"module {}\n" + b" " * 4085 + b"\x00", "not a module: binary data that is neither MLIR bytecode nor an HLO proto",
     None, None),  # the NUL is the 4096th byte
    (b"module {}\n" + b" " * 4086 + b"\x00\xe9", "byte 0xe9 is not UTF-8; a text module must be UTF-8", 2, 4088),
    (b"\n\xe9 x", "byte 0xe9 is not UTF-8; a text module must be UTF-8", 2, 1),
    (b"\xe9\n", "byte 0xe9 is not UTF-8; a text module must be UTF-8", 1, 1),
])
def test_detect_format_refuses_binary_and_places_a_bad_utf8_byte(data, message, line, col):
    """A NUL in the first 4096 bytes is binary data; past them a stray non-UTF-8 byte is placed
    line:col. The golden of detect_format's refusals."""
    with pytest.raises(InputError) as e:
        inputs.detect_format(data, "b.mlir")
    assert (e.value.message, e.value.file, e.value.line, e.value.col) == (message, "b.mlir", line, col)


@pytest.mark.golden
@pytest.mark.parametrize("raw, value", [
    (None, 60.0), ("", 60.0), ("  ", 60.0), ("0.5", 0.5), (" 2 ", 2.0), ("1e-9", 1e-9),
    ("0", None), ("-1", None), ("inf", None), ("nan", None), ("abc", None),
])
def test_read_timeout_default_and_only_positive_finite_numbers(monkeypatch, raw, value):
    """$MLIRHLO_READ_TIMEOUT unset or blank: 60 s; a positive finite number: that; else one error
    (the golden of read_timeout's)."""
    if raw is None:
        monkeypatch.delenv(inputs.READ_TIMEOUT_ENV, raising=False)
    else:
        monkeypatch.setenv(inputs.READ_TIMEOUT_ENV, raw)
    if value is not None:
        assert inputs.read_timeout() == value
        return
    with pytest.raises(InputError) as e:
        inputs.read_timeout()
    assert e.value.format() == f"error: MLIRHLO_READ_TIMEOUT must be a positive number of seconds, not '{raw}'"


@pytest.mark.golden
@pytest.mark.parametrize("native_log, words", [
    ("x nanobind::str(): conversion error y", "MLIR's bytecode reader died on a diagnostic that is not UTF-8 text"),
    ("nanobind::detail::str_from_cstr_and_size(): conversion error",
     "MLIR's bytecode reader died on a diagnostic that is not UTF-8 text"),
    ("some other abort", "MLIR's bytecode reader died: SIGABRT"),
    (None, "MLIR's bytecode reader died: SIGABRT"),
])
def test_crash_words_name_nanobinds_abort_on_undecodable_text(native_log, words):
    """A crash whose native log is nanobind's text conversion error says so; any other keeps its
    message. The golden of those words."""
    from types import SimpleNamespace

    crash = SimpleNamespace(message="MLIR's bytecode reader died: SIGABRT", native_log=native_log)
    assert inputs._crash_words(crash) == words


@pytest.mark.golden
def test_hlo_parse_error_picks_the_most_specific_message_at_the_first_position():
    """XLA's parse errors: the first position wins, nested-instruction retries are dropped, a 'does not
    exist'/'unknown'/'expected' message beats the others, the line gets the chunk's offset. The golden
    of _hlo_parse_error's messages (XLA's words, chosen, or ours around them)."""
    msg = ("was parsing 3:5: error: expects opcode but sees p0\n"
           "was parsing 3:5: error: other\n"
           "was parsing 3:5: error: instruction does not exist: p2\n"
           "was parsing 4:1: error: unknown x")
    e = inputs._hlo_parse_error(msg, "f.hlo", 10)
    assert (e.message, e.file, e.line, e.col) == ("instruction does not exist: p2", "f.hlo", 13, 5)
    e = inputs._hlo_parse_error("was parsing 2:7: error: foo\nwas parsing 2:7: error: bar", "f.hlo", 0)
    assert (e.message, e.line, e.col) == ("foo", 2, 7)
    e = inputs._hlo_parse_error("was parsing 2:7: error: expects opcode but sees p0", "f.hlo", 0)
    assert e.message == "expects opcode but sees p0"  # the only message, though a retry's
    e = inputs._hlo_parse_error("INVALID_ARGUMENT: bad thing\nsecond line", "f.hlo", 3)
    assert (e.message, e.file, e.line, e.col) == ("malformed HLO text: bad thing", "f.hlo", None, None)


def test_hlo_crash_and_reshape_error_are_placed_at_the_instruction_name():
    """XLA CHECKs naming a parameter number or a shape pair, and a reshape count error, point at the
    instruction's name (past ROOT); anything else has no place."""
    assert inputs._locate_hlo_crash("Check failed: invalid parameter number 3; got 3", _CRASHY_HLO) == (4, 3)
    assert inputs._locate_hlo_crash("Check failed: shape: f32[3] operand: f32[2]", _CRASHY_HLO) == (5, 8)
    assert inputs._locate_hlo_crash("Check failed: invalid parameter number; got 7", _CRASHY_HLO) == (None, None)
    assert inputs._locate_hlo_crash("something else", _CRASHY_HLO) == (None, None)
    assert inputs._instruction_before(_CRASHY_HLO, 6, "f32[3]", "reshape") == (5, 8)
    assert inputs._instruction_before(_CRASHY_HLO, 99, "f32[3]", "reshape") == (5, 8)
    assert inputs._instruction_before(_CRASHY_HLO, 5, "f32[3]", "reshape") == (5, 8)
    assert inputs._instruction_before(_CRASHY_HLO, 4, "f32[3]", "reshape") is None
    assert inputs._instruction_before("r = f32[3] reshape(p)\nx = f32[] add()", 2, "f32[3]", "reshape") == (1, 1)
    assert [inputs._name_col(s) for s in ("  ROOT add.1 = f32[] add(a, b)", "x = y", "   p = f32[] parameter(0)")] == [
        8, 1, 4]
    msg = ("was parsing 6:1: error: expects the same number of elements in result shape f32[3] "
           "and operand shape f32[2]")
    e = inputs._hlo_parse_error(msg, "c.hlo", 100, _CRASHY_HLO)
    assert (e.line, e.col) == (105, 8)
    e = inputs._hlo_parse_error(msg, "c.hlo", 100)
    assert (e.line, e.col) == (106, 1)


@pytest.mark.golden
@pytest.mark.parametrize("spec, message, col", [
    ("f32", "malformed argument spec at column 1: expected DTYPE[DIMS] like f32[8,128]", 1),
    ("f32[2],f32", "malformed argument spec at column 8: expected DTYPE[DIMS] like f32[8,128]", 8),
    ("f32[2]x", "malformed argument spec at column 7: expected ','", 7),
    ("f32[2], zz[1]", "unknown dtype 'zz' in argument spec", 9),
])
def test_arg_spec_errors_name_the_column(spec, message, col):
    """Malformed --args name the 1-based column where reading stopped, at the parameter as the
    caller spells it (--args on a command line, args in Python). The golden of parse_arg_specs' errors."""
    from mlirhlo_driver.errors import FLAGS, spell

    with pytest.raises(InputError) as e:
        inputs.parse_arg_specs(spec)
    assert (e.value.message, spell(e.value.file, FLAGS), e.value.col) == (message, "--args", col)
    assert str(e.value).startswith(f"args:{col}: ")


def test_arg_specs_aliases_case_and_trailing_comma():
    """Dtypes are case-blind, 'bool' and MLIR's signless i8..i64 are aliases, a trailing comma is allowed."""
    assert inputs.parse_arg_specs("F32[1],bool[],i8[2],i64[3],u8[4],") == [
        ("float32", (1,)), ("bool", ()), ("int8", (2,)), ("int64", (3,)), ("uint8", (4,))]
    assert inputs.parse_arg_specs("") == []


def test_expand_inputs_globs_recurse_and_errors_name_the_spec(tmp_path):
    """'**' globs recurse; an empty match, a missing path and a bare directory of nothing loadable are
    errors naming the spec; a JAX entry point passes through; '?' and '[' glob too."""
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    for rel in ("a.mlir", "sub/b.mlir", "sub/deep/c.mlir", "sub/d.bin"):
        (tmp_path / rel).write_bytes(_TINY_MLIR)
    got = inputs.expand_inputs([str(tmp_path / "**" / "*.mlir")])
    assert [os.path.relpath(p, tmp_path) for p in got] == ["a.mlir", "sub/b.mlir", "sub/deep/c.mlir"]
    assert inputs.expand_inputs([str(tmp_path / "?.mlir"), str(tmp_path / "[a]*")]) == [
        str(tmp_path / "a.mlir")] * 2
    assert inputs.expand_inputs([str(tmp_path / "sub")]) == [str(tmp_path / "sub/b.mlir"),
                                                              str(tmp_path / "sub/deep/c.mlir")]
    assert inputs.expand_inputs(["no_such_pkg.mod:fn", "-"]) == ["no_such_pkg.mod:fn", "-"]
    for spec, fact in [(str(tmp_path / "*.nothing"), "no files match"),
                       (str(tmp_path / "missing.mlir"), "no such file")]:
        with pytest.raises(InputError) as e:
            inputs.expand_inputs([spec])
        assert e.value.file == spec
        assert_mentions(e.value.message, fact)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.md").write_text("x")
    with pytest.raises(InputError) as e:
        inputs.expand_inputs([str(empty)])
    assert e.value.file == str(empty)
    assert_mentions(e.value.message, "no loadable modules")
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "m.before_optimizations.txt").write_text("HloModule m\n")
    (dump / "m.after_optimizations.txt").write_text("HloModule m\n")
    assert inputs.expand_inputs([str(dump)], prefer_dump_modules=False) == [
        str(dump / "m.after_optimizations.txt"), str(dump / "m.before_optimizations.txt")]


@pytest.mark.golden
@pytest.mark.parametrize("spec, message", [
    ("{tmp}/*.nothing", "error: {tmp}/*.nothing: no files match this pattern"),
    ("{tmp}/missing.mlir", "error: {tmp}/missing.mlir: no such file or directory"),
    ("{tmp}/empty", "error: {tmp}/empty: directory holds no loadable modules"),
])
def test_expand_inputs_errors_exactly(tmp_path, spec, message):
    """A module argument that names nothing loadable: the golden of expand_inputs' errors."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.md").write_text("x")
    with pytest.raises(InputError) as e:
        inputs.expand_inputs([spec.format(tmp=tmp_path)])
    assert e.value.format() == message.format(tmp=tmp_path)


def test_module_units_one_per_module_with_split_chunks_named(tmp_path, monkeypatch):
    """module_units: one unit per file, one per chunk of a split file (named stem.i), a JAX entry named
    after its function; '-' is read once and its bytes travel with the unit."""
    import io
    import sys

    two = tmp_path / "two.mlir"
    two.write_bytes(_TINY_MLIR + b"// -----\n" + _TINY_MLIR)
    one = tmp_path / "one.mlir"
    one.write_bytes(_TINY_MLIR)
    assert inputs.module_units([str(two), str(one)], split_input_file=True) == [
        (str(two), "two.0", 0, True, None), (str(two), "two.1", 1, True, None), (str(one), "one", 0, False, None)]
    assert inputs.module_units([str(two), "pkg.mod:fn"], split_input_file=False) == [
        (str(two), "two", 0, False, None), ("pkg.mod:fn", "fn", 0, False, None)]
    data = _TINY_MLIR + b"// -----\n" + _TINY_MLIR
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert inputs.module_units(["-"], split_input_file=True) == [
        ("-", "-.0", 0, True, data), ("-", "-.1", 1, True, data)]
    assert inputs.looks_like_jax_entry("pkg.mod:fn") and not inputs.looks_like_jax_entry(str(two))


def test_load_reads_stdin_and_names_unreadable_paths(tmp_path, monkeypatch):
    """'-' is read from stdin; a directory, a path under a file and an empty file are one error each."""
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_TINY_MLIR)))
    (loaded,) = inputs.load("-")
    assert (loaded.name, loaded.source, loaded.format, loaded.line_offset) == ("-", "-", "mlir", 0)
    assert "func.func @main" in _ops(loaded.module)
    plain = tmp_path / "plain.mlir"
    plain.write_bytes(_TINY_MLIR)
    empty = tmp_path / "empty.mlir"
    empty.write_bytes(b" \n\t\n")
    for source, fact in [(str(tmp_path), "directory"),
                         (str(plain / "x.mlir"), "Not a directory"),  # the system's words
                         (str(empty), "empty")]:
        with pytest.raises(InputError) as e:
            inputs.load(source)
        assert e.value.file == source
        assert_mentions(e.value.message, fact)
    with pytest.raises(InputError) as e:
        inputs.load("given.mlir", data=b"\n  \n")
    assert e.value.file == "given.mlir"
    assert_mentions(e.value.message, "empty")


@pytest.mark.golden
@pytest.mark.parametrize("source, data, message", [
    ("{tmp}", None, "error: {tmp}: is a directory, not a module file"),
    ("{tmp}/empty.mlir", None, "error: {tmp}/empty.mlir: empty file"),
    ("given.mlir", b"\n  \n", "error: given.mlir: empty file"),
])
def test_load_file_errors_exactly(tmp_path, source, data, message):
    """A module file with nothing to read: the golden of load's errors for it."""
    (tmp_path / "empty.mlir").write_bytes(b" \n\t\n")
    with pytest.raises(InputError) as e:
        inputs.load(source.format(tmp=tmp_path), data=data)
    assert e.value.format() == message.format(tmp=tmp_path)


def test_split_load_of_one_chunk_keeps_its_offset_and_single_chunks_keep_the_stem(tmp_path):
    """chunk= loads that part only (its line offset kept); a split file of one chunk keeps the plain stem;
    formats that cannot be split load whole."""
    f = tmp_path / "parts.mlir"
    f.write_bytes(b"// head\n" + _TINY_MLIR + b"// -----\n" + _TINY_MLIR.replace(b"@main", b"@second"))
    (second,) = inputs.load(str(f), split_input_file=True, chunk=1)
    assert (second.name, second.line_offset) == ("parts.1", 5)
    assert "@second" in _ops(second.module) and "@main" not in _ops(second.module)
    (first,) = inputs.load(str(f), split_input_file=True, chunk=0)
    assert (first.name, first.line_offset) == ("parts.0", 0)
    single = tmp_path / "single.mlir"
    single.write_bytes(_TINY_MLIR)
    (only,) = inputs.load(str(single), split_input_file=True)
    assert (only.name, only.line_offset) == ("single", 0)
    (whole,) = inputs.load(str(single), split_input_file=False)
    assert (whole.name, whole.format, whole.line_offset) == ("single", "mlir", 0)


def test_forced_bytecode_format_on_text_says_what_it_looks_like(tmp_path):
    """--input-format vhlo/bytecode on a text file: one error with the detected format as the hint."""
    f = tmp_path / "t.mlir"
    f.write_bytes(_TINY_MLIR)
    for fmt in ("vhlo", "bytecode"):
        with pytest.raises(InputError) as e:
            inputs.load(str(f), input_format=fmt)
        assert e.value.file == str(f)
        assert_mentions(e.value.format(), f"--input-format {fmt}", "not bytecode", "--input-format mlir")
    with pytest.raises(InputError) as e:
        inputs.load(str(f), input_format="mlr")
    assert_mentions(e.value.format(), "'mlr'", "'mlir'")


@pytest.mark.golden
@pytest.mark.parametrize("fmt, message", [
    ("vhlo", "error: {f}: --input-format vhlo expects MLIR bytecode, but this is not bytecode (it looks like mlir: "
             "--input-format mlir)"),
    ("bytecode", "error: {f}: --input-format bytecode expects MLIR bytecode, but this is not bytecode (it looks "
                 "like mlir: --input-format mlir)"),
    ("mlr", "error: unknown input format 'mlr' (did you mean 'mlir'?)"),
])
def test_input_format_refusals_exactly(tmp_path, fmt, message):
    """A forced --input-format the file cannot be read as: the golden of those errors."""
    f = tmp_path / "t.mlir"
    f.write_bytes(_TINY_MLIR)
    with pytest.raises(InputError) as e:
        inputs.load(str(f), input_format=fmt)
    assert e.value.format() == message.format(f=f)


def test_jax_entry_points_prefer_the_working_directory(tmp_path, monkeypatch):
    """An entry point's module is imported from the working directory before other sys.path
    entries, and sys.path is the user's again after."""
    import sys

    name = "entry_shadow_probe"
    other = tmp_path / "other"
    here = tmp_path / "here"
    other.mkdir()
    here.mkdir()
    (other / f"{name}.py").write_text("def f(x):\n    return x - 1\n")
    (here / f"{name}.py").write_text("def f(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(other))
    monkeypatch.chdir(here)
    monkeypatch.delitem(sys.modules, name, raising=False)
    path = list(sys.path)
    try:
        (loaded,) = inputs.load(f"{name}:f", arg_specs="f32[3]")
    finally:
        sys.modules.pop(name, None)
    assert sys.path == path  # the user's process keeps its own path
    text = _ops(loaded.module)
    assert "stablehlo.multiply" in text and "stablehlo.subtract" not in text
    assert (loaded.name, loaded.source, loaded.format) == ("f", f"{name}:f", "jax")


def test_lower_jax_function_names_lambdas_and_keeps_source_locations():
    """A lambda is named 'jax_function' (a file-name friendly name), its source defaults to the name,
    and the lowered module keeps jax's debug locations (this file's name)."""
    import numpy as np

    loaded = inputs.lower_jax_function(lambda x: x + 1, [np.zeros(3, np.float32)])
    assert (loaded.name, loaded.source, loaded.format, loaded.line_offset) == (
        "jax_function", "jax_function", "jax", 0)
    asm = loaded.module.operation.get_asm(enable_debug_info=True)
    assert Path(__file__).name in asm

    def scale(x):
        return x * 3

    named = inputs.lower_jax_function(scale, [np.zeros(2, np.float32)], source="src:scale")
    assert (named.name, named.source) == ("scale", "src:scale")


def test_nesting_counts_closers_one_level_each():
    """Each closer takes back exactly one level: 256 deep, one closed, two opened is 257 at column 259."""
    inputs.check_nesting("(" * inputs.MAX_NESTING + ")" + "(")
    with pytest.raises(InputError) as e:
        inputs.check_nesting("(" * inputs.MAX_NESTING + ")" + "((", "n.mlir")
    assert (e.value.file, e.value.line, e.value.col) == ("n.mlir", 1, inputs.MAX_NESTING + 3)


@pytest.mark.golden
def test_mlir_parse_error_takes_the_first_diagnostic_and_its_place():
    """MLIR's first diagnostic is the error (line + offset, col); bytecode's 0:0 means no place; an
    unregistered dialect is named; without diagnostics the exception's last line follows the fallback.
    The golden of _mlir_parse_error's lines."""
    from types import SimpleNamespace

    class Failure(Exception):
        pass

    def failure(diags, text="boom"):
        exc = Failure(text)
        exc.error_diagnostics = diags
        return exc

    cases = [
        (failure([SimpleNamespace(location='loc("f.mlir":3:4)', message=" bad op \n"),
                  SimpleNamespace(location='loc("f.mlir":9:9)', message="second")]),
         "error: s.mlir:13:4: bad op"),
        (failure([SimpleNamespace(location='loc("f.mlir":0:0)', message="bytecode bad")]),
         "error: s.mlir: bytecode bad"),
        (failure([SimpleNamespace(location="loc(unknown)", message="operation 'foo.bar' not found for custom op")]),
         "error: s.mlir: operation 'foo.bar' not found for custom op (unregistered dialect)"),
        (failure([], "first\nlast line "), "error: s.mlir: malformed MLIR: last line"),
        (Failure(""), "error: s.mlir: malformed MLIR: Failure"),
    ]
    for exc, said in cases:
        assert inputs._mlir_parse_error(exc, "s.mlir", 10, "malformed MLIR").format() == said


def test_split_hlo_pbtxt_errors_carry_the_files_line(tmp_path):
    """A protobuf text error in a later part of a split file is placed at the file's line, not the part's."""
    f = tmp_path / "s.pbtxt"
    f.write_text('name: "a"\n// -----\nname: "b"\nbogus_field: 1\n')
    with pytest.raises(InputError) as e:
        inputs.load(str(f), split_input_file=True, chunk=1)
    assert (e.value.file, e.value.line, e.value.col) == (str(f), 4, 1)
    assert "bogus_field" in e.value.message


@pytest.mark.slow
def test_jax_function_with_f64_arguments_keeps_f64(tmp_path):
    # 64-bit argument specs switch jax to x64 first; without it jax would make them f32.
    # A fresh process: x64 is process-wide, and another test may have switched it on.
    (tmp_path / "guard_f64_model.py").write_text("def double(x):\n    return x * 2\n")
    code = ("from mlirhlo_driver.inputs import loader as inputs\n"
            "(m,) = inputs.load('guard_f64_model:double', arg_specs='f64[3]')\n"
            "print(m.module)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "tensor<3xf64>" in proc.stdout and "f32" not in proc.stdout


def test_read_timeout_comes_from_the_environment(monkeypatch):
    from mlirhlo_driver.inputs import loader as inputs

    monkeypatch.delenv(inputs.READ_TIMEOUT_ENV, raising=False)
    assert inputs.read_timeout() == inputs.DEFAULT_READ_TIMEOUT
    monkeypatch.setenv(inputs.READ_TIMEOUT_ENV, "2.5")
    assert inputs.read_timeout() == 2.5
    for bad in ("0", "-1", "nan", "inf", "soon"):
        monkeypatch.setenv(inputs.READ_TIMEOUT_ENV, bad)
        with pytest.raises(InputError) as e:
            inputs.read_timeout()
        assert_mentions(e.value.message, "MLIRHLO_READ_TIMEOUT", "positive", f"'{bad}'")


_DOT_WITH_ALGORITHM = """\
HloModule m

ENTRY e {
  p0 = f32[8,4] parameter(0)
  p1 = f32[4,2] parameter(1)
  ROOT dot = f32[8,2] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0},
    algorithm=dot_bf16_bf16_f32_x3, frontend_attributes={kept="yes"}
}
"""


def test_an_hlo_dot_with_an_algorithm_loads_as_the_dot_general_it_means(tmp_path):
    """XLA's import writes a 2-D dot's algorithm as a discardable attribute of stablehlo.dot, which
    a plugin's VHLO refuses (hlo-opt --platform=CUDA failed on it): it loads as dot_general with the
    algorithm its own, the module serializes to VHLO, and HLO gets back the same dot."""
    from tests.conftest import filecheck

    path = tmp_path / "dot.hlo"
    path.write_text(_DOT_WITH_ALGORITHM)
    (loaded,) = inputs.load(str(path))
    filecheck(_ops(loaded.module), """\
CHECK-NOT: stablehlo.dot %
CHECK: stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT], algorithm = <lhs_precision_type = bf16, rhs_precision_type = bf16, accumulation_type = f32, {{.*}}num_primitive_operations = 3
CHECK-SAME: mhlo.frontend_attributes = {kept = "yes"}
""", tmp_path)
    assert emit.vhlo_artifact(loaded.module)  # refused before (the CUDA plugin's version, and this one)
    filecheck(emit.hlo_text(loaded.module), """\
CHECK: dot(%{{.*}}), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_bf16_bf16_f32_x3, frontend_attributes={kept="yes"}
""", tmp_path)
