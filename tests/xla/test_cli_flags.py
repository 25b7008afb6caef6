"""The drop-in XLA tools: hlo-opt, run_hlo_module, multihost_hlo_runner, ptx-opt.

Each ``test_doc_*`` runs one command line of XLA's tools documentation
(docs/tools.md) verbatim, with tests/data/xla_tools standing in for its files
(input.hlo, computation.hlo, /dump, input.ll, results.textpb).
"""

from __future__ import annotations

import pytest

from tests.conftest import assert_mentions

# ------------------------------------------------ flag syntax: values, negation, errors, help

def _syntax_flags():
    from mlirhlo_driver.xla.cli_flags import Flag

    return [Flag("o", "str", "-", "Output file.", "FILE"), Flag("n", "int", 1, "Count.", "N"),
            Flag("list-stages", "bool", False, "List the stages."), Flag("run", "bool", True, "Run it."),
            Flag("tol", "float", 0.5, "Tolerance.", "X"), Flag("stage", "str", "", "Stage.", "NAME"),
            Flag("fmt", "str", "", "Format.", "NAME", choices=("Text", "Binary"))]


def _flag_error(argv: list[str], **kw) -> str:
    from mlirhlo_driver.errors import FlagError
    from mlirhlo_driver.xla.cli_flags import parse

    with pytest.raises(FlagError) as e:
        parse(argv, _syntax_flags(), **kw)
    return e.value.format("params")


# -------------------------------------------------------------- flag syntax

def test_flag_syntax():
    from mlirhlo_driver.xla.cli_flags import Flag, parse

    flags = [Flag("o", "str", "-", ""), Flag("n", "int", 1, ""), Flag("list-stages", "bool", False, ""),
             Flag("run", "bool", True, "")]
    p = parse(["-o", "-", "--n", "3", "in.hlo", "--list_stages", "--norun", "--xla_gpu_dump_llvmir",
               "x.ll", "--xla_dump_to", "DIR", "--noxla_cpu_enable_fast_math",
               "--xla_reduce_window_rewrite_base_length=128", "--", "--not-a-flag"], flags)
    assert (p["o"], p["n"], p["list-stages"], p["run"]) == ("-", 3, True, False)
    assert p.positionals == ["in.hlo", "x.ll", "--not-a-flag"]
    assert p.xla_flags == {"xla_gpu_dump_llvmir": True, "xla_dump_to": "DIR",
                           "xla_cpu_enable_fast_math": False, "xla_reduce_window_rewrite_base_length": 128}
    assert parse(["--run=false", "--list-stages=1", "--o=f"], flags).values == {
        "o": "f", "n": 1, "list_stages": True, "run": False}


def test_flag_values_are_converted_by_kind_and_bad_text_is_one_error():
    """bool takes true/false/1/0 in any case, int an optional sign and digits, float any number,
    a closed str one of its choices (case-insensitively, kept as typed); anything else names the flag."""
    from mlirhlo_driver.xla.cli_flags import parse

    flags = _syntax_flags()
    for text, want in (("true", True), ("TRUE", True), ("1", True), ("false", False), ("False", False), ("0", False)):
        assert parse([f"--run={text}"], flags)["run"] is want, text
    for text, want in (("+3", 3), ("-2", -2), ("07", 7), ("3 ", 3)):
        assert parse([f"--n={text}"], flags)["n"] == want, text
    assert parse(["--tol=1e-3"], flags)["tol"] == 1e-3 and parse(["--tol", "2"], flags)["tol"] == 2.0
    assert parse(["--fmt=tEXT"], flags)["fmt"] == "tEXT"
    # Refused naming the flag and the text typed (the wording: test_flag_value_refusals_exactly).
    for words, kind in ((["--run=yes"], "true or false"), (["--n=1.5"], "integer"), (["--n=x1"], "integer"),
                        (["--tol=abc"], "number"), (["--fmt=json"], "Text, Binary")):
        assert_mentions(_flag_error(words), f"error: {words[0]}: ", kind)
    assert_mentions(_flag_error(["--fmt=Binar"]), "error: --fmt=Binar: ", "'Binary'")


