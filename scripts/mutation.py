#!/usr/bin/env python
"""Mutation testing: do the tests notice a plausible one-line regression?

    python scripts/mutation.py [-n 60] [--seed 0] [--jobs 1] [--timeout 600] [--modules a,b]
    python scripts/mutation.py --list            # the mutation sites per module, nothing run

Samples N mutants across the package with a fixed seed, spread round-robin over
the modules in MODULE_TESTS. A mutant changes one AST node: a comparison
(``==``/``!=``, ``<``/``<=``, ``in``/``not in``, ``is``/``is not``), ``and``/``or``,
an arithmetic operator, a number (n -> n+1), ``True``/``False``, drops a
``not``, negates an ``if``/``while`` condition, or makes a ``return`` give None.
Docstrings and other strings are left alone.

For each mutant it runs the test files mapped to the mutated module
(``pytest -x``) and counts the mutant *killed* when a test fails or the run
times out, *survived* when every test passes. It prints the kill rate and each
survivor (module:line, what changed) to look at: an unguarded behaviour, or an
equivalent mutant.

Nothing in the working tree is touched: the package, tests and data are copied
to a temporary directory first (one copy per job), mutants are written there,
and tests run with that copy first on PYTHONPATH. Tests that already fail on
the unmutated copy are deselected, so work in progress elsewhere does not count
as kills. Offline tool, CPU heavy: minutes per mutant for the slow test files.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PKG = "mlirhlo_driver"

# module -> the test files that should notice a regression in it (the fast, specific ones).
MODULE_TESTS: dict[str, list[str]] = {
    "errors.py": ["test_errors.py", "test_usage_errors.py"],
    "inputs.py": ["test_inputs.py", "test_errors.py"],
    "pipeline.py": ["test_pipeline.py"],
    "passes.py": ["test_pipeline.py"],
    "python_passes.py": ["test_python_passes.py"],
    "builtin_passes.py": ["test_python_passes.py"],
    "gpu_specs.py": ["test_gpu_specs.py"],
    "hlo_proto.py": ["test_hlo_proto.py"],
    "protos.py": ["test_protos.py", "test_hlo_proto.py"],
    "ptx.py": ["test_ptx.py", "test_ptx_cli.py"],
    "checks.py": ["test_checks.py"],
    "run.py": ["test_run.py"],
    "spmd.py": ["test_spmd.py"],
    "xla_flags.py": ["test_xla_flags.py"],
    "xla_cli_flags.py": ["test_xla_tools.py", "test_xla_flags.py"],
    "xla_tools.py": ["test_xla_tools.py"],
    "stages.py": ["test_xla_stages.py", "test_end_to_end.py"],
    "xla_stages.py": ["test_xla_stages.py"],
    "xla_backend.py": ["test_xla_stages.py", "test_xla_flags.py"],
    "emit.py": ["test_convert.py", "test_inputs.py"],
    "outputs.py": ["test_convert.py", "test_errors.py"],
    "cuda_tools.py": ["test_cuda_tools.py"],
    "cli.py": ["test_usage_errors.py", "test_errors.py", "test_convert.py"],
    "api.py": ["test_end_to_end.py", "test_xla_stages.py"],
    "bench.py": ["test_usage_errors.py", "test_python_passes.py"],
    "isolate.py": ["test_bad_inputs.py"],
    "native_io.py": ["test_inputs.py", "test_errors.py"],
}

_SWAP_CMP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
             ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_SWAP_BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.Div: ast.Mult,
             ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv}


class Mutator(ast.NodeTransformer):
    """Visits mutation sites in a fixed order; mutates the ``target``-th one (or none: -1).

    ``sites`` collects (lineno, description) for every site seen, so the same
    class both lists sites and applies one.
    """

    def __init__(self, target: int = -1) -> None:
        self.target = target
        self.sites: list[tuple[int, str]] = []
        self.applied: str | None = None

    def _site(self, node: ast.AST, what: str) -> bool:
        index = len(self.sites)
        self.sites.append((getattr(node, "lineno", 0), what))
        if index == self.target:
            self.applied = what
            return True
        return False

    # Docstrings, annotations and type-checking blocks hold no behaviour.
    def _body(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = [body[0]] + [self.visit(n) for n in body[1:]]
        else:
            node.body = [self.visit(n) for n in body]
        return node

    def visit_Module(self, node):
        return self._body(node)

    def visit_FunctionDef(self, node):
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        return self._body(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        return self._body(node)

    def visit_arg(self, node):
        return node

    def visit_AnnAssign(self, node):
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_If(self, node):
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return node
        self.generic_visit(node)
        if self._site(node, "negate if condition"):
            node.test = ast.UnaryOp(ast.Not(), node.test)
        return node

    def visit_While(self, node):
        self.generic_visit(node)
        if self._site(node, "negate while condition"):
            node.test = ast.UnaryOp(ast.Not(), node.test)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        for i, op in enumerate(node.ops):
            new = _SWAP_CMP.get(type(op))
            if new and self._site(node, f"{type(op).__name__} -> {new.__name__}"):
                node.ops[i] = new()
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._site(node, f"{type(node.op).__name__} -> {new.__name__}"):
            node.op = new()
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return node  # "%" formatting, string concatenation
        new = _SWAP_BIN.get(type(node.op))
        if new and self._site(node, f"{type(node.op).__name__} -> {new.__name__}"):
            node.op = new()
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        new = _SWAP_BIN.get(type(node.op))
        if new and self._site(node, f"{type(node.op).__name__}= -> {new.__name__}="):
            node.op = new()
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and self._site(node, "drop 'not'"):
            return node.operand
        return node

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            if self._site(node, f"{v} -> {not v}"):
                return ast.copy_location(ast.Constant(not v), node)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            if self._site(node, f"{v!r} -> {v + 1!r}"):
                return ast.copy_location(ast.Constant(v + 1), node)
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            if self._site(node, "return None"):
                node.value = None
        return node


def sites_of(path: Path) -> list[tuple[int, str]]:
    m = Mutator()
    m.visit(ast.parse(path.read_text()))
    return m.sites


def mutant_source(path: Path, index: int) -> tuple[str, str]:
    m = Mutator(index)
    tree = m.visit(ast.parse(path.read_text()))
    ast.fix_missing_locations(tree)
    assert m.applied is not None, (path, index)
    return ast.unparse(tree) + "\n", m.applied


def sample(n: int, seed: int, modules: list[str], base: Path = REPO) -> list[tuple[str, int, int, str]]:
    """(module, site index, line, description), round-robin over the modules, fixed seed."""
    rng = random.Random(seed)
    pools = {}
    for mod in modules:
        sites = list(enumerate(sites_of(base / PKG / mod)))
        rng.shuffle(sites)
        pools[mod] = sites
    order = list(modules)
    rng.shuffle(order)
    out = []
    while len(out) < n and any(pools.values()):
        for mod in order:
            if pools[mod] and len(out) < n:
                i, (line, what) = pools[mod].pop()
                out.append((mod, i, line, what))
    return out


def make_copy(dest: Path) -> Path:
    """The package, tests, data, pipelines and specs: what the tests read, nothing else."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in (PKG, "tests", "pipelines", "gpu_specs", "scripts"):
        if (REPO / name).exists():
            shutil.copytree(REPO / name, dest / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, dest / name)
    return dest


