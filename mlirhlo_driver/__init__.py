"""mlirhlo-driver: hlo-opt / run_hlo_module style driver for StableHLO and XLA.

The public names are loaded lazily so that ``import mlirhlo_driver`` (and the
CLI's ``--help``) does not import jax.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "load": "api", "load_all": "api", "from_jax": "api", "Program": "api", "compile": "api",
    "Compiled": "api", "Target": "targets", "llvm_to_ptx": "api", "convert": "api",
    "fit": "api", "FitRow": "batch.fit",
    "Progress": "core.progress",
    "register_pass": "mlir.python_passes", "PassSet": "mlir.python_passes", "PythonPass": "mlir.python_passes",
    "DriverError": "errors", "InputError": "errors", "PipelineError": "errors",
    "PassFailure": "errors", "StageError": "errors", "CompileError": "errors",
    "SpecError": "errors", "FlagError": "errors",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mlirhlo_driver' has no attribute '{name}'")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
