"""tpu/replay.py: a module of a TPU program's XLA dump (what JAX wrote with --xla_dump_to and
--xla_dump_hlo_as_proto) read with the options it was compiled with, and recompiled device-less
to the dump's own optimized HLO."""

from __future__ import annotations

import re
import shutil

import pytest

from mlirhlo_driver.errors import InputError
from mlirhlo_driver.tpu import replay
from tests.conftest import DATA, assert_mentions
from tests.tpu.conftest import needs_libtpu

DUMP = DATA / "tpu" / "jax_dump"
STEM = "module_0000.jit_step.cl_1004524046"
BEFORE = DUMP / f"{STEM}.before_optimizations.txt"
AFTER = DUMP / f"{STEM}.after_optimizations.txt"


def without_metadata(hlo: str) -> str:
    """The optimized HLO up to metadata: each instruction's ``metadata={...}`` and the
    stack-frame tables after the header (FileNames .. StackFrames), which name the dumping
    script's path and lines. The header is compared whole: with the dump's build options
    carried it is the same (num_partitions=4, allow_spmd_sharding_propagation_to_*, frontend
    attributes)."""
    hlo = re.sub(r", metadata=\{[^}]*\}", "", hlo)
    return re.sub(r"\n\nFileNames\n.*?\n\nStackFrames\n(?:[^\n]+\n)*", "\n", hlo, flags=re.S).strip()


def test_the_options_jax_compiled_with_are_read_from_the_dump():
    found = replay.dump_options(str(BEFORE))
    assert found is not None
    assert (found.num_replicas, found.num_partitions, found.device_ids) == (1, 4, (0, 1, 2, 3))
    assert found.partitioner == "shardy" and found.topology == "v5e:2x2"
    # .compile(compiler_options) gave one DebugOptions field and one libtpu option; the dump's own
    # flags (xla_dump_*) and jax's CUDA data dir are not replayed
    assert dict(found.xla_flags) == {"xla_allow_excess_precision": False, "xla_tpu_enable_copy_fusion": False}
    assert dict(found.build_options)["allow_spmd_sharding_propagation_to_parameters"] == (False, False)
    # the same from the module's folder and from the StableHLO JAX compiled
    assert replay.dump_options(str(DUMP / STEM)) == found
    assert replay.dump_options(str(DUMP / STEM / "module.mlir")) == found


def test_a_file_that_is_not_a_dump_has_no_options(tmp_path):
    assert replay.dump_options(str(DATA / "mm_add.mlir")) is None
    assert replay.dump_options(None) is None
    shutil.copy(BEFORE, tmp_path / BEFORE.name)  # written without --xla_dump_hlo_as_proto
    assert replay.dump_options(str(tmp_path / BEFORE.name)) is None


def test_unreadable_compile_options_name_the_file(tmp_path):
    shutil.copytree(DUMP, tmp_path / "d")
    bad = tmp_path / "d" / STEM / "compile_options.pb"
    bad.write_bytes(b"\xff\xff\xff")
    with pytest.raises(InputError) as e:
        replay.dump_options(str(tmp_path / "d" / BEFORE.name))
    assert e.value.file == str(bad)
    assert_mentions(e.value.message, "CompileOptionsProto")


@needs_libtpu
@pytest.mark.slow
def test_the_dump_recompiles_to_its_own_optimized_hlo():
    import mlirhlo_driver as mh

    compiled = mh.compile(str(BEFORE), platform="tpu", cache=False)
    assert without_metadata(compiled.stage("hlo")) == without_metadata(AFTER.read_text())
    assert_mentions(" ".join(compiled.notes), "the dump's options", "4 partitions", "v5e:2x2",
                    "xla_allow_excess_precision=false", "xla_tpu_enable_copy_fusion=false")


@needs_libtpu
@pytest.mark.slow
def test_a_topology_given_wins_over_the_dumps_with_a_note():
    import mlirhlo_driver as mh

    compiled = mh.compile(str(BEFORE), mh.Target.tpu("v5e:4x4"), cache=False)
    hlo = compiled.stage("hlo")
    assert "num_partitions=4" in hlo
    assert_mentions(" ".join(compiled.notes), "v5e:4x4 as asked", "v5e:2x2")


@needs_libtpu
def test_a_slice_too_small_for_the_dumped_assignment_is_an_input_error():
    import mlirhlo_driver as mh

    with pytest.raises(InputError) as e:
        mh.compile(str(BEFORE), mh.Target.tpu("v5e:1x1"), cache=False).stage("hlo")
    assert e.value.file.endswith("compile_options.pb")
    assert_mentions(e.value.message, "4 devices", "v5e:1x1")


def test_a_loaded_dump_module_gives_what_a_run_on_a_chip_compiles_with():
    import mlirhlo_driver as mh

    found = replay.program_options(mh.load(str(BEFORE)))
    assert found is not None and (found.num_partitions, found.num_replicas, found.device_ids) == (4, 1, (0, 1, 2, 3))
    assert ("xla_allow_excess_precision", False) in found.xla_flags
    assert replay.program_options(mh.load(str(DATA / "mm_add.mlir"))) is None
