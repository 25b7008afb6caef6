"""cuda/plugin.py: ``mlirhlo cuda-plugin install``'s own refusal (the copy itself:
tests/_native/test_plugin_copy.py)."""

from __future__ import annotations

import pytest

from mlirhlo_driver.cuda import plugin
from mlirhlo_driver.errors import FLAGS, EnvironmentMismatch, spell


@pytest.mark.golden
@pytest.mark.parametrize("spelling, message", [
    (FLAGS, "--cuda 11 must be one of 12, 13"),
    (None, "cuda=11 must be one of 12, 13"),
])
def test_unknown_cuda_major_refusal_exactly(spelling, message):
    """A CUDA major without pip tools, before anything is installed: the flag (or parameter)
    as the caller spells it, and the majors there are."""
    with pytest.raises(EnvironmentMismatch) as e:
        plugin.install(cuda=11)
    assert (spell(e.value.message, spelling) if spelling else spell(e.value.message)) == message
