"""Passes written in Python, used like native ones in textual pipelines.

A pass is a function of one operation, made a pass by a decorator::

    import mlirhlo_driver as mh

    @mh.register_pass("fold-double-negate", anchor="func.func", description="neg(neg(x)) -> x")
    def fold_double_negate(func_op):
        ...  # rewrite with the MLIR Python bindings; raise to fail the pass

    q = p.optimize("cse,fold-double-negate", python_passes=[fold_double_negate])

``anchor`` is "func.func" (the function gets each function in turn),
"builtin.module" (it gets the module) or "any". The driver adds the pass to
the same PassManager as the native passes around it, so IR printing, timing
and verification cover it. Raising an exception fails the pass with its
name, the module, and a reproducer, as for a native pass.

Promises:

* The decorator returns a :class:`PythonPass` (called, it calls the function) and
  registers it nowhere: nothing in the process changes. A pipeline names the passes of
  the :class:`PassSet` it is given (``python_passes=`` of ``Program.optimize``,
  ``pipeline.resolve``, ``batch.opt.run_opt``; a command's ``--load-pass-plugin``
  files), and no other: a plugin loaded for one pipeline, or a pass a notebook made, is
  invisible to every other pipeline of the process.
* A :class:`PassSet` never changes; ``with_passes`` and ``with_plugins`` make a new one.
  :meth:`PassSet.default` is the passes shipped with the driver (mlir/builtin_passes.py)
  and those of installed packages' entry points in the ``mlirhlo_driver.passes`` group
  (an entry point names a module to import): read once per set of installed entry
  points. One name is one pass in a set: a second pass of that name is refused
  (:class:`PassNameClash`), unless it is the same pass; the same plugin file given twice
  is loaded once.
* A plugin file (``--load-pass-plugin FILE.py``) is read once, its bytes kept in the
  set: its passes run, in this process and in a batch's workers (the set is sent as its
  recipe: each worker runs the same bytes), are those bytes, and the stage cache keys
  a pipeline by them (core/program.py).
* While a plugin file or an entry point is loaded, the decorator also hands each pass
  it makes to that load (a context variable, set for the load only): that is how a file
  whose top level uses ``@mlirhlo_driver.register_pass`` gives its passes.
"""

from __future__ import annotations

import contextvars
import functools
import importlib.util
import os
import re
import sys
import types
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from .ops import functions

ANCHORS = ("func.func", "builtin.module", "any")
ENTRY_POINT_GROUP = "mlirhlo_driver.passes"
BUILTIN = "builtin"
INTERACTIVE = "python"  # the origin of a pass made by running code (a notebook): its code is in no file
_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class PythonPass:
    """A pass written in Python, as :func:`register_pass` makes it: its pipeline ``name``,
    the function ``fn`` of one op, its ``anchor``, a one-line ``description`` and its
    ``origin`` ("builtin", a plugin file's path, "entry point NAME", or "python": made by
    running code). Calling it calls ``fn``. Hand it to a pipeline in a :class:`PassSet`
    (or ``Program.optimize(..., python_passes=[it])``)."""

    name: str
    fn: Callable[[Any], Any]
    anchor: str
    description: str
    origin: str

    def __call__(self, op: Any) -> Any:
        """Run the function on ``op`` (the decorated function, still callable as before)."""
        return self.fn(op)

    def plugin_file(self) -> str | None:
        """The plugin file it came from; None for the other origins."""
        return self.origin if self.origin.endswith(".py") else None


class PassNameClash(ValueError):
    """A pass name that is taken (by another Python pass or a native pass)."""


@dataclass
class _Loading:
    """A plugin file or entry point being loaded: where its passes come from, the passes
    of the set it joins, and what it gave so far."""

    origin: str
    taken: Mapping[str, PythonPass]
    found: dict[str, PythonPass] = field(default_factory=dict)

    def add(self, p: PythonPass) -> None:
        # One name, one pass: a second registration is an error, not "the last one wins".
        if p.name in self.found:
            raise PassNameClash(f"pass '{p.name}' is already registered earlier in this file")
        taken = self.taken.get(p.name)
        if taken is not None and not _same(taken, p):
            raise PassNameClash(_clash(p.name, taken))
        if taken is None:
            self.found[p.name] = p


# Set only while a plugin file or an entry point loads (PassSet.with_plugins, PassSet.default),
# reset after it: the decorator's hand-over to that load, never a registry.
_loading: contextvars.ContextVar[_Loading | None] = contextvars.ContextVar("mlirhlo_pass_loading", default=None)


