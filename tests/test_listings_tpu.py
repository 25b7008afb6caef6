"""``mlirhlo specs list --tpu`` (listings.tpu_spec_table): the shipped TPU generations, per
chip, with the figures' sources; JSON keeps each figure's source."""

from __future__ import annotations

import json

from mlirhlo_driver import listings
from tests.conftest import assert_mentions


def test_tpu_spec_table_lists_every_generation_with_sources():
    text = listings.tpu_spec_table()
    rows = text.splitlines()
    assert rows[0].split()[:2] == ["generation", "device"]
    assert [r.split()[0] for r in rows[1:-1]] == ["tpu7x", "v4", "v5e", "v5p", "v6e"]
    assert_mentions(text, "16 GiB", "819 GB/s", "197 TFLOP/s", "https://cloud.google.com/tpu/docs/v5e")


def test_tpu_spec_json_keeps_each_figures_source(cli):
    r = cli("specs", "list", "--tpu", "--json")
    assert r.code == 0, r.err
    v5p = next(s for s in json.loads(r.out) if s["generation"] == "v5p")
    assert v5p["hbm_capacity"] == {"value": 95.0, "unit": "GiB", "source": "https://cloud.google.com/tpu/docs/v5p"}
