"""Reading a tool's answer: a JSON object, or text holding one (its first ``{...}`` span)."""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first ``{...}`` span of ``text`` that parses as a JSON object, or None.

    Tolerates prose or a code fence around the object. Each ``{`` is tried in turn, so
    a stray brace before the real object does not hide it.
    """
    start = text.find("{")
    while start != -1:
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def decode_answer(body: str, is_json: bool) -> dict[str, Any] | None:
    """The answer object: the whole body when it is declared JSON, else its first object."""
    if is_json:
        try:
            value = json.loads(body)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return first_json_object(body)
