"""Behaviour: each XLA-named tool flag defaults to what XLA's own tool uses.

One table, XLA_DEFAULTS, holds XLA's defaults, read from XLA's sources:

* hlo-opt: ``xla/hlo/tools/hlo_opt/opt_main.cc`` (``HloOptConfig``, and its
  ``debug_options_file`` flag);
* run_hlo_module: ``xla/tools/run_hlo_module.h`` (``RunHloModuleOptions``:
  ``abs_error_bound{1e-3}``, ``rel_error_bound{1e-3}``, ...);
* multihost_hlo_runner: ``xla/tools/multihost_hlo_runner/hlo_runner_main.cc``
  (``HloRunnerConfig``).

Where the driver differs on purpose, DEVIATIONS gives its value and the words
of the tool's docs page (docs/xla-tools/TOOL.md) or the flag's --help that say so. The table is checked against
the parser (``xla_cli_flags.parse([])``), the tools' ``--help`` and the docs pages'
flag table, and every flag a tool declares must have a row, so a new flag
needs its XLA default written down here.
"""

from __future__ import annotations

import pytest

from mlirhlo_driver.batch import run_report
from mlirhlo_driver.cli.xla import tools as xla_tools
from mlirhlo_driver.execute import spmd
from mlirhlo_driver.xla import cli_flags as xla_cli_flags
from tests.conftest import REPO

# tool -> flag -> XLA's default
XLA_DEFAULTS: dict[str, dict[str, object]] = {
    "hlo-opt": {
        "o": "-", "platform": "transforms", "format": "", "stage": "hlo", "list-stages": False,
        "split-input-file": False, "passes": "", "list-passes": False, "emit-proto": False,
        "debug_options_file": "",
        # The driver's own (XLA's hlo-opt compiles a sharded module unpartitioned): run_hlo_module's
        # spelling and default, the module's own count.
        "num_partitions": -1,
        # The driver's own (XLA's open-source hlo-opt has no TPU): empty, the default topology.
        "tpu_topology": "",
    },
    "run_hlo_module": {
        "platform": "", "reference_platform": "default", "print_literals": False,
        "run_test_hlo_passes": True, "use_large_float_range": False,
        "abs_error_bound": 1e-3, "rel_error_bound": 1e-3, "input_format": "", "input_module": "",
        "iterations": 1, "debug_options_file": "", "input_literals_file": "", "output_literals_file": "",
        "run_reference_hlo_passes": True, "random_init_input_literals": True, "force_fake_data": False,
        "isolate_instructions": False,
    },
    "multihost_hlo_runner": {
        "num_replicas": -1, "num_partitions": 1, "use_spmd_partitioning": False,
        "is_spmd_partitioned_module": False, "run_xla_backend_only": False,
        "hlo_argument_mode": "use_random_inputs", "num_repeats": 1, "input_format": "text",
        "hlo_file": "", "device_type": "gpu", "task_id": 0, "num_nodes": 1, "address": "",
        "enable_mock_nccl": False, "run": True, "log_output": False, "debug_options_file": "",
        "dump_output_literal_to": "", "while_execution_count": -1, "remove_infeed_outfeed": True,
        "execution_options_path": "", "profile_execution": False,
    },
    # No XLA source for ptx-opt's flags was found: these rows are the driver's own
    # (documented in its --help), pinned so that they change only on purpose.
    "ptx-opt": {"arch": "9.0", "o": "-"},
}

# (tool, flag) -> (the driver's default, where the difference is documented: the tool's docs page or --help words)
DEVIATIONS: dict[tuple[str, str], tuple[object, str, str]] = {
    ("hlo-opt", "platform"): ("", "docs", "Without `--platform`, `hlo` prints the module as read"),
    ("run_hlo_module", "platform"): ("CPU", "docs", "Default CPU (XLA has none)"),
    ("multihost_hlo_runner", "num_partitions"): (-1, "docs", "default from the `HloModule` header"),
    ("multihost_hlo_runner", "num_replicas"): (-1, "docs", "default from the `HloModule` header"),
    ("multihost_hlo_runner", "input_format"): ("", "help", "default: from the content"),
    ("multihost_hlo_runner", "device_type"): ("host", "docs", "partly: host devices, or `tpu`"),
}

