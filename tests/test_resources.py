"""resources.py: the package's data folders and the cache folder."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mlirhlo_driver import resources


def test_the_cache_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    """$XDG_CACHE_HOME/mlirhlo-driver, ~/.cache/mlirhlo-driver without it (or when empty),
    and a name in it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resources.cache_dir() == tmp_path / "xdg" / "mlirhlo-driver"
    assert resources.cache_dir("ptxas-probe.json") == tmp_path / "xdg" / "mlirhlo-driver" / "ptxas-probe.json"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset in (True, False):
        if unset:
            monkeypatch.delenv("XDG_CACHE_HOME")
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", "")
        assert resources.cache_dir() == tmp_path / "home" / ".cache" / "mlirhlo-driver"
        assert resources.cache_dir("") == tmp_path / "home" / ".cache" / "mlirhlo-driver"


def test_data_folders_are_the_packages_own_on_a_file_system():
    """A checkout or a wheel on disk: the data folder itself, no copy (in the checkout, at the
    repository's root)."""
    import mlirhlo_driver.gpu_specs

    assert resources.data_dir("gpu_specs") == Path(mlirhlo_driver.gpu_specs.__file__).parent
    assert resources.data_dir("gpu_specs") == Path(resources.__file__).parent.parent / "gpu_specs"
    assert (resources.data_dir("gpu_specs") / "h100_sxm.txtpb").is_file()


def test_a_zipped_data_folder_is_copied_out_file_by_file(tmp_path):
    """A zipped install: the folder's files copied to a temporary folder of that name (its
    subfolders are not data); a folder missing from the zip gives an empty folder."""
    import zipfile

    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("mlirhlo_driver/gpu_specs/a.txtpb", "spec a\n")
        z.writestr("mlirhlo_driver/gpu_specs/b.txtpb", b"\x00spec b")
        z.writestr("mlirhlo_driver/gpu_specs/sub/c.txtpb", "nested\n")
    root = zipfile.Path(archive, "mlirhlo_driver/")
    out = resources._extracted(root / "gpu_specs", "gpu_specs")
    assert out.name == "gpu_specs" and out.parent.name.startswith("mlirhlo-driver-")
    assert sorted(p.name for p in out.iterdir()) == ["a.txtpb", "b.txtpb"]
    assert (out / "a.txtpb").read_text() == "spec a\n" and (out / "b.txtpb").read_bytes() == b"\x00spec b"
    empty = resources._extracted(root / "pipelines", "pipelines")
    assert empty.is_dir() and list(empty.iterdir()) == [] and empty.parent != out.parent


def test_data_dir_copies_a_folder_that_is_not_on_the_file_system(tmp_path, monkeypatch):
    """data_dir: a package inside a zip (no Path) gives the copied-out folder."""
    import zipfile

    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("mlirhlo_driver/pipelines/p.txt", "pipeline\n")
    import importlib.resources

    monkeypatch.setattr(resources, "_on_file_system", lambda name: None)  # as zipimport's spec
    monkeypatch.setattr(importlib.resources, "files",
                        lambda package: zipfile.Path(archive, package.replace(".", "/") + "/"))
    got = resources.data_dir.__wrapped__("pipelines")  # past the per-process memo
    assert got.name == "pipelines" and (got / "p.txt").read_text() == "pipeline\n"


def test_a_copied_out_folder_is_removed_at_exit_even_if_already_gone(tmp_path):
    """The temporary copy goes when the process ends; one removed meanwhile is no error."""
    import subprocess
    import sys

    code = textwrap.dedent(f"""
        import shutil, sys, zipfile
        from mlirhlo_driver import resources
        with zipfile.ZipFile({str(tmp_path / "pkg.zip")!r}, "w") as z:
            z.writestr("pkg/gpu_specs/a.txtpb", "a")
        out = resources._extracted(zipfile.Path({str(tmp_path / "pkg.zip")!r}, "pkg/gpu_specs/"), "gpu_specs")
        print(out)
        if sys.argv[1] == "gone":
            shutil.rmtree(out.parent)
    """)
    for how in ("kept", "gone"):
        proc = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, timeout=120,
                              cwd=str(Path(resources.__file__).parent.parent))
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        out = Path(proc.stdout.strip())
        assert out.name == "gpu_specs" and not out.parent.exists()
