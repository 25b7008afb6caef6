"""HLO shardings as plain data (mlirhlo_driver.ir.shardings): every spelling XLA writes, read from
the OpSharding XLA's own parser builds, and named mesh shardings (HloShardingV3) as the tile
assignment XLA derives from them. XLA's parser runs in the isolate helper: the texts it dies on
come back refused, and this process lives on."""

from __future__ import annotations

import json

import pytest

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.ir import shardings
from tests.conftest import run_subprocess

V3 = _jaxlib.jaxlib_at_least("0.12.0")

needs_v3 = pytest.mark.skipif(not V3, reason="named mesh shardings (HloShardingV3) need jaxlib 0.12")


def read(text: str) -> shardings.Sharding:
    (got,) = shardings.parse([text])
    assert isinstance(got, shardings.Sharding), got
    return got


def respelled(text: str) -> str:
    """XLA's proto of ``text``, spelled back from the proto alone."""
    (data,) = _jaxlib.sharding_protos([text])
    return shardings.from_bytes(data).text


@pytest.mark.parametrize("text, kind, dims, devices, subgroups", [
    ("{replicated}", "replicated", (), (), ()),
    ("{manual}", "manual", (), (), ()),
    ("{unknown}", "unknown", (), (), ()),
    ("{maximal device=3}", "maximal", (), (3,), ()),
    ("{devices=[2,2]1,0,3,2}", "tiled", (2, 2), (1, 0, 3, 2), ()),
    ("{devices=[4,1]<=[4]}", "tiled", (4, 1), (0, 1, 2, 3), ()),
    ("{devices=[2,2]<=[2,2]T(1,0)}", "tiled", (2, 2), (0, 2, 1, 3), ()),
    ("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "tiled", (2, 1, 2), (0, 1, 2, 3), ("replicated",)),
    ("{devices=[2,1,2]<=[4] last_tile_dims={manual}}", "tiled", (2, 1, 2), (0, 1, 2, 3), ("manual",)),
    ("{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}", "tiled", (1, 2, 2), (0, 2, 1, 3), ("replicated",)),
])
def test_gspmd_spellings_read_as_one_tile_assignment(text, kind, dims, devices, subgroups):
    """Each of XLA's V2 spellings: its kind and tile assignment; the text as given is kept, and
    the proto alone spells it as XLA does."""
    s = read(text)
    assert (s.kind, s.dims, s.devices, s.subgroups, s.text, s.named) == (kind, dims, devices, subgroups, text, False)
    assert respelled(text) == text


def test_a_tuple_reads_each_element_and_ranks_count_data_dimensions_only():
    s = read("{{replicated}, {maximal device=1}, {devices=[2,1,2]<=[4] last_tile_dim_replicate}}")
    assert s.kind == "tuple" and [e.kind for e in s.elements] == ["replicated", "maximal", "tiled"]
    assert s.elements[2].rank == 2 and s.elements[2].tile_counts == (2, 1)
    assert s.elements[2].subgroup("replicated") == 2 and s.elements[2].subgroup("manual") == 1
    assert respelled(s.text) == s.text


@needs_v3
@pytest.mark.parametrize("text, dims, devices, subgroups", [
    # Checked against XLA: each compiled as a parameter's sharding on 8 host devices, the
    # executable reports these tile assignments (see test_named_shardings_lay_out_as_xla_does).
    ("{mesh['x'=2,'y'=4], [{'x'}, {'y'}]}", (2, 4), (0, 1, 2, 3, 4, 5, 6, 7), ()),
    ("{mesh['x'=2,'y'=4], [{'y'}, {'x'}]}", (4, 2), (0, 4, 1, 5, 2, 6, 3, 7), ()),
    ("{mesh['x'=2,'y'=4], [{'y', 'x'}, {}]}", (8, 1), (0, 4, 1, 5, 2, 6, 3, 7), ()),
    ("{mesh['x'=2,'y'=4], [{'x'}, {}]}", (2, 1, 4), (0, 1, 2, 3, 4, 5, 6, 7), ("replicated",)),
    ("{mesh['x'=2,'y'=4], [{}, {'y'}]}", (1, 4, 2), (0, 4, 1, 5, 2, 6, 3, 7), ("replicated",)),
    ("{mesh['x'=2,'y'=4], [{'y':(1)2}, {'x'}]}", (2, 2, 2), (0, 1, 4, 5, 2, 3, 6, 7), ("replicated",)),
    ("{mesh['x'=2,'y'=4], [{'y':(2)2}, {'x', 'y':(1)2}]}", (2, 4), (0, 2, 4, 6, 1, 3, 5, 7), ()),
    ("{mesh['x'=2,'y'=4], device_ids=(7,6,5,4,3,2,1,0), [{'x'}, {'y'}]}", (2, 4), (7, 6, 5, 4, 3, 2, 1, 0), ()),
    ("{mesh['x'=2,'y'=4], device_ids=(0,2,4,6,1,3,5,7), [{'y'}, {}]}", (4, 1, 2), (0, 1, 2, 3, 4, 5, 6, 7),
     ("replicated",)),
    ("{mesh['a'=2,'b'=2,'c'=2], [{'c', 'a'}, {}], replicated={'b'}}", (4, 1, 2), (0, 2, 4, 6, 1, 3, 5, 7),
     ("replicated",)),
    ("{mesh['x'=8], [{'x':(4)2}, {'x':(1)4}]}", (2, 4), (0, 2, 4, 6, 1, 3, 5, 7), ()),
    ("{mesh['x'=2,'y'=4], [{'x'}, {}], manual={'y'}}", (2, 1, 4), (0, 1, 2, 3, 4, 5, 6, 7), ("manual",)),
    ("{mesh['x'=2,'y'=4], [{'x'}, {}], unreduced={'y'}}", (2, 1, 4), (0, 1, 2, 3, 4, 5, 6, 7), ("unreduced",)),
])
def test_named_mesh_shardings_read_as_xla_lays_them_out(text, dims, devices, subgroups):
    """A named sharding's tile assignment: its mesh (sub-axes split out, device order kept),
    each dimension's axes in order, then manual, unreduced and replicated axes; the text and
    mesh are kept, and the proto alone spells it back."""
    s = read(text)
    assert (s.kind, s.dims, s.devices, s.subgroups) == ("tiled", dims, devices, subgroups)
    assert s.named and s.mesh_devices == 8 and s.text == text
    assert respelled(text) == text


@needs_v3
def test_named_shardings_that_shard_nothing_are_replicated_or_manual():
    """No dimension tiled: replicated (whatever the mesh), or manual where every axis is."""
    for text in ("{mesh['x'=2,'y'=2], [{}, {}]}", "{mesh['x'=2,'y'=2], replicated}", "{mesh[], [{}]}"):
        assert read(text).kind == "replicated", text
    for text in ("{mesh['x'=2,'y'=2], manual}", "{mesh['x'=2,'y'=2], [{}, {}], manual={'x', 'y'}}"):
        s = read(text)
        assert (s.kind, s.mesh, s.mesh_devices) == ("manual", (("x", 2), ("y", 2)), 4), text
    assert respelled("{mesh['x'=2,'y'=2], manual}") == "{mesh['x'=2,'y'=2], manual}"
    assert respelled("{mesh['x'=2,'y'=2], [{'x', ?}, {?}]}") == "{mesh['x'=2,'y'=2], [{'x', ?}, {?}]}"


def test_xla_refusals_come_back_with_their_column():
    """A text XLA's parser refuses: its message and 1-based column; good texts beside it parse."""
    good, bad = shardings.parse(["{replicated}", "{bogus}"])
    assert good.kind == "replicated"
    assert isinstance(bad, shardings.Refused) and (bad.message, bad.column) == ("unexpected token", 1)


@pytest.mark.parametrize("text, why", [
    ("{devices=[2,2]<=[3]}", ("does not match the tile assignment dimensions product 4",
                              "the tile assignment [2,2] has 4 places for 3 devices")),
    ("{devices=[2,2]0,1,2}", ("does not match the tile assignment size 4", "device 0 appears twice")),
    ("{devices=[2,2]0,1,2,2}", ("device 2 appears twice",)),
    ("{maximal device=-1}", ("device -1 is not a device",)),
    ("{{replicated}, {devices=[2]0,0}}", ("device 0 appears twice",)),
])
def test_tile_assignments_that_cannot_be_laid_out_are_refused(text, why):
    """What XLA's parser refuses (jaxlib 0.12), or takes and leaves unusable (0.9: a short device
    list padded, repeated or negative devices), is refused, never handed to a compile."""
    (got,) = shardings.parse([text])
    assert isinstance(got, shardings.Refused) and any(w in got.message for w in why), got


@pytest.mark.slow
@needs_v3
def test_a_named_sharding_xla_aborts_on_is_refused_and_this_process_lives():
    """XLA's parser CHECK-fails on an axis used twice (named_sharding.cc): that happens in the
    isolate helper; the text comes back refused with the check that failed, the good texts of the
    same batch parse, and this process goes on."""
    texts = ["{mesh['b'=4], [{'b'}, {}]}", "{mesh['b'=4], [{'b'}, {'b'}]}", "{replicated}",
             "{mesh['b'=4], [{'b'}], replicated={'b'}}"]
    got = shardings.parse(texts)
    assert [type(g).__name__ for g in got] == ["Sharding", "Refused", "Sharding", "Refused"]
    assert "aborted" in got[1].message and "Check failed" in got[1].message and got[1].column is None
    assert got[0].tile_counts == (4, 1)


@pytest.mark.slow
@needs_v3
def test_named_shardings_lay_out_as_xla_does():
    """XLA as the oracle: a module whose parameter has each named sharding, compiled on 8 host
    devices with Shardy and with GSPMD; the executable's parameter sharding (XLA's own lowering
    of the named one) gives each device the same tile as the Python reading."""
    code = r"""
import json, sys, numpy as np
from mlirhlo_driver._native import jaxlib as J
from mlirhlo_driver.execute import engine, spmd
from mlirhlo_driver.xla.platforms import CpuTarget
from mlirhlo_driver.inputs import loader
from mlirhlo_driver.ir import shardings

texts = ["{mesh['x'=2,'y'=4], [{'y':(2)2}, {'x', 'y':(1)2}]}",
         "{mesh['x'=2,'y'=4], device_ids=(0,2,4,6,1,3,5,7), [{'y'}, {}]}",
         "{mesh['a'=2,'b'=2,'c'=2], [{'c', 'a'}, {}], replicated={'b'}}"]
devices = J.local_device_order(8)[:8]
out = []
for text in texts:
    hlo = ("HloModule m, num_partitions=8\n\nENTRY main {\n  p = f32[8,16] parameter(0), sharding=" + text
           + "\n  ROOT n = f32[8,16] negate(p), sharding=" + text + "\n}\n")
    module = spmd._with_device_counts(loader.load("m.hlo", data=hlo.encode())[0].module, spmd.SpmdOptions(num_partitions=8))
    mine = engine.layout(shardings.parse([text])[0], (8, 16), 8, per_device=False, what="p")
    for partitioner in ("shardy", "gspmd"):
        exe = engine.compile_spmd(module, CpuTarget(), device_ids=tuple(d.id for d in devices), num_replicas=1,
                                  num_partitions=8, params=engine.signature(module)[0], results=[],
                                  partitioner=partitioner)
        theirs = exe.param_layouts[0]
        out.append([text, partitioner, mine.tiles == theirs.tiles, mine.shard_shape == theirs.shard_shape])
print(json.dumps(out))
"""
    proc = run_subprocess(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(rows) == 6 and all(same_tiles and same_shape for _, _, same_tiles, same_shape in rows), rows
