"""The docs run as written: every ``sh`` and ``python`` block of README.md, CONTRIBUTING.md,
ARCHITECTURE.md and the site's pages (docs/**/*.md), from the checkout's root; and the site
builds with ``mkdocs build --strict``.

Each block is one test. It runs in a fresh directory that links the checkout's shipped
folders (tests/, gpu_specs/, pipelines/, scripts/), so commands read the files the pages
name and write their outputs beside them, never into the checkout. Conventions, all
visible in the pages:

* A ``python`` block whose first line is ``# NAME.py`` is a file the blocks use (a pass
  plugin): it is written into every block's directory, whichever page it is on, and
  imported by its own test. Any other ``python`` block runs as a script.
* An ``sh`` block is run a command at a time (lines joined on a trailing backslash;
  blank and ``#`` lines skipped). In a transcript (lines starting ``$ ``) only those
  lines are commands; the rest is output shown for reading. Each command must exit 0,
  unless its own trailing comment says ``exits N``. No command may print a traceback.
* ``sh skip="why"`` after the fence marks a block that cannot run here (a cluster, a
  server that runs until stopped) or that repeats another page's block (``same as
  README.md's set-up``): the test is skipped with that reason, so each example runs once.
  ``needs="module"`` skips it where an optional extra's module is not installed;
  ``needs="libtpu"`` where no libtpu is installed (``mlirhlo tpu-plugin install``).

Cost: the blocks compile real modules (one CUDA compile is 1-3 s on 2 cores); marked
slow, so the inner loop (-m "not slow") leaves them out.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

# The pages whose blocks run: the root's Markdown and the site's (docs/conformance.md is
# generated and has no blocks; it is read like the others).
README = REPO / "README.md"
PAGES = [README, REPO / "CONTRIBUTING.md", REPO / "ARCHITECTURE.md",
         *sorted((REPO / "docs").rglob("*.md"))]
LINKED = ("tests", "gpu_specs", "pipelines", "scripts")
EXITS = re.compile(r"#.*\bexits (\d+)\b")


@dataclass(frozen=True)
class Block:
    lang: str
    line: int                 # the fence's line in its page (1-based)
    text: str
    attrs: dict[str, str]
    page: str = "README.md"   # the page, relative to the checkout

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def file_name(self) -> str | None:
        """``# NAME.py`` on a python block's first line: the block is that file."""
        m = re.fullmatch(r"#\s*(\w+\.py)\s*", self.text.splitlines()[0]) if self.text else None
        return m.group(1) if self.lang == "python" and m else None


def blocks(text: str, page: str = "README.md") -> list[Block]:
    """A page's ``sh`` and ``python`` fences, with their info-string attributes."""
    from markdown_it import MarkdownIt

    out = []
    for tok in MarkdownIt("commonmark").parse(text):
        if tok.type != "fence":
            continue
        lang, _, rest = tok.info.strip().partition(" ")
        if lang in ("sh", "python"):
            attrs = {k: v for k, v in (w.split("=", 1) for w in shlex.split(rest) if "=" in w)}
            out.append(Block(lang, tok.map[0] + 1, tok.content, attrs, page))
    return out


def commands(block: Block) -> list[str]:
    """The commands of an sh block, one per logical line."""
    lines = block.text.splitlines()
    transcript = any(ln.startswith("$ ") for ln in lines)
    out: list[str] = []
    pending: str | None = None
    for ln in lines:
        if pending is not None:
            pending += "\n" + ln
        elif transcript:
            if not ln.startswith("$ "):
                continue
            pending = ln[2:]
        else:
            if not ln.strip() or ln.lstrip().startswith("#"):
                continue
            pending = ln
        if not pending.rstrip().endswith("\\"):
            out.append(pending)
            pending = None
    assert pending is None, f"{block.where}: a command ends in a backslash"
    return out


def expected_exit(command: str) -> int:
    m = EXITS.search(command.splitlines()[-1])
    return int(m.group(1)) if m else 0


ALL = [b for page in PAGES for b in blocks(page.read_text(), str(page.relative_to(REPO)))]
FILES = [b for b in ALL if b.file_name]


def _workdir(tmp_path: Path) -> Path:
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO / name)
    for b in FILES:
        (tmp_path / b.file_name).write_text(b.text)
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    for key in ("XLA_FLAGS", "JAX_PLATFORMS"):
        env.pop(key, None)
    return env


def _id(b: Block) -> str:
    return f"{b.page}-{b.lang}-line{b.line}"


def test_the_pages_have_blocks_to_run():
    """The parse found the pages' blocks (a change of fence syntax would otherwise pass vacuously)."""
    readme = [b for b in ALL if b.page == "README.md"]
    assert sum(b.lang == "sh" for b in readme) >= 3 and sum(b.lang == "python" for b in readme) >= 1
    assert sum(b.lang == "sh" for b in ALL) >= 30 and sum(b.lang == "python" for b in ALL) >= 4
    assert FILES, "the pass plugin example"
    assert len({b.file_name for b in FILES}) == len(FILES), "two pages write the same file"


