"""The supported jax/jaxlib range (_native/jaxlib.py's SUPPORTED_MIN/MAX), the CUDA
plugin check and ``mlirhlo --version``, at both ends of the range.

The plugin cases monkeypatch the metadata lookup (_jaxlib.installed_versions):
the real mismatch needs another plugin installed, which .ci/run does not do.
"""

from __future__ import annotations

import tomllib

import pytest

from tests.conftest import DATA, REPO, assert_mentions, assert_one_line_error, run_subprocess

SOFTMAX = DATA / "softmax.vhlo"


@pytest.fixture(autouse=True)
def _no_helper_keeps_fake_versions():
    """isolate's helper is a fork of this process: one started while a test fakes the
    versions would keep the fake for every later test. Each test here ends without one."""
    yield
    from mlirhlo_driver._native import isolate

    isolate.shutdown()


def _fake_versions(monkeypatch, plugin: str | None, jaxlib: str = "0.9.2", cu13: str | None = None):
    from mlirhlo_driver._native import jaxlib as _jaxlib

    monkeypatch.setattr(_jaxlib, "installed_versions",
                        lambda: {"jax": jaxlib, "jaxlib": jaxlib, "jax-cuda12-plugin": plugin,
                                 "jax-cuda13-plugin": cu13})


# ------------------------------------------------------------------ the range

def _requirements(lines):
    from packaging.requirements import Requirement

    return {Requirement(line).name: Requirement(line) for line in lines}


def test_pyproject_declares_the_supported_range():
    from mlirhlo_driver._native import jaxlib as _jaxlib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.15"
    deps = _requirements(project["dependencies"])
    expected = {f">={_jaxlib.SUPPORTED_MIN}", f"<={_jaxlib.SUPPORTED_MAX}"}
    for name in ("jax", "jaxlib"):
        assert {str(s) for s in deps[name].specifier} == expected, deps[name]
    # No CUDA stack in the plain dependencies: a CUDA 13 environment gets no CUDA 12 plugin.
    assert not [d for d in deps if "cuda" in d or d.startswith("nvidia") or d == "triton"], deps
    extras = project["optional-dependencies"]
    for major, tools in ((12, {"nvidia-cuda-nvcc-cu12"}), (13, {"nvidia-cuda-nvcc", "nvidia-nvvm"})):
        reqs = _requirements(extras[f"cuda{major}"])
        # No jax CUDA plugin: its pjrt package registers a jax backend that, without NVIDIA's
        # runtime, logs a traceback at the user's first jnp call. `mlirhlo cuda-plugin install`
        # puts it where jax does not look (tests/_native/test_plugin_copy.py).
        assert tools <= set(reqs) and not any(d.startswith("jax") for d in reqs), reqs
    # triton (640 MiB, for P100/V100 SASS only) is opt-in, and no other extra pulls it.
    assert [e for e, lines in extras.items() if "triton" in _requirements(lines)] == ["legacy-sass"]


def test_running_environment_is_supported_and_matched():
    """Whichever cell of the matrix this runs in (CI runs three), it is a supported set."""
    from mlirhlo_driver._native import jaxlib as _jaxlib

    found = _jaxlib.installed_versions()
    assert _jaxlib.in_supported_range(found["jax"]) and _jaxlib.in_supported_range(found["jaxlib"])
    assert _jaxlib.cuda_plugin(found).version == found["jaxlib"]
    _jaxlib.check_versions()
    _jaxlib.check_cuda_plugin()


