"""The text of the listing commands (``--list-stages``, ``--list-passes``,
``mlirhlo passes``), built by the library so every front-end prints the same
thing. Functions return text; nothing here imports jax, and the stage table
needs no jaxlib either (the start-up tests hold it to that).
"""

from __future__ import annotations

from typing import Any

from . import registry as stage_registry


def stage_table(platform: str | None) -> str:
    """One row per stage available for ``platform``: name, extension, level, description."""
    rows = [(s.name, s.ext, s.level, s.description) for s in stage_registry.available(platform)]
    width = max(len(r[0]) for r in rows)
    ext_width = max(len(r[1]) for r in rows) + 1
    return "".join(f"{name:<{width}}  {'.' + ext:<{ext_width}}  {level:<4}  {description}\n"
                   for name, ext, level, description in rows)


def pass_catalog(python_passes: Any = None) -> str:
    """Every MLIR pass the installed jaxlib accepts, the Python passes of ``python_passes``
    (a mlir.python_passes.PassSet, :func:`load_plugins`'; None: the built-in and installed
    ones), and the named pipelines, as sections with ``#`` headers."""
    from .mlir import passes, pipeline

    catalog = passes.all_passes(python_passes)
    width = max(len(n) for n in catalog)
    native = [p for p in catalog.values() if p.origin != "python"]
    written = [p for p in catalog.values() if p.origin == "python"]
    lines = [f"# {len(native)} passes accepted by the installed jaxlib (name, anchor, description)"]
    lines += [f"{info.name:<{width}}  {info.anchor:<15} {info.description}".rstrip()
              for info in sorted(native, key=lambda p: p.name)]
    lines.append(f"\n# {len(written)} passes written in Python (built in, plugins, entry points)")
    lines += [f"{info.name:<{width}}  {info.anchor:<15} {info.description}".rstrip()
              for info in sorted(written, key=lambda p: p.name)]
    lines.append("\n# named pipelines (--pipeline @NAME)")
    for named in pipeline.named_pipelines():
        lines.append(f"@{named.name:<{width - 1}}  {named.summary}")
        lines.append(f"{'':<{width}}  {named.spec}")
    return "\n".join(lines) + "\n"


def load_plugins(files: list[str] | tuple[str, ...] | None) -> Any:
    """The Python passes a command's pipelines may name with ``--load-pass-plugin`` files
    ``files``: a mlir.python_passes.PassSet of the built-in and installed passes and theirs,
    the command's own (nothing else in the process sees them). None without files: the
    built-in and installed ones, made where a pipeline needs them (a cached stage imports
    no pass module)."""
    if not files:
        return None
    from .mlir import passes

    return passes.load_plugins(files)


def tpu_spec_table(*, as_json: bool = False) -> str:
    """The shipped TPU generation specs (tpu_specs/*.toml): per chip, HBM, bandwidth, peak
    bf16, TensorCores, chips per host; the figures' sources below. ``as_json``: each spec's
    figures with their sources."""
    from .tpu import specs as tpu_specs

    specs = [s for s in (tpu_specs.spec(g) for g in tpu_specs.generations()) if s is not None]
    if as_json:
        import json

        return json.dumps([s.to_dict() for s in specs], indent=2) + "\n"

    def fig(s: Any, name: str) -> str:
        f = s.figure(name)
        return "-" if f is None else f"{f.value:g} {f.unit}".strip()

    header = ("generation", "device kind", "HBM", "HBM bandwidth", "peak bf16", "TensorCores", "chips/host")
    rows = [(s.generation, s.device_kind, fig(s, "hbm_capacity"), fig(s, "hbm_bandwidth"), fig(s, "peak_bf16"),
             fig(s, "tensorcores_per_chip"), fig(s, "chips_per_host")) for s in specs]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    sources = sorted({f.source for s in specs for _, f in s.figures})
    lines += ["per chip; sources: " + ", ".join(sources)]
    return "\n".join(lines) + "\n"


def spec_table(*, as_json: bool = False) -> str:
    """The shipped GPU specs (name, GPU, compute capability, SMs, memory) and whether
    the ptxas XLA will use can target each; that ptxas (and the others found) below.
    ``as_json``: one object per spec, with its ptxas verdict."""
    from . import targets
    from .cuda import specs as gpu_specs

    specs = gpu_specs.list_specs()
    ptxas, others, missing = targets.ptxas_in_use()
    if as_json:
        import json

        rows_json = []
        for s in specs:
            row = s.to_dict()
            row["ptxas"] = None if ptxas is None else {
                "path": ptxas.path, "version": ptxas.version_str, "source": ptxas.source,
                "can_target": ptxas.can_target(s.sm)}
            rows_json.append(row)
        return json.dumps(rows_json, indent=2) + "\n"
    header = ("name", "gpu", "cc", "target", "SMs", "memory", "bandwidth", "ptxas")
    rows = [(s.name + (" (default)" if s.name == gpu_specs.DEFAULT_SPEC else ""), s.gpu,
             s.compute_capability, s.sm, str(s.sm_count), f"{s.memory_bytes / 2**30:.0f} GiB",
             f"{s.memory_bandwidth / 1e9:.0f} GB/s",
             "ok" if ptxas is not None and ptxas.can_target(s.sm) else "no") for s in specs]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    if ptxas is None:
        lines.append(f"ptxas: none usable: {missing}")
    else:
        lines.append(f"ptxas: {ptxas.version_str} {ptxas.path} ({ptxas.source}; targets {ptxas.arch_range()})")
    lines += [f"  not used: {p.version_str} {p.path} ({p.source}; targets {p.arch_range()})" for p in others]
    return "\n".join(lines) + "\n"


def version_text() -> str:
    """``--version``: the driver and every tool version a bug report needs. Reads
    package metadata and asks ptxas (cached); imports no jax, so it stays fast."""
    from importlib import metadata

    from . import __version__, targets
    from ._native import jaxlib as _jaxlib
    from ._native import libtpu

    lines = [f"mlirhlo-driver {__version__}", *_jaxlib.version_lines(), libtpu.version_line()]
    ptxas, _, missing = targets.ptxas_in_use()
    lines.append(f"ptxas {ptxas.version_str} {ptxas.path} ({ptxas.source})" if ptxas is not None
                 else f"ptxas none usable: {missing}")
    lines += targets.cuda_tool_lines(ptxas)
    try:
        lines.append(f"llvmlite {metadata.version('llvmlite')}")
    except metadata.PackageNotFoundError:
        lines.append("llvmlite not installed")
    return "\n".join(lines) + "\n"
