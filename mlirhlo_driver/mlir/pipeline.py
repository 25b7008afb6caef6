"""Pass pipelines from textual specs, run with jaxlib's PassManager.

Three ways to say a pipeline, all ending as one MLIR textual pipeline:

- MLIR's own syntax: ``builtin.module(func.func(canonicalize),cse)``;
- an hlo-opt style list ``a,b,c``: each pass is nested at its anchor
  (:func:`from_pass_list`);
- a named pipeline: ``@NAME`` for ``mlirhlo_driver/pipelines/NAME.pipeline``, or a file path.

Specs are parsed here before MLIR sees them: errors then point at the column of
the spec, unknown passes get close-match hints, and a module pass nested under
``func.func`` is rejected (MLIR aborts the whole process on that).

A name is a native pass or a Python pass of the ``PassSet`` given to :func:`resolve`
(``python_passes``; the built-in and installed ones by default). The resolved root keeps
that set, and :func:`run` runs its passes: no pipeline sees another's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import resources
from ..errors import PassFailure, PipelineError, did_you_mean, param
from ..timing import ms
from .passes import ANY, FUNC, MODULE, PassInfo

if TYPE_CHECKING:
    from .python_passes import PassSet

PIPELINE_SUFFIX = ".pipeline"


# ---------------------------------------------------------------- the syntax

@dataclass
class PassRef:
    name: str
    options: str | None  # the text between braces, as written
    col: int             # 1-based column of the name in the spec

    def render(self) -> str:
        return self.name if self.options is None else f"{self.name}{{{self.options}}}"


@dataclass
class Nest:
    op: str
    items: list[PassRef | Nest]
    col: int
    # A resolved pipeline's root: the Python passes its names resolve to (resolve() sets it; it
    # travels with the root, to a batch's workers too). None: PassSet.default().
    python_passes: PassSet | None = field(default=None, repr=False, compare=False)

    def render(self) -> str:
        return f"{self.op}({','.join(i.render() for i in self.items)})"

    def passes(self) -> list[PassRef]:
        out: list[PassRef] = []
        for item in self.items:
            out.extend(item.passes() if isinstance(item, Nest) else [item])
        return out


# Where a spec came from, in errors: the command line's flag, or the API's parameter.
_PIPELINE, _PASSES = param("pipeline"), param("passes")

_NAME = re.compile(r"[A-Za-z_][\w.\-]*")
MAX_PIPELINE_DEPTH = 64  # op nesting in real pipelines is a few levels


class _Parser:
    def __init__(self, text: str, source: str, line: int, col_base: int) -> None:
        self.text, self.source, self.line, self.col_base = text, source, line, col_base
        self.pos = 0
        self.depth = 0

    def error(self, message: str, pos: int | None = None, hint: str | None = None) -> PipelineError:
        at = self.pos if pos is None else pos
        return PipelineError(message, file=self.source, line=self.line, col=self.col_base + at + 1,
                             hint=hint)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def parse(self) -> Nest:
        self.skip_ws()
        start = self.pos
        items = self.parse_list(top=True)
        self.skip_ws()
        if self.pos != len(self.text):
            raise self.error(f"unexpected '{self.text[self.pos]}'")
        if len(items) == 1 and isinstance(items[0], Nest) and items[0].op == MODULE:
            return items[0]
        if any(isinstance(i, Nest) and i.op == MODULE for i in items):
            raise self.error("'builtin.module(...)' must be the whole pipeline", start)
        return Nest(MODULE, items, self.col_base + start + 1)

    def parse_list(self, top: bool = False) -> list[PassRef | Nest]:
        items: list[PassRef | Nest] = []
        self.skip_ws()
        if self.pos < len(self.text) and self.text[self.pos] == ")" and not top:
            return items
        while True:
            self.skip_ws()
            items.append(self.parse_element())
            self.skip_ws()
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                self.pos += 1
                continue
            return items

    def parse_element(self) -> PassRef | Nest:
        m = _NAME.match(self.text, self.pos)
        if not m:
            what = f"'{self.text[self.pos]}'" if self.pos < len(self.text) else "end of pipeline"
            raise self.error(f"expected a pass name or an op name, found {what}")
        name, start = m.group(0), self.pos
        self.pos = m.end()
        self.skip_ws()
        if self.pos < len(self.text) and self.text[self.pos] == "(":
            self.depth += 1
            if self.depth > MAX_PIPELINE_DEPTH:  # the parser recurses per level
                raise self.error(f"pipeline nested more than {MAX_PIPELINE_DEPTH} levels deep", start)
            self.pos += 1
            items = self.parse_list()
            self.depth -= 1
            self.skip_ws()
            if self.pos >= len(self.text) or self.text[self.pos] != ")":
                raise self.error(f"unbalanced parentheses: expected ')' to close '{name}(' "
                                 f"from column {self.col_base + start + 1}")
            self.pos += 1
            return Nest(name, items, self.col_base + start + 1)
        options = None
        if self.pos < len(self.text) and self.text[self.pos] == "{":
            depth, i = 0, self.pos
            while i < len(self.text):
                if self.text[i] == "{":
                    depth += 1
                elif self.text[i] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            else:
                raise self.error(f"unbalanced braces in the options of '{name}'", self.pos)
            options = self.text[self.pos + 1:i]
            self.pos = i + 1
        return PassRef(name, options, self.col_base + start + 1)


def parse_spec(text: str, *, source: str = _PIPELINE, line: int = 1, col_base: int = 0) -> Nest:
    """Parse a textual pipeline (MLIR syntax, or a bare comma list at module level)."""
    if not text.strip():
        raise PipelineError("empty pipeline", file=source, line=line, col=col_base + 1)
    return _Parser(text, source, line, col_base).parse()


# A name nothing close to: perhaps a Python pass the pipeline was not given (they are handed
# to it, never registered process-wide).
# Writing and giving one takes more than a line: the hint names the docs page that shows it.
UNKNOWN_PASS_HINT = ("'mlirhlo passes' lists them; a Python pass of your own is given with "
                     "--load-pass-plugin FILE.py, or python_passes= in Python: docs/pipelines.md")


def validate(root: Nest, catalog: dict[str, PassInfo], *, source: str = _PIPELINE,
             line: int = 1) -> None:
    """Unknown passes and misplaced anchors, reported at their column."""

    def walk(nest: Nest) -> None:
        for item in nest.items:
            if isinstance(item, Nest):
                walk(item)
                continue
            info = catalog.get(item.name)
            if info is None:
                raise PipelineError(f"unknown pass '{item.name}'", file=source, line=line,
                                    col=item.col, hint=did_you_mean(item.name, catalog) or UNKNOWN_PASS_HINT)
            # Python passes join the module-level PassManager (see build_pass_manager).
            if info.origin == "python" and not (nest is root or (nest.op == FUNC and any(n is nest for n in root.items))):
                raise _misplaced_python_pass(item, nest.op, source, line)
            if info.anchor == ANY or info.anchor == nest.op or nest.op == ANY:
                continue
            nested = f"{MODULE}({info.anchor}({item.name}))" if info.anchor != MODULE else \
                f"{MODULE}({item.name})"
            raise PipelineError(
                f"pass '{item.name}' runs on '{info.anchor}' ops but is nested under '{nest.op}'",
                file=source, line=line, col=item.col, hint=f"write it as {nested}, or use --passes")

    walk(root)


def _misplaced_python_pass(ref: PassRef, op: str, source: str, line: int) -> PipelineError:
    return PipelineError(f"Python pass '{ref.name}' can run at module level or directly under func.func, "
                         f"not under '{op}'", file=source, line=line, col=ref.col)


def from_pass_list(names: str, catalog: dict[str, PassInfo]) -> Nest:
    """An hlo-opt style ``a,b{opt=1},c`` list, each pass nested at its anchor.

    Consecutive function passes share one ``func.func(...)``; an op-agnostic pass
    joins the function group it follows, otherwise it runs on the module.
    """
    flat = _Parser(names, _PASSES, 1, 0).parse_list(top=True)
    root = Nest(MODULE, [], 1)
    for item in flat:
        if isinstance(item, Nest):
            raise PipelineError(f"{_PASSES} takes a plain comma list; use {_PIPELINE} for nesting",
                                file=_PASSES, line=1, col=item.col)
        info = catalog.get(item.name)
        if info is None:
            raise PipelineError(f"unknown pass '{item.name}'", file=_PASSES, line=1, col=item.col,
                                hint=did_you_mean(item.name, catalog) or UNKNOWN_PASS_HINT)
        last = root.items[-1] if root.items else None
        if info.anchor in (MODULE,) or (info.anchor == ANY and not isinstance(last, Nest)):
            root.items.append(item)
        elif isinstance(last, Nest) and (last.op == info.anchor or info.anchor == ANY):
            last.items.append(item)
        else:
            root.items.append(Nest(info.anchor, [item], item.col))
    return root


# ------------------------------------------------------------ named pipelines

@dataclass(frozen=True)
class NamedPipeline:
    name: str
    path: Path
    spec: str
    summary: str  # first line of the header comment


def pipeline_dir() -> Path:
    return resources.data_dir("pipelines")


def named_pipelines() -> list[NamedPipeline]:
    out = []
    for path in sorted(pipeline_dir().glob(f"*{PIPELINE_SUFFIX}")):
        out.append(read_pipeline_file(path))
    return out


def read_pipeline_file(path: Path | str) -> NamedPipeline:
    """A pipeline file: ``#`` header comment lines, then the spec (may span lines)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PipelineError("no such pipeline file", file=str(path)) from None
    except OSError as e:
        raise PipelineError(e.strerror or str(e), file=str(path)) from None
    except UnicodeDecodeError:
        raise PipelineError("not a text file; a pipeline file holds a textual pipeline",
                            file=str(path)) from None
    comments, body = [], []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if not body:
                comments.append(stripped.lstrip("#").strip())
        elif stripped:
            body.append(stripped)
    if not body:
        raise PipelineError("pipeline file holds no pipeline", file=str(path))
    summary = next((c for c in comments if c), "")
    return NamedPipeline(path.name[: -len(PIPELINE_SUFFIX)] if path.name.endswith(PIPELINE_SUFFIX)
                         else path.stem, path, "".join(body), summary)


