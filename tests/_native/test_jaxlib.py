"""The jax/jaxlib bridge (_native/jaxlib.py): the native-noise filter, the CUDA plugin
bookkeeping and the thin wrappers over jaxlib, pinned with fakes where the real thing
needs a GPU, a distributed run or a fresh jax.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from mlirhlo_driver._native import jaxlib
from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.errors import (
    CompileError,
    DistributedError,
    EnvironmentMismatch,
    ExecutionError,
    spell,
)
from tests.conftest import assert_mentions

JAXLIB = "0.12.0.1"


def _found(jax: str | None = JAXLIB, lib: str | None = JAXLIB, cuda12: str | None = None,
           cuda13: str | None = None) -> dict[str, str | None]:
    return {"jax": jax, "jaxlib": lib, "jax-cuda13-plugin": cuda13, "jax-cuda12-plugin": cuda12}


@pytest.fixture(autouse=True)
def _fresh_jaxlib_version():
    """jaxlib_version is cached: a value computed under a test's fake installed_versions must not
    outlive the test (other files read the real one)."""
    jaxlib.jaxlib_version.cache_clear()
    yield
    jaxlib.jaxlib_version.cache_clear()


@pytest.fixture
def versions(monkeypatch):
    """Make installed_versions() report what a test sets (a dict it may change)."""
    found = _found(cuda12=JAXLIB)
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: dict(found))
    return found


# ------------------------------------------------------------------ native noise

_NOISE = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "E0101 12:00:00.123456    4242 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.",
    "W0101 12:00:00.123456    4242 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.",
    "I0101 12:00:00.123456    4242 xla_bridge.cc:123] Unable to initialize backend 'cuda'",
    "W0101 12:00:00.123456    4242 gpu_compiler.cc:1234] Using fallback sort algorithm rather than SortRewriter, "
    "which will be slower at runtime. To avoid this, compile with a GPU present.",
    "E0101 12:00:00.123456    4242 wire_format_lite.cc:618] String field 'xla.HloModuleProto.name' contains invalid UTF-8 data",
    "E0101 12:00:00.123456    4242 shape.cc:51] Unsupported element type: 77",
    "BufferAssignment stats:",
    "             parameter allocation:     1.5KiB",
    "  preallocated temp fragmentation:       736B (47.42%)",
    "              constant allocation:         0B",
]

_NOT_NOISE = [
    "W0101 12:00:00.123456    4242 cuda_executor.cc:1] Something else",
    "E0101 12:00:00.123456    4242 shape.cc:51] Unsupported element type: 77 x",
    "X0101 12:00:00.123456    4242 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.",
    " WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR!",
    "plain text",
    "",
    "  parameter allocation: failed",
]

# ------------------------------------------------------------- importing jax

_IMPORT_JAX = r"""
import json, os
from mlirhlo_driver._native import jaxlib
threads = jaxlib.native_threads_started()
import jax  # the user's (it sets TF_CPP_MIN_LOG_LEVEL and TPU_SKIP_MDS_QUERY itself)
env = dict(os.environ)
m = jaxlib._import_jax()
from jax._src import xla_bridge
print(json.dumps([threads, m.config.jax_platforms, dict(os.environ) == env, sorted(xla_bridge._backends)]))
"""


@pytest.fixture(scope="module")
def import_jax_cases():
    """What importing jax did in a fresh process, without and with the user's JAX_PLATFORMS."""
    out = []
    for platforms in (None, "cpu,cuda"):
        env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK")}
        if platforms:
            env["JAX_PLATFORMS"] = platforms
        proc = subprocess.run([sys.executable, "-c", _IMPORT_JAX], capture_output=True, text=True, env=env,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        out.append(json.loads(proc.stdout.splitlines()[-1]))
    return out


_PLUGIN_WARNING = r"""
import sys, warnings
import jaxlib.plugin_support
jaxlib.plugin_support.jaxlib_version = "0.11.0"  # jax's own check now calls the installed plugin foreign
from mlirhlo_driver._native import jaxlib
plugin = sys.argv[1]
found = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1", "jax-cuda13-plugin": None, "jax-cuda12-plugin": None}
found[plugin] = "0.11.0" if sys.argv[2] == "mismatch" else "0.12.0.1"
jaxlib.installed_versions = lambda: dict(found)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    jaxlib._import_jax()
print(sum("will not be used" in str(w.message) for w in caught))
"""


class _Recorder:
    """A stand-in for xla_client that records each registration call."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *a, **k: self.calls.append((name, a, k)) or f"{name}-result"


# ------------------------------------------------------------ compile and run


class _FakeClient:
    def __init__(self, fail: Exception | None = None, loads: bool = True):
        self.calls, self.fail = [], fail
        if loads:
            self.compile_and_load = self._compile_and_load

    def _compile_and_load(self, module, devices, options):
        return self._done(("compile_and_load", module, devices, options))

    def compile(self, module, executable_devices=None, compile_options=None):
        return self._done(("compile", module, executable_devices, compile_options))

    def _done(self, call):
        self.calls.append(call)
        os.write(2, f"{_NOISE[0]}\nxla logged {call[0]}\n".encode())
        if self.fail:
            raise self.fail
        return f"{call[0]} executable"


@pytest.fixture
def fake_xla(monkeypatch):
    """_xla_client with DeviceList a tuple; the driver's native-thread record restored afterwards."""
    monkeypatch.setattr(jaxlib, "_xla_client", lambda: types.SimpleNamespace(DeviceList=tuple))
    monkeypatch.setattr(jaxlib, "_native_threads", False)


def _proto_fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of a serialized protobuf message: varints and length-delimited only."""
    fields, i = [], 0

    def varint() -> int:
        nonlocal i
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    while i < len(data):
        key = varint()
        if key & 7 == 0:
            fields.append((key >> 3, varint()))
        elif key & 7 == 2:
            n = varint()
            fields.append((key >> 3, data[i:i + n]))
            i += n
        else:
            raise AssertionError(f"wire type {key & 7}")
    return fields


@pytest.fixture
def kv_client(monkeypatch):
    """A fake distributed client: a dict store; its methods may be replaced."""
    from jax._src import distributed

    store, waits = {}, []

    def get(key, timeout_ms):
        waits.append(timeout_ms)
        if key not in store:
            raise RuntimeError(f"DEADLINE_EXCEEDED: no {key}")
        return store[key]

    client = types.SimpleNamespace(key_value_set_bytes=store.__setitem__, blocking_key_value_get_bytes=get,
                                   store=store, waits=waits)
    monkeypatch.setattr(distributed.global_state, "client", client)
    return client


# ----------------------------------------------------------------- HLO <-> MLIR

_HLO = """HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

ENTRY main {
  ROOT p = f32[2]{0} parameter(0)
}
"""


def test_file_line_lines_are_dropped_only_inside_a_source_location_trace(capfd):
    """Native output keeps a FILE:LINE line unless it follows XLA's '=== Source Location Trace'
    header; the trace ends at the first line of another shape."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    text = ("model.py:12\nmain.cc:7\nsome detail\n"
            "=== Source Location Trace: ===\nxla/service/foo.cc:42\nxla/bar.cc:9\n"
            "after the trace\nuser.py:3\n")
    assert _jaxlib.without_native_noise(text) == [
        "model.py:12", "main.cc:7", "some detail", "after the trace", "user.py:3"]
    native = b"something went wrong in\nkernel.cc:88\n"  # no trace header: passed on as it is
    with _jaxlib.filtered_native_stderr():
        os.write(2, native)
    assert capfd.readouterr().err == native.decode()


def test_dense_elements_attr_refuses_an_array_that_does_not_fit_the_type():
    """An array whose size or element type does not fit the MLIR type is a ValueError from the
    bindings (bool arrays included: this jaxlib takes their bytes, never packed bits)."""
    from jaxlib.mlir import ir

    from mlirhlo_driver._native import jaxlib as _jaxlib

    with ir.Context():
        assert str(_jaxlib.dense_elements_attr(np.array([True, False, True, True]),
                                               ir.Type.parse("tensor<4xi1>"))) == \
            "dense<[true, false, true, true]> : tensor<4xi1>"
        bad = [(np.zeros((2, 3), np.float32), "tensor<4xf32>"), (np.zeros((2, 3), np.int32), "tensor<4xi32>")]
        if _jaxlib.jaxlib_at_least("0.10.2"):
            bad += [(np.zeros(5, np.bool_), "tensor<4xi1>"), (np.ones(8, np.bool_), "tensor<4xi1>")]
        for array, type_ in bad:
            with pytest.raises(ValueError, match="could not be constructed"):
                _jaxlib.dense_elements_attr(array, ir.Type.parse(type_))


