"""One line of a dataset import, whatever file it came from, checked as a single create.

``items:import`` (JSON Lines) and ``pawl datasets import`` (JSON Lines or CSV) take the same
item shapes, because both end here: :func:`item_of` is the one place an item's fields are
normalised and checked. The shapes:

- ``input``: a list of ``{role, content}`` messages, as ``POST .../items`` takes it, or a
  string: one user message (``"hi"`` is ``[{"role": "user", "content": "hi"}]``);
- ``expected_output``: a string, or absent / null;
- ``metadata``: an object, or absent / null (``{}``).

Anything else is refused as a single create refuses it (unknown fields, a bad role, an
unstorable number, content over the store's size), naming the field. ``pawl datasets
import`` runs these very checks over a whole file before it sends anything.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from chalicelib.api.datasets import CreateItem
from chalicelib.errors import ValidationFailed, validation_error_from_pydantic
from chalicelib.jsonvalues import json_input
from chalicelib.store import datasets
from chalicelib.store.datasets import NewItem


def normalised_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with a string ``input`` as the one user message it stands for."""
    text = fields.get("input")
    if isinstance(text, str):
        return {**fields, "input": [{"role": "user", "content": text}]}
    return fields


def item_of(fields: dict[str, Any]) -> NewItem:
    """The item ``fields`` describe, after a single create's checks; raises ValidationFailed."""
    try:
        body = CreateItem.model_validate(normalised_fields(fields))
    except ValidationError as exc:
        raise validation_error_from_pydantic(exc) from exc
    item = NewItem([m.model_dump() for m in body.input], body.expected_output, body.metadata or {})
    datasets.check_item_content(item.input, item.expected_output, item.metadata)
    return item


def parse_line(line: bytes) -> NewItem:
    """One JSON Lines line as an item; raises ValidationFailed (a syntax error names its column)."""
    decoded = json_input.parse_line(line.rstrip(b"\r"))
    if not isinstance(decoded, dict):
        raise ValidationFailed("a line must be a JSON object", field="body")
    return item_of(decoded)


def problem(number: int, exc: ValidationFailed) -> dict[str, Any]:
    """What is wrong with line ``number``: ``{line, field, message}`` and, for a line that
    does not parse, the ``column`` the parser stopped at."""
    found: dict[str, Any] = {
        "line": number,
        "field": exc.meta.get("field", "body"),
        "message": exc.message,
    }
    if "column" in exc.meta:
        found["column"] = exc.meta["column"]
    return found
