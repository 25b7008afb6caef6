"""XLA DebugOptions flags (xla/flags.py): values typed by the installed schema, the
command line, XLA_FLAGS and debug-options files, merged with their precedence, and the
errors that place a bad flag.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.errors import FLAGS, FlagError
from mlirhlo_driver.xla import backend as xla_backend
from mlirhlo_driver.xla import flags as xla_flags
from tests.conftest import DATA, REPO, assert_mentions, assert_one_line_error, cpu_llvm_ir_for_comparison

MLP = DATA / "mlp_train_step.before_optimizations.txt"

MLIRHLO = Path(sys.executable).parent / "mlirhlo"

# --xla_cpu_enable_fast_math=true puts fast-math flags on the CPU backend's float ops
# (fsub/fmul/fadd "reassoc nsz contract"); without it no fsub/fmul carries nsz.
_FAST = re.compile(r"= f(?:add|sub|mul) (?:\w+ )*nsz\b")


def _is_fast(llvm_ir: str) -> bool:
    return bool(_FAST.search(llvm_ir))


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


_SCATTER = ("HloModule scat\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {\n  v = f32[8] parameter(0)\n"
            "  idx = s32[3,1] parameter(1)\n  upd = f32[3] parameter(2)\n"
            "  ROOT r = f32[8] scatter(v, idx, upd), update_window_dims={}, inserted_window_dims={0}, "
            "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n")


# ------------------------------------------------------------------ CLI: flags change output

@pytest.fixture(scope="module")
def llvm_outputs(tmp_path_factory):
    """CPU 'llvm' stage: default, fast math on, and -O0 for the backend."""
    from mlirhlo_driver.cli.mlirhlo import main

    d = tmp_path_factory.mktemp("llvm")
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("XLA_FLAGS", raising=False)
        for name, extra in (("default", []), ("fast", ["--xla_cpu_enable_fast_math=true"]),
                            ("o0", ["--xla_backend_optimization_level=0"])):
            path = d / f"{name}.ll"
            with pytest.raises(SystemExit) as info:
                main(["opt", "--platform", "cpu", "--stage", "llvm", *extra, "-o", str(path), str(MLP)])
            assert info.value.code == 0
            out[name] = path.read_text()
    return out


def _llvm(cli, tmp_path, *extra) -> str:
    out = tmp_path / "out.ll"
    if out.exists():
        out.unlink()
    r = cli("opt", "--platform", "cpu", "--stage", "llvm", *extra, "-o", out, MLP)
    assert r.code == 0, r.err
    return out.read_text()


def _same_ir(a: str, b: str) -> bool:
    """Same LLVM IR from two compiles (jaxlib 0.12 numbers alias-scope lists at random)."""
    return cpu_llvm_ir_for_comparison(a) == cpu_llvm_ir_for_comparison(b)


@pytest.fixture(scope="module")
def malformed_autotune_run(tmp_path_factory):
    """A malformed --autotune-results file, in a fresh process.

    XLA loads xla_gpu_load_autotune_results_from once per process: a second
    compile in the same process (even with another file) does not read it
    again and succeeds, so this cannot run in-process after other compiles.
    """
    d = tmp_path_factory.mktemp("autotune")
    bad = d / "bad.pbtxt"
    bad.write_text("garbage\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("XLA_FLAGS", "TF_CPP_MIN_LOG_LEVEL", "TPU_SKIP_MDS_QUERY")}
    proc = subprocess.run([str(MLIRHLO), "opt", "--platform", "cuda", "--gpu-spec", "h100_sxm",
                           "--stage", "hlo", "--autotune-results", str(bad), "-o", str(d / "out.hlo"),
                           str(MLP)], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=300)
    return bad, proc


@pytest.mark.parametrize("value", ["abc", True, 1.5])
def test_integer_flag_value_must_be_an_integer(value):
    from mlirhlo_driver.xla import flags as xla_flags

    with pytest.raises(FlagError) as e:
        xla_flags.check_value_types({"xla_gpu_autotune_level": value})
    assert str(e.value).startswith("xla_gpu_autotune_level=") and "integer" in str(e.value)
    xla_flags.check_value_types({"xla_gpu_autotune_level": 3})


# ------------------------------------------------------------------ parse_value

@pytest.mark.parametrize("text, value", [
    ("true", True), ("FALSE", False), ("True", True),
    ("3", 3), ("-2", -2), ("+4", 4), ("0", 0),
    ("1.5", 1.5), (".5", 0.5), ("2.", 2.0), ("1e3", 1000.0), ("1e-3", 0.001),
    ('"a b"', "a b"), ("'x'", "x"), ("abc", "abc"), ("", ""), ("0x10", "0x10"), (".*", ".*"),
    # An empty quoted value is the empty string; a lone or unmatched quote stays as written.
    ('""', ""), ("''", ""), ('"', '"'), ("'", "'"), ("\"a'", "\"a'"),
])
def test_parse_value(text, value):
    got = xla_flags.parse_value(text)
    assert got == value and type(got) is type(value)


# ------------------------------------------------------------------ parse_flag_args

def test_parse_flag_args_separate_values():
    flags, rest = xla_flags.parse_flag_args(
        ["--xla_a=1", "in.hlo", "--xla_b", "2", "--xla_c", "--other", "--xla_d"])
    assert flags == {"xla_a": 1, "xla_b": 2, "xla_c": True, "xla_d": True}
    assert rest == ["in.hlo", "--other"]


def test_parse_flag_args_command_line_form():
    # With positional inputs around, a bare flag is a boolean, never eats the next word.
    flags, rest = xla_flags.parse_flag_args(["--xla_b", "in.hlo", "--xla_a=x=y", "--xla_e="],
                                            separate_values=False)
    assert flags == {"xla_b": True, "xla_a": "x=y", "xla_e": ""}
    assert rest == ["in.hlo"]


def test_parse_flag_args_only_xla_names():
    flags, rest = xla_flags.parse_flag_args(["--xla-a=1", "-xla_b=1", "--xlb_c=1", "--XLA_d=1"])
    assert flags == {}
    assert rest == ["--xla-a=1", "-xla_b=1", "--xlb_c=1", "--XLA_d=1"]


def test_parse_flag_args_last_wins():
    flags, _ = xla_flags.parse_flag_args(["--xla_a=1", "--xla_a=2"])
    assert flags == {"xla_a": 2}


# ------------------------------------------------------------------ from_file

def test_from_file_textproto_and_flag_lines(tmp_path):
    f = tmp_path / "opts.txt"
    f.write_text("# DebugOptions\n"
                 "xla_a: true\n"
                 "  xla_b : 3  # trailing comment\n"
                 "\n"
                 "--xla_c=false --xla_d=\"s p\"\n"
                 "xla_e: \"quoted\"\n"
                 "xla_f: 0.25\n")
    assert xla_flags.from_file(str(f)) == {
        "xla_a": True, "xla_b": 3, "xla_c": False, "xla_d": "s p", "xla_e": "quoted", "xla_f": 0.25}


@pytest.mark.parametrize("text, line, col, fact", [
    ("xla_a: 1\n  bogus line\n", 2, 3, "'xla_name: value'"),
    ("xla_a 1\n", 1, 1, "'xla_name: value'"),
    ("xla_a:\n", 1, 1, "'xla_name: value'"),
    ("xla_a { x: 1 }\n", 1, 1, "'xla_name: value'"),
    ("--xla_a=1 oops\n", 1, 11, "'oops'"),
    ("\n  --xla_a=1 --notxla\n", 2, 13, "'--notxla'"),
])
def test_from_file_errors_have_line_and_col(tmp_path, text, line, col, fact):
    f = tmp_path / "opts.txt"
    f.write_text(text)
    with pytest.raises(FlagError) as info:
        xla_flags.from_file(str(f))
    err = info.value
    assert (err.file, err.line, err.col) == (str(f), line, col)
    assert_mentions(err.message, fact)
    assert err.format().startswith(f"error: {f}:{line}:{col}: ")


@pytest.mark.golden
@pytest.mark.parametrize("text, line", [
    ("xla_a: 1\n  bogus line\n", "{f}:2:3: expected 'xla_name: value' or '--xla_name=value'"),
    ("--xla_a=1 oops\n", "{f}:1:11: not an XLA flag: 'oops'"),
    ('\n   --xla_a="x\n', "{f}:2:4: cannot parse: No closing quotation"),
    (None, "{f}: no such file"),
])
def test_options_file_refusals_exactly(tmp_path, text, line):
    """Golden: a debug-options file that cannot be read as XLA flags (None: no file there)."""
    f = tmp_path / "opts.txt"
    if text is not None:
        f.write_text(text)
    with pytest.raises(FlagError) as info:
        xla_flags.from_file(str(f))
    assert info.value.format() == "error: " + line.format(f=f)


def test_from_file_missing(tmp_path):
    with pytest.raises(FlagError) as info:
        xla_flags.from_file(str(tmp_path / "nope.txt"))
    assert info.value.file == str(tmp_path / "nope.txt") and info.value.line is None
    assert_mentions(info.value.message, "no such file")


def test_from_file_hash_inside_quotes(tmp_path):
    f = tmp_path / "opts.txt"
    f.write_text('xla_dump_hlo_pass_re: "a#b"  # the passes to dump\n')
    assert xla_flags.from_file(str(f)) == {"xla_dump_hlo_pass_re": "a#b"}


@pytest.mark.parametrize("line", ['--xla_dump_hlo_pass_re="a', '--xla_dump_hlo_pass_re="a#b"'])
def test_from_file_unbalanced_quote_is_flag_error(tmp_path, line):
    f = tmp_path / "opts.txt"
    f.write_text("xla_cpu_enable_fast_math: true\n" + line + "\n")
    try:
        got = xla_flags.from_file(str(f))
    except FlagError as e:
        assert (e.file, e.line) == (str(f), 2)
        return
    assert got["xla_dump_hlo_pass_re"] == "a#b"


def test_cli_debug_options_file_unbalanced_quote(cli, tmp_path):
    f = tmp_path / "opts.txt"
    f.write_text('--xla_dump_hlo_pass_re="a\n')
    assert_one_line_error(cli("opt", "--platform", "cpu", "--debug-options-file", f, MLP),
                          contains=f"error: {f}:1:")


def test_from_file_two_fields_on_a_line(tmp_path):
    f = tmp_path / "opts.txt"
    f.write_text("xla_a: 1 xla_b: 2\n")
    try:
        got = xla_flags.from_file(str(f))
    except FlagError as e:  # rejecting the line with its position is fine too
        assert (e.line, e.col) == (1, 10)
        return
    assert got == {"xla_a": 1, "xla_b": 2}


# ------------------------------------------------------------------ from_environment

@pytest.mark.parametrize("env, flags", [
    ("", {}), ("   ", {}),
    ("--xla_a=1 --xla_b", {"xla_a": 1, "xla_b": True}),
    ("--xla_a='x y'  --xla_b=2.5", {"xla_a": "x y", "xla_b": 2.5}),
    ("--xla_a=1 --some_other_flag=2", {"xla_a": 1}),
])
def test_from_environment(monkeypatch, env, flags):
    monkeypatch.setenv("XLA_FLAGS", env)
    assert xla_flags.from_environment() == flags


def test_from_environment_unset():
    assert xla_flags.from_environment() == {}


@pytest.mark.parametrize("env, facts", [
    ("--xla_a=1 junk", ("XLA_FLAGS", "'junk'")),
    ('--xla_a="unterminated', ("XLA_FLAGS", "No closing quotation")),
])
def test_from_environment_errors(monkeypatch, env, facts):
    monkeypatch.setenv("XLA_FLAGS", env)
    with pytest.raises(FlagError) as e:
        xla_flags.from_environment()
    assert_mentions(e.value.message, *facts)


@pytest.mark.golden
@pytest.mark.parametrize("text, what, strict, line", [
    ("--xla_a=1 junk", "XLA_FLAGS", False, "error: cannot parse XLA_FLAGS near 'junk' "
                                            "(XLA flags as in XLA_FLAGS, e.g. '--xla_gpu_enable_triton_gemm=false')"),
    ('--xla_a="unterminated', "XLA_FLAGS", False, "error: cannot parse XLA_FLAGS: No closing quotation"),
    ("--xla_a=1 -v", "the options", True, "error: cannot parse the options near '-v' "
                                          "(XLA flags as in XLA_FLAGS, e.g. '--xla_gpu_enable_triton_gemm=false')"),
    ("--xla_a=1 -v --xla-b=2", "X", False, "error: cannot parse X near '--xla-b=2' "
                                           "(XLA flags as in XLA_FLAGS, e.g. '--xla_gpu_enable_triton_gemm=false')"),
])
def test_flag_text_refusals_exactly(text, what, strict, line):
    """Golden: XLA_FLAGS-style text that does not read as flags."""
    with pytest.raises(FlagError) as e:
        xla_flags.from_text(text, what, strict=strict)
    assert e.value.format() == line


# ------------------------------------------------------------------ merge / check_names

def test_merge_precedence():
    merged = xla_flags.merge({"xla_a": 1, "xla_b": 1, "xla_c": 1},
                             {"xla_b": 2, "xla_c": 2, "xla_d": 2},
                             {"xla_c": 3})
    assert merged == {"xla_a": 1, "xla_b": 2, "xla_c": 3, "xla_d": 2}


def test_merge_does_not_mutate():
    file_flags = {"xla_a": 1}
    xla_flags.merge(file_flags, {"xla_a": 2}, {"xla_a": 3})
    assert file_flags == {"xla_a": 1}


def test_check_names_hint():
    known = {"xla_cpu_enable_fast_math", "xla_gpu_autotune_level"}
    xla_flags.check_names({"xla_cpu_enable_fast_math": True}, known)
    with pytest.raises(FlagError) as info:
        xla_flags.check_names({"xla_cpu_enable_fast_mth": True}, known)
    assert_mentions(info.value.format(), "'--xla_cpu_enable_fast_mth'", "'xla_cpu_enable_fast_math'")
    with pytest.raises(FlagError) as info:
        xla_flags.check_names({"xla_zzzzzz": 1}, known)
    assert_mentions(info.value.format(), "'--xla_zzzzzz'", "DebugOptions")
    xla_flags.check_names({"xla_anything": 1}, set())  # nothing known: XLA decides


def test_known_names_from_this_jaxlib():
    names = xla_flags.known_names()
    assert {"xla_cpu_enable_fast_math", "xla_gpu_autotune_level", "xla_dump_to",
            "xla_backend_optimization_level"} <= names


@pytest.mark.slow
def test_known_names_are_cached_under_a_cache_folder_that_does_not_exist_yet(tmp_path, monkeypatch):
    """A fresh machine has no ~/.cache/mlirhlo-driver: the first lookup makes it, parents too."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "new" / "cache"))
    names = xla_flags.known_names()
    (cached,) = (tmp_path / "new" / "cache" / "mlirhlo-driver").glob("xla-flags-*.json")
    import json

    assert set(json.loads(cached.read_text())) == names and "xla_dump_to" in names


