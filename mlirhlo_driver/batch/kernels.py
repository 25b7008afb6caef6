"""``mlirhlo kernels``: the kernels of many modules, side by side across GPU specs; on TPU, libtpu's
estimate per fusion or op, one table per module and topology (tpu/kernels.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import FLAGS, DriverError, log_note


def report(inputs: list[str], target: Any, *, input_options: Any = None, as_json: bool = False,
           cache: bool = True, num_partitions: int | None = None, say: Callable[[str], None] = log_note,
           progress: Callable[[Any], None] | None = None) -> str:
    """``mlirhlo kernels``: every module of ``inputs`` (any input a command takes; see
    core.program.programs) compiled device-less for each GPU spec of ``target`` (a CUDA
    targets.Target), one compile per (module, spec), the kernel rows from the stage cache
    where they are; the side-by-side table, or its JSON. ``num_partitions``: a sharded
    module's partitions (None: as many as it says; 1: unpartitioned)."""
    import json

    from ..core.compiled import Compiled
    from ..core.program import InputOptions, programs
    from ..core.progress import report as tell
    from ..cuda.kernels import KernelRow, side_by_side
    from ..xla.stages import kernel_rows_many, pending_kernels

    if target.platform not in ("cuda", "tpu"):
        raise DriverError("kernels are CUDA's and TPU's: the target's platform is " + str(target.platform))
    if not inputs:
        raise DriverError("no input modules given", hint="mlirhlo kernels --help")
    found = programs(inputs, input_options or InputOptions())
    if target.platform == "tpu":
        return _tpu_report(found, target, as_json=as_json, cache=cache, num_partitions=num_partitions, say=say,
                           progress=progress)
    target.say_notes(say)
    per_target = target.stage_options(num_partitions=num_partitions)
    specs = [options.gpu_spec for _, options in per_target]
    per_spec: list[tuple[Any, list[tuple[str, list[Any]]]]] = [(s, []) for s in specs]
    pending = []  # (compiled, where its rows go): one ptxas -v run per spec for all the modules
    compiles = []
    total, done = len(found) * len(specs), 0
    for program in found:
        for j, (_, options) in enumerate(per_target):
            tell(progress, done, total, f"{program.name} on {options.gpu_spec.name}")
            compiled = Compiled(program, target, options, cache=cache)
            compiled.expect(["kernel-rows"])
            compiles.append(compiled)
            rows: list[Any] = []
            per_spec[j][1].append((program.name, rows))
            hit = compiled._cached("kernel-rows")
            if hit is not None:
                rows += [KernelRow.from_dict(d) for d in json.loads(hit)]
            else:
                try:
                    pending.append((compiled, rows, pending_kernels(compiled._stage_request)))
                except DriverError as e:
                    raise e.about(program.source) from None  # this module's compile failed: say which
            done += 1
    for (compiled, rows, _), result in zip(pending, kernel_rows_many([p for _, _, p in pending])):
        if isinstance(result, DriverError):
            raise result.about(compiled.program.source)
        rows += result
        compiled._keep("kernel-rows", json.dumps([r.to_dict() for r in result]))
    for note in dict.fromkeys(n for c in compiles for n in c.notes_for(FLAGS)):
        say(note)
    text, data = side_by_side(per_spec)
    return json.dumps(data, indent=2) + "\n" if as_json else text


def _tpu_report(found: list[Any], target: Any, *, as_json: bool, cache: bool, num_partitions: int | None,
                say: Callable[[str], None], progress: Callable[[Any], None] | None) -> str:
    """TPU: one table per (module, topology) of libtpu's estimate per fusion or op
    (tpu.kernels), or their JSON: a list of {module, topology, generation, rows}."""
    import json

    from ..core.compiled import Compiled
    from ..core.progress import report as tell
    from ..tpu.kernels import TpuKernelRow, table_text

    target.say_notes(say)
    per_target = target.stage_options(num_partitions=num_partitions)
    total, done = len(found) * len(per_target), 0
    texts, data, compiles = [], [], []
    for program in found:
        for _, options in per_target:
            topology = options.target.topology
            tell(progress, done, total, f"{program.name} on {topology.name}")
            compiled = Compiled(program, target, options, cache=cache)
            compiled.expect(["kernel-rows"])
            compiles.append(compiled)
            rows = [TpuKernelRow.from_dict(d) for d in json.loads(compiled.stage("kernel-rows"))]
            texts.append(table_text(program.name, topology.name, topology.generation, rows))
            data.append({"module": program.name, "topology": topology.name, "generation": topology.generation,
                         "rows": [r.to_dict() for r in rows]})
            done += 1
    for note in dict.fromkeys(n for c in compiles for n in c.notes_for(FLAGS)):
        say(note)
    return json.dumps(data, indent=2) + "\n" if as_json else "\n".join(texts)
