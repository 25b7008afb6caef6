"""installed.py: what is installed (distributions, entry points), scanned once per
sys.path entry and read back from disk.
"""

from __future__ import annotations

import json
import os

import pytest

from mlirhlo_driver import installed

# ---------------------------------- what the listings read: entry points, data folders


def _dist_with_entry_points(site, version: str, entry_points: str):
    info = site / f"aa_listed-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: aa-listed\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)
    return info


@pytest.fixture(autouse=True)
def _no_helper_keeps_fake_versions():
    """isolate's helper is a fork of this process: one started while a test fakes the
    versions would keep the fake for every later test. Each test here ends without one."""
    yield
    from mlirhlo_driver._native import isolate

    isolate.shutdown()


# --------------------------------------------- the metadata scan, kept on disk

def _dist(site, name, version):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return info


def test_entry_points_of_a_group_are_sorted_with_their_versions(private_site):
    """installed.entry_points: (name, value, version) of the group's entry points, sorted by
    name; an edit of entry_points.txt in place is seen (the record is keyed on it)."""
    info = _dist_with_entry_points(private_site, "1.5", "[aa.listed]\nzeta = pkg.z:run\nalpha = pkg.a\n\n"
                                                         "[other.group]\nbeta = pkg.b\n")
    assert installed.entry_points("aa.listed") == (("alpha", "pkg.a", "1.5"), ("zeta", "pkg.z:run", "1.5"))
    assert installed.entry_points("aa.listed") == (("alpha", "pkg.a", "1.5"), ("zeta", "pkg.z:run", "1.5"))
    assert installed.entry_points("aa.no.such.group") == ()
    (info / "entry_points.txt").write_text("[aa.listed]\nalpha = pkg.a\n")
    assert installed.entry_points("aa.listed") == (("alpha", "pkg.a", "1.5"),)
    assert installed.versions(("aa-listed", "aa-not-installed")) == {"aa-listed": "1.5", "aa-not-installed": None}


def test_the_record_holds_the_newest_variants_only(private_site, tmp_path):
    """One record file per interpreter under the cache folder; it keeps at most _VARIANTS (16)
    variants, newest first; a request scanned again on the same sys.path replaces its variant."""
    import sys
    import zlib

    assert installed._VARIANTS == 16
    record = tmp_path / "xdg" / "mlirhlo-driver" / f"installed-{zlib.crc32(sys.executable.encode()):08x}.json"
    requests = [("versions", f"aa-dist-{i}") for i in range(18)]
    for request in requests:
        installed._facts(request)
    variants = json.loads(record.read_text())["variants"]
    assert [tuple(v["request"]) for v in variants] == requests[::-1][:16]
    _dist_with_entry_points(private_site, "1.0", "")  # an install: request 10 is scanned again
    assert installed._facts(requests[10])["versions"] == {"aa-dist-10": None}
    variants = json.loads(record.read_text())["variants"]
    assert len(variants) == 16 and tuple(variants[0]["request"]) == requests[10]
    assert [tuple(v["request"]) for v in variants].count(requests[10]) == 1
    assert sorted(p.name for p in record.parent.iterdir()) == [record.name]  # no temp file left


def test_a_sys_path_entry_is_stamped_by_its_distributions_or_its_size_and_time(tmp_path):
    """A folder: its metadata folders by name (other files do not count); a zip: size and
    mtime; a missing entry: None."""
    folder = tmp_path / "site"
    folder.mkdir()
    for name in ("b-1.0.dist-info", "a-2.0.egg-info", "c.egg-link", "module.py", "pkg", "d.dist-info.bak"):
        (folder / name).mkdir() if "." not in name or name.endswith("info") else (folder / name).write_text("")
    assert installed._entry_stamp(str(folder)) == ["a-2.0.egg-info", "b-1.0.dist-info", "c.egg-link"]
    archive = tmp_path / "site.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))
    st = os.stat(archive)
    assert installed._entry_stamp(str(archive)) == [22, st.st_mtime_ns]
    assert installed._entry_stamp(str(tmp_path / "missing")) is None
    assert installed._stat(str(tmp_path / "missing")) is None


def test_installed_versions_are_scanned_once_then_read_from_disk(private_site, monkeypatch):
    """The scan (50+ ms a process) runs on the first command only; the record says the same."""
    import importlib.metadata

    from mlirhlo_driver import installed

    _dist(private_site, "fake-dist", "1.2.3")
    first = installed._facts(("versions", "fake-dist", "jaxlib", "no-such-dist"))["versions"]
    assert first["fake-dist"] == "1.2.3" and first["no-such-dist"] is None
    assert first["jaxlib"] == importlib.metadata.version("jaxlib")

    def no_scan(*_, **__):
        raise AssertionError("metadata scanned again")

    monkeypatch.setattr(importlib.metadata, "distribution", no_scan)
    # Other files written into a sys.path directory (python -m puts the working directory
    # there) change no distribution.
    (private_site / "notes.txt").write_text("x")
    (private_site / "scratch").mkdir()
    assert installed._facts(("versions", "fake-dist", "jaxlib", "no-such-dist"))["versions"] == first


def test_installed_versions_see_an_install_an_upgrade_and_an_edit(private_site):
    from mlirhlo_driver import installed

    def version():
        return installed._facts(("versions", "fake-dist"))["versions"]["fake-dist"]

    assert version() is None
    info = _dist(private_site, "fake-dist", "1.0")  # an install: the sys.path entry changes
    assert version() == "1.0"
    (info / "METADATA").rename(info / "METADATA.old")  # an upgrade, as pip does it
    info.rename(private_site / "fake_dist-2.0.dist-info")
    info = private_site / "fake_dist-2.0.dist-info"
    (info / "METADATA.old").rename(info / "METADATA")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-dist\nVersion: 2.0\n")
    assert version() == "2.0"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-dist\nVersion: 2.0.1\n")  # in place
    assert version() == "2.0.1"


def test_an_unwritable_cache_only_costs_the_scan(private_site, tmp_path, monkeypatch):
    from mlirhlo_driver import installed

    (tmp_path / "xdg").write_text("")  # a file where the cache directory should be
    _dist(private_site, "fake-dist", "3.0")
    assert installed._facts(("versions", "fake-dist"))["versions"]["fake-dist"] == "3.0"


def test_the_record_keeps_every_variant_up_to_its_bound(private_site, monkeypatch):
    """One record per venv holds a variant per request and sys.path (console script,
    python -m, pytest, ...): the _VARIANTS newest are all answered without a scan."""
    import importlib.metadata

    from mlirhlo_driver import installed

    _dist(private_site, "fake-dist", "1.2.3")
    requests = [("versions", "fake-dist", f"no-such-dist-{i}") for i in range(installed._VARIANTS)]
    for request in requests:
        installed._facts(request)

    def no_scan(*_, **__):
        raise AssertionError("metadata scanned again")

    monkeypatch.setattr(importlib.metadata, "distribution", no_scan)
    for request in requests:
        assert installed._facts(request)["versions"]["fake-dist"] == "1.2.3"