_KNOWN = {"xla_cpu_enable_fast_math", "xla_gpu_autotune_level", "xla_dump_to"}


@pytest.mark.golden
@pytest.mark.parametrize("flags, line", [
    ({"xla_cpu_enable_fast_mth": True},
     "error: unknown XLA flag '--xla_cpu_enable_fast_mth' (did you mean 'xla_cpu_enable_fast_math'?)"),
    ({"xla_zzzzzz": 1}, "error: unknown XLA flag '--xla_zzzzzz' (see XLA's DebugOptions)"),
    ({"xla_dump_to": True}, "error: --xla_dump_to needs a value, e.g. --xla_dump_to=VALUE "
                            "(a flag without '=' is a boolean set to true)"),
    ({"xla_gpu_autotune_level": True}, "error: --xla_gpu_autotune_level needs a number, "
                                       "e.g. --xla_gpu_autotune_level=VALUE (a flag without '=' is a boolean set to true)"),
])
def test_check_names_refusals_exactly(flags, line):
    """Golden: check_names on a name this jaxlib does not know, or a bare flag for a field
    that is not a bool."""
    with pytest.raises(FlagError) as e:
        xla_flags.check_names(flags, _KNOWN)
    assert e.value.format() == line


def test_translate_compile_error_other():
    assert xla_flags.translate_compile_error("Something else went wrong", {"xla_foo"}) is None


