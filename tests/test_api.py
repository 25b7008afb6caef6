"""The Python API (api.py): the guide's snippet (docs/python-api.md) as written, one compile per Compiled,
targets resolved as the commands resolve them, typed errors with their location."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mlirhlo_driver
import mlirhlo_driver as mh
from mlirhlo_driver import registry
from mlirhlo_driver.errors import FlagError
from mlirhlo_driver.xla import backend as xla_backend
from tests.conftest import DATA, REPO, assert_mentions

MLP = DATA / "mlp_train_step.before_optimizations.txt"


GUIDE = "docs/python-api.md"


def _guide_snippet() -> str:
    """The Python API guide's example (the block that lowers a JAX function)."""
    text = (REPO / GUIDE).read_text()
    found = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "mh.from_jax(" in b]
    assert len(found) == 1, f"{GUIDE}'s Python API example is missing"
    return found[0]


@pytest.fixture
def compiles(monkeypatch, tmp_path):
    """The XLA compiles made (module name per compile)."""
    made: list[str] = []
    real = xla_backend.compile
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(tmp_path / "stage-cache"))  # nothing served from earlier tests

    def counted(module, spec, module_name="module", **kw):
        made.append(module_name)
        return real(module, spec, module_name, **kw)

    monkeypatch.setattr(xla_backend, "compile", counted)
    return made


FROM_JAX_64 = """
import jax, numpy as np
import mlirhlo_driver as mh
p = mh.from_jax(lambda x: x * 2, np.ones(4, np.float32))
print("tensor<4xf32>" in p.as_text(), jax.config.jax_enable_x64)
for dt, mlir in (("int64", "i64"), ("uint64", "ui64"), ("float64", "f64"), ("complex128", "complex<f64>")):
    p = mh.from_jax(lambda x: x * 2, np.ones(4, dt))
    print(p.name, f"tensor<4x{mlir}>" in p.as_text())
print(jax.config.jax_enable_x64)
"""

# ------------------------------------------------------------------ Program: formats, stages, text

CHLO = DATA / "chlo_special.mlir"

ERF_INV = DATA / "erf_inv.mlir"

# ------------------------------------------------------------------ llvm_to_ptx

CALL_KERNEL = textwrap.dedent("""\
    target triple = "nvptx64-nvidia-cuda"
    define internal float @twice(float %x) {
      %y = fmul float %x, 2.0
      ret float %y
    }
    define ptx_kernel void @scale(ptr %p) {
      %v = load float, ptr %p
      %w = call float @twice(float %v)
      store float %w, ptr %p
      ret void
    }
    """)

BIG_SHARED_KERNEL = textwrap.dedent("""\
    target triple = "nvptx64-nvidia-cuda"
    @buf = internal addrspace(3) global [300000 x float] undef
    define ptx_kernel void @big(ptr %p, i32 %i, i32 %j) {
      %q = getelementptr [300000 x float], ptr addrspace(3) @buf, i32 0, i32 %i
      %r = getelementptr [300000 x float], ptr addrspace(3) @buf, i32 0, i32 %j
      %v = load float, ptr %p
      store volatile float %v, ptr addrspace(3) %q
      %u = load volatile float, ptr addrspace(3) %r
      store float %u, ptr %p
      ret void
    }
    """)


@pytest.fixture(scope="module")
def add_file(add_mlir_file) -> Path:
    return add_mlir_file