@pytest.mark.parametrize("cudart, cudnn, want", [
    (12090, 90800, ("12.9.0", "9.8.0")),
    (13000, 91002, ("13.0.0", "9.10.2")),
    (13020, 100101, ("13.2.0", "10.1.1")),
])
def test_plugin_build_versions_are_dotted_as_nvidia_numbers_them(cudart, cudnn, want, monkeypatch):
    """CUDART_VERSION is 1000 * major + 10 * minor, CUDNN_VERSION 10000 * major + 100 * minor +
    patch (cuDNN 9): each read as a dotted version, whatever plugin reports them."""
    import sys
    import types

    name = f"fake_cuda_plugin_{cudart}_{cudnn}"
    versions = types.ModuleType(f"{name}._versions")
    versions.cuda_runtime_build_version = lambda: cudart
    versions.cudnn_build_version = lambda: cudnn
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, f"{name}._versions", versions)
    assert _jaxlib._build_versions(name) == (("cuda", want[0]), ("cudnn", want[1]))


# ------------------------------------------------------------------ CUDA plugin


def test_cuda_plugin_names_derive_from_the_distribution():
    """A plugin's module, jax_plugins directory and jax extra follow its CUDA major."""
    p12 = jaxlib.CudaPlugin("jax-cuda12-plugin", "0.12.0.1")
    assert (p12.cuda_major, p12.module, p12.namespace_dir, p12.extra) == (
        12, "jax_cuda12_plugin", "xla_cuda12", "cuda12-local")
    p13 = jaxlib.CudaPlugin("jax-cuda13-plugin", None)
    assert (p13.cuda_major, p13.module, p13.namespace_dir, p13.extra) == (
        13, "jax_cuda13_plugin", "xla_cuda13", "cuda13-local")


@pytest.mark.parametrize(("cuda12", "cuda13", "expected"), [
    (None, None, ("jax-cuda12-plugin", None)),  # none installed: the README's one, absent
    (JAXLIB, None, ("jax-cuda12-plugin", JAXLIB)),
    (None, JAXLIB, ("jax-cuda13-plugin", JAXLIB)),
    (JAXLIB, JAXLIB, ("jax-cuda13-plugin", JAXLIB)),  # both match: CUDA 13 first
    ("0.9.0", JAXLIB, ("jax-cuda13-plugin", JAXLIB)),
    (JAXLIB, "0.9.0", ("jax-cuda12-plugin", JAXLIB)),  # the matching one beats the newer CUDA
    ("0.9.0", None, ("jax-cuda12-plugin", "0.9.0")),  # only a mismatched one: that one
    ("0.9.0", "0.9.1", ("jax-cuda13-plugin", "0.9.1")),
])
def test_cuda_plugin_prefers_a_match_then_cuda13(cuda12, cuda13, expected):
    """cuda_plugin: one at jaxlib's version (CUDA 13 first), else an installed one, else cuda12."""
    plugin = jaxlib.cuda_plugin(_found(cuda12=cuda12, cuda13=cuda13))
    assert (plugin.dist, plugin.version) == expected


def test_cuda_plugin_reads_installed_versions_by_default(versions):
    """Without an argument cuda_plugin asks installed_versions()."""
    versions.update({"jax-cuda13-plugin": "0.9.0", "jax-cuda12-plugin": None})
    assert jaxlib.cuda_plugin() == jaxlib.CudaPlugin("jax-cuda13-plugin", "0.9.0")


def test_installed_versions_names_jax_jaxlib_and_both_plugins():
    """installed_versions: the installed jax and jaxlib, and an entry for each CUDA plugin."""
    found = jaxlib.installed_versions()
    assert set(found) == {"jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin",
                          "jax-cuda12-plugin copy", "jax-cuda13-plugin copy"}
    import jax as jax_module
    import jaxlib as jaxlib_package

    assert found["jax"] == jax_module.__version__
    assert found["jaxlib"] == jaxlib_package.__version__
    found["jax"] = "changed"  # a copy: the process's record stays
    assert jaxlib.installed_versions()["jax"] == jax_module.__version__


# --------------------------------------------------------------------- versions


@pytest.mark.parametrize(("version", "expected"), [
    ("0.9.0.1", (0, 9, 0, 1)),
    ("0.10.0rc1", (0, 10, 0)),
    ("0.12.0.dev20250101", (0, 12, 0)),
    ("1.2.3+cuda12", (1, 2, 3)),
    ("10", (10,)),
    ("abc", ()),
    ("0.x.1", (0,)),
])
def test_version_tuple_keeps_the_release_numbers(version, expected):
    """version_tuple: the leading release numbers, up to a suffix or a local part."""
    assert jaxlib.version_tuple(version) == expected


@pytest.mark.parametrize(("version", "expected"), [
    ("0.8.9", False), ("0.9.0", True), ("0.9.0rc1", True), ("0.10.2", True),
    ("0.12.0.1", True), ("0.12.0.2", False), ("0.12.1", False), ("0.12.0", True),
])
def test_in_supported_range_includes_both_ends(version, expected):
    """The supported range is SUPPORTED_MIN..SUPPORTED_MAX, both inclusive."""
    assert (jaxlib.SUPPORTED_MIN, jaxlib.SUPPORTED_MAX) == ("0.9.0", "0.12.0.1")
    assert jaxlib.in_supported_range(version) is expected


@pytest.mark.parametrize(("installed", "asked", "expected"), [
    ("0.10.2", "0.10.2", True), ("0.10.2", "0.10.1", True), ("0.10.2", "0.10.3", False),
    ("0.10.2", "0.11.0", False), ("0.12.0.1", "0.12.0", True),
])
def test_jaxlib_at_least_compares_release_numbers(monkeypatch, installed, asked, expected):
    """jaxlib_at_least: the installed jaxlib is the asked version or newer."""
    monkeypatch.setattr(jaxlib, "jaxlib_version", lambda: installed)
    assert jaxlib.jaxlib_at_least(asked) is expected


def test_jaxlib_version_is_the_installed_one_else_the_newest_supported(monkeypatch):
    """jaxlib_version: the installed jaxlib's version; SUPPORTED_MAX where none is recorded."""
    uncached = jaxlib.jaxlib_version.__wrapped__
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(lib="0.10.2"))
    assert uncached() == "0.10.2"
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(lib=None))
    assert uncached() == jaxlib.SUPPORTED_MAX
    monkeypatch.undo()
    import jaxlib as jaxlib_package

    assert jaxlib.jaxlib_version() == jaxlib_package.__version__


def test_check_versions_passes_a_supported_pair(versions):
    """Supported jax and jaxlib: check_versions says nothing, plugin or not."""
    versions["jax-cuda12-plugin"] = None
    assert jaxlib.check_versions() is None


@pytest.mark.parametrize(("jax", "lib", "cuda13", "have", "extra"), [
    ("0.8.0", JAXLIB, None, "jax 0.8.0", "cuda12-local"),
    (JAXLIB, "0.13.0", None, "jaxlib 0.13.0", "cuda12-local"),
    (None, None, JAXLIB, "jax not installed, jaxlib not installed", "cuda13-local"),
    ("0.8.0", None, None, "jax 0.8.0, jaxlib not installed", "cuda12-local"),
])
@pytest.mark.golden
def test_check_versions_names_what_is_outside_the_range(versions, jax, lib, cuda13, have, extra):
    """check_versions: the message names each bad package; the hint installs a supported jax.
    The family's golden table."""
    versions.update({"jax": jax, "jaxlib": lib, "jax-cuda13-plugin": cuda13, "jax-cuda12-plugin": None})
    with pytest.raises(EnvironmentMismatch) as e:
        jaxlib.check_versions()
    assert e.value.message == f"mlirhlo-driver supports jax/jaxlib 0.9.0 to 0.12.0.1, found {have}"
    assert e.value.hint == f"pip install 'jax[{extra}]>=0.9.0,<=0.12.0.1'"


@pytest.mark.golden
def test_check_cuda_plugin_accepts_only_jaxlibs_exact_version(versions):
    """check_cuda_plugin: silent for a plugin at jaxlib's version, else the pip command that fixes it.
    The family's golden test."""
    assert jaxlib.check_cuda_plugin() is None
    versions["jax-cuda12-plugin"] = "0.12.0"
    with pytest.raises(EnvironmentMismatch) as e:
        jaxlib.check_cuda_plugin()
    assert e.value.message == ("jax-cuda12-plugin 0.12.0 does not match jaxlib 0.12.0.1; "
                               "CUDA needs the plugin at jaxlib's exact version")
    assert e.value.hint == "pip install jax-cuda12-plugin==0.12.0.1"
    versions["jax-cuda12-plugin"] = None
    with pytest.raises(EnvironmentMismatch) as e:
        jaxlib.check_cuda_plugin()
    assert e.value.message == ("jax-cuda12-plugin is not installed (jaxlib 0.12.0.1); "
                               "CUDA needs the plugin at jaxlib's exact version")
    assert e.value.hint == "mlirhlo cuda-plugin install"
    versions["jax-cuda13-plugin"] = "0.11.0"
    with pytest.raises(EnvironmentMismatch) as e:
        jaxlib.check_cuda_plugin()
    assert e.value.hint == "pip install jax-cuda13-plugin==0.12.0.1"


