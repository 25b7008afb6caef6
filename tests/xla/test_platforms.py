"""Compile targets (xla/platforms.py, through the top-level targets module): the frozen
Target per compile, its platform classes, how a platform, GPU specs, XLA flags and an
autotune file resolve into a command's Targets, and the errors for targets that
contradict themselves.

These call the library directly (targets.resolve is what every command calls); nothing
here compiles.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mlirhlo_driver import targets
from mlirhlo_driver.cuda import specs as gpu_specs
from mlirhlo_driver.errors import PARAMS, DriverError, FlagError
from mlirhlo_driver.stages.base import StageOptions
from tests.conftest import assert_mentions


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


SPEC_DIR = Path(targets.__file__).parent.parent / "gpu_specs"

DEFAULT_NOTE = "no --gpu-spec given: compiling for h100_sxm (NVIDIA H100 80GB HBM3, sm_90a)"


@pytest.fixture(autouse=True)
def _no_xla_flags(monkeypatch):
    """The user's XLA_FLAGS never leak into these targets."""
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(DriverError) as e:
        fn(*args, **kwargs)
    return e.value.format(PARAMS)  # as Python names its parameters


def _spec_missing_a_field(tmp_path) -> Path:
    """A100 spec file without threads_per_warp: it resolves, with a note that it was filled in."""
    text = (SPEC_DIR / "a100_sxm_80.txtpb").read_text()
    assert "  threads_per_warp: 32\n" in text
    path = tmp_path / "a100_no_warp.txtpb"
    path.write_text(text.replace("  threads_per_warp: 32\n", ""))
    return path


def test_a_binary_autotune_file_that_is_not_utf8_is_passed_to_xla_as_binary(tmp_path):
    """Autotune results that are not valid UTF-8 are binary: a .pb is used as it is, and
    any other name (even a text extension) is passed on as a .pb copy of the same bytes."""
    from pathlib import Path

    from mlirhlo_driver import targets

    data = b"\x0a\x03\xff\xfe\x80results"  # a serialized proto: invalid UTF-8, no low control bytes
    binary = tmp_path / "results.pb"
    binary.write_bytes(data)
    assert targets.autotune_file(str(binary)) == str(binary)
    copies = set()
    for name in ("results.pbtxt", "results.textpb", "results.txt"):
        misnamed = tmp_path / name
        misnamed.write_bytes(data)
        used = targets.autotune_file(str(misnamed))
        assert used.endswith(".pb") and used != str(misnamed)
        assert Path(used).read_bytes() == data
        copies.add(used)
    assert len(copies) == 1  # one copy per content, whatever the name


@pytest.mark.parametrize("where", ["cli", "environment", "file"])
def test_a_targets_debug_options_refuse_a_misspelt_name_from_anywhere(where, monkeypatch, tmp_path):
    """targets.debug_options checks every name against this XLA, whichever layer gave it."""
    from mlirhlo_driver import targets
    from mlirhlo_driver.errors import FlagError

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    cli, path = None, None
    if where == "cli":
        cli = {"xla_cpu_enable_fast_mathh": True}
    elif where == "environment":
        monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_mathh=true")
    else:
        path = tmp_path / "debug_options.txt"
        path.write_text("xla_cpu_enable_fast_mathh: true\n")
    with pytest.raises(FlagError, match="xla_cpu_enable_fast_math"):
        targets.debug_options(cli, str(path) if path else None)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert targets.debug_options({"xla_cpu_enable_fast_math": True}) == {"xla_cpu_enable_fast_math": True}
    assert targets.debug_options() == {}


def test_resolve_takes_xlas_platform_spellings_and_no_platform():
    """cpu/Host/CPU are the CPU backend, None asks for no XLA compile; nothing else is set."""
    for name in ("cpu", "CPU", "Host"):
        assert targets.resolve(name) == targets.Targets("cpu", (targets.CpuTarget(),))
    assert targets.resolve(None) == targets.Targets(None)
    assert targets.resolve("CUDA", needs_spec=False) == targets.Targets("cuda")
    assert targets.platform_name("GPU") == "cuda"


