"""Behaviour: every spelling of every flag type gives exactly the value it spells.

Two layers, on every front-end:

* what each parser makes of a spelling (hypothesis over the installed
  ``xla.DebugOptions`` schema's bool, int, float and string fields; each XLA
  tool's own flags, every bool spelling tsl/absl accept);
* what reaches XLA's compile (``CompileOptions.env_option_overrides``), caught
  at ``_jaxlib.compile_options`` for ``mlirhlo opt``, ``mlirhlo run``,
  ``mlirhlo spmd-run``, ``hlo-opt``, ``run_hlo_module`` and
  ``multihost_hlo_runner``, from the command line, ``XLA_FLAGS`` and a
  debug-options file.

XLA's tools parse ``--xla_*`` (command line and XLA_FLAGS) with tsl: a bool is
``true``/``false`` in any case or ``1``/``0``, bare ``--xla_NAME`` is true; a
string is the text as given; an int or float is the number.
"""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlirhlo_driver._native import jaxlib as _jaxlib
from mlirhlo_driver.batch import run_report
from mlirhlo_driver.cli.xla import tools as xla_tools
from mlirhlo_driver.errors import FlagError
from mlirhlo_driver.xla import cli_flags as xla_cli_flags
from mlirhlo_driver.xla import flags as xla_flags

TYPES = xla_flags.debug_option_types()

FIELDS = {kind: sorted(n for n, k in TYPES.items() if k == kind) for kind in ("bool", "int", "float", "str")}

# The driver sets these itself for every compile (dumps, device-less CUDA); a user's
# value still wins, but the end-to-end tests below use fields nothing else touches.
E2E_BOOL = "xla_cpu_enable_fast_math"          # default false

E2E_BOOL_TRUE = "xla_cpu_fast_math_honor_nans"  # default true

E2E_INT = "xla_backend_optimization_level"

E2E_STR = "xla_dump_hlo_module_re"

TRUE_SPELLINGS = ("true", "TRUE", "True", "1")

FALSE_SPELLINGS = ("false", "FALSE", "False", "0")

BOOL_SPELLINGS = [(f"={s}", True) for s in TRUE_SPELLINGS] + [(f"={s}", False) for s in FALSE_SPELLINGS] \
    + [("", True)]

TOOL_FLAGS = {
    "hlo-opt": xla_tools.HLO_OPT_FLAGS,
    "run_hlo_module": xla_tools.RUN_HLO_MODULE_FLAGS,
    "multihost_hlo_runner": xla_tools.MULTIHOST_FLAGS,
    "ptx-opt": xla_tools.PTX_OPT_FLAGS,
}


@pytest.fixture(autouse=True)
def _no_env_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)


# ------------------------------------------------------- parsers: DebugOptions values

def _same(got, want) -> bool:
    """Equal and of the same type: 0 is not False, 1.0 is not 1, "1" is not 1."""
    return type(got) is type(want) and got == want


_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "_./,:*|", min_size=0, max_size=12)


@st.composite
def spelled(draw):
    """(field, text after '=', the value XLA's tsl parser reads from it), or text None for a bare flag."""
    kind = draw(st.sampled_from(["bool", "int", "float", "str"]))
    name = draw(st.sampled_from(FIELDS[kind]))
    if kind == "bool":
        text, value = draw(st.sampled_from(BOOL_SPELLINGS))
        return name, (text[1:] if text else None), value
    if kind == "int":
        n = draw(st.integers(-2**31, 2**31 - 1))
        return name, draw(st.sampled_from([str(n), f"+{n}" if n >= 0 else str(n)])), n
    if kind == "float":
        x = draw(st.floats(allow_nan=False, allow_infinity=False, width=32))
        text = draw(st.sampled_from([repr(x), f"{x:e}", str(int(x)) if x == int(x) and abs(x) < 1e15 else repr(x)]))
        return name, text, float(text)
    text = draw(_TEXT)
    return name, text, text


def _parse_tool(argv: list[str], flags) -> dict:
    return xla_cli_flags.parse(argv, flags).xla_flags


def _enum_cases():
    from mlirhlo_driver.ir import protos

    fields = protos.message_class("xla.DebugOptions").DESCRIPTOR.fields_by_name
    for name in FIELDS_OF["enum"][:8]:
        for value in [v.name for v in fields[name].enum_type.values][:3]:
            yield name, value
    for name in FIELDS_OF["repeated"][:8]:
        yield name, "a,b"


FIELDS_OF = {kind: sorted(n for n, k in TYPES.items() if k == kind) for kind in ("enum", "repeated")}


# ------------------------------------------------------------ parsers: the tools' own flags

