"""The driver's copy of jax's CUDA plugin (_native/plugin_copy.py, `mlirhlo cuda-plugin install`):
which plugin is used, how a copy is installed (by pip, offline here from wheels the test
builds), and the point of it all: after the README's set-up the user's own jax is quiet
while device-less CUDA compiles work."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mlirhlo_driver._native import jaxlib, plugin_copy
from mlirhlo_driver.errors import EnvironmentMismatch
from tests.conftest import REPO, CliResult, assert_mentions, assert_one_line_error

VERSION = "0.12.0.1"


def _found(cuda12=None, cuda13=None, lib=VERSION, copy12=None, copy13=None):
    return {"jax": lib, "jaxlib": lib, "jax-cuda12-plugin": cuda12, "jax-cuda13-plugin": cuda13,
            "jax-cuda12-plugin copy": copy12, "jax-cuda13-plugin copy": copy13}


def _library(copy: plugin_copy.Copy) -> Path:
    return copy.pjrt_dir / "jax_plugins" / f"xla_cuda{copy.cuda_major}" / "xla_cuda_plugin.so"


def _make_copy(root: Path, dist: str, version: str, *, complete: bool = True) -> plugin_copy.Copy:
    copy = plugin_copy.Copy(dist, version, root / f"{dist}-{version}")
    (copy.python_dir / dist.replace("-", "_")).mkdir(parents=True)
    if complete:
        _library(copy).parent.mkdir(parents=True)
        _library(copy).write_bytes(b"\x7fELF")
    return copy


@pytest.fixture
def copy_root(tmp_path, monkeypatch):
    root = tmp_path / "plugins"
    monkeypatch.setenv(plugin_copy.ENV, str(root))
    return root


# ------------------------------------------------------------------ installing

def _wheel(where: Path, dist: str, version: str, files: dict[str, bytes]) -> None:
    """A minimal wheel pip installs (py3-none-any, no hashes in RECORD)."""
    stem = f"{dist.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    files = {**files,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(where / f"{stem}-py3-none-any.whl", "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{info}/RECORD", record)


@pytest.fixture
def offline_index(tmp_path, monkeypatch):
    """pip finds the two plugin wheels in a local folder and asks no index."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "jax-cuda12-plugin", VERSION, {"jax_cuda12_plugin/__init__.py": b""})
    _wheel(wheels, "jax-cuda12-pjrt", VERSION, {"jax_plugins/xla_cuda12/__init__.py": b"",
                                                "jax_plugins/xla_cuda12/xla_cuda_plugin.so": b"\x7fELF"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


# --------------------------------------------------------------- the quiet set-up

def _site_plugin() -> str | None:
    found = jaxlib.installed_versions()
    return next((d for d in jaxlib.CUDA_PLUGIN_DISTS if found.get(d)), None)


# ------------------------------------------------------------ which plugin is used

def test_root_is_the_environments_share_dir_unless_the_variable_names_one(monkeypatch, tmp_path):
    """Per environment (sys.prefix), outside sys.path; MLIRHLO_CUDA_PLUGIN_DIR overrides."""
    monkeypatch.delenv(plugin_copy.ENV, raising=False)
    assert plugin_copy.root() == Path(sys.prefix, "share", "mlirhlo-driver", "cuda-plugins")
    assert not any(Path(p) == plugin_copy.root() for p in sys.path)
    monkeypatch.setenv(plugin_copy.ENV, str(tmp_path))
    assert plugin_copy.root() == tmp_path


def test_copies_are_complete_ones_cuda13_first(copy_root):
    """A directory counts with both its parts (an install renames it into place whole)."""
    _make_copy(copy_root, "jax-cuda12-plugin", VERSION)
    _make_copy(copy_root, "jax-cuda13-plugin", VERSION)
    _make_copy(copy_root, "jax-cuda12-plugin", "0.9.0", complete=False)
    (copy_root / ".jax-cuda12-plugin-0.10.2.abc").mkdir()  # an install under way
    (copy_root / "notes.txt").write_text("x")
    found = [(c.dist, c.version) for c in plugin_copy.copies()]
    assert found == [("jax-cuda13-plugin", VERSION), ("jax-cuda12-plugin", VERSION)]
    assert plugin_copy.find("jax-cuda12-plugin", "0.9.0") is None
    assert plugin_copy.find("jax-cuda12-plugin", VERSION).pjrt_dir == copy_root / f"jax-cuda12-plugin-{VERSION}" / "pjrt"


def test_no_root_no_copies(copy_root):
    assert plugin_copy.copies() == []


@pytest.mark.parametrize(("found", "expected"), [
    # the user's own plugin at jaxlib's version wins over the driver's copy
    (_found(cuda12=VERSION, copy13=VERSION), ("jax-cuda12-plugin", VERSION, False)),
    # none installed: the copy at jaxlib's version
    (_found(copy12=VERSION), ("jax-cuda12-plugin", VERSION, True)),
    # a copy for another jaxlib is not used
    (_found(copy12="0.10.2"), ("jax-cuda12-plugin", None, False)),
    # an installed plugin of another version: the matching copy is used instead
    (_found(cuda12="0.10.2", copy12=VERSION), ("jax-cuda12-plugin", VERSION, True)),
    # both copies: CUDA 13 first, as for installed plugins
    (_found(copy12=VERSION, copy13=VERSION), ("jax-cuda13-plugin", VERSION, True)),
])
def test_cuda_plugin_prefers_the_users_own_then_the_copy(copy_root, found, expected):
    for major in (12, 13):
        if found[f"jax-cuda{major}-plugin copy"]:
            _make_copy(copy_root, f"jax-cuda{major}-plugin", found[f"jax-cuda{major}-plugin copy"])
    plugin = jaxlib.cuda_plugin(found)
    assert (plugin.dist, plugin.version, plugin.copy is not None) == expected
    if plugin.copy is not None:
        assert plugin.copy.path == copy_root / f"{plugin.dist}-{plugin.version}"


def test_installed_versions_name_the_copies_at_jaxlibs_version(copy_root, monkeypatch):
    """Only a complete copy at the installed jaxlib's version counts."""
    monkeypatch.setattr(jaxlib, "_read_installed_versions", lambda: tuple(_found().items())[:4])
    monkeypatch.setattr(jaxlib, "_read_plugin_copies",
                        lambda: frozenset((c.dist, c.version) for c in plugin_copy.copies()))
    _make_copy(copy_root, "jax-cuda13-plugin", "0.10.2")
    partial = _make_copy(copy_root, "jax-cuda12-plugin", VERSION, complete=False)
    assert jaxlib.installed_versions() == _found()
    partial.pjrt_dir.mkdir()
    assert jaxlib.installed_versions() == _found(copy12=VERSION)


def test_version_line_and_library_path_of_a_copy(copy_root, monkeypatch):
    """--version says which copy is used; the library path is the copy's, not jax_plugins'."""
    copy = _make_copy(copy_root, "jax-cuda12-plugin", VERSION)
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(copy12=VERSION))
    assert f"jax-cuda12-plugin {VERSION} (the driver's copy, {copy.path})" in jaxlib.version_lines()
    assert jaxlib.native_library_path("cuda_plugin") == str(_library(copy))
    jaxlib.check_cuda_plugin()  # a copy at jaxlib's version is enough


def test_no_plugin_names_the_install_command(copy_root, monkeypatch):
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found())
    with pytest.raises(EnvironmentMismatch) as e:
        jaxlib.check_cuda_plugin()
    assert_mentions(e.value.hint, "mlirhlo cuda-plugin install")
    assert_mentions(jaxlib.version_lines()[2], "mlirhlo cuda-plugin install")