FLAGS = {"hlo-opt": xla_tools.HLO_OPT_FLAGS, "run_hlo_module": xla_tools.RUN_HLO_MODULE_FLAGS,
         "multihost_hlo_runner": xla_tools.MULTIHOST_FLAGS, "ptx-opt": xla_tools.PTX_OPT_FLAGS}

# Each XLA-named tool's page of the docs site: its flag table, deviations included.
DOCS = {tool: (REPO / "docs" / "xla-tools" / f"{tool}.md").read_text()
        for tool in ("hlo-opt", "run_hlo_module", "multihost_hlo_runner")}


def _expected(tool: str, name: str) -> object:
    deviation = DEVIATIONS.get((tool, name))
    return deviation[0] if deviation else XLA_DEFAULTS[tool][name]


# ------------------------------------------------ the defaults, as the run receives them

class _Stop(BaseException):
    pass


def _options_reaching(monkeypatch, tmp_path, owner, runner: str, main):
    """The options a front-end hands ``owner.runner`` when run with no flags on a tiny module."""
    seen = []

    def stand_in(*args, **kwargs):
        seen.append(kwargs.get("options", args[1] if len(args) > 1 else None))
        raise _Stop

    monkeypatch.setattr(owner, runner, stand_in)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    src = tmp_path / "m.hlo"
    src.write_text("HloModule m\n\nENTRY main {\n  ROOT p = f32[2] parameter(0)\n}\n")
    with pytest.raises(_Stop):
        main([str(src)])
    return seen[0]


# The driver's own commands: every option not listed here is off (None or False) by default.
MLIRHLO_DEFAULTS: dict[str, dict[str, object]] = {
    "opt": {"inputs": [], "stage": "stablehlo", "timing_format": "text", "verify_each": True, "jobs": 0},
    # run's reference: per platform (the interpreter on the CPU, XLA CPU for cuda and tpu)
    "run": {"platform": "cpu", "reference": None, "seed": 0, "iterations": 1, "jobs": 1},
    "spmd-run": {"num_partitions": 1, "num_replicas": 1, "seed": 0, "num_repeats": 1, "reference": "cpu", "platform": "cpu",
                 "num_processes": 1, "timeout": 300.0},
    "ptx": {"arch": "sm_90a", "opt_level": 3, "optimize": True, "check_ptxas": True},
    "bench-pipeline": {"repeats": 10},
}


def _mlirhlo_defaults() -> dict[str, dict[str, object]]:
    """Each command's option defaults as its parser has them (typer's, and opt's argparse)."""
    import typer.main

    from mlirhlo_driver.cli import app as cli_app
    from mlirhlo_driver.cli import opt as opt_cli

    out: dict[str, dict[str, object]] = {}

    def walk(cmd, path):
        if hasattr(cmd, "commands"):  # a group (typer's own click: no isinstance)
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        else:
            out[" ".join(path)] = {p.name: p.default for p in cmd.params if p.param_type_name == "option"}

    walk(typer.main.get_command(cli_app.app), [])
    out["opt"] = opt_cli.parse([])[0]
    return out


@pytest.mark.parametrize("tool", list(FLAGS))
def test_every_flag_has_a_row(tool):
    declared = {f.name for f in FLAGS[tool]}
    assert declared == set(XLA_DEFAULTS[tool]), (declared ^ set(XLA_DEFAULTS[tool]))


@pytest.mark.parametrize("tool, name", [(t, n) for t, rows in XLA_DEFAULTS.items() for n in rows])
def test_parsed_default(tool, name):
    parsed = xla_cli_flags.parse([], FLAGS[tool])
    got, want = parsed[name], _expected(tool, name)
    assert type(got) is type(want) and got == want, (tool, name, got, want)
    assert not parsed.was_given(name)


@pytest.mark.parametrize("tool, name", sorted(DEVIATIONS))
def test_deviations_are_documented(tool, name):
    _, where, words = DEVIATIONS[tool, name]
    if where == "docs":
        assert words in DOCS[tool], (tool, name, words)
    else:
        flag = next(f for f in FLAGS[tool] if f.name == name)
        assert words in flag.help, (tool, name, flag.help)


