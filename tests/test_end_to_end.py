"""What a new user does first (issues' "done when"), end to end through the CLI."""

from __future__ import annotations

import glob
import os

import pytest
from conftest import DATA


@pytest.fixture(scope="module")
def three_inputs(tmp_path_factory):
    """An XLA dump's before_optimizations.txt, a jax.export artifact, a JAX function."""
    d = tmp_path_factory.mktemp("user")
    (d / "model.py").write_text(
        "import jax, jax.numpy as jnp\n\n"
        "def loss(w, x):\n"
        "    return jnp.mean(jax.nn.relu(x @ w) ** 2)\n")
    return [str(DATA / "mlp_train_step.before_optimizations.txt"), str(DATA / "softmax.vhlo"), "model:loss"], d


@pytest.mark.parametrize("which", [0, 1, 2])
def test_named_pipeline_passes_timing_and_ir_dump(cli, three_inputs, monkeypatch, tmp_path, which):
    sources, home = three_inputs
    monkeypatch.chdir(home)
    extra = ["--args", "f32[16,8],f32[4,16]"] if which == 2 else []
    named = cli("opt", sources[which], *extra, "--pipeline", "@simplify", "--timing")
    assert named.code == 0, named.err
    # MLIR names it CanonicalizerPass in jaxlib 0.10.2, Canonicalizer in 0.9.
    assert "Canonicalizer" in named.err and "Total" in named.err
    dumps = tmp_path / "ir"
    listed = cli("opt", sources[which], *extra, "--passes", "canonicalize,cse,symbol-dce",
                 "--print-ir-after-all", "--ir-dump-dir", dumps)
    assert listed.code == 0, listed.err
    files = sorted(os.listdir(next(dumps.iterdir())))
    assert [f.split("-", 2)[2] for f in files] == ["canonicalize.mlir", "cse.mlir", "symbol-dce.mlir"]
    assert "func.func" in listed.out


def test_dump_every_stage_of_a_jax_programs_xla_dump_directory(cli, tmp_path):
    """A real JAX program dumped by XLA; every stage of every module in one command."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    jax = _jaxlib.jax()
    import jax.numpy as jnp

    dump = tmp_path / "xla_dump"
    for fn, args in ((lambda x: jnp.sort(x) * 2, (jnp.zeros(16),)),
                     (lambda a, b: jnp.tanh(a @ b), (jnp.zeros((8, 4)), jnp.zeros((4, 2))))):
        from jaxlib.mlir import ir

        with _jaxlib.ir_context():
            module = ir.Module.parse(jax.jit(fn).lower(*args).as_text())
        _jaxlib.compile_executable(module, _jaxlib.cpu_devices()[:1],
                                   _jaxlib.compile_options(dump_to=str(dump)))
    inputs = glob.glob(str(dump / "*before_optimizations.txt"))
    assert len(inputs) == 2
    out = tmp_path / "out"
    for platform, spec in (("cpu", []), ("cuda", ["--gpu-spec", "l4"])):
        result = cli("opt", dump, "--platform", platform, *spec, "--stage", "all", "--dump-dir", out / platform)
        assert result.code == 0, result.err
    from mlirhlo_driver import registry

    for platform in ("cpu", "cuda"):
        names = sorted(os.listdir(out / platform))
        per_module = len([s for s in registry.all_for(platform) if not s.multi])
        # multi-file stages: a cubin per kernel module, a Triton log per Triton fusion (or one note),
        # model-explorer's graph and (CUDA) an overlay per figure
        cubins = [n for n in names if n.endswith(".cubin")]
        triton_logs = [n for n in names if n.endswith(".triton-passes.txt")]
        explorer = [n for n in names if n.endswith(".model-explorer.json")]
        assert len(names) - len(cubins) - len(triton_logs) - len(explorer) == 2 * per_module, names
        assert len([n for n in explorer if n.count(".") == 3]) == 2, explorer  # a graph per module
        if platform == "cuda":
            # an overlay per figure; occupancy only where the thunk sequence gives launch
            # dimensions (jaxlib 0.9's does not: its kernels table has no grid × block)
            for table in (n for n in names if n.endswith(".kernels.txt")):
                stem = table.removesuffix(".kernels.txt")
                launched = any(" × " in line for line in (out / platform / table).read_text().splitlines()[4:])
                overlays = {n[len(stem) + 1:].removesuffix(".model-explorer.json")
                            for n in explorer if n.startswith(stem + ".") and n.count(".") == 4}
                assert overlays == {"roofline-time", "bound", "registers", "spills"} | (
                    {"occupancy"} if launched else set()), (stem, overlays)
        else:
            assert len(explorer) == 2, explorer
        assert len(cubins) >= (2 if platform == "cuda" else 0), names
        assert len(triton_logs) >= (2 if platform == "cuda" else 0), names
    ptx = [p for p in os.listdir(out / "cuda") if p.endswith(".ptx")]
    assert len(ptx) == 2
    for p in ptx:
        assert ".target sm_89" in (out / "cuda" / p).read_text()
