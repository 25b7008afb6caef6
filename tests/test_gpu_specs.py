"""mlirhlo_driver/gpu_specs/: the shipped GpuTargetConfigProto files, XLA's own, and their validation."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import DATA, filecheck
from hypothesis import given, settings
from hypothesis import strategies as st

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.cuda import specs as gpu_specs
from mlirhlo_driver.cuda.specs import (
    DEFAULT_SPEC,
    REQUIRED,
    SPEC_DIR,
    GpuSpec,
    check_spec,
    fill_values,
    list_specs,
    load_spec,
    parse_spec,
    parse_textproto,
    resolve_spec,
)
from mlirhlo_driver.errors import CompileError, SpecError

# name -> (compute_capability, PTX .target XLA emits)
EXPECTED = {
    "p100": ("6.0", "sm_60"),
    "v100": ("7.0", "sm_70"),
    "t4": ("7.5", "sm_75"),
    "a100_pcie_80": ("8.0", "sm_80"),
    "a100_sxm_40": ("8.0", "sm_80"),
    "a100_sxm_80": ("8.0", "sm_80"),
    "a10": ("8.6", "sm_86"),
    "l4": ("8.9", "sm_89"),
    "h100_pcie": ("9.0a", "sm_90a"),
    "h100_sxm": ("9.0a", "sm_90a"),
    "h200": ("9.0a", "sm_90a"),
    "b200": ("10.0a", "sm_100a"),
}

# The CUDA stack jax-cuda12-plugin 0.10.2 was built with (see the spec comments).
VERSION_FIELDS = {
    "driver_version": "12.9.0", "runtime_version": "12.9.0",
    "compile_time_toolkit_version": "12.9.0", "cub_version": "3.2.0",
}

# A valid spec whose line numbers the error tests below rely on.
VALID = """\
# test spec
gpu_device_info {
  cuda_compute_capability { major: 8 minor: 0 }
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_block_optin: 166912
  core_count: 108
  fpus_per_core: 64
  block_dim_limit_x: 2147483647
  memory_bandwidth: 1935000000000
  clock_rate_ghz: 1.41
  device_memory_size: 85899345920
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 8 patch: 0 }
device_description_str: "Test GPU"
"""

XLA_SPECS = DATA / "xla_specs"  # XLA's own files, verbatim (see its README.md)


def _spec_error(text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "t.txtpb")
    assert info.value.file == "t.txtpb"
    return info.value


# ----------------------------------------------------------------- shipped specs

def test_shipped_spec_names():
    names = [s.name for s in list_specs()]
    assert names == sorted(EXPECTED)
    assert DEFAULT_SPEC in names
    assert SPEC_DIR == Path(gpu_specs.__file__).parent.parent / "gpu_specs"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shipped_spec_validates(name):
    from mlirhlo_driver.cuda import tools as cuda_tools

    sm = EXPECTED[name][1]
    if not any(p.can_target(sm) for p in cuda_tools.all_ptxas()):
        # CUDA 13 dropped sm_60/sm_70: with only its ptxas here, 'specs check' says so.
        with pytest.raises(SpecError, match=f"no ptxas here can target {sm} "):
            check_spec(SPEC_DIR / f"{name}.txtpb")
    spec = load_spec(SPEC_DIR / f"{name}.txtpb")
    assert isinstance(spec, GpuSpec)
    assert spec.name == name
    assert (spec.compute_capability, spec.sm) == EXPECTED[name]
    assert spec.text == (SPEC_DIR / f"{name}.txtpb").read_text() and spec.filled == ()
    assert spec.gpu and spec.sm_count > 0 and spec.memory_bytes >= 14 << 30
    assert spec.memory_bandwidth > 10**11 and 1.0 < spec.clock_ghz < 2.5
    # Header comment names the GPU and its compute capability.
    header = spec.text.split("\n\n")[0]
    assert all(line.startswith("#") for line in header.splitlines())
    assert f"compute capability {spec.compute_capability}" in header
    if "dnn_version_info" in spec.proto.DESCRIPTOR.fields_by_name:  # 0.12 moved it (see _jaxlib)
        assert spec.proto.HasField("dnn_version_info")
    assert re.search(r"^dnn_version_info \{ major: 9 minor: 8 patch: 0 \}$", spec.text, re.M)
    info = spec.proto.gpu_device_info
    # jaxlib 0.9's schema has none of them (its XLA is handed the spec without them).
    known = {f: v for f, v in VERSION_FIELDS.items() if f in info.DESCRIPTOR.fields_by_name}
    assert {f: getattr(info, f) for f in known} == known
    # The unit tables are what this XLA fills in on a real GPU: CC 9.0 and 10.0 only.
    has_units = spec.sm in ("sm_90a", "sm_100a")
    assert info.HasField("matrix_unit_description") == has_units
    assert info.HasField("scalar_unit_description") == has_units
    # The comments name a source for every figure, the versions included.
    for words in ("Figures:", "device_memory_size is the total the card reports",
                  "cuda_runtime_build_version", "cub_version", "cudnn_build_version"):
        assert words in spec.text, (name, words)
    # What a spec may leave out is what this real GPU reports (the fill table is right).
    cc = info.cuda_compute_capability
    fills = fill_values(cc.major, cc.minor)
    assert fills and {k: getattr(info, k) for k in fills} == fills
    d = spec.to_dict()
    assert d["name"] == name and d["sm"] == spec.sm and d["path"] == str(spec.path)
    assert "text" not in d


def test_module_does_not_import_jax():
    code = ("import sys; import mlirhlo_driver.cuda.specs as g; g.list_specs(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=SPEC_DIR.parent.parent)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------- parsing

def test_valid_minimal_spec():
    spec = parse_spec(VALID, "t.txtpb")
    assert (spec.name, spec.gpu) == ("t", "Test GPU")
    assert (spec.compute_capability, spec.sm) == ("8.0", "sm_80")
    assert (spec.sm_count, spec.memory_bytes, spec.clock_ghz) == (108, 85899345920, 1.41)


def test_positions_and_syntax_variants():
    parsed = parse_textproto("gpu_device_info < core_count: 0x10; cuda_compute_capability: { major: 9 } >"
                             "  # c\nplatform_name: 'CU' \"DA\",\n"
                             "autotune_results { results: [{device: \"x\"}, {device: \"y\"}] }\n")
    assert parsed.at("gpu_device_info") == gpu_specs.Pos(1, 1, 1, 17)
    assert parsed.at("gpu_device_info", "core_count") == gpu_specs.Pos(1, 19, 1, 31)
    assert parsed.at("gpu_device_info", "cuda_compute_capability", "major") == gpu_specs.Pos(1, 64, 1, 71)
    assert parsed.at("platform_name") == gpu_specs.Pos(2, 1, 2, 16)
    msg = parsed.message
    assert (msg.gpu_device_info.core_count, msg.platform_name) == (16, "CUDA")
    assert [r.device for r in msg.autotune_results.results] == ["x", "y"]


def test_feature_extension_forms():
    base = VALID.replace("major: 8 minor: 0", "major: 9 minor: 0")
    assert parse_spec(base, "t.txtpb").sm == "sm_90a"  # XLA defaults 9.0 to sm_90a
    assert parse_spec(base, "t.txtpb").compute_capability == "9.0"
    s = parse_spec(base.replace("minor: 0", "minor: 0 feature_extension: 2"), "t.txtpb")
    assert (s.compute_capability, s.sm) == ("9.0a", "sm_90a")
    s = parse_spec(base.replace("minor: 0", "minor: 0 feature_extension: NONE"), "t.txtpb")
    assert (s.compute_capability, s.sm) == ("9.0", "sm_90")


def test_escapes_xla_accepts():
    s = parse_spec(VALID.replace('"Test GPU"', r'"T\x41\101\u00e9\n\\q\""'), "t.txtpb")
    assert s.gpu == 'TAAé\n\\q"'


# ---------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("text, line, col, words", [
    (VALID.replace('"Test GPU"', '"Test GPU'), 18, 25, "string missing ending quote"),
    # missing closing brace: at the '{' that is never closed
    (VALID.replace("patch: 0 }", "patch: 0"), 17, 18, "'{' of 'dnn_version_info' is never closed"),
    (VALID.replace("}\nplatform_name", "platform_name"), 2, 17, "'{' of 'gpu_device_info'"),
    (VALID.replace("core_count: 108", "core_count 108"), 8, 14, "expected ':' after field name 'core_count'"),
    (VALID.replace("core_count: 108", "core_count: }"), 8, 15, "field 'core_count' expects an integer"),
    (VALID + "}\n", 19, 1, "got }"),
    (VALID.replace("core_count: 108", "core_count: 108abc"), 8, 15, "got 108abc"),
    (VALID.replace("core_count: 108", "core_count: 09"), 8, 15, "got 09"),
    # XLA's C++ parser rejects escapes Python's text_format takes: at the backslash
    (VALID.replace('"Test GPU"', '"Test\\qGPU"'), 18, 30, "invalid escape '\\q'"),
    (VALID.replace('"Test GPU"', '"Test\\xGPU"'), 18, 30, "invalid escape '\\x'"),
])
def test_syntax_errors(text, line, col, words):
    err = _spec_error(text)
    assert (err.line, err.col) == (line, col), err.format()
    assert words in err.message, err.message


def test_unknown_field_close_match():
    err = _spec_error(VALID.replace("core_count", "core_cont"))
    assert (err.line, err.col) == (8, 3)
    assert "unknown field 'core_cont'" in err.message and "gpu_device_info" in err.message
    assert err.hint is not None and "'core_count'" in err.hint


def test_unknown_top_level_field():
    err = _spec_error(VALID + "platfrom_name: \"CUDA\"\n")
    assert (err.line, err.col) == (19, 1)
    assert "'platform_name'" in err.hint
    err = _spec_error(VALID + "cuda_compute_capability { major: 8 }\n")
    assert "belongs inside gpu_device_info" in err.hint


@pytest.mark.parametrize("old, new, line, col, words", [
    ("core_count: 108", 'core_count: "abc"', 8, 15, "field 'core_count' expects an integer"),
    ("core_count: 108", "core_count: 10.8", 8, 15, "expects an integer"),
    ("core_count: 108", "core_count: 4294967296", 8, 15, "out of range"),
    ("core_count: 108", "core_count { }", 8, 14, "not a message"),
    ("clock_rate_ghz: 1.41", 'clock_rate_ghz: "fast"', 12, 19, "expects a number"),
    ('"Test GPU"', "TestGPU", 18, 25, "expects a quoted string"),
    ("minor: 0", "minor: 0 feature_extension: ACCELERATED", 3, 66, "has no value named ACCELERATED"),
    ("dnn_version_info {", "dnn_version_info: 9 #", 17, 19, "expects a message"),
])
def test_type_errors(old, new, line, col, words):
    if old == "dnn_version_info {" and "dnn_version_info" not in gpu_specs._message_class().DESCRIPTOR.fields_by_name:
        pytest.skip("this jaxlib's schema has no dnn_version_info (moved for XLA, so unchecked)")
    err = _spec_error(VALID.replace(old, new))
    assert (err.line, err.col) == (line, col), err.format()
    assert words in err.message, err.message


def test_enum_hint():
    err = _spec_error(VALID.replace("minor: 0", "minor: 0 feature_extension: ACCELERATED"))
    assert "'ACCELERATED_FEATURES'" in err.hint


# Required fields no compute capability determines: a spec without one is an error,
# at the message that lacks it.
NOT_FILLED = [
    ("  cuda_compute_capability { major: 8 minor: 0 }\n", "", 2, "cuda_compute_capability"),
    ("major: 8 minor: 0", "minor: 0", 3, "major"),
    ("  core_count: 108\n", "", 2, "core_count"),
    ("  clock_rate_ghz: 1.41\n", "", 2, "clock_rate_ghz"),
    ("  device_memory_size: 85899345920\n", "", 2, "device_memory_size"),
    ("  memory_bandwidth: 1935000000000\n", "", 2, "memory_bandwidth"),
    ('platform_name: "CUDA"\n', "", 1, "platform_name"),
    ('device_description_str: "Test GPU"\n', "", 1, "device_description_str"),
]
# Required fields every GPU of a compute capability reports alike: filled in.
FILLED = {
    "threads_per_warp": 32, "threads_per_block_limit": 1024, "block_dim_limit_x": 2147483647,
    "shared_memory_per_block": 49152, "shared_memory_per_block_optin": 166912,
    "registers_per_block_limit": 65536, "fpus_per_core": 64,
}


def test_every_required_field_is_tested():
    tested = {f for *_, f in NOT_FILLED} | set(FILLED) | {"gpu_device_info"}
    assert tested == {f for names in REQUIRED.values() for f in names}


@pytest.mark.parametrize("old, new, line, field", NOT_FILLED)
def test_missing_required(old, new, line, field):
    err = _spec_error(VALID.replace(old, new))
    assert err.line == line and f"missing required field '{field}'" in err.message, err.format()


def test_missing_gpu_device_info():
    err = _spec_error('platform_name: "CUDA"\ndevice_description_str: "x"\n')
    assert (err.line, err.col) == (1, 1)
    assert "'gpu_device_info'" in err.message


@pytest.mark.parametrize("field", sorted(FILLED))
def test_missing_field_is_filled_from_the_compute_capability(field):
    lines = [ln for ln in VALID.splitlines(keepends=True) if not ln.startswith(f"  {field}:")]
    path = f"without_{field}.txtpb"
    spec = parse_spec("".join(lines), path)
    assert spec.filled == ((field, FILLED[field]),)
    assert getattr(spec.proto.gpu_device_info, field) == FILLED[field]
    # XLA receives the filled text; it parses to the same message.
    assert parse_textproto(spec.text).message == spec.proto
    assert spec.notes == (f"note: {path} lacks {field}; filled in as every compute "
                          f"capability 8.0 GPU reports: {field}: {FILLED[field]}",)


def test_missing_field_without_known_value_is_an_error():
    text = VALID.replace("major: 8 minor: 0", "major: 7 minor: 2").replace(
        "  registers_per_block_limit: 65536\n", "")
    err = _spec_error(text)
    assert (err.line, err.col) == (2, 1)
    assert "missing required field 'registers_per_block_limit'" in err.message
    assert "not 7.2" in err.hint


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_empty_file(text):
    err = _spec_error(text)
    assert (err.line, err.col) == (1, 1)
    assert "empty" in err.message


@pytest.mark.parametrize("old, new, line, col, words", [
    ('"CUDA"', '"ROCM"', 16, 16, 'platform_name must be "CUDA"'),
    ("platform_name", 'platform_name: "CUDA"\nplatform_name', 17, 1, "set more than once"),
    ("core_count: 108", "core_count: 0", 8, 15, "must be positive"),
    ("core_count: 108", "core_count: -108", 8, 15, "must be positive, got -108"),
    ("clock_rate_ghz: 1.41", "clock_rate_ghz: inf", 12, 19, "must be finite"),
    ("major: 8 minor: 0", "major: 8 minor: 0 feature_extension: ACCELERATED_FEATURES",
     3, 66, "needs compute capability 9.0"),
    ("major: 8", "major: 11", 3, 36, "compute capability 11.x"),
    ("core_count: 108", 'core_count: 108 rocm_compute_capability { gcn_arch_name: "x" }',
     8, 19, "oneof"),
])
def test_semantic_errors(old, new, line, col, words):
    err = _spec_error(VALID.replace(old, new))
    assert (err.line, err.col) == (line, col), err.format()
    assert words in err.message


def test_deep_nesting_is_an_error():
    err = _spec_error("gpu_device_info {" * 3000)
    assert "nested too deeply" in err.message


_TOKENS = st.sampled_from([
    "gpu_device_info", "core_count", "major", "{", "}", "<", ">", ":", ",", ";", "[", "]", "-",
    "108", "1.5", "0x1f", "09", '"CUDA"', "'x", '"a\\q"', "# c", "\n", " ", "inf", "@", "1e",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=30).map("".join) | st.text(max_size=60))
def test_fuzz_only_spec_errors(text):
    try:
        parse_spec(text, "f.txtpb")
    except SpecError as e:
        assert e.file == "f.txtpb" and e.message
        if "no such" not in e.message:
            assert e.line is not None and 1 <= e.line <= text.count("\n") + 1
            assert e.col is not None and e.col >= 1


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(VALID) - 1), st.integers(1, 8))
def test_fuzz_truncated_or_damaged(pos, n):
    for text in (VALID[:pos], VALID[:pos] + VALID[pos + n:]):
        try:
            parse_spec(text, "f.txtpb")
        except SpecError as e:
            assert e.line is not None and e.col is not None


# ------------------------------------------------------- XLA's own spec files

def test_newer_field_lists_match_the_installed_schema():
    """The fields tolerated as 'from a newer XLA' are the ones this jaxlib's schema
    has (0.10.x) or lacks (newer than 0.10.2): the lists are not guesses."""
    fields = set(gpu_specs._message_class().DESCRIPTOR.fields_by_name["gpu_device_info"]
                 .message_type.fields_by_name)
    assert not gpu_specs._AFTER_NEWEST & fields
    for since, fields_then in (("0.10.0", gpu_specs._SINCE_0_10), ("0.12.0", gpu_specs._SINCE_0_12)):
        if _jaxlib.jaxlib_at_least(since):
            assert fields_then <= fields
        else:
            assert not fields_then & fields


def test_xla_spec_without_registers_per_block_limit():
    spec = load_spec(XLA_SPECS / "a100_pcie_80.txtpb")
    assert (spec.sm, spec.gpu, spec.sm_count) == ("sm_80", "A100 80GB", 108)
    assert spec.filled == (("registers_per_block_limit", 65536),)
    assert "  registers_per_block_limit: 65536  # filled in" in spec.text
    assert len(spec.notes) == 1 and "lacks registers_per_block_limit" in spec.notes[0]


def test_xla_spec_with_fields_from_a_newer_xla():
    spec = load_spec(XLA_SPECS / "v100.txtpb")
    assert (spec.sm, spec.sm_count, spec.filled) == ("sm_70", 80, ())
    assert spec.text == (XLA_SPECS / "v100.txtpb").read_text()
    newer = [f for f in ("mem_clock_ghz", "max_blocks_per_multiprocessor", "collective_memory_granularity")
             if f not in spec.proto.gpu_device_info.DESCRIPTOR.fields_by_name]  # 0.12 has them
    assert spec.notes == ((f"note: {XLA_SPECS / 'v100.txtpb'}: {', '.join(newer)} (from a newer "
                           "XLA) left out: this jaxlib's XLA has no such fields",) if newer else ())
    # Only those: a misspelt field next to them is still an error.
    text = spec.text.replace("mem_clock_ghz", "mem_clock_gz")
    err = _spec_error(text)
    assert "unknown field 'mem_clock_gz'" in err.message


def test_xla_spec_compiles_to_ptx(cli):
    """``mlirhlo opt --stage ptx`` with XLA's a100_pcie_80.txtpb, which lacks a required field."""
    spec = XLA_SPECS / "a100_pcie_80.txtpb"
    r = cli("opt", "--platform", "cuda", "--stage", "ptx", "--gpu-spec", spec,
            DATA / "mlp_train_step.before_optimizations.txt", "--no-cache")
    assert r.code == 0, r.err
    assert re.search(r"^\.target sm_80$", r.out, re.M) and ".entry" in r.out
    assert r.err.count("note:") == 1 and "lacks registers_per_block_limit" in r.err


