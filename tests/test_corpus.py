"""Every door of the driver over a corpus of real JAX programs written by the installed jax.

scripts/make_corpus.py writes the corpus (scripts/corpus_programs.py: a transformer block, an
MLP training step with an Adam-style update, a scan RNN, a conv net, jax.checkpoint,
custom_vjp, while_loop, sort/top-k, gather/scatter, bf16 and fp8 mixed precision, and
sharded programs over 4 and 8 host CPU devices) into a temporary directory once per session:
XLA's ``before_optimizations`` dump, jax's StableHLO, and a ``corpus_programs:NAME --args``
entry point each. The doors: ``opt --stage all`` (CPU and two CUDA specs), ``kernels``,
``diff``, ``run`` against the interpreter, ``spmd-run``, ``multihost_hlo_runner``,
``run_hlo_module``, ``hlo-opt``, the Python API, and ``opt --platform tpu --stage hlo,memory``
device-less (dumps and StableHLO; skipped without libtpu). Command-line doors run in subprocesses,
so a signal shows as one. Nowhere a traceback; every outcome other than success is in
EXPECTED below, with its reason.

Cost on 2 cores: 53 s at jax 0.12.0.1, 62 s at 0.9.0 (measured), so each batch door runs
once over the whole corpus and the one-module doors run in this process where they can.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_xla_tool
from tests.tpu.conftest import needs_libtpu

# One worker makes the corpus (a session fixture) and runs every door over it: with
# `pytest -n`, xdist's loadgroup keeps these tests together instead of each worker making its own.
pytestmark = pytest.mark.xdist_group("corpus")

def _libtpu_version() -> str | None:
    from mlirhlo_driver._native import libtpu

    found = libtpu.in_use()
    return found.version if found is not None else None


# Outcomes other than success, by (door, program): (what the door says, why). A door's
# output must contain the text; everything not listed must succeed.
_SHARDY_MANUAL = ("manual computations (shard_map)", "a shard_map program's HLO holds Shardy's "
                  "manual-computation custom calls (xla.sdy.GlobalToLocalShape), which XLA compiles only over "
                  "their mesh's devices: `run` runs a module on one device, so the driver refuses it with its "
                  "location, since jaxlib 0.12's CPU compile sometimes dies on XLA's error path (the stage "
                  "doors compile it over the 4 partitions its header names; spmd-run, multihost_hlo_runner and "
                  "run_hlo_module run it on 4 partitions)")
EXPECTED = {
    ("run", "shard_map_4"): _SHARDY_MANUAL,
    ("api", "shard_map_4"): _SHARDY_MANUAL,  # its run(); its stages are compiled partitioned
    # libtpu 0.0.50.1 dies of a SIGSEGV compiling the dump's Shardy round-trip form of a
    # shard_map (xla.sdy.GlobalToLocalShape/LocalToGlobalShape custom calls, whatever the
    # topology, v5e:2x2 or 2x4), where XLA's CPU and CUDA compilers take it; jax's StableHLO of
    # the same program (sdy.manual_computation) compiles. The death is in the driver's TPU
    # process: one line, exit 1. libtpu 0.0.34 (jax 0.9's pin, the oldest end) compiles it.
    **({("opt-tpu-hlo", "shard_map_4"): ("XLA's compile crashed (SIGSEGV", "libtpu's compile of a shard_map's "
                                         "round-trip HLO segfaults; its StableHLO compiles")}
       if _libtpu_version() not in (None, "0.0.34") else {}),
}


# Stages left out of CUDA's --stage all here: they read XLA's Triton pass log, a compile of
# its own with the log on (about 3.6 s per module with Triton fusions on 2 cores, ~50 s for
# the corpus per spec); tests/xla/test_stages_triton.py covers them.
SLOW_CUDA_STAGES = ("ttgir", "triton-passes")
# What `kernels` and `diff` read of each program: "hlo" (the dump), "mlir" (jax's StableHLO)
# or "entry" (`corpus_programs:NAME --args SPECS`): the dumps for all programs, the entry
# points for ENTRY_PROGRAMS (each is a process of its own with jax imported, ~3 s).
KERNELS_INPUT_KINDS = ["hlo"]
DIFF_INPUT_KINDS = ["hlo"]
ENTRY_PROGRAMS = ("transformer_block", "scan_rnn")


def _door_inputs(p: dict, kind: str) -> list[str]:
    """A program as a door's input arguments, in the corpus directory."""
    return [p["entry"], "--args", p["args"]] if kind == "entry" else [p["files"][kind]]


