"""commands/mlirhlo.py's ptx: what reaches stdout, stderr and the IR dump directory."""

from __future__ import annotations

import pytest

# ------------------------------------------------------------ ptx's outputs (fake LLVM)

@pytest.fixture
def fake_ptx(monkeypatch):
    """commands.ptx over a fake NVPTX backend: two modules' pass dumps (one unnamed, one named, one
    IR without its final newline); ``seen`` records the options compiled with."""
    from types import SimpleNamespace

    from mlirhlo_driver.cuda import ptx as ptx_backend

    seen: dict = {}
    long_pass = "x" * 100

    def compile_llvm_ir(text, source, options):
        seen["call"] = (text, source, options)
        return SimpleNamespace(text="// ptx\n", dumps=[("", "pass-a", "ir a\n"), ("mod1", "pass b/c", "ir b"),
                                                       ("", long_pass, "ir c\n")])

    monkeypatch.setattr(ptx_backend, "read_llvm_ir", lambda source: f"IR of {source}")
    monkeypatch.setattr(ptx_backend, "compile_llvm_ir", compile_llvm_ir)
    return seen


def test_ptx_to_stdout_with_the_options_asked(fake_ptx, capsys):
    """No -o: the PTX on stdout; the options reach the backend; no pass dumps unless asked for."""
    from mlirhlo_driver.commands import mlirhlo as commands

    commands.ptx("k.ll", arch="sm_80", opt_level=1, optimize=False, libdevice="ld.bc", check_ptxas=False)
    assert capsys.readouterr() == ("// ptx\n", "")
    text, source, options = fake_ptx["call"]
    assert (text, source) == ("IR of k.ll", "k.ll")
    assert (options.arch, options.opt_level, options.optimize, options.libdevice, options.check_ptxas,
            options.dump_passes) == ("sm_80", 1, False, "ld.bc", False, False)


def test_ptx_print_after_all_writes_each_ir_to_stderr(fake_ptx, capsys, tmp_path):
    """--print-after-all: every pass's IR on stderr, each ending in one newline; -o takes the PTX."""
    from mlirhlo_driver.commands import mlirhlo as commands

    out = tmp_path / "k.ptx"
    commands.ptx("k.ll", print_after_all=True, output=str(out))
    assert capsys.readouterr() == ("", "ir a\nir b\nir c\n")
    assert out.read_text() == "// ptx\n"
    assert fake_ptx["call"][2].dump_passes is True


def test_ptx_ir_dump_dir_has_one_numbered_file_per_pass(fake_ptx, capsys, tmp_path):
    """--ir-dump-dir: NNN-MODULE_PASS.ll per pass (unsafe characters as '_', names cut at 80), in
    order; nothing on stderr even with --print-after-all."""
    from mlirhlo_driver.commands import mlirhlo as commands

    dump = tmp_path / "dump"
    commands.ptx("k.ll", ir_dump_dir=str(dump), print_after_all=True)
    assert capsys.readouterr() == ("// ptx\n", "")
    assert sorted(p.name for p in dump.iterdir()) == ["000-pass-a.ll", "001-mod1_pass_b_c.ll",
                                                      "002-" + "x" * 80 + ".ll"]
    assert (dump / "001-mod1_pass_b_c.ll").read_text() == "ir b"
    assert fake_ptx["call"][2].dump_passes is True