def test_the_readme_keeps_ci_s_test_command():
    """.ci/run's newest cell runs "the README's test command"; the README shows that command."""
    assert any(b.text.strip() == ".venv/bin/python -m pytest -q -n auto" for b in ALL if b.page == "README.md")
    assert ".venv/bin/python -m pytest -q -n auto\n" in (REPO / ".ci" / "run").read_text()


def test_the_readme_stays_short():
    """README.md is the overview that links into the docs site, not the manual (CONTRIBUTING.md, "Docs")."""
    assert len(README.read_text().splitlines()) <= 250


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"])
def test_the_root_pages_links_lead_somewhere(page):
    """The root's pages are not in the site (mkdocs checks its own links): each relative link
    of theirs names a file of the checkout, so README's map of the docs cannot go stale."""
    for target in LINK.findall((REPO / page).read_text()):
        if "://" in target or target.startswith("#"):
            continue
        assert (REPO / target.split("#")[0]).exists(), f"{page}: a link to {target}, which does not exist"


def test_the_docs_pages_errors_name_exist():
    """A hint that names a docs page (``docs/pipelines.md``) names one that is there."""
    named = {m for f in (REPO / "mlirhlo_driver").rglob("*.py")
             for m in re.findall(r"\bdocs/[\w/.-]+\.md\b", f.read_text())}
    assert named, "the hints that point at the docs"
    assert all((REPO / m).is_file() for m in named), sorted(m for m in named if not (REPO / m).is_file())


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    """mkdocs.yml's site, with every page in the nav, each link and anchor resolved, the
    included root pages found and the API reference rendered from the docstrings."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.skip("the docs extra is not installed (pip install -e '.[docs]'; CI's newest cell has it)")
    env = _env()
    env["NO_MKDOCS_2_WARNING"] = "1"  # mkdocs-material's banner about its successor, not about this site
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    # A fence whose header the site's Markdown did not take shows as a paragraph of backticks.
    unrendered = [str(f.relative_to(tmp_path)) for f in (tmp_path / "site").rglob("*.html") if "<p>```" in f.read_text()]
    assert not unrendered, f"fences rendered as text in {unrendered}"
    reference = (tmp_path / "site" / "reference" / "index.html").read_text()
    import mlirhlo_driver

    # Each public name has its entry (docs/reference.md names each where it is defined).
    missing = [n for n in mlirhlo_driver.__all__ if not re.search(rf'id="mlirhlo_driver\.[\w.]*\b{n}"', reference)]
    assert not missing, f"docs/reference.md lacks {missing}"


def test_commands_join_continuations_and_read_transcripts():
    b = Block("sh", 1, "# a comment\nmlirhlo opt a \\\n    --stage ptx\n\nmlirhlo run b   # exits 1\n", {})
    assert commands(b) == ["mlirhlo opt a \\\n    --stage ptx", "mlirhlo run b   # exits 1"]
    assert [expected_exit(c) for c in commands(b)] == [0, 1]
    t = Block("sh", 1, "$ mlirhlo --version\nmlirhlo-driver 0.1.0\n$ ls \\\n  x\nx\n", {})
    assert commands(t) == ["mlirhlo --version", "ls \\\n  x"]


@pytest.mark.slow
@pytest.mark.parametrize("block", ALL, ids=_id)
def test_block(block: Block, tmp_path):
    if "skip" in block.attrs:
        pytest.skip(f"{block.where}: {block.attrs['skip']}")
    if block.attrs.get("needs") == "libtpu":  # the TPU blocks: the driver's copy of libtpu (or jax[tpu]'s)
        from mlirhlo_driver._native import libtpu

        if libtpu.in_use() is None:
            pytest.skip(f"{block.where}: needs libtpu ('mlirhlo tpu-plugin install')")
    elif "needs" in block.attrs and importlib.util.find_spec(block.attrs["needs"]) is None:
        pytest.skip(f"{block.where}: needs {block.attrs['needs']} (an optional extra)")
    cwd = _workdir(tmp_path)
    env = _env()
    if block.lang == "python":
        script = cwd / (block.file_name or "readme_block.py")
        if not block.file_name:
            script.write_text(block.text)
        argv = [sys.executable, "-c", f"import {script.stem}"] if block.file_name else [sys.executable, str(script)]
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{block.where}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        return
    for command in commands(block):
        proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600)
        where = f"{block.where}: {command}"
        assert "Traceback" not in proc.stdout + proc.stderr, f"{where}\n{proc.stderr[-4000:]}"
        assert proc.returncode == expected_exit(command), \
            f"{where}\nexit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