@pytest.mark.slow
def test_guide_snippet_runs_as_written(tmp_path, monkeypatch, compiles, capsys):
    """The guide's example (tests/test_readme.py runs it as a script too), here for the facts it
    shows: one compile for every stage read, flat kernel rows, records, the written files,
    a run that matches, an error in the API's spelling."""
    (tmp_path / "tests").symlink_to(REPO / "tests")
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(_guide_snippet(), GUIDE, "exec"), ns)

    p, q, c, r, rows, records = ns["p"], ns["q"], ns["c"], ns["r"], ns["rows"], ns["records"]
    assert p.name == "f" and p.input_format == "jax"
    assert q.as_text().startswith("module @") and q.as_text("hlo").startswith("HloModule")
    # ptx, the stage list, kernels and two written stages: one XLA compile; the run, one more.
    assert compiles == ["f", "f"]
    assert "ptx" in c.stages and "roofline" in c.stages and list(c.stages)[0] == "stablehlo"
    assert rows and all(k.registers > 0 for k in rows)
    assert records == [k.to_record() for k in rows] and records[0]["registers"] == rows[0].registers
    # Each kernel names the jax op it came from (the fusion root's metadata), at the guide's line.
    assert all(k.op_name and k.op_name.startswith("jit(f)/") for k in rows), [k.op_name for k in rows]
    assert all(k.source and k.source.startswith(f"{GUIDE}:") for k in rows), [k.source for k in rows]
    ptx = (tmp_path / "out" / "f.ptx").read_text()
    assert ".target sm_90a" in ptx and any(f".entry {k.kernel}(" in ptx for k in rows)
    sass = (tmp_path / "out" / "f.sass").read_text()
    assert "/*0000*/" in sass and all(k.kernel in sass for k in rows)
    assert c.target.spec.name == "h100_sxm" and dict(c.target.xla_flags)["xla_gpu_autotune_level"] == 0
    # The run compares XLA CPU against StableHLO's interpreter.
    assert r.ok and r.status == "ok" and not r.mismatches
    out = capsys.readouterr().out
    assert "Progress(done=1, total=2, what='f: sass')" in out
    last = out.rstrip().splitlines()[-1]  # the error as Python prints it: no "error:", no flag
    assert last.startswith("unknown GPU spec 'h100_sxmm'") and "--" not in last


def test_every_stage_of_one_compiled_is_one_compile(compiles):
    c = mh.load(str(MLP)).compile(mh.Target.cpu())
    assert compiles == []  # nothing compiles until a stage is read
    outputs = dict(c.stages)
    assert list(outputs) == [s.name for s in registry.all_for("cpu")]
    assert compiles == ["mlp_train_step"]
    assert outputs["hlo"].startswith("HloModule") and '"flops"' in outputs["cost"]
    assert c.stage("llvm") == outputs["llvm"] and compiles == ["mlp_train_step"]
    assert c.kernels() is None  # CPU has no kernels to list
    # Another Compiled of the same content reads the stage cache; without it, it compiles.
    mh.compile(str(MLP)).stage("hlo")
    assert compiles == ["mlp_train_step"]
    mh.compile(str(MLP), cache=False).stage("hlo")
    assert compiles == ["mlp_train_step", "mlp_train_step"]


def test_write_checks_every_stage_name_before_writing(tmp_path, compiles):
    c = mh.compile(str(MLP))
    with pytest.raises(mh.StageError) as e:
        c.write(str(tmp_path), stages=["hlo", "ptx"])
    assert_mentions(str(e.value), "'ptx'", "platform='cpu'")
    assert not list(tmp_path.iterdir()) and compiles == []
    assert c.write(str(tmp_path), stages="hlo") == [str(tmp_path / "mlp_train_step.hlo")]


