"""The stage cache (mlirhlo_driver/batch/cache.py): its key, its entries, and what a hit prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, REPO, run_subprocess

from mlirhlo_driver.batch import cache

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


# ------------------------------------------------------------------ the key

@pytest.fixture
def key_inputs(tmp_path, monkeypatch):
    """A module, a spec, a flags file, a plugin and autotune results, in tmp_path (the cwd)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    Path("m.mlir").write_text(SMALL)
    shutil.copy(REPO / "mlirhlo_driver" / "gpu_specs" / "a100_pcie_80.txtpb", "spec.txtpb")
    Path("flags.txt").write_text("xla_cpu_enable_fast_math: false\n")
    Path("plugin.py").write_text("# a pass plugin\n")
    Path("autotune.txt").write_text("version: 3\n")
    Path("p.pipeline").write_text("// header\nbuiltin.module(cse)\n")
    return tmp_path


def _params(**changes):
    params = dict(inputs=["m.mlir"], pipeline_spec=None, passes=None, pipeline_file=None,
                  print_pipeline=False, stage="ptx", output=None, dump_dir=None, list_stages=False,
                  list_passes=False, input_format=None, split_input_file=False, args=None,
                  print_ir_after_all=False, print_ir_after_change=False, print_ir_before=None,
                  print_ir_after=None, print_ir_after_failure=False, print_ir_module_scope=False,
                  ir_dump_dir=None, timing=False, verify_each=True, reproducer_dir=None,
                  target_version=None, debug_info=False, platform="cuda", gpu_spec="spec.txtpb",
                  debug_options_file="flags.txt", autotune_results="autotune.txt",
                  xla_passes=None, after_pass=None, load_pass_plugin=["plugin.py"])
    params.update(changes)
    return params


def _key(params=None, extra=("--xla_gpu_autotune_level=0",)):
    return cache.opt_key(params or _params(), list(extra))


def _append(path):
    return lambda: Path(path).write_text(Path(path).read_text() + "\n// changed\n")


KEY_CHANGES = {
    "input bytes": _append("m.mlir"),
    "spec text": lambda: Path("spec.txtpb").write_text(Path("spec.txtpb").read_text().replace(
        "core_count: 108", "core_count: 100")),
    "debug options file": lambda: Path("flags.txt").write_text("xla_cpu_enable_fast_math: true\n"),
    "plugin file": _append("plugin.py"),
    "autotune results": lambda: Path("autotune.txt").write_text("version: 4\n"),
    "XLA_FLAGS": lambda: os.environ.__setitem__("XLA_FLAGS", "--xla_gpu_autotune_level=1"),
    "file named by XLA_FLAGS": None,  # set up in the test
}


@pytest.mark.parametrize("what", sorted(KEY_CHANGES))
def test_each_input_changes_the_key(key_inputs, monkeypatch, what):
    if what == "file named by XLA_FLAGS":
        Path("dump.txt").write_text("a")
        monkeypatch.setenv("XLA_FLAGS", f"--xla_gpu_load_autotune_results_from={key_inputs / 'dump.txt'}")
        before = _key()
        Path("dump.txt").write_text("b")
    else:
        monkeypatch.setenv("XLA_FLAGS", "")
        before = _key()
        KEY_CHANGES[what]()
    assert before is not None
    assert _key() != before


@pytest.mark.parametrize("change", [
    dict(stage="llvm"), dict(platform="cpu", gpu_spec=None), dict(gpu_spec="h100_sxm"),
    dict(pipeline_spec="builtin.module(cse)"), dict(passes="canonicalize"),
    dict(pipeline_file="p.pipeline"), dict(inputs=["./m.mlir"]), dict(output="o.ptx"),
    dict(target_version="1.0.0"), dict(debug_info=True), dict(split_input_file=True),
    dict(xla_passes="algsimp"), dict(load_pass_plugin=None), dict(dump_dir="d"),
], ids=lambda c: ",".join(c))
def test_each_option_changes_the_key(key_inputs, change):
    assert _key(_params(**change)) != _key()


def test_command_line_xla_flags_change_the_key(key_inputs):
    assert _key(extra=["--xla_gpu_autotune_level=1"]) != _key()
    assert _key(extra=[]) != _key()