def test_xla_spec_with_newer_fields_in_hlo_opt(tmp_path, capfd):
    """hlo-opt's own command line with XLA's newest v100.txtpb."""
    from mlirhlo_driver.cli.xla import tools as xla_tools
    from mlirhlo_driver.cuda import tools as cuda_tools

    text = (XLA_SPECS / "v100.txtpb").read_text()
    if not cuda_tools.ptxas().can_target("sm_70"):  # CUDA 13 dropped it: the same file as CC 7.5
        text = text.replace("cuda_compute_capability {\n    major: 7\n",
                            "cuda_compute_capability {\n    major: 7\n    minor: 5\n", 1)
    spec = tmp_path / "v100.txtpb"
    spec.write_text(text)
    capfd.readouterr()
    try:
        xla_tools.hlo_opt_main(["--platform=CUDA", "--stage=llvm",
                                f"--xla_gpu_target_config_filename={spec}",
                                str(DATA / "xla_tools" / "input.hlo")])
    except SystemExit as e:
        assert not e.code
    out, err = capfd.readouterr()
    assert 'target triple = "nvptx64-nvidia-cuda"' in out
    if _jaxlib.jaxlib_at_least("0.12.0"):  # its schema has every field of that spec but data_caches
        assert err == ""
    else:
        assert err.count("\n") == 1 and "(from a newer XLA) left out" in err