def register_pass(name: str, *, anchor: str = "func.func", description: str = "") -> Callable[[Any], PythonPass]:
    """Decorator: ``fn(op)`` as the Python pass ``name``, a :class:`PythonPass`.

    ``anchor``: "func.func" (``fn`` gets each function), "builtin.module" (the module) or
    "any". ``description``: one line for the pass listing (default: the first line of
    ``fn``'s docstring). The pass is registered nowhere: give it to the pipeline that
    names it (``Program.optimize(..., python_passes=[it])``, :meth:`PassSet.with_passes`).
    In a plugin file (``--load-pass-plugin FILE.py``, :meth:`PassSet.with_plugins`) or a
    module an entry point names, the passes its top level decorates are the file's passes.
    ValueError for a name that is not lowercase words joined by dashes, or another anchor."""
    if not _NAME.match(name):
        raise ValueError(f"pass name '{name}' must look like 'my-pass' (lowercase, dashes)")
    if anchor not in ANCHORS:
        raise ValueError(f"anchor must be one of {', '.join(ANCHORS)}")

    def decorate(fn: Any) -> PythonPass:
        fn = fn.fn if isinstance(fn, PythonPass) else fn
        doc = description or ((fn.__doc__ or "").strip().splitlines() or [""])[0]
        loading = _loading.get()
        p = PythonPass(name, fn, anchor, doc, loading.origin if loading is not None else INTERACTIVE)
        if loading is not None:
            loading.add(p)
        return p

    return decorate


def _same(a: PythonPass, b: PythonPass) -> bool:
    """The same pass met twice (one object, or one function under one name and anchor)."""
    return a is b or (a.fn is b.fn and a.anchor == b.anchor)


def _clash(name: str, taken: PythonPass) -> str:
    return f"pass '{name}' is already registered by {taken.origin}"


@dataclass(frozen=True)
class Plugin:
    """A pass plugin file as a :class:`PassSet` loaded it: its resolved ``path`` and the
    ``source`` bytes that ran (what the stage cache keys a pipeline by)."""

    path: str
    source: bytes = field(repr=False)


class PassSet(Mapping[str, PythonPass]):
    """The Python passes a pipeline may name, by name: a value the caller holds and hands
    to the pipeline (``Program.optimize(..., python_passes=...)``), never changed.

    ``PassSet(passes)`` holds just ``passes``; :meth:`default` the built-in and installed
    ones; :meth:`with_passes` and :meth:`with_plugins` make a new set with more. A name is
    one pass: a second pass of that name is a :class:`PassNameClash`. It is a mapping
    (``s["fold-involutions"]``, ``"my-pass" in s``, ``s.get(name)``; iteration in name
    order). A set pickles as its recipe (which base, the plugin files' bytes, the passes
    added), made again where it is unpickled (a batch's workers)."""

    def __init__(self, passes: Iterable[PythonPass] = ()) -> None:
        """A set of exactly ``passes`` (no built-in or installed one): :meth:`default` for those."""
        passes = tuple(passes)
        self._base = "none"
        self._steps: tuple[Plugin | tuple[PythonPass, ...], ...] = (passes,) if passes else ()
        self._entry_points: tuple[tuple[str, str, str], ...] = ()
        self._table: dict[str, PythonPass] | None = {}
        for p in passes:
            _add(self._table, p)

    # ------------------------------------------------------------------ made

    @staticmethod
    def default() -> PassSet:
        """The passes shipped with the driver and those of the installed packages' entry
        points (group ``mlirhlo_driver.passes``). Made once per set of installed entry points;
        InputError the first time an entry point fails to load (the set then goes on
        without it)."""
        specs = tuple(tuple(e) for e in entry_point_specs())
        made = _DEFAULTS.get(specs)
        if made is None:
            made, error = _with_entry_points(PassSet.builtin(), specs)
            if len(_DEFAULTS) >= 4:
                _DEFAULTS.clear()
            _DEFAULTS[specs] = made
            if error is not None:
                raise error
        return made

    @staticmethod
    def builtin() -> PassSet:
        """The passes shipped with the driver (mlir/builtin_passes.py), without the installed ones."""
        return _builtin()

    def with_passes(self, *passes: PythonPass) -> PassSet:
        """A new set: this one and ``passes``. PassNameClash for a name this set holds
        another pass under (the same pass again is kept once)."""
        for p in passes:
            if not isinstance(p, PythonPass):
                raise TypeError(f"not a Python pass: {p!r} (make one with @mlirhlo_driver.register_pass)")
        table = dict(self._passes())
        for p in passes:
            _add(table, p)
        return self._extended(tuple(passes), table)

    def with_plugins(self, *paths: str | os.PathLike[str],
                     reserved: Callable[[], Container[str]] | None = None) -> PassSet:
        """A new set: this one and the passes of each plugin file (a .py file whose top level
        decorates functions with ``@mlirhlo_driver.register_pass``). A file already in the
        set is not loaded again. ``reserved()``: names no plugin pass may take (jaxlib's own
        passes: ``mlir.passes.load_plugins``). InputError, at the file and line, for a file
        that cannot be loaded or whose pass takes a name in use."""
        made = self
        for path in paths:
            if str(Path(path).resolve()) in made.plugin_files:
                continue
            plugin, found = _run_plugin(str(path), made._passes(), reserved=reserved)
            table = dict(made._passes())
            for p in found:
                table[p.name] = p
            made = made._extended(plugin, table)
        return made

    # ------------------------------------------------------------------ read

    @property
    def plugins(self) -> tuple[Plugin, ...]:
        """The plugin files loaded into it, in order, with the bytes that ran."""
        return tuple(s for s in self._steps if isinstance(s, Plugin))

    @property
    def plugin_files(self) -> tuple[str, ...]:
        """The resolved paths of :attr:`plugins`."""
        return tuple(p.path for p in self.plugins)

    @property
    def entry_points(self) -> tuple[tuple[str, str, str], ...]:
        """``(name, value, version)`` of the installed entry points it was made with (empty
        for a set not made from :meth:`default`)."""
        self._passes()
        return self._entry_points

    def __getitem__(self, name: str) -> PythonPass:
        return self._passes()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._passes()))

    def __len__(self) -> int:
        return len(self._passes())

    def __repr__(self) -> str:
        return f"PassSet({sorted(self._passes())!r})"

    def __reduce__(self) -> Any:
        return _remade, (self._base, self._steps)

    def __copy__(self) -> PassSet:
        return self  # never changed: a copy would only run its plugins again

    def __deepcopy__(self, memo: dict[int, Any]) -> PassSet:
        return self

    # ------------------------------------------------------------------ inside

    def _passes(self) -> dict[str, PythonPass]:
        if self._table is None:  # unpickled: made again from its recipe, when first read
            made = _replay(self._base, self._steps)
            self._entry_points, self._table = made._entry_points, made._table
        return self._table

    def _extended(self, step: Plugin | tuple[PythonPass, ...], table: dict[str, PythonPass]) -> PassSet:
        made = PassSet.__new__(PassSet)
        made._base, made._steps, made._entry_points = self._base, (*self._steps, step), self.entry_points
        made._table = table
        return made


