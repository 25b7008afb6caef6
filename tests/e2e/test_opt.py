"""``mlirhlo opt`` as a user runs it: what a new user does first, the usage errors and bad
inputs that get one ``error:`` line and exit 2 (not a traceback, a hang, a silently wrong
answer or native noise), and its outputs.
"""

from __future__ import annotations

import glob
import os
import shlex
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import DATA, MLIRHLO, REPO, assert_mentions, assert_one_line_error
from tests.e2e.conftest import NV_IR, SMALL, mlirhlo


@pytest.fixture(scope="module")
def three_inputs(tmp_path_factory):
    """An XLA dump's before_optimizations.txt, a jax.export artifact, a JAX function."""
    d = tmp_path_factory.mktemp("user")
    (d / "model.py").write_text(
        "import jax, jax.numpy as jnp\n\n"
        "def loss(w, x):\n"
        "    return jnp.mean(jax.nn.relu(x @ w) ** 2)\n")
    return [str(DATA / "mlp_train_step.before_optimizations.txt"), str(DATA / "softmax.vhlo"), "model:loss"], d


MLP_DUMP = DATA / "mlp_train_step.before_optimizations.txt"


def _opt_to_file(cli, tmp_path, *args):
    out = tmp_path / "out.mlir"
    result = cli("opt", *args, "-o", out)
    assert not out.exists(), "no half-written output on error"
    assert not list(tmp_path.glob(".out.mlir.*")), "no temp file left"
    return result


# ----------------------------------------------------------- Python passes

PLUGINS = {
    "native.py": '''
        import mlirhlo_driver

        @mlirhlo_driver.register_pass("canonicalize")
        def mine(op):
            pass
    ''',
    "twice.py": '''
        import mlirhlo_driver

        @mlirhlo_driver.register_pass("my-pass")
        def a(op):
            pass

        @mlirhlo_driver.register_pass("my-pass")
        def b(op):
            pass
    ''',
    "other.py": '''
        import mlirhlo_driver

        @mlirhlo_driver.register_pass("my-pass")
        def a(op):
            pass
    ''',
}


@pytest.fixture
def plugins(tmp_path):
    for name, text in PLUGINS.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


@pytest.mark.parametrize("which", [0, 1, 2])
def test_named_pipeline_passes_timing_and_ir_dump(cli, three_inputs, monkeypatch, tmp_path, which):
    sources, home = three_inputs
    monkeypatch.chdir(home)
    extra = ["--args", "f32[16,8],f32[4,16]"] if which == 2 else []
    named = cli("opt", sources[which], *extra, "--pipeline", "@simplify", "--timing")
    assert named.code == 0, named.err
    # MLIR names it CanonicalizerPass in jaxlib 0.10.2, Canonicalizer in 0.9.
    assert "Canonicalizer" in named.err and "Total" in named.err
    dumps = tmp_path / "ir"
    listed = cli("opt", sources[which], *extra, "--passes", "canonicalize,cse,symbol-dce",
                 "--print-ir-after-all", "--ir-dump-dir", dumps)
    assert listed.code == 0, listed.err
    files = sorted(os.listdir(next(dumps.iterdir())))
    assert [f.split("-", 2)[2] for f in files] == ["canonicalize.mlir", "cse.mlir", "symbol-dce.mlir"]
    assert "func.func" in listed.out