def test_targets_resolve_as_the_commands_do(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_autotune_level=1 --xla_gpu_enable_triton_gemm=false")
    t = mh.Target.cuda("a100_sxm_80", xla_flags={"xla_gpu_autotune_level": 0})
    flags = dict(t.xla_flags)
    # The call's flags over XLA_FLAGS, typed by the DebugOptions schema.
    assert flags["xla_gpu_autotune_level"] == 0 and flags["xla_gpu_enable_triton_gemm"] is False
    assert (t.platform, t.spec.name, t.spec.sm) == ("cuda", "a100_sxm_80", "sm_80")
    assert mh.Target.of("GPU", gpu_spec="v100").spec.sm == "sm_70"  # XLA's spellings
    assert mh.Target.of("Host").platform == "cpu"
    assert mh.Target.cuda().spec.name == "h100_sxm"  # the default spec, noted to the logger
    with pytest.raises(mh.DriverError, match="names several specs"):
        mh.Target.cuda("a100_sxm_80,h100_sxm")
    with pytest.raises(mh.FlagError, match="xla_gpu_no_such_flag"):
        mh.Target.cpu(xla_flags={"xla_gpu_no_such_flag": 1})
    with pytest.raises(mh.SpecError):
        mh.Target.cuda("no_such_gpu")


def test_default_spec_note_goes_to_the_logger(caplog, capsys):
    with caplog.at_level("INFO", logger="mlirhlo_driver"):
        mh.Target.cuda()
    assert any("no gpu_spec given: compiling for h100_sxm" in r.getMessage() for r in caplog.records)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("spec", ["canonicalize,cse", "builtin.module(func.func(canonicalize),cse)", "@simplify"])
def test_optimize_takes_every_pipeline_spelling(spec):
    p = mh.load(str(DATA / "chlo_special.mlir"))
    before = p.as_text()
    q = p.optimize(spec)
    assert q.last_run is None  # the pipeline runs when the module is first needed
    assert q is not p and q.module is not p.module and p.as_text() == before and q.last_run is not None
    assert q.as_text().startswith("module")


def test_a_pass_written_in_a_notebook_runs_in_the_pipelines_it_is_given():
    """A pass made with the decorator in running code is a pass object (still callable); a pipeline
    given it runs it at its place, alone or with plugin files and the built-in passes; a pipeline not
    given it does not know the name, and nothing else in the process changed."""
    from jaxlib.mlir import ir

    seen = []

    @mh.register_pass("mark-notebook", anchor="func.func", description="marks each function")
    def mark(func_op):
        seen.append(func_op.name)
        with func_op.context:
            func_op.attributes["nb.marked"] = ir.UnitAttr.get()

    assert isinstance(mark, mh.PythonPass) and mark.description == "marks each function"
    p = mh.load(str(DATA / "chlo_special.mlir"))
    q = p.optimize("canonicalize,mark-notebook,fold-involutions", python_passes=[mark])
    assert "nb.marked" in q.as_text() and seen and "nb.marked" not in p.as_text()
    assert q.identity is None  # its code is in no file: never served from the stage cache
    with_set = p.optimize("builtin.module(func.func(mark-notebook))",
                          python_passes=mh.PassSet.default().with_passes(mark))
    assert "nb.marked" in with_set.as_text()
    with pytest.raises(mh.PipelineError, match="unknown pass 'mark-notebook'") as e:
        p.optimize("mark-notebook")
    assert_mentions(e.value.hint, "python_passes=", "docs/pipelines.md")  # one not handed over: where it goes
    assert "mark-notebook" not in mh.PassSet.default()
    with pytest.raises(TypeError, match="python_passes"):
        p.optimize("cse", python_passes=[42])


@pytest.mark.parametrize("spec, read_as", [
    ("canonicalize,no-such-pass", "passes:1:14"),  # hlo-opt's comma list
    ("func.func(no-such-pass)", "pipeline:1:11"),
    ("cse{no-such-option=1}", "pipeline:1:4"),  # options: MLIR's textual form
])
def test_optimize_errors_name_the_pass_and_how_the_spec_was_read(spec, read_as):
    p = mh.load(str(DATA / "chlo_special.mlir"))
    with pytest.raises(mh.PipelineError, match="no-such-") as e:
        p.optimize(spec)
    assert str(e.value).startswith(f"{read_as}: "), e.value  # Python's names: passes, pipeline


def test_load_errors_carry_file_line_and_col(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = stablehlo.bogus %x\n}\n")
    program = mh.load(str(bad))  # read now, parsed when first needed
    with pytest.raises(mh.InputError) as e:
        program.module  # noqa: B018
    assert (e.value.file, e.value.line) == (str(bad), 2) and e.value.col
    assert e.value.format().startswith(f"error: {bad}:2:")


@pytest.mark.slow
def test_from_jax_keeps_64_bit_arguments():
    """In a fresh process: each 64-bit dtype lowers in jax's x64 mode, so the module keeps the
    argument's type; the caller's own jax keeps x64 off before and after."""
    from tests.conftest import run_subprocess

    proc = run_subprocess(FROM_JAX_64)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["True False", *["jax_function True"] * 4, "False"]


def test_from_jax_locates_ops_at_the_callers_lines_only():
    """A JAX function's HLO metadata names the user's frames, not the driver's (its files
    are excluded from jax's source info, as jax excludes its own)."""
    def f(x):
        return x * 2  # this line

    hlo = mh.from_jax(f, np.ones(4, np.float32)).as_text("hlo")
    assert __file__ in hlo and "mlirhlo_driver" not in hlo


def test_llvm_to_ptx_for_a_spec():
    ir = textwrap.dedent("""\
        target triple = "nvptx64-nvidia-cuda"
        define ptx_kernel void @scale(ptr %p) {
          %v = load float, ptr %p
          %w = fmul float %v, 2.0
          store float %w, ptr %p
          ret void
        }
        """)
    ptx = mh.llvm_to_ptx(ir, gpu_spec="a100_sxm_80")
    assert ".target sm_80" in ptx and ".entry scale(" in ptx
    with pytest.raises(mh.InputError) as e:
        mh.llvm_to_ptx(ir.replace("fmul float", "fmul floaty"), arch="sm_90a", source="k.ll")
    assert (e.value.file, e.value.line) == ("k.ll", 4)  # the fmul line


NOTEBOOK = """
import json, os, sys
import numpy as np
import jax  # the user's own jax, imported first (it sets two variables of its own on import)
from jax._src import xla_bridge
import mlirhlo_driver as mh

def state():
    return {"environ": dict(os.environ), "platforms": jax.config.jax_platforms, "x64": jax.config.jax_enable_x64,
            "cpu_devices": jax.config.jax_num_cpu_devices, "backends": sorted(xla_bridge._backends)}

before = state()
p = mh.load(sys.argv[1])
cpu = p.compile(mh.Target.cpu(), cache=False)
cpu.stage("hlo")
cuda = p.compile(mh.Target.cuda("h100_sxm"), cache=False)
cuda.stage("ptx"), cuda.stage("triton-passes")
r = p.run(reference="cpu")
f = mh.from_jax(lambda x: (x * 2).sum(), np.ones(4, np.float64))
sharded = mh.load(sys.argv[2])
sr = sharded.run_spmd(num_partitions=4)
hlo = sharded.compile(mh.Target.cpu(), cache=False).stage("hlo")
after = state()
print(json.dumps({"same": before == after, "before": before["platforms"], "after": after,
                  "ok": [r.ok, sr.report.ok, "f64" in f.as_text()], "partitioned": "all-reduce" in hlo}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("platforms", [None, "cpu"])
def test_a_notebooks_jax_and_environment_are_unchanged_by_compiles_and_runs(platforms):
    """In a notebook's process (jax imported by the user, JAX_PLATFORMS unset or set): stages
    for CPU and CUDA (Triton's log too), a run, a JAX function lowered in 64 bits and a 4-way
    SPMD run leave jax's platforms, x64, CPU device count and started backends, and every
    environment variable, as they were; the sharded module's stages are partitioned."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "LLVM_DISABLE_SYMBOLIZATION",
                                                            "TF_CPP_MIN_LOG_LEVEL")}
    if platforms:
        env["JAX_PLATFORMS"] = platforms
    proc = subprocess.run([sys.executable, "-c", NOTEBOOK, str(DATA / "mlp_train_step.before_optimizations.txt"),
                           str(DATA / "spmd" / "mlp_step_4way.before_optimizations.txt")],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["ok"] == [True, True, True] and found["partitioned"]
    assert found["same"], found["after"]
    assert found["before"] == platforms and found["after"]["backends"] == []


def test_errors_name_parameters_in_python_and_flags_on_the_command_line():
    p = mh.load(str(MLP))
    with pytest.raises(mh.StageError) as e:
        p.stage("ptx")
    assert_mentions(str(e.value), "'ptx'", "platform='cuda'")  # Python's spelling of the parameter
    proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver", "opt", str(MLP), "--stage", "ptx", "--no-cache"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: ") and "platform='cuda'" not in line
    assert_mentions(line, "'ptx'", "--platform cuda")  # the command line's
    with pytest.raises(mh.DriverError) as e:
        p.run_spmd(num_partitions=0)
    assert_mentions(str(e.value), "num_partitions", "num_replicas", ">= 1")


