"""pytest plugin for scripts/mutation.py (``-p mutation_pytest``), driven by the environment:

- ``MUTATION_SELECT=FILE``: run only the test ids listed in FILE, one per line
  (a line's covering tests can be thousands, and ids can hold spaces: neither
  fits a command line);
- ``MUTATION_FAILED=FILE``: append the id of each test that fails or errors, as
  it happens (a run cut short by its timeout still leaves the ones before), and
  the path of each test file that cannot be collected; a path in
  ``MUTATION_SELECT`` selects the whole file;
- ``MUTATION_RUNNING=FILE``: the id of the test running now (a test that kills
  its process leaves no report, only this);
- ``MUTATION_DURATIONS=FILE``: each test's seconds, written at the end;
- under coverage (``--build-covmap``): each test's lines are recorded under its
  id, in this process and, through ``MUTATION_TEST`` in the environment, in the
  processes it starts; a shared (not function-scoped) fixture's lines under the
  fixture, and ``MUTATION_FIXTURES=FILE`` gets each test's shared fixtures.
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
    keep = [i for i in items if i.nodeid in wanted or i.nodeid.split("::")[0] in wanted]
    drop = [i for i in items if i not in keep]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def _label(label: str) -> None:
    """Lines run from here on (here and in processes started from here) are ``label``'s."""
    import coverage

    global _fork_hooked
    os.environ["MUTATION_TEST"] = label
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(label)
        if not _fork_hooked:
            # A child forked here (the native-code helpers) restarts coverage with the
            # context this process started with, empty: give it the test's id again.
            os.register_at_fork(after_in_child=_relabel_child)
            _fork_hooked = True


_fork_hooked = False


def _relabel_child() -> None:
    import coverage

    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(os.environ.get("MUTATION_TEST", ""))


_SCOPE_NODES = {"session": pytest.Session, "package": pytest.Package, "module": pytest.Module,
                "class": pytest.Class}
_fixtures: dict[str, list[str]] = {}


def _fixture_label(argname: str, node) -> str:
    return f"fixture {argname} @ {node.nodeid}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    running = os.environ.get("MUTATION_RUNNING")
    if running:
        with open(running, "w") as f:
            f.write(item.nodeid)
    if os.environ.get("COVERAGE_PROCESS_START"):
        _label(item.nodeid)
        # The tests that use each shared fixture: what it runs, it runs for all of them.
        labels = []
        for name in item.fixturenames:
            defs = item._fixtureinfo.name2fixturedefs.get(name)
            kind = _SCOPE_NODES.get(defs[-1].scope) if defs else None
            node = item.getparent(kind) if kind else None
            if node is not None:
                labels.append(_fixture_label(name, node))
        _fixtures[item.nodeid] = labels
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    # A fixture shared by several tests runs once, under whichever test came first: its lines
    # are labelled as the fixture's, then put down to every test that uses it.
    if not os.environ.get("COVERAGE_PROCESS_START") or fixturedef.scope == "function":
        yield
        return
    before = os.environ.get("MUTATION_TEST", "")
    _label(_fixture_label(fixturedef.argname, request.node))
    try:
        yield
    finally:
        _label(before)


def pytest_runtest_logreport(report):
    if os.environ.get("MUTATION_DURATIONS"):
        _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    path = os.environ.get("MUTATION_FAILED")
    if path and report.failed:
        with open(path, "a") as f:
            f.write(report.nodeid + "\n")


def pytest_collectreport(report):
    # A test file whose import fails (a module-level call that raises) stops the run
    # before any test: it is named by its path.
    path = os.environ.get("MUTATION_FAILED")
    if path and report.failed and report.nodeid:
        with open(path, "a") as f:
            f.write(report.nodeid + "\n")


def pytest_sessionfinish(session):
    path = os.environ.get("MUTATION_DURATIONS")
    if path:
        with open(path, "w") as f:
            json.dump(_seconds, f)
    path = os.environ.get("MUTATION_FIXTURES")
    if path:
        with open(path, "w") as f:
            json.dump(_fixtures, f)
