"""commands/spmd_run.py: spmd-run's launch (the process layout, the coordinator, local
processes or this host's one) and its options, checked before anything runs.
"""

from __future__ import annotations

import pytest

from mlirhlo_driver.execute import engine
from tests.conftest import assert_mentions


def _module(tmp_path, text, name="m.mlir"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _spmd_check_error(launch_fields, **spmd_fields):
    from mlirhlo_driver.commands import spmd_run as spmd_launch
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.execute import spmd

    launch = spmd_launch.SpmdLaunch("m.hlo", **launch_fields)
    try:
        spmd_launch.check(launch, spmd.SpmdOptions(**spmd_fields))
    except DriverError as e:
        return e.format()
    return None


@pytest.mark.parametrize("launch, spmd_fields, error", [
    (dict(), dict(), None),
    (dict(launch_local=2), dict(num_partitions=2), None),
    (dict(launch_local=1), dict(), "error: --launch-local needs at least 2 processes"),
    (dict(launch_local=0), dict(), "error: --launch-local needs at least 2 processes"),
    (dict(launch_local=2, num_processes=2), dict(num_partitions=2),
     "error: give --launch-local N, or --num-processes/--process-id/--coordinator, not both"),
    (dict(launch_local=2, process_id=0), dict(num_partitions=2),
     "error: give --launch-local N, or --num-processes/--process-id/--coordinator, not both"),
    (dict(launch_local=2, coordinator="h:1"), dict(num_partitions=2),
     "error: give --launch-local N, or --num-processes/--process-id/--coordinator, not both"),
    (dict(num_processes=2, process_id=0, coordinator="h:1"), dict(num_partitions=2), None),
    (dict(num_processes=2, process_id=1, coordinator="h:1"), dict(num_partitions=2), None),
    (dict(num_processes=2, process_id=2, coordinator="h:1"), dict(num_partitions=2),
     "error: --process-id must be 0 to 1"),
    (dict(num_processes=3, process_id=-1, coordinator="h:1"), dict(num_partitions=3),
     "error: --process-id must be 0 to 2"),
    (dict(num_processes=2, coordinator="h:1"), dict(num_partitions=2),
     "error: --num-processes needs --process-id and --coordinator HOST:PORT"),
    (dict(num_processes=2, process_id=0), dict(num_partitions=2),
     "error: --num-processes needs --process-id and --coordinator HOST:PORT"),
    (dict(num_processes=0), dict(), "error: --num-processes must be >= 1"),
    (dict(process_id=0), dict(), "error: --process-id and --coordinator need --num-processes > 1"),
    (dict(coordinator="h:1"), dict(), "error: --process-id and --coordinator need --num-processes > 1"),
    (dict(launch_local=2), dict(num_partitions=3), "error: 3 devices cannot be split evenly over 2 processes"),
    (dict(num_processes=4, process_id=0, coordinator="h:1"), dict(num_replicas=6),
     "error: 6 devices cannot be split evenly over 4 processes"),
    (dict(), dict(num_partitions=3), None),
    (dict(timeout=0.0), dict(), "error: --timeout must be > 0"),
    (dict(timeout=-1.0), dict(), "error: --timeout must be > 0"),
    (dict(timeout=0.001), dict(), None),
])
@pytest.mark.golden
def test_spmd_launch_checks_the_process_layout(launch, spmd_fields, error):
    """Golden: spmd-run's process layout: --launch-local N >= 2 alone, or --num-processes > 1 with a
    process id in range and a coordinator, devices split evenly, a positive timeout."""
    assert _spmd_check_error(launch, **spmd_fields) == error


def test_spmd_launch_defaults_and_output_path_check(tmp_path):
    """One process, a 300 s timeout, nothing dumped by default; --dump-output is refused up front
    when it names a directory."""
    from mlirhlo_driver.commands import spmd_run as spmd_launch

    launch = spmd_launch.SpmdLaunch("m.hlo")
    assert (launch.num_processes, launch.process_id, launch.coordinator, launch.launch_local,
            launch.timeout, launch.dump_output, launch.arg_sharding) == (1, None, None, None, 300.0, None, ())
    assert_mentions(_spmd_check_error(dict(dump_output=str(tmp_path))), f"error: {tmp_path}: ", "is a directory")
    assert _spmd_check_error(dict(dump_output=str(tmp_path / "out.npz"))) is None


@pytest.mark.parametrize("value, want", [
    ("h:1", ("h", 1)), ("10.0.0.1:65535", ("10.0.0.1", 65535)), ("[::1]:80", ("[::1]", 80)),
    ("h:0", "port 0 is not 1-65535"), ("h:65536", "port 65536 is not 1-65535"),
    ("h:99999", "port 99999 is not 1-65535"), ("h:123456", "'h:123456' is not HOST:PORT, e.g. 10.0.0.1:1234"),
    ("h", "'h' is not HOST:PORT, e.g. 10.0.0.1:1234"), (":80", "':80' is not HOST:PORT, e.g. 10.0.0.1:1234"),
    ("a b:1", "'a b:1' is not HOST:PORT, e.g. 10.0.0.1:1234"),
])
@pytest.mark.golden
def test_spmd_coordinator_host_port(value, want):
    """Golden: --coordinator HOST:PORT: a port of 1 to 5 digits in 1-65535; a bracketed IPv6 host."""
    from mlirhlo_driver.commands.spmd_run import check_host_port
    from mlirhlo_driver.errors import DriverError

    if isinstance(want, tuple):
        assert check_host_port(value) == want
    else:
        with pytest.raises(DriverError) as e:
            check_host_port(value)
        assert e.value.format() == f"error: {want}"


@pytest.mark.golden
def test_spmd_options_from_the_command_line(monkeypatch):
    """Golden (spmd_options' refusals). spmd_options: the partitioner lower-cased, 'random' arguments unless asked, the flags sorted;
    --inputs with --argument-mode, or --arg-sharding where XLA does not partition, refused."""
    from mlirhlo_driver.commands.spmd_run import spmd_options
    from mlirhlo_driver.errors import DriverError

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    flags = {"xla_cpu_enable_fast_math": True, "xla_backend_optimization_level": 1}
    o = spmd_options(flags, partitioner="GSPMD", num_partitions=2, arg_sharding=("0={replicated}",))
    assert (o.partitioner, o.argument_mode, o.inputs_npz, o.num_partitions) == ("gspmd", "random", None, 2)
    assert o.xla_flags == (("xla_backend_optimization_level", 1), ("xla_cpu_enable_fast_math", True))
    o = spmd_options({}, argument_mode="zeros")
    assert (o.partitioner, o.argument_mode, o.xla_flags) == (None, "zeros", ())
    assert spmd_options({}, inputs_npz="x.npz").inputs_npz == "x.npz"
    for kwargs, message in [
        (dict(inputs_npz="x.npz", argument_mode="zeros"), "error: give --inputs or --argument-mode, not both"),
        (dict(arg_sharding=("0={replicated}",), num_partitions=2, is_spmd_partitioned_module=True),
         "error: --arg-sharding is for modules that XLA partitions, not already partitioned ones"),
        (dict(arg_sharding=("0={replicated}",)), "error: --arg-sharding needs --num-partitions > 1"),
        (dict(num_repeats=0), None),
    ]:
        with pytest.raises(DriverError) as e:
            spmd_options({}, **kwargs)
        if message:
            assert e.value.format() == message


def test_spmd_with_shardings_parses_each_spec_and_keeps_options_without_any():
    """--arg-sharding PARAM=SHARDING specs become (parameter, braced sharding) pairs; none: the
    options unchanged."""
    from mlirhlo_driver.commands.spmd_run import with_shardings
    from mlirhlo_driver.execute import spmd

    o = spmd.SpmdOptions(num_partitions=4)
    assert with_shardings(o, ()) is o
    assert with_shardings(o, ["1=devices=[4,1]<=[4]", "0={replicated}"]).arg_shardings == (
        (1, "{devices=[4,1]<=[4]}"), (0, "{replicated}"))


@pytest.mark.golden
def test_spmd_load_one_refuses_more_than_one_module(tmp_path, monkeypatch):
    """Golden: spmd-run takes exactly one module: a directory of two files, or a file of two modules, is refused."""
    from mlirhlo_driver.commands.spmd_run import load_one
    from mlirhlo_driver.errors import DriverError

    for n in "ab":
        _module(tmp_path, "HloModule m\n\nENTRY main {\n  ROOT c = f32[] constant(1)\n}\n", f"{n}.hlo")
    with pytest.raises(DriverError) as e:
        load_one(str(tmp_path), None, None)
    assert e.value.format() == f"error: spmd-run takes one module; {tmp_path} gives 2"
    one = load_one(str(tmp_path / "a.hlo"), None, None)
    assert engine.signature(one.module)[1][0].dtype == "float32"
    from mlirhlo_driver.core import program

    monkeypatch.setattr(program, "programs", lambda specs, options: [one, one])
    with pytest.raises(DriverError) as e:
        load_one(str(tmp_path / "a.hlo"), None, None)
    assert e.value.format() == f"error: spmd-run takes one module; {tmp_path / 'a.hlo'} gives 2"


def test_spmd_run_in_this_process_for_one_process_else_workers(monkeypatch):
    """run: the layout checked and --arg-sharding parsed, then one process runs here; several are
    started as workers once the module is checked here (spmd.prepare); their exit status is returned."""
    from mlirhlo_driver.commands import spmd_run as spmd_launch
    from mlirhlo_driver.execute import spmd

    seen = []
    monkeypatch.setattr(spmd_launch, "_in_process", lambda launch, o: seen.append(("here", o.arg_shardings)) or 3)
    monkeypatch.setattr(spmd_launch, "launch_processes",
                        lambda launch, o: seen.append(("workers", o.arg_shardings)) or 4)
    monkeypatch.setattr(spmd_launch, "load_one", lambda *a: seen.append(("load", a)) or "loaded")
    monkeypatch.setattr(spmd, "prepare", lambda loaded, o: seen.append(("prepare", loaded)))
    o = spmd.SpmdOptions(num_partitions=2)
    assert spmd_launch.run(spmd_launch.SpmdLaunch("m.hlo", arg_sharding=("0={replicated}",)), o) == 3
    assert seen == [("here", ((0, "{replicated}"),))]
    seen.clear()
    assert spmd_launch.run(spmd_launch.SpmdLaunch("m.hlo", "hlo", "f32[2]", launch_local=2), o) == 4
    assert seen == [("load", ("m.hlo", "hlo", "f32[2]")), ("prepare", "loaded"), ("workers", ())]
    seen.clear()
    many = spmd_launch.SpmdLaunch("m.hlo", num_processes=2, process_id=1, coordinator="h:1")
    assert spmd_launch.run(many, o) == 4 and [s[0] for s in seen] == ["load", "prepare", "workers"]
    from mlirhlo_driver.errors import DriverError

    with pytest.raises(DriverError):
        spmd_launch.run(spmd_launch.SpmdLaunch("m.hlo", launch_local=1), o)


@pytest.mark.golden
def test_spmd_launch_processes_local_or_this_hosts_one(monkeypatch, capsys):
    """Golden (the launch's notes). --launch-local N: N workers (ids 0..N-1) on a free 127.0.0.1 port, each noted with its pid,
    their output prefixed; --num-processes: this host's one worker, unprefixed."""
    from mlirhlo_driver.commands import spmd_run as spmd_launch
    from mlirhlo_driver.execute import spmd

    seen = []

    def worker_configs(source, input_format, args, options, **kw):
        seen.append((source, input_format, args, kw))
        return ["cfgs"]

    def supervise(cfgs, *, prefixed, on_start=None):
        seen.append((cfgs, prefixed))
        if on_start:
            on_start(1, 4242)
        return 5

    monkeypatch.setattr(spmd, "free_port", lambda: 6123)
    monkeypatch.setattr(spmd, "worker_configs", worker_configs)
    monkeypatch.setattr(spmd, "supervise", supervise)
    o = spmd.SpmdOptions(num_partitions=3)
    local = spmd_launch.SpmdLaunch("m.hlo", "hlo", None, launch_local=3, timeout=9.0, dump_output="o.npz")
    assert spmd_launch.launch_processes(local, o, what="workers") == 5
    assert seen == [("m.hlo", "hlo", None, dict(num_processes=3, process_ids=[0, 1, 2], coordinator="127.0.0.1:6123",
                                                 timeout=9.0, dump_output="o.npz")), (["cfgs"], True)]
    assert capsys.readouterr().err == ("note: 3 workers, coordinator 127.0.0.1:6123\n"
                                       "note: process 1 is pid 4242\n")
    seen.clear()
    one = spmd_launch.SpmdLaunch("m.hlo", num_processes=3, process_id=2, coordinator="h:7")
    assert spmd_launch.launch_processes(one, o) == 5
    assert seen == [("m.hlo", None, None, dict(num_processes=3, process_ids=[2], coordinator="h:7", timeout=300.0,
                                                dump_output=None)), (["cfgs"], False)]
    seen.clear()
    unnamed = spmd_launch.SpmdLaunch("m.hlo", num_processes=3)
    spmd_launch.launch_processes(unnamed, o)
    assert seen[0][3]["process_ids"] == [0] and seen[0][3]["coordinator"] == ""
    assert capsys.readouterr().err == ""


def test_spmd_in_process_prints_the_report_dumps_outputs_and_exits_by_the_match(monkeypatch, capsys, tmp_path):
    """One process: the host devices made first, the report on stdout, the outputs written when
    asked; exit 0 when it matched, 1 when not."""
    from types import SimpleNamespace

    from mlirhlo_driver.commands import spmd_run as spmd_launch
    from mlirhlo_driver.execute import spmd

    seen = []
    passed = [True]
    monkeypatch.setattr(spmd_launch, "load_one", lambda *a: seen.append(("load", a)) or "loaded")
    monkeypatch.setattr(spmd, "run_in_process",
                        lambda loaded, o: SimpleNamespace(report=SimpleNamespace(passed=passed[0])))
    monkeypatch.setattr(spmd, "format_report", lambda r: "the report")
    monkeypatch.setattr(spmd, "outputs_npz", lambda r: b"npz bytes")
    o = spmd.SpmdOptions(num_partitions=4)
    out = tmp_path / "o.npz"
    assert spmd_launch._in_process(spmd_launch.SpmdLaunch("m.hlo", "hlo", "a", dump_output=str(out)), o) == 0
    assert seen == [("load", ("m.hlo", "hlo", "a"))]
    assert capsys.readouterr().out == "the report\n" and out.read_bytes() == b"npz bytes"
    passed[0] = False
    out.unlink()
    assert spmd_launch._in_process(spmd_launch.SpmdLaunch("m.hlo"), o) == 1
    assert not out.exists()
