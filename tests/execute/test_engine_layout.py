"""execute/engine.py's layout of sharded values: which device holds which elements of each
kind of sharding, padded uneven tiles, and gathering them back.
"""

from __future__ import annotations

import numpy as np
import pytest


def hlo_layout(text: str, shape: tuple[int, ...], partitions: int = 4, per_device: bool = False):
    from mlirhlo_driver.execute.engine import layout
    from mlirhlo_driver.ir import shardings

    (sharding,) = shardings.parse([text])
    return layout(sharding, shape, partitions, per_device=per_device, what="output 1")


class Dev:
    def __init__(self, id: int) -> None:
        self.id = id


def test_a_layout_gives_each_element_one_owner_exactly_when_it_should():
    """device-id inputs make a global array only when no element lives on two partitions:
    per-device values always; tiles when no two partitions hold the same tile; a replicated
    value only on a single partition."""
    from mlirhlo_driver.execute.engine import Layout

    for p in (1, 2, 4):
        assert Layout("stacked", (p, 2), (1, 2)).unique(p)
        assert Layout("replicated", (4,), (4,)).unique(p) == (p == 1)
    assert Layout("tiled", (4, 2), (2, 2), tiles=((0, 0), (1, 0))).unique(2)
    assert not Layout("tiled", (2, 2), (2, 2), tiles=((0, 0), (0, 0))).unique(2)  # partial replication


def test_layout_of_each_kind_of_sharding():
    """Tiles follow the device order of the tile assignment; uneven global shapes round the
    per-device shape up; a per-device shape times the tile counts is the global one."""
    from mlirhlo_driver.execute.engine import Layout, layout

    assert layout(None, (3,), 4, per_device=False, what="x") == Layout("replicated", (3,), (3,))
    assert hlo_layout("{replicated}", (3, 2)) == Layout("replicated", (3, 2), (3, 2))
    assert hlo_layout("{maximal device=3}", (3,)) == Layout("maximal", (3,), (3,), device=3,
                                                              text="{maximal device=3}")
    swapped = "{devices=[2,2]1,0,3,2}"
    tiles = ((0, 1), (0, 0), (1, 1), (1, 0))
    assert hlo_layout(swapped, (4, 6)) == Layout("tiled", (4, 6), (2, 3), tiles, text=swapped)
    assert hlo_layout(swapped, (5, 7)) == Layout("tiled", (5, 7), (3, 4), tiles, text=swapped)
    assert hlo_layout(swapped, (2, 3), per_device=True) == Layout("tiled", (4, 6), (2, 3), tiles, text=swapped)
    partly = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"
    assert hlo_layout(partly, (5, 3)) == Layout("tiled", (5, 3), (3, 3), ((0, 0), (0, 0), (1, 0), (1, 0)),
                                                text=partly)
    assert hlo_layout("{devices=[1,2]<=[2]}", (4, 4), partitions=2).shard_shape == (4, 2)


@pytest.mark.golden
@pytest.mark.parametrize("text, shape, message", [
    ("{maximal device=4}", (4, 4), "error: output 1: sharding {maximal device=4} names device 4, but there are "
                                   "4 partitions"),
    ("{devices=[4]<=[4]}", (4, 4), "error: output 1: sharding {devices=[4]<=[4]} has 1 tile dimensions for a "
                                   "rank-2 value"),
    ("{devices=[1,2]<=[2]}", (4, 4), "error: output 1: sharding {devices=[1,2]<=[2]} spans 2 devices, but there "
                                     "are 4 partitions (num_partitions=2)"),
    ("{devices=[1,8]<=[8]}", (4, 4), "error: output 1: sharding {devices=[1,8]<=[8]} spans 8 devices, but there "
                                     "are 4 partitions (num_partitions=8)"),
    ("{manual}", (4, 4), "error: output 1: sharding {manual} is not supported by spmd-run (manual values are per "
                         "device: run an already partitioned module, is_spmd_partitioned_module)"),
    ("{devices=[2,1,2]<=[4] last_tile_dims={manual}}", (4, 4),
     "error: output 1: sharding {devices=[2,1,2]<=[4] last_tile_dims={manual}} is not supported by spmd-run "
     "(manual values are per device: run an already partitioned module, is_spmd_partitioned_module)"),
    ("{devices=[2,1,2]<=[4] last_tile_dims={unreduced}}", (4, 4),
     "error: output 1: sharding {devices=[2,1,2]<=[4] last_tile_dims={unreduced}} is not supported by spmd-run "
     "(unreduced values hold partial sums: spmd-run lays out tiled, replicated, maximal and manual ones)"),
    ("{unknown}", (4, 4), "error: output 1: sharding {unknown} is not supported by spmd-run (tiled, replicated, "
                          "maximal and manual are)"),
])
def test_layout_refuses_shardings_it_cannot_lay_out(python_names, text, shape, message):
    """Each refusal is one InputError naming the value and the sharding: the golden of the layout's refusals."""
    from mlirhlo_driver.errors import InputError

    with pytest.raises(InputError) as e:
        hlo_layout(text, shape)
    assert e.value.format("params") == message


