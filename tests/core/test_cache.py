"""The stage cache (mlirhlo_driver/core/cache.py): its entries, its content keys, and every door
sharing it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlirhlo_driver.core import cache
from tests.conftest import DATA, IMPORT_PROBE, REPO, run_subprocess

SMALL = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(d))
    monkeypatch.delenv("MLIRHLO_CACHE_MAX_BYTES", raising=False)
    return d


def _entries(cache_dir):
    return sorted(cache_dir.rglob("*.entry")) if cache_dir.exists() else []


# ------------------------------------------------------------------ content keys

@pytest.fixture
def module_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = Path("m.mlir")
    path.write_text(SMALL)
    return path


def _stage_key(program, target=None, stage="stablehlo", **options):
    """The key a Compiled of ``program`` uses for ``stage``."""
    from mlirhlo_driver import registry
    from mlirhlo_driver.core.compiled import Compiled
    from mlirhlo_driver.stages.base import StageOptions

    opts = target.options(**options) if target is not None else StageOptions(**options)
    return Compiled(program, target, opts)._key(registry.stages().stages[stage])


def _program(path, **kw):
    import mlirhlo_driver as mh

    return mh.load(str(path), **kw)


API_PROBE = """
import sys
import mlirhlo_driver as mh
text = mh.load({path!r}).optimize("cse").compile(mh.Target.cuda("h100_sxm")).stage("ptx")
print(len(text), "IMPORTED:", sorted(m for m in ("jax", "jaxlib", "jaxlib.mlir") if m in sys.modules))
"""

# ------------------------------------------------------------------ entries on disk

RECORDS = [("stderr", None, b"note: a note\n"), ("file", "out/a.ptx", b"\x00ptx\n"),
           ("stdout-text", None, "text ü\n".encode())]

WRITER = """
import sys
from mlirhlo_driver.core import cache
records = [("stdout-bytes", None, bytes([int(sys.argv[1])]) * 200_000)]
for _ in range(30):
    cache.store("12" * 32, records)
    got = cache.lookup("12" * 32)
    assert got is not None and len(got[0][2]) == 200_000 and len(set(got[0][2])) == 1, "torn entry"
"""


def _sha(*parts):
    import hashlib

    return hashlib.sha256(b"".join(parts)).hexdigest()


def _part(label, raw):
    return len(label).to_bytes(4, "little") + label + len(raw).to_bytes(8, "little") + raw


def _resealed(body):
    import hashlib

    return body + hashlib.sha256(body).hexdigest().encode()


def _sized_entries(cache_dir, n):
    """n entries of one size each, oldest first; (keys, size of one)."""
    keys = [f"{i:02d}" * 32 for i in range(n)]
    for i, key in enumerate(keys):
        cache.store(key, [("stdout-bytes", None, b"x" * 100)])
        os.utime(cache._entry_path(key), (1000 + i, 1000 + i))
    return keys, cache._entry_path(keys[0]).stat().st_size


# ------------------------------------------------------------------ stage outputs

@pytest.mark.parametrize("data", ["text ü\n", b"\x00bytes", {"a": b"\x01", "b.c": b""}, {}],
                         ids=["str", "bytes", "parts", "no-parts"])
def test_an_output_comes_back_as_it_was_kept_with_its_notes(cache_dir, data):
    """Text, bytes and {part: bytes} outputs (an empty one too) read back equal, with the
    notes and the pipeline's printed output kept beside them."""
    cache.put_output("aa" * 32, data, ["a note", "another"], printed="print-op-stats\n")
    assert cache.get_output("aa" * 32) == (data, ["a note", "another"], "print-op-stats\n")
    assert cache.get_output("bb" * 32) is None


def test_an_entry_of_another_kind_is_no_output(cache_dir):
    """Records this version does not write (another format's) read as a miss."""
    cache.store("cc" * 32, [("stdout-text", None, b"old")])
    assert cache.get_output("cc" * 32) is None


def test_the_same_content_is_the_same_key_and_names_no_argv(module_file, tmp_path):
    """Two loads of one file give one key; a copy elsewhere is another program (its name
    is in its locations), a copy under the same relative name is the same."""
    a, b = _program(module_file), _program(module_file)
    assert _stage_key(a) == _stage_key(b) and len(_stage_key(a)) == 64
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(module_file, other / "m.mlir")
    assert _stage_key(_program(other / "m.mlir")) != _stage_key(a)
    os.chdir(other)
    assert _stage_key(_program("m.mlir")) == _stage_key(a)


