"""``mlirhlo explore`` as a user runs it: its help, what it refuses, and its overlays."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import DENSE_LAYER, assert_one_line_error


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("me") / "small.mlir"
    path.write_text(DENSE_LAYER)
    return path


def _nodes(collection: dict, graph: int = 0) -> dict[str, dict]:
    return {n["id"]: n for n in collection["graphs"][graph]["nodes"]}


def _attr(node: dict, key: str) -> str | None:
    return next((a["value"] for a in node["attrs"] if a["key"] == key), None)


# ------------------------------------------------------------------ mlirhlo explore

def test_explore_help_has_words_for_every_option_and_none_of_opts_outputs(cli):
    import re

    from mlirhlo_driver.cli import explore

    r = cli("explore", "--help")
    assert r.code == 0 and r.out.startswith("Usage: mlirhlo explore [OPTIONS] FILE\n"), r.out[:200]
    for action in explore.parser()._actions:
        assert (action.help or "").strip(), action.dest
        assert all(s in r.out for s in action.option_strings)
        if action.nargs != 0 and action.option_strings and action.dest != "help":
            assert re.fullmatch(r"[A-Z][A-Z0-9_:=.\[\],]*", action.metavar or ""), action.option_strings
    # opt's outputs and listings are explore's to decide: not offered.
    for gone in ("--stage ", "--output", "--list-stages", "--list-passes", "--split-input-file", "--scheduler URL"):
        assert gone not in r.out, gone
    assert "--dump-dir" in r.out and "--diff-flags" in r.out and "--xla" not in r.out.split("Options")[0]


def test_explore_without_model_explorer_says_what_to_install(cli, small, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "model_explorer"
                        else real(name, *a))
    assert_one_line_error(cli("explore", small, "--platform", "cpu"), code=2, facts=("'mlirhlo-driver[explorer]'",))


@pytest.mark.parametrize("args, says", [
    (["--stage=hlo"], "no such option: --stage (explore writes the model-explorer stage to --dump-dir"),
    (["-o=x.json"], "no such option: -o"),
    (["--diff-flag=x"], "no such option: --diff-flag (did you mean '--diff-flags'"),
    ([], "give --platform"),
    (["--platform", "cuda", "--gpu-spec", "h100_sxm,a100_sxm_80"], "one GPU spec"),
])
def test_explore_refuses_what_it_decides_itself(cli, small, args, says):
    r = cli("explore", small, "--no-serve", *args)
    assert says in assert_one_line_error(r, code=2)


def test_explore_a_gpu_spec_means_cuda(cli, small, tmp_path):
    """--gpu-spec without --platform explores the CUDA compile, as opt compiles it."""
    r = cli("explore", small, "--no-serve", "--gpu-spec", "h100_sxm", "--dump-dir", tmp_path)
    assert r.code == 0, r.err
    assert any(p.name.endswith(".registers.model-explorer.json") for p in tmp_path.iterdir())


def test_explore_marks_the_first_diverging_op(cli, tmp_path):
    """run --bisect's case (tests/execute/test_run_bisect.py): XLA:CPU's fast min/max drops a
    NaN; the maximum op (line 3) is marked, and the node of the fusion XLA made of it."""
    src = tmp_path / "m.mlir"
    t = "tensor<8xf32>"
    src.write_text(f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n  %a = stablehlo.add %x, %x : {t}\n"
                   f"  %m = stablehlo.maximum %a, %y : {t}\n  %r = stablehlo.multiply %m, %x : {t}\n"
                   f"  return %r : {t}\n}}\n")
    np.savez(tmp_path / "in.npz", arg0=np.arange(1, 9, dtype=np.float32), arg1=np.full(8, np.nan, np.float32))
    out = tmp_path / "ex"
    r = cli("explore", src, "--platform", "cpu", "--xla_cpu_enable_fast_min_max=true", "--bisect", "--reference",
            "cpu", "--inputs", tmp_path / "in.npz", "--no-serve", "--dump-dir", out)
    assert r.code == 0, r.err
    assert f"overlay: {out / 'm.bisect.model-explorer.json'}" in r.out.splitlines()
    overlay = json.loads((out / "m.bisect.model-explorer.json").read_text())
    (graph, data), = overlay.items()
    nodes = _nodes(json.loads((out / "m.model-explorer.json").read_text()))
    marked = data["results"]
    assert {_attr(nodes[n], "opcode") for n in marked} == {"maximum"}
    assert all(_attr(nodes[n], "source") == f"{src}:3:8" for n in marked)
    assert next(iter(marked.values()))["value"].startswith("first diverging: %1 = stablehlo.maximum")
    # Without the flag XLA matches the reference: a note, and no overlay.
    r = cli("explore", src, "--platform", "cpu", "--bisect", "--reference", "cpu", "--inputs", tmp_path / "in.npz",
            "--no-serve", "--dump-dir", tmp_path / "ex2")
    assert r.code == 0 and "no op to mark" in r.err and not list((tmp_path / "ex2").glob("*.bisect.*"))


def test_explore_diff_lays_the_status_on_both_graphs(cli, small, tmp_path):
    out = tmp_path / "ex"
    r = cli("explore", small, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--no-serve", "--dump-dir", out,
            "--diff-flags=--xla_gpu_enable_triton_gemm=false")
    assert r.code == 0, r.err
    graphs = [ln.split(": ", 1)[1] for ln in r.out.splitlines() if ln.startswith("graph: ")]
    assert graphs == [str(out / "small.model-explorer.json"), str(out / "small.B.model-explorer.json")]
    status = {}
    for side in ("", ".B"):
        nodes = _nodes(json.loads((out / f"small{side}.model-explorer.json").read_text()))
        (data,) = json.loads((out / f"small{side}.diff.model-explorer.json").read_text()).values()
        assert set(data["results"]) <= set(nodes)
        status[side] = {n: r["value"] for n, r in data["results"].items()}
    # Triton's GEMM fusion on A, a cuBLAS call instead on B.
    assert status[""]["gemm_fusion_dot"] == "removed"
    assert any(v == "added" and n.startswith(("cublas", "custom-call")) for n, v in status[".B"].items())
