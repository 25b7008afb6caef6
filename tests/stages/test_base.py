"""What a stage is (stages/base.py): file names, the one output for -o/stdout, lookup
errors naming the choices, deferred outputs, and a request computing what several
stages share once.
"""

from __future__ import annotations

import pytest

from mlirhlo_driver import registry
from mlirhlo_driver.errors import DriverError, StageError
from mlirhlo_driver.stages import base
from mlirhlo_driver.stages.base import Deferred, Registry, Stage, StageOptions, StageRequest
from tests.conftest import assert_mentions, stage_options


def _stage(name: str, level: str = base.MLIR, **kw) -> Stage:
    kw.setdefault("ext", name)
    return Stage(name=name, level=level, binary=False, description=f"the {name} stage",
                 produce=kw.pop("produce", lambda req: f"{name} of {req.module_name}"), **kw)


def _toy_registry() -> Registry:
    """mlir-a, mlir-b (MLIR level), x (XLA, both platforms), x-alias (alias of x),
    gpu-only (XLA, cuda only), in that order."""
    reg = Registry()
    reg.add(_stage("mlir-a"))
    reg.add(_stage("mlir-b"))
    reg.add(_stage("x", base.XLA))
    reg.add(_stage("x-alias", base.XLA, ext="x", alias_of="x"))
    reg.add(_stage("gpu-only", base.XLA, platforms=frozenset({"cuda"})))
    return reg


def _names(stages) -> list[str]:
    return [s.name for s in stages]


class _Upper(Deferred):
    """Finishes by upper-casing; 'bad' fails with a DriverError; records each group."""

    groups: list[list[str]] = []

    def __init__(self, text: str) -> None:
        self.text = text

    @classmethod
    def finish_all(cls, items):
        cls.groups.append([i.text for i in items])
        return [DriverError(f"cannot finish {i.text}") if i.text == "bad" else i.text.upper() for i in items]


def _request(reg: Registry, platform: str | None = None, **kw) -> StageRequest:
    return StageRequest(object(), "m", stage_options(platform=platform), reg, **kw)


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def test_stage_options_and_stage_defaults():
    """Options default to no platform, no locations, constants left to the check files;
    a stage defaults to both platforms, one file, not an alias, no join."""
    opts = StageOptions()
    assert (opts.platform, opts.gpu_spec, opts.xla_flags, opts.target_version,
            opts.debug_info, opts.fold_constants) == (None, None, (), None, False, False)
    s = _stage("s")
    assert (s.platforms, s.alias_of, s.multi, s.join) == (frozenset({"cpu", "cuda"}), None, False, None)
    assert base.PLATFORMS == ("cpu", "cuda") and (base.MLIR, base.XLA) == ("mlir", "xla")


def test_stage_file_names_one_and_per_part():
    """``<module>.<ext>`` for one output, ``<module>.<part>.<ext>`` per part of a multi-file one."""
    s = _stage("cubin", ext="cubin")
    assert s.filename("m") == "m.cubin"
    assert s.filename("m", "k0") == "m.k0.cubin"
    assert s.files("m", b"data") == [("m.cubin", b"data")]
    assert s.files("m", "text") == [("m.cubin", "text")]
    assert s.files("m", {"k0": b"a", "k1": b"b"}) == [("m.k0.cubin", b"a"), ("m.k1.cubin", b"b")]
    assert s.files("m", {}) == []


def test_single_output_of_one_file_stages_and_one_part():
    """A plain output is itself; a multi-file stage with one part gives that part."""
    s = _stage("cubin", multi=True)
    assert base.single_output(s, "text") == "text"
    assert base.single_output(s, b"bytes") == b"bytes"
    assert base.single_output(s, {"only": b"one"}) == b"one"


def test_single_output_joins_sections_of_a_join_stage():
    """A join stage's parts become one text, each after its ``<join> ----- <part> -----`` line."""
    s = _stage("triton-passes", multi=True, join="//")
    out = base.single_output(s, {"f1": b"log one\n", "f2": "log two"})
    assert out == "// ----- f1 -----\nlog one\n// ----- f2 -----\nlog two\n"
    assert base.single_output(s, {}) == ""
    assert base.single_output(s, {"only": b"x"}) == "// ----- only -----\nx\n"


def test_join_sections_ends_each_text_with_one_newline():
    """Each text is followed by a newline unless it ends with one already."""
    assert base.join_sections("#", [("a", "x\n"), ("b", "y"), ("c", "")]) == (
        "# ----- a -----\nx\n# ----- b -----\ny\n# ----- c -----\n\n")
    assert base.join_sections("#", []) == ""


