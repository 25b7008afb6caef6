"""XLA stages, in pipeline order, read from one compile per module (xla/backend.py).

Patterns below match dump keys after xla/backend.py has dropped XLA's
``module_NNNN.<name>.`` prefix; CPU and CUDA name their files differently
(``cpu_after_optimizations`` vs ``sm_8.0_gpu_after_optimizations``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any

from ..errors import CompileError, StageError
from ..stages.base import XLA, Deferred, Registry, Stage, StageRequest

# libtpu's files are ``after_optimizations...`` (xla.backend drops its build from the prefix).
_AFTER_OPT = r"(?:(?:^|_)(?:cpu|gpu)_|^)after_optimizations"
CPU_ONLY = frozenset({"cpu"})
CUDA_ONLY = frozenset({"cuda"})
TPU_ONLY = frozenset({"tpu"})
CUDA_TPU = frozenset({"cuda", "tpu"})
# Stages every backend's compile gives (XLA's dumps, the executable's module, memory and cost).
ALL = frozenset({"cpu", "cuda", "tpu"})


_LL_DEFINE = r"^define [^@]*@\"?([\w.$-]+)"
_LL_KERNEL = r"^define ptx_kernel [^@]*@\"?([\w.$-]+)"


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _codegen_files(req: Any, pattern: str, stage: str) -> list[tuple[str, bytes]]:
    """The LLVM IR or PTX files of a compile; [] for a compile without kernels where XLA
    then writes none (_jaxlib.codegen_dumps_need_emitters), else the "no output" error."""
    from .._native import jaxlib as _jaxlib

    art = artifacts(req, dumps=_declared(req, stage).dumps)
    found = art.matching(pattern)
    if not found and not (art.compile_error is None and _jaxlib.codegen_dumps_need_emitters()):
        art.one(pattern, stage)  # raises the "no output" error
    return found


def _joined(req: Any, pattern: str, stage: str, comment: str, kernel_rx: str) -> str:
    """Several files of one kind (one per LLVM module), in a stable order.

    (jaxlib 0.9's XLA writes a single, unnumbered file: the key is then ``ptx``.)

    Each starts with a ``<comment> ----- <name> -----`` line, so tools can split
    them again (``mlirhlo ptx`` does). XLA numbers CUDA's files in the order
    its parallel compile finishes, so sections are named after the first kernel
    they define and sorted by that; empty files are left out.
    """
    found = _codegen_files(req, pattern, stage)
    sections = []
    for key, data in found:
        text = _text(data)
        if not text.strip():
            continue
        name = re.sub(pattern, "", key)
        if not name or name.isdigit() or re.fullmatch(r"\d+\.?", name):
            # Kernels name a section: GPU entry points first, other functions otherwise.
            kernels = sorted(set(re.findall(_LL_KERNEL, text, re.M))) if kernel_rx == _LL_DEFINE else []
            kernels = kernels or sorted(set(re.findall(kernel_rx, text, re.M)))
            name = kernels[0] if kernels else "module"
        sections.append((name, text))
    sections.sort()
    if len(sections) == 1:
        return sections[0][1]
    return "".join(f"{comment} ----- {name} -----\n{text}" + ("" if text.endswith("\n") else "\n")
                   for name, text in sections)


def _hlo(req: Any) -> str:
    return _text(_stage_artifacts(req, "hlo").one(_AFTER_OPT + r"\.txt$", "hlo"))


def _hlo_backend(req: Any) -> str:
    art = _stage_artifacts(req, "hlo-backend")
    return art.scheduled_hlo if art.scheduled_hlo.endswith("\n") else art.scheduled_hlo + "\n"


def _html(req: Any) -> str:
    from .graph_dumps import canonical_html
    from .html_page import self_contained

    return self_contained(canonical_html(_text(_stage_artifacts(req, "html").one(_AFTER_OPT + r"\.html$", "html"))))


def _dot(req: Any) -> str:
    from .graph_dumps import canonical_dot

    return canonical_dot(_text(_stage_artifacts(req, "dot").one(_AFTER_OPT + r"\.dot$", "dot")))


def _buffer_assignment(req: Any) -> str:
    return _text(_stage_artifacts(req, "buffer-assignment").one(_AFTER_OPT + r"-buffer-assignment\.txt$",
                                                                "buffer-assignment"))


def _memory_usage(req: Any) -> str:
    from .backend import to_json

    return to_json(artifacts(req).memory_stats)


def _memory(req: Any) -> str:
    """Per-device memory of the compile against the generation's HBM (tpu.memory)."""
    from ..tpu import memory

    return memory.report(artifacts(req).memory_stats, req.options.target)


def _memory_usage_report(req: Any) -> str:
    return _text(_stage_artifacts(req, "memory-usage-report").one(_AFTER_OPT + r"-memory-usage-report\.txt$",
                                                                  "memory-usage-report"))


_LLO_FILE = re.compile(r"^llo/\d+-(.+)-\d+-final_bundles\.txt$")


def _llo(req: Any) -> dict[str, bytes]:
    """libtpu's final VLIW bundles, one part per program it compiled (each fusion, the
    top-level program), named after it."""
    art = _stage_artifacts(req, "llo")
    out: dict[str, bytes] = {}
    for key, data in art.matching(r"^llo/"):
        m = _LLO_FILE.match(key)
        if m and not m.group(1).endswith("schedule-analysis"):
            out[re.sub(r"[^\w.-]+", "_", m.group(1)).strip("_")] = data
    if not out:
        art.one(r"^llo/.*final_bundles", "llo")  # raises the "no output" error
    return dict(sorted(out.items()))


def _static_profile_texts(req: Any) -> tuple[list[str], set[str]]:
    """libtpu's static LLO profile textprotos of the compile, and the chip kinds they name."""
    art = _stage_artifacts(req, "static-profile")
    texts, kinds = [], set()
    for key, data in art.matching(r"^static-profile/.*\.textproto$"):
        m = re.search(r"_(TPU[^/]*?)_static_llo_profile\.textproto$", key)
        if m:
            kinds.add(m.group(1))
        texts.append(_text(data))
    return texts, kinds


def _static_profile(req: Any) -> str:
    """libtpu's static LLO profile: estimated cycles per HLO op, most first, and their sum."""
    from ..tpu.kernels import profile_cycles

    texts, kinds = _static_profile_texts(req)
    rows = [(c, n) for n, c in profile_cycles(texts).items()]
    if not rows:
        from .._native import libtpu

        found = libtpu.in_use()
        if found is not None and not libtpu.writes_static_profile(found):
            from ..errors import StageError

            raise StageError(f"libtpu {found.version} writes no static LLO profile (libtpu "
                             f"{libtpu.STATIC_PROFILE_SINCE} and later do, jax 0.10's pin on)",
                             hint="the kernels stage lists the same ops, with XLA's FLOPs and bytes")
        _stage_artifacts(req, "static-profile").one(r"^static-profile/.*\.textproto$", "static-profile")  # "no output"
    rows.sort(key=lambda r: (-r[0], r[1]))
    width = max(len(n) for _, n in rows + [(0, "total")])
    lines = [f"# estimated cycles per HLO op: libtpu's static LLO profile ({', '.join(sorted(kinds)) or 'TPU'})"]
    lines += [f"{n:<{width}}  {c:>12,}" for c, n in rows]
    lines.append(f"{'total':<{width}}  {sum(c for c, _ in rows):>12,}")
    return "\n".join(lines) + "\n"


def tpu_kernel_rows(req: Any) -> list[Any]:
    """The TPU request's rows (tpu.kernels.TpuKernelRow): the static profile's estimate per
    op joined with the optimized module's ops and their cost analysis, once per request."""
    def compute(r: Any) -> list[Any]:
        from ..tpu import kernels

        proto = _optimized_proto(r, "kernels")
        texts, _ = _static_profile_texts(r)
        return kernels.rows(proto, kernels.profile_cycles(texts), r.options.target.topology.generation)

    return list(req.derived("tpu-kernel-rows", compute))


def _kernels(req: Any) -> Any:
    """CUDA: the kernels assembled with others of a batch (PendingBinary). TPU: the table of
    estimated cycles per op (tpu.kernels)."""
    if req.options.platform != "tpu":
        return pending_kernels(req)
    from ..tpu import kernels

    topology = req.options.target.topology
    return kernels.table_text(req.module_name, topology.name, topology.generation, tpu_kernel_rows(req))


def _cost(req: Any) -> str:
    """CPU: XLA's cost analysis of the executable. CUDA (whose compile-only client has
    none): per launched fusion, XLA's analysis of it alone and the roofline on the spec
    (cuda/roofline.py)."""
    from .backend import to_json

    art = artifacts(req)
    if req.options.platform != "cuda":
        return to_json(art.cost or {})
    from ..cuda import roofline

    rows, xla_module = cost_rows(req)
    return to_json(roofline.to_json_data(req.module_name, req.options.gpu_spec, rows, xla_module))


def _roofline(req: Any) -> str:
    """CUDA: cuda/roofline.py's table on the spec. TPU: the kernels rows on the generation's
    peaks, libtpu's estimate beside the roofline time (tpu/roofline.py)."""
    if req.options.platform == "tpu":
        from ..tpu import roofline as tpu_roofline

        topology = req.options.target.topology
        return tpu_roofline.table_text(req.module_name, topology.name, topology.generation, tpu_kernel_rows(req))
    from ..cuda import roofline

    return roofline.table_text(req.module_name, req.options.gpu_spec, cost_rows(req)[0])


def _roofline_data(req: Any) -> str:
    """The TPU roofline as data (tpu.roofline.to_json_data): what ``--plot`` draws."""
    from ..tpu import roofline as tpu_roofline
    from .backend import to_json

    topology = req.options.target.topology
    return to_json(tpu_roofline.to_json_data(req.module_name, topology.name, topology.generation,
                                             tpu_kernel_rows(req)))


def _optimized_proto(req: Any, stage: str = "cost") -> bytes:
    from ..errors import StageError

    art = artifacts(req, dumps=(_EXE,))
    if not art.optimized_proto:
        raise StageError(f"stage '{stage}' reads the optimized module, and XLA made no executable"
                         + (f" (compile failed: {art.compile_error})" if art.compile_error else ""))
    return art.optimized_proto


def cost_rows(req: Any) -> tuple[list[Any], Any]:
    """The request's per-fusion cost rows (cuda.roofline.CostRow) and XLA's analysis of
    the whole module, once per request."""
    from ..cuda import roofline

    return req.derived("cuda-cost", lambda r: roofline.cost_rows(_optimized_proto(r), r.options.gpu_spec))


def _launched(req: Any) -> dict[str, Any]:
    """Kernel name -> the instruction it runs (ir.fusions.Launched), once per request."""
    def compute(r: Any) -> dict[str, Any]:
        from ..ir import fusions

        proto = artifacts(r, dumps=(_EXE,)).optimized_proto
        return fusions.by_kernel(fusions.launched(proto)) if proto else {}

    return req.derived("launched", compute)


# ------------------------------------------------------------------ Model Explorer

def _model_explorer(req: Any) -> dict[str, bytes]:
    """The graph (part ``""``: ``<module>.model-explorer.json``) and, on CUDA and TPU, one
    node-data overlay per figure (``<module>.<figure>.model-explorer.json``;
    ir/model_explorer.py): the roofline's figures from either platform's rows
    (roofline.overlay_rows), then CUDA's kernel figures or libtpu's estimates."""
    from .. import roofline
    from ..ir import model_explorer

    graph = model_explorer.graph_collection(_optimized_proto(req, "model-explorer"), req.module_name, req.source)
    out = {"": model_explorer.to_json(graph).encode()}
    overlays: dict[str, Any] = {}
    if req.options.platform == "cuda":
        overlays = model_explorer.figure_overlays(graph, roofline.overlay_rows(cost_rows(req)[0]),
                                                  [r.to_dict() for r in kernel_rows(req)])
    elif req.options.platform == "tpu":
        rows = tpu_kernel_rows(req)
        overlays = model_explorer.figure_overlays(graph, roofline.overlay_rows(rows), None,
                                                  [r.to_dict() for r in rows])
    out.update({name: model_explorer.to_json(data).encode() for name, data in overlays.items()})
    return out


def _llvm_before(req: Any) -> str:
    return _joined(req, r"(?:^|\.)ir-no-opt\.ll$", "llvm-before-optimizations", ";", _LL_DEFINE)


def _llvm_after(req: Any) -> str:
    return _joined(req, r"(?:^|\.)ir-with-opt\.ll$", "llvm", ";", _LL_DEFINE)


_PTX_FILE = r"(?:^|\.)ptx$"


def _ptx(req: Any) -> str:
    from ..cuda.binaries import PTX_ENTRY

    return _joined(req, _PTX_FILE, "ptx", "//", PTX_ENTRY.pattern)


def _assembly(req: Any) -> Any:
    """XLA's PTX and how XLA assembles it, once per request: cubin, sass and kernels
    share it, and each ptxas run it makes (per module, or all together) happens once."""
    def compute(r: Any) -> Any:
        from ..cuda import binaries as cuda_binaries
        from .platforms import KERNEL_CACHE_FILE

        found = _codegen_files(r, _PTX_FILE, "cubin")
        return cuda_binaries.prepare(found, r.options.gpu_spec.sm, dict(r.options.xla_flags),
                                     artifacts(r, dumps=(_PTX,)).files.get(KERNEL_CACHE_FILE))

    return req.derived("cuda-assembly", compute)


def _cubin(req: Any) -> dict[str, bytes]:
    return {m.name: m.cubin for m in _assembly(req).modules_assembled()}


def _ptx_job(req: Any) -> Any:
    """The compile's PTX and XLA's ptxas options, as the group runs take them (once per request)."""
    def compute(r: Any) -> Any:
        from ..cuda import binaries as cuda_binaries

        data_dir = str(dict(r.options.xla_flags).get("xla_gpu_cuda_data_dir") or "") or None
        return cuda_binaries.ptx_job(_assembly(r), data_dir)

    return req.derived("cuda-ptx-job", compute)


class PendingBinary(Deferred):
    """One compile's ``sass`` or ``kernels``, finished with others of a batch: one
    ptxas ``-v`` run per group, and one nvdisasm when SASS is asked
    (cuda_binaries.assemble_many). Both stages of one compile share its job, so
    ``--stage sass,kernels`` assembles it once."""

    def __init__(self, job: Any, kernels: tuple[str, Any, str, dict[str, int], dict[str, Any]] | None = None):
        self.job = job
        # kernels: (module name, GPU spec, thunk sequence, kernel -> static shared memory,
        # kernel -> the HLO instruction it runs); None: sass
        self.kernels = kernels

    @property
    def size(self) -> int:
        """Bytes it holds until finished (its PTX)."""
        return sum(len(ptx) for _, _, ptx in self.job.modules)

    @classmethod
    def finish_all(cls, items: list[Deferred]) -> list[Any]:
        return _each([item for item in items if isinstance(item, PendingBinary)], PendingBinary.text)

    def text(self, result: Any) -> Any:
        """The stage's output from its job's GroupResult (a SASS error stays an error)."""
        from ..cuda import kernels
        from ..errors import DriverError

        if self.kernels is None:
            return result.sass if isinstance(result.sass, DriverError) else _sass_text(result.sass)
        module_name, spec = self.kernels[:2]
        return kernels.table_text(module_name, spec, self.rows(result))

    def rows(self, result: Any) -> list[Any]:
        from ..cuda import kernels

        assert self.kernels is not None
        _, spec, thunk_sequence, shared, launched = self.kernels
        # ptxas -v leaves out static shared memory it adds itself (1 KiB in some sm_90a
        # Triton kernels); the .nv.shared.<kernel> section of the kernel's own cubin is what
        # the driver reserves per block (cudaFuncAttributes::sharedSizeBytes, cuobjdump's
        # SHARED). No section: ptxas -v's figure (0 in every case seen).
        resources = {k: replace(r, shared=shared.get(k, r.shared)) for k, r in result.resources.items()}
        return kernels.rows([(name, list(ks)) for name, ks, _ in self.job.modules], resources,
                            thunk_sequence, spec, launched)


def _each(items: list[PendingBinary], use: Any) -> list[Any]:
    """``use(item, its GroupResult)`` for each item, or its job's error: jobs some item
    wants SASS of in one assemble_many call, the rest (kernels only, where no nvdisasm
    is needed) in another."""
    from ..cuda import binaries as cuda_binaries
    from ..errors import DriverError

    jobs = {id(i.job): i.job for i in items}
    sass = {id(i.job) for i in items if i.kernels is None}
    done: dict[int, Any] = {}
    for disassemble in (True, False):
        chosen = [job for key, job in jobs.items() if (key in sass) == disassemble]
        if chosen:
            results = cuda_binaries.assemble_many(chosen, disassemble=disassemble)
            done.update({id(job): r for job, r in zip(chosen, results)})
    return [done[id(i.job)] if isinstance(done[id(i.job)], DriverError) else use(i, done[id(i.job)])
            for i in items]


def _sass_text(sections: list[tuple[str, str]]) -> str:
    sections = [(name, text) for name, text in sections if text.strip()]
    if len(sections) == 1:
        return sections[0][1]
    return "".join(f"// ----- {name} -----\n{text}" + ("" if text.endswith("\n") else "\n")
                   for name, text in sections)


def _sass(req: Any) -> PendingBinary:
    from ..cuda import binaries as cuda_binaries

    job = _ptx_job(req)
    cuda_binaries.nvdisasm_for(job.sm, job.data_dir)  # no nvdisasm for this sm: this module's error, now
    return PendingBinary(job)


def pending_kernels(req: Any) -> PendingBinary:
    asm = _assembly(req)
    return PendingBinary(_ptx_job(req), (req.module_name, req.options.gpu_spec, _thunk_sequence(req),
                                         asm.shared_sizes(), _launched(req)))


def kernel_rows_many(items: list[PendingBinary]) -> list[Any]:
    """Each item's kernel rows (or its error), from one group run per spec."""
    return _each(items, PendingBinary.rows)


def kernel_rows(req: Any) -> list[Any]:
    """The request's kernel rows (cuda.kernels.KernelRow), or its error raised; ptxas
    reports the resources once per request."""
    from ..errors import DriverError

    rows = req.derived("kernel-rows", lambda r: kernel_rows_many([pending_kernels(r)])[0])
    if isinstance(rows, DriverError):
        raise rows
    return list(rows)


def _thunk_sequence(req: Any) -> str:
    return _text(artifacts(req).one(r"^thunk_sequence\.txt$", "thunk-sequence"))


def _autotune_results(req: Any) -> str:
    return _text(artifacts(req).one(r"^autotune_results\.pbtxt$", "autotune-results"))


def artifacts(req: StageRequest, emitters: tuple[str, ...] = (), dumps: tuple[str, ...] = ()) -> Any:
    """XLA's compile of the request's module (xla.backend.XlaArtifacts), once per request.

    It dumps what the request's ``stages`` declare (``Stage.dumps``, ``Stage.emitters``),
    and everything where the request names none. A stage that needs ``emitters`` or ``dumps``
    the first compile did not ask for gets a compile of its own, once.
    """
    art = req.derived("xla", _compile)
    if set(emitters) - set(art.emitters) or set(dumps) - set(art.dumps):
        key = "xla:" + ",".join(sorted(emitters)) + ":" + ",".join(sorted(dumps))
        art = req.derived(key, lambda r: _compile(r, emitters, dumps))
    return art


def _declared(req: StageRequest, stage: str) -> Stage:
    """The record of ``stage``: what it reads of the compile is declared there."""
    return req.registry.stages[stage]


def _stage_artifacts(req: StageRequest, stage: str) -> Any:
    """:func:`artifacts` with what ``stage`` declares it reads dumped."""
    declared = _declared(req, stage)
    return artifacts(req, declared.emitters, declared.dumps)


def _compile(req: StageRequest, emitters: tuple[str, ...] = (), dumps: tuple[str, ...] = ()) -> Any:
    from . import backend

    registry = req.registry.stages
    wanted = sorted(set(emitters) | {e for s in req.stages if s in registry for e in registry[s].emitters})
    module, plan = backend.prepared_for_xla(req.module, req.source, req.line_offset, req.options.fold_constants)
    # A check file's notes read the optimized module (which outputs came from parameters).
    extra = (*dumps, _EXE) if plan is not None else dumps
    first = not emitters and not dumps  # once per request: a second compile says nothing new
    spec, said = backend.stage_spec(req.options, module, req.source or req.module_name,
                                    dumps=dumps_for(req, extra), emitters=tuple(wanted))
    if first and req.instrumentation is not None:
        from . import instrument

        req.instrumented = instrument.compile(module, req.module_name, spec, req.instrumentation)
        art = req.instrumented.art
    else:
        try:
            done = backend.compile(module, spec, req.module_name)
        except CompileError as e:
            raise backend.before_optimizations_hint(e, req.source) from None
        art = done.art
        if first and plan is None and done.executable is not None and spec.num_devices == 1:
            req._derived.setdefault("xla-executable", done)  # a run of the same compile (Compiled.run)
    if first:
        req.notes.extend(said + art.notes)
        if plan is not None:
            _check_file_notes(req, plan, art)
    return art


def _check_file_notes(req: StageRequest, plan: Any, art: Any) -> None:
    """Notes for a self-checking module: the constants XLA must see as constants, and
    checked values that the optimized HLO computes from no parameter (XLA folded them)."""
    from ..inputs import checks
    from ..ir import hlo_dataflow

    name = req.source or req.module_name
    kept = checks.kept_note(plan)
    if kept:
        req.notes.append(f"{name}: {kept}")
    deps = hlo_dataflow.outputs_from_parameters(art.optimized_proto) if art.optimized_proto else None
    provenance = checks.checked_values(plan, deps)
    if provenance.state != "compiled":
        why = " (--fold-constants)" if plan.folded else ""
        req.notes.append(f"{name}: checked values {provenance.describe()}{why}")


def dumps_for(req: StageRequest, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """What the request's first compile dumps: what its XLA ``stages`` declare, and ``extra``;
    everything (xla.backend.ALL_DUMPS) where it names no XLA stage (the API's Compiled, whose
    stages are read later: one compile serves them all)."""
    return dumps_for_stages(req.registry, req.stages, extra, getattr(req.options, "platform", None))


def dumps_for_stages(registry: Any, names: Any, extra: tuple[str, ...] = (),
                     platform: str | None = None) -> tuple[str, ...]:
    """:func:`dumps_for` of the stages ``names`` of ``registry`` (a request's, before it is made)
    for a compile for ``platform``."""
    from . import backend

    declared = [registry.stages[s] for s in names if s in registry.stages]
    xla_stages = [s for s in declared if s.level == XLA]
    if not xla_stages:
        return backend.ALL_DUMPS
    wanted = set(extra).union(*(s.dumps for s in xla_stages))
    # A stage of two platforms (kernels) declares both one's dumps: only this compile's platform's.
    return tuple(sorted(d for d in wanted if _DUMP_PLATFORM.get(d, platform) == platform))


# What the stages read from XLA's dump (xla.backend.ALL_DUMPS' names). The thunk sequence,
# buffer assignment and autotune results come with any dump; the executable's scheduled
# HLO, memory stats and cost analysis with none.
_TEXT, _HTML, _DOT, _LLVM, _PTX, _EXE = "hlo-text", "hlo-html", "hlo-dot", "llvm-ir", "ptx", "executable-hlo"  # backend's
_PROTO = "hlo-proto"  # backend's HLO_PROTO: the HloProto XLA dumps after optimization (diff's summary)
_TPU_LLO = "tpu-llo"  # backend's TPU_LLO: libtpu's final bundles and static profile
_DUMP_PLATFORM = {_PTX: "cuda", _TPU_LLO: "tpu"}  # the dumps only one platform writes

# ------------------------------------------------------------------ XLA's hlo-opt

# XLA's hlo-opt names its stages after what its compiler hands back
# (xla/tools/hlo_opt/compiled_opt_lib.cc, gpu_opt.cc): 'hlo' is the module
# Compiler::RunHloPasses returns, before the backend schedules it; 'ptx' is the
# executable's text. mlirhlo opt's 'hlo' and 'ptx' read XLA's dump instead: the module
# XLA dumps as after_optimizations (scheduled) and one section per PTX module.
_PASSES_END = "hlo-passes-end"  # backend's HLO_PASSES_END


def _hlo_opt_hlo(req: Any) -> str:
    """CUDA: the module as XLA's HLO passes leave it (the dump at the start of the backend's
    first pipeline). Other platforms: the after_optimizations module, as 'hlo'."""
    if req.options.platform != "cuda":
        return _hlo(req)
    from .backend import HLO_PASSES_END_FILE

    return _text(_stage_artifacts(req, "hlo-opt:hlo").one(HLO_PASSES_END_FILE, "hlo"))


def _after_optimizations_proto(req: Any, stage: str) -> Any:
    """The HloProto XLA dumps after optimization (module and buffer assignment), decoded."""
    from ..ir import hlo_proto
    from .summary import AFTER_OPT_PROTO

    return hlo_proto.decode(_stage_artifacts(req, stage).one(AFTER_OPT_PROTO, stage), "HloProto")


def _hlo_opt_buffer_assignment(req: Any) -> str:
    """XLA's hlo-opt's buffer-assignment: BufferAssignment::ToVerboseString (statistics and
    peak buffers), rebuilt from the optimized HloProto (tool_outputs.buffer_assignment_verbose)."""
    from .tool_outputs import buffer_assignment_verbose

    proto = _after_optimizations_proto(req, "hlo-opt:buffer-assignment")
    if not proto.buffer_assignment.buffer_allocations:  # a backend whose dump leaves it out
        raise StageError(f"XLA's optimized HloProto on {req.options.platform} holds no buffer assignment",
                         hint="mlirhlo opt --stage buffer-assignment prints XLA's own dump of it")
    return buffer_assignment_verbose(proto)


def _hlo_opt_html(req: Any) -> bytes:
    """XLA's hlo-opt's html (RenderAllComputationsToHtml): XLA's fusion explorer with one
    frame per entry instruction, in reverse post order, constants and tuple elements left
    out, each named after it. XLA draws each frame as the instruction's neighbourhood;
    jaxlib renders only whole computations, so each frame here is the entry's graph (XLA's
    html dump) with that instruction's node drawn red. Where the compiling XLA writes its
    explorer as a zipapp (jaxlib 0.11 on), that zipapp with XLA's server and viewer
    (xla.fusion_explorer); before, XLA's HTML page (graph_dumps.with_frames)."""
    from ..ir.hlo_proto import entry_computation
    from .graph_dumps import canonical_html, entry_graph, selectors, with_frames
    from .html_page import offline_dot, self_contained

    stage = "hlo-opt:html"
    page = canonical_html(_text(_stage_artifacts(req, stage).one(_AFTER_OPT + r"\.html$", "html")))
    optimized = _after_optimizations_proto(req, stage).hlo_module
    entry = entry_computation(optimized)
    # HloComputation::ToProto writes the instructions in post order.
    names = [i.name for i in reversed(entry.instructions) if i.opcode not in ("constant", "get-tuple-element")]
    parameters = {i.name: i.parameter_number for i in entry.instructions if i.opcode == "parameter"}
    dot = entry_graph(page)
    zipapp = _fusion_explorer_probe(req.options.target) if dot is not None else None
    if zipapp is None:
        return self_contained(with_frames(page, names, parameters)).encode("utf-8")
    from . import fusion_explorer

    # What the viewer draws red: a node's shape, as XLA's own frames name it ('#node2 polygon'),
    # or a fusion cluster's (a rounded box, which Graphviz draws as a path).
    frames = [(n, 0, f"{c} polygon, {c} path" if c else "") for n, c in zip(names, selectors(dot, names, parameters))]
    return fusion_explorer.package(fusion_explorer.shell(zipapp), optimized.name, [offline_dot(dot)], frames)


# A module with a fusion for XLA to decide on, so that its Fusion Explorer dump is written.
_FUSION_PROBE_HLO = """HloModule fusion_explorer_probe

ENTRY e {
  p = f32[1024] parameter(0)
  a = f32[1024] add(p, p)
  ROOT x = f32[1024] exponential(a)
}
"""


@functools.cache
def _fusion_explorer_probe(target: Any) -> bytes | None:
    """The Fusion Explorer zipapp XLA writes for a small module compiled for ``target`` (its
    server and viewer are what hlo-opt's html packs); None where that XLA writes none
    (before jaxlib 0.11's; a platform's compiler without it). A small compile, once per
    target (a frozen value): the request's module may leave XLA nothing to decide, and XLA
    renders a graph per decision, which a large module's compile would pay for."""
    from . import backend, fusion_explorer

    module = backend.hlo_module(_FUSION_PROBE_HLO, "<fusion explorer>")
    spec = backend.CompileSpec(target, dumps=(backend.FUSION_EXPLORER,))
    found = backend.compile(module, spec, "fusion_explorer_probe").art.matching(fusion_explorer.FILE)
    return found[0][1] if found else None


# What XLA's GpuCompiler puts before an executable's PTX since after jaxlib 0.12's XLA
# (kGpuExecutablePtxMarker), so XLA's hlo-opt prints it first; none where there is no PTX.
_GPU_EXECUTABLE_MARKER = "// GPU Executable\n"


def _hlo_opt_ptx(req: Any) -> str:
    """The executable's PTX as XLA's GpuExecutable::text() holds it: XLA's marker line, then
    the PTX of each LLVM module XLA split the kernels into, in XLA's module order (the
    dump's shard numbers), each followed by a newline; modules with no code left out."""
    found = _codegen_files(req, _PTX_FILE, "ptx")
    text = "".join(_text(data) + "\n" for _, data in found if data.strip())
    return _GPU_EXECUTABLE_MARKER + text if text else text


# ------------------------------------------------------------------ Triton

# XLA's emitters whose dumps the Triton stages read (TTIR; the log of Triton's pipeline).
_TTIR_EMITTER = "triton-fusion"
_TRITON_LOG_EMITTER = "triton-to-llvm"  # xla.backend.TRITON_LOG_EMITTER: its compiles run apart
# The log's stages read the TTIR files too (for the fusions' names).
_TTIR_EMITTERS = (_TTIR_EMITTER,)
_TRITON_LOG_EMITTERS = (_TTIR_EMITTER, _TRITON_LOG_EMITTER)
_TTIR_FILE = re.compile(r"^(.+?)\.ttir\.txt$")
_TRITON_LOG_FILE = re.compile(r"^(.+)\.triton-to-llvm\.txt$")
# The pass that lowers TritonGPU IR to LLVM: the IR dumped before it is the TTGIR.
_TO_LLVM_HEADER = "// -----// IR Dump Before ConvertTritonGPUToLLVM"
_DUMP_HEADER_PREFIX = "// -----// IR Dump "


def _no_triton(req: Any) -> str:
    return (f"// {req.module_name}: no Triton fusions (XLA emitted every kernel of this module "
            "without Triton)\n")


def _ttir_fusions(art: Any) -> list[tuple[str, str, str]]:
    """(fusion, its HLO, its TTIR as XLA emitted it) for each Triton fusion, by name."""
    out = []
    for key, data in art.files.items():
        m = _TTIR_FILE.match(key)
        if m and not key.endswith(".before_validation.ttir.txt"):
            fusion = m.group(1)
            hlo = art.files.get(f"{fusion}.hlo", b"")
            out.append((fusion, _text(hlo), _text(data)))
    return sorted(out, key=lambda f: _natural(f[0]))


def _natural(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _triton_logs(req: Any) -> list[tuple[str, str]]:
    """(fusion, the "IR Dump Before" log of XLA's Triton pipeline for it), by fusion name,
    once per request (ttgir and triton-passes both read the megabytes of it).
    The log's file names the fusion with ``_`` for ``.``; named as in the HLO where known."""
    return req.derived("triton-logs", _read_triton_logs)


def _read_triton_logs(req: Any) -> list[tuple[str, str]]:
    art = artifacts(req, _TRITON_LOG_EMITTERS)
    known = {re.sub(r"\W", "_", f): f for f, _, _ in _ttir_fusions(art)}
    prefix = re.sub(r"\W", "_", art.hlo_module_name) + "."
    out = []
    for key, data in art.files.items():
        m = _TRITON_LOG_FILE.match(key)
        if m:
            name = m.group(1)
            name = name[len(art.hlo_module_name) + 1:] if name.startswith(art.hlo_module_name + ".") else \
                name[len(prefix):] if name.startswith(prefix) else name
            out.append((known.get(name, name), _text(data)))
    return sorted(out, key=lambda f: _natural(f[0]))


def _triton(req: Any) -> str:
    fusions = _ttir_fusions(artifacts(req, _TTIR_EMITTERS))
    if not fusions:
        return _no_triton(req)
    from ..stages.base import join_sections

    return join_sections("//", [(name, "".join(f"// {ln}\n" for ln in hlo.splitlines()) + ttir)
                                for name, hlo, ttir in fusions])


def _ttgir(req: Any) -> str:
    logs = _triton_logs(req)
    if not logs:
        return _no_triton(req)
    from ..errors import StageError
    from ..stages.base import join_sections

    sections = []
    for name, log in logs:
        start = _find_line(log, _TO_LLVM_HEADER, word=True)
        if start < 0:
            raise StageError(f"XLA's Triton log for fusion '{name}' has no TritonGPU IR "
                             "(no dump before ConvertTritonGPUToLLVM)")
        body = log.find("\n", start) + 1 or len(log)
        end = _find_line(log, _DUMP_HEADER_PREFIX, body)
        sections.append((name, log[body:end if end >= 0 else len(log)].strip("\n") + "\n"))
    return join_sections("//", sections)


def _find_line(text: str, prefix: str, start: int = 0, *, word: bool = False) -> int:
    """Where the first line from ``start`` on that begins with ``prefix`` (with ``word``: a
    whole word at its end; a pass name goes on with " (" or ":" and its options) starts, or
    -1. str.find: a regex over the megabytes of a Triton log took 65 ms of --stage all."""
    at = text.find(prefix, start)
    while at >= 0:
        after = text[at + len(prefix):at + len(prefix) + 1]
        if (at == 0 or text[at - 1] == "\n") and not (word and (after.isalnum() or after == "_")):
            return at
        at = text.find(prefix, at + 1)
    return -1


def _triton_passes(req: Any) -> str | dict[str, bytes]:
    logs = _triton_logs(req)
    if not logs:
        return _no_triton(req)
    return {name: log.encode() for name, log in logs}


def _summary(req: Any) -> str:
    """The compile as plain data for ``diff`` (xla.summary.summarize), as JSON."""
    import json

    from . import summary

    return json.dumps(summary.summarize(artifacts(req, dumps=(_PROTO,))))


def _kernel_rows_json(req: Any) -> str:
    """The kernel rows (cuda.kernels.KernelRow.to_dict each; TPU: tpu.kernels.TpuKernelRow's),
    as JSON: Compiled.kernels()."""
    import json

    found = tpu_kernel_rows(req) if req.options.platform == "tpu" else kernel_rows(req)
    return json.dumps([r.to_dict() for r in found])


def add_stages(stages: Registry) -> None:
    """Add XLA's stages to ``stages``, in pipeline order (after the MLIR-level ones). Each
    declares what it reads of the compile (``dumps``, ``emitters``)."""
    stages.add(Stage("hlo", "hlo", XLA, False, "HLO after XLA's optimization passes", _hlo, ALL, dumps=(_TEXT,)))
    stages.add(Stage("hlo-backend", "hlo-backend.hlo", XLA, False,
                     "the executable's final scheduled HLO module", _hlo_backend, ALL, dumps=(_EXE,)))
    stages.add(Stage("html", "html", XLA, False,
                     "self-contained HTML view of the optimized HLO graph (works offline)", _html, ALL,
                     dumps=(_HTML,)))
    stages.add(Stage("dot", "dot", XLA, False, "Graphviz graph of the optimized HLO", _dot, ALL, dumps=(_DOT,)))
    stages.add(Stage("buffer-assignment", "buffer-assignment.txt", XLA, False, "XLA's buffer assignment",
                     _buffer_assignment, ALL, dumps=(_TEXT,)))
    stages.add(Stage("memory-usage", "memory-usage.json", XLA, False,
                     "compiled memory stats (argument, output, temp, alias bytes)", _memory_usage, ALL))
    stages.add(Stage("memory-usage-report", "memory-usage-report.txt", XLA, False,
                     "XLA's memory usage report: the largest buffers and what holds them", _memory_usage_report,
                     TPU_ONLY, dumps=(_TEXT,)))
    stages.add(Stage("memory", "memory.txt", XLA, False,
                     "per-device memory (arguments, outputs, temporaries, code, peak) against the "
                     "generation's HBM: fits or not", _memory, TPU_ONLY))
    stages.add(Stage("llo", "llo", XLA, False,
                     "libtpu's final VLIW bundles (LLO), one part per compiled program", _llo, TPU_ONLY,
                     multi=True, join="//", parts="one per compiled program", dumps=(_TPU_LLO,)))
    stages.add(Stage("static-profile", "static-profile.txt", XLA, False,
                     "libtpu's static LLO profile: estimated cycles per HLO op", _static_profile, TPU_ONLY,
                     dumps=(_TPU_LLO,)))
    stages.add(Stage("cost", "cost.json", XLA, False,
                     "XLA's cost analysis: flops, bytes accessed, transcendentals (CUDA: per fusion, "
                     "with the roofline bound on the spec)", _cost, ALL, dumps=(_EXE,)))
    stages.add(Stage("roofline", "roofline.txt", XLA, False,
                     "per fusion: FLOPs, bytes, arithmetic intensity, memory/compute bound and a lower-bound "
                     "time on the spec's GPU (TPU: on the generation's peaks, beside libtpu's estimate)",
                     _roofline, CUDA_TPU, dumps=(_EXE, _TPU_LLO)))
    stages.add(Stage("model-explorer", "model-explorer.json", XLA, False,
                     "Model Explorer graph JSON of the optimized HLO (fusions as layers) and, on CUDA, "
                     "node-data overlays: roofline time, bound, registers, occupancy, spills (TPU: roofline "
                     "time, bound, libtpu's estimated time and cycles)",
                     _model_explorer, ALL, multi=True, parts="the graph and one overlay per figure",
                     # the optimized module (the graph), and on CUDA the PTX its kernel
                     # overlays assemble (as 'kernels' does); on TPU libtpu's static profile
                     dumps=(_PTX, _EXE, _TPU_LLO)))
    stages.add(Stage("llvm-before-optimizations", "ir-no-opt.ll", XLA, False,
                     "LLVM IR as emitted, before LLVM's optimizations", _llvm_before, dumps=(_LLVM,)))
    stages.add(Stage("llvm", "ir-with-opt.ll", XLA, False, "LLVM IR after LLVM's optimizations", _llvm_after,
                     dumps=(_LLVM,)))
    stages.add(Stage("llvm-after-optimizations", "ir-with-opt.ll", XLA, False, "same as 'llvm'", _llvm_after,
                     alias_of="llvm", dumps=(_LLVM,)))
    stages.add(Stage("ptx", "ptx", XLA, False, "PTX for the spec's compute capability", _ptx, CUDA_ONLY,
                     dumps=(_PTX,)))
    stages.add(Stage("triton", "ttir", XLA, False,
                     "each Triton fusion's TTIR as XLA emitted it, after the fusion's HLO", _triton, CUDA_ONLY,
                     emitters=_TTIR_EMITTERS))
    stages.add(Stage("ttir", "ttir", XLA, False, "same as 'triton' (Triton's own name)", _triton, CUDA_ONLY,
                     alias_of="triton", emitters=_TTIR_EMITTERS))
    stages.add(Stage("ttgir", "ttgir", XLA, False,
                     "each Triton fusion's TritonGPU IR, just before its lowering to LLVM", _ttgir, CUDA_ONLY,
                     emitters=_TRITON_LOG_EMITTERS))
    stages.add(Stage("triton-passes", "triton-passes.txt", XLA, False,
                     "the IR before each pass of XLA's Triton pipeline: one log per fusion",
                     _triton_passes, CUDA_ONLY, multi=True, join="//", emitters=_TRITON_LOG_EMITTERS))
    stages.add(Stage("cubin", "cubin", XLA, True,
                     "the kernels assembled for the spec's sm by XLA's ptxas: one file per kernel module",
                     _cubin, CUDA_ONLY, multi=True, dumps=(_PTX,)))
    stages.add(Stage("sass", "sass", XLA, False, "SASS: nvdisasm of the cubins", _sass, CUDA_ONLY, dumps=(_PTX,)))
    stages.add(Stage("kernels", "kernels.txt", XLA, False,
                     "per kernel: registers, spills, shared/local memory, launch dims, occupancy (TPU: per "
                     "fusion or op, libtpu's estimated cycles and time, FLOPs, bytes, bound)",
                     _kernels, CUDA_TPU, dumps=(_PTX, _EXE, _TPU_LLO)))
    stages.add(Stage("thunk-sequence", "thunk_sequence.txt", XLA, False, "the executable's thunk sequence",
                     _thunk_sequence, CUDA_ONLY))
    stages.add(Stage("autotune-results", "autotune_results.pbtxt", XLA, False,
                     "autotuning results (AutotuneResults textproto)", _autotune_results, CUDA_ONLY))
    # XLA's hlo-opt's meaning of 'hlo' and 'ptx' (commands/xla_tools.py's hlo-opt asks for these).
    stages.add(Stage("hlo-opt:hlo", "hlo", XLA, False, "the module after XLA's HLO passes, not scheduled",
                     _hlo_opt_hlo, dumps=(_TEXT, _PASSES_END), hidden=True))
    stages.add(Stage("hlo-opt:ptx", "ptx", XLA, False, "the executable's PTX, its modules joined as XLA does",
                     _hlo_opt_ptx, CUDA_ONLY, dumps=(_PTX,), hidden=True))
    stages.add(Stage("hlo-opt:buffer-assignment", "buffer-assignment.txt", XLA, False,
                     "XLA's buffer assignment statistics and peak buffers (ToVerboseString)",
                     _hlo_opt_buffer_assignment, ALL, dumps=(_PROTO,), hidden=True))
    stages.add(Stage("hlo-opt:html", "html", XLA, True,
                     "XLA's fusion explorer, one frame per entry instruction",
                     _hlo_opt_html, ALL, dumps=(_HTML, _PROTO), hidden=True))
    # Products other parts read, cached like stages: diff's summary, Compiled.kernels().
    stages.add(Stage("summary", "summary.json", XLA, False, "fusions, buffers and memory, as data (diff)",
                     _summary, ALL, dumps=(_PROTO,), hidden=True))
    stages.add(Stage("roofline-data", "roofline.json", XLA, False, "the TPU roofline, as data (--plot)",
                     _roofline_data, TPU_ONLY, dumps=(_EXE, _TPU_LLO), hidden=True))
    stages.add(Stage("kernel-rows", "kernel-rows.json", XLA, False, "the kernel rows, as data (Compiled.kernels)",
                     _kernel_rows_json, CUDA_TPU, dumps=(_PTX, _EXE, _TPU_LLO), hidden=True))
