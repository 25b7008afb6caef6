"""pytest plugin for scripts/mutation.py (``-p mutation_pytest``).

- ``MUTATION_SELECT=FILE``: run only the test ids listed in FILE, one per line
  (a line's covering tests can be thousands: too many for a command line).
- Under coverage (``--build-covmap``): each test's lines are recorded under its
  id, in this process and, through ``MUTATION_TEST`` in the environment, in the
  processes it starts.
"""

from __future__ import annotations

import os

import pytest


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


_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if os.environ.get("MUTATION_DURATIONS"):
        _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    path = os.environ.get("MUTATION_DURATIONS")
    if path:
        import json

        with open(path, "w") as f:
            json.dump(_seconds, f)