@pytest.mark.parametrize(("found", "expected"), [
    (_found(cuda12=JAXLIB), ["jax 0.12.0.1", "jaxlib 0.12.0.1", "jax-cuda12-plugin 0.12.0.1"]),
    (_found(), ["jax 0.12.0.1", "jaxlib 0.12.0.1",
                "jax-cuda12-plugin not installed (CUDA needs it at jaxlib's version: mlirhlo cuda-plugin install)"]),
    (_found(jax=None, lib="0.8.0", cuda12="0.8.0"),
     ["jax not installed", "jaxlib 0.8.0 (unsupported: 0.9.0 to 0.12.0.1 are)", "jax-cuda12-plugin 0.8.0"]),
    (_found(cuda12="0.10.2"),
     ["jax 0.12.0.1", "jaxlib 0.12.0.1", "jax-cuda12-plugin 0.10.2 (does not match jaxlib 0.12.0.1: "
      "CUDA needs jax-cuda12-plugin==0.12.0.1)"]),
    (_found(cuda12=JAXLIB, cuda13=JAXLIB),
     ["jax 0.12.0.1", "jaxlib 0.12.0.1", "jax-cuda13-plugin 0.12.0.1",
      "jax-cuda12-plugin 0.12.0.1 (installed, not used)"]),
    (_found(cuda12=JAXLIB, cuda13="0.9.0"),
     ["jax 0.12.0.1", "jaxlib 0.12.0.1", "jax-cuda12-plugin 0.12.0.1",
      "jax-cuda13-plugin 0.9.0 (installed, not used)"]),
])
@pytest.mark.golden
def test_version_lines_say_what_is_wrong_with_each(monkeypatch, found, expected):
    """version_lines: one line per package, with what is unsupported, missing or mismatched.
    The golden table of those notes (``mlirhlo --version``)."""
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: dict(found))
    assert jaxlib.version_lines() == expected


# ---------------------------------------------------------- native library paths


def test_native_library_path_finds_jaxlibs_common_library():
    """native_library_path('jaxlib'): libjax_common.so inside the installed jaxlib."""
    import jaxlib as jaxlib_package

    path = jaxlib.native_library_path("jaxlib")
    assert path == os.path.join(os.path.dirname(jaxlib_package.__file__), "libjax_common.so")
    assert os.path.isfile(path)


def test_native_library_path_of_the_cuda_plugin_follows_the_plugin_in_use(monkeypatch, tmp_path):
    """native_library_path('cuda_plugin'): xla_cuda_plugin.so in the plugin's jax_plugins directory."""
    import importlib.util

    for name in ("xla_cuda12", "xla_cuda13"):
        (tmp_path / "b" / name).mkdir(parents=True)
        (tmp_path / "b" / name / "xla_cuda_plugin.so").write_bytes(b"")
    (tmp_path / "a").mkdir()
    spec = types.SimpleNamespace(submodule_search_locations=[str(tmp_path / "a"), str(tmp_path / "b")])
    asked = []
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: asked.append(name) or spec)
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(cuda13=JAXLIB))
    assert jaxlib.native_library_path("cuda_plugin") == str(tmp_path / "b" / "xla_cuda13" / "xla_cuda_plugin.so")
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(cuda12=JAXLIB))
    assert jaxlib.native_library_path("cuda_plugin") == str(tmp_path / "b" / "xla_cuda12" / "xla_cuda_plugin.so")
    assert asked == ["jax_plugins", "jax_plugins"]
    spec.submodule_search_locations = [str(tmp_path / "a")]
    assert jaxlib.native_library_path("cuda_plugin") is None


def test_native_library_path_is_none_when_not_installed(monkeypatch):
    """A package that is not installed (no spec, or a spec without locations): None."""
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert jaxlib.native_library_path("jaxlib") is None
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: types.SimpleNamespace(submodule_search_locations=None))
    assert jaxlib.native_library_path("jaxlib") is None


def test_native_library_path_refuses_an_unknown_library():
    """Only 'jaxlib' and 'cuda_plugin' are known."""
    with pytest.raises(ValueError, match="native library 'cuda'"):
        jaxlib.native_library_path("cuda")


@pytest.mark.parametrize("line", _NOISE)
def test_is_native_noise_recognises_known_noise(line):
    """Each known noise line is noise, and is dropped from native output."""
    assert jaxlib.is_native_noise(line) is True
    assert jaxlib.without_native_noise(f"before\n{line}\nafter\n") == ["before", "after"]


@pytest.mark.parametrize("line", _NOT_NOISE)
def test_is_native_noise_keeps_other_lines(line):
    """Anything else is kept as is."""
    assert jaxlib.is_native_noise(line) is False
    assert jaxlib.without_native_noise(f"before\n{line}\nafter") == ["before", line, "after"]


def test_without_native_noise_drops_status_logs_and_their_traces():
    """A RET_CHECK status log, its stack trace and its source-location trace all go; the rest stays."""
    text = "\n".join([
        "first",
        "E0101 12:00:00.123456    4242 status_macros.cc:57] INTERNAL: RET_CHECK failure",
        "*** Begin stack trace ***",
        "\tframe one",
        "E0101 12:00:00.123456    4242 other.cc:1] inside the trace",
        "*** End stack trace ***",
        "second",
        "  === Source Location Trace: ===  ",
        "xla/service/foo.cc:12",
        "  xla/service/bar.cc:34  ",
        "third",
        "xla/service/baz.cc:56",
        "=== Source Location Trace: ===",
        "not a location",
        "\x00\x00last",
    ])
    assert jaxlib.without_native_noise(text) == [
        "first", "second", "third", "xla/service/baz.cc:56", "not a location", "last"]


def test_without_native_noise_of_a_trace_that_never_ends_drops_the_rest():
    """An unterminated stack trace swallows what follows it."""
    assert jaxlib.without_native_noise("a\n*** Begin stack trace ***\nb\nc") == ["a"]
    assert jaxlib.without_native_noise("") == []


def test_replay_native_stderr_writes_what_is_left(capsys):
    """replay_native_stderr: the kept lines on stderr, one newline at the end; nothing for blank or noise."""
    jaxlib.replay_native_stderr(f"{_NOISE[0]}\nkept one\n\n{_NOISE[2]}\nkept two")
    assert capsys.readouterr().err == "kept one\n\nkept two\n"
    jaxlib.replay_native_stderr(f"{_NOISE[0]}\n\n   \n{_NOISE[1]}\n")
    assert capsys.readouterr().err == ""


def test_filtered_native_stderr_replays_fd2_without_noise(capfd):
    """Within filtered_native_stderr fd 2 is held back, then replayed minus noise, even on an error."""
    with jaxlib.filtered_native_stderr():
        os.write(2, f"{_NOISE[1]}\nnative says hi\n".encode())
        assert capfd.readouterr().err == ""
    assert capfd.readouterr().err == "native says hi\n"
    with pytest.raises(KeyError), jaxlib.filtered_native_stderr():
        os.write(2, b"before the error\n")
        raise KeyError("x")
    assert capfd.readouterr().err == "before the error\n"


@pytest.mark.slow
def test_importing_jax_changes_nothing_of_the_users_process(import_jax_cases):
    """Before anything runs there are no native threads; importing jax through the driver sets
    no platform (the user's JAX_PLATFORMS stays as it is), no environment variable, and starts
    no backend (so jax's plugin discovery runs only when the user's own code starts it)."""
    assert import_jax_cases == [[False, None, True, []], [False, "cpu,cuda", True, []]]