@pytest.mark.golden
@pytest.mark.parametrize("argv, line", [
    (["--run=yes"], "error: --run=yes: expected true or false"),
    (["--n=1.5"], "error: --n=1.5: expected an integer"),
    (["--n=x1"], "error: --n=x1: expected an integer"),
    (["--tol=abc"], "error: --tol=abc: expected a number"),
    (["--fmt=json"], "error: --fmt=json: expected one of Text, Binary"),
    (["--fmt=Binar"], "error: --fmt=Binar: expected one of Text, Binary (did you mean 'Binary'?)"),
    (["--xla_gpu_autotune_gemm_rtol=tight"], "error: --xla_gpu_autotune_gemm_rtol=tight: expected a number"),
    (["--xla_reduce_window_rewrite_base_length=1.5"],
     "error: --xla_reduce_window_rewrite_base_length=1.5: expected an integer"),
    (["--xla_cpu_enable_fast_math=maybe"], "error: --xla_cpu_enable_fast_math=maybe: expected true or false"),
])
def test_flag_value_refusals_exactly(argv, line):
    """Golden: a flag's value that its kind does not read (the tool's flags and XLA's alike)."""
    assert _flag_error(argv) == line


@pytest.mark.golden
@pytest.mark.parametrize("argv, line", [
    (["a.hlo", "--o"], "error: --o needs a value (--o=FILE)"),
    (["--n"], "error: --n needs a value (--n=N)"),
    (["--xla_dump_to"], "error: --xla_dump_to needs a value (--xla_dump_to=VALUE)"),
    (["--help=1"], "error: --help takes no value (give --help alone)"),
    (["-version=true"], "error: -version takes no value (give -version alone)"),
    (["--noxla_dump_to"], "error: --noxla_dump_to: --xla_dump_to is not a boolean"),
])
def test_flag_form_refusals_exactly(argv, line):
    """Golden: a flag written in a form it does not take (no value, a value, a negation)."""
    assert _flag_error(argv) == line


def test_parsed_flags_fill_defaults_and_record_what_was_given():
    """Defaults stand for flags not typed; ``given`` and was_given() hold exactly the typed ones,
    by either spelling of the name."""
    from mlirhlo_driver.xla.cli_flags import parse

    p = parse(["--list_stages", "-n", "4", "in.hlo"], _syntax_flags())
    assert p.values == {"o": "-", "n": 4, "list_stages": True, "run": True, "tol": 0.5, "stage": "", "fmt": ""}
    assert p.given == {"list_stages", "n"}
    assert p.was_given("list-stages") and p.was_given("list_stages") and p.was_given("n")
    assert not p.was_given("run") and not p.was_given("o")
    assert (p.positionals, p.xla_flags, p.help, p.version) == (["in.hlo"], {}, False, False)
    assert p["list-stages"] is True


def test_negated_booleans_are_bare_no_words_only():
    """``--noNAME`` sets a boolean false; it takes no ``=value`` and is no spelling of a non-boolean."""
    from mlirhlo_driver.xla.cli_flags import parse

    flags = _syntax_flags()
    p = parse(["--norun", "-nolist-stages"], flags)
    assert (p["run"], p["list_stages"], p.given) == (False, False, {"run", "list_stages"})
    assert parse(["--run"], flags)["run"] is True
    # Refused as unknown flags (the wording: test_unknown_flags_name_the_closest_known_ones_with_dashes).
    for words, flag, close in ((["--norun=true"], "'--norun'", "'--run'"), (["--norun=false"], "'--norun'", "'--run'"),
                               (["--nostage"], "'--nostage'", "'--stage'"), (["--notol"], "'--notol'", "'--tol'")):
        assert_mentions(_flag_error(words), flag, close)


def test_value_flags_take_the_next_word_unless_it_is_missing():
    """``--name value`` consumes exactly one word; at the end of the line it is an error showing
    the ``--name=METAVAR`` form. Booleans never take the next word."""
    from mlirhlo_driver.xla.cli_flags import parse

    p = parse(["--o", "out.txt", "a.hlo", "--run", "b.hlo", "-stage", "--weird", "c.hlo"], _syntax_flags())
    assert (p["o"], p["run"], p["stage"]) == ("out.txt", True, "--weird")
    assert p.positionals == ["a.hlo", "b.hlo", "c.hlo"]
    assert_mentions(_flag_error(["a.hlo", "--o"]), "error: --o ", "--o=FILE")
    assert_mentions(_flag_error(["--n"]), "error: --n ", "--n=N")


