"""``mlirhlo convert`` as a user runs it: every format to every format, round trips that
hold, the output format from the extension, and its usage errors.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import DATA, assert_mentions, assert_one_line_error

MLP_DUMP = DATA / "mlp_train_step.before_optimizations.txt"

FORMATS = {"hlo": ".hlo", "hlo-proto": ".pb", "hlo-pbtxt": ".pbtxt", "stablehlo": ".mlir",
           "bytecode": ".mlirbc", "vhlo": ".vhlo"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """The MLP step in every format, made by the CLI itself."""
    from mlirhlo_driver.cli.mlirhlo import main

    d = tmp_path_factory.mktemp("formats")
    out = {}
    for fmt, ext in FORMATS.items():
        path = d / f"mlp{ext}"
        try:
            main(["convert", str(MLP_DUMP), "--to", fmt, "-o", str(path)])
        except SystemExit as e:
            assert e.code == 0
        out[fmt] = path
    return out


def _run_cpu(path, inputs):
    from mlirhlo_driver._native import jaxlib as _jaxlib
    from mlirhlo_driver.inputs import loader

    module = loader.load(str(path))[0].module
    device = _jaxlib.cpu_devices()[0]
    exe = _jaxlib.compile_executable(module, [device], _jaxlib.compile_options())
    return _jaxlib.execute(exe, inputs, device)


def _mlp_inputs():
    rng = np.random.default_rng(0)
    shapes = [(32,), (8,), (16, 32), (32, 8), (4, 16)]
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    args.append(rng.integers(0, 8, size=(4,)).astype(np.int32))
    return args


@pytest.fixture(scope="module")
def mlir_file(add_mlir_file) -> Path:
    return add_mlir_file


@pytest.mark.parametrize("src,dst", list(itertools.permutations(FORMATS, 2)))
def test_every_pair(cli, sources, tmp_path, src, dst):
    out = tmp_path / f"out{FORMATS[dst]}"
    result = cli("convert", sources[src], "--to", dst, "-o", out)
    assert result.code == 0, result.err
    from mlirhlo_driver.inputs import loader as inputs

    (loaded,) = inputs.load(str(out))
    assert loaded.format == {"stablehlo": "mlir"}.get(dst, dst)
    assert "dot_general" in loaded.module.operation.get_asm()


def test_format_from_output_extension(cli, tmp_path):
    out = tmp_path / "m.pb"
    assert cli("convert", MLP_DUMP, "-o", out).code == 0
    from mlirhlo_driver.ir import hlo_proto

    assert hlo_proto.looks_like_hlo_proto(out.read_bytes()) == "HloModuleProto"


def test_emit_proto_like_hlo_opt(cli, tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    assert cli("convert", MLP_DUMP, "--emit-proto", "-o", a).code == 0
    assert cli("convert", MLP_DUMP, "--to", "hlo-proto", "-o", b).code == 0
    assert a.read_bytes() == b.read_bytes()


def test_text_proto_text_is_stable(cli, tmp_path):
    t1, pb, t2, pbtxt, t3 = (tmp_path / n for n in ("1.hlo", "m.pb", "2.hlo", "m.pbtxt", "3.hlo"))
    assert cli("convert", MLP_DUMP, "--to", "hlo", "-o", t1).code == 0
    assert cli("convert", t1, "--to", "hlo-proto", "-o", pb).code == 0
    assert cli("convert", pb, "--to", "hlo", "-o", t2).code == 0
    assert cli("convert", t2, "--to", "hlo-pbtxt", "-o", pbtxt).code == 0
    assert cli("convert", pbtxt, "--to", "hlo", "-o", t3).code == 0
    assert t1.read_text() == t2.read_text() == t3.read_text()
    assert t1.read_text().startswith("HloModule jit_mlp_train_step")


def test_stablehlo_hlo_stablehlo_computes_the_same(cli, tmp_path):
    mlir1, hlo, mlir2 = tmp_path / "a.mlir", tmp_path / "b.hlo", tmp_path / "c.mlir"
    assert cli("convert", DATA / "chlo_special.mlir", "--to", "stablehlo", "-o", mlir1).code == 0
    assert cli("convert", mlir1, "--to", "hlo", "-o", hlo).code == 0
    assert cli("convert", hlo, "--to", "stablehlo", "-o", mlir2).code == 0
    x = np.linspace(-0.8, 0.8, 8, dtype=np.float32)
    (a,) = _run_cpu(mlir1, [x])
    (b,) = _run_cpu(mlir2, [x])
    np.testing.assert_allclose(a, b, rtol=1e-6)
    # and against an independent reference: erf_inv via scipy, lgamma via math
    import math

    from scipy.special import erfinv

    ref = erfinv(np.clip(x, -0.9, 0.9)).astype(np.float32) + np.array(
        [math.lgamma(v * v + 1.0) for v in x], np.float32)
    np.testing.assert_allclose(a, ref, rtol=2e-5, atol=2e-6)


@pytest.mark.slow
def test_mlp_through_every_format_computes_the_same(sources):
    args = _mlp_inputs()
    reference = _run_cpu(MLP_DUMP, args)
    for fmt, path in sources.items():
        got = _run_cpu(path, args)
        assert len(got) == len(reference) == 4
        for g, r in zip(got, reference):
            np.testing.assert_allclose(g, r, rtol=1e-6, err_msg=fmt)


def test_vhlo_target_version(cli, tmp_path):
    old = tmp_path / "old.vhlo"
    assert cli("convert", DATA / "softmax.vhlo", "--to", "vhlo", "--target-version", "1.0.0", "-o", old).code == 0
    assert old.read_bytes().startswith(b"ML\xefR\rStableHLO_v1.0.0")
    line = assert_one_line_error(cli("convert", DATA / "softmax.vhlo", "--to", "vhlo",
                                     "--target-version", "0.1.0", "-o", tmp_path / "x.vhlo"))
    assert_mentions(line, "0.1.0")
    assert not (tmp_path / "x.vhlo").exists()


def test_jax_function_converts(cli, tmp_path, monkeypatch):
    (tmp_path / "mm.py").write_text("import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) * 2\n")
    monkeypatch.chdir(tmp_path)
    result = cli("convert", "mm:f", "--args", "f32[4]", "--to", "hlo")
    assert result.code == 0, result.err
    assert "sine(" in result.out and "f32[4]" in result.out


def test_unknown_format(cli, tmp_path):
    line = assert_one_line_error(cli("convert", MLP_DUMP, "--to", "stablehl", "-o", tmp_path / "x"))
    assert "did you mean 'stablehlo'" in line


def test_binary_to_terminal_refused(cli):
    # capfd makes stdout a file, not a tty: binary goes through; the check is unit-tested here
    from mlirhlo_driver import outputs
    from mlirhlo_driver.errors import DriverError

    class Tty:
        def isatty(self):
            return True

    import sys

    real = sys.stdout
    sys.stdout = Tty()  # type: ignore[assignment]
    try:
        with pytest.raises(DriverError):
            outputs.write_stdout(b"\x00\x01")
    finally:
        sys.stdout = real


def test_usage_errors_are_one_line(cli):
    result = cli("convert")
    assert result.code == 2
    assert result.err.startswith("error: ") and len(result.err.strip().splitlines()) == 1


def test_convert_a_directory(cli, tmp_path):
    import shutil

    d = tmp_path / "two"
    d.mkdir()
    shutil.copy(DATA / "erf_inv.mlir", d / "a.mlir")
    shutil.copy(DATA / "softmax.vhlo", d / "b.vhlo")
    assert_one_line_error(cli("convert", d, "--to", "hlo", "-o", tmp_path / "x.hlo"), at=str(d), facts=("2",))
    assert not (tmp_path / "x.hlo").exists()


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


@pytest.mark.parametrize("which", ["minimum", "current"])
def test_vhlo_target_version_range_includes_both_ends(cli, mlir_file, tmp_path, which):
    # The explicit X.Y.Z of the oldest and the newest supported version are in range.
    from jaxlib.mlir.dialects import stablehlo

    version = stablehlo.get_minimum_version() if which == "minimum" else stablehlo.get_current_version()
    out = tmp_path / "m.vhlo"
    r = cli("convert", mlir_file, "--to", "vhlo", "--target-version", version, "-o", out)
    assert r.code == 0, r.err
    assert out.read_bytes().startswith(b"ML\xefR")


def test_module_xla_cannot_convert_gives_the_diagnostic_text(cli):
    # XLA's exception carries 'loc(...): error: <why>' lines: the error line keeps only <why>.
    src = DATA / "dynamic_reshape.mlir"
    line = assert_one_line_error(cli("convert", src, "--to", "hlo"), facts=("'stablehlo.dynamic_reshape'", "bounded"))
    assert "loc(" not in line


def test_convert_output_path_is_refused_before_the_input_is_read(cli, tmp_path):
    """convert: a bad -o is refused before any work, even before a missing input is noticed."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(cli("convert", tmp_path / "missing.mlir", "--to", "hlo", "-o", out_dir),
                          contains=f"{out_dir}: is a directory")