@pytest.mark.slow
def test_install_puts_both_packages_apart_once(copy_root, offline_index):
    """The plugin's Python package under python/, the PJRT library under pjrt/; a second
    install finds it there; --force installs it again."""
    copy, installed = plugin_copy.install(12, VERSION)
    assert installed and copy.path == copy_root / f"jax-cuda12-plugin-{VERSION}"
    assert (copy.python_dir / "jax_cuda12_plugin" / "__init__.py").is_file()
    assert not (copy.python_dir / "jax_plugins").exists()
    assert _library(copy).read_bytes() == b"\x7fELF"
    assert oct(copy.path.stat().st_mode & 0o777) == "0o755"
    assert plugin_copy.install(12, VERSION) == (copy, False)
    (copy.python_dir / "stale").write_text("x")
    assert plugin_copy.install(12, VERSION, force=True) == (copy, True)
    assert not (copy.python_dir / "stale").exists()
    assert sorted(os.listdir(copy_root)) == [copy.path.name]  # no staging left


def test_install_failure_is_pips_error_and_leaves_nothing(copy_root, offline_index):
    with pytest.raises(EnvironmentMismatch) as e:
        plugin_copy.install(12, "0.10.2")
    assert_mentions(e.value.message, "pip", "jax-cuda12-plugin==0.10.2", "ERROR:")
    assert_mentions(e.value.hint, "PIP_INDEX_URL", "PIP_FIND_LINKS")
    assert os.listdir(copy_root) == []


def test_install_into_an_unwritable_place_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv(plugin_copy.ENV, str(blocker / "sub"))
    with pytest.raises(EnvironmentMismatch) as e:
        plugin_copy.install(12, VERSION)
    assert "\n" not in e.value.message
    assert_mentions(e.value.message, str(blocker / "sub"), "Not a directory")
    assert_mentions(e.value.hint, plugin_copy.ENV, "writable")


