"""The ``model-explorer`` stage and its overlays (ir/model_explorer.py, batch/explore.py).

Most tests use a one-dot module (a GEMM fusion and a loop fusion on CUDA). The files are
checked against Model Explorer's own code where the ``explorer`` extra is installed
(its dataclasses, loaded with dacite as its server does), and the MLP step (CUDA) and two
matmuls (a device-less v5e) are opened in Model Explorer's web app in headless Chromium
with no network (tests/headless_chromium.py). Those two tests cost 5-30 s each (Model
Explorer's app lays the graph out in the browser).
"""

from __future__ import annotations

import importlib.util
import json
import socket
from pathlib import Path

import pytest

from tests.conftest import DATA, DENSE_LAYER, assert_one_line_error

MLP = DATA / "mlp_train_step.before_optimizations.txt"

FIGURES = {"roofline-time", "bound", "registers", "occupancy", "spills"}


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("me") / "small.mlir"
    path.write_text(DENSE_LAYER)
    return path


@pytest.fixture(scope="module")
def cuda_parts(small):
    """The small module's stage on H100 (API), with its kernel and cost rows."""
    import mlirhlo_driver as mh

    c = mh.load(str(small)).compile(mh.Target.cuda("h100_sxm"))
    return c.stage("model-explorer"), c.kernels(), c.fusion_costs()


def _graph(data: bytes | str) -> dict:
    return json.loads(data)


def _nodes(collection: dict, graph: int = 0) -> dict[str, dict]:
    return {n["id"]: n for n in collection["graphs"][graph]["nodes"]}


