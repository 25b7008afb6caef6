"""Measures every Python process of a ``scripts/mutation.py --build-covmap`` run.

On PYTHONPATH only for that run: a subprocess a test starts (a command line, a
worker) is measured too, labelled with the test that started it (the
``MUTATION_TEST`` variable in the coverage config's ``context``).
"""

import os

if os.environ.get("COVERAGE_PROCESS_START"):
    import coverage

    coverage.process_startup()
