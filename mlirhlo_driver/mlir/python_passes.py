"""Passes written in Python, used like native ones in textual pipelines.

A pass is a function of one operation, registered under a pipeline name::

    import mlirhlo_driver
    from jaxlib.mlir.dialects import stablehlo

    @mlirhlo_driver.register_pass("fold-double-negate", anchor="func.func",
                                  description="neg(neg(x)) -> x")
    def fold_double_negate(func_op):
        ...  # rewrite with the MLIR Python bindings; raise to fail the pass

``anchor`` is "func.func" (the function gets each function in turn),
"builtin.module" (it gets the module) or "any". The driver adds the pass to
the same PassManager as the native passes around it, so IR printing, timing
and verification cover it. Raising an exception fails the pass with its
name, the module, and a reproducer, as for a native pass.

Passes come from this package's built-in ones (mlir/builtin_passes.py), from
``--load-pass-plugin FILE.py``, and from installed packages' entry points in
the ``mlirhlo_driver.passes`` group (an entry point names a module to import).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable, Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from .ops import functions

ANCHORS = ("func.func", "builtin.module", "any")
ENTRY_POINT_GROUP = "mlirhlo_driver.passes"
_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class PythonPass:
    name: str
    fn: Callable[[Any], Any]
    anchor: str
    description: str
    origin: str            # "builtin", a plugin file path, or "entry point NAME"

    def plugin_file(self) -> str | None:
        return self.origin if self.origin.endswith(".py") else None


_registry: dict[str, PythonPass] = {}
_current_origin = "python"
_loading: set[str] = set()  # names registered by the plugin being loaded now


class PassNameClash(ValueError):
    """A pass name that is taken (by another Python pass or a native pass)."""


def register_pass(name: str, *, anchor: str = "func.func", description: str = "") -> Callable:
    """Decorator: register ``fn(op)`` as the pass ``name`` (see the module docstring)."""
    if not _NAME.match(name):
        raise ValueError(f"pass name '{name}' must look like 'my-pass' (lowercase, dashes)")
    if anchor not in ANCHORS:
        raise ValueError(f"anchor must be one of {', '.join(ANCHORS)}")

    def decorate(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        doc = description or ((fn.__doc__ or "").strip().splitlines() or [""])[0]
        # One name, one pass: a second registration is an error, not "the last one wins".
        # Re-loading the same plugin file (same origin, another load) replaces its passes.
        previous = _registry.get(name)
        if name in _loading or (previous is not None and previous.origin != _current_origin):
            where = "earlier in this file" if name in _loading else f"by {previous.origin}"
            raise PassNameClash(f"pass '{name}' is already registered {where}")
        _loading.add(name)
        _registry[name] = PythonPass(name, fn, anchor, doc, _current_origin)
        return fn

    return decorate


def registered() -> list[PythonPass]:
    load_builtin()
    load_entry_points()
    return sorted(_registry.values(), key=lambda p: p.name)


def get(name: str) -> PythonPass | None:
    registered()
    return _registry.get(name)


_builtin_loaded = False
_entry_points_loaded = False


def load_builtin() -> None:
    global _builtin_loaded, _current_origin
    if _builtin_loaded:
        return
    _builtin_loaded = True
    _current_origin = "builtin"
    try:
        from .builtin_passes import PASSES

        for name, anchor, description, fn in PASSES:
            register_pass(name, anchor=anchor, description=description)(fn)
    finally:
        _current_origin = "python"


def load_entry_points() -> None:
    global _entry_points_loaded, _current_origin
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    specs = entry_point_specs()
    if not specs:
        return
    from importlib.metadata import EntryPoint

    for name, value, _ in specs:
        ep = EntryPoint(name, value, ENTRY_POINT_GROUP)
        _current_origin = f"entry point {ep.name}"
        try:
            ep.load()
        except Exception as e:
            raise InputError(f"cannot load pass plugin entry point '{ep.name}' ({ep.value}): "
                             f"{type(e).__name__}: {e}") from None
        finally:
            _current_origin = "python"


def entry_point_specs() -> list[tuple[str, str, str]]:
    """``(name, value, distribution version)`` of each installed entry point in
    ENTRY_POINT_GROUP, sorted: what ``importlib.metadata`` finds on ``sys.path``,
    through the on-disk record of that scan (``installed.py``)."""
    from .. import installed

    return list(installed.entry_points(ENTRY_POINT_GROUP))


def load_plugin(path: str, reserved: Callable[[], Container[str]] | None = None) -> list[str]:
    """Import a .py file whose top level registers passes; returns their names.

    A pass named in ``reserved()`` (jaxlib's own passes: ``passes.load_plugin``) is
    refused, and nothing the file registered is kept."""
    global _current_origin
    file = Path(path)
    if not file.is_file():
        raise InputError("no such pass plugin file", file=path)
    resolved = str(file.resolve())
    before = set(_registry)
    module_name = f"mlirhlo_plugin_{abs(hash(resolved))}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise InputError("not a Python file", file=path)
    module = importlib.util.module_from_spec(spec)
    _current_origin = resolved
    _loading.clear()
    # A user's file is read, never written beside: no __pycache__ next to their plugin.
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise InputError(f"syntax error in pass plugin: {e.msg}", file=path, line=e.lineno,
                         col=e.offset) from None
    except PassNameClash as e:
        _forget(resolved)
        raise InputError(str(e), file=path, line=_plugin_line(e, resolved)) from None
    except Exception as e:
        line = _plugin_line(e, resolved)
        raise InputError(f"pass plugin failed to load: {type(e).__name__}: {e}", file=path,
                         line=line) from None
    finally:
        sys.dont_write_bytecode = writes_bytecode
        _current_origin = "python"
        _loading.clear()
    added = sorted(set(_registry) - before) or sorted(
        n for n, p in _registry.items() if p.origin == resolved)
    native = reserved() if reserved is not None and added else ()
    for name in added:
        if name in native:
            fn = _registry[name].fn
            _forget(resolved)
            line = getattr(getattr(fn, "__code__", None), "co_firstlineno", None)
            raise InputError(f"pass '{name}' is a native jaxlib pass; a plugin cannot replace it",
                             file=path, line=line, hint="give the Python pass another name")
    if not added:
        raise InputError("pass plugin registers no pass", file=path,
                         hint="decorate a function with @mlirhlo_driver.register_pass(...)")
    return added


def unload_plugins() -> None:
    """Forget every pass that plugin files registered (a command starts with only its own)."""
    for name in [n for n, p in _registry.items() if p.plugin_file()]:
        del _registry[name]


def _forget(origin: str) -> None:
    """Drop every pass a plugin registered (it failed to load: none of it is used)."""
    for name in [n for n, p in _registry.items() if p.origin == origin]:
        del _registry[name]


def _plugin_line(e: BaseException, file: str) -> int | None:
    tb = e.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == file:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def runner(p: PythonPass) -> Callable[[Any, Any], None]:
    """The callable handed to PassManager.add: runs ``p`` at its anchor.

    The bindings cannot nest a pass manager, so every Python pass runs at
    module level; a function pass visits the module's functions itself.
    """

    def run(op: Any, pass_: Any) -> None:
        del pass_  # failure is signalled by raising
        targets = functions(op) if p.anchor == "func.func" else [op]
        for target in targets:
            p.fn(target)

    run.__name__ = p.name
    return run