def test_layout_shards_pad_uneven_tiles_and_gather_undoes_them():
    """Partition p's part of a global array (the last tiles zero-padded), and back."""
    from mlirhlo_driver.execute.engine import Layout, gather

    lay = Layout("tiled", (5, 3), (3, 2), tiles=((0, 0), (0, 1), (1, 0), (1, 1)), text="{t}")
    full = np.arange(15.0).reshape(5, 3)
    assert lay.slices(3) == (slice(3, 5), slice(2, 3))
    shards = {p: lay.shard(full, p) for p in range(4)}
    np.testing.assert_array_equal(shards[0], [[0, 1], [3, 4], [6, 7]])
    np.testing.assert_array_equal(shards[1], [[2, 0], [5, 0], [8, 0]])
    np.testing.assert_array_equal(shards[2], [[9, 10], [12, 13], [0, 0]])
    np.testing.assert_array_equal(shards[3], [[11, 0], [14, 0], [0, 0]])
    got, problems = gather(lay, shards)
    np.testing.assert_array_equal(got, full)
    assert problems == [] and got.dtype == full.dtype
    assert lay.describe() == "{t}, [3, 2] per device"
    even = Layout("tiled", (4,), (4,), tiles=((0,),), text="{e}")
    assert even.describe() == "{e}"
    np.testing.assert_array_equal(even.shard(np.arange(4), 0), np.arange(4))


def test_gather_of_replicated_maximal_and_stacked_values(python_names):
    """Copies must agree (each disagreement is one problem); a maximal value is its device's;
    per-device values stack in partition order."""
    from mlirhlo_driver.execute.engine import Layout, gather

    a = np.array([1.0, 2.0, 3.0])
    rep = Layout("replicated", (3,), (3,))
    got, problems = gather(rep, {0: a, 1: a.copy(), 2: a + [0, 0.5, 2]})
    np.testing.assert_array_equal(got, a)
    assert problems == ["partitions 0 and 2 disagree on 2 of 3 elements (max abs difference 2)"]
    assert gather(rep, {0: a, 1: a + 1e-9}, rtol=0.0, atol=1e-6)[1] == []
    np.testing.assert_array_equal(np.asarray(rep.shard(a, 1)), a)
    maximal = Layout("maximal", (3,), (3,), device=1)
    assert gather(maximal, {0: a, 1: a * 2, 2: a * 3})[0] is not None
    np.testing.assert_array_equal(gather(maximal, {0: a, 1: a * 2, 2: a * 3})[0], a * 2)
    stacked = Layout("stacked", (2, 3), (3,))
    got, problems = gather(stacked, {1: a * 2, 0: a})
    np.testing.assert_array_equal(got, [a, a * 2])
    assert problems == []
    np.testing.assert_array_equal(stacked.shard(np.stack([a, a * 2]), 1), a * 2)
    assert stacked.describe() == "per device (no sharding): gathered as [partition, ...]"
    assert rep.describe() == "{replicated}"


def test_device_arguments_are_each_devices_part_of_its_replicas_inputs():
    """Device r*P+p gets partition p's part of replica r's arrays; device-id fills with the device's id."""
    from mlirhlo_driver.execute.engine import Executable, Inputs, Layout, TensorSpec, device_arguments

    spec = TensorSpec((4,), "f32", "float32", "x")
    lay = Layout("tiled", (4,), (2,), tiles=((0,), (1,)))
    compiled = Executable(None, [Dev(7), Dev(3)], [lay], [], 0.0, [spec], [], num_partitions=2)
    inputs = Inputs([[np.arange(4.0, dtype=np.float32)]], "given")
    np.testing.assert_array_equal(device_arguments(compiled, inputs, 1)[0], [2.0, 3.0])
    np.testing.assert_array_equal(device_arguments(compiled, inputs, 0)[0], [0.0, 1.0])
    (got,) = device_arguments(compiled, Inputs(None, "ids"), 1)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [3.0, 3.0])
    whole = Layout("replicated", (4,), (4,))
    compiled = Executable(None, [Dev(0), Dev(1)], [whole], [], 0.0, [spec], [], num_replicas=2)
    two = Inputs([[np.zeros(4, np.float32)], [np.ones(4, np.float32)]], "two")
    np.testing.assert_array_equal(device_arguments(compiled, two, 1)[0], np.ones(4))
    np.testing.assert_array_equal(device_arguments(compiled, two, 0)[0], np.zeros(4))