def _bool_flag_cases():
    for tool, flags in TOOL_FLAGS.items():
        for f in flags:
            if f.kind != "bool":
                continue
            spellings = [(f"--{f.name}", True), (f"-{f.name}", True), (f"--no{f.name}", False),
                         (f"--{f.name.replace('_', '-')}", True), (f"--{f.name.replace('-', '_')}=0", False)]
            spellings += [(f"--{f.name}={s}", True) for s in TRUE_SPELLINGS]
            spellings += [(f"--{f.name}={s}", False) for s in FALSE_SPELLINGS]
            for word, value in spellings:
                yield pytest.param(tool, f, word, value, id=f"{tool}:{word}")


def _valued_flag_cases():
    samples = {"int": [("7", 7), ("-1", -1), ("+3", 3), ("0", 0)],
               "float": [("0.5", 0.5), ("1", 1.0), ("1e-2", 0.01), ("0", 0.0), ("2.", 2.0)],
               "str": [("x.txt", "x.txt"), ("", ""), ("a=b", "a=b")]}
    for tool, flags in TOOL_FLAGS.items():
        for f in flags:
            if f.kind == "bool":
                continue
            cases = [(c, c) for c in f.choices] + [(c.upper(), c.upper()) for c in f.choices[:1]] \
                if f.choices else samples[f.kind]
            for text, value in cases:
                yield pytest.param(tool, f, text, value, id=f"{tool}:{f.name}={text}")


# ------------------------------------------------------------- what reaches the compile

MODULE = ("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
          "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")


class _Reached(BaseException):
    """Raised by the stand-in for _jaxlib.compile_options: the flags got as far as XLA."""


@pytest.fixture
def compile_flags(monkeypatch, tmp_path):
    """``compile_flags(entry, argv)`` runs a front-end's main until XLA's compile options are
    made and returns the env_option_overrides it passed, as a dict."""
    seen: list[dict] = []

    def stand_in(*args, env_overrides=None, **kw):
        seen.append(dict(env_overrides or ()))
        raise _Reached

    monkeypatch.setattr(_jaxlib, "compile_options", stand_in)
    # run_hlo_module runs its modules in a worker process: here, so this process compiles.
    execute = run_report.execute_tasks
    monkeypatch.setattr(run_report, "execute_tasks",
                        lambda tasks, opts, jobs, timeout, scheduler=None: execute(tasks, opts, 0, timeout))
    src = tmp_path / "m.mlir"
    src.write_text(MODULE)

    def run(entry: str, argv: list[str]) -> dict:
        from mlirhlo_driver.cli.mlirhlo import main

        mains = {"mlirhlo": main, "hlo-opt": xla_tools.hlo_opt_main,
                 "run_hlo_module": xla_tools.run_hlo_module_main,
                 "multihost_hlo_runner": xla_tools.multihost_main}
        argv = [str(src) if a == "M" else a for a in argv]
        seen.clear()
        with pytest.raises(_Reached):
            mains[entry](argv)
        return seen[-1]

    return run


FRONT_ENDS = {
    "mlirhlo opt": ("mlirhlo", ["opt", "--platform", "cpu", "--stage", "hlo", "--no-cache", "M"]),
    "mlirhlo run": ("mlirhlo", ["run", "--jobs", "0", "--reference", "none", "M"]),
    "mlirhlo spmd-run": ("mlirhlo", ["spmd-run", "--reference", "none", "M"]),
    "hlo-opt": ("hlo-opt", ["--platform=cpu", "--stage=hlo", "M"]),
    "run_hlo_module": ("run_hlo_module", ["--platform=cpu", "--reference_platform=", "M"]),
    "multihost_hlo_runner": ("multihost_hlo_runner", ["M"]),
}

TOOLS = ("hlo-opt", "run_hlo_module", "multihost_hlo_runner")

# --noxla_NAME is the XLA tools' (absl) spelling only
E2E_BOOL_CASES = [(f, s, v) for f in FRONT_ENDS for s, v in BOOL_SPELLINGS + [("NEG", False)]
                  if s != "NEG" or f in TOOLS]


def test_the_schema_has_every_kind():
    """The property tests below draw from these; an empty list would make them vacuous."""
    assert all(FIELDS[k] for k in FIELDS) and all(FIELDS_OF.values()), {k: len(v) for k, v in FIELDS.items()}
    assert {E2E_BOOL, E2E_BOOL_TRUE} <= set(FIELDS["bool"])
    assert E2E_INT in FIELDS["int"] and E2E_STR in FIELDS["str"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spelled())
