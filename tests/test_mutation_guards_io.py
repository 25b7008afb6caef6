"""Guards found by scripts/mutation.py: user-visible behaviour of the CLI's
output paths and of what native code writes on fd 2, that no other test pinned.

Each test names the regression it would catch; all run the CLI in-process
(the ``cli`` fixture captures at the file-descriptor level, as a user sees it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, CliResult, assert_one_line_error


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


def test_print_ir_keeps_the_first_character_of_native_output(cli, mlir_file, tmp_path):
    # MLIR prints IR dumps on fd 2; the driver captures and re-emits them. Reading the
    # capture from offset 1 (not 0) loses the dump header's first '/'.
    r = cli("opt", mlir_file, "--passes", "canonicalize", "--print-ir-after-all", "-o", tmp_path / "out.mlir")
    assert r.code == 0, r.err
    assert r.err.splitlines()[0] == "// -----// IR Dump After CanonicalizerPass (canonicalize) //----- //"


def test_error_after_a_captured_native_call_still_reaches_stderr(mlir_file):
    # Bad pass options are found by parsing the pass with fd 2 captured; fd 2 must be
    # restored afterwards, or the error line that follows goes into the discarded capture.
    # A real process: in-process, pytest's capture writes sys.stderr past fd 2.
    proc = subprocess.run([sys.executable, "-m", "mlirhlo_driver.cli.mlirhlo", "opt", str(mlir_file),
                           "--passes", "cse,canonicalize{bogus=1}"], capture_output=True, text=True,
                          timeout=300)
    assert_one_line_error(CliResult(proc.returncode, proc.stdout, proc.stderr),
                          contains="error: --passes:1:17: bad options for pass 'canonicalize': no such option bogus")


def test_binary_output_to_stdout(mlir_file, capfdbinary):
    # Bytes to stdout with no stage-cache recording going on (recorder is None).
    from mlirhlo_driver.cli.mlirhlo import main

    capfdbinary.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["convert", str(mlir_file), "--to", "bytecode"])
        raise SystemExit(0)
    out, err = capfdbinary.readouterr()
    assert exit_info.value.code in (0, None), err
    assert out.startswith(b"ML\xefR"), out[:16]  # MLIR bytecode magic
    assert err == b""


def test_output_under_a_regular_file_is_refused_by_name(cli, mlir_file, tmp_path):
    # check_output_path walks up to the first existing ancestor: here a file, not a directory.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    r = cli("opt", mlir_file, "-o", blocker / "sub" / "out.mlir")
    assert_one_line_error(r, contains=f"cannot write: {blocker} is not a directory")
    assert blocker.read_text() == "x"


def test_hlo_parser_crash_that_cannot_be_located_is_still_one_error_line(cli, tmp_path):
    # XLA CHECK-fails on this parameter number; its message says 'got 3', which the text
    # spells '03', so no line can be found: the error comes without one. (A reshape that
    # changes the element count was such a crash up to jaxlib 0.10.2; 0.12's parser refuses
    # it with a located error.)
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  ROOT p = f32[4] parameter(03)\n}\n")
    line = assert_one_line_error(cli("opt", bad), contains=f"error: {bad}: malformed HLO module")
    assert "invalid parameter number. Expected [0, 1), got 3" in line


@pytest.mark.parametrize("which", ["minimum", "current"])
def test_vhlo_target_version_range_includes_both_ends(cli, mlir_file, tmp_path, which):
    # The explicit X.Y.Z of the oldest and the newest supported version are in range.
    from jaxlib.mlir.dialects import stablehlo

    version = stablehlo.get_minimum_version() if which == "minimum" else stablehlo.get_current_version()
    out = tmp_path / "m.vhlo"
    r = cli("convert", mlir_file, "--to", "vhlo", "--target-version", version, "-o", out)
    assert r.code == 0, r.err
    assert out.read_bytes().startswith(b"ML\xefR")


def test_spmd_run_runs_once_by_default(cli, mlir_file):
    # --num-repeats defaults to 1: one run, so no per-run time list and no median.
    r = cli("spmd-run", mlir_file)
    assert r.code == 0, r.err
    [line] = [ln for ln in r.out.splitlines() if ln.strip().startswith("compile ")]
    assert ", run " in line and "median" not in line, line
    assert "run times (ms)" not in r.out


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_specs_list_ends_with_one_newline(cli, args):
    # The listing carries its own final newline; echo must not add a blank line after it.
    r = cli("specs", "list", *args)
    assert r.code == 0, r.err
    assert r.out.endswith("\n") and not r.out.endswith("\n\n"), repr(r.out[-40:])
    if args:
        import json

        assert isinstance(json.loads(r.out), list)


def test_bench_pipeline_with_one_pipeline_prints_no_ratio(cli, mlir_file):
    # The B/A line compares two pipelines; with one there is nothing to divide by.
    r = cli("bench-pipeline", mlir_file, "--passes", "canonicalize", "--repeats", "1")
    assert r.code == 0, r.err
    assert r.out.startswith("# A: builtin.module(canonicalize)")
    assert "B/A" not in r.out


def test_html_stage_of_several_modules_goes_to_stdout(cli, mlir_file, tmp_path):
    # html is a text stage: several modules' pages may share stdout (binary stages may not).
    other = tmp_path / "m2.mlir"
    other.write_text(mlir_file.read_text())
    r = cli("opt", mlir_file, other, "--platform", "cpu", "--stage", "html")
    assert r.code == 0, r.err
    # (the page's inlined Graphviz holds an "<HTML>" of its own)
    assert r.out.count("<!DOCTYPE html>") == 2


def test_python_pass_options_error_points_after_the_name(cli, mlir_file):
    r = cli("opt", mlir_file, "--passes", "cse,inline-calls{x=1}")
    assert_one_line_error(r, contains="error: --passes:1:17: Python pass 'inline-calls' takes no options")


def test_run_hlo_module_takes_files_after_double_dash(capfd):
    # '--' ends the flags: what follows is kept as it is (here the module's path).
    from mlirhlo_driver.cli.xla import tools as xla_tools

    hlo = DATA / "xla_tools" / "computation.hlo"
    capfd.readouterr()
    try:
        xla_tools.run_hlo_module_main(["--platform=cpu", "--", str(hlo)])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "0/1 runs miscompared." in out + err


def test_module_xla_cannot_convert_gives_the_diagnostic_text(cli):
    # XLA's exception carries 'loc(...): error: <why>' lines: the error line keeps only <why>.
    src = DATA / "dynamic_reshape.mlir"
    assert_one_line_error(cli("convert", src, "--to", "hlo"),
                          contains="XLA cannot convert this module to HLO: "
                                   "'stablehlo.dynamic_reshape' op expected bounded result")


def test_a_failed_rename_is_one_error_and_an_interrupt_stays_one(tmp_path, monkeypatch):
    """write_atomic: an OSError while the file is being put in place (a full disk, a quota)
    becomes a DriverError naming the path, with no temp file left; anything else (Ctrl-C)
    goes on as it is, the temp file removed too."""
    import errno
    import os

    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    target = tmp_path / "out.mlir"

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outputs.os, "replace", full)
    with pytest.raises(DriverError) as e:
        outputs.write_atomic(target, "module {}\n")
    assert e.value.message == "cannot write: No space left on device" and e.value.file == str(target)
    assert list(tmp_path.iterdir()) == []

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_atomic(target, "module {}\n")
    assert list(tmp_path.iterdir()) == []


def _hlo_opt(capfd, argv):
    from mlirhlo_driver.cli.xla import tools as xla_tools

    capfd.readouterr()
    try:
        xla_tools.hlo_opt_main([str(a) for a in argv])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    out, err = capfd.readouterr()
    return CliResult(code, out, err)


def test_hlo_opt_checks_its_output_path_before_reading_the_module(capfd, tmp_path):
    """A bad --o is the one error even when the input is bad too (nothing is read or compiled for an
    output that cannot be written); '-' and no --o are standard output, never checked as paths."""
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  ROOT x = f32[] nonsense()\n}\n")
    (tmp_path / "outdir").mkdir()
    r = _hlo_opt(capfd, [bad, f"--o={tmp_path / 'outdir'}"])
    assert_one_line_error(r, contains="outdir: is a directory; expected an output file name")
    good = DATA / "xla_tools" / "computation.hlo"
    for o in (["--o=-"], []):
        r = _hlo_opt(capfd, [good, *o])
        assert r.code == 0 and r.out.startswith("HloModule"), r.err


def test_typer_abort_is_one_line_and_exit_130(monkeypatch, capfd):
    """click's Abort (Ctrl-C at a prompt or inside a command) is 'error: aborted', exit 130, as an
    interrupt is everywhere else."""
    import typer

    from mlirhlo_driver.cli import app

    def aborting(**kwargs):
        raise typer.Abort()

    monkeypatch.setattr(app, "_app_for", lambda command: aborting)
    with pytest.raises(SystemExit) as e:
        app.run_app(["run"], "run")
    assert e.value.code == 130 and capfd.readouterr().err == "error: aborted\n"


def test_bench_pipeline_takes_one_repeat_and_refuses_zero(cli, mlir_file):
    r = cli("bench-pipeline", mlir_file, "--passes", "cse", "--repeats", "1")
    assert r.code == 0 and "cse" in r.out, r.err
    assert_one_line_error(cli("bench-pipeline", mlir_file, "--passes", "cse", "--repeats", "0"),
                          contains="--repeats must be >= 1")