def test_emit_proto_conflicts_with_to(cli, small):
    assert_one_line_error(cli("convert", small, "--emit-proto", "--to", "stablehlo"),
                          facts=("--emit-proto", "--to stablehlo"))


def test_emit_proto_alone_is_to_hlo_proto(cli, small, tmp_path):
    """--emit-proto (hlo-opt's spelling) writes what --to hlo-proto writes; given together they agree."""
    outs = []
    for i, args in enumerate((["--emit-proto"], ["--to", "hlo-proto"], ["--emit-proto", "--to", "hlo-proto"])):
        out = tmp_path / f"{i}.bin"  # an extension that names no format
        result = cli("convert", small, *args, "-o", out)
        assert result.code == 0, result.err
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2] and outs[0][:6] == b"\n\x04main"


@pytest.mark.parametrize("name, fmt", [("m.hlo", "HloModule"), ("m.txt", "HloModule"), ("m.mlir", "module"),
                                       ("m.pbtxt", "name:")])
def test_convert_format_from_the_output_extension(cli, small, tmp_path, name, fmt):
    """Without --to, -o's extension picks the format; an unknown extension asks for --to."""
    out = tmp_path / name
    result = cli("convert", small, "-o", out)
    assert result.code == 0, result.err
    assert out.read_text().lstrip().startswith(fmt), out.read_text()[:80]


