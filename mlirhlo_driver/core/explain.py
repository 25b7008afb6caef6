"""``mlirhlo diff --explain``: why a kernel differs between two compiles.

For each kernel whose figures differ between side A and side B (or that one side
alone has), two questions:

1. **Which of the differing inputs causes it?** The candidates are what differs
   between the sides' targets: the DebugOptions (``--flags-a``/``--flags-b``, each
   side's DebugOptions file, ``XLA_FLAGS``: whatever their origin, the merged values
   that differ), or, between two GPU specs, the spec's fields that differ (compute
   capability, shared memory, registers, clock, ...; each a leaf of
   ``GpuTargetConfigProto``, repeated fields and maps whole). A trial applies a subset
   of them to side A (B's values; a flag B lacks is removed, for XLA's default; spec
   fields go into a copy of spec A) and compiles. The change is *reproduced* when the
   trial's rows for the kernel equal B's (:func:`reproduces`). Delta debugging
   (Zeller's ``ddmin``) finds a 1-minimal subset that reproduces it: no candidate of
   it can be left out.
2. **Which XLA pass makes it?** On the side that has the kernel's version (B for a
   changed or added kernel, A for a removed one), the HLO passes that changed that
   side's module (XLA's per-pass dumps, one compile) are disabled one at a time
   (``--xla_disable_hlo_passes``): the first whose disabling makes that side's rows
   for the kernel equal the other side's is named. The pass that first wrote the
   kernel's instruction is tried first, then fusion and rewrite passes, then the rest
   in pipeline order, up to :data:`PASS_TRIALS` trials per kernel. One pass at a time,
   not halves as ``run --bisect-passes`` does: disabling a group of passes often leaves
   HLO XLA refuses (measured on a one-dot module: of the 8 passes that changed it, the
   second half disabled together fails to compile), and a trial that fails says nothing.
   When both sides made the same optimized HLO (``hlo_fingerprint``), no pass is tried:
   codegen, launch dimensions or the spec's limits made the difference.

Kernels are matched across compiles by what they run, not by name (XLA renames and
renumbers fusions): a kernel's *signature* is its fused instructions' opcodes and
``op_name`` metadata (an unfused kernel: its instruction's unnumbered name and
``op_name``).

A trial is a :class:`~mlirhlo_driver.core.compiled.Compiled` of side A's program (same
identity) for the trial's stage options (``Compiled.with_options``), so its
``kernel-rows`` stage is looked up in the stage cache (core/cache.py) like any other.
One that must compile does so in isolate's helper (a flag or a disabled pass can make
XLA abort: that trial then counts as "not reproduced"), and its rows are kept under the
trial's key; a pass log is kept beside its side's stages (``Compiled._cache_key``). So a
second ``--explain`` compiles nothing; trials are shared between kernels. The result says
how many compiles the trials took, and how many came from the cache.

This module takes the compiles it is given and imports neither core.compiled nor
core.program (Compiled.diff calls it: no import cycle).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Passes tried per kernel (one trial compile each).
PASS_TRIALS = 8
_REMOVED = "(removed)"  # a flag side B lacks: applying it removes it from A, for XLA's default
# Passes that only rename or annotate: disabling them changes no kernel.
_BOOKKEEPING = re.compile(r"^(?:pipeline-(?:start|end)|rename[-_].*|sanitize-constant-names|"
                          r"scheduling-instruction-annotator|pdl-launch-annotation)$")
_FUSION_LIKE = re.compile(r"fusion|rewriter|fuser|triton|gemm|cublas|dot", re.I)


# ------------------------------------------------------------------ ddmin

def ddmin(items: list[Any], test: Callable[[list[Any]], bool]) -> list[Any]:
    """A 1-minimal subset of ``items`` for which ``test`` holds (Zeller & Hildebrandt,
    "Simplifying and Isolating Failure-Inducing Input", 2002). ``test(items)`` must hold;
    order is kept. ``test`` is called on subsets and complements, granularity doubling
    until each candidate stands alone."""
    current, n = list(items), 2
    while len(current) >= 2:
        size = len(current) / n
        chunks = [current[round(i * size):round((i + 1) * size)] for i in range(n)]
        chunks = [c for c in chunks if c]
        for chunk in chunks:
            if test(chunk):
                current, n = chunk, 2
                break
        else:
            for i in range(len(chunks)):
                rest = [x for j, c in enumerate(chunks) if j != i for x in c]
                if len(chunks) > 2 and test(rest):
                    current, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(current):
                    break
                n = min(len(current), n * 2)
    return current


# ------------------------------------------------------------------ kernels across compiles

def _unnumbered(name: str) -> str:
    return re.sub(r"[._-]\d+(?=[._-]|$)", "", name)


def signature(row: dict[str, Any]) -> tuple[Any, ...]:
    """What a kernel row runs, whatever XLA named it: its fused instructions (opcode,
    op_name), or for an unfused kernel its instruction's unnumbered name and op_name."""
    fused = row.get("fused") or []
    if fused:
        return tuple(sorted((f["opcode"], f.get("op_name") or "") for f in fused))
    return (_unnumbered(instruction(row)), row.get("op_name") or "")