@pytest.mark.parametrize("change", ["bytes", "format", "pipeline", "pipeline-file", "verify"])
def test_what_a_program_is_made_of_changes_its_key(module_file, change):
    """The input's bytes, how they are read, the pipeline and the files it reads."""
    base = _program(module_file).optimize("canonicalize")
    if change == "bytes":
        module_file.write_text(SMALL.replace("multiply", "subtract"))
        other = _program(module_file).optimize("canonicalize")
    elif change == "format":
        other = _program(module_file, input_format="mlir").optimize("canonicalize")
        assert _stage_key(other) == _stage_key(base)  # the format detected is the one forced
        return
    elif change == "pipeline":
        other = _program(module_file).optimize("cse")
    elif change == "pipeline-file":
        Path("p.pipeline").write_text("# one\nbuiltin.module(canonicalize)\n")
        first = _program(module_file).optimize(pipeline_file="p.pipeline")
        Path("p.pipeline").write_text("# one\nbuiltin.module(cse)\n")
        other = _program(module_file).optimize(pipeline_file="p.pipeline")
        assert _stage_key(first) != _stage_key(other)
        return
    else:
        from mlirhlo_driver.mlir.pipeline import Instrumentation

        other = _program(module_file).optimize("canonicalize", instrumentation=Instrumentation(verify_each=False))
    assert _stage_key(other) != _stage_key(base)


def test_a_pipeline_naming_an_interactive_python_pass_is_never_cached(module_file):
    """Its code is in no file: nothing could tell an edited pass from the old one. A pipeline of
    the same set that does not name it is cached."""
    import mlirhlo_driver as mh

    @mh.register_pass("cache-test-noop", anchor="builtin.module")
    def _noop(op):
        return None

    assert _program(module_file).optimize("cache-test-noop", python_passes=[_noop]).identity is None
    assert _program(module_file).optimize("canonicalize", python_passes=[_noop]).identity is not None
    assert _program(module_file).optimize("canonicalize").identity is not None


PLUGIN = """
import mlirhlo_driver


@mlirhlo_driver.register_pass("cache-test-plugin", anchor="builtin.module")
def noop(op):
    return VALUE
"""


def test_a_pipelines_key_covers_the_bytes_of_its_plugins(module_file, tmp_path):
    """The plugin files in a pipeline's pass set are in its key as the bytes it loaded: the same
    bytes are the same key (wherever the file is), other bytes another, and a set loaded before
    the file changed keeps its key; a pass taken from another set's plugin is never cached."""
    from mlirhlo_driver.mlir.python_passes import PassSet

    plugin = tmp_path / "cache_plugin.py"
    plugin.write_text(PLUGIN.replace("VALUE", "1"))
    before = PassSet.default().with_plugins(plugin)

    def key(passes):
        return _stage_key(_program(module_file).optimize("cache-test-plugin", python_passes=passes))

    first = key(before)
    (tmp_path / "copy").mkdir()
    shutil.copy(plugin, tmp_path / "copy" / "cache_plugin.py")
    assert key([tmp_path / "copy" / "cache_plugin.py"]) == first == key([str(plugin)])
    plugin.write_text(PLUGIN.replace("VALUE", "2"))
    assert key([str(plugin)]) != first and key(before) == first
    assert _stage_key(_program(module_file).optimize("canonicalize")) != \
        _stage_key(_program(module_file).optimize("canonicalize", python_passes=before))
    borrowed = PassSet.default().with_passes(before["cache-test-plugin"])
    assert _program(module_file).optimize("cache-test-plugin", python_passes=borrowed).identity is None