def test_convert_to_wins_over_the_output_extension(cli, small, tmp_path):
    """--to FORMAT is the format whatever -o's extension says."""
    out = tmp_path / "m.mlir"
    result = cli("convert", small, "--to", "hlo", "-o", out)
    assert result.code == 0, result.err
    assert out.read_text().startswith("HloModule")


def test_convert_needs_a_format(cli, small, tmp_path):
    """No --to and no -o (or an -o whose extension names no format): one line listing the formats."""
    message = ("error: give --to FORMAT (or an -o file with a known extension) "
               "(formats: hlo, hlo-proto, hlo-pbtxt, stablehlo, bytecode, vhlo, mhlo)")
    assert assert_one_line_error(cli("convert", small)) == message
    assert assert_one_line_error(cli("convert", small, "-o", tmp_path / "m.xyz")) == message
    assert not (tmp_path / "m.xyz").exists()


def test_a_failed_conversion_names_the_file(cli, tmp_path):
    """A conversion the module cannot take (CHLO into VHLO): the error names the input file."""
    src = DATA / "chlo_special.mlir"
    line = assert_one_line_error(cli("convert", src, "--to", "vhlo", "-o", tmp_path / "x.vhlo"))
    assert line.startswith(f"error: {src}: cannot serialize as a StableHLO ")
