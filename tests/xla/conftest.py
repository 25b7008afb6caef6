"""Fixtures and helpers the xla/ tests share: a raw dot graph, small modules compiled
through the pass views, a stage request on given dumps."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlirhlo_driver import registry
from tests.conftest import PLAIN

# ----------------------------------------------------------------- the graphs, directly
# xla/graph_dumps.py and xla/html_page.py on hand-made pages: exact output, no compile.

# A dot graph as XLA writes it, shortened: nodes and clusters named after object addresses,
# the module counter in tooltips, hover rules in hash-map order (the first one's indent
# off), a legend rule and a tooltip that look like rules but are not.
RAW_DOT = """\
digraph G {
stylesheet=<
  data:text/css,
  @import url(https://fonts.googleapis.com/css?family=Roboto:400,700);
  svg text { font-family: 'Roboto'; }
  %23legend text { fill: gray; }

      %23node2:hover ~ %23edge1 text { fill: red; }
  %23node2:hover ~ %23edge1 path { stroke: red; }

  %23clust1:hover ~ %23edge3 text { fill: blue; }

  %23node1:hover ~ %23edge2 text { fill: red; }
>
140212345678901 [label=<<b>Parameter 0</b>>, tooltip="module_0042.Arg_0.1"];
subgraph cluster_140212345678950 {
140212345678977 [label=<<b>add</b>>, tooltip="a:hover ~ b"];
}  // cluster_140212345678950
140212345678901 -> 140212345678977 [tooltip="12345678 bytes, #123456789012, %923456789012, x123456789012"];
}
"""


# A dot with a bias and a tanh: XLA's CUDA compiler makes it one Triton gemm fusion.
GEMM = """HloModule gemm_tanh

ENTRY main {
  x = f32[4,16] parameter(0)
  w = f32[16,32] parameter(1)
  b = f32[32] parameter(2)
  d = f32[4,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[4,32] broadcast(b), dimensions={1}
  a = f32[4,32] add(d, bb)
  ROOT t = f32[4,32] tanh(a)
}
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pass_views")
    (d / "gemm.hlo").write_text(GEMM)
    (d / "plain.hlo").write_text(PLAIN)
    return d


# ------------------------------------------------------------ stage functions on given dumps

def _request_on(files: dict[str, bytes], platform: str = "cpu", **art):
    """A request whose XLA compile is already done: artifacts with these dump files (every
    dump and both Triton emitters asked for, so no stage compiles again)."""
    from mlirhlo_driver.cuda.specs import DEFAULT_SPEC, resolve_spec
    from mlirhlo_driver.stages.base import StageOptions
    from mlirhlo_driver.xla import backend as xla_backend
    from mlirhlo_driver.xla.platforms import CpuTarget, CudaTarget

    art.setdefault("hlo_module_name", "jit_m")
    target = CudaTarget(spec=resolve_spec(DEFAULT_SPEC)) if platform == "cuda" else CpuTarget()
    req = registry.request(None, "m", StageOptions(target))
    req._derived["xla"] = xla_backend.XlaArtifacts(platform, files=files, emitters=("triton-fusion", "triton-to-llvm"),
                                                   **art)
    return req