def resolve_named(name: str) -> NamedPipeline:
    path = pipeline_dir() / f"{name}{PIPELINE_SUFFIX}"
    if not path.exists():
        names = [p.name for p in named_pipelines()]
        raise PipelineError(f"unknown named pipeline '@{name}'", file=_PIPELINE,
                            hint=did_you_mean(name, names) or "see 'mlirhlo passes'")
    return read_pipeline_file(path)


def resolve(spec: str | None = None, *, passes: str | None = None,
            pipeline_file: str | None = None, catalog: dict[str, PassInfo] | None = None,
            python_passes: PassSet | None = None) -> Nest | None:
    """The validated pipeline for ``--pipeline``, ``--passes`` or ``--pipeline-file``.

    ``python_passes``: the Python passes it may name (None: ``PassSet.default()``, the
    built-in and installed ones); the root keeps them, and :func:`run` runs those."""
    given = [x for x in (spec, passes, pipeline_file) if x is not None]
    if len(given) > 1:
        raise PipelineError(f"give only one of {param('pipeline')}, {param('passes')} and {param('pipeline_file')}")
    if not given:
        return None
    if catalog is None:
        from .passes import all_passes
        from .python_passes import PassSet

        python_passes = python_passes if python_passes is not None else PassSet.default()
        catalog = all_passes(python_passes)
    if passes is not None:
        root = from_pass_list(passes, catalog)
        check_options(root, catalog, source=_PASSES)
        root.python_passes = python_passes
        return root
    source = _PIPELINE
    if pipeline_file is not None or (spec is not None and spec.startswith("@")):
        named = read_pipeline_file(pipeline_file) if pipeline_file else resolve_named(spec[1:])
        spec, source = named.spec, str(named.path)
    assert spec is not None
    root = parse_spec(spec, source=source)
    validate(root, catalog, source=source)
    check_options(root, catalog, source=source)
    root.python_passes = python_passes
    return root


