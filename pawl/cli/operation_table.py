"""The API commands' table: every operation of the OpenAPI document, as the CLI needs it.

``pawl <operation>`` used to build the OpenAPI document from the route table at start-up,
which imports every route of the service (about 1.3 s of CPU before any request). The
operations it derives (:func:`pawl.cli.ops.operations`) are written once to
``operations.json`` beside this module by ``python -m pawl.cli.generate`` (``make
cli-operations``) and read here: a file read and a JSON parse. A test regenerates the table
and fails when the committed file differs, so it cannot drift from the routes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pawl.cli.ops import Operation, Param

TABLE_PATH = Path(__file__).with_name("operations.json")
#: The command that rewrites the table (named by the drift test's failure).
REGENERATE = "python -m pawl.cli.generate"


def dumps(operations: Sequence[Operation]) -> str:
    """The table's text: stable (the document's order), one field a line, for readable diffs."""
    table = {
        "about": f"Generated from the OpenAPI document by `{REGENERATE}`; do not edit.",
        "operations": [asdict(op) for op in operations],
    }
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def loads(text: str) -> list[Operation]:
    """The operations of a table's text (``ValueError`` when it is not a table)."""
    table = json.loads(text)
    if not isinstance(table, dict) or not isinstance(table.get("operations"), list):
        raise ValueError("not an operations table: no 'operations' list")
    return [_operation(entry) for entry in table["operations"]]


def _operation(entry: dict[str, Any]) -> Operation:
    fields = dict(entry)
    fields["params"] = tuple(Param(**param) for param in entry["params"])
    return Operation(**fields)


@functools.cache
def load(path: Path = TABLE_PATH) -> tuple[Operation, ...]:
    """The committed table's operations (read once a process)."""
    return tuple(loads(path.read_text(encoding="utf-8")))