@pytest.mark.golden
def test_the_interpreter_platform_is_refused_naming_the_flag():
    """Golden: XLA's interpreter backend is not in jaxlib: the error names the flag it came from."""
    hint = "(use CPU or CUDA; run_hlo_module's reference is the StableHLO interpreter)"
    assert _error(targets.platform_name, "interpreter") == \
        f"error: --platform=interpreter: jaxlib has no XLA interpreter backend {hint}"
    assert _error(targets.platform_name, "interpreter", "reference_platform") == \
        f"error: --reference_platform=interpreter: jaxlib has no XLA interpreter backend {hint}"


@pytest.mark.golden
def test_resolve_refuses_targets_that_contradict_themselves(tmp_path):
    """Golden: each contradiction is its own error, before anything compiles."""
    assert targets.resolve(None, gpu_spec="h100_sxm").platform == "cuda"  # a spec names a CUDA target
    assert _error(targets.resolve, None, cli_flags={"xla_cpu_enable_fast_math": True}) == \
        "error: XLA flags need platform='cpu|cuda|tpu'"
    assert _error(targets.resolve, "cpu", gpu_spec="h100_sxm") == "error: gpu_spec is for platform='cuda'"
    assert _error(targets.resolve, "cpu", cli_flags={targets.TARGET_CONFIG_FLAG: "h100_sxm"}) == \
        "error: --xla_gpu_target_config_filename is for --platform=CUDA"
    assert _error(targets.resolve, "cuda", gpu_spec="v100", cli_flags={targets.TARGET_CONFIG_FLAG: "h100_sxm"}) == \
        "error: give --gpu-spec or --xla_gpu_target_config_filename, not both"
    results = tmp_path / "results.pbtxt"
    results.write_text("version: 3\n")
    assert _error(targets.resolve, "cpu", autotune_results=str(results)) == \
        "error: autotune results are for platform='cuda'"
    with pytest.raises(FlagError):  # every flag's name is checked against this XLA
        targets.resolve("cpu", cli_flags={"xla_no_such_flag_anywhere": 1})


def test_xla_tools_take_flags_without_a_platform_and_autotune_results_on_cpu(tmp_path, monkeypatch):
    """xla_tool: flags need no --platform, XLA_FLAGS is read even without one, and an
    autotune file on CPU is passed on (XLA's tools ignore it there)."""
    t = targets.resolve(None, cli_flags={"xla_cpu_enable_fast_math": True}, xla_tool=True)
    assert t == targets.Targets(None, (), (("xla_cpu_enable_fast_math", True),))
    results = tmp_path / "results.pbtxt"
    results.write_text("version: 3\n")
    t = targets.resolve("cpu", autotune_results=str(results), xla_tool=True)
    assert t.xla_flags == ((targets.AUTOTUNE_FLAG, str(results)),)
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=1")
    assert targets.resolve(None, xla_tool=True).xla_flags == (("xla_backend_optimization_level", 1),)
    assert targets.resolve(None).xla_flags == ()  # XLA_FLAGS set for other tools: not read
    assert targets.resolve("cpu").xla_flags == (("xla_backend_optimization_level", 1),)


def test_flags_are_sorted_and_the_command_line_wins_over_xla_flags(monkeypatch):
    """The target's flags: XLA_FLAGS under the command line's, sorted by name."""
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false --xla_backend_optimization_level=2")
    t = targets.resolve("cpu", cli_flags={"xla_cpu_enable_fast_math": True})
    assert t.xla_flags == (("xla_backend_optimization_level", 2), ("xla_cpu_enable_fast_math", True))


@pytest.mark.golden
def test_a_cuda_target_without_a_spec_gets_the_default_with_a_note():
    """Golden (the default spec's note). A compiling CUDA target without a spec: the default spec, and a note naming the option."""
    t = targets.resolve("cuda")
    assert [s.name for s in t.specs] == [gpu_specs.DEFAULT_SPEC] and t.notes == (DEFAULT_NOTE,)
    t = targets.resolve("cuda", spec_flag="gpu_spec")
    assert t.notes == (DEFAULT_NOTE.replace("--gpu-spec", "gpu_spec"),)


