"""How ``pawl <operation>`` prints an answer: the API's JSON, or a table for a person."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads for a table only: `--output json` starts without it
    from rich.console import Console
    from rich.table import Table

#: Columns shown for a list, first those a reader looks for; the rest in the API's order.
PREFERRED_COLUMNS = ("id", "name", "status", "passed", "output", "input", "type", "version")
MAX_COLUMNS = 6
MAX_CELL = 60


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    """Preferred columns first; a column with one value in every row (the run all results
    belong to) says nothing per row and is left out (``--output json`` has everything)."""
    seen: list[str] = []
    for row in rows:
        seen.extend(key for key in row if key not in seen)
    if len(rows) > 1:
        seen = [c for c in seen if len({_cell(row.get(c)) for row in rows}) > 1]
    ordered = [c for c in PREFERRED_COLUMNS if c in seen]
    ordered += [c for c in seen if c not in ordered]
    return ordered[:MAX_COLUMNS]


def _list_table(rows: list[Any]) -> Table:
    from rich.table import Table

    objects = [row if isinstance(row, dict) else {"value": row} for row in rows]
    table = Table()
    columns = _columns(objects)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in objects:
        table.add_row(*(_cell(row.get(column)) for column in columns))
    return table


def _object_table(answer: dict[str, Any]) -> Table:
    from rich.table import Table

    table = Table(show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in answer.items():
        table.add_row(key, _cell(value))
    return table


def render(answer: Any, output: str, console: Console | None = None) -> None:
    """Print ``answer`` as ``json`` (indented, exactly the API's) or as a ``table``."""
    if output == "json":
        if answer is not None:
            print(json.dumps(answer, indent=2))
        return
    from rich.console import Console

    console = console or Console()
    if answer is None:
        console.print("(done: no content)")
    elif isinstance(answer, dict) and isinstance(answer.get("data"), list):
        console.print(_list_table(answer["data"]))
        shown, first = len(answer["data"]), answer.get("offset", 0) + 1
        if shown and isinstance(answer.get("total"), int):
            console.print(f"{first}-{first + shown - 1} of {answer['total']}", highlight=False)
        if answer.get("next_cursor"):
            console.print(f"more: --cursor {answer['next_cursor']}", highlight=False)
    elif isinstance(answer, list):
        console.print(_list_table(answer))
    elif isinstance(answer, dict):
        console.print(_object_table(answer))
    else:
        console.print(_cell(answer))
