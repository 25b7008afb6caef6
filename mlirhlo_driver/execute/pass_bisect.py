"""``run --bisect-passes``: the XLA HLO pass behind a mismatch.

For a module whose XLA result differs from its reference: XLA's own pass log
(xla.pass_log) names the HLO passes that ran; the module is compiled and run
again with sets of them disabled (``--xla_disable_hlo_passes``) until the
smallest set whose disabling makes it match is found: halves first (one
culprit takes about log2(N) trials), then, when the culprit needs passes from
both halves, one pass left out at a time. The set is confirmed alone, and XLA's
per-pass dumps give the HLO before and after the first run of the pass that
changed the module.

Each trial compiles and runs in isolate's helper: disabling a pass XLA needs can
leave HLO its codegen aborts on, and such a trial counts as "does not match".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class PassBisect:
    """What ``--bisect-passes`` found."""

    passes: list[str]                       # the passes whose disabling makes it match; [] if none
    candidates: int                         # HLO passes that ran
    trials: int
    pipelines: dict[str, list[str]] = field(default_factory=dict)  # pass -> pipelines it ran in
    confirmed: bool = False                 # disabling exactly ``passes`` matched
    before: str | None = None               # HLO before / after the first run that changed the module
    after: str | None = None
    dump_pipeline: str = ""
    note: str = ""
    already_disabled: list[str] = field(default_factory=list)  # by the user's own flags

    @property
    def flag(self) -> str:
        """The flag that makes the module match (the user's own disabled passes kept)."""
        return "--xla_disable_hlo_passes=" + ",".join(dict.fromkeys(self.already_disabled + self.passes))

    def row(self) -> dict[str, Any]:
        return {"passes": self.passes, "pipelines": self.pipelines, "candidates": self.candidates,
                "trials": self.trials, "confirmed": self.confirmed, "flag": self.flag if self.passes else None,
                "note": self.note}


def _disabled(flags: tuple[tuple[str, Any], ...]) -> list[str]:
    value = dict(flags).get("xla_disable_hlo_passes")
    if not value:
        return []
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return [str(p).strip() for p in items if str(p).strip()]


def _with_disabled(flags: tuple[tuple[str, Any], ...], passes: list[str]) -> tuple[tuple[str, Any], ...]:
    merged = dict(flags)
    merged["xla_disable_hlo_passes"] = ",".join(dict.fromkeys(_disabled(flags) + passes))
    return tuple(sorted(merged.items()))


def find(module: Any, name: str, arrays: list[np.ndarray], options: Any, *,
         trial: Callable[..., list[np.ndarray]], matching: Callable[[list[np.ndarray]], bool]) -> PassBisect:
    """The passes behind the mismatch of ``module`` (run.RunOptions ``options``) on ``arrays``.

    ``trial(bytecode, arrays, platform, xla_flags)``: the outputs of a compile and run with
    those flags, a module-level function (it runs in the helper); ``matching(outputs)``:
    whether they match the reference (run.py passes its own, so this module needs no
    import of it)."""
    import io

    from .._native import isolate
    from .._native import jaxlib as _jaxlib
    from ..errors import DriverError
    from ..xla import backend, pass_log

    target = options.target
    spec = backend.CompileSpec(target, dumps=(backend.HLO_TEXT,), keep_going=True)
    calls = backend.compile(module, spec.with_(pass_log=pass_log.TIMES_LEVEL), name).art.pass_calls or []
    already = set(_disabled(options.xla_flags))
    leaves = [c for c in sorted(calls, key=lambda c: c.index) if not c.is_pipeline and not c.skipped]
    candidates = [n for n in dict.fromkeys(c.name for c in leaves) if n not in already]
    pipelines: dict[str, list[str]] = {}
    for c in leaves:
        pipes = pipelines.setdefault(c.name, [])
        if c.pipeline not in pipes:
            pipes.append(c.pipeline)
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    bytecode = buf.getvalue()
    trials = 0
    cache: dict[tuple[str, ...], bool] = {}

    def matches(passes: list[str]) -> bool:
        nonlocal trials
        key = tuple(sorted(passes))
        if key not in cache:
            trials += 1
            try:
                outs = isolate.call(trial, (bytecode, arrays, target.with_flags(dict(
                                                _with_disabled(options.xla_flags, passes)))),
                                    what="XLA with passes disabled", preload=_jaxlib.MLIR_PRELOAD,
                                    on_stderr=lambda _: None)
            except DriverError:  # the compile failed or died without these passes
                cache[key] = False
            else:
                cache[key] = matching(outs)
        return cache[key]

    result = PassBisect([], len(candidates), 0, already_disabled=sorted(already))
    if not candidates or not matches(candidates):
        result.trials = trials
        result.note = (f"disabling all {len(candidates)} HLO passes that ran does not make it match: "
                       "the difference comes from XLA's codegen (or the reference), not from one HLO pass")
        return result
    chosen = list(candidates)
    while len(chosen) > 1:
        half = len(chosen) // 2
        first, second = chosen[:half], chosen[half:]
        if matches(first):
            chosen = first
        elif matches(second):
            chosen = second
        else:
            break
    for p in list(chosen):  # the culprit needs passes of both halves: the smallest set left
        if len(chosen) > 1 and matches([q for q in chosen if q != p]):
            chosen.remove(p)
    result.passes = chosen
    result.confirmed = matches(chosen)
    result.trials = trials
    result.pipelines = {p: pipelines.get(p, []) for p in chosen}
    result.before, result.after, result.dump_pipeline = _around(module, name, spec, chosen[0])
    return result


def _around(module: Any, name: str, spec: Any, pass_name: str) -> tuple[str | None, str | None, str]:
    """HLO before and after the first run of ``pass_name`` that changed the module (XLA's dumps
    around that pass), and its pipeline; Nones if XLA dumped no such run."""
    import re

    from ..xla import backend

    art = backend.compile(module, spec.with_(pass_dump_re=f"^{re.escape(pass_name)}$"), name).art
    before = None
    for d in backend.pass_dumps(art):
        text = art.files[d.key].decode("utf-8", "replace")
        if d.after == pass_name and before is not None and _body(before) != _body(text):
            return before, text, d.pipeline
        if d.before == pass_name:
            before = text
    return None, None, ""


def _body(hlo: str) -> str:
    # XLA numbers a dump's module header; the instructions are what a pass changes.
    return hlo.split("\n", 1)[1] if "\n" in hlo else hlo