def test_a_spec_list_names_one_spec_per_item_and_blank_items_are_skipped():
    """--gpu-spec a,b: one spec each, in order, spaces and empty items ignored; no note."""
    t = targets.resolve("cuda", gpu_spec=" a100_sxm_80, v100,")
    assert [s.name for s in t.specs] == ["a100_sxm_80", "v100"] and t.notes == ()
    assert [name for name, _ in t.stage_options()] == ["a100_sxm_80", "v100"]


def test_a_listing_checks_a_named_spec_and_keeps_its_notes(tmp_path):
    """needs_spec=False (a listing): no default spec, but a named one is still resolved,
    checked, and its notes (fields filled in) kept for after validation."""
    path = _spec_missing_a_field(tmp_path)
    for needs_spec in (True, False):
        t = targets.resolve("cuda", gpu_spec=f"{path},v100", needs_spec=needs_spec)
        assert [s.sm for s in t.specs] == ["sm_80", "sm_70"]
        assert len(t.notes) == 1 and t.notes[0].startswith(f"{path} lacks threads_per_warp; filled in")
    with pytest.raises(DriverError):
        targets.resolve("cuda", gpu_spec="no_such_gpu", needs_spec=False)
    assert targets.resolve("cuda", gpu_spec=None, needs_spec=False).specs == []


def test_the_target_config_flag_names_the_spec_and_implies_cuda(monkeypatch):
    """--xla_gpu_target_config_filename, on the command line or in XLA_FLAGS, is the spec
    (not an XLA flag passed on); without --platform it means CUDA. A --gpu-spec wins over
    XLA_FLAGS' one."""
    t = targets.resolve(None, cli_flags={targets.TARGET_CONFIG_FLAG: "v100"})
    assert (t.platform, [s.name for s in t.specs], t.xla_flags, t.notes) == ("cuda", ["v100"], (), ())
    monkeypatch.setenv("XLA_FLAGS", f"--{targets.TARGET_CONFIG_FLAG}=a100_sxm_80")
    t = targets.resolve("cuda")
    assert ([s.name for s in t.specs], t.xla_flags, t.notes) == (["a100_sxm_80"], (), ())
    t = targets.resolve("cuda", gpu_spec="v100")
    assert ([s.name for s in t.specs], t.xla_flags) == (["v100"], ())
    t = targets.resolve(None, xla_tool=True)
    assert (t.platform, [s.name for s in t.specs]) == ("cuda", ["a100_sxm_80"])
    assert_mentions(_error(targets.resolve, "cpu"), "--xla_gpu_target_config_filename", "--platform=CUDA")


def test_notes_go_where_the_caller_says(caplog, tmp_path):
    """A command's notes go to the ``say`` its caller gives (a command line: its stderr), by
    default the mlirhlo_driver logger, one record a note; the Targets keep them (a value:
    saying them changes nothing)."""
    path = _spec_missing_a_field(tmp_path)
    t = targets.resolve("cuda", gpu_spec=f"{path}")
    t = targets.Targets(t.platform, t.targets, t.xla_flags, (DEFAULT_NOTE, *t.notes))
    said = []
    t.say_notes(said.append)
    assert said[0] == DEFAULT_NOTE and len(said) == 2 and len(t.notes) == 2
    with caplog.at_level(logging.INFO, logger="mlirhlo_driver"):
        t.say_notes()
    messages = [r.getMessage() for r in caplog.records if r.name == "mlirhlo_driver"]
    assert len(messages) == 2
    assert messages[0] == DEFAULT_NOTE
    assert messages[1].startswith(f"{path} lacks threads_per_warp")


