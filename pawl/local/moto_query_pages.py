"""A Query page costs what the page holds, not what its partition holds (the stand-in).

moto answers every Query page by collecting the asked partition, sorting all of it, walking
it from the top past the page's start key, and testing each item against the range
condition until the page is full: paging a 100,000-item index partition 200 items at a
time sorted and walked 100,000 items per page. Here each partition (one hash value of a
table or of a global secondary index) is sorted once per table state, with its sort keys
as plain strings, and a page hands moto only the stretch of it the page can reach:

- from just past the start key (a bisect), in the page's direction;
- past the items a range condition on the partition's first sort attribute excludes
  (they sort together, so a bisect finds where the matches begin and end);
- up to the page's ``Limit`` matches and the one item after them, whose presence is what
  makes moto return a LastEvaluatedKey. When the matches run out before the limit, moto
  would go on testing the items after them, which can only end the page on its 1 MB size
  rule; they are left out only when the page's items plus the largest item moto stores
  (it refuses any item over 400 KB on every put and update) stay under it. For the same
  reason the non-matching items before the matches can never end a page: moto tests
  them while the page is still empty.

moto's own code then does all the rest (conditions, size limit, the next page's key,
filters, projection) on that stretch, so its answer is unchanged. Whatever is not of that
simple shape (a sort key that is not a string, a multi-attribute key, legacy
``KeyConditions`` filters, a start key without every sort attribute) falls back to moto's
whole-partition walk. ``tests/integration/test_standin_pages.py`` compares the pages and
LastEvaluatedKeys with plain moto's.
"""

from __future__ import annotations

import bisect
import inspect
from collections.abc import Callable
from typing import Any

#: moto's 1 MB limit on what one Query page returns (``moto.dynamodb.models.table``).
RESULT_SIZE_LIMIT = 1000000
#: moto's limit on an item's size (DynamoDB's 400 KB, as moto measures it).
MOTO_ITEM_SIZE_LIMIT = 405000
#: Names moto's key condition parser gives each comparison, by what it selects.
_BELOW = {"LT", "<"}
_UP_TO = {"LE", "<="}
_ABOVE = {"GT", ">"}
_FROM = {"GE", ">="}
_EQUAL = {"EQ", "="}

#: Positions among Table.query's arguments after ``hash_key``.
_COMPARISON, _RANGE_VALUES, _LIMIT, _START, _FORWARD, _FILTER = 0, 1, 2, 3, 4, 8

_SORTED = "_pawl_sorted_partitions"


class SortedPartition:
    """One partition's items in moto's order, with their sort keys as strings."""

    def __init__(self, keyed: list[tuple[tuple[str, ...], Any]], attrs: list[str]) -> None:
        keyed.sort(key=lambda pair: pair[0])
        self.attrs = attrs
        self.keys = [key for key, _ in keyed]
        self.items = [item for _, item in keyed]
        self._values: dict[str, list[str]] = {}

    def values_of(self, attr: str) -> list[str]:
        """Every item's ``attr``, in the partition's order (kept: pages bisect them)."""
        found = self._values.get(attr)
        if found is None:
            position = self.attrs.index(attr)
            found = self._values[attr] = [key[position] for key in self.keys]
        return found


def _string_key(item: Any, attrs: list[str]) -> tuple[str, ...] | None:
    key = []
    for name in attrs:
        value = item.attrs.get(name)
        if value is None or value.type != "S":
            return None
        key.append(value.value)
    return tuple(key)


def sorted_partition(
    table: Any, writes: int, name: tuple[Any, ...], items: Callable[[], list[Any]], attrs: list[str]
) -> SortedPartition | None:
    """The partition ``name`` sorted by ``attrs`` (kept until the table's next write), or
    None when some item's sort key is not all strings."""
    kept_writes, kept = table.__dict__.get(_SORTED, (None, {}))
    if kept_writes != writes:
        kept = {}
        table.__dict__[_SORTED] = (writes, kept)
    if name not in kept:
        keyed = []
        for item in items():
            key = _string_key(item, attrs)
            if key is None:
                kept[name] = None
                return None
            keyed.append((key, item))
        kept[name] = SortedPartition(keyed, attrs)
    found: SortedPartition | None = kept[name]
    return found


def _start_key(start: Any, attrs: list[str]) -> tuple[str, ...] | None:
    key = []
    for name in attrs:
        value = start.get(name)
        if not isinstance(value, dict) or set(value) != {"S"}:
            return None
        key.append(value["S"])
    return tuple(key)


def _matching(values: list[str], comparison: str, bounds: list[str]) -> tuple[int, int] | None:
    """Where the sorted ``values`` that meet the condition lie, or None if not known."""
    n, first = len(values), bounds[0]
    if comparison in _EQUAL:
        return bisect.bisect_left(values, first), bisect.bisect_right(values, first)
    if comparison in _BELOW:
        return 0, bisect.bisect_left(values, first)
    if comparison in _UP_TO:
        return 0, bisect.bisect_right(values, first)
    if comparison in _ABOVE:
        return bisect.bisect_right(values, first), n
    if comparison in _FROM:
        return bisect.bisect_left(values, first), n
    if comparison == "BETWEEN" and len(bounds) == 2:
        return bisect.bisect_left(values, first), bisect.bisect_right(values, bounds[1])
    if comparison == "BEGINS_WITH":
        width = len(first)
        end = bisect.bisect_right(values, first, key=lambda value: value[:width])
        return bisect.bisect_left(values, first), end
    return None