def test_versions_change_the_key(key_inputs, monkeypatch, tmp_path):
    import mlirhlo_driver
    from mlirhlo_driver._native import jaxlib as _jaxlib

    before = _key()
    monkeypatch.setattr(mlirhlo_driver, "__version__", "9.9.9")
    assert _key() != before
    monkeypatch.undo()
    fake = tmp_path / "libjax_common.so"
    fake.write_bytes(b"other jaxlib")
    monkeypatch.setattr(_jaxlib, "native_library_path", lambda library: str(fake))
    assert _key() != before


@pytest.mark.parametrize("spec", ["spec.txtpb", None], ids=["named-spec", "default-spec"])
@pytest.mark.parametrize("tool", ["nvdisasm", "ptxas"])
def test_the_cuda_tools_in_use_change_the_key(key_inputs, monkeypatch, tmp_path, tool, spec):
    """A new nvdisasm or ptxas where the CUDA stages look (here: first on PATH), or that
    binary rebuilt, changes the key of a CUDA command, with or without --gpu-spec; a
    CPU-only command does not look at them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    cuda = _params(gpu_spec=spec)
    before, cpu_before = _key(cuda), _key(_params(platform="cpu", gpu_spec=None))
    exe = bin_dir / tool
    exe.write_bytes(b"\x7fELF one build")
    exe.chmod(0o755)
    added = _key(cuda)
    assert added != before
    exe.write_bytes(b"\x7fELF another build")
    assert _key(cuda) != added
    assert _key(_params(platform="cpu", gpu_spec=None)) == cpu_before


@pytest.mark.parametrize("folder, params, extra", [
    ("gpu_specs", dict(platform="cuda", gpu_spec=None), []),
    ("gpu_specs", dict(platform=None, gpu_spec="h100_sxm"), []),
    ("gpu_specs", dict(platform=None, gpu_spec=None, stage="hlo"), ["--xla_gpu_autotune_level=0"]),
    ("pipelines", dict(platform=None, gpu_spec=None, stage="stablehlo", passes="canonicalize"), []),
    ("pipelines", dict(platform=None, gpu_spec=None, stage="stablehlo", pipeline_spec="@simplify"), []),
], ids=["platform", "spec-name", "xla-flag", "passes", "pipeline"])
def test_the_shipped_data_a_command_reads_is_in_its_key_by_content(key_inputs, monkeypatch, tmp_path,
                                                                      folder, params, extra):
    """The shipped specs (for a platform, a spec or an XLA flag) and pipelines (for passes) are
    hashed by content: a zipped install's copies have no file-system stamp of their own."""
    from mlirhlo_driver import resources

    copy = tmp_path / "data" / folder
    shutil.copytree(REPO / "mlirhlo_driver" / folder, copy)
    monkeypatch.setattr(cache, "_add_environment", lambda h: None)  # as in a zip: no files to stat
    monkeypatch.setattr(resources, "data_dir", lambda name: tmp_path / "data" / name)
    p = _params(**{"debug_options_file": None, "autotune_results": None, "load_pass_plugin": None, **params})
    before = _key(p, extra)
    edited = sorted(copy.iterdir())[0]
    edited.write_text(edited.read_text() + "\n# edited\n")
    assert _key(p, extra) != before


def test_the_key_is_stable(key_inputs):
    assert _key() == _key()


@pytest.mark.parametrize("change", [
    dict(timing=True), dict(print_ir_after_all=True), dict(print_ir_after=["cse"]),
    dict(ir_dump_dir="d"), dict(inputs=["-"]), dict(inputs=["m.mlir", "-"]), dict(inputs=["pkg.mod:fn"], args="f32[2]"),
    dict(input_format="jax"), dict(list_stages=True), dict(inputs=["missing.mlir"]), dict(inputs=[]),
], ids=lambda c: ",".join(c))
def test_what_is_not_cached(key_inputs, change):
    assert _key(_params(**change)) is None


# ---------------------------------------------------------------- entries

RECORDS = [("stderr", None, b"note: a note\n"), ("file", "out/a.ptx", b"\x00ptx\n"),
           ("stdout-text", None, "text ü\n".encode())]


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

