"""Which libtpu TPU compiles load (_native/libtpu.py): jax's pin read from its metadata, the
driver's copies under $MLIRHLO_TPU_PLUGIN_DIR, and the one-line error without any. Nothing
here loads libtpu or runs pip."""

from __future__ import annotations

import pytest

from mlirhlo_driver._native import libtpu
from mlirhlo_driver.errors import EnvironmentMismatch
from tests.conftest import assert_mentions


@pytest.fixture
def copies_in(tmp_path, monkeypatch):
    """An empty copies directory, and no libtpu in site-packages."""
    monkeypatch.setenv(libtpu.ENV, str(tmp_path))
    monkeypatch.setattr(libtpu, "_installed", lambda: None)
    return tmp_path


def _copy(root, version):
    lib = root / f"libtpu-{version}" / "libtpu"
    lib.mkdir(parents=True)
    (lib / libtpu.LIBRARY).write_bytes(b"")
    return lib / libtpu.LIBRARY


def test_jax_pins_a_libtpu_in_its_tpu_extra():
    pin = libtpu.jax_pin()
    assert pin is not None and pin.startswith("libtpu==")


@pytest.mark.parametrize("version, pin, ok", [
    ("0.0.50.1", "libtpu==0.0.50.*", True),
    ("0.0.50", "libtpu==0.0.50.*", True),
    ("0.0.501", "libtpu==0.0.50.*", False),
    ("0.0.48", "libtpu==0.0.50.*", False),
    ("0.0.42.1", "libtpu==0.0.42.1", True),
    ("0.0.42", None, True),
])
def test_pin_matches(version, pin, ok):
    assert libtpu.pin_matches(version, pin) is ok


def test_no_libtpu_is_one_error_naming_the_install_command(copies_in):
    assert libtpu.in_use() is None
    with pytest.raises(EnvironmentMismatch) as e:
        libtpu.require()
    assert_mentions(e.value.format(), "libtpu", libtpu.INSTALL_COMMAND)
    assert libtpu.INSTALL_COMMAND in libtpu.version_line()


def test_the_copy_at_jaxs_pin_is_used_before_others(copies_in, monkeypatch):
    monkeypatch.setattr(libtpu, "jax_pin", lambda: "libtpu==0.0.50.*")
    _copy(copies_in, "0.0.52")
    wanted = _copy(copies_in, "0.0.50.1")
    (copies_in / ".libtpu.half-written").mkdir()  # a staging directory is no copy
    found = libtpu.in_use()
    assert found is not None and found.copy and found.version == "0.0.50.1" and found.library == str(wanted)
    assert "0.0.50.1" in libtpu.version_line() and "driver's copy" in libtpu.version_line()


def test_a_copy_off_the_pin_is_used_and_said(copies_in, monkeypatch):
    monkeypatch.setattr(libtpu, "jax_pin", lambda: "libtpu==0.0.50.*")
    _copy(copies_in, "0.0.48")
    assert libtpu.in_use().version == "0.0.48"
    assert_mentions(libtpu.version_line(), "0.0.48", "libtpu==0.0.50.*", libtpu.INSTALL_COMMAND)


def test_a_libtpu_in_site_packages_is_used_as_it_is(copies_in, monkeypatch):
    _copy(copies_in, "0.0.50.1")
    mine = libtpu.LibTpu("0.0.50.1", "/site/libtpu/libtpu.so", copy=False)
    monkeypatch.setattr(libtpu, "_installed", lambda: mine)
    assert libtpu.in_use() == mine


def test_the_static_profile_is_asked_of_libtpu_0_0_42_and_later_only():
    # 0.0.34 (jax 0.9's pin) writes no textproto and aborts writing its own form for v6e
    def found(version: str) -> libtpu.LibTpu:
        return libtpu.LibTpu(version, "/x/libtpu.so", copy=True)

    assert not libtpu.writes_static_profile(found("0.0.34"))
    assert libtpu.writes_static_profile(found("0.0.42.1"))
    assert libtpu.writes_static_profile(found("0.0.50.1"))
    assert libtpu.writes_static_profile(found("0.1.0"))
