"""libtpu's per-compile options (``xla_tpu_*``, ``xla_jf_*``) as ``--xla_*`` flags for
``--platform tpu``: on the command line, in XLA_FLAGS and in a ``--debug-options-file``,
checked by name against the list libtpu dumps (tpu.options) and applied per compile.
They need libtpu and are skipped without it."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import DATA, REPO, assert_mentions, assert_one_line_error
from tests.e2e.conftest import MLIRHLO
from tests.tpu.conftest import needs_libtpu

pytestmark = [pytest.mark.xdist_group("tpu"), needs_libtpu]

TPU = DATA / "tpu"
MATMUL = TPU / "matmul_tanh.mlir"
BIG = TPU / "matmul_2048.mlir"  # 48 MiB of temporaries on one v5e chip


@pytest.mark.slow
def test_an_hbm_cap_changes_the_verdict_and_refuses_what_does_not_fit(cli):
    fits = cli("opt", BIG, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "memory",
               "--xla_tpu_max_hbm_size_mib=60")
    assert fits.code == 0, fits.err
    assert_mentions(fits.out, "60.00 MiB", "--xla_tpu_max_hbm_size_mib=60", "fits")
    r = cli("opt", BIG, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "memory",
            "--xla_tpu_max_hbm_size_mib=40")
    line = assert_one_line_error(r, code=1, at=str(BIG))
    assert_mentions(line, "does not fit", "(48.00M)", "(40.00M)")


@pytest.mark.golden
def test_an_unknown_tpu_flag_is_one_line_with_close_names(cli):
    r = cli("opt", MATMUL, "--platform", "tpu", "--stage", "memory", "--xla_tpu_max_hbm_size_mb=40")
    # the closest name first; the others are libtpu's version's
    assert r.err.startswith("error: unknown XLA flag '--xla_tpu_max_hbm_size_mb' (did you mean "
                            "'xla_tpu_max_hbm_size_mib', "), r.err
    assert len(r.err.splitlines()) == 1
    assert r.code == 2
    r = cli("opt", MATMUL, "--platform", "tpu", "--stage", "memory", "--xla_tpu_nonsense")
    assert_mentions(assert_one_line_error(r), "unknown XLA flag '--xla_tpu_nonsense'")


@pytest.mark.golden
def test_a_process_wide_libtpu_flag_points_to_libtpu_init_args(cli):
    r = cli("opt", MATMUL, "--platform", "tpu", "--stage", "memory", "--xla_jf_dump_to=/tmp/x")
    assert r.err == ("error: --xla_jf_dump_to: libtpu reads it once, as it loads, not per compile "
                     "(give it in LIBTPU_INIT_ARGS: LIBTPU_INIT_ARGS='--xla_jf_dump_to=VALUE')\n")
    assert r.code == 2


@pytest.mark.golden
def test_a_tpu_flag_for_another_platform_says_which(cli):
    r = cli("opt", MATMUL, "--platform", "cpu", "--stage", "hlo", "--xla_tpu_max_hbm_size_mib=40")
    assert r.err == ("error: --xla_tpu_max_hbm_size_mib is libtpu's option, for --platform tpu "
                     "(--platform cpu has no such DebugOptions field)\n")
    assert r.code == 2


def test_values_are_checked_by_kind_here_and_by_libtpu(cli):
    r = cli("opt", MATMUL, "--platform", "tpu", "--stage", "memory", "--xla_tpu_enable_minor_all_gather=maybe")
    assert_mentions(assert_one_line_error(r, at="--xla_tpu_enable_minor_all_gather=maybe"), "true or false")
    r = cli("opt", MATMUL, "--platform", "tpu", "--stage", "memory", "--xla_tpu_max_hbm_size_mib=lots")
    assert_mentions(assert_one_line_error(r), "an integer")
    r = cli("opt", MATMUL, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "hlo",
            "--xla_memory_scheduler=bogus")
    assert_mentions(assert_one_line_error(r, at=str(MATMUL)), "--xla_memory_scheduler=bogus",
                    "libtpu cannot parse", "brkga")


def test_a_debug_options_file_takes_them_at_their_line(cli, tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("xla_tpu_max_hbm_size_mib: 60\n")
    r = cli("opt", BIG, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "memory",
            "--debug-options-file", good)
    assert r.code == 0, r.err
    assert_mentions(r.out, "--xla_tpu_max_hbm_size_mib=60")
    bad = tmp_path / "bad.txt"
    bad.write_text("# caps\nxla_tpu_max_hbm_sze_mib: 60\n")
    r = cli("opt", MATMUL, "--platform", "tpu", "--stage", "memory", "--debug-options-file", bad)
    assert_mentions(assert_one_line_error(r, at=f"{bad}:2:1"), "xla_tpu_max_hbm_size_mib")


def _fresh(*args: str, xla_flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env["XLA_FLAGS"] = xla_flags
    return subprocess.run(MLIRHLO + list(args), capture_output=True, text=True, cwd=str(REPO), env=env,
                          timeout=300)


@pytest.mark.slow
def test_a_tpu_flag_in_xla_flags_is_applied_and_never_ends_the_process():
    # XLA ends a process that parses XLA_FLAGS holding a name its DebugOptions lack ("Unknown
    # flag in XLA_FLAGS"); HLO text is parsed by XLA in the driver's own processes.
    hlo = str(DATA / "spmd" / "matmul.hlo")
    r = _fresh("opt", hlo, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--stage", "memory",
               xla_flags="--xla_tpu_max_hbm_size_mib=1")
    assert r.returncode == 0, r.stderr
    assert_mentions(r.stdout, "1.00 MiB", "--xla_tpu_max_hbm_size_mib=1")
    r = _fresh("opt", hlo, "--platform", "tpu", "--stage", "memory", xla_flags="--xla_tpu_nonsense=1")
    assert r.returncode == 2 and r.stderr.startswith("error: unknown XLA flag '--xla_tpu_nonsense'"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.slow
def test_diff_puts_a_tpu_option_beside_the_default(cli):
    r = cli("diff", BIG, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--flags-b", "--xla_tpu_max_hbm_size_mib=60")
    assert r.code == 0, r.err
    assert_mentions(r.out, "generated code", "differences found")
    r = cli("diff", BIG, "--platform", "tpu", "--flags-b", "--xla_tpu_nonsense=1")
    assert_mentions(assert_one_line_error(r), "unknown XLA flag '--xla_tpu_nonsense'")