def check_print_ir_passes(names: tuple[str, ...] | list[str], root: Nest | None, flag: str,
                          python_passes: PassSet | None = None) -> None:
    """``--print-ir-before/after NAME``: NAME must be a pass of the pipeline (or 'all').
    ``python_passes``: the Python passes there are (default: the root's, or
    ``PassSet.default()``).

    MLIR would silently print nothing for a misspelled name.
    """
    from .passes import all_passes

    if python_passes is None and root is not None:
        python_passes = root.python_passes

    wanted = [n for n in names if n != "all"]
    if not wanted:
        return
    in_pipeline = [p.name for p in root.passes()] if root is not None else []
    catalog = None
    for name in wanted:
        if name in in_pipeline:
            continue
        catalog = catalog if catalog is not None else all_passes(python_passes)
        if name not in catalog:
            raise PipelineError(f"unknown pass '{name}'", file=flag,
                                hint=did_you_mean(name, list(in_pipeline) + list(catalog)))
        if root is None:
            raise PipelineError(f"no pipeline runs, so no IR is printed around '{name}'", file=flag,
                                hint="give --pipeline or --passes")
        if any(p.endswith(("-pipeline", "fixed-point-pass")) for p in in_pipeline):
            continue  # a composite pass runs passes the spec does not name
        raise PipelineError(f"pass '{name}' is not in the pipeline", file=flag,
                            hint=did_you_mean(name, in_pipeline)
                            or "the pipeline runs: " + ", ".join(dict.fromkeys(in_pipeline)))