# --------------------------------------------------------------- resolve_spec

def test_resolve_spec_by_name_and_path(tmp_path):
    assert resolve_spec("h100_sxm").path == SPEC_DIR / "h100_sxm.txtpb"
    assert resolve_spec(str(SPEC_DIR / "t4.txtpb")).name == "t4"
    mine = tmp_path / "mine.txtpb"
    mine.write_text(VALID)
    spec = resolve_spec(str(mine))
    assert (spec.name, spec.path, spec.gpu) == ("mine", mine, "Test GPU")
    assert resolve_spec(mine).name == "mine"
    assert load_spec(mine) == spec


def test_resolve_spec_takes_a_bare_file_name_in_the_working_folder(tmp_path, monkeypatch):
    """A word that names no shipped spec but a file here is that file (a shipped name wins)."""
    monkeypatch.chdir(tmp_path)
    Path("mygpu").write_text(VALID)
    spec = resolve_spec("mygpu")
    assert (spec.name, spec.gpu) == ("mygpu", "Test GPU")
    Path("t4").write_text(VALID)
    assert resolve_spec("t4").path == SPEC_DIR / "t4.txtpb"


def test_resolve_spec_path_from_xla_tree():
    """A path in XLA's source tree that is not here gives the shipped spec of that name."""
    spec = resolve_spec("/xla/tools/hlo_opt/gpu_specs/a100_pcie_80.txtpb")
    assert spec.path == SPEC_DIR / "a100_pcie_80.txtpb"
    assert spec.notes == ("note: /xla/tools/hlo_opt/gpu_specs/a100_pcie_80.txtpb does "
                          "not exist: using the shipped spec 'a100_pcie_80'",)


