"""commands/mlirhlo.py's bench-pipeline: the table and JSON of one or two pipelines and
their ratio, with the measurements replaced by fakes.
"""

from __future__ import annotations

import pytest

# ------------------------------------------------------------ bench-pipeline's report (fake timings)

@pytest.fixture
def fake_bench(monkeypatch):
    """bench_pipeline over fixed timings: the program, the pipelines and the clock are fakes;
    ``calls`` records what was resolved and benchmarked."""
    from types import SimpleNamespace

    from mlirhlo_driver import api
    from mlirhlo_driver.execute import bench
    from mlirhlo_driver.mlir import pipeline

    calls: dict = {"resolved": [], "python_passes": [], "benched": None,
                   "totals": [[3.0, 2.0, 4.0], [6.0, 5.0, 7.0]]}

    def resolve(spec=None, *, passes=None, python_passes=None):
        calls["resolved"].append((spec, passes))
        calls["python_passes"].append(python_passes)
        given = spec if spec is not None else passes
        return None if given is None else SimpleNamespace(spec=f"P({given})")

    def bench_pipelines(module, roots, repeats):
        calls["benched"] = (module, [r.spec for r in roots], repeats)
        return [bench.PipelineBench(root.spec, [bench.PassStat("outer", 0, [1.0, 0.5, 1.5]),
                                                bench.PassStat("inner", 1, [0.25, 0.125, 2.0])], totals)
                for root, totals in zip(roots, calls["totals"])]

    monkeypatch.setattr(api, "load", lambda input, input_format=None, args=None:
                        SimpleNamespace(module=f"module of {input}", name="m"))
    monkeypatch.setattr(pipeline, "resolve", resolve)
    monkeypatch.setattr(bench, "bench_pipelines", bench_pipelines)
    return calls


@pytest.fixture
def fake_xla_bench(monkeypatch, fake_bench):
    """bench_pipeline with a target: XLA's pipeline timed by a fake; records the options used."""
    from types import SimpleNamespace

    from mlirhlo_driver.execute import bench

    seen: dict = {}

    def bench_xla_pipeline(module, name, options, repeats):
        seen["call"] = (module, name, options, repeats)
        return ([bench.XlaPassTime("simplification", "algsimp", [2.0, 1.0, 4.0]),
                 bench.XlaPassTime("fusion", "fusion-merger", [0.5, 0.25, 0.75])], [10.0, 8.0, 12.5])

    monkeypatch.setattr(bench, "bench_xla_pipeline", bench_xla_pipeline)
    target = SimpleNamespace(platform="cpu", say_notes=lambda say: seen.setdefault("note", True),
                             stage_options=lambda: [("first", "options-1"), ("second", "options-2")])
    return target, seen


def test_bench_pipeline_table_of_two_pipelines_and_their_ratio(fake_bench):
    """Each pipeline's table (passes indented by depth, then Total), then B's median total over A's."""
    from mlirhlo_driver.commands import mlirhlo as commands

    out = commands.bench_pipeline("x.mlir", passes="cse", compare="canonicalize,cse", repeats=3)
    assert fake_bench["benched"] == ("module of x.mlir", ["P(cse)", "P(canonicalize,cse)"], 3)
    assert out == (
        "# A: P(cse)  (3 runs, fresh copy each)\n"
        " median ms       min       max  pass\n"
        "     1.000     0.500     1.500  outer\n"
        "     0.250     0.125     2.000    inner\n"
        "     3.000     2.000     4.000  Total\n"
        "# B: P(canonicalize,cse)  (3 runs, fresh copy each)\n"
        " median ms       min       max  pass\n"
        "     1.000     0.500     1.500  outer\n"
        "     0.250     0.125     2.000    inner\n"
        "     6.000     5.000     7.000  Total\n"
        "# B/A total (medians, runs interleaved A B A B): 2.000x\n")


def test_bench_pipeline_one_pipeline_has_no_ratio(fake_bench):
    """One pipeline: its table alone, no B/A line, and no "ratio" in the JSON."""
    import json

    from mlirhlo_driver.commands import mlirhlo as commands

    out = commands.bench_pipeline("x.mlir", pipeline_spec="@p", repeats=1)
    assert out.splitlines()[0] == "# A: P(@p)  (1 runs, fresh copy each)"
    assert out.endswith("     3.000     2.000     4.000  Total\n") and "B/A" not in out
    data = json.loads(commands.bench_pipeline("x.mlir", pipeline_spec="@p", repeats=1, json_out=True))
    assert data == {"module": "m", "runs": [{
        "pipeline": "P(@p)", "repeats": 3, "total_median_ms": 3.0, "total_min_ms": 2.0, "total_max_ms": 4.0,
        "passes": [{"pass": "outer", "depth": 0, "median_ms": 1.0, "min_ms": 0.5, "max_ms": 1.5, "runs": 3},
                   {"pass": "inner", "depth": 1, "median_ms": 0.25, "min_ms": 0.125, "max_ms": 2.0, "runs": 3}]}]}


