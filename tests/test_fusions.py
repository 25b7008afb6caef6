"""mlirhlo_driver.ir.fusions: the instructions XLA launches, read from an HloModuleProto.

Modules are written as HLO text and turned into protos by jaxlib's parser (no compile).
"""

from __future__ import annotations

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.ir import dtypes, fusions

# An unfused entry computation: one op of each kind that is or is not a matrix multiply,
# each with a different lhs element type so the dot's type can be told apart.
UNFUSED = """
HloModule unfused

ENTRY main {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[3,4]{1,0} parameter(1)
  h = f16[2,3]{1,0} parameter(2)
  g = f16[3,4]{1,0} parameter(3)
  i = bf16[1,4,4,1]{3,2,1,0} parameter(4)
  k = bf16[2,2,1,1]{3,2,1,0} parameter(5)
  add = f32[2,3]{1,0} add(a, a)
  d = f32[2,4]{1,0} dot(add, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  gemm = f16[2,4]{1,0} custom-call(h, g), custom_call_target="__cublas$gemm"
  lt = f16[2,4]{1,0} custom-call(h, g), custom_call_target="__cublas$lt$matmul"
  other = f16[2,4]{1,0} custom-call(h, g), custom_call_target="my_kernel"
  conv = bf16[1,3,3,1]{3,2,1,0} convolution(i, k), window={size=2x2}, dim_labels=b01f_01io->b01f
  ROOT t = (f32[2,4]{1,0}, f16[2,4]{1,0}, f16[2,4]{1,0}, f16[2,4]{1,0}, bf16[1,3,3,1]{3,2,1,0}) tuple(d, gemm, lt, other, conv)
}
"""


def test_unfused_dots_convolutions_and_cublas_gemms_count_as_dots():
    """An unfused dot, convolution or cuBLAS GEMM call has a dot of its lhs type; other ops and custom calls have none."""
    f32, f16, bf16 = (dtypes.BY_HLO[t].number for t in ("f32", "f16", "bf16"))
    rows = {ins.name: ins for ins in fusions.launched(_jaxlib.hlo_text_to_proto(UNFUSED))}
    assert {name: (ins.has_dot, ins.dot_type) for name, ins in rows.items()} == {
        "add": (False, None),
        "d": (True, f32),
        "gemm": (True, f16),
        "lt": (True, f16),
        "other": (False, None),
        "conv": (True, bf16),
    }
    assert rows["gemm"].custom_call_target == "__cublas$gemm" and rows["other"].custom_call_target == "my_kernel"
    assert rows["add"].custom_call_target is None and rows["conv"].out_type == bf16
