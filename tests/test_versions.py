"""The supported jax/jaxlib range, the CUDA plugin check and ``mlirhlo --version``.

The plugin cases monkeypatch the metadata lookup (_jaxlib.installed_versions):
the real mismatch needs another plugin installed, which .ci/run does not do.
"""

from __future__ import annotations

import tomllib

import pytest

from conftest import DATA, REPO, assert_one_line_error, run_subprocess

SOFTMAX = DATA / "softmax.vhlo"


def _fake_versions(monkeypatch, plugin: str | None, jaxlib: str = "0.9.2"):
    from mlirhlo_driver import _jaxlib

    monkeypatch.setattr(_jaxlib, "installed_versions",
                        lambda: {"jax": jaxlib, "jaxlib": jaxlib, "jax-cuda12-plugin": plugin})


# ------------------------------------------------------------------ the range

def test_pyproject_declares_the_supported_range():
    from packaging.requirements import Requirement

    from mlirhlo_driver import _jaxlib

    deps = {}
    for line in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]:
        req = Requirement(line)
        deps[req.name] = req
    expected = {f">={_jaxlib.SUPPORTED_MIN}", f"<={_jaxlib.SUPPORTED_MAX}"}
    for name in ("jax", "jaxlib"):
        assert {str(s) for s in deps[name].specifier} == expected, deps[name]
    # The plugin comes through jax's own extra, which pins it to jax's exact version;
    # a separate plugin requirement would let pip choose one that does not match.
    assert "cuda12-local" in deps["jax"].extras
    assert "jax-cuda12-plugin" not in deps


def test_running_environment_is_supported_and_matched():
    """Whichever end of the range this runs on (CI runs both), it is a supported set."""
    from mlirhlo_driver import _jaxlib

    found = _jaxlib.installed_versions()
    assert _jaxlib.in_supported_range(found["jax"]) and _jaxlib.in_supported_range(found["jaxlib"])
    assert found["jax-cuda12-plugin"] == found["jaxlib"]
    _jaxlib.check_versions()
    _jaxlib.check_cuda_plugin()


@pytest.mark.parametrize("version,expected", [
    ("0.9.0", (0, 9, 0)), ("0.9.0.1", (0, 9, 0, 1)), ("0.10.2", (0, 10, 2)),
    ("0.10.0rc1", (0, 10, 0)), ("0.10.3.dev20260101", (0, 10, 3)), ("0.9.2+cuda12", (0, 9, 2)),
])
def test_version_tuple(version, expected):
    from mlirhlo_driver import _jaxlib

    assert _jaxlib.version_tuple(version) == expected


@pytest.mark.parametrize("version,ok", [
    ("0.8.3", False), ("0.9.0", True), ("0.9.0.1", True), ("0.9.2", True), ("0.10.2", True),
    ("0.10.3", False), ("0.11.0", False),
])
def test_supported_range(version, ok):
    from mlirhlo_driver import _jaxlib

    assert _jaxlib.in_supported_range(version) is ok


def test_missing_jaxlib_is_refused(monkeypatch):
    from mlirhlo_driver import _jaxlib
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
    assert line.endswith("(pip install jax-cuda12-plugin==0.9.2)"), line


@pytest.mark.parametrize("plugin", ["0.10.2", None])
def test_cpu_and_mlir_commands_work_without_the_plugin(cli, monkeypatch, tmp_path, plugin):
    from mlirhlo_driver import _jaxlib

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
    from mlirhlo_driver import _jaxlib

    result = cli("--version")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    found = _jaxlib.installed_versions()
    assert lines[0] == f"mlirhlo-driver {mlirhlo_driver.__version__}"
    assert lines[1:4] == [f"jax {found['jax']}", f"jaxlib {found['jaxlib']}",
                          f"jax-cuda12-plugin {found['jax-cuda12-plugin']}"]
    assert lines[4].startswith("ptxas ") and lines[5].startswith("llvmlite ")
    assert len(lines) == 6


def test_version_says_what_is_wrong(cli, monkeypatch):
    _fake_versions(monkeypatch, "0.10.2", jaxlib="0.9.2")
    out = cli("--version").out
    assert ("jax-cuda12-plugin 0.10.2 (does not match jaxlib 0.9.2: "
            "CUDA needs jax-cuda12-plugin==0.9.2)") in out.splitlines()
    _fake_versions(monkeypatch, None, jaxlib="0.8.3")
    out = cli("--version").out.splitlines()
    assert "jaxlib 0.8.3 (unsupported: 0.9.0 to 0.10.2 are)" in out
    assert "jax-cuda12-plugin not installed (CUDA needs jax-cuda12-plugin==0.8.3)" in out


def test_version_does_not_import_jax():
    proc = run_subprocess(
        "import sys\n"
        "from mlirhlo_driver.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit as e:\n    code = e.code\n"
        "print('CODE', code, sorted(m for m in ('jax', 'jaxlib') if m in sys.modules))\n")
    assert proc.stdout.splitlines()[-1] == "CODE 0 []", proc.stdout + proc.stderr
    assert proc.stderr == ""


# ------------------------------------------------- differences between releases

def test_gpu_specs_reach_xla_in_the_installed_schema():
    """0.10.2 gets the shipped text unchanged; an older jaxlib gets it without the fields
    its GpuTargetConfigProto lacks, and the CUDA runtime version where it reads it."""
    from mlirhlo_driver import _jaxlib, gpu_specs, protos

    text = gpu_specs.resolve_spec("h100_sxm").text
    fitted = _jaxlib.target_config_for_installed_xla(text)
    spec = protos.parse_text(fitted, "stream_executor.GpuTargetConfigProto")  # XLA's own schema
    info_fields = spec.gpu_device_info.DESCRIPTOR.fields_by_name
    if "runtime_version" in info_fields:
        assert fitted == text
    else:
        assert (spec.runtime_version.major, spec.runtime_version.minor) == (12, 9)
    assert spec.gpu_device_info.cuda_compute_capability.major == 9