def check_options(root: Nest, catalog: dict[str, PassInfo], *, source: str = _PIPELINE,
                  line: int = 1) -> None:
    """Pass options (``name{key=value}``) that MLIR rejects, reported at their column.

    Each native pass with options is parsed alone at its anchor; MLIR says what
    is wrong partly in its exception and partly on fd 2.
    """
    refs = [r for r in root.passes() if r.options is not None and r.name in catalog]
    for ref in refs:
        if catalog[ref.name].origin == "python":
            raise PipelineError(f"Python pass '{ref.name}' takes no options", file=source, line=line,
                                col=ref.col + len(ref.name))
    if not refs:
        return  # no jaxlib needed
    from .._native import jaxlib as _jaxlib
    from .._native.fds import capture_fd2

    ctx = _jaxlib.ir_context()  # before any jaxlib.mlir import: jax's own import is quiet then
    from jaxlib.mlir import passmanager

    for ref in refs:
        anchor = catalog[ref.name].anchor
        spec = f"{MODULE}({ref.render()})" if anchor in (ANY, MODULE) else f"{MODULE}({anchor}({ref.render()}))"
        with ctx, capture_fd2() as captured:
            try:
                passmanager.PassManager.parse(spec)
                error = None
            except ValueError as e:
                error = str(e)
        if error is None:
            continue
        # LLVM prefixes its option errors with the program's name ("xla: for the ...").
        lines = [re.sub(r"^[\w.-]*:\s*(?=for the -)", "",
                        ln.strip().removeprefix("<Pass-Options-Parser>:").strip(" :"))
                 for ln in (error + "\n" + captured.text).splitlines()]
        detail = next((ln for ln in lines if ln and not ln.startswith("failed to add")),
                      "options not accepted")
        raise PipelineError(f"bad options for pass '{ref.name}': {detail}", file=source, line=line,
                            col=ref.col + len(ref.name), hint="'mlirhlo passes' lists the passes")


# ------------------------------------------------------------------- running

@dataclass
class Instrumentation:
    """MLIR's debugging flags, with their mlir-opt meaning."""

    print_ir_after_all: bool = False
    print_ir_after_change: bool = False
    print_ir_before: tuple[str, ...] = ()   # pass names; "all" for every pass
    print_ir_after: tuple[str, ...] = ()
    print_ir_after_failure: bool = False
    print_ir_module_scope: bool = False
    timing: bool = False
    verify_each: bool = True

    def prints_ir(self) -> bool:
        return bool(self.print_ir_after_all or self.print_ir_after_change or self.print_ir_before
                    or self.print_ir_after or self.print_ir_after_failure)

    def observes(self) -> bool:
        """Whether it shows something of the run itself (IR, times): a result from the
        stage cache would show nothing."""
        return self.prints_ir() or self.timing


