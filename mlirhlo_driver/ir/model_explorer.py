"""Model Explorer's graph JSON and node-data overlays for an optimized HloModuleProto.

Model Explorer (Google's graph viewer, ``ai-edge-model-explorer``) reads graphs
written by any tool as JSON: a graph collection ``{"label", "graphs": [Graph]}``
(``model_explorer/graph_builder.py``: ``Graph{id, nodes}``, ``GraphNode{id, label,
namespace, subgraphIds, attrs, incomingEdges, inputsMetadata, outputsMetadata,
config}``), loaded by its built-in JSON adapter; and node data ("overlays",
``node_data_builder.py``): ``{graphId: {results: {nodeId: {value, bgColor}},
thresholds | gradient}}``. Both are written here as plain dicts, so the default
install needs none of Model Explorer's code (the ``explorer`` extra installs it
to view them; the tests load these files with its own code).

The graph follows the conventions of Model Explorer's C++ HLO adapter
(``hlo_adapter/direct_hlo_to_json_graph_convert.cc``), on the proto:

- every computation that is not a fusion body is a graph of its own, id its name
  (the entry first); an instruction calling one (a while's body and condition, a
  reduce's ``to_apply``, a branch) names it in ``subgraphIds``;
- a fusion is a namespace (a layer the viewer expands): the fused instructions
  are nodes inside it (nested fusions nest), with the fusion itself as the node
  pinned at the layer's top (id and label its HLO name, its attributes also the
  layer's ``groupNodeAttributes``); the fusion's operands feed its fused
  parameters, and its users read its fused root;
- node ids are HLO instruction names (unique in a module), labels too;
- attributes: ``opcode`` (a fusion's with its kind), ``shape`` with layout,
  ``op_name``, ``op_type``, ``source`` (``file:line``, stack frames resolved as in
  ir/fusions.py), ``custom_call_target``, ``backend_config``, the fused
  computation and the kernel a launched instruction runs as;
- each node's output 0 carries its shape (``outputsMetadata`` ``shape``), which
  the viewer shows on edges.

Overlays are keyed by the same ids: a figure of a launched instruction (a fusion,
a library call, an unfused op) is given to its node (for a fusion, the pinned
node). Pure protobuf and JSON; nothing here imports jax.
"""

from __future__ import annotations

import json
from typing import Any

from .fusions import _NOT_LAUNCHED, _source, kernel_name

# Node-data files are named by figure: <module>.<figure>.model-explorer.json.
FIGURES = ("roofline-time", "bound", "registers", "occupancy", "spills", "estimated-time", "cycles")
_BOUND_COLORS = {"memory": "#4e79a7", "compute": "#e15759"}
DIFF_COLORS = {"added": "#59a14f", "removed": "#e15759", "changed": "#f28e2b"}
BISECT_COLOR = "#e15759"
# Low values pale, high values strong (the viewer interpolates between the stops).
_GRADIENT = [{"stop": 0, "bgColor": "#fff5eb"}, {"stop": 0.5, "bgColor": "#fd8d3c"}, {"stop": 1, "bgColor": "#a63603"}]
_LOW_IS_BAD = [{"stop": 0, "bgColor": "#a63603"}, {"stop": 0.5, "bgColor": "#fd8d3c"}, {"stop": 1, "bgColor": "#fff5eb"}]


# ------------------------------------------------------------------ shapes

def shape_text(shape: Any, *, layout: bool = True) -> str:
    """A ShapeProto as XLA prints it with its layout: ``f32[8,128]{1,0}``, ``(f32[2]{0}, s32[])``;
    without ``layout`` as ``Shape::ToString()`` does by default: ``f32[8,128]``."""
    from .dtypes import TYPES

    names = {t.number: t.hlo for t in TYPES}
    if shape.tuple_shapes or names.get(shape.element_type) == "tuple":
        return "(" + ", ".join(shape_text(s, layout=layout) for s in shape.tuple_shapes) + ")"
    dyn = list(shape.is_dynamic_dimension)
    dims = ",".join(("<=" if i < len(dyn) and dyn[i] else "") + str(d) for i, d in enumerate(shape.dimensions))
    text = f"{names.get(shape.element_type, str(shape.element_type))}[{dims}]"
    if layout and shape.dimensions and shape.HasField("layout") and shape.layout.minor_to_major:
        layout = ",".join(str(d) for d in shape.layout.minor_to_major)
        tiles = "".join("T(" + ",".join(str(x) for x in t.dimensions) + ")" for t in shape.layout.tiles)
        space = f"S({shape.layout.memory_space})" if shape.layout.memory_space else ""
        text += "{" + layout + (":" + tiles + space if tiles or space else "") + "}"
    return text


