"""cuda/specs.py and gpu_specs/: the shipped GpuTargetConfigProto files, XLA's own, and
their validation.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
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
from mlirhlo_driver.errors import CompileError, SpecError, did_you_mean
from tests.conftest import DATA, assert_mentions, filecheck

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
    "gb200": ("10.0a", "sm_100a"),
    "gb300": ("10.3a", "sm_103a"),
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

_TOKENS = st.sampled_from([
    "gpu_device_info", "core_count", "major", "{", "}", "<", ">", ":", ",", ";", "[", "]", "-",
    "108", "1.5", "0x1f", "09", '"CUDA"', "'x", '"a\\q"', "# c", "\n", " ", "inf", "@", "1e",
])

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


# ----------------------------------------------------------------- shipped specs

def test_shipped_spec_names():
    names = [s.name for s in list_specs()]
    assert names == sorted(EXPECTED)
    assert DEFAULT_SPEC in names
    # In the checkout: the repository's gpu_specs/ folder (shipped in the package).
    assert SPEC_DIR == Path(gpu_specs.__file__).parent.parent.parent / "gpu_specs"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shipped_spec_validates(name):
    from mlirhlo_driver.cuda import tools as cuda_tools

    sm = EXPECTED[name][1]
    if not any(p.can_target(sm) for p in cuda_tools.all_ptxas()):
        # CUDA 13 dropped sm_60/sm_70: with only its ptxas here, 'specs check' says so.
        with pytest.raises(SpecError) as info:
            check_spec(SPEC_DIR / f"{name}.txtpb")
        assert_mentions(info.value.message, "ptxas", f"{sm} ")
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
    assert_mentions(err.message, "'core_cont'", "gpu_device_info")
    assert err.hint is not None and "'core_count'" in err.hint


def test_unknown_top_level_field():
    err = _spec_error(VALID + "platfrom_name: \"CUDA\"\n")
    assert (err.line, err.col) == (19, 1)
    assert "'platform_name'" in err.hint
    err = _spec_error(VALID + "cuda_compute_capability { major: 8 }\n")
    assert_mentions(err.hint, "'cuda_compute_capability'", "inside gpu_device_info")


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


def test_every_required_field_is_tested():
    tested = {f for *_, f in NOT_FILLED} | set(FILLED) | {"gpu_device_info"}
    assert tested == {f for names in REQUIRED.values() for f in names}


@pytest.mark.parametrize("old, new, line, field", NOT_FILLED)
def test_missing_required(old, new, line, field):
    err = _spec_error(VALID.replace(old, new))
    assert err.line == line, err.format()
    assert_mentions(err.message, "required", f"'{field}'")


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
    [note] = spec.notes
    assert note.startswith("note: ")
    assert_mentions(note, path, "8.0", f"{field}: {FILLED[field]}")


def test_missing_field_without_known_value_is_an_error():
    text = VALID.replace("major: 8 minor: 0", "major: 7 minor: 2").replace(
        "  registers_per_block_limit: 65536\n", "")
    err = _spec_error(text)
    assert (err.line, err.col) == (2, 1)
    assert_mentions(err.message, "required", "'registers_per_block_limit'")
    assert_mentions(err.hint, "7.2")


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
    [note] = spec.notes
    assert_mentions(note, "a100_pcie_80.txtpb", "registers_per_block_limit: 65536")


def test_xla_spec_with_fields_from_a_newer_xla():
    spec = load_spec(XLA_SPECS / "v100.txtpb")
    assert (spec.sm, spec.sm_count, spec.filled) == ("sm_70", 80, ())
    assert spec.text == (XLA_SPECS / "v100.txtpb").read_text()
    newer = [f for f in ("mem_clock_ghz", "max_blocks_per_multiprocessor", "collective_memory_granularity")
             if f not in spec.proto.gpu_device_info.DESCRIPTOR.fields_by_name]  # 0.12 has them
    assert len(spec.notes) == (1 if newer else 0), spec.notes
    if newer:
        assert_mentions(spec.notes[0], str(XLA_SPECS / "v100.txtpb"), ", ".join(newer), "newer XLA")
    # Only those: a misspelt field next to them is still an error.
    text = spec.text.replace("mem_clock_ghz", "mem_clock_gz")
    err = _spec_error(text)
    assert_mentions(err.message, "unknown field", "'mem_clock_gz'")


@pytest.mark.slow
def test_xla_spec_compiles_to_ptx(cli):
    """``mlirhlo opt --stage ptx`` with XLA's a100_pcie_80.txtpb, which lacks a required field."""
    spec = XLA_SPECS / "a100_pcie_80.txtpb"
    r = cli("opt", "--platform", "cuda", "--stage", "ptx", "--gpu-spec", spec,
            DATA / "mlp_train_step.before_optimizations.txt", "--no-cache")
    assert r.code == 0, r.err
    assert re.search(r"^\.target sm_80$", r.out, re.M) and ".entry" in r.out
    assert r.err.count("note:") == 1
    assert_mentions(r.err, "registers_per_block_limit")


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
        assert err.count("\n") == 1 and err.startswith("note: ")
        assert_mentions(err, "newer XLA", "left out")


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
    [note] = spec.notes
    assert_mentions(note, "/xla/tools/hlo_opt/gpu_specs/a100_pcie_80.txtpb", "'a100_pcie_80'")