def test_help_version_dashes_and_numbers():
    """-h, --help, --helpfull and --version are switches (not with a value); '-', negative numbers
    and words after '--' are positionals."""
    from mlirhlo_driver.xla.cli_flags import parse

    flags = _syntax_flags()
    for word in ("-h", "--help", "-help", "--helpfull"):
        p = parse([word], flags)
        assert (p.help, p.version) == (True, False), word
    p = parse(["--version", "-", "-5", "-1x", "--", "--run", "-h"], flags)
    assert (p.help, p.version, p["run"]) == (False, True, True)
    assert p.positionals == ["-", "-5", "-1x", "--run", "-h"]
    assert_mentions(_flag_error(["--help=1"]), "error: --help ", "--help alone")
    assert_mentions(_flag_error(["-version=true"]), "error: -version ", "-version alone")


@pytest.mark.golden
@pytest.mark.parametrize("argv, kw, line", [
    (["--list-stage"], {}, "error: unknown flag '--list-stage' (did you mean '--list-stages', '--stage'?)"),
    (["-tools=1"], {}, "error: unknown flag '-tools' (did you mean '--tol'?)"),
    (["--qqqqqq=1"], {}, "error: unknown flag '--qqqqqq' (see --help)"),
    (["--verison"], {}, "error: unknown flag '--verison' (did you mean '--version'?)"),
    (["--norun=true"], {}, "error: unknown flag '--norun' (did you mean '--run'?)"),
    (["--nostage"], {}, "error: unknown flag '--nostage' (did you mean '--stage'?)"),
    (["--noxla_cpu_enable_fast_math=false"], {}, "error: unknown flag '--noxla_cpu_enable_fast_math' (see --help)"),
    (["--xla_dump_to=d"], {"xla_flags": False}, "error: unknown flag '--xla_dump_to' (see --help)"),
])
def test_unknown_flags_name_the_closest_known_ones_with_dashes(argv, kw, line):
    """Golden: an unknown word is one error: the flag as typed (less its value), the close names
    each with '--', else 'see --help'."""
    assert _flag_error(argv, **kw) == line


@pytest.mark.golden
def test_unknown_xla_flag_message_exactly():
    """Golden: an unknown --xla_* name, with the close DebugOptions names (the list grows with
    jaxlib's DebugOptions: its start is pinned)."""
    assert _flag_error(["--xla_cpu_enable_fast_mth"]).startswith(
        "error: unknown XLA flag '--xla_cpu_enable_fast_mth' (did you mean 'xla_cpu_enable_fast_math'")


def test_xla_debug_options_on_the_tool_line():
    """--xla_* flags typed from DebugOptions: a bare boolean is true, --noxla_* false (bare only),
    a non-boolean takes '=' or the next word; unknown names and wrong forms are one error each;
    a parser without them treats them as unknown."""
    from mlirhlo_driver.xla.cli_flags import parse

    flags = _syntax_flags()
    p = parse(["--xla_cpu_enable_fast_math=0", "--xla_gpu_dump_llvmir=TRUE", "--xla_dump_to", "d",
               "--xla_reduce_window_rewrite_base_length=-3", "-xla_gpu_experimental_collective_cse_distance_threshold",
               "+5", "in.hlo"], flags)
    assert p.xla_flags == {"xla_cpu_enable_fast_math": False, "xla_gpu_dump_llvmir": True, "xla_dump_to": "d",
                           "xla_reduce_window_rewrite_base_length": -3,
                           "xla_gpu_experimental_collective_cse_distance_threshold": 5}
    assert p.positionals == ["in.hlo"] and p.given == set()
    # a string stays as typed; a float is a number; an enum's text is read as XLA_FLAGS reads it (quotes dropped)
    typed = parse(["--xla_dump_to=123", "--xla_gpu_autotune_gemm_rtol=1e-2",
                   '--xla_step_marker_location="STEP_MARK_AT_TOP_LEVEL_WHILE_LOOP"'], flags).xla_flags
    assert typed == {"xla_dump_to": "123", "xla_gpu_autotune_gemm_rtol": 0.01,
                     "xla_step_marker_location": "STEP_MARK_AT_TOP_LEVEL_WHILE_LOOP"}
    # The wording of each refusal: the golden tests above (values, forms, unknown flags).
    assert_mentions(_flag_error(["--xla_gpu_autotune_gemm_rtol=tight"]),
                    "error: --xla_gpu_autotune_gemm_rtol=tight: ", "number")
    assert_mentions(_flag_error(["--noxla_dump_to"]), "error: --noxla_dump_to: ", "--xla_dump_to", "boolean")
    assert_mentions(_flag_error(["--noxla_cpu_enable_fast_math=false"]), "'--noxla_cpu_enable_fast_math'")
    assert _flag_error(["--xla_dump_to"]).startswith("error: --xla_dump_to ")
    assert_mentions(_flag_error(["--xla_reduce_window_rewrite_base_length=1.5"]),
                    "error: --xla_reduce_window_rewrite_base_length=1.5: ", "integer")
    assert _flag_error(["--xla_cpu_enable_fast_math=maybe"]).startswith("error: --xla_cpu_enable_fast_math=maybe: ")
    assert_mentions(_flag_error(["--xla_cpu_enable_fast_mth"]), "'--xla_cpu_enable_fast_mth'",
                    "'xla_cpu_enable_fast_math'")
    assert_mentions(_flag_error(["--xla_dump_to=d"], xla_flags=False), "'--xla_dump_to'", "--help")