def test_resolve_spec_unknown_name():
    with pytest.raises(SpecError) as info:
        resolve_spec("h100_sx")
    assert "unknown GPU spec 'h100_sx'" in info.value.message
    assert "'h100_sxm'" in info.value.hint
    with pytest.raises(SpecError) as info:
        resolve_spec("h100")
    assert "'h100_pcie'" in info.value.hint and "'h100_sxm'" in info.value.hint


def test_resolve_spec_missing_file(tmp_path):
    missing = str(tmp_path / "nope.txtpb")
    with pytest.raises(SpecError) as info:
        resolve_spec(missing)
    assert info.value.message == "no such file"
    assert info.value.format() == f"error: {missing}: no such file"


def test_bad_file_reports_path(tmp_path):
    bad = tmp_path / "bad.txtpb"
    bad.write_text(VALID.replace("core_count", "core_cont"))
    with pytest.raises(SpecError) as info:
        resolve_spec(str(bad))
    assert info.value.format().startswith(f"error: {bad}:8:3: unknown field 'core_cont'")


# ------------------------------------------------ device-less compile (no GPU)

def test_every_spec_compiles_to_its_sm():
    """XLA compiles for each shipped spec without a GPU and emits PTX for spec.sm.

    P100 and V100 (sm_60/sm_70) need a ptxas from CUDA 12 or older; with only a
    CUDA 13 ptxas installed XLA emits the PTX and then fails with "ptxas too
    old". For those two that failure is tolerated and the emitted PTX checked.
    """
    from mlirhlo_driver._native import jaxlib as _jaxlib

    jax = _jaxlib.jax()
    import jax.numpy as jnp
    from jaxlib.mlir import ir

    text = jax.jit(lambda x: jnp.tanh(x) * 2).lower(jnp.ones((128,), jnp.float32)).as_text()
    with _jaxlib.ir_context():
        module = ir.Module.parse(text)
    for spec in list_specs():
        devices = _jaxlib.cuda_compile_only_devices(gpu_specs.target_config_for_installed_xla(spec.text))
        assert devices[0].device_kind == spec.gpu
        with tempfile.TemporaryDirectory() as d:
            opts = _jaxlib.compile_options(dump_to=d, env_overrides=[
                ("xla_gpu_autotune_level", 0), *_jaxlib.codegen_dump_flags().items()])
            try:
                _jaxlib.compile_executable(module, devices, opts)
            except CompileError as e:
                if not (spec.name in ("p100", "v100") and "ptxas too old" in e.message):
                    raise
            ptx = [Path(p).read_text() for p in glob.glob(os.path.join(d, "*.ptx"))]
            targets = {t for p in ptx for t in re.findall(r"^\.target\s+(\w+)", p, re.M)}
            assert targets == {spec.sm}, (spec.name, targets)


