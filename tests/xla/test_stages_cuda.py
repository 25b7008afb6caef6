"""XLA's CUDA stages (xla/stages.py): cubin, sass, kernels, cost and roofline through
the CLI (device-less CUDA), one compile of the MLP training step per spec.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO, assert_mentions, assert_one_line_error, ptx_sections
from tests.xla.conftest import _request_on

MLP = REPO / "tests" / "data" / "mlp_train_step.before_optimizations.txt"

STEM = "mlp_train_step"


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


# ------------------------------------------------------------------ sources and cost

# A matmul and an elementwise kernel, with the two location forms XLA turns into
# metadata: loc("name"("file":line:col)) becomes op_name plus a stack frame
# (stack_frame_id), a bare loc("file":line:col) becomes source_file/source_line. The
# tanh is the add's consumer, so they fuse: the root (tanh) has no op_name of its own.
MM_ADD = """\
func.func @main(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>, %c: tensor<1024x1024xf32>) -> (tensor<1024x1024xf32>, tensor<1024x1024xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc("jit(f)/dot_general"("model.py":3:8))
  %1 = stablehlo.add %b, %c : tensor<1024x1024xf32> loc("jit(f)/add"("model.py":4:8))
  %2 = stablehlo.tanh %1 : tensor<1024x1024xf32> loc("model.py":5:8)
  return %0, %2 : tensor<1024x1024xf32>, tensor<1024x1024xf32>
}
"""


@pytest.fixture(scope="module")
def mm_add(tmp_path_factory):
    path = tmp_path_factory.mktemp("mm") / "mm_add.mlir"
    path.write_text(MM_ADD)
    return path


# H100 SXM (h100_sxm.txtpb): 132 SMs; FP32 CUDA cores: scalar_unit_description F32, 128
# units x 1 FMA per clock at 1.98 GHz; tensor cores for F32 (TF32):
# matrix_unit_description F32, 4 units x 256 FMAs per clock at 1.8295201 GHz; 3.35 TB/s.
H100_FP32 = 2 * 128 * 1 * 132 * 1.98e9          # 66.9 TFLOP/s

H100_TC_F32 = 2 * 4 * 256 * 132 * 1.8295201e9   # 494.6 TFLOP/s

H100_BW = 3.35e12

N = 1024


@pytest.mark.slow
def test_cubin_files_in_dump_dir_and_refused_with_o(cli, tmp_path):
    r = cli("opt", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80", "--stage", "cubin,kernels",
            "--dump-dir", tmp_path)
    assert r.code == 0, r.err
    cubins = sorted(p.name for p in tmp_path.glob("*.cubin"))
    assert len(cubins) > 1 and f"{STEM}.gemm_fusion_dot.cubin" in cubins
    assert (tmp_path / f"{STEM}.kernels.txt").is_file()
    out = tmp_path / "one.cubin"
    assert_one_line_error(cli("opt", MLP, "--platform", "cuda", "--gpu-spec", "a100_sxm_80",
                              "--stage", "cubin", "-o", out), contains="use --dump-dir")
    assert not out.exists()


def test_a_compile_with_no_kernels(cli, tmp_path):
    """A module XLA runs without a kernel: no cubin to give, an empty SASS and table."""
    path = tmp_path / "ident.mlir"
    path.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n")
    r = cli("opt", str(path), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "cubin", "--no-cache")
    assert_one_line_error(r, facts=("'cubin'", "no kernels"))
    r = cli("opt", str(path), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "kernels", "--no-cache")
    assert r.code == 0 and r.out.startswith("ident on h100_sxm") and "regs" in r.out and "fusion" not in r.out
    r = cli("opt", str(path), "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "sass", "--no-cache")
    assert (r.code, r.out.strip()) == (0, "")


def test_list_stages_has_the_cuda_binary_stages(cli):
    r = cli("opt", "--list-stages", "--platform", "cuda")
    names = [ln.split()[0] for ln in r.out.splitlines() if ln.strip()]
    assert names.index("ptx") < names.index("cubin") < names.index("sass") < names.index("kernels")
    assert "cubin" not in cli("opt", "--list-stages", "--platform", "cpu").out


# ------------------------------------------------------------------ sass

def test_sass_has_every_kernel_and_sass_opcodes(a100, h100):
    for compiled in (a100, h100):
        sass = compiled.stage("sass")
        kernels = sorted(k for text in ptx_sections(compiled).values()
                         for k in re.findall(r"^\.visible \.entry (\w+)", text, re.M))
        for k in kernels:
            assert re.search(rf"^//-+ \.text\.{k} ", sass, re.M), k
        # SASS, not PTX: S2R reads special registers, EXIT ends a thread.
        assert re.search(r"^\s+/\*[0-9a-f]{4}\*/\s+S2R R\d+, SR_TID\.X ;", sass, re.M)
        assert re.search(r"^\s+/\*[0-9a-f]{4}\*/\s+EXIT ;", sass, re.M)


@pytest.mark.sm70_ptxas
def test_stage_sass_v100(cli):
    """V100 (sm_70): CUDA 13's nvdisasm dropped sm_70; a CUDA 12 one is used when present,
    else one error line names the legacy-sass extra."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.errors import ToolchainError

    r = cli("opt", MLP, "--platform", "cuda", "--gpu-spec", "v100", "--stage", "sass")
    try:
        cuda_binaries.nvdisasm_for("sm_70")
    except ToolchainError:
        line = assert_one_line_error(r, facts=("nvdisasm", "sm_70"))
        assert_mentions(line, "pip install 'mlirhlo-driver[legacy-sass]'")
        return
    assert r.code == 0, r.err
    assert "EF_CUDA_SM70" in r.out and re.search(r"\bEXIT ;", r.out)