def test_run_refuses_an_unknown_reference_before_compiling(compiles):
    p = mh.load(str(DATA / "chlo_special.mlir"))
    with pytest.raises(mh.DriverError) as e:
        p.run(reference="gpu")
    assert_mentions(e.value.message, "'gpu'")
    assert_mentions(e.value.hint, "interpreter", "cpu", "none")
    assert compiles == []


def test_run_of_a_check_file_compiles_its_inputs_by_default():
    """Program.run, as `mlirhlo run`: a check file's @inputs() values are parameters unless
    fold_constants=True, so the checked values come from compiled code."""
    from mlirhlo_driver import api

    p = api.load(str(DATA / "checks" / "corpus" / "dynamic_slice_i32_splat.mlir"))
    default = p.run(reference="none")
    folded = p.run(reference="none", fold_constants=True)
    assert default.checked_values == "compiled", default.checked_values_detail
    assert folded.checked_values != "compiled", folded.checked_values_detail


def test_optimize_with_no_pipeline_is_a_copy():
    """optimize() with nothing to run: a new Program with the same text, and no run."""
    p = mh.load(str(DATA / "chlo_special.mlir"))
    q = p.optimize()
    assert q is not p and q.module is not p.module and q.as_text() == p.as_text() and q.last_run is None


@pytest.mark.slow
def test_xla_passes_lists_the_compiles_passes_once(tmp_path):
    """Compiled.xla_passes(): XLA's passes of this compile, longest first, with whether each
    changed the module; computed once per Compiled."""
    path = tmp_path / "plain.hlo"
    path.write_text("HloModule plain\n\nENTRY main {\n  p = f32[4,8] parameter(0)\n  two = f32[] constant(2)\n"
                    "  tb = f32[4,8] broadcast(two), dimensions={}\n  ROOT s = f32[4,8] divide(p, tb)\n}\n")
    compiled = mh.compile(str(path), platform="cpu")
    rows = compiled.xla_passes()
    assert rows and [r.us for r in rows] == sorted((r.us for r in rows), reverse=True)
    algsimp = next(r for r in rows if r.name == "algsimp")
    assert algsimp.changed is True and algsimp.pipeline and algsimp.calls >= 1
    assert any(r.changed is False for r in rows)
    assert compiled.xla_passes() == rows


