"""How ``pawl`` reads a command line before and after argparse does.

Before: which command the line names (:func:`command_of`), so only that command's flags are
built, and an unknown one is answered with the nearest names (:func:`unknown_command`)
instead of argparse's list of every choice (about 120). After: a flag no parser took is
reported by the parser of the command it was given to, with that command's usage and the
nearest flags (:func:`parse`), where argparse would print the top-level usage.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

HELP_FLAGS = ("-h", "--help")
#: Suggestions shown for an unknown command or flag.
MAX_SUGGESTIONS = 5


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (``pawl``'s own
    options take no value). None when there is none, or when help is asked for first."""
    for word in argv:
        if word in HELP_FLAGS:
            return None
        if not word.startswith("-"):
            return word
    return None


def nearest(word: str, choices: Iterable[str]) -> list[str]:
    """The choices closest to ``word``: close spellings first, then those containing it."""
    import difflib  # only when a word is wrong

    names = sorted(set(choices))
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.7)
    containing = [name for name in names if word and word in name and name not in close]
    return (close + containing)[:MAX_SUGGESTIONS]


def _did_you_mean(found: list[str]) -> str:
    if not found:
        return ""
    if len(found) == 1:
        return f"; did you mean {found[0]}?"
    return f"; did you mean one of: {', '.join(found)}?"


def unknown_command(word: str, choices: Iterable[str]) -> str:
    """What ``pawl WORD`` says when no command has that name."""
    return (
        f"unknown command {word!r}{_did_you_mean(nearest(word, choices))} "
        "(`pawl --help` lists every command)"
    )


def _subcommands(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def commands_of(parser: argparse.ArgumentParser) -> list[str]:
    """The names of the commands directly under ``parser``."""
    action = _subcommands(parser)
    return list(action.choices) if action is not None else []


def leaf_parser(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` was parsed for: ``pawl datasets import``'s."""
    current = parser
    while (action := _subcommands(current)) is not None:
        chosen = getattr(args, action.dest, None)
        if chosen not in action.choices:
            break
        current = action.choices[chosen]
    return current


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [flag for action in parser._actions for flag in action.option_strings]


def unrecognized(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """argparse's message for words no parser took, with the nearest flag of ``parser`` to
    each unknown one (``--eval-idd: did you mean --eval-id?``)."""
    hints = []
    for word in extras:
        flag = word.split("=", 1)[0]
        found = nearest(flag, _options(parser)) if flag.startswith("--") and flag != "--" else []
        if found:
            hints.append(f"{flag}: did you mean {found[0]}?")
    message = f"unrecognized arguments: {' '.join(extras)}"
    return message + (f" ({'; '.join(hints)})" if hints else "")


def parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, but words it does not take are refused by the parser of
    the command they were given to (its usage, not the top-level one); exits 2 as argparse."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        leaf = leaf_parser(parser, args)
        leaf.error(unrecognized(leaf, extras))
    return args


def add_to_every_command(
    parser: argparse.ArgumentParser, *flags: str, only: str | None = None, **options: Any
) -> None:
    """Add an option to ``parser`` and, with ``default=SUPPRESS`` so the top-level value
    stands unless repeated, to each command under it (``pawl serve --verbose`` reads as
    ``pawl --verbose serve``); with ``only``, to that command (and those under it) alone.
    A command with a flag of that name keeps its own."""
    parser.add_argument(*flags, **options)
    top = _subcommands(parser)
    if top is None:
        return
    pending = [sub for name, sub in top.choices.items() if only in (None, name)]
    while pending:
        sub = pending.pop()
        # An operation whose own field has that name keeps it (the option is top-level only).
        with contextlib.suppress(argparse.ArgumentError):
            sub.add_argument(*flags, **{**options, "default": argparse.SUPPRESS})
        action = _subcommands(sub)
        pending.extend(dict.fromkeys(action.choices.values()) if action is not None else ())