WRITER = """
import sys
from mlirhlo_driver.batch import cache
records = [("stdout-bytes", None, bytes([int(sys.argv[1])]) * 200_000)]
for _ in range(30):
    cache.store("12" * 32, records)
    got = cache.lookup("12" * 32)
    assert got is not None and len(got[0][2]) == 200_000 and len(set(got[0][2])) == 1, "torn entry"
"""


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


def test_an_entry_is_written_module_by_module(cli, cache_dir, tmp_path, monkeypatch):
    """A batch's outputs go to the entry's file as each module finishes, not into
    memory until the end: when a module starts, every earlier module's files are
    on disk in the (not yet visible) entry, and the spool holds no data."""
    from mlirhlo_driver import outputs
    from mlirhlo_driver.batch import opt as batch

    sources = []
    for i in range(4):
        path = tmp_path / f"m{i}.mlir"
        path.write_text(SMALL.replace("@main", f"@main{i}"))
        sources.append(path)
    seen = []
    process = batch.process

    def watched(job, task):
        spool = outputs.recorder
        on_disk = os.path.getsize(spool._tmp)
        assert on_disk == spool.written  # flushed, nothing buffered
        assert not list(cache_dir.rglob("*.entry"))  # committed only at the end
        seen.append((task.index, on_disk))
        return process(job, task)

    monkeypatch.setattr(batch, "process", watched)
    result = cli("opt", *sources, "--dump-dir", tmp_path / "out")
    assert result.code == 0, result.err
    sizes = [size for _, size in sorted(seen)]
    assert len(sizes) == 4 and all(b > a for a, b in zip(sizes, sizes[1:])), sizes
    (entry,) = cache_dir.rglob("*.entry")
    records = cache.lookup(entry.stem)
    assert [Path(p).name for kind, p, _ in records if kind == "file"] == \
        [f"m{i}.stablehlo.mlir" for i in range(4)]
    assert not [p for p in cache_dir.rglob("*.tmp")]


def test_a_failed_command_leaves_no_partial_entry(cli, cache_dir, tmp_path):
    good, bad = tmp_path / "good.mlir", tmp_path / "bad.mlir"
    good.write_text(SMALL)
    bad.write_text("func.func @main() {\n  %0 = stablehlo.bogus\n}\n")
    assert cli("opt", good, bad, "--dump-dir", tmp_path / "out").code != 0
    assert (tmp_path / "out" / "good.stablehlo.mlir").exists()  # the good module is still written
    assert not [p for p in cache_dir.rglob("*") if p.is_file()]


# ------------------------------------------------------------ the command

def _run_cli(cli, *args):
    result = cli(*args)
    return result.code, result.out, result.err


@pytest.fixture(scope="module")
def small_module(tmp_path_factory):
    path = tmp_path_factory.mktemp("mod") / "small.mlir"
    path.write_text(SMALL)
    return path


@pytest.mark.parametrize("args", [
    ["--platform", "cuda", "--stage", "ptx,llvm,thunk-sequence", "--dump-dir", "{out}"],
    ["--platform", "cuda", "--stage", "ptx"],
    ["--passes", "canonicalize,cse", "--print-pipeline", "-o", "{out}/m.mlir"],
    ["--stage", "stablehlo-bytecode", "-o", "{out}/m.mlirbc"],
], ids=["cuda-dump-dir", "cuda-stdout", "mlir-print-pipeline", "bytecode"])
def test_a_hit_writes_exactly_what_the_miss_wrote(cli, cache_dir, tmp_path, monkeypatch, small_module, args):
    from mlirhlo_driver.cli import opt as cli_module

    def outputs(tag):
        out = tmp_path / tag
        result = cli("opt", small_module, *[a.format(out=out) for a in args])
        files = {p.relative_to(out): p.read_bytes() for p in out.rglob("*")} if out.exists() else {}
        return result.code, result.out, result.err, files

    miss = outputs("run")
    assert miss[0] == 0, miss[2]
    assert len(list(cache_dir.rglob("*.entry"))) == 1
    shutil.rmtree(tmp_path / "run", ignore_errors=True)

    def no_work(*_, **__):
        raise AssertionError("a cache hit compiled")

    monkeypatch.setattr(cli_module, "_run_opt", no_work)
    hit = outputs("run")
    assert hit == miss
    if "cuda" in args:
        assert "note: no --gpu-spec given" in miss[2]