def _sh(argv: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_FLAGS"))}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)


def _tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _no_crash(proc: subprocess.CompletedProcess, what: str) -> None:
    """No signal, no traceback: whatever failed said so in its own lines."""
    assert proc.returncode >= 0, f"{what}: killed by signal {-proc.returncode}\n{proc.stderr[-2000:]}"
    assert proc.returncode not in (134, 139), f"{what}: exit {proc.returncode} (an abort)\n{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr + proc.stdout, f"{what}:\n{proc.stderr[-4000:]}"


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    proc = _sh([sys.executable, str(REPO / "scripts" / "make_corpus.py"), str(out)], REPO)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["dir"] = out
    return manifest


def _programs(corpus, *, sharded: bool | None = None):
    return [p for p in corpus["programs"] if "skipped" not in p
            and (sharded is None or (p["partitions"] > 1) == sharded)]


def _files(corpus, kind: str = "hlo", **kw) -> list[str]:
    return [p["files"][kind] for p in _programs(corpus, **kw)]


def _program(corpus, name: str) -> dict:
    found = next(p for p in corpus["programs"] if p["name"] == name)
    if "skipped" in found:
        pytest.skip(f"jax {corpus['jax']}: {found['skipped']}")
    return found


def _batch_failures(stderr: str) -> dict[str, str]:
    """`opt` batch summary: '  NAME  FAILED|INVALID  FILE: message' per failed module (INVALID:
    the driver refused the input)."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s+(\S+)\s+(?:FAILED|INVALID)\s+(.*)$", stderr, re.M)}


def _expected_failures(door: str, corpus) -> dict[str, str]:
    names = {p["name"] for p in _programs(corpus)}
    return {prog: says for (d, prog), (says, _why) in EXPECTED.items() if d == door and prog in names}


def _check_batch(door: str, corpus, failures: dict[str, str]) -> None:
    expected = _expected_failures(door, corpus)
    assert set(failures) == set(expected), (failures, expected)
    for prog, says in expected.items():
        assert says in failures[prog], (prog, failures[prog])


@pytest.mark.slow
def test_the_corpus_holds_every_program_this_jax_can_write(corpus):
    """Each program has its HLO dump and StableHLO, or says why this jax cannot write it."""
    names = [p["name"] for p in corpus["programs"]]
    assert len(names) == 15 and corpus["devices"] == 8
    for p in corpus["programs"]:
        if "skipped" in p:
            assert p["skipped"].startswith(f"jax {corpus['jax']} has no"), p
            continue
        hlo = (corpus["dir"] / p["files"]["hlo"]).read_text()
        assert hlo.startswith("HloModule jit_"), p["name"]
        assert (f"num_partitions={p['partitions']}" in hlo.splitlines()[0]) == (p["partitions"] > 1)
        assert "stablehlo." in (corpus["dir"] / p["files"]["mlir"]).read_text()


# ------------------------------------------------------------------ opt --stage all

@pytest.mark.slow
def test_opt_stage_all_cpu(corpus, tmp_path):
    proc = _sh([_tool("mlirhlo"), "opt", "--platform", "cpu", "--stage", "all", "--no-cache",
                "--dump-dir", str(tmp_path), *_files(corpus)], corpus["dir"])
    _no_crash(proc, "opt --stage all (cpu)")
    _check_batch("opt-cpu", corpus, _batch_failures(proc.stderr))
    for name in {p["name"] for p in _programs(corpus)} - set(_expected_failures("opt-cpu", corpus)):
        assert (tmp_path / f"{name}.hlo").read_text().startswith("HloModule"), name


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["h100_sxm", "a100_sxm_80"])
def test_opt_stage_all_cuda(corpus, tmp_path, spec):
    """Every CUDA stage but the Triton pass-log ones (SLOW_CUDA_STAGES), device-less."""
    listing = _sh([_tool("mlirhlo"), "opt", "--list-stages", "--platform", "cuda"], corpus["dir"])
    stages = [ln.split()[0] for ln in listing.stdout.splitlines() if ln.strip() and not ln.startswith(" ")]
    stages = [s for s in stages if re.fullmatch(r"[a-z][a-z0-9-]*", s) and s not in SLOW_CUDA_STAGES]
    assert {"ptx", "cubin", "sass", "kernels", "triton", "thunk-sequence"} <= set(stages), stages
    proc = _sh([_tool("mlirhlo"), "opt", "--platform", "cuda", "--gpu-spec", spec, "--stage", ",".join(stages),
                "--no-cache", "--dump-dir", str(tmp_path), *_files(corpus)], corpus["dir"])
    _no_crash(proc, f"opt --stage all (cuda {spec})")
    _check_batch("opt-cuda", corpus, _batch_failures(proc.stderr))
    sm = {"h100_sxm": "sm_90a", "a100_sxm_80": "sm_80"}[spec]
    assert f".target {sm}" in (tmp_path / "transformer_block.ptx").read_text()


# The TPU door, device-less: every program's dump and jax's StableHLO through `opt --stage
# hlo,memory` for a v5e slice of 8 chips (the sharded programs' 4 and 8 partitions), in one
# batch each (~5 s for the 15 programs on 2 cores with libtpu 0.0.50.1). Skipped without libtpu.
TPU_TOPOLOGY = "v5e:2x4"


@needs_libtpu
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["hlo", "mlir"])
def test_opt_tpu(corpus, tmp_path, kind):
    proc = _sh([_tool("mlirhlo"), "opt", "--platform", "tpu", "--tpu-topology", TPU_TOPOLOGY, "--stage", "hlo,memory",
                "--no-cache", "--dump-dir", str(tmp_path), *_files(corpus, kind)], corpus["dir"])
    _no_crash(proc, f"opt --platform tpu ({kind})")
    door = f"opt-tpu-{kind}"
    _check_batch(door, corpus, _batch_failures(proc.stderr))
    for name in {p["name"] for p in _programs(corpus)} - set(_expected_failures(door, corpus)):
        hlo = (tmp_path / f"{name}.hlo").read_text()
        assert hlo.startswith("HloModule") and "T(8,128)" in hlo, name  # TPU's tiled layouts
        assert "verdict:        fits" in (tmp_path / f"{name}.memory.txt").read_text(), name
    # partitioned over the slice: per-device shapes (x f32[16,32] over 'data'=2, w f32[32,16] over 'model'=4)
    sharded = (tmp_path / "sharded_2d_8.hlo").read_text().splitlines()[0]
    assert "f32[8,32]" in sharded and "f32[32,4]" in sharded, sharded[:300]


# ---------------------------------------------------------------------- kernels

@pytest.mark.slow
@pytest.mark.parametrize("kind", KERNELS_INPUT_KINDS)
def test_kernels(corpus, kind):
    ok = [p for p in _programs(corpus) if ("kernels", p["name"]) not in EXPECTED]
    # Files in one call; entry points (one --args each) in a call each.
    batches = [ok] if kind != "entry" else [[p] for p in ok]
    modules = set()
    for batch in batches:
        proc = _sh([_tool("mlirhlo"), "kernels", "--gpu-spec", "h100_sxm", "--json",
                    *[a for p in batch for a in _door_inputs(p, kind)]], corpus["dir"])
        _no_crash(proc, "kernels")
        assert proc.returncode == 0, proc.stderr
        modules |= {k["module"] for k in json.loads(proc.stdout)["kernels"]}
    assert modules == {p["name"] for p in ok}
    for prog, says in _expected_failures("kernels", corpus).items():
        bad = _sh([_tool("mlirhlo"), "kernels", "--gpu-spec", "h100_sxm", *_door_inputs(_program(corpus, prog), kind)],
                  corpus["dir"])
        _no_crash(bad, f"kernels {prog}")
        assert bad.returncode != 0 and says in bad.stderr, bad.stderr


@pytest.mark.slow
def test_kernels_and_diff_take_entry_points(corpus):
    """A JAX function (FILE:fn --args) at `kernels` and `diff`, as at `opt`: the same kernels
    as its dump's."""
    for name in ENTRY_PROGRAMS:
        p = _program(corpus, name)
        rows = {}
        for kind in ("hlo", "entry"):
            proc = _sh([_tool("mlirhlo"), "kernels", "--gpu-spec", "h100_sxm", "--json", *_door_inputs(p, kind)],
                       corpus["dir"])
            _no_crash(proc, f"kernels {name} ({kind})")
            assert proc.returncode == 0, proc.stderr
            # the same kernels and launches; XLA's numbering of their names may differ
            rows[kind] = sorted((re.sub(r"_\d+$", "", k["kernel"]), k["specs"]["h100_sxm"]["grid"])
                                for k in json.loads(proc.stdout)["kernels"])
        assert rows["entry"] == rows["hlo"] and rows["hlo"], name
        proc = _sh([_tool("mlirhlo"), "diff", *_door_inputs(p, "entry"), "--platform", "cpu",
                    "--flags-b", "--xla_disable_hlo_passes=algsimp"], corpus["dir"])
        _no_crash(proc, f"diff {name}")
        assert proc.returncode == 0 and re.search(r"^(differences found|no differences)", proc.stdout, re.M), \
            proc.stderr


# ------------------------------------------------------------------------- diff

# diff compiles each side (~1.4 s a CUDA compile here): every program on CPU with and without
# XLA's algebraic simplifier, the larger ones device-less for H100 against A100.
DIFF_CUDA = ("transformer_block", "mlp_train_step", "conv_net", "bf16_mixed", "sharded_2d_8")


@pytest.mark.slow
@pytest.mark.parametrize("kind", DIFF_INPUT_KINDS)
def test_diff(corpus, kind, cli):
    """Each program's two compiles side by side: fusions, kernels and memory."""
    here = os.getcwd()
    os.chdir(corpus["dir"])
    try:
        for p in _programs(corpus):
            sides = [["--platform", "cpu", "--flags-b", "--xla_disable_hlo_passes=algsimp"]]
            if p["name"] in DIFF_CUDA:
                sides.append(["--platform", "cuda", "--gpu-spec", "h100_sxm,a100_sxm_80"])
            for side in sides:
                r = cli("diff", *_door_inputs(p, kind), *side, "--no-cache")
                assert "Traceback" not in r.err, (p["name"], r.err)
                if ("diff", p["name"]) in EXPECTED:
                    assert r.code != 0 and EXPECTED["diff", p["name"]][0] in r.err, (p["name"], r.err)
                else:
                    assert r.code == 0 and re.search(r"^(differences found|no differences)", r.out, re.M), \
                        (p["name"], side, r.out[-500:], r.err)
    finally:
        os.chdir(here)


# ------------------------------------------------------------- running on XLA CPU

def _run_rows(path: Path) -> dict[str, dict]:
    return {row["module"]: row for row in json.loads(path.read_text())}


@pytest.mark.slow
def test_run_against_the_interpreter(corpus, tmp_path):
    """Every dump, XLA CPU against StableHLO's interpreter at the default tolerances."""
    report = tmp_path / "run.json"
    proc = _sh([_tool("mlirhlo"), "run", "--reference", "interpreter", "--json", str(report), *_files(corpus)],
               corpus["dir"])
    _no_crash(proc, "run")
    rows = _run_rows(report)
    failed = {name: row for name, row in rows.items() if row["status"] != "ok"}
    assert set(failed) == set(_expected_failures("run", corpus)), failed
    for name, says in _expected_failures("run", corpus).items():
        assert says in proc.stdout + proc.stderr, name


@pytest.mark.slow
def test_run_hlo_module(corpus):
    proc = _sh([_tool("run_hlo_module"), "--platform=cpu", "--reference_platform=interpreter", *_files(corpus)],
               corpus["dir"])
    _no_crash(proc, "run_hlo_module")
    rows = dict(re.findall(r"^│ (\w+)\s+│ (\w+)", proc.stdout, re.M))
    assert set(rows) == {p["name"] for p in _programs(corpus)}, proc.stdout
    assert {n for n, s in rows.items() if s != "ok"} == set(_expected_failures("run_hlo_module", corpus))


@pytest.mark.slow
def test_hlo_opt(corpus, capfd):
    """XLA's hlo-opt: the optimized HLO of each dump (its default stage), one call each (in
    this process: it takes one module, and a process each would cost 3 s)."""
    for p in _programs(corpus):
        r = run_xla_tool("hlo-opt", ["--platform=cpu", p["files"]["hlo"]], corpus["dir"], capfd)
        assert "Traceback" not in r.err, (p["name"], r.err)
        if ("hlo-opt", p["name"]) in EXPECTED:
            assert r.code != 0 and EXPECTED["hlo-opt", p["name"]][0] in r.err, r.err
        else:
            assert r.code == 0 and r.out.startswith("HloModule"), (p["name"], r.err)


# ------------------------------------------------------------------------- SPMD

def _sharded(corpus):
    return [p["name"] for p in corpus["programs"] if p["partitions"] > 1]


def _spmd_params():
    names = ["sharded_mlp_4", "sharded_2d_8", "shard_map_4", "explicit_axes_8"]
    out = []
    for name in names:
        # the entry point (the program jitted in the driver's process) for two of them: each
        # call starts a process with its host devices (~3 s)
        for kind in ("hlo", "mlir", "entry") if name in ("sharded_mlp_4", "explicit_axes_8") else ("hlo", "mlir"):
            out.append(pytest.param(name, kind, id=f"{name}-{kind}"))
    return out


def _spmd_argv(p: dict, kind: str) -> list[str]:
    n = str(p["partitions"])
    if kind == "entry":
        return [_tool("mlirhlo"), "spmd-run", p["entry"], "--args", p["args"], "--num-partitions", n]
    return [_tool("mlirhlo"), "spmd-run", p["files"][kind], "--num-partitions", n]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "kind"), _spmd_params())
