"""The supported jax/jaxlib range, the CUDA plugin check and ``mlirhlo --version``.

The plugin cases monkeypatch the metadata lookup (_jaxlib.installed_versions):
the real mismatch needs another plugin installed, which .ci/run does not do.
"""

from __future__ import annotations

import tomllib

import pytest

from tests.conftest import DATA, REPO, assert_one_line_error, run_subprocess

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
        # puts it where jax does not look (tests/test_plugin_copy.py).
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
    line = assert_one_line_error(
        cli("opt", SOFTMAX, "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx", "--no-cache"), code=2,
        contains="jax-cuda13-plugin 0.11.0 does not match jaxlib 0.12.0.1")
    assert line.endswith("(pip install jax-cuda13-plugin==0.12.0.1)"), line


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
    ("0.10.2", "jax-cuda12-plugin 0.10.2 does not match jaxlib 0.9.2"),
    (None, "jax-cuda12-plugin is not installed (jaxlib 0.9.2)"),
])
@pytest.mark.parametrize("argv", [
    ["opt", "--platform", "cuda", "--gpu-spec", "h100_sxm", "--stage", "ptx", "--no-cache"],
    ["run", "--platform", "cuda"],
])
def test_cuda_commands_need_the_matching_plugin(cli, monkeypatch, plugin, says, argv):
    # (--no-cache: a cached stage needs no compile, so no plugin either.)
    _fake_versions(monkeypatch, plugin)
    line = assert_one_line_error(cli(*argv, SOFTMAX), code=2, contains=says)
    fix = "pip install jax-cuda12-plugin==0.9.2" if plugin else "mlirhlo cuda-plugin install"
    assert line.endswith(f"({fix})"), line


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
    assert lines[4].startswith("ptxas ") and lines[-1].startswith("llvmlite ")


def test_version_says_what_is_wrong(cli, monkeypatch):
    _fake_versions(monkeypatch, "0.10.2", jaxlib="0.9.2")
    out = cli("--version").out
    assert ("jax-cuda12-plugin 0.10.2 (does not match jaxlib 0.9.2: "
            "CUDA needs jax-cuda12-plugin==0.9.2)") in out.splitlines()
    _fake_versions(monkeypatch, None, jaxlib="0.8.3")
    out = cli("--version").out.splitlines()
    assert "jaxlib 0.8.3 (unsupported: 0.9.0 to 0.12.0.1 are)" in out
    assert "jax-cuda12-plugin not installed (CUDA needs it at jaxlib's version: mlirhlo cuda-plugin install)" in out


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
    assert line.startswith("error: ") and line.endswith(
        "mlirhlo-driver supports jax/jaxlib 0.9.0 to 0.12.0.1, found jax 0.13.0, jaxlib 0.13.0 "
        "(pip install 'jax[cuda12-local]>=0.9.0,<=0.12.0.1')"), line


def test_version_does_not_import_jax():
    proc = run_subprocess(
        "import sys\n"
        "from mlirhlo_driver.cli.mlirhlo import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit as e:\n    code = e.code\n"
        "print('CODE', code, sorted(m for m in ('jax', 'jaxlib') if m in sys.modules))\n")
    assert proc.stdout.splitlines()[-1] == "CODE 0 []", proc.stdout + proc.stderr
    assert proc.stderr == ""


# ------------------------------------------------- differences between releases