def test_bench_pipeline_json_of_two_pipelines_has_the_ratio(fake_bench):
    """JSON: both runs and B/A's ratio of median totals, indented by 2, one final newline."""
    import json

    from mlirhlo_driver.commands import mlirhlo as commands

    out = commands.bench_pipeline("x.mlir", passes="cse", compare="@other", repeats=2, json_out=True)
    assert out.startswith('{\n  "module": "m",\n  "runs": [\n') and out.endswith("\n}\n")
    data = json.loads(out)
    assert [r["pipeline"] for r in data["runs"]] == ["P(cse)", "P(@other)"]
    assert data["ratio"] == 2.0


@pytest.mark.parametrize("compare, resolved", [
    ("@named", ("@named", None)),
    ("builtin.module(cse)", ("builtin.module(cse)", None)),
    ("canonicalize,cse", (None, "canonicalize,cse")),
])
def test_bench_pipeline_compare_is_a_spec_a_name_or_a_pass_list(fake_bench, compare, resolved):
    """--compare: '@NAME' or 'builtin.module(...)' is a pipeline; anything else a pass list."""
    from mlirhlo_driver.commands import mlirhlo as commands

    commands.bench_pipeline("x.mlir", passes="cse", compare=compare, repeats=1)
    assert fake_bench["resolved"] == [(None, "cse"), resolved]


def test_bench_pipeline_resolves_both_pipelines_with_its_python_passes(fake_bench):
    """python_passes (the command's --load-pass-plugin set) is what both pipelines may name;
    without it, each resolves with the built-in and installed ones (None)."""
    from mlirhlo_driver.commands import mlirhlo as commands
    from mlirhlo_driver.mlir.python_passes import PassSet

    mine = PassSet()
    commands.bench_pipeline("x.mlir", passes="cse", compare="canonicalize", repeats=1, python_passes=mine)
    commands.bench_pipeline("x.mlir", passes="cse", compare="canonicalize", repeats=1)
    assert [p is mine for p in fake_bench["python_passes"]] == [True, True, False, False]
    assert fake_bench["python_passes"][2:] == [None, None]


def test_bench_pipeline_ratio_is_none_when_a_takes_0_ms(fake_bench):
    """A's median total 0 ms (too fast for the timer): no division; text and JSON say none."""
    import json

    from mlirhlo_driver.commands import mlirhlo as commands

    fake_bench["totals"] = [[0.0, 0.0, 1.0], [6.0, 5.0, 7.0]]
    out = commands.bench_pipeline("x.mlir", passes="cse", compare="canonicalize", repeats=3)
    assert out.endswith("\n# B/A total (medians, runs interleaved A B A B): none (A's median total is 0 ms)\n")
    assert json.loads(commands.bench_pipeline("x.mlir", passes="cse", compare="canonicalize", repeats=3,
                                              json_out=True))["ratio"] is None


@pytest.mark.golden
def test_bench_pipeline_needs_a_pipeline_and_a_repeat(fake_bench):
    """Golden: no --pipeline nor --passes, or --repeats below 1: a usage error, before any benchmark."""
    from mlirhlo_driver.commands import mlirhlo as commands
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError) as e:
        commands.bench_pipeline("x.mlir", repeats=1)
    assert e.value.format() == "error: give --pipeline or --passes"
    with pytest.raises(DriverError) as e:
        commands.bench_pipeline("x.mlir", passes="cse", repeats=0)
    assert e.value.format() == "error: --repeats must be >= 1"
    assert fake_bench["benched"] is None


def test_bench_pipeline_of_xla_table(fake_xla_bench):
    """With a target: XLA's HLO pipeline per dump interval, then the whole compile."""
    from mlirhlo_driver.commands import mlirhlo as commands

    target, seen = fake_xla_bench
    out = commands.bench_pipeline("x.mlir", target=target, repeats=3)
    assert seen == {"note": True, "call": ("module of x.mlir", "m", "options-1", 3)}
    assert out == (
        "# XLA cpu HLO pipeline, 3 compiles; times between per-pass dumps (XLA dumps after passes that "
        "change the module), from file timestamps\n"
        " median ms       min       max  pipeline / ending with pass\n"
        "     2.000     1.000     4.000  simplification / algsimp\n"
        "     0.500     0.250     0.750  fusion / fusion-merger\n"
        "    10.000     8.000    12.500  whole compile\n")


def test_bench_pipeline_of_xla_json(fake_xla_bench):
    """With a target and --json: the platform, the source of the times, and every row."""
    import json

    from mlirhlo_driver.commands import mlirhlo as commands

    target, _ = fake_xla_bench
    out = commands.bench_pipeline("x.mlir", target=target, repeats=3, json_out=True)
    assert out.startswith('{\n  "platform": "cpu",\n') and out.endswith("\n}\n")
    assert json.loads(out) == {
        "platform": "cpu", "source": "per-pass dump file timestamps", "compile_ms": [10.0, 8.0, 12.5],
        "passes": [{"pipeline": "simplification", "ending_with": "algsimp", "times_ms": [2.0, 1.0, 4.0]},
                   {"pipeline": "fusion", "ending_with": "fusion-merger", "times_ms": [0.5, 0.25, 0.75]}]}
