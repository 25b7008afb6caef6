"""The ordered stage registry, filled by one explicit ``add_stages`` call per level.

As in Triton's ``compile()``, the levels add their stages in pipeline order:
the MLIR-level ones (stages/mlir.py), then XLA's (xla/stages.py). The registry
is built on first use; building it imports neither jax nor jaxlib, so
``--list-stages`` starts fast.
"""

from __future__ import annotations

import functools
from typing import Any

from .stages.base import Registry, Stage, StageOptions, StageRequest


@functools.cache
def stages() -> Registry:
    """Every stage, in pipeline order."""
    from .stages import mlir
    from .xla import stages as xla_stages

    registry = Registry()
    mlir.add_stages(registry)
    xla_stages.add_stages(registry)
    return registry


def available(platform: str | None) -> list[Stage]:
    """Stages in pipeline order; without a platform, only MLIR-level ones."""
    return stages().available(platform)


def get(name: str, platform: str | None) -> Stage:
    """The stage ``name`` for ``platform``; StageError naming the choices if there is none."""
    return stages().get(name, platform)


def all_for(platform: str | None) -> list[Stage]:
    """What ``--stage all`` produces: every available stage, aliases once."""
    return stages().all_for(platform)


def request(module: Any, module_name: str, options: StageOptions, **kw: Any) -> StageRequest:
    """A :class:`StageRequest` whose ``produce`` gives any registered stage."""
    return StageRequest(module, module_name, options, stages(), **kw)