@dataclass
class IRDump:
    when: str        # "before", "after", "after-failure"
    pass_class: str  # e.g. CanonicalizerPass
    pass_name: str   # e.g. canonicalize (the pipeline name)
    scope: str       # e.g. "'func.func' operation: @main" when not module scope
    text: str

    def header(self) -> str:
        what = {"before": "Before", "after": "After", "after-failure": "After"}[self.when]
        failed = " Failed" if self.when == "after-failure" else ""
        return f"// -----// IR Dump {what} {self.pass_class}{failed} ({self.pass_name}) //----- //"


@dataclass
class TimingRow:
    name: str
    depth: int
    wall_s: float
    percent: float


@dataclass
class PipelineRun:
    spec: str
    dumps: list[IRDump] = field(default_factory=list)
    timing: list[TimingRow] = field(default_factory=list)
    total_s: float = 0.0
    other_output: str = ""  # anything else native code printed (e.g. print-ir pass)


# Patterns for IR printing and timing output, compiled when first used (re's cache): a run
# that prints neither does not pay for them.
_DUMP_HEADER = (r"(?m)^// -----// IR Dump (Before|After) (\S+?)( Failed)?(?:: (.*?)| \((.*?)\))?"
                r"(?: \(('[^']*' operation[^)]*)\))? //----- //$")
# Rows hold one or two time columns (user, wall; wall is always last), then the name.
_TIMING_ROW = r"^((?:\s+[\d.]+ \(\s*[\d.]+%\))+)(\s+)(\S.*)$"
_TIME_COL = r"([\d.]+) \(\s*([\d.]+)%\)"


def run(module: Any, root: Nest, *, instrumentation: Instrumentation | None = None,
        module_name: str = "module", reproducer_dir: str | None = None,
        source_for_reproducer: str | None = None, remake: Callable[[], Any] | None = None,
        line_offset: int = 0) -> PipelineRun:
    """Run ``root`` on ``module`` in place; raise PassFailure with a reproducer on failure.

    The reproducer holds the module as it was before the run: ``remake()`` makes it again
    (a file's module: loaded anew), only on a failure; without it a snapshot is taken
    first, which cost 78 ms and 6 MB on a 57k-instruction module that then ran fine.
    ``line_offset``: where the module's text starts in ``source_for_reproducer`` (a chunk of a
    split file), so that a failure's positions are the file's.
    """
    import gc
    import time

    from .._native import jaxlib as _jaxlib
    from .._native.fds import capture_fd2

    inst = instrumentation or Instrumentation()
    spec = root.render()
    ctx = _jaxlib.ir_context()
    original = _snapshot(module) if remake is None else None  # before the pipeline touches it
    result = PipelineRun(spec)
    failure: Exception | None = None
    with ctx:
        # Printed IR must come out in pass order: no parallel function pipelines.
        ctx.enable_multithreading(not inst.prints_ir())
        try:
            with capture_fd2() as captured:
                pm = build_pass_manager(root)
                pm.enable_verifier(inst.verify_each)
                if inst.prints_ir():
                    # In MLIR, after-change and after-failure only qualify after-printing.
                    some_after = bool(inst.print_ir_after_all or inst.print_ir_after
                                      or inst.print_ir_after_change)
                    pm.enable_ir_printing(
                        print_before_all=bool(inst.print_ir_before),
                        print_after_all=some_after or inst.print_ir_after_failure,
                        print_module_scope=inst.print_ir_module_scope,
                        print_after_change=inst.print_ir_after_change,
                        print_after_failure=inst.print_ir_after_failure and not some_after,
                        enable_debug_info=False,
                    )
                if inst.timing:
                    pm.enable_timing()
                t0 = time.perf_counter()
                try:
                    pm.run(module.operation)
                except Exception as e:  # MLIRError with diagnostics
                    failure = e
                result.total_s = time.perf_counter() - t0
                del pm
                if inst.timing:  # printed when the PassManager dies; a full collection costs ~50 ms
                    gc.collect()
        finally:
            ctx.enable_multithreading(True)
    _parse_native_output(captured.text, inst, result)
    if failure is not None:
        before = _snapshot_text(original) if original is not None else _module_asm(remake())
        raise _pass_failure(failure, root, before, module_name, reproducer_dir, source_for_reproducer, result,
                            line_offset)
    return result


