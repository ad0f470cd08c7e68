"""List cursors and windows, without DynamoDB: what a cursor carries and what is refused."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from chalicelib.errors import ValidationFailed
from chalicelib.store.pagination import (
    MAX_OFFSET,
    Position,
    Window,
    decode_cursor,
    encode_cursor,
    listing_of,
    pack_cursor,
)

KEYS = frozenset({"id", "project_id"})
SCOPE = "ToolModel|proj_b|True|None"
LAST = {"id": {"S": "tool_a"}, "project_id": {"S": "proj_b"}}


def _raw(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def test_a_cursor_carries_the_key_the_position_and_the_total() -> None:
    cursor = encode_cursor(Position(LAST, 150, 1234), SCOPE)
    assert cursor is not None and decode_cursor(cursor, KEYS, SCOPE) == Position(LAST, 150, 1234)
    assert decode_cursor(encode_cursor(Position(LAST, 3, None), SCOPE), KEYS, SCOPE) == Position(
        LAST, 3, None
    )
    assert encode_cursor(Position(None, 10, 10), SCOPE) is None  # the end of the list: no cursor


@pytest.mark.parametrize(
    "value",
    [
        LAST,  # a cursor of the format before positions (refused: the listing restarts)
        {"k": LAST, "o": -1, "t": 3},
        {"k": LAST, "o": True, "t": 3},
        {"k": LAST, "o": 1, "t": "3"},
        {"k": {"id": {"S": "tool_a"}}, "o": 1, "t": 3},
        {"k": {"id": {"M": {}}, "project_id": {"S": "p"}}, "o": 1, "t": 3},
        {"k": {"id": {"S": 5}, "project_id": {"S": "p"}}, "o": 1, "t": 3},
        {"k": {"id": {"N": 5}, "project_id": {"S": "p"}}, "o": 1, "t": 3},
        {"k": {"id": {"N": "five"}, "project_id": {"S": "p"}}, "o": 1, "t": 3},
        {"k": {"id": {"S": ""}, "project_id": {"S": "p"}}, "o": 1, "t": 3},
        {"k": {"id": {"S": None}, "project_id": {"S": "p"}}, "o": 1, "t": 3},
        {"k": LAST, "o": 1},
        [1, 2],
    ],
)
def test_anything_but_a_cursor_pawl_made_is_refused(value: Any) -> None:
    for cursor in (_raw(value), pack_cursor(value, SCOPE)):  # unsigned, and signed by pawl
        with pytest.raises(ValidationFailed) as refused:
            decode_cursor(cursor, KEYS, SCOPE)
        assert refused.value.meta["field"] == "cursor"
    with pytest.raises(ValidationFailed):
        decode_cursor("not base64 at all!", KEYS, SCOPE)


def test_a_window_takes_a_cursor_or_a_bounded_offset() -> None:
    assert Window(limit=5, offset=MAX_OFFSET).offset == MAX_OFFSET
    with pytest.raises(ValidationFailed, match="next_cursor"):
        Window(offset=MAX_OFFSET + 1)
    with pytest.raises(ValidationFailed, match="not both"):
        Window(cursor="abc", offset=3)


def test_a_list_in_memory_pages_like_a_table() -> None:
    letters = list("abcdefg")
    first = listing_of(letters, Window(limit=3, counted=True), "letters")
    assert (first.items, first.offset, first.total) == (["a", "b", "c"], 0, 7)
    second = listing_of(letters, Window(limit=3, cursor=first.next_cursor, counted=True), "letters")
    assert (second.items, second.offset) == (["d", "e", "f"], 3)
    last = listing_of(letters, Window(limit=3, offset=6, counted=True), "letters")
    assert (last.items, last.next_cursor, last.total) == (["g"], None, 7)
    assert listing_of(letters, Window(limit=3, offset=9), "letters").items == []


def test_a_cursor_changed_in_any_way_or_of_another_list_is_refused() -> None:
    cursor = encode_cursor(Position(LAST, 150, 1234), SCOPE)
    assert cursor is not None
    payload, _, mac = cursor.partition(".")
    forged_total = pack_cursor({"k": LAST, "o": 150, "t": 10**30}, "")
    for bad in [
        payload,  # the signature dropped
        f"{payload}.{'0' * len(mac)}",
        f"{payload}.{mac[:-1]}",
        f"{payload[:-1]}A.{mac}",
        f"{_raw({'k': LAST, 'o': 150, 't': 10**30})}.{mac}",  # another total, the old MAC
        forged_total,  # signed for another scope
        f".{mac}",
    ]:
        with pytest.raises(ValidationFailed):
            decode_cursor(bad, KEYS, SCOPE)
    with pytest.raises(ValidationFailed):
        decode_cursor(cursor, KEYS, "ToolModel|proj_other|True|None")  # another project's list
    letters = listing_of(list("abcdefg"), Window(limit=3), "letters")
    with pytest.raises(ValidationFailed):
        listing_of(list("abcdefg"), Window(limit=3, cursor=letters.next_cursor), "digits")