@pytest.mark.slow
def test_pipeline_cut_short_is_an_error_line_not_a_death(tmp_path):
    """A scatter no pass expanded: jaxlib 0.12's XLA:CPU aborts on it (in the helper), 0.10.2's
    refuses it. A fresh process: a death here would end pytest too."""
    src = tmp_path / "scatter.hlo"
    src.write_text(_SCATTER)

    def opt(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mlirhlo_driver", "opt", "--platform", "cpu",
                               "--stage", "hlo", *flags, str(src)], capture_output=True, text=True,
                              timeout=300, cwd=REPO)

    cut = opt("--xla_disable_all_hlo_passes=true")
    assert cut.returncode == 1 and cut.stdout == "", cut.stderr
    assert cut.stderr.count("\n") == 1 and "Traceback" not in cut.stderr, cut.stderr
    if _jaxlib.jaxlib_at_least("0.12.0"):
        # The hint's wording: test_a_native_death_after_a_pipeline_cut_message_exactly (xla/test_backend.py).
        assert cut.stderr.startswith(f"error: {src}: ")
        assert_mentions(cut.stderr, "aborted", "(--xla_disable_all_hlo_passes ")
    else:
        assert cut.stderr.startswith(f"error: {src}: HLO opcode `scatter` is not supported by XLA:CPU")
    # a cut that leaves HLO XLA compiles: the stage, from the executable compiled here
    kept = opt("--xla_disable_hlo_passes=dce")
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.startswith("HloModule scat, is_scheduled=true")