@pytest.mark.slow
def test_dump_every_stage_of_a_jax_programs_xla_dump_directory(cli, tmp_path):
    """A real JAX program dumped by XLA; every stage of every module in one command."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    jax = _jaxlib.jax()
    import jax.numpy as jnp

    dump = tmp_path / "xla_dump"
    for fn, args in ((lambda x: jnp.sort(x) * 2, (jnp.zeros(16),)),
                     (lambda a, b: jnp.tanh(a @ b), (jnp.zeros((8, 4)), jnp.zeros((4, 2))))):
        from jaxlib.mlir import ir

        with _jaxlib.ir_context():
            module = ir.Module.parse(jax.jit(fn).lower(*args).as_text())
        _jaxlib.compile_executable(module, _jaxlib.cpu_devices()[:1],
                                   _jaxlib.compile_options(dump_to=str(dump)))
    inputs = glob.glob(str(dump / "*before_optimizations.txt"))
    assert len(inputs) == 2
    out = tmp_path / "out"
    for platform, spec in (("cpu", []), ("cuda", ["--gpu-spec", "l4"])):
        result = cli("opt", dump, "--platform", platform, *spec, "--stage", "all", "--dump-dir", out / platform)
        assert result.code == 0, result.err
    from mlirhlo_driver import registry

    for platform in ("cpu", "cuda"):
        names = sorted(os.listdir(out / platform))
        per_module = len([s for s in registry.all_for(platform) if not s.multi])
        # multi-file stages: a cubin per kernel module, a Triton log per Triton fusion (or one note),
        # model-explorer's graph and (CUDA) an overlay per figure
        cubins = [n for n in names if n.endswith(".cubin")]
        triton_logs = [n for n in names if n.endswith(".triton-passes.txt")]
        explorer = [n for n in names if n.endswith(".model-explorer.json")]
        assert len(names) - len(cubins) - len(triton_logs) - len(explorer) == 2 * per_module, names
        assert len([n for n in explorer if n.count(".") == 3]) == 2, explorer  # a graph per module
        if platform == "cuda":
            # an overlay per figure; occupancy only where the thunk sequence gives launch
            # dimensions (jaxlib 0.9's does not: its kernels table has no grid × block)
            for table in (n for n in names if n.endswith(".kernels.txt")):
                stem = table.removesuffix(".kernels.txt")
                launched = any(" × " in line for line in (out / platform / table).read_text().splitlines()[4:])
                overlays = {n[len(stem) + 1:].removesuffix(".model-explorer.json")
                            for n in explorer if n.startswith(stem + ".") and n.count(".") == 4}
                assert overlays == {"roofline-time", "bound", "registers", "spills"} | (
                    {"occupancy"} if launched else set()), (stem, overlays)
        else:
            assert len(explorer) == 2, explorer
        assert len(cubins) >= (2 if platform == "cuda" else 0), names
        assert len(triton_logs) >= (2 if platform == "cuda" else 0), names
    ptx = [p for p in os.listdir(out / "cuda") if p.endswith(".ptx")]
    assert len(ptx) == 2
    for p in ptx:
        assert ".target sm_89" in (out / "cuda" / p).read_text()


def test_malformed_hlo_text(cli, tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n"
                   "  ROOT add = f32[4] add(p0, p2)\n}\n")
    assert_one_line_error(_opt_to_file(cli, tmp_path, bad), at=f"{bad}:5:29", facts=("p2",))


def test_unknown_hlo_opcode(cli, tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n  ROOT x = f32[4] frob(p0)\n}\n")
    assert_one_line_error(_opt_to_file(cli, tmp_path, bad), at=f"{bad}:5:19", facts=("frob",))


def test_malformed_mlir(cli, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %0 = stablehlo.tanhh %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    assert_one_line_error(_opt_to_file(cli, tmp_path, bad), at=f"{bad}:2:8", facts=("'stablehlo.tanhh'",))


def test_unregistered_dialect(cli, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  foo.bar() : () -> ()\n  return\n}\n")
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, bad))
    assert line.startswith(f"error: {bad}:2:3: Dialect `foo' not found for custom op 'foo.bar'")
    assert "unregistered dialect" in line


def test_truncated_bytecode(cli, tmp_path):
    from mlirhlo_driver.inputs import loader as inputs
    from mlirhlo_driver.ir import emit

    module = inputs.load(str(DATA / "chlo_special.mlir"))[0].module
    data = emit.bytecode(module)
    bad = tmp_path / "cut.mlirbc"
    bad.write_bytes(data[: len(data) // 2])
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, bad))
    assert line.startswith(f"error: {bad}: ")


def test_truncated_vhlo_artifact(cli, tmp_path):
    data = (DATA / "softmax.vhlo").read_bytes()
    bad = tmp_path / "cut.vhlo"
    bad.write_bytes(data[:200])
    assert_one_line_error(_opt_to_file(cli, tmp_path, bad), contains=f"{bad}: ")


def test_binary_garbage(cli, tmp_path):
    import random

    rng = random.Random(7)
    bad = tmp_path / "garbage.bin"
    bad.write_bytes(bytes(rng.randrange(256) for _ in range(4096)) + b"\x00")
    assert_one_line_error(_opt_to_file(cli, tmp_path, bad), at=str(bad), facts=("bytecode", "proto"))


@pytest.mark.parametrize("content", ["", "\n   \n"])
def test_empty_file(cli, tmp_path, content):
    bad = tmp_path / "empty.mlir"
    bad.write_text(content)
    assert_one_line_error(_opt_to_file(cli, tmp_path, bad), at=str(bad), facts=("empty",))


def test_missing_file(cli, tmp_path):
    missing = tmp_path / "nope.hlo"
    assert_one_line_error(_opt_to_file(cli, tmp_path, missing), at=str(missing), facts=("no such file",))


def test_directory_without_modules(cli, tmp_path):
    d = tmp_path / "empty_dir"
    d.mkdir()
    assert_one_line_error(_opt_to_file(cli, tmp_path, d), at=str(d), facts=("no loadable modules",))


def test_unknown_pass_suggests(cli, tmp_path):
    assert_one_line_error(_opt_to_file(cli, tmp_path, MLP_DUMP, "--passes", "cse,canonicalise"), at="--passes:1:5",
                          facts=("'canonicalise'", "'canonicalize'"))


def test_unknown_pass_in_pipeline_points_at_column(cli, tmp_path):
    spec = "builtin.module(func.func(canonicalize,chlo-legalize-to-stablehlox))"
    col = spec.index("chlo-legalize-to-stablehlox") + 1
    assert_one_line_error(_opt_to_file(cli, tmp_path, MLP_DUMP, "--pipeline", spec), at=f"--pipeline:1:{col}",
                          facts=("'chlo-legalize-to-stablehlox'", "'chlo-legalize-to-stablehlo'"))


@pytest.mark.parametrize("spec,col,what", [
    ("builtin.module(func.func(canonicalize)", 39, "unbalanced parentheses"),
    ("builtin.module(cse,,canonicalize)", 20, "expected a pass name"),
    ("builtin.module(cse) x", 21, "unexpected 'x'"),
    ("builtin.module(canonicalize{max-iterations=3)", 28, "unbalanced braces"),
    ("builtin.module(func.func(symbol-dce))", 26, "runs on 'builtin.module' ops"),
    ("builtin.module(chlo-legalize-to-stablehlo)", 16, "runs on 'func.func' ops"),
])
def test_bad_pipeline_syntax(cli, tmp_path, spec, col, what):
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, MLP_DUMP, "--pipeline", spec))
    assert line.startswith(f"error: --pipeline:1:{col}: "), line
    assert what in line


def test_unknown_named_pipeline(cli, tmp_path):
    assert_one_line_error(_opt_to_file(cli, tmp_path, MLP_DUMP, "--pipeline", "@simplfy"),
                          facts=("'@simplfy'", "'simplify'"))


def test_jax_entry_that_does_not_import(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, "no_such_pkg.model:f", "--args", "f32[2]"))
    assert line.startswith("error: no_such_pkg.model:f: cannot import module 'no_such_pkg.model'")


def test_jax_entry_missing_function(cli, tmp_path, monkeypatch):
    (tmp_path / "mm_fwd.py").write_text("def forward(x):\n    return x\n")
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(_opt_to_file(cli, tmp_path, "mm_fwd:forwrd", "--args", "f32[2]"), at="mm_fwd:forwrd",
                          facts=("'forwrd'", "'forward'"))


@pytest.mark.parametrize("spec,col,what", [
    ("f32[8,128],i32[8", 12, "expected DTYPE[DIMS]"),
    ("f33[8]", 1, "unknown dtype 'f33'"),
    ("f32[8];i32[8]", 7, "expected ','"),
])
def test_malformed_args_spec(cli, tmp_path, monkeypatch, spec, col, what):
    (tmp_path / "mm_fwd.py").write_text("def forward(x):\n    return x\n")
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(_opt_to_file(cli, tmp_path, "mm_fwd:forward", "--args", spec))
    assert line.startswith(f"error: --args:{col}: ") and what in line, line


def test_unknown_option_and_stage(cli):
    assert_one_line_error(cli("opt", MLP_DUMP, "--bogus"), contains="no such option: --bogus")
    line = assert_one_line_error(cli("opt", MLP_DUMP, "--stage", "stablehl"))
    assert "unknown stage 'stablehl'" in line and "did you mean 'stablehlo'" in line


def test_hlo_parser_crash_that_cannot_be_located_is_still_one_error_line(cli, tmp_path):
    # XLA CHECK-fails on this parameter number; its message says 'got 3', which the text
    # spells '03', so no line can be found: the error comes without one. (A reshape that
    # changes the element count was such a crash up to jaxlib 0.10.2; 0.12's parser refuses
    # it with a located error.)
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  ROOT p = f32[4] parameter(03)\n}\n")
    assert_one_line_error(cli("opt", bad), at=str(bad), facts=("HLO", "parameter number", "got 3"))


# ------------------------------------------------------------ output paths

@pytest.mark.parametrize("command", [
    ["opt", "{small}", "-o", "{dir}"],
    ["convert", "{small}", "--to", "hlo", "-o", "{dir}"],
    ["ptx", "{ll}", "-o", "{dir}"],
    ["run", "{small}", "--jobs", "0", "--json", "{dir}"],
    ["run", "{small}", "--jobs", "0", "--save-outputs", "{dir}"],
    ["spmd-run", "{small}", "--dump-output", "{dir}"],
])
def test_output_path_that_is_a_directory(cli, small, tmp_path, command):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    ll = tmp_path / "k.ll"
    ll.write_text(NV_IR)
    args = [a.format(small=small, dir=out_dir, ll=ll) for a in command]
    assert_one_line_error(cli(*args), contains=f"{out_dir}: is a directory")
    assert list(out_dir.iterdir()) == []


def test_output_under_a_file(cli, small, tmp_path):
    assert_one_line_error(cli("opt", small, "-o", small / "x.mlir"), at=str(small / "x.mlir"), facts=(str(small),))


# ------------------------------------------------------------ pipelines

# The wording of each: the golden tests of tests/mlir/test_pipeline.py (MLIR's own for an option's value).
@pytest.mark.parametrize("args, at, facts", [
    (["--pipeline", "builtin.module(canonicalize{bogus=1})"], "--pipeline:1:28", ("'canonicalize'", "bogus")),
    (["--pipeline", "builtin.module(func.func(canonicalize{max-iterations=abc}))"], "--pipeline:1:38",
     ("'canonicalize'", "--max-iterations", "'abc'")),
    (["--passes", "cse,canonicalize{max-iterations=abc}"], "--passes:1:17", ("'canonicalize'",)),
    (["--passes", "cse,fold-involutions{x=1}"], "--passes:1:21", ("'fold-involutions'", "no options")),
    (["--passes", "cse", "--print-ir-before", "canonicalise"], "--print-ir-before", ("'canonicalise'", "'canonicalize'")),
    (["--passes", "cse", "--print-ir-after", "canonicalize"], "--print-ir-after", ("'canonicalize'", "cse")),
    (["--print-ir-after", "cse"], "--print-ir-after", ("no pipeline", "'cse'")),
    (["--pipeline", "builtin.module(" + "func.func(" * 100 + "cse" + ")" * 101], "--pipeline:1:", ("64",)),
    (["--pipeline", "builtin.module(func.func(stablehlo.while(fold-involutions)))"], "--pipeline:1:42",
     ("'fold-involutions'", "'stablehlo.while'")),
])
def test_pipeline_mistakes(cli, small, args, at, facts):
    line = assert_one_line_error(cli("opt", small, *args), facts=facts)
    assert line.startswith(f"error: {at}"), line


def test_good_pass_options_still_run(cli, small):
    result = cli("opt", small, "--passes", "canonicalize{max-iterations=3},cse", "--print-ir-after", "cse")
    assert result.code == 0, result.err
    assert "IR Dump After CSE" in result.err


def test_binary_pipeline_file(cli, small, tmp_path):
    bad = tmp_path / "bin.pipeline"
    bad.write_bytes(bytes(range(256)))
    assert_one_line_error(cli("opt", small, "--pipeline-file", bad),
                          contains=f"error: {bad}: not a text file")


def test_unusable_reproducer_dir(cli, small, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_one_line_error(cli("opt", small, "--passes", "cse", "--reproducer-dir", blocker / "sub"),
                          facts=("reproducer", str(blocker / "sub")))


def test_plugin_cannot_replace_a_native_pass(cli, small, plugins):
    path = plugins / "native.py"
    assert_one_line_error(cli("opt", small, "--load-pass-plugin", path, "--passes", "canonicalize"), at=f"{path}:4",
                          facts=("'canonicalize'", "native"))
    # Refused, not half-registered: the native pass still runs afterwards.
    result = cli("opt", small, "--passes", "canonicalize")
    assert result.code == 0, result.err


def test_a_pass_name_registered_twice(cli, small, plugins):
    assert_one_line_error(cli("opt", small, "--load-pass-plugin", plugins / "twice.py", "--passes", "my-pass"),
                          at=f"{plugins / 'twice.py'}:8", facts=("'my-pass'",))
    assert_one_line_error(cli("opt", small, "--load-pass-plugin", plugins / "other.py",
                              "--load-pass-plugin", plugins / "twice.py", "--passes", "my-pass"),
                          facts=("'my-pass'", str(plugins / "other.py")))
    # The same file given twice is one registration.
    result = cli("opt", small, "--load-pass-plugin", plugins / "other.py",
                 "--load-pass-plugin", plugins / "other.py", "--passes", "my-pass")
    assert result.code == 0, result.err


# ------------------------------------------------------------ inputs

@pytest.mark.parametrize("fmt", ["vhlo", "bytecode"])
def test_bytecode_format_on_text(cli, small, fmt):
    assert_one_line_error(cli("opt", small, "--input-format", fmt), at=str(small),
                          facts=(f"--input-format {fmt}", "--input-format mlir"))


def test_jax_format_on_a_file(cli, small):
    assert_one_line_error(cli("opt", small, "--input-format", "jax", "--args", "f32[4]"), at=str(small),
                          facts=("--input-format jax", "package.module:function"))


def test_missing_paren_in_hlo(cli, tmp_path):
    bad = tmp_path / "m.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n  ROOT a = f32[4] add(p0, p0\n}\n")
    assert_one_line_error(cli("opt", bad), at=f"{bad}:5:27", facts=("')'",))


@pytest.mark.parametrize("name, text, where", [
    ("latin.mlir", b"// caf\xe9\n" + SMALL.encode(), "1:7"),
    ("latin.hlo", b"HloModule m // caf\xe9\nENTRY main {\n  ROOT p0 = f32[4] parameter(0)\n}\n", "1:19"),
])
def test_one_non_utf8_byte_is_not_binary_data(cli, tmp_path, name, text, where):
    path = tmp_path / name
    path.write_bytes(text)
    assert_one_line_error(cli("opt", path), at=f"{path}:{where}", facts=("0xe9", "UTF-8"))


def test_malformed_proto_has_no_native_stack(cli, tmp_path):
    from mlirhlo_driver.ir import hlo_proto

    good = tmp_path / "m.pb"
    assert cli("convert", DATA / "chlo_special.mlir", "--to", "hlo-proto", "-o", good).code == 0
    msg = hlo_proto.message_class("HloModuleProto")()
    msg.ParseFromString(good.read_bytes())
    msg.entry_computation_id = 999  # XLA: RET_CHECK failure ... entry != nullptr, with a stack
    bad = tmp_path / "bad.pb"
    bad.write_bytes(msg.SerializeToString())
    line = assert_one_line_error(cli("opt", bad), contains=f"error: {bad}: ")
    assert "RET_CHECK failure" in line


def test_vhlo_of_chlo_suggests_prepare_export(cli, tmp_path):
    result = cli("opt", DATA / "chlo_special.mlir", "--stage", "vhlo", "-o", tmp_path / "x.vhlo")
    assert_one_line_error(result, facts=("--pipeline @prepare-export",))
    assert "loc(" not in result.err


def test_no_gpu_spec_note_before_an_error(cli, tmp_path):
    assert_one_line_error(cli("opt", tmp_path / "missing.mlir", "--platform", "cuda", "--stage", "ptx"),
                          at=str(tmp_path / "missing.mlir"))


@pytest.mark.parametrize("args, message", [
    (["--platform", "cpu", "--xla_dump_to", "--stage", "hlo"], "--xla_dump_to needs a value"),
    (["--platform", "cpu", "--xla_gpu_autotune_level"], "--xla_gpu_autotune_level needs a number"),
])
def test_valueless_xla_flag(cli, small, args, message):
    assert_one_line_error(cli("opt", small, *args), contains=message)


def test_process_substitution_input(tmp_path):
    # A pipe given as a path (bash's <(...)), read like a file.
    hlo = tmp_path / "m.hlo"
    hlo.write_text("HloModule m\n\nENTRY main {\n  p0 = f32[4] parameter(0)\n  ROOT a = f32[4] add(p0, p0)\n}\n")
    cmd = " ".join(shlex.quote(a) for a in MLIRHLO) + f" opt <(cat {shlex.quote(str(hlo))}) --stage hlo-before-optimizations"
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=300, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"HloModule")


# ------------------------------------------------------------ noise

def test_no_absl_info_lines_when_jaxlib_was_imported_first(tmp_path):
    # jaxlib's libraries loaded before the driver set its log level used to
    # leak "pjrt_api.cc ... GetPjrtApi was found" and device-count INFO lines.
    small = tmp_path / "s.mlir"
    small.write_text(SMALL)
    code = ("import jaxlib.mlir.passmanager\nfrom mlirhlo_driver.cli.mlirhlo import main\n"
            f"main(['opt', {str(small)!r}, '--passes', 'canonicalize{{max-iterations=3}}'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_cuda_compile_prints_only_the_note(tmp_path):
    proc = mlirhlo("opt", DATA / "chlo_special.mlir", "--platform", "cuda", "--stage", "ptx",
                   "-o", tmp_path / "x.ptx")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode().splitlines() == [
        "note: no --gpu-spec given: compiling for h100_sxm (NVIDIA H100 80GB HBM3, sm_90a)"]


@pytest.mark.golden
@pytest.mark.parametrize("command, extra, message", [
    ("spmd-run", ["other.hlo"], "unexpected argument 'other.hlo' (spmd-run takes one module)"),
    # XLA flags take their value after '=' (as in XLA_FLAGS): a separate word is another argument
    ("spmd-run", ["--xla_dump_to", "dumps"], "unexpected argument 'dumps' (spmd-run takes one module)"),
    ("bench-pipeline", ["other.mlir"], "unexpected argument 'other.mlir' (bench-pipeline takes one module)"),
])
def test_words_left_after_the_options(cli, small, command, extra, message):
    """Golden (cli/app.py's words for what typer leaves). What typer leaves unparsed is an --xla_* flag,
    an unknown option (its wording: tests/e2e/test_mlirhlo.py's table) or a stray word: one error line
    naming the word."""
    assert assert_one_line_error(cli(command, small, *extra)) == f"error: {message}"


@pytest.mark.golden
@pytest.mark.parametrize("extra, stage, message", [
    (1, "stablehlo,mhlo", "several stages need --dump-dir, not -o"),
    (2, "vhlo", "several modules in a binary stage need --dump-dir, not -o"),
])
def test_o_takes_one_output(cli, small, tmp_path, extra, stage, message):
    """-o is one file: two stages, or two modules of a binary stage, are refused before any work."""
    out = tmp_path / "out"
    r = cli("opt", *[str(small)] * extra, "--stage", stage, "-o", str(out))
    assert_one_line_error(r, contains=message)
    assert not out.exists()


def test_two_modules_of_a_binary_stage_need_a_destination(cli, small):
    r = cli("opt", str(small), str(small), "--stage", "vhlo")
    assert_one_line_error(r, facts=("--dump-dir", "-o"))


def test_a_split_marker_splits_only_when_asked(cli, tmp_path):
    """As mlir-opt: ``// -----`` is a comment unless --split-input-file is given."""
    src = tmp_path / "two.mlir"
    src.write_text("func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"
                   "// -----\n"
                   "func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n")
    whole = cli("opt", src)
    assert whole.code == 0, whole.err
    assert whole.out.count("module {") == 1 and "@first" in whole.out and "@second" in whole.out
    split = cli("opt", src, "--split-input-file")
    assert split.code == 0, split.err
    assert split.out.count("module {") == 2 and "// -----" in split.out


# ------------------------------------------------------------ opt's own parser (cli/opt.py)

@pytest.mark.parametrize("args, facts", [
    (["--jobs", "x"], ("'--jobs'", "'x'")),
    (["-j", "1.5"], ("'--jobs'", "'1.5'")),
    (["--timeout", "0"], ("'--timeout'", "0.0")),
    (["--timeout", "nan"], ("'--timeout'", "nan")),
    (["--stage"], ("'--stage'",)),
    (["--print-pipeline=yes"], ("'--print-pipeline'",)),
    (["--no-verify-each=1"], ("'--no-verify-each'",)),
])
def test_opt_option_values(cli, small, args, facts):
    """Each bad value is one usage line naming the option and the value (the wording:
    tests/cli/test_opt.py's golden table), with the way to opt's help."""
    assert assert_one_line_error(cli("opt", small, *args), facts=facts).endswith("(see 'mlirhlo opt --help')")


def test_opt_inputs_anywhere_on_the_line(cli, tmp_path):
    """Inputs before, between and after options, and after an --xla_* flag, are all modules."""
    names = []
    for i in range(3):
        path = tmp_path / f"m{i}.mlir"
        t = f"tensor<{i + 2}xf32>"  # each module's own shape, to find it in the output
        path.write_text(f"func.func @main(%a: {t}) -> {t} {{\n  %0 = stablehlo.add %a, %a : {t}\n  return %0 : {t}\n}}\n")
        names.append(str(path))
    r = cli("opt", names[0], "--platform", "cpu", names[1], "--xla_cpu_enable_fast_math=true", names[2],
            "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert [f"f32[{i + 2}]" in r.out for i in range(3)] == [True] * 3


def test_opt_unknown_and_abbreviated_options_are_refused(cli, small):
    """No prefix matching (click has none): '--stag' is not '--stage'."""
    assert_one_line_error(cli("opt", small, "--stag", "hlo"), facts=("--stag", "'--stage'"))


@pytest.mark.parametrize("unbuffered", [False, True])
def test_stdout_on_a_full_disk_is_one_error_line_and_exit_1(unbuffered):
    """Output that cannot be written (disk full), whether it fails as it is written
    (PYTHONUNBUFFERED) or when the buffer is flushed at exit: one error line, exit 1, not 0."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        proc = subprocess.run(MLIRHLO + ["opt", "--list-stages"], stdout=full, stderr=subprocess.PIPE,
                              env=env, timeout=300, cwd=str(REPO), text=True)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.splitlines()  # the wording: cli/test_mlirhlo.py's test_stdout_that_cannot_be_flushed
    assert line.startswith("error: ") and line.endswith(os.strerror(28)), proc.stderr
    assert ("stdout" in line) is not unbuffered
    with open(os.devnull, "w") as null:  # the same command, written out, succeeds
        ok = subprocess.run(MLIRHLO + ["opt", "--list-stages"], stdout=null, stderr=subprocess.PIPE,
                            env=env, timeout=300, cwd=str(REPO))
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("argv, name, expected", [
    (["kernels"], "kernels", (([], "a target"), {"input_options": ("jax", None, False, None), "as_json": False,
                                                 "cache": True, "num_partitions": None})),
    (["kernels", "a.hlo", "b.hlo", "--gpu-spec", "a100,h100_sxm", "--json", "--input-format", "hlo",
      "--no-cache"], "kernels",
     ((["a.hlo", "b.hlo"], "a target"), {"input_options": ("jax", "hlo", False, None), "as_json": True,
                                         "cache": False, "num_partitions": None})),
    (["diff", "a.hlo"], "diff", (("a.hlo", None), {
        "platform": None, "gpu_spec": None, "flags_a": None, "flags_b": None, "stage": None,
        "input_options": ("jax", None, False, None), "as_json": False, "cache": True,
        "explain": False, "debug_options_file_a": None, "debug_options_file_b": None, "num_partitions": None,
        "tpu_topology": None})),
    (["diff", "m.py:f", "--args", "f32[8]", "--no-cache", "--json", "--stage", "hlo"], "diff", (("m.py:f", None), {
        "platform": None, "gpu_spec": None, "flags_a": None, "flags_b": None, "stage": "hlo",
        "input_options": ("jax", None, False, "f32[8]"), "as_json": True, "cache": False,
        "explain": False, "debug_options_file_a": None, "debug_options_file_b": None, "num_partitions": None,
        "tpu_topology": None})),
    (["specs", "list"], "spec_table", ((), {"as_json": False})),
    (["specs", "list", "--json"], "spec_table", ((), {"as_json": True})),
    (["passes"], "pass_catalog", ((None,), {})),
])
def test_report_commands_hand_over_their_options(cli, recorder, argv, name, expected):
    """kernels, diff, specs list and passes: the library's text on stdout as is, their options passed
    through (defaults: all inputs none, text not JSON, the cache used; kernels' target resolved for
    CUDA; notes go to the command line's ``say``)."""
    from mlirhlo_driver.cli.common import say

    r = cli(*argv)
    assert (r.code, r.out, r.err) == (0, "table\n", "")
    args, kwargs = recorder[name]
    if "input_options" in kwargs:
        o = kwargs["input_options"]
        kwargs = {**kwargs, "input_options": ("jax", o.input_format, o.split_input_file, o.args)}
        assert kwargs.pop("say") is say
        kwargs.pop("progress", None)
    assert (args, kwargs) == expected
    if name == "kernels":
        assert recorder["resolve"][0] == ("cuda",)


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_ctrl_c_during_xlas_compile_ends_opt_within_a_second(tmp_path, platform):
    """Ctrl-C while XLA compiles (a native call that holds the thread for seconds): `opt`
    says so in one line and exits 130 within a second, not when the compile ends, and
    writes nothing."""
    from tests.conftest import interrupt_once_xla_compiles, long_compile_hlo

    big = tmp_path / "long.hlo"
    big.write_text(long_compile_hlo())
    out = tmp_path / "out.hlo"
    proc, seconds, _, err = interrupt_once_xla_compiles(
        [*MLIRHLO, "opt", big, "--platform", platform, "--stage", "hlo", "--no-cache", "-o", out], tmp_path)
    assert proc.returncode == 130, err
    assert seconds < 1.0, seconds
    assert err.strip().splitlines()[-1] == "error: interrupted" and "Traceback" not in err
    assert not out.exists()


SHARDED_STEP = DATA / "sharded_step" / "module_0008.jit_step.before_optimizations.txt"


def _jaxlib_at_least(version: str) -> bool:
    from mlirhlo_driver._native import jaxlib

    return jaxlib.jaxlib_at_least(version)


@pytest.mark.skipif(not _jaxlib_at_least("0.12.0"),
                    reason="the dump's named mesh shardings (jax 0.12's) need jaxlib 0.12's HLO parser")
@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_a_sharded_dump_is_compiled_partitioned(cli, platform):
    """A dump whose header says num_partitions=4 (jax 0.12, a 4-way NamedSharding) compiles as
    XLA's runners compile it: partitioned (per-device shapes, the gradient's all-reduce), with
    a note; --num-partitions 1 gives the unpartitioned program, without one."""
    r = cli("opt", SHARDED_STEP, "--platform", platform, "--stage", "hlo", "--no-cache")
    assert r.code == 0, r.err
    assert "f32[4,8]" in r.out and "f32[16,8]" not in r.out  # x: 16 rows over 4 devices
    assert "all-reduce" in r.out
    assert_mentions(r.err, "compiled for 4 partitions", "--num-partitions 1")
    one = cli("opt", SHARDED_STEP, "--platform", platform, "--stage", "hlo", "--no-cache", "--num-partitions", "1")
    assert one.code == 0, one.err
    assert "f32[16,8]" in one.out and "all-reduce" not in one.out
    assert "partitions" not in one.err
