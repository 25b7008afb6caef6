"""pytest plugin for scripts/mutation.py (``-p mutation_pytest``), driven by the environment:

- ``MUTATION_SELECT=FILE``: run only the test ids listed in FILE, one per line
  (a line's covering tests can be thousands, and ids can hold spaces: neither
  fits a command line);
- ``MUTATION_FAILED=FILE``: append the id of each test that fails or errors, as
  it happens (a run cut short by its timeout still leaves the ones before);
- ``MUTATION_DURATIONS=FILE``: each test's seconds, written at the end;
- under coverage (``--build-covmap``): each test's lines are recorded under its
  id, in this process and, through ``MUTATION_TEST`` in the environment, in the
  processes it starts.
"""

from __future__ import annotations

import json
import os

import pytest

_seconds: dict[str, float] = {}


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("MUTATION_SELECT")
    if not path:
        return
    with open(path) as f:
        wanted = set(f.read().splitlines())
    keep = [i for i in items if i.nodeid in wanted]
    drop = [i for i in items if i.nodeid not in wanted]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if os.environ.get("COVERAGE_PROCESS_START"):
        import coverage

        os.environ["MUTATION_TEST"] = item.nodeid
        cov = coverage.Coverage.current()
        if cov is not None:
            cov.switch_context(item.nodeid)
    yield


def pytest_runtest_logreport(report):
    if os.environ.get("MUTATION_DURATIONS"):
        _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    path = os.environ.get("MUTATION_FAILED")
    if path and report.failed:
        with open(path, "a") as f:
            f.write(report.nodeid + "\n")


def pytest_sessionfinish(session):
    path = os.environ.get("MUTATION_DURATIONS")
    if path:
        with open(path, "w") as f:
            json.dump(_seconds, f)