# ------------------------------------------------------------------ the graph

def _attrs(msg: Any, ins: Any, by_id: dict[int, Any], launched: bool, source_file: str | None) -> list[dict[str, str]]:
    md = ins.metadata
    opcode = ins.opcode + (f":{ins.fusion_kind}" if ins.opcode == "fusion" and ins.fusion_kind else "")
    out = [("opcode", opcode), ("shape", shape_text(ins.shape))]
    if md.op_name:
        out.append(("op_name", md.op_name))
    if md.op_type:
        out.append(("op_type", md.op_type))
    source = _source(msg, md)
    if source:
        if source_file and source.startswith("-:"):  # MLIR read from text names its buffer "-"
            source = source_file + source[1:]
        out.append(("source", source))
    if ins.custom_call_target:
        out.append(("custom_call_target", ins.custom_call_target))
    if ins.opcode == "parameter":
        out.append(("parameter_number", str(ins.parameter_number)))
    if ins.opcode == "get-tuple-element":
        out.append(("tuple_index", str(ins.tuple_index)))
    called = [by_id[c].name for c in ins.called_computation_ids if c in by_id]
    if called:
        out.append(("fused_computation" if ins.opcode == "fusion" else "called_computations", ", ".join(called)))
    if launched:
        out.append(("kernel", kernel_name(ins.name)))
    if ins.backend_config:
        config = ins.backend_config.decode("utf-8", "replace") if isinstance(ins.backend_config, bytes) \
            else str(ins.backend_config)
        if config.strip() not in ("", "{}"):
            out.append(("backend_config", config))
    return [{"key": k, "value": v} for k, v in out]


def _fusion_bodies(msg: Any) -> set[int]:
    return {c for comp in msg.computations for ins in comp.instructions if ins.opcode == "fusion"
            for c in ins.called_computation_ids}


def graph_collection(proto: bytes, label: str, source_file: str | None = None) -> dict[str, Any]:
    """The optimized module (HloModuleProto bytes) as a Model Explorer graph collection
    (see the module docstring): ``{"label": label, "graphs": [...]}``, the entry first.
    ``source_file``: the input's path, for locations in the buffer MLIR calls ``-``."""
    from . import hlo_proto
    from .fusions import _scheduled

    msg = hlo_proto.decode(proto)
    by_id = {c.id: c for c in msg.computations}
    bodies = _fusion_bodies(msg)
    entry = hlo_proto.entry_computation(msg)
    # Instructions of the computations run as launch sequences carry their kernel's name.
    scheduled = _scheduled(msg, by_id)
    graphs = []
    for comp in [entry] + [c for c in msg.computations if c.id != entry.id]:
        if comp.id in bodies:
            continue
        graphs.append(_graph(msg, comp, by_id, comp.id in scheduled, source_file))
    return {"label": label, "graphs": graphs}


def _graph(msg: Any, comp: Any, by_id: dict[int, Any], scheduled: bool, source_file: str | None) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    group_attrs: dict[str, dict[str, str]] = {}

    def root_of(ins: Any) -> Any:
        """The node a user of ``ins`` reads: a fusion's fused root (nested fusions followed)."""
        while ins.opcode == "fusion" and ins.called_computation_ids and ins.called_computation_ids[0] in by_id:
            body = by_id[ins.called_computation_ids[0]]
            ins = next(i for i in body.instructions if i.id == body.root_id)
        return ins

    def edges(sources: list[Any]) -> list[dict[str, str]]:
        return [{"sourceNodeId": root_of(s).name, "sourceNodeOutputId": "0", "targetNodeInputId": str(k)}
                for k, s in enumerate(sources)]

    def add(c: Any, namespace: list[str], fusion: Any | None, outer: dict[int, Any], launched: bool) -> None:
        """The nodes of computation ``c`` (``fusion``'s body, whose operands are in ``outer``)."""
        values = {i.id: i for i in c.instructions}
        for ins in c.instructions:
            if ins.opcode == "fusion" and ins.called_computation_ids and ins.called_computation_ids[0] in by_id:
                inner = [*namespace, ins.name]
                attrs = _attrs(msg, ins, by_id, launched, source_file)
                group_attrs["/".join(inner)] = {a["key"]: a["value"] for a in attrs}
                nodes.append(_node(ins.name, ins.name, inner, attrs, [], ins, pinned=True))
                add(by_id[ins.called_computation_ids[0]], inner, ins, values, False)
                continue
            if ins.opcode == "parameter" and fusion is not None:
                # A fused parameter reads the fusion's operand of its number.
                n = ins.parameter_number
                incoming = edges([outer[fusion.operand_ids[n]]] if n < len(fusion.operand_ids)
                                 and fusion.operand_ids[n] in outer else [])
            else:
                incoming = edges([values[o] for o in ins.operand_ids if o in values])
            attrs = _attrs(msg, ins, by_id, launched and ins.opcode not in _NOT_LAUNCHED, source_file)
            node = _node(ins.name, ins.name, namespace, attrs, incoming, ins)
            subgraphs = [by_id[cid].name for cid in ins.called_computation_ids if cid in by_id]
            if subgraphs:
                node["subgraphIds"] = subgraphs
            nodes.append(node)

    add(comp, [], None, {}, scheduled)
    graph: dict[str, Any] = {"id": comp.name, "nodes": nodes}
    if group_attrs:
        graph["groupNodeAttributes"] = group_attrs
    return graph


