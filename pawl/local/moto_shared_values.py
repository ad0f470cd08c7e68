"""Items that repeat a value share one object for it (the stand-in's memory).

moto keeps every attribute of every stored item as its own ``DynamoType`` (about 100
bytes) holding its own string, and every item's attribute names as strings of their own:
a 100,000-item run's result rows each repeat the run id, the eval id, the trial, the same
``scores`` text, ``null`` error and so on, and the names of all of them. At 505,000 rows
(a 100k run naming a 100k baseline) that was most of the stand-in's 2.3 GB.

Here an item's short scalar values (strings, numbers, booleans and nulls of at most
:data:`SHARED_MAX_CHARS` characters) come from a table of the values seen lately, and
its attribute names are interned, so repeats cost a reference. Sharing is safe because
moto never changes a scalar ``DynamoType`` in place: an update builds a new one and sets
it on the item (only the containers, ``M``, ``L`` and the sets, are changed in place, and
those are never shared). The table is bounded (:data:`SHARED_VALUES_KEPT`); when it is
full it starts again, which costs only later duplicates, never a wrong value.
"""

from __future__ import annotations

import sys
from typing import Any

#: The kinds of value shared: scalars, which moto never changes in place.
SHARED_KINDS = frozenset({"S", "N", "BOOL", "NULL"})
#: A longer value is rarely repeated (inputs, outputs): it is kept as it came.
SHARED_MAX_CHARS = 256
#: Distinct values remembered at a time (a bounded table, about 10 MB when full).
SHARED_VALUES_KEPT = 65536


class SharedValues:
    """The table of recently seen scalar values, as moto's ``DynamoType`` objects."""

    def __init__(self, dynamo_type: type[Any], kept: int = SHARED_VALUES_KEPT) -> None:
        self._type = dynamo_type
        self._kept_at_most = kept
        self._kept: dict[tuple[str, Any], Any] = {}

    def typed(self, value: Any) -> Any:
        """``DynamoType(value)``, shared with earlier items when it is a short scalar."""
        key = _shareable(value)
        if key is None:
            return self._type(value)
        found = self._kept.get(key)
        if found is None:
            found = self._remember(key, self._type(value))
        return found

    def share(self, typed: Any) -> Any:
        """The shared equal of an already built ``DynamoType`` (a key moto built)."""
        if typed is None or typed.type not in SHARED_KINDS or not _short(typed.value):
            return typed
        key = (typed.type, typed.value)
        found = self._kept.get(key)
        return self._remember(key, typed) if found is None else found

    def _remember(self, key: tuple[str, Any], typed: Any) -> Any:
        if len(self._kept) >= self._kept_at_most:
            self._kept.clear()
        self._kept[key] = typed
        return typed

    def __len__(self) -> int:
        return len(self._kept)


def attribute_name(name: str) -> str:
    """One string object per distinct attribute name, however many items carry it."""
    return sys.intern(name) if type(name) is str else name


def _shareable(value: Any) -> tuple[str, Any] | None:
    if type(value) is not dict or len(value) != 1:
        return None
    ((kind, inner),) = value.items()
    if kind not in SHARED_KINDS or not _short(inner):
        return None
    return kind, inner


def _short(inner: Any) -> bool:
    if isinstance(inner, str):
        return len(inner) <= SHARED_MAX_CHARS
    return type(inner) is bool