def test_debug_option_value_on_every_parser(case):
    name, text, value = case
    word = f"--{name}" if text is None else f"--{name}={text}"
    # XLA's tools (one parser; each tool's own flag list around it), flags before and after an input
    for tool, flags in TOOL_FLAGS.items():
        for argv in ([word, "in.hlo"], ["in.hlo", word]):
            got = _parse_tool(argv, flags)
            assert _same(got.get(name), value), (tool, argv, got)
    # mlirhlo's subcommands (opt, run, spmd-run, bench-pipeline): inputs around the flag
    got, rest = xla_flags.parse_flag_args(["in.mlir", word, "b.mlir"], separate_values=False)
    assert _same(got.get(name), value) and rest == ["in.mlir", "b.mlir"], (word, got)
    # XLA_FLAGS
    got, rest = xla_flags.parse_flag_args([word])
    assert _same(got.get(name), value) and rest == [], (word, got)


@settings(max_examples=150, deadline=None)
@given(spelled())
def test_debug_option_value_separate_word(case):
    """``--xla_NAME VALUE``: the tools and XLA_FLAGS take the next word as the value of a
    non-bool field; a bool never takes one (``--xla_gpu_dump_llvmir input.ll``)."""
    name, text, value = case
    if text is None or text.startswith("-") or text == "":
        return
    for flags in TOOL_FLAGS.values():
        p = xla_cli_flags.parse([f"--{name}", text], flags)
        if TYPES[name] == "bool":
            assert p.xla_flags == {name: True} and p.positionals == [text]
        else:
            assert _same(p.xla_flags.get(name), value) and p.positionals == []
    got, rest = xla_flags.parse_flag_args([f"--{name}", text])
    if TYPES[name] != "bool":
        assert _same(got.get(name), value) and rest == []


@pytest.mark.parametrize("name", [E2E_BOOL, E2E_BOOL_TRUE])
@pytest.mark.parametrize("spelling, value", BOOL_SPELLINGS + [("NEG", False)])
def test_bool_debug_option_on_the_tools(name, spelling, value):
    word = f"--no{name}" if spelling == "NEG" else f"--{name}{spelling}"
    for flags in TOOL_FLAGS.values():
        got = _parse_tool([word, "in.hlo"], flags)
        assert got == {name: value} and type(got[name]) is bool, (word, got)


@pytest.mark.parametrize("text, value", [(s, True) for s in TRUE_SPELLINGS] + [(s, False) for s in FALSE_SPELLINGS])
def test_bool_debug_option_in_an_options_file(tmp_path, text, value):
    """A --debug-options-file: textproto fields (protobuf text format takes 1/0 for a bool
    too) and XLA_FLAGS-style lines."""
    f = tmp_path / "opts.txt"
    f.write_text(f"{E2E_BOOL}: {text}\n--{E2E_BOOL_TRUE}={text}\n{E2E_INT}: 2\n{E2E_STR}: \"7\"\n")
    got = xla_flags.from_file_checked(str(f))
    assert got == {E2E_BOOL: value, E2E_BOOL_TRUE: value, E2E_INT: 2, E2E_STR: "7"}
    assert type(got[E2E_BOOL]) is bool and type(got[E2E_BOOL_TRUE]) is bool and type(got[E2E_INT]) is int


@pytest.mark.parametrize("name, text", list(_enum_cases()))
def test_enum_and_repeated_debug_options_pass_as_text(name, text):
    """Enums (by value name) and repeated fields (comma lists): the text, for XLA's own parser."""
    word = f"--{name}={text}"
    for flags in TOOL_FLAGS.values():
        assert _parse_tool([word, "in.hlo"], flags) == {name: text}
    assert xla_flags.parse_flag_args([word], separate_values=False)[0] == {name: text}
    assert xla_flags.parse_flag_args([word])[0] == {name: text}


@pytest.mark.parametrize("word", [f"--{E2E_BOOL}=3", f"--{E2E_BOOL}=yes", f"--{E2E_BOOL}=01"])
def test_bad_bool_debug_option_is_refused_by_the_tools(word):
    with pytest.raises(FlagError, match="expected true or false"):
        _parse_tool([word, "in.hlo"], xla_tools.HLO_OPT_FLAGS)


@pytest.mark.parametrize("tool, flag, word, value", list(_bool_flag_cases()))
def test_tool_bool_flag_spellings(tool, flag, word, value):
    flags = TOOL_FLAGS[tool]
    p = xla_cli_flags.parse([word, "in.hlo"], flags)
    assert p[flag.name] is value, (word, p.values[flag.key])
    assert p.was_given(flag.name) and p.positionals == ["in.hlo"]
    # the other way round from its default, so a spelling ignored would show
    p = xla_cli_flags.parse(["in.hlo", word], flags)
    assert p[flag.name] is value


