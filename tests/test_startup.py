"""Fast start: help and listing commands do not import jax; jax's import is quiet."""

from __future__ import annotations

import pytest

from tests.conftest import IMPORT_PROBE, REPO, run_subprocess


@pytest.mark.parametrize("argv", [
    ["--help"], ["opt", "--help"], ["passes", "--help"], ["convert", "--help"], ["fit", "--help"],
    ["opt", "--list-stages"], ["opt", "--list-stages", "--platform", "cuda"],
    ["specs", "list"], ["specs", "show", "h100_sxm"], ["specs", "check", "gpu_specs/a100_pcie_80.txtpb"],
])
def test_listing_commands_do_not_import_jax(argv):
    proc = run_subprocess(IMPORT_PROBE.format(argv=argv))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "IMPORTED: []", proc.stdout
    assert proc.stderr == ""


XLA_PROBE = """
import sys
from mlirhlo_driver.cli.xla import tools as xla_tools
try:
    getattr(xla_tools, {main!r})({argv!r})
except SystemExit:
    pass
sys.stdout.flush()
print("IMPORTED:", sorted(m for m in ("jax", "jaxlib", "jaxlib.mlir", "typer") if m in sys.modules))
"""


@pytest.mark.parametrize("main", ["hlo_opt_main", "run_hlo_module_main", "multihost_main", "ptx_opt_main"])
@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_xla_front_ends_help_and_version_import_nothing_heavy(main, flag):
    """The XLA-named front-ends parse without typer, and --help/--version reach no jaxlib."""
    proc = run_subprocess(XLA_PROBE.format(main=main, argv=[flag]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "IMPORTED: []", proc.stdout
    assert proc.stderr == ""


def test_passes_listing_from_cache_does_not_import_jax():
    run_subprocess(IMPORT_PROBE.format(argv=["passes"]))  # builds the cache if needed
    proc = run_subprocess(IMPORT_PROBE.format(argv=["passes"]))
    assert "canonicalize" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "IMPORTED: []"
    # Nor importlib.metadata (~20 ms): the installed entry points come from the on-disk scan,
    # and with none there is nothing to load.
    probe = IMPORT_PROBE.replace('("jax", "jaxlib", "jaxlib.mlir")', '("importlib.metadata",)')
    proc = run_subprocess(probe.format(argv=["passes"]))
    assert proc.stdout.strip().splitlines()[-1] == "IMPORTED: []", proc.stdout


@pytest.mark.slow
def test_jax_import_through_the_driver_is_silent():
    # The CUDA plugin is installed and there is no driver: jax's own discovery
    # would print an "Unable to load CUDA" traceback and absl lines.
    proc = run_subprocess(
        "from mlirhlo_driver._native import jaxlib as _jaxlib\n"
        "_jaxlib.jax(); _jaxlib.ir_context(); _jaxlib.cuda_c_api()\n"
        "print(_jaxlib.jax().devices())\n")
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert "CpuDevice" in proc.stdout


def test_version_pin_is_checked(monkeypatch):
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import EnvironmentMismatch

    monkeypatch.setattr(_jaxlib, "installed_versions",
                        lambda: {"jax": "0.8.3", "jaxlib": "0.8.3", "jax-cuda12-plugin": None})
    with pytest.raises(EnvironmentMismatch) as e:
        _jaxlib.check_versions()
    assert "jax 0.8.3" in e.value.message and _jaxlib.SUPPORTED_MIN in e.value.hint


def test_private_jax_apis_live_in_one_module():
    import re

    pkg = REPO / "mlirhlo_driver"
    adapter = pkg / "_native" / "jaxlib.py"
    assert adapter.is_file()
    offenders = []
    for path in sorted(pkg.rglob("*.py")):
        text = "\n".join(ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("#"))
        if path != adapter and re.search(r"jax\._src|jaxlib\._jax|jaxlib\._hlo|_mlir_libs\._|jax_plugins", text):
            offenders.append(str(path.relative_to(pkg)))
    assert offenders == []


def test_nothing_imports_the_cli():
    """The front-ends sit on top: no library module imports them (import-linter's layers
    say so too; this names the file)."""
    import ast

    pkg = REPO / "mlirhlo_driver"
    users = []
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg)
        if rel.parts[0] in ("cli", "__main__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and (
                    node.module.split(".")[0] == "cli" or node.module.startswith("mlirhlo_driver.cli")):
                users.append(str(rel))
    assert users == []


@pytest.mark.slow
def test_mlir_only_and_cuda_opt_do_not_import_jax(tmp_path):
    """jaxlib alone parses, runs passes and compiles device-less; jax is for JAX functions."""
    mlp = "tests/data/mlp_train_step.before_optimizations.txt"
    for argv in (["opt", "tests/data/chlo_special.mlir", "--passes", "chlo-legalize-to-stablehlo,cse"],
                 ["opt", mlp, "--platform", "cuda", "--gpu-spec", "a100_pcie_80", "--stage", "ptx"],
                 # the per-fusion cost analysis runs on a CPU client of jaxlib's own
                 ["opt", mlp, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "cost"]):
        proc = run_subprocess(IMPORT_PROBE.format(argv=argv + ["--no-cache"]))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == "IMPORTED: ['jaxlib', 'jaxlib.mlir']", argv


CONTEXTS = """
import glob
from mlirhlo_driver._native import jaxlib as _jaxlib
from jaxlib.mlir import ir
ours = _jaxlib.ir_context()
from jax._src.interpreters import mlir as jax_mlir
theirs = jax_mlir.make_ir_context()
ops = ["stablehlo.add", "chlo.erf_inv", "mhlo.add", "sdy.sharding_constraint", "mpmd.fragment",
       "func.func", "arith.addf", "scf.for", "tensor.empty", "shape.shape_of", "math.exp",
       "vhlo.add_v1", "gpu.launch", "llvm.func", "nvvm.barrier0", "memref.alloc", "vector.broadcast",
       "sparse_tensor.convert", "cf.br", "triton.nonexistent", "tpu.matmul", "mosaic_gpu.nonexistent"]
print([(op, ours.is_registered_operation(op), theirs.is_registered_operation(op)) for op in ops
       if ours.is_registered_operation(op) != theirs.is_registered_operation(op)])
for path in sorted(glob.glob("tests/data/*.mlir")) + sorted(glob.glob("tests/data/checks/*.mlir")):
    text = open(path).read()
    printed = []
    for ctx in (ours, theirs):
        with ctx:
            try:
                printed.append(str(ir.Module.parse(text)))
            except Exception as e:  # check.* ops: unregistered in both
                printed.append(str(e))
    assert printed[0] == printed[1], path
print("same")
"""


def test_ir_context_matches_jax_make_ir_context():
    proc = run_subprocess(CONTEXTS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "same"], proc.stdout