def test_no_cache_neither_reads_nor_writes(cli, cache_dir, small_module, monkeypatch):
    from mlirhlo_driver.cli import opt as cli_module

    first = cli("opt", small_module, "--no-cache")
    assert first.code == 0 and "stablehlo.add" in first.out
    assert not cache_dir.exists() or not list(cache_dir.rglob("*.entry"))
    assert cli("opt", small_module).code == 0  # now cached
    monkeypatch.setattr(cli_module, "_run_opt", lambda *_: sys.stdout.write("recomputed\n") and None)
    assert cli("opt", small_module, "--no-cache").out == "recomputed\n"


def test_failures_are_not_cached(cli, cache_dir, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main() {\n  %0 = stablehlo.bogus\n}\n")
    assert cli("opt", bad).code == 2
    assert not cache_dir.exists() or not list(cache_dir.rglob("*.entry"))


def test_cache_info_and_clear(cli, cache_dir, small_module):
    assert cli("opt", small_module).code == 0
    info = cli("cache", "info")
    assert info.code == 0
    assert f"directory  {cache_dir}" in info.out and "entries    1" in info.out
    cleared = cli("cache", "clear")
    assert cleared.out == f"removed 1 entries from {cache_dir}\n"
    assert "entries    0" in cli("cache", "info").out


def test_cache_dir_defaults_to_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("MLIRHLO_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "mlirhlo-driver" / "stages"


PROBE = """
import sys
from mlirhlo_driver.cli.mlirhlo import main
try:
    main({argv!r})
except SystemExit:
    pass
sys.stdout.flush()
print("IMPORTED:", sorted(m for m in ("jax", "jaxlib", "jaxlib.mlir") if m in sys.modules))
"""


def test_a_hit_imports_no_jaxlib(cache_dir, small_module):
    argv = ["opt", str(small_module), "--passes", "cse"]
    env = {"MLIRHLO_CACHE_DIR": str(cache_dir)}
    miss = run_subprocess(PROBE.format(argv=argv), env=env)
    hit = run_subprocess(PROBE.format(argv=argv), env=env)
    assert miss.returncode == hit.returncode == 0, miss.stderr
    assert miss.stdout.splitlines()[-1] != "IMPORTED: []"
    assert hit.stdout.splitlines()[-1] == "IMPORTED: []"
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


# ------------------------------------------- start-up: the lazily built command

@pytest.mark.parametrize("argv", [["--help"], ["opt", "--help"], ["specs", "--help"], ["cache", "--help"],
                                  ["-h", "opt"]])
def test_help_is_what_the_fully_built_app_prints(cli, capfd, argv):
    """main() builds only the invoked sub-command (typer evaluates every signature it builds)."""
    from mlirhlo_driver.cli.mlirhlo import app

    lazy = cli(*argv)
    try:
        app(args=argv, standalone_mode=False)
    except SystemExit:
        pass
    full, _ = capfd.readouterr()
    assert lazy.code == 0 and lazy.out == full and "Usage: " in full


def test_files_a_glob_matches_are_in_the_key(cli, cache_dir, tmp_path):
    """``opt 'dir/*.mlir'``: editing a file the glob matches is a cache miss, not the old output."""
    (tmp_path / "g").mkdir()
    module = tmp_path / "g" / "m.mlir"
    module.write_text(SMALL)
    first = cli("opt", str(tmp_path / "g" / "*.mlir"))
    assert first.code == 0 and "stablehlo.multiply" in first.out, first.err
    module.write_text(SMALL.replace("multiply", "subtract"))
    second = cli("opt", str(tmp_path / "g" / "*.mlir"))
    assert second.code == 0 and "stablehlo.subtract" in second.out, second.err


def test_every_file_of_the_driver_is_in_the_key(monkeypatch):
    """An edit anywhere in the package (not only batch/) changes the key: its stages, its
    specs and its vendored JavaScript make the outputs."""
    import mlirhlo_driver

    seen = []
    real = cache._Hasher.add_stat
    monkeypatch.setattr(cache._Hasher, "add_stat", lambda self, label, path: seen.append(str(path))
                        or real(self, label, path))
    cache.opt_key({"inputs": [str(DATA / "softmax.vhlo")], "platform": "cpu", "stage": "hlo"}, [])
    package = Path(mlirhlo_driver.__file__).parent
    for rel in ("xla/stages.py", "xla/html_page.py", "xla/_vendor/viz-global.js", "gpu_specs/h100_sxm.txtpb",
                "cli/mlirhlo.py", "batch/cache.py"):
        assert str(package / rel) in seen, rel
    assert not any("__pycache__" in p for p in seen)


def test_the_key_opens_only_regular_files_a_spec_name_names(tmp_path):
    """``--gpu-spec NAME`` where the working directory holds a FIFO of that name: the key
    reads a spec *file* only, so it never blocks on opening the pipe."""
    module = tmp_path / "m.mlir"
    module.write_text(SMALL)
    os.mkfifo(tmp_path / "h100_sxm")
    code = ("import sys; from mlirhlo_driver.batch import cache\n"
            "print(cache.opt_key({'inputs': [sys.argv[1]], 'platform': 'cuda', 'gpu_spec': 'h100_sxm', "
            "'stage': 'ptx'}, []) is not None)")
    r = subprocess.run([sys.executable, "-c", code, str(module)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert (r.returncode, r.stdout) == (0, "True\n"), r.stderr


def test_a_hit_writes_binary_stdout_again_byte_for_byte(cache_dir, small_module, capfdbinary, monkeypatch):
    """Binary output sent to stdout (bytecode without -o) is cached and a hit writes the same bytes."""
    from mlirhlo_driver.cli import opt as cli_module
    from mlirhlo_driver.cli.mlirhlo import main

    def run():
        capfdbinary.readouterr()
        try:
            main(["opt", str(small_module), "--stage", "stablehlo-bytecode"])
            code = 0
        except SystemExit as e:
            code = e.code
        return code, *capfdbinary.readouterr()

    miss = run()
    assert miss[0] == 0, miss[2]
    assert miss[1].startswith(b"ML\xefR")  # MLIR bytecode magic, on stdout
    (entry,) = cache_dir.rglob("*.entry")
    assert [kind for kind, _, _ in cache.lookup(entry.stem)] == ["stdout-bytes"]

    def no_work(*_, **__):
        raise AssertionError("a cache hit compiled")

    monkeypatch.setattr(cli_module, "_run_opt", no_work)
    hit = run()
    assert hit == miss


# ------------------------------------------------- the cache's settings and formats

@pytest.mark.parametrize("value, expected", [
    (None, 512 * 1024 * 1024), ("", 512 * 1024 * 1024), ("1000", 1000), ("0", 0), ("-5", 0),
    ("lots", 512 * 1024 * 1024), ("1.5", 512 * 1024 * 1024),
])
def test_max_bytes_is_the_environment_cap_else_512_mib(monkeypatch, value, expected):
    """MLIRHLO_CACHE_MAX_BYTES caps the cache (never below 0); unset, empty or not a whole number: 512 MiB."""
    if value is None:
        monkeypatch.delenv("MLIRHLO_CACHE_MAX_BYTES", raising=False)
    else:
        monkeypatch.setenv("MLIRHLO_CACHE_MAX_BYTES", value)
    assert cache.max_bytes() == expected
    assert cache.DEFAULT_MAX_BYTES == 536_870_912


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


def _sha(*parts):
    import hashlib

    return hashlib.sha256(b"".join(parts)).hexdigest()


def _part(label, raw):
    return len(label).to_bytes(4, "little") + label + len(raw).to_bytes(8, "little") + raw


def test_the_key_hash_is_labelled_length_prefixed_parts():
    """The key's SHA-256: a format line, then each part as label length (4 bytes), label,
    data length (8 bytes), data; None, text and bytes each have their own encoding."""
    h = cache._Hasher()
    assert h.hexdigest() == _sha(b"mlirhlo-driver opt cache 1\n")
    h.add("ab", "cd\u00fc")
    h.add("n", None)
    h.add("b", b"\x00\x01")
    assert h.hexdigest() == _sha(b"mlirhlo-driver opt cache 1\n", _part(b"ab", "cd\u00fc".encode()),
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
        b"mlirhlo-driver opt cache 1\n", _part(b"x", b"content"),
        _part(b"y:unreadable", f"{missing}: {errno.ENOENT}".encode()),
        _part(b"s", f"{f} {st.st_size} {st.st_mtime_ns}".encode()), _part(b"m", b"\x00none"),
        _part(b"none", b"\x00none"))


def test_the_files_an_input_word_reads(tmp_path, monkeypatch):
    """A file is itself; a directory is every file under it, walked in sorted order; a glob
    is its sorted matches (directories expanded); a word naming nothing (or a FIFO, a
    dangling link) is None."""
    monkeypatch.chdir(tmp_path)
    for rel in ("d/b.mlir", "d/a.mlir", "d/z/c.mlir", "d/y/d.mlir", "e/x.mlir", "top.mlir"):
        Path(rel).parent.mkdir(parents=True, exist_ok=True)
        Path(rel).write_text("")
    walked = ["d/a.mlir", "d/b.mlir", "d/y/d.mlir", "d/z/c.mlir"]
    assert cache._input_files("top.mlir") == ["top.mlir"]
    assert cache._input_files("d") == walked
    assert cache._input_files("[ed]") == walked + ["e/x.mlir"]
    assert cache._input_files("d/?.mlir") == ["d/a.mlir", "d/b.mlir"]
    assert cache._input_files("*/x.mlir") == ["e/x.mlir"]
    assert cache._input_files("nothing*") is None
    assert cache._input_files("missing.mlir") is None
    assert cache._input_files("pkg.mod:fn") is None
    os.mkfifo("pipe")
    os.symlink("nowhere", "dangling")
    assert cache._input_files("pipe") is None and cache._input_files("dangling") is None


def test_a_directory_input_s_files_are_in_the_key(key_inputs):
    """`opt DIR`: a file added under the directory, or one edited, is another key."""
    Path("mods").mkdir()
    Path("mods/a.mlir").write_text(SMALL)
    before = _key(_params(inputs=["mods"]))
    assert before is not None
    Path("mods/a.mlir").write_text(SMALL + "// edited\n")
    edited = _key(_params(inputs=["mods"]))
    Path("mods/b.mlir").write_text(SMALL)
    assert len({before, edited, _key(_params(inputs=["mods"]))}) == 3


@pytest.mark.parametrize("rel", ["nvvm/libdevice/libdevice.10.bc", "bin/ptxas", "bin/nvdisasm"])
@pytest.mark.parametrize("where", ["command line", "XLA_FLAGS", "debug options file"])
def test_the_cuda_data_dir_a_flag_names_is_in_the_key(key_inputs, monkeypatch, rel, where):
    """--xla_gpu_cuda_data_dir=DIR (on the command line, in XLA_FLAGS or in a --debug-options-file):
    DIR's libdevice, ptxas and nvdisasm, added or rebuilt, make another key."""
    data = key_inputs / "cuda"
    data.mkdir()
    flag = f"--xla_gpu_cuda_data_dir={data}"
    extra = [flag] if where == "command line" else []
    if where == "XLA_FLAGS":
        monkeypatch.setenv("XLA_FLAGS", flag)
    if where == "debug options file":
        Path("flags.txt").write_text(f'xla_gpu_cuda_data_dir: "{data}"\n')
    before = _key(extra=extra)
    tool = data / rel
    tool.parent.mkdir(parents=True)
    tool.write_bytes(b"one build")
    added = _key(extra=extra)
    tool.write_bytes(b"another build!")
    assert len({before, added, _key(extra=extra)}) == 3


@pytest.mark.parametrize("where", ["command line", "XLA_FLAGS", "debug options file"])
def test_a_file_a_flag_names_is_in_the_key_by_content(key_inputs, monkeypatch, where):
    """A flag value naming a file (autotune results, a profile) is hashed by its content,
    wherever the flag is given; an empty value or one of no file is not read."""
    named = key_inputs / "named.txt"
    named.write_text("a")
    flag = f"--xla_gpu_load_autotune_results_from={named}"
    extra = [flag, "--xla_gpu_dump_to=", "--xla_gpu_something=nowhere"] if where == "command line" else []
    if where == "XLA_FLAGS":
        monkeypatch.setenv("XLA_FLAGS", flag + " --xla_flag_without_value")
    if where == "debug options file":
        Path("flags.txt").write_text(f"xla_gpu_load_autotune_results_from: \"{named}\"\nxla_other: 3\n")
    before = _key(extra=extra)
    assert before == _key(extra=extra)
    named.write_text("b")
    assert _key(extra=extra) != before


def test_a_pipeline_file_is_not_read_as_xla_flags(key_inputs):
    """Only --debug-options-file lines are read as flags naming files: a pipeline file's
    'name: value' lines are hashed as text, not followed."""
    Path("other.txt").write_text("a")
    Path("p.pipeline").write_text(f"// ref: {key_inputs / 'other.txt'}\nbuiltin.module(cse)\n")
    params = _params(pipeline_file="p.pipeline", autotune_results="p.pipeline")
    before = _key(params)
    Path("other.txt").write_text("b")
    assert _key(params) == before


@pytest.mark.parametrize("spec", ["spec.txtpb", "h100_sxm,spec.txtpb", " spec.txtpb "])
def test_a_spec_file_among_spec_names_is_in_the_key_by_content(key_inputs, spec):
    """--gpu-spec FILE (alone, in a comma list, spaced) is hashed by content, even without --platform."""
    params = _params(platform=None, gpu_spec=spec)
    before = _key(params, [])
    Path("spec.txtpb").write_text(Path("spec.txtpb").read_text() + "\n# edited\n")
    assert _key(params, []) != before


@pytest.mark.parametrize("platform", ["cuda", "CUDA", "Cuda"])
def test_the_cuda_platform_in_any_case_fingerprints_the_cuda_tools(key_inputs, monkeypatch, tmp_path, platform):
    """--platform CUDA is CUDA: the ptxas on PATH is in its key (not in the CPU's)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    params = _params(platform=platform, gpu_spec=None)
    cpu = _params(platform="cpu", gpu_spec=None)
    before, cpu_before = _key(params), _key(cpu)
    exe = bin_dir / "ptxas"
    exe.write_bytes(b"\x7fELF a build")
    exe.chmod(0o755)
    assert _key(params) != before
    assert _key(cpu) == cpu_before


def test_the_pass_plugins_entry_points_are_in_the_key_with_a_pipeline(key_inputs, monkeypatch):
    """With MLIR passes asked, the installed pass entry points are part of the key; without, not."""
    from mlirhlo_driver.mlir import python_passes

    with_passes = _params(passes="canonicalize")
    without = _params()
    before, plain = _key(with_passes), _key(without)
    monkeypatch.setattr(python_passes, "entry_point_specs", lambda: [("x", "pkg.mod:register")])
    assert _key(with_passes) != before
    assert _key(without) == plain


def test_the_key_is_a_sha256_and_options_order_does_not_matter(key_inputs):
    """A key is 64 hex digits; the same options in another order give the same key."""
    params = _params()
    key = _key(params)
    assert len(key) == 64 and int(key, 16) >= 0
    assert _key(dict(reversed(list(params.items())))) == key


# ------------------------------------------------------------- the entry format

def test_an_entry_s_bytes_are_data_then_header_then_length_then_checksum(cache_dir):
    """MAGIC, each record's data in order, the 'kind TAB size TAB path' lines, the header's
    length (8 bytes little-endian) and the SHA-256 (hex) of everything before it."""
    import hashlib

    key = "0a" * 32
    cache.store(key, RECORDS)
    blob = cache._entry_path(key).read_bytes()
    header = "stderr\t13\t\nfile\t5\tout/a.ptx\nstdout-text\t8\t".encode()
    body = (b"mlirhlo-cache 2\n" + b"note: a note\n" + b"\x00ptx\n" + "text ü\n".encode() + header
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


def _resealed(body):
    import hashlib

    return body + hashlib.sha256(body).hexdigest().encode()


@pytest.mark.parametrize("body, records", [
    (b"mlirhlo-cache 2\n" + (0).to_bytes(8, "little"), []),
    (b"mlirhlo-cache 2\n" + b"abc" + b"stdout-text\t3\t" + (14).to_bytes(8, "little"),
     [("stdout-text", None, b"abc")]),
    (b"mlirhlo-cache 2\n" + b"ab" + b"stderr\t1\t\nstderr\t1\tp" + (20).to_bytes(8, "little"),
     [("stderr", None, b"a"), ("stderr", "p", b"b")]),
], ids=["no-records", "one", "two"])
def test_a_well_formed_entry_written_by_hand_is_read(cache_dir, body, records):
    """The smallest entry (no records) and hand-made ones with a valid checksum are served."""
    path = cache._entry_path("0d" * 32)
    path.parent.mkdir(parents=True)
    path.write_bytes(_resealed(body))
    assert cache.lookup("0d" * 32) == records


@pytest.mark.parametrize("body", [
    b"mlirhlo-cache 2\n" + b"abc" + b"stdout-text\t2\t" + (14).to_bytes(8, "little"),
    b"mlirhlo-cache 2\n" + b"abc" + b"stdout-text\t4\t" + (14).to_bytes(8, "little"),
    b"mlirhlo-cache 2\n" + b"abc" + b"stdout-text\tthree\t" + (18).to_bytes(8, "little"),
    b"mlirhlo-cache 2\n" + b"abc" + b"stdout-text 3" + (13).to_bytes(8, "little"),
    b"mlirhlo-cache 2\n" + b"stdout-text\t0\t" + (15).to_bytes(8, "little"),
    b"mlirhlo-cache 2\n" + (1).to_bytes(8, "little"),
    b"mlirhlo-cache 1\n" + (0).to_bytes(8, "little"),
    b"mlirhlo-cache 2\n",
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


# ------------------------------------------------- eviction, info, clear

def _sized_entries(cache_dir, n):
    """n entries of one size each, oldest first; (keys, size of one)."""
    keys = [f"{i:02d}" * 32 for i in range(n)]
    for i, key in enumerate(keys):
        cache.store(key, [("stdout-bytes", None, b"x" * 100)])
        os.utime(cache._entry_path(key), (1000 + i, 1000 + i))
    return keys, cache._entry_path(keys[0]).stat().st_size


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


# ---------------------------------------------------- the spool, recording, replay

def test_a_spool_counts_what_it_has_written(cache_dir):
    """written: MAGIC, then each record's data, as they go to disk; 0 once aborted."""
    spool = cache._Spool("0f" * 32)
    assert spool.written == len(b"mlirhlo-cache 2\n") == 16
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


def test_recording_stores_what_the_block_writes_in_order(cache_dir, capsys):
    """recording(key): stderr (still shown) and outputs are recorded in order and stored
    when the block succeeds; stderr and the recorder are restored after."""
    from mlirhlo_driver import outputs

    saved = sys.stderr
    with cache.recording("2a" * 32) as spool:
        assert spool is not None and outputs.recorder is spool
        assert sys.stderr.write("note: one\n") == 10
        outputs.write_stdout("text")
        sys.stderr.write("note: two\n")
    assert sys.stderr is saved and outputs.recorder is None
    assert capsys.readouterr() == ("text\n", "note: one\nnote: two\n")
    assert cache.lookup("2a" * 32) == [("stderr", None, b"note: one\n"), ("stdout-text", None, b"text\n"),
                                       ("stderr", None, b"note: two\n")]


def test_recording_a_failing_block_stores_nothing(cache_dir):
    """An exception in the block: no entry, no temp file, stderr and the recorder restored."""
    from mlirhlo_driver import outputs

    saved = sys.stderr
    with pytest.raises(RuntimeError), cache.recording("2b" * 32):
        sys.stderr.write("partial\n")
        raise RuntimeError("failed")
    assert sys.stderr is saved and outputs.recorder is None
    assert not [p for p in cache_dir.rglob("*") if p.is_file()]


def test_recording_without_a_key_records_nothing(cache_dir):
    """recording(None) yields None and leaves stderr and the recorder alone."""
    from mlirhlo_driver import outputs

    saved = sys.stderr
    with cache.recording(None) as spool:
        assert spool is None and sys.stderr is saved and outputs.recorder is None
    assert not cache_dir.exists()


def test_replay_writes_each_kind_in_order(tmp_path, capfdbinary):
    """replay(): stderr text, files, stdout text and bytes, in the recorded order; an unknown kind is skipped."""
    target = tmp_path / "f.bin"
    cache.replay([("stderr", None, b"e1\n"), ("stdout-text", None, "t\u00fc\n".encode()),
                  ("file", str(target), b"\x00\x01"), ("other", None, b"skipped"),
                  ("stdout-bytes", None, b"\xffB"), ("stderr", None, b"e2\n")])
    out, err = capfdbinary.readouterr()
    assert (out, err) == ("t\u00fc\n".encode() + b"\xffB", b"e1\ne2\n")
    assert target.read_bytes() == b"\x00\x01"
