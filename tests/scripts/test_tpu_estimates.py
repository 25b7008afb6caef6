"""scripts/tpu_estimates.py without a chip: the device-less estimates, then one line saying
nothing measured them."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import DATA, REPO
from tests.tpu.conftest import libtpu_skip_reason


@pytest.mark.skipif(libtpu_skip_reason() is not None, reason=libtpu_skip_reason() or "")
def test_estimates_device_less_then_one_line_without_a_chip(tmp_path, capsys, monkeypatch):
    from mlirhlo_driver.execute import engine

    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    import tpu_estimates

    def no_chip(*a, **k):
        from mlirhlo_driver.errors import NoGpu

        raise NoGpu("no TPU is attached here")

    monkeypatch.setattr(engine, "compile_one", no_chip)  # whatever the run target does on this machine
    out = tmp_path / "est.json"
    assert tpu_estimates.main([str(DATA / "tpu" / "matmul_tanh.mlir"), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no measurement" in printed and "no chip measured them" in printed
    data = json.loads(out.read_text())
    (entry,) = data["programs"]
    assert data["topology"] == "v5e:1x1" and entry["rows"] and "measured" not in entry
    sys.modules.pop("tpu_estimates", None)