def _node(node_id: str, label: str, namespace: list[str], attrs: list[dict[str, str]],
          incoming: list[dict[str, str]], ins: Any, pinned: bool = False) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": node_id, "label": label, "namespace": "/".join(namespace), "attrs": attrs,
        "incomingEdges": incoming,
        "outputsMetadata": [{"id": "0", "attrs": [{"key": "shape", "value": shape_text(ins.shape)},
                                                  {"key": "__tensor_tag", "value": ins.name}]}],
    }
    if pinned:
        node["incomingEdges"] = []
        node["config"] = {"pinToGroupTop": True}
    return node


def node_index(collection: dict[str, Any]) -> dict[str, str]:
    """Node id -> the id of the graph it is in."""
    return {n["id"]: g["id"] for g in collection["graphs"] for n in g["nodes"]}


# ------------------------------------------------------------------ overlays

def _overlay(name: str, per_node: dict[str, tuple[Any, str | None]], where: dict[str, str],
             gradient: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``{graphId: {name, results: {nodeId: {value[, bgColor]}}[, gradient]}}`` for the
    nodes of ``per_node`` (node id -> (value, colour or None)) found in ``where``."""
    out: dict[str, Any] = {}
    for node, (value, color) in per_node.items():
        graph = where.get(node)
        if graph is None:
            continue
        entry = out.setdefault(graph, {"name": name, "results": {}})
        entry["results"][node] = {"value": value, **({"bgColor": color} if color else {})}
        if gradient is not None:
            entry["gradient"] = gradient
    return out


def figure_overlays(collection: dict[str, Any], cost_rows: list[dict[str, Any]] | None,
                    kernel_rows: list[dict[str, Any]] | None,
                    estimates: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """One node-data object per figure (:data:`FIGURES`, those the data has): from the
    CUDA ``cost`` rows (``cuda.roofline.CostRow.to_dict``: ``name``, ``bound``,
    ``lower_bound_seconds``) the roofline time in µs and the bound; from the kernel rows
    (``cuda.kernels.KernelRow.to_dict``: ``hlo_instruction``, ``registers``, spills,
    ``occupancy``) registers, occupancy in % (a kernel launched several ways: its lowest)
    and spilled bytes (stores + loads); from TPU kernel rows (``estimates``:
    ``tpu.kernels.TpuKernelRow.to_dict``: ``name``, ``cycles``, ``seconds``) libtpu's
    estimated time in µs and cycles. The roofline figures take rows of either platform
    (``roofline.overlay_rows``). Nodes are the launched instructions; a figure no node has
    is left out."""
    where = node_index(collection)
    out: dict[str, dict[str, Any]] = {}
    if cost_rows is not None:
        time = {r["name"]: (round(r["lower_bound_seconds"] * 1e6, 4), None) for r in cost_rows
                if r.get("lower_bound_seconds") is not None}
        bound = {r["name"]: (r["bound"], _BOUND_COLORS.get(r["bound"])) for r in cost_rows if r.get("bound")}
        out["roofline-time"] = _overlay("roofline time ≥ µs", time, where, _GRADIENT)
        out["bound"] = _overlay("bound", bound, where)
    if kernel_rows is not None:
        regs: dict[str, tuple[Any, str | None]] = {}
        occ: dict[str, tuple[Any, str | None]] = {}
        spills: dict[str, tuple[Any, str | None]] = {}
        for r in kernel_rows:
            node = r.get("hlo_instruction")
            if not node:
                continue
            regs[node] = (max(r["registers"], regs.get(node, (0, None))[0]), None)
            spilled = (r.get("spill_stores") or 0) + (r.get("spill_loads") or 0)
            spills[node] = (max(spilled, spills.get(node, (0, None))[0]), None)
            if r.get("occupancy"):
                pct = round(r["occupancy"]["occupancy"] * 100, 2)
                occ[node] = (min(pct, occ.get(node, (pct, None))[0]), None)
        out["registers"] = _overlay("registers per thread", regs, where, _GRADIENT)
        out["occupancy"] = _overlay("occupancy %", occ, where, _LOW_IS_BAD)
        out["spills"] = _overlay("spilled bytes (stores + loads)", spills, where, _GRADIENT)
    if estimates is not None:
        est = {r["name"]: (round(r["seconds"] * 1e6, 4), None) for r in estimates if r.get("seconds") is not None}
        cycles = {r["name"]: (r["cycles"], None) for r in estimates if r.get("cycles") is not None}
        out["estimated-time"] = _overlay("libtpu estimated µs", est, where, _GRADIENT)
        out["cycles"] = _overlay("libtpu estimated cycles", cycles, where, _GRADIENT)
    # A figure no node has (no launch dimensions, so no occupancy, where jaxlib 0.9's thunk
    # sequence gives none): no file.
    return {name: data for name, data in out.items() if data}


def _kernel_node(kernel_rows: list[dict[str, Any]]) -> dict[str, str]:
    return {r["kernel"]: r["hlo_instruction"] for r in kernel_rows or [] if r.get("hlo_instruction")}


def _changes_text(fields: dict[str, Any]) -> str:
    def v(x: Any) -> str:
        if isinstance(x, float):
            return f"{x:.0%}" if x <= 1 else f"{x:g}"
        if isinstance(x, list):
            return "x".join(str(i) for i in x)
        return str(x)

    return ", ".join(f"{k} {v(d['a'])} -> {v(d['b'])}" for k, d in fields.items())


def diff_overlay(collection: dict[str, Any], result: dict[str, Any], side: str,
                 kernel_rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ``diff`` status of side ``side`` ("a" or "b") of a comparison
    (core.diff.compare) on that side's graph: on A, ``removed`` (fusions and kernels only
    in A) and ``changed``; on B, ``added`` and ``changed``. A changed kernel's value names
    its changed figures (``changed: registers 32 -> 40, ...``). ``kernel_rows``: that
    side's rows, to find the instruction a kernel runs (else its kernel name is matched
    against the nodes' ``kernel`` attribute, as XLA derives it from the instruction)."""
    where = node_index(collection)
    by_kernel = {kernel_name(n): n for n in where}
    by_kernel.update(_kernel_node(kernel_rows or []))
    status: dict[str, tuple[Any, str | None]] = {}
    only, word = ("only_a", "removed") if side == "a" else ("only_b", "added")
    for f in result["fusions"][only]:
        status[f["name"]] = (word, DIFF_COLORS[word])
    kernels = result.get("kernels") or {}
    for k in kernels.get(only, []):
        node = by_kernel.get(k["kernel"])
        if node:
            status[node] = (word, DIFF_COLORS[word])
    for c in kernels.get("changed", []):
        name = c["kernel"] if side == "a" else c.get("kernel_b", c["kernel"])
        node = by_kernel.get(name)
        if node and node not in status:
            status[node] = ("changed: " + _changes_text(c["fields"]), DIFF_COLORS["changed"])
    for f in result["fusions"]["kind_changed"]:
        if f["name"] in where and f["name"] not in status:
            status[f["name"]] = (f"changed: kind {f['a']} -> {f['b']}", DIFF_COLORS["changed"])
    return _overlay(f"diff ({'A' if side == 'a' else 'B'})", status, where)


def bisect_overlay(collection: dict[str, Any], location: str, op: str = "") -> dict[str, Any]:
    """``run --bisect``'s first diverging op on the optimized graph: every node whose
    ``source`` is that op's location (``file:line:col``; ``file:line`` matches any column)
    gets the value ``first diverging: <op>``. The StableHLO op's location becomes the HLO
    metadata XLA keeps through fusion, so the fused instructions it became are marked."""
    def key(loc: str) -> tuple[str, str]:  # (file, line): a column may be missing on one side
        parts = loc.split(":")
        numbers = []
        while len(parts) > 1 and parts[-1].isdigit():
            numbers.insert(0, parts.pop())
        return ":".join(parts), numbers[0] if numbers else ""

    want = key(location)
    marked: dict[str, tuple[Any, str | None]] = {}
    value = "first diverging" + (f": {op}" if op else "")
    for g in collection["graphs"]:
        for n in g["nodes"]:
            src = next((a["value"] for a in n["attrs"] if a["key"] == "source"), None)
            if src is None:
                continue
            got = key(src)
            # A module read from text names its buffer "-" on one side or the other.
            if got[1] == want[1] and want[1] and (got[0] == want[0] or "-" in (got[0], want[0])):
                marked[n["id"]] = (value, BISECT_COLOR)
    return _overlay("run --bisect", marked, node_index(collection))


def to_json(data: Any) -> str:
    """The JSON text written (sorted keys: the same module gives the same bytes)."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