def _add(table: dict[str, PythonPass], p: PythonPass) -> None:
    taken = table.get(p.name)
    if taken is not None and not _same(taken, p):
        raise PassNameClash(_clash(p.name, taken))
    if taken is None:
        table[p.name] = p


# Per installed entry points (entry_point_specs): their modules are imported once; a set
# whose entry point failed is kept without it, so the failure is reported once.
_DEFAULTS: dict[tuple[tuple[str, ...], ...], PassSet] = {}


@functools.lru_cache(maxsize=1)
def _builtin() -> PassSet:
    from .builtin_passes import PASSES

    made = PassSet([PythonPass(name, fn, anchor, description, BUILTIN) for name, anchor, description, fn in PASSES])
    made._base, made._steps = "builtin", ()
    return made


def _remade(base: str, steps: tuple[Plugin | tuple[PythonPass, ...], ...]) -> PassSet:
    made = PassSet.__new__(PassSet)
    made._base, made._steps, made._entry_points, made._table = base, steps, (), None
    return made


def _replay(base: str, steps: tuple[Plugin | tuple[PythonPass, ...], ...]) -> PassSet:
    if base == "default":
        try:
            made = PassSet.default()
        except InputError:  # an entry point that fails to load: the set the sender had went on without it
            made = PassSet.default()
    else:
        made = PassSet() if base == "none" else PassSet.builtin()
    for step in steps:
        if isinstance(step, Plugin):
            plugin, found = _run_plugin(step.path, made._passes(), source=step.source)
            made = made._extended(plugin, {**made._passes(), **{p.name: p for p in found}})
        else:
            made = made.with_passes(*step)
    return made


def _with_entry_points(base: PassSet, specs: tuple[tuple[str, ...], ...]) -> tuple[PassSet, InputError | None]:
    """``base`` with the passes of each entry point, and the first one's failure to load (the
    others are loaded all the same)."""
    table = dict(base._passes())
    error = None
    for name, value, *_ in specs:
        # Imported only for an entry point to load: importlib.metadata costs ~20 ms a process
        # (email, zipfile, csv), which the on-disk scan (installed.py) exists to spare.
        from importlib.metadata import EntryPoint

        ep = EntryPoint(name, value, ENTRY_POINT_GROUP)
        loading = _Loading(f"entry point {ep.name}", table)
        token = _loading.set(loading)
        try:
            loaded = ep.load()
            # A module imported before (by the user, or for an earlier set) runs no decorator
            # now: its passes are its attributes.
            for p in _passes_of(loaded) if not loading.found else ():
                loading.add(replace(p, origin=loading.origin) if p.origin == INTERACTIVE else p)
        except Exception as e:
            if error is None:
                error = InputError(f"cannot load pass plugin entry point '{ep.name}' ({ep.value}): "
                                   f"{type(e).__name__}: {e}")
            continue
        finally:
            _loading.reset(token)
        table.update(loading.found)
    made = PassSet.__new__(PassSet)
    made._base, made._steps, made._entry_points, made._table = "default", (), specs, table
    return made, error