@pytest.mark.parametrize("tool", list(FLAGS))
def test_help_shows_the_defaults(tool):
    text = xla_cli_flags.usage(tool, "[FLAGS] FILE", "", FLAGS[tool])
    for f in FLAGS[tool]:
        value = _expected(tool, f.name)
        line = next(ln for ln in text.splitlines() if ln.split() and ln.split()[0].split("=")[0] == f"--{f.name}")
        if f.kind == "bool":
            assert ("(default: true)" in line) is (value is True), line
        elif value not in (None, ""):
            assert f"(default: {value})" in line, line


def test_docs_flag_table_shows_the_error_bounds():
    row = next(ln for ln in DOCS["run_hlo_module"].splitlines() if ln.startswith("| `--abs_error_bound`"))
    assert "`--rel_error_bound`" in row and "XLA's defaults, 1e-3" in row
    assert XLA_DEFAULTS["run_hlo_module"]["abs_error_bound"] == XLA_DEFAULTS["run_hlo_module"]["rel_error_bound"] \
        == 1e-3


def test_run_hlo_module_defaults_reach_the_run(monkeypatch, tmp_path):
    """No flags: XLA's bounds (not the per-dtype ones of ``mlirhlo run``), the interpreter
    reference, random inputs on the small range, one iteration, XLA's HLO passes."""
    o = _options_reaching(monkeypatch, tmp_path, run_report, "execute_tasks", xla_tools.run_hlo_module_main)
    assert (o.rtol, o.atol) == (1e-3, 1e-3) and type(o.rtol) is float and type(o.atol) is float
    assert (o.platform, o.reference, o.iterations, o.seed) == ("cpu", "interpreter", 1, 0)
    assert (o.large_float_range, o.zeros, o.keep_outputs, o.bisect) == (False, False, False, False)
    assert dict(o.xla_flags) == {} and dict(o.reference_xla_flags) == {}


def test_multihost_defaults_reach_the_run(monkeypatch, tmp_path):
    o = _options_reaching(monkeypatch, tmp_path, spmd, "run_in_process", xla_tools.multihost_main)
    assert (o.num_replicas, o.num_partitions, o.num_repeats) == (1, 1, 1)  # the header has no counts
    assert (o.argument_mode, o.is_spmd_partitioned_module, o.run_xla_backend_only) == ("random", False, False)
    assert dict(o.xla_flags) == {}


@pytest.mark.parametrize("flags, counts", [
    ([], (2, 4)),                                              # unset (-1): the header's counts
    (["--num_replicas=0", "--num_partitions=0"], (2, 4)),      # 0 is no count either
    (["--num_replicas=-1", "--num_partitions=-1"], (2, 4)),
    (["--num_partitions=0"], (2, 4)),
    (["--num_replicas=1", "--num_partitions=2"], (1, 2)),     # both given: the flags
    (["--num_partitions=8"], (2, 8)),                          # one given: it, and the header's other
])
def test_multihost_counts_come_from_the_header_unless_given(monkeypatch, tmp_path, flags, counts):
    seen = []

    def stand_in(*args, **kwargs):
        seen.append(kwargs.get("options", args[1] if len(args) > 1 else None))
        raise _Stop

    monkeypatch.setattr(spmd, "run_in_process", stand_in)
    # Nothing runs: the counts need no devices.
    monkeypatch.setattr(spmd, "check_options", lambda o: None)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    src = tmp_path / "m.hlo"
    src.write_text("HloModule m, replica_count=2, num_partitions=4\n\nENTRY main {\n  ROOT p = f32[2] parameter(0)\n}\n")
    with pytest.raises(_Stop):
        xla_tools.multihost_main([*flags, str(src)])
    assert (seen[0].num_replicas, seen[0].num_partitions) == counts


def test_the_driver_commands_defaults():
    found = _mlirhlo_defaults()
    assert {"opt", "run", "spmd-run", "ptx", "bench-pipeline", "convert", "diff", "kernels"} <= set(found)
    for command, options in found.items():
        want = MLIRHLO_DEFAULTS.get(command, {})
        assert {k: options[k] for k in want} == want, command
        on = {k: v for k, v in options.items() if k not in want and v not in (None, False)}
        assert on == {}, (command, on)