def test_import_jax_silences_jaxs_warning_about_a_mismatched_plugin():
    """A plugin the driver knows is foreign: jax's 'will not be used' warning is not shown (it is otherwise)."""
    import importlib.util

    # Installed in site-packages, where the child process finds it (the driver's copy is
    # importable only in a process that chose it, and not at the faked versions).
    site = dict(jaxlib._read_installed_versions())
    installed = [d.replace("-", "_") for d in jaxlib.CUDA_PLUGIN_DISTS if site.get(d)]
    if not installed or not importlib.util.find_spec("jaxlib.plugin_support"):
        pytest.skip("needs a jax CUDA plugin installed, and jaxlib's plugin version check")
    dist = installed[0].replace("_", "-")
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    procs = [subprocess.Popen([sys.executable, "-c", _PLUGIN_WARNING, dist, case], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for case in ("mismatch", "match")]
    counts = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        counts.append(int(out.split()[-1]))
    assert counts[0] == 0 and counts[1] > 0


def test_jax_configures_nothing_and_starts_no_backend(monkeypatch):
    """jax(): jax imported, quietly; no config set, no devices asked for (which would start
    every backend jax discovers)."""
    fake = types.SimpleNamespace(config=types.SimpleNamespace(update=lambda k, v: pytest.fail(f"set {k}")),
                                 devices=lambda *a: pytest.fail("started a backend"))
    monkeypatch.setattr(jaxlib, "_import_jax", lambda: fake)
    assert jaxlib.jax.__wrapped__() is fake


def test_cpu_devices_are_the_drivers_own_client_per_count():
    """cpu_devices(n): n devices of a client the driver made for that count, whatever jax's
    CPU backend has (it is never started or configured); one client per count."""
    from jax._src import xla_bridge

    four = jaxlib.cpu_devices(4)
    assert [d.id for d in four] == [0, 1, 2, 3] and {d.platform for d in four} == {"cpu"}
    assert jaxlib.cpu_devices(4)[0].client is four[0].client
    assert jaxlib.cpu_devices(1)[0].client is not four[0].client and len(jaxlib.cpu_devices()) == 1
    assert four[0].client is not getattr(xla_bridge._backends.get("cpu"), "_client", None)
    assert jaxlib.local_device_order(2) == jaxlib.cpu_devices(2)


def test_x64_is_on_only_inside_and_the_callers_setting_stays():
    """x64(True): jax keeps 64-bit types inside the block only; x64(False) changes nothing."""
    jax = jaxlib.jax()
    import jax.numpy as jnp

    before = jax.config.jax_enable_x64
    with jaxlib.x64(True):
        assert jnp.zeros(1, "float64").dtype == "float64"
    assert jax.config.jax_enable_x64 == before
    with jaxlib.x64(False):
        assert jnp.zeros(1, "float32").dtype == "float32"
    assert jax.config.jax_enable_x64 == before


# ---------------------------------------------------------------- jaxlib versions


def test_dense_elements_attr_packs_i1_bits_for_old_jaxlibs(monkeypatch):
    """i1 attributes: bytes first; where refused, bits packed little-endian, but only before jaxlib 0.10.2."""
    from jaxlib.mlir import ir

    got = []

    class FakeAttr:
        @staticmethod
        def get(a, type=None):  # noqa: A002  (ir's keyword)
            got.append((a.dtype, a.tolist(), type))
            if a.dtype != np.uint8:
                raise ValueError("refused")
            return "attr"

    monkeypatch.setattr(ir, "DenseElementsAttr", FakeAttr)
    monkeypatch.setattr(jaxlib, "jaxlib_version", lambda: "0.10.1")
    bits = np.array([True, False, False, True, True, False, False, False, True])
    assert jaxlib.dense_elements_attr(bits, "i1") == "attr"
    assert got[-1] == (np.uint8, [0b00011001, 0b1], "i1")
    with pytest.raises(ValueError, match="refused"):  # not i1: XLA's refusal stands
        jaxlib.dense_elements_attr(np.array([1.5], np.float32), "f32")
    monkeypatch.setattr(jaxlib, "jaxlib_version", lambda: "0.10.2")
    got.clear()
    with pytest.raises(ValueError, match="refused"):
        jaxlib.dense_elements_attr(bits, "i1")
    assert len(got) == 1


def test_dense_elements_attr_makes_a_real_attribute():
    """A host array becomes the DenseElementsAttr of its values."""
    from jaxlib.mlir import ir

    with jaxlib.ir_context(), ir.Location.unknown():
        t = ir.RankedTensorType.get([3], ir.IntegerType.get_signless(32))
        attr = jaxlib.dense_elements_attr(np.array([1, 2, 3], np.int32), t)
        assert str(attr) == "dense<[1, 2, 3]> : tensor<3xi32>"
        b = ir.RankedTensorType.get([2], ir.IntegerType.get_signless(1))
        assert str(jaxlib.dense_elements_attr(np.array([True, False]), b)) == "dense<[true, false]> : tensor<2xi1>"


@pytest.mark.parametrize(("version", "expected"), [
    ("0.10.1", ("jaxlib._jax",)), ("0.10.2", ("jaxlib._hlo", "jaxlib._jax")),
    ("0.12.0.1", ("jaxlib._hlo", "jaxlib._jax")),
])
def test_isolated_preload_follows_where_hlo_module_lives(monkeypatch, version, expected):
    """ISOLATED_PRELOAD: jaxlib._hlo from 0.10.2 (where HloModule moved), always jaxlib._jax."""
    monkeypatch.setattr(jaxlib, "jaxlib_version", lambda: version)
    assert jaxlib.ISOLATED_PRELOAD == expected


def test_hlo_lib_is_the_module_with_hlo_module():
    """hlo_lib: the installed jaxlib's module holding HloModule."""
    assert jaxlib.hlo_lib().__name__ == ("jaxlib._hlo" if jaxlib.jaxlib_at_least("0.10.2") else "jaxlib._jax")
    assert hasattr(jaxlib.hlo_lib(), "hlo_module_from_text")


def test_unknown_module_attribute_is_an_attribute_error():
    """Only ISOLATED_PRELOAD is computed on use; other names are AttributeErrors."""
    with pytest.raises(AttributeError, match="has no attribute 'NOPE'"):
        jaxlib.NOPE  # noqa: B018


@pytest.mark.parametrize(("version", "expected"), [("0.10.2", False), ("0.11.0", True), ("0.12.0.1", True)])
def test_codegen_dumps_need_emitters_from_jaxlib_0_11(monkeypatch, version, expected):
    """jaxlib 0.11 and later dump LLVM IR and PTX per emitter."""
    monkeypatch.setattr(jaxlib, "jaxlib_version", lambda: version)
    assert jaxlib.codegen_dumps_need_emitters() is expected


@pytest.mark.parametrize(("per_emitter", "args", "kwargs", "expected"), [
    (True, (), {}, {"xla_dump_emitter_re": "^(?:llvm|ptx)$"}),
    (True, ("user.*",), {}, {"xla_dump_emitter_re": "^(?:llvm|ptx)$|user.*"}),
    (True, (None, ("triton-fusion", "a.b")), {"ptx": False},
     {"xla_dump_emitter_re": r"^(?:llvm|triton\-fusion|a\.b)$"}),
    (True, (), {"llvm": False}, {"xla_dump_emitter_re": "^(?:ptx)$"}),
    (True, (), {"llvm": False, "ptx": False}, {}),
    (True, ("u",), {"llvm": False, "ptx": False}, {"xla_dump_emitter_re": "u"}),
    (False, (), {}, {}),
    (False, ("u",), {}, {"xla_dump_emitter_re": "u"}),
    (False, ("",), {}, {}),
    (False, ("u", ("triton-to-llvm",)), {}, {"xla_dump_emitter_re": r"^(?:triton\-to\-llvm)$|u"}),
])
def test_codegen_dump_flags(monkeypatch, per_emitter, args, kwargs, expected):
    """codegen_dump_flags: our emitters (llvm/ptx where needed, then the asked ones), then the user's regex."""
    monkeypatch.setattr(jaxlib, "codegen_dumps_need_emitters", lambda: per_emitter)
    assert jaxlib.codegen_dump_flags(*args, **kwargs) == expected


# ------------------------------------------------------------------ CUDA bridge


def test_native_threads_started_by_the_driver_or_a_jax_backend(monkeypatch):
    """native_threads_started: after the driver loaded a plugin or compiled, or once jax has backends."""
    monkeypatch.setattr(jaxlib, "_native_threads", False)
    monkeypatch.setitem(sys.modules, "jax._src.xla_bridge", types.SimpleNamespace(_backends={}))
    assert jaxlib.native_threads_started() is False
    monkeypatch.setitem(sys.modules, "jax._src.xla_bridge", types.SimpleNamespace(_backends={"cpu": 1}))
    assert jaxlib.native_threads_started() is True
    monkeypatch.delitem(sys.modules, "jax._src.xla_bridge")
    assert jaxlib.native_threads_started() is False
    jaxlib._started_native_threads()
    assert jaxlib.native_threads_started() is True


def test_register_cuda_targets_registers_the_plugins_handlers_types_and_targets(monkeypatch):
    """The plugin's custom-type/call handlers, FFI types and FFI handlers go to XLA for CUDA."""
    def rct(*a):
        return a

    def rcct(*a):
        return a

    ext = types.SimpleNamespace(register_custom_type=rct, register_custom_call_target=rcct,
                                ffi_types=lambda: {"t1": 1, "t2": 2}, ffi_handlers=lambda: {"h1": 3})
    monkeypatch.setitem(sys.modules, "jax_cuda12_plugin.cuda_plugin_extension", ext)
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(cuda12=JAXLIB))
    xc = _Recorder()
    jaxlib._register_cuda_targets(xc, "CAPI")
    (n1, a1, k1), (n2, a2, k2), *rest = xc.calls
    assert (n1, a1[0], k1, a1[1].func, a1[1].args) == ("register_custom_type_handler", "CUDA", {}, rct, ("CAPI",))
    assert (n2, a2[0], k2, a2[1].func, a2[1].args) == ("register_custom_call_handler", "CUDA", {}, rcct, ("CAPI",))
    assert rest == [
        ("register_custom_type", ("t1", 1), {"platform": "CUDA"}),
        ("register_custom_type", ("t2", 2), {"platform": "CUDA"}),
        ("register_custom_call_target", ("h1", 3), {"platform": "CUDA", "api_version": 1}),
    ]
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(cuda13=JAXLIB))
    xc = _Recorder()
    monkeypatch.setitem(sys.modules, "jax_cuda13_plugin.cuda_plugin_extension", None)  # ImportError
    jaxlib._register_cuda_targets(xc, "CAPI")
    assert xc.calls == []


