"""README.md runs as written: every ``sh`` and ``python`` block, from the checkout's root.

Each block is one test. It runs in a fresh directory that links the checkout's shipped
folders (tests/, gpu_specs/, pipelines/, scripts/), so commands read the files the README
names and write their outputs beside them, never into the checkout. Conventions, all
visible in README.md:

* A ``python`` block whose first line is ``# NAME.py`` is a file the blocks use (a pass
  plugin): it is written into every block's directory, and imported by its own test.
  Any other ``python`` block runs as a script.
* An ``sh`` block is run a command at a time (lines joined on a trailing backslash;
  blank and ``#`` lines skipped). In a transcript (lines starting ``$ ``) only those
  lines are commands; the rest is output shown for reading. Each command must exit 0,
  unless its own trailing comment says ``exits N``. No command may print a traceback.
* ``sh skip="why"`` after the fence marks a block that cannot run here (a cluster, a
  server that runs until stopped); the test is skipped with that reason.
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

README = REPO / "README.md"
LINKED = ("tests", "gpu_specs", "pipelines", "scripts")
EXITS = re.compile(r"#.*\bexits (\d+)\b")


@dataclass(frozen=True)
class Block:
    lang: str
    line: int                 # the fence's line in README.md (1-based)
    text: str
    attrs: dict[str, str]

    @property
    def file_name(self) -> str | None:
        """``# NAME.py`` on a python block's first line: the block is that file."""
        m = re.fullmatch(r"#\s*(\w+\.py)\s*", self.text.splitlines()[0]) if self.text else None
        return m.group(1) if self.lang == "python" and m else None


def blocks(text: str) -> list[Block]:
    """README's ``sh`` and ``python`` fences, with their info-string attributes."""
    from markdown_it import MarkdownIt

    out = []
    for tok in MarkdownIt("commonmark").parse(text):
        if tok.type != "fence":
            continue
        lang, _, rest = tok.info.strip().partition(" ")
        if lang in ("sh", "python"):
            attrs = {k: v for k, v in (w.split("=", 1) for w in shlex.split(rest) if "=" in w)}
            out.append(Block(lang, tok.map[0] + 1, tok.content, attrs))
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
    assert pending is None, f"README.md:{block.line}: a command ends in a backslash"
    return out


def expected_exit(command: str) -> int:
    m = EXITS.search(command.splitlines()[-1])
    return int(m.group(1)) if m else 0


ALL = blocks(README.read_text())
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
    return f"{b.lang}-line{b.line}"


def test_the_readme_has_blocks_to_run():
    """The parse found README's blocks (a change of fence syntax would otherwise pass vacuously)."""
    assert sum(b.lang == "sh" for b in ALL) >= 20 and sum(b.lang == "python" for b in ALL) >= 2
    assert FILES, "the pass plugin example"


def test_commands_join_continuations_and_read_transcripts():
    b = Block("sh", 1, "# a comment\nmlirhlo opt a \\\n    --stage ptx\n\nmlirhlo run b   # exits 1\n", {})
    assert commands(b) == ["mlirhlo opt a \\\n    --stage ptx", "mlirhlo run b   # exits 1"]
    assert [expected_exit(c) for c in commands(b)] == [0, 1]
    t = Block("sh", 1, "$ mlirhlo --version\nmlirhlo-driver 0.1.0\n$ ls \\\n  x\nx\n", {})
    assert commands(t) == ["mlirhlo --version", "ls \\\n  x"]


@pytest.mark.slow
@pytest.mark.parametrize("block", ALL, ids=_id)
def test_readme_block(block: Block, tmp_path):
    if "skip" in block.attrs:
        pytest.skip(f"README.md:{block.line}: {block.attrs['skip']}")
    if block.attrs.get("needs") == "libtpu":  # the TPU blocks: the driver's copy of libtpu (or jax[tpu]'s)
        from mlirhlo_driver._native import libtpu

        if libtpu.in_use() is None:
            pytest.skip(f"README.md:{block.line}: needs libtpu ('mlirhlo tpu-plugin install')")
    elif "needs" in block.attrs and importlib.util.find_spec(block.attrs["needs"]) is None:
        pytest.skip(f"README.md:{block.line}: needs {block.attrs['needs']} (an optional extra)")
    cwd = _workdir(tmp_path)
    env = _env()
    if block.lang == "python":
        script = cwd / (block.file_name or "readme_block.py")
        if not block.file_name:
            script.write_text(block.text)
        argv = [sys.executable, "-c", f"import {script.stem}"] if block.file_name else [sys.executable, str(script)]
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"README.md:{block.line}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        return
    for command in commands(block):
        proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600)
        where = f"README.md:{block.line}: {command}"
        assert "Traceback" not in proc.stdout + proc.stderr, f"{where}\n{proc.stderr[-4000:]}"
        assert proc.returncode == expected_exit(command), \
            f"{where}\nexit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