def test_gpu_specs_reach_xla_in_the_installed_schema():
    """Each jaxlib gets the shipped text in its own schema: 0.9 without the fields it lacks and
    with the CUDA runtime version where it reads it; 0.10.2 unchanged; 0.12 with cuDNN's
    version moved into gpu_device_info and the per-SM limits its XLA reads filled in."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import specs as gpu_specs
    from mlirhlo_driver.ir import protos

    text = gpu_specs.resolve_spec("h100_sxm").text
    fitted = gpu_specs.target_config_for_installed_xla(text)
    spec = protos.parse_text(fitted, "stream_executor.GpuTargetConfigProto")  # XLA's own schema
    info = spec.gpu_device_info
    info_fields = info.DESCRIPTOR.fields_by_name
    built = _jaxlib.plugin_build_versions().get("cuda", "12.9.0")
    if "runtime_version" not in info_fields:  # 0.9
        assert (spec.runtime_version.major, spec.runtime_version.minor) == (12, 9)
    else:
        assert info.runtime_version == info.compile_time_toolkit_version == built
    if "dnn_version_info" not in spec.DESCRIPTOR.fields_by_name:  # 0.12
        assert "dnn_version_info" not in fitted
        assert info.dnn_version == _jaxlib.plugin_build_versions().get("cudnn", "9.8.0")
    if "max_blocks_per_multiprocessor" in info_fields:
        assert (info.max_blocks_per_multiprocessor, info.reserved_shared_memory_per_block) == (32, 1024)
    assert info.cuda_compute_capability.major == 9


@pytest.mark.parametrize("name, blocks, reserved", [
    ("p100", 32, 0), ("v100", 32, 0), ("t4", 16, 0), ("a100_sxm_80", 32, 1024), ("a10", 16, 1024),
    ("l4", 24, 1024), ("h100_sxm", 32, 1024), ("b200", 32, 1024)])
def test_per_sm_limits_follow_the_compute_capability(name, blocks, reserved):
    """The limits a newer XLA reads from a real GPU, as cudaDeviceProp gives them per
    compute capability: blocks per SM, and the 1 KiB a block loses to the driver from 8.0 on."""
    from mlirhlo_driver.cuda import specs as gpu_specs
    from mlirhlo_driver.ir import protos

    spec = protos.parse_text(gpu_specs.target_config_for_installed_xla(gpu_specs.resolve_spec(name).text),
                             "stream_executor.GpuTargetConfigProto")
    info = spec.gpu_device_info
    if "max_blocks_per_multiprocessor" not in info.DESCRIPTOR.fields_by_name:
        pytest.skip("this jaxlib's XLA reads no per-SM limits from the spec")
    assert (info.max_blocks_per_multiprocessor, info.reserved_shared_memory_per_block) == (blocks, reserved)


def test_spec_cuda_versions_follow_the_plugin(monkeypatch):
    """A spec written for CUDA 12.9 gets the versions of the plugin that compiles it (what a
    GPU running that plugin reports): 13.0 under jax-cuda13-plugin, 12.8 under an older one."""
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.cuda import specs as gpu_specs
    from mlirhlo_driver.ir import protos

    text = gpu_specs.resolve_spec("b200").text
    # No cache_clear: the fitted text is kept per plugin build, so each fake gets its own.
    for cuda, cudnn in (("13.0.0", "9.12.0"), ("12.8.0", "9.7.1")):
        monkeypatch.setattr(_jaxlib, "plugin_build_versions", lambda: {"cuda": cuda, "cudnn": cudnn})
        spec = protos.parse_text(gpu_specs.target_config_for_installed_xla(text),
                                 "stream_executor.GpuTargetConfigProto")
        info = spec.gpu_device_info
        if "runtime_version" in info.DESCRIPTOR.fields_by_name:
            assert info.runtime_version == info.driver_version == cuda
            assert info.compile_time_toolkit_version == cuda
        else:
            assert f"{spec.runtime_version.major}.{spec.runtime_version.minor}.0" == cuda
        if "dnn_version_info" in spec.DESCRIPTOR.fields_by_name:
            dnn = spec.dnn_version_info
            assert f"{dnn.major}.{dnn.minor}.{dnn.patch}" == cudnn
        else:
            assert info.dnn_version == cudnn


# --------------------------------------------- the metadata scan, kept on disk

def _dist(site, name, version):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return info


def test_installed_versions_are_scanned_once_then_read_from_disk(private_site, monkeypatch):
    """The scan (50+ ms a process) runs on the first command only; the record says the same."""
    import importlib.metadata

    from mlirhlo_driver import installed

    _dist(private_site, "fake-dist", "1.2.3")
    first = installed._facts(("versions", "fake-dist", "jaxlib", "no-such-dist"))["versions"]
    assert first["fake-dist"] == "1.2.3" and first["no-such-dist"] is None
    assert first["jaxlib"] == importlib.metadata.version("jaxlib")

    def no_scan(*_, **__):
        raise AssertionError("metadata scanned again")

    monkeypatch.setattr(importlib.metadata, "distribution", no_scan)
    # Other files written into a sys.path directory (python -m puts the working directory
    # there) change no distribution.
    (private_site / "notes.txt").write_text("x")
    (private_site / "scratch").mkdir()
    assert installed._facts(("versions", "fake-dist", "jaxlib", "no-such-dist"))["versions"] == first


def test_installed_versions_see_an_install_an_upgrade_and_an_edit(private_site):
    from mlirhlo_driver import installed

    def version():
        return installed._facts(("versions", "fake-dist"))["versions"]["fake-dist"]

    assert version() is None
    info = _dist(private_site, "fake-dist", "1.0")  # an install: the sys.path entry changes
    assert version() == "1.0"
    (info / "METADATA").rename(info / "METADATA.old")  # an upgrade, as pip does it
    info.rename(private_site / "fake_dist-2.0.dist-info")
    info = private_site / "fake_dist-2.0.dist-info"
    (info / "METADATA.old").rename(info / "METADATA")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-dist\nVersion: 2.0\n")
    assert version() == "2.0"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-dist\nVersion: 2.0.1\n")  # in place
    assert version() == "2.0.1"


def test_an_unwritable_cache_only_costs_the_scan(private_site, tmp_path, monkeypatch):
    from mlirhlo_driver import installed

    (tmp_path / "xdg").write_text("")  # a file where the cache directory should be
    _dist(private_site, "fake-dist", "3.0")
    assert installed._facts(("versions", "fake-dist"))["versions"]["fake-dist"] == "3.0"


def test_the_record_keeps_every_variant_up_to_its_bound(private_site, monkeypatch):
    """One record per venv holds a variant per request and sys.path (console script,
    python -m, pytest, ...): the _VARIANTS newest are all answered without a scan."""
    import importlib.metadata

    from mlirhlo_driver import installed

    _dist(private_site, "fake-dist", "1.2.3")
    requests = [("versions", "fake-dist", f"no-such-dist-{i}") for i in range(installed._VARIANTS)]
    for request in requests:
        installed._facts(request)

    def no_scan(*_, **__):
        raise AssertionError("metadata scanned again")

    monkeypatch.setattr(importlib.metadata, "distribution", no_scan)
    for request in requests:
        assert installed._facts(request)["versions"]["fake-dist"] == "1.2.3"