def _env(copy: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_tests(copy: Path, tests: list[str], timeout: float, deselect: list[str] = (),
              stop_first: bool = True) -> tuple[str, str]:
    """('passed' | 'failed' | 'timeout' | 'error', pytest's output tail)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", "--no-header",
           *(["-x"] if stop_first else []), *[f"tests/{t}" for t in tests]]
    for d in deselect:
        cmd += ["--deselect", d]
    proc = subprocess.Popen(cmd, cwd=copy, env=_env(copy), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out = None
    finally:
        # The test run's own group: whatever a mutant (or a failing test) left running goes too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
    if out is None:
        return "timeout", ""
    status = {0: "passed", 1: "failed", 5: "no-tests"}.get(proc.returncode, "error")
    return status, out


def baseline_failures(copy: Path, tests: list[str], timeout: float) -> list[str] | None:
    """Test ids failing on the unmutated copy; None when the files do not even run (collection errors)."""
    status, out = run_tests(copy, tests, timeout, stop_first=False)
    if status not in ("passed", "failed"):
        return None
    return sorted(set(re.findall(r"^FAILED (\S+)", out, re.M)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=60, help="mutants to sample (default 60)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", "-j", type=int, default=1, help="mutants tested at once (one copy each)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per mutant's test run; past it: killed")
    ap.add_argument("--modules", help="comma list of module files (default: every one in MODULE_TESTS)")
    ap.add_argument("--list", action="store_true", help="print the sites per module and the sample; run nothing")
    args = ap.parse_args()

    modules = args.modules.split(",") if args.modules else [m for m in MODULE_TESTS if (REPO / PKG / m).exists()]
    unknown = [m for m in modules if m not in MODULE_TESTS]
    if unknown:
        ap.error(f"no tests mapped for {unknown}; add them to MODULE_TESTS")
    if args.list:
        chosen = sample(args.n, args.seed, modules)
        for mod in modules:
            print(f"{mod}: {len(sites_of(REPO / PKG / mod))} sites")
        for mod, i, line, what in chosen:
            print(f"  {mod}:{line} #{i} {what}")
        return 0

    root = Path(tempfile.mkdtemp(prefix="mlirhlo-mutation-"))
    skipped: list = []
    try:
        copies = [make_copy(root / f"copy{j}") for j in range(max(1, args.jobs))]
        # Sites are counted on the copy: the working tree may change while this runs.
        chosen = sample(args.n, args.seed, modules, copies[0])
        check = subprocess.run([sys.executable, "-c", f"import {PKG}; print({PKG}.__file__)"], cwd=copies[0],
                               env=_env(copies[0]), capture_output=True, text=True)
        if not check.stdout.strip().startswith(str(copies[0])):
            raise SystemExit(f"the copy does not shadow the installed package: {check.stdout}{check.stderr}")
        # Tests that fail without any mutant are left out of every mutant's run.
        deselect: dict[tuple[str, ...], list[str]] = {}
        for key in sorted({tuple(MODULE_TESTS[m]) for m, *_ in chosen}):
            started = time.monotonic()
            deselect[key] = baseline_failures(copies[0], list(key), args.timeout * 3)
            if deselect[key] is None:
                print(f"baseline {' '.join(key)}: does not run; its modules' mutants are skipped", flush=True)
                continue
            print(f"baseline {' '.join(key)}: {len(deselect[key])} failing, {time.monotonic() - started:.0f} s"
                  + (f" ({', '.join(deselect[key])})" if deselect[key] else ""), flush=True)
        skipped = [c for c in chosen if deselect[tuple(MODULE_TESTS[c[0]])] is None]
        chosen = [c for c in chosen if c not in skipped]

        results = []
        pending = list(enumerate(chosen))
        import concurrent.futures as cf

        def one(job: int, k: int, mutant) -> tuple:
            mod, i, line, what = mutant
            target = copies[job] / PKG / mod
            original = target.read_text()
            source, applied = mutant_source(target, i)
            target.write_text(source)
            started = time.monotonic()
            try:
                status, out = run_tests(copies[job], MODULE_TESTS[mod], args.timeout,
                                        deselect[tuple(MODULE_TESTS[mod])])
            finally:
                target.write_text(original)
            return k, mutant, status, time.monotonic() - started

        free = list(range(len(copies)))
        with cf.ThreadPoolExecutor(len(copies)) as pool:
            futures = {}
            while pending or futures:
                while pending and free:
                    job = free.pop()
                    k, mutant = pending.pop(0)
                    futures[pool.submit(one, job, k, mutant)] = job
                done, _ = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
                for f in done:
                    free.append(futures.pop(f))
                    k, (mod, i, line, what), status, secs = f.result()
                    if status == "no-tests":
                        print(f"no tests ran for {mod}:{line} {what}; left out", flush=True)
                        continue
                    killed = status in ("failed", "timeout", "error")
                    results.append((mod, line, what, status, killed))
                    print(f"[{len(results)}/{len(chosen)}] {'killed  ' if killed else 'SURVIVED'} {mod}:{line} "
                          f"{what} ({status}, {secs:.0f} s)", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    killed = sum(r[4] for r in results)
    print(f"\nkill rate: {killed}/{len(results)} = {100 * killed / max(len(results), 1):.1f}%")
    by_status: dict[str, int] = {}
    for r in results:
        by_status[r[3]] = by_status.get(r[3], 0) + 1
    print("by outcome: " + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())))
    if skipped:
        print(f"skipped (their tests do not run unmutated): {len(skipped)}: "
              + ", ".join(f"{m}:{ln}" for m, _, ln, _ in skipped))
    survivors = [r for r in results if not r[4]]
    if survivors:
        print("survivors:")
        for mod, line, what, _, _ in sorted(survivors):
            print(f"  {PKG}/{mod}:{line}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