@pytest.mark.parametrize("change", ["spec", "flag", "flag-file", "stage-option", "dump-to"])
def test_what_a_target_is_made_of_changes_the_key(module_file, tmp_path, change):
    """The spec's text, the flags, the content of a file a flag names, the stage options;
    a compile that writes files of its own (xla_dump_to) is not cached at all."""
    from mlirhlo_driver import Target

    p = _program(module_file)
    base = _stage_key(p, Target.cuda("h100_sxm"), "ptx")
    if change == "spec":
        assert _stage_key(p, Target.cuda("a100_sxm_80"), "ptx") != base
        spec = tmp_path / "h100_copy.txtpb"
        shutil.copy(REPO / "gpu_specs" / "h100_sxm.txtpb", spec)
        copy_key = _stage_key(p, Target.cuda(str(spec)), "ptx")
        assert copy_key != base  # another name: named so in outputs
    elif change == "flag":
        assert _stage_key(p, Target.cuda("h100_sxm", xla_flags={"xla_gpu_enable_triton_gemm": False}), "ptx") != base
    elif change == "flag-file":
        results = tmp_path / "autotune.pbtxt"
        results.write_text("version: 3\n")
        first = _stage_key(p, Target.cuda("h100_sxm", autotune_results=str(results)), "ptx")
        results.write_text("version: 3\n\n")
        assert _stage_key(p, Target.cuda("h100_sxm", autotune_results=str(results)), "ptx") != first
    elif change == "stage-option":
        assert _stage_key(p, Target.cuda("h100_sxm"), "ptx", fold_constants=True) != base
    else:
        assert _stage_key(p, Target.cuda("h100_sxm", xla_flags={"xla_dump_to": str(tmp_path)}), "ptx") is None


def test_the_environment_is_in_every_key(module_file, monkeypatch):
    """An edit of any driver file (stat) or another jaxlib gives other keys."""
    key = _stage_key(_program(module_file))
    seen = []
    real = cache._Hasher.add_stat
    monkeypatch.setattr(cache._Hasher, "add_stat", lambda self, label, path: seen.append(str(path))
                        or real(self, label, path))
    cache.environment.cache_clear()
    try:
        cache.environment()
        import mlirhlo_driver

        package = Path(mlirhlo_driver.__file__).parent
        for rel in ("xla/stages.py", "xla/html_page.py", "core/cache.py", "cli/mlirhlo.py"):
            assert str(package / rel) in seen, rel
        assert not any("__pycache__" in p for p in seen)
        monkeypatch.setattr(cache._Hasher, "add_stat", lambda self, label, path: real(
            self, label, path) if "jaxlib" not in label else self.add(label, "another build"))
        cache.environment.cache_clear()
        assert _stage_key(_program(module_file)) != key
    finally:
        cache.environment.cache_clear()


# ------------------------------------------------------------------ every door

def test_an_api_compile_after_the_same_command_line_compile_is_a_hit(cli, cache_dir, monkeypatch):
    """``opt --stage ptx`` then ``load(...).compile(Target.cuda(...)).stage("ptx")``: no compile;
    and the other way round for another stage."""
    import mlirhlo_driver as mh
    from mlirhlo_driver.xla import backend

    path = str(DATA / "softmax.vhlo")
    first = cli("opt", path, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx")
    assert first.code == 0, first.err
    monkeypatch.setattr(backend, "compile", lambda *a, **k: pytest.fail("a hit compiled"))
    assert mh.load(path).compile(mh.Target.cuda("h100_sxm")).stage("ptx") == first.out
    monkeypatch.undo()
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(cache_dir))
    text = mh.load(path).compile(mh.Target.cuda("h100_sxm")).stage("llvm")
    monkeypatch.setattr(backend, "compile", lambda *a, **k: pytest.fail("a hit compiled"))
    again = cli("opt", path, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "llvm")
    assert again.code == 0 and again.out == text


def test_kernels_and_diff_read_what_the_api_computed(cli, cache_dir, monkeypatch):
    """``mlirhlo kernels`` and ``mlirhlo diff`` are doors of the same cache."""
    import mlirhlo_driver as mh
    from mlirhlo_driver.xla import backend

    path = str(DATA / "softmax.vhlo")
    c = mh.load(path).compile(mh.Target.cuda("h100_sxm"))
    rows = c.kernels()
    c.summary()
    monkeypatch.setattr(backend, "compile", lambda *a, **k: pytest.fail("a hit compiled"))
    table = cli("kernels", path, "--gpu-spec", "h100_sxm")
    assert table.code == 0, table.err
    assert all(r.kernel in table.out for r in rows)
    diff = cli("diff", path, "--platform", "cuda", "--gpu-spec", "h100_sxm")
    assert diff.code == 0 and "no differences" in diff.out, diff.err


