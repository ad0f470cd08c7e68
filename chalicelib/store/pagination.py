"""Opaque list cursors over DynamoDB's ``LastEvaluatedKey``: O(page) reads, no offsets."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any, TypeVar

from chalicelib.errors import ValidationFailed

D = TypeVar("D")


def encode_cursor(last_key: dict[str, Any] | None) -> str | None:
    if not last_key:
        return None
    raw = json.dumps(last_key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, expected_keys: set[str]) -> dict[str, Any] | None:
    """Decode a cursor made by :func:`encode_cursor`; anything else is a 400."""
    if cursor is None or cursor == "":
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise ValidationFailed("cursor is malformed", field="cursor") from exc
    if not isinstance(value, dict) or set(value) != expected_keys:
        raise ValidationFailed("cursor is malformed", field="cursor")
    for attr in value.values():
        if not (isinstance(attr, dict) and len(attr) == 1 and next(iter(attr)) in {"S", "N"}):
            raise ValidationFailed("cursor is malformed", field="cursor")
    return value


def page_of(
    query: Callable[[dict[str, Any] | None, int], Any],
    cursor: str | None,
    key_attrs: set[str],
    convert: Callable[[Any], D],
    limit: int,
) -> tuple[list[D], str | None]:
    """One page of a PynamoDB query/scan; ``query(last_key, limit)`` returns its iterator.

    DynamoDB may return fewer items than ``limit`` with a next key; we keep reading
    until the page is full or the table is exhausted, so a page is never short
    without being the last one.
    """
    last_key = decode_cursor(cursor, key_attrs)
    items: list[D] = []
    while True:
        result = query(last_key, limit - len(items))
        for model in result:
            items.append(convert(model))
        last_key = result.last_evaluated_key
        if last_key is None or len(items) >= limit:
            break
    return items, encode_cursor(last_key)
