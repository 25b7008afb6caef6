"""The loader: every input format becomes a StableHLO module, detected by content."""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import DATA
from hypothesis import given, settings
from hypothesis import strategies as st

from mlirhlo_driver.errors import InputError
from mlirhlo_driver.inputs import loader as inputs
from mlirhlo_driver.ir import emit

MLP_DUMP = DATA / "mlp_train_step.before_optimizations.txt"


def _ops(module) -> str:
    return emit.stablehlo_text(module)


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


def test_input_format_forced(tmp_path):
    odd = tmp_path / "noext"
    shutil.copy(DATA / "chlo_special.mlir", odd)
    assert inputs.load(str(odd), input_format="mlir")[0].format == "mlir"
    with pytest.raises(InputError) as e:
        inputs.load(str(odd), input_format="hlo")
    assert e.value.line == 1  # HLO parser rejects the first line


def test_jax_function_entry_point(tmp_path, monkeypatch):
    (tmp_path / "my_model.py").write_text(
        "import jax.numpy as jnp\n\n"
        "def layer(x, idx):\n"
        "    return jnp.tanh(x).sum(1)[idx]\n")
    monkeypatch.chdir(tmp_path)
    (loaded,) = inputs.load("my_model:layer", arg_specs="f32[8,128],i32[8]")
    assert loaded.format == "jax" and loaded.name == "layer"
    text = _ops(loaded.module)
    assert "tensor<8x128xf32>" in text and "tensor<8xi32>" in text


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


class _Diag:
    message = "op has no StableHLO form"


class _FailureWithDiagnostics(Exception):
    error_diagnostics = [_Diag()]


@pytest.mark.parametrize("diagnostics, native_stderr, said", [
    (True, b"", "op has no StableHLO form"),  # MLIR's own diagnostic first
    (False, b"LLVM ERROR: first\nlegalization ran out of patterns\n", "legalization ran out of patterns"),
    (False, b"", "failed"),
])
def test_mhlo_legalization_failure_says_why(tmp_path, monkeypatch, diagnostics, native_stderr, said):
    """A legalization that fails gives MLIR's diagnostic, else the last line the pass wrote
    to the native stderr, else 'failed': one line, never an IndexError."""
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
    assert f"nested more than {MAX_NESTING} levels deep" in str(e.value)
    with pytest.raises(InputError):
        check_nesting(mixed[:MAX_NESTING + 1])


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
        assert e.value.message == "byte 0xe9 is not UTF-8; a text module must be UTF-8"
        assert (e.value.file, e.value.line, e.value.col) == ("latin.mlir", 4, 4)
    else:
        assert e.value.message.startswith("not a module: binary data")


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
