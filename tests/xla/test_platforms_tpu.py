"""TPU targets (xla/platforms.py's TpuTarget, through targets.resolve and Target.tpu): the
topology as part of the frozen value and its cache identity, several topologies at once,
the default with a note, and the contradictions refused. Nothing here compiles."""

from __future__ import annotations

import logging

import pytest

from mlirhlo_driver import targets
from mlirhlo_driver.errors import FLAGS, PARAMS, DriverError, NoGpu
from tests.conftest import assert_mentions


@pytest.fixture(autouse=True)
def _no_xla_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def test_target_tpu_is_one_frozen_hashable_value():
    a, b = targets.Target.tpu("v5e:2x2"), targets.Target.tpu("v5litepod-4")
    assert isinstance(a, targets.TpuTarget) and a == b and hash(a) == hash(b)
    assert a.platform == "tpu" and a.label() == "tpu (v5e:2x2)"
    assert a != targets.Target.tpu("v5p:2x2x1")
    assert a.with_flag("xla_dump_hlo_pass_re", ".*") != a


def test_the_topology_is_part_of_the_cache_identity():
    parts = dict(targets.Target.tpu("v6e:2x2").identity_parts())
    assert parts["tpu-topology"] == "v6e:2x2" and "libtpu" in parts


def test_several_topologies_one_target_each_named_for_files():
    found = targets.resolve("tpu", tpu_topology="v5e:2x2,v5p:2x2x1")
    assert [t.topology.name for t in found] == ["v5e:2x2", "v5p:2x2x1"]
    assert [name for name, _ in found.stage_options()] == ["v5e:2x2", "v5p:2x2x1"]
    with pytest.raises(DriverError) as e:
        found.one()
    assert_mentions(e.value.format(PARAMS), "2 TPU topologies", "Target.tpu")


def test_a_topology_alone_names_a_tpu_target():
    assert targets.resolve(None, tpu_topology="v6e-8").platform == "tpu"
    assert targets.resolve("TPU", tpu_topology="v6e-8").targets[0].topology.name == "v6e:2x4"


@pytest.mark.golden
def test_default_topology_note(caplog):
    found = targets.resolve("tpu")
    assert found.notes == ("no --tpu-topology given: compiling for v5e:2x2 (TPU v5e, 2x2 chips)",)
    assert targets.resolve("tpu", needs_spec=False).notes == ()
    with caplog.at_level(logging.INFO, logger="mlirhlo_driver"):
        assert targets.Target.tpu().topology.name == "v5e:2x2"


@pytest.mark.golden
@pytest.mark.parametrize("call, message", [
    (lambda: targets.resolve("cpu", tpu_topology="v5e:2x2"), "error: --tpu-topology is for --platform tpu"),
    (lambda: targets.resolve("tpu", gpu_spec="h100_sxm"),
     "error: --gpu-spec is for --platform cuda; a TPU target takes --tpu-topology"),
    (lambda: targets.Target.tpu("v5e:2x2,v6e:2x2"),
     "error: tpu_topology 'v5e:2x2,v6e:2x2' names several topologies: a Target is one compile target "
     "(make one Target per topology)"),
])
def test_contradictions_are_one_line(call, message):
    with pytest.raises(DriverError) as e:
        call()
    assert e.value.format(FLAGS) == message


def test_a_run_on_tpu_says_none_is_attached():
    with pytest.raises(NoGpu) as e:
        targets.PLATFORMS["tpu"]  # noqa: B018 - the platform is known
        from mlirhlo_driver.xla.platforms import run_target

        run_target("tpu")
    assert_mentions(e.value.format(FLAGS), "no TPU is attached", "--platform tpu")


def test_tpu_compiles_run_in_a_process_of_their_own():
    env = targets.Target.tpu().compile_env()
    assert env["TPU_SKIP_MDS_QUERY"] == "1" and env["ALLOW_MULTIPLE_LIBTPU_LOAD"] == "1"
    assert env["XLA_FLAGS"] == "" and env["TPU_LOG_DIR"] == "disabled"
    assert targets.Target.cpu().compile_env() == {}
