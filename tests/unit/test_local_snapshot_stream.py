"""``snapshot.json`` read a chunk of items at a time (``local/snapshot_stream.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pawl.local import snapshot_stream

ITEM = st.dictionaries(
    st.sampled_from(["id", "s", "n", "nested"]),
    st.one_of(
        st.fixed_dictionaries({"S": st.text(max_size=8)}),
        st.fixed_dictionaries({"N": st.integers().map(str)}),
        st.fixed_dictionaries({"M": st.fixed_dictionaries({"k": st.just({"NULL": True})})}),
    ),
    max_size=4,
)
DOCUMENT = st.fixed_dictionaries(
    {
        "format": st.just(1),
        "bucket": st.text(max_size=5),
        "tables": st.dictionaries(st.text(max_size=6), st.lists(ITEM, max_size=7), max_size=4),
        "objects": st.lists(st.fixed_dictionaries({"key": st.text(max_size=4)}), max_size=2),
        "journal_from": st.integers(0, 9),
    }
)


def _read(text: str, chunk_items: int = snapshot_stream.CHUNK_ITEMS) -> tuple[Any, Any, Any]:
    tables: dict[str, list[Any]] = {}
    chunks: list[int] = []

    def on_items(name: str, items: list[Any]) -> None:
        tables.setdefault(name, []).extend(items)
        chunks.append(len(items))

    original = snapshot_stream.CHUNK_ITEMS
    snapshot_stream.CHUNK_ITEMS = chunk_items
    try:
        rest = snapshot_stream.read(text, on_items, 1)
    finally:
        snapshot_stream.CHUNK_ITEMS = original
    return rest, tables, chunks


@given(document=DOCUMENT, indent=st.sampled_from([None, 2]), chunk_items=st.integers(1, 3))
def test_any_key_order_and_spacing_reads_as_json_loads_does(
    document: dict[str, Any], indent: int | None, chunk_items: int
) -> None:
    for ordered in (document, dict(reversed(list(document.items())))):
        text = json.dumps(ordered, indent=indent)
        rest, tables, chunks = _read(text, chunk_items)
        expected = json.loads(text)
        assert tables == expected.pop("tables")
        assert rest == expected
        assert all(size <= chunk_items for size in chunks)


def test_items_arrive_in_chunks_and_every_table_is_named() -> None:
    text = json.dumps({"format": 1, "tables": {"a": [{"n": i} for i in range(5)], "b": []}})
    _, tables, chunks = _read(text, chunk_items=2)
    assert tables == {"a": [{"n": i} for i in range(5)], "b": []}
    assert chunks == [2, 2, 1, 0]  # an empty table is still named, to report it skipped


def test_another_format_is_refused_before_any_item() -> None:
    seen: list[Any] = []
    text = json.dumps({"format": 2, "tables": {"a": [{"n": 1}]}})
    with pytest.raises(ValueError, match="format"):
        snapshot_stream.read(text, lambda name, items: seen.append(items), 1)
    assert seen == []


@pytest.mark.parametrize(
    "text",
    ['{"format": 1, "tables": {"a": [{"n": 1} {"n": 2}]}}', '{"format": 1', "[1]", ""],
)
def test_a_malformed_file_is_an_error_not_a_partial_success(text: str) -> None:
    with pytest.raises(ValueError):
        snapshot_stream.read(text, lambda name, items: None, 1)
