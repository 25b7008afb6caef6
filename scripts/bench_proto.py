"""HloModuleProto decode/encode through mlirhlo_driver.ir.hlo_proto against bare protobuf.

    python scripts/bench_proto.py [--size-mb 1.4] [--repeats 15]

Builds a scheduled HloModuleProto of about --size-mb (20 called computations of
elementwise chains with metadata, so the schedule is an integer-keyed map with
several entries) with jaxlib's HLO parser, then times, interleaved (A B A B):

- decode: ``hlo_proto.decode`` vs a bare ``Message.FromString`` of the same class;
- encode: ``hlo_proto.encode`` (C++ deterministic bytes) vs a bare
  ``SerializeToString(deterministic=True)``;
- sniff: ``hlo_proto.looks_like_hlo_proto`` (what loading a .pb adds);
- first use in a fresh process: descriptor extraction from jaxlib + pool.

Prints medians (min-max) in ms and the ratios. The issue's goal: decode of a
1.4 MB module <= 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def build_module(size_mb: float) -> bytes:
    from mlirhlo_driver._native import jaxlib as _jaxlib

    with _jaxlib.filtered_native_stderr():
        from jaxlib import _hlo

    def text(n_per_comp: int) -> str:
        comps, calls = [], []
        shape = "f32[64,128]{1,0}"
        for c in range(20):
            lines = [f"comp{c} {{", f"  p = {shape} parameter(0)"]
            prev = "p"
            for i in range(n_per_comp):
                op = ("add", "multiply", "subtract", "maximum")[i % 4]
                lines.append(f'  v{i} = {shape} {op}({prev}, p), metadata={{op_type="{op}" '
                             f'op_name="jit(model)/layer_{c}/block_{i}/{op}" source_file="/src/model.py" '
                             f"source_line={100 + i}}}")
                prev = f"v{i}"
            lines[-1] = lines[-1].replace(f"  v{n_per_comp - 1} =", f"  ROOT v{n_per_comp - 1} =")
            lines.append("}")
            comps.append("\n".join(lines))
            calls.append(f"  c{c} = {shape} call({'x' if c == 0 else f'c{c - 1}'}), to_apply=comp{c}")
        calls[-1] = calls[-1].replace("  c19 =", "  ROOT c19 =")
        return ("HloModule big, is_scheduled=true\n\n" + "\n\n".join(comps)
                + f"\n\nENTRY main {{\n  x = {shape} parameter(0)\n" + "\n".join(calls) + "\n}\n")

    n = 20
    for _ in range(3):  # the size is close to linear in n
        data = _hlo.hlo_module_from_text(text(n)).as_serialized_hlo_module_proto()
        n = max(1, round(n * size_mb * 1e6 / len(data)))
    return data


def _ms(times: list[float]) -> str:
    return f"{statistics.median(times) * 1e3:7.2f} ms ({min(times) * 1e3:.2f}-{max(times) * 1e3:.2f})"


def interleaved(a, b, repeats: int) -> tuple[list[float], list[float]]:
    ta, tb = [], []
    a(), b()  # warm-up
    for _ in range(repeats):
        for fn, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return ta, tb


FIRST_USE = r"""
import time
t0 = time.perf_counter()
from mlirhlo_driver.ir import hlo_proto
t1 = time.perf_counter()
hlo_proto.message_class("HloModuleProto")
t2 = time.perf_counter()
print(f"{(t1 - t0) * 1e3:.2f} {(t2 - t1) * 1e3:.2f}")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1.4)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()

    from mlirhlo_driver.ir import hlo_proto

    data = build_module(args.size_mb)
    cls = hlo_proto.message_class("HloModuleProto")
    msg = cls.FromString(data)
    sequences = len(msg.schedule.sequences)
    assert hlo_proto.encode(msg) == data, "encode(decode(b)) != b"
    instructions = sum(len(c.instructions) for c in msg.computations)
    print(f"module: {len(data) / 1e6:.2f} MB, {len(msg.computations)} computations, "
          f"{instructions} instructions, {sequences} schedule entries; {args.repeats} interleaved pairs")

    def sniff():
        hlo_proto._last_sniff = None  # the one-entry cache would make every run after the first free
        assert hlo_proto.looks_like_hlo_proto(data) == "HloModuleProto"

    rows = [
        ("decode", lambda: hlo_proto.decode(data), lambda: cls.FromString(data)),
        ("encode", lambda: hlo_proto.encode(msg), lambda: msg.SerializeToString(deterministic=True)),
        ("sniff", sniff, lambda: cls.FromString(data)),
    ]
    for name, ours, bare in rows:
        ta, tb = interleaved(ours, bare, args.repeats)
        ratio = statistics.median(ta) / statistics.median(tb)
        print(f"{name:7s} hlo_proto {_ms(ta)}   bare protobuf {_ms(tb)}   ratio {ratio:.2f}x")

    imports, first = [], []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True,
                             cwd=REPO, check=True).stdout.split()
        imports.append(float(out[0]) / 1e3)
        first.append(float(out[1]) / 1e3)
    print(f"fresh process: import hlo_proto {_ms(imports)}; first message_class "
          f"(protobuf import, descriptor extraction, pool) {_ms(first)}")
    decode_ms = statistics.median(interleaved(lambda: hlo_proto.decode(data), lambda: None, 5)[0]) * 1e3
    print(f"goal: decode of a {len(data) / 1e6:.2f} MB HloModuleProto <= 50 ms: "
          f"{decode_ms:.1f} ms -> {'met' if decode_ms <= 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
