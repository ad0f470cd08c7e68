"""``pawl``'s command line as a person mistypes it: the nearest commands, the command's own
usage for a flag it lacks, ``--verbose`` wherever it is written."""

from __future__ import annotations

import pytest

from pawl.cli import main as cli
from pawl.cli import parsing, registry


def _refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_the_command_is_the_first_word_that_is_not_an_option() -> None:
    assert parsing.command_of(["--verbose", "list-evals", "--limit", "3"]) == "list-evals"
    assert parsing.command_of(["-h", "serve"]) is None  # help first: the top-level help
    assert parsing.command_of(["-v"]) is None and parsing.command_of([]) is None


def test_an_unknown_command_suggests_the_nearest_not_every_choice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refusal(["lst-evals"], capsys)
    assert "unknown command 'lst-evals'; did you mean one of: list-evals," in err
    assert "create-agent" not in err and "choose from" not in err
    assert err.startswith("usage: pawl [-h] [-v] COMMAND ...")
    assert "did you mean start-eval-run?" in _refusal(["start-run"], capsys)
    far = _refusal(["xyzzy"], capsys)
    assert "did you mean" not in far and "`pawl --help` lists every command" in far


def test_a_mistyped_flag_gets_that_commands_usage_and_the_nearest_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refusal(["list-evals", "--limt", "3"], capsys)
    assert err.startswith("usage: pawl list-evals [-h] [--limit INT]")
    assert "pawl list-evals: error: unrecognized arguments: --limt 3" in err
    assert "(--limt: did you mean --limit?)" in err
    nested = _refusal(["datasets", "import", "f.jsonl", "--dataset", "d", "--paralel", "2"], capsys)
    assert nested.startswith("usage: pawl datasets import")
    assert "--paralel: did you mean --parallel?" in nested
    local = _refusal(["serve", "--prot", "1"], capsys)
    assert local.startswith("usage: pawl serve") and "did you mean --port?" in local


def test_a_missing_path_flag_is_named_with_the_commands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refusal(["get-eval"], capsys)
    assert err.startswith("usage: pawl get-eval")
    assert "the following arguments are required: --eval-id" in err


def test_verbose_is_read_before_or_after_the_command() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["--verbose", "serve"]).verbose is True
    assert parser.parse_args(["serve", "--verbose"]).verbose is True
    assert parser.parse_args(["list-evals", "-v"]).verbose is True
    assert parser.parse_args(["datasets", "import", "f", "--dataset", "d", "-v"]).verbose
    assert parser.parse_args(["serve"]).verbose is False


def test_one_command_gets_its_flags_and_the_help_lists_every_api_command() -> None:
    parser = cli.build_parser(only="list-evals")
    names = parsing.commands_of(parser)
    assert "list-evals" in names and "get-eval" not in names and "serve" in names
    assert "get-eval " in (parser.epilog or "")
    assert {"list-evals", "get-eval", "serve", "plan"} <= registry.command_names(parser)
    # serve is listed, but its flags are not built (nor pawl.local imported for them)
    serve = parser.parse_args(["serve"])
    assert not hasattr(serve, "port")


def test_the_top_level_help_groups_the_api_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "API commands, by resource" in out
    assert out.index("\n  evals:") < out.index("create-eval ") < out.index("\n  runs:")


def test_commands_registered_elsewhere_are_listed_with_their_modules_help() -> None:
    """`pawl --help` lists `datasets`, `plan` and `apply` without importing their modules:
    the list must read as it does when the modules register them."""
    assert cli.build_parser(only="").format_help() == cli.build_parser().format_help()
    running = cli.build_parser(only="plan")
    assert {"plan", "apply", "datasets"} <= set(parsing.commands_of(running))
    assert running.parse_args(["plan", "suite.yaml", "--name", "n"]).name == "n"
