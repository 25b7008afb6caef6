"""commands/mlirhlo.py: the library side of the thin commands (``passes``' XLA listing)."""

from __future__ import annotations


def test_xla_pass_listing_on_the_given_modules_or_xla_reference(monkeypatch):
    """opt --list-passes --platform P: the target's options for its platform, on the given modules
    (loaded with --input-format/--args), or on none (XLA's reference module) without inputs."""
    from types import SimpleNamespace

    from mlirhlo_driver.commands import mlirhlo as commands
    from mlirhlo_driver.core import program
    from mlirhlo_driver.xla import passes as xla_passes

    loaded = []
    monkeypatch.setattr(program, "programs", lambda specs, options:
                        loaded.append((specs, options.input_format, options.args)) or ["module"])
    monkeypatch.setattr(xla_passes, "listing", lambda candidates, modules=None: f"{candidates} on {modules}\n")
    target = SimpleNamespace(platform="cuda", options_for=lambda platform: f"options for {platform}")
    assert commands.xla_pass_listing(target, []) == "['options for cuda'] on None\n"
    assert loaded == []
    assert commands.xla_pass_listing(target, ["m.py:f"], input_format="jax", args="f32[4]") == \
        "['options for cuda'] on ['module']\n"
    assert loaded == [(["m.py:f"], "jax", "f32[4]")]