@pytest.mark.parametrize("args", [
    ["--platform", "cuda", "--stage", "ptx,llvm,thunk-sequence", "--dump-dir", "{out}"],
    ["--platform", "cuda", "--stage", "ptx"],
    ["--passes", "canonicalize,cse", "--print-pipeline", "-o", "{out}/m.mlir"],
    ["--stage", "stablehlo-bytecode", "-o", "{out}/m.mlirbc"],
    ["--platform", "cuda", "--stage", "kernels,sass", "--dump-dir", "{out}"],
], ids=["cuda-dump-dir", "cuda-stdout", "mlir-print-pipeline", "bytecode", "deferred"])
def test_a_hit_writes_exactly_what_the_miss_wrote(cli, cache_dir, tmp_path, monkeypatch, args):
    from mlirhlo_driver.xla import backend

    small = tmp_path / "small.mlir"
    small.write_text(SMALL)

    def outputs(tag):
        out = tmp_path / tag
        result = cli("opt", small, *[a.format(out=out) for a in args])
        files = {p.relative_to(out): p.read_bytes() for p in out.rglob("*")} if out.exists() else {}
        return result.code, result.out, result.err, files

    miss = outputs("run")
    assert miss[0] == 0, miss[2]
    assert _entries(cache_dir)
    shutil.rmtree(tmp_path / "run", ignore_errors=True)
    monkeypatch.setattr(backend, "compile", lambda *a, **k: pytest.fail("a hit compiled"))
    monkeypatch.setattr("mlirhlo_driver.inputs.loader.parse_unit", lambda *a: pytest.fail("a hit parsed"))
    assert outputs("run") == miss
    if "cuda" in args:
        assert "note: no --gpu-spec given" in miss[2]


def test_a_check_file_s_notes_come_back_with_a_hit(cli, cache_dir):
    """What the compile said (a check file's folded values) is said again on a hit."""
    path = DATA / "checks" / "control_flow.mlir"  # one of its checked values is folded by XLA
    miss = cli("opt", path, "--platform", "cpu", "--stage", "hlo")
    hit = cli("opt", path, "--platform", "cpu", "--stage", "hlo")
    assert miss.code == hit.code == 0 and "note:" in miss.err and hit.err == miss.err


def test_no_cache_neither_reads_nor_writes(cli, cache_dir, tmp_path, monkeypatch):
    import mlirhlo_driver as mh

    small = tmp_path / "small.mlir"
    small.write_text(SMALL)
    first = cli("opt", small, "--no-cache")
    assert first.code == 0 and "stablehlo.add" in first.out
    assert not _entries(cache_dir)
    mh.load(str(small)).compile(mh.Target.cpu(), cache=False).stage("hlo")
    assert not _entries(cache_dir)
    assert cli("opt", small).code == 0 and _entries(cache_dir)  # now cached
    monkeypatch.setattr("mlirhlo_driver.inputs.loader.parse_unit", lambda *a: pytest.fail("a hit parsed"))
    assert cli("opt", small).code == 0
    monkeypatch.undo()
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(cache_dir))
    parsed = []
    real = __import__("mlirhlo_driver.inputs.loader", fromlist=["parse_unit"]).parse_unit
    monkeypatch.setattr("mlirhlo_driver.inputs.loader.parse_unit", lambda u: parsed.append(u) or real(u))
    assert cli("opt", small, "--no-cache").code == 0 and parsed