def test_usage_text_lists_every_flag_with_its_metavariable_and_default():
    """The whole help text: synopsis, description, one aligned row per flag (booleans bare, with
    a default only when true; others NAME=METAVAR, with a default unless empty), XLA's rows last."""
    from mlirhlo_driver.xla.cli_flags import Flag, usage

    flags = _syntax_flags() + [Flag("on", "bool", True, "On."), Flag("opt", "str", None, "Optional.")]
    assert usage("tool", "[FLAGS] FILE", "\n  Does things.  \n", flags) == (
        "usage: tool [FLAGS] FILE\n"
        "\n"
        "Does things.\n"
        "\n"
        "Flags (--name=VALUE or --name VALUE; one dash or two; booleans also --noNAME):\n"
        "  --o=FILE          Output file. (default: -)\n"
        "  --n=N             Count. (default: 1)\n"
        "  --list-stages     List the stages.\n"
        "  --run             Run it. (default: true)\n"
        "  --tol=X           Tolerance. (default: 0.5)\n"
        "  --stage=NAME      Stage.\n"
        "  --fmt=NAME        Format. One of: Text, Binary.\n"
        "  --on              On. (default: true)\n"
        "  --opt=VALUE       Optional.\n"
        "  --xla_NAME=VALUE  Any XLA DebugOptions flag, anywhere on the line (booleans: --xla_NAME, --noxla_NAME).\n"
        "  --version         Print the version and exit.\n"
        "  --help            Print this help and exit.\n")
    wide = usage("t", "F", "D.", [Flag("a-very-long-flag-name", "int", 0, "Wide.", "COUNT")])
    assert "  --a-very-long-flag-name=COUNT  Wide. (default: 0)\n" in wide
    assert "  --help                         Print this help and exit.\n" in wide


def test_platform_spellings():
    """XLA's platform names in any case and spacing map to cpu, cuda or interpreter; others are
    an error naming the flag, with the close names or the list."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.xla.cli_flags import platform

    for name, want in (("CPU", "cpu"), (" Host ", "cpu"), ("gpu", "cuda"), ("Cuda", "cuda"),
                       ("INTERPRETER", "interpreter")):
        assert platform(name) == want, name
    with pytest.raises(DriverError) as e:
        platform("cpux", "reference_platform")
    assert_mentions(e.value.format("params"), "error: --reference_platform=cpux: ", "'cpu'")
    with pytest.raises(DriverError) as e:
        platform("zzzzzz")
    assert_mentions(e.value.format("params"), "error: --platform=zzzzzz: ", "CPU, Host, CUDA, GPU, TPU, Interpreter")


@pytest.mark.golden
@pytest.mark.parametrize("name, flag, line", [
    ("cpux", "reference_platform", "error: --reference_platform=cpux: unknown platform (did you mean 'cpu'?)"),
    ("zzzzzz", "platform", "error: --platform=zzzzzz: unknown platform (one of CPU, Host, CUDA, GPU, TPU, Interpreter)"),
])
def test_unknown_platform_messages_exactly(name, flag, line):
    """Golden: a platform name XLA's tools do not know, with the close names or the list."""
    from mlirhlo_driver.errors import DriverError
    from mlirhlo_driver.xla.cli_flags import platform

    with pytest.raises(DriverError) as e:
        platform(name, flag)
    assert e.value.format("params") == line