def build_pass_manager(root: Nest, python_passes: PassSet | None = None) -> Any:
    """A PassManager for ``root``; Python passes join the native ones in it.

    A name is a Python pass of ``python_passes`` (default: the root's, as :func:`resolve`
    left them; else ``PassSet.default()``), or a native pass. With no Python pass this is
    ``PassManager.parse`` of the spec. Otherwise the spec is added piece by piece: the
    bindings cannot nest a pass manager, so a Python pass inside ``func.func(...)`` splits
    that group and runs at module level over each function (function passes are
    independent per function, so the result is the same).
    """
    import dataclasses

    from jaxlib.mlir import passmanager

    from .python_passes import runner

    python = _python_passes_of(root, python_passes)
    names = {p.name for p in root.passes()}
    py = {n: python.get(n) for n in names}
    py = {n: p for n, p in py.items() if p is not None}
    if not py:
        return passmanager.PassManager.parse(root.render())
    pm = passmanager.PassManager("builtin.module")

    def add_python(p: Any, per_function: bool) -> None:
        run = runner(p if not per_function or p.anchor == "func.func" else dataclasses.replace(p, anchor="func.func"))
        pm.add(run, name=p.name, argument=p.name, description=p.description)

    for item in root.items:
        if isinstance(item, PassRef):
            if item.name in py:
                add_python(py[item.name], per_function=False)
            else:
                pm.add(item.render())
            continue
        pending: list[str] = []
        for sub in item.items:
            if isinstance(sub, PassRef) and sub.name in py:
                if item.op != FUNC:  # validate() refuses it first; a root built by hand reaches here
                    raise _misplaced_python_pass(sub, item.op, _PIPELINE, 1)
                if pending:
                    pm.add(f"{item.op}({','.join(pending)})")
                    pending = []
                add_python(py[sub.name], per_function=True)
            else:
                pending.append(sub.render())
        if pending or not item.items:
            pm.add(f"{item.op}({','.join(pending)})")
    return pm


def _python_passes_of(root: Nest, python_passes: PassSet | None = None) -> PassSet:
    if python_passes is not None:
        return python_passes
    if root.python_passes is not None:
        return root.python_passes
    from .python_passes import PassSet

    return PassSet.default()


def _module_asm(module: Any) -> str:
    return module.operation.get_asm(enable_debug_info=True)


def _snapshot(module: Any) -> bytes | str:
    """The module before the pipeline, kept cheaply: MLIR bytecode (locations
    included) is written ~10x faster than the text, which only a failure needs."""
    import io

    buf = io.BytesIO()
    try:
        module.operation.write_bytecode(buf)
    except Exception:  # a module the bytecode writer refuses: its text, up front
        return _module_asm(module)
    return buf.getvalue()


def _snapshot_text(snapshot: bytes | str) -> str:
    """The snapshot as text with locations, as the reproducer holds it."""
    if isinstance(snapshot, str):
        return snapshot
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib

    with _jaxlib.ir_context():
        return _module_asm(ir.Module.parse(snapshot))