def _attr(node: dict, key: str) -> str | None:
    return next((a["value"] for a in node["attrs"] if a["key"] == key), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# What the app shows once it has laid the graph out and loaded the overlays: the side
# panel's graph info and every table row (root-level nodes, node data).
def _shown(overlay: str, columns: int) -> str:
    """The page's "done" expression: null until the overlay named ``overlay`` is listed and
    the node data table has its ``columns`` figure columns (each row: index, node, figures)."""
    return """(() => {
  const t = document.body.innerText;
  if (t.includes('Processing') || t.includes('Converting') || !t.includes('NODE DATA PROVIDERS')) return null;
  const tables = [...document.querySelectorAll('table')].map(
      table => [...table.querySelectorAll('tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim())));
  // The overlays load after the graph (later still on a loaded machine): wait for them
  // and for the node data table to have its figure columns.
  const last = tables.length ? tables[tables.length - 1] : [];
  if (!t.includes(%s) || !last.some(row => row.length === %d)) return null;
  return {text: t, tables: tables, canvases: document.querySelectorAll('canvas').length};
})()""" % (json.dumps(overlay), 2 + columns)


SHOWN = _shown("registers per thread", 2)


# ------------------------------------------------------------------ the graph

def test_cpu_graph_nests_fused_instructions_in_their_fusion(cli, small, tmp_path):
    out = tmp_path / "g.json"
    r = cli("opt", small, "--platform", "cpu", "--stage", "model-explorer", "-o", out)
    assert r.code == 0, r.err
    g = _graph(out.read_text())
    assert g["label"] == "small" and g["graphs"][0]["id"].startswith("main")
    nodes = _nodes(g)
    fusions = [n for n in nodes.values() if n.get("config", {}).get("pinToGroupTop")]
    assert fusions, nodes.keys()
    for f in fusions:
        # The fusion is the layer's pinned node: its namespace ends with its own name, and it
        # has no edges of its own (its operands feed its parameters).
        assert f["namespace"].split("/")[-1] == f["id"] and f["incomingEdges"] == []
        assert _attr(f, "opcode").startswith("fusion:k") and _attr(f, "kernel") == f["id"].replace(".", "_")
        inside = [n for n in nodes.values() if n["namespace"] == f["namespace"] and n is not f]
        assert inside and all(_attr(n, "kernel") is None for n in inside)  # fused ops launch nothing
        assert g["graphs"][0]["groupNodeAttributes"][f["namespace"]]["opcode"] == _attr(f, "opcode")
    # Edges name existing nodes; every op has its shape with layout, as XLA prints it.
    for n in nodes.values():
        assert all(e["sourceNodeId"] in nodes for e in n["incomingEdges"])
        assert _attr(n, "shape") == n["outputsMetadata"][0]["attrs"][0]["value"]
    tanh = next(n for n in nodes.values() if _attr(n, "opcode") == "tanh")
    assert _attr(tanh, "shape") == "f32[64,256]{1,0}"
    # The location of the op in the input file, the buffer name "-" replaced by the path.
    assert _attr(tanh, "source") == f"{small}:5:8"
    # tanh's fusion reads the dot: one of its fused parameters is fed by the dot's node (the
    # root of the dot's own fusion, where XLA fused it), the other by an entry parameter.
    params = [n for n in nodes.values() if n["namespace"] == tanh["namespace"] and _attr(n, "opcode") == "parameter"]
    feeds = sorted(_attr(nodes[e["sourceNodeId"]], "opcode") for p in params for e in p["incomingEdges"])
    assert feeds == ["dot", "parameter"], feeds


def test_users_of_a_fusion_read_its_fused_root():
    """Hand-made optimized module: a fusion of (add, multiply) used by a tuple."""
    from mlirhlo_driver.ir import hlo_proto, model_explorer

    m = hlo_proto.message_class()()
    m.name, m.entry_computation_name, m.entry_computation_id = "m", "main", 2
    body = m.computations.add(id=1, name="fused_computation", root_id=13)
    s = {"element_type": 11, "dimensions": [4], "layout": {"minor_to_major": [0]}}
    body.instructions.add(id=11, name="param_0", opcode="parameter", parameter_number=0, shape=s)
    body.instructions.add(id=12, name="add.1", opcode="add", operand_ids=[11, 11], shape=s)
    body.instructions.add(id=13, name="multiply.1", opcode="multiply", operand_ids=[12, 11], shape=s)
    main = m.computations.add(id=2, name="main", root_id=23)
    main.instructions.add(id=21, name="p", opcode="parameter", parameter_number=0, shape=s)
    main.instructions.add(id=22, name="loop_fusion", opcode="fusion", fusion_kind="kLoop", operand_ids=[21],
                          called_computation_ids=[1], shape=s)
    main.instructions.add(id=23, name="tuple.1", opcode="tuple", operand_ids=[22],
                          shape={"element_type": 13, "tuple_shapes": [s]})
    g = model_explorer.graph_collection(hlo_proto.encode(m), "m")
    assert [x["id"] for x in g["graphs"]] == ["main"]  # the fusion body is no graph of its own
    nodes = _nodes(g)
    assert list(nodes) == ["p", "loop_fusion", "param_0", "add.1", "multiply.1", "tuple.1"]
    assert [e["sourceNodeId"] for e in nodes["tuple.1"]["incomingEdges"]] == ["multiply.1"]
    assert [e["sourceNodeId"] for e in nodes["param_0"]["incomingEdges"]] == ["p"]
    assert [(e["sourceNodeId"], e["targetNodeInputId"]) for e in nodes["multiply.1"]["incomingEdges"]] == \
        [("add.1", "0"), ("param_0", "1")]
    assert nodes["add.1"]["namespace"] == "loop_fusion" and nodes["p"]["namespace"] == ""
    assert _attr(nodes["tuple.1"], "shape") == "(f32[4]{0})"
    assert _attr(nodes["loop_fusion"], "fused_computation") == "fused_computation"


def test_control_flow_bodies_are_graphs_with_their_own_kernel_figures():
    """jax's scan (a while loop) on H100: the while names its condition and body as
    subgraphs, each a graph; the kernels launched inside them get their figures there."""
    import mlirhlo_driver as mh

    scan = mh.load(str(DATA / "jax_dumps" / "module_scan.before_optimizations.txt"))
    c = scan.compile(mh.Target.cuda("h100_sxm"))
    parts = c.stage("model-explorer")
    g = _graph(parts[""])
    graphs = {x["id"]: {n["id"]: n for n in x["nodes"]} for x in g["graphs"]}
    entry = g["graphs"][0]["id"]
    (loop,) = [n for n in graphs[entry].values() if _attr(n, "opcode") == "while"]
    assert len(loop["subgraphIds"]) == 2 and set(loop["subgraphIds"]) <= set(graphs)
    regs = json.loads(parts["registers"])
    computation = {r.name: r.computation for r in c.fusion_costs()}  # where each launched instruction is
    where = {k.hlo_instruction: computation[k.hlo_instruction] for k in c.kernels()}
    assert {n: graph for graph, data in regs.items() for n in data["results"]} == where
    assert set(where.values()) - {entry}  # some kernels run inside the loop's bodies
    assert set(where.values()) <= set(loop["subgraphIds"]) | {entry}


@pytest.mark.parametrize("shape, text", [
    ({"element_type": 11, "dimensions": [2, 3], "layout": {"minor_to_major": [0, 1]}}, "f32[2,3]{0,1}"),
    ({"element_type": 16, "dimensions": []}, "bf16[]"),
    ({"element_type": 4, "dimensions": [8], "is_dynamic_dimension": [True], "layout": {"minor_to_major": [0]}},
     "s32[<=8]{0}"),
    ({"element_type": 11, "dimensions": [8, 128], "layout": {"minor_to_major": [1, 0], "tiles": [{"dimensions": [8, 128]}],
                                                              "memory_space": 1}}, "f32[8,128]{1,0:T(8,128)S(1)}"),
    ({"element_type": 13, "tuple_shapes": [{"element_type": 1, "dimensions": [2]}, {"element_type": 17}]},
     "(pred[2], token[])"),
])
def test_shapes_print_as_xla_prints_them(shape, text):
    from mlirhlo_driver.ir import hlo_proto, model_explorer

    msg = hlo_proto.message_class("ShapeProto")()
    from google.protobuf import json_format

    json_format.ParseDict(shape, msg)
    assert model_explorer.shape_text(msg) == text


def test_the_graph_is_deterministic(small):
    import mlirhlo_driver as mh

    p = mh.load(str(small))
    first = p.compile(mh.Target.cpu()).stage("model-explorer")
    assert first == p.compile(mh.Target.cpu()).stage("model-explorer") and list(first) == [""]


# ------------------------------------------------------------------ overlays

def test_cuda_overlays_carry_the_kernel_and_roofline_figures(cuda_parts):
    parts, kernels, costs = cuda_parts
    # Occupancy needs launch dimensions (jaxlib 0.9's thunk sequence has none: no file).
    assert set(parts) == {""} | FIGURES - ({"occupancy"} if all(k.occupancy is None for k in kernels) else set())
    g = _graph(parts[""])
    nodes, graph_id = _nodes(g), g["graphs"][0]["id"]
    regs = json.loads(parts["registers"])[graph_id]
    assert regs["results"] == {k.hlo_instruction: {"value": k.registers} for k in kernels}
    assert set(regs["results"]) <= set(nodes) and all(nodes[n].get("config") for n in regs["results"]
                                                      if "fusion" in n)
    occ = json.loads(parts.get("occupancy", b"{}")).get(graph_id, {}).get("results", {})
    assert occ == {k.hlo_instruction: {"value": round(k.occupancy * 100, 2)} for k in kernels
                   if k.occupancy is not None}
    spills = json.loads(parts["spills"])[graph_id]["results"]
    assert spills == {k.hlo_instruction: {"value": k.spill_stores + k.spill_loads} for k in kernels}
    time = json.loads(parts["roofline-time"])[graph_id]
    assert time["results"] == {c.name: {"value": round(c.seconds * 1e6, 4)} for c in costs if c.seconds is not None}
    assert [s["stop"] for s in time["gradient"]] == [0, 0.5, 1]
    bound = json.loads(parts["bound"])[graph_id]["results"]
    assert {n: r["value"] for n, r in bound.items()} == {c.name: c.bound for c in costs if c.bound}
    assert {r["bgColor"] for r in bound.values()} <= {"#4e79a7", "#e15759"}
    assert any(c.bound for c in costs) and any("gemm" in n for n in regs["results"])


def test_several_files_to_one_output_is_an_error_naming_dump_dir(cli, small, tmp_path, cuda_parts):
    r = cli("opt", small, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "model-explorer",
            "-o", tmp_path / "g.json")
    line = assert_one_line_error(r, code=2)
    n = len(cuda_parts[0])
    assert f"gives {n} files (the graph and one overlay per figure): use --dump-dir" in line and n > 4


def test_diff_overlay_marks_each_side():
    """A hand-made comparison (core.diff.compare's shape) on hand-made graphs: A's nodes
    removed/changed, B's added/changed, a changed kernel named by its B name on B."""
    from mlirhlo_driver.ir import model_explorer

    def collection(*ids):
        return {"label": "m", "graphs": [{"id": "main", "nodes": [{"id": i, "attrs": []} for i in ids]}]}

    result = {"fusions": {"only_a": [{"name": "gemm_fusion_dot", "kind": "kCustom"}],
                          "only_b": [{"name": "cublas-lt-matmul.1", "kind": "__cublas$lt$matmul"}],
                          "kind_changed": []},
              "kernels": {"only_a": [{"kernel": "gemm_fusion_dot", "launch": 0}],
                          "only_b": [{"kernel": "wrapped_tanh", "launch": 0}],
                          "changed": [{"kernel": "loop_add_fusion_1", "kernel_b": "loop_add_fusion_2", "launch": 0,
                                       "fields": {"registers": {"a": 16, "b": 20, "change": 4},
                                                  "occupancy": {"a": 1.0, "b": 0.5, "change": -0.5}}}]}}
    a = model_explorer.diff_overlay(collection("gemm_fusion_dot", "loop_add_fusion.1", "p"), result, "a")
    assert a == {"main": {"name": "diff (A)", "results": {
        "gemm_fusion_dot": {"value": "removed", "bgColor": "#e15759"},
        "loop_add_fusion.1": {"value": "changed: registers 16 -> 20, occupancy 100% -> 50%", "bgColor": "#f28e2b"}}}}
    b = model_explorer.diff_overlay(collection("cublas-lt-matmul.1", "wrapped_tanh", "loop_add_fusion.2"), result, "b")
    assert {n: r["value"] for n, r in b["main"]["results"].items()} == {
        "cublas-lt-matmul.1": "added", "wrapped_tanh": "added",
        "loop_add_fusion.2": "changed: registers 16 -> 20, occupancy 100% -> 50%"}


def test_bisect_overlay_matches_the_location_whatever_the_buffer_name():
    from mlirhlo_driver.ir import model_explorer

    def node(i, src):
        return {"id": i, "attrs": [{"key": "source", "value": src}] if src else []}

    g = {"graphs": [{"id": "main", "nodes": [node("maximum.0", "m.mlir:3:8"), node("add.0", "m.mlir:2:8"),
                                             node("maximum.1", "-:3:8"), node("p", None),
                                             node("other", "other.mlir:3:8")]}]}
    got = model_explorer.bisect_overlay(g, "m.mlir:3:8", "%1 = stablehlo.maximum")
    assert set(got["main"]["results"]) == {"maximum.0", "maximum.1"}
    assert got["main"]["results"]["maximum.0"] == {"value": "first diverging: %1 = stablehlo.maximum",
                                                   "bgColor": "#e15759"}
    assert model_explorer.bisect_overlay(g, "m.mlir:9:1") == {}


# ------------------------------------------------------------------ with Model Explorer's own code

def test_files_load_with_model_explorers_own_classes(cuda_parts):
    pytest.importorskip("model_explorer", reason="needs the explorer extra")
    from dacite import Config, from_dict
    from model_explorer.graph_builder import GraphCollection
    from model_explorer.node_data_builder import GraphNodeData

    parts = cuda_parts[0]
    collection = from_dict(GraphCollection, json.loads(parts[""]), config=Config(strict=True))
    assert collection.label == "small" and collection.graphs[0].nodes
    assert any(n.config and n.config.pinToGroupTop for n in collection.graphs[0].nodes)
    for figure in FIGURES:
        for graph_id, data in json.loads(parts[figure]).items():
            # Model Explorer's Python types call a value a number; its app takes strings too
            # ("memory"/"compute": one colour per value).
            check = Config(strict=True, check_types=figure != "bound")
            got = from_dict(GraphNodeData, data, config=check)
            assert got.results and graph_id == collection.graphs[0].id


def _explore_page(tmp_path, name, program, figures, target):
    """(graph file, overlay files, page address, explore's command line, port) for a browser
    test of ``explore PROGRAM TARGET...`` (its module ``name``) with the overlays ``figures``:
    the address as explore's server prints it (from Model Explorer's own config; the files
    need not exist yet)."""
    import sys

    from mlirhlo_driver.batch import explore
    from mlirhlo_driver.batch.explore import SUFFIX

    port = _free_port()
    out = tmp_path / "ex"
    graph = out / f"{name}{SUFFIX}"
    overlays = [out / f"{name}.{f}{SUFFIX}" for f in figures]
    files = explore.Files(str(out), [str(graph)], [(str(o), str(graph)) for o in overlays])
    out.mkdir()
    graph.write_text(json.dumps({"label": name, "graphs": []}))  # replaced by explore's
    url = f"http://127.0.0.1:{port}/?data={explore.config(files).to_url_param_value()}"
    serve = [sys.executable, "-m", "mlirhlo_driver", "explore", str(program), *target, "--dump-dir", str(out),
             "--host", "127.0.0.1", "--port", str(port), "--no-browser"]
    return graph, overlays, url, serve, port


def test_model_explorer_renders_the_mlp_step_with_fusions_and_overlays(tmp_path):
    pytest.importorskip("model_explorer", reason="needs the explorer extra")
    from tests.headless_chromium import find_or_install, render

    browser, why = find_or_install()
    if browser is None:
        pytest.skip(f"needs headless Chromium: {why}")
    import re

    graph, overlays, url, serve, port = _explore_page(tmp_path, "mlp_train_step", MLP, ("registers", "bound"),
                                                      ("--platform", "cuda", "--gpu-spec", "h100_sxm"))
    r = render(browser, url, SHOWN, serve=serve, port=port, timeout=240)
    shown = r.value
    collection = json.loads(graph.read_text())
    entry = collection["graphs"][0]
    fusions = sorted({n["namespace"] for n in entry["nodes"] if n["namespace"]})
    # The graph info: every node of the entry graph, one layer per fusion.
    assert re.search(rf"op node count\s+{len(entry['nodes'])}\b", shown["text"]), shown["text"][:800]
    assert re.search(rf"layer count\s+{len(fusions)}\b", shown["text"])
    # Both overlays loaded, by their names.
    assert "registers per thread" in shown["text"] and "bound" in shown["text"]
    # The root-level table lists each fusion (as a collapsed layer) with its figure; the
    # node data table each fusion's own registers and bound, as the files say.
    root_level, node_data = shown["tables"][-2], shown["tables"][-1]
    assert set(fusions) <= {row[1] for row in root_level if len(row) > 1}, (fusions, root_level)
    regs = json.loads(overlays[0].read_text())[entry["id"]]["results"]
    bound = json.loads(overlays[1].read_text())[entry["id"]]["results"]
    rows = {row[1]: row[2:] for row in node_data if len(row) == 4 and row[1] in regs}
    assert rows and all(rows[n] == [str(regs[n]["value"]), bound[n]["value"]] for n in rows), rows
    assert shown["canvases"] >= 1  # the graph is drawn (WebGL)
    # Everything came from explore's server, with no network: the one remote request is
    # Model Explorer's own stylesheet asking for a web font, which fails offline unharmed.
    remote = [u for u in r.requests if not u.startswith(f"http://127.0.0.1:{port}/")]
    assert all(u.startswith("https://fonts.gstatic.com/") for u in remote), (r.isolation, remote)
    assert any(u.startswith(f"http://127.0.0.1:{port}/api/v1/read_text_file?path={graph}") for u in r.requests)


def test_tpu_overlays_carry_libtpus_estimates_and_the_roofline(cli, tmp_path):
    """explore on a device-less v5e: the optimized TPU graph, and per fusion its estimated
    time and cycles (the kernels rows) and roofline figures, loadable by Model Explorer."""
    from tests.tpu.conftest import static_profile_skip_reason

    if static_profile_skip_reason():
        pytest.skip(static_profile_skip_reason())
    out = tmp_path / "ex"
    r = cli("explore", DATA / "tpu" / "matmul_tanh.mlir", "--tpu-topology", "v5e:1x1", "--no-serve",
            "--dump-dir", out)
    assert r.code == 0, r.err
    figures = {"estimated-time", "cycles", "roofline-time", "bound"}
    assert {p.name.split(".")[1] for p in out.glob("matmul_tanh.*.model-explorer.json")} == figures
    collection = json.loads((out / "matmul_tanh.model-explorer.json").read_text())
    nodes = {n["id"] for g in collection["graphs"] for n in g["nodes"]}
    data = {f: json.loads((out / f"matmul_tanh.{f}.model-explorer.json").read_text()) for f in figures}
    (graph_id, cycles), = data["cycles"].items()
    assert graph_id == collection["graphs"][0]["id"]
    assert set(cycles["results"]) == {"convolution_tanh_fusion"} <= nodes
    assert cycles["results"]["convolution_tanh_fusion"]["value"] > 0
    est = data["estimated-time"][graph_id]["results"]["convolution_tanh_fusion"]["value"]
    assert est == pytest.approx(cycles["results"]["convolution_tanh_fusion"]["value"] / 1.5e3, rel=1e-3)
    assert data["bound"][graph_id]["results"]["convolution_tanh_fusion"]["value"] == "memory"
    if importlib.util.find_spec("model_explorer") is not None:
        from dacite import Config, from_dict
        from model_explorer.node_data_builder import GraphNodeData

        for f in figures - {"bound"}:
            assert from_dict(GraphNodeData, data[f][graph_id], config=Config(strict=True)).results


def test_model_explorer_shows_each_fusions_tpu_figures_as_the_kernels_rows_give_them(cli, tmp_path):
    """explore on a device-less v5e, opened in Model Explorer's web app (headless Chromium, no
    network) with its four TPU overlays: the node data table shows, for each fusion libtpu
    estimated, the estimated µs, cycles, roofline time and bound that `kernels --json` gives
    for it (two 2048x2048 matmuls: two fusions with figures of their own)."""
    pytest.importorskip("model_explorer", reason="needs the explorer extra")
    from tests.tpu.conftest import static_profile_skip_reason

    if static_profile_skip_reason():
        pytest.skip(static_profile_skip_reason())
    from tests.headless_chromium import find_or_install, render

    browser, why = find_or_install()
    if browser is None:
        pytest.skip(f"needs headless Chromium: {why}")

    program = DATA / "tpu" / "matmul_2048.mlir"
    figures = ("estimated-time", "cycles", "roofline-time", "bound")  # the table's columns, in this order
    _, _, url, serve, port = _explore_page(tmp_path, "matmul_2048", program, figures,
                                           ("--platform", "tpu", "--tpu-topology", "v5e:1x1"))
    shown = render(browser, url, _shown("libtpu estimated cycles", len(figures)), serve=serve, port=port,
                   timeout=240).value
    r = cli("kernels", program, "--platform", "tpu", "--tpu-topology", "v5e:1x1", "--json")
    assert r.code == 0, r.err
    (module,) = json.loads(r.out)
    kernels = {k["name"]: k for k in module["rows"]}
    table = {row[1]: row[2:] for row in shown["tables"][-1] if len(row) == 2 + len(figures)}
    assert set(kernels) == {"convolution_tanh_fusion", "fusion"} <= set(table), table
    for name, k in kernels.items():
        est, cycles, roofline, bound = table[name]
        assert float(est) == pytest.approx(k["seconds"] * 1e6, abs=1e-4), (name, est, k)
        assert int(cycles) == k["cycles"], (name, cycles, k)
        assert float(roofline) == pytest.approx(k["roofline_seconds"] * 1e6, abs=1e-4), (name, roofline, k)
        assert bound == k["bound"], (name, bound, k)
    # The two fusions' own figures, not one shown twice.
    assert table["convolution_tanh_fusion"][1] != table["fusion"][1]
    # Nodes libtpu did not estimate show none.
    assert all(v == "-" for n, row in table.items() if n not in kernels for v in row), table
    assert shown["canvases"] >= 1  # the graph is drawn (WebGL)
