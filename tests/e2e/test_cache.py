"""``mlirhlo cache info|clear`` as a user runs it."""

from __future__ import annotations


def test_cache_info_and_clear(cli, private_site, monkeypatch):
    """cache info: directory, entries, bytes and the cap, one per line; cache clear: how many went."""
    from mlirhlo_driver.core import cache

    monkeypatch.setattr(cache, "info", lambda: {"directory": "/c", "entries": 3, "bytes": 1234, "max_bytes": 99})
    r = cli("cache", "info")
    assert (r.code, r.err) == (0, "")
    assert r.out == ("directory  /c\nentries    3\nsize       1234 bytes\n"
                     "max size   99 bytes (MLIRHLO_CACHE_MAX_BYTES; least recently used go first)\n")
    monkeypatch.setattr(cache, "clear", lambda: 3)
    r = cli("cache", "clear")
    assert (r.code, r.out) == (0, f"removed 3 entries from {cache.cache_dir()}\n")