def _parse_native_output(text: str, inst: Instrumentation, result: PipelineRun) -> None:
    timing_at = text.find("===---")
    report = ""
    if inst.timing and timing_at >= 0:
        text, report = text[:timing_at], text[timing_at:]
    headers = list(re.finditer(_DUMP_HEADER, text))
    result.other_output = text[: headers[0].start()] if headers else text
    for i, m in enumerate(headers):
        body_end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[m.end():body_end].strip("\n") + "\n"
        when = "before" if m.group(1) == "Before" else ("after-failure" if m.group(3) else "after")
        name_and_opts = m.group(4) or m.group(5) or ""
        pass_name = re.split(r"[{ ]", name_and_opts, maxsplit=1)[0]
        dump = IRDump(when, m.group(2), pass_name, m.group(6) or "", body)
        if _wanted(dump, inst):
            result.dumps.append(dump)
    for line in report.splitlines():
        m = re.match(_TIMING_ROW, line)
        if m:
            wall, percent = re.findall(_TIME_COL, m.group(1))[-1]
            depth = (len(m.group(2)) - 2) // 2
            result.timing.append(TimingRow(m.group(3).strip(), depth, float(wall), float(percent)))


def _wanted(dump: IRDump, inst: Instrumentation) -> bool:
    if dump.when == "after-failure":
        return True  # printed only when some after-printing was asked for
    if dump.when == "before":
        return "all" in inst.print_ir_before or dump.pass_name in inst.print_ir_before
    if inst.print_ir_after_all or inst.print_ir_after_change:
        return True
    return "all" in inst.print_ir_after or dump.pass_name in inst.print_ir_after


def _pass_failure(exc: Exception, root: Nest, original: str, module_name: str,
                  reproducer_dir: str | None, source: str | None, result: PipelineRun,
                  line_offset: int = 0) -> PassFailure:
    failing = _find_failing_pass(root, original)

    def at(location: Any) -> tuple[int | None, int | None]:
        text = str(location)
        line, col = _loc(text)
        # A chunk parsed from a file names the file at the file's lines (inputs.loader): only
        # a location MLIR itself named "-" counts from the chunk's start.
        chunk_relative = '"-":' in text or source is None or f'"{source}":' not in text
        return (line + line_offset, col) if line is not None and chunk_relative else (line, col)

    diags = getattr(exc, "error_diagnostics", None) or []
    if not diags and not type(exc).__name__.startswith("MLIR"):
        return _python_pass_failure(exc, failing, root, original, module_name, reproducer_dir, source, result)
    lines: list[str] = []
    first_loc: tuple[int | None, int | None] = (None, None)
    for i, d in enumerate(diags):
        loc = at(d.location)
        if i == 0:
            first_loc = loc  # reported on the first line already
        else:
            lines.append(_format_diag("error", loc, d.message, source))
        for n in getattr(d, "notes", []):
            lines.append(_format_diag("note", at(n.location), n.message, source))
    if not diags:
        lines = [str(exc).strip()]
    repro = write_reproducer(original, root.render(), module_name, reproducer_dir, _python_passes_of(root))
    what = f"pass '{failing}' failed" if failing else "pass pipeline failed"
    first = diags[0].message.strip().splitlines()[0] if diags else str(exc).strip().splitlines()[-1].strip()
    err = PassFailure(f"{what}: {first}", pass_name=failing, diagnostics="\n".join(lines),
                      reproducer=repro, file=source, line=first_loc[0], col=first_loc[1])
    err.run = result  # dumps printed before the failure still matter
    return err


