"""The MLIR-level stages: computed from the module alone, no XLA compile."""

from __future__ import annotations

from typing import Any

from .base import MLIR, Registry, Stage


def _stablehlo(req: Any) -> str:
    from ..ir import emit

    return emit.stablehlo_text(req.module, debug_info=req.options.debug_info)


def _stablehlo_bytecode(req: Any) -> bytes:
    from ..ir import emit

    return emit.bytecode(req.module)


def _vhlo(req: Any) -> bytes:
    from ..ir import emit

    return emit.vhlo_artifact(req.module, target_version=req.options.target_version)


def _mhlo(req: Any) -> str:
    from ..ir import emit

    return emit.mhlo_text(req.module, debug_info=req.options.debug_info)


def _hlo_before_optimizations(req: Any) -> str:
    from ..ir import emit

    return emit.hlo_text(req.module)


def add_stages(stages: Registry) -> None:
    """Add the MLIR-level stages to ``stages``, in pipeline order (before XLA's)."""
    stages.add(Stage("stablehlo", "stablehlo.mlir", MLIR, False,
                     "StableHLO after the pass pipeline (the default stage)", _stablehlo))
    stages.add(Stage("stablehlo-bytecode", "stablehlo.mlirbc", MLIR, True,
                     "the same module as MLIR bytecode", _stablehlo_bytecode))
    stages.add(Stage("vhlo", "vhlo", MLIR, True,
                     "StableHLO portable artifact (VHLO bytecode; --target-version)", _vhlo))
    stages.add(Stage("mhlo", "mhlo.mlir", MLIR, False, "the module legalized to MHLO", _mhlo))
    stages.add(Stage("hlo-before-optimizations", "before_optimizations.txt", MLIR, False,
                     "HLO text of the module as XLA receives it", _hlo_before_optimizations))
