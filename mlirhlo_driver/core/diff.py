"""Two compiles side by side: what ``mlirhlo diff``, ``Program.diff`` and ``Compiled.diff`` show.

The two sides differ in what the user varies: the input, the GPU spec or XLA's flags.
Each side is one :class:`~mlirhlo_driver.core.compiled.Compiled`, summarized as plain
data (:func:`side`): its fusions and custom calls, its kernels (CUDA:
``cuda.kernels.KernelRow``), the buffer assignment's totals and the executable's memory
stats (``xla.summary``), and the text of one stage if asked; each of those is a stage
of the compile, so the stage cache holds them. :func:`compare` turns two summaries
into the result (:func:`text` renders it for people; ``--json`` prints it).

Promises:
- Fusions are matched by their HLO name, kernels by their name and launch index
  (a kernel launched twice has two rows), as ``mlirhlo kernels`` does.
- ``--stage S`` diffs the two stage texts after :func:`canonical_names`, since
  XLA numbers instructions per compile.
- Differences are the result: nothing here raises for them.
- A side already computed (by any door) is read from the stage cache without jaxlib.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

# A kernel row's fields compared, flattened (occupancy's own fields by name).
KERNEL_FIELDS = ("registers", "spill_stores", "spill_loads", "static_shared_memory",
                 "dynamic_shared_memory", "stack_frame", "grid", "block",
                 "blocks_per_sm", "warps_per_sm", "occupancy", "limiter")
# A TPU row (tpu.kernels.TpuKernelRow) is a fusion or op, named by ``name``: libtpu's estimate and XLA's cost.
TPU_KERNEL_FIELDS = ("kind", "cycles", "flops", "bytes_accessed", "bound")
_FIELD_LABELS = {
    "registers": "registers", "spill_stores": "spill stores B", "spill_loads": "spill loads B",
    "static_shared_memory": "smem B", "dynamic_shared_memory": "dyn smem B", "stack_frame": "stack B",
    "grid": "grid", "block": "block", "blocks_per_sm": "blocks/SM", "warps_per_sm": "warps/SM",
    "occupancy": "occupancy", "limiter": "limiter",
    "kind": "kind", "cycles": "est. cycles", "flops": "FLOPs", "bytes_accessed": "bytes accessed", "bound": "bound",
    "peak_memory_in_bytes": "peak memory", "temp_size_in_bytes": "temporaries",
    "argument_size_in_bytes": "arguments", "output_size_in_bytes": "outputs",
    "alias_size_in_bytes": "aliased", "generated_code_size_in_bytes": "generated code",
    "allocations": "allocations", "total_bytes": "allocated", "parameter_bytes": "  parameters",
    "output_bytes": "  outputs (live out)", "temp_bytes": "  temporaries", "constant_bytes": "  constants",
    "thread_local_bytes": "  thread-local",
}


# ------------------------------------------------------------------ names

# An identifier as XLA's dumps spell names: HLO's (``cublas-lt-matmul.2``), LLVM's and
# PTX's (``gemm_fusion_dot_5_param_0``); not one that starts inside another word
# (PTX's ``$L__BB0_2``).
_IDENT = re.compile(r"(?<![\w.$-])[A-Za-z_][\w.-]*\w|(?<![\w.$-])[A-Za-z_]")
_NUMBER = re.compile(r"[._-]\d+(?=[._-]|$)")
# Numbered words that are not names XLA gave (compute capabilities).
_NOT_A_NAME = re.compile(r"(?:sm|compute)_\d+[a-z]?")


def canonical_names(text: str) -> str:
    """``text`` with XLA's numbered names renumbered by first appearance.

    A name with number parts (``fusion.123``, ``gemm_fusion_dot_5``, ``module_0042``)
    becomes its unnumbered base, its last separator and its rank among the distinct
    names of that base in the text, from 0: ``add.45`` then ``add.7`` then ``add.45``
    give ``add.0``, ``add.1``, ``add.0``. Unnumbered names (``add``, opcodes) stay,
    as do plain numbers and ``sm_80``. Two compiles that differ only in XLA's
    numbering give the same text.
    """
    seen: dict[str, dict[str, str]] = {}

    def rename(m: re.Match[str]) -> str:
        word = m.group(0)
        parts = _NUMBER.findall(word)
        if not parts or _NOT_A_NAME.fullmatch(word):
            return word
        base = _NUMBER.sub("", word)
        names = seen.setdefault(base, {})
        if word not in names:
            names[word] = f"{base}{parts[-1][0]}{len(names)}"
        return names[word]

    return _IDENT.sub(rename, text)


def stage_diff(a: str, b: str, label_a: str, label_b: str) -> str:
    """A unified diff (difflib) of two stage texts after :func:`canonical_names`; '' if equal."""
    lines = difflib.unified_diff(canonical_names(a).splitlines(), canonical_names(b).splitlines(),
                                 fromfile=label_a, tofile=label_b, lineterm="")
    return "".join(line + "\n" for line in lines)


# ------------------------------------------------------------------ sides

def side(compiled: Any, stage: str | None = None) -> dict[str, Any]:
    """One compile (core.compiled.Compiled, one target) summarized: ``input`` (its
    source), ``module``, ``platform``, ``gpu_spec`` ({name, sm, gpu} or None),
    ``xla_flags`` (the target's, by name), ``fusions``, ``buffers``, ``memory``,
    ``hlo_fingerprint`` (xla.summary.summarize), ``kernels`` (KernelRow.to_dict each; None on CPU),
    ``stage`` (the stage's text, or None) and ``stage_name``."""
    from .. import registry
    from ..stages.base import single_output

    options = compiled.options
    program = compiled.program
    # One compile, dumping only what is read: the summary, the kernel rows, the stage.
    compiled.expect(["summary", *(["kernel-rows"] if options.platform == "cuda" else []), *([stage] if stage else [])])
    out: dict[str, Any] = {"input": program.source, "module": program.name, "platform": options.platform,
                           "gpu_spec": None, "xla_flags": {k: v for k, v in sorted(options.xla_flags)}}
    topology = getattr(options.target, "topology", None)
    if topology is not None:
        out["tpu_topology"] = topology.name
    spec = options.gpu_spec
    if spec is not None:
        out["gpu_spec"] = {"name": spec.name, "sm": spec.sm, "gpu": spec.gpu}
    out.update(compiled.summary())
    kernels = compiled.kernels()
    out["kernels"] = None if kernels is None else [r.to_dict() for r in kernels]
    out["stage"], out["stage_name"] = None, stage
    if stage is not None:
        data = single_output(registry.get(stage, options.platform), compiled.stage(stage))
        out["stage"] = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return out


def check_stage(stage: str, platform: str | None) -> str:
    """The stage a diff shows as text (an alias: its stage); DriverError for a binary one."""
    from .. import registry
    from ..errors import DriverError

    st = registry.get(stage, platform)
    if st.binary or (st.multi and st.join is None):
        raise DriverError(f"stage '{stage}' is binary: diff shows text stages",
                          hint="hlo, buffer-assignment, thunk-sequence, llvm, ptx, sass, kernels, ...")
    return st.alias_of or st.name


# ------------------------------------------------------------------ comparing

def _change(a: Any, b: Any) -> Any:
    """b - a for numbers; None where there is no difference to count (lists, names)."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
            or not isinstance(b, (int, float)):
        return None
    return round(b - a, 4) if isinstance(a, float) or isinstance(b, float) else b - a


def _kernel_fields(row: dict[str, Any]) -> dict[str, Any]:
    if "kernel" not in row:  # a TPU row
        return {k: row.get(k) for k in TPU_KERNEL_FIELDS}
    occ = row.get("occupancy") or {}
    flat = {**row, **{k: occ.get(k) for k in ("blocks_per_sm", "warps_per_sm", "occupancy", "limiter")}}
    return {k: flat.get(k) for k in KERNEL_FIELDS}


def _keyed_kernels(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    count: dict[str, int] = {}
    for r in rows:
        name = r["kernel"] if "kernel" in r else r["name"]  # CUDA's kernel, TPU's fusion or op
        i = count[name] = count.get(name, -1) + 1
        out[(name, i)] = r
    return out


def _numbers(a: dict[str, int], b: dict[str, int]) -> dict[str, dict[str, Any]]:
    return {k: {"a": a.get(k), "b": b.get(k), "change": _change(a.get(k), b.get(k))}
            for k in dict.fromkeys([*a, *b])}


def _about(s: dict[str, Any]) -> dict[str, Any]:
    side = {k: s.get(k) for k in ("input", "module", "platform", "gpu_spec", "xla_flags")}
    return side | ({"tpu_topology": s["tpu_topology"]} if "tpu_topology" in s else {})


def pair(keys_a: list[Any], keys_b: list[Any], base: Any) -> tuple[list[tuple[Any, Any]], list[Any], list[Any]]:
    """(pairs, only in A, only in B): keys equal on both sides pair first; then, in
    order, keys left over whose ``base(key)`` is equal (the same name but for XLA's
    numbering: ``fusion.28`` and ``fusion.19``). Each list keeps its side's order."""
    in_b, in_a = set(keys_b), set(keys_a)
    pairs = [(k, k) for k in keys_a if k in in_b]
    waiting: dict[Any, list[Any]] = {}
    for k in keys_b:
        if k not in in_a:
            waiting.setdefault(base(k), []).append(k)
    only_a, taken = [], set()
    for k in keys_a:
        if k in in_b:
            continue
        left = waiting.get(base(k))
        if left:
            taken.add(left[0])
            pairs.append((k, left.pop(0)))
        else:
            only_a.append(k)
    return pairs, only_a, [k for k in keys_b if k not in in_a and k not in taken]


def _unnumbered(name: str) -> str:
    return _NUMBER.sub("", name)


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The differences between two sides (:func:`side`), as JSON-ready data:

    ``a``/``b`` (what each side compiled), ``fusions`` (``only_a``, ``only_b``,
    ``kind_changed``, ``renumbered``: pairs ``{"a", "b"}`` matched by :func:`pair`,
    ``both``), ``kernels`` (``only_a``, ``only_b``, ``changed``: per kernel and launch,
    its name on B if renumbered (``kernel_b``), each changed field's ``a``, ``b`` and
    ``change``; ``unchanged``, ``renumbered``, ``count_a``, ``count_b``; None on CPU),
    ``memory`` and ``buffers`` (each field's ``a``, ``b``, ``change``), ``stage``
    (``name`` and unified ``diff``, or None) and ``identical`` (renumbering alone is
    no difference).
    """
    fa = {f["name"]: f for f in a["fusions"]}
    fb = {f["name"]: f for f in b["fusions"]}
    pairs, only_a, only_b = pair(list(fa), list(fb), lambda n: (_unnumbered(n), (fa.get(n) or fb[n])["kind"]))
    fusions = {"only_a": [fa[n] for n in only_a], "only_b": [fb[n] for n in only_b],
               "kind_changed": [{"name": x, "a": fa[x]["kind"], "b": fb[y]["kind"]}
                                for x, y in pairs if fa[x]["kind"] != fb[y]["kind"]],
               "renumbered": [{"a": x, "b": y} for x, y in pairs if x != y],
               "both": len(pairs)}
    kernels = None
    if a.get("kernels") is not None and b.get("kernels") is not None:
        ka, kb = _keyed_kernels(a["kernels"]), _keyed_kernels(b["kernels"])
        kpairs, konly_a, konly_b = pair(list(ka), list(kb), lambda k: (_unnumbered(k[0]), k[1]))
        changed, unchanged = [], 0
        for key, key_b in kpairs:
            xa, xb = _kernel_fields(ka[key]), _kernel_fields(kb[key_b])
            fields = {f: {"a": xa[f], "b": xb[f], "change": _change(xa[f], xb[f])}
                      for f in xa if xa[f] != xb[f]}
            if fields:
                changed.append({"kernel": key[0], "launch": key[1], **({"kernel_b": key_b[0]} if key_b != key else {}),
                                "fields": fields})
            else:
                unchanged += 1
        kernels = {"only_a": [{"kernel": k, "launch": i, **_kernel_fields(ka[(k, i)])} for k, i in konly_a],
                   "only_b": [{"kernel": k, "launch": i, **_kernel_fields(kb[(k, i)])} for k, i in konly_b],
                   "changed": changed, "unchanged": unchanged,
                   "renumbered": [{"a": x[0], "b": y[0], "launch": x[1]} for x, y in kpairs if x != y],
                   "count_a": len(ka), "count_b": len(kb)}
    memory, buffers = _numbers(a["memory"], b["memory"]), _numbers(a["buffers"], b["buffers"])
    stage = None
    if a.get("stage") is not None and b.get("stage") is not None:
        diff = stage_diff(a["stage"], b["stage"], f"A {_label(a)}", f"B {_label(b)}")
        stage = {"name": a.get("stage_name"), "diff": diff}
    identical = (not fusions["only_a"] and not fusions["only_b"] and not fusions["kind_changed"]
                 and (kernels is None or not (kernels["only_a"] or kernels["only_b"] or kernels["changed"]))
                 and all(v["a"] == v["b"] for v in (*memory.values(), *buffers.values()))
                 and (stage is None or not stage["diff"]))
    return {"a": _about(a), "b": _about(b), "fusions": fusions, "kernels": kernels,
            "memory": memory, "buffers": buffers, "stage": stage, "identical": identical}


# ------------------------------------------------------------------ text

def _label(s: dict[str, Any]) -> str:
    spec = s.get("gpu_spec")
    return spec["name"] if spec else s.get("tpu_topology") or s["platform"]


def _flags_text(flags: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    return " ".join(f"--{k}={value(v)}" for k, v in flags.items())


def _side_line(tag: str, s: dict[str, Any]) -> str:
    spec = s.get("gpu_spec")
    where = f"{s['platform']} {spec['name']} ({spec['sm']}, {spec['gpu']})" if spec else \
        f"{s['platform']} {s['tpu_topology']}" if s.get("tpu_topology") else s["platform"]
    flags = _flags_text(s.get("xla_flags") or {})
    return f"{tag}: {s.get('input') or s['module']} on {where}" + (f" {flags}" if flags else "")


def _dims(v: Any) -> str:
    if isinstance(v, list):
        return "x".join(str(x) for x in (v if v[1:] != [1, 1] else v[:1]))
    if isinstance(v, float):
        return f"{v:.0%}"
    return "-" if v is None else str(v)


def _change_text(c: Any) -> str:
    if c is None:
        return ""
    if isinstance(c, float):
        return f"{c:+.0%}"
    return f"{c:+d}" if c else "0"


def _table(columns: list[tuple[str, str]], rows: list[list[str]]) -> str:
    from rich import box
    from rich.table import Table

    from ..cuda.kernels import _render

    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name, justify in columns:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        t.add_row(*row)
    return _render(t).strip("\n")


def _kernel_brief(k: dict[str, Any]) -> str:
    if "registers" not in k:  # TPU
        return (k.get("kind") or "") + (f", {k['cycles']:,} est. cycles" if k.get("cycles") is not None else "")
    occ = f", {k['warps_per_sm']} warps/SM ({_dims(k['occupancy'])})" if k.get("warps_per_sm") is not None else ""
    launch = f", {_dims(k['grid'])} × {_dims(k['block'])}" if k.get("grid") else ""
    return f"{k['registers']} regs{launch}{occ}"


def _kernel_name(kernel: str, launch: int) -> str:
    return kernel if launch == 0 else f"{kernel} (launch {launch + 1})"


def text(result: dict[str, Any]) -> str:
    """The comparison (:func:`compare`) for people: what each side is, fusions and
    kernels on one side only (``-`` A, ``+`` B), changed kernels and memory as tables
    (A, B, change), and the stage's unified diff."""
    out = [_side_line("A", result["a"]), _side_line("B", result["b"]), ""]
    f = result["fusions"]
    renumbered = f" ({len(f['renumbered'])} numbered apart)" if f["renumbered"] else ""
    out.append(f"fusions and custom calls: {f['both']} on both sides{renumbered}, {len(f['only_a'])} only in A, "
               f"{len(f['only_b'])} only in B, {len(f['kind_changed'])} of another kind")
    width = max([len(x["name"]) for x in f["only_a"] + f["only_b"] + f["kind_changed"]] + [0])
    out += [f"  - {x['name']:<{width}}  {x['kind']}" for x in f["only_a"]]
    out += [f"  + {x['name']:<{width}}  {x['kind']}" for x in f["only_b"]]
    out += [f"  ~ {x['name']:<{width}}  {x['a']} -> {x['b']}" for x in f["kind_changed"]]
    out += [f"  = {x['a']} is {x['b']} in B" for x in f["renumbered"]]
    k = result["kernels"]
    if k is not None:
        apart = f" ({len(k['renumbered'])} numbered apart)" if k["renumbered"] else ""
        out += ["", f"kernels: {k['count_a']} in A, {k['count_b']} in B; {len(k['changed'])} changed, "
                    f"{k['unchanged']} the same{apart}, {len(k['only_a'])} only in A, {len(k['only_b'])} only in B"]
        width = max([len(_kernel_name(x["kernel"], x["launch"])) for x in k["only_a"] + k["only_b"]] + [0])
        out += [f"  - {_kernel_name(x['kernel'], x['launch']):<{width}}  {_kernel_brief(x)}" for x in k["only_a"]]
        out += [f"  + {_kernel_name(x['kernel'], x['launch']):<{width}}  {_kernel_brief(x)}" for x in k["only_b"]]
        if k["changed"]:
            rows = []
            for c in k["changed"]:
                for i, (field, v) in enumerate(c["fields"].items()):
                    name = _kernel_name(c["kernel"], c["launch"]) + (f" (B: {c['kernel_b']})" if "kernel_b" in c else "")
                    rows.append([name if i == 0 else "", _FIELD_LABELS[field],
                                 _dims(v["a"]), _dims(v["b"]), _change_text(v["change"])])
            out += ["", _table([("kernel", "left"), ("field", "left"), ("A", "right"), ("B", "right"),
                                ("change", "right")], rows)]
    rows = [[_FIELD_LABELS.get(name, name), str(v["a"]), str(v["b"]), _change_text(v["change"])]
            for group in ("memory", "buffers") for name, v in result[group].items()]
    out += ["", "memory (bytes; executable's stats, then buffer assignment)",
            _table([("", "left"), ("A", "right"), ("B", "right"), ("change", "right")], rows)]
    st = result["stage"]
    if st is not None:
        out += ["", f"stage {st['name']}: the same, names renumbered" if not st["diff"] else
                f"stage {st['name']}, names renumbered by first appearance:\n" + st["diff"].rstrip("\n")]
    out += ["", "no differences" if result["identical"] else "differences found"]
    return "\n".join(out) + "\n"
