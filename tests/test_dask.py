"""--scheduler: the batch commands on a Dask cluster this test starts on 127.0.0.1."""

from __future__ import annotations

import builtins
import json

import pytest

from tests.conftest import DATA, assert_one_line_error
from tests.test_batch import CRASHER, GOOD, _rows


@pytest.fixture(scope="module")
def crasher_dir(tmp_path_factory):
    """crasher:boom, a JAX function that segfaults, importable here and on the workers."""
    path = tmp_path_factory.mktemp("crasher")
    (path / "crasher.py").write_text(CRASHER)
    return path


@pytest.fixture(scope="module")
def scheduler(crasher_dir):
    """A local cluster: one worker process (with a nanny), two threads, loopback only."""
    distributed = pytest.importorskip("distributed")
    mp = pytest.MonkeyPatch()
    mp.setenv("PYTHONPATH", str(crasher_dir))  # the workers' environment, as on a real cluster
    try:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                           host="127.0.0.1", scheduler_port=0, dashboard_address=None,
                                           worker_dashboard_address=None, silence_logs=50, timeout=60)
    finally:
        mp.undo()
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close(timeout=30)


@pytest.fixture
def inputs(tmp_path, monkeypatch, crasher_dir):
    (tmp_path / "m1.mlir").write_text(GOOD.format(name="m1"))
    (tmp_path / "bad.mlir").write_text("func.func @main( {\n")
    (tmp_path / "m2.mlir").write_text(GOOD.format(name="m2"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(crasher_dir))
    return tmp_path


def test_opt_on_the_cluster_gives_the_local_rows_and_files(cli, inputs, scheduler):
    # The same rows as local workers give (tests/test_batch.py); here the files are
    # compared with an in-process run, which cannot take the crashing module.
    local = cli("opt", "m1.mlir", "bad.mlir", "m2.mlir", "--dump-dir", inputs / "local", "--no-cache")
    remote = cli("opt", "m1.mlir", "bad.mlir", "crasher:boom", "m2.mlir", "--args", "f32[8]", "--no-cache",
                 "--dump-dir", inputs / "remote", "--scheduler", scheduler, "--timeout", "120")
    assert remote.code == local.code == 2, remote.err  # bad input among the modules: 2, as `run`
    assert _rows(local.err) == {"bad": "INVALID"}
    assert _rows(remote.err) == {"bad": "INVALID", "boom": "CRASHED"}
    assert "bad.mlir:1:17: " in remote.err and "SIGSEGV" in remote.err
    names = sorted(p.name for p in (inputs / "local").iterdir())
    assert names == ["m1.stablehlo.mlir", "m2.stablehlo.mlir"]
    assert sorted(p.name for p in (inputs / "remote").iterdir()) == names
    for name in names:
        assert (inputs / "remote" / name).read_text() == (inputs / "local" / name).read_text()


def test_run_on_the_cluster_gives_the_local_rows(cli, inputs, scheduler):
    argv = ["run", "crasher:boom", DATA / "erf_inv.mlir", DATA / "softmax.vhlo", "--args", "f32[8]",
            "--reference", "cpu"]
    # Local workers give these rows (tests/test_run.py::test_a_crashed_worker_is_replaced).
    result = cli(*argv, "--scheduler", scheduler, "--timeout", "120", "--json", inputs / "remote.json")
    assert result.code == 1, result.out + result.err
    rows = {r["module"]: r for r in json.loads((inputs / "remote.json").read_text())}
    assert {m: r["status"] for m, r in rows.items()} == {"boom": "crashed", "erf_inv": "ok", "softmax": "ok"}
    assert "SIGSEGV" in rows["boom"]["message"]
    assert rows["boom"]["reproducer"].startswith("mlirhlo run crasher:boom")


def test_scheduler_without_the_extra_says_what_to_install(cli, inputs, monkeypatch):
    real_import = builtins.__import__

    def no_distributed(name, *args, **kwargs):
        if name == "distributed" or name.startswith("distributed."):
            raise ImportError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    result = cli("opt", "m1.mlir", "m2.mlir", "--dump-dir", inputs / "out", "--scheduler",
                 "tcp://127.0.0.1:1", "--no-cache")
    assert_one_line_error(result, contains="pip install 'mlirhlo-driver[cluster]'")
    assert not (inputs / "out").exists()