def test_resolve_spec_unknown_name():
    with pytest.raises(SpecError) as info:
        resolve_spec("h100_sx")
    assert "'h100_sx'" in info.value.message
    assert "'h100_sxm'" in info.value.hint
    with pytest.raises(SpecError) as info:
        resolve_spec("h100")
    assert "'h100_pcie'" in info.value.hint and "'h100_sxm'" in info.value.hint


def test_resolve_spec_missing_file(tmp_path):
    missing = str(tmp_path / "nope.txtpb")
    with pytest.raises(SpecError) as info:
        resolve_spec(missing)
    assert (info.value.message, info.value.file) == ("no such file", missing)


def test_bad_file_reports_path(tmp_path):
    bad = tmp_path / "bad.txtpb"
    bad.write_text(VALID.replace("core_count", "core_cont"))
    with pytest.raises(SpecError) as info:
        resolve_spec(str(bad))
    assert (info.value.file, info.value.line, info.value.col) == (str(bad), 8, 3)
    assert_mentions(info.value.message, "'core_cont'")


# ------------------------------------------------ device-less compile (no GPU)

@pytest.mark.slow
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
    # First the driver's reading, which also makes its plugin copy importable by name (the
    # copy is off sys.path); then the plugin's own. The plugin is installed by the test
    # environment: missing, this fails rather than skips.
    reported = _jaxlib.plugin_build_versions()
    versions = importlib.import_module(f"{plugin.module}._versions")
    cuda = versions.cuda_runtime_build_version()  # CUDART_VERSION: 1000 * major + 10 * minor
    cudnn = versions.cudnn_build_version()  # 10000 * major + 100 * minor + patch
    assert reported == {
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
    text = (specs.SPEC_DIR / f"{spec}.txtpb").read_text()
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


# ------------------------------------------------ summaries, tables and hints, exactly

def test_fill_values_table_for_every_known_compute_capability():
    """fill_values gives the same-on-every-GPU limits plus the CC's opt-in shared memory and
    FP32 units per SM, exactly; an unknown CC gets nothing."""
    common = {"threads_per_warp": 32, "threads_per_block_limit": 1024, "block_dim_limit_x": 2147483647,
              "shared_memory_per_block": 49152, "registers_per_block_limit": 65536}
    want = {  # (major, minor): (shared_memory_per_block_optin, fpus_per_core)
        (6, 0): (49152, 64), (6, 1): (49152, 128), (7, 0): (98304, 64), (7, 5): (65536, 64),
        (8, 0): (166912, 64), (8, 6): (101376, 128), (8, 7): (166912, 128), (8, 9): (101376, 128),
        (9, 0): (232448, 128), (10, 0): (232448, 128), (10, 3): (232448, 128), (12, 0): (101376, 128),
    }
    for (major, minor), (optin, fpus) in want.items():
        assert fill_values(major, minor) == {**common, "shared_memory_per_block_optin": optin,
                                             "fpus_per_core": fpus}, (major, minor)
    for major, minor in ((7, 2), (5, 0), (11, 0), (9, 1), (0, 0)):
        assert fill_values(major, minor) == {}


def test_fpus_per_core_by_compute_capability():
    """64 FP32 units per SM on 6.0, 7.x and 8.0, 128 on every other CC (XLA's GetFpusPerCore)."""
    got = {cc: gpu_specs._fpus_per_core(*cc) for cc in
           ((5, 0), (6, 0), (6, 1), (7, 0), (7, 2), (7, 5), (8, 0), (8, 6), (9, 0), (10, 0), (12, 0))}
    assert got == {(5, 0): 128, (6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64,
                   (8, 0): 64, (8, 6): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128}


@pytest.mark.parametrize("cc, ext, compute_capability, sm", [
    ("major: 8 minor: 6", "", "8.6", "sm_86"),
    ("major: 9 minor: 0", "", "9.0", "sm_90a"),
    ("major: 10 minor: 0", "", "10.0", "sm_100a"),
    ("major: 10 minor: 3", "", "10.3", "sm_103a"),
    ("major: 12 minor: 0", "", "12.0", "sm_120"),
    ("major: 9 minor: 0", " feature_extension: NONE", "9.0", "sm_90"),
    ("major: 9 minor: 0", " feature_extension: ACCELERATED_FEATURES", "9.0a", "sm_90a"),
    ("major: 10 minor: 0", " feature_extension: ACCELERATED_FEATURES", "10.0a", "sm_100a"),
    ("major: 10 minor: 0", " feature_extension: FAMILY_COMPATIBLE_FEATURES", "10.0f", "sm_100f"),
    ("major: 12 minor: 0", " feature_extension: FAMILY_COMPATIBLE_FEATURES", "12.0f", "sm_120f"),
    ("major: 12 minor: 0", " feature_extension: NONE", "12.0", "sm_120"),
])
def test_compute_capability_and_ptx_target_names(cc, ext, compute_capability, sm):
    """The CC as written (with 'a'/'f' for an explicit feature extension) and the PTX target
    XLA picks: 'a' by default on 9.x and 10.x only, an explicit extension honoured."""
    spec = parse_spec(VALID.replace("major: 8 minor: 0", cc + ext), "t.txtpb")
    assert (spec.compute_capability, spec.sm) == (compute_capability, sm)


@pytest.mark.parametrize("major, ext, needs", [(8, "ACCELERATED_FEATURES", "9.0"),
                                               (9, "FAMILY_COMPATIBLE_FEATURES", "10.0")])
def test_feature_extension_needs_a_new_enough_compute_capability(major, ext, needs):
    """An 'a' or 'f' extension below the CC that has it is an error at the extension's value."""
    err = _spec_error(VALID.replace("major: 8 minor: 0", f"major: {major} minor: 0 feature_extension: {ext}"))
    assert_mentions(err.message, ext, f"compute capability {needs}", f"major {major}")
    assert (err.line, err.col) == (3, 66)


def test_spec_summary_to_dict_exactly():
    """to_dict is the JSON summary: every field but the text, clock as the float32 reads."""
    spec = parse_spec(VALID.replace("clock_rate_ghz: 1.41", "clock_rate_ghz: 1.755"), "dir/t.txtpb")
    assert spec.to_dict() == {
        "name": "t", "path": str(Path("dir/t.txtpb")), "gpu": "Test GPU", "compute_capability": "8.0",
        "sm": "sm_80", "sm_count": 108, "memory_bytes": 85899345920,
        "memory_bandwidth": 1935000000000, "clock_ghz": 1.755,
    }
    assert parse_spec(VALID, "t.txtpb", name="other").name == "other"
    assert (spec.filled, spec.notes) == ((), ())


@pytest.mark.parametrize("value, short", [
    (1.41, 1.41), (1.9800000190734863, 1.98), (0.5, 0.5), (0.1, 0.1), (1.0000001192092896, 1.0000001),
    (123456789.0, 123456789.0), (1e-45, 1e-45), (16777217.0, 16777217.0),
])
def test_float32_is_the_shortest_decimal_of_the_same_float32(value, short):
    """clock_rate_ghz is a float32: summarised as the shortest decimal that reads back the same."""
    assert gpu_specs._float32(value) == short


def test_quote_escapes_like_a_textproto_string():
    """A platform_name in an error is quoted as it would be written in the spec."""
    assert gpu_specs._quote('a\\b"c\nd\te') == '"a\\\\b\\"c\\nd\\te"'
    err = _spec_error(VALID.replace('"CUDA"', '"CU\\"DA\\n"'))
    assert_mentions(err.message, "platform_name", '"CUDA"', '"CU\\"DA\\n"')
    assert_mentions(err.hint, "CUDA only")


@pytest.mark.parametrize("old, new, message, line, col, hint", [
    ("  cuda_compute_capability { major: 8 minor: 0 }\n", '  rocm_compute_capability { gcn_arch_name: "gfx90a" }\n',
     "missing required field 'cuda_compute_capability' in 'gpu_device_info' (GpuDeviceInfoProto)", 2, 1,
     "only CUDA targets are supported"),
    ("  cuda_compute_capability { major: 8 minor: 0 }\n", "",
     "missing required field 'cuda_compute_capability' in 'gpu_device_info' (GpuDeviceInfoProto)", 2, 1, None),
    ("major: 8 minor: 0", "minor: 0",
     "missing required field 'major' in 'cuda_compute_capability' (CudaComputeCapabilityProto)", 3, 3, None),
    ("  core_count: 108\n", "",
     "missing required field 'core_count' in 'gpu_device_info' (GpuDeviceInfoProto)", 2, 1, None),
    ('device_description_str: "Test GPU"\n', "",
     "missing required field 'device_description_str' in GpuTargetConfigProto", 1, 1, None),
    ("core_count", "core_cont", "unknown field 'core_cont' in 'gpu_device_info' (GpuDeviceInfoProto)", 8, 3,
     "did you mean 'core_count'?"),
    ("major: 8", "major: 8 majr: 1",
     "unknown field 'majr' in 'cuda_compute_capability' (CudaComputeCapabilityProto)", 3, 38,
     "did you mean 'major'?"),
    ("device_description_str", "rocm_compute_capability { }\ndevice_description_str",
     "unknown field 'rocm_compute_capability' in GpuTargetConfigProto", 18, 1,
     "'rocm_compute_capability' belongs inside gpu_device_info { ... }"),
    ("clock_rate_ghz: 1.41", "clock_rate_ghz: 0", "field 'clock_rate_ghz' must be positive, got 0.0", 12, 19, None),
    ("clock_rate_ghz: 1.41", "clock_rate_ghz: nan", "field 'clock_rate_ghz' must be positive, got nan", 12, 19, None),
    ("clock_rate_ghz: 1.41", "clock_rate_ghz: inf", "field 'clock_rate_ghz' must be finite, got inf", 12, 19, None),
    ("major: 8", "major: 0", "field 'major' must be positive, got 0", 3, 36, None),
    ("core_count: 108", "core_count: 1", None, None, None, None),
    ("major: 8", "major: 11", "compute capability 11.x is not supported by this jaxlib's XLA (PTX 8.8 cannot "
     "target sm_110; XLA aborts)", 3, 36, None),
    ("major: 8", "major: 12", None, None, None, None),
    ("major: 8", "major: 10", None, None, None, None),
    ("major: 8 minor: 0", "major: 8 minor: 0 feature_extension: ACCELERATED_FEATURES",
     "feature_extension ACCELERATED_FEATURES needs compute capability 9.0 or newer, got major 8", 3, 66, None),
    ("major: 8 minor: 0", "major: 9 minor: 0 feature_extension: FAMILY_COMPATIBLE_FEATURES",
     "feature_extension FAMILY_COMPATIBLE_FEATURES needs compute capability 10.0 or newer, got major 9", 3, 66, None),
    ("major: 8 minor: 0 }\n  threads_per_block_limit: 1024\n  threads_per_warp: 32\n",
     "major: 7 minor: 2 }\n  threads_per_block_limit: 1024\n",
     "missing required field 'threads_per_warp' in 'gpu_device_info' (GpuDeviceInfoProto)", 2, 1,
     "mlirhlo fills it in for the compute capabilities it knows, not 7.2"),
    ('"CUDA"', '"CU\\"DA\\n"', 'platform_name must be "CUDA", got "CU\\"DA\\n"', 16, 16,
     "device-less compiles are supported for CUDA only"),
])
@pytest.mark.golden
def test_validation_errors_exactly(old, new, message, line, col, hint):
    """Each validation error's exact words, position and hint; the values just inside the
    limits (1 SM, CC 10.x and 12.x) pass. The family's golden table."""
    text = VALID.replace(old, new)
    if message is None:
        assert parse_spec(text, "t.txtpb").gpu == "Test GPU"
        return
    err = _spec_error(text)
    assert (err.message, err.line, err.col, err.hint) == (message, line, col, hint)


@pytest.mark.parametrize("removed, hint", [
    ("  fpus_per_core: 64\n", True), ("  threads_per_warp: 32\n", True),
    ("  shared_memory_per_block_optin: 166912\n", True), ("  clock_rate_ghz: 1.41\n", False),
])
def test_missing_fillable_field_of_an_unknown_cc_hints_why(removed, hint):
    """For a CC with no known values a missing fillable field says why it was not filled in;
    a field no CC determines does not."""
    err = _spec_error(VALID.replace("major: 8 minor: 0", "major: 7 minor: 2").replace(removed, ""))
    field = removed.split(":")[0].strip()
    assert_mentions(err.message, "required", f"'{field}'", "gpu_device_info")
    if hint:
        assert_mentions(err.hint, "compute capabilities", "7.2")
    else:
        assert err.hint is None


def test_filled_fields_are_written_after_the_brace_in_the_text_xla_receives():
    """Filled-in fields go right after gpu_device_info's '{', each commented, in REQUIRED's
    order; what followed the brace on its line stays, on a line of its own."""
    text = (VALID.replace("  threads_per_warp: 32\n", "").replace("  fpus_per_core: 64\n", "")
            .replace("  core_count: 108\n", "").replace("gpu_device_info {\n", "gpu_device_info {  core_count: 108\n"))
    spec = parse_spec(text, "t.txtpb")
    assert spec.filled == (("fpus_per_core", 64), ("threads_per_warp", 32))
    assert spec.text.split("\n")[:6] == [
        "# test spec",
        "gpu_device_info {",
        "  fpus_per_core: 64  # filled in by mlirhlo: what every CC 8.0 GPU reports",
        "  threads_per_warp: 32  # filled in by mlirhlo: what every CC 8.0 GPU reports",
        "  core_count: 108",
        "  cuda_compute_capability { major: 8 minor: 0 }",
    ]
    assert spec.text.split("\n")[5:] == text.split("\n")[2:]
    [note] = spec.notes
    assert_mentions(note, "t.txtpb", "fpus_per_core: 64, threads_per_warp: 32", "8.0")
    assert spec.cc_at == gpu_specs.Pos(3, 3, 3, 27)  # in the file, not the filled text


def test_newer_xla_field_is_noted_and_left_out_for_xla():
    """A field from an XLA newer than this one (data_caches) is noted, kept in the spec's
    text, and left out of what this XLA receives; a complete spec has no positions."""
    text = VALID.replace("  core_count: 108\n", "  core_count: 108\n  data_caches { level: 1 }\n")
    spec = parse_spec(text, "t.txtpb")
    [note] = spec.notes
    assert_mentions(note, "t.txtpb", "data_caches", "newer XLA")
    assert spec.text == text and spec.filled == ()
    assert spec.cc_at == gpu_specs.Pos(3, 3, 3, 27)
    assert "data_caches" not in gpu_specs.target_config_for_installed_xla(text)
    complete = VALID.replace("dnn_version_info { major: 9 minor: 8 patch: 0 }\n", "")
    assert parse_spec(complete, "t.txtpb").cc_at is None


@pytest.mark.parametrize("old, new, message, line, col", [
    ("platform_name", 'platform_name: "CUDA"\nplatform_name',
     "field 'platform_name' is set more than once (first at line 16, col 1)", 17, 1),
    ("major: 8", "major: 8 major: 9", "field 'major' is set more than once (first at line 3, col 29)", 3, 38),
    ("core_count: 108", 'core_count: 108 rocm_compute_capability { gcn_arch_name: "x" }',
     "'rocm_compute_capability' and 'cuda_compute_capability' (line 3) are both set; they are "
     "alternatives (oneof compute_capability)", 8, 19),
    ("patch: 0 }", "patch: 0", "'{' of 'dnn_version_info' is never closed (expected '}' before end of file)", 17, 18),
    ("gpu_device_info {", "gpu_device_info <", None, None, None),
    ('"Test GPU"', '"a\\1b\\q"', "invalid escape '\\q' in string (XLA's parser rejects it)", 18, 30),
    ('"Test GPU"', '"ab" "\\q"', "invalid escape '\\q' in string (XLA's parser rejects it)", 18, 31),
    ('"Test GPU"', "'a\\'b\\z'", "invalid escape '\\z' in string (XLA's parser rejects it)", 18, 30),
    ('"Test GPU"', '"\\qab"', "invalid escape '\\q' in string (XLA's parser rejects it)", 18, 26),
    ('"Test GPU"', '"ab\\q"', "invalid escape '\\q' in string (XLA's parser rejects it)", 18, 28),
    ('"Test GPU"', '"ab\\n" "\\tc\\\\"', None, None, None),
])
@pytest.mark.golden
def test_parse_errors_exactly(old, new, message, line, col):
    """Fields set twice, clashing oneof members, unclosed braces and escapes XLA rejects: the
    exact words, at the exact place. The family's golden table."""
    text = VALID.replace(old, new)
    if message is None and "\\" in new:  # valid escapes first and last in a string
        assert parse_spec(text, "t.txtpb").gpu == "ab\n\tc\\"
        return
    if message is None:  # '<' ... '}' is a mismatch; '<' left open names '>'
        text = text.replace("}\nplatform_name", "platform_name")
        message, line, col = "'<' of 'gpu_device_info' is never closed (expected '>' before end of file)", 2, 17
    err = _spec_error(text)
    assert (err.message, err.line, err.col) == (message, line, col)


def test_angle_brackets_and_lists_parse_like_braces():
    """'<...>' is a message like '{...}'; a repeated field's '[a, b]' and '[]' are walked."""
    text = VALID.replace("gpu_device_info {", "gpu_device_info <").replace("}\nplatform_name", ">\nplatform_name")
    assert parse_spec(text, "t.txtpb").sm_count == 108
    parsed = parse_textproto("autotune_results { results: [] version: 3 }\n")
    assert parsed.at("autotune_results", "version") == gpu_specs.Pos(1, 32, 1, 41)
    assert parsed.message.autotune_results.version == 3


def test_spec_pickles_without_its_message():
    """A GpuSpec sent to a batch worker keeps everything but the protobuf message."""
    import pickle

    spec = parse_spec(VALID, "t.txtpb")
    spec.proto  # noqa: B018 - parsed in this process
    again = pickle.loads(pickle.dumps(spec))
    assert again == spec and again.text == spec.text and again.message is None
    assert again.proto == spec.proto  # parsed again where it is read


def test_a_specs_summary_is_kept_and_read_back_without_protobuf(tmp_path, monkeypatch):
    """The second process to read a spec gets its summary from the memo (no protobuf
    imported: a cached stage's command stays light); an edited text is parsed again."""
    from tests.conftest import run_subprocess

    code = ("import sys\nfrom mlirhlo_driver.cuda import specs\ns = specs.resolve_spec(sys.argv[1] if len(sys.argv) > 1 "
            "else 'v100')\nprint(s.sm, s.notes, 'google.protobuf.text_format' in sys.modules)\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    first, second = (run_subprocess(code, env=env) for _ in range(2))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout == "sm_70 () True\n" and second.stdout == "sm_70 () False\n"
    assert len(list((tmp_path / "xdg" / "mlirhlo-driver" / "specs").iterdir())) == 1
    # XLA's older file lacks fields: the memo keeps the notes that say so, and the filled text.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg2"))
    xla_spec = DATA / "xla_specs" / "a100_pcie_80.txtpb"
    parsed = parse_spec(xla_spec.read_text(), xla_spec)
    again = parse_spec(xla_spec.read_text(), xla_spec)
    assert parsed.message is not None  # parsed, and kept
    assert again == parsed and again.message is None and again.notes == parsed.notes and again.filled
    assert again.proto == parsed.proto
    edited = parse_spec(xla_spec.read_text() + "\n# edited\n", xla_spec)
    assert edited.message is not None  # a new text: parsed, not read back


@pytest.mark.golden
def test_name_hints_for_an_unknown_spec_name():
    """Up to three names that extend the word, else close matches, else every name (the hint's
    golden test)."""
    names = gpu_specs.shipped_names()
    assert gpu_specs._name_hint("h100", names) == "did you mean 'h100_pcie', 'h100_sxm'?"
    assert gpu_specs._name_hint("H100", names) == "did you mean 'h100_pcie', 'h100_sxm'?"
    assert gpu_specs._name_hint("a100", names) == "did you mean 'a100_pcie_80', 'a100_sxm_40', 'a100_sxm_80'?"
    every = "known specs: " + ", ".join(names)
    assert gpu_specs._name_hint("a", names) == every  # four extend it: too many to offer
    assert gpu_specs._name_hint("zzz", names) == every
    assert gpu_specs._name_hint("", names) == every
    assert gpu_specs._name_hint("zzz", []) is None
    assert gpu_specs._name_hint("h10_sxm", names) == did_you_mean("h10_sxm", names)
    assert gpu_specs._name_hint("v", names) == "did you mean 'v100'?"  # one extends it; no close match


@pytest.mark.parametrize("arg, is_path", [
    ("a/b", True), (os.path.join("a", "b"), True), ("x.txtpb", True), (".x", True), ("~x", True),
    ("h100", False), ("-", False), ("x.txt", False), ("x.txtpbz", False),
])
def test_what_looks_like_a_spec_path(arg, is_path):
    """A separator, the .txtpb suffix or a leading '.' or '~' makes an argument a path."""
    assert gpu_specs._looks_like_path(arg) is is_path


@pytest.mark.parametrize("data, line, col", [
    (b"\xff", 1, 1), (b"# x\nab\xffc\n", 2, 3), (b"a\nb\n\n  \xc3(", 4, 3),
])
def test_spec_that_is_not_utf8_names_the_first_bad_byte(tmp_path, data, line, col):
    """A spec file that is not UTF-8 is an error at the line and column of its first bad byte."""
    bad = tmp_path / "bad.txtpb"
    bad.write_bytes(data)
    with pytest.raises(SpecError) as info:
        load_spec(bad)
    assert (info.value.message, info.value.file, info.value.line, info.value.col) == (
        "spec is not UTF-8 text", str(bad), line, col)


def test_spec_path_that_is_a_directory_or_unreadable(tmp_path):
    """A directory and an unreadable file are errors naming the path, not crashes."""
    with pytest.raises(SpecError) as info:
        load_spec(tmp_path)
    assert info.value.file == str(tmp_path)
    assert_mentions(info.value.message, "directory")
    assert_mentions(info.value.hint, ".txtpb")
    long_name = tmp_path / ("x" * 300 + ".txtpb")
    with pytest.raises(SpecError) as info:
        load_spec(long_name)
    assert info.value.file == str(long_name)
    assert_mentions(info.value.message, "File name too long")
    with pytest.raises(SpecError) as info:
        load_spec("a\0b.txtpb")
    assert_mentions(info.value.hint, "NUL")


@pytest.mark.golden
@pytest.mark.parametrize("arg, message, hint", [
    ("{tmp}", "is a directory", "expected a .txtpb spec file"),
    ("{tmp}/" + "x" * 300 + ".txtpb", "cannot read: File name too long", None),
    ("a\0b.txtpb", "no such file", "the path holds a NUL character"),
    ("{tmp}/nope.txtpb", "no such file", None),
    ("{tmp}/latin1.txtpb", "spec is not UTF-8 text", None),
    ("{tmp}/empty.txtpb", "spec is empty (expected a GpuTargetConfigProto in text format)",
     "see the shipped specs in {spec_dir}"),
    ("{tmp}/deep.txtpb", "spec nested too deeply", None),
    ("h100_sx", "unknown GPU spec 'h100_sx'", "did you mean 'h100_sxm'?"),
    ("h100_sxm.txt", "unknown GPU spec 'h100_sxm.txt'", "did you mean 'h100_sxm', 'a100_sxm_80', 'a100_sxm_40'?"),
], ids=["directory", "unreadable", "nul", "missing", "not-utf8", "empty", "too-deep", "unknown-name",
        "unknown-name-like-a-file"])
def test_spec_file_refusals_exactly(tmp_path, arg, message, hint):
    """resolve_spec's words for a spec it cannot read or find, by path or name."""
    (tmp_path / "latin1.txtpb").write_bytes(b"# caf\xe9\n")
    (tmp_path / "empty.txtpb").write_text("# nothing\n")
    (tmp_path / "deep.txtpb").write_text("gpu_device_info {" * 3000)
    with pytest.raises(SpecError) as info:
        resolve_spec(arg.format(tmp=tmp_path))
    assert (info.value.message, info.value.hint) == (
        message, hint and hint.format(spec_dir=SPEC_DIR))


def test_spec_from_stdin(monkeypatch):
    """'-' reads the spec from standard input ('specs check -')."""
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(VALID.encode())))
    spec = load_spec("-")
    assert (spec.name, spec.gpu, spec.path) == ("-", "Test GPU", Path("-"))


def test_resolve_spec_tilde_and_relative_paths(tmp_path, monkeypatch):
    """'~' is the home folder; an existing path named like a shipped spec is that file."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "t4.txtpb").write_text(VALID)
    spec = resolve_spec("~/t4.txtpb")
    assert (spec.path, spec.gpu, spec.notes) == (tmp_path / "t4.txtpb", "Test GPU", ())
    monkeypatch.chdir(tmp_path)
    assert resolve_spec("./t4.txtpb").gpu == "Test GPU"
    assert resolve_spec("t4.txtpb").gpu == "Test GPU"
    with pytest.raises(SpecError) as info:
        resolve_spec("./nope.txtpb")
    assert (info.value.message, info.value.file) == ("no such file", "nope.txtpb")
    with pytest.raises(SpecError) as info:
        resolve_spec("h100_sxm.txt")
    assert_mentions(info.value.message, "'h100_sxm.txt'")
    for missing in ("/nowhere/h100_sxm.txt", "/nowhere/mygpu.txtpb"):  # not a shipped spec's file name
        with pytest.raises(SpecError) as info:
            resolve_spec(missing)
        assert (info.value.message, info.value.file) == ("no such file", missing)


def test_check_spec_names_the_ptxas_found_when_none_can_target_its_sm(tmp_path, monkeypatch):
    """check_spec: with no ptxas for the spec's sm the error lists each ptxas found and what it
    targets, at cuda_compute_capability; with none at all it says how to get one."""
    from mlirhlo_driver.cuda import tools as cuda_tools

    spec_file = tmp_path / "t.txtpb"
    spec_file.write_text(VALID)
    old = cuda_tools.Ptxas("/a/ptxas", (11, 8, 89), ("sm_50", "sm_75"), "PATH")
    other = cuda_tools.Ptxas("/b/ptxas", (12, 0, 1), (), "PATH")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [old, other])
    with pytest.raises(SpecError) as info:
        check_spec(spec_file)
    e = info.value
    assert (e.file, e.line, e.col) == (str(spec_file), 3, 3)
    assert_mentions(e.message, "sm_80", "8.0", "ptxas 11.8.89", "sm_50..sm_75", "ptxas 12.0.1", "nothing")
    assert_mentions(e.hint, "--xla_gpu_cuda_data_dir", "sm_80")
    can = cuda_tools.Ptxas("/c/ptxas", (12, 9, 86), ("sm_50", "sm_80"), "PATH")
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [old, can])
    assert check_spec(spec_file).sm == "sm_80"
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [])
    for text, where in ((VALID, (3, 3)), (VALID.replace("dnn_version_info { major: 9 minor: 8 patch: 0 }\n", ""), (3, 3)),
                        (VALID.replace("  threads_per_warp: 32\n", ""), (3, 3))):
        spec_file.write_text(text)
        with pytest.raises(SpecError) as info:
            check_spec(spec_file)
        e = info.value
        assert (e.line, e.col) == where
        assert_mentions(e.message, "no ptxas", "sm_80")
        assert e.hint == cuda_tools.fix_hint()


@pytest.mark.golden
@pytest.mark.parametrize("found, message, hint", [
    ([("/a/ptxas", (11, 8, 89), ("sm_50", "sm_75")), ("/b/ptxas", (12, 0, 1), ())],
     "no ptxas here can target sm_80 (compute capability 8.0): ptxas 11.8.89 targets sm_50..sm_75; "
     "ptxas 12.0.1 targets nothing", "pass --xla_gpu_cuda_data_dir=DIR for a CUDA toolkit whose ptxas targets sm_80"),
    ([], "no ptxas here to assemble sm_80 (XLA runs ptxas even device-less)", None),
], ids=["none-can", "none-found"])
def test_check_spec_ptxas_refusals_exactly(tmp_path, monkeypatch, found, message, hint):
    """check_spec's words when no ptxas here can assemble the spec's sm (with none found, the
    hint is tools.fix_hint's: its golden test is in tests/cuda/test_tools.py)."""
    from mlirhlo_driver.cuda import tools as cuda_tools

    spec_file = tmp_path / "t.txtpb"
    spec_file.write_text(VALID)
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [
        cuda_tools.Ptxas(path, version, archs, "PATH") for path, version, archs in found])
    with pytest.raises(SpecError) as info:
        check_spec(spec_file)
    assert (info.value.message, info.value.hint) == (message, hint or cuda_tools.fix_hint())


def test_fields_reported_since_0_12_for_every_compute_capability():
    """Blocks per SM as the CUDA guide tables them, for exactly the CCs it lists; 1 KiB of shared
    memory reserved per block from CC 8.0 on, none before."""
    blocks = {(6, 0): 32, (6, 1): 32, (7, 0): 32, (7, 2): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16,
              (8, 7): 16, (8, 9): 24, (9, 0): 32, (10, 0): 32, (10, 3): 32, (12, 0): 32}
    for major in range(0, 14):
        for minor in range(0, 10):
            want = {"reserved_shared_memory_per_block": 1024} if major >= 8 else {}
            if (major, minor) in blocks:
                want["max_blocks_per_multiprocessor"] = blocks[major, minor]
            assert gpu_specs._reported_since_0_12(major, minor) == want, (major, minor)


@pytest.mark.parametrize("old, new, message, line, col", [
    ("gpu_device_info {", "gpu_device_info: 9 #", "field 'gpu_device_info' expects a message: gpu_device_info { ... }",
     2, 18),
    ("core_count: 108", "core_count: 1e", "field 'core_count' expects an integer, got 1e", 8, 15),
    ("core_count: 108", "core_count: 108 data_caches { x: @ }",
     'message type "stream_executor.GpuDeviceInfoProto" has no field named "data_caches"', 8, 19),
    ("core_count: 108", "core_count: 108 data_caches { x: 1", None, 2, 17),
    ('device_description_str: "Test GPU"', "device_description_str {",
     "field 'device_description_str' takes a value (device_description_str: ...), not a message", 18, 24),
    ("gpu_device_info {\n", "gpu_device_info: <\n", None, 2, 18),
    ("core_count: 108", "core_count{ }", "field 'core_count' takes a value (core_count: ...), not a message", 8, 13),
])
@pytest.mark.golden
def test_type_and_syntax_errors_exactly(old, new, message, line, col):
    """protobuf's type errors reworded after the field; a bad value inside a field this schema
    lacks is reported at that field's name, or at the '{' its '}' left open. The family's
    golden table."""
    if new == "gpu_device_info: <\n":  # named after the field, not the ':'; its '}' is gone
        err = _spec_error(VALID.replace(old, new).replace("}\nplatform_name", "platform_name"))
        message = "'<' of 'gpu_device_info' is never closed (expected '>' before end of file)"
    else:
        err = _spec_error(VALID.replace(old, new))
    if message is None:  # data_caches takes gpu_device_info's '}'
        message = "'{' of 'gpu_device_info' is never closed (expected '}' before end of file)"
    assert (err.message, err.line, err.col) == (message, line, col)


@pytest.mark.parametrize("text, where, line, col, offered", [
    (VALID.replace("  core_count: 108\n", "  core_count: 108\n  data_cache { }\n"),
     ("'data_cache'", "'gpu_device_info'"), 9, 3, ("'data_caches'",)),
    (VALID.replace("  core_count: 108\n", "  core_count: 108\n  dnn_version_info { major: 9 }\n"),
     ("'dnn_version_info'", "'gpu_device_info'"), 9, 3, ("'dnn_version'", "'driver_version'")),
    (VALID + "data_caches { }\n", ("'data_caches'", "GpuTargetConfigProto"), 19, 1, None),
], ids=["data_cache-misspelt", "dnn_version_info-inside", "data_caches-at-the-top"])
def test_fields_from_a_newer_xla_are_tolerated_only_where_xla_has_them(text, where, line, col, offered):
    """data_caches is tolerated in gpu_device_info only, the moved dnn_version_info at the top
    level only; a misspelling of a newer field is offered that field. (The words: the
    unknown-field rows of test_validation_errors_exactly.)"""
    err = _spec_error(text)
    assert (err.line, err.col) == (line, col)
    assert_mentions(err.message, "unknown field", *where)
    if offered is None:
        assert err.hint is None
    else:
        assert_mentions(err.hint, *offered)
