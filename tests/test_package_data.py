"""The data folders ship inside the package: a real wheel, installed with ``pip --target``
(data-files would land in ``TARGET/share``, where nothing looks), finds every spec and
pipeline; so does the same package zipped. ``python -m mlirhlo_driver`` is ``mlirhlo``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import DATA, REPO

# One wheel build and install (module fixtures) for all of these: one worker takes them.
pytestmark = pytest.mark.xdist_group("package_data")

SPECS = sorted(p.stem for p in (REPO / "gpu_specs").glob("*.txtpb"))
MLIR = DATA / "erf_inv.mlir"


def _setuptools_builds_here() -> bool:
    """This environment's setuptools meets pyproject's build requirement (>=77)."""
    from importlib import metadata

    try:
        return int(metadata.version("setuptools").split(".")[0]) >= 77
    except (metadata.PackageNotFoundError, ValueError):
        return False


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    """``pip install --no-deps --target D`` of a wheel built from a copy of the checkout
    (pyproject.toml, README.md, the package and the data folders beside it: an sdist's
    sources), so the build leaves nothing in the working tree. About 3 s with an isolated build."""
    base = tmp_path_factory.mktemp("package_data")
    src = base / "src"
    for folder in ("mlirhlo_driver", "gpu_specs", "tpu_specs", "pipelines"):
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    d = base / "D"
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
           "--target", str(d), str(src)]
    if _setuptools_builds_here():
        cmd.insert(4, "--no-build-isolation")  # offline, and faster
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=base,
                          env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (d / "share").exists()  # no data-files left
    return d


def _run(args: list[str], pythonpath: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``python ARGS`` from ``cwd`` (outside the checkout) with only ``pythonpath`` added:
    the venv's site-packages still provide jax and the rest."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("elsewhere")


def test_shipped_data_is_in_the_package():
    assert len(SPECS) == 14
    assert (REPO / "pipelines" / "simplify.pipeline").is_file()


@pytest.mark.slow
def test_target_install_is_the_one_imported(target, outside):
    proc = _run(["-c", "import mlirhlo_driver.cuda.specs as g; print(g.__file__); print(g.SPEC_DIR)"],
                target, outside)
    assert proc.returncode == 0, proc.stderr
    module, spec_dir = proc.stdout.splitlines()
    assert Path(module) == target / "mlirhlo_driver" / "cuda" / "specs.py"
    assert Path(spec_dir) == target / "mlirhlo_driver" / "gpu_specs"


def test_target_install_lists_every_shipped_spec(target, outside):
    proc = _run(["-m", "mlirhlo_driver", "specs", "list"], target, outside)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
    assert [name for name in rows if name in SPECS] == SPECS, proc.stdout


def test_target_install_resolves_a_named_pipeline(target, outside):
    proc = _run(["-m", "mlirhlo_driver", "opt", str(MLIR), "--pipeline", "@simplify"], target, outside)
    assert proc.returncode == 0, proc.stderr
    assert "func.func" in proc.stdout


VENDOR = REPO / "mlirhlo_driver" / "xla" / "_vendor"
# What html_page inlines: the installed files, read as the stage reads them.
READ_VENDORED = ("import hashlib, mlirhlo_driver.xla.html_page as h; print(h.__file__); "
                 "print(*(hashlib.sha256(h._vendored(n).encode()).hexdigest() for n in (h.VIZ_JS, h.PAN_ZOOM_JS)))")


def _vendored_digests() -> str:
    import hashlib

    return " ".join(hashlib.sha256((VENDOR / n).read_bytes()).hexdigest()
                    for n in ("viz-global.js", "svg-pan-zoom.min.js"))


def test_target_install_holds_the_html_views_scripts_and_licenses(target, outside):
    installed = target / "mlirhlo_driver" / "xla" / "_vendor"
    assert sorted(p.name for p in installed.iterdir()) == sorted(p.name for p in VENDOR.iterdir())
    proc = _run(["-c", READ_VENDORED], target, outside)
    assert proc.returncode == 0, proc.stderr
    module, digests = proc.stdout.splitlines()
    assert Path(module) == target / "mlirhlo_driver" / "xla" / "html_page.py"
    assert digests == _vendored_digests()


def test_zipped_package_finds_its_data(target, tmp_path):
    """zipimport: the folders are no file-system paths; resources.data_dir extracts them."""
    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted((target / "mlirhlo_driver").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                z.write(path, path.relative_to(target).as_posix())
    code = ("import mlirhlo_driver, mlirhlo_driver.cuda.specs as g, mlirhlo_driver.mlir.pipeline as p; "
            "print(mlirhlo_driver.__file__); print(','.join(g.shipped_names())); "
            "print(','.join(n.name for n in p.named_pipelines()))")
    proc = _run(["-c", code], archive, tmp_path)
    assert proc.returncode == 0, proc.stderr
    module, specs, pipelines = proc.stdout.splitlines()
    assert module.startswith(str(archive))
    assert specs.split(",") == SPECS
    assert "simplify" in pipelines.split(",")
    proc = _run(["-c", READ_VENDORED], archive, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == _vendored_digests()


def test_python_m_version_is_the_console_scripts(target, outside):
    script = Path(sys.executable).parent / "mlirhlo"
    if not script.is_file():
        pytest.skip("no mlirhlo console script next to this Python")
    ours = _run(["-m", "mlirhlo_driver", "--version"], target, outside)
    theirs = subprocess.run([str(script), "--version"], capture_output=True, text=True, cwd=outside,
                            timeout=300)
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout == theirs.stdout and ours.stdout.startswith("mlirhlo-driver ")
    assert ours.stderr == theirs.stderr


def test_the_wheel_holds_every_module(target):
    """Every subpackage ships (setuptools lists packages one by one)."""
    def modules(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*.py") if "__pycache__" not in p.parts}

    # The data folders at the repository's root ship inside the package, each a package of its own.
    data = {"gpu_specs/__init__.py", "tpu_specs/__init__.py", "pipelines/__init__.py"}
    assert modules(target / "mlirhlo_driver") == modules(REPO / "mlirhlo_driver") | data
    assert {p.name for p in (target / "mlirhlo_driver" / "gpu_specs").glob("*.txtpb")} == \
        {p.name for p in (REPO / "gpu_specs").glob("*.txtpb")}
    assert {p.name for p in (target / "mlirhlo_driver" / "tpu_specs").glob("*.toml")} == \
        {p.name for p in (REPO / "tpu_specs").glob("*.toml")}
    assert (target / "mlirhlo_driver" / "pipelines" / "simplify.pipeline").is_file()


def test_data_folders_are_the_packages_own_on_disk_and_copies_from_a_zip(tmp_path):
    """On the file system a data folder is the package's own; from a zip (zipimport) it is a
    real directory holding the same files, and a folder the zip lacks is an empty one."""
    import mlirhlo_driver
    from mlirhlo_driver import resources

    assert resources.data_dir("gpu_specs") == Path(mlirhlo_driver.__file__).parent.parent / "gpu_specs"
    archive = tmp_path / "pkg.zip"
    files = {"a100.txtpb": b"gpu_device_info {}\n", "blob.bin": bytes(range(256))}
    with zipfile.ZipFile(archive, "w") as z:
        for name, data in files.items():
            z.writestr(f"mlirhlo_driver/gpu_specs/{name}", data)
    out = resources._extracted(zipfile.Path(archive, "mlirhlo_driver/gpu_specs/"), "gpu_specs")
    assert out.is_dir() and out.name == "gpu_specs" and not out.is_relative_to(tmp_path)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files
    empty = resources._extracted(zipfile.Path(archive, "mlirhlo_driver/pipelines/"), "pipelines")
    assert empty.is_dir() and list(empty.iterdir()) == []
