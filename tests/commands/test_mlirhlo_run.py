"""commands/mlirhlo.py's run: its exit code from the reports, its options handed on, its JSON rows."""

from __future__ import annotations

import pytest

# ------------------------------------------------------------ run's verdict (fake reports)

@pytest.fixture
def fake_run(monkeypatch):
    """commands.run over fake modules and reports: ``state["statuses"]`` are the reports' statuses
    (OK passes); ``state`` records the options, the printing and the saving."""
    from types import SimpleNamespace

    from mlirhlo_driver.batch import run_report
    from mlirhlo_driver.execute import engine

    state: dict = {"statuses": ["OK"], "printed": None, "saved": None}

    def execute_tasks(tasks, options, jobs, timeout, scheduler):
        state["executed"] = (tasks, options, jobs, timeout, scheduler)
        return [SimpleNamespace(status=s, passed=s == "OK", message=f"{s} message", row=lambda s=s: {"status": s})
                for s in state["statuses"]]

    def print_run_reports(reports, options, print_literals, extra_flags):
        state["printed"] = ([r.status for r in reports], print_literals, extra_flags)

    monkeypatch.setattr(run_report, "run_tasks", lambda inputs, fmt, split, args: [f"task {i}" for i in inputs])
    monkeypatch.setattr(run_report, "execute_tasks", execute_tasks)
    monkeypatch.setattr(run_report, "print_run_reports", print_run_reports)
    monkeypatch.setattr(run_report, "save_outputs", lambda path, reports: state.update(saved=(path, len(reports))))
    monkeypatch.setattr(engine, "require_devices", lambda platform: None)
    return state


@pytest.mark.parametrize("statuses, code", [
    (["OK"], 0), (["OK", "OK"], 0), (["OK", "MISMATCH"], 1), (["FAILED"], 1), (["OK", "invalid"], 2),
])
def test_run_exit_code_is_the_worst_report(fake_run, statuses, code):
    """0 when every module matches, 1 when one mismatches or fails, 2 when one (of several) is invalid;
    every report is printed."""
    from mlirhlo_driver.commands import mlirhlo as commands

    fake_run["statuses"] = statuses
    assert commands.run(["a.mlir"], cli_flags={}, extra_words=[]) == code
    assert fake_run["printed"] == (statuses, False, [])


def test_run_of_one_invalid_module_is_one_error_line(fake_run, capsys):
    """A single module that is invalid: its message as the one error line, exit 2, no report printed."""
    from mlirhlo_driver.commands import mlirhlo as commands

    fake_run["statuses"] = ["invalid"]
    assert commands.run(["a.mlir"], cli_flags={}, extra_words=["--xla_x=1"]) == 2
    assert capsys.readouterr() == ("", "error: invalid message\n")
    assert fake_run["printed"] is None


def test_run_passes_its_options_on(fake_run, tmp_path):
    """What run hands the runner and the report: reference aliases resolved, outputs kept only when
    printed or saved, the XLA flags sorted, --split-input-file in the reproducer's flags."""
    from mlirhlo_driver.commands import mlirhlo as commands

    commands.run(["a.mlir", "b.mlir"], cli_flags={}, extra_words=["--xla_b=1"], reference="Host", jobs=0,
                 timeout=2.5, scheduler="tcp://h:8786", split_input_file=True)
    tasks, options, jobs, timeout, scheduler = fake_run["executed"]
    assert (tasks, jobs, timeout, scheduler) == (["task a.mlir", "task b.mlir"], 0, 2.5, "tcp://h:8786")
    assert (options.reference, options.platform, options.keep_outputs) == ("cpu", "cpu", False)
    # the dtype's default tolerances, judged as numpy's allclose (not XLA's ErrorSpec)
    assert (options.rtol, options.atol, options.xla_error_spec) == (None, None, False)
    assert fake_run["printed"][2] == ["--xla_b=1", "--split-input-file"]
    for kwargs in ({"print_literals": True}, {"save_outputs": str(tmp_path / "o.npz")}):
        commands.run(["a.mlir"], cli_flags={}, extra_words=[], **kwargs)
        assert fake_run["executed"][1].keep_outputs is True, kwargs
        assert fake_run["printed"][1] is bool(kwargs.get("print_literals")), kwargs
    assert fake_run["saved"] == (str(tmp_path / "o.npz"), 1)


def test_run_json_report_rows(fake_run, tmp_path):
    """--json: every report's row, a JSON list indented by 2, one final newline; written whatever the verdict."""
    from mlirhlo_driver.commands import mlirhlo as commands

    fake_run["statuses"] = ["OK", "MISMATCH"]
    path = tmp_path / "r.json"
    assert commands.run(["a.mlir"], cli_flags={}, extra_words=[], json_report=str(path)) == 1
    assert path.read_text() == '[\n  {\n    "status": "OK"\n  },\n  {\n    "status": "MISMATCH"\n  }\n]\n'
    assert fake_run["saved"] is None