def test_a_users_own_plugin_is_loaded_by_jaxs_discovery(monkeypatch):
    """A plugin in site-packages (the user's jax CUDA environment) is loaded as jax loads it, by
    jax's discovery, and that c_api is used: the user's jax then finds it loaded, not refused."""
    from jax._src import xla_bridge

    monkeypatch.setattr(jaxlib, "cuda_plugin", lambda found=None: jaxlib.CudaPlugin("jax-cuda12-plugin", JAXLIB))
    monkeypatch.setattr(jaxlib, "_xla_client", lambda: pytest.fail("loaded the plugin again"))
    discovered = []
    monkeypatch.setattr(xla_bridge, "_discover_and_register_pjrt_plugins",
                        lambda: discovered.append(dict(os.environ)), raising=False)
    monkeypatch.setattr(xla_bridge, "_backend_factories", {"cuda": types.SimpleNamespace(c_api="jax's")},
                        raising=False)
    # Every version's plugin checks CUDA and cuDNN as it registers (0.12's cuda13: "cuDNN not found")
    monkeypatch.delenv("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", raising=False)
    assert jaxlib._load_cuda_c_api.__wrapped__() == "jax's"
    assert [e.get("JAX_SKIP_CUDA_CONSTRAINTS_CHECK") for e in discovered] == ["1"]
    assert "JAX_SKIP_CUDA_CONSTRAINTS_CHECK" not in os.environ  # set for the discovery only


def test_the_drivers_copy_of_the_plugin_is_loaded_here(monkeypatch):
    """The driver's copy (which jax never discovers): the plugin library is loaded here, its
    targets registered; jax's discovery is not run."""
    from jax._src import xla_bridge

    copy = types.SimpleNamespace(path="/share/copy")
    monkeypatch.setattr(jaxlib, "cuda_plugin",
                        lambda found=None: jaxlib.CudaPlugin("jax-cuda12-plugin", JAXLIB, copy))
    monkeypatch.setattr(jaxlib, "_use_plugin_copy", lambda: None)
    monkeypatch.setattr(xla_bridge, "_discover_and_register_pjrt_plugins", lambda: pytest.fail("discovered"),
                        raising=False)
    monkeypatch.setattr(jaxlib, "_native_threads", False)
    xc = _Recorder()
    monkeypatch.setattr(jaxlib, "_xla_client", lambda: xc)
    monkeypatch.setattr(jaxlib, "native_library_path", lambda name: f"/lib/{name}.so")
    registered = []
    monkeypatch.setattr(jaxlib, "_register_cuda_targets", lambda x, c: registered.append((x, c)))
    assert jaxlib._load_cuda_c_api.__wrapped__() == "load_pjrt_plugin_dynamically-result"
    assert xc.calls == [("load_pjrt_plugin_dynamically", ("cuda", "/lib/cuda_plugin.so"), {})]
    assert registered == [(xc, "load_pjrt_plugin_dynamically-result")]
    assert jaxlib._native_threads is True


def test_cuda_c_api_checks_the_plugin_every_call(monkeypatch):
    """cuda_c_api refuses a mismatched plugin before loading anything."""
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(cuda12="0.9.0"))
    monkeypatch.setattr(jaxlib, "_load_cuda_c_api", lambda: pytest.fail("loaded"))
    with pytest.raises(EnvironmentMismatch):
        jaxlib.cuda_c_api()
    monkeypatch.setattr(jaxlib, "installed_versions", lambda: _found(cuda12=JAXLIB))
    monkeypatch.setattr(jaxlib, "_load_cuda_c_api", lambda: "capi")
    assert jaxlib.cuda_c_api() == "capi"


def test_cuda_compile_only_devices_from_a_target_config(monkeypatch):
    """cuda_compile_only_devices: a 1x1x1 compile-only topology of the plugin for the target config."""
    made = []

    class Topo:
        def _make_compile_only_devices(self):
            return ("d0", "d1")

    xc = types.SimpleNamespace(make_c_api_device_topology=lambda *a, **k: made.append((a, k)) or Topo())
    monkeypatch.setattr(jaxlib, "_xla_client", lambda: xc)
    monkeypatch.setattr(jaxlib, "cuda_c_api", lambda: "capi")
    assert jaxlib.cuda_compile_only_devices("gpu_device_info {}") == ["d0", "d1"]
    assert jaxlib.cuda_compile_only_devices("cfg", name="other") == ["d0", "d1"]
    assert made == [(("capi", "mlirhlo"), {"target_config": "gpu_device_info {}", "topology": "1x1x1"}),
                    (("capi", "other"), {"target_config": "cfg", "topology": "1x1x1"})]


def test_plugin_build_versions_reads_the_plugins_versions_extension(monkeypatch):
    """CUDA runtime 12090 -> 12.9.0 and cuDNN 91002 -> 9.10.2, from the plugin module in use."""
    versions = types.SimpleNamespace(cuda_runtime_build_version=lambda: 12090, cudnn_build_version=lambda: 91002)
    monkeypatch.setitem(sys.modules, "fake_v_plugin_a._versions", versions)
    monkeypatch.setattr(jaxlib, "cuda_plugin", lambda: types.SimpleNamespace(module="fake_v_plugin_a", copy=None))
    assert jaxlib.plugin_build_versions() == {"cuda": "12.9.0", "cudnn": "9.10.2"}
    versions = types.SimpleNamespace(cuda_runtime_build_version=lambda: 13105, cudnn_build_version=lambda: 81234)
    monkeypatch.setitem(sys.modules, "fake_v_plugin_b._versions", versions)
    monkeypatch.setattr(jaxlib, "cuda_plugin", lambda: types.SimpleNamespace(module="fake_v_plugin_b", copy=None))
    assert jaxlib.plugin_build_versions() == {"cuda": "13.10.0", "cudnn": "8.12.34"}


def test_plugin_build_versions_is_empty_when_it_cannot_say(monkeypatch):
    """No plugin module, an extension that fails, or no plugin at all: {}."""
    broken = types.SimpleNamespace(cuda_runtime_build_version=lambda: 1 / 0, cudnn_build_version=lambda: 1)
    monkeypatch.setitem(sys.modules, "fake_v_plugin_c._versions", broken)
    monkeypatch.setattr(jaxlib, "cuda_plugin", lambda: types.SimpleNamespace(module="fake_v_plugin_c"))
    assert jaxlib.plugin_build_versions() == {}
    monkeypatch.setattr(jaxlib, "cuda_plugin", lambda: types.SimpleNamespace(module="fake_v_plugin_none"))
    assert jaxlib.plugin_build_versions() == {}

    def no_plugin():
        raise RuntimeError("x")

    monkeypatch.setattr(jaxlib, "cuda_plugin", no_plugin)
    assert jaxlib.plugin_build_versions() == {}


def _cuda_client(monkeypatch, make) -> None:
    """cuda_devices' CUDA client made by ``make(*args)``, without jax or the plugin."""
    from jax._src.lib import xla_client

    monkeypatch.setattr(jaxlib, "jax", lambda: None)
    monkeypatch.setattr(jaxlib, "cuda_c_api", lambda: "capi")
    monkeypatch.setattr(xla_client, "generate_pjrt_gpu_plugin_options", lambda: {"opt": 1})
    monkeypatch.setattr(xla_client, "make_c_api_client", make)


def _no_visible_gpu(*a):
    raise RuntimeError("FAILED_PRECONDITION: No visible GPU devices.\nmore detail")


def test_cuda_devices_returns_the_cuda_clients_devices(monkeypatch):
    """cuda_devices: the CUDA client's devices; none is NoGpu; a client that fails is NoGpu with its first line."""
    from mlirhlo_driver.errors import NoGpu

    made = []
    client = types.SimpleNamespace(devices=lambda: ("gpu0", "gpu1"))
    _cuda_client(monkeypatch, lambda *a: made.append(a) or client)
    assert jaxlib.cuda_devices.__wrapped__() == ["gpu0", "gpu1"]
    assert made == [("cuda", {"opt": 1})]
    client.devices = lambda: ()
    with pytest.raises(NoGpu) as e:
        jaxlib.cuda_devices.__wrapped__()
    assert_mentions(str(e.value), "platform='cuda'", "NVIDIA GPU", "found none")

    _cuda_client(monkeypatch, _no_visible_gpu)
    with pytest.raises(NoGpu) as e:
        jaxlib.cuda_devices.__wrapped__()
    assert_mentions(spell(e.value.message), "platform='cuda'", "No visible GPU devices.")
    assert "FAILED_PRECONDITION" not in e.value.message and "more detail" not in e.value.message
    assert_mentions(e.value.hint, "device-less", "mlirhlo opt --platform cuda")


@pytest.mark.golden
@pytest.mark.parametrize("make, message, hint", [
    (lambda *a: types.SimpleNamespace(devices=lambda: ()),
     "platform='cuda' needs an NVIDIA GPU; the CUDA plugin found none", None),
    (_no_visible_gpu,
     "platform='cuda' needs an NVIDIA GPU and driver to run on; none is usable here: No visible GPU devices.",
     "compile device-less with 'mlirhlo opt --platform cuda' instead"),
], ids=["none-found", "client-fails"])
def test_no_gpu_messages_exactly(monkeypatch, make, message, hint):
    """cuda_devices' NoGpu, word for word (as params are spelled)."""
    from mlirhlo_driver.errors import NoGpu

    _cuda_client(monkeypatch, make)
    with pytest.raises(NoGpu) as e:
        jaxlib.cuda_devices.__wrapped__()
    assert (spell(e.value.message), e.value.hint) == (message, hint)