def test_versions_match_the_installed_plugin():
    """The shipped specs carry the CUDA stack jax-cuda12-plugin 0.10.2 was built with, and XLA
    receives the versions of the plugin in use (what a GPU running it reports)."""
    import importlib

    from mlirhlo_driver.ir import protos

    plugin = _jaxlib.cuda_plugin()
    # The plugin is installed by the test environment: missing, this fails rather than skips.
    versions = importlib.import_module(f"{plugin.module}._versions")
    cuda = versions.cuda_runtime_build_version()  # CUDART_VERSION: 1000 * major + 10 * minor
    cudnn = versions.cudnn_build_version()  # 10000 * major + 100 * minor + patch
    assert _jaxlib.plugin_build_versions() == {
        "cuda": f"{cuda // 1000}.{cuda % 1000 // 10}.0",
        "cudnn": f"{cudnn // 10000}.{cudnn // 100 % 100}.{cudnn % 100}"}
    text = load_spec(SPEC_DIR / "h100_sxm.txtpb").text
    fitted = protos.parse_text(gpu_specs.target_config_for_installed_xla(text),
                               "stream_executor.GpuTargetConfigProto")
    info = fitted.gpu_device_info
    if "runtime_version" in info.DESCRIPTOR.fields_by_name:
        assert info.runtime_version == info.driver_version == _jaxlib.plugin_build_versions()["cuda"]
    else:  # 0.9: the top-level RuntimeVersionProto
        assert fitted.runtime_version.major * 1000 + fitted.runtime_version.minor * 10 == cuda
    if "dnn_version_info" in fitted.DESCRIPTOR.fields_by_name:
        dnn = fitted.dnn_version_info
        assert (dnn.major, dnn.minor, dnn.patch) == (cudnn // 10000, cudnn // 100 % 100, cudnn % 100)
    else:
        assert info.dnn_version == _jaxlib.plugin_build_versions()["cudnn"]


# ------------------------------------- what the version fields change in XLA's code

# f32 -> f8e4m3fn: with runtime_version XLA's FP8 conversion pass targets PTX 8.x
# and Hopper converts in hardware; without it, CUDA 0.0 gives software code.
FP8_MODULE = """\
func.func @main(%x: tensor<1024xf32>) -> tensor<1024xf8E4M3FN> {
  %0 = stablehlo.convert %x : (tensor<1024xf32>) -> tensor<1024xf8E4M3FN>
  return %0 : tensor<1024xf8E4M3FN>
}
"""

# A narrow-type elementwise fusion: on CC 10.x with a 12.9+ toolkit XLA stores
# 256 bits per thread (st.global.v8.b32), else 128 (v4).
NARROW_MODULE = """\
func.func @main(%a: tensor<1048576xbf16>, %b: tensor<1048576xbf16>) -> tensor<1048576xbf16> {
  %0 = stablehlo.add %a, %b : tensor<1048576xbf16>
  return %0 : tensor<1048576xbf16>
}
"""


def _without(spec_name: str, field: str, directory: Path) -> Path:
    """A copy of a shipped spec with one gpu_device_info field removed."""
    text = (SPEC_DIR / f"{spec_name}.txtpb").read_text()
    kept = [ln for ln in text.splitlines(keepends=True) if not ln.startswith(f"  {field}:")]
    assert len(kept) == len(text.splitlines()) - 1
    path = directory / f"{spec_name}_without_{field}.txtpb"
    path.write_text("".join(kept))
    return path


@pytest.fixture(scope="module")
def version_ptx(tmp_path_factory):
    """PTX of the two modules for the shipped spec and for it without the field."""
    import mlirhlo_driver as mhd

    d = tmp_path_factory.mktemp("versions")
    (d / "fp8.mlir").write_text(FP8_MODULE)
    (d / "narrow.mlir").write_text(NARROW_MODULE)
    fp8, narrow = mhd.load(str(d / "fp8.mlir")), mhd.load(str(d / "narrow.mlir"))

    def ptx(program, spec) -> str:
        return mhd.compile(program, platform="cuda", gpu_spec=str(spec)).stage("ptx")

    return {
        "fp8": ptx(fp8, "h100_sxm"),
        "fp8-no-runtime": ptx(fp8, _without("h100_sxm", "runtime_version", d)),
        "narrow": ptx(narrow, "b200"),
        "narrow-no-toolkit": ptx(narrow, _without("b200", "compile_time_toolkit_version", d)),
    }


def test_fp8_conversion_is_hardware_on_h100(version_ptx, tmp_path):
    filecheck(version_ptx["fp8"], """\
CHECK: .target sm_90a
CHECK: .entry
CHECK: ld.global
CHECK: cvt.rn.satfinite.e4m3x2.f32
CHECK: st.global.b8
""", tmp_path)
    # The same spec without runtime_version: XLA converts in software.
    filecheck(version_ptx["fp8-no-runtime"], """\
CHECK: .target sm_90a
CHECK-NOT: cvt.rn.satfinite.e4m3x2
""", tmp_path)


@pytest.mark.skipif(not _jaxlib.jaxlib_at_least("0.10.0"),
                    reason="GpuDeviceInfoProto.compile_time_toolkit_version (256-bit loads/stores "
                           "on CC 10.x) needs jaxlib 0.10.0+")
def test_b200_narrow_fusion_stores_256_bits(version_ptx, tmp_path):
    filecheck(version_ptx["narrow"], """\
CHECK: .target sm_100a
CHECK-NOT: st.global.v4
CHECK: st.global.v8.b32
""", tmp_path)
    filecheck(version_ptx["narrow-no-toolkit"], """\
CHECK: .target sm_100a
CHECK-NOT: st.global.v8
CHECK: st.global.v4.b32
""", tmp_path)


def test_the_plugins_toolkit_replaces_the_specs_cuda_and_cudnn_versions():
    """The versions that describe the compiler's toolchain follow the plugin it was built with;
    the top-level runtime_version (what XLA before 0.10 reads) too, as major.minor.0; fields
    the spec leaves unset stay unset; nothing to change is no change."""
    from mlirhlo_driver.cuda import specs
    from mlirhlo_driver.ir import protos

    msg = protos.message_class("stream_executor.GpuTargetConfigProto")()
    info = msg.gpu_device_info
    fields = info.DESCRIPTOR.fields_by_name
    set_here = [f for f in specs._CUDA_VERSION_FIELDS if f in fields and fields[f].type == fields[f].TYPE_STRING]
    for f in set_here[:1]:
        setattr(info, f, "12.9.0")
    if "runtime_version" in msg.DESCRIPTOR.fields_by_name:
        msg.runtime_version.major, msg.runtime_version.minor, msg.runtime_version.patch = 12, 9, 1
    if "dnn_version_info" in msg.DESCRIPTOR.fields_by_name:
        msg.dnn_version_info.major, msg.dnn_version_info.minor, msg.dnn_version_info.patch = 9, 8, 0
    if "dnn_version" in fields:
        info.dnn_version = "9.8.0"
    assert specs._follow_plugin_toolkit(msg, {"cuda": "13.0.2", "cudnn": "9.10.1"}) is True
    for f in set_here[:1]:
        assert getattr(info, f) == "13.0.2"
    for f in set_here[1:]:
        assert getattr(info, f) == ""
    if "runtime_version" in msg.DESCRIPTOR.fields_by_name:
        v = msg.runtime_version
        assert (v.major, v.minor, v.patch) == (13, 0, 0)
    if "dnn_version_info" in msg.DESCRIPTOR.fields_by_name:
        d = msg.dnn_version_info
        assert (d.major, d.minor, d.patch) == (9, 10, 1)
    if "dnn_version" in fields:
        assert info.dnn_version == "9.10.1"
    assert specs._follow_plugin_toolkit(msg, {"cuda": "13.0.2", "cudnn": "9.10.1"}) is False
    assert specs._follow_plugin_toolkit(msg, {}) is False


def _pre_0_12_target_config_class():
    """GpuTargetConfigProto as jaxlib's XLA had it before 0.12 (a dynamic descriptor: no .proto
    file): the cuDNN version in a top-level dnn_version_info, beside the CUDA version fields."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="mlirhlo_test_xla_0_10.proto", package="t", syntax="proto3")
    for name in ("RuntimeVersionProto", "VersionInfoProto"):
        m = fdp.message_type.add(name=name)
        for i, f in enumerate(("major", "minor", "patch"), start=1):
            m.field.add(name=f, number=i, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    info = fdp.message_type.add(name="GpuDeviceInfoProto")
    for i, f in enumerate(gpu_specs._CUDA_VERSION_FIELDS, start=1):
        info.field.add(name=f, number=i, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    top = fdp.message_type.add(name="GpuTargetConfigProto")
    for i, (f, t) in enumerate((("gpu_device_info", "GpuDeviceInfoProto"), ("runtime_version", "RuntimeVersionProto"),
                                ("dnn_version_info", "VersionInfoProto")), start=1):
        top.field.add(name=f, number=i, type=F.TYPE_MESSAGE, type_name=f".t.{t}", label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("t.GpuTargetConfigProto"))


def test_the_plugins_cudnn_replaces_a_top_level_dnn_version_info():
    """Under a schema with the top-level dnn_version_info (XLA before jaxlib 0.12), the spec's cuDNN
    version becomes the plugin's; one already equal is no change, and an unset one stays unset."""
    cls = _pre_0_12_target_config_class()
    msg = cls()
    msg.dnn_version_info.major, msg.dnn_version_info.minor, msg.dnn_version_info.patch = 9, 8, 0
    assert gpu_specs._follow_plugin_toolkit(msg, {"cudnn": "9.10.1"}) is True
    d = msg.dnn_version_info
    assert (d.major, d.minor, d.patch) == (9, 10, 1)
    assert gpu_specs._follow_plugin_toolkit(msg, {"cudnn": "9.10.1"}) is False
    assert (d.major, d.minor, d.patch) == (9, 10, 1)
    assert gpu_specs._follow_plugin_toolkit(msg, {"cudnn": "10.1.1"}) is True
    assert (d.major, d.minor, d.patch) == (10, 1, 1)
    unset = cls()
    assert gpu_specs._follow_plugin_toolkit(unset, {"cudnn": "9.10.1"}) is False
    assert not unset.HasField("dnn_version_info")


@pytest.mark.parametrize("spec, reserved, blocks", [("a100_sxm_80", 1024, 32), ("v100", None, 32), ("l4", 1024, 24), ("t4", None, 16)])
def test_fields_xla_reads_since_0_12_are_filled_from_the_compute_capability(spec, reserved, blocks):
    """A spec written before jaxlib 0.12 lacks what a GPU now reports (reserved shared memory per
    block from CC 8.0, the blocks per SM): filled from the CC, where XLA's schema has the field;
    a value the spec gives is kept."""
    from google.protobuf import text_format

    from mlirhlo_driver.cuda import specs
    from mlirhlo_driver.ir import protos

    cls = protos.message_class("stream_executor.GpuTargetConfigProto")
    fields = cls().gpu_device_info.DESCRIPTOR.fields_by_name
    text = (Path(specs.__file__).parent.parent / "gpu_specs" / f"{spec}.txtpb").read_text()
    assert "max_blocks_per_multiprocessor" not in text
    fitted = specs._fitted_for_xla(text, ())
    info = text_format.Parse(fitted, cls(), descriptor_pool=protos.pool()).gpu_device_info
    if "max_blocks_per_multiprocessor" in fields:
        assert info.max_blocks_per_multiprocessor == blocks
    if "reserved_shared_memory_per_block" in fields:
        assert info.reserved_shared_memory_per_block == (reserved or 0)
    kept = text.replace("gpu_device_info {", "gpu_device_info {\n  max_blocks_per_multiprocessor: 7", 1)
    again = text_format.Parse(specs._fitted_for_xla(kept, ()), cls(), descriptor_pool=protos.pool())
    if "max_blocks_per_multiprocessor" in fields:
        assert again.gpu_device_info.max_blocks_per_multiprocessor == 7


@pytest.mark.parametrize("cudart, cudnn, want", [
    (12090, 90800, ("12.9.0", "9.8.0")),
    (13000, 91002, ("13.0.0", "9.10.2")),
    (13020, 100101, ("13.2.0", "10.1.1")),
])
def test_plugin_build_versions_are_dotted_as_nvidia_numbers_them(cudart, cudnn, want, monkeypatch):
    """CUDART_VERSION is 1000 * major + 10 * minor, CUDNN_VERSION 10000 * major + 100 * minor +
    patch (cuDNN 9): each read as a dotted version, whatever plugin reports them."""
    import sys
    import types

    name = f"fake_cuda_plugin_{cudart}_{cudnn}"
    versions = types.ModuleType(f"{name}._versions")
    versions.cuda_runtime_build_version = lambda: cudart
    versions.cudnn_build_version = lambda: cudnn
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, f"{name}._versions", versions)
    assert _jaxlib._build_versions(name) == (("cuda", want[0]), ("cudnn", want[1]))