def test_a_target_is_one_frozen_hashable_value_per_compile():
    """A Target is what one compile is for: equal targets (same platform, spec and flags) are
    one value, usable as a key; another flag, spec or platform is another target."""
    a = targets.resolve("cuda", gpu_spec="v100", cli_flags={"xla_gpu_autotune_level": 0}).one()
    b = targets.Target.cuda("v100", xla_flags={"xla_gpu_autotune_level": 0})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert isinstance(a, targets.CudaTarget) and a.spec.name == "v100" and a.label() == "cuda (v100)"
    assert a.with_flag("xla_gpu_autotune_level", 1) != a
    assert a != targets.Target.cuda("a100_sxm_80", xla_flags={"xla_gpu_autotune_level": 0})
    assert targets.CpuTarget() != targets.Targets("cpu") and targets.CpuTarget() == targets.Target.cpu()
    with pytest.raises(AttributeError):
        a.xla_flags = ()  # frozen


def test_target_options_are_those_of_its_one_compile():
    """Targets.options: StageOptions for one compile; no platform or several specs is an error."""
    cpu = targets.resolve("cpu", cli_flags={"xla_cpu_enable_fast_math": True})
    assert cpu.options(debug_info=True) == StageOptions(
        targets.CpuTarget(xla_flags=(("xla_cpu_enable_fast_math", True),)), debug_info=True)
    assert cpu.stage_options() == [(None, StageOptions(cpu.one()))]
    one = targets.resolve("cuda", gpu_spec="v100")
    assert one.options() == StageOptions(one.one()) and one.options().gpu_spec == one.specs[0]
    two = targets.resolve("cuda", gpu_spec="v100,a100_sxm_80")
    with pytest.raises(DriverError) as e:
        two.options()
    assert_mentions(e.value.message, "2 GPU specs")
    assert_mentions(e.value.hint, "Target.cuda(name)")
    assert_mentions(_error(targets.resolve(None).options), "no platform", "cuda or tpu")
    assert [(name, o.gpu_spec.name, o.platform) for name, o in two.stage_options(debug_info=True)] == \
        [("v100", "v100", "cuda"), ("a100_sxm_80", "a100_sxm_80", "cuda")]
    assert all(o.debug_info for _, o in two.stage_options(debug_info=True))
    assert targets.resolve(None).stage_options(debug_info=True) == [(None, StageOptions(debug_info=True))]


def test_options_for_another_platform_use_the_first_spec_or_the_default():
    """options_for: CUDA gets the target's first spec, or the default spec quietly; CPU no spec."""
    cpu = targets.resolve("cpu", cli_flags={"xla_cpu_enable_fast_math": True})
    o = cpu.options_for("cuda")
    assert (o.platform, o.gpu_spec.name, o.xla_flags) == ("cuda", gpu_specs.DEFAULT_SPEC, cpu.xla_flags)
    assert cpu.notes == ()
    two = targets.resolve("cuda", gpu_spec="v100,a100_sxm_80")
    assert two.options_for("cuda").gpu_spec.name == "v100"
    assert two.options_for("cpu") == StageOptions(targets.CpuTarget())


def test_a_python_cuda_target_is_one_spec():
    """Target.cuda refuses a comma list, with a hint to make one Target per spec."""
    with pytest.raises(DriverError) as e:
        targets.Target.cuda("v100,h100_sxm")
    assert_mentions(e.value.message, "'v100,h100_sxm'", "several specs")
    assert_mentions(e.value.hint, "one Target per spec")
    assert targets.Target.cuda("v100").spec.name == "v100"
    assert targets.Target.cpu().platform == "cpu"


@pytest.mark.golden
@pytest.mark.parametrize("make, line", [
    (lambda: targets.resolve("cuda", gpu_spec="v100,a100_sxm_80").options(),
     "error: the target names 2 GPU specs: compile one at a time (Target.cuda(name) per spec)"),
    (lambda: targets.resolve(None).options(), "error: the target has no platform: XLA stages need cpu, cuda or tpu"),
    (lambda: targets.Target.cuda("v100,h100_sxm"),
     "error: gpu_spec 'v100,h100_sxm' names several specs: a Target is one compile target (make one Target per spec)"),
])
def test_target_refusals_exactly(make, line):
    """Golden: a Target asked for one compile's options, or made, with none or several specs."""
    assert _error(make) == line