def test_spmd_run(corpus, name, kind):
    """Partitioned over host CPU devices, gathered and compared with the unpartitioned run."""
    p = _program(corpus, name)
    proc = _sh(_spmd_argv(p, kind), corpus["dir"])
    _no_crash(proc, f"spmd-run {name} ({kind})")
    if ("spmd-run", name) in EXPECTED:
        assert proc.returncode == 1 and EXPECTED["spmd-run", name][0] in proc.stderr, proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("name", "kind"), [x for x in _spmd_params() if x.values[1] == "hlo"])
def test_multihost_hlo_runner(corpus, name, kind):
    p = _program(corpus, name)
    proc = _sh([_tool("multihost_hlo_runner"), f"--num_partitions={p['partitions']}", p["files"][kind]],
               corpus["dir"])
    _no_crash(proc, f"multihost_hlo_runner {name}")
    if ("multihost", name) in EXPECTED:
        assert proc.returncode == 1 and EXPECTED["multihost", name][0] in proc.stdout + proc.stderr, proc.stdout
    else:
        assert proc.returncode == 0, proc.stderr


# ----------------------------------------------------------------- the Python API

@pytest.mark.slow
def test_python_api(corpus):
    """load(...).compile(Target...) for CPU and a CUDA spec, and .run() against the interpreter,
    on jax's StableHLO of each program (the entry points for the unsharded ones too)."""
    import mlirhlo_driver as m

    here = os.getcwd()
    os.chdir(corpus["dir"])
    sys.path.insert(0, str(corpus["dir"]))
    try:
        for p in _programs(corpus):
            program = m.load(p["files"]["mlir"])
            expected = EXPECTED.get(("api", p["name"]))
            hlo = program.compile(m.Target.cpu()).stage("hlo")
            assert hlo.startswith("HloModule"), p["name"]
            if p["partitions"] > 1:  # compiled over its partitions: XLA's SPMD partitioner made the entry
                assert re.search(r"^ENTRY %\S+_spmd ", hlo, re.M), p["name"]
            if p["name"] in DIFF_CUDA:  # the CUDA compiles of all are test_opt_stage_all_cuda's
                assert ".visible .entry" in program.compile(m.Target.cuda("h100_sxm")).stage("ptx"), p["name"]
            report = program.run()
            if expected is not None:
                assert report.status != "ok" and expected[0] in str(report.message), (p["name"], report)
            else:
                assert report.ok, (p["name"], report.status, report.message)
            if p["partitions"] == 1:
                entry = m.load(p["entry"], args=p["args"])
                assert entry.compile(m.Target.cpu()).stage("hlo").startswith("HloModule"), p["name"]
    finally:
        os.chdir(here)
        sys.path.remove(str(corpus["dir"]))