def test_single_output_without_parts_says_nothing_to_give():
    """A multi-file stage whose compile made no kernels is a StageError, not an empty output."""
    with pytest.raises(StageError) as e:
        base.single_output(_stage("cubin", multi=True), {})
    assert_mentions(e.value.format(), "'cubin'", "no kernels")


@pytest.mark.golden
@pytest.mark.parametrize("parts, line", [
    ([], "error: stage 'cubin' has nothing to give: the compile made no kernels (XLA ran every op without one)"),
    (["a", "b"], "error: stage 'cubin' gives 2 files (one per kernel module): use --dump-dir "
                 "(<module>.a.cubin, <module>.b.cubin)"),
])
def test_single_output_refusals_exactly(parts, line):
    """Golden: a multi-file stage asked for one output, with none or several parts."""
    with pytest.raises(StageError) as e:
        base.single_output(_stage("cubin", multi=True), {p: b"x" for p in parts})
    assert e.value.format() == line


@pytest.mark.parametrize("parts, hint", [
    (["a", "b"], "<module>.a.cubin, <module>.b.cubin"),
    (["a", "b", "c"], "<module>.a.cubin, <module>.b.cubin, <module>.c.cubin"),
    (["a", "b", "c", "d"], "<module>.a.cubin, <module>.b.cubin, <module>.c.cubin, ..."),
    (["a", "b", "c", "d", "e"], "<module>.a.cubin, <module>.b.cubin, <module>.c.cubin, ..."),
])
def test_single_output_of_several_parts_points_at_dump_dir(parts, hint):
    """Several parts: a StageError counting them, naming at most three files, '...' past three."""
    s = _stage("cubin", multi=True)
    with pytest.raises(StageError) as e:
        base.single_output(s, {p: b"x" for p in parts})
    assert_mentions(e.value.message, "'cubin'", f"{len(parts)} files", "--dump-dir")
    assert e.value.hint == hint


def test_deferred_defaults_and_finish():
    """A deferred output holds nothing by default, groups of 16, and finishes alone with one
    finish_all call; a DriverError it failed with is raised."""
    assert Deferred.group_size == 16
    _Upper.groups = []
    d = _Upper("abc")
    assert d.size == 0
    assert d.finish() == "ABC"
    assert _Upper.groups == [["abc"]]
    with pytest.raises(DriverError, match="cannot finish bad"):
        _Upper("bad").finish()


def test_registry_refuses_a_name_twice_and_keeps_order():
    """Stages come back in the order added; adding a name again is a ValueError."""
    reg = _toy_registry()
    s = _stage("new")
    assert reg.add(s) is s
    assert list(reg.stages) == ["mlir-a", "mlir-b", "x", "x-alias", "gpu-only", "new"]
    with pytest.raises(ValueError, match="'x' registered twice"):
        reg.add(_stage("x"))


def test_registry_available_and_all_for_by_platform():
    """Without a platform only MLIR-level stages; with one, the XLA stages it has too;
    'all' leaves aliases out."""
    reg = _toy_registry()
    assert _names(reg.available(None)) == ["mlir-a", "mlir-b"]
    assert _names(reg.available("cpu")) == ["mlir-a", "mlir-b", "x", "x-alias"]
    assert _names(reg.available("cuda")) == ["mlir-a", "mlir-b", "x", "x-alias", "gpu-only"]
    assert _names(reg.all_for(None)) == ["mlir-a", "mlir-b"]
    assert _names(reg.all_for("cpu")) == ["mlir-a", "mlir-b", "x"]
    assert _names(reg.all_for("cuda")) == ["mlir-a", "mlir-b", "x", "gpu-only"]


def test_registry_get_finds_stages_each_platform_has():
    """MLIR-level stages for any platform or none; XLA stages for the platforms they list."""
    reg = _toy_registry()
    for platform in (None, "cpu", "cuda"):
        assert reg.get("mlir-b", platform).name == "mlir-b"
    assert reg.get("x", "cpu").name == "x" and reg.get("x", "cuda").name == "x"
    assert reg.get("x-alias", "cpu").alias_of == "x"
    assert reg.get("gpu-only", "cuda").name == "gpu-only"


