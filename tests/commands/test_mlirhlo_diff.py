"""commands/mlirhlo.py's diff: which spec each side takes, its flags, and one compile per
side (read back from the stage cache).
"""

from __future__ import annotations

import json

import pytest

# ------------------------------------------------------------------ pure parts, exactly

@pytest.mark.parametrize("platform, gpu_spec, names", [
    ("cpu", None, (None, None)), ("cpu", "", (None, None)), ("cuda", None, (None, None)),
    ("cuda", "h100_sxm", ("h100_sxm", "h100_sxm")), ("cuda", " a100_sxm_80 , h100_sxm ", ("a100_sxm_80", "h100_sxm")),
])
def test_spec_names_give_side_a_the_first_spec_and_side_b_the_last(platform, gpu_spec, names):
    """One spec is both sides' spec; two are A's and B's (blanks stripped); none leaves the default to targets."""
    from mlirhlo_driver.commands.mlirhlo import diff_spec_names as _spec_names

    assert _spec_names(platform, gpu_spec) == names


@pytest.mark.parametrize("platform, gpu_spec, message", [
    ("cpu", "h100_sxm", "gpu_spec is for platform='cuda'"),
    ("cuda", "", "gpu_spec='' names an empty spec"),
    ("cuda", "a100_sxm_80,", "gpu_spec='a100_sxm_80,' names an empty spec"),
    ("cuda", "a,b,c", "gpu_spec='a,b,c' names 3 specs: diff compares two"),
])
def test_spec_names_refuse_a_spec_off_cuda_an_empty_one_and_more_than_two(platform, gpu_spec, message):
    """A GPU spec off CUDA, an empty name and a third spec are DriverErrors naming the parameter."""
    from mlirhlo_driver.commands.mlirhlo import diff_spec_names as _spec_names
    from mlirhlo_driver.errors import DriverError, spell

    with pytest.raises(DriverError) as e:
        _spec_names(platform, gpu_spec)
    assert spell(e.value.message) == message


def test_parse_flags_reads_typed_flags_and_nothing_for_none():
    """No flags string is no flags; a flag's value is typed; a stray word or unknown flag is a FlagError."""
    from mlirhlo_driver.commands.mlirhlo import diff_flags as parse_flags
    from mlirhlo_driver.errors import DriverError

    assert parse_flags(None, "flags_a") == {} and parse_flags("", "flags_a") == {}
    assert parse_flags("--xla_gpu_enable_triton_gemm=false --xla_disable_hlo_passes=algsimp", "flags_b") == {
        "xla_gpu_enable_triton_gemm": False, "xla_disable_hlo_passes": "algsimp"}
    for bad, message in [("xla_gpu_enable_triton_gemm=false", "cannot parse flags_b"),
                         ("--xla_gpu_enable_trition_gemm=false", "unknown XLA flag"),
                         ("--xla_gpu_enable_triton_gemm=maybe", "expected true or false")]:
        with pytest.raises(DriverError, match=message):
            parse_flags(bad, "flags_b")


def test_report_compiles_each_side_once_and_reads_sides_back_from_the_cache(tmp_path, monkeypatch):
    """The same compile on both sides is done once; a side in the stage cache is neither parsed nor
    compiled; without the cache it is computed again."""
    from mlirhlo_driver.commands.mlirhlo import diff as report
    from mlirhlo_driver.inputs import loader
    from mlirhlo_driver.xla import backend

    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(tmp_path / "cache"))
    hlo = tmp_path / "add.hlo"
    hlo.write_text("HloModule add\n\nENTRY main {\n  p = f32[8] parameter(0)\n  ROOT a = f32[8] add(p, p)\n}\n")
    calls = []
    real_parse, real_compile = loader.parse_unit, backend.compile
    monkeypatch.setattr(loader, "parse_unit", lambda u: calls.append("parse") or real_parse(u))
    monkeypatch.setattr(backend, "compile", lambda *a, **k: calls.append("compile") or real_compile(*a, **k))
    first = report(str(hlo), platform="cpu", stage="hlo", as_json=True)
    assert calls == ["parse", "compile"]
    d = json.loads(first)
    assert d["identical"] is True and d["kernels"] is None and d["stage"] == {"name": "hlo", "diff": ""}
    assert d["a"] == d["b"] == {"input": str(hlo), "module": "add", "platform": "cpu", "gpu_spec": None,
                                "xla_flags": {}}
    calls.clear()
    assert report(str(hlo), platform="cpu", stage="hlo", as_json=True) == first and calls == []
    # Side A is the one cached; B, with other flags, is compiled.
    out = report(str(hlo), platform="cpu", stage="hlo", flags_b="--xla_disable_hlo_passes=algsimp")
    assert calls == ["parse", "compile"]
    assert out.startswith(f"A: {hlo} on cpu\nB: {hlo} on cpu --xla_disable_hlo_passes=algsimp\n\n"
                          "fusions and custom calls: 1 on both sides, 0 only in A, 0 only in B, 0 of another kind\n")
    calls.clear()
    out = report(str(hlo), platform="cpu", stage="hlo", cache=False)
    assert calls == ["parse", "compile"]
    assert out.endswith("\nstage hlo: the same, names renumbered\n\nno differences\n")


def test_report_of_a_cuda_side_is_one_compile_with_kernels_and_the_stage_an_alias_names(tmp_path, monkeypatch):
    """A CUDA side: one device-less compile gives the summary, the kernel rows and the stage, named as aliased."""
    from mlirhlo_driver.commands.mlirhlo import diff as report
    from mlirhlo_driver.xla import backend

    hlo = tmp_path / "add.hlo"
    hlo.write_text("HloModule add\n\nENTRY main {\n  p = f32[8] parameter(0)\n  ROOT a = f32[8] add(p, p)\n}\n")
    compiles = []
    real = backend.compile
    monkeypatch.setattr(backend, "compile", lambda *a, **k: compiles.append(1) or real(*a, **k))
    d = json.loads(report(str(hlo), platform="cuda", gpu_spec="h100_sxm", stage="llvm-after-optimizations",
                          as_json=True, cache=False))
    assert len(compiles) == 1
    assert d["a"]["gpu_spec"]["name"] == "h100_sxm" and d["a"]["gpu_spec"]["sm"] == "sm_90a"
    assert (d["kernels"]["count_a"], d["kernels"]["unchanged"]) == (1, 1)
    assert d["stage"] == {"name": "llvm", "diff": ""} and d["identical"] is True


@pytest.mark.parametrize("platform, stage, message", [
    ("cpu", "vhlo", "'vhlo' is binary"),  # the wording: tests/core/test_diff.py's golden test
    ("cuda", "cubin", "'cubin' is binary"),
    ("cuda", "triton-passes", "no such file"),  # several parts, joined into one text
    ("cpu", "hlo", "no such file"),
    ("cpu", None, "no such file"),
])
def test_report_refuses_binary_stages_before_reading_the_input(tmp_path, platform, stage, message):
    """A binary stage is refused before the input is read; a text stage (one joined from parts too) is not."""
    from mlirhlo_driver.commands.mlirhlo import diff as report
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError, match=message):
        report(str(tmp_path / "nope.hlo"), platform=platform, stage=stage)


def test_parse_flags_refuses_a_word_that_is_not_an_xla_flag():
    """Unlike XLA_FLAGS, a flags option with a stray option word (not --xla_*) is a mistake, not ignored."""
    from mlirhlo_driver.commands.mlirhlo import diff_flags as parse_flags
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError, match="flags_b near '--verbose'"):
        parse_flags("--xla_gpu_enable_triton_gemm=false --verbose", "flags_b")