# ------------------------------------------------------------------ CLI: bad flags

def test_cli_unknown_flag_did_you_mean(cli):
    assert_one_line_error(
        cli("opt", "--platform", "cpu", "--stage", "llvm", "--xla_cpu_enable_fast_mth=true", MLP),
        facts=("'--xla_cpu_enable_fast_mth'", "'xla_cpu_enable_fast_math'"))


def test_cli_wrong_type(cli):
    assert_one_line_error(
        cli("opt", "--platform", "cpu", "--stage", "llvm", "--xla_cpu_enable_fast_math=3", MLP),
        facts=("--xla_cpu_enable_fast_math=3: ", "true or false"))


def test_cli_wrong_type_int(cli):
    assert_one_line_error(
        cli("opt", "--platform", "cpu", "--stage", "hlo", "--xla_backend_optimization_level=x", MLP),
        facts=("--xla_backend_optimization_level=x: ", "integer"))


def test_cli_rejected_flag_does_not_suggest_itself(cli):
    r = cli("opt", "--platform", "cpu", "--stage", "hlo", "--xla_cpu_use_thunk_runtime=false", MLP)
    line = assert_one_line_error(r, facts=("unknown", "'--xla_cpu_use_thunk_runtime'"))
    assert "'xla_cpu_use_thunk_runtime'" not in line


def test_cli_flags_need_platform(cli):
    assert_one_line_error(cli("opt", "--xla_cpu_enable_fast_math=true", MLP),
                          facts=("XLA flags", "--platform cpu|cuda"))


def test_cli_a_spec_names_the_cuda_platform(cli):
    """--gpu-spec without --platform compiles for CUDA (as XLA's target config file does);
    with --platform cpu it is an error."""
    r = cli("opt", "--gpu-spec", "h100_sxm", "--stage", "ptx", MLP)
    assert r.code == 0 and ".target sm_90a" in r.out, r.err
    assert_one_line_error(cli("opt", "--platform", "cpu", "--gpu-spec", "h100_sxm", MLP),
                          facts=("--gpu-spec", "--platform cuda"))


@pytest.mark.slow
def test_a_target_config_in_xla_flags_is_the_spec(cli, monkeypatch, tmp_path):
    """--xla_gpu_target_config_filename from XLA_FLAGS (or a debug options file) names the spec
    as --gpu-spec does; for a CPU compile it is an error."""
    spec = REPO / "gpu_specs" / "a100_sxm_80.txtpb"
    monkeypatch.setenv("XLA_FLAGS", f"--xla_gpu_target_config_filename={spec}")
    r = cli("opt", MLP, "--platform", "cuda", "--stage", "ptx", "--no-cache")
    assert r.code == 0, r.err
    assert ".target sm_80" in r.out and "no --gpu-spec given" not in r.err
    assert_one_line_error(cli("opt", MLP, "--platform", "cpu", "--stage", "hlo", "--no-cache"),
                          facts=("--xla_gpu_target_config_filename", "--platform=CUDA"))
    # the command line's spec wins over the one XLA_FLAGS names
    r = cli("opt", MLP, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx", "--no-cache")
    assert r.code == 0 and ".target sm_90a" in r.out, r.err
    monkeypatch.delenv("XLA_FLAGS")
    flags = tmp_path / "flags.txt"
    flags.write_text(f'xla_gpu_target_config_filename: "{spec}"\n')
    r = cli("opt", MLP, "--platform", "cuda", "--debug-options-file", flags, "--stage", "ptx", "--no-cache")
    assert r.code == 0 and ".target sm_80" in r.out, r.err


@pytest.mark.parametrize("argv", [["opt", "--list-stages"], ["opt", "--stage", "stablehlo", MLP]])
def test_environment_flags_do_not_break_mlir_stages(cli, monkeypatch, argv):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    plain = cli(*argv)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    r = cli(*argv)
    assert r.code == 0, r.err
    assert r.err == ""
    assert r.out and r.out == plain.out  # XLA_FLAGS is for XLA: MLIR stages ignore it


def test_fast_math_flag_changes_llvm(llvm_outputs):
    assert not _is_fast(llvm_outputs["default"])
    assert _is_fast(llvm_outputs["fast"])


def test_backend_optimization_level_changes_llvm(llvm_outputs):
    assert not _same_ir(llvm_outputs["o0"], llvm_outputs["default"])
    assert not _is_fast(llvm_outputs["o0"])


def test_precedence_file_env_cli(cli, monkeypatch, tmp_path, llvm_outputs):
    """--debug-options-file < XLA_FLAGS < command line, seen in the compiled LLVM IR."""
    opts = tmp_path / "debug_options.txtpb"
    opts.write_text("# DebugOptions\nxla_cpu_enable_fast_math: true\n")
    file_only = _llvm(cli, tmp_path, "--debug-options-file", opts)
    assert _is_fast(file_only)
    assert _same_ir(file_only, llvm_outputs["fast"])

    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    env_over_file = _llvm(cli, tmp_path, "--debug-options-file", opts)
    assert not _is_fast(env_over_file)
    assert _same_ir(env_over_file, llvm_outputs["default"])

    cli_over_both = _llvm(cli, tmp_path, "--debug-options-file", opts, "--xla_cpu_enable_fast_math=true")
    assert _is_fast(cli_over_both)


def test_debug_options_file_flag_lines(cli, tmp_path, llvm_outputs):
    opts = tmp_path / "flags.txt"
    opts.write_text("--xla_cpu_enable_fast_math=true\n")
    assert _same_ir(_llvm(cli, tmp_path, "--debug-options-file", opts), llvm_outputs["fast"])


def test_debug_options_file_error(cli, tmp_path):
    opts = tmp_path / "bad.txtpb"
    opts.write_text("xla_cpu_enable_fast_math: true\nnot a flag\n")
    assert_one_line_error(cli("opt", "--platform", "cpu", "--debug-options-file", opts, MLP),
                          at=f"{opts}:2:1", facts=("'xla_name: value'",))


def test_debug_options_file_missing(cli, tmp_path):
    assert_one_line_error(cli("opt", "--platform", "cpu", "--debug-options-file",
                              tmp_path / "nope.txtpb", MLP),
                          contains=f"{tmp_path / 'nope.txtpb'}: no such file")


# ------------------------------------------------------------------ CLI: autotune results

def test_autotune_results_missing_file(cli):
    assert_one_line_error(cli("opt", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx",
                              "--autotune-results", "/missing/autotune.pbtxt", MLP),
                          at="/missing/autotune.pbtxt", facts=("no such", "autotune results"))


def test_autotune_results_malformed_file(malformed_autotune_run):
    bad, proc = malformed_autotune_run
    assert proc.returncode in (1, 2), proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("error: ")
    assert "autotune results" in proc.stderr
    assert not (bad.parent / "out.hlo").exists()


def test_autotune_results_malformed_file_is_one_error_naming_it(malformed_autotune_run):
    bad, proc = malformed_autotune_run
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"error: {bad}")


