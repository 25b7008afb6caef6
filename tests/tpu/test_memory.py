"""Per-device memory against HBM (tpu/memory.py), from a compile's memory figures, and
libtpu's out-of-memory refusal as one line with XLA's numbers. Nothing here compiles."""

from __future__ import annotations

import pytest

from mlirhlo_driver import targets
from mlirhlo_driver.errors import CompileError
from mlirhlo_driver.tpu import memory
from tests.conftest import assert_mentions

STATS = {"argument_size_in_bytes": 655_360, "output_size_in_bytes": 262_144, "alias_size_in_bytes": 0,
         "temp_size_in_bytes": 1024, "generated_code_size_in_bytes": 55_808}


def _target(name):
    return targets.resolve("tpu", tpu_topology=name).targets[0]


def test_peak_adds_what_a_device_holds_at_once():
    assert memory.peak_bytes(STATS) == 655_360 + 262_144 + 1024 + 55_808
    assert memory.peak_bytes({**STATS, "alias_size_in_bytes": 262_144}) == 655_360 + 1024 + 55_808


def test_a_small_program_fits():
    text = memory.report(STATS, _target("v5e:2x2"))
    assert "verdict:" in text and "fits" in text and "does not fit" not in text
    assert_mentions(text, "v5e:2x2", "https://cloud.google.com/tpu/docs/v5e", "17,179,869,184")


def test_a_program_over_hbm_does_not_fit():
    big = {**STATS, "argument_size_in_bytes": 20 << 30}
    fits, peak, capacity = memory.verdict(big, _target("v5e:1x1"))
    assert fits is False and peak > capacity
    assert "does not fit" in memory.report(big, _target("v5e:1x1"))
    # The same program on a v5p chip (95 GiB) fits.
    assert memory.verdict(big, _target("v5p:2x2x1"))[0] is True


def test_hbm_per_device_where_a_chip_is_two_devices():
    per_device, source = memory.capacity_bytes(_target("tpu7x:2x2x1"))
    assert per_device == (192 << 30) // 2
    assert "2 devices per chip" in source


def test_unknown_capacity_is_said_not_guessed():
    text = memory.report(STATS, _target("v3:2x2"))
    assert "unknown" in text and "verdict" not in text


@pytest.mark.golden
def test_out_of_memory_is_one_line_with_xlas_numbers():
    message = ("RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total memory required "
               "for HLO temporaries (32.00G) exceeds available HBM (15.75G). HLO module: m.\n"
               "See https://openxla.org/xla/errors/error_1000 for more details.")
    err = memory.translate_oom(message, _target("v5e:1x1"))
    assert isinstance(err, CompileError)
    assert err.format() == ("error: does not fit on tpu (v5e:1x1): the total memory required for HLO temporaries "
                            "(32.00G) exceeds available HBM (15.75G) (a larger slice (--tpu-topology), with the "
                            "program sharded over it)")
    assert memory.translate_oom("INVALID_ARGUMENT: something else", _target("v5e:1x1")) is None


def test_libtpu_0_0_34s_refusal_is_one_line_with_its_numbers():
    # libtpu 0.0.34 (jax 0.9's pin) refuses a program's arguments and outputs before its
    # temporaries, in words of its own; the rest of its report (the usage breakdown) is left out.
    message = ("RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 16.00G of 15.75G hbm. Exceeded hbm "
               "capacity by 258.00M.\n\nTotal hbm usage >= 16.25G:\n    reserved        258.00M\n    program    "
               "unknown size\n    arguments        16.00G\n\nOutput size 16.00G; shares 0B with arguments.\n")
    err = memory.translate_oom(message, _target("v5e:1x1"))
    assert isinstance(err, CompileError)
    assert err.message == "does not fit on tpu (v5e:1x1): Used 16.00G of 15.75G hbm; exceeded hbm capacity by 258.00M"
