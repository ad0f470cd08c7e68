"""Which commands ``pawl`` has, and what each costs to add to its parser.

The local commands of other modules (``datasets``, ``plan``, ``apply``) are listed by name
and help, their modules imported only when one of them runs; the API commands come from
the committed table (:mod:`pawl.cli.operation_table`), and only the one being run is added
(the top-level help lists them all from the table). :mod:`pawl.cli.main` builds the parser
with these.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pawl.cli import parsing


def _register_datasets(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pawl.cli import datasets as datasets_cli

    datasets_cli.register(commands)


def _register_formations(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from pawl.demo import formation_cli

    formation_cli.add_parsers(commands)


#: Commands another module registers, with the help the command list shows: the module is
#: imported, and its commands' flags built, only when one of its commands is run (or the
#: whole parser is built). tests/unit/test_cli_parsing.py checks the help is the module's.
REGISTERED_ELSEWHERE: dict[str, tuple[Callable[[Any], None], str]] = {
    "datasets": (_register_datasets, "dataset operations"),
    "plan": (_register_formations, "show what applying a formation template would change"),
    "apply": (
        _register_formations,
        "create or update a formation from a template (exit 1 if it failed)",
    ),
}


def add_commands_of_other_modules(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], only: str | None
) -> None:
    running = REGISTERED_ELSEWHERE.get(only or "", (None, ""))[0]
    for name, (register, summary) in REGISTERED_ELSEWHERE.items():
        if name in commands.choices:
            continue  # registered with another command of its module
        if only is None or register is running:
            register(commands)
        else:
            commands.add_parser(name, help=summary)


def add_api_commands(
    parser: argparse.ArgumentParser,
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    only: str | None,
) -> None:
    """``pawl <operation-id>`` for every route of the app (see :mod:`pawl.cli.ops`), from
    the committed table; the epilog groups them all by resource."""
    from pawl.cli import operation_table
    from pawl.cli import ops as cli_ops

    listed = [op for op in operation_table.load() if op.command not in commands.choices]
    cli_ops.add_operation_commands(commands, listed, only)
    parser.epilog = cli_ops.grouped_help(listed)


def command_names(parser: argparse.ArgumentParser) -> set[str]:
    """Every command's name, each API command's included (added to ``parser`` or not)."""
    from pawl.cli import operation_table

    return set(parsing.commands_of(parser)) | {op.command for op in operation_table.load()}