@pytest.mark.slow
def test_autotune_results_round_trip(cli, tmp_path, monkeypatch):
    """What the autotune-results stage writes loads back, and reaches XLA's compile."""
    results = tmp_path / "autotune.pbtxt"
    r = cli("opt", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "autotune-results",
            "-o", results, MLP)
    assert r.code == 0, r.err
    assert re.search(r"^version: \d+", results.read_text(), re.M)
    plain = cli("opt", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx", MLP)
    seen = []
    real = xla_backend.compile

    def recording(module, spec, name="module", **kw):
        seen.append(dict(spec.target.xla_flags))
        return real(module, spec, name, **kw)

    monkeypatch.setattr(xla_backend, "compile", recording)
    r = cli("opt", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx",
            "--autotune-results", results, MLP)
    assert r.code == 0, r.err
    assert seen and all(f.get("xla_gpu_load_autotune_results_from") == str(results) for f in seen)
    # Device-less autotuning records no results, so loading them changes nothing.
    assert ".target sm_90a" in r.out and r.out == plain.out


@pytest.mark.parametrize("name, value, kind", [
    ("xla_gpu_autotune_gemm_rtol", True, "a number"),         # a float field: no bool
    ("xla_gpu_autotune_gemm_rtol", "x", "a number"),
    ("xla_gpu_autotune_level", True, "an integer"),           # an int field: no bool
    ("xla_gpu_autotune_level", 1.5, "an integer"),
    ("xla_cpu_enable_fast_math", 1, "true or false"),
    ("xla_gpu_autotune_level", "3", "an integer"),            # text is not an int
    ("xla_gpu_autotune_level", False, "an integer"),
    ("xla_gpu_all_gather_combine_threshold_bytes", 1.5, "an integer"),
    ("xla_cpu_enable_fast_math", "yes", "true or false"),
])
@pytest.mark.golden
def test_value_types_refused_per_field_type(name, value, kind):
    """Golden: a value of the wrong type for its DebugOptions field, on the command line and in Python."""
    from mlirhlo_driver.errors import FlagError
    from mlirhlo_driver.xla import flags as xla_flags

    with pytest.raises(FlagError) as e:
        xla_flags.check_value_types({name: value})
    shown = str(value).lower() if isinstance(value, bool) else value
    assert e.value.text(FLAGS) == f"--{name}={shown}: expected {kind}"
    assert e.value.text() == f"{name}={shown!r}: expected {kind}"  # Python: the xla_flags key
    xla_flags.check_value_types({"xla_gpu_autotune_gemm_rtol": 0.1, "xla_gpu_autotune_level": 2,
                                 "xla_cpu_enable_fast_math": False})  # the right types pass


@pytest.mark.parametrize("line, col", [
    ("  --xla_cpu_enable_fast_math=maybe", 30),          # a bad value: the value's column
    ("    --xla_backend_optimization_level=x2", 38),
    ("  --xla_no_such_field_at_all=1", 3),                # an unknown name: the name's column
    ("--xla_dump_to=/tmp/d --xla_cpu_fast_mathz=true", 22),  # the second flag on the line
])
def test_flag_lines_of_an_options_file_place_errors_at_their_column(tmp_path, line, col):
    """'--xla_NAME=VALUE' lines of a debug-options file: an error is placed at the value it
    refuses, or at the name it does not know, on that line."""
    path = tmp_path / "opts.txt"
    path.write_text("# options\n" + line + "\n")
    with pytest.raises(FlagError) as e:
        xla_flags.from_file_checked(str(path))
    assert (e.value.line, e.value.col) == (2, col), e.value.format()


def test_every_protobuf_scalar_type_has_its_flag_kind():
    """How a DebugOptions field's value is parsed follows its protobuf type, for every scalar type a
    jaxlib may use (not only those today's DebugOptions has): floats, each integer encoding, bool,
    string and bytes."""
    from google.protobuf.descriptor import FieldDescriptor as F

    from mlirhlo_driver.xla.flags import _SCALAR_KIND

    want = {F.TYPE_DOUBLE: "float", F.TYPE_FLOAT: "float", F.TYPE_BOOL: "bool", F.TYPE_STRING: "str"}
    want |= dict.fromkeys((F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_INT32, F.TYPE_FIXED64, F.TYPE_FIXED32,
                           F.TYPE_UINT32, F.TYPE_SFIXED32, F.TYPE_SFIXED64, F.TYPE_SINT32, F.TYPE_SINT64), "int")
    assert {t: _SCALAR_KIND.get(t, "str") for t in [*want, F.TYPE_BYTES]} == want | {F.TYPE_BYTES: "str"}
    assert set(_SCALAR_KIND) == set(want)


# ------------------------------------------------------------------ typed values, per DebugOptions field

@pytest.mark.parametrize("name, text, value", [
    # a bool field: true/false in any case, and 1/0; anything else keeps parse_value's guess
    ("xla_cpu_enable_fast_math", "1", True), ("xla_cpu_enable_fast_math", "0", False),
    ("xla_cpu_enable_fast_math", "TRUE", True), ("xla_cpu_enable_fast_math", "False", False),
    ("xla_cpu_enable_fast_math", "2", 2), ("xla_cpu_enable_fast_math", "yes", "yes"),
    # a string field: the text as given, unquoted
    ("xla_dump_to", "123", "123"), ("xla_dump_to", "true", "true"), ("xla_dump_to", "1.5", "1.5"),
    ("xla_dump_to", "'a b'", "a b"), ("xla_dump_to", "/tmp/d", "/tmp/d"),
    # a float field: an integer's spelling is a float; a bool stays a bool (XLA refuses it)
    ("xla_gpu_autotune_gemm_rtol", "1", 1.0), ("xla_gpu_autotune_gemm_rtol", "0.5", 0.5),
    ("xla_gpu_autotune_gemm_rtol", "true", True), ("xla_gpu_autotune_gemm_rtol", "x", "x"),
    # an int field: 1 and 0 are integers, not bools
    ("xla_gpu_autotune_level", "1", 1), ("xla_gpu_autotune_level", "0", 0),
    ("xla_gpu_autotune_level", "true", True), ("xla_gpu_autotune_level", "2.5", 2.5),
    # enum, repeated, and names the schema lacks: parse_value's guess
    ("xla_step_marker_location", "1", 1), ("xla_step_marker_location", "NAME", "NAME"),
    ("xla_disable_hlo_passes", "1", 1), ("xla_disable_hlo_passes", "a,b", "a,b"),
    ("xla_no_such_field", "1", 1), ("xla_no_such_field", "0", 0), ("xla_no_such_field", "true", True),
    ("xla_no_such_field", "1.0", 1.0), ("xla_no_such_field", '"7"', "7"),
])
def test_typed_value_follows_the_fields_type(name, text, value):
    """typed_value reads a value as tsl's flag parser does for the field's DebugOptions type."""
    got = xla_flags.typed_value(name, text)
    assert got == value and type(got) is type(value)


def test_debug_option_types_names_each_fields_kind():
    """debug_option_types maps DebugOptions fields to bool/int/float/str/enum/repeated from jaxlib's schema."""
    types = xla_flags.debug_option_types()
    assert {n: types[n] for n in ("xla_cpu_enable_fast_math", "xla_gpu_autotune_level", "xla_gpu_autotune_gemm_rtol",
                                  "xla_dump_to", "xla_step_marker_location", "xla_disable_hlo_passes",
                                  "xla_gpu_disable_async_collectives", "xla_gpu_all_gather_combine_threshold_bytes")} == {
        "xla_cpu_enable_fast_math": "bool", "xla_gpu_autotune_level": "int", "xla_gpu_autotune_gemm_rtol": "float",
        "xla_dump_to": "str", "xla_step_marker_location": "enum", "xla_disable_hlo_passes": "repeated",
        "xla_gpu_disable_async_collectives": "repeated", "xla_gpu_all_gather_combine_threshold_bytes": "int"}
    assert set(types.values()) == {"bool", "int", "float", "str", "enum", "repeated"}
    assert "xla_no_such_field" not in types


# ------------------------------------------------------------------ bare flags, value types

@pytest.mark.parametrize("name, kind", [
    ("xla_dump_to", "a value"),                                  # string
    ("xla_step_marker_location", "a value"),                           # enum
    ("xla_gpu_autotune_level", "a number"),                      # int32
    ("xla_gpu_all_gather_combine_threshold_bytes", "a number"),  # int64
    ("xla_gpu_autotune_gemm_rtol", "a number"),                  # float
])
def test_a_bare_flag_for_a_field_that_is_not_a_bool_needs_a_value(name, kind):
    """check_names refuses a bare --xla_NAME (true) for a field that is not a bool, saying what it needs."""
    known = {name, "xla_cpu_enable_fast_math", "xla_not_in_the_schema"}
    with pytest.raises(FlagError) as e:
        xla_flags.check_names({"xla_cpu_enable_fast_math": True, name: True}, known)
    # The wording: test_check_names_refusals_exactly.
    assert e.value.format().startswith(f"error: --{name} ")
    assert_mentions(e.value.format(), kind, f"--{name}=VALUE")
    assert not getattr(e.value, "bad_value", False)
    # a bool field, a name the schema lacks, and a value given: all pass
    xla_flags.check_names({"xla_cpu_enable_fast_math": True, "xla_not_in_the_schema": True, name: 3}, known)
    xla_flags.check_names({name: True}, set())  # nothing known: XLA decides


def test_check_value_types_leaves_other_fields_to_xla():
    """check_value_types only judges scalar bool/int/float fields; strings, enums, repeated and unknown
    fields are XLA's to check, and a refused value is marked bad_value."""
    xla_flags.check_value_types({"xla_no_such_field": "x", "xla_dump_to": True, "xla_step_marker_location": 1.5,
                                 "xla_disable_hlo_passes": True, "xla_gpu_disable_async_collectives": 2.5,
                                 "xla_gpu_autotune_gemm_rtol": 2, "xla_gpu_all_gather_combine_threshold_bytes": 7})
    xla_flags.check_value_types({})
    # The wording: test_value_types_refused_per_field_type.
    for flags, flag, kind in [
        ({"xla_gpu_autotune_level": "3"}, "--xla_gpu_autotune_level=3:", "integer"),
        ({"xla_gpu_autotune_level": False}, "--xla_gpu_autotune_level=false:", "integer"),
        ({"xla_gpu_all_gather_combine_threshold_bytes": 1.5},
         "--xla_gpu_all_gather_combine_threshold_bytes=1.5:", "integer"),
        ({"xla_cpu_enable_fast_math": "yes"}, "--xla_cpu_enable_fast_math=yes:", "true or false"),
        ({"xla_dump_to": "/d", "xla_gpu_autotune_gemm_rtol": False}, "--xla_gpu_autotune_gemm_rtol=false:", "number"),
    ]:
        with pytest.raises(FlagError) as e:
            xla_flags.check_value_types(flags)
        assert e.value.text(FLAGS).startswith(flag) and e.value.bad_value is True
        assert_mentions(e.value.text(FLAGS), kind)


_FOOS = {"xla_foo", "xla_fooo", "xla_bar"}


@pytest.mark.golden
@pytest.mark.parametrize("message, known, formatted", [
    ("INVALID_ARGUMENT: No such compile option: 'xla_fo'", {"xla_foo"},
     "error: unknown XLA flag '--xla_fo' (did you mean 'xla_foo'?)"),
    ("While setting option xla_gpu_autotune_level, 'x' is not a valid int32 value", {"xla_foo"},
     "error: --xla_gpu_autotune_level=x: expected an integer"),
    ("While setting option xla_cpu_enable_fast_math, '3' is not a valid bool value", {"xla_foo"},
     "error: --xla_cpu_enable_fast_math=3: expected true or false"),
    ("While setting option xla_a, '1.5' is not a valid int64 value", _FOOS, "error: --xla_a=1.5: expected an integer"),
    ("While setting option xla_a, 'x' is not a valid float value", _FOOS, "error: --xla_a=x: expected a number"),
    ("While setting option xla_a, 'x' is not a valid double value", _FOOS, "error: --xla_a=x: expected a number"),
    ("While setting option xla_a, '' is not a valid string value", _FOOS, "error: --xla_a=: expected string"),
    # XLA's word overrules the list: the rejected name is never suggested for itself
    ("No such compile option: 'xla_foo'", _FOOS, "error: unknown XLA flag '--xla_foo' (did you mean 'xla_fooo'?)"),
    ("No such compile option: 'xla_bar'", _FOOS, "error: unknown XLA flag '--xla_bar'"),
])
def test_translate_compile_error_each_kind(message, known, formatted):
    """Golden: XLA's type names become our words; an unknown one is kept; a rejected name is not
    its own suggestion."""
    assert xla_flags.translate_compile_error(message, known).format() == formatted


# ------------------------------------------------------------------ from_text

def test_from_text_ignores_other_dashed_words_unless_strict():
    """Like XLA, XLA_FLAGS-style text skips '-'-words that are not --xla_ flags; strict refuses any stray word."""
    assert xla_flags.from_text("--xla_a=1 -v --verbose=2 --xla_b", "X") == {"xla_a": 1, "xla_b": True}
    # The wording: test_flag_text_refusals_exactly.
    with pytest.raises(FlagError) as e:
        xla_flags.from_text("--xla_a=1 -v", "the options", strict=True)
    assert_mentions(e.value.format(), "the options", "'-v'", "'--xla_gpu_enable_triton_gemm=false'")
    assert xla_flags.from_text("--xla_a=1", "X", strict=True) == {"xla_a": 1}
    with pytest.raises(FlagError, match=re.escape("X near '--xla-b=2'")):
        xla_flags.from_text("--xla_a=1 -v --xla-b=2", "X")  # a misspelt --xla flag is never skipped
    with pytest.raises(FlagError, match=re.escape("X near 'word'")):
        xla_flags.from_text("-v word", "X")


# ------------------------------------------------------------------ from_file: values, columns

def test_from_file_quoted_and_separated_fields(tmp_path):
    """A quoted textproto value is a string with escapes read, never typed; fields may end in ',' or ';'."""
    f = tmp_path / "opts.txt"
    f.write_text('xla_dump_to: "1"\n'
                 "xla_dump_hlo_pass_re: 'a\\tb'  # tab\n"
                 'xla_a: "x\\"y", xla_b: 2 ; xla_c: false\n'
                 "xla_e: true, xla_f: 3;xla_g: ENUM_X\n"
                 "--xla_d=1  # a comment after a flag line\n")
    assert xla_flags.from_file(str(f)) == {"xla_dump_to": "1", "xla_dump_hlo_pass_re": "a\tb", "xla_a": 'x"y',
                                           "xla_b": 2, "xla_c": False, "xla_d": 1, "xla_e": True, "xla_f": 3,
                                           "xla_g": "ENUM_X"}


@pytest.mark.parametrize("text, line, col, fact", [
    ('\n   --xla_a="x\n', 2, 4, "No closing quotation"),  # the flag line's first column
    ("xla_a: 1,  bogus\n", 1, 12, "'xla_name: value'"),     # after a field on the line
    ('--xla_a=1 "x"y\n', 1, 1, "'xy'"),                     # not found as written: column 1
    ("--xla_dump_to=x dump\n", 1, 17, "'dump'"),            # the word, not inside a name
])
def test_from_file_more_error_columns(tmp_path, text, line, col, fact):
    """Errors in an options file point at the line and column of what is wrong."""
    f = tmp_path / "opts.txt"
    f.write_text(text)
    with pytest.raises(FlagError) as e:
        xla_flags.from_file(str(f))
    assert (e.value.line, e.value.col) == (line, col), e.value.format()
    assert_mentions(e.value.message, fact)


@pytest.mark.parametrize("text, col", [
    ("  xla_cpu_enable_fast_math:   maybe\n", 31),         # a bad value: the value's column
    ("xla_dump_to: 'd', xla_gpu_autotune_level: x\n", 43),
    ("xla_dump_to: 'd';  xla_cpu_fast_mathz: true\n", 20),  # an unknown name: the name's column
])
def test_textproto_fields_of_an_options_file_place_errors_at_their_column(tmp_path, text, col):
    """'xla_name: value' fields: an error is placed at the value refused, or the name not known, on line 2."""
    path = tmp_path / "opts.txt"
    path.write_text("# options\n" + text)
    with pytest.raises(FlagError) as e:
        xla_flags.from_file_checked(str(path))
    assert (e.value.file, e.value.line, e.value.col) == (str(path), 2, col), e.value.format()


def test_from_file_checked_places_an_error_at_the_flag_it_names(tmp_path):
    """Of several fields, the error is placed at the one it names exactly (not one whose name is a prefix)."""
    path = tmp_path / "opts.txt"
    path.write_text("xla_cpu_enable_fast_math: true\n"
                    "--xla_dump_to=/tmp/d\n"
                    "   xla_cpu_enable_fast_math_x: true\n")
    with pytest.raises(FlagError) as e:
        xla_flags.from_file_checked(str(path))
    assert (e.value.line, e.value.col) == (3, 4)
    assert ":3:4: " in e.value.text(FLAGS)
    assert_mentions(e.value.text(FLAGS), "'--xla_cpu_enable_fast_math_x'", "'xla_cpu_enable_fast_math'")
    path.write_text("xla_cpu_enable_fast_math: true\n--xla_dump_to\n")
    with pytest.raises(FlagError) as e:
        xla_flags.from_file_checked(str(path))
    assert (e.value.line, e.value.col) == (2, 1) and "needs a value" in e.value.message
    path.write_text("xla_cpu_enable_fast_math: true\n--xla_dump_to=/tmp/d\n")
    assert xla_flags.from_file_checked(str(path)) == {"xla_cpu_enable_fast_math": True, "xla_dump_to": "/tmp/d"}


def test_from_file_unreadable(tmp_path):
    """A folder, or a file that is not text, is a one-line error naming the file."""
    with pytest.raises(FlagError) as e:
        xla_flags.from_file(str(tmp_path))
    assert e.value.file == str(tmp_path) and e.value.line is None
    assert_mentions(e.value.message, "Is a directory")
    f = tmp_path / "opts.bin"
    f.write_bytes(b"xla_a: \xff\xfe\n")
    with pytest.raises(FlagError) as e:
        xla_flags.from_file(str(f))
    assert e.value.file == str(f) and "can't decode byte 0xff" in e.value.message


# ------------------------------------------------------------------ known_names: scan and cache

def test_known_names_scan_only_jaxlibs_xla_binaries_and_cache_them(tmp_path, monkeypatch):
    """known_names reads whole xla_ words from jaxlib's XLA libraries (not others), then caches them per build."""
    from mlirhlo_driver.mlir import passes

    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "libjax_common.so").write_bytes(b"\0xla_dump_to\0xla_ab\0Axla_glued\0xla_cpu_x1\0")
    (libs / "_jax.so").write_bytes(b"xla_gpu_autotune_level xla_Upper_case xla_" + b"a" * 100 + b" xla_" + b"b" * 101)
    (libs / "xla_cuda_plugin.so").write_bytes(b"(xla_plugin_flag)")
    (libs / "libother.so").write_bytes(b"\0xla_not_from_here\0")
    monkeypatch.setattr(passes, "jaxlib_libraries", lambda: sorted(str(p) for p in libs.iterdir()))
    monkeypatch.setattr(passes, "jaxlib_cache_key", lambda: "KEY")
    cache = tmp_path / "xdg" / "mlirhlo-driver"
    cache.mkdir(parents=True)  # a cache folder that exists already
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    want = {"xla_dump_to", "xla_cpu_x1", "xla_gpu_autotune_level", "xla_plugin_flag", "xla_" + "a" * 100}
    assert xla_flags.known_names() == want
    assert json.loads((cache / "xla-flags-KEY.json").read_text()) == sorted(want)
    assert [p.name for p in cache.iterdir()] == ["xla-flags-KEY.json"]
    # the next lookup reads the cache, not the libraries
    monkeypatch.setattr(passes, "jaxlib_libraries", lambda: [])
    assert xla_flags.known_names() == want
    (cache / "xla-flags-KEY.json").write_text("not json")  # a broken cache: scanned again
    assert xla_flags.known_names() == set()