def test_compile_takes_a_target_or_its_parts_not_both():
    with pytest.raises(mh.DriverError) as e:
        mh.compile(str(DATA / "chlo_special.mlir"), mh.Target.cpu(), platform="cpu")
    assert_mentions(e.value.message, "target", "platform/gpu_spec/xla_flags")


def test_input_format_is_the_format_the_file_was_read_as():
    """Program.input_format: ``hlo`` for HLO text, ``mlir`` for StableHLO text."""
    assert mh.load(str(MLP)).input_format == "hlo"
    assert mh.load(str(CHLO)).input_format == "mlir"


def test_as_text_dialects_and_debug_info():
    """as_text: StableHLO without locations unless debug_info, MHLO ops for 'mhlo', HLO text for
    'hlo', and an InputError naming the dialects for anything else."""
    p = mh.load(str(CHLO))
    text = p.as_text()
    assert text.startswith("module @jit_special") and "stablehlo." in text and "loc(" not in text
    assert p.stage() == text and p.stage("stablehlo", debug_info=True) == p.as_text(debug_info=True)
    assert "loc(" in p.as_text(debug_info=True)
    mhlo = p.as_text("mhlo")
    assert "mhlo." in mhlo and "stablehlo." not in mhlo and "loc(" not in mhlo
    assert p.as_text("hlo").startswith("HloModule jit_special")
    with pytest.raises(mh.InputError) as e:
        p.as_text("xla")
    assert_mentions(e.value.message, "'xla'", "stablehlo, mhlo, hlo")


# ------------------------------------------------------------------ compile(): targets

def test_compile_defaults_to_cpu_and_keeps_a_given_target(compiles):
    """Program.compile and mh.compile: CPU by default, else the target given or made from
    platform/gpu_spec; a Program passed to mh.compile is compiled as is. Nothing compiles yet."""
    p = mh.load(str(CHLO))
    c = p.compile()
    assert c.program is p and c.target == mh.Target.cpu() and c.platform == "cpu"
    c = p.compile(mh.Target.cuda("a100_sxm_80"))
    assert (c.platform, c.target.spec.name) == ("cuda", "a100_sxm_80")
    c = mh.compile(str(CHLO))
    assert c.platform == "cpu" and c.program.name == "chlo_special"
    c = mh.compile(p, platform="cuda", gpu_spec="a100_sxm_80")
    assert c.program is p and (c.platform, c.target.spec.name) == ("cuda", "a100_sxm_80")
    c = mh.compile(p, mh.Target.cuda("v100"))
    assert c.target.spec.sm == "sm_70"
    assert compiles == []


