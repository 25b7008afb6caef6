"""What XLA's hlo-opt writes besides a stage: ``--emit-proto``'s HloProto text, and a compile's
dump in ``--xla_dump_to``'s layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def hlo_proto_text(proto: bytes) -> str:
    """An HloModuleProto as XLA's ``hlo-opt --emit-proto`` prints it: an HloProto textproto."""
    from ..ir import hlo_proto as codec

    wrapper = codec.message_class("HloProto")()
    wrapper.hlo_module.CopyFrom(codec.decode(proto, "HloModuleProto"))
    return codec.to_text(wrapper)


def hlo_text(program: Any) -> str:
    """A module (core.program.Program) as XLA's hlo-opt prints it without a platform: the
    HloModuleProto as read (HLO inputs: the user's names), printed as XLA's
    ``HloModule::ToString`` does, operand shapes included."""
    from .._native import jaxlib as _jaxlib

    proto = program.convert("hlo-proto")
    return _jaxlib.hlo_proto_to_text(proto if isinstance(proto, bytes) else proto.encode(), xla_printer=True)


def write_xla_dump(directory: str, art: Any, number: int) -> None:
    """What XLA dumped for one compile, in its ``--xla_dump_to`` layout:
    ``module_NNNN.<name>.<what>`` (NNNN counts the modules of this command,
    where XLA uses a process-wide counter). Its ``*.html`` graph views are made
    self-contained (xla/html_page.py): XLA's load their scripts from a CDN."""
    import re

    from .. import outputs
    from . import html_page

    for key, data in art.files.items():
        # Keys are XLA's names less their module_NNNN.<name>. prefix (xla/backend.py).
        name = re.sub(r"^module_\d+\.", f"module_{number:04d}.", key) if key.startswith("module_") \
            else f"module_{number:04d}.{art.hlo_module_name}.{key}"
        if name.endswith(".html"):
            data = html_page.self_contained(data.decode("utf-8")).encode("utf-8")
        outputs.write_atomic(Path(directory) / name, data)
