"""TPU topology names (tpu/topologies.py): libtpu's spelling and Cloud TPU accelerator
types read into one Topology, and the one-line refusals of anything else. Nothing here
loads libtpu."""

from __future__ import annotations

import pytest

from mlirhlo_driver.errors import FLAGS, DriverError
from mlirhlo_driver.tpu import topologies
from tests.conftest import assert_mentions


@pytest.mark.parametrize("name, expected, devices", [
    ("v5e:2x2", "v5e:2x2", 4),
    ("V5E=1x1", "v5e:1x1", 1),
    ("v5p_2x2x1", "v5p:2x2x1", 4),
    ("v6e:2x4", "v6e:2x4", 8),
    ("v4:2x2x1", "v4:2x2x1", 4),
    ("tpu7x:2x2x1", "tpu7x:2x2x1", 8),
    ("v3:4x4", "v3:4x4", 32),
    ("v5p:4x4x8_twisted", "v5p:4x4x8_twisted", 128),
    # Cloud TPU accelerator types: v5e and v6e count chips, v2-v5p TensorCores (2 per chip).
    ("v5litepod-16", "v5e:4x4", 16),
    ("v5litepod-1", "v5e:1x1", 1),
    ("v6e-8", "v6e:2x4", 8),
    ("v5p-8", "v5p:2x2x1", 4),
    ("v5p-128", "v5p:4x4x4", 64),
    ("v4-8", "v4:2x2x1", 4),
    ("v4-32", "v4:2x2x4", 16),
    ("v3-32", "v3:4x4", 32),
    ("v2-8", "v2:2x2", 8),
    # Multislice (Cloud TPU's num_slices): N slices of one shape.
    ("2xv5e:2x2", "2xv5e:2x2", 8),
    ("4xv5litepod-16", "4xv5e:4x4", 64),
    ("1xv5e:2x2", "v5e:2x2", 4),
])
def test_names_read_into_libtpus_spelling(name, expected, devices):
    topo = topologies.parse(name)
    assert topo.name == expected
    assert topo.devices == devices


@pytest.mark.golden
@pytest.mark.parametrize("name, message", [
    ("v9:2x2", "error: --tpu-topology: unknown TPU generation 'v9' in 'v9:2x2' (generations: v2, v3, v4, v5e, v5p, "
               "v6e, tpu7x)"),
    ("v5:2x2", "error: --tpu-topology: unknown TPU generation 'v5' in 'v5:2x2' (did you mean 'v5p', 'v5e'?; "
               "generations: v2, v3, v4, v5e, v5p, v6e, tpu7x)"),
    ("v5e:2x2x1", "error: --tpu-topology: v5e slices have 2 dimensions, 'v5e:2x2x1' has 3 (v5e:2x2)"),
    ("v5e:0x2", "error: --tpu-topology: every dimension of 'v5e:0x2' must be 1 or more"),
    ("v5litepod-3", "error: --tpu-topology: no v5e slice of 3 chips ('v5litepod-3') (one of v5litepod-1, "
                    "v5litepod-4, v5litepod-8, v5litepod-16, v5litepod-32, v5litepod-64, v5litepod-128, "
                    "v5litepod-256; or libtpu's spelling, v5e:SHAPE)"),
    ("h100", "error: --tpu-topology: 'h100' is not a TPU topology (libtpu's spelling GEN:SHAPE (v5e:2x2, v5p:2x2x1, "
             "tpu7x:2x2x1) or an accelerator type (v5litepod-16, v6e-8, v5p-128), 2xNAME for 2 slices; generations: "
             "v2, v3, v4, v5e, v5p, v6e, tpu7x)"),
    ("0xv5e:2x2", "error: --tpu-topology: '0xv5e:2x2' asks for 0 slices (1 to 64 slices: 2xv5e:2x2)"),
    ("2x2xv5e:2x2", "error: --tpu-topology: '2x2xv5e:2x2' gives the slice count twice (2xv5e:2x2)"),
])
def test_bad_names_are_one_line_naming_the_generations(name, message):
    with pytest.raises(DriverError) as e:
        topologies.parse(name)
    assert e.value.format(FLAGS) == message


def test_a_multislice_name_keeps_one_slices_shape():
    topo = topologies.parse("2xv6e-8")
    assert (topo.slices, topo.slice_name, topo.chips) == (2, "v6e:2x4", 16)
    assert topologies.parse_list("v5e:2x2,2xv5e:2x2") == [topologies.parse("v5e:2x2"), topo.__class__("v5e", (2, 2),
                                                                                                      slices=2)]


def test_a_zero_dimension_never_reaches_libtpu():
    # libtpu 0.0.50.1 dies of a SIGFPE on v5e:0x2: the name is refused before any load.
    with pytest.raises(DriverError):
        topologies.parse("v5e:2x0")


def test_several_at_once_keep_their_order_once_each():
    found = topologies.parse_list("v5e:2x2, v5p-8,v5e:2x2")
    assert [t.name for t in found] == ["v5e:2x2", "v5p:2x2x1"]
    with pytest.raises(DriverError) as e:
        topologies.parse_list("v5e:2x2,")
    assert_mentions(e.value.format(FLAGS), "--tpu-topology", "empty")


def test_the_default_is_a_known_name():
    assert topologies.parse(topologies.DEFAULT).generation in topologies.GENERATIONS