def test_kernels_stage_text(a100):
    text = a100.stage("kernels")
    assert text.startswith(f"{STEM} on a100_sxm_80 (sm_80, 64 warps/SM)")
    assert re.search(r"^\s*gemm_fusion_dot\s+\d+\s+0/0\s+0\s+1536\s+0\s+4 × 64\s+\d+\s+\d+/64 \(\d+%\)", text, re.M)


def test_kernels_json_rows_name_their_source(cli, mm_add):
    r = cli("kernels", mm_add, "--gpu-spec", "h100_sxm", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    rows = [k["specs"]["h100_sxm"] for k in data["kernels"]]
    dot = next(k for k in rows if any(f["opcode"] == "dot" for f in k["fused"]))
    assert (dot["op_name"], dot["source"]) == ("jit(f)/dot_general", "model.py:3:8")
    assert dot["hlo_instruction"].replace(".", "_") == dot["kernel"]
    ew = next(k for k in rows if any(f["opcode"] == "tanh" for f in k["fused"]))
    # The root is the tanh: its source_file/line, and no op_name (the loc had no name).
    assert (ew["op_name"], ew["source"]) == (None, "model.py:5:8")
    fused = {f["opcode"]: f for f in ew["fused"]}
    assert (fused["add"]["op_name"], fused["add"]["source"]) == ("jit(f)/add", "model.py:4:8")
    # The side-by-side row carries the first spec's source as well.
    top = next(k for k in data["kernels"] if k["kernel"] == dot["kernel"])
    assert (top["op_name"], top["source"]) == ("jit(f)/dot_general", "model.py:3:8")


def test_kernels_table_names_the_source(cli, mm_add, tmp_path):
    from tests.conftest import filecheck

    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "kernels", "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.out, """\
CHECK: mm_add on h100_sxm (sm_90a, 64 warps/SM)
CHECK: kernel {{.*}} limiter   op_name @ source {{ *}}fused
CHECK: gemm_fusion{{.*}} jit(f)/dot_general @ model.py:3:8 {{ *}}1
CHECK: model.py:5:8 {{ *}}2
""", tmp_path)


def test_cost_on_cuda_by_hand(cli, mm_add):
    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "cost", "--no-cache")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    rows = data["fusions"]
    assert len(rows) == 2, [x["name"] for x in rows]
    mm = next(x for x in rows if x["op_name"] == "jit(f)/dot_general")
    ew = next(x for x in rows if x["source"] == "model.py:5:8")
    # The matmul: 2 x M x N x K flops; it reads both f32 operands and writes its result.
    assert mm["flops"] == 2 * N ** 3 and mm["bytes_accessed"] == 3 * N * N * 4
    assert mm["figures_from"] == "xla-cost-analysis" and mm["transcendentals"] == 0
    assert (mm["peak"]["unit"], mm["peak"]["dtype"]) == ("tensor core", "F32")
    assert mm["peak"]["flops_per_s"] == pytest.approx(H100_TC_F32, rel=1e-9)
    assert mm["arithmetic_intensity"] == pytest.approx(2 * N / 12)          # 170.7 FLOP/B
    assert mm["ridge_flops_per_byte"] == pytest.approx(H100_TC_F32 / H100_BW)  # 147.6 FLOP/B
    assert mm["bound"] == "compute"
    assert mm["lower_bound_seconds"] == pytest.approx(2 * N ** 3 / H100_TC_F32)  # 4.34 us
    # The elementwise kernel: one add per element (tanh counted as a transcendental),
    # two f32 inputs read and one written.
    assert ew["flops"] == N * N and ew["transcendentals"] == N * N and ew["bytes_accessed"] == 3 * N * N * 4
    assert (ew["peak"]["unit"], ew["peak"]["dtype"]) == ("cuda core", "F32")
    assert ew["peak"]["flops_per_s"] == pytest.approx(H100_FP32, rel=1e-9)
    assert ew["arithmetic_intensity"] == pytest.approx(1 / 12) and ew["bound"] == "memory"
    assert ew["lower_bound_seconds"] == pytest.approx(3 * N * N * 4 / H100_BW)   # 3.76 us
    # Module totals: the rows summed; the CPU stage's keys.
    assert data["flops"] == 2 * N ** 3 + N * N and data["bytes accessed"] == 6 * N * N * 4
    assert data["transcendentals"] == N * N
    assert data["lower_bound_seconds"] == pytest.approx(2 * N ** 3 / H100_TC_F32 + 3 * N * N * 4 / H100_BW)
    assert data["peaks"]["fp32"]["flops_per_s"] == pytest.approx(H100_FP32, rel=1e-9)


def test_roofline_table(cli, mm_add, tmp_path):
    from tests.conftest import filecheck

    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "roofline", "--no-cache")
    assert r.code == 0, r.err
    filecheck(r.out, """\
CHECK: mm_add on h100_sxm (sm_90a): FP32 66.9TFLOP/s, memory 3.35TB/s, ridge 20.0 FLOP/B
CHECK: fusion {{.*}} FLOPs {{.*}} bytes {{.*}} FLOP/B {{.*}} bound {{.*}} op_name @ source
CHECK-DAG: gemm_fusion{{[^ ]*}} {{ *}}kCustom {{ *}}2.15G {{ *}}12.6M {{ *}}170.67 {{ *}}TC F32 495T {{ *}}compute {{ *}}4.342 {{ *}}xla-cost-analysis {{ *}}jit(f)/dot_general @ model.py:3:8
CHECK-DAG: {{ *}}kLoop {{ *}}1.05M {{ *}}12.6M {{ *}}0.08 {{ *}}CUDA F32 66.9T {{ *}}memory {{ *}}3.756 {{ *}}xla-cost-analysis {{ *}}model.py:5:8
CHECK: total: 2.15G FLOPs, 1.05M transcendentals, 25.2MB accessed, time ≥ 8.098 µs
""", tmp_path)


def test_cost_counts_a_cublas_gemm_from_its_hlo(cli, mm_add):
    """XLA's analysis cannot count a cuBLAS call (-1): its figures come from the HLO,
    2 x M x N x K FLOPs, both operands read and the result written."""
    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "cost", "--no-cache",
            "--xla_gpu_enable_triton_gemm=false")
    assert r.code == 0, r.err
    rows = json.loads(r.out)["fusions"]
    (gemm,) = [x for x in rows if x["figures_from"] == "hlo-gemm"]
    assert gemm["flops"] == 2 * N ** 3 and gemm["bytes_accessed"] == 3 * N * N * 4 and gemm["transcendentals"] == 0
    assert gemm["bound"] == "compute"


def test_a_failing_nvdisasm_is_one_error_line_naming_its_version_sm_and_message(cli, mm_add, monkeypatch, tmp_path):
    """nvdisasm exiting non-zero on a compile's cubins: the sass stage fails with one line
    naming the nvdisasm version, the cubins' sm and nvdisasm's own error."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries

    fake = tmp_path / "nvdisasm"
    fake.write_text("#!/bin/sh\necho 'nvdisasm fatal   : Input file is not a cubin' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(cuda_binaries, "nvdisasm_for",
                        lambda sm, data_dir=None: cuda_binaries.Nvdisasm(str(fake), (13, 0)))
    r = cli("opt", mm_add, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "sass", "--no-cache")
    line = assert_one_line_error(r, facts=("nvdisasm 13.0", "sm_90a"))
    assert line.endswith("nvdisasm fatal   : Input file is not a cubin"), line


def test_pending_binaries_finish_in_one_group_run_per_kind(monkeypatch):
    """sass and kernels of a batch: jobs some item wants SASS of in one assemble_many call
    (with nvdisasm), the others in one without; a job's error is each of its items' output,
    and a SASS error stays an error."""
    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import kernels as cuda_kernels
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla.stages import PendingBinary, kernel_rows_many

    def job(name, *modules):
        return cuda_binaries.PtxJob("sm_90a", "ptxas", "12.9", (), None, modules)

    res = cuda_binaries.KernelResources
    a = job("a", ("m1", ("k1", "k2"), "ptx-a1"), ("m2", ("k3",), "ptx-a22"))
    b, c = job("b", ("m", ("kb",), "ptx-b")), job("c")
    failed = StageError("ptxas failed")
    results = {id(a): cuda_binaries.GroupResult({"k1": res("k1", 8, 0, 0, 0, 16), "k2": res("k2", 9, 0, 0, 0, 0)},
                                                [("m1", "sass 1"), ("m2", " \n")]),
               id(b): failed,
               id(c): cuda_binaries.GroupResult({}, StageError("no nvdisasm"))}
    calls = []

    def assemble_many(jobs, *, disassemble):
        calls.append(([id(j) for j in jobs], disassemble))
        return [results[id(j)] for j in jobs]

    seen_rows = []

    def rows(modules, resources, thunks, spec, launched):
        seen_rows.append((modules, resources, thunks, spec, launched))
        return ["row"]

    monkeypatch.setattr(cuda_binaries, "assemble_many", assemble_many)
    monkeypatch.setattr(cuda_kernels, "rows", rows)
    monkeypatch.setattr(cuda_kernels, "table_text", lambda name, spec, got: f"{name} on {spec}: {got}\n")
    kernels_a = PendingBinary(a, ("mod", "spec", "thunks", {"k2": 1024}, {"k1": "launch"}))
    items = [PendingBinary(a), kernels_a, PendingBinary(b, ("mod", "spec", "t", {}, {})), PendingBinary(c)]
    assert kernels_a.size == len("ptx-a1") + len("ptx-a22") == 13
    out = PendingBinary.finish_all([*items, "not pending"])
    assert calls == [([id(a), id(c)], True), ([id(b)], False)]
    assert out[:3] == ["sass 1", "mod on spec: ['row']\n", failed]
    assert isinstance(out[3], StageError) and out[3].message == "no nvdisasm"
    assert len(out) == 4
    # ptxas -v's shared memory, unless the kernel's cubin has a section of its own.
    modules, resources, thunks, spec, launched = seen_rows[0]
    assert (modules, thunks, spec, launched) == ([("m1", ["k1", "k2"]), ("m2", ["k3"])], "thunks", "spec",
                                                 {"k1": "launch"})
    assert {k: r.shared for k, r in resources.items()} == {"k1": 16, "k2": 1024}
    assert resources["k2"].registers == 9
    calls.clear()
    assert kernel_rows_many([kernels_a, items[2]]) == [["row"], failed]
    assert calls == [([id(a), id(b)], False)]


def test_kernel_rows_of_a_request_raise_its_error(monkeypatch):
    """kernel_rows gives the request's rows as a list, or raises the error its group run gave."""
    from mlirhlo_driver.errors import StageError
    from mlirhlo_driver.xla import stages as xla_stages

    req = _request_on({}, "cuda")
    monkeypatch.setattr(xla_stages, "pending_kernels", lambda r: "pending")
    monkeypatch.setattr(xla_stages, "kernel_rows_many", lambda items: [("r1", "r2")])
    assert xla_stages.kernel_rows(req) == ["r1", "r2"]
    failed = StageError("ptxas failed")
    monkeypatch.setattr(xla_stages, "kernel_rows_many", lambda items: [failed])
    req = _request_on({}, "cuda")
    with pytest.raises(StageError) as info:
        xla_stages.kernel_rows(req)
    assert info.value is failed


def test_cuda_cost_roofline_and_cubins_read_the_compile_once(monkeypatch):
    """CUDA's cost and roofline come from one per-fusion analysis of the optimized module on
    the request's spec; the cubin stage assembles the compile's non-empty PTX files for the
    spec's sm with the user's flags and XLA's kernel cache, once per request."""
    from types import SimpleNamespace

    from mlirhlo_driver.cuda import binaries as cuda_binaries
    from mlirhlo_driver.cuda import roofline
    from mlirhlo_driver.xla import stages as xla_stages

    calls = []
    monkeypatch.setattr(roofline, "cost_rows", lambda proto, spec: calls.append((proto, spec)) or (["row"], "xla"))
    monkeypatch.setattr(roofline, "table_text", lambda *a: f"table {a}\n")
    spec = SimpleNamespace(sm="sm_90a", name="h100_sxm")
    req = _request_on({"1.ptx": b".visible .entry k(", "0.ptx": b"p0", "xla_kernel_cache.pb": b"cache"}, "cuda",
                      optimized_proto=b"proto", cost={"flops": 1.0})
    req.options = SimpleNamespace(platform="cuda", gpu_spec=spec, xla_flags=(("xla_a", 1),))
    monkeypatch.setattr(roofline, "to_json_data", lambda name, s, rows, xla: {"name": name, "rows": rows, "xla": xla,
                                                                             "sm": s.sm})
    assert xla_stages._cost(req) == '{\n  "name": "m",\n  "rows": [\n    "row"\n  ],\n  "sm": "sm_90a",\n  "xla": "xla"\n}\n'
    assert xla_stages._roofline(req) == f"table ('m', {spec!r}, ['row'])\n"
    assert calls == [(b"proto", spec)]
    prepared = []

    def prepare(found, sm, flags, cache):
        prepared.append((found, sm, flags, cache))
        return SimpleNamespace(modules_assembled=lambda: [SimpleNamespace(name="m0", cubin=b"c0")])

    monkeypatch.setattr(cuda_binaries, "prepare", prepare)
    assert xla_stages._cubin(req) == {"m0": b"c0"}
    assert xla_stages._cubin(req) == {"m0": b"c0"}
    assert prepared == [([("0.ptx", b"p0"), ("1.ptx", b".visible .entry k(")], "sm_90a", {"xla_a": 1}, b"cache")]


def test_pending_kernels_carry_what_the_kernels_table_reads(monkeypatch):
    """The kernels stage's pending item: the compile's ptxas job, and the module name, spec,
    thunk sequence, per-kernel static shared memory and launched instructions its rows read."""
    from types import SimpleNamespace

    from mlirhlo_driver.xla import stages as xla_stages

    monkeypatch.setattr(xla_stages, "_assembly", lambda req: SimpleNamespace(shared_sizes=lambda: {"k": 1024}))
    monkeypatch.setattr(xla_stages, "_ptx_job", lambda req: "job")
    monkeypatch.setattr(xla_stages, "_launched", lambda req: {"k": "fusion"})
    req = _request_on({"thunk_sequence.txt": b"001: kKernel"}, "cuda")
    pending = xla_stages.pending_kernels(req)
    assert isinstance(pending, xla_stages.PendingBinary)
    assert (pending.job, pending.kernels) == ("job", ("m", req.options.gpu_spec, "001: kKernel", {"k": 1024},
                                                      {"k": "fusion"}))
