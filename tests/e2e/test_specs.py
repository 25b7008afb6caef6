"""``mlirhlo specs list|show|check`` as a user runs it."""

from __future__ import annotations

import json
import re

import pytest

from mlirhlo_driver.cuda import tools as cuda_tools
from tests.conftest import REPO, assert_one_line_error


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


def test_specs_list_without_a_usable_ptxas_says_why_and_lists_the_others(cli, monkeypatch):
    """No usable ptxas: `specs list` still succeeds, marks every spec "no", says why there is
    none (the error without "error: ") and lists the other ptxas found as not used."""
    from mlirhlo_driver import targets
    from mlirhlo_driver.errors import ToolchainError

    def no_ptxas(*_a, **_k):
        raise ToolchainError("no usable ptxas (XLA runs it even device-less); searched /nowhere",
                             hint="pip install it")

    stray = cuda_tools.Ptxas("/old/bin/ptxas", (11, 8, 89), ("sm_50", "sm_90"), "PATH")
    monkeypatch.setattr(cuda_tools, "ptxas", no_ptxas)
    monkeypatch.setattr(cuda_tools, "all_ptxas", lambda user_dir=None: [stray])
    why = "no usable ptxas (XLA runs it even device-less); searched /nowhere (pip install it)"
    assert targets.ptxas_in_use() == (None, [stray], why)
    r = cli("specs", "list")
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert lines[-2:] == [f"ptxas: none usable: {why}",
                          "  not used: 11.8.89 /old/bin/ptxas (PATH; targets sm_50..sm_90)"]
    assert lines[1:-2] and all(ln.endswith("  no") for ln in lines[1:-2])


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_specs_list_ends_with_one_newline(cli, args):
    # The listing carries its own final newline; echo must not add a blank line after it.
    r = cli("specs", "list", *args)
    assert r.code == 0, r.err
    assert r.out.endswith("\n") and not r.out.endswith("\n\n"), repr(r.out[-40:])
    if args:
        import json

        assert isinstance(json.loads(r.out), list)


def test_specs_check_reports_every_file_and_fails_if_one_is_bad(cli, small):
    """specs check: an ok line per good file (GPU, sm, SMs), an error line per bad one, exit 2 if any is bad."""
    good = REPO / "gpu_specs" / "h100_sxm.txtpb"
    result = cli("specs", "check", good, small, good)
    assert result.code == 2, result.err
    assert result.out == f"{good}: ok (NVIDIA H100 80GB HBM3, sm_90a, 132 SMs)\n" * 2
    assert result.err.count("\n") == 1 and result.err.startswith(f"error: {small}:1:5: ") and "'func'" in result.err
    result = cli("specs", "check", good)
    assert (result.code, result.err) == (0, "")


def test_specs_show_prints_the_summary_then_the_textproto(cli):
    """specs show: '# key: value' per summary field, then the spec file's text, nothing on stderr."""
    path = REPO / "gpu_specs" / "h100_sxm.txtpb"
    r = cli("specs", "show", "h100_sxm")
    assert r.code == 0 and r.err == "", r.err
    assert r.out.startswith(f"# name: h100_sxm\n# path: {path}\n# gpu: NVIDIA H100 80GB HBM3\n")
    assert r.out.endswith("\n" + path.read_text().rstrip("\n") + "\n")


def test_specs_notes_go_to_stderr(cli, tmp_path):
    """A spec lacking a field its compute capability determines: show and check print the note on
    stderr, one line, and still succeed."""
    text = (REPO / "gpu_specs" / "h100_sxm.txtpb").read_text()
    assert text.count("fpus_per_core: 128\n") == 1
    path = tmp_path / "short.txtpb"
    path.write_text(text.replace("fpus_per_core: 128\n", ""))
    note = (f"note: {path} lacks fpus_per_core; filled in as every compute capability 9.0 GPU reports: "
            "fpus_per_core: 128\n")
    for argv in (["show", path], ["check", path]):
        r = cli("specs", *argv)
        assert (r.code, r.err) == (0, note), argv
    assert r.out == f"{path}: ok (NVIDIA H100 80GB HBM3, sm_90a, 132 SMs)\n"


# ------------------------------------------------------------------ specs

def test_specs_list_table(cli):
    r = cli("specs", "list")
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert lines[0].split() == ["name", "gpu", "cc", "target", "SMs", "memory", "bandwidth", "ptxas"]
    rows = [ln for ln in lines[1:] if not ln.startswith(("ptxas:", "  not used:"))]
    assert len(rows) == 14
    names = [row.split()[0] for row in rows]
    assert names == sorted(p.stem for p in (REPO / "gpu_specs").glob("*.txtpb"))
    default = [row for row in rows if "(default)" in row]
    assert len(default) == 1 and default[0].startswith("h100_sxm (default)")
    # 79 GiB: device_memory_size is what an H100 80GB reports (84942979072 bytes), not 80 GiB.
    assert re.search(r"\bsm_90a\b.*\b132\b.*79 GiB.*3350 GB/s", default[0])


def test_specs_list_json(cli):
    r = cli("specs", "list", "--json")
    assert r.code == 0
    rows = json.loads(r.out)
    assert len(rows) == 14
    by_name = {row["name"]: row for row in rows}
    assert by_name["a100_sxm_80"]["sm"] == "sm_80"
    assert by_name["h100_sxm"]["compute_capability"] == "9.0a"
    assert by_name["h100_sxm"]["sm_count"] == 132
    assert set(by_name["t4"]) >= {"name", "path", "gpu", "compute_capability", "sm", "sm_count",
                                  "memory_bytes", "memory_bandwidth", "clock_ghz"}


def test_specs_show(cli):
    r = cli("specs", "show", "h100_sxm")
    assert r.code == 0 and r.err == ""
    assert "# name: h100_sxm\n" in r.out
    assert "# sm: sm_90a\n" in r.out
    assert "# sm_count: 132\n" in r.out
    assert re.search(r"^gpu_device_info \{$", r.out, re.M)
    assert "core_count: 132" in r.out
    # the textproto follows the summary unchanged
    assert r.out.endswith((REPO / "gpu_specs" / "h100_sxm.txtpb").read_text().rstrip("\n") + "\n")


def test_specs_show_unknown(cli):
    assert_one_line_error(cli("specs", "show", "h100sxm"), facts=("'h100sxm'", "'h100_sxm'"))


def test_specs_check_ok(cli):
    r = cli("specs", "check", REPO / "gpu_specs" / "a10.txtpb")
    assert r.code == 0
    assert r.out.strip().endswith("a10.txtpb: ok (NVIDIA A10, sm_86, 72 SMs)")


def test_specs_check_bad_file(cli, tmp_path):
    bad = tmp_path / "bad.txtpb"
    bad.write_text('gpu_device_info {\n  core_count: "x"\n}\n')
    line = assert_one_line_error(cli("specs", "check", bad))
    assert re.fullmatch(rf"error: {re.escape(str(bad))}:2:15: field 'core_count' expects an integer.*", line)


def test_specs_check_reports_each_bad_file(cli, tmp_path):
    unclosed = tmp_path / "unclosed.txtpb"
    unclosed.write_text("gpu_device_info {\n  core_count: 3\n")
    r = cli("specs", "check", unclosed, REPO / "gpu_specs" / "t4.txtpb")
    assert r.code == 2
    assert "t4.txtpb: ok" in r.out
    errors = r.err.splitlines()
    assert len(errors) == 1
    assert re.match(rf"error: {re.escape(str(unclosed))}:1:17: ", errors[0])