@pytest.mark.parametrize(("platform", "loads", "expected"), [
    ("cpu", True, "compile_and_load"), ("cuda", True, "compile"), ("cpu", False, "compile"),
])
def test_compile_executable_loads_only_on_cpu(fake_xla, capfd, platform, loads, expected):
    """CPU compiles are loaded (where the client can); CUDA compiles are compile-only; the log is kept."""
    client = _FakeClient(loads=loads)
    devices = [types.SimpleNamespace(client=client, platform=platform), types.SimpleNamespace()]
    log = []
    assert jaxlib.compile_executable("module", devices, "opts", native_log=log) == f"{expected} executable"
    assert client.calls == [(expected, "module", tuple(devices), "opts")]
    assert log == [f"{_NOISE[0]}\nxla logged {expected}\n"]
    assert capfd.readouterr().err == f"xla logged {expected}\n"
    assert jaxlib.native_threads_started() is True


def test_compile_executable_failure_is_a_compile_error_with_the_native_log(fake_xla, capfd):
    """A failed compile: CompileError without the status code, carrying what XLA logged; nothing replayed."""
    client = _FakeClient(fail=RuntimeError("INVALID_ARGUMENT: bad module\n"))
    devices = [types.SimpleNamespace(client=client, platform="cpu")]
    log = []
    with pytest.raises(CompileError) as e:
        jaxlib.compile_executable("module", devices, "opts", native_log=log)
    assert e.value.message == "bad module"
    assert e.value.native_log == f"{_NOISE[0]}\nxla logged compile_and_load\n"
    assert log == [e.value.native_log]
    assert capfd.readouterr().err == ""
    client = _FakeClient(fail=RuntimeError("lower case: kept"))
    with pytest.raises(CompileError) as e:
        jaxlib.compile_executable("module", [types.SimpleNamespace(client=client, platform="cuda")], "opts")
    assert e.value.message == "lower case: kept"


@pytest.mark.golden
def test_a_failed_compile_of_xlas_own_output_message_exactly(fake_xla, tmp_path):
    """XLA's optimized module (an HloSnapshot of its executable, alone: fusions) that the
    compile fails: said for what it is, with the file to give instead; XLA's words stay in the log."""
    import shutil

    import mlirhlo_driver as mh
    from tests.conftest import DATA

    alone = tmp_path / "module_0008.jit__lambda.snapshot.75718513.pb"  # no before_optimizations dump beside it
    shutil.copy(DATA / "xla_tools/snapshot" / alone.name, alone)
    fused = mh.load(str(alone)).module
    client = _FakeClient(fail=RuntimeError("INTERNAL: RET_CHECK failure Fusion must have backend config"))
    with pytest.raises(CompileError) as e:
        jaxlib.compile_executable(fused, [types.SimpleNamespace(client=client, platform="cpu")], "opts")
    assert (e.value.message, e.value.hint) == (
        "XLA cannot compile this module: it is XLA's output after its optimizations, and this jaxlib does "
        "not compile its fusions again",
        "give the dump's *.before_optimizations.txt, which XLA writes with --xla_dump_hlo_as_text")
    assert "xla logged" in e.value.native_log


def test_compile_options_sets_replicas_partitions_overrides_and_dump():
    """compile_options: the counts, the env overrides and the dump directory, where given."""
    opts = jaxlib.compile_options(num_replicas=2, num_partitions=3,
                                  env_overrides=[("xla_cpu_enable_fast_math", True)], dump_to="/tmp/d")
    assert (opts.num_replicas, opts.num_partitions) == (2, 3)
    assert opts.env_option_overrides == [("xla_cpu_enable_fast_math", True)]
    assert opts.executable_build_options.debug_options.xla_dump_to == "/tmp/d"
    default = jaxlib.compile_options()
    assert (default.num_replicas, default.num_partitions) == (1, 1)
    assert default.env_option_overrides == []
    assert default.executable_build_options.debug_options.xla_dump_to == ""
    again = jaxlib.compile_options_from_proto(opts.SerializeAsString())
    assert (again.num_replicas, again.num_partitions) == (2, 3)


def test_execute_runs_on_host_arrays_and_reports_failures(monkeypatch):
    """execute: arguments put on the device, numpy results; a failure is an ExecutionError."""
    put = []
    fake_jax = types.SimpleNamespace(device_put=lambda a, d: put.append((a, d)) or ("buf", a))

    class Results:
        def disassemble_into_single_device_arrays(self):
            return [[np.array([1, 2])], [np.float32(3)]]

    class Exe:
        def execute_sharded(self, buffers):
            self.buffers = buffers
            return Results()

    monkeypatch.setattr(jaxlib, "jax", lambda: fake_jax)
    exe = Exe()
    out = jaxlib.execute(exe, ["a", "b"], "dev")
    assert put == [("a", "dev"), ("b", "dev")]
    assert exe.buffers == [("buf", "a"), ("buf", "b")]
    assert [o.tolist() for o in out] == [[1, 2], 3.0] and all(isinstance(o, np.ndarray) for o in out)

    def boom(buffers):
        raise RuntimeError("INTERNAL: went wrong")

    exe.execute_sharded = boom
    with pytest.raises(ExecutionError) as e:
        jaxlib.execute(exe, [], "dev")
    assert_mentions(e.value.message, "went wrong")
    assert "INTERNAL" not in e.value.message


@pytest.mark.golden
@pytest.mark.parametrize("run, raised, message", [
    (lambda exe: jaxlib.execute(exe, [], "dev"), "INTERNAL: went wrong", "execution failed: went wrong"),
    (lambda exe: jaxlib.execute_spmd(exe, []), "INTERNAL: collective failed\ndetails",
     "execution failed: collective failed"),
], ids=["execute", "execute_spmd"])
def test_execution_failed_messages_exactly(monkeypatch, run, raised, message):
    """An executable that fails: ExecutionError with the runtime's words, status word (and for
    SPMD the lines after the first) left out."""
    def boom(args):
        raise RuntimeError(raised)

    monkeypatch.setattr(jaxlib, "jax", lambda: types.SimpleNamespace(device_put=lambda a, d: a))
    with pytest.raises(ExecutionError) as e:
        run(types.SimpleNamespace(execute_sharded=boom))
    assert e.value.message == message


# ----------------------------------------------------------------------- SPMD


def _jax_with_two_cpus(monkeypatch, started: bool):
    """jaxlib.jax, faked: two CPU devices; ``started``: as if jax had started already."""
    devices = types.SimpleNamespace(devices=lambda platform: ["c0", "c1"])

    def fake_jax():
        return devices

    fake_jax.cache_info = lambda: types.SimpleNamespace(currsize=int(started))
    monkeypatch.setattr(jaxlib, "jax", fake_jax)
    return fake_jax


def test_sharding_protos_parses_each_text_or_reports_its_column():
    """sharding_protos: XLA's parser on each text: a serialized OpSharding, or (message, 1-based column)."""
    from mlirhlo_driver.ir import protos

    ok, bad = jaxlib.sharding_protos(["{devices=[4,1]<=[4]}", "{devices=[4,1]<=[4]"])
    msg = protos.decode(ok, "xla.OpSharding")
    assert list(msg.tile_assignment_dimensions) == [4, 1] and list(msg.iota_reshape_dims) == [4]
    message, column = bad
    assert isinstance(column, int) and column >= 1 and message and "\n" not in message
    assert jaxlib.sharding_protos([]) == []


def test_sharding_protos_errors_without_a_position(monkeypatch):
    """An XLA message without a parse position: its first line, column None."""
    class Fake:
        @staticmethod
        def from_string(text):
            raise RuntimeError(text)

    monkeypatch.setattr(jaxlib.hlo_lib(), "HloSharding", Fake)
    assert jaxlib.sharding_protos(["INVALID_ARGUMENT: first line\nsecond line"]) == [("first line", None)]
    assert jaxlib.sharding_protos(["INVALID_ARGUMENT: x\nwas parsing 1:17: error: expected '}'  \nmore"]) == \
        [("expected '}'", 17)]


@pytest.mark.parametrize(("replicas", "partitions", "ids"), [(1, 4, [3, 2, 1, 0]), (2, 1, [1, 0]), (2, 2, [0, 1, 2, 3])])
def test_spmd_options(replicas, partitions, ids):
    """spmd_options: counts, SPMD partitioning only with partitions, the device assignment."""
    opts = jaxlib.spmd_options(jaxlib.compile_options(num_replicas=replicas, num_partitions=partitions),
                               num_replicas=replicas, num_partitions=partitions, device_ids=ids,
                               use_shardy=True, run_backend_only=False)
    build = opts.executable_build_options
    assert (opts.num_replicas, opts.num_partitions) == (replicas, partitions)
    assert build.use_spmd_partitioning is (partitions > 1)
    assert build.use_shardy_partitioner is True
    columns = np.asarray(ids).reshape(replicas, partitions).T
    assert str(opts.device_assignment) == (
        f"DeviceAssignment{{replica_count={replicas}, computation_count={partitions}, "
        + " ".join(f"Computation{p}{{{' '.join(map(str, col))}}}" for p, col in enumerate(columns)) + "}")