def _python_pass_failure(exc: Exception, failing: str | None, root: Nest, original: str, module_name: str,
                         reproducer_dir: str | None, source: str | None, result: PipelineRun) -> PassFailure:
    """A Python pass raised: its name, the exception, where in the pass it was raised."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.endswith(
        ("mlir/pipeline.py", "mlir/python_passes.py"))]
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    repro = write_reproducer(original, root.render(), module_name, reproducer_dir, _python_passes_of(root))
    err = PassFailure(f"Python pass '{failing or '?'}' failed on module '{module_name}': "
                      f"{type(exc).__name__}: {exc}{where}", pass_name=failing, reproducer=repro, file=source)
    err.run = result
    return err


def _loc(text: str) -> tuple[int | None, int | None]:
    m = re.search(r':(\d+):(\d+)\)', text)
    if not m or m.group(1) == "0":
        return (None, None)
    return int(m.group(1)), int(m.group(2))


def _format_diag(kind: str, loc: tuple[int | None, int | None], message: str, source: str | None) -> str:
    # "see current operation" notes carry the whole op in generic form; its
    # first line says which op, and the reproducer has the rest.
    body = message.strip().splitlines() or [""]  # stripped: its first line is blank only when it is empty
    text = body[0].strip()
    if len(body) > 1:
        more = len(body) - 1
        text += f" ... ({more} more line{'s' if more > 1 else ''})"
    where = ":".join(str(x) for x in (source, *loc) if x is not None)
    return f"{kind}: {where}: {text}" if where else f"{kind}: {text}"


def _find_failing_pass(root: Nest, original: str) -> str | None:
    """Re-run growing prefixes of the pipeline on the original module to name the culprit."""
    from jaxlib.mlir import ir

    from .._native import jaxlib as _jaxlib
    from .._native.fds import capture_fd2

    flat: list[tuple[list[str], PassRef]] = []

    def walk(nest: Nest, path: list[str]) -> None:
        for item in nest.items:
            if isinstance(item, Nest):
                walk(item, path + [item.op])
            else:
                flat.append((path, item))

    walk(root, [])
    python = _python_passes_of(root)
    ctx = _jaxlib.ir_context()
    with ctx, capture_fd2():
        for n in range(1, len(flat) + 1):
            try:
                module = ir.Module.parse(original)
                build_pass_manager(parse_spec(_prefix_spec(flat[:n])), python).run(module.operation)
            except Exception:
                return flat[n - 1][1].name
    return None


def _prefix_spec(items: list[tuple[list[str], PassRef]]) -> str:
    # Sequential nesting: each pass is wrapped in its own path; order is kept.
    parts = []
    for path, ref in items:
        text = ref.render()
        for op in reversed(path):
            text = f"{op}({text})"
        parts.append(text)
    return f"{MODULE}({','.join(parts)})"


def write_reproducer(module_asm: str, spec: str, module_name: str, directory: str | None,
                     python_passes: PassSet | None = None) -> str:
    """The input module plus the pipeline, runnable as one ``mlirhlo opt`` command (with the
    plugin files of the Python passes of ``python_passes`` it names)."""
    import shlex
    import tempfile

    directory = directory or tempfile.gettempdir()
    check_reproducer_dir(directory)
    fd, path = tempfile.mkstemp(prefix=f"mlirhlo-reproducer-{_safe(module_name)}-",
                                suffix=".mlir", dir=directory)
    command = f"mlirhlo opt {shlex.quote(path)} --pipeline {shlex.quote(spec)}"
    for plugin in _plugins_for(spec, python_passes):
        command += f" --load-pass-plugin {shlex.quote(plugin)}"
    with os.fdopen(fd, "w") as f:
        f.write(f"// Reproducer written by mlirhlo after a pass failure. Run it with:\n//   {command}\n")
        f.write(module_asm)
    return path


def check_reproducer_dir(directory: str) -> None:
    """Make ``directory`` (a --reproducer-dir) or raise PipelineError: checked before
    the pipeline runs, so a failure is not reported as a traceback after it."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise PipelineError(f"cannot create the reproducer directory: {e.strerror or e}",
                            file=directory) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PipelineError("the reproducer directory is not writable", file=directory)


def _plugins_for(spec: str, python_passes: PassSet | None = None) -> list[str]:
    root = parse_spec(spec)
    python = _python_passes_of(root, python_passes)
    files = []
    for ref in root.passes():
        p = python.get(ref.name)
        if p is not None and p.plugin_file() and p.plugin_file() not in files:
            files.append(p.plugin_file())
    return files


def reproducer_command(path: str) -> str:
    with open(path) as f:
        f.readline()
        return f.readline().strip().lstrip("/").strip()


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]", "_", name)[:60]


def format_timing(run_result: PipelineRun) -> str:
    """Per-pass wall times as a plain-text table (MLIR's report, re-laid out)."""
    import io

    buf = io.StringIO()
    buf.write(f"{'wall ms':>10}  {'%':>6}  pass\n")
    for row in run_result.timing:
        buf.write(f"{ms(row.wall_s):>10.3f}  {row.percent:>5.1f}%  {'  ' * row.depth}{row.name}\n")
    return buf.getvalue()
