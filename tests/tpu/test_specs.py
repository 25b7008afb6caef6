"""The shipped TPU generation specs (tpu_specs/*.toml, tpu/specs.py): every figure has a
public source, and the figures the memory report reads are there."""

from __future__ import annotations

import pytest

from mlirhlo_driver.tpu import specs, topologies


def test_each_shipped_generation_is_one_libtpu_knows():
    found = specs.generations()
    assert {"v4", "v5e", "v5p", "v6e", "tpu7x"} <= set(found)
    assert set(found) <= set(topologies.GENERATIONS)


@pytest.mark.parametrize("generation", ["v4", "v5e", "v5p", "v6e", "tpu7x"])
def test_every_figure_names_its_public_source(generation):
    spec = specs.spec(generation)
    assert spec is not None and spec.generation == generation
    assert spec.figure("hbm_capacity") is not None and spec.figure("peak_bf16") is not None
    for name, figure in spec.figures:
        assert figure.source.startswith("https://cloud.google.com/"), (name, figure)
        assert figure.value > 0


def test_hbm_per_chip_in_bytes():
    assert specs.spec("v5e").hbm_bytes_per_chip == 16 << 30
    assert specs.spec("v5p").hbm_bytes_per_chip == 95 << 30


def test_a_generation_without_a_file_is_unknown_not_guessed():
    assert specs.spec("v2") is None