def test_spmd_options_run_backend_only_survives_serialization():
    """run_backend_only is set through the serialized proto; the rest of the options stay."""
    from jax._src.lib import xla_client

    def options(backend_only):
        return jaxlib.spmd_options(jaxlib.compile_options(num_partitions=2, env_overrides=[("xla_dump_to", "/x")]),
                                   num_replicas=1, num_partitions=2, device_ids=[1, 0], use_shardy=False,
                                   run_backend_only=backend_only)

    plain, opts = options(False), options(True)

    def run_backend_only(o):
        (build,) = [v for f, v in _proto_fields(o.SerializeAsString()) if f == 3]
        return [v for f, v in _proto_fields(build) if f == 11]

    assert run_backend_only(plain) == []
    assert run_backend_only(opts) == [1]
    assert isinstance(opts, xla_client.CompileOptions)
    assert (opts.num_partitions, opts.executable_build_options.use_shardy_partitioner) == (2, False)
    assert opts.executable_build_options.use_spmd_partitioning is True
    assert str(opts.device_assignment) == str(plain.device_assignment)
    assert opts.env_option_overrides == [("xla_dump_to", "/x")]


def test_executable_shardings_serializes_each_reported_sharding():
    """executable_shardings: (parameter, output) shardings as serialized OpShardings; None stays None."""
    class Op:
        def __init__(self, data):
            self.data = data

        def SerializeToString(self):
            return self.data

    exe = types.SimpleNamespace(get_parameter_shardings=lambda: [Op(b"p0"), None],
                                get_output_shardings=lambda: None)
    assert jaxlib.executable_shardings(exe) == ([b"p0", None], None)
    exe = types.SimpleNamespace(get_parameter_shardings=lambda: None, get_output_shardings=lambda: [Op(b"o")])
    assert jaxlib.executable_shardings(exe) == (None, [b"o"])


def test_execute_spmd_returns_each_output_per_device(monkeypatch):
    """execute_spmd: per output, (device, host array) per device, and a wall time; failures' first line."""
    ready = []

    class Arr:
        def __init__(self, dev, value):
            self.dev, self.value = dev, value

        def block_until_ready(self):
            ready.append(self.dev)

        def devices(self):
            return {self.dev}

        def __array__(self, dtype=None, copy=None):
            return np.array(self.value)

    results = [[Arr("d0", 1), Arr("d1", 2)], [Arr("d0", 3), Arr("d1", 4)]]
    exe = types.SimpleNamespace(execute_sharded=lambda args: types.SimpleNamespace(
        disassemble_into_single_device_arrays=lambda: results))
    out, ms = jaxlib.execute_spmd(exe, ["x"])
    assert [[(d, a.tolist()) for d, a in o] for o in out] == [[("d0", 1), ("d1", 2)], [("d0", 3), ("d1", 4)]]
    assert ready == ["d0", "d1", "d0", "d1"] and ms >= 0

    def boom(args):
        raise RuntimeError("INTERNAL: collective failed\ndetails")

    with pytest.raises(ExecutionError) as e:
        jaxlib.execute_spmd(types.SimpleNamespace(execute_sharded=boom), [])
    assert_mentions(e.value.message, "collective failed")
    assert "INTERNAL" not in e.value.message and "details" not in e.value.message


def test_local_device_order_puts_this_process_first(monkeypatch):
    """local_device_order: CPU devices by (process_index, id)."""
    devs = [types.SimpleNamespace(process_index=p, id=i, name=f"{p}/{i}") for p, i in [(1, 2), (0, 3), (1, 0), (0, 1)]]
    monkeypatch.setattr(jaxlib, "cpu_devices", lambda count: devs)
    assert [d.name for d in jaxlib.local_device_order(4)] == ["0/1", "0/3", "1/0", "1/2"]


def test_sharded_argument_carries_each_devices_shard():
    """sharded_argument: one array whose per-device buffers are the given shards."""
    devices = jaxlib.cpu_devices()[:1]
    arg = jaxlib.sharded_argument([np.arange(3, dtype=np.float32)], devices, devices)
    assert arg.shape == (3,) and arg.dtype == np.float32
    assert [np.asarray(s.data).tolist() for s in arg.addressable_shards] == [[0.0, 1.0, 2.0]]


# ------------------------------------------------------------------- distributed


def test_distributed_initialize_joins_with_gloo_and_the_given_timeouts(monkeypatch):
    """distributed_initialize, in a process started for the run: CPU only, the local device
    count, gloo collectives, no preemption service, the timeouts; then its backend starts and
    its CPU devices are the run's."""
    updates, joined, started = [], [], []
    fake = types.SimpleNamespace(
        config=types.SimpleNamespace(update=lambda k, v: updates.append((k, v))),
        distributed=types.SimpleNamespace(initialize=lambda *a, **k: joined.append((a, k))),
        devices=lambda *a: started.append(2))
    monkeypatch.setattr(jaxlib, "_import_jax", lambda: fake)
    monkeypatch.setattr(jaxlib, "_distributed", False)
    jaxlib.distributed_initialize("host:1234", 3, 1, local_device_count=2, timeout_s=30, heartbeat_s=5)
    assert updates == [("jax_platforms", "cpu"), ("jax_num_cpu_devices", 2),
                       ("jax_cpu_collectives_implementation", "gloo"), ("jax_enable_preemption_service", False)]
    assert jaxlib._distributed is True
    assert joined == [(("host:1234", 3, 1), {
        "cluster_detection_method": "deactivate", "initialization_timeout": 30,
        "heartbeat_timeout_seconds": 5, "shutdown_timeout_seconds": 30})]
    assert started == [2]


def test_distributed_initialize_failure_is_a_distributed_error(monkeypatch):
    """A failed join: DistributedError naming the coordinator, with the runtime's first line."""
    with pytest.raises(DistributedError) as e:
        _fail_to_join(monkeypatch)
    assert_mentions(e.value.message, "h:1", "Barrier timed out")
    assert "DEADLINE_EXCEEDED" not in e.value.message and "stack" not in e.value.message


def test_kv_set_and_get_through_the_coordinator(kv_client):
    """kv_get waits the timeout in ms (at least 1 ms); a missing key times out to None."""
    jaxlib.kv_set("k", b"v")
    assert kv_client.store == {"k": b"v"}
    assert jaxlib.kv_get("k", 2.5) == b"v"
    assert jaxlib.kv_get("missing", 0.0) is None
    assert jaxlib.kv_get("k", 0.0004) == b"v"
    assert kv_client.waits == [2500, 1, 1]


def test_kv_failures_are_distributed_errors(kv_client):
    """A coordinator that cannot be reached: DistributedError with the first line of the cause."""
    def fail(*a):
        raise RuntimeError("UNAVAILABLE: connection refused\ntrace")

    kv_client.key_value_set_bytes = fail
    kv_client.blocking_key_value_get_bytes = fail
    for call in (lambda: jaxlib.kv_set("k", b"v"), lambda: jaxlib.kv_get("k", 1)):
        with pytest.raises(DistributedError) as e:
            call()
        assert_mentions(e.value.message, "coordinator", "connection refused")
        assert "UNAVAILABLE" not in e.value.message and "trace" not in e.value.message


def test_kv_outside_a_distributed_run(monkeypatch):
    """No distributed client: 'not part of a distributed run', for set and get."""
    from jax._src import distributed

    monkeypatch.setattr(distributed.global_state, "client", None)
    for call in (lambda: jaxlib.kv_set("k", b""), lambda: jaxlib.kv_get("k", 1)):
        with pytest.raises(DistributedError) as e:
            call()
        assert_mentions(e.value.message, "not part of", "distributed run")


def test_distributed_shutdown_failure_is_a_distributed_error(monkeypatch):
    """distributed_shutdown: jax's shutdown; its failure's first line in a DistributedError."""
    import jax as jax_module

    calls = []
    monkeypatch.setattr(jax_module.distributed, "shutdown", lambda: calls.append(1))
    jaxlib.distributed_shutdown()
    assert calls == [1]

    def fail():
        raise RuntimeError("INTERNAL: peer gone\nmore")

    monkeypatch.setattr(jax_module.distributed, "shutdown", fail)
    with pytest.raises(DistributedError) as e:
        jaxlib.distributed_shutdown()
    assert_mentions(e.value.message, "shutting down", "peer gone")
    assert "INTERNAL" not in e.value.message