@pytest.mark.parametrize("part", [{"platform": "cpu"}, {"gpu_spec": "a100_sxm_80"}, {"xla_flags": {}}])
def test_compile_refuses_a_target_with_any_of_its_parts(part):
    """Each of platform, gpu_spec and xla_flags, given with a target, is refused."""
    with pytest.raises(mh.DriverError) as e:
        mh.compile(str(CHLO), mh.Target.cpu(), **part)
    assert_mentions(e.value.message, "target", "platform/gpu_spec/xla_flags")


def test_compiled_stages_is_a_mapping_of_the_platforms_stages(compiles):
    """Compiled.stages: every stage of the platform, in order; a stage it lacks is not in it
    (KeyError, not StageError); CPU has no kernels or fusion costs. MLIR stages need no compile."""
    c = mh.load(str(CHLO)).compile()
    names = [s.name for s in registry.all_for("cpu")]
    assert list(c.stages) == names and len(c.stages) == len(names) == 15
    assert "ptx" not in c.stages and "nope" not in c.stages
    with pytest.raises(KeyError):
        c.stages["ptx"]
    assert "stablehlo" in c.stages and c.stages["stablehlo"] == c.program.as_text()
    assert c.kernels() is None and c.fusion_costs() is None
    assert compiles == []


def test_write_takes_one_name_a_list_or_all(tmp_path, add_mlir_file, compiles):
    """Compiled.write: the files of the stages named (one, a list in its order, or "all"),
    returning every path written, from one compile."""
    c = mh.compile(str(add_mlir_file))
    one = c.write(str(tmp_path / "one"), stages="hlo")
    assert one == [str(tmp_path / "one" / "add.hlo")]
    two = c.write(str(tmp_path / "two"), stages=["mhlo", "hlo"])
    assert [Path(p).name for p in two] == ["add.mhlo.mlir", "add.hlo"]
    assert Path(two[0]).read_text() == c.stage("mhlo")
    compiles.clear()
    c = mh.compile(str(add_mlir_file))
    every = c.write(str(tmp_path / "all"))
    assert compiles == ["add"]
    expected = [f for s in registry.all_for("cpu") for f, _ in s.files("add", c.stage(s.name))]
    assert [Path(p).name for p in every] == expected and len(expected) >= 14
    assert sorted(os.listdir(tmp_path / "all")) == sorted(expected)


# ------------------------------------------------------------------ convert

def test_convert_prints_hlo_read_as_hlo_from_its_proto():
    """HLO read as HLO converts from its own proto (names kept); StableHLO goes through emit."""
    from mlirhlo_driver.ir import emit

    hlo = mh.load(str(MLP))
    assert hlo.convert("hlo") == emit.hlo_text_from_proto(hlo.hlo_proto) != emit.hlo_text(hlo.module)
    assert hlo.convert("hlo-proto") == hlo.hlo_proto
    assert hlo.convert("hlo-pbtxt") == emit.hlo_pbtxt_from_proto(hlo.hlo_proto) != emit.hlo_pbtxt(hlo.module)
    mlir = mh.load(str(CHLO))
    assert mlir.hlo_proto is None
    assert mlir.convert("hlo") == emit.hlo_text(mlir.module) and mlir.convert("hlo").startswith("HloModule")
    assert mlir.convert("hlo-proto") == emit.hlo_proto(mlir.module)
    assert mlir.convert("hlo-pbtxt") == emit.hlo_pbtxt(mlir.module)
    assert mlir.convert("stablehlo") == mlir.as_text() and mlir.convert("mhlo") == mlir.as_text("mhlo")


@pytest.mark.parametrize("fmt, hint", [
    ("hlo-prot", "did you mean 'hlo-proto', 'hlo-pbtxt'?"),
    ("jsonx", "hlo, hlo-proto, hlo-pbtxt, stablehlo, bytecode, vhlo, mhlo"),
])
@pytest.mark.golden
def test_unknown_convert_format_names_close_matches_or_every_format(fmt, hint):
    """Golden: check_format: DriverError with the closest formats, else the list of them all."""
    from mlirhlo_driver import api

    for call in (lambda: api.check_format(fmt), lambda: mh.load(str(CHLO)).convert(fmt)):
        with pytest.raises(mh.DriverError) as e:
            call()
        assert (e.value.message, e.value.hint) == (f"unknown format '{fmt}'", hint)
    for fmt in api.CONVERT_FORMATS:
        api.check_format(fmt)


