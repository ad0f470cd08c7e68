"""The API commands' table: committed, regenerated from the routes, and read back whole."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pawl.cli import generate, operation_table
from pawl.cli import ops as cli_ops
from tests.unit.test_cli_ops import DOCUMENT


def test_the_committed_table_is_what_the_routes_give() -> None:
    """A route added, renamed or re-described without regenerating the table fails here."""
    committed = operation_table.TABLE_PATH.read_text(encoding="utf-8")
    assert committed == generate.table_text(), (
        f"{operation_table.TABLE_PATH.name} is stale: run `{operation_table.REGENERATE}` "
        "(or `make cli-operations`) and commit the file"
    )


def test_a_table_reads_back_as_the_operations_it_was_written_from() -> None:
    written = cli_ops.operations(DOCUMENT)
    assert operation_table.loads(operation_table.dumps(written)) == written
    assert operation_table.load() == tuple(operation_table.loads(generate.table_text()))


def test_commands_from_the_table_take_the_same_flags_as_from_the_document() -> None:
    from chalicelib.wiring import openapi_document

    def flags(add: object) -> dict[str, list[str]]:
        parser = argparse.ArgumentParser(prog="pawl")
        commands = parser.add_subparsers(dest="command")
        assert callable(add)
        add(commands)
        return {
            name: sorted(flag for action in sub._actions for flag in action.option_strings)
            for name, sub in commands.choices.items()
        }

    from_document = flags(lambda c: cli_ops.add_operations(c, openapi_document()))
    from_table = flags(lambda c: cli_ops.add_operation_commands(c, operation_table.load()))
    assert from_table == from_document and len(from_table) > 100


def test_only_adds_just_the_command_being_run() -> None:
    parser = argparse.ArgumentParser(prog="pawl")
    commands = parser.add_subparsers(dest="command")
    added = cli_ops.add_operation_commands(commands, operation_table.load(), only="list-evals")
    assert [op.command for op in added] == ["list-evals"] and list(commands.choices) == [
        "list-evals"
    ]


def test_a_file_that_is_not_a_table_is_refused() -> None:
    with pytest.raises(ValueError, match="not an operations table"):
        operation_table.loads('[{"operation_id": "x"}]')


def test_the_generator_writes_the_table_and_check_names_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "operations.json"
    monkeypatch.setattr(operation_table, "TABLE_PATH", table)
    table.write_text('{"operations": []}\n', encoding="utf-8")
    assert generate.main(["--check"]) == 1
    assert "run `python -m pawl.cli.generate`" in capsys.readouterr().err
    assert generate.main([]) == 0
    assert table.read_text(encoding="utf-8") == generate.table_text()
    capsys.readouterr()
    assert generate.main(["--check"]) == 0
    assert generate.main([]) == 0 and "(unchanged)" in capsys.readouterr().out