@pytest.mark.parametrize("cu12,cu13,used", [
    ("0.12.0.1", None, "jax-cuda12-plugin"),
    (None, "0.12.0.1", "jax-cuda13-plugin"),
    ("0.12.0.1", "0.12.0.1", "jax-cuda13-plugin"),  # both match: the newer CUDA
    ("0.12.0.1", "0.11.0", "jax-cuda12-plugin"),  # the matching one, wherever it is
    (None, "0.11.0", "jax-cuda13-plugin"),  # the mismatch is named (check_cuda_plugin)
    (None, None, "jax-cuda12-plugin"),  # named as missing
])
def test_the_plugin_in_use(cu12, cu13, used):
    from mlirhlo_driver._native import jaxlib as _jaxlib

    found = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1", "jax-cuda12-plugin": cu12, "jax-cuda13-plugin": cu13}
    plugin = _jaxlib.cuda_plugin(found)
    assert plugin.dist == used
    assert plugin.version == found[used]
    major = int(used[len("jax-cuda"):-len("-plugin")])
    assert (plugin.cuda_major, plugin.module, plugin.namespace_dir, plugin.extra) == (
        major, f"jax_cuda{major}_plugin", f"xla_cuda{major}", f"cuda{major}-local")


def test_a_cuda13_plugin_mismatch_names_it(cli, monkeypatch):
    _fake_versions(monkeypatch, None, jaxlib="0.12.0.1", cu13="0.11.0")
    assert_one_line_error(
        cli("opt", SOFTMAX, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx", "--no-cache"), code=2,
        facts=("jax-cuda13-plugin 0.11.0", "jaxlib 0.12.0.1", "pip install jax-cuda13-plugin==0.12.0.1"))


@pytest.mark.parametrize("version,expected", [
    ("0.9.0", (0, 9, 0)), ("0.9.0.1", (0, 9, 0, 1)), ("0.10.2", (0, 10, 2)),
    ("0.10.0rc1", (0, 10, 0)), ("0.10.3.dev20260101", (0, 10, 3)), ("0.9.2+cuda12", (0, 9, 2)),
])
def test_version_tuple(version, expected):
    from mlirhlo_driver._native import jaxlib as _jaxlib

    assert _jaxlib.version_tuple(version) == expected


@pytest.mark.parametrize("version,ok", [
    ("0.8.3", False), ("0.9.0", True), ("0.9.0.1", True), ("0.9.2", True), ("0.10.2", True),
    ("0.11.0", True), ("0.12.0", True), ("0.12.0.1", True), ("0.12.0.2", False), ("0.12.1", False),
    ("0.13.0", False),
])
def test_supported_range(version, ok):
    from mlirhlo_driver._native import jaxlib as _jaxlib

    assert _jaxlib.in_supported_range(version) is ok


def test_missing_jaxlib_is_refused(monkeypatch):
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.errors import EnvironmentMismatch

    monkeypatch.setattr(_jaxlib, "installed_versions",
                        lambda: {"jax": "0.10.2", "jaxlib": None, "jax-cuda12-plugin": None})
    with pytest.raises(EnvironmentMismatch, match="jaxlib not installed"):
        _jaxlib.check_versions()


# ------------------------------------------------------------ the CUDA plugin

@pytest.mark.parametrize("plugin,says", [
    ("0.10.2", ("jax-cuda12-plugin 0.10.2", "jaxlib 0.9.2", "(pip install jax-cuda12-plugin==0.9.2)")),
    (None, ("jax-cuda12-plugin", "not installed", "jaxlib 0.9.2", "(mlirhlo cuda-plugin install)")),
], ids=["mismatch", "missing"])
@pytest.mark.parametrize("argv", [
    ["opt", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx", "--no-cache"],
    ["run", "--platform", "cuda"],
])
def test_cuda_commands_need_the_matching_plugin(cli, monkeypatch, plugin, says, argv):
    # (--no-cache: a cached stage needs no compile, so no plugin either.)
    _fake_versions(monkeypatch, plugin)
    assert_one_line_error(cli(*argv, SOFTMAX), code=2, facts=says)  # the fix: its hint


@pytest.mark.parametrize("plugin", ["0.10.2", None])
def test_cpu_and_mlir_commands_work_without_the_plugin(cli, monkeypatch, tmp_path, plugin):
    from mlirhlo_driver._native import jaxlib as _jaxlib

    _fake_versions(monkeypatch, plugin, jaxlib=_jaxlib.installed_versions()["jaxlib"])
    mlir = cli("opt", SOFTMAX, "--pipeline", "builtin.module(canonicalize)")
    assert mlir.code == 0, mlir.err
    assert "stablehlo.divide" in mlir.out
    hlo = cli("opt", SOFTMAX, "--platform", "cpu", "--stage", "hlo")
    assert hlo.code == 0, hlo.err
    assert "ENTRY" in hlo.out
    ran = cli("run", SOFTMAX, "--reference", "none", "--jobs", "0")
    assert ran.code == 0, ran.err


# ------------------------------------------------------------------ --version

def test_version_names_every_tool(cli):
    import mlirhlo_driver
    from mlirhlo_driver._native import jaxlib as _jaxlib

    result = cli("--version")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    found = _jaxlib.installed_versions()
    assert lines[0] == f"mlirhlo-driver {mlirhlo_driver.__version__}"
    plugin = _jaxlib.cuda_plugin(found)
    where = f" (the driver's copy, {plugin.copy.path})" if plugin.copy else ""
    assert lines[1:4] == [f"jax {found['jax']}", f"jaxlib {found['jaxlib']}",
                          f"{plugin.dist} {plugin.version}{where}"]
    from mlirhlo_driver._native import libtpu

    assert lines[4] == libtpu.version_line()
    assert lines[5].startswith("ptxas ") and lines[-1].startswith("llvmlite ")


def test_version_says_what_is_wrong(cli, monkeypatch):
    _fake_versions(monkeypatch, "0.10.2", jaxlib="0.9.2")
    # (the notes' words: test_version_lines_say_what_is_wrong_with_each, tests/_native/test_jaxlib.py)
    [plugin] = [ln for ln in cli("--version").out.splitlines() if ln.startswith("jax-cuda12-plugin")]
    assert_mentions(plugin, "0.10.2", "jaxlib 0.9.2", "jax-cuda12-plugin==0.9.2")
    _fake_versions(monkeypatch, None, jaxlib="0.8.3")
    lines = {ln.split()[0]: ln for ln in cli("--version").out.splitlines()}
    assert_mentions(lines["jaxlib"], "0.8.3", "unsupported", "0.9.0 to 0.12.0.1")
    assert_mentions(lines["jax-cuda12-plugin"], "not installed", "mlirhlo cuda-plugin install")


@pytest.mark.parametrize("argv", [
    ["opt", str(SOFTMAX), "--passes", "canonicalize"],
    ["convert", str(SOFTMAX), "--to", "stablehlo"],
    ["opt", str(SOFTMAX), "--platform", "cpu", "--stage", "hlo", "--no-cache"],
])
def test_outside_the_range_every_jaxlib_command_stops(argv):
    """MLIR-only commands too: an untested jaxlib may parse and print differently."""
    proc = run_subprocess(
        "from mlirhlo_driver._native import jaxlib as _jaxlib\n"
        "_jaxlib.installed_versions = lambda: {'jax': '0.13.0', 'jaxlib': '0.13.0',\n"
        "                                      'jax-cuda12-plugin': '0.13.0', 'jax-cuda13-plugin': None}\n"
        "from mlirhlo_driver.cli.mlirhlo import main\n"
        f"main({argv!r})\n")
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: "), line
    assert_mentions(line, "0.9.0 to 0.12.0.1", "jax 0.13.0", "jaxlib 0.13.0",
                    "(pip install 'jax[cuda12-local]>=0.9.0,<=0.12.0.1')")


def test_version_does_not_import_jax():
    proc = run_subprocess(
        "import sys\n"
        "from mlirhlo_driver.cli.mlirhlo import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit as e:\n    code = e.code\n"
        "print('CODE', code, sorted(m for m in ('jax', 'jaxlib') if m in sys.modules))\n")
    assert proc.stdout.splitlines()[-1] == "CODE 0 []", proc.stdout + proc.stderr
    assert proc.stderr == ""