# ------------------------------------------------------------------ load / load_all

def test_load_wants_exactly_one_module(tmp_path):
    """load: one module, else InputError naming the count; load_all: every module, in order."""
    shutil.copy(CHLO, tmp_path / "a.mlir")
    shutil.copy(ERF_INV, tmp_path / "b.mlir")
    with pytest.raises(mh.InputError) as e:
        mh.load(str(tmp_path))
    assert e.value.file == str(tmp_path)
    assert_mentions(e.value.message, "one module", "2")
    assert [p.name for p in mh.load_all(str(tmp_path))] == ["a", "b"]
    assert [p.name for p in mh.load_all([str(tmp_path / "b.mlir"), str(tmp_path / "a.mlir")])] == ["b", "a"]
    one = mh.load(str(tmp_path / "b.mlir"))
    assert isinstance(one, mh.Program) and one.name == "b"


def test_load_all_splits_a_file_only_when_asked(tmp_path):
    """load_all: '// -----' splits a file into modules only with split_input_file=True."""
    path = tmp_path / "split.mlir"
    path.write_text(CHLO.read_text() + "\n// -----\n" + ERF_INV.read_text())
    assert [p.name for p in mh.load_all(str(path))] == ["split"]
    assert [p.name for p in mh.load_all(str(path), split_input_file=True)] == ["split.0", "split.1"]


# ------------------------------------------------------------------ run / run_spmd

def test_run_defaults_to_seed_0_random_inputs_and_keeps_the_arrays():
    """Program.run: random inputs from seed 0 unless told, with inputs and outputs kept."""
    p = mh.load(str(ERF_INV))
    r = p.run(reference="none")
    assert (r.status, r.inputs_note) == ("ran", "random (seed 0)")
    assert r.inputs is not None and r.outputs is not None and r.inputs[0].any()
    assert p.run(reference="none", seed=3).inputs_note == "random (seed 3)"
    assert p.run(reference="none", zeros=True).inputs_note == "zeros"


def test_run_bisects_a_mismatch_only_when_asked():
    """A mismatch (exact tolerances) is reported as is; bisect=True finds the op behind it."""
    p = mh.load(str(ERF_INV))
    r = p.run(rtol=0.0, atol=0.0)
    assert r.status == "mismatch" and r.mismatches and r.bisect is None and r.pass_bisect is None
    assert r.reference_outputs is not None
    b = p.run(rtol=0.0, atol=0.0, bisect=True)
    assert b.status == "mismatch" and b.bisect is not None and b.pass_bisect is None


def test_run_spmd_checks_flags_before_running(monkeypatch):
    """run_spmd: an unknown XLA flag is a FlagError, before anything runs."""
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    p = mh.load(str(DATA / "spmd" / "mlp_step_4way.before_optimizations.txt"))
    with pytest.raises(mh.FlagError, match="xla_no_such_flag"):
        p.run_spmd(xla_flags={"xla_no_such_flag": 1})


def test_llvm_to_ptx_defaults_optimize_for_the_default_spec():
    """llvm_to_ptx with no options: the default spec's sm_90a, LLVM's -O3 first (the internal
    function inlined: no .func, no call); optimize=False keeps the call; gpu_spec with arch is refused."""
    ptx = mh.llvm_to_ptx(CALL_KERNEL)
    assert ".target sm_90a" in ptx and ".entry scale(" in ptx and ".func" not in ptx and "call" not in ptx
    assert ptx == mh.llvm_to_ptx(CALL_KERNEL, arch="sm_90a", opt_level=3, optimize=True)
    plain = mh.llvm_to_ptx(CALL_KERNEL, optimize=False)
    assert ".func" in plain and "call" in plain
    with pytest.raises(mh.DriverError) as e:
        mh.llvm_to_ptx(CALL_KERNEL, gpu_spec="a100_sxm_80", arch="sm_80")
    assert_mentions(e.value.message, "gpu_spec", "arch")


