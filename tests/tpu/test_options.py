"""libtpu's per-compile options (tpu.options): their kinds read from a dumped
``tpu_comp_env.txt``, the names of its ``flagfile``; and, with libtpu, the list itself."""

from __future__ import annotations

from mlirhlo_driver.tpu import options
from tests.tpu.conftest import needs_libtpu

# Lines as libtpu 0.0.50.1 dumps them (tpu_comp_env.txt: a text proto).
COMP_ENV = """xla_enable_async_collective_permute: AUTO
xla_tpu_scoped_vmem_limit_sweep_profile_path: ""
xla_tpu_enable_minor_all_gather: true
xla_tpu_max_hbm_size_mib: 0
xla_tpu_experimental_max_padding_gib: 0.125
xla_jf_naive_bundle_packer {
  spec: "false"
}
"""


def test_kinds_come_from_the_dumped_defaults():
    assert options.parse_comp_env(COMP_ENV) == {
        "xla_enable_async_collective_permute": "enum", "xla_tpu_scoped_vmem_limit_sweep_profile_path": "str",
        "xla_tpu_enable_minor_all_gather": "bool", "xla_tpu_max_hbm_size_mib": "int",
        "xla_tpu_experimental_max_padding_gib": "float", "xla_jf_naive_bundle_packer": "spec"}


def test_the_flagfile_gives_every_name():
    text = "--xla_jf_dump_to=\n--xla_tpu_max_hbm_size_mib=0\n--xla_enable_async_all_reduce='false'\n"
    assert options.parse_flagfile(text) == {"xla_jf_dump_to", "xla_tpu_max_hbm_size_mib",
                                             "xla_enable_async_all_reduce"}


@needs_libtpu
def test_libtpu_lists_its_per_compile_options_and_its_process_wide_flags():
    found = options.options()
    assert found is not None
    assert found.per_compile["xla_tpu_max_hbm_size_mib"] == "int"
    assert len(found.per_compile) > 500  # 1,198 with libtpu 0.0.50.1
    assert "xla_jf_dump_to" in found.process_wide and "xla_jf_dump_to" not in found.per_compile


def test_libtpus_names_leave_xla_flags_but_the_driver_still_reads_them(monkeypatch):
    from mlirhlo_driver.xla import flags

    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_hlo_as_text --xla_tpu_max_hbm_size_mib=60 --xla_cpu_use_thunk_runtime=false")
    for name in ("MLIRHLO_USER_XLA_FLAGS", "MLIRHLO_USER_XLA_FLAGS_LEFT"):
        monkeypatch.delenv(name, raising=False)
    flags.shield_environment({"xla_tpu_max_hbm_size_mib"})
    import os

    assert os.environ["XLA_FLAGS"] == "--xla_dump_hlo_as_text --xla_cpu_use_thunk_runtime=false"  # what XLA parses
    assert flags.from_environment()["xla_tpu_max_hbm_size_mib"] == 60
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_hlo_as_text")  # set again by the user: theirs
    assert "xla_tpu_max_hbm_size_mib" not in flags.from_environment()
