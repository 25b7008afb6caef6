"""ir/hlo_dataflow.py: which outputs of an optimized HLO module depend on its entry parameters."""

from __future__ import annotations

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.ir import hlo_dataflow
from mlirhlo_driver.ir import hlo_proto as codec

# --- hlo_dataflow -----------------------------------------------------------------

def _deps(hlo: str) -> list[bool]:
    return hlo_dataflow.outputs_from_parameters(_jaxlib.hlo_text_to_proto(hlo))


FUSED = """\
HloModule m

fused (p0: f32[4], p1: f32[4]) -> (f32[4], f32[4]) {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  n = f32[4] negate(p1)
  e = f32[4] exponential(p0)
  ROOT t = (f32[4], f32[4]) tuple(n, e)
}

one (q0: f32[4], q1: f32[4]) -> f32[4] {
  q0 = f32[4] parameter(0)
  q1 = f32[4] parameter(1)
  ROOT n = f32[4] negate(q1)
}

ENTRY main (a: f32[4]) -> (f32[4], f32[4], f32[4], f32[4], f32[4]) {
  a = f32[4] parameter(0)
  c = f32[4] constant({1, 2, 3, 4})
  f = (f32[4], f32[4]) fusion(a, c), kind=kLoop, calls=fused
  g0 = f32[4] get-tuple-element(f), index=0
  g1 = f32[4] get-tuple-element(f), index=1
  h = (f32[4], f32[4]) fusion(c, a), kind=kLoop, calls=fused
  h0 = f32[4] get-tuple-element(h), index=0
  o = f32[4] fusion(a, c), kind=kLoop, calls=one
  o2 = f32[4] fusion(c, c), kind=kLoop, calls=one
  ROOT r = (f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(g0, g1, h0, o, o2)
}
"""


def test_outputs_from_parameters_reads_the_optimized_module():
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.ir import hlo_dataflow

    hlo = """\
HloModule m

fused (p0: f32[4], p1: f32[4]) -> (f32[4], f32[4]) {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  n = f32[4] negate(p0)
  e = f32[4] exponential(p1)
  ROOT t = (f32[4], f32[4]) tuple(n, e)
}

ENTRY main (a: f32[4]) -> (f32[4], f32[4], f32[4], f32[]) {
  a = f32[4] parameter(0)
  c = f32[4] constant({1, 2, 3, 4})
  f = (f32[4], f32[4]) fusion(a, c), kind=kLoop, calls=fused
  g0 = f32[4] get-tuple-element(f), index=0
  g1 = f32[4] get-tuple-element(f), index=1
  i = f32[4] iota(), iota_dimension=0
  s = f32[] constant(0)
  ROOT r = (f32[4], f32[4], f32[4], f32[]) tuple(g0, g1, i, s)
}
"""
    deps = hlo_dataflow.outputs_from_parameters(_jaxlib.hlo_text_to_proto(hlo))
    assert deps == [True, False, False, False]  # each fusion output keeps its own operands


def test_one_root_depends_or_not():
    """A non-tuple root gives one answer: through operands to a parameter, or not."""
    assert _deps("HloModule m\n\nENTRY main (a: f32[4]) -> f32[4] {\n  a = f32[4] parameter(0)\n"
                 "  ROOT n = f32[4] negate(a)\n}\n") == [True]
    assert _deps("HloModule m\n\nENTRY main (a: f32[4]) -> f32[4] {\n  a = f32[4] parameter(0)\n"
                 "  c = f32[4] constant({1, 2, 3, 4})\n  ROOT n = f32[4] negate(c)\n}\n") == [False]
    assert _deps("HloModule m\n\nENTRY main (a: f32[4]) -> f32[4] {\n  ROOT a = f32[4] parameter(0)\n}\n") == [True]


def test_tuple_root_elements_nested_tuples_and_shared_operands():
    """Each element of a tuple root on its own; a nested tuple element depends if any part does;
    an instruction used twice is judged once."""
    hlo = """\
HloModule m

ENTRY main (a: f32[4], b: f32[4]) -> (f32[4], (f32[4], f32[4]), (f32[4], f32[4]), f32[4]) {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  c = f32[4] constant({1, 2, 3, 4})
  s = f32[4] add(c, c)
  m = f32[4] multiply(s, a)
  t1 = (f32[4], f32[4]) tuple(s, m)
  t2 = (f32[4], f32[4]) tuple(c, s)
  ROOT r = (f32[4], (f32[4], f32[4]), (f32[4], f32[4]), f32[4]) tuple(s, t1, t2, b)
}
"""
    assert _deps(hlo) == [False, True, False, True]


def test_get_tuple_element_picks_its_element():
    """get-tuple-element of a tuple picks that element's dependence; of a tuple parameter, the
    parameter's."""
    hlo = """\
HloModule m

ENTRY main (a: f32[4], p: (f32[4], f32[4])) -> (f32[4], f32[4], f32[4], f32[4]) {
  a = f32[4] parameter(0)
  p = (f32[4], f32[4]) parameter(1)
  c = f32[4] constant({1, 2, 3, 4})
  t = (f32[4], f32[4], f32[4]) tuple(c, a, c)
  g0 = f32[4] get-tuple-element(t), index=0
  g1 = f32[4] get-tuple-element(t), index=1
  g2 = f32[4] get-tuple-element(t), index=2
  gp = f32[4] get-tuple-element(p), index=0
  ROOT r = (f32[4], f32[4], f32[4], f32[4]) tuple(g0, g1, g2, gp)
}
"""
    assert _deps(hlo) == [False, True, False, True]


def test_tuple_fusion_outputs_keep_their_own_operands():
    """A tuple-shaped fusion is followed into its computation, each output through its own
    operands by parameter number; a one-output fusion depends on all its operands."""
    assert _deps(FUSED) == [False, True, True, True, False]


def test_entry_found_by_name_without_its_id():
    """A proto whose entry id names no computation finds the entry computation by its name."""
    msg = codec.decode(_jaxlib.hlo_text_to_proto(FUSED))
    msg.entry_computation_id = max(c.id for c in msg.computations) + 7
    assert hlo_dataflow.outputs_from_parameters(codec.encode(msg)) == [False, True, True, True, False]


def test_deep_chains_need_no_recursion():
    """A chain of operands deeper than Python's recursion limit is followed."""
    import sys

    n = sys.getrecursionlimit() + 500
    lines = ["HloModule m", "", "ENTRY main (a: f32[]) -> f32[] {", "  x0 = f32[] parameter(0)"]
    lines += [f"  x{i} = f32[] negate(x{i - 1})" for i in range(1, n)]
    lines += [f"  ROOT r = f32[] negate(x{n - 1})", "}", ""]
    assert _deps("\n".join(lines)) == [True]
