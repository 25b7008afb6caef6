"""``mlirhlo explore``: the optimized HLO in Model Explorer, with figures laid on it.

``opt --stage model-explorer`` writes the graph JSON and, on CUDA, one node-data
overlay per figure (ir/model_explorer.py); ``explore`` writes them into a directory
and starts Model Explorer's own server on them (the ``explorer`` extra:
``ai-edge-model-explorer``, Flask and no TensorFlow). Besides the compile's figures
it can lay on the graph:

- a ``diff`` status (:func:`diff_overlays`): side B compiled with other flags or
  another spec (batch/diff.py); B's graph is written too
  (``<module>.B.model-explorer.json``), A's nodes marked removed/changed and B's
  added/changed, each overlay for its own graph;
- ``run --bisect``'s first diverging op (:func:`bisect_overlay`), from a run of the
  module against its reference (execute/run.py).

The functions take plain parameters and return paths; only :func:`serve` imports
Model Explorer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DriverError

EXTRA = "pip install 'mlirhlo-driver[explorer]'"
SUFFIX = ".model-explorer.json"


def require_model_explorer() -> None:
    """DriverError (exit 2) naming what to install, unless Model Explorer is importable."""
    import importlib.util

    if importlib.util.find_spec("model_explorer") is None:
        raise DriverError("mlirhlo explore needs Model Explorer (ai-edge-model-explorer), which is not "
                          "installed", hint=EXTRA)


@dataclass
class Files:
    """What Model Explorer is started on: graph files, and overlays with the graph each is for."""

    directory: str
    graphs: list[str] = field(default_factory=list)
    overlays: list[tuple[str, str]] = field(default_factory=list)   # (node-data file, graph file)


def collect(directory: str) -> Files:
    """The graphs and overlays written there (``opt --stage model-explorer --dump-dir``, and
    :func:`diff_overlays`, :func:`bisect_overlay`): an overlay is ``<graph stem>.<figure>``;
    side B's graphs (``<stem>.B``) come after the others."""
    from ..ir.model_explorer import FIGURES

    names = sorted(p.name for p in Path(directory).glob("*" + SUFFIX))
    out = Files(directory)
    stems = [n[: -len(SUFFIX)] for n in names]
    overlay_of: dict[str, str] = {}
    for stem in stems:
        base, _, figure = stem.rpartition(".")
        if base in stems and figure in (*FIGURES, "diff", "bisect"):
            overlay_of[stem] = base
    for stem in sorted(stems, key=lambda x: (x.endswith(".B"), x)):
        if stem not in overlay_of:
            out.graphs.append(str(Path(directory) / (stem + SUFFIX)))
    for stem, base in overlay_of.items():
        out.overlays.append((str(Path(directory) / (stem + SUFFIX)), str(Path(directory) / (base + SUFFIX))))
    return out


def _write(path: str | Path, data: Any) -> str:
    from ..ir.model_explorer import to_json
    from ..outputs import write_atomic

    write_atomic(path, data if isinstance(data, (bytes, str)) else to_json(data))
    return str(path)


def graph_files(loaded: Any, target: Any, directory: str, stem: str,
                label: str | None = None) -> tuple[str, list[tuple[str, str]]]:
    """``loaded`` compiled for ``target`` (one spec): its graph as ``<stem>.model-explorer.json``
    (labelled ``label``, default the module's name) and its figure overlays, written to
    ``directory``; (graph path, [(overlay, graph)])."""
    import json

    from .. import registry
    from ..ir.model_explorer import to_json

    req = registry.request(loaded.module, loaded.name, target.options(), source=loaded.source,
                           line_offset=loaded.line_offset, stages=("model-explorer",))
    parts = req.produce("model-explorer")
    assert isinstance(parts, dict)
    collection = json.loads(parts[""])
    collection["label"] = label or collection["label"]
    graph = _write(Path(directory) / (stem + SUFFIX), to_json(collection))
    overlays = [(_write(Path(directory) / f"{stem}.{part}{SUFFIX}", data), graph)
                for part, data in parts.items() if part]
    return graph, overlays