class PageShape:
    """What of a Query decides which items its page can reach."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any], cond_attr: str) -> None:
        def arg(position: int, name: str, default: Any = None) -> Any:
            return args[position] if len(args) > position else kwargs.get(name, default)

        self.comparison: str | None = arg(_COMPARISON, "range_comparison")
        self.bounds: list[Any] = arg(_RANGE_VALUES, "range_objs") or []
        self.limit: Any = arg(_LIMIT, "limit")
        self.start: Any = arg(_START, "exclusive_start_key")
        self.forward = arg(_FORWARD, "scan_index_forward", True) is not False
        self.cond_attr = cond_attr
        # moto's backend passes everything through ``filter_expression`` by position, so
        # any other keyword is a legacy QueryFilter attribute (a filter moto counts oddly).
        named = _KEY_CONDITIONS if len(args) > _FILTER else _QUERY_KEYWORDS
        self.legacy_filters = bool(set(kwargs) - named)


_KEY_CONDITIONS = {"hash_key_conditions", "range_key_conditions"}
_QUERY_KEYWORDS = _KEY_CONDITIONS | {
    "range_comparison",
    "range_objs",
    "limit",
    "exclusive_start_key",
    "scan_index_forward",
    "projection_expressions",
    "index_name",
    "consistent_read",
    "filter_expression",
}


def page_items(part: SortedPartition, shape: PageShape, hash_attrs: set[str]) -> list[Any] | None:
    """The stretch of ``part`` (ascending) the page can reach, or None: moto walks it all."""
    lo, hi = 0, len(part.items)
    if shape.start:
        start = _start_key(shape.start, part.attrs)
        if start is None:
            return None
        if shape.forward:
            lo = bisect.bisect_right(part.keys, start)
        else:
            hi = bisect.bisect_left(part.keys, start)
    if shape.legacy_filters or not _countable(shape.limit):
        return part.items[lo:hi]
    matches = _matches(part, shape, hash_attrs)
    if matches is None:
        return part.items[lo:hi]
    first, end = max(lo, matches[0]), min(hi, matches[1])
    if first >= end:
        return []  # nothing matches: moto's walk appends nothing and sets no key
    return _capped(part, shape, (lo, hi), (first, end))


def _countable(limit: Any) -> bool:
    return limit is None or (isinstance(limit, int) and limit >= 1)


def _matches(
    part: SortedPartition, shape: PageShape, hash_attrs: set[str]
) -> tuple[int, int] | None:
    if not shape.comparison:
        return 0, len(part.items)
    attr = shape.cond_attr
    if attr not in part.attrs or any(
        a not in hash_attrs for a in part.attrs[: part.attrs.index(attr)]
    ):
        return None  # the condition's attribute does not order the partition
    if not shape.bounds or any(getattr(b, "type", None) != "S" for b in shape.bounds):
        return None
    return _matching(part.values_of(attr), shape.comparison, [b.value for b in shape.bounds])


def _capped(
    part: SortedPartition, shape: PageShape, reach: tuple[int, int], matches: tuple[int, int]
) -> list[Any]:
    """The matches moto can take (up to the limit) and, if the page fills, the item after."""
    (lo, hi), (first, end) = reach, matches
    limit = shape.limit
    if shape.forward:
        cut = end if limit is None else min(end, first + limit)
        taken = part.items[first:cut]
        if cut >= hi:
            return taken
        if len(taken) == limit:
            return part.items[first : cut + 1]
        return taken if _trailing_harmless(taken) else part.items[first:hi]
    cut = first if limit is None else max(first, end - limit)
    taken = part.items[cut:end]
    if cut > lo and len(taken) == limit:
        return part.items[cut - 1 : end]
    return taken if _trailing_harmless(taken) else part.items[lo:end]


def _trailing_harmless(taken: list[Any]) -> bool:
    """Whether no item after the last match could end the page on moto's size rule."""
    return sum(item.size() for item in taken) + MOTO_ITEM_SIZE_LIMIT <= RESULT_SIZE_LIMIT


class PageView:
    """The table as moto's Query sees it: ``all_items`` is the page's stretch (in moto's
    order when ``ordered``, else for moto to sort); everything else is the table's."""

    def __init__(self, table: Any, items: list[Any], ordered: bool) -> None:
        self._table, self._items, self._ordered = table, items, ordered

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def all_items(self) -> list[Any]:
        return list(self._items)

    def sorted_items(self, hash_attrs: Any, range_attrs: Any, items: list[Any]) -> list[Any]:
        if not self._ordered:
            return list(self._table.sorted_items(hash_attrs, range_attrs, items))
        return items  # already in moto's order (and moto's checks dropped none of it)


def moto_query_of(query: Callable[..., Any]) -> Callable[..., Any]:
    """moto's own Table.query beneath pawl's wrappers (each sets ``__wrapped__``)."""
    return inspect.unwrap(query)
