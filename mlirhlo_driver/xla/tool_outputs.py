"""What XLA's hlo-opt writes besides a stage: ``--emit-proto``'s HloProto text, a compile's
dump in ``--xla_dump_to``'s layout, and for ``--passes`` the dump XLA's hlo-opt writes
(its own pipeline's: the module before and after, per-pass files, the DebugOptions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def hlo_proto_text(proto: bytes) -> str:
    """An HloModuleProto as XLA's ``hlo-opt --emit-proto`` prints it: an HloProto textproto.
    A module parsed from HLO text keeps the ids jaxlib's parser gave it: XLA's own (per
    computation since XLA's September 2025 parser), as its hlo-opt prints them."""
    from ..ir import hlo_proto as codec

    wrapper = codec.message_class("HloProto")()
    wrapper.hlo_module.CopyFrom(codec.decode(proto, "HloModuleProto"))
    return codec.to_text(wrapper)


def hlo_text(program: Any) -> str:
    """A module (core.program.Program) as XLA's hlo-opt prints it without a platform: the
    HloModuleProto as read (HLO inputs: the user's names), printed as XLA's
    ``HloModule::ToString`` does."""
    from .._native import jaxlib as _jaxlib

    proto = program.convert("hlo-proto")
    return _jaxlib.hlo_proto_to_text(proto if isinstance(proto, bytes) else proto.encode())


def scheduled(program: Any) -> bool:
    """Whether an HLO input holds a schedule (``is_scheduled=true``): XLA's hlo-opt takes
    such a module as optimized already."""
    proto = program.hlo_proto
    if proto is None:
        return False
    from ..ir import protos

    return protos.decode(proto, "xla.HloModuleProto", what="HloModuleProto").HasField("schedule")


# The stages that print an HLO module XLA made from the driver's StableHLO.
HLO_STAGES = ("hlo", "hlo-backend", "hlo-before-optimizations")


def with_user_names(text: str, program: Any) -> str:
    """An HLO stage's text (XLA's module, made from the program through StableHLO) with the
    names the user wrote (ir.hlo_names) and printed as XLA's hlo-opt prints it; as it was
    where the program is not HLO, or XLA's text does not parse back (XLA's parser takes the
    ``{...}`` of an elided constant, and the printer elides it again)."""
    from .._native import jaxlib as _jaxlib
    from ..ir import hlo_names

    original = program.hlo_proto
    if original is None:
        return text
    try:
        proto = _jaxlib.hlo_text_to_proto(text)
        return _jaxlib.hlo_proto_to_text(hlo_names.restore_names(proto, original))
    except RuntimeError:  # XLA's parser or verifier: what XLA printed stands
        return text


def write_xla_dump(directory: str, art: Any, number: int, *, pass_dumps: bool = True) -> None:
    """What XLA dumped for one compile, in its ``--xla_dump_to`` layout:
    ``module_NNNN.<name>.<what>`` (NNNN counts the modules of this command,
    where XLA uses a process-wide counter). Its ``*.html`` graph views are made
    self-contained (xla/html_page.py): XLA's load their scripts from a CDN.
    Without ``pass_dumps`` (the user asked for none) the per-pass file a stage
    read (backend.HLO_PASSES_END) is left out."""
    import re

    from .. import outputs
    from . import backend, html_page

    for key, data in art.files.items():
        if not pass_dumps and re.search(backend.HLO_PASSES_END_FILE, key):
            continue
        # Keys are XLA's names less their module_NNNN.<name>. prefix (xla/backend.py).
        name = re.sub(r"^module_\d+\.", f"module_{number:04d}.", key) if key.startswith("module_") \
            else f"module_{number:04d}.{art.hlo_module_name}.{key}"
        if name.endswith(".html"):
            data = html_page.self_contained(data.decode("utf-8")).encode("utf-8")
        outputs.write_atomic(Path(directory) / name, data)


def debug_options_text(flags: dict[str, Any]) -> str:
    """DebugOptions as XLA's hlo-opt dumps them (``module_NNNN.<name>.debug_options``): the
    options given (file < XLA_FLAGS < command line), one ``name: value`` line each in the
    order xla.proto declares them (XLA's order; measured against its lit test), which
    ``--debug_options_file`` reads back."""
    from ..ir import protos

    fields = protos.message_class("xla.DebugOptions").DESCRIPTOR.fields
    lines = []
    for f in fields:
        if f.name not in flags:
            continue
        values = flags[f.name]
        if isinstance(values, str) and protos.is_repeated(f) and f.type == f.TYPE_STRING:
            values = [v for v in values.split(",") if v]
        for v in (values if isinstance(values, (list, tuple)) else [values]):
            if isinstance(v, bool):
                text = "true" if v else "false"
            elif f.type == f.TYPE_STRING:
                text = '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
            else:
                text = str(v)
            lines.append(f"{f.name}: {text}")
    return "".join(line + "\n" for line in lines)


def write_pass_dump(directory: str, number: int, trace: Any, flags: dict[str, Any]) -> None:
    """XLA's hlo-opt dump of a ``--passes`` run (xla.passes.PassTrace) into ``directory``:
    ``module_NNNN.<name>.before_optimization.txt``, ``after_optimization.txt`` and
    ``debug_options``; with ``xla_dump_hlo_pass_re``, ``NNNN.transforms_pipeline.after_<a>.
    before_<b>.txt`` at the pipeline's start and after each matching pass that changed the
    module, as XLA's pass pipeline dumps. NNNN counts this command's modules from 0."""
    import re

    from .. import outputs
    from .._native import jaxlib as _jaxlib
    from ..ir import hlo_proto

    large = bool(flags.get("xla_dump_large_constants"))

    def text(proto: bytes) -> bytes:
        return _jaxlib.hlo_proto_to_text(proto, large_constants=large).encode()

    prefix = Path(directory) / f"module_{number:04d}.{hlo_proto.decode(trace.given).name}."
    outputs.write_atomic(Path(f"{prefix}before_optimization.txt"), text(trace.given))
    outputs.write_atomic(Path(f"{prefix}after_optimization.txt"), text(trace.result))
    outputs.write_atomic(Path(f"{prefix}debug_options"), debug_options_text(flags).encode())
    pattern = str(flags.get("xla_dump_hlo_pass_re") or "")
    if not pattern or not trace.steps:
        return
    rx = re.compile(pattern)
    names = [n for n, _ in trace.steps] + ["pipeline-end"]
    dumps = [("pipeline-start", names[0], trace.given)]
    dumps += [(n, names[i + 1], after) for i, (n, after) in enumerate(trace.steps) if after is not None]
    k = 0
    for after_name, before_name, proto in dumps:
        if rx.search(after_name) or rx.search(before_name):
            outputs.write_atomic(Path(f"{prefix}{k:04d}.transforms_pipeline.after_{after_name}."
                                      f"before_{before_name}.txt"), text(proto))
            k += 1


# ------------------------------------------------------ hlo-opt --stage=buffer-assignment

def human_bytes(n: int) -> str:
    """A byte count as XLA's ``HumanReadableNumBytes`` writes it: ``512B``, ``2.0KiB``,
    ``2.00MiB`` (whole KiB then a fraction of the unit: XLA's integer divisions)."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1024:
        return f"{sign}{n}B"
    units = "KMGTPE"
    unit = 0
    while n >= 1024 * 1024:
        n //= 1024
        unit += 1
    return f"{sign}{n / 1024.0:.{1 if unit == 0 else 2}f}{units[unit]}iB"


_C_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"', ord("'"): "\\'",
              ord("\\"): "\\\\"}


def c_escape(text: str) -> str:
    """``text`` as absl's ``CEscape`` writes it: C escapes, other bytes outside printable
    ASCII (UTF-8's too) in octal."""
    return "".join(_C_ESCAPES.get(b) or (chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}")
                   for b in text.encode("utf-8"))


def _op_metadata_text(md: Any) -> str:
    """An OpMetadata as XLA's ``OpMetadataToString`` writes it."""
    parts = []
    if md.op_type:
        parts.append(f'op_type="{c_escape(md.op_type)}"')
    if md.op_name:
        parts.append(f'op_name="{c_escape(md.op_name)}"')
    if md.source_file:
        parts.append(f'source_file="{c_escape(md.source_file)}"')
    if md.source_line:
        parts.append(f"source_line={md.source_line}")
    if md.profile_type:
        parts.append("profile_type={" + ",".join(str(t) for t in md.profile_type) + "}")
    return " ".join(parts)


def _subshape(shape: Any, index: Any) -> Any:
    for i in index:
        shape = shape.tuple_shapes[i]
    return shape


def buffer_assignment_verbose(hlo_proto: Any, max_buffers: int = 9999) -> str:
    """What XLA's hlo-opt prints for ``--stage=buffer-assignment`` (gpu_opt.cc:
    ``BufferAssignment::ToVerboseString(alias_info, 9999)``), from the HloProto XLA dumps
    after optimization (its ``buffer_assignment`` and ``hlo_module``; jaxlib gives no
    BufferAssignment object): the allocation statistics, then the buffers live at each
    allocation's peak, largest first. XLA's two fragmentation lines are left out: they come
    from its heap simulation, which the proto does not keep."""
    from ..ir.model_explorer import shape_text

    ba, module = hlo_proto.buffer_assignment, hlo_proto.hlo_module
    totals = dict.fromkeys(("parameter", "constant", "maybe_live_out", "temp", "total"), 0)
    for a in ba.buffer_allocations:
        totals["parameter"] += a.size if a.is_entry_computation_parameter else 0
        totals["constant"] += a.size if a.is_constant else 0
        totals["maybe_live_out"] += a.size if a.maybe_live_out else 0
        # BufferAllocation::IsPreallocatedTempBuffer
        temp = not (a.is_entry_computation_parameter or a.maybe_live_out or a.is_thread_local or a.is_constant)
        totals["temp"] += a.size if temp else 0
        totals["total"] += a.size
    out = ["BufferAssignment OOM Debugging.\n", "BufferAssignment stats:\n"]
    for label, key in (("parameter allocation", "parameter"), ("constant allocation", "constant"),
                       ("maybe_live_out allocation", "maybe_live_out"),
                       ("preallocated temp allocation", "temp"), ("total allocation", "total")):
        out.append(f"{label:>33}: {human_bytes(totals[key]):>10}\n")

    # TopKPeakBuffers: each allocation's peak buffers with their assigned size, ordered by
    # size (a multimap: equal sizes in insertion order), then reversed.
    values = {b.id: b for b in ba.logical_buffers}
    sizes = {(a.index, x.logical_buffer_id): x.size for a in ba.buffer_allocations for x in a.assigned}
    # (jaxlib 0.9's HloProto has no peak_buffers: the statistics alone)
    peaks = ba.peak_buffers if "peak_buffers" in ba.DESCRIPTOR.fields_by_name else ()
    peak = [(sizes.get((p.index, v), values[v].size if v in values else 0), v)
            for p in peaks for v in p.logical_buffer_ids]
    peak.sort(key=lambda sv: sv[0])
    peak = peak[::-1][:max_buffers]
    instructions = {i.id: (c, i) for c in module.computations for i in c.instructions}
    text = ["Peak buffers:"]
    for n, (size, vid) in enumerate(peak, 1):
        text.append(f"\n\tBuffer {n}:\n\t\tSize: {human_bytes(size)}")
        value = values.get(vid)
        found = instructions.get(value.defined_at.instruction_id) if value is not None else None
        if found is None:
            text.append("\n\t\t==========================\n")
            continue
        comp, ins = found
        if ins.metadata.op_name:
            text.append(f"\n\t\tOperator: {_op_metadata_text(ins.metadata)}")
        shape = shape_text(_subshape(ins.shape, value.defined_at.shape_index), layout=False)
        if ins.opcode == "parameter" and comp.id == module.entry_computation_id:
            text.append(f"\n\t\tEntry Parameter Subshape: {shape}")
        else:
            text.append(f"\n\t\tXLA Label: {ins.opcode}\n\t\tShape: {shape}")
        text.append("\n\t\t==========================\n")
    return "".join(out) + "".join(text)
