"""``mlirhlo explore``: the optimized HLO in Model Explorer, with figures laid on it.

``opt --stage model-explorer`` writes the graph JSON and, on CUDA, one node-data
overlay per figure (ir/model_explorer.py); ``explore`` writes them into a directory
and starts Model Explorer's own server on them (the ``explorer`` extra:
``ai-edge-model-explorer``, Flask and no TensorFlow). Besides the compile's figures
it can lay on the graph:

- a ``diff`` status (:func:`diff_overlays`): side B compiled with other flags or
  another spec, compared as ``mlirhlo diff`` does (core/diff.py); B's graph is written too
  (``<module>.B.model-explorer.json``), A's nodes marked removed/changed and B's
  added/changed, each overlay for its own graph;
- ``run --bisect``'s first diverging op (:func:`bisect_overlay`), from a run of the
  module against its reference (``Program.run``, execute/run.py).

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
    from ..outputs import Sink

    return Sink().file(path, data if isinstance(data, (bytes, str)) else to_json(data))


def program(source: str, input_options: Any = None, *, pipeline_spec: str | None = None,
            passes: str | None = None, pipeline_file: str | None = None,
            python_passes: Any = None) -> Any:
    """The one module of ``source`` (core.program.Program, read as ``input_options`` says:
    core.program.InputOptions) after the pipeline opt ran on it, if any: what the graph
    shows. ``python_passes``: the pass set opt's pipeline had (its plugins). DriverError
    for an input of several modules."""
    from ..core.program import InputOptions, programs

    found = programs([source], input_options or InputOptions())
    if len(found) != 1:
        raise DriverError(f"explore shows one module; '{source}' holds {len(found)}")
    return found[0].optimize(pipeline_spec, passes=passes, pipeline_file=pipeline_file,
                             python_passes=python_passes)


def graph_files(compiled: Any, directory: str, stem: str,
                label: str | None = None) -> tuple[str, list[tuple[str, str]]]:
    """The ``model-explorer`` stage of ``compiled`` (core.compiled.Compiled, one target): its
    graph as ``<stem>.model-explorer.json`` (labelled ``label``, default the module's name)
    and its figure overlays, written to ``directory``; (graph path, [(overlay, graph)])."""
    import json

    from ..ir.model_explorer import to_json

    parts = compiled.stage("model-explorer")
    assert isinstance(parts, dict)
    collection = json.loads(parts[""])
    collection["label"] = label or collection["label"]
    graph = _write(Path(directory) / (stem + SUFFIX), to_json(collection))
    overlays = [(_write(Path(directory) / f"{stem}.{part}{SUFFIX}", data), graph)
                for part, data in parts.items() if part]
    return graph, overlays


def diff_overlays(program: Any, graph_a: str, directory: str, *, target_a: Any, target_b: Any,
                  cache: bool = True) -> list[tuple[str, str]]:
    """Side B (``target_b``: another spec, other flags) of ``program`` (core.program.Program)
    against side A (``target_a``, whose graph is ``graph_a``), as ``mlirhlo diff`` compares
    them (core.diff): B's graph beside A's (``<A's stem>.B``), and a ``diff`` overlay for each."""
    import json

    from ..core.compiled import Compiled
    from ..ir import model_explorer

    a = Compiled(program, target_a, target_a.options(), cache=cache)
    b = Compiled(program, target_b, target_b.options(), cache=cache)
    b.expect(["model-explorer"])  # one compile of B for its graph and its side
    result = a.diff(b)
    stem_a = Path(graph_a).name[: -len(SUFFIX)]
    label_a = json.loads(Path(graph_a).read_text())["label"]
    # Model Explorer tells models apart, and lays overlays on them, by their labels.
    graph_b, _ = graph_files(b, directory, stem_a + ".B", label=f"{label_a} (B)")
    out = []
    for graph, side in ((graph_a, "a"), (graph_b, "b")):
        collection = json.loads(Path(graph).read_text())
        data = model_explorer.diff_overlay(collection, result, side)
        out.append((_write(graph[: -len(SUFFIX)] + ".diff" + SUFFIX, data), graph))
    return out


def bisect_overlay(program: Any, graph: str, target: Any, *, reference: str = "interpreter",
                   inputs_npz: str | None = None, rtol: float | None = None,
                   atol: float | None = None) -> tuple[str, str] | None:
    """Run ``program`` (core.program.Program) as ``mlirhlo run --bisect`` does (for
    ``target``, against ``reference``) and lay its first diverging op on ``graph``:
    (overlay, graph); None when it matched. DriverError when the run fails or the op is
    in no node."""
    import json

    from ..execute import run as runner
    from ..ir import model_explorer

    if reference not in runner.REFERENCES:
        from ..errors import did_you_mean

        raise DriverError(f"unknown reference '{reference}'",
                          hint=did_you_mean(reference, runner.REFERENCES) or ", ".join(runner.REFERENCES))
    report = program.run(target, reference=reference, inputs_npz=inputs_npz, rtol=rtol, atol=atol, bisect=True)
    if report.status in ("invalid", "failed", "crashed", "timeout"):
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
