"""cli/common.py: what every front-end shares; here, the refusal of an option a command does
not have (its wording: tests/e2e/test_mlirhlo.py's table of every command)."""

from __future__ import annotations

import pytest

from mlirhlo_driver.cli.common import is_option, no_such_option
from mlirhlo_driver.errors import EXIT_USAGE, DriverError
from tests.conftest import assert_mentions

KNOWN = ["-o", "--output", "--o", "--platform", "--gpu-spec", "--num-partitions", "--num_partitions", "--jobs", "-j",
         "--input-format", "--help"]


@pytest.mark.parametrize("word, closest", [
    ("--platfom", "--platform"),
    ("--platfom=cpu", "--platform"),       # the value is not part of the name
    ("--gpu_spec", "--gpu-spec"),          # dashes and underscores inside a name read alike
    ("-platform", "--platform"),           # one dash or two
    ("--num-partition", "--num-partitions"),
])
def test_the_hint_names_the_closest_option_first_as_it_is_spelled(word, closest):
    import re

    err = no_such_option(word, KNOWN, "mlirhlo x")
    assert isinstance(err, DriverError) and err.exit_code == EXIT_USAGE
    assert err.message.endswith(" " + word.split("=")[0])
    named = re.findall(r"'([^']*)'", err.hint)
    assert named[0] == closest and set(named) <= set(KNOWN), err.hint
    assert "--num_partitions" not in named  # one spelling per option: the first of those that read alike


@pytest.mark.parametrize("word", ["--bogus", "--out-dir", "-x", "--plat-form-name-that-is-long"])
def test_a_word_near_none_of_them_points_at_the_commands_help(word):
    """Compared with their dashes, any two long names look alike (--bogus and --jobs share
    half their letters): no hint names an option that is not close."""
    err = no_such_option(word, KNOWN, "mlirhlo x")
    assert "did you mean" not in err.hint
    assert_mentions(err.format(), word, "'mlirhlo x --help'")


def test_the_commands_own_hint_comes_first():
    err = no_such_option("--platform=cuda", KNOWN, "mlirhlo kernels", hint="kernels compiles for CUDA")
    assert err.hint == "kernels compiles for CUDA" and err.message.endswith("--platform")


@pytest.mark.parametrize("word, option", [("--x", True), ("-x", True), ("--xla_a=1", True), ("-", False),
                                          ("m.hlo", False), ("", False)])
def test_a_word_is_an_option_when_it_starts_with_a_dash_but_is_not_stdin(word, option):
    assert is_option(word) is option