def test_failures_are_not_cached(cli, cache_dir, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main() {\n  %0 = stablehlo.bogus\n}\n")
    assert cli("opt", bad).code == 2
    assert not _entries(cache_dir)


def test_cache_info_and_clear(cli, cache_dir, tmp_path):
    small = tmp_path / "small.mlir"
    small.write_text(SMALL)
    assert cli("opt", small).code == 0
    info = cli("cache", "info")
    assert info.code == 0
    assert f"directory  {cache_dir}" in info.out and "entries    1" in info.out
    cleared = cli("cache", "clear")
    assert cleared.out == f"removed 1 entries from {cache_dir}\n"
    assert "entries    0" in cli("cache", "info").out


@pytest.mark.slow
@pytest.mark.parametrize("door", ["opt", "api"])
def test_a_hit_imports_no_jaxlib(cache_dir, tmp_path, door):
    small = tmp_path / "small.mlir"
    small.write_text(SMALL)
    env = {"MLIRHLO_CACHE_DIR": str(cache_dir)}
    code = (IMPORT_PROBE.format(argv=["opt", str(small), "--passes", "cse", "--platform", "cuda", "--gpu-spec", "h100_sxm",
                               "--stage", "ptx"]) if door == "opt" else API_PROBE.format(path=str(small)))
    miss = run_subprocess(code, env=env)
    hit = run_subprocess(code, env=env)
    assert miss.returncode == hit.returncode == 0, miss.stderr
    assert miss.stdout.splitlines()[-1].endswith("IMPORTED: ['jax', 'jaxlib', 'jaxlib.mlir']") or \
        "jaxlib" in miss.stdout.splitlines()[-1]
    assert hit.stdout.splitlines()[-1].endswith("IMPORTED: []")
    assert hit.stdout.splitlines()[:-1] == miss.stdout.splitlines()[:-1] and hit.stderr == miss.stderr


def test_console_entry_exits_with_the_command_status(cache_dir, tmp_path):
    """main() without argv leaves by os._exit: outputs still flushed, exit code kept."""
    code = "import sys; sys.argv = ['mlirhlo'] + sys.argv[1:]; from mlirhlo_driver.cli.mlirhlo import main; main()"
    ok = subprocess.run([sys.executable, "-c", code, "opt", str(DATA / "erf_inv.mlir"), "--no-cache"],
                        capture_output=True, text=True, cwd=REPO)
    assert ok.returncode == 0 and "func.func" in ok.stdout and ok.stderr == ""
    bad = subprocess.run([sys.executable, "-c", code, "opt", str(tmp_path / "missing.mlir")],
                         capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stdout == ""


def test_a_glob_s_files_are_read_anew(cli, cache_dir, tmp_path):
    """``opt 'dir/*.mlir'``: editing a file the glob matches is a miss, not the old output."""
    (tmp_path / "g").mkdir()
    module = tmp_path / "g" / "m.mlir"
    module.write_text(SMALL)
    first = cli("opt", str(tmp_path / "g" / "*.mlir"))
    assert first.code == 0 and "stablehlo.multiply" in first.out, first.err
    module.write_text(SMALL.replace("multiply", "subtract"))
    second = cli("opt", str(tmp_path / "g" / "*.mlir"))
    assert second.code == 0 and "stablehlo.subtract" in second.out, second.err


def test_store_and_lookup_round_trip(cache_dir):
    cache.store("ab" * 32, RECORDS)
    assert cache.lookup("ab" * 32) == RECORDS
    assert cache.lookup("cd" * 32) is None


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_corrupt_entry_is_never_served_and_is_replaced(cache_dir, damage):
    key = "ef" * 32
    cache.store(key, RECORDS)
    (path,) = cache_dir.rglob("*.entry")
    blob = path.read_bytes()
    damaged = {"truncate": blob[:-3], "flip": blob[:-2] + bytes([blob[-2] ^ 1]) + blob[-1:],
               "empty": b"", "garbage": b"mlirhlo-cache 1\n" + b"0" * 64 + b"\n" + b"x" * 40}[damage]
    path.write_bytes(damaged)
    assert cache.lookup(key) is None
    assert not path.exists()  # removed, so the next miss writes it again
    cache.store(key, RECORDS)
    assert cache.lookup(key) == RECORDS


@pytest.mark.parametrize("byte", range(8))
def test_an_entry_whose_header_length_is_wrong_is_a_miss_even_with_a_valid_checksum(cache_dir, byte):
    """Each of the 8 bytes of an entry's header length is read: a wrong one makes a miss, checksum or not."""
    import hashlib

    key = "fa" * 32
    cache.store(key, RECORDS)
    (path,) = cache_dir.rglob("*.entry")
    blob = path.read_bytes()
    body = bytearray(blob[:-64])
    body[len(body) - 8 + byte] ^= 0x01  # the header length: 8 bytes, little-endian, before the SHA-256
    path.write_bytes(bytes(body) + hashlib.sha256(body).hexdigest().encode())
    assert cache.lookup(key) is None
    assert not path.exists()


def test_concurrent_writers_of_one_key(cache_dir):
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(i)], cwd=REPO, stderr=subprocess.PIPE,
                              env=dict(os.environ, MLIRHLO_CACHE_DIR=str(cache_dir)))
             for i in range(4)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    records = cache.lookup("12" * 32)
    assert records is not None and len(records[0][2]) == 200_000
    assert [p.name for p in cache_dir.rglob("*") if p.is_file()] == ["12" * 32 + ".entry"]  # no temp files