@pytest.mark.golden
@pytest.mark.parametrize("where, line", [
    ("missing.pbtxt", "error: {p}: no such autotune results file"),
    ("", "error: {p}: no such autotune results file"),  # a directory
    ("file/results.pbtxt", "error: {p}: Not a directory"),
])
def test_autotune_file_refusals_exactly(tmp_path, where, line):
    """Golden: an autotune results file that cannot be read, named, with the OS's reason."""
    (tmp_path / "file").write_text("x")
    path = tmp_path / where if where else tmp_path
    with pytest.raises(FlagError) as e:
        targets.autotune_file(str(path))
    assert e.value.format(PARAMS) == line.format(p=path)


@pytest.mark.parametrize("name", ["results.txt", "results.textproto", "results.prototxt", "results.pbtxt"])
def test_a_text_autotune_file_with_a_text_extension_is_used_as_it_is(tmp_path, name):
    """XLA reads these extensions as text: the file is passed on unchanged, no copy."""
    path = tmp_path / name
    path.write_text("version: 3\nresults {\n}\n")
    assert targets.autotune_file(str(path)) == str(path)


@pytest.mark.parametrize("name", ["results.textpb", "results.pb", "results"])
def test_a_text_autotune_file_with_another_name_is_passed_as_a_pbtxt_copy(tmp_path, name):
    """Text under a name XLA would read as binary: a .pbtxt copy, in the driver's cache folder
    under a name made from its content (a target holds no file)."""
    from mlirhlo_driver import resources

    path = tmp_path / name
    path.write_text("version: 3\n\tresults {\b}\n")  # tabs and backspaces are still text
    used = targets.autotune_file(str(path))
    assert used != str(path) and used.endswith(".pbtxt")
    assert Path(used).parent == resources.cache_dir("autotune")
    assert Path(used).read_bytes() == path.read_bytes()
    path.write_text("version: 3\n")  # another content: another copy, the first one left as it was
    assert targets.autotune_file(str(path)) != used and Path(used).read_text().startswith("version: 3\n\t")


@pytest.mark.parametrize("byte", [b"\x00", b"\x01", b"\x04", b"\x07", b"\xff"])
def test_low_control_bytes_or_invalid_utf8_are_binary(tmp_path, byte):
    """Bytes 0-7 mark a serialized proto even when they decode as UTF-8, as does invalid
    UTF-8: a .pbtxt name gets a .pb copy, and a .pb name is used as it is."""
    data = b"\x08\x03" + byte + b"results"
    path = tmp_path / "results.pbtxt"
    path.write_bytes(data)
    used = targets.autotune_file(str(path))
    assert used.endswith(".pb") and Path(used).read_bytes() == data
    binary = tmp_path / "results.pb"
    binary.write_bytes(data)
    assert targets.autotune_file(str(binary)) == str(binary)


def test_an_unreadable_autotune_file_is_a_flag_error_naming_it(tmp_path):
    """Missing, a directory, or any other OS error: a FlagError naming the file, the OS's
    reason without errno's decoration."""
    for path in (tmp_path / "missing.pbtxt", tmp_path):
        with pytest.raises(FlagError) as e:
            targets.autotune_file(str(path))
        assert e.value.file == str(path)
        assert_mentions(e.value.message, "no such", "autotune results")
    (tmp_path / "file").write_text("x")
    under_a_file = tmp_path / "file" / "results.pbtxt"
    with pytest.raises(FlagError) as e:
        targets.autotune_file(str(under_a_file))
    assert e.value.file == str(under_a_file)
    assert_mentions(e.value.message, "Not a directory")


def test_a_cuda_target_passes_a_copy_of_a_misnamed_autotune_file(tmp_path):
    """resolve: the autotune flag names the copy XLA can read."""
    path = tmp_path / "results.textpb"
    path.write_text("version: 3\n")
    t = targets.resolve("cuda", gpu_spec="v100", autotune_results=str(path))
    (name, used), = t.xla_flags
    assert name == targets.AUTOTUNE_FLAG and used.endswith(".pbtxt") and Path(used).read_text() == "version: 3\n"