def test_hlo_text_and_proto_round_trip():
    """HLO text -> proto -> text keeps the module, as StableHLO and back too; bad text is a RuntimeError."""
    proto = jaxlib.hlo_text_to_proto(_HLO)
    assert isinstance(proto, bytes) and proto
    text = jaxlib.hlo_proto_to_text(proto)
    assert text == ("HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\n"
                    "ENTRY %main (p: f32[2]) -> f32[2] {\n  ROOT %p = f32[2]{0} parameter(0)\n}\n\n")
    with pytest.raises(RuntimeError, match="was parsing 2:6: error: "):  # XLA's own words
        jaxlib.hlo_text_to_proto("HloModule m\nbogus")
    bytecode = jaxlib.hlo_proto_to_stablehlo_bytecode(proto)
    assert isinstance(bytecode, bytes) and bytecode.startswith(b"ML\xefR")
    back = jaxlib.stablehlo_to_hlo_proto(bytecode)
    assert "ROOT %p.1 = f32[2]{0} parameter(0)" in jaxlib.hlo_proto_to_text(back)


def test_hlo_to_stablehlo_in_child_reports_each_step():
    """hlo_to_stablehlo_in_child: ('ok', proto, bytecode), or which step refused with XLA's message."""
    status, proto, bytecode = jaxlib.hlo_to_stablehlo_in_child(_HLO, None)
    assert status == "ok" and jaxlib.hlo_proto_to_text(proto) == jaxlib.hlo_proto_to_text(jaxlib.hlo_text_to_proto(_HLO))
    assert bytecode.startswith(b"ML\xefR")
    assert jaxlib.hlo_to_stablehlo_in_child(None, proto)[:2] == ("ok", proto)
    status, message, empty = jaxlib.hlo_to_stablehlo_in_child("HloModule m\nbogus", None)
    assert (status, empty) == ("parse", b"") and "was parsing 2:6: error: " in message


def test_hlo_to_stablehlo_in_child_reports_a_refused_conversion(monkeypatch):
    """A proto XLA cannot convert: ('convert', XLA's message, b'')."""
    from jaxlib import _jax

    refusal = "UNIMPLEMENTED: cannot convert"  # XLA's words, passed on as they are

    def refuse(proto):
        raise RuntimeError(refusal)

    monkeypatch.setattr(_jax.mlir, "hlo_to_stablehlo", refuse)
    proto = jaxlib.hlo_text_to_proto(_HLO)
    assert jaxlib.hlo_to_stablehlo_in_child(None, proto) == ("convert", refusal, b"")
    with pytest.raises(RuntimeError) as e:
        jaxlib.hlo_proto_to_stablehlo_bytecode(proto)
    assert str(e.value) == refusal


def test_ir_context_refuses_unregistered_dialects():
    """The driver's MLIR context knows jaxlib's dialects and refuses ops of unknown ones."""
    from jaxlib.mlir import ir

    ctx = jaxlib.ir_context()
    assert ctx.allow_unregistered_dialects is False
    import importlib.util

    ops = ["stablehlo.constant", "mhlo.constant", "chlo.erf", "sdy.constant", "func.func"]
    if importlib.util.find_spec("jaxlib.mlir._mlir_libs._sdyMpmd"):  # jaxlibs with the MPMD dialect
        ops.append("mpmd.fragment")
    for op in ops:
        assert ctx.is_registered_operation(op), op
    with ctx, pytest.raises(Exception, match="unregistered"):
        ir.Module.parse('"foo.bar"() : () -> ()')


def test_hlo_cost_analysis_of_each_module():
    """hlo_cost_analysis: XLA's figures per module, sorted, as floats."""
    add = _HLO.replace("ROOT p = f32[2]{0} parameter(0)",
                       "p = f32[2]{0} parameter(0)\n  ROOT a = f32[2]{0} add(p, p)")
    (found,) = jaxlib.hlo_cost_analysis([jaxlib.hlo_text_to_proto(add)])
    assert list(found) == sorted(found)
    assert found["flops"] == 2.0 and found["bytes accessed"] == 24.0
    assert all(type(v) is float for v in found.values())


def test_hlo_cost_analysis_without_jax_counts_as_with_it(monkeypatch):
    """A process that never imported jax (opt --stage cost on CUDA) analyses with a CPU
    client of jaxlib's own: the same figures as with jax's."""
    dot = _HLO.replace("ROOT p = f32[2]{0} parameter(0)",
                       "p = f32[2]{0} parameter(0)\n  ROOT d = f32[] dot(p, p), lhs_contracting_dims={0}, "
                       "rhs_contracting_dims={0}")
    proto = jaxlib.hlo_text_to_proto(dot)
    jaxlib.jax()
    with_jax = jaxlib.hlo_cost_analysis([proto])
    monkeypatch.delitem(sys.modules, "jax")
    assert jaxlib.hlo_cost_analysis([proto]) == with_jax
    assert jaxlib.cpu_client.cache_info().currsize >= 1


def test_a_lost_coordinator_is_one_line_of_its_first_reason(monkeypatch):
    """A failed key-value write names the runtime's first line, its status word stripped; the
    rest (gRPC's debug info) stays out of the one error line."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import DistributedError

    class Client:
        def key_value_set_bytes(self, key, value):
            raise RuntimeError("UNAVAILABLE: failed to connect to all addresses\nDebug info: {grpc_status:14}")

    monkeypatch.setattr(_jaxlib, "_distributed_client", lambda: Client())
    with pytest.raises(DistributedError) as e:
        _jaxlib.kv_set("k", b"v")
    line = e.value.format("params")
    assert "\n" not in line and line.startswith("error: "), line
    assert_mentions(line, "coordinator", "failed to connect to all addresses")
    assert "UNAVAILABLE" not in line and "Debug info" not in line
    # leaving the run: the same one line
    import jax

    def shutdown():
        raise RuntimeError("DEADLINE_EXCEEDED: barrier timed out\nDebug info: {grpc_status:4}")

    monkeypatch.setattr(jax.distributed, "shutdown", shutdown)
    with pytest.raises(DistributedError) as e:
        _jaxlib.distributed_shutdown()
    line = e.value.format("params")
    assert "\n" not in line and line.startswith("error: "), line
    assert_mentions(line, "shutting down", "barrier timed out")
    assert "DEADLINE_EXCEEDED" not in line and "Debug info" not in line


def _fail_to_join(monkeypatch):
    def fail(*a, **k):
        raise RuntimeError("DEADLINE_EXCEEDED: Barrier timed out\nstack")

    fake = types.SimpleNamespace(config=types.SimpleNamespace(update=lambda k, v: None),
                                 distributed=types.SimpleNamespace(initialize=fail),
                                 devices=lambda *a: pytest.fail("started"))
    monkeypatch.setattr(jaxlib, "_import_jax", lambda: fake)
    monkeypatch.setattr(jaxlib, "_distributed", False)
    jaxlib.distributed_initialize("h:1", 2, 0, local_device_count=1, timeout_s=1, heartbeat_s=1)


def _unreachable_coordinator(monkeypatch, call):
    def fail(*a):
        raise RuntimeError("UNAVAILABLE: failed to connect to all addresses\nDebug info: {grpc_status:14}")

    client = types.SimpleNamespace(key_value_set_bytes=fail, blocking_key_value_get_bytes=fail)
    monkeypatch.setattr(jaxlib, "_distributed_client", lambda: client)
    call()


def _no_distributed_client(monkeypatch):
    from jax._src import distributed

    monkeypatch.setattr(distributed.global_state, "client", None)
    jaxlib.kv_get("k", 1)


def _failed_shutdown(monkeypatch):
    import jax

    def shutdown():
        raise RuntimeError("INTERNAL: peer gone\nmore")

    monkeypatch.setattr(jax.distributed, "shutdown", shutdown)
    jaxlib.distributed_shutdown()


@pytest.mark.golden
@pytest.mark.parametrize("fail, message", [
    (_fail_to_join, "cannot join the distributed run at h:1: Barrier timed out"),
    (lambda mp: _unreachable_coordinator(mp, lambda: jaxlib.kv_set("k", b"v")),
     "cannot reach the coordinator: failed to connect to all addresses"),
    (lambda mp: _unreachable_coordinator(mp, lambda: jaxlib.kv_get("k", 1)),
     "cannot reach the coordinator: failed to connect to all addresses"),
    (_no_distributed_client, "not part of a distributed run"),
    (_failed_shutdown, "shutting down the distributed run failed: peer gone"),
], ids=["join", "kv_set", "kv_get", "outside-a-run", "shutdown"])
def test_distributed_errors_exactly(monkeypatch, fail, message):
    """The DistributedError of each step of a distributed run, word for word: the runtime's
    first line, its status word left out."""
    with pytest.raises(DistributedError) as e:
        fail(monkeypatch)
    assert e.value.message == message


def test_jax_imported_after_the_drivers_mlir_context_lowers_with_shardy():
    """A fresh process: the driver's MLIR context first, then the user's jax (fit's sweep of a
    JAX function over TPU and GPU targets did so): jax's sdy bindings are whole."""
    code = ("from mlirhlo_driver._native import jaxlib as j\n"
            "j.ir_context()\n"
            "import jax, jax.numpy as jnp\n"
            "from jaxlib.mlir.dialects import sdy\n"
            "assert hasattr(sdy, 'DimMappingAttr')\n"
            "print(jax.jit(lambda x: jnp.linalg.solve(x, x)).lower(jnp.eye(4)).as_text().count('func.func') > 0)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "True"