@pytest.mark.golden
def test_registry_get_errors_name_the_choices(monkeypatch):
    """Golden: an unknown name suggests close ones or lists the available; an XLA stage without a
    platform asks for one; one the platform lacks lists that platform's stages."""
    monkeypatch.delenv("MLIRHLO_DRIVER_ERRORS_NAME_FLAGS", raising=False)
    reg = _toy_registry()

    def error(name, platform):
        with pytest.raises(StageError) as e:
            reg.get(name, platform)
        return e.value.format("params")

    assert error("mlir-c", None) == "error: unknown stage 'mlir-c' (did you mean 'mlir-b', 'mlir-a'?)"
    assert error("zzz", None) == "error: unknown stage 'zzz' (stages: mlir-a, mlir-b)"
    assert error("zzz", "cpu") == "error: unknown stage 'zzz' (stages: mlir-a, mlir-b, x, x-alias)"
    assert error("x", None) == "error: stage 'x' is produced by XLA: give platform='cpu|cuda'"
    assert error("gpu-only", None) == "error: stage 'gpu-only' is produced by XLA: give platform='cuda'"
    assert error("gpu-only", "cpu") == ("error: stage 'gpu-only' does not exist for platform='cpu' "
                                        "(cpu stages: mlir-a, mlir-b, x, x-alias)")


def test_stage_request_defaults_and_expect():
    """A request starts with no stages, offset 0, not deferring, no notes; expect adds names
    once, in order."""
    req = _request(_toy_registry())
    assert (req.stages, req.source, req.line_offset, req.defer, req.notes) == ((), None, 0, False, [])
    req.expect(["x", "mlir-a"])
    req.expect(("mlir-a", "gpu-only", "x"))
    assert req.stages == ("x", "mlir-a", "gpu-only")


def test_stage_request_derived_computes_once_per_key():
    """``derived`` runs ``compute`` once per key and request, and gives its value each time."""
    req = _request(_toy_registry())
    calls = []

    def compute(r):
        calls.append(r)
        return len(calls)

    assert req.derived("k", compute) == 1
    assert req.derived("k", compute) == 1
    assert req.derived("other", compute) == 2
    assert calls == [req, req]
    assert _request(_toy_registry()).derived("k", compute) == 3


def test_stage_request_produce_finishes_deferred_unless_asked_to_defer():
    """produce() finishes a Deferred at once, unless the request defers (a batch finishes it)."""
    reg = _toy_registry()
    reg.add(_stage("late", produce=lambda req: _Upper(req.module_name)))
    assert _request(reg).produce("mlir-a") == "mlir-a of m"
    assert _request(reg, "cpu").produce("x") == "x of m"
    assert _request(reg).produce("late") == "M"
    deferred = _request(reg, defer=True).produce("late")
    assert isinstance(deferred, _Upper) and deferred.text == "m"
    assert _request(reg, defer=True).produce("mlir-b") == "mlir-b of m"
    with pytest.raises(StageError, match="produced by XLA"):
        _request(reg).produce("x")


def test_one_output_of_a_many_part_stage():
    """-o or stdout takes one output: a joined stage's parts as sections (triton-passes'
    logs), a lone part as it is, and otherwise one clean error."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.stages.base import single_output

    joined, per_module = registry.get("triton-passes", "cuda"), registry.get("cubin", "cuda")
    assert joined.join == "//" and per_module.join is None
    assert single_output(joined, {"fusion_a": "a\n", "fusion_b": b"b"}) == \
        "// ----- fusion_a -----\na\n// ----- fusion_b -----\nb\n"
    assert single_output(joined, {"fusion_a": "a\n"}) == "// ----- fusion_a -----\na\n"
    assert single_output(per_module, {"m": b"\x7fELF"}) == b"\x7fELF"
    assert single_output(per_module, b"\x7fELF") == b"\x7fELF"
    with pytest.raises(StageError, match="gives 2 files"):
        single_output(per_module, {"m1": b"1", "m2": b"2"})
    with pytest.raises(StageError, match="has nothing to give"):
        single_output(per_module, {})


def test_a_registry_keeps_stages_in_the_order_added_and_each_name_once():
    """What a user's add_stages(stages) relies on: add returns the stage it registered, a
    second stage of a name is refused, and each platform sees its own stages in order."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.stages.base import MLIR, XLA, Registry, Stage

    reg = Registry()
    text = reg.add(Stage("text", "txt", MLIR, False, "the module", lambda req: ""))
    assert reg.add(Stage("gpu-only", "g", XLA, False, "cuda", lambda req: "", frozenset({"cuda"}))) \
        is reg.stages["gpu-only"]
    assert text is reg.stages["text"]
    with pytest.raises(ValueError, match="'text' registered twice"):
        reg.add(Stage("text", "t2", MLIR, False, "again", lambda req: ""))
    assert [s.name for s in reg.available(None)] == ["text"]
    assert [s.name for s in reg.available("cuda")] == ["text", "gpu-only"]
    assert [s.name for s in reg.available("cpu")] == ["text"]
    with pytest.raises(StageError) as e:
        reg.get("gpu-only", "cpu")
    assert_mentions(str(e.value), "'gpu-only'", "platform='cpu'")
