"""scripts/tpu_chip.py without a chip: what it reads and refuses before anything runs there."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO


@pytest.fixture
def tpu_chip(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    import tpu_chip

    return tpu_chip


def test_the_corpus_programs_on_one_device_are_the_ones_it_compares(tpu_chip, tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"programs": [
        {"name": "mlp", "partitions": 1}, {"name": "sharded", "partitions": 4},
        {"name": "old", "partitions": 1, "skipped": "needs jax 0.12"}, {"name": "gone", "partitions": 1}]}))
    for name in ("mlp", "sharded", "old"):
        (tmp_path / f"{name}.before_optimizations.txt").write_text("HloModule m\n")
    assert [p.name for p in tpu_chip.single_device(tmp_path)] == ["mlp.before_optimizations.txt"]


def test_run_without_wheels_is_one_line_and_unknown_steps_are_named(tpu_chip, tmp_path, monkeypatch):
    monkeypatch.setattr(tpu_chip, "SITE", tmp_path / "site")
    with pytest.raises(SystemExit) as e:
        tpu_chip.main(["run", "--out", str(tmp_path / "out"), "--wheels", str(tmp_path / "none")])
    assert str(e.value).startswith("error:") and "no wheels" in str(e.value)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setattr(tpu_chip, "install", lambda log, where: {})
    with pytest.raises(SystemExit) as e:
        tpu_chip.main(["run", "--out", str(tmp_path / "out"), "--wheels", str(wheels), "--steps", "tests,benchmark"])
    assert "unknown benchmark" in str(e.value)


def test_conformance_only_runs_the_files_named(tpu_chip, tmp_path):
    import tarfile

    folder = tmp_path / "src" / "stablehlo" / "testdata"
    folder.mkdir(parents=True)
    for name in ("abs_f32", "add_f32", "cos_f64", "dot_f32", "exp_f32"):
        (folder / f"{name}.mlir").write_text("")
    testdata = tmp_path / "testdata.tgz"
    with tarfile.open(testdata, "w:gz") as tar:
        tar.add(tmp_path / "src" / "stablehlo", arcname="stablehlo")
    only = tmp_path / "left.txt"
    only.write_text("cos_f64\nexp_f32\n")
    ran = []

    class Log:
        def left(self):
            return 1000.0

        def say(self, line):
            pass

        def run(self, argv, **kw):
            ran.append([a.rsplit("/", 1)[-1] for a in argv if a.endswith(".mlir") or a == "highest"])

    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    work.mkdir()
    tpu_chip.step_conformance(Log(), {}, out, work, testdata, 2, only=only)
    assert ran == [["cos_f64.mlir"], ["exp_f32.mlir"]]
    ran.clear()
    tpu_chip.step_conformance(Log(), {}, out, work, testdata, 1, only=only, precision="highest")
    assert ran == [["cos_f64.mlir", "exp_f32.mlir", "highest"]]
