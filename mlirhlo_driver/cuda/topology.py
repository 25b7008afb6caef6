"""XLA's ``--xla_gpu_topology_filename``: the multi-GPU topology a device-less CUDA compile is for.

As XLA documents it (xla/backends/gpu/target_config/specs/README.md), the flag names a
text ``xla.GpuTopologyProto`` (``num_partitions``, ``num_hosts_per_partition``,
``num_devices_per_host``, and optionally the GPU as a ``gpu_target_config``), e.g. XLA's
``gb200_2x4.txtpb``, or gives the topology inline as
``[platform:]PARTITIONSxHOSTSxDEVICES`` (``1x2x4``).

jaxlib 0.12's compile reads no such file (a missing one passes unnoticed): the driver
reads it, and the compile-only CUDA devices are made for that topology (the plugin's
``topology`` option takes the same ``PxHxD``); its ``gpu_target_config`` is the GPU spec
when no ``--xla_gpu_target_config_filename`` names one, else the shipped spec of the GPU its
``platform_version`` names as XLA reads it (:data:`PLATFORM_SPECS`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ..errors import DriverError, SpecError

FLAG = "xla_gpu_topology_filename"
_SHORTHAND = re.compile(r"^(?:(?P<platform>[A-Za-z]\w*):)?(?P<p>\d+)x(?P<h>\d+)x(?P<d>\d+)$")
_PLATFORMS = ("cuda", "gpu")  # the prefixes that name this backend
_HINT = "give a GpuTopologyProto text file or PARTITIONSxHOSTSxDEVICES, e.g. 1x2x4"
# A topology's platform_version, as XLA maps it to a GPU where the file holds no
# gpu_target_config (xla/service/gpu_topology.cc, GetGpuModel): the shipped spec of that GPU.
# XLA's gb200_2x4.txtpb and gb300_4x4.txtpb say only "oberon_b200" / "oberon_b300".
PLATFORM_SPECS = {"tesla_a100": "a100_sxm_40", "nvidia_h100": "h100_sxm", "umbriel_b200": "b200",
                  "oberon_b200": "gb200", "oberon_b300": "gb300"}


@dataclass(frozen=True)
class GpuTopology:
    """A topology as the flag gives it: its shape and, from a file, the GPU spec it holds."""

    num_partitions: int
    num_hosts_per_partition: int
    num_devices_per_host: int
    source: str  # the flag's value
    spec: Any = None  # cuda.specs.GpuSpec of the file's gpu_target_config; None without one

    @property
    def num_devices(self) -> int:
        return self.num_partitions * self.num_hosts_per_partition * self.num_devices_per_host

    def shape(self) -> str:
        """``PxHxD``, as the CUDA plugin's ``topology`` option takes it."""
        return f"{self.num_partitions}x{self.num_hosts_per_partition}x{self.num_devices_per_host}"


def _flag_error(value: str, what: str, hint: str | None = _HINT) -> DriverError:
    return DriverError(f"--{FLAG}: {value}: {what}", hint=hint)


def _counts(value: str, p: int, h: int, d: int) -> tuple[int, int, int]:
    if min(p, h, d) < 1:
        raise _flag_error(value, "partitions, hosts per partition and devices per host must each be >= 1")
    return p, h, d


def resolve(value: str) -> GpuTopology:
    """The topology the flag's ``value`` names: inline ``[platform:]PxHxD``, or a file.
    A file that is not there, or not a GpuTopologyProto, is an error naming it."""
    m = _SHORTHAND.match(value.strip())
    if m:
        platform = m.group("platform")
        if platform is not None and platform.lower() not in _PLATFORMS:
            raise _flag_error(value, f"platform '{platform}' is not CUDA", hint="cuda:PxHxD, or PxHxD")
        return GpuTopology(*_counts(value, int(m.group("p")), int(m.group("h")), int(m.group("d"))), source=value)
    path = os.path.expanduser(value)
    if not os.path.isfile(path):
        raise _flag_error(value, "no such file" if not os.path.exists(path) else "not a file")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise _flag_error(value, f"cannot read it: {getattr(e, 'strerror', None) or e}", hint=None) from None
    return parse(text, value)


def parse(text: str, file: str) -> GpuTopology:
    """A GpuTopologyProto's text (read from ``file``) as a :class:`GpuTopology`. Its
    ``gpu_target_config`` is validated as a GPU spec file is (cuda.specs), at its own lines."""
    from ..ir import protos
    from . import specs

    outer, inner = _split_target_config(text, file)
    msg = protos.parse_text(outer, "xla.GpuTopologyProto", file=file, error=SpecError)
    if msg.HasField("gpu_target_config"):  # written as gpu_target_config <...> or an empty block
        raise SpecError("write gpu_target_config as a block: gpu_target_config { ... }", file=file)
    missing = [f for f in ("num_partitions", "num_hosts_per_partition", "num_devices_per_host")
               if not getattr(msg, f)]
    if missing:
        raise SpecError(f"GpuTopologyProto without {', '.join(missing)}", file=file,
                        hint="a topology gives num_partitions, num_hosts_per_partition and num_devices_per_host")
    counts = _counts(file, msg.num_partitions, msg.num_hosts_per_partition, msg.num_devices_per_host)
    stem = os.path.splitext(os.path.basename(file))[0]
    if inner is not None:
        spec = specs.parse_spec(inner, file, name=stem)
    elif msg.platform_version in PLATFORM_SPECS:
        spec = specs.resolve_spec(PLATFORM_SPECS[msg.platform_version])
    else:
        spec = None
    return GpuTopology(*counts, source=file, spec=spec)


def _split_target_config(text: str, file: str) -> tuple[str, str | None]:
    """(the text with its ``gpu_target_config { ... }`` block blanked, the block's body at
    its own lines and columns, the rest blanked); (text, None) without one. Blanking keeps
    every position, so both parsers' errors point into the file as written."""
    m = re.search(r"(?m)^[ \t]*gpu_target_config[ \t]*:?[ \t]*\{", text)
    if m is None:
        return text, None
    start, depth, i, quote = m.end(), 1, m.end(), ""
    while i < len(text) and depth:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    if depth:
        line = text.count("\n", 0, m.start()) + 1
        raise SpecError("gpu_target_config { has no closing }", file=file, line=line,
                        col=m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1)
    end = i - 1  # the closing brace

    def blank(s: str) -> str:
        return re.sub(r"[^\n]", " ", s)

    outer = text[:m.start()] + blank(text[m.start():i]) + text[i:]
    inner = blank(text[:start]) + text[start:end] + blank(text[end:])
    return outer, inner