def test_llvm_to_ptx_checks_with_ptxas_unless_told_not_to():
    """By default ptxas assembles the PTX: too much shared memory is an InputError naming
    ptxas; check_ptxas=False returns LLVM's PTX unchecked."""
    with pytest.raises(mh.InputError) as e:
        mh.llvm_to_ptx(BIG_SHARED_KERNEL, source="big.ll")
    assert_mentions(str(e.value), "ptxas", "shared data")
    assert ".entry big(" in mh.llvm_to_ptx(BIG_SHARED_KERNEL, check_ptxas=False)


def test_compile_rejects_an_unknown_xla_flag_before_compiling(add_file):
    # The check runs in compile() itself, not later inside XLA at the first stage.
    # From Python, the flag is named as the xla_flags key it was given as.
    with pytest.raises(FlagError) as e:
        mlirhlo_driver.compile(str(add_file), xla_flags={"xla_cpu_no_such_flag": True})
    assert_mentions(str(e.value), "unknown", "'xla_cpu_no_such_flag'")


def test_program_convert_accepts_each_format_and_names_a_wrong_one(add_file):
    from mlirhlo_driver.errors import DriverError

    prog = mlirhlo_driver.load(str(add_file))
    mhlo = prog.convert("mhlo")
    assert "mhlo.add" in mhlo and "loc(" not in mhlo  # no locations unless asked for
    assert prog.convert("hlo").startswith("HloModule")
    with pytest.raises(DriverError) as e:
        prog.convert("hlo-text")
    assert_mentions(e.value.message, "'hlo-text'")


@pytest.mark.golden
@pytest.mark.parametrize("make, line", [
    (lambda tmp: mh.compile(str(CHLO), mh.Target.cpu(), platform="cpu"),
     "error: give a target, or platform/gpu_spec/xla_flags, not both"),
    (lambda tmp: mh.llvm_to_ptx(CALL_KERNEL, gpu_spec="a100_sxm_80", arch="sm_80"),
     "error: give gpu_spec or arch, not both"),
    (lambda tmp: mh.load(str(tmp)), "error: {tmp}: expected one module, found 2"),
])
def test_api_argument_refusals_exactly(tmp_path, make, line):
    """Golden: the API's own refusals of its arguments (as Python spells them)."""
    shutil.copy(CHLO, tmp_path / "a.mlir")
    shutil.copy(ERF_INV, tmp_path / "b.mlir")
    with pytest.raises(mh.DriverError) as e:
        make(tmp_path)
    assert e.value.format("params") == line.format(tmp=tmp_path)


def test_run_spmd_runs_on_the_drivers_devices_whatever_jax_started_with(monkeypatch):
    """A 4-way run in a process whose jax started with one CPU device: the run has its own
    host devices, and the user's jax keeps its one device, its platforms and its config."""
    import jax

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    before = (len(jax.devices("cpu")), jax.config.jax_platforms, jax.config.jax_num_cpu_devices)
    p = mh.load(str(DATA / "spmd" / "mlp_step_4way.before_optimizations.txt"))
    report = p.run_spmd(num_partitions=4)
    assert report.report.ok, report.report.message
    assert (len(jax.devices("cpu")), jax.config.jax_platforms, jax.config.jax_num_cpu_devices) == before


INTERRUPTED = """
import os, sys, time
import mlirhlo_driver as mh
p = mh.load(sys.argv[1])
try:
    p.compile(mh.Target.cpu(), cache=False).stage("hlo")
    print("finished")
except KeyboardInterrupt:
    print("interrupted", flush=True)
os._exit(0)
"""


@pytest.mark.slow
def test_ctrl_c_during_xlas_compile_reaches_the_caller_at_once(tmp_path):
    """In a notebook's process, Ctrl-C while XLA compiles is a KeyboardInterrupt in the caller
    within a second, not when XLA's compile ends."""
    from tests.conftest import interrupt_once_xla_compiles, long_compile_hlo

    big = tmp_path / "long.hlo"
    big.write_text(long_compile_hlo())
    proc, seconds, out, err = interrupt_once_xla_compiles([sys.executable, "-c", INTERRUPTED, big], tmp_path)
    assert (proc.returncode, out) == (0, "interrupted\n"), err
    assert seconds < 1.0, seconds