def test_least_recently_used_entries_are_evicted(cache_dir, monkeypatch):
    blob = [("stdout-bytes", None, b"x" * 1000)]
    keys = [f"{i:02d}" * 32 for i in range(4)]
    for i, key in enumerate(keys[:3]):
        cache.store(key, blob)
        os.utime(cache._entry_path(key), (1000 + i, 1000 + i))
    assert cache.lookup(keys[0]) is not None  # used: now the most recent
    monkeypatch.setenv("MLIRHLO_CACHE_MAX_BYTES", str(3 * 1200))
    cache.store(keys[3], blob)
    assert [cache.lookup(k) is not None for k in keys] == [True, False, True, True]


def test_cache_dir_defaults_to_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("MLIRHLO_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "mlirhlo-driver" / "stages"


def test_an_explicit_cache_dir_wins_over_xdg(monkeypatch, tmp_path):
    """MLIRHLO_CACHE_DIR is the directory as given; an empty one falls back to XDG's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", "")
    assert cache.cache_dir() == tmp_path / "xdg" / "mlirhlo-driver" / "stages"


def test_an_entry_is_a_file_named_by_its_key_under_the_cache_dir(cache_dir):
    """<dir>/<fan-out>/<key>.entry: what `cache info` and eviction scan."""
    path = cache._entry_path("ab12" * 16)
    assert path.name == "ab12" * 16 + ".entry" and path.parent.parent == cache_dir


def test_the_key_hash_is_labelled_length_prefixed_parts():
    """The key's SHA-256: a format line, then each part as label length (4 bytes), label,
    data length (8 bytes), data; None, text and bytes each have their own encoding."""
    h = cache._Hasher()
    assert h.hexdigest() == _sha(b"mlirhlo-driver stage cache 2\n")
    h.add("ab", "cd\u00fc")
    h.add("n", None)
    h.add("b", b"\x00\x01")
    assert h.hexdigest() == _sha(b"mlirhlo-driver stage cache 2\n", _part(b"ab", "cd\u00fc".encode()),
                                 _part(b"n", b"\x00none"), _part(b"b", b"\x00\x01"))


def test_the_key_hash_reads_files_and_stats_them(tmp_path):
    """A file is hashed by content (an unreadable one by its path and errno); a stamp is
    'path size mtime_ns', and a missing file or no path is the same None part."""
    import errno

    f = tmp_path / "f.txt"
    f.write_bytes(b"content")
    missing = tmp_path / "missing"
    h = cache._Hasher()
    h.add_file("x", f)
    h.add_file("y", missing)
    st = os.stat(f)
    h.add_stat("s", f)
    h.add_stat("m", missing)
    h.add_stat("none", None)
    assert h.hexdigest() == _sha(
        b"mlirhlo-driver stage cache 2\n", _part(b"x", b"content"),
        _part(b"y:unreadable", f"{missing}: {errno.ENOENT}".encode()),
        _part(b"s", f"{f} {st.st_size} {st.st_mtime_ns}".encode()), _part(b"m", b"\x00none"),
        _part(b"none", b"\x00none"))


def test_an_entry_s_bytes_are_data_then_header_then_length_then_checksum(cache_dir):
    """MAGIC, each record's data in order, the 'kind TAB size TAB path' lines, the header's
    length (8 bytes little-endian) and the SHA-256 (hex) of everything before it."""
    import hashlib

    key = "0a" * 32
    cache.store(key, RECORDS)
    blob = cache._entry_path(key).read_bytes()
    header = "stderr\t13\t\nfile\t5\tout/a.ptx\nstdout-text\t8\t".encode()
    body = (b"mlirhlo-cache 3\n" + b"note: a note\n" + b"\x00ptx\n" + "text ü\n".encode() + header
            + len(header).to_bytes(8, "little"))
    assert blob == body + hashlib.sha256(body).hexdigest().encode()


@pytest.mark.parametrize("records", [
    [], [("stdout-bytes", None, b"")], [("file", "a\tb.txt", b"x"), ("stderr", None, b"")],
    [("file", "d/\udcff.bin", b"\xff" * 3)],
], ids=["none", "empty-data", "tab-in-path", "undecodable-path"])
def test_unusual_records_round_trip(cache_dir, records):
    """No records, empty data, a tab in a path, a path not valid UTF-8: read back as written."""
    cache.store("0b" * 32, records)
    assert cache.lookup("0b" * 32) == records


def test_an_output_path_with_a_newline_is_not_cached(cache_dir):
    """The header is line-based: an entry with such a path is dropped, and no temp file stays."""
    cache.store("0c" * 32, [("stderr", None, b"x"), ("file", "a\nb", b"y")])
    assert cache.lookup("0c" * 32) is None
    assert not [p for p in cache_dir.rglob("*") if p.is_file()]


@pytest.mark.parametrize("body, records", [
    (b"mlirhlo-cache 3\n" + (0).to_bytes(8, "little"), []),
    (b"mlirhlo-cache 3\n" + b"abc" + b"stdout-text\t3\t" + (14).to_bytes(8, "little"),
     [("stdout-text", None, b"abc")]),
    (b"mlirhlo-cache 3\n" + b"ab" + b"stderr\t1\t\nstderr\t1\tp" + (20).to_bytes(8, "little"),
     [("stderr", None, b"a"), ("stderr", "p", b"b")]),
], ids=["no-records", "one", "two"])
def test_a_well_formed_entry_written_by_hand_is_read(cache_dir, body, records):
    """The smallest entry (no records) and hand-made ones with a valid checksum are served."""
    path = cache._entry_path("0d" * 32)
    path.parent.mkdir(parents=True)
    path.write_bytes(_resealed(body))
    assert cache.lookup("0d" * 32) == records


@pytest.mark.parametrize("body", [
    b"mlirhlo-cache 3\n" + b"abc" + b"stdout-text\t2\t" + (14).to_bytes(8, "little"),
    b"mlirhlo-cache 3\n" + b"abc" + b"stdout-text\t4\t" + (14).to_bytes(8, "little"),
    b"mlirhlo-cache 3\n" + b"abc" + b"stdout-text\tthree\t" + (18).to_bytes(8, "little"),
    b"mlirhlo-cache 3\n" + b"abc" + b"stdout-text 3" + (13).to_bytes(8, "little"),
    b"mlirhlo-cache 3\n" + b"stdout-text\t0\t" + (15).to_bytes(8, "little"),
    b"mlirhlo-cache 3\n" + (1).to_bytes(8, "little"),
    b"mlirhlo-cache 1\n" + (0).to_bytes(8, "little"),
    b"mlirhlo-cache 3\n",
], ids=["size-short", "size-long", "size-not-a-number", "no-tabs", "header-too-long", "length-past-magic",
        "old-magic", "no-length"])
def test_an_entry_not_exactly_as_written_is_a_miss_even_with_a_valid_checksum(cache_dir, body):
    """Sizes that do not add up to the data, a malformed header, a header length reaching into
    MAGIC, another format's MAGIC, a truncated trailer: a miss, and the entry is removed."""
    path = cache._entry_path("0e" * 32)
    path.parent.mkdir(parents=True)
    path.write_bytes(_resealed(body))
    assert cache.lookup("0e" * 32) is None
    assert not path.exists()


def test_eviction_keeps_entries_that_fit_the_limit_exactly(cache_dir):
    """evict(limit) deletes the oldest entries until the total is at most limit: a total
    equal to the limit stays, one byte over removes exactly the oldest."""
    keys, size = _sized_entries(cache_dir, 3)
    cache.evict(3 * size)
    assert all(cache._entry_path(k).exists() for k in keys)
    cache.evict(3 * size - 1)
    assert [cache._entry_path(k).exists() for k in keys] == [False, True, True]
    cache.evict(size)
    assert [cache._entry_path(k).exists() for k in keys] == [False, False, True]
    cache.evict(0)
    assert not any(cache._entry_path(k).exists() for k in keys)


def test_a_store_evicts_down_to_the_environment_cap(cache_dir, monkeypatch):
    """Each stored entry then applies MLIRHLO_CACHE_MAX_BYTES: exactly the cap keeps all."""
    keys, size = _sized_entries(cache_dir, 2)
    monkeypatch.setenv("MLIRHLO_CACHE_MAX_BYTES", str(3 * size))
    cache.store("03" * 32, [("stdout-bytes", None, b"y" * 100)])
    assert [cache._entry_path(k).exists() for k in [*keys, "03" * 32]] == [True, True, True]
    monkeypatch.setenv("MLIRHLO_CACHE_MAX_BYTES", str(3 * size - 1))
    cache.store("04" * 32, [("stdout-bytes", None, b"z" * 100)])
    assert [cache._entry_path(k).exists() for k in [*keys, "03" * 32, "04" * 32]] == [False, False, True, True]


def test_info_counts_only_entries(cache_dir, monkeypatch):
    """info(): the directory, the entries and their bytes (not temp files, stray files, or
    files directly in the directory), and the cap."""
    monkeypatch.setenv("MLIRHLO_CACHE_MAX_BYTES", "123456")
    assert cache.info() == {"directory": str(cache_dir), "entries": 0, "bytes": 0, "max_bytes": 123456}
    keys, size = _sized_entries(cache_dir, 2)
    (cache_dir / "stray.entry").write_bytes(b"not in a subdirectory")
    (cache._entry_path(keys[0]).parent / ".0000.abc.tmp").write_bytes(b"partial")
    (cache._entry_path(keys[0]).parent / "notes.txt").write_bytes(b"other")
    assert cache.info() == {"directory": str(cache_dir), "entries": 2, "bytes": 2 * size, "max_bytes": 123456}


def test_clear_removes_entries_and_stale_temp_files(cache_dir):
    """clear(): every entry and temp file goes, the count is of entries; other files stay."""
    assert cache.clear() == 0  # no directory yet
    keys, _ = _sized_entries(cache_dir, 3)
    tmp = cache._entry_path(keys[1]).parent / ".0101.abc.tmp"
    tmp.write_bytes(b"partial")
    other = cache._entry_path(keys[1]).parent / "notes.txt"
    other.write_bytes(b"other")
    assert cache.clear() == 3
    assert sorted(p.name for p in cache_dir.rglob("*") if p.is_file()) == ["notes.txt"]
    assert cache.clear() == 0


def test_a_hit_refreshes_the_entry_s_time(cache_dir):
    """lookup() of a good entry makes it the most recently used (its mtime now)."""
    import time

    keys, _ = _sized_entries(cache_dir, 1)
    cache.lookup(keys[0])
    assert cache._entry_path(keys[0]).stat().st_mtime > time.time() - 3600


def test_a_spool_counts_what_it_has_written(cache_dir):
    """written: MAGIC, then each record's data, as they go to disk; 0 once aborted."""
    spool = cache._Spool("0f" * 32)
    assert spool.written == len(b"mlirhlo-cache 3\n") == 16
    spool.append(("stderr", None, b"abc"))
    assert spool.written == 19 == os.path.getsize(spool._tmp)
    spool.abort()
    assert spool.written == 0
    spool.append(("stderr", None, b"more"))  # after abort: nothing, no error
    spool.commit()
    assert not [p for p in cache_dir.rglob("*") if p.is_file()]


def test_entries_whose_keys_share_a_prefix_share_a_directory(cache_dir):
    """Keys alike but for their end: both stored and served from one subdirectory; an
    entry in the making is a hidden temp file there, which `cache clear` removes."""
    first, second = "ab" * 31 + "01", "ab" * 31 + "02"
    cache.store(first, RECORDS)
    spool = cache._Spool(second)
    tmp = Path(spool._tmp)
    assert tmp.parent == cache._entry_path(first).parent and tmp.name.startswith(".") and tmp.suffix == ".tmp"
    for record in RECORDS[::-1]:
        spool.append(record)
    spool.commit()
    assert not tmp.exists()
    assert (cache.lookup(first), cache.lookup(second)) == (RECORDS, RECORDS[::-1])
    assert len(list(cache_dir.iterdir())) == 1


def test_an_unwritable_cache_is_skipped_silently(tmp_path, monkeypatch):
    """A cache directory that cannot be created: storing does nothing and raises nothing."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("MLIRHLO_CACHE_DIR", str(blocker / "cache"))
    cache.store("1a" * 32, RECORDS)
    assert cache.lookup("1a" * 32) is None
    spool = cache._Spool("1a" * 32)
    assert spool.written == 0


def test_the_variables_outputs_depend_on_are_read_at_each_key(module_file, monkeypatch):
    """A notebook that sets JAX_ENABLE_X64 after its first compile gets another key; the
    installed files are fingerprinted once per process."""
    monkeypatch.delenv("JAX_ENABLE_X64", raising=False)
    calls = []
    real = cache._add_environment
    monkeypatch.setattr(cache, "_add_environment", lambda h: calls.append(1) or real(h))
    cache.environment.cache_clear()
    try:
        key = _stage_key(_program(module_file))
        monkeypatch.setenv("JAX_ENABLE_X64", "1")
        assert _stage_key(_program(module_file)) != key
        monkeypatch.delenv("JAX_ENABLE_X64")
        assert _stage_key(_program(module_file)) == key
        assert len(calls) == 1
    finally:
        cache.environment.cache_clear()