def _passes_of(loaded: Any) -> list[PythonPass]:
    if isinstance(loaded, PythonPass):
        return [loaded]
    if isinstance(loaded, PassSet):
        return list(loaded.values())
    if isinstance(loaded, types.ModuleType):
        return [v for v in vars(loaded).values() if isinstance(v, PythonPass)]
    return []


def entry_point_specs() -> list[tuple[str, str, str]]:
    """``(name, value, distribution version)`` of each installed entry point in
    ENTRY_POINT_GROUP, sorted: what ``importlib.metadata`` finds on ``sys.path``,
    through the on-disk record of that scan (``installed.py``)."""
    from .. import installed

    return list(installed.entry_points(ENTRY_POINT_GROUP))


def pass_set(given: PassSet | Iterable[PythonPass | str | os.PathLike[str]] | None,
             plugin_files: Iterable[str | os.PathLike[str]] = ()) -> PassSet | None:
    """What a caller hands a pipeline as ``python_passes``, as a set: a :class:`PassSet` as
    it is; an iterable of passes (:class:`PythonPass`) and plugin files (paths) added to
    :meth:`PassSet.default`, as are ``plugin_files``; None when nothing is given (the
    default set, made where it is needed)."""
    files = list(plugin_files)
    if isinstance(given, PassSet):
        return given.with_plugins(*files) if files else given
    items = [] if given is None else [given] if isinstance(given, (PythonPass, str, os.PathLike)) else list(given)
    passes = [x for x in items if isinstance(x, PythonPass)]
    files += [x for x in items if isinstance(x, (str, os.PathLike))]
    odd = [x for x in items if not isinstance(x, (PythonPass, str, os.PathLike))]
    if odd:
        raise TypeError(f"python_passes takes a PassSet, or Python passes and plugin files; not {odd[0]!r}")
    if not passes and not files:
        return None
    return PassSet.default().with_plugins(*files).with_passes(*passes)


def _run_plugin(path: str, taken: Mapping[str, PythonPass], *, source: bytes | None = None,
                reserved: Callable[[], Container[str]] | None = None) -> tuple[Plugin, list[PythonPass]]:
    """Run a .py file whose top level makes passes (its bytes read now, or ``source``: the
    bytes a set ran before); its passes, sorted by name. Nothing of a file that fails is kept."""
    file = Path(path)
    if source is None:
        if not file.is_file():
            raise InputError("no such pass plugin file", file=path)
        try:
            source = file.read_bytes()
        except OSError as e:
            raise InputError(f"cannot read the pass plugin: {e.strerror or e}", file=path) from None
    resolved = str(file.resolve())
    module_name = f"mlirhlo_plugin_{abs(hash(resolved))}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise InputError("not a Python file", file=path)
    module = importlib.util.module_from_spec(spec)
    loading = _Loading(resolved, taken)
    token = _loading.set(loading)
    # The bytes read are what runs (compiled here, never by the import system): nothing is
    # written beside the user's file, and the set can run the same bytes again elsewhere.
    try:
        code = compile(source, resolved, "exec", dont_inherit=True)
        sys.modules[module_name] = module  # what dataclasses and pickle look a module's classes up in
        exec(code, module.__dict__)
    except SyntaxError as e:
        raise InputError(f"syntax error in pass plugin: {e.msg}", file=path, line=e.lineno,
                         col=e.offset) from None
    except PassNameClash as e:
        raise InputError(str(e), file=path, line=_plugin_line(e, resolved)) from None
    except Exception as e:
        line = _plugin_line(e, resolved)
        raise InputError(f"pass plugin failed to load: {type(e).__name__}: {e}", file=path,
                         line=line) from None
    finally:
        _loading.reset(token)
    found = sorted(loading.found.values(), key=lambda p: p.name)
    native = reserved() if reserved is not None and found else ()
    for p in found:
        if p.name in native:
            line = getattr(getattr(p.fn, "__code__", None), "co_firstlineno", None)
            raise InputError(f"pass '{p.name}' is a native jaxlib pass; a plugin cannot replace it",
                             file=path, line=line, hint="give the Python pass another name")
    if not found:
        raise InputError("pass plugin registers no pass", file=path,
                         hint="decorate a function with @mlirhlo_driver.register_pass(...)")
    return Plugin(resolved, source), found


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