def _pip_answers(monkeypatch, returncode: int, stderr: str) -> None:
    """pip (plugin_copy's subprocess) exits with ``returncode``, saying ``stderr``, installing nothing."""
    monkeypatch.setattr(plugin_copy.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(
        cmd, returncode, "", stderr))


@pytest.mark.golden
@pytest.mark.parametrize("case, message, hint", [
    ("unwritable", "cannot write the CUDA plugin's directory {root}: Not a directory",
     "set MLIRHLO_CUDA_PLUGIN_DIR to a writable directory"),
    ("pip fails", "pip could not install jax-cuda12-plugin==0.10.2: ERROR: No matching distribution found for "
     "jax-cuda12-plugin==0.10.2", "pip's index settings (PIP_INDEX_URL, PIP_FIND_LINKS) apply"),
    ("no library", "jax-cuda12-pjrt 0.10.2 has no xla_cuda_plugin.so", None),
], ids=["unwritable", "pip-fails", "no-library"])
def test_plugin_install_errors_exactly(tmp_path, monkeypatch, case, message, hint):
    """plugin_copy.install's refusals word for word: a directory it cannot write, pip's last
    ERROR line, a pjrt package without the PJRT library."""
    root = tmp_path / "plugins"
    if case == "unwritable":
        (tmp_path / "file").write_text("x")
        root = tmp_path / "file" / "sub"
    monkeypatch.setenv(plugin_copy.ENV, str(root))
    _pip_answers(monkeypatch, *{
        "pip fails": (1, "Looking in links: /w\nERROR: Could not find a version that satisfies the "
                         "requirement jax-cuda12-plugin==0.10.2\nERROR: No matching distribution found for "
                         "jax-cuda12-plugin==0.10.2\n"),
    }.get(case, (0, "")))
    with pytest.raises(EnvironmentMismatch) as e:
        plugin_copy.install(12, "0.10.2")
    assert (e.value.message, e.value.hint) == (message.format(root=root), hint)


def test_cli_refuses_an_unknown_cuda_major():
    proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver", "cuda-plugin", "install", "--cuda", "11"],
                          capture_output=True, text=True)
    # (the words: tests/cuda/test_plugin.py)
    assert_one_line_error(CliResult(proc.returncode, proc.stdout, proc.stderr), facts=("--cuda 11", "12, 13"))


@pytest.mark.slow
def test_after_the_readme_set_up_the_users_jax_is_quiet_and_cuda_compiles():
    """The user's own snippet prints nothing on stderr, and a device-less CUDA compile works,
    in this environment, set up as the README says (CI's newest cell). An environment whose
    own jax CUDA plugin is installed keeps it and its behaviour (CI's other cells)."""
    site = _site_plugin()
    if site is not None:
        pytest.skip(f"{site} is installed in this environment (a user's own jax CUDA set-up, kept as it is)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "TF_CPP"))}
    user = subprocess.run([sys.executable, "-c", "import jax.numpy as jnp; print(jnp.zeros(3))"],
                          capture_output=True, text=True, env=env, cwd=REPO)
    assert (user.returncode, user.stdout, user.stderr) == (0, "[0. 0. 0.]\n", "")
    ptx = subprocess.run([sys.executable, "-m", "mlirhlo_driver", "opt", "--platform=CUDA", "--stage=ptx",
                          "--gpu-spec", "h100_sxm", "tests/data/softmax.vhlo"],
                         capture_output=True, text=True, env=env, cwd=REPO)
    assert ptx.returncode == 0, ptx.stderr
    assert ".target sm_90a" in ptx.stdout.splitlines()
    assert ptx.stderr == ""


def test_the_copys_package_is_importable_by_name_only(copy_root, monkeypatch):
    """jax_cuda12_plugin comes from the copy, but the copy stays off sys.path: a child that
    inherits sys.path (isolate's spawned helper) must not take its dist-info for an
    installed plugin and then look for the library in site-packages."""
    copy = _make_copy(copy_root, "jax-cuda12-plugin", VERSION)
    (copy.python_dir / "jax_cuda12_plugin" / "__init__.py").write_text("")
    (copy.python_dir / f"jax_cuda12_plugin-{VERSION}.dist-info").mkdir()
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(copy12=VERSION))
    # (another test may have made the real copy importable already)
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if not getattr(f, "mlirhlo_copy", None)])
    path = list(sys.path)
    jaxlib._use_plugin_copy()
    jaxlib._use_plugin_copy()  # once
    finders = [f for f in sys.meta_path if getattr(f, "mlirhlo_copy", None)]
    assert len(finders) == 1 and sys.path == path
    spec = finders[0].find_spec("jax_cuda12_plugin")
    assert spec.origin == str(copy.python_dir / "jax_cuda12_plugin" / "__init__.py")
    assert finders[0].find_spec("jax_cuda12_plugin_other") is None
    import importlib.metadata

    assert not any(str(copy.python_dir) in str(getattr(d, "_path", "")) for d in importlib.metadata.distributions())