def test_from_file_types_unquoted_values_by_their_field(tmp_path):
    """Unquoted values in an options file, textproto or flag lines, are typed by their DebugOptions field."""
    f = tmp_path / "opts.txt"
    f.write_text("xla_dump_hlo_pass_re: 123\nxla_cpu_enable_fast_math: 1\nxla_gpu_autotune_gemm_rtol: 2\n"
                 "--xla_dump_to=7 --xla_cpu_enable_fast_min_max=0\nxla_no_such_field: 5\n")
    got = xla_flags.from_file(str(f))
    assert got == {"xla_dump_hlo_pass_re": "123", "xla_cpu_enable_fast_math": True, "xla_gpu_autotune_gemm_rtol": 2.0,
                   "xla_dump_to": "7", "xla_cpu_enable_fast_min_max": False, "xla_no_such_field": 5}
    assert [type(v) for v in got.values()] == [str, bool, float, str, bool, int]


def test_known_names_cache_goes_into_a_new_cache_folder(tmp_path, monkeypatch):
    """On a machine without the cache folder (nor its parents) the scan's result is still cached."""
    from mlirhlo_driver.mlir import passes

    lib = tmp_path / "libjax_common.so"
    lib.write_bytes(b"\0xla_dump_to\0")
    monkeypatch.setattr(passes, "jaxlib_libraries", lambda: [str(lib)])
    monkeypatch.setattr(passes, "jaxlib_cache_key", lambda: "KEY")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "new" / "xdg"))
    assert xla_flags.known_names() == {"xla_dump_to"}
    cached = tmp_path / "new" / "xdg" / "mlirhlo-driver" / "xla-flags-KEY.json"
    assert json.loads(cached.read_text()) == ["xla_dump_to"]
