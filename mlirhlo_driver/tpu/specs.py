"""The shipped TPU generation specs (``tpu_specs/<generation>.toml``): figures the compile
does not give, each with the public page it comes from. A generation without a file, or
a figure a file leaves out, is unknown, never guessed.

Import-light: ``tomllib`` (standard library) when a spec is first read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    source: str


@dataclass(frozen=True)
class TpuSpec:
    """One generation's figures, per chip, by name (``hbm_capacity``, ``peak_bf16`` ...)."""

    generation: str
    device_kind: str
    figures: tuple[tuple[str, Figure], ...]

    def figure(self, name: str) -> Figure | None:
        return dict(self.figures).get(name)

    def value(self, name: str) -> float | None:
        f = self.figure(name)
        return f.value if f is not None else None

    @property
    def hbm_bytes_per_chip(self) -> int | None:
        f = self.figure("hbm_capacity")
        if f is None:
            return None
        scale = {"GiB": 1 << 30, "GB": 10**9}.get(f.unit)
        return int(f.value * scale) if scale else None

    def to_dict(self) -> dict[str, Any]:
        return {"generation": self.generation, "device_kind": self.device_kind,
                **{name: {"value": f.value, "unit": f.unit, "source": f.source} for name, f in self.figures}}


def generations() -> list[str]:
    """The generations with a shipped spec, sorted."""
    from .. import resources

    return sorted(p.stem for p in resources.data_dir("tpu_specs").glob("*.toml"))


@functools.cache
def spec(generation: str) -> TpuSpec | None:
    """The shipped spec of ``generation`` (libtpu's name: ``v5e``), or None without one."""
    import tomllib

    from .. import resources

    path = resources.data_dir("tpu_specs") / f"{generation}.toml"
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SpecError(f"unreadable TPU spec: {e}", file=str(path)) from None
    figures = []
    for name, entry in data.items():
        if isinstance(entry, dict):
            try:
                figures.append((name, Figure(float(entry["value"]), str(entry.get("unit", "")), str(entry["source"]))))
            except (KeyError, TypeError, ValueError):
                raise SpecError(f"TPU spec figure '{name}' needs a numeric value and a source",
                                file=str(path)) from None
    return TpuSpec(str(data.get("generation", generation)), str(data.get("device_kind", "")), tuple(figures))
