"""``mlirhlo kernels``: the kernels of many modules, side by side across GPU specs."""

from __future__ import annotations

from typing import Any

from .. import registry
from ..errors import DriverError
from ..stages.base import StageOptions


def report(inputs: list[str], gpu_specs: str | None, *, input_format: str | None = None,
           as_json: bool = False) -> str:
    """``mlirhlo kernels``: every module of ``inputs`` compiled device-less for each
    spec of the comma list ``gpu_specs`` (default: gpu_specs.DEFAULT_SPEC), one
    compile per (module, spec); the side-by-side table, or its JSON."""
    import json

    from ..cuda import specs as specs_mod
    from ..cuda.kernels import side_by_side
    from ..inputs import loader
    from ..xla.stages import kernel_rows_many, pending_kernels

    names = [s.strip() for s in (gpu_specs or specs_mod.DEFAULT_SPEC).split(",") if s.strip()]
    if not names:
        raise DriverError("--gpu-spec names no spec")
    specs = [specs_mod.resolve_spec(n) for n in names]
    if not inputs:
        raise DriverError("no input modules given", hint="mlirhlo kernels --help")
    modules = loader.load_inputs(inputs, input_format=input_format)
    pending = []
    for loaded in modules:
        for j, spec in enumerate(specs):
            options = StageOptions(platform="cuda", gpu_spec=spec)
            req = registry.request(loaded.module, loaded.name, options, stages=("kernels",), source=loaded.source,
                                   line_offset=loaded.line_offset)
            pending.append((loaded.name, j, pending_kernels(req)))
    # One ptxas -v run per spec for all the modules.
    per_spec: list[tuple[Any, list[tuple[str, list[Any]]]]] = [(s, []) for s in specs]
    for (name, j, _), found in zip(pending, kernel_rows_many([p for _, _, p in pending])):
        if isinstance(found, DriverError):
            raise found
        per_spec[j][1].append((name, found))
    text, data = side_by_side(per_spec)
    return json.dumps(data, indent=2) + "\n" if as_json else text