def instruction(row: dict[str, Any]) -> str:
    """The HLO instruction a row runs: CUDA's ``hlo_instruction`` (else its kernel), a TPU
    row's ``name``."""
    return row.get("hlo_instruction") or row.get("kernel") or row["name"]


def _fields(row: dict[str, Any]) -> tuple[Any, ...]:
    from .diff import _kernel_fields

    return tuple(repr(v) for v in _kernel_fields(row).values())


def rows_of(side: dict[str, Any], sig: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The figures of a side's kernel rows with signature ``sig``, sorted."""
    return sorted(_fields(r) for r in side.get("kernels") or [] if signature(r) == sig)


def reproduces(trial: dict[str, Any] | None, target: dict[str, Any], sig: tuple[Any, ...]) -> bool:
    """Whether ``trial``'s kernels with signature ``sig`` are ``target``'s (same count,
    same figures); a failed trial (None) reproduces nothing."""
    return trial is not None and rows_of(trial, sig) == rows_of(target, sig)


# ------------------------------------------------------------------ candidates

@dataclass(frozen=True)
class Candidate:
    """One difference between the sides' targets: a DebugOption or a spec field."""

    kind: str    # "flag", "spec" or "topology" (two TPU slices: not a spec file, applied whole)
    name: str    # flag name, the field's path ("gpu_device_info.shared_memory_per_core"), "tpu_topology"
    a: str       # its value on each side, as text ("(unset)" where a side lacks it)
    b: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "a": self.a, "b": self.b}

    def text(self) -> str:
        if self.kind == "flag":
            return f"--{self.name}={_flag_text(self.b)}" if self.b != _REMOVED else f"--{self.name} unset"
        if self.kind == "topology":
            return f"TPU topology {self.a} -> {self.b}" + (" (a generation change: no flag explains it)"
                                                           if self.a.split(":")[0] != self.b.split(":")[0] else "")
        return f"{self.name}: {self.a} -> {self.b}"