@pytest.mark.parametrize("tool, flag, text, value", list(_valued_flag_cases()))
def test_tool_valued_flag_spellings(tool, flag, text, value):
    flags = TOOL_FLAGS[tool]
    spellings = [[f"--{flag.name}={text}"], [f"-{flag.name}={text}"]]
    if text and not text.startswith("-"):
        spellings.append([f"--{flag.name}", text])
    for argv in spellings:
        p = xla_cli_flags.parse(argv + ["in.hlo"], flags)
        assert _same(p[flag.name], value), (argv, p[flag.name])
        assert p.positionals == ["in.hlo"]


def test_tool_flag_values_of_the_wrong_type_are_refused():
    with pytest.raises(FlagError, match="expected an integer"):
        xla_cli_flags.parse(["--iterations=1.5"], xla_tools.RUN_HLO_MODULE_FLAGS)
    with pytest.raises(FlagError, match="expected a number"):
        xla_cli_flags.parse(["--abs_error_bound=x"], xla_tools.RUN_HLO_MODULE_FLAGS)
    with pytest.raises(FlagError, match="expected true or false"):
        xla_cli_flags.parse(["--print_literals=2"], xla_tools.RUN_HLO_MODULE_FLAGS)
    with pytest.raises(FlagError, match="expected one of"):
        xla_cli_flags.parse(["--hlo_argument_mode=nope"], xla_tools.MULTIHOST_FLAGS)


@pytest.mark.parametrize("front_end, spelling, value", E2E_BOOL_CASES)
def test_bool_reaches_the_compile_from_the_command_line(compile_flags, front_end, spelling, value):
    entry, argv = FRONT_ENDS[front_end]
    words = [f"--no{n}" if spelling == "NEG" else f"--{n}{spelling}" for n in (E2E_BOOL, E2E_BOOL_TRUE)]
    env = compile_flags(entry, argv + words)
    assert env[E2E_BOOL] is value and env[E2E_BOOL_TRUE] is value, (words, env)


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_typed_values_reach_the_compile_from_xla_flags_and_the_command_line(compile_flags, monkeypatch, front_end):
    entry, argv = FRONT_ENDS[front_end]
    monkeypatch.setenv("XLA_FLAGS", f"--{E2E_BOOL}=0 --{E2E_BOOL_TRUE}=FALSE --{E2E_INT}=1 --{E2E_STR}=12")
    env = compile_flags(entry, list(argv))
    assert env[E2E_BOOL] is False and env[E2E_BOOL_TRUE] is False
    assert _same(env[E2E_INT], 1) and _same(env[E2E_STR], "12")
    # the command line over XLA_FLAGS
    env = compile_flags(entry, argv + [f"--{E2E_BOOL}=1", f"--{E2E_INT}=2", f"--{E2E_STR}=main"])
    assert env[E2E_BOOL] is True and env[E2E_BOOL_TRUE] is False
    assert _same(env[E2E_INT], 2) and _same(env[E2E_STR], "main")


@pytest.mark.parametrize("front_end", ["mlirhlo opt", *TOOLS])
def test_typed_values_reach_the_compile_from_an_options_file(compile_flags, tmp_path, front_end):
    entry, argv = FRONT_ENDS[front_end]
    f = tmp_path / "opts.txtpb"
    f.write_text(f"{E2E_BOOL}: 1\n{E2E_BOOL_TRUE}: false\n{E2E_INT}: 0\n")
    option = "--debug-options-file" if entry == "mlirhlo" else "--debug_options_file"
    env = compile_flags(entry, argv + [f"{option}={f}"])
    assert env[E2E_BOOL] is True and env[E2E_BOOL_TRUE] is False and _same(env[E2E_INT], 0)


@pytest.mark.parametrize("spelling, disabled", [
    ("", None), ("--run_test_hlo_passes", None), ("--run_test_hlo_passes=true", None),
    ("--run_test_hlo_passes=1", None), ("--run_test_hlo_passes=false", True),
    ("--run_test_hlo_passes=0", True), ("--norun_test_hlo_passes", True),
])
def test_run_test_hlo_passes_reaches_the_compile(compile_flags, spelling, disabled):
    """run_hlo_module's own bool, as the DebugOptions flag it becomes."""
    entry, argv = FRONT_ENDS["run_hlo_module"]
    env = compile_flags(entry, argv + ([spelling] if spelling else []))
    assert env.get("xla_disable_all_hlo_passes") is disabled, env


def test_bare_flag_on_a_non_bool_field_is_an_error_not_true(cli, tmp_path):
    """``--xla_dump_hlo_module_re`` with its value forgotten must not compile with "true"."""
    src = tmp_path / "m.mlir"
    src.write_text(MODULE)
    r = cli("opt", "--platform", "cpu", "--stage", "hlo", "--no-cache", f"--{E2E_STR}", src)
    assert r.code == 2 and re.search(rf"--{E2E_STR} needs a value", r.err), r.err