def diff_overlays(input_path: str, graph_a: str, directory: str, *, platform: str, spec_a: str | None,
                  spec_b: str | None, flags_a: str | None, flags_b: str | None,
                  debug_options_file: str | None = None, input_format: str | None = None,
                  use_cache: bool = True) -> list[tuple[str, str]]:
    """Side B (``spec_b``, ``flags_b``) of ``input_path`` against side A, as ``mlirhlo diff``
    compares them: B's graph beside A's (``<A's stem>.B``), and a ``diff`` overlay for each."""
    import json

    from .. import targets
    from ..ir import model_explorer
    from . import diff

    result = diff.comparison(input_path, platform=platform,
                             gpu_spec=",".join(s for s in (spec_a, spec_b) if s) or None,
                             flags_a=flags_a, flags_b=flags_b, input_format=input_format, use_cache=use_cache,
                             debug_options_file_a=debug_options_file, debug_options_file_b=debug_options_file)
    stem_a = Path(graph_a).name[: -len(SUFFIX)]
    loaded = diff._load_one(input_path, input_format)
    target_b = targets.resolve(platform, gpu_spec=spec_b or spec_a, cli_flags=diff.parse_flags(flags_b, "flags_b"),
                               debug_options_file=debug_options_file)
    label_a = json.loads(Path(graph_a).read_text())["label"]
    # Model Explorer tells models apart, and lays overlays on them, by their labels.
    graph_b, _ = graph_files(loaded, target_b, directory, stem_a + ".B", label=f"{label_a} (B)")
    out = []
    for graph, side in ((graph_a, "a"), (graph_b, "b")):
        collection = json.loads(Path(graph).read_text())
        data = model_explorer.diff_overlay(collection, result, side)
        out.append((_write(graph[: -len(SUFFIX)] + ".diff" + SUFFIX, data), graph))
    return out


def bisect_overlay(input_path: str, graph: str, *, platform: str, xla_flags: tuple[tuple[str, Any], ...],
                   reference: str = "interpreter", inputs_npz: str | None = None, rtol: float | None = None,
                   atol: float | None = None, input_format: str | None = None) -> tuple[str, str] | None:
    """Run ``input_path`` as ``mlirhlo run --bisect`` does (on ``platform`` with ``xla_flags``,
    against ``reference``) and lay its first diverging op on ``graph``: (overlay, graph);
    None when it matched. DriverError when the run fails or the op is in no node."""
    import json

    from ..execute import run as runner
    from ..ir import model_explorer
    from . import diff

    if reference not in runner.REFERENCES:
        from ..errors import did_you_mean

        raise DriverError(f"unknown reference '{reference}'",
                          hint=did_you_mean(reference, runner.REFERENCES) or ", ".join(runner.REFERENCES))
    loaded = diff._load_one(input_path, input_format)
    options = runner.RunOptions(platform=platform, reference=reference, inputs_npz=inputs_npz, rtol=rtol,
                                atol=atol, bisect=True, xla_flags=xla_flags)
    report = runner.run_module(loaded.module, loaded.name, loaded.source, options, loaded.line_offset)
    if report.status in ("invalid", "failed"):
        raise DriverError(f"--bisect: the run failed: {report.message}")
    if report.status != "mismatch":
        return None
    if report.bisect is None:
        raise DriverError("--bisect: the outputs differ, but no single op of @main diverges first")
    collection = json.loads(Path(graph).read_text())
    data = model_explorer.bisect_overlay(collection, report.bisect.location, report.bisect.op)
    if not data:
        raise DriverError(f"--bisect: the first diverging op ({report.bisect.location}) is in no node of the "
                          "optimized graph (XLA kept no location for it)")
    return _write(graph[: -len(SUFFIX)] + ".bisect" + SUFFIX, data), graph


def config(files: Files) -> Any:
    """Model Explorer's own config for the files: each graph, and each overlay for its graph
    (named by the graph's label, which the app calls the model's name)."""
    import json

    require_model_explorer()
    import model_explorer

    cfg = model_explorer.config()
    for graph in files.graphs:
        cfg.add_model_from_path(graph)
    labels = {g: json.loads(Path(g).read_text())["label"] for g in files.graphs}
    for overlay, graph in files.overlays:
        cfg.add_node_data_from_path(overlay, model_name=labels.get(graph) or json.loads(Path(graph).read_text())["label"])
    return cfg


def serve(files: Files, *, host: str = "localhost", port: int = 8080, open_browser: bool = True) -> None:
    """Start Model Explorer's server on the files (:func:`config`), until Ctrl-C; with
    ``open_browser``, in the user's browser."""
    from model_explorer import server

    cfg = config(files)
    server.start(host=host, port=port, config=cfg, no_open_in_browser=not open_browser)