def _flag_text(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def flag_candidates(flags_a: dict[str, Any], flags_b: dict[str, Any]) -> list[Candidate]:
    """The DebugOptions whose merged values differ, by name."""
    out = []
    for k in sorted(set(flags_a) | set(flags_b)):
        if flags_a.get(k, _REMOVED) != flags_b.get(k, _REMOVED):
            out.append(Candidate("flag", k, _flag_text(flags_a.get(k, _REMOVED)),
                                 _flag_text(flags_b.get(k, _REMOVED))))
    return out


def apply_flags(flags_a: dict[str, Any], flags_b: dict[str, Any], chosen: list[Candidate]) -> dict[str, Any]:
    """Side A's flags with B's values for the ``chosen`` candidates."""
    out = dict(flags_a)
    for c in chosen:
        if c.name in flags_b:
            out[c.name] = flags_b[c.name]
        else:
            out.pop(c.name, None)
    return out


def _leaves(msg: Any, prefix: str = "") -> dict[str, Any]:
    """path -> value text of every field set in a message; submessages by their fields,
    repeated fields and maps whole."""
    from google.protobuf import text_format

    out: dict[str, Any] = {}
    for fd, value in msg.ListFields():
        path = prefix + fd.name
        repeated = _is_repeated(fd)
        if fd.message_type is not None and not repeated:
            out.update(_leaves(value, path + "."))
        elif repeated and fd.message_type is not None:
            out[path] = " ".join(text_format.MessageToString(v, as_one_line=True) for v in value) \
                if not fd.message_type.GetOptions().map_entry else \
                " ".join(f"{k}: {text_format.MessageToString(value[k], as_one_line=True)}"
                         if hasattr(value[k], "ListFields") else f"{k}: {value[k]}" for k in sorted(value))
        else:
            out[path] = " ".join(str(v) for v in value) if repeated else str(value)
    return out


def spec_candidates(spec_a: Any, spec_b: Any) -> list[Candidate]:
    """The fields of two GPU specs (cuda.specs.GpuSpec) whose values differ, as paths."""
    la, lb = _leaves(_proto(spec_a)), _leaves(_proto(spec_b))
    return [Candidate("spec", k, la.get(k, "(unset)"), lb.get(k, "(unset)"))
            for k in sorted(set(la) | set(lb)) if la.get(k) != lb.get(k)]


def _proto(spec: Any) -> Any:
    return spec.proto


def spec_text_with(spec_a: Any, spec_b: Any, chosen: list[Candidate]) -> str:
    """Spec A's text with B's values of the ``chosen`` fields (a copy of its message)."""
    from google.protobuf import text_format

    msg = type(_proto(spec_a))()
    msg.CopyFrom(_proto(spec_a))
    src = _proto(spec_b)
    for c in chosen:
        *parents, leaf = c.name.split(".")
        dst_parent, src_parent = msg, src
        for p in parents:
            dst_parent, src_parent = getattr(dst_parent, p), getattr(src_parent, p)
        dst_parent.ClearField(leaf)
        fd = src_parent.DESCRIPTOR.fields_by_name[leaf]
        value = getattr(src_parent, leaf)
        if _is_repeated(fd):  # repeated fields and maps, whole
            getattr(dst_parent, leaf).MergeFrom(value)
        elif fd.message_type is not None:
            if src_parent.HasField(leaf):
                getattr(dst_parent, leaf).CopyFrom(value)
        elif c.b != "(unset)":
            setattr(dst_parent, leaf, value)
    return text_format.MessageToString(msg)


def _is_repeated(fd: Any) -> bool:
    is_repeated = getattr(fd, "is_repeated", None)  # protobuf 6+; label before
    return is_repeated if isinstance(is_repeated, bool) else fd.label == fd.LABEL_REPEATED


# ------------------------------------------------------------------ trials

def trial_rows(bytecode: bytes, name: str, source: str | None, line_offset: int, options: Any) -> str:
    """The ``kernel-rows`` stage of a module given as bytecode, for ``options``
    (stages.base.StageOptions): what isolate's helper runs for a trial."""
    from jaxlib.mlir import ir

    from .. import registry
    from .._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        module = ir.Module.parse(bytecode)
        req = registry.request(module, name, options, stages=("kernel-rows",), source=source,
                               line_offset=line_offset)
        out = req.produce("kernel-rows")
    assert isinstance(out, str)
    return out


def pass_log(bytecode: bytes, name: str, source: str | None, line_offset: int, options: Any,
             instructions: list[str]) -> tuple[list[str], dict[str, str]]:
    """(the HLO passes that changed the module, in pipeline order; instruction -> the pass
    after which it first appears), from XLA's per-pass dumps of one compile (in the helper)."""
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib
    from ..xla import backend

    with _jaxlib.ir_context():
        module = backend.module_for_xla(ir.Module.parse(bytecode), source, line_offset, options.fold_constants)
        spec, _ = backend.stage_spec(options, module, source or name, dumps=(backend.HLO_TEXT,))
        art = backend.compile(module, spec.with_(pass_dump_re=".*", keep_going=True), name).art
    passes: list[str] = []
    first: dict[str, str] = {}
    wanted = {n: re.compile(r"(?<![\w.-])%?" + re.escape(n) + r" = ") for n in instructions}
    for d in backend.pass_dumps(art):
        if _BOOKKEEPING.match(d.after):
            continue
        if d.after not in passes:
            passes.append(d.after)
        text = art.files[d.key].decode("utf-8", "replace")
        for n, rx in wanted.items():
            if n not in first and rx.search(text):
                first[n] = d.after
    return passes, first


# A trial XLA refused, kept beside the stages (the stage cache keeps no failure): it is
# refused the same way next time, so a second --explain compiles nothing.
_REFUSED = "diff --explain: refused kernel-rows"


@dataclass
class Trials:
    """Trial compiles of side A's program (core.compiled.Compiled ``parent``): its kernel
    rows for other stage options, from the stage cache (a trial is a Compiled of the same
    program, so its ``kernel-rows`` stage is keyed and kept like any other) or compiled in
    isolate's helper (a flag or a disabled pass can make XLA abort); counted."""

    parent: Any
    compiles: int = 0
    from_cache: int = 0
    failed: int = 0
    _seen: dict[Any, dict[str, Any] | None] = field(default_factory=dict)
    _bytecode: bytes | None = None

    def bytecode(self) -> bytes:
        if self._bytecode is None:
            from ..ir import emit

            self._bytecode = emit.bytecode(self.parent.program.module)
        return self._bytecode

    def known(self, options: Any, side: dict[str, Any]) -> None:
        """A side compiled already (A, B): trials equal to it need no compile."""
        self._seen[self._key(options)] = side

    @staticmethod
    def _key(options: Any) -> Any:
        spec = options.gpu_spec
        topology = getattr(options.target, "topology", None)
        return (spec.text if spec is not None else None, getattr(topology, "name", None),
                tuple(sorted((k, repr(v)) for k, v in options.xla_flags)))

    def _call(self, fn: Any, args: tuple[Any, ...], what: str) -> Any:
        from .._native import isolate
        from .._native import jaxlib as _jaxlib

        program = self.parent.program
        return isolate.call(fn, (self.bytecode(), program.name, program.source, program.line_offset, *args),
                            what=what, preload=_jaxlib.MLIR_PRELOAD, on_stderr=lambda _: None)

    def side(self, options: Any) -> dict[str, Any] | None:
        """``{"kernels": rows}`` for ``options`` (stages.base.StageOptions); None if XLA
        failed or died."""
        import json

        from ..errors import DriverError
        from . import cache

        key = self._key(options)
        if key in self._seen:
            return self._seen[key]
        trial = self.parent.with_options(options)
        data = trial._cached("kernel-rows")
        refused = trial._cache_key(_REFUSED)
        if data is None and refused is not None and cache.get_output(refused) is not None:
            self.from_cache += 1
            out = None
        elif data is not None:
            self.from_cache += 1
            out = {"kernels": json.loads(data)}
        else:
            self.compiles += 1
            try:
                data = self._call(trial_rows, (options,), "XLA (an --explain trial)")
            except DriverError as e:
                self.failed += 1
                out = None
                if refused is not None:
                    cache.put_output(refused, e.text())
            else:
                trial._keep("kernel-rows", data)
                out = {"kernels": json.loads(data)}
        self._seen[key] = out
        return out

    def passes(self, side: Any, instructions: list[str]) -> tuple[list[str], dict[str, str]]:
        """:func:`pass_log` of one side (core.compiled.Compiled; a compile of its own,
        counted, kept in the stage cache beside that side's stages), or ([], {}) if it fails."""
        import json

        from ..errors import DriverError
        from . import cache

        key = side._cache_key("diff --explain: pass log " + json.dumps(sorted(instructions)))
        found = cache.get_output(key) if key is not None else None
        if found is not None:
            self.from_cache += 1
            passes, first = json.loads(found[0])
            return passes, first
        self.compiles += 1
        try:
            out = self._call(pass_log, (side.options, instructions), "XLA (an --explain pass log)")
        except DriverError:
            self.failed += 1
            out = ([], {})
        if key is not None:
            cache.put_output(key, json.dumps(out))
        return out


# ------------------------------------------------------------------ explaining

def _differences(result: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per kernel that differs (first launch of each): its change, its row on
    the side(s) that have it."""
    k = result.get("kernels")
    if not k:
        return []
    from .diff import kernel_key

    rows_a = {kernel_key(r): r for r in reversed(a.get("kernels") or [])}
    rows_b = {kernel_key(r): r for r in reversed(b.get("kernels") or [])}
    out, seen = [], set()
    for c in k["changed"]:
        name_b = c.get("kernel_b", c["kernel"])
        if ("changed", c["kernel"]) in seen:
            continue
        seen.add(("changed", c["kernel"]))
        out.append({"kernel": c["kernel"], "kernel_b": name_b, "change": "changed", "fields": c["fields"],
                    "row_a": rows_a.get(c["kernel"]), "row_b": rows_b.get(name_b)})
    for kind, rows, side_rows in (("only_a", k["only_a"], rows_a), ("only_b", k["only_b"], rows_b)):
        for x in rows:
            if (kind, x["kernel"]) in seen:
                continue
            seen.add((kind, x["kernel"]))
            row = side_rows.get(x["kernel"])
            out.append({"kernel": x["kernel"], "change": kind, "fields": {},
                        "row_a": row if kind == "only_a" else None, "row_b": row if kind == "only_b" else None})
    return out


def explain(a: Any, b: Any, side_a: dict[str, Any], side_b: dict[str, Any], result: dict[str, Any], *,
            passes: bool = True, progress: Any = None) -> dict[str, Any]:
    """The ``explain`` object of ``diff --explain --json`` for two compiles of one program
    (core.compiled.Compiled, one target each; their merged DebugOptions and GPU specs are
    the candidates' sources), their sides (core.diff.side) and their comparison
    (core.diff.compare): ``candidates`` (what differs between the targets), ``kernels``
    (per differing kernel: ``kernel``, ``change`` (``changed``, ``only_a``, ``only_b``),
    ``fields``, ``cause`` (the minimal candidates that reproduce it, or [] with
    ``reproduced`` false), ``pass`` (``side``, ``name``, ``trials``; ``name`` None if none
    found)), ``compiles`` (trial compiles run), ``from_cache`` (trials the stage cache
    answered) and ``failed`` (trials XLA refused). ``progress`` (core.progress) gets an
    event per kernel explained."""
    import dataclasses

    from ..cuda import specs
    from .progress import report

    trials = Trials(a)
    trials.known(a.options, side_a)
    trials.known(b.options, side_b)
    flags_a, flags_b = dict(a.options.xla_flags), dict(b.options.xla_flags)
    spec_a, spec_b = a.options.gpu_spec, b.options.gpu_spec
    candidates = flag_candidates(flags_a, flags_b)
    if spec_a is not None and spec_b is not None and spec_a.text != spec_b.text:
        candidates += spec_candidates(spec_a, spec_b)
    topo_a, topo_b = getattr(a.options.target, "topology", None), getattr(b.options.target, "topology", None)
    if topo_a is not None and topo_b is not None and topo_a.name != topo_b.name:
        candidates.append(Candidate("topology", "tpu_topology", topo_a.name, topo_b.name))

    def trial(chosen: list[Candidate]) -> dict[str, Any] | None:
        spec = spec_a
        specs_chosen = [c for c in chosen if c.kind == "spec"]
        if specs_chosen:
            spec = specs.parse_spec(spec_text_with(spec_a, spec_b, specs_chosen), spec_a.path, spec_a.name)
        flags = apply_flags(flags_a, flags_b, [c for c in chosen if c.kind == "flag"])
        target = dataclasses.replace(a.options.target, spec=spec) if spec is not spec_a else a.options.target
        if any(c.kind == "topology" for c in chosen):
            target = dataclasses.replace(target, topology=topo_b)
        return trials.side(dataclasses.replace(a.options, target=target.with_flags(flags)))

    kernels = []
    pass_logs: dict[str, tuple[list[str], dict[str, str]]] = {}
    differences = _differences(result, side_a, side_b)
    for i, d in enumerate(differences):
        report(progress, i, len(differences), f"explain {d['kernel']} ({trials.compiles} trial compiles)")
        row = d["row_b"] if d["change"] != "only_a" else d["row_a"]
        entry: dict[str, Any] = {"kernel": d["kernel"], "change": d["change"], "fields": d["fields"],
                                 "cause": [], "reproduced": False, "pass": None}
        if "kernel_b" in d and d["kernel_b"] != d["kernel"]:
            entry["kernel_b"] = d["kernel_b"]
        if row is None:
            kernels.append(entry)
            continue
        sig = signature(row)
        if candidates and reproduces(trial(candidates), side_b, sig):
            cause = ddmin(candidates, lambda s: reproduces(trial(s), side_b, sig))
            entry["cause"], entry["reproduced"] = [c.to_dict() for c in cause], True
        if passes:
            entry["pass"] = _pass_for(d, row, sig, a, b, side_a, side_b, trials, pass_logs)
        kernels.append(entry)
    return {"candidates": [c.to_dict() for c in candidates], "kernels": kernels, "compiles": trials.compiles,
            "from_cache": trials.from_cache, "failed": trials.failed}


def _pass_for(d: dict[str, Any], row: dict[str, Any], sig: tuple[Any, ...], a: Any, b: Any,
              side_a: dict[str, Any], side_b: dict[str, Any], trials: Trials,
              logs: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, Any]:
    """The pass on the side that has the kernel's version whose disabling gives the other
    side's rows for its signature."""
    import dataclasses

    which = "a" if d["change"] == "only_a" else "b"
    setup, other = (a, side_b) if which == "a" else (b, side_a)
    if d["change"] == "changed" and side_a.get("hlo_fingerprint") and \
            side_a.get("hlo_fingerprint") == side_b.get("hlo_fingerprint"):
        # The same optimized HLO on both sides: no HLO pass made the difference (codegen,
        # launch dimensions or the spec's limits did).
        return {"side": which, "name": None, "trials": 0, "candidates": 0, "same_hlo": True}
    if which not in logs:
        names = [instruction(r) for r in ((side_a if which == "a" else side_b).get("kernels") or [])]
        logs[which] = trials.passes(setup, [n for n in names if n])
    changed, first = logs[which]
    start = first.get(instruction(row))
    order = ([start] if start else []) + [p for p in changed if p != start and _FUSION_LIKE.search(p)] \
        + [p for p in changed if p != start and not _FUSION_LIKE.search(p)]
    flags = dict(setup.options.xla_flags)
    value = flags.get("xla_disable_hlo_passes") or ""
    already = [p.strip() for p in (value if isinstance(value, (list, tuple)) else str(value).split(",")) if p.strip()]
    tried = 0
    for p in order:
        if p in already:
            continue
        if tried >= PASS_TRIALS:
            break
        tried += 1
        disabled = {**flags, "xla_disable_hlo_passes": ",".join(dict.fromkeys([*already, p]))}
        options = dataclasses.replace(setup.options, target=setup.options.target.with_flags(disabled))
        if reproduces(trials.side(options), other, sig):
            return {"side": which, "name": p, "trials": tried, "candidates": len(changed)}
    return {"side": which, "name": None, "trials": tried, "candidates": len(changed)}


# ------------------------------------------------------------------ text

def _change_word(entry: dict[str, Any]) -> str:
    if entry["change"] == "only_a":
        return "only in A"
    if entry["change"] == "only_b":
        return "only in B"
    from .diff import _FIELD_LABELS

    return "changed " + ", ".join(_FIELD_LABELS.get(f, f).strip() for f in entry["fields"])


def text(explained: dict[str, Any]) -> str:
    """One line per kernel: its change, the minimal cause, the pass; then the trial count."""
    lines = [f"explain: {len(explained['candidates'])} candidate(s) differ between the sides"
             + (": " + ", ".join(Candidate(**c).text() for c in explained["candidates"])
                if explained["candidates"] else "")]
    width = max([len(e["kernel"]) for e in explained["kernels"]] + [0])
    for e in explained["kernels"]:
        if e["reproduced"]:
            cause = "cause: " + ", ".join(Candidate(**c).text() for c in e["cause"])
        elif explained["candidates"]:
            cause = "cause: not reproduced by applying the candidates to A"
        else:
            cause = "cause: no flag, spec field or topology differs"
        p = e.get("pass")
        if p is None:
            where = ""
        elif p["name"]:
            where = f"; pass ({p['side'].upper()}): {p['name']} (disabling it removes the difference)"
        elif p.get("same_hlo"):
            where = "; pass: none (the optimized HLO is the same on both sides)"
        else:
            where = (f"; pass ({p['side'].upper()}): none of {p['trials']} tried removes it"
                     f" ({p['candidates']} passes changed the module)")
        lines.append(f"  {e['kernel']:<{width}}  {_change_word(e)}; {cause}{where}")
    lines.append(f"explain: {explained['compiles']} trial compile(s), {explained['from_cache']} from the "
                 f"stage cache" + (f", {explained['failed']} refused by XLA" if explained["failed"] else ""))
    return "\n".join(lines) + "\n"
